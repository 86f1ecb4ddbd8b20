//! The call record: what an agent asks a tool to do, and who ordered it.
//!
//! One JSON object per line (see CONTRACT.md, "Records"):
//! `{"agent":"buyer","tool":"send_payment","args":{"to":"acme-travel","amount":750},"source":"user","instruction":"Pay for the trip"}`
//!
//! `agent` and `tool` are required non-empty strings, `args` an optional object, `instruction` an
//! optional string. `source` is read as provenance: anything but `user`, `agent` or
//! `untrusted-content` (missing, misspelt, not a string) counts as `untrusted-content`, and the
//! reasons say so. Other keys are kept in the record and ignored by the rules. A call that breaks
//! these rules is [`Malformed`], which the decision turns into a deny.

use std::fmt;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::strict_json;

mod scan;

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
    text: Box<str>,
    amount: Option<Value>,
    map: OnceLock<Map<String, Value>>,
    /// Whether two keys could fold alike ([`argrules::fold_key`](crate::argrules::fold_key)):
    /// `false` only when no key at any depth has an upper-case or non-ASCII letter or an escape,
    /// as the call scanner saw while it checked them.
    keys_may_fold: bool,
}

impl Args {
    /// Args from JSON text that has been checked strictly (by the call scanner); `amount` is
    /// that of `args.amount`.
    /// `keys_may_fold` is whether any key, at any depth, has an upper-case or non-ASCII letter
    /// or an escape.
    fn from_checked_text(text: &str, amount: Option<Value>, keys_may_fold: bool) -> Args {
        Args {
            text: text.into(),
            amount,
            map: OnceLock::new(),
            keys_may_fold,
        }
    }

    /// Args from an object that is already built.
    pub fn from_map(map: Map<String, Value>) -> Args {
        let text: Box<str> = Value::Object(map.clone()).to_string().into();
        Args {
            keys_may_fold: crate::argrules::keys_may_fold_alike(&text),
            text,
            amount: map.get("amount").cloned(),
            map: OnceLock::from(map),
        }
    }

    /// Whether two keys could fold alike, so that the rules on keys spelt alike must look at the
    /// whole object; when `false`, every key is its own fold.
    pub fn keys_may_fold(&self) -> bool {
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
        self.map
            .get_or_init(|| match strict_json::parse(&self.text) {
                Ok(Value::Object(map)) => map,
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

    fn from_str(s: &str) -> Option<Source> {
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
    /// Reads a call from one line's bytes (without its line ending).
    ///
    /// On success also returns the call's JSON text, trimmed of surrounding white space, so the
    /// verdict can carry the call exactly as it came.
    pub fn parse_line(line: &[u8]) -> Result<(Call, &str), Malformed> {
        let text = std::str::from_utf8(line).map_err(|err| {
            Malformed::new(format!(
                "the line is not valid UTF-8 (bad byte at offset {})",
                err.valid_up_to()
            ))
        })?;
        Call::parse_text(text)
    }

    /// A plain, well-formed call read by the one-pass scanner alone, or `None` for anything else
    /// (not a call, a line with a top-level `kind`, or one the scanner leaves to the reference
    /// path): the cheap first look, before a line is searched for a record's `kind`.
    pub fn scan_line(line: &[u8]) -> Option<(Call, &str)> {
        let text = std::str::from_utf8(line).ok()?;
        let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        scan::call(text).map(|call| (call, text))
    }

    /// [`Call::parse_line`] for text that is UTF-8 already (a record's `call` member).
    pub fn parse_text(text: &str) -> Result<(Call, &str), Malformed> {
        let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        // The scanner reads calls no deeper than MAX_CALL_DEPTH.
        if let Some(call) = scan::call(text) {
            return Ok((call, text));
        }
        // Not a well-formed call (or one the scanner leaves alone): the reference path says
        // exactly what is wrong.
        let value = strict_json::parse(text)
            .map_err(|err| Malformed::new(format!("the line is not valid JSON: {err}")))?;
        let mut call = Call::from_value(&value)?;
        call.take_amount_text_from(text, &["args", "amount"]);
        if let Some(depth) = deeper_than(text, MAX_CALL_DEPTH) {
            return Err(Malformed::new(format!(
                "the call nests {depth} levels deep; at most {MAX_CALL_DEPTH} are allowed"
            )));
        }
        Ok((call, text))
    }

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
                        keys_may_fold: crate::argrules::keys_may_fold_alike(text),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Call, Malformed> {
        Call::parse_line(line.as_bytes()).map(|(call, _)| call)
    }

    #[test]
    fn reads_a_full_call() {
        let call = parse(r#"{"agent":"buyer","tool":"send_payment","args":{"amount":750},"source":"user","instruction":"Pay","extra":1}"#).unwrap();
        assert_eq!(call.agent, "buyer");
        assert_eq!(call.tool, "send_payment");
        assert_eq!(call.args.amount().unwrap(), 750);
        assert_eq!(call.provenance, Provenance::Stated(Source::User));
        assert_eq!(call.instruction.as_deref(), Some("Pay"));
    }

    #[test]
    fn args_default_to_empty_and_source_to_missing() {
        let call = parse(r#"{"agent":"a","tool":"t"}"#).unwrap();
        assert!(call.args.is_empty());
        assert_eq!(call.provenance, Provenance::Missing);
        assert_eq!(call.provenance.source(), Source::UntrustedContent);
    }

    #[test]
    fn unknown_sources_count_as_untrusted() {
        for source in [
            r#""User""#,
            r#""admin""#,
            "7",
            "null",
            "[\"user\"]",
            r#""user ""#,
        ] {
            let call = parse(&format!(r#"{{"agent":"a","tool":"t","source":{source}}}"#)).unwrap();
            assert!(
                matches!(call.provenance, Provenance::Unrecognised(_)),
                "{source}"
            );
            assert!(!call.provenance.is_trusted());
        }
    }

    #[test]
    fn malformed_calls_say_what_is_wrong() {
        let cases = [
            ("not json", "not valid JSON"),
            ("[1]", "an array, not a JSON object"),
            ("null", "null, not a JSON object"),
            (r#"{"tool":"t"}"#, "no `agent`"),
            (r#"{"agent":"","tool":"t"}"#, "`agent` is empty"),
            (
                r#"{"agent":"a","tool":["t"]}"#,
                "`tool` must be a non-empty string, not an array",
            ),
            (
                r#"{"agent":"a","tool":"t","args":"{}"}"#,
                "`args` must be an object, not a string",
            ),
            (
                r#"{"agent":"a","tool":"t","instruction":{}}"#,
                "`instruction` must be a string",
            ),
            (
                r#"{"agent":"a","tool":"t","tool":"u"}"#,
                "duplicate key `tool`",
            ),
            (
                r#"{"agent":"a","tool":"t","cwd":7}"#,
                "`cwd` must be a string (the working directory), not a number",
            ),
            (
                r#"{"agent":"a","tool":"t","cwd":null}"#,
                "`cwd` must be a string",
            ),
            (
                r#"{"agent":"a","tool":"t","cwd":"/w\u0000x"}"#,
                "`cwd` contains a NUL character",
            ),
        ];
        for (line, expected) in cases {
            let err = parse(line).unwrap_err();
            assert!(err.to_string().contains(expected), "{line}: {err}");
        }
    }

    #[test]
    fn invalid_utf8_is_malformed() {
        let err = Call::parse_line(b"{\"agent\":\"\xff\"}").unwrap_err();
        assert!(err.to_string().contains("not valid UTF-8"), "{err}");
    }

    /// The reference path: the whole document, then the fields.
    fn reference(line: &str) -> Result<Call, Malformed> {
        let text = line.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        let value = strict_json::parse(text)
            .map_err(|err| Malformed::new(format!("the line is not valid JSON: {err}")))?;
        let mut call = Call::from_value(&value)?;
        call.take_amount_text_from(text, &["args", "amount"]);
        Ok(call)
    }

    #[test]
    fn the_fast_path_reads_every_line_as_the_reference_path_does() {
        let lines = [
            r#"{"agent":"buyer","tool":"send_payment","args":{"to":"acme","amount":750},"source":"user","instruction":"Pay"}"#,
            r#"{"agent":"b","tool":"t","args":{"amount":100.0000000000000001}}"#,
            r#"{"agent":"b","tool":"t","args":{"amount":1e2,"n":[1,{"x":null}]}}"#,
            r#"{"agent":"b","tool":"t","args":{"amount":-0}}"#,
            r#"{"agent":"b","tool":"t","args":{"amount":123456789012345678901234567890}}"#,
            r#"{"agent":"b","tool":"t","args":{"amount":"$750"}}"#,
            r#"{"agent":"b","tool":"t","args":{"amount":{"a":1,"a":2}}}"#,
            r#"{"agent":"b","tool":"t","args":{"amount":[1,2]}}"#,
            r#"{"agent":"b","tool":"t","args":{"\u0061mount":5.50}}"#,
            r#"{"agent":"b","tool":"t","args":{"amount":1,"amount":2}}"#,
            r#"{"agent":"b","tool":"t","args":{"to":"x","to":"y"}}"#,
            r#"{"agent":"b","tool":"t","extra":{"k":1,"k":2}}"#,
            r#"{"agent":"b","tool":"t","extra":{"k":1},"more":[{"k":[]}]}"#,
            r#"{"agent":"b","tool":"t","\u0074ool":"u"}"#,
            r#"{"\u0061gent":"b\n\"","tool":"t\u00e9","source":"\u0075ser"}"#,
            r#"{"agent":"b","tool":"t","source":"User"}"#,
            r#"{"agent":"b","tool":"t","source":"us\"er"}"#,
            r#"{"agent":"b","tool":"t","source":7}"#,
            r#"{"agent":"b","tool":"t","source":null}"#,
            r#"{"agent":"b","tool":"t","instruction":null}"#,
            r#"{"agent":"b","tool":"t","cwd":"/w/proj"}"#,
            r#"{"agent":"b","tool":"t","cwd":"/w/\u00e9"}"#,
            r#"{"agent":"b","tool":"t","cwd":"/w\u0000"}"#,
            r#"{"agent":"b","tool":"t","cwd":["/w"]}"#,
            r#"{"agent":"b","tool":"t","args":[]}"#,
            r#"{"agent":"","tool":"t"}"#,
            r#"{"agent":"b","tool":7}"#,
            r#"{"tool":"t"}"#,
            r#"{"agent":"b","tool":"t","n":1e999}"#,
            r#"{"agent":"b","tool":"t"} {}"#,
            r#"{"agent":"b","tool":"t","#,
            r#"[{"agent":"b","tool":"t"}]"#,
            r#""text""#,
            "",
            " \t{\"agent\":\"b\",\"tool\":\"t\"}\r",
        ];
        for line in lines {
            let fast = Call::parse_line(line.as_bytes()).map(|(call, _)| call);
            assert_eq!(fast, reference(line), "{line}");
        }
        let mut deep = String::from(r#"{"agent":"b","tool":"t","args":{"x":"#);
        deep += &"[".repeat(300);
        deep += &"]".repeat(300);
        deep += "}}";
        let fast = Call::parse_line(deep.as_bytes()).map(|(call, _)| call);
        assert_eq!(fast, reference(&deep));
        assert!(fast.unwrap_err().to_string().contains("recursion limit"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

        /// Calls cut, spliced and salted with the bytes JSON cares about: whatever the scanner
        /// accepts, the reference path accepts with the same result.
        #[test]
        fn the_scanner_agrees_with_the_reference_path_on_mangled_calls(
            base in proptest::sample::select(vec![
                r#"{"agent":"buyer","tool":"send_payment","args":{"to":"acme","amount":750,"memo":"a\"b"},"source":"user","instruction":"Pay"}"#,
                r#"{ "agent" : "b" , "tool" : "t" , "args" : { "amount" : "$1.50" , "n" : [ 1 , -2.5 , { "k" : null } ] } , "trace" : { "s" : true } }"#,
                r#"{"agent":"scout","tool":"fetch_page","args":{"url":"https://x.test/\u00e9"},"source":"untrusted-content"}"#,
            ]),
            edits in proptest::collection::vec(
                (0usize..200, 0usize..3, proptest::sample::select(vec![
                    "\"", "\\", "\\u", "\\ud800", "\\u0061", "e5", "E", "0", "01", "-", ".", "{",
                    "}", "[", "]", ",", ":", " ", "\t", "\n", "\u{1}", "é", "true", "nul", "1e999",
                    "\"amount\":", "\"agent\":\"x\",", "\"tool\":7,", "\"args\":{},",
                ])),
                0..4,
            ),
        ) {
            let mut text = base.to_owned();
            for (at, cut, insert) in edits {
                let mut at = at.min(text.len());
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                let mut end = (at + cut).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(at..end, insert);
            }
            if let Some(call) = scan::call(&text) {
                proptest::prop_assert_eq!(Ok(call), reference(&text), "{}", text);
            }
        }
    }

    #[test]
    fn calls_nested_too_deep_for_their_records_are_malformed() {
        let nested = |levels: usize| {
            format!(
                r#"{{"agent":"a","tool":"t","args":{{"x":{}1{}}}}}"#,
                "[".repeat(levels),
                "]".repeat(levels)
            )
        };
        assert!(parse(&nested(MAX_CALL_DEPTH - 2)).is_ok());
        let err = parse(&nested(MAX_CALL_DEPTH)).unwrap_err();
        assert!(err.to_string().contains("levels deep; at most 64"), "{err}");
        let quoted_brackets = format!(
            r#"{{"agent":"a","tool":"t","args":{{"x":"{}"}}}}"#,
            "[".repeat(500)
        );
        assert!(parse(&quoted_brackets).is_ok());
    }

    #[test]
    fn returns_the_trimmed_text() {
        let (_, text) = Call::parse_line(b" {\"agent\":\"a\",\"tool\":\"t\"}\r").unwrap();
        assert_eq!(text, r#"{"agent":"a","tool":"t"}"#);
    }
}
