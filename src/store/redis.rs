//! The shared store: a Redis (7 or later) or Valkey server, through the `redis` crate's
//! synchronous client, for crews whose processes run on many machines. `redis://HOST:PORT/DB`,
//! or `rediss://HOST:PORT/DB` for TLS (rustls; the server's certificate is checked against the
//! system's roots, or the file named by `SSL_CERT_FILE`; `#insecure` is refused).
//!
//! Each state is one string key holding the JSON [`CrewState`] writes, namespaced by crew:
//! `skeleton-crew:crew:NAME:gate` (and `:exec`, `skeleton-crew:session:ID:gate`). An update is
//! optimistic and atomic: `WATCH` the key and `GET` it, decide, then `MULTI`/`SET`/`EXEC`; when
//! another process wrote the key in between, `EXEC` fails and the update runs again on the new
//! state, so no update is ever lost. sc-hook's call links of a session ([`ValueKey`]) are one
//! string key beside its state, `skeleton-crew:session:ID:links`, updated the same way.
//!
//! Beside them, one marker key, [`MARKER_KEY`], says the database is a store this program keeps:
//! `skeleton-crew redis store 1 ID`, where ID is random ([`super::redis_marker`]). Redis can lose
//! what it holds without an error (a restart without persistence, `FLUSHALL`, an eviction under
//! `maxmemory`), and a lost state would read as "no taint, nothing spent". So a store is made on
//! purpose, once: `sc-state init` ([`RedisStore::init`]) writes the marker into an empty
//! database. Opening a database without the marker is refused, whether it is empty (never made,
//! or emptied by a loss: [`RedisProblem::Uninitialised`]) or holds keys ([`RedisProblem::Lost`]);
//! no door or other `sc-state` command makes the marker, so a process started after a loss (each
//! sc-hook call is one) refuses the store as a running one does. Each process remembers the
//! marker it found when it opened the store, and every read and update reads the marker in the
//! same round trip as the state (and `WATCH`es it, so an update whose marker went away in between
//! runs again and is refused). A marker that is gone, or not the one this process opened, refuses
//! the read or update ([`RedisProblem::Lost`]) until the process is started again on a store an
//! operator has made again.
//!
//! Connecting waits at most [`CONNECT_TIMEOUT`] and each command [`COMMAND_TIMEOUT`]. A failed
//! connection is dropped and made again for a later update, so decisions resume when the server
//! is back; for [`RETRY_AFTER`] after a failure, updates fail at once with the same error rather
//! than each waiting for a server that just failed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::{Client, Connection, IntoConnectionInfo, RedisError};

use super::init::{InitError, Initialised};
use super::redis_marker::{is_marker, new_marker, Found};
pub use super::redis_marker::{MARKER_FORMAT, MARKER_KEY};
use super::{
    parse_state, StateKey, Store, StoreError, ValueChange, ValueKey, ValueRead, ValueRefused,
};
use crate::rules::state::CrewState;

/// Every key this program writes starts with this.
pub(crate) const KEY_PREFIX: &str = "skeleton-crew:";
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);
pub(crate) const RETRY_AFTER: Duration = Duration::from_millis(200);
/// How long an update keeps running again while other processes keep writing the same key.
pub(crate) const CONFLICT_WAIT: Duration = Duration::from_secs(10);

/// Why a Redis URL is refused ([`check_url`]).
#[derive(Debug, thiserror::Error)]
pub enum RedisUrlError {
    #[error(
        "a fragment (such as #insecure) is not accepted: the server's certificate is always checked"
    )]
    Fragment,
    #[error("not a Redis URL: {0}")]
    NotAUrl(RedisError),
    #[error("not a Redis URL over TCP")]
    NotTcp,
    #[error("the URL has no host")]
    NoHost,
}

/// Why the Redis server could not be used ([`StoreError::Unavailable`]). A client error is shared, so
/// that the same failure can be given again ([`RETRY_AFTER`]).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum RedisProblem {
    /// The client refused the URL, or the server failed a command.
    #[error("{0}")]
    Client(Arc<RedisError>),
    #[error("cannot connect: {0}")]
    CannotConnect(Arc<RedisError>),
    /// Other processes kept writing the key (named as [`StateKey::describe`] or
    /// [`ValueKey::describe`] name it) for [`CONFLICT_WAIT`].
    #[error(
        "other processes kept changing {key} for {} s, so the update never went through",
        CONFLICT_WAIT.as_secs()
    )]
    Contended { key: String },
    /// A key under [`KEY_PREFIX`] that this program never writes.
    #[error(
        "the key {} is under {KEY_PREFIX} but is not one this program writes",
        serde_json::Value::String(.0.clone())
    )]
    StrayKey(String),
    /// An empty database: no marker and no keys. It is a store never made, or one that lost
    /// everything; only `sc-state init` makes it a store (`shown`: the URL without its password).
    #[error(
        "the database has no {MARKER_KEY} marker: it is new, or it lost its data (taint and spend included); run `sc-state init --state {shown}` once to create the store"
    )]
    Uninitialised { shown: String },
    /// `sc-state init` on a database that holds keys but no marker: it is not made a store.
    #[error(
        "the database holds {keys} key{} but no {MARKER_KEY} marker: a store that lost its marker (evicted), one written before the marker existed, or another program's data (to keep what it holds as the crew's store, mark it by hand: \"A Redis that loses its data\" in docs/state.md)",
        if *.keys == 1 { "" } else { "s" }
    )]
    Unmarked { keys: u64 },
    /// The marker key is gone, or is not the one this process found when it opened the store:
    /// the server lost what it held (taint and spend included) since.
    #[error(
        "the Redis store lost its data (its marker key is gone): restarted without persistence, flushed, or evicted; taint and spend cannot be trusted"
    )]
    Lost,
    /// The marker key holds something this program does not write.
    #[error(
        "the key {MARKER_KEY} holds {}, not a marker this program writes, so the database is not used as a state store",
        serde_json::Value::String(.0.clone())
    )]
    ForeignMarker(String),
}

/// Checks a `redis://` or `rediss://` URL without connecting: a host, a port, a database number.
pub(crate) fn check_url(url: &str) -> Result<(), RedisUrlError> {
    if url.contains('#') {
        return Err(RedisUrlError::Fragment);
    }
    let info = url.into_connection_info().map_err(RedisUrlError::NotAUrl)?;
    match info.addr() {
        redis::ConnectionAddr::Tcp(host, _) | redis::ConnectionAddr::TcpTls { host, .. }
            if !host.is_empty() =>
        {
            Ok(())
        }
        redis::ConnectionAddr::Unix(_) => Err(RedisUrlError::NotTcp),
        _ => Err(RedisUrlError::NoHost),
    }
}

/// The URL without its user and password, for the audit log and messages.
fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// A key's bytes and the marker key's, read in one round trip.
type StoredAndMarker = (Option<Vec<u8>>, Option<Vec<u8>>);

/// What a watched read found: the key's bytes, and those of the key read beside it.
type Watched = (Option<Vec<u8>>, Option<Vec<u8>>);

/// A Redis server's states.
pub(crate) struct RedisStore {
    client: Client,
    connection: Option<Connection>,
    shown: String,
    /// The last connection failure, and when: updates within [`RETRY_AFTER`] fail with it.
    failed: Option<(Instant, RedisProblem)>,
    /// The marker key's value when the store was opened; every read and update checks it is
    /// still there.
    marker: String,
}

impl RedisStore {
    /// Connects (at most [`CONNECT_TIMEOUT`]), and reads nothing yet.
    fn connect(url: &str) -> Result<RedisStore, StoreError> {
        let shown = shown(url);
        let client = Client::open(url).map_err(|err| StoreError::Unavailable {
            store: shown.clone(),
            problem: Box::new(RedisProblem::Client(Arc::new(err))),
        })?;
        let mut store = RedisStore {
            client,
            connection: None,
            shown,
            failed: None,
            marker: String::new(),
        };
        store.connection()?;
        Ok(store)
    }

    /// The marker key and the number of keys, read in one round trip.
    fn found(&mut self) -> Result<Found, StoreError> {
        let connection = self.connection()?;
        let read: Result<(Option<String>, u64), RedisError> = redis::pipe()
            .cmd("GET")
            .arg(MARKER_KEY)
            .cmd("DBSIZE")
            .query(connection);
        match read {
            Ok((marker, keys)) => Ok(Found::of(marker, keys)),
            Err(err) => Err(self.fail(err)),
        }
    }

    /// Connects and reads the marker key: a database without it is refused, empty
    /// ([`RedisProblem::Uninitialised`]: `sc-state init` makes it a store) or not
    /// ([`RedisProblem::Lost`]). Nothing is written.
    pub fn open(url: &str) -> Result<RedisStore, StoreError> {
        let mut store = RedisStore::connect(url)?;
        store.marker = match store.found()? {
            Found::Store(marker) => marker,
            Found::Empty => {
                let shown = store.shown.clone();
                return Err(store.error(RedisProblem::Uninitialised { shown }));
            }
            Found::Unmarked { .. } => return Err(store.error(RedisProblem::Lost)),
            Found::Foreign(other) => return Err(store.error(RedisProblem::ForeignMarker(other))),
        };
        Ok(store)
    }

    /// `sc-state init`: makes an empty database a store by writing a new marker, or finds that
    /// it is one already (nothing is written). A database holding keys but no marker, or a
    /// marker key this program does not write, is refused ([`InitError::Refused`]).
    pub fn init(url: &str) -> Result<Initialised, InitError> {
        let mut store = RedisStore::connect(url).map_err(InitError::Unavailable)?;
        let created = match store.found().map_err(InitError::Unavailable)? {
            Found::Store(_) => false,
            Found::Empty => {
                // When another `sc-state init` marks it at the same time, `NX` keeps the first
                // marker, and both read it back.
                let ours = new_marker();
                let connection = store.connection().map_err(InitError::Unavailable)?;
                let made: Result<(Option<String>,), RedisError> = redis::pipe()
                    .cmd("SET")
                    .arg(MARKER_KEY)
                    .arg(&ours)
                    .arg("NX")
                    .ignore()
                    .cmd("GET")
                    .arg(MARKER_KEY)
                    .query(connection);
                match made {
                    Ok((Some(marker),)) if marker == ours => true,
                    Ok((Some(marker),)) if is_marker(&marker) => false,
                    Ok((Some(other),)) => {
                        return Err(InitError::Refused(
                            store.error(RedisProblem::ForeignMarker(other)),
                        ))
                    }
                    Ok((None,)) => {
                        return Err(InitError::Unavailable(store.error(RedisProblem::Lost)))
                    }
                    Err(err) => return Err(InitError::Unavailable(store.fail(err))),
                }
            }
            Found::Unmarked { keys } => {
                return Err(InitError::Refused(
                    store.error(RedisProblem::Unmarked { keys }),
                ))
            }
            Found::Foreign(other) => {
                return Err(InitError::Refused(
                    store.error(RedisProblem::ForeignMarker(other)),
                ))
            }
        };
        Ok(Initialised {
            store: store.shown,
            created,
        })
    }

    /// Refuses unless `found` (the marker key, read in the same round trip as a state or value)
    /// is the marker this process opened the store with.
    fn check_marker(&self, found: Option<Vec<u8>>) -> Result<(), StoreError> {
        match found {
            Some(found) if found == self.marker.as_bytes() => Ok(()),
            Some(found) if !is_marker(&String::from_utf8_lossy(&found)) => Err(self.error(
                RedisProblem::ForeignMarker(String::from_utf8_lossy(&found).into_owned()),
            )),
            // Gone, or made again since (by `sc-state init` on the emptied database, or an
            // operator): what this process knew was lost in between.
            _ => Err(self.error(RedisProblem::Lost)),
        }
    }

    /// The connection, made again when the last one failed.
    fn connection(&mut self) -> Result<&mut Connection, StoreError> {
        if self.connection.is_none() {
            if let Some((at, problem)) = &self.failed {
                if at.elapsed() < RETRY_AFTER {
                    return Err(self.error(problem.clone()));
                }
            }
            let connection = self
                .client
                .get_connection_with_timeout(CONNECT_TIMEOUT)
                .and_then(|connection| {
                    connection.set_read_timeout(Some(COMMAND_TIMEOUT))?;
                    connection.set_write_timeout(Some(COMMAND_TIMEOUT))?;
                    Ok(connection)
                });
            match connection {
                Ok(connection) => {
                    self.failed = None;
                    self.connection = Some(connection);
                }
                Err(err) => {
                    let problem = RedisProblem::CannotConnect(Arc::new(err));
                    self.failed = Some((Instant::now(), problem.clone()));
                    return Err(self.error(problem));
                }
            }
        }
        Ok(self.connection.as_mut().expect("connected above"))
    }

    /// Drops the connection after an error (a later update connects again) and says what failed.
    fn fail(&mut self, err: RedisError) -> StoreError {
        self.connection = None;
        let remembered = err.is_io_error() || err.is_timeout() || err.is_connection_dropped();
        let problem = RedisProblem::Client(Arc::new(err));
        if remembered {
            self.failed = Some((Instant::now(), problem.clone()));
        }
        self.error(problem)
    }

    fn error(&self, problem: RedisProblem) -> StoreError {
        StoreError::Unavailable {
            store: self.shown.clone(),
            problem: Box::new(problem),
        }
    }

    fn redis_key(key: &StateKey) -> String {
        format!("{KEY_PREFIX}{}", key.path().replace('/', ":"))
    }

    fn value_redis_key(key: &ValueKey) -> String {
        format!("{KEY_PREFIX}{}", key.path().replace('/', ":"))
    }

    /// One optimistic attempt at a value: `Ok(true)` when done, `Ok(false)` when another
    /// process wrote the key first.
    fn attempt_value(
        &mut self,
        key: &ValueKey,
        redis_key: &str,
        update: &mut dyn FnMut(Option<&str>) -> Result<ValueChange, ValueRefused>,
    ) -> Result<bool, StoreError> {
        let shown = self.shown.clone();
        let (stored, _) = self.watch_and_get(redis_key, None)?;
        // The same connection, still watching the key.
        let connection = self.connection()?;
        let change = match stored.as_deref().map(std::str::from_utf8) {
            None => update(None),
            Some(Ok(text)) => update(Some(text)),
            Some(Err(err)) => Err(ValueRefused::NotUtf8 {
                offset: err.valid_up_to(),
            }),
        };
        let change = match change {
            Ok(change) => change,
            Err(why) => {
                // Leave the connection clean for the next update.
                if let Err(unwatch) = redis::cmd("UNWATCH").exec(connection) {
                    self.fail(unwatch);
                }
                return Err(StoreError::RefusedValue {
                    store: shown,
                    key: key.clone(),
                    why,
                });
            }
        };
        let mut transaction = redis::pipe();
        transaction.atomic();
        match change {
            ValueChange::Keep => {
                return match redis::cmd("UNWATCH").exec(connection) {
                    Ok(()) => Ok(true),
                    Err(err) => Err(self.fail(err)),
                };
            }
            ValueChange::Set(text) => transaction.cmd("SET").arg(redis_key).arg(text).ignore(),
            ValueChange::Remove => transaction.cmd("DEL").arg(redis_key).ignore(),
        };
        let written: Result<Option<()>, RedisError> = transaction.query(connection);
        match written {
            Ok(Some(())) => Ok(true),
            Ok(None) => Ok(false),
            Err(err) => Err(self.fail(err)),
        }
    }

    /// Reads a key and the marker in one round trip, the marker after the key (see
    /// [`RedisStore::watch_and_get`]); a marker that is not the one the store was opened with
    /// refuses the read.
    fn get_and_check(&mut self, redis_key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let connection = self.connection()?;
        let read: Result<StoredAndMarker, RedisError> = redis::pipe()
            .cmd("GET")
            .arg(redis_key)
            .cmd("GET")
            .arg(MARKER_KEY)
            .query(connection);
        let (stored, marker) = match read {
            Ok(read) => read,
            Err(err) => return Err(self.fail(err)),
        };
        self.check_marker(marker)?;
        Ok(stored)
    }

    /// `WATCH`es a key and the marker and reads both, the first half of an optimistic update; a
    /// marker that is not the one the store was opened with refuses the update (the key is not
    /// watched any more). The marker is read after the key, so a loss before the key was read
    /// is seen; a loss after it touches the watched keys, and the update runs again. `beside`,
    /// when given, is watched and read in the same round trip, before the marker, and is the
    /// second thing returned: a change to it (a grant revoked) before the update is written runs
    /// the update again on the value as it is then.
    fn watch_and_get(
        &mut self,
        redis_key: &str,
        beside: Option<&str>,
    ) -> Result<Watched, StoreError> {
        let connection = self.connection()?;
        let mut pipe = redis::pipe();
        pipe.cmd("WATCH").arg(redis_key).arg(MARKER_KEY);
        if let Some(beside) = beside {
            pipe.arg(beside);
        }
        pipe.ignore().cmd("GET").arg(redis_key);
        if let Some(beside) = beside {
            pipe.cmd("GET").arg(beside);
        }
        pipe.cmd("GET").arg(MARKER_KEY);
        let read: Result<(Watched, Option<Vec<u8>>), RedisError> = match beside {
            Some(_) => pipe
                .query(connection)
                .map(|(stored, beside, marker)| ((stored, beside), marker)),
            None => pipe
                .query(connection)
                .map(|(stored, marker): StoredAndMarker| ((stored, None), marker)),
        };
        let (found, marker) = match read {
            Ok(read) => read,
            Err(err) => return Err(self.fail(err)),
        };
        if let Err(refused) = self.check_marker(marker) {
            // Leave the connection clean for the next update.
            let connection = self.connection()?;
            if let Err(unwatch) = redis::cmd("UNWATCH").exec(connection) {
                self.fail(unwatch);
            }
            return Err(refused);
        }
        Ok(found)
    }

    /// Retries [`RedisStore::attempt`] while another process writes the key first, up to
    /// [`CONFLICT_WAIT`].
    fn update_with(
        &mut self,
        key: &StateKey,
        beside: Option<(&ValueKey, &str)>,
        update: &mut dyn FnMut(&mut CrewState, ValueRead<'_>),
    ) -> Result<(), StoreError> {
        let redis_key = RedisStore::redis_key(key);
        let deadline = Instant::now() + CONFLICT_WAIT;
        loop {
            if self.attempt(key, &redis_key, beside, update)? {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.error(RedisProblem::Contended {
                    key: key.describe(),
                }));
            }
        }
    }

    /// A stored value as text: bytes that are not UTF-8 are refused, never read as none.
    fn utf8_value(&self, key: &ValueKey, bytes: Vec<u8>) -> Result<String, StoreError> {
        String::from_utf8(bytes).map_err(|err| StoreError::RefusedValue {
            store: self.shown.clone(),
            key: key.clone(),
            why: ValueRefused::NotUtf8 {
                offset: err.utf8_error().valid_up_to(),
            },
        })
    }

    /// One optimistic attempt: `Ok(true)` when written (or nothing to write), `Ok(false)` when
    /// another process wrote the key (or the value `beside`) first. `beside` is a value's key
    /// and its Redis key, read in the same round trip and given to `update`
    /// ([`Store::update_beside`]).
    fn attempt(
        &mut self,
        key: &StateKey,
        redis_key: &str,
        beside: Option<(&ValueKey, &str)>,
        update: &mut dyn FnMut(&mut CrewState, ValueRead<'_>),
    ) -> Result<bool, StoreError> {
        let shown = self.shown.clone();
        let (stored, value) =
            self.watch_and_get(redis_key, beside.map(|(_, redis_key)| redis_key))?;
        let value = match (beside, value) {
            (Some((value_key, _)), Some(bytes)) => self.utf8_value(value_key, bytes).map(Some),
            _ => Ok(None),
        };
        // The same connection, still watching the key.
        let connection = self.connection()?;
        let parsed = match &stored {
            Some(bytes) => parse_state(&shown, key, bytes),
            None => Ok(CrewState {
                span: key.span(),
                ..CrewState::new()
            }),
        };
        let mut state = match parsed {
            Ok(state) => state,
            Err(err) => {
                // Leave the connection clean for the next update.
                if let Err(unwatch) = redis::cmd("UNWATCH").exec(connection) {
                    self.fail(unwatch);
                }
                return Err(err);
            }
        };
        // Nothing is written when nothing changed (a state never stored stays unstored).
        let before = state.clone();
        update(&mut state, value.as_ref().map(Option::as_deref));
        if before == state {
            return match redis::cmd("UNWATCH").exec(connection) {
                Ok(()) => Ok(true),
                Err(err) => Err(self.fail(err)),
            };
        }
        let text = serde_json::to_string(&state).expect("a crew state serializes");
        let written: Result<Option<()>, RedisError> = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(redis_key)
            .arg(text)
            .ignore()
            .query(connection);
        match written {
            Ok(Some(())) => Ok(true),
            Ok(None) => Ok(false),
            Err(err) => Err(self.fail(err)),
        }
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Store for RedisStore {
    fn describe(&self) -> &str {
        &self.shown
    }

    fn update(
        &mut self,
        key: &StateKey,
        update: &mut dyn FnMut(&mut CrewState),
    ) -> Result<(), StoreError> {
        self.update_with(key, None, &mut |state, _| update(state))
    }

    /// The value and the state in one round trip, both watched: a state written after the value
    /// changed is written again from the value as it is then (an update that writes nothing
    /// reads the value as it stood when the state was read).
    fn update_beside(
        &mut self,
        key: &StateKey,
        beside: &ValueKey,
        update: &mut dyn FnMut(&mut CrewState, ValueRead<'_>),
    ) -> Result<(), StoreError> {
        let beside_key = RedisStore::value_redis_key(beside);
        self.update_with(key, Some((beside, &beside_key)), update)
    }

    fn read(&mut self, key: &StateKey) -> Result<Option<CrewState>, StoreError> {
        let stored = self.get_and_check(&RedisStore::redis_key(key))?;
        stored
            .map(|bytes| parse_state(&self.shown, key, &bytes))
            .transpose()
    }

    fn keys(&mut self) -> Result<Vec<StateKey>, StoreError> {
        let pattern = format!("{KEY_PREFIX}*");
        let mut cursor = 0u64;
        let mut keys = Vec::new();
        loop {
            let connection = self.connection()?;
            let page: Result<(u64, Vec<String>), RedisError> = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query(connection);
            let (next, found) = match page {
                Ok(page) => page,
                Err(err) => return Err(self.fail(err)),
            };
            for redis_key in found {
                if redis_key == MARKER_KEY {
                    continue;
                }
                let path = redis_key[KEY_PREFIX.len()..].replace(':', "/");
                if ValueKey::parse(&path).is_some() {
                    // A value (sc-hook's call links), not a state.
                    continue;
                }
                let Some(key) = StateKey::parse(&path) else {
                    return Err(self.error(RedisProblem::StrayKey(redis_key)));
                };
                keys.push(key);
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        // The marker after the scan: a store that lost its data lists nothing, but is refused.
        let connection = self.connection()?;
        let marker: Result<Option<Vec<u8>>, RedisError> =
            redis::cmd("GET").arg(MARKER_KEY).query(connection);
        match marker {
            Ok(marker) => self.check_marker(marker)?,
            Err(err) => return Err(self.fail(err)),
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    /// One round trip: the value and the marker, as [`Store::read`] reads a state (an update
    /// would `WATCH` and `UNWATCH` for nothing).
    fn read_value(&mut self, key: &ValueKey) -> Result<Option<String>, StoreError> {
        let stored = self.get_and_check(&RedisStore::value_redis_key(key))?;
        stored.map(|bytes| self.utf8_value(key, bytes)).transpose()
    }

    fn update_value(
        &mut self,
        key: &ValueKey,
        update: &mut dyn FnMut(Option<&str>) -> Result<ValueChange, ValueRefused>,
    ) -> Result<(), StoreError> {
        let redis_key = RedisStore::value_redis_key(key);
        let deadline = Instant::now() + CONFLICT_WAIT;
        loop {
            if self.attempt_value(key, &redis_key, update)? {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.error(RedisProblem::Contended {
                    key: key.describe(),
                }));
            }
        }
    }
}

#[cfg(test)]
#[path = "redis_tests.rs"]
mod tests;
