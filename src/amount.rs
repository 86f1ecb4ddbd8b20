//! What an `args.amount` is: a number the rules understand, or something they refuse to guess at.
//!
//! Understood: a JSON number ≥ 0, or a string that is a plain decimal number ≥ 0 with an optional
//! leading `$` (`"750"`, `"750.00"`, `"$750"`). Anything else (`"1,000"`, `"seven hundred"`, `-5`,
//! `true`, `{}`) is not understood, and the decision holds it for a person.
//!
//! Comparisons with a limit are exact in decimal: `100.0000000000000001` is above 100 even though
//! it rounds to 100 as a binary float. The float decides whenever it is not a tie with the limit
//! (rounding keeps order); a tie is settled on the decimal text as written.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::value::RawValue;
use serde_json::Value;

/// An amount read from a call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Amount {
    /// A non-negative, finite amount: its nearest float, the text it was written as (for
    /// reasons), and its exact decimal text (for ties).
    Understood {
        value: f64,
        text: String,
        exact: String,
    },
    /// Present but not something the rules can compare; `text` is the JSON as written.
    NotUnderstood { text: String },
}

impl Amount {
    /// Reads an amount from its JSON value. `number_text` is the number exactly as written in
    /// the JSON, when known (a parsed float has lost it).
    pub(crate) fn from_json_exact(value: &Value, number_text: Option<&str>) -> Amount {
        // A whole number of at most 19 digits as written (most amounts) is read as a `u64`,
        // which serde_json writes back digit for digit: its text is the one written, with no
        // formatting (done three times for every call with an amount, issue 34).
        let text: Cow<str> = match (value, number_text) {
            (Value::Number(n), Some(raw)) if plain_integer(raw) && n.is_u64() => raw.into(),
            _ => value.to_string().into(),
        };
        let (understood, exact) = match value {
            // A minus sign is never an amount we understand, not even `-0`.
            Value::Number(n) if !text.starts_with('-') => {
                (n.as_f64(), number_text.unwrap_or(&text).to_owned())
            }
            Value::String(s) => (
                parse_plain_decimal(s),
                s.strip_prefix('$').unwrap_or(s).to_owned(),
            ),
            _ => (None, String::new()),
        };
        match understood {
            Some(value) if value.is_finite() && value >= 0.0 => Amount::Understood {
                value,
                text: without_json_quotes(&text).to_owned(),
                exact,
            },
            _ => Amount::NotUnderstood {
                text: text.into_owned(),
            },
        }
    }

    /// Reads an amount from a parsed value alone (exact for strings, float-exact for numbers).
    pub fn from_json(value: &Value) -> Amount {
        Amount::from_json_exact(value, None)
    }

    /// Whether an understood amount is above `limit`, exactly in decimal. An amount that is not
    /// understood is never "within" anything: it counts as above.
    pub(crate) fn is_above(&self, limit: f64) -> bool {
        match self {
            Amount::Understood { value, exact, .. } => {
                if *value != limit {
                    return *value > limit;
                }
                // A tie in floats: settle it on the decimal text; anything unreadable is above.
                !matches!(
                    decimal_cmp(exact, &format!("{limit}")),
                    Some(Ordering::Less | Ordering::Equal)
                )
            }
            Amount::NotUnderstood { .. } => true,
        }
    }
}

/// Whether `text` is a JSON integer of at most 19 digits with no sign: below 10^19, so read as
/// a `u64` (JSON has no leading zeros), and written back as the same digits.
fn plain_integer(text: &str) -> bool {
    (1..=19).contains(&text.len()) && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// Whether a float read from `text` is surely written back as the same decimal, without
/// formatting it: `text` is a plain decimal (digits and at most one point, no exponent) of at
/// most 20 bytes whose digits from the first that is not zero to the last written are at most
/// 15. Read by any parser, such a number is one integer below 2^53 (exact in a float) divided by
/// a power of ten up to 10^18 (exact too): one correctly rounded division, so the nearest float
/// (serde_json's fast path, which rounds twice only for a longer run of digits, gives it too).
/// And two decimals of at most 15 significant digits differ by more than one float's rounding
/// interval (IEEE 754 doubles hold 15 decimal digits), so the float's shortest text is this
/// decimal. `false` means only "not known this way": [`decimal_cmp`] against the float's text
/// decides.
pub(crate) fn surely_round_trips(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() > 20 || !bytes[0].is_ascii_digit() {
        return false;
    }
    let (mut points, mut digits) = (0, 0);
    let mut first = None;
    for &byte in bytes {
        match byte {
            b'0' => digits += 1,
            b'1'..=b'9' => {
                first.get_or_insert(digits);
                digits += 1;
            }
            b'.' => points += 1,
            _ => return false,
        }
    }
    // All zeros are zero, which every float writes back.
    points <= 1 && first.is_none_or(|first| digits - first <= 15)
}

/// Compares two non-negative decimal texts (`12`, `12.50`, `1.25e1`) exactly; `None` when either
/// is not such a number or its exponent is out of range.
pub(crate) fn decimal_cmp(a: &str, b: &str) -> Option<Ordering> {
    let (a_digits, a_point) = normalise(a)?;
    let (b_digits, b_point) = normalise(b)?;
    Some(match (a_digits.is_empty(), b_digits.is_empty()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a_point.cmp(&b_point).then_with(|| {
            let width = a_digits.len().max(b_digits.len());
            format!("{a_digits:0<width$}").cmp(&format!("{b_digits:0<width$}"))
        }),
    })
}

/// Whether `value / multiple` is an integer, exactly, for two decimal texts (signed, with an
/// optional fraction and exponent, as JSON writes numbers). `None` when either is not such a
/// number, its digits do not fit in 38, or `multiple` is zero.
pub(crate) fn decimal_multiple_of(value: &str, multiple: &str) -> Option<bool> {
    let unsigned = |text: &'_ str| text.strip_prefix('-').unwrap_or(text).to_owned();
    // Each is DIGITS × 10^(point − len(DIGITS)).
    let (a_digits, a_point) = normalise(&unsigned(value))?;
    let (b_digits, b_point) = normalise(&unsigned(multiple))?;
    let b: u128 = b_digits.parse().ok()?;
    if a_digits.is_empty() {
        return Some(true);
    }
    let a: u128 = a_digits.parse().ok()?;
    if b == 0 {
        return None;
    }
    let a_exponent = a_point.checked_sub(a_digits.len() as i64)?;
    let b_exponent = b_point.checked_sub(b_digits.len() as i64)?;
    // value / multiple = (a / b) × 10^k
    let k = a_exponent.checked_sub(b_exponent)?;
    if k >= 0 {
        // b divides a × 10^k.
        let ten_to_k = pow_mod(10, k.unsigned_abs(), b)?;
        Some(mul_mod(a % b, ten_to_k, b)? == 0)
    } else {
        // b × 10^-k divides a: impossible when it is larger (a is not zero).
        let divisor = u32::try_from(k.unsigned_abs())
            .ok()
            .and_then(|places| 10u128.checked_pow(places))
            .and_then(|power| power.checked_mul(b));
        Some(divisor.is_some_and(|divisor| a.is_multiple_of(divisor)))
    }
}

/// `a × b mod m`, when it cannot overflow (`m` below 2^64).
fn mul_mod(a: u128, b: u128, m: u128) -> Option<u128> {
    Some(a.checked_mul(b)? % m)
}

/// `base^exponent mod m`, by squaring.
fn pow_mod(base: u128, mut exponent: u64, m: u128) -> Option<u128> {
    if m > u128::from(u64::MAX) {
        return None;
    }
    let (mut result, mut base) = (1 % m, base % m);
    while exponent > 0 {
        if exponent & 1 == 1 {
            result = mul_mod(result, base, m)?;
        }
        base = mul_mod(base, base, m)?;
        exponent >>= 1;
    }
    Some(result)
}

/// Significant digits (no leading or trailing zeros; empty for zero) and the position of the
/// decimal point relative to them: the value is `0.DIGITS × 10^point`.
fn normalise(text: &str) -> Option<(String, i64)> {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let leading = digits.len() - digits.trim_start_matches('0').len();
    let significant = digits
        .trim_start_matches('0')
        .trim_end_matches('0')
        .to_owned();
    let point = (whole.len() as i64)
        .checked_add(exponent)?
        .checked_sub(leading as i64)?;
    Some((significant, point))
}

/// The exact text of a JSON number at a path of object keys in a JSON document, e.g.
/// `["args", "amount"]` in a call. `None` when absent or not a number. The document must already
/// have passed the strict parser (so its keys are unique).
pub(crate) fn number_text_at(json: &str, path: &[&str]) -> Option<String> {
    let text = raw_text_at(json, path)?;
    let starts_like_number = text.starts_with(|c: char| c == '-' || c.is_ascii_digit());
    starts_like_number.then(|| text.to_owned())
}

/// The JSON text of the value at a path of object keys in a JSON document, exactly as written.
/// `None` when absent. The document must already have passed the strict parser.
pub(crate) fn raw_text_at<'a>(json: &'a str, path: &[&str]) -> Option<&'a str> {
    fn walk<'a>(raw: &'a RawValue, path: &[&str]) -> Option<&'a str> {
        let Some((first, rest)) = path.split_first() else {
            return Some(raw.get());
        };
        let object: std::collections::HashMap<std::borrow::Cow<'a, str>, &'a RawValue> =
            serde_json::from_str(raw.get()).ok()?;
        walk(object.get(*first)?, rest)
    }
    let root: &RawValue = serde_json::from_str(json).ok()?;
    walk(root, path)
}

/// A JSON number whose text is not read exactly (see [`read_exactly`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InexactNumber {
    /// The object keys and array indices that lead to it.
    pub path: Vec<String>,
    /// The number as written.
    pub text: String,
    /// What a JSON parser reads it as.
    pub read_as: f64,
}

/// Whether a JSON number, read as `serde_json` reads it (the value a JSON Schema validator then
/// compares), means exactly what its text says, in the one sense that keeps every comparison of
/// two such numbers exact: its text is, in decimal, the shortest decimal of the float it is read
/// as, and when it is read as an integer, that integer is the float's value exactly. `100`,
/// `100.0`, `1e2`, `0.1` and `-0` are read exactly; `100.0000000000000000001` (read as 100),
/// `9007199254740993` (2^53 + 1, read as 2^53 by a float) and `1152921504606846976` (2^60, whose
/// shortest decimal is `1152921504606847000`) are not. For two numbers read exactly, comparing
/// the floats (as a validator does) gives the answer of comparing the decimals as written:
/// rounding to the nearest float keeps order, and two decimals that round to one float would both
/// have to be its shortest decimal.
///
/// `Err` holds the float it is read as; a text that is not one JSON number is `Err(NaN)`.
pub(crate) fn read_exactly(text: &str) -> Result<(), f64> {
    let Ok(number) = serde_json::from_str::<serde_json::Number>(text) else {
        return Err(f64::NAN);
    };
    let float = number.as_f64().unwrap_or(f64::NAN);
    let integer_is_the_float = match (number.as_u64(), number.as_i64()) {
        // `as` saturates: 2^64 would read back as u64::MAX.
        (Some(n), _) => float < 18446744073709551616.0 && float as u64 == n,
        (None, Some(n)) => float as i64 == n,
        (None, None) => true,
    };
    if float.is_finite() && integer_is_the_float && same_decimal(text, &format!("{float}")) {
        Ok(())
    } else {
        Err(float)
    }
}

/// Whether two decimal texts (signed, with an optional fraction and exponent) are one number.
fn same_decimal(a: &str, b: &str) -> bool {
    let (a_negative, a) = a.strip_prefix('-').map_or((false, a), |rest| (true, rest));
    let (b_negative, b) = b.strip_prefix('-').map_or((false, b), |rest| (true, rest));
    let zero = decimal_cmp(a, "0") == Some(Ordering::Equal);
    decimal_cmp(a, b) == Some(Ordering::Equal) && (a_negative == b_negative || zero)
}

/// Whether every number token of a JSON text (outside its strings) is read exactly
/// ([`read_exactly`]): a token is taken whole, sign, digits, fraction and exponent, as the walk of
/// [`first_inexact_number`] would meet it.
fn every_number_exact(json: &str) -> bool {
    let bytes = json.as_bytes();
    let mut at = 0;
    let mut in_string = false;
    while at < bytes.len() {
        let byte = bytes[at];
        if in_string {
            match byte {
                b'\\' => at += 2,
                b'"' => {
                    in_string = false;
                    at += 1;
                }
                _ => at += 1,
            }
            continue;
        }
        match byte {
            b'"' => {
                in_string = true;
                at += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while at < bytes.len()
                    && matches!(bytes[at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    at += 1;
                }
                if read_exactly(&json[start..at]).is_err() {
                    return false;
                }
            }
            _ => at += 1,
        }
    }
    true
}

/// The first number in a JSON document (already checked strictly) that is not read exactly
/// ([`read_exactly`]): in object keys' order, depth first. A document that cannot be walked
/// again counts as one such number at the root, so that nothing unread passes.
pub(crate) fn first_inexact_number(json: &str) -> Option<InexactNumber> {
    fn walk(raw: &RawValue, path: &mut Vec<String>) -> Option<InexactNumber> {
        let text = raw.get();
        let unreadable = |path: &mut Vec<String>| {
            Some(InexactNumber {
                path: path.clone(),
                text: text.chars().take(40).collect(),
                read_as: f64::NAN,
            })
        };
        match text.as_bytes().first() {
            Some(b'{') => {
                let Ok(object) = serde_json::from_str::<
                    std::collections::BTreeMap<std::borrow::Cow<'_, str>, &RawValue>,
                >(text) else {
                    return unreadable(path);
                };
                object.into_iter().find_map(|(key, value)| {
                    path.push(key.into_owned());
                    let found = walk(value, path);
                    path.pop();
                    found
                })
            }
            Some(b'[') => {
                let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) else {
                    return unreadable(path);
                };
                items.into_iter().enumerate().find_map(|(index, value)| {
                    path.push(index.to_string());
                    let found = walk(value, path);
                    path.pop();
                    found
                })
            }
            Some(b'-' | b'0'..=b'9') => read_exactly(text).err().map(|read_as| InexactNumber {
                path: path.clone(),
                text: text.to_owned(),
                read_as,
            }),
            _ => None,
        }
    }
    match serde_json::from_str::<&RawValue>(json) {
        // Most documents have only exact numbers: one pass over the text says so, and only a
        // document with an inexact one is walked for its key path (the walk parses each
        // subtree again, which cost a sixth of loading the claude-code pack).
        Ok(_) if every_number_exact(json) => None,
        Ok(root) => walk(root, &mut Vec::new()),
        Err(_) => Some(InexactNumber {
            path: Vec::new(),
            text: json.chars().take(40).collect(),
            read_as: f64::NAN,
        }),
    }
}

// Reasons quote a string amount without its JSON quotes: `amount $750`, not `amount "$750"`.
fn without_json_quotes(json_text: &str) -> &str {
    json_text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(json_text)
}

/// `750`, `750.00`, `$750`, `$0.5`; not ` 750`, `+750`, `1,000`, `1e2`, `.5`, `750.`, `0x64`.
fn parse_plain_decimal(s: &str) -> Option<f64> {
    let digits = s.strip_prefix('$').unwrap_or(s);
    let (whole, fraction) = match digits.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (digits, None),
    };
    let all_digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(whole) || fraction.is_some_and(|f| !all_digits(f)) {
        return None;
    }
    digits.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_plain_integer_reads_as_its_formatted_value_reads() {
        for raw in [
            "0",
            "7",
            "100",
            "953",
            "1000000",
            "9007199254740993",
            "9999999999999999999",
            "18446744073709551615",
            "100000000000000000000",
            "12.50",
            "100.0",
            "1e2",
        ] {
            let value: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(
                Amount::from_json_exact(&value, Some(raw)),
                match Amount::from_json_exact(&value, None) {
                    // Only the exact text is the one written, where it differs.
                    Amount::Understood { value, text, .. } => Amount::Understood {
                        value,
                        text,
                        exact: raw.to_owned(),
                    },
                    other => other,
                },
                "{raw}"
            );
        }
        assert!(plain_integer("9999999999999999999"));
        for not in ["", "-1", "1.0", "1e2", "12345678901234567890", "+1"] {
            assert!(!plain_integer(not), "{not}");
        }
    }

    #[test]
    fn a_decimal_said_to_round_trip_does() {
        use super::{decimal_cmp, surely_round_trips};
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut said = 0;
        let mut texts: Vec<String> = [
            "0",
            "0.0",
            "00.000",
            "1",
            "0.1",
            "0.3",
            "100",
            "750.00",
            "999999999999999",
            "9999999999999999",
            "0.000000000000001",
            "123456789012345.6",
            "1.5e3",
            "1.",
            ".5",
            "1..2",
            "",
            "-1",
            "$1",
            "12345678901234567890",
            "123456789012345678901",
            "0.00000000000000000001",
            "9007199254740993",
        ]
        .iter()
        .map(|text| text.to_string())
        .collect();
        for _ in 0..200_000 {
            let digits = 1 + next() % 19;
            let mut text: String = (0..digits)
                .map(|_| char::from(b'0' + (next() % 10) as u8))
                .collect();
            let point = next() % (digits + 2);
            if point < digits && point > 0 {
                text.insert(point as usize, '.');
            }
            texts.push(text);
        }
        for text in &texts {
            if !surely_round_trips(text) {
                continue;
            }
            said += 1;
            // Read as a string amount is, and as a JSON number is (serde_json's own reader,
            // which is not always correctly rounded).
            let json = text.trim_end_matches('.');
            let json = if json.starts_with('0') && json.len() > 1 && !json.starts_with("0.") {
                None
            } else {
                Some(json)
            };
            let read = [
                Some(text.parse::<f64>().unwrap()),
                json.map(|json| serde_json::from_str::<f64>(json).unwrap()),
            ];
            for value in read.into_iter().flatten() {
                assert_eq!(
                    decimal_cmp(text, &format!("{value}")),
                    Some(std::cmp::Ordering::Equal),
                    "{text} read as {value}"
                );
            }
        }
        assert!(said > 90_000, "{said}");
        for text in [
            "9999999999999999",
            "1.5e3",
            "1..2",
            "",
            "-1",
            "$1",
            ".5",
            "1.0000000000000000",
            "999999999999999.0",
        ] {
            assert!(!surely_round_trips(text), "{text}");
        }
    }

    use super::*;
    use serde_json::json;

    fn understood(value: Value) -> Option<f64> {
        match Amount::from_json(&value) {
            Amount::Understood { value, .. } => Some(value),
            Amount::NotUnderstood { .. } => None,
        }
    }

    #[test]
    fn numbers_and_plain_decimal_strings_are_understood() {
        assert_eq!(understood(json!(750)), Some(750.0));
        assert_eq!(understood(json!(0)), Some(0.0));
        assert_eq!(understood(json!(100.01)), Some(100.01));
        assert_eq!(understood(json!("750")), Some(750.0));
        assert_eq!(understood(json!("750.00")), Some(750.0));
        assert_eq!(understood(json!("$750")), Some(750.0));
        assert_eq!(understood(json!("0750")), Some(750.0));
    }

    #[test]
    fn everything_else_is_not_understood() {
        for value in [
            json!("1,000"),
            json!("seven hundred"),
            json!(-5),
            json!(-0.0),
            json!(true),
            json!({}),
            json!([]),
            json!(null),
            json!(""),
            json!("$"),
            json!(" 750"),
            json!("750 "),
            json!("$ 750"),
            json!("+750"),
            json!("-5"),
            json!("1e2"),
            json!("0x64"),
            json!(".5"),
            json!("750."),
            json!("NaN"),
            json!("Infinity"),
            json!("$$750"),
            json!("７５０"),
        ] {
            assert_eq!(
                understood(value.clone()),
                None,
                "{value} should not be understood"
            );
        }
    }

    #[test]
    fn decimal_comparison_is_exact() {
        use Ordering::*;
        let cases = [
            ("100", "100", Equal),
            ("100.00", "100", Equal),
            ("1e2", "100", Equal),
            ("100.0000000000000001", "100", Greater),
            ("99.99999999999999999", "100", Less),
            ("0.5", "0.50", Equal),
            ("0", "0.0", Equal),
            ("0", "0.0001", Less),
            ("1.5e-1", "0.15", Equal),
            (
                "12345678901234567890123",
                "12345678901234567890122",
                Greater,
            ),
            ("007", "7", Equal),
        ];
        for (a, b, expected) in cases {
            assert_eq!(decimal_cmp(a, b), Some(expected), "{a} vs {b}");
            assert_eq!(decimal_cmp(b, a), Some(expected.reverse()), "{b} vs {a}");
        }
        assert_eq!(decimal_cmp("1e99999999999999999999", "1"), None);
        assert_eq!(decimal_cmp("abc", "1"), None);
    }

    #[test]
    fn a_tie_in_floats_is_settled_in_decimal() {
        let above = Amount::from_json_exact(&json!(100.0), Some("100.0000000000000001"));
        assert!(above.is_above(100.0));
        assert!(!Amount::from_json_exact(&json!(100.0), Some("100.000")).is_above(100.0));
        assert!(Amount::from_json(&json!("$100.0000000000000001")).is_above(100.0));
        assert!(!Amount::from_json(&json!("$100")).is_above(100.0));
        assert!(Amount::from_json(&json!(100.01)).is_above(100.0));
        assert!(!Amount::from_json(&json!(99.99)).is_above(99.99));
        assert!(Amount::from_json(&json!("lots")).is_above(0.0));
    }

    #[test]
    fn number_texts_are_found_as_written() {
        let call = r#"{"agent":"a","args":{"to":"x","\u0061mount":100.0000000000000001}}"#;
        assert_eq!(
            number_text_at(call, &["args", "amount"]).as_deref(),
            Some("100.0000000000000001")
        );
        assert_eq!(
            number_text_at(r#"{"args":{"amount":"5"}}"#, &["args", "amount"]),
            None
        );
        assert_eq!(number_text_at(r#"{"args":{}}"#, &["args", "amount"]), None);
        assert_eq!(
            number_text_at(
                r#"{"call":{"args":{"amount":1e2}}}"#,
                &["call", "args", "amount"]
            )
            .as_deref(),
            Some("1e2")
        );
    }

    #[test]
    fn reasons_quote_the_amount_as_written() {
        match Amount::from_json(&json!("$750")) {
            Amount::Understood { text, .. } => assert_eq!(text, "$750"),
            other => panic!("{other:?}"),
        }
        match Amount::from_json(&json!("1,000")) {
            Amount::NotUnderstood { text } => assert_eq!(text, "\"1,000\""),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn numbers_are_read_exactly_only_when_a_float_holds_them_as_written() {
        for exact in [
            "0",
            "-0",
            "-0.0",
            "100",
            "100.0",
            "1e2",
            "1E+2",
            "100.000",
            "0.1",
            "99.99",
            "-7.25",
            "1e300",
            "5e-324",
            "9007199254740992",
            "-9007199254740992",
            "4503599627370497",
            "1.7976931348623157e308",
            "100000000000000000000",
            "1e20",
        ] {
            assert_eq!(read_exactly(exact), Ok(()), "{exact}");
        }
        for (inexact, read_as) in [
            ("100.0000000000000000001", 100.0),
            ("0.30000000000000000001", 0.3),
            ("9007199254740993", 9007199254740992.0),
            ("-9007199254740993", -9007199254740992.0),
            ("18446744073709551615", 18446744073709551615.0),
            ("1152921504606846976", 1152921504606846976.0),
            ("12345678901234567000", 12345678901234567168.0),
            ("1e-400", 0.0),
            ("123456789012345678901234567890", 1.2345678901234568e29),
        ] {
            assert_eq!(read_exactly(inexact), Err(read_as), "{inexact}");
        }
        assert!(read_exactly("1e400").unwrap_err().is_nan());
        assert!(read_exactly("x").unwrap_err().is_nan());
    }

    #[test]
    fn the_first_inexact_number_is_found_by_its_path() {
        let found = first_inexact_number(
            r#" {"a": [1, 2.5, {"b": 100.0000000000000000001}], "c": "1e-400", "d": 0.1} "#,
        )
        .unwrap();
        assert_eq!(found.path, ["a", "2", "b"]);
        assert_eq!(found.text, "100.0000000000000000001");
        assert_eq!(found.read_as, 100.0);
        assert_eq!(
            first_inexact_number(r#"{"a": [1, "2", null, true, {}]}"#),
            None
        );
        assert_eq!(first_inexact_number("7e1").map(|f| f.path), None);
        assert!(first_inexact_number("{").is_some());
        // The one-pass check skips strings (escaped quotes and backslashes included) and takes
        // each number whole, as the walk does.
        let in_strings =
            r#"{"k\"0.10000000000000000000001": "\"9007199254740993", "n": [-0, 1.5e3]}"#;
        assert_eq!(first_inexact_number(in_strings), None);
        let after_backslash = r#"{"a": "x\\", "b": 0.10000000000000000000001}"#;
        assert_eq!(first_inexact_number(after_backslash).unwrap().path, ["b"]);
        let big = r#"{"a": 9007199254740993}"#;
        assert_eq!(
            first_inexact_number(big).map(|f| f.path),
            read_exactly("9007199254740993")
                .err()
                .map(|_| vec!["a".to_owned()])
        );
    }

    #[test]
    fn decimal_multiples_are_exact() {
        for (value, multiple, expected) in [
            ("0.07", "0.01", Some(true)),
            ("0.3", "0.1", Some(true)),
            ("1", "0.3", Some(false)),
            ("1e300", "7.5", Some(false)),
            ("3e300", "7.5", Some(true)),
            ("-4.5", "1.5", Some(true)),
            ("0", "7", Some(true)),
            ("-0.0", "7", Some(true)),
            ("1", "1e-300", Some(true)),
            ("1", "1e300", Some(false)),
            ("18446744073709551615", "5", Some(true)),
            ("18446744073709551615", "7", Some(false)),
            ("1", "0", None),
            ("x", "1", None),
        ] {
            assert_eq!(
                decimal_multiple_of(value, multiple),
                expected,
                "{value} / {multiple}"
            );
        }
    }
}
