//! Small helpers shared by the readers of the policy's keys: object checks with did-you-mean for
//! unknown keys, decisions, choices, string lists, and how agent-written text is shown in a
//! reason; and [`KeyError`], the error of every key's reader, which names the key path.

use std::fmt;

use serde_json::{Map, Value};

use super::names::did_you_mean;
use super::tools::{ItemError, PatternError, ToolPattern};
use crate::sanitize::{for_terminal, quoted};
use crate::strict_json::type_name;
use crate::verdict::Decision;

/// A problem at a key of the policy: the key path (`commands.rules[4].prefix`) and what is wrong
/// there, shown as ``key `PATH`: PROBLEM``. `P` is the reader's own problems ([`Problem`] for
/// those every reader has).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("key `{key}`: {problem}")]
pub struct KeyError<P = Problem> {
    pub key: String,
    pub problem: P,
}

/// A reader's problems: what they tell besides their sentence, and the [`KeyError`] of one.
pub trait KeyProblem: fmt::Display + Sized {
    /// The known name nearest to one that was not known, for a did-you-mean.
    fn suggestion(&self) -> Option<&str>;

    /// This problem at the key path `key`.
    fn at(self, key: impl Into<String>) -> KeyError<Self> {
        KeyError {
            key: key.into(),
            problem: self,
        }
    }
}

impl<P> KeyError<P> {
    /// This error of a reader given the key path `""`, moved under `parent` and `name`
    /// (`.prefix`, `[2]`): the path is made only when reading fails, so the hundreds of paths
    /// of a valid pack (read at every sc-hook call) are never built.
    pub(crate) fn within(self, parent: &str, name: &str) -> KeyError<P> {
        KeyError {
            key: format!("{parent}{name}{}", self.key),
            problem: self.problem,
        }
    }
}

/// The problems every key's reader has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A value of the wrong JSON type; `expected` says what the key takes (`an array of rules`).
    #[error("expected {expected}, found {found}")]
    Type {
        expected: &'static str,
        found: &'static str,
    },
    #[error(transparent)]
    UnknownKey(#[from] UnknownKey),
    /// Not a decision; the value found, as JSON text.
    #[error("expected \"allow\", \"hold\" or \"deny\", found {0}")]
    NotADecision(String),
    /// Not one of a key's few words (`found` is the value as JSON text); with the nearest, when
    /// one is near.
    #[error("expected {}, found {}{}", either(.choices), quoted(.found), hint(*.suggestion))]
    NotOneOf {
        choices: Vec<&'static str>,
        found: String,
        suggestion: Option<&'static str>,
    },
    #[error("is an empty string")]
    EmptyString,
    /// A `pathDefaults` entry for an argument `pathArguments` does not list for the tool.
    #[error("names argument `{0}`, which `pathArguments` does not list for this tool")]
    NotAPathArgument(String),
    /// A tool name of a `tools` map that is not a tool name or pattern.
    #[error("{tool:?} {problem}")]
    ToolName { tool: String, problem: PatternError },
    /// An item of a tool list that is not a tool name or pattern.
    #[error(transparent)]
    ToolItem(#[from] ItemError),
}

impl KeyProblem for Problem {
    fn suggestion(&self) -> Option<&str> {
        match self {
            Problem::UnknownKey(unknown) => unknown.suggestion,
            Problem::NotOneOf { suggestion, .. } => *suggestion,
            _ => None,
        }
    }
}

/// The value's type, for [`Problem::Type`].
pub(crate) fn wrong_type(expected: &'static str, found: &Value) -> Problem {
    Problem::Type {
        expected,
        found: type_name(found),
    }
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
fn either(choices: &[&str]) -> String {
    let names: Vec<String> = choices.iter().map(|name| format!("\"{name}\"")).collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "nothing".to_owned(),
    }
}

fn hint(suggestion: Option<&str>) -> String {
    suggestion
        .map(|name| format!("; did you mean \"{name}\"?"))
        .unwrap_or_default()
}

/// A key an object may not hold: `unknown key `x`; did you mean `y`?`, or the list of known keys
/// when none is near.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UnknownKey {
    pub unknown: String,
    /// The known key nearest to it, when one is near.
    pub suggestion: Option<&'static str>,
    pub known: &'static [&'static str],
}

impl UnknownKey {
    /// `unknown` among `known`, with the nearest known key (at most four edits away).
    pub(crate) fn new(unknown: &str, known: &'static [&'static str]) -> UnknownKey {
        UnknownKey {
            unknown: unknown.to_owned(),
            suggestion: did_you_mean(unknown, known),
            known,
        }
    }
}

impl fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let unknown = &self.unknown;
        match self.suggestion {
            Some(known) => write!(f, "unknown key `{unknown}`; did you mean `{known}`?"),
            None => {
                let known: Vec<String> = self.known.iter().map(|k| format!("`{k}`")).collect();
                write!(
                    f,
                    "unknown key `{unknown}`; the known keys are {}",
                    known.join(", ")
                )
            }
        }
    }
}

/// The object at `key`, with every key in `known` (an unknown key is an error naming the nearest
/// known one).
pub(crate) fn object<'v>(
    key: &str,
    value: &'v Value,
    known: &'static [&'static str],
) -> Result<&'v Map<String, Value>, KeyError> {
    let Value::Object(object) = value else {
        return Err(wrong_type("an object", value).at(key));
    };
    if let Some(unknown) = object.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(Problem::UnknownKey(UnknownKey::new(unknown, known)).at(key));
    }
    Ok(object)
}

/// `"allow"`, `"hold"` or `"deny"`.
pub(crate) fn decision(key: &str, value: &Value) -> Result<Decision, KeyError> {
    value
        .as_str()
        .and_then(Decision::parse)
        .ok_or_else(|| Problem::NotADecision(value.to_string()).at(key))
}

/// One of a few string values, spelt exactly; anything else is an error naming the choices,
/// with the nearest one suggested (`"Crew"`: did you mean "crew"?).
pub(crate) fn one_of<T: Copy>(
    key: &str,
    value: &Value,
    choices: &[(&'static str, T)],
) -> Result<T, KeyError> {
    if let Some((_, choice)) = choices
        .iter()
        .find(|(name, _)| value.as_str() == Some(*name))
    {
        return Ok(*choice);
    }
    let suggestion = value.as_str().and_then(|text| {
        choices
            .iter()
            .map(|(name, _)| {
                (
                    strsim::damerau_levenshtein(&text.to_lowercase(), name),
                    *name,
                )
            })
            .min()
            .filter(|(distance, _)| *distance <= 2)
            .map(|(_, name)| name)
    });
    Err(Problem::NotOneOf {
        choices: choices.iter().map(|(name, _)| *name).collect(),
        found: value.to_string(),
        suggestion,
    }
    .at(key))
}

/// A non-empty string.
pub(crate) fn string<'v>(key: &str, value: &'v Value) -> Result<&'v str, KeyError> {
    match value {
        Value::String(text) if !text.is_empty() => Ok(text),
        Value::String(_) => Err(Problem::EmptyString.at(key)),
        other => Err(wrong_type("a string", other).at(key)),
    }
}

/// An array of strings (possibly empty).
pub(crate) fn strings<'v>(key: &str, value: &'v Value) -> Result<Vec<&'v str>, KeyError> {
    let Value::Array(items) = value else {
        return Err(wrong_type("an array of strings", value).at(key));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            item.as_str()
                .ok_or_else(|| wrong_type("a string", item).at(format!("{key}[{index}]")))
        })
        .collect()
}

/// The longest piece of a command or path a reason quotes before cutting it with `…`.
pub(crate) const SHOWN_CHARS: usize = 160;

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

/// A `tools` map of the `commands`, `paths` or `fetch` key: tool name or pattern → the `args`
/// key that holds the command, the path or the URL.
pub(crate) fn tool_map(key: &str, value: &Value) -> Result<Vec<(ToolPattern, String)>, KeyError> {
    let expected = "an object mapping tool names to argument names";
    tool_entries(key, value, expected, |at, arg| {
        string(at, arg).map(str::to_owned)
    })
}

/// An object whose keys are tool names or patterns, each value read by `read` (given the
/// value's key path); `expected` says what the object is, for a value that is not one.
pub(crate) fn tool_entries<T>(
    key: &str,
    value: &Value,
    expected: &'static str,
    read: impl Fn(&str, &Value) -> Result<T, KeyError>,
) -> Result<Vec<(ToolPattern, T)>, KeyError> {
    let Value::Object(entries) = value else {
        return Err(wrong_type(expected, value).at(key));
    };
    entries
        .iter()
        .map(|(tool, entry)| {
            let pattern = ToolPattern::parse(tool).map_err(|problem| {
                Problem::ToolName {
                    tool: tool.clone(),
                    problem,
                }
                .at(key)
            })?;
            Ok((pattern, read(&format!("{key}.{tool}"), entry)?))
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
            err.to_string(),
            "key `commands`: unknown key `rule`; did you mean `rules`?"
        );
        assert_eq!(err.problem.suggestion(), Some("rules"));
        let err = UnknownKey::new("zzzzzzzzzz", &["rules", "tools"]).to_string();
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
