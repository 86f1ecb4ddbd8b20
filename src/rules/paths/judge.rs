//! The decision on one path: every rule's findings and the root's, the strictest winning;
//! fail closed on a path that may be any file.

use std::path::Path;

use super::pattern::{has_wildcard, plain_parts, word_parts};
use super::place::{joined, resolve, unknown_tilde, Leads, Placed};
use super::{PathJudgement, PathRules};
use crate::rules::keys::shown;
use crate::verdict::Decision;

/// A path with a wildcard longer than this (in the part the call wrote) may be any file.
const MAX_WILD_BYTES: usize = 1024;
/// A path with more wildcards (`*`, `?`, `[`) than this may be any file.
const MAX_WILDCARDS: usize = 32;

impl PathRules {
    /// A read of an argument: the rules first, and the command shown only for a match.
    pub(super) fn judge_read(
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

    pub(super) fn judge(
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
    ///
    /// Where the door can tell where a path leads ([`Placed::links`]), the places it leads to
    /// through symbolic links are judged too, and the strictest answer wins.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn judge_with(
        &self,
        path: &str,
        write: bool,
        placeable: bool,
        by: Option<&str>,
        placed: &Placed,
        allow_reason: bool,
        expands: bool,
    ) -> PathJudgement {
        let written =
            self.judge_as_written(path, write, placeable, by, placed, allow_reason, expands);
        let Some(links) = placed.links.filter(|_| !path.contains('\0')) else {
            return written;
        };
        let home = placed.home.as_deref();
        if unknown_tilde(path, home).is_some() {
            return written;
        }
        let dir = placed.base(placeable);
        let lexical = joined(path, dir, home);
        if !lexical.is_absolute() {
            return written;
        }
        let wild = expands && has_wildcard(path.as_bytes());
        let mut best = written;
        match (links.leads)(&lexical, wild) {
            Leads::Elsewhere(places) => {
                for place in places {
                    let text = place.to_string_lossy();
                    let mut judged =
                        self.judge_as_written(&text, write, false, by, placed, allow_reason, false);
                    if judged.decision > best.decision {
                        let note = format!(
                            "\"{}\" leads through a symbolic link to \"{}\": ",
                            shown(&resolve(path, dir, home).to_string_lossy()),
                            shown(&text)
                        );
                        for reason in &mut judged.reasons {
                            reason.insert_str(0, &note);
                        }
                        best = judged;
                    }
                }
            }
            Leads::Unknown(why) => {
                let why = format!("may lead anywhere through symbolic links: {why}");
                let placed_at = resolve(path, dir, home);
                let judged = self.judge_as_any(&placed_at.to_string_lossy(), &why, write, by);
                if judged.decision > best.decision {
                    best = judged;
                }
            }
        }
        best
    }

    /// [`PathRules::judge_with`] on the path as written, its links not followed.
    #[allow(clippy::too_many_arguments)]
    fn judge_as_written(
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
        let dir = placed.base(placeable);
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
        let placing = super::matching::Placing::of(&resolved, root, home);
        for rule in &self.rules {
            let decisions = [rule.read, if write { rule.write } else { None }];
            let Some(decision) = decisions.into_iter().flatten().max() else {
                continue;
            };
            if let Some(glob) = rule.matching(&placing) {
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
                let present = placed.links.map(|links| links.present);
                rule.holding(&resolved, written_from, wild, root, home, present, false)
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
            // A folder on the way to what a write glob names: a copy into it (`cp x .github/`,
            // `cp -r tpl/copilot .github`) or its rename (`mv .github .gh`) may write what the
            // glob names (a review switched Copilot CLI's hooks off so).
            if let Some(denied) = rule.write.filter(|_| write) {
                // A wildcard in it is judged below, name by name (`meeting`).
                if let Some((glob, _)) =
                    rule.holding(&resolved, written_from, false, root, home, None, true)
                {
                    findings.push((
                        denied,
                        format!(
                            "{} is a folder on the way to what {} names (glob {glob}), and a write into a folder, or its rename, may write what is under it: {denied}",
                            subject(),
                            rule.label
                        ),
                    ));
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
        if write && resolved.is_absolute() {
            findings.extend(self.own_files_behind(&resolved, root, home, &subject));
        }
        if write {
            // A root that is the home folder, or holds it (a session started in `~`), would
            // make every home file a write inside the root: refused, as the sandbox refuses it.
            let refused = root.is_some_and(|root| home.is_some_and(|home| home.starts_with(root)));
            let inside = !refused
                && root.is_some_and(|root| resolved.is_absolute() && resolved.starts_with(root));
            if refused {
                let root_shown = shown(&root.unwrap_or(Path::new("/")).to_string_lossy());
                findings.push((
                    self.outside_root,
                    format!(
                        "{} is under the root \"{root_shown}\", which is the home folder or holds it, and the gate refuses it as a root (the whole home would be writable): paths.outsideRoot is {}",
                        subject(),
                        self.outside_root
                    ),
                ));
            } else if !inside {
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
    /// A write the gate's own files' globs do not name but that changes one of them: to a folder
    /// above one (renaming or removing it takes the file away: `mv target t2` leaves an agent's
    /// hook command naming nothing, and the agent then runs every call without it), or to
    /// another name of the same file (a hard link, found by device and inode, wherever it lies).
    /// The filesystem's root, the call's root and home, and the folders above those are not
    /// counted as folders above: writing into the project or the home is ordinary work.
    fn own_files_behind(
        &self,
        resolved: &Path,
        root: Option<&Path>,
        home: Option<&Path>,
        subject: &dyn Fn() -> String,
    ) -> Vec<(Decision, String)> {
        let mut findings = Vec::new();
        let everyday = |folder: &Path| {
            folder.parent().is_none()
                || [root, home]
                    .into_iter()
                    .flatten()
                    .any(|place| place.starts_with(folder))
        };
        // The written file as it is on disk, read once, only when a file to compare has one.
        let mut identity: Option<Option<(u64, u64)>> = None;
        // The path with its symbolic links resolved (`mv link-to-target/debug x`), read once.
        let mut real: Option<Option<std::path::PathBuf>> = None;
        for rule in &self.rules {
            let Some(own) = &rule.own else {
                continue;
            };
            let decision = rule.write.unwrap_or(Decision::Deny);
            let above = |folder: &Path| {
                own.path != folder && own.path.starts_with(folder) && !everyday(folder)
            };
            let mut real_above = || {
                real.get_or_insert_with(|| std::fs::canonicalize(resolved).ok())
                    .as_deref()
                    .is_some_and(|real| real != resolved && above(real))
            };
            if above(resolved) || real_above() {
                findings.push((
                    decision,
                    format!(
                        "{} is a folder above {} (\"{}\"): renaming or removing it takes that away: {decision}",
                        subject(),
                        rule.label,
                        shown(&own.path.to_string_lossy())
                    ),
                ));
                continue;
            }
            let Some(own_identity) = own.identity else {
                continue;
            };
            let seen = *identity.get_or_insert_with(|| {
                use std::os::unix::fs::MetadataExt;
                std::fs::metadata(resolved)
                    .ok()
                    .map(|meta| (meta.dev(), meta.ino()))
            });
            if seen == Some(own_identity) && own.path != resolved {
                findings.push((
                    decision,
                    format!(
                        "{} is another name of {} (\"{}\", the same file): {decision}",
                        subject(),
                        rule.label,
                        shown(&own.path.to_string_lossy())
                    ),
                ));
            }
        }
        findings
    }

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
    pub(super) fn judge_as_any(
        &self,
        path: &str,
        why: &str,
        write: bool,
        by: Option<&str>,
    ) -> PathJudgement {
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

/// The strictest of the findings, with their reasons; an allow with `none` when there is none.
pub(super) fn strongest(
    findings: Vec<(Decision, String)>,
    none: impl Fn() -> String,
) -> PathJudgement {
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

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
