//! Finding a call in the window by its id, in little memory: a table from a keyed hash of each id
//! to the call's number (the id itself is compared in the window), and the rare id whose hash
//! another id in the window already has, kept whole.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

/// A call id, kept inline when it is short, as the ids the stages write are.
#[derive(Clone)]
pub(super) enum CallId {
    Short {
        length: u8,
        bytes: [u8; CallId::SHORT],
    },
    Long(Box<[u8]>),
}

impl CallId {
    const SHORT: usize = 30;

    pub(super) fn new(id: &str) -> CallId {
        let id = id.as_bytes();
        if id.len() > CallId::SHORT {
            return CallId::Long(id.into());
        }
        let mut bytes = [0; CallId::SHORT];
        bytes[..id.len()].copy_from_slice(id);
        CallId::Short {
            length: id.len() as u8,
            bytes,
        }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            CallId::Short { length, bytes } => &bytes[..usize::from(*length)],
            CallId::Long(bytes) => bytes,
        }
    }

    pub(super) fn text(&self) -> String {
        // Made from a `&str`, so always UTF-8.
        String::from_utf8_lossy(self.bytes()).into_owned()
    }
}

impl PartialEq for CallId {
    fn eq(&self, other: &CallId) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for CallId {}

impl std::hash::Hash for CallId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes().hash(state);
    }
}

impl std::borrow::Borrow<[u8]> for CallId {
    fn borrow(&self) -> &[u8] {
        self.bytes()
    }
}

/// Call numbers by id hash (see the module).
#[derive(Default)]
pub(super) struct IdIndex {
    hasher: RandomState,
    by_hash: HashMap<u64, u64, BuildHasherDefault<AlreadyHashed>>,
    collided: HashMap<CallId, u64>,
}

impl IdIndex {
    /// The id's hash, keyed afresh in each process so that no log can choose collisions.
    pub(super) fn hash(&self, id: &[u8]) -> u64 {
        self.hasher.hash_one(id)
    }

    /// The number of the call whose id has this hash, if any (compare the id).
    pub(super) fn by_hash(&self, hash: u64) -> Option<u64> {
        self.by_hash.get(&hash).copied()
    }

    /// The number of a call whose hash collided.
    pub(super) fn collided(&self, id: &[u8]) -> Option<u64> {
        if self.collided.is_empty() {
            return None;
        }
        self.collided.get(id).copied()
    }

    /// Adds an id that is not in the index.
    pub(super) fn insert(&mut self, id: &CallId, hash: u64, number: u64) {
        if let Some(taken) = self.by_hash.get(&hash) {
            debug_assert_ne!(*taken, number);
            self.collided.insert(id.clone(), number);
        } else {
            self.by_hash.insert(hash, number);
        }
    }

    pub(super) fn remove(&mut self, id: &CallId, hash: u64, number: u64) {
        if self.by_hash.get(&hash) == Some(&number) {
            self.by_hash.remove(&hash);
        } else {
            self.collided.remove(id.bytes());
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_hash.len() + self.collided.len()
    }
}

/// A hasher for keys that are hashes already.
#[derive(Default)]
struct AlreadyHashed(u64);

impl Hasher for AlreadyHashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_whose_hashes_collide_are_still_told_apart() {
        let mut index = IdIndex::default();
        let (a, b) = (CallId::new("a"), CallId::new(&"b".repeat(40)));
        // As if both ids had the same hash.
        index.insert(&a, 7, 1);
        index.insert(&b, 7, 2);
        assert_eq!((index.by_hash(7), index.collided(b"a")), (Some(1), None));
        assert_eq!(index.collided(b.bytes()), Some(2));
        index.remove(&a, 7, 1);
        assert_eq!(
            (index.by_hash(7), index.collided(b.bytes())),
            (None, Some(2))
        );
        index.remove(&b, 7, 2);
        assert_eq!(index.len(), 0);
        assert_ne!(index.hash(b"a"), index.hash(b"b"));
    }
}
