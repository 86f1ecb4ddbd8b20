//! `sc-mcp --inbox`: held calls wait in the crew's inbox ([`crate::approve::inbox`]), answered on
//! `sc-inbox`'s page, side by side as on sc-mcp's own page: the calling thread puts a hold in the
//! inbox and goes on relaying, and a thread of its own ([`settle_inbox_holds`]) looks at every
//! waiting hold each [`POLL_EVERY`] (refreshing its heartbeat), settles each one that ended there,
//! and gives up on each one nobody answered within `--timeout`.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::pending::{Asked, HeldCall, HoldKey, Ticket};
use super::protocol::RequestId;
use super::session::{lock, Session};
use super::verdict::Verdict;
use crate::approve::inbox::{InboxDoor, POLL_EVERY};
use crate::approve::notify::Notice;
use crate::approve::{approval_for, Hold};
use crate::call::Call;
use crate::record::AnsweredBy;
use crate::sanitize::for_terminal;

/// What wakes the inbox's thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InboxEvent {
    /// A hold was put in the inbox.
    Changed,
    /// The session is ending.
    End,
}

/// The crew's inbox, as the session's threads share it.
#[derive(Clone)]
pub(super) struct InboxLink {
    pub(super) door: Arc<Mutex<InboxDoor>>,
    /// When each waiting hold gives up, by its id in the inbox.
    pub(super) deadlines: Arc<Mutex<HashMap<String, Instant>>>,
    pub(super) wake: Sender<InboxEvent>,
}

impl InboxLink {
    fn door(&self) -> std::sync::MutexGuard<'_, InboxDoor> {
        self.door.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops waiting for a hold (a cancellation, the end of the session): it ends unanswered in
    /// the inbox with `why`.
    pub(super) fn withdraw(&self, id: &str, why: &str) {
        self.deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        let _ = self.door().give_up(id, why);
    }
}

/// A held call to put in the crew's inbox ([`ask_in_the_inbox`]).
pub(super) struct ToAsk<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) id: RequestId,
    pub(super) ticket: Ticket,
    pub(super) call: &'a Call,
    pub(super) reasons: Vec<String>,
    pub(super) verdict: &'a Verdict,
    /// `--timeout`.
    pub(super) timeout: Option<Duration>,
    /// The `--notify` command started for it, if any.
    pub(super) notice: Option<Notice>,
}

/// Puts a held call in the crew's inbox, showing its verdict record, and keeps it until the
/// answer there, `--timeout`, a cancellation or the end of the session settles it (the inbox's
/// thread, [`settle_inbox_holds`], settles the first two). A hold the inbox cannot take (its
/// store fails, it is full) is declined at once, with the reason.
pub(super) fn ask_in_the_inbox(
    session: &Session,
    inbox: &InboxLink,
    asked: ToAsk<'_>,
) -> Result<()> {
    let ToAsk {
        bytes,
        id,
        ticket,
        call,
        reasons,
        verdict,
        timeout,
        notice,
    } = asked;
    {
        // Locked while the hold is put, so the inbox's thread finds the call waiting.
        let mut pending = lock(&session.pending);
        let scopes = ticket.scopes().to_vec();
        let hold = Hold {
            scopes: &scopes,
            line: &verdict.line,
            id: &ticket.call_id,
            call,
            reasons: &reasons,
            timeout,
        };
        let put = inbox.door().put(&hold);
        let key = match put {
            Ok(key) => key,
            Err(reply) => {
                drop(pending);
                let approval = approval_for(reply, AnsweredBy::Web);
                return session.settle(id, bytes, ticket, &reasons, approval);
            }
        };
        session.narrate(&format!(
            "sc-mcp: {} → {}: waiting in the crew's inbox (hold {key})",
            for_terminal(&ticket.agent),
            for_terminal(&ticket.tool),
        ));
        if let Some(timeout) = timeout {
            inbox
                .deadlines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key.clone(), Instant::now() + timeout);
        }
        pending.hold(HeldCall {
            asked: Asked::Inbox(key),
            id,
            ticket,
            reasons,
            bytes: bytes.to_vec(),
            deadline: None,
            scopes,
            notice,
        });
        drop(pending);
        let _ = inbox.wake.send(InboxEvent::Changed);
        Ok(())
    }
}

/// The thread that settles the calls held in the crew's inbox: each hold that ended there is
/// audited and forwarded (or refused), and one nobody answered within `timeout` is given up on
/// and declined. Ends with the session.
pub(super) fn settle_inbox_holds(
    session: &Session,
    link: &InboxLink,
    timeout: Option<Duration>,
    events: &Receiver<InboxEvent>,
) {
    loop {
        let keys = lock(&session.pending).inbox_holds();
        for key in &keys {
            let due = link
                .deadlines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(key)
                .is_some_and(|at| *at <= Instant::now());
            let reply = if due {
                let seconds = timeout.unwrap_or_default().as_secs();
                let why = format!("no answer in the crew's inbox within {seconds} seconds");
                Some(link.door().give_up(key, &why))
            } else {
                link.door().look(key)
            };
            let Some(reply) = reply else { continue };
            link.deadlines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(key);
            // Taken by now if the client cancelled the call or the session ended.
            let held = lock(&session.pending).take_held_to_settle(&HoldKey::Inbox(key.clone()));
            if let Some(call) = held {
                let approval = approval_for(reply, AnsweredBy::Web);
                if session
                    .settle(call.id, &call.bytes, call.ticket, &call.reasons, approval)
                    .is_err()
                {
                    // The audit log cannot be written: the session is stopping.
                    return;
                }
            }
        }
        let event = if keys.is_empty() {
            events.recv().unwrap_or(InboxEvent::End)
        } else {
            match events.recv_timeout(POLL_EVERY) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => InboxEvent::Changed,
                Err(RecvTimeoutError::Disconnected) => InboxEvent::End,
            }
        };
        if event == InboxEvent::End {
            return;
        }
    }
}
