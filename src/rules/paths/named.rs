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
//! that is absent is not judged (an MCP tool's arguments may be optional), unless `pathDefaults`
//! says where the tool acts without it; one that is present must be a path or an array of paths,
//! else the call is denied as malformed.
//!
//! ```json
//! "pathDefaults": {"Grep": {"path": "."}},
//! "globArguments": {"read_many_files": ["include", "paths"]}
//! ```
//!
//! `pathDefaults`: the path a tool acts on when a call leaves one of its `pathArguments` out
//! (or gives an empty list). Claude Code's `Grep` without `path` searches the working folder,
//! so it is judged as a search of `"."` is: a missing argument is never a way around the rule
//! its value would meet.
//!
//! `globArguments`: arguments that hold glob patterns the tool matches itself (Gemini CLI's
//! `read_many_files`). Each is judged as written, its wildcards expanded by the door (placed in
//! the folder the tool's first path argument names, or its default); in each reading the tool
//! may make that shell-like matching would not (`\` as `/`, any case, a wildcard matching a
//! leading dot, `**` matching no folder); and, when it has a wildcard, as a read of the folder
//! before its first wildcard: `/home/me/.ssh/*` reads in `~/.ssh`. A brace, an extended glob
//! and a `..` after a wildcard are not expanded here: such a pattern may be any file.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::place::Placed;
use super::{PathContext, PathDefaults, PathJudgement, PathRules};
use crate::rules::keys::{self, shown, wrong_type, KeyError, KeyProblem, Problem};
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

/// Reads `pathDefaults`: tool name or pattern → {argument → the path the tool acts on without
/// it}. Each argument must be one `pathArguments` lists for the tool (`rules` has it read).
pub(super) fn path_defaults(
    key: &str,
    value: &Value,
    rules: &PathRules,
) -> Result<Vec<(ToolPattern, PathDefaults)>, KeyError> {
    let expected = "an object mapping tool names to {argument: path} objects";
    keys::tool_entries(key, value, expected, |at, entry| {
        let Value::Object(entry) = entry else {
            let problem = Problem::Type {
                expected: "an object mapping arguments to paths",
                found: type_name(entry),
            };
            return Err(problem.at(at));
        };
        let tool = at.strip_prefix(key).and_then(|rest| rest.strip_prefix('.'));
        let tool = tool.unwrap_or(at);
        let listed = rules.path_argument_names(tool).unwrap_or_default();
        entry
            .iter()
            .map(|(name, path)| {
                let at = format!("{at}.{name}");
                if !listed.iter().any(|listed| listed == name) {
                    return Err(Problem::NotAPathArgument(name.clone()).at(at));
                }
                match path {
                    Value::String(path) if path.is_empty() => Err(Problem::EmptyString.at(at)),
                    Value::String(path) => Ok((name.clone(), path.clone())),
                    other => Err(wrong_type("a path (a string)", other).at(at)),
                }
            })
            .collect()
    })
}

/// One path a call names, and how it came to be judged when the call did not write it as is.
struct Named<'a> {
    path: Cow<'a, str>,
    /// Said before each reason: why this path is judged (a default, a glob's folder).
    note: Option<String>,
    /// A glob pattern: its wildcards are expanded where the door can look, and each name they
    /// match is followed through its links, as a shell word's.
    expands: bool,
}

/// The strings an argument holds, or the deny for one that holds anything else.
fn strings_of<'a>(tool: &str, name: &str, value: &'a Value) -> Result<Vec<&'a str>, PathJudgement> {
    match value {
        Value::String(path) => Ok(vec![path.as_str()]),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            Ok(items.iter().filter_map(Value::as_str).collect())
        }
        other => Err(PathJudgement {
            decision: Decision::Deny,
            reasons: vec![format!(
                "malformed call: argument `{name}` of {} must be a path or an array of paths, found {}",
                quoted(tool),
                type_name(other)
            )],
        }),
    }
}

/// Whether a `..` part comes after a part with a wildcard (`src/**/../x`).
fn dots_after_wildcard(pattern: &str) -> bool {
    pattern
        .split('/')
        .skip_while(|part| !part.contains(['*', '?', '[']))
        .any(|part| part == "..")
}

/// The pattern with a `.` before each part that starts with a wildcard (`*env` → `.*env`,
/// `?env` → `.env`): what the tool's wildcards match of a dot-file, as shell-like matching
/// (where a wildcard never matches a leading dot) sees it.
fn dotted(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|part| match part.as_bytes().first() {
            _ if part == "**" => part.to_owned(),
            Some(b'*' | b'[') => format!(".{part}"),
            Some(b'?') => format!(".{}", &part[1..]),
            _ => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The folder a glob pattern is matched in before its first wildcard (`*`, `?`, `[`, `{`, and
/// `(` of an extended glob such as `@(a|b)`): `None` for a pattern without one. `src/**/*.rs` →
/// `src`, `*.md` → `.`, `/etc/*` → `/etc`.
fn glob_folder(pattern: &str) -> Option<String> {
    let first_wild = pattern.find(['*', '?', '[', '{', '('])?;
    let literal = &pattern[..first_wild];
    Some(match literal.rfind('/') {
        Some(0) => "/".to_owned(),
        Some(end) => literal[..end].to_owned(),
        None => ".".to_owned(),
    })
}

impl PathRules {
    /// The arguments of `tool` that hold paths (`pathArguments`), if it names the tool.
    pub(crate) fn path_argument_names(&self, tool: &str) -> Option<&[String]> {
        crate::rules::tools::entry_for(&self.path_arguments, tool).map(Vec::as_slice)
    }

    /// The arguments of `tool` that hold glob patterns (`globArguments`), if it names the tool.
    pub(crate) fn glob_argument_names(&self, tool: &str) -> Option<&[String]> {
        crate::rules::tools::entry_for(&self.glob_arguments, tool).map(Vec::as_slice)
    }

    /// Where `tool` acts when a call leaves its path argument `name` out (`pathDefaults`).
    fn path_default(&self, tool: &str, name: &str) -> Option<&str> {
        crate::rules::tools::entry_for(&self.path_defaults, tool)?
            .iter()
            .find(|(argument, _)| argument == name)
            .map(|(_, path)| path.as_str())
    }

    /// The default path of `tool`'s argument `name`, with the note that says why it is judged.
    fn default_of<'a>(&self, tool: &str, name: &str) -> Option<Named<'a>> {
        let default = self.path_default(tool, name)?;
        Some(Named {
            path: Cow::Owned(default.to_owned()),
            note: Some(format!(
                "{} without `{name}` acts on \"{}\": ",
                quoted(tool),
                shown(default)
            )),
            expands: false,
        })
    }

    /// The paths a call names in its `pathArguments` (an absent one as its `pathDefaults`
    /// says), then in its `globArguments`, each placed in the folder of the first path
    /// argument, with the folder before its first wildcard.
    fn named_paths<'a>(
        &self,
        tool: &str,
        args: &'a Map<String, Value>,
    ) -> Result<Vec<Named<'a>>, PathJudgement> {
        let mut named = Vec::new();
        let mut folder: Option<Cow<'a, str>> = None;
        for name in self.path_argument_names(tool).unwrap_or_default() {
            match args.get(name) {
                Some(value) => {
                    let paths = strings_of(tool, name, value)?;
                    if let ([path], None) = (&paths[..], &folder) {
                        folder = Some(Cow::Borrowed(*path));
                    }
                    if let (true, Some(default)) = (paths.is_empty(), self.default_of(tool, name)) {
                        // No path given: the tool acts where it would without the argument.
                        folder.get_or_insert_with(|| default.path.clone());
                        named.push(default);
                        continue;
                    }
                    named.extend(paths.into_iter().map(|path| Named {
                        path: Cow::Borrowed(path),
                        note: None,
                        expands: false,
                    }));
                }
                None => {
                    if let Some(default) = self.default_of(tool, name) {
                        folder.get_or_insert_with(|| default.path.clone());
                        named.push(default);
                    }
                }
            }
        }
        for name in self.glob_argument_names(tool).unwrap_or_default() {
            let Some(value) = args.get(name) else {
                continue;
            };
            for pattern in strings_of(tool, name, value)? {
                // A glob library takes `\` for `/` on some systems (Gemini CLI turns every one
                // into `/`), and may match without case (Gemini CLI's `nocase`): each spelling
                // the tool may read is judged.
                let slashed = pattern.replace('\\', "/");
                let placed = match &folder {
                    Some(folder) if !slashed.starts_with(['/', '~']) => {
                        format!("{}/{slashed}", folder.trim_end_matches('/'))
                    }
                    _ => slashed,
                };
                let lower = placed.to_lowercase();
                let mut spellings = if lower == placed {
                    vec![placed]
                } else {
                    vec![placed, lower]
                };
                // The tool's `*`, `?` and `[…]` match a leading dot (Gemini CLI globs with
                // `dot`), and its `**` matches no folder too: those readings, as the gate's
                // shell-like matching would see them, are judged as well.
                let readings: Vec<String> = spellings
                    .iter()
                    .flat_map(|spelling| {
                        let no_folders = spelling.replace("**/", "");
                        [dotted(spelling), dotted(&no_folders), no_folders]
                    })
                    .filter(|reading| !spellings.contains(reading))
                    .collect();
                spellings.extend(readings);
                for spelling in spellings {
                    if let Some(base) = glob_folder(&spelling) {
                        named.push(Named {
                            note: Some(format!(
                                "{} matches the pattern \"{}\" in \"{}\": ",
                                quoted(tool),
                                shown(pattern),
                                shown(&base)
                            )),
                            path: Cow::Owned(base),
                            expands: false,
                        });
                    }
                    named.push(Named {
                        path: Cow::Owned(spelling),
                        note: None,
                        expands: true,
                    });
                }
            }
        }
        Ok(named)
    }

    /// Decides the paths a call names in the arguments `pathArguments` and `globArguments` list
    /// for its tool (an absent one as `pathDefaults` says): `None` when they list none of the
    /// tool's, or when none of them is present; the strictest decision of them otherwise, with
    /// the reasons of each path that has it.
    pub fn decide_path_arguments(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        context: PathContext,
    ) -> Option<PathJudgement> {
        if self.path_argument_names(tool).is_none() && self.glob_argument_names(tool).is_none() {
            return None;
        }
        let named = match self.named_paths(tool, args) {
            Ok(named) => named,
            Err(malformed) => return Some(malformed),
        };
        let write = self.is_write_tool(tool);
        let placed = Placed::of(context);
        let mut best: Option<PathJudgement> = None;
        for Named {
            path,
            note,
            expands,
        } in named
        {
            let unmatched = if !expands {
                None
            } else if path.contains('(') {
                // `@(…)`, `!(…)`, `+(…)`: what an extended glob matches is not modelled here.
                Some("has an extended glob `(…)`, which the gate does not match, so it may be any file")
            } else if path.contains('{') {
                // `src/{../.env,x}`, `{.env,x}`, `.en{v,}`: what the tool's brace expansion
                // makes is not modelled here.
                Some("has a brace `{…}`, which the gate does not expand, so it may be any file")
            } else if dots_after_wildcard(&path) {
                // `src/**/../../.aws/x`: where `..` leads depends on how many folders the
                // wildcard matched.
                Some("has `..` after a wildcard, so it may lead to any folder, and any file")
            } else {
                None
            };
            let mut judged = if let Some(why) = unmatched {
                self.judge_as_any(&path, why, write, None)
            } else {
                self.judge_with(&path, write, true, None, &placed, true, expands)
            };
            if let Some(note) = note {
                for reason in &mut judged.reasons {
                    reason.insert_str(0, &note);
                }
            }
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
        best
    }
}

#[cfg(test)]
#[path = "named_tests.rs"]
mod tests;
