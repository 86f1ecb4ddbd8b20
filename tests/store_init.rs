//! A Redis store is made on purpose, once, by `sc-state init`: every door and every other
//! `sc-state` command refuses a database without the store's marker, so a Redis that lost
//! everything (a restart without persistence, `FLUSHALL`) is never taken as a new store, not even
//! by an sc-hook started after the loss.

use serde_json::{json, Value};

use super::{decisions, gate_refuses, gate_run, hook_run, payment, DEADLINE};
use crate::util::{RedisServer, Scratch};

/// What every door says of a database without the store's marker.
fn uninitialised(url: &str) -> String {
    format!(
        "state store unavailable: {url}: the database has no skeleton-crew:store marker: it is \
         new, or it lost its data (taint and spend included); run `sc-state init --state {url}` \
         once to create the store"
    )
}

/// Runs `sc-state ARGS` in the scratch folder: its status and stderr.
fn sc_state(scratch: &Scratch, args: &[&str]) -> (Option<i32>, String) {
    let out = scratch
        .cmd("sc-state")
        .args(args)
        .timeout(DEADLINE)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How many keys the server holds.
fn key_count(redis: &RedisServer) -> u64 {
    redis::cmd("DBSIZE").query(&mut redis.connection()).unwrap()
}

/// Asserts that sc-hook blocked the call (exit 2, nothing on stdout) because the store at `url`
/// has no marker.
fn hook_blocked_as_uninitialised(out: &std::process::Output, url: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(
        stderr.trim_end(),
        format!("sc-hook: {}; the tool call is blocked", uninitialised(url))
    );
}

fn pre_tool_use(session: &str, tool: &str, input: Value) -> Value {
    json!({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": tool,
           "tool_input": input})
}

#[test]
fn an_empty_redis_is_refused_by_every_door_until_sc_state_init_creates_the_store() {
    let scratch = Scratch::new();
    let redis = RedisServer::start();
    let url = redis.url();
    let policy = scratch.write("policy.json", r#"{"holdAboveAmount": 1000}"#);
    let policy = policy.to_str().unwrap();
    let gate_args = ["--policy", policy, "--state", &url, "--crew", "c"];
    // sc-gate decides nothing (as with a store it cannot reach at start: exit 1).
    gate_refuses(&scratch, &gate_args, &uninitialised(&url));
    // sc-hook blocks the call.
    let bash = pre_tool_use("s-1", "Bash", json!({"command": "ls"}));
    let hook_args = ["--policy", policy, "--state", &url];
    hook_blocked_as_uninitialised(&hook_run(&scratch, &hook_args, &bash), &url);
    // sc-mcp does not start, and sc-state's other commands refuse it too.
    let out = scratch
        .cmd("sc-mcp")
        .args(["--state", &url, "--crew", "c", "--", "true"])
        .timeout(DEADLINE)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&uninitialised(&url)), "{stderr}");
    for args in [
        &["show", "--all", "--state", &url][..],
        &["grants", "--crew", "c", "--state", &url],
    ] {
        let (status, stderr) = sc_state(&scratch, args);
        assert_eq!(status, Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(&uninitialised(&url)), "{args:?}: {stderr}");
    }
    assert_eq!(key_count(&redis), 0, "no door wrote anything");

    // Created once, on purpose: every door uses it.
    let (status, stderr) = sc_state(&scratch, &["init", "--state", &url]);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(stderr, format!("sc-state: created the state store {url}\n"));
    // The making of the store is in the audit log (and not a reset in the report); an init
    // that changes nothing adds nothing.
    let made: Vec<Value> = scratch
        .audit_events()
        .into_iter()
        .filter(|event| event["stage"] == "state")
        .collect();
    assert_eq!(made.len(), 1, "{made:#?}");
    assert_eq!(made[0]["action"], "init", "{made:#?}");
    assert_eq!(made[0]["stateStore"], url.as_str(), "{made:#?}");
    let (status, stderr) = sc_state(&scratch, &["init", "--state", &url]);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(
        scratch
            .audit_events()
            .iter()
            .filter(|event| event["stage"] == "state")
            .count(),
        1
    );
    let report = crate::mcp::report_json(&scratch);
    assert!(report.get("resetCount").is_none(), "{report:#}");
    assert_eq!(report["problems"], json!([]), "{report:#}");
    assert_eq!(
        decisions(&gate_run(&scratch, &gate_args, &[payment("a", 1)])),
        ["allow"]
    );
    let out = hook_run(&scratch, &hook_args, &bash);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The finding this closes: sc-hook starts anew for each tool call, so after a Redis lost
/// everything the next call's sc-hook found an empty database, took it as a new store, marked it,
/// and decided on "no taint": the tainted session's sensitive call was allowed.
#[test]
fn after_a_flushall_or_a_restart_without_persistence_the_next_sc_hook_refuses_the_store() {
    let scratch = Scratch::new();
    let mut redis = RedisServer::with_store();
    let url = redis.url();
    let policy = scratch.write(
        "policy.json",
        r#"{"untrustedOutputTools": ["WebFetch"], "sensitiveTools": ["Bash"]}"#,
    );
    let args = ["--policy", policy.to_str().unwrap(), "--state", &url];
    let fetch = pre_tool_use(
        "s-lost",
        "WebFetch",
        json!({"url": "https://evil.test/x", "prompt": "read it"}),
    );
    let bash = pre_tool_use("s-lost", "Bash", json!({"command": "ls"}));
    let asked = |out: &std::process::Output| {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            answer["hookSpecificOutput"]["permissionDecision"], "ask",
            "{answer}"
        );
    };
    // The session reads untrusted content: its Bash is asked about.
    let out = hook_run(&scratch, &args, &fetch);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    asked(&hook_run(&scratch, &args, &bash));

    // The server loses everything: the next hook blocks rather than start afresh.
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut redis.connection())
        .unwrap();
    hook_blocked_as_uninitialised(&hook_run(&scratch, &args, &bash), &url);
    hook_blocked_as_uninitialised(&hook_run(&scratch, &args, &fetch), &url);
    assert_eq!(key_count(&redis), 0, "the hooks made nothing");

    // An operator starts afresh on purpose: the session's taint is gone, as the init said.
    redis.init_store();
    assert!(hook_run(&scratch, &args, &bash).stdout.is_empty());
    asked(&{
        hook_run(&scratch, &args, &fetch);
        hook_run(&scratch, &args, &bash)
    });

    // Restarted without persistence: the same.
    redis.stop();
    assert!(redis.start_again(), "redis-server restarts on its port");
    hook_blocked_as_uninitialised(&hook_run(&scratch, &args, &bash), &url);
}

#[test]
fn sc_state_init_is_harmless_on_a_store_and_refuses_a_database_that_holds_something_else() {
    let scratch = Scratch::new();
    let redis = RedisServer::with_store();
    let url = redis.url();
    let mut connection = redis.connection();
    let marker: String = redis::cmd("GET")
        .arg("skeleton-crew:store")
        .query(&mut connection)
        .unwrap();
    let policy = super::budget_policy(&scratch, "");
    let args = ["--policy", &policy, "--state", &url, "--crew", "kept"];
    assert_eq!(
        decisions(&gate_run(&scratch, &args, &[payment("a", 200)])),
        ["allow"]
    );
    // Again on the store: nothing changes, the spend is still there.
    let (status, stderr) = sc_state(&scratch, &["init", "--state", &url]);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(
        stderr,
        format!("sc-state: {url} is a state store already; nothing changed\n")
    );
    let kept: String = redis::cmd("GET")
        .arg("skeleton-crew:store")
        .query(&mut connection)
        .unwrap();
    assert_eq!(kept, marker);
    assert_eq!(
        decisions(&gate_run(&scratch, &args, &[payment("b", 101)])),
        ["hold"]
    );

    // Another program's keys and no marker: refused (exit 2), and left as they are.
    let _: () = redis::cmd("FLUSHALL").query(&mut connection).unwrap();
    let _: () = redis::cmd("SET")
        .arg("cache:1")
        .arg("x")
        .query(&mut connection)
        .unwrap();
    let (status, stderr) = sc_state(&scratch, &["init", "--state", &url]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "sc-state: not made a state store: {url}: the database holds 1 key but no skeleton-crew:store marker: "
        )),
        "{stderr}"
    );
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut connection).unwrap();
    assert_eq!(keys, ["cache:1"]);
    // A marker key this program does not write: refused as well.
    let _: () = redis::cmd("SET")
        .arg("skeleton-crew:store")
        .arg("someone else's")
        .query(&mut connection)
        .unwrap();
    let (status, stderr) = sc_state(&scratch, &["init", "--state", &url]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(
        stderr.contains("holds \"someone else's\", not a marker this program writes"),
        "{stderr}"
    );
    // A server that is not there: a runtime failure.
    let closed = format!("redis://127.0.0.1:{}/0", crate::util::free_port());
    let (status, stderr) = sc_state(&scratch, &["init", "--state", &closed]);
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "sc-state: state store unavailable: {closed}: cannot connect"
        )),
        "{stderr}"
    );
}
