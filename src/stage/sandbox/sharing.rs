//! Sandboxes at once (an agent's parallel tool calls; runs of nested roots; runs sharing a
//! writable folder). A run's placeholders (the empty file or folder a missing protected path is
//! blocked on, `.claude`) are on the host, and another run planned meanwhile binds them
//! read-only as it finds them. Removed by the first run at its end, they took the second's
//! mounts with them (the kernel detaches a mount whose place another namespace removes), and its
//! program could then write `.claude/settings.json` (found by a review).
//!
//! So every run keeps a record of the placeholders it made and of the other runs' it stands on
//! (found as made where it plans), locked for as long as it runs. At its end, a run removes
//! what it recorded, and what runs that ended without removing theirs (killed) recorded, but
//! for any placeholder a running run recorded; then it deletes those records. Runs plan, make
//! their placeholders and remove them one at a time (one lock, held by sc-sandbox itself for
//! milliseconds, never by a confined program): a plan that saw `.git` missing while another
//! run made it mounted git's views into a folder it had made read-only, and bubblewrap failed.
//! One lock and one set of records serve every root: runs rooted one inside another held
//! different locks when they were per root, and either could commit or remove the other's
//! placeholders (found by a review).
//!
//! The lock and the records are `sandbox-runs/plan.lock` and `sandbox-runs/run-<random>.uses`
//! in the state folder of the user's home ([`state_folders`]; folder 0700, files 0600), hidden
//! inside every sandbox. A run's plan takes every placeholder recorded that it finds as made,
//! in its root, its repository or a folder it may write, for a stand-in, read-only inside
//! where it could write, whatever its own policy protects.

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
/// its mounts) away. The second serves only a user whose home in the password database is not
/// their own (a system account's `/` or `/nonexistent`): a user's own home that fails to hold
/// the records refuses the run, since a confined program with a writable `~` could make it
/// fail on purpose and split the runs (a review).
pub fn state_folders() -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let home = crate::cli::passwd_home().filter(|home| home.is_dir());
    let own_home = home.as_ref().is_some_and(|home| {
        std::fs::metadata(home).is_ok_and(|meta| meta.uid() == nix::unistd::geteuid().as_raw())
    });
    candidates(
        home.as_deref(),
        own_home,
        crate::cli::default_state_folder().ok(),
    )
}

/// [`state_folders`] given the home in the password database (a folder), whether it is the
/// user's own, and the environment's state folder.
fn candidates(home: Option<&Path>, own_home: bool, environment: Option<PathBuf>) -> Vec<PathBuf> {
    let passwd = home.map(|home| home.join(".local/state").join(crate::cli::STATE_FOLDER));
    let mut folders: Vec<PathBuf> = passwd.into_iter().collect();
    if own_home {
        return folders;
    }
    if let Some(state) = environment {
        if !folders.contains(&state) {
            folders.push(state);
        }
    }
    folders
}

/// The records' folder of the state folder `state`, made (0700) if missing.
pub fn folder(state: &Path) -> Result<PathBuf, SandboxError> {
    super::remembered::state_folder(state, FOLDER)
}

/// A run among the others of the user, of any root: its record of the placeholders it made or
/// stands on, locked for as long as it runs, and while it plans, the planning of every run.
#[derive(Debug)]
pub struct RunRecord {
    folder: PathBuf,
    planning: Option<File>,
    own: File,
    path: PathBuf,
}

/// What a run's record is called: `run-<128 random bits>.uses`.
const RECORD_PREFIX: &str = "run-";
const RECORD_SUFFIX: &str = ".uses";
/// A record of the per-root scheme before (`<SHA-256 of the root>.placeholders`): read as a
/// record whose run has ended.
const OLD_RECORD_SUFFIX: &str = ".placeholders";

impl RunRecord {
    /// Waits for no run to be planning or removing placeholders, and starts this run's record,
    /// locked until [`RunRecord::last_out`]. One lock for every root: runs rooted one inside
    /// another (a repository and its `sub/`), or sharing a writable folder (`~`), make
    /// placeholders the other must see (a review found nested roots holding different locks).
    /// Nothing a confined program can change names it: a key from the repository around the
    /// root (tried) followed a `HEAD` file that one could write or move.
    pub fn join(state: &Path) -> Result<RunRecord, SandboxError> {
        let folder = self::folder(state)?;
        let failed = |what: &str| SandboxError::io(format!("{what} {}", folder.display()));
        let planning = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(folder.join("plan.lock"))
            .map_err(failed("opening the runs' lock in"))?;
        lock_within(&planning, PLAN_WAIT).map_err(failed("locking the runs' plan in"))?;
        let mut name = [0u8; 16];
        getrandom::fill(&mut name)
            .map_err(|err| SandboxError::Start(format!("no randomness: {err}")))?;
        let path = folder.join(format!(
            "{RECORD_PREFIX}{}{RECORD_SUFFIX}",
            crate::hex::encode(name)
        ));
        let own = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(failed("starting the run's record in"))?;
        own.try_lock().map_err(|_| {
            SandboxError::io(format!("locking {}", path.display()))(std::io::Error::from(
                std::io::ErrorKind::WouldBlock,
            ))
        })?;
        Ok(RunRecord {
            folder,
            planning: Some(planning),
            own,
            path,
        })
    }

    /// The placeholders are made and recorded: another run may plan.
    pub fn planned(&mut self) {
        if let Some(planning) = self.planning.take() {
            let _ = planning.unlock();
        }
    }

    /// The placeholders every other run recorded, running or ended (a killed run's stay until a
    /// run removes them): read while this run plans, for the stand-ins they are.
    pub fn recorded(&self) -> Result<Vec<Placeholder>, SandboxError> {
        let mut found = Vec::new();
        for path in self.records()? {
            found.extend(read_record(&path)?);
        }
        Ok(found)
    }

    /// The other runs' records in the folder, running or ended.
    fn records(&self) -> Result<Vec<PathBuf>, SandboxError> {
        let failed = || SandboxError::io(format!("reading {}", self.folder.display()));
        let mut records = Vec::new();
        for entry in fs::read_dir(&self.folder).map_err(failed())? {
            let entry = entry.map_err(failed())?;
            let name = entry.file_name();
            let name = name.as_bytes();
            let path = entry.path();
            if path == self.path {
                continue;
            }
            let current = name.starts_with(RECORD_PREFIX.as_bytes())
                && name.ends_with(RECORD_SUFFIX.as_bytes());
            if current || name.ends_with(OLD_RECORD_SUFFIX.as_bytes()) {
                records.push(path);
            }
        }
        Ok(records)
    }

    /// Records placeholders this run made, or stands on (another run's, found as made): no run
    /// removes them while this one runs.
    pub fn record(&self, placeholders: &[Placeholder]) -> Result<(), SandboxError> {
        if placeholders.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        for placeholder in placeholders {
            bytes.push(kind(placeholder));
            if let Some(made) = placeholder.made {
                let born = made.born.map(|born| born.to_string()).unwrap_or_default();
                bytes.extend_from_slice(format!("{}:{}:{born}", made.dev, made.ino).as_bytes());
            }
            bytes.extend_from_slice(placeholder.path.as_os_str().as_bytes());
            bytes.push(0);
        }
        // One write of the whole record, appended.
        (&self.own)
            .write_all(&bytes)
            .map_err(SandboxError::io(format!(
                "recording placeholders in {}",
                self.path.display()
            )))
    }

    /// Ends this run: with every run's planning held, the placeholders this run recorded, and
    /// those of runs that ended without removing theirs (killed), are given to `remove`, but
    /// for those a running run recorded; the ended records are deleted.
    pub fn last_out(mut self, remove: impl Fn(&Placeholder)) {
        if self.planning.is_none() {
            let planning = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(self.folder.join("plan.lock"));
            match planning {
                Ok(file) if lock_within(&file, PLAN_WAIT).is_ok() => self.planning = Some(file),
                // Without the lock, removing could take a planning run's placeholders: they
                // stay for a later run.
                _ => return,
            }
        }
        let Ok(records) = self.records() else {
            return;
        };
        let mut running: Vec<PathBuf> = Vec::new();
        let mut candidates = read_record(&self.path).unwrap_or_default();
        let mut ended = vec![self.path.clone()];
        for path in records {
            // Opened once: read, and its lock tried, through the same handle.
            let Ok(file) = super::walk::open_regular(&path) else {
                continue;
            };
            let Ok(recorded) = read_opened(&file) else {
                continue;
            };
            if file.try_lock().is_err() {
                running.extend(recorded.into_iter().map(|placeholder| placeholder.path));
            } else {
                candidates.extend(recorded);
                ended.push(path);
            }
        }
        // Deepest first: a folder placeholder may hold another run's.
        candidates.reverse();
        candidates.sort_by(|a, b| {
            let depth = |p: &Placeholder| std::cmp::Reverse(p.path.components().count());
            depth(a).cmp(&depth(b)).then_with(|| a.path.cmp(&b.path))
        });
        candidates.dedup();
        for placeholder in &candidates {
            if !running.contains(&placeholder.path) {
                remove(placeholder);
            }
        }
        for path in ended {
            let _ = fs::remove_file(path);
        }
        remove_old_locks(&self.folder);
        self.planned();
    }
}

/// The longest a run waits for another's planning: planning takes milliseconds, so a run that
/// holds it longer is stuck (a file system that does not answer), and the run waiting is
/// refused, not hung with it (and, at its end, leaves its placeholders for a later run).
const PLAN_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Takes `file`'s lock, giving up after `wait`. The wait is a thread's, on a second handle of
/// the same open file (whose lock it is): it wakes as the lock is let go. Given up, the thread
/// lets the lock go as soon as it gets it, closing the last handle.
fn lock_within(file: &File, wait: std::time::Duration) -> std::io::Result<()> {
    match file.try_lock() {
        Ok(()) => return Ok(()),
        Err(fs::TryLockError::Error(err)) => return Err(err),
        Err(fs::TryLockError::WouldBlock) => {}
    }
    let waiting = file.try_clone()?;
    let (locked, outcome) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("runs-lock".into())
        .spawn(move || {
            let _ = locked.send(waiting.lock());
        })?;
    match outcome.recv_timeout(wait) {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("another run has planned for over {} s", wait.as_secs()),
        )),
    }
}

/// Removes the per-root locks of the scheme before (`<SHA-256 of the root>.lock` and `.plan`):
/// nothing takes them any more, and a folder of thousands slowed every run's look at the
/// records (a review counted 19,600).
fn remove_old_locks(folder: &Path) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.as_bytes();
        let Some(stem) = name
            .strip_suffix(b".lock")
            .or_else(|| name.strip_suffix(b".plan"))
        else {
            continue;
        };
        if stem.len() == 64 && stem.iter().all(|byte| crate::hex::DIGITS.contains(byte)) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The placeholders a record holds; none when it is gone (removed by a run that ended meanwhile).
fn read_record(path: &Path) -> Result<Vec<Placeholder>, SandboxError> {
    match super::walk::open_regular(path).and_then(|file| read_opened(&file)) {
        Ok(placeholders) => Ok(placeholders),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(SandboxError::io(format!(
            "reading the placeholders recorded in {}",
            path.display()
        ))(err)),
    }
}

/// The placeholders of a record opened already (by [`super::walk::open_regular`]: no pipe put
/// in a record's place is waited on).
fn read_opened(mut file: &File) -> std::io::Result<Vec<Placeholder>> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes)?;
    Ok(parse(&bytes))
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

    fn placeholder(name: &str, dir: bool, contents: &'static [u8]) -> Placeholder {
        Placeholder {
            path: PathBuf::from("/work/p").join(name),
            dir,
            contents,
            made: None,
        }
    }

    /// `last_out` of `run`, with what it gave to remove.
    fn removed_by(run: RunRecord) -> Vec<PathBuf> {
        let removed = std::cell::RefCell::new(Vec::new());
        run.last_out(|p: &Placeholder| removed.borrow_mut().push(p.path.clone()));
        removed.into_inner()
    }

    #[test]
    fn a_record_that_cannot_be_read_refuses_the_plan_and_none_is_no_placeholder() {
        let dir = tempfile::tempdir().unwrap();
        let lock = RunRecord::join(&dir.path().join("state")).unwrap();
        assert!(lock.recorded().unwrap().is_empty(), "nothing recorded yet");
        // Something not a file where a record is: the run is refused, not planned blind.
        std::fs::create_dir(lock.folder.join("run-0.uses")).unwrap();
        assert!(lock.recorded().is_err());
        // A pipe in a record's place is refused too, not waited on.
        std::fs::remove_dir(lock.folder.join("run-0.uses")).unwrap();
        nix::unistd::mkfifo(
            &lock.folder.join("run-0.uses"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        assert!(lock.recorded().is_err());
    }

    #[test]
    fn a_placeholder_goes_when_no_running_run_recorded_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let mut first = RunRecord::join(&state).unwrap();
        first
            .record(&[
                placeholder(".claude", false, b""),
                placeholder(".git/info", true, b""),
            ])
            .unwrap();
        first.planned();
        let mut second = RunRecord::join(&state).unwrap();
        // The second plans with the first's placeholders in view, and stands on `.claude`.
        assert_eq!(second.recorded().unwrap().len(), 2);
        second
            .record(&[
                placeholder(".claude", false, b""),
                placeholder(".git/commondir", false, COMMONDIR_SELF),
            ])
            .unwrap();
        second.planned();
        // The first out removes what it alone recorded, and its record goes.
        assert_eq!(removed_by(first), [PathBuf::from("/work/p/.git/info")]);
        let records = || fs::read_dir(state.join(FOLDER)).unwrap().count();
        assert_eq!(records(), 2, "the lock and the second's record");
        // The last removes the rest, deepest first.
        assert_eq!(
            removed_by(second),
            [
                PathBuf::from("/work/p/.git/commondir"),
                PathBuf::from("/work/p/.claude")
            ]
        );
        assert_eq!(records(), 1, "the lock alone");
        let mut third = RunRecord::join(&state).unwrap();
        third.planned();
        assert!(removed_by(third).is_empty());
    }

    #[test]
    fn a_killed_run_s_placeholders_go_with_the_next_run_unless_a_running_one_stands_on_them() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let mut running = RunRecord::join(&state).unwrap();
        running.planned();
        let mut killed = RunRecord::join(&state).unwrap();
        killed
            .record(&[
                placeholder(".mcp.json", false, b""),
                placeholder(".claude", false, b""),
            ])
            .unwrap();
        killed.planned();
        // Killed: its record stays, unlocked.
        drop(killed);
        // A record of the per-root scheme before, left by a killed run: an ended run's too.
        fs::write(
            state.join(FOLDER).join("0123.placeholders"),
            b"f/work/p/.codex\0",
        )
        .unwrap();
        let mut next = RunRecord::join(&state).unwrap();
        assert_eq!(next.recorded().unwrap().len(), 3, "ended runs' are in view");
        next.record(&[placeholder(".claude", false, b"")]).unwrap();
        next.planned();
        let mut removed = removed_by(next);
        removed.sort();
        assert_eq!(
            removed,
            [
                PathBuf::from("/work/p/.claude"),
                PathBuf::from("/work/p/.codex"),
                PathBuf::from("/work/p/.mcp.json")
            ]
        );
        // A running run that stands on a killed run's placeholder keeps it.
        let mut killed = RunRecord::join(&state).unwrap();
        killed
            .record(&[placeholder(".gemini", false, b"")])
            .unwrap();
        killed.planned();
        drop(killed);
        running
            .record(&[placeholder(".gemini", false, b"")])
            .unwrap();
        let mut next = RunRecord::join(&state).unwrap();
        next.planned();
        assert!(removed_by(next).is_empty());
        assert_eq!(removed_by(running), [PathBuf::from("/work/p/.gemini")]);
        assert_eq!(fs::read_dir(state.join(FOLDER)).unwrap().count(), 1);
    }

    #[test]
    fn a_record_says_which_file_each_placeholder_is_and_older_records_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut lock = RunRecord::join(&dir.path().join("state")).unwrap();
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
        assert_eq!(read_record(&lock.path).unwrap(), placeholders);
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
    fn a_run_that_holds_the_plan_too_long_refuses_the_next_not_hangs_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let stuck = RunRecord::join(&state).unwrap();
        let lock = folder(&state).unwrap().join("plan.lock");
        let waiting = File::open(&lock).unwrap();
        let err = lock_within(&waiting, std::time::Duration::from_millis(50)).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        // Given up, and closed: the thread that still waits lets the lock go once it has it.
        drop(waiting);
        // Let go, the lock is taken at once (the waiting thread wakes on it).
        let waiting = File::open(&lock).unwrap();
        let (taken, outcome) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            taken
                .send(lock_within(&waiting, std::time::Duration::from_secs(60)).is_ok())
                .unwrap();
            waiting
        });
        drop(stuck);
        assert!(outcome.recv().unwrap());
        drop(waiter.join().unwrap());
    }

    #[test]
    fn only_a_home_that_is_not_the_user_s_own_falls_back_to_the_environment() {
        let (home, env) = (Path::new("/home/u"), PathBuf::from("/elsewhere/state/sc"));
        let passwd = home.join(".local/state").join(crate::cli::STATE_FOLDER);
        // The user's own home: its state folder alone, whatever HOME the run was given.
        assert_eq!(
            candidates(Some(home), true, Some(env.clone())),
            std::slice::from_ref(&passwd)
        );
        // A system account's home that is not its own: the environment's after it.
        assert_eq!(
            candidates(Some(home), false, Some(env.clone())),
            [passwd.clone(), env.clone()]
        );
        assert_eq!(candidates(None, false, Some(env.clone())), [env]);
        assert!(candidates(None, false, None).is_empty());
    }

    #[test]
    fn a_state_folder_that_cannot_be_made_refuses_the_run() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        assert!(RunRecord::join(&dir.path().join("file")).is_err());
    }
}
