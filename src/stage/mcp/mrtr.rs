//! A HOLD as the protocol's own retry (MCP 2026-07-28, multi round-trip requests).
//!
//! To a modern client that declared elicitation (form mode), a held `tools/call` is answered
//! with `{"resultType":"input_required","inputRequests":{"sc-mcp-approval":{"method":
//! "elicitation/create",…}},"requestState":…}`: the same question as the elicitation of a legacy
//! client (agent, tool, exact arguments, source, reasons; approve or not, and the scopes offered).
//! The `requestState` is sealed ([`super::request_state`]) over the reasons shown, the principal,
//! the call's digest, the policy's digest, the door (the server, `--sandbox`, the ways of
//! asking), the place it is spent (the crew's store and crew, or this sc-mcp process) and an
//! expiry. The client retries the call with `inputResponses` and the state: the state is
//! opened, spent once (in the crew's store with `--state`, so a retry served by another sc-mcp
//! of the crew completes, else in this process, which takes only the states it gave), and the
//! call is decided again by the one decision on the state as it is now
//! ([`crate::stage::door::decide_again_on`]: a taint, a budget spent or a store that fails while
//! the person answered counts; the call's own amount, counted when it was held, is left out only
//! while the state still counts it, not after a budget window ended or a reset; a call not
//! denied has its reads recorded again, so a taint a reset or a taint TTL forgot since is its
//! own again). A deny now is a
//! deny, whatever the answer. A yes covers only the
//! reasons it was shown, which the state carries: a call held now for a reason it did not show
//! is neither run nor granted, but asked about again with a new state ([`super::cover`]).
//! Otherwise the answer settles the call: approved, it is forwarded to the server as it first
//! came; else refused. The `approve` event records the answer and the new decision
//! (`decidedAgain`, and `notCovered` when the yes was for fewer reasons). A state that is
//! tampered with, expired, for another principal, call, policy, server, sandbox setting, way of
//! asking or place of spending, or spent already is refused with
//! a JSON-RPC error (-32602), and audited as a denied message.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Result;
use serde_json::{json, Map, Value};

use super::cover::NotCovered;
use super::pending::{Awaiting, PendingRequest, Ticket};
use super::protocol::{
    classify_client_message, error_response, result_response, ClientMessage, RequestId,
    INTERNAL_ERROR, INVALID_REQUEST,
};
use super::request_state::{self, HeldState, Retries, StateRefused};
use super::revision::{Modern, MODERN};
use super::session::lock;
use crate::approve::elicitation;
use crate::audit::{self, Stage};
use crate::call::Call;
use crate::record::Approval;
use crate::sanitize::for_terminal;
use crate::store::{spent, Owner, StateHandle};
use crate::verdict::{Decision, Grantable, Judgement, Scope};

/// The key of sc-mcp's one input request.
pub(crate) const INPUT_KEY: &str = "sc-mcp-approval";
/// JSON-RPC: Invalid params.
const INVALID_PARAMS: i64 = -32602;

/// The `input_required` result a held call gets, and the state it carries.
#[allow(clippy::too_many_arguments)]
pub(crate) fn input_required(
    retries: &Retries,
    ticket: &Ticket,
    call: &Call,
    arguments: &Value,
    reasons: &[String],
    scopes: &[Scope],
    grantable: Option<&Grantable>,
    (spent_at, now): (String, SystemTime),
) -> Result<(Value, HeldState), getrandom::Error> {
    let state = HeldState {
        nonce: request_state::nonce()?,
        call_id: ticket.call_id.clone(),
        principal: ticket.agent.clone(),
        tool: ticket.tool.clone(),
        call: request_state::call_digest(&ticket.tool, arguments),
        policy: retries.policy_digest.clone(),
        door: retries.door.clone(),
        spent_at,
        expires: request_state::millis(now + retries.ttl),
        reasons: reasons.to_vec(),
        scopes: scopes.to_vec(),
        grantable: grantable.cloned(),
    };
    let message = elicitation::message(call, reasons, Some(retries.ttl), scopes);
    let result = json!({
        "resultType": "input_required",
        "inputRequests": {
            INPUT_KEY: {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": message,
                    "requestedSchema": elicitation::requested_schema(scopes),
                }
            }
        },
        "requestState": retries.key.seal(&state),
    });
    Ok((result, state))
}

impl super::client::ClientSide<'_> {
    /// Answers a held call from a modern client with `input_required`.
    pub(super) fn ask_by_retry(
        &mut self,
        id: &RequestId,
        ticket: &Ticket,
        call: &Call,
        reasons: &[String],
        scopes: &[Scope],
    ) -> Result<()> {
        let session = self.session;
        let grantable = ticket.held_for.as_ref().map(|held| &held.1);
        let arguments = self
            .retry
            .current
            .as_ref()
            .and_then(|modern| modern.message.get("params"))
            .and_then(|params| params.get("arguments"))
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let now = SystemTime::now();
        let sealed = input_required(
            &self.retry.retries,
            ticket,
            call,
            &arguments,
            reasons,
            scopes,
            grantable,
            (self.spent_at(), now),
        );
        // Without a crew's store, the state is spent in this process: it notes the states it
        // gave, and takes no other.
        let sealed = match sealed {
            Ok((result, state)) if self.spends_in_memory() => {
                if self.retry.issue(&state.nonce, state.expires, now) {
                    Ok(result)
                } else {
                    let approval = elicitation::declined(format!(
                        "declined: {} states given by this sc-mcp are still live",
                        crate::store::spent::MAX_SPENT
                    ));
                    return session.decline_held(id, ticket, reasons, &approval, true);
                }
            }
            Ok((result, _)) => Ok(result),
            Err(err) => Err(err),
        };
        match sealed {
            Ok(result) => {
                session.narrate(&format!(
                    "sc-mcp: {} → {}: asking the person through the MCP client's retry ({MODERN})",
                    for_terminal(&ticket.agent),
                    for_terminal(&ticket.tool),
                ));
                session.to_client(&result_response(&id.value, &result));
                Ok(())
            }
            Err(err) => {
                let approval = elicitation::declined(format!(
                    "declined: no random bytes for its state: {err}"
                ));
                session.decline_held(id, ticket, reasons, &approval, true)
            }
        }
    }

    /// Handles a request of a 2026-07-28 client: a revision sc-mcp does not speak is refused,
    /// `server/discover` answered, a retry of a held call taken, and anything else handled as a
    /// legacy request (the server is spoken to in the newest revision it speaks,
    /// [`super::handshake`]) whose answer is made a 2026-07-28 one.
    pub(super) fn handle_modern(&mut self, original: &[u8], modern: Modern) -> Result<()> {
        let session = self.session;
        let stripped = modern.stripped.clone();
        // Checked as it came (a duplicate key, a bad id… is refused before anything is stripped).
        let (id, call_text) = match classify_client_message(original) {
            ClientMessage::ToolCall { id, text, .. } => (id, Some(text)),
            ClientMessage::Request { id, .. } => (id, None),
            // Refused, or not a request: as any client's message.
            _ => return self.handle_as(original, &stripped),
        };
        if modern.version != MODERN {
            session.to_client(&super::revision::unsupported(&id.value, &modern.version));
            return Ok(());
        }
        if session.no_server.is_none() {
            if let Err(why) = super::handshake::ensure_handshake(session) {
                session.to_client(&error_response(
                    &id.value,
                    INTERNAL_ERROR,
                    &format!("sc-mcp: {why}"),
                ));
                return Ok(());
            }
        }
        if modern.method == "server/discover" {
            let server = lock(&session.revisions.state)
                .server
                .clone()
                .unwrap_or_else(|| json!({"capabilities": {"tools": {}}}));
            let result = super::revision::discover_result(&server, &session.policy, &session.agent);
            session.to_client(&result_response(&id.value, &result));
            return Ok(());
        }
        lock(&session.revisions.state)
            .modern
            .insert(id.key.clone(), modern.method.clone());
        let retry = call_text.is_some()
            && modern
                .message
                .get("params")
                .is_some_and(|params| params.get("requestState").is_some());
        self.retry.current = Some(modern);
        if retry {
            let modern = self.retry.current.clone().expect("just set");
            return self.take_retry(id, &modern, call_text.unwrap_or_default());
        }
        self.handle_as(original, &stripped)
    }

    /// Takes a modern client's retry of a held call (a `tools/call` carrying `requestState`;
    /// `text`: the message as it came, for the exact text of `arguments.amount`).
    pub(super) fn take_retry(&mut self, id: RequestId, modern: &Modern, text: &str) -> Result<()> {
        let session = self.session;
        let message = &modern.message;
        let id_value = id.value.clone();
        // As any call's: an id a request still awaits an answer under is refused (and the state
        // left unspent), else the retry's answer and that request's could not be told apart.
        if let Some(user) = session.id_in_use(&id) {
            let tool = message
                .get("params")
                .and_then(|params| params.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let reason = format!(
                "{MODERN} retry refused: the request id {id} is already in use by {user}, so its answer could not be told apart from that one's"
            );
            return self.refuse_retry(&id_value, tool, &reason, INVALID_REQUEST);
        }
        let params = message.get("params").and_then(Value::as_object);
        let get = |key: &str| params.and_then(|params| params.get(key));
        let tool = get("name").and_then(Value::as_str).unwrap_or_default();
        let arguments = get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let sealed = get("requestState")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let now = SystemTime::now();
        let spent_at = self.spent_at();
        let opened = self.retry.retries.key.open(
            sealed,
            &session.agent,
            &request_state::call_digest(tool, &arguments),
            (
                &self.retry.retries.policy_digest,
                &self.retry.retries.door,
                &spent_at,
            ),
            now,
        );
        let opened = opened.and_then(|state| {
            let expires = SystemTime::UNIX_EPOCH + Duration::from_millis(state.expires);
            let mut handle = lock(&session.state);
            let spent = match &mut *handle {
                StateHandle::Shared(shared) => match shared.key().owner.clone() {
                    Owner::Crew(crew) => {
                        spent::consume(shared.store(), &crew, &state.nonce, expires, now)
                    }
                    _ => {
                        drop(handle);
                        return self.retry.spend_issued(&state.nonce).map(|()| state);
                    }
                },
                // Without a crew's store: only a state this process gave, once.
                StateHandle::Memory(_) => {
                    drop(handle);
                    return self.retry.spend_issued(&state.nonce).map(|()| state);
                }
            };
            drop(handle);
            match spent {
                Ok(()) => Ok(state),
                Err(spent::SpentError::AlreadySpent) => Err(StateRefused::Replayed),
                Err(err) => Err(StateRefused::Store(err.to_string())),
            }
        });
        let state = match opened {
            Ok(state) => state,
            Err(refused) => {
                let reason = format!("{MODERN} retry refused: {refused}");
                return self.refuse_retry(&id_value, tool, &reason, INVALID_PARAMS);
            }
        };
        // The person's answer: the client's result for sc-mcp's input request.
        let answer = get("inputResponses")
            .and_then(|responses| responses.get(INPUT_KEY))
            .cloned();
        let mut approval = match answer {
            Some(result) => {
                let mut response = Map::new();
                response.insert("result".to_owned(), result);
                elicitation::approval_for_answer(&response, &state.scopes)
            }
            None => elicitation::declined(
                "declined: the client's retry carries no answer to sc-mcp's question",
            ),
        };
        let call = Call::from_value(&json!({
            "agent": session.agent,
            "tool": tool,
            "args": arguments,
            "source": "agent",
        }))
        .map(|mut call| {
            call.take_amount_text_from(text, &["params", "arguments", "amount"]);
            call
        });
        // A yes covers the reasons it was shown: held now for one it was not, the call is asked
        // about again (under the same id), and neither run nor granted on this yes.
        let can_ask_again = self.retry.asks_by_retry();
        let asked_again = |again: &Judgement| {
            approval.approved
                && again.decision == Decision::Hold
                && can_ask_again
                && !super::cover::not_shown(&state.reasons, &again.reasons).is_empty()
        };
        // Decided again, as the state is now: what changed while the person answered (a taint,
        // a budget spent, a window ended or a reset, a store that fails) counts, and a deny now
        // is a deny, whatever the answer.
        let again = self.decide_again(&call, &state.call_id, &asked_again);
        if let (true, Decision::Hold, Ok(call)) = (approval.approved, again.decision, &call) {
            let not_shown = super::cover::not_shown(&state.reasons, &again.reasons);
            if !not_shown.is_empty() {
                return self.ask_again(&id, &state, (call, &again), &approval, &not_shown);
            }
        }
        let mut ticket = Ticket {
            call_id: state.call_id.clone(),
            agent: session.agent.clone(),
            tool: tool.to_owned(),
            decision: again.decision,
            approval: None,
            held_for: match (&state.grantable, call) {
                (Some(grantable), Ok(call)) => Some(Arc::new((call, grantable.clone()))),
                _ => None,
            },
            held_call: None,
            notify_failed: None,
        };
        if let (Some(held), false) = (&ticket.held_for, again.decision == Decision::Deny) {
            let (call, grantable) = &**held;
            session
                .grants
                .keep(&mut approval, call, grantable, &ticket.call_id);
        }
        self.audit_retry_approval(&ticket, &approval, &again, None)?;
        if again.decision == Decision::Deny {
            return session.refuse_call(&id_value, &ticket, &again.reasons, None);
        }
        if !approval.approved {
            return session.refuse_call(&id_value, &ticket, &state.reasons, Some(&approval));
        }
        ticket.approval = Some(approval);
        // Forwarded as it first came: without the retry's own members.
        let mut forwarded = message.clone();
        if let Some(Value::Object(params)) = forwarded.get_mut("params") {
            params.shift_remove("requestState");
            params.shift_remove("inputResponses");
        }
        let bytes = serde_json::to_vec(&forwarded).expect("a JSON object serializes");
        session.forward_request(
            &bytes,
            PendingRequest {
                id,
                awaiting: Awaiting::ToolCall(ticket),
            },
        )
    }

    /// Refuses a retry: audited as a denied call, answered with a JSON-RPC error.
    fn refuse_retry(&mut self, id: &Value, tool: &str, reason: &str, code: i64) -> Result<()> {
        let session = self.session;
        let call_id = self.ids.mint();
        let event = audit::event(Stage::Gate, &call_id)
            .field("agent", &session.agent)
            .field("tool", tool)
            .field("decision", &Decision::Deny)
            .field("reasons", &[reason])
            .field("protocolRevision", MODERN)
            .finish();
        session.audit(&event)?;
        session.narrate(&format!(
            "sc-mcp: DENY  {} → {}: {}",
            for_terminal(&session.agent),
            for_terminal(tool),
            for_terminal(reason)
        ));
        session.to_client(&error_response(id, code, &format!("sc-mcp: {reason}")));
        Ok(())
    }

    /// Whether a state is spent in this process (no crew's store) rather than in the store.
    fn spends_in_memory(&self) -> bool {
        self.session.place.crew.is_none()
    }

    /// Where this sc-mcp spends the states it takes, as a state names it: the crew's store and
    /// crew, else this process's memory. A state is sealed with it and taken only where it is
    /// the same, so that the states of one crew (or one sc-mcp's memory) are not spent again in
    /// another, whose spent tokens are not the same. A store of this process's memory (`--listen`
    /// without `--crew`) is named by this process's nonce, not by its description, which every
    /// process shares: another listener, or this one started again, has not seen what this one
    /// spent.
    fn spent_at(&self) -> String {
        let place = &self.session.place;
        match (&place.store, &place.crew) {
            (Some(_), Some(crew)) if place.in_this_process_only => {
                request_state::spent_in_process(&self.retry.retries.instance, crew)
            }
            (Some(store), Some(crew)) => request_state::spent_in_crew(store, crew),
            _ => request_state::spent_in_memory(&self.retry.retries.instance),
        }
    }

    /// The one decision ([`crate::stage::door::decide_again_on`]) made again for a retried
    /// call, on the state as it is now (with the results of untrusted-output tools taken in
    /// first, as for any call). `held_id`: the held call's id, as its sealed state names it;
    /// `asked_again`: whether the retry, so judged, is put to the person again.
    fn decide_again(
        &mut self,
        call: &Result<Call, crate::call::Malformed>,
        held_id: &str,
        asked_again: &dyn Fn(&Judgement) -> bool,
    ) -> Judgement {
        let session = self.session;
        let call = match call {
            Ok(call) => call,
            Err(malformed) => return Judgement::malformed(malformed),
        };
        let mut state = lock(&session.state);
        session.take_results_into(&mut state);
        crate::stage::door::decide_again_on(
            &mut state,
            call,
            held_id,
            &session.policy,
            &session.timing,
            &session.grants.local(),
            asked_again,
        )
    }

    /// The `approve` event of a retry's answer: as every door's, with the protocol revision,
    /// the call's decision made again (`decidedAgain`) and, when the yes did not cover it, the
    /// reasons it was given to and those it was not (`notCovered`, [`super::cover`]).
    pub(super) fn audit_retry_approval(
        &self,
        ticket: &Ticket,
        approval: &Approval,
        again: &Judgement,
        not_covered: Option<NotCovered<'_>>,
    ) -> Result<()> {
        let mut event = audit::event(Stage::Approve, &ticket.call_id)
            .field("agent", &ticket.agent)
            .field("tool", &ticket.tool)
            .field("approval", approval)
            .field("protocolRevision", MODERN)
            .field(
                "decidedAgain",
                &json!({"decision": again.decision, "reasons": again.reasons}),
            );
        if let Some(not_covered) = &not_covered {
            event = event.field(
                "notCovered",
                &json!({"shown": not_covered.shown, "notShown": not_covered.not_shown}),
            );
        }
        self.session.audit(&event.finish())?;
        let asked_again = match &not_covered {
            Some(not_covered) => format!(
                "; the yes was for fewer reasons (not shown: {}), so the person is asked again",
                for_terminal(&not_covered.not_shown.join("; "))
            ),
            None => String::new(),
        };
        self.session.narrate(&format!(
            "sc-mcp: {} → {}: {}; decided again: {} ({}){asked_again}",
            for_terminal(&ticket.agent),
            for_terminal(&ticket.tool),
            for_terminal(&approval.reason),
            again.decision.as_str(),
            for_terminal(&again.reasons.join("; "))
        ));
        Ok(())
    }
}
