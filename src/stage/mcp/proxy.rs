//! The whole run: the web page, the server's process, the threads, the client's input read to
//! its end, and the exit status.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsFd;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use indexmap::IndexMap;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

use super::client::ClientSide;
use super::holds::{expire_holds, settle_page_holds, Page, PageEvent};
use super::inbox::{settle_inbox_holds, InboxEvent, InboxLink};
use super::pending::{Asked, HeldCall, Pending};
use super::protocol::INVALID_REQUEST;
use super::server::relay_server;
use super::session::{lock, Ending, Session};
use super::upstream::{Upstream, UpstreamError};
use super::{Asking, McpOptions};
use crate::approve::elicitation::Questions;
use crate::approve::inbox::InboxDoor;
use crate::approve::web::{self, WebApprovals};
use crate::approve::Human;
use crate::audit::{AuditLog, IdMinter};
use crate::jsonl::{self, Line, LineReader};
use crate::rules::state::CrewState;
use crate::store::inbox::Door;
use crate::store::StateHandle;
use crate::store::{OpenOptions, StateUrl};

/// How long the server has to exit after the client closed its input, before SIGTERM, and again
/// before SIGKILL.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// The client's input, which the server's end can interrupt

/// Stdin that reads as ended once the wake pipe is written to (the server's side has ended), so
/// the calling thread never stays blocked on a client that has nothing more to say.
struct WakeableInput {
    input: File,
    wake: PipeReader,
    woken: Arc<AtomicBool>,
}

impl Read for WakeableInput {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut fds = [
                PollFd::new(self.input.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.wake.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(errno) => return Err(io::Error::from(errno)),
            }
            if fds[1].revents().is_some_and(|events| !events.is_empty()) {
                self.woken.store(true, Ordering::SeqCst);
                return Ok(0);
            }
            if fds[0].revents().is_some_and(|events| !events.is_empty()) {
                return match self.input.read(buf) {
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                    other => other,
                };
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The whole run

/// Runs the proxy until the client closes its input or the server ends; returns the exit status.
pub fn run(
    options: &McpOptions,
    audit_log: AuditLog,
    command: &[OsString],
    human: &mut dyn Human,
) -> Result<u8> {
    let state = StateHandle::Memory(CrewState::new());
    run_with_state(options, audit_log, state, command, human)
}

/// [`run`], with the crew's state in memory (this process's alone) or in a shared store.
pub fn run_with_state(
    options: &McpOptions,
    audit_log: AuditLog,
    state: StateHandle,
    command: &[OsString],
    human: &mut dyn Human,
) -> Result<u8> {
    run_with_io(
        options,
        audit_log,
        state,
        ServerAt::Command(command),
        human,
        ClientIo::stdio()?,
    )
}

/// Where the client is: what it says (read until it ends) and where sc-mcp's answers go, one
/// JSON-RPC message a line. This process's stdin and stdout, or one HTTP client's messages
/// ([`super::listen`]).
pub struct ClientIo {
    pub input: OwnedFd,
    pub output: Box<dyn Write + Send>,
}

impl ClientIo {
    /// This process's stdin and stdout.
    pub fn stdio() -> Result<ClientIo> {
        Ok(ClientIo {
            input: io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .context("cannot read stdin")?,
            output: Box::new(io::stdout()),
        })
    }
}

/// Where the MCP server is: a command sc-mcp starts and speaks to over its stdin and stdout, or
/// a remote server spoken to over Streamable HTTP ([`super::upstream`]).
#[derive(Clone, Copy)]
pub enum ServerAt<'a> {
    Command(&'a [OsString]),
    Upstream(&'a Upstream),
}

/// The server's side while it runs: its process, or the thread that speaks to the remote server.
enum Running {
    Child(Child, Pid),
    Upstream(thread::JoinHandle<Result<(), UpstreamError>>),
}

/// The one run every door of sc-mcp makes (stdio, and each HTTP client of `--listen`): the
/// client's messages decided by the policy, the server's relayed, until the client's input ends
/// or the server's side does; returns the exit status.
pub fn run_with_io(
    options: &McpOptions,
    audit_log: AuditLog,
    state: StateHandle,
    server_at: ServerAt<'_>,
    human: &mut dyn Human,
    client_io: ClientIo,
) -> Result<u8> {
    let command =
        match server_at {
            ServerAt::Command(command) => Some(command.split_first().ok_or_else(|| {
                crate::error::UsageError("no MCP server command after `--`".into())
            })?),
            ServerAt::Upstream(_) => None,
        };
    // With --sandbox, the server starts under sc-sandbox or not at all: checked before anything
    // starts, and the sandbox made once around `true` (a kernel that refuses the namespaces shows
    // only then). Where it cannot be made, the server never runs unconfined: sc-mcp answers the
    // client itself, with no tools, and holds every call with the reason.
    let confined = match (&options.sandbox, command) {
        (Some(door), Some(_)) => match door.confine(
            &options.policy,
            &options.agent,
            None,
            crate::stage::sandbox::door::Check::Trial,
        ) {
            Ok(confined) => Some(confined),
            Err(why) => {
                return run_without_server(options, audit_log, state, human, &why, client_io)
            }
        },
        _ => None,
    };
    // The page is up before the server starts, so a port in use ends nothing but sc-mcp.
    let page = match options.asking {
        Asking::Wherever {
            web: Some(addr), ..
        } => {
            let (wake, events) = mpsc::channel();
            let settled = wake.clone();
            let web = WebApprovals::start(
                addr,
                "sc-mcp",
                Some(Box::new(move |_| {
                    let _ = settled.send(PageEvent::Changed);
                })),
            )?;
            web::announce("sc-mcp", web.url());
            Some((
                Page {
                    web: Arc::new(web),
                    wake,
                },
                events,
            ))
        }
        _ => None,
    };
    let inbox = match &options.inbox {
        Some(at) => {
            let store = at
                .state
                .open(OpenOptions {
                    create: true,
                    fsync: at.fsync,
                })
                .context("the crew's inbox is unavailable")?;
            let (wake, events) = mpsc::channel();
            let mut door = InboxDoor::new(store, at.crew.clone(), Door::Mcp);
            if let StateUrl::Sqlite(path) = &at.state {
                door = door.watching_file(path);
            }
            let link = InboxLink {
                door: Arc::new(Mutex::new(door)),
                deadlines: Arc::default(),
                wake,
            };
            Some((link, events))
        }
        None => None,
    };
    let (running, server_input, server_output): (
        Running,
        Box<dyn Write + Send>,
        Box<dyn Read + Send>,
    ) = match (command, server_at) {
        (Some((program, args)), _) => {
            let mut server = match &confined {
                Some(confined) => {
                    let mut command = confined.command(program, args);
                    let (name, bwrap) = confined.bwrap_env();
                    command.env(name, bwrap);
                    command
                }
                None => {
                    let mut command = Command::new(program);
                    command.args(args);
                    command
                }
            };
            // A session of its own: no controlling terminal, so the server cannot type an answer
            // into the terminal where sc-mcp asks a person (TIOCSTI on /dev/tty); a review had a
            // server approve its own payment so.
            // SAFETY: setsid is one system call, async-signal-safe; it allocates nothing and
            // touches no lock, which is all that is allowed between fork and exec.
            unsafe {
                server.pre_exec(|| {
                    nix::unistd::setsid()
                        .map(drop)
                        .map_err(std::io::Error::from)
                });
            }
            let mut child = server
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .with_context(|| {
                    format!(
                        "cannot start the MCP server {}",
                        Value::String(program.to_string_lossy().into_owned())
                    )
                })?;
            let output = child.stdout.take().expect("piped stdout");
            let input = child.stdin.take().expect("piped stdin");
            let pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid fits in i32"));
            (
                Running::Child(child, pid),
                Box::new(input),
                Box::new(output),
            )
        }
        (None, ServerAt::Upstream(upstream)) => {
            let (input, output, thread) = upstream.start(options.max_message_bytes)?;
            (Running::Upstream(thread), Box::new(input), Box::new(output))
        }
        (None, ServerAt::Command(_)) => unreachable!("a command was split above"),
    };
    let server_pid = match &running {
        Running::Child(_, pid) => Some(*pid),
        Running::Upstream(_) => None,
    };
    let (wake_reader, wake_writer) = io::pipe().context("cannot create a pipe")?;
    let session = Arc::new(new_session(
        options,
        audit_log,
        Some((server_input, server_pid, wake_writer)),
        None,
        client_io.output,
        state,
    ));
    let relay = {
        let session = Arc::clone(&session);
        let max = options.max_message_bytes;
        thread::Builder::new()
            .name("server-to-client".into())
            .spawn(move || relay_server(&session, server_output, max))
            .context("cannot start the relay thread")?
    };
    // Only calls asked through the client wait without blocking this thread, so only they need
    // a timer.
    let timer = match (options.asking, options.timeout) {
        (
            Asking::Wherever {
                elicitation: true, ..
            },
            Some(_),
        ) => {
            let session = Arc::clone(&session);
            Some(
                thread::Builder::new()
                    .name("hold-timeout".into())
                    .spawn(move || expire_holds(&session))
                    .context("cannot start the timeout thread")?,
            )
        }
        _ => None,
    };
    let (page, page_thread) = match page {
        Some((page, events)) => {
            let session = Arc::clone(&session);
            let web = Arc::clone(&page.web);
            let thread = thread::Builder::new()
                .name("web-answers".into())
                .spawn(move || settle_page_holds(&session, &web, &events))
                .context("cannot start the web page's thread")?;
            (Some(page), Some(thread))
        }
        None => (None, None),
    };
    let (inbox, inbox_thread) = match inbox {
        Some((link, events)) => {
            let session = Arc::clone(&session);
            let shared = link.clone();
            let timeout = options.timeout;
            let thread = thread::Builder::new()
                .name("inbox-answers".into())
                .spawn(move || settle_inbox_holds(&session, &shared, timeout, &events))
                .context("cannot start the inbox's thread")?;
            (Some(link), Some(thread))
        }
        None => (None, None),
    };

    let woken = Arc::new(AtomicBool::new(false));
    let input = WakeableInput {
        input: File::from(client_io.input),
        wake: wake_reader,
        woken: Arc::clone(&woken),
    };
    let mut client = ClientSide {
        session: &session,
        human,
        timeout: options.timeout,
        asking: options.asking,
        client_elicits: false,
        questions: Questions::default(),
        page,
        inbox,
        ids: IdMinter::new(),
        notifier: options.notify.clone(),
        retry: super::request_state::RetrySide::new(options.retries.clone()),
    };
    relay_client(&session, &mut client, input, options.max_message_bytes);
    let client_closed_first = !woken.load(Ordering::SeqCst) && !session.is_stopping();
    // Calls still waiting for the person are declined: nobody can act on an answer now.
    let why = if session.is_stopping() {
        "sc-mcp is stopping"
    } else if client_closed_first {
        "the client closed its input"
    } else {
        "the MCP server's side ended"
    };
    let unanswered: Vec<HeldCall> = {
        let mut pending = lock(&session.pending);
        pending.holds_closed = true;
        pending.held_ids.clear();
        pending.held.drain().map(|(_, call)| call).collect()
    };
    session.holds_changed.notify_all();
    if let Some(timer) = timer {
        let _ = timer.join();
    }
    if let Some(page) = &client.page {
        let _ = page.wake.send(PageEvent::End);
    }
    if let Some(thread) = page_thread {
        let _ = thread.join();
    }
    if let Some(inbox) = &client.inbox {
        let _ = inbox.wake.send(InboxEvent::End);
    }
    if let Some(thread) = inbox_thread {
        let _ = thread.join();
    }
    for call in unanswered {
        let call = call.noticed();
        let reason = format!("declined: {why} before the person answered");
        if !matches!(call.asked, Asked::Client(_)) {
            client.withdraw(&call.asked, &reason);
        }
        let approval = call.asked.declined(reason);
        // An audit failure has stopped the session already.
        let _ = session.decline_held(&call.id, &call.ticket, &call.reasons, &approval, true);
    }
    // Nothing more can be asked: the page stops serving.
    drop(client.page.take());
    // Closing the server's input is how MCP's stdio transport asks it to exit.
    drop(lock(&session.server).take());

    // The server has SHUTDOWN_GRACE to end by itself, then SIGTERM, then SIGKILL; a server whose
    // output stays open after that (a child of its holds it) is given up on.
    let started = Instant::now();
    let mut signals = vec![
        (SHUTDOWN_GRACE * 3, None),
        (SHUTDOWN_GRACE * 2, Some(Signal::SIGKILL)),
        (SHUTDOWN_GRACE, Some(Signal::SIGTERM)),
    ];
    let mut relay_done = true;
    while !relay.is_finished() {
        if let Some(&(after, signal)) = signals.last() {
            if started.elapsed() >= after {
                signals.pop();
                match signal {
                    Some(signal) => {
                        session.killed_by_us.store(true, Ordering::SeqCst);
                        if let Some(pid) = server_pid {
                            let _ = kill(pid, signal);
                        }
                    }
                    None => {
                        relay_done = false;
                        break;
                    }
                }
            }
        }
        thread::sleep(Duration::from_millis(10));
    }
    if relay_done {
        let _ = relay.join();
    } else {
        session.stop(anyhow!(
            "the MCP server's output stayed open after it was killed; giving up on it"
        ));
    }
    let status = match running {
        Running::Child(mut child, _) => child.wait().context("cannot wait for the MCP server")?,
        Running::Upstream(thread) => {
            use std::os::unix::process::ExitStatusExt;
            match thread.join() {
                Ok(Ok(())) => ExitStatus::from_raw(0),
                Ok(Err(err)) => {
                    session.warn(&err.to_string());
                    ExitStatus::from_raw(1 << 8)
                }
                Err(_) => ExitStatus::from_raw(1 << 8),
            }
        }
    };
    let ending = std::mem::take(&mut *lock(&session.ending));
    let killed = session.killed_by_us.load(Ordering::SeqCst);
    Ok(exit_status(
        &session,
        ending,
        status,
        client_closed_first,
        killed,
        confined.is_some(),
    ))
}

/// The session both kinds of run share: with the server's input, pid and the pipe that wakes the
/// client's reader, or with none of them and the reason no server was started.
fn new_session(
    options: &McpOptions,
    audit_log: AuditLog,
    server: Option<(Box<dyn Write + Send>, Option<Pid>, PipeWriter)>,
    no_server: Option<String>,
    client: Box<dyn Write + Send>,
    state: StateHandle,
) -> Session {
    let (stdin, pid, wake) = match server {
        Some((stdin, pid, wake)) => (Some(stdin), pid, Some(wake)),
        None => (None, None, None),
    };
    let reading = stdin.is_some();
    Session {
        policy: options.policy.clone(),
        agent: options.agent.clone(),
        quiet: options.quiet,
        audit: Mutex::new(audit_log),
        client: Mutex::new(client),
        server: Mutex::new(stdin),
        pending: Mutex::new(Pending {
            server_reading: reading,
            requests: HashMap::new(),
            cancelled: IndexMap::new(),
            ..Pending::default()
        }),
        holds_changed: Condvar::new(),
        hold_timeout: options.timeout,
        ending: Mutex::new(Ending::default()),
        wake: Mutex::new(wake),
        server_pid: pid,
        no_server,
        killed_by_us: AtomicBool::new(false),
        taken: Mutex::new(Vec::new()),
        grants: options.grants.clone(),
        revisions: Default::default(),
        place: super::session::StatePlace::of(&state),
        state: Mutex::new(state),
        timing: options.timing.clone(),
    }
}

/// Reads the client's messages, one bounded line at a time, until its input ends (or reads as
/// ended) or the session stops.
fn relay_client(session: &Session, client: &mut ClientSide, input: impl Read, max: usize) {
    let mut reader = LineReader::new(input, max);
    loop {
        if session.is_stopping() {
            break;
        }
        let line = match reader.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(err) => {
                session.warn(&format!("cannot read the client's input: {err}"));
                break;
            }
        };
        let handled = match line {
            Line::Text(bytes) if jsonl::is_blank(bytes) => Ok(()),
            Line::Text(bytes) => client.handle(bytes),
            Line::TooLong { length, start } => {
                let reason =
                    format!("the message is {length} bytes, over the limit of {max} bytes");
                client.refuse(start, &[], false, INVALID_REQUEST, &reason)
            }
        };
        if handled.is_err() {
            break;
        }
    }
}

/// `--sandbox` where the sandbox cannot be made (`why` names what is missing): the server is
/// never started, and sc-mcp stays up as an MCP server of its own until the client closes its
/// input. It answers `initialize` (its instructions say why no tools are there), `tools/list`
/// (no tools) and `ping`, and holds every `tools/call` with the reason: audited as a hold nobody
/// was asked about (`gate`, `approve` and `exec` events), and answered like a declined hold.
/// Exit status 0, or 1 if the audit log could not be written.
fn run_without_server(
    options: &McpOptions,
    audit_log: AuditLog,
    state: StateHandle,
    human: &mut dyn Human,
    why: &str,
    client_io: ClientIo,
) -> Result<u8> {
    let reason =
        format!("the sandbox cannot be made here, so the MCP server is not run unconfined: {why}");
    let _ = writeln!(
        io::stderr().lock(),
        "sc-mcp: --sandbox: {reason}; the MCP server is not started, and sc-mcp answers the client itself, with no tools, and holds every tools/call"
    );
    let session = new_session(
        options,
        audit_log,
        None,
        Some(reason),
        client_io.output,
        state,
    );
    let mut client = ClientSide {
        session: &session,
        human,
        timeout: options.timeout,
        asking: options.asking,
        client_elicits: false,
        questions: Questions::default(),
        page: None,
        inbox: None,
        ids: IdMinter::new(),
        notifier: options.notify.clone(),
        retry: super::request_state::RetrySide::new(options.retries.clone()),
    };
    relay_client(
        &session,
        &mut client,
        File::from(client_io.input),
        options.max_message_bytes,
    );
    let ending = std::mem::take(&mut *lock(&session.ending));
    if let Some(err) = ending.fatal {
        session.warn(&format!("{err:#}"));
        return Ok(crate::exit::RUNTIME_FAILURE);
    }
    Ok(crate::exit::SUCCESS)
}

fn exit_status(
    session: &Session,
    ending: Ending,
    status: ExitStatus,
    client_closed_first: bool,
    killed: bool,
    sandboxed: bool,
) -> u8 {
    if let Some(err) = ending.fatal {
        session.warn(&format!("{err:#}"));
        return crate::exit::RUNTIME_FAILURE;
    }
    if ending.client_gone {
        return crate::exit::SUCCESS;
    }
    let mut server = describe_status(status);
    if sandboxed && status.code() == Some(i32::from(crate::stage::sandbox::EXIT_SANDBOX_FAILURE)) {
        server.push_str(
            " (sc-sandbox's status when it cannot make the sandbox: then the server did not run, and sc-sandbox said why above)",
        );
    }
    if !client_closed_first {
        session.warn(&format!(
            "the MCP server {server} while the client was still connected{}",
            match ending.failed_requests {
                0 => String::new(),
                n => format!("; {n} request(s) waiting for it were answered with an error"),
            }
        ));
        return crate::exit::RUNTIME_FAILURE;
    }
    if ending.failed_requests > 0 {
        session.warn(&format!(
            "the MCP server {server} with {} request(s) still unanswered; they were answered with an error",
            ending.failed_requests
        ));
        return crate::exit::RUNTIME_FAILURE;
    }
    if !status.success() && !killed {
        session.warn(&format!("the MCP server {server}"));
        return crate::exit::RUNTIME_FAILURE;
    }
    crate::exit::SUCCESS
}

fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => "ended".to_owned(),
    }
}
