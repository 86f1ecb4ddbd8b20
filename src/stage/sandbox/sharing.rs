//! Sandboxes of one root at once (an agent's parallel tool calls). A run's placeholders (the
//! empty file or folder a missing protected path is blocked on, `.claude`) are on the host, and
//! a second run planned meanwhile binds them read-only as it finds them. Removed by the first
//! run at its end, they took the second's mounts with them (the kernel detaches a mount whose
//! place another namespace removes), and its program could then write `.claude/settings.json`
//! (found by a review). So each run holds a shared lock on its root for as long as it runs, and
//! records the placeholders it makes; the placeholders are removed only by a run that, at its
//! end, finds itself the last (the lock taken exclusively, without waiting), and then all that
//! any run recorded. A run that was killed leaves its record for the next last run. And runs
//! plan and make their placeholders one at a time (a second lock, held from before the plan
//! until the placeholders are made): a plan that saw `.git` missing while another run made it
//! mounted git's views into a folder it had made read-only, and bubblewrap failed.
//!
//! The locks and the record are `sandbox-runs/<SHA-256 of the root>.lock`, `.plan` and
//! `.placeholders` in the state folder of the user's home ([`state_folders`]; folder 0700, files
//! 0600). A run's plan takes every placeholder recorded that it finds as made for a stand-in,
//! read-only inside where it could write, whatever its own policy protects.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::git::COMMONDIR_SELF;
use super::plan::{Made, Placeholder};
use super::SandboxError;

/// The folder of the locks and records, inside the state folder.
pub const FOLDER: &str = "sandbox-runs";

/// Where runs look for the root's lock, in order: the state folder of the user's home in the
/// password database, then the environment's (`XDG_STATE_HOME`, else `HOME`). The first is the
/// same for every run of the user, whatever environment it was given: a door's trial run and
/// sc-exec's commands clear it, and an agent may set another `HOME`. Runs that held different
/// locks did not see each other, and the first to end took the other's placeholders (and so
/// its mounts) away. The second serves a user whose home cannot hold it (a system account
/// whose home is not its own).
pub fn state_folders() -> Vec<PathBuf> {
    let passwd = crate::cli::passwd_home()
        .filter(|home| home.is_dir())
        .map(|home| home.join(".local/state").join(crate::cli::STATE_FOLDER));
    let mut folders: Vec<PathBuf> = passwd.into_iter().collect();
    if let Ok(state) = crate::cli::default_state_folder() {
        if !folders.contains(&state) {
            folders.push(state);
        }
    }
    folders
}

/// A run's shared hold on its root, and while it plans, the root's planning to itself.
#[derive(Debug)]
pub struct RootLock {
    lock: File,
    planning: Option<File>,
    record: PathBuf,
}

impl RootLock {
    /// Waits for no run of `root` (canonical) to be removing placeholders, and holds the root
    /// shared until [`RootLock::last_out`]. Keyed by the root as given, which nothing inside a
    /// run can change: a key from the repository around it (tried) followed a `HEAD` file that a
    /// confined program could write or move, and split one root's runs across two locks (found
    /// by a review).
    pub fn shared(state: &Path, root: &Path) -> Result<RootLock, SandboxError> {
        let folder = super::remembered::state_folder(state, FOLDER)?;
        let failed = |what: &str| SandboxError::io(format!("{what} {}", folder.display()));
        let name = super::remembered::root_name(root);
        let open = |extension: &str| {
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(folder.join(format!("{name}.{extension}")))
                .map_err(failed("opening the root's lock in"))
        };
        let lock = open("lock")?;
        lock.lock_shared().map_err(failed("locking the root in"))?;
        let planning = open("plan")?;
        planning
            .lock()
            .map_err(failed("locking the root's plan in"))?;
        Ok(RootLock {
            lock,
            planning: Some(planning),
            record: folder.join(format!("{name}.placeholders")),
        })
    }

    /// The run's placeholders are made: another run of the root may plan.
    pub fn planned(&mut self) {
        if let Some(planning) = self.planning.take() {
            let _ = planning.unlock();
        }
    }

    /// The placeholders other runs of the root recorded and the last run has not removed yet:
    /// read while this run plans, for the stand-ins they are. None when nothing was recorded.
    pub fn recorded(&self) -> Result<Vec<Placeholder>, SandboxError> {
        match fs::read(&self.record) {
            Ok(bytes) => Ok(parse(&bytes)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(err) => Err(SandboxError::io(format!(
                "reading the placeholders recorded in {}",
                self.record.display()
            ))(err)),
        }
    }

    /// Records placeholders this run made, for whichever run is the last.
    pub fn record(&self, made: &[Placeholder]) -> Result<(), SandboxError> {
        if made.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        for placeholder in made {
            bytes.push(kind(placeholder));
            if let Some(made) = placeholder.made {
                let born = made.born.map(|born| born.to_string()).unwrap_or_default();
                bytes.extend_from_slice(format!("{}:{}:{born}", made.dev, made.ino).as_bytes());
            }
            bytes.extend_from_slice(placeholder.path.as_os_str().as_bytes());
            bytes.push(0);
        }
        let failed = SandboxError::io(format!(
            "recording placeholders in {}",
            self.record.display()
        ));
        // One write of the whole record, appended: runs that record at once never interleave.
        OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.record)
            .and_then(|mut file| file.write_all(&bytes))
            .map_err(failed)
    }

    /// Ends this run's hold: when no other run of the root holds it, the placeholders every run
    /// recorded (this one's among them) are given to `remove`, and the record emptied.
    pub fn last_out(mut self, remove: impl Fn(&Placeholder)) {
        self.planned();
        let _ = self.lock.unlock();
        if self.lock.try_lock().is_err() {
            // Another run holds the root: the last of them removes the placeholders.
            return;
        }
        if let Ok(bytes) = fs::read(&self.record) {
            // Deepest first: a folder placeholder may hold another run's.
            let mut placeholders = parse(&bytes);
            placeholders.reverse();
            placeholders.sort_by_key(|placeholder| {
                std::cmp::Reverse(placeholder.path.components().count())
            });
            for placeholder in &placeholders {
                remove(placeholder);
            }
            let _ = fs::write(&self.record, b"");
        }
        let _ = self.lock.unlock();
    }
}

fn kind(placeholder: &Placeholder) -> u8 {
    match (placeholder.dir, placeholder.contents) {
        (true, _) => b'd',
        (false, contents) if contents == COMMONDIR_SELF => b'c',
        _ => b'f',
    }
}

/// The placeholders of a record (a kind byte, which file it is as `dev:ino:born`, the path, a
/// NUL each); anything else is skipped. A record without `dev:ino:born`, as written before
/// placeholders were told apart from a user's own files, is taken by its path alone.
fn parse(bytes: &[u8]) -> Vec<Placeholder> {
    bytes
        .split(|byte| *byte == 0)
        .filter_map(|record| {
            let (&kind, rest) = record.split_first()?;
            let slash = rest.iter().position(|byte| *byte == b'/')?;
            let (made, path) = rest.split_at(slash);
            let made = match made {
                [] => None,
                made => Some(parse_made(made)?),
            };
            let path = PathBuf::from(std::ffi::OsString::from_vec(path.to_vec()));
            let (dir, contents): (bool, &'static [u8]) = match kind {
                b'd' => (true, b""),
                b'c' => (false, COMMONDIR_SELF),
                b'f' => (false, b""),
                _ => return None,
            };
            Some(Placeholder {
                path,
                dir,
                contents,
                made,
            })
        })
        .collect()
}

/// `dev:ino:born`, the birth time empty where the file system keeps none.
fn parse_made(text: &[u8]) -> Option<Made> {
    let text = std::str::from_utf8(text).ok()?;
    let mut parts = text.split(':');
    let (dev, ino, born) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    Some(Made {
        dev: dev.parse().ok()?,
        ino: ino.parse().ok()?,
        born: match born {
            "" => None,
            born => Some(born.parse().ok()?),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_that_cannot_be_read_refuses_the_plan_and_none_is_no_placeholder() {
        let dir = tempfile::tempdir().unwrap();
        let (state, root) = (dir.path().join("state"), Path::new("/work/p"));
        let lock = RootLock::shared(&state, root).unwrap();
        assert!(lock.recorded().unwrap().is_empty(), "nothing recorded yet");
        // Something not a file where the record goes: the run is refused, not planned blind.
        std::fs::create_dir(&lock.record).unwrap();
        assert!(lock.recorded().is_err());
    }

    #[test]
    fn only_the_last_run_out_removes_what_every_run_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let (state, root) = (dir.path().join("state"), Path::new("/work/p"));
        let placeholder = |name: &str, dir: bool, contents: &'static [u8]| Placeholder {
            path: PathBuf::from("/work/p").join(name),
            dir,
            contents,
            made: None,
        };
        let mut first = RootLock::shared(&state, root).unwrap();
        first.planned();
        let mut second = RootLock::shared(&state, root).unwrap();
        second.planned();
        first
            .record(&[
                placeholder(".claude", false, b""),
                placeholder(".git/info", true, b""),
            ])
            .unwrap();
        second
            .record(&[placeholder(".git/commondir", false, COMMONDIR_SELF)])
            .unwrap();
        let removed = std::cell::RefCell::new(Vec::new());
        let remove = |p: &Placeholder| {
            removed
                .borrow_mut()
                .push((p.path.clone(), p.dir, p.contents))
        };
        // The first out is not the last: nothing is removed.
        first.last_out(remove);
        assert!(removed.borrow().is_empty());
        // The last removes all three, the last recorded first, and empties the record.
        second.last_out(remove);
        assert_eq!(
            *removed.borrow(),
            vec![
                (
                    PathBuf::from("/work/p/.git/commondir"),
                    false,
                    COMMONDIR_SELF
                ),
                (PathBuf::from("/work/p/.git/info"), true, &b""[..]),
                (PathBuf::from("/work/p/.claude"), false, &b""[..]),
            ]
        );
        removed.borrow_mut().clear();
        RootLock::shared(&state, root).unwrap().last_out(remove);
        assert!(removed.borrow().is_empty());
    }

    #[test]
    fn a_record_says_which_file_each_placeholder_is_and_older_records_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let (state, root) = (dir.path().join("state"), Path::new("/work/p"));
        let mut lock = RootLock::shared(&state, root).unwrap();
        lock.planned();
        let made = |born| Made {
            dev: 2049,
            ino: 77,
            born,
        };
        let placeholders = [
            Placeholder {
                path: PathBuf::from("/work/p/.mcp.json"),
                dir: false,
                contents: b"",
                made: Some(made(Some(1_796_290_840_068_176_123))),
            },
            Placeholder {
                path: PathBuf::from("/work/p/.git/info"),
                dir: true,
                contents: b"",
                made: Some(made(None)),
            },
        ];
        lock.record(&placeholders).unwrap();
        assert_eq!(lock.recorded().unwrap(), placeholders);
        // A record written before placeholders said which file they are: by its path alone.
        // One whose file is not `dev:ino:born` is skipped.
        let old = parse(b"f/work/p/.claude\0f1:2/work/p/x\0f1:x:/work/p/y\0");
        assert_eq!(
            old,
            [Placeholder {
                path: PathBuf::from("/work/p/.claude"),
                dir: false,
                contents: b"",
                made: None,
            }]
        );
    }

    #[test]
    fn a_record_that_cannot_be_written_fails_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let (state, root) = (dir.path().join("state"), Path::new("/work/p"));
        let mut lock = RootLock::shared(&state, root).unwrap();
        lock.planned();
        // A folder where the record should be: the run is refused, never left unrecorded.
        fs::create_dir(&lock.record).unwrap();
        let placeholder = Placeholder {
            path: PathBuf::from("/work/p/.claude"),
            dir: false,
            contents: b"",
            made: None,
        };
        assert!(lock.record(&[placeholder]).is_err());
        // A state folder that cannot be made: no lock, and the caller refuses the run.
        std::fs::write(dir.path().join("file"), "").unwrap();
        assert!(RootLock::shared(&dir.path().join("file"), root).is_err());
    }
}
