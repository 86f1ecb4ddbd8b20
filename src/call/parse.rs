//! Reading a call from a line: the one-pass scanner first, the strict parser for the rest.

use super::model::{deeper_than, Call, Malformed, MAX_CALL_DEPTH};
use super::scan;
use crate::strict_json;

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
    pub(crate) fn scan_line(line: &[u8]) -> Option<(Call, &str)> {
        let text = simdutf8::basic::from_utf8(line).ok()?;
        let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        scan::call(text).map(|call| (call, text))
    }

    /// [`Call::scan_line`], reading the call into `slot` in place (into the buffers of the call
    /// it holds, when it holds one: sc-gate reads every call into the same one). Returns the
    /// call's trimmed text; on `None`, what `slot` holds is no call of this line.
    pub(crate) fn scan_line_into<'a>(line: &'a [u8], slot: &mut Option<Call>) -> Option<&'a str> {
        let text = simdutf8::basic::from_utf8(line).ok()?;
        let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        scan::call_into(text, slot).then_some(text)
    }

    /// [`Call::parse_line`] for text that is UTF-8 already (a record's `call` member).
    pub(crate) fn parse_text(text: &str) -> Result<(Call, &str), Malformed> {
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
}
