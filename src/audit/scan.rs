//! Audit event lines, scanned: one pass over a line, on the [`crate::json_lex`] core, that checks
//! it as strictly as [`strict_json::parse`] does and hands each top-level member to its reader,
//! the key named by one of the [`Known`] keys the stages write. [`chain_fields`] is that pass for
//! `sc-report --verify`, which reads only `prev` and `seq`; the report's event scanner is built on
//! [`event_members`] too.
//!
//! [`strict_json::parse`]: crate::strict_json::parse

use crate::json_lex::{Keys, Lexer};

/// Deeper than this, a line is left to the strict reader (whose own limit is 128).
pub(crate) const MAX_DEPTH: usize = 64;

/// The top-level keys of the events the stages write, each tracked by one bit so that a repeat is
/// seen without comparing strings; any other key goes to a [`Keys`]. A key of this list can never
/// equal one of the others, so the two together refuse every duplicate.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
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
    /// The grants that allowed a call (a decision event's `grants`).
    Grants,
    /// The backend an `exec` event's call ran (`backend`).
    Backend,
    /// What a `state` event did (`action`: `reset`, `init`).
    Action,
}

impl Known {
    #[inline]
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
            "grants" => Known::Grants,
            "backend" => Known::Backend,
            "action" => Known::Action,
            _ => return None,
        })
    }
}

/// The whole line (valid UTF-8): one object, nothing but white space after it, no key repeated at
/// any depth, nesting within [`MAX_DEPTH`]. `member` reads the value of each top-level key, given
/// as one of the [`Known`] keys or not (the lexer is at the value, after white space).
#[inline]
pub(crate) fn event_members<'a>(
    text: &'a str,
    mut member: impl FnMut(&mut Lexer<'a>, Option<Known>) -> Option<()>,
) -> Option<()> {
    let mut lexer = Lexer::new(text, MAX_DEPTH);
    lexer.skip_space();
    lexer.open(b'{')?;
    if !lexer.close_if_empty(b'}') {
        let mut known_seen = 0u32;
        let mut others = Keys::new();
        loop {
            lexer.skip_space();
            let key = lexer.plain_key()?;
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
            lexer.skip_space();
            member(&mut lexer, known)?;
            if lexer.end_of_member(b'}')? {
                break;
            }
        }
    }
    lexer.at_end().then_some(())
}

/// What `sc-report --verify` reads of a line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ChainFields<'a> {
    /// `prev` when it is a string.
    pub prev: Option<&'a str>,
    /// `seq` when it is a whole number that fits in 64 bits.
    pub seq: Option<u64>,
}

/// Checks that a line (valid UTF-8) is one JSON object, as strictly as the event scanner does,
/// and reads its `prev` and `seq`; `None` when a full parser must decide. What it accepts, any
/// JSON parser accepts, with the same `prev` and `seq` (no key is repeated).
pub(crate) fn chain_fields(text: &str) -> Option<ChainFields<'_>> {
    let mut fields = ChainFields {
        prev: None,
        seq: None,
    };
    event_members(text, |lexer, key| {
        match key {
            Some(Known::Prev) if lexer.peek() == Some(b'"') => {
                let token = lexer.string()?;
                if token.escaped {
                    return None;
                }
                fields.prev = Some(token.inner);
            }
            Some(Known::Seq) if matches!(lexer.peek(), Some(b'-' | b'0'..=b'9')) => {
                let start = lexer.at();
                lexer.number()?;
                let digits = lexer.since(start);
                // A sign or a fraction is left to the full parser, which knows what it makes of
                // them; so is a number too large for 64 bits.
                if !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                fields.seq = Some(digits.parse().ok()?);
            }
            _ => lexer.value()?,
        }
        Some(())
    })?;
    Some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_at_any_depth_are_left_to_a_full_parser() {
        for text in [
            r#"{"id":"a","stage":"gate","id":"b"}"#,
            r#"{"x":1,"stage":"gate","x":2}"#,
            r#"{"seq":1,"prev":"00","seq":2}"#,
            r#"{"id":"a","call":{"agent":"a","tool":"t","agent":"b"}}"#,
            r#"{"id":"a","outcome":{"status":"failed","status":"executed"}}"#,
            r#"{"id":"a","e":{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k3":2}}"#,
        ] {
            assert!(chain_fields(text).is_none(), "{text}");
        }
    }

    #[test]
    fn reads_prev_and_seq_and_leaves_the_unusual_to_a_full_parser() {
        assert_eq!(
            chain_fields(r#" {"stage":"gate","seq":7,"x":[{}],"prev":"00ff"} "#),
            Some(ChainFields {
                prev: Some("00ff"),
                seq: Some(7)
            })
        );
        assert_eq!(
            chain_fields(r#"{"seq":"7","prev":null}"#),
            Some(ChainFields {
                prev: None,
                seq: None
            })
        );
        for text in [
            r#"{"seq":-1}"#,
            r#"{"seq":1.0}"#,
            r#"{"seq":18446744073709551616}"#,
            r#"{"prev":"0\u0030"}"#,
            r#"{"seq":1} {}"#,
            r#"[{"seq":1}]"#,
        ] {
            assert!(chain_fields(text).is_none(), "{text}");
        }
        assert_eq!(
            chain_fields(r#"{"seq":18446744073709551615}"#).and_then(|f| f.seq),
            Some(u64::MAX)
        );
    }
}
