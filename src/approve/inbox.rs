//! A door's side of the crew's inbox (`--inbox`): a hold is put in the crew's state store
//! ([`crate::store::inbox`]) instead of being asked here, and the door waits there for the answer
//! an `sc-inbox` gives, refreshing the hold's heartbeat as it waits.
//!
//! [`InboxDoor`] keeps the store and does each step ([`put`](InboxDoor::put),
//! [`look`](InboxDoor::look), [`give_up`](InboxDoor::give_up)); [`InboxHuman`] is the one-at-a-time
//! [`Human`] sc-approve asks. It fails closed: a store that fails, an inbox full, a hold that
//! expired there, was withdrawn or vanished, and no answer within the door's own timeout all
//! decline, each with its reason ([`Reply::Unanswered`]).

use std::time::{Duration, Instant, SystemTime};

use super::{Hold, Human, Reply};
use crate::record::AnsweredBy;
use crate::store::inbox::{self, Door, HoldState, InboxHold, NewHold};
use crate::store::Store;

/// How often a waiting door looks at its hold: an answer reaches it within this.
pub const POLL_EVERY: Duration = Duration::from_millis(150);

/// This machine's name, as a hold names where its door runs.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The reply a hold that ended in the inbox gives its door.
fn reply_of(hold: &InboxHold) -> Reply {
    let why = || hold.why.clone().unwrap_or_else(|| "no reason given".into());
    match hold.state {
        HoldState::Approved | HoldState::Declined => Reply::Decision {
            approve: hold.state == HoldState::Approved,
            digest: Some(hold.digest.clone()),
            scope: hold.scope.unwrap_or_default(),
        },
        HoldState::Expired => {
            Reply::Unanswered(format!("the crew's inbox expired the hold: {}", why()))
        }
        HoldState::Withdrawn => {
            Reply::Unanswered(format!("the crew's inbox withdrew the hold: {}", why()))
        }
        HoldState::Pending => {
            Reply::Unanswered("the hold is still pending in the crew's inbox".into())
        }
    }
}

fn store_failed(err: &inbox::InboxError) -> Reply {
    Reply::Unanswered(format!("the inbox's store failed: {err}"))
}

/// A door's way to the crew's inbox: its store, the crew, and who the door is.
pub struct InboxDoor {
    store: Box<dyn Store>,
    crew: String,
    door: Door,
    host: String,
}

impl InboxDoor {
    pub fn new(store: Box<dyn Store>, crew: String, door: Door) -> InboxDoor {
        InboxDoor {
            store,
            crew,
            door,
            host: host_name(),
        }
    }

    /// Which store and crew, for messages.
    pub fn describe(&self) -> String {
        format!("crew {:?} on {}", self.crew, self.store.describe())
    }

    /// Puts a hold in the inbox: its id there, or the reply that declines it (the line is not
    /// text, the store failed, the inbox is full).
    pub fn put(&mut self, hold: &Hold<'_>) -> Result<String, Reply> {
        let Ok(line) = std::str::from_utf8(hold.line) else {
            return Err(Reply::Unanswered(
                "the record line is not UTF-8, so it cannot be put in the crew's inbox".into(),
            ));
        };
        let new = NewHold {
            door: self.door,
            pid: std::process::id(),
            host: self.host.clone(),
            line: line.to_owned(),
            scopes: hold.scopes.to_vec(),
            timeout: hold.timeout,
        };
        inbox::put(self.store.as_mut(), &self.crew, new, SystemTime::now())
            .map(|put| put.id)
            .map_err(|err| store_failed(&err))
    }

    /// Looks at a hold (refreshing its heartbeat): its reply once it ended (the hold is then taken
    /// out of the inbox), `None` while it is pending.
    pub fn look(&mut self, id: &str) -> Option<Reply> {
        match inbox::heartbeat(self.store.as_mut(), &self.crew, id, SystemTime::now()) {
            Err(err) => Some(store_failed(&err)),
            Ok(None) => Some(Reply::Unanswered(
                "the hold is no longer in the crew's inbox".into(),
            )),
            Ok(Some(hold)) if hold.state == HoldState::Pending => None,
            Ok(Some(hold)) => Some(self.take(id, &hold)),
        }
    }

    /// Stops waiting for a hold (the door's timeout, a cancellation): a pending hold ends
    /// unanswered with `why`, and an answer given before stands.
    pub fn give_up(&mut self, id: &str, why: &str) -> Reply {
        match inbox::finish(self.store.as_mut(), &self.crew, id, why, SystemTime::now()) {
            Err(err) => store_failed(&err),
            Ok(None) => Reply::Unanswered("the hold is no longer in the crew's inbox".into()),
            Ok(Some(hold))
                if hold.state == HoldState::Expired && hold.by.as_deref() == Some("the door") =>
            {
                Reply::Unanswered(why.to_owned())
            }
            Ok(Some(hold)) => reply_of(&hold),
        }
    }

    /// Takes an ended hold out of the inbox; its reply.
    fn take(&mut self, id: &str, hold: &InboxHold) -> Reply {
        // Removed so that the inbox stays small; what it says does not change the reply.
        let _ = inbox::finish(self.store.as_mut(), &self.crew, id, "", SystemTime::now());
        reply_of(hold)
    }
}

/// sc-approve's person in the crew's inbox: one hold at a time, waited on until it ends there or
/// the door's timeout.
pub struct InboxHuman {
    door: InboxDoor,
}

impl InboxHuman {
    pub fn new(door: InboxDoor) -> InboxHuman {
        InboxHuman { door }
    }
}

impl Human for InboxHuman {
    /// The inbox shows whole holds, never bare prompt text.
    fn ask(&mut self, _prompt: &str) -> Reply {
        Reply::NobodyToAsk(
            "the crew's inbox is shown whole holds, and this one came as text".into(),
        )
    }

    fn ask_hold(&mut self, hold: &Hold<'_>) -> Reply {
        let id = match self.door.put(hold) {
            Ok(id) => id,
            Err(reply) => return reply,
        };
        let deadline = hold.timeout.map(|timeout| Instant::now() + timeout);
        loop {
            if let Some(reply) = self.door.look(&id) {
                return reply;
            }
            if deadline.is_some_and(|at| Instant::now() >= at) {
                let seconds = hold.timeout.unwrap_or_default().as_secs();
                return self.door.give_up(
                    &id,
                    &format!("no answer in the crew's inbox within {seconds} seconds"),
                );
            }
            let left = deadline.map_or(POLL_EVERY, |at| {
                at.saturating_duration_since(Instant::now()).min(POLL_EVERY)
            });
            std::thread::sleep(left);
        }
    }

    fn reads_prompt(&self) -> bool {
        false
    }

    fn kind(&self) -> AnsweredBy {
        AnsweredBy::Web
    }
}
