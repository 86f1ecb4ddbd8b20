//! A crew's inbox: the holds its doors (`sc-approve --inbox`, `sc-mcp --inbox`) wait on, kept in
//! the crew's state store so that one `sc-inbox` (or several) can show them on one page and answer
//! them, from any machine that reaches the store.
//!
//! The inbox is one value in the store ([`ValueKey::Inbox`], the SQLite file's `sc_values` row
//! `crew/NAME/inbox` or the Redis key `skeleton-crew:crew:NAME:inbox`), read, changed and written
//! as one atomic step ([`Store::update_value`]). A door puts a hold there ([`put`]) with the
//! record line exactly and its digest, and while it waits it refreshes the hold's heartbeat
//! ([`heartbeat`]); an inbox answers it ([`answer`]) in one atomic step that succeeds only when
//! the hold is pending, not expired, its door's heartbeat is fresh ([`STALE_AFTER`]) and the
//! answer's digest is the record's: of two inboxes answering one hold, exactly one wins. The door
//! then takes the answer and the hold leaves the inbox ([`finish`]).
//!
//! Everything is bounded: at most [`MAX_HOLDS`] holds a crew, [`MAX_LINE_BYTES`] a record line,
//! [`MAX_BYTES`] in all. Ended holds nobody collected, and pending ones whose door has been gone
//! for long, are removed on every change. What is stored there and is not what this program
//! writes is refused ([`InboxError::Refused`]), never read as an empty inbox.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::backend::{Store, StoreError};
use super::key::{is_safe_name, ValueKey};
use super::list::{update_list, ListFailure};
use super::ValueChange;
use crate::record::Scope;

/// What the stored value starts with: the format of a crew's inbox.
pub const FORMAT: &str = "skeleton-crew inbox 1";
/// The most holds a crew's inbox keeps: a door whose hold finds it full declines.
pub const MAX_HOLDS: usize = 256;
/// The longest record line a hold carries, in bytes.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The most bytes the stored inbox may take.
pub const MAX_BYTES: usize = 16 << 20;
/// The longest host name, answerer or reason a hold carries, in bytes.
pub const MAX_TEXT: usize = 1024;
/// How often a waiting door refreshes its heartbeat, at least.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);
/// A door whose heartbeat is older than this is gone: its hold is withdrawn, never answered.
pub const STALE_AFTER: Duration = Duration::from_secs(5);
/// How long an ended hold stays for its door to collect it.
pub const ENDED_KEPT: Duration = Duration::from_secs(10 * 60);
/// A pending hold whose door has been gone this long is removed, whether an inbox saw it or not.
pub const FORGOTTEN_AFTER: Duration = Duration::from_secs(60 * 60);

/// Which door put a hold in the inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Door {
    #[serde(rename = "sc-approve")]
    Approve,
    #[serde(rename = "sc-mcp")]
    Mcp,
}

impl Door {
    pub fn as_str(self) -> &'static str {
        match self {
            Door::Approve => "sc-approve",
            Door::Mcp => "sc-mcp",
        }
    }
}

/// Where a hold stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HoldState {
    /// Waiting for an answer.
    Pending,
    Approved,
    Declined,
    /// Nobody answered in time (the door's timeout, or the inbox's).
    Expired,
    /// Taken off the inbox unanswered (its door is gone).
    Withdrawn,
}

impl HoldState {
    pub fn as_str(self) -> &'static str {
        match self {
            HoldState::Pending => "pending",
            HoldState::Approved => "approved",
            HoldState::Declined => "declined",
            HoldState::Expired => "expired",
            HoldState::Withdrawn => "withdrawn",
        }
    }
}

/// A hold in a crew's inbox. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InboxHold {
    /// 32 lowercase hex digits (128 random bits).
    pub id: String,
    pub door: Door,
    /// The waiting door's process id, on `host`.
    pub pid: u32,
    pub host: String,
    /// The verdict record's line exactly as the door read it, without its newline.
    pub line: String,
    /// The SHA-256 (lowercase hex) of `line`: what an answer is bound to.
    pub digest: String,
    /// The scopes a yes may take, `once` first.
    pub scopes: Vec<Scope>,
    pub created: u64,
    /// When the door stops waiting; `None` waits for as long as the door lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    /// When the door last said it still waits.
    pub heartbeat: u64,
    pub state: HoldState,
    /// The scope an approval was given with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// Who answered, expired or withdrew it (`sc-inbox 123 on host`, `the door`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Why it ended unanswered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<u64>,
}

impl InboxHold {
    /// Whether its door's heartbeat is fresh at `now`.
    pub fn door_alive(&self, now: u64) -> bool {
        now.saturating_sub(self.heartbeat) <= millis_of(STALE_AFTER)
    }

    /// Whether its time is up at `now`.
    pub fn is_due(&self, now: u64) -> bool {
        self.expires.is_some_and(|at| at <= now)
    }
}

/// What a door puts in the inbox ([`put`]).
#[derive(Debug, Clone)]
pub struct NewHold {
    pub door: Door,
    pub pid: u32,
    pub host: String,
    pub line: String,
    pub scopes: Vec<Scope>,
    /// How long the door waits; `None` for as long as it lives.
    pub timeout: Option<Duration>,
}

/// Why the inbox could not be kept or read.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    /// The store could not be used.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The crew's stored inbox is not what this program writes: refused, never read as empty.
    #[error(
        "{store}: the inbox of crew {crew:?} is not what this program writes, so it is refused rather than read as empty (stop the crew's doors and inboxes, then remove the value `crew/{crew}/inbox`): {why}"
    )]
    Refused {
        store: String,
        crew: String,
        why: Refusal,
    },
    /// A hold this program would not keep.
    #[error("the hold is not put in the inbox: {0}")]
    Invalid(Refusal),
    /// The crew's inbox is full.
    #[error("the inbox of crew {crew:?} holds {MAX_HOLDS} holds, or {MAX_BYTES} bytes, already")]
    Full { crew: String },
}

/// What is wrong with a stored inbox, or with a hold to keep.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

/// Why an answer was not taken ([`answer`]): the page answers it with 409.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Conflict(pub String);

/// The stored form: the format, then the holds.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    format: String,
    holds: Vec<InboxHold>,
}

/// A time as Unix milliseconds.
pub fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

fn millis_of(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn digest_of(line: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::hex::encode(Sha256::digest(line.as_bytes()))
}

/// Checks a hold's parts as [`put`] and the reader both do.
fn check(hold: &InboxHold) -> Result<(), Refusal> {
    let fail = |why: String| Err(Refusal(why));
    if !is_lower_hex(&hold.id, 32) {
        return fail(format!(
            "the id {:?} is not 32 lowercase hex digits",
            hold.id
        ));
    }
    let id = &hold.id;
    if hold.line.is_empty() || hold.line.len() > MAX_LINE_BYTES || hold.line.contains('\n') {
        return fail(format!(
            "hold {id}: its record line is empty, over {MAX_LINE_BYTES} bytes, or more than a line"
        ));
    }
    if hold.digest != digest_of(&hold.line) {
        return fail(format!("hold {id}: its digest is not its record line's"));
    }
    let texts = [Some(&hold.host), hold.by.as_ref(), hold.why.as_ref()];
    if hold.host.is_empty() || texts.into_iter().flatten().any(|t| t.len() > MAX_TEXT) {
        return fail(format!(
            "hold {id}: a host, answerer or reason is empty or too long"
        ));
    }
    if hold.scopes.first() != Some(&Scope::Once)
        || hold.scopes.iter().collect::<BTreeSet<_>>().len() != hold.scopes.len()
    {
        return fail(format!(
            "hold {id}: its scopes do not start with `once`, or repeat one"
        ));
    }
    let answered = matches!(hold.state, HoldState::Approved);
    if answered != hold.scope.is_some() || hold.scope.is_some_and(|s| !hold.scopes.contains(&s)) {
        return fail(format!(
            "hold {id}: an approval has a scope it offers, and nothing else has one"
        ));
    }
    let ended = hold.state != HoldState::Pending;
    if ended != hold.ended.is_some() || ended != hold.by.is_some() {
        return fail(format!(
            "hold {id}: an ended hold says when and by whom, and a pending one neither"
        ));
    }
    if hold.expires.is_some_and(|at| at <= hold.created) || hold.heartbeat < hold.created {
        return fail(format!("hold {id}: its times are out of order"));
    }
    Ok(())
}

/// Reads a crew's stored inbox, refusing anything but what [`write`] writes.
fn read(text: &str) -> Result<Vec<InboxHold>, Refusal> {
    crate::strict_json::validate(text).map_err(|err| Refusal(format!("not JSON: {err}")))?;
    let stored: Stored =
        serde_json::from_str(text).map_err(|err| Refusal(format!("not an inbox: {err}")))?;
    if stored.format != FORMAT {
        return Err(Refusal(format!(
            "its format is {:?}, not {FORMAT:?}",
            stored.format
        )));
    }
    if stored.holds.len() > MAX_HOLDS || text.len() > MAX_BYTES {
        return Err(Refusal(format!(
            "more than {MAX_HOLDS} holds, or {MAX_BYTES} bytes"
        )));
    }
    let mut ids = BTreeSet::new();
    for hold in &stored.holds {
        check(hold)?;
        if !ids.insert(hold.id.as_str()) {
            return Err(Refusal(format!("the id {:?} is given twice", hold.id)));
        }
    }
    Ok(stored.holds)
}

fn text_of(holds: &[InboxHold]) -> String {
    let stored = Stored {
        format: FORMAT.to_owned(),
        holds: holds.to_vec(),
    };
    serde_json::to_string(&stored).expect("an inbox serializes")
}

/// The text a crew's inbox is stored as; none is no value at all.
fn write(holds: &[InboxHold]) -> ValueChange {
    if holds.is_empty() {
        return ValueChange::Remove;
    }
    ValueChange::Set(text_of(holds))
}

/// Removes the ended holds kept long enough, and the pending ones whose door is long gone.
/// Returns whether it removed any.
fn prune(holds: &mut Vec<InboxHold>, now: u64) -> bool {
    let before = holds.len();
    holds.retain(|hold| match hold.ended {
        Some(ended) => now.saturating_sub(ended) <= millis_of(ENDED_KEPT),
        None => now.saturating_sub(hold.heartbeat) <= millis_of(FORGOTTEN_AFTER),
    });
    holds.len() != before
}

/// A change of a crew's inbox: what it gives back, and whether it changed it (to be written).
type Change<'a, R> = dyn FnMut(&mut Vec<InboxHold>) -> Result<(R, bool), InboxError> + 'a;

/// Reads a crew's inbox, lets `change` change it, and writes it back when it says so, as one
/// atomic step ([`update_list`]: `change` may run more than once). Old holds are pruned on every
/// change written, and no inbox is written that its reader would refuse (over [`MAX_BYTES`]):
/// every door of the crew would then decline until the value is removed by hand.
fn update<R>(
    store: &mut dyn Store,
    crew: &str,
    now: u64,
    change: &mut Change<'_, R>,
) -> Result<R, InboxError> {
    let read = |text: &str| read(text).map_err(|why| why.0);
    let write = |holds: &[InboxHold]| match write(holds) {
        ValueChange::Set(text) if text.len() > MAX_BYTES => Err(InboxError::Full {
            crew: crew.to_owned(),
        }),
        written => Ok(written),
    };
    let mut pruning = |holds: &mut Vec<InboxHold>| {
        let (result, changed) = change(holds)?;
        let pruned = changed && prune(holds, now);
        Ok((result, changed || pruned))
    };
    update_list(store, &ValueKey::inbox(crew), &read, &write, &mut pruning).map_err(|failure| {
        match failure {
            ListFailure::Refused { store, why } => InboxError::Refused {
                store,
                crew: crew.to_owned(),
                why: Refusal(why),
            },
            ListFailure::Store(err) => InboxError::Store(err),
            ListFailure::Change(err) => err,
        }
    })
}

/// A new hold id: 128 random bits, as 32 lowercase hex digits.
fn new_id() -> Result<String, InboxError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|err| {
        InboxError::Invalid(Refusal(format!("no random bytes for its id: {err}")))
    })?;
    Ok(crate::hex::encode(bytes))
}

/// Puts a door's hold in the crew's inbox, pending, at `now`, with an id no hold of the inbox has.
pub fn put(
    store: &mut dyn Store,
    crew: &str,
    new: NewHold,
    now: SystemTime,
) -> Result<InboxHold, InboxError> {
    if !is_safe_name(crew) {
        return Err(InboxError::Invalid(Refusal(format!(
            "{crew:?} is not a crew name"
        ))));
    }
    let now = millis(now);
    let mut hold = InboxHold {
        id: new_id()?,
        door: new.door,
        pid: new.pid,
        host: new.host,
        digest: digest_of(&new.line),
        line: new.line,
        scopes: new.scopes,
        created: now,
        expires: new
            .timeout
            .map(|timeout| now.saturating_add(millis_of(timeout).max(1))),
        heartbeat: now,
        state: HoldState::Pending,
        scope: None,
        by: None,
        why: None,
        ended: None,
    };
    check(&hold).map_err(InboxError::Invalid)?;
    update(store, crew, now, &mut |holds| {
        prune(holds, now);
        // Room for the line (escaped, and its display), and for what every hold's answer,
        // withdrawal or expiry adds later (each under 512 bytes).
        let bytes = text_of(holds).len() + hold.line.len() * 2 + 1024 + MAX_HOLDS * 512;
        if holds.len() >= MAX_HOLDS || bytes > MAX_BYTES {
            return Err(InboxError::Full {
                crew: crew.to_owned(),
            });
        }
        while holds.iter().any(|h| h.id == hold.id) {
            hold.id = new_id()?;
        }
        holds.push(hold.clone());
        Ok((hold.clone(), true))
    })
}

/// The door's look at its hold: the hold as it stands (`None` when it is no longer in the inbox),
/// its heartbeat refreshed first when it is pending and the last one is [`HEARTBEAT_EVERY`] old
/// (nothing is written otherwise).
pub fn heartbeat(
    store: &mut dyn Store,
    crew: &str,
    id: &str,
    now: SystemTime,
) -> Result<Option<InboxHold>, InboxError> {
    let now = millis(now);
    update(store, crew, now, &mut |holds| {
        let Some(hold) = holds.iter_mut().find(|h| h.id == id) else {
            return Ok((None, false));
        };
        let due = now.saturating_sub(hold.heartbeat) >= millis_of(HEARTBEAT_EVERY);
        let beat = hold.state == HoldState::Pending && due;
        if beat {
            hold.heartbeat = now;
        }
        Ok((Some(hold.clone()), beat))
    })
}

/// The door takes its hold out of the inbox: the hold as it ended, or `None` when it was no
/// longer there. A hold still pending ends as expired (`why`), by the door; an answer given
/// before stands.
pub fn finish(
    store: &mut dyn Store,
    crew: &str,
    id: &str,
    why: &str,
    now: SystemTime,
) -> Result<Option<InboxHold>, InboxError> {
    let now = millis(now);
    update(store, crew, now, &mut |holds| {
        let Some(at) = holds.iter().position(|h| h.id == id) else {
            return Ok((None, false));
        };
        let mut hold = holds.remove(at);
        if hold.state == HoldState::Pending {
            hold.state = HoldState::Expired;
            hold.why = Some(cut(why));
            hold.by = Some("the door".to_owned());
            hold.ended = Some(now);
        }
        Ok((Some(hold), true))
    })
}

/// The crew's holds as they stand, oldest first (nothing is written).
pub fn list(store: &mut dyn Store, crew: &str) -> Result<Vec<InboxHold>, InboxError> {
    update(store, crew, 0, &mut |holds| Ok((holds.clone(), false)))
}

/// An answer to a hold, as an inbox gives it ([`answer`]).
#[derive(Debug, Clone)]
pub struct Answer<'a> {
    pub approve: bool,
    /// The digest of the record line the person was shown.
    pub digest: &'a str,
    /// How far a yes reaches; a scope the hold does not offer is taken as `once`.
    pub scope: Scope,
    /// Who answers (`sc-inbox 123 on host`).
    pub by: &'a str,
}

/// Answers a hold, in one atomic step that takes it only if the hold is pending, not expired, its
/// door's heartbeat is fresh and the digest is its record's: the hold as answered, or why not.
pub fn answer(
    store: &mut dyn Store,
    crew: &str,
    id: &str,
    answer: &Answer<'_>,
    now: SystemTime,
) -> Result<Result<InboxHold, Conflict>, InboxError> {
    let now = millis(now);
    update(store, crew, now, &mut |holds| {
        let conflict = |why: &str| Ok((Err(Conflict(why.to_owned())), false));
        let Some(hold) = holds.iter_mut().find(|h| h.id == id) else {
            return conflict("the hold is no longer in the crew's inbox");
        };
        match hold.state {
            HoldState::Pending => {}
            HoldState::Approved | HoldState::Declined => {
                return conflict("the hold was already answered")
            }
            HoldState::Expired => return conflict("the hold has expired: it was declined"),
            HoldState::Withdrawn => return conflict("the hold was withdrawn: it was declined"),
        }
        if hold.is_due(now) {
            return conflict("the hold has expired: it was declined");
        }
        if !hold.door_alive(now) {
            return conflict("the door that holds the call is gone: it was declined");
        }
        if answer.digest != hold.digest {
            return conflict("the digest is not that of this hold's record");
        }
        hold.state = if answer.approve {
            HoldState::Approved
        } else {
            HoldState::Declined
        };
        hold.scope = answer.approve.then(|| {
            if hold.scopes.contains(&answer.scope) {
                answer.scope
            } else {
                Scope::Once
            }
        });
        hold.by = Some(cut(answer.by));
        hold.ended = Some(now);
        Ok((Ok(hold.clone()), true))
    })
}

/// Ends a pending hold unanswered, as expired or withdrawn (an inbox's `--timeout`, a door that is
/// gone), by `by`, with `why`. Returns the hold as it ended, or `None` when it was not pending.
pub fn end(
    store: &mut dyn Store,
    crew: &str,
    id: &str,
    state: HoldState,
    by: &str,
    why: &str,
    now: SystemTime,
) -> Result<Option<InboxHold>, InboxError> {
    debug_assert!(matches!(state, HoldState::Expired | HoldState::Withdrawn));
    let now = millis(now);
    update(store, crew, now, &mut |holds| {
        let Some(hold) = holds
            .iter_mut()
            .find(|h| h.id == id && h.state == HoldState::Pending)
        else {
            return Ok((None, false));
        };
        hold.state = state;
        hold.by = Some(cut(by));
        hold.why = Some(cut(why));
        hold.ended = Some(now);
        Ok((Some(hold.clone()), true))
    })
}

/// A text cut to [`MAX_TEXT`] bytes, on a character boundary.
fn cut(text: &str) -> String {
    let mut end = text.len().min(MAX_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
#[path = "inbox_tests.rs"]
mod tests;
