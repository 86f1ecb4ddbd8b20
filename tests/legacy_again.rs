//! A yes given on a legacy way of asking (the client's elicitation, the web page, the inbox, the
//! terminal) is decided again as it runs, on the crew's state as it is when the answer comes,
//! as a 2026-07-28 client's retry is (tests/mcp_revisions.rs): what changed while the person
//! answered counts. Driven by the scripted client of tests/mcp.rs against the hermetic fake
//! server, with the crew's state in a SQLite file or a real Redis.

use serde_json::{json, Value};

use crate::elicitation::{answer_question, question, YES};
use crate::mcp::{events, is_error, result_text, server_received};
use crate::mcp_revisions::{
    audited_refusals, budget_of_1000, door, read_events, shown_state, Door, UNTRUSTED_ECHO_POLICY,
};
use crate::util::{RedisServer, Scratch};

/// A legacy (2025-06-18) `tools/call` of the fake server's `echo`.
fn echo(id: i64, amount: u32, memo: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"amount": amount, "memo": memo}}})
}

/// An sc-mcp of the crew `payments` on `store`, whose client can ask the person (elicitation).
fn eliciting_door(scratch: &Scratch, policy: &str, store: &str) -> Door {
    let policy = scratch.write("again-policy.json", policy);
    let mut door = door(
        scratch,
        "a",
        "crew",
        &policy,
        &["--crew", "payments", "--state", store],
    );
    door.proxy.initialize_with(json!({"elicitation": {}}));
    door
}

/// The budget policy of tests/mcp_revisions.rs: 1000 per agent, `echo` held only for the total.
fn budget_policy(scratch: &Scratch) -> String {
    std::fs::read_to_string(budget_of_1000(scratch, "")).unwrap()
}

/// [`eliciting_door`] under [`budget_policy`].
fn budget_door(scratch: &Scratch, store: &str) -> Door {
    eliciting_door(scratch, &budget_policy(scratch), store)
}

/// A 400 `echo` runs, and a 750 is held at "would total 1150": asked through the client.
fn held_at_1150(door: &mut Door) {
    let first = door.proxy.request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"amount": 400, "memo": "first"}}),
    );
    assert!(result_text(&first).contains("first"), "{first}");
    door.proxy.send_value(&echo(2, 750, "rent"));
    let asked = question(&mut door.proxy, 1);
    let message = asked["params"]["message"].as_str().unwrap();
    assert!(message.contains("would total 1150 (400 "), "{message}");
}

/// The `approve` event of the held call.
fn the_approval(log: &[Value]) -> Value {
    let approvals = events(log, "approve");
    assert_eq!(approvals.len(), 1, "{log:?}");
    approvals[0].clone()
}

/// The hold noted its counted 750, so the yes is decided on the spend without it: held at the
/// same "would total 1150" it was shown, it runs once, and the spend counts it once. Had the
/// hold not been noted, the yes would be decided at 1900 and declined.
#[test]
fn a_legacy_yes_with_its_amount_still_counted_runs_once_and_counts_it_once() {
    let scratch = Scratch::new();
    let store = scratch.path("state.sqlite");
    let store = store.to_str().unwrap();
    let mut a = budget_door(&scratch, store);
    let audit = a.audit.clone();
    held_at_1150(&mut a);
    let noted = shown_state(&scratch, store);
    assert_eq!(noted["heldSpend"][0]["amount"], 750.0, "{noted}");
    answer_question(&mut a.proxy, 1, YES());
    let ran = a.proxy.answer(&json!(2));
    assert!(!is_error(&ran), "{ran}");
    assert!(result_text(&ran).contains("rent"), "{ran}");
    let after = shown_state(&scratch, store);
    assert_eq!(after["agents"]["crew"]["spent"], 1150.0, "{after}");
    assert!(after.get("heldSpend").is_none(), "{after}");
    audited_refusals(&scratch, a, &[]);
    let approval = the_approval(&read_events(&audit));
    assert_eq!(approval["approval"]["by"], "elicitation", "{approval}");
    assert_eq!(approval["decidedAgain"]["decision"], "hold", "{approval}");
    assert!(approval.get("notCovered").is_none(), "{approval}");
    let received = server_received(&scratch);
    assert_eq!(received.matches(r#""amount":750"#).count(), 1, "{received}");
}

/// While the person answers, `sc-state reset` forgets the spend and a 900 runs in the fresh
/// budget. The yes was given to "would total 1150"; decided again, the call is held at "would
/// total 1650 (900 …)", a reason the person was not shown: it does not run, the client is told
/// why, and the `approve` event records the yes, the new decision and what it did not cover.
#[test]
fn a_legacy_yes_after_sc_state_reset_is_decided_on_the_spend_since_and_declined() {
    let scratch = Scratch::new();
    let store = scratch.path("state.sqlite");
    let store = store.to_str().unwrap();
    let mut a = budget_door(&scratch, store);
    let audit = a.audit.clone();
    held_at_1150(&mut a);
    scratch
        .cmd("sc-state")
        .args(["reset", "--crew", "payments", "--state", store])
        .assert()
        .success();
    let since = a.proxy.request(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"amount": 900, "memo": "since"}}),
    );
    assert!(result_text(&since).contains("since"), "{since}");
    answer_question(&mut a.proxy, 1, YES());
    let refused = a.proxy.answer(&json!(2));
    assert!(is_error(&refused), "{refused}");
    let text = result_text(&refused);
    assert!(
        text.contains("fewer reasons") && text.contains("would total 1650 (900 "),
        "{text}"
    );
    assert!(
        !server_received(&scratch).contains(r#""amount":750"#),
        "run on a yes to 1150: {}",
        server_received(&scratch)
    );
    audited_refusals(&scratch, a, &[]);
    let log = read_events(&audit);
    let approval = the_approval(&log);
    assert_eq!(approval["approval"]["approved"], true, "{approval}");
    assert_eq!(approval["decidedAgain"]["decision"], "hold", "{approval}");
    let gate = events(&log, "gate")
        .into_iter()
        .find(|gate| gate["decision"] == "hold")
        .expect("the call was held");
    assert_eq!(approval["notCovered"]["shown"], gate["reasons"]);
    let not_shown = approval["notCovered"]["notShown"].to_string();
    assert!(not_shown.contains("would total 1650 (900 "), "{approval}");
    let exec = events(&log, "exec")
        .into_iter()
        .find(|exec| exec["id"] == gate["id"])
        .expect("the held call's exec event");
    assert_eq!(exec["outcome"]["status"], "skipped", "{exec}");
    // Its 750 is counted again (as a hold's amount is, whatever its answer), and not noted.
    let after = shown_state(&scratch, store);
    assert_eq!(after["agents"]["crew"]["spent"], 1650.0, "{after}");
    assert!(after.get("heldSpend").is_none(), "{after}");
}

/// A no settles the hold without a decision again: its amount stays counted, and the note
/// kept for a yes is forgotten.
#[test]
fn a_legacy_no_forgets_the_note_of_its_counted_amount() {
    let scratch = Scratch::new();
    let store = scratch.path("state.sqlite");
    let store = store.to_str().unwrap();
    let mut a = budget_door(&scratch, store);
    held_at_1150(&mut a);
    answer_question(
        &mut a.proxy,
        1,
        json!({"action": "accept", "content": {"approve": false}}),
    );
    let refused = a.proxy.answer(&json!(2));
    assert!(is_error(&refused), "{refused}");
    let after = shown_state(&scratch, store);
    assert_eq!(after["agents"]["crew"]["spent"], 1150.0, "{after}");
    assert!(after.get("heldSpend").is_none(), "{after}");
    audited_refusals(&scratch, a, &[]);
}

/// While the person answers, the crew's state in Redis becomes one sc-mcp cannot read: the
/// yes is decided again as a deny, and the call does not run.
#[test]
fn a_legacy_yes_is_denied_when_the_crews_store_fails_while_the_person_answers() {
    let scratch = Scratch::new();
    let redis = RedisServer::with_store();
    let url = redis.url();
    let mut a = eliciting_door(&scratch, &budget_policy(&scratch), &url);
    let audit = a.audit.clone();
    held_at_1150(&mut a);
    let mut connection = redis.connection();
    let _: () = redis::cmd("SET")
        .arg("skeleton-crew:crew:payments:gate")
        .arg("[]")
        .query(&mut connection)
        .unwrap();
    answer_question(&mut a.proxy, 1, YES());
    let denied = a.proxy.answer(&json!(2));
    assert!(is_error(&denied), "{denied}");
    let text = result_text(&denied);
    assert!(
        text.contains("denied") && text.contains("state store unavailable"),
        "{text}"
    );
    audited_refusals(&scratch, a, &[]);
    let log = read_events(&audit);
    let approval = the_approval(&log);
    assert_eq!(approval["approval"]["approved"], true, "{approval}");
    assert_eq!(approval["decidedAgain"]["decision"], "deny", "{approval}");
    let exec = events(&log, "exec").pop().unwrap();
    assert_eq!(exec["id"], approval["id"], "{exec}");
    assert_eq!(exec["decision"], "deny", "{exec}");
    assert_eq!(exec["outcome"]["status"], "skipped", "{exec}");
    assert!(!server_received(&scratch).contains(r#""amount":750"#));
}

/// The held `echo` (untrusted output) taints the agent as it is held; `sc-state reset` forgets
/// the taint while the person answers, and a payment runs. The yes runs the `echo`, so its
/// output reaches the agent now: the agent is tainted by it again, and the next payment is held.
#[test]
fn a_legacy_yes_after_sc_state_reset_taints_its_agent_again() {
    let scratch = Scratch::new();
    let store = scratch.path("state.sqlite");
    let store = store.to_str().unwrap();
    let mut a = eliciting_door(&scratch, UNTRUSTED_ECHO_POLICY, store);
    a.proxy.send_value(&echo(1, 750, "rent"));
    question(&mut a.proxy, 1);
    let taint = shown_state(&scratch, store)["agents"]["crew"]["taintedBy"].clone();
    assert_eq!(taint["tool"], "echo", "{taint}");
    scratch
        .cmd("sc-state")
        .args(["reset", "--crew", "payments", "--state", store])
        .assert()
        .success();
    let before = a
        .proxy
        .call(2, "shout", json!({"amount": 50, "memo": "payee-before"}));
    assert!(result_text(&before).contains("payee-before"), "{before}");
    answer_question(&mut a.proxy, 1, YES());
    let ran = a.proxy.answer(&json!(1));
    assert!(!is_error(&ran), "{ran}");
    assert!(result_text(&ran).contains("rent"), "{ran}");
    let after = shown_state(&scratch, store);
    assert_eq!(
        after["agents"]["crew"]["taintedBy"]["id"], taint["id"],
        "{after}"
    );
    a.proxy
        .send_value(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "shout", "arguments": {"amount": 50, "memo": "payee-after"}}}));
    let asked = question(&mut a.proxy, 2);
    let message = asked["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("tainted") && message.contains("echo"),
        "{message}"
    );
    assert!(!server_received(&scratch).contains("payee-after"));
    audited_refusals(&scratch, a, &[]);
}
