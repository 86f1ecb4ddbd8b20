//! A list of records kept as one value of a store ([`update_list`]): a crew's grants, a crew's
//! inbox. The list is read strictly by its owner's reader, changed, and written back as one
//! atomic step ([`Store::update_value`]); what the reader refuses is never read as an empty list.

use super::backend::{Store, StoreError, ValueRefused};
use super::key::ValueKey;
use super::ValueChange;

/// Why a list could not be updated.
#[derive(Debug)]
pub(crate) enum ListFailure<E> {
    /// What is stored is not what this program writes: the store, and the reader's words.
    Refused { store: String, why: String },
    /// The store could not be used.
    Store(StoreError),
    /// The change (or the writer) refused.
    Change(E),
}

/// A change of a list: what it gives back, and whether it changed the list (to be written).
pub(crate) type ListChange<'a, T, R, E> = dyn FnMut(&mut Vec<T>) -> Result<(R, bool), E> + 'a;

/// A reader's or a change's words, carried through the store's update.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Words(String);

/// Reads the list at `key` (`read`; no value is an empty list), lets `change` change it (it
/// says whether it did), and writes it back with `write` when it did, as one atomic step:
/// `change` may run more than once, and only its last run counts.
pub(crate) fn update_list<T, R, E: std::fmt::Display, W: std::fmt::Display>(
    store: &mut dyn Store,
    key: &ValueKey,
    read: &dyn Fn(&str) -> Result<Vec<T>, W>,
    write: &dyn Fn(&[T]) -> Result<ValueChange, E>,
    change: &mut ListChange<'_, T, R, E>,
) -> Result<R, ListFailure<E>> {
    let mut refused = None;
    let mut failed = None;
    let mut out = None;
    let result = store.update_value(key, &mut |stored| {
        refused = None;
        failed = None;
        out = None;
        let mut list = match stored.map(read).transpose() {
            Ok(list) => list.unwrap_or_default(),
            Err(why) => {
                let why = why.to_string();
                refused = Some(why.clone());
                return Err(ValueRefused::Reader(Box::new(Words(why))));
            }
        };
        let written = change(&mut list).and_then(|(result, changed)| {
            out = Some(result);
            if changed {
                write(&list)
            } else {
                Ok(ValueChange::Keep)
            }
        });
        written.map_err(|err| {
            let why = Words(err.to_string());
            failed = Some(err);
            ValueRefused::Reader(Box::new(why))
        })
    });
    match result {
        Ok(()) => out.ok_or(ListFailure::Store(StoreError::NotRun)),
        Err(_) if failed.is_some() => Err(ListFailure::Change(failed.expect("just seen"))),
        Err(_) if refused.is_some() => Err(ListFailure::Refused {
            store: store.describe().to_owned(),
            why: refused.expect("just seen"),
        }),
        // Refused by the store before the reader saw it (not text).
        Err(StoreError::RefusedValue { store, why, .. }) => Err(ListFailure::Refused {
            store,
            why: why.to_string(),
        }),
        Err(err) => Err(ListFailure::Store(err)),
    }
}
