use super::*;
use serde_json::json;

use super::super::tests::{context, issue_rules};

#[test]
fn load_errors_name_the_glob() {
    let err = |v: Value| PathRules::from_json("paths", &v).unwrap_err().to_string();
    let e = err(json!({"rules": [{"glob": ["a/[b"], "write": "deny"}]}));
    assert!(
        e.starts_with("key `paths.rules[0].glob[0]`: the glob \"a/[b\" does not compile"),
        "{e}"
    );
    let e = err(json!({"rules": [{"glob": ["x"]}]}));
    assert!(e.contains("needs `read`, `write`"), "{e}");
    let e = err(json!({"rules": [{"glob": ["x"], "wirte": "deny"}]}));
    assert!(e.contains("did you mean `write`?"), "{e}");
    let e = err(json!({"outsideroot": "hold"}));
    assert!(e.contains("did you mean `outsideRoot`?"), "{e}");
    let e = err(json!({"rules": [{"glob": ["../x"], "write": "deny"}]}));
    assert!(e.contains("`..`"), "{e}");
}

#[test]
fn protected_files_deny_writes() {
    let mut rules = issue_rules();
    rules.protect(Path::new("/etc/sc/policy.json"), "policy");
    let judged = rules.decide_path("/etc/sc/policy.json", true, context());
    assert_eq!(judged.decision, Decision::Deny);
    assert!(
        judged.reasons[0].contains("the gate's own policy"),
        "{judged:?}"
    );
}

#[test]
fn git_files_deny_writes_to_every_file_by_which_git_finds_its_config() {
    let rules = PathRules::from_json(
        "paths",
        &json!({"tools": {"Write": "file_path"}, "writeTools": ["Write"], "gitFiles": "deny", "outsideRoot": "allow"}),
    )
    .unwrap();
    for path in [
        "/home/u/project/.git",
        "/home/u/project/.git/config",
        "/home/u/project/.git/config.worktree",
        "/home/u/project/.git/commondir",
        "/home/u/project/.git/hooks/pre-commit",
        "/home/u/project/.git/info/attributes",
        "/home/u/project/.git/objects/info/alternates",
        "/home/u/project/.git/modules/a/b/hooks/post-checkout",
        "/home/u/project/.git/worktrees/w/commondir",
        "/home/u/project/sub/.git",
        "/elsewhere/.git/config",
    ] {
        let judged = rules.decide_path(path, true, context());
        assert_eq!(judged.decision, Decision::Deny, "{path}: {judged:?}");
        assert!(judged.reasons[0].contains("paths.gitFiles"), "{judged:?}");
        // Reads are not this key's concern.
        let read = rules.decide_path(path, false, context());
        assert_eq!(read.decision, Decision::Allow, "{path}: {read:?}");
    }
    for path in [
        "/home/u/project/.git/index",
        "/home/u/project/.git/objects/ab/cdef",
        "/home/u/project/.git/refs/heads/main",
        "/home/u/project/src/config",
        "/home/u/project/hooks/x",
    ] {
        let judged = rules.decide_path(path, true, context());
        assert_eq!(judged.decision, Decision::Allow, "{path}: {judged:?}");
    }
    let err = PathRules::from_json("paths", &json!({"gitFiles": "no"})).unwrap_err();
    assert!(err.to_string().contains("paths.gitFiles"), "{err}");
}

/// A literal glob matches exactly the paths the glob set it replaces matches: the same texts,
/// escapes, trees and near misses, each against globset itself.
#[test]
fn literal_globs_match_as_their_glob_sets_do() {
    let patterns = [
        ".ssh",
        ".ssh/**",
        "/etc/sc/policy.json",
        "/etc/sc/policy.json/**",
        "a[*]b",
        "a[*]b/**",
        "we\\ird/x[[]y[]]z[{]q[}]",
        "dot.d/sub dir/**",
        ".config/gh/hosts.yml",
    ];
    let paths = [
        ".ssh",
        ".ssh/id_rsa",
        ".ssh/a/b",
        ".sshx",
        ".ssh/",
        ".sshx/id",
        "x/.ssh",
        "/etc/sc/policy.json",
        "/etc/sc/policy.json/x",
        "/etc/sc/policy.jsonx",
        "/etc/sc",
        "a*b",
        "axb",
        "a*b/c",
        "weird/x[y]z{q}",
        "we\\ird/x[y]z{q}",
        "dot.d/sub dir/f",
        "dotxd/sub dir/f",
        ".config/gh/hosts.yml",
        ".config/gh/hosts.ymlx",
        "",
    ];
    for pattern in patterns {
        let literal = LiteralGlob::of(Base::Root, pattern, 0)
            .unwrap_or_else(|| panic!("{pattern} is a literal"));
        let set = GlobSetBuilder::new()
            .add(glob(pattern).unwrap())
            .build()
            .unwrap();
        for path in paths {
            assert_eq!(
                literal.matches(Path::new(path)),
                set.is_match(Path::new(path)),
                "{pattern} against {path:?}"
            );
        }
    }
    for wild in [
        "*.key", ".ssh/*", "a?", "{a,b}", "[!a]", "[ab]", "a/**/b", "**/x", "[^a]",
    ] {
        assert_eq!(LiteralGlob::of(Base::Root, wild, 0), None, "{wild}");
    }
    assert_eq!(LiteralGlob::of(Base::Anywhere, "x", 0), None);
    // `[/]` matches no path under globset (found by a review: the literal read it as `/`).
    assert_eq!(LiteralGlob::of(Base::Root, "a[/]b", 0), None);
    let set = GlobSetBuilder::new()
        .add(glob("a[/]b").unwrap())
        .build()
        .unwrap();
    assert!(!set.is_match(Path::new("a/b")));
}

/// The rules the gate makes from its sandbox places and protected files build no glob set.
#[test]
fn sandbox_places_and_protected_files_build_no_glob_set() {
    let mut rules = PathRules::default();
    rules.protect(Path::new("/etc/sc/policy.json"), "policy");
    rules.protect(Path::new("/var/log/s*c/audit[1].jsonl"), "audit log");
    for rule in &rules.rules {
        assert_eq!(rule.literals.len(), 2, "{:?}", rule.globs);
        assert!(rule.compiled().as_ref().unwrap().is_empty());
    }
    let judged = rules.decide_path("/var/log/s*c/audit[1].jsonl", true, context());
    assert_eq!(judged.decision, Decision::Deny);
    let judged = rules.decide_path("/var/log/sXc/audit1.jsonl", true, context());
    assert_ne!(judged.decision, Decision::Deny, "{:?}", judged.reasons);
}
