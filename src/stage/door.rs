//! What every door does with one call: the one decision ([`crate::rules::decision::decide`]) on the
//! door's state, in memory or in the crew's store, as one atomic update; a store that fails makes
//! the call a deny.

use crate::call::Call;
use crate::rules::decision::decide;
use crate::rules::policy::Policy;
use crate::rules::state::AgentState;
use crate::store::{unavailable, StateHandle, Timing};
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
/// that needs only the judgement, as sc-exec's re-check, does not).
pub(crate) fn decide_on(
    state: &mut StateHandle,
    call: &Call,
    id: &str,
    policy: &Policy,
    timing: &Timing,
    keep_agent: bool,
) -> Decided {
    let decided = state.update(policy, timing, &mut |state, at| {
        let judgement = decide(call, id, policy, state, at);
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
