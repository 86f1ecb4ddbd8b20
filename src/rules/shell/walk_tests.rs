use super::super::text::plain_command;
use super::super::{analyse, MAX_SIMPLE_COMMANDS};
use super::*;

#[test]
fn many_parentheses_are_dynamic_without_the_exponential_grammar() {
    for text in [
        format!("( (\\{}\r\ncifh$f x ) )", "(".repeat(110)),
        "( ".repeat(40),
        format!("{}x{}", "( ".repeat(13), " )".repeat(13)),
    ] {
        let analysis = analyse(&text);
        assert!(
            analysis
                .dynamic
                .iter()
                .any(|d| d.why.contains("parentheses")),
            "{analysis:?}"
        );
    }
    let analysis = analyse("(cd a && make) ; (cd b && make) ; f() { ls; }");
    assert!(analysis.dynamic.is_empty(), "{analysis:?}");
}

/// The fuzz target's find: brush-parser's tokenizer unwraps a `None` on this text. The
/// panic is caught and the command is dynamic.
#[test]
fn a_panic_in_the_parser_is_a_dynamic_command() {
    let text = include_str!("../../../testdata/commands/brush-panic.txt");
    let analysis = analyse(text);
    assert!(
        analysis.dynamic.iter().any(|d| d.why == PARSER_FAILED),
        "{analysis:?}"
    );
}

#[test]
fn nesting_and_counts_are_bounded() {
    let deep = format!("{}ls;{}", "{ ".repeat(9), " }".repeat(9));
    assert!(!analyse(&deep).dynamic.is_empty());
    let shallow = format!("{}ls;{}", "{ ".repeat(8), " }".repeat(8));
    assert!(
        analyse(&shallow).dynamic.is_empty(),
        "{:?}",
        analyse(&shallow)
    );
    let many = vec!["ls"; 65].join("; ");
    let analysis = analyse(&many);
    assert_eq!(analysis.commands.len(), MAX_SIMPLE_COMMANDS);
    assert!(!analysis.dynamic.is_empty());
    assert!(analyse(&vec!["ls"; 64].join("; ")).dynamic.is_empty());
}

#[test]
fn spaced_parentheses_are_judged_as_subshells_too() {
    let analysis = analyse("( ( rm -rf x ) )");
    assert!(
        analysis
            .commands
            .iter()
            .any(|c| c.words == ["rm", "-rf", "x"]),
        "{analysis:?}"
    );
}

/// Every shape the parser recurses on, nested as deep as [`MAX_OPENERS`] lets a command
/// be, is read on a small thread stack without overflowing it (an overflow aborts the test
/// binary), and whatever is past the limits is dynamic.
#[test]
fn deep_nesting_never_overflows_a_small_stack() {
    let n = MAX_OPENERS - 2;
    let shapes: Vec<String> = vec![
        format!("{}ls;{}", "{ ".repeat(n), " }".repeat(n)),
        format!("{}ls{}", "(".repeat(n), ")".repeat(n)),
        format!(
            "{}ls{}",
            "if true; then ".repeat(n / 2),
            "; fi".repeat(n / 2)
        ),
        format!(
            "{}ls{}",
            "while ls; do ".repeat(n / 2),
            "; done".repeat(n / 2)
        ),
        format!("{}ls{}", "f() { ".repeat(n / 2), "; }".repeat(n / 2)),
        format!("echo {}x{}", "$(echo ".repeat(n / 2), ")".repeat(n / 2)),
        format!("echo {}x{}", "${a:-".repeat(n), "}".repeat(n)),
        format!("echo {}x{}", "\"$(echo ".repeat(n / 2), ")\"".repeat(n / 2)),
        format!("echo $(({}1{}))", "(".repeat(n), ")".repeat(n)),
        format!(
            "{}ls{}",
            "case x in x) ".repeat(n / 2),
            ";; esac".repeat(n / 2)
        ),
        format!("{}ls", "! ".repeat(4 * n)),
        format!("[[ {}x{} ]]", "( ".repeat(n), " )".repeat(n)),
        format!("echo {}", "\\`".repeat(4 * n)),
        format!("{}ls", "coproc ".repeat(n)),
        format!("{}ls{}", "{ ".repeat(4 * n), " }".repeat(4 * n)),
        "(".repeat(MAX_COMMAND_BYTES + 1),
    ];
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            for shape in &shapes {
                let analysis = analyse(shape);
                assert!(
                    !analysis.dynamic.is_empty() || analysis.commands.len() < 3,
                    "{}: {analysis:?}",
                    &shape[..40.min(shape.len())]
                );
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

/// A plain command reads as brush-parser reads it, and a text that is not plain goes to the
/// parser: the pack's examples, wrappers the normalizer strips, keywords, and near misses.
#[test]
fn plain_commands_read_as_the_parser_reads_them() {
    let pack: serde_json::Value =
        serde_json::from_str(include_str!("../../../policies/claude-code.json")).unwrap();
    let mut texts: Vec<String> = pack["commands"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|rule| {
            ["match", "notMatch"]
                .iter()
                .flat_map(|key| rule[key].as_array().cloned().unwrap_or_default())
                .filter_map(|example| example.as_str().map(str::to_owned))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(texts.len() > 100, "{}", texts.len());
    texts.extend(
        [
            "git status",
            "  git\tstatus  ",
            "sudo -u root rm -rf /",
            "env -C /tmp ls",
            "xargs rm",
            "sh -c ls",
            "bash -c x",
            "find . -name x -exec rm",
            "tee out.txt",
            "time -o x ls",
            "time ls",
            "if",
            "for x in a",
            "done",
            "x=1 ls",
            "ls # comment",
            "./build.sh",
            "/usr/bin/git status",
            "target/debug/x --flag",
            "nice -n 5 make",
            "timeout 5 cargo test",
            "command -v git",
            "exec ls",
            "stdbuf -oL ls",
            "doas ls",
            "make CC:x",
            "git -C ../other status",
            "cd .. -",
            "a%b c,d e:f",
            "",
            "   ",
            "-",
            "1",
        ]
        .map(str::to_owned),
    );
    let mut plain = 0;
    for text in &texts {
        let mut walker = Walker::default();
        walker.parse_with_brush(text, 0);
        assert_eq!(analyse(text), walker.finish(), "{text:?}");
        plain += usize::from(plain_command(text).is_some());
    }
    // Most of the pack's examples take the fast path, so it is what this test checks.
    assert!(plain * 2 > texts.len(), "{plain} of {}", texts.len());
    for text in [
        "if x", "time ls", "for a", "x=1 ls", "ls #x", "ls\nrm", "a;b", "ls > x", "",
    ] {
        assert!(plain_command(text).is_none(), "{text:?}");
    }
}
