//! Whether a person's yes, given through a 2026-07-28 client's retry ([`super::mrtr`]), covers
//! the call as it is decided again when the retry comes.
//!
//! A yes is a yes to what the card showed. The sealed `requestState` carries the hold's reasons
//! as the person was shown them ([`HeldState::reasons`], under the state's seal, so a client can
//! neither add to them nor swap them), and a retry that is held now for a reason not among them
//! (a taint since, a budget spent further) is not run on that yes: nothing is granted, the
//! `approve` event says which reasons the yes did not cover (`notCovered`), and the call is put
//! to the person again as a first hold is, with a fresh input request and a new `requestState`
//! sealed over the reasons it is held for now ([`ClientSide::ask_again`]). A retry held for the
//! same reasons, or fewer, runs on the yes.

use std::sync::Arc;

use anyhow::Result;

use super::client::ClientSide;
use super::pending::Ticket;
use super::protocol::RequestId;
use super::request_state::HeldState;
use crate::approve::elicitation;
use crate::call::Call;
use crate::record::Approval;
use crate::verdict::{Decision, Granting, Judgement};

pub(crate) use crate::verdict::not_shown;

/// What a yes did not cover, for the `approve` event: the reasons the person was shown, and
/// those of the hold now that they were not.
#[derive(Debug, Clone, Copy)]
pub(super) struct NotCovered<'a> {
    pub(super) shown: &'a [String],
    pub(super) not_shown: &'a [&'a str],
}

impl ClientSide<'_> {
    /// Puts a retried call to the person again: the yes it carries (`approval`) was given to
    /// the reasons of `held`, and the call is held now (`again`) for reasons it did not show
    /// (`not_shown`). The `approve` event records the answer, the new decision and `notCovered`;
    /// nothing is granted or run on the yes. The client gets a new input request, as for a first
    /// hold; a retry that did not declare elicitation (so cannot be asked) is declined.
    pub(super) fn ask_again(
        &mut self,
        id: &RequestId,
        held: &HeldState,
        (call, again): (&Call, &Judgement),
        approval: &Approval,
        not_shown: &[&str],
    ) -> Result<()> {
        let session = self.session;
        let ticket = Ticket {
            call_id: held.call_id.clone(),
            agent: session.agent.clone(),
            tool: call.tool.clone(),
            decision: Decision::Hold,
            approval: None,
            held_for: match &again.granting {
                Granting::Offers(grantable) => {
                    Some(Arc::new((call.clone(), (**grantable).clone())))
                }
                _ => None,
            },
            held_call: None,
            notify_failed: None,
        };
        let not_covered = NotCovered {
            shown: &held.reasons,
            not_shown,
        };
        self.audit_retry_approval(&ticket, approval, again, Some(not_covered))?;
        if !self.retry.asks_by_retry() {
            let declined = elicitation::declined(
                "declined: the yes was for fewer reasons than the call is held for now, and the retry did not declare elicitation, so the person could not be asked again",
            );
            return session.refuse_call(&id.value, &ticket, &again.reasons, Some(&declined));
        }
        let scopes = ticket.scopes().to_vec();
        self.ask_by_retry(id, &ticket, call, &again.reasons, &scopes)
    }
}

#[cfg(test)]
#[path = "cover_tests.rs"]
mod tests;
