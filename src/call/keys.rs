//! How a reader may take an argument name: folding keys that differ only in how they are
//! written, and finding two keys of one object that fold alike.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Map, Value};

/// An argument name as a lenient reader takes it, to find names that differ only in how they are
/// written: letters in one case (upper then lower, as case-insensitive matching folds them: `ſ`
/// is `s`, the Kelvin sign is `k`), fullwidth forms as their ASCII letters (`ｔｏ` as `to`), and
/// no invisible characters (control, zero-width, bidi). `AMOUNT`, `Amount`, `amount\u{200b}` and
/// `ａｍｏｕｎｔ` all fold to `amount`. White space stays (readers do not drop it), and letters of
/// other scripts that only look alike (Cyrillic `а`) are not folded. Borrowed when the name is
/// its own fold.
pub(crate) fn fold_key(name: &str) -> Cow<'_, str> {
    let plain = |c: char| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c.is_ascii_punctuation() || c == ' '
    };
    if name.chars().all(plain) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if crate::sanitize::is_invisible(c) {
            continue;
        }
        let c = match u32::from(c) {
            // Fullwidth ASCII (`！` to `～`) sits 0xFEE0 above ASCII.
            wide @ 0xFF01..=0xFF5E => char::from_u32(wide - 0xFEE0).unwrap_or(c),
            _ => c,
        };
        out.extend(c.to_uppercase().flat_map(char::to_lowercase));
    }
    Cow::Owned(out)
}

/// Whether two keys of the JSON text could fold alike ([`fold_key`]): only when the text has an
/// upper-case letter, a DEL, a non-ASCII character or an escape (the other control characters
/// are always escaped; DEL may stand raw, and folding drops it as invisible). Otherwise every key
/// is its own fold, and two equal ones were already refused as a duplicate.
pub(crate) fn keys_may_fold_alike(json: &str) -> bool {
    json.bytes()
        .any(|b| b >= 0x7f || b.is_ascii_uppercase() || b == b'\\')
}

/// Two keys of one object, at any depth, that fold alike ([`fold_key`]): the path to the object
/// and the two keys as written. A reader that matches names without case (Go's `encoding/json`,
/// .NET's web defaults) takes either for the other, so a rule that reads one is not enough.
pub(crate) fn keys_spelt_alike(args: &Map<String, Value>) -> Option<(Vec<String>, String, String)> {
    fn object(
        object: &Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Option<(Vec<String>, String, String)> {
        let mut seen: HashMap<Cow<'_, str>, &str> = HashMap::with_capacity(object.len());
        for key in object.keys() {
            if let Some(first) = seen.insert(fold_key(key), key) {
                return Some((path.clone(), first.to_owned(), key.clone()));
            }
        }
        object.iter().find_map(|(key, value)| {
            path.push(key.clone());
            let found = any(value, path);
            path.pop();
            found
        })
    }
    fn any(value: &Value, path: &mut Vec<String>) -> Option<(Vec<String>, String, String)> {
        match value {
            Value::Object(inner) => object(inner, path),
            Value::Array(items) => items.iter().enumerate().find_map(|(index, value)| {
                path.push(index.to_string());
                let found = any(value, path);
                path.pop();
                found
            }),
            _ => None,
        }
    }
    object(args, &mut Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fold_as_a_lenient_reader_takes_them() {
        for (key, folded) in [
            ("amount", "amount"),
            ("AMOUNT", "amount"),
            ("Amount", "amount"),
            ("amount\u{200b}", "amount"),
            ("amount\t", "amount"),
            (" amount", " amount"),
            ("ａｍｏｕｎｔ", "amount"),
            ("\u{212a}ey", "key"),
            ("ſum", "sum"),
            ("a b", "a b"),
            ("аmount", "аmount"),
        ] {
            assert_eq!(fold_key(key), folded, "{key:?}");
        }
        assert!(matches!(fold_key("plain_key-1.x y"), Cow::Borrowed(_)));
        // The cheap test never says no where two keys fold alike.
        for json in [
            r#"{"a":1,"A":2}"#,
            r#"{"a":1,"a\t":2}"#,
            r#"{"a":1,"\u0061":2}"#,
            "{\"a\":1,\"ａ\":2}",
            "{\"a\":1,\"a\u{7f}\":2}",
        ] {
            assert!(keys_may_fold_alike(json), "{json}");
        }
        assert!(!keys_may_fold_alike(
            r#"{"to":"acme","amount":5,"memo":"a b"}"#
        ));
    }
}
