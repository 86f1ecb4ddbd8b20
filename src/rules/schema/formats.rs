//! The formats: the ones the crate checks ([`FORMATS`]), the gate's own beside them, and the
//! slots that check `multipleOf` exactly (see the module above).

use std::error::Error;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

/// The values of `format` that are checked, under draft 2020-12 with this build of the
/// `boon` crate (a test keeps this list and the crate in step). Any other is a load error.
pub(crate) const FORMATS: &[&str] = &[
    "date",
    "date-time",
    "duration",
    "email",
    "hostname",
    "idn-email",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "iri",
    "iri-reference",
    "json-pointer",
    "period",
    "regex",
    "relative-json-pointer",
    "time",
    "uri",
    "uri-reference",
    "uri-template",
    "uuid",
];

/// The gate's own formats, besides the slots: `format: "regex"` as ECMA-262 read in linear time
/// (the crate's own check of it takes time quadratic in the argument), and guards beside the
/// formats the crate checks too loosely: `email` and `idn-email` let a line break or a NUL
/// through a quoted local part, and `iri`, `iri-reference` and `uri-template` (read by a URL
/// parser that strips tabs and line breaks and escapes the rest) let through what no IRI or
/// template holds.
pub(super) const REGEX_FORMAT: &str = "regex (ECMA-262, the gate's)";
const PRINTABLE_ASCII: &str = "printable ASCII only (the gate's)";
const NO_CONTROLS: &str = "no control characters (the gate's)";
const IRI_CHARACTERS: &str = "no space, control character or \"<>\\^`{|} (the gate's)";
const TEMPLATE_CHARACTERS: &str = "no space, control character or \"'<>\\^`| (the gate's)";

/// `uniqueItems: true`, ours: the crate hashes an array as its items in a row, so `[[]]` and
/// `[[],[]]`, `[[[]]]`… collide, and a megabyte of them took it 8 s (each item compared with
/// every one before).
pub(super) const UNIQUE_ITEMS: &str = "uniqueItems (the gate's)";

pub(super) const GATE_FORMATS: [(&str, FormatCheck); 6] = [
    (REGEX_FORMAT, regex_format),
    (UNIQUE_ITEMS, unique_items),
    (PRINTABLE_ASCII, |text| {
        refuse_chars(text, |c| !(' '..='~').contains(&c))
    }),
    (NO_CONTROLS, |text| refuse_chars(text, char::is_control)),
    (IRI_CHARACTERS, |text| {
        refuse_chars(text, |c| {
            c.is_control() || c.is_whitespace() || "\"<>\\^`{|}".contains(c)
        })
    }),
    (TEMPLATE_CHARACTERS, |text| {
        refuse_chars(text, |c| {
            c.is_control() || c.is_whitespace() || "\"'<>\\^`|".contains(c)
        })
    }),
];

/// The guard beside a format the crate checks too loosely.
pub(super) fn guard(format: &str) -> Option<&'static str> {
    match format {
        "email" => Some(PRINTABLE_ASCII),
        "idn-email" => Some(NO_CONTROLS),
        "iri" | "iri-reference" => Some(IRI_CHARACTERS),
        "uri-template" => Some(TEMPLATE_CHARACTERS),
        _ => None,
    }
}

fn regex_format(value: &Value) -> Result<(), Box<dyn Error>> {
    match value {
        Value::String(text) => super::super::ecma::to_rust(text)
            .map(drop)
            .map_err(Into::into),
        _ => Ok(()),
    }
}

fn unique_items(value: &Value) -> Result<(), Box<dyn Error>> {
    let Value::Array(items) = value else {
        return Ok(());
    };
    let seed = foldhash::fast::RandomState::default();
    let mut seen: std::collections::HashMap<u64, Vec<usize>> = std::collections::HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let same = seen.entry(shape_hash(&seed, item)).or_default();
        if let Some(before) = same.iter().find(|&&before| equal(&items[before], item)) {
            return Err(format!("items {before} and {index} are equal").into());
        }
        same.push(index);
    }
    Ok(())
}

/// A hash of a JSON value that JSON Schema's equality keeps: numbers by value (`1` and `1.0`
/// alike; every number in checked args is one a float holds as written), objects whatever
/// their keys' order, and arrays and objects by their length as well as their members.
fn shape_hash(seed: &foldhash::fast::RandomState, value: &Value) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut hasher = seed.build_hasher();
    match value {
        Value::Null => 0u8.hash(&mut hasher),
        Value::Bool(b) => (1u8, b).hash(&mut hasher),
        Value::Number(n) => {
            // -0 is 0.
            let n = n
                .as_f64()
                .map_or(0, |n| if n == 0.0 { 0 } else { n.to_bits() });
            (2u8, n).hash(&mut hasher)
        }
        Value::String(text) => (3u8, text).hash(&mut hasher),
        Value::Array(items) => {
            (4u8, items.len()).hash(&mut hasher);
            items
                .iter()
                .for_each(|item| shape_hash(seed, item).hash(&mut hasher));
        }
        Value::Object(members) => {
            let unordered = members.iter().fold(0u64, |sum, (key, member)| {
                sum.wrapping_add(seed.hash_one((key, shape_hash(seed, member))))
            });
            (5u8, members.len(), unordered).hash(&mut hasher)
        }
    }
    hasher.finish()
}

/// JSON Schema's equality of two values.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| equal(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, member)| b.get(key).is_some_and(|other| equal(member, other)))
        }
        _ => a == b,
    }
}

/// A string with a character `refused` names is refused, naming it; anything else passes.
fn refuse_chars(value: &Value, refused: impl Fn(char) -> bool) -> Result<(), Box<dyn Error>> {
    match value {
        Value::String(text) => match text.chars().find(|&c| refused(c)) {
            Some(c) => Err(format!("holds {c:?}, which this format never does").into()),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// How many distinct `multipleOf` divisors one process can check.
pub(super) const SLOTS: usize = 64;

/// Each slot's divisor, as its decimal text: set once, never changed.
static DIVISORS: [OnceLock<String>; SLOTS] = [const { OnceLock::new() }; SLOTS];

/// The slot of `divisor`: the one that already holds it, or the first free one.
pub(super) fn slot(divisor: &str) -> Option<usize> {
    static TAKING: Mutex<()> = Mutex::new(());
    let _taking = TAKING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    DIVISORS.iter().position(|held| match held.get() {
        Some(held) => held == divisor,
        None => held.set(divisor.to_owned()).is_ok(),
    })
}

pub(super) const SLOT_PREFIX: &str = "exact multipleOf #";

pub(super) type FormatCheck = fn(&Value) -> Result<(), Box<dyn Error>>;

/// `multipleOf` with the divisor in slot `I`, exactly in decimal. Undecidable texts (never from
/// a parsed number), and a slot never set, are not multiples: fail closed.
fn exact_multiple_of<const I: usize>(value: &Value) -> Result<(), Box<dyn Error>> {
    let Value::Number(number) = value else {
        return Ok(());
    };
    let divisor = DIVISORS[I].get().ok_or("no divisor")?;
    let text = number.to_string();
    if crate::amount::decimal_multiple_of(&text, divisor).unwrap_or(false) {
        Ok(())
    } else {
        Err(format!("{text} is not a multiple of {divisor}").into())
    }
}

macro_rules! slot_formats {
    ($($i:literal)*) => {
        /// Each slot's format: its name and its check.
        pub(super) const SLOT_FORMATS: [(&str, FormatCheck); SLOTS] =
            [$((concat!("exact multipleOf #", $i), exact_multiple_of::<$i>)),*];
    };
}

slot_formats!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
);
