//! The proxy outside: the sandbox's only way to the network. Each connection the bridge inside
//! forwards over the unix socket carries one HTTP proxy request; the proxy decides its host and
//! port against `sandbox.network.allow`, resolves the name itself (there is no DNS inside),
//! connects, records the attempt, and only then lets bytes flow.
//!
//! The decision is on the name the client gave, before any resolution; a denied name is never
//! looked up. An allowed name is resolved once, and each address is checked before it is
//! connected to (the same address, no second look-up): a loopback, link-local, private (RFC 1918,
//! ULA), shared, unspecified, broadcast or multicast address is refused unless the allow entry
//! names that address itself (`127.0.0.1:8080`, `[::1]:8080`), or is `localhost:PORT` and the
//! address is loopback. So a public name that resolves to the cloud's metadata address or the
//! user's router reaches nothing. An audit event that cannot be written refuses the connection:
//! nothing leaves that was not recorded first.

use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::events::{Egress, Recorder};
use super::relay::relay;
use super::request::{self, Refusal, Request};
pub use crate::rules::address::kind;
use crate::rules::address::unmapped;
use crate::rules::sandbox::{HostPattern, HostPort, NetworkRules};

/// How long a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one address may take to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many connections the proxy serves at once; beyond, a client is answered 503.
pub const MAX_CONNECTIONS: usize = 64;

/// Serves the listener on a thread of its own, one thread per connection (at most
/// [`MAX_CONNECTIONS`] at once), for as long as the process lives.
pub fn serve(
    listener: UnixListener,
    network: Arc<NetworkRules>,
    recorder: Arc<Recorder>,
) -> std::io::Result<()> {
    serve_at_most(listener, network, recorder, MAX_CONNECTIONS)
}

/// [`serve`] with another cap.
fn serve_at_most(
    listener: UnixListener,
    network: Arc<NetworkRules>,
    recorder: Arc<Recorder>,
    cap: usize,
) -> std::io::Result<()> {
    let open = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("sc-sandbox proxy".into())
        .spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { continue };
                if open.load(Ordering::SeqCst) >= cap {
                    let why = format!("the proxy serves at most {cap} connections at once");
                    let _ = recorder.egress(&Egress {
                        method: "",
                        reason: Some(why.clone()),
                        ..Egress::default()
                    });
                    answer(&mut client, "503 Service Unavailable", &why);
                    let _ = client.shutdown(std::net::Shutdown::Write);
                    drain(&mut client);
                    continue;
                }
                let slot = Slot::take(&open);
                let (network, recorder) = (network.clone(), recorder.clone());
                let _ = std::thread::Builder::new()
                    .name("sc-sandbox proxy client".into())
                    .spawn(move || {
                        handle(client, &network, &recorder);
                        drop(slot);
                    });
            }
        })?;
    Ok(())
}

/// Reads what a refused client sends until it leaves (briefly): closing a unix socket with bytes
/// unread resets it, and the client would lose the answer.
fn drain(client: &mut UnixStream) {
    use std::io::Read;
    let _ = client.set_read_timeout(Some(Duration::from_millis(100)));
    let mut sink = [0u8; 4096];
    while let Ok(1..) = client.read(&mut sink) {}
}

/// One of the proxy's open connections, given back when dropped (a thread that cannot start
/// drops it at once).
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(open: &Arc<AtomicUsize>) -> Slot {
        open.fetch_add(1, Ordering::SeqCst);
        Slot(open.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answers one client: a refusal, or a connection to the host it asked for.
pub fn handle(mut client: UnixStream, network: &NetworkRules, recorder: &Recorder) {
    let _ = client.set_read_timeout(Some(HEAD_TIMEOUT));
    let (head, early) = match request::read_head(&mut client) {
        Ok(Some(read)) => read,
        Ok(None) => return,
        Err(err) => {
            let why = format!("the request could not be read: {err}");
            let _ = recorder.egress(&Egress {
                method: "",
                reason: Some(why.clone()),
                ..Egress::default()
            });
            answer(&mut client, "400 Bad Request", &why);
            return;
        }
    };
    let request = match request::parse(&head) {
        Ok(request) => request,
        Err(Refusal { status, why }) => {
            let _ = recorder.egress(&Egress {
                method: "",
                reason: Some(why.clone()),
                ..Egress::default()
            });
            answer(&mut client, status, &why);
            return;
        }
    };
    let _ = client.set_read_timeout(None);
    let mut egress = Egress {
        method: &request.method,
        host: Some(&request.host),
        port: Some(request.port),
        ..Egress::default()
    };
    let Some(rule) = network.allowing(&request.host, request.port) else {
        let why = format!(
            "{}:{} is not in the policy's sandbox.network.allow",
            request.host, request.port
        );
        egress.reason = Some(why.clone());
        let _ = recorder.egress(&egress);
        answer(&mut client, "403 Forbidden", &why);
        return;
    };
    egress.rule = Some(rule.to_string());
    let connected = connect(&request, rule);
    match &connected {
        Ok((_, address)) => egress.address = Some(address.to_string()),
        Err(failure) => {
            egress.reason = Some(failure.why.clone());
            egress.address = failure.refused.map(|a| a.to_string());
            egress.refused = failure.refused.is_some();
        }
    }
    if let Err(err) = recorder.egress(&egress) {
        let why = format!("the connection could not be audited: {err:#}");
        eprintln!("sc-sandbox: {why}");
        answer(&mut client, "502 Bad Gateway", &why);
        return;
    }
    let mut upstream = match connected {
        Ok((upstream, _)) => upstream,
        Err(failure) => {
            let status = if failure.refused.is_some() {
                "403 Forbidden"
            } else {
                "502 Bad Gateway"
            };
            answer(&mut client, status, &failure.why);
            return;
        }
    };
    let started = match &request.forward {
        None => client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n"),
        Some(head) => upstream.write_all(head),
    };
    if started.is_err() || upstream.write_all(&early).is_err() {
        return;
    }
    let _ = relay(client, upstream);
}

/// Why no connection was made; `refused`: the address the policy does not let the name reach.
struct Failure {
    why: String,
    refused: Option<SocketAddr>,
}

/// Resolves the host once and connects to the first address that `rule` lets it reach and that
/// answers: the address checked is the address connected to.
fn connect(request: &Request, rule: &HostPort) -> Result<(TcpStream, SocketAddr), Failure> {
    let failed = |why: String| Failure { why, refused: None };
    let addresses: Vec<SocketAddr> = (request.host.as_str(), request.port)
        .to_socket_addrs()
        .map_err(|err| failed(format!("{} could not be resolved: {err}", request.host)))?
        .collect();
    let (allowed, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = addresses
        .into_iter()
        .partition(|address| reachable(rule, address.ip()));
    if allowed.is_empty() {
        let Some(first) = refused.first() else {
            return Err(failed(format!("{} has no address", request.host)));
        };
        return Err(Failure {
            why: format!(
                "{} resolves to {}, a {} address, which only an allow entry naming that address reaches",
                request.host,
                first.ip(),
                kind(first.ip()).unwrap_or("non-public")
            ),
            refused: Some(*first),
        });
    }
    let mut last = String::new();
    for address in allowed {
        match TcpStream::connect_timeout(&address, CONNECT_TIMEOUT) {
            Ok(stream) => return Ok((stream, address)),
            Err(err) => last = format!("connecting to {address}: {err}"),
        }
    }
    Err(failed(last))
}

/// Whether a name allowed by `rule` may reach `address`: any public address; another only when
/// the entry names that address itself, or is `localhost` and the address is loopback.
pub fn reachable(rule: &HostPort, address: IpAddr) -> bool {
    let address = unmapped(address);
    if kind(address).is_none() {
        return true;
    }
    match &rule.host {
        HostPattern::Exact(name) if name == "localhost" => address.is_loopback(),
        HostPattern::Exact(name) => name
            .parse::<IpAddr>()
            .is_ok_and(|literal| unmapped(literal) == address),
        HostPattern::Subdomains(_) => false,
    }
}

/// A short plain-text HTTP answer, then the end of the connection.
fn answer(client: &mut UnixStream, status: &str, why: &str) {
    let body = format!("sc-sandbox: {why}\n");
    let _ = write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::sandbox::HostPort;
    use std::io::Read;
    use std::net::TcpListener;

    fn ask(network: NetworkRules, head: &str) -> (String, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = crate::audit::AuditLog::open(&path).unwrap();
        let recorder = Recorder::new(Some(log), None, Default::default());
        let (mut inside, outside) = UnixStream::pair().unwrap();
        inside.write_all(head.as_bytes()).unwrap();
        let handling = std::thread::spawn(move || handle(outside, &network, &recorder));
        let mut reply = Vec::new();
        let mut chunk = [0u8; 4096];
        // Up to the end of what the proxy sends first (its answer, or the origin's reply).
        while let Ok(n) = inside.read(&mut chunk) {
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&chunk[..n]);
        }
        drop(inside);
        handling.join().unwrap();
        (
            String::from_utf8_lossy(&reply).into_owned(),
            std::fs::read_to_string(&path).unwrap(),
        )
    }

    /// An origin on loopback that answers one request and returns the head it was sent.
    fn one_request_origin() -> (u16, std::thread::JoinHandle<String>) {
        let origin = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = origin.local_addr().unwrap().port();
        let serving = std::thread::spawn(move || {
            let (mut stream, _) = origin.accept().unwrap();
            let head = request::read_head(&mut stream).unwrap().unwrap().0;
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            String::from_utf8(head).unwrap()
        });
        (port, serving)
    }

    #[test]
    fn an_allowed_name_that_resolves_to_loopback_is_refused_unless_named_so() {
        // `2130706433` is a name to the policy and 127.0.0.1 to the resolver (no DNS needed).
        let (port, serving) = one_request_origin();
        let by_number =
            NetworkRules::new(vec![HostPort::parse(&format!("2130706433:{port}")).unwrap()]);
        let (reply, audit) = ask(
            by_number,
            &format!("GET http://2130706433:{port}/ HTTP/1.1\r\n\r\n"),
        );
        assert!(reply.starts_with("HTTP/1.1 403 Forbidden"), "{reply}");
        assert!(reply.contains("a loopback address"), "{reply}");
        assert!(
            audit.contains(&format!(
                r#""host":"2130706433","port":{port},"decision":"deny","rule":"2130706433:{port}","address":"127.0.0.1:{port}""#
            )),
            "{audit}"
        );
        // `localhost:PORT` names loopback: it is reached.
        let localhost =
            NetworkRules::new(vec![HostPort::parse(&format!("localhost:{port}")).unwrap()]);
        let (reply, audit) = ask(
            localhost,
            &format!("GET http://localhost:{port}/ HTTP/1.1\r\nHost: metadata.internal\r\n\r\n"),
        );
        assert!(reply.ends_with("ok"), "{reply}");
        assert!(audit.contains(r#""decision":"allow""#), "{audit}");
        assert!(
            audit.contains(&format!(r#""address":"127.0.0.1:{port}""#)),
            "{audit}"
        );
        // The origin was told the host the proxy decided on, not the client's.
        let head = serving.join().unwrap();
        assert!(
            head.contains(&format!("\r\nHost: localhost:{port}\r\n")),
            "{head}"
        );
        assert!(!head.contains("metadata.internal"), "{head}");
    }

    #[test]
    fn only_public_addresses_or_the_named_one_are_reachable() {
        let rule = |text: &str| HostPort::parse(text).unwrap();
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        let name = rule("registry.example:443");
        for address in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:a9fe:a9fe::1",
        ] {
            assert!(!reachable(&name, ip(address)), "{address}");
            assert!(!reachable(&rule("*.example:443"), ip(address)), "{address}");
        }
        for address in ["93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"] {
            assert!(reachable(&name, ip(address)), "{address}");
        }
        assert!(reachable(&rule("127.0.0.1:80"), ip("127.0.0.1")));
        assert!(reachable(&rule("127.0.0.1:80"), ip("::ffff:127.0.0.1")));
        assert!(!reachable(&rule("127.0.0.1:80"), ip("127.0.0.2")));
        assert!(reachable(&rule("[::1]:80"), ip("::1")));
        assert!(reachable(&rule("10.0.0.5:80"), ip("10.0.0.5")));
        assert!(reachable(&rule("localhost:80"), ip("127.0.0.1")));
        assert!(reachable(&rule("localhost:80"), ip("::1")));
        assert!(!reachable(&rule("localhost:80"), ip("169.254.169.254")));
    }

    #[test]
    fn connections_beyond_the_cap_are_answered_503_and_audited() {
        let dir = tempfile::tempdir().unwrap();
        let log_path = dir.path().join("audit.jsonl");
        let log = crate::audit::AuditLog::open(&log_path).unwrap();
        let recorder = Arc::new(Recorder::new(Some(log), None, Default::default()));
        let socket = dir.path().join("proxy.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        serve_at_most(listener, Arc::new(NetworkRules::default()), recorder, 2).unwrap();
        // Two clients that send nothing hold both slots.
        let held: Vec<UnixStream> = (0..2)
            .map(|_| UnixStream::connect(&socket).unwrap())
            .collect();
        let read_all = |mut stream: UnixStream| {
            stream.write_all(b"HELLO\r\n\r\n").unwrap();
            let mut reply = String::new();
            stream.read_to_string(&mut reply).unwrap();
            reply
        };
        let reply = read_all(UnixStream::connect(&socket).unwrap());
        assert!(
            reply.starts_with("HTTP/1.1 503 Service Unavailable"),
            "{reply}"
        );
        assert!(reply.contains("at most 2 connections"), "{reply}");
        let audit = std::fs::read_to_string(&log_path).unwrap();
        assert!(
            audit.contains(
                r#""decision":"deny","reason":"the proxy serves at most 2 connections at once""#
            ),
            "{audit}"
        );
        // Once they leave, a client is served again (here: told its request is not one).
        drop(held);
        let mut reply = String::new();
        for _ in 0..100 {
            reply = read_all(UnixStream::connect(&socket).unwrap());
            if !reply.contains("503") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    }

    #[test]
    fn an_allowed_host_is_reached_and_another_is_refused_both_audited() {
        let origin = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = origin.local_addr().unwrap().port();
        let serving = std::thread::spawn(move || {
            let (mut stream, _) = origin.accept().unwrap();
            let head = request::read_head(&mut stream).unwrap().unwrap().0;
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            String::from_utf8(head).unwrap()
        });
        let allow = NetworkRules::new(vec![HostPort::parse(&format!("127.0.0.1:{port}")).unwrap()]);
        let (reply, audit) = ask(
            allow.clone(),
            &format!("GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        );
        assert!(reply.ends_with("ok"), "{reply}");
        assert!(serving.join().unwrap().starts_with("GET /x HTTP/1.1\r\n"));
        assert!(audit.contains(r#""decision":"allow""#), "{audit}");
        let (reply, audit) = ask(allow, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n");
        assert!(reply.starts_with("HTTP/1.1 403 Forbidden"), "{reply}");
        assert!(
            audit.contains(r#""host":"127.0.0.1","port":1,"decision":"deny""#),
            "{audit}"
        );
        let (reply, audit) = ask(NetworkRules::default(), "HELLO\r\n\r\n");
        assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
        assert!(audit.contains(r#""decision":"deny""#), "{audit}");
    }
}
