//! An audit event that repeats its record, left for the log's writer to put together.
//!
//! sc-gate's event on a call is its verdict's members after a timestamp and the stage, with the
//! agent's state after them. Rather than copy them into a line of its own on the thread that
//! decides, the gate queues a short entry that says where the record lies in the batch's
//! records; the thread that seals and appends the batch ([`super::log::AuditLog`]) writes the
//! line from it. The line is byte for byte the one [`super::log::event_in`] would have written.
//!
//! An entry in a batch of events starts with [`TAG`], a byte no event line starts with (they
//! start with `{`), then: the time (seconds and nanoseconds since the epoch, `u64` and `u32`),
//! the stage (one byte), the record's members from `"id"` on (start and end in the records,
//! `u32` each), and the members that follow them (their length, `u32`, and the bytes). Numbers
//! are little-endian.

use std::ops::Range;
use std::time::{Duration, SystemTime};

use super::head::Stage;

/// The first byte of a deferred entry.
pub(crate) const TAG: u8 = 0;

/// The fixed part of an entry after its tag.
const HEAD: usize = 8 + 4 + 1 + 4 + 4 + 4;

/// Why an entry could not be put together: the batch was not the one the entry was written
/// for. The writer appends nothing of the batch then.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Malformed {
    #[error("a deferred audit event is cut short: {0} bytes where {HEAD} or more were due")]
    Short(usize),
    #[error("a deferred audit event names the stage {0}, which is none")]
    Stage(u8),
    #[error("a deferred audit event's record lies at {start}..{end}, outside the batch's {len} bytes of records, or does not start with \"id\"")]
    Record {
        start: usize,
        end: usize,
        len: usize,
    },
    #[error("a deferred audit event's time is not one")]
    Time,
}

/// Queues at the end of `events` the event of the record at `record` in the batch's records
/// (its members from `"id"` to before its closing brace), at `time`, from `stage`, followed
/// by the members `after` (each a run of whole members with no leading comma, or empty).
/// Returns false, queuing nothing, for what an entry cannot say (a time before 1970, a batch
/// past 4 GiB): the caller writes that event in full.
#[must_use]
pub(crate) fn push(
    events: &mut Vec<u8>,
    time: SystemTime,
    stage: Stage,
    record: Range<usize>,
    after: &[&[u8]],
) -> bool {
    let Ok(since) = time.duration_since(SystemTime::UNIX_EPOCH) else {
        return false;
    };
    let after_len: usize = after
        .iter()
        .filter(|members| !members.is_empty())
        .map(|members| members.len() + 1)
        .sum();
    let (Ok(start), Ok(end), Ok(after_u32)) = (
        u32::try_from(record.start),
        u32::try_from(record.end),
        u32::try_from(after_len),
    ) else {
        return false;
    };
    // The fixed part in one piece: it is written for every call the gate decides.
    let mut head = [0u8; 1 + HEAD];
    head[0] = TAG;
    head[1..9].copy_from_slice(&since.as_secs().to_le_bytes());
    head[9..13].copy_from_slice(&since.subsec_nanos().to_le_bytes());
    head[13] = stage_byte(stage);
    head[14..18].copy_from_slice(&start.to_le_bytes());
    head[18..22].copy_from_slice(&end.to_le_bytes());
    head[22..26].copy_from_slice(&after_u32.to_le_bytes());
    events.reserve(head.len() + after_len);
    events.extend_from_slice(&head);
    for members in after {
        if !members.is_empty() {
            events.push(b',');
            events.extend_from_slice(members);
        }
    }
    true
}

fn stage_byte(stage: Stage) -> u8 {
    match stage {
        Stage::Gate => 1,
        Stage::Approve => 2,
        Stage::Exec => 3,
        Stage::ExecStart => 4,
    }
}

/// The stage whose [`stage_byte`] is `byte`.
fn stage_of(byte: u8) -> Option<Stage> {
    [Stage::Gate, Stage::Approve, Stage::Exec, Stage::ExecStart]
        .into_iter()
        .find(|stage| stage_byte(*stage) == byte)
}

/// Writes the event line (without its newline) of the entry at the start of `entry` into
/// `line`, from the batch's `records`; returns the entry's length.
pub(crate) fn write(entry: &[u8], records: &[u8], line: &mut Vec<u8>) -> Result<usize, Malformed> {
    let short = || Malformed::Short(entry.len().saturating_sub(1));
    let fixed = entry.get(1..1 + HEAD).ok_or_else(short)?;
    let u32_at =
        |at: usize| u32::from_le_bytes([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]]);
    let mut seconds = [0u8; 8];
    seconds.copy_from_slice(&fixed[..8]);
    let seconds = u64::from_le_bytes(seconds);
    let nanos = u32_at(8);
    let stage = stage_of(fixed[12]).ok_or(Malformed::Stage(fixed[12]))?;
    let (start, end) = (u32_at(13) as usize, u32_at(17) as usize);
    let length = 1 + HEAD + u32_at(21) as usize;
    let record = records
        .get(start..end)
        .filter(|record| record.starts_with(b"\"id\":"))
        .ok_or(Malformed::Record {
            start,
            end,
            len: records.len(),
        })?;
    let after = entry.get(1 + HEAD..length).ok_or_else(short)?;
    if nanos >= 1_000_000_000 {
        return Err(Malformed::Time);
    }
    let time = SystemTime::UNIX_EPOCH
        .checked_add(Duration::new(seconds, nanos))
        .ok_or(Malformed::Time)?;
    line.clear();
    super::head::push_event_head(line, stage, time);
    line.push(b',');
    line.extend_from_slice(record);
    line.extend_from_slice(after);
    line.push(b'}');
    Ok(length)
}

#[cfg(test)]
#[path = "deferred_tests.rs"]
mod tests;
