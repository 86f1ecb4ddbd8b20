//! Cursor's contract (`.cursor/hooks.json`): `beforeShellExecution` (`command`, `cwd`),
//! `beforeMCPExecution` (`tool_name`, `tool_input`, `url` or `command`), `beforeReadFile`
//! (`file_path`, `content`), `preToolUse` (`tool_name`, `tool_input`), their `after…` events,
//! `afterFileEdit` and `beforeSubmitPrompt`; every input has `conversation_id`,
//! `generation_id` and `workspace_roots`. A hook answers `{"permission":"allow|deny|ask",
//! "user_message":…,"agent_message":…}` (`beforeReadFile`: allow or deny only). Cursor takes no
//! rewritten command: a call the pack would run confined is asked, with a reason that says it
//! would run unconfined, or denied where Cursor cannot ask.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::agent::{Abilities, Agent, Event, Shape, Translated};
use super::fields::{run_folder, unify, ContractError, Fields};

/// Cursor's events sc-hook answers.
pub(super) fn event_of(name: &str) -> Option<Event> {
    match name {
        "beforeShellExecution" | "beforeMCPExecution" | "beforeReadFile" | "preToolUse" => {
            Some(Event::Pre)
        }
        "afterShellExecution" | "afterMCPExecution" | "afterFileEdit" | "postToolUse" => {
            Some(Event::Post)
        }
        "beforeSubmitPrompt" => Some(Event::Prompt),
        _ => None,
    }
}

pub(super) fn translate(object: &Map<String, Value>) -> Result<Translated, ContractError> {
    let fields = Fields {
        agent: Agent::Cursor,
        object,
    };
    let name = fields.required("hook_event_name")?;
    let event = event_of(&name).ok_or_else(|| {
        fields.error(format!(
            "is a {name:?} event; sc-hook answers beforeShellExecution, beforeMCPExecution, beforeReadFile, preToolUse, their after… events and beforeSubmitPrompt"
        ))
    })?;
    let session = fields.required("conversation_id")?;
    let project = match object.get("workspace_roots") {
        Some(Value::Array(roots)) => roots.first().and_then(Value::as_str).map(PathBuf::from),
        _ => None,
    };
    let cwd = fields
        .string("cwd")?
        .or_else(|| project.as_ref().map(|p| p.to_string_lossy().into_owned()));
    let (tool, native, input) = match name.as_str() {
        "beforeSubmitPrompt" => (String::new(), None, Map::new()),
        "beforeShellExecution" | "afterShellExecution" => {
            let mut input = Map::new();
            input.insert("command".into(), Value::String(fields.required("command")?));
            ("Bash".into(), None, input)
        }
        "beforeReadFile" => {
            // The file's text is not the call: only its path is judged.
            let mut input = Map::new();
            input.insert(
                "file_path".into(),
                Value::String(fields.required("file_path")?),
            );
            ("Read".into(), None, input)
        }
        "afterFileEdit" => {
            let mut input = Map::new();
            input.insert(
                "file_path".into(),
                Value::String(fields.required("file_path")?),
            );
            ("Edit".into(), None, input)
        }
        "beforeMCPExecution" | "afterMCPExecution" => {
            let tool = fields.required("tool_name")?;
            let input = fields.arguments("tool_input")?;
            (mcp_name(&tool), Some(tool), input)
        }
        _ => {
            let native = fields.required("tool_name")?;
            let mut input = fields.arguments("tool_input")?;
            let tool = vocabulary(&native, &mut input)?;
            let native = (tool != native).then_some(native);
            (tool, native, input)
        }
    };
    // A Shell tool call runs in its `working_directory` (Cursor's preToolUse): its paths are
    // judged there (a review overwrote `.cursor/hooks.json` by one judged in `cwd`).
    let cwd = match tool.as_str() {
        "Bash" => run_folder(Agent::Cursor, &input, "working_directory", cwd.as_deref())?.or(cwd),
        _ => cwd,
    };
    let mut shape = Shape::call(event, session, tool, input);
    if event == Event::Prompt {
        shape.prompt = Some(fields.required("prompt")?);
    }
    shape.tool_use_id = fields.string("tool_use_id")?;
    if event == Event::Post {
        shape.tool_response = ["tool_output", "result_json", "output"]
            .iter()
            .find_map(|key| object.get(*key).cloned());
    }
    shape.cwd = cwd;
    let ask = name != "beforeReadFile";
    Ok(Translated {
        agent: Agent::Cursor,
        event,
        input: shape.to_bytes(),
        native_tool: native,
        native_event: name,
        abilities: Abilities {
            ask,
            rewrite: false,
        },
        command_key: Some("command"),
        project,
        parent_session: None,
    })
}

/// Cursor names an MCP tool without its server: in the vocabulary it is
/// `mcp__cursor__TOOL`.
fn mcp_name(tool: &str) -> String {
    format!("mcp__cursor__{tool}")
}

/// A Cursor agent tool (`preToolUse`) onto the vocabulary. Its tools have named a file
/// `file_path` and `path`, and a write's text `contents` ([`unify`]).
fn vocabulary(native: &str, input: &mut Map<String, Value>) -> Result<String, ContractError> {
    let agent = Agent::Cursor;
    let tool = match native {
        "Shell" | "Terminal" => "Bash",
        "Read" | "ReadFile" => {
            unify(agent, input, &["file_path", "path"])?;
            "Read"
        }
        "Write" | "TabWrite" | "Delete" => {
            unify(agent, input, &["file_path", "path"])?;
            unify(agent, input, &["content", "contents"])?;
            "Write"
        }
        "StrReplace" | "Edit" | "MultiEdit" => {
            unify(agent, input, &["file_path", "path"])?;
            "Edit"
        }
        name => {
            return Ok(match name.strip_prefix("MCP:") {
                Some(tool) => mcp_name(tool),
                None => native.into(),
            })
        }
    };
    Ok(tool.into())
}
