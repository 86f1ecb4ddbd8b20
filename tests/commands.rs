//! The `commands` and `paths` rules through the library: the corpus `testdata/commands/` under
//! the Claude Code pack (`policies/claude-code.json`), by the keys alone and through the whole
//! decision, and properties over generated commands and rule sets.
//!
//! The corpus holds one call a line (a `Bash` command, or a file tool's path) with the decision
//! the pack must give and, for some, a fragment of the reason. Every call is decided in a
//! working directory `/w/proj` with the home directory `/home/me`, unless the line gives
//! `"cwd": null`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Value};
use skeleton_crew::call::Call;
use skeleton_crew::rules::commands::CommandRules;
use skeleton_crew::rules::decide_command;
use skeleton_crew::rules::decision::{evaluate, evaluate_in, CallContext};
use skeleton_crew::rules::paths::Places;
use skeleton_crew::rules::paths::{PathContext, PathRules};
use skeleton_crew::rules::policy::Policy;
use skeleton_crew::rules::shell::{analyse, MAX_COMMAND_BYTES};
use skeleton_crew::rules::state::CrewState;
use skeleton_crew::verdict::Decision;

pub fn testdata(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/commands")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The Claude Code pack, `policies/claude-code.json`.
pub fn pack_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/claude-code.json")
}

/// The pack as a policy, with the corpus's home directory.
pub fn pack_policy() -> Policy {
    Policy::load(&pack_path())
        .expect("the pack loads")
        .with_places(Places {
            home: Some(PathBuf::from(HOME)),
            root: None,
        })
}

/// The pack's two keys.
fn pack() -> (CommandRules, PathRules) {
    let policy = pack_policy();
    (
        policy.commands().expect("the pack has commands").clone(),
        policy.paths().expect("the pack has paths").clone(),
    )
}

pub const CWD: &str = "/w/proj";
pub const HOME: &str = "/home/me";

fn context(cwd: Option<&Path>) -> PathContext<'_> {
    PathContext {
        cwd,
        root: None,
        home: Some(Path::new(HOME)),
        links: None,
    }
}

/// The corpus, a line each: the line number, the line, the decision it expects.
pub fn corpus() -> Vec<(usize, Value, Decision)> {
    testdata("corpus.jsonl")
        .lines()
        .enumerate()
        .map(|(number, text)| {
            let line: Value = serde_json::from_str(text).expect("a corpus line is JSON");
            let expected = Decision::parse(line["decision"].as_str().expect("a decision"))
                .expect("a known decision");
            (number + 1, line, expected)
        })
        .collect()
}

/// Whether the corpus line's call runs under the sandbox (`"confined": true`).
pub fn corpus_confined(line: &Value) -> bool {
    line["confined"].as_bool().unwrap_or(false)
}

/// The corpus line's working directory: `/w/proj` unless the line gives one or `null`.
pub fn corpus_cwd(line: &Value) -> Option<&str> {
    match line.get("cwd") {
        Some(Value::Null) => None,
        Some(Value::String(cwd)) => Some(cwd),
        _ => Some(CWD),
    }
}

/// Whether the decision and reasons are what the corpus line expects; else what went wrong.
pub fn corpus_failure(
    number: usize,
    line: &Value,
    expected: Decision,
    decision: Decision,
    reasons: &[String],
) -> Option<String> {
    let reason_ok = line
        .get("reason")
        .and_then(Value::as_str)
        .is_none_or(|fragment| reasons.iter().any(|r| r.contains(fragment)));
    (decision != expected || !reason_ok).then(|| {
        format!(
            "line {number}: {} expected {expected}{}, got {decision}: {reasons:#?}",
            line["args"],
            line.get("reason")
                .map(|r| format!(" with a reason containing {r}"))
                .unwrap_or_default()
        )
    })
}

/// The keys' own decision on one corpus line, with its reasons.
fn decide_line(
    commands: &CommandRules,
    paths: &PathRules,
    line: &Value,
) -> (Decision, Vec<String>) {
    let tool = line["tool"].as_str().expect("a tool");
    let args = line["args"].as_object().expect("args");
    let cwd = corpus_cwd(line).map(Path::new);
    let tainted = line["tainted"].as_bool().unwrap_or(false);
    let confined = corpus_confined(line);
    if let Some(judged) =
        commands.decide_call(tool, args, tainted, confined, Some(paths), context(cwd))
    {
        return (judged.decision, judged.reasons);
    }
    if let Some(judged) = paths.decide_call(tool, args, context(cwd)) {
        return (judged.decision, judged.reasons);
    }
    if let Some(judged) = paths.decide_path_arguments(tool, args, context(cwd)) {
        return (judged.decision, judged.reasons);
    }
    // A search tool (`pathArguments`) called without its path argument searches the working
    // folder, and nothing of the keys judges it; any other tool must be one the keys judge.
    let with_path = serde_json::json!({"path": "/"});
    assert!(
        paths
            .decide_path_arguments(tool, with_path.as_object().unwrap(), context(cwd))
            .is_some(),
        "no rules apply to {tool}"
    );
    (Decision::Allow, Vec::new())
}

/// A crew state in which the pack's agents are tainted: one of them fetched a web page.
fn tainted_state(policy: &Policy) -> CrewState {
    let mut state = CrewState::new();
    let (fetch, _) = Call::parse_line(
        br#"{"agent":"claude-code","tool":"WebFetch","args":{"url":"https://example.com"},"source":"agent"}"#,
    )
    .unwrap();
    let judged = evaluate(&fetch, policy);
    state.record(&fetch, "fetch", &judged, policy);
    state
}

/// The corpus line as the call a door decides: from Claude Code's main thread, with the
/// line's working directory.
pub fn corpus_call(line: &Value) -> Value {
    let mut call = json!({
        "agent": "claude-code",
        "tool": line["tool"],
        "args": line["args"],
        "source": "agent",
    });
    if let Some(cwd) = corpus_cwd(line) {
        call["cwd"] = json!(cwd);
    }
    call
}

#[test]
fn the_corpus_gets_the_decisions_it_expects_under_the_pack() {
    let policy = pack_policy();
    let (commands, paths) = pack();
    let clean = CrewState::new();
    let tainted = tainted_state(&policy);
    assert!(tainted.taint_of("claude-code", &policy).is_some());
    let mut failures = Vec::new();
    let mut shapes = BTreeSet::new();
    let corpus = corpus();
    for (number, line, expected) in &corpus {
        shapes.insert(line["shape"].as_str().expect("a shape").to_owned());
        // The keys alone, and the whole decision as every door makes it. The sandbox's own
        // places bind the file tools only in the decision (`"sandboxPlaces": true`).
        if !line["sandboxPlaces"].as_bool().unwrap_or(false) {
            let (decision, reasons) = decide_line(&commands, &paths, line);
            failures.extend(corpus_failure(*number, line, *expected, decision, &reasons));
        }
        let text = corpus_call(line).to_string();
        let (call, _) = Call::parse_line(text.as_bytes()).expect("a corpus call is well formed");
        let state = if line["tainted"].as_bool().unwrap_or(false) {
            &tainted
        } else {
            &clean
        };
        let context = CallContext {
            confined: corpus_confined(line),
            ..CallContext::default()
        };
        let judged = evaluate_in(&call, &policy, state, context);
        failures.extend(
            corpus_failure(*number, line, *expected, judged.decision, &judged.reasons)
                .map(|failure| format!("through the decision: {failure}")),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(corpus.len() >= 150, "only {} lines", corpus.len());
    for shape in [
        "bundles and reordering",
        "long options",
        "wrappers",
        "program paths, quotes and backslashes",
        "nested shells",
        "find -exec and -delete",
        "dynamic",
        "chains",
        "subshells, groups, loops, functions",
        "redirections into protected files",
        "file tools",
    ] {
        assert!(shapes.contains(shape), "no line of shape {shape:?}");
    }
}

#[test]
fn the_issue_reason_names_the_simple_command_the_whole_and_the_rule() {
    let (commands, _) = pack();
    let judged = commands.decide("cargo build && rm -rf build", false);
    assert_eq!(judged.decision, Decision::Deny);
    assert_eq!(
        judged.reasons,
        [
            r#"rm -rf build (in "cargo build && rm -rf build") matches commands.rules[23] (prefix rm [-r|-R|--recursive] [-f|--force]): deny"#
        ]
    );
}

#[test]
fn a_huge_command_is_dynamic_at_once() {
    let (commands, _) = pack();
    for huge in [
        "x".repeat(1 << 20),
        "(".repeat(1 << 20),
        "$(".repeat(1 << 19),
        format!("echo {}", "a ".repeat(1 << 19)),
        "{ ".repeat(MAX_COMMAND_BYTES / 2 - 1),
    ] {
        let judged = commands.decide(&huge, false);
        assert_eq!(judged.decision, Decision::Hold, "{:?}", &judged.reasons);
        assert!(
            judged.reasons[0].contains("is dynamic"),
            "{:?}",
            judged.reasons
        );
    }
}

#[test]
fn nesting_past_the_limit_is_dynamic_and_shells_within_it_are_read() {
    let (commands, _) = pack();
    let deep = format!("{}rm -rf x{}", "echo $(".repeat(10), ")".repeat(10));
    let analysis = analyse(&deep);
    assert!(
        analysis
            .dynamic
            .iter()
            .any(|d| d.why.contains("nested deeper than 8")),
        "{analysis:?}"
    );
    let mut command = "rm -rf x".to_owned();
    for _ in 0..5 {
        command = format!("bash -c {}", single_quoted(&command));
    }
    assert_eq!(
        commands.decide(&command, false).decision,
        Decision::Deny,
        "{command}"
    );
}

#[test]
fn writes_are_exposed_for_the_path_rules() {
    let (commands, _) = pack();
    let judged = commands.decide("cargo test 2>&1 | tee log.txt > out.txt", false);
    let written: Vec<&str> = judged.writes.iter().map(|w| w.path.as_str()).collect();
    assert_eq!(written, ["out.txt", "log.txt"]);
}

// Properties.

fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Simple commands from a small vocabulary: programs the pack allows, holds or does not know,
/// with options and arguments.
fn simple_command() -> impl Strategy<Value = String> {
    (
        select(vec![
            "ls",
            "cat",
            "git status",
            "git push",
            "cargo test",
            "curl",
            "rm",
            "mkdir",
            "echo",
            "make",
            "python",
            "find .",
            "sort",
            "grep",
        ]),
        proptest::collection::vec(
            select(vec![
                "-r",
                "-f",
                "-rf",
                "-l",
                "-n",
                "--force",
                "--output=x",
                "-delete",
                "a",
                "b.txt",
                "src",
                "-o",
                "--",
                "'x y'",
            ]),
            0..4,
        ),
    )
        .prop_map(|(program, args)| {
            let mut words = vec![program.to_owned()];
            words.extend(args.into_iter().map(str::to_owned));
            words.join(" ")
        })
}

/// Commands of one to four simple commands joined by list operators and pipes.
fn command() -> impl Strategy<Value = String> {
    (
        simple_command(),
        proptest::collection::vec(
            (
                select(vec![" && ", " || ", " | ", "; ", " & ", "\n", " |& "]),
                simple_command(),
            ),
            0..4,
        ),
    )
        .prop_map(|(first, rest)| {
            let mut text = first;
            for (operator, next) in rest {
                text.push_str(operator);
                text.push_str(&next);
            }
            text
        })
}

fn token() -> impl Strategy<Value = Value> {
    prop_oneof![
        select(vec![
            "-r", "-f", "-l", "--force", "--output", "-delete", "-o", "-n"
        ])
        .prop_map(|t| json!(t)),
        select(vec!["status", "push", "test", "a", "src", "."]).prop_map(|t| json!(t)),
        proptest::collection::vec(select(vec!["status", "push", "test", "a"]), 1..3)
            .prop_map(|alts| json!(alts)),
    ]
}

fn rule(decision: impl Strategy<Value = &'static str>) -> impl Strategy<Value = Value> {
    (
        select(vec![
            "ls", "cat", "git", "cargo", "curl", "rm", "mkdir", "echo", "make", "python", "find",
            "sort", "grep",
        ]),
        proptest::collection::vec(token(), 0..3),
        decision,
        any::<bool>(),
    )
        .prop_map(|(program, tokens, decision, when_tainted)| {
            let mut prefix = vec![json!(program)];
            prefix.extend(tokens);
            let mut rule = json!({"prefix": prefix, "decision": decision});
            if when_tainted {
                rule["whenTainted"] = json!("allow");
            }
            rule
        })
}

fn rules_with(rules: &[Value], unmatched: &str) -> CommandRules {
    CommandRules::from_json("commands", &json!({"rules": rules, "unmatched": unmatched}))
        .expect("generated rules load")
}

/// The denied command, written many ways: bundled or split flags in any order, long options,
/// quotes and backslashes in the program, an absolute path.
fn denied_command() -> impl Strategy<Value = String> {
    (
        select(vec![
            "rm",
            "/bin/rm",
            "\"rm\"",
            "r''m",
            "\\rm",
            "$'\\x72m'",
            "/usr/bin/rm",
        ]),
        select(vec![
            "-rf",
            "-fr",
            "-r -f",
            "-f -r",
            "-Rf",
            "-rvf",
            "--recursive --force",
            "-r --force",
            "--rec -f",
        ]),
        select(vec!["build", "/", "~", "'my dir'", "x y"]),
        any::<bool>(),
    )
        .prop_map(|(program, flags, target, flags_last)| {
            if flags_last {
                format!("{program} {target} {flags}")
            } else {
                format!("{program} {flags} {target}")
            }
        })
}

/// Wraps a command one way: a wrapper program, a shell, a compound command, a function, or a
/// substitution. A wrapper program can only run a simple command, so a compound one is first
/// handed to `bash -c`. Returns the command and whether it is a simple command.
fn wrap(command: String, simple: bool, how: usize) -> (String, bool) {
    let program_wrapper = matches!(how, 0..=3 | 12 | 14 | 16);
    let command = if program_wrapper && !simple {
        format!("bash -c {}", single_quoted(&command))
    } else {
        command
    };
    match how {
        0 => (format!("env FOO=1 {command}"), true),
        1 => (format!("sudo -u root {command}"), true),
        2 => (format!("nice -n 5 {command}"), true),
        3 => (format!("timeout -s KILL 10 {command}"), true),
        4 => (format!("bash -c {}", single_quoted(&command)), true),
        5 => (format!("sh -lc {}", single_quoted(&command)), true),
        6 => (format!("( {command}\n)"), false),
        7 => (format!("{{ {command}\n}}"), false),
        8 => (format!("if true; then {command}\nfi"), false),
        9 => (format!("for x in a b; do {command}\ndone"), false),
        10 => (format!("f() {{ {command}\n}}; f"), false),
        11 => (format!("echo $({command}\n)"), true),
        12 => (format!("command {command}"), true),
        13 => (format!("while false; do {command}\ndone"), false),
        14 => (format!("nohup {command}"), true),
        15 => (format!("eval {}", single_quoted(&command)), true),
        16 => (format!("stdbuf -oL {command}"), true),
        // Newlines end the wrapped command: brush-parser cannot read `esac )` or `*)` inside
        // `$( … )` (parse errors, so holds), though bash can.
        _ => (format!("case x in (*) {command}\n;; esac"), false),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A rule at least as strict as `unmatched` (as it counts for the agent) only adds
    /// findings, so no decision gets weaker. (An allow rule for a command nothing matched
    /// replaces `unmatched`, by design.)
    #[test]
    fn adding_a_rule_never_makes_a_decision_weaker(
        command in command(),
        base in proptest::collection::vec(rule(select(vec!["allow", "hold", "deny"])), 0..6),
        unmatched in select(vec!["allow", "hold", "deny"]),
        extra_decision in select(vec!["allow", "hold", "deny"]),
        extra in rule(Just("allow")),
        at in any::<prop::sample::Index>(),
        tainted in any::<bool>(),
    ) {
        // For a tainted agent, an `unmatched: allow` counts as hold.
        let unmatched_decision = match Decision::parse(unmatched).unwrap() {
            Decision::Allow if tainted => Decision::Hold,
            decision => decision,
        };
        let extra_decision = Decision::parse(extra_decision).unwrap().max(unmatched_decision);
        let mut extra = extra;
        extra["decision"] = json!(extra_decision.as_str());
        let before = rules_with(&base, unmatched).decide(&command, tainted);
        let mut more = base.clone();
        more.insert(at.index(base.len() + 1), extra);
        let after = rules_with(&more, unmatched).decide(&command, tainted);
        prop_assert!(after.decision >= before.decision, "{command:?}: {before:?} then {after:?}");
    }

    /// With `unmatched: allow`, any rule added for an agent that is not tainted only adds
    /// findings.
    #[test]
    fn with_unmatched_allow_any_added_rule_only_adds(
        command in command(),
        base in proptest::collection::vec(rule(select(vec!["allow", "hold", "deny"])), 0..6),
        extra in rule(select(vec!["allow", "hold", "deny"])),
    ) {
        let tainted = false;
        let before = rules_with(&base, "allow").decide(&command, tainted);
        let mut more = base.clone();
        more.push(extra);
        let after = rules_with(&more, "allow").decide(&command, tainted);
        prop_assert!(after.decision >= before.decision, "{command:?}: {before:?} then {after:?}");
    }

    /// A denied simple command denies the whole command, however it is written, wrapped (up
    /// to three wrappers deep) and chained with other commands.
    #[test]
    fn a_denied_simple_command_denies_however_chained_or_wrapped(
        denied in denied_command(),
        wrappers in proptest::collection::vec(0usize..18, 0..4),
        before in proptest::collection::vec((simple_command(), select(vec![" && ", " || ", " | ", "; ", "\n", " & "])), 0..3),
        after in proptest::collection::vec((select(vec![" && ", " || ", " | ", "; ", "\n"]), simple_command()), 0..3),
        tainted in any::<bool>(),
    ) {
        let (commands, paths) = pack();
        let mut command = denied;
        let mut simple = true;
        for how in wrappers {
            (command, simple) = wrap(command, simple, how);
        }
        let mut text = String::new();
        for (other, operator) in &before {
            text.push_str(other);
            text.push_str(operator);
        }
        text.push_str(&command);
        for (operator, other) in &after {
            text.push_str(operator);
            text.push_str(other);
        }
        let judged = decide_command(&commands, Some(&paths), &text, tainted, context(Some(Path::new(CWD))));
        prop_assert_eq!(judged.decision, Decision::Deny, "{:?}: {:?}", text, judged.reasons);
    }

    /// Nothing panics and every judgement has a reason, whatever the text.
    #[test]
    fn any_text_gets_a_decision_with_reasons(text in "[ -~\n]{0,200}", tainted in any::<bool>()) {
        let (commands, paths) = pack();
        let judged = decide_command(&commands, Some(&paths), &text, tainted, context(Some(Path::new(CWD))));
        prop_assert!(!judged.reasons.is_empty());
    }
}

/// The share of the corpus's `Bash` lines that a tainted session runs without a person (the
/// gate's decision is allow): under the pack where no sandbox applies (nothing confined), and
/// under the pack as shipped, where a tainted session's `Bash` call runs confined and a rule's
/// `whenConfined` decides it. docs/coding-agents.md quotes both figures:
/// `cargo test --test tests confinement_share -- --nocapture`.
#[test]
fn confinement_share_of_the_corpus_a_tainted_session_runs_without_a_person() {
    // The same pack both times (its sandbox's places bind file tools and shell reads in every
    // session): a call is confined or not by its context alone.
    let confined = pack_policy();
    let unconfined = pack_policy();
    let (mut lines, mut before, mut after) = (0usize, 0usize, 0usize);
    let mut gained = Vec::new();
    for (_, line, _) in corpus() {
        if line["tool"] != "Bash" {
            continue;
        }
        lines += 1;
        let text = corpus_call(&line).to_string();
        let (call, _) = Call::parse_line(text.as_bytes()).expect("a corpus call is well formed");
        let plain = evaluate_in(
            &call,
            &unconfined,
            &tainted_state(&unconfined),
            CallContext::default(),
        );
        let context = CallContext {
            confined: true,
            ..CallContext::default()
        };
        let sandboxed = evaluate_in(&call, &confined, &tainted_state(&confined), context);
        before += usize::from(plain.decision == Decision::Allow);
        after += usize::from(sandboxed.decision == Decision::Allow);
        // Confinement only ever lifts a hold to an allow: it never lets through what is denied,
        // and never holds what ran before.
        assert!(
            sandboxed.decision <= plain.decision
                && (plain.decision != Decision::Deny || sandboxed.decision == Decision::Deny),
            "{}: {plain:?} → {sandboxed:?}",
            line["args"]
        );
        if plain.decision != sandboxed.decision {
            gained.push(format!(
                "{} {} → {}",
                line["args"]["command"], plain.decision, sandboxed.decision
            ));
        }
    }
    let share = |n: usize| 100.0 * n as f64 / lines as f64;
    println!(
        "a tainted session runs without a person {before} of {lines} Bash lines ({:.1}%) with no sandbox, {after} of {lines} ({:.1}%) confined",
        share(before),
        share(after)
    );
    for line in &gained {
        println!("  {line}");
    }
    assert!(after > before, "{before} → {after}");
}

/// The pack's own measure of honest work and attacks, on the corpus lines marked `"everyday":
/// true` and `"attack": true`. Everyday calls: the share answered `allow` in an untainted
/// session, and in a tainted one the share of `Bash` calls that run confined and are allowed
/// (a tainted session's `Bash` runs under the sandbox; its file writes are held by the taint
/// rule, as the pack intends, and are not counted there). Attacks: every one held or denied,
/// untainted and tainted where no sandbox applies. docs/coding-agents.md quotes the figures:
/// `cargo test --test tests everyday_calls_run_unasked -- --nocapture`.
#[test]
fn everyday_calls_run_unasked_and_every_attack_is_stopped() {
    let policy = pack_policy();
    let clean = CrewState::new();
    let tainted = tainted_state(&policy);
    let decide = |line: &Value, state: &CrewState, confined: bool| {
        let text = corpus_call(line).to_string();
        let (call, _) = Call::parse_line(text.as_bytes()).expect("a corpus call is well formed");
        let context = CallContext {
            confined,
            ..CallContext::default()
        };
        evaluate_in(&call, &policy, state, context)
    };
    let (mut everyday, mut clean_allowed, mut bash, mut confined_allowed) = (0, 0, 0, 0);
    let (mut attacks, mut misses) = (0, Vec::new());
    let mut asked = Vec::new();
    for (_, line, _) in corpus() {
        if line["everyday"].as_bool().unwrap_or(false) {
            everyday += 1;
            let judged = decide(&line, &clean, false);
            if judged.decision == Decision::Allow {
                clean_allowed += 1;
            } else {
                asked.push(format!("untainted {}: {:?}", line["args"], judged.reasons));
            }
            if line["tool"] == "Bash" {
                bash += 1;
                let judged = decide(&line, &tainted, true);
                if judged.decision == Decision::Allow {
                    confined_allowed += 1;
                } else {
                    asked.push(format!("tainted {}: {:?}", line["args"], judged.reasons));
                }
            }
        }
        if line["attack"].as_bool().unwrap_or(false) {
            attacks += 1;
            for state in [&clean, &tainted] {
                let judged = decide(&line, state, false);
                if judged.decision == Decision::Allow {
                    misses.push(format!("{}: {:?}", line["args"], judged.reasons));
                }
            }
        }
    }
    let share = |n: usize, of: usize| 100.0 * n as f64 / of as f64;
    println!(
        "everyday calls unasked: untainted {clean_allowed} of {everyday} ({:.1}%), tainted (Bash, confined and allowed) {confined_allowed} of {bash} ({:.1}%); attacks held or denied: {} of {attacks}",
        share(clean_allowed, everyday),
        share(confined_allowed, bash),
        attacks - misses.len().min(attacks),
    );
    for line in &asked {
        println!("  asked: {line}");
    }
    assert!(
        everyday >= 120 && attacks >= 100,
        "{everyday} everyday, {attacks} attacks"
    );
    assert!(
        misses.is_empty(),
        "attacks let through:\n{}",
        misses.join("\n")
    );
    assert!(share(clean_allowed, everyday) >= 95.0, "{asked:#?}");
    assert!(share(confined_allowed, bash) >= 95.0, "{asked:#?}");
}

/// Every home place in the pack's `sandbox.readOnly` is a denied write for the file tools and
/// for a shell redirection, and every `sandbox.hidden` place a held read for `Read` and `cat`,
/// in a session no sandbox confines: derived from the lists by the code, so that the two keys
/// cannot drift. A hidden place relative to the project has no derived rule (its base would be
/// the project's folder); the pack's `paths` rules must name it with a `**/` glob.
#[test]
fn the_sandbox_places_bind_file_tools_and_shell_commands_in_every_session() {
    let policy = pack_policy();
    let clean = CrewState::new();
    let pack: Value = serde_json::from_str(&std::fs::read_to_string(pack_path()).unwrap()).unwrap();
    let decide = |tool: &str, args: Value| {
        let line = json!({"tool": tool, "args": args});
        let text = corpus_call(&line).to_string();
        let (call, _) = Call::parse_line(text.as_bytes()).unwrap();
        evaluate_in(&call, &policy, &clean, CallContext::default())
    };
    let mut checked = 0;
    for entry in pack["sandbox"]["readOnly"].as_array().unwrap() {
        let Some(rest) = entry.as_str().unwrap().strip_prefix("~/") else {
            continue;
        };
        for (tool, args) in [
            ("Write", json!({"file_path": format!("{HOME}/{rest}")})),
            ("Edit", json!({"file_path": format!("~/{rest}/x")})),
            ("Bash", json!({"command": format!("echo x >> ~/{rest}")})),
        ] {
            let judged = decide(tool, args.clone());
            assert_eq!(judged.decision, Decision::Deny, "{tool} {args}: {judged:?}");
            checked += 1;
        }
    }
    for entry in pack["sandbox"]["hidden"].as_array().unwrap() {
        let entry = entry.as_str().unwrap();
        for (tool, args) in [
            ("Read", json!({"file_path": entry})),
            ("Bash", json!({"command": format!("cat {entry}")})),
            ("Bash", json!({"command": format!("cat sub/{entry}")})),
        ] {
            if args.to_string().contains("sub/~") {
                continue;
            }
            let judged = decide(tool, args.clone());
            assert!(
                judged.decision >= Decision::Hold,
                "{tool} {args}: {judged:?}"
            );
            checked += 1;
        }
    }
    assert!(checked > 150, "{checked}");
    // Derived, not copied: a policy whose sandbox names a new home file protects it at once.
    let mut text = pack.clone();
    text["sandbox"]["readOnly"]
        .as_array_mut()
        .unwrap()
        .push(json!("~/.config/new-tool/init.sh"));
    text["sandbox"]["hidden"]
        .as_array_mut()
        .unwrap()
        .push(json!("~/.new-cloud/token"));
    let grown = Policy::from_json_str(&text.to_string())
        .unwrap()
        .with_places(Places {
            home: Some(PathBuf::from(HOME)),
            root: None,
        });
    for (tool, args, expected) in [
        (
            "Write",
            json!({"file_path": "~/.config/new-tool/init.sh"}),
            Decision::Deny,
        ),
        (
            "Bash",
            json!({"command": "cat ~/.new-cloud/token"}),
            Decision::Hold,
        ),
    ] {
        let line = json!({"tool": tool, "args": args});
        let (call, _) = Call::parse_line(corpus_call(&line).to_string().as_bytes()).unwrap();
        let judged = evaluate_in(&call, &grown, &clean, CallContext::default());
        assert_eq!(judged.decision, expected, "{args}: {judged:?}");
        assert!(
            judged.reasons.iter().any(|r| r.contains("sandbox.")),
            "{judged:?}"
        );
    }
}
