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

use anyhow::{Context, Result};
use serde::Serialize;

use crate::audit::AuditLog;

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
        Ok(Box::new(file))
    }
}

pub type LineSource = Box<dyn Read>;

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

/// Reads lines of at most `max` bytes into one reused buffer.
pub struct LineReader<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    number: u64,
}

impl<R: Read> LineReader<R> {
    pub fn new(reader: R, max: usize) -> Self {
        LineReader {
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, reader),
            line: Vec::new(),
            max,
            number: 0,
        }
    }

    /// The 1-based number of the line last returned.
    pub fn line_number(&self) -> u64 {
        self.number
    }

    /// Whether a whole line is already buffered, so the next read will not block.
    pub fn has_complete_line(&self) -> bool {
        self.reader.buffer().contains(&b'\n')
    }

    /// The next line, or `None` at end of input. A last line without `\n` is still a line.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.line.clear();
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
            let (chunk, found_end) = match available.iter().position(|&b| b == b'\n') {
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
}

impl Default for JsonLine {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonLine {
    pub fn new() -> Self {
        JsonLine { buf: vec![b'{'] }
    }

    fn key(&mut self, key: &str) {
        if self.buf.len() > 1 {
            self.buf.push(b',');
        }
        serde_json::to_writer(&mut self.buf, key).expect("writing to a Vec cannot fail");
        self.buf.push(b':');
    }

    pub fn field<T: Serialize + ?Sized>(mut self, key: &str, value: &T) -> Self {
        self.key(key);
        serde_json::to_writer(&mut self.buf, value).expect("a record field serializes");
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
pub struct StageOutput<W: Write, E: Write> {
    audit: AuditLog,
    stdout: W,
    narration: Option<E>,
    pending_audit: Vec<u8>,
    pending_records: Vec<u8>,
    pending_narration: Vec<u8>,
}

impl<W: Write, E: Write> StageOutput<W, E> {
    /// `narration` is `None` when the stage was told to be quiet.
    pub fn new(audit: AuditLog, stdout: W, narration: Option<E>) -> Self {
        StageOutput {
            audit,
            stdout,
            narration,
            pending_audit: Vec::new(),
            pending_records: Vec::new(),
            pending_narration: Vec::new(),
        }
    }

    /// Queues one audit event (a whole line) and the record it describes.
    pub fn emit(&mut self, audit_event: &[u8], record: &[u8]) {
        self.pending_audit.extend_from_slice(audit_event);
        self.pending_records.extend_from_slice(record);
    }

    /// Queues a record that needs no audit event of this stage (passed through untouched).
    pub fn pass_through(&mut self, record: &[u8]) {
        self.pending_records.extend_from_slice(record);
    }

    /// Queues one line for the person watching stderr.
    pub fn narrate(&mut self, text: &str) {
        if self.narration.is_some() {
            self.pending_narration.extend_from_slice(text.as_bytes());
            self.pending_narration.push(b'\n');
        }
    }

    /// Commits when the input is about to block or the batch is large.
    pub fn commit_if_due(&mut self, input_has_complete_line: bool) -> Result<()> {
        if !input_has_complete_line || self.pending_records.len() >= BATCH_BYTES {
            self.commit()?;
        }
        Ok(())
    }

    /// Writes the audit events, then the records, then the narration. If the audit write fails,
    /// no record of the batch leaves.
    pub fn commit(&mut self) -> Result<()> {
        if !self.pending_audit.is_empty() {
            self.audit.append(&self.pending_audit)?;
            self.pending_audit.clear();
        }
        if !self.pending_records.is_empty() {
            self.stdout.write_all(&self.pending_records)?;
            self.pending_records.clear();
        }
        self.stdout.flush()?;
        if let Some(narration) = &mut self.narration {
            if !self.pending_narration.is_empty() {
                // Narration is a courtesy: a closed stderr must not stop the stream.
                let _ = narration.write_all(&self.pending_narration);
                let _ = narration.flush();
            }
        }
        self.pending_narration.clear();
        Ok(())
    }

    /// Commits what is left; used at the end of input and before waiting on a person.
    pub fn finish(mut self) -> Result<()> {
        self.commit()
    }

    pub fn audit(&mut self) -> &mut AuditLog {
        &mut self.audit
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
}
