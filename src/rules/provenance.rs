//! Value provenance: which values a tainted agent's call carries, and where they came from.
//!
//! With the policy's `provenance` key, a tainted agent's call to a sensitive tool is held only
//! when an argument carries a value that appeared in untrusted output (a result of a tool in
//! `untrustedOutputTools`) and not in the user's instruction (a task record with `source:
//! "user"`); a tool in `actionTools` is held as before, whatever its arguments, since its harm
//! is the act itself. See docs/provenance.md.
//!
//! What the agent (or, with `taintScope: "crew"`, the crew) read and was told is kept in a
//! [`Ledger`]: the untrusted texts and the trusted instructions, each indexed by their typed
//! tokens and words ([`super::tokens`]), and the untrusted reads whose output the gate has not
//! seen yet. The rule allows only on a complete ledger: a read whose output was not recorded,
//! or more output than the bounds keep, holds as without provenance. The ledger is part of the
//! crew's state, so it is stored with it and shared by the processes of a crew.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::granting::{Endorsed, MAX_NAMED};
use super::policy::{Policy, TaintScope};
use super::tokens::{self, Kind, TokenIndex};
use crate::call::Call;
use crate::sanitize::{for_terminal, quoted};
use crate::strict_json::type_name;
use crate::verdict::Decision;

pub(crate) use super::provenance_rules::{
    ProvenanceRules, MAX_PENDING_READS, MAX_WHOLE_VALUE_CHARS,
};

/// A tool result that values came from, as reasons name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    pub tool: String,
    /// The id of the result's event (sc-gate), or of the call whose result it was.
    pub event: String,
}

/// An untrusted read that was let through and whose output has not been recorded yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PendingRead {
    pub tool: String,
    pub id: String,
}

/// What one agent (or the crew) read from untrusted output and was told by the user.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    origins: Vec<Origin>,
    untrusted: TokenIndex,
    trusted: TokenIndex,
    pending: Vec<PendingRead>,
    pending_overflowed: bool,
    /// How many untrusted reads or results were recorded.
    reads: u64,
}

impl PartialEq for Ledger {
    fn eq(&self, other: &Ledger) -> bool {
        self.origins == other.origins
            && self.untrusted.texts() == other.untrusted.texts()
            && self.untrusted.overflowed() == other.untrusted.overflowed()
            && self.trusted.texts() == other.trusted.texts()
            && self.pending == other.pending
            && self.pending_overflowed == other.pending_overflowed
            && self.reads == other.reads
    }
}

/// How a ledger is stored: its texts; the indexes are built again when it is read.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LedgerWire {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    origins: Vec<Origin>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    untrusted: Vec<(u32, String)>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    untrusted_overflowed: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    trusted: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pending: Vec<PendingRead>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pending_overflowed: bool,
    #[serde(default)]
    reads: u64,
}

impl Serialize for Ledger {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        LedgerWire {
            origins: self.origins.clone(),
            untrusted: self.untrusted.texts().to_vec(),
            untrusted_overflowed: self.untrusted.overflowed(),
            trusted: self
                .trusted
                .texts()
                .iter()
                .map(|(_, t)| t.clone())
                .collect(),
            pending: self.pending.clone(),
            pending_overflowed: self.pending_overflowed,
            reads: self.reads,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Ledger {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Ledger, D::Error> {
        let wire = LedgerWire::deserialize(deserializer)?;
        let too_many = wire.pending.len() > MAX_PENDING_READS;
        let mut ledger = Ledger {
            origins: wire.origins,
            pending: wire.pending,
            pending_overflowed: wire.pending_overflowed || too_many,
            reads: wire.reads,
            ..Ledger::default()
        };
        for (origin, text) in &wire.untrusted {
            if *origin as usize >= ledger.origins.len() {
                return Err(serde::de::Error::custom(format!(
                    "an untrusted text names origin {origin}, which the ledger does not have"
                )));
            }
            ledger.untrusted.add(*origin, text);
        }
        if wire.untrusted_overflowed {
            ledger.untrusted.mark_overflowed();
        }
        for text in &wire.trusted {
            ledger.trusted.add(0, text);
        }
        Ok(ledger)
    }
}

impl Ledger {
    pub fn is_empty(&self) -> bool {
        self.reads == 0 && self.trusted.is_empty() && self.pending.is_empty()
    }

    /// How much untrusted text and how many distinct untrusted tokens are kept.
    pub fn size(&self) -> (usize, usize) {
        self.untrusted.size()
    }

    /// Why the ledger cannot vouch for the agent's arguments, if it cannot.
    fn incomplete(&self) -> Option<String> {
        if self.untrusted.overflowed() {
            let (bytes, count) = self.untrusted.size();
            return Some(format!(
                "more untrusted output was read than value provenance keeps ({} bytes of text and {} values at most; {bytes} bytes and {count} values are kept), so its values cannot all be followed",
                tokens::MAX_TEXT_BYTES,
                tokens::MAX_TOKENS
            ));
        }
        if self.pending_overflowed {
            return Some(format!(
                "more than {MAX_PENDING_READS} untrusted reads were let through without their output being recorded"
            ));
        }
        if let Some(read) = self.pending.first() {
            return Some(format!(
                "the output of {} (id {}) was not recorded (no result record for it), so value provenance cannot tell what it said",
                quoted(&read.tool),
                quoted(&read.id)
            ));
        }
        if self.reads == 0 {
            return Some(
                "no untrusted output is on record for it, so value provenance cannot tell what it read"
                    .to_owned(),
            );
        }
        None
    }

    fn read_called(&mut self, tool: &str, id: &str) {
        // Another stage deciding the same call on a shared state awaits the same output.
        if self.pending.iter().any(|read| read.id == id) {
            return;
        }
        self.reads += 1;
        if self.pending.len() >= MAX_PENDING_READS {
            self.pending_overflowed = true;
            return;
        }
        self.pending.push(PendingRead {
            tool: tool.to_owned(),
            id: id.to_owned(),
        });
    }

    /// Records an instruction; the number of distinct values it added.
    fn task(&mut self, instruction: &str) -> usize {
        // Past the bound, an instruction is not kept: fewer values are trusted, never more.
        let before = self.trusted.size().1;
        self.trusted.add(0, instruction);
        self.trusted.size().1 - before
    }

    /// Records a result's texts; the number of distinct values it added.
    fn result(&mut self, tool: &str, call: Option<&str>, event: &str, output: &Value) -> usize {
        self.reads += 1;
        let waited = match call {
            Some(call) => self.pending.iter().position(|read| read.id == call),
            None => self.pending.iter().position(|read| read.tool == tool),
        };
        if let Some(index) = waited {
            self.pending.remove(index);
        }
        let origin = self.origins.len() as u32;
        self.origins.push(Origin {
            tool: tool.to_owned(),
            event: event.to_owned(),
        });
        let before = self.untrusted.size().1;
        let untrusted = &mut self.untrusted;
        tokens::texts_of_json(output, &mut |text| {
            untrusted.add(origin, text);
        });
        self.untrusted.size().1 - before
    }
}

/// Every agent's ledger, and the crew's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProvenanceState {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, Ledger>,
    #[serde(default, skip_serializing_if = "Ledger::is_empty")]
    pub crew: Ledger,
}

/// Whether a crew state's (boxed) provenance is empty, for its serialization.
#[allow(clippy::borrowed_box)]
pub(crate) fn is_empty_box(state: &Box<ProvenanceState>) -> bool {
    state.is_empty()
}

impl ProvenanceState {
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty() && self.crew.is_empty()
    }

    /// The ledger the policy's taint scope reads for `agent`.
    pub(crate) fn ledger(&self, agent: &str, policy: &Policy) -> Option<&Ledger> {
        match policy.taint_scope() {
            TaintScope::Agent => self.agents.get(agent),
            TaintScope::Crew => Some(&self.crew),
        }
    }

    fn ledger_mut(&mut self, agent: &str, policy: &Policy) -> &mut Ledger {
        match policy.taint_scope() {
            TaintScope::Agent => self.agents.entry(agent.to_owned()).or_default(),
            TaintScope::Crew => &mut self.crew,
        }
    }

    /// An untrusted read was let through (not denied): its output is awaited.
    pub(crate) fn read_called(&mut self, call: &Call, id: &str, policy: &Policy) {
        if policy.provenance().is_some() {
            self.ledger_mut(&call.agent, policy)
                .read_called(&call.tool, id);
        }
    }

    /// The user's instruction: its values are trusted for the agent (or the crew).
    /// The number of distinct values taken; `None` without the policy's `provenance`.
    pub fn task(&mut self, agent: &str, instruction: &str, policy: &Policy) -> Option<usize> {
        policy
            .provenance()
            .map(|_| self.ledger_mut(agent, policy).task(instruction))
    }

    /// A tool's result: with the policy's `provenance`, and for a tool in
    /// `untrustedOutputTools`, its values become untrusted for the agent (or the crew). The
    /// number of distinct values taken; `None` when the result was not taken.
    pub fn result(&mut self, record: &ResultRecord, event: &str, policy: &Policy) -> Option<usize> {
        if policy.provenance().is_none() || !policy.has_untrusted_output(&record.tool) {
            return None;
        }
        Some(self.ledger_mut(&record.agent, policy).result(
            &record.tool,
            record.call.as_deref(),
            event,
            &record.output,
        ))
    }

    /// Forgets one agent's ledger (`sc-state reset --agent`).
    pub(crate) fn reset_agent(&mut self, agent: &str) {
        self.agents.remove(agent);
    }
}

/// A `result` record: what a tool returned to an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRecord {
    pub agent: String,
    pub tool: String,
    pub call: Option<String>,
    pub output: Value,
}

/// A `task` record: the user's instruction to an agent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskRecord {
    pub agent: String,
    pub instruction: String,
}

/// One value an argument carries from untrusted output.
struct Carried {
    argument: String,
    value: String,
    kind: Option<Kind>,
    origin: u32,
}

/// The provenance rule for a tainted agent's call to a sensitive tool, after `toolArgs`: the
/// decision and its reason. `taint` is the reason the call would be held for without
/// provenance, which a hold on other grounds repeats.
pub(crate) fn judge(
    call: &Call,
    policy: &Policy,
    rules: &ProvenanceRules,
    ledger: Option<&Ledger>,
    taint: String,
    endorsed: &Endorsed,
) -> (Decision, String) {
    if rules.action_tools.matches(&call.tool) {
        return (
            Decision::Hold,
            format!(
                "{taint}; {} is an action tool under the policy's `provenance`: its harm is the act itself, which its arguments cannot show",
                quoted(&call.tool)
            ),
        );
    }
    let Some(ledger) = ledger else {
        return (
            Decision::Hold,
            format!("{taint}; no untrusted output is on record for it, so value provenance cannot tell what it read"),
        );
    };
    if let Some(why) = ledger.incomplete() {
        return (Decision::Hold, format!("{taint}; {why}"));
    }
    // Every untrusted value the call carries (up to [`MAX_NAMED`]), the first named in the
    // reason; values a `value` grant endorsed are skipped.
    let mut named: Vec<String> = Vec::new();
    let mut first = None;
    while named.len() < MAX_NAMED {
        let skip = |value: &str| named.iter().any(|n| n == value) || endorsed.skips(value);
        let Some(found) = carried(call, policy, rules, ledger, &skip) else {
            break;
        };
        named.push(found.value.clone());
        first.get_or_insert(found);
    }
    // Past the most a hold names, the reason says more are carried: the person is not shown
    // them, and no yes to the values shown covers them (sc-exec refuses such a yes).
    let more = named.len() == MAX_NAMED && {
        let skip = |value: &str| named.iter().any(|n| n == value) || endorsed.skips(value);
        carried(call, policy, rules, ledger, &skip).is_some()
    };
    // Every value a `value` grant would trust is named, so the person sees them all.
    let also: String = named
        .iter()
        .skip(1)
        .map(|value| quoted_value(value))
        .collect::<Vec<_>>()
        .join(", ");
    endorsed.name(named, more);
    match first {
        Some(carried) => {
            let origin = &ledger.origins[carried.origin as usize];
            let kind = carried
                .kind
                .map(|kind| format!(" (a {})", kind.as_str()))
                .unwrap_or_default();
            (
                Decision::Hold,
                format!(
                    "{} is tainted, and argument `{}` carries {}{kind}, which came from {} (result {}) and is not in the user's instruction, so a person must check it{}{}",
                    quoted(&call.agent),
                    quoted(&carried.argument),
                    quoted_value(&carried.value),
                    quoted(&origin.tool),
                    quoted(&origin.event),
                    if also.is_empty() {
                        String::new()
                    } else {
                        format!("; the call also carries these untrusted values: {also}")
                    },
                    if more {
                        format!(", and more untrusted values than the {MAX_NAMED} named here")
                    } else {
                        String::new()
                    }
                ),
            )
        }
        None => (
            Decision::Allow,
            format!(
                "{} is tainted, but no argument of {} carries a value from untrusted output that is not in the user's instruction (value provenance); within policy",
                quoted(&call.agent),
                quoted(&call.tool)
            ),
        ),
    }
}

fn quoted_value(value: &str) -> String {
    let shown: String = value.chars().take(120).collect();
    let more = if shown.len() < value.len() { "…" } else { "" };
    format!("\"{}{more}\"", crate::sanitize::for_terminal(&shown))
}

/// The first value an argument of the call carries from untrusted output, if any.
fn carried(
    call: &Call,
    policy: &Policy,
    rules: &ProvenanceRules,
    ledger: &Ledger,
    skip: &dyn Fn(&str) -> bool,
) -> Option<Carried> {
    let schemas: Vec<&Value> = policy
        .arg_rules_for(&call.tool)
        .map(|rule| &rule.schema)
        .collect();
    let check = Check {
        rules,
        ledger,
        skip,
    };
    for (key, value) in call.args.map() {
        if key == "amount" {
            continue;
        }
        let inner = property_schemas(&schemas, key);
        if let Some(found) = check.value(key, key, value, &inner) {
            return Some(found);
        }
    }
    None
}

struct Check<'a> {
    rules: &'a ProvenanceRules,
    ledger: &'a Ledger,
    /// Values not to name: named already, or endorsed by a `value` grant.
    skip: &'a dyn Fn(&str) -> bool,
}

fn property_schemas<'s>(schemas: &[&'s Value], key: &str) -> Vec<&'s Value> {
    schemas
        .iter()
        .filter_map(|schema| schema.get("properties")?.get(key))
        .collect()
}

impl Check<'_> {
    /// Checks a value at `path` (named by `key`, the nearest object key) under the schemas that
    /// apply to it.
    fn value(&self, path: &str, key: &str, value: &Value, schemas: &[&Value]) -> Option<Carried> {
        if schemas.iter().any(|schema| bounds_value(schema)) {
            return None;
        }
        match value {
            Value::String(text) => self.text(path, key, text),
            Value::Number(number) => self.text(path, key, &number.to_string()),
            Value::Array(items) => {
                let inner: Vec<&Value> = schemas
                    .iter()
                    .filter_map(|schema| schema.get("items"))
                    .collect();
                items.iter().enumerate().find_map(|(index, item)| {
                    self.value(&format!("{path}.{index}"), key, item, &inner)
                })
            }
            Value::Object(members) => self.object(path, members, schemas),
            Value::Bool(_) | Value::Null => None,
        }
    }

    fn object(
        &self,
        path: &str,
        members: &Map<String, Value>,
        schemas: &[&Value],
    ) -> Option<Carried> {
        for (key, value) in members {
            // A key can carry a typed value too (an address as a map key).
            if let Some(found) = self.tokens(&format!("{path}.{key}"), key, true) {
                return Some(found);
            }
            let inner = property_schemas(schemas, key);
            if let Some(found) = self.value(&format!("{path}.{key}"), key, value, &inner) {
                return Some(found);
            }
        }
        None
    }

    fn text(&self, path: &str, key: &str, text: &str) -> Option<Carried> {
        if tokens::is_date_time(text) {
            return None;
        }
        let free = self.rules.free_text_args.iter().any(|name| name == key);
        if let Some(found) = self.tokens(path, text, free) {
            return Some(found);
        }
        if free || text.chars().count() > MAX_WHOLE_VALUE_CHARS {
            return None;
        }
        let origin = self.ledger.untrusted.phrase_source(text)?;
        if self.ledger.trusted.phrase_source(text).is_some() || (self.skip)(text) {
            return None;
        }
        Some(Carried {
            argument: path.to_owned(),
            value: text.to_owned(),
            kind: None,
            origin,
        })
    }

    /// The first typed token of `text` that is untrusted and not trusted; capitalised phrases
    /// only when `free` is false.
    fn tokens(&self, path: &str, text: &str, free: bool) -> Option<Carried> {
        let mut found = None;
        tokens::extract(text, &mut |kind, token| {
            if found.is_some() || (free && kind == Kind::Phrase) {
                return;
            }
            if let Some(origin) = self.ledger.untrusted.source_of(kind, token) {
                if !self.ledger.trusted.contains(kind, token) && !(self.skip)(token) {
                    found = Some(Carried {
                        argument: path.to_owned(),
                        value: token.to_owned(),
                        kind: Some(kind),
                        origin,
                    });
                }
            }
        });
        found
    }
}

/// Whether a property schema bounds its value already: an `enum`, a `const`, an anchored
/// `pattern` that is not a date's, or an `anyOf`/`oneOf`/`items` built only from those (and
/// `{"type": "null"}`).
pub(crate) fn bounds_value(schema: &Value) -> bool {
    let Some(object) = schema.as_object() else {
        return false;
    };
    if object.contains_key("enum") || object.contains_key("const") {
        return true;
    }
    if let Some(Value::String(pattern)) = object.get("pattern") {
        let anchored =
            pattern.starts_with('^') && pattern.ends_with('$') && !pattern.ends_with("\\$");
        let date = ["\\d{4}-", "[0-9]{4}-", "\\d\\d\\d\\d-"]
            .iter()
            .any(|shape| pattern.contains(shape));
        if anchored && !date {
            return true;
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = object.get(key) {
            let only_bounded = !options.is_empty()
                && options.iter().all(|option| {
                    bounds_value(option)
                        || option.as_object().is_some_and(|o| {
                            o.len() == 1 && o.get("type") == Some(&Value::String("null".into()))
                        })
                });
            if only_bounded {
                return true;
            }
        }
    }
    object.get("items").is_some_and(bounds_value)
}

/// Reads a `task` or `result` record (a JSON object with `kind`), or says why it is malformed.
#[derive(Debug)]
pub(crate) enum ValueRecord {
    Task(TaskRecord),
    Result(ResultRecord),
}

/// Why a `task` or `result` record is malformed; each names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("`{field}` must be a non-empty string, not {found}")]
    NotAName {
        field: &'static str,
        found: &'static str,
    },
    #[error("the record has no `{0}`")]
    NoName(&'static str),
    #[error("a task record's `source` must be \"user\" (only the user's instruction is trusted), not {}", for_terminal(&.0.to_string()))]
    NotTheUser(Value),
    #[error("a task record's `source` is missing; only \"user\" is trusted")]
    NoSource,
    #[error("`instruction` must be a string, not {0}")]
    NotAnInstruction(&'static str),
    #[error("the task record has no `instruction`")]
    NoInstruction,
    #[error("`call` must be the id of a verdict (a non-empty string), not {0}")]
    NotACallId(&'static str),
    #[error("the result record has no `output`")]
    NoOutput,
    #[error("unknown record `kind` {}: expected \"task\" or \"result\" (a call has no `kind`)", for_terminal(&.0.to_string()))]
    UnknownKind(Value),
}

impl ValueRecord {
    /// The record in `object`, whose `kind` is `kind`; the reasons it is malformed otherwise.
    pub(crate) fn from_object(
        kind: &Value,
        object: &Map<String, Value>,
    ) -> Result<ValueRecord, RecordError> {
        let name = |field: &'static str| match object.get(field) {
            Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
            Some(other) => Err(RecordError::NotAName {
                field,
                found: type_name(other),
            }),
            None => Err(RecordError::NoName(field)),
        };
        match kind.as_str() {
            Some("task") => {
                let agent = name("agent")?;
                match object.get("source") {
                    Some(Value::String(source)) if source == "user" => {}
                    Some(other) => return Err(RecordError::NotTheUser(other.clone())),
                    None => return Err(RecordError::NoSource),
                }
                let instruction = match object.get("instruction") {
                    Some(Value::String(text)) => text.clone(),
                    Some(other) => return Err(RecordError::NotAnInstruction(type_name(other))),
                    None => return Err(RecordError::NoInstruction),
                };
                Ok(ValueRecord::Task(TaskRecord { agent, instruction }))
            }
            Some("result") => {
                let agent = name("agent")?;
                let tool = name("tool")?;
                let call = match object.get("call") {
                    None => None,
                    Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
                    Some(other) => return Err(RecordError::NotACallId(type_name(other))),
                };
                let output = object.get("output").cloned().ok_or(RecordError::NoOutput)?;
                Ok(ValueRecord::Result(ResultRecord {
                    agent,
                    tool,
                    call,
                    output,
                }))
            }
            _ => Err(RecordError::UnknownKind(kind.clone())),
        }
    }
}

impl ValueRecord {
    /// The record's kind, as its audit event names it.
    pub fn kind(&self) -> &'static str {
        match self {
            ValueRecord::Task(_) => "task",
            ValueRecord::Result(_) => "result",
        }
    }

    pub fn agent(&self) -> &str {
        match self {
            ValueRecord::Task(task) => &task.agent,
            ValueRecord::Result(result) => &result.agent,
        }
    }

    /// The text the record carries (the instruction; the output, a string as itself and any
    /// other value as its compact JSON), for its SHA-256 and length.
    pub(crate) fn carried_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            ValueRecord::Task(task) => task.instruction.as_str().into(),
            ValueRecord::Result(ResultRecord {
                output: Value::String(text),
                ..
            }) => text.as_str().into(),
            ValueRecord::Result(result) => result.output.to_string().into(),
        }
    }

    /// The members of the record's audit event after `id`: `kind`, `agent`, `tool` and `call`
    /// (of a result), the SHA-256 and length of the text it carries, and how many values were
    /// taken (`null`: none were, and why is `taken: false`).
    pub(crate) fn event_members(&self, values: Option<usize>) -> Vec<u8> {
        use sha2::{Digest, Sha256};
        let text = self.carried_text();
        let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        let hex: String = crate::hex::encode(digest);
        let mut line = crate::json_write::JsonLine::new()
            .str_field("kind", self.kind())
            .str_field("agent", self.agent());
        if let ValueRecord::Result(result) = self {
            line = line.str_field("tool", &result.tool);
            if let Some(call) = &result.call {
                line = line.str_field("call", call);
            }
        }
        let mut line = line
            .str_field("sha256", &hex)
            .field("length", &text.len())
            .field("taken", &values.is_some())
            .field("values", &values.unwrap_or(0))
            .finish();
        line.truncate(line.len() - b"}\n".len());
        line.remove(0);
        line
    }
}

/// Whether a line may be a record with a top-level `kind` (cheap: a call has none, and an
/// escaped key needs a backslash-u).
pub(crate) fn may_have_kind(line: &[u8]) -> bool {
    // Built once: a search made anew for every line costs about as much as the search itself.
    static KIND: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"kind\""));
    static ESCAPE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
    KIND.find(line).is_some() || ESCAPE.find(line).is_some()
}

/// The top-level `kind` of a line that is a strict JSON object, with the object; `None` when it
/// has none (or is no such object: the call parser says what is wrong with it).
pub(crate) fn kind_of(line: &[u8]) -> Option<(Value, Map<String, Value>)> {
    if !may_have_kind(line) {
        return None;
    }
    let text = std::str::from_utf8(line).ok()?;
    let Ok(Value::Object(object)) = crate::strict_json::parse(text.trim()) else {
        return None;
    };
    let kind = object.get("kind")?.clone();
    Some((kind, object))
}

#[cfg(test)]
#[path = "provenance_tests.rs"]
mod tests;
