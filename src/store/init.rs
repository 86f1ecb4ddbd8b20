//! Creating a store on purpose, `sc-state init --state URL` ([`super::StateUrl::init`]): what it
//! made, or why it made nothing.
//!
//! A Redis store exists only once this has written its marker into an empty database
//! ([`super::redis_marker`]): a door or any other `sc-state` command refuses a database without
//! it, so a Redis that lost everything is never taken as a new store. Running it again on a store
//! changes nothing. A SQLite file is made by the first door that keeps state in it, as before;
//! `init` makes it too (with its folder), and checks an existing one.

use super::backend::StoreError;

/// What `init` found or made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Initialised {
    /// The store, as the audit log names it (`sqlite:/abs/path`, or the Redis URL without its
    /// password).
    pub store: String,
    /// Whether this run made it (else it was a store already, and is unchanged).
    pub created: bool,
}

/// Why `init` made no store.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The database holds something else (keys but no marker, or a marker key this program does
    /// not write): it is left as it is (a usage error, exit 2).
    #[error(transparent)]
    Refused(StoreError),
    /// The store could not be reached, read or written, or is not a store this program can use
    /// (exit 1).
    #[error(transparent)]
    Unavailable(StoreError),
}
