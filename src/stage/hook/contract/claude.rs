//! Claude Code's contract, the hook's own: the input is read as it is (`HookInput`), and the
//! answer is the hook's own line. Exit status 2 blocks a call; any other failure lets it run.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::agent::{Abilities, Agent, Event, Translated};

/// Claude Code's events.
pub(super) fn event_of(name: &str) -> Option<Event> {
    match name {
        "PreToolUse" => Some(Event::Pre),
        "PostToolUse" => Some(Event::Post),
        "UserPromptSubmit" => Some(Event::Prompt),
        _ => None,
    }
}

/// The input unchanged (the hook reads it strictly itself); the project is
/// `CLAUDE_PROJECT_DIR`.
/// An input that is not one is passed on too: the hook's own reader refuses it, with its message.
pub(super) fn translate(object: Option<&Map<String, Value>>, bytes: &[u8]) -> Translated {
    let name = object
        .and_then(|object| object.get("hook_event_name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let event = event_of(&name).unwrap_or(Event::Pre);
    Translated {
        agent: Agent::Claude,
        event,
        input: bytes.to_vec(),
        native_tool: None,
        native_event: name,
        abilities: Abilities {
            ask: true,
            rewrite: true,
        },
        command_key: Some("command"),
        project: std::env::var_os("CLAUDE_PROJECT_DIR").map(PathBuf::from),
        parent_session: None,
    }
}
