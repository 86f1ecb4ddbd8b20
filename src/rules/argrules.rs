//! Argument rules (`toolArgs`): a JSON Schema (draft 2020-12) per tool over its `args`, and
//! whether a tainted agent may use the tool freely inside that bound.
//!
//! ```json
//! "toolArgs": {"send_payment": {"schema": {"properties": {"to": {"enum": ["acme-travel"]}}}, "whenTainted": "allow"}}
//! ```
//!
//! The schema is what the tool may ever do: args outside it are denied, whoever asks. Inside it,
//! `whenTainted: "allow"` lets a tainted agent's call through (the author judged the bound
//! enough); `"hold"` (the default) keeps the taint hold. Every schema is checked against the
//! meta-schema and compiled once, at load; a bad regex or a `$ref` that leaves the document is a
//! load error, and nothing is ever fetched.
//!
//! `format` is checked, not only noted (`schema::FORMATS` lists the formats the validator knows). A
//! format it does not know is a load error: its author expects a check that would never happen.
//!
//! Numbers are compared exactly as written. A validator compares floats, and a float cannot hold
//! every decimal (`100.0000000000000000001` is the float 100), so a call's args for a tool with a
//! schema may only hold numbers that a float holds as written ([`crate::amount::read_exactly`]):
//! any other is denied, naming it. The policy's own numbers are held to the same rule at load.
//! Between numbers that are read exactly, the validator's float comparisons (`minimum`,
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `const`, `enum`) give the decimal answer,
//! and `multipleOf`, ours (`schema`), works on the decimals the floats print as, which
//! are then the decimals as written.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

pub use super::schema::SchemaError;

use super::keys::{one_of, wrong_type, KeyError, KeyProblem, Problem, UnknownKey};
#[cfg(test)]
use super::schema::FORMATS;
use super::schema::{location, Compiled};
use super::tools::{PatternError, ToolPattern};
use crate::call::fold_key;

/// What a tainted agent may do inside a tool's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WhenTainted {
    #[default]
    Hold,
    Allow,
}

/// One `toolArgs` entry, compiled.
#[derive(Clone)]
pub struct ArgRule {
    pub pattern: ToolPattern,
    pub schema: Value,
    pub when_tainted: WhenTainted,
    validator: Arc<Compiled>,
    /// The argument names the schema speaks of, by their folds ([`fold_key`]).
    names: HashMap<String, Vec<String>>,
}

impl fmt::Debug for ArgRule {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("ArgRule")
            .field("pattern", &self.pattern)
            .field("schema", &self.schema)
            .field("when_tainted", &self.when_tainted)
            .finish()
    }
}

impl PartialEq for ArgRule {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
            && self.schema == other.schema
            && self.when_tainted == other.when_tainted
    }
}

/// The argument names a schema speaks of (in `properties`, `required`, `dependentRequired` and
/// `dependentSchemas`, anywhere in it), by their folds ([`fold_key`]).
fn names_in_schema(schema: &Value) -> HashMap<String, Vec<String>> {
    fn add(names: &mut HashMap<String, Vec<String>>, name: &str) {
        let spellings = names.entry(fold_key(name).into_owned()).or_default();
        if !spellings.iter().any(|known| known == name) {
            spellings.push(name.to_owned());
        }
    }
    fn walk(value: &Value, names: &mut HashMap<String, Vec<String>>) {
        match value {
            Value::Object(object) => {
                for (keyword, value) in object {
                    match (keyword.as_str(), value) {
                        ("properties" | "dependentSchemas", Value::Object(named)) => {
                            named.keys().for_each(|name| add(names, name));
                        }
                        ("required", Value::Array(items)) => items
                            .iter()
                            .filter_map(Value::as_str)
                            .for_each(|name| add(names, name)),
                        ("dependentRequired", Value::Object(named)) => {
                            for (name, required) in named {
                                add(names, name);
                                if let Value::Array(items) = required {
                                    items
                                        .iter()
                                        .filter_map(Value::as_str)
                                        .for_each(|name| add(names, name));
                                }
                            }
                        }
                        _ => {}
                    }
                    walk(value, names);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, names)),
            _ => {}
        }
    }
    let mut names = HashMap::new();
    walk(schema, &mut names);
    names
}

/// A key of `args`, at any depth, spelt like a name the schema speaks of but not as it is: the
/// path to it, the key, and the schema's name. A lenient reader would take it for the name the
/// schema bounds, while the schema sees an argument it says nothing about.
fn key_spelt_like_a_name(
    names: &HashMap<String, Vec<String>>,
    args: &Map<String, Value>,
) -> Option<(Vec<String>, String, String)> {
    fn object(
        names: &HashMap<String, Vec<String>>,
        object: &Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Option<(Vec<String>, String, String)> {
        object.iter().find_map(|(key, value)| {
            if let Some(spellings) = names.get(fold_key(key).as_ref()) {
                if !spellings.contains(key) {
                    return Some((path.clone(), key.clone(), spellings[0].clone()));
                }
            }
            path.push(key.clone());
            let found = any(names, value, path);
            path.pop();
            found
        })
    }
    fn any(
        names: &HashMap<String, Vec<String>>,
        value: &Value,
        path: &mut Vec<String>,
    ) -> Option<(Vec<String>, String, String)> {
        match value {
            Value::Object(inner) => object(names, inner, path),
            Value::Array(items) => items.iter().enumerate().find_map(|(index, value)| {
                path.push(index.to_string());
                let found = any(names, value, path);
                path.pop();
                found
            }),
            _ => None,
        }
    }
    object(names, args, &mut Vec::new())
}

/// What can be wrong with a `toolArgs` entry, besides what every key's reader finds.
#[derive(Debug, thiserror::Error)]
pub enum ArgProblem {
    #[error(transparent)]
    Key(#[from] Problem),
    #[error("the tool name {0}")]
    ToolName(PatternError),
    #[error("`schema` is required")]
    NoSchema,
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

impl KeyProblem for ArgProblem {
    fn suggestion(&self) -> Option<&str> {
        match self {
            ArgProblem::Key(problem) => problem.suggestion(),
            ArgProblem::Schema(SchemaError::UnknownFormat { suggestion, .. }) => *suggestion,
            _ => None,
        }
    }
}

/// An error of the `toolArgs` key, naming the key path.
pub(crate) type ArgRulesError = KeyError<ArgProblem>;

impl From<KeyError> for ArgRulesError {
    fn from(err: KeyError) -> ArgRulesError {
        ArgProblem::Key(err.problem).at(err.key)
    }
}

/// Why a call's args break a rule: a sentence naming the tool, the argument and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(pub String);

impl ArgRule {
    /// Compiles one entry; the error names the schema path that is wrong.
    pub fn new(
        pattern: ToolPattern,
        schema: Value,
        when_tainted: WhenTainted,
    ) -> Result<ArgRule, SchemaError> {
        let validator = Compiled::new(&schema)?;
        let names = names_in_schema(&schema);
        Ok(ArgRule {
            pattern,
            schema,
            when_tainted,
            validator: Arc::new(validator),
            names,
        })
    }

    /// The first way `args` break this rule, if any. The numbers in them must be read exactly
    /// first ([`numbers_not_read_exactly`]): the schema compares them as floats. An argument
    /// spelt like one the schema names, but not as it (`TO` for `to`), breaks it too.
    pub fn check(&self, tool: &str, args: &Map<String, Value>) -> Option<Violation> {
        self.check_value(tool, &Value::Object(args.clone()))
    }

    /// [`ArgRule::check`] of args as the call holds them: an object (anything else breaks
    /// every schema that bounds an object, and is denied).
    pub(crate) fn check_value(&self, tool: &str, instance: &Value) -> Option<Violation> {
        let tool = crate::sanitize::quoted(tool);
        let empty = Map::new();
        let args = instance.as_object().unwrap_or(&empty);
        if let Some((path, key, name)) = key_spelt_like_a_name(&self.names, args) {
            let mut at = path;
            at.push(key);
            return Some(Violation(format!(
                "argument `{}` is spelt like `{}`, which the policy's schema for {tool} names, but is not it: a tool that reads names without case would take it for that one, unchecked",
                crate::sanitize::quoted(&at.join(".")),
                crate::sanitize::quoted(&name)
            )));
        }
        let failure = self.validator.first_failure(instance)?;
        let rule = location(&failure.rule);
        Some(Violation(if failure.at.is_empty() {
            let message = crate::sanitize::for_terminal(&bounded(failure.message)).into_owned();
            format!("the arguments of {tool} are not allowed by the policy ({rule}: {message})")
        } else {
            let argument = failure.at.trim_start_matches('/').replace('/', ".");
            let argument = crate::sanitize::quoted(&argument);
            let value = instance
                .pointer(&failure.at)
                .map_or_else(String::new, Value::to_string);
            let value = crate::sanitize::for_terminal(&bounded(value)).into_owned();
            format!(
                "argument `{argument}` = {value} is not allowed for {tool} by the policy ({rule})"
            )
        }))
    }
}

/// The first way a call's args break the rules of its tool, if any: a number not read exactly,
/// then each rule in turn. No rules, no violation.
pub(crate) fn check_all<'a>(
    rules: impl IntoIterator<Item = &'a ArgRule>,
    tool: &str,
    args: &crate::call::Args,
) -> Option<Violation> {
    let mut rules = rules.into_iter().peekable();
    rules.peek()?;
    numbers_not_read_exactly(tool, args.text())
        .or_else(|| rules.find_map(|rule| rule.check_value(tool, args.value())))
}

/// A number in `args` (their JSON text as the call carried it) that a float does not hold as
/// written, as a violation: a schema would compare the float, not the number the agent wrote.
pub(crate) fn numbers_not_read_exactly(tool: &str, args_json: &str) -> Option<Violation> {
    let found = crate::amount::first_inexact_number(args_json)?;
    let tool = crate::sanitize::quoted(tool);
    let text = crate::sanitize::quoted(&found.text);
    let read_as = if found.read_as.is_nan() {
        "cannot be read again".to_owned()
    } else {
        format!("would be compared as {}", found.read_as)
    };
    Some(Violation(if found.path.is_empty() {
        format!("the arguments of {tool} cannot be checked exactly ({text} {read_as})")
    } else {
        let argument = crate::sanitize::quoted(&found.path.join(".")).into_owned();
        format!(
            "argument `{argument}` = {text} is a number a float does not hold as written (it {read_as}), so the policy's schema for {tool} cannot check it exactly; write it as a float holds it"
        )
    }))
}

fn bounded(mut text: String) -> String {
    if text.len() > 120 {
        let mut cut = 120;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// Reads the `toolArgs` object of a policy file.
pub fn from_json(key: &str, value: &Value) -> Result<Vec<ArgRule>, ArgRulesError> {
    let Value::Object(entries) = value else {
        let expected = "an object mapping tool names to {\"schema\": …, \"whenTainted\": …}";
        return Err(wrong_type(expected, value).at(key).into());
    };
    entries
        .iter()
        .map(|(tool, entry)| {
            let here = format!("{key}.{tool}");
            let pattern =
                ToolPattern::parse(tool).map_err(|why| ArgProblem::ToolName(why).at(&here))?;
            let Value::Object(fields) = entry else {
                let expected = "an object with `schema`";
                return Err(wrong_type(expected, entry).at(here).into());
            };
            let mut schema = None;
            let mut when_tainted = WhenTainted::Hold;
            for (field, value) in fields {
                match field.as_str() {
                    "schema" => schema = Some(value.clone()),
                    "whenTainted" => {
                        when_tainted = one_of(
                            &format!("{here}.whenTainted"),
                            value,
                            &[("hold", WhenTainted::Hold), ("allow", WhenTainted::Allow)],
                        )?
                    }
                    other => {
                        // Of two keys, the nearer is always suggested.
                        const KNOWN: &[&str] = &["schema", "whenTainted"];
                        let nearest = KNOWN
                            .iter()
                            .min_by_key(|known| strsim::damerau_levenshtein(other, known))
                            .expect("two known keys");
                        let unknown = UnknownKey {
                            unknown: other.to_owned(),
                            suggestion: Some(nearest),
                            known: KNOWN,
                        };
                        return Err(ArgProblem::Key(unknown.into()).at(here));
                    }
                }
            }
            let Some(schema) = schema else {
                return Err(ArgProblem::NoSchema.at(here));
            };
            ArgRule::new(pattern, schema, when_tainted)
                .map_err(|why| ArgProblem::Schema(why).at(format!("{here}.schema")))
        })
        .collect()
}

#[cfg(test)]
#[path = "argrules_tests.rs"]
mod tests;
