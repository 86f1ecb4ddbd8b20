//! An agent's name as the crew's state keys its map: ordered exactly as its text is, but
//! compared first by their first bytes in place, only then through the C library's `memcmp`.
//!
//! Every call the gate decides looks its agent up in the crew's state three times (what taints
//! it, its spend, the event's state), and a `BTreeMap<String, _>` compares its way through a
//! node with a `memcmp` call each time. Names are short and differ early, so a comparison
//! here is usually settled by the first byte.
//! The order, and so every serialized state, is the same as with `String` keys.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// An agent's name, owned: the key of [`super::state::CrewState::agents`].
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentName(String);

/// An agent's name, borrowed, for looking it up: `agents.get(Name::of(&call.agent))`.
#[derive(PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Name(str);

impl Name {
    /// `name` as a key to look up.
    pub fn of(name: &str) -> &Name {
        // SAFETY: `Name` is `repr(transparent)` over `str`, so the two references have the same
        // layout and the same metadata (the length); the lifetime is kept.
        unsafe { &*(name as *const str as *const Name) }
    }
}

/// Lexicographic by bytes, as `str` orders: the first bytes settle most comparisons of
/// names in place; the rest, and an equal name, go to the slices' own comparison.
#[inline(always)]
fn compare(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(x), Some(y)) = (a.first(), b.first()) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.cmp(b)
}

impl Ord for Name {
    #[inline]
    fn cmp(&self, other: &Name) -> Ordering {
        compare(self.0.as_bytes(), other.0.as_bytes())
    }
}

impl PartialOrd for Name {
    #[inline]
    fn partial_cmp(&self, other: &Name) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// As the [`Name`] it lends: a map found by `Name` must be ordered by the same comparison.
impl Ord for AgentName {
    #[inline]
    fn cmp(&self, other: &AgentName) -> Ordering {
        Name::of(&self.0).cmp(Name::of(&other.0))
    }
}

impl PartialOrd for AgentName {
    #[inline]
    fn partial_cmp(&self, other: &AgentName) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Borrow<Name> for AgentName {
    fn borrow(&self) -> &Name {
        Name::of(&self.0)
    }
}

impl Deref for AgentName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<String> for AgentName {
    fn from(name: String) -> AgentName {
        AgentName(name)
    }
}

impl From<&str> for AgentName {
    fn from(name: &str) -> AgentName {
        AgentName(name.to_owned())
    }
}

impl fmt::Debug for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn names_order_as_their_text_does() {
        let names = [
            "",
            "a",
            "ab",
            "abc",
            "b",
            "B",
            "é",
            "e\u{301}",
            "ops",
            "opsx",
            "op",
            "\u{7f}",
            "\0",
            "researcher",
            "research",
            "zz",
            "ÿ",
            "😀",
            "a\0",
            "assistant",
            "buyer",
        ];
        for a in names {
            for b in names {
                assert_eq!(Name::of(a).cmp(Name::of(b)), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(AgentName::from(a).cmp(&AgentName::from(b)), a.cmp(b));
                assert_eq!(Name::of(a) == Name::of(b), a == b);
            }
        }
    }

    #[test]
    fn a_map_keyed_so_finds_and_orders_as_one_keyed_by_strings() {
        let names = [
            "mailer",
            "buyer",
            "ops",
            "assistant",
            "op",
            "",
            "finance",
            "é",
        ];
        let by_name: BTreeMap<AgentName, usize> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (AgentName::from(*n), i))
            .collect();
        let by_string: BTreeMap<String, usize> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), i))
            .collect();
        let keys: Vec<&str> = by_name.keys().map(|k| &**k).collect();
        let expected: Vec<&str> = by_string.keys().map(String::as_str).collect();
        assert_eq!(keys, expected);
        for name in names {
            assert_eq!(by_name.get(Name::of(name)), by_string.get(name));
        }
        assert_eq!(by_name.get(Name::of("nobody")), None);
        assert_eq!(
            serde_json::to_string(&by_name).unwrap(),
            serde_json::to_string(&by_string).unwrap()
        );
    }
}
