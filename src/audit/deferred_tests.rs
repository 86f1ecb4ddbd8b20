use super::*;
use crate::audit::log::{event_in, AuditLog};

/// A record line as the gate writes one (`{"id":…,…}` and a newline) at the end of `records`;
/// returns where its members from `"id"` on lie.
fn record(records: &mut Vec<u8>, id: &str, members: &str) -> Range<usize> {
    let opens = records.len();
    records.extend_from_slice(b"{\"id\":");
    crate::json_write::push_json_str(records, id);
    records.push(b',');
    records.extend_from_slice(members.as_bytes());
    records.extend_from_slice(b"}\n");
    opens + 1..records.len() - 2
}

/// The event the gate wrote before events were deferred: the head, the record's members after
/// its id, then `after`.
fn written_in_full(
    stage: Stage,
    id: &str,
    time: SystemTime,
    members: &str,
    after: &[&[u8]],
) -> Vec<u8> {
    let mut line = event_in(Vec::new(), stage, id, time).raw_members(members.as_bytes());
    for members in after {
        line = line.raw_members(members);
    }
    let mut line = line.finish();
    assert_eq!(line.pop(), Some(b'\n'));
    line
}

#[test]
fn a_deferred_event_is_the_line_written_in_full() {
    let times = [
        SystemTime::UNIX_EPOCH,
        SystemTime::UNIX_EPOCH + Duration::new(1_764_864_000, 0),
        SystemTime::UNIX_EPOCH + Duration::new(1_764_864_000, 999_999_999),
        SystemTime::UNIX_EPOCH + Duration::new(1_764_864_059, 123_456_789),
        SystemTime::now(),
    ];
    let ids = ["8c2369faf7495f0b-1", "a\"b\\c\u{1}é", ""];
    let members = [
        r#""call":{"agent":"a","tool":"t","args":{}},"decision":"allow","reasons":["ok"]"#,
        r#""call":"not json \" at all","decision":"deny","reasons":[]"#,
    ];
    let state: &[u8] = br#""agentState":{"spent":0.0}"#;
    let store: &[u8] = br#""stateStore":"s.sqlite","crew":"c""#;
    let afters: [&[&[u8]]; 4] = [&[], &[state], &[state, store], &[&[], store]];
    for stage in [Stage::Gate, Stage::Approve, Stage::Exec, Stage::ExecStart] {
        for time in times {
            for id in ids {
                for members_text in members {
                    for after in afters {
                        let mut records = b"{\"id\":\"before\"}\n".to_vec();
                        let at = record(&mut records, id, members_text);
                        records.extend_from_slice(b"{\"id\":\"after\"}\n");
                        let mut events = b"{\"a\":1}\n".to_vec();
                        assert!(push(&mut events, time, stage, at, after));
                        let mut line = b"left over".to_vec();
                        let used = write(&events[8..], &records, &mut line).unwrap();
                        assert_eq!(used, events.len() - 8);
                        assert_eq!(
                            String::from_utf8(line).unwrap(),
                            String::from_utf8(written_in_full(
                                stage,
                                id,
                                time,
                                members_text,
                                after
                            ))
                            .unwrap()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn what_an_entry_cannot_say_is_not_queued() {
    let mut events = Vec::new();
    let before_1970 = SystemTime::UNIX_EPOCH - Duration::from_secs(1);
    assert!(!push(&mut events, before_1970, Stage::Gate, 1..10, &[]));
    assert!(!push(
        &mut events,
        SystemTime::now(),
        Stage::Gate,
        1..(u32::MAX as usize + 1),
        &[]
    ));
    assert!(events.is_empty());
}

#[test]
fn an_entry_that_does_not_fit_its_batch_is_refused() {
    let mut records = Vec::new();
    let at = record(&mut records, "x-1", r#""decision":"allow""#);
    let mut entry = Vec::new();
    assert!(push(
        &mut entry,
        SystemTime::now(),
        Stage::Gate,
        at.clone(),
        &[b"\"k\":1"]
    ));
    let mut line = Vec::new();
    // Cut short anywhere.
    for cut in 0..entry.len() {
        assert!(
            write(&entry[..cut], &records, &mut line).is_err(),
            "cut at {cut}"
        );
    }
    // Another batch's records: too short, or not a record's members from "id" on.
    assert!(matches!(
        write(&entry, &records[..at.end - 1], &mut line),
        Err(Malformed::Record { .. })
    ));
    let shifted: Vec<u8> = std::iter::once(b' ')
        .chain(records.iter().copied())
        .collect();
    assert!(matches!(
        write(&entry, &shifted, &mut line),
        Err(Malformed::Record { .. })
    ));
    // A stage that is none, and nanoseconds past a second.
    let mut bad_stage = entry.clone();
    bad_stage[1 + 12] = 9;
    assert!(matches!(
        write(&bad_stage, &records, &mut line),
        Err(Malformed::Stage(9))
    ));
    let mut bad_nanos = entry.clone();
    bad_nanos[1 + 8..1 + 12].copy_from_slice(&1_000_000_000u32.to_le_bytes());
    assert!(matches!(
        write(&bad_nanos, &records, &mut line),
        Err(Malformed::Time)
    ));
    assert!(write(&entry, &records, &mut line).is_ok());
}

/// The log appends a batch of lines and deferred events in their order, chained as lines
/// written in full are; an entry that does not fit its records appends nothing of the batch.
#[test]
fn the_log_writes_deferred_events_in_their_place_and_refuses_a_batch_with_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let time = SystemTime::UNIX_EPOCH + Duration::new(1_764_864_000, 5_000);
    let mut records = Vec::new();
    let first = record(&mut records, "g-1", r#""decision":"allow""#);
    let second = record(&mut records, "g-2", r#""decision":"hold""#);
    let mut events = Vec::new();
    assert!(push(
        &mut events,
        time,
        Stage::Gate,
        first,
        &[b"\"agentState\":{}"]
    ));
    let plain = written_in_full(Stage::Gate, "r-1", time, r#""kind":"task""#, &[]);
    events.extend_from_slice(&plain);
    events.push(b'\n');
    assert!(push(&mut events, time, Stage::Gate, second, &[]));

    let deferred_path = dir.path().join("deferred.jsonl");
    let mut log = AuditLog::open(&deferred_path).unwrap();
    log.append_batch(&events, &records).unwrap();
    let in_full_path = dir.path().join("in-full.jsonl");
    let mut log = AuditLog::open(&in_full_path).unwrap();
    let mut lines = written_in_full(
        Stage::Gate,
        "g-1",
        time,
        r#""decision":"allow""#,
        &[b"\"agentState\":{}"],
    );
    lines.push(b'\n');
    lines.extend_from_slice(&plain);
    lines.push(b'\n');
    lines.extend(written_in_full(
        Stage::Gate,
        "g-2",
        time,
        r#""decision":"hold""#,
        &[],
    ));
    lines.push(b'\n');
    log.append(&lines).unwrap();
    let written = std::fs::read(&deferred_path).unwrap();
    assert_eq!(written, std::fs::read(&in_full_path).unwrap());
    assert_eq!(written.iter().filter(|b| **b == b'\n').count(), 3);

    let err = log_append_err(&deferred_path, &events, &records[..10]);
    assert!(err.contains("cannot write the audit log"), "{err}");
    assert!(
        err.contains("outside the batch's 10 bytes of records"),
        "{err}"
    );
    assert_eq!(std::fs::read(&deferred_path).unwrap(), written);
}

fn log_append_err(path: &std::path::Path, events: &[u8], records: &[u8]) -> String {
    let mut log = AuditLog::open(path).unwrap();
    format!("{:#}", log.append_batch(events, records).unwrap_err())
}
