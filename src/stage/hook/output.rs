//! The hook's answer on stdout: the `PreToolUse` decision Claude Code reads, and how a line of
//! it is written.

use std::io::Write;

use anyhow::{Context, Result};
use serde_json::json;

use crate::verdict::{Decision, Judgement};

/// The hook's answer for a judgement: `None` for allow (no decision: Claude Code's own rules
/// apply), else the `deny` or `ask` JSON line.
pub(crate) fn hook_output(judgement: &Judgement) -> Option<String> {
    let decision = match judgement.decision {
        Decision::Allow => return None,
        Decision::Hold => "ask",
        Decision::Deny => "deny",
    };
    let reason = format!("Skeleton Crew: {}", judgement.reasons.join("; "));
    Some(
        json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": reason,
            }
        })
        .to_string(),
    )
}

pub(super) fn write_answer(out: &mut dyn Write, line: &str) -> Result<()> {
    out.write_all(line.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .context("cannot write the hook's answer")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn allow_says_nothing_and_the_others_say_why() {
        let judgement = |decision| Judgement {
            decision,
            reasons: vec!["r1".into(), "r2".into()],
        };
        assert_eq!(hook_output(&judgement(Decision::Allow)), None);
        let deny: Value =
            serde_json::from_str(&hook_output(&judgement(Decision::Deny)).unwrap()).unwrap();
        assert_eq!(
            deny,
            json!({"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Skeleton Crew: r1; r2"}})
        );
        let ask: Value =
            serde_json::from_str(&hook_output(&judgement(Decision::Hold)).unwrap()).unwrap();
        assert_eq!(ask["hookSpecificOutput"]["permissionDecision"], "ask");
    }
}
