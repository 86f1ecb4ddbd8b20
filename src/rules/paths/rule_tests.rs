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
