//! What a fetch tool's host name resolves to, for the `fetch` rules: a name that leads to a
//! loopback, private or link-local address (`metadata.example.com` pointing at 169.254.169.254)
//! is judged by where it leads. The resolver gets a short deadline; a name that does not
//! resolve in time is judged by its name alone (the rules are pure: sc-hook, which may reach
//! the resolver, asks it).

use std::net::{IpAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::rules::policy::Policy;

/// How long the resolver has.
const DEADLINE: Duration = Duration::from_millis(300);

/// The addresses the URL's host name of a fetch tool's call resolves to, within [`DEADLINE`];
/// empty for another tool, a literal address, a name local by its text, or no answer in time.
pub(super) fn fetch_addresses(
    policy: &Policy,
    tool: &str,
    args: &Map<String, Value>,
) -> Vec<IpAddr> {
    let Some((name, port)) = policy
        .fetch()
        .and_then(|fetch| fetch.name_to_resolve(tool, args))
    else {
        return Vec::new();
    };
    let (sender, receiver) = mpsc::channel();
    // The resolver may hang past the deadline: its thread is left to end with the process.
    without_signals(move || {
        let found: Vec<IpAddr> = (name.as_str(), port)
            .to_socket_addrs()
            .map(|addresses| addresses.map(|address| address.ip()).collect())
            .unwrap_or_default();
        let _ = sender.send(found);
    });
    receiver.recv_timeout(DEADLINE).unwrap_or_default()
}

/// Starts `work` on a thread that takes no signal: sc-hook's deadline (SIGALRM) must interrupt
/// the thread that answers the agent, never run its handler beside it on another, where both
/// could write an answer. A signal sent meanwhile waits for the calling thread; where the mask
/// cannot be set, the thread runs anyway, as before.
fn without_signals(work: impl FnOnce() + Send + 'static) {
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow};
    let mut before = SigSet::empty();
    let blocked = pthread_sigmask(
        SigmaskHow::SIG_BLOCK,
        Some(&SigSet::all()),
        Some(&mut before),
    )
    .is_ok();
    // A new thread starts with its creator's mask.
    std::thread::spawn(work);
    if blocked {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};

    fn mask() -> SigSet {
        let mut now = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut now)).unwrap();
        now
    }

    #[test]
    fn the_resolver_s_thread_takes_no_signal_and_its_caller_s_mask_is_as_it_was() {
        let before = mask();
        let (sender, receiver) = mpsc::channel();
        without_signals(move || {
            let _ = sender.send(mask().contains(Signal::SIGALRM));
        });
        let blocked = receiver.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(blocked, "the deadline's signal must not reach the helper");
        assert_eq!(
            mask().contains(Signal::SIGALRM),
            before.contains(Signal::SIGALRM)
        );
    }
}
