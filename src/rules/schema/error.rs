//! Why a schema was refused at load.

use super::formats::FORMATS;

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
