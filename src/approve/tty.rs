//! The person's terminal: `/dev/tty`, the controlling terminal, not stdin (which carries records).
//!
//! A question is asked by discarding anything typed ahead (so a stray earlier `yes` cannot answer
//! a prompt not yet shown), writing the prompt, and reading one line with a deadline. End of input
//! (Ctrl-D), a read error and the deadline are all answers of their own, which the approver turns
//! into a decline.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::termios::{tcflush, FlushArg};

/// The longest answer kept; the rest of a longer line is read and dropped.
const MAX_ANSWER_BYTES: usize = 1024;

/// What came back from the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TtyReply {
    /// A line, without its line ending.
    Line(String),
    /// End of input (Ctrl-D on an empty line, or the terminal went away).
    Eof,
    /// No whole line before the deadline.
    TimedOut,
}

/// The controlling terminal, opened for reading and writing.
pub struct Terminal {
    file: File,
}

impl Terminal {
    /// Opens `/dev/tty`. Fails when the process has no controlling terminal.
    pub fn open() -> io::Result<Terminal> {
        let file = OpenOptions::new().read(true).write(true).open("/dev/tty")?;
        Ok(Terminal { file })
    }

    /// Shows `prompt` and reads one line; `timeout` of `None` waits forever.
    pub fn ask(&mut self, prompt: &str, timeout: Option<Duration>) -> io::Result<TtyReply> {
        // The prompt line is this stage's until the answer: the others' lines wait (`turn`).
        let _turn = super::turn::Asking::take();
        // Type-ahead is discarded; a terminal that cannot flush is still asked.
        let _ = tcflush(self.file.as_fd(), FlushArg::TCIFLUSH);
        self.file.write_all(prompt.as_bytes())?;
        self.file.flush()?;
        self.read_line(timeout.map(|t| Instant::now() + t))
    }

    /// Writes text to the terminal (the approver's confirmation after an answer).
    pub fn say(&mut self, text: &str) -> io::Result<()> {
        self.file.write_all(text.as_bytes())?;
        self.file.flush()
    }

    fn read_line(&mut self, deadline: Option<Instant>) -> io::Result<TtyReply> {
        let mut line = Vec::new();
        let mut chunk = [0u8; 256];
        loop {
            if !self.wait_readable(deadline)? {
                return Ok(TtyReply::TimedOut);
            }
            let read = match self.file.read(&mut chunk) {
                Ok(read) => read,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if read == 0 {
                return Ok(TtyReply::Eof);
            }
            let chunk = &chunk[..read];
            let end = chunk.iter().position(|&b| b == b'\n');
            let part = &chunk[..end.unwrap_or(read)];
            let room = MAX_ANSWER_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&part[..part.len().min(room)]);
            if end.is_some() {
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(TtyReply::Line(String::from_utf8_lossy(&line).into_owned()));
            }
        }
    }

    /// Waits until the terminal has input; `false` when the deadline passed first.
    fn wait_readable(&self, deadline: Option<Instant>) -> io::Result<bool> {
        loop {
            let timeout = match deadline {
                None => PollTimeout::NONE,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(false);
                    }
                    // Round up so a few microseconds left do not become a busy zero timeout.
                    let millis = left.as_millis().saturating_add(1).min(i32::MAX as u128) as i32;
                    PollTimeout::try_from(millis).unwrap_or(PollTimeout::MAX)
                }
            };
            let mut fds = [PollFd::new(self.file.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(0) => continue,        // the loop re-checks the deadline
                Ok(_) => return Ok(true), // readable, or hung up: the read says which
                Err(nix::errno::Errno::EINTR) => continue,
                Err(errno) => return Err(io::Error::from(errno)),
            }
        }
    }
}
