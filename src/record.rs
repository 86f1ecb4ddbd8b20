//! The records that flow between stages, one JSON object per line.
//!
//! ## Wire format
//! - **Verdict** (written by `sc-gate`): `{"id":…,"call":{…},"decision":"allow"|"hold"|"deny","reasons":[…]}`.
//!   `call` is the input line's JSON exactly as it came; a malformed line has `raw` (the line,
//!   bounded to 1 KiB) instead. A hold has `"grantable":{"scopes":[…],"kinds":[…],"values":[…]}`
//!   ([`Grantable`]): what a yes may be remembered for; a call allowed by remembered approvals
//!   has `"grants":[ID,…]`.
//! - **Approval** (added by `sc-approve` to holds only):
//!   `"approval":{"approved":false,"by":"tty"|"answers"|"web"|"none","answer":"no","reason":"…"}`
//!   (from the web page also `"digest"`: the SHA-256 of the record line the person was shown),
//!   and, when sc-approve holds the audit key, `"mac"`: the HMAC that binds the approval to the
//!   record's id and the SHA-256 of its `call` ([`approval_mac`]). sc-approve removes an
//!   `approval` from every record it did not answer itself.
//! - **Outcome** (added by `sc-exec` to every record):
//!   `"outcome":{"status":"executed"|"skipped"|"failed","result":…,"reason":"…"}`.
//!
//! A stage adds its field to the record's text, leaving the rest byte for byte as it came; only a
//! record that already carries the field (a forged approval, say) is rewritten without it first.
//! Other keys may be added to this format over time.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::call::{deeper_than, Call, Malformed, MAX_CALL_DEPTH};
use crate::json_write::push_json_str;
use crate::jsonl::JsonLine;
use crate::strict_json::{self, Checked, Key, KeySet};
use crate::verdict::{Decision, Granting, Judgement};
pub use crate::verdict::{Grantable, Scope};

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
    pub(crate) fn add_to(self, line: JsonLine) -> JsonLine {
        match self {
            CallText::Json(json) => line.raw_field("call", json),
            CallText::Raw(raw) => line.str_field("raw", raw),
        }
    }
}

/// The verdict line `sc-gate` writes.
pub fn verdict_line(id: &str, call: CallText, judgement: &Judgement) -> Vec<u8> {
    let grantable = grantable_text(judgement);
    let batch = Vec::with_capacity(call.len() + 256);
    write_verdict(batch, id, call, judgement, grantable.as_deref()).0
}

/// Writes a verdict line at the end of `batch`. Also says where in the batch the verdict's
/// members after `id` lie (`"call":…,"decision":…,"reasons":[…]`), which the gate's audit event
/// repeats byte for byte rather than write them again. `grantable` is the hold's
/// [`grantable_text`], made once by the caller, which seals it too.
pub(crate) fn write_verdict(
    batch: Vec<u8>,
    id: &str,
    call: CallText,
    judgement: &Judgement,
    grantable: Option<&str>,
) -> (Vec<u8>, Range<usize>) {
    let line = JsonLine::append_to(batch).str_field("id", id);
    let after_id = line.len() + 1;
    let line = call
        .add_to(line)
        .plain_str_field("decision", judgement.decision.as_str())
        .strs_field("reasons", &judgement.reasons);
    let batch = match &judgement.granting {
        Granting::Nothing => line,
        Granting::Offers(_) => match grantable {
            Some(text) => line.raw_field("grantable", text),
            None => line.raw_field(
                "grantable",
                &grantable_text(judgement).expect("a hold offers"),
            ),
        },
        Granting::AllowedBy(grants) => line.strs_field("grants", grants),
    }
    .finish();
    let before_close = batch.len() - b"}\n".len();
    (batch, after_id..before_close)
}

/// A hold's `grantable` as the verdict writes it (and the seal covers it).
pub(crate) fn grantable_text(judgement: &Judgement) -> Option<String> {
    match &judgement.granting {
        Granting::Offers(grantable) => Some(grantable_json(grantable)),
        _ => None,
    }
}

/// A [`Grantable`] as JSON, written as `serde_json` writes it (a test holds the two together):
/// every hold has one, and serde's writer made a fifth of a held call's cost in the gate.
fn grantable_json(grantable: &Grantable) -> String {
    // Room for it all without growing, unless an item needs escapes: its keys and scopes take
    // under 96 bytes, each item its length and three more (quotes and comma). A hold of a
    // session that read many pages lists long sources, past a fixed guess.
    let items: usize = [&grantable.kinds, &grantable.values, &grantable.sources]
        .into_iter()
        .flatten()
        .map(|item| item.len() + 3)
        .sum();
    let mut out = Vec::with_capacity(96 + items);
    out.extend_from_slice(b"{\"scopes\":[");
    for (i, scope) in grantable.scopes.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_json_str(&mut out, scope.as_str());
    }
    out.push(b']');
    let lists = [
        ("kinds", &grantable.kinds),
        ("values", &grantable.values),
        ("sources", &grantable.sources),
    ];
    for (key, list) in lists {
        if list.is_empty() {
            continue;
        }
        out.extend_from_slice(b",\"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":[");
        for (i, item) in list.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_json_str(&mut out, item);
        }
        out.push(b']');
    }
    if grantable.more_values {
        out.extend_from_slice(b",\"moreValues\":true");
    }
    out.push(b'}');
    String::from_utf8(out).expect("JSON written from strings is UTF-8")
}

/// Who answered a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnsweredBy {
    /// The person at the terminal.
    Tty,
    /// The answers file (the scripted human).
    Answers,
    /// A person on the web approval page, or a channel using its API.
    Web,
    /// A person asked through the MCP client (`elicitation/create`).
    Elicitation,
    /// A person asked by Claude Code itself.
    #[serde(rename = "claude-code")]
    ClaudeCode,
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
    /// The SHA-256 (lowercase hex) of the record line the person was shown, when the way of
    /// asking binds the answer to it (the web page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    pub reason: String,
    /// How far an approval reaches ([`Scope`]); on every approval that approves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// The id of the grant a `call` or `value` approval was kept as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
}

/// Adds `"seal":"…"` to the record line at the end of `batch` (which ends with `}` and a newline).
pub(crate) fn push_seal(batch: &mut Vec<u8>, seal_hex: &[u8]) {
    debug_assert!(batch.ends_with(b"}\n"));
    batch.truncate(batch.len() - 2);
    batch.extend_from_slice(b",\"seal\":\"");
    batch.extend_from_slice(seal_hex);
    batch.extend_from_slice(b"\"}\n");
}

/// An approval as written on a record: with its MAC when a key was given.
#[derive(Debug, Serialize)]
pub(crate) struct SealedApproval<'a> {
    #[serde(flatten)]
    pub approval: &'a Approval,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
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

/// A record read by a later stage: its text, checked strictly, and the members the stages read,
/// as JSON text. Nothing else of it is built: it passes on byte for byte.
#[derive(Debug)]
pub struct Record<'a> {
    pub text: &'a str,
    members: Members<'a>,
}

/// The members of a record that the stages read, each as its JSON text (`null` included), and
/// the call read from its member.
#[derive(Debug, Default)]
struct Members<'a> {
    id: Option<&'a RawValue>,
    decision: Option<&'a RawValue>,
    reasons: Option<&'a RawValue>,
    call: Option<&'a RawValue>,
    approval: Option<&'a RawValue>,
    outcome: Option<&'a RawValue>,
    seal: Option<&'a RawValue>,
    grantable: Option<&'a RawValue>,
    /// A `task` or `result` record's `kind` (value provenance): such a line is no verdict.
    kind: Option<&'a RawValue>,
    read_call: Option<Result<Call, Malformed>>,
}

/// Reads a record object in one strict pass: every key of every object compared, as
/// [`strict_json::validate`] would. The call member is checked by reading it as sc-gate reads a
/// call (a call that reads is strictly valid JSON); only one that does not read is validated
/// separately, to tell a malformed call from a malformed record.
impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a record object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Members::default();
                let mut keys = KeySet::new();
                while let Some(Key(key)) = map.next_key()? {
                    if !keys.insert(key.clone()) {
                        return Err(strict_json::duplicate_key(&key));
                    }
                    let slot = match &*key {
                        "id" => &mut members.id,
                        "decision" => &mut members.decision,
                        "reasons" => &mut members.reasons,
                        "call" => &mut members.call,
                        "approval" => &mut members.approval,
                        "outcome" => &mut members.outcome,
                        "seal" => &mut members.seal,
                        "grantable" => &mut members.grantable,
                        "kind" => &mut members.kind,
                        _ => {
                            map.next_value::<Checked>()?;
                            continue;
                        }
                    };
                    let raw: &'de RawValue = map.next_value()?;
                    if &*key == "call" {
                        let call = Call::parse_text(raw.get()).map(|(call, _)| call);
                        if call.is_err() {
                            strict_json::validate(raw.get()).map_err(de::Error::custom)?;
                        }
                        members.read_call = Some(call);
                    } else {
                        strict_json::validate(raw.get()).map_err(de::Error::custom)?;
                    }
                    *slot = Some(raw);
                }
                Ok(members)
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

/// Why a record line could not be read ([`Record::parse`]).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("the record is not valid UTF-8 (bad byte at offset {offset})")]
    NotUtf8 { offset: usize },
    /// A JSON object that could not be read as a record.
    #[error("the record could not be read")]
    Unreadable,
    #[error("the record is {found}, not a JSON object")]
    NotAnObject { found: &'static str },
    /// Not strict JSON; the parser's error has the line and column.
    #[error("the record is not valid JSON: {0}")]
    NotJson(serde_json::Error),
}

impl<'a> Record<'a> {
    /// Parses a record line strictly (duplicate keys refused at any depth, as for calls).
    pub fn parse(line: &'a [u8]) -> Result<Record<'a>, RecordError> {
        let text = std::str::from_utf8(line).map_err(|err| RecordError::NotUtf8 {
            offset: err.valid_up_to(),
        })?;
        let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        // The members are checked one by one, each counting depth from itself: a record that
        // nests at all deeply is checked whole first, so that its depth counts from its top.
        let shallow = deeper_than(text, MAX_CALL_DEPTH).is_none();
        let readable = text.starts_with('{') && (shallow || strict_json::validate(text).is_ok());
        let members = readable
            .then(|| serde_json::from_str::<Members>(text).ok())
            .flatten();
        match members {
            Some(members) => Ok(Record { text, members }),
            // Not a strict JSON object: building it says exactly what is wrong.
            None => Err(match strict_json::parse(text) {
                Ok(Value::Object(_)) => RecordError::Unreadable,
                Ok(other) => RecordError::NotAnObject {
                    found: strict_json::type_name(&other),
                },
                Err(err) => RecordError::NotJson(err),
            }),
        }
    }

    pub fn id(&self) -> Option<Cow<'a, str>> {
        self.members
            .id
            .and_then(string_value)
            .filter(|id| !id.is_empty())
    }

    /// The record's decision; `None` when it is missing or not one of the three.
    pub fn decision(&self) -> Option<Decision> {
        Decision::parse(&self.members.decision.and_then(string_value)?)
    }

    /// Whether the record's `reasons`, if it has them, hold strings only (as every stage writes
    /// them): a seal covers the strings, so anything else beside them was put there later.
    pub(crate) fn reasons_are_strings(&self) -> bool {
        let Some(raw) = self.members.reasons else {
            return true;
        };
        serde_json::from_str::<Vec<Value>>(raw.get())
            .is_ok_and(|items| items.iter().all(Value::is_string))
    }

    /// The reasons as strings; anything that is not a string is left out.
    pub fn reasons(&self) -> Vec<String> {
        let Some(raw) = self.members.reasons else {
            return Vec::new();
        };
        match serde_json::from_str::<Vec<Value>>(raw.get()) {
            Ok(items) => items
                .into_iter()
                .filter_map(|item| match item {
                    Value::String(text) => Some(text),
                    _ => None,
                })
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// What a person's yes to this hold may be remembered for: the record's `grantable` when it
    /// reads as one, else `once` only (nothing wider is offered for a record that does not say).
    pub fn grantable(&self) -> Grantable {
        self.members
            .grantable
            .and_then(|raw| serde_json::from_str::<Grantable>(raw.get()).ok())
            .unwrap_or_else(|| Grantable {
                scopes: vec![Scope::Once],
                ..Grantable::default()
            })
    }

    /// The record's `grantable` exactly as it came, when it has one.
    pub(crate) fn grantable_text(&self) -> Option<&'a str> {
        self.members.grantable.map(RawValue::get)
    }

    /// The record's `call`, read as sc-gate reads a call; `None` when there is none.
    pub fn call(&self) -> Option<&Result<Call, Malformed>> {
        self.members.read_call.as_ref()
    }

    /// [`Record::call`], taken out of the record.
    pub(crate) fn take_call(&mut self) -> Option<Result<Call, Malformed>> {
        self.members.read_call.take()
    }

    /// The record's `call` as a JSON value, whatever it holds.
    pub fn call_value(&self) -> Option<Value> {
        strict_json::parse(self.members.call?.get()).ok()
    }

    /// The text of the record's `call.args`, exactly as it came; `None` when there is no such
    /// object.
    pub(crate) fn args_text(&self) -> Option<&'a str> {
        #[derive(Deserialize)]
        struct CallPart<'a> {
            #[serde(borrow)]
            args: Option<&'a RawValue>,
        }
        let call: CallPart = serde_json::from_str(self.members.call?.get()).ok()?;
        let args = call.args?.get();
        args.starts_with('{').then_some(args)
    }

    /// The approval on the record, if it is one this format describes.
    pub fn approval(&self) -> Option<Approval> {
        serde_json::from_str(self.members.approval?.get()).ok()
    }

    /// The `mac` of the approval on the record, if it has one that is a string.
    pub(crate) fn approval_mac(&self) -> Option<String> {
        #[derive(Deserialize)]
        struct MacPart {
            mac: Option<String>,
        }
        let part: MacPart = serde_json::from_str(self.members.approval?.get()).ok()?;
        part.mac
    }

    /// The record's `seal` (from sc-gate, under the audit key), if it is a string.
    pub fn seal(&self) -> Option<Cow<'a, str>> {
        self.members.seal.and_then(string_value)
    }

    /// The text of the record's `call`, exactly as it came.
    pub(crate) fn call_text(&self) -> Option<&'a str> {
        self.members.call.map(RawValue::get)
    }

    /// The record's line without `key` (which it must have), the rest byte for byte as it came.
    pub(crate) fn without_field(&self, key: &str) -> Vec<u8> {
        let mut line = without_member(self.text, key).into_bytes();
        line.push(b'\n');
        line
    }

    /// Whether the record has a member `key`.
    pub fn has(&self, key: &str) -> bool {
        match key {
            "id" => self.members.id.is_some(),
            "decision" => self.members.decision.is_some(),
            "reasons" => self.members.reasons.is_some(),
            "call" => self.members.call.is_some(),
            "approval" => self.members.approval.is_some(),
            "outcome" => self.members.outcome.is_some(),
            "seal" => self.members.seal.is_some(),
            "kind" => self.members.kind.is_some(),
            _ => matches!(
                strict_json::parse(self.text),
                Ok(Value::Object(object)) if object.contains_key(key)
            ),
        }
    }

    /// The record's line with `key` set to `value`.
    pub(crate) fn with_field<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Vec<u8> {
        with_field(self.text, self.has(key), key, value)
    }
}

/// A record's line with `key` set to `value`: added at the end, the rest byte for byte, or, when
/// the record has `key` already (`present`; a forged approval, say), the record written again
/// without it first.
pub(crate) fn with_field<T: Serialize + ?Sized>(
    text: &str,
    present: bool,
    key: &str,
    value: &T,
) -> Vec<u8> {
    let value = serde_json::to_string(value).expect("a record field serializes");
    with_raw_field(text, present, key, &value)
}

/// [`with_field`] for a value that is JSON text already (one valid JSON value).
pub(crate) fn with_raw_field(text: &str, present: bool, key: &str, value_json: &str) -> Vec<u8> {
    let without_key;
    let text = if present {
        without_key = without_member(text, key);
        without_key.as_str()
    } else {
        text
    };
    let body = text.strip_suffix('}').expect("a JSON object ends with }");
    let mut line = Vec::with_capacity(text.len() + value_json.len() + 32);
    line.extend_from_slice(body.as_bytes());
    let empty = line.iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if !empty {
        line.push(b',');
    }
    crate::jsonl::push_json_str(&mut line, key);
    line.push(b':');
    line.extend_from_slice(value_json.as_bytes());
    line.extend_from_slice(b"}\n");
    line
}

/// A record's text (a strictly valid JSON object, trimmed) without its members named `key`
/// (however the name is escaped), every other byte as it came: never written again through a
/// JSON value, which would round numbers (`12345678901234567890123`) and change what was seen.
pub(crate) fn without_member(text: &str, key: &str) -> String {
    let spans = member_spans(text);
    let mut out = String::with_capacity(text.len());
    let mut kept = 0;
    let mut members = spans
        .iter()
        .filter(|span| span.key_is(text, key))
        .peekable();
    if members.peek().is_none() {
        return text.to_owned();
    }
    // Each member to drop goes with the comma after it, or, for the last member, the one before.
    let count = spans.len();
    for (index, span) in spans.iter().enumerate() {
        if !span.key_is(text, key) {
            continue;
        }
        let (start, end) = if index + 1 < count {
            (span.start, spans[index + 1].start)
        } else if index > 0 {
            (spans[index - 1].end, span.end)
        } else {
            (span.start, span.end)
        };
        let start = start.max(kept);
        out.push_str(&text[kept..start]);
        kept = end;
    }
    out.push_str(&text[kept..]);
    out
}

/// Where one member of an object stands in its text: from its key's opening quote to the end of
/// its value.
#[derive(Debug, Clone, Copy)]
struct MemberSpan {
    start: usize,
    key_end: usize,
    end: usize,
}

impl MemberSpan {
    fn key_is(&self, text: &str, key: &str) -> bool {
        let raw = &text[self.start..self.key_end];
        if raw.contains('\\') {
            serde_json::from_str::<String>(raw).is_ok_and(|decoded| decoded == key)
        } else {
            raw.len() == key.len() + 2 && &raw[1..raw.len() - 1] == key
        }
    }
}

/// The members of the JSON object `text` (strictly valid already), in order.
fn member_spans(text: &str) -> Vec<MemberSpan> {
    let bytes = text.as_bytes();
    let skip_ws = |mut at: usize| {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        at
    };
    // The end of the string whose opening quote is at `at`.
    let string_end = |mut at: usize| {
        at += 1;
        while bytes[at] != b'"' {
            at += if bytes[at] == b'\\' { 2 } else { 1 };
        }
        at + 1
    };
    let mut spans = Vec::new();
    let mut at = skip_ws(0) + 1; // past `{`
    loop {
        at = skip_ws(at);
        if at >= bytes.len() || bytes[at] != b'"' {
            return spans; // `}`
        }
        let start = at;
        let key_end = string_end(at);
        at = skip_ws(key_end) + 1; // past `:`
        at = skip_ws(at);
        // The value: a string, or anything up to the `,` or `}` at this depth.
        let mut depth = 0usize;
        while at < bytes.len() {
            match bytes[at] {
                b'"' => {
                    at = string_end(at);
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth > 0 => depth -= 1,
                b',' | b'}' if depth == 0 => break,
                _ => {}
            }
            at += 1;
        }
        let mut end = at;
        while end > start && bytes[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        spans.push(MemberSpan {
            start,
            key_end,
            end,
        });
        if at < bytes.len() && bytes[at] == b',' {
            at += 1;
        }
    }
}

/// A JSON string's value: borrowed when it has no escapes; `None` for anything but a string.
fn string_value(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(text).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written `grantable` is what serde_json writes, byte for byte: empty lists left
    /// out, strings escaped, every scope.
    #[test]
    fn a_grantable_is_written_as_serde_writes_it() {
        let odd = "q\"uo\\te\n\u{1}\u{7f} é \u{2028} 🦀".to_owned();
        let cases = [
            Grantable::default(),
            Grantable {
                scopes: Scope::ALL.to_vec(),
                ..Grantable::default()
            },
            Grantable {
                scopes: vec![Scope::Once, Scope::Call],
                kinds: vec!["amount".into(), odd.clone()],
                values: vec![],
                sources: vec!["search_web query=x".into(), odd.clone()],
                more_values: false,
            },
            Grantable {
                scopes: vec![Scope::Once, Scope::Value],
                kinds: vec![],
                values: vec![odd.clone(), String::new()],
                sources: vec![],
                more_values: true,
            },
        ];
        for grantable in cases {
            assert_eq!(
                grantable_json(&grantable),
                serde_json::to_string(&grantable).unwrap()
            );
        }
    }

    #[test]
    fn a_verdict_carries_the_call_untouched() {
        let call = r#"{"agent":"a",  "tool":"t","args":{"amount":1.50}}"#;
        let judgement = Judgement {
            granting: Default::default(),
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
    fn args_are_taken_as_they_came() {
        let args_text = |line: &'static str| Record::parse(line.as_bytes()).unwrap().args_text();
        let line = r#"{"id":"x","call":{"agent":"a","tool":"t","args": {"amount": 100.0000000000000001, "to":"b"}},"decision":"allow"}"#;
        assert_eq!(
            args_text(line),
            Some(r#"{"amount": 100.0000000000000001, "to":"b"}"#)
        );
        assert_eq!(args_text(r#"{"call":{"agent":"a","tool":"t"}}"#), None);
        assert_eq!(args_text(r#"{"call":{"args":[1]}}"#), None);
        assert_eq!(args_text(r#"{"raw":"x"}"#), None);
    }

    #[test]
    fn members_that_are_null_are_there() {
        let line = br#"{"id":"x","approval":null,"outcome":null,"decision":"hold"}"#;
        let record = Record::parse(line).unwrap();
        assert!(record.has("approval") && record.has("outcome"));
        let out = record.with_field("approval", &false);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"id\":\"x\",\"outcome\":null,\"decision\":\"hold\",\"approval\":false}\n"
        );
    }

    #[test]
    fn records_are_read_as_strictly_as_calls() {
        for (line, expected) in [
            (
                r#"{"id":"x","call":{"args":{"a":1,"a":2}}}"#,
                "duplicate key `a`",
            ),
            (r#"{"id":"x","extra":[{"k":1,"k":1}]}"#, "duplicate key `k`"),
            (r#"{"id":"x","id":"y"}"#, "duplicate key `id`"),
            (r#"["id","x"]"#, "an array, not a JSON object"),
            (r#"{"id":"x","n":1e999}"#, "not valid JSON"),
            (r#"{"id":"x"} {}"#, "not valid JSON"),
        ] {
            let err = Record::parse(line.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(expected), "{line}: {err}");
        }
        let record = Record::parse(br#"{"id":"a\u0062","decision":"h\u006fld"}"#).unwrap();
        assert_eq!(record.id().as_deref(), Some("ab"));
        assert_eq!(record.decision(), Some(Decision::Hold));
    }

    #[test]
    fn records_nested_past_the_parsers_limit_are_refused_whatever_the_member() {
        let deep = |key: &str, levels: usize| {
            format!(
                r#"{{"{key}":{}{},"z":1}}"#,
                "[".repeat(levels),
                "]".repeat(levels)
            )
        };
        for key in [
            "id", "decision", "reasons", "call", "approval", "outcome", "other",
        ] {
            let line = deep(key, 127);
            assert_eq!(
                Record::parse(line.as_bytes()).is_ok(),
                strict_json::parse(&line).is_ok(),
                "{key}"
            );
            let err = Record::parse(line.as_bytes()).unwrap_err();
            assert!(matches!(err, RecordError::NotJson(_)), "{key}: {err:?}");
            assert!(err.to_string().contains("recursion limit"), "{key}: {err}");
            // Deep, but within the limit: read, and its field replaced, never doubled.
            let line = deep(key, 100);
            if key != "other" {
                let record = Record::parse(line.as_bytes()).unwrap();
                let out = String::from_utf8(record.with_field(key, &1)).unwrap();
                assert_eq!(out.matches(&format!("\"{key}\"")).count(), 1, "{key}");
            }
        }
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

    #[test]
    fn a_member_is_removed_from_the_text_and_every_other_byte_stays() {
        let cases = [
            (r#"{"approval":null}"#, "{}"),
            (r#"{"approval":null,"a":1}"#, r#"{"a":1}"#),
            (r#"{"a":1,"approval":{"x":[1,"}"]}}"#, r#"{"a":1}"#),
            (
                r#"{"a":12345678901234567890123, "approval" : true , "b":"\"approval\""}"#,
                r#"{"a":12345678901234567890123, "b":"\"approval\""}"#,
            ),
            (r#"{ "appr\u006fval":1 ,"c":2.50}"#, r#"{ "c":2.50}"#),
            (r#"{"a":1,"b":2}"#, r#"{"a":1,"b":2}"#),
        ];
        for (text, expected) in cases {
            assert_eq!(without_member(text, "approval"), expected, "{text}");
            let value: Value = serde_json::from_str(&without_member(text, "approval")).unwrap();
            assert!(value.get("approval").is_none(), "{text}");
        }
    }

    #[test]
    fn replacing_a_member_keeps_the_calls_text() {
        let text = r#"{"id":"h","call":{"args":{"n":12345678901234567890123}},"approval":null,"decision":"hold"}"#;
        let line = with_raw_field(text, true, "approval", "false");
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "{\"id\":\"h\",\"call\":{\"args\":{\"n\":12345678901234567890123}},\"decision\":\"hold\",\"approval\":false}\n"
        );
    }
}
