//! What one run leaves on the host, and takes away again: sc-sandbox's private folder (the
//! proxy's socket, the helper's mount point, the empty file and folder mounted as blocks and
//! hidden files), and the placeholders a protected path's first missing component is blocked on.

use std::fs::{DirBuilder, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::bwrap::RunFiles;
use super::git::{git_info_source, GitView};
use super::plan::{Made, Placeholder};
use super::sharing::RunRecord;
use super::SandboxError;

/// sc-sandbox's private folder of one run (mode 700, in a memory file system when there is one:
/// [`run_folder_base`]), removed with everything in it when dropped.
#[derive(Debug)]
pub struct RunFolder {
    pub files: RunFiles,
    pub socket: PathBuf,
}

impl RunFolder {
    pub fn create() -> Result<RunFolder, SandboxError> {
        let base = run_folder_base();
        let mut attempt = 0;
        let folder = loop {
            let mut random = [0u8; 8];
            getrandom::fill(&mut random)
                .map_err(|err| SandboxError::Start(format!("no randomness: {err}")))?;
            let name: String = crate::hex::encode(random);
            let folder = base.join(format!("sc-sandbox-{name}"));
            match DirBuilder::new().mode(0o700).create(&folder) {
                Ok(()) => break folder,
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempt < 8 => {
                    attempt += 1
                }
                Err(err) => {
                    return Err(SandboxError::io(format!(
                        "creating sc-sandbox's folder in {}",
                        base.display()
                    ))(err))
                }
            }
        };
        let run = RunFolder {
            files: RunFiles {
                empty_file: folder.join("empty"),
                empty_dir: folder.join("empty.d"),
                folder: folder.clone(),
            },
            socket: folder.join("proxy.sock"),
        };
        let io = |what: &str| SandboxError::io(format!("{what} in {}", folder.display()));
        // `init` is where the helper (this binary) is mounted inside.
        for file in [&folder.join("init"), &run.files.empty_file] {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o444)
                .open(file)
                .map_err(io("creating a mount point"))?;
        }
        DirBuilder::new()
            .mode(0o555)
            .create(&run.files.empty_dir)
            .map_err(io("creating the empty folder"))?;
        Ok(run)
    }
}

/// The largest file of a repository's `info` folder a git view copies (`exclude`,
/// `attributes` and `sparse-checkout` are lines of patterns; `refs` lists a repository's refs).
pub const MAX_GIT_INFO_FILE: u64 = 16 * 1024 * 1024;

impl RunFolder {
    /// Writes each git view's `info` folder ([`git_info_source`]): a copy of the host's regular
    /// files there, then the view's lines appended to `exclude` and `attributes` (made when the
    /// host has none). Files and folder are read-only.
    pub fn write_git_views(&self, views: &[GitView]) -> Result<(), SandboxError> {
        use std::io::Write;
        for (index, view) in views.iter().enumerate() {
            let target = git_info_source(&self.files.folder, index);
            let io = |what: &str| SandboxError::io(format!("{what} {}", target.display()));
            DirBuilder::new()
                .mode(0o700)
                .create(&target)
                .map_err(io("making git's view"))?;
            if let Ok(entries) = std::fs::read_dir(&view.info) {
                for entry in entries.flatten() {
                    if !entry.file_type().is_ok_and(|kind| kind.is_file()) {
                        continue;
                    }
                    let from = super::walk::open_regular(&entry.path()).map_err(
                        SandboxError::io(format!("reading {}", entry.path().display())),
                    )?;
                    // Copied into memory for the run: a planted 10 GB `info/big` (a folder
                    // made to look like a repository) filled it (a review). Over the bound,
                    // the run is refused.
                    let size = from.metadata().map(|meta| meta.len()).unwrap_or(u64::MAX);
                    if size > MAX_GIT_INFO_FILE {
                        return Err(SandboxError::Place {
                            what: "git's info folder".into(),
                            path: entry.path(),
                            why: format!(
                                "a file of {size} bytes, over the {MAX_GIT_INFO_FILE} a view copies"
                            ),
                        });
                    }
                    let mut to = OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(target.join(entry.file_name()))
                        .map_err(io("copying git's info into"))?;
                    std::io::copy(&mut std::io::Read::take(from, MAX_GIT_INFO_FILE), &mut to)
                        .map_err(io("copying git's info into"))?;
                }
            }
            for (name, lines) in [("exclude", &view.exclude), ("attributes", &view.attributes)] {
                let path = target.join(name);
                let mut file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .mode(0o600)
                    .open(&path)
                    .map_err(io("writing git's view in"))?;
                // A host file without a final line end would join its last line to ours.
                let ends_open = last_byte(&path)
                    .map_err(io("reading git's view in"))?
                    .is_some_and(|last| last != b'\n');
                if ends_open {
                    file.write_all(b"\n").map_err(io("writing git's view in"))?;
                }
                file.write_all(lines).map_err(io("writing git's view in"))?;
            }
            for entry in std::fs::read_dir(&target).map_err(io("reading"))?.flatten() {
                std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o444))
                    .map_err(io("making git's view read-only in"))?;
            }
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o555))
                .map_err(io("making git's view read-only:"))?;
        }
        Ok(())
    }
}

/// The last byte of a file, if it has one.
fn last_byte(path: &Path) -> std::io::Result<Option<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut byte = [0u8];
    file.read_exact(&mut byte)?;
    Ok(Some(byte[0]))
}

/// Where run folders go: `$XDG_RUNTIME_DIR`, else `/dev/shm`, else the temporary folder. The
/// first two are memory file systems where they exist: creating and removing a folder there for
/// each run costs microseconds, where a disk's journal can take milliseconds.
pub fn run_folder_base() -> PathBuf {
    let usable = |path: &Path| {
        path.is_absolute()
            && path.is_dir()
            && nix::unistd::access(
                path,
                nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
            )
            .is_ok()
    };
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("/dev/shm")])
        .find(|path| usable(path))
        .unwrap_or_else(std::env::temp_dir)
}

impl Drop for RunFolder {
    fn drop(&mut self) {
        // The empty folder and git's views are read-only; make them removable first.
        let _ = std::fs::set_permissions(
            &self.files.empty_dir,
            std::fs::Permissions::from_mode(0o700),
        );
        for index in 0.. {
            let view = git_info_source(&self.files.folder, index);
            if std::fs::set_permissions(&view, std::fs::Permissions::from_mode(0o700)).is_err() {
                break;
            }
        }
        let _ = std::fs::remove_dir_all(&self.files.folder);
    }
}

/// The placeholders of one run, created on the host before it and removed after it when they are
/// still empty (a file of zero bytes, a folder with nothing in it). With the run's record
/// ([`RunRecord`]), only while no running run recorded them ([`super::sharing`]).
#[derive(Debug, Default)]
pub struct Placeholders {
    made: Vec<Placeholder>,
    lock: Option<RunRecord>,
}

impl Placeholders {
    /// Makes the `wanted` placeholders, after recording those of other runs the run
    /// `stands_on`; one another run made already, as it is made, serves this run too.
    pub fn create(
        wanted: &[Placeholder],
        stands_on: &[Placeholder],
        lock: Option<RunRecord>,
    ) -> Result<Placeholders, SandboxError> {
        let mut made = Placeholders {
            made: Vec::new(),
            lock,
        };
        if let Some(lock) = &made.lock {
            lock.record(stands_on)?;
        }
        for placeholder in wanted {
            // Made by another run since this one's plan: it serves. A folder may
            // hold that run's deeper placeholders; a real one made meanwhile is blocked all
            // the same (the empty read-only folder is mounted over it).
            let made_by_another = if placeholder.dir {
                std::fs::symlink_metadata(&placeholder.path).is_ok_and(|meta| meta.is_dir())
            } else {
                placeholder.is_as_made()
            };
            if made.lock.is_some() && made_by_another {
                continue;
            }
            let path = &placeholder.path;
            let created = if placeholder.dir {
                DirBuilder::new().create(path).and_then(|()| {
                    std::fs::File::options()
                        .read(true)
                        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
                        .open(path)?
                        .metadata()
                })
            } else {
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(path)
                    .and_then(|mut file| {
                        use std::io::Write;
                        file.write_all(placeholder.contents)?;
                        file.metadata()
                    })
            };
            let meta = created.map_err(SandboxError::io(format!(
                "blocking the protected path {}",
                path.display()
            )))?;
            let placeholder = Placeholder {
                made: Some(Made::of(&meta)),
                ..placeholder.clone()
            };
            made.made.push(placeholder.clone());
            if let Some(lock) = &made.lock {
                // Recorded as soon as made: a run killed after this leaves it to the last run.
                lock.record(std::slice::from_ref(&placeholder))?;
            }
        }
        if let Some(lock) = &mut made.lock {
            lock.planned();
        }
        Ok(made)
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        match self.lock.take() {
            Some(lock) => lock.last_out(remove_if_unchanged),
            None => {
                for placeholder in self.made.iter().rev() {
                    remove_if_unchanged(placeholder);
                }
            }
        }
    }
}

/// Removes a placeholder that is as it was made ([`Placeholder::is_as_made`]), reached without following a
/// link. Its path is canonical (planned from the canonical root), so a link on the way now was
/// put there since (a confined `mv .git x && ln -s /elsewhere .git`), and what it leads to is not
/// this run's to remove: the placeholder is left where it is.
fn remove_if_unchanged(placeholder: &Placeholder) {
    let _ = remove_unchanged_at(placeholder);
}

fn remove_unchanged_at(placeholder: &Placeholder) -> std::io::Result<()> {
    use std::io::Read;
    use std::os::fd::OwnedFd;
    use std::path::Component;

    use nix::fcntl::{open, openat, OFlag};
    use nix::sys::stat::Mode;
    use nix::unistd::{unlinkat, UnlinkatFlags};

    let (Some(parent), Some(name)) = (placeholder.path.parent(), placeholder.path.file_name())
    else {
        return Ok(());
    };
    let walk = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut folder: OwnedFd = open("/", walk, Mode::empty())?;
    for component in parent.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(part) => folder = openat(&folder, part, walk, Mode::empty())?,
            // Not a canonical path: nothing of it is removed.
            _ => return Ok(()),
        }
    }
    if placeholder.dir {
        // Removed only while empty, which rmdir itself holds to.
        let opened = openat(
            &folder,
            name,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let meta = std::fs::File::from(opened).metadata()?;
        if placeholder.made.is_some_and(|made| !made.is(&meta)) {
            return Ok(());
        }
        unlinkat(&folder, name, UnlinkatFlags::RemoveDir)?;
        return Ok(());
    }
    // Without waiting on a pipe put in its place.
    let opened = openat(
        &folder,
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let mut file = std::fs::File::from(opened);
    let meta = file.metadata()?;
    let size = placeholder.contents.len();
    if !meta.is_file()
        || meta.len() != size as u64
        || placeholder.made.is_some_and(|made| !made.is(&meta))
    {
        return Ok(());
    }
    let mut held = Vec::with_capacity(size + 1);
    (&mut file).take(size as u64 + 1).read_to_end(&mut held)?;
    if held == placeholder.contents {
        unlinkat(&folder, name, UnlinkatFlags::NoRemoveDir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_folder_and_placeholders_go_away() {
        let run = RunFolder::create().unwrap();
        let folder = run.files.folder.clone();
        assert!(run.files.empty_dir.is_dir() && run.files.empty_file.is_file());
        drop(run);
        assert!(!folder.exists());
        let dir = tempfile::tempdir().unwrap();
        let wanted = [
            Placeholder {
                path: dir.path().join("a"),
                dir: true,
                contents: b"",
                made: None,
            },
            Placeholder {
                path: dir.path().join("b"),
                dir: false,
                contents: b"",
                made: None,
            },
            Placeholder {
                path: dir.path().join("c"),
                dir: false,
                contents: b"",
                made: None,
            },
            Placeholder {
                path: dir.path().join("d"),
                dir: false,
                contents: b".\n",
                made: None,
            },
        ];
        let made = Placeholders::create(&wanted, &[], None).unwrap();
        assert_eq!(std::fs::read(dir.path().join("d")).unwrap(), b".\n");
        std::fs::write(dir.path().join("c"), "written outside meanwhile").unwrap();
        drop(made);
        assert!(!dir.path().join("a").exists() && !dir.path().join("b").exists());
        assert!(!dir.path().join("d").exists());
        assert!(
            dir.path().join("c").exists(),
            "a placeholder that is not empty stays"
        );
    }

    #[test]
    fn a_git_view_refuses_an_info_file_too_large_to_copy() {
        let dir = tempfile::tempdir().unwrap();
        let info = dir.path().join("info");
        std::fs::create_dir(&info).unwrap();
        std::fs::write(info.join("exclude"), "*.o\n").unwrap();
        let view = GitView {
            info: info.clone(),
            exclude: b"/.env\n".to_vec(),
            attributes: Vec::new(),
        };
        let run = RunFolder::create().unwrap();
        run.write_git_views(std::slice::from_ref(&view)).unwrap();
        let copied = git_info_source(&run.files.folder, 0).join("exclude");
        assert_eq!(std::fs::read(copied).unwrap(), b"*.o\n/.env\n");
        // A sparse file over the bound (planted in a folder made to look like a repository):
        // the run is refused, nothing is copied into memory.
        let big = std::fs::File::create(info.join("big")).unwrap();
        big.set_len(MAX_GIT_INFO_FILE + 1).unwrap();
        let run = RunFolder::create().unwrap();
        let err = run.write_git_views(&[view]).unwrap_err();
        assert!(err.to_string().contains("over the"), "{err}");
    }

    #[test]
    fn another_file_or_folder_put_in_a_placeholder_s_place_is_not_it() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let wanted = [
            Placeholder {
                path: base.join("folder"),
                dir: true,
                contents: b"",
                made: None,
            },
            Placeholder {
                path: base.join("file"),
                dir: false,
                contents: b"",
                made: None,
            },
        ];
        let made = Placeholders::create(&wanted, &[], None).unwrap();
        let recorded: Vec<Placeholder> = made.made.clone();
        assert!(recorded
            .iter()
            .all(|placeholder| placeholder.made.is_some() && placeholder.is_as_made()));
        // Someone moves each away and puts an empty one of their own there: as empty as the
        // placeholder was, and not it (moved rather than removed, so that the inode number is
        // not reused: where it is, the birth time tells them apart).
        std::fs::rename(base.join("folder"), base.join("folder-away")).unwrap();
        std::fs::rename(base.join("file"), base.join("file-away")).unwrap();
        std::fs::create_dir(base.join("folder")).unwrap();
        std::fs::File::create(base.join("file")).unwrap();
        assert!(recorded.iter().all(|placeholder| !placeholder.is_as_made()));
        drop(made);
        assert!(base.join("folder").is_dir() && base.join("file").is_file());
        // A placeholder recorded before it said which file it is goes by its path alone.
        for placeholder in &wanted {
            remove_if_unchanged(placeholder);
            assert!(!placeholder.path.exists(), "{}", placeholder.path.display());
        }
    }

    #[test]
    fn a_link_put_on_the_way_to_a_placeholder_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let (project, elsewhere) = (base.join("project"), base.join("elsewhere"));
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(elsewhere.join("hooks")).unwrap();
        std::fs::write(elsewhere.join("config"), b"").unwrap();
        let wanted = [
            Placeholder {
                path: project.join(".git/hooks"),
                dir: true,
                contents: b"",
                made: None,
            },
            Placeholder {
                path: project.join(".git/config"),
                dir: false,
                contents: b"",
                made: None,
            },
        ];
        let made = Placeholders::create(&wanted, &[], None).unwrap();
        // What a confined program could do while the run lasts: its `.git` moved away, a link
        // to another folder with the same empty names put in its place.
        std::fs::rename(project.join(".git"), project.join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, project.join(".git")).unwrap();
        drop(made);
        assert!(elsewhere.join("hooks").is_dir(), "removed through a link");
        assert!(elsewhere.join("config").is_file(), "removed through a link");
        // Back in place, they are removed as made.
        std::fs::remove_file(project.join(".git")).unwrap();
        std::fs::rename(project.join("moved"), project.join(".git")).unwrap();
        let made = Placeholders::create(&[], &[], None).unwrap();
        drop(made);
        for placeholder in &wanted {
            remove_if_unchanged(placeholder);
            assert!(!placeholder.path.exists(), "{}", placeholder.path.display());
        }
        // A pipe in a file placeholder's place is not waited on, nor removed.
        let pipe = project.join(".git/config");
        nix::unistd::mkfifo(&pipe, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        remove_if_unchanged(&wanted[1]);
        assert!(std::fs::symlink_metadata(&pipe).is_ok());
    }
}
