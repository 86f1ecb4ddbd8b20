//! GitHub Copilot CLI's contract (`.github/hooks/*.json`): `preToolUse`, `postToolUse` and
//! `userPromptSubmitted`, each a JSON object without an event name: `sessionId` (1.0 on),
//! `timestamp`, `cwd`, `toolName` (an MCP tool's is `SERVER-TOOL`), `toolArgs` (a JSON string,
//! or an object as 1.0 sends it), `toolResult` after the call, `prompt` for a prompt. The event is told by the shape: `toolResult` is there only after a
//! call. A hook denies with `{"permissionDecision":"deny","permissionDecisionReason":…}`; the
//! CLI processes only `deny` (its documentation says so), and its command hooks cannot rewrite
//! the arguments (`modifiedArgs` is the SDK's, not the CLI's): a held call, and one the pack
//! would run confined, are denied with a reason that says so.

use serde_json::{Map, Value};

use super::agent::{Abilities, Agent, Event, Shape, Translated};
use super::fields::{rename, session_for_folder, ContractError, Fields};

pub(super) fn translate(object: &Map<String, Value>) -> Result<Translated, ContractError> {
    let fields = Fields {
        agent: Agent::Copilot,
        object,
    };
    let cwd = fields.string("cwd")?;
    // Copilot CLI 1.0 names the session (`sessionId`); an input without one shares the state
    // of its working folder.
    let session = match fields.string("sessionId")? {
        Some(id) if !id.is_empty() => id,
        _ => session_for_folder("copilot", cwd.as_deref()),
    };
    // A subagent (the `task` tool) has a session of its own, and names the session of the agent
    // that started it: its state is that one's (a review ran a tainted session's `make`
    // unconfined through a subagent).
    let parent_session = match fields.string("parentAgentId")? {
        // A subagent names its own session too; an empty parent is none a subagent names.
        Some(parent) if parent.is_empty() || !object.contains_key("sessionId") => {
            return Err(fields.error(
                "names an empty parent session (`parentAgentId`), or a parent without a `sessionId` of its own",
            ))
        }
        Some(parent) if parent == session => None,
        other => other,
    };
    let has_tool = object.contains_key("toolName");
    let event = if !has_tool && object.contains_key("prompt") {
        Event::Prompt
    } else if object.contains_key("toolResult") {
        Event::Post
    } else {
        Event::Pre
    };
    let mut native_tool = None;
    let mut shape = if event == Event::Prompt {
        let mut shape = Shape::call(event, session, String::new(), Map::new());
        shape.prompt = Some(fields.required("prompt")?);
        shape
    } else {
        let native = fields.required("toolName")?;
        let (tool, input) = if native == "apply_patch" {
            // The freeform `apply_patch` it offers the Codex models: `toolArgs` is the text the
            // model wrote, which the tool applies as it is (seen in Copilot CLI 1.0.102).
            let patch = match object.get("toolArgs") {
                Some(Value::String(text)) => Some(text.clone()),
                Some(Value::Object(args)) => super::patch::patch_in(args),
                _ => None,
            };
            let patch = patch.ok_or_else(|| fields.error(super::patch::NO_PATCH))?;
            super::patch::patch_call(patch).map_err(|why| fields.error(why))?
        } else {
            let mut input = fields.arguments("toolArgs")?;
            let tool = vocabulary(&native, &mut input)?;
            (tool, input)
        };
        if tool != native {
            native_tool = Some(native);
        }
        let mut shape = Shape::call(event, session, tool, input);
        if event == Event::Post {
            shape.tool_response = object.get("toolResult").map(|result| {
                let mut result = result.clone();
                if let Value::Object(fields) = &mut result {
                    let failed =
                        fields.get("resultType").and_then(Value::as_str) == Some("failure");
                    fields.insert("isError".into(), Value::Bool(failed));
                }
                result
            });
        }
        shape
    };
    shape.cwd = cwd;
    let native_event = match event {
        Event::Pre => "preToolUse",
        Event::Post => "postToolUse",
        Event::Prompt => "userPromptSubmitted",
    };
    Ok(Translated {
        agent: Agent::Copilot,
        event,
        input: shape.to_bytes(),
        native_tool,
        native_event: native_event.into(),
        abilities: Abilities {
            ask: false,
            rewrite: false,
        },
        command_key: Some("command"),
        project: None,
        parent_session,
    })
}

/// A Copilot CLI tool onto the vocabulary: its file tools are Claude Code's, their arguments
/// renamed ([`rename`]); its search tools `grep` (which prints what it finds in the files under
/// `paths`, else under its working folder) and `glob` are `Grep` and `Glob`, with `paths` (a
/// string or a list) as `path`, so the pack's rules on searches judge them.
fn vocabulary(native: &str, input: &mut Map<String, Value>) -> Result<String, ContractError> {
    let agent = Agent::Copilot;
    let tool = match native {
        "bash" | "shell" | "powershell" => "Bash",
        "view" | "read" => {
            rename(agent, input, "path", "file_path")?;
            "Read"
        }
        "create" => {
            rename(agent, input, "path", "file_path")?;
            rename(agent, input, "file_text", "content")?;
            "Write"
        }
        "edit" | "str_replace" => {
            rename(agent, input, "path", "file_path")?;
            rename(agent, input, "old_str", "old_string")?;
            rename(agent, input, "new_str", "new_string")?;
            "Edit"
        }
        // `rg` is the same search, offered to the Codex models (1.0.102).
        "grep" | "rg" => {
            rename(agent, input, "paths", "path")?;
            "Grep"
        }
        "glob" => {
            rename(agent, input, "paths", "path")?;
            "Glob"
        }
        "web_fetch" => "WebFetch",
        "web_search" => "WebSearch",
        // An MCP server's tool is `SERVER-TOOL` (no built-in tool has a `-`): split at the last
        // one, as server names have dashes (`github-mcp-server`) and tool names rarely do.
        _ => {
            return Ok(match native.rsplit_once('-') {
                Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
                    format!("mcp__{server}__{tool}")
                }
                _ => native.into(),
            })
        }
    };
    Ok(tool.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mcp_tool_is_named_as_every_agent_names_it() {
        let mut input = Map::new();
        assert_eq!(
            vocabulary("fetch-echo", &mut input).unwrap(),
            "mcp__fetch__echo"
        );
        assert_eq!(
            vocabulary("github-mcp-server-get_issue", &mut input).unwrap(),
            "mcp__github-mcp-server__get_issue"
        );
        assert_eq!(vocabulary("read_bash", &mut input).unwrap(), "read_bash");
        assert_eq!(vocabulary("-x", &mut input).unwrap(), "-x");
    }

    #[test]
    fn copilot_s_searches_are_grep_and_glob() {
        for native in ["grep", "rg"] {
            let mut input = serde_json::json!({"pattern": "KEY", "paths": ["/h/.ssh"]})
                .as_object()
                .unwrap()
                .clone();
            assert_eq!(vocabulary(native, &mut input).unwrap(), "Grep");
            assert_eq!(input["path"], serde_json::json!(["/h/.ssh"]));
        }
        let mut input = serde_json::json!({"pattern": "*", "paths": "/h/.ssh"})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(vocabulary("glob", &mut input).unwrap(), "Glob");
        assert_eq!(input["path"], "/h/.ssh");
    }

    #[test]
    fn a_subagent_names_its_parent_and_its_own_session() {
        let read = |input: Value| {
            let Value::Object(object) = input else {
                unreachable!()
            };
            translate(&object).map(|translated| translated.parent_session)
        };
        let call = |extra: Value| {
            let mut input = serde_json::json!({"cwd": "/w", "toolName": "bash",
                                               "toolArgs": {"command": "make"}});
            input
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            input
        };
        use serde_json::json;
        assert_eq!(
            read(call(json!({"sessionId": "c", "parentAgentId": "m"}))).unwrap(),
            Some("m".to_owned())
        );
        assert_eq!(read(call(json!({"sessionId": "c"}))).unwrap(), None);
        assert_eq!(
            read(call(json!({"sessionId": "c", "parentAgentId": "c"}))).unwrap(),
            None
        );
        // An empty parent is not "no parent", and a subagent without a session of its own
        // would bind the folder's shared one to its parent (a review).
        assert!(read(call(json!({"sessionId": "c", "parentAgentId": ""}))).is_err());
        assert!(read(call(json!({"parentAgentId": "m"}))).is_err());
    }

    #[test]
    fn the_session_is_copilots_own_when_it_names_one() {
        let read = |input: Value| {
            let Value::Object(object) = input else {
                unreachable!()
            };
            let translated = translate(&object).unwrap();
            let hook: Value = serde_json::from_slice(&translated.input).unwrap();
            hook["session_id"].as_str().unwrap().to_owned()
        };
        let named = serde_json::json!({"sessionId": "5e39fd74", "cwd": "/w", "toolName": "bash",
                                       "toolArgs": "{\"command\":\"ls\"}"});
        assert_eq!(read(named), "5e39fd74");
        let unnamed = serde_json::json!({"cwd": "/w", "toolName": "bash",
                                         "toolArgs": "{\"command\":\"ls\"}"});
        assert!(read(unnamed).starts_with("copilot-"));
    }
}
