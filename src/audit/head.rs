//! What begins every event line: the stage that wrote it ([`Stage`]) and its time, written as the
//! log's writer ([`super::log`]) and a deferred event ([`super::deferred`]) both write them.

use std::time::SystemTime;

/// The stages that write events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Gate,
    Approve,
    Exec,
    /// sc-exec's write-ahead record: a backend is about to start (its `exec` event follows
    /// with the outcome).
    ExecStart,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Gate => "gate",
            Stage::Approve => "approve",
            Stage::Exec => "exec",
            Stage::ExecStart => "exec-start",
        }
    }
}

/// An event line's first members, `{"ts":"…","stage":"…"`: [`super::log::event_in`]'s, and a deferred
/// event's ([`super::deferred`]).
pub(crate) fn push_event_head(out: &mut Vec<u8>, stage: Stage, time: SystemTime) {
    out.extend_from_slice(b"{\"ts\":\"");
    push_timestamp(out, time);
    out.extend_from_slice(b"\",\"stage\":\"");
    out.extend_from_slice(stage.as_str().as_bytes());
    out.push(b'"');
}

/// Appends [`timestamp`]'s text to `out`. It needs no escaping in a JSON string.
///
/// The date and time of day are formatted once a second (events come far more often than that);
/// only the microseconds are written for each event.
pub(crate) fn push_timestamp(out: &mut Vec<u8>, time: SystemTime) {
    use std::cell::Cell;
    thread_local! {
        static SECOND: Cell<(u64, [u8; 19])> = const { Cell::new((u64::MAX, [0; 19])) };
    }
    let Ok(since_epoch) = time.duration_since(SystemTime::UNIX_EPOCH) else {
        out.extend_from_slice(
            humantime::format_rfc3339_micros(time)
                .to_string()
                .as_bytes(),
        );
        return;
    };
    let seconds = since_epoch.as_secs();
    let (cached, mut prefix) = SECOND.get();
    if cached != seconds {
        let whole = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(seconds);
        let text = humantime::format_rfc3339_seconds(whole).to_string();
        if text.len() != 20 {
            // Past the year 9999: not worth a cache.
            out.extend_from_slice(
                humantime::format_rfc3339_micros(time)
                    .to_string()
                    .as_bytes(),
            );
            return;
        }
        prefix.copy_from_slice(&text.as_bytes()[..19]);
        SECOND.set((seconds, prefix));
    }
    let micros = since_epoch.subsec_micros();
    let mut tail = *b".000000Z";
    let mut rest = micros;
    for at in (1..7).rev() {
        tail[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    out.extend_from_slice(&prefix);
    out.extend_from_slice(&tail);
}
