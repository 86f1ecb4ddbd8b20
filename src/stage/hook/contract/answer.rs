//! The decision, in the words of the agent's contract: deny, ask and allow, the sandbox
//! rewrite where the agent takes one, and the refusal of an input the hook could not handle.
//! Where the agent cannot ask, a held call is refused; where it cannot run a rewritten command,
//! a call the pack would run confined is asked or refused with a reason that says so, and never
//! run unconfined.

use serde_json::{json, Map, Value};

use super::agent::{Agent, Event, Translated};
use crate::verdict::{Decision, Judgement};

/// What the hook decided for one call, before any agent's words.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Allowed, not confined: the agent's own permission rules apply.
    Allow,
    /// Allowed, to run with this input (the command under sc-sandbox).
    Confined(Map<String, Value>),
    /// Held: a person decides.
    Ask,
    /// Denied.
    Deny,
}

impl Outcome {
    /// The outcome of a decision, and the confined input of the hook's own answer (`line`).
    pub fn of(judgement: &Judgement, line: Option<&str>) -> Outcome {
        let updated = line
            .and_then(|line| serde_json::from_str::<Value>(line).ok())
            .and_then(|answer| {
                answer["hookSpecificOutput"]["updatedInput"]
                    .as_object()
                    .cloned()
            });
        match (judgement.decision, updated) {
            (Decision::Deny, _) => Outcome::Deny,
            (Decision::Hold, _) => Outcome::Ask,
            (Decision::Allow, Some(input)) => Outcome::Confined(input),
            (Decision::Allow, None) => Outcome::Allow,
        }
    }
}

const CANNOT_ASK: &str = "held for a person, and this agent's hooks cannot ask one, so the call is refused (run it yourself, or change the policy)";
const CANNOT_CONFINE: &str = "the policy runs this command only confined by sc-sandbox, and this agent cannot run a rewritten command";

/// The answer to a decided call (`PreToolUse` and its kin) in the agent's words; `None`: print
/// nothing. `line` is the hook's own (Claude Code) answer, which Claude Code gets unchanged.
pub fn decided(t: &Translated, judgement: &Judgement, line: Option<&str>) -> Option<String> {
    if t.agent == Agent::Claude {
        return line.map(str::to_owned);
    }
    let reason = format!("Skeleton Crew: {}", judgement.reasons.join("; "));
    let outcome = Outcome::of(judgement, line);
    let refuse = |why: &str| deny(t.agent, &format!("{reason}; {why}"));
    match outcome {
        Outcome::Allow => allow(t.agent),
        Outcome::Deny => deny(t.agent, &reason),
        Outcome::Ask if t.abilities.ask => ask(t.agent, &reason),
        Outcome::Ask => refuse(CANNOT_ASK),
        Outcome::Confined(input) if t.abilities.rewrite => {
            let key = t.command_key.unwrap_or("command");
            let command = input.get("command").cloned().unwrap_or(Value::Null);
            Some(
                json!({
                    "hookSpecificOutput": {"hookEventName": t.native_event, "tool_input": {key: command}},
                    "systemMessage": format!("{reason}; the command runs confined by sc-sandbox"),
                })
                .to_string(),
            )
        }
        Outcome::Confined(_) if t.abilities.ask => ask(
            t.agent,
            &format!("{reason}; {CANNOT_CONFINE}: approving it runs it unconfined"),
        ),
        Outcome::Confined(_) => refuse(&format!(
            "{CANNOT_CONFINE}, so it is refused rather than run unconfined"
        )),
    }
}

/// The answer to a recorded call or a prompt: the hook's own line (a warning) where the agent
/// shows one, else nothing.
pub fn recorded(t: &Translated, line: Option<&str>) -> Option<String> {
    match t.agent {
        Agent::Claude | Agent::Codex | Agent::Gemini => line.map(str::to_owned),
        Agent::Copilot | Agent::Cursor => None,
    }
}

/// How an input the hook could not handle is refused in `agent`'s contract: the line to print
/// (if any) and the exit status. Claude Code, Codex and Gemini CLI block on exit status 2 with
/// the reason on stderr; Copilot CLI and Cursor block on a deny answer (their documentation
/// says what a deny does, not what another exit status does), printed with status 0.
pub fn refusal(agent: Agent, event: Option<Event>, reason: &str) -> (Option<String>, u8) {
    let reason = format!("Skeleton Crew: {reason}; the tool call is blocked");
    match agent {
        Agent::Claude | Agent::Codex => (None, 2),
        Agent::Gemini => (deny(agent, &reason), 2),
        Agent::Copilot | Agent::Cursor => match event {
            Some(Event::Post) => (None, 0),
            _ => (deny(agent, &reason), 0),
        },
    }
}

fn allow(agent: Agent) -> Option<String> {
    match agent {
        // Gemini CLI reads stdout as JSON: an empty object decides nothing.
        Agent::Gemini | Agent::Cursor => Some("{}".to_owned()),
        _ => None,
    }
}

fn deny(agent: Agent, reason: &str) -> Option<String> {
    Some(
        match agent {
            Agent::Claude | Agent::Codex => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }}),
            Agent::Gemini => json!({"decision": "deny", "reason": reason}),
            Agent::Copilot => {
                json!({"permissionDecision": "deny", "permissionDecisionReason": reason})
            }
            Agent::Cursor => {
                json!({"permission": "deny", "user_message": reason, "agent_message": reason})
            }
        }
        .to_string(),
    )
}

fn ask(agent: Agent, reason: &str) -> Option<String> {
    Some(
        match agent {
            Agent::Cursor => {
                json!({"permission": "ask", "user_message": reason, "agent_message": reason})
            }
            _ => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": reason,
            }}),
        }
        .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::detect::translate;
    use super::*;

    fn judgement(decision: Decision) -> Judgement {
        Judgement {
            granting: Default::default(),
            decision,
            reasons: vec!["r".into()],
        }
    }

    fn shell(agent: Agent) -> Translated {
        let input = match agent {
            Agent::Claude => {
                r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}"#
            }
            Agent::Codex => {
                r#"{"session_id":"s","turn_id":"t","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}"#
            }
            Agent::Gemini => {
                r#"{"session_id":"s","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls"}}"#
            }
            Agent::Copilot => {
                r#"{"timestamp":1,"cwd":"/w","toolName":"bash","toolArgs":"{\"command\":\"ls\"}"}"#
            }
            Agent::Cursor => {
                r#"{"conversation_id":"c","hook_event_name":"beforeShellExecution","command":"ls","cwd":"/w"}"#
            }
        };
        translate(Some(agent), input.as_bytes()).unwrap()
    }

    const CONFINED: &str = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","updatedInput":{"command":"sc-sandbox -- ls"},"permissionDecisionReason":"x"}}"#;

    #[test]
    fn a_confined_call_never_runs_unconfined() {
        let allow = judgement(Decision::Allow);
        let gemini: Value =
            serde_json::from_str(&decided(&shell(Agent::Gemini), &allow, Some(CONFINED)).unwrap())
                .unwrap();
        assert_eq!(
            gemini["hookSpecificOutput"]["tool_input"]["command"],
            "sc-sandbox -- ls"
        );
        assert!(gemini.get("decision").is_none());
        for agent in [Agent::Codex, Agent::Copilot] {
            let text = decided(&shell(agent), &allow, Some(CONFINED)).unwrap();
            assert!(text.contains("\"deny\""), "{agent}: {text}");
            assert!(
                text.contains("cannot run a rewritten command"),
                "{agent}: {text}"
            );
        }
        let cursor = decided(&shell(Agent::Cursor), &allow, Some(CONFINED)).unwrap();
        assert!(
            cursor.contains("\"ask\"") && cursor.contains("runs it unconfined"),
            "{cursor}"
        );
        assert_eq!(
            decided(&shell(Agent::Claude), &allow, Some(CONFINED)).as_deref(),
            Some(CONFINED)
        );
    }

    #[test]
    fn a_held_call_is_asked_or_refused() {
        let hold = judgement(Decision::Hold);
        let line = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"x"}}"#;
        for (agent, word) in [
            (Agent::Codex, "deny"),
            (Agent::Gemini, "deny"),
            (Agent::Copilot, "deny"),
            (Agent::Cursor, "ask"),
        ] {
            let text = decided(&shell(agent), &hold, Some(line)).unwrap();
            assert!(text.contains(&format!("\"{word}\"")), "{agent}: {text}");
        }
        // Allowed, not confined: nothing that lets more through than the agent's own rules.
        let allow = judgement(Decision::Allow);
        assert_eq!(decided(&shell(Agent::Codex), &allow, None), None);
        assert_eq!(decided(&shell(Agent::Copilot), &allow, None), None);
        assert_eq!(
            decided(&shell(Agent::Cursor), &allow, None).as_deref(),
            Some("{}")
        );
    }
}
