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
pub mod shell;

mod keys;

use crate::decision::Decision;
use commands::{CommandJudgement, CommandRules};
use paths::{PathContext, PathRules};

/// A shell command under both keys: the `commands` decision, the `paths` decision on every file
/// it writes through a redirection or `tee`, and the `paths` read rules on its arguments
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
    let mut findings: Vec<(Decision, Vec<String>)> = Vec::new();
    for write in &analysis.writes {
        let path = paths.decide_written(write, context);
        if path.decision > Decision::Allow {
            findings.push((path.decision, path.reasons));
        }
    }
    let placeable = !analysis.changes_directory;
    for simple in &analysis.commands {
        let by = simple
            .words
            .iter()
            .map(|w| shell::quote_word(w))
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(read) = paths.decide_arguments(&simple.words, &by, placeable, context) {
            findings.push((read.decision, read.reasons));
        }
    }
    for (decision, reasons) in findings {
        if decision > judged.decision {
            judged.decision = decision;
            judged.reasons = reasons;
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
