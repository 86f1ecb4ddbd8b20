//! The holds on the page, in memory: each one pending until it is answered, expires or is
//! withdrawn, then kept a while as history once its program took the reply.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use axum::http::StatusCode;
use serde::Serialize;
use serde_json::value::RawValue;

use super::refusal::Refusal;
use crate::approve::Reply;

/// How many ended holds `GET /api/history` keeps, and how many bytes of them at most.
pub(super) const HISTORY_HOLDS: usize = 50;
pub(super) const HISTORY_BYTES: usize = 16 << 20;

/// A hold submitted to the page: its number there, and when it declines by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    pub(super) id: u64,
    pub(super) expires: Option<Instant>,
}

impl Ticket {
    /// The hold's number on the page and in the API (`/api/holds/ID`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// When the hold declines by itself; `None` waits forever.
    pub fn expires(&self) -> Option<Instant> {
        self.expires
    }
}

/// Where a hold on the page came from, when it came from another process (`sc-inbox`): `GET
/// /api/holds` shows its `door` and `pid`, and an answer to it is first committed through the
/// page's [`OnAnswer`], which is given `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `sc-approve` or `sc-mcp`.
    pub door: String,
    pub pid: u32,
    /// What the program that submitted the hold knows it by (the inbox's hold id).
    pub key: String,
}

/// An answer given on the page, as [`OnAnswer`] is shown it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Given<'a> {
    pub approve: bool,
    pub digest: &'a str,
    pub scope: Scope,
}

/// Called (on the server's thread, the holds locked) with a valid answer to a hold that has an
/// [`Origin`], before the page takes it: an `Err` refuses the answer with 409 and its reason, and
/// the hold stays pending on the page (`sc-inbox`: the answer is committed to the store first,
/// and one given in another inbox wins).
pub(crate) type OnAnswer =
    Box<dyn Fn(&Origin, Given<'_>) -> std::result::Result<(), String> + Send + Sync>;

use crate::record::Scope;

#[derive(Default)]
pub(super) struct Holds {
    /// The last hold number given.
    pub(super) next: u64,
    pub(super) entries: BTreeMap<u64, Entry>,
    /// How many entries have ended and been collected, and their bytes.
    pub(super) history: usize,
    pub(super) history_bytes: usize,
    /// Where the holds that came from elsewhere came from, by number.
    pub(super) origins: BTreeMap<u64, Origin>,
    /// What an answer to a hold with an [`Origin`] goes through first.
    pub(super) on_answer: Option<OnAnswer>,
}

pub(super) struct Entry {
    pub(super) digest: String,
    /// The verdict record as it came (trimmed of surrounding whitespace).
    pub(super) record: Box<RawValue>,
    /// The hold as the terminal shows it ([`Display`]), as JSON.
    pub(super) display: Box<RawValue>,
    pub(super) timeout: Option<Duration>,
    pub(super) expires: Option<(Instant, SystemTime)>,
    pub(super) state: HoldState,
    /// Why it was withdrawn, when it was.
    pub(super) withdrawn: Option<String>,
    /// Whether the program that submitted it has taken its reply (it is kept until then).
    pub(super) collected: bool,
    /// The scopes a yes may take, as the deciding door offered them.
    pub(super) scopes: Vec<Scope>,
    /// The scope the person approved with.
    pub(super) scope: Scope,
    /// What the program that asked kept of the answer ([`Kept`]), once it says.
    pub(super) kept: Option<Kept>,
    /// Whether the program that submitted it says what it kept ([`Holds::kept`]).
    pub(super) reports: bool,
}

/// What the program that asked kept of an answer: the scope (narrowed to `once` where a wider
/// one could not be kept) and the grant's id, when it gave one; and, for a yes the program
/// did not act on (sc-mcp decided the call again and denied it, or held it for a reason the
/// card did not show), why the call does not run. `passed_on`: the program does not run calls
/// (sc-approve), and passed the yes on to the stage that does, which decides the call again
/// as it runs it, so the card does not say that it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kept {
    pub scope: Scope,
    pub grant: Option<String>,
    #[serde(rename = "notRun", skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
    #[serde(rename = "passedOn", skip_serializing_if = "std::ops::Not::not")]
    pub passed_on: bool,
}

impl Entry {
    pub(super) fn bytes(&self) -> usize {
        self.record.get().len() + self.display.get().len() + 256
    }

    pub(super) fn ticket(&self, id: u64) -> Ticket {
        Ticket {
            id,
            expires: self.expires.map(|(at, _)| at),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum HoldState {
    Pending,
    Approved,
    Declined,
    Expired,
    /// Taken off the page by the program (sc-mcp: the client cancelled the call).
    Withdrawn,
}

impl Holds {
    /// Settles as expired every pending hold whose time is up; returns their tickets.
    pub(super) fn expire_due(&mut self, now: Instant) -> Vec<Ticket> {
        let mut expired = Vec::new();
        for (&id, entry) in &mut self.entries {
            let due = entry.expires.is_some_and(|(at, _)| at <= now);
            if entry.state == HoldState::Pending && due {
                entry.state = HoldState::Expired;
                expired.push(entry.ticket(id));
            }
        }
        expired
    }

    /// The reply to a settled hold, marking it taken (and so free to leave the history later).
    pub(super) fn collect(&mut self, id: u64) -> Option<Reply> {
        let Some(entry) = self.entries.get_mut(&id) else {
            return Some(Reply::ReadFailed(format!(
                "hold {id} is not known to the web page"
            )));
        };
        let digest = Some(entry.digest.clone());
        let reply = match entry.state {
            HoldState::Pending => return None,
            HoldState::Approved => Reply::Decision {
                approve: true,
                digest,
                scope: entry.scope,
            },
            HoldState::Declined => Reply::Decision {
                approve: false,
                digest,
                scope: Scope::Once,
            },
            HoldState::Expired => Reply::TimedOut(entry.timeout.unwrap_or_default()),
            HoldState::Withdrawn => Reply::NobodyToAsk(format!(
                "the hold was withdrawn from the web page: {}",
                entry.withdrawn.as_deref().unwrap_or("no reason given")
            )),
        };
        if !entry.collected {
            entry.collected = true;
            self.history += 1;
            self.history_bytes += entry.bytes();
            self.prune();
        }
        Some(reply)
    }

    /// Forgets the oldest ended holds that were collected, beyond what the history keeps.
    pub(super) fn prune(&mut self) {
        let mut gone = Vec::new();
        for (&id, entry) in &self.entries {
            if self.history <= HISTORY_HOLDS && self.history_bytes <= HISTORY_BYTES {
                break;
            }
            if self.history <= 1 {
                break;
            }
            if entry.collected {
                self.history -= 1;
                self.history_bytes -= entry.bytes();
                gone.push(id);
            }
        }
        for id in gone {
            self.entries.remove(&id);
            self.origins.remove(&id);
        }
    }

    pub(super) fn pending_json(&self, now: Instant) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Pending<'a> {
            hold: u64,
            digest: &'a str,
            record: &'a RawValue,
            expires_at: Option<String>,
            seconds_left: Option<u64>,
            display: &'a RawValue,
            /// The scopes a yes may take: `once`, and `call` or `value` where they apply.
            scopes: &'a [Scope],
            /// The door that holds it and its process id, for a hold from elsewhere.
            #[serde(skip_serializing_if = "Option::is_none")]
            door: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            pid: Option<u32>,
        }
        let pending: Vec<Pending> = self
            .entries
            .iter()
            .filter(|(_, entry)| entry.state == HoldState::Pending)
            .map(|(&hold, entry)| Pending {
                hold,
                digest: &entry.digest,
                record: &entry.record,
                expires_at: entry
                    .expires
                    .map(|(_, at)| humantime::format_rfc3339_seconds(at).to_string()),
                seconds_left: entry.expires.map(|(at, _)| {
                    let left = at.saturating_duration_since(now);
                    left.as_secs() + u64::from(left.subsec_nanos() > 0)
                }),
                display: &entry.display,
                scopes: &entry.scopes,
                door: self.origins.get(&hold).map(|origin| origin.door.as_str()),
                pid: self.origins.get(&hold).map(|origin| origin.pid),
            })
            .collect();
        serde_json::to_string(&pending).expect("holds serialize")
    }

    pub(super) fn history_json(&self) -> String {
        #[derive(Serialize)]
        struct Ended<'a> {
            hold: u64,
            digest: &'a str,
            record: &'a RawValue,
            state: HoldState,
            /// The approval's reason, as the record will carry it.
            reason: String,
            display: &'a RawValue,
            /// For an approved hold, the scope kept and the grant, once the program said.
            #[serde(skip_serializing_if = "Option::is_none")]
            kept: Option<&'a Kept>,
            /// Whether the program that holds the call says here what it did with the answer
            /// (`kept`); a door elsewhere (`sc-inbox`) says it only in its own audit log.
            reports: bool,
        }
        let ended: Vec<Ended> = self
            .entries
            .iter()
            .rev()
            .filter(|(_, entry)| entry.state != HoldState::Pending)
            .take(HISTORY_HOLDS)
            .map(|(&hold, entry)| Ended {
                hold,
                digest: &entry.digest,
                record: &entry.record,
                state: entry.state,
                reason: match entry.state {
                    HoldState::Approved => "approved on the web page".into(),
                    HoldState::Declined => "declined on the web page".into(),
                    HoldState::Withdrawn => entry.withdrawn.clone().unwrap_or_default(),
                    _ => format!(
                        "declined: no answer within {} seconds",
                        entry.timeout.unwrap_or_default().as_secs()
                    ),
                },
                display: &entry.display,
                kept: entry.kept.as_ref(),
                reports: entry.reports,
            })
            .collect();
        serde_json::to_string(&ended).expect("holds serialize")
    }

    /// Notes what the program kept of the answer to hold `id`.
    pub(super) fn kept(&mut self, id: u64, kept: Kept) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.kept = Some(kept);
        }
    }

    /// What the program kept of the answer to hold `id`, once it said.
    pub(super) fn kept_of(&self, id: u64) -> Option<Kept> {
        self.entries.get(&id)?.kept.clone()
    }

    /// Ends a pending hold as withdrawn, and marks it taken (nobody will collect it). Returns
    /// whether it was pending.
    pub(super) fn withdraw(&mut self, id: u64, why: &str) -> bool {
        let Some(entry) = self.entries.get_mut(&id) else {
            return false;
        };
        let pending = entry.state == HoldState::Pending;
        if pending {
            entry.state = HoldState::Withdrawn;
            entry.withdrawn = Some(why.to_owned());
        }
        let _ = self.collect(id);
        pending
    }

    /// Settles a pending hold with the person's answer, if it is still pending and the digest
    /// is its record's.
    pub(super) fn answer(
        &mut self,
        id: u64,
        approve: bool,
        digest: &str,
        scope: Scope,
    ) -> Result<Ticket, Refusal> {
        let Some(entry) = self.entries.get_mut(&id) else {
            return Err(Refusal::new(StatusCode::NOT_FOUND, "no such hold"));
        };
        match entry.state {
            HoldState::Pending => {}
            HoldState::Expired => {
                return Err(Refusal::new(
                    StatusCode::CONFLICT,
                    "the hold has expired: it was declined",
                ))
            }
            HoldState::Approved | HoldState::Declined => {
                return Err(Refusal::new(
                    StatusCode::CONFLICT,
                    "the hold was already answered",
                ))
            }
            HoldState::Withdrawn => {
                return Err(Refusal::new(
                    StatusCode::CONFLICT,
                    "the hold was withdrawn: it was declined",
                ))
            }
        }
        if digest != entry.digest {
            return Err(Refusal::new(
                StatusCode::CONFLICT,
                "the digest is not that of this hold's record",
            ));
        }
        if let (Some(origin), Some(on_answer)) = (self.origins.get(&id), &self.on_answer) {
            let given = Given {
                approve,
                digest,
                scope,
            };
            on_answer(origin, given).map_err(|why| Refusal::new(StatusCode::CONFLICT, why))?;
        }
        entry.state = if approve {
            HoldState::Approved
        } else {
            HoldState::Declined
        };
        entry.scope = scope;
        Ok(entry.ticket(id))
    }
}
