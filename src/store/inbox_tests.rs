use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::*;
use crate::store::{OpenOptions, StateUrl};

fn open(path: &Path) -> Box<dyn Store> {
    StateUrl::Sqlite(path.to_owned())
        .open(OpenOptions {
            create: true,
            fsync: false,
        })
        .unwrap()
}

fn at(millis: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(millis)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
}

const NOW: u64 = 1_800_000_000_000;
const LINE: &str =
    r#"{"id":"r1","call":{"agent":"a","tool":"t","args":{}},"decision":"hold","reasons":["x"]}"#;

fn new_hold(line: &str) -> NewHold {
    NewHold {
        door: Door::Approve,
        pid: 42,
        host: "h".into(),
        line: line.into(),
        scopes: vec![Scope::Once, Scope::Call],
        timeout: Some(Duration::from_secs(60)),
    }
}

fn yes<'a>(digest: &'a str, by: &'a str) -> Answer<'a> {
    Answer {
        approve: true,
        digest,
        scope: Scope::Call,
        by,
    }
}

#[test]
fn a_hold_is_answered_once_by_the_first_inbox_and_the_other_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let (mut one, mut two) = (open(&path), open(&path));
    let hold = put(one.as_mut(), "c", new_hold(LINE), at(NOW)).unwrap();
    assert!(is_lower_hex(&hold.id, 32));
    assert_eq!(hold.digest, sha256_hex(LINE.as_bytes()));
    assert_eq!(hold.state, HoldState::Pending);
    assert_eq!(hold.expires, Some(NOW + 60_000));
    let listed = list(two.as_mut(), "c").unwrap();
    assert_eq!(listed, vec![hold.clone()]);
    let won = answer(
        one.as_mut(),
        "c",
        &hold.id,
        &yes(&hold.digest, "inbox 1"),
        at(NOW + 10),
    )
    .unwrap()
    .unwrap();
    assert_eq!(won.state, HoldState::Approved);
    assert_eq!(won.scope, Some(Scope::Call));
    assert_eq!(won.by.as_deref(), Some("inbox 1"));
    let lost = answer(
        two.as_mut(),
        "c",
        &hold.id,
        &yes(&hold.digest, "inbox 2"),
        at(NOW + 20),
    )
    .unwrap()
    .unwrap_err();
    assert_eq!(lost.0, "the hold was already answered");
    // The door sees the answer, then takes the hold out.
    let seen = heartbeat(two.as_mut(), "c", &hold.id, at(NOW + 30))
        .unwrap()
        .unwrap();
    assert_eq!(seen, won);
    let taken = finish(one.as_mut(), "c", &hold.id, "unused", at(NOW + 40)).unwrap();
    assert_eq!(taken, Some(won));
    assert!(list(one.as_mut(), "c").unwrap().is_empty());
    let gone = answer(
        two.as_mut(),
        "c",
        &hold.id,
        &yes(&hold.digest, "x"),
        at(NOW + 50),
    )
    .unwrap()
    .unwrap_err();
    assert_eq!(gone.0, "the hold is no longer in the crew's inbox");
}

#[test]
fn an_answer_is_bound_to_the_digest_the_heartbeat_and_the_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("s.sqlite"));
    let store = store.as_mut();
    let hold = put(store, "c", new_hold(LINE), at(NOW)).unwrap();
    let other = sha256_hex(b"{}");
    let wrong = answer(store, "c", &hold.id, &yes(&other, "i"), at(NOW + 1)).unwrap();
    assert_eq!(
        wrong.unwrap_err().0,
        "the digest is not that of this hold's record"
    );
    // A heartbeat less than a second after the last writes nothing; one after it does.
    let early = heartbeat(store, "c", &hold.id, at(NOW + 500))
        .unwrap()
        .unwrap();
    assert_eq!(early.heartbeat, NOW);
    let beat = heartbeat(store, "c", &hold.id, at(NOW + 1_500))
        .unwrap()
        .unwrap();
    assert_eq!(beat.heartbeat, NOW + 1_500);
    // The door went quiet for longer than STALE_AFTER: its hold cannot be answered.
    let stale = NOW + 1_500 + millis_of(STALE_AFTER) + 1;
    let gone = answer(store, "c", &hold.id, &yes(&hold.digest, "i"), at(stale)).unwrap();
    assert_eq!(
        gone.unwrap_err().0,
        "the door that holds the call is gone: it was declined"
    );
    // Past its expiry, neither.
    let due = answer(
        store,
        "c",
        &hold.id,
        &yes(&hold.digest, "i"),
        at(NOW + 60_000),
    )
    .unwrap();
    assert_eq!(due.unwrap_err().0, "the hold has expired: it was declined");
    // Withdrawn, it stays so, and an answer is refused.
    let ended = end(
        store,
        "c",
        &hold.id,
        HoldState::Withdrawn,
        "inbox",
        "the door is gone",
        at(NOW + 2_000),
    )
    .unwrap()
    .unwrap();
    assert_eq!(ended.why.as_deref(), Some("the door is gone"));
    assert_eq!(
        end(
            store,
            "c",
            &hold.id,
            HoldState::Expired,
            "inbox",
            "late",
            at(NOW + 2_001)
        )
        .unwrap(),
        None
    );
    let refused = answer(
        store,
        "c",
        &hold.id,
        &yes(&hold.digest, "i"),
        at(NOW + 2_002),
    )
    .unwrap();
    assert_eq!(
        refused.unwrap_err().0,
        "the hold was withdrawn: it was declined"
    );
}

#[test]
fn a_scope_the_hold_does_not_offer_is_once_and_a_no_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("s.sqlite"));
    let store = store.as_mut();
    let mut new = new_hold(LINE);
    new.scopes = vec![Scope::Once];
    let one = put(store, "c", new.clone(), at(NOW)).unwrap();
    let mut value = yes(&one.digest, "i");
    value.scope = Scope::Value;
    let won = answer(store, "c", &one.id, &value, at(NOW + 1))
        .unwrap()
        .unwrap();
    assert_eq!(won.scope, Some(Scope::Once));
    let two = put(store, "c", new, at(NOW)).unwrap();
    let mut no = yes(&two.digest, "i");
    no.approve = false;
    let declined = answer(store, "c", &two.id, &no, at(NOW + 1))
        .unwrap()
        .unwrap();
    assert_eq!(
        (declined.state, declined.scope),
        (HoldState::Declined, None)
    );
    // The door whose time is up ends its pending hold as expired; an answer given stands.
    let three = put(store, "c", new_hold(LINE), at(NOW)).unwrap();
    let expired = finish(store, "c", &three.id, "no answer", at(NOW + 5))
        .unwrap()
        .unwrap();
    assert_eq!(expired.state, HoldState::Expired);
    assert_eq!(
        finish(store, "c", &two.id, "no answer", at(NOW + 5))
            .unwrap()
            .unwrap()
            .state,
        HoldState::Declined
    );
}

#[test]
fn the_inbox_is_bounded_and_old_holds_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("s.sqlite"));
    let store = store.as_mut();
    let long = format!(r#"{{"x":"{}"}}"#, "a".repeat(MAX_LINE_BYTES));
    assert!(matches!(
        put(store, "c", new_hold(&long), at(NOW)),
        Err(InboxError::Invalid(_))
    ));
    assert!(matches!(
        put(store, "c", new_hold("two\nlines"), at(NOW)),
        Err(InboxError::Invalid(_))
    ));
    for _ in 0..MAX_HOLDS {
        put(store, "c", new_hold(LINE), at(NOW)).unwrap();
    }
    assert!(matches!(
        put(store, "c", new_hold(LINE), at(NOW)),
        Err(InboxError::Full { .. })
    ));
    // Another crew's inbox is its own.
    put(store, "d", new_hold(LINE), at(NOW)).unwrap();
    // An hour later, every door is long gone: the holds are removed on the next change.
    let later = NOW + millis_of(FORGOTTEN_AFTER) + 1;
    let fresh = put(store, "c", new_hold(LINE), at(later)).unwrap();
    assert_eq!(list(store, "c").unwrap(), vec![fresh.clone()]);
    // An ended hold nobody collected is removed after ENDED_KEPT.
    answer(
        store,
        "c",
        &fresh.id,
        &yes(&fresh.digest, "i"),
        at(later + 1),
    )
    .unwrap()
    .unwrap();
    let after = later + millis_of(ENDED_KEPT) + 2;
    let newer = put(store, "c", new_hold(LINE), at(after)).unwrap();
    assert_eq!(list(store, "c").unwrap(), vec![newer]);
}

#[test]
fn a_stored_inbox_this_program_did_not_write_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("s.sqlite"));
    let store = store.as_mut();
    let good = put(store, "c", new_hold(LINE), at(NOW)).unwrap();
    let stored = text_of(std::slice::from_ref(&good));
    let mut tampered = good.clone();
    tampered.line = LINE.replace("\"t\"", "\"u\"");
    let mut answered_no_scope = good.clone();
    answered_no_scope.state = HoldState::Approved;
    answered_no_scope.by = Some("i".into());
    answered_no_scope.ended = Some(NOW);
    let cases = [
        "not json".to_owned(),
        stored.replace(FORMAT, "skeleton-crew inbox 9"),
        stored.replace("\"holds\"", "\"extra\":1,\"holds\""),
        stored.replace("\"pid\"", "\"unknown\":1,\"pid\""),
        text_of(&[tampered]),
        text_of(&[answered_no_scope]),
        text_of(&[good.clone(), good.clone()]),
    ];
    for text in cases {
        store
            .update_value(&ValueKey::inbox("c"), &mut |_| {
                Ok(ValueChange::Set(text.clone()))
            })
            .unwrap();
        let err = list(store, "c").unwrap_err();
        assert!(matches!(err, InboxError::Refused { .. }), "{text}: {err}");
        assert!(
            answer(store, "c", &good.id, &yes(&good.digest, "i"), at(NOW + 1)).is_err(),
            "{text}"
        );
    }
}
