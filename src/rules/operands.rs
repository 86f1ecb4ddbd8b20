//! `commands.operandWrites`: programs whose operands are files they write (`mv`, `cp`, `rm`,
//! `mkdir`, `touch`, a formatter that rewrites its files), so that each operand is a write
//! judged by the `paths` rules, as a redirection's file is; and the decision for an operand
//! that is the root itself (`rm -r .`).
//!
//! ```json
//! "operandWrites": {"rm": "hold", "mv": "hold", "cp": "allow", "mkdir": "allow", "git mv": "allow"}
//! ```
//!
//! A key `PROGRAM SUBCOMMAND` (`git mv`, `git restore`) names a subcommand: the first word after
//! the program that is not an option; its operands are the words after it.
//!
//! Which words are operands depends on each program's options, which are not modelled: every
//! word after the program that is not an option is a write, and so is every value an option
//! word may carry (`--target-directory=DIR`, `-tDIR`, `-vt/etc`: the word from each of its
//! characters after the first letter). Extra words (a mode, a date) are judged as files inside
//! the project, where they change nothing. Each write is judged as a file and as a folder the
//! program writes in (`DIR/…`), so `rm -r .claude` meets `.claude/**`.

use std::collections::HashMap;

use super::shell::{quote_word, Analysis, DynamicPart, TreeCopy, WrittenPath};
use crate::verdict::Decision;

/// An option word longer than this is not read for the paths it may carry: it is dynamic.
const MAX_OPTION_WORD: usize = 256;

/// An operand write that may name the root itself: the index of its write in the analysis and
/// the decision for the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RootOperand {
    pub write: usize,
    pub decision: Decision,
}

/// The `operandWrites` key, read: program (or `PROGRAM SUBCOMMAND`) → the decision for an
/// operand that is the root itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OperandWrites {
    pub(crate) programs: HashMap<String, Decision>,
}

impl OperandWrites {
    /// The operands of each simple command whose program `operandWrites` names, added to the
    /// analysis's writes (each as a file and as a folder it writes in); the ones to check
    /// against the root are returned.
    pub(crate) fn add_to(&self, analysis: &mut Analysis) -> Vec<RootOperand> {
        let mut roots = Vec::new();
        if self.programs.is_empty() {
            return roots;
        }
        let placeable = !analysis.changes_directory;
        let sole = analysis.commands.len() == 1;
        let mut writes = Vec::new();
        let mut dynamic = Vec::new();
        let mut trees = Vec::new();
        for simple in &analysis.commands {
            let Some((root, skip)) = self.operand_program(&simple.words) else {
                continue;
            };
            let by = simple
                .words
                .iter()
                .map(|w| quote_word(w))
                .collect::<Vec<_>>()
                .join(" ");
            let mut operands = false;
            // The plain operands, for where a copy or a move lands.
            let mut plain: Vec<(&str, bool)> = Vec::new();
            // `cp -T`: the one source's contents land in the destination itself.
            let mut no_target = false;
            // `cp -t DIR`, `--target-directory=DIR`: DIR is where every plain operand lands (a
            // review copied `tpl/.` onto the root as `cp -rt. tpl/.`, taken for the destination).
            let mut target: Option<&str> = None;
            // The option whose value the next word is (`-t DIR`, `-S SUFFIX`).
            let mut value_next: Option<OptionValue> = None;
            for (index, word) in simple.words.iter().enumerate().skip(skip) {
                let expands = simple.globbed.get(index).copied().unwrap_or(true);
                let mut candidates: Vec<&str> = Vec::new();
                if let Some(kind) = value_next.take() {
                    if kind == OptionValue::Target {
                        target = Some(word);
                    }
                    candidates.push(word);
                } else if operands || !word.starts_with('-') || word == "-" {
                    candidates.push(word);
                    plain.push((word, expands));
                } else if word == "--" {
                    operands = true;
                } else if let Some(long) = word.strip_prefix("--") {
                    let (name, value) = match long.split_once('=') {
                        Some((name, value)) => (name, Some(value)),
                        None => (long, None),
                    };
                    if let Some(value) = value {
                        candidates.push(value);
                    }
                    // getopt's unambiguous prefixes: `--t` is `--target-directory`, `--su`
                    // `--suffix`.
                    // And the other long options whose value is required, so may be the next
                    // word: `--sparse auto` (a third review had `auto` taken for where
                    // `cp -r tpl/. . --sparse auto` lands), `--no-preserve all`.
                    let takes = if !name.is_empty() && "target-directory".starts_with(name) {
                        Some(OptionValue::Target)
                    } else if (name.len() >= 2 && "suffix".starts_with(name))
                        || (name.len() >= 2 && "sparse".starts_with(name))
                        || (name.len() >= 4 && "no-preserve".starts_with(name))
                    {
                        Some(OptionValue::Other)
                    } else {
                        None
                    };
                    match (takes, value) {
                        (Some(OptionValue::Target), Some(value)) => target = Some(value),
                        (Some(kind), None) => value_next = Some(kind),
                        _ => {}
                    }
                    // getopt takes any unambiguous prefix: `--no-t` is `--no-target-directory`.
                    no_target |=
                        long.len() >= "no-t".len() && "no-target-directory".starts_with(long);
                } else if word.len() > MAX_OPTION_WORD {
                    dynamic.push(DynamicPart {
                        what: by.clone(),
                        why: format!(
                            "an option word longer than {MAX_OPTION_WORD} bytes may carry a file it writes"
                        ),
                    });
                } else {
                    // A `T` in a value (`-tT`) is taken for the option too: it only judges more.
                    no_target |= word.contains('T');
                    // `-t` and `-S` take the rest of the word, or the next word.
                    for (at, letter) in word.char_indices().skip(1) {
                        let kind = match letter {
                            't' => OptionValue::Target,
                            'S' => OptionValue::Other,
                            _ => continue,
                        };
                        let rest = &word[at + 1..];
                        match (kind, rest.is_empty()) {
                            (_, true) => value_next = Some(kind),
                            (OptionValue::Target, false) => target = Some(rest),
                            (OptionValue::Other, false) => {}
                        }
                        break;
                    }
                    // `-tDIR`, `-vt/etc`: any letter may take the rest of the word.
                    candidates.extend(
                        word.char_indices()
                            .skip(2)
                            .map(|(at, _)| &word[at..])
                            .filter(|rest| !rest.is_empty()),
                    );
                }
                for candidate in candidates {
                    let folder = format!("{}/…", candidate.trim_end_matches('/'));
                    roots.push(RootOperand {
                        write: writes.len(),
                        decision: *root,
                    });
                    for path in [candidate.to_owned(), folder] {
                        writes.push(WrittenPath {
                            path,
                            by: by.clone(),
                            placeable,
                            expands,
                        });
                    }
                }
            }
            // `cp SRC… DIR` and `mv SRC… DIR` write `DIR/NAME` for each source, which may be a
            // folder on the way to a protected place even where DIR (the root) is not: a review
            // copied `tpl/.github` into the project so.
            let program = simple
                .words
                .first()
                .map(|w| w.rsplit('/').next().unwrap_or(w));
            if matches!(program, Some("cp" | "mv")) {
                let landing = match target {
                    Some(dest) => Some((dest, &plain[..])),
                    None => plain
                        .split_last()
                        .map(|((dest, _), sources)| (*dest, sources)),
                };
                if let Some((dest, sources)) = landing {
                    // A copy of a folder's contents (`cp -r tpl/. .`, `cp -rT tpl .`) lands
                    // each of its files under the destination by a name only the tree holds:
                    // the paths rules judge them where the door can list the tree.
                    if program == Some("cp") {
                        trees.extend(
                            sources
                                .iter()
                                .filter(|(source, _)| no_target || copies_contents(source))
                                .map(|(source, _)| TreeCopy {
                                    from: (*source).to_owned(),
                                    onto: dest.to_owned(),
                                    by: by.clone(),
                                    placeable,
                                    // A copy of several sources may change a later one (a link
                                    // the first replaces) before it is read.
                                    sole: sole && sources.len() == 1,
                                }),
                        );
                    }
                    for (source, expands) in sources {
                        let name = source
                            .trim_end_matches('/')
                            .rsplit('/')
                            .next()
                            .unwrap_or("");
                        if matches!(name, "" | "." | "..") {
                            continue;
                        }
                        writes.push(WrittenPath {
                            path: format!("{}/{name}", dest.trim_end_matches('/')),
                            by: by.clone(),
                            placeable,
                            expands: *expands,
                        });
                    }
                }
            }
        }
        let offset = analysis.writes.len();
        for root in &mut roots {
            root.write += offset;
        }
        for part in dynamic {
            if !analysis.dynamic.contains(&part) {
                analysis.dynamic.push(part);
            }
        }
        analysis.writes.extend(writes);
        analysis.tree_copies.extend(trees);
        roots
    }

    /// The root decision of the program `words` run, and where its operands start: a key
    /// `PROGRAM SUBCOMMAND` (`git mv`) names the first word after the program that is not an
    /// option, and its operands follow it; a key `PROGRAM`, every word after the program.
    fn operand_program(&self, words: &[String]) -> Option<(&Decision, usize)> {
        let program = words.first()?;
        let subcommand = words
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, word)| !word.starts_with('-'));
        if let Some((at, name)) = subcommand {
            if let Some(root) = self.programs.get(&format!("{program} {name}")) {
                return Some((root, at + 1));
            }
        }
        self.programs.get(program).map(|root| (root, 1))
    }
}

/// Which option the next word is the value of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OptionValue {
    /// `-t`, `--target-directory`: where every source lands.
    Target,
    /// `-S`, `--suffix`: a value that names no file by itself.
    Other,
}

/// Whether a copy's source names a folder's contents rather than the folder: its last part is
/// `.` or `..` (`tpl/.`, `.`), or it is `/`, which give the copy no name of its own to land under.
fn copies_contents(source: &str) -> bool {
    let source = source.trim_end_matches('/');
    let last = source.rsplit('/').next().unwrap_or(source);
    source.is_empty() || matches!(last, "." | "..")
}

#[cfg(test)]
#[path = "operands_tests.rs"]
mod tests;
