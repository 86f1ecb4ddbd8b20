//! Policy key `paths`: glob rules over the file a file tool reads or writes, and over the files a
//! shell command writes through redirections.
//!
//! ```json
//! "paths": {
//!   "tools": {"Write": "file_path", "Edit": "file_path", "Read": "file_path"},
//!   "writeTools": ["Write", "Edit"],
//!   "rules": [
//!     {"glob": [".claude/**", "~/.bashrc"], "write": "deny"},
//!     {"glob": ["**/.env", "~/.ssh/**"], "read": "hold"}
//!   ],
//!   "outsideRoot": "hold"
//! }
//! ```
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

use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::{Map, Value};

use super::keys::{self, shown};
use super::shell::WrittenPath;
use crate::decision::Decision;
use crate::policy::{ToolList, ToolPattern};
use crate::strict_json::type_name;

/// The keys of `paths`.
pub const KEYS: &[&str] = &["tools", "writeTools", "rules", "outsideRoot"];
/// The keys of one rule.
pub const RULE_KEYS: &[&str] = &["glob", "read", "write"];

/// Globs match case-insensitively where the file system usually does.
const CASE_INSENSITIVE: bool = cfg!(any(target_os = "macos", target_os = "windows"));

/// The checked `paths` key.
#[derive(Debug, Clone)]
pub struct PathRules {
    tools: Vec<(ToolPattern, String)>,
    write_tools: ToolList,
    rules: Vec<PathRule>,
    outside_root: Decision,
}

impl PartialEq for PathRules {
    fn eq(&self, other: &Self) -> bool {
        self.tools == other.tools
            && self.write_tools == other.write_tools
            && self.outside_root == other.outside_root
            && self.rules.len() == other.rules.len()
            && self.rules.iter().zip(&other.rules).all(|(a, b)| {
                a.index == b.index && a.globs == b.globs && a.read == b.read && a.write == b.write
            })
    }
}

impl Eq for PathRules {}

/// One rule, compiled.
#[derive(Debug, Clone)]
pub struct PathRule {
    /// Its index in `paths.rules` (rules added by [`PathRules::protect`] come after).
    pub index: usize,
    /// The globs as written.
    pub globs: Vec<String>,
    pub read: Option<Decision>,
    pub write: Option<Decision>,
    /// The globs compiled, one set per base they are relative to (each with the index in
    /// `globs` of its members), so that a path is matched against all of a base's globs at once.
    compiled: Vec<(Base, GlobSet, Vec<usize>)>,
    /// For a rule with `read`: the literal base of each glob that has one (not `**/…`), once
    /// each, with the index in `globs` of the first glob that has it ([`literal_base`]). A read
    /// of a folder on the way to a base reads what the glob names ([`PathRule::holding`]).
    read_bases: Vec<ReadBase>,
    /// The length of the longest `rel` of `read_bases`.
    longest_base: usize,
    /// The globs as parts, for a path with a wildcard ([`PathRule::meeting`]).
    shapes: Vec<Shape>,
    /// What the reason calls the rule.
    label: String,
}

/// The literal base of a `read` glob: the folder (or file) its parts before the first
/// wildcard name, relative to what the glob is relative to. `~/.ssh/**` has `.ssh` under
/// [`Base::Home`]; `/etc/ssl/private/*.key` has `/etc/ssl/private` under [`Base::Absolute`];
/// `secrets/**` has `secrets` under [`Base::Root`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadBase {
    base: Base,
    /// Relative for [`Base::Home`] and [`Base::Root`] (empty for the folder itself), absolute
    /// for [`Base::Absolute`].
    rel: PathBuf,
    /// The index in the rule's `globs` of the first glob with this base.
    glob: usize,
}

/// A call's context with its directories normalized once, for all the paths it names
/// ([`PathRules::place`]).
#[derive(Debug, Clone)]
pub struct Placed {
    cwd: Option<PathBuf>,
    root: Option<PathBuf>,
    home: Option<PathBuf>,
}

impl Placed {
    fn of(context: PathContext) -> Placed {
        let cwd = context.cwd.filter(|p| p.is_absolute()).map(normalize);
        let root = context
            .root
            .filter(|p| p.is_absolute())
            .map(normalize)
            .or_else(|| cwd.clone());
        let home = context.home.filter(|p| p.is_absolute()).map(normalize);
        Placed { cwd, root, home }
    }
}

/// What a glob is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Root,
    Home,
    Absolute,
    Anywhere,
}

/// Where the call happens: its working directory, the root it may write in (`--root`, else the
/// working directory) and the home directory (`--home`, else `$HOME`). Relative ones are
/// ignored.
#[derive(Debug, Clone, Copy, Default)]
pub struct PathContext<'a> {
    pub cwd: Option<&'a Path>,
    pub root: Option<&'a Path>,
    pub home: Option<&'a Path>,
}

/// Where calls happen, as the command line says: the home directory (`--home`, else `$HOME`)
/// and the root (`--root`). Held by the policy, so that the decision reads no environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Places {
    pub home: Option<PathBuf>,
    pub root: Option<PathBuf>,
}

impl Places {
    /// The context of a call made in `cwd` (the call's own `"cwd"`, if it has one).
    pub fn context<'a>(&'a self, cwd: Option<&'a str>) -> PathContext<'a> {
        PathContext {
            cwd: cwd.map(Path::new),
            root: self.root.as_deref(),
            home: self.home.as_deref(),
        }
    }
}

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
            rules: Vec::new(),
            outside_root: Decision::Hold,
        }
    }
}

impl PathRules {
    /// Checks the `paths` key (`key` is its name, for errors); a glob that does not compile is
    /// an error naming it.
    pub fn from_json(key: &str, value: &Value) -> Result<PathRules, String> {
        let object = keys::object(key, value, KEYS)?;
        let mut rules = PathRules::default();
        if let Some(tools) = object.get("tools") {
            rules.tools = keys::tool_map(&format!("{key}.tools"), tools)?;
        }
        if let Some(write_tools) = object.get("writeTools") {
            let names = keys::strings(&format!("{key}.writeTools"), write_tools)?;
            rules.write_tools =
                ToolList::parse(&names).map_err(|why| format!("key `{key}.writeTools`: {why}"))?;
        }
        if let Some(outside) = object.get("outsideRoot") {
            rules.outside_root = keys::decision(&format!("{key}.outsideRoot"), outside)?;
        }
        if let Some(list) = object.get("rules") {
            let Value::Array(items) = list else {
                return Err(format!(
                    "key `{key}.rules`: expected an array of rules, found {}",
                    type_name(list)
                ));
            };
            for (index, item) in items.iter().enumerate() {
                rules
                    .rules
                    .push(rule(&format!("{key}.rules[{index}]"), index, item)?);
            }
        }
        Ok(rules)
    }

    /// The key of `args` that holds the path of `tool`, if the rules apply to it.
    pub fn arg_key(&self, tool: &str) -> Option<&str> {
        self.tools
            .iter()
            .find(|(pattern, _)| pattern.matches(tool))
            .map(|(_, key)| key.as_str())
    }

    /// Whether a call of `tool` is a write.
    pub fn is_write_tool(&self, tool: &str) -> bool {
        self.write_tools.matches(tool)
    }

    pub fn rules(&self) -> &[PathRule] {
        &self.rules
    }

    pub fn outside_root(&self) -> Decision {
        self.outside_root
    }

    /// Denies writes to `path` and anything under it, whatever the policy says: for the files
    /// the gate itself runs on (its policy, audit log and state), named on its command line.
    pub fn protect(&mut self, path: &Path, what: &str) {
        let path = normalize(path);
        if !path.is_absolute() {
            return;
        }
        let text = path.to_string_lossy();
        let escaped = globset::escape(&text);
        let compiled = compile(&[
            (Base::Absolute, escaped.clone(), 0),
            (Base::Absolute, format!("{escaped}/**"), 0),
        ])
        .unwrap_or_default();
        let mut shapes = shapes(Base::Absolute, &escaped, 0);
        shapes.extend(self::shapes(Base::Absolute, &format!("{escaped}/**"), 0));
        self.rules.push(PathRule {
            index: self.rules.len(),
            globs: vec![text.clone().into_owned()],
            read: None,
            write: Some(Decision::Deny),
            compiled,
            read_bases: Vec::new(),
            longest_base: 0,
            shapes,
            label: format!("the gate's own {what}"),
        });
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
    pub fn decide_path(&self, path: &str, write: bool, context: PathContext) -> PathJudgement {
        self.judge(path, write, true, None, &Placed::of(context))
    }

    /// A call's context, placed once for every path of a shell command.
    pub fn place(&self, context: PathContext) -> Placed {
        Placed::of(context)
    }

    /// Decides a file a shell command writes ([`super::commands::CommandJudgement::writes`]).
    pub fn decide_written(&self, written: &WrittenPath, placed: &Placed) -> PathJudgement {
        self.judge(
            &written.path,
            true,
            written.placeable,
            Some(&written.by),
            placed,
        )
    }

    /// Decides a file a shell command reads through an input redirection (`cat < FILE`): the
    /// read rules, as for an argument.
    pub fn decide_redirected(&self, read: &WrittenPath, placed: &Placed) -> PathJudgement {
        self.judge(&read.path, false, read.placeable, Some(&read.by), placed)
    }

    /// The read rules applied to a simple command's arguments, as paths: `cat .env` reads
    /// `.env` as surely as `Read` does. Only rules with `read` count here; writes and the root
    /// are for the files a command writes ([`PathRules::decide_written`]). `None` when no
    /// argument matches. `placeable` is false when the command changes directory.
    /// `by` (the command as a reason shows it) is written only for an argument that matches.
    ///
    /// Which words are paths depends on the program, which is not known here, so every place a
    /// path may start is judged ([`argument_paths`]): each word after the program, up to its
    /// first NUL (bash hands the program a C string); the value of each `--option=value` and
    /// `-option=value`; and for a word of short options (`-f/home/me/.ssh/id_rsa`,
    /// `-xvf~/.ssh/k`), the value that may be attached to any of its letters, that is the word
    /// from each of its characters after the first letter on. After `--`, every word is an
    /// operand, whatever it starts with.
    pub fn decide_arguments(
        &self,
        words: &[String],
        by: &dyn Fn() -> String,
        placeable: bool,
        placed: &Placed,
    ) -> Option<PathJudgement> {
        self.decide_shell_arguments(words, &[], by, placeable, placed)
    }

    /// [`PathRules::decide_arguments`], knowing which words the shell expands as globs
    /// (`globbed[i]` for `words[i]`: an unquoted `*`, `?` or `[`): only in those does a wildcard
    /// stand for the names it may match; a quoted one (`find -name '*.rs'`) is a character of
    /// the path, as the program gets it. A word without a flag counts as globbed (fail closed).
    pub fn decide_shell_arguments(
        &self,
        words: &[String],
        globbed: &[bool],
        by: &dyn Fn() -> String,
        placeable: bool,
        placed: &Placed,
    ) -> Option<PathJudgement> {
        if !self.rules.iter().any(|rule| rule.read.is_some()) {
            return None;
        }
        let mut strongest: Option<PathJudgement> = None;
        let mut operands = false;
        // Reasons are kept to a few (as for commands); once that many name the strictest
        // decision a read can get, no later word can change the judgement.
        let strictest = self.rules.iter().filter_map(|rule| rule.read).max();
        for (index, word) in words.iter().enumerate().skip(1) {
            let expands = globbed.get(index).copied().unwrap_or(true);
            if strongest.as_ref().is_some_and(|best| {
                Some(best.decision) == strictest && best.reasons.len() >= MAX_PATH_REASONS
            }) {
                break;
            }
            // Bash passes each word as a C string: the program sees it up to its first NUL.
            let word = word.split('\0').next().unwrap_or_default();
            if !operands && word == "--" {
                operands = true;
                continue;
            }
            // A word of short options with a wildcard the shell expands (`-x*`, `-f.e?v`) may
            // attach any name to any of its letters: judging each place against every glob
            // costs too much for what no command needs, so it may name any file.
            let short = !operands && word.starts_with('-') && !word.starts_with("--");
            if expands && short && word.len() > 2 && has_wildcard(&word.as_bytes()[2..]) {
                let why = "is a word of short options with a wildcard the shell expands, so a value attached to any of its letters may name any file";
                let judged = self.judge_as_any(word, why, false, Some(&by()));
                if judged.decision > Decision::Allow {
                    match &mut strongest {
                        Some(best) if best.decision >= judged.decision => {}
                        _ => strongest = Some(judged),
                    }
                }
                continue;
            }
            let judged = match argument_paths(word, operands) {
                Ok(paths) => paths
                    .filter(|path| !path.is_empty())
                    .map(|path| self.judge_read(path, placeable, by, placed, expands))
                    .filter(|judged| judged.decision > Decision::Allow)
                    .reduce(|mut best, judged| {
                        if judged.decision > best.decision {
                            return judged;
                        }
                        if judged.decision == best.decision {
                            let room = MAX_PATH_REASONS.saturating_sub(best.reasons.len());
                            best.reasons.extend(judged.reasons.into_iter().take(room));
                        }
                        best
                    }),
                Err(TooManyPlaces) => Some(self.judge_unreadable_option(word, by)),
            };
            let Some(judged) = judged else { continue };
            match &mut strongest {
                Some(best) if best.decision > judged.decision => {}
                Some(best) if best.decision == judged.decision => {
                    for reason in judged.reasons {
                        if best.reasons.len() >= MAX_PATH_REASONS {
                            break;
                        }
                        if !best.reasons.contains(&reason) {
                            best.reasons.push(reason);
                        }
                    }
                }
                _ => strongest = Some(judged),
            }
        }
        strongest
    }

    /// A word of short options so long that the places a value attached to it may start are
    /// too many to judge each ([`argument_paths`]): it may name any file, so it gets the
    /// strictest `read` decision of every rule (fail closed, as for `~name`).
    fn judge_unreadable_option(&self, word: &str, by: &dyn Fn() -> String) -> PathJudgement {
        let findings = self
            .rules
            .iter()
            .filter_map(|rule| rule.read.map(|read| (read, rule)))
            .map(|(read, rule)| {
                (
                    read,
                    format!(
                        "read by {}: the option word \"{}…\" ({} bytes) may carry a path attached at more places than are judged one by one ({}), so it may name any file of {}: {read}",
                        shown(&by()),
                        shown(head(word, 32)),
                        word.len(),
                        MAX_ATTACHED_PLACES,
                        rule.label
                    ),
                )
            })
            .collect();
        strongest(findings, || {
            format!("read by {} matches no paths rule", shown(&by()))
        })
    }

    /// A read of an argument: the rules first, and the command shown only for a match.
    fn judge_read(
        &self,
        path: &str,
        placeable: bool,
        by: &dyn Fn() -> String,
        placed: &Placed,
        expands: bool,
    ) -> PathJudgement {
        let judged = self.judge_with(path, false, placeable, None, placed, false, expands);
        if judged.decision == Decision::Allow {
            return judged;
        }
        self.judge_with(path, false, placeable, Some(&by()), placed, true, expands)
    }

    fn judge(
        &self,
        path: &str,
        write: bool,
        placeable: bool,
        by: Option<&str>,
        placed: &Placed,
    ) -> PathJudgement {
        self.judge_with(path, write, placeable, by, placed, true, false)
    }

    /// [`PathRules::judge`]; `allow_reason` false leaves an allowed path without its reason
    /// ("… matches no paths rule"), which a shell argument's first look never shows. `expands`:
    /// the path is a shell word whose wildcards bash expands (an unquoted `*`, `?`, `[`); in any
    /// other path (a file tool's, a quoted word) a wildcard is a character of the name.
    #[allow(clippy::too_many_arguments)]
    fn judge_with(
        &self,
        path: &str,
        write: bool,
        placeable: bool,
        by: Option<&str>,
        placed: &Placed,
        allow_reason: bool,
        expands: bool,
    ) -> PathJudgement {
        let verb = if write { "write" } else { "read" };
        if path.contains('\0') {
            return PathJudgement {
                decision: Decision::Deny,
                reasons: vec![format!(
                    "malformed call: the path \"{}\" contains a NUL character",
                    shown(path)
                )],
            };
        }
        let (root, home) = (placed.root.as_deref(), placed.home.as_deref());
        if let Some(prefix) = unknown_tilde(path, home) {
            return self.judge_unknown_home(path, prefix, write, by);
        }
        let dir = if placeable {
            placed.cwd.as_deref().or(root)
        } else {
            None
        };
        let resolved = resolve(path, dir, home);
        // Where the part the call wrote begins in `resolved` (past the working directory it was
        // joined to): a wildcard counts only there, not in the name of the project's folder.
        let written_from = dir
            .filter(|_| !path.starts_with('~') && !Path::new(path).is_absolute())
            .map(|dir| dir.as_os_str().as_encoded_bytes())
            .filter(|dir| resolved.as_os_str().as_encoded_bytes().starts_with(dir))
            .map_or(0, <[u8]>::len);
        // A wildcard in the part the call wrote (`cat .env*`, `cat deploy/id_rs?`) may match a
        // name a glob names: its parts, and those of the root and the home, are made only then.
        let bytes = resolved.as_os_str().as_encoded_bytes();
        let written = bytes.get(written_from..).unwrap_or_default();
        let wild = expands && has_wildcard(written);
        // Matching a wildcard against the globs costs time in its length and its wildcards: past
        // these bounds the path may be any file (no path a person writes comes near them).
        let wildcards = written
            .iter()
            .filter(|b| matches!(b, b'*' | b'?' | b'['))
            .count();
        if wild && (written.len() > MAX_WILD_BYTES || wildcards > MAX_WILDCARDS) {
            let why = format!(
                "has {wildcards} wildcards in {} bytes (the gate matches at most {MAX_WILDCARDS} in {MAX_WILD_BYTES} bytes against its globs), so it may be any file",
                written.len()
            );
            return self.judge_as_any(&resolved.to_string_lossy(), &why, write, by);
        }
        let patterns = wild.then(|| {
            (
                word_parts(&resolved, written_from),
                plain_parts(root),
                plain_parts(home),
            )
        });
        // Written only when a reason needs it.
        let subject = || {
            let by = by
                .map(|by| format!(" by {}", shown(by)))
                .unwrap_or_default();
            format!("{verb} of \"{}\"{by}", shown(&resolved.to_string_lossy()))
        };
        let mut findings: Vec<(Decision, String)> = Vec::new();
        for rule in &self.rules {
            let decisions = [rule.read, if write { rule.write } else { None }];
            let Some(decision) = decisions.into_iter().flatten().max() else {
                continue;
            };
            if let Some(glob) = rule.matching(&resolved, root, home) {
                findings.push((
                    decision,
                    format!(
                        "{} matches {} (glob {glob}): {decision}",
                        subject(),
                        rule.label
                    ),
                ));
                continue;
            }
            // A folder on the way to what a read glob names: reading it (`rg -uuu . ~`,
            // `tar czf x.tgz ~`) may read the secret too.
            if let Some((read, (glob, folder))) = rule.read.and_then(|read| {
                rule.holding(&resolved, written_from, wild, root, home)
                    .map(|held| (read, held))
            }) {
                let how = if !resolved.is_absolute() {
                    "cannot be placed (the command changes directory, or the call gives no cwd) and may be a folder on the way to, or a file under, what".to_owned()
                } else if let Some(folder) = folder {
                    format!(
                        "has a wildcard, so it reads in \"{}\", a folder on the way to (or the base of) what",
                        shown(&String::from_utf8_lossy(folder))
                    )
                } else {
                    "is a folder on the way to (or the base of) what".to_owned()
                };
                findings.push((
                    read,
                    format!(
                        "{} {how} {} names (glob {glob}), and a read of a folder may read what is under it: {read}",
                        subject(),
                        rule.label
                    ),
                ));
                if read >= decision {
                    continue;
                }
            }
            if let Some((word, root_parts, home_parts)) = &patterns {
                let heads = (root.map(|_| &root_parts[..]), home.map(|_| &home_parts[..]));
                if let Some(glob) = rule.meeting(word, resolved.is_absolute(), heads) {
                    findings.push((
                        decision,
                        format!(
                            "{} has a wildcard that may match a name {} names (glob {glob}): {decision}",
                            subject(),
                            rule.label
                        ),
                    ));
                }
            }
        }
        if write {
            let inside =
                root.is_some_and(|root| resolved.is_absolute() && resolved.starts_with(root));
            if !inside {
                let root_shown = match root {
                    Some(root) => format!("the root \"{}\"", shown(&root.to_string_lossy())),
                    None => {
                        "the root, which this call does not give (no cwd and no --root)".to_owned()
                    }
                };
                findings.push((
                    self.outside_root,
                    format!(
                        "{} is outside {root_shown}: paths.outsideRoot is {}",
                        subject(),
                        self.outside_root
                    ),
                ));
            }
        }
        if findings.is_empty() && !allow_reason {
            return PathJudgement {
                decision: Decision::Allow,
                reasons: Vec::new(),
            };
        }
        strongest(findings, || format!("{} matches no paths rule", subject()))
    }
}

impl PathRules {
    /// A path that starts with a tilde-prefix whose folder the gate cannot know
    /// ([`unknown_tilde`]): `~root/.ssh/id_rsa`, `~bob`, `~+`, `~-`. Bash turns `~name` into
    /// that user's home folder, which can be any folder (`~root` is `/root`, `~www-data` may be
    /// `/var/www`, and `~me` is the home folder itself, which may hold the root); and `~+`/`~-`
    /// into `$PWD`/`$OLDPWD`. Looking the name up would read the file system and this machine's
    /// users, not the agent's. So the path may be any file: it gets the strictest decision of
    /// every rule that applies to the call (the `read` of each rule, and for a write its `write`
    /// too), and a write counts as outside the root. This is at least as strict as any
    /// placement could make it, and it costs nothing on other paths: the check is on the first
    /// byte. (A read outside the root gets no decision of its own, as for `/etc/hosts`.)
    fn judge_unknown_home(
        &self,
        path: &str,
        prefix: &str,
        write: bool,
        by: Option<&str>,
    ) -> PathJudgement {
        let why = format!(
            "cannot be placed: bash turns \"{}\" into a folder the gate cannot know (a user's home, $PWD, $OLDPWD or the directory stack)",
            shown(prefix)
        );
        self.judge_as_any(path, &why, write, by)
    }

    /// A path that may be any file (`why` says why): the strictest decision of every rule, and
    /// for a write, outside the root. Fail closed.
    fn judge_as_any(&self, path: &str, why: &str, write: bool, by: Option<&str>) -> PathJudgement {
        let verb = if write { "write" } else { "read" };
        let subject = || {
            let by = by
                .map(|by| format!(" by {}", shown(by)))
                .unwrap_or_default();
            format!("{verb} of \"{}\"{by}", shown(path))
        };
        let unknown = || format!("{} {why}", subject());
        let mut findings: Vec<(Decision, String)> = Vec::new();
        for rule in &self.rules {
            let decisions = [rule.read, if write { rule.write } else { None }];
            if let Some(decision) = decisions.into_iter().flatten().max() {
                findings.push((
                    decision,
                    format!(
                        "{}, so it may match any glob of {}: {decision}",
                        unknown(),
                        rule.label
                    ),
                ));
            }
        }
        if write {
            findings.push((
                self.outside_root,
                format!(
                    "{}, so it counts as outside the root: paths.outsideRoot is {}",
                    unknown(),
                    self.outside_root
                ),
            ));
        }
        strongest(findings, || format!("{} matches no paths rule", subject()))
    }
}

impl PathRule {
    /// The first glob of the rule that matches the path, as written.
    fn matching(&self, path: &Path, root: Option<&Path>, home: Option<&Path>) -> Option<&str> {
        let under = |base: Option<&Path>| {
            base.filter(|_| path.is_absolute())
                .and_then(|base| path.strip_prefix(base).ok())
                .filter(|rest| !rest.as_os_str().is_empty())
        };
        let in_root = if path.is_absolute() {
            under(root)
        } else {
            Some(path)
        };
        let in_home = under(home);
        // The first glob of the rule, in the order written, that matches.
        let mut first: Option<usize> = None;
        for (base, set, members) in &self.compiled {
            let candidate = match base {
                Base::Root => in_root,
                Base::Home => in_home,
                Base::Absolute => path.is_absolute().then_some(path),
                Base::Anywhere => Some(in_root.unwrap_or(path)),
            };
            // Most paths match nothing: `is_match` first, and the indices only for a hit.
            let hits_on = |p: &Path| set.is_match(p).then(|| set.matches(p));
            let hits = candidate
                .and_then(hits_on)
                .or_else(|| (*base == Base::Anywhere).then(|| hits_on(path)).flatten());
            if let Some(&hit) = hits.as_ref().and_then(|hits| hits.first()) {
                let index = members[hit];
                first = Some(first.map_or(index, |f| f.min(index)));
            }
        }
        first.map(|i| {
            self.globs
                .get(i)
                .map_or(self.globs[0].as_str(), String::as_str)
        })
    }

    /// The first glob (as written) that may match a name the parts of `word` (a path with a
    /// wildcard, [`word_parts`]) match, as the shell expands it: each glob's parts, after the
    /// parts of the folder it is relative to (`heads`: the root's and the home's, when known),
    /// against the word's ([`parts_meet`]). A relative `word` (it cannot be placed) meets the
    /// globs relative to the root as they are written, and those from `**`, as
    /// [`PathRule::matching`] tries them.
    ///
    /// Cost: only for a path with a wildcard; a walk over the word's parts times the glob's,
    /// each pair a walk over their characters.
    fn meeting(
        &self,
        word: &[Part],
        absolute: bool,
        (root, home): (Option<&[Part]>, Option<&[Part]>),
    ) -> Option<&str> {
        self.shapes
            .iter()
            .find(|shape| {
                let head = match (shape.base, absolute) {
                    (Base::Anywhere, _) | (Base::Root, false) | (Base::Absolute, true) => &[][..],
                    (Base::Root, true) => match root {
                        Some(root) => root,
                        None => return false,
                    },
                    (Base::Home, true) => match home {
                        Some(home) => home,
                        None => return false,
                    },
                    (Base::Home | Base::Absolute, false) => return false,
                };
                parts_meet(word, head, &shape.parts)
            })
            .map(|shape| self.globs[shape.glob].as_str())
    }

    /// The first glob (as written) whose literal base `path` may be, or be a folder on the way
    /// to, with the folder a wildcard in the path cut it to, if it did. A read of `~`, `/home`
    /// or `/` may read `~/.ssh/id_rsa` (`rg -uuu . ~`, `tar czf x.tgz ~`,
    /// `find / -name id_rsa`). Which commands read a folder recursively is not known here (nor
    /// are their options), so every read counts: fail closed.
    ///
    /// An absolute path counts when it is the base or an ancestor of it (for `~/.ssh/**`: `~`,
    /// `/home`, `/` and `~/.ssh`, not `~/src` nor `~/.sshx`). A relative path that cannot be
    /// placed (the command changes directory, or the call gives no cwd) is an unknown folder
    /// joined to it, so it counts when it may line up with the base: `.` and `../…` always,
    /// else when its parts match a run of the base's parts, from any of them on (`.ssh`,
    /// `me/.ssh`, and past the base's end, `.aws/credentials`). Globs from `**/` have no base
    /// and are skipped: every folder is on the way to some `.env`. A base relative to a home or
    /// root the call does not give is skipped for an absolute path.
    ///
    /// Cost: the bases were found when the policy loaded. An absolute path is placed against the
    /// home and the root once (above, under or apart, by comparing bytes), then each base costs
    /// a comparison of bytes at most; a path apart from the home skips the home's bases.
    fn holding<'p>(
        &self,
        path: &'p Path,
        written_from: usize,
        wild: bool,
        root: Option<&Path>,
        home: Option<&Path>,
    ) -> Option<(&str, Option<&'p [u8]>)> {
        if self.read_bases.is_empty() {
            return None;
        }
        if !path.is_absolute() {
            // The path's parts are read once for every base (a `Path`'s components are parsed
            // anew each time they are walked).
            let path_parts: Vec<Component> = path.components().collect();
            let mut base_parts: Vec<Component> = Vec::new();
            return self
                .read_bases
                .iter()
                .find(|base| {
                    let head = match base.base {
                        Base::Home => match home {
                            Some(home) => Some(home),
                            None => return false,
                        },
                        Base::Root => root,
                        Base::Absolute | Base::Anywhere => None,
                    };
                    base_parts.clear();
                    base_parts.extend(parts(head, &base.rel));
                    may_line_up(&path_parts, &base_parts, wild)
                })
                .map(|base| (self.globs[base.glob].as_str(), None));
        }
        // A wildcard in the path (`rg -uuu x /home/*`, `grep -r x /h*`) is expanded by the
        // shell into entries of the folder before it: that folder is what may be on the way.
        // Only the first bytes can matter (a longer folder is on the way to no base), so only
        // they are scanned, whatever the length of the argument.
        let length = |folder: Option<&Path>| folder.map_or(0, |f| f.as_os_str().len());
        let window = length(home).max(length(root)) + 1 + self.longest_base;
        let whole = path.as_os_str().as_encoded_bytes();
        let bytes = if wild {
            before_wildcard(whole, written_from, window)
        } else {
            whole
        };
        let from = |folder: Option<&Path>| {
            folder.map_or(Relation::Apart, |folder| {
                Relation::of(bytes, folder.as_os_str().as_encoded_bytes())
            })
        };
        let (to_home, to_root) = (from(home), from(root));
        self.read_bases
            .iter()
            .find(|base| {
                let rel = base.rel.as_os_str().as_encoded_bytes();
                match base.base {
                    Base::Home => to_home.holds(rel),
                    Base::Root => to_root.holds(rel),
                    Base::Absolute => on_the_way(bytes, rel),
                    Base::Anywhere => false,
                }
            })
            .map(|base| {
                let cut = (bytes.len() < path.as_os_str().len()).then_some(bytes);
                (self.globs[base.glob].as_str(), cut)
            })
    }
}

/// How many places in a word of short options a value attached to one of its letters is
/// judged from, past the first 256: beyond that, each `/` and `~`, and each character after a
/// `/`, count too, and a word with more of them than this is not read ([`argument_paths`]).
const MAX_ATTACHED_PLACES: usize = 256;

/// At most this many reasons for the paths read by a command's arguments.
const MAX_PATH_REASONS: usize = 8;

/// A path with a wildcard longer than this (in the part the call wrote) may be any file.
const MAX_WILD_BYTES: usize = 1024;
/// A path with more wildcards (`*`, `?`, `[`) than this may be any file.
const MAX_WILDCARDS: usize = 32;

/// A word of short options with more places a path may start than are judged one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TooManyPlaces;

/// The paths an argument may name (see [`PathRules::decide_arguments`]), without allocating:
/// the word itself; for an option (`-x…` or `--x…` before `--`), the value after its first
/// `=`; and for a word of short options, the word from each of its characters after the first
/// letter on (`-xvf~/.ssh/k` may be `-x -v -f ~/.ssh/k`, and a program may take a value
/// attached to any letter: `vf~/.ssh/k`, `f~/.ssh/k`, `~/.ssh/k`, `/.ssh/k`, …). For `-la`
/// that is `a`; for `-n20`, `20` and `0`: names that match nothing. A word of short options
/// with more than [`MAX_ATTACHED_PLACES`] places is an error (judged as naming any file: fail
/// closed, and the cost stays bounded).
fn argument_paths(word: &str, operand: bool) -> Result<impl Iterator<Item = &str>, TooManyPlaces> {
    let option = !operand && word.len() > 1 && word.starts_with('-');
    let value = option
        .then(|| word.split_once('=').map(|(_, value)| value))
        .flatten();
    let short = option && !word.starts_with("--");
    // A value may be attached to any letter, and a bare name attached far on (`-iii…f.env`)
    // is as much a path as one at the start: past this many places, judging each costs too
    // much for what no command needs, so the word may name any file.
    if short && word.len() > 2 + MAX_ATTACHED_PLACES {
        return Err(TooManyPlaces);
    }
    let attached = (2..word.len())
        .filter(move |&i| short && word.is_char_boundary(i))
        .map(move |i| &word[i..]);
    Ok(std::iter::once(word).chain(value).chain(attached))
}

/// The longest prefix of `text` of at most `max` bytes that ends at a character boundary.
fn head(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One token of a pattern over one part of a path (between two `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Char(char),
    /// `?`: any one character.
    One,
    /// `*`: any characters (never a `/`: a part holds none).
    Any,
    /// `[…]`: one character of the ranges, or with `negated` (`[!…]`, `[^…]`) one outside them.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// One part of a path pattern: a pattern over a name, or `**` (any number of parts).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Name(Vec<Token>),
    AnyDepth,
}

/// A glob of a rule as parts, for [`PathRule::meeting`]: its base, its parts (for
/// [`Base::Anywhere`], from the leading `**` on; for [`Base::Absolute`], after the `/`), and
/// its index in the rule's `globs`. A glob with `{a,b}` gives one shape per alternative.
#[derive(Debug, Clone)]
struct Shape {
    base: Base,
    parts: Vec<Part>,
    glob: usize,
}

/// At most this many shapes come from the alternatives (`{a,b}`) of one glob; past it, the
/// glob's shape is `**` (every path may meet it: fail closed).
const MAX_ALTERNATIVES: usize = 64;

/// The shapes of a glob (globset's syntax: `\` escapes, `[!…]`/`[^…]`, `{a,b}` not nested).
fn shapes(base: Base, pattern: &str, glob: usize) -> Vec<Shape> {
    let mut texts = vec![String::new()];
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars.next().map(String::from).unwrap_or_default();
                texts.iter_mut().for_each(|t| {
                    t.push('\\');
                    t.push_str(&next)
                });
            }
            '{' => {
                let mut group = String::new();
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                    group.push(c);
                }
                let alternatives: Vec<&str> = group.split(',').collect();
                if texts.len() * alternatives.len() > MAX_ALTERNATIVES {
                    return vec![Shape {
                        base: Base::Anywhere,
                        parts: vec![Part::AnyDepth],
                        glob,
                    }];
                }
                texts = texts
                    .iter()
                    .flat_map(|t| alternatives.iter().map(move |a| format!("{t}{a}")))
                    .collect();
            }
            c => texts.iter_mut().for_each(|t| t.push(c)),
        }
    }
    texts
        .iter()
        .map(|text| Shape {
            base,
            parts: text
                .split('/')
                .filter(|part| !part.is_empty())
                .map(|part| match part {
                    "**" => Part::AnyDepth,
                    part => Part::Name(tokens(part, true)),
                })
                .collect(),
            glob,
        })
        .collect()
}

/// The tokens of one part of a pattern: of a glob (`escapes`: a `\` makes the next character
/// literal) or of a shell word after quote removal (no escapes left; an unclosed `[` is a
/// character). A POSIX class (`[[:alpha:]]`) counts as any character.
fn tokens(part: &str, escapes: bool) -> Vec<Token> {
    let chars: Vec<char> = part.chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if escapes && i + 1 < chars.len() => {
                out.push(Token::Char(chars[i + 1]));
                i += 2;
                continue;
            }
            '?' => out.push(Token::One),
            '*' => {
                if out.last() != Some(&Token::Any) {
                    out.push(Token::Any)
                }
            }
            // In a shell word (`escapes` false) the text comes after quote removal, so which
            // `!`, `^`, `]` or `[:` in a class were quoted is lost (`[\!v]` is {`!`, `v`} to
            // bash, `[!v]` here): from its first `[` on, a word's part may be any name.
            '[' if !escapes => {
                if out.last() != Some(&Token::Any) {
                    out.push(Token::Any);
                }
                break;
            }
            '[' => {
                if let Some((class, next)) = class(&chars, i + 1, escapes) {
                    out.push(class);
                    i = next;
                    continue;
                }
                out.push(Token::Char('['));
            }
            c => out.push(Token::Char(c)),
        }
        i += 1;
    }
    out
}

/// The class that opens before `chars[from]`, and the index past its `]`; `None` if unclosed.
fn class(chars: &[char], from: usize, escapes: bool) -> Option<(Token, usize)> {
    let mut i = from;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let mut c = *chars.get(i)?;
        if c == ']' && !first {
            return Some((Token::Class { negated, ranges }, i + 1));
        }
        first = false;
        if c == '[' && matches!(chars.get(i + 1), Some(':' | '.' | '=')) {
            // A POSIX class (`[:alpha:]`), a collating symbol (`[.v.]`) or an equivalence
            // class (`[=v=]`): any character, to be safe (`.en[[.v.]]` is `.env` to bash).
            let mark = chars[i + 1];
            let close = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == mark && chars[j + 1] == ']')?;
            ranges.push(('\0', char::MAX));
            i = close + 2;
            continue;
        }
        if c == '\\' && escapes {
            i += 1;
            c = *chars.get(i)?;
        }
        let mut high = c;
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|&h| h != ']') {
            i += 2;
            high = chars[i];
            if high == '\\' && escapes {
                i += 1;
                high = *chars.get(i)?;
            }
        }
        ranges.push((c.min(high), c.max(high)));
        i += 1;
    }
}

/// Whether `c` is among `ranges` (without regard to ASCII case where globs match that way).
fn in_ranges(ranges: &[(char, char)], c: char) -> bool {
    let has = |c: char| ranges.iter().any(|&(low, high)| low <= c && c <= high);
    has(c) || (CASE_INSENSITIVE && (has(c.to_ascii_lowercase()) || has(c.to_ascii_uppercase())))
}

/// Whether one character may be matched by both tokens (neither of them `*`). A class meeting
/// another counts as meeting unless both are plain and share no character: a negated class is
/// taken as meeting any (more holds at worst, never fewer).
fn characters_meet(a: &Token, b: &Token) -> bool {
    match (a, b) {
        (Token::Char(x), Token::Char(y)) => {
            x == y || (CASE_INSENSITIVE && x.eq_ignore_ascii_case(y))
        }
        (Token::One, _) | (_, Token::One) => true,
        (Token::Char(c), Token::Class { negated, ranges })
        | (Token::Class { negated, ranges }, Token::Char(c)) => *negated != in_ranges(ranges, *c),
        (
            Token::Class {
                negated: false,
                ranges: a,
            },
            Token::Class {
                negated: false,
                ranges: b,
            },
        ) => {
            CASE_INSENSITIVE
                || a.iter()
                    .any(|&(al, ah)| b.iter().any(|&(bl, bh)| al <= bh && bl <= ah))
        }
        _ => true,
    }
}

/// Whether some name is matched both by `word`, a part of a shell word, and by `glob`, a part
/// of a glob: a walk over both token lists (a `*` may match nothing or take one character the
/// other side matches). Bash's `*` and `?` never match a leading `.` (without `dotglob`), so a
/// word part that starts with one meets no glob part that starts with a `.`.
fn names_meet(word: &[Token], glob: &[Token]) -> bool {
    if matches!(word.first(), Some(Token::Any | Token::One))
        && glob.first() == Some(&Token::Char('.'))
    {
        return false;
    }
    let (p, q) = (word.len(), glob.len());
    let mut reach = vec![false; (p + 1) * (q + 1)];
    reach[0] = true;
    for i in 0..=p {
        for j in 0..=q {
            if !reach[i * (q + 1) + j] {
                continue;
            }
            let (a, b) = (word.get(i), glob.get(j));
            if a == Some(&Token::Any) {
                reach[(i + 1) * (q + 1) + j] = true;
                if b.is_some_and(|b| *b != Token::Any) {
                    reach[i * (q + 1) + j + 1] = true;
                }
            }
            if b == Some(&Token::Any) {
                reach[i * (q + 1) + j + 1] = true;
                if a.is_some_and(|a| *a != Token::Any) {
                    reach[(i + 1) * (q + 1) + j] = true;
                }
            }
            if let (Some(a), Some(b)) = (a, b) {
                if *a != Token::Any && *b != Token::Any && characters_meet(a, b) {
                    reach[(i + 1) * (q + 1) + j + 1] = true;
                }
            }
        }
    }
    reach[p * (q + 1) + q]
}

/// Whether some path is matched both by the parts of a shell word and by the parts of a glob:
/// the same walk over parts, where `**` (on either side) takes any number of parts.
/// `head` is the folder the glob is relative to, as plain parts before the glob's own.
fn parts_meet(word: &[Part], head: &[Part], glob: &[Part]) -> bool {
    let part = |j: usize| {
        if j < head.len() {
            head.get(j)
        } else {
            glob.get(j - head.len())
        }
    };
    let (p, q) = (word.len(), head.len() + glob.len());
    let mut reach = vec![false; (p + 1) * (q + 1)];
    reach[0] = true;
    for i in 0..=p {
        for j in 0..=q {
            if !reach[i * (q + 1) + j] {
                continue;
            }
            let (a, b) = (word.get(i), part(j));
            if a == Some(&Part::AnyDepth) {
                reach[(i + 1) * (q + 1) + j] = true;
                if b.is_some() {
                    reach[i * (q + 1) + j + 1] = true;
                }
            }
            if b == Some(&Part::AnyDepth) {
                reach[i * (q + 1) + j + 1] = true;
                if a.is_some() {
                    reach[(i + 1) * (q + 1) + j] = true;
                }
            }
            if let (Some(Part::Name(a)), Some(Part::Name(b))) = (a, b) {
                if names_meet(a, b) {
                    reach[(i + 1) * (q + 1) + j + 1] = true;
                }
            }
        }
    }
    reach[p * (q + 1) + q]
}

/// Whether a part of a path has a wildcard bash expands (`*`, `?`, `[`).
fn has_wildcard(bytes: &[u8]) -> bool {
    bytes.iter().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// Whether a part of a relative path with a wildcard may match a part of a base.
fn parts_may_meet(part: Component, other: Component) -> bool {
    let (Component::Normal(part), Component::Normal(other)) = (part, other) else {
        return false;
    };
    let part = part.to_string_lossy();
    has_wildcard(part.as_bytes())
        && names_meet(
            &tokens(&part, false),
            &other
                .to_string_lossy()
                .chars()
                .map(Token::Char)
                .collect::<Vec<_>>(),
        )
}

/// The parts of a path as patterns: a part from `written_from` on with a wildcard as bash
/// reads it (a part that is `**` as any number of parts, as under `globstar`), the others as
/// plain names.
fn word_parts(path: &Path, written_from: usize) -> Vec<Part> {
    let text = path.to_string_lossy();
    let mut at = 0;
    let mut out = Vec::new();
    for part in text.split('/') {
        let start = at;
        at += part.len() + 1;
        if part.is_empty() {
            continue;
        }
        out.push(
            if start + part.len() > written_from && has_wildcard(part.as_bytes()) {
                if part == "**" {
                    Part::AnyDepth
                } else {
                    Part::Name(tokens(part, false))
                }
            } else {
                Part::Name(part.chars().map(Token::Char).collect())
            },
        );
    }
    out
}

/// The parts of a folder, as plain names.
fn plain_parts(folder: Option<&Path>) -> Vec<Part> {
    folder.map_or_else(Vec::new, |folder| word_parts(folder, usize::MAX))
}

/// Where an absolute path stands to a folder (both normalized).
#[derive(Clone, Copy)]
enum Relation<'p> {
    /// The path is the folder or a folder above it.
    Above,
    /// The path is under the folder: the rest of it, below the folder.
    Under(&'p [u8]),
    Apart,
}

impl<'p> Relation<'p> {
    fn of(path: &'p [u8], folder: &[u8]) -> Relation<'p> {
        if on_the_way(path, folder) {
            return Relation::Above;
        }
        if path.len() > folder.len() && same_bytes(&path[..folder.len()], folder) {
            if folder.last().is_some_and(|&b| is_separator(b)) {
                return Relation::Under(&path[folder.len()..]);
            }
            if is_separator(path[folder.len()]) {
                return Relation::Under(&path[folder.len() + 1..]);
            }
        }
        Relation::Apart
    }

    /// Whether the path is `rel` under the folder, or a folder on the way to it.
    fn holds(self, rel: &[u8]) -> bool {
        match self {
            Relation::Above => true,
            Relation::Under(rest) => on_the_way(rest, rel),
            Relation::Apart => false,
        }
    }
}

/// An absolute path's bytes cut before the part that holds the first wildcard (`*`, `?`, `[`, `{`)
/// among its bytes from `from` to `window`, `/` kept: `/home` for `/home/*`, `/` for `/h*`.
fn before_wildcard(path: &[u8], from: usize, window: usize) -> &[u8] {
    let scanned = &path[..path.len().min(window)];
    let Some(wildcard) = scanned.get(from..).and_then(|tail| {
        tail.iter()
            .position(|b| matches!(b, b'*' | b'?' | b'[' | b'{'))
    }) else {
        return path;
    };
    let cut = scanned[..from + wildcard]
        .iter()
        .rposition(|&b| is_separator(b))
        .unwrap_or(0);
    &path[..cut.max(1)]
}

/// Whether `path` is `target` or a folder above it, as normalized paths' bytes: a prefix of it
/// that ends at a separator (`/home` for `/home/me`, not `/ho`).
fn on_the_way(path: &[u8], target: &[u8]) -> bool {
    path.len() <= target.len()
        && same_bytes(path, &target[..path.len()])
        && (path.len() == target.len()
            || is_separator(target[path.len()])
            || path.last().is_some_and(|&b| is_separator(b)))
}

fn is_separator(byte: u8) -> bool {
    byte == b'/' || (cfg!(windows) && byte == b'\\')
}

/// Bytes of two paths compared as the globs compare them (without regard to ASCII case where
/// the file system usually does).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if CASE_INSENSITIVE {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// The strictest of the findings, with their reasons; an allow with `none` when there is none.
fn strongest(findings: Vec<(Decision, String)>, none: impl Fn() -> String) -> PathJudgement {
    let Some(strongest) = findings.iter().map(|(d, _)| *d).max() else {
        return PathJudgement {
            decision: Decision::Allow,
            reasons: vec![none()],
        };
    };
    PathJudgement {
        decision: strongest,
        reasons: findings
            .into_iter()
            .filter(|(d, _)| *d == strongest)
            .map(|(_, r)| r)
            .collect(),
    }
}

/// The tilde-prefix of a path whose folder cannot be known, if it has one: `~name…` up to the
/// first `/` (a user's home), `~+` and `~-` (`$PWD`, `$OLDPWD`), `~N` (the directory stack),
/// and `~` or `~/…` when no home folder is known. The word is seen after quote removal, so a
/// quoted `'~bob'` (a file of that name) counts too: fail closed.
fn unknown_tilde<'p>(path: &'p str, home: Option<&Path>) -> Option<&'p str> {
    let rest = path.strip_prefix('~')?;
    let end = rest.find('/').unwrap_or(rest.len());
    (end > 0 || home.is_none()).then(|| &path[..1 + end])
}

/// The parts of `head` joined with `rel`.
fn parts<'a>(head: Option<&'a Path>, rel: &'a Path) -> impl Iterator<Item = Component<'a>> + Clone {
    head.into_iter()
        .flat_map(Path::components)
        .chain(rel.components())
}

/// Two parts of paths are the same (without regard to ASCII case where globs match that way).
fn same(a: Component, b: Component) -> bool {
    if CASE_INSENSITIVE {
        a.as_os_str().eq_ignore_ascii_case(b.as_os_str())
    } else {
        a == b
    }
}

/// Whether a relative path joined to an unknown folder may be a folder on the way to `base`,
/// `base` itself or a file under it ([`PathRule::holding`]).
/// A part with a wildcard (`wild`: the path has one) counts when it may match the base's part
/// (`cd && cat .ss?/id_rsa`).
fn may_line_up(path: &[Component], base: &[Component], wild: bool) -> bool {
    if matches!(path.first(), None | Some(Component::ParentDir)) {
        return true;
    }
    (0..base.len()).any(|from| {
        path.iter()
            .zip(&base[from..])
            .all(|(&part, &other)| same(part, other) || (wild && parts_may_meet(part, other)))
    })
}

/// The literal base of a glob as compiled (after `~/` or `./`): its parts before the first one
/// with a wildcard, backslash escapes removed. `.ssh` for `.ssh/**`, `.cargo` for
/// `.cargo/credentials*`, `/etc/ssl` for `/etc/ssl/*.key`, empty for `*.key`.
fn literal_base(pattern: &str) -> PathBuf {
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

/// A path resolved lexically: absolute when it can be placed, else relative as given.
fn resolve(path: &str, base: Option<&Path>, home: Option<&Path>) -> PathBuf {
    let expanded = match (path.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home.to_path_buf(),
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    };
    if expanded.is_absolute() {
        return normalize(&expanded);
    }
    match base {
        Some(base) => normalize(&base.join(expanded)),
        None => normalize(&expanded),
    }
}

/// `.` dropped and `..` folded, without touching the file system; `..` above `/` stays at `/`,
/// and a relative path keeps the `..` it cannot fold.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(prefix) => out.push(prefix.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                let last = out.components().next_back();
                match last {
                    Some(Component::Normal(_)) => {
                        out.pop();
                    }
                    Some(Component::RootDir) | Some(Component::Prefix(_)) => {}
                    _ => out.push(".."),
                }
            }
            Component::Normal(part) => out.push(part),
        }
    }
    out
}

fn glob(text: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(text)
        .literal_separator(true)
        .case_insensitive(CASE_INSENSITIVE)
        .backslash_escape(true)
        .build()
}

/// Globs (each with its base and its index among the rule's globs) compiled into one set per
/// base.
fn compile(globs: &[(Base, String, usize)]) -> Result<Vec<(Base, GlobSet, Vec<usize>)>, String> {
    let mut out = Vec::new();
    for base in [Base::Root, Base::Home, Base::Absolute, Base::Anywhere] {
        let mut builder = GlobSetBuilder::new();
        let mut members = Vec::new();
        for (_, text, index) in globs.iter().filter(|(b, _, _)| *b == base) {
            builder.add(glob(text).map_err(|err| err.to_string())?);
            members.push(*index);
        }
        if !members.is_empty() {
            out.push((
                base,
                builder.build().map_err(|err| err.to_string())?,
                members,
            ));
        }
    }
    Ok(out)
}

fn rule(key: &str, index: usize, value: &Value) -> Result<PathRule, String> {
    let object = keys::object(key, value, RULE_KEYS)?;
    let globs: Vec<String> = match object.get("glob") {
        Some(Value::String(one)) => vec![one.clone()],
        Some(list @ Value::Array(_)) => keys::strings(&format!("{key}.glob"), list)?
            .into_iter()
            .map(str::to_owned)
            .collect(),
        Some(other) => {
            return Err(format!(
                "key `{key}.glob`: expected a glob or a list of globs, found {}",
                type_name(other)
            ))
        }
        None => return Err(format!("key `{key}`: a rule needs a `glob`")),
    };
    if globs.is_empty() {
        return Err(format!("key `{key}.glob`: is empty"));
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
        return Err(format!("key `{key}`: a rule needs `read`, `write` or both"));
    }
    let mut patterns = Vec::with_capacity(globs.len());
    for (i, text) in globs.iter().enumerate() {
        let glob_key = format!("{key}.glob[{i}]");
        let (base, pattern) = if let Some(rest) = text.strip_prefix("~/") {
            (Base::Home, rest)
        } else if text.starts_with('~') {
            return Err(format!(
                "key `{glob_key}`: {text:?}: only `~/…` (the home directory) is understood, not `~` alone or `~user`"
            ));
        } else if text.starts_with('/') {
            (Base::Absolute, text.as_str())
        } else if text.starts_with("**") {
            (Base::Anywhere, text.as_str())
        } else {
            (Base::Root, text.strip_prefix("./").unwrap_or(text))
        };
        if pattern.is_empty() {
            return Err(format!("key `{glob_key}`: an empty glob"));
        }
        if Path::new(pattern)
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        {
            return Err(format!(
                "key `{glob_key}`: {text:?} has a `.` or `..` part; paths are normalized before they are matched, so it would never match"
            ));
        }
        glob(pattern).map_err(|err| {
            format!("key `{glob_key}`: the glob {text:?} does not compile: {err}")
        })?;
        patterns.push((base, pattern.to_owned(), i));
    }
    let compiled =
        compile(&patterns).map_err(|err| format!("key `{key}.glob`: does not compile: {err}"))?;
    let mut read_bases: Vec<ReadBase> = Vec::new();
    if read.is_some() {
        for (base, pattern, glob) in &patterns {
            if *base == Base::Anywhere {
                continue;
            }
            let rel = literal_base(pattern);
            if !read_bases.iter().any(|b| b.base == *base && b.rel == rel) {
                read_bases.push(ReadBase {
                    base: *base,
                    rel,
                    glob: *glob,
                });
            }
        }
    }
    let shapes = patterns
        .iter()
        .flat_map(|(base, pattern, glob)| shapes(*base, pattern, *glob))
        .collect();
    Ok(PathRule {
        index,
        globs,
        read,
        write,
        compiled,
        shapes,
        longest_base: read_bases
            .iter()
            .map(|b| b.rel.as_os_str().len())
            .max()
            .unwrap_or(0),
        read_bases,
        label: format!("paths.rules[{index}]"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issue_rules() -> PathRules {
        PathRules::from_json(
            "paths",
            &json!({
              "tools": {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
                        "NotebookEdit": "notebook_path", "Read": "file_path"},
              "writeTools": ["Write", "Edit", "MultiEdit", "NotebookEdit"],
              "rules": [
                {"glob": [".claude/**", ".git/hooks/**", ".github/workflows/**", "~/.bashrc"], "write": "deny"},
                {"glob": ["**/.env", "~/.ssh/**", "~/.aws/**"], "read": "hold"}
              ],
              "outsideRoot": "hold"
            }),
        )
        .unwrap()
    }

    fn context() -> PathContext<'static> {
        PathContext {
            cwd: Some(Path::new("/w/proj")),
            root: None,
            home: Some(Path::new("/home/me")),
        }
    }

    fn decide(path: &str, write: bool) -> PathJudgement {
        issue_rules().decide_path(path, write, context())
    }

    #[test]
    fn a_long_option_word_and_many_held_words_stay_bounded() {
        let rules = issue_rules();
        let placed = rules.place(context());
        let args = |words: Vec<String>| {
            let mut all = vec!["cat".to_owned()];
            all.extend(words);
            rules.decide_arguments(&all, &|| "cat …".to_owned(), true, &placed)
        };
        // A word of short options past its bound may carry any path: fail closed.
        let long = format!("-x{}", "a".repeat(MAX_ATTACHED_PLACES + 1));
        let judged = args(vec![long]).expect("held");
        assert_eq!(judged.decision, Decision::Hold);
        assert!(
            judged.reasons[0].contains("may name any file"),
            "{judged:?}"
        );
        // Many held words give at most MAX_PATH_REASONS reasons.
        let judged = args((0..40).map(|n| format!("~/.ssh/k{n}")).collect()).expect("held");
        assert_eq!(judged.decision, Decision::Hold);
        assert_eq!(judged.reasons.len(), MAX_PATH_REASONS);
    }

    /// `cat WORD` in a command that changes directory (its relative paths cannot be placed).
    fn read_unplaced(rules: &PathRules, placed: &Placed, word: &str) -> Option<Decision> {
        rules
            .decide_arguments(
                &["cat".to_owned(), word.to_owned()],
                &|| format!("cat {word}"),
                false,
                placed,
            )
            .map(|judged| judged.decision)
    }

    /// A path as a shell word whose wildcards bash expands.
    fn decide_globbed(path: &str, write: bool) -> PathJudgement {
        let placed = Placed::of(context());
        issue_rules().judge_with(path, write, true, None, &placed, true, true)
    }

    #[test]
    fn a_wildcard_is_a_character_where_no_shell_expands_it() {
        // A file tool's path, or a quoted word: `.env*` is a file of that name.
        for path in [".env*", "~/.ss?/id_rsa", "/h*"] {
            assert_eq!(decide(path, false).decision, Decision::Allow, "{path}");
            assert_eq!(
                decide_globbed(path, false).decision,
                Decision::Hold,
                "{path}"
            );
        }
        assert_eq!(
            decide(".claud?/settings.json", true).decision,
            Decision::Allow
        );
        assert_eq!(
            decide_globbed(".claud?/settings.json", true).decision,
            Decision::Deny
        );
    }

    #[test]
    fn paths_are_placed_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(normalize(Path::new("/../x")), Path::new("/x"));
        assert_eq!(normalize(Path::new("a/../../x")), Path::new("../x"));
        assert_eq!(
            resolve("~/.bashrc", None, Some(Path::new("/home/me"))),
            Path::new("/home/me/.bashrc")
        );
        assert_eq!(
            resolve("src/../.claude/x", Some(Path::new("/w")), None),
            Path::new("/w/.claude/x")
        );
    }

    #[test]
    fn the_issue_rules_decide() {
        let judged = decide(".claude/settings.json", true);
        assert_eq!(judged.decision, Decision::Deny);
        assert_eq!(
            judged.reasons,
            ["write of \"/w/proj/.claude/settings.json\" matches paths.rules[0] (glob .claude/**): deny"]
        );
        assert_eq!(
            decide("src/../.claude/settings.json", true).decision,
            Decision::Deny
        );
        assert_eq!(
            decide("/w/proj/.git/hooks/pre-commit", true).decision,
            Decision::Deny
        );
        assert_eq!(decide("~/.bashrc", true).decision, Decision::Deny);
        assert_eq!(decide("/home/me/.bashrc", true).decision, Decision::Deny);
    }

    #[test]
    fn reads_writes_and_the_root() {
        assert_eq!(
            decide(".claude/settings.json", false).decision,
            Decision::Allow
        );
        assert_eq!(decide("config/.env", false).decision, Decision::Hold);
        assert_eq!(decide(".env", false).decision, Decision::Hold);
        assert_eq!(decide("/elsewhere/.env", false).decision, Decision::Hold);
        assert_eq!(decide("~/.ssh/id_rsa", false).decision, Decision::Hold);
        assert_eq!(decide("src/main.rs", true).decision, Decision::Allow);
        assert_eq!(decide("src/main.rs", false).decision, Decision::Allow);
        let outside = decide("../other/x", true);
        assert_eq!(outside.decision, Decision::Hold);
        assert!(
            outside.reasons[0].contains("outside the root \"/w/proj\""),
            "{outside:?}"
        );
        assert_eq!(decide("/etc/passwd", true).decision, Decision::Hold);
        assert_eq!(decide("a\0b", false).decision, Decision::Deny);
        let no_place = issue_rules().decide_path(".claude/x", true, PathContext::default());
        assert_eq!(
            no_place.decision,
            Decision::Deny,
            "globs are tried as given"
        );
        let no_place = issue_rules().decide_path("notes.txt", true, PathContext::default());
        assert_eq!(no_place.decision, Decision::Hold);
        let rooted = issue_rules().decide_path(
            "notes.txt",
            true,
            PathContext {
                cwd: Some(Path::new("/w/proj/sub")),
                root: Some(Path::new("/w/proj")),
                home: None,
            },
        );
        assert_eq!(rooted.decision, Decision::Allow, "{rooted:?}");
    }

    #[test]
    fn calls_check_their_argument() {
        let rules = issue_rules();
        let args = |v: Value| v.as_object().unwrap().clone();
        assert!(rules
            .decide_call("Bash", &args(json!({})), context())
            .is_none());
        let missing = rules
            .decide_call("Write", &args(json!({})), context())
            .unwrap();
        assert_eq!(missing.decision, Decision::Deny);
        assert!(missing.reasons[0].starts_with("malformed call"));
        let number = rules
            .decide_call("Write", &args(json!({"file_path": 7})), context())
            .unwrap();
        assert_eq!(number.decision, Decision::Deny);
        let notebook = rules
            .decide_call(
                "NotebookEdit",
                &args(json!({"notebook_path": "/w/proj/.github/workflows/ci.yml"})),
                context(),
            )
            .unwrap();
        assert_eq!(notebook.decision, Decision::Deny);
    }

    #[test]
    fn load_errors_name_the_glob() {
        let err = |v: Value| PathRules::from_json("paths", &v).unwrap_err();
        let e = err(json!({"rules": [{"glob": ["a/[b"], "write": "deny"}]}));
        assert!(
            e.starts_with("key `paths.rules[0].glob[0]`: the glob \"a/[b\" does not compile"),
            "{e}"
        );
        let e = err(json!({"rules": [{"glob": ["x"]}]}));
        assert!(e.contains("needs `read`, `write`"), "{e}");
        let e = err(json!({"rules": [{"glob": ["x"], "wirte": "deny"}]}));
        assert!(e.contains("did you mean `write`?"), "{e}");
        let e = err(json!({"outsideroot": "hold"}));
        assert!(e.contains("did you mean `outsideRoot`?"), "{e}");
        let e = err(json!({"rules": [{"glob": ["../x"], "write": "deny"}]}));
        assert!(e.contains("`..`"), "{e}");
    }

    #[test]
    fn a_tilde_prefix_names_a_folder_that_cannot_be_known() {
        let home = Some(Path::new("/home/me"));
        assert_eq!(unknown_tilde("~", home), None);
        assert_eq!(unknown_tilde("~/x", home), None);
        assert_eq!(unknown_tilde("x/~bob", home), None);
        assert_eq!(unknown_tilde("~bob", home), Some("~bob"));
        assert_eq!(unknown_tilde("~root/.ssh/id_rsa", home), Some("~root"));
        assert_eq!(unknown_tilde("~+/x", home), Some("~+"));
        assert_eq!(unknown_tilde("~-", home), Some("~-"));
        assert_eq!(unknown_tilde("~2/x", home), Some("~2"));
        assert_eq!(unknown_tilde("~/x", None), Some("~"));
        assert_eq!(unknown_tilde("~", None), Some("~"));
    }

    #[test]
    fn a_path_under_an_unknown_home_may_be_any_file() {
        // As strict as `~/.ssh/id_rsa` and `~/.bashrc`, whatever follows the prefix.
        let judged = decide("~root/.ssh/id_rsa", false);
        assert_eq!(judged.decision, Decision::Hold, "{judged:?}");
        assert_eq!(
            judged.reasons,
            ["read of \"~root/.ssh/id_rsa\" cannot be placed: bash turns \"~root\" into a folder the gate cannot know (a user's home, $PWD, $OLDPWD or the directory stack), so it may match any glob of paths.rules[1]: hold"]
        );
        for path in ["~bob", "~bob/notes.txt", "~+/src", "~-", "~1"] {
            assert_eq!(decide(path, false).decision, Decision::Hold, "{path}");
        }
        let judged = decide("~bob/.bashrc", true);
        assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
        assert!(judged.reasons[0].contains("paths.rules[0]"), "{judged:?}");
        assert_eq!(decide("~bob/src/x.rs", true).decision, Decision::Deny);
        // Any glob, not only those from `~/`: `~me` may be the home folder that holds the root,
        // and a user's home may be any folder, the gate's own files' too.
        let mut relative_only = PathRules::from_json(
            "paths",
            &json!({"rules": [{"glob": [".claude/**"], "write": "deny"}]}),
        )
        .unwrap();
        let judged = relative_only.decide_path("~me/proj/.claude/settings.json", true, context());
        assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
        // A write counts as outside the root; a read outside the root gets no decision.
        let empty = PathRules::from_json("paths", &json!({"outsideRoot": "deny"})).unwrap();
        let judged = empty.decide_path("~bob/x", true, context());
        assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
        assert!(
            judged.reasons[0].contains("it counts as outside the root: paths.outsideRoot is deny"),
            "{judged:?}"
        );
        assert_eq!(
            empty.decide_path("~bob/x", false, context()).decision,
            Decision::Allow
        );
        assert_eq!(
            relative_only
                .decide_path("~bob/x", false, context())
                .decision,
            Decision::Allow
        );
        relative_only.protect(Path::new("/var/log/sc/audit.jsonl"), "audit log");
        let judged = relative_only.decide_path("~syslog/audit.jsonl", true, context());
        assert!(
            judged
                .reasons
                .iter()
                .any(|r| r.contains("the gate's own audit log")),
            "{judged:?}"
        );
        // With no home folder known, `~` itself cannot be placed either.
        let homeless = PathContext {
            home: None,
            ..context()
        };
        assert_eq!(
            issue_rules()
                .decide_path("~/.ssh/id_rsa", false, homeless)
                .decision,
            Decision::Hold
        );
        // An argument of a shell command, as the value of an option too.
        let rules = issue_rules();
        let placed = rules.place(context());
        let words = |text: &str| text.split(' ').map(str::to_owned).collect::<Vec<_>>();
        for command in ["cat ~root/.ssh/id_rsa", "grep --file=~bob/x y"] {
            let judged = rules
                .decide_arguments(&words(command), &|| command.to_owned(), true, &placed)
                .unwrap_or_else(|| panic!("{command}"));
            assert_eq!(judged.decision, Decision::Hold, "{command}");
        }
    }

    #[test]
    fn the_literal_base_of_a_glob() {
        assert_eq!(literal_base(".ssh/**"), Path::new(".ssh"));
        assert_eq!(literal_base(".ssh"), Path::new(".ssh"));
        assert_eq!(literal_base(".cargo/credentials*"), Path::new(".cargo"));
        assert_eq!(literal_base(".config/gh/**"), Path::new(".config/gh"));
        assert_eq!(literal_base("/etc/ssl/*.key"), Path::new("/etc/ssl"));
        assert_eq!(literal_base("/*"), Path::new("/"));
        assert_eq!(literal_base("*.key"), Path::new(""));
        assert_eq!(literal_base("a/{b,c}/d"), Path::new("a"));
        assert_eq!(literal_base("a/b?/d"), Path::new("a"));
        assert_eq!(literal_base("a/[bc]/d"), Path::new("a"));
        assert_eq!(literal_base(r"we\*ird/x*"), Path::new("we*ird"));
        assert!(on_the_way(b"/", b"/home/me"));
        assert!(on_the_way(b"/home", b"/home/me"));
        assert!(on_the_way(b"/home/me", b"/home/me"));
        assert!(!on_the_way(b"/ho", b"/home/me"));
        assert!(!on_the_way(b"/home/me/x", b"/home/me"));
        assert!(!on_the_way(b"/home/you", b"/home/me"));
        assert!(matches!(
            Relation::of(b"/home/me/.ssh", b"/home/me"),
            Relation::Under(b".ssh")
        ));
        assert!(matches!(Relation::of(b"/x", b"/"), Relation::Under(b"x")));
        assert!(matches!(
            Relation::of(b"/home/mex", b"/home/me"),
            Relation::Apart
        ));
        assert!(matches!(
            Relation::of(b"/home", b"/home/me"),
            Relation::Above
        ));
        // A home at `/`: everything absolute is under it.
        let rules = issue_rules();
        let at_root = PathContext {
            home: Some(Path::new("/")),
            ..context()
        };
        for (path, decision) in [
            ("/", Decision::Hold),
            ("/.ssh", Decision::Hold),
            ("/w", Decision::Allow),
        ] {
            assert_eq!(
                rules.decide_path(path, false, at_root).decision,
                decision,
                "{path}"
            );
        }
    }

    #[test]
    fn a_folder_on_the_way_to_a_read_glob_gets_its_read_decision() {
        let judged = decide("~", false);
        assert_eq!(judged.decision, Decision::Hold);
        assert_eq!(
            judged.reasons,
            ["read of \"/home/me\" is a folder on the way to (or the base of) what paths.rules[1] names (glob ~/.ssh/**), and a read of a folder may read what is under it: hold"]
        );
        for path in [
            "~/",
            "/home",
            "/home/",
            "/",
            "/home/me/.",
            "~/.ssh",
            "~/.aws",
            "../../home",
        ] {
            assert_eq!(decide(path, false).decision, Decision::Hold, "{path}");
        }
        // Not a folder on the way: a sibling, a name that only begins like the base, the
        // project's own folders (`**/.env` has no base: every folder is on the way to one).
        for path in [
            "~/src",
            "~/.sshx",
            "/home/you",
            "/homer",
            ".",
            "src",
            "README.md",
            "/w",
            "/etc/hosts",
        ] {
            assert_eq!(decide(path, false).decision, Decision::Allow, "{path}");
        }
        // A write rule has no say on reads.
        assert!(!decide("~", false).reasons[0].contains("paths.rules[0]"));
        // A glob relative to the root, and an absolute one.
        let rules = PathRules::from_json(
            "paths",
            &json!({"rules": [
                {"glob": ["secrets/**", "/etc/ssl/private/*.key"], "read": "hold"},
                {"glob": ["*.pem"], "read": "deny"}
            ]}),
        )
        .unwrap();
        let decide = |path: &str| rules.decide_path(path, false, context()).decision;
        assert_eq!(decide("."), Decision::Deny, "the root holds *.pem");
        assert_eq!(decide("secrets"), Decision::Hold);
        assert_eq!(decide("src"), Decision::Allow);
        assert_eq!(decide("src/secrets"), Decision::Allow);
        assert_eq!(decide("/etc/ssl"), Decision::Hold);
        assert_eq!(decide("/etc/ssl/private"), Decision::Hold);
        assert_eq!(decide("/etc/ssl/certs"), Decision::Allow);
        assert_eq!(decide("/w"), Decision::Deny);
        let secrets_only = PathRules::from_json(
            "paths",
            &json!({"rules": [{"glob": ["secrets/**"], "read": "hold"}]}),
        )
        .unwrap();
        let decide = |path: &str| secrets_only.decide_path(path, false, context()).decision;
        assert_eq!(decide("."), Decision::Hold);
        assert_eq!(decide("secrets"), Decision::Hold);
        assert_eq!(decide("secrets/a/b"), Decision::Hold, "the glob itself");
        assert_eq!(decide("src"), Decision::Allow);
        assert_eq!(decide("secretsx"), Decision::Allow);
    }

    #[test]
    fn collating_symbols_and_equivalence_classes_match_any_character() {
        // `.en[[.v.]]` is `.env` to bash.
        for path in [
            ".en[[.v.]]",
            ".en[[=v=]]",
            "deploy/.en[[:alpha:]]",
            "~/.ss[[.h.]]/k",
        ] {
            let judged = decide_globbed(path, false);
            assert_eq!(judged.decision, Decision::Hold, "{path}: {judged:?}");
        }
    }

    #[test]
    fn a_wildcard_reads_the_folder_before_it() {
        for path in [
            "/home/*",
            "/h*",
            "/*",
            "~/*",
            "~/.aw*/credentials",
            "../../h?me",
        ] {
            assert_eq!(
                decide_globbed(path, false).decision,
                Decision::Hold,
                "{path}"
            );
        }
        for path in ["src/*.rs", "/etc/*.conf", "*", "[ab]", "{a,b}"] {
            assert_eq!(
                decide_globbed(path, false).decision,
                Decision::Allow,
                "{path}"
            );
        }
        // Past the bounds of the matching, a wildcard path may be any file.
        let long = format!("src/{}*", "x".repeat(4096));
        let many = format!("src/{}", "[".repeat(MAX_WILDCARDS + 1));
        for path in [long.as_str(), many.as_str()] {
            let judged = decide_globbed(path, false);
            assert_eq!(judged.decision, Decision::Hold, "{path}");
            assert!(judged.reasons[0].contains("may be any file"), "{judged:?}");
        }
        // A wildcard in the name of the working directory is not the call's.
        let rules = issue_rules();
        let odd = PathContext {
            cwd: Some(Path::new("/home/me/code/p[1]")),
            root: None,
            home: Some(Path::new("/home/me")),
        };
        let placed = Placed::of(odd);
        let decide = |path: &str| {
            rules
                .judge_with(path, false, true, None, &placed, true, true)
                .decision
        };
        assert_eq!(decide("src"), Decision::Allow);
        assert_eq!(decide("."), Decision::Allow);
        assert_eq!(decide("../*"), Decision::Allow);
        assert_eq!(decide("../../*"), Decision::Hold);
        assert_eq!(decide("../.."), Decision::Hold);
    }

    #[test]
    fn a_relative_path_that_cannot_be_placed_may_line_up_with_a_base() {
        let rules = issue_rules();
        let placed = rules.place(context());
        let read = |word: &str| read_unplaced(&rules, &placed, word);
        for word in [
            ".",
            "..",
            "../x",
            ".ssh",
            ".aws/credentials",
            "me",
            "me/.ssh/config",
            "home/me",
        ] {
            assert_eq!(read(word), Some(Decision::Hold), "{word}");
        }
        for word in ["src", "main.rs", "sshd", "me2", "home/you", ".ssh2"] {
            assert_eq!(read(word), None, "{word}");
        }
        let judged = rules
            .decide_arguments(
                &["cat".to_owned(), ".aws/credentials".to_owned()],
                &|| "cd ~ && cat .aws/credentials".to_owned(),
                false,
                &placed,
            )
            .unwrap();
        assert!(
            judged.reasons[0].starts_with(
                "read of \".aws/credentials\" by cd ~ && cat .aws/credentials cannot be placed"
            ),
            "{judged:?}"
        );
        // A call with no cwd and no root cannot place `.` either.
        let nowhere = PathContext {
            cwd: None,
            root: None,
            home: Some(Path::new("/home/me")),
        };
        assert_eq!(
            rules.decide_path(".", false, nowhere).decision,
            Decision::Hold
        );
        assert_eq!(
            rules.decide_path("src", false, nowhere).decision,
            Decision::Allow
        );
    }

    fn word(text: &str) -> Vec<Token> {
        tokens(text, false)
    }

    fn pattern(text: &str) -> Vec<Token> {
        tokens(text, true)
    }

    #[test]
    fn two_patterns_meet_when_some_name_matches_both() {
        for (w, g) in [
            (".env*", ".env"),
            (".en?", ".env"),
            (".e[n]v", ".env"),
            (".[a-f]nv", ".env"),
            ("id_rs?", "id_rsa*"),
            ("server.pe[m]", "*.pem"),
            ("*.rs", "id_rsa*"),
            ("*", "id_rsa*"),
            ("x[!a]", "x[ab]"),
            ("a*b*c", "*c"),
            ("[[:alpha:]]env", "?env"),
            (".[e]nv", ".env"),
            // From a word's first `[` on, any name (its quoting is lost): fail closed.
            (".e[!n]v", ".env"),
            ("[a-c]x", "dx"),
            ("[a-c]x", "[d-f]x"),
        ] {
            assert!(names_meet(&word(w), &pattern(g)), "{w} meets {g}");
        }
        for (w, g) in [
            ("*.md", "*.pem"),
            ("*", ".env"),
            ("?env", ".env"),
            ("*.rs", ".env.*"),
            ("main.?s", "*.pem"),
        ] {
            assert!(!names_meet(&word(w), &pattern(g)), "{w} does not meet {g}");
        }
        // A glob's `\` escapes; a word's does not (quotes are gone).
        assert_eq!(pattern(r"a\*"), [Token::Char('a'), Token::Char('*')]);
        assert_eq!(word("[x"), [Token::Any]);
        assert_eq!(word("a[!]a-c]b"), [Token::Char('a'), Token::Any]);
        assert_eq!(
            pattern("[!]a-c]"),
            [Token::Class {
                negated: true,
                ranges: vec![(']', ']'), ('a', 'c')]
            }]
        );
        // Parts: `**` takes any number of them, on either side.
        let parts = |text: &str| word_parts(Path::new(text), 0);
        let anywhere = |g: &str| shapes(Base::Anywhere, g, 0).remove(0).parts;
        assert!(parts_meet(&parts("/w/p/.env*"), &[], &anywhere("**/.env")));
        assert!(parts_meet(
            &parts("/w/.g*/*/x"),
            &[],
            &anywhere("**/.git/*/x")
        ));
        assert!(!parts_meet(&parts("/w/*/x"), &[], &anywhere("**/.git/*/x")));
        assert!(parts_meet(
            &parts("/w/**"),
            &[],
            &anywhere("**/.git/hooks/x")
        ));
        assert!(!parts_meet(
            &parts("/w/*"),
            &[],
            &anywhere("**/.git/hooks/x")
        ));
        assert!(!parts_meet(&parts("/w/*.rs"), &[], &anywhere("**/.git/**")));
        let home = plain_parts(Some(Path::new("/home/me")));
        let ssh = shapes(Base::Home, ".ssh/**", 0).remove(0).parts;
        assert!(parts_meet(&parts("/home/me/.ss?/id"), &home, &ssh));
        assert!(!parts_meet(&parts("/home/you/.ss?/id"), &home, &ssh));
        // Alternatives give a shape each; too many make the glob meet everything.
        let many = shapes(Base::Anywhere, "**/{a,b}.{c,d}", 0);
        assert_eq!(many.len(), 4);
        let huge = "**/{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b}";
        assert_eq!(shapes(Base::Anywhere, huge, 0)[0].parts, [Part::AnyDepth]);
    }

    #[test]
    fn a_wildcard_may_match_a_name_a_glob_names() {
        for path in [
            ".env*",
            ".en?",
            "./.e[n]v",
            "config/.e*",
            "/srv/.env*",
            "~/.ss?/id_rsa",
            "~/.aw[s]/credentials",
        ] {
            let judged = decide_globbed(path, false);
            assert_eq!(judged.decision, Decision::Hold, "{path}: {judged:?}");
        }
        let judged = decide_globbed(".env*", false);
        assert_eq!(
            judged.reasons,
            ["read of \"/w/proj/.env*\" has a wildcard that may match a name paths.rules[1] names (glob **/.env): hold"]
        );
        for path in ["src/*.rs", "*.md", "*", "src/[a-z]*.toml"] {
            assert_eq!(
                decide_globbed(path, false).decision,
                Decision::Allow,
                "{path}"
            );
        }
        // A write: the rule's write decision.
        assert_eq!(
            decide_globbed(".claud?/settings.json", true).decision,
            Decision::Deny
        );
        assert_eq!(decide_globbed("~/.bash[r]c", true).decision, Decision::Deny);
        assert_eq!(
            decide_globbed(".claud?/settings.json", false).decision,
            Decision::Allow
        );
        // A wildcard in the working folder's name is not the call's.
        let odd = PathContext {
            cwd: Some(Path::new("/w/p[1]")),
            root: None,
            home: Some(Path::new("/home/me")),
        };
        let rules = PathRules::from_json(
            "paths",
            &json!({"rules": [{"glob": ["**/p1/x"], "read": "hold"}]}),
        )
        .unwrap();
        assert_eq!(rules.decide_path("x", false, odd).decision, Decision::Allow);
        assert_eq!(rules.decide_path("?", false, odd).decision, Decision::Allow);
        // `*.rs` meets `**/id_rsa*` (on `id_rsa.rs`), not `**/id_rsa`.
        let keys = |glob: &str| {
            PathRules::from_json(
                "paths",
                &json!({"rules": [{"glob": [glob], "read": "hold"}]}),
            )
            .unwrap()
        };
        for (glob, decision) in [
            ("**/id_rsa*", Decision::Hold),
            ("**/id_rsa", Decision::Allow),
        ] {
            let placed = Placed::of(context());
            assert_eq!(
                keys(glob)
                    .judge_with("src/*.rs", false, true, None, &placed, true, true)
                    .decision,
                decision,
                "{glob}"
            );
        }
        let placed = Placed::of(context());
        assert_eq!(
            keys("**/id_rsa")
                .judge_with("deploy/id_rs?", false, true, None, &placed, true, true)
                .decision,
            Decision::Hold
        );
        // A relative path that cannot be placed lines up with a base through its wildcard.
        let rules = issue_rules();
        let placed = rules.place(context());
        let read = |word: &str| read_unplaced(&rules, &placed, word);
        assert_eq!(read(".ss?/id_rsa"), Some(Decision::Hold));
        assert_eq!(read(".en*"), Some(Decision::Hold));
        assert_eq!(read("src/*.rs"), None);
        assert_eq!(read("*.rs"), None);
        assert_eq!(read("*/x"), None, "`*` never matches `.ssh`");
        assert_eq!(
            read("*"),
            Some(Decision::Hold),
            "`*` may be `home`, after `cd /`"
        );
    }

    #[test]
    fn every_place_an_argument_may_name_a_path() {
        fn paths(word: &str, operand: bool) -> Vec<&str> {
            argument_paths(word, operand).unwrap().collect()
        }
        assert_eq!(paths("src", false), ["src"]);
        assert_eq!(paths("-", false), ["-"]);
        assert_eq!(paths("-la", false), ["-la", "a"]);
        assert_eq!(paths("-n20", false), ["-n20", "20", "0"]);
        assert_eq!(paths("-f~/k", false), ["-f~/k", "~/k", "/k", "k"]);
        assert_eq!(
            paths("-x=a/b", false),
            ["-x=a/b", "a/b", "=a/b", "a/b", "/b", "b"]
        );
        assert_eq!(paths("--file=a", false), ["--file=a", "a"]);
        assert_eq!(paths("--file", false), ["--file"]);
        assert_eq!(paths("-f~/k", true), ["-f~/k"]);
        assert_eq!(paths("-é/x", false), ["-é/x", "/x", "x"]);
        // Up to 256 places every one; past them the word may name any file (review finding:
        // `grep -iii…f.env` named `.env` at its 300th place).
        let most = format!("-{}", "a".repeat(MAX_ATTACHED_PLACES + 1));
        assert_eq!(paths(&most, false).len(), 1 + MAX_ATTACHED_PLACES);
        let long = format!("-{}f.env", "i".repeat(300));
        assert_eq!(argument_paths(&long, false).err(), Some(TooManyPlaces));
        let slashes = format!("-{}", "/".repeat(600));
        assert_eq!(argument_paths(&slashes, false).err(), Some(TooManyPlaces));
        assert!(argument_paths(&slashes, true).is_ok());
    }

    #[test]
    fn shell_arguments_are_read_as_bash_passes_them() {
        let rules = issue_rules();
        let placed = rules.place(context());
        let decide = |command: &str| {
            let words: Vec<String> = command.split(' ').map(str::to_owned).collect();
            rules
                .decide_arguments(&words, &|| command.to_owned(), true, &placed)
                .map(|judged| judged.decision)
        };
        // Up to the first NUL.
        assert_eq!(decide("cat ~/.ssh/id_rsa\0x"), Some(Decision::Hold));
        assert_eq!(decide("cat .env\0"), Some(Decision::Hold));
        assert_eq!(decide("cat README.md\0.env"), None);
        assert_eq!(decide("cat \0~/.ssh/id_rsa"), None);
        // A value attached to a short option.
        for command in [
            "date -f/home/me/.ssh/id_rsa",
            "file -f/home/me/.aws/credentials",
            "grep -f/home/me/.ssh/id_rsa x",
            "tar -xvf~/.ssh/k",
            "grep -rfconfig/.env x",
            "cat -x.env",
            "cat -t/../../../home/me/.aws/credentials",
            "x -o=~/.ssh/id_rsa",
        ] {
            assert_eq!(decide(command), Some(Decision::Hold), "{command}");
        }
        for command in [
            "ls -la",
            "rm -rf build",
            "head -n20 x",
            "sort -t, -k2 x",
            "grep -rn x src",
        ] {
            assert_eq!(decide(command), None, "{command}");
        }
        // After `--`, a word that starts with `-` is a path, and only that.
        assert_eq!(
            decide("cat -- -t/../../../home/me/.aws/credentials"),
            Some(Decision::Hold)
        );
        assert_eq!(decide("cat -- -x.env"), None, "the file `-x.env`");
        assert_eq!(decide("cat -- -- .env"), Some(Decision::Hold));
        // A word of options too long to judge from every place names any file.
        let long = format!("x -{}", "/".repeat(600));
        let judged = rules
            .decide_arguments(
                &["x".to_owned(), long[2..].to_owned()],
                &|| long.clone(),
                true,
                &placed,
            )
            .unwrap();
        assert_eq!(judged.decision, Decision::Hold);
        assert!(
            judged.reasons[0].contains("may carry a path attached at more places"),
            "{judged:?}"
        );
    }

    #[test]
    fn protected_files_deny_writes() {
        let mut rules = issue_rules();
        rules.protect(Path::new("/etc/sc/policy.json"), "policy");
        let judged = rules.decide_path("/etc/sc/policy.json", true, context());
        assert_eq!(judged.decision, Decision::Deny);
        assert!(
            judged.reasons[0].contains("the gate's own policy"),
            "{judged:?}"
        );
    }
}
