//! Asking a person about a held call, one file per way, each a [`Human`]: [`terminal`] (the person
//! at `/dev/tty`), [`answers`] (the scripted human), [`web`] (the approval page and its API),
//! [`elicitation`] (the MCP client) and [`inbox`] (the crew's inbox, answered by `sc-inbox`); [`turn`] keeps the other stages' lines off the prompt line while a person is asked at the terminal. What they share is written once in [`prompt`]: the text a
//! person reads, agent-written text escaped ([`crate::sanitize`]) so that the person sees the
//! exact arguments that will run, and the approval record a reply becomes. sc-approve's stage
//! loop, which uses them, is `crate::stage::approve`.

pub mod answers;
mod choose;
pub mod elicitation;
pub mod human;
pub mod inbox;
pub mod notify;
pub mod prompt;
pub mod remember;
mod reply;
pub mod terminal;
pub mod tty;
pub mod turn;
pub mod web;

pub use choose::{human_for, timeout_from_seconds, DEFAULT_TIMEOUT_SECONDS};
pub(crate) use human::Reply;
pub use human::{Hold, Human};
pub(crate) use prompt::{approval_for, render_prompt};
