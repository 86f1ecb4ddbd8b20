//! Globs and shell words as patterns over the parts of a path, and whether two of them may
//! match the same name.

use std::path::{Component, Path};

use super::CASE_INSENSITIVE;

/// What a glob is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Base {
    Root,
    Home,
    Absolute,
    Anywhere,
}

/// One token of a pattern over one part of a path (between two `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Token {
    Char(char),
    /// `?`: any one character.
    One,
    /// `*`: any characters (never a `/`: a part holds none).
    Any,
    /// `[…]`: one character of the ranges, or with `negated` (`[!…]`, `[^…]`) one outside them.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// One part of a path pattern: a pattern over a name, or `**` (any number of parts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    Name(Vec<Token>),
    AnyDepth,
}

/// A glob of a rule as parts, for [`PathRule::meeting`](super::PathRule::meeting): its base, its parts (for
/// [`Base::Anywhere`], from the leading `**` on; for [`Base::Absolute`], after the `/`), and
/// its index in the rule's `globs`. A glob with `{a,b}` gives one shape per alternative.
#[derive(Debug, Clone)]
pub(super) struct Shape {
    pub(super) base: Base,
    pub(super) parts: Vec<Part>,
    pub(super) glob: usize,
}

/// At most this many shapes come from the alternatives (`{a,b}`) of one glob; past it, the
/// glob's shape is `**` (every path may meet it: fail closed).
const MAX_ALTERNATIVES: usize = 64;

/// The shapes of a glob (globset's syntax: `\` escapes, `[!…]`/`[^…]`, `{a,b}` not nested).
pub(super) fn shapes(base: Base, pattern: &str, glob: usize) -> Vec<Shape> {
    let mut texts = vec![String::new()];
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars.next().map(String::from).unwrap_or_default();
                texts.iter_mut().for_each(|t| {
                    t.push('\\');
                    t.push_str(&next)
                });
            }
            '{' => {
                let mut group = String::new();
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                    group.push(c);
                }
                let alternatives: Vec<&str> = group.split(',').collect();
                if texts.len() * alternatives.len() > MAX_ALTERNATIVES {
                    return vec![Shape {
                        base: Base::Anywhere,
                        parts: vec![Part::AnyDepth],
                        glob,
                    }];
                }
                texts = texts
                    .iter()
                    .flat_map(|t| alternatives.iter().map(move |a| format!("{t}{a}")))
                    .collect();
            }
            c => texts.iter_mut().for_each(|t| t.push(c)),
        }
    }
    texts
        .iter()
        .map(|text| Shape {
            base,
            parts: text
                .split('/')
                .filter(|part| !part.is_empty())
                .map(|part| match part {
                    "**" => Part::AnyDepth,
                    part => Part::Name(tokens(part, true)),
                })
                .collect(),
            glob,
        })
        .collect()
}

/// The tokens of one part of a pattern: of a glob (`escapes`: a `\` makes the next character
/// literal) or of a shell word after quote removal (no escapes left; an unclosed `[` is a
/// character). A POSIX class (`[[:alpha:]]`) counts as any character.
fn tokens(part: &str, escapes: bool) -> Vec<Token> {
    let chars: Vec<char> = part.chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if escapes && i + 1 < chars.len() => {
                out.push(Token::Char(chars[i + 1]));
                i += 2;
                continue;
            }
            '?' => out.push(Token::One),
            '*' => {
                if out.last() != Some(&Token::Any) {
                    out.push(Token::Any)
                }
            }
            // In a shell word (`escapes` false) the text comes after quote removal, so which
            // `!`, `^`, `]` or `[:` in a class were quoted is lost (`[\!v]` is {`!`, `v`} to
            // bash, `[!v]` here): from its first `[` on, a word's part may be any name.
            '[' if !escapes => {
                if out.last() != Some(&Token::Any) {
                    out.push(Token::Any);
                }
                break;
            }
            '[' => {
                if let Some((class, next)) = class(&chars, i + 1, escapes) {
                    out.push(class);
                    i = next;
                    continue;
                }
                out.push(Token::Char('['));
            }
            c => out.push(Token::Char(c)),
        }
        i += 1;
    }
    out
}

/// The class that opens before `chars[from]`, and the index past its `]`; `None` if unclosed.
fn class(chars: &[char], from: usize, escapes: bool) -> Option<(Token, usize)> {
    let mut i = from;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let mut c = *chars.get(i)?;
        if c == ']' && !first {
            return Some((Token::Class { negated, ranges }, i + 1));
        }
        first = false;
        if c == '[' && matches!(chars.get(i + 1), Some(':' | '.' | '=')) {
            // A POSIX class (`[:alpha:]`), a collating symbol (`[.v.]`) or an equivalence
            // class (`[=v=]`): any character, to be safe (`.en[[.v.]]` is `.env` to bash).
            let mark = chars[i + 1];
            let close = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == mark && chars[j + 1] == ']')?;
            ranges.push(('\0', char::MAX));
            i = close + 2;
            continue;
        }
        if c == '\\' && escapes {
            i += 1;
            c = *chars.get(i)?;
        }
        let mut high = c;
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|&h| h != ']') {
            i += 2;
            high = chars[i];
            if high == '\\' && escapes {
                i += 1;
                high = *chars.get(i)?;
            }
        }
        ranges.push((c.min(high), c.max(high)));
        i += 1;
    }
}

/// Whether `c` is among `ranges` (without regard to ASCII case where globs match that way).
fn in_ranges(ranges: &[(char, char)], c: char) -> bool {
    let has = |c: char| ranges.iter().any(|&(low, high)| low <= c && c <= high);
    has(c) || (CASE_INSENSITIVE && (has(c.to_ascii_lowercase()) || has(c.to_ascii_uppercase())))
}

/// Whether one character may be matched by both tokens (neither of them `*`). A class meeting
/// another counts as meeting unless both are plain and share no character: a negated class is
/// taken as meeting any (more holds at worst, never fewer).
fn characters_meet(a: &Token, b: &Token) -> bool {
    match (a, b) {
        (Token::Char(x), Token::Char(y)) => {
            x == y || (CASE_INSENSITIVE && x.eq_ignore_ascii_case(y))
        }
        (Token::One, _) | (_, Token::One) => true,
        (Token::Char(c), Token::Class { negated, ranges })
        | (Token::Class { negated, ranges }, Token::Char(c)) => *negated != in_ranges(ranges, *c),
        (
            Token::Class {
                negated: false,
                ranges: a,
            },
            Token::Class {
                negated: false,
                ranges: b,
            },
        ) => {
            CASE_INSENSITIVE
                || a.iter()
                    .any(|&(al, ah)| b.iter().any(|&(bl, bh)| al <= bh && bl <= ah))
        }
        _ => true,
    }
}

/// Whether some name is matched both by `word`, a part of a shell word, and by `glob`, a part
/// of a glob: a walk over both token lists (a `*` may match nothing or take one character the
/// other side matches). Bash's `*` and `?` never match a leading `.` (without `dotglob`), so a
/// word part that starts with one meets no glob part that starts with a `.`.
fn names_meet(word: &[Token], glob: &[Token]) -> bool {
    if matches!(word.first(), Some(Token::Any | Token::One))
        && glob.first() == Some(&Token::Char('.'))
    {
        return false;
    }
    let (p, q) = (word.len(), glob.len());
    let mut reach = vec![false; (p + 1) * (q + 1)];
    reach[0] = true;
    for i in 0..=p {
        for j in 0..=q {
            if !reach[i * (q + 1) + j] {
                continue;
            }
            let (a, b) = (word.get(i), glob.get(j));
            if a == Some(&Token::Any) {
                reach[(i + 1) * (q + 1) + j] = true;
                if b.is_some_and(|b| *b != Token::Any) {
                    reach[i * (q + 1) + j + 1] = true;
                }
            }
            if b == Some(&Token::Any) {
                reach[i * (q + 1) + j + 1] = true;
                if a.is_some_and(|a| *a != Token::Any) {
                    reach[(i + 1) * (q + 1) + j] = true;
                }
            }
            if let (Some(a), Some(b)) = (a, b) {
                if *a != Token::Any && *b != Token::Any && characters_meet(a, b) {
                    reach[(i + 1) * (q + 1) + j + 1] = true;
                }
            }
        }
    }
    reach[p * (q + 1) + q]
}

/// Whether `name` (one part of a path) is matched by `glob`, a pattern of names (`*`, `?`,
/// `[…]`, `\` escapes), as the `paths` rules' globs match it: a `*` or `?` matches a leading
/// `.` too. Where either is not ASCII, the `paths` rules' matcher (globset, whose `?` is one
/// byte) is asked as well, and a match by either counts: a secret's name is hidden or held
/// when either reads it so. A name that is not UTF-8 is read here with its bad bytes as U+FFFD.
pub fn name_matches(glob: &str, name: &std::ffi::OsStr) -> bool {
    let word: Vec<Token> = name.to_string_lossy().chars().map(Token::Char).collect();
    if names_meet(&word, &tokens(glob, true)) {
        return true;
    }
    if glob.is_ascii() && name.as_encoded_bytes().is_ascii() {
        return false;
    }
    // A glob that does not compile matches as the walk above read it.
    globset::GlobBuilder::new(glob)
        .literal_separator(true)
        .case_insensitive(CASE_INSENSITIVE)
        .backslash_escape(true)
        .build()
        .is_ok_and(|glob| glob.compile_matcher().is_match(std::path::Path::new(name)))
}

/// Whether some path is matched both by the parts of a shell word and by the parts of a glob:
/// the same walk over parts, where `**` (on either side) takes any number of parts.
/// `head` is the folder the glob is relative to, as plain parts before the glob's own.
pub(super) fn parts_meet(word: &[Part], head: &[Part], glob: &[Part]) -> bool {
    let part = |j: usize| {
        if j < head.len() {
            head.get(j)
        } else {
            glob.get(j - head.len())
        }
    };
    let (p, q) = (word.len(), head.len() + glob.len());
    let mut reach = vec![false; (p + 1) * (q + 1)];
    reach[0] = true;
    for i in 0..=p {
        for j in 0..=q {
            if !reach[i * (q + 1) + j] {
                continue;
            }
            let (a, b) = (word.get(i), part(j));
            if a == Some(&Part::AnyDepth) {
                reach[(i + 1) * (q + 1) + j] = true;
                if b.is_some() {
                    reach[i * (q + 1) + j + 1] = true;
                }
            }
            if b == Some(&Part::AnyDepth) {
                reach[i * (q + 1) + j + 1] = true;
                if a.is_some() {
                    reach[(i + 1) * (q + 1) + j] = true;
                }
            }
            if let (Some(Part::Name(a)), Some(Part::Name(b))) = (a, b) {
                if names_meet(a, b) {
                    reach[(i + 1) * (q + 1) + j + 1] = true;
                }
            }
        }
    }
    reach[p * (q + 1) + q]
}

/// Whether a part of a path has a wildcard bash expands (`*`, `?`, `[`).
pub(super) fn has_wildcard(bytes: &[u8]) -> bool {
    bytes.iter().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// Whether a part of a relative path with a wildcard may match a part of a base.
pub(super) fn parts_may_meet(part: Component, other: Component) -> bool {
    let (Component::Normal(part), Component::Normal(other)) = (part, other) else {
        return false;
    };
    let part = part.to_string_lossy();
    has_wildcard(part.as_bytes())
        && names_meet(
            &tokens(&part, false),
            &other
                .to_string_lossy()
                .chars()
                .map(Token::Char)
                .collect::<Vec<_>>(),
        )
}

/// The parts of a path as patterns: a part from `written_from` on with a wildcard as bash
/// reads it (a part that is `**` as any number of parts, as under `globstar`), the others as
/// plain names.
pub(super) fn word_parts(path: &Path, written_from: usize) -> Vec<Part> {
    let text = path.to_string_lossy();
    let mut at = 0;
    let mut out = Vec::new();
    for part in text.split('/') {
        let start = at;
        at += part.len() + 1;
        if part.is_empty() {
            continue;
        }
        out.push(
            if start + part.len() > written_from && has_wildcard(part.as_bytes()) {
                if part == "**" {
                    Part::AnyDepth
                } else {
                    Part::Name(tokens(part, false))
                }
            } else {
                Part::Name(part.chars().map(Token::Char).collect())
            },
        );
    }
    out
}

/// The parts of a folder, as plain names.
pub(super) fn plain_parts(folder: Option<&Path>) -> Vec<Part> {
    folder.map_or_else(Vec::new, |folder| word_parts(folder, usize::MAX))
}

#[cfg(test)]
#[path = "pattern_tests.rs"]
mod tests;
