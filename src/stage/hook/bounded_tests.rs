use super::*;

fn many(n: usize) -> String {
    format!("[{}]", vec!["1"; n].join(","))
}

#[test]
fn values_are_counted_outside_strings_only() {
    assert_eq!(count_values(br#"1"#), 1);
    assert_eq!(count_values(br#"[1,2,3]"#), 4);
    assert_eq!(count_values(br#"{"a":1,"b":[true,null]}"#), 5);
    // Brackets and commas in a string, escaped quotes and backslashes included, are text.
    assert_eq!(count_values(br#"["a,[{", "b\",{", "c\\", ","]"#), 5);
    assert_eq!(count_values(many(1000).as_bytes()), 1001);
}

#[test]
fn an_input_within_the_bound_is_read_as_it_is() {
    let input = format!(r#"{{"tool_input":{{"a":{}}}}}"#, many(1000));
    assert!(matches!(
        bounded(input.as_bytes()).unwrap(),
        Cow::Borrowed(_)
    ));
}

#[test]
fn a_call_of_too_many_values_is_refused() {
    let input = format!(
        r#"{{"hook_event_name":"PreToolUse","tool_input":{{"a":{}}}}}"#,
        many(MAX_INPUT_VALUES)
    );
    let err = bounded(input.as_bytes()).unwrap_err().to_string();
    assert!(err.contains("over the 100000 sc-hook reads"), "{err}");
    // Even beside a response, and whatever the response's size.
    let input = format!(
        r#"{{"tool_input":{{"a":{}}},"tool_response":{}}}"#,
        many(MAX_INPUT_VALUES),
        many(10)
    );
    let err = bounded(input.as_bytes()).unwrap_err().to_string();
    assert!(err.contains("besides the tool's response"), "{err}");
    // Not one JSON object, or not UTF-8: refused, not looked into.
    let input = format!("{}garbage", many(MAX_INPUT_VALUES + 1));
    assert!(bounded(input.as_bytes()).is_err());
    let mut input = many(MAX_INPUT_VALUES + 1).into_bytes();
    input.push(0xff);
    assert!(bounded(&input).is_err());
}

#[test]
fn a_response_of_too_many_values_is_put_aside() {
    for key in RESPONSE_KEYS {
        let input = format!(
            r#"{{"hook_event_name":"PostToolUse","tool_input":{{"a":1}}, "{key}" : {} ,"tool_use_id":"t"}}"#,
            many(MAX_INPUT_VALUES + 5)
        );
        let read = bounded(input.as_bytes()).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&read).unwrap();
        assert_eq!(
            value[key], "sc-hook: the response was too large or unreadable and was not read",
            "{key}"
        );
        assert_eq!(value["tool_input"]["a"], 1);
        assert_eq!(value["tool_use_id"], "t");
    }
}

#[test]
fn a_response_the_parser_cannot_read_is_put_aside() {
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    for response in [
        deep.as_str(),
        r#""\ud800""#,
        r#"{"a":"x\"}\\","b":[1,{"c":"]"}]}"#,
    ] {
        let input = format!(
            r#"{{"hook_event_name":"PostToolUse","tool_response":{response},"tool_input":{{"a":"}}"}}}}"#
        );
        let read = readable(input.clone().into_bytes()).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&read).unwrap();
        assert_eq!(value["tool_input"]["a"], "}", "{response}");
        if serde_json::from_str::<serde_json::Value>(&input).is_ok() {
            // Readable: left as it is.
            assert_eq!(read, input.as_bytes());
        } else {
            assert_eq!(
                value["tool_response"],
                "sc-hook: the response was too large or unreadable and was not read"
            );
        }
    }
    // Without a response, or unreadable elsewhere: left for the parser to refuse.
    for input in [r#"{"tool_input":"\ud800"}"#, "{", r#"{"tool_response":1,}"#] {
        assert_eq!(
            readable(input.as_bytes().to_vec()).unwrap(),
            input.as_bytes()
        );
    }
}

#[test]
fn a_response_never_takes_in_the_members_after_it() {
    // Brackets that do not pair, an empty value, text after a token: not one value, so the
    // input is left for the parser to refuse, never read without what followed.
    for input in [
        r#"{"hook_event_name":"PreToolUse","output":[{],"tool_input":{"command":"rm -rf /"}},"tool_input":{"command":"ls"}}"#,
        r#"{"tool_input":{"command":"ls"},"output":,"x":1}"#,
        r#"{"output":1 {"a":"\ud800"} ,"tool_input":{"command":"ls"}}"#,
    ] {
        assert_eq!(response_spans(input.as_bytes()), None, "{input}");
        assert_eq!(
            readable(input.as_bytes().to_vec()).unwrap(),
            input.as_bytes()
        );
    }
    // Tokens and paired brackets are values.
    let input = br#"{"output":-1.5e3,"tool_response":[{"a":"]}"}],"x":true}"#;
    assert_eq!(response_spans(input).unwrap().len(), 2);
}

#[test]
fn a_response_key_is_known_however_it_is_escaped() {
    for (raw, response) in [
        ("tool_response", true),
        (r"tool\u005fresponse", true),
        (
            r"\u0074\u006f\u006f\u006c\u005f\u0072\u0065\u0073\u0070\u006f\u006e\u0073\u0065",
            true,
        ),
        (r"t\u006fol\u0072esult", false),
        (r"t\u006folResult", true),
        (r"tool\u005fresponses", false),
        (r"tool\u005", false),
        ("tool_input", false),
    ] {
        assert_eq!(is_response_key(raw.as_bytes()), response, "{raw}");
    }
    assert_eq!(MAX_RESPONSE_KEY, "tool_response".len());
    let input = format!(
        r#"{{"hook_event_name":"PostToolUse","tool\u005fresponse":{}}}"#,
        many(MAX_INPUT_VALUES + 5)
    );
    let value: serde_json::Value =
        serde_json::from_slice(&bounded(input.as_bytes()).unwrap()).unwrap();
    assert_eq!(
        value["tool_response"],
        "sc-hook: the response was too large or unreadable and was not read"
    );
}
