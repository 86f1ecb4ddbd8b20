//! The hook's input: read, strictly, into the event and the tool call it tells of, and whether
//! the tool's response says it failed.

use std::io::Read;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Map, Value};

use crate::strict_json;

pub(crate) use super::oversized::MAX_INPUT_BYTES;
/// The longest session id accepted.
const MAX_SESSION_ID_CHARS: usize = 128;

/// The hook events sc-hook handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookEvent {
    /// Before a tool call: decide it.
    PreToolUse,
    /// After a tool call ran: record that it ran.
    PostToolUse,
    /// The user's prompt: trusted values for value provenance.
    UserPromptSubmit,
}

/// What the hook was told about a tool call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HookInput {
    pub event: HookEvent,
    pub session_id: String,
    pub tool_name: String,
    pub tool_input: Map<String, Value>,
    /// What the tool answered (`PostToolUse` only), as Claude Code wrote it.
    pub tool_response: Option<Value>,
    pub tool_use_id: Option<String>,
    pub cwd: Option<String>,
    pub permission_mode: Option<String>,
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    /// The user's prompt (`UserPromptSubmit` only).
    pub prompt: Option<String>,
    /// The tool's name as another agent called it, where its contract mapped it onto the
    /// vocabulary's (`run_shell_command` for `Bash`); set by the contract, never read from the
    /// input.
    pub agent_tool: Option<String>,
}

/// Whether a session id may name a file: 1 to 128 of `[A-Za-z0-9._-]`, not starting with a dot.
pub(crate) fn is_safe_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_SESSION_ID_CHARS
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl HookInput {
    /// Reads the hook's input strictly: valid UTF-8 JSON, an object, no duplicate key, a
    /// `PreToolUse` or `PostToolUse` event, a safe session id, a tool name, an object of tool
    /// input. `tool_use_id` is optional on both events (a call without one cannot be linked).
    pub fn parse(bytes: &[u8]) -> Result<HookInput> {
        let text = std::str::from_utf8(bytes).map_err(|err| {
            anyhow!(
                "the hook input is not valid UTF-8 (bad byte at offset {})",
                err.valid_up_to()
            )
        })?;
        let value = strict_json::parse(text.trim())
            .map_err(|err| anyhow!("the hook input is not valid JSON: {err}"))?;
        let Value::Object(mut object) = value else {
            bail!(
                "the hook input is {}, not a JSON object",
                strict_json::type_name(&value)
            );
        };
        let string = |key: &str| -> Result<Option<String>> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(text)) => Ok(Some(text.clone())),
                Some(other) => bail!(
                    "the hook input's `{key}` must be a string, not {}",
                    strict_json::type_name(other)
                ),
            }
        };
        let required = |key: &str| -> Result<String> {
            match string(key)? {
                Some(text) if !text.is_empty() => Ok(text),
                Some(_) => bail!("the hook input's `{key}` is empty"),
                None => bail!("the hook input has no `{key}`"),
            }
        };
        let event = match required("hook_event_name")?.as_str() {
            "PreToolUse" => HookEvent::PreToolUse,
            "PostToolUse" => HookEvent::PostToolUse,
            "UserPromptSubmit" => HookEvent::UserPromptSubmit,
            other => bail!(
                "sc-hook answers PreToolUse and PostToolUse hooks only, not {} (and UserPromptSubmit, for value provenance); install it under \"PreToolUse\" and \"PostToolUse\"",
                Value::String(other.chars().take(200).collect())
            ),
        };
        let session_id = required("session_id")?;
        if !is_safe_session_id(&session_id) {
            bail!(
                "the session id {} is not safe to use in a file name (only letters, digits, `.`, `_` and `-`, at most {MAX_SESSION_ID_CHARS}, not starting with `.`)",
                Value::String(session_id.chars().take(200).collect())
            );
        }
        if event == HookEvent::UserPromptSubmit {
            let prompt = string("prompt")?
                .ok_or_else(|| anyhow!("the UserPromptSubmit input has no `prompt`"))?;
            return Ok(HookInput {
                event,
                session_id,
                tool_name: String::new(),
                tool_input: Map::new(),
                tool_response: None,
                tool_use_id: None,
                cwd: string("cwd")?,
                permission_mode: string("permission_mode")?,
                agent_id: string("agent_id")?,
                agent_type: string("agent_type")?,
                prompt: Some(prompt),
                agent_tool: None,
            });
        }
        let tool_name = required("tool_name")?;
        let tool_use_id = string("tool_use_id")?;
        if tool_use_id.as_deref() == Some("") {
            bail!("the hook input's `tool_use_id` is empty");
        }
        let cwd = string("cwd")?;
        let permission_mode = string("permission_mode")?;
        let agent_id = string("agent_id")?;
        let agent_type = string("agent_type")?;
        let tool_input = match object.remove("tool_input") {
            Some(Value::Object(input)) => input,
            Some(other) => bail!(
                "the hook input's `tool_input` must be an object, not {}",
                strict_json::type_name(&other)
            ),
            None => bail!("the hook input has no `tool_input`"),
        };
        // A file's whole text may be in the response: taken, not copied.
        let tool_response = match event {
            HookEvent::PostToolUse => object.remove("tool_response"),
            HookEvent::PreToolUse | HookEvent::UserPromptSubmit => None,
        };
        Ok(HookInput {
            event,
            session_id,
            tool_name,
            tool_input,
            tool_response,
            tool_use_id,
            cwd,
            permission_mode,
            agent_id,
            agent_type,
            prompt: None,
            agent_tool: None,
        })
    }

    /// The agent the call is made in the name of: the subagent's type, else `default_agent`.
    pub fn agent<'a>(&'a self, default_agent: &'a str) -> &'a str {
        self.agent_type
            .as_deref()
            .filter(|kind| !kind.is_empty())
            .unwrap_or(default_agent)
    }

    /// The call as the gate sees it (and the audit log records it): the model ordered it, so its
    /// source is `agent`; the hook's context is kept in extra keys the rules ignore.
    pub fn call_value(&self, default_agent: &str) -> Value {
        let mut call = json!({
            "agent": self.agent(default_agent),
            "tool": self.tool_name,
            "args": self.tool_input,
            "source": "agent",
            "session": self.session_id,
        });
        let object = call.as_object_mut().expect("an object");
        for (key, value) in [
            ("toolUseId", &self.tool_use_id),
            ("cwd", &self.cwd),
            ("permissionMode", &self.permission_mode),
            ("agentId", &self.agent_id),
        ] {
            if let Some(value) = value {
                object.insert(key.to_owned(), Value::String(value.clone()));
            }
        }
        call
    }
}

/// Reads at most [`MAX_INPUT_BYTES`] of hook input, a tool's response aside: an input over that
/// is read on with its responses dropped as they pass ([`super::oversized`]), and refused when
/// the rest is over it too. One of more JSON values than sc-hook reads is refused. A tool's
/// response too large or unreadable is put aside ([`super::bounded`]).
pub fn read_input(mut input: impl Read) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    input
        .by_ref()
        .take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .context("cannot read the hook input")?;
    if bytes.len() > MAX_INPUT_BYTES {
        bytes = super::oversized::without_responses(bytes, input)?;
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        bail!("the hook input is empty");
    }
    super::bounded::readable(bytes)
}

/// Whether a tool's response says it failed: a JSON object with `isError: true`, as an MCP
/// tool's result says it (and as sc-mcp reads it). Nothing else is read into it.
pub(super) fn reported_error(response: Option<&Value>) -> bool {
    matches!(response, Some(Value::Object(response)) if response.get("isError") == Some(&Value::Bool(true)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(extra: &str) -> String {
        format!(
            r#"{{"session_id":"s-1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"ls"}}{extra}}}"#
        )
    }

    #[test]
    fn reads_a_hook_input() {
        let hook = HookInput::parse(
            input(r#","tool_use_id":"toolu_1","cwd":"/w","permission_mode":"default","transcript_path":"/t","agent_type":"Explore""#)
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(hook.tool_name, "Bash");
        assert_eq!(hook.tool_input["command"], "ls");
        assert_eq!(hook.agent("claude-code"), "Explore");
        let call = hook.call_value("claude-code");
        assert_eq!(call["source"], "agent");
        assert_eq!(call["toolUseId"], "toolu_1");
        assert_eq!(call["session"], "s-1");
    }

    #[test]
    fn refuses_bad_input() {
        for (text, expected) in [
            ("", "not valid JSON"),
            ("[]", "not a JSON object"),
            (r#"{"a":1,"a":2}"#, "duplicate key"),
            (
                r#"{"session_id":"s","hook_event_name":"Stop","tool_name":"Bash","tool_input":{}}"#,
                "PreToolUse and PostToolUse hooks only, not \"Stop\"",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{}}"#,
                "not \"PostToolUseFailure\"",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":""}"#,
                "`tool_use_id` is empty",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":7}"#,
                "must be a string",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash"}"#,
                "no `tool_input`",
            ),
            (
                r#"{"session_id":"../x","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}"#,
                "not safe",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"","tool_input":{}}"#,
                "`tool_name` is empty",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"ls"}"#,
                "must be an object",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash"}"#,
                "no `tool_input`",
            ),
            (
                r#"{"session_id":7,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}"#,
                "must be a string",
            ),
        ] {
            let err = HookInput::parse(text.as_bytes()).unwrap_err();
            assert!(err.to_string().contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn reads_a_post_tool_use_input_with_its_response() {
        let hook = HookInput::parse(
            br#"{"session_id":"s-1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a\n","isError":false},"tool_use_id":"toolu_1"}"#,
        )
        .unwrap();
        assert_eq!(hook.event, HookEvent::PostToolUse);
        assert_eq!(hook.tool_response.as_ref().unwrap()["stdout"], "a\n");
        assert_eq!(hook.tool_use_id.as_deref(), Some("toolu_1"));
        assert!(!reported_error(hook.tool_response.as_ref()));
        // Without a tool_use_id it still reads: the call cannot be linked, and is recorded so.
        let hook = HookInput::parse(
            br#"{"session_id":"s-1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}"#,
        )
        .unwrap();
        assert_eq!((hook.tool_use_id, hook.tool_response), (None, None));
        // A PreToolUse keeps no response, whatever it says.
        let hook =
            HookInput::parse(input(r#","tool_response":{"isError":true}"#).as_bytes()).unwrap();
        assert_eq!(hook.event, HookEvent::PreToolUse);
        assert_eq!(hook.tool_response, None);
    }

    #[test]
    fn only_an_object_with_is_error_true_is_a_failure() {
        for (response, failed) in [
            (json!({"isError": true, "content": []}), true),
            (json!({"isError": false}), false),
            (json!({"isError": "true"}), false),
            (
                json!({"stdout": "", "stderr": "error: isError true", "interrupted": false}),
                false,
            ),
            (json!([{"isError": true}]), false),
            (json!("isError"), false),
            (Value::Null, false),
        ] {
            assert_eq!(reported_error(Some(&response)), failed, "{response}");
        }
        assert!(!reported_error(None));
    }

    #[test]
    fn session_ids_must_be_safe_file_names() {
        for good in ["abc", "0b1e-4f.2_x", "a".repeat(128).as_str()] {
            assert!(is_safe_session_id(good), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "../etc",
            "a b",
            "a\0b",
            "é",
            "a\\b",
            "a".repeat(129).as_str(),
        ] {
            assert!(!is_safe_session_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn input_is_bounded_and_not_empty() {
        assert!(read_input(&b" \n"[..]).is_err());
        assert!(read_input(&b"{}"[..]).is_ok());
    }
}
