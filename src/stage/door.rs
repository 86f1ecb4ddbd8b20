//! What every door does with one call: the one decision ([`crate::rules::decision::decide`]) on the
//! door's state, in memory or in the crew's store, as one atomic update; a store that fails makes
//! the call a deny. The crew's remembered approvals ([`crate::rules::grant`]) are read from the
//! store first and given to the decision.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use crate::call::Call;
use crate::rules::decision::{decide_in, evaluate_in, CallContext};
use crate::rules::grant::Grant;
use crate::rules::granting::Granted;
use crate::rules::policy::Policy;
use crate::rules::state::{AgentState, CrewState};
use crate::store::{grants, unavailable, Owner, Shared, StateHandle, StoreError, Timing, ValueKey};
use crate::verdict::{Decision, Judgement};

/// A call's judgement and the agent's state after it.
#[derive(Debug, Clone)]
pub struct Decided {
    pub judgement: Judgement,
    /// The agent's state after the call (none when the store failed).
    pub agent: Option<AgentState>,
}

/// Decides one call on the door's state and records what it changes; a store that fails makes
/// it a deny ([`unavailable`]). `keep_agent`: copy out the agent's state after the call (a stage
/// that needs only the judgement, as sc-exec's re-check, does not). `retried`: a hold is put to
/// the person through a 2026-07-28 client's retry, so its counted amount is noted under `id`
/// in the same update ([`crate::rules::state::CrewState::note_held`]) for
/// [`decide_again_on`]. The grants are the crew's in the store when the state is a crew's
/// there, else `local` (a door's own, in memory).
#[allow(clippy::too_many_arguments)]
pub(crate) fn decide_on(
    state: &mut StateHandle,
    call: &Call,
    id: &str,
    policy: &Policy,
    timing: &Timing,
    keep_agent: bool,
    retried: bool,
    local: &[Grant],
) -> Decided {
    let now = timing.clock.now();
    let decided = update_with_grants(state, policy, timing, local, &mut |state, at, grants| {
        let context = CallContext {
            grants: Some(Granted { grants, now }),
            ..CallContext::default()
        };
        let judgement = decide_in(call, id, policy, state, at, context);
        if retried && judgement.decision == Decision::Hold {
            state.note_held(id, call);
        }
        let agent = keep_agent
            .then(|| state.agent(&call.agent).cloned())
            .flatten();
        Decided { judgement, agent }
    });
    decided.unwrap_or_else(|err| Decided {
        judgement: unavailable(&err),
        agent: None,
    })
}

/// Decides again, on the door's state as it is now, a call that was held (`held_id`: its id,
/// as the retry's sealed `requestState` names it) and put to the person through a 2026-07-28
/// client's retry: the same rules, grants and state as [`decide_on`], as one atomic update of
/// the shared state. A store that fails makes it a deny ([`unavailable`]).
///
/// The hold counted the call's amount. While the state says it still does
/// ([`crate::rules::state::CrewState::held_is_counted`]), the rules see the state without it,
/// so the budget rule sums it once, and the amount is not recorded again (that would count it
/// twice). Once it does not (a budget window ended, or a reset, since the hold; or the note was
/// forgotten past [`crate::rules::state::MAX_HELD_SPEND`]), taking it back would lower other
/// calls' spend: the rules see the state as it is, so the budget adds the amount to the spend
/// now, and a call not denied has its amount counted, as a call first decided does. A forgotten
/// note counts the amount twice at worst: stricter, never looser.
///
/// Either way, a call not denied has its reads recorded again, as a call first decided (held
/// or not) has ([`crate::rules::state::CrewState::record_reads_at`]): a yes runs it now, and
/// its untrusted output reaches the agent now, so the hold's taint, forgotten by a reset or
/// lifted by a taint TTL while the person answered, is the call's again. A taint still there
/// is kept, its time moved on to now.
///
/// `asked_again`: whether the retry, so judged, is put to the person again under the same id
/// (sc-mcp's `cover`: a yes for fewer reasons). Then the note stays (or is made, for an amount
/// counted just now), for the next retry; otherwise the retry is settled here, once, and the
/// note is forgotten (the amount stays counted, as a hold's is whatever its answer).
pub(crate) fn decide_again_on(
    state: &mut StateHandle,
    call: &Call,
    held_id: &str,
    policy: &Policy,
    timing: &Timing,
    local: &[Grant],
    asked_again: &dyn Fn(&Judgement) -> bool,
) -> Judgement {
    let now = timing.clock.now();
    let decided = update_with_grants(state, policy, timing, local, &mut |state, at, grants| {
        let context = CallContext {
            grants: Some(Granted { grants, now }),
            ..CallContext::default()
        };
        if state.held_is_counted(held_id, call) {
            // A copy: the amount stays counted.
            let mut without_own = state.clone();
            without_own.take_back_spend(call);
            let judgement = evaluate_in(call, policy, &without_own, context);
            // Its reads, again: a reset of the taint or a taint TTL since the hold forgot them.
            state.record_reads_at(call, held_id, &judgement, policy, at);
            if !asked_again(&judgement) {
                state.forget_held(held_id);
            }
            return judgement;
        }
        let judgement = evaluate_in(call, policy, state, context);
        state.forget_held(held_id);
        // Recorded as a call first decided: its amount and its reads (a deny, nothing).
        state.record_at(call, held_id, &judgement, policy, at);
        if judgement.decision != Decision::Deny && asked_again(&judgement) {
            state.note_held(held_id, call);
        }
        judgement
    });
    decided.unwrap_or_else(|err| unavailable(&err))
}

/// Forgets the note of a held call's counted amount ([`crate::rules::state::CrewState::note_held`])
/// once the hold is settled without a decision again (declined, timed out, withdrawn): its
/// amount stays counted, as a hold's is whatever its answer. A store that fails leaves the note,
/// which costs nothing but its room: a later retry of the same id cannot come.
pub(crate) fn forget_held_on(
    state: &mut StateHandle,
    held_id: &str,
    policy: &Policy,
    timing: &Timing,
) {
    let _ = state.update(policy, timing, &mut |state, _| state.forget_held(held_id));
}

/// A change of a state given the grants a decision on it is given ([`update_with_grants`]).
type GrantedChange<'a, R> = dyn FnMut(&mut CrewState, Option<SystemTime>, &[Grant]) -> R + 'a;

/// Runs `change` as [`StateHandle::update`] does, given the grants a decision on the state is
/// given: the crew's in the store, read in the same step, when the state is a crew's there
/// ([`transact_with_grants`]), else `local` (a door's own, in memory).
fn update_with_grants<R>(
    state: &mut StateHandle,
    policy: &Policy,
    timing: &Timing,
    local: &[Grant],
    change: &mut GrantedChange<'_, R>,
) -> Result<R, StoreError> {
    match state {
        StateHandle::Memory(_) => {
            state.update(policy, timing, &mut |state, at| change(state, at, local))
        }
        StateHandle::Shared(shared) => {
            let mut out = None;
            transact_with_grants(shared, policy, timing, &mut |state, now, grants| {
                out = Some(change(state, Some(now), grants));
            })?;
            out.ok_or(StoreError::NotRun)
        }
    }
}

/// [`Shared::transact`], with `decide` given the live grants of the crew whose state `shared`
/// keeps, read in the same step ([`Shared::transact_beside`]: on a server, the same round trip);
/// none for an sc-hook session without a crew. Grants that cannot be read are none, so every
/// call they would have let through is asked about again; that is said once on stderr.
pub(crate) fn transact_with_grants(
    shared: &mut Shared,
    policy: &Policy,
    timing: &Timing,
    decide: &mut dyn FnMut(&mut CrewState, SystemTime, &[Grant]),
) -> Result<(), StoreError> {
    let Owner::Crew(crew) = &shared.key().owner else {
        return shared.transact(policy, timing, &mut |state, now| decide(state, now, &[]));
    };
    let crew = crew.clone();
    let store = shared.describe_store().to_owned();
    shared.transact_beside(
        policy,
        timing,
        &ValueKey::grants(&crew),
        &mut |state, now, read| {
            let grants = match read {
                Ok(text) => grants::live(&store, &crew, text, now).unwrap_or_else(|err| {
                    unread(&crew, &err);
                    Vec::new()
                }),
                Err(err) => {
                    unread(&crew, err);
                    Vec::new()
                }
            };
            decide(state, now, &grants);
        },
    )
}

/// Says, once a process, that the crew's grants could not be read.
fn unread(crew: &str, err: &dyn std::fmt::Display) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!(
            "skeleton-crew: the grants of crew {crew:?} could not be read, so none applies and every held call is asked again: {err}"
        );
    }
}

#[cfg(test)]
#[path = "door_tests.rs"]
mod tests;
