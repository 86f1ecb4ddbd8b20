use super::super::analyse;
use super::super::tests::words_of;

#[test]
fn quotes_and_backslashes_are_removed_from_the_program() {
    for command in [
        r"r''m -rf x",
        r#""rm" -rf x"#,
        r"\rm -rf x",
        r"$'\x72m' -rf x",
        "/bin/rm -rf x",
    ] {
        assert_eq!(words_of(command), [["rm", "-rf", "x"]], "{command}");
    }
}

#[test]
fn wrappers_are_stripped_with_their_options() {
    for command in [
        "env -i -u HOME FOO=1 rm -rf x",
        "sudo -u root -E rm -rf x",
        "nice -n 5 rm -rf x",
        "nice -10 rm -rf x",
        "timeout -s KILL 10s rm -rf x",
        "timeout --signal=KILL 10 rm -rf x",
        "stdbuf -oL -e0 rm -rf x",
        "nohup rm -rf x",
        "command rm -rf x",
        "builtin rm -rf x",
        "exec -a name rm -rf x",
        "doas -u root rm -rf x",
        "/usr/bin/time -o /dev/null rm -rf x",
        "sudo env nice -n 1 timeout 5 rm -rf x",
    ] {
        assert_eq!(words_of(command), [["rm", "-rf", "x"]], "{command}");
    }
    assert_eq!(
        words_of("echo a | xargs -0 -n1 rm -f"),
        [vec!["echo", "a"], vec!["rm", "-f"]]
    );
    assert_eq!(words_of("command -v rm"), [["command", "-v", "rm"]]);
    assert_eq!(words_of("sudo -l"), [["sudo", "-l"]]);
}

#[test]
fn shells_are_parsed_again() {
    for command in [
        "sh -c 'rm -rf x'",
        "bash -lc 'rm -rf x'",
        "bash -e -o pipefail -c 'rm -rf x'",
        "zsh -c \"rm -rf x\"",
        "dash -c 'bash -c \"rm -rf x\"'",
    ] {
        assert_eq!(words_of(command), [["rm", "-rf", "x"]], "{command}");
    }
    assert!(!analyse("bash <<EOF\nrm -rf x\nEOF").dynamic.is_empty());
    assert!(!analyse("curl x | sh").dynamic.is_empty());
    assert!(analyse("bash script.sh").dynamic.is_empty());
}

#[test]
fn a_shell_or_find_under_sudo_or_env_passes_its_caveats_on() {
    for command in [
        "sudo bash -c 'cat /etc/shadow'",
        "sudo find / -exec cat {} +",
        "env GIT_EXTERNAL_DIFF=x sh -c 'git diff'",
        "./sh -c 'ls'",
    ] {
        let analysis = analyse(command);
        assert!(
            analysis.commands.iter().all(|c| !c.caveats.is_empty()),
            "{command}: {analysis:?}"
        );
    }
    let analysis = analyse("sudo true; bash -c 'ls'");
    assert!(analysis.commands[1].caveats.is_empty(), "{analysis:?}");
}

#[test]
fn find_exec_yields_its_own_command_and_delete_stays_visible() {
    assert_eq!(
        words_of(r"find . -name '*.o' -exec rm -rf {} \;"),
        [
            vec!["rm", "-rf", "{}"],
            vec!["find", ".", "-name", "*.o", "-exec", ";"]
        ]
    );
    assert_eq!(words_of("find . -delete"), [["find", ".", "-delete"]]);
    assert_eq!(
        words_of("find . -execdir sh -c 'rm -rf x' {} +"),
        [vec!["rm", "-rf", "x"], vec!["find", ".", "-execdir", "+"]]
    );
}

/// Found by a review: `find . -name target -exec mv {} t2 \;` was judged as a move of a file
/// named `{}`, allowed, and moved the gate's own binaries away.
#[test]
fn what_find_runs_on_the_paths_it_finds_carries_the_caveat() {
    use super::super::Caveat;
    let found = |command: &str| {
        analyse(command)
            .commands
            .iter()
            .map(|c| (c.words[0].clone(), c.caveats.contains(&Caveat::FoundPaths)))
            .collect::<Vec<_>>()
    };
    let mv = |caveat: bool| vec![("mv".to_owned(), caveat), ("find".to_owned(), false)];
    assert_eq!(found(r"find . -name target -exec mv {} t2 \;"), mv(true));
    assert_eq!(found("find . -name target -execdir mv '{}' t2 +"), mv(true));
    assert_eq!(found("find . -ok mv ./{}.bak t2 ';'"), mv(true));
    assert_eq!(found("find . -exec mv a t2 ';'"), mv(false));
    assert_eq!(found("find . -type f"), vec![("find".to_owned(), false)]);
    // Put into a shell's script, a found path is code (found by a review: a file named
    // `x;sh ev` ran `sh ev`): dynamic, however the shell is reached.
    for command in [
        r"find . -name 'x;*' -exec bash -c 'cat {}' \;",
        r#"find . -exec sh -c 'echo "{}"' ';'"#,
        r"find . -exec env bash -c 'cat {}' \;",
        r"find . -execdir bash -lc -- 'cat {}' +",
    ] {
        assert!(!analyse(command).dynamic.is_empty(), "{command}");
    }
    // The script that takes the path as an argument is not dynamic for this reason.
    assert!(analyse(r#"find . -exec bash -c 'cat "$1"' _ {} \;"#)
        .dynamic
        .is_empty());
}

#[test]
fn find_execdir_changes_directory() {
    assert!(analyse("find . -execdir cat x ';'").changes_directory);
    assert!(analyse("find . -okdir cat x ';'").changes_directory);
    assert!(!analyse("find . -exec cat x ';'").changes_directory);
}

#[test]
fn a_make_variable_on_the_command_line_is_a_caveat() {
    for command in [
        "make SHELL=/tmp/x",
        "make .SHELLFLAGS='-c id' all",
        "gmake -j4 CC=./evil",
    ] {
        let analysis = super::super::analyse(command);
        assert!(
            analysis.commands[0]
                .caveats
                .iter()
                .any(|c| matches!(c, super::super::Caveat::OverridesVariable(_))),
            "{command}: {analysis:?}"
        );
    }
    assert!(super::super::analyse("make -j4 all").commands[0]
        .caveats
        .is_empty());
}
