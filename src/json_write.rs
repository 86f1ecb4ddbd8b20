//! Writing JSON text: lines built field by field, strings escaped as serde_json escapes them.
//! It needs nothing else of the crate but `plain_run` from the lexer core beside it, so the
//! audit log and the stream stages can both use it.

use serde::Serialize;

use crate::json_lex::plain_run;

/// How much raw text of a malformed line is kept in its verdict and audit event.
pub(crate) const RAW_EXCERPT_BYTES: usize = 1024;

/// The position of the first `\n` (the memchr crate: vector instructions where the CPU has
/// them, found at run time; every line of every stage and every event appended is looked through
/// once).
#[inline]
pub(crate) fn find_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

/// How serde_json escapes each byte inside a string: 0 for none, else the letter after `\`.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = b'u';
        i += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Appends `text` as a JSON string, escaped byte for byte as `serde_json` escapes it.
#[inline]
pub(crate) fn push_json_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let clean = plain_run(bytes);
    let mut start = 0;
    for i in clean..bytes.len() {
        let byte = bytes[i];
        let escape = ESCAPE[byte as usize];
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        start = i + 1;
        if escape == b'u' {
            const HEX: &[u8; 16] = crate::hex::DIGITS;
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(byte >> 4) as usize],
                HEX[(byte & 0xf) as usize],
            ]);
        } else {
            out.extend_from_slice(&[b'\\', escape]);
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A parsed JSON text on one line: every line break in it lies between tokens (a string cannot
/// hold a raw one), so it becomes a space and the text stays the same value, byte for byte
/// otherwise (what a line-framed reader checks strictly: duplicate keys, numbers' text).
pub(crate) fn on_one_line(json: &[u8]) -> Vec<u8> {
    json.iter()
        .map(|&byte| match byte {
            b'\n' | b'\r' => b' ',
            byte => byte,
        })
        .collect()
}

/// Appends an unsigned integer in decimal.
pub fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Whether a line holds nothing but white space (blank lines are skipped).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// A bounded, lossless-where-possible excerpt of a line for `raw` fields.
pub(crate) fn raw_excerpt(line: &[u8]) -> String {
    let cut = &line[..line.len().min(RAW_EXCERPT_BYTES)];
    let mut text = String::from_utf8_lossy(cut).into_owned();
    if line.len() > RAW_EXCERPT_BYTES {
        text.push('…');
    }
    text
}

/// Builds one JSON object as a line, field by field; raw fields splice JSON text that is already
/// valid (a call exactly as it came).
pub struct JsonLine {
    buf: Vec<u8>,
    /// Where the object being written opens (its `{`).
    open: usize,
}

impl Default for JsonLine {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonLine {
    pub fn new() -> Self {
        Self::with_capacity(256)
    }

    /// A line with room for about `bytes` bytes.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes);
        buf.push(b'{');
        JsonLine { buf, open: 0 }
    }

    /// A line written at the end of `buf` (a batch of lines), which [`JsonLine::finish`] gives
    /// back; nothing is copied.
    pub(crate) fn append_to(mut buf: Vec<u8>) -> Self {
        let open = buf.len();
        buf.push(b'{');
        JsonLine { buf, open }
    }

    /// A line begun at `open` in `buf` (its `{` there), whose first fields its caller wrote
    /// itself; fields added now follow them.
    pub(crate) fn resume(buf: Vec<u8>, open: usize) -> Self {
        debug_assert_eq!(buf.get(open), Some(&b'{'));
        JsonLine { buf, open }
    }

    /// How long the buffer is so far, to mark where a field starts or ends.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.len() == self.open + 1
    }

    /// Adds fields that are already written: `members` is `"key":value` text, one or more
    /// members separated by commas (part of another line, say).
    pub(crate) fn raw_members(mut self, members: &[u8]) -> Self {
        if !members.is_empty() {
            if self.buf.len() > self.open + 1 {
                self.buf.push(b',');
            }
            self.buf.extend_from_slice(members);
        }
        self
    }

    /// A member's key and its colon. Keys are the program's own names, which need no escape:
    /// copied as they are, not looked through for escapes.
    #[inline]
    fn key(&mut self, key: &'static str) {
        debug_assert!(plain_run(key.as_bytes()) == key.len());
        let comma = self.buf.len() > self.open + 1;
        self.buf.reserve(key.len() + 4);
        self.buf
            .extend_from_slice(if comma { b",\"" } else { b"\"" });
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    pub fn field<T: Serialize + ?Sized>(mut self, key: &'static str, value: &T) -> Self {
        self.key(key);
        serde_json::to_writer(&mut self.buf, value).expect("a record field serializes");
        self
    }

    /// A string field; the same bytes as [`JsonLine::field`] gives, written directly.
    pub(crate) fn str_field(mut self, key: &'static str, value: &str) -> Self {
        self.key(key);
        push_json_str(&mut self.buf, value);
        self
    }

    /// A string field whose key and value are constants of the program that need no escape
    /// (a decision, a stage): the same bytes as [`JsonLine::str_field`], without looking for
    /// escapes.
    pub(crate) fn plain_str_field(mut self, key: &'static str, value: &'static str) -> Self {
        debug_assert!(plain_run(key.as_bytes()) == key.len());
        debug_assert!(plain_run(value.as_bytes()) == value.len());
        let comma = self.buf.len() > self.open + 1;
        self.buf.reserve(key.len() + value.len() + 6);
        if comma {
            self.buf.push(b',');
        }
        self.buf.push(b'"');
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":\"");
        self.buf.extend_from_slice(value.as_bytes());
        self.buf.push(b'"');
        self
    }

    /// An array of strings; the same bytes as [`JsonLine::field`] gives, written directly.
    pub(crate) fn strs_field<S: AsRef<str>>(mut self, key: &'static str, values: &[S]) -> Self {
        self.key(key);
        self.buf.push(b'[');
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            push_json_str(&mut self.buf, value.as_ref());
        }
        self.buf.push(b']');
        self
    }

    /// An object field built by `fill`, which adds its fields to the inner object.
    pub(crate) fn object_field(
        mut self,
        key: &'static str,
        fill: impl FnOnce(JsonLine) -> JsonLine,
    ) -> Self {
        self.key(key);
        self.buf.push(b'{');
        let inner = fill(JsonLine {
            open: self.buf.len() - 1,
            buf: std::mem::take(&mut self.buf),
        });
        self.buf = inner.buf;
        self.buf.push(b'}');
        self
    }

    /// `json` must be one valid JSON value.
    pub(crate) fn raw_field(mut self, key: &'static str, json: &str) -> Self {
        self.key(key);
        self.buf.extend_from_slice(json.as_bytes());
        self
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.buf.extend_from_slice(b"}\n");
        self.buf
    }
}
