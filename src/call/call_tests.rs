use super::*;
use crate::strict_json;

fn parse(line: &str) -> Result<Call, Malformed> {
    Call::parse_line(line.as_bytes()).map(|(call, _)| call)
}

#[test]
fn reads_a_full_call() {
    let call = parse(r#"{"agent":"buyer","tool":"send_payment","args":{"amount":750},"source":"user","instruction":"Pay","extra":1}"#).unwrap();
    assert_eq!(call.agent, "buyer");
    assert_eq!(call.tool, "send_payment");
    assert_eq!(call.args.amount().unwrap(), 750);
    assert_eq!(call.provenance, Provenance::Stated(Source::User));
    assert_eq!(call.instruction.as_deref(), Some("Pay"));
}

#[test]
fn args_default_to_empty_and_source_to_missing() {
    let call = parse(r#"{"agent":"a","tool":"t"}"#).unwrap();
    assert!(call.args.is_empty());
    assert_eq!(call.provenance, Provenance::Missing);
    assert_eq!(call.provenance.source(), Source::UntrustedContent);
}

#[test]
fn unknown_sources_count_as_untrusted() {
    for source in [
        r#""User""#,
        r#""admin""#,
        "7",
        "null",
        "[\"user\"]",
        r#""user ""#,
    ] {
        let call = parse(&format!(r#"{{"agent":"a","tool":"t","source":{source}}}"#)).unwrap();
        assert!(
            matches!(call.provenance, Provenance::Unrecognised(_)),
            "{source}"
        );
        assert!(!call.provenance.is_trusted());
    }
}

#[test]
fn malformed_calls_say_what_is_wrong() {
    let cases = [
        ("not json", "not valid JSON"),
        ("[1]", "an array, not a JSON object"),
        ("null", "null, not a JSON object"),
        (r#"{"tool":"t"}"#, "no `agent`"),
        (r#"{"agent":"","tool":"t"}"#, "`agent` is empty"),
        (
            r#"{"agent":"a","tool":["t"]}"#,
            "`tool` must be a non-empty string, not an array",
        ),
        (
            r#"{"agent":"a","tool":"t","args":"{}"}"#,
            "`args` must be an object, not a string",
        ),
        (
            r#"{"agent":"a","tool":"t","instruction":{}}"#,
            "`instruction` must be a string",
        ),
        (
            r#"{"agent":"a","tool":"t","tool":"u"}"#,
            "duplicate key `tool`",
        ),
        (
            r#"{"agent":"a","tool":"t","cwd":7}"#,
            "`cwd` must be a string (the working directory), not a number",
        ),
        (
            r#"{"agent":"a","tool":"t","cwd":null}"#,
            "`cwd` must be a string",
        ),
        (
            r#"{"agent":"a","tool":"t","cwd":"/w\u0000x"}"#,
            "`cwd` contains a NUL character",
        ),
    ];
    for (line, expected) in cases {
        let err = parse(line).unwrap_err();
        assert!(err.to_string().contains(expected), "{line}: {err}");
    }
}

#[test]
fn invalid_utf8_is_malformed() {
    let err = Call::parse_line(b"{\"agent\":\"\xff\"}").unwrap_err();
    assert!(err.to_string().contains("not valid UTF-8"), "{err}");
}

/// The reference path: the whole document, then the fields.
fn reference(line: &str) -> Result<Call, Malformed> {
    let text = line.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    let value = strict_json::parse(text)
        .map_err(|err| Malformed::new(format!("the line is not valid JSON: {err}")))?;
    let mut call = Call::from_value(&value)?;
    call.take_amount_text_from(text, &["args", "amount"]);
    Ok(call)
}

#[test]
fn the_fast_path_reads_every_line_as_the_reference_path_does() {
    let lines = [
        r#"{"agent":"buyer","tool":"send_payment","args":{"to":"acme","amount":750},"source":"user","instruction":"Pay"}"#,
        r#"{"agent":"b","tool":"t","args":{"amount":100.0000000000000001}}"#,
        r#"{"agent":"b","tool":"t","args":{"amount":1e2,"n":[1,{"x":null}]}}"#,
        r#"{"agent":"b","tool":"t","args":{"amount":-0}}"#,
        r#"{"agent":"b","tool":"t","args":{"amount":123456789012345678901234567890}}"#,
        r#"{"agent":"b","tool":"t","args":{"amount":"$750"}}"#,
        r#"{"agent":"b","tool":"t","args":{"amount":{"a":1,"a":2}}}"#,
        r#"{"agent":"b","tool":"t","args":{"amount":[1,2]}}"#,
        r#"{"agent":"b","tool":"t","args":{"\u0061mount":5.50}}"#,
        r#"{"agent":"b","tool":"t","args":{"amount":1,"amount":2}}"#,
        r#"{"agent":"b","tool":"t","args":{"to":"x","to":"y"}}"#,
        r#"{"agent":"b","tool":"t","extra":{"k":1,"k":2}}"#,
        r#"{"agent":"b","tool":"t","extra":{"k":1},"more":[{"k":[]}]}"#,
        r#"{"agent":"b","tool":"t","\u0074ool":"u"}"#,
        r#"{"\u0061gent":"b\n\"","tool":"t\u00e9","source":"\u0075ser"}"#,
        r#"{"agent":"b","tool":"t","source":"User"}"#,
        r#"{"agent":"b","tool":"t","source":"us\"er"}"#,
        r#"{"agent":"b","tool":"t","source":7}"#,
        r#"{"agent":"b","tool":"t","source":null}"#,
        r#"{"agent":"b","tool":"t","instruction":null}"#,
        r#"{"agent":"b","tool":"t","cwd":"/w/proj"}"#,
        r#"{"agent":"b","tool":"t","cwd":"/w/\u00e9"}"#,
        r#"{"agent":"b","tool":"t","cwd":"/w\u0000"}"#,
        r#"{"agent":"b","tool":"t","cwd":["/w"]}"#,
        r#"{"agent":"b","tool":"t","args":[]}"#,
        r#"{"agent":"","tool":"t"}"#,
        r#"{"agent":"b","tool":7}"#,
        r#"{"tool":"t"}"#,
        r#"{"agent":"b","tool":"t","n":1e999}"#,
        r#"{"agent":"b","tool":"t"} {}"#,
        r#"{"agent":"b","tool":"t","#,
        r#"[{"agent":"b","tool":"t"}]"#,
        r#""text""#,
        "",
        " \t{\"agent\":\"b\",\"tool\":\"t\"}\r",
    ];
    for line in lines {
        let fast = Call::parse_line(line.as_bytes()).map(|(call, _)| call);
        assert_eq!(fast, reference(line), "{line}");
    }
    let mut deep = String::from(r#"{"agent":"b","tool":"t","args":{"x":"#);
    deep += &"[".repeat(300);
    deep += &"]".repeat(300);
    deep += "}}";
    let fast = Call::parse_line(deep.as_bytes()).map(|(call, _)| call);
    assert_eq!(fast, reference(&deep));
    assert!(fast.unwrap_err().to_string().contains("recursion limit"));
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

    /// Calls cut, spliced and salted with the bytes JSON cares about: whatever the scanner
    /// accepts, the reference path accepts with the same result.
    #[test]
    fn the_scanner_agrees_with_the_reference_path_on_mangled_calls(
        base in proptest::sample::select(vec![
            r#"{"agent":"buyer","tool":"send_payment","args":{"to":"acme","amount":750,"memo":"a\"b"},"source":"user","instruction":"Pay"}"#,
            r#"{ "agent" : "b" , "tool" : "t" , "args" : { "amount" : "$1.50" , "n" : [ 1 , -2.5 , { "k" : null } ] } , "trace" : { "s" : true } }"#,
            r#"{"agent":"scout","tool":"fetch_page","args":{"url":"https://x.test/\u00e9"},"source":"untrusted-content"}"#,
        ]),
        edits in proptest::collection::vec(
            (0usize..200, 0usize..3, proptest::sample::select(vec![
                "\"", "\\", "\\u", "\\ud800", "\\u0061", "e5", "E", "0", "01", "-", ".", "{",
                "}", "[", "]", ",", ":", " ", "\t", "\n", "\u{1}", "é", "true", "nul", "1e999",
                "\"amount\":", "\"agent\":\"x\",", "\"tool\":7,", "\"args\":{},",
            ])),
            0..4,
        ),
    ) {
        let text = crate::json_lex::mangled(base, edits);
        if let Some(call) = scan::call(&text) {
            proptest::prop_assert_eq!(Ok(call), reference(&text), "{}", text);
        }
    }
}

#[test]
fn calls_nested_too_deep_for_their_records_are_malformed() {
    let nested = |levels: usize| {
        format!(
            r#"{{"agent":"a","tool":"t","args":{{"x":{}1{}}}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
    };
    assert!(parse(&nested(MAX_CALL_DEPTH - 2)).is_ok());
    let err = parse(&nested(MAX_CALL_DEPTH)).unwrap_err();
    assert!(err.to_string().contains("levels deep; at most 64"), "{err}");
    let quoted_brackets = format!(
        r#"{{"agent":"a","tool":"t","args":{{"x":"{}"}}}}"#,
        "[".repeat(500)
    );
    assert!(parse(&quoted_brackets).is_ok());
}

#[test]
fn returns_the_trimmed_text() {
    let (_, text) = Call::parse_line(b" {\"agent\":\"a\",\"tool\":\"t\"}\r").unwrap();
    assert_eq!(text, r#"{"agent":"a","tool":"t"}"#);
}
