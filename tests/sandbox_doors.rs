//! sc-exec's and sc-mcp's doors to sc-sandbox, against the real kernel: a tools-file backend with
//! `"sandbox": true`, and the MCP server under `sc-mcp --sandbox`, try to reach a listener the test
//! opens in its own network namespace and to write a file the policy's `sandbox.readOnly` lists.
//! Nothing arrives and the file is unchanged, while the same program unconfined does both (so the
//! tests can fail). Where bubblewrap or sc-sandbox is missing, the program never runs, and
//! sc-hook, sc-exec and sc-mcp say so in the same words (one door). The machine needs bubblewrap
//! (`make test-deps` installs it).

use std::ffi::OsString;
use std::io::{ErrorKind, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp::{is_error, result_text, Proxy};
use crate::util::{outcome_reason, outcome_status, parse_stdout, testdata, Scratch};

/// The file every test protects with `sandbox.readOnly`, and what it holds.
const PROTECTED: &str = ".claude/settings.json";
const ORIGINAL: &str = "{\"hooks\": {}}\n";

/// A listener on a loopback port of the test's own network namespace.
fn listen() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// What reached the listener so far: one string per connection.
fn arrived(listener: &TcpListener) -> Vec<String> {
    let mut all = Vec::new();
    loop {
        match listener.accept() {
            Ok((mut stream, _)) => {
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let mut text = String::new();
                let _ = stream.read_to_string(&mut text);
                all.push(text);
            }
            Err(err) if err.kind() == ErrorKind::WouldBlock => return all,
            Err(err) => panic!("accept: {err}"),
        }
    }
}

/// A scratch folder (the root) with the protected file, and a policy that confines it.
fn root_with_policy() -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    scratch.write(PROTECTED, ORIGINAL);
    let policy = scratch.write(
        "policy.json",
        json!({
            "sensitiveTools": [],
            // `when` is not read by these doors: they always confine.
            "sandbox": {"when": "never", "readOnly": [".claude"]},
        })
        .to_string(),
    );
    (scratch, policy)
}

fn protected(scratch: &Scratch) -> String {
    std::fs::read_to_string(scratch.path(PROTECTED)).unwrap()
}

/// A verdict record that allows `tool` with `args`.
fn allowed(id: &str, tool: &str, args: Value) -> String {
    json!({
        "id": id,
        "call": {"agent": "builder", "tool": tool, "args": args, "source": "user"},
        "decision": "allow",
        "reasons": ["the gate said allow"],
    })
    .to_string()
}

/// A tools-file entry for `command`, confined or not.
fn entry(command: Value, sandbox: bool) -> Value {
    let mut entry = json!({"command": command, "env": {"PATH": "/usr/bin:/bin"}});
    if sandbox {
        entry["sandbox"] = json!(true);
    }
    entry
}

/// Runs sc-exec (the binary `exe`) in the scratch folder under `policy` with `tools` and `env`,
/// and returns its records; it exits 0.
fn exec(
    scratch: &Scratch,
    exe: Option<&Path>,
    policy: &Path,
    tools: Value,
    env: &[(&str, &str)],
    records: &[String],
) -> Vec<Value> {
    let tools = scratch.write("tools.json", tools.to_string());
    let mut cmd = match exe {
        Some(exe) => {
            let mut cmd = assert_cmd::Command::new(exe);
            cmd.env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .current_dir(scratch.dir.path())
                .arg("--audit")
                .arg(scratch.audit_path());
            cmd
        }
        None => scratch.cmd("sc-exec"),
    };
    cmd.arg("--policy").arg(policy).arg("--tools").arg(tools);
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd
        .timeout(Duration::from_secs(60))
        .write_stdin(records.join("\n") + "\n")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_stdout(&out.stdout)
}

/// A copy of the test file `name` in `folder` (the sandbox's root), with its permissions: the
/// sandbox makes its own `/tmp`, so a checkout under `/tmp` (as CI may place it) is not seen
/// inside, while the root is.
fn inside_copy(folder: &Path, name: &str) -> PathBuf {
    let copy = folder.join(".testdata").join(name);
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(testdata(name), &copy).unwrap();
    copy
}

fn try_escape(scratch: &Scratch) -> Value {
    json!([inside_copy(scratch.dir.path(), "tools/try-escape")])
}

#[test]
fn a_sandboxed_backend_reaches_no_listener_and_writes_no_protected_file() {
    let (scratch, policy) = root_with_policy();
    let (listener, port) = listen();
    let tools = json!({
        "escape": entry(try_escape(&scratch), true),
        "escape_unconfined": entry(try_escape(&scratch), false),
    });
    let records = exec(
        &scratch,
        None,
        &policy,
        tools.clone(),
        &[],
        &[
            allowed("c-1", "escape", json!({"port": port, "file": PROTECTED})),
            allowed(
                "c-2",
                "escape",
                json!({"port": port, "file": PROTECTED, "exit": 3}),
            ),
        ],
    );
    // The tool's output and status come back through the sandbox.
    assert_eq!(outcome_status(&records[0]), "executed", "{}", records[0]);
    let result = &records[0]["outcome"]["result"];
    assert_eq!(result["sent"], false, "{result}");
    assert_eq!(result["wrote"], false, "{result}");
    assert_eq!(result["errors"].as_array().unwrap().len(), 2, "{result}");
    assert_eq!(outcome_status(&records[1]), "failed", "{}", records[1]);
    assert!(
        outcome_reason(&records[1]).contains("exited with status 3"),
        "{}",
        records[1]
    );
    // Nothing arrived, and the file is unchanged.
    assert_eq!(arrived(&listener), Vec::<String>::new());
    assert_eq!(protected(&scratch), ORIGINAL);
    // The audit log says the backend ran sandboxed, and sc-sandbox recorded the run under the
    // call's id, with the agent.
    let events = scratch.audit_events();
    let exec_event = events
        .iter()
        .find(|e| e["stage"] == "exec" && e["id"] == "c-1")
        .unwrap();
    assert_eq!(exec_event["backend"]["sandboxed"], true, "{exec_event}");
    let runs: Vec<&Value> = events
        .iter()
        .filter(|e| e["stage"] == "sandbox" && e["id"] == "c-1")
        .collect();
    assert!(!runs.is_empty(), "{events:?}");
    assert!(runs.iter().all(|e| e["agent"] == "builder"), "{runs:?}");

    // The same program unconfined reaches the listener and writes the file: the test can fail.
    let records = exec(
        &scratch,
        None,
        &policy,
        tools,
        &[],
        &[allowed(
            "c-3",
            "escape_unconfined",
            json!({"port": port, "file": PROTECTED}),
        )],
    );
    let result = &records[0]["outcome"]["result"];
    assert_eq!(result["sent"], true, "{result}");
    assert_eq!(result["wrote"], true, "{result}");
    assert_eq!(arrived(&listener), vec!["escaped\n".to_owned()]);
    assert_eq!(protected(&scratch), "changed\n");
    let exec_event = scratch
        .audit_events()
        .into_iter()
        .find(|e| e["stage"] == "exec" && e["id"] == "c-3")
        .unwrap();
    assert!(
        exec_event["backend"].get("sandboxed").is_none(),
        "{exec_event}"
    );
}

/// The processes on the machine with `token` in their command line.
fn processes_with(token: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let found = cmdline.windows(token.len()).any(|w| w == token.as_bytes());
            found.then(|| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        })
        .collect()
}

#[test]
fn a_sandboxed_backend_past_its_timeout_is_killed_with_everything_it_started() {
    let (scratch, policy) = root_with_policy();
    // A daemon in a session of its own, and the main process, both asleep far past the timeout.
    let script = "setsid sleep 4711.0815 </dev/null >/dev/null 2>&1 & sleep 4712.0815";
    let mut hang = entry(json!(["/bin/sh", "-c", script]), true);
    hang["timeoutSeconds"] = json!(1);
    let started = Instant::now();
    let records = exec(
        &scratch,
        None,
        &policy,
        json!({"hang": hang}),
        &[],
        &[allowed("c-1", "hang", json!({}))],
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(outcome_status(&records[0]), "failed", "{}", records[0]);
    assert!(
        outcome_reason(&records[0]).contains("ran past its timeout"),
        "{}",
        records[0]
    );
    // Nothing it started is left, the daemon included.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_with(".0815");
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left running: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A tools file whose one backend would leave `ran.txt` in the root.
fn marking_tools() -> Value {
    json!({"mark": entry(json!(["/bin/sh", "-c", "echo ran > ran.txt; echo '{}'"]), true)})
}

#[test]
fn without_bubblewrap_a_sandboxed_backend_is_not_run_and_the_record_names_it() {
    let (scratch, policy) = root_with_policy();
    let records = exec(
        &scratch,
        None,
        &policy,
        marking_tools(),
        &[("SC_SANDBOX_BWRAP", "/nonexistent/bwrap")],
        &[allowed("c-1", "mark", json!({}))],
    );
    assert_eq!(outcome_status(&records[0]), "failed", "{}", records[0]);
    let reason = outcome_reason(&records[0]);
    assert!(
        reason.contains("was not run")
            && reason.contains("bubblewrap is missing")
            && reason.contains("/nonexistent/bwrap")
            && reason.contains("never run unconfined"),
        "{reason}"
    );
    assert!(!scratch.path("ran.txt").exists());
    let event = scratch
        .audit_events()
        .into_iter()
        .find(|e| e["stage"] == "exec" && e["id"] == "c-1")
        .unwrap();
    assert_eq!(event["backend"]["exitStatus"], Value::Null, "{event}");
    assert_eq!(event["backend"]["sandboxed"], true, "{event}");
    // A bubblewrap that is there and cannot make the sandbox: sc-sandbox ends with 125 before the
    // program runs, and the record says so.
    let records = exec(
        &scratch,
        None,
        &policy,
        marking_tools(),
        &[("SC_SANDBOX_BWRAP", "/bin/false")],
        &[allowed("c-broken", "mark", json!({}))],
    );
    assert_eq!(outcome_status(&records[0]), "failed", "{}", records[0]);
    let reason = outcome_reason(&records[0]);
    assert!(
        reason.contains("sc-sandbox could not make the sandbox (status 125)")
            && reason.contains("before the program started"),
        "{reason}"
    );
    assert!(!scratch.path("ran.txt").exists());
    // The same backend unconfined runs: the marker is what a run leaves.
    let mut unconfined = marking_tools();
    unconfined["mark"]
        .as_object_mut()
        .unwrap()
        .remove("sandbox");
    let records = exec(
        &scratch,
        None,
        &policy,
        unconfined,
        &[("SC_SANDBOX_BWRAP", "/nonexistent/bwrap")],
        &[allowed("c-2", "mark", json!({}))],
    );
    assert_eq!(outcome_status(&records[0]), "executed", "{}", records[0]);
    assert!(scratch.path("ran.txt").exists());
}

/// The escape server's command line, its script copied beside `marker` (in the scratch folder,
/// the sandbox's root).
fn escape_server(marker: &Path) -> Vec<OsString> {
    vec![
        "python3".into(),
        inside_copy(marker.parent().unwrap(), "mcp/escape-server.py").into_os_string(),
        marker.as_os_str().to_owned(),
    ]
}

/// One `escape` call through sc-mcp (with `extra` flags); returns what the server answered.
fn escape_through_sc_mcp(scratch: &Scratch, policy: &Path, extra: &[&str], port: u16) -> Value {
    let marker = scratch.path("server-started");
    let mut args = vec!["--policy", policy.to_str().unwrap(), "--agent", "fs"];
    args.extend_from_slice(extra);
    let mut proxy = Proxy::spawn(scratch, &args, &escape_server(&marker));
    proxy.initialize();
    let answer = proxy.call(2, "escape", json!({"port": port, "file": PROTECTED}));
    let done = proxy.finish();
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
    assert!(marker.exists(), "the server ran");
    serde_json::from_str(result_text(&answer)).unwrap()
}

#[test]
fn sc_mcp_sandbox_confines_the_server() {
    let (scratch, policy) = root_with_policy();
    let (listener, port) = listen();
    let result = escape_through_sc_mcp(&scratch, &policy, &["--sandbox"], port);
    assert_eq!(result["sent"], false, "{result}");
    assert_eq!(result["wrote"], false, "{result}");
    assert_eq!(arrived(&listener), Vec::<String>::new());
    assert_eq!(protected(&scratch), ORIGINAL);
    // sc-sandbox recorded the server's run in sc-mcp's audit log, in the agent's name.
    let runs: Vec<Value> = scratch
        .audit_events()
        .into_iter()
        .filter(|e| e["stage"] == "sandbox")
        .collect();
    assert!(!runs.is_empty());
    assert!(runs.iter().all(|e| e["agent"] == "fs"), "{runs:?}");
    // Without --sandbox, the same server reaches the listener and writes the file.
    let result = escape_through_sc_mcp(&scratch, &policy, &[], port);
    assert_eq!(result["sent"], true, "{result}");
    assert_eq!(result["wrote"], true, "{result}");
    assert_eq!(arrived(&listener), vec!["escaped\n".to_owned()]);
    assert_eq!(protected(&scratch), "changed\n");
}

#[test]
fn sc_mcp_sandbox_without_bubblewrap_never_starts_the_server_and_holds_every_call() {
    let (scratch, policy) = root_with_policy();
    let marker = scratch.path("server-started");
    let audit = scratch.audit_path();
    let mut proxy = Proxy::spawn_as_configured(
        &scratch,
        scratch.dir.path(),
        &[("SC_SANDBOX_BWRAP", Path::new("/nonexistent/bwrap"))],
        &[
            "--audit",
            audit.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--agent",
            "fs",
            "--sandbox",
        ],
        &escape_server(&marker),
    );
    // One line at the start says why, and what sc-mcp does instead.
    let said = proxy.wait_for_stderr("not started");
    assert!(
        said.contains("bubblewrap is missing")
            && said.contains("/nonexistent/bwrap")
            && said.contains("holds every tools/call"),
        "{said}"
    );
    // sc-mcp answers as an MCP server of its own, with no tools.
    let initialized = proxy.initialize();
    assert_eq!(
        initialized["result"]["serverInfo"]["name"], "sc-mcp",
        "{initialized}"
    );
    assert_eq!(initialized["result"]["protocolVersion"], "2025-06-18");
    let instructions = initialized["result"]["instructions"].as_str().unwrap();
    assert!(
        instructions.contains("No tools are available")
            && instructions.contains("bubblewrap is missing"),
        "{instructions}"
    );
    let listed = proxy.request(1, "tools/list", json!({}));
    assert_eq!(listed["result"], json!({"tools": []}), "{listed}");
    let pong = proxy.request(3, "ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    let unknown = proxy.request(4, "resources/list", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    // A call is held, and the answer names what is missing.
    let answer = proxy.call(2, "escape", json!({"port": 1, "file": PROTECTED}));
    assert!(is_error(&answer), "{answer}");
    let text = result_text(&answer);
    assert!(
        text.starts_with("held: the sandbox cannot be made here, so the MCP server is not run unconfined: bubblewrap is missing")
            && text.contains("/nonexistent/bwrap"),
        "{text}"
    );
    let done = proxy.finish();
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
    assert!(!marker.exists(), "the server was started");
    assert_eq!(protected(&scratch), ORIGINAL);
    // The audit log has the hold, nobody's decline, and the call skipped.
    let events = scratch.audit_events();
    let gate = events
        .iter()
        .find(|e| e["stage"] == "gate" && e["call"]["tool"] == "escape")
        .unwrap_or_else(|| panic!("no gate event: {events:?}"));
    assert_eq!(gate["decision"], "hold", "{gate}");
    let reasons = gate["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 1, "{gate}");
    assert!(
        reasons[0]
            .as_str()
            .unwrap()
            .contains("bubblewrap is missing"),
        "{gate}"
    );
    let id = &gate["id"];
    let approve = events
        .iter()
        .find(|e| e["stage"] == "approve" && &e["id"] == id)
        .unwrap_or_else(|| panic!("no approve event: {events:?}"));
    assert_eq!(approve["approval"]["approved"], false, "{approve}");
    let exec = events
        .iter()
        .find(|e| e["stage"] == "exec" && &e["id"] == id)
        .unwrap_or_else(|| panic!("no exec event: {events:?}"));
    assert_eq!(exec["outcome"]["status"], "skipped", "{exec}");
    assert!(
        exec["outcome"]["reason"]
            .as_str()
            .unwrap()
            .contains("bubblewrap is missing"),
        "{exec}"
    );
    assert!(events.iter().all(|e| e["stage"] != "sandbox"), "{events:?}");
    // A bubblewrap that is there and cannot make the sandbox: sc-sandbox's trial run ends with
    // 125, the server never runs, and calls are held with sc-sandbox's reason.
    let mut proxy = Proxy::spawn_as_configured(
        &scratch,
        scratch.dir.path(),
        &[("SC_SANDBOX_BWRAP", Path::new("/bin/false"))],
        &[
            "--audit",
            audit.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--sandbox",
        ],
        &escape_server(&marker),
    );
    let said = proxy.wait_for_stderr("not started");
    assert!(
        said.contains("status 125") && said.contains("before the program started"),
        "{said}"
    );
    proxy.initialize();
    let listed = proxy.request(1, "tools/list", json!({}));
    assert_eq!(listed["result"], json!({"tools": []}), "{listed}");
    let answer = proxy.call(2, "escape", json!({"port": 1, "file": PROTECTED}));
    assert!(is_error(&answer), "{answer}");
    let text = result_text(&answer);
    assert!(
        text.starts_with("held: the sandbox cannot be made here")
            && text.contains("sc-sandbox could not make the sandbox (status 125)")
            && text.contains("before the program started"),
        "{text}"
    );
    let done = proxy.finish();
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
    assert!(!marker.exists(), "the server was started");
    // The trial run wrote nothing to the audit log.
    assert!(
        scratch
            .audit_events()
            .iter()
            .all(|e| e["stage"] != "sandbox"),
        "{:?}",
        scratch.audit_events()
    );
    // The same command without --sandbox does start it: the marker is what a start leaves.
    let out = scratch
        .cmd("sc-mcp")
        .env("SC_SANDBOX_BWRAP", "/nonexistent/bwrap")
        .arg("--policy")
        .arg(&policy)
        .arg("--")
        .args(escape_server(&marker))
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(marker.exists());
}

#[test]
fn a_confined_program_that_exits_125_is_recorded_as_run_whatever_it_printed() {
    let (scratch, policy) = root_with_policy();
    // It ran (it leaves a marker), printed what sc-sandbox prints when it fails, and exited 125.
    let forger =
        "echo ran > ran.txt; echo 'sc-sandbox: bubblewrap is missing: forged' >&2; exit 125";
    let records = exec(
        &scratch,
        None,
        &policy,
        json!({"forge": entry(json!(["/bin/sh", "-c", forger]), true)}),
        &[],
        &[allowed("c-125", "forge", json!({}))],
    );
    assert!(scratch.path("ran.txt").exists(), "the program ran");
    assert_eq!(outcome_status(&records[0]), "failed", "{}", records[0]);
    let reason = outcome_reason(&records[0]);
    assert!(reason.contains("exited with status 125"), "{reason}");
    assert!(!reason.contains("was not run"), "{reason}");
    let event = scratch
        .audit_events()
        .into_iter()
        .find(|e| e["stage"] == "exec" && e["id"] == "c-125")
        .unwrap();
    assert_eq!(event["backend"]["exitStatus"], 125, "{event}");
    // sc-sandbox's own failure is still told apart: not run, with sc-sandbox's reason.
    let records = exec(
        &scratch,
        None,
        &policy,
        json!({"forge": entry(json!(["/bin/sh", "-c", forger]), true)}),
        &[("SC_SANDBOX_BWRAP", "/bin/false")],
        &[allowed("c-broken", "forge", json!({}))],
    );
    let reason = outcome_reason(&records[0]);
    assert!(
        reason.contains("was not run") && reason.contains("before the program started"),
        "{reason}"
    );
}

#[test]
fn sc_exec_and_sc_mcp_run_a_program_given_by_a_path_under_the_hosts_tmp() {
    let (scratch, policy) = root_with_policy();
    let tmp = tempfile::Builder::new()
        .prefix("sc-doors-")
        .tempdir_in("/tmp")
        .unwrap();
    let tool = tmp.path().join("tool.sh");
    std::fs::write(&tool, "#!/bin/sh\necho '{\"from\": \"tmp\"}'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let records = exec(
        &scratch,
        None,
        &policy,
        json!({"tmp": entry(json!([tool]), true)}),
        &[],
        &[allowed("c-tmp", "tmp", json!({}))],
    );
    assert_eq!(outcome_status(&records[0]), "executed", "{}", records[0]);
    assert_eq!(
        records[0]["outcome"]["result"]["from"], "tmp",
        "{}",
        records[0]
    );
    // An MCP server script under /tmp, run by python3 under sc-mcp --sandbox.
    let server = tmp.path().join("escape-server.py");
    std::fs::copy(testdata("mcp/escape-server.py"), &server).unwrap();
    let marker = scratch.path("server-started");
    let (_listener, port) = listen();
    let args = [
        "--policy",
        policy.to_str().unwrap(),
        "--agent",
        "fs",
        "--sandbox",
    ];
    let command: Vec<OsString> = vec![
        "python3".into(),
        server.into_os_string(),
        marker.clone().into_os_string(),
    ];
    let mut proxy = Proxy::spawn(&scratch, &args, &command);
    proxy.initialize();
    let answer = proxy.call(2, "escape", json!({"port": port, "file": PROTECTED}));
    let done = proxy.finish();
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
    assert!(marker.exists(), "the server ran");
    let result: Value = serde_json::from_str(result_text(&answer)).unwrap();
    assert_eq!(result["sent"], false, "{result}");
    assert_eq!(protected(&scratch), ORIGINAL);
}

/// `door` (a binary of this package) alone in a folder of its own, with no sc-sandbox beside it;
/// returns its path and the sc-sandbox it would look for.
fn alone(scratch: &Scratch, door: &str) -> (PathBuf, PathBuf) {
    // The door with the program its launcher starts (sc-hook), and no sc-sandbox beside them.
    let folder = scratch.path(&format!("alone-{door}"));
    let mut names = vec![door, "sc-hook"];
    names.dedup();
    for name in names {
        crate::util::place_exe(&crate::util::bin_path(name), &folder.join(name));
    }
    (folder.join(door), folder.join("sc-sandbox"))
}

#[test]
fn sc_hook_sc_exec_and_sc_mcp_refuse_a_missing_sc_sandbox_in_the_same_words() {
    let (scratch, policy) = root_with_policy();
    let why = |door: &str, sandbox: &Path| {
        format!(
            "sc-sandbox is missing: {} is not an executable file (install sc-sandbox beside {door})",
            sandbox.display()
        )
    };
    let clean = |exe: &Path| {
        let mut cmd = assert_cmd::Command::new(exe);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(scratch.dir.path())
            .arg("--audit")
            .arg(scratch.audit_path())
            .timeout(Duration::from_secs(60));
        cmd
    };

    // sc-hook: a Bash call the policy confines is held, with the reason.
    let (hook, sandbox) = alone(&scratch, "sc-hook");
    let always = scratch.write(
        "always.json",
        json!({"sensitiveTools": [], "sandbox": {"when": "always"}}).to_string(),
    );
    let input = json!({
        "session_id": "s-1",
        "transcript_path": "/t",
        "cwd": scratch.dir.path(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "echo ran > ran.txt"},
        "tool_use_id": "toolu_1",
    });
    let out = clean(&hook)
        .arg("--policy")
        .arg(&always)
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let specific = &answer["hookSpecificOutput"];
    assert_eq!(specific["permissionDecision"], "ask", "{answer}");
    let reason = specific["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains(&why("sc-hook", &sandbox)), "{reason}");

    // sc-exec: a backend with `"sandbox": true` is not run, and its record says why.
    let (exec_alone, sandbox) = alone(&scratch, "sc-exec");
    let records = exec(
        &scratch,
        Some(&exec_alone),
        &policy,
        marking_tools(),
        &[],
        &[allowed("c-1", "mark", json!({}))],
    );
    assert_eq!(outcome_status(&records[0]), "failed", "{}", records[0]);
    let reason = outcome_reason(&records[0]);
    assert!(
        reason.contains(&why("sc-exec", &sandbox)) && reason.contains("was not run"),
        "{reason}"
    );

    // sc-mcp: the server is never started, and sc-mcp says why.
    let (mcp, sandbox) = alone(&scratch, "sc-mcp");
    let marker = scratch.path("server-started");
    let out = clean(&mcp)
        .arg("--policy")
        .arg(&policy)
        .arg("--sandbox")
        .arg("--")
        .args(escape_server(&marker))
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(&why("sc-mcp", &sandbox)), "{said}");

    // Nothing ran, unconfined or not.
    assert!(!scratch.path("ran.txt").exists());
    assert!(!marker.exists());
}
