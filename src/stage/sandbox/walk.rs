//! Walking a path as the kernel does, one component at a time, following each symbolic link:
//! where it really leads (its canonical form), or where it stops existing (its first missing
//! component), and every link met on the way, so that the plan can refuse a link that a program
//! could replace.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::SandboxError;

/// Opens a regular file of the tree for reading, without following a link at its last part and
/// without waiting: a pipe (or device) put where a file was expected is refused rather than
/// waited on. The plan runs under the lock every run takes (`super::sharing`): a confined
/// program's `mkfifo config/.git/commondir` hung every later run of the user (a review).
pub(super) fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// Where a path leads.
pub enum Resolved {
    /// It exists: its canonical path.
    Exists(PathBuf),
    /// `first` is its first component that does not exist; `more` says whether components follow.
    Missing { first: PathBuf, more: bool },
}

/// What the file system said of one path: kept for the rest of one plan, which walks some forty
/// paths through the same few folders (800 look-ups where 60 say everything, a millisecond of
/// each confined call). The plan is made in one go, before bubblewrap runs, so an answer kept is
/// no older than one asked again would be by the time the mounts are made.
#[derive(Clone)]
enum Seen {
    Link(PathBuf),
    Folder,
    Other,
    Missing,
}

/// Walks paths from `/` as the kernel would, asking the file system about each path once.
#[derive(Default)]
pub struct Walker {
    /// By the path's bytes: hashing a `Path` walks its components, and was most of the walk.
    seen: HashMap<OsString, Seen>,
}

impl Walker {
    /// Walks `path`, following each symbolic link (and telling `on_link` of it and the folder
    /// it is in), to its canonical form or its first missing component. A file where a folder
    /// is needed counts as the place to protect: replacing it is the only way the path could
    /// come to exist.
    pub fn resolve(
        &mut self,
        path: &Path,
        on_link: &mut dyn FnMut(&Path, &Path) -> Result<(), SandboxError>,
    ) -> Result<Resolved, SandboxError> {
        let mut rest: VecDeque<OsString> = parts(path);
        let mut current = PathBuf::from("/");
        let mut links = 0;
        while let Some(part) = rest.pop_front() {
            if part == ".." {
                current.pop();
                continue;
            }
            let next = current.join(&part);
            match self.look(&next)? {
                Seen::Link(target) => {
                    on_link(&next, &current)?;
                    links += 1;
                    if links > 40 {
                        return Err(SandboxError::Place {
                            what: "the path".into(),
                            path: path.to_owned(),
                            why: "has too many symbolic links".into(),
                        });
                    }
                    if target.is_absolute() {
                        current = PathBuf::from("/");
                    }
                    for part in parts(&target).into_iter().rev() {
                        rest.push_front(part);
                    }
                }
                Seen::Other if !rest.is_empty() => return Ok(Resolved::Exists(next)),
                Seen::Folder | Seen::Other => current = next,
                Seen::Missing => {
                    return Ok(Resolved::Missing {
                        first: next,
                        more: !rest.is_empty(),
                    });
                }
            }
        }
        Ok(Resolved::Exists(current))
    }

    /// What `path` is, without following a link at its end; an error other than "not found"
    /// ends the walk and is not kept.
    fn look(&mut self, path: &Path) -> Result<Seen, SandboxError> {
        if let Some(seen) = self.seen.get(path.as_os_str()) {
            return Ok(seen.clone());
        }
        let seen = match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                Seen::Link(std::fs::read_link(path).map_err(SandboxError::io(format!(
                    "reading the link {}",
                    path.display()
                )))?)
            }
            Ok(meta) if meta.is_dir() => Seen::Folder,
            Ok(_) => Seen::Other,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Seen::Missing,
            Err(err) => {
                return Err(SandboxError::io(format!("looking at {}", path.display()))(
                    err,
                ));
            }
        };
        self.seen.insert(path.as_os_str().to_owned(), seen.clone());
        Ok(seen)
    }
}

fn parts(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_owned()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn walk(path: &Path) -> (Result<Resolved, SandboxError>, Vec<PathBuf>) {
        walk_with(&mut Walker::default(), path)
    }

    fn walk_with(
        walker: &mut Walker,
        path: &Path,
    ) -> (Result<Resolved, SandboxError>, Vec<PathBuf>) {
        let mut links = Vec::new();
        let resolved = walker.resolve(path, &mut |link, _| {
            links.push(link.to_owned());
            Ok(())
        });
        (resolved, links)
    }

    fn described(walked: (Result<Resolved, SandboxError>, Vec<PathBuf>)) -> String {
        let (resolved, links) = walked;
        let resolved = match resolved {
            Ok(Resolved::Exists(path)) => format!("exists {}", path.display()),
            Ok(Resolved::Missing { first, more }) => format!("missing {} {more}", first.display()),
            Err(err) => format!("error {err}"),
        };
        format!("{resolved}; links {links:?}")
    }

    /// One walker for many paths (the plan's) answers each as a walk of its own would, and
    /// still tells of every link met, however often the walker saw it before.
    #[test]
    fn a_walker_answers_every_path_as_a_walk_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("real/sub")).unwrap();
        std::fs::write(base.join("file"), "").unwrap();
        symlink("real", base.join("rel")).unwrap();
        symlink(base.join("nowhere/deep"), base.join("dangling")).unwrap();
        symlink("loop", base.join("loop")).unwrap();
        let paths = [
            "rel/sub",
            "rel/sub/x",
            "rel/missing/y",
            "dangling/x",
            "file/below",
            "file",
            "rel/../file",
            "loop",
            "rel/sub",
            "dangling",
        ];
        let mut shared = Walker::default();
        for path in paths.iter().chain(paths.iter()) {
            let path = base.join(path);
            assert_eq!(
                described(walk_with(&mut shared, &path)),
                described(walk(&path)),
                "{}",
                path.display()
            );
        }
        let (_, links) = walk_with(&mut shared, &base.join("rel/sub"));
        assert_eq!(links, vec![base.join("rel")]);
    }

    #[test]
    fn links_are_followed_to_the_place_or_the_first_missing_component() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("real/sub")).unwrap();
        std::fs::write(base.join("file"), "").unwrap();
        symlink("real/./sub/..", base.join("rel")).unwrap();
        symlink(base.join("nowhere/deep"), base.join("dangling")).unwrap();
        symlink("loop", base.join("loop")).unwrap();
        let (resolved, links) = walk(&base.join("rel/sub"));
        assert!(matches!(resolved, Ok(Resolved::Exists(p)) if p == base.join("real/sub")));
        assert_eq!(links, vec![base.join("rel")]);
        let (resolved, _) = walk(&base.join("dangling/x"));
        assert!(
            matches!(resolved, Ok(Resolved::Missing { first, more: true }) if first == base.join("nowhere"))
        );
        let (resolved, _) = walk(&base.join("file/below"));
        assert!(matches!(resolved, Ok(Resolved::Exists(p)) if p == base.join("file")));
        let (resolved, links) = walk(&base.join("loop"));
        assert!(resolved.is_err() && links.len() > 40);
    }
}
