//! The client's side (the calling thread): each message from the MCP client is read, decided
//! when it is a tool call, put to the person when held, and forwarded or answered.

use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{json, Map, Value};

use super::holds::{Page, PageEvent};
use super::inbox::{ask_in_the_inbox, InboxLink, ToAsk};
use super::pending::{Asked, Awaiting, HeldCall, HoldKey, PendingRequest, Ticket};
use super::protocol::{
    classify_client_message, error_response, result_response, ClientMessage, RequestId,
    INVALID_REQUEST, METHOD_NOT_FOUND, PROTOCOL_VERSION,
};
use super::session::{lock, Session};
use super::verdict::Verdict;
use super::{Asking, MAX_HELD_CALLS};
use crate::approve::elicitation::{self, Questions};
use crate::approve::notify::{Notice, Notifier};
use crate::approve::{approval_for, render_prompt, Hold, Human};
use crate::audit::{self, IdMinter, Stage};
use crate::call::Call;
use crate::jsonl;
use crate::record::{AnsweredBy, Approval, Outcome, Scope, Status};
use crate::sanitize::for_terminal;
use crate::verdict::{Decision, Granting, Judgement};
use std::sync::Arc;

pub(super) struct ClientSide<'a> {
    pub(super) session: &'a Session,
    pub(super) human: &'a mut dyn Human,
    pub(super) timeout: Option<Duration>,
    pub(super) asking: Asking,
    /// Whether the client's `initialize` declared elicitation in form mode.
    pub(super) client_elicits: bool,
    pub(super) questions: Questions,
    /// The web page, with `--web`.
    pub(super) page: Option<Page>,
    /// The crew's inbox, with `--inbox`.
    pub(super) inbox: Option<InboxLink>,
    pub(super) ids: IdMinter,
    /// `--notify CMD`: run whenever a held call is put to the person.
    pub(super) notifier: Option<Notifier>,
    /// A hold put to a 2026-07-28 client as its retry, and the retries taken.
    pub(super) retry: super::request_state::RetrySide,
}

/// A way of putting a held call to the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Surface {
    /// The human given to [`run`](crate::stage::mcp::run): the answers file, nobody (`--no-prompt`), or
    /// the terminal (which declines when there is none).
    Human,
    /// The person, through the client (`elicitation/create`).
    Elicitation,
    /// The person, on the web page (`--web`).
    Page,
    /// The person, in the crew's inbox (`--inbox`).
    Inbox,
}

impl ClientSide<'_> {
    /// Which way a held call is put to the person: the first that applies.
    fn surface(&self) -> Surface {
        if self.inbox.is_some() {
            return Surface::Inbox;
        }
        match self.asking {
            // 1. `--answers`; `--no-prompt` asks nobody and declines everything.
            Asking::OnlyTheHuman => Surface::Human,
            // 2. Elicitation, when the client declared it (unless `--no-elicitation`).
            Asking::Wherever {
                elicitation: true, ..
            } if self.client_elicits => Surface::Elicitation,
            // 3. The web page, with `--web`.
            Asking::Wherever { .. } if self.page.is_some() => Surface::Page,
            // 4. /dev/tty; 5. declined when there is no terminal to ask.
            Asking::Wherever { .. } => Surface::Human,
        }
    }

    pub(super) fn handle(&mut self, bytes: &[u8]) -> Result<()> {
        self.retry.current = None;
        if let Some(modern) = super::revision::read_modern(bytes) {
            return self.handle_modern(bytes, modern);
        }
        self.handle_classified(bytes)
    }

    pub(super) fn handle_classified(&mut self, bytes: &[u8]) -> Result<()> {
        self.handle_as(bytes, bytes)
    }

    /// Handles the message `read` (decided and checked as it came), giving the server `bytes` (the
    /// same message, for a 2026-07-28 client without the per-request protocol keys).
    pub(super) fn handle_as(&mut self, read: &[u8], bytes: &[u8]) -> Result<()> {
        match classify_client_message(read) {
            ClientMessage::Refused {
                ids,
                batch,
                code,
                reason,
            } => self.refuse(read, &ids, batch, code, &reason),
            ClientMessage::ToolCall {
                id,
                name,
                arguments,
                text,
            } => self.tool_call(bytes, id, name, arguments, text),
            ClientMessage::Request { id, method } => {
                if let Some(user) = self.session.id_in_use(&id) {
                    self.session.to_client(&error_response(
                        &id.value,
                        INVALID_REQUEST,
                        &format!("sc-mcp: the request id {id} is already in use by {user}"),
                    ));
                    return Ok(());
                }
                if let Some(why) = &self.session.no_server {
                    self.answer_without_server(read, &id, &method, why);
                    return Ok(());
                }
                if method == "ping" && self.session.revisions.server_is_modern() {
                    // 2026-07-28 has no `ping`: sc-mcp answers a legacy client's for the server.
                    self.session
                        .to_client(&result_response(&id.value, &json!({})));
                    return Ok(());
                }
                if method == "initialize" {
                    self.read_capabilities(read);
                }
                let awaiting = if method == "tools/list" {
                    Awaiting::ToolsList
                } else {
                    Awaiting::Other(method)
                };
                let request = PendingRequest { id, awaiting };
                if request.awaiting.method() == "initialize" {
                    // sc-mcp opens with the server in the newest revision it speaks.
                    return super::handshake::initialize_for_client(self.session, bytes, request);
                }
                self.session.forward_request(bytes, request)
            }
            ClientMessage::Notification { cancels } => {
                if let Some(cancelled) = cancels {
                    let held = lock(&self.session.pending).take_held_call(&cancelled);
                    if let Some(call) = held {
                        // The server never saw the call, so the cancellation stays here; the
                        // client awaits no answer to it.
                        return self.withdraw_question(call);
                    }
                    // A call whose answer is being acted on is not sent, once that is done;
                    // the server never sees it, so the cancellation stays here too.
                    if lock(&self.session.pending).cancel_settling(&cancelled) {
                        return Ok(());
                    }
                    // The client will ignore a late answer; sc-mcp drops it.
                    let request = lock(&self.session.pending).cancel(&cancelled);
                    if let Some(PendingRequest {
                        awaiting: Awaiting::ToolCall(ticket),
                        ..
                    }) = request
                    {
                        self.session.audit_outcome(
                            &ticket,
                            &Outcome {
                                status: Status::Failed,
                                result: None,
                                reason: "the client cancelled the call before the MCP server answered; it may have run in part".to_owned(),
                            },
                        )?;
                    }
                }
                self.forward(bytes);
                Ok(())
            }
            ClientMessage::Response => {
                self.forward(bytes);
                Ok(())
            }
            ClientMessage::OwnAnswer { id, answer } => {
                let held = lock(&self.session.pending).take_held(&HoldKey::Question(id.clone()));
                match held {
                    Some(call) => {
                        let call = call.noticed();
                        let approval = elicitation::approval_for_answer(&answer, &call.scopes);
                        self.settle(call.id, &call.bytes, call.ticket, &call.reasons, approval)
                    }
                    None => {
                        self.session.warn(&format!(
                            "dropped the client's answer to {}, a question sc-mcp is not waiting on (it was answered, timed out or never asked)",
                            for_terminal(&Value::String(id).to_string())
                        ));
                        Ok(())
                    }
                }
            }
        }
    }

    /// Answers a request itself when no server was started (`--sandbox` where the sandbox cannot
    /// be made): `initialize` with sc-mcp's own server info and instructions saying why no tools
    /// are there, `tools/list` with no tools, `ping`; any other method is not found.
    fn answer_without_server(&self, bytes: &[u8], id: &RequestId, method: &str, why: &str) {
        let result = match method {
            "initialize" => {
                // Read strictly already: the message was classified.
                let message = serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null);
                let version = message
                    .get("params")
                    .and_then(|params| params.get("protocolVersion"))
                    .filter(|version| version.is_string())
                    .cloned()
                    .unwrap_or_else(|| json!(PROTOCOL_VERSION));
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "sc-mcp", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": format!(
                        "No tools are available, and every tool call is held and not run: sc-mcp did not start the MCP server ({why})."
                    ),
                })
            }
            "tools/list" => json!({"tools": []}),
            "ping" => json!({}),
            _ => {
                self.session.to_client(&error_response(
                    &id.value,
                    METHOD_NOT_FOUND,
                    &format!(
                        "sc-mcp: there is no MCP server to answer {}: {why}",
                        Value::String(method.to_owned())
                    ),
                ));
                return;
            }
        };
        self.session.to_client(&result_response(&id.value, &result));
    }

    /// Notes whether the client's `initialize` declared elicitation in form mode, and the
    /// revision it asked for.
    fn read_capabilities(&mut self, bytes: &[u8]) {
        // Read strictly already: the message was classified.
        let message = serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null);
        self.client_elicits = elicitation::declares_form_elicitation(message.get("params"));
        // For a 2026-07-28 server, which has no `initialize`, the answer sc-mcp makes names it.
        lock(&self.session.revisions.state).client_version = message
            .get("params")
            .and_then(|params| params.get("protocolVersion"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        if self.surface() == Surface::Elicitation {
            self.session.narrate(
                "sc-mcp: the client can ask the person (elicitation): held calls are put to the person through it",
            );
        }
    }

    /// The client cancelled a call that waits for the person: the question (or the card) is
    /// withdrawn and the call declined, unanswered.
    fn withdraw_question(&mut self, call: HeldCall) -> Result<()> {
        let call = call.noticed();
        let reason = "declined: the client cancelled the call before the person answered";
        self.withdraw(&call.asked, reason);
        self.session.decline_held(
            &call.id,
            &call.ticket,
            &call.reasons,
            &call.asked.declined(reason),
            false,
        )
    }

    /// Takes a question back from where it was put: tells the client to close it, or ends the
    /// card on the page.
    pub(super) fn withdraw(&self, asked: &Asked, reason: &str) {
        match asked {
            Asked::Client(question) => self
                .session
                .to_client(&elicitation::cancellation(question, reason)),
            Asked::Page(card) => {
                if let Some(page) = &self.page {
                    page.web.withdraw(*card, reason);
                }
            }
            Asked::Inbox(key) => {
                if let Some(inbox) = &self.inbox {
                    inbox.withdraw(key, reason);
                }
            }
        }
    }

    /// Forwards a message that awaits no answer.
    fn forward(&mut self, bytes: &[u8]) {
        self.session.forward(bytes);
    }

    /// Audits a refused message as a denied, malformed call and answers it. A malformed answer
    /// to one of sc-mcp's questions declines the call it is about.
    pub(super) fn refuse(
        &mut self,
        bytes: &[u8],
        ids: &[Value],
        batch: bool,
        code: i64,
        reason: &str,
    ) -> Result<()> {
        let judgement = Judgement {
            granting: Default::default(),
            decision: Decision::Deny,
            reasons: vec![format!("malformed message: {reason}")],
        };
        let call_id = self.ids.mint();
        let event = audit::event(Stage::Gate, &call_id)
            .field("decision", &judgement.decision)
            .field("reasons", &judgement.reasons)
            .field("raw", &jsonl::raw_excerpt(bytes))
            .finish();
        self.session.audit(&event)?;
        self.session.narrate(&format!(
            "sc-mcp: DENY  a message from the client (not forwarded): {}",
            for_terminal(reason)
        ));
        let (questions, ids): (Vec<&Value>, Vec<&Value>) =
            ids.iter().partition(|id| elicitation::is_own_id(id));
        for question in questions.into_iter().filter_map(Value::as_str) {
            let held =
                lock(&self.session.pending).take_held(&HoldKey::Question(question.to_owned()));
            if let Some(call) = held {
                let call = call.noticed();
                let approval = elicitation::declined(format!(
                    "declined: the MCP client's answer is malformed ({reason})"
                ));
                self.settle(call.id, &call.bytes, call.ticket, &call.reasons, approval)?;
            }
        }
        let message = format!("sc-mcp: {reason}; the message was not forwarded");
        let responses: Vec<Vec<u8>> = ids
            .iter()
            .map(|id| error_response(id, code, &message))
            .collect();
        match (batch, responses.is_empty()) {
            (_, true) => {}
            (false, false) => {
                for response in responses {
                    self.session.to_client(&response);
                }
            }
            (true, false) => {
                let mut array = b"[".to_vec();
                for (index, response) in responses.iter().enumerate() {
                    if index > 0 {
                        array.push(b',');
                    }
                    array.extend_from_slice(response.strip_suffix(b"\n").unwrap_or(response));
                }
                array.extend_from_slice(b"]\n");
                self.session.to_client(&array);
            }
        }
        Ok(())
    }

    /// Whether a call held now is put to the person through the client's retry (MCP
    /// 2026-07-28, [`super::mrtr`]): a modern client that declared elicitation, with no inbox
    /// and elicitation among the ways of asking.
    fn asks_through_retry(&self) -> bool {
        self.retry.asks_by_retry()
            && self.inbox.is_none()
            && matches!(
                self.asking,
                Asking::Wherever {
                    elicitation: true,
                    ..
                }
            )
    }

    fn tool_call(
        &mut self,
        bytes: &[u8],
        id: RequestId,
        name: String,
        arguments: Map<String, Value>,
        text: &str,
    ) -> Result<()> {
        let session = self.session;
        let call_value = json!({
            "agent": session.agent,
            "tool": name,
            "args": arguments,
            "source": "agent",
            "jsonrpcId": id.value,
        });
        let call_id = self.ids.mint();
        let parsed = Call::from_value(&call_value).map(|mut call| {
            call.take_amount_text_from(text, &["params", "arguments", "amount"]);
            call
        });
        let in_use_by = session.id_in_use(&id);
        let id_in_use = in_use_by.is_some();
        let mut agent_state = None;
        let judgement = match (&parsed, in_use_by) {
            (_, Some(user)) => Judgement {
                granting: Default::default(),
                decision: Decision::Deny,
                reasons: vec![format!(
                    "the request id {id} is already in use by {user}, so this call's answer could not be told apart from that one's"
                )],
            },
            // No server was started: the call is held with the reason, and not recorded in the
            // state (nothing runs).
            (Ok(_), None) if session.no_server.is_some() => Judgement {
                granting: Default::default(),
                decision: Decision::Hold,
                reasons: session.no_server.iter().cloned().collect(),
            },
            // Decided and recorded in one step; a state store that fails denies the call.
            (Ok(call), None) => {
                let mut state = lock(&session.state);
                session.take_results_into(&mut state);
                // A hold notes its counted amount in the same update, for the yes to be decided
                // again on ([`Session::decide_again`], or a 2026-07-28 client's retry).
                let decided = crate::stage::door::decide_on(
                    &mut state,
                    call,
                    &call_id,
                    &session.policy,
                    &session.timing,
                    true,
                    true,
                    &session.grants.local(),
                );
                drop(state);
                agent_state = decided.agent;
                decided.judgement
            }
            (Err(malformed), None) => Judgement::malformed(malformed),
        };
        let verdict = Verdict::new(&call_id, &call_value, &judgement, agent_state.as_ref());
        let mut event = audit::event(Stage::Gate, &call_id).raw_members(verdict.members());
        if let Some(store) = &session.place.store {
            event = event.field("stateStore", store);
            if let Some(crew) = &session.place.crew {
                event = event.field("crew", crew);
            }
        }
        self.audit_or_answer(&id.value, &event.finish())?;
        session.narrate(&format!(
            "sc-mcp: {:<5} {} → {}: {}",
            judgement.decision.as_str().to_uppercase(),
            for_terminal(&session.agent),
            for_terminal(&name),
            for_terminal(&judgement.reasons.join("; "))
        ));
        let ticket = Ticket {
            call_id,
            agent: session.agent.clone(),
            tool: name,
            decision: judgement.decision,
            approval: None,
            held_for: match (&judgement.granting, &parsed) {
                (Granting::Offers(grantable), Ok(call)) => {
                    Some(Arc::new((call.clone(), (**grantable).clone())))
                }
                _ => None,
            },
            held_call: match (judgement.decision, &parsed) {
                (Decision::Hold, Ok(call)) => Some(Arc::new(call.clone())),
                _ => None,
            },
            notify_failed: None,
        };
        let call = match (judgement.decision, parsed) {
            (Decision::Deny, _) | (_, Err(_)) if id_in_use => {
                // A protocol error: answered as one, so the client's waiting request keeps its id.
                let outcome = Outcome {
                    status: Status::Skipped,
                    result: None,
                    reason: format!("not run: denied ({})", judgement.reasons.join("; ")),
                };
                if let Err(err) = session.audit_outcome(&ticket, &outcome) {
                    self.answer_audit_failure(&id.value);
                    return Err(err);
                }
                session.to_client(&error_response(
                    &id.value,
                    INVALID_REQUEST,
                    &format!("sc-mcp: {}", judgement.reasons.join("; ")),
                ));
                return Ok(());
            }
            (Decision::Deny, _) | (_, Err(_)) => {
                return session.refuse_call(&id.value, &ticket, &judgement.reasons, None);
            }
            (Decision::Allow, Ok(_)) => {
                return session.forward_request(
                    bytes,
                    PendingRequest {
                        id,
                        awaiting: Awaiting::ToolCall(ticket),
                    },
                );
            }
            (Decision::Hold, Ok(call)) => call,
        };
        if session.no_server.is_some() {
            // Nobody is asked: approved, it would have no server to run on.
            let approval = Approval {
                scope: None,
                grant: None,
                approved: false,
                by: AnsweredBy::None,
                answer: None,
                reason: "declined: nobody is asked, since no MCP server runs to carry it out"
                    .to_owned(),
                digest: None,
            };
            return session.decline_held(&id, &ticket, &judgement.reasons, &approval, true);
        }
        // The scopes a yes to this call may take, on every surface: `once` first, and `call`
        // or `value` where a grant may be given for it.
        let scopes = ticket.scopes().to_vec();
        let asked = Question {
            bytes,
            id,
            ticket,
            call: &call,
            reasons: judgement.reasons,
            verdict: &verdict,
            scopes,
        };
        // A 2026-07-28 client that declared elicitation is asked through its retry.
        if self.asks_through_retry() {
            return self.ask_by_retry(
                &asked.id,
                &asked.ticket,
                asked.call,
                &asked.reasons,
                &asked.scopes,
            );
        }
        match self.surface() {
            Surface::Elicitation => self.ask_through_client(asked),
            Surface::Page => self.ask_on_the_page(asked),
            Surface::Human => self.ask_the_human(asked),
            Surface::Inbox => {
                if lock(&session.pending).held.len() >= MAX_HELD_CALLS {
                    return self.decline_unasked(&asked.id, &asked.ticket, &asked.reasons);
                }
                let Some(inbox) = &self.inbox else {
                    unreachable!("a call is put in the inbox only when there is one");
                };
                // The push goes out as the hold is put in the inbox (whose page has the url).
                let notice = self.notify(&asked.hold(self.timeout), None);
                let Question {
                    bytes,
                    id,
                    ticket,
                    call,
                    reasons,
                    verdict,
                    ..
                } = asked;
                let asked = ToAsk {
                    bytes,
                    id,
                    ticket,
                    call,
                    reasons,
                    verdict,
                    timeout: self.timeout,
                    notice,
                };
                ask_in_the_inbox(session, inbox, asked)
            }
        }
    }

    /// Starts the `--notify` command for a hold as it is put to the person (`url`: the card's
    /// address), unless nobody is asked.
    fn notify(&self, hold: &Hold<'_>, url: Option<&str>) -> Option<Notice> {
        self.notifier
            .as_ref()
            .map(|notifier| notifier.notify(hold, url))
    }

    /// Asks the human given to the session (the terminal, the answers file, or nobody), while the
    /// calling thread waits.
    fn ask_the_human(&mut self, asked: Question<'_>) -> Result<()> {
        // Nobody is told of a hold nobody is asked (`--no-prompt`).
        let notice = if self.human.kind() == AnsweredBy::None {
            None
        } else {
            self.notify(&asked.hold(self.timeout), None)
        };
        let Question {
            bytes,
            id,
            mut ticket,
            call,
            reasons,
            scopes,
            ..
        } = asked;
        let prompt = render_prompt(call, &reasons, self.timeout, &scopes);
        let reply = self.human.ask(&prompt);
        let approval = approval_for(reply, self.human.kind());
        self.human.acknowledge(if approval.approved {
            "→ approved"
        } else {
            "→ declined"
        });
        ticket.notify_failed = notice
            .and_then(Notice::finish)
            .map(|failure| failure.to_string());
        self.settle(id, bytes, ticket, &reasons, approval)
    }

    /// Puts a held call to the person through the client, and keeps it until the answer, the
    /// timeout, a cancellation or the end of the session settles it.
    fn ask_through_client(&mut self, asked: Question<'_>) -> Result<()> {
        let session = self.session;
        let mut pending = lock(&session.pending);
        if pending.held.len() >= MAX_HELD_CALLS {
            drop(pending);
            return self.decline_unasked(&asked.id, &asked.ticket, &asked.reasons);
        }
        let notice = self.notify(&asked.hold(self.timeout), None);
        let Question {
            bytes,
            id,
            ticket,
            call,
            reasons,
            scopes,
            ..
        } = asked;
        let question = self.questions.mint();
        let message = elicitation::message(call, &reasons, self.timeout, &scopes);
        session.narrate(&format!(
            "sc-mcp: {} → {}: asking the person through the MCP client ({question})",
            for_terminal(&ticket.agent),
            for_terminal(&ticket.tool),
        ));
        pending.hold(HeldCall {
            asked: Asked::Client(question.clone()),
            id,
            ticket,
            reasons,
            bytes: bytes.to_vec(),
            deadline: self.timeout.map(|timeout| Instant::now() + timeout),
            scopes: scopes.clone(),
            notice,
        });
        drop(pending);
        session.holds_changed.notify_all();
        session.to_client(&elicitation::request(&question, &message, &scopes));
        Ok(())
    }

    /// Puts a held call on the web page as a card showing its verdict record, and keeps it until
    /// the person's answer there, the card's expiry, a cancellation or the end of the session
    /// settles it (the page's thread,
    /// [`settle_page_holds`](super::holds::settle_page_holds), settles the first two).
    fn ask_on_the_page(&mut self, asked: Question<'_>) -> Result<()> {
        let session = self.session;
        let Some(page) = &self.page else {
            unreachable!("a call is put on the page only when there is one");
        };
        // Locked while the card is put up, so the page's thread, woken by a quick answer, finds
        // the call waiting.
        let mut pending = lock(&session.pending);
        if pending.held.len() >= MAX_HELD_CALLS {
            drop(pending);
            return self.decline_unasked(&asked.id, &asked.ticket, &asked.reasons);
        }
        let hold = asked.hold(self.timeout);
        let card = page.web.submit_reporting(&hold);
        let notice = self.notify(&hold, Some(page.web.url()));
        let Question {
            bytes,
            id,
            ticket,
            reasons,
            scopes,
            ..
        } = asked;
        session.narrate(&format!(
            "sc-mcp: {} → {}: waiting for the person on the web page (card {})",
            for_terminal(&ticket.agent),
            for_terminal(&ticket.tool),
            card.id()
        ));
        pending.hold(HeldCall {
            asked: Asked::Page(card),
            id,
            ticket,
            reasons,
            bytes: bytes.to_vec(),
            deadline: None,
            scopes,
            notice,
        });
        drop(pending);
        // The page's thread waits for this card's expiry too.
        let _ = page.wake.send(PageEvent::Changed);
        Ok(())
    }

    /// Declines a held call without asking: too many are waiting for the person already.
    fn decline_unasked(&self, id: &RequestId, ticket: &Ticket, reasons: &[String]) -> Result<()> {
        let approval = Approval {
            scope: None,
            grant: None,
            approved: false,
            by: AnsweredBy::None,
            answer: None,
            reason: format!(
                "declined: {MAX_HELD_CALLS} held calls are already waiting for the person, so this one was not put to them"
            ),
            digest: None,
        };
        self.session
            .decline_held(id, ticket, reasons, &approval, true)
    }

    /// Acts on the person's answer to a held call: audits it, then forwards the call as it came
    /// if approved, or answers it with a refusal.
    fn settle(
        &mut self,
        id: RequestId,
        bytes: &[u8],
        ticket: Ticket,
        reasons: &[String],
        approval: Approval,
    ) -> Result<()> {
        self.session.settle(id, bytes, ticket, reasons, approval)
    }

    /// Appends an event about the request `id`; when the log cannot be written, the request is
    /// answered with an error (nothing was decided or run) and the session stops.
    fn audit_or_answer(&mut self, id: &Value, event: &[u8]) -> Result<()> {
        let result = self.session.audit(event);
        if result.is_err() {
            self.answer_audit_failure(id);
        }
        result
    }

    fn answer_audit_failure(&mut self, id: &Value) {
        self.session.answer_audit_failure(id);
    }
}

/// A held call as it is put to the person, on whichever surface.
impl Question<'_> {
    /// The hold as a surface shows it (and `--notify` pushes it).
    fn hold(&self, timeout: Option<Duration>) -> Hold<'_> {
        Hold {
            scopes: &self.scopes,
            line: &self.verdict.line,
            id: &self.ticket.call_id,
            call: self.call,
            reasons: &self.reasons,
            timeout,
        }
    }
}

struct Question<'a> {
    /// The client's message, forwarded as it came if the person approves.
    bytes: &'a [u8],
    /// The client's `tools/call` id.
    id: RequestId,
    ticket: Ticket,
    call: &'a Call,
    /// Why the gate held it.
    reasons: Vec<String>,
    /// The verdict record a card shows, whose digest an answer is bound to.
    verdict: &'a Verdict,
    /// The scopes a yes may take: `once` first.
    scopes: Vec<Scope>,
}
