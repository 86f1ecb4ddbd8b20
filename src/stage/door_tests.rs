use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::rules::state::{CrewState, SetClock};
use crate::store::{StateHandle, Timing};
use crate::verdict::Decision;

/// 1000 a day per agent, a payment held only for the total.
fn policy() -> Policy {
    Policy::from_json_str(r#"{"holdAboveAmount":10000,"holdAboveTotal":1000,"budgetWindow":"day"}"#)
        .unwrap()
}

fn pay(amount: u32) -> Call {
    let line = format!(
        r#"{{"agent":"b","tool":"send_payment","args":{{"to":"x","amount":{amount}}},"source":"agent"}}"#
    );
    Call::parse_line(line.as_bytes()).unwrap().0
}

struct Door {
    state: StateHandle,
    clock: Arc<SetClock>,
    timing: Timing,
    policy: Policy,
}

impl Door {
    fn new() -> Door {
        // 2026-12-02T12:00:00Z.
        let clock = Arc::new(SetClock::at(1_796_212_800));
        Door {
            state: StateHandle::Memory(CrewState::new()),
            timing: Timing {
                clock: clock.clone(),
                taint_ttl: None,
            },
            clock,
            policy: policy(),
        }
    }

    /// A call first decided, by a door that asks through the client's retry.
    fn decide(&mut self, amount: u32, id: &str) -> Decision {
        let call = pay(amount);
        decide_on(
            &mut self.state,
            &call,
            id,
            &self.policy,
            &self.timing,
            false,
            true,
            &[],
        )
        .judgement
        .decision
    }

    fn again(&mut self, amount: u32, id: &str, asked_again: bool) -> Judgement {
        let call = pay(amount);
        decide_again_on(
            &mut self.state,
            &call,
            id,
            &self.policy,
            &self.timing,
            &[],
            &|_| asked_again,
        )
    }

    fn crew(&self) -> &CrewState {
        match &self.state {
            StateHandle::Memory(state) => state,
            StateHandle::Shared(_) => unreachable!("in memory"),
        }
    }

    /// The held 750, after a 400: "would total 1150 (400 before this call)".
    fn held() -> Door {
        let mut door = Door::new();
        assert_eq!(door.decide(400, "p"), Decision::Allow);
        assert_eq!(door.decide(750, "h"), Decision::Hold);
        assert!(door.crew().held_is_counted("h", &pay(750)));
        door
    }
}

#[test]
fn a_retry_whose_amount_is_counted_is_judged_without_it_and_records_nothing() {
    let mut door = Door::held();
    let again = door.again(750, "h", false);
    assert_eq!(again.decision, Decision::Hold);
    assert!(
        again.reasons[0].contains("would total 1150 (400 before this call)"),
        "{again:?}"
    );
    assert_eq!(door.crew().spent_by("b"), 1150.0);
    assert!(door.crew().held_spend.is_empty(), "settled once");
    // Asked again under the same id, the note stays for the next retry.
    let mut door = Door::held();
    door.again(750, "h", true);
    assert_eq!(door.crew().spent_by("b"), 1150.0);
    assert!(door.crew().held_is_counted("h", &pay(750)));
}

#[test]
fn a_retry_after_its_window_ended_is_judged_on_the_spend_now_and_counted() {
    let mut door = Door::held();
    // The next day: the 750 is no longer counted, and 900 is spent in the new window.
    door.clock.advance(Duration::from_secs(86_400));
    assert_eq!(door.decide(900, "q"), Decision::Allow);
    let again = door.again(750, "h", false);
    assert_eq!(again.decision, Decision::Hold);
    assert!(
        again.reasons[0].contains("would total 1650 (900 before this call)"),
        "{again:?}"
    );
    // Counted now, as a call first decided is.
    assert_eq!(door.crew().spent_by("b"), 1650.0);
    assert!(door.crew().held_spend.is_empty());
    // Asked again, it is noted as counted for the next retry (which then takes it back once).
    let mut door = Door::held();
    door.clock.advance(Duration::from_secs(86_400));
    door.decide(900, "q");
    door.again(750, "h", true);
    assert!(door.crew().held_is_counted("h", &pay(750)));
    let next = door.again(750, "h", false);
    assert!(
        next.reasons[0].contains("would total 1650 (900 before this call)"),
        "{next:?}"
    );
    assert_eq!(door.crew().spent_by("b"), 1650.0);
}

#[test]
fn a_retry_whose_note_was_forgotten_counts_its_amount_again_never_less() {
    let mut door = Door::held();
    // As many holds noted after it as a state keeps: its note is the oldest, forgotten.
    for n in 0..crate::rules::state::MAX_HELD_SPEND {
        let StateHandle::Memory(state) = &mut door.state else {
            unreachable!()
        };
        state.note_held(&format!("other-{n}"), &pay(1));
    }
    assert!(!door.crew().held_is_counted("h", &pay(750)));
    // Judged with its 750 counted twice: 1900, stricter than the 1150 the person was shown.
    let again = door.again(750, "h", false);
    assert_eq!(again.decision, Decision::Hold);
    assert!(
        again.reasons[0].contains("would total 1900 (1150 before this call)"),
        "{again:?}"
    );
}

#[test]
fn a_door_that_does_not_ask_through_a_retry_notes_nothing() {
    let mut door = Door::new();
    let call = pay(1500);
    let decided = decide_on(
        &mut door.state,
        &call,
        "h",
        &door.policy,
        &door.timing,
        false,
        false,
        &[],
    );
    assert_eq!(decided.judgement.decision, Decision::Hold);
    assert!(door.crew().held_spend.is_empty());
    // An allow by one that does is not noted either.
    let mut door = Door::new();
    assert_eq!(door.decide(1, "p"), Decision::Allow);
    assert!(door.crew().held_spend.is_empty());
}
