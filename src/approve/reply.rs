//! What a person (or the stand-in for one) said to a prompt, below both the prompt and the
//! ways of asking.

use std::time::Duration;

use crate::record::Scope;

/// What a person (or the stand-in for one) said to a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Answer(String),
    /// A yes or no given by a button (the web page) rather than typed, bound, where the way of
    /// asking shows the whole record, to the SHA-256 of the record line the person saw.
    Decision {
        approve: bool,
        digest: Option<String>,
        /// How far a yes reaches (`once` for a no).
        scope: Scope,
    },
    Eof,
    TimedOut(Duration),
    ReadFailed(String),
    NobodyToAsk(String),
    AnswersRanOut,
    /// The way of asking ended the hold unanswered, and says why (the crew's inbox: its store
    /// failed, it expired or withdrew the hold, nobody answered there in time).
    Unanswered(String),
}
