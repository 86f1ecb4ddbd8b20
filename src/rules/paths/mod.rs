//! Policy key `paths`: glob rules over the file a file tool reads or writes, and over the files a
//! shell command writes through redirections.
//!
//! ```json
//! "paths": {
//!   "tools": {"Write": "file_path", "Edit": "file_path", "Read": "file_path"},
//!   "writeTools": ["Write", "Edit", "mcp__filesystem__write_file"],
//!   "pathArguments": {"mcp__filesystem__*": ["path", "paths", "source", "destination"], "Grep": ["path"]},
//!   "pathDefaults": {"Grep": {"path": "."}},
//!   "globArguments": {"Glob": ["pattern"]},
//!   "rules": [
//!     {"glob": [".claude/**", "~/.bashrc"], "write": "deny"},
//!     {"glob": ["**/.env", "~/.ssh/**"], "read": "hold"}
//!   ],
//!   "outsideRoot": "hold",
//!   "gitFiles": "deny"
//! }
//! ```
//!
//! `gitFiles` is the write decision for every file by which git finds its config, hooks and
//! objects, under any `.git` ([`crate::rules::git`], the list the sandbox protects too).
//!
//! A path is resolved without touching the file system: `~` is the home directory, a relative
//! path joins the call's working directory (else the root), and `.` and `..` are folded
//! lexically. Symlinks are not followed: a link inside the root that points elsewhere is judged
//! by where it sits. Globs are compiled once with `globset` (`*` stops at `/`, `**` crosses it):
//! a glob starting with `~/` is relative to the home directory, one starting with `/` is
//! absolute, one starting with `**` matches anywhere, and any other is relative to the root.
//! Path rules only add decisions: a path that matches nothing gets no say.
//!
//! Two shapes no glob names on its own, both decided fail-closed:
//! - `~name/…`, `~+`, `~-` (a user's home, `$PWD`, `$OLDPWD`) cannot be placed without looking
//!   the machine's users up: such a path may be any file, and gets the strictest decision of every
//!   rule (`PathRules::judge_unknown_home`).
//! - A folder on the way to what a `read` glob names (`~` for `~/.ssh/**`) is read with it by a
//!   recursive read (`rg -uuu . ~`), so it gets that rule's `read` decision; the globs' literal
//!   bases are found when the policy loads (`PathRule::holding`).

mod arguments;
mod judge;
mod matching;
mod named;
mod pattern;
mod place;
mod rule;
mod tree;

pub use pattern::name_matches;
pub(crate) use place::normalize as normalized;
pub(crate) use place::Placed;
pub use place::{Leads, Links, PathContext, Places, Present, Tree};
pub(crate) use rule::PathRule;

use serde_json::{Map, Value};

use crate::rules::shell::WrittenPath;
use crate::rules::tools::ToolList;
use crate::rules::tools::ToolPattern;
use crate::strict_json::type_name;
use crate::verdict::Decision;

/// The keys of `paths`.
pub const KEYS: &[&str] = &[
    "tools",
    "writeTools",
    "pathArguments",
    "pathDefaults",
    "globArguments",
    "rules",
    "outsideRoot",
    "gitFiles",
];
/// The keys of one rule.
pub(crate) const RULE_KEYS: &[&str] = &["glob", "read", "write"];

/// Globs match case-insensitively where the file system usually does.
const CASE_INSENSITIVE: bool = cfg!(any(target_os = "macos", target_os = "windows"));

/// A tool's `pathDefaults`: each argument, and the path the tool acts on without it.
type PathDefaults = Vec<(String, String)>;

/// The checked `paths` key.
#[derive(Debug, Clone)]
pub struct PathRules {
    tools: Vec<(ToolPattern, String)>,
    write_tools: ToolList,
    /// `pathArguments`: other tools' arguments that hold paths ([`named`]).
    path_arguments: Vec<(ToolPattern, Vec<String>)>,
    /// `pathDefaults`: the path a tool acts on when it is called without one of its path
    /// arguments ([`named`]).
    path_defaults: Vec<(ToolPattern, PathDefaults)>,
    /// `globArguments`: arguments that hold glob patterns the tool matches itself ([`named`]).
    glob_arguments: Vec<(ToolPattern, Vec<String>)>,
    rules: Vec<PathRule>,
    outside_root: Decision,
}

impl PartialEq for PathRules {
    fn eq(&self, other: &Self) -> bool {
        self.tools == other.tools
            && self.write_tools == other.write_tools
            && self.path_arguments == other.path_arguments
            && self.path_defaults == other.path_defaults
            && self.glob_arguments == other.glob_arguments
            && self.outside_root == other.outside_root
            && self.rules.len() == other.rules.len()
            && self.rules.iter().zip(&other.rules).all(|(a, b)| {
                a.index == b.index && a.globs == b.globs && a.read == b.read && a.write == b.write
            })
    }
}

impl Eq for PathRules {}

/// The decision on a path, with its reasons (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathJudgement {
    pub decision: Decision,
    pub reasons: Vec<String>,
}

impl Default for PathRules {
    fn default() -> Self {
        PathRules {
            tools: Vec::new(),
            write_tools: ToolList::default(),
            path_arguments: Vec::new(),
            path_defaults: Vec::new(),
            glob_arguments: Vec::new(),
            rules: Vec::new(),
            outside_root: Decision::Hold,
        }
    }
}

impl PathRules {
    /// The key of `args` that holds the path of `tool`, if the rules apply to it.
    pub(crate) fn arg_key(&self, tool: &str) -> Option<&str> {
        crate::rules::tools::entry_for(&self.tools, tool).map(String::as_str)
    }

    /// Whether the rules judge any call of `tool`: the path of a file tool, or the arguments
    /// `pathArguments` names for it ([`PathRules::decide_call`] and
    /// [`PathRules::decide_path_arguments`] say `None` for every other tool).
    pub(crate) fn judges_tool(&self, tool: &str) -> bool {
        self.arg_key(tool).is_some()
            || self.path_argument_names(tool).is_some()
            || self.glob_argument_names(tool).is_some()
    }

    /// Whether a call of `tool` is a write.
    pub(crate) fn is_write_tool(&self, tool: &str) -> bool {
        self.write_tools.matches(tool)
    }

    pub fn rules(&self) -> &[PathRule] {
        &self.rules
    }

    pub fn outside_root(&self) -> Decision {
        self.outside_root
    }

    /// Decides a call of a file tool: `None` when the rules do not apply to `tool`; a malformed
    /// deny when its path argument is missing, not a string, or holds a NUL.
    pub fn decide_call(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        context: PathContext,
    ) -> Option<PathJudgement> {
        let key = self.arg_key(tool)?;
        let malformed = |why: String| PathJudgement {
            decision: Decision::Deny,
            reasons: vec![format!("malformed call: {why}")],
        };
        Some(match args.get(key) {
            None => malformed(format!(
                "{} has no `{key}` argument, which names its file",
                crate::sanitize::quoted(tool)
            )),
            Some(Value::String(path)) => self.decide_path(path, self.is_write_tool(tool), context),
            Some(other) => malformed(format!(
                "argument `{key}` of {} must be a path (a string), found {}",
                crate::sanitize::quoted(tool),
                type_name(other)
            )),
        })
    }

    /// Decides a path a call reads (`write` false) or writes.
    pub(crate) fn decide_path(
        &self,
        path: &str,
        write: bool,
        context: PathContext,
    ) -> PathJudgement {
        self.judge(path, write, true, None, &Placed::of(context))
    }

    /// A call's context, placed once for every path of a shell command.
    pub fn place<'a>(&self, context: PathContext<'a>) -> Placed<'a> {
        Placed::of(context)
    }

    /// Decides a file a shell command writes ([`crate::rules::shell::Analysis::writes`]).
    pub(crate) fn decide_written(&self, written: &WrittenPath, placed: &Placed) -> PathJudgement {
        self.judge_with(
            &written.path,
            true,
            written.placeable,
            Some(&written.by),
            placed,
            true,
            written.expands,
        )
    }

    /// Whether a file a shell command writes may be the root itself or a folder above it
    /// (`rm -r .`, `mv /w/proj x`): the reason if so. A relative path that cannot be placed (the
    /// command changes directory) may be, when it is `.` or starts with `..`.
    pub(crate) fn root_itself(&self, written: &WrittenPath, placed: &Placed) -> Option<String> {
        let root = placed.root.as_deref()?;
        let dir = placed.base(written.placeable);
        let resolved = place::resolve(&written.path, dir, placed.home.as_deref());
        let may_be = if resolved.is_absolute() {
            root.starts_with(&resolved)
        } else {
            resolved.as_os_str().is_empty() || resolved.starts_with("..")
        };
        may_be.then(|| {
            format!(
                "{} writes \"{}\", which is the root \"{}\" itself or a folder above it",
                crate::rules::keys::shown(&written.by),
                crate::rules::keys::shown(&resolved.to_string_lossy()),
                crate::rules::keys::shown(&root.to_string_lossy()),
            )
        })
    }

    /// Decides a file a shell command reads through an input redirection (`cat < FILE`): the
    /// read rules, as for an argument.
    pub(crate) fn decide_redirected(&self, read: &WrittenPath, placed: &Placed) -> PathJudgement {
        self.judge(&read.path, false, read.placeable, Some(&read.by), placed)
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
