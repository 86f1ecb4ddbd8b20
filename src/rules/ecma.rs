//! JSON Schema's regular expressions (ECMA-262) as the `regex` crate's, meaning what ECMA-262
//! means: `.` stops at `\r`, U+2028 and U+2029 as well as `\n`; `\d`, `\w` and `\b` are ASCII;
//! `\s` is ECMA-262's own list of white space. The crate's engine runs in time linear in the
//! text, so no argument can make a pattern slow; lookaround and backreferences, which need
//! backtracking, are refused.
//!
//! One parse (regex-syntax's, the crate's own parser) and one pass that rewrites what differs:
//! linear in the pattern, which matters where the pattern is an argument (`format: "regex"`).

use regex_syntax::ast::{
    self, parse::ParserBuilder, AssertionKind, Ast, ClassPerl, ClassPerlKind, ClassSetItem,
    LiteralKind, SpecialLiteralKind, Visitor,
};

/// How deep groups and classes may nest in a pattern, as the `regex` crate's default.
const NEST_LIMIT: u32 = 250;

/// Why a pattern is not one the gate can run.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    #[error("{0}")]
    Syntax(String),
    #[error("`\\a` is not an ECMA-262 escape")]
    Bell,
}

/// `pattern` (ECMA-262) as a pattern of the `regex` crate with the same meaning.
pub fn to_rust(pattern: &str) -> Result<String, PatternError> {
    let ast = ParserBuilder::new()
        .nest_limit(NEST_LIMIT)
        .build()
        .parse(pattern)
        .map_err(|err| PatternError::Syntax(one_line(&err.to_string())))?;
    let mut edits = ast::visit(&ast, Edits::default())?;
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
        .map_err(|err| PatternError::Syntax(one_line(&err.to_string())))?;
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
#[derive(Default)]
struct Edits(Vec<(usize, usize, &'static str)>);

impl Edits {
    fn replace(&mut self, span: &ast::Span, with: &'static str) {
        self.0.push((span.start.offset, span.end.offset, with));
    }
}

impl Visitor for Edits {
    type Output = Vec<(usize, usize, &'static str)>;
    type Err = PatternError;

    fn finish(self) -> Result<Self::Output, PatternError> {
        Ok(self.0)
    }

    fn visit_pre(&mut self, ast: &Ast) -> Result<(), PatternError> {
        match ast {
            Ast::Dot(span) => self.replace(span, DOT),
            Ast::ClassPerl(perl) => self.replace(&perl.span, class(perl)),
            Ast::Assertion(assertion) => match assertion.kind {
                AssertionKind::WordBoundary => self.replace(&assertion.span, "(?-u:\\b)"),
                AssertionKind::NotWordBoundary => self.replace(&assertion.span, "(?-u:\\B)"),
                _ => {}
            },
            Ast::Literal(literal)
                if literal.kind == LiteralKind::Special(SpecialLiteralKind::Bell) =>
            {
                return Err(PatternError::Bell)
            }
            _ => {}
        }
        Ok(())
    }

    fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), PatternError> {
        match item {
            // Inside a class, the class's own class: the crate nests classes.
            ClassSetItem::Perl(perl) => self.replace(&perl.span, class(perl)),
            ClassSetItem::Literal(literal)
                if literal.kind == LiteralKind::Special(SpecialLiteralKind::Bell) =>
            {
                return Err(PatternError::Bell)
            }
            _ => {}
        }
        Ok(())
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "ecma_tests.rs"]
mod tests;
