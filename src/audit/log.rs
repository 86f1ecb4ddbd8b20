//! The audit log: one JSON line per event, appended by every stage to one shared file.
//!
//! Each event has `ts` (RFC 3339, UTC), `stage` (`gate`, `approve` or `exec`), `id` (the call's),
//! and that stage's fields:
//! - `gate`: `decision`, `reasons`, and `call` (as it came) or `raw` (a malformed line, bounded);
//! - `approve`: `agent`, `tool`, `approval` (as added to the record);
//! - `exec`: `agent`, `tool`, `decision` (the one acted on), `outcome` (as added to the record).
//!
//! Several stages append at once: every append is one `write` of whole lines under an exclusive
//! `flock`, on a file opened with `O_APPEND`, so lines never interleave. The log must be a regular
//! file (a link to one is followed): `/dev/null`, a FIFO or a socket is refused at the open
//! ([`super::file`]), as it would take every event and keep none. A failed append is an
//! error the stage must stop on: nothing leaves a stage that was not audited first.
//!
//! Every event is sealed into the file's hash chain ([`crate::chain`]) under the same lock: the
//! writer keeps the head and the file's length, and re-reads the tail only when another writer
//! moved it. Keyed, the line it then chains onto must carry a valid MAC, or the append fails: a
//! writer never vouches for a line it cannot authenticate. With `fsync`, each append is on disk before the lock is released and the records it
//! describes leave the stage.

use std::collections::hash_map::RandomState;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result};

use super::chain::{self, Chain, Head};
use super::file::LogFileError;
use crate::json_write::JsonLine;

pub const DEFAULT_AUDIT_PATH: &str = "logs/audit.jsonl";

pub use super::head::Stage;

/// How a log is written: its chain (plain or keyed) and whether appends are synced to disk.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    pub chain: Chain,
    pub fsync: bool,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            chain: Chain::Sha256,
            fsync: false,
        }
    }
}

/// An open audit log.
#[derive(Debug)]
pub struct AuditLog {
    file: File,
    path: PathBuf,
    options: AuditOptions,
    /// The file's length and chain head after our last append.
    known_end: Option<(u64, Head)>,
    sealed: Vec<u8>,
    /// A deferred event's line, as it is written ([`super::deferred`]).
    deferred: Vec<u8>,
}

impl AuditLog {
    /// Opens the log for appending (unkeyed, without fsync), creating it and its folder when
    /// missing.
    pub fn open(path: &Path) -> Result<AuditLog, LogFileError> {
        AuditLog::open_with(path, AuditOptions::default())
    }

    /// Opens the log for appending with the given chain and sync options: every stage and door
    /// opens its log here, and a log that is not a regular file is refused
    /// ([`super::file::open_to_append`]).
    pub fn open_with(path: &Path, options: AuditOptions) -> Result<AuditLog, LogFileError> {
        let file = super::file::open_to_append(path)?;
        Ok(AuditLog {
            file,
            path: path.to_owned(),
            options,
            known_end: None,
            sealed: Vec::new(),
            deferred: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this handle has appended an event.
    pub fn appended(&self) -> bool {
        self.known_end.is_some()
    }

    /// Seals whole event lines into the chain and appends them in one locked write.
    pub fn append(&mut self, lines: &[u8]) -> Result<()> {
        debug_assert!(lines.is_empty() || lines.ends_with(b"\n"));
        self.append_batch(lines, &[])
    }

    /// [`AuditLog::append`] for a batch of a stage's output: `events` holds whole event lines
    /// and deferred events ([`super::deferred`]), these written from the batch's `records`.
    pub fn append_batch(&mut self, events: &[u8], records: &[u8]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let path = self.path.display().to_string();
        let context = || format!("cannot write the audit log {path}");
        self.file.lock().with_context(context)?;
        let written = self.append_locked(events, records);
        let unlocked = self.file.unlock();
        written.with_context(context)?;
        unlocked.with_context(context)?;
        Ok(())
    }

    fn append_locked(&mut self, events: &[u8], records: &[u8]) -> std::io::Result<()> {
        let len = self.file.metadata()?.len();
        let mut head = match self.known_end {
            Some((known_len, head)) if known_len == len => head,
            _ => chain::read_head(&mut self.file, len, &self.options.chain)?,
        };
        self.sealed.clear();
        if len > 0 && self.last_byte(len)? != b'\n' {
            // A writer died mid-line: end the torn line so ours start whole (the report and the
            // verifier show the torn one).
            self.sealed.push(b'\n');
        }
        let mut rest = events;
        while !rest.is_empty() {
            let line = if rest[0] == super::deferred::TAG {
                let used = super::deferred::write(rest, records, &mut self.deferred)
                    .map_err(std::io::Error::other)?;
                rest = &rest[used..];
                &self.deferred[..]
            } else {
                let end = crate::json_write::find_newline(rest).unwrap_or(rest.len());
                let line = &rest[..end];
                rest = &rest[(end + 1).min(rest.len())..];
                line
            };
            if line.is_empty() {
                continue;
            }
            head = Head {
                link: self.options.chain.seal_into(&mut self.sealed, line, head),
                seq: head.seq.saturating_add(1),
            };
            self.sealed.push(b'\n');
        }
        self.file.write_all(&self.sealed)?;
        if self.options.fsync {
            self.file.sync_data()?;
        }
        kept(&self.file, len, self.sealed.len())?;
        self.known_end = Some((len + self.sealed.len() as u64, head));
        Ok(())
    }

    fn last_byte(&mut self, len: u64) -> std::io::Result<u8> {
        use std::os::unix::fs::FileExt;
        let mut byte = [0u8; 1];
        self.file.read_exact_at(&mut byte, len - 1)?;
        Ok(byte[0])
    }
}

/// Whether the file kept an append of `written` bytes made at length `before` (under the lock,
/// with `O_APPEND`, so only another writer's append can come after it): a file that reads as a
/// regular one and keeps nothing (`/proc/self/comm`, whose length stays 0 however much is
/// written) is refused at the first append, before anything the events describe happens.
fn kept(file: &std::fs::File, before: u64, written: usize) -> std::io::Result<()> {
    let after = file.metadata()?.len();
    if after < before.saturating_add(written as u64) {
        return Err(std::io::Error::other(format!(
            "the file did not keep what was written: {written} bytes appended at length {before} left it {after} bytes long"
        )));
    }
    Ok(())
}

/// Starts an event line: `ts`, `stage` and `id`; the stage adds its own fields.
pub fn event(stage: Stage, id: &str) -> JsonLine {
    event_in(Vec::with_capacity(768), stage, id, SystemTime::now())
}

/// Starts an event line at the end of `batch`, as [`event`] does: the same bytes as writing
/// the three fields one by one, with the keys and the stage written as the constants they are
/// (every call of the gate pays for this line). `time` is the event's `ts`: the wall clock's
/// time, read by the caller when it has just read it for its decision.
pub(crate) fn event_in(mut batch: Vec<u8>, stage: Stage, id: &str, time: SystemTime) -> JsonLine {
    let open = batch.len();
    batch.reserve(768);
    super::head::push_event_head(&mut batch, stage, time);
    batch.extend_from_slice(b",\"id\":");
    crate::json_write::push_json_str(&mut batch, id);
    JsonLine::resume(batch, open)
}

/// RFC 3339 in UTC with microseconds, e.g. `2026-11-30T16:41:03.123456Z`.
pub(crate) fn timestamp(time: SystemTime) -> String {
    let mut out = Vec::with_capacity(27);
    super::head::push_timestamp(&mut out, time);
    String::from_utf8(out).expect("a timestamp is ASCII")
}

/// Mints call ids that are unique within an audit log across runs: a random 64-bit run nonce
/// (seeded from the clock, the process id and std's per-process hash keys) and a counter.
#[derive(Debug)]
pub struct IdMinter {
    /// The next id: the run nonce as 16 hex digits and a dash, then the counter in decimal,
    /// counted up in place (most counts change only the last digit).
    next: String,
    /// Where the counter starts in `next`.
    digits_from: usize,
}

impl Default for IdMinter {
    fn default() -> Self {
        Self::new()
    }
}

impl IdMinter {
    pub fn new() -> Self {
        let mut hasher = RandomState::new().build_hasher();
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        hasher.write_u128(nanos);
        hasher.write_u32(std::process::id());
        let prefix = format!("{:016x}-", hasher.finish());
        IdMinter {
            digits_from: prefix.len(),
            next: prefix + "1",
        }
    }

    pub fn mint(&mut self) -> String {
        let mut id = String::with_capacity(self.next.len() + 4);
        self.mint_into(&mut id);
        id
    }

    /// [`IdMinter::mint`] into `id`, in the buffer it has (sc-gate mints one for every call).
    pub fn mint_into(&mut self, id: &mut String) {
        id.clear();
        id.push_str(&self.next);
        // The counter plus one, in place: the last digit that is not a 9 goes up, the 9s after
        // it become 0s (all 9s: a 1 in front of as many 0s).
        let digits = &self.next.as_bytes()[self.digits_from..];
        let nines = digits
            .iter()
            .rev()
            .take_while(|&&digit| digit == b'9')
            .count();
        let kept = self.next.len() - nines;
        if nines == digits.len() {
            self.next.truncate(self.digits_from);
            self.next.push('1');
        } else {
            let last = self.next.as_bytes()[kept - 1];
            self.next.truncate(kept - 1);
            self.next.push(char::from(last + 1));
        }
        for _ in 0..nines {
            self.next.push('0');
        }
    }
}

/// The stages' output appends each batch's events here before its records leave.
impl crate::jsonl::AuditSink for AuditLog {
    fn append(&mut self, events: &[u8], records: &[u8]) -> Result<()> {
        AuditLog::append_batch(self, events, records)
    }

    fn durable(&self) -> bool {
        self.options.fsync
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_opened_with_fsync_is_a_durable_sink() {
        use crate::jsonl::AuditSink;
        let dir = tempfile::tempdir().unwrap();
        for fsync in [false, true] {
            let options = AuditOptions {
                fsync,
                ..AuditOptions::default()
            };
            let log = AuditLog::open_with(&dir.path().join("audit.jsonl"), options).unwrap();
            assert_eq!(log.durable(), fsync);
        }
    }

    #[test]
    fn ids_differ_within_and_across_minters() {
        let mut a = IdMinter::new();
        let mut b = IdMinter::new();
        let ids = [a.mint(), a.mint(), b.mint(), b.mint()];
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), 4, "{ids:?}");
    }

    #[test]
    fn an_id_minted_into_a_buffer_is_the_next_id_whatever_the_buffer_held() {
        let mut minter = IdMinter::new();
        let first = minter.mint();
        let mut id = "left over from an earlier call, longer than an id".to_owned();
        minter.mint_into(&mut id);
        let (prefix, count) = first.rsplit_once('-').unwrap();
        assert_eq!(count, "1");
        assert_eq!(id, format!("{prefix}-2"));
        assert_eq!(minter.mint(), format!("{prefix}-3"));
    }

    #[test]
    fn the_counter_counts_in_decimal_across_every_carry() {
        let mut minter = IdMinter::new();
        let prefix = minter.mint().rsplit_once('-').unwrap().0.to_owned();
        let mut id = String::new();
        for n in 2..=100_500u64 {
            minter.mint_into(&mut id);
            assert_eq!(id, format!("{prefix}-{n}"));
        }
    }

    #[test]
    fn an_event_starts_as_its_fields_written_one_by_one() {
        for stage in [Stage::Gate, Stage::Approve, Stage::Exec, Stage::ExecStart] {
            for id in ["x-1", "a\"b\\c\u{1}é"] {
                let line = event_in(b"{}\n".to_vec(), stage, id, SystemTime::now())
                    .str_field("decision", "allow")
                    .finish();
                let text = std::str::from_utf8(&line[3..]).unwrap();
                let value: serde_json::Value = serde_json::from_str(text).unwrap();
                let ts = value["ts"].as_str().unwrap();
                let expected = JsonLine::new()
                    .str_field("ts", ts)
                    .str_field("stage", stage.as_str())
                    .str_field("id", id)
                    .str_field("decision", "allow")
                    .finish();
                assert_eq!(&line[..3], b"{}\n");
                assert_eq!(text.as_bytes(), &expected[..], "{text}");
                assert_eq!(ts.len(), 27, "{ts}");
                assert!(humantime::parse_rfc3339(ts).is_ok(), "{ts}");
            }
        }
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let ts = timestamp(SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(1_500_000));
        assert_eq!(ts, "1970-01-01T00:00:01.500000Z");
    }

    #[test]
    fn appends_create_the_folder_and_keep_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/er/audit.jsonl");
        let mut log = AuditLog::open(&path).unwrap();
        log.append(
            &event(Stage::Gate, "x-1")
                .field("decision", "allow")
                .finish(),
        )
        .unwrap();
        log.append(&event(Stage::Exec, "x-1").finish()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["stage"], "gate");
        assert_eq!(lines[0]["decision"], "allow");
        assert_eq!(lines[1]["stage"], "exec");
    }

    #[test]
    fn a_keyed_writer_refuses_to_extend_a_line_it_cannot_authenticate() {
        let dir = tempfile::tempdir().unwrap();
        let key = Chain::Keyed(b"0123456789abcdef".to_vec());
        let keyed = || AuditOptions {
            chain: key.clone(),
            fsync: false,
        };
        let event = || event(Stage::Gate, "x-1").field("decision", "deny").finish();
        // A keyless forger seeds a new log with a fabricated first line.
        let seeded = dir.path().join("seeded.jsonl");
        std::fs::write(
            &seeded,
            format!(
                "{}\n",
                String::from_utf8(chain::seal(b"{\"id\":\"f\"}", Head::genesis())).unwrap()
            ),
        )
        .unwrap();
        let err = AuditLog::open_with(&seeded, keyed())
            .unwrap()
            .append(&event())
            .unwrap_err();
        assert!(format!("{err:#}").contains("refusing to extend"), "{err:#}");
        // An honest keyed log whose last line is then edited by someone without the key.
        let edited = dir.path().join("edited.jsonl");
        AuditLog::open_with(&edited, keyed())
            .unwrap()
            .append(&event())
            .unwrap();
        let text = std::fs::read_to_string(&edited).unwrap();
        std::fs::write(&edited, text.replace("deny", "allw")).unwrap();
        let before = std::fs::read(&edited).unwrap();
        let err = AuditLog::open_with(&edited, keyed())
            .unwrap()
            .append(&event())
            .unwrap_err();
        assert!(format!("{err:#}").contains("does not match"), "{err:#}");
        assert_eq!(
            std::fs::read(&edited).unwrap(),
            before,
            "nothing was appended"
        );
        // A forged event left without its newline, so as to pass for a torn write.
        let unterminated = dir.path().join("unterminated.jsonl");
        AuditLog::open_with(&unterminated, keyed())
            .unwrap()
            .append(&event())
            .unwrap();
        let mut text = std::fs::read(&unterminated).unwrap();
        text.extend_from_slice(br#"{"stage":"exec","id":"x-1","seq":2,"prev":"00"}"#);
        std::fs::write(&unterminated, &text).unwrap();
        let err = AuditLog::open_with(&unterminated, keyed())
            .unwrap()
            .append(&event())
            .unwrap_err();
        assert!(format!("{err:#}").contains("refusing to extend"), "{err:#}");
        // A torn write that is not JSON is chained past (the verifier shows it as torn).
        let torn = dir.path().join("torn.jsonl");
        AuditLog::open_with(&torn, keyed())
            .unwrap()
            .append(&event())
            .unwrap();
        let mut text = std::fs::read(&torn).unwrap();
        text.extend_from_slice(br#"{"stage":"exec","id":"x-1","se"#);
        std::fs::write(&torn, &text).unwrap();
        AuditLog::open_with(&torn, keyed())
            .unwrap()
            .append(&event())
            .unwrap();
        // Untouched, a second writer extends it, and the chain verifies.
        let honest = dir.path().join("honest.jsonl");
        AuditLog::open_with(&honest, keyed())
            .unwrap()
            .append(&event())
            .unwrap();
        AuditLog::open_with(&honest, keyed())
            .unwrap()
            .append(&event())
            .unwrap();
        let intact = crate::audit::verify::verify(|| std::fs::File::open(&honest), &key, None)
            .unwrap()
            .unwrap();
        assert_eq!(intact.events, 2);
    }

    #[test]
    fn a_torn_line_with_the_largest_seq_does_not_overflow_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, format!("{{\"seq\":{}}}", u64::MAX)).unwrap();
        AuditLog::open(&path).unwrap().append(b"{}\n").unwrap();
    }

    #[test]
    fn a_write_that_fails_after_the_open_is_an_error_naming_the_log() {
        // The stages' full-disk tests (ENOSPC on a small tmpfs) run the binaries; here the
        // file is one the write cannot go to, as an open that succeeded and a write that fails.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, b"").unwrap();
        let mut log = AuditLog {
            file: File::open(&path).unwrap(),
            path: path.clone(),
            options: AuditOptions::default(),
            known_end: None,
            sealed: Vec::new(),
            deferred: Vec::new(),
        };
        let err = log.append(b"{}\n").unwrap_err();
        assert!(
            format!("{err:#}").contains(&format!("cannot write the audit log {}", path.display())),
            "{err:#}"
        );
        assert!(!log.appended());
    }

    #[test]
    fn a_device_is_refused_at_the_open() {
        let err = AuditLog::open(Path::new("/dev/full")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot open the audit log /dev/full: it is a character device, not a regular file"
        );
    }

    #[test]
    fn an_append_the_file_did_not_keep_is_an_error() {
        use std::io::Write;
        let folder = tempfile::tempdir().unwrap();
        let mut file = std::fs::File::create(folder.path().join("log")).unwrap();
        file.write_all(b"abc").unwrap();
        assert!(kept(&file, 0, 3).is_ok());
        let err = kept(&file, 0, 10).unwrap_err();
        assert!(
            err.to_string()
                .contains("10 bytes appended at length 0 left it 3 bytes long"),
            "{err}"
        );
    }
}
