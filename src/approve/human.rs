//! What every way of asking a person shares: the [`Human`] trait and the [`Hold`] it is asked
//! about; the [`Reply`] it gives is in `reply.rs`.

use std::time::Duration;

use super::prompt::{record_digest, render_prompt};
pub(crate) use super::reply::Reply;
use crate::call::Call;
use crate::record::{AnsweredBy, Scope};

/// A held call, whole, as a way of asking may show it: the record line exactly as it arrived,
/// and what was read from it.
#[derive(Debug, Clone, Copy)]
pub struct Hold<'a> {
    /// The record's line exactly as it arrived, without its newline.
    pub line: &'a [u8],
    /// The record's id.
    pub id: &'a str,
    /// The call, read from the record's `call` as sc-gate reads a call.
    pub call: &'a Call,
    /// Why it is held.
    pub reasons: &'a [String],
    /// How long the person has before the hold declines by itself; `None` waits forever.
    pub timeout: Option<Duration>,
    /// The scopes a yes may take ([`Scope`]): `once` first, and `call` or `value` where the
    /// deciding door offered them (the record's `grantable`).
    pub scopes: &'a [Scope],
}

impl Hold<'_> {
    /// The text a person reads at a terminal ([`render_prompt`]).
    pub fn prompt(&self) -> String {
        render_prompt(self.call, self.reasons, self.timeout, self.scopes)
    }

    /// The SHA-256 (lowercase hex) of the record line: what an answer on the web page is
    /// bound to.
    pub fn digest(&self) -> String {
        record_digest(self.line)
    }
}

/// Someone who can be asked about a hold.
pub trait Human {
    fn ask(&mut self, prompt: &str) -> Reply;
    /// Asks about a whole hold. By default, the prompt text is composed (when someone reads it)
    /// and put with [`Human::ask`]; a way of asking that shows more than text (the web page)
    /// takes the hold itself.
    fn ask_hold(&mut self, hold: &Hold<'_>) -> Reply {
        let prompt = if self.reads_prompt() {
            hold.prompt()
        } else {
            String::new()
        };
        self.ask(&prompt)
    }
    /// Shown after the answer (e.g. "approved"); ignored where nobody is watching.
    fn acknowledge(&mut self, _text: &str) {}
    /// Whether asking may keep a person waiting (so what is decided leaves first); not when
    /// the answer is at hand at once (no terminal, an answers file).
    fn may_keep_waiting(&self) -> bool {
        true
    }
    /// Whether `ask` shows its prompt to anyone, so it is worth composing.
    fn reads_prompt(&self) -> bool {
        true
    }
    fn kind(&self) -> AnsweredBy;
    /// The channel the approve event names when `kind` alone does not tell it (`inbox`, which
    /// answers as `web`), for `sc-report --questions`.
    fn channel(&self) -> Option<&'static str> {
        None
    }
}
