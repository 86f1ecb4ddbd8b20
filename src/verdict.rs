//! The gate's word on a call, shared by the records, every rule and the state that rules read: a
//! [`Decision`] and a [`Judgement`] (a decision with its reasons). Nothing here depends on the
//! rest of the crate, so the decision and the crew state both build on it without a cycle.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The gate's word on a call, ordered from weakest to strongest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Allow,
    Hold,
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Hold => "hold",
            Decision::Deny => "deny",
        }
    }

    pub fn parse(s: &str) -> Option<Decision> {
        match s {
            "allow" => Some(Decision::Allow),
            "hold" => Some(Decision::Hold),
            "deny" => Some(Decision::Deny),
            _ => None,
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decision with its reasons. `reasons` is never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub decision: Decision,
    pub reasons: Vec<String>,
}
