//! Whose turn it is on a terminal: while sc-approve asks a person there, it owns the prompt line,
//! and the other stages of the pipeline that tell their story on the same terminal hold their
//! lines back until the answer is given (issue 33: `Type yes to approve …: sc-exec: scout → …
//! executed`).
//!
//! The turn is an advisory lock (`flock`) on a small file in the state folder named after the
//! terminal's device (`tty-MAJOR-MINOR.lock`, mode 0600): the asker holds it exclusively while the
//! prompt is up ([`Asking`]); a stage's narration ([`Story`]) writes its lines under a shared
//! lock taken without waiting, and keeps them while the asker has the turn, to write them once
//! it is free (at the latest when the stage ends). A crashed asker's lock ends with it. Where
//! there is no terminal, no state folder or no lock file, nothing is held back: the story is
//! only a courtesy, and asking never waits on it.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// The most narration kept back while a person is asked; past it, the stage waits its turn.
const MAX_KEPT_BYTES: usize = 1 << 20;

/// A terminal, by its device number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalId {
    pub major: u64,
    pub minor: u64,
}

impl TerminalId {
    /// The terminal `fd` is, when it is one.
    pub fn of(fd: impl AsFd) -> Option<TerminalId> {
        if !nix::unistd::isatty(fd.as_fd()).unwrap_or(false) {
            return None;
        }
        let stat = nix::sys::stat::fstat(fd.as_fd()).ok()?;
        let rdev = stat.st_rdev;
        let id = TerminalId {
            major: nix::sys::stat::major(rdev),
            minor: nix::sys::stat::minor(rdev),
        };
        // `/dev/tty` (5, 0) opened: the controlling terminal, whichever it is.
        if id == (TerminalId { major: 5, minor: 0 }) {
            return TerminalId::controlling();
        }
        Some(id)
    }

    /// The process's controlling terminal (what `/dev/tty` opens), from `/proc/self/stat`:
    /// `/dev/tty` itself names no device of its own.
    pub fn controlling() -> Option<TerminalId> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // After the command name in parentheses: state, ppid, pgrp, session, tty_nr.
        let rest = &stat[stat.rfind(')')? + 1..];
        let tty_nr: u64 = rest.split_whitespace().nth(4)?.parse().ok()?;
        if tty_nr == 0 {
            return None;
        }
        Some(TerminalId {
            major: (tty_nr >> 8) & 0xfff,
            minor: (tty_nr & 0xff) | ((tty_nr >> 12) & 0xfff00),
        })
    }

    /// The turn's lock file in `folder`.
    fn lock_path(self, folder: &Path) -> PathBuf {
        folder.join(format!("tty-{}-{}.lock", self.major, self.minor))
    }
}

/// The state folder, as the audit log's default finds it (`$XDG_STATE_HOME/skeleton-crew`, else
/// `$HOME/.local/state/skeleton-crew`); `None` without either.
pub fn state_folder() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    absolute("XDG_STATE_HOME")
        .map(|state| state.join("skeleton-crew"))
        .or_else(|| absolute("HOME").map(|home| home.join(".local/state/skeleton-crew")))
}

/// Opens (creating it, mode 0600, and its folder, 0700) the turn's lock file of `terminal`.
fn open_lock(folder: &Path, terminal: TerminalId) -> Option<File> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
        .ok()?;
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(terminal.lock_path(folder))
        .ok()
}

/// The turn, held by the asker while its prompt is up; given back when dropped.
#[derive(Debug)]
pub struct Asking {
    _lock: Option<Flock<File>>,
}

impl Asking {
    /// Takes the turn on the controlling terminal, waiting for a story being written to end.
    /// Without a terminal, a state folder or a lock file, asks without it.
    pub fn take() -> Asking {
        let lock = TerminalId::controlling()
            .zip(state_folder())
            .and_then(|(terminal, folder)| open_lock(&folder, terminal))
            .and_then(|file| Flock::lock(file, FlockArg::LockExclusive).ok());
        Asking { _lock: lock }
    }
}

/// A stage's narration on its way to a terminal: written at once, unless a person is being
/// asked on the same terminal, when it is kept until the turn is free.
pub struct Story<W: Write> {
    inner: W,
    /// The turn's lock file, when `inner` is a terminal.
    lock: Option<File>,
    kept: Vec<u8>,
}

impl<W: Write + AsFd> Story<W> {
    /// The story written to `inner`, which waits its turn when it is a terminal.
    pub fn new(inner: W) -> Story<W> {
        let lock = TerminalId::of(&inner)
            .zip(state_folder())
            .and_then(|(terminal, folder)| open_lock(&folder, terminal));
        Story {
            inner,
            lock,
            kept: Vec::new(),
        }
    }
}

impl<W: Write> Story<W> {
    /// Writes what was kept, if the turn is free (or, with `wait`, once it is).
    fn write_kept(&mut self, wait: bool) -> io::Result<()> {
        if self.kept.is_empty() {
            return Ok(());
        }
        // What could not be written is dropped all the same (a closed stderr): the story is a
        // courtesy, and what is kept stays bounded.
        let Some(file) = self.lock.take() else {
            let written = self.inner.write_all(&self.kept);
            self.kept.clear();
            return written;
        };
        let how = if wait {
            FlockArg::LockShared
        } else {
            FlockArg::LockSharedNonblock
        };
        match Flock::lock(file, how) {
            Ok(locked) => {
                let written = self
                    .inner
                    .write_all(&self.kept)
                    .and_then(|()| self.inner.flush());
                self.kept.clear();
                self.lock = locked.unlock().ok();
                written
            }
            // A person is being asked: kept for later.
            Err((file, _)) => {
                self.lock = Some(file);
                Ok(())
            }
        }
    }
}

impl<W: Write> Write for Story<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.kept.extend_from_slice(buf);
        let wait = self.kept.len() > MAX_KEPT_BYTES;
        self.write_kept(wait)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_kept(false)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for Story<W> {
    /// What is still kept is written once the person has answered.
    fn drop(&mut self) {
        let _ = self.write_kept(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A story to something that is not a terminal is written at once, and one to a closed
    /// stream keeps nothing.
    #[test]
    fn a_story_off_a_terminal_is_written_at_once_and_a_failed_write_keeps_nothing() {
        let mut story = Story {
            inner: Vec::new(),
            lock: None,
            kept: Vec::new(),
        };
        story.write_all(b"sc-exec: one\n").unwrap();
        assert_eq!(story.inner, b"sc-exec: one\n");
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut story = Story {
            inner: Closed,
            lock: None,
            kept: Vec::new(),
        };
        assert!(story.write(b"lost\n").is_err());
        assert!(story.kept.is_empty());
    }

    /// While the asker holds the turn, a story to the same terminal is kept, and written once
    /// the turn is free.
    #[test]
    fn a_story_waits_while_the_turn_is_taken() {
        let folder = tempfile::tempdir().unwrap();
        let terminal = TerminalId {
            major: 136,
            minor: 99,
        };
        let asking = Flock::lock(
            open_lock(folder.path(), terminal).unwrap(),
            FlockArg::LockExclusive,
        )
        .unwrap();
        let mut story = Story {
            inner: Vec::new(),
            lock: open_lock(folder.path(), terminal),
            kept: Vec::new(),
        };
        story.write_all(b"sc-exec: scout executed\n").unwrap();
        story.flush().unwrap();
        assert!(story.inner.is_empty(), "written on the prompt line");
        drop(asking);
        story.write_all(b"sc-exec: buyer skipped\n").unwrap();
        assert_eq!(
            story.inner,
            b"sc-exec: scout executed\nsc-exec: buyer skipped\n"
        );
        let mode = std::fs::metadata(terminal.lock_path(folder.path()))
            .unwrap()
            .permissions();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.mode() & 0o777, 0o600);
    }
}
