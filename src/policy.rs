//! The policy: which tools are refused outright, which need trusted provenance, and the amount
//! above which a person must approve.
//!
//! ```json
//! {"holdAboveAmount": 100, "denyTools": ["shell_exec"], "sensitiveTools": ["send_payment", "send_email", "delete_file"]}
//! ```
//!
//! Loading is strict: a mistyped safety policy never falls back to looser rules. Malformed JSON,
//! a non-object, an unknown key (with the nearest known key suggested), a wrong type, a duplicate
//! key, a negative or non-finite limit and an empty tool name are all errors naming the file and
//! the key. Omitted keys take the built-in defaults one by one. Every policy, whether loaded from a
//! file or built in code, passes through [`Policy::new`], which holds the same checks.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::strict_json;

pub const DEFAULT_HOLD_ABOVE_AMOUNT: f64 = 100.0;
pub const DEFAULT_DENY_TOOLS: &[&str] = &["shell_exec"];
pub const DEFAULT_SENSITIVE_TOOLS: &[&str] = &["send_payment", "send_email", "delete_file"];

/// The keys a policy file may hold, in the order the docs list them.
pub const KEYS: &[&str] = &["holdAboveAmount", "denyTools", "sensitiveTools"];

/// A validated policy. Build one with [`Policy::new`], [`Policy::load`] or [`Policy::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    hold_above_amount: f64,
    deny_tools: Vec<String>,
    sensitive_tools: Vec<String>,
}

/// The raw settings of a policy, before validation.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySettings {
    pub hold_above_amount: f64,
    pub deny_tools: Vec<String>,
    pub sensitive_tools: Vec<String>,
}

impl Default for PolicySettings {
    fn default() -> Self {
        PolicySettings {
            hold_above_amount: DEFAULT_HOLD_ABOVE_AMOUNT,
            deny_tools: DEFAULT_DENY_TOOLS.iter().map(|s| s.to_string()).collect(),
            sensitive_tools: DEFAULT_SENSITIVE_TOOLS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(PolicySettings::default()).expect("the built-in policy is valid")
    }
}

/// Why a policy was refused. Always names the file (when there is one) and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    pub file: Option<PathBuf>,
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "policy file {}: {}", file.display(), self.message),
            None => write!(f, "policy: {}", self.message),
        }
    }
}

impl std::error::Error for PolicyError {}

impl Policy {
    /// Validates settings into a policy.
    pub fn new(settings: PolicySettings) -> Result<Policy, PolicyError> {
        let error = |message: String| PolicyError {
            file: None,
            message,
        };
        let limit = settings.hold_above_amount;
        if !limit.is_finite() || limit < 0.0 {
            return Err(error(format!(
                "key `holdAboveAmount`: expected a finite number ≥ 0, found {limit}"
            )));
        }
        for (key, tools) in [
            ("denyTools", &settings.deny_tools),
            ("sensitiveTools", &settings.sensitive_tools),
        ] {
            if let Some(index) = tools.iter().position(|tool| tool.is_empty()) {
                return Err(error(format!(
                    "key `{key}`: item {index} is an empty tool name"
                )));
            }
        }
        Ok(Policy {
            hold_above_amount: limit,
            deny_tools: settings.deny_tools,
            sensitive_tools: settings.sensitive_tools,
        })
    }

    /// Loads a policy file strictly.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let in_file = |message: String| PolicyError {
            file: Some(path.to_owned()),
            message,
        };
        let bytes = std::fs::read(path).map_err(|err| in_file(format!("cannot read it: {err}")))?;
        let text = String::from_utf8(bytes).map_err(|err| {
            in_file(format!(
                "not valid UTF-8 (at byte {})",
                err.utf8_error().valid_up_to()
            ))
        })?;
        Policy::from_json_str(&text).map_err(|err| PolicyError {
            file: Some(path.to_owned()),
            message: err.message,
        })
    }

    /// Loads the policy file if one is given, else the built-in defaults.
    pub fn load_or_default(path: Option<&Path>) -> Result<Policy, PolicyError> {
        path.map_or_else(|| Ok(Policy::default()), Policy::load)
    }

    /// Reads a policy from JSON text with the same strictness as [`Policy::load`].
    pub fn from_json_str(text: &str) -> Result<Policy, PolicyError> {
        let error = |message: String| PolicyError {
            file: None,
            message,
        };
        let value = strict_json::parse(text).map_err(|err| match err.classify() {
            serde_json::error::Category::Eof if text.trim().is_empty() => {
                error("the file is empty; a policy is a JSON object such as {}".to_owned())
            }
            _ => error(format!("malformed JSON: {err}")),
        })?;
        let Value::Object(object) = value else {
            return Err(error(format!(
                "the top-level value must be an object, found {}",
                strict_json::type_name(&value)
            )));
        };
        Policy::new(settings_from_object(&object).map_err(error)?)
    }

    pub fn hold_above_amount(&self) -> f64 {
        self.hold_above_amount
    }

    pub fn deny_tools(&self) -> &[String] {
        &self.deny_tools
    }

    pub fn sensitive_tools(&self) -> &[String] {
        &self.sensitive_tools
    }

    /// Tool names compare exactly: no case folding, no trimming.
    pub fn is_denied(&self, tool: &str) -> bool {
        self.deny_tools.iter().any(|t| t == tool)
    }

    pub fn is_sensitive(&self, tool: &str) -> bool {
        self.sensitive_tools.iter().any(|t| t == tool)
    }
}

fn settings_from_object(object: &Map<String, Value>) -> Result<PolicySettings, String> {
    let mut settings = PolicySettings::default();
    for (key, value) in object {
        match key.as_str() {
            "holdAboveAmount" => settings.hold_above_amount = limit(key, value)?,
            "denyTools" => settings.deny_tools = tool_names(key, value)?,
            "sensitiveTools" => settings.sensitive_tools = tool_names(key, value)?,
            unknown => return Err(unknown_key_message(unknown)),
        }
    }
    Ok(settings)
}

fn limit(key: &str, value: &Value) -> Result<f64, String> {
    match value.as_f64() {
        Some(limit) if limit.is_finite() && limit >= 0.0 => Ok(limit),
        Some(_) => Err(format!(
            "key `{key}`: expected a finite number ≥ 0, found {value}"
        )),
        None => Err(format!(
            "key `{key}`: expected a number, found {}",
            strict_json::type_name(value)
        )),
    }
}

fn tool_names(key: &str, value: &Value) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err(format!(
            "key `{key}`: expected an array of tool names, found {}",
            strict_json::type_name(value)
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::String(name) if !name.is_empty() => Ok(name.clone()),
            Value::String(_) => Err(format!("key `{key}`: item {index} is an empty tool name")),
            other => Err(format!(
                "key `{key}`: item {index} must be a tool name (a string), found {}",
                strict_json::type_name(other)
            )),
        })
        .collect()
}

fn unknown_key_message(unknown: &str) -> String {
    let nearest = KEYS
        .iter()
        .map(|known| (strsim::damerau_levenshtein(unknown, known), known))
        .min()
        .filter(|(distance, _)| *distance <= 4);
    match nearest {
        Some((_, known)) => format!("unknown key `{unknown}`; did you mean `{known}`?"),
        None => format!(
            "unknown key `{unknown}`; the known keys are {}",
            KEYS.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_err(text: &str) -> String {
        Policy::from_json_str(text).unwrap_err().to_string()
    }

    #[test]
    fn omitted_keys_fall_back_one_by_one() {
        let policy = Policy::from_json_str(r#"{"holdAboveAmount": 5}"#).unwrap();
        assert_eq!(policy.hold_above_amount(), 5.0);
        assert_eq!(policy.deny_tools(), Policy::default().deny_tools());
        assert_eq!(
            policy.sensitive_tools(),
            Policy::default().sensitive_tools()
        );

        let policy = Policy::from_json_str(r#"{"denyTools": []}"#).unwrap();
        assert_eq!(policy.hold_above_amount(), DEFAULT_HOLD_ABOVE_AMOUNT);
        assert!(policy.deny_tools().is_empty());
        assert_eq!(
            policy.sensitive_tools(),
            Policy::default().sensitive_tools()
        );

        assert_eq!(Policy::from_json_str("{}").unwrap(), Policy::default());
    }

    #[test]
    fn strict_failures_name_the_key() {
        let cases = [
            ("{", "malformed JSON"),
            ("{\n  \"holdAboveAmount\": 1,,\n}", "line 2 column"),
            ("", "empty"),
            ("[]", "top-level value must be an object, found an array"),
            (
                r#"{"holdAboveAmout": 1}"#,
                "unknown key `holdAboveAmout`; did you mean `holdAboveAmount`?",
            ),
            (r#"{"denytools": []}"#, "did you mean `denyTools`?"),
            (r#"{"colour": "red"}"#, "the known keys are"),
            (
                r#"{"holdAboveAmount": "100"}"#,
                "key `holdAboveAmount`: expected a number, found a string",
            ),
            (
                r#"{"holdAboveAmount": -1}"#,
                "key `holdAboveAmount`: expected a finite number ≥ 0",
            ),
            (r#"{"holdAboveAmount": 1e999}"#, "malformed JSON"),
            (
                r#"{"denyTools": "shell_exec"}"#,
                "key `denyTools`: expected an array",
            ),
            (
                r#"{"denyTools": [""]}"#,
                "key `denyTools`: item 0 is an empty tool name",
            ),
            (
                r#"{"sensitiveTools": ["a", 3]}"#,
                "key `sensitiveTools`: item 1 must be a tool name",
            ),
            (
                r#"{"denyTools": [], "denyTools": ["x"]}"#,
                "duplicate key `denyTools`",
            ),
        ];
        for (text, expected) in cases {
            let message = load_err(text);
            assert!(message.contains(expected), "{text:?}: {message}");
        }
    }

    #[test]
    fn building_in_code_has_the_same_checks() {
        let mut settings = PolicySettings {
            hold_above_amount: f64::NAN,
            ..PolicySettings::default()
        };
        assert!(Policy::new(settings.clone()).is_err());
        settings.hold_above_amount = -0.5;
        assert!(Policy::new(settings.clone()).is_err());
        settings.hold_above_amount = f64::INFINITY;
        assert!(Policy::new(settings.clone()).is_err());
        settings.hold_above_amount = 10.0;
        settings.sensitive_tools.push(String::new());
        assert!(Policy::new(settings).is_err());
    }

    #[test]
    fn the_example_policy_loads_and_shows_every_key() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policy.example.json");
        Policy::load(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        for key in KEYS {
            assert!(
                text.contains(&format!("\"{key}\"")),
                "policy.example.json lacks {key}"
            );
        }
    }

    #[test]
    fn tool_names_compare_exactly() {
        let policy = Policy::default();
        assert!(policy.is_sensitive("send_payment"));
        assert!(!policy.is_sensitive("Send_Payment"));
        assert!(!policy.is_sensitive("send_payment "));
    }
}
