//! Names in a policy: tool patterns, what makes a name unseeable, and the did-you-mean of every
//! key and choice. Shared by the policy and the argument rules, and below both.

use serde_json::Value;

/// A tool name or a prefix pattern (`mcp__github__*`).

/// Refuses a name in the policy with white space at either end, or a control or invisible
/// character anywhere: names compare exactly, so such a name would never match the name a tool or
/// agent is called by, and the rule its author meant would silently not apply.
pub(crate) fn unseen_characters(name: &str) -> Result<(), String> {
    let shown = crate::sanitize::quoted(name);
    if name.trim() != name {
        return Err(format!(
            "\"{shown}\" has white space at its start or end; names are compared exactly"
        ));
    }
    if name.chars().any(crate::sanitize::is_invisible) {
        return Err(format!(
            "\"{shown}\" holds a control or invisible character; names are compared exactly"
        ));
    }
    Ok(())
}

/// Whether a character cannot be seen: a control, zero-width, bidi or other invisible character
/// (those [`crate::sanitize`] escapes for a terminal).

/// One of a few string values, spelt exactly; anything else is an error naming the choices,
/// with the nearest one suggested (`"Crew"`: did you mean "crew"?).
pub(crate) fn one_of<T: Copy>(
    key: &str,
    value: &Value,
    choices: &[(&str, T)],
) -> Result<T, String> {
    if let Some((_, choice)) = choices
        .iter()
        .find(|(name, _)| value.as_str() == Some(*name))
    {
        return Ok(*choice);
    }
    let names: Vec<String> = choices
        .iter()
        .map(|(name, _)| format!("\"{name}\""))
        .collect();
    let expected = match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "nothing".to_owned(),
    };
    let hint = value
        .as_str()
        .and_then(|text| {
            choices
                .iter()
                .map(|(name, _)| {
                    (
                        strsim::damerau_levenshtein(&text.to_lowercase(), name),
                        name,
                    )
                })
                .min()
                .filter(|(distance, _)| *distance <= 2)
        })
        .map(|(_, name)| format!("; did you mean \"{name}\"?"))
        .unwrap_or_default();
    let found = crate::sanitize::quoted(&value.to_string()).into_owned();
    Err(format!(
        "key `{key}`: expected {expected}, found {found}{hint}"
    ))
}

/// The known name nearest to an unknown one (at most four edits away), for "did you mean …?".
pub fn did_you_mean<'k>(unknown: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|name| (strsim::damerau_levenshtein(unknown, name), *name))
        .min()
        .filter(|(distance, _)| *distance <= 4)
        .map(|(_, name)| name)
}
