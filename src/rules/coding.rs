//! What the coding-agent keys (`commands`, `paths`) say about one call, as findings for the
//! decision.

use crate::call::Call;
use crate::rules::paths::{Links, PathContext};
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
    // Every path is judged where it leads too, when the door can tell (`links`): a command's,
    // a file tool's and a path argument's (`source`, `destination`, `paths`).
    let context = PathContext {
        links: judging.links,
        ..policy.places().context(call.cwd.as_deref())
    };
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
    if let Some(judged) = policy
        .fetch()
        .and_then(|fetch| fetch.decide_call(&call.tool, call.args.map(), judging.addresses))
    {
        push_stricter(&mut findings, judged.decision, vec![judged.reason]);
    }
    // The path as written, and where it leads when a symbolic link makes that another place.
    let written = call.args.map();
    let all_args = std::iter::once(written).chain(judging.resolved);
    // Only where the sandbox applies, for a tool its path rules judge: they are compiled on
    // first use. Asked once for every form of the arguments.
    let sandbox = judging
        .sandboxed
        .then(|| policy.sandbox_paths_for(&call.tool))
        .flatten();
    for args in all_args {
        if let Some(paths) = policy.paths() {
            if let Some(judged) = paths.decide_call(&call.tool, args, context) {
                push_stricter(&mut findings, judged.decision, judged.reasons);
            }
            if let Some(judged) = paths.decide_path_arguments(&call.tool, args, context) {
                push_stricter(&mut findings, judged.decision, judged.reasons);
            }
        }
        if let Some(sandbox) = sandbox {
            let mut placed = context;
            if let Some(project) = judging.project {
                placed.root = Some(project);
            }
            if let Some(judged) = sandbox.decide_call(&call.tool, args, placed) {
                push_stricter(&mut findings, judged.decision, judged.reasons);
            }
            if let Some(judged) = sandbox.decide_path_arguments(&call.tool, args, placed) {
                push_stricter(&mut findings, judged.decision, judged.reasons);
            }
        }
    }
    findings
}

/// Adds a path finding stricter than allow, unless the same reasons were said already (a
/// malformed path is said once, by the `paths` key when it maps the tool too; a path that
/// leads where it is written is judged once).
fn push_stricter(findings: &mut Vec<CodingFinding>, decision: Decision, reasons: Vec<String>) {
    let said = findings.iter().any(|found| found.reasons == reasons);
    if decision > Decision::Allow && !said {
        findings.push(CodingFinding {
            decision,
            reasons,
            by_taint: false,
        });
    }
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
    /// The arguments with a file tool's path resolved through its symbolic links, when that
    /// leads elsewhere ([`super::decision::CallContext::resolved`]).
    pub resolved: Option<&'a serde_json::Map<String, serde_json::Value>>,
    /// What a fetch tool's host name resolved to, when the door resolved it
    /// ([`super::decision::CallContext::addresses`]).
    pub addresses: &'a [std::net::IpAddr],
    /// Where a command's paths lead ([`super::decision::CallContext::links`]).
    pub links: Option<Links<'a>>,
}

/// A decision of the `commands` or `paths` key on a call, with its reasons, and whether it is a
/// hold only because the agent is tainted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodingFinding {
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub by_taint: bool,
}
