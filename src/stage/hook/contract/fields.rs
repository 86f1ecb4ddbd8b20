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

/// The folder a tool call runs in, where the agent's tool names one in its input (`key`:
/// Codex's `workdir`, Gemini CLI's `dir_path`, Cursor's `working_directory`), placed against the
/// hook's `cwd`: its paths are judged there. `None` when absent or null; another type is refused,
/// never read as none (the call would be judged in `cwd` while it runs elsewhere).
pub(super) fn run_folder(
    agent: Agent,
    input: &Map<String, Value>,
    key: &str,
    cwd: Option<&str>,
) -> Result<Option<String>, ContractError> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(dir)) => Ok(Some(within(cwd, dir))),
        Some(other) => Err(ContractError::new(
            agent,
            format!(
                "has a `{key}` of type {}, not a string",
                strict_json::type_name(other)
            ),
        )),
    }
}

/// Moves an agent's argument `from` to the vocabulary's name `to`, for a tool that takes it under
/// no other name: the rules judge `to`, and the tool acts on `from`. An input that carries `to`
/// itself, with another value than `from`'s or without `from`, is refused: the rules could judge
/// a value the tool does not act on (Copilot CLI's `grep` names `paths` in its schema, yet
/// searches a `path` given without it).
pub(super) fn rename(
    agent: Agent,
    input: &mut Map<String, Value>,
    from: &str,
    to: &str,
) -> Result<(), ContractError> {
    if let Some(stray) = input.get(to) {
        if input.get(from) != Some(stray) {
            return Err(ContractError::new(
                agent,
                format!("names `{to}`, which its tool does not take beside `{from}`"),
            ));
        }
    }
    if let Some(value) = input.remove(from) {
        input.insert(to.to_owned(), value);
    }
    Ok(())
}

/// Gathers the names a tool has taken one argument by, over the agent's versions (`names`, the
/// vocabulary's own first), into the vocabulary's. An input that gives two of them different
/// values is refused: the gate cannot know which the tool acts on (Gemini CLI's `read_file`
/// reads `file_path` where an older one read `absolute_path`).
pub(super) fn unify(
    agent: Agent,
    input: &mut Map<String, Value>,
    names: &[&str],
) -> Result<(), ContractError> {
    let Some((to, aliases)) = names.split_first() else {
        return Ok(());
    };
    let mut found: Option<(&str, Value)> = input.get(*to).cloned().map(|value| (*to, value));
    for alias in aliases {
        let Some(value) = input.remove(*alias) else {
            continue;
        };
        match &found {
            Some((first, seen)) if *seen != value => {
                return Err(ContractError::new(
                    agent,
                    format!(
                        "names its tool's `{to}` twice, as `{first}` and `{alias}`, differently"
                    ),
                ));
            }
            Some(_) => {}
            None => found = Some((alias, value)),
        }
    }
    if let Some((_, value)) = found {
        input.insert((*to).to_owned(), value);
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_tool_s_folder_is_placed_against_the_hook_s_and_never_read_as_none() {
        let folder = |value: Value| {
            run_folder(
                Agent::Codex,
                &input(json!({ "workdir": value })),
                "workdir",
                Some("/p"),
            )
        };
        assert_eq!(folder(json!("sub")).unwrap().as_deref(), Some("/p/sub"));
        assert_eq!(folder(json!("/q")).unwrap().as_deref(), Some("/q"));
        assert_eq!(folder(Value::Null).unwrap(), None);
        assert!(folder(json!(["/q"])).is_err());
        assert!(folder(json!({"path": "/q"})).is_err());
        let none = run_folder(Agent::Codex, &input(json!({})), "workdir", Some("/p"));
        assert_eq!(none.unwrap(), None);
    }

    #[test]
    fn a_rename_moves_the_tool_s_name_and_refuses_the_vocabulary_s_beside_it() {
        let mut call = input(json!({"paths": ["/a"], "pattern": "x"}));
        rename(Agent::Copilot, &mut call, "paths", "path").unwrap();
        assert_eq!(Value::Object(call), json!({"path": ["/a"], "pattern": "x"}));
        // The same value under both names: one.
        let mut call = input(json!({"paths": "/a", "path": "/a"}));
        rename(Agent::Copilot, &mut call, "paths", "path").unwrap();
        assert_eq!(Value::Object(call), json!({"path": "/a"}));
        // Neither: nothing to move.
        let mut call = input(json!({"pattern": "x"}));
        rename(Agent::Copilot, &mut call, "paths", "path").unwrap();
        assert_eq!(Value::Object(call), json!({"pattern": "x"}));
        // The vocabulary's name with another value, or alone: refused.
        for stray in [json!({"paths": "/a", "path": "/b"}), json!({"path": "/b"})] {
            let mut call = input(stray);
            let err = rename(Agent::Copilot, &mut call, "paths", "path").unwrap_err();
            assert!(err.to_string().contains("`path`"), "{err}");
        }
    }

    #[test]
    fn names_a_tool_has_had_are_one_or_the_input_is_refused() {
        let names = ["file_path", "absolute_path", "path"];
        for (given, judged) in [
            (json!({"file_path": "/a"}), Some("/a")),
            (json!({"absolute_path": "/a"}), Some("/a")),
            (json!({"path": "/a"}), Some("/a")),
            (
                json!({"file_path": "/a", "path": "/a", "absolute_path": "/a"}),
                Some("/a"),
            ),
            (json!({"start_line": 1}), None),
        ] {
            let mut call = input(given.clone());
            unify(Agent::Gemini, &mut call, &names).unwrap();
            assert_eq!(
                call.get("file_path").and_then(Value::as_str),
                judged,
                "{given}"
            );
            assert!(!call.contains_key("path") && !call.contains_key("absolute_path"));
        }
        for given in [
            json!({"file_path": "/secret", "path": "/a"}),
            json!({"file_path": "/secret", "absolute_path": "/a"}),
            json!({"absolute_path": "/secret", "path": "/a"}),
            json!({"file_path": "/a", "path": "/a", "absolute_path": "/secret"}),
            json!({"file_path": "/a", "path": ["/a"]}),
        ] {
            let mut call = input(given.clone());
            let err = unify(Agent::Gemini, &mut call, &names).unwrap_err();
            assert!(err.to_string().contains("twice"), "{given}: {err}");
        }
    }
}
