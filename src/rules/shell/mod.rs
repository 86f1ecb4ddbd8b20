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

mod options;
mod patch_invocation;
mod redirect;
mod show;
mod simple;
mod text;
mod walk;
mod words;

pub use patch_invocation::{patch_invocation, PatchInvocation};
pub(crate) use show::quote_word;

/// Longer commands are dynamic without being parsed.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// More simple commands than this make a command dynamic.
pub(crate) const MAX_SIMPLE_COMMANDS: usize = 64;
/// Compound commands, functions, substitutions and `sh -c` nested deeper than this are dynamic.
pub(crate) const MAX_NESTING: usize = 8;
/// A command with more nesting openers than this (see [`openers`]) is dynamic without being parsed.
pub(crate) const MAX_OPENERS: usize = 256;

/// A command with more `(` operators (subshells, `((`, function definitions, `[[ ( ]]`, not
/// `$(`) than this is dynamic without being parsed: brush-parser's grammar backtracks over
/// them, in time exponential in their number when the text does not parse (24 take a second).
pub(crate) const MAX_PARENTHESES: usize = 12;

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
    /// Redirections to bash's `/dev/tcp/HOST/PORT` and `/dev/udp/HOST/PORT`, which open a
    /// network connection whatever the program (`cat < /dev/tcp/h/80`, `exec 3<>/dev/udp/h/53`,
    /// `echo x > /dev/tcp/h/80`): network egress.
    pub network: Vec<DynamicPart>,
    /// Bash's own syntax that a POSIX `sh` (dash) reads as something else, which runs or writes
    /// what bash's reading does not show: `$'…'` quoting (dash ends the quote elsewhere, so text
    /// bash reads as one word it runs as commands), an arithmetic command `((…))` (dash runs its
    /// text as a command in nested subshells), and any `[[ … ]]` (dash has none: it runs `[[` as
    /// a program and reads `|`, `&&`, `||`, `<` and `>` inside as its own). Only a door whose agent may run the command in
    /// another shell reads these (Codex, whose model may name the shell).
    pub other_shells: Vec<DynamicPart>,
    /// Copies of a folder's contents onto another (`cp -r tpl/. .`, `cp -rT tpl .`): each file
    /// of the tree lands under the destination by its own name, which the command does not show
    /// (added by `commands.operandWrites`).
    pub tree_copies: Vec<TreeCopy>,
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
    /// `find … -exec PROG … {} ;` (and `-execdir`, `-ok`, `-okdir`): find puts each path it
    /// finds where `{}` is, so the paths the program reads or writes are not in the text
    /// (`find . -name target -exec mv {} t2 \;` moves whatever it finds). The command rules
    /// let the plain readers keep their allow despite it (`FOUND_PATH_READERS`).
    FoundPaths,
    /// `sudo` or `doas` runs it as another user, with rights the agent does not have.
    RunsAsAnotherUser(String),
    /// An argument is an expansion (`$X`, `${X}`, `$((…))`) or a brace expansion (`{a,b}`), so
    /// the words the program gets are not the words the rules see.
    ExpandedArgument(String),
    /// `make NAME=value` (and `gmake`, `bmake`): a variable set on make's command line overrides
    /// the makefile's, so `SHELL`, `.SHELLFLAGS` or a recipe's `$(CC)` run what it names.
    OverridesVariable(String),
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
            Caveat::FoundPaths => {
                "find puts the paths it finds where {} is, which the rules cannot see".to_owned()
            }
            Caveat::ExpandedArgument(word) => format!(
                "the argument \"{}\" is an expansion the rules cannot see",
                super::keys::shown(word)
            ),
            Caveat::OverridesVariable(word) => format!(
                "the argument \"{}\" overrides a make variable, which can change what make runs (SHELL, .SHELLFLAGS, a recipe's $(CC))",
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

/// A copy of a folder's contents onto a folder ([`Analysis::tree_copies`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeCopy {
    /// The folder whose contents are copied, as written (`tpl/.`, or `tpl` under `cp -T`).
    pub from: String,
    /// The folder they land in, as written.
    pub onto: String,
    /// The simple command that copies.
    pub by: String,
    /// Whether relative paths can be placed (false when the command changes directory).
    pub placeable: bool,
    /// The copy is the command's only simple command: nothing in the command changes the tree
    /// (`git pull`, `tar -x`) between the door's look at it and the copy.
    pub sole: bool,
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
    /// Whether bash expands the word as a glob (an unquoted `*`, `?`, `[`), so that it may name
    /// other files than its text: only a program's operands say so (`rm .cl*`).
    pub expands: bool,
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
pub(crate) fn openers(text: &str) -> usize {
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
}

/// What a part is when the parser itself failed on it (it panicked: a bug in brush-parser,
/// such as an `unwrap` in its tokenizer on a rare here-document shape).
const PARSER_FAILED: &str = "the parser failed on it (brush-parser panicked)";

thread_local! {
    /// Whether this thread is inside [`guarded`].
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a panic now, on this thread, is the parser's, which [`guarded`] catches and reads as
/// a dynamic command. A process's panic hook that ends the process (sc-hook's refuses the call)
/// must let this one unwind to its catch instead: ended there, a command the parser cannot read
/// was refused outright, and for Cursor, which reads a hook that prints nothing as a yes, let
/// through (found by a review).
pub fn catching_a_parser_panic() -> bool {
    GUARDED.with(std::cell::Cell::get)
}

/// Runs a brush-parser call, turning a panic inside it into `None`: fail closed, never crash the
/// gate. (The panic message still reaches the panic hook, stderr by default.)
fn guarded<T>(call: impl FnOnce() -> T) -> Option<T> {
    let outer = GUARDED.with(|guarded| guarded.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).ok();
    GUARDED.with(|guarded| guarded.set(outer));
    result
}

fn is_absolute_or_home(path: &str) -> bool {
    path.starts_with('/') || path == "~" || path.starts_with("~/")
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
