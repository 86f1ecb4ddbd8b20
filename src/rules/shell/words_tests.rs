use super::super::analyse;
use super::*;

#[test]
fn plain_words_read_as_the_word_parser_reads_them() {
    for raw in [
        "ls",
        "-rf",
        "src/main.rs",
        "'a b'",
        "\"a b c\"",
        "''",
        "\"\"",
        "a.b,c:d%e^f",
        "\"it's\"",
        "'say \"hi\"'",
        "x=1",
        "\"a\\b\"",
        "'",
        "\"",
        "a'b'",
        "\"$x\"",
        "~/x",
    ] {
        let mut walker = Walker::default();
        let mut parsed = Word::default();
        let pieces = word::parse(raw, &ParserOptions::default());
        if let Ok(pieces) = pieces {
            for piece in &pieces {
                walker.piece(
                    &piece.piece,
                    raw,
                    piece.start_index,
                    piece.end_index,
                    false,
                    &mut parsed,
                    0,
                );
            }
            if let Some(plain) = plain_word(raw) {
                assert_eq!(plain, parsed.text, "{raw}");
                assert!(parsed.is_fixed(), "{raw}");
            }
        } else {
            assert!(plain_word(raw).is_none(), "{raw}");
        }
    }
    assert_eq!(plain_word("'a b'"), Some("a b"));
    assert_eq!(plain_word("\"a b\""), Some("a b"));
    assert_eq!(plain_word("\"$x\""), None);
    assert_eq!(plain_word("'"), None);
}

#[test]
fn brace_expansions_are_seen_without_the_exponential_brace_parser() {
    let brace = |raw: &str| Walker::default().word(raw, 0).brace;
    assert!(brace("-{r,f}"));
    assert!(brace("x{1..3}"));
    assert!(brace("{a,'b c'}"));
    assert!(!brace("'{a,b}'"));
    assert!(!brace("\"{a,b}\""));
    assert!(!brace("{}"));
    assert!(!brace("${a,b}"));
    // The fuzzer's find: 110 `{` once took brush-parser's brace parser minutes.
    let hostile = format!("{}\0-nmtime", "{".repeat(110));
    assert!(!brace(&hostile));
    let analysis = analyse(&format!("nice {hostile} 10 rm -rf x"));
    assert_eq!(analysis.commands.len(), 1, "{analysis:?}");
    assert_eq!(analysis.commands[0].words[1..], ["10", "rm", "-rf", "x"]);
}
