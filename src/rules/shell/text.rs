//! What bash makes of a word's text without the parser: quote removal's fast path, ANSI-C
//! strings, backquoted bodies, and the character classes of names, assignments, arithmetic
//! and globs.

pub(super) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The words of a plain command: one simple command whose words are made of letters, digits
/// and `_ . / : , % -` only, between spaces and tabs, and whose first word is not one of bash's
/// reserved words. Bash reads such a text as its words, each a literal: no quoting, expansion,
/// glob, assignment, redirection, operator, comment or keyword can be in it. `None` for any
/// other text (and an empty one), which the parser reads. A fast path for the commonest
/// command (`git status`, `cargo test`, `ls src`): brush-parser's tokenizer and grammar cost
/// about 3 million instructions for a start of the hook, a text this plain nothing.
pub(super) fn plain_command(text: &str) -> Option<impl Iterator<Item = &str>> {
    const RESERVED: &[&str] = &[
        "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
        "do", "done", "in", "function", "time", "coproc",
    ];
    let plain = |b: u8| {
        b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b':' | b',' | b'%' | b'-')
    };
    if !text.bytes().all(|b| plain(b) || b == b' ' || b == b'\t') {
        return None;
    }
    let words = text.split([' ', '\t']).filter(|word| !word.is_empty());
    let first = words.clone().next()?;
    (!RESERVED.contains(&first)).then_some(words)
}

/// The value of a word that quote removal alone turns into text, without the word parser (a
/// fast path for the common case, exactly what the parser gives): a word with no quoting,
/// expansion, glob or brace character, `'…'` with no `'` inside, or `"…"` with no `"`, `$`,
/// `` ` `` or `\` inside.
pub(super) fn plain_word(raw: &str) -> Option<&str> {
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
pub(super) fn is_assignment(text: &str) -> bool {
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
pub(super) fn is_literal_arithmetic(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_digit() || c.is_ascii_whitespace() || "+-*/%<>=!&|^~?:,()".contains(c))
}

pub(super) fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
        || ["+(", "@(", "!("]
            .iter()
            .any(|extglob| text.contains(extglob))
}

/// The body of a backquoted substitution, with its `\\`, `` \` `` and `\$` unescaped.
pub(super) fn unescape_backquoted(body: &str) -> String {
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
pub(super) fn ansi_c(text: &str) -> String {
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

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
