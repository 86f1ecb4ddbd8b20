//! sc-hook's deadline. An agent that stops waiting for its hook runs the tool call as if there
//! were no hook (Claude Code, Codex and Gemini CLI after their `timeout`): a hook stuck on a
//! locked state store, a slow resolver or an input that never ends would let the call through.
//! So sc-hook arms a timer (`alarm`) before it reads its input, below the timeout
//! `sc-hook install` gives each agent, and when it fires the agent gets the hook's refusal (its
//! contract's block: exit status 2, or a deny answer) and the process ends at once.
//!
//! What runs in the signal handler is what a handler may run: loads of atomics, `write` of bytes
//! made beforehand, and `_exit`. A kill (`SIGKILL`, the kernel's out-of-memory killer) cannot be
//! answered by any process; docs/coding-agents.md says what each agent does then.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use skeleton_crew::stage::hook::contract::{answer, Agent, Event};

/// What a fired deadline writes, and the status it ends with.
struct Refusal {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: i32,
}

/// The refusal the deadline gives now: none before [`arm`] (then it ends with status 2).
static REFUSAL: AtomicPtr<Refusal> = AtomicPtr::new(std::ptr::null_mut());
/// Whether the hook began writing its own answer: a fired deadline then writes nothing more.
static ANSWERING: AtomicBool = AtomicBool::new(false);
/// Whether the deadline fired: a second firing (one second later, while a write of the first
/// blocks on a full pipe) ends the process at once.
static FIRED: AtomicBool = AtomicBool::new(false);

/// Ends the process with the agent's refusal ([`refuse_as`]) after `seconds`, unless it ended
/// before. Fails
/// when the signal's handler cannot be set (the caller refuses the call then).
pub fn arm(seconds: u32, agent: Agent) -> io::Result<()> {
    refuse_as(agent, None, seconds);
    // SAFETY: a handler that only loads atomics, writes, sets the alarm and calls _exit
    // (async-signal-safe). SA_NODEFER: its second firing may interrupt its first.
    let set = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = fired as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_NODEFER;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut())
    };
    if set != 0 {
        return Err(io::Error::last_os_error());
    }
    // A blocked signal is inherited through exec: a parent that blocked SIGALRM would leave the
    // deadline pending forever (found by a review).
    // SAFETY: a signal set of our own, changed for this thread (the only one yet).
    let unblocked = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGALRM);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut())
    };
    if unblocked != 0 {
        return Err(io::Error::from_raw_os_error(unblocked));
    }
    // SAFETY: alarm only sets this process's timer.
    unsafe { libc::alarm(seconds) };
    Ok(())
}

/// The refusal a fired deadline gives from now on: the agent's block for `event`, once the
/// input says which agent and event the call is.
pub fn refuse_as(agent: Agent, event: Option<Event>, seconds: u32) {
    let reason = format!(
        "the call was not decided within {seconds} s (--timeout), before the agent would stop \
         waiting and run the call"
    );
    let (line, status) = answer::refusal(agent, event, &reason);
    let refusal = Box::new(Refusal {
        stdout: line
            .map(|line| format!("{line}\n").into_bytes())
            .unwrap_or_default(),
        stderr: format!("sc-hook: {reason}; the tool call is blocked\n").into_bytes(),
        status: i32::from(status),
    });
    // Never freed: a handler may be reading the one before (the process is short-lived).
    REFUSAL.store(Box::into_raw(refusal), Ordering::Release);
}

/// The hook begins writing its own answer: a deadline that fires now ends the process with status
/// 2 and writes nothing, so that the agent never reads two answers (Copilot CLI reads a hook
/// that fails as a refusal; for Cursor nothing after a torn answer can block). Whether it had
/// begun before.
pub fn answering() -> bool {
    ANSWERING.swap(true, Ordering::AcqRel)
}

/// Standard output, with [`answering`] said before its first byte.
pub struct Answering<W: Write>(pub W);

impl<W: Write> Write for Answering<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        answering();
        self.0.write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

extern "C" fn fired(_signal: libc::c_int) {
    let refusal = REFUSAL.load(Ordering::Acquire);
    let answering = ANSWERING.load(Ordering::Acquire);
    // SAFETY: set from a leaked Box by refuse_as and never freed.
    let status = match unsafe { refusal.as_ref() } {
        Some(refusal) if !answering => refusal.status,
        _ => 2,
    };
    if FIRED.swap(true, Ordering::AcqRel) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(status) };
    }
    // The writes below may block (a pipe nobody reads): the process ends a second later anyway.
    // SAFETY: alarm is async-signal-safe.
    unsafe { libc::alarm(1) };
    let mut status = status;
    // SAFETY: as above.
    if let Some(refusal) = unsafe { refusal.as_ref() } {
        if !answering && !write_all(1, &refusal.stdout) {
            // The answer could not be given (a closed stdout): a status 0 would block nothing.
            status = 2;
        }
        write_all(2, &refusal.stderr);
    }
    // SAFETY: _exit is async-signal-safe; nothing is flushed or unwound.
    unsafe { libc::_exit(status) };
}

/// Every byte to `fd` as far as `write` takes them (in a signal handler: no allocation); whether
/// all were written.
fn write_all(fd: libc::c_int, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: a valid slice; write is async-signal-safe.
        let wrote = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if wrote <= 0 {
            if wrote < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        bytes = &bytes[wrote as usize..];
    }
    true
}
