use super::*;
use crate::audit::chain::Chain;
use crate::jsonl::{AuditSink, Input, StageOutput, DEFAULT_MAX_RECORD_BYTES};
use crate::rules::policy::Policy;
use crate::stage::exec::backends::ToolsFile;
use crate::stage::exec::{run, ExecOptions, ToolSet};
use crate::stage::sandbox::door::SandboxDoor;
use crate::store::Timing;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn tools(entry: &str) -> ToolsFile {
    ToolsFile::from_json_str(&format!(r#"{{"t": {entry}}}"#), Path::new("/srv/crew")).unwrap()
}

fn backend(entry: &str) -> Backend {
    tools(entry).get("t").unwrap().clone()
}

fn starting<'a>(backend: &'a Backend, store: Option<&'a (String, Option<String>)>) -> Starting<'a> {
    Starting {
        id: "c-1",
        agent: "buyer",
        tool: "send_payment",
        decision: Decision::Hold,
        backend,
        store,
    }
}

fn parsed(line: &[u8]) -> Value {
    assert!(line.ends_with(b"\n"), "one whole line");
    serde_json::from_slice(line).unwrap()
}

#[test]
fn a_start_names_the_call_and_its_backend_and_has_no_outcome() {
    let pay = backend(r#"{"command": ["/usr/local/bin/pay", "--live"]}"#);
    let event = parsed(&event(&starting(&pay, None)));
    assert_eq!(event["stage"], "exec-start", "{event}");
    assert_eq!(event["id"], "c-1");
    assert_eq!(event["agent"], "buyer");
    assert_eq!(event["tool"], "send_payment");
    assert_eq!(event["decision"], "hold");
    assert_eq!(
        event["backend"],
        serde_json::json!({"command": "/usr/local/bin/pay"})
    );
    assert!(event.get("outcome").is_none(), "{event}");
    assert!(event["ts"].as_str().is_some_and(|ts| ts.ends_with('Z')));
}

#[test]
fn a_start_says_when_the_backend_is_sandboxed_and_which_store_and_crew() {
    let pay = backend(r#"{"command": ["/usr/local/bin/pay"], "sandbox": true}"#);
    let store = ("state.sqlite".to_owned(), Some("crew-a".to_owned()));
    let event = parsed(&event(&starting(&pay, Some(&store))));
    assert_eq!(event["backend"]["sandboxed"], true, "{event}");
    assert_eq!(event["stateStore"], "state.sqlite");
    assert_eq!(event["crew"], "crew-a");
}

/// A sink that keeps what it is given, and says at each append whether the backend's marker
/// file was there yet; `fail` makes every append fail, as a full disk does.
#[derive(Clone)]
struct Watching {
    marker: PathBuf,
    appends: Arc<Mutex<Vec<(String, bool)>>>,
    fail: bool,
}

impl AuditSink for Watching {
    fn append(&mut self, lines: &[u8], _records: &[u8]) -> anyhow::Result<()> {
        if self.fail {
            anyhow::bail!("cannot write the audit log /dev/full: no space left on device");
        }
        let text = String::from_utf8(lines.to_vec()).unwrap();
        self.appends
            .lock()
            .unwrap()
            .push((text, self.marker.exists()));
        Ok(())
    }
}

/// Runs one allowed call whose backend creates `marker`, with `jobs`, on `sink`.
fn run_marking(dir: &Path, marker: &Path, jobs: usize, sink: Watching) -> anyhow::Result<()> {
    let script = format!("touch '{}'; echo done", marker.display());
    let entry = format!(
        r#"{{"command": ["/bin/sh", "-c", {}], "output": "text", "env": {{"PATH": "/usr/bin:/bin"}}}}"#,
        Value::String(script)
    );
    let input = dir.join("records.jsonl");
    std::fs::write(
        &input,
        r#"{"id":"c-1","call":{"agent":"a","tool":"t","args":{},"source":"user"},"decision":"allow","reasons":["ok"]}
"#,
    )
    .unwrap();
    let options = ExecOptions {
        policy: Policy::default(),
        max_line_bytes: DEFAULT_MAX_RECORD_BYTES,
        tools: ToolSet::Backends {
            file: tools(&entry),
            builtin_fallback: false,
        },
        jobs,
        chain: Chain::Sha256,
        timing: Timing::default(),
        sandbox: SandboxDoor {
            door: "sc-exec",
            policy: None,
            audit: None,
            audit_key: None,
            state: None,
            crew: None,
            exe: None,
        },
    };
    let mut output = StageOutput::new(sink, Vec::new(), None::<Vec<u8>>);
    run(
        &[Input::File(input)],
        &options,
        &mut output,
        &mut Vec::new(),
    )
    .map(|_| ())
}

fn watching(marker: &Path, fail: bool) -> Watching {
    Watching {
        marker: marker.to_owned(),
        appends: Arc::default(),
        fail,
    }
}

#[test]
fn no_backend_runs_when_its_start_cannot_be_appended() {
    for jobs in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let err = run_marking(dir.path(), &marker, jobs, watching(&marker, true)).unwrap_err();
        assert!(format!("{err:#}").contains("/dev/full"), "{err:#}");
        assert!(!marker.exists(), "jobs {jobs}: the backend ran unrecorded");
    }
}

#[test]
fn the_start_is_in_the_log_before_the_backend_runs_and_the_exec_event_after() {
    for jobs in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let sink = watching(&marker, false);
        run_marking(dir.path(), &marker, jobs, sink.clone()).unwrap();
        assert!(marker.exists(), "jobs {jobs}: the backend ran");
        let appends = sink.appends.lock().unwrap().clone();
        let events: Vec<(Value, bool)> = appends
            .iter()
            .flat_map(|(text, ran)| text.lines().map(move |line| (line, *ran)))
            .map(|(line, ran)| (serde_json::from_str(line).unwrap(), ran))
            .collect();
        let stages: Vec<&str> = events
            .iter()
            .map(|(event, _)| event["stage"].as_str().unwrap())
            .collect();
        assert_eq!(stages, ["exec-start", "exec"], "jobs {jobs}: {events:?}");
        assert!(events.iter().all(|(event, _)| event["id"] == "c-1"));
        assert!(
            !events[0].1,
            "jobs {jobs}: the start was appended after the run"
        );
        assert_eq!(events[1].0["outcome"]["status"], "executed", "{events:?}");
    }
}

#[test]
fn a_backend_that_cannot_have_its_sandbox_is_not_started_so_has_no_start() {
    let plain = backend(r#"{"command": ["/usr/local/bin/pay"]}"#);
    let boxed = backend(r#"{"command": ["/usr/local/bin/pay"], "sandbox": true}"#);
    let plan = |backend, sandbox| super::super::Plan::Backend {
        tool: "t".into(),
        args_json: "{}".into(),
        cleared: "allowed by policy".into(),
        backend,
        sandbox,
    };
    let missing = || {
        Some(Box::new(Err(crate::stage::sandbox::Unconfinable::from(
            "bubblewrap is missing",
        ))))
    };
    assert!(plan(&plain, None).backend_to_start().is_some());
    assert!(plan(&plain, missing()).backend_to_start().is_some());
    assert!(plan(&boxed, None).backend_to_start().is_none());
    assert!(plan(&boxed, missing()).backend_to_start().is_none());
}
