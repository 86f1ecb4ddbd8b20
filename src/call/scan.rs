//! The call scanner: one pass over a call's bytes that checks the whole line as strictly as
//! [`strict_json::parse`] does (duplicate keys at any depth, finite numbers, valid escapes) and
//! keeps only what the rules read: `agent`, `tool`, `source`, `instruction` and `cwd` as borrowed text,
//! `args` as its JSON text with `amount` read out. Nothing else is built.
//!
//! It gives up (`None`) on anything that is not a plain, well-formed call: a key with an escape,
//! a `\u` escape of a surrogate, a number with an exponent, nesting deeper than
//! [`MAX_CALL_DEPTH`], a field of the wrong type, any error. The reference path
//! ([`strict_json::parse`], then [`Call::from_value`]) then words the reason, or accepts what the
//! scanner left alone, so the scanner never changes what is accepted or how.

use std::borrow::Cow;

use serde_json::Value;

use super::{Args, Call, Provenance, Source, MAX_CALL_DEPTH};
use crate::jsonl::plain_run;
use crate::strict_json::{self, KeySet};

/// Reads a call from its trimmed text, or `None` when the reference path must.
pub(super) fn call(text: &str) -> Option<Call> {
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        at: 0,
        depth: 0,
        in_args: false,
        keys_may_fold: false,
    };
    let fields = scanner.call_fields()?;
    scanner.skip_space();
    if scanner.at != scanner.bytes.len() {
        return None;
    }
    let agent = fields.agent.filter(|agent| !agent.is_empty())?;
    // A cwd with a NUL is malformed: the reference path says so.
    if fields.cwd.as_deref().is_some_and(|cwd| cwd.contains('\0')) {
        return None;
    }
    let tool = fields.tool.filter(|tool| !tool.is_empty())?;
    let provenance = match fields.source {
        None => Provenance::Missing,
        Some(source) => match Source::from_str(&source) {
            Some(source) => Provenance::Stated(source),
            None => Provenance::Unrecognised(Value::String(source.into_owned()).to_string()),
        },
    };
    let (args, amount_text) = match fields.args {
        None => (Args::default(), None),
        Some((args_text, amount, keys_may_fold)) => {
            let (amount, amount_text) = match amount {
                // Built as the reference parser builds it, from the text as written.
                Some(raw) => {
                    let value = strict_json::parse(raw).ok()?;
                    let text = value.is_number().then(|| raw.to_owned());
                    (Some(value), text)
                }
                None => (None, None),
            };
            (
                Args::from_checked_text(args_text, amount, keys_may_fold),
                amount_text,
            )
        }
    };
    Some(Call {
        agent: agent.into_owned(),
        tool: tool.into_owned(),
        args,
        provenance,
        instruction: fields.instruction.map(Cow::into_owned),
        amount_text,
        cwd: fields.cwd.map(Cow::into_owned),
    })
}

/// The top-level fields of a call that the rules read.
#[derive(Default)]
struct Fields<'a> {
    agent: Option<Cow<'a, str>>,
    tool: Option<Cow<'a, str>>,
    source: Option<Cow<'a, str>>,
    instruction: Option<Cow<'a, str>>,
    cwd: Option<Cow<'a, str>>,
    /// The args object's text, the text of its `amount`, and whether any of its keys could fold
    /// alike another.
    args: Option<(&'a str, Option<&'a str>, bool)>,
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
    /// Whether the scanner is inside `args`, whose keys it looks at for [`Self::keys_may_fold`].
    in_args: bool,
    /// Whether a key of `args`, at any depth, has an upper-case letter, a DEL (which JSON lets
    /// stand unescaped, and which folding drops as invisible) or a non-ASCII character (keys
    /// with escapes are left to the reference path).
    keys_may_fold: bool,
}

/// A string token: the text between its quotes, and whether it holds an escape.
struct Token<'a> {
    inner: &'a str,
    escaped: bool,
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

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Skips white space, then takes `byte` if it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn call_fields(&mut self) -> Option<Fields<'a>> {
        let mut fields = Fields::default();
        self.skip_space();
        self.open(b'{')?;
        let mut keys = KeySet::new();
        if self.eat(b'}') {
            self.depth -= 1;
            return Some(fields);
        }
        loop {
            let key = self.key(&mut keys)?;
            let slot = match key {
                "agent" => &mut fields.agent,
                "tool" => &mut fields.tool,
                "source" => &mut fields.source,
                "instruction" => &mut fields.instruction,
                "cwd" => &mut fields.cwd,
                // A `task` or `result` record (value provenance), not a call: the reader that
                // tells them apart takes it.
                "kind" => return None,
                "args" => {
                    self.skip_space();
                    let start = self.at;
                    self.keys_may_fold = false;
                    self.in_args = true;
                    let amount = self.object(true)?;
                    self.in_args = false;
                    fields.args = Some((&self.text[start..self.at], amount, self.keys_may_fold));
                    if self.end_of_member(b'}')? {
                        return Some(fields);
                    }
                    continue;
                }
                _ => {
                    self.value()?;
                    if self.end_of_member(b'}')? {
                        return Some(fields);
                    }
                    continue;
                }
            };
            self.skip_space();
            let start = self.at;
            let token = self.string()?;
            *slot = Some(token.value(&self.text[start..self.at])?);
            if self.end_of_member(b'}')? {
                return Some(fields);
            }
        }
    }

    /// Enters an object or array, within the depth a call may have.
    fn open(&mut self, bracket: u8) -> Option<()> {
        if self.peek() != Some(bracket) || self.depth >= MAX_CALL_DEPTH {
            return None;
        }
        self.at += 1;
        self.depth += 1;
        Some(())
    }

    /// After a member or element: `true` at the closing bracket, `false` after a comma.
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

    /// An object key and its colon; a key seen before in the object, or with an escape, gives up.
    fn key(&mut self, keys: &mut KeySet<'a>) -> Option<&'a str> {
        self.skip_space();
        let token = self.string()?;
        if token.escaped || !keys.insert(Cow::Borrowed(token.inner)) {
            return None;
        }
        if self.in_args && !self.keys_may_fold {
            self.keys_may_fold = token
                .inner
                .bytes()
                .any(|b| b >= 0x7f || b.is_ascii_uppercase());
        }
        self.eat(b':').then_some(token.inner)
    }

    /// An object; with `find_amount`, returns the text of its `amount` member.
    fn object(&mut self, find_amount: bool) -> Option<Option<&'a str>> {
        self.open(b'{')?;
        let mut amount = None;
        if self.eat(b'}') {
            self.depth -= 1;
            return Some(None);
        }
        let mut keys = KeySet::new();
        loop {
            let key = self.key(&mut keys)?;
            self.skip_space();
            let start = self.at;
            self.value()?;
            if find_amount && key == "amount" {
                amount = Some(&self.text[start..self.at]);
            }
            if self.end_of_member(b'}')? {
                return Some(amount);
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
            self.value()?;
            if self.end_of_member(b']')? {
                return Some(());
            }
        }
    }

    fn value(&mut self) -> Option<()> {
        self.skip_space();
        match self.peek()? {
            b'{' => self.object(false).map(drop),
            b'[' => self.array(),
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes[self.at..].starts_with(word).then(|| {
            self.at += word.len();
        })
    }

    /// A number without an exponent, whose integer part has at most 300 digits, so that it is
    /// finite as a float (anything else is left to the reference parser's range check).
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

    /// One escape, at its backslash. A `\u` escape of a surrogate is left to serde_json, which
    /// knows how the halves must pair.
    fn escape(&mut self) -> Option<()> {
        let kind = *self.bytes.get(self.at + 1)?;
        match kind {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                self.at += 2;
                Some(())
            }
            b'u' => {
                let hex = self.bytes.get(self.at + 2..self.at + 6)?;
                let hex = std::str::from_utf8(hex).ok()?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                let unit = u16::from_str_radix(hex, 16).ok()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_the_unusual_to_the_reference_path() {
        for text in [
            r#"{"agent":"a","tool":"t","n":1e2}"#,
            r#"{"agent":"a","tool":"t","\u0061":1}"#,
            r#"{"agent":"a","tool":"t","s":"\ud83d\ude00"}"#,
            r#"{"agent":"a","tool":"t","source":7}"#,
            r#"{"agent":"a","tool":"t","a":1,"a":2}"#,
            r#"{"agent":"a","tool":"t","n":01}"#,
            r#"{"agent":"a","tool":"t","n":1.}"#,
            r#"{"agent":"a","tool":"t","n":-}"#,
            r#"{"agent":"a","tool":"t","s":"\x"}"#,
            r#"{"agent":"a","tool":"t","s":"	"}"#,
            r#"{"agent":"a","tool":"t","l":tru}"#,
            r#"{"agent":"a","tool":"t",}"#,
            r#"{"agent":"a","tool":"t"} x"#,
            r#"{"agent":"","tool":"t"}"#,
            r#"{"agent":"a","tool":"t","args":[]}"#,
        ] {
            assert!(call(text).is_none(), "{text}");
        }
    }

    #[test]
    fn reads_escaped_values_and_finds_the_amount_among_the_args() {
        let text = r#"{ "agent" : "b\"ob" , "tool":"pay\u00e9","args":{"n":{"amount":1},"amount":12.50,"x":[1,-0.5,true,null,"\n"]},"source":"user"}"#;
        let call = call(text).unwrap();
        assert_eq!(call.agent, "b\"ob");
        assert_eq!(call.tool, "payé");
        assert_eq!(call.amount_text.as_deref(), Some("12.50"));
        assert_eq!(call.args.amount(), Some(&serde_json::json!(12.5)));
        assert_eq!(
            call.args.map()["x"],
            serde_json::json!([1, -0.5, true, null, "\n"])
        );
    }

    #[test]
    fn sees_keys_that_could_fold_alike_at_any_depth_but_not_in_values() {
        for (text, may_fold) in [
            (
                r#"{"agent":"a","tool":"t","args":{"to":"Bob ÉLAN","n":[{"x":"Y"}]}}"#,
                false,
            ),
            (
                r#"{"agent":"a","tool":"t","args":{"to":"x","Amount":5}}"#,
                true,
            ),
            (r#"{"agent":"a","tool":"t","args":{"n":[{"é":1}]}}"#, true),
            (
                r#"{"agent":"a","tool":"t","args":{"n":{"deep":{"To":1}}}}"#,
                true,
            ),
            // Keys outside `args` are not its keys.
            (
                r#"{"Agent":1,"agent":"a","tool":"t","args":{"to":"x"},"Z":2}"#,
                false,
            ),
        ] {
            let call = call(text).unwrap();
            assert_eq!(call.args.keys_may_fold(), may_fold, "{text}");
            if !may_fold {
                assert_eq!(crate::call::keys_spelt_alike(call.args.map()), None);
            }
        }
    }
}
