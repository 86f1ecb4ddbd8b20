//! JSON Schema's regular expressions (ECMA-262) as the `regex` crate's, meaning what ECMA-262
//! means: `.` stops at `\r`, U+2028 and U+2029 as well as `\n`; `\d`, `\w` and `\b` are ASCII;
//! `\s` is ECMA-262's own list of white space. The crate's engine runs in time linear in the
//! text, so no argument can make a pattern slow; lookaround and backreferences, which need
//! backtracking, are refused.
//!
//! One parse (regex-syntax's, the crate's own parser) and one pass that rewrites what differs:
//! linear in the pattern, which matters where the pattern is an argument (`format: "regex"`).

use regex_syntax::ast::{
    self, parse::ParserBuilder, AssertionKind, Ast, ClassPerl, ClassPerlKind, ClassSetBinaryOp,
    ClassSetItem, GroupKind, HexLiteralKind, Literal, LiteralKind, SpecialLiteralKind, Visitor,
};

/// How deep groups and classes may nest in a pattern, as the `regex` crate's default.
const NEST_LIMIT: u32 = 250;

/// Why a pattern is not one the gate can run.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    #[error("{0}")]
    Syntax(String),
    /// What the `regex` crate reads and ECMA-262 does not, or reads otherwise.
    #[error("{0} is not ECMA-262, or means something else there")]
    NotEcma(&'static str),
}

/// `pattern` (ECMA-262) as a pattern of the `regex` crate with the same meaning.
pub fn to_rust(pattern: &str) -> Result<String, PatternError> {
    let ast = ParserBuilder::new()
        .nest_limit(NEST_LIMIT)
        .build()
        .parse(pattern)
        .map_err(|err| PatternError::Syntax(crate::sanitize::one_line(&err.to_string())))?;
    let mut edits = ast::visit(
        &ast,
        Edits {
            pattern,
            edits: Vec::new(),
        },
    )?;
    edits.sort_by_key(|(start, _, _)| *start);
    let mut out = String::with_capacity(pattern.len() + 16 * edits.len());
    let mut at = 0;
    for (start, end, with) in edits {
        out.push_str(&pattern[at..start]);
        out.push_str(with);
        at = end;
    }
    out.push_str(&pattern[at..]);
    // What the crate would refuse besides the syntax (an unknown class name, a repetition too
    // large), refused now.
    regex_syntax::ParserBuilder::new()
        .nest_limit(NEST_LIMIT)
        .build()
        .parse(&out)
        .map_err(|err| PatternError::Syntax(crate::sanitize::one_line(&err.to_string())))?;
    Ok(out)
}

/// ECMA-262's `.`: any character but its four line terminators.
const DOT: &str = "[^\\n\\r\\u{2028}\\u{2029}]";
/// ECMA-262's classes: `\d`, `\w` and `\s` (its white space and line terminators).
fn class(perl: &ClassPerl) -> &'static str {
    match (&perl.kind, perl.negated) {
        (ClassPerlKind::Digit, false) => "[0-9]",
        (ClassPerlKind::Digit, true) => "[^0-9]",
        (ClassPerlKind::Word, false) => "[A-Za-z0-9_]",
        (ClassPerlKind::Word, true) => "[^A-Za-z0-9_]",
        (ClassPerlKind::Space, false) => "[\\t\\n\\x0B\\x0C\\r \\u{A0}\\u{1680}\\u{2000}-\\u{200A}\\u{2028}\\u{2029}\\u{202F}\\u{205F}\\u{3000}\\u{FEFF}]",
        (ClassPerlKind::Space, true) => "[^\\t\\n\\x0B\\x0C\\r \\u{A0}\\u{1680}\\u{2000}-\\u{200A}\\u{2028}\\u{2029}\\u{202F}\\u{205F}\\u{3000}\\u{FEFF}]",
    }
}

/// The rewrites of one pattern: (start, end, replacement), by byte offsets into it.
struct Edits<'p> {
    pattern: &'p str,
    edits: Vec<(usize, usize, &'static str)>,
}

impl Edits<'_> {
    fn replace(&mut self, span: &ast::Span, with: &'static str) {
        self.edits.push((span.start.offset, span.end.offset, with));
    }
}

/// A literal both read alike: no `\a` (not ECMA-262's), no `\x{…}` or `\U…` (the crate's own).
fn literal(literal: &Literal) -> Result<(), PatternError> {
    match literal.kind {
        LiteralKind::Special(SpecialLiteralKind::Bell) => Err(PatternError::NotEcma("`\\a`")),
        LiteralKind::HexBrace(_) => Err(PatternError::NotEcma("`\\x{…}`")),
        LiteralKind::HexFixed(HexLiteralKind::UnicodeLong) => Err(PatternError::NotEcma("`\\U…`")),
        LiteralKind::Octal => Err(PatternError::NotEcma("an octal escape")),
        _ => Ok(()),
    }
}

impl Visitor for Edits<'_> {
    type Output = Vec<(usize, usize, &'static str)>;
    type Err = PatternError;

    fn finish(self) -> Result<Self::Output, PatternError> {
        Ok(self.edits)
    }

    fn visit_pre(&mut self, ast: &Ast) -> Result<(), PatternError> {
        match ast {
            Ast::Dot(span) => self.replace(span, DOT),
            Ast::ClassPerl(perl) => self.replace(&perl.span, class(perl)),
            Ast::Assertion(assertion) => match assertion.kind {
                AssertionKind::StartLine | AssertionKind::EndLine => {}
                AssertionKind::WordBoundary => self.replace(&assertion.span, "(?-u:\\b)"),
                AssertionKind::NotWordBoundary => self.replace(&assertion.span, "(?-u:\\B)"),
                _ => {
                    return Err(PatternError::NotEcma(
                        "`\\A`, `\\z`, `\\<`, `\\>` or `\\b{…}`",
                    ))
                }
            },
            Ast::Literal(lit) => literal(lit)?,
            Ast::Flags(_) => return Err(PatternError::NotEcma("an inline flag (`(?i)`)")),
            Ast::Group(group) => match &group.kind {
                GroupKind::NonCapturing(flags) if !flags.items.is_empty() => {
                    return Err(PatternError::NotEcma("an inline flag (`(?i:…)`)"))
                }
                GroupKind::CaptureName {
                    starts_with_p: true,
                    ..
                } => return Err(PatternError::NotEcma("`(?P<name>…)`")),
                _ => {}
            },
            Ast::ClassUnicode(_) => {
                return Err(PatternError::NotEcma("`\\p{…}` (a literal `p` there)"))
            }
            Ast::Repetition(repetition) if matches!(*repetition.ast, Ast::Repetition(_)) => {
                return Err(PatternError::NotEcma(
                    "a repetition of a repetition (`a{2}{3}`)",
                ))
            }
            // The crate reads `x{ 2}` as two `x`; ECMA-262, as the text `x{ 2}`.
            Ast::Repetition(repetition)
                if self.pattern[repetition.op.span.start.offset..repetition.op.span.end.offset]
                    .chars()
                    .any(char::is_whitespace) =>
            {
                return Err(PatternError::NotEcma("white space inside `{…}`"))
            }
            Ast::ClassBracketed(class) => {
                // `[]` and `[^]` are whole classes in ECMA-262 (nothing, anything); the crate
                // reads the `]` as the class's first member.
                let inside = &self.pattern[class.span.start.offset + 1..];
                if inside.strip_prefix('^').unwrap_or(inside).starts_with(']') {
                    return Err(PatternError::NotEcma("`[]` or `[^]`"));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), PatternError> {
        match item {
            // Inside a class, the class's own class: the crate nests classes.
            ClassSetItem::Perl(perl) => self.replace(&perl.span, class(perl)),
            ClassSetItem::Literal(lit) => literal(lit)?,
            ClassSetItem::Range(range) => {
                literal(&range.start)?;
                literal(&range.end)?;
            }
            ClassSetItem::Bracketed(_) => {
                return Err(PatternError::NotEcma("a class inside a class (`[a[b]]`)"))
            }
            ClassSetItem::Ascii(_) => return Err(PatternError::NotEcma("`[[:alpha:]]`")),
            ClassSetItem::Unicode(_) => {
                return Err(PatternError::NotEcma("`\\p{…}` (a literal `p` there)"))
            }
            _ => {}
        }
        Ok(())
    }

    fn visit_class_set_binary_op_pre(&mut self, _: &ClassSetBinaryOp) -> Result<(), PatternError> {
        Err(PatternError::NotEcma(
            "`&&`, `--` or `~~` in a class (the crate's set operations)",
        ))
    }
}

#[cfg(test)]
#[path = "ecma_tests.rs"]
mod tests;
