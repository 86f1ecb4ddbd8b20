use super::*;

fn start(id: &str, line: u64) -> StartLine {
    StartLine {
        log: "audit.jsonl".into(),
        line,
        id: kept_id(id),
    }
}

#[test]
fn a_start_its_outcome_followed_is_done_and_one_without_is_left() {
    let mut starts = Starts::default();
    assert_eq!(starts.begin(start("a", 1)), None);
    assert_eq!(starts.begin(start("b", 2)), None);
    starts.end("a");
    starts.end("never-started");
    let left: Vec<StartLine> = starts.unfinished().collect();
    assert_eq!(left, vec![start("b", 2)]);
}

#[test]
fn a_record_started_twice_needs_two_outcomes() {
    let mut starts = Starts::default();
    starts.begin(start("a", 1));
    starts.begin(start("a", 5));
    starts.end("a");
    let left: Vec<StartLine> = starts.unfinished().collect();
    assert_eq!(left, vec![start("a", 5)]);
}

#[test]
fn memory_stays_flat_the_oldest_start_is_pushed_out_and_reported() {
    let mut starts = Starts::default();
    for n in 0..WAITING as u64 {
        assert_eq!(starts.begin(start(&format!("s-{n}"), n + 1)), None);
    }
    let pushed = starts
        .begin(start("last", 99_999))
        .expect("the oldest is pushed out");
    assert_eq!(pushed, start("s-0", 1));
    assert!(pushed.problem(true).contains("among the next 10000 starts"));
    // Its late outcome finds nothing to end; the others still wait.
    starts.end("s-0");
    assert_eq!(starts.unfinished().count(), WAITING);
}

#[test]
fn a_long_id_is_kept_small_and_still_ends_its_start() {
    let long = "x".repeat(900_000);
    let kept = kept_id(&long);
    assert!(kept.len() < 200, "{}", kept.len());
    assert_ne!(
        kept,
        kept_id(&format!("{long}y")),
        "two long ids stay apart"
    );
    let mut starts = Starts::default();
    starts.begin(start(&long, 1));
    starts.end(&long);
    assert_eq!(starts.unfinished().count(), 0);
}
