//! How a reason shows words and parts: quoted when not plain, cut when long.

use brush_parser::ast;

/// A word as a reason shows it: bare when plain, else in single quotes.
pub(crate) fn quote_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./=:,+@%^~{}[]*?$".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// A compound command as a reason names it (never its text: showing a deeply nested tree costs
/// time quadratic in its depth).
pub(super) fn compound_kind(compound: &ast::CompoundCommand) -> &'static str {
    use ast::CompoundCommand as C;
    match compound {
        C::Arithmetic(_) => "(( … ))",
        C::ArithmeticForClause(_) => "for (( … ))",
        C::BraceGroup(_) => "{ … }",
        C::Subshell(_) => "( … )",
        C::ForClause(_) => "for … done",
        C::CaseClause(_) => "case … esac",
        C::IfClause(_) => "if … fi",
        C::WhileClause(_) => "while … done",
        C::UntilClause(_) => "until … done",
        C::Coprocess(_) => "coproc",
    }
}

/// A part shown in a reason: at most 200 characters.
pub(super) fn cut(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
