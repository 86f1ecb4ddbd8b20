//! The JSON lexer core under the crate's two scanners (the call scanner in `call/scan.rs`, the
//! audit event scanners in `audit/scan.rs` and `report/scan.rs`): one pass over valid UTF-8 that
//! checks a document as strictly as [`crate::strict_json::parse`] does (no repeated key in any
//! object, finite numbers, valid escapes, bounded nesting) and hands back borrowed text.
//!
//! It gives up (`None`) on anything unusual rather than decide it: a key with an escape, a `\u`
//! escape of a surrogate, a number with an exponent or an integer part of over 300 digits,
//! nesting deeper than the bound it was made with, any error. The caller then hands the line to
//! the strict parser, which words the reason or reads what the lexer left alone; so whatever the
//! lexer accepts, the strict parser accepts with the same values, and a scanner built on it never
//! changes what is accepted or how.
//!
//! It needs nothing else of the crate; [`plain_run`] is shared with the writer
//! ([`crate::json_write`]), which copies the same bytes unescaped.

use std::borrow::Cow;
use std::collections::HashSet;

/// How many bytes at the start of `bytes` need no attention inside a JSON string: no quote, no
/// backslash, no control character (what the lexer skips inside a string and
/// [`crate::json_write::push_json_str`] copies unescaped). Sixteen bytes at a time with SSE2
/// (part of every x86-64), else eight at a time; both are held to the byte-by-byte answer.
#[inline]
pub(crate) fn plain_run(bytes: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let (run, exact) = wide::plain_run(bytes);
        if exact {
            return run;
        }
        run + plain_run_by_words(&bytes[run..])
    }
    #[cfg(not(target_arch = "x86_64"))]
    plain_run_by_words(bytes)
}

#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    /// Which of the sixteen bytes at `at` need attention, one bit each, lowest first.
    #[inline(always)]
    fn flags(bytes: &[u8], at: usize) -> u32 {
        let window = &bytes[at..at + 16];
        // SAFETY: SSE2 is part of every x86-64 target, so its instructions are there to run;
        // `window` is sixteen readable bytes, and an unaligned load reads exactly them.
        unsafe {
            let chunk = _mm_loadu_si128(window.as_ptr().cast::<__m128i>());
            let quote = _mm_cmpeq_epi8(chunk, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(chunk, _mm_set1_epi8(b'\\' as i8));
            // A byte is a control character when it is at most 0x1f, unsigned.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(chunk, _mm_set1_epi8(0x1f)), chunk);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
        }
    }

    /// The plain run at the start of `bytes` read sixteen bytes at a time, and whether it is
    /// exact: it is not when fewer than sixteen bytes were left to read (the rest is the
    /// caller's).
    #[inline(always)]
    pub(super) fn plain_run(bytes: &[u8]) -> (usize, bool) {
        let len = bytes.len();
        let mut run = 0;
        while run + 16 <= len {
            let found = flags(bytes, run);
            if found != 0 {
                return (run + found.trailing_zeros() as usize, true);
            }
            run += 16;
        }
        if run == len {
            return (run, true);
        }
        if run == 0 {
            return (0, false);
        }
        // The last sixteen bytes, overlapping some already found plain: those flag nothing, so
        // shifted out they leave the rest's flags exact.
        let found = flags(bytes, len - 16) >> (16 - (len - run));
        match found {
            0 => (len, true),
            found => (run + found.trailing_zeros() as usize, true),
        }
    }
}

/// [`plain_run`] eight bytes at a time.
#[inline]
fn plain_run_by_words(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Each byte's high bit set when it may need attention; the lowest set is exact (a borrow
    // only runs upwards from a true match).
    let flags = |word: u64| {
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        let special = word.wrapping_sub(ONES * 0x20)
            | quote.wrapping_sub(ONES)
            | backslash.wrapping_sub(ONES);
        special & !word & HIGHS
    };
    let mut chunks = bytes.chunks_exact(8);
    let mut run = 0;
    for chunk in &mut chunks {
        let found = flags(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        if found != 0 {
            return run + (found.trailing_zeros() / 8) as usize;
        }
        run += 8;
    }
    let rest = chunks.remainder().len();
    if rest > 0 && run >= 8 {
        // The last eight bytes, overlapping some already found plain: those flag nothing and
        // lend no borrow, so shifted out they leave the rest's flags exact.
        let last: [u8; 8] = bytes[bytes.len() - 8..].try_into().expect("eight bytes");
        let found = flags(u64::from_le_bytes(last)) >> ((8 - rest) * 8);
        return match found {
            0 => bytes.len(),
            found => run + (found.trailing_zeros() / 8) as usize,
        };
    }
    while let Some(&byte) = bytes.get(run) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        run += 1;
    }
    run
}

/// The keys of one object seen so far, for refusing a repeat: a few compared in place (length and
/// first byte before the rest), more in a hash set.
pub(crate) struct Keys<'a> {
    seen: [&'a str; Keys::INLINE],
    len: usize,
    more: Option<HashSet<&'a str>>,
}

impl Default for Keys<'_> {
    fn default() -> Self {
        Keys {
            seen: [""; Keys::INLINE],
            len: 0,
            more: None,
        }
    }
}

impl<'a> Keys<'a> {
    const INLINE: usize = 8;

    #[inline]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a key; `false` when it was already there.
    #[inline]
    pub fn insert(&mut self, key: &'a str) -> bool {
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

/// A string token: the text between its quotes, and whether it holds an escape (every escape in
/// it checked: one JSON has, and no `\u` escape of a surrogate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub inner: &'a str,
    pub escaped: bool,
}

impl<'a> Token<'a> {
    /// The string's value: borrowed when it has no escapes, decoded otherwise.
    #[inline]
    pub fn value(&self) -> Cow<'a, str> {
        if self.escaped {
            Cow::Owned(unescape(self.inner))
        } else {
            Cow::Borrowed(self.inner)
        }
    }
}

/// Decodes the inside of a string whose escapes the lexer has checked.
fn unescape(inner: &str) -> String {
    let bytes = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut at = 0;
    // Found by the memchr crate's vector search: a call's `instruction` with quotes in it
    // was a tenth of the scan's cost looked through a byte at a time (issue 34).
    while let Some(slash) = memchr::memchr(b'\\', &bytes[at..]) {
        out.push_str(&inner[at..at + slash]);
        at += slash;
        let decoded = match bytes[at + 1] {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = u32::from_str_radix(&inner[at + 2..at + 6], 16)
                    .expect("the lexer checked four hex digits");
                at += 4;
                char::from_u32(unit).expect("the lexer refused surrogates")
            }
            other => char::from(other),
        };
        out.push(decoded);
        at += 2;
    }
    out.push_str(&inner[at..]);
    out
}

/// A position in a JSON text, and how deep it is in objects and arrays.
pub(crate) struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
    max_depth: usize,
}

impl<'a> Lexer<'a> {
    /// At the start of `text`; objects and arrays nested deeper than `max_depth` give up.
    #[inline]
    pub fn new(text: &'a str, max_depth: usize) -> Self {
        Lexer {
            text,
            bytes: text.as_bytes(),
            at: 0,
            depth: 0,
            max_depth,
        }
    }

    /// Where the lexer is, as a byte offset into the text.
    #[inline(always)]
    pub fn at(&self) -> usize {
        self.at
    }

    /// The text from `start` to where the lexer is.
    #[inline(always)]
    pub fn since(&self, start: usize) -> &'a str {
        &self.text[start..self.at]
    }

    #[inline(always)]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    #[inline(always)]
    pub(crate) fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Skips white space, then takes `byte` if it comes next.
    #[inline(always)]
    pub(crate) fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// Skips white space; `true` when nothing else is left.
    #[inline]
    pub(crate) fn at_end(&mut self) -> bool {
        self.skip_space();
        self.at == self.bytes.len()
    }

    /// Enters an object or array at its opening `bracket`, within the depth bound.
    #[inline(always)]
    pub fn open(&mut self, bracket: u8) -> Option<()> {
        if self.peek() != Some(bracket) || self.depth >= self.max_depth {
            return None;
        }
        self.at += 1;
        self.depth += 1;
        Some(())
    }

    /// Just after [`Self::open`]: takes the `close` bracket of an empty object or array.
    #[inline(always)]
    pub(crate) fn close_if_empty(&mut self, close: u8) -> bool {
        if self.eat(close) {
            self.depth -= 1;
            true
        } else {
            false
        }
    }

    /// After a member or element: `true` at the closing bracket, `false` after a comma.
    #[inline(always)]
    pub(crate) fn end_of_member(&mut self, close: u8) -> Option<bool> {
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
    pub(crate) fn plain_key(&mut self) -> Option<&'a str> {
        let token = self.string()?;
        if token.escaped {
            return None;
        }
        self.eat(b':').then_some(token.inner)
    }

    /// An object, at its `{`. For each member, `member` is given the lexer at the value (after
    /// white space) and the key (without escapes, never one seen before in the object), and must
    /// read the value.
    #[inline]
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        let mut keys = Keys::new();
        self.object_refusing_repeats_itself(|lexer, key| {
            if !keys.insert(key) {
                return None;
            }
            member(lexer, key)
        })
    }

    /// [`Self::object`] for a reader that refuses a repeated key itself (`member` gives up on
    /// one): a reader that keeps each key it knows in a slot of its own sees a repeat as a slot
    /// already filled, and needs a [`Keys`] only for the others.
    #[inline]
    pub(crate) fn object_refusing_repeats_itself(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.open(b'{')?;
        if self.close_if_empty(b'}') {
            return Some(());
        }
        loop {
            self.skip_space();
            let key = self.plain_key()?;
            self.skip_space();
            member(self, key)?;
            if self.end_of_member(b'}')? {
                return Some(());
            }
        }
    }

    /// Any value, at its first byte, checked and skipped.
    #[inline]
    pub fn value(&mut self) -> Option<()> {
        self.value_seeing_keys(&mut |_| {})
    }

    /// Any value, at its first byte, checked and skipped; `seen` is given every key of every
    /// object in it, at any depth.
    pub(crate) fn value_seeing_keys(&mut self, seen: &mut impl FnMut(&'a str)) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(|lexer, key| {
                seen(key);
                lexer.value_seeing_keys(seen)
            }),
            b'[' => self.array_seeing_keys(seen),
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => None,
        }
    }

    fn array_seeing_keys(&mut self, seen: &mut impl FnMut(&'a str)) -> Option<()> {
        self.open(b'[')?;
        if self.close_if_empty(b']') {
            return Some(());
        }
        loop {
            self.skip_space();
            self.value_seeing_keys(seen)?;
            if self.end_of_member(b']')? {
                return Some(());
            }
        }
    }

    /// A value read as `Value::as_str` reads it: the string, or `None` for any other value.
    #[inline]
    pub(crate) fn text_value(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek() != Some(b'"') {
            self.value()?;
            return Some(None);
        }
        Some(Some(self.string()?.value()))
    }

    #[inline]
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes[self.at..].starts_with(word).then(|| {
            self.at += word.len();
        })
    }

    /// A number without an exponent, whose integer part has at most 300 digits, so that it is
    /// finite as a float (anything else is left to the strict parser's range check).
    #[inline]
    pub fn number(&mut self) -> Option<()> {
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

    #[inline(always)]
    fn digits(&mut self) -> usize {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        self.at - start
    }

    /// A string token, at its opening quote. The text is valid UTF-8 already; control characters
    /// must be escaped, and every escape must be one JSON has.
    #[inline(always)]
    pub fn string(&mut self) -> Option<Token<'a>> {
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

    /// One escape, at its backslash. A `\u` escape of a surrogate is left to the strict parser,
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

/// A JSON text mangled by `edits` (at, bytes cut, text inserted), each place moved to a character
/// boundary: the property tests of both scanners and of the lexer share it.
#[cfg(test)]
pub(crate) fn mangled(base: &str, edits: Vec<(usize, usize, &str)>) -> String {
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
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strict_json;
    use serde_json::Value;

    /// One whole document: a value with nothing but white space around it.
    fn document(text: &str) -> Option<()> {
        let mut lexer = Lexer::new(text, 64);
        lexer.skip_space();
        lexer.value()?;
        lexer.at_end().then_some(())
    }

    /// Every string in a document, decoded, in order (keys and values alike).
    fn strings(text: &str) -> Option<Vec<String>> {
        fn walk(lexer: &mut Lexer, out: &mut Vec<String>) -> Option<()> {
            match lexer.peek()? {
                b'{' => lexer.object(|lexer, key| {
                    out.push(key.to_owned());
                    walk(lexer, out)
                }),
                b'[' => {
                    lexer.open(b'[')?;
                    if lexer.close_if_empty(b']') {
                        return Some(());
                    }
                    loop {
                        lexer.skip_space();
                        walk(lexer, out)?;
                        if lexer.end_of_member(b']')? {
                            return Some(());
                        }
                    }
                }
                b'"' => {
                    out.push(lexer.string()?.value().into_owned());
                    Some(())
                }
                _ => lexer.value(),
            }
        }
        let mut lexer = Lexer::new(text, 64);
        let mut out = Vec::new();
        lexer.skip_space();
        walk(&mut lexer, &mut out)?;
        lexer.at_end().then_some(out)
    }

    /// The same strings, as the strict parser reads them.
    fn reference_strings(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    out.push(key.clone());
                    reference_strings(value, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| reference_strings(v, out)),
            Value::String(text) => out.push(text.clone()),
            _ => {}
        }
    }

    /// The plain run byte by byte, as the faster readings must find it.
    fn plain_run_bytewise(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .unwrap_or(bytes.len())
    }

    #[test]
    fn every_reading_of_a_plain_run_agrees_byte_by_byte() {
        // Lengths across the eight- and sixteen-byte reads and their overlapping last read,
        // with a special byte (or two) in every place, and bytes on either side of each bound.
        let fillers = [b'a', 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xff, 0xe9];
        for len in 0..=50 {
            for &filler in &fillers {
                let plain = vec![filler; len];
                assert_eq!(plain_run(&plain), len, "{filler:#x} x {len}");
                assert_eq!(plain_run_by_words(&plain), len, "{filler:#x} x {len}");
                for special in [b'"', b'\\', 0x00, 0x1f, b'\n', 0x01] {
                    for at in 0..len {
                        let mut bytes = plain.clone();
                        bytes[at] = special;
                        if at + 3 < len {
                            bytes[len - 1] = b'"';
                        }
                        let expected = plain_run_bytewise(&bytes);
                        assert_eq!(plain_run(&bytes), expected, "{special:#x} at {at} of {len}");
                        assert_eq!(
                            plain_run_by_words(&bytes),
                            expected,
                            "{special:#x} at {at} of {len}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn plain_runs_stop_at_every_special_byte_in_every_position() {
        for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
            for len in 1..=25 {
                assert_eq!(plain_run(&vec![b'a'; len]), len);
                for at in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    assert_eq!(plain_run(&bytes), at, "{special:#x} at {at} of {len}");
                    // A second special byte after the first changes nothing.
                    if at + 1 < len {
                        bytes[len - 1] = b'"';
                        assert_eq!(plain_run(&bytes), at, "{special:#x} at {at} of {len}");
                    }
                }
            }
        }
        // Bytes just above and below each special one are plain.
        for len in 1..=25 {
            for byte in [0x20, b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff] {
                assert_eq!(plain_run(&vec![byte; len]), len, "{byte:#x} × {len}");
            }
        }
        assert_eq!(plain_run("é€😀 ~\u{7f}".as_bytes()), "é€😀 ~\u{7f}".len());
    }

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
    fn leaves_the_unusual_to_the_strict_parser() {
        for text in [
            r#"1e2"#,
            r#"{"\u0061":1}"#,
            r#""\ud83d\ude00""#,
            r#"{"a":1,"a":2}"#,
            r#"[{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k3":2}]"#,
            r#"01"#,
            r#"1."#,
            r#"-"#,
            r#""\x""#,
            "\"\t\"",
            r#"tru"#,
            r#"{"a":1,}"#,
            r#"[1,]"#,
            r#"{} x"#,
            r#"{"a" 1}"#,
        ] {
            assert!(document(text).is_none(), "{text}");
        }
        let deep = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        assert!(document(&deep(64)).is_some());
        assert!(document(&deep(65)).is_none());
        assert!(document(&format!("1{}", "0".repeat(299))).is_some());
        assert!(document(&format!("1{}", "0".repeat(300))).is_none());
    }

    #[test]
    fn sees_every_key_at_any_depth() {
        let text = r#"{"a":{"b":[{"c":1},{"d":{"e":[]}}]},"f":"g"}"#;
        let mut lexer = Lexer::new(text, 64);
        let mut keys = Vec::new();
        lexer.value_seeing_keys(&mut |key| keys.push(key)).unwrap();
        assert_eq!(keys, ["a", "b", "c", "d", "e", "f"]);
    }

    #[test]
    fn decodes_every_escape_as_serde_json_does() {
        let text = r#""a\"b\\c\/d\be\ff\ng\rh\ti\u0000j\u00e9k\u20acl\uFFFF""#;
        let token = Lexer::new(text, 64).string().unwrap();
        assert!(token.escaped);
        assert_eq!(token.value(), serde_json::from_str::<String>(text).unwrap());
        let plain = Lexer::new(r#""é€""#, 64).string().unwrap();
        assert!(matches!(plain.value(), Cow::Borrowed("é€")));
    }

    const BASES: &[&str] = &[
        r#"{"a":"x\"y\u00e9","b":[1,-2.5,0,{"c":null,"d":true}],"e":{"f":false,"g":"\n"}}"#,
        r#" [ "s" , { "k" : [ ] , "l" : { } } , 12.50 , "\\\/" ] "#,
    ];

    #[test]
    fn the_bases_of_the_property_below_are_read_by_the_lexer() {
        for base in BASES {
            let mut theirs = Vec::new();
            reference_strings(&strict_json::parse(base).unwrap(), &mut theirs);
            assert_eq!(strings(base), Some(theirs), "{base}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(3000))]

        /// Documents cut, spliced and salted with the bytes JSON cares about: whatever the lexer
        /// accepts, the strict parser accepts, with the same strings decoded alike.
        #[test]
        fn the_lexer_agrees_with_the_strict_parser_on_mangled_documents(
            base in proptest::sample::select(BASES.to_vec()),
            edits in proptest::collection::vec(
                (0usize..120, 0usize..3, proptest::sample::select(vec![
                    "\"", "\\", "\\u", "\\ud800", "\\u0061", "\\uD7FF", "\\n", "e5", "E", "0",
                    "01", "-", ".", "{", "}", "[", "]", ",", ":", " ", "\t", "\n", "\u{1}", "é",
                    "true", "nul", "1e999", "\"a\":1,", "\"k\":",
                ])),
                0..4,
            ),
        ) {
            let text = crate::json_lex::mangled(base, edits);
            proptest::prop_assert_eq!(document(&text).is_some(), strings(&text).is_some());
            if let Some(ours) = strings(&text) {
                let value = strict_json::parse(&text);
                proptest::prop_assert!(value.is_ok(), "{}", text);
                let mut theirs = Vec::new();
                reference_strings(&value.unwrap(), &mut theirs);
                proptest::prop_assert_eq!(ours, theirs, "{}", text);
            }
        }
    }
}
