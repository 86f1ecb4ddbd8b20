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
