use super::*;

const ASIDE: &str = "sc-hook: the response was too large or unreadable and was not read";

/// `text` read as the rest of an oversized input (the prefix split anywhere gives the same).
fn scanned(text: &str) -> Result<String> {
    let bytes = text.as_bytes();
    let whole = without_responses(Vec::new(), bytes)?;
    for split in [1, bytes.len() / 2, bytes.len().saturating_sub(1)] {
        let split = split.min(bytes.len());
        let parts = without_responses(bytes[..split].to_vec(), &bytes[split..])?;
        assert_eq!(parts, whole, "split at {split}");
    }
    Ok(String::from_utf8(whole).unwrap())
}

#[test]
fn each_response_is_put_aside_and_the_rest_kept_as_written() {
    for (text, kept) in [
        (
            r#"{"session_id":"s","tool_response":{"a":[1,"}]",{"b":"\"x"}]},"cwd":"/w"}"#,
            format!(r#"{{"session_id":"s","tool_response":"{ASIDE}","cwd":"/w"}}"#),
        ),
        (
            r#" { "output" : "a \"quoted\" }" , "toolResult": 12.5e3 ,"tool_output":true}"#,
            format!(
                r#" {{ "output" : "{ASIDE}" , "toolResult": "{ASIDE}" ,"tool_output":"{ASIDE}"}}"#
            ),
        ),
        (
            r#"{"tool_input":{"output":[1,2]},"result_json":null}"#,
            format!(r#"{{"tool_input":{{"output":[1,2]}},"result_json":"{ASIDE}"}}"#),
        ),
        // A key like a response's but longer is kept; one escaped is a response's.
        (
            r#"{"tool_responses":[1],"tool\u005fresponse":2}"#,
            format!(r#"{{"tool_responses":[1],"tool\u005fresponse":"{ASIDE}"}}"#),
        ),
        ("{}\n", "{}\n".to_string()),
    ] {
        let out = scanned(text).unwrap();
        assert_eq!(out, kept, "{text}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap();
    }
}

#[test]
fn text_that_is_not_one_object_is_refused() {
    for text in [
        "",
        "[1]",
        r#"{"a":1"#,
        r#"{"a":1}{"b":2}"#,
        r#"{"a":1,}"#,
        r#"{"tool_response":[1,2}"#,
        r#"{"tool_response":[{]},"tool_input":{}}"#,
        r#"{"tool_response":"unended}"#,
        r#"{"a" 1}"#,
        r#"{"a":,"b":1}"#,
        r#"{"tool_response":1 2}"#,
    ] {
        assert!(scanned(text).is_err(), "{text}");
    }
}

#[test]
fn what_is_kept_is_bounded_and_a_response_of_any_length_is_not() {
    let response = "x".repeat(MAX_INPUT_BYTES + 10);
    let text = format!(r#"{{"session_id":"s","tool_response":"{response}"}}"#);
    let out = without_responses(Vec::new(), text.as_bytes()).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(r#"{{"session_id":"s","tool_response":"{ASIDE}"}}"#)
    );
    let text = format!(r#"{{"tool_input":"{response}"}}"#);
    let err = without_responses(Vec::new(), text.as_bytes()).unwrap_err();
    assert!(
        err.to_string().contains("besides its tool's response"),
        "{err}"
    );
    let deep = format!(r#"{{"tool_response":{}"#, "[".repeat(MAX_DEPTH + 1));
    let err = without_responses(Vec::new(), deep.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("nests deeper"), "{err}");
}
