//! A hook input refused before the gate decided it: one the agent's contract cannot read (a name
//! given twice, syntax another shell reads otherwise at Codex's door), a subagent whose parent
//! session was never seen, a call the state store could not decide. The agent is told no, as
//! its contract blocks a call, and the audit log says so: every refusal is a decision of the
//! gate's, and the log holds every decision.

use anyhow::Result;

use super::contract::{Agent, Event};
use crate::audit::{self, AuditLog, IdMinter, Stage};

/// Appends the refusal of one hook input: a `deny` under a new id, with the reason, the agent,
/// the event where it was read, and the start of the input as it came (`raw`, as the gate keeps
/// a line it cannot read), where there was one.
pub fn audit_refusal(
    audit_log: &mut AuditLog,
    agent: Agent,
    event: Option<Event>,
    input: Option<&[u8]>,
    reason: &anyhow::Error,
) -> Result<()> {
    let id = IdMinter::new().mint();
    let mut line = audit::event(Stage::Gate, &id);
    if let Some(input) = input {
        line = line.field("raw", &crate::json_write::raw_excerpt(input.trim_ascii()));
    }
    line = line
        .field("decision", &crate::verdict::Decision::Deny)
        .field(
            "reasons",
            &[format!(
                "sc-hook refused the hook input before the gate could decide it: {reason:#}"
            )],
        )
        .field("agentKind", agent.kind());
    if let Some(event) = event {
        line = line.field("hookEvent", event.claude_name());
    }
    audit_log.append(&line.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_a_chained_deny_with_its_reason_and_the_input_s_start() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("audit.jsonl");
        let mut log = AuditLog::open(&path).unwrap();
        let long = format!("{{\"toolName\":\"{}\"}}", "x".repeat(5000));
        let reason = anyhow::anyhow!("a name given twice").context("the input");
        audit_refusal(
            &mut log,
            Agent::Copilot,
            Some(Event::Pre),
            Some(long.as_bytes()),
            &reason,
        )
        .unwrap();
        audit_refusal(&mut log, Agent::Gemini, None, None, &reason).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["decision"], "deny");
        assert_eq!(events[0]["stage"], "gate");
        assert_eq!(events[0]["agentKind"], "copilot");
        assert_eq!(events[0]["hookEvent"], "PreToolUse");
        assert_eq!(
            events[0]["reasons"][0],
            "sc-hook refused the hook input before the gate could decide it: the input: a name given twice"
        );
        let raw = events[0]["raw"].as_str().unwrap();
        assert!(
            raw.starts_with("{\"toolName\":\"xxx") && raw.len() < 1100,
            "{raw}"
        );
        assert_eq!(events[1]["agentKind"], "gemini");
        assert!(events[1].get("raw").is_none() && events[1].get("hookEvent").is_none());
        assert_eq!(events[1]["seq"], 2);
        let intact = crate::audit::verify::verify(
            || std::fs::File::open(&path),
            &crate::audit::chain::Chain::Sha256,
            None,
        )
        .unwrap();
        assert!(intact.is_ok());
    }
}
