//! The records that flow between stages, one JSON object per line.
//!
//! ## Wire format
//! - **Verdict** (written by `sc-gate`): `{"id":…,"call":{…},"decision":"allow"|"hold"|"deny","reasons":[…]}`.
//!   `call` is the input line's JSON exactly as it came; a malformed line has `raw` (the line,
//!   bounded to 1 KiB) instead.
//! - **Approval** (added by `sc-approve` to holds only):
//!   `"approval":{"approved":false,"by":"tty"|"answers"|"none","answer":"no","reason":"…"}`.
//! - **Outcome** (added by `sc-exec` to every record):
//!   `"outcome":{"status":"executed"|"skipped"|"failed","result":…,"reason":"…"}`.
//!
//! A stage adds its field to the record's text, leaving the rest byte for byte as it came; only a
//! record that already carries the field (a forged approval, say) is rewritten without it first.
//! Other keys may be added to this format over time.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::decision::{Decision, Judgement};
use crate::jsonl::JsonLine;
use crate::strict_json;

/// How a call came into the gate: as JSON text to carry untouched, or as a bounded raw excerpt.
#[derive(Debug, Clone, Copy)]
pub enum CallText<'a> {
    Json(&'a str),
    Raw(&'a str),
}

impl CallText<'_> {
    fn len(self) -> usize {
        match self {
            CallText::Json(text) | CallText::Raw(text) => text.len(),
        }
    }

    /// Adds `call` or `raw` to a record or event line.
    pub fn add_to(self, line: JsonLine) -> JsonLine {
        match self {
            CallText::Json(json) => line.raw_field("call", json),
            CallText::Raw(raw) => line.str_field("raw", raw),
        }
    }
}

/// The verdict line `sc-gate` writes.
pub fn verdict_line(id: &str, call: CallText, judgement: &Judgement) -> Vec<u8> {
    write_verdict(Vec::with_capacity(call.len() + 256), id, call, judgement).0
}

/// Writes a verdict line at the end of `batch`. Also says where in the batch the verdict's
/// members after `id` lie (`"call":…,"decision":…,"reasons":[…]`), which the gate's audit event
/// repeats byte for byte rather than write them again.
pub fn write_verdict(
    batch: Vec<u8>,
    id: &str,
    call: CallText,
    judgement: &Judgement,
) -> (Vec<u8>, Range<usize>) {
    let line = JsonLine::append_to(batch).str_field("id", id);
    let after_id = line.len() + 1;
    let batch = call
        .add_to(line)
        .str_field("decision", judgement.decision.as_str())
        .strs_field("reasons", &judgement.reasons)
        .finish();
    let before_close = batch.len() - b"}\n".len();
    (batch, after_id..before_close)
}

/// Who answered a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnsweredBy {
    /// The person at the terminal.
    Tty,
    /// The answers file (the scripted human).
    Answers,
    /// Nobody could be asked.
    None,
}

/// A person's answer to a hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub approved: bool,
    pub by: AnsweredBy,
    /// What was typed (trimmed of the line ending), or `null` when nothing was read.
    pub answer: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Executed,
    Skipped,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Executed => "executed",
            Status::Skipped => "skipped",
            Status::Failed => "failed",
        }
    }
}

/// What `sc-exec` did with a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    pub reason: String,
}

/// A record read by a later stage: its object, and its text for adding a field.
#[derive(Debug)]
pub struct Record<'a> {
    pub text: &'a str,
    pub object: Map<String, Value>,
}

impl<'a> Record<'a> {
    /// Parses a record line strictly (duplicate keys refused, as for calls).
    pub fn parse(line: &'a [u8]) -> Result<Record<'a>, String> {
        let text = std::str::from_utf8(line).map_err(|err| {
            format!(
                "the record is not valid UTF-8 (bad byte at offset {})",
                err.valid_up_to()
            )
        })?;
        let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        match strict_json::parse(text) {
            Ok(Value::Object(object)) => Ok(Record { text, object }),
            Ok(other) => Err(format!(
                "the record is {}, not a JSON object",
                strict_json::type_name(&other)
            )),
            Err(err) => Err(format!("the record is not valid JSON: {err}")),
        }
    }

    pub fn id(&self) -> Option<&str> {
        self.object
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
    }

    /// The record's decision; `None` when it is missing or not one of the three.
    pub fn decision(&self) -> Option<Decision> {
        self.object
            .get("decision")
            .and_then(Value::as_str)
            .and_then(Decision::parse)
    }

    /// The reasons as strings; anything that is not a string is left out.
    pub fn reasons(&self) -> Vec<String> {
        match self.object.get("reasons") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn call(&self) -> Option<&Value> {
        self.object.get("call")
    }

    /// The approval on the record, if it is one this format describes.
    pub fn approval(&self) -> Option<Approval> {
        serde_json::from_value(self.object.get("approval")?.clone()).ok()
    }

    /// The record's line with `key` set to `value`.
    pub fn with_field<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Vec<u8> {
        let value_json = serde_json::to_vec(value).expect("a record field serializes");
        let mut line;
        if self.object.contains_key(key) {
            let mut object = self.object.clone();
            object.shift_remove(key);
            line = serde_json::to_vec(&object).expect("a JSON object serializes");
            line.pop(); // the closing brace
        } else {
            let body = self
                .text
                .strip_suffix('}')
                .expect("a JSON object ends with }");
            line = body.as_bytes().to_vec();
        }
        let empty = line.iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        if !empty {
            line.push(b',');
        }
        serde_json::to_writer(&mut line, key).expect("a key serializes");
        line.push(b':');
        line.extend_from_slice(&value_json);
        line.extend_from_slice(b"}\n");
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_carries_the_call_untouched() {
        let call = r#"{"agent":"a",  "tool":"t","args":{"amount":1.50}}"#;
        let judgement = Judgement {
            decision: Decision::Allow,
            reasons: vec!["ok".into()],
        };
        let line = verdict_line("id-1", CallText::Json(call), &judgement);
        let text = String::from_utf8(line).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\"id\":\"id-1\",\"call\":{call},\"decision\":\"allow\",\"reasons\":[\"ok\"]}}\n"
            )
        );
    }

    #[test]
    fn adding_a_field_keeps_the_rest_byte_for_byte() {
        let line = br#"{"id":"x", "call":{"amount":1.50},"decision":"hold"}"#;
        let record = Record::parse(line).unwrap();
        let out = record.with_field("outcome", &serde_json::json!({"status":"skipped"}));
        assert_eq!(
            out,
            b"{\"id\":\"x\", \"call\":{\"amount\":1.50},\"decision\":\"hold\",\"outcome\":{\"status\":\"skipped\"}}\n"
        );
    }

    #[test]
    fn adding_a_field_replaces_one_already_there() {
        let line = br#"{"id":"x","approval":{"approved":true},"decision":"hold"}"#;
        let record = Record::parse(line).unwrap();
        let out = record.with_field("approval", &false);
        let value: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["approval"], false);
        assert_eq!(
            String::from_utf8(out).unwrap().matches("approval").count(),
            1
        );
    }

    #[test]
    fn adding_to_an_empty_object() {
        let record = Record::parse(b"{ }").unwrap();
        assert_eq!(record.with_field("k", &1), b"{ \"k\":1}\n");
    }

    #[test]
    fn records_are_parsed_strictly() {
        assert!(Record::parse(br#"{"decision":"allow","decision":"deny"}"#).is_err());
        assert!(Record::parse(b"[]").is_err());
        assert!(Record::parse(b"\xff").is_err());
    }

    #[test]
    fn an_unknown_decision_is_none() {
        let record = Record::parse(br#"{"decision":"ALLOW"}"#).unwrap();
        assert_eq!(record.decision(), None);
    }
}
