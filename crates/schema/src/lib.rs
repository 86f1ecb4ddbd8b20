//! The JSON Schema validator behind the policy's `toolArgs` (`skeleton_crew::rules::argrules`):
//! draft 2020-12, formats checked and unknown formats refused, `email` without display text, and
//! `multipleOf` replaced by the caller's exact keyword.
//!
//! A crate of its own so that jsonschema's generic validator is compiled here, once, and not
//! inside skeleton-crew (see Cargo.toml). Everything here is a plain function.

pub use jsonschema::paths::Location;
pub use jsonschema::{Keyword, ValidationError};
use serde_json::{Map, Value};

/// Makes the keyword that checks a schema's `multipleOf`, from its value.
pub type KeywordFactory = for<'a> fn(
    &'a Map<String, Value>,
    &'a Value,
    Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>>;

/// A compiled schema.
pub struct Validator(jsonschema::Validator);

/// Checks `schema` against the draft 2020-12 meta-schema.
pub fn check_meta(schema: &Value) -> Result<(), ValidationError<'_>> {
    jsonschema::draft202012::meta::validate(schema)
}

/// Compiles `schema` (already checked by [`check_meta`]), with `multiple_of` for `multipleOf`.
pub fn compile(
    schema: &Value,
    multiple_of: KeywordFactory,
) -> Result<Validator, ValidationError<'static>> {
    jsonschema::draft202012::options()
        .with_keyword("multipleOf", multiple_of)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        // RFC 5321's Mailbox, as JSON Schema defines `email`: no `Name <a@b>` display text.
        .with_email_options(jsonschema::EmailOptions::default().without_display_text())
        .build(schema)
        .map(Validator)
}

/// Whether the validator checks the draft 2020-12 format `name`.
pub fn is_known_format(name: &str) -> bool {
    jsonschema::options().is_known_format(jsonschema::Draft::Draft202012, name)
}

impl Validator {
    /// The first way `instance` breaks the schema, if any.
    pub fn first_error<'i>(&'i self, instance: &'i Value) -> Option<ValidationError<'i>> {
        self.0.iter_errors(instance).next()
    }
}
