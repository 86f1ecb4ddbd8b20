//! sc-gate as a process.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command as StdCommand, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::{bare_cmd, bin_path, parse_lines, parse_stdout, Scratch};

/// A trusted payment above the default hold limit of 100: held by default.
const PAYMENT: &str =
    r#"{"agent":"buyer","tool":"send_payment","args":{"to":"acme","amount":750},"source":"user"}"#;
/// A trusted call to a tool that is neither denied nor sensitive: allowed.
const WEATHER: &str =
    r#"{"agent":"scout","tool":"get_weather","args":{"q":"Lyon"},"source":"user"}"#;
/// A tool on the default deny list: denied.
const SHELL: &str = r#"{"agent":"fixer","tool":"shell_exec","args":{"cmd":"ls"},"source":"agent"}"#;

/// How long any single process test may run before it is treated as hung.
const PROCESS_LIMIT: Duration = Duration::from_secs(60);

/// A distinct, allowed call line; `tag` ends up in `agent` so verdicts can be told apart.
fn tagged_call(tag: &str) -> String {
    json!({"agent": tag, "tool": "get_weather", "args": {"q": tag}, "source": "user"}).to_string()
}

fn stderr_text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs an assert_cmd command to the end (bounded in time) and returns its output.
fn run(cmd: &mut assert_cmd::Command) -> Output {
    cmd.timeout(PROCESS_LIMIT).output().expect("sc-gate runs")
}

fn ids_of(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|v| {
            v["id"]
                .as_str()
                .unwrap_or_else(|| panic!("no string id in {v}"))
                .to_owned()
        })
        .collect()
}

fn assert_distinct(ids: &[String]) {
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "repeated ids among {} ids",
        ids.len()
    );
}

/// Waits for a child started with std's Command, killing it and failing after `limit`.
fn wait_bounded(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sc-gate did not exit within {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Reads a pipe to the end on a thread.
fn drain<R: Read + Send + 'static>(mut pipe: R) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// A well-formed verdict for a call line: id, the call untouched, a known decision, reasons.
fn assert_verdict_of(verdict: &Value, call_line: &str, decision: &str) {
    let call: Value = serde_json::from_str(call_line).unwrap();
    assert_eq!(verdict["call"], call, "{verdict}");
    assert!(verdict.get("raw").is_none(), "{verdict}");
    assert_eq!(verdict["decision"], decision, "{verdict}");
    assert!(
        verdict["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{verdict}"
    );
    let reasons = verdict["reasons"].as_array().expect("reasons is an array");
    assert!(!reasons.is_empty(), "{verdict}");
    assert!(
        reasons
            .iter()
            .all(|r| r.as_str().is_some_and(|r| !r.is_empty())),
        "{verdict}"
    );
}

// 1. Inputs, order, blank lines.

#[test]
fn reads_files_and_stdin_in_order_one_verdict_per_non_blank_line() {
    let scratch = Scratch::new();
    let a = scratch.write(
        "a.jsonl",
        format!("{}\n\n{}\n   \n", tagged_call("a1"), tagged_call("a2")),
    );
    // The last line has no newline: it is still a line.
    let b = scratch.write(
        "b.jsonl",
        format!("\t \r\n{}\n\r\n{}", tagged_call("b1"), tagged_call("b2")),
    );
    let stdin = format!("\n{}\n \t\n{}\n\n", tagged_call("s1"), tagged_call("s2"));

    let output = run(scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .arg(&a)
        .arg("-")
        .arg(&b)
        .write_stdin(stdin));
    assert!(output.status.success(), "{}", stderr_text(&output));

    let verdicts = parse_stdout(&output.stdout);
    let agents: Vec<&str> = verdicts
        .iter()
        .map(|v| v["call"]["agent"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(agents, ["a1", "a2", "s1", "s2", "b1", "b2"]);
    for verdict in &verdicts {
        let tag = verdict["call"]["agent"].as_str().unwrap();
        assert_verdict_of(verdict, &tagged_call(tag), "allow");
    }
    // No blank lines in the output either: one line per verdict.
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(text.ends_with('\n'));
}

#[test]
fn no_arguments_means_stdin() {
    let scratch = Scratch::new();
    let output = run(scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .write_stdin(format!("{PAYMENT}\n{WEATHER}\n{SHELL}\n")));
    assert!(output.status.success(), "{}", stderr_text(&output));
    let verdicts = parse_stdout(&output.stdout);
    assert_eq!(verdicts.len(), 3);
    assert_verdict_of(&verdicts[0], PAYMENT, "hold");
    assert_verdict_of(&verdicts[1], WEATHER, "allow");
    assert_verdict_of(&verdicts[2], SHELL, "deny");
}

// 2. Malformed lines.

/// Checks a malformed line's verdict: deny, reasons that say what is wrong, a bounded `raw`.
fn assert_malformed(verdict: &Value, case: &str, expected_reason: &str) -> String {
    assert_eq!(verdict["decision"], "deny", "{case}: {verdict}");
    assert!(verdict.get("call").is_none(), "{case}: {verdict}");
    let reasons = verdict["reasons"]
        .as_array()
        .unwrap_or_else(|| panic!("{case}: no reasons in {verdict}"));
    assert!(!reasons.is_empty(), "{case}: {verdict}");
    let joined = reasons
        .iter()
        .map(|r| r.as_str().expect("reasons are strings"))
        .collect::<Vec<_>>()
        .join("; ");
    assert!(
        joined.contains(expected_reason),
        "{case}: reasons {joined:?} lack {expected_reason:?}"
    );
    let raw = verdict["raw"]
        .as_str()
        .unwrap_or_else(|| panic!("{case}: no string raw in {verdict}"));
    assert!(raw.len() <= 1100, "{case}: raw is {} bytes", raw.len());
    assert!(verdict["id"].as_str().is_some_and(|id| !id.is_empty()));
    raw.to_owned()
}

#[test]
fn each_malformed_line_is_denied_with_a_reason_and_the_stream_goes_on() {
    let huge = format!(r#"{{"agent":"{}","tool":"t"}}"#, "x".repeat(2 << 20));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("not JSON", b"this is not json".to_vec(), "not valid JSON"),
        ("array", b"[1,2,3]".to_vec(), "not a JSON object"),
        ("null", b"null".to_vec(), "not a JSON object"),
        (
            "invalid UTF-8",
            b"{\"agent\":\"\xff\xfe\",\"tool\":\"t\"}".to_vec(),
            "not valid UTF-8",
        ),
        (
            "duplicate top-level key",
            br#"{"agent":"a","tool":"search_web","tool":"send_payment","source":"user"}"#.to_vec(),
            "duplicate key `tool`",
        ),
        (
            "duplicate key inside args",
            br#"{"agent":"a","tool":"send_payment","args":{"amount":1,"amount":5000},"source":"user"}"#
                .to_vec(),
            "duplicate key `amount`",
        ),
        (
            "10 KB line under the limit, not JSON",
            "z".repeat(10_000).into_bytes(),
            "not valid JSON",
        ),
        ("2 MiB line", huge.into_bytes(), "line limit"),
        (
            "tool as array",
            br#"{"agent":"a","tool":["search_web"],"source":"user"}"#.to_vec(),
            "`tool`",
        ),
        (
            "args as string",
            br#"{"agent":"a","tool":"search_web","args":"{}","source":"user"}"#.to_vec(),
            "`args`",
        ),
        (
            "empty agent",
            br#"{"agent":"","tool":"search_web","source":"user"}"#.to_vec(),
            "`agent`",
        ),
        (
            "instruction as object",
            br#"{"agent":"a","tool":"search_web","instruction":{"do":"x"},"source":"user"}"#
                .to_vec(),
            "`instruction`",
        ),
    ];
    let mut input = Vec::new();
    for (_, line, _) in &cases {
        input.extend_from_slice(line);
        input.push(b'\n');
        input.extend_from_slice(PAYMENT.as_bytes());
        input.push(b'\n');
    }

    let scratch = Scratch::new();
    let output = run(scratch.cmd("sc-gate").arg("--quiet").write_stdin(input));
    assert!(output.status.success(), "{}", stderr_text(&output));
    let verdicts = parse_stdout(&output.stdout);
    assert_eq!(verdicts.len(), cases.len() * 2);

    for (index, (case, line, reason)) in cases.iter().enumerate() {
        let raw = assert_malformed(&verdicts[2 * index], case, reason);
        if line.len() <= 1024 {
            assert_eq!(raw, String::from_utf8_lossy(line), "{case}");
        } else {
            let start = String::from_utf8_lossy(&line[..40]);
            assert!(raw.starts_with(&*start), "{case}: {raw:.40}");
        }
        // The next, valid call still gets its own verdict.
        assert_verdict_of(&verdicts[2 * index + 1], PAYMENT, "hold");
    }

    // The audit log carries the same bounded raw lines, never a 2 MiB one.
    let events = scratch.audit_events();
    assert_eq!(events.len(), verdicts.len());
    for (event, verdict) in events.iter().zip(&verdicts) {
        assert_eq!(event["raw"], verdict["raw"]);
        assert_eq!(event["call"], verdict["call"]);
    }
    let log_bytes = std::fs::metadata(scratch.audit_path()).unwrap().len();
    assert!(log_bytes < 64 * 1024, "the audit log is {log_bytes} bytes");
}

#[test]
fn a_line_over_the_given_limit_is_denied_and_the_next_line_is_read() {
    assert!(PAYMENT.len() <= 100);
    let long = format!(
        r#"{{"agent":"a","tool":"t","pad":"{}"}}"#,
        "y".repeat(1000 - 33)
    );
    assert_eq!(long.len(), 1000);
    let scratch = Scratch::new();
    let output = run(scratch
        .cmd("sc-gate")
        .args(["--quiet", "--max-line-bytes", "100"])
        .write_stdin(format!("{PAYMENT}\n{long}\n{PAYMENT}\n")));
    assert!(output.status.success(), "{}", stderr_text(&output));
    let verdicts = parse_stdout(&output.stdout);
    assert_eq!(verdicts.len(), 3);
    assert_verdict_of(&verdicts[0], PAYMENT, "hold");
    let raw = assert_malformed(&verdicts[1], "1000-byte line", "1000 bytes");
    assert_malformed(&verdicts[1], "1000-byte line", "line limit of 100 bytes");
    assert!(raw.starts_with(r#"{"agent":"a""#), "{raw}");
    assert_verdict_of(&verdicts[2], PAYMENT, "hold");
}

// 3. Ids.

#[test]
fn ids_are_unique_within_a_run_and_across_runs_on_one_audit_log() {
    let scratch = Scratch::new();
    let input: String = (0..50)
        .map(|i| tagged_call(&format!("c{i}")) + "\n")
        .collect();
    let mut stdout_ids = Vec::new();
    for _ in 0..2 {
        let output = run(scratch
            .cmd("sc-gate")
            .arg("--quiet")
            .write_stdin(input.clone()));
        assert!(output.status.success(), "{}", stderr_text(&output));
        let ids = ids_of(&parse_stdout(&output.stdout));
        assert_eq!(ids.len(), 50);
        assert_distinct(&ids);
        stdout_ids.extend(ids);
    }
    assert_distinct(&stdout_ids);

    let audit_ids = ids_of(&scratch.audit_events());
    assert_eq!(audit_ids, stdout_ids);
}

// 4. Audit events.

#[test]
fn one_gate_event_per_call_matching_the_verdicts_in_a_folder_created_when_missing() {
    let scratch = Scratch::new();
    assert!(!scratch.audit_path().parent().unwrap().exists());
    let input = format!("{WEATHER}\n{PAYMENT}\n\n{SHELL}\nnot json\n");
    let output = run(scratch.cmd("sc-gate").arg("--quiet").write_stdin(input));
    assert!(output.status.success(), "{}", stderr_text(&output));
    let verdicts = parse_stdout(&output.stdout);
    assert_eq!(verdicts.len(), 4);

    let events = scratch.audit_events();
    assert_eq!(events.len(), 4, "{events:?}");
    for (event, verdict) in events.iter().zip(&verdicts) {
        let ts = event["ts"].as_str().expect("ts is a string");
        assert!(ts.ends_with('Z'), "{ts}");
        humantime::parse_rfc3339(ts).unwrap_or_else(|e| panic!("{ts}: {e}"));
        assert_eq!(event["stage"], "gate", "{event}");
        assert_eq!(event["id"], verdict["id"], "{event}");
        assert_eq!(event["decision"], verdict["decision"], "{event}");
        assert_eq!(event["reasons"], verdict["reasons"], "{event}");
        assert!(!event["reasons"].as_array().unwrap().is_empty());
    }
    let calls: Vec<Value> = [WEATHER, PAYMENT, SHELL]
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    for (event, call) in events.iter().zip(&calls) {
        assert_eq!(&event["call"], call, "{event}");
        assert!(event.get("raw").is_none(), "{event}");
    }
    assert_eq!(
        events
            .iter()
            .map(|e| e["decision"].clone())
            .collect::<Vec<_>>(),
        ["allow", "hold", "deny", "deny"]
    );
    assert_eq!(events[3]["raw"], "not json");
    assert!(events[3].get("call").is_none());
}

#[test]
fn the_default_audit_log_is_logs_audit_jsonl_in_the_working_folder() {
    let scratch = Scratch::new();
    let output = run(bare_cmd("sc-gate")
        .current_dir(scratch.dir.path())
        .arg("--quiet")
        .write_stdin(format!("{PAYMENT}\n")));
    assert!(output.status.success(), "{}", stderr_text(&output));
    let events = scratch.audit_events();
    assert_eq!(events.len(), 1);
    assert_eq!(ids_of(&events), ids_of(&parse_stdout(&output.stdout)));
}

// 5. An audit log that cannot be written.

#[test]
fn an_unwritable_audit_log_stops_the_gate_before_any_verdict() {
    // The log opens, and its first append fails: the file system is full.
    let Some(disk) = crate::full_disk::FullDisk::new() else {
        return;
    };
    let input: String = (0..2000)
        .map(|i| tagged_call(&format!("c{i}")) + "\n")
        .collect();
    let log = disk.log();
    let output = run(disk
        .cmd("sc-gate")
        .arg("--quiet")
        .arg("--audit")
        .arg(&log)
        .write_stdin(input));
    assert_eq!(output.status.code(), Some(1), "{}", stderr_text(&output));
    let stderr = stderr_text(&output);
    assert!(
        stderr.contains(&format!("cannot write the audit log {}", log.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        output.stdout.is_empty(),
        "verdicts left without an audit: {}",
        String::from_utf8_lossy(&output.stdout)
    );
}

// 6. Policy.

#[test]
fn policy_errors_exit_2_naming_the_file_and_the_key() {
    let scratch = Scratch::new();
    std::fs::create_dir(scratch.path("folder.json")).unwrap();
    let cases: Vec<(&str, Option<&str>, Vec<&str>)> = vec![
        ("missing.json", None, vec!["missing.json"]),
        ("folder.json", None, vec!["folder.json"]),
        ("empty.json", Some(""), vec!["empty.json", "empty"]),
        (
            "malformed.json",
            Some("{\n  \"holdAboveAmount\": 1,,\n}"),
            vec!["malformed.json", "line 2", "column"],
        ),
        ("array.json", Some("[]"), vec!["array.json", "object"]),
        (
            "typo.json",
            Some(r#"{"holdAboveAmout": 1000}"#),
            vec!["typo.json", "holdAboveAmout", "holdAboveAmount"],
        ),
        (
            "type.json",
            Some(r#"{"holdAboveAmount": "1000"}"#),
            vec!["type.json", "holdAboveAmount", "number"],
        ),
        (
            "duplicate.json",
            Some(r#"{"denyTools": [], "denyTools": ["shell_exec"]}"#),
            vec!["duplicate.json", "denyTools", "duplicate"],
        ),
        (
            "negative.json",
            Some(r#"{"holdAboveAmount": -1}"#),
            vec!["negative.json", "holdAboveAmount"],
        ),
        (
            "empty-tool.json",
            Some(r#"{"sensitiveTools": ["send_payment", ""]}"#),
            vec!["empty-tool.json", "sensitiveTools", "empty"],
        ),
    ];
    for (name, contents, expected) in cases {
        if let Some(contents) = contents {
            scratch.write(name, contents);
        }
        let output = run(scratch
            .cmd("sc-gate")
            .arg("--policy")
            .arg(name)
            .write_stdin(format!("{PAYMENT}\n")));
        let stderr = stderr_text(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        for needle in expected {
            assert!(
                stderr.contains(needle),
                "{name}: {stderr:?} lacks {needle:?}"
            );
        }
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(
            output.stdout.is_empty(),
            "{name}: a verdict under a broken policy"
        );
    }
    assert!(scratch.audit_events().is_empty());
}

#[test]
fn a_valid_policy_changes_the_decision() {
    let scratch = Scratch::new();
    let policy = scratch.write("policy.json", r#"{"holdAboveAmount": 1000}"#);

    let default = run(scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .write_stdin(format!("{PAYMENT}\n")));
    assert!(default.status.success(), "{}", stderr_text(&default));
    assert_verdict_of(&parse_stdout(&default.stdout)[0], PAYMENT, "hold");

    let looser = run(scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .arg("--policy")
        .arg(&policy)
        .write_stdin(format!("{PAYMENT}\n")));
    assert!(looser.status.success(), "{}", stderr_text(&looser));
    let verdicts = parse_stdout(&looser.stdout);
    assert_eq!(verdicts.len(), 1);
    assert_verdict_of(&verdicts[0], PAYMENT, "allow");
}

#[test]
fn the_example_policy_loads() {
    let scratch = Scratch::new();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("policy.example.json");
    let output = run(scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .arg("--policy")
        .arg(&example)
        .write_stdin(format!("{PAYMENT}\n{SHELL}\n")));
    assert_eq!(output.status.code(), Some(0), "{}", stderr_text(&output));
    let verdicts = parse_stdout(&output.stdout);
    assert_eq!(verdicts.len(), 2);
    let decisions = ["allow", "hold", "deny"];
    assert!(decisions.contains(&verdicts[0]["decision"].as_str().unwrap_or("?")));
    assert_verdict_of(&verdicts[1], SHELL, "deny");
}

// 7. A closed stdout.

#[test]
fn a_closed_stdout_ends_the_gate_quietly() {
    let scratch = Scratch::new();
    let mut input = Vec::with_capacity(200_000 * (PAYMENT.len() + 1));
    for _ in 0..200_000 {
        input.extend_from_slice(PAYMENT.as_bytes());
        input.push(b'\n');
    }
    let calls = scratch.write("calls.jsonl", input);

    let mut child = StdCommand::new(bin_path("sc-gate"))
        .arg("--quiet")
        .arg("--audit")
        .arg(scratch.audit_path())
        .arg(&calls)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sc-gate starts");
    let stderr = drain(child.stderr.take().unwrap());
    {
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let verdict: Value = serde_json::from_str(&first).expect("the first line is a verdict");
        assert_verdict_of(&verdict, PAYMENT, "hold");
        // Dropping the reader closes the pipe's read end.
    }
    let status = wait_bounded(&mut child, PROCESS_LIMIT);
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.is_empty(),
        "a closed stdout is not worth a message: {stderr}"
    );
    assert_eq!(status.code(), Some(0), "{stderr}");
}

// 8. Streaming.

#[test]
fn a_verdict_leaves_as_soon_as_its_call_is_read() {
    let scratch = Scratch::new();
    let mut child = StdCommand::new(bin_path("sc-gate"))
        .arg("--audit")
        .arg(scratch.audit_path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("sc-gate starts");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (lines_tx, lines) = mpsc::channel();
    let reader = thread::spawn(move || {
        for line in stdout.lines() {
            if lines_tx.send(line.expect("stdout is readable")).is_err() {
                break;
            }
        }
    });

    // Generous for a loaded machine: what is proved is that the verdict comes while stdin is
    // still open, not how fast.
    let wait = Duration::from_secs(30);
    writeln!(stdin, "{PAYMENT}").unwrap();
    stdin.flush().unwrap();
    let first = lines.recv_timeout(wait);
    let second = first.as_ref().ok().map(|_| {
        writeln!(stdin, "{WEATHER}").unwrap();
        stdin.flush().unwrap();
        lines.recv_timeout(wait)
    });
    drop(stdin);
    let status = wait_bounded(&mut child, PROCESS_LIMIT);
    reader.join().unwrap();

    let first = first.expect("a verdict of the first call while stdin is still open");
    assert_verdict_of(&serde_json::from_str(&first).unwrap(), PAYMENT, "hold");
    let second = second
        .unwrap()
        .expect("a verdict of the second call while stdin is still open");
    assert_verdict_of(&serde_json::from_str(&second).unwrap(), WEATHER, "allow");
    assert!(lines.try_recv().is_err(), "more verdicts than calls");
    assert_eq!(status.code(), Some(0));
    assert_eq!(scratch.audit_events().len(), 2);
}

// 9. Concurrent appends.

#[test]
fn concurrent_gates_share_one_audit_log_without_torn_lines() {
    const PROCESSES: usize = 8;
    const CALLS: usize = 1000;
    let scratch = Scratch::new();
    // Long lines, so that every process appends many batches.
    let padding = "p".repeat(500);
    let mut children = Vec::new();
    for p in 0..PROCESSES {
        let input: String = (0..CALLS)
            .map(|i| {
                json!({
                    "agent": format!("agent-{p}"),
                    "tool": "get_weather",
                    "args": {"q": i},
                    "source": "user",
                    "instruction": padding,
                })
                .to_string()
                    + "\n"
            })
            .collect();
        let calls = scratch.write(&format!("calls-{p}.jsonl"), input);
        let out = File::create(scratch.path(&format!("out-{p}.jsonl"))).unwrap();
        let child = StdCommand::new(bin_path("sc-gate"))
            .arg("--quiet")
            .arg("--audit")
            .arg(scratch.audit_path())
            .arg(calls)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(Stdio::piped())
            .spawn()
            .expect("sc-gate starts");
        children.push(child);
    }
    let mut stdout_ids = Vec::new();
    for (p, mut child) in children.into_iter().enumerate() {
        let stderr = drain(child.stderr.take().unwrap());
        let status = wait_bounded(&mut child, PROCESS_LIMIT);
        let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
        assert_eq!(status.code(), Some(0), "process {p}: {stderr}");
        let out = std::fs::read_to_string(scratch.path(&format!("out-{p}.jsonl"))).unwrap();
        let verdicts = parse_lines(&out);
        assert_eq!(verdicts.len(), CALLS, "process {p}");
        stdout_ids.extend(ids_of(&verdicts));
    }

    let log = std::fs::read_to_string(scratch.audit_path()).unwrap();
    assert!(log.ends_with('\n'));
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), PROCESSES * CALLS);
    let mut audit_ids = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let event: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("audit line {} is torn ({e}): {line:.120}", n + 1));
        assert_eq!(event["stage"], "gate");
        audit_ids.push(event["id"].as_str().expect("an id").to_owned());
    }
    assert_distinct(&audit_ids);
    let audit_set: HashSet<&String> = audit_ids.iter().collect();
    let stdout_set: HashSet<&String> = stdout_ids.iter().collect();
    assert_eq!(audit_set, stdout_set);
}

// 10. Narration.

#[test]
fn narration_names_each_decision_and_quiet_silences_it() {
    let scratch = Scratch::new();
    let input = format!("{WEATHER}\n{PAYMENT}\n\n{SHELL}\n[]\n");

    let output = run(scratch.cmd("sc-gate").write_stdin(input.clone()));
    assert!(output.status.success(), "{}", stderr_text(&output));
    assert_eq!(parse_stdout(&output.stdout).len(), 4);
    let stderr = stderr_text(&output);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{stderr}");
    for (line, word) in lines.iter().zip(["ALLOW", "HOLD", "DENY", "DENY"]) {
        assert!(line.contains(word), "{line:?} lacks {word}");
    }
    assert!(lines[1].contains("buyer") && lines[1].contains("send_payment"));

    let quiet = run(scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .write_stdin(input.clone()));
    assert!(quiet.status.success());
    assert_eq!(parse_stdout(&quiet.stdout).len(), 4);
    assert!(quiet.stderr.is_empty(), "{}", stderr_text(&quiet));

    let short = run(scratch.cmd("sc-gate").arg("-q").write_stdin(input));
    assert!(short.status.success());
    assert!(short.stderr.is_empty(), "{}", stderr_text(&short));
}

#[test]
fn agent_written_escape_sequences_never_reach_stderr_raw() {
    let scratch = Scratch::new();
    let clear_screen =
        r#"{"agent":"evil\u001b[2J","tool":"send_payment","args":{"amount":5},"source":"user"}"#;
    let in_tool = r#"{"agent":"a","tool":"search\u001b[31m_web\u202e"}"#;
    let output = run(scratch
        .cmd("sc-gate")
        .write_stdin(format!("{clear_screen}\n{in_tool}\n")));
    assert!(output.status.success(), "{}", stderr_text(&output));

    let verdicts = parse_stdout(&output.stdout);
    assert_eq!(verdicts.len(), 2);
    // The verdict still carries the call untouched.
    assert_eq!(verdicts[0]["call"]["agent"], "evil\u{1b}[2J");

    assert!(
        !output.stderr.contains(&0x1b),
        "raw ESC on stderr: {:?}",
        stderr_text(&output)
    );
    let stderr = stderr_text(&output);
    assert!(
        !stderr.contains('\u{202e}'),
        "raw bidi override: {stderr:?}"
    );
    assert_eq!(stderr.lines().count(), 2, "{stderr:?}");
    // Shown escaped, not dropped.
    assert!(
        stderr.contains("evil") && stderr.contains("[2J"),
        "{stderr:?}"
    );
}

// 11. A missing input file.

#[test]
fn a_missing_input_file_is_reported_and_the_others_are_still_read() {
    let scratch = Scratch::new();
    let a = scratch.write("a.jsonl", format!("{}\n", tagged_call("a1")));
    let b = scratch.write("b.jsonl", format!("{}\n", tagged_call("b1")));
    let output = run(scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .arg(&a)
        .arg("no-such-calls.jsonl")
        .arg(&b));
    let stderr = stderr_text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no-such-calls.jsonl"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let verdicts = parse_stdout(&output.stdout);
    let agents: Vec<&Value> = verdicts.iter().map(|v| &v["call"]["agent"]).collect();
    assert_eq!(agents, [&json!("a1"), &json!("b1")]);
    assert_eq!(scratch.audit_events().len(), 2);
}

// 12. A stdin that cannot be read.

#[test]
fn a_directory_as_stdin_is_a_runtime_failure_without_a_panic() {
    let scratch = Scratch::new();
    let dir = File::open(scratch.dir.path()).unwrap();
    let output = StdCommand::new(bin_path("sc-gate"))
        .current_dir(scratch.dir.path())
        .arg("--quiet")
        .arg("--audit")
        .arg(scratch.audit_path())
        .stdin(dir)
        .output()
        .expect("sc-gate runs");
    let stderr = stderr_text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.trim().is_empty());
    assert!(stderr.contains("stdin"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn an_amount_just_above_the_limit_is_held_though_it_rounds_to_the_limit() {
    let scratch = Scratch::new();
    let lines = [
        r#"{"agent":"a","tool":"send_payment","args":{"to":"x","amount":100.0000000000000001},"source":"user"}"#,
        r#"{"agent":"a","tool":"send_payment","args":{"to":"x","amount":"$100.0000000000000001"},"source":"user"}"#,
        r#"{"agent":"a","tool":"send_payment","args":{"to":"x","amount":100.000},"source":"user"}"#,
        r#"{"agent":"a","tool":"send_payment","args":{"to":"x","amount":1e2},"source":"user"}"#,
    ];
    let output = run(scratch
        .cmd("sc-gate")
        .arg("-q")
        .write_stdin(lines.join("\n") + "\n"));
    let decisions: Vec<Value> = parse_stdout(&output.stdout)
        .iter()
        .map(|v| v["decision"].clone())
        .collect();
    assert_eq!(
        decisions,
        [json!("hold"), json!("hold"), json!("allow"), json!("allow")]
    );
}

// 13. Lines read ahead on a thread of their own, handed over in batches.

/// Many lines of every kind, far more than one batch holds (512 lines, 64 KiB): each verdict
/// comes in the order of its line, and the records pass in their place.
#[test]
fn many_lines_of_every_kind_keep_their_order_across_batches() {
    let scratch = Scratch::new();
    let record =
        r#"{"kind":"task","agent":"planner","source":"user","instruction":"plan the trip"}"#;
    // Denied by the reading of records, not by that of calls.
    let bad_record = r#"{"kind":"task","agent":"planner"}"#;
    let mut input = String::new();
    let mut expected = Vec::new();
    for n in 0..6000 {
        match n % 7 {
            0 => input.push_str("  \n"),
            1 => {
                input.push_str("not json\n");
                expected.push("malformed".to_owned());
            }
            2 if n % 3 == 0 => {
                input.push_str(&format!(
                    "{{\"agent\":\"{}\",\"tool\":\"t\"}}\n",
                    "y".repeat(300)
                ));
                expected.push("too long".to_owned());
            }
            3 if n % 5 == 0 => {
                input.push_str(record);
                input.push('\n');
                expected.push("record".to_owned());
            }
            4 if n % 5 == 0 => {
                input.push_str(bad_record);
                input.push('\n');
                expected.push("malformed".to_owned());
            }
            _ => {
                input.push_str(&tagged_call(&format!("c{n}")));
                input.push('\n');
                expected.push(format!("c{n}"));
            }
        }
    }
    let output = run(scratch
        .cmd("sc-gate")
        .args(["--quiet", "--max-line-bytes", "200"])
        .write_stdin(input));
    assert_eq!(output.status.code(), Some(0), "{}", stderr_text(&output));
    let seen: Vec<String> = parse_stdout(&output.stdout)
        .iter()
        .map(|line| {
            if line.get("kind").is_some() {
                "record".to_owned()
            } else if let Some(agent) = line["call"]["agent"].as_str() {
                agent.to_owned()
            } else if line["reasons"].to_string().contains("over the line limit") {
                "too long".to_owned()
            } else {
                "malformed".to_owned()
            }
        })
        .collect();
    assert_eq!(seen.len(), expected.len());
    assert!(seen == expected, "the output is out of order");
    // One event per verdict and record, in the same order.
    let events = scratch.audit_events();
    assert_eq!(events.len(), expected.len());
}

/// An input that fails to be read after thousands of lines were read from the one before it:
/// the gate stops with the read error, naming the input, and what it wrote before is a prefix
/// of the verdicts in order, each audited.
#[test]
fn a_read_error_after_many_lines_ends_the_gate_naming_the_input() {
    let scratch = Scratch::new();
    let calls: String = (0..3000)
        .map(|n| tagged_call(&format!("c{n}")) + "\n")
        .collect();
    let good = scratch.write("good.jsonl", calls);
    // A folder opens like a file, and reading it fails.
    let folder = scratch.path("a-folder");
    std::fs::create_dir(&folder).unwrap();
    let output = run(scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .arg(&good)
        .arg(&folder));
    let stderr = stderr_text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot read") && stderr.contains("a-folder"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let verdicts = parse_stdout(&output.stdout);
    // Batches of verdicts left while the good input was read.
    assert!(!verdicts.is_empty());
    for (n, verdict) in verdicts.iter().enumerate() {
        assert_eq!(verdict["call"]["agent"], json!(format!("c{n}")));
    }
    let audited: HashSet<String> = ids_of(&scratch.audit_events()).into_iter().collect();
    assert!(ids_of(&verdicts).iter().all(|id| audited.contains(id)));
}
