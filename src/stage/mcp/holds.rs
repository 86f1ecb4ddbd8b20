//! The threads that settle held calls without the calling thread: the one that declines what
//! nobody answered in time, and the one that reads the web page's answers.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use super::pending::HoldKey;
use super::session::{lock, Session};
use crate::approve::approval_for;
use crate::approve::web::WebApprovals;
use crate::record::AnsweredBy;

/// The thread that declines held calls nobody answered within `--timeout`: it waits for the
/// earliest deadline (or for a new hold), and ends with the session.
pub(super) fn expire_holds(session: &Session) {
    let mut pending = lock(&session.pending);
    loop {
        if pending.holds_closed {
            return;
        }
        let now = Instant::now();
        let overdue = pending.take_overdue(now);
        if !overdue.is_empty() {
            drop(pending);
            for call in overdue {
                session.expire(call);
            }
            pending = lock(&session.pending);
            continue;
        }
        let next = pending.held.values().filter_map(|call| call.deadline).min();
        pending = match next {
            Some(deadline) => {
                session
                    .holds_changed
                    .wait_timeout(pending, deadline.saturating_duration_since(now))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => session
                .holds_changed
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner),
        };
    }
}

/// What wakes the thread that settles the calls held on the web page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PageEvent {
    /// A card was answered or expired on the page, or one was put there: look again.
    Changed,
    /// The session is ending.
    End,
}

/// The web page and what tells its thread that something changed.
pub(super) struct Page {
    pub(super) web: Arc<WebApprovals>,
    pub(super) wake: Sender<PageEvent>,
}

/// The thread that settles the calls held on the web page: each answered card's call is audited
/// and forwarded (or refused), and a card nobody answered is declined when its time is up (the
/// page expires it when asked after that). Ends with the session.
pub(super) fn settle_page_holds(
    session: &Session,
    web: &WebApprovals,
    events: &Receiver<PageEvent>,
) {
    loop {
        let cards = lock(&session.pending).cards();
        let mut next: Option<Instant> = None;
        for card in cards {
            let Some(reply) = web.poll(card) else {
                next = match (next, card.expires()) {
                    (Some(next), Some(at)) => Some(next.min(at)),
                    (next, at) => next.or(at),
                };
                continue;
            };
            let mut approval = approval_for(reply, AnsweredBy::Web);
            // Taken by now if the client cancelled the call or the session ended: then the
            // person's answer comes too late to act on, and the card says so.
            let held = lock(&session.pending).take_held_to_settle(&HoldKey::Card(card.id()));
            let Some(call) = held else {
                let why = "the call was withdrawn (the client cancelled it, or sc-mcp is stopping) before the answer came";
                web.kept(card, &approval, Some(why.to_owned()));
                continue;
            };
            let call = call.noticed();
            // A yes is decided again as it runs, and kept as a grant only if it runs.
            let again = session.decide_again(&call.ticket, &call.reasons, &approval);
            if again.as_ref().is_none_or(|again| again.runs()) {
                session.keep(&call.ticket, &mut approval);
            }
            let kept = approval.clone();
            let settled = session.settle_decided(
                call.id,
                &call.bytes,
                call.ticket,
                &call.reasons,
                approval,
                again,
            );
            // The page's answer waits for this: the scope kept, the grant, and why a yes does
            // not run the call, when it does not.
            let not_run = match &settled {
                _ if !kept.approved => None,
                Ok(not_run) => not_run.clone(),
                Err(_) => {
                    Some("the audit log cannot be written, so the call was not run".to_owned())
                }
            };
            web.kept(card, &kept, not_run);
            if settled.is_err() {
                // The audit log cannot be written: the session is stopping.
                return;
            }
        }
        let event = match next {
            Some(at) => match events.recv_timeout(at.saturating_duration_since(Instant::now())) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => PageEvent::Changed,
                Err(RecvTimeoutError::Disconnected) => PageEvent::End,
            },
            None => events.recv().unwrap_or(PageEvent::End),
        };
        if event == PageEvent::End {
            return;
        }
    }
}
