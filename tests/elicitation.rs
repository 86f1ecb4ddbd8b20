//! sc-mcp putting held calls to the person through the client: MCP elicitation.
//!
//! Most tests are driven by a real client: testdata/mcp/elicit-client.mjs, built on the official
//! TypeScript SDK (`@modelcontextprotocol/sdk`, pinned in testdata/mcp/package-lock.json), whose
//! elicitation handler answers as the test says. It spawns sc-mcp in front of the published
//! filesystem server, behind a `tee` that logs every line the server receives, so a test proves
//! what never reached it. The protocol's corners (ids, cancellations, malformed answers, a
//! server that impersonates sc-mcp) are driven by the scripted client of tests/mcp.rs.
//!
//! The client runs in a new session with no controlling terminal, so a hold that is not put to
//! the person through the client falls through to /dev/tty and is declined there.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp::{
    events, fake_proxy, filesystem_server, is_error, lines_with_id, methods, report_json,
    result_text, served_folder, server_received,
};
use crate::terminal::{Terminal, Tty};
use crate::util::{bin_path, parse_whole_lines, testdata, Scratch};

/// How long one run of the test client may take, start to end.
const CLIENT_WAIT: Duration = Duration::from_secs(120);

/// What the SDK client saw (see testdata/mcp/elicit-client.mjs), and what reached the server.
pub(crate) struct ClientRun {
    pub(crate) report: Value,
    /// Every message the published server received.
    pub(crate) server_received: Vec<Value>,
    pub(crate) stderr: String,
    pub(crate) root: PathBuf,
}

impl ClientRun {
    /// The result of the plan's call number `index`.
    pub(crate) fn result(&self, index: usize) -> &Value {
        &self.report["results"][index]
    }

    /// The methods of the requests and notifications the client received.
    pub(crate) fn incoming(&self) -> Vec<&str> {
        self.report["incoming"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect()
    }

    /// The tools the server was asked to run.
    pub(crate) fn server_ran(&self) -> Vec<String> {
        self.server_received
            .iter()
            .filter(|m| m["method"] == "tools/call")
            .map(|m| m["params"]["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Nothing of sc-mcp's questions, nor of the client's answers to them, reached the server
    /// (only sc-mcp's own opening, `server/discover`, carries an id of its own).
    fn assert_server_never_saw_a_question(&self) {
        for message in &self.server_received {
            if message["id"] == "sc-mcp-elicit-discover" && message["method"] == "server/discover" {
                continue;
            }
            assert!(
                !message.to_string().contains("sc-mcp-elicit-"),
                "the server received {message}"
            );
        }
    }
}

/// The plan's calls: read a file (which taints the agent), then create a directory (sensitive,
/// so held), at `root`.
fn taint_then_create(root: &Path) -> Value {
    json!([
        {"name": "read_text_file", "arguments": {"path": root.join("notes.txt")}},
        {"name": "create_directory", "arguments": {"path": root.join("made-by-the-agent")}},
    ])
}

/// Runs the SDK client with `plan` (its `calls` default to [`taint_then_create`]) against sc-mcp
/// with `sc_mcp_args`, in front of the published filesystem server.
pub(crate) fn run_client(scratch: &Scratch, mut plan: Value, sc_mcp_args: &[&str]) -> ClientRun {
    let root = served_folder(scratch);
    if plan.get("calls").is_none() {
        plan["calls"] = taint_then_create(&root);
    }
    let server_log = scratch.path("server-received.jsonl");
    let policy = testdata("mcp/filesystem-policy.json");
    let mut cmd = Command::new("node");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(scratch.dir.path())
        .arg(testdata("mcp/elicit-client.mjs"))
        .arg(plan.to_string())
        .arg(bin_path("sc-mcp"))
        .arg("--audit")
        .arg(scratch.audit_path())
        .args(["--policy", policy.to_str().unwrap(), "--agent", "fs"])
        .args(sc_mcp_args)
        .arg("--")
        .args([
            OsString::from("bash"),
            "-c".into(),
            r#"tee -a "$1" | exec node "$2" "$3""#.into(),
            "filesystem-server".into(),
            server_log.clone().into_os_string(),
            filesystem_server().into_os_string(),
            root.clone().into_os_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let _terminal = Terminal::attach(&mut cmd, Tty::None);
    let mut child = cmd.spawn().expect("node runs the test client");
    let mut stdout_pipe = child.stdout.take().unwrap();
    let stdout = thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout_pipe.read_to_string(&mut text);
        text
    });
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr_pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let deadline = Instant::now() + CLIENT_WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the test client did not end within {CLIENT_WAIT:?}; stderr: {}",
                stderr.join().unwrap()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    let stdout = stdout.join().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(
        status.success(),
        "the test client failed: {status:?}\n{stderr}"
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!("the test client's report is not JSON ({e}): {stdout}\nstderr: {stderr}")
    });
    // The server may still be reading its last lines when the client has ended: whole lines only.
    let server_received = parse_whole_lines(&std::fs::read(&server_log).unwrap_or_default());
    ClientRun {
        report,
        server_received,
        stderr,
        root,
    }
}

/// The text of a tool result the SDK client returned.
pub(crate) fn tool_text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
}

/// Whether a tool result the SDK client returned is an error.
pub(crate) fn tool_failed(result: &Value) -> bool {
    result["isError"] == true
}

pub(crate) fn approvals(scratch: &Scratch) -> Vec<Value> {
    events(&scratch.audit_events(), "approve")
        .into_iter()
        .cloned()
        .collect()
}

/// The `exec` events' (tool, status), in order.
pub(crate) fn outcomes(scratch: &Scratch) -> Vec<(String, String)> {
    events(&scratch.audit_events(), "exec")
        .iter()
        .map(|e| {
            (
                e["tool"].as_str().unwrap().to_owned(),
                e["outcome"]["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_person_approves_through_the_client_and_the_published_server_runs_the_call() {
    let scratch = Scratch::new();
    let root = scratch.path("served");
    // While the person is asked, the client lists the folder: the proxy keeps relaying.
    let run = run_client(
        &scratch,
        json!({
            "declare": true,
            "answer": "accept-true",
            "whileAsked": {"name": "list_directory", "arguments": {"path": root}},
        }),
        &[],
    );
    let made = run.root.join("made-by-the-agent");
    assert!(
        made.is_dir(),
        "the approved call did not run: {}",
        run.report
    );
    let created = run.result(1);
    assert!(!tool_failed(created), "{created}");
    assert!(
        tool_text(created).contains("Successfully created"),
        "{created}"
    );

    // One question, with the terminal's prompt and the one-question form.
    assert_eq!(run.incoming(), ["elicitation/create"], "{}", run.report);
    let asked = &run.report["elicitations"][0];
    let message = asked["message"].as_str().unwrap();
    for expected in [
        "a call is held for your approval",
        "agent:        fs",
        "tool:         create_directory",
        &format!(r#"args:         {{"path":{}}}"#, json!(made)),
        "source:       agent",
        "fs is tainted",
        "read_text_file",
        "Run this call?",
    ] {
        assert!(message.contains(expected), "{expected:?} not in {message}");
    }
    assert!(!message.contains("Type yes"), "{message}");
    assert_eq!(
        asked["requestedSchema"],
        json!({"type":"object","properties":{
            "approve":{"type":"boolean","title":"Run this call?"},
            "scope":{"type":"string","title":"If yes, for how long?",
                     "description":"once: this call only; call: also this agent's later calls of this tool with exactly these arguments.","enum":["once","call"],"default":"once"}
        },"required":["approve"]})
    );
    let listed = &run.report["whileAsked"][0];
    assert!(!tool_failed(listed), "{listed}");
    assert!(tool_text(listed).contains("[FILE] notes.txt"), "{listed}");

    // The server ran the three calls, and never saw the question or its answer.
    assert_eq!(
        run.server_ran(),
        ["read_text_file", "list_directory", "create_directory"]
    );
    run.assert_server_never_saw_a_question();

    let approvals = approvals(&scratch);
    assert_eq!(approvals.len(), 1, "{approvals:#?}");
    assert_eq!(
        approvals[0]["approval"],
        json!({"approved": true, "by": "elicitation", "answer": "accept",
               "reason": "approved: the person answered yes to \"Run this call?\" in the MCP client",
               "scope": "once"})
    );
    assert_eq!(
        outcomes(&scratch),
        [
            ("read_text_file".into(), "executed".into()),
            ("list_directory".into(), "executed".into()),
            ("create_directory".into(), "executed".into()),
        ]
    );
    let report = report_json(&scratch);
    assert_eq!(report["holds"]["approved"], 1, "{report}");
    assert!(
        run.stderr
            .contains("asking the person through the MCP client (sc-mcp-elicit-1-"),
        "{}",
        run.stderr
    );
}

/// The client answers `answer`: the held call is refused with `isError: true`, the server never
/// sees it, and the approval says why.
fn declined_by(answer: &str, sc_mcp_args: &[&str], reason: &str) -> (Scratch, ClientRun) {
    let scratch = Scratch::new();
    let run = run_client(
        &scratch,
        json!({"declare": true, "answer": answer}),
        sc_mcp_args,
    );
    assert_eq!(
        run.report["elicitations"].as_array().unwrap().len(),
        1,
        "{answer}: {}",
        run.report
    );
    let refused = run.result(1);
    assert!(tool_failed(refused), "{answer}: {refused}");
    let text = tool_text(refused);
    assert!(
        text.contains("held this call to create_directory for a person") && text.contains(reason),
        "{answer}: {text}"
    );
    assert!(
        !run.root.join("made-by-the-agent").exists(),
        "{answer}: the declined call ran"
    );
    assert_eq!(run.server_ran(), ["read_text_file"], "{answer}");
    run.assert_server_never_saw_a_question();
    let approvals = approvals(&scratch);
    assert_eq!(approvals.len(), 1, "{answer}: {approvals:#?}");
    let approval = &approvals[0]["approval"];
    assert_eq!(approval["approved"], false, "{answer}: {approval}");
    assert_eq!(approval["by"], "elicitation", "{answer}: {approval}");
    assert!(
        approval["reason"].as_str().unwrap().contains(reason),
        "{answer}: {approval}"
    );
    assert_eq!(
        outcomes(&scratch),
        [
            ("read_text_file".into(), "executed".into()),
            ("create_directory".into(), "skipped".into()),
        ],
        "{answer}"
    );
    let report = report_json(&scratch);
    assert_eq!(report["holds"]["declined"], 1, "{answer}: {report}");
    (scratch, run)
}

#[test]
fn accept_with_approve_false_declines() {
    declined_by("accept-false", &[], "the person answered no");
}

#[test]
fn accept_with_approve_not_a_boolean_declines() {
    declined_by(
        "accept-string",
        &[],
        "`approve` in the MCP client's answer is a string, not true",
    );
}

#[test]
fn accept_without_content_declines() {
    declined_by(
        "accept-no-content",
        &[],
        "the MCP client accepted without an `approve` answer",
    );
}

#[test]
fn decline_declines() {
    declined_by("decline", &[], "the person declined in the MCP client");
}

#[test]
fn cancel_declines() {
    declined_by("cancel", &[], "the person dismissed the question");
}

#[test]
fn an_error_response_declines() {
    declined_by(
        "error",
        &[],
        "the MCP client answered the question with an error: MCP error -32000: the person's dialog could not be shown",
    );
}

#[test]
fn a_malformed_response_declines_even_when_it_says_approve_true() {
    declined_by(
        "both",
        &[],
        "the MCP client's answer is malformed (it has both `result` and `error`)",
    );
}

#[test]
fn no_answer_within_the_timeout_declines_and_the_question_is_withdrawn() {
    let (_scratch, run) = declined_by(
        "silent",
        &["--timeout", "2"],
        "declined: no answer within 2 seconds",
    );
    assert_eq!(
        run.incoming(),
        ["elicitation/create", "notifications/cancelled"],
        "{}",
        run.report
    );
    assert!(
        run.report["withdrawn"][0]["requestId"]
            .as_str()
            .is_some_and(|id| id.starts_with("sc-mcp-elicit-1-")),
        "{}",
        run.report
    );
}

/// No question reaches the client; the hold falls through to `then`.
fn not_asked_through_the_client(declare: bool, sc_mcp_args: &[&str]) -> (Scratch, ClientRun) {
    let scratch = Scratch::new();
    let run = run_client(
        &scratch,
        json!({"declare": declare, "answer": "accept-true"}),
        sc_mcp_args,
    );
    assert!(run.incoming().is_empty(), "{}", run.report);
    assert_eq!(run.report["elicitations"], json!([]), "{}", run.report);
    assert!(
        !run.stderr.contains("through the MCP client"),
        "{}",
        run.stderr
    );
    (scratch, run)
}

/// The hold was declined at the next surface: no terminal to ask.
fn declined_for_want_of_a_terminal(scratch: &Scratch, run: &ClientRun) {
    let refused = run.result(1);
    assert!(tool_failed(refused), "{refused}");
    assert!(tool_text(refused).contains("no terminal"), "{refused}");
    assert!(!run.root.join("made-by-the-agent").exists());
    assert_eq!(run.server_ran(), ["read_text_file"]);
    let approvals = approvals(scratch);
    assert_eq!(approvals[0]["approval"]["by"], "none", "{approvals:#?}");
    assert_eq!(approvals[0]["approval"]["approved"], false);
}

#[test]
fn a_client_that_did_not_declare_elicitation_is_never_asked_and_the_terminal_is_next() {
    let (scratch, run) = not_asked_through_the_client(false, &[]);
    declined_for_want_of_a_terminal(&scratch, &run);
}

#[test]
fn no_elicitation_leaves_the_person_to_the_terminal() {
    let (scratch, run) = not_asked_through_the_client(true, &["--no-elicitation"]);
    declined_for_want_of_a_terminal(&scratch, &run);
}

#[test]
fn an_answers_file_comes_before_elicitation() {
    let scratch = Scratch::new();
    let answers = scratch.write("answers.txt", "yes\n");
    let run = run_client(
        &scratch,
        json!({"declare": true, "answer": "decline"}),
        &["--answers", answers.to_str().unwrap()],
    );
    assert!(run.incoming().is_empty(), "{}", run.report);
    assert!(!tool_failed(run.result(1)), "{}", run.report);
    assert!(run.root.join("made-by-the-agent").is_dir());
    assert_eq!(approvals(&scratch)[0]["approval"]["by"], "answers");
}

#[test]
fn no_prompt_declines_without_asking_the_client() {
    let (scratch, run) = not_asked_through_the_client(true, &["--no-prompt"]);
    let refused = run.result(1);
    assert!(tool_failed(refused), "{refused}");
    assert!(tool_text(refused).contains("--no-prompt"), "{refused}");
    assert!(!run.root.join("made-by-the-agent").exists());
    assert_eq!(approvals(&scratch)[0]["approval"]["by"], "none");
}

// ---------------------------------------------------------------------------------------------
// The protocol's corners, with the scripted client and the fake server

const ELICITATION: &str = "elicitation/create";

/// A held call (over the fake policy's $100 limit) with this id.
pub(crate) fn held_call(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"amount": 750, "to": "acme"}}})
}

pub(crate) fn question(proxy: &mut crate::mcp::Proxy, number: u32) -> Value {
    let prefix = format!("sc-mcp-elicit-{number}-");
    proxy.message_where(&format!("question {prefix}…"), |m| {
        m["method"] == ELICITATION && m["id"].as_str().is_some_and(|id| id.starts_with(&prefix))
    })
}

pub(crate) fn answer_question(proxy: &mut crate::mcp::Proxy, number: u32, result: Value) {
    let id = proxy.question_id(number);
    proxy.send_value(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
}

pub(crate) const YES: fn() -> Value = || json!({"action": "accept", "content": {"approve": true}});

#[test]
fn sc_mcp_question_ids_are_never_confused_with_the_clients_own() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize_with(json!({"elicitation": {}}));
    proxy.send_value(&held_call(json!(1)));
    let asked = question(&mut proxy, 1);
    assert!(
        asked["params"]["message"]
            .as_str()
            .unwrap()
            .contains("amount 750"),
        "{asked}"
    );
    // The client's own request with the same id string goes to the server and is answered by
    // it, while the question waits.
    proxy.send(r#"{"jsonrpc":"2.0","id":"sc-mcp-elicit-1","method":"tools/list"}"#);
    let list = proxy.message_where("the server's tools/list answer", |m| {
        m["id"] == "sc-mcp-elicit-1" && m.get("result").is_some()
    });
    assert!(list["result"]["tools"].is_array(), "{list}");
    // The held call's id is in use until the person answers.
    proxy.send_value(&held_call(json!(1)));
    let reused = proxy.answer(&json!(1));
    assert_eq!(reused["error"]["code"], -32600, "{reused}");
    assert!(
        reused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("waiting for the person"),
        "{reused}"
    );
    answer_question(&mut proxy, 1, YES());
    let ran = proxy.answer(&json!(1));
    assert!(!is_error(&ran), "{ran}");
    assert!(result_text(&ran).contains("750"), "{ran}");
    // A second answer to the same question is dropped, not forwarded.
    answer_question(&mut proxy, 1, YES());
    let after = proxy.call(2, "echo", json!({"after": true}));
    assert!(!is_error(&after), "{after}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        done.stderr.contains("a question sc-mcp is not waiting on"),
        "{}",
        done.stderr
    );
    let received = crate::util::parse_lines(&server_received(&scratch));
    assert_eq!(
        methods(&received),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tools/call"
        ],
        "{received:#?}"
    );
    assert_eq!(received[3]["id"], "sc-mcp-elicit-1");
    // The held call, as the client sent it, once.
    assert_eq!(received[4]["id"], 1);
    assert_eq!(received[4]["params"]["arguments"]["amount"], 750);
    // One answer to id 1 besides the refusal of its reuse: the server's result.
    assert_eq!(lines_with_id(&done.received, &json!(1)).len(), 2);
    assert_eq!(
        lines_with_id(&done.received, &json!("sc-mcp-elicit-1")).len(),
        1,
        "the tools/list answer (the question's id has random bytes): {:#?}",
        done.received
    );
}

#[test]
fn a_server_that_uses_a_question_id_never_reaches_the_client_with_it() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize_with(json!({"elicitation": {}}));
    proxy.send_value(&held_call(json!(1)));
    question(&mut proxy, 1);
    // The server sends an elicitation/create with the id of sc-mcp's question, and a
    // cancellation naming it: an answer to either could be taken for the person's.
    let impersonated = proxy.call(2, "impersonate", json!({}));
    assert!(!is_error(&impersonated), "{impersonated}");
    answer_question(&mut proxy, 1, YES());
    let ran = proxy.answer(&json!(1));
    assert!(!is_error(&ran), "{ran}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let messages: Vec<Value> = done
        .received
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        messages
            .iter()
            .filter(|m| m["method"] == ELICITATION)
            .count(),
        1,
        "{messages:#?}"
    );
    assert!(
        !messages
            .iter()
            .any(|m| m["method"] == "notifications/cancelled"),
        "{messages:#?}"
    );
    assert_eq!(
        done.stderr
            .matches("keeps for its own questions to the client")
            .count(),
        2,
        "{}",
        done.stderr
    );
}

#[test]
fn the_client_cancelling_a_held_call_withdraws_the_question() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize_with(json!({"elicitation": {"form": {}}}));
    proxy.send_value(&held_call(json!("call-7")));
    question(&mut proxy, 1);
    proxy.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-7","reason":"the user moved on"}}"#,
    );
    let withdrawn = proxy.message_where("the withdrawn question", |m| {
        m["method"] == "notifications/cancelled"
    });
    assert_eq!(
        withdrawn["params"]["requestId"],
        proxy.question_id(1).as_str()
    );
    // A late answer changes nothing.
    answer_question(&mut proxy, 1, YES());
    let after = proxy.call(2, "echo", json!({"after": true}));
    assert!(!is_error(&after), "{after}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        lines_with_id(&done.received, &json!("call-7")).is_empty(),
        "a cancelled request is not answered: {:#?}",
        done.received
    );
    let received = server_received(&scratch);
    assert!(
        !received.contains("750") && !received.contains("call-7"),
        "{received}"
    );
    let approvals = approvals(&scratch);
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["approval"]["approved"], false);
    assert!(approvals[0]["approval"]["reason"]
        .as_str()
        .unwrap()
        .contains("the client cancelled the call before the person answered"));
    assert_eq!(
        outcomes(&scratch),
        [
            ("echo".into(), "skipped".into()),
            ("echo".into(), "executed".into())
        ]
    );
}

#[test]
fn answers_no_strict_reader_accepts_decline() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize_with(json!({"elicitation": {}}));
    proxy.send_value(&held_call(json!(1)));
    question(&mut proxy, 1);
    // A duplicate key: one reader sees false, another true.
    let first_id = proxy.question_id(1);
    proxy.send(&format!(r#"{{"jsonrpc":"2.0","id":"{first_id}","result":{{"action":"accept","content":{{"approve":false,"approve":true}}}}}}"#));
    let first = proxy.answer(&json!(1));
    assert!(is_error(&first), "{first}");
    assert!(result_text(&first).contains("malformed"), "{first}");
    // An answer inside a batch.
    proxy.send_value(&held_call(json!(2)));
    question(&mut proxy, 2);
    let second_id = proxy.question_id(2);
    proxy.send(&format!(r#"[{{"jsonrpc":"2.0","id":"{second_id}","result":{{"action":"accept","content":{{"approve":true}}}}}}]"#));
    let second = proxy.answer(&json!(2));
    assert!(is_error(&second), "{second}");
    assert!(result_text(&second).contains("batches"), "{second}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(!server_received(&scratch).contains("750"));
    // sc-mcp answers no answer of the client's with an error of its own.
    for question in [first_id, second_id] {
        let about: Vec<Value> = lines_with_id(&done.received, &json!(question));
        assert_eq!(about.len(), 1, "{about:#?}");
        assert_eq!(about[0]["method"], ELICITATION);
    }
    assert!(done.received.iter().all(|line| !line.starts_with('[')));
}

#[test]
fn calls_still_waiting_for_the_person_when_the_client_leaves_are_declined() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize_with(json!({"elicitation": {}}));
    proxy.send_value(&held_call(json!(1)));
    question(&mut proxy, 1);
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let refused = lines_with_id(&done.received, &json!(1));
    assert_eq!(refused.len(), 1, "{:#?}", done.received);
    assert!(is_error(&refused[0]), "{}", refused[0]);
    assert!(!server_received(&scratch).contains("750"));
    let approvals = approvals(&scratch);
    assert_eq!(approvals.len(), 1);
    assert_eq!(
        approvals[0]["approval"]["reason"],
        "declined: the client closed its input before the person answered"
    );
    assert_eq!(outcomes(&scratch), [("echo".into(), "skipped".into())]);
}

#[test]
fn past_sixteen_waiting_calls_a_hold_is_declined_unasked() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize_with(json!({"elicitation": {}}));
    for id in 1..=17 {
        proxy.send_value(&held_call(json!(id)));
    }
    let seventeenth = proxy.answer(&json!(17));
    assert!(is_error(&seventeenth), "{seventeenth}");
    assert!(
        result_text(&seventeenth).contains("16 held calls are already waiting"),
        "{seventeenth}"
    );
    // The others were asked, and one answered yes still runs.
    question(&mut proxy, 16);
    answer_question(&mut proxy, 3, YES());
    let third = proxy.answer(&json!(3));
    assert!(!is_error(&third), "{third}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let questions = done
        .received
        .iter()
        .filter(|line| line.contains(ELICITATION))
        .count();
    assert_eq!(questions, 16);
    let approvals = approvals(&scratch);
    assert_eq!(approvals.len(), 17);
    let by: Vec<(&str, bool)> = approvals
        .iter()
        .map(|a| {
            (
                a["approval"]["by"].as_str().unwrap(),
                a["approval"]["approved"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(by[0], ("none", false), "the 17th, first settled: {by:?}");
    assert_eq!(by[1], ("elicitation", true), "{by:?}");
    assert!(
        by[2..].iter().all(|&a| a == ("elicitation", false)),
        "{by:?}"
    );
}

#[test]
fn a_url_only_client_cannot_show_the_form_and_is_not_asked() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &[]);
    proxy.initialize_with(json!({"elicitation": {"url": {}}}));
    let refused = proxy.call(1, "echo", json!({"amount": 750}));
    assert!(is_error(&refused), "{refused}");
    assert!(result_text(&refused).contains("no terminal"), "{refused}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(done.received.iter().all(|line| !line.contains(ELICITATION)));
}

/// Issue 25: the form asks how far a yes reaches (`scope`, one of those the hold offers, `once`
/// by default). The SDK client answers with a scope: `once` approves once, and the approval says
/// so; a scope the form did not offer declines, and the call never reaches the server.
#[test]
fn a_yes_carries_its_scope_and_a_scope_not_offered_declines() {
    let scratch = Scratch::new();
    let run = run_client(
        &scratch,
        json!({"declare": true, "answer": "accept-scope", "scope": "once"}),
        &[],
    );
    assert!(
        run.root.join("made-by-the-agent").is_dir(),
        "the approved call did not run: {}",
        run.report
    );
    let asked = &run.report["elicitations"][0];
    assert_eq!(
        asked["requestedSchema"]["properties"]["scope"]["enum"],
        json!(["once", "call"]),
        "{asked}"
    );
    assert_eq!(
        asked["requestedSchema"]["properties"]["scope"]["default"],
        "once"
    );
    let approved = approvals(&scratch);
    assert_eq!(approved.len(), 1, "{approved:#?}");
    assert_eq!(approved[0]["approval"]["approved"], true);
    assert_eq!(approved[0]["approval"]["scope"], "once");

    // `call`: the approval is kept as a grant (in sc-mcp's memory: it has no crew here), named
    // on the approval.
    let scratch = Scratch::new();
    let run = run_client(
        &scratch,
        json!({"declare": true, "answer": "accept-scope", "scope": "call"}),
        &[],
    );
    assert!(
        run.root.join("made-by-the-agent").is_dir(),
        "{}",
        run.report
    );
    let approved = approvals(&scratch);
    assert_eq!(approved[0]["approval"]["by"], "elicitation");
    assert_eq!(
        approved[0]["approval"]["scope"], "call",
        "{:#}",
        approved[0]
    );
    assert!(
        approved[0]["approval"]["grant"].is_string(),
        "{:#}",
        approved[0]
    );

    let scratch = Scratch::new();
    let run = run_client(
        &scratch,
        json!({"declare": true, "answer": "accept-scope", "scope": "forever"}),
        &[],
    );
    let refused = run.result(1);
    assert!(tool_failed(refused), "{refused}");
    assert!(!run.root.join("made-by-the-agent").exists());
    assert_eq!(run.server_ran(), ["read_text_file"]);
    let approvals = approvals(&scratch);
    assert_eq!(approvals.len(), 1, "{approvals:#?}");
    let approval = &approvals[0]["approval"];
    assert_eq!(approval["approved"], false, "{approval}");
    assert_eq!(approval["answer"], "accept", "{approval}");
    assert!(approval.get("scope").is_none(), "{approval}");
    assert!(
        approval["reason"].as_str().unwrap().contains(
            "`scope` in the MCP client's answer is \"forever\", not one of those offered (once, call)"
        ),
        "{approval}"
    );
    assert_eq!(
        outcomes(&scratch),
        [
            ("read_text_file".into(), "executed".into()),
            ("create_directory".into(), "skipped".into()),
        ]
    );
}
