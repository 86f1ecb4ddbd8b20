//! The proxy outside: the sandbox's only way to the network. Each connection the bridge inside
//! forwards over the unix socket carries one HTTP proxy request; the proxy decides its host and
//! port against `sandbox.network.allow`, resolves the name itself (there is no DNS inside),
//! connects, records the attempt, and only then lets bytes flow.
//!
//! The decision is on the name the client gave, before any resolution; a denied name is never
//! looked up. An audit event that cannot be written refuses the connection: nothing leaves that
//! was not recorded first.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::time::Duration;

use super::events::{Egress, Recorder};
use super::relay::relay;
use super::request::{self, Refusal, Request};
use crate::rules::sandbox::NetworkRules;

/// How long a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one address may take to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves the listener on a thread of its own, one thread per connection, for as long as the
/// process lives.
pub fn serve(
    listener: UnixListener,
    network: Arc<NetworkRules>,
    recorder: Arc<Recorder>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("sc-sandbox proxy".into())
        .spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let (network, recorder) = (network.clone(), recorder.clone());
                let _ = std::thread::Builder::new()
                    .name("sc-sandbox proxy client".into())
                    .spawn(move || handle(client, &network, &recorder));
            }
        })?;
    Ok(())
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
    let connected = connect(&request);
    match &connected {
        Ok(upstream) => egress.address = upstream.peer_addr().ok().map(|a| a.to_string()),
        Err(why) => egress.reason = Some(why.clone()),
    }
    if let Err(err) = recorder.egress(&egress) {
        let why = format!("the connection could not be audited: {err:#}");
        eprintln!("sc-sandbox: {why}");
        answer(&mut client, "502 Bad Gateway", &why);
        return;
    }
    let mut upstream = match connected {
        Ok(upstream) => upstream,
        Err(why) => {
            answer(&mut client, "502 Bad Gateway", &why);
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

/// Resolves the host and connects to the first address that answers.
fn connect(request: &Request) -> Result<TcpStream, String> {
    let addresses: Vec<SocketAddr> = (request.host.as_str(), request.port)
        .to_socket_addrs()
        .map_err(|err| format!("{} could not be resolved: {err}", request.host))?
        .collect();
    let mut last = format!("{} has no address", request.host);
    for address in addresses {
        match TcpStream::connect_timeout(&address, CONNECT_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(err) => last = format!("connecting to {address}: {err}"),
        }
    }
    Err(last)
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
