//! What the questions report says ([`Questions`]): one row per agent and tool, counted by
//! [`super::QuestionCounter`].

use std::collections::BTreeMap;

/// One row of the questions report.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionRow {
    pub agent: String,
    pub tool: String,
    /// Holds by the kind of rule that held them (`amount`, `taint`, `coding`, … joined by `+`
    /// when several held one call).
    pub rules: BTreeMap<String, u64>,
    /// Holds at the gate, and the allows a grant settled.
    pub holds: u64,
    /// Of the holds, those a grant settled (nobody was asked).
    pub settled_by_grant: u64,
    /// Questions put to a person through any channel.
    pub asked: u64,
    pub approved: u64,
    /// Hours (UTC, on the clock) in which the agent made at least one call.
    pub active_hours: u64,
    /// Answers timed (a question that timed out or failed has no answer time).
    pub answered: u64,
    pub median_seconds: Option<f64>,
    pub p90_seconds: Option<f64>,
    pub under_2s: u64,
    pub by_channel: BTreeMap<String, u64>,
    /// The held calls seen more than once (by the digest of their arguments), most first.
    pub repeated_calls: Vec<Repeat>,
    /// The untrusted values named by more than one hold, most first.
    pub repeated_values: Vec<Repeat>,
}

/// A repeated held call (its digest, and its arguments) or value.
#[derive(Debug, Clone, PartialEq)]
pub struct Repeat {
    pub key: String,
    pub holds: u64,
    pub args: Option<String>,
}

impl QuestionRow {
    pub fn asked_per_active_hour(&self) -> Option<f64> {
        (self.active_hours > 0).then(|| self.asked as f64 / self.active_hours as f64)
    }

    pub fn approval_rate(&self) -> Option<f64> {
        (self.asked > 0).then(|| self.approved as f64 / self.asked as f64)
    }

    pub fn under_2s_share(&self) -> Option<f64> {
        (self.answered > 0).then(|| self.under_2s as f64 / self.answered as f64)
    }
}

/// The questions report: one row per agent and tool that had a hold or a question, most asked
/// first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Questions {
    pub rows: Vec<QuestionRow>,
}

impl Questions {
    pub fn total_asked(&self) -> u64 {
        self.rows.iter().map(|row| row.asked).sum()
    }

    pub fn total_holds(&self) -> u64 {
        self.rows.iter().map(|row| row.holds).sum()
    }
}
