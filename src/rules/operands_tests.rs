use super::*;
use crate::rules::commands::{operand_writes, CommandRules};
use crate::rules::shell::analyse;
use crate::verdict::Decision;
use serde_json::json;

fn rules() -> CommandRules {
    CommandRules::from_json(
        "commands",
        &json!({"operandWrites": {"rm": "hold", "cp": "allow"}}),
    )
    .unwrap()
}

fn written(command: &str) -> (Vec<String>, Vec<RootOperand>) {
    let mut analysis = analyse(command);
    let roots = rules().add_operand_writes(&mut analysis);
    (analysis.writes.into_iter().map(|w| w.path).collect(), roots)
}

#[test]
fn every_operand_and_option_value_is_a_write_as_a_file_and_a_folder() {
    let (paths, roots) = written("rm -r build -- -x");
    assert_eq!(paths, ["build", "build/…", "-x", "-x/…"]);
    assert_eq!(roots.len(), 2);
    assert_eq!(roots[0].decision, Decision::Hold);
    let (paths, _) = written("cp --target-directory=/etc a");
    assert!(paths.contains(&"/etc".to_owned()), "{paths:?}");
    let (paths, _) = written("cp -vt/etc a");
    assert!(paths.contains(&"/etc".to_owned()), "{paths:?}");
    // A program the key does not name writes nothing here.
    assert!(written("ls -la /etc").0.is_empty());
}

#[test]
fn a_glob_operand_expands_and_a_huge_option_word_is_dynamic() {
    let mut analysis = analyse("rm .cl*");
    rules().add_operand_writes(&mut analysis);
    assert!(analysis.writes[0].expands);
    let mut analysis = analyse(&format!("rm -{} x", "v".repeat(300)));
    rules().add_operand_writes(&mut analysis);
    assert_eq!(analysis.dynamic.len(), 1);
}

#[test]
fn the_key_is_checked() {
    for bad in [
        json!([]),
        json!({"/bin/rm": "hold"}),
        json!({"rm": "maybe"}),
        json!({"": "hold"}),
    ] {
        assert!(
            operand_writes("commands.operandWrites", &bad).is_err(),
            "{bad}"
        );
    }
}

/// The tree copies `command` makes: (from, onto, sole).
fn trees(command: &str) -> Vec<(String, String, bool)> {
    let mut analysis = analyse(command);
    rules().add_operand_writes(&mut analysis);
    analysis
        .tree_copies
        .into_iter()
        .map(|copy| (copy.from, copy.onto, copy.sole))
        .collect()
}

/// One sole tree copy of `from` onto `onto`.
fn tree(from: &str, onto: &str) -> Vec<(String, String, bool)> {
    vec![(from.to_owned(), onto.to_owned(), true)]
}

#[test]
fn a_copy_of_a_folders_contents_is_a_tree_copy() {
    assert_eq!(trees("cp -r tpl/. ."), tree("tpl/.", "."));
    assert_eq!(trees("cp -a tpl/./ ~"), tree("tpl/./", "~"));
    assert_eq!(trees("cp -r . /tmp/x"), tree(".", "/tmp/x"));
    assert_eq!(trees("cp -r a/b/.. ."), tree("a/b/..", "."));
    // `-T` and every prefix getopt takes for `--no-target-directory`.
    for command in [
        "cp -rT tpl .",
        "cp -Tr tpl .",
        "cp -r --no-target-directory tpl .",
        "cp -r --no-t tpl .",
    ] {
        assert_eq!(trees(command), tree("tpl", "."), "{command}");
    }
    // `--no-` alone is ambiguous (getopt refuses it), and `--no-clobber` is another option.
    assert!(trees("cp -r --no-clobber tpl .").is_empty());
    // A folder copied by its own name lands under it, which the copy's writes judge.
    assert!(trees("cp -r tpl .").is_empty());
    assert!(trees("cp -r tpl/ .").is_empty());
    assert!(trees("mv tpl/. .").is_empty());
    // A tree copy in a longer command is not the only thing the command does.
    assert_eq!(
        trees("git pull && cp -r tpl/. ."),
        vec![("tpl/.".to_owned(), ".".to_owned(), false)]
    );
}

/// `cp -t DIR` names where every source lands (a review copied `tpl/.` onto the root as
/// `cp -rt. tpl/.`, which was read as a copy onto `tpl/.`), and a copy of several sources is not
/// the only thing its command does (an earlier source may replace a later one's link).
#[test]
fn a_target_directory_is_where_every_source_lands() {
    for command in [
        "cp -rt. tpl/.",
        "cp -r -t . tpl/.",
        "cp -r --target-directory=. tpl/.",
        "cp -r --target-directory . tpl/.",
        "cp -r --t=. tpl/.",
        "cp -rvt . tpl/.",
    ] {
        assert_eq!(trees(command), tree("tpl/.", "."), "{command}");
    }
    // `-S` takes a value that is no operand, and so do the long options whose value is required
    // (found by a third review: `auto` was taken for where the tree landed).
    assert_eq!(trees("cp -S .bak -r tpl/. out"), tree("tpl/.", "out"));
    for command in [
        "cp -r tpl/. . --sparse auto",
        "cp -r tpl/. . --sp auto",
        "cp -r tpl/. . --no-preserve all",
        "cp -r tpl/. . --no-p all",
    ] {
        assert_eq!(trees(command), tree("tpl/.", "."), "{command}");
    }
    assert_eq!(trees("cp --suffix .bak -r tpl/. out"), tree("tpl/.", "out"));
    assert_eq!(
        trees("cp -r a/. b/. ."),
        vec![
            ("a/.".to_owned(), ".".to_owned(), false),
            ("b/.".to_owned(), ".".to_owned(), false)
        ]
    );
}
