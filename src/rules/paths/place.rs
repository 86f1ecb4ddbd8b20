//! Placing a path: the call's working directory, root and home, and a path resolved and
//! normalized against them without touching the file system.

use std::path::{Component, Path, PathBuf};

/// A call's context with its directories normalized once, for all the paths it names
/// ([`PathRules::place`](super::PathRules::place)).
#[derive(Debug, Clone)]
pub struct Placed {
    pub(super) cwd: Option<PathBuf>,
    pub(super) root: Option<PathBuf>,
    pub(super) home: Option<PathBuf>,
}

impl Placed {
    pub(super) fn of(context: PathContext) -> Placed {
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
