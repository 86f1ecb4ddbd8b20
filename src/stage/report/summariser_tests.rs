use super::*;

/// Two calls of a log sc-exec wrote with its `exec-start` events, and a start whose outcome never
/// came (sc-exec stopped while its backend ran).
const WITH_STARTS: &str = concat!(
    r#"{"ts":"t","stage":"gate","id":"1","decision":"allow","reasons":["ok"],"call":{"agent":"scout","tool":"search_web"}}"#,
    "\n",
    r#"{"ts":"t","stage":"gate","id":"2","decision":"hold","reasons":["big"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
    "\n",
    r#"{"ts":"t","stage":"approve","id":"2","agent":"buyer","tool":"send_payment","approval":{"approved":true,"by":"tty","answer":"yes","reason":"approved"}}"#,
    "\n",
    r#"{"ts":"t","stage":"exec-start","id":"1","agent":"scout","tool":"search_web","decision":"allow","backend":{"command":"search"}}"#,
    "\n",
    r#"{"ts":"t","stage":"exec","id":"1","agent":"scout","tool":"search_web","decision":"allow","outcome":{"status":"executed","reason":"r"}}"#,
    "\n",
    r#"{"ts":"t","stage":"exec-start","id":"2","agent":"buyer","tool":"send_payment","decision":"hold","backend":{"command":"pay","sandboxed":true}}"#,
    "\n",
    r#"{"ts":"t","stage":"exec","id":"2","agent":"buyer","tool":"send_payment","decision":"hold","outcome":{"status":"failed","reason":"r"}}"#,
    "\n",
    r#"{"ts":"t","stage":"exec-start","id":"3","agent":"buyer","tool":"send_payment","decision":"allow","backend":{"command":"pay"}}"#,
    "\n",
);

fn summary(log: &str, filter: Filter) -> Summary {
    summarise_filtered([("audit.jsonl".to_owned(), log.as_bytes())], filter).unwrap()
}

/// The log as it would be without its starts.
fn without_starts(log: &str) -> String {
    log.lines()
        .filter(|line| !line.contains(r#""stage":"exec-start""#))
        .map(|line| format!("{line}\n"))
        .collect()
}

#[test]
fn exec_starts_are_events_but_neither_calls_nor_outcomes_nor_problems() {
    for filter in [
        Filter::default(),
        Filter {
            agent: Some("buyer".into()),
            ..Filter::default()
        },
    ] {
        let with = summary(WITH_STARTS, filter.clone());
        let without = summary(&without_starts(WITH_STARTS), filter.clone());
        assert!(with.problems.is_empty(), "{:?}", with.problems);
        assert_eq!(with.calls, without.calls, "{filter:?}");
        assert_eq!(with.decisions, without.decisions, "{filter:?}");
        assert_eq!(with.holds, without.holds, "{filter:?}");
        assert_eq!(with.outcomes, without.outcomes, "{filter:?}");
        assert_eq!(with.agents, without.agents, "{filter:?}");
    }
    let with = summary(WITH_STARTS, Filter::default());
    assert_eq!(with.events, 8);
    assert_eq!(with.calls, 2);
    assert_eq!(
        with.outcomes,
        OutcomeCounts {
            executed: 1,
            skipped: 0,
            failed: 1
        }
    );
}
