//! Subagents with sessions of their own (Copilot CLI's `task`): each input names the session of
//! the agent that started it, and the subagent uses the state of the first session up that
//! chain that has none, so that a tainted session's subagent is tainted too, however deep.
//!
//! The chain is kept in the state store, a value a session ([`ValueKey::Parent`]): the session
//! whose state it uses, written when the subagent is first seen (a subagent's subagent names
//! only its own parent, whose value says where that one's state is).

use crate::store::{Store, StoreError, ValueChange, ValueKey, ValueRefused};

use super::input::is_safe_session_id;

/// The session whose state `session`, started by `parent`, uses: `parent`'s own, once that is
/// known, else `parent`. Recorded for `session` the first time, and read back after that.
pub(crate) fn root_session(
    store: &mut dyn Store,
    session: &str,
    parent: &str,
) -> Result<String, StoreError> {
    let mut root = parent.to_owned();
    store.update_value(&ValueKey::parent(parent), &mut |stored| {
        root = match stored {
            Some(text) => checked(text)?.to_owned(),
            None => parent.to_owned(),
        };
        Ok(ValueChange::Keep)
    })?;
    let mut chosen = root.clone();
    store.update_value(&ValueKey::parent(session), &mut |stored| match stored {
        Some(text) => {
            chosen = checked(text)?.to_owned();
            Ok(ValueChange::Keep)
        }
        None => {
            chosen = root.clone();
            Ok(ValueChange::Set(root.clone()))
        }
    })?;
    Ok(chosen)
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
        assert_eq!(root_session(store, "child", "main").unwrap(), "main");
        assert_eq!(root_session(store, "grandchild", "child").unwrap(), "main");
        assert_eq!(root_session(store, "great", "grandchild").unwrap(), "main");
        // Recorded once: a later input naming another parent does not move it.
        assert_eq!(root_session(store, "child", "other").unwrap(), "main");
        // A stored value that is not a session id is refused, never read as none.
        store
            .update_value(&ValueKey::parent("bad"), &mut |_| {
                Ok(ValueChange::Set("../x".into()))
            })
            .unwrap();
        assert!(root_session(store, "next", "bad").is_err());
    }
}
