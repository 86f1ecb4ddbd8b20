//! A `toolArgs` schema compiled for checking: JSON Schema draft 2020-12 through the `boon` crate,
//! with `format` asserted, nothing fetched, and `multipleOf` exact in decimal.
//!
//! Before the validator sees a schema, one walk over the places where it reads schemas
//! ([`walk`]) refuses what it would let pass unchecked: a `format` it does not check (it would
//! ignore it), a `$schema` of another draft (it would switch drafts), a `$ref` that points
//! anywhere but at one of those places (it would read data, or a keyword it does not know, as a
//! schema the walk never saw), and a schema that refers to itself ([`references`]: the
//! validator's work on one could double with each level of an argument). The walk rewrites each
//! pattern so that the `regex` crate means what ECMA-262 means ([`super::ecma`]), reads
//! `format: "regex"` arguments the same way, and guards the formats the crate checks too
//! loosely ([`formats`]).
//!
//! And it moves every `multipleOf` to an exact check of our own. The validator divides floats
//! (`1e40` is a multiple of `0.3` to it); it has no custom keywords, only custom formats, each a
//! name and a plain function. So each distinct divisor gets a slot (64 of them for the process),
//! a format named for the slot whose function reads the divisor from its slot, and the
//! `multipleOf` becomes that `format` where it stood (or, beside a `format` of the author's, one
//! more entry of its `allOf`). It composes as the keyword did, under `not`, `anyOf`, `$ref` and
//! the rest.

mod error;
mod formats;
mod references;
mod walk;

use std::error::Error;

use serde_json::Value;

pub(crate) use error::location;
pub use error::SchemaError;
#[cfg(test)]
pub(crate) use formats::FORMATS;
use formats::{GATE_FORMATS, SLOT_FORMATS, SLOT_PREFIX};
use references::percent_decode;
use walk::prepare;

/// Where the schema lives for the validator: a name, never fetched (see [`NothingFetched`]).
const URL: &str = "urn:skeleton-crew:tool-args";

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
            message: crate::sanitize::one_line(&format!(
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
                message: crate::sanitize::one_line(&message),
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
    crate::sanitize::one_line(&text)
}

/// Refuses every reference that would leave the document: nothing is fetched or read.
struct NothingFetched;

impl boon::UrlLoader for NothingFetched {
    fn load(&self, url: &str) -> Result<Value, Box<dyn Error>> {
        Err(format!("{} is outside the policy", crate::sanitize::quoted(url)).into())
    }
}
