//! A stage run with its audit log on a full file system: the log opens (it is a regular file)
//! and the stage's first append fails with ENOSPC, which is how a write fails after a good open.
//! bubblewrap mounts a tmpfs of [`SIZE`] bytes over a scratch folder, in a mount namespace of the
//! stage's own, and a shell fills it before it starts the stage; nothing outside sees the mount.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// The tmpfs's size: what a filler file takes whole before the stage starts.
const SIZE: &str = "65536";

/// Run in the tmpfs before the stage: the log is made (empty, so that it opens), a filler takes
/// every byte left, and a one-byte write must then fail, or the shell stops with 99 and says so.
const FILL: &str = r#"dir=$1; shift
: > "$dir/audit.jsonl" || exit 98
head -c 1048576 /dev/zero > "$dir/filler" 2>/dev/null
if printf x >> "$dir/probe" 2>/dev/null; then echo "full-disk: $dir is not full" >&2; exit 99; fi
exec "$@""#;

/// A scratch folder that each command of [`FullDisk::command`] sees as a full tmpfs holding an
/// empty `audit.jsonl`.
pub struct FullDisk {
    dir: TempDir,
}

impl FullDisk {
    /// `None` without bubblewrap, said on stderr (as the other tests that start it skip; `make
    /// test` installs it). A kernel that refuses bubblewrap's mount namespace fails the test
    /// with bubblewrap's words, as the sandbox's tests do.
    pub fn new() -> Option<FullDisk> {
        if Command::new("bwrap").arg("--version").output().is_err() {
            eprintln!("skipped: no bubblewrap (make test-deps installs it)");
            return None;
        }
        let disk = FullDisk {
            dir: tempfile::tempdir().unwrap(),
        };
        let probe = disk.std_command(Path::new("/bin/true")).output().unwrap();
        assert!(
            probe.status.success(),
            "bubblewrap cannot mount a full tmpfs here: {}",
            String::from_utf8_lossy(&probe.stderr)
        );
        Some(disk)
    }

    /// The audit log's path: in the tmpfs, for the commands of this disk.
    pub fn log(&self) -> PathBuf {
        self.dir.path().join("audit.jsonl")
    }

    /// `program` (with the arguments added to the command) inside bubblewrap, on the full disk,
    /// in a clean environment but PATH.
    pub fn std_command(&self, program: &Path) -> Command {
        let mut cmd = Command::new("bwrap");
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .args(["--dev-bind", "/", "/", "--die-with-parent", "--size", SIZE])
            .arg("--tmpfs")
            .arg(self.dir.path())
            .args(["--", "/bin/sh", "-c", FILL, "sh"])
            .arg(self.dir.path())
            .arg(program);
        cmd
    }

    /// A binary of this package on the full disk, as [`crate::util::bare_cmd`] runs it.
    pub fn cmd(&self, bin: &str) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.std_command(&crate::util::bin_path(bin)))
    }
}
