use super::*;

use super::super::tests::decide_globbed;
use crate::verdict::Decision;

fn word(text: &str) -> Vec<Token> {
    tokens(text, false)
}

fn pattern(text: &str) -> Vec<Token> {
    tokens(text, true)
}

#[test]
fn two_patterns_meet_when_some_name_matches_both() {
    for (w, g) in [
        (".env*", ".env"),
        (".en?", ".env"),
        (".e[n]v", ".env"),
        (".[a-f]nv", ".env"),
        ("id_rs?", "id_rsa*"),
        ("server.pe[m]", "*.pem"),
        ("*.rs", "id_rsa*"),
        ("*", "id_rsa*"),
        ("x[!a]", "x[ab]"),
        ("a*b*c", "*c"),
        ("[[:alpha:]]env", "?env"),
        (".[e]nv", ".env"),
        // From a word's first `[` on, any name (its quoting is lost): fail closed.
        (".e[!n]v", ".env"),
        ("[a-c]x", "dx"),
        ("[a-c]x", "[d-f]x"),
    ] {
        assert!(names_meet(&word(w), &pattern(g)), "{w} meets {g}");
    }
    for (w, g) in [
        ("*.md", "*.pem"),
        ("*", ".env"),
        ("?env", ".env"),
        ("*.rs", ".env.*"),
        ("main.?s", "*.pem"),
    ] {
        assert!(!names_meet(&word(w), &pattern(g)), "{w} does not meet {g}");
    }
    // A glob's `\` escapes; a word's does not (quotes are gone).
    assert_eq!(pattern(r"a\*"), [Token::Char('a'), Token::Char('*')]);
    assert_eq!(word("[x"), [Token::Any]);
    assert_eq!(word("a[!]a-c]b"), [Token::Char('a'), Token::Any]);
    assert_eq!(
        pattern("[!]a-c]"),
        [Token::Class {
            negated: true,
            ranges: vec![(']', ']'), ('a', 'c')]
        }]
    );
    // Parts: `**` takes any number of them, on either side.
    let parts = |text: &str| word_parts(Path::new(text), 0);
    let anywhere = |g: &str| shapes(Base::Anywhere, g, 0).remove(0).parts;
    assert!(parts_meet(&parts("/w/p/.env*"), &[], &anywhere("**/.env")));
    assert!(parts_meet(
        &parts("/w/.g*/*/x"),
        &[],
        &anywhere("**/.git/*/x")
    ));
    assert!(!parts_meet(&parts("/w/*/x"), &[], &anywhere("**/.git/*/x")));
    assert!(parts_meet(
        &parts("/w/**"),
        &[],
        &anywhere("**/.git/hooks/x")
    ));
    assert!(!parts_meet(
        &parts("/w/*"),
        &[],
        &anywhere("**/.git/hooks/x")
    ));
    assert!(!parts_meet(&parts("/w/*.rs"), &[], &anywhere("**/.git/**")));
    let home = plain_parts(Some(Path::new("/home/me")));
    let ssh = shapes(Base::Home, ".ssh/**", 0).remove(0).parts;
    assert!(parts_meet(&parts("/home/me/.ss?/id"), &home, &ssh));
    assert!(!parts_meet(&parts("/home/you/.ss?/id"), &home, &ssh));
    // Alternatives give a shape each; too many make the glob meet everything.
    let many = shapes(Base::Anywhere, "**/{a,b}.{c,d}", 0);
    assert_eq!(many.len(), 4);
    let huge = "**/{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b}";
    assert_eq!(shapes(Base::Anywhere, huge, 0)[0].parts, [Part::AnyDepth]);
}

#[test]
fn collating_symbols_and_equivalence_classes_match_any_character() {
    // `.en[[.v.]]` is `.env` to bash.
    for path in [
        ".en[[.v.]]",
        ".en[[=v=]]",
        "deploy/.en[[:alpha:]]",
        "~/.ss[[.h.]]/k",
    ] {
        let judged = decide_globbed(path, false);
        assert_eq!(judged.decision, Decision::Hold, "{path}: {judged:?}");
    }
}
