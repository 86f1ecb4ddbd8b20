//! Fuzz target: the typed token extractor and index of value provenance
//! (`skeleton_crew::rules::tokens`).
//!
//! Never panics, and stays linear on any text up to 1 MiB (run it with `-max_len=1048576
//! -timeout=10`): every scanner walks the text once. Checks besides: every token is non-empty
//! and normalized (no upper case but an IBAN's, no white space but a phrase's single spaces);
//! the index finds every token it was given, with its source, unless it overflowed; and a text
//! whose words are indexed is found as a phrase of itself.

#![no_main]

use libfuzzer_sys::fuzz_target;
use skeleton_crew::rules::tokens::{self, Kind, TokenIndex};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut found = Vec::new();
    tokens::extract(&text, &mut |kind, token| {
        assert!(!token.is_empty(), "an empty {kind:?} token");
        match kind {
            Kind::Iban => assert!(!token.chars().any(char::is_lowercase), "{token:?}"),
            Kind::Phrase => assert!(
                !token.contains("  ") && !token.starts_with(' ') && token.contains(' '),
                "{token:?}"
            ),
            _ => assert!(!token.contains(char::is_whitespace), "{kind:?} {token:?}"),
        }
        found.push((kind, token.to_owned()));
    });
    let mut index = TokenIndex::new();
    let fits = index.add(3, &text);
    if fits {
        for (kind, token) in &found {
            assert_eq!(index.source_of(*kind, token), Some(3), "{kind:?} {token:?}");
        }
        let short: String = text.chars().take(80).collect();
        if tokens::words(&short).next().is_some() && tokens::words(&text).count() < 100_000 {
            let whole: Vec<String> = tokens::words(&text).collect();
            let first: Vec<String> = tokens::words(&short).collect();
            // The words of the first 80 characters start the text's words, but the last may be
            // cut: leave it out.
            let head = &first[..first.len() - 1];
            if !head.is_empty() && whole.starts_with(head) {
                assert_eq!(index.phrase_source(&head.join(" ")), Some(3));
            }
        }
    }
    let _ = tokens::is_date_time(&text);
});
