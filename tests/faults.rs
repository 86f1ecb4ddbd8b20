//! Faults at the worst moment (issue 3): a killed approver, a killed gate, SIGINT to the whole
//! pipeline while a hold waits, audit logs that cannot be written, policies that cannot be read.
//! Each must fail closed: nothing unapproved runs, and no decision goes missing from the log.

use std::fs::OpenOptions;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use serde_json::Value;

use crate::util::{bin_path, parse_lines, parse_stdout, testdata, Scratch};

/// sc-hook under `policy`, with its audit log, home and state folder in `scratch`, each stream
/// piped.
fn hook_command(scratch: &Scratch, policy: &std::path::Path) -> Command {
    let mut cmd = Command::new(bin_path("sc-hook"));
    cmd.arg("--policy")
        .arg(policy)
        .arg("--audit")
        .arg(scratch.audit_path())
        .env("HOME", scratch.path("home"))
        .env("XDG_STATE_HOME", scratch.path("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// `command` given `input` on its standard input, run to its end.
fn answered(command: &mut Command, input: &Value) -> std::process::Output {
    use std::io::Write;
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.to_string().as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// Claude Code's PreToolUse of `Bash` running `command`, in the scratch folder.
fn bash_call(scratch: &Scratch, command: &str) -> Value {
    serde_json::json!({"session_id": "s", "transcript_path": "/dev/null",
        "cwd": scratch.dir.path(), "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": "t"})
}

fn stage(scratch: &Scratch, bin: &str) -> Command {
    let mut cmd = Command::new(bin_path(bin));
    cmd.env_clear()
        .current_dir(scratch.dir.path())
        .arg("--quiet")
        .arg("--audit")
        .arg(scratch.audit_path());
    // A stage takes SIGINT as a person's Ctrl-C does, however the tests were started: a shell
    // that starts a command in the background without job control has it ignore SIGINT, and
    // children inherit that.
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::signal::signal(Signal::SIGINT, nix::sys::signal::SigHandler::SigDfl)
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
    cmd
}

/// A FIFO for the scripted human's answers, held open for writing and never written: the
/// approver blocks at its first hold exactly as it does at a person's prompt.
fn silent_answers(scratch: &Scratch) -> (std::path::PathBuf, std::fs::File) {
    let fifo = scratch.path("answers.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // Read and write, so opening does not wait for a reader.
    let writer = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    (fifo, writer)
}

/// Waits until the audit log holds an event matching `pred`, or panics after 60 s (a deadline
/// for a loaded machine, not a measure of speed). The log is read while stages write it, so its
/// torn tail is left out ([`Scratch::audit_events`]).
fn wait_for_event(scratch: &Scratch, pred: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if scratch.audit_events().iter().any(&pred) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no such audit event: {:#?}", scratch.audit_events());
}

fn wait_bounded(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "a stage did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn report_json(scratch: &Scratch) -> Value {
    let out = scratch.cmd_report_args(&["--json"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Starts gate | approve (waiting on silent answers) | exec over the demo crew, all three in one
/// process group led by the gate. Returns the children and the held writer of the answers FIFO.
fn waiting_pipeline(scratch: &Scratch) -> (Vec<Child>, std::fs::File) {
    let (fifo, writer) = silent_answers(scratch);
    let mut gate = stage(scratch, "sc-gate")
        .arg(testdata("crew.jsonl"))
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let group = gate.id() as i32;
    let mut approve = stage(scratch, "sc-approve")
        .arg("--answers")
        .arg(&fifo)
        .stdin(gate.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .process_group(group)
        .spawn()
        .unwrap();
    let exec = stage(scratch, "sc-exec")
        .stdin(approve.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .process_group(group)
        .spawn()
        .unwrap();
    (vec![gate, approve, exec], writer)
}

#[test]
fn a_killed_approver_leaves_the_hold_unanswered_and_unrun() {
    let scratch = Scratch::new();
    let (mut children, _writer) = waiting_pipeline(&scratch);
    // The gate has decided everything; the approver is now waiting on the buyer's hold.
    wait_for_event(&scratch, |e| {
        e["stage"] == "gate" && e["decision"] == "deny"
    });
    std::thread::sleep(Duration::from_millis(200));
    kill(Pid::from_raw(children[1].id() as i32), Signal::SIGKILL).unwrap();
    let exec = children.pop().unwrap();
    let out = exec.wait_with_output().unwrap();
    for child in &mut children {
        wait_bounded(child);
    }
    let records = parse_stdout(&out.stdout);
    assert!(
        records.iter().all(|r| r["decision"] != "hold"),
        "the hold reached sc-exec: {records:?}"
    );
    let executed: Vec<_> = scratch
        .audit_events()
        .into_iter()
        .filter(|e| e["stage"] == "exec" && e["outcome"]["status"] == "executed")
        .collect();
    assert!(
        executed.iter().all(|e| e["tool"] != "send_payment"),
        "{executed:?}"
    );
    let report = report_json(&scratch);
    assert_eq!(report["holds"]["unanswered"], 1, "{report:#}");
    assert_eq!(report["holds"]["approved"], 0);
}

#[test]
fn sigint_to_the_whole_pipeline_while_a_hold_waits_runs_nothing_unapproved() {
    let scratch = Scratch::new();
    let (mut children, _writer) = waiting_pipeline(&scratch);
    wait_for_event(&scratch, |e| {
        e["stage"] == "gate" && e["decision"] == "deny"
    });
    std::thread::sleep(Duration::from_millis(200));
    killpg(Pid::from_raw(children[0].id() as i32), Signal::SIGINT).unwrap();
    // The gate may have finished before the signal; the others die of it. Either way, all end.
    for child in &mut children {
        wait_bounded(child);
    }
    let unapproved_runs: Vec<_> = scratch
        .audit_events()
        .into_iter()
        .filter(|e| {
            e["stage"] == "exec" && e["outcome"]["status"] == "executed" && e["decision"] != "allow"
        })
        .collect();
    assert!(unapproved_runs.is_empty(), "{unapproved_runs:?}");
    assert!(scratch
        .audit_events()
        .iter()
        .all(|e| e["stage"] != "approve"));
    assert_eq!(report_json(&scratch)["holds"]["unanswered"], 1);
}

#[test]
fn a_gate_killed_mid_stream_leaves_whole_lines_or_a_torn_last_line_the_report_survives() {
    let scratch = Scratch::new();
    let call = r#"{"agent":"scout","tool":"search_web","args":{"query":"flights to Lisbon in May, padded to make each audit event long enough to be written in many pieces"},"source":"user"}"#;
    let input = scratch.write("many.jsonl", format!("{call}\n").repeat(300_000));
    let mut gate = stage(&scratch, "sc-gate")
        .arg(&input)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_event(&scratch, |e| e["stage"] == "gate");
    std::thread::sleep(Duration::from_millis(100));
    kill(Pid::from_raw(gate.id() as i32), Signal::SIGKILL).unwrap();
    gate.wait().unwrap();
    let text = std::fs::read_to_string(scratch.audit_path()).unwrap();
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let torn = lines.last().is_some_and(|l| !l.ends_with('\n'));
    if torn {
        lines.pop();
    }
    assert!(!lines.is_empty());
    let whole = parse_lines(&lines.concat());
    assert_eq!(
        whole.len(),
        lines.len(),
        "every complete line is a whole event"
    );
    let report = report_json(&scratch);
    assert_eq!(report["calls"], whole.len() as u64);
    assert_eq!(
        report["problems"].as_array().unwrap().len(),
        usize::from(torn)
    );
}

/// `bin` with its audit log at `audit`, changed by `set`, given one line and run to its end:
/// sc-gate a call, sc-approve (answers from `/dev/null`) and sc-exec a held verdict.
fn one_line_through(
    bin: &str,
    audit: &std::path::Path,
    set: impl FnOnce(&mut Command),
) -> std::process::Output {
    let mut cmd = Command::new(bin_path(bin));
    cmd.env_clear().arg("--audit").arg(audit);
    if bin == "sc-approve" {
        cmd.arg("--answers").arg("/dev/null");
    }
    set(&mut cmd);
    let input = if bin == "sc-gate" {
        r#"{"agent":"a","tool":"search_web","args":{"query":"q"},"source":"user"}"#
    } else {
        r#"{"id":"v-1","call":{"agent":"a","tool":"search_web","args":{"query":"q"},"source":"user"},"decision":"hold","reasons":["r"]}"#
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let _ = child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{input}\n").as_bytes());
    child.wait_with_output().unwrap()
}

#[test]
fn an_audit_log_that_cannot_be_written_stops_every_stage_before_any_record() {
    let scratch = Scratch::new();
    let a_file = scratch.write("a-file", "not a folder");
    let folder = scratch.path("a-folder");
    std::fs::create_dir(&folder).unwrap();
    let unwritable = [
        "/dev/full".to_owned(),
        // Read-only even for root (the tests run as root, for whom folder modes are no bar).
        "/proc/version".to_owned(),
        folder.display().to_string(),
        a_file.join("audit.jsonl").display().to_string(),
    ];
    for audit in &unwritable {
        for bin in ["sc-gate", "sc-approve", "sc-exec"] {
            let out = one_line_through(bin, std::path::Path::new(audit), |_| {});
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{bin} --audit {audit}: {stderr}"
            );
            assert!(
                stderr.contains("audit log"),
                "{bin} --audit {audit}: {stderr}"
            );
            assert!(
                out.stdout.is_empty(),
                "{bin} --audit {audit} emitted an unaudited record"
            );
        }
    }
}

#[test]
fn a_policy_that_cannot_be_read_exits_2_from_every_deciding_stage() {
    let scratch = Scratch::new();
    let folder = scratch.path("policy-folder");
    std::fs::create_dir(&folder).unwrap();
    let empty = scratch.write("empty.json", "");
    let policies = [
        scratch.path("missing.json"),
        folder,
        empty,
        // Unreadable even for root: reading it fails with EIO.
        std::path::PathBuf::from("/proc/self/mem"),
    ];
    for policy in &policies {
        for bin in ["sc-gate", "sc-exec"] {
            let out = stage(&scratch, bin)
                .arg("--policy")
                .arg(policy)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{bin} --policy {}: {stderr}",
                policy.display()
            );
            assert!(stderr.contains(&policy.display().to_string()), "{stderr}");
            assert!(out.stdout.is_empty());
        }
    }
}

/// Without `/proc` (a container or sandbox that does not mount it), sc-hook cannot find its own
/// binary, so it cannot protect it or the sandbox's machinery from the file tools: the call is
/// blocked (exit 2), never judged without them. Found by a review: the protection was skipped
/// silently and a `Write` of sc-hook itself got no decision.
#[test]
fn sc_hook_without_proc_blocks_the_call_rather_than_leave_its_binary_unprotected() {
    if Command::new("bwrap").arg("--version").output().is_err() {
        eprintln!("skipped: no bubblewrap (make test-deps installs it)");
        return;
    }
    let scratch = Scratch::new();
    let policy = testdata("../policies/claude-code.json");
    let input = serde_json::json!({
        "session_id": "s-1",
        "transcript_path": "/dev/null",
        "cwd": scratch.dir.path(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": bin_path("sc-hook"), "content": "x"},
        "tool_use_id": "toolu_1",
    });
    let run = |proc_mounted: bool| {
        let mut cmd = Command::new("bwrap");
        cmd.args(["--bind", "/", "/", "--dev", "/dev"]);
        if proc_mounted {
            cmd.args(["--proc", "/proc"]);
        } else {
            cmd.args(["--tmpfs", "/proc"]);
        }
        cmd.arg(bin_path("sc-hook"))
            .arg("--policy")
            .arg(&policy)
            .arg("--audit")
            .arg(scratch.audit_path())
            .env("HOME", scratch.path("home"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(input.to_string().as_bytes()).unwrap();
        }
        child.wait_with_output().unwrap()
    };
    // With /proc, the write to sc-hook is denied by name.
    let seen = run(true);
    assert_eq!(seen.status.code(), Some(0), "{seen:?}");
    assert!(
        String::from_utf8_lossy(&seen.stdout).contains("\"deny\""),
        "{seen:?}"
    );
    // Without it, the call is blocked with a reason.
    let blind = run(false);
    assert_eq!(blind.status.code(), Some(2), "{blind:?}");
    assert!(
        String::from_utf8_lossy(&blind.stderr).contains("is /proc mounted"),
        "{blind:?}"
    );
}

/// A hook the agent stops waiting for lets the call run (Claude Code, Codex and Gemini CLI after
/// their hook `timeout`), so sc-hook answers its own refusal first: at `--timeout` (25 s by
/// default, below the 30 s `sc-hook install` gives each agent) the call is blocked as the agent's
/// contract blocks one. Two ways a hook gets stuck: an input that never ends, and a state store
/// another process keeps locked (SQLite would wait 10 s before it failed).
#[test]
fn a_hook_not_decided_within_its_timeout_refuses_the_call_as_its_agent_blocks() {
    use std::io::Write;
    let scratch = Scratch::new();
    let policy = testdata("../policies/claude-code.json");
    let command = |args: &[&str]| {
        let mut cmd = hook_command(&scratch, &policy);
        cmd.args(args);
        cmd
    };
    let hook = |args: &[&str]| command(args).spawn().unwrap();
    // Bounded: a hook that never ends is killed and the test fails.
    let finished = |mut child: Child| {
        use std::io::Read;
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("sc-hook did not end within 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        child
            .stdout
            .take()
            .unwrap()
            .read_to_end(&mut stdout)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut stderr)
            .unwrap();
        std::process::Output {
            status,
            stdout,
            stderr,
        }
    };
    let refused_by_the_deadline = |out: &std::process::Output| {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("not decided within 1 s (--timeout)")
                && stderr.contains("the tool call is blocked"),
            "{out:?}"
        );
    };

    // An input that never ends: Claude Code's block, exit 2, nothing on stdout.
    let mut waiting = hook(&["--timeout", "1"]);
    let stdin = waiting.stdin.take().unwrap();
    let out = finished(waiting);
    drop(stdin);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    refused_by_the_deadline(&out);

    // Found by a review: a parent that blocked SIGALRM (a blocked signal survives exec), and
    // a stderr nobody reads (a full pipe, where the refusal's own write would block). Both
    // still end, refused.
    let mut blocked = command(&["--timeout", "1"]);
    blocked_in_the_child(&mut blocked, Signal::SIGALRM);
    let mut child = blocked.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let out = finished(child);
    drop(stdin);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    refused_by_the_deadline(&out);
    let (full_read, full_write) = nix::unistd::pipe().unwrap();
    nix::fcntl::fcntl(
        &full_write,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .unwrap();
    let mut pipe_write = std::fs::File::from(full_write.try_clone().unwrap());
    while pipe_write.write(&[b'x'; 4096]).is_ok() {}
    nix::fcntl::fcntl(
        &full_write,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
    )
    .unwrap();
    let mut child = command(&["--timeout", "1"])
        .stderr(Stdio::from(full_write))
        .spawn()
        .unwrap();
    drop(pipe_write);
    let stdin = child.stdin.take().unwrap();
    child.stderr = Some(std::process::ChildStderr::from(std::os::fd::OwnedFd::from(
        std::fs::File::open("/dev/null").unwrap(),
    )));
    let out = finished(child);
    drop((stdin, full_read));
    assert_eq!(out.status.code(), Some(2), "{out:?}");

    // The state store locked by another process, after the input said which agent this is:
    // Copilot CLI's block is its deny answer with status 0, one line of it.
    let call = |command: &str| {
        serde_json::json!({"timestamp": 1_767_000_000_000u64, "cwd": scratch.dir.path(),
                           "toolName": "bash",
                           "toolArgs": serde_json::json!({"command": command}).to_string()})
    };
    let ask = |args: &[&str], input: &Value| {
        let mut child = hook(args);
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.to_string().as_bytes()).unwrap();
        drop(stdin);
        finished(child)
    };
    let first = ask(&["--for", "copilot"], &call("git status"));
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let store = scratch.audit_path().with_file_name("state.sqlite");
    let holder = rusqlite::Connection::open(&store).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out = ask(&["--for", "copilot", "--timeout", "1"], &call("git status"));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{out:?}");
    let answer: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(answer["permissionDecision"], "deny", "{out:?}");
    assert!(answer["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("--timeout"));
    refused_by_the_deadline(&out);
    // Copilot CLI's deny answer to a stdout nobody reads (its write fails): status 2, not the
    // 0 of a deny answer given whole, whether the answer is the decision's, the deadline's
    // (the store locked) or an error's; and never a second answer after a torn first.
    let create = serde_json::json!({"timestamp": 1_767_000_000_000u64, "cwd": scratch.dir.path(),
        "toolName": "create",
        "toolArgs": serde_json::json!({"path": ".github/hooks/x.json", "file_text": "{}"}).to_string()});
    let unread = |args: &[&str]| {
        let (closed_read, closed_write) = nix::unistd::pipe().unwrap();
        drop(closed_read);
        let mut child = command(args)
            .stdout(Stdio::from(closed_write))
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(create.to_string().as_bytes()).unwrap();
        drop(stdin);
        child.stdout = Some(std::process::ChildStdout::from(std::os::fd::OwnedFd::from(
            std::fs::File::open("/dev/null").unwrap(),
        )));
        finished(child)
    };
    for args in [
        &["--for", "copilot", "--timeout", "1"][..],
        &["--for", "copilot", "--timeout", "30"],
    ] {
        let out = unread(args);
        assert_eq!(out.status.code(), Some(2), "{args:?} {out:?}");
    }
    holder.execute_batch("ROLLBACK").unwrap();
    let out = unread(&["--for", "copilot"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    // Claude Code's input, the same store: exit 2.
    let claude = serde_json::json!({
        "session_id": "s-1", "transcript_path": "/dev/null", "cwd": scratch.dir.path(),
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "git status"}, "tool_use_id": "toolu_1",
    });
    let out = ask(&["--timeout", "1"], &claude);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    refused_by_the_deadline(&out);
    // Unlocked, the same call is decided as before.
    holder.execute_batch("ROLLBACK").unwrap();
    let out = ask(&["--timeout", "1"], &claude);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// Starts `command` with `signal` blocked, as a parent that blocked it would (a blocked signal
/// survives exec).
fn blocked_in_the_child(command: &mut Command, signal: Signal) {
    // SAFETY: only sigprocmask between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let mut set = nix::sys::signal::SigSet::empty();
            set.add(signal);
            nix::sys::signal::sigprocmask(nix::sys::signal::SigmaskHow::SIG_BLOCK, Some(&set), None)
                .map_err(std::io::Error::from)
        });
    }
}

/// A hook ended by `signal` refused its call as its agent blocks: `said` and the block on
/// stderr; for Claude Code exit 2 and nothing on stdout, for Copilot CLI its deny answer.
fn refused_as_its_agent_blocks(
    out: &std::process::Output,
    agent: Option<&str>,
    said: &str,
    signal: Signal,
) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(said) && stderr.contains("the tool call is blocked"),
        "{signal}: {out:?}"
    );
    match agent {
        None => {
            assert_eq!(out.status.code(), Some(2), "{signal}: {out:?}");
            assert!(out.stdout.is_empty(), "{out:?}");
        }
        Some(_) => {
            let answer: Value = serde_json::from_slice(&out.stdout).expect("a deny answer");
            assert_eq!(answer["permissionDecision"], "deny", "{answer}");
        }
    }
}

/// Waits until sc-hook blocks reading its input: its signal handlers are set by then.
fn reading_its_input(child: &Child) {
    // `read` (0) of file descriptor 0.
    waits_in(child, "0 0x0 ", "read its input");
}

/// Waits until `child` waits in the system call that `/proc/PID/syscall` starts with `call`.
fn waits_in(child: &Child, call: &str, what: &str) {
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let syscall = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
        if syscall.starts_with(call) {
            return;
        }
        assert!(Instant::now() < deadline, "sc-hook never {what}: {syscall}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A stop that comes while sc-hook writes its answer waits for the answer: answered at once, it
/// ended the process with no answer at all, which Cursor reads as a yes (a review saw it in 1
/// Cursor run of 300). Here the answer's write waits on a full pipe when the stop comes.
#[test]
fn a_stop_while_the_answer_is_written_waits_for_the_answer() {
    use std::io::{Read as _, Write as _};
    use std::os::fd::AsFd as _;
    let scratch = Scratch::new();
    let policy = testdata("../policies/claude-code.json");
    let project = scratch.path("proj");
    std::fs::create_dir_all(&project).unwrap();
    let (mut reader, mut writer) = std::io::pipe().unwrap();
    // Filled, the pipe takes no byte of the answer until this test reads.
    let flags = |writer: &std::io::PipeWriter, nonblocking: bool| {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let flags = if nonblocking {
            OFlag::O_NONBLOCK
        } else {
            OFlag::empty()
        };
        fcntl(writer.as_fd(), FcntlArg::F_SETFL(flags)).unwrap();
    };
    flags(&writer, true);
    let mut filled = 0;
    loop {
        match writer.write(&[b'.'; 4096]) {
            Ok(wrote) => filled += wrote,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(err) => panic!("{err}"),
        }
    }
    flags(&writer, false);
    let mut command = hook_command(&scratch, &policy);
    command.args(["--for", "cursor"]).stdout(writer);
    let mut child = command.spawn().unwrap();
    // The test's own copy of the pipe's end: else the read below never ends.
    drop(command);
    let input = serde_json::json!({"hook_event_name": "beforeShellExecution",
        "command": "git push", "cwd": project, "conversation_id": "c", "generation_id": "g",
        "workspace_roots": [project]});
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.to_string().as_bytes()).unwrap();
    drop(stdin);
    // `write` (1) to file descriptor 1.
    waits_in(&child, "1 0x1 ", "wrote its answer");
    let pid = child.id();
    kill(Pid::from_raw(pid as i32), Signal::SIGTERM).unwrap();
    // The stop is taken (the process ends) or held (pending) before the pipe is read: read at
    // once, the answer could get through before the stop's handler ran.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .map(str::trim)
                .unwrap_or_default()
                .to_string()
        };
        let pending = u64::from_str_radix(&field("ShdPnd:"), 16).unwrap();
        if field("State:").starts_with('Z') || pending & (1 << (libc::SIGTERM - 1)) != 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stop was never taken: {status}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut stdout = Vec::new();
    reader.read_to_end(&mut stdout).unwrap();
    let out = child.wait_with_output().unwrap();
    let answer = &stdout[filled.min(stdout.len())..];
    assert_eq!(
        out.status.code(),
        Some(0),
        "{out:?} {}",
        String::from_utf8_lossy(answer)
    );
    let answer: Value = serde_json::from_slice(answer).expect("the hook's answer");
    assert_eq!(answer["permission"], "ask", "{answer}");
}

/// A hook stopped by a signal (the agent's Ctrl-C reaches its hooks too, a session's end sends
/// `SIGHUP`, a supervisor `SIGTERM`) is read by its agent as no answer, and the call would run:
/// sc-hook refuses it as its agent blocks instead. A stop its parent ignores stays ignored.
#[test]
fn a_hook_that_is_stopped_refuses_the_call_as_its_agent_blocks() {
    let scratch = Scratch::new();
    let policy = testdata("../policies/claude-code.json");
    for (signal, agent) in [
        (Signal::SIGTERM, None),
        (Signal::SIGINT, None),
        (Signal::SIGHUP, None),
        (Signal::SIGTERM, Some("copilot")),
        // Any other signal whose default ends a process: a terminal's Ctrl-\, a user's.
        (Signal::SIGQUIT, None),
        (Signal::SIGUSR1, Some("copilot")),
        (Signal::SIGPROF, None),
    ] {
        let mut command = hook_command(&scratch, &policy);
        if let Some(agent) = agent {
            command.args(["--for", agent]);
        }
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        reading_its_input(&child);
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        refused_as_its_agent_blocks(&out, agent, "sc-hook was stopped", signal);
    }
    // A stop before the handler is set (here: held pending from before the program started,
    // as one that comes while the command line is read is held) is refused once it is set.
    let mut command = hook_command(&scratch, &policy);
    blocked_in_the_child(&mut command, Signal::SIGTERM);
    let mut child = command.spawn().unwrap();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let stdin = child.stdin.take().unwrap();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("sc-hook was stopped"),
        "{out:?}"
    );
    // Ignored by the parent (a background job, `nohup`): the signal is dropped as it is sent,
    // and the call is decided as without it.
    let mut command = hook_command(&scratch, &policy);
    // SAFETY: only signal between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::signal(libc::SIGINT, libc::SIG_IGN) == libc::SIG_ERR {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    reading_its_input(&child);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let input = serde_json::json!({
        "session_id": "s-stop", "transcript_path": "/dev/null", "cwd": scratch.dir.path(),
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "git status"}, "tool_use_id": "toolu_stop",
    });
    use std::io::Write as _;
    stdin.write_all(input.to_string().as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("stopped"),
        "{out:?}"
    );
}

/// A hook that crashes is read by its agent as no answer, and the call would run: sc-hook
/// refuses it as its agent blocks instead, whatever the fault (a bug in the C library or SQLite,
/// a stack overflow, an abort). Here the fault is sent while the hook waits on its input.
#[test]
fn a_hook_that_crashes_refuses_the_call_as_its_agent_blocks() {
    let scratch = Scratch::new();
    let policy = testdata("../policies/claude-code.json");
    // The last: a parent that blocked the fault (a blocked signal survives exec).
    for (signal, agent, blocked) in [
        (Signal::SIGSEGV, None, false),
        (Signal::SIGBUS, None, false),
        (Signal::SIGABRT, None, false),
        (Signal::SIGXCPU, None, false),
        (Signal::SIGSYS, None, false),
        (Signal::SIGSEGV, Some("copilot"), false),
        (Signal::SIGSEGV, None, true),
    ] {
        let mut command = hook_command(&scratch, &policy);
        if let Some(agent) = agent {
            command.args(["--for", agent]);
        }
        if blocked {
            blocked_in_the_child(&mut command, signal);
        }
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        // The handlers are set before the input is read: wait until the hook reads it.
        reading_its_input(&child);
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        refused_as_its_agent_blocks(&out, agent, "sc-hook crashed", signal);
    }
}

/// A command the shell parser panics on is read as dynamic and held, at every agent: the panic
/// unwinds to the parser's guard. It once reached the hook's panic handler first, which ended
/// the process with nothing on stdout: refused for Claude Code, and let through by Cursor, which
/// reads a hook that prints nothing as a yes (found by a review).
#[test]
fn a_command_the_parser_panics_on_is_held_at_every_agent() {
    let scratch = Scratch::new();
    let policy = testdata("../policies/claude-code.json");
    let project = scratch.path("proj");
    std::fs::create_dir_all(&project).unwrap();
    let command = "rm -rf ~/important\necho ${<<EOF ${a}\nEOF";
    let claude = serde_json::json!({"session_id": "s", "transcript_path": "/dev/null",
        "cwd": project, "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": "t"});
    let cursor = serde_json::json!({"hook_event_name": "beforeShellExecution",
        "command": command, "cwd": project, "conversation_id": "c", "generation_id": "g",
        "workspace_roots": [project]});
    for (args, input, decision) in [
        (&[][..], claude, "/hookSpecificOutput/permissionDecision"),
        (&["--for", "cursor"][..], cursor, "/permission"),
    ] {
        let out = answered(hook_command(&scratch, &policy).args(args), &input);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        let answer: Value = serde_json::from_slice(&out.stdout).expect("an answer");
        assert_eq!(
            answer.pointer(decision),
            Some(&Value::from("ask")),
            "{answer}"
        );
        assert!(
            answer.to_string().contains("brush-parser panicked"),
            "{answer}"
        );
    }
}

/// A file size limit (`ulimit -f`) the audit log runs into fails the write, which is refused as
/// any failure is; its signal (`SIGXFSZ`) once ended the hook with no answer.
#[test]
fn a_file_size_limit_refuses_the_call() {
    let scratch = Scratch::new();
    let policy = testdata("../policies/claude-code.json");
    let input = bash_call(&scratch, "git status");
    let mut command = hook_command(&scratch, &policy);
    with_file_size_limit(&mut command, 64);
    let out = answered(&mut command, &input);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the tool call is blocked"),
        "{out:?}"
    );
}

/// `command` run under a file size limit of `bytes` (`ulimit -f`).
fn with_file_size_limit(command: &mut Command, bytes: u64) {
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A file size limit the audit log runs into stops every stage with its reason and no record;
/// its signal (`SIGXFSZ`) once ended them with no word (a shell said status 153).
#[test]
fn a_file_size_limit_stops_every_stage_with_its_reason() {
    use std::os::unix::process::ExitStatusExt;
    for bin in ["sc-gate", "sc-approve", "sc-exec"] {
        let scratch = Scratch::new();
        let out = one_line_through(bin, &scratch.audit_path(), |cmd| {
            with_file_size_limit(cmd, 64)
        });
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.signal(),
            None,
            "{bin}: {:?} {stderr}",
            out.status
        );
        assert_eq!(out.status.code(), Some(1), "{bin}: {stderr}");
        assert!(
            stderr.contains("cannot write the audit log") && stderr.contains("File too large"),
            "{bin}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{bin} emitted an unaudited record");
    }
}

/// What a stage starts meets the file size limit as it would without the stage: a backend that
/// writes past it is ended by `SIGXFSZ`, which sc-exec reports; the stage's own answer to the
/// signal is not passed on.
#[test]
fn a_backend_under_a_file_size_limit_meets_it_as_it_would_alone() {
    let scratch = Scratch::new();
    let big = scratch.path("big");
    let tools = scratch.write(
        "tools.json",
        serde_json::json!({"write_note": {
            "command": ["/bin/sh", "-c", "exec head -c 2097152 /dev/zero > \"$BIG\""],
            "env": {"PATH": "/usr/bin:/bin", "BIG": big},
        }})
        .to_string(),
    );
    let record = serde_json::json!({"id": "n-1", "call": {"agent": "scribe", "tool": "write_note",
        "args": {"title": "t"}, "source": "user"}, "decision": "allow", "reasons": ["r"]});
    let mut cmd = Command::new(bin_path("sc-exec"));
    cmd.env_clear()
        .arg("--audit")
        .arg(scratch.audit_path())
        .arg("--tools")
        .arg(&tools);
    with_file_size_limit(&mut cmd, 1 << 20);
    let out = answered(
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
        &record,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("was ended by signal SIGXFSZ"),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::metadata(&big).unwrap().len(), 1 << 20);
}

/// Interval timers survive `exec`: a parent's profiling timer (`SIGPROF`, whose default is to
/// end the process) once killed the hook with no answer; it stops them first (found by a review).
#[test]
fn a_timer_left_running_by_the_parent_does_not_end_the_hook() {
    let scratch = Scratch::new();
    let policy = testdata("../policies/claude-code.json");
    let input = bash_call(&scratch, "rm -rf /");
    let mut command = hook_command(&scratch, &policy);
    // SAFETY: only setitimer between fork and exec.
    unsafe {
        command.pre_exec(|| {
            // 10 ms of CPU time, then every 10 ms: the hook's call takes more than that.
            let every = libc::timeval {
                tv_sec: 0,
                tv_usec: 10_000,
            };
            let timer = libc::itimerval {
                it_interval: every,
                it_value: every,
            };
            if libc::setitimer(libc::ITIMER_PROF, &timer, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = answered(&mut command, &input);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("an answer");
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
}

/// A parent's profiling timer that fired before the hook stopped it: its `SIGPROF` waits, held,
/// and was once taken as a stop once the hook's handlers were set, blocking the call (seen on a
/// loaded machine). Made certain here: the signal is held and pending before `exec`.
#[test]
fn a_timer_signal_already_pending_at_start_does_not_stop_the_hook() {
    let scratch = Scratch::new();
    let policy = testdata("../policies/claude-code.json");
    let input = bash_call(&scratch, "rm -rf /");
    let mut command = hook_command(&scratch, &policy);
    // SAFETY: only sigprocmask, setitimer and sigpending between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let mut prof: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut prof);
            libc::sigaddset(&mut prof, libc::SIGPROF);
            libc::sigaddset(&mut prof, libc::SIGVTALRM);
            libc::sigprocmask(libc::SIG_BLOCK, &prof, std::ptr::null_mut());
            let soon = libc::timeval {
                tv_sec: 0,
                tv_usec: 1,
            };
            let timer = libc::itimerval {
                it_interval: libc::timeval {
                    tv_sec: 0,
                    tv_usec: 0,
                },
                it_value: soon,
            };
            for which in [libc::ITIMER_PROF, libc::ITIMER_VIRTUAL] {
                if libc::setitimer(which, &timer, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // Burn CPU time until both signals wait.
            loop {
                let mut pending: libc::sigset_t = std::mem::zeroed();
                libc::sigpending(&mut pending);
                if libc::sigismember(&pending, libc::SIGPROF) == 1
                    && libc::sigismember(&pending, libc::SIGVTALRM) == 1
                {
                    break;
                }
            }
            Ok(())
        });
    }
    let out = answered(&mut command, &input);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("an answer");
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
}
