//! A shell command line, read with a real bash parser (`brush-parser`), as the simple commands it
//! runs, the parts whose effect the text does not fix, and the files its redirections write.
//!
//! [`analyse`] never runs anything and never looks at the file system. Each simple command comes
//! out normalized: words after quote removal, the program as the basename of its path, leading
//! assignments dropped, wrappers (`env`, `sudo`, `timeout`, `xargs`, …) stripped with their own
//! options, `sh -c S` replaced by the simple commands of `S`, and `find -exec PROG … ;` split
//! into `find` and `PROG …`. What it cannot judge from the text is reported as dynamic.
//!
//! Parsing is bounded before it starts: a command longer than [`MAX_COMMAND_BYTES`], with more
//! nesting openers than [`MAX_OPENERS`], or with more `(` operators than [`MAX_PARENTHESES`], is
//! dynamic without being parsed, and the parse runs on a stack sized for the openers it holds
//! (the parser recurses once per level of nesting). Two of brush-parser's exponential paths
//! are avoided: its brace-expansion parser is never called, and its grammar never sees many
//! parentheses.

use brush_parser::ast;
use brush_parser::word::{self, Parameter, ParameterExpr, WordPiece};
use brush_parser::{parse_tokens, uncached_tokenize_str, ParserOptions, Token};

/// Longer commands are dynamic without being parsed.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// More simple commands than this make a command dynamic.
pub const MAX_SIMPLE_COMMANDS: usize = 64;
/// Compound commands, functions, substitutions and `sh -c` nested deeper than this are dynamic.
pub const MAX_NESTING: usize = 8;
/// A command with more nesting openers than this (see [`openers`]) is dynamic without being parsed.
pub const MAX_OPENERS: usize = 256;

/// A command with more `(` operators (subshells, `((`, function definitions, `[[ ( ]]`, not
/// `$(`) than this is dynamic without being parsed: brush-parser's grammar backtracks over
/// them, in time exponential in their number when the text does not parse (24 take a second).
pub const MAX_PARENTHESES: usize = 12;

/// Stack the parser and the walk need besides nesting, and per nesting opener. Measured on debug
/// builds (the largest frames) with room to spare: a brace group costs about 20 KiB of stack.
const STACK_BASE: usize = 512 * 1024;
const STACK_PER_OPENER: usize = if cfg!(debug_assertions) {
    64 * 1024
} else {
    32 * 1024
};

/// What a command runs, as far as its text tells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// The simple commands, normalized, in the order they appear.
    pub commands: Vec<SimpleCommand>,
    /// The parts whose effect the text does not fix.
    pub dynamic: Vec<DynamicPart>,
    /// The files written through redirections (`>`, `>>`, `&>`, `>|`, `<>`, `>&FILE`), `tee`,
    /// `find -fprint`, `time -o`.
    pub writes: Vec<WrittenPath>,
    /// The files read through input redirections (`<`, `<>`, `<&FILE`): `cat < ~/.ssh/id_rsa`
    /// reads the key as surely as `cat ~/.ssh/id_rsa` does. `by` names the command.
    pub reads: Vec<WrittenPath>,
    /// The command changes directory (`cd`, `pushd`, `popd`, `env -C`, `sudo -D`, `find
    /// -execdir`), so relative paths in it cannot be placed.
    pub changes_directory: bool,
}

/// One simple command after normalization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The program's basename, then its arguments; empty for a command that only assigns
    /// variables (`x=1`).
    pub words: Vec<String>,
    /// For each word, whether bash expands it as a glob (an unquoted `*`, `?`, `[` or extglob):
    /// only then may it name other files than its text.
    pub globbed: Vec<bool>,
    /// Why the text does not fix everything this command does, though its program is known: an
    /// allow never applies to it as it stands.
    pub caveats: Vec<Caveat>,
}

/// What a rule cannot see about a simple command whose program is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caveat {
    /// `VAR=value cmd`, `env VAR=value cmd`, or a bare assignment: a variable can make a program
    /// run something else (`PATH`, `LD_PRELOAD`, `GIT_EXTERNAL_DIFF`, `PAGER`, …).
    SetsEnvironment,
    /// The program is a file named by a path outside the system directories (`./ls`,
    /// `target/debug/x`), which the agent may have written.
    ProgramByPath(String),
    /// `xargs` adds arguments read from its input.
    ArgumentsFromInput,
    /// `sudo` or `doas` runs it as another user, with rights the agent does not have.
    RunsAsAnotherUser(String),
    /// An argument is an expansion (`$X`, `${X}`, `$((…))`) or a brace expansion (`{a,b}`), so
    /// the words the program gets are not the words the rules see.
    ExpandedArgument(String),
}

impl Caveat {
    /// Why an allow does not apply, as a reason says it.
    pub fn describe(&self) -> String {
        match self {
            Caveat::SetsEnvironment => {
                "it sets environment variables, which can make a program run something else"
                    .to_owned()
            }
            Caveat::ProgramByPath(path) => format!(
                "its program is the file \"{}\", outside the system directories, which the agent may have written",
                super::keys::shown(path)
            ),
            Caveat::RunsAsAnotherUser(wrapper) => {
                format!("{wrapper} runs it as another user, with rights the agent does not have")
            }
            Caveat::ArgumentsFromInput => {
                "xargs adds arguments read from its input, which the rules cannot see".to_owned()
            }
            Caveat::ExpandedArgument(word) => format!(
                "the argument \"{}\" is an expansion the rules cannot see",
                super::keys::shown(word)
            ),
        }
    }
}

/// A part of the command whose effect the text does not fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicPart {
    /// The part, as written or normalized.
    pub what: String,
    /// Why it is dynamic.
    pub why: String,
}

/// A file a command writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenPath {
    /// The path as written after quote removal; a leading `~` is kept for the path rules.
    pub path: String,
    /// The simple command (or compound command) that writes it.
    pub by: String,
    /// Whether a relative path can be placed against the call's working directory: false when
    /// the command changes directory.
    pub placeable: bool,
}

/// Reads a command. Never panics and never fails: what cannot be read is dynamic.
pub fn analyse(command: &str) -> Analysis {
    let mut walker = Walker::default();
    walker.parse_and_walk(command, 0);
    walker.finish()
}

/// An upper bound on how deeply a text can nest: every `(`, `{`, `[`, `!` and backquote, and every
/// occurrence of a keyword that opens a compound command (`if`, `for`, `while`, `until`, `case`,
/// `select`, `function`, `coproc`), counted even inside quotes and words, after line
/// continuations are joined. Each level of nesting the parser recurses into needs one of them.
pub fn openers(text: &str) -> usize {
    let joined;
    let text = if memchr::memchr(b'\\', text.as_bytes()).is_some()
        && (text.contains("\\\n") || text.contains("\\\r\n"))
    {
        joined = text.replace("\\\r\n", "").replace("\\\n", "");
        joined.as_str()
    } else {
        text
    };
    let bytes = text.as_bytes();
    // `!` too: brush-parser's grammar recurses once for each `!` in `[[ ! ! … ]]`.
    let brackets = memchr::memchr3_iter(b'(', b'{', b'[', bytes).count()
        + memchr::memchr2_iter(b'`', b'!', bytes).count();
    // Occurrences that overlap (`coprocoproc`) are counted once: two keywords that overlap
    // cannot both be words, so the count still bounds the nesting.
    const KEYWORDS: &[&[u8]] = &[
        b"if",
        b"for",
        b"function",
        b"while",
        b"until",
        b"case",
        b"coproc",
        b"select",
    ];
    let keywords: usize = KEYWORDS
        .iter()
        .map(|keyword| memchr::memmem::find_iter(bytes, keyword).count())
        .sum();
    brackets + keywords
}

/// Where a wrapper's options end, and what they were.
struct Options<'w> {
    found: Vec<(String, Option<&'w str>)>,
    next: usize,
}

impl Options<'_> {
    fn has(&self, name: &str) -> bool {
        self.found.iter().any(|(n, _)| n == name)
    }

    /// Every value given to any of `names`, in order (`time -o /dev/null -o FILE` writes the
    /// last; each is judged).
    fn values<'s>(&'s self, names: &'s [&str]) -> impl Iterator<Item = &'s str> + 's {
        self.found
            .iter()
            .filter(move |(n, _)| names.contains(&n.as_str()))
            .filter_map(|(_, v)| *v)
    }
}

/// A wrapper's option syntax, GNU style.
struct OptionSpec {
    /// Short options without a value.
    flags: &'static str,
    /// Short options with a value, attached (`-n5`) or in the next word (`-n 5`).
    with_value: &'static str,
    /// Short options whose value, optional, can only be attached (`xargs -i{}`).
    attached: &'static str,
    /// Long options without a value (a `--name=value` form is accepted too).
    long_flags: &'static [&'static str],
    /// Long options with a value (`--name=value` or `--name value`).
    long_with_value: &'static [&'static str],
    /// `-N` is a number (`nice -10`).
    numeric: bool,
}

const NO_OPTIONS: OptionSpec = OptionSpec {
    flags: "",
    with_value: "",
    attached: "",
    long_flags: &[],
    long_with_value: &[],
    numeric: false,
};

const ENV: OptionSpec = OptionSpec {
    flags: "i0v",
    with_value: "uCSP",
    attached: "",
    long_flags: &[
        "ignore-environment",
        "null",
        "debug",
        "block-signal",
        "default-signal",
        "ignore-signal",
        "list-signal-handling",
    ],
    long_with_value: &["unset", "chdir", "split-string"],
    numeric: false,
};
const COMMAND: OptionSpec = OptionSpec {
    flags: "pvV",
    ..NO_OPTIONS
};
const EXEC: OptionSpec = OptionSpec {
    flags: "cl",
    with_value: "a",
    ..NO_OPTIONS
};
const NICE: OptionSpec = OptionSpec {
    with_value: "n",
    long_with_value: &["adjustment"],
    numeric: true,
    ..NO_OPTIONS
};
const TIME: OptionSpec = OptionSpec {
    flags: "pvqa",
    with_value: "fo",
    long_flags: &["portability", "verbose", "quiet", "append"],
    long_with_value: &["format", "output"],
    ..NO_OPTIONS
};
const STDBUF: OptionSpec = OptionSpec {
    with_value: "ioe",
    long_with_value: &["input", "output", "error"],
    ..NO_OPTIONS
};
const TIMEOUT: OptionSpec = OptionSpec {
    flags: "v",
    with_value: "sk",
    long_flags: &["preserve-status", "foreground", "verbose"],
    long_with_value: &["signal", "kill-after"],
    ..NO_OPTIONS
};
const SUDO: OptionSpec = OptionSpec {
    flags: "AbBEeHiKklnNPSsVv",
    with_value: "CDgpRrTtUu",
    attached: "h",
    long_flags: &[
        "askpass",
        "background",
        "bell",
        "preserve-env",
        "edit",
        "help",
        "set-home",
        "login",
        "remove-timestamp",
        "reset-timestamp",
        "list",
        "no-update",
        "non-interactive",
        "preserve-groups",
        "stdin",
        "shell",
        "version",
        "validate",
    ],
    long_with_value: &[
        "close-from",
        "chdir",
        "group",
        "host",
        "prompt",
        "chroot",
        "role",
        "type",
        "command-timeout",
        "other-user",
        "user",
        "login-class",
    ],
    numeric: false,
};
const DOAS: OptionSpec = OptionSpec {
    flags: "nsL",
    with_value: "aCu",
    ..NO_OPTIONS
};
const XARGS: OptionSpec = OptionSpec {
    flags: "0oprtx",
    with_value: "adEILnPs",
    attached: "eil",
    long_flags: &[
        "null",
        "open-tty",
        "interactive",
        "no-run-if-empty",
        "verbose",
        "exit",
        "show-limits",
        "eof",
        "replace",
        "max-lines",
    ],
    long_with_value: &[
        "arg-file",
        "delimiter",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ],
    numeric: false,
};
const TEE: OptionSpec = OptionSpec {
    flags: "aip",
    long_flags: &["append", "ignore-interrupts", "output-error"],
    ..NO_OPTIONS
};

/// The shells whose `-c STRING` is parsed again.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash"];

/// Directories whose programs the agent cannot have written.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// Files a redirection may name without writing a file.
const NOT_FILES: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

/// A word after quote removal, with what the rules cannot see in it.
#[derive(Debug, Clone, Default)]
struct Word {
    text: String,
    /// A parameter, arithmetic or command expansion.
    expanded: bool,
    /// An unquoted `*`, `?`, `[` or extglob.
    glob: bool,
    /// A possible brace expansion (`{a,b}`, `{1..3}`): see [`Walker::word`].
    brace: bool,
    /// A tilde expansion.
    tilde: bool,
    /// An unquoted `{` and an unquoted `}`, seen.
    open_brace: bool,
    close_brace: bool,
}

impl Word {
    fn literal(text: &str) -> Word {
        Word {
            text: text.to_owned(),
            ..Word::default()
        }
    }

    /// Whether the shell turns this word into exactly its text.
    fn is_fixed(&self) -> bool {
        !(self.expanded || self.glob || self.brace || self.tilde)
    }
}

#[derive(Default)]
struct Walker {
    out: Analysis,
    too_many: bool,
    /// The caveats of the command whose `sh -c` script is being read: `sudo bash -c 'cat x'`
    /// runs `cat` as root, and `env X=1 sh -c 'git diff'` runs `git` with `X` set.
    inherited: Vec<Caveat>,
}

impl Walker {
    fn finish(mut self) -> Analysis {
        if self.out.changes_directory {
            for path in self.out.writes.iter_mut().chain(&mut self.out.reads) {
                path.placeable = is_absolute_or_home(&path.path);
            }
        }
        self.out
    }

    fn dynamic(&mut self, what: impl Into<String>, why: impl Into<String>) {
        let part = DynamicPart {
            what: what.into(),
            why: why.into(),
        };
        if !self.out.dynamic.contains(&part) {
            self.out.dynamic.push(part);
        }
    }

    /// Parses a text (the whole command, an `sh -c` string, a substitution's body) and walks it.
    fn parse_and_walk(&mut self, text: &str, depth: usize) {
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

    fn compound_list(&mut self, list: &ast::CompoundList, depth: usize) {
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
    fn nest(&mut self, depth: usize, what: &str) -> bool {
        if depth >= MAX_NESTING {
            self.dynamic(cut(what), format!("nested deeper than {MAX_NESTING}"));
            return false;
        }
        true
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, depth: usize) {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(arithmetic) => self.arithmetic(&arithmetic.expr.value, depth),
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
            E::And(left, right) | E::Or(left, right) => {
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
    fn arithmetic(&mut self, text: &str, depth: usize) {
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

    /// Quote removal and expansion checks of one word; substitutions in it are walked.
    fn word(&mut self, raw: &str, depth: usize) -> Word {
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
    fn piece(
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
            WordPiece::AnsiCQuotedText(text) => out.text.push_str(&ansi_c(text)),
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

    /// A redirection: its words are checked, and a file it writes is recorded.
    fn redirect(&mut self, redirect: &ast::IoRedirect, by: &str, depth: usize) -> bool {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match redirect {
            ast::IoRedirect::File(_, kind, target) => {
                let writes = matches!(
                    kind,
                    K::Write | K::Append | K::Clobber | K::ReadAndWrite | K::DuplicateOutput
                );
                let reads = matches!(kind, K::Read | K::ReadAndWrite | K::DuplicateInput);
                match target {
                    T::Filename(word) => {
                        let word = self.word(&word.value, depth);
                        if writes {
                            self.write(&word, by, &redirect.to_string());
                        }
                        if reads {
                            self.read(&word, by, &redirect.to_string());
                        }
                    }
                    T::Duplicate(word) => {
                        let word = self.word(&word.value, depth);
                        let descriptor = word.is_fixed()
                            && word
                                .text
                                .trim_end_matches('-')
                                .chars()
                                .all(|c| c.is_ascii_digit());
                        if writes && !descriptor {
                            self.write(&word, by, &redirect.to_string());
                        }
                        if reads && !descriptor {
                            self.read(&word, by, &redirect.to_string());
                        }
                    }
                    T::Fd(_) => {}
                    T::ProcessSubstitution(_, subshell) => {
                        self.process_substitution(subshell, depth)
                    }
                }
                false
            }
            ast::IoRedirect::OutputAndError(word, _) => {
                let word = self.word(&word.value, depth);
                self.write(&word, by, &redirect.to_string());
                false
            }
            ast::IoRedirect::HereDocument(_, here) => {
                if here.requires_expansion {
                    match guarded(|| {
                        word::parse_heredoc(&here.doc.value, &ParserOptions::default())
                            .map_err(|e| e.to_string())
                    })
                    .unwrap_or_else(|| Err(PARSER_FAILED.to_owned()))
                    {
                        Ok(pieces) => {
                            let mut ignored = Word::default();
                            for piece in &pieces {
                                self.piece(
                                    &piece.piece,
                                    &here.doc.value,
                                    piece.start_index,
                                    piece.end_index,
                                    true,
                                    &mut ignored,
                                    depth,
                                );
                            }
                        }
                        Err(err) => self.dynamic(
                            cut(&here.doc.value),
                            format!("the here-document does not parse: {err}"),
                        ),
                    }
                }
                true
            }
            ast::IoRedirect::HereString(_, word) => {
                self.word(&word.value, depth);
                true
            }
        }
    }

    fn process_substitution(&mut self, subshell: &ast::SubshellCommand, depth: usize) {
        // Not the subshell's text: showing a deeply nested tree costs time quadratic in its depth.
        let _ = subshell;
        self.dynamic("<( … )", "a process substitution");
        if self.nest(depth, "<( … )") {
            self.compound_list(&subshell.list, depth + 1);
        }
    }

    /// The file a redirection or an option names, for the `paths` rules (`verb` says what is
    /// done to it): a name the text does not fix is dynamic, and an empty name (an error at run
    /// time), `/dev/null` and friends name no file.
    fn named_file(&mut self, word: &Word, by: &str, redirect: &str, verb: &str) -> Option<String> {
        if !(word.is_fixed() || word.tilde && !word.expanded && !word.glob && !word.brace) {
            self.dynamic(
                format!("{by} {redirect}"),
                format!("it {verb} a file named by an expansion"),
            );
            return None;
        }
        if word.text.is_empty()
            || NOT_FILES.contains(&word.text.as_str())
            || word.text.starts_with("/dev/fd/")
        {
            return None;
        }
        Some(word.text.clone())
    }

    /// A file an input redirection reads, for the `paths` read rules.
    fn read(&mut self, word: &Word, by: &str, redirect: &str) {
        if let Some(path) = self.named_file(word, by, redirect, "reads") {
            self.out.reads.push(WrittenPath {
                path,
                by: format!("{by} {redirect}"),
                placeable: true,
            });
        }
    }

    /// A file written through a redirection or an option.
    fn write(&mut self, word: &Word, by: &str, redirect: &str) {
        if let Some(path) = self.named_file(word, by, redirect, "writes") {
            self.out.writes.push(WrittenPath {
                path,
                by: by.to_owned(),
                placeable: true,
            });
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, depth: usize) {
        let mut words = Vec::new();
        let mut assigns = false;
        let mut redirects = Vec::new();
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                    assigns = true;
                    self.word(&word.value, depth);
                }
                ast::CommandPrefixOrSuffixItem::Word(word) => {
                    words.push(self.word(&word.value, depth))
                }
                ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => redirects.push(redirect),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                    self.process_substitution(subshell, depth)
                }
            }
        }
        if let Some(name) = &simple.word_or_name {
            words.push(self.word(&name.value, depth));
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            match item {
                ast::CommandPrefixOrSuffixItem::Word(word)
                | ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                    words.push(self.word(&word.value, depth))
                }
                ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => redirects.push(redirect),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                    self.process_substitution(subshell, depth)
                }
            }
        }
        let mut here_input = false;
        if !redirects.is_empty() {
            let by = if words.is_empty() {
                "a command of assignments and redirections".to_owned()
            } else {
                join(&words)
            };
            for redirect in redirects {
                here_input |= self.redirect(redirect, &by, depth);
            }
        }
        let caveats = if assigns {
            vec![Caveat::SetsEnvironment]
        } else {
            vec![]
        };
        self.normalize(words, caveats, here_input, depth);
    }

    /// Pushes one simple command, with what its arguments hide.
    fn push(&mut self, words: &[Word], mut caveats: Vec<Caveat>) {
        if self.too_many {
            return;
        }
        if self.out.commands.len() == MAX_SIMPLE_COMMANDS {
            self.too_many = true;
            self.dynamic(
                join(words),
                format!("the command runs more than {MAX_SIMPLE_COMMANDS} simple commands"),
            );
            return;
        }
        for word in words.iter().skip(1) {
            if word.expanded || word.brace {
                caveats.push(Caveat::ExpandedArgument(word.text.clone()));
                break;
            }
        }
        for caveat in &self.inherited {
            if !caveats.contains(caveat) {
                caveats.push(caveat.clone());
            }
        }
        self.out.commands.push(SimpleCommand {
            words: words.iter().map(|w| w.text.clone()).collect(),
            globbed: words.iter().map(|w| w.glob).collect(),
            caveats,
        });
    }

    /// Normalizes a simple command: program basename, wrappers, shells, `find`, `xargs`, `tee`.
    fn normalize(
        &mut self,
        mut words: Vec<Word>,
        mut caveats: Vec<Caveat>,
        here_input: bool,
        depth: usize,
    ) {
        loop {
            let Some(program) = words.first() else {
                // Only assignments (or only redirections): no program runs.
                self.push(&[], caveats);
                return;
            };
            if !program.is_fixed() {
                self.dynamic(
                    join(&words),
                    "an expansion or a glob in the program's position",
                );
                return;
            }
            let path = program.text.clone();
            let name = basename(&path).to_owned();
            if path.contains('/') && !SYSTEM_DIRS.contains(&dirname(&path)) {
                let caveat = Caveat::ProgramByPath(path.clone());
                if !caveats.contains(&caveat) {
                    caveats.push(caveat);
                }
            }
            words[0].text = name.clone();
            let wrapper = match name.as_str() {
                "eval" => {
                    self.dynamic(join(&words), "eval runs its arguments as a command");
                    if words[1..].iter().all(Word::is_fixed) && self.nest(depth, &path) {
                        let text = words[1..]
                            .iter()
                            .map(|w| w.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" ");
                        self.parse_and_walk(&text, depth + 1);
                    }
                    return;
                }
                "trap" => {
                    // `trap 'cmd' SIGNAL` runs cmd later: judged like eval's argument.
                    self.dynamic(
                        join(&words),
                        "trap runs its first argument as a command later",
                    );
                    if let Some(action) = words
                        .get(1)
                        .filter(|w| w.is_fixed() && !w.text.starts_with('-'))
                    {
                        if self.nest(depth, &path) {
                            let action = action.text.clone();
                            self.parse_and_walk(&action, depth + 1);
                        }
                    }
                    return;
                }
                "source" | "." => {
                    self.dynamic(join(&words), format!("{name} runs the commands of a file"));
                    return;
                }
                "let" => {
                    self.dynamic(join(&words), "let evaluates arithmetic on variables");
                    return;
                }
                "env" => Some(&ENV),
                "command" => Some(&COMMAND),
                "builtin" | "nohup" => Some(&NO_OPTIONS),
                "exec" => Some(&EXEC),
                "nice" => Some(&NICE),
                "time" => Some(&TIME),
                "stdbuf" => Some(&STDBUF),
                "timeout" => Some(&TIMEOUT),
                "sudo" => Some(&SUDO),
                "doas" => Some(&DOAS),
                "xargs" => Some(&XARGS),
                _ => None,
            };
            if let Some(spec) = wrapper {
                match self.strip(&name, &words, spec, &mut caveats) {
                    Stripped::Rest(start) if start < words.len() => {
                        words.drain(..start);
                        continue;
                    }
                    Stripped::Rest(_) if name == "xargs" => {
                        // xargs with no program runs echo.
                        words = vec![Word::literal("echo")];
                        continue;
                    }
                    Stripped::Rest(_) | Stripped::NotAWrapper => {}
                    Stripped::Dynamic(why) => {
                        self.dynamic(join(&words), why);
                        return;
                    }
                }
            }
            if here_input && SHELLS.contains(&name.as_str()) {
                self.dynamic(
                    join(&words),
                    "a here-document or here-string fed to a shell",
                );
                return;
            }
            match name.as_str() {
                shell if SHELLS.contains(&shell) => return self.shell(&words, caveats, depth),
                "find" => return self.find(&words, caveats, depth),
                "tee" => self.tee(&words),
                "cd" | "pushd" | "popd" => self.out.changes_directory = true,
                _ => {}
            }
            self.push(&words, caveats);
            return;
        }
    }

    /// Strips one wrapper's options (and `env`'s and `sudo`'s assignments, and `timeout`'s
    /// duration); the index of its program.
    fn strip(
        &mut self,
        name: &str,
        words: &[Word],
        spec: &OptionSpec,
        caveats: &mut Vec<Caveat>,
    ) -> Stripped {
        let options = match parse_options(&words[1..], spec, name == "env") {
            Ok(options) => options,
            Err(why) => return Stripped::Dynamic(why),
        };
        let mut next = options.next + 1;
        match name {
            "env" => {
                if options.has("S") || options.has("split-string") {
                    return Stripped::Dynamic(
                        "env -S splits a string into a command by its own rules".to_owned(),
                    );
                }
                if options.has("C") || options.has("chdir") {
                    self.out.changes_directory = true;
                }
            }
            "command" if options.has("v") || options.has("V") => return Stripped::NotAWrapper,
            "sudo" => {
                if [
                    "e",
                    "l",
                    "v",
                    "V",
                    "K",
                    "edit",
                    "list",
                    "validate",
                    "version",
                    "help",
                    "remove-timestamp",
                ]
                .iter()
                .any(|o| options.has(o))
                {
                    return Stripped::NotAWrapper;
                }
                if options.has("D") || options.has("chdir") {
                    self.out.changes_directory = true;
                }
                caveats.push(Caveat::RunsAsAnotherUser(name.to_owned()));
            }
            "time" => {
                let files: Vec<&str> = options.values(&["o", "output"]).collect();
                let by = if files.is_empty() {
                    String::new()
                } else {
                    join(words)
                };
                for file in files {
                    // The value keeps what the shell does to the word it came from: a glob or
                    // an expansion there (`time -o .claud?/settings.json`) names a file the
                    // text does not fix. A value from no word is treated as such.
                    let source = words
                        .iter()
                        .find(|word| word.text.as_bytes().as_ptr_range().contains(&file.as_ptr()));
                    let word = match source {
                        Some(source) => Word {
                            text: file.to_owned(),
                            ..source.clone()
                        },
                        None => Word {
                            text: file.to_owned(),
                            expanded: true,
                            ..Word::default()
                        },
                    };
                    self.write(&word, &by, &format!("-o {file}"));
                }
            }
            "timeout" => {
                // The duration.
                match words.get(next) {
                    Some(duration) if duration.is_fixed() => next += 1,
                    Some(_) => {
                        return Stripped::Dynamic(
                            "an expansion where timeout's duration is".to_owned(),
                        )
                    }
                    None => return Stripped::NotAWrapper,
                }
            }
            "xargs" => caveats.push(Caveat::ArgumentsFromInput),
            "doas" => caveats.push(Caveat::RunsAsAnotherUser(name.to_owned())),
            _ => {}
        }
        if matches!(name, "env" | "sudo") {
            while let Some(word) = words.get(next) {
                if !is_assignment(&word.text) {
                    break;
                }
                if !word.is_fixed() && !word.tilde {
                    return Stripped::Dynamic(format!(
                        "an expansion where {name} expects an assignment or its program"
                    ));
                }
                if !caveats.contains(&Caveat::SetsEnvironment) {
                    caveats.push(Caveat::SetsEnvironment);
                }
                next += 1;
            }
        }
        Stripped::Rest(next)
    }

    /// `sh -c S` and friends: the simple commands of `S`, parsed again. A shell that reads its
    /// commands from its input is dynamic; one that runs a script file is judged by its name.
    fn shell(&mut self, words: &[Word], caveats: Vec<Caveat>, depth: usize) {
        let mut command = false;
        let mut stdin = false;
        let mut i = 1;
        while let Some(word) = words.get(i) {
            if !word.is_fixed() {
                if command && !word.text.starts_with('-') {
                    break;
                }
                self.dynamic(join(words), "an expansion among the shell's options");
                return;
            }
            let text = word.text.as_str();
            if text == "--" || text == "-" {
                i += 1;
                break;
            }
            if let Some(long) = text.strip_prefix("--") {
                i += if matches!(long, "rcfile" | "init-file") {
                    2
                } else {
                    1
                };
                continue;
            }
            if (text.starts_with('-') || text.starts_with('+')) && text.len() > 1 {
                let mut values = 0;
                for c in text[1..].chars() {
                    match c {
                        'c' if text.starts_with('-') => command = true,
                        's' => stdin = true,
                        'o' | 'O' => values += 1,
                        _ => {}
                    }
                }
                i += 1 + values;
                continue;
            }
            break;
        }
        if command {
            match words.get(i) {
                Some(script) if script.is_fixed() => {
                    if self.nest(depth, &script.text) {
                        let outer = self.inherited.clone();
                        for caveat in caveats {
                            if !self.inherited.contains(&caveat) {
                                self.inherited.push(caveat);
                            }
                        }
                        self.parse_and_walk(&script.text.clone(), depth + 1);
                        self.inherited = outer;
                    }
                }
                Some(_) => self.dynamic(join(words), "the shell's command is an expansion"),
                None => self.push(words, caveats),
            }
        } else if stdin || i >= words.len() {
            self.dynamic(join(words), "a shell reading its commands from its input");
        } else {
            self.push(words, caveats);
        }
    }

    /// `find`: each `-exec`/`-execdir`/`-ok`/`-okdir PROG … ;` is a simple command of its own;
    /// `-fprint FILE` and friends write files; `find` keeps its own words, `-delete` included.
    fn find(&mut self, words: &[Word], caveats: Vec<Caveat>, depth: usize) {
        let mut own = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let text = words[i].text.as_str();
            if matches!(text, "-exec" | "-execdir" | "-ok" | "-okdir") {
                // `-execdir` runs its program in each found file's folder: its relative paths
                // are not the call's.
                self.out.changes_directory |= matches!(text, "-execdir" | "-okdir");
                own.push(words[i].clone());
                let start = i + 1;
                let mut end = start;
                while end < words.len()
                    && words[end].text != ";"
                    && !(words[end].text == "+" && end > start && words[end - 1].text == "{}")
                {
                    end += 1;
                }
                if end > start && self.nest(depth, &join(&words[start..end])) {
                    self.normalize(
                        words[start..end].to_vec(),
                        caveats.clone(),
                        false,
                        depth + 1,
                    );
                }
                if let Some(terminator) = words.get(end) {
                    own.push(terminator.clone());
                }
                i = end + 1;
                continue;
            }
            if matches!(text, "-fprint" | "-fprint0" | "-fprintf" | "-fls") {
                if let Some(file) = words.get(i + 1) {
                    let by = join(words);
                    let file = file.clone();
                    self.write(&file, &by, &format!("{text} {}", file.text));
                }
            }
            own.push(words[i].clone());
            i += 1;
        }
        self.push(&own, caveats);
    }

    /// `tee FILE…` writes its files.
    fn tee(&mut self, words: &[Word]) {
        let by = join(words);
        let files = match parse_options(&words[1..], &TEE, false) {
            Ok(options) => &words[1 + options.next..],
            Err(_) => &words[1..],
        };
        for file in files {
            if file.text != "-" || !file.is_fixed() {
                self.write(file, &by, &file.text);
            }
        }
    }
}

enum Stripped {
    /// The program starts at this index (past the end: the wrapper runs nothing).
    Rest(usize),
    /// The wrapper does something else (`command -v`, `sudo -l`): judged by its own name.
    NotAWrapper,
    Dynamic(String),
}

/// What a part is when the parser itself failed on it (it panicked: a bug in brush-parser,
/// such as an `unwrap` in its tokenizer on a rare here-document shape).
const PARSER_FAILED: &str = "the parser failed on it (brush-parser panicked)";

/// Runs a brush-parser call, turning a panic inside it into `None`: fail closed, never crash the
/// gate. (The panic message still reaches the panic hook, stderr by default.)
fn guarded<T>(call: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).ok()
}

/// Parses a wrapper's options, GNU style; an unknown option or an expansion among them is an
/// error, since then which word is the program cannot be told.
fn parse_options<'w>(
    words: &'w [Word],
    spec: &OptionSpec,
    dash_is_option: bool,
) -> Result<Options<'w>, String> {
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(word) = words.get(i) {
        let text = word.text.as_str();
        let option_like = text.starts_with('-') && text.len() > 1;
        if !word.is_fixed() {
            if option_like
                || word.expanded
                    && !word
                        .text
                        .starts_with(|c: char| c.is_alphanumeric() || c == '/' || c == '.')
            {
                return Err(format!(
                    "an expansion among the options, \"{}\", hides which program runs",
                    super::keys::shown(text)
                ));
            }
            break;
        }
        if text == "--" {
            return Ok(Options { found, next: i + 1 });
        }
        if text == "-" && dash_is_option {
            found.push(("i".to_owned(), None));
            i += 1;
            continue;
        }
        if !option_like {
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let full = long_option(name, spec).ok_or_else(|| {
                format!("the option --{name} is not one this reader knows, so which word is the program cannot be told")
            })?;
            let value = if attached.is_none() && spec.long_with_value.contains(&full) {
                i += 1;
                Some(
                    words
                        .get(i)
                        .map(|w| w.text.as_str())
                        .ok_or_else(|| format!("the option --{full} has no value"))?,
                )
            } else {
                attached
            };
            found.push((full.to_owned(), value));
            i += 1;
            continue;
        }
        let letters = &text[1..];
        if spec.numeric && letters.chars().all(|c| c.is_ascii_digit()) {
            found.push(("n".to_owned(), Some(letters)));
            i += 1;
            continue;
        }
        for (at, c) in letters.char_indices() {
            let rest = &letters[at + c.len_utf8()..];
            if spec.with_value.contains(c) {
                let value = if rest.is_empty() {
                    i += 1;
                    words
                        .get(i)
                        .map(|w| w.text.as_str())
                        .ok_or_else(|| format!("the option -{c} has no value"))?
                } else {
                    rest
                };
                found.push((c.to_string(), Some(value)));
                break;
            } else if spec.attached.contains(c) {
                found.push((c.to_string(), (!rest.is_empty()).then_some(rest)));
                break;
            } else if spec.flags.contains(c) {
                found.push((c.to_string(), None));
            } else {
                return Err(format!(
                    "the option -{c} (in \"{}\") is not one this reader knows, so which word is the program cannot be told",
                    super::keys::shown(text)
                ));
            }
        }
        i += 1;
    }
    Ok(Options { found, next: i })
}

/// A long option's full name: exact, or the only one it abbreviates (as getopt_long allows).
fn long_option(name: &str, spec: &OptionSpec) -> Option<&'static str> {
    let all = || spec.long_flags.iter().chain(spec.long_with_value.iter());
    if let Some(exact) = all().find(|o| **o == name) {
        return Some(exact);
    }
    if name.is_empty() {
        return None;
    }
    let mut candidates = all().filter(|o| o.starts_with(name));
    match (candidates.next(), candidates.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The value of a word that quote removal alone turns into text, without the word parser (a
/// fast path for the common case, exactly what the parser gives): a word with no quoting,
/// expansion, glob or brace character, `'…'` with no `'` inside, or `"…"` with no `"`, `$`,
/// `` ` `` or `\` inside.
fn plain_word(raw: &str) -> Option<&str> {
    /// The bytes that make a word more than its text, as a table: one load a byte.
    const SPECIAL: [bool; 256] = {
        let mut table = [false; 256];
        let special = b"$`\\'\"~*?[]{}()!+@&|;<># \t\n\r";
        let mut at = 0;
        while at < special.len() {
            table[special[at] as usize] = true;
            at += 1;
        }
        table
    };
    let bytes = raw.as_bytes();
    if !raw.is_empty() && !bytes.iter().any(|&b| SPECIAL[b as usize]) {
        return Some(raw);
    }
    let inner = raw.get(1..raw.len().checked_sub(1)?)?;
    match (bytes.first(), bytes.last()) {
        (Some(b'\''), Some(b'\'')) if raw.len() >= 2 && !inner.contains('\'') => Some(inner),
        (Some(b'"'), Some(b'"'))
            if raw.len() >= 2
                && !inner
                    .bytes()
                    .any(|b| matches!(b, b'"' | b'$' | b'`' | b'\\')) =>
        {
            Some(inner)
        }
        _ => None,
    }
}

/// `NAME=value`, as `env` and `sudo` take them.
fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(is_name_char)
        }
        None => false,
    }
}

/// Arithmetic with numbers and operators only: no names, no expansions.
fn is_literal_arithmetic(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_digit() || c.is_ascii_whitespace() || "+-*/%<>=!&|^~?:,()".contains(c))
}

fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
        || ["+(", "@(", "!("]
            .iter()
            .any(|extglob| text.contains(extglob))
}

fn basename(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(at) => &trimmed[at + 1..],
        None if trimmed.is_empty() => path,
        None => trimmed,
    }
}

fn dirname(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(at) => &path[..at],
        None => "",
    }
}

fn is_absolute_or_home(path: &str) -> bool {
    path.starts_with('/') || path == "~" || path.starts_with("~/")
}

/// The body of a backquoted substitution, with its `\\`, `` \` `` and `\$` unescaped.
fn unescape_backquoted(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&next) = chars.peek() {
                if matches!(next, '\\' | '`' | '$') {
                    out.push(next);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

/// The value of an ANSI-C quoted string (`$'…'`, without the quotes), as bash decodes it.
fn ansi_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let digits = |chars: &mut std::iter::Peekable<std::str::Chars>, radix: u32, max: usize| {
        let mut value = 0u32;
        let mut count = 0;
        while count < max {
            match chars.peek().and_then(|c| c.to_digit(radix)) {
                Some(digit) => {
                    value = value * radix + digit;
                    chars.next();
                    count += 1;
                }
                None => break,
            }
        }
        (value, count)
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(next) = chars.next() else {
            out.push('\\');
            break;
        };
        let decoded = match next {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(next),
            '0'..='7' => {
                let first = next.to_digit(8).unwrap_or(0);
                let (rest, count) = digits(&mut chars, 8, 2);
                let value = first * 8u32.pow(count as u32) + rest;
                char::from_u32(value & 0xff)
            }
            'x' => match digits(&mut chars, 16, 2) {
                (_, 0) => {
                    out.push_str("\\x");
                    continue;
                }
                (value, _) => char::from_u32(value),
            },
            'u' | 'U' => match digits(&mut chars, 16, if next == 'u' { 4 } else { 8 }) {
                (_, 0) => {
                    out.push('\\');
                    out.push(next);
                    continue;
                }
                (value, _) => Some(char::from_u32(value).unwrap_or('\u{fffd}')),
            },
            'c' => chars
                .next()
                .map(|c| char::from_u32((c as u32) & 0x1f).unwrap_or(c)),
            other => {
                out.push('\\');
                Some(other)
            }
        };
        match decoded {
            // bash's strings end at a NUL: `$'/etc/passwd\0junk'` is `/etc/passwd`.
            Some('\0') => break,
            Some(decoded) => out.push(decoded),
            None => {}
        }
    }
    out
}

/// Words joined for a reason: a word with a space or shell syntax in it is single-quoted.
fn join(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| quote_word(&w.text))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word as a reason shows it: bare when plain, else in single quotes.
pub fn quote_word(text: &str) -> String {
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
fn compound_kind(compound: &ast::CompoundCommand) -> &'static str {
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
fn cut(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_of(command: &str) -> Vec<Vec<String>> {
        analyse(command)
            .commands
            .into_iter()
            .map(|c| c.words)
            .collect()
    }

    #[test]
    fn plain_words_read_as_the_word_parser_reads_them() {
        for raw in [
            "ls",
            "-rf",
            "src/main.rs",
            "'a b'",
            "\"a b c\"",
            "''",
            "\"\"",
            "a.b,c:d%e^f",
            "\"it's\"",
            "'say \"hi\"'",
            "x=1",
            "\"a\\b\"",
            "'",
            "\"",
            "a'b'",
            "\"$x\"",
            "~/x",
        ] {
            let mut walker = Walker::default();
            let mut parsed = Word::default();
            let pieces = word::parse(raw, &ParserOptions::default());
            if let Ok(pieces) = pieces {
                for piece in &pieces {
                    walker.piece(
                        &piece.piece,
                        raw,
                        piece.start_index,
                        piece.end_index,
                        false,
                        &mut parsed,
                        0,
                    );
                }
                if let Some(plain) = plain_word(raw) {
                    assert_eq!(plain, parsed.text, "{raw}");
                    assert!(parsed.is_fixed(), "{raw}");
                }
            } else {
                assert!(plain_word(raw).is_none(), "{raw}");
            }
        }
        assert_eq!(plain_word("'a b'"), Some("a b"));
        assert_eq!(plain_word("\"a b\""), Some("a b"));
        assert_eq!(plain_word("\"$x\""), None);
        assert_eq!(plain_word("'"), None);
    }

    #[test]
    fn brace_expansions_are_seen_without_the_exponential_brace_parser() {
        let brace = |raw: &str| Walker::default().word(raw, 0).brace;
        assert!(brace("-{r,f}"));
        assert!(brace("x{1..3}"));
        assert!(brace("{a,'b c'}"));
        assert!(!brace("'{a,b}'"));
        assert!(!brace("\"{a,b}\""));
        assert!(!brace("{}"));
        assert!(!brace("${a,b}"));
        // The fuzzer's find: 110 `{` once took brush-parser's brace parser minutes.
        let hostile = format!("{}\0-nmtime", "{".repeat(110));
        assert!(!brace(&hostile));
        let analysis = analyse(&format!("nice {hostile} 10 rm -rf x"));
        assert_eq!(analysis.commands.len(), 1, "{analysis:?}");
        assert_eq!(analysis.commands[0].words[1..], ["10", "rm", "-rf", "x"]);
    }

    #[test]
    fn many_parentheses_are_dynamic_without_the_exponential_grammar() {
        for text in [
            format!("( (\\{}\r\ncifh$f x ) )", "(".repeat(110)),
            "( ".repeat(40),
            format!("{}x{}", "( ".repeat(13), " )".repeat(13)),
        ] {
            let analysis = analyse(&text);
            assert!(
                analysis
                    .dynamic
                    .iter()
                    .any(|d| d.why.contains("parentheses")),
                "{analysis:?}"
            );
        }
        let analysis = analyse("(cd a && make) ; (cd b && make) ; f() { ls; }");
        assert!(analysis.dynamic.is_empty(), "{analysis:?}");
    }

    /// The fuzz target's find: brush-parser's tokenizer unwraps a `None` on this text. The
    /// panic is caught and the command is dynamic.
    #[test]
    fn a_panic_in_the_parser_is_a_dynamic_command() {
        let text = include_str!("../../testdata/commands/brush-panic.txt");
        let analysis = analyse(text);
        assert!(
            analysis.dynamic.iter().any(|d| d.why == PARSER_FAILED),
            "{analysis:?}"
        );
    }

    #[test]
    fn openers_count_brackets_and_keywords_anywhere() {
        assert_eq!(openers("ls -la"), 0);
        assert_eq!(openers("if x; then ( a ) fi"), 2);
        assert_eq!(openers("diff --format {} `x` [y]"), 6);
        assert_eq!(openers("functions whileuntil casecoproc select"), 6);
        assert_eq!(openers("i\\\nf true; then ls; fi"), 1);
    }

    #[test]
    fn ansi_c_strings_decode_as_bash_does() {
        assert_eq!(ansi_c(r"\x72m"), "rm");
        assert_eq!(ansi_c(r"\162m"), "rm");
        assert_eq!(ansi_c(r"\u0072\n\'"), "r\n'");
        assert_eq!(ansi_c(r"a\qb"), r"a\qb");
        assert_eq!(ansi_c(r"\cA"), "\u{1}");
    }

    #[test]
    fn quotes_and_backslashes_are_removed_from_the_program() {
        for command in [
            r"r''m -rf x",
            r#""rm" -rf x"#,
            r"\rm -rf x",
            r"$'\x72m' -rf x",
            "/bin/rm -rf x",
        ] {
            assert_eq!(words_of(command), [["rm", "-rf", "x"]], "{command}");
        }
    }

    #[test]
    fn wrappers_are_stripped_with_their_options() {
        for command in [
            "env -i -u HOME FOO=1 rm -rf x",
            "sudo -u root -E rm -rf x",
            "nice -n 5 rm -rf x",
            "nice -10 rm -rf x",
            "timeout -s KILL 10s rm -rf x",
            "timeout --signal=KILL 10 rm -rf x",
            "stdbuf -oL -e0 rm -rf x",
            "nohup rm -rf x",
            "command rm -rf x",
            "builtin rm -rf x",
            "exec -a name rm -rf x",
            "doas -u root rm -rf x",
            "/usr/bin/time -o /dev/null rm -rf x",
            "sudo env nice -n 1 timeout 5 rm -rf x",
        ] {
            assert_eq!(words_of(command), [["rm", "-rf", "x"]], "{command}");
        }
        assert_eq!(
            words_of("echo a | xargs -0 -n1 rm -f"),
            [vec!["echo", "a"], vec!["rm", "-f"]]
        );
        assert_eq!(words_of("command -v rm"), [["command", "-v", "rm"]]);
        assert_eq!(words_of("sudo -l"), [["sudo", "-l"]]);
    }

    #[test]
    fn shells_are_parsed_again() {
        for command in [
            "sh -c 'rm -rf x'",
            "bash -lc 'rm -rf x'",
            "bash -e -o pipefail -c 'rm -rf x'",
            "zsh -c \"rm -rf x\"",
            "dash -c 'bash -c \"rm -rf x\"'",
        ] {
            assert_eq!(words_of(command), [["rm", "-rf", "x"]], "{command}");
        }
        assert!(!analyse("bash <<EOF\nrm -rf x\nEOF").dynamic.is_empty());
        assert!(!analyse("curl x | sh").dynamic.is_empty());
        assert!(analyse("bash script.sh").dynamic.is_empty());
    }

    #[test]
    fn a_shell_or_find_under_sudo_or_env_passes_its_caveats_on() {
        for command in [
            "sudo bash -c 'cat /etc/shadow'",
            "sudo find / -exec cat {} +",
            "env GIT_EXTERNAL_DIFF=x sh -c 'git diff'",
            "./sh -c 'ls'",
        ] {
            let analysis = analyse(command);
            assert!(
                analysis.commands.iter().all(|c| !c.caveats.is_empty()),
                "{command}: {analysis:?}"
            );
        }
        let analysis = analyse("sudo true; bash -c 'ls'");
        assert!(analysis.commands[1].caveats.is_empty(), "{analysis:?}");
    }

    #[test]
    fn find_exec_yields_its_own_command_and_delete_stays_visible() {
        assert_eq!(
            words_of(r"find . -name '*.o' -exec rm -rf {} \;"),
            [
                vec!["rm", "-rf", "{}"],
                vec!["find", ".", "-name", "*.o", "-exec", ";"]
            ]
        );
        assert_eq!(words_of("find . -delete"), [["find", ".", "-delete"]]);
        assert_eq!(
            words_of("find . -execdir sh -c 'rm -rf x' {} +"),
            [vec!["rm", "-rf", "x"], vec!["find", ".", "-execdir", "+"]]
        );
    }

    #[test]
    fn dynamic_shapes_are_reported() {
        for command in [
            "echo $(whoami)",
            "echo `whoami`",
            "$CMD -rf x",
            "r* -rf x",
            "eval 'rm -rf x'",
            "source ./x.sh",
            ". ./x.sh",
            "diff <(ls a) <(ls b)",
            "bash <<< 'rm -rf x'",
            "echo 'unterminated",
            "x='a[$(id)]'; echo $((x))",
            "echo ${!name}",
            "[[ $n -gt 3 ]]",
            "echo > \"$file\"",
            "trap 'rm -rf x' EXIT",
            "cat <<EOF\n$(id)\nEOF",
        ] {
            assert!(!analyse(command).dynamic.is_empty(), "{command}");
        }
        for command in [
            "echo $((1 + 2))",
            "cat <<'EOF'\n$(id)\nEOF",
            "[[ -f x ]] && ls",
            "git status",
        ] {
            assert!(
                analyse(command).dynamic.is_empty(),
                "{command}: {:?}",
                analyse(command)
            );
        }
    }

    #[test]
    fn nesting_and_counts_are_bounded() {
        let deep = format!("{}ls;{}", "{ ".repeat(9), " }".repeat(9));
        assert!(!analyse(&deep).dynamic.is_empty());
        let shallow = format!("{}ls;{}", "{ ".repeat(8), " }".repeat(8));
        assert!(
            analyse(&shallow).dynamic.is_empty(),
            "{:?}",
            analyse(&shallow)
        );
        let many = vec!["ls"; 65].join("; ");
        let analysis = analyse(&many);
        assert_eq!(analysis.commands.len(), MAX_SIMPLE_COMMANDS);
        assert!(!analysis.dynamic.is_empty());
        assert!(analyse(&vec!["ls"; 64].join("; ")).dynamic.is_empty());
    }

    #[test]
    fn spaced_parentheses_are_judged_as_subshells_too() {
        let analysis = analyse("( ( rm -rf x ) )");
        assert!(
            analysis
                .commands
                .iter()
                .any(|c| c.words == ["rm", "-rf", "x"]),
            "{analysis:?}"
        );
    }

    #[test]
    fn input_redirections_read_files() {
        let analysis = analyse(
            "cat < a; < ~/.ssh/id_rsa cat; head 0<b; { cat; } < c; cat <> d; cat < /dev/null",
        );
        let reads: Vec<&str> = analysis.reads.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(reads, ["a", "~/.ssh/id_rsa", "b", "c", "d"]);
        assert_eq!(analysis.writes.len(), 1, "<> writes too");
        assert!(
            analysis.reads[0].by.starts_with("cat <"),
            "{:?}",
            analysis.reads[0]
        );
        let moved = analyse("cd x && cat < y; cat < /etc/z");
        assert!(!moved.reads[0].placeable && moved.reads[1].placeable);
        let named = analyse("cat < $HOME/.ssh/id_rsa");
        assert!(named.reads.is_empty() && !named.dynamic.is_empty());
    }

    #[test]
    fn a_nul_ends_an_ansi_c_string_as_in_bash() {
        assert_eq!(ansi_c(r"/etc/passwd\0junk"), "/etc/passwd");
        assert_eq!(ansi_c(r"a\x00b"), "a");
        assert_eq!(ansi_c(r"a\c@b"), "a");
        assert_eq!(
            words_of("cat $'/x/id_rsa\\0'y"),
            [vec!["cat", "/x/id_rsay"]]
        );
    }

    #[test]
    fn find_execdir_changes_directory() {
        assert!(analyse("find . -execdir cat x ';'").changes_directory);
        assert!(analyse("find . -okdir cat x ';'").changes_directory);
        assert!(!analyse("find . -exec cat x ';'").changes_directory);
    }

    #[test]
    fn negations_in_a_test_count_as_openers() {
        let deep = format!("[[ {}-e x ]]", "! ".repeat(3000));
        assert!(openers(&deep) >= 3000);
        let analysis = analyse(&deep);
        assert!(!analysis.dynamic.is_empty(), "{analysis:?}");
    }

    #[test]
    fn redirections_and_tee_write_files() {
        let analysis = analyse("echo x > a; echo y >> ~/.bashrc 2>/dev/null; ls &> b; echo | tee -a c d; cat x >| e 2>&1");
        let paths: Vec<&str> = analysis.writes.iter().map(|w| w.path.as_str()).collect();
        assert_eq!(paths, ["a", "~/.bashrc", "b", "c", "d", "e"]);
        assert!(analysis.writes.iter().all(|w| w.placeable));
        let moved = analyse("cd .claude && echo x > settings.json; echo y > /tmp/z");
        assert!(moved.changes_directory);
        assert!(!moved.writes[0].placeable);
        assert!(moved.writes[1].placeable);
    }

    /// Every shape the parser recurses on, nested as deep as [`MAX_OPENERS`] lets a command
    /// be, is read on a small thread stack without overflowing it (an overflow aborts the test
    /// binary), and whatever is past the limits is dynamic.
    #[test]
    fn deep_nesting_never_overflows_a_small_stack() {
        let n = MAX_OPENERS - 2;
        let shapes: Vec<String> = vec![
            format!("{}ls;{}", "{ ".repeat(n), " }".repeat(n)),
            format!("{}ls{}", "(".repeat(n), ")".repeat(n)),
            format!(
                "{}ls{}",
                "if true; then ".repeat(n / 2),
                "; fi".repeat(n / 2)
            ),
            format!(
                "{}ls{}",
                "while ls; do ".repeat(n / 2),
                "; done".repeat(n / 2)
            ),
            format!("{}ls{}", "f() { ".repeat(n / 2), "; }".repeat(n / 2)),
            format!("echo {}x{}", "$(echo ".repeat(n / 2), ")".repeat(n / 2)),
            format!("echo {}x{}", "${a:-".repeat(n), "}".repeat(n)),
            format!("echo {}x{}", "\"$(echo ".repeat(n / 2), ")\"".repeat(n / 2)),
            format!("echo $(({}1{}))", "(".repeat(n), ")".repeat(n)),
            format!(
                "{}ls{}",
                "case x in x) ".repeat(n / 2),
                ";; esac".repeat(n / 2)
            ),
            format!("{}ls", "! ".repeat(4 * n)),
            format!("[[ {}x{} ]]", "( ".repeat(n), " )".repeat(n)),
            format!("echo {}", "\\`".repeat(4 * n)),
            format!("{}ls", "coproc ".repeat(n)),
            format!("{}ls{}", "{ ".repeat(4 * n), " }".repeat(4 * n)),
            "(".repeat(MAX_COMMAND_BYTES + 1),
        ];
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                for shape in &shapes {
                    let analysis = analyse(shape);
                    assert!(
                        !analysis.dynamic.is_empty() || analysis.commands.len() < 3,
                        "{}: {analysis:?}",
                        &shape[..40.min(shape.len())]
                    );
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
