//! What an `args.amount` is: a number the rules understand, or something they refuse to guess at.
//!
//! Understood: a JSON number ≥ 0, or a string that is a plain decimal number ≥ 0 with an optional
//! leading `$` (`"750"`, `"750.00"`, `"$750"`). Anything else (`"1,000"`, `"seven hundred"`, `-5`,
//! `true`, `{}`) is not understood, and the decision holds it for a person.
//!
//! Comparisons with a limit are exact in decimal: `100.0000000000000001` is above 100 even though
//! it rounds to 100 as a binary float. The float decides whenever it is not a tie with the limit
//! (rounding keeps order); a tie is settled on the decimal text as written.

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
    pub fn from_json_exact(value: &Value, number_text: Option<&str>) -> Amount {
        let text = value.to_string();
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
            _ => Amount::NotUnderstood { text },
        }
    }

    /// Reads an amount from a parsed value alone (exact for strings, float-exact for numbers).
    pub fn from_json(value: &Value) -> Amount {
        Amount::from_json_exact(value, None)
    }

    /// Whether an understood amount is above `limit`, exactly in decimal. An amount that is not
    /// understood is never "within" anything: it counts as above.
    pub fn is_above(&self, limit: f64) -> bool {
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

/// Compares two non-negative decimal texts (`12`, `12.50`, `1.25e1`) exactly; `None` when either
/// is not such a number or its exponent is out of range.
pub fn decimal_cmp(a: &str, b: &str) -> Option<Ordering> {
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
pub fn number_text_at(json: &str, path: &[&str]) -> Option<String> {
    fn walk(raw: &RawValue, path: &[&str]) -> Option<String> {
        let Some((first, rest)) = path.split_first() else {
            let text = raw.get();
            let starts_like_number = text.starts_with(|c: char| c == '-' || c.is_ascii_digit());
            return starts_like_number.then(|| text.to_owned());
        };
        let object: std::collections::HashMap<std::borrow::Cow<'_, str>, &RawValue> =
            serde_json::from_str(raw.get()).ok()?;
        walk(object.get(*first)?, rest)
    }
    let root: &RawValue = serde_json::from_str(json).ok()?;
    walk(root, path)
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
}
