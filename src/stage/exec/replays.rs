//! Under the audit key, a sealed record is acted on once in a run: a record sc-gate sealed can be
//! copied, and each copy carries a seal that matches, so the seal alone would let one `allow`
//! run again for every copy (a review replayed one payment eight times). sc-gate's ids are its
//! run's prefix and a number that grows by one for each line ([`crate::audit::IdMinter`]), and
//! its records reach sc-exec in that order (sc-approve keeps input order), so it is enough to
//! keep, for each gate run, the highest number acted on: memory stays flat however long the
//! stream. An id of another form is kept whole.

use std::collections::{HashMap, HashSet};

/// The records a run has acted on ([`Replays::first`]).
#[derive(Debug, Default)]
pub(crate) struct Replays {
    /// For each gate run's prefix, the highest number acted on.
    latest: HashMap<String, u64>,
    /// Ids not in sc-gate's form.
    others: HashSet<String>,
}

impl Replays {
    /// Whether the record `id` may be acted on: never before in this run, and, for one of
    /// sc-gate's ids, after every id of its gate run acted on so far. Records it.
    pub(crate) fn first(&mut self, id: &str) -> bool {
        let Some((prefix, number)) = gate_id(id) else {
            return self.others.insert(id.to_owned());
        };
        match self.latest.get_mut(prefix) {
            Some(latest) if number <= *latest => false,
            Some(latest) => {
                *latest = number;
                true
            }
            None => {
                self.latest.insert(prefix.to_owned(), number);
                true
            }
        }
    }
}

/// An id in sc-gate's form, `PREFIX-NUMBER`: its prefix (with the dash) and number.
fn gate_id(id: &str) -> Option<(&str, u64)> {
    let at = id.rfind('-')? + 1;
    let (prefix, digits) = id.split_at(at);
    if prefix.len() < 2 || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((prefix, digits.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_acted_on_once_and_never_after_a_later_one_of_its_gate() {
        let mut seen = Replays::default();
        assert!(seen.first("ab12-1"));
        assert!(seen.first("ab12-2"));
        assert!(!seen.first("ab12-2"), "the same record again");
        assert!(
            !seen.first("ab12-1"),
            "an earlier record of the same gate run"
        );
        assert!(!seen.first("ab12-02"), "the same number spelt otherwise");
        assert!(
            seen.first("cd34-1"),
            "another gate run's numbers are its own"
        );
        assert!(seen.first("ab12-7"), "a gap: lines a stage dropped");
        // Ids of another form are kept whole.
        assert!(seen.first("note-x"));
        assert!(!seen.first("note-x"));
        assert!(seen.first("-5"));
        assert!(!seen.first("-5"));
        assert!(seen.first("n-99999999999999999999999"));
        assert!(!seen.first("n-99999999999999999999999"));
    }
}
