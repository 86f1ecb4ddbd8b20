//! sc-hook as Claude Code runs it: one process per tool call, the hook's JSON on stdin, the
//! answer on stdout, and exit status 2 (never 1) on every error. The inputs are recorded Claude
//! Code PreToolUse inputs in testdata/claude-code/, decided under policies/claude-code.json.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::util::{bare_cmd, testdata, Scratch};

fn claude_code_policy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/claude-code.json")
}

/// A recorded hook input, as JSON text.
fn recorded(name: &str) -> String {
    std::fs::read_to_string(testdata(&format!("claude-code/{name}.json"))).unwrap()
}

/// A recorded input moved to another session.
fn in_session(name: &str, session: &str) -> String {
    let mut input: Value = serde_json::from_str(&recorded(name)).unwrap();
    input["session_id"] = json!(session);
    input.to_string()
}

/// Runs sc-hook on `input` with the Claude Code policy and the scratch audit log.
fn hook(scratch: &Scratch, input: &str) -> Output {
    hook_with(
        scratch,
        &["--policy", claude_code_policy().to_str().unwrap()],
        input,
    )
}

fn hook_with(scratch: &Scratch, args: &[&str], input: &str) -> Output {
    scratch
        .cmd("sc-hook")
        .args(args)
        .write_stdin(input)
        .output()
        .unwrap()
}

/// The permission decision in a successful answer: `None` when the hook made none.
fn decision(out: &Output) -> Option<(String, String)> {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if out.stdout.is_empty() {
        return None;
    }
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let specific = &answer["hookSpecificOutput"];
    assert_eq!(specific["hookEventName"], "PreToolUse", "{answer}");
    Some((
        specific["permissionDecision"].as_str().unwrap().to_owned(),
        specific["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_owned(),
    ))
}

fn decided(scratch: &Scratch, name: &str) -> Option<String> {
    decision(&hook(scratch, &recorded(name))).map(|(decision, _)| decision)
}

/// An error: exit 2, the reason on stderr, nothing on stdout.
fn assert_blocked(out: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.contains(expected), "{expected:?} not in: {stderr}");
    assert!(stderr.contains("blocked"), "{stderr}");
}

#[test]
fn each_recorded_call_gets_the_policys_answer() {
    let scratch = Scratch::new();
    assert_eq!(decided(&scratch, "bash"), None);
    assert_eq!(decided(&scratch, "write"), None);
    assert_eq!(decided(&scratch, "mcp-github-create-issue"), None);
    let (verdict, reason) = decision(&hook(&scratch, &recorded("mcp-payments-send"))).unwrap();
    assert_eq!(verdict, "deny");
    assert!(
        reason.contains("mcp__payments__send_payment is on the policy's deny list"),
        "{reason}"
    );
    assert_eq!(decided(&scratch, "webfetch"), None);
    // The audit log has one gate event per call, in sc-gate's shape.
    let events = scratch.audit_events();
    let seen: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            assert_eq!(e["stage"], "gate");
            (
                e["call"]["tool"].as_str().unwrap(),
                e["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("Bash", "allow"),
            ("Write", "allow"),
            ("mcp__github__create_issue", "allow"),
            ("mcp__payments__send_payment", "deny"),
            ("WebFetch", "allow"),
        ]
    );
    assert_eq!(events[0]["call"]["agent"], "claude-code");
    assert_eq!(events[0]["call"]["source"], "agent");
    assert_eq!(
        events[0]["call"]["args"]["command"],
        "npm test -- --watch=false"
    );
    assert_eq!(
        events[0]["call"]["toolUseId"],
        "toolu_01Hk3vQJ6rX9mZc2bN8sTq4W"
    );
}

#[test]
fn after_a_web_fetch_sensitive_calls_ask_naming_the_page() {
    let scratch = Scratch::new();
    assert_eq!(decided(&scratch, "webfetch"), None);
    let fetch_id = scratch.audit_events()[0]["id"].as_str().unwrap().to_owned();
    for name in ["bash", "write", "mcp-github-create-issue"] {
        let (verdict, reason) = decision(&hook(&scratch, &recorded(name))).unwrap();
        assert_eq!(verdict, "ask", "{name}: {reason}");
        assert!(reason.starts_with("Skeleton Crew: "), "{reason}");
        assert!(reason.contains("tainted"), "{reason}");
        assert!(
            reason.contains("WebFetch")
                && reason.contains(&fetch_id)
                && reason.contains("url=https://blog.example.com/how-to-configure-the-shop"),
            "{reason}"
        );
    }
    // A deny stays a deny.
    assert_eq!(
        decided(&scratch, "mcp-payments-send").as_deref(),
        Some("deny")
    );
    // sc-report reads the hook's log and names the taint.
    let report = scratch.cmd_report_args(&["--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(
        report["decisions"],
        json!({"allow": 1, "hold": 3, "deny": 1}),
        "{report}"
    );
    assert_eq!(
        report["holds"]["unanswered"], 3,
        "Claude Code asks; the answer is not ours"
    );
}

#[test]
fn two_sessions_do_not_share_taint() {
    let scratch = Scratch::new();
    assert_eq!(
        decision(&hook(&scratch, &in_session("webfetch", "session-a"))),
        None
    );
    assert_eq!(
        decision(&hook(&scratch, &in_session("bash", "session-b"))),
        None
    );
    let (verdict, _) = decision(&hook(&scratch, &in_session("bash", "session-a"))).unwrap();
    assert_eq!(verdict, "ask");
    // Each session has its own state in the store beside the audit log.
    assert!(stored_state(&scratch, "session/session-a/gate").is_some());
    let b = stored_state(&scratch, "session/session-b/gate");
    assert!(
        b.as_ref().is_none_or(|b| b.get("crewTaintedBy").is_none()),
        "{b:?}"
    );
}

#[test]
fn a_subagent_is_named_by_its_type() {
    let scratch = Scratch::new();
    let mut input: Value = serde_json::from_str(&recorded("bash")).unwrap();
    input["agent_id"] = json!("agent-7f3a");
    input["agent_type"] = json!("Explore");
    let policy = scratch.write(
        "policy.json",
        r#"{"agents": {"Explore": ["Read", "Grep", "Glob"]}}"#,
    );
    let out = hook_with(
        &scratch,
        &["--policy", policy.to_str().unwrap()],
        &input.to_string(),
    );
    let (verdict, reason) = decision(&out).unwrap();
    assert_eq!(verdict, "deny");
    assert!(
        reason.contains("agent Explore may not use Bash"),
        "{reason}"
    );
    let event = &scratch.audit_events()[0];
    assert_eq!(event["call"]["agent"], "Explore");
    assert_eq!(event["call"]["agentId"], "agent-7f3a");
}

#[test]
fn concurrent_hooks_of_one_session_take_turns_with_the_state() {
    let scratch = Scratch::new();
    let policy = scratch.write(
        "policy.json",
        r#"{"holdAboveAmount": 1000, "holdAboveTotal": 1000000}"#,
    );
    let input = json!({
        "session_id": "busy", "hook_event_name": "PreToolUse",
        "tool_name": "mcp__shop__buy", "tool_input": {"amount": 1}
    })
    .to_string();
    let runs: Vec<std::thread::JoinHandle<Output>> = (0..16)
        .map(|_| {
            let mut cmd = std::process::Command::new(crate::util::bin_path("sc-hook"));
            cmd.env_clear()
                .current_dir(scratch.dir.path())
                .arg("--audit")
                .arg(scratch.audit_path())
                .arg("--policy")
                .arg(&policy);
            let input = input.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut child = cmd
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(input.as_bytes())
                    .unwrap();
                child.wait_with_output().unwrap()
            })
        })
        .collect();
    for run in runs {
        assert_eq!(decision(&run.join().unwrap()), None);
    }
    let state = stored_state(&scratch, "session/busy/gate").unwrap();
    assert_eq!(state["agents"]["claude-code"]["spent"], 16.0, "{state}");
    assert_eq!(scratch.audit_events().len(), 16);
    let verify = scratch.cmd_report_args(&["--verify"]).output().unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn an_unreadable_policy_exits_2() {
    let scratch = Scratch::new();
    let input = recorded("bash");
    let missing = scratch.path("no-such-policy.json");
    assert_blocked(
        &hook_with(&scratch, &["--policy", missing.to_str().unwrap()], &input),
        "no-such-policy.json",
    );
    let folder = scratch.path("served");
    std::fs::create_dir_all(&folder).unwrap();
    assert_blocked(
        &hook_with(&scratch, &["--policy", folder.to_str().unwrap()], &input),
        "policy",
    );
    let typo = scratch.write("typo.json", r#"{"sensitiveTool": ["Bash"]}"#);
    assert_blocked(
        &hook_with(&scratch, &["--policy", typo.to_str().unwrap()], &input),
        "sensitiveTools",
    );
    // A mistyped flag is a usage error: 2 as well, not clap's default for everything.
    assert_blocked_flag(&scratch, &["--polcy", "x"]);
}

fn assert_blocked_flag(scratch: &Scratch, args: &[&str]) {
    let out = hook_with(scratch, args, &recorded("bash"));
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn malformed_input_exits_2() {
    let scratch = Scratch::new();
    let bash: Value = serde_json::from_str(&recorded("bash")).unwrap();
    let with = |key: &str, value: Value| {
        let mut input = bash.clone();
        input[key] = value;
        input.to_string()
    };
    let without = |key: &str| {
        let mut input = bash.clone();
        input.as_object_mut().unwrap().remove(key);
        input.to_string()
    };
    let cases = [
        (String::new(), "empty"),
        ("not json".to_owned(), "not valid JSON"),
        ("[1]".to_owned(), "not a JSON object"),
        (
            recorded("bash").replacen(
                "\"tool_name\":\"Bash\"",
                "\"tool_name\":\"Read\",\"tool_name\":\"Bash\"",
                1,
            ),
            "duplicate key `tool_name`",
        ),
        (without("tool_name"), "no `tool_name`"),
        (with("tool_name", json!(7)), "must be a string"),
        (with("tool_input", json!("rm -rf /")), "must be an object"),
        (without("session_id"), "no `session_id`"),
        (with("session_id", json!("../../etc/cron.d/x")), "not safe"),
        (with("session_id", json!("a/b")), "not safe"),
        (with("session_id", json!("..")), "not safe"),
        (with("hook_event_name", json!("PostToolUse")), "PreToolUse"),
        (with("agent_type", json!(["Explore"])), "must be a string"),
    ];
    for (input, expected) in cases {
        assert_blocked(&hook(&scratch, &input), expected);
    }
    let mut invalid = recorded("bash").into_bytes();
    invalid.insert(10, 0xff);
    let out = scratch
        .cmd("sc-hook")
        .args(["--policy", claude_code_policy().to_str().unwrap()])
        .write_stdin(invalid)
        .output()
        .unwrap();
    assert_blocked(&out, "UTF-8");
    // Nothing was decided, so nothing was audited and no state escaped the folder.
    assert!(scratch.audit_events().is_empty());
    assert!(!scratch.path("etc").exists());
}

#[test]
fn an_unwritable_audit_log_or_state_exits_2() {
    let scratch = Scratch::new();
    let policy = claude_code_policy();
    let policy = policy.to_str().unwrap();
    let input = recorded("webfetch");
    // The audit log's path is a folder: it cannot be opened.
    let folder = scratch.path("audit-folder");
    std::fs::create_dir_all(&folder).unwrap();
    let out = bare_cmd("sc-hook")
        .current_dir(scratch.dir.path())
        .args(["--policy", policy, "--audit", folder.to_str().unwrap()])
        .write_stdin(input.clone())
        .output()
        .unwrap();
    assert_blocked(&out, "audit log");
    // The audit log opens but cannot be written.
    let state = scratch.path("state");
    let out = bare_cmd("sc-hook")
        .args(["--policy", policy, "--audit", "/dev/full"])
        .args(["--state-dir", state.to_str().unwrap()])
        .write_stdin(input.clone())
        .output()
        .unwrap();
    assert_blocked(&out, "cannot write the audit log /dev/full");
    // The state folder is a file.
    let not_a_folder = scratch.write("not-a-folder", "x");
    assert_blocked(
        &hook_with(
            &scratch,
            &[
                "--policy",
                policy,
                "--state-dir",
                not_a_folder.to_str().unwrap(),
            ],
            &input,
        ),
        "state store unavailable",
    );
    // A state file that cannot be read is never taken as a clean start.
    // A store that is not a database is never taken as a clean start.
    scratch.write("logs/state.sqlite", "{\"agents\":");
    assert_blocked(
        &hook(&scratch, &recorded("bash")),
        "state store unavailable",
    );
}

/// The README's settings.json snippet is valid JSON that installs sc-hook as a PreToolUse hook.
#[test]
fn the_readme_shows_a_working_settings_snippet() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let block = readme
        .split("```json")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .find(|block| block.contains("PreToolUse"))
        .expect("a ```json block with PreToolUse in README.md");
    let settings: Value = serde_json::from_str(block).expect("the block is JSON");
    let hook = &settings["hooks"]["PreToolUse"][0]["hooks"][0];
    assert_eq!(hook["type"], "command");
    assert!(
        hook["command"].as_str().unwrap().starts_with("sc-hook "),
        "{hook}"
    );
}

/// Issue 13: a state file is read only in the shape sc-hook writes it. Anything else (`[]`,
/// `null`, `{}`, an empty file, a missing, unknown or mistyped key, trailing text) blocks the
/// call with exit 2; it is never taken for a fresh session, which would forget a taint.
#[test]
fn a_state_file_in_any_other_shape_exits_2() {
    let scratch = Scratch::new();
    let key = "session/5c0ffee0-7a4d-4e0b-9c55-1d2e3f4a5b6c/gate";
    // A real state: the session read a web page, so Bash is asked about.
    assert_eq!(decided(&scratch, "webfetch"), None);
    assert_eq!(decided(&scratch, "bash").as_deref(), Some("ask"));
    let written = stored_text(&scratch, key).unwrap();
    assert!(written.ends_with('}'), "{written}");
    let cases: Vec<(String, &str)> = vec![
        ("[]".into(), "must be an object, not an array"),
        ("[]\n".into(), "must be an object, not an array"),
        ("null".into(), "must be an object, not null"),
        ("{}".into(), "missing field `agents`"),
        (r#"{"agents":{}}"#.into(), "missing field `crewSpent`"),
        (String::new(), "empty"),
        ("\n".into(), "empty"),
        (
            written.replacen('{', r#"{"note":"x","#, 1),
            "unknown field `note`",
        ),
        (
            written.replacen("\"crewSpent\":", "\"crewSpent\":\"", 1),
            "not valid JSON",
        ),
        (
            written.replacen("\"spent\":", "\"spent\":true,\"x\":", 1),
            "invalid type",
        ),
        (written.trim_end().to_owned() + "]", "trailing characters"),
        (written.trim_end().to_owned() + "{}", "trailing characters"),
        (
            written.replacen("\"crewTaintedBy\"", "\"crewTaintedBy\":null,\"x\"", 1),
            "must be an object, not null",
        ),
    ];
    for (text, expected) in cases {
        store_text(&scratch, key, &text);
        let out = hook(&scratch, &recorded("bash"));
        assert_blocked(&out, "refused rather than read as clean");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{text:?}: {stderr}");
    }
    // The state as it was written still reads, and still holds the taint.
    store_text(&scratch, key, &written);
    assert_eq!(decided(&scratch, "bash").as_deref(), Some("ask"));
    // No state at all is a session seen for the first time.
    rusqlite::Connection::open(scratch.path("logs/state.sqlite"))
        .unwrap()
        .execute("DELETE FROM sc_states WHERE key = ?1", [key])
        .unwrap();
    assert_eq!(decided(&scratch, "bash"), None);
}

/// A state as the store beside the audit log holds it, by its key.
fn stored_text(scratch: &Scratch, key: &str) -> Option<String> {
    use rusqlite::OptionalExtension;
    rusqlite::Connection::open(scratch.path("logs/state.sqlite"))
        .unwrap()
        .query_row("SELECT state FROM sc_states WHERE key = ?1", [key], |row| {
            row.get(0)
        })
        .optional()
        .unwrap()
}

fn stored_state(scratch: &Scratch, key: &str) -> Option<Value> {
    stored_text(scratch, key).map(|text| serde_json::from_str(&text).unwrap())
}

/// Edits a state in the store, as someone with the file could.
fn store_text(scratch: &Scratch, key: &str, text: &str) {
    rusqlite::Connection::open(scratch.path("logs/state.sqlite"))
        .unwrap()
        .execute(
            "UPDATE sc_states SET state = ?2 WHERE key = ?1",
            [key, text],
        )
        .unwrap();
}

/// Issue 13: with `budgetScope: "crew"`, the main thread and its subagents share one budget.
#[test]
fn subagents_share_the_crews_budget() {
    let scratch = Scratch::new();
    let policy = scratch.write(
        "policy.json",
        r#"{"holdAboveAmount": 1000, "holdAboveTotal": 100, "budgetScope": "crew"}"#,
    );
    let buy = |agent_type: Option<&str>| {
        let mut input = json!({
            "session_id": "shop", "hook_event_name": "PreToolUse",
            "tool_name": "mcp__shop__buy", "tool_input": {"amount": 60}
        });
        if let Some(kind) = agent_type {
            input["agent_type"] = json!(kind);
        }
        hook_with(
            &scratch,
            &["--policy", policy.to_str().unwrap()],
            &input.to_string(),
        )
    };
    assert_eq!(decision(&buy(None)), None);
    let (verdict, reason) = decision(&buy(Some("general-purpose"))).unwrap();
    assert_eq!(verdict, "ask");
    assert!(
        reason.contains(
            "would total 120 (60 by the crew before this call), above the crew's budget of 100"
        ),
        "{reason}"
    );
}

/// Issue 13: the hook decides on the tool input as Claude Code wrote it, digits and all.
#[test]
fn a_number_a_float_rounds_into_a_bound_is_denied() {
    let scratch = Scratch::new();
    let policy = scratch.write(
        "policy.json",
        r#"{"toolArgs": {"mcp__shop__buy": {"schema": {"properties": {"quantity": {"maximum": 10}}}}}}"#,
    );
    let buy = |quantity: &str| {
        let input = format!(
            r#"{{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"mcp__shop__buy","tool_input":{{"quantity":{quantity}}}}}"#
        );
        hook_with(&scratch, &["--policy", policy.to_str().unwrap()], &input)
    };
    assert_eq!(decision(&buy("10")), None);
    assert_eq!(decision(&buy("10.0")), None);
    let (verdict, reason) = decision(&buy("10.000000000000000000001")).unwrap();
    assert_eq!(verdict, "deny");
    assert!(
        reason.contains("argument `quantity` = 10.000000000000000000001 is a number a float does not hold as written"),
        "{reason}"
    );
}
