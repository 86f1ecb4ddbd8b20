use super::*;
use serde_json::json;

fn rules(value: Value) -> Result<Vec<ArgRule>, ArgRulesError> {
    from_json("toolArgs", &value)
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[test]
fn args_outside_the_schema_name_the_argument_and_the_rule() {
    let rules = rules(json!({"send_email": {"schema": {"properties": {"to": {"type": "string", "pattern": "^[a-z0-9._-]+@example\\.com$"}}}}})).unwrap();
    assert!(rules[0]
        .check("send_email", &args(json!({"to": "ann@example.com"})))
        .is_none());
    let Violation(reason) = rules[0]
        .check("send_email", &args(json!({"to": "x@evil.test"})))
        .unwrap();
    assert_eq!(reason, "argument `to` = \"x@evil.test\" is not allowed for send_email by the policy (/properties/to/pattern)");
}

#[test]
fn a_missing_required_argument_is_a_violation_of_the_whole() {
    let rules = rules(json!({"delete_file": {"schema": {"required": ["path"]}}})).unwrap();
    let Violation(reason) = rules[0].check("delete_file", &Map::new()).unwrap();
    assert!(
        reason.contains("the arguments of delete_file are not allowed")
            && reason.contains("/required"),
        "{reason}"
    );
}

#[test]
fn bad_schemas_are_load_errors_naming_the_tool_and_path() {
    let cases = [
        (
            json!({"t": {"schema": {"type": "strin"}}}),
            "toolArgs.t.schema",
        ),
        (
            json!({"t": {"schema": {"properties": {"to": {"pattern": "(unclosed"}}}}}),
            "/properties/to/pattern",
        ),
        (
            json!({"t": {"schema": {"$ref": "https://example.com/schema.json"}}}),
            "toolArgs.t.schema",
        ),
        (
            json!({"t": {"schema": {"$ref": "other.json"}}}),
            "toolArgs.t.schema",
        ),
        (
            json!({"t": {"schema": {}, "whenTainted": "sometimes"}}),
            "toolArgs.t.whenTainted",
        ),
        (
            json!({"t": {"schema": {}, "whenTaint": "allow"}}),
            "did you mean `whenTainted`?",
        ),
        (
            json!({"t": {"whenTainted": "allow"}}),
            "`schema` is required",
        ),
        (json!({"a*b": {"schema": {}}}), "toolArgs.a*b"),
        (json!(["t"]), "expected an object"),
    ];
    for (value, expected) in cases {
        let err = rules(value.clone()).unwrap_err().to_string();
        assert!(err.contains(expected), "{value}: {err}");
    }
}

#[test]
fn local_references_are_fine() {
    let rules = rules(json!({"t": {"schema": {"$defs": {"payee": {"enum": ["acme"]}}, "properties": {"to": {"$ref": "#/$defs/payee"}}}}})).unwrap();
    assert!(rules[0].check("t", &args(json!({"to": "acme"}))).is_none());
    assert!(rules[0].check("t", &args(json!({"to": "evil"}))).is_some());
}

/// Args as a call carries them: parsed from their JSON text, digits as written.
fn call_args(text: &str) -> crate::call::Args {
    let line = format!(r#"{{"agent":"a","tool":"t","args":{text}}}"#);
    crate::call::Call::parse_line(line.as_bytes())
        .unwrap()
        .0
        .args
}

/// Asserts that `schema` does not load, with an error on its key that says `expected`.
fn refused_saying(schema: Value, expected: &str) {
    let err = rules(json!({"t": {"schema": schema.clone()}}))
        .unwrap_err()
        .to_string();
    assert!(err.contains(expected), "{schema}: {err}");
    assert!(err.starts_with("key `toolArgs.t.schema`"), "{err}");
}

fn verdict(schema: Value, args_text: &str) -> Option<String> {
    let rules = rules(json!({"t": {"schema": schema}})).unwrap();
    check_all(&rules, "t", &call_args(args_text)).map(|Violation(reason)| reason)
}

#[test]
fn formats_are_checked() {
    let schema = json!({"properties": {
        "to": {"type": "string", "format": "email"},
        "on": {"type": "string", "format": "date"},
        "id": {"type": "string", "format": "uuid"},
        "host": {"type": "string", "format": "ipv4"}
    }});
    for inside in [
        r#"{"to": "ann@example.com"}"#,
        r#"{"to": "ann@[127.0.0.1]"}"#,
        r#"{"on": "2026-02-28"}"#,
        r#"{"id": "6f1c2a3e-8b4d-4c5e-9f60-1a2b3c4d5e6f"}"#,
        r#"{"host": "192.0.2.7"}"#,
    ] {
        assert_eq!(verdict(schema.clone(), inside), None, "{inside}");
    }
    for (outside, rule) in [
        (r#"{"to": "anything at all"}"#, "/properties/to/format"),
        (r#"{"to": "Eve <eve@evil.test>"}"#, "/properties/to/format"),
        (r#"{"to": "ann@example.com\n"}"#, "/properties/to/format"),
        (r#"{"on": "2026-02-30"}"#, "/properties/on/format"),
        (r#"{"id": "not-a-uuid"}"#, "/properties/id/format"),
        (r#"{"host": "192.0.2.256"}"#, "/properties/host/format"),
    ] {
        let reason = verdict(schema.clone(), outside).expect(outside);
        assert!(reason.contains(rule), "{outside}: {reason}");
    }
}

#[test]
fn an_unknown_format_is_a_load_error_naming_it() {
    for (schema, expected) in [
        (
            json!({"properties": {"to": {"format": "emial"}}}),
            "the format \"emial\" at /properties/to/format is not one the gate can check",
        ),
        (
            json!({"properties": {"to": {"format": "Email"}}}),
            "did you mean \"email\"?",
        ),
        (json!({"format": "isbn"}), "the format \"isbn\" at /format"),
        (
            json!({"format": "phone"}),
            "the formats checked are date, date-time",
        ),
        (
            json!({"$defs": {"p": {"format": "iban"}}, "properties": {"to": {"$ref": "#/$defs/p"}}}),
            "the format \"iban\" at /$defs/p/format",
        ),
    ] {
        refused_saying(schema, expected);
    }
    // A property that happens to be named `format` is not the keyword.
    assert!(
        rules(json!({"t": {"schema": {"properties": {"format": {"type": "string"}}}}})).is_ok()
    );
}

/// A value each format refuses (and the validator would let pass, were the format unknown to
/// it: it ignores those).
const REFUSED_BY: &[(&str, &str)] = &[
    ("date", "2026-02-30"),
    ("date-time", "2026-02-28 25:00"),
    ("duration", "P1Y2X"),
    ("email", "Eve <eve@evil.test>"),
    ("hostname", "-bad-.example"),
    ("idn-email", "no at sign"),
    ("idn-hostname", "-bad-.example"),
    ("ipv4", "192.0.2.256"),
    ("ipv6", "1:2:3"),
    ("iri", "no scheme"),
    ("iri-reference", "\\\\host"),
    ("json-pointer", "no/slash"),
    ("period", "2026"),
    ("regex", "(unclosed"),
    ("relative-json-pointer", "/x"),
    ("time", "25:00:00Z"),
    ("uri", "no scheme"),
    ("uri-reference", "\\\\host"),
    ("uri-template", "{unclosed"),
    ("uuid", "not-a-uuid"),
];

/// The validator with every format it knows asserted and none added, as [`Compiled`] builds it.
fn crate_checks(format: &str, value: &str) -> bool {
    let mut compiler = boon::Compiler::new();
    compiler.enable_format_assertions();
    compiler
        .add_resource("urn:t", json!({"format": format}))
        .unwrap();
    let mut schemas = boon::Schemas::new();
    let index = compiler.compile("urn:t", &mut schemas).unwrap();
    schemas.validate(&json!(value), index).is_err()
}

#[test]
fn the_format_list_is_what_the_crate_checks() {
    assert_eq!(
        REFUSED_BY.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        FORMATS
    );
    for (name, refused) in REFUSED_BY {
        assert!(
            crate_checks(name, refused),
            "{name} is listed but not checked"
        );
        let verdict = verdict(
            json!({"properties": {"x": {"format": name}}}),
            &json!({ "x": refused }).to_string(),
        );
        assert!(verdict.is_some(), "{name}: {refused} passed");
    }
    // Formats that no draft has, or that the crate does not check: all load errors. Were one
    // checked, list it.
    for name in [
        "phone", "iban", "Email", "uuid4", "isbn", "semver", "int32", "binary",
    ] {
        let refused = ["", "x", "(unclosed", "-1", "no at sign", "2026-02-30"]
            .iter()
            .any(|value| crate_checks(name, value));
        assert!(!refused, "{name} is checked: add it to FORMATS");
        assert!(
            rules(json!({"t": {"schema": {"format": name}}})).is_err(),
            "{name}"
        );
    }
}

#[test]
fn numbers_a_float_does_not_hold_as_written_are_denied() {
    let schema = json!({"properties": {
        "price": {"type": "number", "maximum": 100},
        "items": {"type": "array", "items": {"properties": {"n": {"maximum": 100}}}}
    }});
    for inside in [
        r#"{"price": 100}"#,
        r#"{"price": 100.0}"#,
        r#"{"price": 1e2}"#,
        r#"{"price": 1E+2}"#,
        r#"{"price": 99.99}"#,
        r#"{"price": 0.1}"#,
        r#"{"price": -0}"#,
        r#"{"price": -0.0}"#,
        r#"{"price": 9007199254740992}"#,
        r#"{"price": -1e-7}"#,
        r#"{"items": [{"n": 100.00}], "other": [1.5, {"deep": 2.25}]}"#,
    ] {
        let reason = verdict(schema.clone(), inside);
        assert!(
            reason
                .as_ref()
                .is_none_or(|r| !r.contains("float does not hold")),
            "{inside}: {reason:?}"
        );
    }
    for (outside, argument) in [
        (
            r#"{"price": 100.0000000000000000001}"#,
            "`price` = 100.0000000000000000001",
        ),
        (r#"{"price": 1.00000000000000000001e2}"#, "`price`"),
        (
            r#"{"items": [{"n": 1}, {"n": 100.00000000000000001}]}"#,
            "`items.1.n`",
        ),
        (r#"{"unbounded": 0.30000000000000000001}"#, "`unbounded`"),
        (
            r#"{"price": 9007199254740993}"#,
            "`price` = 9007199254740993",
        ),
        (r#"{"price": 18446744073709551615}"#, "`price`"),
        (r#"{"price": 1152921504606846976}"#, "`price`"),
        (r#"{"price": 123456789012345678901234567890}"#, "`price`"),
        (r#"{"price": 1e-400}"#, "`price`"),
    ] {
        let reason = verdict(schema.clone(), outside).expect(outside);
        assert!(
            reason.contains(argument) && reason.contains("a float does not hold as written"),
            "{outside}: {reason}"
        );
    }
}

/// Each keyword that compares numbers, at the edge where a float would answer otherwise.
#[test]
fn bounds_enums_and_consts_are_compared_as_written() {
    let cases = [
        (json!({"maximum": 100}), "100", true),
        (json!({"maximum": 100}), "100.0000000000000000001", false),
        (
            json!({"exclusiveMaximum": 100}),
            "99.99999999999999999",
            false,
        ),
        (json!({"exclusiveMaximum": 100}), "99.99999999999999", true),
        (json!({"minimum": 0.1}), "0.09999999999999999999", false),
        (json!({"minimum": 0.1}), "0.1", true),
        (json!({"exclusiveMinimum": 0}), "1e-400", false),
        (json!({"const": 100}), "100.0", true),
        (json!({"const": 100}), "100.0000000000000000001", false),
        (json!({"enum": [1, 2, 3]}), "2.0", true),
        (json!({"enum": [1, 2, 3]}), "2.00000000000000000001", false),
        (
            json!({"maximum": 9007199254740992_u64}),
            "9007199254740993",
            false,
        ),
        (json!({"maximum": 1e16}), "10000000000000001", false),
    ];
    for (keyword, number, allowed) in cases {
        let schema = json!({"properties": {"n": keyword}});
        let reason = verdict(schema, &format!(r#"{{"n": {number}}}"#));
        assert_eq!(
            reason.is_none(),
            allowed,
            "{keyword} with {number}: {reason:?}"
        );
    }
}

#[test]
fn multiple_of_is_exact_in_decimal() {
    let cases = [
        (json!(0.01), "0.07", true),
        (json!(0.01), "19.99", true),
        (json!(0.01), "0.001", false),
        (json!(0.1), "0.3", true),
        (json!(0.3), "0.9", true),
        (json!(0.3), "1", false),
        (json!(7.5), "22.5", true),
        (json!(7.5), "1e300", false),
        (json!(2), "1e300", true),
        (json!(3), "1e300", false),
        (json!(3), "-9", true),
        (json!(3), "0", true),
        (json!(1e-300), "1", true),
        (json!(1e300), "1", false),
    ];
    for (multiple, number, allowed) in cases {
        let schema = json!({"properties": {"n": {"multipleOf": multiple}}});
        let reason = verdict(schema, &format!(r#"{{"n": {number}}}"#));
        assert_eq!(
            reason.is_none(),
            allowed,
            "{multiple} | {number}: {reason:?}"
        );
    }
}

/// Huge numbers against a fractional `multipleOf`, where the validator's own check was wrong
/// about four times in ten: `x` is a multiple of 0.3 exactly when 3 divides its digits' sum
/// (`x` is an integer, and 10 ≡ 1 mod 3).
#[test]
fn multiple_of_a_fraction_is_exact_for_huge_numbers() {
    let rules =
        rules(json!({"t": {"schema": {"properties": {"n": {"multipleOf": 0.3}}}}})).unwrap();
    let mut seed: u64 = 12345;
    for _ in 0..2000 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let x = f64::from_bits((seed >> 12) | (1200u64 << 52)); // 2^177 to 2^178, about 2e53
        let scientific = format!("{x:e}");
        let digits_sum: u32 = scientific
            .split('e')
            .next()
            .unwrap()
            .chars()
            .filter_map(|c| c.to_digit(10))
            .sum();
        let args = call_args(&format!(r#"{{"n": {x}}}"#));
        let allowed = check_all(&rules, "t", &args).is_none();
        assert_eq!(allowed, digits_sum.is_multiple_of(3), "{scientific}");
    }
}

#[test]
fn an_argument_spelt_like_one_the_schema_names_is_a_violation() {
    let office = rules(json!({"send_email": {"schema": {
        "properties": {
            "to": {"type": "string", "pattern": "^[a-z]+@example\\.com$"},
            "cc": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+@example\\.com$"}},
            "meta": {"properties": {"priority": {"enum": ["low"]}}}
        },
        "required": ["to"]}}}))
    .unwrap();
    let check = |value: Value| office[0].check("send_email", &args(value));
    assert!(check(json!({"to": "ann@example.com", "cc": ["bob@example.com"]})).is_none());
    assert!(check(json!({"to": "ann@example.com", "subject": "Hi", "Body": "x"})).is_none());
    for (outside, named) in [
        (
            json!({"to": "ann@example.com", "CC": ["eve@evil.test"]}),
            "argument `CC` is spelt like `cc`",
        ),
        (
            json!({"to": "ann@example.com", "Cc": ["eve@evil.test"]}),
            "argument `Cc` is spelt like `cc`",
        ),
        (
            json!({"to": "ann@example.com", "meta": {"Priority": "high"}}),
            "argument `meta.Priority` is spelt like `priority`",
        ),
        (
            json!({"to": "ann@example.com", "ｃｃ": []}),
            "spelt like `cc`",
        ),
    ] {
        let Violation(reason) = check(outside.clone()).expect("a violation");
        assert!(reason.contains(named), "{outside}: {reason}");
    }
}

#[test]
fn multiple_of_stays_exact_beside_a_format_and_under_not() {
    // Beside the author's own `format`, the exact check is one more `allOf` entry; the
    // violation still names the keyword where it was written.
    let schema = json!({"properties": {"n": {"format": "uuid", "multipleOf": 0.3, "allOf": [{}]}}});
    assert_eq!(verdict(schema.clone(), r#"{"n": 0.9}"#), None);
    let reason = verdict(schema, r#"{"n": 1}"#).expect("1 is not a multiple of 0.3");
    assert!(reason.contains("(/properties/n/multipleOf)"), "{reason}");
    // Under `not` it composes as the keyword does: 1e40 is not a multiple of 0.3 (its digits
    // sum to 1), though as floats it divides without a remainder.
    let not = json!({"properties": {"n": {"not": {"multipleOf": 0.3}}}});
    assert_eq!(verdict(not.clone(), r#"{"n": 1e40}"#), None);
    assert!(verdict(not.clone(), r#"{"n": 0.9}"#).is_some());
    assert_eq!(verdict(not, r#"{"n": 1}"#), None);
    // Through a reference.
    let referred = json!({"$defs": {"tenth": {"multipleOf": 0.1}},
        "properties": {"n": {"$ref": "#/$defs/tenth"}}});
    assert_eq!(verdict(referred.clone(), r#"{"n": 0.3}"#), None);
    assert!(verdict(referred, r#"{"n": 0.35}"#).is_some());
}

#[test]
fn what_the_validator_would_not_check_is_a_load_error() {
    for (schema, expected) in [
        // Another draft's `$schema` would switch the validator's reading.
        (
            json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
            "/$schema: http://json-schema.org/draft-07/schema# is not draft 2020-12",
        ),
        // A reference may point only where the validator reads a schema, which the gate has
        // walked: not into a keyword it does not know, nor into data, nor into a map of names
        // read as one schema, nor at what the gate added.
        (
            json!({"x-lib": {"p": {"format": "iban"}}, "properties": {"to": {"$ref": "#/x-lib/p"}}}),
            "/properties/to/$ref: #/x-lib/p does not point at a schema",
        ),
        (
            json!({"enum": [{"multipleOf": 0.1}], "properties": {"n": {"$ref": "#/enum/0"}}}),
            "#/enum/0 does not point at a schema",
        ),
        (
            json!({"$defs": {"d": {"default": {"format": "ipv4-address"}}}, "properties": {"h": {"$ref": "#/$defs/d/default"}}}),
            "#/$defs/d/default does not point at a schema",
        ),
        (
            json!({"x": {"properties": {"multipleOf": 0.3}}, "properties": {"n": {"$ref": "#/x/properties"}}}),
            "#/x/properties does not point at a schema",
        ),
        (
            json!({"properties": {"n": {"$ref": "#/properties"}}}),
            "#/properties does not point at a schema",
        ),
        (
            json!({"properties": {"n": {"format": "uuid", "multipleOf": 0.3}, "m": {"$ref": "#/properties/n/allOf/0"}}}),
            "#/properties/n/allOf/0 does not point at a schema",
        ),
        (
            json!({"$defs": {"a": {"$id": "a.json", "type": "string"}}}),
            "/$defs/a/$id: an `$id` below the schema's root",
        ),
        // Schemas under `dependencies` (the validator still reads the old keyword) are walked
        // whatever their property's name.
        (
            json!({"dependencies": {"default": {"properties": {"h": {"format": "ipv5"}}}}}),
            "the format \"ipv5\" at /dependencies/default/properties/h/format",
        ),
        (
            json!({"properties": {"n": {"multipleOf": 0}}}),
            "/properties/n/multipleOf: `multipleOf` must be a number above 0",
        ),
        // Lookaround and backreferences: the patterns run in linear time, these cannot.
        (
            json!({"properties": {"to": {"pattern": "^(?!admin).*$"}}}),
            "/properties/to/pattern",
        ),
        (
            json!({"patternProperties": {"(a)\\1": {}}}),
            "/patternProperties/(a)\\1: (a)\\1 is not",
        ),
        (
            json!({"$ref": "file:///etc/passwd"}),
            "/$ref: file:///etc/passwd leaves the schema",
        ),
        (
            json!({"$id": "https://example.com/s.json", "$ref": "other.json"}),
            "other.json leaves the schema",
        ),
    ] {
        refused_saying(schema, expected);
    }
    // The draft's own `$schema`, and names that are keywords only as names, are fine.
    for schema in [
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema"}),
        json!({"properties": {"multipleOf": {"type": "number"}, "enum": {"format": "date"}}}),
        json!({"dependentRequired": {"multipleOf": ["format"]}}),
        json!({"const": {"format": "pdf"}, "enum": [{"multipleOf": "x"}]}),
        json!({"dependencies": {"enum": {"properties": {"n": {"multipleOf": 0.5}}}, "a": ["b"]}}),
        json!({"$defs": {"p": {"$anchor": "payee", "enum": ["acme"]}}, "properties": {"to": {"$ref": "#payee"}}}),
        json!({"$id": "https://example.com/s.json", "$defs": {"a~b/c": {}}, "$ref": "#/$defs/a~0b~1c"}),
        json!({"$defs": {"p": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/p"}, "b": {"allOf": [{"$ref": "#/$defs/p"}, {"$ref": "#/$defs/p"}]}}}),
    ] {
        assert!(
            rules(json!({"t": {"schema": schema.clone()}})).is_ok(),
            "{schema}"
        );
    }
}

#[test]
fn a_divisor_keeps_its_slot() {
    let schema = json!({"properties": {"n": {"multipleOf": 0.25}}});
    let first = rules(json!({"t": {"schema": schema.clone()}})).unwrap();
    let again = rules(json!({"u": {"schema": schema}})).unwrap();
    assert!(first[0].check("t", &args(json!({"n": 1}))).is_none());
    let number = |n: &str| check_all(&again, "u", &call_args(&format!(r#"{{"n": {n}}}"#)));
    assert_eq!(number("0.75"), None);
    let Violation(reason) = number("0.8").expect("0.8 is not a multiple of 0.25");
    assert_eq!(
        reason,
        "argument `n` = 0.8 is not allowed for u by the policy (/properties/n/multipleOf)"
    );
}

#[test]
fn patterns_mean_what_ecma_262_means() {
    let schema = json!({"properties": {
        "subject": {"type": "string", "pattern": "^.{1,78}$"},
        "user": {"type": "string", "pattern": "^\\S+$"}
    }, "patternProperties": {"^x-.$": {"type": "integer"}}});
    assert_eq!(
        verdict(
            schema.clone(),
            r#"{"subject": "hi", "user": "root", "x-a": 1}"#
        ),
        None
    );
    for outside in [
        r#"{"subject": "hi\rBcc: eve@evil.test"}"#,
        r#"{"subject": "hi\u2028Bcc: eve@evil.test"}"#,
        r#"{"user": "root\u2028admin"}"#,
        r#"{"user": "root\u3000admin"}"#,
        r#"{"user": "root\u1680admin"}"#,
        r#"{"x-a": "not an integer"}"#,
    ] {
        assert!(verdict(schema.clone(), outside).is_some(), "{outside}");
    }
    // `.` in a patternProperties key does not reach a line break either: that key is free.
    assert_eq!(verdict(schema, r#"{"x-\n": "free"}"#), None);
}

#[test]
fn an_email_holds_no_line_break_or_control_character() {
    let schema = json!({"properties": {
        "to": {"type": "string", "format": "email"},
        "idn": {"type": "string", "format": "idn-email"}
    }});
    for inside in [
        r#"{"to": "\"a b\"@example.com"}"#,
        r#"{"idn": "ann@例え.jp"}"#,
    ] {
        assert_eq!(verdict(schema.clone(), inside), None, "{inside}");
    }
    for (outside, rule) in [
        (
            r#"{"to": "\"x\r\nBcc: eve@evil.test\r\n\"@example.com"}"#,
            "/properties/to/format",
        ),
        (
            r#"{"to": "\"x\u0000y\"@example.com"}"#,
            "/properties/to/format",
        ),
        (r#"{"idn": "\"x\r\ny\"@例え.jp"}"#, "/properties/idn/format"),
    ] {
        let reason = verdict(schema.clone(), outside).expect(outside);
        assert!(reason.contains(rule), "{outside}: {reason}");
    }
}

/// `format: "regex"` reads the argument in one pass: 16,000 classes took the crate's own check
/// 52 s (it parses the pattern again after each one it rewrites); here, a blink.
#[test]
fn a_regex_argument_is_read_in_linear_time() {
    let schema = json!({"properties": {"r": {"type": "string", "format": "regex"}}});
    let long = "\\\\d".repeat(16_000);
    assert_eq!(
        verdict(schema.clone(), &format!(r#"{{"r": "{long}"}}"#)),
        None
    );
    assert!(verdict(schema, r#"{"r": "(?<=a)b"}"#).is_some());
}

/// A recursive schema: the validator checks both branches at every level and keeps their
/// errors, so its work doubled with each level of the argument (a 600-byte one took it gigabytes).
#[test]
fn a_schema_that_refers_to_itself_does_not_load() {
    let expression = json!({"$defs": {"e": {"anyOf": [
        {"properties": {"op": {"const": "not"}, "a": {"$ref": "#/$defs/e"}}, "required": ["op"]},
        {"properties": {"op": {"const": "neg"}, "a": {"$ref": "#/$defs/e"}}, "required": ["op"]}
    ]}}, "properties": {"q": {"$ref": "#/$defs/e"}}});
    for (schema, at) in [
        (expression, "/$defs/e/anyOf/"),
        (
            json!({"$ref": "#", "maxProperties": 3}),
            "/$ref: # makes the schema refer to itself",
        ),
        (
            json!({"$defs": {"e": {"$anchor": "node", "properties": {"next": {"$ref": "#node"}}}}}),
            "/$defs/e/properties/next/$ref: #node makes",
        ),
        (
            json!({"$dynamicAnchor": "n", "properties": {"next": {"$dynamicRef": "#n"}}}),
            "#n makes the schema refer to itself",
        ),
        (
            json!({"$defs": {"a": {"properties": {"x": {"$ref": "#/$defs/b"}}}, "b": {"items": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}),
            "makes the schema refer to itself",
        ),
    ] {
        refused_saying(schema, at);
    }
}

#[test]
fn patterns_that_mean_the_same_once_read_do_not_hide_each_other() {
    refused_saying(
        json!({"patternProperties": {"[0-9]": false, "\\d": true}}),
        "means the same as another pattern",
    );
}

#[test]
fn formats_read_by_a_url_parser_hold_no_line_break() {
    let schema = json!({"properties": {
        "iri": {"type": "string", "format": "iri"},
        "ref": {"type": "string", "format": "iri-reference"},
        "tpl": {"type": "string", "format": "uri-template"},
        "re": {"type": "string", "format": "regex"}
    }});
    for inside in [
        r#"{"iri": "https://ok.example/caf\u00e9"}"#,
        r#"{"ref": "../a?b#c"}"#,
        r#"{"tpl": "https://ok.example/{user}/repos"}"#,
        r#"{"re": "^[a-z]+$"}"#,
    ] {
        assert_eq!(verdict(schema.clone(), inside), None, "{inside}");
    }
    for (outside, rule) in [
        (
            r#"{"iri": "https://ok.example/a\r\nX-Injected: 1"}"#,
            "/properties/iri/format",
        ),
        (
            r#"{"iri": " \u0000https://ok.example/\t"}"#,
            "/properties/iri/format",
        ),
        (
            r#"{"iri": "https://ok.example/a b\"<>"}"#,
            "/properties/iri/format",
        ),
        (
            r#"{"ref": "\r\nDELETE /admin HTTP/1.1\r\n"}"#,
            "/properties/ref/format",
        ),
        (r#"{"tpl": "x\r\ny {a}"}"#, "/properties/tpl/format"),
        (r#"{"re": "(?i)x"}"#, "/properties/re/format"),
        (r#"{"re": "[^;&&|]"}"#, "/properties/re/format"),
    ] {
        let reason = verdict(schema.clone(), outside).expect(outside);
        assert!(reason.contains(rule), "{outside}: {reason}");
    }
}

/// `uniqueItems` by the gate's own check: JSON Schema's equality, in time linear in the items
/// (the crate's hash made `[]`, `[[]]`, `[[],[]]`… collide: 8 s for a megabyte of them).
#[test]
fn unique_items_is_json_schema_equality() {
    let schema = json!({"properties": {"xs": {"type": "array", "uniqueItems": true}, "free": {"uniqueItems": false}}});
    for (args, unique) in [
        (
            r#"{"xs": [1, 2, "1", [1], {"a": 1}, {"a": 2}, [], [[]], [[], []]]}"#,
            true,
        ),
        (r#"{"xs": [1, 1.0]}"#, false),
        (r#"{"xs": [0, -0]}"#, false),
        (
            r#"{"xs": [{"a": 1, "b": [2]}, {"b": [2.0], "a": 1}]}"#,
            false,
        ),
        (r#"{"xs": [[1, [2]], [1, [2]]]}"#, false),
        (r#"{"free": [1, 1]}"#, true),
    ] {
        let reason = verdict(schema.clone(), args);
        assert_eq!(reason.is_none(), unique, "{args}: {reason:?}");
        if let Some(reason) = reason {
            assert!(reason.contains("(/properties/xs/uniqueItems)"), "{reason}");
        }
    }
    // Forests of empty arrays, all different (`k` of them inside `d` brackets): the crate's hash
    // gave them all one value. Equal ones among them are still found.
    let forests: Vec<String> = (0..2_000)
        .map(|i| {
            let (depth, width) = (i / 50, i % 50 + 1);
            let inner = vec!["[]"; width].join(",");
            format!("{}[{inner}]{}", "[".repeat(depth), "]".repeat(depth))
        })
        .collect();
    let args = format!(r#"{{"xs": [{}]}}"#, forests.join(","));
    assert_eq!(verdict(schema.clone(), &args), None);
    let mut twice = forests.clone();
    twice.push(forests[1_234].clone());
    let args = format!(r#"{{"xs": [{}]}}"#, twice.join(","));
    let reason = verdict(schema.clone(), &args).expect("one forest is there twice");
    assert!(reason.contains("(/properties/xs/uniqueItems)"), "{reason}");
    let args = format!(r#"{{"xs": [{}]}}"#, forests.join(","));
    assert_eq!(verdict(schema.clone(), &args), None);
    refused_saying(
        json!({"uniqueItems": "yes"}),
        "/uniqueItems: `uniqueItems` must be true or false",
    );
}
