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

fn at(seconds: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(seconds)
}

const NOW: u64 = 1_800_000_000;

fn call_grant(agent: &str, tool: &str, args: &str) -> NewGrant {
    NewGrant {
        crew: "c".into(),
        agent: agent.into(),
        tool: tool.into(),
        covers: Covers::Call {
            digest: args_digest(args).unwrap(),
            kinds: vec!["amount".into()],
            sources: Vec::new(),
        },
        by: GivenBy::Web,
        approval: "a1".into(),
    }
}

#[test]
fn the_digest_is_of_canonical_json_and_numbers_stay_as_written() {
    let a =
        args_digest(r#"{"to":"acme","amount":750.10,"meta":{"b":[1,{"y":2,"x":"é"}],"a":null}}"#)
            .unwrap();
    let b = args_digest(
        "{ \"meta\" : {\"a\":null, \"b\":[1, {\"x\":\"\\u00e9\",\"y\":2}]}, \"amount\": 750.10, \"to\": \"acme\" }",
    )
    .unwrap();
    assert_eq!(a, b);
    assert_eq!(a.len(), 64);
    // The canonical text itself, as a fixed point.
    assert_eq!(
        args_digest(r#"{"b":"\/","a":[true,false]}"#).unwrap(),
        lower_hex(&<sha2::Sha256 as sha2::Digest>::digest(
            br#"{"a":[true,false],"b":"/"}"#
        ))
    );
    for other in [
        r#"{"to":"acme","amount":750.1,"meta":{"b":[1,{"y":2,"x":"é"}],"a":null}}"#,
        r#"{"to":"acme","amount":750.10,"meta":{"b":[{"y":2,"x":"é"},1],"a":null}}"#,
        r#"{"to":"Acme","amount":750.10,"meta":{"b":[1,{"y":2,"x":"é"}],"a":null}}"#,
        r#"{"to":"acme","amount":750.10,"meta":{"b":[1,{"y":2,"x":"é"}]}}"#,
    ] {
        assert_ne!(args_digest(other).unwrap(), a, "{other}");
    }
    for bad in ["", "{", r#"{"a":1,"a":1}"#, "[1,]", "NaN"] {
        assert_eq!(args_digest(bad), None, "{bad:?}");
    }
}

#[test]
fn a_call_grant_covers_its_agent_tool_and_arguments_only_until_it_expires() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("state.sqlite"));
    let args = r#"{"to":"acme","amount":5}"#;
    let grant = add(
        store.as_mut(),
        call_grant("buyer", "pay", args),
        at(NOW) + Duration::from_millis(700),
        Duration::from_secs(3600),
    )
    .unwrap();
    assert!(is_lower_hex(&grant.id, 32), "{}", grant.id);
    assert_eq!((grant.at, grant.expires_at), (at(NOW), at(NOW + 3600)));
    let digest = args_digest(r#"{"amount":5, "to":"acme"}"#).unwrap();
    let find = |store: &mut dyn Store, agent, tool, digest: Option<&str>, now| {
        matching(store, "c", agent, tool, digest, &[], at(now)).unwrap()
    };
    // Another process sees it.
    let mut other = open(&dir.path().join("state.sqlite"));
    assert_eq!(
        find(other.as_mut(), "buyer", "pay", Some(&digest), NOW + 10),
        Some(grant.clone())
    );
    let elsewhere = args_digest(r#"{"to":"acme","amount":6}"#).unwrap();
    assert_eq!(
        find(other.as_mut(), "buyer", "pay", Some(&elsewhere), NOW),
        None
    );
    assert_eq!(
        find(other.as_mut(), "seller", "pay", Some(&digest), NOW),
        None
    );
    assert_eq!(
        find(other.as_mut(), "buyer", "refund", Some(&digest), NOW),
        None
    );
    assert_eq!(find(other.as_mut(), "buyer", "pay", None, NOW), None);
    // Another crew has none.
    assert_eq!(
        matching(
            other.as_mut(),
            "d",
            "buyer",
            "pay",
            Some(&digest),
            &[],
            at(NOW)
        )
        .unwrap(),
        None
    );
    // The last second it lives, then never again; the expired grant is removed.
    assert!(find(other.as_mut(), "buyer", "pay", Some(&digest), NOW + 3599).is_some());
    assert_eq!(
        find(other.as_mut(), "buyer", "pay", Some(&digest), NOW + 3600),
        None
    );
    assert_eq!(list(store.as_mut(), "c", at(NOW)).unwrap(), vec![]);
}

#[test]
fn a_value_grant_covers_a_call_carrying_only_its_values_for_its_agent() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("state.sqlite"));
    let grant = add(
        store.as_mut(),
        NewGrant {
            crew: "c".into(),
            agent: "mailer".into(),
            tool: "send_email".into(),
            covers: Covers::Value {
                values: vec![
                    "bob@example.com".into(),
                    "acme.example".into(),
                    "bob@example.com".into(),
                ],
            },
            by: GivenBy::Elicitation,
            approval: "a2".into(),
        },
        at(NOW),
        DEFAULT_TTL,
    )
    .unwrap();
    assert_eq!(
        grant.covers,
        Covers::Value {
            values: vec!["acme.example".into(), "bob@example.com".into()]
        }
    );
    let find = |store: &mut dyn Store, agent, values: &[&str]| {
        matching(store, "c", agent, "send_email", None, values, at(NOW + 60)).unwrap()
    };
    assert_eq!(
        find(store.as_mut(), "mailer", &["bob@example.com"]),
        Some(grant.clone())
    );
    assert!(find(
        store.as_mut(),
        "mailer",
        &["acme.example", "bob@example.com"]
    )
    .is_some());
    assert_eq!(
        find(
            store.as_mut(),
            "mailer",
            &["bob@example.com", "eve@evil.example"]
        ),
        None
    );
    assert_eq!(find(store.as_mut(), "mailer", &["eve@evil.example"]), None);
    assert_eq!(find(store.as_mut(), "mailer", &[]), None);
    assert_eq!(find(store.as_mut(), "other", &["bob@example.com"]), None);
    let json = grant.to_json();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "crew",
            "agent",
            "tool",
            "scope",
            "values",
            "by",
            "at",
            "expiresAt"
        ]
    );
    assert_eq!(json["scope"], "value");
    assert_eq!(json["by"], "elicitation");
    assert_eq!(json["expiresAt"], time_text(at(NOW) + DEFAULT_TTL));
}

#[test]
fn grants_are_listed_revoked_one_or_all_and_ids_are_never_given_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("state.sqlite"));
    let ttl = Duration::from_secs(600);
    let mut ids = BTreeSet::new();
    let mut made = Vec::new();
    for n in 0..20 {
        let grant = add(
            store.as_mut(),
            call_grant("a", "t", &format!("{{\"n\":{n}}}")),
            at(NOW),
            ttl,
        )
        .unwrap();
        assert!(ids.insert(grant.id.clone()));
        made.push(grant);
    }
    assert_eq!(list(store.as_mut(), "c", at(NOW)).unwrap(), made);
    assert_eq!(list(store.as_mut(), "other", at(NOW)).unwrap(), vec![]);
    let gone = revoke(store.as_mut(), "c", &made[3].id).unwrap();
    assert_eq!(gone.as_ref(), Some(&made[3]));
    assert_eq!(revoke(store.as_mut(), "c", &made[3].id).unwrap(), None);
    let digest = args_digest(r#"{"n":3}"#).unwrap();
    assert_eq!(
        matching(store.as_mut(), "c", "a", "t", Some(&digest), &[], at(NOW)).unwrap(),
        None
    );
    assert_eq!(list(store.as_mut(), "c", at(NOW)).unwrap().len(), 19);
    let revoked = revoke_all(store.as_mut(), "c", at(NOW)).unwrap();
    assert_eq!(revoked.ended.len(), 19);
    assert_eq!(revoked.unreadable, None);
    assert_eq!(list(store.as_mut(), "c", at(NOW)).unwrap(), vec![]);
    assert_eq!(
        revoke_all(store.as_mut(), "c", at(NOW)).unwrap(),
        RevokedAll::default()
    );
}

#[test]
fn a_grant_this_program_would_not_write_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("state.sqlite"));
    let mut bad = call_grant("a", "t", "{}");
    bad.covers = Covers::Call {
        digest: "ABC".into(),
        kinds: vec!["amount".into()],
        sources: Vec::new(),
    };
    assert!(matches!(
        add(store.as_mut(), bad, at(NOW), DEFAULT_TTL),
        Err(GrantError::Invalid(_))
    ));
    let mut bad = call_grant("", "t", "{}");
    bad.crew = "c".into();
    assert!(matches!(
        add(store.as_mut(), bad, at(NOW), DEFAULT_TTL),
        Err(GrantError::Invalid(_))
    ));
    let mut bad = call_grant("a", "t", "{}");
    bad.covers = Covers::Value { values: vec![] };
    assert!(matches!(
        add(store.as_mut(), bad, at(NOW), DEFAULT_TTL),
        Err(GrantError::Invalid(_))
    ));
    assert_eq!(list(store.as_mut(), "c", at(NOW)).unwrap(), vec![]);
}

/// Writes `text` as crew `c`'s stored grants, as an editor of the store would.
fn edit(path: &Path, text: &str) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute(
            "INSERT INTO sc_values (key, value, updated) VALUES ('crew/c/grants', ?1, 'x')
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [text],
        )
        .unwrap();
}

#[test]
fn stored_grants_this_program_did_not_write_are_refused_never_read_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite");
    let mut store = open(&path);
    let grant = add(
        store.as_mut(),
        call_grant("a", "t", "{}"),
        at(NOW),
        DEFAULT_TTL,
    )
    .unwrap();
    let good = match write(std::slice::from_ref(&grant)) {
        ValueChange::Set(text) => text,
        other => panic!("{other:?}"),
    };
    let id = grant.id.as_str();
    let edits = [
        ("garbage", "not json".to_owned()),
        (
            "a duplicate key",
            good.replacen("{", "{\"format\":\"x\",", 1),
        ),
        (
            "another format",
            good.replace(FORMAT, "skeleton-crew grants 9"),
        ),
        (
            "an unknown key",
            good.replace("\"by\":", "\"extra\":1,\"by\":"),
        ),
        (
            "another crew",
            good.replace("\"crew\":\"c\"", "\"crew\":\"d\""),
        ),
        ("a bad id", good.replace(id, "zz")),
        (
            "a call grant with values",
            good.replace("\"by\":", "\"values\":[\"x\"],\"by\":"),
        ),
        (
            "an unknown scope",
            good.replace("\"scope\":\"call\"", "\"scope\":\"all\""),
        ),
        (
            "an unknown giver",
            good.replace("\"by\":\"web\"", "\"by\":\"me\""),
        ),
        (
            "a loose time",
            good.replace(&time_text(grant.at), "2027-01-15T08:00:00.5Z"),
        ),
        ("an id given twice", {
            let one = &good[good.find("[{").unwrap() + 1..good.rfind("}]").unwrap() + 1];
            good.replace(one, &format!("{one},{one}"))
        }),
        (
            "an end before its start",
            good.replace(&time_text(grant.expires_at), &time_text(at(NOW - 1))),
        ),
    ];
    for (what, text) in edits {
        assert_ne!(text, good, "{what}: the edit changed nothing");
        edit(&path, &text);
        let refused = |result: Result<_, GrantError>| match result {
            Err(GrantError::Refused { crew, why, .. }) => {
                assert_eq!(crew, "c");
                why
            }
            other => panic!("{what}: {other:?}"),
        };
        refused(list(store.as_mut(), "c", at(NOW)).map(drop));
        refused(matching(store.as_mut(), "c", "a", "t", None, &[], at(NOW)).map(drop));
        refused(revoke(store.as_mut(), "c", id).map(drop));
        let why = refused(
            add(
                store.as_mut(),
                call_grant("a", "t", "[]"),
                at(NOW),
                DEFAULT_TTL,
            )
            .map(drop),
        );
        assert!(!why.0.is_empty());
        let said = GrantError::Refused {
            store: "s".into(),
            crew: "c".into(),
            why,
        }
        .to_string();
        assert!(said.contains("refused rather than read as none"), "{said}");
        // Nothing was written over it.
        let kept: String = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT value FROM sc_values WHERE key = 'crew/c/grants'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(kept, text, "{what}");
    }
    edit(&path, &good);
    assert_eq!(list(store.as_mut(), "c", at(NOW)).unwrap(), vec![grant]);
    // Ending every grant removes what cannot be read, and says so.
    edit(&path, "not json");
    let revoked = revoke_all(store.as_mut(), "c", at(NOW)).unwrap();
    assert!(revoked.ended.is_empty());
    assert!(revoked.unreadable.unwrap().0.contains("not JSON"));
    assert_eq!(list(store.as_mut(), "c", at(NOW)).unwrap(), vec![]);
}

#[test]
fn grant_ttls_are_durations_of_at_least_a_second() {
    assert_eq!(parse_ttl("30m").unwrap(), Duration::from_secs(1800));
    assert_eq!(parse_ttl("8h").unwrap(), DEFAULT_TTL);
    assert_eq!(parse_ttl("1d").unwrap(), Duration::from_secs(86_400));
    for bad in ["0", "0s", "500ms", "", "soon", "-1h", "8"] {
        assert!(parse_ttl(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn the_grants_key_is_a_value_and_never_a_state() {
    let key = ValueKey::grants("payments");
    assert_eq!(key.path(), "crew/payments/grants");
    assert_eq!(ValueKey::parse(&key.path()), Some(key.clone()));
    assert_eq!(crate::store::StateKey::parse(&key.path()), None);
    assert_eq!(ValueKey::parse("crew/../grants"), None);
    assert_eq!(ValueKey::parse("session/x/grants"), None);
    assert_eq!(ValueKey::parse("crew/x/links"), None);
}

/// Issue 33: a `call` grant keeps the taint sources of its moment; one stored before they were
/// recorded (no `sources`) is still read, with none, so that it covers only an untainted session.
#[test]
fn a_call_grant_keeps_its_taint_sources_and_an_older_one_reads_with_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("state.sqlite"));
    let mut tainted = call_grant("a", "t", "{}");
    tainted.covers = Covers::Call {
        digest: args_digest("{}").unwrap(),
        kinds: vec!["taint".into()],
        sources: vec![
            "search_web query=x".into(),
            "fetch_page url=https://a/".into(),
        ],
    };
    let kept = add(store.as_mut(), tainted, at(NOW), DEFAULT_TTL).unwrap();
    let Covers::Call { sources, .. } = &kept.covers else {
        panic!("{kept:?}")
    };
    assert_eq!(
        sources,
        &["fetch_page url=https://a/", "search_web query=x"]
    );
    let text = match write(std::slice::from_ref(&kept)) {
        ValueChange::Set(text) => text,
        other => panic!("{other:?}"),
    };
    assert_eq!(read("c", &text).unwrap(), std::slice::from_ref(&kept));
    let before = text.replace(
        r#""sources":["fetch_page url=https://a/","search_web query=x"],"#,
        "",
    );
    assert_ne!(before, text);
    let old = read("c", &before).unwrap();
    let Covers::Call { sources, .. } = &old[0].covers else {
        panic!("{old:?}")
    };
    assert!(sources.is_empty(), "{old:?}");
}
