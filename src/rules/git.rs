//! The one list of the files by which git finds its configuration, hooks and objects: what a
//! program could write to make git run its code or read another repository, rather than write
//! the config or hooks themselves.
//!
//! Both guards read this list, so they cannot drift: the sandbox's plan protects each of them in
//! every git dir a `.git` leads to (`stage::sandbox::git`), and the `paths` key's `gitFiles`
//! decision denies writes to them under any `.git` to file tools and shell redirections
//! ([`write_globs`]).
//!
//! - `config` and `config.worktree` are read as config (`core.hooksPath`, `core.fsmonitor`,
//!   filters, aliases, `core.sshCommand` all run commands);
//! - `hooks` are run;
//! - `commondir` makes git take config and hooks from another folder;
//! - `info/attributes` picks the filters and diff drivers that run;
//! - `objects/info/alternates` makes git read objects of another repository;
//! - a `.git` FILE (`gitdir: …`) says where the git dir is;
//! - `modules/NAME` (a submodule) and `worktrees/NAME` (a linked worktree) are git dirs of their
//!   own, with files of this list.

/// A repository's git dir or `.git` file.
pub const DOT_GIT: &str = ".git";

/// The files and folders of a git dir that run code or redirect git.
pub const GIT_DIR_FILES: &[&str] = &[
    "config",
    "config.worktree",
    "hooks",
    "commondir",
    "info/attributes",
    "objects/info/alternates",
];

/// The files of a linked worktree's git dir (`worktrees/NAME`) that git reads when run in that
/// worktree: the rest comes from the common dir.
pub const WORKTREE_FILES: &[&str] = &["commondir", "config.worktree"];

/// The folder of a git dir holding its linked worktrees' git dirs.
pub const WORKTREES: &str = "worktrees";

/// The folder of a git dir holding its submodules' git dirs (a name may hold `/`).
pub const MODULES: &str = "modules";

/// Globs of the `paths` key (relative to anywhere) naming every file of [`GIT_DIR_FILES`] and
/// [`WORKTREE_FILES`] in any git dir under a `.git` (its own, a submodule's, a linked
/// worktree's), what is under the folders among them, and the `.git` entry itself (a `.git` file
/// written where there is none redirects git).
pub fn write_globs() -> Vec<String> {
    let mut globs = vec![format!("**/{DOT_GIT}")];
    for name in GIT_DIR_FILES.iter().chain(WORKTREE_FILES) {
        let glob = format!("**/{DOT_GIT}/**/{name}");
        if !globs.contains(&glob) {
            globs.push(format!("{glob}/**"));
            globs.push(glob);
        }
    }
    globs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_has_its_glob_and_the_folders_what_is_under_them() {
        let globs = write_globs();
        for name in GIT_DIR_FILES.iter().chain(WORKTREE_FILES) {
            assert!(globs.contains(&format!("**/.git/**/{name}")), "{name}");
            assert!(globs.contains(&format!("**/.git/**/{name}/**")), "{name}");
        }
        assert!(globs.contains(&"**/.git".to_owned()));
        assert_eq!(globs.len(), 1 + 2 * GIT_DIR_FILES.len());
    }
}
