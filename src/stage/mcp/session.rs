//! The session shared by the two threads: the audit log, both ends' pipes, what is pending, and
//! what the session does with them (audit, answer, forward, settle, stop).

use std::io::{self, PipeWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{anyhow, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

use super::cover::not_shown;
use super::pending::{Asked, Awaiting, HeldCall, Pending, PendingRequest, Ticket};
use super::protocol::{error_response, refusal_response, RequestId, INTERNAL_ERROR};
use crate::approve::elicitation;
use crate::approve::remember::Grants;
use crate::audit::{self, AuditLog, Stage};
use crate::record::{Approval, Outcome, Status};
use crate::rules::policy::Policy;
use crate::rules::provenance::ResultRecord;
use crate::sanitize::for_terminal;
use crate::store::{StateHandle, Timing};
use crate::verdict::{Decision, Judgement};

/// How the session ended, beyond the server's own status.
#[derive(Debug, Default)]
pub(super) struct Ending {
    /// The first error that stopped the session (the audit log could not be written).
    pub(super) fatal: Option<anyhow::Error>,
    /// The client's output went away.
    pub(super) client_gone: bool,
    /// Requests answered with an error because the server ended first.
    pub(super) failed_requests: usize,
}

pub(super) struct Session {
    pub(super) policy: Policy,
    pub(super) agent: String,
    pub(super) quiet: bool,
    pub(super) audit: Mutex<AuditLog>,
    pub(super) client: Mutex<Box<dyn Write + Send>>,
    /// The server's input, written by the calling thread and by the thread that settles the
    /// page's answers; `None` once it cannot be written (or is closed at the end).
    pub(super) server: Mutex<Option<Box<dyn Write + Send>>>,
    pub(super) pending: Mutex<Pending>,
    /// Signalled when a call is held or the session ends, for the thread that declines what
    /// nobody answered in time.
    pub(super) holds_changed: Condvar,
    /// `--timeout`: how long a held call waits for the person.
    pub(super) hold_timeout: Option<Duration>,
    pub(super) ending: Mutex<Ending>,
    /// Written to when the server's side has ended, to wake the client reader.
    pub(super) wake: Mutex<Option<PipeWriter>>,
    /// The server's process; `None` when no server was started (see `no_server`).
    pub(super) server_pid: Option<Pid>,
    /// Why no server was started (`--sandbox` where the sandbox cannot be made): sc-mcp then
    /// answers the client itself, with no tools, and holds every `tools/call` with this reason.
    pub(super) no_server: Option<String>,
    pub(super) killed_by_us: AtomicBool,
    /// What untrusted-output tools answered, queued by the server's reader before the answer
    /// leaves for the client, and taken into the state before the next call is decided (value
    /// provenance).
    pub(super) taken: Mutex<Vec<ResultRecord>>,
    /// Where the person's `call` and `value` answers are kept.
    pub(super) grants: Grants,
    /// The server's `initialize` result and the requests of a 2026-07-28 client awaiting answers.
    pub(super) revisions: super::revision::Revisions,
    /// The crew's state (in memory, or a handle on the crew's store): every call is decided on
    /// it by the calling thread, and a yes is decided again on it by whichever thread settles
    /// the answer (the page's, the inbox's). Never locked while `pending` is.
    pub(super) state: Mutex<StateHandle>,
    /// Where the state is kept, read once from it: so that an audit event or a retry's check
    /// that names it does not wait on the state's lock, which a thread deciding again on a busy
    /// store holds for as long as the store keeps it waiting.
    pub(super) place: StatePlace,
    pub(super) timing: Timing,
}

/// Where the crew's state is kept ([`Session::place`]).
#[derive(Debug, Clone, Default)]
pub(super) struct StatePlace {
    /// The store, as sc-mcp shows it, when the state is in one (`stateStore` in events).
    pub(super) store: Option<String>,
    /// The crew, when the state is a crew's in a store.
    pub(super) crew: Option<String>,
    /// Whether the store is this process's memory alone (`--listen` without `--crew`).
    pub(super) in_this_process_only: bool,
}

impl StatePlace {
    pub(super) fn of(state: &StateHandle) -> StatePlace {
        match state {
            StateHandle::Memory(_) => StatePlace::default(),
            StateHandle::Shared(shared) => StatePlace {
                store: Some(shared.describe_store().to_owned()),
                crew: match &shared.key().owner {
                    crate::store::Owner::Crew(crew) => Some(crew.clone()),
                    crate::store::Owner::Session(_) => None,
                },
                in_this_process_only: shared.store_in_this_process_only(),
            },
        }
    }
}

/// A yes to a held call, decided again on the state as it is when the answer comes
/// ([`Session::decide_again`]).
#[derive(Debug)]
pub(super) struct Again {
    pub(super) judgement: Judgement,
    /// The reasons the person was shown.
    pub(super) shown: Vec<String>,
    /// The reasons the call is held for now that the person was not shown.
    pub(super) not_shown: Vec<String>,
}

impl Again {
    /// Whether the yes runs the call: not denied now, and held (if held) for no reason the
    /// person was not shown.
    pub(super) fn runs(&self) -> bool {
        self.judgement.decision != Decision::Deny && self.not_shown.is_empty()
    }

    /// Why the yes does not run the call, in the person's words, when it does not.
    pub(super) fn not_run(&self) -> String {
        if self.judgement.decision == Decision::Deny {
            format!(
                "decided again as it was to run, it is denied: {}",
                self.judgement.reasons.join("; ")
            )
        } else {
            format!(
                "decided again as it was to run, it is held for what the card did not show: {}",
                self.not_shown.join("; ")
            )
        }
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere ends the process (see the binaries), so a poisoned lock's data is as good
    // as any.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Session {
    pub(super) fn narrate(&self, text: &str) {
        if !self.quiet {
            let _ = writeln!(io::stderr().lock(), "{text}");
        }
    }

    pub(super) fn warn(&self, text: &str) {
        let _ = writeln!(io::stderr().lock(), "sc-mcp: {text}");
    }

    /// Appends one event; a failure stops the session.
    pub(super) fn audit(&self, event: &[u8]) -> Result<()> {
        let result = lock(&self.audit).append(event);
        if let Err(err) = &result {
            self.stop(anyhow!("{err:#}"));
        }
        result
    }

    /// Writes one message to the client. A client that went away ends the session quietly.
    pub(super) fn to_client(&self, message: &[u8]) {
        // An answer to a 2026-07-28 client's request gains what that revision's results carry.
        let modern = super::revision::for_modern_client(&self.revisions, message);
        let message = modern.as_deref().unwrap_or(message);
        let mut client = lock(&self.client);
        let written = client.write_all(message).and_then(|()| client.flush());
        drop(client);
        if written.is_err() {
            lock(&self.ending).client_gone = true;
            self.terminate_server();
        }
    }

    /// Stops the session for good: records the first fatal error and ends the server.
    pub(super) fn stop(&self, err: anyhow::Error) {
        let mut ending = lock(&self.ending);
        if ending.fatal.is_none() {
            ending.fatal = Some(err);
        }
        drop(ending);
        self.terminate_server();
    }

    pub(super) fn is_stopping(&self) -> bool {
        let ending = lock(&self.ending);
        ending.fatal.is_some() || ending.client_gone
    }

    pub(super) fn terminate_server(&self) {
        let Some(pid) = self.server_pid else {
            return;
        };
        self.killed_by_us.store(true, Ordering::SeqCst);
        // The server is reaped only after its output ended and this thread's kin are done, so
        // the pid still names it.
        let _ = kill(pid, Signal::SIGTERM);
    }

    /// Audits a tool call's `exec` event.
    pub(super) fn audit_outcome(&self, ticket: &Ticket, outcome: &Outcome) -> Result<()> {
        let event = audit::event(Stage::Exec, &ticket.call_id)
            .field("agent", &ticket.agent)
            .field("tool", &ticket.tool)
            .field("decision", &ticket.decision)
            .field("outcome", outcome)
            .finish();
        self.audit(&event)?;
        self.narrate(&format!(
            "sc-mcp: {} → {}: {}: {}",
            for_terminal(&ticket.agent),
            for_terminal(&ticket.tool),
            outcome.status.as_str(),
            for_terminal(&outcome.reason)
        ));
        Ok(())
    }

    /// Answers a request the server will never answer: a JSON-RPC error, and for a tool call an
    /// `exec` event saying it failed.
    pub(super) fn fail_request(&self, request: PendingRequest, why: &str) {
        if let Awaiting::ToolCall(ticket) = &request.awaiting {
            let outcome = Outcome {
                status: Status::Failed,
                result: None,
                reason: why.to_owned(),
            };
            if self.audit_outcome(ticket, &outcome).is_err() {
                // Already stopping; the client still learns the call did not complete.
            }
        }
        self.to_client(&error_response(
            &request.id.value,
            INTERNAL_ERROR,
            &format!("sc-mcp: {why} ({})", request.awaiting.method()),
        ));
    }

    /// Forwards a request to the server and awaits its answer, unless the server is gone.
    pub(super) fn forward_request(&self, bytes: &[u8], request: PendingRequest) -> Result<()> {
        self.forward_request_reporting(bytes, request).map(|_| ())
    }

    /// [`Session::forward_request`], saying why the request was not sent (`Some`), if it was
    /// not. A call settled on the person's answer ([`Pending::take_held_to_settle`]) that the
    /// client cancelled meanwhile is not sent, and gets no answer (the client awaits none).
    pub(super) fn forward_request_reporting(
        &self,
        bytes: &[u8],
        request: PendingRequest,
    ) -> Result<Option<String>> {
        let key = request.id.key.clone();
        // Held while the line is written, so requests reach the server in the order they were
        // awaited; the pending requests are locked only inside it, never the other way round.
        let mut server = lock(&self.server);
        let mut pending = lock(&self.pending);
        // Ended under the same lock as the request is awaited, so that the id is in use
        // throughout, and a cancellation finds the call either settling or awaited.
        if pending.end_settling(&key) {
            drop(pending);
            drop(server);
            let why = "the client cancelled the call while the person's answer was acted on";
            if let Awaiting::ToolCall(ticket) = &request.awaiting {
                self.audit_skipped(ticket, format!("not run: {why}"))?;
            }
            return Ok(Some(why.to_owned()));
        }
        if !pending.server_reading || server.is_none() || pending.requests.contains_key(&key) {
            let why = if pending.requests.contains_key(&key) {
                "another request with this id is waiting for the MCP server's answer, so the request was not sent"
            } else {
                "the MCP server has exited, so the request was not sent"
            };
            drop(pending);
            drop(server);
            self.fail_request(request, why);
            return Ok(Some(why.to_owned()));
        }
        pending.requests.insert(key.clone(), request);
        drop(pending);
        // A 2026-07-28 server reads the protocol keys on every request.
        let enveloped = if self.revisions.server_is_modern() {
            super::revision::with_envelope(bytes)
        } else {
            None
        };
        let bytes = enveloped.as_deref().unwrap_or(bytes);
        if let Err(err) = write_line(&mut server, bytes) {
            *server = None;
            drop(server);
            let why = format!("the request could not be sent to the MCP server: {err}");
            if let Some(request) = lock(&self.pending).requests.remove(&key) {
                self.fail_request(request, &why);
            }
            return Ok(Some(why));
        }
        Ok(None)
    }

    /// Forwards a message that awaits no answer. A 2026-07-28 server, which has no handshake, is
    /// not given a legacy client's `notifications/initialized`.
    pub(super) fn forward(&self, bytes: &[u8]) {
        if self.revisions.server_is_modern()
            && serde_json::from_slice::<Value>(bytes).is_ok_and(|message| {
                message.get("method") == Some(&Value::from("notifications/initialized"))
            })
        {
            return;
        }
        let mut server = lock(&self.server);
        if let Err(err) = write_line(&mut server, bytes) {
            if server.take().is_some() {
                drop(server);
                self.warn(&format!("cannot write to the MCP server: {err}"));
            }
        }
    }

    /// Acts on the person's answer to a held call asked on a legacy surface (the terminal, the
    /// answers file, elicitation, the inbox): a yes is decided again ([`Session::decide_again`])
    /// and kept as a grant only if it still runs the call; then [`Session::settle_decided`].
    pub(super) fn settle(
        &self,
        id: RequestId,
        bytes: &[u8],
        ticket: Ticket,
        reasons: &[String],
        mut approval: Approval,
    ) -> Result<()> {
        let again = self.decide_again(&ticket, reasons, &approval);
        if again.as_ref().is_none_or(Again::runs) {
            self.keep(&ticket, &mut approval);
        }
        self.settle_decided(id, bytes, ticket, reasons, approval, again)
            .map(|_| ())
    }

    /// Keeps the approval's scope as a grant where it can ([`crate::approve::remember`]).
    pub(super) fn keep(&self, ticket: &Ticket, approval: &mut Approval) {
        if let Some(held) = &ticket.held_for {
            let (call, grantable) = &**held;
            self.grants.keep(approval, call, grantable, &ticket.call_id);
        }
    }

    /// Decides again a held call the person said yes to, on the state as it is now, by the one
    /// decision ([`crate::stage::door::decide_again_on`], with the results of untrusted-output
    /// tools taken in first, as for any call): a taint, a budget spent, a window ended or a
    /// reset, a store that fails while the person answered counts, as on a 2026-07-28 retry
    /// ([`super::mrtr`]). `None` for a no (nothing runs, so nothing is decided), and for a call
    /// sc-mcp did not decide itself (none is held for a person then). A held call whose call is
    /// not known is denied: a yes to it is not run undecided.
    pub(super) fn decide_again(
        &self,
        ticket: &Ticket,
        reasons: &[String],
        approval: &Approval,
    ) -> Option<Again> {
        if !approval.approved || ticket.decision != Decision::Hold {
            return None;
        }
        let Some(call) = &ticket.held_call else {
            return Some(Again {
                judgement: Judgement {
                    granting: Default::default(),
                    decision: Decision::Deny,
                    reasons: vec![
                        "the held call cannot be decided again: sc-mcp did not keep it".to_owned(),
                    ],
                },
                shown: reasons.to_vec(),
                not_shown: Vec::new(),
            });
        };
        let mut state = lock(&self.state);
        self.take_results_into(&mut state);
        let judgement = crate::stage::door::decide_again_on(
            &mut state,
            call,
            &ticket.call_id,
            &self.policy,
            &self.timing,
            &self.grants.local(),
            &|_| false,
        );
        drop(state);
        let not_shown = match judgement.decision {
            Decision::Hold => not_shown(reasons, &judgement.reasons)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        Some(Again {
            judgement,
            shown: reasons.to_vec(),
            not_shown,
        })
    }

    /// Takes the results of untrusted-output tools the server gave since the last call into
    /// `state` (value provenance), before a call is decided.
    pub(super) fn take_results_into(&self, state: &mut StateHandle) {
        let mut taken = std::mem::take(&mut *lock(&self.taken));
        crate::stage::exec::take_results_into(state, &mut taken, &self.policy, &self.timing);
    }

    /// Settles a held call on the person's answer (`approval`, kept already, [`Session::keep`])
    /// and, for a yes, the call decided again (`again`, [`Session::decide_again`]): a no is
    /// refused; a yes to a call denied now is refused as denied, and one held now for a reason
    /// the person was not shown is declined (the yes was given to fewer reasons; the legacy ways
    /// of asking cannot ask again under the same request); any other yes forwards the call to
    /// the server as it came. The `approve` event records the answer, the new decision
    /// (`decidedAgain`) and, when the yes did not cover the call, `notCovered`. Returns why the
    /// call is not run, if it is not (`None`: it was sent to the server). The call's id, in use
    /// while it was settled ([`Pending::take_held_to_settle`]), is free again once it returns.
    pub(super) fn settle_decided(
        &self,
        id: RequestId,
        bytes: &[u8],
        ticket: Ticket,
        reasons: &[String],
        approval: Approval,
        again: Option<Again>,
    ) -> Result<Option<String>> {
        let key = id.key.clone();
        let settled = self.settle_decided_reserved(id, bytes, ticket, reasons, approval, again);
        lock(&self.pending).end_settling(&key);
        settled
    }

    fn settle_decided_reserved(
        &self,
        id: RequestId,
        bytes: &[u8],
        mut ticket: Ticket,
        reasons: &[String],
        approval: Approval,
        again: Option<Again>,
    ) -> Result<Option<String>> {
        if !approval.approved {
            self.decline_held(&id, &ticket, reasons, &approval, true)?;
            return Ok(Some(approval.reason));
        }
        if let Err(err) = self.audit_approval(&ticket, &approval, again.as_ref()) {
            self.answer_audit_failure(&id.value);
            return Err(err);
        }
        if let Some(again) = &again {
            ticket.decision = again.judgement.decision;
            // A call the client cancelled meanwhile gets no answer (it awaits none); a yes to
            // it is not sent ([`Session::forward_request_reporting`]).
            if !again.runs() && lock(&self.pending).cancelled_while_settling(&id.key) {
                let why = again.not_run();
                self.audit_skipped(
                    &ticket,
                    format!("not run: {why}; and the client cancelled the call"),
                )?;
                return Ok(Some(why));
            }
            if again.judgement.decision == Decision::Deny {
                self.refuse_call(&id.value, &ticket, &again.judgement.reasons, None)?;
                return Ok(Some(again.not_run()));
            }
            if !again.not_shown.is_empty() {
                let declined = elicitation::declined(format!(
                    "declined: the yes was given to fewer reasons than the call is held for now (not shown: {})",
                    again.not_shown.join("; ")
                ));
                self.refuse_call(
                    &id.value,
                    &ticket,
                    &again.judgement.reasons,
                    Some(&declined),
                )?;
                return Ok(Some(again.not_run()));
            }
        }
        ticket.approval = Some(approval);
        if self.is_stopping() {
            let why = "sc-mcp is stopping";
            // Its outcome too, while the log can still be written (a stop for a log that
            // cannot be is the one that fails here, and is said already).
            let _ = self.audit_skipped(&ticket, format!("not run: {why}"));
            return Ok(Some(why.to_owned()));
        }
        self.forward_request_reporting(
            bytes,
            PendingRequest {
                id,
                awaiting: Awaiting::ToolCall(ticket),
            },
        )
    }

    /// Why a new request may not use this id, if it may not.
    pub(super) fn id_in_use(&self, id: &RequestId) -> Option<&'static str> {
        if let Some(user) = lock(&self.pending).in_use(&id.key) {
            return Some(user);
        }
        // The client's `initialize` waits beside the pending requests while sc-mcp asks the
        // server `server/discover`: its id is in use too (a call that took it ran, and its
        // answer went to the client as the `initialize` answer: a review).
        match &lock(&self.revisions.state).discovering {
            Some(super::revision::Discovering::Client { request, .. })
                if request.id.key == id.key =>
            {
                Some("the client's initialize, waiting for the MCP server's server/discover")
            }
            _ => None,
        }
    }

    /// Audits the person's answer to a held call (the `approve` event, with `notifyFailed` when
    /// the `--notify` command failed, and for a yes decided again `decidedAgain` and, when the
    /// yes did not cover the call, `notCovered`) and narrates it.
    pub(super) fn audit_approval(
        &self,
        ticket: &Ticket,
        approval: &Approval,
        again: Option<&Again>,
    ) -> Result<()> {
        let mut event = audit::event(Stage::Approve, &ticket.call_id)
            .field("agent", &ticket.agent)
            .field("tool", &ticket.tool)
            .field("approval", approval);
        if let Some(failed) = &ticket.notify_failed {
            event = event.field("notifyFailed", failed);
        }
        let mut decided = String::new();
        if let Some(again) = again {
            let judgement = &again.judgement;
            event = event.field(
                "decidedAgain",
                &serde_json::json!({"decision": judgement.decision, "reasons": judgement.reasons}),
            );
            if !again.not_shown.is_empty() {
                event = event.field(
                    "notCovered",
                    &serde_json::json!({"shown": again.shown, "notShown": again.not_shown}),
                );
            }
            decided = format!(
                "; decided again: {} ({})",
                judgement.decision.as_str(),
                for_terminal(&judgement.reasons.join("; "))
            );
        }
        let event = event.finish();
        self.audit(&event)?;
        self.narrate(&format!(
            "sc-mcp: {} → {}: {}{decided}",
            for_terminal(&ticket.agent),
            for_terminal(&ticket.tool),
            for_terminal(&approval.reason)
        ));
        Ok(())
    }

    /// Settles a held call the person did not approve: audits the approval and that the call was
    /// skipped, and answers the client's `tools/call` with a refusal (`answer`), unless the client
    /// cancelled it and awaits no answer.
    pub(super) fn decline_held(
        &self,
        request: &RequestId,
        ticket: &Ticket,
        reasons: &[String],
        approval: &Approval,
        answer: bool,
    ) -> Result<()> {
        let id = &request.value;
        if let Some(call) = &ticket.held_call {
            // Settled without a decision again: the note of its counted amount is not needed.
            if call.args.amount().is_some() {
                crate::stage::door::forget_held_on(
                    &mut lock(&self.state),
                    &ticket.call_id,
                    &self.policy,
                    &self.timing,
                );
            }
        }
        // A call the client cancelled while this was being settled awaits no answer.
        let answer = answer && !lock(&self.pending).cancelled_while_settling(&request.key);
        if let Err(err) = self.audit_approval(ticket, approval, None) {
            if answer {
                self.answer_audit_failure(id);
            }
            return Err(err);
        }
        if answer {
            return self.refuse_call(id, ticket, reasons, Some(approval));
        }
        self.audit_skipped(
            ticket,
            format!(
                "not run: held ({}) and {}",
                reasons.join("; "),
                approval.reason
            ),
        )
    }

    /// Audits a tool call's `exec` event for a call that was not run, and why.
    fn audit_skipped(&self, ticket: &Ticket, reason: String) -> Result<()> {
        self.audit_outcome(
            ticket,
            &Outcome {
                status: Status::Skipped,
                result: None,
                reason,
            },
        )
    }

    /// Declines a held call nobody answered in time (taken with its id kept in use,
    /// [`Pending::take_overdue`]), and tells the client to close the question.
    pub(super) fn expire(&self, call: HeldCall) {
        let call = call.noticed();
        let after = self.hold_timeout.unwrap_or_default().as_secs();
        let reason = format!("declined: no answer within {after} seconds");
        if let Asked::Client(question) = &call.asked {
            self.to_client(&elicitation::cancellation(question, &reason));
        }
        // An audit failure has stopped the session already.
        let _ = self.decline_held(
            &call.id,
            &call.ticket,
            &call.reasons,
            &call.asked.declined(reason),
            true,
        );
        lock(&self.pending).end_settling(&call.id.key);
    }

    /// Answers a denied or declined call itself: it never reaches the server.
    pub(super) fn refuse_call(
        &self,
        id: &Value,
        ticket: &Ticket,
        reasons: &[String],
        approval: Option<&Approval>,
    ) -> Result<()> {
        let reasons = reasons.join("; ");
        let (reason, text) = match approval {
            None => (
                format!("not run: denied ({reasons})"),
                format!(
                    "Skeleton Crew denied this call to {}: {reasons}",
                    ticket.tool
                ),
            ),
            Some(approval) if self.no_server.is_some() => (
                format!("not run: held ({reasons}) and {}", approval.reason),
                format!(
                    "held: {reasons}; this call to {} was {}",
                    ticket.tool, approval.reason
                ),
            ),
            Some(approval) => (
                format!("not run: held ({reasons}) and {}", approval.reason),
                format!(
                    "Skeleton Crew held this call to {} for a person ({reasons}), and it was {}",
                    ticket.tool, approval.reason
                ),
            ),
        };
        if let Err(err) = self.audit_skipped(ticket, reason) {
            self.answer_audit_failure(id);
            return Err(err);
        }
        self.to_client(&refusal_response(id, &text));
        Ok(())
    }

    pub(super) fn answer_audit_failure(&self, id: &Value) {
        self.to_client(&error_response(
            id,
            INTERNAL_ERROR,
            "sc-mcp: the audit log cannot be written, so the call was not run; sc-mcp is stopping",
        ));
    }
}

fn write_line(server: &mut Option<Box<dyn Write + Send>>, bytes: &[u8]) -> io::Result<()> {
    let stdin = server
        .as_mut()
        .ok_or_else(|| io::Error::from(io::ErrorKind::BrokenPipe))?;
    stdin.write_all(bytes)?;
    stdin.write_all(b"\n")?;
    stdin.flush()
}
