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

    /// A door under `policy`, its taints lifted `taint_ttl` after their last read.
    fn with(policy: Policy, taint_ttl: Option<Duration>) -> Door {
        let mut door = Door::new();
        door.policy = policy;
        door.timing.taint_ttl = taint_ttl;
        door
    }

    /// A call first decided, by a door that asks through the client's retry.
    fn decide(&mut self, amount: u32, id: &str) -> Decision {
        self.decide_call(&pay(amount), id).decision
    }

    fn decide_call(&mut self, call: &Call, id: &str) -> Judgement {
        decide_on(
            &mut self.state,
            call,
            id,
            &self.policy,
            &self.timing,
            false,
            true,
            &[],
        )
        .judgement
    }

    fn again(&mut self, amount: u32, id: &str, asked_again: bool) -> Judgement {
        self.again_call(&pay(amount), id, asked_again)
    }

    fn again_call(&mut self, call: &Call, id: &str, asked_again: bool) -> Judgement {
        decide_again_on(
            &mut self.state,
            call,
            id,
            &self.policy,
            &self.timing,
            &[],
            &|_| asked_again,
        )
    }

    fn crew_mut(&mut self) -> &mut CrewState {
        match &mut self.state {
            StateHandle::Memory(state) => state,
            StateHandle::Shared(_) => unreachable!("in memory"),
        }
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
fn a_retry_whose_amount_is_counted_is_judged_without_it_and_not_counted_again() {
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

/// `checkout` pays a shop and answers with the shop's page (untrusted output), held above 100;
/// `send_payment` is sensitive, so a tainted agent's is held.
fn tainting() -> Policy {
    Policy::from_json_str(
        r#"{"holdAboveAmount":100,"sensitiveTools":["send_payment"],"untrustedOutputTools":["checkout"]}"#,
    )
    .unwrap()
}

fn checkout(amount: u32) -> Call {
    let line = format!(
        r#"{{"agent":"b","tool":"checkout","args":{{"url":"https://shop.example/cart","amount":{amount}}},"source":"agent"}}"#
    );
    Call::parse_line(line.as_bytes()).unwrap().0
}

/// 2026-12-02T12:00:00Z, as the state writes it, `plus` seconds on.
fn at(plus: u64) -> Option<String> {
    Some(crate::rules::state::rfc3339_seconds(1_796_212_800 + plus))
}

impl Door {
    /// The held `checkout` of 750 (`h`), which tainted agent `b` when it was held.
    fn held_checkout(taint_ttl: Option<Duration>) -> Door {
        let mut door = Door::with(tainting(), taint_ttl);
        let held = door.decide_call(&checkout(750), "h");
        assert_eq!(held.decision, Decision::Hold, "{held:?}");
        assert_eq!(door.taint_id(), Some("h"));
        assert!(door.crew().held_is_counted("h", &checkout(750)));
        door
    }

    /// The id of the call whose read taints `b`, and the crew's, which must be the same.
    fn taint_id(&self) -> Option<&str> {
        let crew = self.crew();
        let agent = crew
            .taint_of("b", &self.policy)
            .map(|cause| cause.id.as_str());
        assert_eq!(
            crew.crew_tainted_by.as_ref().map(|cause| cause.id.as_str()),
            agent
        );
        agent
    }

    /// `b`'s sensitive payment of 50 (within every limit), decided.
    fn payment(&mut self, id: &str) -> Judgement {
        self.decide_call(&pay(50), id)
    }
}

/// The hold tainted the agent; `sc-state reset` (the whole crew's, or the agent's) forgot the
/// taint and the held amount before the person's yes. The retry runs the call, so its
/// untrusted output reaches the agent: the agent is tainted by it again, as when it was held,
/// and its next sensitive call is held. Before the fix, the retry recorded only the amount and
/// the payment was allowed.
#[test]
fn a_retry_after_a_reset_taints_its_agent_again() {
    for whole in [true, false] {
        let mut door = Door::held_checkout(None);
        if whole {
            *door.crew_mut() = CrewState::new();
        } else {
            assert!(door.crew_mut().reset_agent("b"));
        }
        assert_eq!(door.taint_id(), None);
        assert!(door.crew().held_spend.is_empty());
        let again = door.again_call(&checkout(750), "h", false);
        assert_eq!(again.decision, Decision::Hold, "{again:?}");
        assert!(
            again.reasons[0].contains("above the hold limit"),
            "{again:?}"
        );
        assert_eq!(door.taint_id(), Some("h"), "whole: {whole}");
        let cause = door.crew().taint_of("b", &door.policy).unwrap();
        assert_eq!(cause.tool, "checkout");
        // Counted once, now, as a call first decided is.
        assert_eq!(door.crew().spent_by("b"), 750.0);
        assert!(door.crew().held_spend.is_empty());
        let payment = door.payment("p");
        assert_eq!(payment.decision, Decision::Hold, "{payment:?}");
        assert!(
            payment.reasons[0].starts_with("b is tainted")
                && payment.reasons[0].contains("checkout (id h"),
            "{payment:?}"
        );
    }
}

/// A taint TTL lifted the hold's taint before the person's yes; the held amount is still
/// counted. The retry, judged without its own amount, records its read again but not its
/// amount: tainted again from now, the 750 counted once.
#[test]
fn a_retry_after_a_taint_ttl_lifted_its_taint_taints_again_and_counts_once() {
    let mut door = Door::held_checkout(Some(Duration::from_secs(3_600)));
    door.clock.advance(Duration::from_secs(3_600));
    // The taint is lifted: a payment now is allowed.
    assert_eq!(door.payment("p").decision, Decision::Allow);
    assert_eq!(door.taint_id(), None);
    assert!(door.crew().held_is_counted("h", &checkout(750)));
    let again = door.again_call(&checkout(750), "h", false);
    assert_eq!(again.decision, Decision::Hold, "{again:?}");
    assert_eq!(door.taint_id(), Some("h"));
    let cause = door.crew().taint_of("b", &door.policy).unwrap();
    assert_eq!(cause.at, at(3_600), "counted from the retry's read");
    assert_eq!(door.crew().spent_by("b"), 800.0, "750 once, and the 50");
    assert_eq!(door.crew().crew_spent, 800.0);
    assert!(door.crew().held_spend.is_empty());
    assert_eq!(door.payment("q").decision, Decision::Hold);
}

/// With the taint still there, the retry's read changes only its time: the cause (the first
/// read's, here an earlier call's) is kept, no source is added, and the amount is counted once.
/// Asked again, the read is recorded again on the next retry, as harmlessly.
#[test]
fn a_retry_with_its_taint_still_there_keeps_the_cause_and_counts_once() {
    let mut door = Door::with(tainting(), Some(Duration::from_secs(3_600)));
    assert_eq!(
        door.decide_call(&checkout(50), "r").decision,
        Decision::Allow
    );
    door.clock.advance(Duration::from_secs(60));
    assert_eq!(
        door.decide_call(&checkout(750), "h").decision,
        Decision::Hold
    );
    let before = door.crew().clone();
    let cause = before.taint_of("b", &door.policy).unwrap().clone();
    assert_eq!((cause.id.as_str(), &cause.at), ("r", &at(60)));
    door.clock.advance(Duration::from_secs(60));
    door.again_call(&checkout(750), "h", true);
    door.clock.advance(Duration::from_secs(60));
    let again = door.again_call(&checkout(750), "h", false);
    assert_eq!(again.decision, Decision::Hold, "{again:?}");
    let after = door.crew();
    let moved = cause.clone().at(at(180));
    assert_eq!(after.taint_of("b", &door.policy), Some(&moved));
    assert_eq!(after.crew_tainted_by.as_ref(), Some(&moved));
    assert_eq!(after.spent_by("b"), 800.0);
    assert_eq!(after.crew_spent, 800.0);
    assert!(after.held_spend.is_empty());
    assert_eq!(after.provenance, before.provenance);
}
