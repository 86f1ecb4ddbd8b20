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
use crate::json_lex::{Keys, Lexer};
use crate::strict_json;

/// Reads a call from its trimmed text, or `None` when the reference path must.
pub(super) fn call(text: &str) -> Option<Call> {
    let mut slot = None;
    call_into(text, &mut slot).then(|| slot.expect("a call was read into it"))
}

/// [`call`], reading the call into `slot`, in the buffers of the call it holds when it holds one
/// (a call read before and done with), so that a stream of calls reuses a few buffers instead of
/// allocating its text anew for each. The call read is the same as [`call`] reads, whatever
/// `slot` held; `false` leaves `slot` holding no call of `text`.
pub(super) fn call_into(text: &str, slot: &mut Option<Call>) -> bool {
    read_into(text, slot).is_some()
}

fn read_into(text: &str, slot: &mut Option<Call>) -> Option<()> {
    let mut lexer = Lexer::new(text, MAX_CALL_DEPTH);
    lexer.skip_space();
    let fields = call_fields(&mut lexer)?;
    if !lexer.at_end() {
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
        None => (None, None),
        Some((args_text, amount, keys_may_fold)) => {
            let (amount, amount_text) = match amount {
                // Built as the reference parser builds it, from the text as written.
                Some(raw) => {
                    let value = strict_json::parse(raw).ok()?;
                    let text = value.is_number().then_some(raw);
                    (Some(value), text)
                }
                None => (None, None),
            };
            (Some((args_text, amount, keys_may_fold)), amount_text)
        }
    };
    let Some(call) = slot.as_mut() else {
        *slot = Some(Call {
            agent: agent.into_owned(),
            tool: tool.into_owned(),
            args: match args {
                None => Args::default(),
                Some((text, amount, keys_may_fold)) => {
                    Args::from_checked_text(text, amount, keys_may_fold)
                }
            },
            provenance,
            instruction: fields.instruction.map(Cow::into_owned),
            amount_text: amount_text.map(str::to_owned),
            cwd: fields.cwd.map(Cow::into_owned),
        });
        return Some(());
    };
    refill(&mut call.agent, &agent);
    refill(&mut call.tool, &tool);
    match args {
        None => call.args = Args::default(),
        Some((text, amount, keys_may_fold)) => {
            call.args.refill_checked_text(text, amount, keys_may_fold)
        }
    }
    call.provenance = provenance;
    refill_option(&mut call.instruction, fields.instruction.as_deref());
    refill_option(&mut call.amount_text, amount_text);
    refill_option(&mut call.cwd, fields.cwd.as_deref());
    Some(())
}

/// `value` into `slot`, in the buffer it has.
fn refill(slot: &mut String, value: &str) {
    slot.clear();
    slot.push_str(value);
}

/// `value` into `slot`, in the buffer it has when it has one.
fn refill_option(slot: &mut Option<String>, value: Option<&str>) {
    match (slot.as_mut(), value) {
        (Some(buffer), Some(value)) => refill(buffer, value),
        (None, Some(value)) => *slot = Some(value.to_owned()),
        (_, None) => *slot = None,
    }
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

/// The call object, at its `{`.
fn call_fields<'a>(lexer: &mut Lexer<'a>) -> Option<Fields<'a>> {
    let mut fields = Fields::default();
    // A key the call reads is a repeat when its slot is filled; only the others need a set.
    let mut others = Keys::new();
    lexer.object_refusing_repeats_itself(|lexer, key| {
        let slot = match key {
            "agent" => &mut fields.agent,
            "tool" => &mut fields.tool,
            "source" => &mut fields.source,
            "instruction" => &mut fields.instruction,
            "cwd" => &mut fields.cwd,
            // A `task` or `result` record (value provenance), not a call: the reader that tells
            // them apart takes it.
            "kind" => return None,
            "args" if fields.args.is_none() => {
                fields.args = Some(args(lexer)?);
                return Some(());
            }
            "args" => return None,
            _ if others.insert(key) => return lexer.value(),
            _ => return None,
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(lexer.string()?.value());
        Some(())
    })?;
    Some(fields)
}

/// The args object, at its `{`: its text, the text of its `amount` member, and whether a key of
/// it, at any depth, has an upper-case letter, a DEL (which JSON lets stand unescaped, and which
/// folding drops as invisible) or a non-ASCII character (keys with escapes are left to the
/// reference path).
fn args<'a>(lexer: &mut Lexer<'a>) -> Option<(&'a str, Option<&'a str>, bool)> {
    let start = lexer.at();
    let mut amount = None;
    let mut keys_may_fold = false;
    let mut see = |key: &str| {
        if !keys_may_fold {
            keys_may_fold = key.bytes().any(|b| b >= 0x7f || b.is_ascii_uppercase());
        }
    };
    lexer.object(|lexer, key| {
        see(key);
        let start = lexer.at();
        lexer.value_seeing_keys(&mut see)?;
        if key == "amount" {
            amount = Some(lexer.since(start));
        }
        Some(())
    })?;
    Some((lexer.since(start), amount, keys_may_fold))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_read_into_an_earlier_ones_buffers_is_the_call_read_afresh() {
        let lines = [
            r#"{"agent":"a","tool":"send_payment","args":{"amount":500,"to":"x"},"source":"user","instruction":"pay","cwd":"/w"}"#,
            r#"{"agent":"bee","tool":"t"}"#,
            r#"{"agent":"c\u00e9","tool":"fetch","args":{"url":"u"},"source":"web"}"#,
            r#"{"agent":"d","tool":"pay","args":{"amount":12.50},"source":"agent","instruction":"i"}"#,
            r#"{"agent":"e","tool":"f","args":{},"cwd":"/other"}"#,
        ];
        let mut slot: Option<Call> = None;
        for (i, line) in lines.iter().enumerate() {
            // Its map built first, as a rule that reads every argument leaves it.
            if let Some(call) = &slot {
                let _ = call.args.map();
            }
            assert!(call_into(line, &mut slot), "line {i}");
            let fresh = call(line).unwrap();
            let reused = slot.as_ref().unwrap();
            assert_eq!(reused, &fresh, "line {i}");
            assert_eq!(reused.amount_text, fresh.amount_text, "line {i}");
            assert_eq!(reused.args.text(), fresh.args.text(), "line {i}");
            assert_eq!(reused.args.amount(), fresh.args.amount(), "line {i}");
        }
        // A line that is no call leaves no call of it behind to be taken for one.
        assert!(!call_into(r#"{"agent":"a"}"#, &mut slot));
    }

    #[test]
    fn leaves_the_unusual_to_the_reference_path() {
        for text in [
            r#"{"agent":"a","tool":"t","n":1e2}"#,
            r#"{"agent":"a","tool":"t","\u0061":1}"#,
            r#"{"agent":"a","tool":"t","s":"\ud83d\ude00"}"#,
            r#"{"agent":"a","tool":"t","source":7}"#,
            r#"{"agent":"a","tool":"t","a":1,"a":2}"#,
            // A key the call reads, repeated: each has its own slot, so each is tried.
            r#"{"agent":"a","tool":"t","agent":"b"}"#,
            r#"{"agent":"a","tool":"t","tool":"t"}"#,
            r#"{"agent":"a","tool":"t","source":"user","x":1,"source":"user"}"#,
            r#"{"agent":"a","tool":"t","instruction":"i","instruction":"i"}"#,
            r#"{"agent":"a","tool":"t","cwd":"/w","cwd":"/w"}"#,
            r#"{"agent":"a","tool":"t","args":{},"args":{}}"#,
            r#"{"agent":"a","args":{"x":1},"tool":"t","args":{"x":1}}"#,
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
