//! Whether this machine can make the sandbox at all, found by making one: `sc-sandbox -- true`
//! in an empty root. Finding bubblewrap is not enough: a kernel can refuse the namespaces
//! (`user.max_user_namespaces = 0`, a container without them, an AppArmor rule), and that shows
//! only when bubblewrap tries.
//!
//! A door that confines many short calls (sc-hook, a new process for each) cannot pay for a
//! sandbox on every call, so a success is remembered in a file of the state folder, keyed by the
//! boot and by the sc-sandbox and bubblewrap binaries (path, size, device and inode, modification
//! and change times): a new boot, a new binary or a binary written in place probes again. The
//! change time is the kernel's: every write moves it and no one can set it back, so a binary
//! rewritten with its size and modification time kept is probed again too. And no confined run
//! can write these binaries: they are read-only inside wherever they lie
//! ([`super::machinery`]). A failure is never remembered: the next call probes again, and is
//! held until the machine can make the sandbox.
//!
//! The file is a cache, not a trust decision: a forged success only makes the door confine the
//! call, and sc-sandbox then fails with 125 and the program does not run.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The file a success is remembered in, inside the state folder.
pub const PROBE_FILE: &str = "sandbox-probe";

/// How long sc-hook's trial may take: a hook that runs past Claude Code's own timeout lets the
/// tool run, so a trial that hangs must end well before, as a failure.
pub const PROBE_LIMIT: Duration = Duration::from_secs(10);

/// How much of a trial run's stderr is kept: its end, where sc-sandbox says why it failed.
const STDERR_KEPT: usize = 16 * 1024;

/// How a trial run ended: its status, and the end of what it wrote on stderr.
#[derive(Debug)]
pub struct Trial {
    pub status: ExitStatus,
    pub stderr: String,
}

/// Runs `command` (stdin and stdout null, stderr kept) and waits for it at most `limit`: past
/// it, the command is killed (bubblewrap's `--die-with-parent` ends what sc-sandbox started) and
/// the trial is an error, as a command that cannot be started is.
pub fn trial_run(
    command: &mut Command,
    limit: Duration,
) -> Result<Trial, crate::stage::sandbox::Unconfinable> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot be started: {err}"))?;
    let mut stderr = child.stderr.take().expect("piped stderr");
    // No signal for it: under sc-hook, the deadline's handler runs on the thread that answers.
    let reader = crate::stage::quiet_thread::spawn(move || {
        let mut kept = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match stderr.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    kept.extend_from_slice(&chunk[..n]);
                    let over = kept.len().saturating_sub(STDERR_KEPT);
                    kept.drain(..over);
                }
            }
        }
        kept
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("did not end within {} seconds", limit.as_secs()).into());
            }
            Err(err) => return Err(format!("cannot be waited for: {err}").into()),
        }
    };
    let stderr = reader.join().unwrap_or_default();
    Ok(Trial {
        status,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// Whether `exe` (sc-sandbox) can run a program confined here, using bubblewrap at `bwrap`.
/// `cache`: the state folder to remember a success in (`None`: probe every time).
/// `Err`: why not, in words for a held call's reason.
pub fn can_confine(
    exe: &Path,
    bwrap: &Path,
    cache: Option<&Path>,
) -> Result<(), crate::stage::sandbox::Unconfinable> {
    let key = probe_key(exe, bwrap);
    let file = cache.map(|folder| folder.join(PROBE_FILE));
    if let (Some(key), Some(file)) = (&key, &file) {
        if fs::read_to_string(file).is_ok_and(|text| text == *key) {
            return Ok(());
        }
    }
    probe(exe, bwrap, PROBE_LIMIT)?;
    if let (Some(key), Some(file)) = (key, file) {
        // Best effort: a folder that cannot be written only means probing again next time.
        let _ = remember(&file, &key);
    }
    Ok(())
}

/// Runs `sc-sandbox --root EMPTY -- true`, with `SC_SANDBOX_BWRAP` naming the bubblewrap found.
fn probe(
    exe: &Path,
    bwrap: &Path,
    limit: Duration,
) -> Result<(), crate::stage::sandbox::Unconfinable> {
    let root = empty_folder()
        .map_err(|err| format!("cannot make an empty folder to try the sandbox in: {err}"))?;
    let trial = trial_run(
        Command::new(exe)
            .arg("--root")
            .arg(&root)
            .arg("--")
            .arg("true")
            .env("SC_SANDBOX_BWRAP", bwrap)
            .current_dir(&root),
        limit,
    );
    let _ = fs::remove_dir(&root);
    let trial = trial.map_err(|why| {
        format!(
            "this machine cannot make the sandbox: a trial run of {} {why}",
            exe.display()
        )
    })?;
    if trial.status.success() {
        return Ok(());
    }
    let said: Vec<&str> = trial
        .stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    Err(format!(
        "this machine cannot make the sandbox: a trial run of sc-sandbox ended with {}{}",
        trial.status,
        if said.is_empty() {
            String::new()
        } else {
            format!(": {}", said.join(" / "))
        }
    )
    .into())
}

/// A new empty folder under the temporary folder, mode 0700.
fn empty_folder() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    let path =
        std::env::temp_dir().join(format!("sc-sandbox-probe.{}.{nanos}", std::process::id()));
    fs::DirBuilder::new().mode(0o700).create(&path)?;
    Ok(path)
}

/// The boot and both binaries, as one line each; `None` when one cannot be read (then nothing is
/// remembered).
fn probe_key(exe: &Path, bwrap: &Path) -> Option<String> {
    let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let mut key = format!("boot {}\n", boot.trim());
    for binary in [exe, bwrap] {
        let path: PathBuf = fs::canonicalize(binary).ok()?;
        let meta = fs::metadata(&path).ok()?;
        // The change time is the kernel's: every write moves it, and no one can set it back.
        key.push_str(&format!(
            "{} {} {}:{} {}.{} {}.{}\n",
            path.display(),
            meta.len(),
            meta.dev(),
            meta.ino(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec(),
        ));
    }
    Some(key)
}

/// Writes `key` to `file` (mode 0600), through a new file renamed into place.
fn remember(file: &Path, key: &str) -> std::io::Result<()> {
    let folder = file.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(folder)?;
    let staged = folder.join(format!(".{PROBE_FILE}.{}", std::process::id()));
    let mut out = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&staged)?;
    out.write_all(key.as_bytes())?;
    drop(out);
    fs::rename(&staged, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn a_success_is_remembered_and_a_failure_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("state");
        let count = dir.path().join("count");
        let exe = script(
            dir.path(),
            "sc-sandbox",
            &format!("echo run >> '{}'; exit 0", count.display()),
        );
        let bwrap = script(dir.path(), "bwrap", "exit 0");
        let runs = || {
            fs::read_to_string(&count)
                .unwrap_or_default()
                .lines()
                .count()
        };
        can_confine(&exe, &bwrap, Some(&cache)).unwrap();
        can_confine(&exe, &bwrap, Some(&cache)).unwrap();
        assert_eq!(runs(), 1, "the second call used the remembered success");
        let mode = fs::metadata(cache.join(PROBE_FILE)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);

        // A new sc-sandbox probes again; one that fails is never remembered.
        let failing = format!(
            "echo run >> '{}'; echo 'sc-sandbox: bwrap: Creating new namespace failed' >&2; exit 125",
            count.display()
        );
        fs::remove_file(&exe).unwrap();
        let exe = script(dir.path(), "sc-sandbox", &failing);
        let err = can_confine(&exe, &bwrap, Some(&cache)).unwrap_err();
        assert!(err.contains("cannot make the sandbox"), "{err}");
        assert!(err.contains("Creating new namespace failed"), "{err}");
        can_confine(&exe, &bwrap, Some(&cache)).unwrap_err();
        assert_eq!(runs(), 3);
    }

    #[test]
    fn a_binary_rewritten_in_place_with_its_size_and_time_kept_is_probed_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("state");
        let count = dir.path().join("count");
        let body = format!("echo run >> '{}'; exit 0", count.display());
        let exe = script(dir.path(), "sc-sandbox", &body);
        let bwrap = script(dir.path(), "bwrap", "exit 0");
        can_confine(&exe, &bwrap, Some(&cache)).unwrap();
        let modified = fs::metadata(&exe).unwrap().modified().unwrap();
        // Same inode, same size, same modification time: only the content (and the kernel's
        // change time) differ.
        let forged = format!("echo RUN >> '{}'; exit 0", count.display());
        assert_eq!(forged.len(), body.len());
        fs::write(&exe, format!("#!/bin/sh\n{forged}\n")).unwrap();
        fs::File::options()
            .write(true)
            .open(&exe)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        can_confine(&exe, &bwrap, Some(&cache)).unwrap();
        let runs = fs::read_to_string(&count).unwrap();
        assert_eq!(runs, "run\nRUN\n", "the rewritten binary was probed");
    }

    #[test]
    fn without_a_cache_every_call_probes() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("count");
        let exe = script(
            dir.path(),
            "sc-sandbox",
            &format!("echo run >> '{}'", count.display()),
        );
        let bwrap = script(dir.path(), "bwrap", "exit 0");
        can_confine(&exe, &bwrap, None).unwrap();
        can_confine(&exe, &bwrap, None).unwrap();
        assert_eq!(fs::read_to_string(&count).unwrap().lines().count(), 2);
    }

    #[test]
    fn a_trial_that_hangs_ends_as_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        let exe = script(dir.path(), "sc-sandbox", "exec sleep 60");
        let bwrap = script(dir.path(), "bwrap", "exit 0");
        let started = Instant::now();
        let err = probe(&exe, &bwrap, Duration::from_secs(1)).unwrap_err();
        assert!(err.contains("did not end within 1 seconds"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(30), "it was killed");
    }

    #[test]
    fn a_missing_binary_is_named() {
        let err = can_confine(
            Path::new("/nonexistent/sc-sandbox"),
            Path::new("/bin/true"),
            None,
        )
        .unwrap_err();
        assert!(err.contains("/nonexistent/sc-sandbox"), "{err}");
    }
}
