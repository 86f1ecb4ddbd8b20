//! Tests of the web approval page and its API ([`super`]).

use super::*;
use crate::call::Call;

#[test]
fn a_hold_id_has_one_spelling() {
    assert_eq!(canonical_hold_id("1"), Some(1));
    assert_eq!(canonical_hold_id("0"), Some(0));
    assert_eq!(canonical_hold_id("120"), Some(120));
    for other in [
        "01",
        "+1",
        "-1",
        " 1",
        "1 ",
        "",
        "1e0",
        "99999999999999999999999",
    ] {
        assert_eq!(canonical_hold_id(other), None, "{other:?}");
    }
}

fn shared() -> Shared {
    Shared {
        program: "test",
        host: "127.0.0.1:8080".into(),
        origin: "http://127.0.0.1:8080".into(),
        token: "ab".repeat(32),
        holds: Mutex::new(Holds::default()),
        settled: Condvar::new(),
        kept: tokio::sync::Notify::new(),
        on_settle: None,
    }
}

fn request(headers: &[(&str, &str)], path: &str) -> Request {
    let mut builder = Request::builder().uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::empty()).unwrap()
}

#[test]
fn a_token_is_32_random_bytes_in_hex() {
    let (one, two) = (new_token().unwrap(), new_token().unwrap());
    assert_eq!(one.len(), 64);
    assert!(one
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_ne!(one, two);
}

#[test]
fn only_loopback_addresses_are_served() {
    for ok in ["127.0.0.1:0", "[::1]:8080", "127.0.0.2:1"] {
        assert!(check_loopback(ok.parse().unwrap()).is_ok(), "{ok}");
    }
    for refused in ["0.0.0.0:0", "[::]:8080", "192.168.1.2:80", "10.0.0.1:1"] {
        let err = check_loopback(refused.parse().unwrap()).unwrap_err();
        assert_eq!(crate::exit::status_for(&err), crate::exit::USAGE_ERROR);
        assert!(err.to_string().contains("ssh -L"), "{err}");
    }
}

#[test]
fn requests_need_the_bound_host_the_pages_origin_and_for_the_api_the_token() {
    let shared = shared();
    let token = format!("Bearer {}", shared.token);
    let host = ("host", "127.0.0.1:8080");
    let status = |headers: &[(&str, &str)], path: &str| {
        check(&shared, &request(headers, path)).map_err(|refusal| refusal.status.as_u16())
    };
    assert_eq!(status(&[host], "/"), Ok(()));
    assert_eq!(
        status(&[host, ("authorization", &token)], "/api/holds"),
        Ok(())
    );
    assert_eq!(
        status(
            &[
                host,
                ("authorization", &token),
                ("origin", "http://127.0.0.1:8080")
            ],
            "/api/holds"
        ),
        Ok(())
    );
    assert_eq!(status(&[host], "/api/holds"), Err(401));
    let wrong = format!("Bearer {}", "ab".repeat(31) + "ac");
    assert_eq!(
        status(&[host, ("authorization", &wrong)], "/api/holds"),
        Err(401)
    );
    let short = format!("Bearer {}", &shared.token[..63]);
    assert_eq!(
        status(&[host, ("authorization", &short)], "/api/holds"),
        Err(401)
    );
    let basic = format!("Basic {}", shared.token);
    assert_eq!(
        status(&[host, ("authorization", &basic)], "/api/holds"),
        Err(401)
    );
    for bad_host in [
        "localhost:8080",
        "127.0.0.1:8081",
        "evil.test:8080",
        "127.0.0.1",
    ] {
        assert_eq!(
            status(
                &[("host", bad_host), ("authorization", &token)],
                "/api/holds"
            ),
            Err(403),
            "{bad_host}"
        );
    }
    assert_eq!(status(&[], "/"), Err(403));
    assert_eq!(status(&[host, host], "/"), Err(403));
    for origin in ["http://evil.test", "null", "https://127.0.0.1:8080"] {
        assert_eq!(
            status(
                &[host, ("origin", origin), ("authorization", &token)],
                "/api/holds"
            ),
            Err(403),
            "{origin}"
        );
    }
    assert_eq!(
        status(&[host], "http://evil.test:8080/"),
        Err(403),
        "an absolute request target names another host"
    );
}

fn hold_line() -> (&'static str, Call) {
    let line = r#"{"id":"h-1","call":{"agent":"buyer\u202e","tool":"send_payment","args":{"to":"<img src=x onerror=alert(1)>","amount":100.0000000000000001,"deep":[1,{"k":"\u001b[2J"}],"none":{},"memo":"pay BIDI now"},"source":"user"},"decision":"hold","reasons":["amount is above the hold limit"],"agentState":{"taintedBy":{"agent":"helper","tool":"fetch_page","id":"g-1","argument":"url=https://x.test/"},"spent":297}}"#;
    let line: &'static str = line.replace("BIDI", "\u{202e}\u{2066}").leak();
    let record = crate::record::Record::parse(line.as_bytes()).unwrap();
    let call = record.call().unwrap().clone().unwrap();
    (line, call)
}

#[test]
fn the_display_shows_the_exact_arguments_and_escapes_agent_text() {
    let (line, call) = hold_line();
    let reasons = vec!["amount is above the hold limit".to_owned()];
    let hold = Hold {
        scopes: &[crate::record::Scope::Once],
        line: line.as_bytes(),
        id: "h-1",
        call: &call,
        reasons: &reasons,
        timeout: Some(Duration::from_secs(60)),
    };
    let display: Value = serde_json::from_str(display_json(&hold).get()).unwrap();
    assert_eq!(display["agent"], "buyer\\u{202e}");
    assert_eq!(
        display["args"],
        "{\n  \"to\": \"<img src=x onerror=alert(1)>\",\n  \"amount\": 100.0000000000000001,\n  \"deep\": [\n    1,\n    {\n      \"k\": \"\\u001b[2J\"\n    }\n  ],\n  \"none\": {},\n  \"memo\": \"pay \\u{202e}\\u{2066} now\"\n}"
    );
    assert_eq!(display["source"], "user");
    assert_eq!(display["instruction"], Value::Null);
    assert_eq!(
        display["taintedBy"],
        "helper read untrusted content through fetch_page (id g-1, url=https://x.test/)"
    );
    assert_eq!(display["spent"], "297");
    assert_eq!(record_json(line.as_bytes()).get(), line);
}

#[test]
fn an_answer_is_bound_to_the_digest_and_used_once_and_expiry_declines() {
    let (line, call) = hold_line();
    let reasons = vec!["r".to_owned()];
    let web_hold = |timeout| Hold {
        scopes: &[crate::record::Scope::Once],
        line: line.as_bytes(),
        id: "h-1",
        call: &call,
        reasons: &reasons,
        timeout,
    };
    let shared = shared();
    let mut holds = shared.lock();
    let submit = |holds: &mut Holds, hold: &Hold| {
        holds.next += 1;
        let now = Instant::now();
        holds.entries.insert(
            holds.next,
            Entry {
                scopes: vec![],
                scope: crate::record::Scope::Once,
                digest: hold.digest(),
                record: record_json(hold.line),
                display: display_json(hold),
                timeout: hold.timeout,
                expires: hold.timeout.map(|t| (now + t, SystemTime::now() + t)),
                state: HoldState::Pending,
                withdrawn: None,
                collected: false,
                kept: None,
                reports: false,
            },
        );
        holds.next
    };
    let one = submit(&mut holds, &web_hold(Some(Duration::from_secs(600))));
    let digest = web_hold(None).digest();
    assert_eq!(holds.collect(one), None);
    let refused = holds
        .answer(one, true, &"0".repeat(64), crate::record::Scope::Once)
        .unwrap_err();
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(
        holds
            .answer(99, true, &digest, crate::record::Scope::Once)
            .unwrap_err()
            .status,
        404
    );
    assert_eq!(holds.collect(one), None, "refusals change nothing");
    holds
        .answer(one, true, &digest, crate::record::Scope::Once)
        .unwrap();
    let again = holds
        .answer(one, false, &digest, crate::record::Scope::Once)
        .unwrap_err();
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(
        holds.collect(one),
        Some(Reply::Decision {
            scope: crate::record::Scope::Once,
            approve: true,
            digest: Some(digest.clone())
        })
    );
    let two = submit(&mut holds, &web_hold(Some(Duration::from_secs(5))));
    let later = Instant::now() + Duration::from_secs(6);
    let expired = holds.expire_due(later);
    assert_eq!(expired.iter().map(Ticket::id).collect::<Vec<_>>(), [two]);
    assert_eq!(
        holds
            .answer(two, true, &digest, crate::record::Scope::Once)
            .unwrap_err()
            .status,
        409
    );
    assert_eq!(
        holds.collect(two),
        Some(Reply::TimedOut(Duration::from_secs(5)))
    );
    let forever = submit(&mut holds, &web_hold(None));
    assert!(holds
        .expire_due(later + Duration::from_secs(1 << 30))
        .is_empty());
    assert_eq!(holds.collect(forever), None);
    let history: Value = serde_json::from_str(&holds.history_json()).unwrap();
    let states: Vec<_> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|ended| (ended["hold"].as_u64().unwrap(), ended["state"].clone()))
        .collect();
    assert_eq!(states, [(two, "expired".into()), (one, "approved".into())]);
    let pending: Value = serde_json::from_str(&holds.pending_json(later)).unwrap();
    assert_eq!(pending[0]["hold"], forever);
    assert_eq!(pending[0]["expiresAt"], Value::Null);
    assert_eq!(
        pending[0]["record"],
        serde_json::from_str::<Value>(line).unwrap()
    );
}

#[test]
fn a_withdrawn_hold_ends_as_withdrawn_and_takes_no_answer() {
    let (line, call) = hold_line();
    let reasons = vec!["r".to_owned()];
    let hold = Hold {
        scopes: &[crate::record::Scope::Once],
        line: line.as_bytes(),
        id: "h-1",
        call: &call,
        reasons: &reasons,
        timeout: None,
    };
    let shared = shared();
    let mut holds = shared.lock();
    let digest = hold.digest();
    for id in [1, 2] {
        holds.entries.insert(
            id,
            Entry {
                scopes: vec![],
                scope: crate::record::Scope::Once,
                digest: digest.clone(),
                record: record_json(hold.line),
                display: display_json(&hold),
                timeout: None,
                expires: None,
                state: HoldState::Pending,
                withdrawn: None,
                collected: false,
                kept: None,
                reports: false,
            },
        );
    }
    assert!(holds.withdraw(1, "the client cancelled the call"));
    let refused = holds
        .answer(1, true, &digest, crate::record::Scope::Once)
        .unwrap_err();
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert!(refused.why.contains("withdrawn"), "{}", refused.why);
    // An answer given first stands.
    holds
        .answer(2, true, &digest, crate::record::Scope::Once)
        .unwrap();
    assert!(!holds.withdraw(2, "too late"));
    assert!(!holds.withdraw(3, "no such hold"));
    assert_eq!(
        holds.collect(2),
        Some(Reply::Decision {
            scope: crate::record::Scope::Once,
            approve: true,
            digest: Some(digest.clone())
        })
    );
    let pending: Value = serde_json::from_str(&holds.pending_json(Instant::now())).unwrap();
    assert_eq!(pending, serde_json::json!([]));
    let history: Value = serde_json::from_str(&holds.history_json()).unwrap();
    assert_eq!(history[1]["state"], "withdrawn");
    assert_eq!(history[1]["reason"], "the client cancelled the call");
    assert_eq!(history[0]["state"], "approved");
}

#[test]
fn the_history_forgets_the_oldest_collected_holds_only() {
    let (line, call) = hold_line();
    let reasons = vec!["r".to_owned()];
    let hold = Hold {
        scopes: &[crate::record::Scope::Once],
        line: line.as_bytes(),
        id: "h-1",
        call: &call,
        reasons: &reasons,
        timeout: None,
    };
    let shared = shared();
    let mut holds = shared.lock();
    let digest = hold.digest();
    for id in 1..=(HISTORY_HOLDS as u64 + 10) {
        holds.entries.insert(
            id,
            Entry {
                scopes: vec![],
                scope: crate::record::Scope::Once,
                digest: digest.clone(),
                record: record_json(hold.line),
                display: display_json(&hold),
                timeout: None,
                expires: None,
                state: HoldState::Pending,
                withdrawn: None,
                collected: false,
                kept: None,
                reports: false,
            },
        );
        holds
            .answer(id, false, &digest, crate::record::Scope::Once)
            .unwrap();
    }
    // Not yet collected: all kept, however many.
    assert_eq!(holds.entries.len(), HISTORY_HOLDS + 10);
    for id in 1..=(HISTORY_HOLDS as u64 + 10) {
        assert!(holds.collect(id).is_some());
    }
    assert_eq!(holds.entries.len(), HISTORY_HOLDS);
    assert_eq!(holds.entries.keys().next(), Some(&11));
}

/// One request to a page served by [`WebApprovals`], as any channel sends it.
fn http(web: &WebApprovals, method: &str, path: &str, body: String) -> (u16, String) {
    use http_body_util::{BodyExt, Full};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let host = web.bound().to_string();
    let token = web.url().split_once("#token=").unwrap().1.to_owned();
    runtime.block_on(async move {
        let stream = tokio::net::TcpStream::connect(&host).await.unwrap();
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(connection);
        let request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", &host)
            .header("authorization", format!("Bearer {token}"))
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    })
}

#[test]
fn a_web_human_waits_for_the_answer_given_over_http_and_declines_when_time_is_up() {
    let settled = Arc::new(Mutex::new(Vec::new()));
    let told = Arc::clone(&settled);
    let web = Arc::new(
        WebApprovals::start(
            "127.0.0.1:0".parse().unwrap(),
            "test",
            Some(Box::new(move |ticket: Ticket| {
                told.lock().unwrap().push(ticket.id())
            })),
        )
        .unwrap(),
    );
    assert!(web.url().starts_with("http://127.0.0.1:"));
    let (line, call) = hold_line();
    let asking = {
        let web = Arc::clone(&web);
        let call = call.clone();
        std::thread::spawn(move || {
            let reasons = vec!["amount is above the hold limit".to_owned()];
            let hold = Hold {
                scopes: &[crate::record::Scope::Once],
                line: line.as_bytes(),
                id: "h-1",
                call: &call,
                reasons: &reasons,
                timeout: Some(Duration::from_secs(600)),
            };
            let mut human = WebHuman::new(web);
            assert_eq!(human.kind(), AnsweredBy::Web);
            human.ask_hold(&hold)
        })
    };
    // The channel finds the hold in the list, then answers it.
    let pending = loop {
        let (status, body) = http(&web, "GET", "/api/holds", String::new());
        assert_eq!(status, 200);
        let pending: Vec<Value> = serde_json::from_str(&body).unwrap();
        if !pending.is_empty() {
            break pending;
        }
        assert!(!asking.is_finished());
        std::thread::yield_now();
    };
    let digest = crate::approve::prompt::record_digest(line.as_bytes());
    assert_eq!(pending[0]["digest"], digest.as_str());
    let body = serde_json::json!({"approve": true, "digest": digest}).to_string();
    let path = format!("/api/holds/{}", pending[0]["hold"]);
    assert_eq!(
        http(&web, "POST", &path, body.clone()),
        (
            200,
            r#"{"approved":true,"scope":"once","grant":null}"#.to_owned()
        )
    );
    assert_eq!(
        asking.join().unwrap(),
        Reply::Decision {
            scope: crate::record::Scope::Once,
            approve: true,
            digest: Some(digest.clone())
        }
    );
    assert_eq!(http(&web, "POST", &path, body).0, 409, "used once");
    assert_eq!(*settled.lock().unwrap(), [1]);
    // Nobody answers the next one: it declines when its time is up.
    let reasons = vec!["r".to_owned()];
    let hold = Hold {
        scopes: &[crate::record::Scope::Once],
        line: line.as_bytes(),
        id: "h-1",
        call: &call,
        reasons: &reasons,
        timeout: Some(Duration::from_millis(200)),
    };
    let mut human = WebHuman::new(Arc::clone(&web));
    assert_eq!(
        human.ask_hold(&hold),
        Reply::TimedOut(Duration::from_millis(200))
    );
    assert_eq!(*settled.lock().unwrap(), [1, 2]);
    let (_, history) = http(&web, "GET", "/api/history", String::new());
    let history: Value = serde_json::from_str(&history).unwrap();
    assert_eq!(history[0]["state"], "expired");
    assert_eq!(history[1]["state"], "approved");
    assert_eq!(
        human.ask("a prompt without its hold"),
        Reply::NobodyToAsk("the web page is shown whole holds, and this one came as text".into())
    );
    drop(human);
    Arc::try_unwrap(web).unwrap().stop();
}

#[test]
fn the_first_line_says_the_call_in_plain_words_whole_and_escaped() {
    assert_eq!(
        summary(
            "buyer",
            "send_payment",
            r#" {"to": "acme-travel", "amount": 750.10} "#
        ),
        "buyer wants to run send_payment: to acme-travel, amount 750.10"
    );
    assert_eq!(summary("a", "ping", "{}"), "a wants to run ping");
    assert_eq!(summary("a", "ping", ""), "a wants to run ping");
    // A long value is shown whole (issue 33: the page wraps it, never cuts it); nested values
    // are their JSON text on one line.
    assert_eq!(
        summary(
            "a",
            "t",
            r#"{"url":"https://example.test/a/very/long/path?with=query","deep":{"k": [1,
            2]}}"#
        ),
        "a wants to run t: url https://example.test/a/very/long/path?with=query, deep {\"k\": [1, 2]}"
    );
    // After four arguments, one ellipsis.
    assert_eq!(
        summary("a", "t", r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}"#),
        "a wants to run t: a 1, b 2, c 3, d 4, \u{2026}"
    );
    // Arguments that are not an object are shown as their text.
    assert_eq!(summary("a", "t", "[1, 2]"), "a wants to run t: [1, 2]");
    // Agent-written text is escaped as for the terminal.
    let bidi = "pay \u{202e}\u{2066} now 0123456789012345678901234";
    let args = serde_json::json!({ "memo": bidi, "k\u{1b}": "x" }).to_string();
    assert_eq!(
        summary("buyer\u{202e}", "send\npayment", &args),
        "buyer\\u{202e} wants to run send\\u{a}payment: memo pay \\u{202e}\\u{2066} now 0123456789012345678901234, k\\u{1b} x"
    );
    let (line, call) = hold_line();
    let reasons = vec!["amount is above the hold limit".to_owned()];
    let hold = Hold {
        scopes: &[crate::record::Scope::Once],
        line: line.as_bytes(),
        id: "h-1",
        call: &call,
        reasons: &reasons,
        timeout: None,
    };
    let display: Value = serde_json::from_str(display_json(&hold).get()).unwrap();
    assert_eq!(
        display["summary"],
        "buyer\\u{202e} wants to run send_payment: to <img src=x onerror=alert(1)>, amount 100.0000000000000001, deep [1,{\"k\":\"\\u001b[2J\"}], none {}, \u{2026}"
    );
}

/// Issue 25: the scope of a yes on the page. The API lists the scopes each pending hold offers;
/// a missing `scope` is `once`, `call` is kept, and one it does not know is refused with 400
/// and changes nothing.
#[test]
fn an_answer_carries_its_scope_and_an_unknown_scope_is_refused() {
    use crate::record::Scope;
    let web = Arc::new(WebApprovals::start("127.0.0.1:0".parse().unwrap(), "test", None).unwrap());
    let (line, call) = hold_line();
    let digest = crate::approve::prompt::record_digest(line.as_bytes());
    // Asks one hold that offers `once` and `call`, on a thread, and returns its reply.
    let ask = |scopes: &'static [Scope]| {
        let web = Arc::clone(&web);
        let call = call.clone();
        std::thread::spawn(move || {
            let reasons = vec!["amount is above the hold limit".to_owned()];
            let hold = Hold {
                scopes,
                line: line.as_bytes(),
                id: "h-1",
                call: &call,
                reasons: &reasons,
                timeout: Some(Duration::from_secs(600)),
            };
            WebHuman::new(web).ask_hold(&hold)
        })
    };
    let pending_one = || loop {
        let (status, body) = http(&web, "GET", "/api/holds", String::new());
        assert_eq!(status, 200);
        let pending: Vec<Value> = serde_json::from_str(&body).unwrap();
        if let Some(hold) = pending.into_iter().next() {
            break hold;
        }
        std::thread::yield_now();
    };
    let post = |hold: &Value, body: Value| {
        http(
            &web,
            "POST",
            &format!("/api/holds/{}", hold["hold"]),
            body.to_string(),
        )
    };

    // `call` offered, and given.
    let asking = ask(&[Scope::Once, Scope::Call]);
    let hold = pending_one();
    assert_eq!(hold["scopes"], serde_json::json!(["once", "call"]));
    for bogus in [
        serde_json::json!("bogus"),
        serde_json::json!("CALL"),
        serde_json::json!(""),
        serde_json::json!(1),
    ] {
        let (status, body) = post(
            &hold,
            serde_json::json!({"approve": true, "digest": digest, "scope": bogus}),
        );
        assert_eq!(status, 400, "{bogus}: {body}");
        assert!(!asking.is_finished(), "a refusal settles nothing");
    }
    let (_, still) = http(&web, "GET", "/api/holds", String::new());
    let still: Vec<Value> = serde_json::from_str(&still).unwrap();
    assert_eq!(
        still.len(),
        1,
        "still pending after the refusals: {still:?}"
    );
    assert_eq!(
        post(
            &hold,
            serde_json::json!({"approve": true, "digest": digest, "scope": "call"})
        ),
        (
            200,
            r#"{"approved":true,"scope":null,"grant":null,"kept":"by the program that holds the call, which says it in its audit log"}"#.to_owned()
        )
    );
    assert_eq!(
        asking.join().unwrap(),
        Reply::Decision {
            approve: true,
            digest: Some(digest.clone()),
            scope: Scope::Call,
        }
    );

    // No `scope`: once. Only `once` offered: the list says so.
    let asking = ask(&[Scope::Once]);
    let hold = pending_one();
    assert_eq!(hold["scopes"], serde_json::json!(["once"]));
    assert_eq!(
        post(
            &hold,
            serde_json::json!({"approve": true, "digest": digest})
        )
        .0,
        200
    );
    assert_eq!(
        asking.join().unwrap(),
        Reply::Decision {
            approve: true,
            digest: Some(digest.clone()),
            scope: Scope::Once,
        }
    );

    // A no with a wider scope is a no: it reaches nothing.
    let asking = ask(&[Scope::Once, Scope::Value]);
    let hold = pending_one();
    assert_eq!(hold["scopes"], serde_json::json!(["once", "value"]));
    assert_eq!(
        post(
            &hold,
            serde_json::json!({"approve": false, "digest": digest, "scope": "value"})
        ),
        (200, r#"{"approved":false}"#.to_owned())
    );
    let reply = asking.join().unwrap();
    assert_eq!(
        reply,
        Reply::Decision {
            approve: false,
            digest: Some(digest.clone()),
            scope: Scope::Once,
        }
    );
    let approval = crate::approve::approval_for(reply, AnsweredBy::Web);
    assert!(!approval.approved);
    assert_eq!(approval.scope, None);
    Arc::try_unwrap(web).unwrap().stop();
}
