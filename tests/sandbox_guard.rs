//! The sandbox guards its own machinery, and the ways around it a review found are closed: each
//! test runs the real sc-sandbox (and the doors that use it) against the real kernel.

use std::io::{Read, Write};
use std::net::TcpListener;

use crate::sandbox::{bash, events, sandboxed, text};
use crate::util::Scratch;

fn serve_one(listener: &TcpListener) {
    let (mut stream, _) = listener.accept().unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
        head.push(byte[0]);
    }
    stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        .unwrap();
}

#[test]
fn the_proxy_refuses_a_bare_cr_or_lf_in_the_request_line_or_a_header() {
    let scratch = Scratch::new();
    let origin = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = origin.local_addr().unwrap().port();
    let policy = format!(r#"{{"sandbox": {{"network": {{"allow": ["127.0.0.1:{port}"]}}}}}}"#);
    // A raw TCP client inside: the same request with CRLF alone (the control), then with a bare
    // LF in a header value, a bare CR in a header value, and a bare LF in the request line.
    let script = format!(
        r#"python3 - <<'EOF'
import os, socket
host, port = os.environ["HTTP_PROXY"].removeprefix("http://").split(":")
for head in (
    b"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nX-A: a\nX-Smuggled: b\r\n\r\n",
    b"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nX-A: a\rX-Smuggled: b\r\n\r\n",
    b"GET http://127.0.0.1:{port}/ HTTP/1.1\nX-Smuggled: b\r\nHost: x\r\n\r\n",
):
    s = socket.create_connection((host, int(port)), timeout=20)
    s.sendall(head)
    reply = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        reply += chunk
    print(reply.split(b"\r\n")[0].decode())
EOF
"#
    );
    let serving = std::thread::spawn(move || {
        serve_one(&origin);
        origin
    });
    let out = bash(&mut sandboxed(&scratch, &policy), &script);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let origin = serving.join().unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(lines[0].starts_with("HTTP/1.1 200"), "{stdout}");
    for line in &lines[1..] {
        assert!(line.starts_with("HTTP/1.1 400"), "{stdout}");
    }
    // The origin saw the control alone.
    origin.set_nonblocking(true).unwrap();
    let accepted = origin.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the origin got a refused request: {accepted:?}"
    );
    let egress = events(&scratch, "egress");
    assert_eq!(egress.len(), 4, "{egress:?}");
    assert_eq!(egress[0]["decision"], "allow");
    for event in &egress[1..] {
        assert_eq!(event["decision"], "deny", "{event}");
        assert!(
            event["reason"].as_str().unwrap().contains("bare CR or LF"),
            "{event}"
        );
    }
}
