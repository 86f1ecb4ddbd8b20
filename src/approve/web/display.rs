//! A hold as the page shows it: the record as JSON to embed, and the same hold as the terminal
//! shows it ([`Display`]), with the call in plain words ([`summary`]) for the card's first line
//! and the arguments pretty-printed from their exact text.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use std::fmt;

use crate::approve::Hold;
use crate::sanitize::for_terminal;
use crate::strict_json;

/// The record line as JSON to embed: it was read strictly, so it is one JSON value; a line that
/// somehow is not is carried as a string.
pub(super) fn record_json(line: &[u8]) -> Box<RawValue> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    RawValue::from_string(text.to_owned())
        .unwrap_or_else(|_| serde_json::value::to_raw_value(text).expect("a string serializes"))
}

/// A hold as the terminal shows it: every piece of agent-written text escaped, the arguments
/// pretty-printed from their exact text.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Display {
    /// The call in plain words, one line: `AGENT wants to run TOOL: KEY VALUE, …` ([`summary`]).
    summary: String,
    id: String,
    agent: String,
    tool: String,
    args: String,
    source: String,
    instruction: Option<String>,
    reasons: Vec<String>,
    /// What tainted the agent, when the record carries its state.
    tainted_by: Option<String>,
    /// What the agent has spent in this stream, when the record carries its state.
    spent: Option<String>,
    /// The untrusted values a `yes value` would trust (the hold's `grantable.values`), escaped
    /// as every other piece of agent-written text is: the confirmation lists these.
    values: Vec<String>,
}

pub(super) fn display_json(hold: &Hold<'_>) -> Box<RawValue> {
    let call = hold.call;
    let record = std::str::from_utf8(hold.line)
        .ok()
        .and_then(|text| strict_json::parse(text).ok());
    let state = record
        .as_ref()
        .and_then(|record| record.get("agentState").cloned());
    let values = record
        .as_ref()
        .and_then(|record| record.pointer("/grantable/values"))
        .and_then(Value::as_array)
        .map(|values| {
            values
                .iter()
                .map(|value| match value {
                    Value::String(text) => for_terminal(text).into_owned(),
                    other => for_terminal(&other.to_string()).into_owned(),
                })
                .collect()
        })
        .unwrap_or_default();
    let tainted_by = state
        .as_ref()
        .and_then(|state| state.get("taintedBy"))
        .map(|cause| {
            let part = |key: &str| cause.get(key).and_then(Value::as_str).unwrap_or("?");
            let mut text = format!(
                "{} read untrusted content through {} (id {}",
                part("agent"),
                part("tool"),
                part("id")
            );
            if let Some(argument) = cause.get("argument").and_then(Value::as_str) {
                text.push_str(", ");
                text.push_str(argument);
            }
            text.push(')');
            for_terminal(&text).into_owned()
        });
    let spent = state.as_ref().and_then(|state| {
        // Only a number: sc-gate writes one; anything else came from somewhere else.
        let spent = state.get("spent").filter(|spent| spent.is_number())?;
        let inexact = state.get("inexact") == Some(&Value::Bool(true));
        Some(format!(
            "{spent}{}",
            if inexact {
                " (not exact: an amount a float cannot hold, or a sum that rounded)"
            } else {
                ""
            }
        ))
    });
    let display = Display {
        summary: summary(&call.agent, &call.tool, call.args.text()),
        id: for_terminal(hold.id).into_owned(),
        agent: for_terminal(&call.agent).into_owned(),
        tool: for_terminal(&call.tool).into_owned(),
        args: pretty_json(call.args.text()),
        source: for_terminal(&call.provenance.to_string()).into_owned(),
        instruction: call
            .instruction
            .as_deref()
            .map(|text| for_terminal(text).into_owned()),
        reasons: hold
            .reasons
            .iter()
            .map(|reason| for_terminal(reason).into_owned())
            .collect(),
        tainted_by,
        spent,
        values,
    };
    serde_json::value::to_raw_value(&display).expect("a display serializes")
}

/// How many arguments the first line names; more are `…`.
pub(super) const SUMMARY_ARGS: usize = 4;

/// The call in plain words, the card's first line: `buyer wants to run send_payment: to
/// acme-travel, amount 750.10`. Each argument is its key and its value (a string without its
/// quotes, anything else as its JSON text, numbers as written, white space runs as one space);
/// every value whole (a person must see a recipient's domain and a file's extension; the page
/// wraps it), and arguments after the first few are one `…`: the whole call is in the
/// arguments box.
pub(crate) fn summary(agent: &str, tool: &str, args: &str) -> String {
    let mut line = format!(
        "{} wants to run {}",
        for_terminal(agent),
        for_terminal(tool)
    );
    let args = args.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    let pairs: Vec<String> = match serde_json::from_str::<Members>(args) {
        Ok(Members(members)) => {
            let mut pairs: Vec<String> = members
                .iter()
                .take(SUMMARY_ARGS)
                .map(|(key, value)| {
                    format!(
                        "{} {}",
                        for_terminal(key),
                        for_terminal(&plain_value(value.get()))
                    )
                })
                .collect();
            if members.len() > SUMMARY_ARGS {
                pairs.push("\u{2026}".to_owned());
            }
            pairs
        }
        // Arguments that are not an object (sc-gate takes only objects; a record may say else).
        Err(_) if !args.is_empty() => vec![for_terminal(&plain_value(args)).into_owned()],
        Err(_) => Vec::new(),
    };
    if !pairs.is_empty() {
        line.push_str(": ");
        line.push_str(&pairs.join(", "));
    }
    line
}

/// A JSON value as the first line shows it: a string's text, or the JSON text with each run of
/// white space one space.
pub(super) fn plain_value(text: &str) -> String {
    if let Ok(text) = serde_json::from_str::<String>(text) {
        return text;
    }
    crate::sanitize::one_line(text)
}

/// JSON text indented two spaces a level, every number and string exactly as written (no float
/// rounding), so what runs is what the person reads; agent-written text escaped as for the
/// terminal ([`for_terminal`]), the indentation's own line breaks kept.
pub(super) fn pretty_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    write_pretty(text, 0, &mut out);
    out
}

pub(super) fn write_pretty(text: &str, depth: usize, out: &mut String) {
    let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    let indent = |out: &mut String, depth: usize| {
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    if text.starts_with('{') {
        if let Ok(Members(members)) = serde_json::from_str::<Members>(text) {
            if members.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push_str("{\n");
            for (at, (key, value)) in members.iter().enumerate() {
                indent(out, depth + 1);
                out.push_str(&for_terminal(
                    &serde_json::to_string(key).expect("a string serializes"),
                ));
                out.push_str(": ");
                write_pretty(value.get(), depth + 1, out);
                if at + 1 < members.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            indent(out, depth);
            out.push('}');
            return;
        }
    } else if text.starts_with('[') {
        if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push_str("[\n");
            for (at, item) in items.iter().enumerate() {
                indent(out, depth + 1);
                write_pretty(item.get(), depth + 1, out);
                if at + 1 < items.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            indent(out, depth);
            out.push(']');
            return;
        }
    }
    out.push_str(&for_terminal(text));
}

/// An object's members in order, each value as its JSON text.
pub(super) struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}
