//! A shell command under both coding-agent keys: `commands` decides the command, and `paths`
//! judges the files it writes and the paths its arguments read; and a tool call that carries
//! one ([`CommandRules::decide_call`]).

use serde_json::{Map, Value};

use super::commands::{CommandJudgement, CommandRules};
use crate::strict_json::type_name;
use crate::verdict::Decision;

impl CommandRules {
    /// Decides a call of a tool these rules apply to (`None` for any other tool): its command
    /// under `commands`, and, with `paths`, the files it writes and the paths its arguments
    /// name ([`decide_command`]). A command argument that is missing, not a string, or
    /// holds a NUL is a malformed deny. `confined`: the call runs under the sandbox, so a
    /// rule's `whenConfined` decides in place of its `decision` and `whenTainted`.
    #[allow(clippy::too_many_arguments)]
    pub fn decide_call(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        tainted: bool,
        confined: bool,
        paths: Option<&super::paths::PathRules>,
        context: super::paths::PathContext,
    ) -> Option<CommandJudgement> {
        if self.unread_tools.matches(tool) {
            return Some(CommandJudgement {
                decision: self.dynamic(),
                reasons: vec![format!(
                    "{} runs commands in a language these rules do not read (commands.unreadTools): {}",
                    crate::sanitize::quoted(tool),
                    self.dynamic()
                )],
                writes: Vec::new(),
                by_taint: false,
            });
        }
        let key = self.arg_key(tool)?;
        let malformed = |why: String| CommandJudgement {
            decision: Decision::Deny,
            reasons: vec![format!("malformed call: {why}")],
            writes: Vec::new(),
            by_taint: false,
        };
        let tool_shown = crate::sanitize::quoted(tool);
        Some(match args.get(key) {
            None => malformed(format!(
                "{tool_shown} has no `{key}` argument, which holds its shell command"
            )),
            Some(Value::String(command)) if command.contains('\0') => malformed(format!(
                "the command of {tool_shown} contains a NUL character, which no shell can run as written"
            )),
            Some(Value::String(command)) => {
                decide_command_confined(self, paths, command, tainted, confined, context)
            }
            Some(other) => malformed(format!(
                "argument `{key}` of {tool_shown} must be a shell command (a string), found {}",
                type_name(other)
            )),
        })
    }
}

/// A shell command under both keys: the `commands` decision, the `paths` decision on every file
/// it writes through a redirection or `tee`, and the `paths` read rules on the files its input
/// redirections read and on its arguments
/// (`cat ~/.ssh/id_rsa` reads a secret as surely as `Read` does). The strictest wins; the
/// reasons are those of the winning decision.
pub fn decide_command(
    commands: &CommandRules,
    paths: Option<&super::paths::PathRules>,
    command: &str,
    tainted: bool,
    context: super::paths::PathContext,
) -> CommandJudgement {
    decide_command_confined(commands, paths, command, tainted, false, context)
}

/// [`decide_command`] for a call that runs under the sandbox (`confined`) or not: a rule's
/// `whenConfined` then decides in its place.
pub fn decide_command_confined(
    commands: &CommandRules,
    paths: Option<&super::paths::PathRules>,
    command: &str,
    tainted: bool,
    confined: bool,
    context: super::paths::PathContext,
) -> CommandJudgement {
    let mut analysis = super::shell::analyse(command);
    commands.add_option_writes(&mut analysis);
    let roots = commands.add_operand_writes(&mut analysis);
    let mut judged = commands.judge(command, &analysis, tainted, confined);
    let Some(paths) = paths else {
        return judged;
    };
    let placed = paths.place(context);
    let mut findings: Vec<(Decision, Vec<String>)> = Vec::new();
    for root in roots {
        if root.decision == Decision::Allow {
            continue;
        }
        if let Some(reason) = analysis
            .writes
            .get(root.write)
            .and_then(|write| paths.root_itself(write, &placed))
        {
            let reason = format!("{reason} (commands.operandWrites): {}", root.decision);
            findings.push((root.decision, vec![reason]));
        }
    }
    for write in &analysis.writes {
        let path = paths.decide_written(write, &placed);
        if path.decision > Decision::Allow {
            findings.push((path.decision, path.reasons));
        }
    }
    for copy in &analysis.tree_copies {
        let path = paths.decide_tree_copy(copy, &placed);
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
                        .map(|w| super::shell::quote_word(w))
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
