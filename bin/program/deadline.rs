//! sc-hook's deadline. An agent that stops waiting for its hook runs the tool call as if there
//! were no hook (Claude Code, Codex and Gemini CLI after their `timeout`): a hook stuck on a
//! locked state store, a slow resolver or an input that never ends would let the call through.
//! So sc-hook arms a timer (`alarm`) before it reads its input, below the timeout
//! `sc-hook install` gives each agent, and when it fires the agent gets the hook's refusal (its
//! contract's block: exit status 2, or a deny answer) and the process ends at once.
//!
//! A crash is refused the same way: an agent reads a hook killed by a signal as no answer, and
//! runs the call. From [`arm`] on, a fault (`SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`: a bug in
//! the C library, SQLite or a stack overflow) and an abort (`SIGABRT`) end the process with the
//! agent's refusal too.
//!
//! A stop is refused the same way: `SIGTERM`, `SIGINT` (a Ctrl-C in the agent's terminal reaches
//! its hooks too), `SIGHUP` and every other signal that would end the process ([`stops`]) end
//! it with the agent's refusal, never with no answer.
//! A parent that set one of them to be ignored keeps it ignored. Once the hook's own answer is
//! begun ([`answering`]), a stop waits: the answer is written, and the process ends with it.
//!
//! What runs in the signal handlers is what a handler may run: loads of atomics, `write` of
//! bytes made beforehand, and `_exit`. A kill (`SIGKILL`, the kernel's out-of-memory killer)
//! cannot be answered by any process; docs/coding-agents.md says what each agent does then.

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
/// The refusal a crash gives now, likewise.
static CRASH: AtomicPtr<Refusal> = AtomicPtr::new(std::ptr::null_mut());
/// The refusal a stop (`SIGTERM`, `SIGINT`, `SIGHUP`) gives now, likewise.
static STOPPED: AtomicPtr<Refusal> = AtomicPtr::new(std::ptr::null_mut());

/// The signals that ask a process to stop, refused from [`arm`] on unless a parent ignores them:
/// `SIGTERM`, `SIGINT`, `SIGHUP`, and every other named one whose default is to end the process
/// (`SIGQUIT`, a terminal's Ctrl-\; `SIGUSR1`, …: a review ended the hook with no answer by
/// each). `SIGPIPE` is ignored (a write to a closed pipe fails, and the failure is refused); a
/// crash's are [`CRASHES`]; `SIGALRM` is the deadline. The real-time signals, which no one
/// sends a hook, are left as they are: a handler each would cost every call 31 system calls.
fn stops() -> impl Iterator<Item = libc::c_int> {
    [
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGTRAP,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGIO,
        libc::SIGPWR,
        libc::SIGSTKFLT,
        libc::SIGVTALRM,
        libc::SIGPROF,
    ]
    .into_iter()
}

/// The signals of a crash, refused from [`arm`] on: faults, an abort, a bad system call, and
/// the CPU time limit (`ulimit -t`); the same list helper threads leave open. The file size
/// limit's (`SIGXFSZ`, `ulimit -f`) is ignored instead: the write then fails, and the failure is
/// refused as any other.
const CRASHES: [libc::c_int; 7] = skeleton_crew::stage::quiet_thread::FAULTS;

/// Whether the hook began writing its own answer: a fired deadline then writes nothing more.
static ANSWERING: AtomicBool = AtomicBool::new(false);
/// Whether the deadline fired: a second firing (one second later, while a write of the first
/// blocks on a full pipe) ends the process at once.
static FIRED: AtomicBool = AtomicBool::new(false);

/// Whether a crash is being answered (on whichever thread): the hook's own answer then waits
/// for the process to end rather than give a second answer, or an exit status of 0 while the
/// crash's refusal is still being written.
static CRASHING: AtomicBool = AtomicBool::new(false);

/// The signal mask the process started with, kept by [`hold_stops`] for [`release_stops`].
static STARTED_WITH: std::sync::OnceLock<Mask> = std::sync::OnceLock::new();

/// A signal set (a plain bit set, safe to share).
#[derive(Clone, Copy)]
struct Mask(libc::sigset_t);

/// Holds the stop signals until [`arm`] has set their handler: a stop in the first
/// milliseconds (while the command line is read) would end the process with no answer. Held,
/// a stop waits, and is refused as soon as the handler is set. So do the deadline's, a crash's
/// and the file size limit's signals, which sent from outside before [`arm`] would end it the
/// same way (a review did, with `kill -ALRM`); a fault of the program's own ends it either way.
pub fn hold_stops() {
    let mut held = signals(stops());
    for signal in CRASHES.into_iter().chain([libc::SIGALRM, libc::SIGXFSZ]) {
        // SAFETY: adds a valid signal number to a set of our own.
        unsafe { libc::sigaddset(&mut held.0, signal) };
    }
    // SAFETY: changes this thread's mask (the only thread yet), reading the one it replaces.
    let started_with = unsafe {
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &held.0, &mut before);
        before
    };
    let _ = STARTED_WITH.set(Mask(started_with));
}

/// Gives back the mask the process started with (install, doctor, another tool: a stop ends
/// them, and what they start inherits no signal held by this program).
pub fn release_stops() {
    if let Some(Mask(started_with)) = STARTED_WITH.get() {
        // SAFETY: sets this thread's mask to one the kernel gave.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, started_with, std::ptr::null_mut()) };
    }
}

/// The set of `signals`.
fn signals(signals: impl Iterator<Item = libc::c_int>) -> Mask {
    // SAFETY: a zeroed sigset_t emptied and filled with valid signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in signals {
            libc::sigaddset(&mut set, signal);
        }
        Mask(set)
    }
}

/// Blocks the stop signals on this thread, the one that takes them.
fn block_stops() {
    let stops = signals(stops());
    // SAFETY: adds signals of our own set to this thread's mask.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &stops.0, std::ptr::null_mut()) };
}

/// Stops the interval timers a parent left running: they survive `exec`, and their signals
/// (`SIGPROF`, `SIGVTALRM`, an early `SIGALRM`) would end the hook with no answer. A timer's
/// signal that already fired waits, held with the stops since `main` began ([`hold_stops`]), and
/// would be taken as a stop once the handlers are set: it is taken off now, unhandled. (A
/// `SIGPROF` or `SIGVTALRM` sent as a stop in that instant is dropped with it: the call is then
/// decided as any other.)
pub fn clear_inherited_timers() {
    for timer in [libc::ITIMER_REAL, libc::ITIMER_VIRTUAL, libc::ITIMER_PROF] {
        // SAFETY: a zeroed itimerval stops the timer; setitimer changes no memory of ours.
        unsafe {
            let stop: libc::itimerval = std::mem::zeroed();
            libc::setitimer(timer, &stop, std::ptr::null_mut());
        }
    }
    let timers = signals([libc::SIGPROF, libc::SIGVTALRM].into_iter());
    let now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: waits no time for a signal of a set of ours, held on this thread (a signal not
    // pending returns EAGAIN at once); each call takes one pending signal off.
    while unsafe { libc::sigtimedwait(&timers.0, std::ptr::null_mut(), &now) } > 0 {}
}

/// Ends the process with the agent's refusal ([`refuse_as`]) after `seconds`, unless it ended
/// before, and at once on a crash from now on. Fails when a signal's handler cannot be set (the
/// caller refuses the call then).
pub fn arm(seconds: u32, agent: Agent) -> io::Result<()> {
    refuse_as(agent, None, seconds);
    // SAFETY: a handler that only loads atomics, writes, sets the alarm and calls _exit
    // (async-signal-safe). SA_NODEFER: its second firing may interrupt its first.
    let set = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = fired as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_NODEFER;
        // A stop waits while a refusal is written: taken then, it would end the process with
        // status 2 after an answer of 0 was begun (found by a review).
        action.sa_mask = signals(stops()).0;
        libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut())
    };
    if set != 0 {
        return Err(io::Error::last_os_error());
    }
    for signal in CRASHES {
        // SAFETY: a handler that only loads atomics, writes and calls _exit. On the signal
        // stack std made for this thread (a stack overflow is one of these faults); reset to
        // the default first, so that a fault inside the handler ends the process.
        let set = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = crashed as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_ONSTACK | libc::SA_RESETHAND;
            action.sa_mask = signals(stops()).0;
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if set != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    for signal in stops() {
        // SAFETY: sets a handler that only loads atomics, writes, sets the alarm and calls _exit
        // (the signal is blocked while it runs), reading the action it replaces; the stops are
        // held until the end of `arm`, so none is taken before an ignored one is ignored again.
        let set = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = stopped as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // Every other stop waits while this one's refusal is written; the deadline's
            // alarm does not (it ends a write that blocks).
            action.sa_mask = signals(stops()).0;
            let mut was: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, &action, &mut was) != 0 {
                -1
            } else if was.sa_sigaction == libc::SIG_IGN {
                // Ignored by the parent (`nohup`, a background job): left so.
                libc::sigaction(signal, &was, std::ptr::null_mut())
            } else {
                0
            }
        };
        if set != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: ignoring a signal changes no memory.
    if unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    // A blocked signal is inherited through exec: a parent that blocked SIGALRM would leave the
    // deadline pending forever (found by a review).
    // SAFETY: a signal set of our own, changed for this thread (the only one yet).
    let unblocked = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGALRM);
        // A fault blocked would end the process with no handler run.
        for signal in CRASHES {
            libc::sigaddset(&mut set, signal);
        }
        // A stop held since the start ([`hold_stops`]) is refused now.
        for signal in stops() {
            libc::sigaddset(&mut set, signal);
        }
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
    REFUSAL.store(refusal(agent, event, &reason), Ordering::Release);
    let reason = "sc-hook crashed (a fault or an abort) before it decided the call";
    CRASH.store(refusal(agent, event, reason), Ordering::Release);
    let reason = "sc-hook was stopped (SIGTERM, SIGINT, SIGHUP or another signal that ends a \
                  process) before it decided the call";
    STOPPED.store(refusal(agent, event, reason), Ordering::Release);
}

/// The agent's block for `event` with `reason`, made now for a signal handler to write later.
/// Never freed: a handler may be reading the one before (the process is short-lived).
fn refusal(agent: Agent, event: Option<Event>, reason: &str) -> *mut Refusal {
    let (line, status) = answer::refusal(agent, event, reason);
    Box::into_raw(Box::new(Refusal {
        stdout: line
            .map(|line| format!("{line}\n").into_bytes())
            .unwrap_or_default(),
        stderr: format!("sc-hook: {reason}; the tool call is blocked\n").into_bytes(),
        status: i32::from(status),
    }))
}

/// The hook begins writing its own answer: a deadline that fires now ends the process with status
/// 2 and writes nothing, so that the agent never reads two answers (Copilot CLI reads a hook
/// that fails as a refusal; for Cursor nothing after a torn answer can block). A stop that comes
/// now waits until the process ends with its answer: answered by its handler, it would end the
/// process with no answer at all, which Cursor reads as a yes (found by a review, 1 run in 300).
/// Whether it had begun before.
pub fn answering() -> bool {
    // Stops go only to this thread: helper threads block every signal but the faults.
    block_stops();
    while CRASHING.load(Ordering::Acquire) {
        // The crash's handler ends the process (within a second: its alarm).
        // SAFETY: pause only waits for a signal.
        unsafe { libc::pause() };
    }
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
    // Taken: a crash's handler that runs now writes no second answer.
    let answering = ANSWERING.swap(true, Ordering::AcqRel);
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

extern "C" fn crashed(_signal: libc::c_int) {
    crash()
}

extern "C" fn stopped(_signal: libc::c_int) {
    end_with(&STOPPED)
}

/// Ends the process with the crash's refusal, from a signal handler or a panic: status 2 and
/// nothing on stdout before [`arm`] made one, or once the hook's own answer began.
pub fn crash() -> ! {
    end_with(&CRASH)
}

/// Ends the process with `refusal` (a crash's or a stop's), as [`crash`] says.
fn end_with(refusal: &AtomicPtr<Refusal>) -> ! {
    CRASHING.store(true, Ordering::Release);
    // The writes below may block (a pipe nobody reads): the deadline's handler ends the process
    // a second later, with nothing more on stdout.
    // SAFETY: alarm is async-signal-safe.
    unsafe { libc::alarm(1) };
    let refusal = refusal.load(Ordering::Acquire);
    // A crash while the hook writes its own answer adds nothing to it.
    let answering = ANSWERING.swap(true, Ordering::AcqRel);
    let mut status = 2;
    // SAFETY: set from a leaked Box by refuse_as and never freed.
    if let Some(refusal) = unsafe { refusal.as_ref() } {
        if !answering && write_all(1, &refusal.stdout) {
            status = refusal.status;
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
