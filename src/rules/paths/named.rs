//! `paths.pathArguments`: the arguments of other tools that name files, an MCP server's above
//! all (the reference filesystem server's `path`, `paths`, `source`, `destination`), judged by
//! the same rules as a file tool's path, so a server cannot read `~/.aws/credentials` or write
//! `~/.zshrc` where `Read` and `Write` could not.
//!
//! ```json
//! "pathArguments": {"mcp__filesystem__*": ["path", "paths", "source", "destination"]}
//! ```
//!
//! A tool listed in `writeTools` writes every path it names; any other reads them. An argument
//! that is absent is not judged (an MCP tool's arguments may be optional); one that is present
//! must be a path or an array of paths, else the call is denied as malformed.

use serde_json::{Map, Value};

use super::place::Placed;
use super::{PathContext, PathJudgement, PathRules};
use crate::rules::keys::{self, KeyError, KeyProblem, Problem};
use crate::rules::tools::ToolPattern;
use crate::sanitize::quoted;
use crate::strict_json::type_name;
use crate::verdict::Decision;

/// Reads `pathArguments`: tool name or pattern → the names of its arguments that hold paths
/// (at least one each).
pub(super) fn path_arguments(
    key: &str,
    value: &Value,
) -> Result<Vec<(ToolPattern, Vec<String>)>, KeyError> {
    let expected = "an object mapping tool names to the arguments that hold paths";
    keys::tool_entries(key, value, expected, |at, names| {
        let names = keys::strings(at, names)?;
        if names.is_empty() {
            let problem = Problem::Type {
                expected: "an array naming at least one argument",
                found: "an empty array",
            };
            return Err(problem.at(at));
        }
        for (index, name) in names.iter().enumerate() {
            if name.is_empty() {
                return Err(Problem::EmptyString.at(format!("{at}[{index}]")));
            }
        }
        Ok(names.into_iter().map(str::to_owned).collect())
    })
}

impl PathRules {
    /// The arguments of `tool` that hold paths (`pathArguments`), if it names the tool.
    pub(crate) fn path_argument_names(&self, tool: &str) -> Option<&[String]> {
        crate::rules::tools::entry_for(&self.path_arguments, tool).map(Vec::as_slice)
    }

    /// Decides the paths a call names in the arguments `pathArguments` lists for its tool:
    /// `None` when it lists none of the tool's, or when none of them is present; the strictest
    /// decision of them otherwise, with the reasons of each path that has it.
    pub fn decide_path_arguments(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        context: PathContext,
    ) -> Option<PathJudgement> {
        let names = self.path_argument_names(tool)?;
        let write = self.is_write_tool(tool);
        let placed = Placed::of(context);
        let mut best: Option<PathJudgement> = None;
        for name in names {
            let Some(value) = args.get(name) else {
                continue;
            };
            let paths: Vec<&str> = match value {
                Value::String(path) => vec![path.as_str()],
                Value::Array(items) if items.iter().all(Value::is_string) => {
                    items.iter().filter_map(Value::as_str).collect()
                }
                other => {
                    return Some(PathJudgement {
                        decision: Decision::Deny,
                        reasons: vec![format!(
                            "malformed call: argument `{name}` of {} must be a path or an array of paths, found {}",
                            quoted(tool),
                            type_name(other)
                        )],
                    })
                }
            };
            for path in paths {
                let judged = self.judge(path, write, true, None, &placed);
                best = Some(match best {
                    Some(mut kept) if kept.decision == judged.decision => {
                        for reason in judged.reasons {
                            if !kept.reasons.contains(&reason) {
                                kept.reasons.push(reason);
                            }
                        }
                        kept
                    }
                    Some(kept) if kept.decision > judged.decision => kept,
                    _ => judged,
                });
            }
        }
        best
    }
}

#[cfg(test)]
#[path = "named_tests.rs"]
mod tests;
