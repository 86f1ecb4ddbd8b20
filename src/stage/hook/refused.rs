//! A hook input refused before the gate decided it: one the agent's contract cannot read (a name
//! given twice, syntax another shell reads otherwise at Codex's door), a subagent whose parent
//! session was never seen, a call the state store could not decide. The agent is told no, as
//! its contract blocks a call, and the audit log says so: every refusal is a decision of the
//! gate's, and the log holds every decision.

use anyhow::Result;

use super::contract::{Agent, Event};
use crate::audit::{self, AuditLog, IdMinter, Stage};
use crate::json_write::raw_excerpt;

/// Appends the refusal of one hook input under a new id, with the reason (its first kilobyte),
/// the agent, the event where it was read, and the input's SHA-256 and length.
///
/// A `PreToolUse` is a `gate` event `deny`, with the start of the input as it came (`raw`, as
/// the gate keeps a line it cannot read: a call's arguments are in the log anyway). A
/// `PostToolUse` is an `exec` event whose outcome is `unrecorded`: the call ran, and what it
/// gave back was not recorded. A prompt, and an input whose event was not read, is a `gate`
/// event `deny` (a prompt refused is blocked). Neither of these carries `raw`: a prompt and a
/// tool's response are kept in the log only as digests, and a refused one must not leak them.
pub fn audit_refusal(
    audit_log: &mut AuditLog,
    agent: Agent,
    event: Option<Event>,
    input: Option<&[u8]>,
    reason: &anyhow::Error,
) -> Result<()> {
    let id = IdMinter::new().mint();
    let reason = raw_excerpt(
        format!("sc-hook refused the hook input before the gate could decide it: {reason:#}")
            .as_bytes(),
    );
    let mut line = if event == Some(Event::Post) {
        audit::event(Stage::Exec, &id).field(
            "outcome",
            &serde_json::json!({"status": "unrecorded", "reason": reason}),
        )
    } else {
        let mut line = audit::event(Stage::Gate, &id);
        if let (Some(input), Some(Event::Pre)) = (input, event) {
            line = line.field("raw", &raw_excerpt(input.trim_ascii()));
        }
        line.field("decision", &crate::verdict::Decision::Deny)
            .field("reasons", &[reason])
    };
    line = line.field("agentKind", agent.kind());
    if let Some(event) = event {
        line = line.field("hookEvent", event.claude_name());
    }
    if let Some(input) = input {
        use sha2::{Digest, Sha256};
        let digest: [u8; 32] = Sha256::digest(input).into();
        line = line
            .str_field("inputSha256", &crate::hex::encode(digest))
            .field("inputLength", &input.len());
    }
    audit_log.append(&line.finish())
}

#[cfg(test)]
#[path = "refused_tests.rs"]
mod tests;
