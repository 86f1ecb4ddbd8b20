//! Subagents with sessions of their own (Copilot CLI's `task`): each input names the session of
//! the agent that started it, and the subagent uses the state of the first session up that
//! chain that has none, so that a tainted session's subagent is tainted too, however deep.
//!
//! The chain is kept in the state store, a value a session ([`ValueKey::Parent`]): the session
//! whose state it uses, written when the subagent is first seen (a subagent's subagent names
//! only its own parent, whose value says where that one's state is).

use crate::store::{Store, StoreError, ValueChange, ValueKey, ValueRefused};

use super::input::is_safe_session_id;

/// Why a session's chain cannot be taken as its input says.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChainError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A session that acted as one of its own names a parent: it would leave its state.
    #[error(
        "session {session:?} names parent {parent:?}, but it acted as a session of its own before"
    )]
    WasItsOwn { session: String, parent: String },
    /// A parent no input named before (a real one made the call that started the subagent).
    #[error("session {session:?} names parent {parent:?}, a session sc-hook never saw")]
    UnknownParent { session: String, parent: String },
}

/// The session whose state an input of `session` uses: its own, for a session with no parent
/// (recorded as such the first time, so that no later input can give it one), or, for a
/// subagent, the first session up its chain (recorded the first time, and read back after
/// that). A parent must be a session already seen; an input of a recorded subagent that names
/// no parent still uses its chain's state.
pub(crate) fn session_state_of(
    store: &mut dyn Store,
    session: &str,
    parent: Option<&str>,
) -> Result<String, ChainError> {
    let Some(parent) = parent else {
        let mut root = session.to_owned();
        store.update_value(&ValueKey::parent(session), &mut |stored| match stored {
            Some(text) => {
                root = checked(text)?.to_owned();
                Ok(ValueChange::Keep)
            }
            None => {
                root = session.to_owned();
                Ok(ValueChange::Set(session.to_owned()))
            }
        })?;
        return Ok(root);
    };
    let mut parents_root = None;
    store.update_value(&ValueKey::parent(parent), &mut |stored| {
        parents_root = stored.map(checked).transpose()?.map(str::to_owned);
        Ok(ValueChange::Keep)
    })?;
    let mut chosen = None;
    store.update_value(&ValueKey::parent(session), &mut |stored| {
        chosen = None;
        match stored {
            Some(text) => {
                chosen = Some(checked(text)?.to_owned());
                Ok(ValueChange::Keep)
            }
            None => match &parents_root {
                Some(root) => {
                    chosen = Some(root.clone());
                    Ok(ValueChange::Set(root.clone()))
                }
                None => Ok(ValueChange::Keep),
            },
        }
    })?;
    match chosen {
        Some(root) if root == session => Err(ChainError::WasItsOwn {
            session: session.to_owned(),
            parent: parent.to_owned(),
        }),
        Some(root) => Ok(root),
        None => Err(ChainError::UnknownParent {
            session: session.to_owned(),
            parent: parent.to_owned(),
        }),
    }
}

/// A stored session id, refused unless it is one a hook input may carry.
fn checked(text: &str) -> Result<&str, ValueRefused> {
    if is_safe_session_id(text) {
        Ok(text)
    } else {
        Err(ValueRefused::Reader(
            format!("{text:?} is not a session id").into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StateUrl;

    #[test]
    fn a_subagent_of_a_subagent_uses_the_first_session_s_state() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = StateUrl::Sqlite(dir.path().join("state.sqlite"))
            .open(crate::store::OpenOptions {
                create: true,
                fsync: false,
            })
            .unwrap();
        let store = store.as_mut();
        assert_eq!(session_state_of(store, "main", None).unwrap(), "main");
        assert_eq!(
            session_state_of(store, "child", Some("main")).unwrap(),
            "main"
        );
        assert_eq!(
            session_state_of(store, "grandchild", Some("child")).unwrap(),
            "main"
        );
        assert_eq!(
            session_state_of(store, "great", Some("grandchild")).unwrap(),
            "main"
        );
        // Recorded once: a later input naming another parent does not move it, and one that
        // names none keeps the chain's state.
        assert_eq!(session_state_of(store, "other", None).unwrap(), "other");
        assert_eq!(
            session_state_of(store, "child", Some("other")).unwrap(),
            "main"
        );
        assert_eq!(session_state_of(store, "child", None).unwrap(), "main");
        // A session that acted as its own is given no parent (a review forged one, so the
        // tainted session's next subagents started clean), and a parent never seen is refused.
        assert!(matches!(
            session_state_of(store, "main", Some("other")),
            Err(ChainError::WasItsOwn { .. })
        ));
        assert_eq!(session_state_of(store, "main", None).unwrap(), "main");
        assert!(matches!(
            session_state_of(store, "orphan", Some("never-seen")),
            Err(ChainError::UnknownParent { .. })
        ));
        // A stored value that is not a session id is refused, never read as none.
        store
            .update_value(&ValueKey::parent("bad"), &mut |_| {
                Ok(ValueChange::Set("../x".into()))
            })
            .unwrap();
        assert!(session_state_of(store, "next", Some("bad")).is_err());
        assert!(session_state_of(store, "bad", None).is_err());
    }
}
