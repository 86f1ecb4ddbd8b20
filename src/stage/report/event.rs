//! One audit event as the report reads it: the members it counts, borrowed from the line.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::record::{Approval, Status};
use crate::rules::state::AgentState;

/// Audit lines longer than this are reported as problems, not read.
pub(super) const MAX_EVENT_BYTES: usize = 16 << 20;

/// An event's `reasons`: the array's text as the scanner found it, or the strings the reference
/// reading took from it.
pub(super) enum Reasons<'a> {
    Text(&'a str),
    List(Vec<String>),
}

impl Default for Reasons<'_> {
    fn default() -> Self {
        Reasons::List(Vec::new())
    }
}

/// An event's `agentState`: its text as the scanner found it, or the state the reference reading
/// made of it.
pub(super) enum StateView<'a> {
    Text(&'a str),
    Parsed(AgentState),
}

/// What the summary reads of one event, however the event was read.
#[derive(Default)]
pub(super) struct EventView<'a> {
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) stage: Option<Cow<'a, str>>,
    pub(super) ts: Option<Cow<'a, str>>,
    pub(super) decision: Option<Cow<'a, str>>,
    /// A gate event's `kind`: `task` or `result` for the records of value provenance.
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) reasons: Reasons<'a>,
    /// When the event has a `call`: its agent and tool, `?` for either that is not a name.
    pub(super) call: Option<(Cow<'a, str>, Cow<'a, str>)>,
    /// The call's `args` as JSON text (as the scanner found it, or written again by the
    /// reference reading): shown only in the HTML report's vetoes.
    pub(super) args: Option<Cow<'a, str>>,
    pub(super) agent_state: Option<StateView<'a>>,
    pub(super) approval: Option<Approval>,
    /// `outcome.status`.
    pub(super) status: Option<Status>,
    pub(super) agent: Option<Cow<'a, str>>,
    pub(super) tool: Option<Cow<'a, str>>,
    /// A decision event's `grants` (the grants that allowed the call), when it is an array:
    /// whether it names any.
    pub(super) grants: Option<bool>,
    /// Whether an `exec` event names the backend its call ran (`backend`, an object): only such
    /// an outcome ends the call's `exec-start` ([`super::starts`]).
    pub(super) ran_backend: bool,
    /// Whether a `state` event says `sc-state init` made the store (`"action":"init"`), not a
    /// reset.
    pub(super) made_store: bool,
}

impl<'a> EventView<'a> {
    /// The reference reading, from the whole event.
    pub(super) fn of(event: &'a Map<String, Value>) -> EventView<'a> {
        let text = |key: &str| event.get(key).and_then(Value::as_str).map(Cow::Borrowed);
        EventView {
            id: text("id"),
            stage: text("stage"),
            ts: text("ts"),
            decision: text("decision"),
            kind: text("kind"),
            reasons: Reasons::List(strings(event.get("reasons"))),
            call: event.get("call").map(|call| {
                (
                    Cow::Owned(name_in(call, "agent")),
                    Cow::Owned(name_in(call, "tool")),
                )
            }),
            args: event
                .get("call")
                .and_then(|call| call.get("args"))
                .map(|args| Cow::Owned(args.to_string())),
            agent_state: event
                .get("agentState")
                .cloned()
                .and_then(|s| serde_json::from_value::<AgentState>(s).ok())
                .map(StateView::Parsed),
            approval: event
                .get("approval")
                .cloned()
                .and_then(|a| serde_json::from_value(a).ok()),
            status: event
                .get("outcome")
                .and_then(|o| o.get("status"))
                .cloned()
                .and_then(|s| serde_json::from_value::<Status>(s).ok()),
            agent: text("agent"),
            tool: text("tool"),
            grants: match event.get("grants") {
                Some(Value::Array(grants)) => Some(!grants.is_empty()),
                _ => None,
            },
            ran_backend: event.get("backend").is_some_and(Value::is_object),
            made_store: event.get("action").and_then(Value::as_str) == Some("init"),
        }
    }

    /// Whether a decision event says its call was allowed by an earlier approval (a grant): by
    /// its `grants` when it has them, else by a reason `allowed by grant ID (given by BY at
    /// TIME)`. Only an `allow` is.
    pub(super) fn allowed_by_grant(&self) -> bool {
        if self.decision.as_deref() != Some("allow") {
            return false;
        }
        if let Some(named) = self.grants {
            return named;
        }
        match &self.reasons {
            // The text is read only when it may hold such a reason.
            Reasons::Text(text) => {
                text.contains(GRANT_REASON)
                    && serde_json::from_str::<Value>(text)
                        .is_ok_and(|reasons| is_grant_reason(strings(Some(&reasons))))
            }
            Reasons::List(list) => is_grant_reason(list.iter().cloned()),
        }
    }
}

/// How a reason that a grant allowed the call starts.
pub(super) const GRANT_REASON: &str = "allowed by grant ";

fn is_grant_reason(reasons: impl IntoIterator<Item = String>) -> bool {
    reasons
        .into_iter()
        .any(|reason| reason.starts_with(GRANT_REASON))
}

pub(super) fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

pub(super) fn name_in(call: &Value, key: &str) -> String {
    call.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("?")
        .to_owned()
}
