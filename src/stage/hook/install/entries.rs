//! The hook entries install writes for each agent: which events, which matcher, and the
//! handler naming sc-hook; and whether a handler already there is one of sc-hook's.

use serde_json::{json, Value};

use crate::stage::hook::contract::Agent;

/// One event's entry: the event, its matcher (if the agent's groups take one) and the handler.
pub(super) struct Entry {
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    pub handler: Value,
}

/// How an agent's file holds its handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// `hooks.EVENT = [{matcher, hooks: [handler]}]` (Claude Code, Codex, Gemini CLI).
    Grouped,
    /// `{version: 1, hooks: {EVENT: [handler]}}` (Copilot CLI, Cursor).
    Flat,
}

pub(super) fn layout(agent: Agent) -> Layout {
    match agent {
        Agent::Claude | Agent::Codex | Agent::Gemini => Layout::Grouped,
        Agent::Copilot | Agent::Cursor => Layout::Flat,
    }
}

/// The key of a handler that holds its command.
pub(super) fn command_key(agent: Agent) -> &'static str {
    match agent {
        Agent::Copilot => "bash",
        _ => "command",
    }
}

/// The entries for `agent`, each running `command`.
pub(super) fn entries(agent: Agent, command: &str) -> Vec<Entry> {
    let entry = |event, matcher, handler| Entry {
        event,
        matcher,
        handler,
    };
    match agent {
        Agent::Claude | Agent::Codex => {
            let handler = json!({"type": "command", "command": command, "timeout": 30});
            vec![
                entry("PreToolUse", Some("*"), handler.clone()),
                entry("PostToolUse", Some("*"), handler.clone()),
                entry("UserPromptSubmit", None, handler),
            ]
        }
        Agent::Gemini => {
            let handler = json!({"name": "skeleton-crew", "type": "command", "command": command, "timeout": 30000});
            vec![
                entry("BeforeTool", Some(".*"), handler.clone()),
                entry("AfterTool", Some(".*"), handler.clone()),
                entry("BeforeAgent", None, handler),
            ]
        }
        Agent::Copilot => {
            let handler = json!({"type": "command", "bash": command, "timeoutSec": 30});
            ["preToolUse", "postToolUse", "userPromptSubmitted"]
                .into_iter()
                .map(|event| entry(event, None, handler.clone()))
                .collect()
        }
        Agent::Cursor => {
            let handler = json!({"command": command});
            let mut all: Vec<Entry> = [
                "beforeShellExecution",
                "beforeMCPExecution",
                "beforeReadFile",
                "afterShellExecution",
                "afterMCPExecution",
                "afterFileEdit",
                "beforeSubmitPrompt",
            ]
            .into_iter()
            .map(|event| entry(event, None, handler.clone()))
            .collect();
            // File writes reach a hook only through preToolUse; the shell, reads and MCP
            // have their own events above.
            all.push(entry(
                "preToolUse",
                None,
                json!({"command": command, "matcher": "Write|StrReplace|Edit|Delete"}),
            ));
            all
        }
    }
}

/// Whether a handler's command is sc-hook's for `agent`: its program is named `sc-hook` and it
/// says `--for NAME`.
pub(super) fn is_ours(agent: Agent, command: &str) -> bool {
    let words = split_words(command);
    let program = words.first().map(|w| w.rsplit('/').next().unwrap_or(w));
    program == Some("sc-hook")
        && words
            .windows(2)
            .any(|pair| pair[0] == "--for" && pair[1] == agent.name())
}

/// The words of a command line as install writes it: plain words and single-quoted parts.
fn split_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut started = false;
    let mut escaped = false;
    for c in command.chars() {
        if escaped {
            word.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\'' => {
                quoted = !quoted;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            '\\' if !quoted => {
                escaped = true;
                started = true;
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_its_own_handlers() {
        assert!(is_ours(
            Agent::Codex,
            "/opt/bin/sc-hook --for codex --policy '/a b/p.json'"
        ));
        assert!(is_ours(Agent::Codex, "'/x y/sc-hook' --for codex"));
        assert!(!is_ours(Agent::Codex, "/opt/bin/sc-hook --for gemini"));
        assert!(!is_ours(Agent::Claude, "/opt/bin/other-hook --for claude"));
        assert!(!is_ours(Agent::Claude, "sc-hook --policy p.json"));
        assert_eq!(split_words("a 'b c' d"), ["a", "b c", "d"]);
        assert_eq!(split_words(r"'it'\''s'"), ["it's"]);
    }
}
