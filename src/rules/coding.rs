//! What the coding-agent keys (`commands`, `paths`) say about one call, as findings for the
//! decision.

use crate::call::Call;
use crate::rules::policy::Policy;
use crate::verdict::Decision;

/// What the `commands` and `paths` keys say about a call, as findings for the decision
/// ([`decision::evaluate_with_state`]): for a tool `commands` maps, its command's decision
/// (allow included, so that an allowed command's reason names its rule); for a tool `paths`
/// maps, the decision on its path when it is stricter than allow (path rules only add). The
/// path is placed against the call's `cwd` and the policy's [`paths::Places`]. `tainted` is
/// whether the taint rule would hold the call (the agent is tainted and the user did not order
/// it). Empty for every other tool.
pub(crate) fn coding_agent_findings(
    call: &Call,
    policy: &Policy,
    tainted: bool,
) -> Vec<CodingFinding> {
    let mut findings = Vec::new();
    let context = policy.places().context(call.cwd.as_deref());
    if let Some(commands) = policy.commands() {
        if let Some(judged) = commands.decide_call(
            &call.tool,
            call.args.map(),
            tainted,
            policy.paths(),
            context,
        ) {
            findings.push(CodingFinding {
                decision: judged.decision,
                reasons: judged.reasons,
                by_taint: judged.by_taint,
            });
        }
    }
    if let Some(paths) = policy.paths() {
        if let Some(judged) = paths.decide_call(&call.tool, call.args.map(), context) {
            if judged.decision > Decision::Allow {
                findings.push(CodingFinding {
                    decision: judged.decision,
                    reasons: judged.reasons,
                    by_taint: false,
                });
            }
        }
    }
    findings
}

/// A decision of the `commands` or `paths` key on a call, with its reasons, and whether it is a
/// hold only because the agent is tainted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodingFinding {
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub by_taint: bool,
}
