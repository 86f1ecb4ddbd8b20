//! Shared state (issue 16): one crew's taint and spend across processes and runs, in a SQLite
//! file or a real Redis server, and what happens when the store is gone or spoiled.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use skeleton_crew::audit::AuditLog;
use skeleton_crew::jsonl::{Input, StageOutput};
use skeleton_crew::rules::policy::Policy;
use skeleton_crew::rules::state::SetClock;
use skeleton_crew::stage::gate::{self, GateOptions};
use skeleton_crew::store::{OpenOptions, Shared, StateKey, StateUrl, Timing, View};

use crate::util::{bin_path, parse_stdout, RedisServer, Scratch};

#[path = "store_init.rs"]
mod init;

const DEADLINE: Duration = Duration::from_secs(60);

fn payment(agent: &str, amount: u32) -> String {
    format!(
        r#"{{"agent":"{agent}","tool":"send_payment","args":{{"to":"acme","amount":{amount}}},"source":"agent"}}"#
    )
}

fn budget_policy(scratch: &Scratch, extra: &str) -> String {
    let path = scratch.write(
        "policy.json",
        format!(
            r#"{{"holdAboveAmount": 1000, "holdAboveTotal": 300, "budgetScope": "crew"{extra}}}"#
        ),
    );
    path.to_str().unwrap().to_owned()
}

/// Runs sc-gate over `lines` with `args`; returns the verdicts.
fn gate_run(scratch: &Scratch, args: &[&str], lines: &[String]) -> Vec<Value> {
    let output = scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .args(args)
        .write_stdin(lines.join("\n") + "\n")
        .timeout(DEADLINE)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    parse_stdout(&output.stdout)
}

fn decisions(verdicts: &[Value]) -> Vec<&str> {
    verdicts
        .iter()
        .map(|v| v["decision"].as_str().unwrap())
        .collect()
}

#[test]
fn a_budget_spent_in_one_run_still_counts_in_the_next_until_reset() {
    let scratch = Scratch::new();
    let policy = budget_policy(&scratch, "");
    let args = ["--policy", &policy, "--crew", "nightly"];
    let first = gate_run(
        &scratch,
        &args,
        &[payment("buyer", 99), payment("buyer", 99)],
    );
    assert_eq!(decisions(&first), ["allow", "allow"]);
    // A new run of the same crew: 198 already spent.
    let second = gate_run(
        &scratch,
        &args,
        &[payment("clerk", 99), payment("clerk", 99)],
    );
    assert_eq!(decisions(&second), ["allow", "hold"]);
    let reason = second[1]["reasons"][0].as_str().unwrap();
    assert!(
        reason.contains("the crew's amounts (every agent's together) in crew nightly since its state was last reset would total 396 (297 by the crew before this call)"),
        "{reason}"
    );
    // Another crew on the same store has a budget of its own; no crew is a pure stream.
    let other = gate_run(
        &scratch,
        &["--policy", &policy, "--crew", "day-shift"],
        &[payment("b", 250)],
    );
    assert_eq!(decisions(&other), ["allow"]);
    let memory = gate_run(&scratch, &["--policy", &policy], &[payment("b", 250)]);
    assert_eq!(decisions(&memory), ["allow"]);
    // The state is in logs/state.sqlite, beside the audit log; each event names it.
    assert!(scratch.path("logs/state.sqlite").exists());
    let events = scratch.audit_events();
    let shared = events.iter().find(|e| e["crew"] == "nightly").unwrap();
    assert!(
        shared["stateStore"]
            .as_str()
            .unwrap()
            .ends_with("logs/state.sqlite"),
        "{shared}"
    );
    assert!(
        events.last().unwrap().get("stateStore").is_none(),
        "in memory"
    );

    // sc-state shows the crew, and a reset (audited) clears it.
    let shown = scratch
        .cmd("sc-state")
        .args(["show", "--crew", "nightly", "--json"])
        .output()
        .unwrap();
    assert!(shown.status.success());
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["states"][0]["state"]["crewSpent"], 396.0, "{shown}");
    assert_eq!(
        shown["states"][0]["state"]["agents"]["clerk"]["spent"],
        198.0
    );
    let text = scratch
        .cmd("sc-state")
        .args(["show", "--crew", "nightly"])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("crew nightly:\n  the crew: not tainted; spent 396\n  agent buyer: not tainted; spent 198\n  agent clerk: not tainted; spent 198\n"), "{text}");
    scratch
        .cmd("sc-state")
        .args(["reset", "--crew", "nightly", "--agent", "clerk"])
        .assert()
        .success();
    let third = gate_run(
        &scratch,
        &args,
        &[payment("clerk", 99), payment("clerk", 5)],
    );
    assert_eq!(decisions(&third), ["allow", "hold"], "198 + 99 + 5 > 300");
    scratch
        .cmd("sc-state")
        .args(["reset", "--crew", "nightly"])
        .assert()
        .success();
    let fourth = gate_run(&scratch, &args, &[payment("buyer", 300)]);
    assert_eq!(decisions(&fourth), ["allow"]);
    let resets: Vec<Value> = scratch
        .audit_events()
        .into_iter()
        .filter(|e| e["stage"] == "state")
        .collect();
    assert_eq!(resets.len(), 2);
    assert_eq!(resets[0]["action"], "reset");
    assert_eq!(resets[0]["crew"], "nightly");
    assert_eq!(resets[0]["agent"], "clerk");
    assert_eq!(
        resets[0]["before"]["gate"]["agents"]["clerk"]["spent"],
        198.0
    );
    assert!(resets[1].get("agent").is_none());
    // sc-report lists the resets, and does not take them for problems.
    let out = scratch.cmd_report_args(&["--json"]).output().unwrap();
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["resetCount"], 2, "{summary}");
    assert_eq!(summary["resets"][0]["agent"], "clerk", "{summary}");
    assert!(summary["resets"][1].get("agent").is_none(), "{summary}");
    assert_eq!(summary["problems"], serde_json::json!([]), "{summary}");
    let text = scratch.cmd_report_args(&[]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("State resets (2)"), "{text}");
    assert!(
        text.contains("reset clerk") && text.contains("reset every agent"),
        "{text}"
    );
    scratch
        .cmd_report_args(&["--verify"])
        .output()
        .map(|out| {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .unwrap();
}

#[test]
fn a_new_budget_window_starts_afresh_on_the_injected_clock() {
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy::from_json_str(
        r#"{"holdAboveAmount": 1000, "holdAboveTotal": 300, "budgetScope": "crew", "budgetWindow": "day"}"#,
    )
    .unwrap();
    // 2026-12-02T23:00:00Z.
    let clock = Arc::new(SetClock::at(1_796_252_400));
    let options = GateOptions {
        policy,
        max_line_bytes: 1 << 20,
        timing: Timing {
            clock: clock.clone(),
            taint_ttl: None,
        },
        chain: skeleton_crew::audit::chain::Chain::Sha256,
    };
    window_runs(&dir, &options, &clock);
}

/// The runs of [`a_new_budget_window_starts_afresh_on_the_injected_clock`], each through
/// `gate::run_shared` on the same SQLite file, with its output in memory.
fn window_runs(dir: &tempfile::TempDir, options: &GateOptions, clock: &SetClock) {
    let state_file = dir.path().join("state.sqlite");
    let run = |lines: &[String]| -> Vec<Value> {
        let calls = dir.path().join("calls.jsonl");
        std::fs::write(&calls, lines.join("\n") + "\n").unwrap();
        let store = StateUrl::Sqlite(state_file.clone())
            .open(OpenOptions {
                create: true,
                fsync: false,
            })
            .unwrap();
        let mut shared = Shared::new(store, StateKey::crew("daily", View::Gate));
        let audit = AuditLog::open(&dir.path().join("audit.jsonl")).unwrap();
        let mut stdout = Vec::new();
        {
            let mut output = StageOutput::new(audit, &mut stdout, None::<Vec<u8>>);
            let inputs = [Input::File(calls)];
            gate::run_shared(&inputs, options, &mut shared, &mut output, &mut Vec::new()).unwrap();
        }
        parse_stdout(&stdout)
    };
    let day_one = run(&[payment("a", 200), payment("b", 100), payment("c", 1)]);
    assert_eq!(decisions(&day_one), ["allow", "allow", "hold"]);
    let reason = day_one[2]["reasons"][0].as_str().unwrap();
    assert!(
        reason.contains("in this UTC day (from 2026-12-02T00:00:00Z) would total 301"),
        "{reason}"
    );
    // Later the same day, another run: still spent.
    clock.advance(Duration::from_secs(3599));
    assert_eq!(decisions(&run(&[payment("d", 1)])), ["hold"]);
    // Past midnight UTC: a new window, a new budget.
    clock.advance(Duration::from_secs(1));
    let day_two = run(&[payment("a", 300), payment("a", 1)]);
    assert_eq!(decisions(&day_two), ["allow", "hold"]);
    let reason = day_two[1]["reasons"][0].as_str().unwrap();
    assert!(reason.contains("(from 2026-12-03T00:00:00Z)"), "{reason}");
}

/// sc-gate reading calls from a pipe this test writes, its verdicts read line by line on a
/// thread, so the test can act between two calls (kill the store) and never waits forever.
struct Streaming {
    child: Child,
    stdin: Option<ChildStdin>,
    verdicts: Receiver<Value>,
    stderr: std::thread::JoinHandle<Vec<u8>>,
}

impl Streaming {
    fn start(scratch: &Scratch, args: &[&str]) -> Streaming {
        let mut child = std::process::Command::new(bin_path("sc-gate"))
            .env_clear()
            .current_dir(scratch.dir.path())
            .arg("--audit")
            .arg(scratch.audit_path())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, verdicts) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(serde_json::from_str(&line).unwrap()).is_err() {
                    break;
                }
            }
        });
        let stderr = crate::util::drain(child.stderr.take().unwrap());
        Streaming {
            stdin: child.stdin.take(),
            child,
            verdicts,
            stderr,
        }
    }

    /// Writes one call and waits (at most [`DEADLINE`]) for its verdict.
    fn decide(&mut self, line: &str) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        self.verdicts
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("no verdict within {DEADLINE:?} for {line}"))
    }

    /// Closes the input; the status and stderr once sc-gate ends.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let mut children = [("sc-gate", self.child)];
        let status = crate::util::wait_all(&mut children, DEADLINE)[0];
        let stderr = String::from_utf8_lossy(&self.stderr.join().unwrap()).into_owned();
        (status, stderr)
    }
}

#[test]
fn redis_killed_mid_stream_refuses_calls_and_decisions_resume_when_it_is_back() {
    let scratch = Scratch::new();
    let policy = budget_policy(&scratch, "");
    let mut redis = RedisServer::with_store();
    let url = redis.url();
    let mut gate = Streaming::start(
        &scratch,
        &["--policy", &policy, "--state", &url, "--crew", "ops"],
    );
    assert_eq!(gate.decide(&payment("a", 100))["decision"], "allow");
    // A server with persistence: what it held is there again when it restarts (one without is
    // `a_redis_that_lost_its_data_is_refused_even_by_the_process_that_wrote_the_taint`).
    redis.save();
    redis.stop();
    let refused = gate.decide(&payment("a", 1));
    assert_eq!(refused["decision"], "deny", "{refused}");
    let reason = refused["reasons"][0].as_str().unwrap();
    assert!(
        reason.starts_with(&format!("state store unavailable: {url}: ")),
        "{reason}"
    );
    // A malformed line is still denied as malformed, and the stream goes on.
    assert!(gate.decide("{")["reasons"][0]
        .as_str()
        .unwrap()
        .starts_with("malformed call"));
    assert_eq!(gate.decide(&payment("a", 1))["decision"], "deny");
    assert!(redis.start_again(), "redis-server restarts on its port");
    // Decisions resume once sc-gate reconnects (it waits a moment after a failure before it
    // tries again, so the first calls may still be refused).
    let start = Instant::now();
    let resumed = loop {
        let verdict = gate.decide(&payment("a", 2));
        if verdict["decision"] != "deny" {
            break verdict;
        }
        assert!(start.elapsed() < DEADLINE, "never resumed: {verdict}");
    };
    assert_eq!(resumed["decision"], "allow", "{resumed}");
    let (status, stderr) = gate.finish();
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let events = scratch.audit_events();
    assert!(events.iter().all(|e| e["stateStore"] == url.as_str()));
}

const LOST: &str = "the Redis store lost its data (its marker key is gone): restarted without persistence, flushed, or evicted; taint and spend cannot be trusted";

/// A policy where a read through `fetch_page` taints its agent and holds its `send_payment`.
fn taint_policy(scratch: &Scratch) -> String {
    let path = scratch.write(
        "taint.json",
        r#"{"untrustedOutputTools": ["fetch_page"], "sensitiveTools": ["send_payment"]}"#,
    );
    path.to_str().unwrap().to_owned()
}

const FETCH: &str =
    r#"{"agent":"buyer","tool":"fetch_page","args":{"url":"https://evil.test"},"source":"user"}"#;

/// Taints the buyer through `gate` and checks that its payment is held.
fn taint_the_buyer(gate: &mut Streaming) {
    assert_eq!(gate.decide(FETCH)["decision"], "allow");
    let held = gate.decide(&payment("buyer", 10));
    assert_eq!(held["decision"], "hold", "{held}");
}

/// Asserts that `verdict` denies the call because the store at `url` lost its data.
fn denied_as_lost(verdict: &Value, url: &str) {
    assert_eq!(verdict["decision"], "deny", "{verdict}");
    assert_eq!(
        verdict["reasons"][0],
        format!("state store unavailable: {url}: {LOST}"),
        "{verdict}"
    );
}

/// Found by a review: a Redis that lost what it held (here `FLUSHALL`, then a restart without
/// persistence) read as "no taint", so the tainted buyer's payment was allowed, even by the
/// sc-gate that wrote the taint. The store's marker key is gone, so each call is denied, and it
/// stays so: a new process refuses the empty server too, and a marker made again on it (by
/// `sc-state init`) is not the one the running process opened the store with.
#[test]
fn a_redis_that_lost_its_data_is_refused_even_by_the_process_that_wrote_the_taint() {
    let scratch = Scratch::new();
    let policy = taint_policy(&scratch);
    let mut redis = RedisServer::with_store();
    let url = redis.url();
    let args = [
        "--policy",
        policy.as_str(),
        "--state",
        &url,
        "--crew",
        "lost",
    ];
    let mut gate = Streaming::start(&scratch, &args);
    taint_the_buyer(&mut gate);

    let _: () = redis::cmd("FLUSHALL")
        .query(&mut redis.connection())
        .unwrap();
    denied_as_lost(&gate.decide(&payment("buyer", 10)), &url);
    denied_as_lost(&gate.decide(&payment("buyer", 10)), &url);

    // Restarted without persistence: the connection fails first (denied as well), then the
    // empty server is refused.
    redis.stop();
    assert!(redis.start_again());
    let start = Instant::now();
    loop {
        let verdict = gate.decide(&payment("buyer", 10));
        assert_eq!(verdict["decision"], "deny", "{verdict}");
        if verdict["reasons"][0].as_str().unwrap().ends_with(LOST) {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "never refused as lost: {verdict}"
        );
    }
    // A new process finds an empty server and refuses it: it cannot tell it from a new one.
    gate_refuses(&scratch, &args, "has no skeleton-crew:store marker");
    // Made a store again on purpose, it is a fresh start for a new process; the running one
    // still refuses it.
    redis.init_store();
    assert_eq!(
        decisions(&gate_run(&scratch, &args, &[payment("clerk", 10)])),
        ["allow"]
    );
    denied_as_lost(&gate.decide(&payment("buyer", 10)), &url);
    let (status, stderr) = gate.finish();
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Found by a review: keys evicted under `maxmemory` with `allkeys-lru` read as "no taint". The
/// marker is evicted with them, so the running sc-gate denies; and a new one, finding keys (of
/// another program) but no marker, refuses to start.
#[test]
fn a_redis_that_evicted_the_marker_is_refused() {
    let scratch = Scratch::new();
    let policy = taint_policy(&scratch);
    let redis = RedisServer::with_store();
    let url = redis.url();
    let args = [
        "--policy",
        policy.as_str(),
        "--state",
        &url,
        "--crew",
        "evicted",
    ];
    let mut gate = Streaming::start(&scratch, &args);
    taint_the_buyer(&mut gate);

    // A memory limit no key fits under: the next write evicts every key, then is refused.
    let mut connection = redis.connection();
    let config = |connection: &mut redis::Connection, name: &str, value: &str| {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query(connection)
            .unwrap();
    };
    config(&mut connection, "maxmemory-policy", "allkeys-lru");
    config(&mut connection, "maxmemory", "1");
    let write: redis::RedisResult<()> = redis::cmd("SET")
        .arg("cache:1")
        .arg("x")
        .query(&mut connection);
    assert!(write.is_err(), "a write over maxmemory is refused");
    let left: u64 = redis::cmd("DBSIZE").query(&mut connection).unwrap();
    assert_eq!(left, 0, "every key was evicted");
    config(&mut connection, "maxmemory", "0");

    denied_as_lost(&gate.decide(&payment("buyer", 10)), &url);
    denied_as_lost(&gate.decide(FETCH), &url);

    // Another program's key is back, the marker is not: a new sc-gate cannot tell a store that
    // lost its keys from a fresh one, so it refuses to start (exit 1).
    let _: () = redis::cmd("SET")
        .arg("cache:1")
        .arg("x")
        .query(&mut connection)
        .unwrap();
    let out = scratch
        .cmd("sc-gate")
        .args(args)
        .write_stdin(payment("buyer", 10) + "\n")
        .timeout(DEADLINE)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(LOST), "{stderr}");
    let (status, stderr) = gate.finish();
    assert!(status.success(), "{stderr}");
}

#[test]
fn budgets_are_shared_across_runs_on_redis_and_keys_are_namespaced_by_crew() {
    let scratch = Scratch::new();
    let policy = budget_policy(&scratch, r#", "budgetWindow": "week""#);
    let redis = RedisServer::with_store();
    let url = redis.url();
    let args = ["--policy", &policy, "--state", &url, "--crew", "team-a"];
    assert_eq!(
        decisions(&gate_run(&scratch, &args, &[payment("a", 200)])),
        ["allow"]
    );
    let next = gate_run(&scratch, &args, &[payment("b", 101)]);
    assert_eq!(decisions(&next), ["hold"]);
    assert!(next[0]["reasons"][0]
        .as_str()
        .unwrap()
        .contains("in this UTC week (from "));
    let mut connection = redis.connection();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut connection).unwrap();
    keys.sort();
    assert_eq!(
        keys,
        ["skeleton-crew:crew:team-a:gate", "skeleton-crew:store"],
        "the crew's state, and the marker of the store"
    );
    // sc-state reads and resets it there too.
    let shown = scratch
        .cmd("sc-state")
        .args(["show", "--all", "--json", "--state", &url])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["store"], url.as_str());
    assert_eq!(shown["states"][0]["crew"], "team-a");
    assert_eq!(shown["states"][0]["state"]["crewSpent"], 301.0);
    scratch
        .cmd("sc-state")
        .args(["reset", "--crew", "team-a", "--state", &url])
        .assert()
        .success();
    assert_eq!(
        decisions(&gate_run(&scratch, &args, &[payment("a", 300)])),
        ["allow"]
    );
}

#[test]
fn sc_exec_keeps_its_own_view_of_a_shared_crew_so_no_call_counts_twice() {
    let scratch = Scratch::new();
    let policy = budget_policy(&scratch, "");
    let verdicts = scratch
        .cmd("sc-gate")
        .args(["--quiet", "--policy", &policy, "--crew", "c"])
        .write_stdin(format!("{}\n{}\n", payment("a", 150), payment("b", 150)))
        .output()
        .unwrap();
    assert!(verdicts.status.success());
    let executed = scratch
        .cmd("sc-exec")
        .args(["--quiet", "--policy", &policy, "--crew", "c"])
        .write_stdin(verdicts.stdout)
        .output()
        .unwrap();
    assert!(
        executed.status.success(),
        "{}",
        String::from_utf8_lossy(&executed.stderr)
    );
    let records = parse_stdout(&executed.stdout);
    let statuses: Vec<&str> = records.iter().map(crate::util::outcome_status).collect();
    assert_eq!(statuses, ["executed", "executed"], "{records:?}");
    let events = scratch.audit_events();
    let exec = events.iter().find(|e| e["stage"] == "exec").unwrap();
    assert_eq!(exec["crew"], "c");
    // Each view holds the crew's 300 once.
    let shown = scratch
        .cmd("sc-state")
        .args(["show", "--crew", "c", "--json"])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let views: Vec<(&str, f64)> = shown["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["view"].as_str().unwrap(),
                s["state"]["crewSpent"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(views, [("gate", 300.0), ("exec", 300.0)]);
}

#[test]
fn state_urls_that_are_malformed_exit_2_and_stores_unreachable_at_start_exit_1() {
    let scratch = Scratch::new();
    let closed = format!("redis://127.0.0.1:{}/0", crate::util::free_port());
    for bin in ["sc-gate", "sc-exec"] {
        for bad in [
            "mysql://db/x",
            "redis://127.0.0.1:notaport/0",
            "redis://127.0.0.1:6379/zero",
            "rediss://127.0.0.1:6379/0#insecure",
            "",
        ] {
            let out = scratch
                .cmd(bin)
                .args(["--state", bad])
                .write_stdin("")
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{bin} --state {bad:?}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains("--state"), "{stderr}");
        }
        for bad_crew in ["a/b", ".hidden", "with space"] {
            let out = scratch
                .cmd(bin)
                .args(["--crew", bad_crew])
                .write_stdin("")
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{bin} --crew {bad_crew:?}");
        }
        let out = scratch
            .cmd(bin)
            .args(["--state", &closed])
            .write_stdin(payment("a", 1))
            .timeout(DEADLINE)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{bin} --state {closed}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "state store unavailable: {closed}: cannot connect"
            )),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
        // A file where the store's folder should be.
        scratch.write("file", "");
        let out = scratch
            .cmd(bin)
            .args(["--state", "file/state.sqlite"])
            .write_stdin(payment("a", 1))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{bin}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("state store unavailable"));
    }
    let out = scratch
        .cmd("sc-state")
        .args(["show", "--state", "ftp://x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_store_edited_into_garbage_is_refused_never_read_as_clean() {
    let scratch = Scratch::new();
    let policy = scratch.write("p.json", r#"{"taintScope": "crew"}"#);
    let policy = policy.to_str().unwrap();
    let fetch =
        r#"{"agent":"h","tool":"fetch_page","args":{"url":"https://evil.test"},"source":"agent"}"#;
    let args = ["--policy", policy, "--crew", "c"];
    assert_eq!(
        decisions(&gate_run(&scratch, &args, &[fetch.to_owned()])),
        ["allow"]
    );
    let file = scratch.path("logs/state.sqlite");
    let spoil = |sql: &str| {
        rusqlite::Connection::open(&file)
            .unwrap()
            .execute_batch(sql)
            .unwrap()
    };
    let refused = |scratch: &Scratch, expected: &str| gate_refuses(scratch, &args, expected);
    // The taint, edited away into a state of another shape.
    spoil(r#"UPDATE sc_states SET state = '{"agents":{},"crewSpent":0,"crewTaintedBy":null}'"#);
    refused(
        &scratch,
        "the state of crew c is not one this program wrote, so it is refused rather than read as clean",
    );
    spoil(r#"UPDATE sc_states SET state = 'garbage'"#);
    refused(&scratch, "not valid JSON");
    // Found by a review: a trigger that deletes the crew's state (its taint) as it is written,
    // and an `sc_meta` that is a view answering another table's format. Neither is read.
    spoil("UPDATE sc_states SET state = '{}'; DELETE FROM sc_states");
    spoil("CREATE TRIGGER forget AFTER INSERT ON sc_states BEGIN DELETE FROM sc_states; END");
    refused(
        &scratch,
        "it holds what a Skeleton Crew state store never has",
    );
    spoil("DROP TRIGGER forget");
    spoil(
        "CREATE TABLE fake (key TEXT, value TEXT); INSERT INTO fake SELECT * FROM sc_meta;
         DROP TABLE sc_meta; CREATE VIEW sc_meta AS SELECT * FROM fake",
    );
    refused(&scratch, "not a Skeleton Crew state store");
    spoil(
        "DROP VIEW sc_meta;
         CREATE TABLE sc_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT;
         INSERT INTO sc_meta SELECT * FROM fake; DROP TABLE fake",
    );
    // Found by a second review: the same trigger with its schema row retyped `'Trigger'`
    // (SQLite builds it from its text all the same), and a view spelt `SC_META` beside a
    // table of another program's.
    spoil(
        "CREATE TRIGGER forget AFTER INSERT ON sc_states BEGIN DELETE FROM sc_states; END;
         PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET type = 'Trigger' WHERE type = 'trigger';
         PRAGMA writable_schema = OFF",
    );
    refused(
        &scratch,
        "it holds what a Skeleton Crew state store never has",
    );
    spoil(
        "PRAGMA writable_schema = ON; DELETE FROM sqlite_schema WHERE name = 'forget';
         PRAGMA writable_schema = OFF",
    );
    spoil("CREATE TABLE other_app (x)");
    refused(
        &scratch,
        "it holds what a Skeleton Crew state store never has",
    );
    spoil("DROP TABLE other_app");
    assert_eq!(
        decisions(&gate_run(&scratch, &args, &[payment("a", 1)])),
        ["allow"],
        "the store, tables again, is read"
    );
    // Found by a third review: `sc_states` redefined with a generated column whose NOT NULL
    // conflict is ignored, so that every state written after is dropped without an error.
    spoil(
        "CREATE TABLE kept AS SELECT * FROM sc_states; DROP TABLE sc_states;
         CREATE TABLE sc_states (key TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL,
           updated TEXT NOT NULL, g ANY GENERATED ALWAYS AS (NULL) VIRTUAL NOT NULL ON CONFLICT IGNORE) STRICT;
         INSERT INTO sc_states (key, state, updated) SELECT key, state, updated FROM kept;
         DROP TABLE kept",
    );
    refused(
        &scratch,
        "it holds what a Skeleton Crew state store never has",
    );
    spoil(
        "CREATE TABLE kept AS SELECT key, state, updated FROM sc_states; DROP TABLE sc_states;
         CREATE TABLE sc_states (key TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL, updated TEXT NOT NULL) STRICT;
         INSERT INTO sc_states SELECT * FROM kept; DROP TABLE kept",
    );
    assert_eq!(
        decisions(&gate_run(&scratch, &args, &[payment("a", 1)])),
        ["allow"],
        "the store, its tables as made, is read"
    );
    spoil("DELETE FROM sc_meta");
    refused(&scratch, "its `sc_meta` table has no format");
    std::fs::write(&file, vec![0x5a; 8192]).unwrap();
    let _ = std::fs::remove_file(scratch.path("logs/state.sqlite-wal"));
    let _ = std::fs::remove_file(scratch.path("logs/state.sqlite-shm"));
    refused(&scratch, "file is not a database");
    // sc-state refuses it as well.
    let out = scratch
        .cmd("sc-state")
        .args(["show", "--all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));

    // The same on Redis: a key that is not a state, or not a string at all.
    let redis = RedisServer::with_store();
    let url = redis.url();
    let mut connection = redis.connection();
    let redis_args = ["--policy", policy, "--state", &url, "--crew", "c"];
    // A door uses the store (made by `sc-state init`) first.
    assert_eq!(
        decisions(&gate_run(&scratch, &redis_args, &[payment("a", 1)])),
        ["allow"]
    );
    let _: () = redis::cmd("SET")
        .arg("skeleton-crew:crew:c:gate")
        .arg("[]")
        .query(&mut connection)
        .unwrap();
    gate_refuses(&scratch, &redis_args, "the state must be an object");
    let _: () = redis::cmd("DEL")
        .arg("skeleton-crew:crew:c:gate")
        .query(&mut connection)
        .unwrap();
    let _: () = redis::cmd("LPUSH")
        .arg("skeleton-crew:crew:c:gate")
        .arg("x")
        .query(&mut connection)
        .unwrap();
    gate_refuses(&scratch, &redis_args, "WRONGTYPE");
}

#[test]
fn a_taint_in_a_shared_crew_lasts_until_its_ttl() {
    let scratch = Scratch::new();
    let policy = scratch.write("p.json", r#"{"taintScope": "crew"}"#);
    let policy = policy.to_str().unwrap();
    let fetch = r#"{"agent":"h","tool":"fetch_page","args":{"url":"https://evil.test/x"},"source":"agent"}"#;
    let mail = r#"{"agent":"m","tool":"send_email","args":{"to":"a@b.test"},"source":"agent"}"#;
    let args = ["--policy", policy, "--crew", "c"];
    assert_eq!(
        decisions(&gate_run(&scratch, &args, &[fetch.to_owned()])),
        ["allow"]
    );
    let held = gate_run(&scratch, &args, &[mail.to_owned()]);
    assert_eq!(decisions(&held), ["hold"]);
    let reason = held[0]["reasons"][0].as_str().unwrap();
    assert!(
        reason.contains("untrusted content was read through fetch_page (id ")
            && reason.contains("url=https://evil.test/x) by h earlier in crew c's shared state"),
        "{reason}"
    );
    // A TTL the taint is younger than keeps it; the TTL's passing is tested on an injected clock
    // in the library (rules::state).
    let kept = gate_run(
        &scratch,
        &["--policy", policy, "--crew", "c", "--taint-ttl", "1h"],
        &[mail.to_owned()],
    );
    assert_eq!(decisions(&kept), ["hold"]);
    for bad in ["soon", "0s", "-1h"] {
        let out = scratch
            .cmd("sc-gate")
            .args(["--taint-ttl", bad])
            .write_stdin("")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--taint-ttl {bad}");
    }
}

/// The store in use, checked from the library: a state written by one process is read by another.
#[test]
fn the_library_reads_what_the_binaries_wrote() {
    let scratch = Scratch::new();
    let policy = budget_policy(&scratch, "");
    gate_run(
        &scratch,
        &["--policy", &policy, "--crew", "lib"],
        &[payment("a", 42)],
    );
    let mut store = StateUrl::Sqlite(scratch.path("logs/state.sqlite"))
        .open(OpenOptions::default())
        .unwrap();
    let state = store
        .read(&StateKey::crew("lib", View::Gate))
        .unwrap()
        .unwrap();
    assert_eq!(state.crew_spent, 42.0);
    assert_eq!(store.keys().unwrap(), [StateKey::crew("lib", View::Gate)]);
}

#[test]
fn a_read_through_one_sc_mcp_taints_the_crew_for_another_and_not_another_crew() {
    use crate::mcp::{fake_server, filesystem_server, is_error, result_text, served_folder, Proxy};
    use serde_json::json;
    use std::ffi::OsString;
    let scratch = Scratch::new();
    let policy = scratch.write(
        "crew-policy.json",
        r#"{"sensitiveTools": ["shout", "edit_file"], "untrustedOutputTools": ["read_text_file"],
            "denyTools": ["write_file"], "taintScope": "crew"}"#,
    );
    let policy = policy.to_str().unwrap();
    let root = served_folder(&scratch);
    let filesystem = vec![
        OsString::from("node"),
        filesystem_server().into_os_string(),
        root.clone().into_os_string(),
    ];
    let proxy = |agent: &str, crew: &str, server: &[OsString]| {
        let args = [
            "--policy",
            policy,
            "--agent",
            agent,
            "--crew",
            crew,
            "--no-prompt",
            "--quiet",
        ];
        let mut proxy = Proxy::spawn(&scratch, &args, server);
        proxy.initialize();
        proxy
    };
    // One client's two servers, each behind its own sc-mcp of crew "desk"; a third of crew "lab".
    let mut files = proxy("files", "desk", &filesystem);
    let mut shouter = proxy("shouter", "desk", &fake_server());
    let mut other = proxy("shouter", "lab", &fake_server());
    let before = shouter.call(1, "shout", json!({}));
    assert!(!is_error(&before), "not tainted yet: {before}");
    let notes = root.join("notes.txt");
    let read = files.call(
        1,
        "read_text_file",
        json!({"path": notes.to_str().unwrap()}),
    );
    assert!(result_text(&read).contains("remember the milk"), "{read}");
    let held = shouter.call(2, "shout", json!({}));
    assert!(is_error(&held), "{held}");
    let text = result_text(&held);
    assert!(
        text.contains("\"shouter\" is tainted") || text.contains("shouter is tainted"),
        "{text}"
    );
    assert!(
        text.contains("read_text_file (id ")
            && text.contains(&format!(
                "path={}) by files earlier in crew desk's shared state",
                notes.display()
            )),
        "{text}"
    );
    let elsewhere = other.call(1, "shout", json!({}));
    assert!(
        !is_error(&elsewhere),
        "crew lab is not tainted: {elsewhere}"
    );
    for proxy in [files, shouter, other] {
        let done = proxy.finish();
        assert!(done.status.success(), "{}", done.stderr);
    }
    assert_eq!(
        crate::mcp::server_received(&scratch)
            .matches("\"shout\"")
            .count(),
        2
    );
    let events = scratch.audit_events();
    let held_event = events
        .iter()
        .find(|e| e["stage"] == "gate" && e["decision"] == "hold")
        .unwrap();
    assert_eq!(held_event["crew"], "desk");
    assert!(held_event["stateStore"]
        .as_str()
        .unwrap()
        .ends_with("logs/state.sqlite"));

    // --state without --crew has no crew to share: a usage error.
    let out = scratch
        .cmd("sc-mcp")
        .args(["--state", "x.sqlite", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--state needs --crew"));
    let out = scratch
        .cmd("sc-mcp")
        .args(["--state", "gopher://x", "--crew", "c", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let closed = format!("redis://127.0.0.1:{}/0", crate::util::free_port());
    let out = scratch
        .cmd("sc-mcp")
        .args(["--state", &closed, "--crew", "c", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("state store unavailable"));
}

#[test]
fn sc_mcp_answers_is_error_while_its_redis_is_down_and_resumes_after() {
    use crate::mcp::{fake_server, is_error, result_text, Proxy};
    use serde_json::json;
    let scratch = Scratch::new();
    let mut redis = RedisServer::with_store();
    let url = redis.url();
    let policy = crate::util::testdata("mcp/fake-policy.json");
    let args = [
        "--policy",
        policy.to_str().unwrap(),
        "--state",
        &url,
        "--crew",
        "c",
        "--no-prompt",
        "--quiet",
    ];
    let mut proxy = Proxy::spawn(&scratch, &args, &fake_server());
    proxy.initialize();
    assert!(!is_error(&proxy.call(1, "shout", json!({}))));
    redis.save();
    redis.stop();
    let refused = proxy.call(2, "shout", json!({}));
    assert!(is_error(&refused), "{refused}");
    assert!(
        result_text(&refused).contains(&format!("state store unavailable: {url}")),
        "{refused}"
    );
    assert!(redis.start_again());
    let start = Instant::now();
    let mut id = 3;
    loop {
        let answer = proxy.call(id, "shout", json!({}));
        if !is_error(&answer) {
            break;
        }
        assert!(start.elapsed() < DEADLINE, "never resumed: {answer}");
        id += 1;
    }
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(!done.stderr.contains("panicked"), "{}", done.stderr);
    assert_eq!(
        crate::mcp::server_received(&scratch)
            .matches("\"shout\"")
            .count(),
        2
    );
}

/// 16 sc-hook processes at once, each in a session of its own but all of one crew, each spending
/// 50 against the crew's budget of 300: exactly 6 are allowed, whatever the order.
fn sixteen_hooks_spend_exactly_the_budget(state: Option<&str>) {
    let scratch = Scratch::new();
    let policy = scratch.write(
        "policy.json",
        r#"{"holdAboveAmount": 1000, "holdAboveTotal": 300, "budgetScope": "crew"}"#,
    );
    let runs: Vec<_> = (0..16)
        .map(|n| {
            let mut cmd = std::process::Command::new(bin_path("sc-hook"));
            cmd.env_clear()
                .current_dir(scratch.dir.path())
                .arg("--audit")
                .arg(scratch.audit_path())
                .arg("--policy")
                .arg(&policy)
                .args(["--crew", "payroll"]);
            if let Some(state) = state {
                cmd.args(["--state", state]);
            }
            let input = format!(
                r#"{{"session_id":"session-{n}","hook_event_name":"PreToolUse","tool_name":"mcp__bank__pay","tool_input":{{"to":"acme","amount":50}}}}"#
            );
            std::thread::spawn(move || {
                let mut child = cmd
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
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
    let mut allowed = 0;
    let mut asked = 0;
    for run in runs {
        let out = run.join().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        if out.stdout.is_empty() {
            allowed += 1;
        } else {
            let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(
                answer["hookSpecificOutput"]["permissionDecision"], "ask",
                "{answer}"
            );
            asked += 1;
        }
    }
    assert_eq!((allowed, asked), (6, 10));
    let events = scratch.audit_events();
    assert_eq!(events.len(), 16);
    assert_eq!(
        events.iter().filter(|e| e["decision"] == "allow").count(),
        6
    );
    assert!(events.iter().all(|e| e["crew"] == "payroll"));
}

#[test]
fn sixteen_concurrent_hooks_never_lose_an_update_on_sqlite() {
    sixteen_hooks_spend_exactly_the_budget(None);
}

#[test]
fn sixteen_concurrent_hooks_never_lose_an_update_on_redis() {
    let redis = RedisServer::with_store();
    sixteen_hooks_spend_exactly_the_budget(Some(&redis.url()));
}

#[test]
fn sc_hook_blocks_with_exit_2_when_its_store_is_unreachable_or_malformed() {
    let scratch = Scratch::new();
    let input = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
    let closed = format!("redis://127.0.0.1:{}/0", crate::util::free_port());
    for args in [
        vec!["--state", closed.as_str()],
        vec!["--state", "gopher://x"],
        vec!["--crew", "../x"],
    ] {
        let out = scratch
            .cmd("sc-hook")
            .args(&args)
            .write_stdin(input)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
    }
}

/// A real `redis-server` serving TLS only, on a free loopback port, with a certificate for
/// `localhost` from a certificate authority made for the test (by `openssl`, which `make
/// test-deps` installs when missing); killed when dropped.
struct TlsRedis {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl TlsRedis {
    fn start() -> TlsRedis {
        let dir = tempfile::tempdir().unwrap();
        let openssl = |args: &[&str]| {
            let out = std::process::Command::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .output()
                .expect("openssl runs (make test-deps installs it)");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let mut ca = vec![
            "req",
            "-x509",
            "-days",
            "2",
            "-subj",
            "/CN=skeleton-crew test CA",
        ];
        ca.extend(ec);
        ca.extend(["-keyout", "ca.key", "-out", "ca.crt"]);
        ca.extend(["-addext", "basicConstraints=critical,CA:TRUE"]);
        ca.extend(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
        openssl(&ca);
        let mut request = vec!["req", "-subj", "/CN=localhost"];
        request.extend(ec);
        request.extend(["-keyout", "server.key", "-out", "server.csr"]);
        openssl(&request);
        std::fs::write(
            dir.path().join("server.ext"),
            "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-days",
            "2",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-extfile",
            "server.ext",
            "-out",
            "server.crt",
        ]);
        for _ in 0..20 {
            let port = crate::util::free_port();
            let mut child = std::process::Command::new("redis-server")
                .args(["--port", "0", "--tls-port", &port.to_string()])
                .args([
                    "--tls-cert-file",
                    "server.crt",
                    "--tls-key-file",
                    "server.key",
                ])
                .args(["--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "no"])
                .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .args(["--daemonize", "no", "--dir", "."])
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server runs (make test-deps installs it)");
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if child.try_wait().unwrap().is_some() {
                    break; // the port was taken after all
                }
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return TlsRedis { child, port, dir };
                }
                assert!(
                    Instant::now() < deadline,
                    "redis-server with TLS did not listen in 30 s"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        panic!("redis-server with TLS did not start on any of 20 free ports");
    }

    fn url(&self) -> String {
        format!("rediss://localhost:{}/0", self.port)
    }

    fn ca(&self) -> std::path::PathBuf {
        self.dir.path().join("ca.crt")
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn rediss_shares_a_budget_over_tls_and_a_server_it_cannot_trust_is_never_used() {
    let scratch = Scratch::new();
    let policy = budget_policy(&scratch, "");
    let redis = TlsRedis::start();
    let url = redis.url();
    let ca = redis.ca();
    // The store is made once, over TLS too.
    scratch
        .cmd("sc-state")
        .args(["init", "--state", &url])
        .env("SSL_CERT_FILE", &ca)
        .timeout(DEADLINE)
        .assert()
        .success();
    let run = |trust: Option<&std::path::Path>, line: String| {
        let mut cmd = scratch.cmd("sc-gate");
        cmd.args([
            "--quiet", "--policy", &policy, "--state", &url, "--crew", "tls",
        ]);
        match trust {
            Some(ca) => cmd.env("SSL_CERT_FILE", ca),
            None => cmd.env_remove("SSL_CERT_FILE"),
        };
        cmd.write_stdin(line + "\n")
            .timeout(DEADLINE)
            .output()
            .unwrap()
    };
    // Trusting the test's authority: the spend of one run counts in the next, over TLS.
    let first = run(Some(&ca), payment("a", 200));
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(decisions(&parse_stdout(&first.stdout)), ["allow"]);
    let second = run(Some(&ca), payment("b", 101));
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let verdicts = parse_stdout(&second.stdout);
    assert_eq!(decisions(&verdicts), ["hold"], "{verdicts:?}");
    // Without it, the server's certificate is not trusted: no decision is made at all.
    let untrusted = run(None, payment("c", 1));
    assert_eq!(untrusted.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert!(
        stderr.contains("state store unavailable") && stderr.contains("certificate"),
        "{stderr}"
    );
    assert!(untrusted.stdout.is_empty(), "no verdict without the store");
    // The certificate names localhost: reached as 127.0.0.1, it is refused even when trusted.
    let by_address = scratch
        .cmd("sc-gate")
        .args(["--quiet", "--policy", &policy, "--crew", "tls", "--state"])
        .arg(format!("rediss://127.0.0.1:{}/0", redis.port))
        .env("SSL_CERT_FILE", &ca)
        .write_stdin(payment("d", 1) + "\n")
        .timeout(DEADLINE)
        .output()
        .unwrap();
    assert_eq!(by_address.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&by_address.stderr);
    assert!(stderr.contains("state store unavailable"), "{stderr}");
    assert!(by_address.stdout.is_empty());
}

/// Runs sc-hook with `args` on one hook input.
fn hook_run(scratch: &Scratch, args: &[&str], input: &Value) -> std::process::Output {
    scratch
        .cmd("sc-hook")
        .args(args)
        .write_stdin(input.to_string())
        .timeout(DEADLINE)
        .output()
        .unwrap()
}

/// sc-hook's call links live in Redis beside the session's state
/// (`skeleton-crew:session:ID:links`): a PreToolUse that held a call and its PostToolUse, two
/// processes, meet there, and the hold is approved. Spoiled links block with exit 2; sc-state
/// lists the session's state without choking on them, and a reset of the session clears them.
#[test]
fn sc_hook_links_calls_between_processes_through_redis() {
    let scratch = Scratch::new();
    let redis = RedisServer::with_store();
    let url = redis.url();
    let policy = scratch.write("policy.json", r#"{"holdAboveAmount": 10}"#);
    let args = ["--policy", policy.to_str().unwrap(), "--state", &url];
    let call = |event: &str| {
        serde_json::json!({
            "session_id": "s-redis", "hook_event_name": event, "tool_name": "mcp__bank__pay",
            "tool_input": {"to": "acme", "amount": 50}, "tool_use_id": "toolu_r1",
            "tool_response": {"stdout": ""},
        })
    };
    let out = hook_run(&scratch, &args, &call("PreToolUse"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "ask");
    let mut connection = redis.connection();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut connection).unwrap();
    keys.sort();
    assert_eq!(
        keys,
        [
            "skeleton-crew:session:s-redis:gate",
            "skeleton-crew:session:s-redis:links",
            "skeleton-crew:store"
        ]
    );
    let out = hook_run(&scratch, &args, &call("PostToolUse"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = scratch.audit_events();
    let stages: Vec<&str> = events
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["gate", "approve", "exec"]);
    assert_eq!(events[1]["id"], events[0]["id"]);
    assert_eq!(events[2]["decision"], "hold");
    // sc-state shows the session's state, not its links, and does not choke on them.
    let shown = scratch
        .cmd("sc-state")
        .args(["show", "--all", "--json", "--state", &url])
        .output()
        .unwrap();
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["states"].as_array().unwrap().len(), 1, "{shown}");
    assert_eq!(shown["states"][0]["session"], "s-redis");
    // Spoiled links are refused, never read as none, and left as they are.
    let _: () = redis::cmd("SET")
        .arg("skeleton-crew:session:s-redis:links")
        .arg("[{}]")
        .query(&mut connection)
        .unwrap();
    for event in ["PreToolUse", "PostToolUse"] {
        let out = hook_run(&scratch, &args, &call(event));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{event}: {stderr}");
        assert!(out.stdout.is_empty());
        assert!(
            stderr.contains("are not what this program writes") && stderr.contains("`toolUses[0]`"),
            "{stderr}"
        );
    }
    let kept: String = redis::cmd("GET")
        .arg("skeleton-crew:session:s-redis:links")
        .query(&mut connection)
        .unwrap();
    assert_eq!(kept, "[{}]");
    scratch
        .cmd("sc-state")
        .args(["reset", "--session", "s-redis", "--state", &url])
        .assert()
        .success();
    let exists: bool = redis::cmd("EXISTS")
        .arg("skeleton-crew:session:s-redis:links")
        .query(&mut connection)
        .unwrap();
    assert!(!exists, "the reset cleared the links");
}

/// Issue 23: `sc-state show` on a store nothing has written yet says there is no state yet
/// (exit 0, text or JSON) and does not make the file; when sc-hook and sc-mcp keep a store in
/// the XDG state folder, it names it.
#[test]
fn sc_state_show_on_a_store_that_does_not_exist_yet_says_so_and_makes_nothing() {
    let scratch = Scratch::new();
    let show = |args: &[&str], env: &[(&str, &std::path::Path)]| {
        let mut cmd = scratch.cmd("sc-state");
        cmd.arg("show").args(args);
        for (name, value) in env {
            cmd.env(name, value);
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let default_store = scratch.path("logs/state.sqlite");
    let text = show(&[], &[]);
    assert!(
        text.contains("no state yet") && text.contains("logs/state.sqlite"),
        "{text}"
    );
    assert!(!text.contains("sc-hook and sc-mcp"), "{text}");
    let json: Value = serde_json::from_str(&show(&["--crew", "c", "--json"], &[])).unwrap();
    assert_eq!(json["states"], serde_json::json!([]), "{json}");
    assert!(json["store"]
        .as_str()
        .unwrap()
        .ends_with("logs/state.sqlite"));
    let named = scratch.path("elsewhere/state.sqlite");
    let text = show(&["--state", named.to_str().unwrap()], &[]);
    assert!(text.contains("no state yet"), "{text}");
    assert!(!default_store.exists() && !scratch.path("logs").exists());
    assert!(!named.exists() && !scratch.path("elsewhere").exists());

    // A store in the XDG state folder, where sc-hook and sc-mcp keep theirs: named.
    let xdg = scratch.path("xdg");
    let agents_store = xdg.join("skeleton-crew/state.sqlite");
    StateUrl::Sqlite(agents_store.clone())
        .open(OpenOptions {
            create: true,
            fsync: false,
        })
        .unwrap();
    let text = show(&[], &[("XDG_STATE_HOME", &xdg)]);
    assert!(
        text.contains("sc-hook and sc-mcp")
            && text.contains(&format!("--state {}", agents_store.display())),
        "{text}"
    );
    assert!(!default_store.exists());
}

/// A database of another program named as the state store by mistake is refused and left as it
/// was: its journal mode is not switched to WAL first (found by a review: a file an older SQLite,
/// or a read-only medium, could no longer open in WAL mode).
#[test]
fn a_database_that_is_not_a_store_is_refused_unchanged() {
    let scratch = Scratch::new();
    // Makes a database of another program, runs sc-gate on it, and checks that it was refused
    // with `expected` and that no byte of it changed.
    let refused_unchanged = |name: &str, sql: &str, expected: &str| {
        let file = scratch.path(name);
        rusqlite::Connection::open(&file)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
        let mode = || -> String {
            rusqlite::Connection::open(&file)
                .unwrap()
                .query_row("PRAGMA journal_mode", [], |row| row.get(0))
                .unwrap()
        };
        assert_eq!(mode(), "delete");
        let before = std::fs::read(&file).unwrap();
        gate_refuses(&scratch, &["--state", file.to_str().unwrap()], expected);
        assert_eq!(mode(), "delete");
        assert_eq!(std::fs::read(&file).unwrap(), before, "{name} is as it was");
        assert!(!scratch.path(&format!("{name}-wal")).exists());
    };
    refused_unchanged(
        "other.sqlite",
        "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ann');",
        "not a Skeleton Crew state store",
    );
    // Found by a review: another program's database with a table named `sc_meta` was switched
    // to WAL mode before its format refused it.
    refused_unchanged(
        "named.sqlite",
        "CREATE TABLE sc_meta (key TEXT, value TEXT);
         INSERT INTO sc_meta VALUES ('format', 'other-program 7');",
        "state store unavailable",
    );
}

/// sc-gate run with `args` on one payment: it refuses to start (status 1, nothing on stdout),
/// saying `expected`.
fn gate_refuses(scratch: &Scratch, args: &[&str], expected: &str) {
    let out = scratch
        .cmd("sc-gate")
        .args(args)
        .write_stdin(payment("a", 1))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(stderr.contains(expected), "{stderr}");
}
