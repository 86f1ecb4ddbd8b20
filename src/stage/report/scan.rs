//! The event scanner: one pass over an audit event's bytes that checks the whole line as strictly
//! as [`strict_json::parse`] does (duplicate keys at any depth, finite numbers, valid escapes,
//! bounded nesting) and keeps only what the report reads, borrowed from the line where it can be:
//! `id`, `stage`, `ts`, `decision`, `agent` and `tool` as text, the `reasons` array and the
//! `agentState` and `approval` members as their JSON text, the call's agent and tool (and its
//! `args` as their JSON text), and the outcome's status. Nothing else is built.
//!
//! It gives up (`None`) on anything that is not a plain, well-formed event: a key with an escape,
//! a `\u` escape of a surrogate, a number with an exponent, nesting deeper than [`MAX_DEPTH`], any
//! error. The strict reader ([`strict_json::parse`], then [`super::EventView::of`]) then words the
//! problem, or reads what the scanner left alone, so the scanner never changes what is counted.
//!
//! The pass over the line's top-level members is [`event_members`], which `sc-report --verify`'s
//! chain reader shares; the JSON itself is read by the [`crate::json_lex`] core.
//!
//! [`strict_json::parse`]: crate::strict_json::parse
//! [`MAX_DEPTH`]: crate::audit::scan::MAX_DEPTH

use std::borrow::Cow;

use super::event::{EventView, Reasons, StateView};
use crate::audit::scan::{event_members, Known};
use crate::json_lex::Lexer;
use crate::record::Status;

/// Reads an event from its text (valid UTF-8), or `None` when the strict reader must.
#[cfg(test)]
pub(super) fn event(text: &str) -> Option<EventView<'_>> {
    let mut view = EventView::default();
    read_into(text, &mut view)?;
    Some(view)
}

/// Reads an event from its text (valid UTF-8) into a view that is new (so that the event is not
/// moved about); `None` when the strict reader must, the view then holding part of the event.
pub(super) fn read_into<'a>(text: &'a str, view: &mut EventView<'a>) -> Option<()> {
    event_members(text, |lexer, key| {
        match key {
            Some(Known::Id) => view.id = lexer.text_value()?,
            Some(Known::Stage) => view.stage = lexer.text_value()?,
            Some(Known::Ts) => view.ts = lexer.text_value()?,
            Some(Known::Decision) => view.decision = lexer.text_value()?,
            Some(Known::Kind) => view.kind = lexer.text_value()?,
            Some(Known::Action) => {
                view.made_store = lexer.text_value()?.as_deref() == Some("init");
            }
            Some(Known::Agent) => view.agent = lexer.text_value()?,
            Some(Known::Tool) => view.tool = lexer.text_value()?,
            Some(Known::Reasons) => {
                let start = lexer.at();
                let is_array = lexer.peek() == Some(b'[');
                lexer.value()?;
                view.reasons = if is_array {
                    Reasons::Text(lexer.since(start))
                } else {
                    Reasons::List(Vec::new())
                };
            }
            Some(Known::Call) => {
                let (agent, tool, args) = call_names(lexer)?;
                view.call = Some((agent, tool));
                view.args = args.map(Cow::Borrowed);
            }
            Some(Known::AgentState) => {
                let start = lexer.at();
                lexer.value()?;
                view.agent_state = Some(StateView::Text(lexer.since(start)));
            }
            Some(Known::Approval) => {
                let start = lexer.at();
                lexer.value()?;
                view.approval = serde_json::from_str(lexer.since(start)).ok();
            }
            Some(Known::Outcome) => view.status = outcome_status(lexer)?,
            Some(Known::Grants) => {
                let start = lexer.at();
                let is_array = lexer.peek() == Some(b'[');
                lexer.value()?;
                // `[` then `]` with nothing but white space between is an empty array.
                view.grants = is_array.then(|| {
                    let text = lexer.since(start);
                    !text[1..text.len() - 1].trim().is_empty()
                });
            }
            Some(Known::Backend) => {
                view.ran_backend = lexer.peek() == Some(b'{');
                lexer.value()?;
            }
            _ => lexer.value()?,
        }
        Some(())
    })
}

/// A call's agent and tool, each a non-empty string, else `?` (both `?` for a call that is not an
/// object), and its `args` as their JSON text.
#[allow(clippy::type_complexity)]
fn call_names<'a>(lexer: &mut Lexer<'a>) -> Option<(Cow<'a, str>, Cow<'a, str>, Option<&'a str>)> {
    let unnamed = || Cow::Borrowed("?");
    if lexer.peek() != Some(b'{') {
        lexer.value()?;
        return Some((unnamed(), unnamed(), None));
    }
    let (mut agent, mut tool, mut args) = (None, None, None);
    lexer.object(|lexer, key| {
        match key {
            "agent" => agent = lexer.text_value()?,
            "tool" => tool = lexer.text_value()?,
            "args" => {
                let start = lexer.at();
                lexer.value()?;
                args = Some(lexer.since(start));
            }
            _ => lexer.value()?,
        }
        Some(())
    })?;
    let name = |text: Option<Cow<'a, str>>| text.filter(|t| !t.is_empty()).unwrap_or_else(unnamed);
    Some((name(agent), name(tool), args))
}

/// An outcome's `status`, when the outcome is an object and the status one of the three.
fn outcome_status(lexer: &mut Lexer<'_>) -> Option<Option<Status>> {
    if lexer.peek() != Some(b'{') {
        lexer.value()?;
        return Some(None);
    }
    let mut status = None;
    lexer.object(|lexer, key| {
        if key == "status" {
            status = match lexer.text_value()?.as_deref() {
                Some("executed") => Some(Status::Executed),
                Some("skipped") => Some(Status::Skipped),
                Some("failed") => Some(Status::Failed),
                _ => None,
            };
            Some(())
        } else {
            lexer.value()
        }
    })?;
    Some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_at_any_depth_are_left_to_the_strict_reader() {
        for text in [
            r#"{"id":"a","stage":"gate","id":"b"}"#,
            r#"{"x":1,"stage":"gate","x":2}"#,
            r#"{"id":"a","call":{"agent":"a","tool":"t","agent":"b"}}"#,
            r#"{"id":"a","outcome":{"status":"failed","status":"executed"}}"#,
            r#"{"id":"a","e":{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k3":2}}"#,
        ] {
            assert!(event(text).is_none(), "{text}");
        }
    }
}
