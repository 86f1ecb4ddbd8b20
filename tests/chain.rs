//! The audit log's hash chain and the report for CI, through the real binaries (issue 5).

use std::os::unix::fs::PermissionsExt;
use std::process::{Command as StdCommand, Stdio};

use crate::util::{bin_path, testdata, Scratch};

/// Runs the demo pipeline once, all three stages appending to the scratch log.
fn pipeline(scratch: &Scratch, extra: &[&str]) -> std::process::Child {
    let audit = scratch.audit_path();
    let stage = |bin: &str| {
        let mut cmd = StdCommand::new(bin_path(bin));
        cmd.env_clear()
            .arg("--quiet")
            .arg("--audit")
            .arg(&audit)
            .args(extra);
        cmd
    };
    let mut gate = stage("sc-gate")
        .arg(testdata("crew.jsonl"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut approve = stage("sc-approve")
        .arg("--answers")
        .arg(testdata("answers.txt"))
        .stdin(gate.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let exec = stage("sc-exec")
        .stdin(approve.stdout.take().unwrap())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(gate.wait().unwrap().success());
    assert!(approve.wait().unwrap().success());
    exec
}

fn report(scratch: &Scratch, args: &[&str]) -> (i32, String, String) {
    let out = scratch.cmd_report_args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn lines(scratch: &Scratch) -> Vec<String> {
    std::fs::read_to_string(scratch.audit_path())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(scratch: &Scratch, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(scratch.audit_path(), text).unwrap();
}

fn key_file(scratch: &Scratch, name: &str, contents: &str) -> std::path::PathBuf {
    let path = scratch.write(name, contents);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

#[test]
fn several_pipelines_at_once_leave_an_intact_chain() {
    let scratch = Scratch::new();
    let running: Vec<_> = (0..4).map(|_| pipeline(&scratch, &[])).collect();
    for mut exec in running {
        assert!(exec.wait().unwrap().success());
    }
    let (code, stdout, _) = report(&scratch, &["--verify"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("28 events, chain intact, head "),
        "{stdout}"
    );
}

#[test]
fn each_tampering_is_detected_and_named_with_its_line() {
    let scratch = Scratch::new();
    pipeline(&scratch, &[]).wait().unwrap();
    let original = lines(&scratch);
    assert_eq!(original.len(), 7);
    let (_, head, _) = report(&scratch, &["--head"]);
    let head = head.trim().to_owned();

    let mut edited = original.clone();
    edited[1] = edited[1].replacen("750", "75", 1);
    let mut deleted = original.clone();
    deleted.remove(2);
    let mut inserted = original.clone();
    inserted.insert(3, original[1].clone());
    let mut swapped = original.clone();
    swapped.swap(3, 4);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (edited, "line 3 (edited)"),
        (deleted, "line 3 (deleted)"),
        (inserted, "line 4 (inserted)"),
        (swapped, "line 4 (reordered)"),
    ];
    for (tampered, expected) in cases {
        write_lines(&scratch, &tampered);
        let (code, stdout, _) = report(&scratch, &["--verify"]);
        assert_eq!(code, 1, "{expected}: {stdout}");
        assert!(stdout.contains(expected), "{expected}: {stdout}");
    }

    // A torn last line.
    let mut torn = original.join("\n");
    torn.truncate(torn.len() - 20);
    std::fs::write(scratch.audit_path(), torn).unwrap();
    let (code, stdout, _) = report(&scratch, &["--verify"]);
    assert_eq!(code, 1);
    assert!(stdout.contains("line 7 (torn)"), "{stdout}");

    // A cut tail passes without the stored head and fails with it.
    write_lines(&scratch, &original[..5]);
    assert_eq!(report(&scratch, &["--verify"]).0, 0);
    let (code, stdout, _) = report(&scratch, &["--verify", "--expect-head", &head]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("(cut)"), "{stdout}");
    write_lines(&scratch, &original);
    assert_eq!(report(&scratch, &["--verify", "--expect-head", &head]).0, 0);
}

#[test]
fn a_keyed_chain_verifies_only_with_its_key() {
    let scratch = Scratch::new();
    let key = key_file(&scratch, "audit.key", "correct horse battery staple");
    let other = key_file(&scratch, "other.key", "another secret of enough length");
    let key_arg = key.to_str().unwrap().to_owned();
    pipeline(&scratch, &["--audit-key", &key_arg])
        .wait()
        .unwrap();
    assert_eq!(
        report(&scratch, &["--verify", "--audit-key", &key_arg]).0,
        0
    );
    let (code, stdout, _) = report(
        &scratch,
        &["--verify", "--audit-key", other.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("line 1"), "{stdout}");
    let (code, _, stderr) = report(&scratch, &["--verify"]);
    assert_eq!(
        code, 2,
        "an unkeyed walk of a keyed chain fails, asking for the key: {stderr}"
    );

    // Someone who rewrites the whole file without the key, re-sealing every line after an edit,
    // makes a chain that holds unkeyed but not under the key.
    let rewritten = reseal_unkeyed(&lines(&scratch), |line| line.replacen("750", "75", 1));
    write_lines(&scratch, &rewritten);
    assert_eq!(
        report(&scratch, &["--verify"]).0,
        0,
        "the forgery is a valid unkeyed chain"
    );
    let (code, stdout, _) = report(&scratch, &["--verify", "--audit-key", &key_arg]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("line 1") && stdout.contains("unkeyed chain"),
        "{stdout}"
    );
}

/// Issue 13.2: a keyless attacker seeds a fabricated first line into a new (or emptied) keyed
/// log, hoping the honest writers chain onto it and so authenticate it. Every writer refuses:
/// exit 1, a clear message, no record out, and the log as the attacker left it, which the keyed
/// verifier reports.
#[test]
fn no_writer_extends_a_keyed_log_seeded_by_someone_without_the_key() {
    let scratch = Scratch::new();
    let key = key_file(&scratch, "audit.key", "correct horse battery staple");
    let key_arg = key.to_str().unwrap().to_owned();
    let forged = reseal_unkeyed(
        &[r#"{"ts":"2026-12-01T00:00:00.000000Z","stage":"gate","id":"forged-1","decision":"allow","reasons":["forged"]}"#.to_owned()],
        |line| line.to_owned(),
    );
    std::fs::create_dir_all(scratch.audit_path().parent().unwrap()).unwrap();
    write_lines(&scratch, &forged);
    let seeded = std::fs::read(scratch.audit_path()).unwrap();
    for (bin, input) in [
        (
            "sc-gate",
            r#"{"agent":"a","tool":"web_search","args":{"q":"x"},"source":"user"}"#,
        ),
        (
            "sc-approve",
            r#"{"id":"h-1","call":{"agent":"a","tool":"send_payment","args":{"to":"x","amount":750},"source":"user"},"decision":"hold","reasons":["big"]}"#,
        ),
        (
            "sc-exec",
            r#"{"id":"a-1","call":{"agent":"a","tool":"web_search","args":{"q":"x"},"source":"user"},"decision":"allow","reasons":["ok"]}"#,
        ),
    ] {
        let mut cmd = scratch.cmd(bin);
        cmd.arg("--audit-key").arg(&key);
        if bin == "sc-approve" {
            cmd.arg("--answers").arg(scratch.write("yes.txt", "yes\n"));
        }
        let out = cmd.write_stdin(format!("{input}\n")).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bin}: {stderr}");
        assert!(
            stderr.contains("refusing to extend a keyed chain"),
            "{bin}: {stderr}"
        );
        assert!(
            out.stdout.is_empty(),
            "{bin} let a record out: {:?}",
            out.stdout
        );
        assert_eq!(
            std::fs::read(scratch.audit_path()).unwrap(),
            seeded,
            "{bin}"
        );
    }
    let (code, stdout, _) = report(&scratch, &["--verify", "--audit-key", &key_arg]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("line 1"), "{stdout}");
}

/// Strips `seq` and `prev` from every event, applies `edit`, and seals them again as a fresh
/// unkeyed chain: what an attacker without the key can do.
fn reseal_unkeyed(lines: &[String], edit: impl Fn(&str) -> String) -> Vec<String> {
    use skeleton_crew::audit::chain::{seal, Chain, Head};
    let mut head = Head::genesis();
    lines
        .iter()
        .map(|line| {
            let mut event: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&edit(line)).unwrap();
            event.remove("seq");
            event.remove("prev");
            event.remove("mac");
            let sealed = seal(serde_json::to_string(&event).unwrap().as_bytes(), head);
            head = Head {
                link: Chain::Sha256.link(&sealed),
                seq: head.seq + 1,
            };
            String::from_utf8(sealed).unwrap()
        })
        .collect()
}

#[test]
fn a_missing_or_open_key_file_fails_closed_with_status_2() {
    let scratch = Scratch::new();
    let open = scratch.write("open.key", "a key that anyone can read");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    for key in [scratch.path("missing.key"), open] {
        for bin in ["sc-gate", "sc-approve", "sc-exec"] {
            scratch
                .cmd(bin)
                .arg("--audit-key")
                .arg(&key)
                .write_stdin("")
                .assert()
                .code(2)
                .stderr(predicates::str::contains("audit key"));
        }
    }
    assert!(
        !scratch.audit_path().exists(),
        "nothing was written unkeyed"
    );
}

#[test]
fn the_key_file_can_come_from_the_environment() {
    let scratch = Scratch::new();
    let key = key_file(&scratch, "env.key", "a secret from the environment");
    scratch
        .cmd("sc-gate")
        .env("SC_AUDIT_KEY_FILE", &key)
        .arg(testdata("crew.jsonl"))
        .assert()
        .code(0);
    // Walked without the key, the keyed log asks for it (exit 2).
    let (code, _, stderr) = report(&scratch, &["--verify"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--audit-key"), "{stderr}");
    assert_eq!(
        report(
            &scratch,
            &["--verify", "--audit-key", key.to_str().unwrap()]
        )
        .0,
        0
    );
}

#[test]
fn fsync_still_writes_a_whole_chain() {
    let scratch = Scratch::new();
    pipeline(&scratch, &["--fsync"]).wait().unwrap();
    let (code, stdout, _) = report(&scratch, &["--verify"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("7 events"), "{stdout}");
}

#[test]
fn fail_on_exits_1_exactly_when_the_named_events_occurred() {
    let scratch = Scratch::new();
    pipeline(&scratch, &[]).wait().unwrap();
    // The demo has one deny, no declined and no unanswered hold.
    let (code, _, stderr) = report(&scratch, &["--fail-on", "deny"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("1 deny"), "{stderr}");
    assert_eq!(report(&scratch, &["--fail-on", "declined,unanswered"]).0, 0);
    assert_eq!(
        report(&scratch, &["--fail-on", "deny", "--agent", "scout"]).0,
        0
    );
    assert_eq!(report(&scratch, &["--fail-on", "nonsense"]).0, 2);
}

#[test]
fn piped_and_no_color_output_is_plain() {
    let scratch = Scratch::new();
    pipeline(&scratch, &[]).wait().unwrap();
    let (_, piped, _) = report(&scratch, &[]);
    assert!(!piped.contains('\u{1b}'), "{piped}");
    let out = scratch
        .cmd_report_args(&[])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{1b}'));
}

#[test]
fn markdown_and_time_filters() {
    let scratch = Scratch::new();
    pipeline(&scratch, &[]).wait().unwrap();
    let (code, markdown, _) = report(&scratch, &["--format", "markdown"]);
    assert_eq!(code, 0);
    assert!(
        markdown.starts_with("## Skeleton Crew audit report"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| **deny** | helper | `send_payment` |"),
        "{markdown}"
    );
    let (_, future, _) = report(&scratch, &["--json", "--since", "2999-01-01"]);
    let future: serde_json::Value = serde_json::from_str(&future).unwrap();
    assert_eq!(future["calls"], 0);
    let (_, past, _) = report(&scratch, &["--json", "--until", "2999-01-01T00:00:00Z"]);
    let past: serde_json::Value = serde_json::from_str(&past).unwrap();
    assert_eq!(past["calls"], 3);
    assert_eq!(report(&scratch, &["--since", "last tuesday"]).0, 2);
}

/// Issue 23: a keyed log walked without its key says that it is keyed and to pass --audit-key
/// (exit 2), for --verify, --head and the page's --verify alike; it is not called edited.
#[test]
fn a_keyed_log_verified_without_its_key_asks_for_the_key() {
    let scratch = Scratch::new();
    let key = key_file(&scratch, "audit.key", "correct horse battery staple");
    let key_arg = key.to_str().unwrap().to_owned();
    pipeline(&scratch, &["--audit-key", &key_arg])
        .wait()
        .unwrap();
    for args in [
        &["--verify"][..],
        &["--verify", "--json"],
        &["--head"],
        &["--verify", "--format", "html"],
    ] {
        let (code, stdout, stderr) = report(&scratch, args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(
            stderr.contains("is keyed") && stderr.contains("--audit-key"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("edited") && stdout.is_empty(), "{args:?}");
    }
    assert_eq!(
        report(&scratch, &["--verify", "--audit-key", &key_arg]).0,
        0
    );
}

/// Issue 23: `--json --verify` (and `--format json --verify`) prints each chain as JSON.
#[test]
fn verify_with_json_prints_json() {
    let scratch = Scratch::new();
    pipeline(&scratch, &[]).wait().unwrap();
    let events = lines(&scratch).len() as u64;
    let (code, head, _) = report(&scratch, &["--head"]);
    assert_eq!(code, 0);
    for format in [&["--json"][..], &["--format", "json"]] {
        let mut args = vec!["--verify"];
        args.extend_from_slice(format);
        let (code, stdout, stderr) = report(&scratch, &args);
        assert_eq!(code, 0, "{stderr}");
        let verified: serde_json::Value = serde_json::from_str(&stdout).expect(&stdout);
        let log = scratch.audit_path().display().to_string();
        assert_eq!(
            verified,
            serde_json::json!({"chains": [{
                "log": log, "intact": true, "events": events, "head": head.trim(),
                "expectedHeadAt": null,
            }]})
        );
    }
    let (code, stdout, _) = report(
        &scratch,
        &["--verify", "--json", "--expect-head", head.trim()],
    );
    assert_eq!(code, 0);
    let verified: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(verified["chains"][0]["expectedHeadAt"], events);
    // A broken chain: still JSON, and exit 1.
    let mut broken = lines(&scratch);
    broken.remove(4);
    write_lines(&scratch, &broken);
    let (code, stdout, _) = report(&scratch, &["--verify", "--json"]);
    assert_eq!(code, 1);
    let verified: serde_json::Value = serde_json::from_str(&stdout).expect(&stdout);
    let chain = &verified["chains"][0];
    assert_eq!(chain["intact"], false);
    assert_eq!(chain["line"], 5);
    assert_eq!(chain["break"], "deleted");
    assert!(
        chain["detail"].as_str().unwrap().contains("deleted"),
        "{chain}"
    );
}
