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

pub(super) const GATE_FORMATS: [(&str, FormatCheck); 5] = [
    (REGEX_FORMAT, regex_format),
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
