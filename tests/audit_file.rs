//! An audit log that is not a regular file (`/dev/null`, `/dev/full`, a FIFO) takes every event
//! and keeps none: each stage and door refuses it when it opens it, before any call is judged or
//! run, and `sc-report --verify` refuses to call it intact. A link to a regular file is still a
//! log.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::util::{bare_cmd, parse_stdout, testdata, Scratch};

/// Long enough for any stage on a busy machine; a stage that waits on a FIFO is killed at it.
const PROCESS_LIMIT: Duration = Duration::from_secs(60);

const CALL: &str = r#"{"agent":"a","tool":"search_web","args":{"query":"q"},"source":"user"}"#;
const VERDICT: &str = r#"{"id":"v-1","call":{"agent":"a","tool":"search_web","args":{"query":"q"},"source":"user"},"decision":"allow","reasons":["r"]}"#;

/// The logs that are not regular files, each with what the refusal calls it: two character
/// devices and a FIFO made in the scratch folder.
fn not_regular(scratch: &Scratch) -> Vec<(PathBuf, &'static str)> {
    let fifo = scratch.path("audit.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    vec![
        (PathBuf::from("/dev/null"), "a character device"),
        (PathBuf::from("/dev/full"), "a character device"),
        (fifo, "a FIFO (named pipe)"),
        // fstat calls it a regular file; it keeps nothing written to it.
        (
            PathBuf::from("/proc/self/comm"),
            "a file of the kernel's proc file system",
        ),
    ]
}

fn refusal(verb: &str, log: &Path, kind: &str) -> String {
    format!(
        "cannot {verb} the audit log {}: it is {kind}, not a regular file",
        log.display()
    )
}

/// A run that stopped with exit status 1, said `refusal` on stderr and wrote nothing to stdout.
fn assert_refused(out: &Output, refusal: &str, what: &str) {
    let said = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{what}: {said}");
    assert!(said.contains(refusal), "{what}: {said}");
    assert!(
        out.stdout.is_empty(),
        "{what} let something through: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_pipeline_stages_refuse_a_log_that_is_not_a_regular_file() {
    let scratch = Scratch::new();
    for (log, kind) in not_regular(&scratch) {
        for (bin, input) in [
            ("sc-gate", CALL),
            ("sc-approve", VERDICT),
            ("sc-exec", VERDICT),
        ] {
            let mut cmd = bare_cmd(bin);
            cmd.current_dir(scratch.dir.path()).arg("--audit").arg(&log);
            if bin == "sc-approve" {
                cmd.args(["--answers", "/dev/null"]);
            }
            let out = cmd
                .write_stdin(format!("{input}\n"))
                .timeout(PROCESS_LIMIT)
                .output()
                .unwrap();
            assert_refused(&out, &refusal("open", &log, kind), bin);
        }
    }
}

#[test]
fn sc_hook_blocks_the_call_when_its_log_is_not_a_regular_file() {
    let scratch = Scratch::new();
    let policy = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/claude-code.json");
    let input = std::fs::read_to_string(testdata("claude-code/bash.json")).unwrap();
    for (log, kind) in not_regular(&scratch) {
        let out = bare_cmd("sc-hook")
            .current_dir(scratch.dir.path())
            .arg("--policy")
            .arg(&policy)
            .arg("--audit")
            .arg(&log)
            .arg("--state")
            .arg(scratch.path("state/state.sqlite"))
            .write_stdin(input.clone())
            .timeout(PROCESS_LIMIT)
            .output()
            .unwrap();
        let said = stderr(&out);
        // Blocked as Claude Code's contract blocks a call: exit 2, the reason on stderr.
        assert_eq!(out.status.code(), Some(2), "{}: {said}", log.display());
        assert!(said.contains(&refusal("open", &log, kind)), "{said}");
        assert!(said.contains("blocked"), "{said}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn sc_mcp_stops_before_its_server_starts_when_its_log_is_not_a_regular_file() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let received = scratch.path("server-received.jsonl");
    for (log, kind) in not_regular(&scratch) {
        let out = bare_cmd("sc-mcp")
            .current_dir(scratch.dir.path())
            .env("FAKE_MCP_LOG", &received)
            .arg("--policy")
            .arg(&policy)
            .arg("--audit")
            .arg(&log)
            .arg("--")
            .arg("python3")
            .arg(testdata("mcp/fake-server.py"))
            .write_stdin(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#
                    .to_owned()
                    + "\n",
            )
            .timeout(PROCESS_LIMIT)
            .output()
            .unwrap();
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{}: {said}", log.display());
        assert!(said.contains(&refusal("open", &log, kind)), "{said}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!received.exists(), "the server was started");
    }
}

#[test]
fn a_link_to_a_regular_file_is_still_the_log() {
    let scratch = Scratch::new();
    let real = scratch.path("real/audit.jsonl");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    let link = scratch.path("audit-link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = bare_cmd("sc-gate")
        .current_dir(scratch.dir.path())
        .args(["--quiet", "--audit"])
        .arg(&link)
        .write_stdin(format!("{CALL}\n"))
        .timeout(PROCESS_LIMIT)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(parse_stdout(&out.stdout).len(), 1);
    assert_eq!(std::fs::read_to_string(&real).unwrap().lines().count(), 1);
    let verified = bare_cmd("sc-report")
        .arg("--verify")
        .arg(&link)
        .timeout(PROCESS_LIMIT)
        .output()
        .unwrap();
    assert_eq!(verified.status.code(), Some(0), "{}", stderr(&verified));
    assert!(
        String::from_utf8_lossy(&verified.stdout).contains("1 events, chain intact"),
        "{verified:?}"
    );
}

#[test]
fn sc_report_refuses_to_verify_a_log_that_is_not_a_regular_file() {
    let scratch = Scratch::new();
    for (log, kind) in not_regular(&scratch) {
        for args in [
            &["--verify"][..],
            &["--verify", "--json"],
            &["--head"],
            &["--verify", "--format", "html"],
        ] {
            let out = bare_cmd("sc-report")
                .current_dir(scratch.dir.path())
                .args(args)
                .arg(&log)
                .timeout(PROCESS_LIMIT)
                .output()
                .unwrap();
            assert_refused(&out, &refusal("verify", &log, kind), &format!("{args:?}"));
        }
    }
}

/// The key file and the state file are refused too when they are not regular files, each as
/// its own kind of error: a key is a usage error (exit 2), a state store one that cannot be
/// opened (exit 1). A FIFO as the key is refused at once, not waited on for a writer.
#[test]
fn a_key_or_a_state_file_that_is_not_a_regular_file_is_refused_too() {
    let scratch = Scratch::new();
    // The kernel's files are the log's own check (a key there is refused by its mode first).
    let devices_and_fifos = not_regular(&scratch)
        .into_iter()
        .filter(|(path, _)| !path.starts_with("/proc"));
    for (path, _) in devices_and_fifos {
        let out = scratch
            .cmd("sc-gate")
            .arg("--audit-key")
            .arg(&path)
            .write_stdin(format!("{CALL}\n"))
            .timeout(PROCESS_LIMIT)
            .output()
            .unwrap();
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}: {said}", path.display());
        assert!(
            said.contains(&format!("audit key {}: not a regular file", path.display())),
            "{said}"
        );
        assert!(out.stdout.is_empty());
        let out = scratch
            .cmd("sc-gate")
            .arg("--state")
            .arg(&path)
            .write_stdin(format!("{CALL}\n"))
            .timeout(PROCESS_LIMIT)
            .output()
            .unwrap();
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{}: {said}", path.display());
        assert!(
            said.contains(&format!(
                "state store unavailable: sqlite:{}",
                path.display()
            )),
            "{said}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_log_that_is_the_stages_own_stdout_is_refused() {
    // Records written at stdout's own offset would land over the events.
    let scratch = Scratch::new();
    let log = scratch.path("same.jsonl");
    let stdout = std::fs::File::create(&log).unwrap();
    let calls = scratch.write("calls.jsonl", CALL);
    let out = std::process::Command::new(crate::util::bin_path("sc-gate"))
        .arg("-q")
        .arg("--audit")
        .arg(&log)
        .stdin(std::fs::File::open(&calls).unwrap())
        .stdout(stdout)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "cannot open the audit log {}: it is this stage's own standard output",
            log.display()
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&log).unwrap(), b"", "nothing written");
}
