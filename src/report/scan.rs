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
//! [`chain_fields`] is the same pass for `sc-report --verify`, which reads only `prev` and `seq`.
//!
//! [`strict_json::parse`]: crate::strict_json::parse

use std::borrow::Cow;
use std::collections::HashSet;

use super::{EventView, Reasons, StateView};
use crate::json_lex::plain_run;
use crate::record::Status;

/// Deeper than this, a line is left to the strict reader (whose own limit is 128).
pub const MAX_DEPTH: usize = 64;

/// The top-level keys of the events the stages write, each tracked by one bit so that a repeat is
/// seen without comparing strings; any other key goes to a [`Keys`]. A key of this list can never
/// equal one of the others, so the two together refuse every duplicate.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Known {
    Id,
    Stage,
    Ts,
    Decision,
    Kind,
    Agent,
    Tool,
    Reasons,
    Call,
    AgentState,
    Approval,
    Outcome,
    Seq,
    Prev,
}

impl Known {
    fn of(key: &str) -> Option<Known> {
        Some(match key {
            "id" => Known::Id,
            "stage" => Known::Stage,
            "ts" => Known::Ts,
            "decision" => Known::Decision,
            "kind" => Known::Kind,
            "agent" => Known::Agent,
            "tool" => Known::Tool,
            "reasons" => Known::Reasons,
            "call" => Known::Call,
            "agentState" => Known::AgentState,
            "approval" => Known::Approval,
            "outcome" => Known::Outcome,
            "seq" => Known::Seq,
            "prev" => Known::Prev,
            _ => return None,
        })
    }
}

/// The keys of one object seen so far, for refusing a repeat: a few compared in place (length and
/// first byte before the rest), more in a hash set.
struct Keys<'a> {
    seen: [&'a str; Keys::INLINE],
    len: usize,
    more: Option<HashSet<&'a str>>,
}

impl<'a> Keys<'a> {
    const INLINE: usize = 8;

    fn new() -> Self {
        Keys {
            seen: [""; Keys::INLINE],
            len: 0,
            more: None,
        }
    }

    /// Adds a key; `false` when it was already there.
    fn insert(&mut self, key: &'a str) -> bool {
        if let Some(more) = &mut self.more {
            return more.insert(key);
        }
        let first = key.as_bytes().first();
        for seen in &self.seen[..self.len] {
            if seen.len() == key.len() && seen.as_bytes().first() == first && *seen == key {
                return false;
            }
        }
        if self.len < Keys::INLINE {
            self.seen[self.len] = key;
            self.len += 1;
        } else {
            let mut more: HashSet<&str> = self.seen.iter().copied().collect();
            more.insert(key);
            self.more = Some(more);
        }
        true
    }
}

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
    let mut scanner = Scanner::new(text);
    scanner.top_level(|scanner, key| {
        match key {
            Some(Known::Id) => view.id = scanner.text_value()?,
            Some(Known::Stage) => view.stage = scanner.text_value()?,
            Some(Known::Ts) => view.ts = scanner.text_value()?,
            Some(Known::Decision) => view.decision = scanner.text_value()?,
            Some(Known::Kind) => view.kind = scanner.text_value()?,
            Some(Known::Agent) => view.agent = scanner.text_value()?,
            Some(Known::Tool) => view.tool = scanner.text_value()?,
            Some(Known::Reasons) => {
                let start = scanner.at;
                let is_array = scanner.peek() == Some(b'[');
                scanner.value()?;
                view.reasons = if is_array {
                    Reasons::Text(&text[start..scanner.at])
                } else {
                    Reasons::List(Vec::new())
                };
            }
            Some(Known::Call) => {
                let (agent, tool, args) = scanner.call_names()?;
                view.call = Some((agent, tool));
                view.args = args.map(Cow::Borrowed);
            }
            Some(Known::AgentState) => {
                let start = scanner.at;
                scanner.value()?;
                view.agent_state = Some(StateView::Text(&text[start..scanner.at]));
            }
            Some(Known::Approval) => {
                let start = scanner.at;
                scanner.value()?;
                view.approval = serde_json::from_str(&text[start..scanner.at]).ok();
            }
            Some(Known::Outcome) => view.status = scanner.outcome_status()?,
            _ => scanner.value()?,
        }
        Some(())
    })
}

/// What `sc-report --verify` reads of a line.
#[derive(Debug, PartialEq, Eq)]
pub struct ChainFields<'a> {
    /// `prev` when it is a string.
    pub prev: Option<&'a str>,
    /// `seq` when it is a whole number that fits in 64 bits.
    pub seq: Option<u64>,
}

/// Checks that a line (valid UTF-8) is one JSON object, as strictly as the event scanner does,
/// and reads its `prev` and `seq`; `None` when a full parser must decide. What it accepts, any
/// JSON parser accepts, with the same `prev` and `seq` (no key is repeated).
pub fn chain_fields(text: &str) -> Option<ChainFields<'_>> {
    let mut fields = ChainFields {
        prev: None,
        seq: None,
    };
    let mut scanner = Scanner::new(text);
    scanner.top_level(|scanner, key| {
        match key {
            Some(Known::Prev) if scanner.peek() == Some(b'"') => {
                let token = scanner.string()?;
                if token.escaped {
                    return None;
                }
                fields.prev = Some(token.inner);
            }
            Some(Known::Seq) if matches!(scanner.peek(), Some(b'-' | b'0'..=b'9')) => {
                let start = scanner.at;
                scanner.number()?;
                let digits = &text[start..scanner.at];
                // A sign or a fraction is left to the full parser, which knows what it makes of
                // them; so is a number too large for 64 bits.
                if !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                fields.seq = Some(digits.parse().ok()?);
            }
            _ => scanner.value()?,
        }
        Some(())
    })?;
    Some(fields)
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

/// A string token: the text between its quotes, and whether it holds an escape.
struct Token<'a> {
    inner: &'a str,
    escaped: bool,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            at: 0,
            depth: 0,
        }
    }

    /// The whole line: one object, nothing but white space after it. `member` reads the value
    /// of each key, given as one of the [`Known`] keys or not (the scanner is at the value, after
    /// white space).
    fn top_level(
        &mut self,
        mut member: impl FnMut(&mut Self, Option<Known>) -> Option<()>,
    ) -> Option<()> {
        self.skip_space();
        self.open(b'{')?;
        if self.eat(b'}') {
            self.depth -= 1;
        } else {
            let mut known_seen = 0u32;
            let mut others = Keys::new();
            loop {
                self.skip_space();
                let key = self.plain_key()?;
                let known = Known::of(key);
                match known {
                    Some(known) => {
                        let bit = 1 << known as u32;
                        if known_seen & bit != 0 {
                            return None;
                        }
                        known_seen |= bit;
                    }
                    None => {
                        if !others.insert(key) {
                            return None;
                        }
                    }
                }
                self.skip_space();
                member(self, known)?;
                if self.end_of_member(b'}')? {
                    break;
                }
            }
        }
        self.skip_space();
        (self.at == self.bytes.len()).then_some(())
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    #[inline(always)]
    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Skips white space, then takes `byte` if it comes next.
    #[inline(always)]
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// Enters an object or array, within [`MAX_DEPTH`].
    fn open(&mut self, bracket: u8) -> Option<()> {
        if self.peek() != Some(bracket) || self.depth >= MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.depth += 1;
        Some(())
    }

    /// After a member or element: `true` at the closing bracket, `false` after a comma.
    #[inline(always)]
    fn end_of_member(&mut self, close: u8) -> Option<bool> {
        self.skip_space();
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(false)
            }
            b if b == close => {
                self.at += 1;
                self.depth -= 1;
                Some(true)
            }
            _ => None,
        }
    }

    /// A key without escapes and its colon (the caller refuses repeats).
    #[inline(always)]
    fn plain_key(&mut self) -> Option<&'a str> {
        let token = self.string()?;
        if token.escaped {
            return None;
        }
        self.eat(b':').then_some(token.inner)
    }

    /// A key of an inner object and its colon; a key seen before in the object gives up.
    fn key(&mut self, keys: &mut Keys<'a>) -> Option<&'a str> {
        self.skip_space();
        let key = self.plain_key()?;
        keys.insert(key).then_some(key)
    }

    /// Any value, checked.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => None,
        }
    }

    /// A value read as `Value::as_str` reads it: the string, or `None` for any other value.
    fn text_value(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek() != Some(b'"') {
            self.value()?;
            return Some(None);
        }
        let start = self.at;
        let token = self.string()?;
        token.value(&self.text[start..self.at]).map(Some)
    }

    fn object(&mut self) -> Option<()> {
        self.open(b'{')?;
        if self.eat(b'}') {
            self.depth -= 1;
            return Some(());
        }
        let mut keys = Keys::new();
        loop {
            self.key(&mut keys)?;
            self.skip_space();
            self.value()?;
            if self.end_of_member(b'}')? {
                return Some(());
            }
        }
    }

    fn array(&mut self) -> Option<()> {
        self.open(b'[')?;
        if self.eat(b']') {
            self.depth -= 1;
            return Some(());
        }
        loop {
            self.skip_space();
            self.value()?;
            if self.end_of_member(b']')? {
                return Some(());
            }
        }
    }

    /// A call's agent and tool: each a non-empty string, else `?`; both `?` for a call that is
    /// not an object.
    /// A call's agent and tool, and its `args` as their JSON text.
    #[allow(clippy::type_complexity)]
    fn call_names(&mut self) -> Option<(Cow<'a, str>, Cow<'a, str>, Option<&'a str>)> {
        let unnamed = || Cow::Borrowed("?");
        if self.peek() != Some(b'{') {
            self.value()?;
            return Some((unnamed(), unnamed(), None));
        }
        self.open(b'{')?;
        let (mut agent, mut tool, mut args) = (None, None, None);
        if self.eat(b'}') {
            self.depth -= 1;
        } else {
            let mut keys = Keys::new();
            loop {
                let key = self.key(&mut keys)?;
                self.skip_space();
                match key {
                    "agent" => agent = self.text_value()?,
                    "tool" => tool = self.text_value()?,
                    "args" => {
                        let start = self.at;
                        self.value()?;
                        args = Some(&self.text[start..self.at]);
                    }
                    _ => self.value()?,
                }
                if self.end_of_member(b'}')? {
                    break;
                }
            }
        }
        let name =
            |text: Option<Cow<'a, str>>| text.filter(|t| !t.is_empty()).unwrap_or_else(unnamed);
        Some((name(agent), name(tool), args))
    }

    /// An outcome's `status`, when the outcome is an object and the status one of the three.
    fn outcome_status(&mut self) -> Option<Option<Status>> {
        if self.peek() != Some(b'{') {
            self.value()?;
            return Some(None);
        }
        self.open(b'{')?;
        let mut status = None;
        if self.eat(b'}') {
            self.depth -= 1;
            return Some(None);
        }
        let mut keys = Keys::new();
        loop {
            let key = self.key(&mut keys)?;
            self.skip_space();
            if key == "status" {
                status = match self.text_value()?.as_deref() {
                    Some("executed") => Some(Status::Executed),
                    Some("skipped") => Some(Status::Skipped),
                    Some("failed") => Some(Status::Failed),
                    _ => None,
                };
            } else {
                self.value()?;
            }
            if self.end_of_member(b'}')? {
                return Some(status);
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes[self.at..].starts_with(word).then(|| {
            self.at += word.len();
        })
    }

    /// A number without an exponent, whose integer part has at most 300 digits, so that it is
    /// finite as a float (anything else is left to the strict reader's range check).
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let integer = self.digits();
        let first = self.bytes.get(self.at - integer).copied();
        if integer == 0 || integer > 300 || (integer > 1 && first == Some(b'0')) {
            return None;
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        match self.peek() {
            Some(b'e' | b'E') => None,
            _ => Some(()),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        self.at - start
    }

    /// A string token. The text is valid UTF-8 already; control characters must be escaped, and
    /// every escape must be one JSON has.
    #[inline(always)]
    fn string(&mut self) -> Option<Token<'a>> {
        if self.peek() != Some(b'"') {
            return None;
        }
        self.at += 1;
        let start = self.at;
        let mut escaped = false;
        loop {
            self.at += plain_run(&self.bytes[self.at..]);
            match self.peek()? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                }
                _ => return None,
            }
        }
        let inner = &self.text[start..self.at];
        self.at += 1;
        Some(Token { inner, escaped })
    }

    /// One escape, at its backslash. A `\u` escape of a surrogate is left to the strict reader,
    /// which knows how the halves must pair.
    fn escape(&mut self) -> Option<()> {
        let kind = *self.bytes.get(self.at + 1)?;
        match kind {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                self.at += 2;
                Some(())
            }
            b'u' => {
                let hex = self.bytes.get(self.at + 2..self.at + 6)?;
                let mut unit = 0u32;
                for &digit in hex {
                    unit = unit * 16 + char::from(digit).to_digit(16)?;
                }
                if (0xD800..=0xDFFF).contains(&unit) {
                    return None;
                }
                self.at += 6;
                Some(())
            }
            _ => None,
        }
    }
}

impl<'a> Token<'a> {
    /// The string's value: borrowed when it has no escapes, decoded by serde_json otherwise.
    fn value(&self, quoted: &'a str) -> Option<Cow<'a, str>> {
        if self.escaped {
            serde_json::from_str::<String>(quoted).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(self.inner))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_sets_refuse_repeats_inline_and_beyond() {
        let names: Vec<String> = (0..20).map(|n| format!("k{n}")).collect();
        let mut keys = Keys::new();
        assert!(keys.insert(""));
        assert!(!keys.insert(""));
        for name in &names {
            assert!(keys.insert(name), "{name}");
            assert!(!keys.insert(name), "{name}");
        }
        assert!(!keys.insert(""));
        assert!(keys.insert("k1x"));
    }

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
            assert!(chain_fields(text).is_none(), "{text}");
        }
    }
}
