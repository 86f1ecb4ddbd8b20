//! A shell command's arguments read as paths: every place in a word a path may start, judged
//! by the read rules.

use super::judge::strongest;
use super::pattern::has_wildcard;
use super::place::Placed;
use super::{PathJudgement, PathRules};
use crate::rules::keys::shown;
use crate::verdict::Decision;

impl PathRules {
    /// The read rules applied to a simple command's arguments, as paths: `cat .env` reads
    /// `.env` as surely as `Read` does. Only rules with `read` count here; writes and the root
    /// are for the files a command writes ([`PathRules::decide_written`]). `None` when no
    /// argument matches. `placeable` is false when the command changes directory.
    /// `by` (the command as a reason shows it) is written only for an argument that matches.
    ///
    /// Which words are paths depends on the program, which is not known here, so every place a
    /// path may start is judged ([`argument_paths`]): each word after the program, up to its
    /// first NUL (bash hands the program a C string); the value of each `--option=value` and
    /// `-option=value`; and for a word of short options (`-f/home/me/.ssh/id_rsa`,
    /// `-xvf~/.ssh/k`), the value that may be attached to any of its letters, that is the word
    /// from each of its characters after the first letter on. After `--`, every word is an
    /// operand, whatever it starts with.
    pub fn decide_arguments(
        &self,
        words: &[String],
        by: &dyn Fn() -> String,
        placeable: bool,
        placed: &Placed,
    ) -> Option<PathJudgement> {
        self.decide_shell_arguments(words, &[], by, placeable, placed)
    }

    /// [`PathRules::decide_arguments`], knowing which words the shell expands as globs
    /// (`globbed[i]` for `words[i]`: an unquoted `*`, `?` or `[`): only in those does a wildcard
    /// stand for the names it may match; a quoted one (`find -name '*.rs'`) is a character of
    /// the path, as the program gets it. A word without a flag counts as globbed (fail closed).
    pub(crate) fn decide_shell_arguments(
        &self,
        words: &[String],
        globbed: &[bool],
        by: &dyn Fn() -> String,
        placeable: bool,
        placed: &Placed,
    ) -> Option<PathJudgement> {
        if !self.rules.iter().any(|rule| rule.read.is_some()) {
            return None;
        }
        let mut strongest: Option<PathJudgement> = None;
        let mut operands = false;
        // Reasons are kept to a few (as for commands); once that many name the strictest
        // decision a read can get, no later word can change the judgement.
        let strictest = self.rules.iter().filter_map(|rule| rule.read).max();
        for (index, word) in words.iter().enumerate().skip(1) {
            let expands = globbed.get(index).copied().unwrap_or(true);
            if strongest.as_ref().is_some_and(|best| {
                Some(best.decision) == strictest && best.reasons.len() >= MAX_PATH_REASONS
            }) {
                break;
            }
            // Bash passes each word as a C string: the program sees it up to its first NUL.
            let word = word.split('\0').next().unwrap_or_default();
            if !operands && word == "--" {
                operands = true;
                continue;
            }
            // A word of short options with a wildcard the shell expands (`-x*`, `-f.e?v`) may
            // attach any name to any of its letters: judging each place against every glob
            // costs too much for what no command needs, so it may name any file.
            let short = !operands && word.starts_with('-') && !word.starts_with("--");
            if expands && short && word.len() > 2 && has_wildcard(&word.as_bytes()[2..]) {
                let why = "is a word of short options with a wildcard the shell expands, so a value attached to any of its letters may name any file";
                let judged = self.judge_as_any(word, why, false, Some(&by()));
                if judged.decision > Decision::Allow {
                    match &mut strongest {
                        Some(best) if best.decision >= judged.decision => {}
                        _ => strongest = Some(judged),
                    }
                }
                continue;
            }
            let judged = match argument_paths(word, operands) {
                Ok(paths) => paths
                    .filter(|path| !path.is_empty())
                    .map(|path| self.judge_read(path, placeable, by, placed, expands))
                    .filter(|judged| judged.decision > Decision::Allow)
                    .reduce(|mut best, judged| {
                        if judged.decision > best.decision {
                            return judged;
                        }
                        if judged.decision == best.decision {
                            let room = MAX_PATH_REASONS.saturating_sub(best.reasons.len());
                            best.reasons.extend(judged.reasons.into_iter().take(room));
                        }
                        best
                    }),
                Err(TooManyPlaces) => Some(self.judge_unreadable_option(word, by)),
            };
            let Some(judged) = judged else { continue };
            match &mut strongest {
                Some(best) if best.decision > judged.decision => {}
                Some(best) if best.decision == judged.decision => {
                    for reason in judged.reasons {
                        if best.reasons.len() >= MAX_PATH_REASONS {
                            break;
                        }
                        if !best.reasons.contains(&reason) {
                            best.reasons.push(reason);
                        }
                    }
                }
                _ => strongest = Some(judged),
            }
        }
        strongest
    }

    /// A word of short options so long that the places a value attached to it may start are
    /// too many to judge each ([`argument_paths`]): it may name any file, so it gets the
    /// strictest `read` decision of every rule (fail closed, as for `~name`).
    fn judge_unreadable_option(&self, word: &str, by: &dyn Fn() -> String) -> PathJudgement {
        let findings = self
            .rules
            .iter()
            .filter_map(|rule| rule.read.map(|read| (read, rule)))
            .map(|(read, rule)| {
                (
                    read,
                    format!(
                        "read by {}: the option word \"{}…\" ({} bytes) may carry a path attached at more places than are judged one by one ({}), so it may name any file of {}: {read}",
                        shown(&by()),
                        shown(head(word, 32)),
                        word.len(),
                        MAX_ATTACHED_PLACES,
                        rule.label
                    ),
                )
            })
            .collect();
        strongest(findings, || {
            format!("read by {} matches no paths rule", shown(&by()))
        })
    }
}

/// How many places in a word of short options a value attached to one of its letters is
/// judged from, past the first 256: beyond that, each `/` and `~`, and each character after a
/// `/`, count too, and a word with more of them than this is not read ([`argument_paths`]).
const MAX_ATTACHED_PLACES: usize = 256;

/// At most this many reasons for the paths read by a command's arguments.
const MAX_PATH_REASONS: usize = 8;

/// A word of short options with more places a path may start than are judged one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TooManyPlaces;

/// The paths an argument may name (see [`PathRules::decide_arguments`]), without allocating:
/// the word itself; for an option (`-x…` or `--x…` before `--`), the value after its first
/// `=`; and for a word of short options, the word from each of its characters after the first
/// letter on (`-xvf~/.ssh/k` may be `-x -v -f ~/.ssh/k`, and a program may take a value
/// attached to any letter: `vf~/.ssh/k`, `f~/.ssh/k`, `~/.ssh/k`, `/.ssh/k`, …). For `-la`
/// that is `a`; for `-n20`, `20` and `0`: names that match nothing. A word of short options
/// with more than [`MAX_ATTACHED_PLACES`] places is an error (judged as naming any file: fail
/// closed, and the cost stays bounded).
fn argument_paths(word: &str, operand: bool) -> Result<impl Iterator<Item = &str>, TooManyPlaces> {
    let option = !operand && word.len() > 1 && word.starts_with('-');
    let value = option
        .then(|| word.split_once('=').map(|(_, value)| value))
        .flatten();
    let short = option && !word.starts_with("--");
    // A value may be attached to any letter, and a bare name attached far on (`-iii…f.env`)
    // is as much a path as one at the start: past this many places, judging each costs too
    // much for what no command needs, so the word may name any file.
    if short && word.len() > 2 + MAX_ATTACHED_PLACES {
        return Err(TooManyPlaces);
    }
    let attached = (2..word.len())
        .filter(move |&i| short && word.is_char_boundary(i))
        .map(move |i| &word[i..]);
    Ok(std::iter::once(word).chain(value).chain(attached))
}

/// The longest prefix of `text` of at most `max` bytes that ends at a character boundary.
fn head(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
#[path = "arguments_tests.rs"]
mod tests;
