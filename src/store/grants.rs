//! Remembered approvals ([`Grant`]): a person who approved a held call let the same agent's later
//! calls through without asking again, for a while. A `call` grant covers the same tool with
//! exactly the same arguments (their [`args_digest`]); a `value` grant covers the untrusted values
//! the hold named.
//!
//! A crew's grants are one value in its state store ([`ValueKey::Grants`], the SQLite file's
//! `sc_values` row `crew/NAME/grants` or the Redis key `skeleton-crew:crew:NAME:grants`), read,
//! changed and written as one atomic step ([`Store::update_value`]), so every process of the crew
//! sees the same grants and none is lost. A grant's id is 128 random bits in hex, never given to
//! another grant. An expired grant never matches, and is removed when a match is looked for. What
//! is stored there and is not what this program writes is refused ([`GrantError::Refused`]),
//! never read as no grants.
//!
//! This module keeps grants; deciding a call by them is the doors' work.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::backend::{Store, StoreError};
use super::key::{is_safe_name, ValueKey};
use super::list::{update_list, ListFailure};
use super::ValueChange;
pub use crate::rules::grant::{
    args_digest, parse_ttl, time_text, Covers, GivenBy, Grant, GrantTtlError,
};
use crate::rules::state::unix_seconds;

/// What the stored value starts with: the format of a crew's grants.
pub const FORMAT: &str = "skeleton-crew grants 1";
/// How long a grant lasts when nothing says otherwise (`--grant-ttl`).
pub const DEFAULT_TTL: Duration = Duration::from_secs(8 * 60 * 60);
/// The most grants a crew keeps: adding one more fails (revoke some first).
pub const MAX_GRANTS: usize = 4096;
/// The most values one `value` grant endorses.
pub const MAX_VALUES: usize = 256;
/// The longest agent or tool name, endorsed value or approval id a grant holds, in bytes.
pub const MAX_TEXT: usize = 4096;

/// What a new grant is for ([`add`]).
#[derive(Debug, Clone)]
pub struct NewGrant {
    pub crew: String,
    pub agent: String,
    pub tool: String,
    pub covers: Covers,
    pub by: GivenBy,
    /// The audit id of the approval that gives it.
    pub approval: String,
}

/// Why grants could not be kept or read.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// The store could not be used.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The crew's stored grants are not what this program writes: refused, never read as none.
    #[error(
        "{store}: the grants of crew {crew:?} are not what this program writes, so they are refused rather than read as none (end them with `sc-state revoke --all`): {why}"
    )]
    Refused {
        store: String,
        crew: String,
        why: Refusal,
    },
    /// A grant that this program would not write.
    #[error("a grant is not kept: {0}")]
    Invalid(Refusal),
    /// The crew keeps [`MAX_GRANTS`] already.
    #[error("crew {crew:?} keeps {MAX_GRANTS} grants already: revoke some with `sc-state revoke`")]
    Full { crew: String },
}

/// What is wrong with stored grants, or with a grant to keep.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

/// The stored form: the format, then the grants.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    format: String,
    grants: Vec<StoredGrant>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StoredGrant {
    id: String,
    crew: String,
    agent: String,
    tool: String,
    scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    values: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kinds: Option<Vec<String>>,
    /// A `call` grant's taint sources; missing (a grant kept before they were recorded): none,
    /// so that it covers only an untainted session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sources: Option<Vec<String>>,
    by: GivenBy,
    at: String,
    expires_at: String,
    approval: String,
}

/// Whether a text may name a kind of rule: 1 to 32 of `[a-z-]`.
fn is_kind(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 32
        && text.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
}

fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Reads a time grants wrote ([`time_text`]), refusing any other spelling.
fn parse_time(text: &str) -> Option<SystemTime> {
    let time = humantime::parse_rfc3339(text).ok()?;
    (time_text(time) == text).then_some(time)
}

/// Checks a grant's parts as [`add`] and the reader both do.
fn check(grant: &Grant) -> Result<(), Refusal> {
    let fail = |why: String| Err(Refusal(why));
    if !is_lower_hex(&grant.id, 32) {
        return fail(format!(
            "the id {:?} is not 32 lowercase hex digits",
            grant.id
        ));
    }
    if !is_safe_name(&grant.crew) {
        return fail(format!("the crew {:?} is not a crew name", grant.crew));
    }
    for (what, text) in [
        ("agent", &grant.agent),
        ("tool", &grant.tool),
        ("approval", &grant.approval),
    ] {
        if text.is_empty() || text.len() > MAX_TEXT {
            return fail(format!(
                "grant {}: its {what} is empty or too long",
                grant.id
            ));
        }
    }
    match &grant.covers {
        Covers::Call { kinds, .. }
            if kinds.is_empty()
                || kinds.len() > MAX_VALUES
                || kinds.windows(2).any(|pair| pair[0] >= pair[1])
                || kinds.iter().any(|kind| !is_kind(kind)) =>
        {
            fail(format!(
                "grant {}: its kinds are none, not sorted, repeated, or not rule kinds",
                grant.id
            ))
        }
        Covers::Call { sources, .. }
            if sources.len() > MAX_VALUES
                || sources.windows(2).any(|pair| pair[0] >= pair[1])
                || sources.iter().any(|s| s.is_empty() || s.len() > MAX_TEXT) =>
        {
            fail(format!(
                "grant {}: its taint sources are too many, not sorted, repeated, empty or too long",
                grant.id
            ))
        }
        Covers::Call { digest, .. } if !is_lower_hex(digest, 64) => fail(format!(
            "grant {}: its digest is not 64 lowercase hex digits",
            grant.id
        )),
        Covers::Value { values }
            if values.is_empty()
                || values.len() > MAX_VALUES
                || values.iter().any(|v| v.is_empty() || v.len() > MAX_TEXT) =>
        {
            fail(format!(
                "grant {}: it endorses no value, more than {MAX_VALUES}, or an empty or too long one",
                grant.id
            ))
        }
        Covers::Value { values } if values.windows(2).any(|pair| pair[0] >= pair[1]) => fail(
            format!("grant {}: its values are not sorted, or repeat one", grant.id),
        ),
        _ if grant.expires_at <= grant.at => fail(format!(
            "grant {}: it expires no later than it was given",
            grant.id
        )),
        _ => Ok(()),
    }
}

impl StoredGrant {
    fn from_grant(grant: &Grant) -> StoredGrant {
        let (digest, values, kinds, sources) = match &grant.covers {
            Covers::Call {
                digest,
                kinds,
                sources,
            } => (
                Some(digest.clone()),
                None,
                Some(kinds.clone()),
                (!sources.is_empty()).then(|| sources.clone()),
            ),
            Covers::Value { values } => (None, Some(values.clone()), None, None),
        };
        StoredGrant {
            id: grant.id.clone(),
            crew: grant.crew.clone(),
            agent: grant.agent.clone(),
            tool: grant.tool.clone(),
            scope: grant.covers.scope().to_owned(),
            digest,
            values,
            kinds,
            sources,
            by: grant.by,
            at: time_text(grant.at),
            expires_at: time_text(grant.expires_at),
            approval: grant.approval.clone(),
        }
    }

    fn into_grant(self, crew: &str) -> Result<Grant, Refusal> {
        let id = self.id;
        let covers = match (
            self.scope.as_str(),
            self.digest,
            self.values,
            self.kinds,
            self.sources,
        ) {
            ("call", Some(digest), None, Some(kinds), sources) => Covers::Call {
                digest,
                kinds,
                sources: sources.unwrap_or_default(),
            },
            ("value", None, Some(values), None, None) => Covers::Value { values },
            _ => {
                return Err(Refusal(format!(
                    "grant {id:?}: a `call` grant has a digest and kinds, a `value` grant values, and nothing else"
                )))
            }
        };
        if self.crew != crew {
            return Err(Refusal(format!(
                "grant {id:?} is kept under crew {crew:?} but names crew {:?}",
                self.crew
            )));
        }
        let time = |text: &str| {
            parse_time(text).ok_or_else(|| {
                Refusal(format!("grant {id:?}: {text:?} is not a time grants write"))
            })
        };
        let grant = Grant {
            at: time(&self.at)?,
            expires_at: time(&self.expires_at)?,
            id: id.clone(),
            crew: self.crew,
            agent: self.agent,
            tool: self.tool,
            covers,
            by: self.by,
            approval: self.approval,
        };
        check(&grant)?;
        Ok(grant)
    }
}

/// Reads a crew's stored grants, refusing anything but what [`write`] writes.
fn read(crew: &str, text: &str) -> Result<Vec<Grant>, Refusal> {
    crate::strict_json::validate(text).map_err(|err| Refusal(format!("not JSON: {err}")))?;
    let stored: Stored =
        serde_json::from_str(text).map_err(|err| Refusal(format!("not grants: {err}")))?;
    if stored.format != FORMAT {
        return Err(Refusal(format!(
            "their format is {:?}, not {FORMAT:?}",
            stored.format
        )));
    }
    if stored.grants.len() > MAX_GRANTS {
        return Err(Refusal(format!("more than {MAX_GRANTS} grants")));
    }
    let mut ids = BTreeSet::new();
    let mut grants = Vec::with_capacity(stored.grants.len());
    for grant in stored.grants {
        let grant = grant.into_grant(crew)?;
        if !ids.insert(grant.id.clone()) {
            return Err(Refusal(format!("the id {:?} is given twice", grant.id)));
        }
        grants.push(grant);
    }
    Ok(grants)
}

/// The text a crew's grants are stored as; none is no value at all.
fn write(grants: &[Grant]) -> ValueChange {
    if grants.is_empty() {
        return ValueChange::Remove;
    }
    let stored = Stored {
        format: FORMAT.to_owned(),
        grants: grants.iter().map(StoredGrant::from_grant).collect(),
    };
    ValueChange::Set(serde_json::to_string(&stored).expect("grants serialize"))
}

/// A change of a crew's grants: what it gives back, and whether it changed them (to be written).
type Change<'a, R> = dyn FnMut(&mut Vec<Grant>) -> Result<(R, bool), GrantError> + 'a;

/// Reads a crew's grants, lets `change` change them, and writes them back when it says so, as one
/// atomic step ([`update_list`]: `change` may run more than once).
fn update<R>(
    store: &mut dyn Store,
    crew: &str,
    change: &mut Change<'_, R>,
) -> Result<R, GrantError> {
    let read = |text: &str| read(crew, text).map_err(|why| why.0);
    let write = |grants: &[Grant]| Ok::<_, GrantError>(write(grants));
    update_list(store, &ValueKey::grants(crew), &read, &write, change).map_err(|failure| {
        match failure {
            ListFailure::Refused { store, why } => GrantError::Refused {
                store,
                crew: crew.to_owned(),
                why: Refusal(why),
            },
            ListFailure::Store(err) => GrantError::Store(err),
            ListFailure::Change(err) => err,
        }
    })
}

fn lower_hex(bytes: &[u8]) -> String {
    crate::hex::encode(bytes)
}

/// A new grant id: 128 random bits, as 32 lowercase hex digits.
fn new_id() -> Result<String, GrantError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|err| {
        GrantError::Invalid(Refusal(format!("no random bytes for its id: {err}")))
    })?;
    Ok(lower_hex(&bytes))
}

/// Keeps a new grant, given at `now` and lasting `ttl`, with an id no grant of the crew has;
/// expired grants are removed on the way. `value` grants' values and `call` grants' kinds are
/// kept sorted, each once.
pub fn add(
    store: &mut dyn Store,
    new: NewGrant,
    now: SystemTime,
    ttl: Duration,
) -> Result<Grant, GrantError> {
    let mut grant = build(new, now, ttl)?;
    let crew = grant.crew.clone();
    update(store, &crew, &mut |grants| keep(grants, &mut grant, now))
}

/// Keeps a new grant in a process's own list, as [`add`] keeps it in a store: for a door that
/// has no store, whose grants end with it.
pub fn in_memory(
    grants: &mut Vec<Grant>,
    new: NewGrant,
    now: SystemTime,
    ttl: Duration,
) -> Result<Grant, GrantError> {
    let mut grant = build(new, now, ttl)?;
    keep(grants, &mut grant, now).map(|(grant, _)| grant)
}

/// A new grant, checked, with a fresh id.
fn build(new: NewGrant, now: SystemTime, ttl: Duration) -> Result<Grant, GrantError> {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(unix_seconds(now));
    let covers = match new.covers {
        Covers::Value { values } => Covers::Value {
            values: values
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        },
        Covers::Call {
            digest,
            kinds,
            sources,
        } => Covers::Call {
            digest,
            kinds: kinds
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            sources: sources
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        },
    };
    let grant = Grant {
        id: new_id()?,
        crew: new.crew,
        agent: new.agent,
        tool: new.tool,
        covers,
        by: new.by,
        at,
        // Whole seconds, as stored; at least one.
        expires_at: at + Duration::from_secs(ttl.as_secs().max(1)),
        approval: new.approval,
    };
    check(&grant).map_err(GrantError::Invalid)?;
    Ok(grant)
}

/// Adds `grant` to a crew's grants (expired ones removed), with an id none of them has.
fn keep(
    grants: &mut Vec<Grant>,
    grant: &mut Grant,
    now: SystemTime,
) -> Result<(Grant, bool), GrantError> {
    grants.retain(|g| g.is_live(now));
    if grants.len() >= MAX_GRANTS {
        return Err(GrantError::Full {
            crew: grant.crew.clone(),
        });
    }
    while grants.iter().any(|g| g.id == grant.id) {
        grant.id = new_id()?;
    }
    grants.push(grant.clone());
    Ok((grant.clone(), true))
}

/// A crew's live grants at `now`, oldest first (nothing is written).
pub fn list(store: &mut dyn Store, crew: &str, now: SystemTime) -> Result<Vec<Grant>, GrantError> {
    // One read (sc-gate reads them once a batch): on a server, one round trip, not an update's.
    let text = store.read_value(&ValueKey::grants(crew))?;
    live(store.describe(), crew, text.as_deref(), now)
}

/// The grants live at `now` in `text`, the crew's stored grants as read from `store` (`None`:
/// there are none). Grants that are not what this program writes are refused.
pub fn live(
    store: &str,
    crew: &str,
    text: Option<&str>,
    now: SystemTime,
) -> Result<Vec<Grant>, GrantError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let grants = read(crew, text).map_err(|why| GrantError::Refused {
        store: store.to_owned(),
        crew: crew.to_owned(),
        why,
    })?;
    Ok(grants.into_iter().filter(|g| g.is_live(now)).collect())
}

/// Ends the grant `id` of a crew: the grant, or `None` when the crew has no such grant.
pub fn revoke(store: &mut dyn Store, crew: &str, id: &str) -> Result<Option<Grant>, GrantError> {
    update(store, crew, &mut |grants| {
        let Some(at) = grants.iter().position(|g| g.id == id) else {
            return Ok((None, false));
        };
        Ok((Some(grants.remove(at)), true))
    })
}

/// What [`revoke_all`] ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RevokedAll {
    /// The grants that were still live.
    pub ended: Vec<Grant>,
    /// Why the stored grants could not be read, when they could not: they are removed all the
    /// same (ending every grant can only make a door ask more).
    pub unreadable: Option<Refusal>,
}

/// Ends every grant of a crew, whatever is stored: those that were still live at `now` are
/// given back, and stored grants that are not what this program writes are removed and said so.
pub fn revoke_all(
    store: &mut dyn Store,
    crew: &str,
    now: SystemTime,
) -> Result<RevokedAll, GrantError> {
    let mut revoked = RevokedAll::default();
    store.update_value(&ValueKey::grants(crew), &mut |stored| {
        revoked = RevokedAll::default();
        let Some(text) = stored else {
            return Ok(ValueChange::Keep);
        };
        match read(crew, text) {
            Ok(grants) => revoked.ended = grants.into_iter().filter(|g| g.is_live(now)).collect(),
            Err(why) => revoked.unreadable = Some(why),
        }
        Ok(ValueChange::Remove)
    })?;
    Ok(revoked)
}

/// The live grant of `crew` that covers a call ([`Grant::covers`]), the oldest first; expired
/// grants are removed on the way (nothing is written when none has expired).
pub fn matching(
    store: &mut dyn Store,
    crew: &str,
    agent: &str,
    tool: &str,
    digest: Option<&str>,
    values: &[&str],
    now: SystemTime,
) -> Result<Option<Grant>, GrantError> {
    update(store, crew, &mut |grants| {
        let before = grants.len();
        grants.retain(|g| g.is_live(now));
        let found = grants
            .iter()
            .find(|g| g.covers(agent, tool, digest, values))
            .cloned();
        Ok((found, grants.len() != before))
    })
}

#[cfg(test)]
#[path = "grants_tests.rs"]
mod tests;
