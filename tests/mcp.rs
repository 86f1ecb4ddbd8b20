//! sc-mcp as a process, between a scripted MCP client (the test) and a real MCP server.
//!
//! The real server is the reference `@modelcontextprotocol/server-filesystem`, pinned in
//! testdata/mcp/package-lock.json and installed by `make test-deps`. The fault cases use the
//! hermetic fake in testdata/mcp/fake-server.py, which logs every line it receives so a test can
//! prove what never reached it. sc-mcp runs in a new session with no controlling terminal (so a
//! developer's terminal is never asked), except in the one test that gives it a pseudo-terminal.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::terminal::{Terminal, Tty};
use crate::util::{bin_path, testdata, Scratch};

/// How long the client waits for any one answer, and for sc-mcp to end.
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// The published server's entry point; `make test-deps` installs it.
pub(crate) fn filesystem_server() -> PathBuf {
    let path = testdata("mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run `make test-deps` (npm ci --prefix testdata/mcp)",
        path.display()
    );
    path
}

pub(crate) fn fake_server() -> Vec<OsString> {
    vec![
        "python3".into(),
        testdata("mcp/fake-server.py").into_os_string(),
    ]
}

/// A running sc-mcp with the test as its client.
pub(crate) struct Proxy {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line sc-mcp wrote to the client so far.
    received: Vec<String>,
    stdout_reader: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    /// sc-mcp's stderr so far, and a bell rung at each new piece of it.
    stderr_seen: Arc<(Mutex<Vec<u8>>, Condvar)>,
    terminal: Terminal,
}

pub(crate) struct Finished {
    pub(crate) status: ExitStatus,
    pub(crate) stderr: String,
    /// Every line sc-mcp wrote to the client, the whole session long.
    pub(crate) received: Vec<String>,
}

impl Proxy {
    pub(crate) fn spawn(scratch: &Scratch, args: &[&str], server: &[OsString]) -> Proxy {
        Proxy::spawn_with(scratch, args, server, Tty::None)
    }

    /// With `--audit` set to the scratch log unless `args` name another.
    pub(crate) fn spawn_with(
        scratch: &Scratch,
        args: &[&str],
        server: &[OsString],
        tty: Tty,
    ) -> Proxy {
        let mut cmd = Command::new(bin_path("sc-mcp"));
        if !args.contains(&"--audit") {
            cmd.arg("--audit").arg(scratch.audit_path());
        }
        Proxy::spawn_command(cmd, scratch, scratch.dir.path(), &[], args, server, tty)
    }

    /// As an MCP client starts it: in `folder`, with only `args` (no `--audit` added) and the
    /// environment `env` besides PATH, under the umask most shells have.
    pub(crate) fn spawn_as_configured(
        scratch: &Scratch,
        folder: &Path,
        env: &[(&str, &Path)],
        args: &[&str],
        server: &[OsString],
    ) -> Proxy {
        let mut cmd = Command::new(bin_path("sc-mcp"));
        crate::util::with_usual_umask(&mut cmd);
        Proxy::spawn_command(cmd, scratch, folder, env, args, server, Tty::None)
    }

    fn spawn_command(
        mut cmd: Command,
        scratch: &Scratch,
        folder: &Path,
        env: &[(&str, &Path)],
        args: &[&str],
        server: &[OsString],
        tty: Tty,
    ) -> Proxy {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("FAKE_MCP_LOG", scratch.path("server-received.jsonl"))
            .envs(env.iter().map(|(name, value)| (name, value.as_os_str())))
            .current_dir(folder);
        cmd.args(args)
            .arg("--")
            .args(server)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut terminal = Terminal::attach(&mut cmd, tty);
        let mut child = cmd.spawn().expect("sc-mcp starts");
        terminal.start();
        let (sender, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let stdout_reader = thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr_pipe = child.stderr.take().unwrap();
        let stderr_seen = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let shared = Arc::clone(&stderr_seen);
        let stderr = thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            loop {
                match stderr_pipe.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        let (bytes, bell) = &*shared;
                        bytes.lock().unwrap().extend_from_slice(&chunk[..n]);
                        bell.notify_all();
                    }
                    Err(err) if err.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let (bytes, bell) = &*shared;
            bell.notify_all();
            let all = bytes.lock().unwrap().clone();
            all
        });
        Proxy {
            stdin: child.stdin.take(),
            child,
            lines,
            received: Vec::new(),
            stdout_reader: Some(stdout_reader),
            stderr: Some(stderr),
            stderr_seen,
            terminal,
        }
    }

    /// Waits until `count` whole lines of sc-mcp's stderr contain `text`, and returns them.
    pub(crate) fn wait_for_stderr_lines(&self, text: &str, count: usize) -> Vec<String> {
        let (bytes, bell) = &*self.stderr_seen;
        let deadline = Instant::now() + WAIT;
        let mut bytes = bytes.lock().unwrap();
        loop {
            let whole = bytes
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |end| end + 1);
            let found: Vec<String> = String::from_utf8_lossy(&bytes[..whole])
                .lines()
                .filter(|line| line.contains(text))
                .map(str::to_owned)
                .collect();
            if found.len() >= count {
                return found;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "sc-mcp never said {text:?} {count} times; it said {}",
                String::from_utf8_lossy(&bytes)
            );
            bytes = bell.wait_timeout(bytes, left).unwrap().0;
        }
    }

    /// Waits for a whole line of sc-mcp's stderr that contains `text`, and returns it.
    pub(crate) fn wait_for_stderr(&self, text: &str) -> String {
        self.wait_for_stderr_lines(text, 1).remove(0)
    }

    /// Sends one line to sc-mcp as the client.
    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        match stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
        {
            Err(err) if err.kind() != ErrorKind::BrokenPipe => panic!("write to sc-mcp: {err}"),
            _ => {}
        }
    }

    /// Stops reading sc-mcp's output, as a client that went away: the reader takes one more
    /// line, then closes its end of the pipe, so a write after that fails. Lines written from
    /// now on are not kept.
    pub(crate) fn stop_reading(&mut self) {
        let (_, closed) = mpsc::channel();
        self.lines = closed;
    }

    /// The pid of the one process sc-mcp started (the MCP server), once it has started it.
    pub(crate) fn server_pid(&self) -> u32 {
        let deadline = Instant::now() + WAIT;
        loop {
            let tasks = std::fs::read_dir(format!("/proc/{}/task", self.child.id()))
                .expect("sc-mcp's tasks");
            let children: Vec<u32> = tasks
                .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("children")).ok())
                .flat_map(|text| {
                    text.split_whitespace()
                        .map(|pid| pid.parse().expect("a pid"))
                        .collect::<Vec<u32>>()
                })
                .collect();
            if let [pid] = children[..] {
                return pid;
            }
            assert!(
                children.is_empty() && Instant::now() < deadline,
                "sc-mcp started {children:?}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn send_value(&mut self, message: &Value) {
        self.send(&message.to_string());
    }

    /// Sends a request and waits for the answer with its id.
    pub(crate) fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send_value(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(&json!(id))
    }

    pub(crate) fn call(&mut self, id: i64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }

    pub(crate) fn initialize(&mut self) -> Value {
        self.initialize_with(json!({}))
    }

    /// Initializes as a client with these capabilities.
    pub(crate) fn initialize_with(&mut self, capabilities: Value) -> Value {
        let answer = self.request(
            0,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": capabilities,
                "clientInfo": {"name": "skeleton-crew-tests", "version": "1"}
            }),
        );
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        answer
    }

    /// The id of sc-mcp's `number`th question to the client (`sc-mcp-elicit-N-R`, R random),
    /// once it was received.
    pub(crate) fn question_id(&self, number: u32) -> String {
        let prefix = format!("sc-mcp-elicit-{number}-");
        self.received
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|message| message.get("method").is_some())
            .find_map(|message| {
                let id = message["id"].as_str()?;
                id.starts_with(&prefix).then(|| id.to_owned())
            })
            .unwrap_or_else(|| panic!("no question {prefix}… received"))
    }

    /// The first message sc-mcp wrote to the client (so far, or from now on) that `wanted` picks.
    pub(crate) fn message_where(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(found) = self
            .received
            .iter()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .find(|value| wanted(value))
        {
            return found;
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                        panic!("sc-mcp wrote a line that is not JSON ({e}): {line}")
                    });
                    self.received.push(line);
                    if wanted(&value) {
                        return value;
                    }
                }
                Err(err) => {
                    let stderr = self.stderr_so_far();
                    panic!(
                        "no {what} within {WAIT:?} ({err:?}); received: {:#?}; stderr: {stderr}",
                        self.received
                    )
                }
            }
        }
    }

    /// Waits for the answer (not a request) with this id.
    pub(crate) fn answer(&mut self, id: &Value) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                        panic!("sc-mcp wrote a line that is not JSON ({e}): {line}")
                    });
                    self.received.push(line);
                    if value.get("method").is_none() && value.get("id") == Some(id) {
                        return value;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no answer to id {id} within {WAIT:?}; received so far: {:#?}",
                    self.received
                ),
                Err(RecvTimeoutError::Disconnected) => {
                    let stderr = self.stderr_so_far();
                    panic!(
                        "sc-mcp closed its output before answering id {id}; received: {:#?}; stderr: {stderr}",
                        self.received
                    )
                }
            }
        }
    }

    fn stderr_so_far(&mut self) -> String {
        let _ = self.child.kill();
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        String::from_utf8_lossy(&stderr).into_owned()
    }

    /// Waits until `text` shows on the pseudo-terminal (after what earlier waits matched).
    pub(crate) fn wait_for_screen(&mut self, text: &str) -> String {
        self.terminal.wait_for(text, WAIT)
    }

    fn type_line(&mut self, line: &str) {
        self.terminal.type_line(line);
    }

    /// Closes the client's side and waits for sc-mcp to end.
    pub(crate) fn finish(mut self) -> Finished {
        self.stdin = None;
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!("sc-mcp did not end within {WAIT:?}");
            }
            thread::sleep(Duration::from_millis(20));
        };
        if let Some(reader) = self.stdout_reader.take() {
            reader.join().unwrap();
        }
        while let Ok(line) = self.lines.try_recv() {
            self.received.push(line);
        }
        self.terminal.close(WAIT);
        let stderr = self.stderr.take().unwrap().join().unwrap();
        Finished {
            status,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            received: std::mem::take(&mut self.received),
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The text of a tool result's first content item.
pub(crate) fn result_text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result in {answer}"))
}

pub(crate) fn is_error(answer: &Value) -> bool {
    answer["result"]["isError"] == true
}

fn tool_names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {answer}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) fn events<'a>(all: &'a [Value], stage: &str) -> Vec<&'a Value> {
    all.iter().filter(|e| e["stage"] == stage).collect()
}

/// What the fake server received, one line each: its whole lines, since it may still be writing.
pub(crate) fn server_received(scratch: &Scratch) -> String {
    let bytes = std::fs::read(scratch.path("server-received.jsonl")).unwrap_or_default();
    let whole = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |end| end + 1);
    String::from_utf8_lossy(&bytes[..whole]).into_owned()
}

pub(crate) fn report_json(scratch: &Scratch) -> Value {
    let out = scratch.cmd_report_args(&["--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A folder for the filesystem server to serve, with one file in it.
pub(crate) fn served_folder(scratch: &Scratch) -> PathBuf {
    scratch.write("served/notes.txt", "remember the milk\n");
    scratch.path("served")
}

fn filesystem_proxy(scratch: &Scratch, extra: &[&str]) -> (Proxy, PathBuf) {
    let root = served_folder(scratch);
    let policy = testdata("mcp/filesystem-policy.json");
    let mut args = vec!["--policy", policy.to_str().unwrap(), "--agent", "fs"];
    args.extend_from_slice(extra);
    let server = vec![
        OsString::from("node"),
        filesystem_server().into_os_string(),
        root.clone().into_os_string(),
    ];
    (Proxy::spawn(scratch, &args, &server), root)
}

#[test]
fn the_published_filesystem_server_behind_the_gate() {
    let scratch = Scratch::new();
    let (mut proxy, root) = filesystem_proxy(&scratch, &[]);
    let init = proxy.initialize();
    assert_eq!(
        init["result"]["serverInfo"]["name"], "secure-filesystem-server",
        "{init}"
    );

    // The deny-listed tools are gone from the list; the rest is the server's own.
    let list = proxy.request(1, "tools/list", json!({}));
    let names = tool_names(&list);
    for present in ["list_directory", "read_text_file", "create_directory"] {
        assert!(
            names.iter().any(|n| n == present),
            "{present} missing: {names:?}"
        );
    }
    for absent in ["write_file", "move_file"] {
        assert!(
            !names.iter().any(|n| n == absent),
            "{absent} listed: {names:?}"
        );
    }
    assert!(
        list["result"]["tools"][0]["inputSchema"].is_object(),
        "{list}"
    );

    // An allowed call returns the server's real result.
    let listing = proxy.call(2, "list_directory", json!({"path": root}));
    assert!(!is_error(&listing), "{listing}");
    assert!(
        result_text(&listing).contains("[FILE] notes.txt"),
        "{listing}"
    );

    // A deny-listed call is answered by the gate and never reaches the server.
    let evil = root.join("evil.txt");
    let denied = proxy.call(3, "write_file", json!({"path": evil, "content": "pwned"}));
    assert!(is_error(&denied), "{denied}");
    assert!(result_text(&denied).contains("deny list"), "{denied}");
    assert!(!evil.exists(), "the denied write reached the server");

    // Reading a file taints the agent; a sensitive call after it is held, and with no terminal
    // it is declined and never reaches the server.
    let read = proxy.call(4, "read_text_file", json!({"path": root.join("notes.txt")}));
    assert!(!is_error(&read), "{read}");
    assert_eq!(result_text(&read), "remember the milk\n");
    let made = root.join("made-by-the-agent");
    let held = proxy.call(5, "create_directory", json!({"path": made}));
    assert!(is_error(&held), "{held}");
    let text = result_text(&held);
    assert!(
        text.contains("tainted") && text.contains("read_text_file"),
        "{text}"
    );
    assert!(text.contains("no terminal"), "{text}");
    assert!(!made.exists(), "the declined call reached the server");

    let done = proxy.finish();
    assert!(done.status.success(), "{:?}\n{}", done.status, done.stderr);
    assert!(
        done.stderr.contains("Secure MCP Filesystem Server"),
        "the server's stderr passes through: {}",
        done.stderr
    );

    // The audit log tells all of it, in the pipeline's own events.
    let all = scratch.audit_events();
    let gates = events(&all, "gate");
    let decided: Vec<(&str, &str)> = gates
        .iter()
        .map(|e| {
            (
                e["call"]["tool"].as_str().unwrap(),
                e["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        decided,
        [
            ("list_directory", "allow"),
            ("write_file", "deny"),
            ("read_text_file", "allow"),
            ("create_directory", "hold"),
        ]
    );
    for gate in &gates {
        assert_eq!(gate["call"]["agent"], "fs");
        assert_eq!(gate["call"]["source"], "agent");
    }
    assert!(
        gates[3]["agentState"]["taintedBy"]["tool"] == "read_text_file",
        "{}",
        gates[3]
    );
    let approvals = events(&all, "approve");
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["id"], gates[3]["id"]);
    assert_eq!(approvals[0]["approval"]["approved"], false);
    assert_eq!(approvals[0]["approval"]["by"], "none");
    let execs = events(&all, "exec");
    let outcomes: Vec<(&str, &str)> = execs
        .iter()
        .map(|e| {
            (
                e["tool"].as_str().unwrap(),
                e["outcome"]["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("list_directory", "executed"),
            ("write_file", "skipped"),
            ("read_text_file", "executed"),
            ("create_directory", "skipped"),
        ]
    );
    assert!(execs[0]["outcome"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("notes.txt"));

    // sc-report reads it, and the chain holds.
    let report = report_json(&scratch);
    assert_eq!(
        report["decisions"],
        json!({"allow": 2, "hold": 1, "deny": 1}),
        "{report}"
    );
    assert_eq!(report["holds"]["declined"], 1);
    assert_eq!(
        report["outcomes"],
        json!({"executed": 2, "skipped": 2, "failed": 0})
    );
    let verify = scratch.cmd_report_args(&["--verify"]).output().unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn an_approved_hold_runs_on_the_published_server() {
    let scratch = Scratch::new();
    let answers = scratch.write("answers.txt", "yes\n");
    let (mut proxy, root) = filesystem_proxy(&scratch, &["--answers", answers.to_str().unwrap()]);
    proxy.initialize();
    proxy.call(1, "read_text_file", json!({"path": root.join("notes.txt")}));
    let made = root.join("approved-dir");
    let answer = proxy.call(2, "create_directory", json!({"path": made}));
    assert!(!is_error(&answer), "{answer}");
    assert!(made.is_dir(), "the approved call did not run");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let all = scratch.audit_events();
    let approvals = events(&all, "approve");
    assert_eq!(approvals[0]["approval"]["approved"], true);
    assert_eq!(approvals[0]["approval"]["by"], "answers");
    let last = events(&all, "exec").pop().unwrap().clone();
    assert_eq!(last["decision"], "hold");
    assert_eq!(last["outcome"]["status"], "executed");
    let report = report_json(&scratch);
    assert_eq!(report["holds"]["approved"], 1, "{report}");
}

#[test]
fn a_hold_is_put_to_the_person_on_the_terminal_escaped() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let mut proxy = Proxy::spawn_with(
        &scratch,
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--agent",
            "crew",
            "--timeout",
            "60",
        ],
        &fake_server(),
        Tty::Pty,
    );
    proxy.initialize();
    // Over the $100 limit, with an escape sequence that would clear the screen and a bidi
    // override that would reverse the text, if either were shown raw.
    proxy.send_value(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"echo","arguments":{"amount":750,"memo":"\u{1b}[2Jall clear","to":"acme\u{202e}tellaw"}}}));
    let screen = proxy.wait_for_screen("Type yes to approve");
    assert!(screen.contains("agent:        crew"), "{screen}");
    assert!(
        screen.contains("amount 750 is above the hold limit of 100"),
        "{screen}"
    );
    assert!(screen.contains("\\u001b[2Jall clear"), "{screen}");
    assert!(screen.contains("acme\\u{202e}tellaw"), "{screen}");
    assert!(
        !screen.contains('\u{1b}') && !screen.contains('\u{202e}'),
        "raw control on the screen: {screen:?}"
    );
    proxy.type_line("yes");
    let answer = proxy.answer(&json!(1));
    assert!(!is_error(&answer), "{answer}");
    assert!(result_text(&answer).contains("750"), "{answer}");
    // The next one is declined at the terminal.
    proxy.send_value(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"echo","arguments":{"amount":"lots"}}}));
    proxy.wait_for_screen("not understood");
    proxy.type_line("no");
    let declined = proxy.answer(&json!(2));
    assert!(is_error(&declined), "{declined}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let received = server_received(&scratch);
    assert!(
        received.contains("750") && !received.contains("lots"),
        "{received}"
    );
    let approvals: Vec<Value> = scratch
        .audit_events()
        .into_iter()
        .filter(|e| e["stage"] == "approve")
        .collect();
    assert_eq!(approvals.len(), 2);
    assert_eq!(approvals[0]["approval"]["by"], "tty");
    assert_eq!(approvals[0]["approval"]["approved"], true);
    assert_eq!(approvals[1]["approval"]["approved"], false);
}

pub(crate) fn fake_proxy(scratch: &Scratch, extra: &[&str]) -> Proxy {
    let policy = testdata("mcp/fake-policy.json");
    let mut args = vec!["--policy", policy.to_str().unwrap(), "--agent", "crew"];
    args.extend_from_slice(extra);
    Proxy::spawn(scratch, &args, &fake_server())
}

#[test]
fn a_server_crash_mid_call_answers_the_call_with_an_error_and_exits_1() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize();
    let answer = proxy.call(1, "crash", json!({}));
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("exited before answering"), "{message}");
    let done = proxy.finish();
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    assert!(
        done.stderr.contains("exited with status 3"),
        "{}",
        done.stderr
    );
    let all = scratch.audit_events();
    let exec = events(&all, "exec");
    assert_eq!(exec.len(), 1);
    assert_eq!(exec[0]["tool"], "crash");
    assert_eq!(exec[0]["outcome"]["status"], "failed");
    assert_eq!(report_json(&scratch)["outcomes"]["failed"], 1);
}

#[test]
fn a_request_after_the_server_died_gets_an_error_too() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let mut server = fake_server();
    server.push("--die-at-start".into());
    let mut proxy = Proxy::spawn(&scratch, &["--policy", policy.to_str().unwrap()], &server);
    proxy.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#);
    let done = proxy.finish();
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    assert!(
        done.stderr.contains("exited with status 5"),
        "{}",
        done.stderr
    );
    // Either sc-mcp read the call before it saw the server go (an error answer), or it stopped
    // first (no answer at all); never a result.
    for line in &done.received {
        let value: Value = serde_json::from_str(line).unwrap();
        assert!(value.get("error").is_some(), "{line}");
    }
}

#[test]
fn garbage_from_the_server_never_reaches_the_client() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize();
    let answer = proxy.call(1, "garbage", json!({"x": 1}));
    assert_eq!(result_text(&answer), r#"{"x": 1}"#);
    // A duplicate key: a strict reader refuses it, so the call is answered with an error.
    let dup = proxy.call(2, "dup_answer", json!({}));
    assert_eq!(dup["error"]["code"], -32603, "{dup}");
    assert!(
        dup["error"]["message"]
            .as_str()
            .unwrap()
            .contains("malformed"),
        "{dup}"
    );
    // Keys a case-blind client reads otherwise (`Content` beside `content`): an error too.
    let cased = proxy.call(4, "cased_answer", json!({}));
    assert_eq!(cased["error"]["code"], -32603, "{cased}");
    // The session goes on.
    let after = proxy.call(3, "echo", json!({"still": "here"}));
    assert!(!is_error(&after), "{after}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    for line in &done.received {
        assert!(serde_json::from_str::<Value>(line).is_ok(), "{line}");
        assert!(
            !line.contains("not JSON-RPC")
                && !line.contains(r#""result":{"content":[]},"result""#)
                && !line.contains("hidden"),
            "{line}"
        );
    }
    assert!(
        done.stderr.contains("dropped a line from the MCP server"),
        "{}",
        done.stderr
    );
    let statuses: Vec<String> = events(&scratch.audit_events(), "exec")
        .iter()
        .map(|e| e["outcome"]["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses, ["executed", "failed", "failed", "executed"]);
}

#[test]
fn malformed_client_messages_are_never_forwarded() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize();
    // Not JSON, no id: dropped, no answer.
    proxy.send("{this is not json");
    // A duplicate `name`: the server might read the other one.
    proxy.send(r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","name":"write_file"}}"#);
    assert_eq!(proxy.answer(&json!(10))["error"]["code"], -32700);
    // A duplicate `method`, smuggling a call inside a list request.
    proxy.send(r#"{"jsonrpc":"2.0","id":11,"method":"tools/list","method":"tools/call","params":{"name":"write_file"}}"#);
    assert_eq!(proxy.answer(&json!(11))["error"]["code"], -32700);
    // No string name.
    proxy.send(
        r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":["write_file"]}}"#,
    );
    assert_eq!(proxy.answer(&json!(12))["error"]["code"], -32602);
    // Arguments that are not an object.
    proxy.send(r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":"x"}}"#);
    assert_eq!(proxy.answer(&json!(13))["error"]["code"], -32602);
    // A batch carrying a call.
    proxy.send(
        r#"[{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"write_file"}}]"#,
    );
    // A tools/call sent as a notification.
    proxy.send(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"write_file"}}"#);
    // Keys a case-blind server (Go's `encoding/json`) reads as the gate's: `Method` alone, a
    // `Name` beside `name`, a `METHOD` beside `method`, an `argumentſ` beside `arguments`, and
    // a task-augmented call, whose result would come past the gate (a review).
    for (id, line, code) in [
        (
            17,
            r#"{"jsonrpc":"2.0","id":17,"Method":"tools/call","params":{"name":"write_file"}}"#,
            -32600,
        ),
        (
            18,
            r#"{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"echo","Name":"write_file"}}"#,
            -32600,
        ),
        (
            19,
            r#"{"jsonrpc":"2.0","id":19,"method":"ping","METHOD":"tools/call","params":{"name":"write_file"}}"#,
            -32600,
        ),
        (
            20,
            r#"{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"echo","arguments":{},"argumentſ":{"write_file":1}}}"#,
            -32600,
        ),
        (
            21,
            r#"{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"echo","arguments":{"write_file":1},"task":{}}}"#,
            -32602,
        ),
    ] {
        proxy.send(line);
        assert_eq!(proxy.answer(&json!(id))["error"]["code"], code, "{line}");
    }
    // A denied call.
    let denied = proxy.call(15, "write_file", json!({"path": "/etc/passwd"}));
    assert!(is_error(&denied), "{denied}");
    // Then a good call, which proves everything before it was handled.
    let ok = proxy.call(16, "echo", json!({"ok": true}));
    assert!(!is_error(&ok), "{ok}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let batch_answer = done
        .received
        .iter()
        .find(|line| line.starts_with('['))
        .expect("the batch is answered with a batch");
    let batch: Value = serde_json::from_str(batch_answer).unwrap();
    assert_eq!(batch[0]["id"], 14);
    assert_eq!(batch[0]["error"]["code"], -32600);
    let received = server_received(&scratch);
    assert!(
        !received.contains("write_file"),
        "reached the server:\n{received}"
    );
    assert!(
        !received.contains("not json"),
        "reached the server:\n{received}"
    );
    let lines: Vec<&str> = received.lines().collect();
    assert_eq!(
        lines.len(),
        4,
        "server/discover, initialize, initialized, echo: {received}"
    );
    // Every refused message is audited as a denied call.
    let all = scratch.audit_events();
    let gates = events(&all, "gate");
    assert_eq!(
        gates.iter().filter(|e| e["decision"] == "deny").count(),
        13,
        "{gates:#?}"
    );
    assert_eq!(gates.iter().filter(|e| e["raw"].is_string()).count(), 12);
}

/// A method spelt otherwise than sc-mcp knows it, but read as that method by a server that
/// matches methods without case or drops white space and control characters (`Tools/call`,
/// `TOOLS/CALL`, `tools/call `, `tools/call\u0000`), is refused and audited as denied, never
/// forwarded: before, it reached the server undecided, and a case-blind server ran a denied tool.
#[test]
fn a_known_method_spelt_otherwise_is_refused_audited_and_never_forwarded() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize();
    let variants = [
        r"Tools/call",
        r"TOOLS/CALL",
        r"tools/call ",
        r"tools/call\u0000",
        r"\ttools/call",
        r"Resources/Read",
        r"Prompts/Get",
    ];
    for (id, method) in variants.iter().enumerate() {
        let id = 30 + id as i64;
        proxy.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"name":"write_file","uri":"file:///write_file","arguments":{{"path":"/etc/passwd"}}}}}}"#
        ));
        let answer = proxy.answer(&json!(id));
        assert_eq!(answer["error"]["code"], -32600, "{method}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("not forwarded"), "{message}");
    }
    // Then a good call, which proves everything before it was handled.
    let ok = proxy.call(40, "echo", json!({"ok": true}));
    assert!(!is_error(&ok), "{ok}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let received = server_received(&scratch);
    assert!(
        !received.contains("write_file"),
        "reached the server:\n{received}"
    );
    let all = scratch.audit_events();
    let gates = events(&all, "gate");
    let denied: Vec<&Value> = gates
        .iter()
        .copied()
        .filter(|e| e["decision"] == "deny")
        .collect();
    assert_eq!(denied.len(), variants.len(), "{gates:#?}");
    for event in denied {
        let reason = event["reasons"][0].as_str().unwrap();
        assert!(reason.contains("without case"), "{reason}");
    }
}

#[test]
fn an_id_in_use_is_refused_and_unanswered_requests_fail_at_the_end() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize();
    proxy.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hang"}}"#);
    proxy.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#);
    let refused = proxy.answer(&json!(7));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("already in use"));
    let done = proxy.finish();
    // The server ended at end of input with the hanging call unanswered: it gets an error, and
    // the session did not end cleanly.
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    let last: Value = serde_json::from_str(done.received.last().unwrap()).unwrap();
    assert_eq!(last["id"], 7);
    assert!(last["error"]["message"]
        .as_str()
        .unwrap()
        .contains("exited before answering"));
    let received = server_received(&scratch);
    assert_eq!(received.matches("tools/call").count(), 1, "{received}");
}

#[test]
fn the_servers_stderr_passes_through_and_sensitive_calls_hold_after_taint() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize();
    let first = proxy.call(1, "shout", json!({}));
    assert!(!is_error(&first), "{first}");
    proxy.call(2, "garbage", json!({"url": "https://evil.example/page"}));
    let held = proxy.call(3, "shout", json!({}));
    assert!(is_error(&held), "{held}");
    assert!(
        result_text(&held).contains("url=https://evil.example/page"),
        "{held}"
    );
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(done.stderr.contains("fake-mcp: ready"), "{}", done.stderr);
    assert!(
        done.stderr.contains("fake-mcp: shouting on stderr"),
        "{}",
        done.stderr
    );
    assert_eq!(server_received(&scratch).matches("shout").count(), 1);
}

#[test]
fn an_unwritable_audit_log_stops_the_proxy_before_anything_runs() {
    // The log opens, and its first append fails: the file system is full.
    let Some(disk) = crate::full_disk::FullDisk::new() else {
        return;
    };
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let log = disk.log();
    let mut cmd = Proxy::spawn_command(
        disk.std_command(&bin_path("sc-mcp")),
        &scratch,
        scratch.dir.path(),
        &[],
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--audit",
            log.to_str().unwrap(),
        ],
        &fake_server(),
        Tty::None,
    );
    cmd.initialize();
    let answer = cmd.call(1, "echo", json!({"x": 1}));
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("audit log"),
        "{answer}"
    );
    let done = cmd.finish();
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    assert!(
        done.stderr
            .contains(&format!("cannot write the audit log {}", log.display())),
        "{}",
        done.stderr
    );
    assert!(!server_received(&scratch).contains("tools/call"));
}

#[test]
fn usage_errors_exit_2_and_a_server_that_cannot_start_exits_1() {
    let scratch = Scratch::new();
    let bad_policy = scratch.write("policy.json", r#"{"denyTool": []}"#);
    let out = scratch
        .cmd("sc-mcp")
        .arg("--policy")
        .arg(&bad_policy)
        .args(["--", "python3", "-c", "pass"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("denyTool"));
    let out = scratch.cmd("sc-mcp").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no server command");
    let out = scratch
        .cmd("sc-mcp")
        .args(["--", "/nonexistent/mcp-server"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot start the MCP server"));
}

/// The README's client configuration is valid JSON that runs sc-mcp in front of a server.
#[test]
fn the_readme_shows_a_working_client_configuration() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let block = readme
        .split("```json")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .find(|block| block.contains("mcpServers"))
        .expect("a ```json block with mcpServers in README.md");
    let config: Value = serde_json::from_str(block).expect("the block is JSON");
    let server = config["mcpServers"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert_eq!(server["command"], "sc-mcp");
    let args: Vec<&str> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(args.contains(&"--"), "{args:?}");
}

// ---------------------------------------------------------------------------------------------
// Request ids: compared by value, and only ones every reader agrees on

/// The published filesystem server, started through bash so that every line sc-mcp sends it is
/// also appended to a log (a test can prove what never reached it), and its pid is written down
/// (a test can pause it).
struct NodeServer {
    log: PathBuf,
    pid_file: PathBuf,
}

impl NodeServer {
    /// The messages the server received (read after sc-mcp ended, so no line is torn).
    fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }

    /// Waits until a whole line the server was sent (logged before the server reads it, so
    /// even while it is paused) matches `wanted`.
    fn wait_sent(&self, wanted: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + WAIT;
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            // Only lines already ended: the last one may still be being written.
            let whole = &text[..text.rfind('\n').map_or(0, |end| end + 1)];
            if whole
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .any(|message| wanted(&message))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the server was not sent the line within {WAIT:?}: {text}"
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn pid(&self) -> Pid {
        let deadline = Instant::now() + WAIT;
        loop {
            // Written whole and renamed into place, so it is never read half written.
            if let Ok(text) = std::fs::read_to_string(&self.pid_file) {
                return Pid::from_raw(text.trim().parse().expect("a pid"));
            }
            assert!(
                Instant::now() < deadline,
                "the server did not start within {WAIT:?}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server with SIGSTOP and waits until the kernel shows it stopped, so nothing
    /// written to it from now on is read before [`Paused::resume`].
    fn pause(&self) -> Paused {
        let pid = self.pid();
        kill(pid, Signal::SIGSTOP).expect("SIGSTOP the server");
        let paused = Paused(pid);
        let deadline = Instant::now() + WAIT;
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("its stat");
            // "pid (comm) STATE ...": the state follows the last parenthesis.
            let state = stat[stat.rfind(')').expect("a comm") + 1..].trim_start();
            if state.starts_with('T') {
                return paused;
            }
            assert!(Instant::now() < deadline, "the server did not stop: {stat}");
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A paused server; resumed when dropped, so a failing test never leaves it stopped.
struct Paused(Pid);

impl Paused {
    fn resume(self) {}
}

impl Drop for Paused {
    fn drop(&mut self) {
        let _ = kill(self.0, Signal::SIGCONT);
    }
}

fn logged_filesystem_proxy(scratch: &Scratch, extra: &[&str]) -> (Proxy, PathBuf, NodeServer) {
    let root = served_folder(scratch);
    let node = NodeServer {
        log: scratch.path("node-received.jsonl"),
        pid_file: scratch.path("node.pid"),
    };
    let policy = testdata("mcp/filesystem-policy.json");
    let mut args = vec!["--policy", policy.to_str().unwrap(), "--agent", "fs"];
    args.extend_from_slice(extra);
    let server = vec![
        OsString::from("bash"),
        "-c".into(),
        r#"tee -a "$1" | { echo "$BASHPID" > "$2.part" && mv "$2.part" "$2" && exec node "$3" "$4"; }"#
            .into(),
        "filesystem-server".into(),
        node.log.clone().into_os_string(),
        node.pid_file.clone().into_os_string(),
        filesystem_server().into_os_string(),
        root.clone().into_os_string(),
    ];
    (Proxy::spawn(scratch, &args, &server), root, node)
}

/// Every tool list the client received, wherever it sits in a message, names none of `denied`.
fn assert_no_denied_tool_reached_the_client(received: &[String], denied: &[&str]) {
    fn lists_a_denied_tool(value: &Value, denied: &[&str]) -> bool {
        match value {
            Value::Object(object) => object.iter().any(|(key, inner)| {
                let listed = key == "tools"
                    && inner.as_array().is_some_and(|tools| {
                        tools
                            .iter()
                            .any(|tool| denied.iter().any(|d| tool["name"] == *d))
                    });
                listed || lists_a_denied_tool(inner, denied)
            }),
            Value::Array(items) => items.iter().any(|item| lists_a_denied_tool(item, denied)),
            _ => false,
        }
    }
    for line in received {
        let value: Value = serde_json::from_str(line).unwrap();
        assert!(
            !lists_a_denied_tool(&value, denied),
            "a list naming a denied tool reached the client: {line}"
        );
    }
}

/// The lines the client received whose id is `id` exactly (as serde_json compares numbers:
/// 2 and 2.0 differ).
pub(crate) fn lines_with_id(received: &[String], id: &Value) -> Vec<Value> {
    received
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|value| value.get("id") == Some(id))
        .collect()
}

pub(crate) fn methods(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("(no method)").to_owned())
        .collect()
}

#[test]
fn request_ids_that_are_not_plain_integers_or_strings_are_refused_before_the_published_server() {
    let scratch = Scratch::new();
    let (mut proxy, _root, node) = logged_filesystem_proxy(&scratch, &[]);
    proxy.initialize();
    // Node reads 2.0 and 1e0 as 2 and 1 and answers with those; -0 comes back as 0, and the two
    // large ones come back rounded. Matched by its text, none of those answers was awaited.
    let numbers = [
        ("2.0", json!(2.0)),
        ("1e0", json!(1.0)),
        ("-0", json!(-0.0)),
        ("9007199254740993", json!(9_007_199_254_740_993_u64)),
        (
            "123456789012345678901234567890",
            json!(1.234_567_890_123_456_8e29),
        ),
    ];
    for (text, _) in &numbers {
        proxy.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{text},"method":"tools/list"}}"#
        ));
    }
    // Ids JSON-RPC does not allow for a request: answered with a null id.
    for text in ["null", "true", r#"{"n":2}"#, "[2]"] {
        proxy.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{text},"method":"tools/list"}}"#
        ));
    }
    // A proper request: the server answers it after anything forwarded before it.
    let list = proxy.request(3, "tools/list", json!({}));
    assert!(
        !tool_names(&list).iter().any(|n| n == "write_file"),
        "{list}"
    );
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert_no_denied_tool_reached_the_client(&done.received, &["write_file", "move_file"]);
    for (text, echoed) in &numbers {
        let answers = lines_with_id(&done.received, echoed);
        assert_eq!(answers.len(), 1, "id {text}: {:#?}", done.received);
        assert_eq!(answers[0]["error"]["code"], -32600, "{}", answers[0]);
        assert!(
            answers[0]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("integer"),
            "{}",
            answers[0]
        );
    }
    let null_answers = lines_with_id(&done.received, &Value::Null);
    assert_eq!(null_answers.len(), 4, "{:#?}", done.received);
    assert!(null_answers.iter().all(|a| a["error"]["code"] == -32600));
    // Nothing but the proper messages reached the server.
    let received = node.received();
    assert_eq!(
        methods(&received),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ],
        "{received:#?}"
    );
    assert_eq!(received[3]["id"], 3);
    // Each refusal is audited as a denied, malformed message.
    let all = scratch.audit_events();
    let denied: Vec<&Value> = events(&all, "gate")
        .into_iter()
        .filter(|e| e["decision"] == "deny")
        .collect();
    assert_eq!(denied.len(), 9, "{denied:#?}");
    assert!(denied
        .iter()
        .all(|e| e["reasons"][0].as_str().unwrap().contains("`id`")));
}

#[test]
fn a_tool_call_whose_id_is_not_a_plain_integer_never_runs_on_the_published_server() {
    let scratch = Scratch::new();
    let answers = scratch.write("answers.txt", "yes\nyes\n");
    let (mut proxy, root, node) =
        logged_filesystem_proxy(&scratch, &["--answers", answers.to_str().unwrap()]);
    proxy.initialize();
    let made = root.join("made-by-5.0");
    proxy.send_value(&json!({"jsonrpc":"2.0","id":5.0,"method":"tools/call",
        "params":{"name":"create_directory","arguments":{"path":made}}}));
    let refused = proxy.answer(&json!(5.0));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    // The session goes on.
    let listed = proxy.call(6, "list_directory", json!({"path": root}));
    assert!(!is_error(&listed), "{listed}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(!made.exists(), "the call with id 5.0 ran");
    // One answer, sc-mcp's; never the server's result as well, nor a late error.
    let about_5: Vec<Value> = done
        .received
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|value| value["id"].as_f64() == Some(5.0))
        .collect();
    assert_eq!(about_5.len(), 1, "{about_5:#?}");
    let received = node.received();
    assert_eq!(
        received
            .iter()
            .filter(|m| m["method"] == "tools/call")
            .map(|m| m["id"].clone())
            .collect::<Vec<_>>(),
        [json!(6)],
        "{received:#?}"
    );
    // Audited as a refusal: no approval asked, nothing ran.
    let all = scratch.audit_events();
    assert!(events(&all, "approve").is_empty(), "{all:#?}");
    let execs = events(&all, "exec");
    assert_eq!(execs.len(), 1, "{execs:#?}");
    assert_eq!(execs[0]["tool"], "list_directory");
    let gates = events(&all, "gate");
    assert_eq!(gates[0]["decision"], "deny", "{gates:#?}");
    assert!(gates[0]["reasons"][0].as_str().unwrap().contains("`id`"));
}

/// While sc-mcp asks the server `server/discover` for the client's `initialize`, that request
/// waits beside the pending ones: a call with its id is refused (a review's ran, and its answer
/// went to the client as the `initialize` answer, with no `exec` event).
#[test]
fn a_call_with_the_id_of_the_waiting_initialize_is_refused() {
    let scratch = Scratch::new();
    let (mut proxy, _root, node) = logged_filesystem_proxy(&scratch, &[]);
    // The server reads nothing until resumed: sc-mcp's server/discover waits for it.
    let paused = node.pause();
    proxy.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
    proxy.send(r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"list_directory","arguments":{"path":"."}}}"#);
    let refused = proxy.answer(&json!(0));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("initialize"),
        "{refused}"
    );
    paused.resume();
    let list = proxy.request(10, "tools/list", json!({}));
    assert!(!is_error(&list), "{list}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    // Two answers with id 0: the refusal, then the server's to initialize.
    let answers = lines_with_id(&done.received, &json!(0));
    assert_eq!(answers.len(), 2, "{answers:#?}");
    assert!(
        answers[1]["result"]["protocolVersion"].is_string(),
        "{answers:#?}"
    );
    assert!(
        !node.received().iter().any(|m| m["method"] == "tools/call"),
        "the call reached the server"
    );
}

/// A server may finish a call it was asked to cancel: the published SDK ignores a cancellation
/// of the id "", and answers. The cancel is audited as a call that may have run in part, and the
/// late answer as what it says: the call ran (a review found it logged as failed alone, though
/// it ran). The client is not given the late answer.
#[test]
fn a_call_the_published_server_finishes_after_the_client_cancelled_it_is_audited_as_run() {
    let scratch = Scratch::new();
    let (mut proxy, _root, node) = logged_filesystem_proxy(&scratch, &[]);
    proxy.initialize();
    let paused = node.pause();
    proxy.send(r#"{"jsonrpc":"2.0","id":"","method":"tools/call","params":{"name":"list_directory","arguments":{"path":"."}}}"#);
    proxy.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"","reason":"test"}}"#,
    );
    // sc-mcp marks the call cancelled before it passes the cancellation on: once the server is
    // sent it, the answer that follows is a late one (without this wait the server could answer
    // before sc-mcp read the cancellation, and the answer was rightly the client's).
    node.wait_sent(|m| m["method"] == "notifications/cancelled");
    paused.resume();
    // Answered after the late answer (the server handles its input in order).
    let list = proxy.request(10, "tools/list", json!({}));
    assert!(!is_error(&list), "{list}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        lines_with_id(&done.received, &json!("")).is_empty(),
        "{:#?}",
        done.received
    );
    let all = scratch.audit_events();
    let outcomes: Vec<(String, String)> = events(&all, "exec")
        .iter()
        .map(|e| {
            (
                e["outcome"]["status"].as_str().unwrap().to_owned(),
                e["outcome"]["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(outcomes.len(), 2, "{outcomes:#?}");
    assert_eq!(outcomes[0].0, "failed", "{outcomes:#?}");
    assert!(
        outcomes[0].1.contains("may have run in part"),
        "{outcomes:#?}"
    );
    assert_eq!(outcomes[1].0, "executed", "{outcomes:#?}");
    assert!(
        outcomes[1]
            .1
            .starts_with("after the client cancelled it: ran list_directory"),
        "{outcomes:#?}"
    );
}

#[test]
fn a_tools_list_the_published_server_answers_after_the_client_cancelled_it_never_reaches_the_client(
) {
    let scratch = Scratch::new();
    let (mut proxy, _root, node) = logged_filesystem_proxy(&scratch, &[]);
    proxy.initialize();
    // The server reads nothing until resumed, so sc-mcp takes in the cancellation before the
    // answer can come. The published SDK ignores a cancellation of the id "" (it tests the id
    // for truth), so it answers the cancelled request anyway: the late answer every proxy must
    // expect, made certain.
    let paused = node.pause();
    proxy.send(r#"{"jsonrpc":"2.0","id":"","method":"tools/list"}"#);
    proxy.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"","reason":"test"}}"#,
    );
    // Reusing the cancelled id while the server may still answer it is refused: an answer could
    // not be told apart.
    proxy.send(r#"{"jsonrpc":"2.0","id":"","method":"tools/call","params":{"name":"list_directory","arguments":{"path":"."}}}"#);
    let reused = proxy.answer(&json!(""));
    assert_eq!(reused["error"]["code"], -32600, "{reused}");
    assert!(
        reused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cancelled"),
        "{reused}"
    );
    paused.resume();
    // Answered after the late answer (the server handles its input in order).
    let list = proxy.request(10, "tools/list", json!({}));
    assert!(
        !tool_names(&list).iter().any(|n| n == "write_file"),
        "{list}"
    );
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert_no_denied_tool_reached_the_client(&done.received, &["write_file", "move_file"]);
    assert_eq!(
        lines_with_id(&done.received, &json!("")).len(),
        1,
        "{:#?}",
        done.received
    );
    // The server did answer, and sc-mcp dropped it.
    assert!(
        done.stderr.contains("which the client cancelled"),
        "{}",
        done.stderr
    );
    assert_eq!(
        methods(&node.received()),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "notifications/cancelled",
            "tools/list"
        ]
    );
}

#[test]
fn answers_nobody_is_waiting_for_never_reach_the_client() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize();
    let answer = proxy.call(1, "stray", json!({}));
    // The real answer, matched by value and given back with the client's own id.
    assert_eq!(answer["id"], json!(1));
    assert!(answer["id"].is_u64(), "{answer}");
    assert_eq!(result_text(&answer), "the real answer");
    // The fake answers in order: once this is back, every stray message has been dealt with.
    let after = proxy.call(2, "echo", json!({"after": true}));
    assert!(!is_error(&after), "{after}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert_no_denied_tool_reached_the_client(&done.received, &["write_file"]);
    let received: Vec<Value> = done
        .received
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // initialize, the one answer to 1, the answer to 2: nothing else.
    assert_eq!(
        received.iter().map(|v| v["id"].clone()).collect::<Vec<_>>(),
        [json!(0), json!(1), json!(2)],
        "{received:#?}"
    );
    for expected in [
        "an id no request is waiting for",
        "both a request and an answer",
    ] {
        assert!(
            done.stderr.contains(expected),
            "{expected}: {}",
            done.stderr
        );
    }
    let statuses: Vec<(String, String)> = events(&scratch.audit_events(), "exec")
        .iter()
        .map(|e| {
            (
                e["tool"].as_str().unwrap().to_owned(),
                e["outcome"]["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("stray".to_owned(), "executed".to_owned()),
            ("echo".to_owned(), "executed".to_owned())
        ]
    );
}

#[test]
fn answers_a_client_could_read_two_ways_become_errors() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize();
    // `tools` as an object, not a list: it cannot be filtered as one.
    let list = proxy.request(1, "tools/list", json!({"cursor": "tools-as-object"}));
    assert_eq!(list["error"]["code"], -32603, "{list}");
    assert!(list.get("result").is_none(), "{list}");
    // Both `result` and `error`: did it run or not?
    let both = proxy.call(2, "both", json!({}));
    assert_eq!(both["error"]["code"], -32603, "{both}");
    assert!(both.get("result").is_none(), "{both}");
    assert!(
        both["error"]["message"]
            .as_str()
            .unwrap()
            .contains("both `result` and `error`"),
        "{both}"
    );
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let received: Vec<Value> = done
        .received
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(
        received[1..]
            .iter()
            .all(|answer| answer.get("result").is_none()),
        "{received:#?}"
    );
    let all = scratch.audit_events();
    let exec = events(&all, "exec");
    assert_eq!(exec.len(), 1);
    assert_eq!(exec[0]["tool"], "both");
    assert_eq!(exec[0]["outcome"]["status"], "failed");
}

#[test]
fn a_notification_with_an_id_or_a_request_that_is_also_an_answer_is_refused() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize();
    proxy.send(
        r#"{"jsonrpc":"2.0","id":7,"method":"notifications/cancelled","params":{"requestId":1}}"#,
    );
    let refused = proxy.answer(&json!(7));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    proxy.send(r#"{"jsonrpc":"2.0","id":8,"method":"tools/list","result":{}}"#);
    let refused = proxy.answer(&json!(8));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let ok = proxy.call(9, "echo", json!({}));
    assert!(!is_error(&ok), "{ok}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let received = crate::util::parse_lines(&server_received(&scratch));
    assert_eq!(
        methods(&received),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ],
        "{received:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 23: what a newcomer met

/// Without `--audit`, sc-mcp keeps its audit log and its crew's state in the XDG state folder
/// (made 700, every file in it 600, SQLite's side files too), never in the folder the client
/// starts it in; with neither XDG_STATE_HOME nor HOME it is a usage error (exit 2).
#[test]
fn without_audit_the_log_and_state_are_in_the_xdg_state_folder() {
    use crate::util::mode_of;
    let scratch = Scratch::new();
    let repo = scratch.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let xdg = scratch.path("xdg-state");
    let policy = testdata("mcp/fake-policy.json");
    let args = [
        "--policy",
        policy.to_str().unwrap(),
        "--crew",
        "desk",
        "--agent",
        "crew",
    ];
    let mut proxy = Proxy::spawn_as_configured(
        &scratch,
        &repo,
        &[("XDG_STATE_HOME", &xdg)],
        &args,
        &fake_server(),
    );
    proxy.initialize();
    let answer = proxy.call(1, "echo", json!({"text": "hi"}));
    assert!(!is_error(&answer), "{answer}");
    // While sc-mcp runs, the store is open with its side files beside it.
    let folder = xdg.join("skeleton-crew");
    assert_eq!(mode_of(&folder), 0o700);
    let mut files: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    for must in [
        "audit.jsonl",
        "state.sqlite",
        "state.sqlite-wal",
        "state.sqlite-shm",
    ] {
        assert!(files.iter().any(|name| name == must), "{must}: {files:?}");
    }
    for name in &files {
        assert_eq!(mode_of(&folder.join(name)), 0o600, "{name}");
    }
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert_eq!(
        std::fs::read_dir(&repo).unwrap().count(),
        0,
        "nothing in the client's folder"
    );
    let log = std::fs::read_to_string(folder.join("audit.jsonl")).unwrap();
    assert!(log.contains(r#""crew":"desk""#), "{log}");

    // Neither XDG_STATE_HOME nor HOME: exit 2, and nothing is written.
    let done = Proxy::spawn_as_configured(&scratch, &repo, &[], &args, &fake_server()).finish();
    assert_eq!(done.status.code(), Some(2), "{}", done.stderr);
    assert!(
        done.stderr.contains("neither XDG_STATE_HOME nor HOME"),
        "{}",
        done.stderr
    );
    assert_eq!(std::fs::read_dir(&repo).unwrap().count(), 0);

    let help = crate::util::bare_cmd("sc-mcp")
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("$XDG_STATE_HOME/skeleton-crew/audit.jsonl")
            && help.contains("~/.local/state/skeleton-crew/audit.jsonl"),
        "{help}"
    );
}

/// The server's tools as sc-mcp relays its `tools/list`, with `args` before the server.
fn listed_tools(scratch: &Scratch, args: &[&str]) -> Vec<Value> {
    let root = served_folder(scratch);
    let server = vec![
        OsString::from("node"),
        filesystem_server().into_os_string(),
        root.into_os_string(),
    ];
    let mut proxy = Proxy::spawn(scratch, args, &server);
    proxy.initialize();
    let list = proxy.request(1, "tools/list", json!({}));
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {list}"))
        .clone()
}

/// policies/filesystem.json covers every tool the published filesystem server lists: each read
/// tool (the server marks it read-only) taints, save the one that lists the server's own
/// configured folders; each other tool is sensitive; and the pack allows exactly the server's
/// tools, so a tool a later version adds is denied until the pack names it.
#[test]
fn the_filesystem_pack_covers_every_tool_of_the_published_server() {
    let scratch = Scratch::new();
    let pack_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/filesystem.json");
    let pack: Value = serde_json::from_str(&std::fs::read_to_string(&pack_path).unwrap()).unwrap();
    let names = |key: &str| -> Vec<&str> {
        pack[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in the pack"))
            .iter()
            .map(|name| name.as_str().unwrap())
            .collect()
    };
    let untrusted = names("untrustedOutputTools");
    let sensitive = names("sensitiveTools");
    let allowed: Vec<&str> = pack["agents"]["*"]
        .as_array()
        .expect("the pack's allowlist for every agent")
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();

    // Every tool, as the server lists it with no policy in the way.
    let all = listed_tools(&scratch, &[]);
    let mut server_names: Vec<&str> = all.iter().map(|t| t["name"].as_str().unwrap()).collect();
    server_names.sort_unstable();
    assert!(server_names.len() >= 14, "{server_names:?}");
    for tool in &all {
        let name = tool["name"].as_str().unwrap();
        let read_only = tool["annotations"]["readOnlyHint"] == true;
        if name == "list_allowed_directories" {
            assert!(read_only && !untrusted.contains(&name) && !sensitive.contains(&name));
        } else if read_only {
            assert!(
                untrusted.contains(&name),
                "{name} reads: its output is untrusted"
            );
            assert!(!sensitive.contains(&name), "{name}");
        } else {
            assert!(sensitive.contains(&name), "{name} writes: it is sensitive");
            assert!(!untrusted.contains(&name), "{name}");
        }
    }
    for name in [
        "read_file",
        "read_media_file",
        "read_text_file",
        "read_multiple_files",
    ] {
        assert!(untrusted.contains(&name), "{name}");
    }
    for name in ["write_file", "edit_file", "create_directory", "move_file"] {
        assert!(sensitive.contains(&name), "{name}");
    }
    let mut allowed_sorted = allowed.clone();
    allowed_sorted.sort_unstable();
    assert_eq!(
        allowed_sorted, server_names,
        "the pack allows exactly the server's tools"
    );
    for name in untrusted.iter().chain(&sensitive) {
        assert!(
            server_names.contains(name),
            "{name} is not a tool of the server"
        );
    }

    // Under the pack, sc-mcp lists every tool, and a read makes a write wait for a person.
    let pack_arg = pack_path.to_str().unwrap();
    let under_pack = listed_tools(&scratch, &["--policy", pack_arg]);
    assert_eq!(under_pack, all, "the pack hides none of the server's tools");
    let root = served_folder(&scratch);
    let server = vec![
        OsString::from("node"),
        filesystem_server().into_os_string(),
        root.clone().into_os_string(),
    ];
    let mut proxy = Proxy::spawn(
        &scratch,
        &["--policy", pack_arg, "--agent", "filesystem"],
        &server,
    );
    proxy.initialize();
    let read = proxy.call(1, "read_file", json!({"path": root.join("notes.txt")}));
    assert!(!is_error(&read), "{read}");
    let written = root.join("written.txt");
    let held = proxy.call(2, "write_file", json!({"path": written, "content": "x"}));
    assert!(is_error(&held), "{held}");
    assert!(
        result_text(&held).contains("tainted") && result_text(&held).contains("read_file"),
        "{held}"
    );
    assert!(!written.exists(), "the held write reached the server");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
}

/// The ```json blocks of a docs page.
fn json_blocks(page: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(page)).unwrap();
    text.split("```json")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .map(|block| serde_json::from_str(block).unwrap_or_else(|e| panic!("{page}: {e}: {block}")))
        .collect()
}

/// Runs docs/state.md's "two servers, one crew" recipe as written (its policy, and each server's
/// sc-mcp arguments, without --audit or --state, each started in a folder of its own), with the
/// fake server in place of each real one: a page read through the fetch server holds a payment
/// through the payments server. Returns whether it did.
fn two_servers_one_crew(policy: &Value) -> bool {
    let scratch = Scratch::new();
    let blocks = json_blocks("docs/state.md");
    let config = blocks
        .iter()
        .find(|block| block.get("mcpServers").is_some())
        .expect("the recipe's client configuration in docs/state.md");
    let policy_file = scratch.write("desk.json", policy.to_string());
    let xdg = scratch.path("xdg-state");
    let mut proxies = Vec::new();
    for name in ["fetch", "payments"] {
        let server = &config["mcpServers"][name];
        assert_eq!(server["command"], "sc-mcp", "{name}");
        let written: Vec<&str> = server["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|arg| arg.as_str().unwrap())
            .collect();
        let end = written.iter().position(|arg| *arg == "--").expect("`--`");
        let mut args: Vec<&str> = written[..end].to_vec();
        let at = args.iter().position(|arg| *arg == "--policy").unwrap();
        args[at + 1] = policy_file.to_str().unwrap();
        assert!(!args.contains(&"--audit") && !args.contains(&"--state"));
        let folder = scratch.path(name);
        std::fs::create_dir_all(&folder).unwrap();
        let mut proxy = Proxy::spawn_as_configured(
            &scratch,
            &folder,
            &[("XDG_STATE_HOME", &xdg)],
            &args,
            &fake_server(),
        );
        proxy.initialize();
        proxies.push(proxy);
    }
    let mut payments = proxies.pop().unwrap();
    let mut fetch = proxies.pop().unwrap();
    let payment = json!({"to": "acme-travel", "amount": 20});
    let before = payments.call(1, "send_payment", payment.clone());
    assert!(!is_error(&before), "{before}");
    let page = fetch.call(1, "fetch", json!({"url": "https://evil.example/page"}));
    assert!(!is_error(&page), "{page}");
    let after = payments.call(2, "send_payment", payment);
    let held = is_error(&after);
    if held {
        let text = result_text(&after);
        assert!(
            text.contains("tainted") && text.contains("url=https://evil.example/page"),
            "{text}"
        );
    }
    for proxy in [fetch, payments] {
        let done = proxy.finish();
        assert!(done.status.success(), "{}", done.stderr);
    }
    held
}

#[test]
fn docs_state_two_servers_one_crew_links_taint_across_servers_as_written() {
    let blocks = json_blocks("docs/state.md");
    let policy = blocks
        .iter()
        .find(|block| block.get("untrustedOutputTools").is_some())
        .expect("the recipe's policy in docs/state.md")
        .clone();
    assert!(two_servers_one_crew(&policy), "the recipe links the read");
    // Each sc-mcp names its calls after its own server, so it is `taintScope: "crew"` that links
    // them: under the default, per agent, the payment would not be held.
    let mut per_agent = policy;
    per_agent.as_object_mut().unwrap().remove("taintScope");
    assert!(!two_servers_one_crew(&per_agent));
}

/// The MCP server has no controlling terminal: it cannot open `/dev/tty`, where sc-mcp asks a
/// person about a held call (a review's server typed "yes" there with TIOCSTI and approved its
/// own payment). sc-mcp runs with a pty as its controlling terminal; the server reports, before
/// it serves, whether it could open it.
#[test]
fn the_server_cannot_reach_the_terminal_a_person_answers_in() {
    let scratch = Scratch::new();
    let probe = scratch.path("tty-probe");
    let script = format!(
        "if (exec 3<>/dev/tty) 2>/dev/null; then echo reachable > {p}.tmp; else echo unreachable > {p}.tmp; fi; mv {p}.tmp {p}; exec python3 {server}",
        p = probe.display(),
        server = testdata("mcp/fake-server.py").display()
    );
    let server: Vec<OsString> = vec!["/bin/sh".into(), "-c".into(), script.into()];
    let mut proxy = Proxy::spawn_with(&scratch, &[], &server, Tty::Pty);
    proxy.initialize();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !probe.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never probed"
        );
        thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(std::fs::read_to_string(&probe).unwrap(), "unreachable\n");
    proxy.finish();
}
