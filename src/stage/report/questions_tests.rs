//! The questions and suggestions reports on a small log whose figures are checked by hand.

use serde_json::{json, Map, Value};

use super::QuestionCounter;
use crate::rules::policy::Policy;
use crate::stage::report::questions_render;
use crate::stage::report::suggest::{self, Replay, Suggester, Suggestion};
use crate::stage::report::Filter;

fn gate_hold(id: &str, ts: &str, args: Value, kinds: &[&str]) -> Value {
    json!({"ts": ts, "stage": "gate", "id": id,
        "call": {"agent": "buyer", "tool": "send_payment", "args": args, "source": "user"},
        "decision": "hold", "reasons": kinds.iter().map(|k| format!("held by {k}")).collect::<Vec<_>>(),
        "grantable": {"scopes": ["once", "call"], "kinds": kinds}})
}

fn approve(id: &str, ts: &str, by: &str, approved: bool) -> Value {
    json!({"ts": ts, "stage": "approve", "id": id, "agent": "buyer", "tool": "send_payment",
        "approval": {"approved": approved, "by": by, "answer": if by == "none" { Value::Null } else { json!(if approved { "yes" } else { "no" }) },
            "reason": "r", "scope": if approved { json!("once") } else { Value::Null }}})
}

/// Ten events: four holds of buyer's payments (three of the same call), their answers by the
/// terminal (1.5 s), the web page (asked at 10:30:02, answered at 10:30:03: 1 s), the answers
/// file (declined, 10 s) and nobody (never asked), an allow a grant settled, and another agent's
/// call in another hour.
fn small_log() -> Vec<Value> {
    let a = json!({"to": "a", "amount": 500});
    let mut web = approve("h2", "2026-11-30T10:30:03Z", "web", true);
    web["askedAt"] = json!("2026-11-30T10:30:02Z");
    vec![
        gate_hold("h1", "2026-11-30T10:00:00Z", a.clone(), &["amount"]),
        approve("h1", "2026-11-30T10:00:01.500Z", "tty", true),
        gate_hold("h2", "2026-11-30T10:30:00Z", a.clone(), &["amount"]),
        web,
        gate_hold(
            "h3",
            "2026-11-30T11:10:00Z",
            json!({"to": "b", "amount": 900}),
            &["amount"],
        ),
        approve("h3", "2026-11-30T11:10:10Z", "answers", false),
        json!({"ts": "2026-11-30T11:20:00Z", "stage": "gate", "id": "g1",
            "call": {"agent": "buyer", "tool": "send_payment", "args": {"to": "c", "amount": 300}, "source": "user"},
            "decision": "allow", "reasons": ["allowed by grant x (given by tty at …)"], "grants": ["x"]}),
        gate_hold("h4", "2026-11-30T11:30:00Z", a, &["amount"]),
        approve("h4", "2026-11-30T11:30:01Z", "none", false),
        json!({"ts": "2026-11-30T12:05:00Z", "stage": "gate", "id": "s1",
            "call": {"agent": "scout", "tool": "search_web", "args": {"q": "x"}, "source": "user"},
            "decision": "allow", "reasons": ["ok"]}),
    ]
}

fn object(value: &Value) -> &Map<String, Value> {
    value.as_object().unwrap()
}

#[test]
fn the_figures_of_a_small_log_are_those_counted_by_hand() {
    let mut counter = QuestionCounter::new(Filter::default());
    for event in small_log() {
        counter.event(object(&event));
    }
    let questions = counter.finish();
    assert_eq!(questions.rows.len(), 1, "{questions:?}");
    let row = &questions.rows[0];
    assert_eq!(
        (row.agent.as_str(), row.tool.as_str()),
        ("buyer", "send_payment")
    );
    // Four holds at the gate and one a grant settled; three put to a person (h4's nobody).
    assert_eq!(
        (row.holds, row.settled_by_grant, row.asked, row.approved),
        (5, 1, 3, 2)
    );
    assert_eq!(row.rules, [("amount".to_owned(), 4)].into_iter().collect());
    // Buyer's calls fall in the hours 10:00 and 11:00: 3 questions over 2 active hours.
    assert_eq!(row.active_hours, 2);
    assert_eq!(row.asked_per_active_hour(), Some(1.5));
    // Answer times 1.5 s, 1 s (from askedAt, not the hold) and 10 s: median 1.5, p90 10 by
    // nearest rank; two of three under 2 s.
    assert_eq!(row.answered, 3);
    assert_eq!(row.median_seconds, Some(1.5));
    assert_eq!(row.p90_seconds, Some(10.0));
    assert_eq!(row.under_2s, 2);
    assert_eq!(row.approval_rate(), Some(2.0 / 3.0));
    let channels: Vec<(&str, u64)> = row
        .by_channel
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(channels, [("answers file", 1), ("terminal", 1), ("web", 1)]);
    assert_eq!(row.repeated_calls.len(), 1);
    assert_eq!(row.repeated_calls[0].holds, 3);
    assert_eq!(
        row.repeated_calls[0].args.as_deref(),
        Some(r#"{"to":"a","amount":500}"#)
    );
    let json = questions_render::json(&questions);
    assert_eq!(
        json[0]["answerSeconds"],
        json!({"median": 1.5, "p90": 10.0})
    );
    assert_eq!(json[0]["byChannel"]["terminal"], 1);
}

#[test]
fn the_inbox_is_a_channel_of_its_own() {
    let mut counter = QuestionCounter::new(Filter::default());
    let mut inbox = approve("h1", "2026-11-30T10:00:02Z", "web", true);
    inbox["channel"] = json!("inbox");
    for event in [
        gate_hold(
            "h1",
            "2026-11-30T10:00:00Z",
            json!({"amount": 500}),
            &["amount"],
        ),
        inbox,
    ] {
        counter.event(object(&event));
    }
    let row = &counter.finish().rows[0];
    assert_eq!(row.by_channel.get("inbox"), Some(&1));
    assert_eq!(row.median_seconds, Some(2.0));
    assert_eq!(row.under_2s, 0);
}

#[test]
fn past_the_exact_answers_the_quantiles_come_from_the_histogram_within_five_percent() {
    let mut counter = QuestionCounter::new(Filter::default());
    // 3,000 answers: 0.5 s, 1.0 s, … cycling to 30 s.
    for n in 0..3000u32 {
        let took = f64::from(n % 60 + 1) * 0.5;
        let id = format!("h{n}");
        let held = humantime::parse_rfc3339("2026-11-30T10:00:00Z").unwrap()
            + std::time::Duration::from_secs(u64::from(n) * 60);
        let answered = held + std::time::Duration::from_secs_f64(took);
        let ts = |t| humantime::format_rfc3339_micros(t).to_string();
        counter.event(object(&gate_hold(
            &id,
            &ts(held),
            json!({"amount": n}),
            &["amount"],
        )));
        counter.event(object(&approve(&id, &ts(answered), "tty", true)));
    }
    let row = &counter.finish().rows[0];
    assert_eq!(row.answered, 3000);
    let median = row.median_seconds.unwrap();
    let p90 = row.p90_seconds.unwrap();
    assert!((median - 15.0).abs() / 15.0 <= 0.05, "{median}");
    assert!((p90 - 27.0).abs() / 27.0 <= 0.05, "{p90}");
    // No call repeated: none listed.
    assert!(row.repeated_calls.is_empty());
}

fn suggestions(policy: &str, log: &[Value]) -> Vec<Suggestion> {
    let policy = Policy::from_json_str(policy).unwrap();
    let mut suggester = Suggester::new(&policy, Filter::default());
    for event in log {
        suggester.event(object(event));
    }
    let mut replay = Replay::new(&policy, Filter::default(), suggester.finish());
    for event in log {
        replay.event(object(event));
    }
    replay.finish()
}

#[test]
fn a_repeated_call_gets_a_call_grant_replayed_over_the_log() {
    let found = suggestions(r#"{"holdAboveAmount": 100}"#, &small_log());
    assert_eq!(found.len(), 1, "{found:?}");
    let s = &found[0];
    assert_eq!(s.grant.covers.scope(), "call");
    assert_eq!(
        (s.grant.agent.as_str(), s.grant.tool.as_str()),
        ("buyer", "send_payment")
    );
    // Given at the first yes (h1, 10:00), the last repeat at 11:30: two whole hours.
    assert_eq!(s.expires_in, std::time::Duration::from_secs(7200));
    // It would have allowed h2 and h4 (h4 was never put to anyone: one question removed).
    assert_eq!(s.changes, ["h2", "h4"]);
    assert_eq!((s.changed, s.removes, s.holds), (2, 1, 3));
    let json = suggest::suggestion_json(s);
    assert_eq!(json["kind"], "grant");
    assert_eq!(json["expiresIn"], "2h");
    assert_eq!(json["policy"]["answer"], "yes call");
    assert_eq!(json["policy"]["kinds"], json!(["amount"]));
    // The policy's grantTtl caps the expiry, and the replay then reaches h2 only.
    let capped = suggestions(
        r#"{"holdAboveAmount": 100, "grantTtl": "1h"}"#,
        &small_log(),
    );
    assert_eq!(capped[0].changes, ["h2"]);
}

#[test]
fn never_for_a_never_remember_tool_a_budget_or_a_declined_call() {
    assert!(suggestions(
        r#"{"holdAboveAmount": 100, "neverRemember": ["send_payment"]}"#,
        &small_log()
    )
    .is_empty());
    let args = json!({"to": "a", "amount": 50});
    let budget = vec![
        gate_hold("b1", "2026-11-30T10:00:00Z", args.clone(), &["budget"]),
        approve("b1", "2026-11-30T10:00:01Z", "tty", true),
        gate_hold("b2", "2026-11-30T10:01:00Z", args.clone(), &["budget"]),
        approve("b2", "2026-11-30T10:01:01Z", "tty", true),
    ];
    assert!(suggestions("{}", &budget).is_empty());
    let declined = vec![
        gate_hold("d1", "2026-11-30T10:00:00Z", args.clone(), &["amount"]),
        approve("d1", "2026-11-30T10:00:01Z", "tty", true),
        gate_hold("d2", "2026-11-30T10:01:00Z", args.clone(), &["amount"]),
        approve("d2", "2026-11-30T10:01:01Z", "tty", false),
        gate_hold("d3", "2026-11-30T10:02:00Z", args, &["amount"]),
    ];
    assert!(suggestions("{}", &declined).is_empty());
}

#[test]
fn a_repeated_untrusted_value_gets_a_value_grant_that_lifts_only_its_taint() {
    let hold = |id: &str, ts: &str, body: &str, values: &[&str], kinds: &[&str]| {
        json!({"ts": ts, "stage": "gate", "id": id,
            "call": {"agent": "mailer", "tool": "send_email", "args": {"to": "dana@partner.example", "body": body}, "source": "agent"},
            "decision": "hold", "reasons": kinds.iter().map(|k| format!("held by {k}")).collect::<Vec<_>>(),
            "grantable": {"scopes": ["once", "call", "value"], "kinds": kinds, "values": values}})
    };
    let log = vec![
        hold(
            "m1",
            "2026-11-30T10:00:00Z",
            "one",
            &["dana@partner.example"],
            &["taint"],
        ),
        approve("m1", "2026-11-30T10:00:01Z", "web", true),
        hold(
            "m2",
            "2026-11-30T10:05:00Z",
            "two",
            &["dana@partner.example"],
            &["taint"],
        ),
        approve("m2", "2026-11-30T10:05:01Z", "web", true),
        // Another value as well: the grant does not endorse it.
        hold(
            "m3",
            "2026-11-30T10:06:00Z",
            "three",
            &["dana@partner.example", "evil@x.example"],
            &["taint"],
        ),
        approve("m3", "2026-11-30T10:06:01Z", "web", true),
        // Held by the amount as well: the value grant does not lift it.
        hold(
            "m4",
            "2026-11-30T10:07:00Z",
            "four",
            &["dana@partner.example"],
            &["amount", "taint"],
        ),
    ];
    let found = suggestions(r#"{"sensitiveTools": ["send_email"]}"#, &log);
    let value: Vec<&Suggestion> = found
        .iter()
        .filter(|s| s.grant.covers.scope() == "value")
        .collect();
    assert_eq!(value.len(), 1, "{found:?}");
    assert_eq!(value[0].changes, ["m2"]);
    assert_eq!(value[0].removes, 1);
}
