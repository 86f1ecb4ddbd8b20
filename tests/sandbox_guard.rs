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

#[test]
fn the_sandboxs_own_binaries_inside_the_root_cannot_be_replaced_from_inside() {
    let scratch = Scratch::new();
    // A vendored tools folder in the root: sc-sandbox itself (what runs), sc-hook beside it (the
    // program the sc-sandbox launcher starts), and cargo's other name for sc-hook.
    let tools = scratch.path("tools");
    std::fs::create_dir_all(tools.join("deps")).unwrap();
    let sandbox = tools.join("sc-sandbox");
    // Copies, not links: a write that got through must not reach the build's own binaries.
    std::fs::copy(crate::sandbox::sc_sandbox(), &sandbox).unwrap();
    let hook = tools.join("sc-hook");
    std::fs::copy(crate::util::bin_path("sc-hook"), &hook).unwrap();
    std::fs::hard_link(&hook, tools.join("deps/sc_hook-0123")).unwrap();
    let before = std::fs::read(&sandbox).unwrap();
    let hook_before = std::fs::read(&hook).unwrap();
    let policy = scratch.write("policy.json", "{}");
    let try_each = [
        "echo x > tools/sc-hook",
        "echo x >> tools/deps/sc_hook-0123",
        "cp /bin/true tools/sc-sandbox",
        "printf x | dd of=tools/sc-sandbox conv=notrunc status=none",
        "rm -f tools/sc-hook",
        "echo x > tools/new && mv -f tools/new tools/sc-hook",
        "mv tools/sc-sandbox tools/old",
        "mv tools tools.old",
        "mv tools/deps tools/deps.old",
    ];
    let script: String = try_each
        .iter()
        .map(|attempt| format!("if ({attempt}) 2>/dev/null; then echo 'written: {attempt}'; else echo refused; fi\n"))
        .collect();
    let out = crate::util::output_when_free(
        std::process::Command::new(&sandbox)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(scratch.dir.path())
            .arg("--policy")
            .arg(&policy)
            .args(["--", "bash", "-c", &script])
            .stdin(std::process::Stdio::null()),
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(!stdout.contains("written"), "{stdout}");
    assert_eq!(
        stdout.matches("refused").count(),
        try_each.len(),
        "{stdout}"
    );
    assert!(
        std::fs::read(&sandbox).unwrap() == before,
        "sc-sandbox was changed"
    );
    assert!(
        std::fs::read(&hook).unwrap() == hook_before,
        "sc-hook was changed"
    );
    // The rest of the tools folder stays the project's to write.
    let out = std::process::Command::new(&sandbox)
        .current_dir(scratch.dir.path())
        .arg("--policy")
        .arg(&policy)
        .args(["--", "bash", "-c", "echo notes > tools/README"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(tools.join("README")).unwrap(),
        "notes\n"
    );
}

/// A folder under the host's `/tmp`, outside the sandbox's root, with a script, a script run by
/// an interpreter of its own there, and a python script.
fn host_tmp_tools() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("sc-guard-")
        .tempdir_in("/tmp")
        .unwrap();
    let base = dir.path();
    std::fs::create_dir_all(base.join("bin")).unwrap();
    std::fs::copy("/bin/sh", base.join("bin/own-sh")).unwrap();
    let executable = |name: &str, body: String| {
        let path = base.join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    executable(
        "tool.sh",
        "#!/bin/sh\necho '{\"hello\": \"from tmp\"}'\necho x >> \"$0\" 2>/dev/null && echo 'wrote itself' >&2\nexit 0\n".into(),
    );
    executable(
        "own.sh",
        format!(
            "#!{}\necho own interpreter\n",
            base.join("bin/own-sh").display()
        ),
    );
    std::fs::write(base.join("hello.py"), "print('python from tmp')\n").unwrap();
    dir
}

#[test]
fn a_program_script_or_interpreter_under_the_hosts_tmp_runs_read_only() {
    let scratch = Scratch::new();
    let tools = host_tmp_tools();
    let base = tools.path();
    let run = |argv: &[&str]| {
        let mut cmd = sandboxed(&scratch, "{}");
        cmd.arg("--").args(argv).stdin(std::process::Stdio::null());
        cmd.output().unwrap()
    };
    let tool = base.join("tool.sh");
    let out = run(&[tool.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "{\"hello\": \"from tmp\"}\n");
    assert!(
        !text(&out.stderr).contains("wrote itself"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&[base.join("own.sh").to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "own interpreter\n");
    let out = run(&["python3", base.join("hello.py").to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "python from tmp\n");
    // The file is unchanged, and the rest of the host's /tmp stays unseen.
    assert!(!std::fs::read_to_string(&tool).unwrap().ends_with("x\n"));
    let out = run(&["sh", "-c", "ls \"${0%/*}\"", tool.to_str().unwrap()]);
    assert_eq!(text(&out.stdout), "tool.sh\n", "{}", text(&out.stderr));
    // What cannot be found inside says why.
    let missing = base.join("missing.sh");
    let out = run(&[missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(127));
    assert!(
        text(&out.stderr).contains("/tmp is the sandbox's own inside"),
        "{}",
        text(&out.stderr)
    );
}

/// The host side of the unix socket test: binds each name (relative ones from its working
/// folder), checks from itself that each answers, says `READY`, and once told on stdin, counts the
/// connections that arrived since.
const SOCKET_SERVER: &str = r#"
import os, socket, sys
names = [bytes.fromhex(h) for h in sys.argv[1:]]
listeners = []
for name in names:
    s = socket.socket(socket.AF_UNIX)
    s.bind(name)
    s.listen(8)
    s.setblocking(False)
    listeners.append(s)
# The control: each name answers, from here.
for name, s in zip(names, listeners):
    c = socket.socket(socket.AF_UNIX)
    c.connect(name)
    s.setblocking(True)
    s.accept()[0].close()
    s.setblocking(False)
    c.close()
print("READY", flush=True)
sys.stdin.readline()
got = 0
for s in listeners:
    try:
        s.accept()
        got += 1
    except BlockingIOError:
        pass
print("ACCEPTED", got, flush=True)
"#;

/// The client inside: connects to each name (hex, with the folder to connect from, for a
/// relative one), and prints one line each.
const SOCKET_CLIENT: &str = r#"
import os, socket, sys
for arg in sys.argv[1:]:
    folder, name = (bytes.fromhex(h) for h in arg.split(":"))
    if folder:
        os.chdir(folder)
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect(name)
        s.send(b"leak")
        print("connected", name)
    except OSError as err:
        print("refused", name, err)
"#;

#[test]
fn no_host_unix_socket_is_reachable_whatever_name_it_was_bound_with() {
    use std::io::BufRead;
    use std::os::unix::ffi::OsStrExt;
    let scratch = Scratch::new();
    // Seen inside as the host has it (read-only), unlike /tmp.
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home_path = std::fs::canonicalize(home.path()).unwrap();
    // A folder deep enough that the socket's whole path is longer than sun_path's 108 bytes.
    let mut deep = home_path.clone();
    while deep.as_os_str().len() < 120 {
        deep.push("deep-folder-name");
    }
    std::fs::create_dir_all(&deep).unwrap();
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let newline = home_path.join("with\nnewline.sock");
    let odd = home_path.join(std::ffi::OsStr::from_bytes(b"odd \x01\xff bytes.sock"));
    // (the name bound, the folder it is bound from and connected from)
    let sockets: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (
            b"relative.sock".to_vec(),
            home_path.as_os_str().as_bytes().to_vec(),
        ),
        (b"long.sock".to_vec(), deep.as_os_str().as_bytes().to_vec()),
        (newline.as_os_str().as_bytes().to_vec(), Vec::new()),
        (odd.as_os_str().as_bytes().to_vec(), Vec::new()),
        (b"\0sc-guard-abstract".to_vec(), Vec::new()),
    ];
    assert!(deep.join("long.sock").as_os_str().len() > 108);
    let mut servers = Vec::new();
    for (name, folder) in &sockets {
        let folder = if folder.is_empty() {
            home_path.as_os_str()
        } else {
            std::ffi::OsStr::from_bytes(folder)
        };
        let mut server = std::process::Command::new("python3")
            .args(["-c", SOCKET_SERVER, &hex(name)])
            .current_dir(folder)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(server.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line, "READY\n", "the server bound {name:?}");
        servers.push((server, stdout));
    }
    let client = scratch.write("client.py", SOCKET_CLIENT);
    let mut cmd = sandboxed(&scratch, "{}");
    cmd.arg("--home").arg(&home_path).env("HOME", &home_path);
    cmd.args(["--", "python3"]).arg(&client);
    for (name, folder) in &sockets {
        cmd.arg(format!("{}:{}", hex(folder), hex(name)));
    }
    let out = cmd.stdin(std::process::Stdio::null()).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(!stdout.contains("connected"), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("refused")).count(),
        sockets.len(),
        "{stdout}"
    );
    for (mut server, mut stdout) in servers {
        server.stdin.take().unwrap().write_all(b"go\n").unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line, "ACCEPTED 0\n");
        server.wait().unwrap();
    }
}
