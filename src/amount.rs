//! What an `args.amount` is: a number the rules understand, or something they refuse to guess at.
//!
//! Understood: a JSON number ≥ 0, or a string that is a plain decimal number ≥ 0 with an optional
//! leading `$` (`"750"`, `"750.00"`, `"$750"`). Anything else (`"1,000"`, `"seven hundred"`, `-5`,
//! `true`, `{}`) is not understood, and the decision holds it for a person.

use serde_json::Value;

/// An amount read from a call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Amount {
    /// A non-negative, finite amount, with the text it was written as (for reasons).
    Understood { value: f64, text: String },
    /// Present but not something the rules can compare; `text` is the JSON as written.
    NotUnderstood { text: String },
}

impl Amount {
    /// Reads an amount from its JSON value.
    pub fn from_json(value: &Value) -> Amount {
        let text = value.to_string();
        let understood = match value {
            // A minus sign is never an amount we understand, not even `-0`.
            Value::Number(n) if !text.starts_with('-') => n.as_f64(),
            Value::String(s) => parse_plain_decimal(s),
            _ => None,
        };
        match understood {
            Some(value) if value.is_finite() && value >= 0.0 => Amount::Understood {
                value,
                text: without_json_quotes(&text).to_owned(),
            },
            _ => Amount::NotUnderstood { text },
        }
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
