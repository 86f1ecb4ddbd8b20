//! The whole story with real processes: sc-gate | sc-approve | sc-exec, then sc-report, and
//! `make demo` itself.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::{
    drain, parse_lines, parse_stdout, run_three_stages, stage, testdata, wait_all, Scratch,
};

/// How long the three-stage pipeline may take before it is treated as hung.
const PIPELINE_LIMIT: Duration = Duration::from_secs(60);
/// `make demo` runs `cargo build`, which may wait on another build's lock.
const MAKE_LIMIT: Duration = Duration::from_secs(900);

/// Runs sc-gate on the crew, through sc-approve (with `answers`, or with no terminal at all),
/// into sc-exec, and returns sc-exec's records.
fn run_pipeline(scratch: &Scratch, answers: Option<&Path>) -> Vec<Value> {
    let mut gate = stage(scratch, "sc-gate");
    gate.arg(testdata("crew.jsonl")).stdin(Stdio::null());
    let mut approve = stage(scratch, "sc-approve");
    if let Some(answers) = answers {
        approve.arg("--answers").arg(answers);
    }
    let exec = stage(scratch, "sc-exec");
    parse_stdout(&run_three_stages(
        gate,
        approve,
        exec,
        PIPELINE_LIMIT,
        "the demo",
    ))
}

fn report_json(scratch: &Scratch) -> Value {
    let output = crate::util::bare_cmd("sc-report")
        .arg("--json")
        .arg(scratch.audit_path())
        .timeout(PIPELINE_LIMIT)
        .assert()
        .code(0)
        .get_output()
        .clone();
    serde_json::from_slice(&output.stdout).expect("the report is JSON")
}

fn call_of(record: &Value) -> (&str, &str) {
    (
        record["call"]["agent"]
            .as_str()
            .unwrap_or_else(|| panic!("{record}")),
        record["call"]["tool"]
            .as_str()
            .unwrap_or_else(|| panic!("{record}")),
    )
}

/// The three stories every run tells alike: scout searched, helper's injected payment was denied.
fn check_scout_and_helper(records: &[Value]) {
    assert_eq!(records.len(), 3, "{records:?}");
    let calls: Vec<(&str, &str)> = records.iter().map(call_of).collect();
    assert_eq!(
        calls,
        [
            ("scout", "search_web"),
            ("buyer", "send_payment"),
            ("helper", "send_payment")
        ]
    );

    let scout = &records[0];
    assert_eq!(scout["decision"], "allow", "{scout}");
    assert_eq!(scout["outcome"]["status"], "executed", "{scout}");
    assert_eq!(
        scout["outcome"]["result"]["query"], "flights to Lisbon in May",
        "{scout}"
    );
    assert!(scout.get("approval").is_none(), "{scout}");

    let helper = &records[2];
    assert_eq!(helper["decision"], "deny", "{helper}");
    assert_eq!(helper["outcome"]["status"], "skipped", "{helper}");
    assert!(helper["outcome"].get("result").is_none(), "{helper}");
    assert!(helper.get("approval").is_none(), "{helper}");

    let ids: Vec<&str> = records.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert!(ids.iter().all(|id| !id.is_empty()), "{ids:?}");
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
        "{ids:?}"
    );
}

#[test]
fn the_demo_pipeline_tells_the_whole_story() {
    let scratch = Scratch::new();
    let records = run_pipeline(&scratch, Some(&testdata("answers.txt")));
    check_scout_and_helper(&records);

    let buyer = &records[1];
    assert_eq!(buyer["decision"], "hold", "{buyer}");
    assert_eq!(buyer["approval"]["approved"], true, "{buyer}");
    assert_eq!(buyer["approval"]["by"], "answers", "{buyer}");
    assert_eq!(buyer["outcome"]["status"], "executed", "{buyer}");
    assert_eq!(buyer["outcome"]["result"]["to"], "acme-travel", "{buyer}");
    assert_eq!(buyer["outcome"]["result"]["amount"], 750, "{buyer}");

    // Every stage audited every call it handled, joined on the id.
    let events = scratch.audit_events();
    let stages_for = |id: &Value| -> Vec<String> {
        let mut stages: Vec<String> = events
            .iter()
            .filter(|e| &e["id"] == id)
            .map(|e| e["stage"].as_str().unwrap().to_owned())
            .collect();
        stages.sort();
        stages
    };
    assert_eq!(stages_for(&records[0]["id"]), ["exec", "gate"]);
    assert_eq!(stages_for(&records[1]["id"]), ["approve", "exec", "gate"]);
    assert_eq!(stages_for(&records[2]["id"]), ["exec", "gate"]);
    assert_eq!(events.len(), 7, "{events:?}");

    let report = report_json(&scratch);
    assert_eq!(report["calls"], 3);
    assert_eq!(
        report["decisions"],
        json!({"allow": 1, "hold": 1, "deny": 1})
    );
    assert_eq!(
        report["holds"],
        json!({"approved": 1, "declined": 0, "unanswered": 0})
    );
    assert_eq!(
        report["outcomes"],
        json!({"executed": 2, "skipped": 1, "failed": 0})
    );
    let vetoes = report["vetoes"].as_array().unwrap();
    assert_eq!(vetoes.len(), 1, "{vetoes:?}");
    assert_eq!(vetoes[0]["kind"], "deny");
    assert_eq!(vetoes[0]["agent"], "helper");
    assert_eq!(vetoes[0]["tool"], "send_payment");
    assert_eq!(vetoes[0]["id"], records[2]["id"]);
    assert_eq!(vetoes[0]["reasons"], records[2]["reasons"]);
    assert_eq!(report["problems"], json!([]));
}

#[test]
fn with_no_terminal_and_no_answers_the_payment_is_declined() {
    let scratch = Scratch::new();
    let records = run_pipeline(&scratch, None);
    check_scout_and_helper(&records);

    let buyer = &records[1];
    assert_eq!(buyer["decision"], "hold", "{buyer}");
    assert_eq!(buyer["approval"]["approved"], false, "{buyer}");
    assert_eq!(buyer["approval"]["by"], "none", "{buyer}");
    assert_eq!(buyer["outcome"]["status"], "skipped", "{buyer}");
    assert!(buyer["outcome"].get("result").is_none(), "{buyer}");

    let report = report_json(&scratch);
    assert_eq!(report["calls"], 3);
    assert_eq!(
        report["decisions"],
        json!({"allow": 1, "hold": 1, "deny": 1})
    );
    assert_eq!(
        report["holds"],
        json!({"approved": 0, "declined": 1, "unanswered": 0})
    );
    assert_eq!(
        report["outcomes"],
        json!({"executed": 1, "skipped": 2, "failed": 0})
    );
    let vetoes: Vec<(&str, &str)> = report["vetoes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["kind"].as_str().unwrap(), v["agent"].as_str().unwrap()))
        .collect();
    assert_eq!(vetoes.len(), 2, "{vetoes:?}");
    assert!(vetoes.contains(&("declined", "buyer")), "{vetoes:?}");
    assert!(vetoes.contains(&("deny", "helper")), "{vetoes:?}");
}

#[test]
fn make_demo_runs_the_story() {
    let scratch = Scratch::new();
    let audit = scratch.path("demo/audit.jsonl");
    let repo = env!("CARGO_MANIFEST_DIR");
    let mut make = Command::new("make");
    make.current_dir(repo)
        .arg("--no-print-directory")
        .arg("demo")
        .arg(format!("AUDIT={}", audit.display()))
        // A `make test` around us must not lend its jobserver or flags to this make.
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = make.spawn().expect("spawn make");
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let mut children = [("make demo", child)];
    let status = wait_all(&mut children, MAKE_LIMIT)[0];
    let stdout = String::from_utf8_lossy(&stdout.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert_eq!(
        status.code(),
        Some(0),
        "make demo failed:\n{stderr}\n{stdout}"
    );

    for word in ["ALLOW", "HOLD", "DENY", "executed", "never run"] {
        assert!(stderr.contains(word), "{word:?} not on stderr:\n{stderr}");
    }
    assert!(stdout.contains("3 calls"), "no report on stdout:\n{stdout}");
    assert!(stdout.contains("1 allow, 1 hold, 1 deny"), "{stdout}");
    assert!(stdout.contains("helper"), "{stdout}");

    // The demo wrote to the audit log it was given, and only there.
    let events = parse_lines(&std::fs::read_to_string(&audit).expect("the demo's audit log"));
    assert_eq!(events.len(), 7, "{events:?}");
}

/// Each stage widens the pipe it writes to 256 KiB (`skeleton_crew::jsonl::pipe`), so a batch
/// no longer fills it and stops the stage; the pipe it reads, its caller's, is left as it was; the
/// records pass through the same.
#[test]
fn each_stage_widens_the_pipe_it_writes() {
    use std::io::Write;
    use std::os::unix::process::CommandExt;

    use nix::fcntl::{fcntl, FcntlArg, OFlag};

    let scratch = Scratch::new();
    let mut bytes = std::fs::read(testdata("crew.jsonl")).unwrap();
    for bin in ["sc-gate", "sc-approve", "sc-exec"] {
        // Close-on-exec, as std's own pipes: a stage that inherited the write end of its own
        // input would never see it end.
        let (in_read, in_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
        let (out_read, out_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
        // 64 KiB, or 8 KiB for a user past its pipe quota.
        let input_before = fcntl(&in_read, FcntlArg::F_GETPIPE_SZ).unwrap();
        let output_before = fcntl(&out_read, FcntlArg::F_GETPIPE_SZ).unwrap();
        // Kept to ask the pipe's size once the stage is gone; a reader's copy does not hold
        // back the stage's end of input.
        let input_kept = in_read.try_clone().unwrap();
        let output_kept = out_read.try_clone().unwrap();
        let mut command = stage(&scratch, bin);
        // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
        unsafe {
            command.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
        let mut child = command
            .stdin(Stdio::from(in_read))
            .stdout(Stdio::from(out_write))
            .spawn()
            .unwrap();
        drop(command);
        let stderr = drain(child.stderr.take().unwrap());
        let output = drain(std::fs::File::from(out_read));
        let mut writer = std::fs::File::from(in_write);
        writer.write_all(&bytes).unwrap();
        drop(writer);
        let status = wait_all(&mut [(bin, child)], PIPELINE_LIMIT);
        let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
        assert!(status[0].success(), "{bin}: {stderr}");
        assert_eq!(
            fcntl(&input_kept, FcntlArg::F_GETPIPE_SZ).unwrap(),
            input_before,
            "{bin}'s stdin is its caller's"
        );
        let output_after = fcntl(&output_kept, FcntlArg::F_GETPIPE_SZ).unwrap();
        // A user at its pipe quota (other programs' pipes) is refused any wider pipe, and the
        // stage then works on with the pipe as it was.
        assert!(
            output_after == 256 << 10 || output_after == output_before,
            "{bin}'s stdout: {output_after}"
        );
        if unbound_by_quota() {
            // A stage that may pass the quota (root with CAP_SYS_RESOURCE) is never refused.
            assert_eq!(output_after, 256 << 10, "{bin}'s stdout, past the quota");
        }
        let records = output.join().unwrap();
        assert_eq!(
            parse_stdout(&records).len(),
            parse_stdout(&bytes).len(),
            "{bin}: a record for every line"
        );
        bytes = records;
    }
    // The records that came through are the whole story, as through the shell's pipes.
    let records = parse_stdout(&bytes);
    assert!(
        records.iter().all(|r| r["outcome"].is_object()),
        "{records:?}"
    );
}

/// Whether this process, and so a stage it starts, may pass the pipe quota: it holds
/// `CAP_SYS_RESOURCE` or `CAP_SYS_ADMIN` (root in a container may hold neither).
fn unbound_by_quota() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let effective = status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_SYS_RESOURCE: u32 = 24;
    effective & (1 << CAP_SYS_ADMIN | 1 << CAP_SYS_RESOURCE) != 0
}
