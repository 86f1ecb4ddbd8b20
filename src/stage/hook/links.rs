//! The session's call links: what sc-hook remembers of each call by `tool_use_id`, kept in the
//! state store, so that a `PostToolUse` is recorded under its `PreToolUse`.

use std::collections::{HashSet, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::approve::prompt::lower_hex;
use crate::store::{Store, StoreError, ValueChange, ValueKey, ValueRefused};
use crate::strict_json;
use crate::verdict::Decision;

/// The most calls awaiting their `PostToolUse` that a session's state remembers by
/// `tool_use_id` ([`ToolUses`]); past it the oldest is forgotten, and if it runs after all it is
/// recorded as an unknown call. A call waits only while it runs (or while Claude Code asks about
/// it), so this is far more than a session has in flight; but a denied call, a hold the person
/// turned down, or every call when only PreToolUse is registered never gets one, and stays until
/// forgotten. The links are read and rewritten on every call: 1024 of them is about 220 KB.
pub(crate) const MAX_AWAITING: usize = 1024;
/// The most calls that ran that a session's state remembers, the latest, so that a
/// `PostToolUse` repeated (a hook registered twice runs twice at once) is recognised and
/// recorded once.
pub(crate) const MAX_RAN: usize = 64;

/// What sc-hook remembers of a call by Claude Code's `tool_use_id`, so that its `PostToolUse`
/// is recorded under the call's id with what the gate decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ToolUse {
    pub tool_use_id: String,
    /// The call's id in the audit log: its gate event's, or for a call first seen when it had
    /// run, its exec event's.
    pub id: String,
    pub agent: String,
    pub tool: String,
    /// What the gate decided; absent for a call first seen when it had run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// [`input_digest`] of the tool input the gate judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// Whether its `PostToolUse` was recorded.
    pub ran: bool,
}

/// Why stored links are not what [`update_links`] writes: refused, never read as none.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LinksError {
    #[error("not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("`toolUses` must be an array, not {found}")]
    NotAnArray { found: &'static str },
    #[error("`toolUses` has {count} calls, more than the {} sc-hook keeps", MAX_AWAITING + MAX_RAN)]
    TooMany { count: usize },
    #[error(
        "`toolUses` has {ran} calls that ran and {awaiting} awaiting their run, more than the {MAX_RAN} and {MAX_AWAITING} sc-hook keeps"
    )]
    OverBounds { ran: usize, awaiting: usize },
    /// A call of the array, by its index.
    #[error("`toolUses[{at}]` {problem}")]
    Call { at: usize, problem: CallProblem },
}

/// What is wrong with one call of the links ([`LinksError::Call`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallProblem {
    #[error("must be an object, not {found}")]
    NotAnObject { found: &'static str },
    #[error("has `{key}` null")]
    Null { key: String },
    #[error("is not a call: {0}")]
    NotACall(serde_json::Error),
    #[error("has an empty `{key}`")]
    Empty { key: &'static str },
    #[error("has an `input` that is not a SHA-256 in hex")]
    BadDigest,
    #[error("has no `decision` and has not run")]
    Undecided,
    #[error("repeats the toolUseId {}", Value::String(.tool_use_id.clone()))]
    Repeated { tool_use_id: String },
}

/// The calls of a session by `tool_use_id`, oldest first: at most [`MAX_AWAITING`] awaiting
/// their `PostToolUse` and the last [`MAX_RAN`] that ran. Kept in the state store as the JSON
/// array of the calls ([`update_links`]), and no value while there are none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(crate) struct ToolUses {
    calls: VecDeque<ToolUse>,
}

impl ToolUses {
    pub fn new() -> Self {
        Self::default()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    pub fn get(&self, tool_use_id: &str) -> Option<&ToolUse> {
        self.calls.iter().find(|c| c.tool_use_id == tool_use_id)
    }

    fn get_mut(&mut self, tool_use_id: &str) -> Option<&mut ToolUse> {
        self.calls.iter_mut().find(|c| c.tool_use_id == tool_use_id)
    }

    /// Remembers a call that `PreToolUse` decided. A `tool_use_id` decided before (the hook
    /// registered twice, say) keeps the stricter decision, as Claude Code does with two hooks'
    /// answers (the first on a tie); one that already ran is left as it is.
    pub fn decided(&mut self, call: ToolUse) {
        if let Some(known) = self.get_mut(&call.tool_use_id) {
            if !known.ran && call.decision > known.decision {
                *known = call;
            }
            return;
        }
        self.remember(call);
    }

    /// Marks a call as run; false if it is not known.
    pub(super) fn ran(&mut self, tool_use_id: &str) -> bool {
        let Some(call) = self.get_mut(tool_use_id) else {
            return false;
        };
        call.ran = true;
        self.forget_past_bounds();
        true
    }

    pub(super) fn remember(&mut self, call: ToolUse) {
        self.calls.push_back(call);
        self.forget_past_bounds();
    }

    /// Forgets the oldest calls awaiting their run past [`MAX_AWAITING`], and the oldest that
    /// ran past [`MAX_RAN`].
    fn forget_past_bounds(&mut self) {
        let mut ran = self.calls.iter().filter(|c| c.ran).count();
        let mut awaiting = self.calls.len() - ran;
        while ran > MAX_RAN || awaiting > MAX_AWAITING {
            let forget_ran = ran > MAX_RAN;
            let Some(oldest) = self.calls.iter().position(|c| c.ran == forget_ran) else {
                break;
            };
            self.calls.remove(oldest);
            if forget_ran {
                ran -= 1;
            } else {
                awaiting -= 1;
            }
        }
    }

    /// Reads the links as [`update_links`] writes them: strict JSON (no duplicate key, nothing
    /// after it), then [`ToolUses::from_value`].
    fn from_text(text: &str) -> Result<ToolUses, LinksError> {
        let value = strict_json::parse(text).map_err(LinksError::NotJson)?;
        ToolUses::from_value(value)
    }

    /// Reads the `toolUses` array exactly as it is written: an array of objects, at most
    /// [`MAX_AWAITING`] awaiting their run and [`MAX_RAN`] that ran, each with every key it
    /// needs, no other key, no `null`, no empty name, a digest of 64 lowercase hex digits, a
    /// decision unless the call was first seen when it had run, and each `tool_use_id` once.
    fn from_value(value: Value) -> Result<ToolUses, LinksError> {
        let Value::Array(items) = value else {
            return Err(LinksError::NotAnArray {
                found: strict_json::type_name(&value),
            });
        };
        if items.len() > MAX_AWAITING + MAX_RAN {
            return Err(LinksError::TooMany { count: items.len() });
        }
        let mut calls = VecDeque::with_capacity(items.len());
        let mut seen = HashSet::with_capacity(items.len());
        for (at, item) in items.into_iter().enumerate() {
            let bad = |problem| LinksError::Call { at, problem };
            let Value::Object(object) = &item else {
                return Err(bad(CallProblem::NotAnObject {
                    found: strict_json::type_name(&item),
                }));
            };
            if let Some((key, _)) = object.iter().find(|(_, value)| value.is_null()) {
                return Err(bad(CallProblem::Null { key: key.clone() }));
            }
            let call: ToolUse =
                serde_json::from_value(item).map_err(|err| bad(CallProblem::NotACall(err)))?;
            for (key, text) in [
                ("toolUseId", &call.tool_use_id),
                ("id", &call.id),
                ("agent", &call.agent),
                ("tool", &call.tool),
            ] {
                if text.is_empty() {
                    return Err(bad(CallProblem::Empty { key }));
                }
            }
            if let Some(digest) = &call.input {
                if digest.len() != 64
                    || !digest
                        .bytes()
                        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                {
                    return Err(bad(CallProblem::BadDigest));
                }
            }
            if call.decision.is_none() && !call.ran {
                return Err(bad(CallProblem::Undecided));
            }
            if !seen.insert(call.tool_use_id.clone()) {
                return Err(bad(CallProblem::Repeated {
                    tool_use_id: call.tool_use_id,
                }));
            }
            calls.push_back(call);
        }
        let ran = calls.iter().filter(|c| c.ran).count();
        let awaiting = calls.len() - ran;
        if ran > MAX_RAN || awaiting > MAX_AWAITING {
            return Err(LinksError::OverBounds { ran, awaiting });
        }
        Ok(ToolUses { calls })
    }
}

/// The SHA-256 (lowercase hex) of a tool input as JSON with every object's keys sorted, so the
/// input a call ran with can be compared with the one the gate judged whatever the key order.
pub(crate) fn input_digest(input: &Map<String, Value>) -> String {
    fn sort(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.sort_keys();
                map.values_mut().for_each(sort);
            }
            Value::Array(items) => items.iter_mut().for_each(sort),
            _ => {}
        }
    }
    let mut value = Value::Object(input.clone());
    sort(&mut value);
    let text = serde_json::to_vec(&value).expect("a JSON value serializes");
    lower_hex(&Sha256::digest(&text))
}

/// Runs `change` on a session's call links in the store ([`ValueKey::links`]), as one atomic
/// update: concurrent hooks of the session (parallel tool calls) never lose a link. `change` may
/// run more than once ([`Store::update_value`]); only its last run counts, and its result is
/// returned. Links that are not exactly what this writes are refused, never read as none.
pub(crate) fn update_links<R>(
    store: &mut dyn Store,
    session_id: &str,
    mut change: impl FnMut(&mut ToolUses) -> R,
) -> Result<R, StoreError> {
    let mut result = None;
    store.update_value(&ValueKey::links(session_id), &mut |stored| {
        let mut uses = match stored {
            Some(text) => {
                ToolUses::from_text(text).map_err(|err| ValueRefused::Reader(Box::new(err)))?
            }
            None => ToolUses::new(),
        };
        let before = uses.clone();
        result = Some(change(&mut uses));
        Ok(if uses == before {
            ValueChange::Keep
        } else if uses.is_empty() {
            ValueChange::Remove
        } else {
            ValueChange::Set(serde_json::to_string(&uses).expect("the calls serialize"))
        })
    })?;
    result.ok_or(StoreError::NotRun)
}

#[cfg(test)]
#[path = "links_tests.rs"]
mod tests;
