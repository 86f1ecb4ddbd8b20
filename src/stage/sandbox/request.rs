//! What a client inside asks the proxy for: `CONNECT host:port` (a tunnel, for HTTPS), or a plain
//! HTTP request with an absolute URL (`GET http://host:port/path`), rewritten for the origin.
//!
//! Only the request head is read (at most [`MAX_HEAD_BYTES`]); the proxy never looks further into
//! what flows, and the decision is on the host and port alone.

use std::io::{self, Read};

/// The longest request head the proxy reads.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// A request head, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub host: String,
    pub port: u16,
    /// For a plain request: the head to send to the origin (origin-form target, the client's
    /// headers without the proxy's own, and `Connection: close`). `None` for CONNECT.
    pub forward: Option<Vec<u8>>,
}

/// Why a head could not be understood: the status line to answer with, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: &'static str,
    pub why: String,
}

fn bad(why: impl Into<String>) -> Refusal {
    Refusal {
        status: "400 Bad Request",
        why: why.into(),
    }
}

/// Reads up to the end of the head (`\r\n\r\n`); returns the head and any bytes after it (the
/// start of a body), or `None` when the client left before a whole head.
pub fn read_head(stream: &mut impl Read) -> io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        let searched_from = buffer.len().saturating_sub(3);
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = find(&buffer[searched_from..], b"\r\n\r\n") {
            let end = searched_from + at + 4;
            let rest = buffer.split_off(end);
            return Ok(Some((buffer, rest)));
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too long",
            ));
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Parses a head read by [`read_head`].
pub fn parse(head: &[u8]) -> Result<Request, Refusal> {
    let text = std::str::from_utf8(head).map_err(|_| bad("the request head is not UTF-8"))?;
    // Lines end with CRLF alone: a bare CR or LF inside a request line or a header would be a
    // line break to one reader and not to another (a header smuggled past the proxy's rewrite).
    if text.split("\r\n").any(|line| line.contains(['\r', '\n'])) {
        return Err(bad(
            "a bare CR or LF inside the request line or a header is not proxied",
        ));
    }
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(bad("the request line is not METHOD TARGET VERSION"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(bad("only HTTP/1 requests are proxied"));
    }
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(bad("the method is not a word in capitals"));
    }
    if method == "CONNECT" {
        let (host, port) = host_port(target, None)?;
        return Ok(Request {
            method: method.to_owned(),
            host,
            port,
            forward: None,
        });
    }
    let Some(rest) = strip_prefix_ignore_case(target, "http://") else {
        return Err(Refusal {
            status: "400 Bad Request",
            why: "a plain request must name an http:// URL (use CONNECT for https)".to_owned(),
        });
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err(bad("a URL with credentials is not proxied"));
    }
    let (host, port) = host_port(authority, Some(80))?;
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    let forward = forward_head(method, &path, version, &host, port, lines)?;
    Ok(Request {
        method: method.to_owned(),
        host,
        port,
        forward: Some(forward),
    })
}

/// Request headers that concern one hop, not the origin: never forwarded (with the proxy's own,
/// `Proxy-*`, and those the client's `Connection` names). `Transfer-Encoding` stays: the body is
/// passed on as it is.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "host",
];

/// The head sent to the origin: the origin-form request line, `Host` naming the host and port
/// the proxy decided on (whatever `Host` the client sent), the client's end-to-end headers, and
/// `Connection: close`.
fn forward_head<'h>(
    method: &str,
    path: &str,
    version: &str,
    host: &str,
    port: u16,
    lines: impl Iterator<Item = &'h str>,
) -> Result<Vec<u8>, Refusal> {
    let mut headers = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        if line.starts_with([' ', '\t']) {
            return Err(bad("a folded header line is not proxied"));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad("a header line without `:`"));
        };
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(bad("a header name that is not a token"));
        }
        headers.push((name, value));
    }
    // The headers the client's `Connection` names are this hop's too.
    let named: Vec<String> = headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, value)| value.split(','))
        .map(|token| token.trim().to_ascii_lowercase())
        .filter(|token| !token.is_empty())
        .collect();
    let shown_host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    let mut forward = format!("{method} {path} {version}\r\nHost: {shown_host}");
    if port != 80 {
        forward.push_str(&format!(":{port}"));
    }
    forward.push_str("\r\n");
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lower.as_str())
            || lower.starts_with("proxy-")
            || named.contains(&lower)
        {
            continue;
        }
        forward.push_str(&format!("{name}:{value}\r\n"));
    }
    forward.push_str("Connection: close\r\n\r\n");
    Ok(forward.into_bytes())
}

/// A byte of an HTTP token (a header name).
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

fn strip_prefix_ignore_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// `host:port`, `[v6]:port`, or (with a default port) `host` alone.
fn host_port(authority: &str, default_port: Option<u16>) -> Result<(String, u16), Refusal> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| bad("an IPv6 host without `]`"))?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match (port, default_port) {
        (Some(port), _) => port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
        (None, Some(port)) => port,
        (None, None) => return Err(bad("CONNECT needs host:port")),
    };
    let v6 = authority.starts_with('[');
    if v6 && host.parse::<std::net::Ipv6Addr>().is_err() {
        return Err(bad("the host in brackets is not an IPv6 address"));
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || (!v6 && crate::rules::sandbox::host_name_problem(name).is_some()) {
        return Err(bad("the host is not a name or an address"));
    }
    Ok((host.to_ascii_lowercase(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_and_plain_requests_parse() {
        let connect = parse(b"CONNECT Registry.Example:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            (connect.method.as_str(), connect.host.as_str(), connect.port),
            ("CONNECT", "registry.example", 443)
        );
        assert!(connect.forward.is_none());
        let v6 = parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 8443));
        let plain = parse(
            b"GET http://127.0.0.1:8080/a/b?c=d HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert_eq!((plain.host.as_str(), plain.port), ("127.0.0.1", 8080));
        assert_eq!(
            String::from_utf8(plain.forward.unwrap()).unwrap(),
            "GET /a/b?c=d HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        // The origin is told the host the proxy decided on, never the client's own `Host`, and
        // no header of this hop.
        let spoofed = parse(
            b"GET http://Allowed.Example/x HTTP/1.1\r\nHost: internal.example\r\nHOST: other\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nProxy-Authorization: Basic eA==\r\nProxy-Foo: 1\r\nTE: trailers\r\nUpgrade: websocket\r\nKeep-Alive: 5\r\nTrailer: x\r\nTransfer-Encoding: chunked\r\nUser-Agent: t\r\n\r\n",
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(spoofed.forward.unwrap()).unwrap(),
            "GET /x HTTP/1.1\r\nHost: allowed.example\r\nTransfer-Encoding: chunked\r\nUser-Agent: t\r\nConnection: close\r\n\r\n"
        );
        let v6 = parse(b"GET http://[::1]:8080/ HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert!(String::from_utf8(v6.forward.unwrap())
            .unwrap()
            .starts_with("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n"));
        let bare = parse(b"GET http://example.test HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!(bare.port, 80);
        assert!(String::from_utf8(bare.forward.unwrap())
            .unwrap()
            .starts_with("GET / HTTP/1.0\r\n"));
    }

    #[test]
    fn what_is_not_a_proxy_request_is_refused() {
        for head in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"GET https://x.test/ HTTP/1.1\r\n\r\n",
            b"CONNECT x.test HTTP/1.1\r\n\r\n",
            b"CONNECT x.test:0 HTTP/1.1\r\n\r\n",
            b"CONNECT x.test:99999 HTTP/1.1\r\n\r\n",
            b"GET http://user:pw@x.test/ HTTP/1.1\r\n\r\n",
            b"CONNECT x y z HTTP/1.1\r\n\r\n",
            b"SSH-2.0-OpenSSH\r\n\r\n",
            b"CONNECT a/b:80 HTTP/1.1\r\n\r\n",
            b"CONNECT ..x.test:443 HTTP/1.1\r\n\r\n",
            b"CONNECT a_b.x.test:443 HTTP/1.1\r\n\r\n",
            b"GET http://x..test/ HTTP/1.1\r\n\r\n",
            b"GET http://x.test/ HTTP/1.1\r\nHost: x.test\r\n Host: y.test\r\n\r\n",
            b"GET http://x.test/ HTTP/1.1\r\nno colon here\r\n\r\n",
            b"GET http://x.test/ HTTP/1.1\r\nHost : y.test\r\n\r\n",
            // A bare LF or CR in a header value, a header name or the request line.
            b"GET http://x.test/ HTTP/1.1\r\nX-A: a\nHost: y.test\r\n\r\n",
            b"GET http://x.test/ HTTP/1.1\r\nX-A: a\rHost: y.test\r\n\r\n",
            b"GET http://x.test/ HTTP/1.1\r\nX-A\n: a\r\n\r\n",
            b"GET http://x.test/ HTTP/1.1\nHost: y.test\r\n\r\n",
            b"GET http://x.test/a\rb HTTP/1.1\r\n\r\n",
            b"CONNECT x.test:443 HTTP/1.1\r\nX: 1\n2\r\n\r\n",
        ] {
            assert!(parse(head).is_err(), "{}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn the_head_ends_at_the_blank_line() {
        let mut input: &[u8] = b"CONNECT a:1 HTTP/1.1\r\n\r\nhello";
        let (head, rest) = read_head(&mut input).unwrap().unwrap();
        assert_eq!(head, b"CONNECT a:1 HTTP/1.1\r\n\r\n");
        assert_eq!(rest, b"hello");
        let mut partial: &[u8] = b"CONNECT a:1 HTTP/1.1\r\n";
        assert!(read_head(&mut partial).unwrap().is_none());
        let long = vec![b'a'; MAX_HEAD_BYTES + 10];
        assert!(read_head(&mut &long[..]).is_err());
    }
}
