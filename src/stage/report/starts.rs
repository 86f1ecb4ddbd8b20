//! sc-exec's `exec-start` events still waiting for their call's `exec` event. sc-exec appends a
//! start before it runs a backend and the outcome after, so a start that no outcome follows is a
//! backend that may have had its effect with nothing recorded of how it ended (sc-exec was
//! killed, or the log filled up): the report lists each as a problem of the start's line.
//!
//! Memory stays flat however long the log: at most [`WAITING`] starts are kept. A start pushed
//! out by newer ones is reported then, as having no outcome among the starts after it (sc-exec
//! writes a backend's outcome long before that many others start).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;

use sha2::{Digest, Sha256};

/// How many starts wait for their outcome at most.
pub(super) const WAITING: usize = 10_000;

/// The longest id a start keeps as it is; a longer one (a line may be a megabyte) is kept as its
/// first bytes and the SHA-256 of the whole, so that what waits stays small whatever the log.
const ID_KEPT: usize = 128;

/// An id as a start keeps it: itself, or when longer than [`ID_KEPT`] bytes, its first 64 bytes,
/// `…` and the SHA-256 of the whole (an outcome's id is kept the same way before it is looked up).
pub(super) fn kept_id(id: &str) -> String {
    if id.len() <= ID_KEPT {
        return id.to_owned();
    }
    let mut cut = 64;
    while !id.is_char_boundary(cut) {
        cut -= 1;
    }
    let digest: String = Sha256::digest(id.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{}… (sha256 {digest})", &id[..cut])
}

/// Where a start was read: the log's name and the line's number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StartLine {
    /// The log's name, shared by its starts.
    pub(super) log: Rc<str>,
    pub(super) line: u64,
    /// The id as [`kept_id`] keeps it.
    pub(super) id: String,
}

impl StartLine {
    /// The problem's words for a start that no outcome followed.
    pub(super) fn problem(&self, pushed_out: bool) -> String {
        let when = if pushed_out {
            format!("among the next {WAITING} starts")
        } else {
            "in the logs read".to_owned()
        };
        format!(
            "exec-start for id {} has no exec event {when}: its backend started and how it ended was never recorded",
            self.id
        )
    }
}

/// The starts waiting, oldest first.
#[derive(Debug, Default)]
pub(super) struct Starts {
    /// By order of arrival.
    waiting: BTreeMap<u64, StartLine>,
    /// Each waiting id's starts, by order of arrival (a record run twice starts twice, and each
    /// start waits for an outcome of its own).
    by_id: HashMap<String, VecDeque<u64>>,
    next: u64,
}

impl Starts {
    /// Keeps a start; returns the oldest one pushed out, if the most were already waiting.
    pub(super) fn begin(&mut self, start: StartLine) -> Option<StartLine> {
        let order = self.next;
        self.next += 1;
        self.by_id
            .entry(start.id.clone())
            .or_default()
            .push_back(order);
        self.waiting.insert(order, start);
        if self.waiting.len() <= WAITING {
            return None;
        }
        let (order, oldest) = self.waiting.pop_first()?;
        self.forget(&oldest.id, order);
        Some(oldest)
    }

    /// An outcome of the call came: its oldest waiting start waits no more.
    pub(super) fn end(&mut self, id: &str) {
        let id = kept_id(id);
        let Some(orders) = self.by_id.get_mut(&id) else {
            return;
        };
        if let Some(order) = orders.pop_front() {
            self.waiting.remove(&order);
        }
        if orders.is_empty() {
            self.by_id.remove(&id);
        }
    }

    fn forget(&mut self, id: &str, order: u64) {
        if let Some(orders) = self.by_id.get_mut(id) {
            orders.retain(|waiting| *waiting != order);
            if orders.is_empty() {
                self.by_id.remove(id);
            }
        }
    }

    /// The starts no outcome followed, oldest first.
    pub(super) fn unfinished(self) -> impl Iterator<Item = StartLine> {
        self.waiting.into_values()
    }
}

#[cfg(test)]
#[path = "starts_tests.rs"]
mod tests;
