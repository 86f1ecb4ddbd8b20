//! Wrappers' options, GNU style: what each wrapper takes, and where its program starts.

use super::words::Word;
use crate::rules::keys;

/// Where a wrapper's options end, and what they were.
pub(super) struct Options<'w> {
    found: Vec<(String, Option<&'w str>)>,
    pub(super) next: usize,
}

impl Options<'_> {
    pub(super) fn has(&self, name: &str) -> bool {
        self.found.iter().any(|(n, _)| n == name)
    }

    /// Every value given to any of `names`, in order (`time -o /dev/null -o FILE` writes the
    /// last; each is judged).
    pub(super) fn values<'s>(&'s self, names: &'s [&str]) -> impl Iterator<Item = &'s str> + 's {
        self.found
            .iter()
            .filter(move |(n, _)| names.contains(&n.as_str()))
            .filter_map(|(_, v)| *v)
    }
}

/// A wrapper's option syntax, GNU style.
pub(super) struct OptionSpec {
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

pub(super) const NO_OPTIONS: OptionSpec = OptionSpec {
    flags: "",
    with_value: "",
    attached: "",
    long_flags: &[],
    long_with_value: &[],
    numeric: false,
};

pub(super) const ENV: OptionSpec = OptionSpec {
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
pub(super) const COMMAND: OptionSpec = OptionSpec {
    flags: "pvV",
    ..NO_OPTIONS
};
pub(super) const EXEC: OptionSpec = OptionSpec {
    flags: "cl",
    with_value: "a",
    ..NO_OPTIONS
};
pub(super) const NICE: OptionSpec = OptionSpec {
    with_value: "n",
    long_with_value: &["adjustment"],
    numeric: true,
    ..NO_OPTIONS
};
pub(super) const TIME: OptionSpec = OptionSpec {
    flags: "pvqa",
    with_value: "fo",
    long_flags: &["portability", "verbose", "quiet", "append"],
    long_with_value: &["format", "output"],
    ..NO_OPTIONS
};
pub(super) const STDBUF: OptionSpec = OptionSpec {
    with_value: "ioe",
    long_with_value: &["input", "output", "error"],
    ..NO_OPTIONS
};
pub(super) const TIMEOUT: OptionSpec = OptionSpec {
    flags: "v",
    with_value: "sk",
    long_flags: &["preserve-status", "foreground", "verbose"],
    long_with_value: &["signal", "kill-after"],
    ..NO_OPTIONS
};
pub(super) const SUDO: OptionSpec = OptionSpec {
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
pub(super) const DOAS: OptionSpec = OptionSpec {
    flags: "nsL",
    with_value: "aCu",
    ..NO_OPTIONS
};
pub(super) const XARGS: OptionSpec = OptionSpec {
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
pub(super) const TEE: OptionSpec = OptionSpec {
    flags: "aip",
    long_flags: &["append", "ignore-interrupts", "output-error"],
    ..NO_OPTIONS
};

/// Why a wrapper's options hide which word is its program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum OptionError {
    #[error("an expansion among the options, \"{}\", hides which program runs", keys::shown(.0))]
    Expansion(String),
    #[error("the option --{0} is not one this reader knows, so which word is the program cannot be told")]
    UnknownLong(String),
    #[error("the option --{0} has no value")]
    LongWithoutValue(&'static str),
    #[error("the option -{0} has no value")]
    ShortWithoutValue(char),
    /// A letter, in the word it was bundled in.
    #[error("the option -{letter} (in \"{}\") is not one this reader knows, so which word is the program cannot be told", keys::shown(.word))]
    UnknownShort { letter: char, word: String },
}

/// Parses a wrapper's options, GNU style; an unknown option or an expansion among them is an
/// error, since then which word is the program cannot be told.
pub(super) fn parse_options<'w>(
    words: &'w [Word],
    spec: &OptionSpec,
    dash_is_option: bool,
) -> Result<Options<'w>, OptionError> {
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
                return Err(OptionError::Expansion(text.to_owned()));
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
            let full =
                long_option(name, spec).ok_or_else(|| OptionError::UnknownLong(name.to_owned()))?;
            let value = if attached.is_none() && spec.long_with_value.contains(&full) {
                i += 1;
                Some(
                    words
                        .get(i)
                        .map(|w| w.text.as_str())
                        .ok_or(OptionError::LongWithoutValue(full))?,
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
                        .ok_or(OptionError::ShortWithoutValue(c))?
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
                return Err(OptionError::UnknownShort {
                    letter: c,
                    word: text.to_owned(),
                });
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
