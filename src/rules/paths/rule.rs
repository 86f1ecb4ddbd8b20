//! A `paths` key checked and compiled: its rules, their globs as sets and as shapes, and the
//! literal bases of their `read` globs; and the rules the gate adds for its own files.

use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::Value;

use super::pattern::{shapes, Base, Shape};
use super::place::normalize;
use super::{PathRules, CASE_INSENSITIVE, KEYS, RULE_KEYS};
use crate::rules::keys::{self, wrong_type, KeyError, KeyProblem, Problem};
use crate::rules::sandbox::{Base as SandboxBase, SandboxPath, SandboxRules};
use crate::rules::tools::{ToolList, ToolPattern};
use crate::verdict::Decision;

/// What can be wrong with the `paths` key, besides what every key's reader finds.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PathProblem {
    #[error(transparent)]
    Key(#[from] Problem),
    #[error("a rule needs a `glob`")]
    NoGlob,
    #[error("is empty")]
    NoGlobs,
    #[error("a rule needs `read`, `write` or both")]
    NoDecision,
    #[error("{0:?}: only `~/…` (the home directory) is understood, not `~` alone or `~user`")]
    Tilde(String),
    #[error("an empty glob")]
    EmptyGlob,
    #[error("{0:?} has a `.` or `..` part; paths are normalized before they are matched, so it would never match")]
    DotPart(String),
    #[error("the glob {glob:?} does not compile: {error}")]
    Glob { glob: String, error: globset::Error },
    /// The rule's globs, each compiled, do not compile as a set.
    #[error("does not compile: {0}")]
    GlobSet(globset::Error),
}

impl KeyProblem for PathProblem {
    fn suggestion(&self) -> Option<&str> {
        match self {
            PathProblem::Key(problem) => problem.suggestion(),
            _ => None,
        }
    }
}

/// An error of the `paths` key, naming the key path.
pub(crate) type PathsError = KeyError<PathProblem>;

impl From<KeyError> for PathsError {
    fn from(err: KeyError) -> PathsError {
        PathProblem::Key(err.problem).at(err.key)
    }
}

/// A rule's globs as sets: one per base they are relative to, each with the index in the rule's
/// `globs` of its members.
pub(super) type GlobSets = Vec<(Base, GlobSet, Vec<usize>)>;

/// One rule, compiled.
#[derive(Debug, Clone)]
pub struct PathRule {
    /// Its index in `paths.rules` (rules added by [`PathRules::protect`] come after).
    pub index: usize,
    /// The globs as written.
    pub globs: Vec<String>,
    pub read: Option<Decision>,
    pub write: Option<Decision>,
    /// The globs to compile, each with its base and its index in `globs` (each one checked to
    /// compile when the rule was read).
    pub(super) patterns: Vec<(Base, String, usize)>,
    /// The globs that name one path or one folder's tree and nothing else (`~/.ssh`,
    /// `~/.ssh/**`: every place the sandbox lists and every file the gate protects), matched by
    /// comparing bytes: a glob set costs about 150,000 instructions to build, a third of a
    /// hook's start for the pack's hundred places.
    pub(super) literals: Vec<LiteralGlob>,
    /// The other globs compiled, one set per base they are relative to (each with the index in
    /// `globs` of its members), so that a path is matched against all of a base's globs at once:
    /// built on the first match ([`PathRule::compiled`]), since a door that judges one call (a
    /// hook) meets few of its rules; `Err` when the set does not build, and then the rule
    /// matches every path (the strictest reading).
    pub(super) compiled: std::sync::OnceLock<Result<GlobSets, ()>>,
    /// The literal base of each glob that has one (not `**/…`), once each, with the index in
    /// `globs` of the first glob that has it ([`literal_base`]). A read of a folder on the way to
    /// a base reads what the glob names, and a write of one (a copy into it, its rename) may
    /// write it ([`PathRule::holding`]).
    pub(super) read_bases: Vec<ReadBase>,
    /// The length of the longest `rel` of `read_bases`.
    pub(super) longest_base: usize,
    /// The globs as parts, for a path with a wildcard ([`PathRule::meeting`]): made on first
    /// use ([`PathRule::shapes`]), since few calls name a path with a wildcard.
    pub(super) shapes: std::sync::OnceLock<Vec<Shape>>,
    /// What the reason calls the rule.
    pub(super) label: String,
    /// For the gate's own files ([`PathRules::protect`]): the file as it is on disk, so that a
    /// write is refused under any other name of it and to any folder above it.
    pub(super) own: Option<OwnFile>,
}

/// One of the gate's own files: where it is, and which file it is (device and inode, when it
/// exists), for the writes a glob cannot see: to another hard link of it (cargo's `deps/` moved
/// elsewhere), and the rename or removal of a folder above it (`mv target t2` takes the hook an
/// agent runs away, and the agent then runs every call without it).
#[derive(Debug, Clone)]
pub(super) struct OwnFile {
    pub path: PathBuf,
    pub identity: Option<(u64, u64)>,
}

/// A glob without a wildcard, or with one only as a last `/**` part: the path it names (its
/// escapes removed), relative to its base as a glob's text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LiteralGlob {
    pub(super) base: Base,
    pub(super) text: String,
    /// Whether the glob ends in `/**`: it names what is under `text`, not `text` itself.
    pub(super) tree: bool,
    /// Its index in the rule's `globs`.
    pub(super) index: usize,
}

impl LiteralGlob {
    /// The glob as a literal, if it is one (and globs match by bytes: on a file system that
    /// ignores case, every glob goes to a set). Escapes are those of a glob built with
    /// `backslash_escape` (`\*`) and of [`globset::escape`] (`[*]`).
    fn of(base: Base, pattern: &str, index: usize) -> Option<LiteralGlob> {
        if CASE_INSENSITIVE || base == Base::Anywhere {
            return None;
        }
        let (body, tree) = match pattern.strip_suffix("/**") {
            Some(body) => (body, true),
            None => (pattern, false),
        };
        let mut text = String::with_capacity(body.len());
        let mut chars = body.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => text.push(chars.next()?),
                '[' => {
                    // A class of one character that is not `!` or `^` (which would negate),
                    // nor `/` (globset drops it from a class under `literal_separator`: `[/]`
                    // matches nothing there, so it is left to globset).
                    let inner = chars.next()?;
                    if matches!(inner, '!' | '^' | '/') || chars.next()? != ']' {
                        return None;
                    }
                    text.push(inner);
                }
                '*' | '?' | ']' | '{' | '}' => return None,
                c => text.push(c),
            }
        }
        (!text.is_empty()).then_some(LiteralGlob {
            base,
            text,
            tree,
            index,
        })
    }

    /// Whether the glob matches `path` (relative to the glob's base as a glob set's candidate
    /// is): the same path, or for a tree one under it (`.ssh/` too, as globset has it).
    pub(super) fn matches(&self, path: &Path) -> bool {
        let path = path.as_os_str().as_encoded_bytes();
        let text = self.text.as_bytes();
        if !self.tree {
            return path == text;
        }
        path.len() > text.len() && path.starts_with(text) && path[text.len()] == b'/'
    }
}

/// The literal base of a `read` glob: the folder (or file) its parts before the first
/// wildcard name, relative to what the glob is relative to. `~/.ssh/**` has `.ssh` under
/// [`Base::Home`]; `/etc/ssl/private/*.key` has `/etc/ssl/private` under [`Base::Absolute`];
/// `secrets/**` has `secrets` under [`Base::Root`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ReadBase {
    pub(super) base: Base,
    /// Relative for [`Base::Home`] and [`Base::Root`] (empty for the folder itself), absolute
    /// for [`Base::Absolute`].
    pub(super) rel: PathBuf,
    /// The index in the rule's `globs` of the first glob with this base.
    pub(super) glob: usize,
    /// The pattern of names the glob's last part is, in the folder `rel` (`*.pem` of
    /// `config/*.pem` and of `config/*.pem/**`): the base is there when an entry of the folder
    /// matches it ([`super::Links::present`]).
    pub(super) names: Option<String>,
}

impl PathRules {
    /// Checks the `paths` key (`key` is its name, for errors); a glob that does not compile is
    /// an error naming it.
    pub fn from_json(key: &str, value: &Value) -> Result<PathRules, PathsError> {
        let object = keys::object(key, value, KEYS)?;
        let mut rules = PathRules::default();
        if let Some(tools) = object.get("tools") {
            rules.tools = keys::tool_map(&format!("{key}.tools"), tools)?;
        }
        if let Some(named) = object.get("pathArguments") {
            rules.path_arguments =
                super::named::path_arguments(&format!("{key}.pathArguments"), named)?;
        }
        if let Some(defaults) = object.get("pathDefaults") {
            rules.path_defaults =
                super::named::path_defaults(&format!("{key}.pathDefaults"), defaults, &rules)?;
        }
        if let Some(globs) = object.get("globArguments") {
            rules.glob_arguments =
                super::named::path_arguments(&format!("{key}.globArguments"), globs)?;
        }
        if let Some(write_tools) = object.get("writeTools") {
            let names = keys::strings(&format!("{key}.writeTools"), write_tools)?;
            rules.write_tools = ToolList::parse(&names)
                .map_err(|item| Problem::ToolItem(item).at(format!("{key}.writeTools")))?;
        }
        if let Some(outside) = object.get("outsideRoot") {
            rules.outside_root = keys::decision(&format!("{key}.outsideRoot"), outside)?;
        }
        if let Some(list) = object.get("rules") {
            let Value::Array(items) = list else {
                return Err(wrong_type("an array of rules", list)
                    .at(format!("{key}.rules"))
                    .into());
            };
            for (index, item) in items.iter().enumerate() {
                rules
                    .rules
                    .push(rule(&format!("{key}.rules[{index}]"), index, item)?);
            }
        }
        if let Some(decision) = object.get("gitFiles") {
            let key = format!("{key}.gitFiles");
            let decision = keys::decision(&key, decision)?;
            let value = serde_json::json!({
                "glob": crate::rules::git::write_globs(),
                "write": decision.to_string(),
            });
            let mut compiled = rule(&key, rules.rules.len(), &value)?;
            compiled.label = format!("{key} (a file by which git finds its config and hooks)");
            rules.rules.push(compiled);
        }
        Ok(rules)
    }

    /// Denies writes to `path` and anything under it, whatever the policy says: for the files
    /// the gate itself runs on (its policy, audit log and state), named on its command line.
    pub(crate) fn protect(&mut self, path: &Path, what: &str) {
        let path = normalize(path);
        if !path.is_absolute() {
            return;
        }
        let text = path.to_string_lossy();
        let escaped = globset::escape(&text);
        let patterns = vec![
            (Base::Absolute, escaped.clone(), 0),
            (Base::Absolute, format!("{escaped}/**"), 0),
        ];
        self.rules.push(PathRule {
            index: self.rules.len(),
            globs: vec![text.clone().into_owned()],
            read: None,
            write: Some(Decision::Deny),
            literals: literals(&patterns),
            patterns,
            compiled: std::sync::OnceLock::new(),
            read_bases: Vec::new(),
            longest_base: 0,
            shapes: std::sync::OnceLock::new(),
            label: format!("the gate's own {what}"),
            own: Some(OwnFile {
                identity: std::fs::metadata(&path).ok().map(|meta| {
                    use std::os::unix::fs::MetadataExt;
                    (meta.dev(), meta.ino())
                }),
                path,
            }),
        });
    }
}

impl PathRules {
    /// The `sandbox` key's `readOnly` and `hidden` lists as path rules for the file tools, which
    /// are not confined: a write to a `readOnly` place (or under it) is denied, and a read (or
    /// write) of a `hidden` one held, with reasons naming `sandbox.readOnly[i]` and
    /// `sandbox.hidden[i]`. The tools and which of them write are those of `like` (the policy's
    /// `paths` key), else Claude Code's file tools. A write outside the root gets nothing here
    /// (`outsideRoot` is the `paths` key's say). The gate's own files are added by
    /// [`PathRules::protect`], as for the `paths` key.
    pub(crate) fn for_sandbox(sandbox: &SandboxRules, like: Option<&PathRules>) -> PathRules {
        let mut rules = PathRules::sandbox_tools(like);
        let lists = [
            ("readOnly", &sandbox.read_only, "write", Decision::Deny),
            ("hidden", &sandbox.hidden, "read", Decision::Hold),
        ];
        for (name, list, verb, decision) in lists {
            for (i, entry) in list.iter().enumerate() {
                let Some(glob) = sandbox_glob(entry) else {
                    continue;
                };
                let value = serde_json::json!({
                    "glob": [glob.clone(), format!("{}/**", glob.trim_end_matches('/'))],
                    verb: decision.to_string(),
                });
                let index = rules.rules.len();
                // The globs are escaped from a checked sandbox path: they always compile.
                if let Ok(mut compiled) = rule(&format!("sandbox.{name}[{i}]"), index, &value) {
                    compiled.label = format!("sandbox.{name}[{i}]");
                    rules.rules.push(compiled);
                }
            }
        }
        rules
    }

    /// The sandbox's path rules without their rules: which tools they judge and how
    /// ([`PathRules::for_sandbox`]), known without compiling a glob.
    pub(crate) fn sandbox_tools(like: Option<&PathRules>) -> PathRules {
        match like {
            Some(like) => PathRules {
                tools: like.tools.clone(),
                write_tools: like.write_tools.clone(),
                path_arguments: like.path_arguments.clone(),
                path_defaults: like.path_defaults.clone(),
                glob_arguments: like.glob_arguments.clone(),
                rules: Vec::new(),
                outside_root: Decision::Allow,
            },
            None => PathRules {
                tools: FILE_TOOLS
                    .iter()
                    .filter_map(|(tool, key)| {
                        ToolPattern::parse(tool)
                            .ok()
                            .map(|pattern| (pattern, (*key).to_owned()))
                    })
                    .collect(),
                write_tools: ToolList::parse(
                    &FILE_TOOLS[..4]
                        .iter()
                        .map(|(tool, _)| *tool)
                        .collect::<Vec<_>>(),
                )
                .unwrap_or_default(),
                path_arguments: Vec::new(),
                path_defaults: Vec::new(),
                glob_arguments: Vec::new(),
                rules: Vec::new(),
                outside_root: Decision::Allow,
            },
        }
    }
}

/// Claude Code's file tools and the argument that holds their path; the first four write.
const FILE_TOOLS: &[(&str, &str)] = &[
    ("Write", "file_path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
    ("Read", "file_path"),
];

impl PathRules {
    /// The `sandbox` key's places that bind every session, added to the `paths` key's own rules
    /// when a policy has both keys: each `hidden` place (a secret the sandbox empties) is a held
    /// read for the file tools and for a shell command's arguments and redirections, and each
    /// `readOnly` place in the home folder (`~/.gitconfig`, `~/.bashrc`, …) a denied write, for
    /// a session the sandbox confines or not. Derived from the lists themselves, so that the two
    /// keys cannot drift. The reasons name `sandbox.hidden[i]` and `sandbox.readOnly[i]`.
    pub(crate) fn add_sandbox_places(&mut self, sandbox: &SandboxRules) {
        let lists = [
            ("readOnly", &sandbox.read_only, "write", Decision::Deny),
            ("hidden", &sandbox.hidden, "read", Decision::Hold),
        ];
        for (name, list, verb, decision) in lists {
            for (i, entry) in list.iter().enumerate() {
                // Only the home's and absolute places: a place relative to the root would have
                // the root as its base, and hold every read of the project's folder (`rg x .`);
                // the pack names those with `**/` globs (`**/.env`), which a test checks.
                if entry.base() == SandboxBase::Root
                    || (name == "readOnly" && entry.base() != SandboxBase::Home)
                {
                    continue;
                }
                let Some(glob) = sandbox_glob(entry) else {
                    continue;
                };
                let tree = format!("{}/**", glob.trim_end_matches('/'));
                let (read, write) = match verb {
                    "read" => (Some(decision), None),
                    _ => (None, Some(decision)),
                };
                let index = self.rules.len();
                let label = format!("sandbox.{name}[{i}]");
                // The globs are escaped from a checked sandbox path: they always compile.
                if let Ok(mut compiled) = build(&label, index, vec![glob, tree], read, write) {
                    compiled.label = label;
                    self.rules.push(compiled);
                }
            }
        }
    }
}

/// A sandbox path as a glob of the `paths` key, escaped: relative to the root, `~/…`, or
/// absolute. `None` for the root or the home folder themselves, which a glob cannot name apart
/// from everything under them (never written for `readOnly` or `hidden` in practice).
fn sandbox_glob(entry: &SandboxPath) -> Option<String> {
    let placed = entry.place(Path::new("/"), Some(Path::new("/")))?;
    let relative = placed.strip_prefix("/").ok()?.to_str()?;
    // A hidden pattern's last part (`*.pem`) stays a pattern; the rest names itself.
    let escaped = match relative.rsplit_once('/') {
        _ if !entry.is_pattern() => globset::escape(relative),
        Some((folder, last)) => format!("{}/{last}", globset::escape(folder)),
        None => relative.to_owned(),
    };
    match entry.base() {
        _ if relative.is_empty() => None,
        SandboxBase::Root => Some(escaped),
        SandboxBase::Home => Some(format!("~/{escaped}")),
        SandboxBase::Absolute => Some(format!("/{escaped}")),
    }
}

/// The literal base of a glob as compiled (after `~/` or `./`): its parts before the first one
/// with a wildcard, backslash escapes removed. `.ssh` for `.ssh/**`, `.cargo` for
/// `.cargo/credentials*`, `/etc/ssl` for `/etc/ssl/*.key`, empty for `*.key`.
pub(super) fn literal_base(pattern: &str) -> PathBuf {
    let literal = |part: &str| {
        let mut out = String::with_capacity(part.len());
        let mut chars = part.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(chars.next()?),
                '*' | '?' | '[' | '{' => return None,
                c => out.push(c),
            }
        }
        Some(out)
    };
    let mut base = PathBuf::new();
    if pattern.starts_with('/') {
        base.push("/");
    }
    for part in pattern.split('/').filter(|part| !part.is_empty()) {
        match literal(part) {
            Some(text) => base.push(text),
            None => break,
        }
    }
    base
}

/// [`names_after`] of `pattern` and its own literal base, for the tests.
#[cfg(test)]
pub(super) fn names_after_base(pattern: &str) -> Option<String> {
    names_after(pattern, &literal_base(pattern))
}

/// The pattern of names right after a glob's literal base (`base`, its [`literal_base`], made
/// once by the caller, which needs it too at every start of sc-hook), when it is the glob's last
/// part, or is followed by `/**` alone: `*.pem` of `*.pem`, `config/*.pem` and `*.pem/**`;
/// `None` for `**`, `secrets/**` and `a*/b`.
fn names_after(pattern: &str, base: &Path) -> Option<String> {
    let parts: Vec<&str> = pattern.split('/').filter(|part| !part.is_empty()).collect();
    let literal = base
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    match &parts[literal.min(parts.len())..] {
        [names] | [names, "**"] if *names != "**" && !names.contains('{') => {
            Some((*names).to_owned())
        }
        _ => None,
    }
}

fn glob(text: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(text)
        .literal_separator(true)
        .case_insensitive(CASE_INSENSITIVE)
        .backslash_escape(true)
        .build()
}

impl PathRule {
    /// The rule's globs as parts, made on first use.
    pub(super) fn shapes(&self) -> &[Shape] {
        self.shapes.get_or_init(|| {
            self.patterns
                .iter()
                .flat_map(|(base, pattern, glob)| shapes(*base, pattern, *glob))
                .collect()
        })
    }

    /// The rule's globs as sets, built on first use; `Err` when they do not build.
    pub(super) fn compiled(&self) -> &Result<GlobSets, ()> {
        self.compiled
            .get_or_init(|| compile(&self.patterns).map_err(|_| ()))
    }
}

/// The globs of a rule that are literals ([`LiteralGlob`]).
fn literals(patterns: &[(Base, String, usize)]) -> Vec<LiteralGlob> {
    patterns
        .iter()
        .filter_map(|(base, text, index)| LiteralGlob::of(*base, text, *index))
        .collect()
}

/// Globs (each with its base and its index among the rule's globs) compiled into one set per
/// base, but for the literals ([`LiteralGlob`]), which are matched without one.
fn compile(
    globs: &[(Base, String, usize)],
) -> Result<Vec<(Base, GlobSet, Vec<usize>)>, globset::Error> {
    let mut out = Vec::new();
    for base in [Base::Root, Base::Home, Base::Absolute, Base::Anywhere] {
        let mut builder = GlobSetBuilder::new();
        let mut members = Vec::new();
        for (_, text, index) in globs
            .iter()
            .filter(|(b, text, index)| *b == base && LiteralGlob::of(*b, text, *index).is_none())
        {
            builder.add(glob(text)?);
            members.push(*index);
        }
        if !members.is_empty() {
            out.push((base, builder.build()?, members));
        }
    }
    Ok(out)
}

fn rule(key: &str, index: usize, value: &Value) -> Result<PathRule, PathsError> {
    let object = keys::object(key, value, RULE_KEYS)?;
    let globs: Vec<String> = match object.get("glob") {
        Some(Value::String(one)) => vec![one.clone()],
        Some(list @ Value::Array(_)) => keys::strings(&format!("{key}.glob"), list)?
            .into_iter()
            .map(str::to_owned)
            .collect(),
        Some(other) => {
            let expected = "a glob or a list of globs";
            return Err(wrong_type(expected, other).at(format!("{key}.glob")).into());
        }
        None => return Err(PathProblem::NoGlob.at(key)),
    };
    if globs.is_empty() {
        return Err(PathProblem::NoGlobs.at(format!("{key}.glob")));
    }
    let read = object
        .get("read")
        .map(|v| keys::decision(&format!("{key}.read"), v))
        .transpose()?;
    let write = object
        .get("write")
        .map(|v| keys::decision(&format!("{key}.write"), v))
        .transpose()?;
    if read.is_none() && write.is_none() {
        return Err(PathProblem::NoDecision.at(key));
    }
    build(key, index, globs, read, write)
}

/// A rule from its parts, checked: `key` names it in errors (made only for an error).
fn build(
    key: &str,
    index: usize,
    globs: Vec<String>,
    read: Option<Decision>,
    write: Option<Decision>,
) -> Result<PathRule, PathsError> {
    let mut patterns = Vec::with_capacity(globs.len());
    let mut literals = Vec::new();
    for (i, text) in globs.iter().enumerate() {
        let glob_key = || format!("{key}.glob[{i}]");
        let (base, pattern) = if let Some(rest) = text.strip_prefix("~/") {
            (Base::Home, rest)
        } else if text.starts_with('~') {
            return Err(PathProblem::Tilde(text.clone()).at(glob_key()));
        } else if text.starts_with('/') {
            (Base::Absolute, text.as_str())
        } else if text.starts_with("**") {
            (Base::Anywhere, text.as_str())
        } else {
            (Base::Root, text.strip_prefix("./").unwrap_or(text))
        };
        if pattern.is_empty() {
            return Err(PathProblem::EmptyGlob.at(glob_key()));
        }
        if Path::new(pattern)
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        {
            return Err(PathProblem::DotPart(text.clone()).at(glob_key()));
        }
        // A literal (most of them: every sandbox place) always compiles.
        match LiteralGlob::of(base, pattern, i) {
            Some(literal) => literals.push(literal),
            None => {
                if let Err(error) = glob(pattern) {
                    let glob = text.clone();
                    return Err(PathProblem::Glob { glob, error }.at(glob_key()));
                }
            }
        }
        patterns.push((base, pattern.to_owned(), i));
    }
    let mut read_bases: Vec<ReadBase> = Vec::new();
    if read.is_some() || write.is_some() {
        for (base, pattern, glob) in &patterns {
            if *base == Base::Anywhere {
                continue;
            }
            let rel = literal_base(pattern);
            let names = names_after(pattern, &rel);
            if !read_bases
                .iter()
                .any(|b| b.base == *base && b.rel == rel && b.names == names)
            {
                read_bases.push(ReadBase {
                    base: *base,
                    rel,
                    glob: *glob,
                    names,
                });
            }
        }
    }
    Ok(PathRule {
        index,
        globs,
        read,
        write,
        compiled: std::sync::OnceLock::new(),
        literals,
        patterns,
        shapes: std::sync::OnceLock::new(),
        longest_base: read_bases
            .iter()
            .map(|b| b.rel.as_os_str().len())
            .max()
            .unwrap_or(0),
        read_bases,
        label: format!("paths.rules[{index}]"),
        own: None,
    })
}

#[cfg(test)]
#[path = "rule_tests.rs"]
mod tests;
