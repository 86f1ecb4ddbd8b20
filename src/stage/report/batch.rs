//! What the worker thread makes of a block of a log: each line that ends in it read (by the
//! scanner, or the strict reader when the scanner leaves it alone) into the few texts the summary
//! needs, copied into one string per block, or the problem with the line. The summariser then joins the events
//! on its own thread, in order.

use std::borrow::Cow;

use serde_json::Value;

use super::event::{EventView, Reasons, StateView, MAX_EVENT_BYTES};
use super::scan;
use crate::audit::blocks::{Block, Line, Long, Splitter};
use crate::record::{Approval, Status};
use crate::rules::state::AgentState;
use crate::strict_json;

/// The lines that end in one block, read.
#[derive(Default)]
pub(super) struct Batch {
    /// Every text the items name.
    texts: String,
    pub items: Vec<Item>,
}

/// Where a text is in [`Batch::texts`].
#[derive(Clone, Copy)]
pub(super) struct Span {
    start: u32,
    end: u32,
}

/// One line, read.
pub(super) enum Item {
    Blank,
    Problem(Span),
    Event(Packed),
}

/// An [`EventView`] whose texts are in the batch.
pub(super) struct Packed {
    id: Option<Span>,
    stage: Option<Span>,
    ts: Option<Span>,
    decision: Option<Span>,
    kind: Option<Span>,
    reasons: PackedReasons,
    call: Option<(Span, Span)>,
    args: Option<Span>,
    agent_state: Option<PackedState>,
    approval: Option<Box<Approval>>,
    status: Option<Status>,
    agent: Option<Span>,
    tool: Option<Span>,
    grants: Option<bool>,
    /// Whether an `exec` event names the backend its call ran.
    ran_backend: bool,
    made_store: bool,
}

enum PackedReasons {
    Text(Span),
    List(Vec<String>),
}

enum PackedState {
    Text(Span),
    Parsed(Box<AgentState>),
}

impl Batch {
    pub fn text(&self, span: Span) -> &str {
        &self.texts[span.start as usize..span.end as usize]
    }

    fn put(&mut self, text: &str) -> Span {
        let start = self.texts.len();
        self.texts.push_str(text);
        // A block is a megabyte and a line at most 16 MiB: far below 4 GiB.
        Span {
            start: start as u32,
            end: self.texts.len() as u32,
        }
    }

    fn put_some(&mut self, text: &Option<Cow<str>>) -> Option<Span> {
        text.as_deref().map(|text| self.put(text))
    }

    fn pack(&mut self, view: EventView) -> Packed {
        Packed {
            id: self.put_some(&view.id),
            stage: self.put_some(&view.stage),
            ts: self.put_some(&view.ts),
            decision: self.put_some(&view.decision),
            kind: self.put_some(&view.kind),
            reasons: match view.reasons {
                Reasons::Text(text) => PackedReasons::Text(self.put(text)),
                Reasons::List(list) => PackedReasons::List(list),
            },
            call: view
                .call
                .map(|(agent, tool)| (self.put(&agent), self.put(&tool))),
            // Only a call that may be vetoed (not allowed) may show its arguments.
            args: if view.decision.as_deref() == Some("allow") {
                None
            } else {
                self.put_some(&view.args)
            },
            agent_state: view.agent_state.map(|state| match state {
                StateView::Text(text) => PackedState::Text(self.put(text)),
                StateView::Parsed(state) => PackedState::Parsed(Box::new(state)),
            }),
            approval: view.approval.map(Box::new),
            status: view.status,
            agent: self.put_some(&view.agent),
            tool: self.put_some(&view.tool),
            grants: view.grants,
            ran_backend: view.ran_backend,
            made_store: view.made_store,
        }
    }

    /// The event as the summariser reads it.
    pub fn view(&self, packed: &Packed) -> EventView<'_> {
        let text = |span: Option<Span>| span.map(|span| Cow::Borrowed(self.text(span)));
        EventView {
            id: text(packed.id),
            stage: text(packed.stage),
            ts: text(packed.ts),
            decision: text(packed.decision),
            kind: text(packed.kind),
            reasons: match &packed.reasons {
                PackedReasons::Text(span) => Reasons::Text(self.text(*span)),
                PackedReasons::List(list) => Reasons::List(list.clone()),
            },
            call: packed.call.map(|(agent, tool)| {
                (
                    Cow::Borrowed(self.text(agent)),
                    Cow::Borrowed(self.text(tool)),
                )
            }),
            args: text(packed.args),
            agent_state: packed.agent_state.as_ref().map(|state| match state {
                PackedState::Text(span) => StateView::Text(self.text(*span)),
                PackedState::Parsed(state) => StateView::Parsed((**state).clone()),
            }),
            approval: packed.approval.as_deref().cloned(),
            status: packed.status,
            agent: text(packed.agent),
            tool: text(packed.tool),
            grants: packed.grants,
            ran_backend: packed.ran_backend,
            made_store: packed.made_store,
        }
    }
}

/// The worker's part: cuts the lines out of each block and reads them.
pub(super) fn reader() -> impl FnMut(&Block, &mut Batch) + Send + 'static {
    let mut splitter = Splitter::new(MAX_EVENT_BYTES, Long::Skip);
    move |block, batch| {
        batch.texts.clear();
        batch.items.clear();
        splitter.split(block, |line| {
            let item = match line {
                Line::TooLong { length } => Item::Problem(batch.put(&format!(
                    "line of {length} bytes is too long to be an event"
                ))),
                Line::Text { text, .. } if text.iter().all(u8::is_ascii_whitespace) => Item::Blank,
                Line::Text { text, .. } => match read_line(text, batch) {
                    Ok(packed) => Item::Event(packed),
                    Err(problem) => Item::Problem(batch.put(&problem.to_string())),
                },
            };
            batch.items.push(item);
        });
    }
}

/// Why a line is not an event.
#[derive(Debug, thiserror::Error)]
enum LineProblem {
    #[error("torn or malformed line: not valid UTF-8")]
    NotUtf8,
    #[error("malformed line: not a JSON object")]
    NotObject,
    #[error("torn or malformed line: {0}")]
    Malformed(serde_json::Error),
}

fn read_line(bytes: &[u8], batch: &mut Batch) -> Result<Packed, LineProblem> {
    let text = std::str::from_utf8(bytes).map_err(|_| LineProblem::NotUtf8)?;
    // One strict pass that keeps only what the summary reads; a line it refuses is read again
    // the reference way, which words the problem.
    let mut view = EventView::default();
    if scan::read_into(text, &mut view).is_some() {
        return Ok(batch.pack(view));
    }
    let event = match strict_json::parse(text) {
        Ok(Value::Object(event)) => event,
        Ok(_) => return Err(LineProblem::NotObject),
        Err(err) => return Err(LineProblem::Malformed(err)),
    };
    Ok(batch.pack(EventView::of(&event)))
}
