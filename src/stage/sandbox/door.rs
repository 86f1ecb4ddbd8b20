//! The one door to sc-sandbox, used by sc-hook (a `Bash` call the policy confines), sc-exec (a
//! tools-file entry with `"sandbox": true`) and sc-mcp (the MCP server under `--sandbox`): every
//! step they share to confine a program is here, once, in [`SandboxDoor::confine_call`]:
//!
//! 1. bubblewrap is found ([`bwrap::locate`]);
//! 2. sc-sandbox is found beside the running binary ([`Invocation::beside_current_exe`]), or
//!    where the door was told, and is an executable file;
//! 3. the kernel is asked, as the door's [`Check`] says: by a trial in an empty root, remembered
//!    in the state folder ([`probe::can_confine`], sc-hook), by making the sandbox once around
//!    `true` as it will be for the program ([`Confined::trial`], sc-mcp), or only when the
//!    program runs (sc-exec: sc-sandbox's own status 125, told on the [`ReportPipe`]);
//! 4. the door's files are made absolute (sc-sandbox runs in the call's folder, not the door's),
//!    and the policy's `sandbox` key is placed under the root and home with them as the gate's
//!    own ([`Sandbox::from_policy`]);
//! 5. sc-sandbox's command line is made ([`Invocation`]).
//!
//! Where one step fails, the program is never run unconfined: the error ([`Unconfinable`]) names
//! what is missing in the same words for every door, and the door holds, declines or fails the
//! call with it. What differs stays in the doors: where the root is (sc-hook's project, else the
//! working folder: [`SandboxDoor::confine`]), how sc-hook rewrites the command for the agent, how
//! sc-exec runs a backend, how sc-mcp starts its server.
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

use super::bwrap::{self, BWRAP_ENV};
use super::run::{own_files, Report, RunOptions, REPORT_FD_ENV};
use super::{probe, Invocation, Sandbox, Unconfinable};
use crate::rules::policy::Policy;
use crate::store::StateUrl;

/// How long [`Confined::trial`] waits for sc-sandbox's trial run before taking the sandbox as one
/// that cannot be made.
pub const TRIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// The gate's own files as the door was given them, for sc-sandbox's command line.
#[derive(Debug, Clone)]
pub struct SandboxDoor {
    /// The door's name, for the reasons (`sc-hook`, `sc-exec`, `sc-mcp`).
    pub door: &'static str,
    /// `--policy`; `None`: the built-in defaults (no `sandbox` key: no extra paths, no hosts).
    pub policy: Option<PathBuf>,
    /// The audit log the door appends to.
    pub audit: Option<PathBuf>,
    /// `--audit-key`; `None`: for a door that runs programs from its working folder,
    /// `SC_AUDIT_KEY_FILE`, read here (a backend's environment is its own, so sc-sandbox would
    /// not see it).
    pub audit_key: Option<PathBuf>,
    /// The state store, when it is a SQLite file (a Redis URL is not passed on: it may hold a
    /// password, and sc-hook's command is shown to the model and the user).
    pub state: Option<PathBuf>,
    /// `--crew`.
    pub crew: Option<String>,
    /// The sc-sandbox binary; `None`: beside the running binary.
    pub exe: Option<PathBuf>,
}

/// How a door finds out, before the program runs, whether the kernel makes the sandbox here
/// (a kernel can refuse the namespaces, and that shows only when bubblewrap tries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check<'a> {
    /// Not before: the program's run says it (sc-sandbox's own status 125, and its report
    /// pipe). sc-exec, which runs one backend a call.
    AtRun,
    /// sc-sandbox run once around `true` in an empty root, a success remembered in the state
    /// folder `cache` (`None`: tried every time) ([`probe::can_confine`]). sc-hook, a new process
    /// for every call.
    Probe { cache: Option<&'a Path> },
    /// The sandbox made once around `true`, as it will be for the program ([`Confined::trial`]).
    /// sc-mcp, which starts one long-lived server.
    Trial,
}

/// One program to confine: where, in whose name, and how the kernel is checked.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The sandbox's writable root.
    pub root: &'a Path,
    /// The agent the program runs for.
    pub agent: &'a str,
    /// The agent's session (sc-hook's), for sc-sandbox's events.
    pub session: Option<&'a str>,
    /// The door's call id, which sc-sandbox's audit events carry.
    pub id: Option<&'a str>,
    pub check: Check<'a>,
}

/// A program's confinement, checked: sc-sandbox's command line, and the bubblewrap that was
/// found, which sc-sandbox is told to use (`SC_SANDBOX_BWRAP`) so that it runs the one checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confined {
    pub invocation: Invocation,
    pub bwrap: PathBuf,
}

impl SandboxDoor {
    /// sc-sandbox's command line for a program a door runs from its working folder (sc-exec's
    /// backends, sc-mcp's server): rooted at the policy's root (`--root`), else the working
    /// folder, with the audit key `SC_AUDIT_KEY_FILE` names when none was given; the rest is
    /// [`SandboxDoor::confine_call`].
    pub fn confine(
        &self,
        policy: &Policy,
        agent: &str,
        id: Option<&str>,
        check: Check<'_>,
    ) -> Result<Confined, Unconfinable> {
        let root = match &policy.places().root {
            Some(root) => root.clone(),
            None => std::env::current_dir().map_err(|err| {
                format!("cannot find the working folder to root the sandbox in: {err}")
            })?,
        };
        let door = SandboxDoor {
            audit_key: self.audit_key.clone().or_else(|| {
                std::env::var_os(crate::audit::chain::AUDIT_KEY_ENV)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            }),
            ..self.clone()
        };
        door.confine_call(
            policy,
            Call {
                root: &root,
                agent,
                session: None,
                id,
                check,
            },
        )
    }

    /// The one function every door confines a program with: the steps of the module's doc, in
    /// that order; `Err`: why the sandbox cannot be made here, naming what is missing.
    pub fn confine_call(&self, policy: &Policy, call: Call<'_>) -> Result<Confined, Unconfinable> {
        let bwrap = bwrap::locate().map_err(|err| err.to_string())?;
        let exe = self.sc_sandbox()?;
        if let Check::Probe { cache } = call.check {
            probe::can_confine(&exe, &bwrap, cache)?;
        }
        let home = policy.places().home.clone();
        let absolute = |path: &Option<PathBuf>| {
            path.as_deref()
                .map(|path| std::path::absolute(path).unwrap_or_else(|_| path.to_owned()))
        };
        let policy_file = absolute(&self.policy);
        let audit = absolute(&self.audit);
        let audit_key = absolute(&self.audit_key);
        let state = absolute(&self.state);
        let run = RunOptions {
            policy: policy_file.clone(),
            root: Some(call.root.to_owned()),
            home: home.clone(),
            audit: audit.clone(),
            audit_key: audit_key.clone(),
            state: state.clone().map(StateUrl::Sqlite),
            ..RunOptions::default()
        };
        Sandbox::from_policy(policy, call.root, home.as_deref(), &own_files(&run))
            .map_err(|err| err.to_string())?;
        let confined = Confined {
            invocation: Invocation {
                exe,
                policy: policy_file,
                root: Some(call.root.to_owned()),
                home,
                audit,
                audit_key,
                state: state.as_ref().map(|file| file.display().to_string()),
                protect: Vec::new(),
                agent: Some(call.agent.to_owned()),
                crew: self.crew.clone(),
                session: call.session.map(str::to_owned),
                id: call.id.map(str::to_owned),
            },
            bwrap,
        };
        if call.check == Check::Trial {
            confined.trial()?;
        }
        Ok(confined)
    }

    /// The sc-sandbox binary: where the door was told, else beside the running binary; an
    /// executable file, or why not.
    fn sc_sandbox(&self) -> Result<PathBuf, Unconfinable> {
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
            )
            .into());
        }
        Ok(exe)
    }
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
    pub fn trial(&self) -> Result<(), Unconfinable> {
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
#[path = "door_tests.rs"]
mod tests;
