//! How much JSON a hook input may hold. Its bytes are bounded ([`super::oversized::MAX_INPUT_BYTES`],
//! a tool's response aside: [`super::oversized`]),
//! but every value of it is copied into a tree several times on the way to a decision, so 2 MB
//! of `[1,1,…]` once took a gigabyte: an input made to be large would have the kernel kill the
//! hook, which Claude Code, Codex and Gemini CLI read as no answer, and run the call. So the
//! values are counted first, in one pass that allocates nothing, and an input of more than
//! [`MAX_INPUT_VALUES`] is refused as the agent blocks a call.
//!
//! A tool's response (`tool_response`, Copilot CLI's `toolResult`, Cursor's `tool_output`,
//! `result_json`, `output`) is not the call: the tool already ran, and refusing its after-event
//! would leave the session untainted. A response too large to read, or one the parser cannot
//! read (nested deeper than it goes, a lone surrogate `\ud800`), is put aside instead (a string
//! says so): the session is still tainted by an untrusted tool, the call recorded as ran, and
//! none of the response's values are taken. The top-level members are found by counting
//! brackets outside strings, at any depth.

use std::borrow::Cow;

use anyhow::{bail, Result};

/// The most JSON values (each element, member value, object and array) a hook input is read
/// with, a tool's response aside: a call's arguments hold a few dozen.
pub(crate) const MAX_INPUT_VALUES: usize = 100_000;

/// The keys under which the agents give a tool's response.
pub(super) const RESPONSE_KEYS: [&str; 5] = [
    "tool_response",
    "toolResult",
    "tool_output",
    "result_json",
    "output",
];

/// What a response too large or unreadable is replaced with.
pub(super) const RESPONSE_PUT_ASIDE: &str =
    "\"sc-hook: the response was too large or unreadable and was not read\"";

/// The input as sc-hook reads it: with its tool's response put aside when the response holds
/// too many values ([`bounded`]), or cannot be read as JSON at all (nested deeper than the
/// parser goes, a lone surrogate) while the rest can: the after-event must still taint its
/// session. Anything else unreadable is left for the parser to refuse.
pub(super) fn readable(bytes: Vec<u8>) -> Result<Vec<u8>> {
    let bytes = match bounded(&bytes)? {
        Cow::Borrowed(_) => bytes,
        Cow::Owned(aside) => aside,
    };
    // Only an input with a response is looked at again (an after-event): a call's input is
    // parsed once, by the reader, on the path every call takes.
    let Some(responses) = response_spans(&bytes).filter(|spans| !spans.is_empty()) else {
        return Ok(bytes);
    };
    if is_json(&bytes) {
        return Ok(bytes);
    }
    let aside = put_aside(&bytes, &responses);
    Ok(if is_json(&aside) { aside } else { bytes })
}

/// Whether the text is one JSON document the hook's strict parser reads (its syntax, depth,
/// escapes, no key twice). Its values are bounded by now, so the tree it builds is too.
fn is_json(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|text| crate::strict_json::parse(text).is_ok())
}

/// The input, or the input with its tool's response put aside, when it holds at most
/// [`MAX_INPUT_VALUES`] values besides; else the error that refuses it.
pub(super) fn bounded(bytes: &[u8]) -> Result<Cow<'_, [u8]>> {
    let values = count_values(bytes);
    if values <= MAX_INPUT_VALUES {
        return Ok(Cow::Borrowed(bytes));
    }
    let refused = || {
        anyhow::anyhow!(
            "the hook input holds about {values} JSON values, over the {MAX_INPUT_VALUES} sc-hook reads"
        )
    };
    let Some(responses) = response_spans(bytes).filter(|spans| !spans.is_empty()) else {
        return Err(refused());
    };
    let response_values: usize = responses
        .iter()
        .map(|&(start, end)| count_values(&bytes[start..end]) - 1)
        .sum();
    let rest = values - response_values;
    if rest > MAX_INPUT_VALUES {
        bail!(
            "the hook input holds about {rest} JSON values besides the tool's response, over the {MAX_INPUT_VALUES} sc-hook reads"
        );
    }
    Ok(Cow::Owned(put_aside(bytes, &responses)))
}

/// Whether a key as written (between its quotes, escapes and all) names a tool's response.
pub(super) fn is_response_key(raw: &[u8]) -> bool {
    if !raw.contains(&b'\\') {
        return RESPONSE_KEYS.iter().any(|name| name.as_bytes() == raw);
    }
    // Escaped (`"tool\u005fresponse"`): read as the parser reads it; no response key is longer
    // than its own length six times over (each character a `\uXXXX`).
    if raw.len() > 6 * MAX_RESPONSE_KEY {
        return false;
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted).is_ok_and(|key| RESPONSE_KEYS.contains(&key.as_str()))
}

/// The length of the longest of [`RESPONSE_KEYS`].
pub(super) const MAX_RESPONSE_KEY: usize = {
    let (mut at, mut longest) = (0, 0);
    while at < RESPONSE_KEYS.len() {
        if RESPONSE_KEYS[at].len() > longest {
            longest = RESPONSE_KEYS[at].len();
        }
        at += 1;
    }
    longest
};

fn put_aside(bytes: &[u8], responses: &[(usize, usize)]) -> Vec<u8> {
    let mut aside = Vec::with_capacity(bytes.len());
    let mut from = 0;
    for &(start, end) in responses {
        aside.extend_from_slice(&bytes[from..start]);
        aside.extend_from_slice(RESPONSE_PUT_ASIDE.as_bytes());
        from = end;
    }
    aside.extend_from_slice(&bytes[from..]);
    aside
}

/// Where the values of the top-level members named by [`RESPONSE_KEYS`] start and end, found by
/// counting brackets outside strings (any depth, nothing allocated per value); `None` for a
/// text that is not one JSON object.
fn response_spans(bytes: &[u8]) -> Option<Vec<(usize, usize)>> {
    let mut spans = Vec::new();
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_space(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return (skip_space(bytes, at + 1) == bytes.len()).then_some(spans);
    }
    loop {
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(bytes, at)?;
        let key = &bytes[at + 1..key_end - 1];
        at = skip_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_space(bytes, at + 1);
        let end = value_end(bytes, start)?;
        if is_response_key(key) {
            spans.push((start, end));
        }
        at = skip_space(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = skip_space(bytes, at + 1),
            Some(b'}') => {
                return (skip_space(bytes, at + 1) == bytes.len()).then_some(spans);
            }
            _ => return None,
        }
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Just past the string that opens at `at` (its `"`).
fn string_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    at += 1;
    loop {
        at += crate::json_lex::plain_run(bytes.get(at..)?);
        match bytes.get(at)? {
            b'"' => return Some(at + 1),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
}

/// Just past the value that starts at `at`: a string; an array or object, each closing bracket
/// the one its opening bracket needs; or one token of a number or literal. `None` for anything
/// else (an empty value, brackets that do not pair, text after a token), so that a value never
/// takes in a member after it.
fn value_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    match *bytes.get(at)? {
        b'"' => return string_end(bytes, at),
        b'[' | b'{' => {}
        _ => {
            let token = bytes[at..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
                .count();
            return (token > 0).then_some(at + token);
        }
    }
    // The closing brackets owed, innermost last.
    let mut owed: Vec<u8> = Vec::new();
    loop {
        match *bytes.get(at)? {
            b'"' => {
                at = string_end(bytes, at)?;
                continue;
            }
            b'[' => owed.push(b']'),
            b'{' => owed.push(b'}'),
            close @ (b']' | b'}') => {
                if owed.pop()? != close {
                    return None;
                }
                if owed.is_empty() {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
}

/// How many JSON values `bytes` holds, counted without reading them: one, and one more for each
/// `[`, `{` and `,` outside a string (an empty array or object counts one too many).
pub(super) fn count_values(bytes: &[u8]) -> usize {
    let mut count = 1;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                // To the closing quote, past escaped characters.
                at += 1;
                while at < bytes.len() {
                    at += crate::json_lex::plain_run(&bytes[at..]);
                    match bytes.get(at) {
                        Some(b'"') => break,
                        Some(b'\\') => at += 2,
                        Some(_) => at += 1,
                        None => {}
                    }
                }
            }
            b'[' | b'{' | b',' => count += 1,
            _ => {}
        }
        at += 1;
    }
    count
}

#[cfg(test)]
#[path = "bounded_tests.rs"]
mod tests;
