use super::*;

#[test]
fn urls_are_shown_without_their_password() {
    assert_eq!(
        shown("redis://user:secret@cache:6379/0"),
        "redis://cache:6379/0"
    );
    assert_eq!(shown("rediss://:secret@cache/2"), "rediss://cache/2");
    assert_eq!(shown("redis://cache:6379/0"), "redis://cache:6379/0");
    let err = check_url("rediss://cache:6380/0#insecure").unwrap_err();
    assert!(matches!(err, RedisUrlError::Fragment), "{err:?}");
    assert!(err.to_string().contains("always checked"));
}

/// What a door says of a database without the marker: what to run, naming the store without its
/// password.
#[test]
fn an_uninitialised_store_says_how_to_create_it_without_the_password() {
    let url = "redis://user:secret@cache:6379/0";
    let err = StoreError::Unavailable {
        store: shown(url),
        problem: Box::new(RedisProblem::Uninitialised { shown: shown(url) }),
    };
    assert_eq!(
        err.to_string(),
        "redis://cache:6379/0: the database has no skeleton-crew:store marker: it is new, or it \
         lost its data (taint and spend included); run `sc-state init --state \
         redis://cache:6379/0` once to create the store"
    );
    assert!(!err.to_string().contains("secret"));
    let one = RedisProblem::Unmarked { keys: 1 }.to_string();
    assert!(
        one.starts_with("the database holds 1 key but no skeleton-crew:store marker: "),
        "{one}"
    );
    assert!(RedisProblem::Unmarked { keys: 2 }
        .to_string()
        .starts_with("the database holds 2 keys but"));
}
