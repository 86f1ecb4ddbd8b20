//! sc-exec's write-ahead record: no backend starts unless the audit log already holds its call's
//! `exec-start` event; the `exec` event with the outcome follows. Checked from inside the
//! backend (a copy of the log taken while it runs), in the log, under `sc-report --verify`
//! (keyed and unkeyed), and in the report's counts.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::{parse_lines, parse_stdout, Scratch};

const PROCESS_LIMIT: Duration = Duration::from_secs(60);

/// Two notes written by a backend, and a denied shell command that never runs.
const CALLS: &str = concat!(
    r#"{"agent":"scribe","tool":"write_note","args":{"title":"one"},"source":"user"}"#,
    "\n",
    r#"{"agent":"scribe","tool":"write_note","args":{"title":"two"},"source":"user"}"#,
    "\n",
    r#"{"agent":"scribe","tool":"shell_exec","args":{"cmd":"rm -rf /"},"source":"user"}"#,
    "\n",
);

/// A tools file whose `write_note` copies the audit log, as it stands while it runs, into
/// `snapshots/` (numbered in the order the backend ran).
fn tools(scratch: &Scratch) -> PathBuf {
    let snapshots = scratch.path("snapshots");
    std::fs::create_dir_all(&snapshots).unwrap();
    let script =
        r#"n=$(ls "$SNAPSHOTS" | wc -l); cp "$LOG" "$SNAPSHOTS/$n.jsonl"; echo '{"written":true}'"#;
    scratch.write(
        "tools.json",
        json!({
            "write_note": {"command": ["/bin/sh", "-c", script],
                "env": {"PATH": "/usr/bin:/bin", "LOG": scratch.audit_path(), "SNAPSHOTS": snapshots}},
            "shell_exec": {"command": ["/bin/sh", "-c", "echo '{}'"]},
        })
        .to_string(),
    )
}

fn key(scratch: &Scratch) -> PathBuf {
    let path = scratch.write("audit.key", "0123456789abcdef0123456789abcdef");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// sc-gate, then sc-exec with the tools file, both on the scratch log (keyed with `key`);
/// returns sc-exec's records.
fn pipeline(scratch: &Scratch, key: Option<&Path>) -> Vec<Value> {
    let keyed = |cmd: &mut assert_cmd::Command| {
        if let Some(key) = key {
            cmd.arg("--audit-key").arg(key);
        }
    };
    let mut gate = scratch.cmd("sc-gate");
    keyed(&mut gate);
    let verdicts = gate
        .arg("-q")
        .timeout(PROCESS_LIMIT)
        .write_stdin(CALLS)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let mut exec = scratch.cmd("sc-exec");
    keyed(&mut exec);
    let out = exec
        .arg("-q")
        .arg("--tools")
        .arg(tools(scratch))
        .timeout(PROCESS_LIMIT)
        .write_stdin(verdicts)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    parse_stdout(&out)
}

fn at(events: &[Value], stage: &str, id: &Value) -> Option<usize> {
    events
        .iter()
        .position(|e| e["stage"] == stage && &e["id"] == id)
}

fn report(scratch: &Scratch, args: &[&str]) -> (i32, String) {
    let out = scratch.cmd_report_args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn each_backend_starts_only_once_its_start_is_in_the_log() {
    for keyed in [false, true] {
        let scratch = Scratch::new();
        let key = keyed.then(|| key(&scratch));
        let out = pipeline(&scratch, key.as_deref());
        let statuses: Vec<&str> = out
            .iter()
            .map(|r| r["outcome"]["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["executed", "executed", "skipped"], "{out:?}");
        let (one, two, denied) = (&out[0]["id"], &out[1]["id"], &out[2]["id"]);
        let events = scratch.audit_events();

        // In the log: a start before each run's `exec` event, none for the call not run, and
        // still exactly one `exec` event a record.
        for id in [one, two] {
            let start = at(&events, "exec-start", id).expect("a start");
            let exec = at(&events, "exec", id).expect("an exec event");
            assert!(start < exec, "keyed {keyed}: {events:#?}");
            let start = &events[start];
            assert_eq!(start["agent"], "scribe", "{start}");
            assert_eq!(start["tool"], "write_note", "{start}");
            assert_eq!(start["decision"], "allow", "{start}");
            assert_eq!(start["backend"], json!({"command": "/bin/sh"}), "{start}");
            assert!(start.get("outcome").is_none(), "{start}");
            assert_eq!(start["mac"].is_string(), keyed, "{start}");
        }
        assert_eq!(at(&events, "exec-start", denied), None, "{events:#?}");
        let execs = events.iter().filter(|e| e["stage"] == "exec").count();
        assert_eq!(execs, out.len());

        // Seen by each backend while it ran: its own start, and no outcome of its own.
        let seen = |n: usize| {
            let path = scratch.path(&format!("snapshots/{n}.jsonl"));
            parse_lines(&std::fs::read_to_string(path).unwrap())
        };
        for (n, id) in [one, two].into_iter().enumerate() {
            let seen = seen(n);
            assert!(at(&seen, "exec-start", id).is_some(), "run {n}: {seen:#?}");
            assert_eq!(at(&seen, "exec", id), None, "run {n}: {seen:#?}");
        }

        // The chain verifies, under the key when there is one.
        let mut args = vec!["--verify"];
        let key_arg = key.as_ref().map(|k| k.display().to_string());
        if let Some(key_arg) = &key_arg {
            args.extend(["--audit-key", key_arg]);
        }
        let (code, stdout) = report(&scratch, &args);
        assert_eq!(code, 0, "keyed {keyed}: {stdout}");
        assert!(
            stdout.contains(&format!("{} events, chain intact", events.len())),
            "{stdout}"
        );
    }
}

#[test]
fn the_report_counts_each_execution_once() {
    let scratch = Scratch::new();
    pipeline(&scratch, None);
    let text = std::fs::read_to_string(scratch.audit_path()).unwrap();
    let starts = text.matches(r#""stage":"exec-start""#).count();
    assert_eq!(starts, 2, "{text}");
    let (code, with) = report(&scratch, &["--format", "json"]);
    assert_eq!(code, 0, "{with}");
    let with: Value = serde_json::from_str(&with).unwrap();
    assert_eq!(with["problems"], json!([]), "{with}");
    assert_eq!(
        with["outcomes"],
        json!({"executed": 2, "skipped": 1, "failed": 0})
    );

    // The same log without its starts reports the same calls and outcomes.
    let without: String = text
        .lines()
        .filter(|line| !line.contains(r#""stage":"exec-start""#))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(scratch.audit_path(), &without).unwrap();
    let (_, stripped) = report(&scratch, &["--format", "json"]);
    let stripped: Value = serde_json::from_str(&stripped).unwrap();
    for key in [
        "calls",
        "decisions",
        "holds",
        "outcomes",
        "agents",
        "vetoes",
    ] {
        assert_eq!(with[key], stripped[key], "{key}");
    }
    assert_eq!(
        with["events"].as_u64().unwrap(),
        stripped["events"].as_u64().unwrap() + 2
    );

    // Every format reads the starts without a problem.
    std::fs::write(scratch.audit_path(), &text).unwrap();
    for format in ["text", "markdown", "html"] {
        let (code, shown) = report(&scratch, &["--format", format]);
        assert_eq!(code, 0, "{format}: {shown}");
        assert!(
            !shown.contains("unknown stage") && !shown.contains("exec-start"),
            "{format}: {shown}"
        );
    }
}

#[test]
fn a_start_whose_outcome_never_came_is_a_problem_of_the_report() {
    // The backend kills sc-exec while it runs: its start is in the log, its outcome never is.
    let scratch = Scratch::new();
    let tools = scratch.write(
        "tools.json",
        json!({"write_note": {"command": ["/bin/sh", "-c", "kill -KILL $PPID; echo '{}'"]}})
            .to_string(),
    );
    let verdicts = scratch
        .cmd("sc-gate")
        .arg("-q")
        .timeout(PROCESS_LIMIT)
        .write_stdin(
            r#"{"agent":"scribe","tool":"write_note","args":{"title":"one"},"source":"user"}"#,
        )
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let id = parse_stdout(&verdicts)[0]["id"].clone();
    let killed = scratch
        .cmd("sc-exec")
        .arg("-q")
        .arg("--tools")
        .arg(&tools)
        .timeout(PROCESS_LIMIT)
        .write_stdin(verdicts)
        .output()
        .unwrap();
    assert_eq!(killed.status.code(), None, "sc-exec was killed: {killed:?}");
    let events = scratch.audit_events();
    assert!(at(&events, "exec-start", &id).is_some(), "{events:#?}");
    assert_eq!(at(&events, "exec", &id), None, "{events:#?}");

    let (_, text) = report(&scratch, &[]);
    let problem = format!(
        "exec-start for id {} has no exec event in the logs read",
        id.as_str().unwrap()
    );
    assert!(text.contains(&problem), "{text}");
    let (_, json) = report(&scratch, &["--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    let problems = json["problems"].as_array().expect("problems");
    assert!(
        problems.iter().any(|p| p["problem"]
            .as_str()
            .is_some_and(|text| text.starts_with(&problem))
            && p["line"] == 2),
        "{json:#}"
    );
}
