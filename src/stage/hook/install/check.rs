//! One check of `sc-hook doctor`: whether it holds, what was found, and the fix.

/// One check: whether it holds, what was found, and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub ok: bool,
    pub line: String,
}

impl Check {
    pub(super) fn pass(line: impl Into<String>) -> Check {
        Check {
            ok: true,
            line: line.into(),
        }
    }

    pub(super) fn fail(what: impl Into<String>, fix: impl std::fmt::Display) -> Check {
        Check {
            ok: false,
            line: format!("{}; fix: {fix}", what.into()),
        }
    }
}
