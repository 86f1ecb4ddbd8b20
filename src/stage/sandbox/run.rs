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
use super::sharing::RunRecord;
use super::{bwrap, machinery, program, proxy, seccomp, SandboxError, EXIT_SANDBOX_FAILURE};
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

/// How a run ended: sc-sandbox's exit status, the signal that killed the program, if one did, and
/// whether the program ran (it did not when it was not found or could not be executed inside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    pub status: u8,
    pub signal: Option<i32>,
    pub ran: bool,
}

/// The environment variable naming a pipe (its descriptor number, inherited) on which
/// sc-sandbox tells the door that started it how the run ended, since the exit status alone
/// cannot: a program may exit 125 itself, and print what it likes. One line, written once:
/// `ran STATUS` when the program started (whatever its status), `not-run STATUS REASON` when it
/// did not start inside (127, 126), `failed REASON` when sc-sandbox itself failed. No line at
/// all is a failure of sc-sandbox too (it died, or did not understand its flags). The program
/// never sees the variable nor the pipe.
pub const REPORT_FD_ENV: &str = "SC_SANDBOX_REPORT_FD";

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
            Some(log.map_err(|err| SandboxError::Audit(err.into()))?)
        }
        None => None,
    };
    // The binaries of the doors and of the sandbox are the gate's own too, wherever they lie.
    let mut own = own_files(options);
    // Where the sandbox may write: the root, and the policy's `writable` places (any of them
    // makes every folder count, as they are placed only below).
    let writable = match policy.sandbox() {
        Some(rules) if !rules.writable.is_empty() => None,
        _ => Some(vec![
            std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone())
        ]),
    };
    own.extend(machinery::files_within(
        &helper,
        &bwrap,
        writable.as_deref(),
    ));
    // Held before the plan: no other run removes a placeholder this one would find and bind
    // ([`super::sharing`]), whatever environment each was given. Without any state folder (no
    // home in the password database, neither HOME nor XDG_STATE_HOME) no record is shared, and
    // each run removes what it made, as before (docs/sandbox.md says what that leaves open).
    // The records' folder of every state folder a run may use is the gate's own, and hidden:
    // written inside, a record would have a run remove empty files anywhere, and a lock held
    // inside would stop every later run (found by reviews). A run uses the first that can be
    // made, and is refused when that one fails it: falling back on any failure split runs
    // across two sets of records, and the first to end took the other's mounts away (a review).
    // The others are hidden where they exist, and not made (each HOME a run is given would
    // gain an empty one).
    let mut folders = Vec::new();
    let mut failure = None;
    for state in super::sharing::state_folders() {
        let made = if folders.is_empty() {
            super::sharing::folder(&state)
        } else {
            let folder = state.join(super::sharing::FOLDER);
            if !folder.is_dir() {
                continue;
            }
            Ok(folder)
        };
        match made {
            Ok(folder) => {
                own.push((folder, super::plan::HIDDEN_OWN_FOLDER.to_owned()));
                folders.push(state);
            }
            Err(err) => failure = Some(err),
        }
    }
    let lock = match (folders.first(), failure) {
        // The plan refuses a root it cannot find.
        _ if std::fs::canonicalize(&root).is_err() => None,
        (Some(state), _) => Some(RunRecord::join(state)?),
        (None, Some(err)) => return Err(err),
        (None, None) => None,
    };
    let others = match &lock {
        Some(lock) => lock.recorded()?,
        None => Vec::new(),
    };
    let sandbox = Sandbox::from_policy_among(&policy, &root, home.as_deref(), &own, &others)?;
    let recorder = Arc::new(Recorder::new(log, options.id.clone(), options.who.clone()));
    let folder = RunFolder::create()?;
    let listener = UnixListener::bind(&folder.socket)
        .map_err(SandboxError::io("listening on the proxy's socket"))?;
    let placeholders = Placeholders::create(sandbox.placeholders(), sandbox.stands_on(), lock)?;
    // After the runs' lock is let go: copying a repository's `info` folder takes as long as its
    // files, and other runs must not wait on it (a review).
    folder.write_git_views(sandbox.git_views())?;
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
        let program_files = program::tmp_files(self.sandbox, &options.program, &options.args);
        let args = bwrap::arguments(
            self.sandbox,
            &self.folder.files,
            self.helper,
            &chdir,
            fds,
            &program_files,
        );
        let mut command = Command::new(self.bwrap);
        command
            .args(&args)
            .arg(&options.program)
            .args(&options.args)
            .env_remove(REPORT_FD_ENV)
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
        judge(&read_available(status_read), exit, &options.program)
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
fn judge(
    lines: &[String],
    bwrap: std::process::ExitStatus,
    program: &std::ffi::OsStr,
) -> Result<Ended, SandboxError> {
    let started = lines.iter().any(|line| line == "started");
    for line in lines {
        if let Some(why) = line.strip_prefix("error ") {
            if !started {
                return Err(SandboxError::Start(why.to_owned()));
            }
        } else if let Some(rest) = line.strip_prefix("spawn ") {
            let (code, why) = rest.split_once(' ').unwrap_or((rest, ""));
            let status = code.parse().unwrap_or(EXIT_SANDBOX_FAILURE);
            let hint = match status {
                127 => program::not_found_hint(program).unwrap_or_default(),
                _ => String::new(),
            };
            eprintln!("sc-sandbox: {why}{hint}");
            return Ok(Ended {
                status,
                signal: None,
                ran: false,
            });
        } else if let Some(rest) = line.strip_prefix("exit ") {
            let mut words = rest.split(' ');
            let status = words.next().and_then(|w| w.parse().ok());
            let signal = match (words.next(), words.next()) {
                (Some("signal"), Some(n)) => n.parse().ok(),
                _ => None,
            };
            if let Some(status) = status {
                return Ok(Ended {
                    status,
                    signal,
                    ran: true,
                });
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
        ran: true,
    })
}

/// Runs and maps every failure of sc-sandbox itself to 125, told on stderr, and on the door's
/// report pipe when one is named ([`REPORT_FD_ENV`]).
pub fn run_to_status(options: &RunOptions) -> u8 {
    let mut report = report_pipe();
    let mut tell = |line: String| {
        if let Some(pipe) = report.as_mut() {
            let _ = pipe.write_all(format!("{}\n", line.replace('\n', " ")).as_bytes());
        }
    };
    match run(options) {
        Ok(ended) if ended.ran => {
            tell(format!("ran {}", ended.status));
            ended.status
        }
        Ok(ended) => {
            tell(format!(
                "not-run {} the program could not be started inside",
                ended.status
            ));
            ended.status
        }
        Err(err) => {
            tell(format!("failed {err}"));
            eprintln!("sc-sandbox: {err}");
            EXIT_SANDBOX_FAILURE
        }
    }
}

/// The pipe [`REPORT_FD_ENV`] names, when it names an open pipe; kept from the sandbox (closed on
/// exec, and every descriptor is closed for bubblewrap anyway).
fn report_pipe() -> Option<File> {
    use std::os::fd::FromRawFd;
    let fd: i32 = std::env::var(REPORT_FD_ENV).ok()?.parse().ok()?;
    if fd <= 2 {
        return None;
    }
    // SAFETY: fstat and fcntl on a number only look at or flag what it names.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut stat) != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFIFO {
            return None;
        }
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        // SAFETY: the door passed this pipe for sc-sandbox's report alone.
        Some(File::from_raw_fd(fd))
    }
}

/// What a door reads on its report pipe: how sc-sandbox's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The program started; the status is its own (125 included).
    Ran(u8),
    /// The program was not started inside (not found: 127, not executable: 126).
    NotRun { status: u8, why: String },
    /// sc-sandbox itself failed, or said nothing (it died, or did not understand its flags).
    Failed(Option<String>),
}

impl Report {
    /// The report in `bytes` (what was read from the pipe).
    pub fn parse(bytes: &[u8]) -> Report {
        let text = String::from_utf8_lossy(bytes);
        let line = text.lines().next().unwrap_or_default();
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let (status, why) = rest.split_once(' ').unwrap_or((rest, ""));
        match (word, status.parse::<u8>()) {
            ("ran", Ok(status)) if why.is_empty() => Report::Ran(status),
            ("not-run", Ok(status)) => Report::NotRun {
                status,
                why: why.to_owned(),
            },
            ("failed", _) if !rest.is_empty() => Report::Failed(Some(rest.to_owned())),
            _ => Report::Failed(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_line_is_read_back() {
        assert_eq!(Report::parse(b"ran 125\n"), Report::Ran(125));
        assert_eq!(Report::parse(b"ran 0\n"), Report::Ran(0));
        assert_eq!(
            Report::parse(b"not-run 127 no such file\n"),
            Report::NotRun {
                status: 127,
                why: "no such file".into()
            }
        );
        assert_eq!(
            Report::parse(b"failed bubblewrap is missing: x\n"),
            Report::Failed(Some("bubblewrap is missing: x".into()))
        );
        for nothing in [&b""[..], b"ran", b"ran x", b"ran 300", b"ran 1 2", b"hello"] {
            assert_eq!(Report::parse(nothing), Report::Failed(None));
        }
    }
}
