//! `sc-report`: what happened and what was stopped, summarised from one or more audit logs.
//!
//! The summary is built once ([`Summariser`]) and rendered for people ([`render_text`]), for a CI
//! job summary ([`render_markdown`]) or for programs ([`write_json`]), so all show the same
//! numbers. A torn or malformed log line is reported as a problem, never fatal: the rest of the
//! log still counts.
//!
//! Memory does not grow with the log. A call's events (gate, approve, exec) are joined by id in a
//! window of the last [`CALL_WINDOW_EVENTS`] events: a call leaves the window, and is folded into
//! the counts as its events then stand, when that many events have been read since its first.
//! Every stage writes a call's events long before that, so the counts are those of joining every
//! event of the log. An event that comes later still counts (see [`Summariser`]). Vetoes are
//! listed in the order their calls were first seen; the text and markdown reports list the first
//! [`LISTED`], and the JSON report every one, streamed from a temporary file.

mod batch;
mod counts;
mod event;
mod html;
mod listing;
mod question_rows;
mod questions;
pub(crate) mod questions_render;
mod render;
mod scan;
mod starts;
pub(crate) mod suggest;
mod summariser;
mod summary;
mod time;
pub mod timeline;
mod window;

pub use counts::*;
pub use html::{write_html, ChainStatus};
pub(crate) use listing::LISTED;
pub use question_rows::{QuestionRow, Questions, Repeat};
pub use questions::QuestionCounter;
pub use render::{render_json, render_markdown, render_text, render_text_with, write_json};
pub use suggest::{suggestions_json, suggestions_text, Replay, Suggester, Suggestion};
pub use summariser::{summarise, summarise_filtered, Summariser};
pub use summary::*;
pub(crate) use time::{rfc3339, rfc3339_seconds};

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
