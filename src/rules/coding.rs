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
///
/// Where the policy's sandbox applies to the session ([`Judging::sandboxed`]), a file tool's
/// path is judged against the sandbox's `readOnly` and `hidden` places too
/// ([`Policy::sandbox_paths`]), placed at the project's folder: the sandbox confines `Bash`,
/// and a file tool must not change what it keeps read-only.
pub(crate) fn coding_agent_findings(
    call: &Call,
    policy: &Policy,
    judging: Judging,
) -> Vec<CodingFinding> {
    let mut findings = Vec::new();
    let context = policy.places().context(call.cwd.as_deref());
    if let Some(commands) = policy.commands() {
        if let Some(judged) = commands.decide_call(
            &call.tool,
            call.args.map(),
            judging.tainted,
            judging.confined,
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
    if let (true, Some(sandbox)) = (judging.sandboxed, policy.sandbox_paths()) {
        let mut placed = context;
        if let Some(project) = judging.project {
            placed.root = Some(project);
        }
        if let Some(judged) = sandbox.decide_call(&call.tool, call.args.map(), placed) {
            // A malformed path is said once, by the `paths` key when it maps the tool too.
            let said = findings
                .iter()
                .any(|found: &CodingFinding| found.reasons == judged.reasons);
            if judged.decision > Decision::Allow && !said {
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

/// How a call is judged: whether the taint rule would hold it, whether it runs confined, and
/// whether the policy's sandbox applies to its session (and where its project is).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Judging<'a> {
    /// The agent is tainted and the user did not order the call.
    pub tainted: bool,
    /// The call runs under the sandbox: `whenConfined` decides.
    pub confined: bool,
    /// `sandbox.when` applies to the session.
    pub sandboxed: bool,
    /// The project's folder, where the sandbox's relative places are; `None`: the root.
    pub project: Option<&'a std::path::Path>,
}

/// A decision of the `commands` or `paths` key on a call, with its reasons, and whether it is a
/// hold only because the agent is tainted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodingFinding {
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub by_taint: bool,
}
