//! Remembered approvals (issue 25 §1): grants kept in a crew's store, SQLite or a real
//! redis-server, shared by processes, and listed and ended with `sc-state`.

use std::time::{Duration, SystemTime};

use skeleton_crew::store::grants::{self, Covers, GivenBy, GrantError, NewGrant};
use skeleton_crew::store::{OpenOptions, StateKey, StateUrl, Store, View};

use serde_json::{json, Value};

use crate::util::{RedisServer, Scratch};
/// Crew `c`'s grants key on Redis.
const GRANTS_KEY_C: &str = "skeleton-crew:crew:c:grants";

/// Runs `command` on crew `c`'s grants key (with `value` after it, if any) from `connection`, as
/// another process would.
fn on_grants_key(connection: &mut redis::Connection, command: &str, value: Option<&[u8]>) {
    let mut cmd = redis::cmd(command);
    cmd.arg(GRANTS_KEY_C);
    if let Some(value) = value {
        cmd.arg(value);
    }
    let _: () = cmd.query(connection).unwrap();
}

/// What crew `c` has spent, as its gate state says.
fn spent_of_c(store: &mut dyn Store) -> f64 {
    store
        .read(&StateKey::crew("c", View::Gate))
        .unwrap()
        .unwrap()
        .crew_spent
}

fn open(url: &StateUrl) -> Box<dyn Store> {
    url.open(OpenOptions {
        create: true,
        fsync: false,
    })
    .unwrap()
}

fn call(crew: &str, agent: &str, args: &str) -> NewGrant {
    NewGrant {
        crew: crew.into(),
        agent: agent.into(),
        tool: "send_payment".into(),
        covers: Covers::Call {
            digest: grants::args_digest(args).unwrap(),
            kinds: vec!["amount".into()],
            sources: Vec::new(),
        },
        by: GivenBy::Answers,
        approval: "0123456789abcdef-1".into(),
    }
}

/// What every store must do with grants: one process's grant is matched by another, for its
/// agent, tool and arguments only, until it is revoked or expires.
fn grants_are_shared_between_connections(url: &StateUrl) {
    let now = SystemTime::now();
    let mut one = open(url);
    let mut two = open(url);
    let args = r#"{"to":"acme","amount":750.10}"#;
    let grant = grants::add(
        one.as_mut(),
        call("team", "buyer", args),
        now,
        Duration::from_secs(60),
    )
    .unwrap();
    let digest = grants::args_digest(r#"{ "amount": 750.10, "to": "acme" }"#).unwrap();
    let find = |store: &mut dyn Store, crew, agent, digest: &str, at| {
        grants::matching(store, crew, agent, "send_payment", Some(digest), &[], at).unwrap()
    };
    assert_eq!(
        find(two.as_mut(), "team", "buyer", &digest, now),
        Some(grant.clone())
    );
    assert_eq!(find(two.as_mut(), "other", "buyer", &digest, now), None);
    assert_eq!(find(two.as_mut(), "team", "seller", &digest, now), None);
    let other = grants::args_digest(r#"{"to":"acme","amount":750.1}"#).unwrap();
    assert_eq!(find(two.as_mut(), "team", "buyer", &other, now), None);
    // Expired: never matched, and removed.
    let later = now + Duration::from_secs(61);
    assert_eq!(find(two.as_mut(), "team", "buyer", &digest, later), None);
    assert_eq!(grants::list(one.as_mut(), "team", now).unwrap(), vec![]);
    // Revoked: never matched.
    let grant = grants::add(
        one.as_mut(),
        call("team", "buyer", args),
        now,
        Duration::from_secs(60),
    )
    .unwrap();
    assert!(find(two.as_mut(), "team", "buyer", &digest, now).is_some());
    assert_eq!(
        grants::revoke(two.as_mut(), "team", &grant.id).unwrap(),
        Some(grant)
    );
    assert_eq!(find(one.as_mut(), "team", "buyer", &digest, now), None);
    // Grants are values, not states: no state is listed for them.
    assert_eq!(one.keys().unwrap(), Vec::<StateKey>::new());
}

/// Eight processes' worth of connections add grants at once: none is lost, no id is given twice.
fn concurrent_adds_lose_nothing(url: &StateUrl) {
    let now = SystemTime::now();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut store = open(&url);
                (0..10)
                    .map(|n| {
                        grants::add(
                            store.as_mut(),
                            call("busy", &format!("agent{t}"), &format!("{{\"n\":{n}}}")),
                            now,
                            Duration::from_secs(600),
                        )
                        .unwrap()
                        .id
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut made: Vec<String> = threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    made.sort();
    let mut listed: Vec<String> = grants::list(open(url).as_mut(), "busy", now)
        .unwrap()
        .into_iter()
        .map(|grant| grant.id)
        .collect();
    listed.sort();
    assert_eq!(listed.len(), 80);
    assert_eq!(listed, made);
    listed.dedup();
    assert_eq!(listed.len(), 80);
}

#[test]
fn grants_are_shared_between_processes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = StateUrl::Sqlite(dir.path().join("state.sqlite"));
    grants_are_shared_between_connections(&url);
    concurrent_adds_lose_nothing(&url);
}

#[test]
fn grants_are_shared_between_processes_on_redis_under_the_crews_key() {
    let redis = RedisServer::with_store();
    let url = StateUrl::Redis(redis.url());
    grants_are_shared_between_connections(&url);
    concurrent_adds_lose_nothing(&url);
    let mut connection = redis.connection();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut connection).unwrap();
    keys.sort();
    // Beside the store's marker (which says the store has not lost its data).
    assert_eq!(
        keys,
        ["skeleton-crew:crew:busy:grants", "skeleton-crew:store"]
    );
    // A state beside the grants is still listed alone.
    let mut store = open(&url);
    store
        .update(&StateKey::crew("busy", View::Gate), &mut |state| {
            state.crew_spent = 1.0
        })
        .unwrap();
    assert_eq!(store.keys().unwrap(), [StateKey::crew("busy", View::Gate)]);
}

/// sc-gate lists a crew's grants once a batch with one read (the grants and the store's marker
/// in one round trip): a Redis that lost its data is refused there too, never read as no grants.
#[test]
fn listing_grants_on_a_redis_that_lost_its_data_is_refused() {
    let redis = RedisServer::with_store();
    let url = StateUrl::Redis(redis.url());
    let mut store = open(&url);
    let now = SystemTime::now();
    let given = grants::add(
        store.as_mut(),
        call("c", "a", "{}"),
        now,
        grants::DEFAULT_TTL,
    )
    .unwrap();
    let listed = grants::list(store.as_mut(), "c", now).unwrap();
    assert_eq!(
        listed.iter().map(|g| &g.id).collect::<Vec<_>>(),
        [&given.id]
    );
    assert!(grants::list(store.as_mut(), "other", now)
        .unwrap()
        .is_empty());
    let mut connection = redis.connection();
    let _: () = redis::cmd("FLUSHALL").query(&mut connection).unwrap();
    let err = grants::list(store.as_mut(), "c", now)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("marker") && err.contains(&redis.url()),
        "{err}"
    );
}

#[test]
fn grants_on_redis_that_this_program_did_not_write_are_refused_and_left_alone() {
    let redis = RedisServer::with_store();
    let url = StateUrl::Redis(redis.url());
    let mut store = open(&url);
    let now = SystemTime::now();
    let mut connection = redis.connection();
    for spoiled in [
        &b"{\"format\":\"skeleton-crew grants 1\",\"grants\":{}}"[..],
        b"[]",
        b"\xff\xfe",
    ] {
        let _: () = redis::cmd("SET")
            .arg("skeleton-crew:crew:c:grants")
            .arg(spoiled)
            .query(&mut connection)
            .unwrap();
        let err = grants::matching(store.as_mut(), "c", "a", "t", None, &["v"], now).unwrap_err();
        let said = err.to_string();
        assert!(
            said.contains("refused rather than read as none") && said.contains(&redis.url()),
            "{said}"
        );
        // Listed (as sc-gate reads them, once a batch, in one round trip): refused alike.
        let listed = grants::list(store.as_mut(), "c", now)
            .unwrap_err()
            .to_string();
        assert!(
            listed.contains("refused rather than read as none") && listed.contains(&redis.url()),
            "{listed}"
        );
        let err = grants::add(
            store.as_mut(),
            call("c", "a", "{}"),
            now,
            grants::DEFAULT_TTL,
        )
        .unwrap_err();
        assert!(matches!(err, GrantError::Refused { .. }), "{err:?}");
        assert!(err.to_string().contains("sc-state revoke --all"), "{err}");
        let kept: Vec<u8> = redis::cmd("GET")
            .arg("skeleton-crew:crew:c:grants")
            .query(&mut connection)
            .unwrap();
        assert_eq!(kept, spoiled);
    }
    // Revoking every grant ends what cannot be read too, and says so.
    let _: () = redis::cmd("SET")
        .arg("skeleton-crew:crew:c:grants")
        .arg("[]")
        .query(&mut connection)
        .unwrap();
    let revoked = grants::revoke_all(store.as_mut(), "c", now).unwrap();
    assert_eq!(revoked.ended, vec![]);
    assert!(revoked.unreadable.is_some());
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut connection).unwrap();
    assert_eq!(keys, ["skeleton-crew:store"]);
    assert_eq!(grants::list(store.as_mut(), "c", now).unwrap(), vec![]);
}

/// Runs `sc-state ARGS` in the scratch folder: its status, stdout and stderr.
fn sc_state(scratch: &Scratch, args: &[&str]) -> (i32, String, String) {
    let output = scratch
        .cmd("sc-state")
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// `sc-state grants` and `sc-state revoke` on one store (`--state` as given).
fn sc_state_lists_and_revokes_grants(scratch: &Scratch, url: &StateUrl, state: &str) {
    let now = SystemTime::now();
    let mut store = open(url);
    let call_grant = grants::add(
        store.as_mut(),
        call("team", "buyer", r#"{"to":"acme","amount":5}"#),
        now,
        Duration::from_secs(3600),
    )
    .unwrap();
    let value_grant = grants::add(
        store.as_mut(),
        NewGrant {
            crew: "team".into(),
            agent: "mailer\u{1b}[31m".into(),
            tool: "send_email".into(),
            covers: Covers::Value {
                values: vec!["bob@example.com".into(), "acme.example".into()],
            },
            by: GivenBy::Web,
            approval: "0123456789abcdef-2".into(),
        },
        now,
        Duration::from_secs(60),
    )
    .unwrap();
    // Another crew's grant, and an expired one: never listed.
    grants::add(
        store.as_mut(),
        call("other", "x", "{}"),
        now,
        grants::DEFAULT_TTL,
    )
    .unwrap();
    grants::add(
        store.as_mut(),
        call("team", "old", "{}"),
        now - Duration::from_secs(120),
        Duration::from_secs(60),
    )
    .unwrap();

    let (status, stdout, stderr) = sc_state(
        scratch,
        &["grants", "--state", state, "--crew", "team", "--json"],
    );
    assert_eq!(status, 0, "{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        listed,
        json!([
            {
                "id": call_grant.id, "crew": "team", "agent": "buyer", "tool": "send_payment",
                "scope": "call", "digest": grants::args_digest(r#"{"amount":5,"to":"acme"}"#).unwrap(),
                "by": "answers", "at": grants::time_text(call_grant.at),
                "expiresAt": grants::time_text(call_grant.expires_at)
            },
            {
                "id": value_grant.id, "crew": "team", "agent": "mailer\u{1b}[31m", "tool": "send_email",
                "scope": "value", "values": ["acme.example", "bob@example.com"],
                "by": "web", "at": grants::time_text(value_grant.at),
                "expiresAt": grants::time_text(value_grant.expires_at)
            }
        ])
    );
    for object in listed.as_array().unwrap() {
        let keys: Vec<&String> = object.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 9, "{keys:?}");
    }

    let (status, stdout, stderr) =
        sc_state(scratch, &["grants", "--state", state, "--crew", "team"]);
    assert_eq!(status, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(lines[0].starts_with("grants of crew team in "), "{stdout}");
    assert!(lines[1].trim_start().starts_with("ID "), "{stdout}");
    assert!(
        lines[2].contains(&call_grant.id)
            && lines[2].contains("buyer")
            && lines[2].contains(" call ")
            && lines[2].contains(" answers ")
            && lines[2].contains(&grants::time_text(call_grant.expires_at)),
        "{stdout}"
    );
    assert!(
        lines[3].contains(&value_grant.id)
            && lines[3].contains(r#""acme.example", "bob@example.com""#),
        "{stdout}"
    );
    // Agent-written text never reaches the terminal raw.
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");

    // Revoke one: gone from the list, and no longer matched.
    let (status, _, stderr) = sc_state(
        scratch,
        &["revoke", &call_grant.id, "--state", state, "--crew", "team"],
    );
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("revoked grant {}", call_grant.id)),
        "{stderr}"
    );
    let digest = grants::args_digest(r#"{"to":"acme","amount":5}"#).unwrap();
    assert_eq!(
        grants::matching(
            store.as_mut(),
            "team",
            "buyer",
            "send_payment",
            Some(&digest),
            &[],
            now
        )
        .unwrap(),
        None
    );
    // Again, or in another crew, or never given: exit 2 naming it.
    for (id, crew) in [
        (call_grant.id.as_str(), "team"),
        (value_grant.id.as_str(), "other"),
        ("nope", "team"),
    ] {
        let (status, stdout, stderr) =
            sc_state(scratch, &["revoke", id, "--state", state, "--crew", crew]);
        assert_eq!(status, 2, "{id} {crew}: {stderr}");
        assert!(stdout.is_empty());
        assert!(
            stderr.contains(&format!("no grant {id} in crew {crew}")),
            "{stderr}"
        );
    }
    assert!(grants::matching(
        store.as_mut(),
        "team",
        "mailer\u{1b}[31m",
        "t",
        None,
        &["acme.example"],
        now
    )
    .unwrap()
    .is_some());

    // Revoke all of one crew: the other crew keeps its grant.
    let (status, _, stderr) = sc_state(
        scratch,
        &["revoke", "--all", "--state", state, "--crew", "team"],
    );
    assert_eq!(status, 0, "{stderr}");
    assert!(stderr.contains("revoked 1 grant of crew team"), "{stderr}");
    let (_, stdout, _) = sc_state(
        scratch,
        &["grants", "--state", state, "--crew", "team", "--json"],
    );
    assert_eq!(stdout, "[]\n");
    assert_eq!(grants::list(store.as_mut(), "other", now).unwrap().len(), 1);
    // Without --crew: the crew `default`.
    grants::add(
        store.as_mut(),
        call("default", "d", "{}"),
        now,
        grants::DEFAULT_TTL,
    )
    .unwrap();
    let (_, stdout, _) = sc_state(scratch, &["grants", "--state", state, "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap()[0]["agent"],
        "d"
    );
}

#[test]
fn sc_state_lists_and_revokes_grants_on_sqlite() {
    let scratch = Scratch::new();
    let path = scratch.path("state/state.sqlite");
    // No store yet: no grants, an unknown id, and nothing is made.
    let state = path.to_str().unwrap();
    let (status, stdout, _) = sc_state(&scratch, &["grants", "--state", state]);
    assert_eq!(status, 0);
    assert!(stdout.ends_with("  none\n"), "{stdout}");
    assert_eq!(sc_state(&scratch, &["revoke", "x", "--state", state]).0, 2);
    assert_eq!(
        sc_state(&scratch, &["revoke", "--all", "--state", state]).0,
        0
    );
    assert!(!path.exists());
    sc_state_lists_and_revokes_grants(&scratch, &StateUrl::Sqlite(path.clone()), state);
    // A spoiled store: listing fails (1), never prints "none"; revoke --all clears it.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE sc_values SET value = '{}' WHERE key = 'crew/default/grants'",
            [],
        )
        .unwrap();
    let (status, stdout, stderr) = sc_state(&scratch, &["grants", "--state", state]);
    assert_eq!(status, 1, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("refused rather than read as none"),
        "{stderr}"
    );
    let (status, _, stderr) = sc_state(&scratch, &["revoke", "--all", "--state", state]);
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stderr.contains("were not what this program writes, and are removed"),
        "{stderr}"
    );
    let (status, stdout, _) = sc_state(&scratch, &["grants", "--state", state, "--json"]);
    assert_eq!((status, stdout.as_str()), (0, "[]\n"));
}

#[test]
fn sc_state_lists_and_revokes_grants_on_redis() {
    let scratch = Scratch::new();
    let redis = RedisServer::with_store();
    let url = redis.url();
    sc_state_lists_and_revokes_grants(&scratch, &StateUrl::Redis(url.clone()), &url);
    let mut connection = redis.connection();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut connection).unwrap();
    keys.sort();
    assert_eq!(
        keys,
        [
            "skeleton-crew:crew:default:grants",
            "skeleton-crew:crew:other:grants",
            "skeleton-crew:store"
        ]
    );
    // `sc-state show --all` lists states, and grants are not states.
    let (status, stdout, stderr) =
        sc_state(&scratch, &["show", "--all", "--state", &url, "--json"]);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap()["states"],
        json!([])
    );
}

/// What every store must do when a decision reads the grants in its state's update
/// (`Store::update_beside`, as sc-gate does once a batch): the value as stored, none when there
/// is none, bytes that are not text given as the value's refusal while the update goes on, and
/// the value never written.
fn the_grants_are_read_in_the_states_update(url: &StateUrl, spoil: &dyn Fn()) {
    use skeleton_crew::store::ValueKey;
    let now = SystemTime::now();
    let mut store = open(url);
    let key = StateKey::crew("c", View::Gate);
    let read = |store: &mut dyn Store, spent: f64| {
        let mut seen = Vec::new();
        store
            .update_beside(&key, &ValueKey::grants("c"), &mut |state, value| {
                seen.push(
                    value
                        .map(|v| v.map(str::to_owned))
                        .map_err(|e| e.to_string()),
                );
                state.crew_spent = spent;
            })
            .map(|()| seen)
    };
    assert_eq!(read(store.as_mut(), 1.0).unwrap(), [Ok(None)]);
    let given = grants::add(
        store.as_mut(),
        call("c", "a", "{}"),
        now,
        grants::DEFAULT_TTL,
    )
    .unwrap();
    let seen = read(store.as_mut(), 2.0).unwrap();
    let [Ok(Some(text))] = &seen[..] else {
        panic!("{seen:?}")
    };
    assert!(text.contains(&given.id), "{text}");
    assert_eq!(grants::live("s", "c", Some(text), now).unwrap(), [given]);
    // Expired at a later time: read, but not live.
    assert_eq!(
        grants::live("s", "c", Some(text), now + grants::DEFAULT_TTL * 2).unwrap(),
        []
    );
    // Not text: the value's refusal, and the state still updated.
    spoil();
    let seen = read(store.as_mut(), 3.0).unwrap();
    let [Err(why)] = &seen[..] else {
        panic!("{seen:?}")
    };
    assert!(why.contains("not UTF-8"), "{why}");
    assert_eq!(store.read(&key).unwrap().unwrap().crew_spent, 3.0);
}

#[test]
fn the_grants_are_read_in_the_states_update_on_sqlite() {
    let scratch = Scratch::new();
    let path = scratch.path("state.sqlite");
    the_grants_are_read_in_the_states_update(&StateUrl::Sqlite(path.clone()), &|| {
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute(
                "UPDATE sc_values SET value = CAST(X'fffe' AS TEXT) WHERE key = 'crew/c/grants'",
                [],
            )
            .unwrap();
    });
}

#[test]
fn the_grants_are_read_in_the_states_update_on_redis_and_a_lost_store_is_refused() {
    let redis = RedisServer::with_store();
    let url = StateUrl::Redis(redis.url());
    the_grants_are_read_in_the_states_update(&url, &|| {
        on_grants_key(&mut redis.connection(), "SET", Some(b"\xff\xfe"));
    });
    // A Redis that lost its data: the update is refused, and runs nothing.
    let mut store = open(&url);
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut redis.connection())
        .unwrap();
    let mut ran = false;
    let err = store
        .update_beside(
            &StateKey::crew("c", View::Gate),
            &skeleton_crew::store::ValueKey::grants("c"),
            &mut |_, _| ran = true,
        )
        .unwrap_err()
        .to_string();
    assert!(!ran);
    assert!(
        err.contains("marker") && err.contains(&redis.url()),
        "{err}"
    );
}

/// A SQLite file edited by hand can hold the grants as a blob, a number or a null (its table made
/// loose, then its schema text put back): read beside the state, each is the value's refusal
/// (no grant applies) while the state is still written, as `sc-state grants` refuses it, never a
/// grant honoured that nobody can list or revoke.
#[test]
fn grants_stored_as_anything_but_text_are_refused_beside_the_state_on_sqlite() {
    use skeleton_crew::store::ValueKey;
    let scratch = Scratch::new();
    let path = scratch.path("state.sqlite");
    let url = StateUrl::Sqlite(path.clone());
    let now = SystemTime::now();
    let mut store = open(&url);
    let given = grants::add(
        store.as_mut(),
        call("c", "a", "{}"),
        now,
        grants::DEFAULT_TTL,
    )
    .unwrap();
    drop(store);
    let strict = "CREATE TABLE sc_values (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, updated TEXT NOT NULL) STRICT";
    let loose =
        "CREATE TABLE sc_values (key TEXT PRIMARY KEY NOT NULL, value ANY, updated TEXT NOT NULL)";
    let retype = |expression: &str| {
        let connection = rusqlite::Connection::open(&path).unwrap();
        let schema = |sql: &str| {
            connection
                .execute_batch(&format!(
                    "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = '{sql}' WHERE name = 'sc_values'; PRAGMA writable_schema = OFF;"
                ))
                .unwrap();
        };
        schema(loose);
        drop(connection);
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute(
                &format!("UPDATE sc_values SET value = {expression} WHERE key = 'crew/c/grants'"),
                [],
            )
            .unwrap();
        connection
            .execute_batch(&format!(
                "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = '{strict}' WHERE name = 'sc_values'; PRAGMA writable_schema = OFF;"
            ))
            .unwrap();
    };
    for (expression, stored) in [
        ("CAST(value AS BLOB)", "a blob"),
        ("7", "an integer"),
        ("0.5", "a real number"),
        ("NULL", "null"),
    ] {
        retype(expression);
        let mut store = open(&url);
        let mut seen = Vec::new();
        store
            .update_beside(
                &StateKey::crew("c", View::Gate),
                &ValueKey::grants("c"),
                &mut |state, value| {
                    seen.push(
                        value
                            .map(|v| v.map(str::to_owned))
                            .map_err(|e| e.to_string()),
                    );
                    state.crew_spent += 1.0;
                },
            )
            .unwrap();
        let [Err(why)] = &seen[..] else {
            panic!("{expression}: {seen:?}")
        };
        assert!(why.contains(&format!("stored as {stored}")), "{why}");
        assert!(!why.contains(&given.id), "{why}");
        // The operator's listing refuses it too.
        assert!(
            grants::list(store.as_mut(), "c", now).is_err(),
            "{expression}"
        );
        drop(store);
        // Back to text for the next type.
        retype("CAST(value AS TEXT)");
    }
    assert_eq!(spent_of_c(open(&url).as_mut()), 4.0);
}

/// On Redis the grants are watched with the state: a grant revoked (the value changed) while a
/// batch is decided makes its write fail, and the batch is decided again on the grants as they
/// are then, so no call is written as allowed by a grant revoked before the write.
#[test]
fn a_grants_change_during_an_update_on_redis_runs_it_again_on_the_new_grants() {
    use skeleton_crew::store::ValueKey;
    let redis = RedisServer::with_store();
    let url = StateUrl::Redis(redis.url());
    let mut store = open(&url);
    let mut other = redis.connection();
    on_grants_key(&mut other, "SET", Some(b"before"));
    let mut seen = Vec::new();
    store
        .update_beside(
            &StateKey::crew("c", View::Gate),
            &ValueKey::grants("c"),
            &mut |state, value| {
                seen.push(value.unwrap().map(str::to_owned));
                if seen.len() == 1 {
                    // Another process revokes meanwhile.
                    on_grants_key(&mut other, "SET", Some(b"after"));
                }
                state.crew_spent = seen.len() as f64;
            },
        )
        .unwrap();
    assert_eq!(seen, [Some("before".to_owned()), Some("after".to_owned())]);
    assert_eq!(spent_of_c(store.as_mut()), 2.0);
}

/// A grants key of another type than a string (a list, which no program of ours writes) fails
/// the batch's read on Redis: the update is refused (its calls denied), never run without the
/// grants, and the connection is left clean, so the next update, the key put right, goes on.
#[test]
fn a_grants_key_of_another_type_on_redis_refuses_the_update_and_the_next_one_goes_on() {
    use skeleton_crew::store::ValueKey;
    let redis = RedisServer::with_store();
    let url = StateUrl::Redis(redis.url());
    let mut store = open(&url);
    let mut other = redis.connection();
    on_grants_key(&mut other, "RPUSH", Some(b"x"));
    let key = StateKey::crew("c", View::Gate);
    let mut ran = false;
    let err = store
        .update_beside(&key, &ValueKey::grants("c"), &mut |_, _| ran = true)
        .unwrap_err()
        .to_string();
    assert!(!ran);
    assert!(err.contains("WRONGTYPE"), "{err}");
    on_grants_key(&mut other, "DEL", None);
    let mut seen = Vec::new();
    store
        .update_beside(&key, &ValueKey::grants("c"), &mut |state, value| {
            seen.push(
                value
                    .map(|v| v.map(str::to_owned))
                    .map_err(|e| e.to_string()),
            );
            state.crew_spent = 1.0;
        })
        .unwrap();
    assert_eq!(seen, [Ok(None)]);
    assert_eq!(store.read(&key).unwrap().unwrap().crew_spent, 1.0);
}
