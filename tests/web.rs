//! `sc-approve --web`, as a person and other channels meet it: the whole pipeline
//! (`sc-gate | sc-approve --web 127.0.0.1:0 | sc-exec`) with the card in a real browser (Debian's
//! headless Chromium driven over WebDriver by chromedriver, which `make test-deps` installs), and
//! the JSON API spoken directly over HTTP, refusals included.
//!
//! Nothing here sleeps for a fixed time: every wait is for an event (a line on a pipe, an element
//! on the page, a process exit) with a generous deadline.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::util::{bin_path, parse_whole_lines, unclocked, wait_all, Scratch};

/// How long any one wait (a line, an element, an exit) may take before the test fails.
pub(crate) const DEADLINE: Duration = Duration::from_secs(60);

/// A payment the default policy holds (above the hold limit of 100).
fn payment(agent: &str, to: &str, amount: u64) -> Value {
    json!({"agent": agent, "tool": "send_payment", "args": {"to": to, "amount": amount}, "source": "user"})
}

fn search(q: &str) -> Value {
    json!({"agent": "scout", "tool": "search_web", "args": {"query": q}, "source": "user"})
}

/// `sc-gate | sc-approve --web 127.0.0.1:0 … | sc-exec`, run in a scratch folder with one audit
/// log; the test writes calls to sc-gate and reads sc-exec's records as they come.
struct Pipeline {
    scratch: Scratch,
    gate_in: Option<ChildStdin>,
    children: Vec<(&'static str, Child)>,
    records: Receiver<String>,
    /// sc-approve's stderr so far, one entry a line, and a bell for each new line.
    approve_stderr: Arc<(Mutex<Vec<String>>, Condvar)>,
    /// The page's address with its token, as printed.
    url: String,
    /// `127.0.0.1:PORT`.
    host: String,
    token: String,
}

impl Pipeline {
    fn start(approve_args: &[&str]) -> Pipeline {
        Pipeline::start_with(true, approve_args)
    }

    /// `sc-approve --web 127.0.0.1:0 … | sc-exec`, without sc-gate: the test writes the verdict
    /// records itself (a hold's `grantable`, which sc-gate writes only with grants).
    fn start_without_gate(approve_args: &[&str]) -> Pipeline {
        Pipeline::start_with(false, approve_args)
    }

    fn start_with(through_gate: bool, approve_args: &[&str]) -> Pipeline {
        let scratch = Scratch::new();
        let stage = |bin: &str| {
            let mut cmd = Command::new(bin_path(bin));
            cmd.env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .current_dir(scratch.dir.path())
                .arg("--audit")
                .arg(scratch.audit_path())
                .arg("--quiet")
                .stderr(Stdio::piped());
            cmd
        };
        let mut gate = through_gate.then(|| {
            stage("sc-gate")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn sc-gate")
        });
        let mut approve = stage("sc-approve");
        approve.args(["--web", "127.0.0.1:0"]).args(approve_args);
        // SAFETY: setsid is async-signal-safe and touches no memory of the parent. In a session
        // of its own, sc-approve has no terminal: the page is the only way to answer.
        unsafe {
            approve.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
        let mut approve = approve
            .stdin(match &mut gate {
                Some(gate) => Stdio::from(gate.stdout.take().unwrap()),
                None => Stdio::piped(),
            })
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn sc-approve");
        let mut exec = stage("sc-exec")
            .stdin(Stdio::from(approve.stdout.take().unwrap()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sc-exec");
        let gate_in = match &mut gate {
            Some(gate) => gate.stdin.take(),
            None => approve.stdin.take(),
        };
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
        let approve_stderr = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        {
            let approve_stderr = Arc::clone(&approve_stderr);
            let pipe = approve.stderr.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    let (lines, bell) = &*approve_stderr;
                    lines.lock().unwrap().push(line);
                    bell.notify_all();
                }
            });
        }
        let mut children = Vec::new();
        if let Some(mut gate) = gate {
            let gate_err = gate.stderr.take().unwrap();
            std::thread::spawn(move || std::io::copy(&mut { gate_err }, &mut std::io::sink()));
            children.push(("sc-gate", gate));
        }
        children.extend([("sc-approve", approve), ("sc-exec", exec)]);
        let mut pipeline = Pipeline {
            scratch,
            gate_in,
            children,
            records,
            approve_stderr,
            url: String::new(),
            host: String::new(),
            token: String::new(),
        };
        let announced = pipeline.wait_for_stderr("sc-approve: approvals at ");
        let url = announced
            .strip_prefix("sc-approve: approvals at ")
            .expect("the announcement")
            .to_owned();
        let (page, token) = url.split_once("/#token=").expect("a token in the fragment");
        pipeline.host = page.strip_prefix("http://").expect("http").to_owned();
        pipeline.token = token.to_owned();
        pipeline.url = url;
        pipeline
    }

    /// Sends one call into sc-gate.
    fn send(&mut self, call: &Value) {
        let input = self.gate_in.as_mut().expect("input still open");
        writeln!(input, "{call}").expect("write a call");
        input.flush().expect("flush");
    }

    /// Sends one call into sc-gate as this exact line (numbers as written: `750.10`); without
    /// sc-gate, one verdict record into sc-approve.
    fn send_line(&mut self, line: &str) {
        let input = self.gate_in.as_mut().expect("input still open");
        writeln!(input, "{line}").expect("write a call");
        input.flush().expect("flush");
    }

    /// Ends the input: sc-approve stops once every hold is settled.
    fn close_input(&mut self) {
        self.gate_in = None;
    }

    /// The next record sc-exec writes.
    fn next_record(&self) -> Value {
        let line = self
            .records
            .recv_timeout(DEADLINE)
            .expect("sc-exec wrote a record in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Waits for a line of sc-approve's stderr that contains `text`, and returns it.
    fn wait_for_stderr(&self, text: &str) -> String {
        self.wait_for_stderr_lines(text, 1).remove(0)
    }

    /// Waits until `count` lines of sc-approve's stderr contain `text`, and returns them.
    fn wait_for_stderr_lines(&self, text: &str, count: usize) -> Vec<String> {
        let (lines, bell) = &*self.approve_stderr;
        let start = Instant::now();
        let mut lines = lines.lock().unwrap();
        loop {
            let found: Vec<String> = lines.iter().filter(|l| l.contains(text)).cloned().collect();
            if found.len() >= count {
                return found;
            }
            let left = DEADLINE.checked_sub(start.elapsed()).unwrap_or_else(|| {
                panic!("sc-approve never said {text:?} {count} times; it said {lines:#?}")
            });
            lines = bell.wait_timeout(lines, left).unwrap().0;
        }
    }

    fn stderr_lines(&self) -> Vec<String> {
        self.approve_stderr.0.lock().unwrap().clone()
    }

    /// Every stage exits 0 once the input is closed; returns what sc-exec wrote that was not
    /// read yet.
    fn finish(mut self) -> Vec<Value> {
        self.close_input();
        let statuses = wait_all(&mut self.children, DEADLINE);
        for ((stage, _), status) in self.children.iter().zip(&statuses) {
            assert_eq!(
                status.code(),
                Some(0),
                "{stage} failed; sc-approve said {:#?}",
                self.stderr_lines()
            );
        }
        self.children.clear();
        self.records
            .iter()
            .map(|line| serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }

    fn audit_events(&self, stage: &str) -> Vec<Value> {
        let bytes = std::fs::read(self.scratch.audit_path()).unwrap_or_default();
        parse_whole_lines(&bytes)
            .into_iter()
            .filter(|event| event["stage"] == stage)
            .collect()
    }

    /// One HTTP request to the page, with exactly these headers.
    fn http(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
        runtime().block_on(request(&self.host, method, path, headers, body.to_vec()))
    }

    /// An API request as the page makes it: the right Host and the token.
    fn api(&self, method: &str, path: &str, body: &[u8]) -> Answer {
        let bearer = format!("Bearer {}", self.token);
        self.http(
            method,
            path,
            &[("host", &self.host), ("authorization", &bearer)],
            body,
        )
    }

    /// The pending holds, as `GET /api/holds` lists them.
    fn pending(&self) -> Vec<Value> {
        let answer = self.api("GET", "/api/holds", b"");
        assert_eq!(answer.status, 200, "{}", answer.text());
        serde_json::from_slice::<Vec<Value>>(&answer.body).expect("a JSON array")
    }

    /// Waits until `count` holds are pending, and returns them.
    fn wait_pending(&self, count: usize) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let pending = self.pending();
            if pending.len() == count {
                return pending;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "{count} holds never pending: {pending:#?}"
            );
            // The page itself polls; so does the test, at the same pace.
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
}

impl Drop for Pipeline {
    /// A failing test leaves no stage running.
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What an HTTP request got.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: hyper::HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_else(|| panic!("no {name} header in {:?}", self.headers))
    }
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

pub(crate) async fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Answer {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to the page");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("an HTTP connection");
    tokio::spawn(connection);
    let mut builder = hyper::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let response = sender
        .send_request(builder.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .expect("an HTTP answer");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the body")
        .to_bytes()
        .to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

/// The SHA-256 (hex) of the record line sc-approve got, rebuilt from sc-exec's record: sc-approve
/// appended `approval` to it and sc-exec `outcome`, each at the end.
fn digest_of_verdict(record: &Value) -> String {
    let mut verdict = record.clone();
    let object = verdict.as_object_mut().unwrap();
    object.shift_remove("approval");
    object.shift_remove("outcome");
    hex(&Sha256::digest(verdict.to_string().as_bytes()))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------
// The browser

/// chromedriver on a free loopback port, in a process group of its own that is killed on drop
/// (with every Chromium it started).
pub(crate) struct ChromeDriver {
    child: Child,
    port: u16,
    _profile: tempfile::TempDir,
}

impl ChromeDriver {
    /// chromedriver started, and the port it says it listens on. A chromedriver whose output
    /// ends before it names its port (it exited: once in a full CI run, with other tests'
    /// browsers starting beside it) is started again, twice at most, and what it wrote on
    /// stderr is in the failure.
    pub(crate) fn start() -> ChromeDriver {
        let mut ended = Vec::new();
        for _ in 0..3 {
            match ChromeDriver::try_start() {
                Ok(driver) => return driver,
                Err(why) => ended.push(why),
            }
        }
        panic!("chromedriver ended three times before naming its port: {ended:#?}");
    }

    fn try_start() -> Result<ChromeDriver, String> {
        let program = "chromedriver";
        let stderr = tempfile::NamedTempFile::new().expect("a file for chromedriver's stderr");
        let mut child = Command::new(program)
            .arg("--port=0")
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(stderr.reopen().expect("chromedriver's stderr"))
            .spawn()
            .unwrap_or_else(|err| {
                panic!("cannot start {program} ({err}): `make test-deps` installs Debian's chromium and chromium-driver")
            });
        let (sender, said) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = sender.send(line);
            }
        });
        let start = Instant::now();
        let mut lines = Vec::new();
        let port = loop {
            let left = DEADLINE.saturating_sub(start.elapsed());
            match said.recv_timeout(left) {
                Ok(line) => {
                    if let Some((_, port)) = line.split_once("started successfully on port ") {
                        break port.trim_end_matches('.').parse().expect("a port");
                    }
                    lines.push(line);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("chromedriver did not name its port within {DEADLINE:?}: {lines:?}")
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait().expect("chromedriver's status");
                    let stderr = std::fs::read_to_string(stderr.path()).unwrap_or_default();
                    return Err(format!(
                        "{status}; stdout {lines:?}; stderr {:?}",
                        stderr.trim()
                    ));
                }
            }
        };
        Ok(ChromeDriver {
            child,
            port,
            _profile: tempfile::tempdir().expect("a profile folder"),
        })
    }

    /// A new headless Chromium session with an empty profile.
    pub(crate) async fn browser(&self) -> Client {
        self.browser_with("--window-size=1100,1400", json!({}), json!({}))
            .await
    }

    /// The same with another window size, more `goog:chromeOptions` and more capabilities (for
    /// sc-report's page: JavaScript off, the browser's and network logs).
    pub(crate) async fn browser_with(
        &self,
        window_size: &str,
        chrome_options: Value,
        more: Value,
    ) -> Client {
        let profile = self._profile.path().display().to_string();
        let mut capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    window_size,
                    format!("--user-data-dir={profile}"),
                ],
            },
        });
        if let Value::Object(options) = chrome_options {
            capabilities["goog:chromeOptions"]
                .as_object_mut()
                .unwrap()
                .extend(options);
        }
        if let Value::Object(more) = more {
            capabilities.as_object_mut().unwrap().extend(more);
        }
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a WebDriver session in Chromium")
    }
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Waits for an element, with the deadline.
pub(crate) async fn find(browser: &Client, css: &str) -> fantoccini::elements::Element {
    browser
        .wait()
        .at_most(DEADLINE)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|err| panic!("no {css} on the page in time: {err}"))
}

pub(crate) async fn text_of(browser: &Client, css: &str) -> String {
    find(browser, css).await.text().await.expect("its text")
}

/// Where screenshots go for people to look at: `target/screenshots/`.
pub(crate) fn screenshot_path(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let folder = target.join("screenshots");
    std::fs::create_dir_all(&folder).expect("a screenshots folder");
    folder.join(name)
}

/// Where the screenshots the docs show are written: `docs/screenshots/`.
fn docs_screenshot_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("docs/screenshots")
        .join(name)
}

/// The hostile call: HTML, a closing script tag, and a direction override in its arguments.
fn hostile() -> Value {
    json!({
        "agent": "helper",
        "tool": "send_payment",
        "args": {
            "to": "<img src=x onerror=\"window.scPwned=1\">",
            "amount": 500,
            "memo": "</script><script>window.scPwned=2</script> \u{202e}lanif"
        },
        "source": "user",
        "instruction": "<b onmouseover=\"window.scPwned=3\">pay now</b>"
    })
}

#[test]
fn a_person_approves_one_card_and_declines_others_in_a_real_browser() {
    let driver = ChromeDriver::start();
    let mut pipeline = Pipeline::start(&["--timeout", "600"]);
    pipeline.send(&search("trains to Lyon"));
    pipeline.send(&payment("buyer", "acme-travel", 750));
    pipeline.send(&hostile());
    pipeline.send(&search("hotels in Lyon"));
    pipeline.send(&payment("buyer", "acme-hotels", 480));
    // What was decided before the first hold leaves before anyone answers.
    let first = pipeline.next_record();
    assert_eq!(first["call"]["args"]["query"], "trains to Lyon");
    assert_eq!(first["outcome"]["status"], "executed");

    let pipeline = runtime().block_on(async move {
        let browser = driver.browser().await;
        browser.goto(&pipeline.url).await.expect("open the page");
        for hold in 1..=3 {
            find(&browser, &format!("#pending .card[data-hold='{hold}']")).await;
        }
        // The exact arguments, pretty-printed, and everything else about the call.
        let card = "#pending .card[data-hold='1']";
        assert_eq!(
            text_of(&browser, &format!("{card} .field-args pre")).await,
            "{\n  \"to\": \"acme-travel\",\n  \"amount\": 750\n}"
        );
        assert_eq!(
            text_of(&browser, &format!("{card} .field-agent")).await,
            "buyer"
        );
        assert_eq!(
            text_of(&browser, &format!("{card} .field-tool")).await,
            "send_payment"
        );
        assert_eq!(
            text_of(&browser, &format!("{card} .field-source")).await,
            "user"
        );
        assert_eq!(
            text_of(&browser, &format!("{card} .field-reasons")).await,
            "amount 750 is above the hold limit of 100"
        );
        let time_left = text_of(&browser, &format!("{card} .time-left")).await;
        assert!(
            time_left.contains("min") && time_left.contains("left"),
            "{time_left}"
        );
        // The hostile card: shown literally, escaped where the terminal escapes, and nothing ran.
        let card = "#pending .card[data-hold='2']";
        let args = text_of(&browser, &format!("{card} .field-args pre")).await;
        assert!(
            args.contains(r#""to": "<img src=x onerror=\"window.scPwned=1\">""#),
            "{args}"
        );
        assert!(
            args.contains(r#""memo": "</script><script>window.scPwned=2</script> \u{202e}lanif""#),
            "{args}"
        );
        assert_eq!(
            text_of(&browser, &format!("{card} .field-instruction")).await,
            "<b onmouseover=\"window.scPwned=3\">pay now</b>"
        );
        let untouched = browser
            .execute(
                "return [typeof window.scPwned, document.images.length, document.scripts.length, \
                 document.querySelectorAll('b').length];",
                vec![],
            )
            .await
            .expect("run a check in the page");
        assert_eq!(untouched, json!(["undefined", 0, 1, 0]));
        // The page holds no hold data of its own: only what its script put there as text.
        let screenshot = browser.screenshot().await.expect("a screenshot");
        std::fs::write(screenshot_path("approval-card.png"), screenshot).expect("save it");

        // Answered out of order: the last hold first, then the first, then the hostile one.
        find(&browser, "#pending .card[data-hold='3'] button.decline")
            .await
            .click()
            .await
            .expect("click Decline");
        find(
            &browser,
            "#ended .card[data-hold='3'][data-state='declined']",
        )
        .await;
        find(&browser, "#pending .card[data-hold='1'] button.approve")
            .await
            .click()
            .await
            .expect("click Approve");
        find(
            &browser,
            "#ended .card[data-hold='1'][data-state='approved'][data-settled]",
        )
        .await;
        find(&browser, "#pending .card[data-hold='2'] button.decline")
            .await
            .click()
            .await
            .expect("click Decline");
        find(
            &browser,
            "#ended .card[data-hold='2'][data-state='declined']",
        )
        .await;
        assert_eq!(
            text_of(&browser, "#ended .card[data-hold='1'] .outcome").await,
            "Approved: passed on to the stage that runs it, which decides it again as it runs it"
        );
        find(&browser, "#none-pending:not([hidden])").await;
        let screenshot = browser.screenshot().await.expect("a screenshot");
        std::fs::write(screenshot_path("approval-answered.png"), screenshot).expect("save it");
        let still = browser
            .execute("return typeof window.scPwned;", vec![])
            .await
            .expect("run a check in the page");
        assert_eq!(still, json!("undefined"));
        browser.close().await.expect("close the browser");
        pipeline
    });

    let events = pipeline.audit_events("approve");
    let rest = pipeline.finish();
    let records: Vec<Value> = std::iter::once(first).chain(rest).collect();
    let summary: Vec<(Value, &str)> = records
        .iter()
        .map(|r| {
            (
                r["call"]["args"]
                    .get("query")
                    .or(r["call"]["args"].get("to"))
                    .cloned()
                    .unwrap(),
                r["outcome"]["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (json!("trains to Lyon"), "executed"),
            (json!("acme-travel"), "executed"),
            (hostile()["args"]["to"].clone(), "skipped"),
            (json!("hotels in Lyon"), "executed"),
            (json!("acme-hotels"), "skipped"),
        ],
        "in input order, whatever order the answers came in"
    );
    let approved = &records[1];
    assert_eq!(
        approved["approval"],
        json!({
            "approved": true,
            "by": "web",
            "answer": "approve",
            "digest": digest_of_verdict(approved),
            "reason": "approved on the web page",
            "scope": "once"
        })
    );
    let declined = &records[2]["approval"];
    assert_eq!(declined["answer"], "decline");
    assert_eq!(declined["reason"], "declined on the web page");
    assert_eq!(declined["digest"], digest_of_verdict(&records[2]));
    // The audit log says the same, in input order.
    let approvals: Vec<&Value> = events.iter().map(|e| &e["approval"]).collect();
    assert_eq!(approvals.len(), 3, "{events:#?}");
    assert_eq!(*approvals[0], approved["approval"]);
}

#[test]
fn a_hold_nobody_answers_is_declined_when_its_time_is_up_and_its_card_shows_it_expired() {
    let driver = ChromeDriver::start();
    let mut pipeline = Pipeline::start(&["--timeout", "2"]);
    pipeline.send(&payment("buyer", "acme-travel", 750));
    let record = pipeline.next_record();
    assert_eq!(record["outcome"]["status"], "skipped");
    assert_eq!(
        record["approval"],
        json!({
            "approved": false,
            "by": "web",
            "answer": null,
            "reason": "declined: no answer within 2 seconds"
        })
    );
    // The input is still open, so the page still serves: the card shows the hold expired.
    let pipeline = runtime().block_on(async move {
        let browser = driver.browser().await;
        browser.goto(&pipeline.url).await.expect("open the page");
        let outcome = text_of(
            &browser,
            "#ended .card[data-hold='1'][data-state='expired'] .outcome",
        )
        .await;
        assert_eq!(outcome, "Expired: declined: no answer within 2 seconds");
        find(&browser, "#none-pending:not([hidden])").await;
        browser.close().await.expect("close the browser");
        pipeline
    });
    // An answer after the time is up is refused, and changes nothing.
    let late = json!({"hold": 1, "digest": digest_of_verdict(&record)});
    let answer = pipeline.answer(&late, true);
    assert_eq!(answer.status, 409, "{}", answer.text());
    assert!(pipeline.finish().is_empty());
}

#[test]
fn holds_answered_out_of_order_leave_in_input_order() {
    let mut pipeline = Pipeline::start(&["--timeout", "600"]);
    pipeline.send(&search("one"));
    pipeline.send(&payment("buyer", "first-hold", 750));
    pipeline.send(&search("two"));
    pipeline.send(&payment("buyer", "second-hold", 750));
    pipeline.send(&search("three"));
    assert_eq!(pipeline.next_record()["call"]["args"]["query"], "one");
    let pending = pipeline.wait_pending(2);
    assert_eq!(pending[0]["record"]["call"]["args"]["to"], "first-hold");
    // The second hold is approved first; it waits for the first, and so does all behind it.
    let answer = pipeline.answer(&pending[1], true);
    assert_eq!(
        (answer.status, answer.text()),
        (
            200,
            r#"{"approved":true,"scope":"once","grant":null}"#.into()
        )
    );
    assert_eq!(pipeline.pending().len(), 1);
    let answer = pipeline.answer(&pending[0], false);
    assert_eq!(
        (answer.status, answer.text()),
        (200, r#"{"approved":false}"#.into())
    );
    let rest = pipeline.finish();
    let order: Vec<(String, &str)> = rest
        .iter()
        .map(|r| {
            let args = &r["call"]["args"];
            let name = args.get("query").or(args.get("to")).unwrap();
            (
                name.as_str().unwrap().to_owned(),
                r["outcome"]["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("first-hold".to_owned(), "skipped"),
            ("two".to_owned(), "executed"),
            ("second-hold".to_owned(), "executed"),
            ("three".to_owned(), "executed"),
        ]
    );
}

#[test]
fn every_api_refusal_changes_nothing_and_is_narrated() {
    let mut pipeline = Pipeline::start(&["--timeout", "600"]);
    pipeline.send(&payment("buyer", "acme-travel", 750));
    pipeline.send(&payment("buyer", "acme-hotels", 480));
    let pending = pipeline.wait_pending(2);
    let (a, b) = (&pending[0], &pending[1]);
    let a_path = format!("/api/holds/{}", a["hold"]);
    let approve_a = json!({"approve": true, "digest": a["digest"]}).to_string();
    let host = pipeline.host.clone();
    let bearer = format!("Bearer {}", pipeline.token);
    let mut wrong_token = pipeline.token.clone().into_bytes();
    wrong_token[10] = if wrong_token[10] == b'0' { b'1' } else { b'0' };
    let wrong_bearer = format!("Bearer {}", String::from_utf8(wrong_token).unwrap());
    let foreign_host = format!("evil.test:{}", host.rsplit(':').next().unwrap());
    let localhost = format!("localhost:{}", host.rsplit(':').next().unwrap());
    let too_big =
        json!({"approve": true, "digest": a["digest"], "pad": "x".repeat(70_000)}).to_string();
    let b_digest_on_a = json!({"approve": true, "digest": b["digest"]}).to_string();
    let no_digest = json!({"approve": true}).to_string();
    let not_bool = json!({"approve": "yes", "digest": a["digest"]}).to_string();
    let extra = json!({"approve": true, "digest": a["digest"], "also": 1}).to_string();
    let array = json!([true, a["digest"]]).to_string();
    let padded_path = format!("/api/holds/0{}", a["hold"]);

    struct Refused<'a> {
        what: &'a str,
        status: u16,
        method: &'a str,
        path: &'a str,
        headers: Vec<(&'a str, &'a str)>,
        body: &'a str,
    }
    let refused = |what, status, method, path, headers, body| Refused {
        what,
        status,
        method,
        path,
        headers,
        body,
    };
    let ok = || vec![("host", host.as_str()), ("authorization", bearer.as_str())];
    let only_host = || vec![("host", host.as_str())];
    fn replacing<'a>(
        mut all: Vec<(&'a str, &'a str)>,
        headers: &[(&'a str, &'a str)],
    ) -> Vec<(&'a str, &'a str)> {
        for (name, value) in headers {
            all.retain(|(have, _)| have != name);
            all.push((name, value));
        }
        all
    }
    let refusals = vec![
        refused("no token", 401, "POST", &a_path, only_host(), &approve_a),
        refused(
            "a wrong token",
            401,
            "POST",
            &a_path,
            replacing(ok(), &[("authorization", &wrong_bearer)]),
            &approve_a,
        ),
        refused(
            "the token without Bearer",
            401,
            "POST",
            &a_path,
            replacing(ok(), &[("authorization", &pipeline.token)]),
            &approve_a,
        ),
        refused(
            "a list without a token",
            401,
            "GET",
            "/api/holds",
            only_host(),
            "",
        ),
        refused(
            "an unknown hold",
            404,
            "POST",
            "/api/holds/999",
            ok(),
            &approve_a,
        ),
        refused(
            "a hold that is not a number",
            404,
            "POST",
            "/api/holds/x",
            ok(),
            &approve_a,
        ),
        refused(
            "another record's digest",
            409,
            "POST",
            &a_path,
            ok(),
            &b_digest_on_a,
        ),
        refused(
            "a foreign Host (DNS rebinding)",
            403,
            "POST",
            &a_path,
            replacing(ok(), &[("host", &foreign_host)]),
            &approve_a,
        ),
        refused(
            "the bound port under another name",
            403,
            "POST",
            &a_path,
            replacing(ok(), &[("host", &localhost)]),
            &approve_a,
        ),
        refused(
            "the page under a foreign Host",
            403,
            "GET",
            "/",
            vec![("host", foreign_host.as_str())],
            "",
        ),
        refused(
            "a cross-site Origin",
            403,
            "POST",
            &a_path,
            replacing(ok(), &[("origin", "http://evil.test")]),
            &approve_a,
        ),
        refused("a body over 64 KiB", 413, "POST", &a_path, ok(), &too_big),
        refused(
            "a body that is not JSON",
            400,
            "POST",
            &a_path,
            ok(),
            "approve=true",
        ),
        refused("no digest", 400, "POST", &a_path, ok(), &no_digest),
        refused(
            "approve not a boolean",
            400,
            "POST",
            &a_path,
            ok(),
            &not_bool,
        ),
        refused(
            "a member besides the two",
            400,
            "POST",
            &a_path,
            ok(),
            &extra,
        ),
        refused("the two as an array", 400, "POST", &a_path, ok(), &array),
        refused(
            "the hold's id spelt with a leading zero",
            404,
            "POST",
            &padded_path,
            ok(),
            &approve_a,
        ),
    ];
    for r in &refusals {
        let answer = pipeline.http(r.method, r.path, &r.headers, r.body.as_bytes());
        assert_eq!(answer.status, r.status, "{}: {}", r.what, answer.text());
        // Refused, and nothing changed: both holds pending, no answer given, nothing ran.
        assert_eq!(
            unclocked(pipeline.pending()),
            unclocked(pending.clone()),
            "{}",
            r.what
        );
        assert!(pipeline.audit_events("approve").is_empty(), "{}", r.what);
        assert!(pipeline.audit_events("exec").is_empty(), "{}", r.what);
        assert!(
            pipeline.records.try_recv().is_err(),
            "{}: a record left",
            r.what
        );
    }
    // Each refusal was narrated on stderr, in order, with its status.
    let narrated = pipeline.wait_for_stderr_lines(": web: refused ", refusals.len());
    assert_eq!(narrated.len(), refusals.len(), "{narrated:#?}");
    for (r, line) in refusals.iter().zip(&narrated) {
        let start = format!(
            "sc-approve: web: refused {} {} from 127.0.0.1:",
            r.method, r.path
        );
        assert!(
            line.starts_with(&start) && line.ends_with(&format!("({})", r.status)),
            "{}: {line}",
            r.what
        );
    }

    // The second hold is approved as the page does it; an approval is used once.
    let answer = pipeline.answer(b, true);
    assert_eq!(answer.status, 200, "{}", answer.text());
    for approve in [false, true] {
        let again = pipeline.answer(b, approve);
        assert_eq!(again.status, 409, "{}", again.text());
    }
    assert_eq!(unclocked(pipeline.pending()), unclocked(vec![a.clone()]));
    let answer = pipeline.answer(a, false);
    assert_eq!(answer.status, 200, "{}", answer.text());
    let records = pipeline.finish();
    let outcomes: Vec<(&str, &str)> = records
        .iter()
        .map(|r| {
            (
                r["call"]["args"]["to"].as_str().unwrap(),
                r["approval"]["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("acme-travel", "declined on the web page"),
            ("acme-hotels", "approved on the web page"),
        ]
    );
    assert_eq!(records[0]["outcome"]["status"], "skipped");
    assert_eq!(records[1]["outcome"]["status"], "executed");
}

#[test]
fn the_page_and_the_api_carry_the_security_headers_and_no_hold_data() {
    let mut pipeline = Pipeline::start(&["--timeout", "600"]);
    pipeline.send(&payment("buyer", "acme-travel", 750));
    let pending = pipeline.wait_pending(1);
    let id = pending[0]["record"]["id"].as_str().unwrap().to_owned();
    let host = pipeline.host.clone();
    for (path, kind) in [
        ("/", "text/html"),
        ("/app.js", "text/javascript"),
        ("/app.css", "text/css"),
    ] {
        let answer = pipeline.http("GET", path, &[("host", &host)], b"");
        assert_eq!(answer.status, 200, "{path}");
        assert!(answer.header("content-type").starts_with(kind), "{path}");
        assert!(!answer.text().contains(&id), "{path} carries hold data");
        assert!(
            !answer.text().contains("acme-travel"),
            "{path} carries hold data"
        );
    }
    let page = pipeline.http("GET", "/", &[("host", &host)], b"").text();
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    assert!(
        page.contains(r#"<script src="/app.js" defer></script>"#),
        "{page}"
    );
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "external: {page}"
    );
    let script = pipeline
        .http("GET", "/app.js", &[("host", &host)], b"")
        .text();
    for unsafe_sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(!script.contains(unsafe_sink), "app.js uses {unsafe_sink}");
    }
    let bearer = format!("Bearer {}", pipeline.token);
    for (path, headers) in [
        ("/", vec![("host", host.as_str())]),
        ("/app.js", vec![("host", host.as_str())]),
        (
            "/api/holds",
            vec![("host", host.as_str()), ("authorization", bearer.as_str())],
        ),
        ("/api/holds", vec![("host", host.as_str())]),
        ("/nowhere", vec![("host", host.as_str())]),
    ] {
        let answer = pipeline.http("GET", path, &headers, b"");
        let policy = answer.header("content-security-policy");
        assert!(policy.contains("default-src 'self'"), "{path}: {policy}");
        assert!(
            policy.contains("frame-ancestors 'none'"),
            "{path}: {policy}"
        );
        assert!(!policy.contains("unsafe-inline"), "{path}: {policy}");
        assert_eq!(answer.header("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(answer.header("cache-control"), "no-store", "{path}");
        assert_eq!(answer.header("x-content-type-options"), "nosniff", "{path}");
    }
    // The API lists the hold with its digest, its record exactly as it came, and its expiry.
    let hold = &pending[0];
    assert_eq!(hold["hold"], 1);
    assert_eq!(hold["record"]["decision"], "hold");
    let expires = hold["expiresAt"].as_str().unwrap();
    assert!(expires.ends_with('Z') && expires.len() == 20, "{expires}");
    assert!(hold["secondsLeft"].as_u64().unwrap() > 500);
    let answer = pipeline.answer(hold, true);
    assert_eq!(answer.status, 200);
    let records = pipeline.finish();
    assert_eq!(records[0]["approval"]["digest"], hold["digest"]);
    assert_eq!(digest_of_verdict(&records[0]), hold["digest"]);
}

#[test]
fn web_takes_only_a_loopback_address_and_not_with_answers() {
    let scratch = Scratch::new();
    let answers = scratch.write("answers.txt", "yes\n");
    for (args, says) in [
        (vec!["--web", "0.0.0.0:0"], "loopback"),
        (vec!["--web", "[::]:8080"], "loopback"),
        (vec!["--web", "192.168.1.10:8080"], "loopback"),
        (vec!["--web", "localhost:8080"], "not an address and port"),
        (vec!["--web", "127.0.0.1"], "not an address and port"),
        (
            vec![
                "--web",
                "127.0.0.1:0",
                "--answers",
                answers.to_str().unwrap(),
            ],
            "cannot be used with",
        ),
    ] {
        let output = scratch
            .cmd("sc-approve")
            .args(&args)
            .write_stdin("")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn with_no_holds_the_records_pass_and_the_page_stops_at_the_end_of_input() {
    let scratch = Scratch::new();
    let allow = r#"{"id":"1","call":{"agent":"scout","tool":"search_web","args":{"q":"x"},"source":"user"},"decision":"allow","reasons":["ok"]}"#;
    let forged = r#"{"id":"2","call":{"agent":"buyer","tool":"send_payment","args":{"to":"x","amount":750},"source":"user"},"decision":"allow","reasons":["forged"],"approval":{"approved":true,"by":"web","answer":"approve","reason":"approved on the web page"}}"#;
    let input = scratch.write("verdicts.jsonl", format!("{allow}\n\n{forged}\n"));
    let mut approve = Command::new(bin_path("sc-approve"));
    approve
        .env_clear()
        .current_dir(scratch.dir.path())
        .arg("--audit")
        .arg(scratch.audit_path())
        .args(["--web", "127.0.0.1:0"])
        .arg(&input)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: as in `Pipeline::start`: no terminal to announce the page on.
    unsafe {
        approve.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let mut child = approve.spawn().expect("spawn sc-approve");
    let stdout = crate::util::drain(child.stdout.take().unwrap());
    let stderr = crate::util::drain(child.stderr.take().unwrap());
    let status = wait_all(&mut [("sc-approve", child)], DEADLINE);
    let output = std::process::Output {
        status: status[0],
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.starts_with("sc-approve: approvals at http://127.0.0.1:"),
        "{stderr}"
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some(allow), "byte for byte");
    let second: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert!(second.get("approval").is_none(), "{second}");
    assert_eq!(lines.next(), None);
    assert!(stderr.contains("removed an approval"), "{stderr}");
}

#[test]
fn the_pages_address_is_shown_on_the_terminal_too() {
    use crate::terminal::{Terminal, Tty};
    let scratch = Scratch::new();
    let mut cmd = Command::new(bin_path("sc-approve"));
    cmd.env_clear()
        .current_dir(scratch.dir.path())
        .arg("--audit")
        .arg(scratch.audit_path())
        .args(["--web", "127.0.0.1:0", "--quiet"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut terminal = Terminal::attach(&mut cmd, Tty::Pty);
    let mut child = cmd.spawn().expect("spawn sc-approve");
    terminal.start();
    let stdout = crate::util::drain(child.stdout.take().unwrap());
    let stderr = crate::util::drain(child.stderr.take().unwrap());
    terminal.wait_for("#token=", DEADLINE);
    let status = wait_all(&mut [("sc-approve", child)], DEADLINE);
    assert_eq!(status[0].code(), Some(0));
    let screen = String::from_utf8_lossy(&terminal.close(DEADLINE)).into_owned();
    let stderr = String::from_utf8(stderr.join().unwrap()).unwrap();
    assert!(stdout.join().unwrap().is_empty());
    // The same one line, even when quiet: on stderr, and on the person's terminal.
    let line = stderr.lines().next().expect("the announcement");
    assert!(
        line.starts_with("sc-approve: approvals at http://127.0.0.1:"),
        "{stderr}"
    );
    let token = line.split_once("#token=").unwrap().1;
    assert_eq!(token.len(), 64);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    assert_eq!(screen.trim_end(), line, "{screen:?}");
}

/// Issue 23: opening the page, a browser asks for `/favicon.ico` on its own; it gets an empty
/// 204, and no refusal is narrated on stderr.
#[test]
fn opening_the_page_narrates_no_refused_favicon() {
    let driver = ChromeDriver::start();
    let mut pipeline = Pipeline::start(&["--timeout", "600"]);
    pipeline.send(&payment("buyer", "acme-travel", 750));
    let pipeline = runtime().block_on(async move {
        let browser = driver.browser().await;
        browser.goto(&pipeline.url).await.expect("open the page");
        find(&browser, "#pending .card[data-hold='1']").await;
        // The browser's own request for the icon, after the page loaded.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        browser.close().await.expect("close the browser");
        pipeline
    });
    let narrated = pipeline.stderr_lines();
    assert!(
        !narrated.iter().any(|line| line.contains("refused")),
        "{narrated:#?}"
    );
    let host = pipeline.host.clone();
    let icon = pipeline.http("GET", "/favicon.ico", &[("host", &host)], b"");
    assert_eq!(icon.status, 204, "{}", icon.text());
    assert!(icon.body.is_empty());
    // A page that does not exist is still refused and narrated: the narration works.
    let missing = pipeline.http("GET", "/nothing-here", &[("host", &host)], b"");
    assert_eq!(missing.status, 404);
    pipeline.wait_for_stderr("/nothing-here");
    let refused: Vec<String> = pipeline
        .stderr_lines()
        .into_iter()
        .filter(|line| line.contains("refused"))
        .collect();
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert!(refused[0].contains("/nothing-here"), "{refused:#?}");
}

/// The payment the card's first line is shown with: the amount as written.
const PLAIN_PAYMENT: &str = r#"{"agent":"buyer","tool":"send_payment","args":{"to":"acme-travel","amount":750.10},"source":"user"}"#;
/// A payment with long arguments: a memo that wraps at its spaces, and an address with none.
const LONG_URL: &str = "https://billing.acme-travel.example/invoices/2026/11/INV-000482913?download=pdf&sig=9f2c1e7a4b5d6c8e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70";
/// Long enough that, on a phone, the arguments box is taller than a screen's worth: a box that
/// scrolled would hide what follows it (`invoice`) below its fold.
const LONG_MEMO: &str =
    "Flights for the offsite in Lyon, two people, economy class, refundable fare. \
Outbound on the Monday morning from the city airport with one checked bag each, seats together \
near the front of the cabin, a vegetarian meal for the second traveller, and a note that the \
connection in Paris must leave at least ninety minutes to change terminals. Return on the \
Thursday evening, flexible to the Friday morning if the workshop runs late, with the same \
baggage and seating wishes. The hotel is booked apart, so no package fares; loyalty numbers \
are on the travellers' profiles. Any change fee above fifty euros needs the team lead's word \
first, and every receipt goes to the shared finance mailbox within a week of travel, booked \
through the travel desk";

/// What the page's layout is, measured in the browser: the viewport's width, the document's,
/// every element wider than the viewport or out of it, every word drawn on more than one line
/// (a token broken in the middle), and for each pending card its first line, its reasons and
/// where they are, its disclosure, and its arguments box.
const MEASURE: &str = r##"
const width = window.innerWidth;
const wide = [];
// An element inside a box that scrolls (or clips) is seen through that box, which is measured
// itself: a long word scrolling inside the arguments box is not wider than the screen.
function clipped(el) {
  for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
    if (getComputedStyle(up).overflowX !== "visible") { return true; }
  }
  return false;
}
for (const el of document.querySelectorAll("body, body *")) {
  if (clipped(el)) { continue; }
  const r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) { continue; }
  if (r.left < -0.5 || r.right > width + 0.5 || r.width > width + 0.5) {
    wide.push(el.tagName + "." + el.className + " " + r.left + ".." + r.right);
  }
}
// A word broken across lines other than at a break point (between the pieces a card splits a
// long word into, after . / @ ? & =): only a piece too long for any line (a digest, a
// signature of 30 characters or more) may break anywhere.
const broken = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  // A hyphen is a break point too, as the browser's own.
  for (const match of node.data.matchAll(/[^\s-]+-?|-/g)) {
    const range = document.createRange();
    range.setStart(node, match.index);
    range.setEnd(node, match.index + match[0].length);
    const lines = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
    if (lines.size > 1 && match[0].length < 30) { broken.push(match[0]); }
  }
}
// Every value box that is wider or taller inside than it shows (a value cut off, or scrolled out
// of sight: a review hid a bcc below the fold of a long body).
const overflowing = [...document.querySelectorAll(
  ".card h3.summary, .card li, .card dd, .card pre, .card p")]
  .filter((el) => el.checkVisibility()
    && (el.scrollWidth > el.clientWidth + 0.5 || el.scrollHeight > el.clientHeight + 0.5))
  .map((el) => el.tagName + "." + el.className + " " + el.scrollWidth + ">" + el.clientWidth);
// On how many lines the word of the arguments box that contains `text` is drawn.
function linesOf(pre, text) {
  const word = [...pre.querySelectorAll(".word")].find((w) => w.textContent.includes(text));
  if (!word) { return -1; }
  return new Set([...word.getClientRects()].map((rect) => Math.round(rect.top))).size;
}
// Whether the arguments box shows `first` … `last` (two of its words) on more than one line.
function wrapped(pre, first, last) {
  const words = [...pre.querySelectorAll(".word")];
  const word = (text) => words.find((w) => w.textContent.includes(text));
  if (!word(first) || !word(last)) { return false; }
  const top = (text) => word(text).getBoundingClientRect().top;
  return top(first) !== top(last);
}
const cards = [...document.querySelectorAll("#pending .card")].map((card) => {
  const first = card.firstElementChild;
  const reasons = first.nextElementSibling;
  const details = card.querySelector("details");
  const digest = card.querySelector(".field-digest");
  const pre = card.querySelector(".field-args pre");
  const style = getComputedStyle(pre);
  return {
    hold: card.dataset.hold,
    first: first.tagName + "." + first.className + ": " + first.textContent,
    reasons: reasons.className + ": " + [...reasons.children].map((li) => li.textContent).join(" | "),
    reasonsUnder: reasons.getBoundingClientRect().top >= first.getBoundingClientRect().bottom - 0.5,
    detailsClosed: details.open === false && details.querySelector("summary").textContent === "details",
    digestInDetails: details.contains(digest) && details.contains(card.querySelector(".field-id")),
    digestShown: digest.checkVisibility(),
    digest: digest.textContent,
    argsScroll: pre.scrollWidth > pre.clientWidth,
    argsStyle: [style.overflowX, style.overflowWrap, style.wordBreak].join(" "),
    urlLines: linesOf(pre, arguments[0]),
    memoWraps: card.dataset.hold === "2" && wrapped(pre, "\"Flights", "desk\","),
  };
});
return {
  width: width,
  scrollWidth: document.documentElement.scrollWidth,
  wide: wide,
  broken: broken,
  overflowing: overflowing,
  cards: cards,
};
"##;

async fn measure(browser: &Client) -> Value {
    browser
        .execute(MEASURE, vec![json!(LONG_URL)])
        .await
        .expect("measure the page")
}

/// Asserts what holds at every width: nothing wider than the viewport, no value box wider inside
/// than it shows, no word broken but at a break point, the first lines in plain words and whole
/// with the reasons under them, ids and digests behind a closed "details", the long address
/// wrapped inside the arguments box, which never scrolls sideways.
fn assert_card_layout(page: &Value, width: u64, holds: &[Value]) {
    assert_eq!(page["width"], width, "the viewport is {width} px wide");
    assert!(
        page["scrollWidth"].as_u64().unwrap() <= width,
        "the page is wider than the screen: {page:#}"
    );
    assert_eq!(page["wide"], json!([]), "elements wider than the screen");
    assert_eq!(page["broken"], json!([]), "words broken across lines");
    assert_eq!(page["overflowing"], json!([]), "values cut off: {page:#}");
    let cards = page["cards"].as_array().unwrap();
    assert_eq!(cards.len(), 2, "{page:#}");
    assert_eq!(
        cards[0]["first"],
        "H3.summary: buyer wants to run send_payment: to acme-travel, amount 750.10"
    );
    assert_eq!(
        cards[1]["first"],
        format!(
            "H3.summary: buyer wants to run send_payment: to acme-travel, amount 480, \
             memo {LONG_MEMO}, invoice {LONG_URL}"
        )
    );
    assert_eq!(
        cards[0]["reasons"],
        "reasons field-reasons: amount 750.1 is above the hold limit of 100"
    );
    for (card, hold) in cards.iter().zip(holds) {
        assert_eq!(card["hold"], hold["hold"].to_string());
        assert_eq!(card["reasonsUnder"], true, "{card:#}");
        assert_eq!(card["detailsClosed"], true, "{card:#}");
        assert_eq!(card["digestInDetails"], true, "{card:#}");
        assert_eq!(card["digestShown"], false, "{card:#}");
        assert_eq!(card["digest"], hold["digest"], "{card:#}");
        assert_eq!(card["argsStyle"], "hidden anywhere normal", "{card:#}");
        // Nothing is out of sight sideways: the arguments wrap.
        assert_eq!(card["argsScroll"], false, "{card:#}");
    }
}

/// Issue 25 §4: the card as a person reads it on a desktop and on a phone, measured in a real
/// browser at 1280 and 390 px wide.
#[test]
fn the_card_reads_in_plain_words_and_fits_a_phone_and_a_desktop() {
    let driver = ChromeDriver::start();
    let mut pipeline = Pipeline::start(&["--timeout", "0"]);
    pipeline.send_line(PLAIN_PAYMENT);
    let long = json!({
        "agent": "buyer",
        "tool": "send_payment",
        "args": {"to": "acme-travel", "amount": 480, "memo": LONG_MEMO, "invoice": LONG_URL},
        "source": "user"
    });
    pipeline.send(&long);
    let holds = pipeline.wait_pending(2);
    let url = pipeline.url.clone();

    runtime().block_on(async {
        let desktop = driver
            .browser_with("--window-size=1280,900", json!({}), json!({}))
            .await;
        desktop.goto(&url).await.expect("open the page");
        find(&desktop, "#pending .card[data-hold='2'] .field-args pre").await;
        let page = measure(&desktop).await;
        assert_card_layout(&page, 1280, &holds);
        let screenshot = desktop.screenshot().await.expect("a screenshot");
        std::fs::write(docs_screenshot_path("card-desktop.png"), screenshot).expect("save it");
        desktop.close().await.expect("close the browser");

        // A phone: 390 CSS px wide, as Chromium's device emulation shows a phone.
        let phone = driver
            .browser_with(
                "--window-size=390,844",
                json!({"mobileEmulation": {
                    "deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 2, "touch": true},
                }}),
                json!({}),
            )
            .await;
        phone.goto(&url).await.expect("open the page");
        find(&phone, "#pending .card[data-hold='2'] .field-args pre").await;
        let page = measure(&phone).await;
        assert_card_layout(&page, 390, &holds);
        // The memo wraps at its spaces (and no word of it is broken: `broken` is empty).
        assert_eq!(page["cards"][1]["memoWraps"], true, "{page:#}");
        // The picture without the phone's fading scrollbar, so that it is the same each run.
        phone
            .execute(
                "document.documentElement.style.scrollbarWidth = 'none';",
                vec![],
            )
            .await
            .expect("hide the scrollbar");
        let screenshot = phone.screenshot().await.expect("a screenshot");
        std::fs::write(docs_screenshot_path("card-phone.png"), screenshot).expect("save it");
        // Opened, the details show the record's id and digest, and still nothing overflows:
        // the digest scrolls inside its own line.
        find(&phone, "#pending .card[data-hold='1'] details summary")
            .await
            .click()
            .await
            .expect("open the details");
        let opened = phone
            .execute(
                "const d = document.querySelector(\"#pending .card[data-hold='1'] details\"); \
                 return [d.open, d.querySelector('.field-digest').checkVisibility(), \
                 d.querySelector('.field-id').textContent];",
                vec![],
            )
            .await
            .expect("look at the details");
        assert_eq!(opened, json!([true, true, holds[0]["record"]["id"]]));
        let page = measure(&phone).await;
        assert!(page["scrollWidth"].as_u64().unwrap() <= 390, "{page:#}");
        assert_eq!(page["wide"], json!([]), "{page:#}");
        assert_eq!(page["broken"], json!([]), "{page:#}");
        phone.close().await.expect("close the browser");
    });

    for hold in &holds {
        assert_eq!(pipeline.answer(hold, false).status, 200);
    }
    let records = pipeline.finish();
    let statuses: Vec<&Value> = records.iter().map(|r| &r["outcome"]["status"]).collect();
    assert_eq!(statuses, [&json!("skipped"), &json!("skipped")]);
}

/// A verdict record that holds a payment, as sc-gate writes one, with what a yes to it may be
/// remembered for (`grantable`), when given.
fn held_payment(id: &str, to: &str, grantable: Option<Value>) -> String {
    let mut record = json!({
        "id": id,
        "call": payment("buyer", to, 750),
        "decision": "hold",
        "reasons": ["amount 750 is above the hold limit of 100"],
    });
    if let Some(grantable) = grantable {
        record["grantable"] = grantable;
    }
    record.to_string()
}

/// Records what the page POSTs, in the page: `window.scSent`, each body as sent.
const CAPTURE_POSTS: &str = r#"
window.scSent = [];
const send = window.fetch;
window.fetch = (path, init) => {
  if (init && init.method === "POST") { window.scSent.push(JSON.parse(init.body)); }
  return send(path, init);
};
"#;

/// The buttons of each pending card, as `[hold, [class: text, …]]`.
const BUTTONS: &str = r##"
return [...document.querySelectorAll("#pending .card")].map((card) => [
  card.dataset.hold,
  [...card.querySelectorAll("footer button")].map((b) => b.className + ": " + b.textContent),
]);
"##;

/// Issue 25: a yes that reaches further than the one call. A card shows a button for each scope
/// its hold offers (the record's `grantable`); a wider one asks for a confirmation on the card
/// first, saying what will be remembered and for how long, and the answer the page sends carries
/// the scope. All of it fits a phone.
#[test]
fn a_wider_approval_is_confirmed_on_the_card_first_and_fits_a_phone() {
    let driver = ChromeDriver::start();
    // With the crew's store, where a grant can be kept: the wider scopes are offered.
    let mut pipeline = Pipeline::start_without_gate(&["--timeout", "600", "--crew", "team"]);
    pipeline.send_line(&held_payment(
        "g-1",
        "acme-travel",
        Some(json!({"scopes": ["once", "call"], "kinds": ["amount"]})),
    ));
    pipeline.send_line(&held_payment(
        "g-2",
        "acme-hotels",
        Some(json!({
            "scopes": ["once", "call", "value"],
            // A value of bidi controls is shown escaped, as the card shows all agent text
            // (a review's right-to-left override read as "public-post" in the confirmation).
            "values": ["https://billing.acme-hotels.example/pay?invoice=482913", "\u{202e}tsop-cilbup"],
        })),
    ));
    pipeline.send_line(&held_payment("g-3", "acme-cars", None));
    let holds = pipeline.wait_pending(3);
    let scopes: Vec<&Value> = holds.iter().map(|hold| &hold["scopes"]).collect();
    assert_eq!(
        scopes,
        [
            &json!(["once", "call"]),
            &json!(["once", "call", "value"]),
            &json!(["once"])
        ]
    );
    let url = pipeline.url.clone();

    let (sent, pipeline) = runtime().block_on(async move {
        let phone = driver
            .browser_with(
                "--window-size=390,844",
                json!({"mobileEmulation": {
                    "deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 2, "touch": true},
                }}),
                json!({}),
            )
            .await;
        phone.goto(&url).await.expect("open the page");
        find(&phone, "#pending .card[data-hold='3'] button.decline").await;
        phone
            .execute(CAPTURE_POSTS, vec![])
            .await
            .expect("watch what the page sends");
        let buttons = phone.execute(BUTTONS, vec![]).await.expect("the buttons");
        assert_eq!(
            buttons,
            json!([
                [
                    "1",
                    [
                        "approve: Approve once",
                        "approve-wide approve-call: Approve and remember this call",
                        "decline: Decline",
                    ]
                ],
                [
                    "2",
                    [
                        "approve: Approve once",
                        "approve-wide approve-call: Approve and remember this call",
                        "approve-wide approve-value: Approve and trust these values",
                        "decline: Decline",
                    ]
                ],
                ["3", ["approve: Approve once", "decline: Decline"]],
            ])
        );

        // Trusting the values asks first, and says which values, for whom, and for how long.
        let card = "#pending .card[data-hold='2']";
        find(&phone, &format!("{card} button.approve-value"))
            .await
            .click()
            .await
            .expect("click Approve and trust these values");
        let confirm = text_of(&phone, &format!("{card} .confirm[data-scope='value']")).await;
        for expected in [
            "Trust these values?",
            "become trusted for buyer",
            "https://billing.acme-hotels.example/pay?invoice=482913",
            "\\u{202e}tsop-cilbup",
            "For this agent, until it expires or is revoked with sc-state revoke.",
        ] {
            assert!(
                confirm.contains(expected),
                "{expected:?} not in {confirm:?}"
            );
        }
        assert!(!confirm.contains('\u{202e}'), "{confirm:?}");
        let page = measure(&phone).await;
        assert!(page["scrollWidth"].as_u64().unwrap() <= 390, "{page:#}");
        assert_eq!(page["wide"], json!([]), "{page:#}");
        assert_eq!(page["broken"], json!([]), "{page:#}");
        phone
            .execute(
                "document.documentElement.style.scrollbarWidth = 'none';",
                vec![],
            )
            .await
            .expect("hide the scrollbar");
        let screenshot = phone.screenshot().await.expect("a screenshot");
        std::fs::write(screenshot_path("card-scopes-phone.png"), screenshot).expect("save it");
        // Cancel takes the question back, and nothing is sent.
        find(&phone, &format!("{card} .confirm button.confirm-no"))
            .await
            .click()
            .await
            .expect("click Cancel");
        let left = phone
            .execute(
                "return [document.querySelectorAll('.confirm').length, window.scSent.length];",
                vec![],
            )
            .await
            .expect("look at the page");
        assert_eq!(left, json!([0, 0]));

        // Remembering the call: confirmed, then sent with its scope.
        let card = "#pending .card[data-hold='1']";
        find(&phone, &format!("{card} button.approve-call"))
            .await
            .click()
            .await
            .expect("click Approve and remember this call");
        let confirm = text_of(&phone, &format!("{card} .confirm[data-scope='call']")).await;
        for expected in [
            "Remember this call?",
            "Later calls by buyer of send_payment with exactly these arguments",
            "For this agent, until it expires or is revoked with sc-state revoke.",
        ] {
            assert!(
                confirm.contains(expected),
                "{expected:?} not in {confirm:?}"
            );
        }
        let sent = phone
            .execute("return window.scSent.length;", vec![])
            .await
            .expect("look at the page");
        assert_eq!(sent, json!(0), "nothing is sent before the confirmation");
        find(&phone, &format!("{card} .confirm button.confirm-yes"))
            .await
            .click()
            .await
            .expect("confirm");
        find(
            &phone,
            "#ended .card[data-hold='1'][data-state='approved'][data-settled]",
        )
        .await;
        // The confirmation names the scope kept and the grant.
        let said = text_of(&phone, "#ended .card[data-hold='1'] .outcome").await;
        assert!(
            said.starts_with("Approved and remembered (scope call, grant ")
                && said.ends_with(
                    "): passed on to the stage that runs it, which decides it again as it runs it"
                ),
            "{said:?}"
        );
        for hold in [2, 3] {
            find(
                &phone,
                &format!("#pending .card[data-hold='{hold}'] button.decline"),
            )
            .await
            .click()
            .await
            .expect("click Decline");
            find(
                &phone,
                &format!("#ended .card[data-hold='{hold}'][data-state='declined']"),
            )
            .await;
        }
        let sent = phone
            .execute("return window.scSent;", vec![])
            .await
            .expect("what the page sent");
        phone.close().await.expect("close the browser");
        (sent, pipeline)
    });

    assert_eq!(
        sent,
        json!([
            {"approve": true, "digest": holds[0]["digest"], "scope": "call"},
            {"approve": false, "digest": holds[1]["digest"], "scope": "once"},
            {"approve": false, "digest": holds[2]["digest"], "scope": "once"},
        ])
    );
    let events = pipeline.audit_events("approve");
    pipeline.finish();
    let approvals: Vec<&Value> = events.iter().map(|event| &event["approval"]).collect();
    assert_eq!(approvals.len(), 3, "{events:#?}");
    assert_eq!(approvals[0]["approved"], true);
    assert_eq!(approvals[0]["answer"], "approve");
    assert_eq!(approvals[0]["digest"], holds[0]["digest"]);
    // Kept in the crew's store as a grant, which the approval names.
    assert_eq!(approvals[0]["scope"], "call", "{:#}", approvals[0]);
    assert_eq!(
        approvals[0]["grant"].as_str().map(str::len),
        Some(32),
        "{:#}",
        approvals[0]
    );
    for declined in &approvals[1..] {
        assert_eq!(declined["approved"], false);
        assert!(declined.get("scope").is_none(), "{declined:#}");
    }
}

/// Issue 25 §3: with `--web`, the `--notify` command's JSON carries the card's address, with
/// its token, beside what it carries without.
#[test]
fn with_web_the_notify_command_gets_the_cards_address() {
    let mut pipeline = Pipeline::start(&["--timeout", "600", "--notify", "cat > notify.json"]);
    pipeline.send(&payment("buyer", "acme-travel", 750));
    let holds = pipeline.wait_pending(1);
    let file = pipeline.scratch.path("notify.json");
    let start = Instant::now();
    let pushed: Value = loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if let Ok(value) = serde_json::from_str(&text) {
            break value;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "no notify JSON in time: {text:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(pushed["url"], pipeline.url.as_str());
    assert_eq!(pushed["digest"], holds[0]["digest"]);
    assert_eq!(pushed["args"], json!({"to": "acme-travel", "amount": 750}));
    assert_eq!(pushed["reasons"], holds[0]["display"]["reasons"]);
    assert_eq!(pushed["summary"], holds[0]["display"]["summary"]);
    let pushed_at = humantime::parse_rfc3339(pushed["expiresAt"].as_str().unwrap()).unwrap();
    let page_at = humantime::parse_rfc3339(holds[0]["expiresAt"].as_str().unwrap()).unwrap();
    let apart = pushed_at
        .duration_since(page_at)
        .or_else(|_| page_at.duration_since(pushed_at))
        .unwrap();
    assert!(
        apart <= Duration::from_secs(1),
        "{pushed} vs {:?}",
        holds[0]
    );
    assert_eq!(pipeline.answer(&holds[0], true).status, 200);
    let events = {
        let record = pipeline.next_record();
        assert_eq!(record["outcome"]["status"], "executed", "{record}");
        pipeline.audit_events("approve")
    };
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(events[0].get("notifyFailed").is_none(), "{:?}", events[0]);
    pipeline.finish();
}

/// Answers a hold through the API with a scope, and returns the reply's JSON.
fn answer_with_scope(pipeline: &Pipeline, hold: &Value, scope: &str) -> Value {
    let body = json!({"approve": true, "digest": hold["digest"], "scope": scope}).to_string();
    let answer = pipeline.api(
        "POST",
        &format!("/api/holds/{}", hold["hold"]),
        body.as_bytes(),
    );
    assert_eq!(answer.status, 200, "{}", answer.text());
    serde_json::from_slice(&answer.body).expect("a JSON reply")
}

/// Issue 33: a scope is offered only where it can be kept. Without the crew's store sc-approve
/// keeps no grant, so `GET /api/holds` offers `once` alone, and a `call` sent anyway is answered
/// with the scope that was kept (`once`). With the store, `call` is offered, and the reply names
/// the scope kept and the grant, as the approval record does.
#[test]
fn the_page_offers_only_the_scopes_that_can_be_kept_and_its_reply_names_the_grant() {
    let grantable = json!({"scopes": ["once", "call"], "kinds": ["amount"]});
    let mut pipeline = Pipeline::start_without_gate(&["--timeout", "600"]);
    pipeline.send_line(&held_payment("k-1", "acme-travel", Some(grantable.clone())));
    let holds = pipeline.wait_pending(1);
    assert_eq!(holds[0]["scopes"], json!(["once"]), "{:#}", holds[0]);
    let reply = answer_with_scope(&pipeline, &holds[0], "call");
    assert_eq!(
        reply,
        json!({"approved": true, "scope": "once", "grant": null})
    );
    pipeline.finish();

    let mut pipeline = Pipeline::start_without_gate(&["--timeout", "600", "--crew", "team"]);
    pipeline.send_line(&held_payment("k-2", "acme-travel", Some(grantable)));
    let holds = pipeline.wait_pending(1);
    assert_eq!(
        holds[0]["scopes"],
        json!(["once", "call"]),
        "{:#}",
        holds[0]
    );
    let reply = answer_with_scope(&pipeline, &holds[0], "call");
    assert_eq!(reply["approved"], true, "{reply:#}");
    assert_eq!(reply["scope"], "call", "{reply:#}");
    let grant = reply["grant"].as_str().expect("a grant id");
    assert_eq!(grant.len(), 32, "{reply:#}");
    // The reply can reach the page before sc-approve has appended the approval's event.
    let started = std::time::Instant::now();
    let events = loop {
        let events = pipeline.audit_events("approve");
        if !events.is_empty() || started.elapsed() > DEADLINE {
            break events;
        }
        std::thread::yield_now();
    };
    pipeline.finish();
    assert_eq!(events[0]["approval"]["grant"], grant, "{:#}", events[0]);
    assert_eq!(events[0]["approval"]["scope"], "call", "{:#}", events[0]);
}

/// Issue 33 ("the phone"): at 390 px, a card for a payment with a 200-character recipient and a
/// long path shows every value whole, wrapped at sensible points: the recipient's domain and the
/// file's extension are on the screen, in the first line and in the arguments alike; no value box
/// is wider inside than it shows, and the page does not scroll sideways.
#[test]
fn a_card_with_long_values_shows_them_whole_on_a_phone() {
    let recipient = {
        let mut name = String::from("very.long.address.that.");
        while name.len() < 200 - "@billing.example.com".len() {
            name.push_str("keeps.going.");
        }
        name.truncate(200 - "@billing.example.com".len());
        format!("{name}@billing.example.com")
    };
    assert_eq!(recipient.len(), 200);
    let path = "/home/traveller/projects/offsite-2026/lyon/receipts/hotel-confirmations/\
                booking-reference-AB12CD34EF56-final-signed.pdf";
    let driver = ChromeDriver::start();
    let mut pipeline = Pipeline::start(&["--timeout", "0"]);
    pipeline.send(&json!({
        "agent": "buyer",
        "tool": "send_payment",
        "args": {"to": recipient, "amount": 750, "attachment": path},
        "source": "user"
    }));
    let holds = pipeline.wait_pending(1);
    let url = pipeline.url.clone();
    runtime().block_on(async {
        let phone = driver
            .browser_with(
                "--window-size=390,844",
                json!({"mobileEmulation": {
                    "deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 2, "touch": true},
                }}),
                json!({}),
            )
            .await;
        phone.goto(&url).await.expect("open the page");
        find(&phone, "#pending .card[data-hold='1'] .field-args pre").await;
        let page = measure(&phone).await;
        assert_eq!(page["width"], 390);
        assert!(
            page["scrollWidth"].as_u64().unwrap() <= 390,
            "the page is wider than the screen: {page:#}"
        );
        assert_eq!(page["wide"], json!([]), "{page:#}");
        assert_eq!(page["overflowing"], json!([]), "{page:#}");
        assert_eq!(page["cards"][0]["argsScroll"], false, "{page:#}");
        let first = text_of(&phone, "#pending .card[data-hold='1'] h3.summary").await;
        assert_eq!(
            first,
            format!(
                "buyer wants to run send_payment: to {recipient}, amount 750, attachment {path}"
            )
        );
        let args = text_of(&phone, "#pending .card[data-hold='1'] .field-args pre").await;
        assert!(args.contains(&recipient) && args.contains(path), "{args}");
        // The domain and the extension are drawn inside the screen.
        let shown = phone
            .execute(
                r##"
const inside = (el, text) => {
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf(text);
    if (at < 0) { continue; }
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + text.length);
    const r = range.getBoundingClientRect();
    return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth;
  }
  return false;
};
const card = document.querySelector("#pending .card[data-hold='1']");
return [inside(card.querySelector("h3"), "example."), inside(card.querySelector("h3"), "pdf"),
        inside(card.querySelector("pre"), "example."), inside(card.querySelector("pre"), "pdf")];
"##,
                vec![],
            )
            .await
            .expect("look at the card");
        assert_eq!(shown, json!([true, true, true, true]));
        phone
            .execute(
                "document.documentElement.style.scrollbarWidth = 'none';",
                vec![],
            )
            .await
            .expect("hide the scrollbar");
        let screenshot = phone.screenshot().await.expect("a screenshot");
        std::fs::write(
            docs_screenshot_path("card-long-values-phone.png"),
            screenshot,
        )
        .expect("save it");
        phone.close().await.expect("close the browser");
    });
    assert_eq!(pipeline.answer(&holds[0], false).status, 200);
    pipeline.finish();
}
