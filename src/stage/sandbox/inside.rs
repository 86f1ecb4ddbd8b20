//! The sandbox's first process, its PID namespace's init: sc-sandbox itself, re-executed by
//! bubblewrap (`--as-pid-1`) with the hidden [`super::INSIDE_FLAG`]. It starts the loopback bridge, runs the program with the proxy
//! variables pointing at it, passes on the signals sc-sandbox outside forwards, waits, and exits
//! with the program's status (128+N when a signal N killed it, as a shell reports it).
//!
//! It talks to sc-sandbox outside over two pipes bubblewrap passes through: a status pipe (one
//! line each: `started`, `error …`, `spawn CODE …`, `exit CODE`) so that outside can tell the
//! program's own exit status from a failure before it ran, and a control pipe carrying the
//! numbers of signals to pass on. It refuses to run anything unless it is itself confined (a
//! seccomp filter and `no_new_privs`): this mode is never a way to run a program unconfined.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;

use super::{bridge, EXIT_SANDBOX_FAILURE, INSIDE_SOCKET};

/// The variables that point HTTP clients at the proxy.
pub const PROXY_VARIABLES: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// Runs the program of `args` (`STATUS_FD CONTROL_FD -- PROGRAM [ARGS…]`, after the flag) and
/// returns the exit status to end with.
pub fn main(args: &[OsString]) -> u8 {
    let fd = |index: usize| {
        args.get(index)
            .and_then(|a| a.to_str())
            .and_then(|a| a.parse::<i32>().ok())
            .filter(|fd| *fd > 2)
    };
    let (Some(status_fd), Some(control_fd)) = (fd(0), fd(1)) else {
        eprintln!(
            "sc-sandbox: {} is sc-sandbox's own, inside its sandbox",
            super::INSIDE_FLAG
        );
        return EXIT_SANDBOX_FAILURE;
    };
    for fd in [status_fd, control_fd] {
        // SAFETY: fcntl on a number is harmless whatever it names; the program must not inherit them.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: the number was passed by sc-sandbox outside, for this process alone.
    let mut status = unsafe { File::from_raw_fd(status_fd) };
    let mut report = |line: &str| {
        let _ = writeln!(status, "{}", line.replace('\n', " "));
    };
    if let Err(why) = check_confined() {
        report(&format!("error {why}"));
        return EXIT_SANDBOX_FAILURE;
    }
    let _ = nix::sys::prctl::set_dumpable(false);
    let (Some(separator), Some(program)) = (args.get(2), args.get(3)) else {
        report("error no program to run");
        return EXIT_SANDBOX_FAILURE;
    };
    if separator != "--" {
        report("error malformed helper arguments");
        return EXIT_SANDBOX_FAILURE;
    }
    let address = match bridge::start(std::path::Path::new(INSIDE_SOCKET)) {
        Ok(address) => address,
        Err(err) => {
            report(&format!("error the loopback proxy could not listen: {err}"));
            return EXIT_SANDBOX_FAILURE;
        }
    };
    let proxy = format!("http://{address}");
    let mut command = Command::new(program);
    command.args(&args[4..]).process_group(0);
    for name in PROXY_VARIABLES {
        command.env(name, &proxy);
    }
    command.env_remove("NO_PROXY").env_remove("no_proxy");
    let child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            let code = if err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            report(&format!(
                "spawn {code} {}: {err}",
                program.to_string_lossy()
            ));
            return code;
        }
    };
    report("started");
    let group = Pid::from_raw(child.id() as i32);
    // SAFETY: as above, the control pipe's reading end is this process's alone.
    let mut control = unsafe { File::from_raw_fd(control_fd) };
    let _ = std::thread::Builder::new()
        .name("sc-sandbox signals".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            while let Ok(1) = control.read(&mut byte) {
                if let Ok(signal) = Signal::try_from(i32::from(byte[0])) {
                    let _ = killpg(group, signal);
                }
            }
        });
    let ended = wait_reaping(group);
    let _ = child;
    match ended {
        Ok(WaitStatus::Exited(_, code)) => {
            report(&format!("exit {}", code as u8));
            code as u8
        }
        Ok(WaitStatus::Signaled(_, signal, _)) => {
            let code = 128u8.wrapping_add(signal as i32 as u8);
            report(&format!("exit {code} signal {}", signal as i32));
            code
        }
        Ok(other) => {
            report(&format!("error the program ended oddly: {other:?}"));
            EXIT_SANDBOX_FAILURE
        }
        Err(err) => {
            report(&format!("error waiting for the program: {err}"));
            EXIT_SANDBOX_FAILURE
        }
    }
}

/// This process is the namespace's init (bubblewrap's `--as-pid-1`): orphans come to it, so it
/// reaps every child until the program itself ends. When it then exits, the kernel kills
/// everything left in the namespace and bubblewrap returns only after that: nothing started
/// inside outlives the run.
fn wait_reaping(program: Pid) -> nix::Result<WaitStatus> {
    loop {
        match waitpid(None, None)? {
            status @ (WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, _, _))
                if pid == program =>
            {
                return Ok(status)
            }
            _ => {}
        }
    }
}

/// This process must run under a seccomp filter with `no_new_privs`, as bubblewrap's
/// `--seccomp` puts it.
fn check_confined() -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|err| format!("cannot read /proc/self/status: {err}"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
            .unwrap_or("")
            .to_owned()
    };
    if field("NoNewPrivs:") != "1" || field("Seccomp:") != "2" {
        return Err(
            "the helper is not confined (no seccomp filter or no no_new_privs); it runs nothing"
                .to_owned(),
        );
    }
    // And in a network namespace of its own: loopback alone.
    let devices = std::fs::read_to_string("/proc/net/dev")
        .map_err(|err| format!("cannot read /proc/net/dev: {err}"))?;
    let others: Vec<&str> = devices
        .lines()
        .skip(2)
        .filter_map(|line| line.split(':').next().map(str::trim))
        .filter(|name| *name != "lo")
        .collect();
    if !others.is_empty() {
        return Err(format!(
            "the helper sees the network devices {}; it runs nothing outside a network namespace of its own",
            others.join(", ")
        ));
    }
    Ok(())
}
