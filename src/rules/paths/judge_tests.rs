use super::*;
use serde_json::json;

use super::super::tests::{context, decide, decide_globbed, issue_rules};
use super::super::PathContext;

#[test]
fn a_wildcard_is_a_character_where_no_shell_expands_it() {
    // A file tool's path, or a quoted word: `.env*` is a file of that name.
    for path in [".env*", "~/.ss?/id_rsa", "/h*"] {
        assert_eq!(decide(path, false).decision, Decision::Allow, "{path}");
        assert_eq!(
            decide_globbed(path, false).decision,
            Decision::Hold,
            "{path}"
        );
    }
    assert_eq!(
        decide(".claud?/settings.json", true).decision,
        Decision::Allow
    );
    assert_eq!(
        decide_globbed(".claud?/settings.json", true).decision,
        Decision::Deny
    );
}

#[test]
fn a_path_under_an_unknown_home_may_be_any_file() {
    // As strict as `~/.ssh/id_rsa` and `~/.bashrc`, whatever follows the prefix.
    let judged = decide("~root/.ssh/id_rsa", false);
    assert_eq!(judged.decision, Decision::Hold, "{judged:?}");
    assert_eq!(
        judged.reasons,
        ["read of \"~root/.ssh/id_rsa\" cannot be placed: bash turns \"~root\" into a folder the gate cannot know (a user's home, $PWD, $OLDPWD or the directory stack), so it may match any glob of paths.rules[1]: hold"]
    );
    for path in ["~bob", "~bob/notes.txt", "~+/src", "~-", "~1"] {
        assert_eq!(decide(path, false).decision, Decision::Hold, "{path}");
    }
    let judged = decide("~bob/.bashrc", true);
    assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
    assert!(judged.reasons[0].contains("paths.rules[0]"), "{judged:?}");
    assert_eq!(decide("~bob/src/x.rs", true).decision, Decision::Deny);
    // Any glob, not only those from `~/`: `~me` may be the home folder that holds the root,
    // and a user's home may be any folder, the gate's own files' too.
    let mut relative_only = PathRules::from_json(
        "paths",
        &json!({"rules": [{"glob": [".claude/**"], "write": "deny"}]}),
    )
    .unwrap();
    let judged = relative_only.decide_path("~me/proj/.claude/settings.json", true, context());
    assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
    // A write counts as outside the root; a read outside the root gets no decision.
    let empty = PathRules::from_json("paths", &json!({"outsideRoot": "deny"})).unwrap();
    let judged = empty.decide_path("~bob/x", true, context());
    assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
    assert!(
        judged.reasons[0].contains("it counts as outside the root: paths.outsideRoot is deny"),
        "{judged:?}"
    );
    assert_eq!(
        empty.decide_path("~bob/x", false, context()).decision,
        Decision::Allow
    );
    assert_eq!(
        relative_only
            .decide_path("~bob/x", false, context())
            .decision,
        Decision::Allow
    );
    relative_only.protect(Path::new("/var/log/sc/audit.jsonl"), "audit log");
    let judged = relative_only.decide_path("~syslog/audit.jsonl", true, context());
    assert!(
        judged
            .reasons
            .iter()
            .any(|r| r.contains("the gate's own audit log")),
        "{judged:?}"
    );
    // With no home folder known, `~` itself cannot be placed either.
    let homeless = PathContext {
        home: None,
        ..context()
    };
    assert_eq!(
        issue_rules()
            .decide_path("~/.ssh/id_rsa", false, homeless)
            .decision,
        Decision::Hold
    );
    // An argument of a shell command, as the value of an option too.
    let rules = issue_rules();
    let placed = rules.place(context());
    let words = |text: &str| text.split(' ').map(str::to_owned).collect::<Vec<_>>();
    for command in ["cat ~root/.ssh/id_rsa", "grep --file=~bob/x y"] {
        let judged = rules
            .decide_arguments(&words(command), &|| command.to_owned(), true, &placed)
            .unwrap_or_else(|| panic!("{command}"));
        assert_eq!(judged.decision, Decision::Hold, "{command}");
    }
}

#[test]
fn a_wildcard_reads_the_folder_before_it() {
    for path in [
        "/home/*",
        "/h*",
        "/*",
        "~/*",
        "~/.aw*/credentials",
        "../../h?me",
    ] {
        assert_eq!(
            decide_globbed(path, false).decision,
            Decision::Hold,
            "{path}"
        );
    }
    for path in ["src/*.rs", "/etc/*.conf", "*", "[ab]", "{a,b}"] {
        assert_eq!(
            decide_globbed(path, false).decision,
            Decision::Allow,
            "{path}"
        );
    }
    // Past the bounds of the matching, a wildcard path may be any file.
    let long = format!("src/{}*", "x".repeat(4096));
    let many = format!("src/{}", "[".repeat(MAX_WILDCARDS + 1));
    for path in [long.as_str(), many.as_str()] {
        let judged = decide_globbed(path, false);
        assert_eq!(judged.decision, Decision::Hold, "{path}");
        assert!(judged.reasons[0].contains("may be any file"), "{judged:?}");
    }
    // A wildcard in the name of the working directory is not the call's.
    let rules = issue_rules();
    let odd = PathContext {
        cwd: Some(Path::new("/home/me/code/p[1]")),
        root: None,
        home: Some(Path::new("/home/me")),
        links: None,
    };
    let placed = Placed::of(odd);
    let decide = |path: &str| {
        rules
            .judge_with(path, false, true, None, &placed, true, true)
            .decision
    };
    assert_eq!(decide("src"), Decision::Allow);
    assert_eq!(decide("."), Decision::Allow);
    assert_eq!(decide("../*"), Decision::Allow);
    assert_eq!(decide("../../*"), Decision::Hold);
    assert_eq!(decide("../.."), Decision::Hold);
}

#[test]
fn a_path_is_judged_where_its_links_lead_too_and_the_strictest_wins() {
    use super::super::{Leads, Links};
    use std::path::PathBuf;
    let rules = issue_rules();
    // What a door that sees the file system answers: `/w/proj/cloud` is a link to ~/.aws,
    // `/w/proj/conf` one to the project's .claude, `/w/proj/many` a folder too big to list.
    let leads = |path: &Path, wild: bool| -> Leads {
        let text = path.to_string_lossy();
        if let Some(rest) = text.strip_prefix("/w/proj/cloud/") {
            return Leads::Elsewhere(vec![PathBuf::from("/home/me/.aws").join(rest)]);
        }
        if let Some(rest) = text.strip_prefix("/w/proj/conf/") {
            return Leads::Elsewhere(vec![PathBuf::from("/w/proj/.claude").join(rest)]);
        }
        if wild && text.starts_with("/w/proj/many/") {
            return Leads::Unknown("too many names".to_owned());
        }
        Leads::Elsewhere(Vec::new())
    };
    let with_links = PathContext {
        links: Some(Links {
            leads: &leads,
            present: &|_, _| true,
            tree: &|_| Ok(Vec::new()),
        }),
        ..context()
    };
    let placed = Placed::of(with_links);
    let judge = |path: &str, write: bool, expands: bool| {
        rules.judge_with(path, write, true, Some("cat"), &placed, true, expands)
    };

    let read = judge("cloud/credentials", false, false);
    assert_eq!(read.decision, Decision::Hold, "{read:?}");
    assert_eq!(
        read.reasons,
        ["\"/w/proj/cloud/credentials\" leads through a symbolic link to \"/home/me/.aws/credentials\": read of \"/home/me/.aws/credentials\" by cat matches paths.rules[1] (glob ~/.aws/**): hold"]
    );
    let write = judge("conf/settings.json", true, false);
    assert_eq!(write.decision, Decision::Deny, "{write:?}");
    assert!(write.reasons[0].contains("glob .claude/**"), "{write:?}");
    let unknown = judge("many/*", false, true);
    assert_eq!(unknown.decision, Decision::Hold, "{unknown:?}");
    assert!(
        unknown.reasons[0].contains("may lead anywhere through symbolic links: too many names"),
        "{unknown:?}"
    );
    // A path with no link on its way is judged as written, and a stricter answer as written
    // is kept.
    assert_eq!(judge("src/main.rs", false, false).decision, Decision::Allow);
    assert_eq!(judge(".claude/x", true, false).decision, Decision::Deny);
    // Without a door that sees the file system, the same words are judged by their text.
    let plain = Placed::of(context());
    let read = rules.judge_with("cloud/credentials", false, true, None, &plain, true, false);
    assert_eq!(read.decision, Decision::Allow);
}
