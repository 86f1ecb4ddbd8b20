//! Small helpers shared by the `commands` and `paths` keys: object checks with did-you-mean for
//! unknown keys, decisions, string lists, and how agent-written text is shown in a reason.

use serde_json::{Map, Value};

use super::tools::ToolPattern;
use crate::sanitize::for_terminal;
use crate::strict_json::type_name;
use crate::verdict::Decision;

/// The object at `key`, with every key in `known` (an unknown key is an error naming the nearest
/// known one).
pub(crate) fn object<'v>(
    key: &str,
    value: &'v Value,
    known: &[&str],
) -> Result<&'v Map<String, Value>, String> {
    let Value::Object(object) = value else {
        return Err(format!(
            "key `{key}`: expected an object, found {}",
            type_name(value)
        ));
    };
    if let Some(unknown) = object.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("key `{key}`: {}", unknown_key(unknown, known)));
    }
    Ok(object)
}

/// `unknown key `x`; did you mean `y`?`, or the list of known keys when none is near.
pub(crate) fn unknown_key(unknown: &str, known: &[&str]) -> String {
    let nearest = known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(unknown, k), *k))
        .min()
        .filter(|(distance, _)| *distance <= 4);
    match nearest {
        Some((_, k)) => format!("unknown key `{unknown}`; did you mean `{k}`?"),
        None => format!(
            "unknown key `{unknown}`; the known keys are {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `"allow"`, `"hold"` or `"deny"`.
pub(crate) fn decision(key: &str, value: &Value) -> Result<Decision, String> {
    value.as_str().and_then(Decision::parse).ok_or_else(|| {
        format!("key `{key}`: expected \"allow\", \"hold\" or \"deny\", found {value}")
    })
}

/// A non-empty string.
pub(crate) fn string<'v>(key: &str, value: &'v Value) -> Result<&'v str, String> {
    match value {
        Value::String(text) if !text.is_empty() => Ok(text),
        Value::String(_) => Err(format!("key `{key}`: is an empty string")),
        other => Err(format!(
            "key `{key}`: expected a string, found {}",
            type_name(other)
        )),
    }
}

/// An array of strings (possibly empty).
pub(crate) fn strings<'v>(key: &str, value: &'v Value) -> Result<Vec<&'v str>, String> {
    let Value::Array(items) = value else {
        return Err(format!(
            "key `{key}`: expected an array of strings, found {}",
            type_name(value)
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            item.as_str().ok_or_else(|| {
                format!(
                    "key `{key}[{index}]`: expected a string, found {}",
                    type_name(item)
                )
            })
        })
        .collect()
}

/// The longest piece of a command or path a reason quotes before cutting it with `…`.
pub const SHOWN_CHARS: usize = 160;

/// Agent-written text as a reason quotes it inside `"…"`: `\` and `"` escaped, newlines and
/// tabs shown as `\n` and `\t`, every other control, bidi and invisible character escaped
/// ([`for_terminal`]), and cut to [`SHOWN_CHARS`] characters.
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(SHOWN_CHARS * 2) + 2);
    for (count, c) in text.chars().enumerate() {
        if count == SHOWN_CHARS {
            out.push('…');
            break;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            // Printable ASCII is shown as it is, without a copy of its own.
            ' '..='~' => out.push(c),
            c => out.push_str(&for_terminal(c.encode_utf8(&mut [0; 4]))),
        }
    }
    out
}

/// A `tools` map of the `commands` or `paths` key: tool name or pattern → the `args` key that
/// holds the command or the path.
pub fn tool_map(key: &str, value: &Value) -> Result<Vec<(ToolPattern, String)>, String> {
    let Value::Object(entries) = value else {
        return Err(format!(
            "key `{key}`: expected an object mapping tool names to argument names, found {}",
            type_name(value)
        ));
    };
    entries
        .iter()
        .map(|(tool, arg)| {
            let pattern =
                ToolPattern::parse(tool).map_err(|why| format!("key `{key}`: {tool:?} {why}"))?;
            let arg = string(&format!("{key}.{tool}"), arg)?;
            Ok((pattern, arg.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_name_the_nearest_known_key() {
        let err = object(
            "commands",
            &serde_json::json!({"rule": []}),
            &["rules", "tools"],
        )
        .unwrap_err();
        assert_eq!(
            err,
            "key `commands`: unknown key `rule`; did you mean `rules`?"
        );
        let err = unknown_key("zzzzzzzzzz", &["rules", "tools"]);
        assert!(err.contains("the known keys are `rules`, `tools`"), "{err}");
    }

    #[test]
    fn shown_text_is_escaped_and_bounded() {
        assert_eq!(shown("rm -rf \"a b\"\n"), "rm -rf \\\"a b\\\"\\n");
        assert_eq!(shown("a\u{202e}b"), "a\\u{202e}b");
        let long = "x".repeat(1000);
        assert_eq!(shown(&long).chars().count(), SHOWN_CHARS + 1);
    }
}
