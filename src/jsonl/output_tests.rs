use super::*;
use std::sync::{Arc, Mutex};

/// What a sink was given, one entry an append; `fail` makes every append fail; `durable` says
/// each append waits for the disk.
#[derive(Clone, Default)]
struct Recording {
    appends: Arc<Mutex<Vec<Vec<u8>>>>,
    fail: bool,
    durable: bool,
}

impl AuditSink for Recording {
    fn append(&mut self, lines: &[u8], _records: &[u8]) -> Result<()> {
        if self.fail {
            anyhow::bail!("cannot write the audit log /dev/full: no space left on device");
        }
        self.appends.lock().unwrap().push(lines.to_vec());
        Ok(())
    }

    fn durable(&self) -> bool {
        self.durable
    }
}

/// Stdout kept where the test can read it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn output(sink: &Recording, stdout: &Shared) -> StageOutput<Shared, Vec<u8>> {
    StageOutput::new(sink.clone(), stdout.clone(), None)
}

#[test]
fn a_write_ahead_event_is_appended_after_what_was_queued_and_waited_for() {
    let (sink, stdout) = (Recording::default(), Shared::default());
    let mut out = output(&sink, &stdout);
    out.emit(b"{\"e\":1}\n", b"{\"r\":1}\n");
    out.write_ahead(b"{\"start\":2}\n").unwrap();
    assert_eq!(
        *sink.appends.lock().unwrap(),
        vec![b"{\"e\":1}\n".to_vec(), b"{\"start\":2}\n".to_vec()],
        "what was queued first, with its records, then the event, done when it returns"
    );
    assert_eq!(*stdout.0.lock().unwrap(), b"{\"r\":1}\n");
}

#[test]
fn a_write_ahead_that_fails_is_an_error_and_nothing_queued_leaves() {
    let sink = Recording {
        fail: true,
        ..Recording::default()
    };
    let stdout = Shared::default();
    let mut out = output(&sink, &stdout);
    out.emit(b"{\"e\":1}\n", b"{\"r\":1}\n");
    let err = out.write_ahead(b"{\"start\":2}\n").unwrap_err();
    assert!(format!("{err:#}").contains("/dev/full"), "{err:#}");
    assert!(stdout.0.lock().unwrap().is_empty());
}

#[test]
fn a_write_ahead_waits_for_the_batch_the_audit_thread_is_appending() {
    let (sink, stdout) = (Recording::default(), Shared::default());
    let mut out = output(&sink, &stdout);
    // A batch large enough to go to the audit thread while input flows.
    let record = vec![b'x'; BATCH_BYTES];
    out.emit(b"{\"e\":1}\n", &record);
    out.commit_if_due(true).unwrap();
    out.write_ahead(b"{\"start\":2}\n").unwrap();
    assert_eq!(
        *sink.appends.lock().unwrap(),
        vec![b"{\"e\":1}\n".to_vec(), b"{\"start\":2}\n".to_vec()]
    );
    assert_eq!(stdout.0.lock().unwrap().len(), BATCH_BYTES);
}

/// A stdout whose reader has gone.
#[derive(Clone, Default)]
struct Closed;

impl Write for Closed {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
}

#[test]
fn a_write_ahead_after_records_that_cannot_leave_appends_no_event() {
    // The event says an act is about to happen: when the records queued before it cannot leave
    // (a closed stdout), the stage stops before the event, and the act never happens.
    let sink = Recording::default();
    let mut out = StageOutput::new(sink.clone(), Closed, None::<Vec<u8>>);
    out.emit(b"{\"e\":1}\n", b"{\"r\":1}\n");
    assert!(out.write_ahead(b"{\"start\":2}\n").is_err());
    assert_eq!(*sink.appends.lock().unwrap(), vec![b"{\"e\":1}\n".to_vec()]);
}

/// Batches queued behind one whose append failed never leave, nor do they on a later commit.
#[test]
fn no_batch_in_flight_leaves_after_an_append_that_failed() {
    let sink = Recording {
        fail: true,
        ..Recording::default()
    };
    let stdout = Shared::default();
    let mut out = output(&sink, &stdout);
    let record = vec![b'x'; BATCH_BYTES];
    let mut failed = false;
    // While input flows, batches go to the thread, up to IN_FLIGHT of them, and the one after
    // waits for the oldest: that wait sees the failure.
    for n in 0..=IN_FLIGHT {
        out.emit(format!("{{\"e\":{n}}}\n").as_bytes(), &record);
        if out.commit_if_due(true).is_err() {
            failed = true;
            break;
        }
    }
    assert!(
        failed,
        "the failed append was seen once a batch had to wait for it"
    );
    // Whether the failure was seen sending a batch (which is then dropped) or waiting for one
    // (the next stays queued, and its commit fails), nothing leaves later.
    let _ = out.commit();
    let _ = out.commit();
    assert!(stdout.0.lock().unwrap().is_empty());
}

/// A sink whose appends numbered in `failing` (from 0) fail, as a full disk would; it counts
/// every append it is given.
#[derive(Clone)]
struct Failing {
    appends: Arc<Mutex<usize>>,
    failing: std::ops::Range<usize>,
}

impl Failing {
    fn new(failing: std::ops::Range<usize>) -> Self {
        Failing {
            appends: Arc::default(),
            failing,
        }
    }

    fn appends(&self) -> usize {
        *self.appends.lock().unwrap()
    }
}

impl AuditSink for Failing {
    fn append(&mut self, _: &[u8], _: &[u8]) -> Result<()> {
        let mut appends = self.appends.lock().unwrap();
        let this = *appends;
        *appends += 1;
        if self.failing.contains(&this) {
            anyhow::bail!("cannot write the audit log /dev/full: no space left on device");
        }
        Ok(())
    }
}

/// When an append behind another fails, the stage stops with the append's own error (the disk
/// is full), not a word about the thread; the batches appended before it leave, none after.
#[test]
fn an_append_that_fails_behind_another_is_reported_as_itself() {
    for fail_from in 0..=IN_FLIGHT {
        let sink = Failing::new(fail_from..usize::MAX);
        let stdout = Shared::default();
        let mut out = StageOutput::new(sink, stdout.clone(), None::<Vec<u8>>);
        let record = vec![b'x'; BATCH_BYTES];
        let mut err = None;
        for n in 0..=2 * IN_FLIGHT + 1 {
            out.emit(format!("{{\"e\":{n}}}\n").as_bytes(), &record);
            if let Err(e) = out.commit_if_due(true) {
                err = Some(e);
                break;
            }
        }
        let err = err
            .or_else(|| out.commit().err())
            .expect("the failure is seen");
        assert!(
            format!("{err:#}").contains("/dev/full"),
            "{fail_from}: {err:#}"
        );
        assert_eq!(
            stdout.0.lock().unwrap().len(),
            fail_from * BATCH_BYTES,
            "only the batches appended before the failure leave"
        );
        // Nothing of the failed batch or after it leaves later either.
        let _ = out.commit();
        assert_eq!(stdout.0.lock().unwrap().len(), fail_from * BATCH_BYTES);
    }
}

/// Once an append failed, nothing more is written, even when the caller commits again and the
/// log would take it: the batches after the failed one never leave, and no event is appended.
#[test]
fn after_a_failed_append_nothing_more_leaves_however_the_caller_goes_on() {
    for background in [false, true] {
        // The first append fails, and the log has room again after it.
        let sink = Failing::new(0..1);
        let stdout = Shared::default();
        let mut out = StageOutput::new(sink.clone(), stdout.clone(), None::<Vec<u8>>);
        let record = vec![b'x'; if background { BATCH_BYTES } else { 1 }];
        out.emit(b"{\"e\":0}\n", &record);
        let first = match background {
            false => out.commit_if_due(false),
            true => out.commit_if_due(true).and_then(|()| out.commit()),
        };
        assert!(first.is_err(), "background: {background}");
        let appends = sink.appends();
        out.emit(b"{\"e\":1}\n", b"{\"r\":1}\n");
        let err = out.commit().unwrap_err();
        assert!(
            format!("{err:#}").contains("after an audit append failed: cannot write"),
            "{err:#}"
        );
        out.emit(b"{\"e\":2}\n", &vec![b'y'; BATCH_BYTES]);
        assert!(
            out.commit_if_due(true).is_err(),
            "a batch due for the thread"
        );
        assert!(out.write_ahead(b"{\"start\":2}\n").is_err());
        assert!(
            stdout.0.lock().unwrap().is_empty(),
            "background: {background}"
        );
        assert_eq!(sink.appends(), appends, "no append after the failed one");
    }
}

/// While input flows, a batch goes to the audit thread at 64 KiB of records, or at twice that
/// when each append waits for the disk; either way every record leaves after its event.
#[test]
fn a_durable_sink_is_handed_batches_twice_as_large() {
    for durable in [false, true] {
        let sink = Recording {
            durable,
            ..Recording::default()
        };
        let stdout = Shared::default();
        let mut out = output(&sink, &stdout);
        let record = vec![b'x'; BATCH_BYTES];
        out.emit(b"{\"e\":1}\n", &record);
        out.commit_if_due(true).unwrap();
        assert_eq!(
            out.in_flight.len(),
            usize::from(!durable),
            "durable {durable}"
        );
        out.emit(b"{\"e\":2}\n", &record);
        out.commit_if_due(true).unwrap();
        assert_eq!(out.in_flight.len(), if durable { 1 } else { 2 });
        out.commit().unwrap();
        let appends = sink.appends.lock().unwrap().clone();
        let expected: Vec<Vec<u8>> = if durable {
            vec![b"{\"e\":1}\n{\"e\":2}\n".to_vec()]
        } else {
            vec![b"{\"e\":1}\n".to_vec(), b"{\"e\":2}\n".to_vec()]
        };
        assert_eq!(appends, expected, "durable {durable}");
        assert_eq!(stdout.0.lock().unwrap().len(), 2 * BATCH_BYTES);
    }
}
