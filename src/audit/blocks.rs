//! The block reader under `sc-report` and `sc-report --verify`. Reading a log on two threads: the
//! caller's thread reads the file in blocks and hands each to a worker thread, which reads what the lines say (the part of the work that needs nothing of the
//! lines before), and hands it back; the caller takes the blocks back in order. A few blocks of a
//! megabyte circulate, so memory stays flat however long the log is. Lines are cut out of the
//! blocks by a [`Splitter`], on either thread, in place where a line is whole in its block.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::json_write::find_newline;

/// How many bytes a block holds.
const BLOCK_BYTES: usize = 1 << 20;
/// How many blocks circulate: one being filled, one being read by the worker, one being taken.
const BLOCKS: usize = 3;

/// Bytes of a log, in order.
#[derive(Default)]
pub(crate) struct Block {
    pub bytes: Vec<u8>,
    /// The log ends after these bytes.
    pub end: bool,
}

/// Fills a block from the log: a megabyte, or what is left.
pub(crate) fn read_block(log: &mut impl Read, block: &mut Block) -> io::Result<()> {
    block.bytes.clear();
    let read = log.take(BLOCK_BYTES as u64).read_to_end(&mut block.bytes)?;
    block.end = read < BLOCK_BYTES;
    Ok(())
}

/// A block and what the worker made of it.
#[derive(Default)]
pub(crate) struct Done<O> {
    pub block: Block,
    pub output: O,
}

/// The worker thread and the blocks in its care.
pub(crate) struct Worker<O: Send + 'static> {
    to_worker: Option<SyncSender<Done<O>>>,
    from_worker: Receiver<Done<O>>,
    thread: Option<JoinHandle<()>>,
    free: Vec<Done<O>>,
    in_flight: usize,
    /// The block last handed back to the caller, free again at the next call.
    taken: Option<Done<O>>,
    at_end: bool,
}

impl<O: Default + Send + 'static> Worker<O> {
    /// Starts the worker; `work` reads a block into its output (which it should clear first).
    pub fn new(mut work: impl FnMut(&Block, &mut O) + Send + 'static) -> io::Result<Self> {
        let (to_worker, blocks) = sync_channel::<Done<O>>(BLOCKS);
        let (done, from_worker) = sync_channel::<Done<O>>(BLOCKS);
        let thread = std::thread::Builder::new()
            .name("sc-report-lines".into())
            .spawn(move || {
                for mut item in blocks {
                    work(&item.block, &mut item.output);
                    if done.send(item).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Worker {
            to_worker: Some(to_worker),
            from_worker,
            thread: Some(thread),
            free: (0..BLOCKS).map(|_| Done::default()).collect(),
            in_flight: 0,
            taken: None,
            at_end: false,
        })
    }

    /// The next block of `log`, in order, with what the worker made of it; `None` after the
    /// block that ends the log.
    pub fn next(&mut self, log: &mut impl Read) -> io::Result<Option<&Done<O>>> {
        if let Some(taken) = self.taken.take() {
            self.free.push(taken);
        }
        while !self.at_end {
            let Some(mut item) = self.free.pop() else {
                break;
            };
            read_block(log, &mut item.block)?;
            self.at_end = item.block.end;
            let sender = self.to_worker.as_ref().ok_or_else(worker_stopped)?;
            sender.send(item).map_err(|_| worker_stopped())?;
            self.in_flight += 1;
        }
        if self.in_flight == 0 {
            return Ok(None);
        }
        let item = self.from_worker.recv().map_err(|_| worker_stopped())?;
        self.in_flight -= 1;
        Ok(Some(&*self.taken.insert(item)))
    }
}

fn worker_stopped() -> io::Error {
    io::Error::other("the thread reading the log stopped unexpectedly")
}

impl<O: Send + 'static> Drop for Worker<O> {
    fn drop(&mut self) {
        // Closing its input ends the worker once the block in hand is read.
        self.to_worker = None;
        while self.in_flight > 0 && self.from_worker.recv().is_ok() {
            self.in_flight -= 1;
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What a [`Splitter`] does with a line longer than its limit.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Long {
    /// Reports its length only, as [`crate::jsonl::LineReader`] does.
    Skip,
    /// Hands it out in pieces of the limit (the last piece ends the line).
    Pieces,
}

/// One line as a [`Splitter`] hands it out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// The line, and whether it ended with `\n` (which `text` leaves out).
    Text {
        text: &'a [u8],
        newline: bool,
    },
    TooLong {
        length: u64,
    },
}

/// Cuts the lines out of successive blocks of a log.
pub(crate) struct Splitter {
    max: usize,
    long: Long,
    /// The start of a line that goes on in the next block (at most `max + 1` bytes of it).
    carry: Vec<u8>,
    /// How long that line is so far.
    carried: u64,
}

impl Splitter {
    pub fn new(max: usize, long: Long) -> Splitter {
        Splitter {
            max,
            long,
            carry: Vec::new(),
            carried: 0,
        }
    }

    /// Hands each line that ends in this block to `each`, in order; at the end of the log, the
    /// last line too if it has no `\n`.
    pub fn split(&mut self, block: &Block, mut each: impl FnMut(Line)) {
        let mut rest = &block.bytes[..];
        while !rest.is_empty() {
            let (part, newline) = match find_newline(rest) {
                Some(end) => (&rest[..end], true),
                None => (rest, false),
            };
            rest = &rest[(part.len() + usize::from(newline)).min(rest.len())..];
            if let Long::Pieces = self.long {
                self.pieces(part, newline, &mut each);
                continue;
            }
            if newline && self.carried == 0 {
                // The common case: the whole line is in this block.
                if part.len() <= self.max {
                    each(Line::Text {
                        text: part,
                        newline,
                    });
                } else {
                    each(Line::TooLong {
                        length: part.len() as u64,
                    });
                }
                continue;
            }
            self.carried += part.len() as u64;
            let room = (self.max + 1).saturating_sub(self.carry.len());
            self.carry.extend_from_slice(&part[..part.len().min(room)]);
            if newline {
                self.hand_out_carry(true, &mut each);
            }
        }
        if block.end && self.carried > 0 {
            self.hand_out_carry(false, &mut each);
        }
    }

    fn hand_out_carry(&mut self, newline: bool, each: &mut impl FnMut(Line)) {
        if self.carried > self.max as u64 {
            each(Line::TooLong {
                length: self.carried,
            });
        } else {
            each(Line::Text {
                text: &self.carry,
                newline,
            });
        }
        self.carry.clear();
        self.carried = 0;
    }

    /// [`Long::Pieces`]: a piece is handed out when its line ends, or as soon as it holds `max`
    /// bytes (the `\n` counted), as `take(max).read_until(b'\n', ..)` reads.
    fn pieces(&mut self, mut part: &[u8], newline: bool, each: &mut impl FnMut(Line)) {
        loop {
            let room = self.max - self.carry.len();
            if part.len() < room {
                if !newline {
                    self.carry.extend_from_slice(part);
                } else if self.carry.is_empty() {
                    each(Line::Text {
                        text: part,
                        newline,
                    });
                } else {
                    self.carry.extend_from_slice(part);
                    each(Line::Text {
                        text: &self.carry,
                        newline,
                    });
                    self.carry.clear();
                }
                self.carried = self.carry.len() as u64;
                return;
            }
            self.carry.extend_from_slice(&part[..room]);
            part = &part[room..];
            each(Line::Text {
                text: &self.carry,
                newline: false,
            });
            self.carry.clear();
            self.carried = 0;
            if part.is_empty() && !newline {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonl::{self, LineReader};

    /// The lines `LineReader` reads, in the splitter's terms.
    fn reference(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            out.push(match line {
                jsonl::Line::Text(text) => String::from_utf8_lossy(text).into_owned(),
                jsonl::Line::TooLong { length, .. } => format!("<{length}>"),
            });
        }
        out
    }

    fn split(input: &[u8], max: usize, cuts: &[usize], long: Long) -> Vec<String> {
        let mut splitter = Splitter::new(max, long);
        let mut out = Vec::new();
        let mut each = |line: Line| {
            out.push(match line {
                Line::Text { text, newline } => {
                    let mut shown = String::from_utf8_lossy(text).into_owned();
                    if newline && matches!(long, Long::Pieces) {
                        shown.push('\n');
                    }
                    shown
                }
                Line::TooLong { length } => format!("<{length}>"),
            })
        };
        let mut start = 0;
        let mut bounds: Vec<usize> = cuts.iter().map(|&c| c.min(input.len())).collect();
        bounds.sort_unstable();
        bounds.push(input.len());
        let last = bounds.len() - 1;
        for (n, &end) in bounds.iter().enumerate() {
            let end = end.max(start);
            let block = Block {
                bytes: input[start..end].to_vec(),
                end: n == last,
            };
            splitter.split(&block, &mut each);
            start = end;
        }
        out
    }

    /// What the verifier read before: pieces of at most `max` bytes, each with its `\n`.
    fn pieces_reference(input: &[u8], max: usize) -> Vec<String> {
        use std::io::{BufRead, BufReader};
        let mut reader = BufReader::new(input);
        let mut out = Vec::new();
        loop {
            let mut line = Vec::new();
            let read = (&mut reader)
                .take(max as u64)
                .read_until(b'\n', &mut line)
                .unwrap();
            if read == 0 {
                return out;
            }
            out.push(String::from_utf8_lossy(&line).into_owned());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(3000))]

        /// However a log is cut into blocks, the splitter reads the lines `LineReader` reads, and
        /// the pieces the verifier read.
        #[test]
        fn the_splitter_reads_what_the_line_readers_read(
            input in proptest::collection::vec(proptest::sample::select(vec![b'a', b'b', b'\n', b' ']), 0..60),
            max in 1usize..8,
            cuts in proptest::collection::vec(0usize..60, 0..6),
        ) {
            proptest::prop_assert_eq!(split(&input, max, &cuts, Long::Skip), reference(&input, max));
            proptest::prop_assert_eq!(split(&input, max, &cuts, Long::Pieces), pieces_reference(&input, max));
        }
    }

    #[test]
    fn blocks_come_back_in_order_with_their_work() {
        let mut worker = Worker::new(|block: &Block, out: &mut (usize, bool)| {
            *out = (block.bytes.len(), block.end);
        })
        .unwrap();
        let log: Vec<u8> = (0..3 * BLOCK_BYTES + 17).map(|n| n as u8).collect();
        let mut reader = &log[..];
        let mut seen = Vec::new();
        while let Some(done) = worker.next(&mut reader).unwrap() {
            assert_eq!(done.output, (done.block.bytes.len(), done.block.end));
            seen.extend_from_slice(&done.block.bytes);
        }
        assert_eq!(seen, log);
        assert!(worker.next(&mut reader).unwrap().is_none());
    }

    #[test]
    fn stopping_early_ends_the_worker() {
        let mut worker = Worker::new(|_: &Block, _: &mut ()| {}).unwrap();
        let log = vec![b'x'; 5 * BLOCK_BYTES];
        let mut reader = &log[..];
        assert!(worker.next(&mut reader).unwrap().is_some());
        drop(worker);
    }
}
