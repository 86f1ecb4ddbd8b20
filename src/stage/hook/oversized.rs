//! An input over [`MAX_INPUT_BYTES`]. Refused whole, an
//! after-event whose tool answered with more than 32 MiB (a page, a file, a server's result)
//! left its session untainted: the next call was judged as if nothing untrusted had been read.
//! So such an input is read on as a stream, each top-level response member's value
//! ([`RESPONSE_KEYS`](super::bounded::RESPONSE_KEYS), escaped or not) is dropped as it passes, the put-aside
//! string written in its place, and only the rest is kept: at most 32 MiB, however long the
//! response. Anything else that long (a call's arguments, text that is not one JSON object, a
//! bracket that does not pair) is refused as before.
//!
//! The scan checks only what it needs to find the members: strings and their escapes, the
//! brackets each value owes, the object's own punctuation. What it keeps goes to the strict
//! parser after it, which refuses anything else malformed.

use std::io::{BufRead, BufReader, Read};

use anyhow::{bail, Context, Result};

use super::bounded::{is_response_key, MAX_RESPONSE_KEY, RESPONSE_PUT_ASIDE};

/// The largest hook input read, a tool's response aside (a `Write` carries the whole file):
/// 32 MiB.
pub(crate) const MAX_INPUT_BYTES: usize = 32 << 20;

/// The deepest a dropped response may nest: its owed brackets are kept, one byte each.
const MAX_DEPTH: usize = 1 << 20;

/// Where the scan stands in the top-level object.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum At {
    /// Before its `{`.
    Open,
    /// After `{`: a key or `}`.
    FirstKey,
    /// After `,`: a key.
    Key,
    /// In a key (a string): its bytes are kept in `key`.
    InKey,
    /// After a key: `:`.
    Colon,
    /// After `:`: a value.
    Value,
    /// In a string value.
    InString,
    /// In an array or object value: `owed` holds its closing brackets.
    InBrackets,
    /// In a string within brackets.
    InNestedString,
    /// In a number or literal.
    InToken,
    /// After a value: `,` or `}`.
    Next,
    /// After the closing `}`: only white space.
    End,
}

/// The input with its responses put aside: `prefix` (what was read already) and then the rest of
/// `input`, to its end.
pub(super) fn without_responses(prefix: Vec<u8>, input: impl Read) -> Result<Vec<u8>> {
    let mut scan = Scan {
        at: At::Open,
        escaped: false,
        key: Vec::new(),
        dropping: false,
        owed: Vec::new(),
        kept: Vec::new(),
    };
    let mut input = BufReader::with_capacity(64 << 10, std::io::Cursor::new(prefix).chain(input));
    loop {
        let chunk = input.fill_buf().context("cannot read the hook input")?;
        if chunk.is_empty() {
            break;
        }
        let len = chunk.len();
        scan.feed(chunk)?;
        input.consume(len);
    }
    if scan.at != At::End {
        bail!("the hook input is over {MAX_INPUT_BYTES} bytes and ends before its JSON object");
    }
    Ok(scan.kept)
}

struct Scan {
    at: At,
    /// The byte before was a `\` in a string.
    escaped: bool,
    /// The key being read, as written, up to one byte past the longest a response key may be.
    key: Vec<u8>,
    /// Whether the value being read is a response's, dropped.
    dropping: bool,
    owed: Vec<u8>,
    kept: Vec<u8>,
}

/// What becomes of a byte.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Byte {
    Kept,
    Dropped,
    /// The first of a response's value: dropped, the put-aside string kept for the value.
    PutAside,
}

impl Scan {
    fn feed(&mut self, chunk: &[u8]) -> Result<()> {
        for &byte in chunk {
            match self.step(byte)? {
                Byte::Kept => self.kept.push(byte),
                Byte::Dropped => {}
                Byte::PutAside => self.kept.extend_from_slice(RESPONSE_PUT_ASIDE.as_bytes()),
            }
        }
        if self.kept.len() > MAX_INPUT_BYTES {
            bail!("the hook input is over {MAX_INPUT_BYTES} bytes besides its tool's response");
        }
        Ok(())
    }

    /// Takes one byte.
    fn step(&mut self, byte: u8) -> Result<Byte> {
        let within = if self.dropping {
            Byte::Dropped
        } else {
            Byte::Kept
        };
        match self.at {
            At::InKey | At::InString | At::InNestedString => {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.at = match self.at {
                        At::InKey => At::Colon,
                        At::InString => return Ok(self.value_ended(within)),
                        _ => At::InBrackets,
                    };
                    return Ok(within);
                }
                // Kept up to one byte past the longest a response key may be written.
                if self.at == At::InKey && self.key.len() <= 6 * MAX_RESPONSE_KEY {
                    self.key.push(byte);
                }
                return Ok(within);
            }
            _ if matches!(byte, b' ' | b'\t' | b'\n' | b'\r') => {
                if self.at == At::InToken {
                    return Ok(self.value_ended(Byte::Kept));
                }
                return Ok(within);
            }
            _ => {}
        }
        match (self.at, byte) {
            (At::Open, b'{') => self.at = At::FirstKey,
            (At::FirstKey, b'}') => self.at = At::End,
            (At::FirstKey | At::Key, b'"') => {
                self.key.clear();
                self.at = At::InKey;
            }
            (At::Colon, b':') => self.at = At::Value,
            (At::Value, _) => {
                self.dropping = is_response_key(&self.key);
                match byte {
                    b'"' => self.at = At::InString,
                    b'[' | b'{' => {
                        self.owed.push(closing(byte));
                        self.at = At::InBrackets;
                    }
                    _ if is_token(byte) => self.at = At::InToken,
                    _ => bail!(unreadable(byte)),
                }
                return Ok(if self.dropping {
                    Byte::PutAside
                } else {
                    Byte::Kept
                });
            }
            (At::InBrackets, b'"') => self.at = At::InNestedString,
            (At::InBrackets, b'[' | b'{') => {
                if self.owed.len() >= MAX_DEPTH {
                    bail!(
                        "the hook input is over {MAX_INPUT_BYTES} bytes and nests deeper than {MAX_DEPTH}"
                    );
                }
                self.owed.push(closing(byte));
            }
            (At::InBrackets, b']' | b'}') => {
                if self.owed.pop() != Some(byte) {
                    bail!(unreadable(byte));
                }
                if self.owed.is_empty() {
                    return Ok(self.value_ended(within));
                }
            }
            (At::InBrackets, _) => {}
            (At::InToken, _) if is_token(byte) => {}
            (At::InToken, b',' | b'}') => {
                self.value_ended(Byte::Kept);
                return self.step(byte);
            }
            (At::Next, b',') => self.at = At::Key,
            (At::Next, b'}') => self.at = At::End,
            _ => bail!(unreadable(byte)),
        }
        Ok(within)
    }

    /// The value ended with a byte that becomes `byte`: what follows is kept.
    fn value_ended(&mut self, byte: Byte) -> Byte {
        self.at = At::Next;
        self.dropping = false;
        byte
    }
}

fn closing(open: u8) -> u8 {
    if open == b'[' {
        b']'
    } else {
        b'}'
    }
}

fn is_token(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'-' | b'.')
}

fn unreadable(byte: u8) -> String {
    format!(
        "the hook input is over {MAX_INPUT_BYTES} bytes and is not one JSON object (at {:?})",
        char::from(byte)
    )
}

#[cfg(test)]
#[path = "oversized_tests.rs"]
mod tests;
