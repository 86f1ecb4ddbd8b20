//! Walking a path as the kernel does, one component at a time, following each symbolic link:
//! where it really leads (its canonical form), or where it stops existing (its first missing
//! component), and every link met on the way, so that the plan can refuse a link that a program
//! could replace.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::SandboxError;

/// Where a path leads.
pub enum Resolved {
    /// It exists: its canonical path.
    Exists(PathBuf),
    /// `first` is its first component that does not exist; `more` says whether components follow.
    Missing { first: PathBuf, more: bool },
}

/// Walks `path` from `/` as the kernel would, following each symbolic link (and telling
/// `on_link` of it and the folder it is in), to its canonical form or its first missing component.
/// A file where a folder is needed counts as the place to protect: replacing it is the only way
/// the path could come to exist.
pub fn resolve(
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
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                on_link(&next, &current)?;
                links += 1;
                let target = std::fs::read_link(&next).map_err(SandboxError::io(format!(
                    "reading the link {}",
                    next.display()
                )))?;
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
            Ok(meta) if !meta.is_dir() && !rest.is_empty() => return Ok(Resolved::Exists(next)),
            Ok(_) => current = next,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Resolved::Missing {
                    first: next,
                    more: !rest.is_empty(),
                });
            }
            Err(err) => {
                return Err(SandboxError::io(format!("looking at {}", next.display()))(
                    err,
                ));
            }
        }
    }
    Ok(Resolved::Exists(current))
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
        let mut links = Vec::new();
        let resolved = resolve(path, &mut |link, _| {
            links.push(link.to_owned());
            Ok(())
        });
        (resolved, links)
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
