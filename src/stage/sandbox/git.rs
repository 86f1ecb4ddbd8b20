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
    super::walk::open_regular(path)
        .ok()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    let line = text.lines().next()?.trim_end_matches('\r').to_owned();
    (!line.is_empty()).then_some(line)
}

/// The filter git inside runs on the paths of a [`GitView`]: it gives back the index's blob, so a
/// stand-in reads as unchanged, and fails (failing the command, naming the path) for a path the
/// index does not hold.
pub const HIDDEN_FILTER: &str = "sc-sandbox-hidden";

/// What git inside sees of one repository's `info` folder: the host's files, with lines added so
/// that the sandbox's stand-ins (hidden files read empty, placeholders of missing protected
/// paths) never reach a commit. The folder is mounted read-only over `info`, inside only: the
/// user's files are not changed.
///
/// - `info/exclude` gains each path: git leaves an untracked stand-in out of `git add -A`;
/// - `info/attributes` (which no `.gitattributes` overrides) gives each path the
///   [`HIDDEN_FILTER`], so a tracked one is seen as its index's blob by `git add`,
///   `git commit -a`, `git stash` and `git diff`, and `git add -f` of an untracked one fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitView {
    /// The common git dir's `info` folder (canonical), where the view is mounted.
    pub info: PathBuf,
    /// Lines for `info/exclude` and `info/attributes`, one per stand-in.
    pub exclude: Vec<u8>,
    pub attributes: Vec<u8>,
}

/// The views that keep the stand-ins at `paths` (canonical files: hidden ones, placeholders) out
/// of the repositories they are in: one per repository, found by the nearest `.git` above each
/// path. A path under a `.git` folder, or in no repository, needs none.
pub fn views(paths: &[PathBuf]) -> Vec<GitView> {
    let mut views: Vec<GitView> = Vec::new();
    for path in paths {
        if path
            .components()
            .any(|c| c == Component::Normal(DOT_GIT.as_ref()))
        {
            continue;
        }
        let Some((top, info)) = repository_of(path) else {
            continue;
        };
        let Ok(relative) = path.strip_prefix(&top) else {
            continue;
        };
        let index = match views.iter().position(|view| view.info == info) {
            Some(index) => index,
            None => {
                views.push(GitView {
                    info,
                    exclude: Vec::new(),
                    attributes: Vec::new(),
                });
                views.len() - 1
            }
        };
        let view = &mut views[index];
        let relative = relative.as_os_str().as_encoded_bytes();
        if let Some(line) = exclude_line(relative) {
            view.exclude.extend(line);
        }
        view.attributes.extend(attributes_line(relative));
    }
    views
}

/// The top of the work tree `folder` is in: itself, or the nearest folder above it with a
/// repository.
pub(super) fn work_tree_of(folder: &Path) -> Option<PathBuf> {
    repository_of(&folder.join(DOT_GIT)).map(|(top, _)| top)
}

/// The work tree's top and its common git dir's `info` folder, for the nearest `.git` above
/// `path`.
fn repository_of(path: &Path) -> Option<(PathBuf, PathBuf)> {
    for top in path.ancestors().skip(1) {
        let dot_git = top.join(DOT_GIT);
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        let git_dir = if meta.is_dir() {
            // As git looks: a `.git` folder that is no repository (a run's empty placeholder)
            // is passed over for the one above.
            if !dot_git.join("HEAD").is_file() {
                continue;
            }
            dot_git
        } else if meta.is_file() {
            gitdir_of(&dot_git)?
        } else {
            return None;
        };
        let common = match read_line(&git_dir.join("commondir")) {
            Some(common) => git_dir.join(common),
            None => git_dir,
        };
        let common = std::fs::canonicalize(common).ok()?;
        return Some((top.to_owned(), common.join("info")));
    }
    None
}

/// A gitignore line naming exactly `relative` from the work tree's top; `None` for a name
/// gitignore cannot hold (a line end or another control character): the filter still keeps it
/// out of a commit, failing loudly.
fn exclude_line(relative: &[u8]) -> Option<Vec<u8>> {
    let mut line = b"/".to_vec();
    for &byte in relative {
        if byte < 0x20 || byte == 0x7f {
            return None;
        }
        if matches!(byte, b'\\' | b'*' | b'?' | b'[' | b']' | b'!' | b'#' | b' ') {
            line.push(b'\\');
        }
        line.push(byte);
    }
    line.push(b'\n');
    Some(line)
}

/// A gitattributes line giving exactly `relative` the [`HIDDEN_FILTER`]: the pattern in C-style
/// quotes (so that spaces and line ends fit), its wildcards escaped.
fn attributes_line(relative: &[u8]) -> Vec<u8> {
    let mut line = b"\"/".to_vec();
    for &byte in relative {
        if matches!(byte, b'*' | b'?' | b'[' | b']') {
            line.extend(b"\\\\");
        }
        match byte {
            b'\\' => line.extend(b"\\\\\\\\"),
            b'"' => line.extend(b"\\\""),
            b'\n' => line.extend(b"\\n"),
            b'\t' => line.extend(b"\\t"),
            byte if byte < 0x20 || byte == 0x7f => line.extend(format!("\\{byte:03o}").bytes()),
            byte => line.push(byte),
        }
    }
    line.extend(format!("\" filter={HIDDEN_FILTER}\n").bytes());
    line
}

/// Where sc-sandbox's run folder holds the `info` folder of git view `index`.
pub fn git_info_source(folder: &Path, index: usize) -> PathBuf {
    folder.join(format!("git-info-{index}"))
}

/// The environment that defines the [`HIDDEN_FILTER`] for git inside, appended to the
/// `GIT_CONFIG_COUNT` entries the program is given (`count`: its value, if set). `None` when that
/// value is not a number: git then refuses to run at all.
pub fn filter_env(count: Option<&std::ffi::OsStr>) -> Option<Vec<(String, String)>> {
    let first: usize = match count.map(|c| c.to_str()) {
        None => 0,
        Some(Some(text)) if text.trim().is_empty() => 0,
        Some(Some(text)) => text.trim().parse().ok()?,
        Some(None) => return None,
    };
    let entries = [
        (
            format!("filter.{HIDDEN_FILTER}.clean"),
            "git cat-file blob :%f",
        ),
        (format!("filter.{HIDDEN_FILTER}.required"), "true"),
    ];
    let mut env = vec![(
        "GIT_CONFIG_COUNT".to_owned(),
        (first + entries.len()).to_string(),
    )];
    for (i, (key, value)) in entries.into_iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{}", first + i), key));
        env.push((format!("GIT_CONFIG_VALUE_{}", first + i), value.to_owned()));
    }
    Some(env)
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

    #[test]
    fn each_stand_in_is_excluded_and_filtered_in_its_own_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.join("gitdirs/sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../gitdirs/sub\n").unwrap();
        // An empty `.git` (another run's placeholder) is no repository: the one above is.
        std::fs::create_dir_all(root.join("a b/.git")).unwrap();
        let found = views(&[
            root.join(".env"),
            root.join("a b/*x"),
            root.join("sub/.env"),
            root.join(".git/config"),
        ]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].info, root.join(".git/info"));
        assert_eq!(found[0].exclude, b"/.env\n/a\\ b/\\*x\n");
        assert_eq!(
            String::from_utf8_lossy(&found[0].attributes),
            "\"/.env\" filter=sc-sandbox-hidden\n\"/a b/\\\\*x\" filter=sc-sandbox-hidden\n"
        );
        assert_eq!(found[1].info, root.join("gitdirs/sub/info"));
        assert_eq!(found[1].exclude, b"/.env\n");
        assert!(views(&[PathBuf::from("/nonexistent-sc/x")]).is_empty());
        assert_eq!(exclude_line(b"a\nb"), None);
        assert_eq!(
            attributes_line(b"a\nb"),
            b"\"/a\\nb\" filter=sc-sandbox-hidden\n"
        );
        let env = filter_env(Some("2".as_ref())).unwrap();
        assert_eq!(env[0], ("GIT_CONFIG_COUNT".to_owned(), "4".to_owned()));
        assert_eq!(env[1].0, "GIT_CONFIG_KEY_2");
        assert_eq!(filter_env(None).unwrap()[1].0, "GIT_CONFIG_KEY_0");
        assert!(filter_env(Some("x".as_ref())).is_none());
    }
}
