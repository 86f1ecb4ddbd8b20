//! The call record: what an agent asked for, and what makes a line a malformed call.

use std::fmt;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::strict_json;

/// How deep a call may nest. Its verdict and audit event wrap it two levels deeper, and every
/// stage's parser stops at 128, so a deeper call could be decided but not read back downstream.
pub const MAX_CALL_DEPTH: usize = 64;

/// The deepest nesting of arrays and objects in JSON text (brackets inside strings don't count),
/// when it is deeper than `max`. Cheap when the text holds few brackets, as every ordinary call.
pub fn deeper_than(text: &str, max: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.iter().filter(|&&b| b == b'[' || b == b'{').count() <= max {
        return None;
    }
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    (deepest > max).then_some(deepest)
}

/// A well-formed call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub agent: String,
    pub tool: String,
    pub args: Args,
    pub provenance: Provenance,
    pub instruction: Option<String>,
    /// `args.amount` exactly as written, when it is a JSON number and the text was at hand
    /// (a float has lost digits that an exact comparison with the limit needs).
    pub amount_text: Option<String>,
    /// The working directory the call runs in (`"cwd"`), for the `paths` rules.
    pub cwd: Option<String>,
}

/// A call's `args`: its JSON text, with `amount` read out; the whole object is built only when
/// something needs all of it (an argument schema, a tool, the approver's prompt), since most calls
/// are decided on the amount alone.
#[derive(Debug, Clone)]
pub struct Args {
    /// The object's JSON text, checked as strictly as [`strict_json::parse`] checks it.
    text: String,
    amount: Option<Value>,
    /// The object, built from `text` on first use (always a [`Value::Object`]).
    map: OnceLock<Value>,
    /// Whether two keys could fold alike ([`argrules::fold_key`](crate::rules::argrules::fold_key)):
    /// `false` only when no key at any depth has an upper-case or non-ASCII letter or an escape,
    /// as the call scanner saw while it checked them.
    keys_may_fold: bool,
}

impl Args {
    /// Args from JSON text that has been checked strictly (by the call scanner); `amount` is
    /// that of `args.amount`.
    /// `keys_may_fold` is whether any key, at any depth, has an upper-case or non-ASCII letter
    /// or an escape.
    pub(super) fn from_checked_text(
        text: &str,
        amount: Option<Value>,
        keys_may_fold: bool,
    ) -> Args {
        Args {
            text: text.into(),
            amount,
            map: OnceLock::new(),
            keys_may_fold,
        }
    }

    /// [`Args::from_checked_text`] into these args, keeping the text's buffer (sc-gate reads one
    /// call after another into the same [`Call`]).
    pub(super) fn refill_checked_text(
        &mut self,
        text: &str,
        amount: Option<Value>,
        keys_may_fold: bool,
    ) {
        self.text.clear();
        self.text.push_str(text);
        self.amount = amount;
        self.map = OnceLock::new();
        self.keys_may_fold = keys_may_fold;
    }

    /// Args from an object that is already built.
    pub(crate) fn from_map(map: Map<String, Value>) -> Args {
        let text = Value::Object(map.clone()).to_string();
        Args {
            keys_may_fold: super::keys::keys_may_fold_alike(&text),
            text,
            amount: map.get("amount").cloned(),
            map: OnceLock::from(Value::Object(map)),
        }
    }

    /// Whether two keys could fold alike, so that the rules on keys spelt alike must look at the
    /// whole object; when `false`, every key is its own fold.
    pub(crate) fn keys_may_fold(&self) -> bool {
        self.keys_may_fold
    }

    /// `args.amount`, if there is one.
    pub fn amount(&self) -> Option<&Value> {
        self.amount.as_ref()
    }

    /// One argument.
    pub fn get(&self, key: &str) -> Option<&Value> {
        if key == "amount" {
            return self.amount();
        }
        self.map().get(key)
    }

    /// The whole object, built on first use.
    pub fn map(&self) -> &Map<String, Value> {
        match self.value() {
            Value::Object(map) => map,
            _ => unreachable!("args are built only as an object"),
        }
    }

    /// The whole object as a JSON value (always an object), built on first use: what a schema
    /// validates, with no copy.
    pub fn value(&self) -> &Value {
        self.map
            .get_or_init(|| match strict_json::parse(&self.text) {
                Ok(object @ Value::Object(_)) => object,
                // The text was checked before it was kept; were it not an object after all, no
                // argument would be worth trusting, and stopping is the safe answer.
                other => panic!("call args that were checked no longer parse: {other:?}"),
            })
    }

    /// The object's JSON text as it came.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.map().is_empty()
    }
}

impl Default for Args {
    fn default() -> Args {
        Args::from_map(Map::new())
    }
}

impl PartialEq for Args {
    fn eq(&self, other: &Args) -> bool {
        self.amount == other.amount && self.map() == other.map()
    }
}

/// Who ordered the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    User,
    Agent,
    UntrustedContent,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Agent => "agent",
            Source::UntrustedContent => "untrusted-content",
        }
    }

    pub(super) fn from_str(s: &str) -> Option<Source> {
        match s {
            "user" => Some(Source::User),
            "agent" => Some(Source::Agent),
            "untrusted-content" => Some(Source::UntrustedContent),
            _ => None,
        }
    }
}

/// The `source` field as it was found, so that reasons can say why a call counts as untrusted.
#[derive(Debug, Clone, PartialEq)]
pub enum Provenance {
    /// One of the three known sources.
    Stated(Source),
    /// No `source` key.
    Missing,
    /// A `source` that is not one of the three; holds the JSON text as written.
    Unrecognised(String),
}

impl Provenance {
    /// The source the rules act on: unknown or missing provenance is untrusted content.
    pub fn source(&self) -> Source {
        match self {
            Provenance::Stated(source) => *source,
            Provenance::Missing | Provenance::Unrecognised(_) => Source::UntrustedContent,
        }
    }

    pub fn is_trusted(&self) -> bool {
        self.source() != Source::UntrustedContent
    }
}

impl fmt::Display for Provenance {
    /// How reasons name the provenance: `user`, or `missing (treated as untrusted-content)`.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Provenance::Stated(source) => f.write_str(source.as_str()),
            Provenance::Missing => f.write_str("missing (treated as untrusted-content)"),
            Provenance::Unrecognised(text) => {
                write!(
                    f,
                    "{text}, which is not a known source (treated as untrusted-content)"
                )
            }
        }
    }
}

/// Why a line is not a call. Each reason is a sentence for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub reasons: Vec<String>,
}

impl Malformed {
    pub fn new(reason: impl Into<String>) -> Malformed {
        Malformed {
            reasons: vec![reason.into()],
        }
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.reasons.join("; "))
    }
}

impl Call {
    /// Records the exact text of a numeric `args.amount`, and of `args` itself, from the JSON
    /// document the call came in (`path` leads to the amount in that document; its parent is the
    /// args). The document must have passed the strict parser. Numbers keep their digits as
    /// written, which a parsed float has lost (argument schemas need them).
    pub fn take_amount_text_from(&mut self, json: &str, path: &[&str]) {
        if let Some((_, args_path)) = path.split_last() {
            if let Some(text) = crate::amount::raw_text_at(json, args_path) {
                if text.starts_with('{') {
                    // The object already built (from the same document) is kept.
                    let built = std::mem::take(&mut self.args);
                    self.args = Args {
                        keys_may_fold: super::keys::keys_may_fold_alike(text),
                        text: text.into(),
                        amount: built.amount,
                        map: built.map,
                    };
                }
            }
        }
        match self.args.get("amount") {
            // A JSON integer that serde_json keeps as one is written exactly as it prints (no
            // leading zeros, no plus sign; `-0` and huge integers are floats), so the document
            // need not be read again for its text.
            Some(Value::Number(n)) if n.is_u64() || n.is_i64() => {
                self.amount_text = Some(n.to_string());
            }
            Some(Value::Number(_)) => {
                self.amount_text = crate::amount::number_text_at(json, path);
            }
            _ => {}
        }
    }

    /// Reads a call from a parsed JSON value (the gate's input, or a verdict's `call`).
    pub fn from_value(value: &Value) -> Result<Call, Malformed> {
        let Value::Object(object) = value else {
            return Err(Malformed::new(format!(
                "the call is {}, not a JSON object",
                strict_json::type_name(value)
            )));
        };
        let mut problems = Vec::new();
        let agent = required_name(object, "agent", &mut problems);
        let tool = required_name(object, "tool", &mut problems);
        let args = match object.get("args") {
            None => Map::new(),
            Some(Value::Object(args)) => args.clone(),
            Some(other) => {
                problems.push(format!(
                    "`args` must be an object, not {}",
                    strict_json::type_name(other)
                ));
                Map::new()
            }
        };
        let instruction = match object.get("instruction") {
            None => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => {
                problems.push(format!(
                    "`instruction` must be a string, not {}",
                    strict_json::type_name(other)
                ));
                None
            }
        };
        let cwd = match object.get("cwd") {
            None => None,
            Some(Value::String(cwd)) if cwd.contains('\0') => {
                problems.push("`cwd` contains a NUL character, which no path holds".to_owned());
                None
            }
            Some(Value::String(cwd)) => Some(cwd.clone()),
            Some(other) => {
                problems.push(format!(
                    "`cwd` must be a string (the working directory), not {}",
                    strict_json::type_name(other)
                ));
                None
            }
        };
        let provenance = match object.get("source") {
            None => Provenance::Missing,
            Some(Value::String(s)) => match Source::from_str(s) {
                Some(source) => Provenance::Stated(source),
                None => Provenance::Unrecognised(Value::String(s.clone()).to_string()),
            },
            Some(other) => Provenance::Unrecognised(bounded(other.to_string())),
        };
        match (agent, tool) {
            (Some(agent), Some(tool)) if problems.is_empty() => Ok(Call {
                agent,
                tool,
                args: Args::from_map(args),
                provenance,
                instruction,
                amount_text: None,
                cwd,
            }),
            _ => Err(Malformed { reasons: problems }),
        }
    }
}

fn required_name(
    object: &Map<String, Value>,
    key: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    match object.get(key) {
        Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
        Some(Value::String(_)) => {
            problems.push(format!("`{key}` is empty; it must be a non-empty string"));
            None
        }
        Some(other) => {
            problems.push(format!(
                "`{key}` must be a non-empty string, not {}",
                strict_json::type_name(other)
            ));
            None
        }
        None => {
            problems.push(format!("the call has no `{key}`"));
            None
        }
    }
}

/// Keeps agent-written text in reasons short.
fn bounded(mut text: String) -> String {
    const MAX: usize = 80;
    if text.len() > MAX {
        let mut cut = MAX;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}
