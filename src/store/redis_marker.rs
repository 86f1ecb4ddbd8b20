//! The marker key of a Redis store ([`MARKER_KEY`]), and what a database is, as its marker and
//! its number of keys say ([`Found`]).
//!
//! A Redis can lose what it holds without an error (a restart without persistence, `FLUSHALL`, an
//! eviction), and an empty database looks like a new one. So a store is made on purpose, once,
//! by `sc-state init` ([`super::StateUrl::init`]): it writes the marker into an empty database.
//! Every other process refuses a database without the marker, empty or not; none makes it.

/// The key that marks the database as a store this program keeps.
pub const MARKER_KEY: &str = "skeleton-crew:store";
/// How the marker's value starts; a random id follows.
pub const MARKER_FORMAT: &str = "skeleton-crew redis store 1 ";

/// Whether `value` is a marker this program writes ([`MARKER_FORMAT`], then an id of 1 to 64
/// letters, digits, `-` or `_`).
pub(crate) fn is_marker(value: &str) -> bool {
    value.strip_prefix(MARKER_FORMAT).is_some_and(|id| {
        (1..=64).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// A new marker, with 16 random bytes as its id.
pub(crate) fn new_marker() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source is readable");
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{MARKER_FORMAT}{id}")
}

/// What a database is, from its marker key and its number of keys (read in one round trip).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// A store: the marker this program writes.
    Store(String),
    /// No keys at all: a store never made, or one that lost everything. Only `sc-state init`
    /// makes it a store.
    Empty,
    /// Keys but no marker: a store whose marker was evicted, one written before the marker
    /// existed, or another program's data.
    Unmarked { keys: u64 },
    /// The marker key holds something this program does not write.
    Foreign(String),
}

impl Found {
    pub(crate) fn of(marker: Option<String>, keys: u64) -> Found {
        match marker {
            Some(marker) if is_marker(&marker) => Found::Store(marker),
            Some(other) => Found::Foreign(other),
            None if keys == 0 => Found::Empty,
            None => Found::Unmarked { keys },
        }
    }
}

#[cfg(test)]
#[path = "redis_marker_tests.rs"]
mod tests;
