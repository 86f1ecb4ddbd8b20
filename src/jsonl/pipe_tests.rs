use std::io::{Read, Write};

use super::*;

/// A fresh pipe, close-on-exec: a child another test spawns meanwhile must not hold an end open.
fn pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap()
}

/// Whether this process may pass the pipe quota: it holds `CAP_SYS_RESOURCE` or `CAP_SYS_ADMIN`
/// (root in a container may hold neither, and is then refused like anyone at the quota).
fn unbound_by_quota() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let effective = status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_SYS_RESOURCE: u32 = 24;
    effective & (1 << CAP_SYS_ADMIN | 1 << CAP_SYS_RESOURCE) != 0
}

#[test]
fn a_pipe_is_widened_from_either_end() {
    for end in 0..2 {
        let (read, write) = pipe();
        let fds = [&read, &write];
        // 64 KiB, or 8 KiB for a user past its pipe quota.
        let before = fcntl(fds[1 - end], FcntlArg::F_GETPIPE_SZ).unwrap();
        let widened = widen(fds[end]);
        let after = fcntl(fds[1 - end], FcntlArg::F_GETPIPE_SZ).unwrap();
        if unbound_by_quota() {
            // A process that may pass the pipe quota is never refused.
            assert!(widened, "end {end}");
        }
        if widened {
            assert_eq!(after, WIDE_PIPE_BYTES, "the other end sees the same pipe");
            // Asked again, it is already wide.
            assert!(widen(fds[end]));
        } else {
            // A user at its quota is refused, and the pipe is as it was.
            assert_eq!(after, before, "a refused widening changes nothing");
        }
        // Widened or not, it carries bytes in order.
        let mut writer = std::fs::File::from(write);
        writer.write_all(b"{\"a\":1}\n").unwrap();
        drop(writer);
        let mut text = String::new();
        std::fs::File::from(read).read_to_string(&mut text).unwrap();
        assert_eq!(text, "{\"a\":1}\n");
    }
}

#[test]
fn a_file_is_left_alone() {
    let file = tempfile::tempfile().unwrap();
    assert!(!widen(&file));
}

#[test]
fn a_named_fifo_is_left_alone() {
    // Its pages count against whoever opened it first, who may be another user.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fifo");
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // Read and write, so that the open never waits for the other end.
    let fifo = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let before = fcntl(&fifo, FcntlArg::F_GETPIPE_SZ).unwrap();
    assert!(!widen(&fifo));
    assert_eq!(fcntl(&fifo, FcntlArg::F_GETPIPE_SZ).unwrap(), before);
}

#[test]
fn a_socket_is_left_alone() {
    let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    assert!(!widen(&a));
}

/// A pipe another user made is left alone: root is not bound by the pipe quota, but the pipe's
/// pages count against the user who made it.
#[test]
fn another_users_pipe_is_left_alone() {
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    if !nix::unistd::geteuid().is_root() {
        eprintln!("not root: no pipe of another user to reach");
        return;
    }
    // The shell of another user (uid 4242, not `nobody`, which a user namespace shows for anyone)
    // makes the pipe between its two commands.
    let spawned = std::process::Command::new("sh")
        .args(["-c", "sleep 120 | sleep 120"])
        .uid(4242)
        .gid(4242)
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(shell) = spawned else {
        // A user namespace that maps root alone has no uid 4242 to become.
        eprintln!("cannot run a command as uid 4242 here: {spawned:?}");
        return;
    };
    // Whatever happens below, the shell's process group ends with the test.
    struct Group(std::process::Child);
    impl Drop for Group {
        fn drop(&mut self) {
            let group = nix::unistd::Pid::from_raw(self.0.id() as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            let _ = self.0.wait();
        }
    }
    let shell = Group(shell);
    let deadline = Instant::now() + Duration::from_secs(60);
    let pipe = loop {
        if let Some(pipe) = pipe_of_child(shell.0.id()) {
            break pipe;
        }
        assert!(Instant::now() < deadline, "the shell's pipe never showed");
        std::thread::sleep(Duration::from_millis(10));
    };
    let before = fcntl(&pipe, FcntlArg::F_GETPIPE_SZ).unwrap();
    assert_eq!(fstat(&pipe).unwrap().st_uid, 4242);
    assert!(!widen(&pipe));
    assert_eq!(fcntl(&pipe, FcntlArg::F_GETPIPE_SZ).unwrap(), before);
    drop(shell);
}

/// The pipe on the stdout of a child of `parent`, opened through `/proc` (read and write, so the
/// open never waits), once the child has started.
fn pipe_of_child(parent: u32) -> Option<std::os::fd::OwnedFd> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The parent's pid is the second field after the command's name, which may hold spaces.
        let after_name = &stat[stat.rfind(')')? + 1..];
        if after_name.split_whitespace().nth(1) != Some(&parent.to_string()) {
            continue;
        }
        let out = format!("/proc/{pid}/fd/1");
        if std::fs::metadata(&out).is_ok_and(|m| m.file_type().is_fifo()) {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(nix::libc::O_CLOEXEC)
                .open(&out)
                .ok()?;
            return Some(file.into());
        }
    }
    None
}
