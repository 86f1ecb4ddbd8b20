use super::*;

#[test]
fn markers_are_the_format_then_a_plain_id() {
    let made = new_marker();
    assert!(is_marker(&made), "{made}");
    assert_ne!(made, new_marker(), "each store made gets its own id");
    assert!(is_marker("skeleton-crew redis store 1 1767225600"));
    for foreign in [
        "",
        "skeleton-crew redis store 1 ",
        "skeleton-crew redis store 2 ab",
        "skeleton-crew redis store 1 a b",
        &format!("skeleton-crew redis store 1 {}", "a".repeat(65)),
    ] {
        assert!(!is_marker(foreign), "{foreign:?}");
    }
}

/// Found by a review: an empty database was taken as a new store and marked by whichever process
/// opened it first, so a Redis that lost everything was a fresh start for the next sc-hook. An
/// empty database is now [`Found::Empty`], which only `sc-state init` makes a store.
#[test]
fn an_empty_database_is_not_a_store() {
    let marker = new_marker();
    assert_eq!(
        Found::of(Some(marker.clone()), 7),
        Found::Store(marker.clone())
    );
    assert_eq!(Found::of(Some(marker.clone()), 1), Found::Store(marker));
    assert_eq!(Found::of(None, 0), Found::Empty);
    assert_eq!(Found::of(None, 3), Found::Unmarked { keys: 3 });
    assert_eq!(
        Found::of(Some("hello".to_owned()), 1),
        Found::Foreign("hello".to_owned())
    );
    assert_eq!(
        Found::of(Some(String::new()), 0),
        Found::Foreign(String::new())
    );
}
