//! A store in this process's memory ([`MemoryStore`]): what `sc-mcp --listen` keeps its
//! principals' states and grants in without `--crew`, so that a principal's taint outlives each
//! of its HTTP sessions (a `DELETE`, an idle timeout) for the life of the process. Every handle
//! of one store ([`Clone`]) reads and writes the same states; nothing is written anywhere else.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::backend::{Store, StoreError};
use super::key::{StateKey, ValueChange, ValueKey};
use crate::rules::state::CrewState;

#[derive(Debug, Default)]
struct Kept {
    states: BTreeMap<StateKey, CrewState>,
    values: BTreeMap<ValueKey, String>,
}

/// A store of this process only: cloning it gives another handle on the same states.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    kept: Arc<Mutex<Kept>>,
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn kept(&self) -> MutexGuard<'_, Kept> {
        // A panic elsewhere ends the process (see the binaries), so a poisoned lock's data is as
        // good as any.
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Store for MemoryStore {
    fn describe(&self) -> &str {
        "memory (this process)"
    }

    fn in_this_process_only(&self) -> bool {
        true
    }

    fn update(
        &mut self,
        key: &StateKey,
        update: &mut dyn FnMut(&mut CrewState),
    ) -> Result<(), StoreError> {
        let mut kept = self.kept();
        update(kept.states.entry(key.clone()).or_default());
        Ok(())
    }

    fn read(&mut self, key: &StateKey) -> Result<Option<CrewState>, StoreError> {
        Ok(self.kept().states.get(key).cloned())
    }

    fn keys(&mut self) -> Result<Vec<StateKey>, StoreError> {
        Ok(self.kept().states.keys().cloned().collect())
    }

    fn update_value(
        &mut self,
        key: &ValueKey,
        update: &mut dyn FnMut(Option<&str>) -> Result<ValueChange, super::ValueRefused>,
    ) -> Result<(), StoreError> {
        let mut kept = self.kept();
        let change = update(kept.values.get(key).map(String::as_str)).map_err(|why| {
            StoreError::RefusedValue {
                store: "memory (this process)".to_owned(),
                key: key.clone(),
                why,
            }
        })?;
        match change {
            ValueChange::Keep => {}
            ValueChange::Set(text) => {
                kept.values.insert(key.clone(), text);
            }
            ValueChange::Remove => {
                kept.values.remove(key);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::View;

    #[test]
    fn every_handle_of_one_store_sees_the_same_states_and_values() {
        let mut one = MemoryStore::new();
        let mut two = one.clone();
        let key = StateKey::crew("c", View::Gate);
        assert!(one.read(&key).unwrap().is_none());
        one.update(&key, &mut |state| state.crew_tainted_by = None)
            .unwrap();
        assert!(two.read(&key).unwrap().is_some());
        assert_eq!(two.keys().unwrap(), vec![key]);
        let value = ValueKey::links("s");
        one.update_value(&value, &mut |_| Ok(ValueChange::Set("x".into())))
            .unwrap();
        let mut seen = None;
        two.update_value(&value, &mut |now| {
            seen = now.map(str::to_owned);
            Ok(ValueChange::Remove)
        })
        .unwrap();
        assert_eq!(seen.as_deref(), Some("x"));
        one.update_value(&value, &mut |now| {
            assert!(now.is_none());
            Ok(ValueChange::Keep)
        })
        .unwrap();
    }
}
