//! Typed tokens in text, and an index of them, for value provenance ([`super::provenance`]).
//!
//! [`extract`] finds the values in a text that are worth following from a tool's output into a
//! later call's arguments: e-mail addresses, URLs and host names, IBAN-like strings, phone
//! numbers, numbers of 4 or more digits, codes that mix letters and digits, file names, and
//! multi-word capitalised phrases. Each comes out normalized (lower case; a URL without its scheme
//! and `www.`; an IBAN or phone number without its spaces), so that the same value written two
//! ways compares equal. Every scanner walks the text once: extraction is linear in its length.
//!
//! [`TokenIndex`] keeps the tokens of many texts (the outputs an agent read, or the user's
//! instructions), each with the text it came from, plus an index of their words for the
//! whole-value check ([`TokenIndex::phrase_source`]), within the bounds the issue sets: at most
//! [`MAX_TEXT_BYTES`] of text and [`MAX_TOKENS`] tokens. Beyond them it says it overflowed and
//! stops taking more; the rule then holds as it would without provenance.
//!
//! This is no scan for bad words: a token says only that a value appeared somewhere.

use std::collections::HashMap;

/// The most text an index keeps (the sum of its texts' lengths).
pub(crate) const MAX_TEXT_BYTES: usize = 1024 * 1024;
/// The most distinct tokens an index keeps.
pub(crate) const MAX_TOKENS: usize = 64 * 1024;

/// What kind of value a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Email,
    /// A URL with a path, without its scheme and `www.`.
    Url,
    /// A host name: a URL's, or a bare one that ends in a known public suffix.
    Host,
    Iban,
    /// A phone number's digits (at least 8).
    Phone,
    /// A number of 4 or more digits, not part of an ISO date or time.
    Number,
    /// 6 or more characters that mix letters and digits.
    Code,
    /// A file name with a known extension.
    FileName,
    /// Two or more capitalised words in a row.
    Phrase,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Email => "e-mail address",
            Kind::Url => "URL",
            Kind::Host => "host name",
            Kind::Iban => "IBAN",
            Kind::Phone => "phone number",
            Kind::Number => "number",
            Kind::Code => "code",
            Kind::FileName => "file name",
            Kind::Phrase => "phrase",
        }
    }

    fn tag(self) -> char {
        match self {
            Kind::Email => 'e',
            Kind::Url => 'u',
            Kind::Host => 'h',
            Kind::Iban => 'i',
            Kind::Phone => 'p',
            Kind::Number => 'n',
            Kind::Code => 'c',
            Kind::FileName => 'f',
            Kind::Phrase => 'w',
        }
    }
}

/// File extensions that make a word a file name.
const FILE_EXTENSIONS: &[&str] = &[
    "7z", "apk", "bat", "bin", "bmp", "c", "cmd", "conf", "cpp", "csv", "db", "deb", "dll", "dmg",
    "doc", "docm", "docx", "eml", "env", "epub", "exe", "gif", "go", "gz", "h", "heic", "htm",
    "html", "ics", "ini", "iso", "jar", "java", "jpeg", "jpg", "js", "json", "key", "log", "md",
    "mov", "mp3", "mp4", "msg", "msi", "odp", "ods", "odt", "ova", "pdf", "pem", "php", "pkg",
    "png", "ppt", "pptx", "ps1", "py", "rar", "rb", "rpm", "rs", "rtf", "sh", "sql", "sqlite",
    "svg", "tar", "tgz", "tif", "tiff", "toml", "ts", "tsv", "txt", "vcf", "wav", "webp", "xls",
    "xlsm", "xlsx", "xml", "yaml", "yml", "zip",
];

/// The most words a capitalised phrase token spans (longer runs give every window).
const MAX_PHRASE_WORDS: usize = 6;

/// Calls `each` with every typed token in `text`, normalized. A token may come more than once.
pub fn extract(text: &str, each: &mut dyn FnMut(Kind, &str)) {
    for piece in pieces(text) {
        piece_tokens(piece, each);
    }
    numbers(text, each);
    phones(text, each);
    ibans(text, each);
    phrases(text, each);
}

/// Every token of `text` as (kind, normalized text), sorted and without repeats (for tests).
pub fn extract_all(text: &str) -> Vec<(Kind, String)> {
    let mut all = Vec::new();
    extract(text, &mut |kind, token| all.push((kind, token.to_owned())));
    all.sort();
    all.dedup();
    all
}

fn is_delimiter(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '<' | '>'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '"'
                | '\''
                | '`'
                | '|'
                | ','
                | ';'
                | '\u{201c}'
                | '\u{201d}'
                | '\u{2018}'
                | '\u{2019}'
        )
}

fn is_edge_punctuation(c: char) -> bool {
    matches!(
        c,
        '.' | ':' | '!' | '?' | '*' | '#' | '-' | '_' | '~' | '=' | '&' | '\u{2026}'
    )
}

/// The words of `text` between delimiters, without punctuation at their ends.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_delimiter)
        .map(|piece| piece.trim_matches(is_edge_punctuation))
        .filter(|piece| !piece.is_empty())
}

fn piece_tokens(piece: &str, each: &mut dyn FnMut(Kind, &str)) {
    let piece = strip_prefix_ignore_case(piece, "mailto:").unwrap_or(piece);
    if let Some(scheme_end) = piece.find("://") {
        let scheme = &piece[..scheme_end];
        if !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
        {
            url(&piece[scheme_end + 3..], true, each);
            file_name(piece, each);
            codes(piece, each);
            return;
        }
    }
    if let Some(at) = piece.rfind('@') {
        let (local, domain) = (&piece[..at], &piece[at + 1..]);
        if !local.is_empty()
            && local.chars().all(|c| {
                c.is_alphanumeric()
                    || matches!(
                        c,
                        '.' | '_'
                            | '%'
                            | '+'
                            | '-'
                            | '!'
                            | '$'
                            | '&'
                            | '*'
                            | '/'
                            | '='
                            | '^'
                            | '{'
                            | '}'
                            | '~'
                    )
            })
            && host_shaped(domain)
        {
            each(Kind::Email, &piece.to_lowercase());
            codes(local, each);
            return;
        }
    }
    url(piece, false, each);
    file_name(piece, each);
    codes(piece, each);
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Whether `host` looks like a DNS name with at least two labels.
fn host_shaped(host: &str) -> bool {
    host.contains('.')
        && !host.starts_with('.')
        && !host.ends_with('.')
        && host.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
}

/// Whether a (lower-case) host ends in a known public suffix, with a label before it.
fn has_public_suffix(host: &str) -> bool {
    psl::domain(host.as_bytes()).is_some_and(|domain| domain.suffix().is_known())
}

/// A URL (after its scheme, if it had one) or a bare host: its host, and the URL with its path.
fn url(rest: &str, had_scheme: bool, each: &mut dyn FnMut(Kind, &str)) {
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    // user:password@ before the host
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    // :port after it
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => authority,
    };
    let host = host.to_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host);
    if host.is_empty() {
        return;
    }
    let known = if had_scheme {
        host_shaped(host) || host.parse::<std::net::Ipv4Addr>().is_ok()
    } else {
        host_shaped(host) && has_public_suffix(host)
    };
    if !known {
        return;
    }
    let path = path.trim_end_matches(['/', '?', '#']);
    if !path.is_empty() {
        each(Kind::Url, &format!("{host}{}", path.to_lowercase()));
    }
    each(Kind::Host, host);
}

fn file_name(piece: &str, each: &mut dyn FnMut(Kind, &str)) {
    let piece = piece.split(['?', '#']).next().unwrap_or(piece);
    let name = piece.rsplit(['/', '\\']).next().unwrap_or(piece);
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return;
    };
    if stem.is_empty() || extension.len() > 6 {
        return;
    }
    let extension = extension.to_ascii_lowercase();
    if FILE_EXTENSIONS.binary_search(&extension.as_str()).is_ok() {
        each(Kind::FileName, &name.to_lowercase());
    }
}

fn mixes_letters_and_digits(text: &str) -> bool {
    text.bytes().any(|b| b.is_ascii_digit()) && text.bytes().any(|b| b.is_ascii_alphabetic())
}

/// Codes: runs of 6 or more ASCII letters and digits that mix both, and whole pieces of them
/// joined by `-` or `_` (`INV-2024-0042`).
fn codes(piece: &str, each: &mut dyn FnMut(Kind, &str)) {
    for run in piece.split(|c: char| !c.is_ascii_alphanumeric()) {
        if run.len() >= 6 && mixes_letters_and_digits(run) {
            each(Kind::Code, &run.to_ascii_lowercase());
        }
    }
    if piece.len() >= 6
        && piece.contains(['-', '_'])
        && piece
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && mixes_letters_and_digits(piece)
    {
        each(Kind::Code, &piece.to_ascii_lowercase());
    }
}

fn digits_at(bytes: &[u8], at: usize, count: usize) -> bool {
    bytes.len() >= at + count && bytes[at..at + count].iter().all(u8::is_ascii_digit)
}

/// The length of an ISO date and time (`2026-12-01`, `2026-12-01T13:45:10.5+01:00`) or a time
/// of day (`13:45`, `13:45:10`) at `at`, if one starts there.
fn date_time_at(bytes: &[u8], at: usize) -> Option<usize> {
    let date = digits_at(bytes, at, 4)
        && bytes.get(at + 4) == Some(&b'-')
        && digits_at(bytes, at + 5, 2)
        && bytes.get(at + 7) == Some(&b'-')
        && digits_at(bytes, at + 8, 2);
    let mut end;
    if date {
        end = at + 10;
        if matches!(bytes.get(end), Some(b'T' | b't' | b' ')) {
            if let Some(time) = time_at(bytes, end + 1) {
                end = time;
            }
        }
    } else {
        end = time_at(bytes, at)?;
    }
    // A zone after a time or date-time.
    if end > at {
        if matches!(bytes.get(end), Some(b'Z' | b'z')) {
            end += 1;
        } else if matches!(bytes.get(end), Some(b'+' | b'-')) && digits_at(bytes, end + 1, 2) {
            if bytes.get(end + 3) == Some(&b':') && digits_at(bytes, end + 4, 2) {
                end += 6;
            } else if digits_at(bytes, end + 3, 2) {
                end += 5;
            }
        }
    }
    Some(end - at)
}

/// The end of a time of day (`hh:mm`, `hh:mm:ss`, `hh:mm:ss.fff`) at `at`.
fn time_at(bytes: &[u8], at: usize) -> Option<usize> {
    if !(digits_at(bytes, at, 2) && bytes.get(at + 2) == Some(&b':') && digits_at(bytes, at + 3, 2))
    {
        return None;
    }
    let mut end = at + 5;
    if bytes.get(end) == Some(&b':') && digits_at(bytes, end + 1, 2) {
        end += 3;
        if matches!(bytes.get(end), Some(b'.' | b',')) && digits_at(bytes, end + 1, 1) {
            end += 1;
            while bytes.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
        }
    }
    Some(end)
}

/// Whether the whole of `text` (trimmed) is an ISO date, date and time, or time of day.
pub fn is_date_time(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty() && date_time_at(text.as_bytes(), 0) == Some(text.len())
}

fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Numbers of 4 or more digits (thousands separators `,` dropped, a decimal part kept), outside
/// ISO dates and times, and not inside a word (`INV2024` is a code, not a number).
fn numbers(text: &str, each: &mut dyn FnMut(Kind, &str)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() || (at > 0 && word_byte(bytes[at - 1])) {
            at += 1;
            continue;
        }
        if let Some(length) = date_time_at(bytes, at) {
            at += length.max(1);
            continue;
        }
        let mut number = String::new();
        let mut end = at;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            number.push(bytes[end] as char);
            end += 1;
        }
        // 1,234,567
        while bytes.get(end) == Some(&b',')
            && digits_at(bytes, end + 1, 3)
            && !bytes.get(end + 4).is_some_and(u8::is_ascii_digit)
        {
            number.push_str(&text[end + 1..end + 4]);
            end += 4;
        }
        if bytes.get(end) == Some(&b'.') && digits_at(bytes, end + 1, 1) {
            number.push('.');
            end += 1;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                number.push(bytes[end] as char);
                end += 1;
            }
        }
        let inside_word = bytes
            .get(end)
            .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_');
        let digits = number.bytes().filter(u8::is_ascii_digit).count();
        if digits >= 4 && !inside_word {
            each(Kind::Number, &number);
        }
        at = end.max(at + 1);
    }
}

/// Phone numbers: a run of digits and separators (`+1 (555) 010-2030`, `555.010.2030`) with 8
/// to 15 digits, as its digits.
fn phones(text: &str, each: &mut dyn FnMut(Kind, &str)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        let starts =
            (b.is_ascii_digit() || b == b'+' || b == b'(') && !(at > 0 && word_byte(bytes[at - 1]));
        if !starts {
            at += 1;
            continue;
        }
        if let Some(length) = date_time_at(bytes, at) {
            at += length.max(1);
            continue;
        }
        let mut digits = String::new();
        let mut end = at;
        let mut last_digit_end = at;
        while end < bytes.len() {
            match bytes[end] {
                b'0'..=b'9' => {
                    digits.push(bytes[end] as char);
                    last_digit_end = end + 1;
                }
                b'+' if end == at => {}
                b'(' | b')' | b'-' | b'.' => {}
                b' ' if bytes
                    .get(end + 1)
                    .is_some_and(|&n| n.is_ascii_digit() || n == b'(') => {}
                _ => break,
            }
            end += 1;
        }
        let inside_word = bytes
            .get(last_digit_end)
            .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_');
        if (8..=15).contains(&digits.len()) && !inside_word {
            each(Kind::Phone, &digits);
        }
        at = end.max(at + 1);
    }
}

/// IBAN-like strings: two letters, two digits, and 11 to 30 more letters and digits, written
/// whole or in groups of four separated by single spaces; upper case, without the spaces.
fn ibans(text: &str, each: &mut dyn FnMut(Kind, &str)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at + 4 <= bytes.len() {
        let starts = bytes[at].is_ascii_alphabetic()
            && bytes[at + 1].is_ascii_alphabetic()
            && bytes[at + 2].is_ascii_digit()
            && bytes[at + 3].is_ascii_digit()
            && !(at > 0 && bytes[at - 1].is_ascii_alphanumeric());
        if !starts {
            at += 1;
            continue;
        }
        let group_end = |from: usize| {
            let mut end = from;
            while end < bytes.len() && bytes[end].is_ascii_alphanumeric() {
                end += 1;
            }
            end
        };
        let first_end = group_end(at);
        let mut iban: String = text[at..first_end].to_ascii_uppercase();
        let mut end = first_end;
        if first_end - at == 4 {
            // Grouped: more groups of four, the last one shorter, each after one space.
            let mut last_len = 4;
            while last_len == 4 && bytes.get(end) == Some(&b' ') && iban.len() < 34 {
                let next_end = group_end(end + 1);
                let len = next_end - (end + 1);
                if len == 0 || len > 4 {
                    break;
                }
                iban.push_str(&text[end + 1..next_end].to_ascii_uppercase());
                end = next_end;
                last_len = len;
            }
        }
        if (15..=34).contains(&iban.len()) {
            each(Kind::Iban, &iban);
        }
        at = end.max(at + 1);
    }
}

fn capitalised(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase)
        && chars.all(|c| c.is_alphabetic() || c == '-' || c == '\'' || c == '\u{2019}')
}

/// Multi-word capitalised phrases (`Acme Holdings Ltd`): runs of two or more capitalised words
/// not broken by punctuation, each window of 2 to [`MAX_PHRASE_WORDS`] words, lower case.
fn phrases(text: &str, each: &mut dyn FnMut(Kind, &str)) {
    let mut run: Vec<String> = Vec::new();
    let flush = |run: &mut Vec<String>, each: &mut dyn FnMut(Kind, &str)| {
        for start in 0..run.len() {
            for len in 2..=MAX_PHRASE_WORDS.min(run.len() - start) {
                each(Kind::Phrase, &run[start..start + len].join(" "));
            }
        }
        run.clear();
    };
    for word in text.split(char::is_whitespace) {
        if word.is_empty() {
            continue;
        }
        let leading = word.trim_start_matches(|c: char| !c.is_alphanumeric());
        if leading.len() != word.len() {
            flush(&mut run, each);
        }
        let core = leading.trim_end_matches(|c: char| !c.is_alphanumeric());
        if capitalised(core) {
            run.push(core.to_lowercase());
        } else {
            flush(&mut run, each);
            continue;
        }
        if core.len() != leading.len() {
            flush(&mut run, each);
        }
    }
    flush(&mut run, each);
}

/// The words of a text as the whole-value check compares them: runs of letters and digits,
/// lower case.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

/// The JSON strings (and numbers, as their text) in a value, each a text of its own. A string
/// that holds a JSON object or array (a tool result often does) gives its own strings too.
pub(crate) fn texts_of_json(value: &serde_json::Value, each: &mut dyn FnMut(&str)) {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            let trimmed = text.trim_start();
            if trimmed.starts_with(['{', '[']) {
                if let Ok(inner) = serde_json::from_str::<Value>(text) {
                    if inner.is_object() || inner.is_array() {
                        texts_of_json(&inner, each);
                        return;
                    }
                }
            }
            each(text)
        }
        Value::Number(number) => each(&number.to_string()),
        Value::Array(items) => items.iter().for_each(|item| texts_of_json(item, each)),
        Value::Object(members) => {
            for (key, item) in members {
                each(key);
                texts_of_json(item, each);
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// The tokens and words of many texts, each text from a numbered source.
#[derive(Debug, Clone, Default)]
pub struct TokenIndex {
    /// Each text as it was added, with its source.
    texts: Vec<(u32, String)>,
    bytes: usize,
    /// Tagged token (kind's tag, then the normalized text) → the first source it came from.
    tokens: HashMap<String, u32>,
    /// Word → its id.
    word_ids: HashMap<String, u32>,
    /// Every word in order, as ids, with [`SEPARATOR`] between texts.
    sequence: Vec<u32>,
    /// Where each word id occurs in `sequence`.
    postings: Vec<Vec<u32>>,
    /// Where each text starts in `sequence`, with its source.
    starts: Vec<(u32, u32)>,
    overflowed: bool,
}

const SEPARATOR: u32 = u32::MAX;

fn tagged(kind: Kind, token: &str) -> String {
    let mut key = String::with_capacity(token.len() + 1);
    key.push(kind.tag());
    key.push_str(token);
    key
}

impl TokenIndex {
    pub fn new() -> TokenIndex {
        TokenIndex::default()
    }

    /// Adds a text from `source`. False, and nothing added past the bound, when the text or its
    /// tokens do not fit: the index has overflowed from then on.
    pub fn add(&mut self, source: u32, text: &str) -> bool {
        if self.overflowed {
            return false;
        }
        if self.bytes + text.len() > MAX_TEXT_BYTES {
            self.overflowed = true;
            return false;
        }
        self.bytes += text.len();
        self.texts.push((source, text.to_owned()));
        let mut fits = true;
        let tokens = &mut self.tokens;
        extract(text, &mut |kind, token| {
            let key = tagged(kind, token);
            if tokens.contains_key(&key) {
                return;
            }
            if tokens.len() >= MAX_TOKENS {
                fits = false;
                return;
            }
            tokens.insert(key, source);
        });
        if !fits {
            self.overflowed = true;
        }
        self.starts.push((self.sequence.len() as u32, source));
        for word in words(text) {
            let next = self.word_ids.len() as u32;
            let id = *self.word_ids.entry(word).or_insert(next);
            if id == next {
                self.postings.push(Vec::new());
            }
            self.postings[id as usize].push(self.sequence.len() as u32);
            self.sequence.push(id);
        }
        self.sequence.push(SEPARATOR);
        fits
    }

    /// Marks the index as overflowed (read back from a stored state that said so).
    pub(crate) fn mark_overflowed(&mut self) {
        self.overflowed = true;
    }

    /// Whether more was offered than the bounds keep.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty() && !self.overflowed
    }

    /// The texts, with their sources, as added.
    pub fn texts(&self) -> &[(u32, String)] {
        &self.texts
    }

    /// How many bytes of text, and how many distinct tokens, the index holds.
    pub fn size(&self) -> (usize, usize) {
        (self.bytes, self.tokens.len())
    }

    /// The source of a token, if the index has it.
    pub fn source_of(&self, kind: Kind, token: &str) -> Option<u32> {
        self.tokens.get(&tagged(kind, token)).copied()
    }

    /// Whether the index has a token.
    pub fn contains(&self, kind: Kind, token: &str) -> bool {
        self.source_of(kind, token).is_some()
    }

    /// The source of a text in which `phrase` occurs as whole words in a row (compared as
    /// [`words`] splits them), if any.
    pub fn phrase_source(&self, phrase: &str) -> Option<u32> {
        let ids: Vec<u32> = words(phrase)
            .map(|word| self.word_ids.get(&word).copied())
            .collect::<Option<_>>()?;
        // The word with the fewest occurrences anchors the search.
        let (anchor, anchor_id) = ids
            .iter()
            .enumerate()
            .min_by_key(|(_, id)| self.postings[**id as usize].len())?;
        for &position in &self.postings[*anchor_id as usize] {
            let Some(start) = (position as usize).checked_sub(anchor) else {
                continue;
            };
            if self.sequence.get(start..start + ids.len()) == Some(&ids[..]) {
                let text = self
                    .starts
                    .partition_point(|(begin, _)| *begin as usize <= start);
                return Some(self.starts[text - 1].1);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(text: &str, kind: Kind, token: &str) -> bool {
        extract_all(text)
            .iter()
            .any(|(k, t)| *k == kind && t == token)
    }

    #[track_caller]
    fn assert_has(text: &str, kind: Kind, token: &str) {
        assert!(
            has(text, kind, token),
            "{text:?} should give {kind:?} {token:?}: {:?}",
            extract_all(text)
        );
    }

    #[track_caller]
    fn assert_lacks(text: &str, kind: Kind, token: &str) {
        assert!(
            !has(text, kind, token),
            "{text:?} should not give {kind:?} {token:?}: {:?}",
            extract_all(text)
        );
    }

    #[test]
    fn the_extension_list_is_sorted_for_its_binary_search() {
        assert!(FILE_EXTENSIONS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn emails_plain_in_angle_brackets_and_as_mailto() {
        assert_has(
            "write to Bob.Smith@Example.COM today",
            Kind::Email,
            "bob.smith@example.com",
        );
        assert_has(
            "From: Eve <eve+x@evil.test>",
            Kind::Email,
            "eve+x@evil.test",
        );
        assert_has(
            "<mailto:ops@corp.example.org>.",
            Kind::Email,
            "ops@corp.example.org",
        );
        assert_has("(a@b.io),", Kind::Email, "a@b.io");
        assert_lacks("meet @ noon", Kind::Email, "@");
        assert!(extract_all("user@localhost")
            .iter()
            .all(|(k, _)| *k != Kind::Email));
    }

    #[test]
    fn urls_with_paths_and_punctuation_around_them() {
        let text = "See (https://www.Secure-Systems-252.com/login?next=/home).";
        assert_has(text, Kind::Url, "secure-systems-252.com/login?next=/home");
        assert_has(text, Kind::Host, "secure-systems-252.com");
        // Without a scheme, and without www., the same.
        assert_has(
            "go to secure-systems-252.com/login?next=/home!",
            Kind::Url,
            "secure-systems-252.com/login?next=/home",
        );
        assert_has("\"http://evil.test/a/b/\",", Kind::Url, "evil.test/a/b");
        assert_has("http://10.0.0.7:8080/x", Kind::Url, "10.0.0.7/x");
        assert_has(
            "https://user:pw@host.example.net:443/p",
            Kind::Host,
            "host.example.net",
        );
    }

    #[test]
    fn bare_hosts_count_only_with_a_known_public_suffix() {
        assert_has(
            "visit secure-systems-252.com now",
            Kind::Host,
            "secure-systems-252.com",
        );
        assert_has("visit www.bbc.co.uk.", Kind::Host, "bbc.co.uk");
        assert_lacks("config.local", Kind::Host, "config.local");
        assert_lacks("version 3.14 and e.g. this", Kind::Host, "3.14");
        assert_lacks(
            "the file is at foo.internalthing",
            Kind::Host,
            "foo.internalthing",
        );
        // A public suffix alone is no host.
        assert_lacks("co.uk", Kind::Host, "co.uk");
    }

    #[test]
    fn ibans_whole_or_in_groups_of_four() {
        assert_has(
            "IBAN: DE89 3704 0044 0532 0130 00, thanks",
            Kind::Iban,
            "DE89370400440532013000",
        );
        assert_has(
            "to GB82WEST12345698765432.",
            Kind::Iban,
            "GB82WEST12345698765432",
        );
        assert_has(
            "pay gb82 west 1234 5698 7654 32",
            Kind::Iban,
            "GB82WEST12345698765432",
        );
        // Too short to be one.
        assert!(extract_all("DE89 3704")
            .iter()
            .all(|(k, _)| *k != Kind::Iban));
    }

    #[test]
    fn phones_with_at_least_eight_digits() {
        assert_has("call +1 (555) 010-2030 now", Kind::Phone, "15550102030");
        assert_has("tel 555.010.2030", Kind::Phone, "5550102030");
        assert_has("0044 20 7946 0958", Kind::Phone, "00442079460958");
        assert!(extract_all("ext 555-0102")
            .iter()
            .all(|(k, _)| *k != Kind::Phone));
    }

    #[test]
    fn a_date_is_not_a_number_or_a_phone() {
        for text in [
            "on 2026-12-01",
            "at 2026-12-01T13:45:10Z",
            "at 2026-12-01T13:45:10.123456+01:00",
            "at 13:45:10.123456",
            "2026-12-01 13:45",
        ] {
            let found = extract_all(text);
            assert!(
                found
                    .iter()
                    .all(|(k, _)| !matches!(k, Kind::Number | Kind::Phone)),
                "{text}: {found:?}"
            );
        }
        assert!(is_date_time("2026-12-01"));
        assert!(is_date_time(" 2026-12-01T13:45:10Z"));
        assert!(is_date_time("13:45"));
        assert!(!is_date_time("2026-12-01 and more"));
        assert!(!is_date_time("20261201"));
        // A year alone is a number.
        assert_has("since 2026", Kind::Number, "2026");
    }

    #[test]
    fn numbers_of_four_or_more_digits() {
        assert_has("order 48213 shipped", Kind::Number, "48213");
        assert_has("total $1,250,000.50", Kind::Number, "1250000.50");
        assert_has("pay 1234.", Kind::Number, "1234");
        assert_lacks("room 123", Kind::Number, "123");
        // Inside a word it is a code, not a number.
        assert_lacks("INV20261", Kind::Number, "20261");
    }

    #[test]
    fn codes_mix_letters_and_digits() {
        assert_has("use code X7K9QZ2 at checkout", Kind::Code, "x7k9qz2");
        assert_has("ref INV-2026-0042", Kind::Code, "inv-2026-0042");
        assert_lacks("password", Kind::Code, "password");
        assert_lacks("a1b2c", Kind::Code, "a1b2c");
        assert_lacks("123456", Kind::Code, "123456");
    }

    #[test]
    fn file_names_by_extension() {
        assert_has("open Q3-Report.PDF please", Kind::FileName, "q3-report.pdf");
        assert_has("see /home/bob/notes/plan.docx", Kind::FileName, "plan.docx");
        assert_has("C:\\Users\\eve\\payload.exe", Kind::FileName, "payload.exe");
        assert_lacks("version 1.2", Kind::FileName, "1.2");
        assert_lacks("hello.world", Kind::FileName, "hello.world");
    }

    #[test]
    fn capitalised_phrases_of_two_or_more_words() {
        let text = "Contact Acme Holdings Ltd, then Bob.";
        assert_has(text, Kind::Phrase, "acme holdings ltd");
        assert_has(text, Kind::Phrase, "acme holdings");
        assert_has(text, Kind::Phrase, "contact acme holdings ltd");
        // Punctuation breaks a phrase.
        assert_lacks(text, Kind::Phrase, "ltd then");
        assert_lacks("Bob. Alice", Kind::Phrase, "bob alice");
        assert_lacks("just Bob here", Kind::Phrase, "bob");
    }

    #[test]
    fn case_and_unicode_escapes_in_json_strings_are_read_as_the_text_they_stand_for() {
        let output: serde_json::Value = serde_json::from_str(
            r#"{"msg":"mail EVE\u0040Evil\u002eTEST or visit Secure\u002dSystems-252.COM"}"#,
        )
        .unwrap();
        let mut found = Vec::new();
        texts_of_json(&output, &mut |text| found.extend(extract_all(text)));
        assert!(
            found.contains(&(Kind::Email, "eve@evil.test".to_owned())),
            "{found:?}"
        );
        assert!(
            found.contains(&(Kind::Host, "secure-systems-252.com".to_owned())),
            "{found:?}"
        );
        // A string holding JSON is read as JSON too.
        let nested = serde_json::Value::String(r#"{"link":"https://evil.test/x\u002fy"}"#.into());
        let mut found = Vec::new();
        texts_of_json(&nested, &mut |text| found.extend(extract_all(text)));
        assert!(
            found.contains(&(Kind::Url, "evil.test/x/y".to_owned())),
            "{found:?}"
        );
    }

    #[test]
    fn the_index_finds_tokens_and_whole_phrases_with_their_source() {
        let mut index = TokenIndex::new();
        assert!(index.add(7, "Meet Dana Whitfield at the Harbour Room, code X7K9QZ2."));
        assert!(index.add(9, "second text: project blue-sky"));
        assert_eq!(index.source_of(Kind::Code, "x7k9qz2"), Some(7));
        assert_eq!(index.phrase_source("harbour room"), Some(7));
        assert_eq!(index.phrase_source("Harbour  ROOM"), Some(7));
        assert_eq!(index.phrase_source("Project Blue-Sky"), Some(9));
        // Not across texts, and only whole words in a row.
        assert_eq!(index.phrase_source("x7k9qz2 second"), None);
        assert_eq!(index.phrase_source("harb"), None);
        assert_eq!(index.phrase_source("room harbour"), None);
        assert_eq!(index.phrase_source(""), None);
    }

    #[test]
    fn the_index_is_bounded_and_says_when_it_overflowed() {
        let mut index = TokenIndex::new();
        let big = "a".repeat(MAX_TEXT_BYTES - 10);
        assert!(index.add(1, &big));
        assert!(!index.add(2, "more than ten bytes of text"));
        assert!(index.overflowed());
        let mut index = TokenIndex::new();
        let many: String = (0..MAX_TOKENS + 5)
            .map(|n| format!("{:06} ", n + 100_000))
            .collect();
        assert!(!index.add(1, &many));
        assert!(index.overflowed());
        assert_eq!(index.size().1, MAX_TOKENS);
    }
}
