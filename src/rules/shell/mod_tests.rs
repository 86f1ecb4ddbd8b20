use super::*;

pub(super) fn words_of(command: &str) -> Vec<Vec<String>> {
    analyse(command)
        .commands
        .into_iter()
        .map(|c| c.words)
        .collect()
}

#[test]
fn openers_count_brackets_and_keywords_anywhere() {
    assert_eq!(openers("ls -la"), 0);
    assert_eq!(openers("if x; then ( a ) fi"), 2);
    assert_eq!(openers("diff --format {} `x` [y]"), 6);
    assert_eq!(openers("functions whileuntil casecoproc select"), 6);
    assert_eq!(openers("i\\\nf true; then ls; fi"), 1);
}

#[test]
fn dynamic_shapes_are_reported() {
    for command in [
        "echo $(whoami)",
        "echo `whoami`",
        "$CMD -rf x",
        "r* -rf x",
        "eval 'rm -rf x'",
        "source ./x.sh",
        ". ./x.sh",
        "diff <(ls a) <(ls b)",
        "bash <<< 'rm -rf x'",
        "echo 'unterminated",
        "x='a[$(id)]'; echo $((x))",
        "echo ${!name}",
        "[[ $n -gt 3 ]]",
        "echo > \"$file\"",
        "trap 'rm -rf x' EXIT",
        "cat <<EOF\n$(id)\nEOF",
    ] {
        assert!(!analyse(command).dynamic.is_empty(), "{command}");
    }
    for command in [
        "echo $((1 + 2))",
        "cat <<'EOF'\n$(id)\nEOF",
        "[[ -f x ]] && ls",
        "git status",
    ] {
        assert!(
            analyse(command).dynamic.is_empty(),
            "{command}: {:?}",
            analyse(command)
        );
    }
}

#[test]
fn negations_in_a_test_count_as_openers() {
    let deep = format!("[[ {}-e x ]]", "! ".repeat(3000));
    assert!(openers(&deep) >= 3000);
    let analysis = analyse(&deep);
    assert!(!analysis.dynamic.is_empty(), "{analysis:?}");
}

#[test]
fn bash_syntax_a_posix_sh_reads_otherwise_is_marked_and_dynamic_under_sh_c() {
    // Marked where it stands, for a door whose agent may run another shell (Codex).
    for command in [
        r"echo $'\' ; echo pwned >> .codex/config.toml ; #'",
        "(( 1 > .codex/config.toml ))",
        "((rm -rf x))",
        "[[ x > .codex/config.toml ]]",
        "[[ a < ~/.ssh/id_rsa ]]",
        "[[ -n x || touch ]]",
        // A review's: `|` in a `=~` pattern is a pipe to dash, `&&` a list after `!`.
        "[[ x =~ x|tee${IFS}.claude/settings.json ]]",
        "! [[ -z x && tee${IFS}.claude/settings.json ]]",
        "[[ -f x ]]",
    ] {
        assert!(
            !analyse(command).other_shells.is_empty(),
            "{command}: not marked"
        );
    }
    for command in ["echo '$x' \"$'y'\"", "echo $((1 + 2))", "ls -la"] {
        assert!(
            analyse(command).other_shells.is_empty(),
            "{command}: {:?}",
            analyse(command).other_shells
        );
    }
    // Under `sh -c` (dash on Debian) it is dynamic for every door; under `bash -c` it is not.
    let hidden = r#"sh -c "echo \$'\\' ; echo pwned >> .claude/settings.json ; #'""#;
    let analysis = analyse(hidden);
    assert!(
        analysis
            .dynamic
            .iter()
            .any(|part| part.why.contains("POSIX sh")),
        "{analysis:?}"
    );
    for shell in ["dash", "/bin/sh", "ash"] {
        let command = format!("{shell} -c '((rm -rf x))'");
        assert!(
            analyse(&command)
                .dynamic
                .iter()
                .any(|part| part.why.contains("POSIX sh")),
            "{command}"
        );
    }
    let bash = r#"bash -c "echo \$'\\' ; echo fine""#;
    assert!(
        !analyse(bash)
            .dynamic
            .iter()
            .any(|part| part.why.contains("POSIX sh")),
        "{bash}"
    );
}
