use super::*;
use serde_json::json;
use std::path::Path;

pub(super) fn issue_rules() -> PathRules {
    PathRules::from_json(
        "paths",
        &json!({
          "tools": {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
                    "NotebookEdit": "notebook_path", "Read": "file_path"},
          "writeTools": ["Write", "Edit", "MultiEdit", "NotebookEdit"],
          "rules": [
            {"glob": [".claude/**", ".git/hooks/**", ".github/workflows/**", "~/.bashrc"], "write": "deny"},
            {"glob": ["**/.env", "~/.ssh/**", "~/.aws/**"], "read": "hold"}
          ],
          "outsideRoot": "hold"
        }),
    )
    .unwrap()
}

pub(super) fn context() -> PathContext<'static> {
    PathContext {
        cwd: Some(Path::new("/w/proj")),
        root: None,
        home: Some(Path::new("/home/me")),
        links: None,
    }
}

pub(super) fn decide(path: &str, write: bool) -> PathJudgement {
    issue_rules().decide_path(path, write, context())
}

/// `cat WORD` in a command that changes directory (its relative paths cannot be placed).
pub(super) fn read_unplaced(rules: &PathRules, placed: &Placed, word: &str) -> Option<Decision> {
    rules
        .decide_arguments(
            &["cat".to_owned(), word.to_owned()],
            &|| format!("cat {word}"),
            false,
            placed,
        )
        .map(|judged| judged.decision)
}

/// A path as a shell word whose wildcards bash expands.
pub(super) fn decide_globbed(path: &str, write: bool) -> PathJudgement {
    let placed = Placed::of(context());
    issue_rules().judge_with(path, write, true, None, &placed, true, true)
}

#[test]
fn the_issue_rules_decide() {
    let judged = decide(".claude/settings.json", true);
    assert_eq!(judged.decision, Decision::Deny);
    assert_eq!(
        judged.reasons,
        ["write of \"/w/proj/.claude/settings.json\" matches paths.rules[0] (glob .claude/**): deny"]
    );
    assert_eq!(
        decide("src/../.claude/settings.json", true).decision,
        Decision::Deny
    );
    assert_eq!(
        decide("/w/proj/.git/hooks/pre-commit", true).decision,
        Decision::Deny
    );
    assert_eq!(decide("~/.bashrc", true).decision, Decision::Deny);
    assert_eq!(decide("/home/me/.bashrc", true).decision, Decision::Deny);
}

#[test]
fn reads_writes_and_the_root() {
    assert_eq!(
        decide(".claude/settings.json", false).decision,
        Decision::Allow
    );
    assert_eq!(decide("config/.env", false).decision, Decision::Hold);
    assert_eq!(decide(".env", false).decision, Decision::Hold);
    assert_eq!(decide("/elsewhere/.env", false).decision, Decision::Hold);
    assert_eq!(decide("~/.ssh/id_rsa", false).decision, Decision::Hold);
    assert_eq!(decide("src/main.rs", true).decision, Decision::Allow);
    assert_eq!(decide("src/main.rs", false).decision, Decision::Allow);
    let outside = decide("../other/x", true);
    assert_eq!(outside.decision, Decision::Hold);
    assert!(
        outside.reasons[0].contains("outside the root \"/w/proj\""),
        "{outside:?}"
    );
    assert_eq!(decide("/etc/passwd", true).decision, Decision::Hold);
    assert_eq!(decide("a\0b", false).decision, Decision::Deny);
    let no_place = issue_rules().decide_path(".claude/x", true, PathContext::default());
    assert_eq!(
        no_place.decision,
        Decision::Deny,
        "globs are tried as given"
    );
    let no_place = issue_rules().decide_path("notes.txt", true, PathContext::default());
    assert_eq!(no_place.decision, Decision::Hold);
    let rooted = issue_rules().decide_path(
        "notes.txt",
        true,
        PathContext {
            cwd: Some(Path::new("/w/proj/sub")),
            root: Some(Path::new("/w/proj")),
            home: None,
            links: None,
        },
    );
    assert_eq!(rooted.decision, Decision::Allow, "{rooted:?}");
}

#[test]
fn calls_check_their_argument() {
    let rules = issue_rules();
    let args = |v: Value| v.as_object().unwrap().clone();
    assert!(rules
        .decide_call("Bash", &args(json!({})), context())
        .is_none());
    let missing = rules
        .decide_call("Write", &args(json!({})), context())
        .unwrap();
    assert_eq!(missing.decision, Decision::Deny);
    assert!(missing.reasons[0].starts_with("malformed call"));
    let number = rules
        .decide_call("Write", &args(json!({"file_path": 7})), context())
        .unwrap();
    assert_eq!(number.decision, Decision::Deny);
    let notebook = rules
        .decide_call(
            "NotebookEdit",
            &args(json!({"notebook_path": "/w/proj/.github/workflows/ci.yml"})),
            context(),
        )
        .unwrap();
    assert_eq!(notebook.decision, Decision::Deny);
}
