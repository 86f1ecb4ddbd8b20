//! Strict JSON parsing: the one parser every stage and the policy loader use.
//!
//! `serde_json` keeps the last of two equal keys, so `{"tool":"search_web","tool":"send_payment"}`
//! would be read one way by us and another way by a parser downstream. We refuse such text at any
//! depth instead. Nesting is bounded by `serde_json`'s recursion limit (128), so hostile depth is an
//! error, never a stack overflow.
//!
//! [`parse`] builds the whole document. [`Checked`] walks a value with the same strictness but keeps
//! nothing and allocates nothing for keys and strings without escapes, for the parts of a line that
//! only need to be valid (a call's `instruction`, its other keys): that is most of what sc-gate
//! reads.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};

/// Parses one JSON document, refusing duplicate object keys at any depth and trailing text.
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let StrictValue(value) = StrictValue::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Checks that `text` is one JSON document that [`parse`] would accept, without building it.
pub(crate) fn validate(text: &str) -> Result<(), serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    Checked::deserialize(&mut deserializer)?;
    deserializer.end()
}

/// Names a JSON value's type the way error messages say it ("a string", "an object").
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The error for a key seen twice in one object, worded as [`parse`] words it.
pub(crate) fn duplicate_key<E: de::Error>(key: &str) -> E {
    E::custom(format_args!("duplicate key `{key}`"))
}

/// An object key as written: borrowed from the text when it has no escapes, decoded otherwise.
pub struct Key<'de>(pub Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// The keys of one object seen so far, for refusing a duplicate without building a map: a few
/// borrowed keys are compared in place; many keys, or decoded ones, go to a hash set.
pub(crate) struct KeySet<'de> {
    inline: [&'de str; KeySet::INLINE],
    len: usize,
    spill: Option<HashSet<Cow<'de, str>>>,
}

impl Default for KeySet<'_> {
    fn default() -> Self {
        KeySet {
            inline: [""; KeySet::INLINE],
            len: 0,
            spill: None,
        }
    }
}

impl<'de> KeySet<'de> {
    /// An audit event has about a dozen keys, a call half that.
    const INLINE: usize = 16;

    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a key; `false` when it was already there.
    pub fn insert(&mut self, key: Cow<'de, str>) -> bool {
        if let Some(spill) = &mut self.spill {
            return spill.insert(key);
        }
        let seen = &self.inline[..self.len];
        if seen.iter().any(|k| **k == *key) {
            return false;
        }
        match key {
            Cow::Borrowed(key) if self.len < Self::INLINE => {
                self.inline[self.len] = key;
                self.len += 1;
            }
            key => {
                let mut spill: HashSet<Cow<'de, str>> =
                    seen.iter().map(|k| Cow::Borrowed(*k)).collect();
                spill.insert(key);
                self.spill = Some(spill);
            }
        }
        true
    }
}

/// A strictly checked value that keeps nothing: every key of every object is compared, numbers
/// must be finite, and nesting is bounded, exactly as in [`parse`].
pub(crate) struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckVisitor)
    }
}

struct CheckVisitor;

impl<'de> Visitor<'de> for CheckVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Checked, E> {
        check_f64(v).map(|()| Checked)
    }

    fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_none<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Checked, A::Error> {
        check_seq(seq).map(|()| Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Checked, A::Error> {
        check_map(map).map(|()| Checked)
    }
}

/// Checks the rest of an array strictly, keeping nothing (for visitors that take any value).
pub(crate) fn check_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Checked>()?.is_some() {}
    Ok(())
}

/// Checks the rest of an object strictly, keeping nothing (for visitors that take any value).
pub(crate) fn check_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    let mut keys = KeySet::new();
    while let Some(Key(key)) = map.next_key()? {
        if !keys.insert(key.clone()) {
            return Err(duplicate_key(&key));
        }
        map.next_value::<Checked>()?;
    }
    Ok(())
}

/// A finite number, as [`parse`] requires.
pub(crate) fn check_f64<E: de::Error>(v: f64) -> Result<(), E> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(E::custom("number is not finite"))
    }
}

/// A value built with [`parse`]'s strictness, for use inside other strict walks.
pub(crate) struct StrictValue(pub Value);

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
            match object.entry(key) {
                Entry::Occupied(entry) => return Err(duplicate_key(entry.key())),
                Entry::Vacant(entry) => {
                    let StrictValue(value) = map.next_value()?;
                    entry.insert(value);
                }
            }
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
    fn validating_accepts_and_refuses_exactly_what_parsing_does() {
        let many_keys = format!(
            "{{{}}}",
            (0..40)
                .map(|i| format!("\"k{i}\":{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let many_keys_twice = many_keys.replace("\"k39\"", "\"k3\"");
        let deep = "[".repeat(200) + &"]".repeat(200);
        for text in [
            r#"{"a":[1,2.5,"x",null,true],"b":{"c":{}}}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"args":{"x":[{"amount":1,"amount":2}]}}"#,
            r#"{"tool":"a","\u0074ool":"b"}"#,
            r#"{"\u0074ool":"a","tool":"b"}"#,
            r#"{"a":1} x"#,
            r#"{"a":1e999}"#,
            r#"{"a":"\ud800"}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"a" 1}"#,
            r#"[1,2,]"#,
            "",
            "  7 ",
            &many_keys,
            &many_keys_twice,
            &deep,
        ] {
            let parsed = parse(text).map(|_| ()).map_err(|e| e.to_string());
            let validated = validate(text).map_err(|e| e.to_string());
            assert_eq!(parsed, validated, "{text}");
        }
    }

    #[test]
    fn key_sets_find_duplicates_inline_and_spilled() {
        let mut keys = KeySet::new();
        for i in 0..20 {
            assert!(keys.insert(Cow::Owned(format!("k{i}"))), "{i}");
            assert!(!keys.insert(Cow::Owned(format!("k{i}"))), "{i}");
        }
        let mut keys = KeySet::new();
        assert!(keys.insert(Cow::Borrowed("a")));
        assert!(!keys.insert(Cow::Owned("a".into())));
        assert!(keys.insert(Cow::Owned("b".into())));
        assert!(!keys.insert(Cow::Borrowed("b")));
    }

    #[test]
    fn escaped_keys_are_compared_decoded() {
        let err = parse(r#"{"tool":"a","\u0074ool":"b"}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate key `tool`"), "{err}");
    }
}
