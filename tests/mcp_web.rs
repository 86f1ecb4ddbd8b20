//! `sc-mcp --web ADDR`: held calls as cards on the loopback web page, for desktop clients that
//! give sc-mcp no terminal, as a person (a browser, or any channel speaking the JSON API over
//! real HTTP) and a client meet it.
//!
//! The client is the scripted one of tests/mcp.rs (or the SDK client of tests/elicitation.rs), in
//! front of the published filesystem server (behind a `tee` that logs every line it receives) or
//! the hermetic fake server (which logs them itself), so a test proves what never reached the
//! server. sc-mcp runs in a session of its own with no terminal, except where a test gives it one.
//!
//! Nothing here sleeps for a fixed time: every wait is for an event (a line sc-mcp writes to the
//! client or to stderr, an element on the page, a process exit) with a generous deadline.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::elicitation::{
    answer_question, approvals, held_call, outcomes, question, run_client, tool_failed, tool_text,
    YES,
};
use crate::mcp::{
    events, fake_proxy, filesystem_server, is_error, lines_with_id, methods, report_json,
    result_text, served_folder, server_received, Proxy,
};
use crate::terminal::Tty;
use crate::util::{parse_lines, parse_whole_lines, testdata, unclocked, Scratch};
use crate::web::{find, hex, request, runtime, screenshot_path, text_of, Answer, ChromeDriver};

/// What sc-mcp says on stderr when the page is up.
const ANNOUNCED: &str = "sc-mcp: approvals at ";

/// The page as the person and other channels reach it: its address as printed.
#[derive(Clone)]
struct Page {
    url: String,
    /// `127.0.0.1:PORT`.
    host: String,
    token: String,
}

impl Page {
    /// The page sc-mcp announced on its stderr.
    fn announced_by(proxy: &Proxy) -> Page {
        let line = proxy.wait_for_stderr(ANNOUNCED);
        let url = line
            .strip_prefix(ANNOUNCED)
            .unwrap_or_else(|| panic!("the announcement starts the line: {line}"))
            .to_owned();
        let (page, token) = url.split_once("/#token=").expect("a token in the fragment");
        let host = page.strip_prefix("http://").expect("http").to_owned();
        assert!(host.starts_with("127.0.0.1:"), "{host}");
        assert_eq!(token.len(), 64, "{token}");
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "{token}"
        );
        Page {
            token: token.to_owned(),
            host,
            url,
        }
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

    fn list(&self, path: &str) -> Vec<Value> {
        let answer = self.api("GET", path, b"");
        assert_eq!(answer.status, 200, "{path}: {}", answer.text());
        serde_json::from_slice(&answer.body).expect("a JSON array")
    }

    /// The cards waiting for an answer (`GET /api/holds`).
    fn pending(&self) -> Vec<Value> {
        self.list("/api/holds")
    }

    /// The cards that ended lately, newest first (`GET /api/history`).
    fn history(&self) -> Vec<Value> {
        self.list("/api/history")
    }

    /// The cards waiting once sc-mcp has said it put up `count` of them in all.
    fn after_cards(&self, proxy: &Proxy, count: usize) -> Vec<Value> {
        proxy.wait_for_stderr_lines("waiting for the person on the web page (card ", count);
        self.pending()
    }

    /// Answers a card as the page does.
    fn answer(&self, card: &Value, approve: bool) -> Answer {
        let body = json!({"approve": approve, "digest": card["digest"]}).to_string();
        self.api(
            "POST",
            &format!("/api/holds/{}", card["hold"]),
            body.as_bytes(),
        )
    }

    /// Whether anything still listens at the page's address.
    fn is_served(&self) -> bool {
        std::net::TcpStream::connect(&self.host).is_ok()
    }
}

fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// The verdict record of call `id`, rebuilt from its `gate` event: between `ts` and `stage` and
/// the chain's `seq` and `prev` (and `mac`, keyed), the event is the record's members, byte for
/// byte.
fn verdict_from_log(scratch: &Scratch, id: &str) -> Value {
    let all = scratch.audit_events();
    let gate = events(&all, "gate")
        .into_iter()
        .find(|event| event["id"] == id)
        .unwrap_or_else(|| panic!("no gate event for {id}"));
    let mut verdict = gate.clone();
    let object = verdict.as_object_mut().unwrap();
    for chain_or_event in ["ts", "stage", "seq", "prev", "mac"] {
        object.shift_remove(chain_or_event);
    }
    verdict
}

/// sc-mcp in front of the published filesystem server, with `--web 127.0.0.1:0` and `extra`;
/// every line the server receives is logged (see [`server_received`]).
fn published_proxy(scratch: &Scratch, extra: &[&str]) -> (Proxy, PathBuf) {
    let root = served_folder(scratch);
    let policy = testdata("mcp/filesystem-policy.json");
    let mut args = vec![
        "--policy",
        policy.to_str().unwrap(),
        "--agent",
        "fs",
        "--web",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(extra);
    let server: Vec<OsString> = vec![
        "bash".into(),
        "-c".into(),
        r#"tee -a "$1" | exec node "$2" "$3""#.into(),
        "filesystem-server".into(),
        scratch.path("server-received.jsonl").into_os_string(),
        filesystem_server().into_os_string(),
        root.clone().into_os_string(),
    ];
    (Proxy::spawn(scratch, &args, &server), root)
}

fn create_directory(id: i64, path: &PathBuf) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "create_directory", "arguments": {"path": path}}})
}

/// A call the fake policy holds (over its $100 limit), paying `to`.
fn payment(id: Value, amount: u64, to: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"amount": amount, "to": to}}})
}

#[test]
fn cards_are_approved_and_declined_on_the_page_while_the_published_server_keeps_serving() {
    let scratch = Scratch::new();
    let (mut proxy, root) = published_proxy(&scratch, &["--timeout", "600"]);
    let page = Page::announced_by(&proxy);
    proxy.initialize();
    // Reading a file taints the agent, so creating a directory after it is held.
    let read = proxy.call(1, "read_text_file", json!({"path": root.join("notes.txt")}));
    assert!(!is_error(&read), "{read}");
    let declined_dir = root.join("declined-dir");
    let approved_dir = root.join("approved-dir");
    proxy.send_value(&create_directory(2, &declined_dir));
    proxy.send_value(&create_directory(3, &approved_dir));
    let cards = page.after_cards(&proxy, 2);
    assert_eq!(cards.len(), 2, "{cards:#?}");

    // While both wait side by side, the proxy keeps relaying.
    let listing = proxy.call(4, "list_directory", json!({"path": root}));
    assert!(!is_error(&listing), "{listing}");
    assert!(
        result_text(&listing).contains("[FILE] notes.txt"),
        "{listing}"
    );

    // A card: the verdict record sc-mcp made of the call, the call as the terminal shows it,
    // with the taint that held it, its time left and the digest it is bound to.
    let card = &cards[0];
    assert_eq!(card["hold"], 1);
    let record = &card["record"];
    assert_eq!(
        record["call"],
        json!({"agent": "fs", "tool": "create_directory", "args": {"path": declined_dir},
               "source": "agent", "jsonrpcId": 2})
    );
    assert_eq!(record["decision"], "hold");
    let reasons = record["reasons"].to_string();
    assert!(
        reasons.contains("tainted") && reasons.contains("read_text_file"),
        "{reasons}"
    );
    assert_eq!(record["agentState"]["taintedBy"]["tool"], "read_text_file");
    assert_eq!(card["digest"], sha256_hex(&record.to_string()));
    let shown = &card["display"];
    assert_eq!(
        shown["args"],
        format!("{{\n  \"path\": {}\n}}", json!(declined_dir))
    );
    assert_eq!(shown["agent"], "fs");
    assert_eq!(shown["tool"], "create_directory");
    assert!(
        shown["taintedBy"]
            .as_str()
            .unwrap()
            .contains("fs read untrusted content through read_text_file"),
        "{shown}"
    );
    assert!(card["secondsLeft"].as_u64().unwrap() > 500, "{card}");
    assert!(card["expiresAt"].as_str().unwrap().ends_with('Z'), "{card}");
    assert_eq!(
        cards[1]["record"]["call"]["args"]["path"],
        json!(approved_dir)
    );

    // The second card is approved first: its call runs on the server, and the first still waits.
    let answer = page.answer(&cards[1], true);
    assert_eq!(
        (answer.status, answer.text()),
        (
            200,
            r#"{"approved":true,"scope":"once","grant":null}"#.to_owned()
        )
    );
    let created = proxy.answer(&json!(3));
    assert!(!is_error(&created), "{created}");
    assert!(
        result_text(&created).contains("Successfully created"),
        "{created}"
    );
    assert!(approved_dir.is_dir(), "the approved call did not run");
    for approve in [true, false] {
        let again = page.answer(&cards[1], approve);
        assert_eq!(
            again.status,
            409,
            "an answer is used once: {}",
            again.text()
        );
    }
    assert_eq!(unclocked(page.pending()), unclocked(vec![cards[0].clone()]));

    // The first is declined: refused with isError, and it never reaches the server.
    let answer = page.answer(&cards[0], false);
    assert_eq!(
        (answer.status, answer.text()),
        (200, r#"{"approved":false}"#.to_owned())
    );
    let refused = proxy.answer(&json!(2));
    assert!(is_error(&refused), "{refused}");
    let text = result_text(&refused);
    assert!(
        text.contains("held this call to create_directory for a person")
            && text.contains("declined on the web page"),
        "{text}"
    );
    let history = page.history();
    let states: Vec<(&Value, &Value)> = history.iter().map(|c| (&c["hold"], &c["state"])).collect();
    // Newest card first.
    assert_eq!(
        states,
        [
            (&json!(2), &json!("approved")),
            (&json!(1), &json!("declined"))
        ]
    );

    let done = proxy.finish();
    assert!(done.status.success(), "{:?}\n{}", done.status, done.stderr);
    assert!(!declined_dir.exists(), "the declined call ran");
    assert!(!page.is_served(), "the page outlived sc-mcp");
    assert!(
        done.stderr
            .contains("fs → create_directory: waiting for the person on the web page (card 1)"),
        "{}",
        done.stderr
    );

    // The server ran the read, the listing and the approved call; it never saw the declined one.
    let received = server_received(&scratch);
    let ran: Vec<String> = parse_whole_lines(received.as_bytes())
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| m["params"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ran,
        ["read_text_file", "list_directory", "create_directory"],
        "{received}"
    );
    assert!(!received.contains("declined-dir"), "{received}");

    // Each approval is bound to the verdict line the card showed, which the gate event carries.
    let approvals = approvals(&scratch);
    assert_eq!(approvals.len(), 2, "{approvals:#?}");
    for (approval, card, approved) in [
        (&approvals[0], &cards[1], true),
        (&approvals[1], card, false),
    ] {
        let id = card["record"]["id"].as_str().unwrap();
        assert_eq!(approval["id"], id);
        let verdict = verdict_from_log(&scratch, id);
        assert_eq!(verdict, card["record"]);
        assert_eq!(sha256_hex(&verdict.to_string()), card["digest"]);
        let mut expected = json!({
            "approved": approved,
            "by": "web",
            "answer": if approved { "approve" } else { "decline" },
            "digest": card["digest"],
            "reason": if approved { "approved on the web page" } else { "declined on the web page" },
        });
        if approved {
            // A yes says how far it reaches: the page's Approve once.
            expected["scope"] = json!("once");
        }
        assert_eq!(approval["approval"], expected);
    }
    assert_eq!(
        outcomes(&scratch),
        [
            ("read_text_file".into(), "executed".into()),
            ("list_directory".into(), "executed".into()),
            ("create_directory".into(), "executed".into()),
            ("create_directory".into(), "skipped".into()),
        ]
    );
    let report = report_json(&scratch);
    assert_eq!(report["holds"]["approved"], 1, "{report}");
    assert_eq!(report["holds"]["declined"], 1, "{report}");
}

#[test]
fn every_api_refusal_changes_nothing_and_the_call_stays_held() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &["--web", "127.0.0.1:0", "--timeout", "600"]);
    let page = Page::announced_by(&proxy);
    proxy.initialize();
    proxy.send_value(&payment(json!(1), 750, "acme-travel"));
    proxy.send_value(&payment(json!(2), 480, "acme-hotels"));
    let pending = page.after_cards(&proxy, 2);
    let (a, b) = (&pending[0], &pending[1]);
    assert_eq!(a["record"]["call"]["args"]["to"], "acme-travel");
    let a_path: &str = &format!("/api/holds/{}", a["hold"]);
    let approve_a: &str = &json!({"approve": true, "digest": a["digest"]}).to_string();
    let host = page.host.clone();
    let bearer = format!("Bearer {}", page.token);
    let mut wrong_token = page.token.clone().into_bytes();
    wrong_token[10] = if wrong_token[10] == b'0' { b'1' } else { b'0' };
    let wrong_bearer = format!("Bearer {}", String::from_utf8(wrong_token).unwrap());
    let port = host.rsplit(':').next().unwrap().to_owned();
    let too_big: &str =
        &json!({"approve": true, "digest": a["digest"], "pad": "x".repeat(70_000)}).to_string();
    let b_digest_on_a: &str = &json!({"approve": true, "digest": b["digest"]}).to_string();
    let no_digest: &str = &json!({"approve": true}).to_string();
    let not_bool: &str = &json!({"approve": "yes", "digest": a["digest"]}).to_string();
    let extra: &str = &json!({"approve": true, "digest": a["digest"], "also": 1}).to_string();
    type Headers = Vec<(&'static str, String)>;
    let ok: Headers = vec![("host", host.clone()), ("authorization", bearer.clone())];
    let only_host: Headers = vec![("host", host.clone())];
    // The right headers, but for one.
    let with = |name: &'static str, value: String| -> Headers {
        let mut headers: Headers = ok.iter().filter(|(n, _)| *n != name).cloned().collect();
        headers.push((name, value));
        headers
    };
    // (what, status, method, path, headers, body)
    let refusals: Vec<(&str, u16, &str, &str, Headers, &str)> = vec![
        (
            "no token",
            401,
            "POST",
            a_path,
            only_host.clone(),
            approve_a,
        ),
        (
            "a wrong token",
            401,
            "POST",
            a_path,
            with("authorization", wrong_bearer),
            approve_a,
        ),
        (
            "the token without Bearer",
            401,
            "POST",
            a_path,
            with("authorization", page.token.clone()),
            approve_a,
        ),
        (
            "a list without a token",
            401,
            "GET",
            "/api/holds",
            only_host,
            "",
        ),
        (
            "an unknown card",
            404,
            "POST",
            "/api/holds/999",
            ok.clone(),
            approve_a,
        ),
        (
            "another record's digest",
            409,
            "POST",
            a_path,
            ok.clone(),
            b_digest_on_a,
        ),
        (
            "a foreign Host (DNS rebinding)",
            403,
            "POST",
            a_path,
            with("host", format!("evil.test:{port}")),
            approve_a,
        ),
        (
            "the bound port under another name",
            403,
            "POST",
            a_path,
            with("host", format!("localhost:{port}")),
            approve_a,
        ),
        (
            "a cross-site Origin",
            403,
            "POST",
            a_path,
            with("origin", "http://evil.test".to_owned()),
            approve_a,
        ),
        (
            "a body over 64 KiB",
            413,
            "POST",
            a_path,
            ok.clone(),
            too_big,
        ),
        (
            "a body that is not JSON",
            400,
            "POST",
            a_path,
            ok.clone(),
            "approve=true",
        ),
        ("no digest", 400, "POST", a_path, ok.clone(), no_digest),
        (
            "approve not a boolean",
            400,
            "POST",
            a_path,
            ok.clone(),
            not_bool,
        ),
        (
            "a member besides the two",
            400,
            "POST",
            a_path,
            ok.clone(),
            extra,
        ),
    ];
    for (what, status, method, path, headers, body) in &refusals {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let answer = page.http(method, path, &headers, body.as_bytes());
        assert_eq!(answer.status, *status, "{what}: {}", answer.text());
        // Refused, and nothing changed: both cards wait, nothing was answered or ran.
        assert_eq!(
            unclocked(page.pending()),
            unclocked(pending.clone()),
            "{what}"
        );
        let all = scratch.audit_events();
        assert!(events(&all, "approve").is_empty(), "{what}");
        assert!(events(&all, "exec").is_empty(), "{what}");
        let received = server_received(&scratch);
        assert!(
            !received.contains("acme-travel") && !received.contains("acme-hotels"),
            "{what}: {received}"
        );
    }
    // Each refusal is narrated on stderr, in order, with its status.
    let narrated = proxy.wait_for_stderr_lines(": web: refused ", refusals.len());
    assert_eq!(narrated.len(), refusals.len(), "{narrated:#?}");
    for ((what, status, method, path, _, _), line) in refusals.iter().zip(&narrated) {
        let start = format!("sc-mcp: web: refused {method} {path} from 127.0.0.1:");
        assert!(
            line.starts_with(&start) && line.ends_with(&format!("({status})")),
            "{what}: {line}"
        );
    }

    // Answered as the page does it: b approved runs, a declined does not.
    assert_eq!(page.answer(b, true).status, 200);
    let ran = proxy.answer(&json!(2));
    assert!(!is_error(&ran), "{ran}");
    assert!(result_text(&ran).contains("acme-hotels"), "{ran}");
    assert_eq!(page.answer(a, false).status, 200);
    let refused = proxy.answer(&json!(1));
    assert!(is_error(&refused), "{refused}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    // Each call answered once: no refusal let an answer out before.
    for id in [1, 2] {
        assert_eq!(lines_with_id(&done.received, &json!(id)).len(), 1, "{id}");
    }
    let received = server_received(&scratch);
    assert!(
        received.contains("acme-hotels") && !received.contains("acme-travel"),
        "{received}"
    );
}

#[test]
fn a_card_nobody_answers_is_declined_when_its_time_is_up() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &["--web", "127.0.0.1:0", "--timeout", "2"]);
    let page = Page::announced_by(&proxy);
    proxy.initialize();
    proxy.send_value(&payment(json!(1), 750, "acme-travel"));
    let refused = proxy.answer(&json!(1));
    assert!(is_error(&refused), "{refused}");
    assert!(
        result_text(&refused).contains("declined: no answer within 2 seconds"),
        "{refused}"
    );
    // The card shows it expired; an answer after the time is up is refused.
    assert!(page.pending().is_empty());
    let history = page.history();
    assert_eq!(history.len(), 1, "{history:#?}");
    assert_eq!(history[0]["state"], "expired");
    assert_eq!(history[0]["reason"], "declined: no answer within 2 seconds");
    let late = page.answer(&history[0], true);
    assert_eq!(late.status, 409, "{}", late.text());
    // The proxy carries on.
    let after = proxy.call(2, "echo", json!({"after": true}));
    assert!(!is_error(&after), "{after}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert_eq!(lines_with_id(&done.received, &json!(1)).len(), 1);
    assert!(!server_received(&scratch).contains("acme-travel"));
    let approvals = approvals(&scratch);
    assert_eq!(
        approvals[0]["approval"],
        json!({"approved": false, "by": "web", "answer": null,
               "reason": "declined: no answer within 2 seconds"})
    );
    assert_eq!(
        outcomes(&scratch),
        [
            ("echo".into(), "skipped".into()),
            ("echo".into(), "executed".into())
        ]
    );
}

#[test]
fn a_call_the_client_cancels_is_withdrawn_from_the_page() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &["--web", "127.0.0.1:0", "--timeout", "600"]);
    let page = Page::announced_by(&proxy);
    proxy.initialize();
    proxy.send_value(&payment(json!("call-7"), 750, "acme-travel"));
    let cards = page.after_cards(&proxy, 1);
    proxy.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-7","reason":"the user moved on"}}"#,
    );
    proxy.wait_for_stderr("declined: the client cancelled the call before the person answered");
    assert!(page.pending().is_empty());
    let history = page.history();
    assert_eq!(history[0]["hold"], cards[0]["hold"]);
    assert_eq!(history[0]["state"], "withdrawn");
    assert_eq!(
        history[0]["reason"],
        "declined: the client cancelled the call before the person answered"
    );
    // An approval after that changes nothing.
    let late = page.answer(&cards[0], true);
    assert_eq!(late.status, 409, "{}", late.text());
    let after = proxy.call(2, "echo", json!({"after": true}));
    assert!(!is_error(&after), "{after}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        lines_with_id(&done.received, &json!("call-7")).is_empty(),
        "a cancelled request is not answered: {:#?}",
        done.received
    );
    let received = server_received(&scratch);
    assert!(
        !received.contains("acme-travel") && !received.contains("call-7"),
        "{received}"
    );
    let approvals = approvals(&scratch);
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["approval"]["by"], "web");
    assert_eq!(approvals[0]["approval"]["approved"], false);
}

#[test]
fn cards_still_waiting_when_the_client_leaves_are_declined_and_the_page_stops() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &["--web", "127.0.0.1:0", "--timeout", "0"]);
    let page = Page::announced_by(&proxy);
    proxy.initialize();
    proxy.send_value(&payment(json!(1), 750, "acme-travel"));
    let cards = page.after_cards(&proxy, 1);
    assert_eq!(
        cards[0]["secondsLeft"],
        Value::Null,
        "--timeout 0 waits forever"
    );
    assert_eq!(cards[0]["expiresAt"], Value::Null);
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(!page.is_served(), "the page outlived sc-mcp");
    let refused = lines_with_id(&done.received, &json!(1));
    assert_eq!(refused.len(), 1, "{:#?}", done.received);
    assert!(is_error(&refused[0]), "{}", refused[0]);
    assert!(!server_received(&scratch).contains("acme-travel"));
    let approvals = approvals(&scratch);
    assert_eq!(
        approvals[0]["approval"],
        json!({"approved": false, "by": "web", "answer": null,
               "reason": "declined: the client closed its input before the person answered"})
    );
    assert_eq!(outcomes(&scratch), [("echo".into(), "skipped".into())]);
}

#[test]
fn past_sixteen_waiting_cards_a_hold_is_declined_unasked() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &["--web", "127.0.0.1:0"]);
    let page = Page::announced_by(&proxy);
    proxy.initialize();
    for id in 1..=17 {
        proxy.send_value(&payment(json!(id), 750, &format!("payee-{id}")));
    }
    let seventeenth = proxy.answer(&json!(17));
    assert!(is_error(&seventeenth), "{seventeenth}");
    assert!(
        result_text(&seventeenth).contains("16 held calls are already waiting"),
        "{seventeenth}"
    );
    let pending = page.after_cards(&proxy, 16);
    assert_eq!(pending.len(), 16);
    assert_eq!(pending[2]["record"]["call"]["args"]["to"], "payee-3");
    assert_eq!(page.answer(&pending[2], true).status, 200);
    let third = proxy.answer(&json!(3));
    assert!(!is_error(&third), "{third}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let received = parse_lines(&server_received(&scratch));
    assert_eq!(
        methods(&received),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert_eq!(received[3]["params"]["arguments"]["to"], "payee-3");
}

// ---------------------------------------------------------------------------------------------
// Which way a hold is asked

#[test]
fn a_client_that_declared_elicitation_is_asked_there_and_not_on_the_page() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &["--web", "127.0.0.1:0"]);
    let page = Page::announced_by(&proxy);
    proxy.initialize_with(json!({"elicitation": {}}));
    proxy.send_value(&held_call(json!(1)));
    question(&mut proxy, 1);
    assert!(page.pending().is_empty());
    answer_question(&mut proxy, 1, YES());
    let ran = proxy.answer(&json!(1));
    assert!(!is_error(&ran), "{ran}");
    assert!(page.pending().is_empty() && page.history().is_empty());
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(!done.stderr.contains("on the web page"), "{}", done.stderr);
    assert_eq!(approvals(&scratch)[0]["approval"]["by"], "elicitation");
}

#[test]
fn with_no_elicitation_a_client_that_can_ask_still_gets_the_card_on_the_page() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &["--web", "127.0.0.1:0", "--no-elicitation"]);
    let page = Page::announced_by(&proxy);
    proxy.initialize_with(json!({"elicitation": {}}));
    proxy.send_value(&held_call(json!(1)));
    let cards = page.after_cards(&proxy, 1);
    assert_eq!(page.answer(&cards[0], true).status, 200);
    let ran = proxy.answer(&json!(1));
    assert!(!is_error(&ran), "{ran}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        done.received
            .iter()
            .all(|line| !line.contains("elicitation/create")),
        "{:#?}",
        done.received
    );
    assert_eq!(approvals(&scratch)[0]["approval"]["by"], "web");
}

#[test]
fn the_sdk_client_with_elicitation_is_asked_through_itself_and_without_it_the_page_declines_in_time(
) {
    // Declared: the SDK client's handler is asked, and nothing goes on the page.
    let scratch = Scratch::new();
    let run = run_client(
        &scratch,
        json!({"declare": true, "answer": "accept-true"}),
        &["--web", "127.0.0.1:0"],
    );
    assert_eq!(run.incoming(), ["elicitation/create"], "{}", run.report);
    assert!(!tool_failed(run.result(1)), "{}", run.report);
    assert!(run.root.join("made-by-the-agent").is_dir());
    assert!(run.stderr.contains(ANNOUNCED), "{}", run.stderr);
    assert!(!run.stderr.contains("on the web page"), "{}", run.stderr);
    assert_eq!(approvals(&scratch)[0]["approval"]["by"], "elicitation");

    // Not declared: the card waits on the page, and nobody answering declines it in time.
    let scratch = Scratch::new();
    let run = run_client(
        &scratch,
        json!({"declare": false, "answer": "accept-true"}),
        &["--web", "127.0.0.1:0", "--timeout", "2"],
    );
    assert!(run.incoming().is_empty(), "{}", run.report);
    let refused = run.result(1);
    assert!(tool_failed(refused), "{refused}");
    assert!(
        tool_text(refused).contains("declined: no answer within 2 seconds"),
        "{refused}"
    );
    assert!(!run.root.join("made-by-the-agent").exists());
    assert_eq!(run.server_ran(), ["read_text_file"]);
    assert!(
        run.stderr
            .contains("waiting for the person on the web page (card 1)"),
        "{}",
        run.stderr
    );
    let approval = &approvals(&scratch)[0]["approval"];
    assert_eq!(approval["by"], "web", "{approval}");
    assert_eq!(approval["approved"], false, "{approval}");
}

#[test]
fn the_page_comes_before_the_terminal_and_its_address_is_shown_there() {
    let scratch = Scratch::new();
    let policy = testdata("mcp/fake-policy.json");
    let mut proxy = Proxy::spawn_with(
        &scratch,
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--agent",
            "crew",
            "--web",
            "127.0.0.1:0",
            "--quiet",
        ],
        &crate::mcp::fake_server(),
        Tty::Pty,
    );
    let page = Page::announced_by(&proxy);
    // The same one line, even when quiet: on stderr, and on the person's terminal.
    let screen = proxy.wait_for_screen("#token=");
    assert!(
        screen.contains(&format!("{ANNOUNCED}{}", page.url)),
        "{screen:?}"
    );
    proxy.initialize();
    proxy.send_value(&payment(json!(1), 750, "acme-travel"));
    // Quiet, so the card is found by asking the page.
    let start = std::time::Instant::now();
    let card = loop {
        if let Some(card) = page.pending().pop() {
            break card;
        }
        assert!(
            start.elapsed() < crate::mcp::WAIT,
            "no card on the page within {:?}",
            crate::mcp::WAIT
        );
        // The page itself polls; so does the test, at a brisker pace.
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(page.answer(&card, false).status, 200);
    let refused = proxy.answer(&json!(1));
    assert!(is_error(&refused), "{refused}");
    assert!(
        result_text(&refused).contains("declined on the web page"),
        "{refused}"
    );
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
}

#[test]
fn web_takes_only_a_loopback_address_and_not_with_answers_or_no_prompt() {
    let scratch = Scratch::new();
    let answers = scratch.write("answers.txt", "yes\n");
    for (args, says) in [
        (vec!["--web", "0.0.0.0:0"], "loopback"),
        (vec!["--web", "[::]:8080"], "loopback"),
        (vec!["--web", "192.168.1.10:8080"], "ssh -L"),
        (vec!["--web", "localhost:8080"], "not an address and port"),
        (
            vec![
                "--web",
                "127.0.0.1:0",
                "--answers",
                answers.to_str().unwrap(),
            ],
            "cannot be used with",
        ),
        (
            vec!["--web", "127.0.0.1:0", "--no-prompt"],
            "cannot be used with",
        ),
    ] {
        let output = scratch
            .cmd("sc-mcp")
            .args(&args)
            .args(["--", "true"])
            .write_stdin("")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!stderr.contains(ANNOUNCED), "{args:?}: {stderr}");
    }
}

// ---------------------------------------------------------------------------------------------
// The browser

#[test]
fn a_person_approves_a_card_in_a_real_browser_and_the_call_runs() {
    let driver = ChromeDriver::start();
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &["--web", "127.0.0.1:0", "--timeout", "600"]);
    let page = Page::announced_by(&proxy);
    proxy.initialize();
    proxy.send_value(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo",
        "arguments": {"amount": 750, "to": "<img src=x onerror=\"window.scPwned=1\">",
                      "memo": "</script><script>window.scPwned=2</script> \u{202e}lanif"}}}),
    );
    page.after_cards(&proxy, 1);
    runtime().block_on(async {
        let browser = driver.browser().await;
        browser.goto(&page.url).await.expect("open the page");
        let card = "#pending .card[data-hold='1']";
        let args = text_of(&browser, &format!("{card} .field-args pre")).await;
        assert_eq!(
            args,
            "{\n  \"amount\": 750,\n  \"to\": \"<img src=x onerror=\\\"window.scPwned=1\\\">\",\n  \"memo\": \"</script><script>window.scPwned=2</script> \\u{202e}lanif\"\n}"
        );
        assert_eq!(
            text_of(&browser, &format!("{card} .field-agent")).await,
            "crew"
        );
        assert_eq!(
            text_of(&browser, &format!("{card} .field-tool")).await,
            "echo"
        );
        assert_eq!(
            text_of(&browser, &format!("{card} .field-reasons")).await,
            "amount 750 is above the hold limit of 100"
        );
        let screenshot = browser.screenshot().await.expect("a screenshot");
        std::fs::write(screenshot_path("mcp-approval-card.png"), screenshot).expect("save it");
        find(&browser, &format!("{card} button.approve"))
            .await
            .click()
            .await
            .expect("click Approve");
        find(
            &browser,
            "#ended .card[data-hold='1'][data-state='approved'][data-settled]",
        )
        .await;
        let untouched = browser
            .execute(
                "return [typeof window.scPwned, document.images.length];",
                vec![],
            )
            .await
            .expect("run a check in the page");
        assert_eq!(untouched, json!(["undefined", 0]));
        browser.close().await.expect("close the browser");
    });
    let ran = proxy.answer(&json!(1));
    assert!(!is_error(&ran), "{ran}");
    assert!(result_text(&ran).contains("750"), "{ran}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(server_received(&scratch).contains("scPwned"));
    let approval = &approvals(&scratch)[0]["approval"];
    assert_eq!(approval["by"], "web");
    assert_eq!(approval["answer"], "approve");
}

// ---------------------------------------------------------------------------------------------
// `--notify CMD`: a push to the person whenever a held call is put to them

/// The JSON the `--notify` command wrote to `notify.json` in the scratch folder (its working
/// folder, sc-mcp's), once it is whole.
fn notified(scratch: &Scratch, name: &str) -> Value {
    let file = scratch.path(name);
    let start = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if let Ok(value) = serde_json::from_str(&text) {
            return value;
        }
        assert!(
            start.elapsed() < crate::web::DEADLINE,
            "no notify JSON in {name} in time: {text:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// On the web page: the command gets the hold (agent, tool, exact arguments, reasons, the digest
/// the card is bound to, when it declines) and the card's address with its token.
#[test]
fn with_web_the_notify_command_gets_the_hold_and_the_cards_address() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(
        &scratch,
        &[
            "--web",
            "127.0.0.1:0",
            "--timeout",
            "600",
            "--notify",
            "cat > notify.json",
        ],
    );
    let page = Page::announced_by(&proxy);
    proxy.initialize();
    proxy.send_value(&payment(json!(1), 750, "acme-travel"));
    let cards = page.after_cards(&proxy, 1);
    let pushed = notified(&scratch, "notify.json");
    assert_eq!(pushed["url"], page.url.as_str());
    assert_eq!(pushed["agent"], "crew");
    assert_eq!(pushed["tool"], "echo");
    assert_eq!(pushed["args"], json!({"amount": 750, "to": "acme-travel"}));
    assert_eq!(pushed["reasons"], cards[0]["record"]["reasons"]);
    assert_eq!(pushed["digest"], cards[0]["digest"]);
    assert_eq!(pushed["summary"], cards[0]["display"]["summary"]);
    let pushed_at = humantime::parse_rfc3339(pushed["expiresAt"].as_str().unwrap()).unwrap();
    let card_at = humantime::parse_rfc3339(cards[0]["expiresAt"].as_str().unwrap()).unwrap();
    let apart = pushed_at
        .duration_since(card_at)
        .or_else(|_| card_at.duration_since(pushed_at))
        .unwrap();
    assert!(apart <= std::time::Duration::from_secs(1), "{pushed}");
    assert_eq!(page.answer(&cards[0], true).status, 200);
    let ran = proxy.answer(&json!(1));
    assert!(!is_error(&ran), "{ran}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let approvals = approvals(&scratch);
    assert_eq!(approvals.len(), 1, "{approvals:#?}");
    assert_eq!(approvals[0]["approval"]["approved"], true);
    assert!(
        approvals[0].get("notifyFailed").is_none(),
        "{:#}",
        approvals[0]
    );
}

/// Through the client: the command gets the hold, without an address; a command that fails is
/// said on stderr and in the approve event, and the person's answer stands all the same.
#[test]
fn through_the_client_the_notify_command_runs_and_its_failure_is_audited() {
    let scratch = Scratch::new();
    let mut proxy = fake_proxy(
        &scratch,
        &["--notify", "cat > notify.json; exit 3", "--timeout", "600"],
    );
    proxy.initialize_with(json!({"elicitation": {}}));
    proxy.send_value(&held_call(json!(1)));
    question(&mut proxy, 1);
    let pushed = notified(&scratch, "notify.json");
    assert_eq!(pushed["tool"], "echo");
    assert_eq!(pushed["args"], json!({"amount": 750, "to": "acme"}));
    assert!(pushed.get("url").is_none(), "{pushed}");
    assert!(pushed["expiresAt"].is_string(), "{pushed}");
    assert_eq!(pushed["digest"].as_str().unwrap().len(), 64, "{pushed}");
    proxy.wait_for_stderr("sc-mcp: --notify failed for hold");
    answer_question(&mut proxy, 1, YES());
    let ran = proxy.answer(&json!(1));
    assert!(!is_error(&ran), "{ran}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        done.stderr
            .contains("it exited with status 3; the hold is asked all the same"),
        "{}",
        done.stderr
    );
    let approvals = approvals(&scratch);
    assert_eq!(approvals.len(), 1, "{approvals:#?}");
    assert_eq!(approvals[0]["approval"]["approved"], true);
    assert_eq!(approvals[0]["approval"]["by"], "elicitation");
    assert_eq!(approvals[0]["notifyFailed"], "it exited with status 3");
    assert_eq!(outcomes(&scratch), [("echo".into(), "executed".into())]);
}

/// Asked by the answers file (as on the terminal, while sc-mcp waits), the command runs too; with
/// --no-prompt nobody is asked, and nobody is told.
#[test]
fn asked_in_turn_the_notify_command_runs_and_with_no_prompt_it_does_not() {
    let scratch = Scratch::new();
    let answers = scratch.write("answers.txt", "no\n");
    let mut proxy = fake_proxy(
        &scratch,
        &[
            "--answers",
            answers.to_str().unwrap(),
            "--timeout",
            "0",
            "--notify",
            "cat > notify.json",
        ],
    );
    proxy.initialize();
    proxy.send_value(&held_call(json!(1)));
    let refused = proxy.answer(&json!(1));
    assert!(is_error(&refused), "{refused}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let pushed = notified(&scratch, "notify.json");
    assert_eq!(pushed["agent"], "crew");
    assert_eq!(pushed["tool"], "echo");
    assert!(pushed.get("url").is_none(), "{pushed}");
    assert!(pushed.get("expiresAt").is_none(), "--timeout 0: {pushed}");
    let approvals = approvals(&scratch);
    assert_eq!(approvals[0]["approval"]["by"], "answers");
    assert!(approvals[0].get("notifyFailed").is_none());

    let scratch = Scratch::new();
    let mut proxy = fake_proxy(&scratch, &["--no-prompt", "--notify", "cat > notify.json"]);
    proxy.initialize();
    proxy.send_value(&held_call(json!(1)));
    let refused = proxy.answer(&json!(1));
    assert!(is_error(&refused), "{refused}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        !scratch.path("notify.json").exists(),
        "nobody asked, nobody told"
    );
}

/// sc-mcp with the page, in front of the fake server, for the crew `payments` on `store`.
fn crew_page_proxy(scratch: &Scratch, policy: &std::path::Path, store: &str) -> Proxy {
    let args = [
        "--policy",
        policy.to_str().unwrap(),
        "--agent",
        "crew",
        "--web",
        "127.0.0.1:0",
        "--timeout",
        "600",
        "--crew",
        "payments",
        "--state",
        store,
    ];
    Proxy::spawn(scratch, &args, &crate::mcp::fake_server())
}

/// A yes on the page is decided again as it runs. While the card waits, `sc-state reset` forgets
/// the spend and a 900 runs; the card showed "would total 1150", and decided again the call is
/// held at "would total 1650 (900 …)". The person clicks Approve in a real browser: the call does
/// not run, the card says why, the client gets `isError`, and nothing is granted.
#[test]
fn a_yes_on_the_page_is_decided_again_and_the_card_says_when_it_does_not_run() {
    let driver = ChromeDriver::start();
    let scratch = Scratch::new();
    let store = scratch.path("state.sqlite");
    let store = store.to_str().unwrap();
    let policy = crate::mcp_revisions::budget_of_1000(&scratch, "");
    let mut proxy = crew_page_proxy(&scratch, &policy, store);
    let page = Page::announced_by(&proxy);
    proxy.initialize();
    let first = proxy.call(1, "echo", json!({"amount": 400, "memo": "first"}));
    assert!(result_text(&first).contains("first"), "{first}");
    proxy.send_value(&payment(json!(2), 750, "rent"));
    let cards = page.after_cards(&proxy, 1);
    let reasons = cards[0]["record"]["reasons"].to_string();
    assert!(reasons.contains("would total 1150 (400 "), "{reasons}");
    scratch
        .cmd("sc-state")
        .args(["reset", "--crew", "payments", "--state", store])
        .assert()
        .success();
    let since = proxy.call(3, "echo", json!({"amount": 900, "memo": "since"}));
    assert!(result_text(&since).contains("since"), "{since}");
    let hold = cards[0]["hold"].clone();
    runtime().block_on(async {
        let browser = driver.browser().await;
        browser.goto(&page.url).await.expect("open the page");
        let card = format!("#pending .card[data-hold='{hold}']");
        find(&browser, &format!("{card} button.approve"))
            .await
            .click()
            .await
            .expect("click Approve");
        let ended = format!(
            "#ended .card[data-hold='{hold}'][data-state='approved'][data-settled] .outcome"
        );
        find(&browser, &ended).await;
        let words = text_of(&browser, &ended).await;
        assert!(
            words.starts_with("Approved, but not run: ")
                && words.contains("would total 1650 (900 "),
            "{words}"
        );
        browser.close().await.expect("close the browser");
    });
    let refused = proxy.answer(&json!(2));
    assert!(is_error(&refused), "{refused}");
    assert!(result_text(&refused).contains("fewer reasons"), "{refused}");
    let history = page.history();
    assert!(
        history[0]["kept"]["notRun"]
            .as_str()
            .is_some_and(|why| why.contains("would total 1650 (900 ")),
        "{history:#?}"
    );
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(!server_received(&scratch).contains(r#""amount":750"#));
    let approval = &approvals(&scratch)[0];
    assert_eq!(approval["approval"]["by"], "web", "{approval}");
    assert_eq!(approval["approval"]["approved"], true, "{approval}");
    assert_eq!(approval["decidedAgain"]["decision"], "hold", "{approval}");
    assert!(approval["notCovered"]["notShown"]
        .to_string()
        .contains("would total 1650 (900 "));
}

/// The fake policy's payment of 750, held, on the page of an sc-mcp whose crew's state is a
/// SQLite file; then the store is held busy by another connection and the person approves the
/// card: the page's thread takes the call and waits on the store to decide it again. Returns
/// once sc-mcp says the call's id is in use by a call being settled (asked by sending calls
/// under that id, each refused); the person's POST is still waiting, on its thread.
fn settling_behind_a_busy_store(
    scratch: &Scratch,
    approve: bool,
) -> (
    Proxy,
    Page,
    rusqlite::Connection,
    std::thread::JoinHandle<crate::web::Answer>,
) {
    let store = scratch.path("state.sqlite");
    let policy = testdata("mcp/fake-policy.json");
    let mut proxy = crew_page_proxy(scratch, &policy, store.to_str().unwrap());
    let page = Page::announced_by(&proxy);
    proxy.initialize();
    proxy.send_value(&payment(json!(2), 750, "held-payment"));
    let cards = page.after_cards(&proxy, 1);
    let holder = rusqlite::Connection::open(&store).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (person, card) = (page.clone(), cards[0].clone());
    let post = std::thread::spawn(move || person.answer(&card, approve));
    until_id_2_is_being_acted_on(&mut proxy);
    (proxy, page, holder, post)
}

/// Sends calls under id 2, for a tool the policy denies (so none ever runs), until the refusal
/// says the id is taken by the held call being settled.
pub(crate) fn until_id_2_is_being_acted_on(proxy: &mut Proxy) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        proxy.send_value(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "write_file", "arguments": {"path": "x"}}}));
        let refused = proxy.answer(&json!(2));
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        if message.contains("in use by a call whose person's answer is being acted on") {
            return;
        }
        assert!(
            message.contains("waiting for the person's answer"),
            "{refused}"
        );
        assert!(std::time::Instant::now() < deadline, "never settled");
    }
}

/// The held payment's id in the log's `gate` events, and its `exec` events.
fn held_payments_outcomes(log: &[Value]) -> (Value, Vec<&Value>) {
    let held = events(log, "gate")
        .into_iter()
        .find(|gate| gate["decision"] == "hold")
        .expect("the payment was held")["id"]
        .clone();
    let outcomes = events(log, "exec")
        .into_iter()
        .filter(|exec| exec["id"] == held)
        .collect();
    (held, outcomes)
}

/// The client cancels call 2 while it is being settled behind the busy store, then the store is
/// let go: the person's POST answer, once the settling is done.
fn cancelled_while_settling(
    proxy: &mut Proxy,
    holder: &rusqlite::Connection,
    post: std::thread::JoinHandle<crate::web::Answer>,
) -> crate::web::Answer {
    proxy.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#);
    // Read in order: once this is answered, the cancellation was taken.
    let listed = proxy.request(3, "tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    holder.execute_batch("COMMIT").unwrap();
    post.join().unwrap()
}

/// While the page's thread acts on a yes, the call's id stays in use: a new call under it is
/// refused, and does not take the approved call's place. The approved call then runs, once,
/// with its own `exec` event.
#[test]
fn while_a_yes_is_acted_on_its_calls_id_stays_in_use() {
    let scratch = Scratch::new();
    let (mut proxy, _page, holder, post) = settling_behind_a_busy_store(&scratch, true);
    holder.execute_batch("COMMIT").unwrap();
    let ran = proxy.answer(&json!(2));
    assert!(!is_error(&ran), "{ran}");
    assert!(result_text(&ran).contains("held-payment"), "{ran}");
    let answer = post.join().unwrap();
    assert_eq!(answer.status, 200, "{}", answer.text());
    let body: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(body["approved"], true, "{body}");
    assert!(body.get("notRun").is_none(), "{body}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let received = server_received(&scratch);
    assert_eq!(received.matches("held-payment").count(), 1, "{received}");
    assert!(
        !received.contains("write_file\", \"arguments"),
        "{received}"
    );
    let log = scratch.audit_events();
    let (_, outcomes) = held_payments_outcomes(&log);
    assert_eq!(outcomes.len(), 1, "{log:#?}");
    assert_eq!(outcomes[0]["outcome"]["status"], "executed", "{log:#?}");
    assert!(outcomes[0]["outcome"]["result"]
        .to_string()
        .contains("held-payment"));
}

/// The client cancels the call while the page's thread acts on the person's yes: the call is
/// not sent, its `exec` event says why, the client gets no answer, and the card says the yes
/// was not run.
#[test]
fn a_call_cancelled_while_its_yes_is_acted_on_is_not_sent() {
    let scratch = Scratch::new();
    let (mut proxy, page, holder, post) = settling_behind_a_busy_store(&scratch, true);
    let answer = cancelled_while_settling(&mut proxy, &holder, post);
    assert_eq!(answer.status, 200, "{}", answer.text());
    let body: Value = serde_json::from_slice(&answer.body).unwrap();
    assert!(
        body["notRun"]
            .as_str()
            .is_some_and(|why| why.contains("cancelled")),
        "{body}"
    );
    assert!(page.history()[0]["kept"]["notRun"].is_string());
    let after = proxy.call(4, "echo", json!({"memo": "after"}));
    assert!(result_text(&after).contains("after"), "{after}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(!server_received(&scratch).contains("held-payment"));
    // The refusals of the id in use, and nothing else, answered id 2.
    for line in lines_with_id(&done.received, &json!(2)) {
        assert!(line.get("error").is_some(), "{line}");
    }
    let log = scratch.audit_events();
    let outcome = events(&log, "exec")
        .into_iter()
        .find(|exec| {
            exec["outcome"]["reason"]
                .as_str()
                .is_some_and(|why| why.contains("while the person's answer was acted on"))
        })
        .expect("the cancelled call's exec event");
    assert_eq!(outcome["outcome"]["status"], "skipped", "{outcome}");
}

/// The client goes away (its side of sc-mcp's output closed) while the page's thread acts on a
/// yes: sc-mcp is stopping, so the call is not sent, and its `exec` event says it was skipped
/// and why (a review found this outcome had no test).
#[test]
fn a_yes_acted_on_while_sc_mcp_stops_is_not_sent_and_is_audited_as_skipped() {
    let scratch = Scratch::new();
    let (mut proxy, _page, holder, post) = settling_behind_a_busy_store(&scratch, true);
    let server = proxy.server_pid();
    proxy.stop_reading();
    // Each request's answer is a write to the client; once one fails, sc-mcp knows the client
    // is gone and ends the server (a zombie until sc-mcp waits for it at its end).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    for id in 10.. {
        let stat = std::fs::read_to_string(format!("/proc/{server}/stat")).unwrap_or_default();
        let state = stat[stat.rfind(')').map_or(0, |at| at + 1)..].trim_start();
        if stat.is_empty() || state.starts_with('Z') {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "sc-mcp never saw the client go"
        );
        proxy.send_value(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Now the yes is acted on.
    holder.execute_batch("COMMIT").unwrap();
    // The page may be gone before its answer: whatever it said, the log says what happened.
    if let Ok(answer) = post.join() {
        if answer.status == 200 {
            let body: Value = serde_json::from_slice(&answer.body).unwrap();
            assert!(
                body["notRun"]
                    .as_str()
                    .is_some_and(|why| why.contains("stopping")),
                "{body}"
            );
        }
    }
    proxy.finish();
    assert!(!server_received(&scratch).contains("held-payment"));
    let log = scratch.audit_events();
    let (held, outcomes) = held_payments_outcomes(&log);
    assert_eq!(outcomes.len(), 1, "{outcomes:#?}");
    assert_eq!(outcomes[0]["outcome"]["status"], "skipped", "{outcomes:#?}");
    assert_eq!(
        outcomes[0]["outcome"]["reason"], "not run: sc-mcp is stopping",
        "{outcomes:#?}"
    );
    let approved = events(&log, "approve")
        .into_iter()
        .filter(|approve| approve["id"] == held)
        .count();
    assert_eq!(approved, 1, "{log:#?}");
}

/// A no (or a timeout) being acted on when the client cancels the call: the client, which awaits
/// no answer to a cancelled call, gets none, and the call's `exec` event says it was skipped.
#[test]
fn a_call_cancelled_while_its_no_is_acted_on_gets_no_answer() {
    let scratch = Scratch::new();
    let (mut proxy, _page, holder, post) = settling_behind_a_busy_store(&scratch, false);
    assert_eq!(
        cancelled_while_settling(&mut proxy, &holder, post).status,
        200
    );
    // Sent after the settling: answered once it is done, so whatever id 2 got came before.
    let after = proxy.call(4, "echo", json!({"memo": "after"}));
    assert!(result_text(&after).contains("after"), "{after}");
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    for line in lines_with_id(&done.received, &json!(2)) {
        assert!(
            line.get("error").is_some(),
            "answered after its cancellation: {line}"
        );
    }
    let log = scratch.audit_events();
    let skipped = events(&log, "exec")
        .into_iter()
        .filter(|exec| exec["outcome"]["status"] == "skipped" && exec["decision"] == "hold")
        .count();
    assert_eq!(skipped, 1, "{log:#?}");
}

/// A call held through the client's elicitation whose `--timeout` runs out while the crew's
/// store is busy: its id stays in use until the decline is answered, so a new call under it is
/// refused, never run in its place.
#[test]
fn a_call_declined_by_its_timeout_keeps_its_id_until_answered() {
    let scratch = Scratch::new();
    let store = scratch.path("state.sqlite");
    let policy = testdata("mcp/fake-policy.json");
    let args = [
        "--policy",
        policy.to_str().unwrap(),
        "--agent",
        "crew",
        "--timeout",
        "5",
        "--crew",
        "payments",
        "--state",
        store.to_str().unwrap(),
    ];
    let mut proxy = Proxy::spawn(&scratch, &args, &crate::mcp::fake_server());
    proxy.initialize_with(json!({"elicitation": {}}));
    proxy.send_value(&payment(json!(2), 750, "held-payment"));
    crate::elicitation::question(&mut proxy, 1);
    let holder = rusqlite::Connection::open(&store).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    until_id_2_is_being_acted_on(&mut proxy);
    holder.execute_batch("COMMIT").unwrap();
    let declined = proxy.message_where("the timeout's refusal of id 2", |m| {
        m["id"] == 2 && m.get("result").is_some()
    });
    assert!(is_error(&declined), "{declined}");
    assert!(
        result_text(&declined).contains("no answer within 5 seconds"),
        "{declined}"
    );
    let done = proxy.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let received = server_received(&scratch);
    assert!(!received.contains("held-payment"), "{received}");
    assert!(!received.contains("write_file"), "{received}");
}
