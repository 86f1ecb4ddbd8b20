//! The write-ahead record of a backend run: an `exec-start` event, appended and waited for before
//! the backend starts, so that no backend runs unless the log already says it is about to. The
//! call's `exec` event, with the outcome, follows once the backend has ended; a start without an
//! `exec` event after it is a backend whose outcome was never recorded (sc-exec stopped, or the
//! log could not be written afterwards).
//!
//! ```json
//! {"ts":"…","stage":"exec-start","id":"…","agent":"buyer","tool":"send_payment","decision":"allow","backend":{"command":"/usr/local/bin/pay"}}
//! ```
//!
//! `decision` is the one acted on (as in the `exec` event); `backend` is the program as the tools
//! file names it (`command[0]`), and `"sandboxed": true` when it runs under sc-sandbox. With a
//! shared state, `stateStore` and `crew`, as in the `exec` event.

use super::backends::Backend;
use crate::audit::{self, Stage};
use crate::verdict::Decision;

/// The call whose backend is about to run, as its start names it.
pub(super) struct Starting<'a> {
    pub(super) id: &'a str,
    pub(super) agent: &'a str,
    pub(super) tool: &'a str,
    /// The decision acted on.
    pub(super) decision: Decision,
    pub(super) backend: &'a Backend,
    /// The shared state's store and crew, if any.
    pub(super) store: Option<&'a (String, Option<String>)>,
}

/// The `exec-start` event of a call whose backend is about to run.
pub(super) fn event(call: &Starting<'_>) -> Vec<u8> {
    let backend = call.backend;
    let command = backend.command().first().map_or("", String::as_str);
    let mut event = audit::event(Stage::ExecStart, call.id)
        .str_field("agent", call.agent)
        .str_field("tool", call.tool)
        .str_field("decision", call.decision.as_str())
        .object_field("backend", |fields| {
            let fields = fields.str_field("command", command);
            if backend.sandboxed() {
                fields.field("sandboxed", &true)
            } else {
                fields
            }
        });
    if let Some((store, crew)) = call.store {
        event = event.str_field("stateStore", store);
        if let Some(crew) = crew {
            event = event.str_field("crew", crew);
        }
    }
    event.finish()
}

#[cfg(test)]
#[path = "start_tests.rs"]
mod tests;
