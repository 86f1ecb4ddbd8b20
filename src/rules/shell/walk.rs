//! Walking the syntax tree: the parse of a text, bounded before it starts, and the lists,
//! pipelines, compound commands, tests and arithmetic in it.

use brush_parser::ast;
use brush_parser::{parse_tokens, uncached_tokenize_str, ParserOptions, Token};

use super::show::{compound_kind, cut};
use super::text::{is_literal_arithmetic, is_name_char, plain_command};
use super::words::Word;
use super::{
    guarded, openers, DynamicPart, Walker, MAX_COMMAND_BYTES, MAX_NESTING, MAX_OPENERS,
    MAX_PARENTHESES, PARSER_FAILED,
};

/// Stack the parser and the walk need besides nesting, and per nesting opener. Measured on debug
/// builds (the largest frames) with room to spare: a brace group costs about 20 KiB of stack.
const STACK_BASE: usize = 512 * 1024;
const STACK_PER_OPENER: usize = if cfg!(debug_assertions) {
    64 * 1024
} else {
    32 * 1024
};

impl Walker {
    /// Parses a text (the whole command, an `sh -c` string, a substitution's body) and walks it.
    pub(super) fn parse_and_walk(&mut self, text: &str, depth: usize) {
        if depth > MAX_NESTING {
            self.dynamic(text, format!("nested deeper than {MAX_NESTING}"));
            return;
        }
        if text.len() > MAX_COMMAND_BYTES {
            self.dynamic(
                cut(text),
                format!("longer than {MAX_COMMAND_BYTES} bytes, so it is not parsed"),
            );
            return;
        }
        if let Some(words) = plain_command(text) {
            let words = words.map(Word::literal).collect();
            self.normalize(words, Vec::new(), false, depth);
            return;
        }
        self.parse_with_brush(text, depth);
    }

    /// [`Walker::parse_and_walk`] by brush-parser's tokenizer and grammar, for every text but a
    /// plain command.
    pub(super) fn parse_with_brush(&mut self, text: &str, depth: usize) {
        let openers = openers(text);
        if openers > MAX_OPENERS {
            self.dynamic(
                cut(text),
                format!("it has more than {MAX_OPENERS} brackets and keywords that can nest, so it is not parsed"),
            );
            return;
        }
        let need = STACK_BASE + openers * STACK_PER_OPENER;
        stacker::maybe_grow(need, need + STACK_BASE, || {
            let options = ParserOptions::default();
            let tokens =
                // Not brush-parser's cached tokenizer: an agent's commands seldom repeat, and its
                // cache hashes and copies every text it misses (a tenth of a 4 KiB command's time).
                match guarded(|| uncached_tokenize_str(text, &options.tokenizer_options())) {
                    Some(Ok(tokens)) => tokens,
                    Some(Err(err)) => {
                        self.dynamic(cut(text), format!("it does not parse: {err}"));
                        return;
                    }
                    None => {
                        self.dynamic(cut(text), PARSER_FAILED);
                        return;
                    }
                };
            let parentheses = tokens
                .iter()
                .filter(|token| matches!(token, Token::Operator(op, _) if op == "("))
                .count();
            if parentheses > MAX_PARENTHESES {
                self.dynamic(
                    cut(text),
                    format!("it has more than {MAX_PARENTHESES} parentheses outside words, so it is not parsed"),
                );
                return;
            }
            match guarded(|| parse_tokens(&tokens, &options)) {
                Some(Ok(program)) => {
                    for list in &program.complete_commands {
                        self.compound_list(list, depth);
                    }
                }
                Some(Err(err)) => self.dynamic(cut(text), format!("it does not parse: {err}")),
                None => self.dynamic(cut(text), PARSER_FAILED),
            }
        });
    }

    pub(super) fn compound_list(&mut self, list: &ast::CompoundList, depth: usize) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline) => {
                        self.pipeline(pipeline, depth)
                    }
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, depth: usize) {
        for command in &pipeline.seq {
            self.command(command, depth);
        }
    }

    fn command(&mut self, command: &ast::Command, depth: usize) {
        match command {
            ast::Command::Simple(simple) => self.simple(simple, depth),
            ast::Command::Compound(compound, redirects) => {
                if self.nest(depth, compound_kind(compound)) {
                    self.compound(compound, depth + 1);
                }
                if let Some(redirects) = redirects {
                    let by = compound_kind(compound);
                    for redirect in &redirects.0 {
                        self.redirect(redirect, by, depth);
                    }
                }
            }
            ast::Command::Function(function) => {
                let ast::FunctionBody(body, redirects) = &function.body;
                if self.nest(depth, &format!("function {}", function.fname.value)) {
                    self.compound(body, depth + 1);
                }
                if let Some(redirects) = redirects {
                    let by = format!("function {}", function.fname.value);
                    for redirect in &redirects.0 {
                        self.redirect(redirect, &by, depth);
                    }
                }
            }
            ast::Command::ExtendedTest(test, redirects) => {
                // A POSIX sh has no `[[`: it runs `[[` as a program, and every operator inside
                // is its own (`|` in a `=~` pattern a pipe, `&&` a list: a review wrote files so).
                self.out.other_shells.push(DynamicPart {
                    what: "[[ … ]]".to_owned(),
                    why: "a POSIX sh has no [[ … ]]: it reads the operators inside as its own (pipes, lists, redirections)"
                        .to_owned(),
                });
                self.extended_test(&test.expr, depth);
                if let Some(redirects) = redirects {
                    for redirect in &redirects.0 {
                        self.redirect(redirect, "[[ … ]]", depth);
                    }
                }
            }
        }
    }

    /// Whether a level may be entered; past [`MAX_NESTING`] the part is dynamic.
    pub(super) fn nest(&mut self, depth: usize, what: &str) -> bool {
        if depth >= MAX_NESTING {
            self.dynamic(cut(what), format!("nested deeper than {MAX_NESTING}"));
            return false;
        }
        true
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, depth: usize) {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(arithmetic) => {
                self.out.other_shells.push(DynamicPart {
                    what: format!("(({}))", cut(&arithmetic.expr.value)),
                    why:
                        "a POSIX sh runs ((…)) as a command in nested subshells, not as arithmetic"
                            .to_owned(),
                });
                self.arithmetic(&arithmetic.expr.value, depth)
            }
            C::ArithmeticForClause(for_clause) => {
                for expr in [
                    &for_clause.initializer,
                    &for_clause.condition,
                    &for_clause.updater,
                ]
                .into_iter()
                .flatten()
                {
                    self.arithmetic(&expr.value, depth);
                }
                self.compound_list(&for_clause.body.list, depth);
            }
            C::BraceGroup(group) => self.compound_list(&group.list, depth),
            C::Subshell(subshell) => self.compound_list(&subshell.list, depth),
            C::ForClause(for_clause) => {
                for value in for_clause.values.iter().flatten() {
                    self.word(&value.value, depth);
                }
                self.compound_list(&for_clause.body.list, depth);
            }
            C::CaseClause(case) => {
                self.word(&case.value.value, depth);
                for item in &case.cases {
                    for pattern in &item.patterns {
                        self.word(&pattern.value, depth);
                    }
                    if let Some(list) = &item.cmd {
                        self.compound_list(list, depth);
                    }
                }
            }
            C::IfClause(if_clause) => {
                self.compound_list(&if_clause.condition, depth);
                self.compound_list(&if_clause.then, depth);
                for else_clause in if_clause.elses.iter().flatten() {
                    if let Some(condition) = &else_clause.condition {
                        self.compound_list(condition, depth);
                    }
                    self.compound_list(&else_clause.body, depth);
                }
            }
            C::WhileClause(clause) | C::UntilClause(clause) => {
                self.compound_list(&clause.0, depth);
                self.compound_list(&clause.1.list, depth);
            }
            C::Coprocess(coprocess) => self.command(&coprocess.body, depth),
        }
    }

    fn extended_test(&mut self, expr: &ast::ExtendedTestExpr, depth: usize) {
        use ast::ExtendedTestExpr as E;
        match expr {
            E::And(left, right) => {
                self.extended_test(left, depth);
                self.extended_test(right, depth);
            }
            E::Or(left, right) => {
                self.extended_test(left, depth);
                self.extended_test(right, depth);
            }
            E::Not(inner) | E::Parenthesized(inner) => self.extended_test(inner, depth),
            E::UnaryTest(predicate, operand) => {
                let operand = self.word(&operand.value, depth);
                if matches!(
                    predicate,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) && !operand.text.chars().all(is_name_char)
                {
                    self.dynamic(
                        format!("[[ -v {} ]]", operand.text),
                        "it evaluates an array subscript",
                    );
                }
            }
            E::BinaryTest(predicate, left, right) => {
                let left = self.word(&left.value, depth);
                let right = self.word(&right.value, depth);
                use ast::BinaryPredicate as B;
                let arithmetic = matches!(
                    predicate,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                );
                if arithmetic
                    && !(is_literal_arithmetic(&left.text)
                        && is_literal_arithmetic(&right.text)
                        && left.is_fixed()
                        && right.is_fixed())
                {
                    self.dynamic(
                        format!("[[ {} {predicate} {} ]]", left.text, right.text),
                        "an arithmetic test evaluates the contents of variables as code",
                    );
                }
            }
        }
    }

    /// An arithmetic expression (`$((…))`, `((…))`, `for ((…))`, an array index, an offset):
    /// its substitutions are walked, and any name or expansion in it is dynamic, because bash
    /// evaluates a variable's contents as an expression, array subscripts and all.
    pub(super) fn arithmetic(&mut self, text: &str, depth: usize) {
        if (text.contains('$') || text.contains('`')) && self.nest(depth, text) {
            self.word(text, depth + 1);
        }
        if !is_literal_arithmetic(text) {
            self.dynamic(
                format!("(( {} ))", text.trim()),
                "arithmetic evaluates the contents of variables as code",
            );
            // The parser reads `( ( cmd ) )` and `$( ( cmd ) )` as arithmetic; bash, when the
            // text is no arithmetic, runs it as commands. Judge it both ways: this only adds
            // findings to a part that is dynamic already.
            if self.nest(depth, text) {
                self.parse_and_walk(&format!("({text})"), depth + 1);
            }
        }
    }
}

#[cfg(test)]
#[path = "walk_tests.rs"]
mod tests;
