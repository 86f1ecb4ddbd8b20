//! The errors a user is shown for how a program was called or configured (exit status 2), in one
//! place below every module that raises them: [`UsageError`] for flags and arguments,
//! [`PolicyError`] for a policy file. A stage's other failures are runtime errors (exit 1).

use std::fmt;
use std::path::PathBuf;

/// A mistake in how the program was called or configured (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Where in a policy's text a problem is, when the JSON parser knows it (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextPosition {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for TextPosition {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Why a policy was refused. Always names the file (when there is one) and the key path (when the
/// problem is in a key), with the line:col where the JSON parser knows it and the nearest known
/// name when a name was misspelt. Shown as `policy file FILE: MESSAGE`, where the message names the
/// key as `key `a.b``.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct PolicyError {
    pub file: Option<PathBuf>,
    /// The key path the problem is in (`commands.rules[4].prefix`), when there is one.
    pub key: Option<String>,
    /// Where in the text, when the JSON parser knows it.
    pub position: Option<TextPosition>,
    /// The nearest known name, when a name was not known.
    pub suggestion: Option<String>,
    /// The whole sentence, as shown.
    pub message: String,
}

impl PolicyError {
    /// An error at a key path, with the nearest known name when a name was misspelt, as the
    /// reader of the key knows them.
    pub(crate) fn at_key(key: String, suggestion: Option<String>, message: String) -> PolicyError {
        PolicyError {
            file: None,
            key: Some(key),
            position: None,
            suggestion,
            message,
        }
    }

    /// An error of the text as a whole (it cannot be read, or is not one JSON object): no key.
    pub(crate) fn of_text(message: String) -> PolicyError {
        PolicyError {
            file: None,
            key: None,
            position: None,
            suggestion: None,
            message,
        }
    }

    /// An error of the policy's content from its sentence alone: the key path and the
    /// did-you-mean are taken from it (`key `a.b`: …`, `… did you mean `x`?`).
    pub fn new(message: String) -> PolicyError {
        let key = between(&message, "key `", "`").map(str::to_owned);
        let suggestion = between(&message, "did you mean `", "`?")
            .or_else(|| between(&message, "did you mean \"", "\"?"))
            .map(str::to_owned);
        PolicyError {
            file: None,
            key,
            position: None,
            suggestion,
            message,
        }
    }

    /// The same error, in a file.
    pub(crate) fn in_file(mut self, file: PathBuf) -> PolicyError {
        self.file = Some(file);
        self
    }

    /// The same error, at a place in the text.
    pub fn at(mut self, line: usize, column: usize) -> PolicyError {
        self.position = Some(TextPosition { line, column });
        self
    }
}

/// The text between the first `open` and the next `close` after it.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)?;
    Some(&text[start..start + end])
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "policy file {}: {}", file.display(), self.message),
            None => write!(f, "policy: {}", self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_error_knows_its_key_and_suggestion() {
        let err = PolicyError::new(
            "key `sandbox.when`: found \"tainte\"; did you mean \"tainted\"?".to_owned(),
        )
        .in_file(PathBuf::from("p.json"));
        assert_eq!(err.key.as_deref(), Some("sandbox.when"));
        assert_eq!(err.suggestion.as_deref(), Some("tainted"));
        assert_eq!(
            err.to_string(),
            "policy file p.json: key `sandbox.when`: found \"tainte\"; did you mean \"tainted\"?"
        );
        let unknown = PolicyError::new("unknown key `denytools`; did you mean `denyTools`?".into());
        assert_eq!(unknown.key.as_deref(), Some("denytools"));
        assert_eq!(unknown.suggestion.as_deref(), Some("denyTools"));
        let syntax = PolicyError::new("malformed JSON: x".into()).at(2, 5);
        assert_eq!(
            syntax.position.map(|p| p.to_string()).as_deref(),
            Some("2:5")
        );
        assert_eq!(syntax.key, None);
    }
}
