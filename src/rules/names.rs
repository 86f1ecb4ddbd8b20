//! Names in a policy: what makes a name unseeable, and the did-you-mean of every key. Shared by
//! the policy and the argument rules, and below both.

use crate::sanitize::quoted;

/// Why a name in the policy would never match: names compare exactly, so a name with white space
/// at an end or an unseeable character is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("\"{}\" has white space at its start or end; names are compared exactly", quoted(.0))]
    WhiteSpaceAtAnEnd(String),
    #[error("\"{}\" holds a control or invisible character; names are compared exactly", quoted(.0))]
    Invisible(String),
}

/// Refuses a name in the policy with white space at either end, or a control or invisible
/// character anywhere: names compare exactly, so such a name would never match the name a tool or
/// agent is called by, and the rule its author meant would silently not apply.
pub(crate) fn unseen_characters(name: &str) -> Result<(), NameError> {
    if name.trim() != name {
        return Err(NameError::WhiteSpaceAtAnEnd(name.to_owned()));
    }
    // Printable ASCII (every name of the shipped packs) has nothing invisible.
    if !name.bytes().all(|b| (0x20..0x7f).contains(&b))
        && name.chars().any(crate::sanitize::is_invisible)
    {
        return Err(NameError::Invisible(name.to_owned()));
    }
    Ok(())
}

/// The known name nearest to an unknown one (at most four edits away), for "did you mean …?".
pub(crate) fn did_you_mean<'k>(unknown: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|name| (strsim::damerau_levenshtein(unknown, name), *name))
        .min()
        .filter(|(distance, _)| *distance <= 4)
        .map(|(_, name)| name)
}
