//! Walking an audit log's hash chain ([`crate::chain`]): "N events, chain intact, head H", or the
//! first line where it breaks and how (past a torn line, which writers chain past, to the first
//! break after it, if there is one). Two streaming passes at most, so memory stays flat.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::blocks::{read_block, Block, Line, Long, Splitter, Worker};
use super::chain::{Chain, Link, Unauthentic};
use super::file::{open_to_verify, LogFileError};
use super::scan;

/// Event lines longer than this are treated as broken, not read whole.
const MAX_LINE_BYTES: u64 = 64 << 20;

/// How the chain is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakKind {
    Edited,
    Deleted,
    Inserted,
    Reordered,
    Torn,
    NotChained,
    /// The chain is whole but does not reach the head stored earlier.
    Cut,
}

impl BreakKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BreakKind::Edited => "edited",
            BreakKind::Deleted => "deleted",
            BreakKind::Inserted => "inserted",
            BreakKind::Reordered => "reordered",
            BreakKind::Torn => "torn",
            BreakKind::NotChained => "not chained",
            BreakKind::Cut => "cut",
        }
    }
}

/// Where and how a chain breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainBreak {
    /// 1-based line number in the file.
    pub line: u64,
    pub kind: BreakKind,
    pub detail: String,
}

impl fmt::Display for ChainBreak {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "chain broken at line {} ({}): {}",
            self.line,
            self.kind.as_str(),
            self.detail
        )
    }
}

/// A chain that holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intact {
    pub events: u64,
    pub head: Link,
    /// The line whose link is the expected head, when one was given.
    pub expected_head_at: Option<u64>,
}

/// One line as the verifier sees it.
struct Seen {
    link: Link,
    /// Keyed: why the line does not vouch for itself, if it does not.
    unauthentic: Option<Unauthentic>,
    prev: Option<Link>,
    seq: Option<u64>,
    parses: bool,
    ends_with_newline: bool,
}

/// Hands each line of a log (pieces of at most [`MAX_LINE_BYTES`], as [`SeenLines`] reads them)
/// to `each`, on this thread, until `each` says it found what it looked for.
fn find_line(mut log: impl Read, mut each: impl FnMut(&[u8]) -> bool) -> io::Result<()> {
    let mut splitter = Splitter::new(MAX_LINE_BYTES as usize, Long::Pieces);
    let mut block = Block::default();
    let mut found = false;
    while !found {
        read_block(&mut log, &mut block)?;
        splitter.split(&block, |line| {
            if let (false, Line::Text { text, .. }) = (found, line) {
                found = each(text);
            }
        });
        if block.end {
            break;
        }
    }
    Ok(())
}

/// The link written as 64 hex digits (either case), as [`Link::parse`] reads it, a table look-up
/// a digit.
fn link_of_hex(hex: &str) -> Option<Link> {
    const NOT_HEX: u8 = 0xff;
    static NIBBLES: [u8; 256] = {
        let mut table = [NOT_HEX; 256];
        let mut digit = 0;
        while digit < 10 {
            table[b'0' as usize + digit] = digit as u8;
            digit += 1;
        }
        let mut letter = 0;
        while letter < 6 {
            table[b'a' as usize + letter] = 10 + letter as u8;
            table[b'A' as usize + letter] = 10 + letter as u8;
            letter += 1;
        }
        table
    };
    let hex: &[u8; 64] = hex.as_bytes().try_into().ok()?;
    let mut bytes = [0u8; 32];
    for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
        let (high, low) = (NIBBLES[pair[0] as usize], NIBBLES[pair[1] as usize]);
        if high == NOT_HEX || low == NOT_HEX {
            return None;
        }
        *byte = high << 4 | low;
    }
    Some(Link(bytes))
}

/// What a line says of the chain, read on the worker thread.
#[derive(Clone, Copy)]
struct Fields {
    prev: Option<Link>,
    seq: Option<u64>,
    parses: bool,
}

fn fields(body: &[u8]) -> Fields {
    // One strict pass that reads only `prev` and `seq`; a line it leaves alone is parsed whole.
    let scanned = std::str::from_utf8(body).ok().and_then(scan::chain_fields);
    if let Some(fields) = scanned {
        return Fields {
            prev: fields.prev.and_then(link_of_hex),
            seq: fields.seq,
            parses: true,
        };
    }
    let parsed: Option<Value> = serde_json::from_slice(body).ok().filter(Value::is_object);
    Fields {
        prev: parsed
            .as_ref()
            .and_then(|v| v.get("prev")?.as_str().and_then(Link::parse)),
        seq: parsed.as_ref().and_then(|v| v.get("seq")?.as_u64()),
        parses: parsed.is_some(),
    }
}

/// The worker's part: cuts the lines out of each block and reads what each says.
fn reader() -> impl FnMut(&Block, &mut Vec<Fields>) + Send + 'static {
    let mut splitter = Splitter::new(MAX_LINE_BYTES as usize, Long::Pieces);
    move |block, out| {
        out.clear();
        splitter.split(block, |line| {
            if let Line::Text { text, .. } = line {
                out.push(fields(text));
            }
        });
    }
}

/// A log's lines as the verifier sees them: read and linked on this thread, their `prev` and
/// `seq` read on a second thread at the same time.
struct SeenLines<'c, R: Read> {
    log: R,
    chain: &'c Chain,
    splitter: Splitter,
    worker: Worker<Vec<Fields>>,
    /// The lines of the block last taken back, not yet seen.
    seen: VecDeque<Seen>,
}

impl<'c, R: Read> SeenLines<'c, R> {
    fn new(log: R, chain: &'c Chain) -> io::Result<Self> {
        Ok(SeenLines {
            log,
            chain,
            splitter: Splitter::new(MAX_LINE_BYTES as usize, Long::Pieces),
            worker: Worker::new(reader())?,
            seen: VecDeque::new(),
        })
    }

    fn next_seen(&mut self) -> io::Result<Option<Seen>> {
        loop {
            if let Some(seen) = self.seen.pop_front() {
                return Ok(Some(seen));
            }
            let Some(done) = self.worker.next(&mut self.log)? else {
                return Ok(None);
            };
            let mut fields = done.output.iter();
            let (chain, seen) = (self.chain, &mut self.seen);
            let mut agree = true;
            self.splitter.split(&done.block, |line| {
                // Both threads cut the same lines out of the same blocks (pieces are never too
                // long); were they ever to differ, no line may go unchecked.
                match (line, fields.next()) {
                    (Line::Text { text, newline }, Some(fields)) => seen.push_back({
                        let (link, unauthentic) = match chain.authenticate(text) {
                            Ok(link) => (link, None),
                            Err(why) => (chain.link(text), Some(why)),
                        };
                        Seen {
                            link,
                            unauthentic,
                            prev: fields.prev,
                            seq: fields.seq,
                            parses: fields.parses,
                            ends_with_newline: newline,
                        }
                    }),
                    _ => agree = false,
                }
            });
            if !agree || fields.next().is_some() {
                return Err(io::Error::other(
                    "the two threads reading the log disagree on its lines",
                ));
            }
        }
    }
}

/// Why a log file's chain could not be walked: it could not be opened, or is not a regular file
/// ([`super::file`]), or could not be read.
#[derive(Debug, thiserror::Error)]
pub enum VerifyFileError {
    #[error(transparent)]
    File(#[from] LogFileError),
    #[error("cannot read the audit log {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Verifies the log file at `path` as [`verify`] does. It must be a regular file: `/dev/null`, a
/// FIFO or a socket reads as an empty log, which would be called intact.
pub fn verify_file(
    path: &Path,
    chain: &Chain,
    expected_head: Option<Link>,
) -> Result<Result<Intact, ChainBreak>, VerifyFileError> {
    verify_opened(path, chain, expected_head).map(|(result, _)| result)
}

/// [`verify_file`], and the file it read: each pass reads the one file opened and checked, from
/// its start (never the path again, which may name another file by then), and so can a report
/// of what was verified.
pub fn verify_opened(
    path: &Path,
    chain: &Chain,
    expected_head: Option<Link>,
) -> Result<(Result<Intact, ChainBreak>, std::fs::File), VerifyFileError> {
    use std::io::{Seek, SeekFrom};
    let file = open_to_verify(path)?;
    let read_error = |source| VerifyFileError::Read {
        path: path.to_owned(),
        source,
    };
    let reopen = || {
        let mut pass = file.try_clone()?;
        pass.seek(SeekFrom::Start(0))?;
        Ok(pass)
    };
    let result = verify(reopen, chain, expected_head).map_err(read_error)?;
    let mut file = file;
    file.seek(SeekFrom::Start(0)).map_err(read_error)?;
    Ok((result, file))
}

/// Verifies a log. `reopen` gives the log again from the start, for the second pass that tells an
/// insertion from a reordering.
pub fn verify<R: Read>(
    mut reopen: impl FnMut() -> io::Result<R>,
    chain: &Chain,
    expected_head: Option<Link>,
) -> io::Result<Result<Intact, ChainBreak>> {
    let mut expected_prev = chain.genesis();
    let mut previous_seq: Option<u64> = None;
    let mut events = 0;
    let mut expected_head_at = None;
    let mut lines = SeenLines::new(reopen()?, chain)?;
    let mut number = 0;
    // The first torn line, if any. A writer that finds a torn last line (its writer died, or
    // someone appended a fragment) ends it and chains its own events from it, so the walk goes
    // on past it the same way: a later edit is not hidden behind it.
    let mut torn: Option<ChainBreak> = None;
    // A break after a torn line is reported, naming the torn line too.
    let after_torn = |torn: &Option<ChainBreak>, mut broken: ChainBreak| {
        if let Some(torn) = torn {
            broken.detail.push_str(&format!(
                "; line {} before it is torn as well (a write was cut off, or it was edited)",
                torn.line
            ));
        }
        broken
    };
    while let Some(seen) = lines.next_seen()? {
        number += 1;
        if !seen.parses {
            let detail = if seen.ends_with_newline {
                "the line is torn or not a JSON object (a write was cut off, or it was edited)"
            } else {
                "the last line is torn: a write was cut off"
            };
            torn.get_or_insert(ChainBreak {
                line: number,
                kind: BreakKind::Torn,
                detail: detail.into(),
            });
            expected_prev = seen.link;
            continue;
        }
        let Some(prev) = seen.prev else {
            return Ok(Err(after_torn(
                &torn,
                ChainBreak {
                    line: number,
                    kind: BreakKind::NotChained,
                    detail:
                        "the line has no valid `prev`: it was written without a chain, or edited"
                            .into(),
                },
            )));
        };
        if prev != expected_prev {
            let kind_and_detail =
                classify(&mut reopen, chain, number, prev, seen.seq, previous_seq)?;
            return Ok(Err(after_torn(
                &torn,
                ChainBreak {
                    line: number,
                    kind: kind_and_detail.0,
                    detail: kind_and_detail.1,
                },
            )));
        }
        if let Some(why) = seen.unauthentic {
            return Ok(Err(after_torn(
                &torn,
                ChainBreak {
                    line: number,
                    kind: BreakKind::Edited,
                    detail: format!("the line does not authenticate: {why}"),
                },
            )));
        }
        if Some(seen.link) == expected_head {
            expected_head_at = Some(number);
        }
        expected_prev = seen.link;
        previous_seq = seen.seq;
        events += 1;
    }
    if let Some(mut torn) = torn {
        if torn.line < number {
            torn.detail.push_str(&format!(
                "; the chain holds past it to the end (line {number})"
            ));
        }
        return Ok(Err(torn));
    }
    if let (Some(head), None) = (expected_head, expected_head_at) {
        return Ok(Err(ChainBreak {
            line: events + 1,
            kind: BreakKind::Cut,
            detail: format!(
                "the expected head {head} is not in the chain: the tail was cut off or rewritten"
            ),
        }));
    }
    Ok(Ok(Intact {
        events,
        head: expected_prev,
        expected_head_at,
    }))
}

fn classify<R: Read>(
    reopen: &mut impl FnMut() -> io::Result<R>,
    chain: &Chain,
    number: u64,
    prev: Link,
    seq: Option<u64>,
    previous_seq: Option<u64>,
) -> io::Result<(BreakKind, String)> {
    if number == 1 && chain.is_keyed() && prev == Link::genesis() {
        return Ok((
            BreakKind::Edited,
            "the first line starts an unkeyed chain (its `prev` is all zeros), not this key's: the log was written without the key, or forged".into(),
        ));
    }
    if number == 1 {
        return Ok(match seq {
            Some(seq) if seq > 1 => (
                BreakKind::Deleted,
                format!("the chain starts at event {seq}: the {} event(s) before it were deleted", seq - 1),
            ),
            _ => (
                BreakKind::Edited,
                "the first line does not start the chain: it was edited, or lines before it were deleted, or it was written under another key".into(),
            ),
        });
    }
    let mut linked_from = None;
    let mut index = 0;
    find_line(reopen()?, |line| {
        index += 1;
        let found = chain.link(line) == prev;
        if found {
            linked_from = Some(index);
        }
        found
    })?;
    Ok(match linked_from {
        Some(k) if k + 1 < number && seq.zip(previous_seq).is_some_and(|(seq, before)| seq <= before) => (
            BreakKind::Inserted,
            format!(
                "line {number} repeats an earlier event (seq {}) that follows line {k}: it was inserted",
                seq.unwrap_or_default()
            ),
        ),
        Some(k) if k + 1 < number => (
            BreakKind::Inserted,
            format!(
                "line {number} follows line {k} in the chain, so line(s) {}..{} were inserted",
                k + 1,
                number - 1
            ),
        ),
        Some(k) if k > number => (
            BreakKind::Reordered,
            format!("line {number} follows line {k} in the chain: lines were reordered"),
        ),
        _ => match (seq, previous_seq) {
            (Some(seq), Some(before)) if seq > before + 1 => (
                BreakKind::Deleted,
                format!(
                    "{} event(s) between line {} and line {number} were deleted (seq {before} is followed by {seq})",
                    seq - before - 1,
                    number - 1
                ),
            ),
            _ => (
                BreakKind::Edited,
                format!(
                    "line {} was edited (or the log was written under another key): its link does not match the `prev` of line {number}",
                    number - 1
                ),
            ),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::{seal, Head, GENESIS};

    fn chained(events: usize, chain: &Chain) -> Vec<Vec<u8>> {
        let mut head = chain.genesis_head();
        (0..events)
            .map(|n| {
                let mut line = Vec::new();
                let event = format!(r#"{{"stage":"gate","id":"{n}"}}"#);
                head = Head {
                    link: chain.seal_into(&mut line, event.as_bytes(), head),
                    seq: head.seq + 1,
                };
                line
            })
            .collect()
    }

    fn join(lines: &[Vec<u8>]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| l.iter().copied().chain([b'\n']))
            .collect()
    }

    fn check(log: &[u8], chain: &Chain, head: Option<Link>) -> Result<Intact, ChainBreak> {
        verify(|| Ok(log), chain, head).unwrap()
    }

    #[test]
    fn links_are_read_from_hex_as_link_parse_reads_them() {
        let link = Chain::Sha256.link(b"x");
        let hex = link.to_string();
        let mut cases = vec![
            hex.clone(),
            hex.to_uppercase(),
            hex[..63].to_owned(),
            format!("{hex}0"),
            String::new(),
            GENESIS.to_owned(),
        ];
        for (at, bad) in [(0, "g"), (31, "+"), (63, "G"), (10, " "), (40, "é")] {
            let mut case = hex.clone();
            case.replace_range(at..at + 1, bad);
            cases.push(case);
        }
        for case in cases {
            assert_eq!(link_of_hex(&case), Link::parse(&case), "{case:?}");
        }
        assert_eq!(link_of_hex(&hex), Some(link));
    }

    #[test]
    fn an_untouched_chain_is_intact() {
        let lines = chained(5, &Chain::Sha256);
        let intact = check(&join(&lines), &Chain::Sha256, None).unwrap();
        assert_eq!(intact.events, 5);
        assert_eq!(intact.head, Chain::Sha256.link(&lines[4]));
        assert_eq!(check(b"", &Chain::Sha256, None).unwrap().events, 0);
    }

    #[test]
    fn each_tampering_is_named_with_its_line() {
        let lines = chained(6, &Chain::Sha256);
        let mut edited = lines.clone();
        edited[2] = String::from_utf8(edited[2].clone())
            .unwrap()
            .replace("\"2\"", "\"X\"")
            .into_bytes();
        let mut deleted = lines.clone();
        deleted.remove(2);
        let mut replayed = lines.clone();
        replayed.insert(3, lines[1].clone());
        // A forged line with a correct `prev` for its place: the break shows on the line after.
        let mut inserted = lines.clone();
        let forged = seal(
            br#"{"stage":"gate","id":"forged"}"#,
            Head {
                link: Chain::Sha256.link(&lines[2]),
                seq: 3,
            },
        );
        inserted.insert(3, forged);
        let mut swapped = lines.clone();
        swapped.swap(2, 3);
        let mut torn = join(&lines);
        torn.truncate(torn.len() - 10);
        let cases = [
            (join(&edited), 4, BreakKind::Edited),
            (join(&deleted), 3, BreakKind::Deleted),
            (join(&replayed), 4, BreakKind::Inserted),
            (join(&inserted), 5, BreakKind::Inserted),
            (join(&swapped), 3, BreakKind::Reordered),
            (torn, 6, BreakKind::Torn),
        ];
        for (log, line, kind) in cases {
            let broken = check(&log, &Chain::Sha256, None).unwrap_err();
            assert_eq!((broken.line, broken.kind), (line, kind), "{broken}");
        }
    }

    /// A review appended a fragment (no key needed) and the keyed writers chained past it; then
    /// a later `deny` was turned into an `allow` and the line before it deleted, and verify
    /// said only "torn at line 4", as before the edits. The walk now goes past the torn line as
    /// the writers did, so the later edit is what it reports.
    #[test]
    fn a_torn_line_hides_no_edit_after_it() {
        use std::io::Write;
        let chain = Chain::Keyed(b"a key of sixteen bytes or more".to_vec());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let options = || crate::audit::log::AuditOptions {
            chain: chain.clone(),
            fsync: false,
        };
        let mut log = crate::audit::log::AuditLog::open_with(&path, options()).unwrap();
        log.append(b"{\"stage\":\"gate\",\"id\":\"1\"}\n{\"stage\":\"gate\",\"id\":\"2\"}\n{\"stage\":\"gate\",\"id\":\"3\"}\n")
            .unwrap();
        drop(log);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"{\"stage\":\"ga").unwrap();
        drop(file);
        let mut log = crate::audit::log::AuditLog::open_with(&path, options()).unwrap();
        log.append(b"{\"stage\":\"gate\",\"id\":\"4\",\"decision\":\"hold\"}\n{\"stage\":\"gate\",\"id\":\"5\",\"decision\":\"deny\"}\n{\"stage\":\"gate\",\"id\":\"6\"}\n")
            .unwrap();
        drop(log);
        let text = std::fs::read(&path).unwrap();
        // Untouched past the fragment: the torn line is reported, and that all after it holds.
        let broken = check(&text, &chain, None).unwrap_err();
        assert_eq!((broken.line, broken.kind), (4, BreakKind::Torn), "{broken}");
        assert!(
            broken
                .detail
                .contains("the chain holds past it to the end (line 7)"),
            "{broken}"
        );
        // A decision edited after it is found, and the torn line still named.
        let edited = String::from_utf8(text.clone())
            .unwrap()
            .replace("\"decision\":\"deny\"", "\"decision\":\"allow\"");
        let broken = check(edited.as_bytes(), &chain, None).unwrap_err();
        assert_eq!(
            (broken.line, broken.kind),
            (6, BreakKind::Edited),
            "{broken}"
        );
        assert!(
            broken.detail.contains("line 4 before it is torn as well"),
            "{broken}"
        );
        // So is the line before it deleted.
        let lines: Vec<&str> = std::str::from_utf8(&text).unwrap().lines().collect();
        let mut deleted = lines.clone();
        deleted.remove(4);
        let deleted = deleted.join("\n") + "\n";
        let broken = check(deleted.as_bytes(), &chain, None).unwrap_err();
        assert_eq!(broken.line, 5, "{broken}");
        assert_ne!(broken.kind, BreakKind::Torn, "{broken}");
    }

    #[test]
    fn a_log_of_many_blocks_is_read_whole_and_in_order() {
        // About 4 MB: lines cross the blocks the two threads read.
        let lines = chained(40_000, &Chain::Sha256);
        let log = join(&lines);
        assert!(log.len() > 3 << 20, "{}", log.len());
        let intact = check(
            &log,
            &Chain::Sha256,
            Some(Chain::Sha256.link(&lines[30_000])),
        )
        .unwrap();
        assert_eq!(intact.events, 40_000);
        assert_eq!(intact.head, Chain::Sha256.link(&lines[39_999]));
        assert_eq!(intact.expected_head_at, Some(30_001));
        let mut edited = lines.clone();
        edited[25_000] = String::from_utf8(edited[25_000].clone())
            .unwrap()
            .replace("\"25000\"", "\"X\"")
            .into_bytes();
        let broken = check(&join(&edited), &Chain::Sha256, None).unwrap_err();
        assert_eq!(
            (broken.line, broken.kind),
            (25_002, BreakKind::Edited),
            "{broken}"
        );
        let mut swapped = lines.clone();
        swapped.swap(12_000, 35_000);
        let broken = check(&join(&swapped), &Chain::Sha256, None).unwrap_err();
        assert_eq!(broken.line, 12_001, "{broken}");
    }

    #[test]
    fn deleting_the_first_events_is_seen() {
        let lines = chained(4, &Chain::Sha256);
        let broken = check(&join(&lines[2..]), &Chain::Sha256, None).unwrap_err();
        assert_eq!(
            (broken.line, broken.kind),
            (1, BreakKind::Deleted),
            "{broken}"
        );
    }

    #[test]
    fn a_cut_tail_is_caught_only_with_the_expected_head() {
        let lines = chained(5, &Chain::Sha256);
        let head = Chain::Sha256.link(&lines[4]);
        let cut = join(&lines[..3]);
        assert!(check(&cut, &Chain::Sha256, None).is_ok());
        let broken = check(&cut, &Chain::Sha256, Some(head)).unwrap_err();
        assert_eq!(broken.kind, BreakKind::Cut);
        // A log that grew after the head was taken still holds it.
        let grown = check(
            &join(&lines),
            &Chain::Sha256,
            Some(Chain::Sha256.link(&lines[2])),
        )
        .unwrap();
        assert_eq!(grown.expected_head_at, Some(3));
    }

    #[test]
    fn a_keyed_chain_fails_under_another_key() {
        let key = Chain::Keyed(b"0123456789abcdef".to_vec());
        let lines = chained(3, &key);
        assert!(check(&join(&lines), &key, None).is_ok());
        let other = Chain::Keyed(b"fedcba9876543210".to_vec());
        let broken = check(&join(&lines), &other, None).unwrap_err();
        assert_eq!(
            (broken.line, broken.kind),
            (1, BreakKind::Edited),
            "{broken}"
        );
        assert!(check(&join(&lines), &Chain::Sha256, None).is_err());
    }

    #[test]
    fn a_keyed_chain_cannot_be_forged_from_its_first_link() {
        let key = Chain::Keyed(b"0123456789abcdef".to_vec());
        // A forger without the key writes a whole log from the old all-zero genesis, with
        // links as an unkeyed writer makes them.
        let forged = join(&chained(3, &Chain::Sha256));
        let broken = check(&forged, &key, None).unwrap_err();
        assert_eq!(
            (broken.line, broken.kind),
            (1, BreakKind::Edited),
            "{broken}"
        );
        assert!(broken.detail.contains("unkeyed chain"), "{broken}");
        // Nor can the forger start from the keyed genesis, which needs the key.
        let mut line = Vec::new();
        Chain::Sha256.seal_into(&mut line, br#"{"id":"x"}"#, key.genesis_head());
        let broken = check(&join(&[line]), &key, None).unwrap_err();
        assert!(broken.detail.contains("carries no `mac`"), "{broken}");
    }

    #[test]
    fn every_keyed_line_vouches_for_itself_the_last_one_too() {
        let key = Chain::Keyed(b"0123456789abcdef".to_vec());
        let lines = chained(4, &key);
        // The last line edited: no later `prev` covers it, its own `mac` does.
        let mut edited = lines.clone();
        edited[3] = String::from_utf8(edited[3].clone())
            .unwrap()
            .replace("\"3\"", "\"X\"")
            .into_bytes();
        let broken = check(&join(&edited), &key, None).unwrap_err();
        assert_eq!(
            (broken.line, broken.kind),
            (4, BreakKind::Edited),
            "{broken}"
        );
        // Only its `mac` changed: caught too.
        let mut remacked = lines.clone();
        let text = String::from_utf8(remacked[1].clone()).unwrap();
        let at = text.rfind("\"mac\":\"").unwrap() + 7;
        let flipped = if &text[at..at + 1] == "0" { "1" } else { "0" };
        remacked[1] = format!("{}{flipped}{}", &text[..at], &text[at + 1..]).into_bytes();
        let broken = check(&join(&remacked), &key, None).unwrap_err();
        assert_eq!(
            (broken.line, broken.kind),
            (2, BreakKind::Edited),
            "{broken}"
        );
    }

    #[test]
    fn the_file_verified_is_the_one_handed_back_though_its_path_is_replaced() {
        use std::io::Read;
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("audit.jsonl");
        let chain = Chain::Sha256;
        let lines: Vec<u8> = chained(1, &chain)
            .into_iter()
            .flat_map(|line| [line, b"\n".to_vec()].concat())
            .collect();
        std::fs::write(&path, lines).unwrap();
        let (result, mut file) = verify_opened(&path, &chain, None).unwrap();
        assert_eq!(result.expect("intact").events, 1);
        let forged = folder.path().join("forged.jsonl");
        std::fs::write(&forged, b"{\"forged\":true}\n").unwrap();
        std::fs::rename(&forged, &path).unwrap();
        let mut read = String::new();
        file.read_to_string(&mut read).unwrap();
        assert!(
            read.contains(r#""id":"0""#) && !read.contains("forged"),
            "{read}"
        );
    }
}
