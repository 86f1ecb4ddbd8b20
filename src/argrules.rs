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

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::policy::ToolPattern;
use crate::strict_json;

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
    validator: Arc<jsonschema::Validator>,
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

/// Why a call's args break a rule: a sentence naming the tool, the argument and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(pub String);

impl ArgRule {
    /// Compiles one entry; the error names the schema path that is wrong.
    pub fn new(
        pattern: ToolPattern,
        schema: Value,
        when_tainted: WhenTainted,
    ) -> Result<ArgRule, String> {
        if let Err(err) = jsonschema::draft202012::meta::validate(&schema) {
            return Err(format!(
                "the schema is not valid JSON Schema (draft 2020-12) at {}: {err}",
                location(err.instance_path().as_str())
            ));
        }
        let validator = jsonschema::draft202012::options()
            .build(&schema)
            .map_err(|err| {
                format!(
                    "the schema cannot be compiled at {}: {err} (remote and file references are not fetched)",
                    location(err.instance_path().as_str())
                )
            })?;
        Ok(ArgRule {
            pattern,
            schema,
            when_tainted,
            validator: Arc::new(validator),
        })
    }

    /// The first way `args` break this rule, if any.
    pub fn check(&self, tool: &str, args: &Map<String, Value>) -> Option<Violation> {
        let tool = crate::sanitize::quoted(tool);
        let instance = Value::Object(args.clone());
        let err = self.validator.iter_errors(&instance).next()?;
        let rule = location(err.schema_path().as_str());
        let path = err.instance_path().as_str();
        Some(Violation(if path.is_empty() {
            format!("the arguments of {tool} are not allowed by the policy ({rule}: {err})")
        } else {
            let argument = path.trim_start_matches('/').replace('/', ".");
            let argument = crate::sanitize::quoted(&argument);
            let value =
                crate::sanitize::for_terminal(&bounded(err.instance().to_string())).into_owned();
            format!(
                "argument `{argument}` = {value} is not allowed for {tool} by the policy ({rule})"
            )
        }))
    }
}

fn location(path: &str) -> String {
    if path.is_empty() {
        "the schema's root".to_owned()
    } else {
        path.to_owned()
    }
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
pub fn from_json(key: &str, value: &Value) -> Result<Vec<ArgRule>, String> {
    let Value::Object(entries) = value else {
        return Err(format!(
            "key `{key}`: expected an object mapping tool names to {{\"schema\": …, \"whenTainted\": …}}, found {}",
            strict_json::type_name(value)
        ));
    };
    entries
        .iter()
        .map(|(tool, entry)| {
            let here = format!("{key}.{tool}");
            let pattern = ToolPattern::parse(tool).map_err(|why| format!("key `{here}`: the tool name {why}"))?;
            let Value::Object(fields) = entry else {
                return Err(format!("key `{here}`: expected an object with `schema`, found {}", strict_json::type_name(entry)));
            };
            let mut schema = None;
            let mut when_tainted = WhenTainted::Hold;
            for (field, value) in fields {
                match field.as_str() {
                    "schema" => schema = Some(value.clone()),
                    "whenTainted" => {
                        when_tainted = match value.as_str() {
                            Some("hold") => WhenTainted::Hold,
                            Some("allow") => WhenTainted::Allow,
                            _ => return Err(format!("key `{here}.whenTainted`: expected \"hold\" or \"allow\", found {value}")),
                        }
                    }
                    other => {
                        let hint = ["schema", "whenTainted"]
                            .iter()
                            .min_by_key(|known| strsim::damerau_levenshtein(other, known))
                            .expect("two known keys");
                        return Err(format!("key `{here}`: unknown key `{other}`; did you mean `{hint}`?"));
                    }
                }
            }
            let schema = schema.ok_or_else(|| format!("key `{here}`: `schema` is required"))?;
            ArgRule::new(pattern, schema, when_tainted).map_err(|why| format!("key `{here}.schema`: {why}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(value: Value) -> Result<Vec<ArgRule>, String> {
        from_json("toolArgs", &value)
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn args_outside_the_schema_name_the_argument_and_the_rule() {
        let rules = rules(json!({"send_email": {"schema": {"properties": {"to": {"type": "string", "pattern": "^[a-z0-9._-]+@example\\.com$"}}}}})).unwrap();
        assert!(rules[0]
            .check("send_email", &args(json!({"to": "ann@example.com"})))
            .is_none());
        let Violation(reason) = rules[0]
            .check("send_email", &args(json!({"to": "x@evil.test"})))
            .unwrap();
        assert_eq!(reason, "argument `to` = \"x@evil.test\" is not allowed for send_email by the policy (/properties/to/pattern)");
    }

    #[test]
    fn a_missing_required_argument_is_a_violation_of_the_whole() {
        let rules = rules(json!({"delete_file": {"schema": {"required": ["path"]}}})).unwrap();
        let Violation(reason) = rules[0].check("delete_file", &Map::new()).unwrap();
        assert!(
            reason.contains("the arguments of delete_file are not allowed")
                && reason.contains("/required"),
            "{reason}"
        );
    }

    #[test]
    fn bad_schemas_are_load_errors_naming_the_tool_and_path() {
        let cases = [
            (
                json!({"t": {"schema": {"type": "strin"}}}),
                "toolArgs.t.schema",
            ),
            (
                json!({"t": {"schema": {"properties": {"to": {"pattern": "(unclosed"}}}}}),
                "/properties/to/pattern",
            ),
            (
                json!({"t": {"schema": {"$ref": "https://example.com/schema.json"}}}),
                "toolArgs.t.schema",
            ),
            (
                json!({"t": {"schema": {"$ref": "other.json"}}}),
                "toolArgs.t.schema",
            ),
            (
                json!({"t": {"schema": {}, "whenTainted": "sometimes"}}),
                "toolArgs.t.whenTainted",
            ),
            (
                json!({"t": {"schema": {}, "whenTaint": "allow"}}),
                "did you mean `whenTainted`?",
            ),
            (
                json!({"t": {"whenTainted": "allow"}}),
                "`schema` is required",
            ),
            (json!({"a*b": {"schema": {}}}), "toolArgs.a*b"),
            (json!(["t"]), "expected an object"),
        ];
        for (value, expected) in cases {
            let err = rules(value.clone()).unwrap_err();
            assert!(err.contains(expected), "{value}: {err}");
        }
    }

    #[test]
    fn local_references_are_fine() {
        let rules = rules(json!({"t": {"schema": {"$defs": {"payee": {"enum": ["acme"]}}, "properties": {"to": {"$ref": "#/$defs/payee"}}}}})).unwrap();
        assert!(rules[0].check("t", &args(json!({"to": "acme"}))).is_none());
        assert!(rules[0].check("t", &args(json!({"to": "evil"}))).is_some());
    }
}
