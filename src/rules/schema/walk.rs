//! The walk over a schema before the validator sees it: where the validator reads schemas and
//! nowhere else, refusing what it would not check and rewriting what it would check otherwise.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::error::SchemaError;
use super::formats::{guard, slot, FORMATS, REGEX_FORMAT, SLOTS, SLOT_FORMATS, UNIQUE_ITEMS};
use super::references::{no_recursion, reference_targets, Reference};

/// The draft every schema is read as; a `$schema` naming another is a load error.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// A schema as the validator is given it.
pub(super) struct Prepared {
    pub(super) schema: Value,
    /// Where a check now stands as a `format` → where the author wrote what it checks.
    pub(super) moved: Vec<(String, String)>,
    pub(super) slots: Vec<usize>,
    /// Every place in the schema as written where the validator reads a schema, as the tokens
    /// of its JSON pointer: the only places a `$ref` may point.
    pub(super) positions: HashSet<Vec<String>>,
    /// Each `$ref` (and `$dynamicRef`, `$recursiveRef`).
    pub(super) references: Vec<Reference>,
    /// Each `$anchor` and `$dynamicAnchor`: its name, and the schema it names.
    pub(super) anchors: Vec<(String, Vec<String>)>,
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
const REFERENCES: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef"];

/// Walks the schema where the validator reads schemas, and nowhere else: refuses an unknown
/// `format`, another draft's `$schema`, an `$id` below the root and a `$ref` that points
/// anywhere but at one of those places; rewrites patterns as ECMA-262 means them
/// ([`crate::rules::ecma`]); moves each `multipleOf` to its slot's format; guards the loose formats.
pub(super) fn prepare(schema: &Value) -> Result<Prepared, SchemaError> {
    let mut prepared = Prepared {
        schema: schema.clone(),
        moved: Vec::new(),
        slots: Vec::new(),
        positions: HashSet::new(),
        references: Vec::new(),
        anchors: Vec::new(),
    };
    let mut value = std::mem::take(&mut prepared.schema);
    Walk {
        tokens: Vec::new(),
        prepared: &mut prepared,
    }
    .schema(&mut value)?;
    prepared.schema = value;
    let mut targets = Vec::with_capacity(prepared.references.len());
    for reference in &prepared.references {
        targets.push(reference_targets(
            reference,
            &prepared.positions,
            &prepared.anchors,
        )?);
    }
    no_recursion(&prepared.references, &targets)?;
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
                Value::String(text) if REFERENCES.contains(&keyword) => {
                    let reference = Reference {
                        recursive: keyword == "$recursiveRef",
                        text: text.clone(),
                        holder: self.tokens.clone(),
                        at: self.at(keyword),
                    };
                    self.prepared.references.push(reference);
                }
                Value::String(name) if matches!(keyword, "$anchor" | "$dynamicAnchor") => {
                    self.prepared
                        .anchors
                        .push((name.clone(), self.tokens.clone()));
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
                if read.insert(ecma(&pattern, &at)?, schema).is_some() {
                    return Err(SchemaError::NotJsonSchema {
                        at,
                        message: "means the same as another pattern of this `patternProperties` once read as ECMA-262 means it".to_owned(),
                    });
                }
            }
            *patterns = read;
        }
        let path = self.path();
        match object.get("format").and_then(Value::as_str) {
            Some("regex") => {
                object.insert("format".to_owned(), REGEX_FORMAT.into());
            }
            Some(format) => {
                if let Some(name) = guard(format) {
                    let now = add_format(object, &path, name)?;
                    self.prepared.moved.push((now, format!("{path}/format")));
                }
            }
            None => {}
        }
        self.move_unique_items(object, &path)?;
        move_multiple_of(object, &path, self.prepared)
    }

    /// `uniqueItems: true` to the gate's own check (see [`UNIQUE_ITEMS`]); `false` checks nothing.
    fn move_unique_items(
        &mut self,
        object: &mut Map<String, Value>,
        path: &str,
    ) -> Result<(), SchemaError> {
        let written = format!("{path}/uniqueItems");
        match object.remove("uniqueItems") {
            None | Some(Value::Bool(false)) => Ok(()),
            Some(Value::Bool(true)) => {
                let now = add_format(object, path, UNIQUE_ITEMS)?;
                self.prepared.moved.push((now, written));
                Ok(())
            }
            Some(_) => Err(SchemaError::NotJsonSchema {
                at: written,
                message: "`uniqueItems` must be true or false".to_owned(),
            }),
        }
    }
}

/// A pattern as the `regex` crate reads it with ECMA-262's meaning, or why not.
fn ecma(pattern: &str, at: &str) -> Result<String, SchemaError> {
    super::super::ecma::to_rust(pattern).map_err(|err| SchemaError::NotJsonSchema {
        at: at.to_owned(),
        message: format!(
            "{} is not a regular expression the gate can run (ECMA-262 without lookaround or backreferences): {err}",
            crate::sanitize::quoted(pattern)
        ),
    })
}

fn pointer(tokens: &[String]) -> String {
    let mut path = String::new();
    for token in tokens {
        push(&mut path, token);
    }
    path
}

/// Appends a JSON pointer token, escaped.
pub(super) fn push(path: &mut String, token: &str) {
    path.push('/');
    path.push_str(&token.replace('~', "~0").replace('/', "~1"));
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
