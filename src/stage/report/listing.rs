//! What a summary lists (vetoes, problems): the first [`LISTED`] of each in memory for the reports
//! that show them, and, when asked, every one in an unnamed temporary file for the JSON report,
//! which streams them from there. A log of ten million denied calls never holds ten million
//! vetoes in memory.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use super::{Problem, Veto};

/// How many vetoes, and how many problems, the text and markdown reports list; they say how many
/// more there are.
pub(crate) const LISTED: usize = 1000;

/// What can wait in the temporary file.
pub(super) trait Record: Sized {
    fn write(&self, out: &mut impl Write) -> io::Result<()>;
    fn read(input: &mut impl BufRead) -> io::Result<Self>;
}

/// The vetoes or problems found so far.
pub(super) struct Listing<T> {
    listed: Vec<T>,
    count: u64,
    every: Option<SpillWriter>,
    /// The first error writing the temporary file, reported at the end of the log.
    failed: Option<io::Error>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            listed: Vec::new(),
            count: 0,
            every: None,
            failed: None,
        }
    }
}

struct SpillWriter {
    file: BufWriter<File>,
    dir: PathBuf,
}

/// Every veto or problem of a summary, in a temporary file that is gone once closed.
#[derive(Debug)]
pub(super) struct Spill<T> {
    file: File,
    count: u64,
    kind: PhantomData<T>,
}

impl<T: Record> Listing<T> {
    /// Keeps every one from now on (call before the first).
    pub(super) fn keep_all(&mut self) -> Result<()> {
        let dir = std::env::temp_dir();
        let file = unnamed_file(&dir).with_context(|| {
            format!(
                "cannot create a temporary file for the JSON report in {} (TMPDIR names another \
                 folder)",
                dir.display()
            )
        })?;
        self.every = Some(SpillWriter {
            file: BufWriter::with_capacity(64 * 1024, file),
            dir,
        });
        Ok(())
    }

    /// Whether the next one is shown or kept, so must be made whole.
    pub(super) fn wants_details(&self) -> bool {
        self.every.is_some() || self.listed.len() < LISTED
    }

    /// Counts one that is neither shown nor kept (see [`Listing::wants_details`]).
    pub(super) fn count_unshown(&mut self) {
        debug_assert!(!self.wants_details());
        self.count += 1;
    }

    pub(super) fn push(&mut self, record: T) {
        self.count += 1;
        if let Some(every) = &mut self.every {
            if self.failed.is_none() {
                if let Err(err) = record.write(&mut every.file) {
                    self.failed = Some(err);
                }
            }
        }
        if self.listed.len() < LISTED {
            self.listed.push(record);
        }
    }

    /// Fails when the temporary file could not be written.
    pub(super) fn check(&mut self) -> Result<()> {
        match (self.failed.take(), &self.every) {
            (Some(err), Some(every)) => Err(err).with_context(|| cannot_write(&every.dir)),
            _ => Ok(()),
        }
    }

    /// Those listed, how many there are, and all of them when they were kept.
    pub(super) fn finish(mut self) -> Result<(Vec<T>, u64, Option<Spill<T>>)> {
        self.check()?;
        let spill = match self.every.take() {
            None => None,
            Some(every) => {
                let dir = every.dir;
                let file = every.file.into_inner().map_err(|err| err.into_error());
                Some(Spill {
                    file: file.with_context(|| cannot_write(&dir))?,
                    count: self.count,
                    kind: PhantomData,
                })
            }
        };
        Ok((self.listed, self.count, spill))
    }
}

fn cannot_write(dir: &Path) -> String {
    format!(
        "cannot write the JSON report's temporary file in {}",
        dir.display()
    )
}

impl<T: Record> Spill<T> {
    pub(super) fn count(&self) -> u64 {
        self.count
    }

    /// Every one, in order, read back from the file.
    pub(super) fn read(&self) -> io::Result<impl Iterator<Item = io::Result<T>> + '_> {
        let mut file = &self.file;
        file.seek(SeekFrom::Start(0))?;
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        let mut left = self.count;
        Ok(std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            left -= 1;
            Some(T::read(&mut reader))
        }))
    }
}

/// A new file that no other process can open: created with a name no one has, readable by its
/// owner only, and unlinked at once.
fn unnamed_file(dir: &Path) -> io::Result<File> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut attempt = 0u32;
    loop {
        let path = dir.join(format!(
            ".sc-report-{}-{nanos}-{attempt}.tmp",
            std::process::id()
        ));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => {
                fs::remove_file(&path)?;
                return Ok(file);
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

// In the file, every text is its length (4 bytes, little-endian) and its bytes; a number is 8
// bytes, little-endian. A veto: its kind (1 byte: 0 deny, 1 declined), id, agent and tool, then
// the number of reasons (4 bytes) and each reason. A problem: the log, the line and the problem.

fn write_text(out: &mut impl Write, text: &str) -> io::Result<()> {
    let length = u32::try_from(text.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a text over 4 GiB"))?;
    out.write_all(&length.to_le_bytes())?;
    out.write_all(text.as_bytes())
}

fn read_u32(input: &mut impl Read) -> io::Result<u32> {
    let mut bytes = [0u8; 4];
    input.read_exact(&mut bytes)?;
    Ok(u32::from_le_bytes(bytes))
}

fn read_text(input: &mut impl BufRead) -> io::Result<String> {
    let length = read_u32(input)? as usize;
    let mut bytes = Vec::with_capacity(length.min(1 << 20));
    input.take(length as u64).read_to_end(&mut bytes)?;
    if bytes.len() != length {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    String::from_utf8(bytes).map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))
}

impl Record for Veto {
    fn write(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(&[u8::from(self.kind != "deny")])?;
        for text in [&self.id, &self.agent, &self.tool] {
            write_text(out, text)?;
        }
        let reasons = u32::try_from(self.reasons.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many reasons"))?;
        out.write_all(&reasons.to_le_bytes())?;
        for reason in &self.reasons {
            write_text(out, reason)?;
        }
        Ok(())
    }

    fn read(input: &mut impl BufRead) -> io::Result<Veto> {
        let mut kind = [0u8; 1];
        input.read_exact(&mut kind)?;
        let id = read_text(input)?;
        let agent = read_text(input)?;
        let tool = read_text(input)?;
        let count = read_u32(input)?;
        let reasons = (0..count)
            .map(|_| read_text(input))
            .collect::<io::Result<_>>()?;
        Ok(Veto {
            id,
            kind: if kind[0] == 0 { "deny" } else { "declined" },
            agent,
            tool,
            reasons,
            args: None,
        })
    }
}

impl Record for Problem {
    fn write(&self, out: &mut impl Write) -> io::Result<()> {
        write_text(out, &self.log)?;
        out.write_all(&self.line.to_le_bytes())?;
        write_text(out, &self.problem)
    }

    fn read(input: &mut impl BufRead) -> io::Result<Problem> {
        let log = read_text(input)?;
        let mut line = [0u8; 8];
        input.read_exact(&mut line)?;
        Ok(Problem {
            log,
            line: u64::from_le_bytes(line),
            problem: read_text(input)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn veto(n: usize) -> Veto {
        Veto {
            id: format!("id-{n}"),
            kind: if n.is_multiple_of(2) {
                "deny"
            } else {
                "declined"
            },
            agent: "agént".into(),
            tool: "send_payment".into(),
            reasons: (0..n % 3).map(|r| format!("reason {r}\n\"q\"")).collect(),
            args: None,
        }
    }

    #[test]
    fn every_one_comes_back_in_order_and_the_first_are_listed() {
        let mut vetoes = Listing::default();
        vetoes.keep_all().unwrap();
        let total = LISTED + 7;
        for n in 0..total {
            vetoes.push(veto(n));
        }
        let (listed, count, spill) = vetoes.finish().unwrap();
        assert_eq!(count, total as u64);
        assert_eq!(listed.len(), LISTED);
        assert_eq!(listed[LISTED - 1], veto(LISTED - 1));
        let spill = spill.unwrap();
        for _ in 0..2 {
            let back: Vec<Veto> = spill.read().unwrap().map(Result::unwrap).collect();
            assert_eq!(back, (0..total).map(veto).collect::<Vec<_>>());
        }
        let mut problems = Listing::default();
        problems.keep_all().unwrap();
        let problem = Problem {
            log: "a b.jsonl".into(),
            line: u64::MAX,
            problem: "torn".into(),
        };
        problems.push(problem.clone());
        let (_, _, spill) = problems.finish().unwrap();
        let back: Vec<Problem> = spill.unwrap().read().unwrap().map(Result::unwrap).collect();
        assert_eq!(back, [problem]);
    }

    #[test]
    fn without_keeping_all_only_the_first_are_kept() {
        let mut vetoes = Listing::default();
        for n in 0..LISTED {
            vetoes.push(veto(n));
        }
        assert!(!vetoes.wants_details());
        vetoes.count_unshown();
        let (listed, count, spill) = vetoes.finish().unwrap();
        assert_eq!((listed.len(), count), (LISTED, LISTED as u64 + 1));
        assert!(spill.is_none());
    }
}
