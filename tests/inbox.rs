//! `sc-inbox`, and the doors that put their holds in the crew's inbox (`sc-approve --inbox`,
//! `sc-mcp --inbox`): real pipelines, a real SQLite file and a real redis-server, the page's API
//! spoken over HTTP.
//!
//! Nothing here sleeps for a fixed time: every wait is for an event (a line on a pipe, a hold on
//! the page, a file written, a process exit) with a deadline.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::{bin_path, parse_whole_lines, wait_all, RedisServer, Scratch};
use crate::web::{request, runtime, Answer, DEADLINE};

/// A payment the default policy holds (above the hold limit of 100).
fn payment(agent: &str, amount: u64) -> Value {
    json!({"agent": agent, "tool": "send_payment", "args": {"to": "acme", "amount": amount}, "source": "user"})
}

/// A process's stderr, kept line by line, with a bell for each new line.
#[derive(Clone, Default)]
struct Lines(Arc<(Mutex<Vec<String>>, Condvar)>);

impl Lines {
    fn read_from(pipe: impl std::io::Read + Send + 'static) -> Lines {
        let lines = Lines::default();
        let kept = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let (all, bell) = &*kept.0;
                all.lock().unwrap().push(line);
                bell.notify_all();
            }
        });
        lines
    }

    /// Waits for a line that contains `text`, and returns it.
    fn wait_for(&self, text: &str) -> String {
        let (all, bell) = &*self.0;
        let start = Instant::now();
        let mut all = all.lock().unwrap();
        loop {
            if let Some(line) = all.iter().find(|line| line.contains(text)) {
                return line.clone();
            }
            let left = DEADLINE
                .checked_sub(start.elapsed())
                .unwrap_or_else(|| panic!("never said {text:?}; said {all:#?}"));
            all = bell.wait_timeout(all, left).unwrap().0;
        }
    }

    fn all(&self) -> Vec<String> {
        self.0 .0.lock().unwrap().clone()
    }
}

/// `sc-gate | sc-approve --inbox --state S --crew C … | sc-exec`, in a scratch folder of its own.
struct Door {
    scratch: Scratch,
    gate_in: Option<ChildStdin>,
    children: Vec<(&'static str, Child)>,
    records: Receiver<String>,
    approve_stderr: Lines,
}

impl Door {
    fn start(state: &str, crew: &str, approve_args: &[&str]) -> Door {
        let scratch = Scratch::new();
        let stage = |bin: &str| {
            let mut cmd = Command::new(bin_path(bin));
            cmd.env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .current_dir(scratch.dir.path())
                .arg("--audit")
                .arg(scratch.audit_path())
                .stderr(Stdio::piped());
            cmd
        };
        let mut gate = stage("sc-gate")
            .arg("--quiet")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sc-gate");
        let mut approve = stage("sc-approve")
            .args(["--inbox", "--state", state, "--crew", crew])
            .args(approve_args)
            .stdin(Stdio::from(gate.stdout.take().unwrap()))
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn sc-approve");
        let mut exec = stage("sc-exec")
            .arg("--quiet")
            .stdin(Stdio::from(approve.stdout.take().unwrap()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sc-exec");
        let (sender, records) = mpsc::channel();
        let exec_out = exec.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(exec_out).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let approve_stderr = Lines::read_from(approve.stderr.take().unwrap());
        Door {
            scratch,
            gate_in: gate.stdin.take(),
            children: vec![
                ("sc-gate", gate),
                ("sc-approve", approve),
                ("sc-exec", exec),
            ],
            records,
            approve_stderr,
        }
    }

    fn approve_pid(&self) -> u32 {
        self.children[1].1.id()
    }

    fn send(&mut self, call: &Value) {
        let input = self.gate_in.as_mut().expect("input still open");
        writeln!(input, "{call}").expect("write a call");
        input.flush().expect("flush");
    }

    /// The next record sc-exec writes.
    fn next_record(&self) -> Value {
        let line = self.records.recv_timeout(DEADLINE).unwrap_or_else(|_| {
            panic!(
                "sc-exec wrote no record in time; sc-approve said {:#?}",
                self.approve_stderr.all()
            )
        });
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Closes the input; every stage exits 0.
    fn finish(mut self) {
        self.gate_in = None;
        let statuses = wait_all(&mut self.children, DEADLINE);
        for ((stage, _), status) in self.children.iter().zip(&statuses) {
            assert_eq!(
                status.code(),
                Some(0),
                "{stage} failed; sc-approve said {:#?}",
                self.approve_stderr.all()
            );
        }
        self.children.clear();
    }

    fn audit_events(&self, stage: &str) -> Vec<Value> {
        audit_events(&self.scratch, stage)
    }
}

impl Drop for Door {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn audit_events(scratch: &Scratch, stage: &str) -> Vec<Value> {
    let bytes = std::fs::read(scratch.audit_path()).unwrap_or_default();
    parse_whole_lines(&bytes)
        .into_iter()
        .filter(|event| event["stage"] == stage)
        .collect()
}

/// `sc-inbox --web 127.0.0.1:0 --state S --crew C …`, with its own audit log.
struct Inbox {
    scratch: Scratch,
    child: Child,
    stderr: Lines,
    url: String,
    host: String,
    token: String,
}

impl Inbox {
    fn start(state: &str, crew: &str, args: &[&str]) -> Inbox {
        let scratch = Scratch::new();
        let mut child = Command::new(bin_path("sc-inbox"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(scratch.dir.path())
            .arg("--audit")
            .arg(scratch.audit_path())
            .args(["--web", "127.0.0.1:0", "--state", state, "--crew", crew])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sc-inbox");
        let stderr = Lines::read_from(child.stderr.take().unwrap());
        let announced = stderr.wait_for("sc-inbox: approvals at ");
        let url = announced
            .strip_prefix("sc-inbox: approvals at ")
            .expect("the announcement, at the start of the line")
            .to_owned();
        let (page, token) = url.split_once("/#token=").expect("a token in the fragment");
        Inbox {
            host: page.strip_prefix("http://").expect("http").to_owned(),
            token: token.to_owned(),
            url: url.clone(),
            scratch,
            child,
            stderr,
        }
    }

    fn api(&self, method: &str, path: &str, body: &[u8]) -> Answer {
        let bearer = format!("Bearer {}", self.token);
        let headers = [("host", self.host.as_str()), ("authorization", &bearer)];
        runtime().block_on(request(&self.host, method, path, &headers, body.to_vec()))
    }

    fn get(&self, path: &str) -> Vec<Value> {
        let answer = self.api("GET", path, b"");
        assert_eq!(answer.status, 200, "{}", answer.text());
        serde_json::from_slice(&answer.body).expect("a JSON array")
    }

    /// Waits until `count` holds are pending on the page, and returns them.
    fn wait_pending(&self, count: usize) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let pending = self.get("/api/holds");
            if pending.len() == count {
                return pending;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "{count} holds never pending: {pending:#?}; sc-inbox said {:#?}",
                self.stderr.all()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn answer(&self, hold: &Value, approve: bool) -> Answer {
        let body = json!({"approve": approve, "digest": hold["digest"]}).to_string();
        self.api(
            "POST",
            &format!("/api/holds/{}", hold["hold"]),
            body.as_bytes(),
        )
    }

    fn audit_events(&self) -> Vec<Value> {
        audit_events(&self.scratch, "inbox")
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The hold on the page whose record is of `agent`.
fn hold_of<'a>(pending: &'a [Value], agent: &str) -> &'a Value {
    pending
        .iter()
        .find(|hold| hold["record"]["call"]["agent"] == agent)
        .unwrap_or_else(|| panic!("no hold of {agent} in {pending:#?}"))
}

fn sqlite_state(scratch: &Scratch) -> String {
    scratch.path("crew/state.sqlite").display().to_string()
}

#[test]
fn two_pipelines_share_one_inbox_on_sqlite_and_each_runs_what_was_approved_there() {
    let shared = Scratch::new();
    let state = sqlite_state(&shared);
    let mut one = Door::start(&state, "pay", &[]);
    let mut two = Door::start(&state, "pay", &[]);
    let inbox = Inbox::start(&state, "pay", &[]);
    one.send(&payment("alice", 500));
    two.send(&payment("bob", 700));
    let pending = inbox.wait_pending(2);
    for (door, agent) in [(&one, "alice"), (&two, "bob")] {
        let hold = hold_of(&pending, agent);
        assert_eq!(hold["door"], "sc-approve", "{hold}");
        assert_eq!(hold["pid"], door.approve_pid(), "{hold}");
        assert_eq!(hold["record"]["decision"], "hold");
    }
    for agent in ["alice", "bob"] {
        let answer = inbox.answer(hold_of(&pending, agent), true);
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    for (door, agent) in [(&one, "alice"), (&two, "bob")] {
        let record = door.next_record();
        assert_eq!(record["call"]["agent"], agent);
        assert_eq!(record["approval"]["approved"], true, "{record}");
        assert_eq!(record["approval"]["by"], "web", "{record}");
        assert_eq!(
            record["approval"]["digest"],
            hold_of(&pending, agent)["digest"]
        );
        assert_eq!(record["outcome"]["status"], "executed", "{record}");
        let events = door.audit_events("approve");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0]["approval"]["approved"], true);
    }
    let answered: Vec<Value> = inbox
        .audit_events()
        .into_iter()
        .filter(|event| event["action"] == "answered")
        .collect();
    assert_eq!(answered.len(), 2, "{answered:#?}");
    assert!(answered.iter().all(|event| event["approved"] == true));
    // Nothing is left pending, on the page or in the store.
    inbox.wait_pending(0);
    one.finish();
    two.finish();
}

#[test]
fn over_redis_two_inboxes_answering_one_hold_the_first_wins_and_the_other_gets_409() {
    let redis = RedisServer::with_store();
    let state = redis.url();
    let mut one = Door::start(&state, "pay", &[]);
    let mut two = Door::start(&state, "pay", &[]);
    let first = Inbox::start(&state, "pay", &[]);
    let second = Inbox::start(&state, "pay", &[]);
    one.send(&payment("alice", 500));
    two.send(&payment("bob", 700));
    let on_first = first.wait_pending(2);
    let on_second = second.wait_pending(2);
    // alice's hold: approved on the first inbox, then the second one is too late.
    let won = first.answer(hold_of(&on_first, "alice"), true);
    assert_eq!(won.status, 200, "{}", won.text());
    let lost = second.answer(hold_of(&on_second, "alice"), false);
    assert_eq!(lost.status, 409, "{}", lost.text());
    // The second inbox takes the card off its page.
    let start = Instant::now();
    while second
        .get("/api/holds")
        .iter()
        .any(|hold| hold["record"]["call"]["agent"] == "alice")
    {
        assert!(
            start.elapsed() < DEADLINE,
            "alice's card stayed on the second page"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // bob's hold is answered on the second inbox.
    let answered = second.answer(hold_of(&on_second, "bob"), true);
    assert_eq!(answered.status, 200, "{}", answered.text());
    for (door, agent) in [(&one, "alice"), (&two, "bob")] {
        let record = door.next_record();
        assert_eq!(record["call"]["agent"], agent);
        assert_eq!(record["approval"]["approved"], true, "{record}");
        assert_eq!(record["outcome"]["status"], "executed", "{record}");
    }
    first.wait_pending(0);
    let refused: Vec<Value> = second
        .audit_events()
        .into_iter()
        .filter(|event| event["action"] == "refused")
        .collect();
    assert!(
        refused.len() <= 1
            && refused
                .iter()
                .all(|event| event["reason"] == "the hold was already answered"),
        "{refused:#?}"
    );
    one.finish();
    two.finish();
}

#[test]
fn a_store_that_goes_down_or_is_removed_while_a_door_waits_declines_with_the_reason() {
    let mut redis = RedisServer::with_store();
    let state = redis.url();
    let mut door = Door::start(&state, "pay", &[]);
    let inbox = Inbox::start(&state, "pay", &[]);
    door.send(&payment("alice", 500));
    inbox.wait_pending(1);
    redis.stop();
    let record = door.next_record();
    assert_eq!(record["approval"]["approved"], false, "{record}");
    let reason = record["approval"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("declined: the inbox's store failed: "),
        "{reason}"
    );
    assert_eq!(record["outcome"]["status"], "skipped", "{record}");
    door.finish();
    // A SQLite store whose file is removed: the connections still open on it are no longer the
    // crew's inbox.
    let shared = Scratch::new();
    let state = sqlite_state(&shared);
    let mut door = Door::start(&state, "pay", &[]);
    let inbox = Inbox::start(&state, "pay", &[]);
    door.send(&payment("bob", 500));
    inbox.wait_pending(1);
    std::fs::remove_file(&state).unwrap();
    let record = door.next_record();
    assert_eq!(record["approval"]["approved"], false, "{record}");
    assert_eq!(
        record["approval"]["reason"],
        format!("declined: the inbox's store failed: its file {state} was removed or replaced")
    );
    assert_eq!(record["outcome"]["status"], "skipped", "{record}");
    door.finish();
}

#[test]
fn a_door_killed_while_waiting_is_withdrawn_and_an_answer_to_it_gets_409() {
    let shared = Scratch::new();
    let state = sqlite_state(&shared);
    let mut door = Door::start(&state, "pay", &[]);
    let inbox = Inbox::start(&state, "pay", &[]);
    door.send(&payment("alice", 500));
    let pending = inbox.wait_pending(1);
    let (_, approve) = &mut door.children[1];
    approve.kill().unwrap();
    approve.wait().unwrap();
    inbox.wait_pending(0);
    let history = inbox.get("/api/history");
    assert_eq!(history[0]["state"], "withdrawn", "{history:#?}");
    assert_eq!(history[0]["reason"], "the door is gone", "{history:#?}");
    let late = inbox.answer(&pending[0], true);
    assert_eq!(late.status, 409, "{}", late.text());
    let withdrawn: Vec<Value> = inbox
        .audit_events()
        .into_iter()
        .filter(|event| event["action"] == "withdrawn")
        .collect();
    assert_eq!(withdrawn.len(), 1, "{withdrawn:#?}");
    assert_eq!(withdrawn[0]["reason"], "the door is gone");
    assert_eq!(withdrawn[0]["pid"], pending[0]["pid"]);
}

#[test]
fn a_hold_nobody_answers_declines_at_the_doors_timeout_or_the_inboxs() {
    let shared = Scratch::new();
    let state = sqlite_state(&shared);
    // No inbox at all: the door's own --timeout.
    let mut alone = Door::start(&state, "quiet", &["--timeout", "1"]);
    alone.send(&payment("alice", 500));
    let record = alone.next_record();
    assert_eq!(record["approval"]["approved"], false, "{record}");
    assert_eq!(
        record["approval"]["reason"],
        "declined: no answer in the crew's inbox within 1 seconds"
    );
    alone.finish();
    // The inbox's --timeout, the door waiting forever.
    let mut door = Door::start(&state, "pay", &["--timeout", "0"]);
    let inbox = Inbox::start(&state, "pay", &["--timeout", "1"]);
    door.send(&payment("bob", 500));
    let record = door.next_record();
    assert_eq!(record["approval"]["approved"], false, "{record}");
    assert_eq!(
        record["approval"]["reason"],
        "declined: the crew's inbox expired the hold: no answer in the crew's inbox within 1 seconds"
    );
    let expired: Vec<Value> = inbox
        .audit_events()
        .into_iter()
        .filter(|event| event["action"] == "expired")
        .collect();
    assert_eq!(expired.len(), 1, "{expired:#?}");
    door.finish();
}

#[test]
fn the_inboxs_notify_command_gets_the_hold_with_the_pages_url() {
    let shared = Scratch::new();
    let state = sqlite_state(&shared);
    let told = shared.path("told.json");
    let command = format!("cat > '{}.part' && mv '{0}.part' '{0}'", told.display());
    let mut door = Door::start(&state, "pay", &[]);
    let inbox = Inbox::start(&state, "pay", &["--notify", &command]);
    door.send(&payment("alice", 500));
    let pending = inbox.wait_pending(1);
    let start = Instant::now();
    while !told.exists() {
        assert!(start.elapsed() < DEADLINE, "the notify command never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let payload: Value = serde_json::from_slice(&std::fs::read(&told).unwrap()).unwrap();
    assert_eq!(payload["url"], inbox.url.as_str(), "{payload}");
    assert_eq!(payload["agent"], "alice", "{payload}");
    assert_eq!(payload["tool"], "send_payment", "{payload}");
    assert_eq!(payload["digest"], pending[0]["digest"], "{payload}");
    let answer = inbox.answer(&pending[0], false);
    assert_eq!(answer.status, 200, "{}", answer.text());
    let record = door.next_record();
    assert_eq!(record["approval"]["approved"], false, "{record}");
    assert_eq!(record["approval"]["reason"], "declined on the web page");
    door.finish();
}

#[test]
fn sc_mcp_puts_a_held_call_in_the_crews_inbox_and_runs_it_once_approved_there() {
    use crate::mcp::{events, fake_proxy, is_error, server_received};
    let scratch = Scratch::new();
    let state = sqlite_state(&scratch);
    let mut proxy = fake_proxy(
        &scratch,
        &[
            "--inbox",
            "--state",
            &state,
            "--crew",
            "pay",
            "--timeout",
            "600",
        ],
    );
    let inbox = Inbox::start(&state, "pay", &[]);
    proxy.initialize();
    let held = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"amount": 750, "to": "acme-held"}}});
    let declined = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "echo", "arguments": {"amount": 480, "to": "acme-no"}}});
    proxy.send_value(&held);
    proxy.send_value(&declined);
    // Both wait side by side in the inbox.
    let pending = inbox.wait_pending(2);
    let of = |to: &str| {
        pending
            .iter()
            .find(|hold| hold["record"]["call"]["args"]["to"] == to)
            .unwrap_or_else(|| panic!("no hold to {to} in {pending:#?}"))
    };
    for hold in &pending {
        assert_eq!(hold["door"], "sc-mcp", "{hold}");
        assert!(hold["pid"].as_u64().is_some_and(|pid| pid > 0), "{hold}");
    }
    let no = inbox.answer(of("acme-no"), false);
    assert_eq!(no.status, 200, "{}", no.text());
    let refused = proxy.answer(&json!(2));
    assert!(is_error(&refused), "{refused}");
    let yes = inbox.answer(of("acme-held"), true);
    assert_eq!(yes.status, 200, "{}", yes.text());
    let ran = proxy.answer(&json!(1));
    assert!(!is_error(&ran), "{ran}");
    let received = server_received(&scratch);
    assert!(received.contains("acme-held"), "{received}");
    assert!(!received.contains("acme-no"), "{received}");
    let done = proxy.finish();
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
    let all = scratch.audit_events();
    let approvals = events(&all, "approve");
    assert_eq!(approvals.len(), 2, "{approvals:#?}");
    for approval in approvals {
        assert_eq!(approval["approval"]["by"], "web", "{approval}");
        let digest = approval["approval"]["digest"].as_str().unwrap();
        assert!(
            pending.iter().any(|hold| hold["digest"] == digest),
            "{approval}"
        );
    }
    inbox.wait_pending(0);
    // The inbox's page does not know what the door did with the yes (sc-mcp decides it again as
    // it runs it): its history says the door does not report here, so the card claims no run.
    let history = inbox.get("/api/history");
    assert!(
        history.iter().all(|hold| hold["reports"] == false),
        "{history:#?}"
    );
}
