//! Gemini CLI's contract (hooks in `settings.json`): `BeforeTool`, `AfterTool` and
//! `BeforeAgent`, with `session_id`, `cwd`, `tool_name`, `tool_input` (and `tool_response`,
//! `prompt`, `mcp_context`). A hook denies with `{"decision":"deny","reason":…}` or exit status
//! 2; `hookSpecificOutput.tool_input` is merged over the model's arguments, so a shell command
//! can run confined. It has no way for a hook to ask: a held call is refused with its reason.

use serde_json::{Map, Value};

use super::agent::{Abilities, Agent, Event, Shape, Translated};
use super::fields::{run_folder, unify, ContractError, Fields};

pub(super) fn event_of(name: &str) -> Option<Event> {
    match name {
        "BeforeTool" => Some(Event::Pre),
        "AfterTool" => Some(Event::Post),
        "BeforeAgent" => Some(Event::Prompt),
        _ => None,
    }
}

pub(super) fn translate(object: &Map<String, Value>) -> Result<Translated, ContractError> {
    let fields = Fields {
        agent: Agent::Gemini,
        object,
    };
    let name = fields.required("hook_event_name")?;
    let event = event_of(&name).ok_or_else(|| {
        fields.error(format!(
            "is a {name:?} event; sc-hook answers BeforeTool, AfterTool and BeforeAgent"
        ))
    })?;
    let session = fields.required("session_id")?;
    let cwd = fields.string("cwd")?;
    let mut native_tool = None;
    let mut shape = if event == Event::Prompt {
        let mut shape = Shape::call(event, session, String::new(), Map::new());
        shape.prompt = Some(fields.required("prompt")?);
        shape.cwd = cwd;
        shape
    } else {
        let native = fields.required("tool_name")?;
        let mut input = fields.arguments("tool_input")?;
        let tool = vocabulary(&native, object.get("mcp_context"), &mut input)?;
        // The folder a shell command runs in: `dir_path` now, `directory` in older versions
        // (one argument since `vocabulary`).
        let folder = match tool.as_str() {
            "Bash" => run_folder(Agent::Gemini, &input, "dir_path", cwd.as_deref())?,
            _ => None,
        };
        if tool != native {
            native_tool = Some(native);
        }
        let mut shape = Shape::call(event, session, tool, input);
        shape.cwd = folder.or(cwd);
        if event == Event::Post {
            shape.tool_response = object.get("tool_response").map(|response| {
                // Gemini reports a failure as an `error` in the response: the hook reads
                // `isError`.
                let mut response = response.clone();
                if let Value::Object(fields) = &mut response {
                    let failed = fields.get("error").is_some_and(|error| !error.is_null());
                    fields.insert("isError".into(), Value::Bool(failed));
                }
                response
            });
        }
        shape
    };
    shape.agent_type = None;
    Ok(Translated {
        agent: Agent::Gemini,
        event,
        input: shape.to_bytes(),
        native_tool,
        native_event: name,
        abilities: Abilities {
            ask: false,
            rewrite: true,
        },
        command_key: Some("command"),
        project: std::env::var_os("GEMINI_PROJECT_DIR").map(std::path::PathBuf::from),
        parent_session: None,
    })
}

/// A Gemini CLI tool onto the vocabulary; its arguments renamed to the vocabulary's.
fn vocabulary(
    native: &str,
    mcp: Option<&Value>,
    input: &mut Map<String, Value>,
) -> Result<String, ContractError> {
    Ok(match native {
        "run_shell_command" => {
            unify(Agent::Gemini, input, &["dir_path", "directory"])?;
            "Bash".into()
        }
        "read_file" => {
            // `file_path` now; `absolute_path` and `path` in older versions.
            unify(
                Agent::Gemini,
                input,
                &["file_path", "absolute_path", "path"],
            )?;
            "Read".into()
        }
        "write_file" => "Write".into(),
        "replace" | "edit" => "Edit".into(),
        "google_web_search" => "WebSearch".into(),
        // Gemini CLI still runs its search by its former name (`TOOL_LEGACY_ALIASES`): judged
        // as the search it is (a review read a tainted session's `.env` by that name).
        "search_file_content" => "grep_search".into(),
        _ => match mcp {
            // An MCP tool: named as every agent names one, by its server.
            Some(Value::Object(context)) => match (
                context.get("server_name").and_then(Value::as_str),
                context.get("tool_name").and_then(Value::as_str),
            ) {
                (Some(server), Some(tool)) => format!("mcp__{server}__{tool}"),
                _ => native.into(),
            },
            _ => native.into(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn translated(tool_input: Value) -> Result<Value, ContractError> {
        let Value::Object(object) = json!({"session_id": "s", "hook_event_name": "BeforeTool",
            "cwd": "/p", "tool_name": "run_shell_command", "tool_input": tool_input})
        else {
            unreachable!()
        };
        translate(&object).map(|t| serde_json::from_slice(&t.input).unwrap())
    }

    #[test]
    fn a_shell_command_is_placed_in_the_folder_it_runs_in() {
        for (input, cwd) in [
            (json!({"command": "ls"}), "/p"),
            (
                json!({"command": "ls", "dir_path": ".gemini"}),
                "/p/.gemini",
            ),
            (json!({"command": "ls", "dir_path": "/q"}), "/q"),
            (json!({"command": "ls", "directory": "sub"}), "/p/sub"),
            (
                json!({"command": "ls", "dir_path": "sub", "directory": "sub"}),
                "/p/sub",
            ),
            (json!({"command": "ls", "dir_path": null}), "/p"),
        ] {
            assert_eq!(translated(input.clone()).unwrap()["cwd"], cwd, "{input}");
        }
        for input in [
            json!({"command": "ls", "dir_path": [".gemini"]}),
            json!({"command": "ls", "dir_path": ".gemini", "directory": "."}),
        ] {
            assert!(translated(input.clone()).is_err(), "{input}");
        }
    }
}
