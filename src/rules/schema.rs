//! A `toolArgs` schema compiled for checking: JSON Schema draft 2020-12 through the `boon` crate,
//! with `format` asserted, nothing fetched, and `multipleOf` exact in decimal.
//!
//! Before the validator sees a schema, one walk over it ([`prepare`]) refuses what the validator
//! would let pass unchecked: a `format` it does not check (it would ignore it), a `$schema` of
//! another draft (it would switch drafts), and it moves every `multipleOf` to an exact check of
//! our own. The validator divides floats (`1e40` is a multiple of `0.3` to it); it has no custom
//! keywords, only custom formats, each a name and a plain function. So each distinct divisor
//! gets a slot ([`SLOTS`] of them, for the process), a format named for the slot whose function
//! reads the divisor from its slot, and the `multipleOf` becomes that `format` where it stood
//! (or, beside a `format` of the author's, one more entry of its `allOf`). It composes as the
//! keyword did, under `not`, `anyOf`, `$ref` and the rest.

use std::error::Error;
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value};

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

/// The draft every schema is read as; a `$schema` naming another is a load error.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Where the schema lives for the validator: a name, never fetched (see [`NothingFetched`]).
const URL: &str = "urn:skeleton-crew:tool-args";

/// Why a schema was refused at load; `at` is where in it (a JSON pointer).
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("the schema is not valid JSON Schema (draft 2020-12) at {at}: {message}", at = location(.at))]
    NotJsonSchema { at: String, message: String },
    /// A `format` the validator does not know (at `at` in the schema), with the nearest known.
    #[error("the format \"{}\" at {at} is not one the gate can check, so values would pass unchecked; {}the formats checked are {}", crate::sanitize::quoted(.format), format_hint(*.suggestion), FORMATS.join(", "))]
    UnknownFormat {
        format: String,
        at: String,
        suggestion: Option<&'static str>,
    },
    #[error("the schema cannot be compiled at {at}: {message} (remote and file references are not fetched)", at = location(.at))]
    NotCompiled { at: String, message: String },
}

fn format_hint(suggestion: Option<&str>) -> String {
    suggestion
        .map(|known| format!("did you mean \"{known}\"? "))
        .unwrap_or_default()
}

pub(crate) fn location(path: &str) -> String {
    if path.is_empty() {
        "the schema's root".to_owned()
    } else {
        path.to_owned()
    }
}

/// A schema, compiled.
pub(crate) struct Compiled {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
    /// Where a `multipleOf` now stands as a `format` → where the author wrote it.
    moved: Vec<(String, String)>,
}

/// The first way an instance breaks a schema.
pub(crate) struct Failure {
    /// The keyword that failed, as a JSON pointer into the schema as written.
    pub rule: String,
    /// Where in the instance, as a JSON pointer (empty: the whole).
    pub at: String,
    /// What is wrong, in the validator's words.
    pub message: String,
}

impl Compiled {
    /// Compiles `schema`: checked against the draft's meta-schema, every `format` known, no
    /// reference outside the document.
    pub(crate) fn new(schema: &Value) -> Result<Compiled, SchemaError> {
        let prepared = prepare(schema)?;
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        compiler.enable_format_assertions();
        compiler.use_loader(Box::new(NothingFetched));
        for &slot in &prepared.slots {
            let (name, func) = SLOT_FORMATS[slot];
            compiler.register_format(boon::Format { name, func });
        }
        compiler
            .add_resource(URL, prepared.schema)
            .map_err(refused)?;
        let mut schemas = boon::Schemas::new();
        let index = compiler.compile(URL, &mut schemas).map_err(refused)?;
        Ok(Compiled {
            schemas,
            index,
            moved: prepared.moved,
        })
    }

    /// The first way `instance` breaks the schema, if any.
    pub(crate) fn first_failure(&self, instance: &Value) -> Option<Failure> {
        let err = self.schemas.validate(instance, self.index).err()?;
        let leaf = leaf(&err);
        let mut rule = fragment(leaf.schema_url);
        if let Some(keyword) = leaf.kind.keyword_path() {
            rule.push('/');
            rule.push_str(&keyword.to_string());
        }
        let message = match &leaf.kind {
            boon::ErrorKind::Format { want, err, .. } if want.starts_with(SLOT_PREFIX) => {
                if let Some((_, written)) = self.moved.iter().find(|(now, _)| *now == rule) {
                    rule = written.clone();
                }
                err.to_string()
            }
            _ => describe(leaf),
        };
        Some(Failure {
            rule,
            at: leaf.instance_location.to_string(),
            message,
        })
    }
}

/// The error the validator names, not the groups around it: the first cause of each error that
/// only gathers others (the schema, a `$ref`, `allOf`, `properties`), down to a keyword.
fn leaf<'a, 's, 'v>(
    mut err: &'a boon::ValidationError<'s, 'v>,
) -> &'a boon::ValidationError<'s, 'v> {
    while let Some(first) = err.causes.first() {
        match err.kind {
            boon::ErrorKind::Group
            | boon::ErrorKind::Schema { .. }
            | boon::ErrorKind::Reference { .. }
            | boon::ErrorKind::AllOf => err = first,
            _ => break,
        }
    }
    err
}

/// The JSON pointer of a schema URL's fragment, percent-decoded.
fn fragment(url: &str) -> String {
    let fragment = url.split_once('#').map_or("", |(_, fragment)| fragment);
    percent_decode(fragment)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The validator's refusal of a schema, as ours: where, and why.
fn refused(err: boon::CompileError) -> SchemaError {
    match err {
        boon::CompileError::ValidationError { src, .. } => {
            let leaf = leaf(&src);
            SchemaError::NotJsonSchema {
                at: leaf.instance_location.to_string(),
                message: describe(leaf),
            }
        }
        boon::CompileError::InvalidRegex { url, regex, src } => SchemaError::NotJsonSchema {
            at: fragment(&url),
            message: one_line(&format!(
                "{} is not a regular expression the gate can run: {src}",
                crate::sanitize::quoted(&regex)
            )),
        },
        other => {
            let mut message = other.to_string();
            if let Some(source) = other.source() {
                message = format!("{message}: {source}");
            }
            SchemaError::NotCompiled {
                at: match &other {
                    boon::CompileError::JsonPointerNotFound(url)
                    | boon::CompileError::InvalidJsonPointer(url)
                    | boon::CompileError::AnchorNotFound { url, .. } => fragment(url),
                    _ => String::new(),
                },
                message: one_line(&message),
            }
        }
    }
}

/// What an error says, on one line; where it is one of several alternatives that all failed
/// (`anyOf`, `oneOf`), each alternative's reason too.
fn describe(err: &boon::ValidationError) -> String {
    let mut text = err.kind.to_string();
    if matches!(
        err.kind,
        boon::ErrorKind::AnyOf | boon::ErrorKind::OneOf(None)
    ) && !err.causes.is_empty()
    {
        let each: Vec<String> = err.causes.iter().map(|c| describe(leaf(c))).collect();
        text = format!("{text} ({})", each.join("; or "));
    }
    one_line(&text)
}

/// `text` with each run of white space, line breaks included, as one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Refuses every reference that would leave the document: nothing is fetched or read.
struct NothingFetched;

impl boon::UrlLoader for NothingFetched {
    fn load(&self, url: &str) -> Result<Value, Box<dyn Error>> {
        Err(format!("{} is outside the policy", crate::sanitize::quoted(url)).into())
    }
}

/// A schema as the validator is given it.
struct Prepared {
    schema: Value,
    moved: Vec<(String, String)>,
    slots: Vec<usize>,
}

/// The keywords whose value is data, never a schema: nothing in them is a keyword.
const DATA: &[&str] = &["enum", "const", "default", "examples"];

/// The keywords whose value maps names (of properties, of definitions) to schemas.
const NAMED_SCHEMAS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Walks `schema`: every object that can be a schema, wherever it sits (a `$ref` can point into
/// a keyword the validator does not know), except data; refuses an unknown `format` and another
/// draft's `$schema`, and moves each `multipleOf` to its slot's format.
fn prepare(schema: &Value) -> Result<Prepared, SchemaError> {
    let mut prepared = Prepared {
        schema: schema.clone(),
        moved: Vec::new(),
        slots: Vec::new(),
    };
    let mut path = String::new();
    walk(
        &mut prepared.schema,
        &mut path,
        &mut prepared.moved,
        &mut prepared.slots,
    )?;
    Ok(prepared)
}

fn walk(
    value: &mut Value,
    path: &mut String,
    moved: &mut Vec<(String, String)>,
    slots: &mut Vec<usize>,
) -> Result<(), SchemaError> {
    match value {
        Value::Object(object) => {
            for (keyword, value) in object.iter_mut() {
                let len = path.len();
                push(path, keyword);
                match (keyword.as_str(), &mut *value) {
                    (data, value) if DATA.contains(&data) => no_multiple_of_in_data(value, path)?,
                    // Names to the names they require: no schema, nor a keyword, in it.
                    ("dependentRequired", _) => {}
                    (named, Value::Object(schemas)) if NAMED_SCHEMAS.contains(&named) => {
                        for (name, schema) in schemas.iter_mut() {
                            let len = path.len();
                            push(path, name);
                            walk(schema, path, moved, slots)?;
                            path.truncate(len);
                        }
                    }
                    ("format", Value::String(name)) => known_format(name, path)?,
                    ("$schema", Value::String(draft)) => {
                        if draft.trim_end_matches('#') != DRAFT_2020_12 {
                            return Err(SchemaError::NotJsonSchema {
                                at: path.clone(),
                                message: format!(
                                    "{} is not draft 2020-12 ({DRAFT_2020_12}), the one the gate reads",
                                    crate::sanitize::quoted(draft)
                                ),
                            });
                        }
                    }
                    (_, value) => walk(value, path, moved, slots)?,
                }
                path.truncate(len);
            }
            // After the walk, so that the walk never takes a slot's format for the author's.
            move_multiple_of(object, path, moved, slots)?;
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                let len = path.len();
                push(path, &index.to_string());
                walk(item, path, moved, slots)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Appends a JSON pointer token, escaped.
fn push(path: &mut String, token: &str) {
    path.push('/');
    path.push_str(&token.replace('~', "~0").replace('/', "~1"));
}

fn known_format(name: &str, at: &str) -> Result<(), SchemaError> {
    if FORMATS.contains(&name) {
        return Ok(());
    }
    let suggestion = FORMATS
        .iter()
        .map(|known| {
            (
                strsim::damerau_levenshtein(&name.to_lowercase(), known),
                *known,
            )
        })
        .min()
        .filter(|(distance, _)| *distance <= 3)
        .map(|(_, known)| known);
    Err(SchemaError::UnknownFormat {
        format: name.to_owned(),
        at: at.to_owned(),
        suggestion,
    })
}

/// Data is never rewritten; were a `$ref` to point into it, the validator would read an object
/// there as a schema, and a `multipleOf` in it would divide floats. Refused, as a load error.
fn no_multiple_of_in_data(value: &Value, path: &mut String) -> Result<(), SchemaError> {
    match value {
        Value::Object(object) => {
            for (key, value) in object {
                let len = path.len();
                push(path, key);
                if key == "multipleOf" {
                    return Err(SchemaError::NotCompiled {
                        at: path.clone(),
                        message: "a `multipleOf` inside data (`enum`, `const`, `default`, `examples`) could be checked only inexactly".to_owned(),
                    });
                }
                no_multiple_of_in_data(value, path)?;
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let len = path.len();
                push(path, &index.to_string());
                no_multiple_of_in_data(item, path)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Moves the object's `multipleOf`, if any, to its divisor's slot format (see the module).
fn move_multiple_of(
    object: &mut Map<String, Value>,
    path: &str,
    moved: &mut Vec<(String, String)>,
    slots: &mut Vec<usize>,
) -> Result<(), SchemaError> {
    let Some(divisor) = object.get("multipleOf") else {
        return Ok(());
    };
    let written = format!("{path}/multipleOf");
    // The meta-schema's own rule for the keyword, checked here since the keyword goes.
    let divisor = match divisor {
        Value::Number(number) if number.as_f64().is_some_and(|n| n > 0.0) => number.to_string(),
        _ => {
            return Err(SchemaError::NotJsonSchema {
                at: written,
                message: "`multipleOf` must be a number above 0".to_owned(),
            })
        }
    };
    let slot = slot(&divisor).ok_or_else(|| SchemaError::NotCompiled {
        at: written.clone(),
        message: format!(
            "the gate checks at most {SLOTS} different `multipleOf` values in one process"
        ),
    })?;
    let name = SLOT_FORMATS[slot].0;
    let now = if !object.contains_key("format") {
        object.insert("format".to_owned(), Value::String(name.to_owned()));
        format!("{path}/format")
    } else {
        let all_of = object
            .entry("allOf")
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(all_of) = all_of else {
            return Err(SchemaError::NotJsonSchema {
                at: format!("{path}/allOf"),
                message: "`allOf` must be an array of schemas".to_owned(),
            });
        };
        all_of.push(serde_json::json!({ "format": name }));
        format!("{path}/allOf/{}/format", all_of.len() - 1)
    };
    object.remove("multipleOf");
    moved.push((now, written));
    if !slots.contains(&slot) {
        slots.push(slot);
    }
    Ok(())
}

/// How many distinct `multipleOf` divisors one process can check.
pub(crate) const SLOTS: usize = 64;

/// Each slot's divisor, as its decimal text: set once, never changed.
static DIVISORS: [OnceLock<String>; SLOTS] = [const { OnceLock::new() }; SLOTS];

/// The slot of `divisor`: the one that already holds it, or the first free one.
fn slot(divisor: &str) -> Option<usize> {
    static TAKING: Mutex<()> = Mutex::new(());
    let _taking = TAKING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    DIVISORS.iter().position(|held| match held.get() {
        Some(held) => held == divisor,
        None => held.set(divisor.to_owned()).is_ok(),
    })
}

const SLOT_PREFIX: &str = "exact multipleOf #";

type FormatCheck = fn(&Value) -> Result<(), Box<dyn Error>>;

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
        const SLOT_FORMATS: [(&str, FormatCheck); SLOTS] =
            [$((concat!("exact multipleOf #", $i), exact_multiple_of::<$i>)),*];
    };
}

slot_formats!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
);
