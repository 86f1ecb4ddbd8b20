//! Threads that take no signal. sc-hook's deadline is a signal (SIGALRM, `bin/program/deadline.rs`)
//! whose handler writes the agent's refusal and ends the process: it must interrupt the thread
//! that answers, never run beside it on a helper thread, where both could write an answer.

use std::thread::JoinHandle;

/// The signals of a fault or a crash (faults, an abort, a bad system call, the CPU time limit),
/// which the kernel gives the thread that caused them. Blocked, a fault ends the process with no
/// handler run, so they are left open: sc-hook's crash handler (`bin/program/deadline.rs`, which
/// sets a handler for each of these) refuses the call from whichever thread faulted.
pub const FAULTS: [libc::c_int; 7] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGSYS,
    libc::SIGXCPU,
];

/// Starts `work` on a thread with every signal but a fault's blocked. A signal sent meanwhile
/// waits for the calling thread; where the mask cannot be set, the thread runs anyway, as a
/// plain one would.
pub(crate) fn spawn<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow};
    let mut quiet = SigSet::all();
    for fault in FAULTS {
        if let Ok(fault) = nix::sys::signal::Signal::try_from(fault) {
            quiet.remove(fault);
        }
    }
    let mut before = SigSet::empty();
    // Set, not added to: a fault the caller had blocked is open in the thread too.
    let blocked = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&quiet), Some(&mut before)).is_ok();
    // A new thread starts with its creator's mask.
    let handle = std::thread::spawn(work);
    if blocked {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
    }
    handle
}

#[cfg(test)]
mod tests {
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};

    fn mask() -> SigSet {
        let mut now = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut now)).unwrap();
        now
    }

    #[test]
    fn the_thread_takes_no_signal_and_its_caller_s_mask_is_as_it_was() {
        let before = mask();
        let blocked = super::spawn(|| mask().contains(Signal::SIGALRM))
            .join()
            .unwrap();
        assert!(blocked, "the deadline's signal must not reach the helper");
        let open = super::spawn(|| {
            super::FAULTS
                .iter()
                .all(|fault| !mask().contains(Signal::try_from(*fault).unwrap()))
        })
        .join()
        .unwrap();
        assert!(
            open,
            "a fault blocked in the helper ends the process with no handler run"
        );
        assert_eq!(
            mask().contains(Signal::SIGALRM),
            before.contains(Signal::SIGALRM)
        );
    }
}
