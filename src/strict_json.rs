//! Strict JSON parsing: the one parser every stage and the policy loader use.
//!
//! `serde_json` keeps the last of two equal keys, so `{"tool":"search_web","tool":"send_payment"}`
//! would be read one way by us and another way by a parser downstream. We refuse such text at any
//! depth instead. Nesting is bounded by `serde_json`'s recursion limit (128), so hostile depth is an
//! error, never a stack overflow.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Parses one JSON document, refusing duplicate object keys at any depth and trailing text.
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let StrictValue(value) = StrictValue::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Names a JSON value's type the way error messages say it ("a string", "an object").
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number is not finite"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
            let StrictValue(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_documents() {
        let value = parse(r#"{"a":[1,2.5,"x",null,true],"b":{"c":{}}}"#).unwrap();
        assert_eq!(value["a"][1], 2.5);
        assert_eq!(value["b"]["c"], serde_json::json!({}));
    }

    #[test]
    fn refuses_duplicate_keys_at_the_top() {
        let err = parse(r#"{"tool":"a","tool":"b"}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate key `tool`"), "{err}");
    }

    #[test]
    fn refuses_duplicate_keys_deep_inside() {
        let err = parse(r#"{"args":{"x":[{"amount":1,"amount":2}]}}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate key `amount`"), "{err}");
    }

    #[test]
    fn refuses_trailing_text_and_two_documents() {
        assert!(parse(r#"{"a":1} x"#).is_err());
        assert!(parse(r#"{"a":1}{"a":2}"#).is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        let err = parse(&deep).unwrap_err();
        assert!(err.to_string().contains("recursion limit"), "{err}");
    }

    #[test]
    fn escaped_keys_are_compared_decoded() {
        let err = parse(r#"{"tool":"a","\u0074ool":"b"}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate key `tool`"), "{err}");
    }
}
