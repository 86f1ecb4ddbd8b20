//! Remembered approvals (issue 25 §1): grants kept in a crew's store, SQLite or a real
//! redis-server, shared by processes, and listed and ended with `sc-state`.

use std::time::{Duration, SystemTime};

use skeleton_crew::store::grants::{self, Covers, GivenBy, GrantError, NewGrant};
use skeleton_crew::store::{OpenOptions, StateKey, StateUrl, Store, View};

use crate::util::RedisServer;

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
    let redis = RedisServer::start();
    let url = StateUrl::Redis(redis.url());
    grants_are_shared_between_connections(&url);
    concurrent_adds_lose_nothing(&url);
    let mut connection = redis.connection();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut connection).unwrap();
    assert_eq!(keys, ["skeleton-crew:crew:busy:grants"]);
    // A state beside the grants is still listed alone.
    let mut store = open(&url);
    store
        .update(&StateKey::crew("busy", View::Gate), &mut |state| {
            state.crew_spent = 1.0
        })
        .unwrap();
    assert_eq!(store.keys().unwrap(), [StateKey::crew("busy", View::Gate)]);
}

#[test]
fn grants_on_redis_that_this_program_did_not_write_are_refused_and_left_alone() {
    let redis = RedisServer::start();
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
    assert_eq!(keys, Vec::<String>::new());
    assert_eq!(grants::list(store.as_mut(), "c", now).unwrap(), vec![]);
}
