//! What every door does with one call: the one decision ([`crate::rules::decision::decide`]) on the
//! door's state, in memory or in the crew's store, as one atomic update; a store that fails makes
//! the call a deny. The crew's remembered approvals ([`crate::rules::grant`]) are read from the
//! store first and given to the decision.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use crate::call::Call;
use crate::rules::decision::{decide_in, evaluate_in, CallContext};
use crate::rules::grant::Grant;
use crate::rules::granting::Granted;
use crate::rules::policy::Policy;
use crate::rules::state::AgentState;
use crate::store::{grants, unavailable, Owner, Shared, StateHandle, Timing};
use crate::verdict::Judgement;

/// A call's judgement and the agent's state after it.
#[derive(Debug, Clone)]
pub struct Decided {
    pub judgement: Judgement,
    /// The agent's state after the call (none when the store failed).
    pub agent: Option<AgentState>,
}

/// Decides one call on the door's state and records what it changes; a store that fails makes
/// it a deny ([`unavailable`]). `keep_agent`: copy out the agent's state after the call (a stage
/// that needs only the judgement, as sc-exec's re-check, does not). The grants are the crew's
/// in the store when the state is a crew's there, else `local` (a door's own, in memory).
pub(crate) fn decide_on(
    state: &mut StateHandle,
    call: &Call,
    id: &str,
    policy: &Policy,
    timing: &Timing,
    keep_agent: bool,
    local: &[Grant],
) -> Decided {
    let now = timing.clock.now();
    let grants = grants_for(state, now, local);
    let grants = &grants[..];
    let decided = state.update(policy, timing, &mut |state, at| {
        let context = CallContext {
            grants: Some(Granted { grants, now }),
            ..CallContext::default()
        };
        let judgement = decide_in(call, id, policy, state, at, context);
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

/// Decides again, on the door's state as it is now, a call that was held and recorded then (a
/// held call put to the person through a 2026-07-28 client's retry): the same rules, grants and
/// state as [`decide_on`], as one atomic read of the shared state, but nothing is recorded, since
/// the call's spend and reads were recorded when it was first decided (recording them again would
/// count its amount twice). A store that fails makes it a deny ([`unavailable`]). The rules see
/// the state without the call's own amount (counted when it was held), so the budget rule sums
/// it once; its hold, if any, the person's answer covers.
pub(crate) fn decide_again_on(
    state: &mut StateHandle,
    call: &Call,
    policy: &Policy,
    timing: &Timing,
    local: &[Grant],
) -> Judgement {
    let now = timing.clock.now();
    let grants = grants_for(state, now, local);
    let grants = &grants[..];
    let decided = state.update(policy, timing, &mut |state, _| {
        let context = CallContext {
            grants: Some(Granted { grants, now }),
            ..CallContext::default()
        };
        // A copy: nothing of the re-decision is recorded.
        let mut without_own = state.clone();
        without_own.take_back_spend(call);
        evaluate_in(call, policy, &without_own, context)
    });
    decided.unwrap_or_else(|err| unavailable(&err))
}

/// The grants a decision on `state` is given: the crew's in the store when the state is a crew's
/// there, else `local`.
fn grants_for<'a>(
    state: &mut StateHandle,
    now: SystemTime,
    local: &'a [Grant],
) -> Cow<'a, [Grant]> {
    match state {
        StateHandle::Shared(shared) => Cow::Owned(crew_grants(shared, now)),
        StateHandle::Memory(_) => Cow::Borrowed(local),
    }
}

/// The live grants of the crew whose state `shared` keeps (none for an sc-hook session without a
/// crew). Grants that cannot be read are none, so every call they would have let through is
/// asked about again; that is said once on stderr.
pub(crate) fn crew_grants(shared: &mut Shared, now: SystemTime) -> Vec<Grant> {
    static SAID: AtomicBool = AtomicBool::new(false);
    let Owner::Crew(crew) = &shared.key().owner else {
        return Vec::new();
    };
    let crew = crew.clone();
    match grants::list(shared.store(), &crew, now) {
        Ok(grants) => grants,
        Err(err) => {
            if !SAID.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "skeleton-crew: the grants of crew {crew:?} could not be read, so none applies and every held call is asked again: {err}"
                );
            }
            Vec::new()
        }
    }
}
