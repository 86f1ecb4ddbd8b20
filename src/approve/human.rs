//! What every way of asking a person shares: the [`Human`] trait, and the [`Reply`] it gives.

use std::time::Duration;

use crate::record::AnsweredBy;

/// What a person (or the stand-in for one) said to a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Answer(String),
    Eof,
    TimedOut(Duration),
    ReadFailed(String),
    NobodyToAsk(String),
    AnswersRanOut,
}

/// Someone who can be asked about a hold.
pub trait Human {
    fn ask(&mut self, prompt: &str) -> Reply;
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
}
