//! A `toolArgs` schema compiled for checking: JSON Schema draft 2020-12 through the `boon` crate,
//! with `format` asserted, nothing fetched, and `multipleOf` exact in decimal.
//!
//! Before the validator sees a schema, one walk over the places where it reads schemas
//! ([`prepare`]) refuses what it would let pass unchecked: a `format` it does not check (it
//! would ignore it), a `$schema` of another draft (it would switch drafts), and a `$ref` that
//! points anywhere but at one of those places (it would read data, or a keyword it does not
//! know, as a schema the walk never saw). The walk rewrites each pattern so that the `regex`
//! crate means what ECMA-262 means ([`super::ecma`]), reads `format: "regex"` arguments the same
//! way, and adds a check beside `email` for what the crate lets through a quoted local part.
//!
//! And it moves every `multipleOf` to an exact check of our own. The validator divides floats
//! (`1e40` is a multiple of `0.3` to it); it has no custom keywords, only custom formats, each a
//! name and a plain function. So each distinct divisor gets a slot ([`SLOTS`] of them, for the
//! process), a format named for the slot whose function reads the divisor from its slot, and the
//! `multipleOf` becomes that `format` where it stood (or, beside a `format` of the author's, one
//! more entry of its `allOf`). It composes as the keyword did, under `not`, `anyOf`, `$ref` and
//! the rest.

use std::collections::HashSet;
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
        let slots = prepared.slots.iter().map(|&slot| SLOT_FORMATS[slot]);
        for (name, func) in GATE_FORMATS.into_iter().chain(slots) {
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
            boon::ErrorKind::Format { want, err, .. }
                if want.starts_with(SLOT_PREFIX) || GATE_FORMATS.iter().any(|(n, _)| n == want) =>
            {
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
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
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
    /// Where a check now stands as a `format` → where the author wrote what it checks.
    moved: Vec<(String, String)>,
    slots: Vec<usize>,
    /// Every place in the schema as written where the validator reads a schema, as the tokens
    /// of its JSON pointer: the only places a `$ref` may point.
    positions: HashSet<Vec<String>>,
    /// Each `$ref` (and `$dynamicRef`, `$recursiveRef`), with where it stands.
    references: Vec<(String, String)>,
}

/// Where the validator reads schemas (its draft 2020-12 list, which keeps the older drafts'
/// keywords): a map of names to schemas, one schema, or an array of schemas (`items` is either).
const NAMED_SCHEMAS: &[&str] = &[
    "definitions",
    "properties",
    "patternProperties",
    "dependencies",
    "$defs",
    "dependentSchemas",
];
const ONE_SCHEMA: &[&str] = &[
    "not",
    "additionalProperties",
    "items",
    "additionalItems",
    "propertyNames",
    "contains",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
const SCHEMAS: &[&str] = &["allOf", "anyOf", "oneOf", "items", "prefixItems"];

/// The gate's own formats, besides the slots: `format: "regex"` as ECMA-262 read in linear time
/// (the crate's own check of it takes time quadratic in the argument), and what `email` and
/// `idn-email` let through in a quoted local part (a line break, a NUL) refused.
const REGEX_FORMAT: &str = "regex (ECMA-262, the gate's)";
const EMAIL_GUARD: &str = "email: printable ASCII only (the gate's)";
const IDN_EMAIL_GUARD: &str = "idn-email: no control characters (the gate's)";

fn regex_format(value: &Value) -> Result<(), Box<dyn Error>> {
    match value {
        Value::String(text) => super::ecma::to_rust(text).map(drop).map_err(Into::into),
        _ => Ok(()),
    }
}

fn email_guard(value: &Value) -> Result<(), Box<dyn Error>> {
    match value {
        Value::String(text) if !text.chars().all(|c| (' '..='~').contains(&c)) => {
            Err("an address holds only printable ASCII".into())
        }
        _ => Ok(()),
    }
}

fn idn_email_guard(value: &Value) -> Result<(), Box<dyn Error>> {
    match value {
        Value::String(text) if text.chars().any(char::is_control) => {
            Err("an address holds no control character".into())
        }
        _ => Ok(()),
    }
}

const GATE_FORMATS: [(&str, FormatCheck); 3] = [
    (REGEX_FORMAT, regex_format),
    (EMAIL_GUARD, email_guard),
    (IDN_EMAIL_GUARD, idn_email_guard),
];

/// Walks the schema where the validator reads schemas, and nowhere else: refuses an unknown
/// `format`, another draft's `$schema`, an `$id` below the root and a `$ref` that points
/// anywhere but at one of those places; rewrites patterns as ECMA-262 means them
/// ([`super::ecma`]); moves each `multipleOf` to its slot's format; guards `email`.
fn prepare(schema: &Value) -> Result<Prepared, SchemaError> {
    let mut prepared = Prepared {
        schema: schema.clone(),
        moved: Vec::new(),
        slots: Vec::new(),
        positions: HashSet::new(),
        references: Vec::new(),
    };
    let mut walk = Walk {
        tokens: Vec::new(),
        prepared: &mut prepared,
    };
    let mut value = std::mem::take(&mut walk.prepared.schema);
    walk.schema(&mut value)?;
    prepared.schema = value;
    for (reference, at) in &prepared.references {
        reference_inside(reference, at, &prepared.positions)?;
    }
    Ok(prepared)
}

struct Walk<'a> {
    tokens: Vec<String>,
    prepared: &'a mut Prepared,
}

impl Walk<'_> {
    fn path(&self) -> String {
        pointer(&self.tokens)
    }

    fn at(&self, keyword: &str) -> String {
        let mut path = self.path();
        push(&mut path, keyword);
        path
    }

    fn nested(&mut self, tokens: &[&str], value: &mut Value) -> Result<(), SchemaError> {
        let len = self.tokens.len();
        self.tokens
            .extend(tokens.iter().map(|token| (*token).to_owned()));
        let walked = self.schema(value);
        self.tokens.truncate(len);
        walked
    }

    /// One place where the validator reads a schema.
    fn schema(&mut self, value: &mut Value) -> Result<(), SchemaError> {
        self.prepared.positions.insert(self.tokens.clone());
        let Value::Object(object) = value else {
            return Ok(());
        };
        for (keyword, value) in object.iter_mut() {
            let keyword = keyword.as_str();
            match value {
                Value::Object(named) if NAMED_SCHEMAS.contains(&keyword) => {
                    for (name, schema) in named.iter_mut() {
                        if schema.is_object() || schema.is_boolean() {
                            self.nested(&[keyword, name], schema)?;
                        }
                    }
                }
                Value::Array(items) if SCHEMAS.contains(&keyword) => {
                    for (index, item) in items.iter_mut().enumerate() {
                        self.nested(&[keyword, &index.to_string()], item)?;
                    }
                }
                Value::Object(_) | Value::Bool(_) if ONE_SCHEMA.contains(&keyword) => {
                    self.nested(&[keyword], value)?;
                }
                Value::String(name) if keyword == "format" => {
                    known_format(name, &self.at(keyword))?
                }
                Value::String(pattern) if keyword == "pattern" => {
                    *pattern = ecma(pattern, &self.at(keyword))?;
                }
                Value::String(draft)
                    if keyword == "$schema" && draft.trim_end_matches('#') != DRAFT_2020_12 =>
                {
                    return Err(SchemaError::NotJsonSchema {
                        at: self.at(keyword),
                        message: format!(
                            "{} is not draft 2020-12 ({DRAFT_2020_12}), the one the gate reads",
                            crate::sanitize::quoted(draft)
                        ),
                    });
                }
                _ if keyword == "$id" && !self.tokens.is_empty() => {
                    return Err(SchemaError::NotCompiled {
                        at: self.at(keyword),
                        message: "an `$id` below the schema's root (a document inside the document) is not read".to_owned(),
                    });
                }
                Value::String(reference)
                    if matches!(keyword, "$ref" | "$dynamicRef" | "$recursiveRef") =>
                {
                    let at = self.at(keyword);
                    self.prepared.references.push((reference.clone(), at));
                }
                _ => {}
            }
        }
        // After the walk, so that the walk never takes one of the gate's formats for the
        // author's, and no `$ref` may point into what the gate adds.
        if let Some(Value::Object(patterns)) = object.get_mut("patternProperties") {
            let mut read = Map::new();
            for (pattern, schema) in std::mem::take(patterns) {
                let mut at = self.at("patternProperties");
                push(&mut at, &pattern);
                read.insert(ecma(&pattern, &at)?, schema);
            }
            *patterns = read;
        }
        let path = self.path();
        match object.get("format").and_then(Value::as_str) {
            Some("regex") => {
                object.insert("format".to_owned(), REGEX_FORMAT.into());
            }
            Some("email") => self.guard(object, &path, EMAIL_GUARD)?,
            Some("idn-email") => self.guard(object, &path, IDN_EMAIL_GUARD)?,
            _ => {}
        }
        move_multiple_of(object, &path, self.prepared)
    }

    /// One more check beside the object's `format`, which it guards.
    fn guard(
        &mut self,
        object: &mut Map<String, Value>,
        path: &str,
        name: &'static str,
    ) -> Result<(), SchemaError> {
        let now = add_format(object, path, name)?;
        self.prepared.moved.push((now, format!("{path}/format")));
        Ok(())
    }
}

/// A pattern as the `regex` crate reads it with ECMA-262's meaning, or why not.
fn ecma(pattern: &str, at: &str) -> Result<String, SchemaError> {
    super::ecma::to_rust(pattern).map_err(|err| SchemaError::NotJsonSchema {
        at: at.to_owned(),
        message: format!(
            "{} is not a regular expression the gate can run (ECMA-262 without lookaround or backreferences): {err}",
            crate::sanitize::quoted(pattern)
        ),
    })
}

/// A `$ref` points inside the schema, at a place the validator reads as a schema (by JSON
/// pointer, `#/…`), or names an anchor (`#name`, which the validator finds only there).
fn reference_inside(
    reference: &str,
    at: &str,
    positions: &HashSet<Vec<String>>,
) -> Result<(), SchemaError> {
    let refused = |why: &str| SchemaError::NotCompiled {
        at: at.to_owned(),
        message: format!("{} {why}", crate::sanitize::quoted(reference)),
    };
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(refused(
            "leaves the schema: only `#/…` and `#name` are followed",
        ));
    };
    let fragment = percent_decode(fragment);
    if !fragment.is_empty() && !fragment.starts_with('/') {
        return Ok(());
    }
    let tokens: Vec<String> = fragment
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    if positions.contains(&tokens) {
        Ok(())
    } else {
        Err(refused("does not point at a schema"))
    }
}

fn pointer(tokens: &[String]) -> String {
    let mut path = String::new();
    for token in tokens {
        push(&mut path, token);
    }
    path
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

/// Puts a `format` on the object: as its `format` when it has none, else as one more entry of
/// its `allOf`. Where it now stands.
fn add_format(
    object: &mut Map<String, Value>,
    path: &str,
    name: &str,
) -> Result<String, SchemaError> {
    if !object.contains_key("format") {
        object.insert("format".to_owned(), Value::String(name.to_owned()));
        return Ok(format!("{path}/format"));
    }
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
    Ok(format!("{path}/allOf/{}/format", all_of.len() - 1))
}

/// Moves the object's `multipleOf`, if any, to its divisor's slot format (see the module).
fn move_multiple_of(
    object: &mut Map<String, Value>,
    path: &str,
    prepared: &mut Prepared,
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
    let now = add_format(object, path, SLOT_FORMATS[slot].0)?;
    object.remove("multipleOf");
    prepared.moved.push((now, written));
    if !prepared.slots.contains(&slot) {
        prepared.slots.push(slot);
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
