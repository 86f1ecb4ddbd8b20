//! Lines read ahead: a thread of its own reads a stage's inputs ([`InputLines`]) and turns each
//! line into what the stage decides from (a stage's pure, stateless reading of it: a call scanned,
//! a record parsed), handing them over in order, in batches, through a bounded channel. The stage's
//! thread keeps everything stateful (ids, state, decisions, output) and reads while it decides.
//!
//! Everything the stage would have seen reading the lines itself comes with the batches, in order:
//! each line's input and number; which line is the last before a read that may wait (its output
//! must leave then, so a batch ends there and is sent at once); an input that could not be opened
//! (its message, written by the stage where the reading met it); the end, with the [`Completion`];
//! or the read error that ended the stream, after every line read before it.
//!
//! Memory stays flat: a batch holds at most [`BATCH_LINE_BYTES`] of lines and [`BATCH_LINES`]
//! lines, at most [`BATCHES_QUEUED`] wait in the channel, and emptied batches come back to be
//! filled again.
//!
//! The thread is not scoped: when the stage stops early (its output failed), it returns at once
//! rather than wait for a read of a pipe that may never end. The thread then ends at its next
//! hand-over, or with the process.

use std::cell::RefCell;
use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};

use anyhow::{Context, Result};

use super::{Input, InputLines, Line};
use crate::exit::Completion;

/// The most line bytes a batch holds (a line counts its `\n`; a long line still fits whole).
pub(crate) const BATCH_LINE_BYTES: usize = 64 * 1024;
/// The most lines a batch holds, so that a batch of short lines stays small too.
pub(crate) const BATCH_LINES: usize = 512;
/// Batches waiting in the channel besides the one being read and the one being filled.
pub(crate) const BATCHES_QUEUED: usize = 2;

/// One thing the reading met, in input order.
pub(crate) enum Entry<T> {
    /// A line, as the stage's reading made it.
    Line {
        item: T,
        /// The index of its input in the stage's inputs.
        input: usize,
        /// Its 1-based number in that input.
        number: u64,
        /// Whether reading the next line may wait: the stage's output should leave after it.
        last_before_wait: bool,
    },
    /// A message for the stage's diagnostics (an input that could not be opened), one or more
    /// whole lines.
    Diagnostic(String),
}

/// Lines read ahead, in order: [`Entry`]s, and text their items point into.
pub(crate) struct Batch<T> {
    pub entries: Vec<Entry<T>>,
    /// Text the stage's reading kept of the lines (say a call's JSON), for items to point into.
    pub text: String,
    /// How the reading ended, on the last batch.
    end: Option<Result<Completion>>,
}

impl<T> Batch<T> {
    fn new() -> Self {
        Batch {
            entries: Vec::new(),
            text: String::new(),
            end: None,
        }
    }
}

/// The stage's end of the reading thread.
pub(crate) struct ReadAhead<T> {
    batches: Receiver<Batch<T>>,
    emptied: SyncSender<Batch<T>>,
    end: Option<Result<Completion>>,
    completion: Completion,
}

impl<T: Send + 'static> ReadAhead<T> {
    /// Starts reading `inputs` on a thread; `read(line, text)` makes each line's item, and may
    /// keep text of the line in the batch's `text`.
    pub(crate) fn start(
        program: &'static str,
        inputs: Vec<Input>,
        max_line_bytes: usize,
        read: impl FnMut(Line<'_>, &mut String) -> T + Send + 'static,
    ) -> Result<Self> {
        let (sender, batches) = sync_channel(BATCHES_QUEUED);
        let (emptied, recycled) = sync_channel(BATCHES_QUEUED + 2);
        std::thread::Builder::new()
            .name("read".into())
            .spawn(move || reader(program, &inputs, max_line_bytes, read, &sender, &recycled))
            .context("cannot start the reading thread")?;
        Ok(ReadAhead {
            batches,
            emptied,
            end: None,
            completion: Completion::default(),
        })
    }

    /// The next batch; `None` once every input is read. The read error that ended the reading
    /// comes after the batch of the lines read before it.
    pub(crate) fn next_batch(&mut self) -> Result<Option<Batch<T>>> {
        if let Some(end) = self.end.take() {
            // Once more after the end: the end again, as an error (it cannot be the first).
            self.end = Some(Err(anyhow::anyhow!("the input was read to its end")));
            self.completion = end?;
            return Ok(None);
        }
        match self.batches.recv() {
            Ok(mut batch) => {
                self.end = batch.end.take();
                Ok(Some(batch))
            }
            Err(_) => Err(anyhow::anyhow!("the reading thread stopped unexpectedly")),
        }
    }

    /// Gives a batch back, for the reading to empty (its thread made the items, and frees them
    /// too, which costs less than freeing them here) and fill again.
    pub(crate) fn give_back(&self, batch: Batch<T>) {
        // Full: the reader has enough batches; this one is dropped here.
        let _ = self.emptied.try_send(batch);
    }

    /// How the inputs went, once [`ReadAhead::next_batch`] said they were all read.
    pub(crate) fn completion(&self) -> Completion {
        self.completion
    }
}

/// A diagnostics writer that keeps what it is given, for the next entry.
struct Notes<'c>(&'c RefCell<Vec<u8>>);

impl Write for Notes<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The reading thread: fills batches and sends each when full, before a read that may wait, and
/// at the end. Stops when the stage is gone.
fn reader<T>(
    program: &str,
    inputs: &[Input],
    max_line_bytes: usize,
    mut read: impl FnMut(Line<'_>, &mut String) -> T,
    sender: &SyncSender<Batch<T>>,
    recycled: &Receiver<Batch<T>>,
) {
    let notes = RefCell::new(Vec::new());
    let mut diagnostics = Notes(&notes);
    let mut lines = InputLines::new(program, inputs, max_line_bytes, &mut diagnostics);
    let fresh = || match recycled.try_recv() {
        Ok(mut batch) => {
            batch.entries.clear();
            batch.text.clear();
            batch
        }
        Err(TryRecvError::Empty | TryRecvError::Disconnected) => Batch::new(),
    };
    let mut batch = fresh();
    let mut line_bytes = 0;
    let take_notes = |batch: &mut Batch<T>| {
        let mut notes = notes.borrow_mut();
        if !notes.is_empty() {
            let text = String::from_utf8_lossy(&notes).into_owned();
            notes.clear();
            batch.entries.push(Entry::Diagnostic(text));
        }
    };
    let end = loop {
        let next = lines.next_line();
        take_notes(&mut batch);
        let (line, number) = match next {
            Ok(Some((line, _, number))) => (line, number),
            Ok(None) => break Ok(()),
            Err(err) => break Err(err),
        };
        line_bytes += match &line {
            Line::Text(bytes) => bytes.len() + 1,
            Line::TooLong { start, .. } => start.len() + 1,
        };
        let item = read(line, &mut batch.text);
        let last_before_wait = lines.next_read_would_block();
        batch.entries.push(Entry::Line {
            item,
            input: lines.input_index(),
            number,
            last_before_wait,
        });
        if last_before_wait || line_bytes >= BATCH_LINE_BYTES || batch.entries.len() >= BATCH_LINES
        {
            let full = std::mem::replace(&mut batch, fresh());
            line_bytes = 0;
            if sender.send(full).is_err() {
                return;
            }
        }
    };
    take_notes(&mut batch);
    batch.end = Some(end.map(|()| lines.completion()));
    let _ = sender.send(batch);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Every entry of the reading to its end: lines as `(input, number, text, last_before_wait)`,
    /// diagnostics as `(usize::MAX, 0, message, false)`; and the batches' sizes.
    type Seen = Vec<(usize, u64, String, bool)>;

    fn read_all(inputs: Vec<Input>) -> (Seen, Vec<usize>, Completion) {
        let mut ahead = ReadAhead::start("test", inputs, 16, |line, text| match line {
            Line::Text(bytes) => {
                let start = text.len();
                text.push_str(std::str::from_utf8(bytes).unwrap());
                start..text.len()
            }
            Line::TooLong { length, .. } => {
                let start = text.len();
                text.push_str(&format!("too long: {length}"));
                start..text.len()
            }
        })
        .unwrap();
        let (mut seen, mut sizes) = (Vec::new(), Vec::new());
        while let Some(batch) = ahead.next_batch().unwrap() {
            sizes.push(batch.entries.len());
            for entry in &batch.entries {
                seen.push(match entry {
                    Entry::Line {
                        item,
                        input,
                        number,
                        last_before_wait,
                    } => (
                        *input,
                        *number,
                        batch.text[item.clone()].to_owned(),
                        *last_before_wait,
                    ),
                    Entry::Diagnostic(message) => (usize::MAX, 0, message.clone(), false),
                });
            }
            ahead.give_back(batch);
        }
        (seen, sizes, ahead.completion())
    }

    fn scratch_file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn lines_come_in_order_across_batches_and_inputs_with_the_diagnostics_in_their_place() {
        let dir = tempfile::tempdir().unwrap();
        let many: String = (0..3 * BATCH_LINES).map(|n| format!("a{n}\n")).collect();
        let a = scratch_file(&dir, "a", &many);
        let b = scratch_file(&dir, "b", "b1\n\nthis line is too long\nb4");
        let missing = dir.path().join("missing");
        let (seen, sizes, completion) =
            read_all(vec![Input::File(a), Input::File(missing), Input::File(b)]);
        assert_eq!(completion.unreadable_inputs, 1);
        assert!(sizes.len() >= 3, "{sizes:?}");
        assert!(sizes.iter().all(|&size| size <= BATCH_LINES), "{sizes:?}");
        let mut expected: Seen = (0..3 * BATCH_LINES)
            .map(|n| (0, n as u64 + 1, format!("a{n}"), false))
            .collect();
        let note = &seen[3 * BATCH_LINES].2;
        assert!(note.starts_with("test: cannot open") && note.contains("missing"));
        expected.push((usize::MAX, 0, note.clone(), false));
        expected.extend([
            (2, 1, "b1".to_owned(), false),
            (2, 2, String::new(), false),
            (2, 3, "too long: 21".to_owned(), false),
            (2, 4, "b4".to_owned(), false),
        ]);
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_batch_ends_and_leaves_at_a_line_after_which_the_input_waits() {
        let (reading, mut writing) = io::pipe().unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&reading);
        let input = Input::File(PathBuf::from(format!("/dev/fd/{fd}")));
        let mut ahead = ReadAhead::start("test", vec![input], 64, |line, _| match line {
            Line::Text(bytes) => bytes.to_vec(),
            Line::TooLong { .. } => Vec::new(),
        })
        .unwrap();
        writing.write_all(b"first\n").unwrap();
        // The input stays open: the batch comes because the reader saw it would wait.
        let batch = ahead.next_batch().unwrap().unwrap();
        match &batch.entries[..] {
            [Entry::Line {
                item,
                last_before_wait: true,
                ..
            }] => assert_eq!(item, b"first"),
            _ => panic!("one line, marked as the last before a wait"),
        }
        ahead.give_back(batch);
        writing.write_all(b"second\n").unwrap();
        drop(writing);
        let mut rest = Vec::new();
        while let Some(batch) = ahead.next_batch().unwrap() {
            for entry in &batch.entries {
                if let Entry::Line { item, .. } = entry {
                    rest.push(item.clone());
                }
            }
        }
        assert_eq!(rest, [b"second".to_vec()]);
        drop(reading);
    }

    #[test]
    fn a_read_error_comes_after_the_lines_read_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = scratch_file(&dir, "a", "one\ntwo\n");
        let mut ahead = ReadAhead::start(
            "test",
            vec![Input::File(a), Input::File(dir.path().to_owned())],
            64,
            |_, _| (),
        )
        .unwrap();
        let mut lines = 0;
        let err = loop {
            match ahead.next_batch() {
                Ok(Some(batch)) => lines += batch.entries.len(),
                Ok(None) => panic!("a folder read as an input"),
                Err(err) => break err,
            }
        };
        assert_eq!(lines, 2);
        assert!(format!("{err:#}").contains("cannot read"), "{err:#}");
    }
}
