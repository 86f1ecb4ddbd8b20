//! The rules, one concern a file: what a policy says ([`policy`], [`argrules`]), the decision
//! ([`decision`]) over a call and the crew's state ([`state`]). The types they share sit below
//! them: [`verdict`] (a decision and its reasons) and [`names`] (tool patterns, did-you-mean).
//!
//! For coding agents, rules that read what a call does, not only which tool it names: the shell
//! command of a `Bash`-like tool ([`commands`]) and the file path of a file tool ([`paths`]).
//! Both are pure: a policy key is checked once into compiled rules, and a decision is a function
//! of the rules and the call's text. [`shell`] turns a command line into the simple commands it
//! runs, with a real bash parser.

pub mod argrules;
pub mod decision;
pub mod names;
pub mod policy;
pub mod provenance;
pub mod state;
pub mod tokens;
pub mod verdict;

pub mod commands;
pub mod paths;
pub mod sandbox;
pub mod shell;

mod keys;

use crate::call::Call;
use crate::decision::Decision;
use crate::policy::Policy;
use commands::{CommandJudgement, CommandRules};
use paths::{PathContext, PathRules};

/// What the `commands` and `paths` keys say about a call, as findings for the decision
/// ([`decision::evaluate_with_state`]): for a tool `commands` maps, its command's decision
/// (allow included, so that an allowed command's reason names its rule); for a tool `paths`
/// maps, the decision on its path when it is stricter than allow (path rules only add). The
/// path is placed against the call's `cwd` and the policy's [`paths::Places`]. `tainted` is
/// whether the taint rule would hold the call (the agent is tainted and the user did not order
/// it). Empty for every other tool.
pub fn coding_agent_findings(call: &Call, policy: &Policy, tainted: bool) -> Vec<CodingFinding> {
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
pub struct CodingFinding {
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub by_taint: bool,
}

/// A shell command under both keys: the `commands` decision, the `paths` decision on every file
/// it writes through a redirection or `tee`, and the `paths` read rules on the files its input
/// redirections read and on its arguments
/// (`cat ~/.ssh/id_rsa` reads a secret as surely as `Read` does). The strictest wins; the
/// reasons are those of the winning decision.
pub fn decide_command(
    commands: &CommandRules,
    paths: Option<&PathRules>,
    command: &str,
    tainted: bool,
    context: PathContext,
) -> CommandJudgement {
    let analysis = shell::analyse(command);
    let mut judged = commands.judge(command, &analysis, tainted);
    let Some(paths) = paths else {
        return judged;
    };
    let placed = paths.place(context);
    let mut findings: Vec<(Decision, Vec<String>)> = Vec::new();
    for write in &analysis.writes {
        let path = paths.decide_written(write, &placed);
        if path.decision > Decision::Allow {
            findings.push((path.decision, path.reasons));
        }
    }
    for read in &analysis.reads {
        let path = paths.decide_redirected(read, &placed);
        if path.decision > Decision::Allow {
            findings.push((path.decision, path.reasons));
        }
    }
    let placeable = !analysis.changes_directory;
    for simple in &analysis.commands {
        // Written once, when a reason first needs it.
        let shown = std::cell::OnceCell::new();
        let by = || {
            shown
                .get_or_init(|| {
                    simple
                        .words
                        .iter()
                        .map(|w| shell::quote_word(w))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .clone()
        };
        if let Some(read) =
            paths.decide_shell_arguments(&simple.words, &simple.globbed, &by, placeable, &placed)
        {
            findings.push((read.decision, read.reasons));
        }
    }
    for (decision, reasons) in findings {
        if decision > judged.decision {
            judged.decision = decision;
            judged.reasons = reasons;
            judged.by_taint = false;
        } else if decision == judged.decision {
            for reason in reasons {
                if !judged.reasons.contains(&reason) {
                    judged.reasons.push(reason);
                }
            }
        }
    }
    judged
}
