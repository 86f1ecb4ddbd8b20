//! Tests of how sc-mcp reads client messages and ids, and the responses it writes.

use super::*;

fn classify(text: &str) -> ClientMessage<'_> {
    classify_client_message(text.as_bytes())
}

fn refused_code(message: ClientMessage) -> (Vec<Value>, i64, String) {
    match message {
        ClientMessage::Refused {
            ids, code, reason, ..
        } => (ids, code, reason),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn a_tool_call_is_read_with_its_name_and_arguments() {
    let text = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/x","amount":1.50}}}"#;
    match classify(text) {
        ClientMessage::ToolCall {
            id,
            name,
            arguments,
            ..
        } => {
            assert_eq!(id.value, json!(7));
            assert_eq!(id.key, IdKey::Integer(7));
            assert_eq!(name, "read_file");
            assert_eq!(arguments["path"], "/x");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn other_messages_are_requests_notifications_or_responses() {
    assert_eq!(
        classify(r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#),
        ClientMessage::Request {
            id: RequestId {
                value: json!("a"),
                key: IdKey::String("a".into())
            },
            method: "tools/list".into()
        }
    );
    assert_eq!(
        classify(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        ClientMessage::Notification { cancels: None }
    );
    assert_eq!(
        classify(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}"#
        ),
        ClientMessage::Notification {
            cancels: Some(IdKey::Integer(4))
        }
    );
    assert_eq!(
        classify(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        ClientMessage::Response
    );
}

#[test]
fn malformed_messages_are_refused_and_answered_only_when_they_have_an_id() {
    let (ids, code, _) = refused_code(classify("not json"));
    assert!(ids.is_empty());
    assert_eq!(code, PARSE_ERROR);
    // A duplicate key: the server might read the other `method`.
    let (ids, _, reason) = refused_code(classify(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","method":"tools/call","params":{"name":"x"}}"#,
    ));
    assert_eq!(ids, [json!(3)]);
    assert!(reason.contains("duplicate key `method`"), "{reason}");
    for (text, expected) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            "must be a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
            "no `params.name`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            "no `params`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#,
            "must be an object",
        ),
    ] {
        let (ids, code, reason) = refused_code(classify(text));
        assert_eq!(ids, [json!(1)], "{text}");
        assert_eq!(code, INVALID_PARAMS, "{text}");
        assert!(reason.contains(expected), "{text}: {reason}");
    }
    let (ids, _, _) = refused_code(classify(
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
    ));
    assert!(ids.is_empty(), "a tools/call notification is dropped");
    let (ids, code, _) = refused_code(classify(
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
    ));
    assert_eq!(ids, [Value::Null], "answered with a null id");
    assert_eq!(code, INVALID_REQUEST);
    let (ids, _, _) = refused_code(classify("\u{0}[1,2]"));
    assert!(ids.is_empty());
}

#[test]
fn a_request_id_is_a_string_or_an_integer_written_as_one() {
    let id = |text: &str| IdKey::of_request(&serde_json::from_str(text).unwrap());
    assert_eq!(id("2"), Ok(IdKey::Integer(2)));
    assert_eq!(id("-7"), Ok(IdKey::Integer(-7)));
    assert_eq!(id("0"), Ok(IdKey::Integer(0)));
    assert_eq!(
        id("9007199254740991"),
        Ok(IdKey::Integer(9_007_199_254_740_991))
    );
    assert_eq!(
        id("-9007199254740991"),
        Ok(IdKey::Integer(-9_007_199_254_740_991))
    );
    assert_eq!(id(r#""2""#), Ok(IdKey::String("2".into())));
    assert_eq!(id(r#""""#), Ok(IdKey::String(String::new())));
    for refused in [
        "2.0",
        "1e0",
        "1E0",
        "-0",
        "0.5",
        "9007199254740992",
        "-9007199254740992",
        "18446744073709551615",
        "123456789012345678901234567890",
        "null",
        "true",
        "[1]",
        r#"{"a":1}"#,
    ] {
        assert!(id(refused).is_err(), "{refused}");
    }
    // Invalid JSON never gets this far.
    assert!(serde_json::from_str::<Value>("01").is_err());
}

#[test]
fn an_id_that_names_a_request_is_read_by_value() {
    let key = |text: &str| IdKey::of_reference(&serde_json::from_str(text).unwrap());
    for (text, expected) in [
        ("2", 2),
        ("2.0", 2),
        ("1e0", 1),
        ("1E0", 1),
        ("-0", 0),
        ("-3.0", -3),
    ] {
        assert_eq!(key(text), Some(IdKey::Integer(expected)), "{text}");
    }
    assert_eq!(key(r#""2""#), Some(IdKey::String("2".into())));
    assert_ne!(key(r#""2""#), key("2"), "a string never names an integer");
    for nothing in [
        "2.5",
        "9007199254740992",
        "1e300",
        "18446744073709551615",
        "null",
        "true",
        "[2]",
    ] {
        assert_eq!(key(nothing), None, "{nothing}");
    }
}

#[test]
fn requests_that_readers_could_read_apart_are_refused() {
    for (text, expected_ids) in [
        (
            r#"{"jsonrpc":"2.0","id":2.0,"method":"tools/list"}"#,
            vec![json!(2.0)],
        ),
        (
            r#"{"jsonrpc":"2.0","id":1e0,"method":"tools/call","params":{"name":"x"}}"#,
            vec![json!(1.0)],
        ),
        (
            r#"{"jsonrpc":"2.0","id":[1],"method":"tools/list"}"#,
            vec![Value::Null],
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"notifications/cancelled","params":{"requestId":1}}"#,
            vec![json!(3)],
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","result":{}}"#,
            vec![json!(4)],
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/x","error":{}}"#,
            vec![],
        ),
    ] {
        let (ids, code, _) = refused_code(classify(text));
        assert_eq!(ids, expected_ids, "{text}");
        assert_eq!(code, INVALID_REQUEST, "{text}");
    }
    // A cancellation names its request by value.
    assert_eq!(
        classify(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2.0}}"#
        ),
        ClientMessage::Notification {
            cancels: Some(IdKey::Integer(2))
        }
    );
}

#[test]
fn an_answer_to_one_of_sc_mcps_questions_is_its_own() {
    match classify(
        r#"{"jsonrpc":"2.0","id":"sc-mcp-elicit-3","result":{"action":"accept","content":{"approve":true}}}"#,
    ) {
        ClientMessage::OwnAnswer { id, answer } => {
            assert_eq!(id, "sc-mcp-elicit-3");
            assert_eq!(answer["result"]["action"], "accept");
        }
        other => panic!("{other:?}"),
    }
    // Any answer with such an id, even a malformed one, is sc-mcp's to read.
    assert!(matches!(
        classify(r#"{"jsonrpc":"2.0","id":"sc-mcp-elicit-3"}"#),
        ClientMessage::OwnAnswer { .. }
    ));
    // Other answers go to the server; a request with such an id is the client's own.
    for text in [
        r#"{"jsonrpc":"2.0","id":"sc-mcp-elicit","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
    ] {
        assert_eq!(classify(text), ClientMessage::Response, "{text}");
    }
    assert!(matches!(
        classify(r#"{"jsonrpc":"2.0","id":"sc-mcp-elicit-3","method":"tools/list"}"#),
        ClientMessage::Request { .. }
    ));
}

#[test]
fn a_batch_is_refused_whole() {
    match classify(
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}},{"jsonrpc":"2.0","method":"n"}]"#,
    ) {
        ClientMessage::Refused { ids, batch, .. } => {
            assert!(batch);
            assert_eq!(ids, [json!(1)]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn responses_sc_mcp_writes_are_json_rpc() {
    let line = refusal_response(&json!("x"), "denied: because");
    let value: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(value["id"], "x");
    assert_eq!(value["result"]["isError"], true);
    assert_eq!(value["result"]["content"][0]["text"], "denied: because");
    let line = error_response(&json!(2), INVALID_PARAMS, "bad");
    let value: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(value["error"]["code"], INVALID_PARAMS);
    assert!(line.ends_with(b"}\n"));
}

#[test]
fn keys_a_case_blind_server_reads_otherwise_are_refused() {
    // Each of these ran a denied tool on a Go server in a review: `encoding/json` matches names
    // without case (`ſ` as `s`) and takes the last of two.
    for (text, says) in [
        (
            r#"{"jsonrpc":"2.0","id":5,"Method":"tools/call","params":{"name":"write_file"}}"#,
            "`Method`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","Name":"write_file"}}"#,
            "`name` and `Name`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"ping","METHOD":"tools/call","params":{"name":"write_file"}}"#,
            "`method` and `METHOD`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"pay","arguments":{"amount":5},"Arguments":{"amount":5000}}}"#,
            "`arguments` and `Arguments`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"pay","arguments":{"amount":5},"argumentſ":{"amount":5000}}}"#,
            "`argumentſ`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"pay","argumentS":{"amount":5000}}}"#,
            "`argumentS`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"pay","arguments":{"to":{"iban":"A","IBAN":"B"}}}}"#,
            "`params.arguments.to`",
        ),
        (r#"{"jsonrpc":"2.0","id":12,"Result":{}}"#, "`Result`"),
    ] {
        let (ids, code, reason) = refused_code(classify(text));
        assert_eq!(code, INVALID_REQUEST, "{text}");
        assert_eq!(ids.len(), 1, "{text}");
        assert!(reason.contains(says), "{text}: {reason}");
    }
    // A cancellation a case-blind server reads, while the gate still waits for the call.
    let (ids, code, reason) = refused_code(classify(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"RequestId":4}}"#,
    ));
    assert_eq!((ids.len(), code), (0, INVALID_REQUEST));
    assert!(reason.contains("`RequestId`"), "{reason}");
    // A key of the arguments that is only another key's in upper case, or upper case in a
    // value, is read as ever.
    assert!(matches!(
        classify(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Pay","arguments":{"IBAN":"DE00","Note":"HELLO"}}}"#
        ),
        ClientMessage::ToolCall { .. }
    ));
}

#[test]
fn a_task_augmented_tool_call_is_refused() {
    let (ids, code, reason) = refused_code(classify(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch","arguments":{},"task":{"ttl":60000}}}"#,
    ));
    assert_eq!((ids, code), (vec![json!(3)], INVALID_PARAMS));
    assert!(reason.contains("task-augmented"), "{reason}");
}

#[test]
fn a_known_method_spelt_otherwise_is_refused() {
    for (method, known) in [
        ("Tools/call", "tools/call"),
        ("TOOLS/CALL", "tools/call"),
        ("tools/call ", "tools/call"),
        ("tools/call\\u0000", "tools/call"),
        ("\\ttools/call", "tools/call"),
        ("tools/call\\u200b", "tools/call"),
        ("ｔｏｏｌｓ/ｃａｌｌ", "tools/call"),
        ("Resources/Read", "resources/read"),
        ("prompts/get\\n", "prompts/get"),
        ("logging/setlevel", "logging/setLevel"),
        // Found by a second review: what a router that collapses, trims or decodes reads alike.
        ("tools//call", "tools/call"),
        ("tools/call/", "tools/call"),
        ("tools%2Fcall", "tools/call"),
        ("tools%2fcall", "tools/call"),
        ("tools\\\\call", "tools/call"),
        ("tools\\u2215call", "tools/call"),
        ("%74ools/call", "tools/call"),
    ] {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"{method}","params":{{"name":"write_file"}}}}"#
        );
        let (ids, code, reason) = refused_code(classify(&text));
        assert_eq!((ids, code), (vec![json!(5)], -32600), "{method}");
        assert!(reason.contains(&format!("for `{known}`")), "{reason}");
    }
    // As a notification: refused, with nobody to answer.
    let (ids, _, _) = refused_code(classify(
        r#"{"jsonrpc":"2.0","method":"Notifications/Cancelled","params":{"requestId":1}}"#,
    ));
    assert!(ids.is_empty());
    // Known methods as written, and methods sc-mcp does not know, are not.
    assert!(matches!(
        classify(
            r#"{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"info"}}"#
        ),
        ClientMessage::Request { .. }
    ));
    assert!(matches!(
        classify(r#"{"jsonrpc":"2.0","id":5,"method":"Vendor/Thing"}"#),
        ClientMessage::Request { .. }
    ));
}
