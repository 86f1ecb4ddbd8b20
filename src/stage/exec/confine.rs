//! The door of sc-exec and sc-mcp to sc-sandbox: a tools-file entry with `"sandbox": true`, and
//! the MCP server under `sc-mcp --sandbox`, run inside sc-sandbox with the door's policy file
//! (its `sandbox` key's paths and network; `when` is not read: these always confine), root
//! (`--root`, else the working folder), home, audit log and key, state store, agent and crew.
//!
//! Before anything starts, [`SandboxDoor::confine`] checks that the sandbox can be made here:
//! bubblewrap is found ([`bwrap::locate`]), sc-sandbox is an executable file beside the running
//! binary, and the policy's `sandbox` key can be placed under this root and home
//! ([`Sandbox::from_policy`]). Where one of them is missing, the program is never run
//! unconfined: the error names what is missing, and the door does not run it.
//!
//! A kernel that refuses the namespaces is found only when bubblewrap runs. sc-mcp, which starts
//! one long-lived server, first makes the sandbox once around `true` ([`Confined::trial`]): if
//! sc-sandbox ends that with its own status 125, the sandbox cannot be made here either.
//!
//! Status 125 alone does not say whose it is: a program may exit 125 itself, and print
//! `sc-sandbox: …` too. sc-sandbox tells the door on a pipe of its own ([`ReportPipe`],
//! [`REPORT_FD_ENV`]) whether the program ran; the door believes that, not the status and stderr.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::rules::policy::Policy;
use crate::stage::sandbox::bwrap::{self, BWRAP_ENV};
use crate::stage::sandbox::run::{own_files, Report, RunOptions, REPORT_FD_ENV};
use crate::stage::sandbox::{probe, Invocation, Sandbox};
use crate::store::StateUrl;

/// How long [`Confined::trial`] waits for sc-sandbox's trial run before taking the sandbox as one
/// that cannot be made.
const TRIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// The gate's own files as the door was given them, for sc-sandbox's command line.
#[derive(Debug, Clone)]
pub struct SandboxDoor {
    /// The door's name, for the reasons (`sc-exec`, `sc-mcp`).
    pub door: &'static str,
    /// `--policy`; `None`: the built-in defaults (no `sandbox` key: no extra paths, no hosts).
    pub policy: Option<PathBuf>,
    /// The audit log the door appends to.
    pub audit: Option<PathBuf>,
    /// `--audit-key`; `None`: `SC_AUDIT_KEY_FILE`, read here (a backend's environment is its
    /// own, so sc-sandbox would not see it).
    pub audit_key: Option<PathBuf>,
    /// The state store, when it is a SQLite file (a Redis URL is not passed on: it may hold a
    /// password).
    pub state: Option<PathBuf>,
    /// `--crew`.
    pub crew: Option<String>,
    /// The sc-sandbox binary; `None`: beside the running binary.
    pub exe: Option<PathBuf>,
}

/// A program's confinement, checked: sc-sandbox's command line, and the bubblewrap that was
/// found, which sc-sandbox is told to use (`SC_SANDBOX_BWRAP`) so that it runs the one checked.
#[derive(Debug, Clone)]
pub struct Confined {
    pub invocation: Invocation,
    pub bwrap: PathBuf,
}

impl Confined {
    /// A [`Command`] that runs `program` under sc-sandbox. Its environment is the caller's to
    /// set; [`Confined::bwrap_env`] names the bubblewrap to use.
    pub fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        self.invocation.command(program, args)
    }

    /// The variable that tells sc-sandbox which bubblewrap to run: the one found here.
    pub fn bwrap_env(&self) -> (&'static str, &Path) {
        (BWRAP_ENV, &self.bwrap)
    }

    /// Makes the sandbox once around `true`, as it would be made for the program, and says why
    /// it cannot be made here when sc-sandbox ends with its own status 125 (a kernel without user
    /// namespaces, a bubblewrap that fails), or does not end within [`TRIAL_TIMEOUT`]. Any other
    /// status (a `true` missing inside, say) is the program's own: the sandbox was made. The
    /// audit log and its key are kept read-only inside rather than written: the trial runs
    /// nothing worth recording.
    pub fn trial(&self) -> Result<(), crate::stage::sandbox::Unconfinable> {
        let mut invocation = self.invocation.clone();
        invocation.protect.extend(invocation.audit.take());
        invocation.protect.extend(invocation.audit_key.take());
        invocation.id = None;
        let mut command = invocation.command(OsStr::new("true"), &[]);
        command.env(BWRAP_ENV, &self.bwrap);
        let report = ReportPipe::attach(&mut command)
            .map_err(|err| format!("cannot make a pipe for sc-sandbox's report: {err}"))?;
        let trial = probe::trial_run(&mut command, TRIAL_TIMEOUT).map_err(|why| {
            match why.strip_prefix("cannot be started") {
                Some(rest) => format!(
                    "sc-sandbox ({}) cannot be started{rest}",
                    invocation.exe.display()
                ),
                None => format!("sc-sandbox's trial run {why}"),
            }
        })?;
        drop(command);
        match report.read() {
            Report::Ran(_) | Report::NotRun { .. } => Ok(()),
            Report::Failed(why) => Err(format!(
                "sc-sandbox could not make the sandbox (status {}): {}",
                trial
                    .status
                    .code()
                    .map_or_else(|| trial.status.to_string(), |code| code.to_string()),
                why.as_deref()
                    .or_else(|| sandbox_failure(&trial.stderr))
                    .unwrap_or("it gave no reason")
            )
            .into()),
        }
    }
}

impl SandboxDoor {
    /// sc-sandbox's command line for a program run in the name of `agent` (with the call id
    /// `id`, which sc-sandbox's audit events carry), once everything it needs is known to be
    /// there; else why the sandbox cannot be made, naming what is missing.
    pub fn confine(
        &self,
        policy: &Policy,
        agent: &str,
        id: Option<&str>,
    ) -> Result<Confined, crate::stage::sandbox::Unconfinable> {
        let absolute = |path: &Option<PathBuf>| {
            path.as_deref()
                .map(|path| std::path::absolute(path).unwrap_or_else(|_| path.to_owned()))
        };
        let places = policy.places();
        let root = match &places.root {
            Some(root) => root.clone(),
            None => std::env::current_dir().map_err(|err| {
                format!("cannot find the working folder to root the sandbox in: {err}")
            })?,
        };
        let home = places.home.clone();
        let bwrap = bwrap::locate().map_err(|err| err.to_string())?;
        let exe = match &self.exe {
            Some(exe) => exe.clone(),
            None => Invocation::beside_current_exe()
                .map_err(|err| format!("cannot find {}'s own binary: {err}", self.door))?,
        };
        if !bwrap::is_executable(&exe) {
            return Err(format!(
                "sc-sandbox is missing: {} is not an executable file (install sc-sandbox beside {})",
                exe.display(),
                self.door
            ).into());
        }
        let policy_file = absolute(&self.policy);
        let audit = absolute(&self.audit);
        let audit_key = absolute(&self.audit_key).or_else(|| {
            absolute(
                &std::env::var_os(crate::audit::chain::AUDIT_KEY_ENV)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from),
            )
        });
        let state = absolute(&self.state);
        let run = RunOptions {
            policy: policy_file.clone(),
            root: Some(root.clone()),
            home: home.clone(),
            audit: audit.clone(),
            audit_key: audit_key.clone(),
            state: state.clone().map(StateUrl::Sqlite),
            ..RunOptions::default()
        };
        Sandbox::from_policy(policy, &root, home.as_deref(), &own_files(&run))
            .map_err(|err| err.to_string())?;
        Ok(Confined {
            invocation: Invocation {
                exe,
                policy: policy_file,
                root: Some(root),
                home,
                audit,
                audit_key,
                state: state.as_ref().map(|file| file.display().to_string()),
                protect: Vec::new(),
                agent: Some(agent.to_owned()),
                crew: self.crew.clone(),
                session: None,
                id: id.map(str::to_owned),
            },
            bwrap,
        })
    }
}

/// The reading end of the pipe on which sc-sandbox tells its door how the run ended
/// ([`REPORT_FD_ENV`]): attach it to sc-sandbox's [`Command`] before spawning, read it once the
/// process has ended.
#[derive(Debug)]
pub struct ReportPipe {
    read: OwnedFd,
}

impl ReportPipe {
    /// Makes the pipe, names its writing end in `command`'s environment, and has the child alone
    /// inherit it (it is closed on exec for every other process this one starts). This process's
    /// copy of the writing end is closed when `command` is dropped.
    pub fn attach(command: &mut Command) -> std::io::Result<ReportPipe> {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let fd = write.as_raw_fd();
        command.env(REPORT_FD_ENV, fd.to_string());
        // SAFETY: one fcntl between fork and exec, async-signal-safe; the closure owns the
        // descriptor, so the number stays valid until `command` is dropped.
        unsafe {
            command.pre_exec(move || {
                if libc::fcntl(write.as_raw_fd(), libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(ReportPipe { read })
    }

    /// What sc-sandbox said, without waiting for more (it has ended): nothing is a failure of its
    /// own.
    pub fn read(self) -> Report {
        let _ = nix::fcntl::fcntl(
            &self.read,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        );
        let mut bytes = Vec::new();
        let _ = File::from(self.read)
            .take(64 * 1024)
            .read_to_end(&mut bytes);
        Report::parse(&bytes)
    }
}

/// The last line sc-sandbox wrote about its own failure (`sc-sandbox: …`) in `stderr`, if any:
/// with exit status 125, the sandbox could not be made and the program did not run.
pub fn sandbox_failure(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix("sc-sandbox: "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sc_sandboxs_own_failure_is_found_in_stderr() {
        assert_eq!(
            sandbox_failure("x\nsc-sandbox: bubblewrap is missing: no bwrap on PATH\n"),
            Some("bubblewrap is missing: no bwrap on PATH")
        );
        assert_eq!(sandbox_failure("the program's own error"), None);
    }

    #[test]
    fn a_missing_sc_sandbox_is_named() {
        let door = SandboxDoor {
            door: "sc-exec",
            policy: None,
            audit: None,
            audit_key: None,
            state: None,
            crew: None,
            exe: Some("/nonexistent/sc-sandbox".into()),
        };
        let policy = Policy::load_or_default(None).unwrap();
        match door.confine(&policy, "a", None) {
            // Where bubblewrap is missing, that is named first.
            Err(why) => assert!(
                why.contains("sc-sandbox is missing") || why.contains("bubblewrap is missing"),
                "{why}"
            ),
            Ok(confined) => panic!("confined with a missing sc-sandbox: {confined:?}"),
        }
    }
}
