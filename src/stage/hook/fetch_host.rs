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
    crate::stage::quiet_thread::spawn(move || {
        let found: Vec<IpAddr> = (name.as_str(), port)
            .to_socket_addrs()
            .map(|addresses| addresses.map(|address| address.ip()).collect())
            .unwrap_or_default();
        let _ = sender.send(found);
    });
    receiver.recv_timeout(DEADLINE).unwrap_or_default()
}
