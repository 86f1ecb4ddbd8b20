//! How much JSON a hook input may hold. Its bytes are bounded ([`super::input::MAX_INPUT_BYTES`]),
//! but every value of it is copied into a tree several times on the way to a decision, so 2 MB
//! of `[1,1,…]` once took a gigabyte: an input made to be large would have the kernel kill the
//! hook, which Claude Code, Codex and Gemini CLI read as no answer, and run the call. So the
//! values are counted first, in one pass that allocates nothing, and an input of more than
//! [`MAX_INPUT_VALUES`] is refused as the agent blocks a call.
//!
//! A tool's response (`tool_response`, Copilot CLI's `toolResult`, Cursor's `tool_output`,
//! `result_json`, `output`) is not the call: the tool already ran, and refusing its after-event
//! would leave the session untainted. A response too large to read is put aside instead (a
//! string says so): the session is still tainted by an untrusted tool, the call recorded as
//! ran, and none of the response's values become trusted.

use std::borrow::Cow;

use anyhow::{bail, Result};

use crate::json_lex::Lexer;

/// The most JSON values (each element, member value, object and array) a hook input is read
/// with, a tool's response aside: a call's arguments hold a few dozen.
pub(crate) const MAX_INPUT_VALUES: usize = 100_000;

/// The keys under which the agents give a tool's response.
const RESPONSE_KEYS: [&str; 5] = [
    "tool_response",
    "toolResult",
    "tool_output",
    "result_json",
    "output",
];

/// What a response too large to read is replaced with.
const RESPONSE_PUT_ASIDE: &str =
    "\"sc-hook: the response holds over 100000 JSON values and was not read\"";

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
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(refused());
    };
    // The top-level members, each with where its value starts and ends.
    let mut members: Vec<(&str, usize, usize)> = Vec::new();
    let mut lexer = Lexer::new(text, 128);
    lexer.skip_space();
    let read = lexer.object(|lexer, key| {
        let start = lexer.at();
        lexer.value()?;
        members.push((key, start, lexer.at()));
        Some(())
    });
    if read.is_none() || !lexer.at_end() {
        return Err(refused());
    }
    let response = members
        .iter()
        .filter(|(key, _, _)| RESPONSE_KEYS.contains(key))
        .max_by_key(|(_, start, end)| count_values(&bytes[*start..*end]));
    let Some(&(_, start, end)) = response else {
        return Err(refused());
    };
    let rest = values - count_values(&bytes[start..end]) + 1;
    if rest > MAX_INPUT_VALUES {
        bail!(
            "the hook input holds about {rest} JSON values besides the tool's response, over the {MAX_INPUT_VALUES} sc-hook reads"
        );
    }
    let mut aside = Vec::with_capacity(bytes.len() - (end - start) + RESPONSE_PUT_ASIDE.len());
    aside.extend_from_slice(&bytes[..start]);
    aside.extend_from_slice(RESPONSE_PUT_ASIDE.as_bytes());
    aside.extend_from_slice(&bytes[end..]);
    Ok(Cow::Owned(aside))
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
