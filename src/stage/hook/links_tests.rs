//! Tests of the call links: how they are kept, bounded, and read back strictly.

use super::*;
use crate::store::{self, StateUrl};
use serde_json::json;

#[test]
fn the_input_digest_ignores_key_order_and_nothing_else() {
    let object = |text: &str| match strict_json::parse(text).unwrap() {
        Value::Object(map) => map,
        _ => unreachable!(),
    };
    let digest = input_digest(&object(r#"{"a":1,"b":{"c":[1,{"d":2,"e":3}]}}"#));
    assert_eq!(digest.len(), 64);
    assert_eq!(
        digest,
        input_digest(&object(r#"{"b":{"c":[1,{"e":3,"d":2}]},"a":1}"#))
    );
    for other in [
        r#"{"a":1,"b":{"c":[{"d":2,"e":3},1]}}"#,
        r#"{"a":1.0,"b":{"c":[1,{"d":2,"e":3}]}}"#,
        r#"{"a":"1","b":{"c":[1,{"d":2,"e":3}]}}"#,
        r#"{"a":1,"b":{"c":[1,{"d":2,"e":3}]},"f":null}"#,
    ] {
        assert_ne!(digest, input_digest(&object(other)), "{other}");
    }
}

fn tool_use(tool_use_id: &str, decision: Decision) -> ToolUse {
    ToolUse {
        tool_use_id: tool_use_id.to_owned(),
        id: format!("id-{tool_use_id}-{decision}"),
        agent: "claude-code".to_owned(),
        tool: "Bash".to_owned(),
        decision: Some(decision),
        input: Some("0".repeat(64)),
        ran: false,
    }
}

#[test]
fn a_call_decided_twice_keeps_the_stricter_decision() {
    let mut uses = ToolUses::new();
    uses.decided(tool_use("t1", Decision::Hold));
    uses.decided(tool_use("t1", Decision::Allow));
    assert_eq!(uses.get("t1").unwrap().id, "id-t1-hold");
    uses.decided(tool_use("t1", Decision::Hold));
    assert_eq!(
        uses.get("t1").unwrap().id,
        "id-t1-hold",
        "the first on a tie"
    );
    uses.decided(tool_use("t1", Decision::Deny));
    assert_eq!(uses.get("t1").unwrap().id, "id-t1-deny");
    assert_eq!(uses.len(), 1);
    // Once it ran, it is what it was.
    uses.get_mut("t1").unwrap().ran = true;
    uses.decided(tool_use("t1", Decision::Deny));
    let mut again = tool_use("t1", Decision::Deny);
    again.id = "other".into();
    uses.decided(again);
    assert_eq!(uses.get("t1").unwrap().id, "id-t1-deny");
    assert!(uses.get("t1").unwrap().ran);
}

#[test]
fn at_most_1024_calls_awaiting_and_64_that_ran_are_kept() {
    let mut uses = ToolUses::new();
    for n in 0..MAX_AWAITING + 3 {
        uses.decided(tool_use(&format!("t{n}"), Decision::Allow));
    }
    assert_eq!(uses.len(), MAX_AWAITING);
    for forgotten in ["t0", "t1", "t2"] {
        assert!(uses.get(forgotten).is_none(), "{forgotten}");
    }
    assert!(uses.get("t3").is_some());
    // Calls that ran are forgotten past the last 64, oldest first, and make room.
    for n in 3..3 + MAX_RAN + 10 {
        assert!(uses.ran(&format!("t{n}")));
    }
    assert_eq!(uses.len(), MAX_AWAITING - 10);
    assert!(uses.get("t12").is_none() && !uses.ran("t12"));
    assert!(uses.get("t13").unwrap().ran);
    assert!(!uses.get(&format!("t{}", 3 + MAX_RAN + 10)).unwrap().ran);
    // An awaiting call is never forgotten for one that ran, nor the other way round.
    for n in 0..MAX_RAN + 10 + 20 {
        uses.decided(tool_use(&format!("new{n}"), Decision::Hold));
    }
    assert_eq!(uses.len(), MAX_AWAITING + MAX_RAN);
    assert!(uses.get("t13").is_some());
    let first_awaiting = 3 + MAX_RAN + 10;
    for forgotten in first_awaiting..first_awaiting + 20 {
        assert!(uses.get(&format!("t{forgotten}")).is_none(), "t{forgotten}");
    }
    assert!(uses.get(&format!("t{}", first_awaiting + 20)).is_some());
    // Links with as many read back; more are not what sc-hook writes.
    let calls = serde_json::to_value(&uses).unwrap();
    assert_eq!(ToolUses::from_value(calls.clone()).unwrap(), uses);
    let mut one_more = calls.clone();
    one_more
        .as_array_mut()
        .unwrap()
        .push(serde_json::to_value(tool_use("one-more", Decision::Allow)).unwrap());
    let err = ToolUses::from_value(one_more).unwrap_err();
    assert!(
        matches!(err, LinksError::TooMany { count: 1089 }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("more than the 1088 sc-hook keeps"),
        "{err}"
    );
    let mut one_more_awaiting = calls;
    assert_eq!(one_more_awaiting[0]["ran"], true);
    one_more_awaiting[0]["ran"] = json!(false);
    let err = ToolUses::from_value(one_more_awaiting).unwrap_err();
    assert!(
        err.to_string()
            .contains("63 calls that ran and 1025 awaiting"),
        "{err}"
    );
}

fn sqlite(path: &std::path::Path) -> Box<dyn Store> {
    StateUrl::Sqlite(path.to_owned())
        .open(store::OpenOptions {
            create: true,
            fsync: false,
        })
        .unwrap()
}

/// Writes a session's links as someone with the store file could.
fn store_links(path: &std::path::Path, session: &str, text: &str) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute(
            "INSERT INTO sc_values (key, value, updated) VALUES (?1, ?2, 'now')
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [ValueKey::links(session).path().as_str(), text],
        )
        .unwrap();
}

#[test]
fn the_calls_are_kept_in_the_store_and_read_back_strictly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite");
    {
        let mut store = sqlite(&path);
        update_links(store.as_mut(), "s1", |uses| {
            uses.decided(tool_use("t1", Decision::Hold));
            let mut ran = tool_use("t2", Decision::Allow);
            (ran.decision, ran.input, ran.ran) = (None, None, true);
            uses.decided(ran);
        })
        .unwrap();
    }
    let written: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT value FROM sc_values WHERE key = 'session/s1/links'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let value: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(value[0]["toolUseId"], "t1");
    assert_eq!(value[0]["decision"], "hold");
    assert_eq!(value[1].get("decision"), None);
    // Another process (another connection) reads them back; another session has none.
    let mut store = sqlite(&path);
    let uses = update_links(store.as_mut(), "s1", |uses| uses.clone()).unwrap();
    assert_eq!(uses.len(), 2);
    assert_eq!(uses.get("t1"), Some(&tool_use("t1", Decision::Hold)));
    assert!(update_links(store.as_mut(), "s2", |uses| uses.is_empty()).unwrap());
    // Anything else is an error, never a session that forgot its calls, and nothing is
    // written over it.
    let entry = r#"{"toolUseId":"t1","id":"1","agent":"a","tool":"Bash","decision":"hold","input":"0000000000000000000000000000000000000000000000000000000000000000","ran":false}"#;
    for (text, expected) in [
        (format!("[{entry}]"), None),
        (
            "{}".to_owned(),
            Some("`toolUses` must be an array, not an object"),
        ),
        (
            "null".to_owned(),
            Some("`toolUses` must be an array, not null"),
        ),
        (String::new(), Some("not valid JSON")),
        (
            "[[]]".to_owned(),
            Some("`toolUses[0]` must be an object, not an array"),
        ),
        (
            format!("[{entry},{entry}]"),
            Some("`toolUses[1]` repeats the toolUseId \"t1\""),
        ),
        (
            format!(
                "[{}]",
                entry.replace(r#""ran":false"#, r#""ran":false,"x":1"#)
            ),
            Some("unknown field `x`"),
        ),
        (
            format!("[{}]", entry.replace(r#","ran":false"#, "")),
            Some("missing field `ran`"),
        ),
        (
            format!(
                "[{}]",
                entry.replace(r#""decision":"hold""#, r#""decision":null"#)
            ),
            Some("has `decision` null"),
        ),
        (
            format!("[{}]", entry.replace(r#""decision":"hold","#, "")),
            Some("has no `decision` and has not run"),
        ),
        (
            format!(
                "[{}]",
                entry.replace(r#""decision":"hold""#, r#""decision":"maybe""#)
            ),
            Some("unknown variant"),
        ),
        (
            format!("[{}]", entry.replace(r#""id":"1""#, r#""id":"""#)),
            Some("has an empty `id`"),
        ),
        (
            format!("[{}]", entry.replace("0000000000", "000000000X")),
            Some("not a SHA-256 in hex"),
        ),
        (
            format!("[{}]", entry.replace("0000000000", "0000")),
            Some("not a SHA-256 in hex"),
        ),
        (
            format!("[{}]", entry.replace(r#""id":"1""#, r#""id":"1","id":"2""#)),
            Some("duplicate key"),
        ),
        (format!("[{entry}]") + "[]", Some("trailing characters")),
    ] {
        store_links(&path, "s1", &text);
        let result = update_links(store.as_mut(), "s1", |uses| {
            uses.decided(tool_use("t9", Decision::Allow));
            uses.len()
        });
        match (result, expected) {
            (Ok(len), None) => assert_eq!(len, 2),
            (Err(err), Some(expected)) => {
                let err = err.to_string();
                assert!(
                    err.contains("the call links of session s1 are not what this program writes")
                        && err.contains(expected),
                    "{text}: {err}"
                );
                let kept: String = rusqlite::Connection::open(&path)
                    .unwrap()
                    .query_row(
                        "SELECT value FROM sc_values WHERE key = 'session/s1/links'",
                        [],
                        |row| row.get(0),
                    )
                    .unwrap();
                assert_eq!(kept, text, "a refused value is left as it was");
            }
            (Ok(_), Some(expected)) => panic!("{text} read, expected {expected:?}"),
            (Err(err), None) => panic!("{text}: {err}"),
        }
    }
}
