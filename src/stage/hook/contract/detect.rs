//! Which contract an input is read by: `--for NAME`, else the input's shape. A Claude Code
//! shaped input is Claude Code's unless it carries Codex's `turn_id`; an input that fits no
//! contract is refused the way the likeliest agent's contract blocks.

use serde_json::{Map, Value};

use super::agent::{Agent, Event, Translated};
use super::fields::{object, ContractError};
use super::{claude, codex, copilot, cursor, gemini};

/// Reads an agent's hook input by its contract: `chosen` (`--for`), else the one its shape
/// names ([`likeliest`]). `Err` names the agent whose way of refusing applies.
pub fn translate(chosen: Option<Agent>, bytes: &[u8]) -> Result<Translated, ContractError> {
    let parsed = object(bytes);
    let agent = chosen.unwrap_or_else(|| parsed.as_ref().map_or(Agent::Claude, likeliest));
    let Some(parsed) = parsed else {
        if agent == Agent::Claude {
            return Ok(claude::translate(None, bytes));
        }
        return Err(ContractError::new(
            agent,
            "is not one JSON object (valid UTF-8, no key twice)",
        ));
    };
    match agent {
        Agent::Claude => Ok(claude::translate(Some(&parsed), bytes)),
        Agent::Codex => codex::translate(&parsed),
        Agent::Gemini => gemini::translate(&parsed),
        Agent::Copilot => copilot::translate(&parsed),
        Agent::Cursor => cursor::translate(&parsed),
    }
}

/// The event of a translated input, where it named one its contract knows: Claude Code's input
/// is read by the hook itself, so an event it does not answer (`Stop`) is passed on as a
/// `PreToolUse`, to be refused there; it is none of the three.
pub fn event_read(translated: &Translated) -> Option<Event> {
    match translated.agent {
        Agent::Claude => claude::event_of(&translated.native_event),
        _ => Some(translated.event),
    }
}

/// The agent whose contract an input's shape fits best: Copilot's has no event name (and
/// `toolName`, `toolArgs`, `timestamp`); Cursor's and Gemini's have event names of their own;
/// Codex's is Claude Code's with a `turn_id`.
pub fn likeliest(input: &Map<String, Value>) -> Agent {
    let has = |key: &str| input.contains_key(key);
    let event = input.get("hook_event_name").and_then(Value::as_str);
    if has("toolName") || has("toolArgs") || has("toolResult") {
        return Agent::Copilot;
    }
    // Cursor's `preToolUse` and `postToolUse` differ from Claude Code's names by one letter's
    // case only: they are Cursor's when its own keys come with them.
    let cursor_keys = has("conversation_id") || has("workspace_roots") || has("generation_id");
    match event {
        None if has("timestamp") => Agent::Copilot,
        Some("preToolUse" | "postToolUse") if !cursor_keys => Agent::Claude,
        Some(name) if cursor::event_of(name).is_some() => Agent::Cursor,
        Some(name) if gemini::event_of(name).is_some() => Agent::Gemini,
        _ if cursor_keys => Agent::Cursor,
        _ if has("turn_id") => Agent::Codex,
        // Gemini's inputs carry a `timestamp` besides Claude Code's fields.
        _ if has("timestamp") && has("session_id") => Agent::Gemini,
        _ => Agent::Claude,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(input: Value) -> Agent {
        likeliest(input.as_object().unwrap())
    }

    #[test]
    fn the_shape_names_the_agent() {
        let claude = json!({"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}});
        assert_eq!(of(claude.clone()), Agent::Claude);
        let mut codex = claude.clone();
        codex["turn_id"] = json!("t1");
        assert_eq!(of(codex), Agent::Codex);
        assert_eq!(
            of(json!({"hook_event_name":"BeforeTool","session_id":"s"})),
            Agent::Gemini
        );
        assert_eq!(
            of(json!({"timestamp":1,"cwd":"/w","toolName":"bash","toolArgs":"{}"})),
            Agent::Copilot
        );
        assert_eq!(
            of(json!({"hook_event_name":"beforeShellExecution","conversation_id":"c"})),
            Agent::Cursor
        );
        // Fits none: the likeliest by its other keys.
        assert_eq!(
            of(json!({"hook_event_name":"Stop","turn_id":"t"})),
            Agent::Codex
        );
        assert_eq!(
            of(json!({"hook_event_name":"stop","conversation_id":"c"})),
            Agent::Cursor
        );
        assert_eq!(of(json!({})), Agent::Claude);
    }

    #[test]
    fn an_input_for_another_contract_is_refused_by_the_chosen_one() {
        let gemini = br#"{"hook_event_name":"BeforeTool","session_id":"s","tool_name":"run_shell_command","tool_input":{"command":"ls"}}"#;
        let err = translate(Some(Agent::Cursor), gemini).unwrap_err();
        assert_eq!(err.agent, Agent::Cursor);
        let err = translate(Some(Agent::Copilot), b"not json").unwrap_err();
        assert_eq!(err.agent, Agent::Copilot);
        let ok = translate(None, gemini).unwrap();
        assert_eq!(ok.agent, Agent::Gemini);
        let hook: Value = serde_json::from_slice(&ok.input).unwrap();
        assert_eq!(hook["tool_name"], "Bash");
        assert_eq!(ok.native_tool.as_deref(), Some("run_shell_command"));
    }
}
