use std::path::{Path, PathBuf};

use super::super::tests::{context, issue_rules};
use super::super::{Leads, Links, PathContext, Tree};
use super::*;

fn copy(from: &str, onto: &str) -> TreeCopy {
    TreeCopy {
        from: from.to_owned(),
        onto: onto.to_owned(),
        by: format!("cp -r {from} {onto}"),
        placeable: true,
        sole: true,
    }
}

/// Decides `copy` with a door whose links lead as `leads` says and whose trees `tree` lists.
fn decide_with_door(
    copy: &TreeCopy,
    leads: &dyn Fn(&Path, bool) -> Leads,
    tree: &Tree,
) -> PathJudgement {
    let context = PathContext {
        links: Some(Links {
            leads,
            present: &|_, _| true,
            tree,
        }),
        ..context()
    };
    issue_rules().decide_tree_copy(copy, &Placed::of(context))
}

/// Decides `copy` where the door lists `tpl` (and only it) as holding `files`.
fn decide_listed(copy: &TreeCopy, files: &[&str]) -> PathJudgement {
    let tree = |from: &Path| {
        if crate::rules::paths::normalized(from) == Path::new("/w/proj/tpl") {
            Ok(files.iter().map(PathBuf::from).collect())
        } else {
            Err("no such folder".to_owned())
        }
    };
    decide_with_door(copy, &|_, _| Leads::Elsewhere(Vec::new()), &tree)
}

#[test]
fn each_file_of_a_copied_tree_is_judged_where_it_lands() {
    let judged = decide_listed(
        &copy("tpl/.", "."),
        &["README.md", "src/main.rs", ".claude/settings.json"],
    );
    assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
    assert_eq!(
        judged.reasons,
        ["\"tpl/.\" holds \".claude/settings.json\", which the copy writes: write of \"/w/proj/.claude/settings.json\" by cp -r tpl/. . matches paths.rules[0] (glob .claude/**): deny"]
    );
    // Onto the home, by its files' own names there.
    let judged = decide_listed(&copy("tpl/.", "~"), &["notes", ".bashrc"]);
    assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
    assert!(judged.reasons[0].contains("glob ~/.bashrc"), "{judged:?}");
    // A tree of ordinary files is an ordinary copy.
    let judged = decide_listed(&copy("tpl/.", "."), &["README.md", "src/main.rs"]);
    assert_eq!(judged.decision, Decision::Allow, "{judged:?}");
}

#[test]
fn a_tree_that_cannot_be_listed_may_write_any_file_where_the_rules_places_are() {
    // The door could not list it: onto the root, any file of it.
    let judged = decide_listed(&copy("gone/.", "."), &[]);
    assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
    assert!(
        judged.reasons[0].starts_with("write of \"/w/proj/…\" by cp -r gone/. . receives the contents of \"gone/.\", which could not be listed: no such folder, so it may match any glob of paths.rules[0]"),
        "{judged:?}"
    );
    // Onto a folder above the root too; onto a folder of the project, only its name counts
    // (judged with the copy's other writes).
    assert_eq!(
        decide_listed(&copy("gone/.", "/w"), &[]).decision,
        Decision::Deny
    );
    assert_eq!(
        decide_listed(&copy("gone/.", "sub"), &[]).decision,
        Decision::Allow
    );
    // A command that may change the tree before the copy reads it is not judged by a listing.
    let mut later = copy("tpl/.", ".");
    later.sole = false;
    let judged = decide_listed(&later, &["README.md"]);
    assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
    assert!(judged.reasons[0].contains("which the rest of the command (or an earlier source of the copy) may change before the copy"));
    // A copy whose folders cannot be placed may land anywhere.
    let mut unplaced = copy("tpl/.", ".");
    unplaced.placeable = false;
    assert_eq!(
        decide_listed(&unplaced, &["README.md"]).decision,
        Decision::Deny
    );
    assert_eq!(
        decide_listed(&copy("tpl/.", "~bob"), &["x"]).decision,
        Decision::Deny
    );
}

#[test]
fn without_a_door_that_sees_the_files_a_copy_onto_the_root_may_write_any() {
    let placed = Placed::of(context());
    let rules = issue_rules();
    let judged = rules.decide_tree_copy(&copy("tpl/.", "."), &placed);
    assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
    assert!(
        judged.reasons[0]
            .contains("receives the contents of \"tpl/.\", which the gate cannot list"),
        "{judged:?}"
    );
    assert_eq!(
        rules
            .decide_tree_copy(&copy("tpl/.", "out"), &placed)
            .decision,
        Decision::Allow
    );
}

/// A review copied a tree too big to list onto a link to the root (`dot -> .`): where the
/// destination leads counts, as where it is written does.
#[test]
fn an_unlisted_tree_onto_a_link_to_the_root_may_write_any_file_there() {
    let leads = |path: &Path, _: bool| {
        if path == Path::new("/w/proj/dot") {
            Leads::Elsewhere(vec![PathBuf::from("/w/proj")])
        } else {
            Leads::Elsewhere(Vec::new())
        }
    };
    let tree = |_: &Path| Err("it holds over 10000 entries".to_owned());
    let judged = decide_with_door(&copy("big/.", "dot"), &leads, &tree);
    assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
    assert_eq!(
        decide_with_door(&copy("big/.", "out"), &leads, &tree).decision,
        Decision::Allow
    );
}
