//! Tests of `--notify` ([`super`]): real `sh` processes.

use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::*;
use crate::call::Call;
use crate::record::Record;

const LINE: &str = r#"{"id":"h-1","call":{"agent":"buyer","tool":"send_payment","args":{"to":"acme-travel","amount":750.10},"source":"user"},"decision":"hold","reasons":["amount 750.1 is above the hold limit of 100"]}"#;

fn call() -> Call {
    Record::parse(LINE.as_bytes())
        .unwrap()
        .call()
        .unwrap()
        .clone()
        .unwrap()
}

fn reasons() -> Vec<String> {
    vec!["amount 750.1 is above the hold limit of 100".to_owned()]
}

fn hold<'a>(call: &'a Call, reasons: &'a [String], timeout: Option<Duration>) -> Hold<'a> {
    Hold {
        scopes: &[crate::record::Scope::Once],
        line: LINE.as_bytes(),
        id: "h-1",
        call,
        reasons,
        timeout,
    }
}

#[test]
fn the_payload_has_every_key_the_args_exact_and_expiry_and_url_only_when_there_are_some() {
    let (call, reasons) = (call(), reasons());
    // 2026-09-21T14:13:20Z; the hold declines 300 s later.
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
    let text = payload(
        &hold(&call, &reasons, Some(Duration::from_secs(300))),
        Some("http://127.0.0.1:8080/#token=ab"),
        at,
    );
    assert!(
        text.ends_with("}\n") && text.matches('\n').count() == 1,
        "{text}"
    );
    assert!(
        text.contains(r#""args":{"to":"acme-travel","amount":750.10}"#),
        "{text}"
    );
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value,
        json!({
            "agent": "buyer",
            "tool": "send_payment",
            "args": {"to": "acme-travel", "amount": 750.10},
            "reasons": reasons,
            "digest": crate::approve::prompt::record_digest(LINE.as_bytes()),
            "expiresAt": "2026-09-21T14:18:20Z",
            "url": "http://127.0.0.1:8080/#token=ab",
            "summary": "buyer wants to run send_payment: to acme-travel, amount 750.10",
        })
    );
    let bare: Value =
        serde_json::from_str(&payload(&hold(&call, &reasons, None), None, at)).unwrap();
    assert!(
        bare.get("expiresAt").is_none() && bare.get("url").is_none(),
        "{bare}"
    );
    assert_eq!(bare["digest"].as_str().unwrap().len(), 64);
}

#[test]
fn the_command_gets_the_payload_on_stdin_and_notify_returns_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("got.json");
    let notifier = Notifier::new(format!("sleep 0.3; cat > '{}'", file.display()), "test");
    let (call, reasons) = (call(), reasons());
    let hold = hold(&call, &reasons, None);
    let start = Instant::now();
    let notice = notifier.notify(&hold, None);
    assert!(
        start.elapsed() < Duration::from_millis(250),
        "notify waited for the command"
    );
    assert_eq!(notice.finish(), None);
    let got = std::fs::read_to_string(&file).unwrap();
    assert_eq!(got, payload(&hold, None, SystemTime::now()));
}

#[test]
fn a_nonzero_exit_or_a_signal_is_a_failure() {
    let (call, reasons) = (call(), reasons());
    let hold = hold(&call, &reasons, None);
    let failed = |command: &str| Notifier::new(command, "test").notify(&hold, None).finish();
    assert_eq!(
        failed("cat >/dev/null; exit 3"),
        Some(NotifyFailure::Status(3))
    );
    assert_eq!(
        failed("cat >/dev/null; kill -TERM $$"),
        Some(NotifyFailure::Signal(15))
    );
    assert_eq!(failed("cat >/dev/null"), None);
    assert_eq!(
        failed("cat >/dev/null; exit 3").unwrap().to_string(),
        "it exited with status 3"
    );
}

#[test]
fn a_command_that_closes_its_stdin_unread_is_a_failure() {
    let notifier = Notifier::new("exec 0<&-; sleep 0.2", "test");
    // More than a pipe holds, so the write is still going when the stdin closes.
    let failure = notifier
        .start(vec![b'x'; 1 << 20], "hold x".into())
        .finish();
    assert!(
        matches!(failure, Some(NotifyFailure::Input(_))),
        "{failure:?}"
    );
}

#[test]
fn a_command_that_runs_over_its_time_is_killed_with_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let notifier = Notifier::new(
        format!("echo $$ > '{}'; sleep 60; echo late", pid_file.display()),
        "test",
    )
    .with_limit(Duration::from_millis(500));
    let (call, reasons) = (call(), reasons());
    let start = Instant::now();
    let failure = notifier.notify(&hold(&call, &reasons, None), None).finish();
    let took = start.elapsed();
    assert_eq!(
        failure,
        Some(NotifyFailure::TimedOut(Duration::from_millis(500)))
    );
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // The shell led its own group; the group (the shell and its `sleep`) is gone.
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let group = nix::unistd::Pid::from_raw(pid);
    let deadline = Instant::now() + Duration::from_secs(10);
    while nix::sys::signal::killpg(group, None).is_ok() {
        assert!(
            Instant::now() < deadline,
            "the notify command's group is still there"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
