//! One word: quote removal, and the expansions in it (parameters, substitutions, arithmetic),
//! whose bodies are walked.

use brush_parser::word::{self, Parameter, ParameterExpr, WordPiece};
use brush_parser::ParserOptions;

use super::show::{cut, quote_word};
use super::text::{ansi_c, has_glob, is_literal_arithmetic, plain_word, unescape_backquoted};
use super::{guarded, DynamicPart, Walker, PARSER_FAILED};

/// A word after quote removal, with what the rules cannot see in it.
#[derive(Debug, Clone, Default)]
pub(super) struct Word {
    pub(super) text: String,
    /// A parameter, arithmetic or command expansion.
    pub(super) expanded: bool,
    /// An unquoted `*`, `?`, `[` or extglob.
    pub(super) glob: bool,
    /// A possible brace expansion (`{a,b}`, `{1..3}`): see [`Walker::word`].
    pub(super) brace: bool,
    /// A tilde expansion.
    pub(super) tilde: bool,
    /// An unquoted `{` and an unquoted `}`, seen.
    pub(super) open_brace: bool,
    pub(super) close_brace: bool,
}

impl Word {
    pub(super) fn literal(text: &str) -> Word {
        Word {
            text: text.to_owned(),
            ..Word::default()
        }
    }

    /// Whether the shell turns this word into exactly its text.
    pub(super) fn is_fixed(&self) -> bool {
        !(self.expanded || self.glob || self.brace || self.tilde)
    }
}

impl Walker {
    /// Quote removal and expansion checks of one word; substitutions in it are walked.
    pub(super) fn word(&mut self, raw: &str, depth: usize) -> Word {
        if let Some(text) = plain_word(raw) {
            return Word::literal(text);
        }
        let mut out = Word::default();
        match guarded(|| word::parse(raw, &ParserOptions::default()).map_err(|e| e.to_string()))
            .unwrap_or_else(|| Err(PARSER_FAILED.to_owned()))
        {
            Ok(pieces) => {
                for piece in &pieces {
                    self.piece(
                        &piece.piece,
                        raw,
                        piece.start_index,
                        piece.end_index,
                        false,
                        &mut out,
                        depth,
                    );
                }
            }
            Err(err) => {
                self.dynamic(cut(raw), format!("the word does not parse: {err}"));
                out.text = raw.to_owned();
                out.expanded = true;
            }
        }
        // A brace expansion needs an unquoted `{` and `}` and a `,` or `..`. This over-reads
        // (`x{}y,z` counts) and so only ever adds a caveat; brush-parser's own brace parser
        // takes time exponential in the number of `{` (20 of them: half a minute).
        out.brace = out.open_brace && out.close_brace && (raw.contains(',') || raw.contains(".."));
        out
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn piece(
        &mut self,
        piece: &WordPiece,
        raw: &str,
        start: usize,
        end: usize,
        quoted: bool,
        out: &mut Word,
        depth: usize,
    ) {
        let source = raw.get(start..end).unwrap_or(raw);
        match piece {
            WordPiece::Text(text) => {
                if !quoted {
                    out.glob |= has_glob(text);
                    out.open_brace |= text.contains('{');
                    out.close_brace |= text.contains('}');
                }
                out.text.push_str(text);
            }
            WordPiece::SingleQuotedText(text) => out.text.push_str(text),
            WordPiece::AnsiCQuotedText(text) => {
                self.out.other_shells.push(DynamicPart {
                    what: format!("$'{}'", cut(text)),
                    why: "a POSIX sh reads $'…' quoting otherwise, and may run what bash reads as one word"
                        .to_owned(),
                });
                out.text.push_str(&ansi_c(text));
            }
            WordPiece::DoubleQuotedSequence(pieces)
            | WordPiece::GettextDoubleQuotedSequence(pieces) => {
                for inner in pieces {
                    self.piece(
                        &inner.piece,
                        raw,
                        inner.start_index,
                        inner.end_index,
                        true,
                        out,
                        depth,
                    );
                }
            }
            WordPiece::TildeExpansion(_) => {
                out.tilde = true;
                out.text.push_str(source);
            }
            WordPiece::ParameterExpansion(expr) => {
                out.expanded = true;
                out.text.push_str(source);
                self.parameter(expr, source, depth);
            }
            WordPiece::CommandSubstitution(body)
            | WordPiece::BackquotedCommandSubstitution(body) => {
                out.expanded = true;
                out.text.push_str(source);
                self.dynamic(cut(source), "a command substitution");
                if self.nest(depth, source) {
                    let body = match piece {
                        WordPiece::BackquotedCommandSubstitution(_) => unescape_backquoted(body),
                        _ => body.clone(),
                    };
                    self.parse_and_walk(&body, depth + 1);
                }
            }
            WordPiece::EscapeSequence(escape) => {
                let mut chars = escape.chars();
                chars.next();
                let escaped: String = chars.collect();
                if quoted && !matches!(escaped.as_str(), "$" | "`" | "\"" | "\\" | "\n") {
                    out.text.push_str(escape);
                } else if escaped != "\n" {
                    out.text.push_str(&escaped);
                }
            }
            WordPiece::ArithmeticExpression(expr) => {
                // Literal arithmetic (`$((1 + 2))`) is a number the text fixes, but the text
                // keeps the expression, not the number bash puts in its place: within a longer
                // word (`id_ed$((25519))` is `id_ed25519`) it is an expansion the rules cannot
                // see.
                out.expanded |= !is_literal_arithmetic(&expr.value) || source != raw;
                out.text.push_str(source);
                self.arithmetic(&expr.value, depth);
            }
        }
    }

    /// The parts of a parameter expansion that run code: nested words (defaults, patterns,
    /// replacements), arithmetic (indexes, offsets), indirection and prompt expansion.
    fn parameter(&mut self, expr: &ParameterExpr, source: &str, depth: usize) {
        use ParameterExpr as P;
        let (parameter, indirect, words, arithmetic): (
            Option<&Parameter>,
            bool,
            Vec<&str>,
            Vec<&str>,
        ) = match expr {
            P::Parameter {
                parameter,
                indirect,
            }
            | P::ParameterLength {
                parameter,
                indirect,
            } => (Some(parameter), *indirect, vec![], vec![]),
            P::UseDefaultValues {
                parameter,
                indirect,
                default_value: value,
                ..
            }
            | P::AssignDefaultValues {
                parameter,
                indirect,
                default_value: value,
                ..
            }
            | P::IndicateErrorIfNullOrUnset {
                parameter,
                indirect,
                error_message: value,
                ..
            }
            | P::UseAlternativeValue {
                parameter,
                indirect,
                alternative_value: value,
                ..
            }
            | P::RemoveSmallestSuffixPattern {
                parameter,
                indirect,
                pattern: value,
            }
            | P::RemoveLargestSuffixPattern {
                parameter,
                indirect,
                pattern: value,
            }
            | P::RemoveSmallestPrefixPattern {
                parameter,
                indirect,
                pattern: value,
            }
            | P::RemoveLargestPrefixPattern {
                parameter,
                indirect,
                pattern: value,
            }
            | P::UppercaseFirstChar {
                parameter,
                indirect,
                pattern: value,
            }
            | P::UppercasePattern {
                parameter,
                indirect,
                pattern: value,
            }
            | P::LowercaseFirstChar {
                parameter,
                indirect,
                pattern: value,
            }
            | P::LowercasePattern {
                parameter,
                indirect,
                pattern: value,
            } => (
                Some(parameter),
                *indirect,
                value.iter().map(String::as_str).collect(),
                vec![],
            ),
            P::Substring {
                parameter,
                indirect,
                offset,
                length,
            } => (
                Some(parameter),
                *indirect,
                vec![],
                std::iter::once(offset.value.as_str())
                    .chain(length.iter().map(|l| l.value.as_str()))
                    .collect(),
            ),
            P::Transform {
                parameter,
                indirect,
                op,
            } => {
                if matches!(op, word::ParameterTransformOp::PromptExpand) {
                    self.dynamic(cut(source), "prompt expansion runs the variable's contents");
                }
                (Some(parameter), *indirect, vec![], vec![])
            }
            P::ReplaceSubstring {
                parameter,
                indirect,
                pattern,
                replacement,
                ..
            } => (
                Some(parameter),
                *indirect,
                std::iter::once(pattern.as_str())
                    .chain(replacement.iter().map(String::as_str))
                    .collect(),
                vec![],
            ),
            P::VariableNames { .. } | P::MemberKeys { .. } => (None, false, vec![], vec![]),
        };
        if indirect {
            self.dynamic(
                cut(source),
                "an indirect expansion names its variable at run time",
            );
        }
        if let Some(Parameter::NamedWithIndex { index, .. }) = parameter {
            if self.nest(depth, source) {
                self.arithmetic(index, depth + 1);
            }
        }
        if (!words.is_empty() || !arithmetic.is_empty()) && self.nest(depth, source) {
            for text in words {
                self.word(text, depth + 1);
            }
            for text in arithmetic {
                self.arithmetic(text, depth + 1);
            }
        }
    }
}

/// Words joined for a reason: a word with a space or shell syntax in it is single-quoted.
pub(super) fn join(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| quote_word(&w.text))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
#[path = "words_tests.rs"]
mod tests;
