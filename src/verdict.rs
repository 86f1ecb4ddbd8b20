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
    /// What the judgement says of remembered approvals (grants).
    pub granting: Granting,
}

/// What a judgement says of remembered approvals: a hold offers what a person's yes may be
/// remembered for (the record's `grantable`); an allow given by grants names them (the record's
/// `grants`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Granting {
    #[default]
    Nothing,
    Offers(Box<Grantable>),
    AllowedBy(Vec<String>),
}

/// How far a person's yes reaches: this call only (`once`, the default), the same agent's later
/// calls of the same tool with exactly the same arguments (`call`), or the untrusted values a
/// value-provenance hold named (`value`). A wider scope is kept as a grant
/// ([`crate::store::grants`]).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    #[default]
    Once,
    Call,
    Value,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Once, Scope::Call, Scope::Value];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Once => "once",
            Scope::Call => "call",
            Scope::Value => "value",
        }
    }

    /// `once`, `call` or `value`, exactly; anything else is none.
    pub fn parse(text: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.as_str() == text)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a hold record says a person's yes may be remembered for (`"grantable"`, written by the
/// deciding door on a hold): the scopes that apply (`once` always first), the kinds of the rules
/// that held it (a `call` grant covers only these), and the untrusted values that a
/// value-provenance hold named (a `value` grant endorses these).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grantable {
    pub scopes: Vec<Scope>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// What tainted the session when the call was held ([`crate::rules::grant::taint_source`]):
    /// a `call` grant records them, and covers the call only while the session's taint is
    /// among them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// The call carries more untrusted values than the most a hold names
    /// ([`crate::rules::granting::MAX_NAMED`]): no yes covers those it does not name.
    #[serde(
        default,
        rename = "moreValues",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub more_values: bool,
}

impl Grantable {
    /// Whether `scope` applies: `once` always does.
    pub fn offers(&self, scope: Scope) -> bool {
        scope == Scope::Once || self.scopes.contains(&scope)
    }
}

/// The reasons of the hold `now` that are not among those `shown` to the person, in the order
/// of `now`: none when the yes covers the hold (the same reasons, or fewer).
///
/// Compared as exact text, on purpose. A reason that carries a changing number (a budget's
/// "would total 1150 (400 … before this call)", a window's start) is a new reason once its
/// number changed: the person agreed to the total they were shown, not to another one, and
/// telling which changes are harmless would read meaning into sentences written for people. At
/// worst a retry whose number moved is asked once more; it never runs on a yes to another
/// number.
pub fn not_shown<'a>(shown: &[String], now: &'a [String]) -> Vec<&'a str> {
    now.iter()
        .filter(|reason| !shown.contains(reason))
        .map(String::as_str)
        .collect()
}
