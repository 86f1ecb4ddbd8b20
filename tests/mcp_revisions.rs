//! sc-mcp between clients and servers of different MCP revisions (2025-11-25 and 2026-07-28),
//! and a HOLD as the 2026-07-28 protocol's own retry (multi round-trip requests).
//!
//! The interop tests drive the Python SDK (the `mcp` package, pinned in
//! testdata/mcp/python-requirements.txt, installed by `make test-deps` into testdata/mcp/venv)
//! as the client, in its 2026-07-28 and its legacy mode, through sc-mcp to the published
//! filesystem server (2025-11-25) and to a small server on the same SDK
//! (testdata/mcp/py-server.py). The `requestState` tests are driven by the scripted client of
//! tests/mcp.rs against the hermetic fake server.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::mcp::{events, fake_server, filesystem_server, result_text, Proxy};
use crate::mcp_http::{Listener, PyHttpServer, UPSTREAM_SECRET};
use crate::util::{bin_path, testdata, RedisServer, Scratch};

/// The pinned Python SDK's interpreter; `make test-deps` makes it.
fn python() -> PathBuf {
    let path = testdata("mcp/venv/bin/python");
    assert!(
        path.exists(),
        "{} is missing: run `make test-deps` (the Python SDK, testdata/mcp/python-requirements.txt)",
        path.display()
    );
    path
}

/// Runs testdata/mcp/py-client.py in `mode` with `plan` through sc-mcp (with `args`) in front of
/// `server`; its report.
fn python_client(mode: &str, plan: &Value, args: &[&str], server: &[OsString]) -> Value {
    let mut command = Command::new(python());
    command
        .arg(testdata("mcp/py-client.py"))
        .arg(mode)
        .arg(plan.to_string())
        .arg("--")
        .arg(bin_path("sc-mcp"))
        .args(args);
    if !server.is_empty() {
        command.arg("--").args(server);
    }
    python_report(mode, command)
}

/// Runs testdata/mcp/py-client.py in `mode` with `plan` against an sc-mcp listening for HTTP.
fn python_client_http(mode: &str, plan: &Value, listener: &Listener) -> Value {
    let mut command = Command::new(python());
    command
        .arg(testdata("mcp/py-client.py"))
        .arg(mode)
        .arg(plan.to_string())
        .arg("--")
        .arg(&listener.url)
        .env("SC_MCP_TOKEN", &listener.token);
    python_report(mode, command)
}

fn python_report(mode: &str, mut command: Command) -> Value {
    let output = command
        .stdin(Stdio::null())
        .output()
        .expect("the Python SDK client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Python SDK client in {mode} mode failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|err| panic!("{err}: {stdout}"))
}

/// `sc-report --verify` of `audit` (with the key that chains it, if any).
pub(crate) fn verify(audit: &Path, key: Option<&Path>) {
    let mut report = Command::new(bin_path("sc-report"));
    report.env_clear().arg("--verify");
    if let Some(key) = key {
        report.arg("--audit-key").arg(key);
    }
    let output = report.arg(audit).output().unwrap();
    assert!(
        output.status.success(),
        "the audit chain verifies: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

pub(crate) fn read_events(audit: &Path) -> Vec<Value> {
    std::fs::read_to_string(audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// In each mode, over each transport (stdio, and Streamable HTTP through `--listen`): the tools
/// listed (without the denied ones), an allowed read, a denied call, and a held call approved
/// through elicitation (the retry for 2026-07-28), the audit verifying. `extra` goes to sc-mcp
/// (`--upstream` with no `server`).
fn tools_read_deny_and_held(
    scratch: &Scratch,
    policy: &Path,
    (server, extra): (&[OsString], &[&str]),
    calls: &Value,
    denied: &str,
    check_held: impl Fn(&Value),
    reset: impl Fn(),
) {
    for (mode, http) in [
        ("2026-07-28", false),
        ("legacy", false),
        ("2026-07-28", true),
        ("legacy", true),
    ] {
        reset();
        let mode_name = if http {
            format!("{mode}-http")
        } else {
            mode.to_owned()
        };
        let audit = scratch.path(&format!("audit-{mode_name}.jsonl"));
        let plan = json!({"elicit": "accept", "calls": calls});
        let mut args = vec![
            "--policy",
            policy.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
            "--agent",
            "fs",
        ];
        args.extend_from_slice(extra);
        let report = if http {
            let listener = Listener::start(scratch, &args, server);
            python_client_http(mode, &plan, &listener)
        } else {
            python_client(mode, &plan, &args, server)
        };
        let mode = mode_name.as_str();
        let tools: Vec<&str> = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool.as_str().unwrap())
            .collect();
        assert!(!tools.contains(&denied), "{mode}: {tools:?}");
        let results = report["results"].as_array().unwrap();
        assert_eq!(results[0]["isError"], false, "{mode}: {report}");
        assert_eq!(results[1]["isError"], true, "{mode}: {report}");
        assert!(
            results[1]["text"].as_str().unwrap().contains("denied"),
            "{mode}: {report}"
        );
        assert_eq!(results[2]["isError"], false, "{mode}: {report}");
        check_held(&results[2]);
        // The person was asked once, with the call's tool and exact arguments.
        let asked = report["asked"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{mode}: {report}");
        let message = asked[0]["message"].as_str().unwrap();
        let held = calls[2][0].as_str().unwrap();
        assert!(message.contains(held), "{mode}: {message}");
        verify(&audit, None);
        let log = read_events(&audit);
        let approvals = events(&log, "approve");
        assert_eq!(approvals.len(), 1, "{mode}: {log:?}");
        assert_eq!(approvals[0]["approval"]["by"], "elicitation");
        assert_eq!(approvals[0]["approval"]["approved"], true);
        if mode.starts_with("2026-07-28") {
            assert_eq!(approvals[0]["protocolRevision"], "2026-07-28");
        } else {
            assert!(approvals[0].get("protocolRevision").is_none());
        }
    }
}

#[test]
fn the_python_sdk_client_in_both_modes_through_sc_mcp_to_the_published_filesystem_server() {
    let scratch = Scratch::new();
    scratch.write("served/notes.txt", "remember the milk\n");
    let root = scratch.path("served");
    let server = vec![
        OsString::from("node"),
        filesystem_server().into_os_string(),
        root.clone().into_os_string(),
    ];
    let notes = root.join("notes.txt");
    let calls = json!([
        ["read_text_file", {"path": notes}],
        ["write_file", {"path": root.join("x.txt"), "content": "x"}],
        ["create_directory", {"path": root.join("made")}],
    ]);
    tools_read_deny_and_held(
        &scratch,
        &testdata("mcp/filesystem-policy.json"),
        (&server, &[]),
        &calls,
        "write_file",
        |_| {},
        || {
            let _ = std::fs::remove_dir(root.join("made"));
        },
    );
    assert!(root.join("made").is_dir());
    assert!(!root.join("x.txt").exists());
}

/// The matrix against testdata/mcp/py-server.py over stdio, started with `mode` (none: the
/// SDK's dual-era server).
fn python_server_matrix(mode: Option<&str>) {
    let scratch = Scratch::new();
    scratch.write("notes/a.txt", "hello\n");
    let root = scratch.path("notes");
    let policy = scratch.write(
        "policy.json",
        r#"{"denyTools":["delete_note"],"sensitiveTools":["write_note"],"untrustedOutputTools":["read_note"],"taintScope":"agent"}"#,
    );
    let mut server = vec![
        python().into_os_string(),
        testdata("mcp/py-server.py").into_os_string(),
        root.clone().into_os_string(),
    ];
    server.extend(mode.map(OsString::from));
    let calls = json!([
        ["read_note", {"name": "a.txt"}],
        ["delete_note", {"name": "a.txt"}],
        ["write_note", {"name": "b.txt", "text": "approved"}],
    ]);
    tools_read_deny_and_held(
        &scratch,
        &policy,
        (&server, &[]),
        &calls,
        "delete_note",
        |held| assert_eq!(held["text"], "wrote b.txt"),
        || {
            let _ = std::fs::remove_file(root.join("b.txt"));
        },
    );
    assert!(root.join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("b.txt")).unwrap(),
        "approved"
    );
}

#[test]
fn the_python_sdk_client_in_both_modes_through_sc_mcp_to_a_python_sdk_server() {
    python_server_matrix(None);
}

/// The same matrix with a Python SDK server that speaks 2026-07-28 only (it refuses
/// `initialize`): sc-mcp finds it so, speaks 2026-07-28 to it (`server/discover`, the protocol
/// keys on each request) and translates for the legacy client (its `initialize` answered from
/// `server/discover`, results without `resultType`).
#[test]
fn the_python_sdk_client_in_both_modes_through_sc_mcp_to_a_strict_2026_07_28_python_server() {
    python_server_matrix(Some("--modern-only"));
}

/// The same matrix with the Python SDK server over Streamable HTTP behind `--upstream` (and so,
/// with `--listen`, HTTP on both sides); its bearer token never shows in the audit log or on
/// sc-mcp's stderr.
#[test]
fn the_python_sdk_client_in_both_modes_through_sc_mcp_to_a_python_sdk_server_over_http() {
    python_http_server_matrix(&[]);
}

/// The same with a Python SDK server over Streamable HTTP that speaks 2026-07-28 only (a POST
/// without `MCP-Protocol-Version: 2026-07-28` is refused; the SDK checks `Mcp-Method` and
/// `Mcp-Name` against each body): sc-mcp opens with `server/discover` over `--upstream` too, with
/// the headers the 2026-07-28 transport asks for on every request.
#[test]
fn the_python_sdk_client_in_both_modes_through_sc_mcp_to_a_strict_2026_07_28_python_server_over_http(
) {
    python_http_server_matrix(&["--modern-only"]);
}

/// The matrix against testdata/mcp/py-server.py over Streamable HTTP (`--http`, then `extra`).
fn python_http_server_matrix(extra: &[&str]) {
    let scratch = Scratch::new();
    scratch.write("notes/a.txt", "hello\n");
    let root = scratch.path("notes");
    let policy = scratch.write(
        "policy.json",
        r#"{"denyTools":["delete_note"],"sensitiveTools":["write_note"],"untrustedOutputTools":["read_note"],"taintScope":"agent"}"#,
    );
    let upstream = PyHttpServer::start_with(&root, extra);
    let header = format!("Authorization: Bearer {UPSTREAM_SECRET}");
    let calls = json!([
        ["read_note", {"name": "a.txt"}],
        ["delete_note", {"name": "a.txt"}],
        ["write_note", {"name": "b.txt", "text": "approved"}],
    ]);
    tools_read_deny_and_held(
        &scratch,
        &policy,
        (
            &[],
            &["--upstream", &upstream.url, "--upstream-header", &header],
        ),
        &calls,
        "delete_note",
        |held| assert_eq!(held["text"], "wrote b.txt"),
        || {
            let _ = std::fs::remove_file(root.join("b.txt"));
        },
    );
    assert!(root.join("a.txt").exists());
    for entry in std::fs::read_dir(scratch.path("")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "jsonl") {
            let log = std::fs::read_to_string(&path).unwrap();
            assert!(!log.contains(UPSTREAM_SECRET), "{}", path.display());
        }
    }
}

/// Each side in the newest revision it speaks: sc-mcp opens with `server/discover`, so the Python
/// SDK's dual-era server (which also answers `initialize`) is spoken to in 2026-07-28, a legacy
/// client's `initialize` answered from its `server/discover`; and a legacy server (the fake one,
/// which answers `server/discover` with -32601) is opened with `initialize` as before, for a
/// legacy client (its own `initialize`, as it came) and for a 2026-07-28 one (sc-mcp's).
#[test]
fn sc_mcp_opens_with_server_discover_and_falls_back_to_initialize_with_a_legacy_server() {
    let scratch = Scratch::new();
    scratch.write("notes/a.txt", "hello\n");
    let policy = scratch.write("policy.json", r#"{"denyTools":["delete_note"]}"#);
    let args = ["--policy", policy.to_str().unwrap(), "--agent", "fs"];
    let dual = vec![
        python().into_os_string(),
        testdata("mcp/py-server.py").into_os_string(),
        scratch.path("notes").into_os_string(),
    ];
    let mut proxy = Proxy::spawn(&scratch, &args, &dual);
    let init = proxy.initialize();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "py-notes", "{init}");
    let list = proxy.request(1, "tools/list", json!({}));
    assert!(list["result"].get("resultType").is_none(), "{list}");
    assert!(!list.to_string().contains("delete_note"), "{list}");
    let read = proxy.call(2, "read_note", json!({"name": "a.txt"}));
    assert_eq!(result_text(&read), "hello\n", "{read}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        done.stderr
            .contains("speaks 2026-07-28 (its server/discover says so)"),
        "{}",
        done.stderr
    );

    // A legacy server: the legacy client's own initialize reaches it, answered by the server.
    let policy = testdata("mcp/fake-policy.json");
    let args = ["--policy", policy.to_str().unwrap(), "--agent", "crew"];
    let scratch = Scratch::new();
    let mut proxy = Proxy::spawn(&scratch, &args, &fake_server());
    let init = proxy.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "fake-mcp", "{init}");
    let echo = proxy.call(1, "echo", json!({"memo": "legacy"}));
    assert!(result_text(&echo).contains("legacy"), "{echo}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        !done.stderr.contains("speaks 2026-07-28"),
        "{}",
        done.stderr
    );
    let received = crate::util::parse_lines(&crate::mcp::server_received(&scratch));
    let methods: Vec<&str> = received
        .iter()
        .filter_map(|line| line["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ],
        "{received:?}"
    );
    assert_eq!(
        received[1]["params"]["clientInfo"]["name"],
        "skeleton-crew-tests"
    );
    assert!(
        received[3]["params"].get("_meta").is_none(),
        "{:?}",
        received[3]
    );

    // A 2026-07-28 client in front of the legacy server: sc-mcp's own initialize after the
    // server's -32601, and the answer made a 2026-07-28 one.
    let scratch = Scratch::new();
    let mut proxy = Proxy::spawn(&scratch, &args, &fake_server());
    let echo = proxy.request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"memo": "modern"}, "_meta": modern_meta(false)}),
    );
    assert!(result_text(&echo).contains("modern"), "{echo}");
    assert_eq!(echo["result"]["resultType"], "complete", "{echo}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let received = crate::util::parse_lines(&crate::mcp::server_received(&scratch));
    let methods: Vec<&str> = received
        .iter()
        .filter_map(|line| line["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ],
        "{received:?}"
    );
    assert_eq!(received[1]["params"]["clientInfo"]["name"], "sc-mcp");
}

// ---------------------------------------------------------------------------------------------
// requestState, by the scripted client

fn modern_meta(elicits: bool) -> Value {
    let capabilities = if elicits {
        json!({"elicitation": {"form": {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
    })
}

/// A 2026-07-28 `tools/call` of the fake server's `echo` over the hold limit.
fn held_call(proxy: &mut Proxy, id: i64) -> Value {
    proxy.request(
        id,
        "tools/call",
        json!({"name": "echo", "arguments": {"amount": 750, "memo": "rent"}, "_meta": modern_meta(true)}),
    )
}

fn retry(proxy: &mut Proxy, id: i64, state: &str, approve: bool) -> Value {
    proxy.request(
        id,
        "tools/call",
        json!({
            "name": "echo",
            "arguments": {"amount": 750, "memo": "rent"},
            "inputResponses": {"sc-mcp-approval": {"action": "accept", "content": {"approve": approve, "scope": "once"}}},
            "requestState": state,
            "_meta": modern_meta(true),
        }),
    )
}

/// The audit key every door of a test shares, written once: written again while an sc-mcp
/// started before is reading it, it would be read empty.
pub(crate) fn key_file(scratch: &Scratch) -> PathBuf {
    let path = scratch.path("audit.key");
    if path.exists() {
        return path;
    }
    let path = scratch.write("audit.key", [7u8; 32]);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

pub(crate) struct Door {
    pub(crate) proxy: Proxy,
    pub(crate) audit: PathBuf,
}

pub(crate) fn door(
    scratch: &Scratch,
    name: &str,
    agent: &str,
    policy: &Path,
    extra: &[&str],
) -> Door {
    let audit = scratch.path(&format!("audit-{name}.jsonl"));
    let key = key_file(scratch);
    let mut args = vec![
        "--policy",
        policy.to_str().unwrap(),
        "--audit",
        audit.to_str().unwrap(),
        "--audit-key",
        key.to_str().unwrap(),
        "--agent",
        agent,
    ];
    args.extend_from_slice(extra);
    let proxy = Proxy::spawn(scratch, &args, &fake_server());
    Door { proxy, audit }
}

fn request_state_of(answer: &Value) -> String {
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    answer["result"]["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned()
}

fn refused_with(answer: &Value, words: &str) {
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains(words), "{message}");
}

/// Every refused retry is a denied `gate` event with its reason, and the chain verifies.
pub(crate) fn audited_refusals(scratch: &Scratch, door: Door, words: &[&str]) {
    let finished = door.proxy.finish();
    assert!(finished.status.success(), "{}", finished.stderr);
    audited_denials(&door.audit, &key_file(scratch), words);
}

/// The audit log at `audit` verifies with `key`, and its denied `gate` events have these reasons.
fn audited_denials(audit: &Path, key: &Path, words: &[&str]) {
    verify(audit, Some(key));
    let log = read_events(audit);
    let denied: Vec<String> = events(&log, "gate")
        .into_iter()
        .filter(|event| event["decision"] == "deny")
        .map(|event| event["reasons"][0].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(denied.len(), words.len(), "{denied:?}");
    for (reason, words) in denied.iter().zip(words) {
        assert!(reason.contains(words), "{reason} / {words}");
    }
}

#[test]
fn a_hold_is_the_protocols_retry_and_its_state_is_refused_tampered_replayed_or_elsewhere() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let mut a = door(&scratch, "a", "crew", &policy, &[]);
    // server/discover is answered from the fake server's capabilities.
    let discover = a
        .proxy
        .request(1, "server/discover", json!({"_meta": modern_meta(true)}));
    assert_eq!(discover["result"]["supportedVersions"][0], "2026-07-28");
    assert_eq!(discover["result"]["capabilities"], json!({"tools": {}}));
    assert_eq!(discover["result"]["ttlMs"], 0);
    // A list gains the cache hints the 2026-07-28 wire needs; write_file is hidden.
    let list = a
        .proxy
        .request(2, "tools/list", json!({"_meta": modern_meta(true)}));
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["cacheScope"], "private");
    assert!(!list.to_string().contains("write_file"));
    // A 2026-07-28 message is checked as it came: a duplicate key is refused, never forwarded.
    a.proxy.send(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","name":"write_file","arguments":{"memo":"dup-marker"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#);
    let duplicate = a.proxy.answer(&json!(9));
    assert!(duplicate.get("error").is_some(), "{duplicate}");
    // The hold: the question, and the sealed state.
    let held = held_call(&mut a.proxy, 3);
    let state = request_state_of(&held);
    let question = &held["result"]["inputRequests"]["sc-mcp-approval"];
    assert_eq!(question["method"], "elicitation/create");
    let message = question["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("echo") && message.contains("750"),
        "{message}"
    );
    // Tampered with: one character changed.
    let mut tampered = state.clone().into_bytes();
    tampered[3] = if tampered[3] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    refused_with(&retry(&mut a.proxy, 4, &tampered, true), "tampered");
    // For another principal: an sc-mcp with the same key and policy, for another agent.
    let mut b = door(&scratch, "b", "other", &policy, &[]);
    refused_with(&retry(&mut b.proxy, 1, &state, true), "another principal");
    // From another policy.
    let other_policy = scratch.write(
        "other-policy.json",
        r#"{"holdAboveAmount": 500, "denyTools": ["write_file"]}"#,
    );
    let mut c = door(&scratch, "c", "crew", &other_policy, &[]);
    refused_with(&retry(&mut c.proxy, 1, &state, true), "another policy");
    // The real retry runs the call once, and a replay is refused.
    let answer = retry(&mut a.proxy, 5, &state, true);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert!(result_text(&answer).contains("750"), "{answer}");
    refused_with(&retry(&mut a.proxy, 6, &state, true), "already used");
    // Expired: a state that lives 0 seconds.
    let mut d = door(
        &scratch,
        "d",
        "crew",
        &policy,
        &["--request-state-ttl", "0"],
    );
    let state_d = request_state_of(&held_call(&mut d.proxy, 1));
    refused_with(&retry(&mut d.proxy, 2, &state_d, true), "expired");
    // A no through the retry declines the call.
    let mut e = door(&scratch, "e", "crew", &policy, &[]);
    let state_e = request_state_of(&held_call(&mut e.proxy, 1));
    let declined = retry(&mut e.proxy, 2, &state_e, false);
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert_eq!(declined["result"]["resultType"], "complete", "{declined}");
    audited_refusals(&scratch, e, &[]);
    audited_refusals(&scratch, a, &["malformed", "tampered", "already used"]);
    audited_refusals(&scratch, b, &["another principal"]);
    audited_refusals(&scratch, c, &["another policy"]);
    audited_refusals(&scratch, d, &["expired"]);
    // The call ran once, on a's server only when approved.
    let received = crate::mcp::server_received(&scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
    assert!(!received.contains("dup-marker"), "{received}");
    assert!(
        received.contains("traceparent"),
        "the trace context is passed on: {received}"
    );
    // Only sc-mcp's opening `server/discover` (answered -32601) carries them.
    assert!(
        received
            .lines()
            .filter(|line| !line.contains("server/discover"))
            .all(|line| !line.contains("io.modelcontextprotocol/protocolVersion")),
        "the legacy server is not given the per-request protocol keys: {received}"
    );
}

#[test]
fn a_retry_served_by_another_sc_mcp_on_the_same_redis_completes_once() {
    let scratch = Scratch::new();
    let redis = RedisServer::with_store();
    let url = redis.url();
    let policy = testdata("mcp/fake-policy.json");
    let shared = ["--crew", "payments", "--state", url.as_str()];
    let mut a = door(&scratch, "a", "crew", &policy, &shared);
    let mut b = door(&scratch, "b", "crew", &policy, &shared);
    let state = request_state_of(&held_call(&mut a.proxy, 1));
    let answer = retry(&mut b.proxy, 1, &state, true);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert!(result_text(&answer).contains("750"), "{answer}");
    refused_with(&retry(&mut a.proxy, 2, &state, true), "already used");
    refused_with(&retry(&mut b.proxy, 2, &state, true), "already used");
    audited_refusals(&scratch, a, &["already used"]);
    audited_refusals(&scratch, b, &["already used"]);
    let received = crate::mcp::server_received(&scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
}

/// Without a crew's store, each sc-mcp takes only the states it gave: two sc-mcp sharing the
/// `--audit-key` (so the key that seals states) once each ran the call of one yes.
#[test]
fn without_a_crews_store_a_state_is_taken_only_by_the_sc_mcp_that_gave_it() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let mut a = door(&scratch, "a", "crew", &policy, &[]);
    let mut b = door(&scratch, "b", "crew", &policy, &[]);
    let state = request_state_of(&held_call(&mut a.proxy, 1));
    let answer = retry(&mut a.proxy, 2, &state, true);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    refused_with(&retry(&mut b.proxy, 1, &state, true), "spent elsewhere");
    // Nor one b never gave and a never spent.
    let unspent = request_state_of(&held_call(&mut a.proxy, 3));
    refused_with(&retry(&mut b.proxy, 2, &unspent, true), "spent elsewhere");
    audited_refusals(&scratch, b, &["spent elsewhere", "spent elsewhere"]);
    audited_refusals(&scratch, a, &[]);
    let received = crate::mcp::server_received(&scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
}

/// A `requestState` names the place it is spent: a crew's store and crew, or the memory of the
/// sc-mcp that gave it. Every sc-mcp holding the `--audit-key` reads the state, but each place
/// keeps its own spent tokens: taken by an sc-mcp of another crew, of the same crew on another
/// store, or by another sc-mcp without a store, one yes would run the call once per place. Each
/// such sc-mcp refuses it (audited); the place that gave it takes it once.
#[test]
fn a_state_is_taken_only_where_it_is_spent_in_a_crews_store_or_an_sc_mcps_memory() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let store = scratch.path("state.sqlite");
    let other_store = scratch.path("other.sqlite");
    let (store, other_store) = (store.to_str().unwrap(), other_store.to_str().unwrap());
    let mut x = door(
        &scratch,
        "x",
        "crew",
        &policy,
        &["--crew", "x", "--state", store],
    );
    let mut y = door(
        &scratch,
        "y",
        "crew",
        &policy,
        &["--crew", "y", "--state", store],
    );
    let x_elsewhere = ["--crew", "x", "--state", other_store];
    let mut x2 = door(&scratch, "x2", "crew", &policy, &x_elsewhere);
    let mut m = door(&scratch, "m", "crew", &policy, &[]);
    let mut n = door(&scratch, "n", "crew", &policy, &[]);
    // Given by crew x: refused by crew y on the same store, crew x on another store, and an
    // sc-mcp without a store.
    let of_x = request_state_of(&held_call(&mut x.proxy, 1));
    refused_with(&retry(&mut y.proxy, 1, &of_x, true), "spent elsewhere");
    refused_with(&retry(&mut x2.proxy, 1, &of_x, true), "spent elsewhere");
    refused_with(&retry(&mut m.proxy, 1, &of_x, true), "spent elsewhere");
    // Given by an sc-mcp without a store: refused by another such sc-mcp, and by crew y.
    let of_m = request_state_of(&held_call(&mut m.proxy, 2));
    refused_with(&retry(&mut n.proxy, 1, &of_m, true), "spent elsewhere");
    refused_with(&retry(&mut y.proxy, 2, &of_m, true), "spent elsewhere");
    // Each is taken where it is spent, once.
    let answer = retry(&mut x.proxy, 2, &of_x, true);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    let answer = retry(&mut m.proxy, 3, &of_m, true);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    refused_with(&retry(&mut x.proxy, 3, &of_x, true), "already used");
    // Once spent at the place that gave it, still refused elsewhere.
    refused_with(&retry(&mut y.proxy, 3, &of_x, true), "spent elsewhere");
    refused_with(&retry(&mut n.proxy, 2, &of_m, true), "spent elsewhere");
    audited_refusals(&scratch, x, &["already used"]);
    audited_refusals(
        &scratch,
        y,
        &["spent elsewhere", "spent elsewhere", "spent elsewhere"],
    );
    audited_refusals(&scratch, x2, &["spent elsewhere"]);
    audited_refusals(&scratch, m, &["spent elsewhere"]);
    audited_refusals(&scratch, n, &["spent elsewhere", "spent elsewhere"]);
    let received = crate::mcp::server_received(&scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 2, "{received}");
}

/// A retry under the id of a request still awaiting its answer is refused, as any call's, and
/// its state is left unspent: it took that request's place, whose answer then went to the
/// retried call and whose outcome was never audited.
#[test]
fn a_retry_under_a_request_id_in_use_is_refused_and_its_state_kept() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let mut a = door(&scratch, "a", "crew", &policy, &[]);
    let state = request_state_of(&held_call(&mut a.proxy, 1));
    a.proxy
        .send_value(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "hang", "arguments": {}, "_meta": modern_meta(true)}}));
    a.proxy.wait_for_stderr("ALLOW crew → hang");
    let answer = retry(&mut a.proxy, 7, &state, true);
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in use"),
        "{answer}"
    );
    // The state was not spent: the retry under a free id runs the call.
    let answer = retry(&mut a.proxy, 8, &state, true);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert!(result_text(&answer).contains("750"), "{answer}");
    // The hung call is cancelled, so that sc-mcp ends with no request unanswered.
    a.proxy
        .send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#);
    audited_refusals(&scratch, a, &["already in use"]);
    let received = crate::mcp::server_received(&scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
}

/// A retried hold is decided again, by the one decision, on the crew's state as it is now: a
/// hold again runs with the person's yes (its amount counted once, when it was held), and a call
/// that became a deny while the person answered (here the crew's state became unreadable, which
/// denies every call) is denied whatever the answer. The `approve` event has both.
#[test]
fn a_retried_hold_is_decided_again_and_a_deny_now_overrides_the_approval() {
    let scratch = Scratch::new();
    let redis = RedisServer::with_store();
    let url = redis.url();
    let policy = scratch.write(
        "policy.json",
        r#"{"holdAboveAmount": 100, "holdAboveTotal": 1000}"#,
    );
    let shared = ["--crew", "payments", "--state", url.as_str()];
    let mut a = door(&scratch, "a", "crew", &policy, &shared);
    let audit = a.audit.clone();
    // Decided again as a hold: the yes runs it.
    let state = request_state_of(&held_call(&mut a.proxy, 1));
    let answer = retry(&mut a.proxy, 2, &state, true);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert!(result_text(&answer).contains("750"), "{answer}");
    // Its 750 was counted once: 100 more stays within the crew's 1000.
    let within = a.proxy.request(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"amount": 100, "memo": "within"}, "_meta": modern_meta(true)}),
    );
    assert_eq!(within["result"]["resultType"], "complete", "{within}");
    assert!(result_text(&within).contains("within"), "{within}");
    // Held again; while the person answers, the crew's state becomes one sc-mcp cannot read.
    let state = request_state_of(&held_call(&mut a.proxy, 4));
    let mut connection = redis.connection();
    let _: () = redis::cmd("SET")
        .arg("skeleton-crew:crew:payments:gate")
        .arg("[]")
        .query(&mut connection)
        .unwrap();
    let denied = retry(&mut a.proxy, 5, &state, true);
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert_eq!(denied["result"]["resultType"], "complete", "{denied}");
    let text = result_text(&denied);
    assert!(
        text.contains("denied") && text.contains("state store unavailable"),
        "{text}"
    );
    audited_refusals(&scratch, a, &[]);
    let log = read_events(&audit);
    let approvals = events(&log, "approve");
    assert_eq!(approvals.len(), 2, "{log:?}");
    for approval in &approvals {
        assert_eq!(approval["approval"]["approved"], true, "{approval}");
        assert_eq!(approval["approval"]["by"], "elicitation", "{approval}");
    }
    assert_eq!(approvals[0]["decidedAgain"]["decision"], "hold");
    assert_eq!(approvals[1]["decidedAgain"]["decision"], "deny");
    assert!(approvals[1]["decidedAgain"]["reasons"][0]
        .as_str()
        .unwrap()
        .contains("state store unavailable"));
    let last = events(&log, "exec").pop().unwrap();
    assert_eq!(last["id"], approvals[1]["id"]);
    assert_eq!(last["decision"], "deny", "{last}");
    assert_eq!(last["outcome"]["status"], "skipped", "{last}");
    // The call ran once: the first yes.
    let received = crate::mcp::server_received(&scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
}

/// The re-decision of a retried hold sees the spend without the held call's own amount (counted
/// when it was held): the budget rule's total in `decidedAgain` counts it once.
#[test]
fn a_retried_holds_budget_total_counts_its_own_amount_once() {
    let scratch = Scratch::new();
    let policy = scratch.write(
        "budget-policy.json",
        r#"{"holdAboveAmount": 10000, "holdAboveTotal": 1000}"#,
    );
    let mut a = door(&scratch, "a", "crew", &policy, &[]);
    let audit = a.audit.clone();
    let first = a.proxy.request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"amount": 400, "memo": "first"}, "_meta": modern_meta(true)}),
    );
    assert!(result_text(&first).contains("first"), "{first}");
    let held = held_call(&mut a.proxy, 2);
    let state = request_state_of(&held);
    let answer = retry(&mut a.proxy, 3, &state, true);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    audited_refusals(&scratch, a, &[]);
    let log = read_events(&audit);
    let held_reasons = events(&log, "gate")
        .into_iter()
        .find(|gate| gate["decision"] == "hold")
        .expect("the call was held")["reasons"]
        .to_string();
    assert!(
        held_reasons.contains("would total 1150 (400 "),
        "{held_reasons}"
    );
    let approvals = events(&log, "approve");
    assert_eq!(approvals.len(), 1, "{log:?}");
    assert_eq!(approvals[0]["decidedAgain"]["decision"], "hold", "{log:?}");
    let again = approvals[0]["decidedAgain"]["reasons"].to_string();
    assert!(again.contains("would total 1150 (400 "), "{again}");
    assert!(!again.contains("1900"), "{again}");
}

/// The budget of the retry-after-the-spend-was-forgotten tests: 1000 per agent, `echo` held only
/// for the total; `extra` adds to the policy.
pub(crate) fn budget_of_1000(scratch: &Scratch, extra: &str) -> PathBuf {
    scratch.write(
        "budget-policy.json",
        format!(r#"{{"holdAboveAmount": 10000, "holdAboveTotal": 1000{extra}}}"#),
    )
}

/// A 2026-07-28 `echo` of `amount` that is allowed and runs.
fn paid(proxy: &mut Proxy, id: i64, amount: u32, memo: &str) {
    let answer = proxy.request(
        id,
        "tools/call",
        json!({"name": "echo", "arguments": {"amount": amount, "memo": memo}, "_meta": modern_meta(true)}),
    );
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert!(result_text(&answer).contains(memo), "{answer}");
}

/// The crew's state as `sc-state show --json` prints it.
pub(crate) fn shown_state(scratch: &Scratch, store: &str) -> Value {
    let out = scratch
        .cmd("sc-state")
        .args(["show", "--crew", "payments", "--json", "--state", store])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["states"].as_array().unwrap().len(), 1, "{shown}");
    shown["states"][0]["state"].clone()
}

/// A 400 payment runs and a 750 is held at "would total 1150" (its 750 counted, and noted as
/// counted for its retry); then `forget` makes the store forget that spend (a reset, a budget
/// window that ends), a 900 payment runs in what is now a fresh budget, and the client retries
/// the 750 with the person's yes to 1150. Taking its 750 back from a spend that no longer
/// counts it would judge it at 900 and run it (a review ran it so: 1650 against 1000). It is
/// held at "would total 1650 (900 …)", a reason the yes was not for: not run, asked again, and
/// the `approve` event says why. A yes to that runs it once, and the spend counts it once.
fn a_retry_after_the_spend_was_forgotten(
    scratch: &Scratch,
    store: &str,
    extra: &str,
    forget: &dyn Fn(),
) {
    let policy = budget_of_1000(scratch, extra);
    let mut a = door(
        scratch,
        "a",
        "crew",
        &policy,
        &["--crew", "payments", "--state", store],
    );
    let audit = a.audit.clone();
    paid(&mut a.proxy, 1, 400, "first");
    let held = held_call(&mut a.proxy, 2);
    let first = request_state_of(&held);
    assert!(question_of(&held).contains("1150"), "{held}");
    let noted = shown_state(scratch, store);
    assert_eq!(noted["heldSpend"][0]["amount"], 750.0, "{noted}");
    forget();
    paid(&mut a.proxy, 3, 900, "since");
    let again = retry(&mut a.proxy, 4, &first, true);
    let second = request_state_of(&again);
    let asked = question_of(&again);
    assert!(asked.contains("would total 1650 (900 "), "{asked}");
    assert!(
        !crate::mcp::server_received(scratch).contains(r#""amount":750"#),
        "run on a yes to 1150: {}",
        crate::mcp::server_received(scratch)
    );
    let log = read_events(&audit);
    let gate = events(&log, "gate")
        .into_iter()
        .find(|gate| gate["decision"] == "hold")
        .expect("the call was held");
    let approvals = events(&log, "approve");
    assert_eq!(approvals.len(), 1, "{log:?}");
    let approval = approvals[0];
    assert_eq!(approval["id"], gate["id"], "{approval}");
    assert_eq!(approval["approval"]["approved"], true, "{approval}");
    assert_eq!(approval["decidedAgain"]["decision"], "hold", "{approval}");
    assert_eq!(
        approval["notCovered"]["shown"], gate["reasons"],
        "{approval}"
    );
    let not_shown = approval["notCovered"]["notShown"].to_string();
    assert!(not_shown.contains("would total 1650 (900 "), "{approval}");
    // The yes to 1650 runs it, once; the spend counts its 750 once, and forgets the note.
    let ran = retry(&mut a.proxy, 5, &second, true);
    assert_eq!(ran["result"]["resultType"], "complete", "{ran}");
    assert!(result_text(&ran).contains("750"), "{ran}");
    let received = crate::mcp::server_received(scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
    let after = shown_state(scratch, store);
    assert_eq!(after["agents"]["crew"]["spent"], 1650.0, "{after}");
    assert!(after.get("heldSpend").is_none(), "{after}");
    audited_refusals(scratch, a, &[]);
}

#[test]
fn a_retry_after_sc_state_reset_is_decided_on_the_spend_since_and_asked_again() {
    let scratch = Scratch::new();
    let store = scratch.path("state.sqlite");
    let store = store.to_str().unwrap();
    a_retry_after_the_spend_was_forgotten(&scratch, store, "", &|| {
        scratch
            .cmd("sc-state")
            .args(["reset", "--crew", "payments", "--state", store])
            .assert()
            .success();
    });
    // The reset is in the log it was given.
    let resets: Vec<Value> = scratch
        .audit_events()
        .into_iter()
        .filter(|event| event["action"] == "reset")
        .collect();
    assert_eq!(resets.len(), 1, "{resets:?}");
}

/// sc-mcp reads the system's clock (it has no test clock), so the day ends here as the store
/// sees it: its budget window is moved a day back, which is the state as the next update finds
/// it when the day ended after the hold.
#[test]
fn a_retry_after_its_budget_window_ended_is_decided_on_the_spend_since_and_asked_again() {
    let scratch = Scratch::new();
    let redis = RedisServer::with_store();
    let url = redis.url();
    a_retry_after_the_spend_was_forgotten(&scratch, &url, r#", "budgetWindow": "day""#, &|| {
        let key = "skeleton-crew:crew:payments:gate";
        let mut connection = redis.connection();
        let stored: String = redis::cmd("GET").arg(key).query(&mut connection).unwrap();
        let mut state: Value = serde_json::from_str(&stored).unwrap();
        let start = state["spendWindow"]["start"].as_str().unwrap();
        let start = humantime::parse_rfc3339(start).unwrap();
        let yesterday = start - std::time::Duration::from_secs(86_400);
        state["spendWindow"]["start"] =
            json!(humantime::format_rfc3339_seconds(yesterday).to_string());
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg(state.to_string())
            .query(&mut connection)
            .unwrap();
    });
}

/// With nothing forgotten between the hold and the retry, the yes to "would total 1150" runs
/// the call once, decided on the spend without its own 750; the spend counts it once (when it
/// was held), and the note is gone.
#[test]
fn a_retry_with_its_amount_still_counted_runs_once_and_counts_it_once() {
    let scratch = Scratch::new();
    let store = scratch.path("state.sqlite");
    let store = store.to_str().unwrap();
    let policy = budget_of_1000(&scratch, "");
    let mut a = door(
        &scratch,
        "a",
        "crew",
        &policy,
        &["--crew", "payments", "--state", store],
    );
    let audit = a.audit.clone();
    paid(&mut a.proxy, 1, 400, "first");
    let state = request_state_of(&held_call(&mut a.proxy, 2));
    let answer = retry(&mut a.proxy, 3, &state, true);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert!(result_text(&answer).contains("750"), "{answer}");
    let after = shown_state(&scratch, store);
    assert_eq!(after["agents"]["crew"]["spent"], 1150.0, "{after}");
    assert!(after.get("heldSpend").is_none(), "{after}");
    audited_refusals(&scratch, a, &[]);
    let log = read_events(&audit);
    let approvals = events(&log, "approve");
    assert_eq!(approvals.len(), 1, "{log:?}");
    let again = approvals[0]["decidedAgain"]["reasons"].to_string();
    assert!(again.contains("would total 1150 (400 "), "{again}");
    assert!(approvals[0].get("notCovered").is_none(), "{log:?}");
    let received = crate::mcp::server_received(&scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
}

/// A policy under which `echo`'s output is untrusted, so a call of it taints the agent, and an
/// `echo` over 100 is held; `shout` is sensitive (a payment, say), so a tainted agent's is held.
pub(crate) const UNTRUSTED_ECHO_POLICY: &str =
    r#"{"holdAboveAmount": 100, "sensitiveTools": ["shout"], "untrustedOutputTools": ["echo"]}"#;

/// A 2026-07-28 `tools/call` of `shout` (the payment) of 50, within every limit.
fn payment(proxy: &mut Proxy, id: i64, memo: &str) -> Value {
    proxy.request(
        id,
        "tools/call",
        json!({"name": "shout", "arguments": {"amount": 50, "memo": memo}, "_meta": modern_meta(true)}),
    )
}

/// The `echo` of 750 is held, and its untrusted output taints the agent as it is held; then
/// `forget` makes the crew's state forget the taint (`sc-state reset`, a taint TTL), and a
/// payment runs, as an untainted agent's does. The person's yes runs the `echo`: its untrusted
/// output reaches the agent, so the agent is tainted by it again (the taint names the held
/// call, as the hold's did), its 750 is counted once, and the next payment is held for the
/// taint. Before the fix, the retry recorded only the amount: the agent stayed untainted and
/// the payment after it ran.
fn a_retry_after_the_taint_was_forgotten(
    scratch: &Scratch,
    store: &str,
    extra: &[&str],
    forget: &dyn Fn(),
) {
    let policy = scratch.write("taint-policy.json", UNTRUSTED_ECHO_POLICY);
    let mut args = vec!["--crew", "payments", "--state", store];
    args.extend_from_slice(extra);
    let mut a = door(scratch, "a", "crew", &policy, &args);
    let audit = a.audit.clone();
    let first = request_state_of(&held_call(&mut a.proxy, 1));
    let held = shown_state(scratch, store);
    let taint = held["agents"]["crew"]["taintedBy"].clone();
    assert_eq!(taint["tool"], "echo", "{held}");
    forget();
    let before = payment(&mut a.proxy, 2, "payee-before");
    assert_eq!(before["result"]["resultType"], "complete", "{before}");
    assert!(result_text(&before).contains("payee-before"), "{before}");
    // The yes runs the held call, once.
    let ran = retry(&mut a.proxy, 3, &first, true);
    assert_eq!(ran["result"]["resultType"], "complete", "{ran}");
    assert!(result_text(&ran).contains("750"), "{ran}");
    let received = crate::mcp::server_received(scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
    // The next payment is held for the taint, and does not run.
    let asked = question_of(&payment(&mut a.proxy, 4, "payee-after"));
    assert!(
        asked.contains("tainted") && asked.contains("echo"),
        "{asked}"
    );
    let received = crate::mcp::server_received(scratch);
    assert!(!received.contains("payee-after"), "{received}");
    // Tainted again by it, as when it was held; its 750 counted once, beside the two 50s (the
    // held payment's counted as it was held, and noted for its retry: the only note left).
    let after = shown_state(scratch, store);
    let agent = &after["agents"]["crew"];
    assert_eq!(agent["taintedBy"]["id"], taint["id"], "{after}");
    assert_eq!(agent["taintedBy"]["tool"], "echo", "{after}");
    assert_eq!(after["crewTaintedBy"]["id"], taint["id"], "{after}");
    assert_eq!(agent["spent"], 850.0, "{after}");
    assert_eq!(after["heldSpend"].as_array().unwrap().len(), 1, "{after}");
    assert_eq!(after["heldSpend"][0]["amount"], 50.0, "{after}");
    audited_refusals(scratch, a, &[]);
    let log = read_events(&audit);
    let gates = events(&log, "gate");
    let echo = gates
        .iter()
        .find(|gate| gate["call"]["tool"] == "echo")
        .expect("the echo was decided");
    assert_eq!(echo["decision"], "hold", "{echo}");
    assert_eq!(echo["id"], taint["id"], "{echo}");
    let after = gates
        .iter()
        .find(|gate| gate["call"]["args"]["memo"] == "payee-after")
        .expect("the payment after was decided");
    assert_eq!(after["decision"], "hold", "{after}");
    assert_eq!(
        after["agentState"]["taintedBy"]["id"], taint["id"],
        "{after}"
    );
    let approvals = events(&log, "approve");
    assert_eq!(approvals.len(), 1, "{log:?}");
    assert_eq!(approvals[0]["id"], taint["id"], "{log:?}");
}

/// `sc-state reset` of the whole crew, and of the agent alone (`--agent`).
#[test]
fn a_retry_after_sc_state_reset_taints_its_agent_again() {
    for agent in [&[][..], &["--agent", "crew"]] {
        let scratch = Scratch::new();
        let store = scratch.path("state.sqlite");
        let store = store.to_str().unwrap();
        a_retry_after_the_taint_was_forgotten(&scratch, store, &[], &|| {
            scratch
                .cmd("sc-state")
                .args(["reset", "--crew", "payments", "--state", store])
                .args(agent)
                .assert()
                .success();
            let reset = shown_state(&scratch, store);
            assert!(reset.get("crewTaintedBy").is_none(), "{agent:?}: {reset}");
            assert_eq!(reset["agents"], json!({}), "{agent:?}: {reset}");
            assert!(reset.get("heldSpend").is_none(), "{agent:?}: {reset}");
        });
    }
}

/// sc-mcp reads the system's clock, so the taint TTL passes here as the store sees it: the
/// taint's last read is moved an hour back, which is the state as the next update finds it
/// when the hour passed after the hold. The held amount is still counted then.
#[test]
fn a_retry_after_a_taint_ttl_lifted_the_taint_taints_its_agent_again() {
    let scratch = Scratch::new();
    let redis = RedisServer::with_store();
    let url = redis.url();
    a_retry_after_the_taint_was_forgotten(&scratch, &url, &["--taint-ttl", "1h"], &|| {
        let key = "skeleton-crew:crew:payments:gate";
        let mut connection = redis.connection();
        let stored: String = redis::cmd("GET").arg(key).query(&mut connection).unwrap();
        let mut state: Value = serde_json::from_str(&stored).unwrap();
        assert_eq!(state["heldSpend"][0]["amount"], 750.0, "{state}");
        for cause in ["/agents/crew/taintedBy/at", "/crewTaintedBy/at"] {
            let at = state.pointer_mut(cause).expect("a taint with its time");
            let then = humantime::parse_rfc3339(at.as_str().unwrap()).unwrap();
            let hour_ago = then - std::time::Duration::from_secs(3_600);
            *at = json!(humantime::format_rfc3339_seconds(hour_ago).to_string());
        }
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg(state.to_string())
            .query(&mut connection)
            .unwrap();
    });
}

/// A policy under which a read of `garbage` taints the agent and `echo` is sensitive: an
/// `echo` over 100 is held for its amount, and, once the agent is tainted, for the taint too.
const TAINTABLE_POLICY: &str =
    r#"{"holdAboveAmount": 100, "sensitiveTools": ["echo"], "untrustedOutputTools": ["garbage"]}"#;

/// The `tools/call` params of the held `echo`, with the person's answer and `state` when given.
fn echo_params(answer: Option<(&str, bool)>) -> Value {
    let mut params = json!({"name": "echo", "arguments": {"amount": 750, "memo": "rent"}, "_meta": modern_meta(true)});
    if let Some((state, approve)) = answer {
        params["inputResponses"] = json!({"sc-mcp-approval": {"action": "accept", "content": {"approve": approve, "scope": "once"}}});
        params["requestState"] = json!(state);
    }
    params
}

/// The question of an `input_required` answer.
fn question_of(answer: &Value) -> String {
    answer["result"]["inputRequests"]["sc-mcp-approval"]["params"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no question in {answer}"))
        .to_owned()
}

/// A yes covers the reasons it was shown. The call is held for its amount and the person says
/// yes; before the retry, the agent reads untrusted content through the same sc-mcp, so the
/// retry is held for the taint too: it does not run, and comes back as a new input request
/// (a new `requestState`) showing the taint; the old state is spent. The yes to that one runs
/// the call, once. `call` sends a `tools/call` (id, params) as a client over the transport
/// would; `received` is what the server got; the `approve` events say which reasons the first
/// yes did not cover.
fn a_yes_for_fewer_reasons_is_asked_again(
    call: &mut dyn FnMut(i64, Value) -> Value,
    received: &dyn Fn() -> String,
    audit: &Path,
) {
    let held = call(1, echo_params(None));
    let first = request_state_of(&held);
    let asked = question_of(&held);
    assert!(
        asked.contains("750") && !asked.contains("tainted"),
        "{asked}"
    );
    // The untrusted read, allowed, through the same sc-mcp and agent.
    let read = call(
        2,
        json!({"name": "garbage", "arguments": {"url": "https://evil.example/page"}, "_meta": modern_meta(true)}),
    );
    assert_eq!(read["result"]["resultType"], "complete", "{read}");
    // The yes to the amount alone does not run it: asked again, with the taint.
    let again = call(3, echo_params(Some((&first, true))));
    let second = request_state_of(&again);
    assert_ne!(second, first);
    let asked = question_of(&again);
    assert!(
        asked.contains("tainted") && asked.contains("evil.example") && asked.contains("750"),
        "{asked}"
    );
    assert!(!received().contains(r#""amount":750"#), "{}", received());
    // The first state was spent on that retry.
    refused_with(&call(4, echo_params(Some((&first, true)))), "already used");
    // The yes to what it shows now runs it, once.
    let ran = call(5, echo_params(Some((&second, true))));
    assert_eq!(ran["result"]["resultType"], "complete", "{ran}");
    assert!(result_text(&ran).contains("750"), "{ran}");
    assert_eq!(received().matches(r#""amount":750"#).count(), 1);
    let log = read_events(audit);
    let gate = events(&log, "gate")
        .into_iter()
        .find(|gate| gate["decision"] == "hold")
        .expect("the call was held");
    let approvals = events(&log, "approve");
    assert_eq!(approvals.len(), 2, "{log:?}");
    let (not_covered, covered) = (approvals[0], approvals[1]);
    for approval in &approvals {
        assert_eq!(approval["id"], gate["id"], "{approval}");
        assert_eq!(approval["approval"]["approved"], true, "{approval}");
        assert_eq!(approval["decidedAgain"]["decision"], "hold", "{approval}");
    }
    assert_eq!(
        not_covered["notCovered"]["shown"], gate["reasons"],
        "{not_covered}"
    );
    let not_shown = not_covered["notCovered"]["notShown"].as_array().unwrap();
    assert_eq!(not_shown.len(), 1, "{not_covered}");
    assert!(
        not_shown[0].as_str().unwrap().contains("tainted"),
        "{not_covered}"
    );
    assert!(covered.get("notCovered").is_none(), "{covered}");
    let ran = events(&log, "exec")
        .into_iter()
        .filter(|exec| exec["id"] == gate["id"])
        .collect::<Vec<_>>();
    assert_eq!(ran.len(), 1, "{log:?}");
    assert_eq!(ran[0]["outcome"]["status"], "executed", "{log:?}");
}

#[test]
fn a_retry_held_for_more_reasons_than_its_yes_is_asked_again_over_stdio() {
    let scratch = Scratch::new();
    let policy = scratch.write("policy.json", TAINTABLE_POLICY);
    let mut a = door(&scratch, "a", "crew", &policy, &[]);
    let audit = a.audit.clone();
    a_yes_for_fewer_reasons_is_asked_again(
        &mut |id, params| a.proxy.request(id, "tools/call", params),
        &|| crate::mcp::server_received(&scratch),
        &audit,
    );
    audited_refusals(&scratch, a, &["already used"]);
}

#[test]
fn a_retry_held_for_more_reasons_than_its_yes_is_asked_again_over_http() {
    let scratch = Scratch::new();
    let policy = scratch.write("policy.json", TAINTABLE_POLICY);
    let audit = scratch.path("audit.jsonl");
    let log = scratch.path("server-received.jsonl");
    let mut server = vec![
        OsString::from("env"),
        format!("FAKE_MCP_LOG={}", log.display()).into(),
    ];
    server.extend(fake_server());
    let args = [
        "--policy",
        policy.to_str().unwrap(),
        "--audit",
        audit.to_str().unwrap(),
        "--agent",
        "crew",
    ];
    let listener = Listener::start(&scratch, &args, &server);
    a_yes_for_fewer_reasons_is_asked_again(
        &mut |id, params| call_over_http(&listener, id, params),
        &|| crate::mcp::server_received(&scratch),
        &audit,
    );
    verify(&audit, None);
}

/// A 2026-07-28 `tools/call` (id, params) POSTed to `listener` as an HTTP client sends it; the
/// answer.
fn call_over_http(listener: &Listener, id: i64, params: Value) -> Value {
    let name = params["name"].as_str().unwrap().to_owned();
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", name.as_str()),
    ];
    let (status, body) = listener.post(&message, &headers);
    assert_eq!(status, 200, "{body}");
    crate::mcp_http::messages(&body)
        .pop()
        .unwrap_or_else(|| panic!("no answer: {body}"))
}

/// `sc-mcp --listen` without `--crew` keeps its sessions' states in its memory, and spends
/// `requestState`s there. Two listeners with the same `--audit-key` (so the key that seals
/// states), policy, server and agent each ran the call of one yes, and so did a listener started
/// again: the state named the store by its description, the same in every process. It now names
/// the listener's process: a second listener and a restarted one refuse it ("spent elsewhere",
/// audited), and the server sees the call once.
#[test]
fn without_a_crew_a_listeners_state_is_taken_only_by_that_listener_and_not_after_a_restart() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let key = key_file(&scratch);
    let log = scratch.path("server-received.jsonl");
    let mut server = vec![
        OsString::from("env"),
        format!("FAKE_MCP_LOG={}", log.display()).into(),
    ];
    server.extend(fake_server());
    let start = |name: &str| {
        let audit = scratch.path(&format!("audit-{name}.jsonl"));
        let args = [
            "--policy",
            policy.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
            "--audit-key",
            key.to_str().unwrap(),
            "--agent",
            "crew",
        ];
        (Listener::start(&scratch, &args, &server), audit)
    };
    let (one, audit_one) = start("one");
    let (two, audit_two) = start("two");
    // Held on one, the yes runs it there once; a replay there is refused.
    let state = request_state_of(&call_over_http(&one, 1, echo_params(None)));
    let ran = call_over_http(&one, 2, echo_params(Some((&state, true))));
    assert_eq!(ran["result"]["resultType"], "complete", "{ran}");
    assert!(result_text(&ran).contains("750"), "{ran}");
    refused_with(
        &call_over_http(&one, 3, echo_params(Some((&state, true)))),
        "already used",
    );
    // Another listener with the same key, policy, server and agent refuses it, spent or not.
    refused_with(
        &call_over_http(&two, 1, echo_params(Some((&state, true)))),
        "spent elsewhere",
    );
    let unspent = request_state_of(&call_over_http(&one, 4, echo_params(None)));
    refused_with(
        &call_over_http(&two, 2, echo_params(Some((&unspent, true)))),
        "spent elsewhere",
    );
    // One, started again, has forgotten what it spent: it refuses its old states too.
    drop(one);
    let (again, audit_again) = start("one-again");
    refused_with(
        &call_over_http(&again, 1, echo_params(Some((&state, true)))),
        "spent elsewhere",
    );
    refused_with(
        &call_over_http(&again, 2, echo_params(Some((&unspent, true)))),
        "spent elsewhere",
    );
    drop((two, again));
    let received = crate::mcp::server_received(&scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
    audited_denials(&audit_one, &key, &["already used"]);
    let elsewhere = ["spent elsewhere", "spent elsewhere"];
    audited_denials(&audit_two, &key, &elsewhere);
    audited_denials(&audit_again, &key, &elsewhere);
}

/// A retry held for more reasons than its yes, that did not declare elicitation (so cannot be
/// asked again), is declined: not run, and said so.
#[test]
fn a_retry_held_for_more_reasons_that_cannot_be_asked_again_is_declined() {
    let scratch = Scratch::new();
    let policy = scratch.write("policy.json", TAINTABLE_POLICY);
    let mut a = door(&scratch, "a", "crew", &policy, &[]);
    let state = request_state_of(&a.proxy.request(1, "tools/call", echo_params(None)));
    a.proxy.request(
        2,
        "tools/call",
        json!({"name": "garbage", "arguments": {"url": "https://evil.example/page"}, "_meta": modern_meta(true)}),
    );
    let mut params = echo_params(Some((&state, true)));
    params["_meta"] = modern_meta(false);
    let declined = a.proxy.request(3, "tools/call", params);
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert!(
        result_text(&declined).contains("could not be asked again"),
        "{declined}"
    );
    audited_refusals(&scratch, a, &[]);
    let received = crate::mcp::server_received(&scratch);
    assert!(!received.contains(r#""amount":750"#), "{received}");
}

/// A `requestState` is bound to the sc-mcp that gave it: the server it is in front of (its
/// command line, or its `--upstream` URL), `--sandbox`, and the ways it asks the person. One
/// given by an sc-mcp with the same key, policy and agent but another of these is refused and
/// audited, and the call never runs.
#[test]
fn a_state_from_an_sc_mcp_before_another_server_sandbox_or_way_of_asking_is_refused() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let mut a = door(&scratch, "a", "crew", &policy, &[]);
    let state = request_state_of(&held_call(&mut a.proxy, 1));
    // The same server started another way is another server.
    let audit = scratch.path("audit-b.jsonl");
    let key = key_file(&scratch);
    let mut server = fake_server();
    server.insert(1, "-B".into());
    let mut b = Door {
        proxy: Proxy::spawn(
            &scratch,
            &[
                "--policy",
                policy.to_str().unwrap(),
                "--audit",
                audit.to_str().unwrap(),
                "--audit-key",
                key.to_str().unwrap(),
                "--agent",
                "crew",
            ],
            &server,
        ),
        audit,
    };
    refused_with(&retry(&mut b.proxy, 1, &state, true), "another MCP server");
    // With --sandbox (the server confined, or not started where the sandbox cannot be made).
    let mut c = door(&scratch, "c", "crew", &policy, &["--sandbox"]);
    refused_with(
        &retry(&mut c.proxy, 1, &state, true),
        "another --sandbox setting",
    );
    // Asking the person another way: not through the client.
    let mut d = door(&scratch, "d", "crew", &policy, &["--no-elicitation"]);
    refused_with(
        &retry(&mut d.proxy, 1, &state, true),
        "asks the person another way",
    );
    audited_refusals(&scratch, b, &["another MCP server"]);
    audited_refusals(&scratch, c, &["another --sandbox setting"]);
    audited_refusals(&scratch, d, &["asks the person another way"]);
    // Still unspent, the state is taken by the sc-mcp that gave it.
    let answer = retry(&mut a.proxy, 2, &state, true);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    audited_refusals(&scratch, a, &[]);
    let received = crate::mcp::server_received(&scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
}

fn modern_only_server(behaviour: &str) -> Vec<OsString> {
    let mut server = fake_server();
    server.push(format!("--modern-only{behaviour}").into());
    server
}

/// A legacy client through sc-mcp to a server that speaks 2026-07-28 only, by the scripted
/// client: sc-mcp opens with `server/discover`, so the server is never sent `initialize`; the
/// client's `initialize` is answered from it in the revision it asked for; the server gets the
/// protocol keys on each request and no `notifications/initialized`;
/// results lose `resultType`; and what cannot be carried fails closed: the server's own
/// `input_required`, a server that dies at `server/discover`, or one whose `server/discover`
/// names no revision sc-mcp speaks.
#[test]
fn a_legacy_client_through_sc_mcp_to_a_strict_2026_07_28_server_and_its_failures() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let policy = policy.to_str().unwrap();
    let args = ["--policy", policy, "--agent", "crew"];
    let mut proxy = Proxy::spawn(&scratch, &args, &modern_only_server(""));
    let init = proxy.initialize();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(
        init["result"]["serverInfo"]["name"], "fake-modern",
        "{init}"
    );
    assert_eq!(
        init["result"]["capabilities"],
        json!({"tools": {}}),
        "{init}"
    );
    let list = proxy.request(1, "tools/list", json!({}));
    assert!(list["result"]["tools"].is_array(), "{list}");
    assert!(list["result"].get("resultType").is_none(), "{list}");
    assert!(!list.to_string().contains("write_file"), "{list}");
    let echo = proxy.call(2, "echo", json!({"memo": "through"}));
    assert!(result_text(&echo).contains("through"), "{echo}");
    assert!(echo["result"].get("resultType").is_none(), "{echo}");
    // 2026-07-28 has no ping: sc-mcp answers it.
    let ping = proxy.request(5, "ping", json!({}));
    assert_eq!(ping["result"], json!({}), "{ping}");
    // Denied, as for any server: never sent.
    let denied = proxy.call(3, "write_file", json!({"path": "x"}));
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    // The server's own question back cannot be carried yet: the call fails, audited.
    let asked = proxy.call(4, "ask", json!({}));
    assert_eq!(asked["error"]["code"], -32603, "{asked}");
    assert!(
        asked["error"]["message"]
            .as_str()
            .unwrap()
            .contains("input_required"),
        "{asked}"
    );
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        done.stderr
            .contains("speaks 2026-07-28 (its server/discover says so)"),
        "{}",
        done.stderr
    );
    let received = crate::mcp::server_received(&scratch);
    let lines: Vec<Value> = received
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let methods: Vec<&str> = lines
        .iter()
        .filter_map(|line| line["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        ["server/discover", "tools/list", "tools/call", "tools/call"],
        "{received}"
    );
    for line in &lines {
        assert_eq!(
            line["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{line}"
        );
    }
    assert!(!received.contains("write_file"), "{received}");
    let log = read_events(&scratch.audit_path());
    let failed = events(&log, "exec").into_iter().any(|event| {
        event["tool"] == "ask"
            && event["outcome"]["status"] == "failed"
            && event["outcome"]["reason"]
                .as_str()
                .is_some_and(|reason| reason.contains("input_required"))
    });
    assert!(failed, "{log:?}");
    verify(&scratch.audit_path(), None);

    // A server that dies at server/discover: the initialize gets an error, and sc-mcp exits 1.
    let scratch = Scratch::new();
    let mut proxy = Proxy::spawn(&scratch, &args, &modern_only_server("=die-at-discover"));
    let init = proxy.initialize();
    assert_eq!(init["error"]["code"], -32603, "{init}");
    assert!(
        init["error"]["message"]
            .as_str()
            .unwrap()
            .contains("server/discover"),
        "{init}"
    );
    let done = proxy.finish();
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    // One whose server/discover names only a legacy revision: an error, never a made-up answer.
    let scratch = Scratch::new();
    let mut proxy = Proxy::spawn(&scratch, &args, &modern_only_server("=discover-legacy"));
    let init = proxy.initialize();
    assert!(init["error"]["message"]
        .as_str()
        .unwrap()
        .contains("names no revision sc-mcp speaks"));
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
}
