//! What else a `readOnly` path under `.git` must protect: the files by which git finds its
//! configuration and hooks ([`crate::rules::git`], the one list the `paths` key's `gitFiles`
//! reads too), so that a program cannot redirect them rather than write them.
//!
//! Protecting `.git/hooks` alone leaves ways around it: a new `.git/commondir` makes git take its
//! config and hooks from another folder the program wrote; `.git/config.worktree` is read as
//! config (`core.hooksPath`, `core.fsmonitor`, filters, aliases all run commands);
//! `.git/info/attributes` picks the filters and diff drivers that run; a submodule's git dir
//! (`.git/modules/NAME`) has a config and hooks of its own, run by `git submodule` and by
//! `git status` recursing into it. So once any `readOnly` path is under a `.git`, every git dir
//! that `.git` leads to has all of [`GIT_DIR_FILES`] protected: the `.git` folder itself, the git
//! dir a `.git` FILE (`gitdir: …`, a worktree or a submodule checkout) points to, the common dir
//! a `commondir` file names, and the git dirs of the submodules already under `modules/`; and
//! the `commondir` and `config.worktree` of each linked worktree's git dir (`worktrees/NAME`),
//! which git reads when run in that worktree, wherever it is.
//!
//! A missing `commondir` is blocked with a placeholder holding `.` (the git dir itself): git dies
//! on an empty one, and reads `.` as having no other common dir.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

pub use crate::rules::git::GIT_DIR_FILES;
use crate::rules::git::{DOT_GIT, MODULES, WORKTREES, WORKTREE_FILES};

/// What a missing `commondir` is blocked with: the git dir itself.
pub const COMMONDIR_SELF: &[u8] = b".\n";

/// How deep submodules are followed (`modules/a/modules/b/…`, names with `/` included).
const MAX_DEPTH: usize = 12;

/// The paths to protect for the `readOnly` paths `read_only` (absolute, as placed), and which
/// of them are `commondir` files.
#[derive(Debug, Default)]
pub struct GitProtected {
    pub paths: Vec<PathBuf>,
    pub commondirs: BTreeSet<PathBuf>,
}

/// The git files each `.git` named by a `readOnly` path leads to.
pub fn protected(read_only: &[PathBuf]) -> GitProtected {
    let mut found = GitProtected::default();
    let mut seen = BTreeSet::new();
    for path in read_only {
        let mut prefix = PathBuf::new();
        let mut dot_git = None;
        for component in path.components() {
            prefix.push(component);
            if component == Component::Normal(DOT_GIT.as_ref()) {
                dot_git = Some(prefix.clone());
                break;
            }
        }
        if let Some(dot_git) = dot_git {
            if seen.insert(dot_git.clone()) {
                found.dot_git(&dot_git, &mut seen);
            }
        }
    }
    found
}

impl GitProtected {
    fn dot_git(&mut self, dot_git: &Path, seen: &mut BTreeSet<PathBuf>) {
        let Ok(meta) = std::fs::symlink_metadata(dot_git) else {
            // Missing: the `readOnly` path itself blocks `.git`.
            return;
        };
        if meta.is_file() {
            // A worktree or a submodule checkout: the file says where the git dir is.
            self.paths.push(dot_git.to_owned());
            if let Some(git_dir) = gitdir_of(dot_git) {
                self.git_dir(&git_dir, seen, 0);
            }
        } else {
            self.git_dir(dot_git, seen, 0);
        }
    }

    fn git_dir(&mut self, git_dir: &Path, seen: &mut BTreeSet<PathBuf>, depth: usize) {
        self.files_of(git_dir);
        self.worktrees(&git_dir.join(WORKTREES));
        if let Some(common) = read_line(&git_dir.join("commondir")) {
            let common = git_dir.join(common);
            if seen.insert(common.clone()) {
                self.files_of(&common);
                self.worktrees(&common.join(WORKTREES));
                self.modules(&common.join(MODULES), seen, depth);
            }
        }
        self.modules(&git_dir.join(MODULES), seen, depth);
    }

    fn files_of(&mut self, git_dir: &Path) {
        for name in GIT_DIR_FILES {
            self.paths.push(git_dir.join(name));
        }
        self.commondirs.insert(git_dir.join("commondir"));
    }

    /// The git dirs of linked worktrees (`worktrees/NAME`): git run in such a worktree, wherever
    /// it is, takes its common dir from their `commondir` and reads their `config.worktree`.
    fn worktrees(&mut self, worktrees: &Path) {
        let Ok(entries) = std::fs::read_dir(worktrees) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                let path = entry.path();
                for name in WORKTREE_FILES {
                    self.paths.push(path.join(name));
                }
                self.commondirs.insert(path.join("commondir"));
            }
        }
    }

    /// The git dirs of existing submodules under `modules` (a folder holding `HEAD` is one; a
    /// submodule's name may hold `/`, so others are searched further).
    fn modules(&mut self, modules: &Path, seen: &mut BTreeSet<PathBuf>, depth: usize) {
        if depth >= MAX_DEPTH {
            return;
        }
        let Ok(entries) = std::fs::read_dir(modules) else {
            return;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                continue;
            }
            let path = entry.path();
            if !seen.insert(path.clone()) {
                continue;
            }
            if path.join("HEAD").exists() {
                self.git_dir(&path, seen, depth + 1);
            } else {
                self.modules(&path, seen, depth + 1);
            }
        }
    }
}

/// The git dir a `.git` file names (`gitdir: PATH`, relative to the file's folder).
fn gitdir_of(dot_git: &Path) -> Option<PathBuf> {
    let line = read_line(dot_git)?;
    let target = line.strip_prefix("gitdir:")?.trim();
    (!target.is_empty()).then(|| dot_git.parent().unwrap_or(Path::new("/")).join(target))
}

/// The first line of a small file, without its line end.
fn read_line(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    let line = text.lines().next()?.trim_end_matches('\r').to_owned();
    (!line.is_empty()).then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_git_dir_a_dot_git_leads_to_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |name: &str, text: &str| {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(".git/HEAD", "ref: refs/heads/main\n");
        write(".git/modules/a/HEAD", "x");
        write(".git/modules/a/modules/b/HEAD", "x");
        write(".git/modules/ns/c/HEAD", "x");
        write("wt/.git", "gitdir: ../gitdirs/wt\n");
        write("gitdirs/wt/HEAD", "x");
        write("gitdirs/wt/commondir", "../common\n");
        write("gitdirs/common/HEAD", "x");
        write(".git/worktrees/elsewhere/commondir", "../..\n");
        let found = protected(&[root.join(".git/hooks"), root.join("wt/.git/config")]);
        let has = |path: &str| found.paths.contains(&root.join(path));
        for path in [
            ".git/config",
            ".git/hooks",
            ".git/commondir",
            ".git/config.worktree",
            ".git/info/attributes",
            ".git/modules/a/config",
            ".git/modules/a/hooks",
            ".git/modules/a/modules/b/hooks",
            ".git/modules/ns/c/commondir",
            "wt/.git",
            ".git/worktrees/elsewhere/commondir",
            ".git/worktrees/elsewhere/config.worktree",
            "wt/../gitdirs/wt/config",
            "wt/../gitdirs/wt/commondir",
            "wt/../gitdirs/wt/../common/config",
            "wt/../gitdirs/wt/../common/hooks",
        ] {
            assert!(has(path), "{path}: {:?}", found.paths);
        }
        assert!(!has(".git/modules/ns/hooks"), "not a git dir");
        assert!(found.commondirs.contains(&root.join(".git/commondir")));
        assert!(found
            .commondirs
            .contains(&root.join(".git/worktrees/elsewhere/commondir")));
        assert!(protected(&[root.join(".claude")]).paths.is_empty());
    }
}
