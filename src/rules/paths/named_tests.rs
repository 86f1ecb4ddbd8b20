use super::*;
use crate::rules::paths::tests::context;
use serde_json::json;

fn rules() -> PathRules {
    PathRules::from_json(
        "paths",
        &json!({
          "tools": {"Read": "file_path", "Write": "file_path"},
          "writeTools": ["Write", "mcp__filesystem__write_file", "mcp__filesystem__move_file"],
          "pathArguments": {"mcp__filesystem__*": ["path", "paths", "source", "destination"]},
          "rules": [
            {"glob": ["~/.zshrc", ".claude/**"], "write": "deny"},
            {"glob": ["~/.aws/**", "**/.env"], "read": "hold"}
          ],
          "outsideRoot": "hold"
        }),
    )
    .unwrap()
}

fn decide(tool: &str, args: serde_json::Value) -> Option<PathJudgement> {
    let serde_json::Value::Object(args) = args else {
        panic!("args are an object")
    };
    rules().decide_path_arguments(tool, &args, context())
}

#[test]
fn an_mcp_servers_paths_are_judged_as_a_file_tools() {
    let read = decide(
        "mcp__filesystem__read_text_file",
        json!({"path": "~/.aws/credentials"}),
    )
    .unwrap();
    assert_eq!(read.decision, Decision::Hold);
    assert_eq!(
        read.reasons,
        ["read of \"/home/me/.aws/credentials\" matches paths.rules[1] (glob ~/.aws/**): hold"]
    );
    let write = decide(
        "mcp__filesystem__write_file",
        json!({"path": "/home/me/.zshrc", "content": "curl x | sh"}),
    )
    .unwrap();
    assert_eq!(write.decision, Decision::Deny);
    // Both ends of a move are writes: the stricter one decides, and its reason is said.
    let moved = decide(
        "mcp__filesystem__move_file",
        json!({"source": "notes.txt", "destination": ".claude/settings.json"}),
    )
    .unwrap();
    assert_eq!(moved.decision, Decision::Deny);
    assert!(
        moved.reasons[0].contains(".claude/settings.json"),
        "{moved:?}"
    );
    // Each path of an array is judged.
    let many = decide(
        "mcp__filesystem__read_multiple_files",
        json!({"paths": ["README.md", ".env"]}),
    )
    .unwrap();
    assert_eq!(many.decision, Decision::Hold);
    // A path that matches no rule, inside the root, is allowed with its reason.
    let fine = decide(
        "mcp__filesystem__read_text_file",
        json!({"path": "src/main.rs"}),
    )
    .unwrap();
    assert_eq!(fine.decision, Decision::Allow);
}

#[test]
fn absent_arguments_are_not_judged_and_odd_ones_are_malformed() {
    assert_eq!(
        decide("mcp__filesystem__list_allowed_directories", json!({})),
        None
    );
    assert_eq!(
        decide("mcp__github__get_issue", json!({"path": "~/.aws/x"})),
        None
    );
    let odd = decide("mcp__filesystem__read_text_file", json!({"path": 7})).unwrap();
    assert_eq!(odd.decision, Decision::Deny);
    assert!(
        odd.reasons[0].starts_with("malformed call: argument `path`"),
        "{odd:?}"
    );
    let odd = decide(
        "mcp__filesystem__read_multiple_files",
        json!({"paths": ["a", 1]}),
    )
    .unwrap();
    assert_eq!(odd.decision, Decision::Deny);
}

#[test]
fn the_key_is_checked_when_the_policy_loads() {
    for (value, says) in [
        (json!([]), "`paths.pathArguments`: expected an object"),
        (
            json!({"mcp__x__*": []}),
            "`paths.pathArguments.mcp__x__*`: expected an array naming at least one argument",
        ),
        (
            json!({"mcp__x__*": [""]}),
            "`paths.pathArguments.mcp__x__*[0]`: is an empty string",
        ),
        (
            json!({"mcp__x__*": "path"}),
            "`paths.pathArguments.mcp__x__*`: expected an array of strings",
        ),
        (json!({"": ["path"]}), "paths.pathArguments"),
    ] {
        let err = PathRules::from_json("paths", &json!({"pathArguments": value}))
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{value}: {err}");
    }
}
