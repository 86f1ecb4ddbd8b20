//! `sc-approve --web`: holds wait side by side on the web page, answered in any order, and
//! records still leave in input order.
//!
//! A thread reads the input and hands its lines over in batches; the web page's server runs on a
//! thread of its own and says when a hold is settled. This thread waits on both (and on the next
//! hold's expiry), keeps the records in input order, and lets each leave once every record before
//! it has: a record behind a pending hold waits for it, a hold answered early waits for the holds
//! before it. How much may wait is bounded: past [`MAX_WAITING_BYTES`], the input is not read
//! until records leave. What is decided leaves whenever nothing more is at hand.
//!
//! The loop of [`super::run`], which asks one hold at a time, is left as it is, so a stream
//! without `--web` pays nothing for this.

use std::collections::VecDeque;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::mpsc::{self, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Instant;

use anyhow::{Context, Result};

use super::{
    answered, examine_hold, needs_reading, removed_approval, too_long, ApproveOptions, Examined,
};
use crate::approve::notify::Notice;
use crate::approve::web::{announce, Ticket, WebApprovals};
use crate::approve::{approval_for, Hold};
use crate::audit::IdMinter;
use crate::exit::Completion;
use crate::jsonl::{self, Input, InputLines, Line, StageOutput};
use crate::record::{AnsweredBy, Record};
use crate::sanitize::for_terminal;
use crate::verdict::Decision;

/// How many bytes of input may wait behind a pending hold before the input is left unread.
pub(crate) const MAX_WAITING_BYTES: usize = 64 << 20;
/// How many bytes of lines the reader hands over at once when the input flows.
const BATCH_BYTES: usize = 64 << 10;

/// What the input thread and the web page's server tell the main thread.
enum Message {
    Lines(Vec<Item>),
    /// The input ended (or could not be read further).
    End(Result<Completion>),
    Settled(Ticket),
}

/// One input line, as read.
enum Item {
    Text(Vec<u8>),
    TooLong { length: u64, start: Vec<u8> },
}

impl Item {
    fn bytes(&self) -> usize {
        match self {
            Item::Text(line) => line.len(),
            Item::TooLong { start, .. } => start.len(),
        }
    }
}

/// A record on its way out, in input order.
enum Slot {
    /// Ready to leave: the record (a whole line), the audit event that goes with it, and a line
    /// of narration.
    Ready {
        record: Vec<u8>,
        event: Option<Vec<u8>>,
        narration: Option<String>,
        cost: usize,
    },
    /// A hold on the web page, waiting for its answer; `line` is the record as it arrived, and
    /// `notice` the `--notify` command started for it.
    Waiting {
        line: Vec<u8>,
        ticket: Ticket,
        notice: Option<Notice>,
        /// When it was put on the page.
        asked_at: std::time::SystemTime,
    },
}

/// The bytes read but not yet written: the reader waits while there are too many.
#[derive(Default)]
struct Backlog {
    bytes: Mutex<(usize, bool)>,
    room: Condvar,
}

impl Backlog {
    /// Waits until there is room (or nobody will make any), then counts `bytes` in.
    fn take(&self, bytes: usize) {
        let mut state = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        while state.0 > MAX_WAITING_BYTES && !state.1 {
            state = self
                .room
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.0 += bytes;
    }

    fn give_back(&self, bytes: usize) {
        let mut state = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        state.0 = state.0.saturating_sub(bytes);
        self.room.notify_all();
    }

    /// Nobody will give room back: the reader stops waiting.
    fn close(&self) {
        self.bytes.lock().unwrap_or_else(PoisonError::into_inner).1 = true;
        self.room.notify_all();
    }
}

/// Serves the holds of `inputs` on the web page at `addr` and writes every record on, in input
/// order. Ends when the input has ended and every hold is answered or expired; the page stops
/// with it.
pub fn run_web<W: Write, E: Write>(
    inputs: &[Input],
    options: &ApproveOptions,
    addr: SocketAddr,
    output: &mut StageOutput<W, E>,
) -> Result<Completion> {
    let (sender, messages) = mpsc::channel();
    let settled = Mutex::new(sender.clone());
    let web = WebApprovals::start(
        addr,
        "sc-approve",
        Some(Box::new(move |ticket| {
            let sender = settled.lock().unwrap_or_else(PoisonError::into_inner);
            let _ = sender.send(Message::Settled(ticket));
        })),
    )?;
    announce("sc-approve", web.url());
    let backlog = Arc::new(Backlog::default());
    let _reader = read_on_a_thread(inputs.to_vec(), options.max_line_bytes, sender, &backlog)?;
    let mut order = InOrder {
        slots: VecDeque::new(),
        ids: IdMinter::new(),
        web: &web,
        options,
    };
    let result = order.run(&messages, &backlog, output);
    backlog.close();
    output.commit()?;
    web.stop();
    result
}

/// Starts the thread that reads the input and hands its lines over.
fn read_on_a_thread(
    inputs: Vec<Input>,
    max_line_bytes: usize,
    sender: Sender<Message>,
    backlog: &Arc<Backlog>,
) -> Result<std::thread::JoinHandle<()>> {
    let backlog = Arc::clone(backlog);
    std::thread::Builder::new()
        .name("input".into())
        .spawn(move || {
            let mut stderr = std::io::stderr();
            let mut lines = InputLines::new("sc-approve", &inputs, max_line_bytes, &mut stderr);
            let end = loop {
                let mut batch = Vec::new();
                let mut bytes = 0;
                let ended = loop {
                    match lines.next_line() {
                        Ok(Some((Line::Text(line), _, _))) => batch.push(Item::Text(line.to_vec())),
                        Ok(Some((Line::TooLong { length, start }, _, _))) => {
                            batch.push(Item::TooLong {
                                length,
                                start: start.to_vec(),
                            })
                        }
                        Ok(None) => break Some(Ok(())),
                        Err(err) => break Some(Err(err)),
                    }
                    bytes += batch.last().map_or(0, Item::bytes);
                    if bytes >= BATCH_BYTES || lines.next_read_would_block() {
                        break None;
                    }
                };
                if !batch.is_empty() {
                    backlog.take(bytes);
                    if sender.send(Message::Lines(batch)).is_err() {
                        return;
                    }
                }
                if let Some(ended) = ended {
                    break ended.map(|()| lines.completion());
                }
            };
            let _ = sender.send(Message::End(end));
        })
        .context("cannot start the input thread")
}

/// The records on their way out, in input order.
struct InOrder<'a> {
    slots: VecDeque<Slot>,
    ids: IdMinter,
    web: &'a WebApprovals,
    options: &'a ApproveOptions,
}

impl InOrder<'_> {
    fn run<W: Write, E: Write>(
        &mut self,
        messages: &mpsc::Receiver<Message>,
        backlog: &Backlog,
        output: &mut StageOutput<W, E>,
    ) -> Result<Completion> {
        let mut ended: Option<Result<Completion>> = None;
        loop {
            self.leave_in_order(backlog, output);
            if self.slots.is_empty() {
                if let Some(ended) = ended {
                    return ended;
                }
            }
            let message = match messages.try_recv() {
                Ok(message) => Some(message),
                Err(TryRecvError::Empty) => {
                    // Nothing more at hand: what is decided leaves now.
                    output.commit()?;
                    match self.next_expiry() {
                        Some(at) => {
                            match messages
                                .recv_timeout(at.saturating_duration_since(Instant::now()))
                            {
                                Ok(message) => Some(message),
                                Err(RecvTimeoutError::Timeout) => None,
                                Err(RecvTimeoutError::Disconnected) => {
                                    anyhow::bail!("the web approval page stopped unexpectedly")
                                }
                            }
                        }
                        None => Some(messages.recv().map_err(|_| {
                            anyhow::anyhow!("the web approval page stopped unexpectedly")
                        })?),
                    }
                }
                Err(TryRecvError::Disconnected) => {
                    anyhow::bail!("the web approval page stopped unexpectedly")
                }
            };
            match message {
                Some(Message::Lines(items)) => {
                    for item in items {
                        self.take(item, backlog, output);
                    }
                }
                Some(Message::End(end)) => ended = Some(end),
                Some(Message::Settled(ticket)) => self.settle(ticket.id()),
                None => {}
            }
            self.settle_expired();
        }
    }

    /// Writes every record at the front that is ready, up to the first that waits.
    fn leave_in_order<W: Write, E: Write>(
        &mut self,
        backlog: &Backlog,
        output: &mut StageOutput<W, E>,
    ) {
        let mut freed = 0;
        while let Some(Slot::Ready { .. }) = self.slots.front() {
            let Some(Slot::Ready {
                record,
                event,
                narration,
                cost,
            }) = self.slots.pop_front()
            else {
                unreachable!("the front is ready")
            };
            match event {
                Some(event) => output.emit(&event, &record),
                None => output.pass_through(&record),
            }
            if let Some(narration) = narration {
                output.narrate(&narration);
            }
            freed += cost;
        }
        if freed > 0 {
            backlog.give_back(freed);
        }
    }

    /// Takes one input line: passed on, or, for a hold, put on the web page.
    fn take<W: Write, E: Write>(
        &mut self,
        item: Item,
        backlog: &Backlog,
        output: &mut StageOutput<W, E>,
    ) {
        let cost = item.bytes();
        let mut line = match item {
            Item::Text(line) => line,
            Item::TooLong { length, start } => {
                let record = too_long(length, &start, self.options, &mut self.ids);
                return self.ready(record, None, None, cost);
            }
        };
        if jsonl::is_blank(&line) {
            backlog.give_back(cost);
            return;
        }
        if !needs_reading(&line) {
            line.push(b'\n');
            return self.ready(line, None, None, cost);
        }
        let taken = match Record::parse(&line) {
            Ok(record) if record.decision() == Some(Decision::Hold) => {
                match examine_hold(&record, &self.options.chain) {
                    Examined::Ask {
                        id,
                        call,
                        reasons,
                        grantable,
                    } => {
                        let offered = super::offered(&record, &id, grantable, self.options);
                        let hold = Hold {
                            scopes: &offered.scopes,
                            line: &line,
                            id: &id,
                            call,
                            reasons: &reasons,
                            timeout: self.options.timeout,
                        };
                        let ticket = self.web.submit_reporting(&hold);
                        let asked_at = std::time::SystemTime::now();
                        let notice = self
                            .options
                            .notify
                            .as_ref()
                            .map(|notifier| notifier.notify(&hold, Some(self.web.url())));
                        output.narrate(&format!(
                            "sc-approve: {} → {}: waiting on the web page (hold {})",
                            for_terminal(&call.agent),
                            for_terminal(&call.tool),
                            ticket.id()
                        ));
                        Taken::Waiting(ticket, notice, asked_at)
                    }
                    Examined::Malformed {
                        approval,
                        agent,
                        tool,
                    } => {
                        let answered = answered(
                            &record,
                            &approval,
                            &agent,
                            &tool,
                            None,
                            None,
                            self.options,
                            &mut self.ids,
                        );
                        Taken::Ready(
                            answered.record,
                            Some(answered.event),
                            Some(answered.narration),
                        )
                    }
                }
            }
            // Not a hold, yet carrying an approval: nobody here gave it, so it goes.
            Ok(record) if record.has("approval") => Taken::Ready(
                record.without_field("approval"),
                None,
                Some(removed_approval(&record)),
            ),
            _ => Taken::PassOn,
        };
        match taken {
            Taken::Waiting(ticket, notice, asked_at) => self.slots.push_back(Slot::Waiting {
                line,
                ticket,
                notice,
                asked_at,
            }),
            Taken::Ready(record, event, narration) => self.ready(record, event, narration, cost),
            Taken::PassOn => {
                line.push(b'\n');
                self.ready(line, None, None, cost);
            }
        }
    }

    fn ready(
        &mut self,
        record: Vec<u8>,
        event: Option<Vec<u8>>,
        narration: Option<String>,
        cost: usize,
    ) {
        self.slots.push_back(Slot::Ready {
            record,
            event,
            narration,
            cost,
        });
    }

    /// The soonest time a waiting hold declines by itself.
    fn next_expiry(&self) -> Option<Instant> {
        self.slots
            .iter()
            .filter_map(|slot| match slot {
                Slot::Waiting { ticket, .. } => ticket.expires(),
                Slot::Ready { .. } => None,
            })
            .min()
    }

    /// Settles every waiting hold whose time is up (or that was answered just before).
    fn settle_expired(&mut self) {
        let now = Instant::now();
        let due: Vec<u64> = self
            .slots
            .iter()
            .filter_map(|slot| match slot {
                Slot::Waiting { ticket, .. } if ticket.expires().is_some_and(|at| at <= now) => {
                    Some(ticket.id())
                }
                _ => None,
            })
            .collect();
        for id in due {
            self.settle(id);
        }
    }

    /// Turns the waiting hold `id` into its answered record, once the page has its reply.
    fn settle(&mut self, id: u64) {
        let Some(slot) = self
            .slots
            .iter_mut()
            .find(|slot| matches!(slot, Slot::Waiting { ticket, .. } if ticket.id() == id))
        else {
            return;
        };
        let Slot::Waiting {
            line,
            ticket,
            notice,
            asked_at,
        } = slot
        else {
            unreachable!("found a waiting slot")
        };
        let Some(reply) = self.web.poll(*ticket) else {
            return;
        };
        let approval = approval_for(reply, AnsweredBy::Web);
        // Its `--notify` command has its few seconds to end, so that the event can say whether
        // it failed (a person seldom answers that fast).
        let notify_failed = notice
            .take()
            .and_then(Notice::finish)
            .map(|failure| failure.to_string());
        let record = Record::parse(line).expect("a hold read once reads again");
        let (agent, tool) = match record.call() {
            Some(Ok(call)) => (call.agent.clone(), call.tool.clone()),
            _ => unreachable!("a hold put to the page has a call"),
        };
        let answered = answered(
            &record,
            &approval,
            &agent,
            &tool,
            notify_failed.as_deref(),
            Some(super::Asked {
                at: *asked_at,
                channel: None,
            }),
            self.options,
            &mut self.ids,
        );
        // The page's answer waits for this: the scope kept, and the grant; the call runs, if
        // it does, at the stage after this one, which decides it again.
        self.web.kept_and_passed_on(*ticket, &answered.approval);
        let cost = line.len();
        *slot = Slot::Ready {
            record: answered.record,
            event: Some(answered.event),
            narration: Some(answered.narration),
            cost,
        };
    }
}

/// What became of a line that had to be read.
enum Taken {
    Waiting(Ticket, Option<Notice>, std::time::SystemTime),
    Ready(Vec<u8>, Option<Vec<u8>>, Option<String>),
    PassOn,
}
