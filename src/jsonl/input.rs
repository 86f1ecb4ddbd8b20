//! Where lines come from: the stage's inputs in order, read with a bound on each line's length.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::{find_newline, RAW_EXCERPT_BYTES, READ_BUFFER_BYTES};
use crate::exit::Completion;

/// Where a stage reads from: files named on the command line, `-` meaning stdin, like `cat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    /// No arguments means stdin.
    pub(crate) fn from_args(args: &[OsString]) -> Vec<Input> {
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
    pub(crate) fn next_read_would_block(&self) -> bool {
        !self.has_complete_line() && self.reader.get_ref().would_block()
    }
}

/// Every line of a stage's inputs, in order: files opened one after the other, an input that
/// cannot be opened reported on `diagnostics` and counted (the others are still read), and a read
/// error an error of the stream. The one loop every stage runs.
pub(crate) struct InputLines<'a> {
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
    pub(crate) fn next_line(&mut self) -> Result<Option<(Line<'_>, &'a Input, u64)>> {
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
    pub(crate) fn next_read_would_block(&self) -> bool {
        self.current
            .as_ref()
            .is_none_or(|(_, reader)| reader.next_read_would_block())
    }

    /// How the inputs went: how many could not be opened.
    pub(crate) fn completion(&self) -> Completion {
        self.completion
    }
}

/// One line as read, without its `\n`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    Text(&'a [u8]),
    /// Longer than the limit: its length and the first bytes, kept for the record.
    TooLong {
        length: u64,
        start: &'a [u8],
    },
}

/// Reads lines of at most `max` bytes. A line that is whole in the read buffer is handed out
/// from there; one that straddles refills is gathered in one reused buffer.
pub(crate) struct LineReader<R> {
    reader: BufReader<R>,
    pub(super) line: Vec<u8>,
    max: usize,
    number: u64,
    /// Bytes of the read buffer that the line last handed out still occupies.
    pending: usize,
    /// Where [`LineReader::has_complete_line`] found the next line's end, past `pending`, so
    /// that [`LineReader::next_line`] does not look for it again: `(pending, end)`.
    next_end: std::cell::Cell<Option<(usize, usize)>>,
}

impl<R: Read> LineReader<R> {
    pub fn new(reader: R, max: usize) -> Self {
        LineReader {
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, reader),
            line: Vec::new(),
            max,
            number: 0,
            pending: 0,
            next_end: std::cell::Cell::new(None),
        }
    }

    /// Whether the input is used up: nothing buffered and nothing more to read. May wait for
    /// input, as reading the next line would.
    pub(crate) fn at_end(&mut self) -> io::Result<bool> {
        // A line's end already found stays found: the buffer it is in is not refilled while
        // it holds a line (only an empty one is).
        let known = self.next_end.take();
        let pending = std::mem::take(&mut self.pending);
        self.reader.consume(pending);
        if let Some((_, end)) = known.filter(|&(at, _)| at == pending) {
            self.next_end.set(Some((0, end)));
        }
        loop {
            match self.reader.fill_buf() {
                Ok(bytes) => return Ok(bytes.is_empty()),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            }
        }
    }

    /// The 1-based number of the line last returned.
    pub(crate) fn line_number(&self) -> u64 {
        self.number
    }

    /// Whether a whole line is already buffered, so the next read will not block.
    pub(crate) fn has_complete_line(&self) -> bool {
        let end = find_newline(&self.reader.buffer()[self.pending..]);
        self.next_end.set(end.map(|end| (self.pending, end)));
        end.is_some()
    }

    /// The next line, or `None` at end of input. A last line without `\n` is still a line.
    pub(crate) fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        let known_end = match self.next_end.take() {
            Some((pending, end)) if pending == self.pending => Some(end),
            _ => None,
        };
        self.reader.consume(std::mem::take(&mut self.pending));
        self.line.clear();
        // The common case: the whole line is already in the read buffer.
        let whole = match self.reader.buffer() {
            [] => None,
            buffered => known_end
                .or_else(|| find_newline(buffered))
                .filter(|&end| end <= self.max),
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
