//! Escaping agent-written text before it reaches a person's terminal.
//!
//! Args, instructions and reasons are written by agents, and so by whatever content steered them.
//! Raw, an escape sequence could clear the screen and draw a fake prompt, and a bidi override
//! could make `attacker-wallet` read as something else. Every control character, bidi control,
//! zero-width and line-separator character is shown as a visible `\u{…}` escape instead.

use std::borrow::Cow;

/// Whether a character must not reach a terminal (or a page) raw.
pub(crate) fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061C}'                  // Arabic letter mark
            | '\u{200B}'..='\u{200F}'   // zero-width space/joiners, LRM, RLM
            | '\u{2028}' | '\u{2029}'   // line and paragraph separators
            | '\u{202A}'..='\u{202E}'   // bidi embeddings and overrides
            | '\u{2060}'..='\u{2064}'   // word joiner and invisible operators
            | '\u{2066}'..='\u{2069}'   // bidi isolates
            | '\u{FEFF}'                // zero-width no-break space, BOM
            | '\u{FFF9}'..='\u{FFFB}'   // interlinear annotation controls
            | '\u{00AD}'                // soft hyphen
            | '\u{034F}'                // combining grapheme joiner
            | '\u{115F}' | '\u{1160}'   // Hangul fillers
            | '\u{17B4}' | '\u{17B5}'   // Khmer inherent vowels
            | '\u{180B}'..='\u{180F}'   // Mongolian variation selectors and vowel separator
            | '\u{2065}'                // reserved invisible
            | '\u{206A}'..='\u{206F}'   // deprecated format characters
            | '\u{3164}' | '\u{FFA0}'   // Hangul fillers
            | '\u{FE00}'..='\u{FE0F}'   // variation selectors
            | '\u{1D173}'..='\u{1D17A}' // musical formatting
            | '\u{E0000}'..='\u{E0FFF}' // tags and variation selectors supplement
        )
}

/// The text with every unsafe character escaped; borrowed when nothing needed escaping.
pub(crate) fn for_terminal(text: &str) -> Cow<'_, str> {
    // Printable ASCII (most text) is read a byte at a time, without decoding characters.
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) || !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text as HTML shows it: `&`, `<`, `>`, `"` and `'` escaped (fit for an element's content and
/// for a quoted attribute value); borrowed when nothing needed escaping.
pub(crate) fn html_escape(text: &str) -> Cow<'_, str> {
    if !text.contains(['&', '<', '>', '"', '\'']) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Agent-written text for an HTML page: every unsafe character shown escaped as
/// [`for_terminal`] does, then [`html_escape`]d.
pub fn for_html(text: &str) -> Cow<'_, str> {
    match for_terminal(text) {
        Cow::Borrowed(text) => html_escape(text),
        Cow::Owned(text) => Cow::Owned(html_escape(&text).into_owned()),
    }
}

/// The longest piece of agent-written text a reason quotes before cutting it with `…`.
pub(crate) const QUOTED_CHARS: usize = 80;

/// Agent-written text (a tool or agent name, an amount as written) as a reason quotes it:
/// invisible and control characters escaped, so `send\u{200b}_payment` never reads as
/// `send_payment`, and cut to [`QUOTED_CHARS`] characters, so a hostile name cannot blow up every
/// verdict, event and line of narration.
pub fn quoted(text: &str) -> Cow<'_, str> {
    let escaped = for_terminal(text);
    match escaped.char_indices().nth(QUOTED_CHARS) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &escaped[..cut])),
        None => escaped,
    }
}

/// Whether a person reading `c` would not see it: a character the terminal escaping rewrites
/// (controls, zero-width and bidi characters).
pub(crate) fn is_invisible(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    let mut buffer = [0; 4];
    matches!(for_terminal(c.encode_utf8(&mut buffer)), Cow::Owned(_))
}

/// `text` with each run of white space, line breaks included, as one space: one line.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_untouched() {
        assert!(matches!(
            for_terminal("send $40 to acme — ok ✓"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn escape_sequences_are_shown_not_run() {
        let text = "pay\u{1b}[2J\u{1b}[Happroved\r\n\u{7}\u{9b}31m";
        let shown = for_terminal(text);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown}");
        assert_eq!(
            shown,
            "pay\\u{1b}[2J\\u{1b}[Happroved\\u{d}\\u{a}\\u{7}\\u{9b}31m"
        );
    }

    #[test]
    fn quoted_text_is_escaped_and_bounded() {
        assert_eq!(quoted("send_payment"), "send_payment");
        assert_eq!(quoted("send\u{200b}_payment"), "send\\u{200b}_payment");
        assert_eq!(quoted("soft\u{ad}hyphen"), "soft\\u{ad}hyphen");
        let long = "x".repeat(10_000);
        assert_eq!(quoted(&long).chars().count(), QUOTED_CHARS + 1);
    }

    #[test]
    fn html_gets_no_markup_and_no_invisible_characters() {
        assert!(matches!(
            for_html("send $40 to acme — ok ✓"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            for_html("<script>alert('x')</script>\u{202e}\"a&b\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\\u{202e}&quot;a&amp;b&quot;"
        );
    }

    #[test]
    fn bidi_and_invisible_characters_are_escaped() {
        for c in [
            '\u{202E}', '\u{2066}', '\u{2069}', '\u{200B}', '\u{200F}', '\u{FEFF}', '\u{2028}',
            '\u{61C}',
        ] {
            let text = format!("a{c}b");
            let shown = for_terminal(&text);
            assert_eq!(shown, format!("a\\u{{{:x}}}b", c as u32));
        }
    }
}
