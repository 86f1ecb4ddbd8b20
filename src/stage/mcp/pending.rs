//! The requests waiting for the server's answer and the held calls waiting for the person's,
//! by id.

use std::collections::HashMap;
use std::time::Instant;

use indexmap::IndexMap;

use super::protocol::{IdKey, RequestId};
use crate::approve::notify::Notice;
use crate::approve::web;
use crate::call::Call;
use crate::record::{AnsweredBy, Approval, Grantable, Scope};
use crate::verdict::Decision;
use std::sync::Arc;

/// How many cancelled requests are set aside at once, so a late answer to one is dropped and its
/// id is not reused while the server may still answer it; past that, a cancelled request stays
/// awaited, and its answer is relayed as any other (the client ignores it).
const CANCELLED_REMEMBERED: usize = 4096;

/// A tool call on its way to the server.
#[derive(Debug, Clone)]
pub(super) struct Ticket {
    /// The call's id in the audit log.
    pub(super) call_id: String,
    pub(super) agent: String,
    pub(super) tool: String,
    /// The decision acted on: allow, or an approved hold.
    pub(super) decision: Decision,
    pub(super) approval: Option<Approval>,
    /// A held call, and what a yes to it may be remembered for.
    pub(super) held_for: Option<Arc<(Call, Grantable)>>,
    /// A call held for a person who is asked on a legacy surface (elicitation, the web page,
    /// the inbox, the terminal or the answers file): a yes to it is decided again, on the state
    /// as it is when the answer comes ([`super::session::Session::decide_again`]).
    pub(super) held_call: Option<Arc<Call>>,
    /// Why the `--notify` command run when the person was asked failed, if it did: said in the
    /// `approve` event (`notifyFailed`).
    pub(super) notify_failed: Option<String>,
}

impl Ticket {
    /// The scopes a yes to this held call may take: `once`, and what the decision offered.
    pub(super) fn scopes(&self) -> &[Scope] {
        match &self.held_for {
            Some(held) => &held.1.scopes,
            None => &[Scope::Once],
        }
    }
}

#[derive(Debug)]
pub(super) enum Awaiting {
    ToolsList,
    ToolCall(Ticket),
    Other(String),
}

impl Awaiting {
    pub(super) fn method(&self) -> &str {
        match self {
            Awaiting::ToolsList => "tools/list",
            Awaiting::ToolCall(_) => "tools/call",
            Awaiting::Other(method) => method,
        }
    }
}

#[derive(Debug)]
pub(super) struct PendingRequest {
    pub(super) id: RequestId,
    pub(super) awaiting: Awaiting,
}

/// Where a held call waits for the person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Asked {
    /// Through the client: sc-mcp's own request id for the question (`sc-mcp-elicit-N`).
    Client(String),
    /// On the web page: its card.
    Page(web::Ticket),
    /// In the crew's inbox (`--inbox`): its id there.
    Inbox(String),
}

/// A held call's key among those waiting: its question's id, or its card's number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum HoldKey {
    Question(String),
    Card(u64),
    Inbox(String),
}

impl Asked {
    pub(super) fn key(&self) -> HoldKey {
        match self {
            Asked::Client(question) => HoldKey::Question(question.clone()),
            Asked::Page(card) => HoldKey::Card(card.id()),
            Asked::Inbox(key) => HoldKey::Inbox(key.clone()),
        }
    }

    /// The approval of a call settled here without the person's answer: the timeout, a
    /// cancellation, the end of the session.
    pub(super) fn declined(&self, reason: impl Into<String>) -> Approval {
        Approval {
            scope: None,
            grant: None,
            approved: false,
            by: match self {
                Asked::Client(_) => AnsweredBy::Elicitation,
                Asked::Page(_) | Asked::Inbox(_) => AnsweredBy::Web,
            },
            answer: None,
            reason: reason.into(),
            digest: None,
        }
    }
}

/// A held call put to the person through the client or on the web page, waiting for the answer.
#[derive(Debug)]
pub(super) struct HeldCall {
    /// Where it was put to the person.
    pub(super) asked: Asked,
    /// The client's `tools/call` id.
    pub(super) id: RequestId,
    pub(super) ticket: Ticket,
    /// Why the gate held it.
    pub(super) reasons: Vec<String>,
    /// The client's message, forwarded as it came if the person approves.
    pub(super) bytes: Vec<u8>,
    /// When no answer through the client declines it; `None` waits forever (`--timeout 0`),
    /// or for the page, which expires its cards itself.
    pub(super) deadline: Option<Instant>,
    /// The scopes a yes may take, as the person was offered them (`once` first).
    pub(super) scopes: Vec<Scope>,
    /// The `--notify` command started when the person was asked, if any.
    pub(super) notice: Option<Notice>,
}

impl HeldCall {
    /// Waits for the `--notify` command started when the call was asked (at most its time
    /// limit), and notes its failure on the ticket for the `approve` event. Called when the call
    /// is settled, outside the lock of what is pending.
    pub(super) fn noticed(mut self) -> HeldCall {
        if let Some(notice) = self.notice.take() {
            self.ticket.notify_failed = notice.finish().map(|failure| failure.to_string());
        }
        self
    }
}

#[derive(Debug, Default)]
pub(super) struct Pending {
    /// Whether the server can still answer; once false, no request is forwarded.
    pub(super) server_reading: bool,
    pub(super) requests: HashMap<IdKey, PendingRequest>,
    /// Requests the client cancelled, oldest first: the server may still answer them. A tool
    /// call keeps its ticket, so that an answer that comes after all is audited as what it says.
    pub(super) cancelled: IndexMap<IdKey, Option<Ticket>>,
    /// Calls waiting for the person's answer, through the client or on the page.
    pub(super) held: HashMap<HoldKey, HeldCall>,
    /// The same calls' client ids, each to its key.
    pub(super) held_ids: HashMap<IdKey, HoldKey>,
    /// Held calls taken to be settled on the person's answer (decided again, audited), by their
    /// client ids, until they are forwarded or refused: their ids stay in use, and a
    /// cancellation meanwhile is noted here (`true`) for [`Pending::end_settling`].
    pub(super) settling: HashMap<IdKey, bool>,
    /// The session is ending: no call is held any more, and the timer stops.
    pub(super) holds_closed: bool,
}

/// What an answer from the server answers. Returned and taken apart at once, so its size is no
/// matter.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(super) enum Answered {
    /// A request the client is waiting on, now answered.
    Waiting(PendingRequest),
    /// A request the client cancelled: a tool call's ticket.
    Cancelled(Option<Ticket>),
    /// Nothing: an id never sent, one already answered, or no id sc-mcp could have let through.
    Nothing,
}

impl Pending {
    /// Why a new request may not use this id, if it may not.
    pub(super) fn in_use(&self, key: &IdKey) -> Option<&'static str> {
        if self.requests.contains_key(key) {
            Some("a request still waiting for an answer")
        } else if self.held_ids.contains_key(key) {
            Some("a call still waiting for the person's answer")
        } else if self.settling.contains_key(key) {
            Some("a call whose person's answer is being acted on")
        } else if self.cancelled.contains_key(key) {
            Some("a request the client cancelled, which the MCP server may still answer")
        } else {
            None
        }
    }

    /// Takes the request an answer with this id answers.
    pub(super) fn take(&mut self, key: Option<&IdKey>) -> Answered {
        let Some(key) = key else {
            return Answered::Nothing;
        };
        if let Some(request) = self.requests.remove(key) {
            Answered::Waiting(request)
        } else if let Some(ticket) = self.cancelled.shift_remove(key) {
            Answered::Cancelled(ticket)
        } else {
            Answered::Nothing
        }
    }

    pub(super) fn hold(&mut self, call: HeldCall) {
        let key = call.asked.key();
        self.held_ids.insert(call.id.key.clone(), key.clone());
        self.held.insert(key, call);
    }

    /// Takes the held call that the question with this id, or the card with this number, is
    /// about.
    pub(super) fn take_held(&mut self, key: &HoldKey) -> Option<HeldCall> {
        let call = self.held.remove(key)?;
        self.held_ids.remove(&call.id.key);
        Some(call)
    }

    /// Takes the held call to settle on the person's answer: its id stays in use, and a
    /// cancellation is noted, until [`Pending::end_settling`].
    pub(super) fn take_held_to_settle(&mut self, key: &HoldKey) -> Option<HeldCall> {
        let call = self.take_held(key)?;
        self.settling.insert(call.id.key.clone(), false);
        Some(call)
    }

    /// Notes that the client cancelled a call being settled; whether one was.
    pub(super) fn cancel_settling(&mut self, key: &IdKey) -> bool {
        match self.settling.get_mut(key) {
            Some(cancelled) => {
                *cancelled = true;
                true
            }
            None => false,
        }
    }

    /// Ends the settling of the call with this id: whether the client cancelled it meanwhile.
    pub(super) fn end_settling(&mut self, key: &IdKey) -> bool {
        self.settling.remove(key).unwrap_or(false)
    }

    /// Takes the held call with this client id.
    pub(super) fn take_held_call(&mut self, key: &IdKey) -> Option<HeldCall> {
        let held = self.held_ids.get(key)?.clone();
        self.take_held(&held)
    }

    /// Takes every held call whose deadline has passed, to settle ([`Pending::take_held_to_settle`]):
    /// their ids stay in use until they are declined.
    pub(super) fn take_overdue(&mut self, now: Instant) -> Vec<HeldCall> {
        let overdue: Vec<HoldKey> = self
            .held
            .values()
            .filter(|call| call.deadline.is_some_and(|deadline| deadline <= now))
            .map(|call| call.asked.key())
            .collect();
        overdue
            .iter()
            .filter_map(|key| self.take_held_to_settle(key))
            .collect()
    }

    /// Whether the client cancelled the call with this id while it was being settled.
    pub(super) fn cancelled_while_settling(&self, key: &IdKey) -> bool {
        self.settling.get(key).copied().unwrap_or(false)
    }

    /// The cards of the calls waiting on the web page.
    pub(super) fn cards(&self) -> Vec<web::Ticket> {
        self.held
            .values()
            .filter_map(|call| match call.asked {
                Asked::Page(card) => Some(card),
                Asked::Client(_) | Asked::Inbox(_) => None,
            })
            .collect()
    }

    /// The ids of the calls waiting in the crew's inbox.
    pub(super) fn inbox_holds(&self) -> Vec<String> {
        self.held
            .values()
            .filter_map(|call| match &call.asked {
                Asked::Inbox(key) => Some(key.clone()),
                Asked::Client(_) | Asked::Page(_) => None,
            })
            .collect()
    }

    /// The client cancelled the request with this id: it is not awaited any more, and a late
    /// answer to it is dropped (a tool call's audited). While [`CANCELLED_REMEMBERED`] cancelled
    /// requests wait for the server already, the request stays awaited instead (`None`): its
    /// id in use and its answer taken as its own, never forgotten so that another request could
    /// take the id and be given this one's answer (a review did so after 4096 cancellations).
    pub(super) fn cancel(&mut self, key: &IdKey) -> Option<PendingRequest> {
        if self.cancelled.len() >= CANCELLED_REMEMBERED {
            return None;
        }
        let request = self.requests.remove(key)?;
        let ticket = match &request.awaiting {
            Awaiting::ToolCall(ticket) => Some(ticket.clone()),
            _ => None,
        };
        self.cancelled.insert(key.clone(), ticket);
        Some(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn a_cancelled_request_keeps_its_id_until_answered_and_none_is_forgotten() {
        let mut pending = Pending::default();
        let request = |n: i64| PendingRequest {
            id: RequestId {
                value: json!(n),
                key: IdKey::Integer(n),
            },
            awaiting: Awaiting::ToolsList,
        };
        pending.requests.insert(IdKey::Integer(1), request(1));
        assert!(pending.in_use(&IdKey::Integer(1)).is_some());
        assert!(pending.cancel(&IdKey::Integer(1)).is_some());
        assert!(pending
            .in_use(&IdKey::Integer(1))
            .unwrap()
            .contains("cancelled"));
        assert!(matches!(
            pending.take(Some(&IdKey::Integer(1))),
            Answered::Cancelled(None)
        ));
        assert!(pending.in_use(&IdKey::Integer(1)).is_none());
        assert!(matches!(
            pending.take(Some(&IdKey::Integer(1))),
            Answered::Nothing
        ));
        assert!(matches!(pending.take(None), Answered::Nothing));
        for n in 0..=i64::try_from(CANCELLED_REMEMBERED).unwrap() {
            pending.requests.insert(IdKey::Integer(n), request(n));
            pending.cancel(&IdKey::Integer(n));
        }
        assert_eq!(pending.cancelled.len(), CANCELLED_REMEMBERED);
        // Past that, a cancelled request stays awaited: no id is ever forgotten while the
        // server may answer it.
        let last = IdKey::Integer(i64::try_from(CANCELLED_REMEMBERED).unwrap());
        assert!(pending.requests.contains_key(&last));
        for n in 0..=i64::try_from(CANCELLED_REMEMBERED).unwrap() {
            assert!(pending.in_use(&IdKey::Integer(n)).is_some(), "{n}");
        }
        assert!(matches!(pending.take(Some(&last)), Answered::Waiting(_)));
    }

    #[test]
    fn a_held_call_keeps_its_id_until_settled_and_is_taken_once() {
        let mut pending = Pending::default();
        let question = |n: i64| HoldKey::Question(format!("sc-mcp-elicit-{n}"));
        let held = |n: i64, deadline: Option<Instant>| HeldCall {
            asked: Asked::Client(format!("sc-mcp-elicit-{n}")),
            id: RequestId {
                value: json!(n),
                key: IdKey::Integer(n),
            },
            ticket: Ticket {
                call_id: format!("c-{n}"),
                agent: "a".into(),
                tool: "t".into(),
                decision: Decision::Hold,
                approval: None,
                held_for: None,
                held_call: None,
                notify_failed: None,
            },
            reasons: vec!["r".into()],
            bytes: b"{}".to_vec(),
            deadline,
            scopes: vec![Scope::Once],
            notice: None,
        };
        let now = Instant::now();
        pending.hold(held(1, Some(now)));
        pending.hold(held(2, Some(now + Duration::from_secs(3600))));
        pending.hold(held(3, None));
        assert!(pending
            .in_use(&IdKey::Integer(1))
            .unwrap()
            .contains("person"));
        let overdue = pending.take_overdue(now);
        assert_eq!(overdue.len(), 1);
        assert_eq!(overdue[0].asked.key(), question(1));
        // In use while the decline is acted on, and a cancellation meanwhile is noted.
        assert!(pending
            .in_use(&IdKey::Integer(1))
            .unwrap()
            .contains("being acted on"));
        assert!(pending.cancel_settling(&IdKey::Integer(1)));
        assert!(pending.cancelled_while_settling(&IdKey::Integer(1)));
        assert!(pending.end_settling(&IdKey::Integer(1)));
        assert!(pending.in_use(&IdKey::Integer(1)).is_none());
        assert!(!pending.cancel_settling(&IdKey::Integer(1)));
        assert!(pending.take_held(&question(1)).is_none(), "taken once");
        let second = pending.take_held_call(&IdKey::Integer(2)).unwrap();
        assert_eq!(second.asked.key(), question(2));
        assert!(pending.take_held(&question(2)).is_none());
        assert!(pending
            .take_overdue(now + Duration::from_secs(7200))
            .is_empty());
        assert!(pending.cards().is_empty(), "none on the page");
        assert!(pending.take_held(&question(3)).is_some());
        assert!(pending.held.is_empty() && pending.held_ids.is_empty());
    }
}
