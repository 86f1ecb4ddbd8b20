//! A door's side of the crew's inbox (`--inbox`): a hold is put in the crew's state store
//! ([`crate::store::inbox`]) instead of being asked here, and the door waits there for the answer
//! an `sc-inbox` gives, refreshing the hold's heartbeat as it waits.
//!
//! [`InboxDoor`] keeps the store and does each step ([`put`](InboxDoor::put),
//! [`look`](InboxDoor::look), [`give_up`](InboxDoor::give_up)); [`InboxHuman`] is the one-at-a-time
//! [`Human`] sc-approve asks. It fails closed: a store that fails, an inbox full, a hold that
//! expired there, was withdrawn or vanished, and no answer within the door's own timeout all
//! decline, each with its reason ([`Reply::Unanswered`]).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
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

/// The reply a hold that ended in the inbox gives its door. An answer counts only for the record
/// the door put there (`expected`, the SHA-256 of its line): the stored hold's line and digest
/// must both be it, or whoever wrote the store could show one call and approve another.
fn reply_of(hold: &InboxHold, expected: Option<&str>) -> Reply {
    let why = || hold.why.clone().unwrap_or_else(|| "no reason given".into());
    let ours = expected.is_some_and(|expected| {
        hold.digest == expected
            && crate::approve::prompt::record_digest(hold.line.as_bytes()) == expected
    });
    if matches!(hold.state, HoldState::Approved | HoldState::Declined) && !ours {
        return Reply::Unanswered(
            "the answer in the crew's inbox is not for the record this door put there".into(),
        );
    }
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

/// The reply of a hold the inbox could not keep: its store failed or refused it, or the hold does
/// not fit (the inbox is full, the record line too long).
fn store_failed(err: &inbox::InboxError) -> Reply {
    match err {
        inbox::InboxError::Store(_) | inbox::InboxError::Refused { .. } => {
            Reply::Unanswered(format!("the inbox's store failed: {err}"))
        }
        inbox::InboxError::Invalid(_) | inbox::InboxError::Full { .. } => {
            Reply::Unanswered(err.to_string())
        }
    }
}

/// A door's way to the crew's inbox: its store, the crew, and who the door is.
pub struct InboxDoor {
    store: Box<dyn Store>,
    crew: String,
    door: Door,
    host: String,
    /// A SQLite store's file, and its device and inode when it was opened.
    file: Option<(PathBuf, (u64, u64))>,
    /// The digest of the record line of each hold this door put, by its id in the inbox.
    put: std::collections::HashMap<String, String>,
}

impl InboxDoor {
    pub fn new(store: Box<dyn Store>, crew: String, door: Door) -> InboxDoor {
        InboxDoor {
            store,
            crew,
            door,
            host: host_name(),
            file: None,
            put: std::collections::HashMap::new(),
        }
    }

    /// Watches a SQLite store's file: once it is removed or replaced, the connection still open
    /// on the old one is no longer the crew's inbox (an inbox started now would not see the
    /// hold), and every hold waiting declines.
    pub fn watching_file(mut self, path: &Path) -> InboxDoor {
        self.file = std::fs::metadata(path)
            .ok()
            .map(|meta| (path.to_owned(), (meta.dev(), meta.ino())));
        self
    }

    /// Why the store's file is no longer the one opened, if it is not.
    fn file_gone(&self) -> Option<Reply> {
        let (path, opened) = self.file.as_ref()?;
        match std::fs::metadata(path) {
            Ok(meta) if (meta.dev(), meta.ino()) == *opened => None,
            _ => Some(Reply::Unanswered(format!(
                "the inbox's store failed: its file {} was removed or replaced",
                path.display()
            ))),
        }
    }

    /// Which store and crew, for messages.
    pub fn describe(&self) -> String {
        format!("crew {:?} on {}", self.crew, self.store.describe())
    }

    /// Puts a hold in the inbox: its id there, or the reply that declines it (the line is not
    /// text, the store failed, the inbox is full).
    pub fn put(&mut self, hold: &Hold<'_>) -> Result<String, Reply> {
        if let Some(gone) = self.file_gone() {
            return Err(gone);
        }
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
        let digest = crate::approve::prompt::record_digest(hold.line);
        let id = inbox::put(self.store.as_mut(), &self.crew, new, SystemTime::now())
            .map(|put| put.id)
            .map_err(|err| store_failed(&err))?;
        self.put.insert(id.clone(), digest);
        Ok(id)
    }

    /// Looks at a hold (refreshing its heartbeat): its reply once it ended (the hold is then taken
    /// out of the inbox), `None` while it is pending.
    pub fn look(&mut self, id: &str) -> Option<Reply> {
        if let Some(gone) = self.file_gone() {
            return Some(gone);
        }
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
            Ok(Some(hold)) => {
                let expected = self.put.remove(id);
                reply_of(&hold, expected.as_deref())
            }
        }
    }

    /// Takes an ended hold out of the inbox; its reply.
    fn take(&mut self, id: &str, hold: &InboxHold) -> Reply {
        // Removed so that the inbox stays small; what it says does not change the reply.
        let _ = inbox::finish(self.store.as_mut(), &self.crew, id, "", SystemTime::now());
        let expected = self.put.remove(id);
        reply_of(hold, expected.as_deref())
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

    fn channel(&self) -> Option<&'static str> {
        Some("inbox")
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{Duration, Instant, SystemTime};

    use super::*;
    use crate::call::Call;
    use crate::record::{Record, Scope};
    use crate::store::inbox::Answer;
    use crate::store::{OpenOptions, StateUrl, ValueChange, ValueKey};

    const LINE: &str = r#"{"id":"h-1","call":{"agent":"buyer","tool":"send_payment","args":{"to":"acme","amount":750},"source":"user"},"decision":"hold","reasons":["over 100"]}"#;

    fn open(path: &Path) -> Box<dyn Store> {
        StateUrl::Sqlite(path.to_owned())
            .open(OpenOptions {
                create: true,
                fsync: false,
            })
            .unwrap()
    }

    fn call() -> Call {
        Record::parse(LINE.as_bytes())
            .unwrap()
            .call()
            .unwrap()
            .clone()
            .unwrap()
    }

    fn ask(human: &mut InboxHuman, timeout: Option<Duration>) -> Reply {
        let (call, reasons) = (call(), vec!["over 100".to_owned()]);
        human.ask_hold(&Hold {
            scopes: &[Scope::Once, Scope::Call],
            line: LINE.as_bytes(),
            id: "h-1",
            call: &call,
            reasons: &reasons,
            timeout,
        })
    }

    /// Answers the first pending hold of crew `c` as an inbox does, once there is one.
    fn answer_when_put(path: &Path, approve: bool) -> std::thread::JoinHandle<()> {
        let mut store = open(path);
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let holds = inbox::list(store.as_mut(), "c").unwrap();
                if let Some(hold) = holds.first() {
                    let answer = Answer {
                        approve,
                        digest: &hold.digest,
                        scope: Scope::Call,
                        by: "test",
                    };
                    inbox::answer(store.as_mut(), "c", &hold.id, &answer, SystemTime::now())
                        .unwrap()
                        .unwrap();
                    return;
                }
                assert!(Instant::now() < deadline, "no hold was put");
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    }

    #[test]
    fn the_answer_given_in_the_inbox_is_the_reply_and_the_hold_leaves_the_inbox() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let mut human = InboxHuman::new(InboxDoor::new(open(&path), "c".into(), Door::Approve));
        let answering = answer_when_put(&path, true);
        let reply = ask(&mut human, Some(Duration::from_secs(60)));
        answering.join().unwrap();
        assert_eq!(
            reply,
            Reply::Decision {
                approve: true,
                digest: Some(crate::approve::prompt::record_digest(LINE.as_bytes())),
                scope: Scope::Call,
            }
        );
        assert!(inbox::list(open(&path).as_mut(), "c").unwrap().is_empty());
    }

    #[test]
    fn no_answer_in_time_and_a_refused_store_decline_with_their_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let mut human = InboxHuman::new(InboxDoor::new(open(&path), "c".into(), Door::Approve));
        let reply = ask(&mut human, Some(Duration::from_millis(300)));
        assert_eq!(
            reply,
            Reply::Unanswered("no answer in the crew's inbox within 0 seconds".into())
        );
        // The hold ended with the door: nothing is left pending.
        assert!(inbox::list(open(&path).as_mut(), "c").unwrap().is_empty());
        open(&path)
            .update_value(&ValueKey::inbox("c"), &mut |_| {
                Ok(ValueChange::Set("not an inbox".into()))
            })
            .unwrap();
        let Reply::Unanswered(why) = ask(&mut human, None) else {
            panic!("a refused inbox declines");
        };
        assert!(why.starts_with("the inbox's store failed: "), "{why}");
    }

    /// Found by a review: whoever writes the store could approve a record other than the one
    /// this door put (another line shown, another digest); the door takes no such answer.
    #[test]
    fn an_answer_for_another_record_than_the_doors_own_declines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let mut human = InboxHuman::new(InboxDoor::new(open(&path), "c".into(), Door::Approve));
        let mut store = open(&path);
        let forger = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let holds = inbox::list(store.as_mut(), "c").unwrap();
                if let Some(put) = holds.first() {
                    // The stored line swapped for a milder one (and its digest with it), and
                    // answered for it.
                    let line = put.line.replace(r#""amount":750"#, r#""amount":75"#);
                    let milder = crate::approve::prompt::record_digest(line.as_bytes());
                    store
                        .update_value(&ValueKey::inbox("c"), &mut |text| {
                            let mut stored: serde_json::Value =
                                serde_json::from_str(text.unwrap()).unwrap();
                            let hold = &mut stored["holds"][0];
                            hold["line"] = line.clone().into();
                            hold["digest"] = milder.clone().into();
                            Ok(ValueChange::Set(stored.to_string()))
                        })
                        .unwrap();
                    let hold = inbox::list(store.as_mut(), "c").unwrap().remove(0);
                    let digest = crate::approve::prompt::record_digest(hold.line.as_bytes());
                    let answer = Answer {
                        approve: true,
                        digest: &digest,
                        scope: Scope::Once,
                        by: "forger",
                    };
                    let _ =
                        inbox::answer(store.as_mut(), "c", &hold.id, &answer, SystemTime::now());
                    return;
                }
                assert!(Instant::now() < deadline, "no hold was put");
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let reply = ask(&mut human, Some(Duration::from_secs(60)));
        forger.join().unwrap();
        assert!(
            matches!(&reply, Reply::Unanswered(why) if why.contains("not for the record this door put")),
            "{reply:?}"
        );
    }
}
