//! Where a crew's state (taint and spend, [`CrewState`]) lives between decisions: in the deciding
//! process's memory, or in a store that the processes of one crew share. Two stores sit behind
//! one trait, [`Store`]:
//!
//! - [`sqlite`]: an embedded SQLite database (WAL), for the processes of one machine; the
//!   default for sc-mcp with `--crew` and for sc-hook, at `state.sqlite` beside the audit log.
//! - [`redis`]: a Redis (7 or later) or Valkey server, `redis://HOST:PORT/DB` or `rediss://` with
//!   TLS, for many machines.
//!
//! Every update is atomic: [`Store::update`] reads a state, lets the decision run on it and
//! writes it back as one step (an `IMMEDIATE` transaction; `WATCH`/`MULTI` with a retry when
//! another process wrote in between), so concurrent processes never lose an update.
//!
//! Beside the states, a store keeps text values by [`ValueKey`] (sc-hook's call links of a
//! session), read, changed and written as one atomic step the same way ([`Store::update_value`]);
//! the store keeps the text as given, and its reader refuses what it did not write.
//!
//! A state is found by its [`StateKey`]: whose it is (a crew, or one sc-hook session) and which
//! stage keeps it (the gate's decisions, or sc-exec's own re-check, which must not count a call
//! a second time). A store that cannot be reached or written, or whose content is not what this
//! program writes, is an error ([`StoreError`]); the doors then never allow the call.

pub mod admin;
pub mod redis;
pub mod sqlite;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::call::Call;
use crate::decision::{evaluate_with_state, Decision, Judgement};
use crate::policy::Policy;
use crate::sanitize::quoted;
use crate::state::{AgentState, Clock, CrewState, Span, SystemClock};

/// The state file's name, beside the audit log, when no `--state` is given.
pub const DEFAULT_STATE_FILE: &str = "state.sqlite";
/// The crew of sc-gate and sc-exec given `--state` without `--crew`.
pub const DEFAULT_CREW: &str = "default";
/// The longest crew name or session id.
pub const MAX_NAME_CHARS: usize = 128;

/// Whether a crew name (or a session id) may name a state: 1 to 128 of `[A-Za-z0-9._-]`, not
/// starting with a dot.
pub fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Checks a `--crew` name.
pub fn crew_name(name: &str) -> Result<String, String> {
    if is_safe_name(name) {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "{} is not a crew name: 1 to {MAX_NAME_CHARS} letters, digits, `.`, `_` or `-`, not starting with `.`",
            quoted(name)
        ))
    }
}

/// Whose state it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    /// A crew (`--crew`): every process of it that uses the same store.
    Crew(String),
    /// One sc-hook session without `--crew`.
    Session(String),
}

/// Which stage keeps the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum View {
    /// What the gate decided (sc-gate, sc-mcp and sc-hook share it).
    Gate,
    /// sc-exec's own re-check of the records it acts on: kept apart, since the gate already
    /// counted the same calls.
    Exec,
}

impl View {
    pub fn as_str(self) -> &'static str {
        match self {
            View::Gate => "gate",
            View::Exec => "exec",
        }
    }
}

/// A state's name in a store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateKey {
    pub owner: Owner,
    pub view: View,
}

impl StateKey {
    pub fn crew(name: &str, view: View) -> StateKey {
        StateKey {
            owner: Owner::Crew(name.to_owned()),
            view,
        }
    }

    pub fn session(id: &str) -> StateKey {
        StateKey {
            owner: Owner::Session(id.to_owned()),
            view: View::Gate,
        }
    }

    /// `crew/NAME/gate`, `crew/NAME/exec` or `session/ID/gate`: names hold no `/`, so no two
    /// keys share a path.
    pub fn path(&self) -> String {
        let (kind, name) = match &self.owner {
            Owner::Crew(name) => ("crew", name),
            Owner::Session(id) => ("session", id),
        };
        format!("{kind}/{name}/{}", self.view.as_str())
    }

    /// Reads a [`StateKey::path`] back.
    pub fn parse(path: &str) -> Option<StateKey> {
        let mut parts = path.split('/');
        let (kind, name, view) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || !is_safe_name(name) {
            return None;
        }
        let view = match view {
            "gate" => View::Gate,
            "exec" => View::Exec,
            _ => return None,
        };
        let owner = match kind {
            "crew" => Owner::Crew(name.to_owned()),
            "session" if view == View::Gate => Owner::Session(name.to_owned()),
            _ => return None,
        };
        Some(StateKey { owner, view })
    }

    /// What the state spans, as reasons name it.
    pub fn span(&self) -> Span {
        match &self.owner {
            Owner::Crew(name) => Span::Crew(name.clone()),
            Owner::Session(_) => Span::Session,
        }
    }

    /// How a person is told which state this is: `crew "payments"`, `session "abc"`, with
    /// `(as sc-exec re-checks it)` for sc-exec's.
    pub fn describe(&self) -> String {
        let owner = match &self.owner {
            Owner::Crew(name) => format!("crew {}", quoted(name)),
            Owner::Session(id) => format!("session {}", quoted(id)),
        };
        match self.view {
            View::Gate => owner,
            View::Exec => format!("{owner} (as sc-exec re-checks it)"),
        }
    }
}

/// The name of a text value a store keeps beside the states, for a door that needs more than a
/// [`CrewState`]: today sc-hook's links of one session (the calls awaiting their `PostToolUse`,
/// by `tool_use_id`). The store keeps the text as it is given; its reader validates it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueKey {
    /// sc-hook's call links of a session (a safe name, as for [`StateKey::session`]).
    Links(String),
}

impl ValueKey {
    pub fn links(session_id: &str) -> ValueKey {
        ValueKey::Links(session_id.to_owned())
    }

    /// `session/ID/links`: never a [`StateKey::path`], whose last part is `gate` or `exec`.
    pub fn path(&self) -> String {
        match self {
            ValueKey::Links(id) => format!("session/{id}/links"),
        }
    }

    /// Reads a [`ValueKey::path`] back.
    pub fn parse(path: &str) -> Option<ValueKey> {
        let mut parts = path.split('/');
        let (kind, name, what) = (parts.next()?, parts.next()?, parts.next()?);
        (parts.next().is_none() && kind == "session" && what == "links" && is_safe_name(name))
            .then(|| ValueKey::Links(name.to_owned()))
    }

    /// How a person is told which value this is: `the call links of session "abc"`.
    pub fn describe(&self) -> String {
        match self {
            ValueKey::Links(id) => format!("the call links of session {}", quoted(id)),
        }
    }
}

/// What a [`Store::update_value`] does with the value it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueChange {
    /// Leave it as it is (nothing is written).
    Keep,
    /// Write this text in its place.
    Set(String),
    /// Remove it.
    Remove,
}

/// Why a store could not be used. The doors deny with `state store unavailable: {this}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

/// A place where states are kept, shared by the processes that open it.
pub trait Store: Send {
    /// Which store this is, for the audit log and messages: `sqlite:/abs/path`, or the Redis URL
    /// without its password.
    fn describe(&self) -> &str;

    /// Reads the state at `key` (a clean one if there is none), runs `update` on it, and writes
    /// it back when it changed, all as one atomic step. `update` may run more than once (again on
    /// a fresh read, when another process wrote in between): only its last run counts.
    fn update(
        &mut self,
        key: &StateKey,
        update: &mut dyn FnMut(&mut CrewState),
    ) -> Result<(), StoreError>;

    /// The state at `key`, if there is one.
    fn read(&mut self, key: &StateKey) -> Result<Option<CrewState>, StoreError>;

    /// Every key that holds a state, in order (values are not states: they are not listed).
    fn keys(&mut self) -> Result<Vec<StateKey>, StoreError>;

    /// Reads the value at `key` (`None` if there is none), lets `update` say what becomes of it,
    /// and does so, all as one atomic step, like [`Store::update`]: `update` may run more than
    /// once (again on a fresh read), and only its last run counts. An `Err` from `update` (the
    /// value is not what its reader writes) is refused with that reason, and nothing is written.
    fn update_value(
        &mut self,
        key: &ValueKey,
        update: &mut dyn FnMut(Option<&str>) -> Result<ValueChange, String>,
    ) -> Result<(), StoreError>;
}

/// The error for a value its reader refused.
pub(crate) fn refused_value(store: &str, key: &ValueKey, why: &str) -> StoreError {
    StoreError(format!(
        "{store}: {} are not what this program writes, so they are refused rather than read as none (reset the session with `sc-state reset --session`): {why}",
        key.describe()
    ))
}

/// Reads a stored state, refusing anything but what this program writes.
pub(crate) fn parse_state(
    store: &str,
    key: &StateKey,
    bytes: &[u8],
) -> Result<CrewState, StoreError> {
    let mut state = CrewState::from_json(bytes).map_err(|why| {
        StoreError(format!(
            "{store}: the state of {} is not one this program wrote, so it is refused rather than read as clean (reset it with `sc-state reset`): {why}",
            key.describe()
        ))
    })?;
    state.span = key.span();
    Ok(state)
}

/// What `--state` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateUrl {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// `redis://…` or `rediss://…`, as given.
    Redis(String),
}

impl StateUrl {
    /// Reads a `--state` value: `redis://HOST:PORT/DB`, `rediss://…`, or a file path. Any other
    /// scheme, and a Redis URL that does not parse, is a usage error (what is wrong with it).
    pub fn parse(text: &str) -> Result<StateUrl, String> {
        let usage = |why: String| why;
        if text.is_empty() {
            return Err(usage("empty; give a file or a redis:// URL".to_owned()));
        }
        if let Some(scheme) = scheme_of(text) {
            return match scheme.to_ascii_lowercase().as_str() {
                "redis" | "rediss" => redis::check_url(text)
                    .map(|()| StateUrl::Redis(text.to_owned()))
                    .map_err(usage),
                "file" | "sqlite" => Err(usage(format!(
                    "give a SQLite file as a plain path, without `{scheme}:`"
                ))),
                _ => Err(usage(format!(
                    "unknown scheme `{scheme}:`; a state store is a SQLite file (a path), redis://HOST:PORT/DB or rediss://HOST:PORT/DB"
                ))),
            };
        }
        if text.ends_with('/') {
            return Err(usage("names a folder; give a file".to_owned()));
        }
        Ok(StateUrl::Sqlite(PathBuf::from(text)))
    }

    /// `state.sqlite` beside the audit log.
    pub fn beside(audit: &Path) -> StateUrl {
        let folder = audit
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        StateUrl::Sqlite(folder.join(DEFAULT_STATE_FILE))
    }

    /// Opens the store, creating a SQLite file (and its folder) when `create` says so, and
    /// checks that it can be used: an error here is a runtime failure (exit 1).
    pub fn open(&self, options: OpenOptions) -> Result<Box<dyn Store>, StoreError> {
        Ok(match self {
            StateUrl::Sqlite(path) => Box::new(sqlite::SqliteStore::open(path, options)?),
            StateUrl::Redis(url) => Box::new(redis::RedisStore::open(url)?),
        })
    }
}

/// How a store is opened.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Create a SQLite file that does not exist (the doors do; `sc-state` does not).
    pub create: bool,
    /// Make each SQLite commit durable on disk (`--fsync`).
    pub fsync: bool,
}

/// The scheme of a URL-like text (`redis` in `redis://…`), if it has one.
fn scheme_of(text: &str) -> Option<&str> {
    let (scheme, rest) = text.split_once(':')?;
    let well_formed = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (well_formed && rest.starts_with("//")).then_some(scheme)
}

/// The time a decision is made at, and how long a taint lasts.
#[derive(Debug, Clone)]
pub struct Timing {
    pub clock: Arc<dyn Clock>,
    /// `--taint-ttl`: a taint whose last untrusted read is older is lifted.
    pub taint_ttl: Option<Duration>,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            clock: Arc::new(SystemClock),
            taint_ttl: None,
        }
    }
}

/// A state kept in a store, as one door uses it.
pub struct Shared {
    store: Box<dyn Store>,
    key: StateKey,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("Shared")
            .field("store", &self.store.describe())
            .field("key", &self.key)
            .finish()
    }
}

impl Shared {
    pub fn new(store: Box<dyn Store>, key: StateKey) -> Shared {
        Shared { store, key }
    }

    pub fn key(&self) -> &StateKey {
        &self.key
    }

    pub fn store(&mut self) -> &mut dyn Store {
        self.store.as_mut()
    }

    pub fn describe_store(&self) -> &str {
        self.store.describe()
    }

    /// Checks, at start, that the state can be read: an unreachable store or a state that is not
    /// what this program writes stops the door before any call is decided.
    pub fn check(&mut self) -> Result<(), StoreError> {
        self.store.read(&self.key).map(drop)
    }

    /// Runs `decide` on the state, brought to the clock's time first ([`CrewState::enter`]), as
    /// one atomic update. `decide` may run more than once ([`Store::update`]).
    pub fn transact(
        &mut self,
        policy: &Policy,
        timing: &Timing,
        decide: &mut dyn FnMut(&mut CrewState, SystemTime),
    ) -> Result<(), StoreError> {
        let now = timing.clock.now();
        self.store.update(&self.key, &mut |state| {
            state.enter(policy, now, timing.taint_ttl);
            decide(state, now);
        })
    }
}

/// The judgement for a call whose state could not be read or written: never allowed.
pub fn unavailable(err: &StoreError) -> Judgement {
    Judgement {
        decision: Decision::Deny,
        reasons: vec![format!("state store unavailable: {err}")],
    }
}

/// A door's state: in memory (a stream, a process), or shared through a store.
#[derive(Debug)]
pub enum StateHandle {
    Memory(CrewState),
    Shared(Shared),
}

/// A call's judgement and the agent's state after it.
#[derive(Debug, Clone)]
pub struct Decided {
    pub judgement: Judgement,
    /// The agent's state after the call (none when the store failed).
    pub agent: Option<AgentState>,
}

impl StateHandle {
    /// Decides one call on the state and records it, as one atomic update for a shared state;
    /// a store that fails makes it a deny ([`unavailable`]).
    pub fn decide(&mut self, call: &Call, id: &str, policy: &Policy, timing: &Timing) -> Decided {
        self.decide_keeping(call, id, policy, timing, true)
    }

    /// [`StateHandle::decide`] for a stage that needs only the judgement (sc-exec's re-check):
    /// the agent's state is not copied out.
    pub fn decide_judgement(
        &mut self,
        call: &Call,
        id: &str,
        policy: &Policy,
        timing: &Timing,
    ) -> Judgement {
        self.decide_keeping(call, id, policy, timing, false)
            .judgement
    }

    fn decide_keeping(
        &mut self,
        call: &Call,
        id: &str,
        policy: &Policy,
        timing: &Timing,
        keep_agent: bool,
    ) -> Decided {
        let agent_of = |state: &CrewState| {
            if keep_agent {
                state.agent(&call.agent).cloned()
            } else {
                None
            }
        };
        match self {
            StateHandle::Memory(state) => {
                let now = timing.clock.now();
                state.enter(policy, now, timing.taint_ttl);
                let judgement = evaluate_with_state(call, policy, state);
                // In memory, a taint's time matters only to `--taint-ttl`: no other process
                // reads this state.
                let at = timing.taint_ttl.map(|_| now);
                state.record_at(call, id, &judgement, policy, at);
                Decided {
                    agent: agent_of(state),
                    judgement,
                }
            }
            StateHandle::Shared(shared) => {
                let mut decided = None;
                let result = shared.transact(policy, timing, &mut |state, now| {
                    let judgement = evaluate_with_state(call, policy, state);
                    state.record_at(call, id, &judgement, policy, Some(now));
                    decided = Some(Decided {
                        agent: agent_of(state),
                        judgement,
                    });
                });
                match (result, decided) {
                    (Ok(()), Some(decided)) => decided,
                    (Err(err), _) => Decided {
                        judgement: unavailable(&err),
                        agent: None,
                    },
                    (Ok(()), None) => Decided {
                        judgement: unavailable(&StoreError(
                            "the store did not run the decision".to_owned(),
                        )),
                        agent: None,
                    },
                }
            }
        }
    }

    /// The store and key, for the audit log, when the state is shared.
    pub fn shared(&self) -> Option<&Shared> {
        match self {
            StateHandle::Shared(shared) => Some(shared),
            StateHandle::Memory(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_urls_are_a_file_or_redis() {
        assert_eq!(
            StateUrl::parse("logs/state.sqlite").unwrap(),
            StateUrl::Sqlite(PathBuf::from("logs/state.sqlite"))
        );
        assert_eq!(
            StateUrl::parse("redis://127.0.0.1:6379/0").unwrap(),
            StateUrl::Redis("redis://127.0.0.1:6379/0".to_owned())
        );
        assert!(matches!(
            StateUrl::parse("rediss://cache.example:6380/2"),
            Ok(StateUrl::Redis(_))
        ));
        for (bad, expected) in [
            ("", "empty"),
            ("mysql://db/x", "unknown scheme `mysql:`"),
            ("http://x", "unknown scheme"),
            ("file:///tmp/x", "plain path"),
            ("redis://", "Missing hostname"),
            ("redis://host:notaport/0", "not a Redis URL"),
            ("redis://host:6379/zero", "database"),
            ("redis://host:6379/0/1", "database"),
            ("redis://host:99999/0", "not a Redis URL"),
            ("logs/", "folder"),
        ] {
            let err = StateUrl::parse(bad).unwrap_err().to_string();
            assert!(err.contains(expected), "{bad:?}: {err}");
        }
    }

    #[test]
    fn keys_round_trip_and_names_are_safe() {
        for key in [
            StateKey::crew("payments", View::Gate),
            StateKey::crew("a.b-c_d", View::Exec),
            StateKey::session("0b1e-4f.2_x"),
        ] {
            assert_eq!(StateKey::parse(&key.path()), Some(key.clone()));
        }
        for bad in [
            "crew/x",
            "crew/x/gate/y",
            "crew/../gate",
            "crew/x/other",
            "session/x/exec",
            "team/x/gate",
            "crew//gate",
        ] {
            assert_eq!(StateKey::parse(bad), None, "{bad}");
        }
        assert!(crew_name("payments").is_ok());
        for bad in ["", ".x", "a/b", "a:b", "a b", "é", &"a".repeat(129)] {
            assert!(crew_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_default_file_is_beside_the_audit_log() {
        assert_eq!(
            StateUrl::beside(Path::new("logs/audit.jsonl")),
            StateUrl::Sqlite(PathBuf::from("logs/state.sqlite"))
        );
        assert_eq!(
            StateUrl::beside(Path::new("audit.jsonl")),
            StateUrl::Sqlite(PathBuf::from("./state.sqlite"))
        );
    }
}
