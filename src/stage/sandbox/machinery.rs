//! The sandbox's own machinery, read-only in every confined run wherever it lies: the binaries of
//! the doors and of the sandbox (sc-hook, sc-exec, sc-mcp, sc-sandbox and the rest installed
//! beside sc-sandbox) and the bubblewrap they run. A copy inside the root (a vendored tools
//! folder, or `target/release/sc-hook` named as the hook while developing) would otherwise be
//! replaced by one confined call, and the next "confined" call would run unconfined.
//!
//! Each is protected as the gate's own files are ([`super::plan`]): a read-only mount on its
//! canonical path, which cannot be written, removed or renamed over, and every folder above it
//! in a writable place pinned, so it cannot be swapped by renaming a folder. A binary outside the
//! writable places costs nothing (no mount is needed there).
//!
//! A hard link is another name of the same file: writing through it changes the binary. Cargo
//! keeps one for each binary in `deps/` (`target/release/deps/sc_hook-HASH`); the other names
//! found in the binary's folder and its `deps/` are protected too.

use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The package's binaries, looked for beside sc-sandbox.
pub const BINARIES: &[&str] = &[
    "sc-sandbox",
    "sc-hook",
    "sc-exec",
    "sc-mcp",
    "sc-gate",
    "sc-approve",
    "sc-state",
    "sc-report",
    "sc-inbox",
];

/// What these files are called among the gate's own files.
pub const WHAT: &str = "sandbox binary";

/// The machinery of a run by the sc-sandbox binary `helper` with bubblewrap at `bwrap`: each file
/// that exists (a missing one is not what runs), with the other names of each hard-linked one.
pub fn files(helper: &Path, bwrap: &Path) -> Vec<(PathBuf, String)> {
    files_within(helper, bwrap, None)
}

/// [`files`], for a sandbox whose writable folders are all in `writable` (when given): the other
/// names of a hard-linked file are looked for only in a folder a writable one overlaps, since
/// elsewhere every name is read-only inside already (a cargo target folder's `deps/` holds
/// thousands of entries, read at every start).
pub fn files_within(
    helper: &Path,
    bwrap: &Path,
    writable: Option<&[PathBuf]>,
) -> Vec<(PathBuf, String)> {
    let mut binaries: Vec<PathBuf> = vec![helper.to_owned(), bwrap.to_owned()];
    // The helper's folder, made canonical once: a name in it that is a file, not a link, is
    // then canonical too, without a `readlink` for every part of its path (a fifth of a hook's
    // system calls, for ten binaries).
    let folder = helper
        .parent()
        .and_then(|folder| std::fs::canonicalize(folder).ok());
    if let Some(folder) = &folder {
        binaries.extend(BINARIES.iter().map(|name| folder.join(name)));
    }
    let mut found: Vec<PathBuf> = Vec::new();
    // Hard-linked files (cargo links each binary into `deps/`), by folder: each folder is read
    // once for all of its files, not once a file.
    let mut linked: Vec<(PathBuf, u64, u64)> = Vec::new();
    for binary in binaries {
        let in_folder = folder
            .as_deref()
            .is_some_and(|f| binary.parent() == Some(f));
        let (canonical, meta) = match std::fs::symlink_metadata(&binary) {
            // Not a link: what it names is itself.
            Ok(meta) if in_folder && meta.is_file() => (binary, meta),
            Ok(_) => {
                let Ok(canonical) = std::fs::canonicalize(&binary) else {
                    continue;
                };
                let Ok(meta) = std::fs::metadata(&canonical) else {
                    continue;
                };
                (canonical, meta)
            }
            Err(_) => continue,
        };
        if !meta.is_file() || found.contains(&canonical) {
            continue;
        }
        if meta.nlink() > 1 {
            linked.push((canonical.clone(), meta.dev(), meta.ino()));
        }
        found.push(canonical);
    }
    let mut folders: Vec<&Path> = linked
        .iter()
        .filter_map(|(path, ..)| path.parent())
        .collect();
    folders.sort();
    folders.dedup();
    let overlaps = |folder: &Path| {
        writable.is_none_or(|writable| {
            writable
                .iter()
                .any(|place| folder.starts_with(place) || place.starts_with(folder))
        })
    };
    for folder in folders.into_iter().filter(|folder| overlaps(folder)) {
        let here: Vec<&(PathBuf, u64, u64)> = linked
            .iter()
            .filter(|(path, ..)| path.parent() == Some(folder))
            .collect();
        found.extend(other_names(folder, &here));
    }
    found.sort();
    found.dedup();
    found
        .into_iter()
        .map(|path| (path, WHAT.to_owned()))
        .collect()
}

/// The other names, in `folder` and its `deps/`, of the files `(path, dev, ino)` of `folder`.
fn other_names(folder: &Path, files: &[&(PathBuf, u64, u64)]) -> Vec<PathBuf> {
    let mut names = Vec::new();
    for place in [folder.to_owned(), folder.join("deps")] {
        let Ok(entries) = std::fs::read_dir(&place) else {
            continue;
        };
        for entry in entries.flatten() {
            // The folder's entry gives the inode without a stat; the device is checked on a match.
            let ino = entry.ino();
            for (path, dev, _) in files.iter().filter(|(_, _, i)| *i == ino) {
                let other = entry.path();
                if other != *path
                    && std::fs::symlink_metadata(&other)
                        .is_ok_and(|meta| meta.is_file() && meta.dev() == *dev && meta.ino() == ino)
                {
                    names.push(other);
                }
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binaries_beside_sc_sandbox_and_their_other_names_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("deps")).unwrap();
        for name in ["sc-sandbox", "sc-hook", "unrelated"] {
            std::fs::write(base.join(name), name).unwrap();
        }
        std::fs::hard_link(base.join("sc-hook"), base.join("deps/sc_hook-0123")).unwrap();
        std::fs::write(base.join("bwrap"), "").unwrap();
        let found: Vec<PathBuf> = files(&base.join("sc-sandbox"), &base.join("bwrap"))
            .into_iter()
            .map(|(path, what)| {
                assert_eq!(what, WHAT);
                path
            })
            .collect();
        assert_eq!(
            found,
            vec![
                base.join("bwrap"),
                base.join("deps/sc_hook-0123"),
                base.join("sc-hook"),
                base.join("sc-sandbox"),
            ]
        );
        let names = |writable: &[PathBuf]| -> Vec<PathBuf> {
            files_within(
                &base.join("sc-sandbox"),
                &base.join("bwrap"),
                Some(writable),
            )
            .into_iter()
            .map(|(path, _)| path)
            .collect()
        };
        // A sandbox that writes only elsewhere: the other names are read-only inside already.
        let elsewhere = names(&[PathBuf::from("/nowhere/project")]);
        assert!(
            !elsewhere.contains(&base.join("deps/sc_hook-0123")),
            "{elsewhere:?}"
        );
        assert!(elsewhere.contains(&base.join("sc-hook")));
        // The binaries inside the root, or the root inside their folder: looked for.
        for writable in [
            base.clone(),
            base.parent().unwrap().to_owned(),
            base.join("deps/x"),
        ] {
            let found = names(std::slice::from_ref(&writable));
            assert!(
                found.contains(&base.join("deps/sc_hook-0123")),
                "{writable:?}"
            );
        }
    }
}
