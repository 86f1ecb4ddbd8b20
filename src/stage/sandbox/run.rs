//! One confined run, from outside: load the policy, work out the mounts, open the audit log,
//! start the proxy, start bubblewrap, pass signals on, wait, record the end, clean up.
//!
//! Everything that can fail before the program runs is a [`SandboxError`] (exit 125). Once the
//! helper inside says the program started, the status is the program's.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use nix::fcntl::OFlag;
use nix::sys::signal::{SigSet, Signal};

use super::events::{Recorder, Who};
use super::files::{Placeholders, RunFolder};
use super::plan::Sandbox;
use super::{bwrap, proxy, seccomp, SandboxError, EXIT_SANDBOX_FAILURE};
use crate::audit::chain::Chain;
use crate::audit::{AuditLog, AuditOptions};
use crate::rules::policy::Policy;
use crate::store::StateUrl;

/// The signals sc-sandbox passes on to the program's process group.
pub const FORWARDED: &[Signal] = &[
    Signal::SIGHUP,
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGTERM,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
];

/// What to run, and under which policy.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The policy file; `None`: the built-in defaults (no `sandbox` key: no extra paths, no hosts).
    pub policy: Option<PathBuf>,
    /// The writable root; `None`: the working folder.
    pub root: Option<PathBuf>,
    /// What `~` is; `None`: `$HOME`.
    pub home: Option<PathBuf>,
    /// The audit log to record the run in; `None`: no events.
    pub audit: Option<PathBuf>,
    /// The audit chain's key file (else `SC_AUDIT_KEY_FILE`, else an unkeyed chain).
    pub audit_key: Option<PathBuf>,
    /// The state store, protected as the gate's own (else `state.sqlite` beside the audit log).
    pub state: Option<StateUrl>,
    /// More of the gate's own files or folders, kept read-only (sc-hook's session folder).
    pub protect: Vec<PathBuf>,
    pub who: Who,
    /// The audit events' id (a door's call id); `None`: a fresh one.
    pub id: Option<String>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

/// How a run ended: sc-sandbox's exit status, and the signal that killed the program, if one did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    pub status: u8,
    pub signal: Option<i32>,
}

/// The gate's own files for `options`: always read-only inside.
pub fn own_files(options: &RunOptions) -> Vec<(PathBuf, String)> {
    let mut own = Vec::new();
    let mut add = |path: &Path, what: &str| own.push((path.to_owned(), what.to_owned()));
    if let Some(policy) = &options.policy {
        add(policy, "policy file");
    }
    if let Some(audit) = &options.audit {
        add(audit, "audit log");
    }
    let key = options.audit_key.clone().or_else(|| {
        std::env::var_os(crate::audit::chain::AUDIT_KEY_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    if let Some(key) = key {
        add(&key, super::plan::SECRET_OWN_FILE);
    }
    let state = match (&options.state, &options.audit) {
        (Some(state), _) => Some(state.clone()),
        (None, Some(audit)) => Some(StateUrl::beside(audit)),
        (None, None) => None,
    };
    if let Some(StateUrl::Sqlite(file)) = state {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = file.clone().into_os_string();
            name.push(suffix);
            add(Path::new(&name), "state store");
        }
    }
    for path in &options.protect {
        add(path, "gate file");
    }
    own
}

/// Runs the program confined. Call it from sc-sandbox's `main` only: it blocks the forwarded
/// signals in this process and re-executes this binary inside as the helper.
pub fn run(options: &RunOptions) -> Result<Ended, SandboxError> {
    let policy = Policy::load_or_default(options.policy.as_deref())?;
    let cwd = std::env::current_dir().map_err(SandboxError::io("the working folder"))?;
    let absolute = |path: &Path| std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let root = options.root.as_deref().map_or(cwd.clone(), absolute);
    let home = match &options.home {
        Some(home) => Some(absolute(home)),
        None => std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|home| home.is_absolute()),
    };
    let bwrap = bwrap::locate()?;
    let helper = std::env::current_exe().map_err(SandboxError::io("finding sc-sandbox itself"))?;
    let filter = seccomp::program()?;
    // Opened (and created) before the mounts are worked out, so that it is protected as a file.
    let log = match &options.audit {
        Some(path) => {
            let chain = Chain::from_key_option(options.audit_key.as_deref())
                .map_err(|err| SandboxError::Audit(err.into()))?;
            let log = AuditLog::open_with(
                path,
                AuditOptions {
                    chain,
                    fsync: false,
                },
            );
            Some(log.map_err(SandboxError::Audit)?)
        }
        None => None,
    };
    let sandbox = Sandbox::from_policy(&policy, &root, home.as_deref(), &own_files(options))?;
    let recorder = Arc::new(Recorder::new(log, options.id.clone(), options.who.clone()));
    let folder = RunFolder::create()?;
    folder.write_git_views(sandbox.git_views())?;
    let listener = UnixListener::bind(&folder.socket)
        .map_err(SandboxError::io("listening on the proxy's socket"))?;
    let placeholders = Placeholders::create(sandbox.placeholders())?;
    let allow: Vec<String> = sandbox
        .network()
        .allow()
        .iter()
        .map(|a| a.to_string())
        .collect();
    recorder
        .start(&options.program, &options.args, sandbox.root(), &allow)
        .map_err(SandboxError::Audit)?;
    let launch = Launch {
        sandbox: &sandbox,
        folder: &folder,
        helper: &helper,
        bwrap: &bwrap,
        cwd: &cwd,
        filter: &filter,
    };
    let ended = launch.run(options, listener, &recorder);
    drop(placeholders);
    drop(folder);
    // A run that started is ended in the log, even when the sandbox failed to come up.
    let (status, signal) = match &ended {
        Ok(ended) => (ended.status, ended.signal),
        Err(_) => (EXIT_SANDBOX_FAILURE, None),
    };
    if let Err(err) = recorder.end(status, signal) {
        eprintln!("sc-sandbox: the end of the run could not be recorded: {err:#}");
    }
    ended
}

/// What starting bubblewrap needs, worked out and checked.
struct Launch<'a> {
    sandbox: &'a Sandbox,
    folder: &'a RunFolder,
    helper: &'a Path,
    bwrap: &'a Path,
    cwd: &'a Path,
    filter: &'a [u8],
}

impl Launch<'_> {
    /// Starts the proxy and bubblewrap, passes signals on, and waits.
    fn run(
        &self,
        options: &RunOptions,
        listener: UnixListener,
        recorder: &Arc<Recorder>,
    ) -> Result<Ended, SandboxError> {
        // Blocked before any thread starts, so that every thread inherits the mask and the
        // signals wait for the forwarding thread.
        let mut signals = SigSet::empty();
        for signal in FORWARDED {
            signals.add(*signal);
        }
        signals
            .thread_block()
            .map_err(|err| SandboxError::Start(format!("blocking signals: {err}")))?;
        let network = Arc::new(self.sandbox.network().clone());
        proxy::serve(listener, network, recorder.clone())
            .map_err(SandboxError::io("starting the proxy"))?;
        let pipe = || {
            nix::unistd::pipe2(OFlag::O_CLOEXEC)
                .map_err(|err| SandboxError::Start(format!("making a pipe: {err}")))
        };
        let (seccomp_read, seccomp_write) = pipe()?;
        File::from(seccomp_write)
            .write_all(self.filter)
            .map_err(SandboxError::io("passing the seccomp filter"))?;
        let (status_read, status_write) = pipe()?;
        let (control_read, control_write) = pipe()?;
        let fds = bwrap::Fds {
            seccomp: seccomp_read.as_raw_fd(),
            status: status_write.as_raw_fd(),
            control: control_read.as_raw_fd(),
        };
        let chdir = std::fs::canonicalize(self.cwd).unwrap_or_else(|_| self.cwd.to_owned());
        let args = bwrap::arguments(self.sandbox, &self.folder.files, self.helper, &chdir, fds);
        let mut command = Command::new(self.bwrap);
        command
            .args(&args)
            .arg(&options.program)
            .args(&options.args)
            .process_group(0);
        let passed = [fds.seccomp, fds.status, fds.control];
        // SAFETY: between fork and exec, only async-signal-safe calls: sigprocmask,
        // close_range and fcntl.
        unsafe {
            command.pre_exec(move || pass_only(&passed));
        }
        let mut child = command.spawn().map_err(|err| {
            SandboxError::Start(format!("cannot run {}: {err}", self.bwrap.display()))
        })?;
        drop((seccomp_read, status_write, control_read));
        forward_signals(signals, control_write);
        let exit = child
            .wait()
            .map_err(SandboxError::io("waiting for bubblewrap"))?;
        judge(&read_available(status_read), exit)
    }
}

/// In the child before exec: no signal blocked (this process blocks those it forwards, and a mask
/// is inherited through exec), and every inherited descriptor above stderr closes on exec, except
/// those passed to bubblewrap and the helper (an inherited socket would be a way out).
fn pass_only(passed: &[i32]) -> std::io::Result<()> {
    // SAFETY: plain system calls on a local signal set and on descriptor numbers.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        if libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let all = libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
        if all != 0 {
            for fd in 3..65536 {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        for fd in passed {
            if libc::fcntl(*fd, libc::F_SETFD, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Passes each forwarded signal this process receives to the helper inside, which sends it to
/// the program's process group.
fn forward_signals(signals: SigSet, control: OwnedFd) {
    let mut control = File::from(control);
    let _ = std::thread::Builder::new()
        .name("sc-sandbox signals".into())
        .spawn(move || {
            while let Ok(signal) = signals.wait() {
                if control.write_all(&[signal as i32 as u8]).is_err() {
                    break;
                }
            }
        });
}

/// What the helper wrote on the status pipe, without waiting for more: bubblewrap has ended.
fn read_available(status: OwnedFd) -> Vec<String> {
    let _ = nix::fcntl::fcntl(&status, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK));
    let mut file = File::from(status);
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = file.read(&mut chunk) {
        if n == 0 || bytes.len() > 1 << 20 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The run's end from the helper's lines and bubblewrap's status.
fn judge(lines: &[String], bwrap: std::process::ExitStatus) -> Result<Ended, SandboxError> {
    let started = lines.iter().any(|line| line == "started");
    for line in lines {
        if let Some(why) = line.strip_prefix("error ") {
            if !started {
                return Err(SandboxError::Start(why.to_owned()));
            }
        } else if let Some(rest) = line.strip_prefix("spawn ") {
            let (code, why) = rest.split_once(' ').unwrap_or((rest, ""));
            eprintln!("sc-sandbox: {why}");
            let status = code.parse().unwrap_or(EXIT_SANDBOX_FAILURE);
            return Ok(Ended {
                status,
                signal: None,
            });
        } else if let Some(rest) = line.strip_prefix("exit ") {
            let mut words = rest.split(' ');
            let status = words.next().and_then(|w| w.parse().ok());
            let signal = match (words.next(), words.next()) {
                (Some("signal"), Some(n)) => n.parse().ok(),
                _ => None,
            };
            if let Some(status) = status {
                return Ok(Ended { status, signal });
            }
        }
    }
    if !started {
        return Err(SandboxError::Start(format!(
            "bubblewrap ended ({bwrap}) before the program started; the program did not run"
        )));
    }
    // The helper was killed; bubblewrap reports how, as a shell does.
    let status = match (bwrap.code(), bwrap.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128u8.wrapping_add(signal as u8),
        (None, None) => EXIT_SANDBOX_FAILURE,
    };
    Ok(Ended {
        status,
        signal: None,
    })
}

/// Runs and maps every failure of sc-sandbox itself to 125, told on stderr.
pub fn run_to_status(options: &RunOptions) -> u8 {
    match run(options) {
        Ok(ended) => ended.status,
        Err(err) => {
            eprintln!("sc-sandbox: {err}");
            EXIT_SANDBOX_FAILURE
        }
    }
}
