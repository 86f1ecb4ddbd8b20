//! `--notify CMD`: a push to the person when a call is held, by a command of their own (a phone
//! push through ntfy, a chat webhook, a desktop notification). Nothing is built in.
//!
//! On every hold, [`Notifier::notify`] starts `sh -c CMD` with one JSON object on its stdin
//! ([`payload`]) and returns at once: the hold is asked while the command runs beside it. The
//! command is given [`NOTIFY_LIMIT`] (5 s), then its process group is killed. Its failure (it
//! cannot be started, it exits nonzero or by a signal, it runs over its time, it does not take
//! the hold on its stdin) is said on stderr and given by [`Notice::finish`] for the audit; it
//! never approves or declines anything: only the person's answer does.
//!
//! sc-approve uses it; sc-mcp and an inbox can too: all they need is a [`Hold`] and, when there
//! is a card, its address.

use std::fmt;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::value::RawValue;

use super::web::summary;
use super::Hold;
use crate::sanitize::for_terminal;

/// How long a notify command may run before its process group is killed.
pub const NOTIFY_LIMIT: Duration = Duration::from_secs(5);
/// How often a running notify command is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// Runs `sh -c CMD` on every hold it is told of.
#[derive(Debug, Clone)]
pub struct Notifier {
    command: String,
    /// The program that narrates a failure on stderr (`sc-approve`).
    program: &'static str,
    limit: Duration,
}

impl Notifier {
    pub fn new(command: impl Into<String>, program: &'static str) -> Notifier {
        Notifier {
            command: command.into(),
            program,
            limit: NOTIFY_LIMIT,
        }
    }

    /// The same with another time limit (tests).
    pub fn with_limit(mut self, limit: Duration) -> Notifier {
        self.limit = limit;
        self
    }

    /// The command, as given.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Starts the command for `hold`, with [`payload`] on its stdin; `url` is the card's address
    /// (with its token) when there is one. Returns at once.
    pub fn notify(&self, hold: &Hold<'_>, url: Option<&str>) -> Notice {
        let payload = payload(hold, url, SystemTime::now());
        let what = format!(
            "hold {} ({} \u{2192} {})",
            for_terminal(hold.id),
            for_terminal(&hold.call.agent),
            for_terminal(&hold.call.tool)
        );
        self.start(payload.into_bytes(), what)
    }

    fn start(&self, payload: Vec<u8>, what: String) -> Notice {
        let command = self.command.clone();
        let program = self.program;
        let limit = self.limit;
        let named = what.clone();
        let started = thread::Builder::new()
            .name("notify".into())
            .spawn(move || {
                let outcome = run(&command, payload, limit);
                if let Err(failure) = &outcome {
                    let _ = writeln!(
                        io::stderr(),
                        "{program}: --notify failed for {what}: {failure}; the hold is asked all the same"
                    );
                }
                outcome
            });
        match started {
            Ok(thread) => Notice {
                thread: Some(thread),
                failed: None,
            },
            Err(err) => {
                let failure = NotifyFailure::Start(format!("no thread to run it on: {err}"));
                let _ = writeln!(
                    io::stderr(),
                    "{}: --notify failed for {}: {failure}; the hold is asked all the same",
                    self.program,
                    named
                );
                Notice {
                    thread: None,
                    failed: Some(failure),
                }
            }
        }
    }
}

/// A notify command started for one hold.
#[derive(Debug)]
pub struct Notice {
    thread: Option<JoinHandle<Result<(), NotifyFailure>>>,
    failed: Option<NotifyFailure>,
}

impl Notice {
    /// Waits until the command has ended or been killed (at most its limit after it started),
    /// and returns its failure, if it failed (already said on stderr).
    pub fn finish(mut self) -> Option<NotifyFailure> {
        self.join()
    }

    fn join(&mut self) -> Option<NotifyFailure> {
        match self.thread.take() {
            Some(thread) => match thread.join() {
                Ok(outcome) => outcome.err(),
                Err(_) => Some(NotifyFailure::Start("its thread panicked".into())),
            },
            None => self.failed.take(),
        }
    }
}

impl Drop for Notice {
    /// No command outlives its limit, even one nobody waits for.
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// Why a notify command failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyFailure {
    /// `sh` could not be started.
    Start(String),
    /// It exited with a status other than 0.
    Status(i32),
    /// It was ended by a signal it was not sent here.
    Signal(i32),
    /// It ran over its time and was killed.
    TimedOut(Duration),
    /// It ended without taking the hold on its stdin.
    Input(String),
}

impl fmt::Display for NotifyFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotifyFailure::Start(why) => write!(f, "`sh -c` could not be started: {why}"),
            NotifyFailure::Status(code) => write!(f, "it exited with status {code}"),
            NotifyFailure::Signal(signal) => write!(f, "it was ended by signal {signal}"),
            NotifyFailure::TimedOut(limit) => {
                write!(f, "it ran over {} s and was killed", limit.as_secs_f64())
            }
            NotifyFailure::Input(why) => {
                write!(f, "it did not take the hold on its stdin: {why}")
            }
        }
    }
}

impl std::error::Error for NotifyFailure {}

/// The JSON object a notify command reads on its stdin: `agent`, `tool`, `args` (exactly as the
/// record has them), `reasons`, `digest` (the SHA-256 of the record line, as the web API binds an
/// answer to), `expiresAt` (RFC 3339, when the hold has a timeout), `url` (the card's address
/// with its token, when there is a card), and `summary` (the card's first line, agent-written
/// text escaped). `now` is when the hold was asked. One line, with its newline.
pub fn payload(hold: &Hold<'_>, url: Option<&str>, now: SystemTime) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Payload<'a> {
        agent: &'a str,
        tool: &'a str,
        args: Box<RawValue>,
        reasons: &'a [String],
        digest: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        expires_at: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        url: Option<&'a str>,
        summary: String,
    }
    let call = hold.call;
    let args = call.args.text();
    let args = RawValue::from_string(args.trim().to_owned())
        .unwrap_or_else(|_| serde_json::value::to_raw_value(args).expect("a string serializes"));
    let payload = Payload {
        agent: &call.agent,
        tool: &call.tool,
        args,
        reasons: hold.reasons,
        digest: hold.digest(),
        expires_at: hold
            .timeout
            .map(|timeout| humantime::format_rfc3339_seconds(now + timeout).to_string()),
        url,
        summary: summary(&call.agent, &call.tool, call.args.text()),
    };
    let mut line = serde_json::to_string(&payload).expect("a payload serializes");
    line.push('\n');
    line
}

/// Runs `sh -c command` with `payload` on its stdin, in a process group of its own, for at most
/// `limit`; then kills the group.
fn run(command: &str, payload: Vec<u8>, limit: Duration) -> Result<(), NotifyFailure> {
    let started = Instant::now();
    // Its stdout goes to stderr: stdout carries records.
    let stdout = io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_or_else(|_| Stdio::null(), Stdio::from);
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .process_group(0)
        .spawn()
        .map_err(|err| NotifyFailure::Start(err.to_string()))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    // On a thread: a command that does not read may leave a large hold unwritten.
    let writer = thread::Builder::new()
        .name("notify-input".into())
        .spawn(move || stdin.write_all(&payload));
    let writer = match writer {
        Ok(writer) => writer,
        Err(err) => {
            kill_group(&mut child);
            return Err(NotifyFailure::Start(format!(
                "no thread to write its input: {err}"
            )));
        }
    };
    let mut status: Option<ExitStatus> = None;
    loop {
        if status.is_none() {
            match child.try_wait() {
                Ok(done) => status = done,
                Err(err) => {
                    kill_group(&mut child);
                    return Err(NotifyFailure::Start(format!("cannot wait for it: {err}")));
                }
            }
        }
        if let Some(status) = status.filter(|_| writer.is_finished()) {
            let written = writer
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the writer panicked")));
            return match (status.code(), status.signal()) {
                (Some(0), _) => written.map_err(|err| NotifyFailure::Input(err.to_string())),
                (Some(code), _) => Err(NotifyFailure::Status(code)),
                (None, Some(signal)) => Err(NotifyFailure::Signal(signal)),
                (None, None) => Err(NotifyFailure::Status(-1)),
            };
        }
        if started.elapsed() >= limit {
            // The writer, if still blocked, ends when the group's end closes the pipe (or is
            // left behind, when something outside the group holds it open).
            kill_group(&mut child);
            return Err(NotifyFailure::TimedOut(limit));
        }
        thread::sleep(LOOK_EVERY);
    }
}

/// Kills the command's whole process group (the shell and what it started) and reaps the shell.
fn kill_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
#[path = "notify_tests.rs"]
mod tests;
