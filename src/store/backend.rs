//! What a store is ([`Store`]) and why one could not be used ([`StoreError`]).

use super::key::{StateKey, ValueChange, ValueKey};
use crate::rules::state::CrewState;

/// Why a store could not be used. The doors deny with `state store unavailable: {this}`. Each
/// names the store (`sqlite:/abs/path`, or the Redis URL without its password) and, where there is
/// one, the key.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be opened, reached, read or written, or it is not a state store this
    /// program can use: the problem as its backend says it ([`super::sqlite::SqliteProblem`],
    /// [`super::redis::RedisProblem`]; a [`Store`] is known only as the trait).
    #[error("{store}: {problem}")]
    Unavailable {
        store: String,
        problem: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A stored state that is not one this program wrote: refused, never read as clean.
    #[error(
        "{store}: the state of {} is not one this program wrote, so it is refused rather than read as clean (reset it with `sc-state reset`): {why}",
        .key.describe()
    )]
    RefusedState {
        store: String,
        key: StateKey,
        /// What the state's reader found wrong with it.
        why: String,
    },
    /// A stored value its reader refused: refused, never read as none.
    #[error(
        "{store}: {} are not what this program writes, so they are refused rather than read as none ({}): {why}",
        .key.describe(),
        .key.remedy()
    )]
    RefusedValue {
        store: String,
        key: ValueKey,
        why: ValueRefused,
    },
    /// The store returned without running the update it was given.
    #[error("the store did not run the update")]
    NotRun,
}

/// Why a stored value was refused ([`Store::update_value`]).
#[derive(Debug, thiserror::Error)]
pub enum ValueRefused {
    /// The store holds bytes that are not text.
    #[error("not UTF-8 (bad byte at offset {offset})")]
    NotUtf8 { offset: usize },
    /// The store holds a value of another type than text (a SQLite blob, number or null).
    #[error("stored as {0}, not as text")]
    NotText(&'static str),
    /// The value's reader refused it: its own error.
    #[error(transparent)]
    Reader(Box<dyn std::error::Error + Send + Sync>),
}

/// A value read beside a state ([`Store::update_beside`]): the value (`None`: there is none), or
/// why it could not be read.
pub type ValueRead<'a> = Result<Option<&'a str>, &'a StoreError>;

/// A place where states are kept, shared by the processes that open it.
pub trait Store: Send {
    /// Which store this is, for the audit log and messages: `sqlite:/abs/path`, or the Redis URL
    /// without its password.
    fn describe(&self) -> &str;

    /// Whether the store is this process's memory alone ([`super::MemoryStore`]): no other
    /// process reads it, and it is gone when the process ends. What such a store keeps, such as
    /// the tokens spent there ([`super::spent`]), is known to this process only, so a token it
    /// spent is not spent for any other process, nor for this one started again.
    fn in_this_process_only(&self) -> bool {
        false
    }

    /// Reads the state at `key` (a clean one if there is none), runs `update` on it, and writes
    /// it back when it changed, all as one atomic step. `update` may run more than once (again on
    /// a fresh read, when another process wrote in between): only its last run counts.
    fn update(
        &mut self,
        key: &StateKey,
        update: &mut dyn FnMut(&mut CrewState),
    ) -> Result<(), StoreError>;

    /// The state at `key`, if there is one.
    fn read(&mut self, key: &StateKey) -> Result<Option<CrewState>, StoreError>;

    /// Every key that holds a state, in order (values are not states: they are not listed).
    fn keys(&mut self) -> Result<Vec<StateKey>, StoreError>;

    /// Reads the value at `key` (`None` if there is none), lets `update` say what becomes of it,
    /// and does so, all as one atomic step, like [`Store::update`]: `update` may run more than
    /// once (again on a fresh read), and only its last run counts. An `Err` from `update` (the
    /// value is not what its reader writes) is refused with that reason
    /// ([`StoreError::RefusedValue`]), and nothing is written.
    fn update_value(
        &mut self,
        key: &ValueKey,
        update: &mut dyn FnMut(Option<&str>) -> Result<ValueChange, ValueRefused>,
    ) -> Result<(), StoreError>;

    /// [`Store::update`], with the value at `beside` read in the same step and given to `update`
    /// beside the state: `Ok(None)` when there is none, or why it could not be read (a door then
    /// decides without it). The value is only read. A server reads both in one round trip: the
    /// store's read of a state and of what a decision on it needs.
    fn update_beside(
        &mut self,
        key: &StateKey,
        beside: &ValueKey,
        update: &mut dyn FnMut(&mut CrewState, ValueRead<'_>),
    ) -> Result<(), StoreError> {
        let value = self.read_value(beside);
        let value = value.as_ref().map(Option::as_deref);
        self.update(key, &mut |state| update(state, value))
    }

    /// The value at `key` (`None` if there is none), read once: nothing is written. A store
    /// whose update costs more than a read (a server's round trips) reads it in one.
    fn read_value(&mut self, key: &ValueKey) -> Result<Option<String>, StoreError> {
        let mut read = None;
        self.update_value(key, &mut |stored| {
            read = stored.map(str::to_owned);
            Ok(ValueChange::Keep)
        })?;
        Ok(read)
    }
}

/// Reads a stored state, refusing anything but what this program writes.
pub(crate) fn parse_state(
    store: &str,
    key: &StateKey,
    bytes: &[u8],
) -> Result<CrewState, StoreError> {
    let mut state = CrewState::from_json(bytes).map_err(|why| StoreError::RefusedState {
        store: store.to_owned(),
        key: key.clone(),
        why: why.to_string(),
    })?;
    state.span = key.span();
    Ok(state)
}
