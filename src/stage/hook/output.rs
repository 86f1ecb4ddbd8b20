//! The hook's answer on stdout: the `PreToolUse` decision Claude Code reads, and how a line of
//! it is written.

use std::io::Write;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use crate::verdict::{Decision, Judgement};

/// The Claude Code permission mode in which the user's own rules already let every call run
/// without asking: there, answering `allow` with the confined command changes nothing the user's
/// rules would do.
const NO_PROMPT_MODE: &str = "bypassPermissions";

/// The hook's answer for a judgement: `None` for an allowed call not confined (no decision:
/// Claude Code's own rules apply), else the `deny` or `ask` JSON line, with the tool input to run instead when the call is
/// confined ([`super::sandbox`]):
/// - deny: `deny`, never with an input;
/// - hold: `ask`, with the confined input when there is one: the person confirms what will run;
/// - allow, not confined: nothing, so Claude Code's own rules apply;
/// - allow, confined: `updatedInput` is only applied with a decision (Claude Code's hook
///   documentation: with `allow` it skips the permission prompt, with `ask` the user confirms
///   the modified input), and an answer without one could run the original unconfined. So
///   `ask`, which never lets a call past the user's rules, except in the `bypassPermissions`
///   mode, where the user's rules would run it without asking anyway: there, `allow`.
///
/// `approve_confined` (the policy's `sandbox.approveConfined`): the user chose to let a confined
/// call the gate allows run without the prompt, in every mode.
pub(crate) fn hook_answer(
    judgement: &Judgement,
    updated_input: Option<&Map<String, Value>>,
    permission_mode: Option<&str>,
    approve_confined: bool,
) -> Option<String> {
    let decision = match (judgement.decision, updated_input) {
        (Decision::Allow, None) => return None,
        (Decision::Allow, Some(_))
            if approve_confined || permission_mode == Some(NO_PROMPT_MODE) =>
        {
            "allow"
        }
        (Decision::Allow | Decision::Hold, _) => "ask",
        (Decision::Deny, _) => "deny",
    };
    let mut reason = format!("Skeleton Crew: {}", judgement.reasons.join("; "));
    let mut output = json!({
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
    });
    if let (Some(input), false) = (updated_input, judgement.decision == Decision::Deny) {
        reason.push_str("; the command runs confined by sc-sandbox");
        output["updatedInput"] = Value::Object(input.clone());
    }
    output["permissionDecisionReason"] = Value::String(reason);
    Some(json!({ "hookSpecificOutput": output }).to_string())
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
            granting: Default::default(),
            decision,
            reasons: vec!["r1".into(), "r2".into()],
        };
        assert_eq!(
            hook_answer(&judgement(Decision::Allow), None, None, false),
            None
        );
        let deny: Value = serde_json::from_str(
            &hook_answer(&judgement(Decision::Deny), None, None, false).unwrap(),
        )
        .unwrap();
        assert_eq!(
            deny,
            json!({"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Skeleton Crew: r1; r2"}})
        );
        let ask: Value = serde_json::from_str(
            &hook_answer(&judgement(Decision::Hold), None, None, false).unwrap(),
        )
        .unwrap();
        assert_eq!(ask["hookSpecificOutput"]["permissionDecision"], "ask");
    }

    #[test]
    fn a_confined_call_is_asked_unless_the_user_never_is() {
        let judgement = |decision| Judgement {
            granting: Default::default(),
            decision,
            reasons: vec!["r".into()],
        };
        let input: Map<String, Value> =
            serde_json::from_str(r#"{"command":"confined","timeout":5}"#).unwrap();
        let answer_with = |decision, mode, approve| -> Value {
            serde_json::from_str(
                &hook_answer(&judgement(decision), Some(&input), mode, approve).unwrap(),
            )
            .unwrap()
        };
        let answer = |decision, mode| answer_with(decision, mode, false);
        // The policy's `sandbox.approveConfined`: an allowed confined call runs without the
        // prompt in every mode; a held one is still asked, a denied one denied.
        for mode in [None, Some("default"), Some("plan")] {
            let allow = answer_with(Decision::Allow, mode, true);
            assert_eq!(allow["hookSpecificOutput"]["permissionDecision"], "allow");
            assert_eq!(
                allow["hookSpecificOutput"]["updatedInput"]["command"],
                "confined"
            );
            let hold = answer_with(Decision::Hold, mode, true);
            assert_eq!(hold["hookSpecificOutput"]["permissionDecision"], "ask");
            let deny = answer_with(Decision::Deny, mode, true);
            assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");
        }
        for mode in [None, Some("default"), Some("acceptEdits"), Some("plan")] {
            let allow = answer(Decision::Allow, mode);
            assert_eq!(allow["hookSpecificOutput"]["permissionDecision"], "ask");
            assert_eq!(
                allow["hookSpecificOutput"]["updatedInput"],
                json!({"command":"confined","timeout":5})
            );
        }
        let bypass = answer(Decision::Allow, Some("bypassPermissions"));
        assert_eq!(bypass["hookSpecificOutput"]["permissionDecision"], "allow");
        let hold = answer(Decision::Hold, Some("bypassPermissions"));
        assert_eq!(hold["hookSpecificOutput"]["permissionDecision"], "ask");
        assert_eq!(
            hold["hookSpecificOutput"]["updatedInput"]["command"],
            "confined"
        );
        let deny = answer(Decision::Deny, None);
        assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");
        assert!(deny["hookSpecificOutput"].get("updatedInput").is_none());
    }
}
