//! What a store is ([`Store`]) and why one could not be used ([`StoreError`]).

use super::key::{StateKey, ValueChange, ValueKey};
use crate::rules::state::CrewState;

/// Why a store could not be used. The doors deny with `state store unavailable: {this}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// A place where states are kept, shared by the processes that open it.
pub trait Store: Send {
    /// Which store this is, for the audit log and messages: `sqlite:/abs/path`, or the Redis URL
    /// without its password.
    fn describe(&self) -> &str;

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
    /// value is not what its reader writes) is refused with that reason, and nothing is written.
    fn update_value(
        &mut self,
        key: &ValueKey,
        update: &mut dyn FnMut(Option<&str>) -> Result<ValueChange, String>,
    ) -> Result<(), StoreError>;
}

/// The error for a value its reader refused.
pub(crate) fn refused_value(store: &str, key: &ValueKey, why: &str) -> StoreError {
    StoreError(format!(
        "{store}: {} are not what this program writes, so they are refused rather than read as none (reset the session with `sc-state reset --session`): {why}",
        key.describe()
    ))
}

/// Reads a stored state, refusing anything but what this program writes.
pub(crate) fn parse_state(
    store: &str,
    key: &StateKey,
    bytes: &[u8],
) -> Result<CrewState, StoreError> {
    let mut state = CrewState::from_json(bytes).map_err(|why| {
        StoreError(format!(
            "{store}: the state of {} is not one this program wrote, so it is refused rather than read as clean (reset it with `sc-state reset`): {why}",
            key.describe()
        ))
    })?;
    state.span = key.span();
    Ok(state)
}
