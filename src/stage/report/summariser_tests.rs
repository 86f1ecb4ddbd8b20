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
    r#"{"ts":"t","stage":"exec","id":"1","agent":"scout","tool":"search_web","decision":"allow","outcome":{"status":"executed","reason":"r"},"backend":{"command":"search","durationMs":1,"exitStatus":0,"signal":null,"stdoutBytes":2,"timedOut":false}}"#,
    "\n",
    r#"{"ts":"t","stage":"exec-start","id":"2","agent":"buyer","tool":"send_payment","decision":"hold","backend":{"command":"pay","sandboxed":true}}"#,
    "\n",
    r#"{"ts":"t","stage":"exec","id":"2","agent":"buyer","tool":"send_payment","decision":"hold","outcome":{"status":"failed","reason":"r"},"backend":{"command":"pay","durationMs":1,"exitStatus":1,"signal":null,"stdoutBytes":0,"timedOut":false,"sandboxed":true}}"#,
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
fn exec_starts_are_events_but_neither_calls_nor_outcomes() {
    for filter in [
        Filter::default(),
        Filter {
            agent: Some("buyer".into()),
            ..Filter::default()
        },
    ] {
        let with = summary(WITH_STARTS, filter.clone());
        let without = summary(&without_starts(WITH_STARTS), filter.clone());
        // Only the start no outcome followed is a problem, at its own line.
        assert_eq!(with.problems.len(), 1, "{:?}", with.problems);
        assert_eq!(with.problems[0].line, 8, "{:?}", with.problems);
        assert!(
            with.problems[0]
                .problem
                .starts_with("exec-start for id 3 has no exec event in the logs read"),
            "{:?}",
            with.problems
        );
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

#[test]
fn a_start_is_done_by_an_outcome_in_another_log() {
    let (first, second): (Vec<&str>, Vec<&str>) = WITH_STARTS
        .lines()
        .partition(|line| !line.contains(r#""stage":"exec","id":"2""#));
    let logs = [
        ("a.jsonl".to_owned(), first.join("\n") + "\n"),
        ("b.jsonl".to_owned(), second.join("\n") + "\n"),
    ];
    let summary = summarise_filtered(
        logs.iter()
            .map(|(name, text)| (name.clone(), text.as_bytes())),
        Filter::default(),
    )
    .unwrap();
    let ids: Vec<&str> = summary
        .problems
        .iter()
        .map(|problem| problem.problem.split_whitespace().nth(3).unwrap_or(""))
        .collect();
    assert_eq!(ids, ["3"], "{:?}", summary.problems);
    assert_eq!(summary.problems[0].log, "a.jsonl");
}

#[test]
fn another_agents_start_is_not_the_filtered_agents_problem() {
    let scout = summary(
        WITH_STARTS,
        Filter {
            agent: Some("scout".into()),
            ..Filter::default()
        },
    );
    assert!(scout.problems.is_empty(), "{:?}", scout.problems);
}

#[test]
fn an_outcome_that_ran_no_backend_does_not_end_a_start() {
    // The same sealed record fed again after sc-exec was killed mid-run: the second sc-exec
    // failed it before any backend; the first run's start still has no outcome.
    let log = format!(
        "{WITH_STARTS}{}\n",
        r#"{"ts":"t","stage":"exec","id":"3","agent":"buyer","tool":"send_payment","decision":"allow","outcome":{"status":"failed","reason":"no tool named send_payment"}}"#
    );
    let summary = summary(&log, Filter::default());
    assert_eq!(summary.problems.len(), 1, "{:?}", summary.problems);
    assert!(
        summary.problems[0]
            .problem
            .starts_with("exec-start for id 3 "),
        "{:?}",
        summary.problems
    );
}
