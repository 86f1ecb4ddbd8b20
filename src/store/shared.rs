//! A door's state: in memory, or kept in a store and updated as one atomic step ([`Shared`]).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::backend::{Store, StoreError, ValueRead};
use super::key::{StateKey, ValueKey};
use crate::rules::policy::Policy;
use crate::rules::state::{Clock, CrewState, SystemClock};
use crate::verdict::{Decision, Judgement};

/// The time a decision is made at, and how long a taint lasts.
#[derive(Debug, Clone)]
pub struct Timing {
    pub clock: Arc<dyn Clock>,
    /// `--taint-ttl`: a taint whose last untrusted read is older is lifted.
    pub taint_ttl: Option<Duration>,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            clock: Arc::new(SystemClock),
            taint_ttl: None,
        }
    }
}

/// A state kept in a store, as one door uses it.
pub struct Shared {
    store: Box<dyn Store>,
    key: StateKey,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("Shared")
            .field("store", &self.store.describe())
            .field("key", &self.key)
            .finish()
    }
}

impl Shared {
    pub fn new(store: Box<dyn Store>, key: StateKey) -> Shared {
        Shared { store, key }
    }

    pub fn key(&self) -> &StateKey {
        &self.key
    }

    pub fn store(&mut self) -> &mut dyn Store {
        self.store.as_mut()
    }

    pub(crate) fn describe_store(&self) -> &str {
        self.store.describe()
    }

    /// Whether the store is this process's memory alone ([`Store::in_this_process_only`]).
    pub(crate) fn store_in_this_process_only(&self) -> bool {
        self.store.in_this_process_only()
    }

    /// Checks, at start, that the state can be read: an unreachable store or a state that is not
    /// what this program writes stops the door before any call is decided.
    pub fn check(&mut self) -> Result<(), StoreError> {
        self.store.read(&self.key).map(drop)
    }

    /// Runs `decide` on the state, brought to the clock's time first ([`CrewState::enter`]), as
    /// one atomic update. `decide` may run more than once ([`Store::update`]).
    pub fn transact(
        &mut self,
        policy: &Policy,
        timing: &Timing,
        decide: &mut dyn FnMut(&mut CrewState, SystemTime),
    ) -> Result<(), StoreError> {
        let now = timing.clock.now();
        self.store.update(&self.key, &mut |state| {
            state.enter(policy, now, timing.taint_ttl);
            decide(state, now);
        })
    }

    /// [`Shared::transact`], with the value at `beside` read in the same step
    /// ([`Store::update_beside`]) and given to `decide`.
    pub fn transact_beside(
        &mut self,
        policy: &Policy,
        timing: &Timing,
        beside: &ValueKey,
        decide: &mut dyn FnMut(&mut CrewState, SystemTime, ValueRead<'_>),
    ) -> Result<(), StoreError> {
        let now = timing.clock.now();
        self.store
            .update_beside(&self.key, beside, &mut |state, value| {
                state.enter(policy, now, timing.taint_ttl);
                decide(state, now, value);
            })
    }
}

/// The judgement for a call whose state could not be read or written: never allowed.
pub fn unavailable(err: &StoreError) -> Judgement {
    Judgement {
        granting: Default::default(),
        decision: Decision::Deny,
        reasons: vec![format!("state store unavailable: {err}")],
    }
}

/// A door's state: in memory (a stream, a process), or shared through a store.
#[derive(Debug)]
// One handle per door, never kept in a collection: the in-memory state's size costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum StateHandle {
    Memory(CrewState),
    Shared(Shared),
}

impl StateHandle {
    /// Runs `change` on the state, brought to the clock's time first ([`CrewState::enter`]):
    /// in memory, or as one atomic update of the shared state ([`Shared::transact`]), where
    /// `change` may run more than once and only its last run counts. `change` is given the time
    /// to record a taint at: always for a shared state (other processes read it), and in memory
    /// only under `--taint-ttl` (no other process reads it, so a taint's time matters only to the
    /// TTL). The store runs what it is given and knows nothing of the rules.
    pub fn update<R>(
        &mut self,
        policy: &Policy,
        timing: &Timing,
        change: &mut dyn FnMut(&mut CrewState, Option<SystemTime>) -> R,
    ) -> Result<R, StoreError> {
        match self {
            StateHandle::Memory(state) => {
                let now = timing.clock.now();
                state.enter(policy, now, timing.taint_ttl);
                Ok(change(state, timing.taint_ttl.map(|_| now)))
            }
            StateHandle::Shared(shared) => {
                let mut out = None;
                shared.transact(policy, timing, &mut |state, now| {
                    out = Some(change(state, Some(now)));
                })?;
                out.ok_or(StoreError::NotRun)
            }
        }
    }

    /// The store and key, for the audit log, when the state is shared.
    pub fn shared(&self) -> Option<&Shared> {
        match self {
            StateHandle::Shared(shared) => Some(shared),
            StateHandle::Memory(_) => None,
        }
    }
}
