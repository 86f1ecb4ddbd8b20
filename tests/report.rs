//! sc-report as a process: audit logs written by hand, the text and JSON reports checked.

use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::{bare_cmd, Scratch};

/// How long any single sc-report run may take before it is treated as hung.
const PROCESS_LIMIT: Duration = Duration::from_secs(60);

const TS: &str = "2026-11-30T16:41:03.123456Z";

fn gate(id: &str, agent: &str, tool: &str, decision: &str, reasons: &[&str]) -> Value {
    json!({
        "ts": TS, "stage": "gate", "id": id, "decision": decision, "reasons": reasons,
        "call": {"agent": agent, "tool": tool, "args": {}, "source": "user"},
    })
}

fn approve(id: &str, agent: &str, tool: &str, approved: bool, reason: &str) -> Value {
    json!({
        "ts": TS, "stage": "approve", "id": id, "agent": agent, "tool": tool,
        "approval": {"approved": approved, "by": "answers", "answer": if approved { "yes" } else { "no" }, "reason": reason},
    })
}

fn exec(id: &str, agent: &str, tool: &str, decision: &str, status: &str) -> Value {
    json!({
        "ts": TS, "stage": "exec", "id": id, "agent": agent, "tool": tool, "decision": decision,
        "outcome": {"status": status, "reason": format!("{status} by hand")},
    })
}

/// Events as a log: one line each, every line ended.
fn log(events: &[Value]) -> String {
    events.iter().map(|e| format!("{e}\n")).collect()
}

const HELD: &str = "amount 750 is above the hold limit of 100";
const INJECTED: &str = "send_payment is a sensitive tool and the call's source is untrusted-content: only a user or agent may order it";
const SAID_NO: &str = "declined: the answer \"no\" is not yes";

/// Six calls: two allowed (one executed, one failed), three held (approved, declined, never
/// answered) and one denied.
fn crew_log(prefix: &str) -> String {
    let id = |n: u32| format!("{prefix}-{n}");
    log(&[
        gate(
            &id(1),
            "scout",
            "search_web",
            "allow",
            &["trusted source user; within policy"],
        ),
        gate(&id(2), "buyer", "send_payment", "hold", &[HELD]),
        gate(&id(3), "helper", "send_payment", "deny", &[INJECTED]),
        gate(
            &id(4),
            "buyer",
            "send_payment",
            "hold",
            &["amount 500 is above the hold limit of 100"],
        ),
        gate(
            &id(5),
            "buyer",
            "send_email",
            "hold",
            &["amount \"lots\" is not understood"],
        ),
        gate(
            &id(6),
            "scout",
            "fetch_page",
            "allow",
            &["trusted source user; within policy"],
        ),
        approve(
            &id(2),
            "buyer",
            "send_payment",
            true,
            "approved: the answers file said yes",
        ),
        approve(&id(4), "buyer", "send_payment", false, SAID_NO),
        exec(&id(1), "scout", "search_web", "allow", "executed"),
        exec(&id(2), "buyer", "send_payment", "hold", "executed"),
        exec(&id(3), "helper", "send_payment", "deny", "skipped"),
        exec(&id(4), "buyer", "send_payment", "hold", "skipped"),
        exec(&id(5), "buyer", "send_email", "hold", "skipped"),
        exec(&id(6), "scout", "fetch_page", "allow", "failed"),
    ])
}

fn run(cmd: &mut assert_cmd::Command) -> Output {
    cmd.timeout(PROCESS_LIMIT).output().expect("sc-report runs")
}

fn stdout_text(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr_text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `sc-report --json` on the logs in the scratch folder and parses the document.
fn report_json(scratch: &Scratch, logs: &[&str]) -> Value {
    let mut cmd = bare_cmd("sc-report");
    cmd.current_dir(scratch.dir.path()).arg("--json").args(logs);
    let output = run(&mut cmd);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_text(&output));
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}

fn report_text(scratch: &Scratch, logs: &[&str]) -> String {
    let mut cmd = bare_cmd("sc-report");
    cmd.current_dir(scratch.dir.path()).args(logs);
    let output = run(&mut cmd);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_text(&output));
    stdout_text(&output)
}

/// The line of `text` that starts (after indentation) with `start`.
fn line_starting<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|line| line.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with {start:?} in:\n{text}"))
}

/// The numbers of an agent's row in the per-agent table.
fn agent_row(text: &str, agent: &str) -> Vec<u64> {
    let after_header = text
        .split("By agent")
        .nth(1)
        .unwrap_or_else(|| panic!("no per-agent table in:\n{text}"));
    let row = after_header
        .lines()
        .find(|line| line.split_whitespace().next() == Some(agent))
        .unwrap_or_else(|| panic!("no row for {agent} in:\n{text}"));
    row.split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap_or_else(|_| panic!("{n:?} in {row:?}")))
        .collect()
}

fn agent<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["agents"]
        .as_array()
        .expect("agents is an array")
        .iter()
        .find(|a| a["agent"] == name)
        .unwrap_or_else(|| panic!("no agent {name} in {}", report["agents"]))
}

#[test]
fn text_report_counts_holds_vetoes_and_agents() {
    let scratch = Scratch::new();
    scratch.write("audit.jsonl", crew_log("run"));
    let text = report_text(&scratch, &["audit.jsonl"]);

    let decisions = line_starting(&text, "Decisions");
    for part in ["6 calls", "2 allow", "3 hold", "1 deny"] {
        assert!(decisions.contains(part), "{part:?} not in {decisions:?}");
    }
    let holds = line_starting(&text, "Holds");
    for part in ["1 approved", "1 declined", "1 never answered"] {
        assert!(holds.contains(part), "{part:?} not in {holds:?}");
    }
    let outcomes = line_starting(&text, "Outcomes");
    for part in ["2 executed", "3 skipped", "1 failed"] {
        assert!(outcomes.contains(part), "{part:?} not in {outcomes:?}");
    }

    assert!(line_starting(&text, "Vetoes").contains("(2)"), "{text}");
    let deny = line_starting(&text, "DENY");
    assert!(
        deny.contains("helper") && deny.contains("send_payment") && deny.contains("run-3"),
        "{deny}"
    );
    let declined = line_starting(&text, "DECLINED");
    assert!(
        declined.contains("buyer")
            && declined.contains("send_payment")
            && declined.contains("run-4"),
        "{declined}"
    );
    for reason in [
        INJECTED,
        SAID_NO,
        "amount 500 is above the hold limit of 100",
    ] {
        assert!(
            line_starting(&text, &format!("- {reason}")).ends_with(reason),
            "{text}"
        );
    }
    // Approved and unanswered holds are not vetoes.
    assert!(!text.contains("run-2") && !text.contains("run-5"), "{text}");

    // calls, allow, hold, deny, approved, declined, unanswered, executed, by grant
    assert_eq!(agent_row(&text, "buyer"), [3, 0, 3, 0, 1, 1, 1, 1, 0]);
    assert_eq!(agent_row(&text, "helper"), [1, 0, 0, 1, 0, 0, 0, 0, 0]);
    assert_eq!(agent_row(&text, "scout"), [2, 2, 0, 0, 0, 0, 0, 1, 0]);
    assert!(!text.contains("Problems"), "{text}");
}

#[test]
fn json_report_has_the_same_numbers() {
    let scratch = Scratch::new();
    scratch.write("audit.jsonl", crew_log("run"));
    let report = report_json(&scratch, &["audit.jsonl"]);

    assert_eq!(report["calls"], 6);
    assert_eq!(
        report["decisions"],
        json!({"allow": 2, "hold": 3, "deny": 1})
    );
    assert_eq!(
        report["holds"],
        json!({"approved": 1, "declined": 1, "unanswered": 1})
    );
    assert_eq!(
        report["outcomes"],
        json!({"executed": 2, "skipped": 3, "failed": 1})
    );
    assert_eq!(report["problems"], json!([]));

    let vetoes = report["vetoes"].as_array().expect("vetoes is an array");
    assert_eq!(vetoes.len(), 2, "{vetoes:?}");
    assert_eq!(vetoes[0]["id"], "run-3");
    assert_eq!(vetoes[0]["kind"], "deny");
    assert_eq!(vetoes[0]["agent"], "helper");
    assert_eq!(vetoes[0]["tool"], "send_payment");
    assert_eq!(vetoes[0]["reasons"], json!([INJECTED]));
    assert_eq!(vetoes[1]["id"], "run-4");
    assert_eq!(vetoes[1]["kind"], "declined");
    assert_eq!(vetoes[1]["agent"], "buyer");
    assert_eq!(vetoes[1]["tool"], "send_payment");
    assert_eq!(
        vetoes[1]["reasons"],
        json!(["amount 500 is above the hold limit of 100", SAID_NO])
    );

    let agents: Vec<&str> = report["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent"].as_str().unwrap())
        .collect();
    assert_eq!(agents.len(), 3, "{agents:?}");
    let buyer = agent(&report, "buyer");
    for (key, value) in [
        ("calls", 3),
        ("allow", 0),
        ("hold", 3),
        ("deny", 0),
        ("approved", 1),
        ("declined", 1),
        ("unanswered", 1),
        ("executed", 1),
    ] {
        assert_eq!(buyer[key], value, "buyer {key}: {buyer}");
    }
    assert_eq!(agent(&report, "helper")["deny"], 1);
    assert_eq!(agent(&report, "helper")["executed"], 0);
    assert_eq!(agent(&report, "scout")["allow"], 2);
    assert_eq!(agent(&report, "scout")["executed"], 1);
}

#[test]
fn several_logs_add_up() {
    let scratch = Scratch::new();
    scratch.write("monday.jsonl", crew_log("mon"));
    scratch.write("tuesday.jsonl", crew_log("tue"));
    scratch.write(
        "wednesday.jsonl",
        log(&[
            gate(
                "wed-1",
                "auditor",
                "shell_exec",
                "deny",
                &["shell_exec is on the policy's deny list"],
            ),
            exec("wed-1", "auditor", "shell_exec", "deny", "skipped"),
        ]),
    );
    let one = report_json(&scratch, &["monday.jsonl"]);
    let all = report_json(
        &scratch,
        &["monday.jsonl", "tuesday.jsonl", "wednesday.jsonl"],
    );

    assert_eq!(
        all["logs"],
        json!(["monday.jsonl", "tuesday.jsonl", "wednesday.jsonl"])
    );
    assert_eq!(one["calls"], 6);
    assert_eq!(all["calls"], 13);
    assert_eq!(all["decisions"], json!({"allow": 4, "hold": 6, "deny": 3}));
    assert_eq!(
        all["holds"],
        json!({"approved": 2, "declined": 2, "unanswered": 2})
    );
    assert_eq!(
        all["outcomes"],
        json!({"executed": 4, "skipped": 7, "failed": 2})
    );
    assert_eq!(all["vetoes"].as_array().unwrap().len(), 5);
    assert_eq!(agent(&all, "buyer")["calls"], 6);
    assert_eq!(agent(&all, "auditor")["deny"], 1);

    let text = report_text(
        &scratch,
        &["monday.jsonl", "tuesday.jsonl", "wednesday.jsonl"],
    );
    assert!(
        line_starting(&text, "Decisions").contains("13 calls"),
        "{text}"
    );
    assert!(
        text.contains("monday.jsonl") && text.contains("wednesday.jsonl"),
        "{text}"
    );
}

#[test]
fn a_torn_last_line_is_reported_not_fatal() {
    let scratch = Scratch::new();
    let mut text = log(&[
        gate("t-1", "scout", "search_web", "allow", &["ok"]),
        gate("t-2", "helper", "send_payment", "deny", &[INJECTED]),
        exec("t-1", "scout", "search_web", "allow", "executed"),
    ]);
    let torn = exec("t-2", "helper", "send_payment", "deny", "skipped").to_string();
    text.push_str(&torn[..torn.len() / 2]);
    scratch.write("torn.jsonl", text);

    let report = report_json(&scratch, &["torn.jsonl"]);
    assert_eq!(report["calls"], 2);
    assert_eq!(
        report["decisions"],
        json!({"allow": 1, "hold": 0, "deny": 1})
    );
    assert_eq!(report["outcomes"]["executed"], 1);
    assert_eq!(
        report["outcomes"]["skipped"], 0,
        "the torn event is not counted"
    );
    let problems = report["problems"].as_array().expect("problems is an array");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["line"], 4);
    assert_eq!(problems[0]["log"], "torn.jsonl");
    assert!(
        problems[0]["problem"]
            .as_str()
            .is_some_and(|p| !p.is_empty()),
        "{problems:?}"
    );

    let text = report_text(&scratch, &["torn.jsonl"]);
    let problems_at = text
        .find("Problems")
        .unwrap_or_else(|| panic!("no problems in:\n{text}"));
    let problem = line_starting(&text[problems_at..], "torn.jsonl");
    assert!(problem.contains("line 4"), "{problem}");
    assert!(
        line_starting(&text, "Decisions").contains("2 calls"),
        "{text}"
    );
}

#[test]
fn a_hold_with_no_answer_is_never_answered() {
    let scratch = Scratch::new();
    scratch.write(
        "audit.jsonl",
        log(&[
            gate("h-1", "buyer", "send_payment", "hold", &[HELD]),
            exec("h-1", "buyer", "send_payment", "hold", "skipped"),
            gate("h-2", "buyer", "send_payment", "hold", &[HELD]),
        ]),
    );
    let report = report_json(&scratch, &["audit.jsonl"]);
    assert_eq!(report["decisions"]["hold"], 2);
    assert_eq!(
        report["holds"],
        json!({"approved": 0, "declined": 0, "unanswered": 2})
    );
    assert_eq!(report["vetoes"], json!([]));
    assert_eq!(agent(&report, "buyer")["unanswered"], 2);

    let text = report_text(&scratch, &["audit.jsonl"]);
    assert!(
        line_starting(&text, "Holds").contains("2 never answered"),
        "{text}"
    );
}

#[test]
fn a_missing_log_exits_1_naming_it() {
    let scratch = Scratch::new();
    scratch.write("present.jsonl", crew_log("p"));
    for args in [vec!["absent.jsonl"], vec!["present.jsonl", "absent.jsonl"]] {
        let mut cmd = bare_cmd("sc-report");
        cmd.current_dir(scratch.dir.path()).args(&args);
        let output = run(&mut cmd);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = stderr_text(&output);
        assert!(stderr.contains("absent.jsonl"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn the_default_log_is_logs_audit_jsonl() {
    let scratch = Scratch::new();
    // Scratch::audit_path is <scratch>/logs/audit.jsonl.
    std::fs::create_dir_all(scratch.audit_path().parent().unwrap()).unwrap();
    std::fs::write(scratch.audit_path(), crew_log("d")).unwrap();
    scratch.write(
        "other.jsonl",
        log(&[gate("o-1", "x", "search_web", "allow", &["ok"])]),
    );

    let report = report_json(&scratch, &[]);
    assert_eq!(report["logs"], json!(["logs/audit.jsonl"]));
    assert_eq!(report["calls"], 6);

    let text = report_text(&scratch, &[]);
    assert!(text.contains("logs/audit.jsonl"), "{text}");
    assert!(
        line_starting(&text, "Decisions").contains("6 calls"),
        "{text}"
    );

    // Run somewhere without one, it is missing.
    let mut cmd = bare_cmd("sc-report");
    cmd.current_dir(scratch.path("logs"));
    let output = run(&mut cmd);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr_text(&output).contains("logs/audit.jsonl"),
        "{}",
        stderr_text(&output)
    );
}

/// `count` denied calls by helper, ids `d-0000`…
fn denials(count: usize) -> String {
    let events: Vec<Value> = (0..count)
        .map(|n| {
            gate(
                &format!("d-{n:04}"),
                "helper",
                "shell_exec",
                "deny",
                &["on the deny list"],
            )
        })
        .collect();
    log(&events)
}

#[test]
fn text_and_markdown_list_the_first_thousand_vetoes_and_json_lists_them_all() {
    let scratch = Scratch::new();
    scratch.write("audit.jsonl", denials(1001));

    let text = report_text(&scratch, &["audit.jsonl"]);
    assert!(line_starting(&text, "Vetoes").contains("(1001)"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with("DENY"))
            .count(),
        1000
    );
    assert!(
        text.contains("d-0999") && !text.contains("d-1000"),
        "{text}"
    );
    assert_eq!(
        line_starting(&text, "… and"),
        "  … and 1 more; list them all with: sc-report --format json audit.jsonl"
    );

    let mut cmd = bare_cmd("sc-report");
    cmd.current_dir(scratch.dir.path()).args([
        "--format",
        "markdown",
        "--agent",
        "helper",
        "audit.jsonl",
    ]);
    let output = run(&mut cmd);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_text(&output));
    let markdown = stdout_text(&output);
    assert!(markdown.contains("### Vetoes (1001)"), "{markdown}");
    assert_eq!(markdown.matches("| **deny** |").count(), 1000);
    assert!(
        markdown.contains(
            "… and 1 more; list them all with: `sc-report --format json --agent helper audit.jsonl`"
        ),
        "{markdown}"
    );

    // The command named lists every one, in order, with the same numbers.
    let report = report_json(&scratch, &["audit.jsonl"]);
    let vetoes = report["vetoes"].as_array().expect("vetoes is an array");
    assert_eq!(vetoes.len(), 1001);
    for (n, veto) in vetoes.iter().enumerate() {
        assert_eq!(veto["id"], format!("d-{n:04}"));
        assert_eq!(veto["reasons"], json!(["on the deny list"]));
    }
    assert_eq!(
        report["decisions"],
        json!({"allow": 0, "hold": 0, "deny": 1001})
    );
}

#[test]
fn a_thousand_vetoes_or_fewer_are_all_listed_with_nothing_more_to_say() {
    let scratch = Scratch::new();
    scratch.write("audit.jsonl", denials(1000));
    let text = report_text(&scratch, &["audit.jsonl"]);
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with("DENY"))
            .count(),
        1000
    );
    assert!(!text.contains("more; list them all"), "{text}");
}

/// Issue 23: with `--agent`, the header counts that agent's events (its calls' gate, approve and
/// exec events, and the resets of its state), in every format, not every event read.
#[test]
fn the_agent_filter_counts_the_agents_events_in_the_header() {
    let scratch = Scratch::new();
    let mut text = crew_log("c");
    text.push_str(&log(&[json!({
        "ts": TS, "stage": "state", "id": "r1", "action": "reset", "crew": "default",
        "agent": "scout",
    })]));
    scratch.write("audit.jsonl", text);
    let run_with = |args: &[&str]| {
        let mut cmd = bare_cmd("sc-report");
        cmd.current_dir(scratch.dir.path())
            .args(args)
            .arg("audit.jsonl");
        let output = run(&mut cmd);
        assert_eq!(output.status.code(), Some(0), "{}", stderr_text(&output));
        stdout_text(&output)
    };
    let events = |args: &[&str]| -> u64 {
        let mut with_json = vec!["--json"];
        with_json.extend_from_slice(args);
        let report: Value = serde_json::from_str(&run_with(&with_json)).unwrap();
        report["events"].as_u64().unwrap()
    };
    assert_eq!(events(&[]), 15);
    // buyer: the gate events of calls 2, 4 and 5, the approvals of 2 and 4, three outcomes.
    assert_eq!(events(&["--agent", "buyer"]), 8);
    // scout: two calls of two events each, and its reset.
    assert_eq!(events(&["--agent", "scout"]), 5);
    assert_eq!(events(&["--agent", "nobody"]), 0);
    let header = run_with(&["--agent", "buyer"]);
    assert!(
        header.lines().next().unwrap().ends_with("(8 events)"),
        "{header}"
    );
    let markdown = run_with(&["--format", "markdown", "--agent", "helper"]);
    assert!(markdown.contains("(2 events)"), "{markdown}");
}

/// Calls an earlier approval allowed (issue 25's grants): their decision events (sc-gate's, and
/// sc-mcp's and sc-hook's, all `gate` events) are an `allow` with a reason `allowed by grant ID
/// (given by BY at TIME)` and the grants' ids in `grants`. Each such call is counted per agent,
/// in every format, beside the other allows.
pub(crate) fn granted_log() -> String {
    let mut granted = gate(
        "k-1",
        "buyer",
        "send_payment",
        "allow",
        &["allowed by grant gr-7 (given by web at 2026-11-30T16:40:00Z)"],
    );
    granted["grants"] = json!(["gr-7"]);
    // As sc-mcp writes it: the call carries its JSON-RPC id.
    let mut through_mcp = gate(
        "k-2",
        "fs",
        "create_directory",
        "allow",
        &["allowed by grant gr-8 (given by elicitation at 2026-11-30T16:40:30Z)"],
    );
    through_mcp["grants"] = json!(["gr-8"]);
    through_mcp["call"]["jsonrpcId"] = json!(4);
    // A log written before `grants`: the reason alone says it.
    let by_reason = gate(
        "k-3",
        "buyer",
        "send_payment",
        "allow",
        &["allowed by grant gr-7 (given by web at 2026-11-30T16:40:00Z)"],
    );
    log(&[
        granted,
        through_mcp,
        by_reason,
        gate(
            "k-4",
            "buyer",
            "search_web",
            "allow",
            &["trusted source user; within policy"],
        ),
        gate("k-5", "buyer", "send_payment", "hold", &[HELD]),
        exec("k-1", "buyer", "send_payment", "allow", "executed"),
        exec("k-2", "fs", "create_directory", "allow", "executed"),
        exec("k-3", "buyer", "send_payment", "allow", "executed"),
        exec("k-4", "buyer", "search_web", "allow", "executed"),
    ])
}

#[test]
fn calls_allowed_by_an_earlier_approval_are_counted_per_agent_in_every_format() {
    let scratch = Scratch::new();
    let mut text = granted_log();
    text.push_str(&crew_log("c"));
    scratch.write("audit.jsonl", text);

    let report = report_json(&scratch, &["audit.jsonl"]);
    assert_eq!(report["allowedByGrant"], 3, "{report}");
    assert_eq!(report["decisions"]["allow"], 6, "{report}");
    assert_eq!(agent(&report, "buyer")["allowedByGrant"], 2);
    assert_eq!(agent(&report, "buyer")["allow"], 3);
    assert_eq!(agent(&report, "fs")["allowedByGrant"], 1);
    assert_eq!(agent(&report, "scout")["allowedByGrant"], 0);

    let text = report_text(&scratch, &["audit.jsonl"]);
    assert_eq!(
        line_starting(&text, "Grants"),
        "Grants     3 allowed by an earlier approval"
    );
    // calls, allow, hold, deny, approved, declined, unanswered, executed, by grant
    assert_eq!(agent_row(&text, "buyer"), [7, 3, 4, 0, 1, 1, 2, 4, 2]);
    assert_eq!(agent_row(&text, "fs"), [1, 1, 0, 0, 0, 0, 0, 1, 1]);
    assert_eq!(agent_row(&text, "scout"), [2, 2, 0, 0, 0, 0, 0, 1, 0]);

    let mut cmd = bare_cmd("sc-report");
    cmd.current_dir(scratch.dir.path())
        .args(["--format", "markdown", "audit.jsonl"]);
    let output = run(&mut cmd);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_text(&output));
    let markdown = stdout_text(&output);
    for row in [
        "| calls | allow | by grant | hold |",
        "| 11 | 6 | 3 | 4 | 1 |",
        "| executed | by grant | tainted by |",
        "| buyer | 7 | 3 | 4 | 0 | 1 | 1 | 2 | 4 | 2 |  |",
        "| fs | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 1 | 1 |  |",
    ] {
        assert!(markdown.contains(row), "{row:?} not in:\n{markdown}");
    }
}
