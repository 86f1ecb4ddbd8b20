//! sc-mcp over Streamable HTTP: `--listen` in front of a stdio server, `--upstream` in front of a
//! remote one, with real SDK clients and servers, and the listener's refusals (token, Host,
//! Origin, body size, routing headers). The interop matrix of tests/mcp_revisions.rs runs over
//! both transports through [`Listener`].

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::mcp::{events, fake_server, filesystem_server};
use crate::util::{bin_path, testdata, Scratch};

/// Generous: a debug build on two busy cores.
const DEADLINE: Duration = Duration::from_secs(120);

/// A running `sc-mcp --listen 127.0.0.1:0` (killed when dropped).
pub(crate) struct Listener {
    child: Child,
    pub(crate) url: String,
    pub(crate) addr: SocketAddr,
    pub(crate) token: String,
    /// What sc-mcp wrote on stderr so far, and a signal at each line.
    pub(crate) stderr: Arc<(Mutex<String>, Condvar)>,
}

impl Listener {
    /// Starts sc-mcp with `--listen 127.0.0.1:0`, a token file in the scratch folder, `args`, and
    /// `server` after `--` (none with `--upstream`).
    pub(crate) fn start(scratch: &Scratch, args: &[&str], server: &[OsString]) -> Listener {
        let token = "test-token-0123456789";
        let file = scratch.write("listen.token", format!("{token}\nignored\n"));
        let mut command = Command::new(bin_path("sc-mcp"));
        command
            .env("XDG_STATE_HOME", scratch.path("state"))
            .args(["--listen", "127.0.0.1:0", "--token-file"])
            .arg(&file)
            .args(args);
        if !server.is_empty() {
            command.arg("--").args(server);
        }
        let mut listener = Listener::spawn(command);
        listener.token = token.to_owned();
        listener
    }

    /// Starts `command` (an sc-mcp with `--listen`) and waits for its `MCP at` line.
    pub(crate) fn spawn(mut command: Command) -> Listener {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sc-mcp starts");
        let stderr = Arc::new((Mutex::new(String::new()), Condvar::new()));
        let (found, announced) = mpsc::channel();
        {
            let stderr = Arc::clone(&stderr);
            let pipe = child.stderr.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    // Kept before it is announced, so that `stderr()` after the announcement
                    // holds it.
                    {
                        let mut all = stderr.0.lock().unwrap();
                        all.push_str(&line);
                        all.push('\n');
                        stderr.1.notify_all();
                    }
                    if line.starts_with("sc-mcp: MCP at ") {
                        let _ = found.send(line);
                    }
                }
            });
        }
        let line = announced.recv_timeout(DEADLINE).unwrap_or_else(|_| {
            panic!("sc-mcp announced no address: {}", stderr.0.lock().unwrap())
        });
        let url = line["sc-mcp: MCP at ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .to_owned();
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap();
        Listener {
            child,
            url,
            addr,
            token: String::new(),
            stderr,
        }
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr.0.lock().unwrap().clone()
    }

    /// Waits (within the deadline) until sc-mcp's stderr holds `text`.
    pub(crate) fn wait_for_stderr(&self, text: &str) {
        let (all, changed) = &*self.stderr;
        let (all, timeout) = changed
            .wait_timeout_while(all.lock().unwrap(), DEADLINE, |all| !all.contains(text))
            .unwrap();
        assert!(!timeout.timed_out(), "no {text:?} on stderr: {all}");
    }

    /// One raw HTTP/1.1 request; the status and the body.
    pub(crate) fn raw(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
        let (status, _, body) = self.exchange(method, headers, body);
        (status, body)
    }

    /// One raw HTTP/1.1 request; the status, the head and the body.
    pub(crate) fn exchange(
        &self,
        method: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String, String) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        let mut request = format!(
            "{method} /mcp HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            request.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let status = answer
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {answer:?}"));
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        (status, head.to_owned(), body.to_owned())
    }

    /// A JSON-RPC message POSTed with the token and the usual headers (and `extra`).
    pub(crate) fn post(&self, message: &Value, extra: &[(&str, &str)]) -> (u16, String) {
        self.post_as(&self.token.clone(), message, extra)
    }

    /// [`Listener::post`] with another token.
    pub(crate) fn post_as(
        &self,
        token: &str,
        message: &Value,
        extra: &[(&str, &str)],
    ) -> (u16, String) {
        let (status, _, body) = self.post_full(token, message, extra);
        (status, body)
    }

    /// [`Listener::post_as`], with the answer's head.
    pub(crate) fn post_full(
        &self,
        token: &str,
        message: &Value,
        extra: &[(&str, &str)],
    ) -> (u16, String, String) {
        let auth = format!("Bearer {token}");
        let mut headers = vec![
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        headers.extend_from_slice(extra);
        self.exchange("POST", &headers, message.to_string().as_bytes())
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON-RPC messages of an event stream's body (or of a JSON body).
pub(crate) fn messages(body: &str) -> Vec<Value> {
    let data: Vec<Value> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect();
    if data.is_empty() {
        serde_json::from_str(body.trim()).into_iter().collect()
    } else {
        data
    }
}

fn verify(audit: &Path) {
    let output = Command::new(bin_path("sc-report"))
        .env_clear()
        .arg("--verify")
        .arg(audit)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the audit chain verifies: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn read_events(audit: &Path) -> Vec<Value> {
    std::fs::read_to_string(audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn python() -> PathBuf {
    testdata("mcp/venv/bin/python")
}

#[test]
fn the_listener_refuses_no_token_a_foreign_host_or_origin_an_oversize_body_and_mismatched_headers()
{
    let scratch = Scratch::new();
    let audit = scratch.path("audit.jsonl");
    let policy = testdata("mcp/fake-policy.json");
    let listener = Listener::start(
        &scratch,
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
            "--agent",
            "crew",
            "--max-message-bytes",
            "4096",
        ],
        &fake_server(),
    );
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let body = list.to_string();
    // No token, a wrong one: 401, and nothing reached a session.
    let (status, _) = listener.raw(
        "POST",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(status, 401);
    let (status, _) = listener.raw(
        "POST",
        &[
            ("Authorization", "Bearer wrong"),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
    );
    assert_eq!(status, 401);
    // A foreign Host (DNS rebinding) or Origin: 403, even with the token.
    let foreign_host = format!("evil.example:{}", listener.addr.port());
    let (status, _) = listener.post(&list, &[("Host", &foreign_host)]);
    assert_eq!(status, 403);
    let (status, _) = listener.post(&list, &[("Origin", "http://evil.example")]);
    assert_eq!(status, 403);
    // An oversize body: 413.
    let big = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"x": "y".repeat(5000)}}});
    let (status, _) = listener.post(&big, &[]);
    assert_eq!(status, 413);
    // A 2026-07-28 request whose Mcp-Name is not its tool: 400 with HeaderMismatch, not run.
    let modern = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"said": "hi"}, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, body) = listener.post(
        &modern,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "write_file"),
        ],
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(messages(&body)[0]["error"]["code"], -32020, "{body}");
    // No standalone stream.
    let auth = format!("Bearer {}", listener.token);
    let (status, _) = listener.raw("GET", &[("Authorization", &auth)], b"");
    assert_eq!(status, 405);
    // The same request with the right headers runs.
    let (status, body) = listener.post(
        &modern,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
        ],
    );
    assert_eq!(status, 200, "{body}");
    let answer = &messages(&body)[0];
    assert_eq!(answer["id"], 3, "{body}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hi"),
        "{body}"
    );
    // Only that one call was ever decided.
    let log = read_events(&audit);
    let gates = events(&log, "gate");
    assert_eq!(gates.len(), 1, "{log:?}");
    assert_eq!(gates[0]["call"]["tool"], "echo");
    verify(&audit);
}

#[test]
fn a_made_token_is_announced_kept_private_in_the_state_folder_and_required() {
    let scratch = Scratch::new();
    let mut command = Command::new(bin_path("sc-mcp"));
    command
        .env("XDG_STATE_HOME", scratch.path("state"))
        .args(["--listen", "127.0.0.1:0", "--audit"])
        .arg(scratch.path("audit.jsonl"))
        .args(["--policy"])
        .arg(testdata("mcp/fake-policy.json"))
        .arg("--")
        .args(fake_server());
    let mut listener = Listener::spawn(command);
    let stderr = listener.stderr();
    let file = stderr
        .split(" (token in ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no token file announced: {stderr}"));
    let file = PathBuf::from(file);
    assert!(
        file.starts_with(scratch.path("state")),
        "{}",
        file.display()
    );
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    listener.token = std::fs::read_to_string(&file).unwrap().trim().to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let (status, body) = listener.post(&list, &[]);
    assert_eq!(status, 200, "{body}");
    assert!(messages(&body)[0]["result"]["tools"].is_array(), "{body}");
}

#[test]
fn an_http_clients_server_crash_mid_call_fails_closed_and_is_audited() {
    let scratch = Scratch::new();
    let audit = scratch.path("audit.jsonl");
    let policy = testdata("mcp/fake-policy.json");
    let listener = Listener::start(
        &scratch,
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
            "--agent",
            "crew",
        ],
        &fake_server(),
    );
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "crash", "arguments": {}}});
    let (status, body) = listener.post(&call, &[]);
    assert_eq!(status, 200, "{body}");
    let answer = &messages(&body)[0];
    assert_eq!(answer["id"], 7, "{body}");
    assert_eq!(answer["error"]["code"], -32603, "{body}");
    let log = read_events(&audit);
    let execs = events(&log, "exec");
    assert_eq!(execs.len(), 1, "{log:?}");
    assert_eq!(execs[0]["outcome"]["status"], "failed", "{log:?}");
    verify(&audit);
    // The session ended with its server; the next request starts a new one, with a server of
    // its own.
    listener.wait_for_stderr("sc-mcp: listen: crew: the session ended");
    let echo = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "echo", "arguments": {"said": "again"}}});
    let (status, body) = listener.post(&echo, &[]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("again"), "{body}");
}

#[test]
fn the_typescript_sdk_client_over_http_through_sc_mcp_to_the_filesystem_server() {
    let scratch = Scratch::new();
    scratch.write("served/notes.txt", "remember the milk\n");
    let root = scratch.path("served");
    let audit = scratch.path("audit.jsonl");
    let policy = testdata("mcp/filesystem-policy.json");
    let listener = Listener::start(
        &scratch,
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
            "--agent",
            "fs",
        ],
        &[
            OsString::from("node"),
            filesystem_server().into_os_string(),
            root.clone().into_os_string(),
        ],
    );
    let plan = json!({"declare": true, "answer": "accept-true", "calls": [
        {"name": "read_text_file", "arguments": {"path": root.join("notes.txt")}},
        {"name": "write_file", "arguments": {"path": root.join("x.txt"), "content": "x"}},
        {"name": "create_directory", "arguments": {"path": root.join("made")}},
    ]});
    let output = Command::new("node")
        .arg(testdata("mcp/http-client.mjs"))
        .arg(plan.to_string())
        .arg(&listener.url)
        .env("SC_MCP_TOKEN", &listener.token)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        listener.stderr()
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    let tools = report["tools"].as_array().unwrap();
    assert!(!tools.contains(&json!("write_file")), "{report}");
    let results = report["results"].as_array().unwrap();
    assert_ne!(results[0]["isError"], true, "{report}");
    assert!(
        results[0].to_string().contains("remember the milk"),
        "{report}"
    );
    assert_eq!(results[1]["isError"], true, "{report}");
    assert_ne!(results[2]["isError"], true, "{report}");
    assert_eq!(
        report["elicitations"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    assert!(root.join("made").is_dir());
    assert!(!root.join("x.txt").exists());
    let log = read_events(&audit);
    let approvals = events(&log, "approve");
    assert_eq!(approvals.len(), 1, "{log:?}");
    assert_eq!(approvals[0]["approval"]["by"], "elicitation");
    verify(&audit);
}

// ---------------------------------------------------------------------------------------------
// --upstream

/// A Python SDK server over Streamable HTTP that wants `Authorization: Bearer SECRET`.
pub(crate) struct PyHttpServer {
    child: Child,
    pub(crate) url: String,
}

pub(crate) const UPSTREAM_SECRET: &str = "upstream-s3cret-never-shown";

impl PyHttpServer {
    /// testdata/mcp/py-server.py over HTTP, with `extra` arguments after `--http`
    /// (`--modern-only`: it speaks 2026-07-28 only).
    pub(crate) fn start_with(root: &Path, extra: &[&str]) -> PyHttpServer {
        let mut child = Command::new(python())
            .arg(testdata("mcp/py-server.py"))
            .arg(root)
            .arg("--http")
            .args(extra)
            .env("PY_SERVER_TOKEN", UPSTREAM_SECRET)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (found, url) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = found.send(line.trim().to_owned());
        });
        let url = url
            .recv_timeout(DEADLINE)
            .expect("the Python server prints its URL");
        PyHttpServer { child, url }
    }
}

impl Drop for PyHttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// sc-mcp with `--upstream URL` and the header, the scripted JSON-RPC client on stdio: one
/// `tools/call` of `echo`; its answer and sc-mcp's stderr.
fn call_through_upstream(scratch: &Scratch, url: &str, timeout: &str) -> (Value, String) {
    let mut child = Command::new(bin_path("sc-mcp"))
        .arg("--audit")
        .arg(scratch.audit_path())
        .arg("--policy")
        .arg(testdata("mcp/fake-policy.json"))
        .args([
            "--agent",
            "crew",
            "--upstream",
            url,
            "--upstream-timeout",
            timeout,
            "--upstream-header",
        ])
        .arg(format!("Authorization: Bearer {UPSTREAM_SECRET}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {}}});
    writeln!(stdin, "{call}").unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    (
        serde_json::from_str(first.trim()).unwrap_or(Value::Null),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn an_upstream_down_slow_or_answering_garbage_fails_closed_without_showing_its_credentials() {
    // Down: a port nobody listens on.
    let down = TcpListener::bind("127.0.0.1:0").unwrap();
    let down_url = format!("http://{}/mcp", down.local_addr().unwrap());
    drop(down);
    // Slow: accepts, never answers.
    let slow = TcpListener::bind("127.0.0.1:0").unwrap();
    let slow_url = format!("http://{}/mcp", slow.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in slow.incoming().flatten() {
            held.push(stream);
        }
    });
    // Garbage: answers every request with a body that is not JSON.
    let garbage = TcpListener::bind("127.0.0.1:0").unwrap();
    let garbage_url = format!("http://{}/mcp", garbage.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in garbage.incoming().flatten() {
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot json!");
        }
    });
    for (url, timeout) in [(&down_url, "60"), (&slow_url, "2"), (&garbage_url, "60")] {
        let scratch = Scratch::new();
        let (answer, stderr) = call_through_upstream(&scratch, url, timeout);
        assert_eq!(answer["id"], 1, "{url}: {answer} {stderr}");
        assert_eq!(answer["error"]["code"], -32603, "{url}: {answer} {stderr}");
        let audit = std::fs::read_to_string(scratch.audit_path()).unwrap();
        let everything = format!("{answer}{stderr}{audit}");
        assert!(!everything.contains(UPSTREAM_SECRET), "{everything}");
        let log = read_events(&scratch.audit_path());
        let execs = events(&log, "exec");
        assert_eq!(execs.len(), 1, "{url}: {log:?}");
        assert_eq!(execs[0]["outcome"]["status"], "failed", "{url}: {log:?}");
        verify(&scratch.audit_path());
    }
}

/// The `Mcp-Session-Id` of an answer's head.
fn session_id(head: &str) -> String {
    head.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no Mcp-Session-Id: {head}"))
}

fn initialize(elicitation: bool) -> Value {
    let capabilities = if elicitation {
        json!({"elicitation": {}})
    } else {
        json!({})
    };
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}})
}

/// sc-mcp --listen with a second client's token (`other`) and --agent-header X-Agent.
fn two_clients(scratch: &Scratch, extra: &[&str]) -> Listener {
    let other = scratch.write("other.token", "other-token-9876543210\n");
    let policy = testdata("mcp/fake-policy.json");
    let audit = scratch.path("audit.jsonl");
    let client = format!("other={}", other.display());
    let mut args = vec![
        "--policy",
        policy.to_str().unwrap(),
        "--audit",
        audit.to_str().unwrap(),
        "--agent",
        "crew",
        "--agent-header",
        "X-Agent",
        "--client",
        &client,
    ];
    args.extend_from_slice(extra);
    Listener::start(scratch, &args, &fake_server())
}

const OTHER_TOKEN: &str = "other-token-9876543210";

#[test]
fn a_principal_is_its_token_and_an_answer_is_taken_only_on_the_session_that_was_asked() {
    let scratch = Scratch::new();
    let listener = two_clients(&scratch, &["--no-prompt"]);
    let token = listener.token.clone();
    // The first token names itself el and starts a session.
    let (status, head, body) = listener.post_full(&token, &initialize(true), &[("X-Agent", "el")]);
    assert_eq!(status, 200, "{body}");
    let session = session_id(&head);
    // Another token cannot act as el, nor as the first token's label.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    for name in ["el", "crew"] {
        let (status, body) = listener.post_as(OTHER_TOKEN, &list, &[("X-Agent", name)]);
        assert_eq!(status, 403, "{name}: {body}");
        assert!(body.contains("another client's token"), "{body}");
    }
    let (status, body) = listener.post_as(
        OTHER_TOKEN,
        &list,
        &[("X-Agent", "el"), ("Mcp-Session-Id", &session)],
    );
    assert_eq!(status, 403, "{body}");
    // After initialize, a request without the session's id is refused.
    let (status, body) = listener.post_as(&token, &list, &[("X-Agent", "el")]);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Mcp-Session-Id"), "{body}");
    // An answer without the session's id, or to a question never asked, is refused: nothing
    // reaches the run.
    let answer = json!({"jsonrpc": "2.0", "id": "sc-mcp-elicit-1", "result": {"action": "accept", "content": {"approve": true, "scope": "call"}}});
    let (status, body) = listener.post_as(&token, &answer, &[("X-Agent", "el")]);
    assert_eq!(status, 400, "{body}");
    let (status, body) = listener.post_as(
        &token,
        &answer,
        &[("X-Agent", "el"), ("Mcp-Session-Id", &session)],
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("no question"), "{body}");
    // With its session's id the client is served, as el.
    let (status, body) = listener.post_as(
        &token,
        &list,
        &[("X-Agent", "el"), ("Mcp-Session-Id", &session)],
    );
    assert_eq!(status, 200, "{body}");
    assert!(messages(&body)[0]["result"]["tools"].is_array(), "{body}");
    // The other token is a principal of its own, under its label.
    let (status, body) = listener.post_as(OTHER_TOKEN, &list, &[]);
    assert_eq!(status, 200, "{body}");
}

/// A tools/call of `tool` POSTed as `agent` with `token`: whether it ran (its answer is not a
/// refusal).
fn ran(listener: &Listener, token: &str, agent: &str, id: i64, tool: &str) -> bool {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}});
    let (status, body) = listener.post_as(token, &call, &[("X-Agent", agent)]);
    assert_eq!(status, 200, "{body}");
    let answer = &messages(&body)[0];
    assert_eq!(answer["id"], id, "{body}");
    answer["result"]["isError"] != true
}

#[test]
fn taint_outlives_a_deleted_session_and_is_shared_by_every_name_of_a_token() {
    let scratch = Scratch::new();
    let listener = two_clients(&scratch, &["--no-prompt"]);
    let token = listener.token.clone();
    assert!(
        ran(&listener, &token, "alice", 1, "shout"),
        "untainted runs"
    );
    assert!(ran(&listener, &token, "alice", 2, "garbage"));
    assert!(
        !ran(&listener, &token, "alice", 3, "shout"),
        "tainted is held"
    );
    // The client ends its session: its taint stays.
    let (status, head, body) =
        listener.post_full(&token, &initialize(false), &[("X-Agent", "alice")]);
    assert_eq!(status, 200, "{body}");
    let session = session_id(&head);
    let auth = format!("Bearer {token}");
    let (status, _) = listener.raw(
        "DELETE",
        &[
            ("Authorization", &auth),
            ("X-Agent", "alice"),
            ("Mcp-Session-Id", &session),
        ],
        b"",
    );
    assert_eq!(status, 200);
    listener.wait_for_stderr("sc-mcp: listen: alice: the session ended");
    assert!(
        !ran(&listener, &token, "alice", 4, "shout"),
        "still tainted"
    );
    // Another name under the same token shares the taint.
    assert!(
        !ran(&listener, &token, "bob", 5, "shout"),
        "bob is alice's token"
    );
    // Another token's principal is not tainted.
    assert!(ran(&listener, OTHER_TOKEN, "carol", 6, "shout"));
}

#[test]
fn with_a_crew_a_token_names_one_agent_and_its_taint_outlives_the_session() {
    let scratch = Scratch::new();
    let listener = two_clients(
        &scratch,
        &["--no-prompt", "--crew", "c1", "--idle-timeout", "1"],
    );
    let token = listener.token.clone();
    assert!(ran(&listener, &token, "alice", 1, "garbage"));
    listener.wait_for_stderr("sc-mcp: listen: alice: the session ended");
    assert!(
        !ran(&listener, &token, "alice", 2, "shout"),
        "still tainted"
    );
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "shout", "arguments": {}}});
    let (status, body) = listener.post_as(&token, &call, &[("X-Agent", "bob")]);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("acts as agent"), "{body}");
}

#[test]
fn an_upstreams_url_path_and_query_and_an_echoed_credential_are_never_shown() {
    // Answers every request with an error that echoes the credential it was sent.
    let reflect = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = reflect.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in reflect.incoming().flatten() {
            let mut buffer = [0u8; 8192];
            let _ = stream.read(&mut buffer);
            let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": format!("bad credentials: Bearer {UPSTREAM_SECRET}")}}).to_string();
            let _ = write!(stream, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        }
    });
    let scratch = Scratch::new();
    let url = format!("http://127.0.0.1:{port}/s/PATHSECRET/mcp?api_key=QSECRET");
    let (answer, stderr) = call_through_upstream(&scratch, &url, "60");
    assert_eq!(answer["id"], 1, "{answer} {stderr}");
    assert!(
        answer.to_string().contains("bad credentials: [redacted]"),
        "{answer}"
    );
    let audit = std::fs::read_to_string(scratch.audit_path()).unwrap();
    let everything = format!("{answer}{stderr}{audit}");
    for secret in [UPSTREAM_SECRET, "PATHSECRET", "QSECRET"] {
        assert!(!everything.contains(secret), "{secret}: {everything}");
    }
    // A refused port: the error names the host and port only.
    let down = TcpListener::bind("127.0.0.1:0").unwrap();
    let down_url = format!(
        "http://{}/p/PATHSECRET?k=QSECRET",
        down.local_addr().unwrap()
    );
    drop(down);
    let scratch = Scratch::new();
    let (answer, stderr) = call_through_upstream(&scratch, &down_url, "60");
    assert_eq!(answer["error"]["code"], -32603, "{answer} {stderr}");
    let audit = std::fs::read_to_string(scratch.audit_path()).unwrap();
    let everything = format!("{answer}{stderr}{audit}");
    assert!(!everything.contains("SECRET"), "{everything}");
}

#[test]
fn an_upstream_header_without_an_upstream_is_a_usage_error() {
    let scratch = Scratch::new();
    let output = Command::new(bin_path("sc-mcp"))
        .env("XDG_STATE_HOME", scratch.path("state"))
        .arg("--audit")
        .arg(scratch.audit_path())
        .args(["--upstream-header", "Authorization: Bearer x", "--"])
        .args(fake_server())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}

/// A POST of `message` with `token` on a connection of its own, left open once the answer's
/// head has come; the connection and the head.
fn open_request(listener: &Listener, token: &str, message: &Value) -> (TcpStream, String) {
    open_request_with(listener, token, message, &[])
}

/// [`open_request`] with `extra` headers.
fn open_request_with(
    listener: &Listener,
    token: &str,
    message: &Value,
    extra: &[(&str, &str)],
) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(listener.addr).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let body = message.to_string();
    let extra: String = extra
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        listener.addr,
        body.len()
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut byte).unwrap();
        assert_eq!(read, 1, "the connection closed before the head: {head:?}");
        head.push(byte[0]);
    }
    (stream, String::from_utf8_lossy(&head).into_owned())
}

/// Whether the listener closes `stream` (within the deadline) without answering.
fn closed_unanswered(mut stream: TcpStream) -> bool {
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => answer.is_empty(),
        Err(err) => err.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

#[test]
fn a_request_whose_client_went_away_is_not_waited_on_and_one_token_cannot_take_every_stream() {
    let scratch = Scratch::new();
    let listener = two_clients(
        &scratch,
        &["--max-streams", "2", "--idle-timeout", "1", "--no-prompt"],
    );
    let token = listener.token.clone();
    let hang = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "hang", "arguments": {}}});
    let (first, head) = open_request(&listener, &token, &hang(1));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // One token holds at most half of --max-streams: the other token is still served.
    let (status, body) = listener.post(&hang(2), &[]);
    assert_eq!(status, 429, "{body}");
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}});
    let (status, body) = listener.post_as(OTHER_TOKEN, &list, &[]);
    assert_eq!(status, 200, "{body}");
    // The client goes away: its request is cancelled, and its session, with nothing waiting,
    // ends when idle.
    drop(first);
    listener.wait_for_stderr("crew: a request's client went away before its answer");
    listener.wait_for_stderr("sc-mcp: listen: crew: the session ended");
    // Its id can be used again, and its slot is free.
    let (second, head) = open_request(&listener, &token, &hang(1));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    drop(second);
}

#[test]
fn slow_or_oversize_requests_and_too_many_connections_are_cut_off() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let audit = scratch.path("audit.jsonl");
    let listener = Listener::start(
        &scratch,
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
            "--max-message-bytes",
            "1000",
            "--read-timeout",
            "1",
        ],
        &fake_server(),
    );
    // A Content-Length over the limit: 413 at once, before any of the body.
    let mut stream = TcpStream::connect(listener.addr).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n",
        listener.addr, listener.token
    )
    .unwrap();
    let mut answer = [0u8; 12];
    stream.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 413");
    // An absolute-form target names another host: 403, whatever the Host says.
    let mut stream = TcpStream::connect(listener.addr).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    write!(
        stream,
        "POST http://evil.example/mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Length: 0\r\n\r\n",
        listener.addr, listener.token
    )
    .unwrap();
    let mut answer = [0u8; 12];
    stream.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 403");
    // Headers that never end: the connection is closed.
    let mut stream = TcpStream::connect(listener.addr).unwrap();
    write!(stream, "POST /mcp HTTP/1.1\r\nHost: {}\r\n", listener.addr).unwrap();
    assert!(closed_unanswered(stream));
    // A body that never ends: 408.
    let mut stream = TcpStream::connect(listener.addr).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        listener.addr, listener.token
    )
    .unwrap();
    let mut answer = [0u8; 12];
    stream.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 408");
    drop(listener);

    // At most --max-connections at once: one more is closed at once.
    let scratch = Scratch::new();
    let listener = Listener::start(
        &scratch,
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
            "--max-connections",
            "2",
            "--read-timeout",
            "600",
        ],
        &fake_server(),
    );
    let held: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(listener.addr).unwrap())
        .collect();
    let extra = TcpStream::connect(listener.addr).unwrap();
    assert!(closed_unanswered(extra));
    drop(held);
    // Their slots come back once the listener sees them closed.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let started = std::time::Instant::now();
    loop {
        let mut stream = TcpStream::connect(listener.addr).unwrap();
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        let body = list.to_string();
        // While the slots are still taken the listener closes a new connection at once, and
        // the request's write may meet the closed socket (a broken pipe): that is a try too.
        let sent = write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            listener.addr,
            listener.token,
            body.len()
        );
        let mut answer = Vec::new();
        if sent.is_ok() {
            let _ = stream.read_to_end(&mut answer);
        }
        if answer.starts_with(b"HTTP/1.1 200") {
            break;
        }
        assert!(started.elapsed() < DEADLINE, "never served again");
    }
}

/// The next JSON-RPC message on an open event stream.
fn next_event(stream: &mut BufReader<TcpStream>) -> Value {
    loop {
        let mut line = String::new();
        let read = stream.read_line(&mut line).unwrap();
        assert!(read > 0, "the event stream ended");
        if let Some(data) = line.trim_end().strip_prefix("data: ") {
            return serde_json::from_str(data).unwrap();
        }
    }
}

#[test]
fn a_held_calls_question_is_answered_only_by_its_own_client_on_its_own_session() {
    let scratch = Scratch::new();
    let listener = two_clients(&scratch, &[]);
    let token = listener.token.clone();
    let (status, head, body) = listener.post_full(&token, &initialize(true), &[("X-Agent", "el")]);
    assert_eq!(status, 200, "{body}");
    let session = session_id(&head);
    let as_el = [("X-Agent", "el"), ("Mcp-Session-Id", session.as_str())];
    let garbage = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "garbage", "arguments": {}}});
    let (status, body) = listener.post_as(&token, &garbage, &as_el);
    assert_eq!(status, 200, "{body}");
    // el is tainted: shout is held, and the question goes out on the call's stream.
    let shout = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shout", "arguments": {}}});
    let (stream, head) = open_request_with(&listener, &token, &shout, &as_el);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let mut stream = BufReader::new(stream);
    let asked = next_event(&mut stream);
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let question = asked["id"].as_str().unwrap().to_owned();
    let yes = |id: &str| json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"approve": true, "scope": "call"}}});
    // Another token, even with el's name and session id: 403. The same token without the
    // session id, or with a guessed question id: 400.
    let (status, body) = listener.post_as(OTHER_TOKEN, &yes(&question), &as_el);
    assert_eq!(status, 403, "{body}");
    let (status, body) = listener.post_as(&token, &yes(&question), &[("X-Agent", "el")]);
    assert_eq!(status, 400, "{body}");
    for guess in ["sc-mcp-elicit-1", "sc-mcp-elicit-2"] {
        let (status, body) = listener.post_as(&token, &yes(guess), &as_el);
        assert_eq!(status, 400, "{guess}: {body}");
    }
    // No approval so far.
    let audit = scratch.path("audit.jsonl");
    assert!(events(&read_events(&audit), "approve").is_empty());
    // el's own answer, on its session: the call runs.
    let (status, body) = listener.post_as(&token, &yes(&question), &as_el);
    assert_eq!(status, 202, "{body}");
    let answer = next_event(&mut stream);
    assert_eq!(answer["id"], 2, "{answer}");
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    // The same answer again is refused: the question was answered.
    let (status, body) = listener.post_as(&token, &yes(&question), &as_el);
    assert_eq!(status, 400, "{body}");
    let log = read_events(&audit);
    let approvals = events(&log, "approve");
    assert_eq!(approvals.len(), 1, "{log:?}");
    assert_eq!(approvals[0]["agent"], "el", "{log:?}");
    assert_eq!(approvals[0]["approval"]["by"], "elicitation", "{log:?}");
    verify(&audit);
}
