use super::*;

fn call(line: &str) -> Call {
    Call::parse_line(line.as_bytes()).unwrap().0
}

fn allow() -> Judgement {
    Judgement {
        granting: Default::default(),
        decision: Decision::Allow,
        reasons: vec!["ok".into()],
    }
}

#[test]
fn reading_untrusted_output_taints_the_agent_with_its_cause() {
    let policy = Policy::default();
    let mut state = CrewState::new();
    let fetch = call(
        r#"{"agent":"helper","tool":"fetch_page","args":{"url":"https://evil.test/page"},"source":"user"}"#,
    );
    state.record(&fetch, "id-7", &allow(), &policy);
    let cause = state.taint_of("helper", &policy).unwrap();
    assert_eq!(
        cause.describe(),
        "fetch_page (id id-7, url=https://evil.test/page) by helper"
    );
    assert!(state.taint_of("buyer", &policy).is_none());
}

#[test]
fn a_denied_call_neither_taints_nor_spends() {
    let policy = Policy::default();
    let mut state = CrewState::new();
    let deny = Judgement {
        granting: Default::default(),
        decision: Decision::Deny,
        reasons: vec!["no".into()],
    };
    state.record(
        &call(r#"{"agent":"a","tool":"fetch_page","args":{"url":"u","amount":5}}"#),
        "1",
        &deny,
        &policy,
    );
    assert_eq!(state, CrewState::new());
}

#[test]
fn spend_adds_up_understood_amounts() {
    let policy = Policy::default();
    let mut state = CrewState::new();
    for amount in ["99", "\"$99.50\"", "\"lots\""] {
        let line = format!(
            r#"{{"agent":"b","tool":"send_payment","args":{{"to":"x","amount":{amount}}},"source":"user"}}"#
        );
        state.record(&call(&line), "1", &allow(), &policy);
    }
    assert_eq!(state.spent_by("b"), 198.5);
}

#[test]
fn the_state_round_trips_through_json() {
    let policy = Policy::default();
    let mut state = CrewState::new();
    state.record(
        &call(r#"{"agent":"h","tool":"fetch_page","args":{"url":"u"}}"#),
        "1",
        &allow(),
        &policy,
    );
    state.record(
        &call(r#"{"agent":"b","tool":"send_payment","args":{"to":"x","amount":12.5}}"#),
        "2",
        &allow(),
        &policy,
    );
    let text = serde_json::to_string(&state).unwrap();
    let back: CrewState = serde_json::from_str(&text).unwrap();
    assert_eq!(back, state);
}

#[test]
fn the_crew_spend_adds_up_every_agent() {
    let policy = Policy::default();
    let mut state = CrewState::new();
    for (agent, amount) in [("a", "99"), ("b", "\"$99.50\""), ("a", "1"), ("c", "0.1")] {
        let line = format!(
            r#"{{"agent":"{agent}","tool":"send_payment","args":{{"to":"x","amount":{amount}}},"source":"user"}}"#
        );
        state.record(&call(&line), "1", &allow(), &policy);
    }
    assert_eq!(state.spent_by("a"), 100.0);
    assert_eq!(state.crew_spent, 199.6);
    assert!(
        state.crew_inexact,
        "0.1 is not a float's exact value, so the sum may round"
    );
    let crew = Policy::from_json_str(r#"{"budgetScope":"crew","holdAboveTotal":1}"#).unwrap();
    assert_eq!(state.spent_in_scope("a", &policy), (100.0, false));
    assert_eq!(state.spent_in_scope("a", &crew), (199.6, true));
    assert_eq!(state.spent_in_scope("nobody", &policy), (0.0, false));
}

/// A state as sc-hook writes it after a tainting read and a payment.
fn written() -> String {
    let policy = Policy::default();
    let mut state = CrewState::new();
    state.record(
        &call(r#"{"agent":"h","tool":"fetch_page","args":{"url":"u"}}"#),
        "1",
        &allow(),
        &policy,
    );
    state.record(
        &call(r#"{"agent":"b","tool":"send_payment","args":{"to":"x","amount":0.1}}"#),
        "2",
        &allow(),
        &policy,
    );
    serde_json::to_string(&state).unwrap()
}

#[test]
fn a_written_state_reads_back() {
    let text = written();
    let back = CrewState::from_json(format!("{text}\n").as_bytes()).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
    let fresh = serde_json::to_string(&CrewState::new()).unwrap();
    assert_eq!(fresh, r#"{"agents":{},"crewSpent":0.0}"#);
    assert_eq!(
        CrewState::from_json(fresh.as_bytes()).unwrap(),
        CrewState::new()
    );
    // Everything optional may be written out in full.
    let full = r#"{"agents":{"a":{"taintedBy":{"agent":"a","tool":"t","id":"1","argument":"url=u"},"spent":5,"inexact":false}},"crewTaintedBy":{"agent":"a","tool":"t","id":"1"},"crewSpent":5.5,"crewInexact":true}"#;
    assert!(CrewState::from_json(full.as_bytes()).is_ok());
}

#[test]
fn a_state_in_any_other_shape_is_an_error() {
    let text = written();
    let with = |from: &str, to: &str| {
        assert!(text.contains(from), "{from} not in {text}");
        text.replacen(from, to, 1)
    };
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "empty"),
        (" \n".to_owned(), "empty"),
        ("[]".to_owned(), "the state must be an object, not an array"),
        ("null".to_owned(), "the state must be an object, not null"),
        ("\"{}\"".to_owned(), "not a string"),
        ("7".to_owned(), "not a number"),
        ("{}".to_owned(), "missing field `agents`"),
        (r#"{"agents":{}}"#.to_owned(), "missing field `crewSpent`"),
        (r#"{"crewSpent":0}"#.to_owned(), "missing field `agents`"),
        (r#"{"agents":[],"crewSpent":0}"#.to_owned(), "`agents` must be an object"),
        (r#"{"agents":{},"crewSpent":0,"extra":1}"#.to_owned(), "unknown field `extra`"),
        (r#"{"agents":{},"crewSpent":"0"}"#.to_owned(), "invalid type: string"),
        (r#"{"agents":{},"crewSpent":0,"crewInexact":null}"#.to_owned(), "invalid type: null"),
        (r#"{"agents":{},"crewSpent":0,"crewTaintedBy":null}"#.to_owned(), "`crewTaintedBy` must be an object, not null"),
        (r#"{"agents":{},"crewSpent":-1}"#.to_owned(), "`crewSpent` is -1, below 0"),
        (r#"{"agents":{},"crewSpent":-0.0}"#.to_owned(), "below 0"),
        (r#"{"agents":{"a":[]},"crewSpent":0}"#.to_owned(), "agent a must be an object, not an array"),
        (r#"{"agents":{"a":[null,0]},"crewSpent":0}"#.to_owned(), "agent a must be an object"),
        (r#"{"agents":{"a":null},"crewSpent":0}"#.to_owned(), "agent a must be an object, not null"),
        (r#"{"agents":{"a":{}},"crewSpent":0}"#.to_owned(), "missing field `spent`"),
        (r#"{"agents":{"a":{"spent":1,"budget":9}},"crewSpent":1}"#.to_owned(), "unknown field `budget`"),
        (r#"{"agents":{"a":{"spent":2}},"crewSpent":1}"#.to_owned(), "agent a spent 2, more than the crew's 1"),
        (r#"{"agents":{"a":{"spent":-5}},"crewSpent":0}"#.to_owned(), "the spend of agent a is -5, below 0"),
        (r#"{"agents":{"a":{"spent":0,"taintedBy":[]}},"crewSpent":0}"#.to_owned(), "agent a's `taintedBy` must be an object"),
        (r#"{"agents":{"a":{"spent":0,"taintedBy":{"agent":"a","tool":"t"}}},"crewSpent":0}"#.to_owned(), "missing field `id`"),
        (r#"{"agents":{"a":{"spent":0,"taintedBy":{"agent":"a","tool":"t","id":"1","argument":null}}},"crewSpent":0}"#.to_owned(), "argument must be a string, not null"),
        (r#"{"agents":{"a":{"spent":0,"taintedBy":{"agent":"a","tool":"t","id":"1"}}},"crewSpent":0}"#.to_owned(), "agent a is tainted but the crew is not"),
        (with("}", "}}"), "trailing characters"),
        (format!("{text}{text}"), "trailing characters"),
        (format!("{text} x"), "not valid JSON"),
        (with("\"crewSpent\"", "\"crewSpent\":1,\"crewSpent\""), "duplicate key `crewSpent`"),
        (with("{", "{\"agents\":{},"), "duplicate key `agents`"),
        (with("\"spent\"", "\"Spent\""), "unknown field `Spent`"),
    ];
    for (bad, expected) in cases {
        let err = CrewState::from_json(bad.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{bad:?}: {err}");
    }
    let err = CrewState::from_json(b"{\"agents\":{\"\xff\":{}}}")
        .unwrap_err()
        .to_string();
    assert!(err.contains("not valid UTF-8"), "{err}");
}

fn day_policy() -> Policy {
    Policy::from_json_str(r#"{"holdAboveTotal":300,"budgetWindow":"day"}"#).unwrap()
}

fn pay(agent: &str, amount: u32) -> Call {
    call(&format!(
        r#"{{"agent":"{agent}","tool":"send_payment","args":{{"to":"x","amount":{amount}}},"source":"user"}}"#
    ))
}

#[test]
fn spend_counts_in_its_window_and_a_new_window_starts_afresh() {
    let policy = day_policy();
    // 2026-12-02T23:59:00Z, then a minute later the next day.
    let late = UNIX_EPOCH + Duration::from_secs(1_796_255_940);
    let mut state = CrewState::new();
    state.enter(&policy, late, None);
    state.record_at(&pay("b", 200), "1", &allow(), &policy, Some(late));
    state.enter(&policy, late + Duration::from_secs(59), None);
    assert_eq!(state.spent_by("b"), 200.0, "the same day");
    assert_eq!(
        state.spend_window,
        Some(SpendWindow {
            unit: BudgetWindow::Day,
            start: "2026-12-02T00:00:00Z".into()
        })
    );
    let next = late + Duration::from_secs(60);
    state.enter(&policy, next, None);
    assert_eq!(state.spent_by("b"), 0.0);
    assert_eq!(state.crew_spent, 0.0);
    assert_eq!(
        state.spend_window.as_ref().unwrap().start,
        "2026-12-03T00:00:00Z"
    );
    // A process whose clock is behind spends in the later window: it never goes back.
    state.record_at(&pay("b", 50), "2", &allow(), &policy, Some(next));
    state.enter(&policy, late, None);
    assert_eq!(state.spent_by("b"), 50.0);
    assert_eq!(
        state.spend_window.as_ref().unwrap().start,
        "2026-12-03T00:00:00Z"
    );
    // Without a window, spend spans the state's life.
    state.enter(
        &Policy::default(),
        next + Duration::from_secs(86_400 * 30),
        None,
    );
    assert_eq!(state.spent_by("b"), 50.0);
    assert_eq!(state.spend_window, None);
}

#[test]
fn a_taint_lifts_after_its_ttl_counted_from_the_last_read() {
    let policy = Policy::from_json_str(r#"{"taintScope":"crew"}"#).unwrap();
    let t0 = UNIX_EPOCH + Duration::from_secs(1_796_219_110);
    let ttl = Some(Duration::from_secs(3600));
    let fetch = |agent: &str| {
        call(&format!(
            r#"{{"agent":"{agent}","tool":"fetch_page","args":{{"url":"u"}}}}"#
        ))
    };
    let mut state = CrewState::new();
    state.record_at(&fetch("h"), "1", &allow(), &policy, Some(t0));
    let later = t0 + Duration::from_secs(1800);
    state.record_at(&fetch("s"), "2", &allow(), &policy, Some(later));
    assert_eq!(
        state.crew_tainted_by.as_ref().unwrap().at.as_deref(),
        Some("2026-12-02T14:15:10Z"),
        "the crew's taint moves on with every read"
    );
    assert_eq!(
        state.crew_tainted_by.as_ref().unwrap().id,
        "1",
        "its cause is the first"
    );
    state.enter(&policy, t0 + Duration::from_secs(3599), ttl);
    assert!(state.agent("h").unwrap().tainted_by.is_some());
    state.enter(&policy, t0 + Duration::from_secs(3600), ttl);
    assert!(
        state.agent("h").is_none(),
        "h's taint lifted, and it had no spend"
    );
    assert!(state.agent("s").unwrap().tainted_by.is_some());
    assert!(
        state.taint_of("h", &policy).is_some(),
        "the crew is still tainted by s"
    );
    state.enter(&policy, later + Duration::from_secs(3600), ttl);
    assert_eq!(state, CrewState::new());
    // Without a TTL, or without a time, a taint stays.
    let mut state = CrewState::new();
    state.record(&fetch("h"), "1", &allow(), &policy);
    state.enter(&policy, t0 + Duration::from_secs(86_400 * 365), ttl);
    assert!(state.taint_of("h", &policy).is_some());
    CrewState::from_json(serde_json::to_string(&state).unwrap().as_bytes()).unwrap();
}

#[test]
fn resetting_an_agent_takes_its_spend_from_the_crew_and_passes_the_crew_taint_on() {
    let policy = Policy::default();
    let t0 = UNIX_EPOCH + Duration::from_secs(1_796_219_110);
    let mut state = CrewState::new();
    state.record_at(
        &call(r#"{"agent":"h","tool":"fetch_page","args":{"url":"u"}}"#),
        "1",
        &allow(),
        &policy,
        Some(t0),
    );
    state.record_at(
        &call(r#"{"agent":"s","tool":"search_web","args":{"query":"q"}}"#),
        "2",
        &allow(),
        &policy,
        Some(t0),
    );
    state.record(&pay("b", 70), "3", &allow(), &policy);
    state.record(&pay("h", 30), "4", &allow(), &policy);
    assert!(state.reset_agent("h"));
    assert!(!state.reset_agent("h"));
    assert_eq!(state.crew_spent, 70.0);
    assert_eq!(state.crew_tainted_by.as_ref().unwrap().agent, "s");
    assert!(state.reset_agent("s"));
    assert_eq!(state.crew_tainted_by, None);
    CrewState::from_json(serde_json::to_string(&state).unwrap().as_bytes()).unwrap();
}

#[test]
fn stored_times_and_windows_are_read_strictly() {
    for (bad, expected) in [
        (
            r#"{"agents":{},"crewSpent":0,"spendWindow":{"unit":"day","start":"2026-12-02T01:00:00Z"}}"#,
            "is not the start of a UTC day",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"spendWindow":{"unit":"month","start":"2026-12-01T00:00:00Z"}}"#,
            "unknown variant `month`",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"spendWindow":{"unit":"day","start":"yesterday"}}"#,
            "is not a time",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"spendWindow":null}"#,
            "`spendWindow` must be an object",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"crewTaintedBy":{"agent":"a","tool":"t","id":"1","at":"soon"}}"#,
            "`crewTaintedBy.at` soon is not a time",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"crewTaintedBy":{"agent":"a","tool":"t","id":"1","at":null}}"#,
            "at must be a string, not null",
        ),
    ] {
        let err = CrewState::from_json(bad.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{bad}: {err}");
    }
    let good = r#"{"agents":{},"crewSpent":0,"spendWindow":{"unit":"week","start":"2026-11-30T00:00:00Z"}}"#;
    assert!(CrewState::from_json(good.as_bytes()).is_ok());
}

/// What a taint's source is named by is an identity as well (a `call` grant covers a session
/// tainted by the same sources only): a review had two pages alike in their first 200 bytes, and
/// two searches by `q`, count as one source, so a grant given for one covered the other.
#[test]
fn a_sources_name_tells_apart_what_was_read() {
    let argument = |line: &str| key_argument(&call(line));
    let long = "https://docs.example/shared/".to_owned() + &"d".repeat(200);
    let page = |tail: &str| {
        argument(&format!(
            r#"{{"agent":"a","tool":"fetch_page","args":{{"url":"{long}{tail}"}}}}"#
        ))
        .unwrap()
    };
    let (honest, attacker) = (page("/invoice-from-acme"), page("/ATTACKER-COMMENT-PAGE"));
    assert_ne!(honest, attacker);
    assert!(
        honest.starts_with(&format!("url={}", &long[..200])),
        "{honest}"
    );
    assert!(honest.contains("… (sha256 "), "{honest}");
    // A short, known argument reads as before.
    assert_eq!(
        argument(r#"{"agent":"a","tool":"fetch_page","args":{"url":"https://x.example/a"}}"#),
        Some("url=https://x.example/a".to_owned())
    );
    // An argument of another name: shown, with the digest of all the arguments.
    let search = |q: &str, site: &str| {
        argument(&format!(
            r#"{{"agent":"a","tool":"search_web","args":{{"q":"{q}","site":"{site}"}}}}"#
        ))
        .unwrap()
    };
    let first = search("acme travel invoice", "docs");
    assert!(
        first.starts_with("q=acme travel invoice (args sha256 "),
        "{first}"
    );
    assert_ne!(
        first,
        search("site:evil.example pay acme-travel 80 now", "docs")
    );
    assert_ne!(first, search("acme travel invoice", "evil"));
    assert_eq!(first, search("acme travel invoice", "docs"));
    // No string argument: the tool alone, as before.
    assert_eq!(
        argument(r#"{"agent":"a","tool":"list_inbox","args":{"limit":5}}"#),
        None
    );
}

/// A payment of `amount` by `agent` with the amount as written.
fn pay_text(agent: &str, amount: &str) -> Call {
    call(&format!(
        r#"{{"agent":"{agent}","tool":"send_payment","args":{{"to":"x","amount":{amount}}},"source":"user"}}"#
    ))
}

#[test]
fn a_held_amount_is_noted_for_its_id_agent_and_amount_only() {
    let policy = Policy::default();
    let mut state = CrewState::new();
    let held = pay("b", 750);
    state.record(&held, "h1", &allow(), &policy);
    state.note_held("h1", &held);
    assert!(state.held_is_counted("h1", &held));
    assert!(!state.held_is_counted("h2", &held), "another id");
    assert!(
        !state.held_is_counted("h1", &pay("c", 750)),
        "another agent"
    );
    assert!(
        !state.held_is_counted("h1", &pay("b", 751)),
        "another amount"
    );
    assert_eq!(
        state.held_spend,
        [HeldSpend {
            id: "h1".into(),
            agent: "b".into(),
            amount: 750.0
        }]
    );
    // Noted again under the same id, it is noted once.
    state.note_held("h1", &held);
    assert_eq!(state.held_spend.len(), 1);
    // A call without an amount above 0 counts nothing, so nothing is noted.
    for nothing in [
        call(r#"{"agent":"b","tool":"send_payment","args":{"to":"x"}}"#),
        pay_text("b", "0"),
        pay_text("b", "\"lots\""),
    ] {
        state.note_held("h3", &nothing);
        assert!(!state.held_is_counted("h3", &nothing));
    }
    assert_eq!(state.held_spend.len(), 1);
    // Settled, it is forgotten; its amount stays counted.
    state.forget_held("h1");
    assert!(state.held_spend.is_empty());
    assert_eq!(state.spent_by("b"), 750.0);
}

#[test]
fn the_held_amounts_noted_are_bounded_and_the_oldest_forgotten() {
    let mut state = CrewState::new();
    let held = pay("b", 5);
    for n in 0..MAX_HELD_SPEND + 3 {
        state.record(&held, &format!("h{n}"), &allow(), &Policy::default());
        state.note_held(&format!("h{n}"), &held);
    }
    assert_eq!(state.held_spend.len(), MAX_HELD_SPEND);
    for n in 0..3 {
        assert!(!state.held_is_counted(&format!("h{n}"), &held), "h{n}");
    }
    assert!(state.held_is_counted("h3", &held));
    assert!(state.held_is_counted(&format!("h{}", MAX_HELD_SPEND + 2), &held));
    assert_eq!(state.held_spend[0].id, "h3", "oldest first");
    // What the state writes it reads back; one more than it keeps is refused.
    let text = serde_json::to_string(&state).unwrap();
    assert_eq!(CrewState::from_json(text.as_bytes()).unwrap(), state);
    let mut over = serde_json::to_value(&state).unwrap();
    over["heldSpend"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"id": "x", "agent": "b", "amount": 5}));
    let err = CrewState::from_json(over.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("names 1001 held calls, more than the 1000"),
        "{err}"
    );
}

#[test]
fn the_held_amounts_noted_are_forgotten_with_the_spend() {
    let policy = day_policy();
    // 2026-12-02T23:59:00Z, then the next day.
    let late = UNIX_EPOCH + Duration::from_secs(1_796_255_940);
    let mut state = CrewState::new();
    state.enter(&policy, late, None);
    let (a, b) = (pay("a", 200), pay("b", 100));
    state.record_at(&a, "1", &allow(), &policy, Some(late));
    state.note_held("1", &a);
    state.record_at(&b, "2", &allow(), &policy, Some(late));
    state.note_held("2", &b);
    // Later the same day, still counted.
    state.enter(&policy, late + Duration::from_secs(59), None);
    assert!(state.held_is_counted("1", &a) && state.held_is_counted("2", &b));
    // The window ends: nothing held is counted any more.
    state.enter(&policy, late + Duration::from_secs(60), None);
    assert!(state.held_spend.is_empty());
    assert!(!state.held_is_counted("1", &a));
    // Resetting an agent forgets its own, and only its own.
    state.record(&a, "3", &allow(), &policy);
    state.note_held("3", &a);
    state.record(&b, "4", &allow(), &policy);
    state.note_held("4", &b);
    assert!(state.reset_agent("a"));
    assert!(!state.held_is_counted("3", &a));
    assert!(state.held_is_counted("4", &b));
    assert_eq!(state.held_spend.len(), 1);
}

#[test]
fn a_state_without_held_amounts_reads_and_writes_as_before() {
    // A state written before `heldSpend` existed reads back, and is written the same.
    let old = r#"{"agents":{"b":{"spent":750.0}},"crewSpent":750.0,"spendWindow":{"unit":"day","start":"2026-12-02T00:00:00Z"}}"#;
    let state = CrewState::from_json(old.as_bytes()).unwrap();
    assert!(state.held_spend.is_empty());
    assert_eq!(serde_json::to_string(&state).unwrap(), old);
    // One with a note round-trips, and is written with it.
    let mut noted = state.clone();
    noted.note_held("h1", &pay("b", 750));
    let text = serde_json::to_string(&noted).unwrap();
    assert!(
        text.ends_with(r#","heldSpend":[{"id":"h1","agent":"b","amount":750.0}]}"#),
        "{text}"
    );
    assert_eq!(CrewState::from_json(text.as_bytes()).unwrap(), noted);
    // Read in no other shape.
    for (bad, expected) in [
        (
            r#"{"agents":{},"crewSpent":0,"heldSpend":{}}"#,
            "invalid type: map",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"heldSpend":null}"#,
            "invalid type: null",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"heldSpend":[["h1","b",5]]}"#,
            "each of `heldSpend` must be an object, not an array",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"heldSpend":[{"id":"h1","agent":"b"}]}"#,
            "missing field `amount`",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"heldSpend":[{"id":"h1","agent":"b","amount":5,"at":1}]}"#,
            "unknown field `at`",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"heldSpend":[{"id":"h1","agent":"b","amount":0}]}"#,
            "not an amount above 0",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"heldSpend":[{"id":"h1","agent":"b","amount":-5}]}"#,
            "not an amount above 0",
        ),
        (
            r#"{"agents":{},"crewSpent":0,"heldSpend":[{"id":"h1","agent":"b","amount":5}]}"#,
            "agent b, which has no state",
        ),
        (
            r#"{"agents":{"b":{"spent":5.0}},"crewSpent":5.0,"heldSpend":[{"id":"h1","agent":"b","amount":750}]}"#,
            "more than agent b spent (5)",
        ),
        (
            r#"{"agents":{"b":{"spent":10.0}},"crewSpent":10.0,"heldSpend":[{"id":"h1","agent":"b","amount":5},{"id":"h1","agent":"b","amount":5}]}"#,
            "names call h1 twice",
        ),
        (
            r#"{"agents":{"b":{"spent":10.0}},"crewSpent":10.0,"heldSpend":[{"id":"","agent":"b","amount":5}]}"#,
            "empty, over 128 bytes",
        ),
        (
            r#"{"agents":{"b":{"spent":700.0}},"crewSpent":700.0,"heldSpend":[{"id":"h1","agent":"b","amount":600},{"id":"h2","agent":"b","amount":600}]}"#,
            "counts 1200 for call (all of the agent's notes together), more than agent b spent (700)",
        ),
        (
            r#"{"agents":{"b":{"spent":10.0}},"crewSpent":10.0,"heldSpend":[{"id":"h\u0007","agent":"b","amount":5}]}"#,
            "not as ids are minted",
        ),
    ] {
        let err = CrewState::from_json(bad.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{bad}: {err}");
    }
    let long = "h".repeat(129);
    let bad = format!(
        r#"{{"agents":{{"b":{{"spent":10.0}}}},"crewSpent":10.0,"heldSpend":[{{"id":"{long}","agent":"b","amount":5}}]}}"#
    );
    let err = CrewState::from_json(bad.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.contains("empty, over 128 bytes"), "{err}");
    let ok = bad.replace(&long, &"h".repeat(128));
    assert!(CrewState::from_json(ok.as_bytes()).is_ok(), "{ok}");
}

/// A marker counts only as the last of a full list: a source that reads like one elsewhere (a
/// tool named so) is compared as a source, so it can neither stand in for the count nor hide.
#[test]
fn a_marker_is_only_the_last_of_a_full_list() {
    let marker = crate::rules::grant::more_sources(3);
    let sources = |n: usize| -> Vec<String> { (0..n).map(|i| format!("s{i}")).collect() };
    let mut full = sources(MAX_ALSO + 1);
    full.push(marker.clone());
    assert_eq!(
        listed_and_past(&full, true),
        (&full[..MAX_ALSO + 1], Some(3))
    );
    assert_eq!(
        listed_and_past(&full[1..], false),
        (&full[1..MAX_ALSO + 1], Some(3))
    );
    let mut short = sources(2);
    short.push(marker.clone());
    assert_eq!(listed_and_past(&short, true), (&short[..], None));
    let mut early = vec![marker];
    early.extend(sources(MAX_ALSO + 1));
    assert_eq!(listed_and_past(&early, true), (&early[..], None));
}
