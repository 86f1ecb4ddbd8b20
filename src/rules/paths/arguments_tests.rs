use super::*;

use super::super::tests::{context, issue_rules};

#[test]
fn a_long_option_word_and_many_held_words_stay_bounded() {
    let rules = issue_rules();
    let placed = rules.place(context());
    let args = |words: Vec<String>| {
        let mut all = vec!["cat".to_owned()];
        all.extend(words);
        rules.decide_arguments(&all, &|| "cat …".to_owned(), true, &placed)
    };
    // A word of short options past its bound may carry any path: fail closed.
    let long = format!("-x{}", "a".repeat(MAX_ATTACHED_PLACES + 1));
    let judged = args(vec![long]).expect("held");
    assert_eq!(judged.decision, Decision::Hold);
    assert!(
        judged.reasons[0].contains("may name any file"),
        "{judged:?}"
    );
    // Many held words give at most MAX_PATH_REASONS reasons.
    let judged = args((0..40).map(|n| format!("~/.ssh/k{n}")).collect()).expect("held");
    assert_eq!(judged.decision, Decision::Hold);
    assert_eq!(judged.reasons.len(), MAX_PATH_REASONS);
}

#[test]
fn every_place_an_argument_may_name_a_path() {
    fn paths(word: &str, operand: bool) -> Vec<&str> {
        argument_paths(word, operand).unwrap().collect()
    }
    assert_eq!(paths("src", false), ["src"]);
    assert_eq!(paths("-", false), ["-"]);
    assert_eq!(paths("-la", false), ["-la", "a"]);
    assert_eq!(paths("-n20", false), ["-n20", "20", "0"]);
    assert_eq!(paths("-f~/k", false), ["-f~/k", "~/k", "/k", "k"]);
    assert_eq!(
        paths("-x=a/b", false),
        ["-x=a/b", "a/b", "=a/b", "a/b", "/b", "b"]
    );
    assert_eq!(paths("--file=a", false), ["--file=a", "a"]);
    assert_eq!(paths("--file", false), ["--file"]);
    assert_eq!(paths("-f~/k", true), ["-f~/k"]);
    assert_eq!(paths("-é/x", false), ["-é/x", "/x", "x"]);
    // Up to 256 places every one; past them the word may name any file (review finding:
    // `grep -iii…f.env` named `.env` at its 300th place).
    let most = format!("-{}", "a".repeat(MAX_ATTACHED_PLACES + 1));
    assert_eq!(paths(&most, false).len(), 1 + MAX_ATTACHED_PLACES);
    let long = format!("-{}f.env", "i".repeat(300));
    assert_eq!(argument_paths(&long, false).err(), Some(TooManyPlaces));
    let slashes = format!("-{}", "/".repeat(600));
    assert_eq!(argument_paths(&slashes, false).err(), Some(TooManyPlaces));
    assert!(argument_paths(&slashes, true).is_ok());
}

#[test]
fn shell_arguments_are_read_as_bash_passes_them() {
    let rules = issue_rules();
    let placed = rules.place(context());
    let decide = |command: &str| {
        let words: Vec<String> = command.split(' ').map(str::to_owned).collect();
        rules
            .decide_arguments(&words, &|| command.to_owned(), true, &placed)
            .map(|judged| judged.decision)
    };
    // Up to the first NUL.
    assert_eq!(decide("cat ~/.ssh/id_rsa\0x"), Some(Decision::Hold));
    assert_eq!(decide("cat .env\0"), Some(Decision::Hold));
    assert_eq!(decide("cat README.md\0.env"), None);
    assert_eq!(decide("cat \0~/.ssh/id_rsa"), None);
    // A value attached to a short option.
    for command in [
        "date -f/home/me/.ssh/id_rsa",
        "file -f/home/me/.aws/credentials",
        "grep -f/home/me/.ssh/id_rsa x",
        "tar -xvf~/.ssh/k",
        "grep -rfconfig/.env x",
        "cat -x.env",
        "cat -t/../../../home/me/.aws/credentials",
        "x -o=~/.ssh/id_rsa",
    ] {
        assert_eq!(decide(command), Some(Decision::Hold), "{command}");
    }
    for command in [
        "ls -la",
        "rm -rf build",
        "head -n20 x",
        "sort -t, -k2 x",
        "grep -rn x src",
    ] {
        assert_eq!(decide(command), None, "{command}");
    }
    // After `--`, a word that starts with `-` is a path, and only that.
    assert_eq!(
        decide("cat -- -t/../../../home/me/.aws/credentials"),
        Some(Decision::Hold)
    );
    assert_eq!(decide("cat -- -x.env"), None, "the file `-x.env`");
    assert_eq!(decide("cat -- -- .env"), Some(Decision::Hold));
    // A word of options too long to judge from every place names any file.
    let long = format!("x -{}", "/".repeat(600));
    let judged = rules
        .decide_arguments(
            &["x".to_owned(), long[2..].to_owned()],
            &|| long.clone(),
            true,
            &placed,
        )
        .unwrap();
    assert_eq!(judged.decision, Decision::Hold);
    assert!(
        judged.reasons[0].contains("may carry a path attached at more places"),
        "{judged:?}"
    );
}
