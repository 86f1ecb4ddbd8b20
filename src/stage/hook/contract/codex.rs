//! Codex CLI's contract: Claude Code's shape (`session_id`, `hook_event_name`, `tool_name`,
//! `tool_input`, `tool_use_id`, `cwd`) plus `turn_id` and `model`. Its shell tool is `Bash`
//! (older releases: `shell`, `local_shell`, `exec_command`, with the command as a list of
//! words), its file edits are `apply_patch` (the patch in `tool_input.command`, or a `Bash`
//! command that runs `apply_patch` on a here-document, which Codex applies itself), and MCP tools
//! are `mcp__SERVER__TOOL`. Codex honours a `deny` decision and exit status 2; it rejects
//! `updatedInput` ("unsupported"), so a call the pack would run confined is refused with a
//! reason that says so, and it has no way for a hook to ask, so a held call is refused too.

use serde_json::{Map, Value};

use super::agent::{Abilities, Agent, Event, Shape, Translated};
use super::claude::event_of;
use super::fields::{run_folder, within, ContractError, Fields};

pub(super) fn translate(object: &Map<String, Value>) -> Result<Translated, ContractError> {
    let fields = Fields {
        agent: Agent::Codex,
        object,
    };
    let name = fields.required("hook_event_name")?;
    let event = event_of(&name).ok_or_else(|| {
        fields.error(format!(
            "is a {name:?} event; sc-hook answers PreToolUse, PostToolUse and UserPromptSubmit"
        ))
    })?;
    let session = fields.required("session_id")?;
    let cwd = fields.string("cwd")?;
    let mut shape = if event == Event::Prompt {
        let mut shape = Shape::call(event, session, String::new(), Map::new());
        shape.prompt = Some(fields.required("prompt")?);
        shape
    } else {
        let native = fields.required("tool_name")?;
        let input = fields.arguments("tool_input")?;
        let workdir = run_folder(Agent::Codex, &input, "workdir", cwd.as_deref())?;
        let (mut tool, mut input) = vocabulary(&native, input).map_err(|why| fields.error(why))?;
        let mut workdir = workdir;
        // A command Codex does not run but applies itself (`apply_patch` reading a patch from a
        // here-document, after one `cd` or none): judged as the patch, file by file, in the
        // folder it is applied in.
        let invocation = match input.get("command") {
            Some(Value::String(command)) if tool == "Bash" => {
                crate::rules::shell::patch_invocation(command).map(|found| (found, command.clone()))
            }
            _ => None,
        };
        if let Some((invocation, command)) = invocation {
            if let Some(folder) = &invocation.folder {
                let base = workdir.clone().or_else(|| cwd.clone());
                workdir = Some(within(base.as_deref(), folder));
            }
            (tool, input) = super::patch::heredoc_patch_call(invocation.patch, &command)
                .map_err(|why| fields.error(why))?;
        }
        // Codex runs a command in the shell its model names (`shell`, which the hook input
        // leaves out), else the user's own: a command whose bash syntax another shell reads
        // otherwise is refused, since the gate reads it as bash (a review ran `echo $'\' ;
        // echo pwned >> .codex/config.toml ; #'` under `sh`, where bash reads one `echo`).
        if tool == "Bash" && event == Event::Pre {
            if let Some(Value::String(command)) = input.get("command") {
                if let Some(part) = crate::rules::shell::analyse(command).other_shells.first() {
                    return Err(fields.error(format!(
                        "has a command Codex may run in another shell than bash, which reads it otherwise: {} ({})",
                        part.what, part.why
                    )));
                }
            }
        }
        let mut shape = Shape::call(event, session, tool, input);
        shape.cwd = workdir;
        shape.tool_use_id = fields.string("tool_use_id")?;
        if event == Event::Post {
            shape.tool_response = object.get("tool_response").cloned();
        }
        shape
    };
    if shape.cwd.is_none() {
        shape.cwd = cwd;
    }
    shape.agent_type = fields.string("agent_type")?;
    let native_tool = (!shape.tool_name.is_empty())
        .then(|| fields.string("tool_name").ok().flatten())
        .flatten()
        .filter(|native| *native != shape.tool_name);
    Ok(Translated {
        agent: Agent::Codex,
        event,
        input: shape.to_bytes(),
        native_tool,
        native_event: name,
        abilities: Abilities {
            ask: false,
            rewrite: false,
        },
        command_key: Some("command"),
        project: None,
        parent_session: None,
    })
}

/// A Codex tool onto the vocabulary: its shell tools are `Bash` with the command as text, and a
/// patch is read as [`super::patch`] says.
fn vocabulary(
    native: &str,
    mut input: Map<String, Value>,
) -> Result<(String, Map<String, Value>), &'static str> {
    Ok(match native {
        "Bash" | "shell" | "local_shell" | "exec_command" | "unified_exec" | "container.exec" => {
            if let Some(Value::Array(words)) = input.get("command") {
                if let Some(text) = join_words(words) {
                    input.insert("command".into(), Value::String(text));
                }
            }
            ("Bash".into(), input)
        }
        "apply_patch" => match super::patch::patch_in(&input) {
            Some(patch) => super::patch::patch_call(patch)?,
            None => return Err(super::patch::NO_PATCH),
        },
        _ => (native.into(), input),
    })
}

/// A command given as a list of words, as one shell command line (each word quoted where it
/// needs to be); `None` when a word is not a string.
fn join_words(words: &[Value]) -> Option<String> {
    let words: Option<Vec<&str>> = words.iter().map(Value::as_str).collect();
    Some(
        words?
            .into_iter()
            .map(super::quote::shell_word)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_command_of_words_is_one_line() {
        let input = json!({"command": ["bash", "-lc", "git status"]})
            .as_object()
            .unwrap()
            .clone();
        let (tool, args) = vocabulary("shell", input).unwrap();
        assert_eq!(tool, "Bash");
        assert_eq!(args["command"], "bash -lc 'git status'");
    }
}
