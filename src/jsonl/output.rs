//! A stage's output: records batched, each batch's audit events appended before its records leave.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use anyhow::{Context, Result};

use super::BATCH_BYTES;

/// Where a stage's records, audit events and narration go, batched as the module docs say.
///
/// While input flows, a full batch's audit events are sealed and appended on a second thread
/// (the hash chain is most of the cost of a call), and the batch's records leave only once that
/// append has succeeded, while this thread reads the next batch. When the input is about to block,
/// at the end, and before a person is asked, a commit waits for its audit append and writes its
/// records at once, as a stage without the thread would.
pub struct StageOutput<W: Write, E: Write> {
    auditor: Auditor,
    stdout: W,
    narration: Option<E>,
    pending_audit: Vec<u8>,
    pending_records: Vec<u8>,
    pending_narration: Vec<u8>,
    /// Buffers that batches gave back, for the next batches: a stream that flows reuses a few
    /// buffers instead of growing new ones.
    spare: Spares,
    /// The narration of each batch whose audit events are being appended on the auditor thread
    /// (which has its records too), oldest first, to be written once its append has succeeded.
    in_flight: VecDeque<Vec<u8>>,
    /// Why an append failed, once one has: from then on nothing more leaves, even when a caller
    /// commits again (a batch queued after the failed one must not leave once the disk has room).
    failed: Option<String>,
    /// How many bytes of records make a batch go when input flows: [`BATCH_BYTES`], or
    /// [`DURABLE_BATCH_BYTES`] for a durable sink.
    batch_bytes: usize,
}

/// How many batches may be with the auditor thread at once. With one, each thread waits for the
/// other at every batch, and a thread woken late (a busy host) stalls both; with two, the
/// deciding thread fills a third batch while the auditor has one queued behind the one it
/// appends. Measured on sc-gate over 1M calls, ten alternating runs each (issue 34): median wall
/// 1.37 s → 1.31 s in a quiet hour, 1.89 s → 1.56 s in a busy one; three in flight were no
/// faster than two. It costs one more batch's buffers at the peak: 120-290 KB over compare.py's
/// calls, about a megabyte with lines near the 1 MiB limit.
const IN_FLIGHT: usize = 2;

/// A batch on its way to the auditor thread and back: its audit events, and its records, which
/// leave only once the events are appended (and which a deferred event is written from).
struct Batch {
    events: Vec<u8>,
    records: Vec<u8>,
}

#[derive(Default)]
struct Spares {
    audit: Vec<u8>,
    records: Vec<u8>,
    narration: Vec<u8>,
}

/// Takes a batch's buffer, leaving the spare one in its place.
fn take_batch(pending: &mut Vec<u8>, spare: &mut Vec<u8>) -> Vec<u8> {
    std::mem::replace(pending, std::mem::take(spare))
}

/// Keeps the larger of a buffer given back and the spare one, emptied.
fn give_back(spare: &mut Vec<u8>, mut buffer: Vec<u8>) {
    if buffer.capacity() > spare.capacity() {
        buffer.clear();
        *spare = buffer;
    }
}

/// Where a stage's audit events go (the audit log, in `crate::audit`): each batch appended as one
/// write of whole lines, before any record of the batch leaves. A failed append stops the stage.
/// `records` are the batch's records, which an event may be written from (the audit log's
/// deferred events).
pub trait AuditSink: Send {
    fn append(&mut self, events: &[u8], records: &[u8]) -> Result<()>;

    /// Whether each append waits for the disk (`--fsync`). Such a sink is handed larger batches
    /// when input flows ([`DURABLE_BATCH_BYTES`]): an append costs a flush to the disk whatever
    /// its size.
    fn durable(&self) -> bool {
        false
    }
}

/// The records a batch holds, when input flows, before it goes to a durable sink: twice
/// [`BATCH_BYTES`], so half the flushes to the disk. Over 100k calls with `--fsync` (seven
/// alternating rounds, issue 34) sc-gate made 743 flushes in a median 323 ms at 64 KiB; the
/// batches of 64 KiB had grown with the records (holds that say what a yes may be remembered
/// for), from 628 flushes and 307 ms. A verdict still leaves as soon as the input pauses; the
/// price is one more batch's worth of buffers at the peak.
pub const DURABLE_BATCH_BYTES: usize = 2 * BATCH_BYTES;

/// Who appends the audit events: this thread, or a thread of its own.
enum Auditor {
    Inline(Box<dyn AuditSink>),
    Thread {
        batches: SyncSender<Batch>,
        appended: Receiver<(Batch, Result<()>)>,
        thread: JoinHandle<Box<dyn AuditSink>>,
    },
    /// The auditor thread panicked.
    Stopped,
}

impl Auditor {
    /// Moves the log to a thread that appends each batch it is sent and answers with the
    /// outcome (and the batch: its records to write, its emptied events buffer for reuse).
    fn start_thread(&mut self) -> Result<()> {
        let Auditor::Inline(_) = self else {
            return Ok(());
        };
        let Auditor::Inline(mut log) = std::mem::replace(self, Auditor::Stopped) else {
            unreachable!()
        };
        let (batches, inbox) = sync_channel::<Batch>(IN_FLIGHT);
        let (outbox, appended) = sync_channel(IN_FLIGHT);
        let thread = std::thread::Builder::new()
            .name("audit".into())
            .spawn(move || {
                for mut batch in inbox {
                    let result = log.append(&batch.events, &batch.records);
                    batch.events.clear();
                    let failed = result.is_err();
                    if outbox.send((batch, result)).is_err() || failed {
                        break;
                    }
                }
                log
            })
            .context("cannot start the audit thread")?;
        *self = Auditor::Thread {
            batches,
            appended,
            thread,
        };
        Ok(())
    }

    /// Waits for the batch on the thread; returns it, its events buffer emptied.
    fn wait(&mut self) -> Result<Batch> {
        let Auditor::Thread { appended, .. } = self else {
            unreachable!("only a thread has a batch in flight")
        };
        match appended.recv() {
            Ok((buffer, Ok(()))) => Ok(buffer),
            Ok((_, Err(err))) => {
                self.stop();
                Err(err)
            }
            Err(_) => {
                self.stop();
                Err(anyhow::anyhow!("the audit thread stopped unexpectedly"))
            }
        }
    }

    /// Ends the thread, if there is one, once its append in progress is done, and takes the
    /// log back.
    fn stop(&mut self) {
        if let Auditor::Thread {
            batches, thread, ..
        } = std::mem::replace(self, Auditor::Stopped)
        {
            drop(batches);
            if let Ok(log) = thread.join() {
                *self = Auditor::Inline(log);
            }
        }
    }
}

impl<W: Write, E: Write> Drop for StageOutput<W, E> {
    /// Lets an append in progress finish, so that no event is torn when a stage stops early.
    fn drop(&mut self) {
        self.auditor.stop();
    }
}

impl<W: Write, E: Write> StageOutput<W, E> {
    /// `narration` is `None` when the stage was told to be quiet.
    pub fn new(audit: impl AuditSink + 'static, stdout: W, narration: Option<E>) -> Self {
        let batch_bytes = if audit.durable() {
            DURABLE_BATCH_BYTES
        } else {
            BATCH_BYTES
        };
        StageOutput {
            batch_bytes,
            auditor: Auditor::Inline(Box::new(audit)),
            stdout,
            narration,
            pending_audit: Vec::new(),
            pending_records: Vec::new(),
            pending_narration: Vec::new(),
            spare: Spares::default(),
            in_flight: VecDeque::new(),
            failed: None,
        }
    }

    /// Queues one audit event (a whole line) and the record it describes.
    pub(crate) fn emit(&mut self, audit_event: &[u8], record: &[u8]) {
        self.pending_audit.extend_from_slice(audit_event);
        self.pending_records.extend_from_slice(record);
    }

    /// Queues one audit event and the record it describes, written by `write` straight into the
    /// batch: `write(events, records)` appends one whole line to each.
    pub(crate) fn emit_with(&mut self, write: impl FnOnce(&mut Vec<u8>, &mut Vec<u8>)) {
        write(&mut self.pending_audit, &mut self.pending_records);
    }

    /// Queues a record that needs no audit event of this stage (passed through untouched).
    pub(crate) fn pass_through(&mut self, record: &[u8]) {
        self.pending_records.extend_from_slice(record);
    }

    /// Whether narration is wanted at all (so a quiet stage need not compose it).
    pub(crate) fn narrating(&self) -> bool {
        self.narration.is_some()
    }

    /// Queues one line for the person watching stderr.
    pub fn narrate(&mut self, text: &str) {
        if self.narration.is_some() {
            self.pending_narration.extend_from_slice(text.as_bytes());
            self.pending_narration.push(b'\n');
        }
    }

    /// Commits at once when the input is about to block (`input_waiting` is false: see
    /// [`LineReader::next_read_would_block`]); hands a large batch to the auditor thread when the
    /// input flows.
    pub(crate) fn commit_if_due(&mut self, input_waiting: bool) -> Result<()> {
        if !input_waiting {
            self.commit()?;
        } else if self.pending_records.len() >= self.batch_bytes {
            self.commit_in_background()?;
        }
        Ok(())
    }

    /// Writes the audit events, then the records, then the narration, and flushes. If the audit
    /// write fails, no record of the batch leaves.
    pub fn commit(&mut self) -> Result<()> {
        self.refuse_after_failure()?;
        self.land_in_flight()?;
        if !self.pending_audit.is_empty() {
            match &mut self.auditor {
                Auditor::Inline(log) => {
                    if let Err(err) = log.append(&self.pending_audit, &self.pending_records) {
                        return Err(self.fail(err));
                    }
                }
                Auditor::Thread { .. } => {
                    self.send_pending()?;
                    self.land_in_flight()?;
                }
                Auditor::Stopped => {
                    return Err(self.fail(anyhow::anyhow!("the audit thread stopped unexpectedly")))
                }
            }
            self.pending_audit.clear();
        }
        let records = take_batch(&mut self.pending_records, &mut self.spare.records);
        let narration = take_batch(&mut self.pending_narration, &mut self.spare.narration);
        self.write_out(records, narration, true)
    }

    /// Appends `event` (one whole line) after every event queued before it, and returns only
    /// once it is in the log, the records queued leaving with it ([`StageOutput::commit`]). For an
    /// act that must not happen unrecorded (sc-exec's backends): the act follows only on `Ok`,
    /// and on an error nothing queued leaves.
    pub(crate) fn write_ahead(&mut self, event: &[u8]) -> Result<()> {
        debug_assert!(event.ends_with(b"\n"));
        // What was queued leaves first: a closed stdout or a failed append stops the stage
        // before the event, so the log never says an act is about to happen that then did not.
        self.commit()?;
        self.pending_audit.extend_from_slice(event);
        self.commit()
    }

    /// Sends the batch's audit events to the auditor thread and keeps its records until they
    /// are appended; first lands the oldest batch in flight if [`IN_FLIGHT`] are.
    fn commit_in_background(&mut self) -> Result<()> {
        self.refuse_after_failure()?;
        self.auditor.start_thread()?;
        while self.in_flight.len() >= IN_FLIGHT {
            self.land_oldest()?;
        }
        if self.pending_audit.is_empty() {
            self.land_in_flight()?;
            // Records passed through untouched have no events of this stage to wait for.
            let records = take_batch(&mut self.pending_records, &mut self.spare.records);
            let narration = take_batch(&mut self.pending_narration, &mut self.spare.narration);
            return self.write_out(records, narration, false);
        }
        self.send_pending()
    }

    fn send_pending(&mut self) -> Result<()> {
        let Auditor::Thread { batches, .. } = &self.auditor else {
            anyhow::bail!("the audit thread stopped unexpectedly");
        };
        let batch = Batch {
            events: take_batch(&mut self.pending_audit, &mut self.spare.audit),
            records: take_batch(&mut self.pending_records, &mut self.spare.records),
        };
        if batches.send(batch).is_err() {
            // The thread stopped at an append that failed: its error waits behind the batches
            // appended before it, which leave; the failed one and those after it never do.
            self.land_in_flight()?;
            self.auditor.stop();
            return Err(self.fail(anyhow::anyhow!("the audit thread stopped unexpectedly")));
        }
        let narration = take_batch(&mut self.pending_narration, &mut self.spare.narration);
        self.in_flight.push_back(narration);
        Ok(())
    }

    /// Waits for the batches in flight, if any, and writes their records once appended.
    fn land_in_flight(&mut self) -> Result<()> {
        while !self.in_flight.is_empty() {
            self.land_oldest()?;
        }
        Ok(())
    }

    /// Waits for the oldest batch in flight, if any, and writes its records once appended.
    fn land_oldest(&mut self) -> Result<()> {
        let Some(narration) = self.in_flight.pop_front() else {
            return Ok(());
        };
        let Batch { events, records } = match self.auditor.wait() {
            Ok(batch) => batch,
            Err(err) => {
                // The thread stopped at the failed append: the batches behind it never leave.
                self.in_flight.clear();
                return Err(self.fail(err));
            }
        };
        give_back(&mut self.spare.audit, events);
        self.write_out(records, narration, false)
    }

    /// Keeps why an append failed, so that nothing more leaves ([`StageOutput::failed`]).
    fn fail(&mut self, err: anyhow::Error) -> anyhow::Error {
        self.failed.get_or_insert_with(|| format!("{err:#}"));
        err
    }

    /// Refuses to write anything once an append has failed.
    fn refuse_after_failure(&self) -> Result<()> {
        match &self.failed {
            Some(why) => {
                anyhow::bail!("nothing more is written after an audit append failed: {why}")
            }
            None => Ok(()),
        }
    }

    /// Writes records (then narration) whose audit events are appended, keeping the buffers.
    fn write_out(&mut self, records: Vec<u8>, narration: Vec<u8>, flush: bool) -> Result<()> {
        if !records.is_empty() {
            self.stdout.write_all(&records)?;
        }
        if flush {
            self.stdout.flush()?;
        }
        if let Some(stderr) = &mut self.narration {
            if !narration.is_empty() {
                // Narration is a courtesy: a closed stderr must not stop the stream.
                let _ = stderr.write_all(&narration);
                let _ = stderr.flush();
            }
        }
        give_back(&mut self.spare.records, records);
        give_back(&mut self.spare.narration, narration);
        Ok(())
    }

    /// Commits what is left; used at the end of input and before waiting on a person.
    pub fn finish(mut self) -> Result<()> {
        self.commit()
    }
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
