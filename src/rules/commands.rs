//! Policy key `commands`: prefix rules over the simple commands of a shell command, for the
//! tools that take one (`Bash`).
//!
//! ```json
//! "commands": {
//!   "tools": {"Bash": "command"},
//!   "rules": [
//!     {"prefix": ["git", ["status", "diff"]], "decision": "allow", "whenTainted": "allow",
//!      "match": ["git status", "git diff --stat"], "notMatch": ["git push"]},
//!     {"prefix": ["rm", "-r", "-f"], "decision": "deny"}
//!   ],
//!   "unmatched": "hold",
//!   "dynamic": "hold"
//! }
//! ```
//!
//! # Design
//!
//! - **Parse, never split.** [`super::shell::analyse`] reads the command with `brush-parser`, a
//!   real bash parser, into simple commands across every list operator, pipeline, compound
//!   command and function body, with quotes removed and wrappers stripped. Nothing here looks
//!   for words in the raw text. (tree-sitter-bash was measured too: slower on long commands, and
//!   it leaves quote removal to the caller.)
//! - **What the text does not fix is dynamic**, and gets `dynamic` (hold or deny): substitutions
//!   anywhere, an expansion or glob as the program, `eval`/`source`/`.`, a here-document fed to a
//!   shell, a parse error, too many commands or too deep a nesting. The command's other simple
//!   commands are still judged, so a denied one inside `$( … )` still denies.
//! - **Caveats cap an allow at hold**: a simple command whose program is known but whose effect
//!   the rules cannot fully see (it sets environment variables, `sudo`/`doas` run it as another
//!   user, its program is a file given by a path outside the system directories, xargs feeds it
//!   arguments, an argument is an expansion or a brace expansion) still matches rules, and a
//!   deny or hold applies, but an allow does not apply to it as it stands. Caveats pass into
//!   `sh -c` scripts and `find -exec` commands. For a tainted agent, a file the command writes
//!   is held too, as a `Write` call would be.
//! - **Matching** (prefix tokens): option tokens (`-r`, `-delete`, `--force`) match anywhere
//!   among the options, a one-letter one inside bundles (`-fr`), a `--long` one also as
//!   `--long=value` and as an abbreviation getopt_long accepts (`--forc`); the other tokens match
//!   the first non-option words, from the program on.
//! - **Strictest wins**: over the rules a simple command matches, then over the simple commands,
//!   the dynamic parts, and (for a tainted agent) the files it writes. Reasons are kept only for
//!   the winning decision.
//! - **Checked at load**: every rule's `match` and `notMatch` example is run through the same
//!   analysis and matcher, so a rule that does not do what its author wrote never loads.
//! - **Pure and bounded**: no I/O; parsing is capped in size and nesting before it starts
//!   ([`super::shell`]), so a hostile command costs bounded time and stack.
//! - **Cost** (`cargo bench --bench commands`, 50 rules, a 2-core machine shared with other
//!   builds, so the figures are loose): 4 µs for `cargo build && rm -rf build`, 16 µs for a
//!   4 KiB one-command line (a long commit message; 26 µs with the pack's `paths` rules too),
//!   about 245 µs for a 4 KiB chain of 63 simple commands (330 µs with the paths), of which the
//!   parse is about 200 µs: brush-parser tries each word as an assignment with a PEG parser and
//!   allocates per token. Counted in instructions (callgrind), the chain with the paths is 2.8 M:
//!   the parse 1.7 M, the paths of the arguments 0.57 M, these rules 0.30 M (0.55 M before rules
//!   were indexed by program and reasons capped). Rules are compiled once, at load: a simple
//!   command is tried only against the rules for its program, and at most [`MAX_REASONS`]
//!   reasons are written.

use std::fmt;

use serde_json::{Map, Value};

use super::keys::{self, shown, wrong_type, KeyError, KeyProblem, Problem};
use super::shell::{
    analyse, quote_word, Analysis, Caveat, DynamicPart, SimpleCommand, WrittenPath,
};
use crate::rules::argrules::WhenTainted;
use crate::rules::tools::ToolPattern;
use crate::verdict::Decision;

/// The most reasons written for one command's decision; the findings past them are counted.
pub(crate) const MAX_REASONS: usize = 8;

/// The keys of `commands`.
pub const KEYS: &[&str] = &[
    "tools",
    "rules",
    "unmatched",
    "dynamic",
    "programByPath",
    "outputOptions",
    "operandWrites",
    "unreadTools",
    "runOptions",
];
/// The keys of one rule.
pub(crate) const RULE_KEYS: &[&str] = &[
    "prefix",
    "decision",
    "whenTainted",
    "whenConfined",
    "match",
    "notMatch",
];
/// The keys of `programByPath`.
pub(crate) const BY_PATH_KEYS: &[&str] = &["decision", "whenConfined"];

/// What can be wrong with the `commands` key, besides what every key's reader finds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandProblem {
    #[error(transparent)]
    Key(#[from] Problem),
    #[error("must be \"hold\" or \"deny\": a command whose effect its text does not fix is never allowed")]
    DynamicAllowed,
    /// A rule without one of the keys a rule needs (`prefix`, `decision`).
    #[error("a rule needs a `{0}`")]
    Missing(&'static str),
    /// Not `"allow"` or `"hold"`; the value found, as JSON text.
    #[error("expected \"allow\" or \"hold\", found {0}")]
    WhenTainted(String),
    #[error("is empty; a prefix names at least the program")]
    EmptyPrefix,
    #[error("an empty list of alternatives")]
    NoAlternatives,
    #[error("an empty token")]
    EmptyToken,
    #[error("alternatives mix options and words; write them as two tokens")]
    MixedToken,
    #[error("a prefix starts with the program, not an option")]
    OptionFirst,
    #[error("{0:?} has a `/`; a program is matched by its basename (`/bin/rm` is `rm`)")]
    ProgramPath(String),
    /// An `outputOptions` entry that is not an option.
    #[error("{0:?} is not an option: it must start with `-` and name one")]
    NotAnOption(String),
    /// A `match` example the rule does not match: the rule's prefix and the example's simple
    /// commands, as shown.
    #[error("the example \"{}\" does not match the rule (prefix {prefix}); its simple commands are: {commands}", shown(.example))]
    ExampleMissed {
        example: String,
        prefix: String,
        commands: String,
    },
    /// A `notMatch` example the rule matches.
    #[error("the example \"{}\" matches the rule (prefix {prefix}); its simple commands are: {commands}", shown(.example))]
    ExampleMatched {
        example: String,
        prefix: String,
        commands: String,
    },
}

impl KeyProblem for CommandProblem {
    fn suggestion(&self) -> Option<&str> {
        match self {
            CommandProblem::Key(problem) => problem.suggestion(),
            _ => None,
        }
    }
}

/// An error of the `commands` key, naming the key path.
pub(crate) type CommandsError = KeyError<CommandProblem>;

impl From<KeyError> for CommandsError {
    fn from(err: KeyError) -> CommandsError {
        CommandProblem::Key(err.problem).at(err.key)
    }
}

/// The checked `commands` key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRules {
    tools: Vec<(ToolPattern, String)>,
    rules: Vec<CommandRule>,
    unmatched: Decision,
    dynamic: Decision,
    /// Program → the indices of the rules whose first token names it, in order: a simple
    /// command is tried only against the rules for its program.
    by_program: std::collections::HashMap<String, Vec<usize>>,
    /// `programByPath`: the decision for a simple command whose program is a file given by a
    /// path outside the system directories (`./build.sh`) and that no rule matches, in place of
    /// `unmatched`.
    program_by_path: Option<ByPath>,
    /// `outputOptions`: program → the options whose value is a file (or a folder) the program
    /// writes, judged by the `paths` rules as a redirection's file is.
    output_options: std::collections::HashMap<String, Vec<String>>,
    /// `runOptions`: program → the options whose value is a file or folder the program runs
    /// code from (`make -C DIR`, `cargo --manifest-path F`), judged by the `paths` rules as a
    /// file it writes: outside the root held, in a protected place denied.
    run_options: std::collections::HashMap<String, Vec<String>>,
    /// `operandWrites`: program → the decision for an operand that is the root itself; every
    /// operand of these programs is a write judged by the `paths` rules
    /// ([`super::operands`]).
    pub(crate) operand_writes: super::operands::OperandWrites,
    /// `unreadTools`: shell tools whose commands are in a language these rules do not read
    /// (PowerShell): every call gets the `dynamic` decision.
    pub(crate) unread_tools: crate::rules::tools::ToolList,
}

/// The `programByPath` key: what decides a program given by a path that no rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByPath {
    /// The decision; an allow counts as hold (the program is a file the agent may have written),
    /// unless the call runs confined and `when_confined` says otherwise.
    pub decision: Decision,
    /// `whenConfined`: the decision when the call runs under the sandbox.
    pub when_confined: Option<Decision>,
}

/// One rule, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRule {
    /// Its index in `commands.rules`.
    pub index: usize,
    prefix: Vec<Token>,
    pub decision: Decision,
    pub when_tainted: WhenTainted,
    /// `whenConfined`: the decision used instead of `decision` (and `whenTainted`) when the call
    /// runs under the sandbox, which keeps the promises the text cannot show.
    pub when_confined: Option<Decision>,
    /// The rule has `whenConfined` and no `decision`: it applies only to a confined call, and
    /// is not there for any other (`decision` then holds the `whenConfined` value).
    pub confined_only: bool,
}

/// A prefix token: alternatives, all options or all words.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Vec<String>),
    Option(Vec<String>),
}

/// The decision on a shell command, its reasons (never empty), and the files it writes (for the
/// path rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandJudgement {
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub writes: Vec<WrittenPath>,
    /// Whether the decision is a hold only because the agent is tainted (an allow counted as
    /// hold, or a file written), so that the caller can say what tainted it.
    pub by_taint: bool,
}

impl Default for CommandRules {
    fn default() -> Self {
        CommandRules {
            tools: Vec::new(),
            rules: Vec::new(),
            unmatched: Decision::Hold,
            dynamic: Decision::Hold,
            by_program: std::collections::HashMap::new(),
            program_by_path: None,
            output_options: std::collections::HashMap::new(),
            run_options: std::collections::HashMap::new(),
            operand_writes: Default::default(),
            unread_tools: crate::rules::tools::ToolList::default(),
        }
    }
}

impl CommandRules {
    /// Checks the `commands` key (`key` is its name, for errors). Errors name the key, the rule
    /// index and the example that does not behave.
    pub fn from_json(key: &str, value: &Value) -> Result<CommandRules, CommandsError> {
        CommandRules::from_json_examples(key, value, true)
    }

    /// [`CommandRules::from_json`], with the rules' examples run only when `check_examples`
    /// (the shipped pack's were run when it was built: [`Policy::from_json_str`]).
    ///
    /// [`Policy::from_json_str`]: crate::rules::policy::Policy::from_json_str
    pub(crate) fn from_json_examples(
        key: &str,
        value: &Value,
        check_examples: bool,
    ) -> Result<CommandRules, CommandsError> {
        let object = keys::object(key, value, KEYS)?;
        let mut rules = CommandRules::default();
        if let Some(tools) = object.get("tools") {
            rules.tools = keys::tool_map(&format!("{key}.tools"), tools)?;
        }
        if let Some(unmatched) = object.get("unmatched") {
            rules.unmatched = keys::decision(&format!("{key}.unmatched"), unmatched)?;
        }
        if let Some(dynamic) = object.get("dynamic") {
            rules.dynamic = keys::decision(&format!("{key}.dynamic"), dynamic)?;
            if rules.dynamic == Decision::Allow {
                return Err(CommandProblem::DynamicAllowed.at(format!("{key}.dynamic")));
            }
        }
        if let Some(options) = object.get("outputOptions") {
            rules.output_options = output_options(&format!("{key}.outputOptions"), options)?;
        }
        if let Some(options) = object.get("runOptions") {
            rules.run_options = output_options(&format!("{key}.runOptions"), options)?;
        }
        if let Some(operands) = object.get("operandWrites") {
            rules.operand_writes = super::operands::OperandWrites {
                programs: operand_writes(&format!("{key}.operandWrites"), operands)?,
            };
        }
        if let Some(unread) = object.get("unreadTools") {
            let names = keys::strings(&format!("{key}.unreadTools"), unread)?;
            rules.unread_tools = crate::rules::tools::ToolList::parse(&names)
                .map_err(|item| Problem::ToolItem(item).at(format!("{key}.unreadTools")))?;
        }
        if let Some(by_path) = object.get("programByPath") {
            rules.program_by_path = Some(by_path_rule(&format!("{key}.programByPath"), by_path)?);
        }
        if let Some(list) = object.get("rules") {
            let Value::Array(items) = list else {
                return Err(wrong_type("an array of rules", list)
                    .at(format!("{key}.rules"))
                    .into());
            };
            for (index, item) in items.iter().enumerate() {
                let rule = rule(index, item)
                    .map_err(|err| err.within(key, &format!(".rules[{index}]")))?;
                if let Some(Token::Word(programs)) = rule.0.prefix.first() {
                    for program in programs {
                        let indices = rules.by_program.entry(program.clone()).or_default();
                        if indices.last() != Some(&index) {
                            indices.push(index);
                        }
                    }
                }
                rules.rules.push(rule.0);
                if !check_examples {
                    continue;
                }
                self::check_examples(
                    &format!("{key}.rules[{index}]"),
                    &rules.rules[index],
                    &rule.1,
                )?;
            }
        }
        Ok(rules)
    }

    /// The key of `args` that holds the shell command of `tool`, if the rules apply to it.
    pub(crate) fn arg_key(&self, tool: &str) -> Option<&str> {
        crate::rules::tools::entry_for(&self.tools, tool).map(String::as_str)
    }

    pub fn rules(&self) -> &[CommandRule] {
        &self.rules
    }

    pub fn unmatched(&self) -> Decision {
        self.unmatched
    }

    pub fn dynamic(&self) -> Decision {
        self.dynamic
    }

    /// The `programByPath` key, if the policy has one.
    pub fn program_by_path(&self) -> Option<ByPath> {
        self.program_by_path
    }

    /// Decides a command for an agent that is tainted or not.
    pub fn decide(&self, command: &str, tainted: bool) -> CommandJudgement {
        self.decide_confined(command, tainted, false)
    }

    /// Decides a command for an agent that is tainted or not, run confined or not.
    pub fn decide_confined(
        &self,
        command: &str,
        tainted: bool,
        confined: bool,
    ) -> CommandJudgement {
        let mut analysis = analyse(command);
        self.add_option_writes(&mut analysis);
        self.add_operand_writes(&mut analysis);
        self.judge(command, &analysis, tainted, confined)
    }

    /// The caveat that keeps an allow from applying to `simple`, if any. What find runs on the
    /// paths it finds (`{}`) counts for every program but the plain readers of
    /// [`FOUND_PATH_READERS`], whose words can only name files they read (`find -exec grep … {}
    /// +` stays allowed; `find -exec mv {} t2 \;`, `-exec go build -o {}/x`, `-exec make -C
    /// {}` are asked about).
    fn caveat_of<'a>(&self, simple: &'a SimpleCommand) -> Option<&'a Caveat> {
        simple.caveats.iter().find(|caveat| {
            **caveat != Caveat::FoundPaths
                || !simple
                    .words
                    .first()
                    .is_some_and(|program| FOUND_PATH_READERS.contains(&program.as_str()))
        })
    }

    /// Decides a command already analysed.
    pub(crate) fn judge(
        &self,
        command: &str,
        analysis: &Analysis,
        tainted: bool,
        confined: bool,
    ) -> CommandJudgement {
        // Decisions first; reasons are written only for the findings that win.
        let mut findings: Vec<(Decision, Finding)> = Vec::new();
        for simple in &analysis.commands {
            let split = Split::of(&simple.words);
            let mut matched = false;
            let candidates = split
                .words
                .first()
                .and_then(|program| self.by_program.get(*program))
                .map_or(&[][..], Vec::as_slice);
            for rule in candidates.iter().map(|&index| &self.rules[index]) {
                if rule.confined_only && !confined {
                    continue;
                }
                if rule.matches_split(&split) {
                    matched = true;
                    if let (true, Some(decision)) = (confined, rule.when_confined) {
                        findings.push((decision, Finding::Rule(simple, rule, Cap::Confined)));
                        continue;
                    }
                    let tainted = tainted && rule.when_tainted != WhenTainted::Allow;
                    let cap = Cap::of(rule.decision, self.caveat_of(simple), tainted);
                    findings.push((
                        cap.decision(rule.decision),
                        Finding::Rule(simple, rule, cap),
                    ));
                }
            }
            let by_path = self.program_by_path.filter(|_| {
                simple
                    .caveats
                    .iter()
                    .any(|c| matches!(c, Caveat::ProgramByPath(_)))
            });
            if let (false, Some(by_path)) = (matched, by_path) {
                if let (true, Some(decision)) = (confined, by_path.when_confined) {
                    findings.push((decision, Finding::ByPath(simple, Cap::Confined)));
                } else {
                    let cap = Cap::of(by_path.decision, self.caveat_of(simple), tainted);
                    findings.push((cap.decision(by_path.decision), Finding::ByPath(simple, cap)));
                }
            } else if !matched {
                let cap = Cap::of(self.unmatched, self.caveat_of(simple), tainted);
                findings.push((
                    cap.decision(self.unmatched),
                    Finding::Unmatched(simple, cap),
                ));
            }
        }
        for part in &analysis.dynamic {
            findings.push((self.dynamic, Finding::Dynamic(part)));
        }
        for part in &analysis.network {
            findings.push((self.dynamic, Finding::Network(part)));
        }
        // A confined call's writes are the sandbox's to keep: its protected places are
        // read-only there, and the `paths` rules still judge each file.
        if tainted && !confined {
            for write in &analysis.writes {
                findings.push((Decision::Hold, Finding::TaintedWrite(write)));
            }
        }
        let whole = shown(command.trim());
        let Some(strongest) = findings.iter().map(|(d, _)| *d).max() else {
            return CommandJudgement {
                decision: Decision::Allow,
                reasons: vec![format!("\"{whole}\" runs no command")],
                writes: analysis.writes.clone(),
                by_taint: false,
            };
        };
        let mut reasons: Vec<String> = Vec::new();
        let mut by_taint = false;
        let mut unlisted = 0;
        for (decision, finding) in findings {
            if decision != strongest {
                continue;
            }
            by_taint |= matches!(
                finding,
                Finding::TaintedWrite(_)
                    | Finding::Rule(_, _, Cap::Tainted)
                    | Finding::Unmatched(_, Cap::Tainted)
                    | Finding::ByPath(_, Cap::Tainted)
            );
            // A long chain would otherwise carry a reason per simple command: the first few
            // are written, the rest counted.
            if reasons.len() == MAX_REASONS {
                unlisted += 1;
                continue;
            }
            let reason = self.reason(&finding, decision, &whole);
            if !reasons.contains(&reason) {
                reasons.push(reason);
            }
        }
        if unlisted > 0 {
            reasons.push(format!(
                "and {unlisted} more of its simple commands, parts or writes with the decision {strongest}, not listed"
            ));
        }
        CommandJudgement {
            decision: strongest,
            reasons,
            writes: analysis.writes.clone(),
            by_taint,
        }
    }

    fn reason(&self, finding: &Finding, decision: Decision, whole: &str) -> String {
        match finding {
            Finding::Rule(simple, rule, cap) => cap.explain(
                format!(
                    "{} matches commands.rules[{}] (prefix {})",
                    within(&display(simple), whole),
                    rule.index,
                    PrefixShown(&rule.prefix)
                ),
                decision,
                "the rule",
            ),
            Finding::Unmatched(simple, cap) => cap.explain(
                format!(
                    "{} matches no rule: commands.unmatched is {}",
                    within(&display(simple), whole),
                    self.unmatched
                ),
                decision,
                "commands.unmatched",
            ),
            Finding::ByPath(simple, cap) => cap.explain(
                format!(
                    "{} matches no rule, and its program is a file given by a path (commands.programByPath)",
                    within(&display(simple), whole),
                ),
                decision,
                "commands.programByPath",
            ),
            Finding::Dynamic(part) => format!(
                "{} is dynamic ({}): commands.dynamic is {}",
                within(&part.what, whole),
                part.why,
                self.dynamic
            ),
            Finding::Network(part) => format!(
                "{} is network egress ({}): it gets commands.dynamic, which is {}",
                within(&part.what, whole),
                part.why,
                self.dynamic
            ),
            Finding::TaintedWrite(write) => format!(
                "{} writes \"{}\", and a tainted agent's writes are held",
                within(&write.by, whole),
                shown(&write.path)
            ),
        }
    }

    /// Whether `rule` matches some simple command of `command` (what the `match` examples
    /// check).
    pub(crate) fn rule_matches(rule: &CommandRule, command: &str) -> bool {
        analyse(command)
            .commands
            .iter()
            .any(|simple| rule.matches(&simple.words))
    }
}

impl CommandRule {
    /// Whether the rule matches a simple command's words (program basename first).
    pub fn matches(&self, words: &[String]) -> bool {
        self.matches_split(&Split::of(words))
    }

    fn matches_split(&self, split: &Split) -> bool {
        let mut position = 0;
        for token in &self.prefix {
            match token {
                Token::Word(alternatives) => {
                    let Some(word) = split.words.get(position) else {
                        return false;
                    };
                    if !alternatives.iter().any(|a| a == word) {
                        return false;
                    }
                    position += 1;
                }
                Token::Option(alternatives) => {
                    let found = split.options.iter().any(|option| {
                        alternatives
                            .iter()
                            .any(|token| option_matches(token, option))
                    });
                    if !found {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// The prefix as a reason shows it: `git [status|diff] --force`.
    pub(crate) fn prefix_shown(&self) -> String {
        PrefixShown(&self.prefix).to_string()
    }
}

/// One rule's or default's say about a command, formatted into a reason only if it wins.
enum Finding<'a> {
    Rule(&'a SimpleCommand, &'a CommandRule, Cap<'a>),
    Unmatched(&'a SimpleCommand, Cap<'a>),
    /// A program given by a path that no rule matches, decided by `programByPath`.
    ByPath(&'a SimpleCommand, Cap<'a>),
    Dynamic(&'a DynamicPart),
    /// A redirection to bash's `/dev/tcp` or `/dev/udp`: network egress, whatever the program.
    Network(&'a DynamicPart),
    TaintedWrite(&'a WrittenPath),
}

/// Programs that only read the files their words name, with no option that writes a file, runs
/// a program or changes folder: what find runs them on (`{}`) keeps their allow. Not here:
/// `sort` (`-o`), `rg` (`--pre` runs a program), `file` (`-C` writes), `tee`, `jq`, and every
/// program a rule does not allow anyway.
const FOUND_PATH_READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "wc",
    "ls",
    "stat",
    "du",
    "grep",
    "egrep",
    "fgrep",
    "diff",
    "cmp",
    "nl",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "md5sum",
    "sha1sum",
    "sha256sum",
];

/// Why an allow counts as hold, or why `whenConfined` decides.
enum Cap<'a> {
    None,
    Tainted,
    Caveat(&'a Caveat),
    /// The call runs under the sandbox, and the rule says `whenConfined`: that decides.
    Confined,
}

impl<'a> Cap<'a> {
    fn of(decision: Decision, caveat: Option<&'a Caveat>, tainted: bool) -> Cap<'a> {
        if decision != Decision::Allow {
            Cap::None
        } else if tainted {
            Cap::Tainted
        } else if let Some(caveat) = caveat {
            Cap::Caveat(caveat)
        } else {
            Cap::None
        }
    }

    fn decision(&self, decision: Decision) -> Decision {
        match self {
            Cap::None | Cap::Confined => decision,
            Cap::Tainted | Cap::Caveat(_) => Decision::Hold,
        }
    }

    fn explain(&self, stated: String, decision: Decision, what: &str) -> String {
        match self {
            Cap::None => format!("{stated}: {decision}"),
            Cap::Tainted if what == "the rule" => format!(
                "{stated}, which allows it, but the agent is tainted and the rule does not say \"whenTainted\": \"allow\": hold"
            ),
            Cap::Tainted => format!(
                "{stated}, which allows it, but the agent is tainted, and for it an allow counts as hold: hold"
            ),
            Cap::Caveat(caveat) => {
                format!("{stated}, which allows it, but {}: hold", caveat.describe())
            }
            Cap::Confined => format!(
                "{stated}, and the call runs in the sandbox, for which {what} says \"whenConfined\": {decision}"
            ),
        }
    }
}

/// A simple command as a reason shows it.
fn display(simple: &SimpleCommand) -> String {
    if simple.words.is_empty() {
        return "a variable assignment".to_owned();
    }
    simple
        .words
        .iter()
        .map(|w| quote_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A simple command's words split into options and the other words (program first).
struct Split<'w> {
    words: Vec<&'w str>,
    options: Vec<&'w str>,
}

impl<'w> Split<'w> {
    fn of(words: &'w [String]) -> Split<'w> {
        let mut split = Split {
            words: Vec::with_capacity(words.len()),
            options: Vec::new(),
        };
        let mut ended = false;
        for (index, word) in words.iter().enumerate() {
            let word = word.as_str();
            if index > 0 && !ended && word.starts_with('-') && word.len() > 1 {
                ended = word == "--";
                split.options.push(word);
            } else {
                split.words.push(word);
            }
        }
        split
    }
}

/// Whether a command's option word satisfies an option token.
fn option_matches(token: &str, option: &str) -> bool {
    if let Some(name) = token.strip_prefix("--") {
        if name.is_empty() {
            return option == "--";
        }
        let Some(given) = option.strip_prefix("--") else {
            return false;
        };
        let given = given.split_once('=').map_or(given, |(name, _)| name);
        return !given.is_empty() && name.starts_with(given);
    }
    let letters = &token[1..];
    let mut chars = letters.chars();
    match (chars.next(), chars.next()) {
        (Some(letter), None) => {
            option == token
                || (!option.starts_with("--") && {
                    // As getopt reads a bundle: each letter is an option until one takes a
                    // value, which is the rest of the word (`-sf-`, `-Bf./x`, `-uo FILE`,
                    // `-cCODE`). The letter counts wherever every letter before it could be
                    // an option; what follows it may be its value.
                    let mut bundle = option[1..].chars();
                    loop {
                        match bundle.next() {
                            Some(c) if c == letter => break true,
                            Some(c) if c.is_ascii_alphanumeric() => continue,
                            _ => break false,
                        }
                    }
                })
        }
        // A single-dash long option takes its value after `=` too (`-toolexec=x`), and Go's
        // flags take it with two dashes as well (`--toolexec=x`).
        _ => {
            let option = option
                .strip_prefix('-')
                .filter(|o| o.starts_with(token))
                .unwrap_or(option);
            option == token
                || option
                    .strip_prefix(token)
                    .is_some_and(|rest| rest.starts_with('='))
        }
    }
}

struct PrefixShown<'p>(&'p [Token]);

impl fmt::Display for PrefixShown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        for (index, token) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(" ")?;
            }
            let (Token::Word(alternatives) | Token::Option(alternatives)) = token;
            // A long list of alternatives is cut: the rule's index names it whole.
            let mut shown: Vec<String> =
                alternatives.iter().take(6).map(|a| quote_word(a)).collect();
            if alternatives.len() > 6 {
                shown.push(format!("… {} in all", alternatives.len()));
            }
            if shown.len() == 1 {
                f.write_str(&shown[0])?;
            } else {
                write!(f, "[{}]", shown.join("|"))?;
            }
        }
        Ok(())
    }
}

/// `part (in "whole")`, or `part` alone when it is the whole command.
fn within(part: &str, whole: &str) -> String {
    let part = shown(part);
    if part == whole {
        part
    } else {
        format!("{part} (in \"{whole}\")")
    }
}

/// The examples of a rule, checked once it is built.
struct Examples<'v> {
    matching: Vec<&'v str>,
    not_matching: Vec<&'v str>,
}

/// The rule at `index`; its errors name their place from the rule down (`.prefix[1]`), for the
/// caller to put under `commands.rules[INDEX]` (paths are made only when reading fails).
fn rule<'v>(index: usize, value: &'v Value) -> Result<(CommandRule, Examples<'v>), CommandsError> {
    let object: &Map<String, Value> = keys::object("", value, RULE_KEYS)?;
    let prefix = match object.get("prefix") {
        Some(prefix) => parse_prefix(".prefix", prefix)?,
        None => return Err(CommandProblem::Missing("prefix").at("")),
    };
    let when_confined = object
        .get("whenConfined")
        .map(|v| keys::decision(".whenConfined", v))
        .transpose()?;
    let decision = match (object.get("decision"), when_confined) {
        (Some(decision), _) => keys::decision(".decision", decision)?,
        (None, Some(when_confined)) => when_confined,
        (None, None) => return Err(CommandProblem::Missing("decision").at("")),
    };
    let confined_only = !object.contains_key("decision");
    let when_tainted = match object.get("whenTainted").map(Value::as_str) {
        None => WhenTainted::Hold,
        Some(Some("hold")) => WhenTainted::Hold,
        Some(Some("allow")) => WhenTainted::Allow,
        Some(_) => {
            let found = object["whenTainted"].to_string();
            return Err(CommandProblem::WhenTainted(found).at(".whenTainted"));
        }
    };
    let examples = |name: &str, key: &str| -> Result<Vec<&'v str>, KeyError> {
        object
            .get(name)
            .map_or(Ok(Vec::new()), |v| keys::strings(key, v))
    };
    Ok((
        CommandRule {
            index,
            prefix,
            decision,
            when_tainted,
            when_confined,
            confined_only,
        },
        Examples {
            matching: examples("match", ".match")?,
            not_matching: examples("notMatch", ".notMatch")?,
        },
    ))
}

/// The `outputOptions` key: `{"PROGRAM": ["--option", "-o", …], …}`.
fn output_options(
    key: &str,
    value: &Value,
) -> Result<std::collections::HashMap<String, Vec<String>>, CommandsError> {
    let Value::Object(object) = value else {
        return Err(wrong_type("an object of programs", value).at(key).into());
    };
    let mut out = std::collections::HashMap::new();
    for (program, list) in object {
        let item_key = format!("{key}.{program}");
        if program.is_empty() {
            return Err(CommandProblem::EmptyToken.at(item_key));
        }
        if program.contains('/') {
            return Err(CommandProblem::ProgramPath(program.clone()).at(item_key));
        }
        let options = keys::strings(&item_key, list)?;
        for (index, option) in options.iter().enumerate() {
            let name = option.trim_start_matches('-');
            if !option.starts_with('-') || name.is_empty() || option.starts_with("---") {
                let problem = CommandProblem::NotAnOption((*option).to_owned());
                return Err(problem.at(format!("{item_key}[{index}]")));
            }
        }
        out.insert(
            program.clone(),
            options.into_iter().map(str::to_owned).collect(),
        );
    }
    Ok(out)
}

/// The values an option token takes in a simple command's words (program first), in every
/// spelling its parser accepts: `--name VALUE`, `--name=VALUE` and any abbreviation of
/// `--name`; `-x VALUE`, `-xVALUE` and `-x` at the end of a bundle (`-vxVALUE`); `-name
/// VALUE`, `-name=VALUE`, `--name VALUE` and `--name=VALUE` for a single-dash long one (Go's
/// flags). Nothing after `--`.
pub(crate) fn option_values<'w>(token: &str, words: &'w [String]) -> Vec<&'w str> {
    let mut values = Vec::new();
    let mut index = 1;
    while index < words.len() {
        let word = words[index].as_str();
        index += 1;
        if word == "--" {
            break;
        }
        let next = words.get(index).map(String::as_str);
        if let Some(name) = token.strip_prefix("--") {
            let Some(given) = word.strip_prefix("--") else {
                continue;
            };
            let (given, value) = match given.split_once('=') {
                Some((given, value)) => (given, Some(value)),
                None => (given, None),
            };
            if given.is_empty() || !name.starts_with(given) {
                continue;
            }
            values.extend(value.or(next));
            continue;
        }
        let letters = &token[1..];
        if letters.chars().count() == 1 {
            if word.starts_with("--") || !word.starts_with('-') {
                continue;
            }
            let letter = letters.chars().next().unwrap_or('-');
            for (at, c) in word[1..].char_indices() {
                if c == letter {
                    let rest = &word[1 + at + c.len_utf8()..];
                    if rest.is_empty() {
                        values.extend(next);
                    } else {
                        values.push(rest);
                        // Go reads `-o=x` as `x`; getopt as `=x`: both.
                        values.extend(rest.strip_prefix('='));
                    }
                    break;
                }
                if !c.is_ascii_alphanumeric() {
                    break;
                }
            }
            continue;
        }
        let word = word
            .strip_prefix('-')
            .filter(|w| w.starts_with(token))
            .unwrap_or(word);
        if word == token {
            values.extend(next);
        } else if let Some(value) = word.strip_prefix(token).and_then(|r| r.strip_prefix('=')) {
            values.push(value);
        }
    }
    values
}

impl CommandRules {
    /// The files the `outputOptions` of each simple command's program name, added to the
    /// analysis's writes: each value as a file, and as a folder the program writes in (`DIR/…`).
    /// A value from a word the rules cannot read as written (an expansion, a glob) is dynamic.
    pub(crate) fn add_option_writes(&self, analysis: &mut Analysis) {
        if self.output_options.is_empty() && self.run_options.is_empty() {
            return;
        }
        let placeable = !analysis.changes_directory;
        let mut writes = Vec::new();
        let mut dynamic = Vec::new();
        let kinds = [
            (&self.output_options, "names a file it writes"),
            (
                &self.run_options,
                "names a file or folder it runs code from",
            ),
        ];
        for (simple, (map, names)) in analysis
            .commands
            .iter()
            .flat_map(|simple| kinds.iter().map(move |kind| (simple, *kind)))
        {
            let Some(options) = simple.words.first().and_then(|program| map.get(program)) else {
                continue;
            };
            let unfixed = simple
                .caveats
                .iter()
                .any(|c| matches!(c, Caveat::ExpandedArgument(_)));
            for token in options {
                for value in option_values(token, &simple.words) {
                    let by = display(simple);
                    let globbed = simple
                        .words
                        .iter()
                        .zip(&simple.globbed)
                        .any(|(word, globbed)| *globbed && word.contains(value));
                    if unfixed || globbed {
                        dynamic.push(DynamicPart {
                            what: by,
                            why: format!(
                                "its {token} {names}, and an argument is an expansion or a glob"
                            ),
                        });
                        continue;
                    }
                    if value.is_empty() {
                        continue;
                    }
                    let folder = format!("{}/…", value.trim_end_matches('/'));
                    for path in [value.to_owned(), folder] {
                        writes.push(WrittenPath {
                            path,
                            by: if std::ptr::eq(map, &self.run_options) {
                                format!("{by} ({token}, which {names})")
                            } else {
                                format!("{by} ({token})")
                            },
                            placeable,
                            expands: false,
                        });
                    }
                }
            }
        }
        for part in dynamic {
            if !analysis.dynamic.contains(&part) {
                analysis.dynamic.push(part);
            }
        }
        analysis.writes.extend(writes);
    }
}

/// The `programByPath` key: `{"decision": …, "whenConfined": …}`.
fn by_path_rule(key: &str, value: &Value) -> Result<ByPath, CommandsError> {
    let object = keys::object(key, value, BY_PATH_KEYS)?;
    let decision = match object.get("decision") {
        Some(decision) => keys::decision(&format!("{key}.decision"), decision)?,
        None => return Err(CommandProblem::Missing("decision").at(key)),
    };
    let when_confined = object
        .get("whenConfined")
        .map(|v| keys::decision(&format!("{key}.whenConfined"), v))
        .transpose()?;
    Ok(ByPath {
        decision,
        when_confined,
    })
}

/// A rule's `prefix`, at the key path `key` (an item's path is made only when it is wrong).
fn parse_prefix(key: &str, value: &Value) -> Result<Vec<Token>, CommandsError> {
    let Value::Array(items) = value else {
        return Err(wrong_type("an array of tokens", value).at(key).into());
    };
    if items.is_empty() {
        return Err(CommandProblem::EmptyPrefix.at(key));
    }
    let mut tokens = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let item_key = || format!("{key}[{index}]");
        let alternatives: Vec<String> = match item {
            Value::String(text) => vec![text.clone()],
            Value::Array(list) if !list.is_empty() => keys::strings(&item_key(), item)?
                .into_iter()
                .map(str::to_owned)
                .collect(),
            Value::Array(_) => return Err(CommandProblem::NoAlternatives.at(item_key())),
            other => {
                let expected = "a string or a list of alternatives";
                return Err(wrong_type(expected, other).at(item_key()).into());
            }
        };
        let is_option = |text: &str| text.starts_with('-') && text.len() > 1;
        if let Some(empty) = alternatives.iter().position(String::is_empty) {
            let _ = empty;
            return Err(CommandProblem::EmptyToken.at(item_key()));
        }
        let options = alternatives.iter().filter(|a| is_option(a)).count();
        let token = if options == alternatives.len() {
            Token::Option(alternatives)
        } else if options == 0 {
            Token::Word(alternatives)
        } else {
            return Err(CommandProblem::MixedToken.at(item_key()));
        };
        if index == 0 {
            let Token::Word(programs) = &token else {
                return Err(CommandProblem::OptionFirst.at(item_key()));
            };
            if let Some(path) = programs.iter().find(|p| p.contains('/')) {
                return Err(CommandProblem::ProgramPath(path.clone()).at(item_key()));
            }
        }
        tokens.push(token);
    }
    Ok(tokens)
}

fn check_examples(key: &str, rule: &CommandRule, examples: &Examples) -> Result<(), CommandsError> {
    let simple_commands = |example: &str| {
        let analysis = analyse(example);
        let shown: Vec<String> = analysis
            .commands
            .iter()
            .map(|c| {
                c.words
                    .iter()
                    .map(|w| quote_word(w))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        if shown.is_empty() {
            "none".to_owned()
        } else {
            shown.join("; ")
        }
    };
    for (index, example) in examples.matching.iter().enumerate() {
        if !CommandRules::rule_matches(rule, example) {
            let problem = CommandProblem::ExampleMissed {
                example: (*example).to_owned(),
                prefix: rule.prefix_shown(),
                commands: simple_commands(example),
            };
            return Err(problem.at(format!("{key}.match[{index}]")));
        }
    }
    for (index, example) in examples.not_matching.iter().enumerate() {
        if CommandRules::rule_matches(rule, example) {
            let problem = CommandProblem::ExampleMatched {
                example: (*example).to_owned(),
                prefix: rule.prefix_shown(),
                commands: simple_commands(example),
            };
            return Err(problem.at(format!("{key}.notMatch[{index}]")));
        }
    }
    Ok(())
}

/// The `operandWrites` key: program → the decision for an operand that is the root itself (or
/// a folder above it).
pub(crate) fn operand_writes(
    key: &str,
    value: &Value,
) -> Result<std::collections::HashMap<String, Decision>, CommandsError> {
    let Value::Object(object) = value else {
        return Err(wrong_type("an object of programs", value).at(key).into());
    };
    let mut out = std::collections::HashMap::new();
    for (program, decision) in object {
        let item_key = format!("{key}.{program}");
        if program.is_empty() {
            return Err(CommandProblem::EmptyToken.at(item_key));
        }
        if program.contains('/') {
            return Err(CommandProblem::ProgramPath(program.clone()).at(item_key));
        }
        out.insert(program.clone(), keys::decision(&item_key, decision)?);
    }
    Ok(out)
}

impl CommandRules {
    /// The operands of each simple command `operandWrites` names, added to the analysis's
    /// writes ([`super::operands::OperandWrites::add_to`]).
    pub(crate) fn add_operand_writes(
        &self,
        analysis: &mut super::shell::Analysis,
    ) -> Vec<super::operands::RootOperand> {
        self.operand_writes.add_to(analysis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issue_rules() -> CommandRules {
        CommandRules::from_json(
            "commands",
            &json!({
              "tools": {"Bash": "command"},
              "rules": [
                {"prefix": ["git", ["status", "diff", "log", "show"]], "decision": "allow", "whenTainted": "allow",
                 "match": ["git status", "git log --oneline -5"], "notMatch": ["git push"]},
                {"prefix": ["cargo", ["test", "build"]], "decision": "allow", "whenTainted": "allow"},
                {"prefix": ["git", "push"], "decision": "hold"},
                {"prefix": ["rm"], "decision": "hold"},
                {"prefix": ["rm", "-r", "-f"], "decision": "deny"}
              ],
              "unmatched": "hold",
              "dynamic": "hold"
            }),
        )
        .unwrap()
    }

    #[test]
    fn the_issue_example_gives_the_issue_reason() {
        let judgement = issue_rules().decide("cargo build && rm -rf build", false);
        assert_eq!(judgement.decision, Decision::Deny);
        assert_eq!(
            judgement.reasons,
            [
                r#"rm -rf build (in "cargo build && rm -rf build") matches commands.rules[4] (prefix rm -r -f): deny"#
            ]
        );
    }

    #[test]
    fn options_match_in_bundles_in_any_order() {
        let rules = issue_rules();
        for command in [
            "rm -rf x",
            "rm -fr x",
            "rm -r -f x",
            "rm x -r -f",
            "rm -vfr x",
        ] {
            assert_eq!(
                rules.decide(command, false).decision,
                Decision::Deny,
                "{command}"
            );
        }
        for command in ["rm -r x", "rm -- -rf", "rm x"] {
            assert_eq!(
                rules.decide(command, false).decision,
                Decision::Hold,
                "{command}"
            );
        }
        assert!(option_matches("--force", "--force"));
        assert!(option_matches("--force", "--force=yes"));
        assert!(option_matches("--force", "--for"));
        assert!(!option_matches("--force", "--forced"));
        assert!(!option_matches("--force", "--"));
        assert!(option_matches("-delete", "-delete"));
        assert!(!option_matches("-delete", "-deleted"));
        assert!(!option_matches("-r", "--recursive"));
        // A value attached to a short option, as getopt takes it, and after `=` on a
        // single-dash long one (review findings: `python3 -c'code' pytest -m`, `go build
        // -toolexec=x`).
        assert!(option_matches("-c", "-cimport os; os.system('id')"));
        assert!(option_matches("-c", "-ccore.pager=sh"));
        assert!(option_matches("-toolexec", "-toolexec=sh -c id"));
        assert!(!option_matches("-toolexec", "-toolexecx"));
        assert!(!option_matches("-c", "--config"));
        // After letters that could be options, whatever follows (review findings: `make
        // -sf-`, `sort -uo/home/me/.bashrc`, `git grep -iO'cmd'`); not past a value.
        assert!(option_matches("-f", "-sf-"));
        assert!(option_matches("-f", "-Bf./evil.mk"));
        assert!(option_matches("-o", "-uo/home/me/.bashrc"));
        assert!(option_matches("-O", "-iO'echo x'"));
        assert!(!option_matches("-f", "-x./f"));
        assert!(!option_matches("-r", "-"));
    }

    #[test]
    fn words_match_from_the_program_on() {
        let rules = issue_rules();
        assert_eq!(
            rules.decide("git status -s", false).decision,
            Decision::Allow
        );
        assert_eq!(
            rules.decide("git -c x=y status", false).decision,
            Decision::Hold
        );
        assert_eq!(
            rules.decide("/usr/bin/git status", false).decision,
            Decision::Allow
        );
    }

    #[test]
    fn taint_holds_an_allow_unless_the_rule_says_otherwise() {
        let rules = CommandRules::from_json(
            "commands",
            &json!({"rules": [
                {"prefix": ["ls"], "decision": "allow"},
                {"prefix": ["pwd"], "decision": "allow", "whenTainted": "allow"}
            ]}),
        )
        .unwrap();
        assert_eq!(rules.decide("ls", false).decision, Decision::Allow);
        let held = rules.decide("ls", true);
        assert_eq!(held.decision, Decision::Hold);
        assert!(held.reasons[0].contains("tainted"), "{held:?}");
        assert_eq!(rules.decide("pwd", true).decision, Decision::Allow);
        assert_eq!(rules.decide("pwd > out.txt", true).decision, Decision::Hold);
        assert_eq!(
            rules.decide("pwd > out.txt", false).decision,
            Decision::Allow
        );
    }

    #[test]
    fn unmatched_and_dynamic_have_their_reasons() {
        let rules = issue_rules();
        let judgement = rules.decide("make && echo $(curl x)", false);
        assert_eq!(judgement.decision, Decision::Hold);
        assert!(
            judgement.reasons.iter().any(|r| r.starts_with(
                "make (in \"make && echo $(curl x)\") matches no rule: commands.unmatched is hold"
            )),
            "{judgement:?}"
        );
        assert!(
            judgement.reasons.iter().any(
                |r| r.contains("is dynamic (a command substitution): commands.dynamic is hold")
            ),
            "{judgement:?}"
        );
        assert_eq!(rules.decide("", false).decision, Decision::Allow);
    }

    #[test]
    fn calls_check_their_command_argument() {
        let rules = issue_rules();
        let args = |v: Value| v.as_object().unwrap().clone();
        let context = crate::rules::paths::PathContext::default();
        assert!(rules
            .decide_call(
                "Read",
                &args(json!({"command": "ls"})),
                false,
                false,
                None,
                context
            )
            .is_none());
        for bad in [json!({}), json!({"command": 7}), json!({"command": "ls\0"})] {
            let judged = rules
                .decide_call("Bash", &args(bad.clone()), false, false, None, context)
                .unwrap();
            assert_eq!(judged.decision, Decision::Deny, "{bad}");
            assert!(
                judged.reasons[0].starts_with("malformed call: "),
                "{judged:?}"
            );
        }
        let judged = rules
            .decide_call(
                "Bash",
                &args(json!({"command": "git status"})),
                false,
                false,
                None,
                context,
            )
            .unwrap();
        assert_eq!(judged.decision, Decision::Allow);
    }

    #[test]
    fn when_confined_and_program_by_path_are_read_strictly_and_decide_confined_calls() {
        let err = |value: Value| CommandRules::from_json("commands", &value).unwrap_err();
        let e = err(
            json!({"rules": [{"prefix": ["python3"], "decision": "hold", "whenConfined": "yes"}]}),
        );
        assert_eq!(e.key, "commands.rules[0].whenConfined");
        assert_eq!(
            e.problem,
            CommandProblem::Key(Problem::NotADecision("\"yes\"".to_owned()))
        );
        let e = err(json!({"programByPath": {"decision": "hold", "whenConfned": "allow"}}));
        assert_eq!(e.key, "commands.programByPath");
        assert_eq!(e.problem.suggestion(), Some("whenConfined"));
        let e = err(json!({"programByPath": {"whenConfined": "allow"}}));
        assert_eq!(e.problem, CommandProblem::Missing("decision"));
        let e = err(json!({"programByPath": "allow"}));
        assert_eq!(e.key, "commands.programByPath");
        let rules = CommandRules::from_json(
            "commands",
            &json!({"rules": [
                {"prefix": ["python3"], "decision": "hold", "whenConfined": "allow"},
                {"prefix": ["rm"], "decision": "hold", "whenConfined": "deny"},
                {"prefix": ["ls"], "decision": "allow"}
              ],
              "programByPath": {"decision": "hold", "whenConfined": "allow"}}),
        )
        .unwrap();
        assert_eq!(
            rules.program_by_path(),
            Some(ByPath {
                decision: Decision::Hold,
                when_confined: Some(Decision::Allow)
            })
        );
        assert_eq!(rules.rules()[0].when_confined, Some(Decision::Allow));
        assert_eq!(rules.rules()[2].when_confined, None);
        for (command, plain, confined) in [
            ("python3 x.py", Decision::Hold, Decision::Allow),
            ("rm x", Decision::Hold, Decision::Deny),
            ("./build.sh", Decision::Hold, Decision::Allow),
            // A program by path that a rule names is decided by that rule, capped as before.
            ("./ls", Decision::Hold, Decision::Hold),
            ("./build.sh; curl x", Decision::Hold, Decision::Hold),
        ] {
            assert_eq!(rules.decide(command, true).decision, plain, "{command}");
            let judged = rules.decide_confined(command, true, true);
            assert_eq!(judged.decision, confined, "{command}: {judged:?}");
        }
        let judged = rules.decide_confined("./build.sh", true, true);
        assert_eq!(
            judged.reasons,
            ["build.sh (in \"./build.sh\") matches no rule, and its program is a file given by a path (commands.programByPath), and the call runs in the sandbox, for which commands.programByPath says \"whenConfined\": allow"]
        );
        // A rule with `whenConfined` and no `decision` is there for confined calls only.
        let only = CommandRules::from_json(
            "commands",
            &json!({"rules": [{"prefix": ["python3"], "whenConfined": "allow"}], "unmatched": "hold"}),
        )
        .unwrap();
        assert!(only.rules()[0].confined_only);
        let judged = only.decide("python3 x.py", false);
        assert!(judged.reasons[0].contains("matches no rule"), "{judged:?}");
        assert_eq!(
            only.decide_confined("python3 x.py", true, true).decision,
            Decision::Allow
        );
        let e = err(json!({"rules": [{"prefix": ["python3"]}]}));
        assert_eq!(e.problem, CommandProblem::Missing("decision"));
        // Without `programByPath`, such a program is unmatched.
        let plain = CommandRules::from_json("commands", &json!({"unmatched": "deny"})).unwrap();
        assert_eq!(
            plain.decide_confined("./x", true, true).decision,
            Decision::Deny
        );
    }

    #[test]
    fn output_options_are_read_in_every_spelling_and_checked_at_load() {
        let words = |text: &str| -> Vec<String> { text.split(' ').map(str::to_owned).collect() };
        let cases: &[(&str, &str, &[&str])] = &[
            ("--target-dir", "cargo build --target-dir x", &["x"]),
            ("--target-dir", "cargo build --target-dir=x", &["x"]),
            ("--target-dir", "cargo build --target=x", &["x"]),
            ("--target-dir", "cargo build --targets x", &[]),
            ("-o", "sort -o x y", &["x"]),
            ("-o", "sort -uox y", &["x"]),
            ("-o", "go build -o=x .", &["=x", "x"]),
            ("-o", "sort -u -- -o x", &[]),
            ("-coverprofile", "go test -coverprofile x", &["x"]),
            ("-coverprofile", "go test -coverprofile=x", &["x"]),
            ("-coverprofile", "go test --coverprofile=x", &["x"]),
            ("-coverprofile", "go test -coverprofilex", &[]),
        ];
        for (token, command, expected) in cases {
            assert_eq!(
                option_values(token, &words(command)),
                *expected,
                "{token} in {command}"
            );
        }
        let err = |value: Value| CommandRules::from_json("commands", &value).unwrap_err();
        let e = err(json!({"outputOptions": {"sort": ["o"]}}));
        assert_eq!(e.key, "commands.outputOptions.sort[0]");
        assert_eq!(e.problem, CommandProblem::NotAnOption("o".to_owned()));
        let e = err(json!({"outputOptions": {"/bin/sort": ["-o"]}}));
        assert_eq!(
            e.problem,
            CommandProblem::ProgramPath("/bin/sort".to_owned())
        );
        let e = err(json!({"outputOptions": ["-o"]}));
        assert_eq!(e.key, "commands.outputOptions");
        // Go's flags with two dashes match a single-dash rule token.
        assert!(option_matches("-toolexec", "--toolexec=x"));
        assert!(option_matches("-toolexec", "--toolexec"));
        assert!(!option_matches("-toolexec", "--toolexecx"));
    }

    #[test]
    fn load_errors_name_the_rule_and_the_example() {
        let err = |value: Value| {
            CommandRules::from_json("commands", &value)
                .unwrap_err()
                .to_string()
        };
        let e = err(
            json!({"rules": [{"prefix": ["git", "status"], "decision": "allow", "match": ["git -c a=b status"]}]}),
        );
        assert!(e.starts_with("key `commands.rules[0].match[0]`: the example \"git -c a=b status\" does not match"), "{e}");
        let e = err(
            json!({"rules": [{"prefix": ["git"], "decision": "allow", "notMatch": ["ls; git push"]}]}),
        );
        assert!(
            e.starts_with(
                "key `commands.rules[0].notMatch[0]`: the example \"ls; git push\" matches"
            ),
            "{e}"
        );
        let e = err(json!({"rules": [{"prefix": [], "decision": "allow"}]}));
        assert!(e.contains("commands.rules[0].prefix`: is empty"), "{e}");
        let typed = CommandRules::from_json("commands", &json!({"rules": [{"prefix": []}]}));
        let typed = typed.unwrap_err();
        assert_eq!(typed.key, "commands.rules[0].prefix");
        assert_eq!(typed.problem, CommandProblem::EmptyPrefix);
        let e = err(json!({"rules": [{"prefix": ["ls"], "decision": "permit"}]}));
        assert!(
            e.contains("commands.rules[0].decision`: expected \"allow\", \"hold\" or \"deny\""),
            "{e}"
        );
        // The key paths are made only when reading fails; deep ones are whole.
        let ok = json!({"prefix": ["ls"], "decision": "allow"});
        let typed = CommandRules::from_json(
            "commands",
            &json!({"rules": [ok, {"prefix": ["git", ["push", 7]], "decision": "allow"}]}),
        );
        assert_eq!(typed.unwrap_err().key, "commands.rules[1].prefix[1][1]");
        let typed = CommandRules::from_json(
            "commands",
            &json!({"rules": [ok, ok, {"prefix": ["git", ["-a", "b"]], "decision": "allow"}]}),
        );
        let typed = typed.unwrap_err();
        assert_eq!(typed.key, "commands.rules[2].prefix[1]");
        assert_eq!(typed.problem, CommandProblem::MixedToken);
        let typed = CommandRules::from_json(
            "commands",
            &json!({"rules": [ok, {"prefix": ["ls"], "decision": "allow", "match": ["ls", 3]}]}),
        );
        assert_eq!(typed.unwrap_err().key, "commands.rules[1].match[1]");
        let typed = CommandRules::from_json(
            "commands",
            &json!({"rules": [ok, {"prefix": ["ls"], "whenConfined": "yes"}]}),
        );
        assert_eq!(typed.unwrap_err().key, "commands.rules[1].whenConfined");
        let typed = CommandRules::from_json("commands", &json!({"rules": [ok, 5]}));
        assert_eq!(typed.unwrap_err().key, "commands.rules[1]");
        let e = err(json!({"rules": [{"prefix": ["ls"], "decison": "allow"}]}));
        assert!(
            e.contains("unknown key `decison`; did you mean `decision`?"),
            "{e}"
        );
        let e = err(json!({"unmached": "hold"}));
        assert!(e.contains("did you mean `unmatched`?"), "{e}");
        let typed = CommandRules::from_json("commands", &json!({"unmached": "hold"}));
        assert_eq!(typed.unwrap_err().problem.suggestion(), Some("unmatched"));
        let e = err(json!({"dynamic": "allow"}));
        assert!(e.contains("commands.dynamic"), "{e}");
        let e = err(json!({"rules": [{"prefix": ["-r"], "decision": "deny"}]}));
        assert!(e.contains("starts with the program"), "{e}");
        let e = err(json!({"rules": [{"prefix": ["/bin/rm"], "decision": "deny"}]}));
        assert!(e.contains("basename"), "{e}");
        let e = err(json!({"rules": [{"prefix": ["rm", ["-r", "x"]], "decision": "deny"}]}));
        assert!(e.contains("mix options and words"), "{e}");
        let e =
            err(json!({"rules": [{"prefix": ["rm"], "decision": "deny", "whenTainted": "deny"}]}));
        assert!(e.contains("whenTainted"), "{e}");
    }
}
