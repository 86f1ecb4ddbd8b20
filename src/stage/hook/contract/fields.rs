//! Reading an agent's hook input: strict JSON, one object, and its fields by type; the errors
//! name the agent and the field.

use serde_json::{Map, Value};

use super::agent::Agent;
use crate::strict_json;

/// An agent's hook input that its contract cannot read: the call is refused the way that
/// agent's contract blocks one.
#[derive(Debug, thiserror::Error)]
#[error("the {agent} hook input {what}", agent = .agent.title())]
pub struct ContractError {
    pub agent: Agent,
    pub what: String,
}

impl ContractError {
    pub fn new(agent: Agent, what: impl Into<String>) -> ContractError {
        ContractError {
            agent,
            what: what.into(),
        }
    }
}

/// The input as one JSON object (UTF-8, no duplicate key), or `None` when it is not one.
pub(super) fn object(bytes: &[u8]) -> Option<Map<String, Value>> {
    let text = std::str::from_utf8(bytes).ok()?;
    match strict_json::parse(text.trim()).ok()? {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

/// One agent's input object, read field by field.
pub(super) struct Fields<'a> {
    pub agent: Agent,
    pub object: &'a Map<String, Value>,
}

impl Fields<'_> {
    pub fn error(&self, what: impl Into<String>) -> ContractError {
        ContractError::new(self.agent, what)
    }

    /// An optional string field; another type is an error.
    pub fn string(&self, key: &str) -> Result<Option<String>, ContractError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(self.error(format!(
                "has `{key}` of type {}, not a string",
                strict_json::type_name(other)
            ))),
        }
    }

    /// A string field that must be there and not be empty.
    pub fn required(&self, key: &str) -> Result<String, ContractError> {
        match self.string(key)? {
            Some(text) if !text.is_empty() => Ok(text),
            Some(_) => Err(self.error(format!("has an empty `{key}`"))),
            None => Err(self.error(format!("has no `{key}`"))),
        }
    }

    /// A tool input: an object, or a string holding one (Copilot's `toolArgs`, Cursor's MCP
    /// `tool_input`).
    pub fn arguments(&self, key: &str) -> Result<Map<String, Value>, ContractError> {
        match self.object.get(key) {
            Some(Value::Object(input)) => Ok(input.clone()),
            Some(Value::String(text)) => match strict_json::parse(text.trim()) {
                Ok(Value::Object(input)) => Ok(input),
                Ok(other) => Err(self.error(format!(
                    "has `{key}` holding {}, not a JSON object",
                    strict_json::type_name(&other)
                ))),
                Err(err) => Err(self.error(format!("has `{key}` that is not valid JSON: {err}"))),
            },
            None | Some(Value::Null) => Err(self.error(format!("has no `{key}`"))),
            Some(other) => Err(self.error(format!(
                "has `{key}` of type {}, not an object",
                strict_json::type_name(other)
            ))),
        }
    }
}

/// Moves `from` to `to` in a tool input (an agent's name for a field onto the vocabulary's);
/// nothing when `from` is absent.
pub(super) fn rename(input: &mut Map<String, Value>, from: &str, to: &str) {
    if from != to {
        if let Some(value) = input.remove(from) {
            input.insert(to.to_owned(), value);
        }
    }
}

/// A session id for an agent whose input carries none (GitHub Copilot CLI): one per working
/// folder, so that taint and budgets persist across its calls there.
pub(super) fn session_for_folder(prefix: &str, cwd: Option<&str>) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(cwd.unwrap_or("").as_bytes());
    let hex: String = crate::hex::encode(&digest[..8]);
    format!("{prefix}-{hex}")
}

/// A folder an agent names for one call (Gemini's `directory`, Codex's `workdir`), placed in
/// the session's working folder when it is relative.
pub(super) fn within(cwd: Option<&str>, dir: &str) -> String {
    match cwd {
        Some(cwd) if !dir.starts_with('/') => std::path::Path::new(cwd)
            .join(dir)
            .to_string_lossy()
            .into_owned(),
        _ => dir.to_owned(),
    }
}
