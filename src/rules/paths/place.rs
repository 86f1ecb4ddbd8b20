//! Placing a path: the call's working directory, root and home, and a path resolved and
//! normalized against them without touching the file system.

use std::path::{Component, Path, PathBuf};

/// A call's context with its directories normalized once, for all the paths it names
/// ([`PathRules::place`](super::PathRules::place)).
#[derive(Debug, Clone)]
pub struct Placed<'a> {
    pub(super) cwd: Option<PathBuf>,
    pub(super) root: Option<PathBuf>,
    pub(super) home: Option<PathBuf>,
    pub(super) links: Option<Links<'a>>,
}

impl<'a> Placed<'a> {
    /// The folder a relative path is placed in: the call's `cwd`, else the root; none for a
    /// path that cannot be placed (the command changes directory).
    pub(super) fn base(&self, placeable: bool) -> Option<&Path> {
        placeable
            .then(|| self.cwd.as_deref().or(self.root.as_deref()))
            .flatten()
    }

    pub(super) fn of(context: PathContext<'a>) -> Placed<'a> {
        let cwd = context.cwd.filter(|p| p.is_absolute()).map(normalize);
        let root = context
            .root
            .filter(|p| p.is_absolute())
            .map(normalize)
            .or_else(|| cwd.clone());
        let home = context.home.filter(|p| p.is_absolute()).map(normalize);
        Placed {
            cwd,
            root,
            home,
            links: context.links,
        }
    }
}

/// Where a path leads on the file system, through the symbolic links on its way: given by a door
/// that sees the file system (sc-hook, for a shell command's paths), so that a link already in
/// the project (`keys -> ~/.ssh`) does not carry `cat keys/id_ed25519` past the rules that name
/// the place it leads to. The rules themselves never read the file system.
///
/// Called with a placed (absolute) path and whether bash expands wildcards in it; answers the
/// places it leads to that are not the path as written ([`Leads::Elsewhere`]; for a wildcard,
/// each name it matches that leads elsewhere), or [`Leads::Unknown`] when the door could not
/// tell (a wildcard matching more names than it lists).
///
/// `present` says whether a place is there (`lstat` finds it; any error but "not found" counts
/// as there), or, given a pattern of names, whether the folder holds an entry that matches it
/// (`*.pem`; a folder that cannot be listed counts as holding one): a read of a folder in the
/// project on the way to a place in the project that a read rule names (`Grep` of the project,
/// `.env` hidden from a tainted session) holds only when that place exists. The home's places
/// and a folder above the root hold either way.
///
/// `tree` lists what a folder holds, to the bottom (paths relative to it; its links not
/// followed), for a copy of its contents (`cp -r tpl/. .`); an error says why it could not (too
/// many entries, a folder that cannot be read).
#[derive(Clone, Copy)]
pub struct Links<'a> {
    pub leads: &'a (dyn Fn(&Path, bool) -> Leads + 'a),
    pub present: &'a Present<'a>,
    pub tree: &'a Tree<'a>,
}

/// What a folder holds, to the bottom ([`Links::tree`]): the paths of its files, links and
/// other entries that are not folders, relative to it; or why they could not be listed.
pub type Tree<'a> = dyn Fn(&Path) -> Result<Vec<PathBuf>, String> + 'a;

/// Whether a place is there, or a folder holds an entry a pattern of names matches
/// ([`Links::present`]).
pub type Present<'a> = dyn Fn(&Path, Option<&str>) -> bool + 'a;

impl std::fmt::Debug for Links<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Links")
    }
}

/// What [`Links`] found for a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leads {
    /// Where it leads through symbolic links, each place a different one from the path as
    /// written; empty: it leads where it is written.
    Elsewhere(Vec<PathBuf>),
    /// It may lead anywhere: why.
    Unknown(String),
}

/// Where the call happens: its working directory, the root it may write in (`--root`, else the
/// working directory) and the home directory (`--home`, else `$HOME`). Relative ones are
/// ignored.
#[derive(Debug, Clone, Copy, Default)]
pub struct PathContext<'a> {
    pub cwd: Option<&'a Path>,
    pub root: Option<&'a Path>,
    pub home: Option<&'a Path>,
    /// Where a path leads on the file system, when the door can tell ([`Links`]).
    pub links: Option<Links<'a>>,
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
            links: None,
        }
    }
}

/// The tilde-prefix of a path whose folder cannot be known, if it has one: `~name…` up to the
/// first `/` (a user's home), `~+` and `~-` (`$PWD`, `$OLDPWD`), `~N` (the directory stack),
/// and `~` or `~/…` when no home folder is known. The word is seen after quote removal, so a
/// quoted `'~bob'` (a file of that name) counts too: fail closed.
pub(super) fn unknown_tilde<'p>(path: &'p str, home: Option<&Path>) -> Option<&'p str> {
    let rest = path.strip_prefix('~')?;
    let end = rest.find('/').unwrap_or(rest.len());
    (end > 0 || home.is_none()).then(|| &path[..1 + end])
}

/// A path resolved lexically: absolute when it can be placed, else relative as given.
pub(super) fn resolve(path: &str, base: Option<&Path>, home: Option<&Path>) -> PathBuf {
    normalize(&joined(path, base, home))
}

/// [`resolve`] before `.` and `..` are folded: where the kernel starts walking the path, for a
/// door that follows its symbolic links (`keys/../x`, with `keys` a link, is not `x`).
pub(super) fn joined(path: &str, base: Option<&Path>, home: Option<&Path>) -> PathBuf {
    let expanded = match (path.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home.to_path_buf(),
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    };
    match base {
        Some(base) if !expanded.is_absolute() => base.join(expanded),
        _ => expanded,
    }
}

/// `.` dropped and `..` folded, without touching the file system; `..` above `/` stays at `/`,
/// and a relative path keeps the `..` it cannot fold.
pub(crate) fn normalize(path: &Path) -> PathBuf {
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

#[cfg(test)]
#[path = "place_tests.rs"]
mod tests;
