//! How a state and a value are found in a store: crew names, [`StateKey`], [`ValueKey`].

use crate::rules::state::Span;
use crate::sanitize::quoted;

/// The state file's name, beside the audit log, when no `--state` is given.
pub const DEFAULT_STATE_FILE: &str = "state.sqlite";
/// The crew of sc-gate and sc-exec given `--state` without `--crew`.
pub const DEFAULT_CREW: &str = "default";
/// The longest crew name or session id.
pub(crate) const MAX_NAME_CHARS: usize = 128;

/// Whether a crew name (or a session id) may name a state: 1 to 128 of `[A-Za-z0-9._-]`, not
/// starting with a dot.
pub(crate) fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A `--crew` name (or a session id) that may not name a state ([`is_safe_name`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} is not a crew name: 1 to {MAX_NAME_CHARS} letters, digits, `.`, `_` or `-`, not starting with `.`",
    quoted(.name)
)]
pub struct BadCrewName {
    pub name: String,
}

/// Checks a `--crew` name.
pub fn crew_name(name: &str) -> Result<String, BadCrewName> {
    if is_safe_name(name) {
        Ok(name.to_owned())
    } else {
        Err(BadCrewName {
            name: name.to_owned(),
        })
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
/// [`CrewState`]: sc-hook's links of one session (the calls awaiting their `PostToolUse`, by
/// `tool_use_id`), and a crew's remembered approvals ([`crate::store::grants`]). The store keeps
/// the text as it is given; its reader validates it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueKey {
    /// sc-hook's call links of a session (a safe name, as for [`StateKey::session`]).
    Links(String),
    /// The session whose state a subagent's session uses: the first of its parents that has no
    /// parent (a safe name, as for [`StateKey::session`]).
    Parent(String),
    /// A crew's grants (a safe name, as for [`StateKey::crew`]).
    Grants(String),
    /// A crew's inbox: the holds its doors wait on ([`crate::store::inbox`]).
    Inbox(String),
    /// The single-use tokens a crew's doors have spent ([`crate::store::spent`]).
    Spent(String),
}

impl ValueKey {
    pub fn links(session_id: &str) -> ValueKey {
        ValueKey::Links(session_id.to_owned())
    }

    pub fn parent(session_id: &str) -> ValueKey {
        ValueKey::Parent(session_id.to_owned())
    }

    pub fn grants(crew: &str) -> ValueKey {
        ValueKey::Grants(crew.to_owned())
    }

    pub fn inbox(crew: &str) -> ValueKey {
        ValueKey::Inbox(crew.to_owned())
    }

    pub fn spent(crew: &str) -> ValueKey {
        ValueKey::Spent(crew.to_owned())
    }

    /// `session/ID/links`, `crew/NAME/grants` or `crew/NAME/inbox`: never a [`StateKey::path`], whose last part is
    /// `gate` or `exec`.
    pub fn path(&self) -> String {
        match self {
            ValueKey::Links(id) => format!("session/{id}/links"),
            ValueKey::Parent(id) => format!("session/{id}/parent"),
            ValueKey::Grants(crew) => format!("crew/{crew}/grants"),
            ValueKey::Inbox(crew) => format!("crew/{crew}/inbox"),
            ValueKey::Spent(crew) => format!("crew/{crew}/spent"),
        }
    }

    /// Reads a [`ValueKey::path`] back.
    pub fn parse(path: &str) -> Option<ValueKey> {
        let mut parts = path.split('/');
        let (kind, name, what) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || !is_safe_name(name) {
            return None;
        }
        match (kind, what) {
            ("session", "links") => Some(ValueKey::Links(name.to_owned())),
            ("session", "parent") => Some(ValueKey::Parent(name.to_owned())),
            ("crew", "grants") => Some(ValueKey::Grants(name.to_owned())),
            ("crew", "inbox") => Some(ValueKey::Inbox(name.to_owned())),
            ("crew", "spent") => Some(ValueKey::Spent(name.to_owned())),
            _ => None,
        }
    }

    /// How a person is told which value this is: `the call links of session "abc"`, `the
    /// grants of crew "payments"`.
    pub fn describe(&self) -> String {
        match self {
            ValueKey::Links(id) => format!("the call links of session {}", quoted(id)),
            ValueKey::Parent(id) => format!("the parent session of session {}", quoted(id)),
            ValueKey::Grants(crew) => format!("the grants of crew {}", quoted(crew)),
            ValueKey::Inbox(crew) => format!("the inbox of crew {}", quoted(crew)),
            ValueKey::Spent(crew) => {
                format!("the spent single-use tokens of crew {}", quoted(crew))
            }
        }
    }

    /// What a person can do about a value that was refused.
    pub fn remedy(&self) -> &'static str {
        match self {
            ValueKey::Links(_) | ValueKey::Parent(_) => {
                "reset the session with `sc-state reset --session`"
            }
            ValueKey::Grants(_) => "end them with `sc-state revoke --all`",
            ValueKey::Inbox(_) => "stop the crew's doors and inboxes, then remove the value",
            ValueKey::Spent(_) => "stop the crew's doors, then remove the value",
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
