//! JSON Lines stream I/O shared by every stage: where lines come from, how they are read with a
//! bound on their length, how records are written, and when output leaves the process.
//!
//! Memory stays flat however long the input is: a line is read into one reused buffer, and a line
//! over the limit is counted and skipped, never stored. Output is held in a batch and leaves in one
//! write when the input has no complete line waiting (so a verdict goes out as soon as it is decided
//! when the input pauses) or when the batch is large (so fast input is block-buffered). The audit
//! events of a batch are written, in one locked append, before the batch's records leave.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::audit::AuditLog;
use crate::exit::Completion;

/// The default longest line a stage reads: 1 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 1 << 20;
/// The default longest record line the later stages read: 4 MiB, room for a verdict that
/// carries a call of the longest size sc-gate accepts.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 4 * DEFAULT_MAX_LINE_BYTES;
/// How much raw text of a malformed line is kept in its verdict and audit event.
pub const RAW_EXCERPT_BYTES: usize = 1024;
const READ_BUFFER_BYTES: usize = 64 * 1024;
const BATCH_BYTES: usize = 64 * 1024;

/// Where a stage reads from: files named on the command line, `-` meaning stdin, like `cat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    /// No arguments means stdin.
    pub fn from_args(args: &[OsString]) -> Vec<Input> {
        if args.is_empty() {
            return vec![Input::Stdin];
        }
        args.iter()
            .map(|arg| match arg.to_str() {
                Some("-") => Input::Stdin,
                _ => Input::File(PathBuf::from(arg)),
            })
            .collect()
    }

    pub fn name(&self) -> String {
        match self {
            Input::Stdin => "<stdin>".to_owned(),
            Input::File(path) => path.display().to_string(),
        }
    }

    /// Opens the input. Stdin is read through its own descriptor, without std's buffer, so that
    /// [`LineReader::has_complete_line`] sees every byte that is waiting.
    pub fn open(&self) -> Result<LineSource> {
        let file = self.open_file()?;
        // A regular file is always readable: reading it never waits for a writer.
        let regular = file.metadata().map(|m| m.is_file()).unwrap_or(false);
        Ok(LineSource { file, regular })
    }

    fn open_file(&self) -> Result<File> {
        let file = match self {
            Input::Stdin => File::from(
                io::stdin()
                    .as_fd()
                    .try_clone_to_owned()
                    .context("cannot read stdin")?,
            ),
            Input::File(path) => {
                File::open(path).with_context(|| format!("cannot open {}", path.display()))?
            }
        };
        Ok(file)
    }
}

/// An opened input: a file, or stdin (which may be a pipe or a terminal).
pub struct LineSource {
    file: File,
    regular: bool,
}

impl Read for LineSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }
}

impl LineSource {
    /// Whether a read would wait: never for a regular file, else when nothing is waiting to be
    /// read (nor the end of the input).
    fn would_block(&self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        if self.regular {
            return false;
        }
        let mut fds = [PollFd::new(self.file.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(0) => true,
            Ok(_) => false,
            // Unsure: act as if the read would wait, so that nothing decided is held back.
            Err(_) => true,
        }
    }
}

impl LineReader<LineSource> {
    /// Whether reading the next line may wait for input: no whole line is buffered and the
    /// source has nothing waiting. Stages commit (audit, then records, then flush) before such a
    /// read, and not at every read-buffer boundary of a file or a busy pipe.
    pub fn next_read_would_block(&self) -> bool {
        !self.has_complete_line() && self.reader.get_ref().would_block()
    }
}

/// Every line of a stage's inputs, in order: files opened one after the other, an input that
/// cannot be opened reported on `diagnostics` and counted (the others are still read), and a read
/// error an error of the stream. The one loop every stage runs.
pub struct InputLines<'a> {
    program: &'a str,
    inputs: std::slice::Iter<'a, Input>,
    current: Option<(&'a Input, LineReader<LineSource>)>,
    max_line_bytes: usize,
    diagnostics: &'a mut dyn Write,
    completion: Completion,
}

impl<'a> InputLines<'a> {
    pub fn new(
        program: &'a str,
        inputs: &'a [Input],
        max_line_bytes: usize,
        diagnostics: &'a mut dyn Write,
    ) -> Self {
        InputLines {
            program,
            inputs: inputs.iter(),
            current: None,
            max_line_bytes,
            diagnostics,
            completion: Completion::default(),
        }
    }

    /// The next line (blank ones too: a stage may have to commit after them), with the input it
    /// came from and its 1-based number there; `None` when every input is read.
    pub fn next_line(&mut self) -> Result<Option<(Line<'_>, &'a Input, u64)>> {
        loop {
            match &mut self.current {
                None => {
                    let Some(input) = self.inputs.next() else {
                        return Ok(None);
                    };
                    match input.open() {
                        Ok(source) => {
                            let reader = LineReader::new(source, self.max_line_bytes);
                            self.current = Some((input, reader));
                        }
                        Err(err) => {
                            let _ = writeln!(self.diagnostics, "{}: {err:#}", self.program);
                            self.completion.unreadable_inputs += 1;
                        }
                    }
                }
                Some((input, reader)) => {
                    let name = || format!("cannot read {}", input.name());
                    if !reader.at_end().with_context(name)? {
                        break;
                    }
                    self.current = None;
                }
            }
        }
        let (input, reader) = self.current.as_mut().expect("an input with a line waiting");
        let input: &'a Input = input;
        let number = reader.line_number() + 1;
        let line = reader
            .next_line()
            .with_context(|| format!("cannot read {}", input.name()))?
            .expect("a line was waiting");
        Ok(Some((line, input, number)))
    }

    /// Whether reading the next line may wait for input (see [`LineReader::next_read_would_block`]).
    pub fn next_read_would_block(&self) -> bool {
        self.current
            .as_ref()
            .is_none_or(|(_, reader)| reader.next_read_would_block())
    }

    /// How the inputs went: how many could not be opened.
    pub fn completion(&self) -> Completion {
        self.completion
    }
}

/// One line as read, without its `\n`.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    Text(&'a [u8]),
    /// Longer than the limit: its length and the first bytes, kept for the record.
    TooLong {
        length: u64,
        start: &'a [u8],
    },
}

/// Reads lines of at most `max` bytes. A line that is whole in the read buffer is handed out
/// from there; one that straddles refills is gathered in one reused buffer.
pub struct LineReader<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    number: u64,
    /// Bytes of the read buffer that the line last handed out still occupies.
    pending: usize,
}

impl<R: Read> LineReader<R> {
    pub fn new(reader: R, max: usize) -> Self {
        LineReader {
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, reader),
            line: Vec::new(),
            max,
            number: 0,
            pending: 0,
        }
    }

    /// Whether the input is used up: nothing buffered and nothing more to read. May wait for
    /// input, as reading the next line would.
    pub fn at_end(&mut self) -> io::Result<bool> {
        self.reader.consume(std::mem::take(&mut self.pending));
        loop {
            match self.reader.fill_buf() {
                Ok(bytes) => return Ok(bytes.is_empty()),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            }
        }
    }

    /// The 1-based number of the line last returned.
    pub fn line_number(&self) -> u64 {
        self.number
    }

    /// Whether a whole line is already buffered, so the next read will not block.
    pub fn has_complete_line(&self) -> bool {
        find_newline(&self.reader.buffer()[self.pending..]).is_some()
    }

    /// The next line, or `None` at end of input. A last line without `\n` is still a line.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.reader.consume(std::mem::take(&mut self.pending));
        self.line.clear();
        // The common case: the whole line is already in the read buffer.
        let whole = match self.reader.buffer() {
            [] => None,
            buffered => find_newline(buffered).filter(|&end| end <= self.max),
        };
        if let Some(end) = whole {
            self.pending = end + 1;
            self.number += 1;
            return Ok(Some(Line::Text(&self.reader.buffer()[..end])));
        }
        let mut length: u64 = 0;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if available.is_empty() {
                if length == 0 {
                    return Ok(None);
                }
                break;
            }
            let (chunk, found_end) = match find_newline(available) {
                Some(end) => (&available[..end], true),
                None => (available, false),
            };
            let room = (self.max + 1).saturating_sub(self.line.len());
            self.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            length += chunk.len() as u64;
            let used = chunk.len() + usize::from(found_end);
            self.reader.consume(used);
            if found_end {
                break;
            }
        }
        self.number += 1;
        if length > self.max as u64 {
            let start = &self.line[..self.line.len().min(RAW_EXCERPT_BYTES)];
            return Ok(Some(Line::TooLong { length, start }));
        }
        Ok(Some(Line::Text(&self.line)))
    }
}

/// The position of the first `\n`, a word at a time.
pub fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const NEWLINES: u64 = ONES * b'\n' as u64;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes")) ^ NEWLINES;
        if (word.wrapping_sub(ONES) & !word & HIGHS) != 0 {
            break;
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| b == b'\n').map(|i| at + i)
}

/// How serde_json escapes each byte inside a string: 0 for none, else the letter after `\`.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = b'u';
        i += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// How many bytes at the start of `bytes` need no attention inside a JSON string: no quote, no
/// backslash, no control character (what the call scanner skips and [`push_json_str`] copies
/// unescaped). Eight bytes at a time while it can.
#[inline]
pub fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut run = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        let special = word.wrapping_sub(ONES * 0x20)
            | quote.wrapping_sub(ONES)
            | backslash.wrapping_sub(ONES);
        let found = special & !word & HIGHS;
        if found != 0 {
            // The lowest flagged byte is exact (a borrow only runs upwards from a true match).
            return run + (found.trailing_zeros() / 8) as usize;
        }
        run += 8;
    }
    while let Some(&byte) = bytes.get(run) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        run += 1;
    }
    run
}

/// Appends `text` as a JSON string, escaped byte for byte as `serde_json` escapes it.
#[inline]
pub fn push_json_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let clean = plain_run(bytes);
    let mut start = 0;
    for i in clean..bytes.len() {
        let byte = bytes[i];
        let escape = ESCAPE[byte as usize];
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        start = i + 1;
        if escape == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(byte >> 4) as usize],
                HEX[(byte & 0xf) as usize],
            ]);
        } else {
            out.extend_from_slice(&[b'\\', escape]);
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends an unsigned integer in decimal.
pub fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Whether a line holds nothing but white space (blank lines are skipped).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// A bounded, lossless-where-possible excerpt of a line for `raw` fields.
pub fn raw_excerpt(line: &[u8]) -> String {
    let cut = &line[..line.len().min(RAW_EXCERPT_BYTES)];
    let mut text = String::from_utf8_lossy(cut).into_owned();
    if line.len() > RAW_EXCERPT_BYTES {
        text.push('…');
    }
    text
}

/// Builds one JSON object as a line, field by field; raw fields splice JSON text that is already
/// valid (a call exactly as it came).
pub struct JsonLine {
    buf: Vec<u8>,
    /// Where the object being written opens (its `{`).
    open: usize,
}

impl Default for JsonLine {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonLine {
    pub fn new() -> Self {
        Self::with_capacity(256)
    }

    /// A line with room for about `bytes` bytes.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes);
        buf.push(b'{');
        JsonLine { buf, open: 0 }
    }

    /// A line written at the end of `buf` (a batch of lines), which [`JsonLine::finish`] gives
    /// back; nothing is copied.
    pub fn append_to(mut buf: Vec<u8>) -> Self {
        let open = buf.len();
        buf.push(b'{');
        JsonLine { buf, open }
    }

    /// How long the buffer is so far, to mark where a field starts or ends.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.len() == self.open + 1
    }

    /// Adds fields that are already written: `members` is `"key":value` text, one or more
    /// members separated by commas (part of another line, say).
    pub fn raw_members(mut self, members: &[u8]) -> Self {
        if !members.is_empty() {
            if self.buf.len() > self.open + 1 {
                self.buf.push(b',');
            }
            self.buf.extend_from_slice(members);
        }
        self
    }

    fn key(&mut self, key: &str) {
        if self.buf.len() > self.open + 1 {
            self.buf.push(b',');
        }
        push_json_str(&mut self.buf, key);
        self.buf.push(b':');
    }

    pub fn field<T: Serialize + ?Sized>(mut self, key: &str, value: &T) -> Self {
        self.key(key);
        serde_json::to_writer(&mut self.buf, value).expect("a record field serializes");
        self
    }

    /// A string field; the same bytes as [`JsonLine::field`] gives, written directly.
    pub fn str_field(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        push_json_str(&mut self.buf, value);
        self
    }

    /// An array of strings; the same bytes as [`JsonLine::field`] gives, written directly.
    pub fn strs_field<S: AsRef<str>>(mut self, key: &str, values: &[S]) -> Self {
        self.key(key);
        self.buf.push(b'[');
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            push_json_str(&mut self.buf, value.as_ref());
        }
        self.buf.push(b']');
        self
    }

    /// An object field built by `fill`, which adds its fields to the inner object.
    pub fn object_field(mut self, key: &str, fill: impl FnOnce(JsonLine) -> JsonLine) -> Self {
        self.key(key);
        self.buf.push(b'{');
        let inner = fill(JsonLine {
            open: self.buf.len() - 1,
            buf: std::mem::take(&mut self.buf),
        });
        self.buf = inner.buf;
        self.buf.push(b'}');
        self
    }

    /// `json` must be one valid JSON value.
    pub fn raw_field(mut self, key: &str, json: &str) -> Self {
        self.key(key);
        self.buf.extend_from_slice(json.as_bytes());
        self
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.buf.extend_from_slice(b"}\n");
        self.buf
    }
}

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
    /// A batch whose audit events are being appended on the auditor thread: its records and
    /// narration, to be written once the append has succeeded.
    in_flight: Option<(Vec<u8>, Vec<u8>)>,
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

/// Who appends the audit events: this thread, or a thread of its own.
enum Auditor {
    Inline(AuditLog),
    Thread {
        batches: SyncSender<Vec<u8>>,
        appended: Receiver<(Vec<u8>, Result<()>)>,
        thread: JoinHandle<AuditLog>,
    },
    /// The auditor thread panicked.
    Stopped,
}

impl Auditor {
    /// Moves the log to a thread that appends each batch it is sent and answers with the
    /// outcome (and the emptied buffer, for reuse).
    fn start_thread(&mut self) -> Result<()> {
        let Auditor::Inline(_) = self else {
            return Ok(());
        };
        let Auditor::Inline(mut log) = std::mem::replace(self, Auditor::Stopped) else {
            unreachable!()
        };
        let (batches, inbox) = sync_channel::<Vec<u8>>(1);
        let (outbox, appended) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("audit".into())
            .spawn(move || {
                for mut batch in inbox {
                    let result = log.append(&batch);
                    batch.clear();
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

    /// Waits for the batch on the thread; returns its emptied buffer.
    fn wait(&mut self) -> Result<Vec<u8>> {
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
    pub fn new(audit: AuditLog, stdout: W, narration: Option<E>) -> Self {
        StageOutput {
            auditor: Auditor::Inline(audit),
            stdout,
            narration,
            pending_audit: Vec::new(),
            pending_records: Vec::new(),
            pending_narration: Vec::new(),
            spare: Spares::default(),
            in_flight: None,
        }
    }

    /// Queues one audit event (a whole line) and the record it describes.
    pub fn emit(&mut self, audit_event: &[u8], record: &[u8]) {
        self.pending_audit.extend_from_slice(audit_event);
        self.pending_records.extend_from_slice(record);
    }

    /// Queues one audit event and the record it describes, written by `write` straight into the
    /// batch: `write(events, records)` appends one whole line to each.
    pub fn emit_with(&mut self, write: impl FnOnce(&mut Vec<u8>, &mut Vec<u8>)) {
        write(&mut self.pending_audit, &mut self.pending_records);
    }

    /// Queues a record that needs no audit event of this stage (passed through untouched).
    pub fn pass_through(&mut self, record: &[u8]) {
        self.pending_records.extend_from_slice(record);
    }

    /// Whether narration is wanted at all (so a quiet stage need not compose it).
    pub fn narrating(&self) -> bool {
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
    pub fn commit_if_due(&mut self, input_waiting: bool) -> Result<()> {
        if !input_waiting {
            self.commit()?;
        } else if self.pending_records.len() >= BATCH_BYTES {
            self.commit_in_background()?;
        }
        Ok(())
    }

    /// Writes the audit events, then the records, then the narration, and flushes. If the audit
    /// write fails, no record of the batch leaves.
    pub fn commit(&mut self) -> Result<()> {
        self.land_in_flight()?;
        if !self.pending_audit.is_empty() {
            match &mut self.auditor {
                Auditor::Inline(log) => log.append(&self.pending_audit)?,
                Auditor::Thread { .. } => {
                    self.send_pending()?;
                    self.land_in_flight()?;
                }
                Auditor::Stopped => anyhow::bail!("the audit thread stopped unexpectedly"),
            }
            self.pending_audit.clear();
        }
        let records = take_batch(&mut self.pending_records, &mut self.spare.records);
        let narration = take_batch(&mut self.pending_narration, &mut self.spare.narration);
        self.write_out(records, narration, true)
    }

    /// Sends the batch's audit events to the auditor thread and keeps its records until they
    /// are appended; first lands the batch sent before.
    fn commit_in_background(&mut self) -> Result<()> {
        self.auditor.start_thread()?;
        self.land_in_flight()?;
        if self.pending_audit.is_empty() {
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
        let batch = take_batch(&mut self.pending_audit, &mut self.spare.audit);
        if batches.send(batch).is_err() {
            self.auditor.stop();
            anyhow::bail!("the audit thread stopped unexpectedly");
        }
        let records = take_batch(&mut self.pending_records, &mut self.spare.records);
        let narration = take_batch(&mut self.pending_narration, &mut self.spare.narration);
        self.in_flight = Some((records, narration));
        Ok(())
    }

    /// Waits for the batch in flight, if any, and writes its records once it is appended.
    fn land_in_flight(&mut self) -> Result<()> {
        let Some((records, narration)) = self.in_flight.take() else {
            return Ok(());
        };
        let buffer = self.auditor.wait()?;
        give_back(&mut self.spare.audit, buffer);
        self.write_out(records, narration, false)
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

    /// The audit log, once the batch in flight has landed (commit first to land everything).
    pub fn audit(&mut self) -> Result<&mut AuditLog> {
        self.land_in_flight()?;
        self.auditor.stop();
        match &mut self.auditor {
            Auditor::Inline(log) => Ok(log),
            _ => anyhow::bail!("the audit thread stopped unexpectedly"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            out.push(match line {
                Line::Text(text) => String::from_utf8_lossy(text).into_owned(),
                Line::TooLong { length, start } => {
                    format!("too long {length} {}", String::from_utf8_lossy(start))
                }
            });
        }
        out
    }

    #[test]
    fn splits_lines_and_keeps_a_last_line_without_newline() {
        assert_eq!(lines(b"a\nb\n\nc", 10), ["a", "b", "", "c"]);
        assert_eq!(lines(b"", 10), Vec::<String>::new());
    }

    #[test]
    fn a_line_over_the_limit_is_reported_with_its_length_and_the_stream_goes_on() {
        assert_eq!(
            lines(b"12345\n123456\nok\n", 5),
            ["12345", "too long 6 123456", "ok"]
        );
    }

    #[test]
    fn a_huge_line_is_not_stored() {
        let mut input = vec![b'x'; 10 << 20];
        input.extend_from_slice(b"\nnext\n");
        let mut reader = LineReader::new(&input[..], 1024);
        match reader.next_line().unwrap() {
            Some(Line::TooLong { length, start }) => {
                assert_eq!(length, 10 << 20);
                assert_eq!(start.len(), RAW_EXCERPT_BYTES);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            reader.line.capacity() < 64 * 1024,
            "the line buffer grew to {}",
            reader.line.capacity()
        );
        assert_eq!(reader.next_line().unwrap(), Some(Line::Text(b"next")));
        assert_eq!(reader.line_number(), 2);
    }

    #[test]
    fn blank_lines_are_white_space_only() {
        assert!(is_blank(b""));
        assert!(is_blank(b" \t\r"));
        assert!(!is_blank(b" x"));
    }

    #[test]
    fn raw_excerpts_are_bounded() {
        let long = vec![b'a'; 5000];
        let excerpt = raw_excerpt(&long);
        assert!(excerpt.len() <= RAW_EXCERPT_BYTES + '…'.len_utf8());
        assert!(excerpt.ends_with('…'));
        assert_eq!(raw_excerpt(b"\xffok"), "\u{fffd}ok");
    }

    #[test]
    fn plain_runs_stop_at_every_special_byte_in_every_position() {
        for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
            for at in 0..20 {
                let mut bytes = vec![b'a'; 20];
                bytes[at] = special;
                assert_eq!(plain_run(&bytes), at, "{special:#x} at {at}");
            }
        }
        assert_eq!(plain_run("é€😀 ~\u{7f}".as_bytes()), "é€😀 ~\u{7f}".len());
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut every_byte = String::new();
        for c in (0u8..0x80)
            .map(char::from)
            .chain(['é', '≥', '\u{2028}', '\u{7f}', '😀'])
        {
            every_byte.push(c);
        }
        let long = format!("{}\"{}\\{}", "a".repeat(17), "b".repeat(9), "c".repeat(30));
        for text in [
            "",
            "plain",
            "tab\there",
            "\u{1b}[2J",
            "\"",
            "\\",
            &every_byte,
            &long,
        ] {
            for cut in 0..text.len().min(24) {
                let mut at = cut;
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                let text = &text[at..];
                let mut ours = Vec::new();
                push_json_str(&mut ours, text);
                assert_eq!(ours, serde_json::to_vec(text).unwrap(), "{text:?}");
            }
        }
    }

    #[test]
    fn newlines_are_found_in_every_position() {
        for len in 0..40 {
            for at in 0..len {
                let mut bytes = vec![b'x'; len];
                bytes[at] = b'\n';
                assert_eq!(find_newline(&bytes), Some(at));
            }
            assert_eq!(find_newline(&vec![0x8a; len]), None);
        }
    }

    #[test]
    fn lines_straddling_reads_are_whole() {
        /// Hands out its bytes a few at a time, as a pipe may.
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.1.min(buf.len()).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let input = b"first line\nsecond\n\nthird line here\nlast";
        for step in 1..12 {
            let mut reader = LineReader::new(Trickle(input, step), 100);
            let mut got = Vec::new();
            while let Some(Line::Text(text)) = reader.next_line().unwrap() {
                got.push(String::from_utf8(text.to_vec()).unwrap());
            }
            assert_eq!(
                got,
                ["first line", "second", "", "third line here", "last"],
                "{step}"
            );
        }
        let mut reader = LineReader::new(&b"a\nb\n"[..], 10);
        assert!(matches!(
            reader.next_line().unwrap(),
            Some(Line::Text(b"a"))
        ));
        assert!(reader.has_complete_line(), "b is waiting");
        assert!(matches!(
            reader.next_line().unwrap(),
            Some(Line::Text(b"b"))
        ));
        assert!(
            !reader.has_complete_line(),
            "the line handed out is not waiting"
        );
    }

    #[test]
    fn nested_objects_are_written_as_serde_writes_them() {
        let line = JsonLine::new()
            .str_field("a", "x")
            .object_field("o", |o| {
                o.object_field("p", |p| p.field("n", &1.5))
                    .strs_field("l", &["y", "z"])
            })
            .object_field("e", |e| e)
            .finish();
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "{\"a\":\"x\",\"o\":{\"p\":{\"n\":1.5},\"l\":[\"y\",\"z\"]},\"e\":{}}\n"
        );
    }

    #[test]
    fn json_lines_are_built_field_by_field() {
        let line = JsonLine::new()
            .field("id", "x")
            .raw_field("call", r#"{"a":1}"#)
            .field("reasons", &["r"])
            .finish();
        assert_eq!(
            line,
            b"{\"id\":\"x\",\"call\":{\"a\":1},\"reasons\":[\"r\"]}\n"
        );
    }

    #[test]
    fn input_lines_read_every_input_in_order_and_count_the_missing() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.jsonl");
        let b = dir.path().join("b.jsonl");
        std::fs::write(&a, "a1\n\na3").unwrap();
        std::fs::write(&b, "b1\n").unwrap();
        let inputs = [
            Input::File(a),
            Input::File(dir.path().join("missing.jsonl")),
            Input::File(b),
        ];
        let mut diagnostics = Vec::new();
        let mut lines = InputLines::new("sc-test", &inputs, 100, &mut diagnostics);
        let mut seen = Vec::new();
        while let Some((line, input, number)) = lines.next_line().unwrap() {
            let Line::Text(text) = line else { panic!() };
            let name = input.name();
            let file = name.rsplit('/').next().unwrap().to_owned();
            seen.push(format!("{file}:{number}:{}", String::from_utf8_lossy(text)));
        }
        assert_eq!(
            seen,
            ["a.jsonl:1:a1", "a.jsonl:2:", "a.jsonl:3:a3", "b.jsonl:1:b1"]
        );
        assert_eq!(lines.completion().unreadable_inputs, 1);
        drop(lines);
        let said = String::from_utf8(diagnostics).unwrap();
        assert!(
            said.starts_with("sc-test: cannot open") && said.contains("missing.jsonl"),
            "{said}"
        );
    }
}
