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

/// Rules with a search tool's default folder, a tool's glob arguments, and a read rule on a
/// place in the project (as the sandbox's `hidden` has `.env`).
fn search_rules() -> PathRules {
    PathRules::from_json(
        "paths",
        &json!({
          "pathArguments": {"Grep": ["path"], "list": ["dir"]},
          "pathDefaults": {"Grep": {"path": "."}},
          "globArguments": {"read_many": ["include"], "list": ["pattern"]},
          "rules": [
            {"glob": [".env"], "read": "hold"},
            {"glob": ["~/.aws/**"], "read": "hold"}
          ]
        }),
    )
    .unwrap()
}

fn search(tool: &str, args: serde_json::Value, present: bool) -> Option<PathJudgement> {
    let serde_json::Value::Object(args) = args else {
        panic!("args are an object")
    };
    let leads = |_: &std::path::Path, _: bool| crate::rules::paths::Leads::Elsewhere(Vec::new());
    let there = move |_: &std::path::Path, _: Option<&str>| present;
    let with_links = PathContext {
        links: Some(crate::rules::paths::Links {
            leads: &leads,
            present: &there,
            tree: &|_| Ok(Vec::new()),
        }),
        ..context()
    };
    search_rules().decide_path_arguments(tool, &args, with_links)
}

#[test]
fn a_search_without_its_path_is_judged_as_a_search_of_its_default() {
    let rules = search_rules();
    let without = rules
        .decide_path_arguments(
            "Grep",
            json!({"pattern": "KEY"}).as_object().unwrap(),
            context(),
        )
        .unwrap();
    let with = rules
        .decide_path_arguments(
            "Grep",
            json!({"pattern": "KEY", "path": "."}).as_object().unwrap(),
            context(),
        )
        .unwrap();
    // The project's root is on the way to `.env`: both held, the default named in the reason.
    assert_eq!(without.decision, Decision::Hold, "{without:?}");
    assert_eq!(with.decision, without.decision);
    assert!(
        without.reasons[0].starts_with("Grep without `path` acts on \".\": read of \"/w/proj\""),
        "{without:?}"
    );
    // A search of `src` is not on the way to it.
    let src = rules
        .decide_path_arguments(
            "Grep",
            json!({"pattern": "x", "path": "src"}).as_object().unwrap(),
            context(),
        )
        .unwrap();
    assert_eq!(src.decision, Decision::Allow, "{src:?}");
    // A tool without a default is not judged without its argument.
    assert_eq!(
        rules.decide_path_arguments("list", json!({}).as_object().unwrap(), context()),
        None
    );
}

#[test]
fn a_folder_on_the_way_to_a_place_in_the_project_that_is_not_there_is_not_held() {
    // The door says whether the place is there: the stricter answer when it is.
    let there = search("Grep", json!({"pattern": "KEY"}), true).unwrap();
    assert_eq!(there.decision, Decision::Hold, "{there:?}");
    let absent = search("Grep", json!({"pattern": "KEY"}), false).unwrap();
    assert_eq!(absent.decision, Decision::Allow, "{absent:?}");
    // The file itself is held whether or not it is there (the rule matches its name).
    let file = search("Grep", json!({"pattern": "KEY", "path": ".env"}), false).unwrap();
    assert_eq!(file.decision, Decision::Hold, "{file:?}");
    // A home's places are held on the way whether or not they are there.
    let home = search("Grep", json!({"pattern": "KEY", "path": "~"}), false).unwrap();
    assert_eq!(home.decision, Decision::Hold, "{home:?}");
}

#[test]
fn a_glob_argument_is_judged_as_written_and_at_the_folder_it_matches_in() {
    // A pattern under a secret's folder: held at that folder.
    let aws = search("read_many", json!({"include": ["~/.aws/*"]}), true).unwrap();
    assert_eq!(aws.decision, Decision::Hold, "{aws:?}");
    assert!(
        aws.reasons[0].starts_with("read_many matches the pattern \"~/.aws/*\" in \"~/.aws\""),
        "{aws:?}"
    );
    // A pattern naming the secret itself: held as written.
    let env = search(
        "read_many",
        json!({"include": ["docs/*.md", ".env"]}),
        false,
    )
    .unwrap();
    assert_eq!(env.decision, Decision::Hold, "{env:?}");
    // A pattern from the working folder reads in it: held when the project has a `.env`.
    let all = search("read_many", json!({"include": ["**/*.md"]}), true).unwrap();
    assert_eq!(all.decision, Decision::Hold, "{all:?}");
    let none = search("read_many", json!({"include": ["**/*.md"]}), false).unwrap();
    assert_eq!(none.decision, Decision::Allow, "{none:?}");
    // Its `*` matches a dot-file too: `**/*` may be `.env`, there or not.
    let any = search("read_many", json!({"include": ["**/*"]}), false).unwrap();
    assert_eq!(any.decision, Decision::Hold, "{any:?}");
    // A relative pattern is placed in the folder of the tool's path argument.
    let placed = search(
        "list",
        json!({"dir": "/home/me", "pattern": ".aws/*"}),
        false,
    )
    .unwrap();
    assert_eq!(placed.decision, Decision::Hold, "{placed:?}");
    assert!(
        placed
            .reasons
            .iter()
            .any(|r| r.contains("in \"/home/me/.aws\"")),
        "{placed:?}"
    );
    // Anything but a string or an array of strings is malformed.
    let odd = search("read_many", json!({"include": 3}), false).unwrap();
    assert_eq!(odd.decision, Decision::Deny, "{odd:?}");
}

#[test]
fn path_defaults_are_checked_when_the_policy_loads() {
    for (value, says) in [
        (json!({"Grep": {"path": "."}}), "`paths.pathDefaults.Grep.path`: names argument `path`, which `pathArguments` does not list for this tool"),
        (json!({"mcp__x__*": {"dir": "."}}), "`paths.pathDefaults.mcp__x__*.dir`: names argument `dir`"),
        (json!({"search": {"dir": ""}}), "`paths.pathDefaults.search.dir`: is an empty string"),
        (json!({"search": {"dir": 1}}), "`paths.pathDefaults.search.dir`: expected a path (a string)"),
        (json!({"search": ["dir"]}), "`paths.pathDefaults.search`: expected an object mapping arguments to paths"),
    ] {
        let err = PathRules::from_json(
            "paths",
            &json!({"pathArguments": {"search": ["dir"]}, "pathDefaults": value}),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains(says), "{value}: {err}");
    }
    assert!(PathRules::from_json(
        "paths",
        &json!({"pathArguments": {"search": ["dir"]}, "pathDefaults": {"search": {"dir": "."}}}),
    )
    .is_ok());
}

#[test]
fn a_glob_argument_is_judged_in_every_spelling_the_tool_may_read() {
    // `\` for `/`, and any case (Gemini CLI globs with `nocase`): each is judged.
    for pattern in [".ENV", "x\\..\\.env", ".\\.env", "~/.AWS/credentials"] {
        let judged = search("read_many", json!({ "include": [pattern] }), false).unwrap();
        assert_eq!(judged.decision, Decision::Hold, "{pattern}: {judged:?}");
    }
    // An extended glob is not matched here: it may be any file.
    for pattern in [
        "@(.env)",
        "!(x)",
        "src/+(a|b)/*",
        "src/{../.env,y}",
        "src/{,../}.env",
        "{..,x}/me/.aws/{credentials,y}",
        "{.env,x}",
        ".en{v,}",
        "src/**/../../../home/me/.aws/credentials",
        "*env",
        "?env",
        "**/*env",
    ] {
        let judged = search("read_many", json!({ "include": [pattern] }), false).unwrap();
        assert_eq!(judged.decision, Decision::Hold, "{pattern}: {judged:?}");
        assert!(
            judged.reasons.iter().any(|r| r.contains("may be any file")
                || r.contains("may match a name")
                || r.contains("matches")),
            "{judged:?}"
        );
    }
    // Honest patterns.
    for pattern in ["src/**/*.ts", "README.md", "*.md", "docs/**/*.md"] {
        let judged = search("read_many", json!({ "include": [pattern] }), false).unwrap();
        assert_eq!(judged.decision, Decision::Allow, "{pattern}: {judged:?}");
    }
}

#[test]
fn an_empty_list_of_paths_is_the_default_and_a_folder_above_the_root_keeps_its_hold() {
    // No path given in a list: the tool acts where it would without the argument.
    let empty = search("Grep", json!({"pattern": "KEY", "path": []}), true).unwrap();
    assert_eq!(empty.decision, Decision::Hold, "{empty:?}");
    assert!(
        empty.reasons[0].starts_with("Grep without `path`"),
        "{empty:?}"
    );
    // Above the root, the place is not looked for: the project may be above (the root is only
    // the working folder when no project folder is known).
    let above = search("Grep", json!({"pattern": "KEY", "path": ".."}), false).unwrap();
    assert_eq!(above.decision, Decision::Hold, "{above:?}");
    let pattern = search("read_many", json!({"include": ["../*"]}), false).unwrap();
    assert_eq!(pattern.decision, Decision::Hold, "{pattern:?}");
}

#[test]
fn a_folder_on_the_way_to_a_pattern_of_names_is_held_when_one_of_them_is_there() {
    let rules = PathRules::from_json(
        "paths",
        &json!({
          "pathArguments": {"Grep": ["path"]},
          "pathDefaults": {"Grep": {"path": "."}},
          "rules": [{"glob": ["*.pem", "config/.env.*/**"], "read": "hold"}]
        }),
    )
    .unwrap();
    // The door is asked about the folder and the pattern: here it holds a `server.pem` only.
    let asked = std::cell::RefCell::new(Vec::new());
    let leads = |_: &std::path::Path, _: bool| crate::rules::paths::Leads::Elsewhere(Vec::new());
    let grep = |path: &str, pems: bool| {
        let there = |folder: &std::path::Path, names: Option<&str>| {
            asked
                .borrow_mut()
                .push((folder.to_owned(), names.map(str::to_owned)));
            pems && names == Some("*.pem")
        };
        let context = PathContext {
            links: Some(crate::rules::paths::Links {
                leads: &leads,
                present: &there,
                tree: &|_| Ok(Vec::new()),
            }),
            ..context()
        };
        rules
            .decide_path_arguments("Grep", json!({"path": path}).as_object().unwrap(), context)
            .unwrap()
            .decision
    };
    assert_eq!(grep(".", true), Decision::Hold);
    assert_eq!(grep(".", false), Decision::Allow);
    assert_eq!(grep("config", false), Decision::Allow);
    assert_eq!(grep("src", true), Decision::Allow);
    let asked = asked.borrow();
    assert!(
        asked.contains(&("/w/proj".into(), Some("*.pem".to_owned()))),
        "{asked:?}"
    );
    assert!(
        asked.contains(&("/w/proj/config".into(), Some(".env.*".to_owned()))),
        "{asked:?}"
    );
}
