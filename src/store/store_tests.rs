use std::path::{Path, PathBuf};

use super::*;

#[test]
fn state_urls_are_a_file_or_redis() {
    assert_eq!(
        StateUrl::parse("logs/state.sqlite").unwrap(),
        StateUrl::Sqlite(PathBuf::from("logs/state.sqlite"))
    );
    assert_eq!(
        StateUrl::parse("redis://127.0.0.1:6379/0").unwrap(),
        StateUrl::Redis("redis://127.0.0.1:6379/0".to_owned())
    );
    assert!(matches!(
        StateUrl::parse("rediss://cache.example:6380/2"),
        Ok(StateUrl::Redis(_))
    ));
    for (bad, expected) in [
        ("", "empty"),
        ("mysql://db/x", "unknown scheme `mysql:`"),
        ("http://x", "unknown scheme"),
        ("file:///tmp/x", "plain path"),
        ("redis://", "Missing hostname"),
        ("redis://host:notaport/0", "not a Redis URL"),
        ("redis://host:6379/zero", "database"),
        ("redis://host:6379/0/1", "database"),
        ("redis://host:99999/0", "not a Redis URL"),
        ("logs/", "folder"),
    ] {
        let err = StateUrl::parse(bad).unwrap_err().to_string();
        assert!(err.contains(expected), "{bad:?}: {err}");
    }
}

#[test]
fn keys_round_trip_and_names_are_safe() {
    for key in [
        StateKey::crew("payments", View::Gate),
        StateKey::crew("a.b-c_d", View::Exec),
        StateKey::session("0b1e-4f.2_x"),
    ] {
        assert_eq!(StateKey::parse(&key.path()), Some(key.clone()));
    }
    for bad in [
        "crew/x",
        "crew/x/gate/y",
        "crew/../gate",
        "crew/x/other",
        "session/x/exec",
        "team/x/gate",
        "crew//gate",
    ] {
        assert_eq!(StateKey::parse(bad), None, "{bad}");
    }
    assert!(crew_name("payments").is_ok());
    for bad in ["", ".x", "a/b", "a:b", "a b", "é", &"a".repeat(129)] {
        assert!(crew_name(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn the_default_file_is_beside_the_audit_log() {
    assert_eq!(
        StateUrl::beside(Path::new("logs/audit.jsonl")),
        StateUrl::Sqlite(PathBuf::from("logs/state.sqlite"))
    );
    assert_eq!(
        StateUrl::beside(Path::new("audit.jsonl")),
        StateUrl::Sqlite(PathBuf::from("./state.sqlite"))
    );
}

#[test]
fn init_makes_a_sqlite_store_once_and_then_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs/state.sqlite");
    let url = StateUrl::Sqlite(path.clone());
    let made = url.init(false).unwrap();
    assert!(made.created);
    assert_eq!(
        made.store,
        format!("sqlite:{}", std::path::absolute(&path).unwrap().display())
    );
    let mut store = url.open(OpenOptions::default()).unwrap();
    store
        .update(&StateKey::crew("c", View::Gate), &mut |state| {
            state.crew_spent = 5.0
        })
        .unwrap();
    drop(store);
    let again = url.init(false).unwrap();
    assert!(!again.created);
    assert_eq!(again.store, made.store);
    let mut store = url.open(OpenOptions::default()).unwrap();
    let kept = store.read(&StateKey::crew("c", View::Gate)).unwrap();
    assert_eq!(kept.unwrap().crew_spent, 5.0, "init kept the state");
}

#[test]
fn init_refuses_a_file_that_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.sqlite");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    let err = StateUrl::Sqlite(path).init(false).unwrap_err();
    assert!(matches!(err, InitError::Unavailable(_)), "{err:?}");
    assert!(err.to_string().contains("not a database"), "{err}");
}

/// A Redis server that is not there: nothing is made, and the error says it could not connect.
#[test]
fn init_on_an_unreachable_redis_is_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = StateUrl::Redis(format!("redis://u:secret@127.0.0.1:{port}/0"));
    let err = url.init(false).unwrap_err();
    assert!(matches!(err, InitError::Unavailable(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("redis://127.0.0.1:{port}/0: cannot connect")),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
}
