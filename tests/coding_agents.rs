//! The `commands` and `paths` keys at every door, as processes: the corpus through sc-hook with
//! Claude Code's PreToolUse input (its `cwd` included), sc-gate with a `cwd` in its call
//! records, sc-exec's own re-check, sc-mcp on a `tools/call`, and every policy error at load.

use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use crate::commands::{corpus, corpus_confined, corpus_cwd, corpus_failure, pack_path, HOME};
use crate::mcp::{fake_server, is_error, result_text, server_received, Proxy};
use crate::util::{bin_path, parse_stdout, Scratch};

/// The most a process of these tests may take: far above what any needs.
const PROCESS_LIMIT: Duration = Duration::from_secs(60);

/// A PreToolUse input as Claude Code writes it.
fn pre_tool_use(session: &str, tool: &str, input: &Value, cwd: Option<&str>, id: &str) -> Value {
    let mut hook = json!({
        "session_id": session,
        "transcript_path": format!("/home/me/.claude/projects/-w-proj/{session}.jsonl"),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": id,
    });
    if let Some(cwd) = cwd {
        hook["cwd"] = json!(cwd);
    }
    hook
}

/// Runs sc-hook under `policy` on one input; its exit status must be 0.
fn run_hook_under(scratch: &Scratch, policy: &std::path::Path, input: &Value) -> Output {
    run_hook_in(
        scratch,
        policy,
        input,
        (HOME.as_ref(), None),
        scratch.dir.path(),
    )
}

/// [`run_hook_under`] with `--home` at `home.0`, `HOME` set to `home.1` (else unset), and `dir`
/// as the working folder.
fn run_hook_in(
    scratch: &Scratch,
    policy: &std::path::Path,
    input: &Value,
    home: (&std::path::Path, Option<&std::path::Path>),
    dir: &std::path::Path,
) -> Output {
    let mut command = Command::new(bin_path("sc-hook"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    if let Some(env_home) = home.1 {
        command.env("HOME", env_home);
    }
    let home = home.0;
    let mut child = command
        .current_dir(dir)
        .arg("--audit")
        .arg(scratch.audit_path())
        .arg("--policy")
        .arg(policy)
        .arg("--home")
        .arg(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sc-hook starts");
    let text = input.to_string();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), text.as_bytes()).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// sc-hook's answer: `allow` for none, else the permission decision (`ask` is a hold), with the
/// reason.
fn hook_answer(out: &Output) -> (String, String) {
    if out.stdout.is_empty() {
        return ("allow".to_owned(), String::new());
    }
    let answer: Value = serde_json::from_slice(&out.stdout).expect("one JSON answer");
    let output = &answer["hookSpecificOutput"];
    let decision = match output["permissionDecision"].as_str().unwrap() {
        "ask" => "hold",
        other => other,
    };
    (
        decision.to_owned(),
        output["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}

/// Every corpus line through sc-hook as a process, as Claude Code runs it: a session each, the
/// line's `cwd` in the input, and, for a tainted line, a WebFetch first in its session.
///
/// The pack confines a tainted session's `Bash` calls (`sandbox.when`): a line marked
/// `"confined": true` runs under the pack in a project folder that exists (the sandbox is made
/// there), in the `bypassPermissions` mode (where an allowed confined call is answered `allow`),
/// and must come back with the confined input; its reasons name the scratch folder, so only its
/// decision is compared. A tainted `Bash` line not marked confined is what the pack decides where
/// no sandbox applies: the pack without its `sandbox` key.
#[test]
fn the_corpus_gets_its_decisions_through_sc_hook() {
    let scratch = Scratch::new();
    let mut unconfined: Value =
        serde_json::from_str(&std::fs::read_to_string(pack_path()).unwrap()).unwrap();
    unconfined.as_object_mut().unwrap().remove("sandbox");
    let unconfined = scratch.write("unconfined.json", unconfined.to_string());
    std::fs::create_dir_all(scratch.path("proj/.git")).unwrap();
    let project = scratch.path("proj");
    let project = project.to_str().unwrap();
    let corpus = corpus();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some((number, line, expected)) = corpus.get(at) else {
                    break;
                };
                let session = format!("corpus-{number}");
                let confined = corpus_confined(line);
                let cwd = if confined { Some(project) } else { corpus_cwd(line) };
                let tainted_bash = line["tainted"].as_bool().unwrap_or(false) && line["tool"] == "Bash";
                let policy = if tainted_bash && !confined {
                    unconfined.as_path()
                } else {
                    pack_path_ref()
                };
                if line["tainted"].as_bool().unwrap_or(false) {
                    let fetch = pre_tool_use(
                        &session,
                        "WebFetch",
                        &json!({"url": "https://example.com/page", "prompt": "Summarize"}),
                        cwd,
                        &format!("toolu_fetch_{number}"),
                    );
                    assert_eq!(hook_answer(&run_hook_under(&scratch, policy, &fetch)).0, "allow");
                }
                let mut input = pre_tool_use(
                    &session,
                    line["tool"].as_str().unwrap(),
                    &line["args"],
                    cwd,
                    &format!("toolu_{number}"),
                );
                if confined {
                    input["permission_mode"] = json!("bypassPermissions");
                }
                let out = run_hook_under(&scratch, policy, &input);
                let (decision, reason) = hook_answer(&out);
                if confined {
                    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
                    let updated = answer["hookSpecificOutput"].get("updatedInput").is_some();
                    if updated != (decision != "deny") {
                        failures.lock().unwrap().push(format!(
                            "line {number}: confined {decision}, and the answer has updatedInput: {updated}: {answer}"
                        ));
                    }
                }
                let decision = skeleton_crew::verdict::Decision::parse(&decision).unwrap();
                // An allow is answered with nothing, so it has no reason to check.
                let mut line = line.clone();
                if decision == skeleton_crew::verdict::Decision::Allow || confined {
                    line.as_object_mut().unwrap().remove("reason");
                }
                let reasons = [reason];
                if let Some(failure) = corpus_failure(*number, &line, *expected, decision, &reasons)
                {
                    failures.lock().unwrap().push(failure);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every call is in the audit log with the cwd it was decided in.
    let events = scratch.audit_events();
    let bash = events
        .iter()
        .find(|e| e["call"]["tool"] == "Bash")
        .expect("a Bash call");
    assert_eq!(bash["call"]["cwd"], "/w/proj", "{bash}");
}

/// The pack's path, for the life of the test process.
fn pack_path_ref() -> &'static std::path::Path {
    static PACK: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PACK.get_or_init(pack_path)
}

/// sc-gate under a policy file, with the scratch audit log; returns its verdicts.
fn gate(scratch: &Scratch, args: &[&str], input: &[Value]) -> Vec<Value> {
    let mut text = String::new();
    for line in input {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    let out = scratch
        .cmd("sc-gate")
        .args(args)
        .arg("--quiet")
        .timeout(PROCESS_LIMIT)
        .write_stdin(text)
        .assert()
        .code(0)
        .get_output()
        .clone();
    parse_stdout(&out.stdout)
}

fn call(tool: &str, args: Value, cwd: Option<&str>) -> Value {
    let mut call = json!({"agent": "claude-code", "tool": tool, "args": args, "source": "agent"});
    if let Some(cwd) = cwd {
        call["cwd"] = json!(cwd);
    }
    call
}

fn bash(command: &str) -> Value {
    call("Bash", json!({"command": command}), Some("/w/proj"))
}

#[track_caller]
fn assert_verdict(verdict: &Value, decision: &str, fragment: &str) {
    assert_eq!(verdict["decision"], decision, "{verdict}");
    assert!(
        verdict["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().contains(fragment)),
        "no reason contains {fragment:?}: {verdict}"
    );
}

#[test]
fn sc_gate_decides_commands_and_paths_in_each_calls_cwd() {
    let scratch = Scratch::new();
    let policy = scratch.write("policy.json", std::fs::read_to_string(pack_path()).unwrap());
    let policy = policy.to_str().unwrap();
    let audit = scratch.audit_path();
    let out = gate(
        &scratch,
        &["--policy", policy, "--home", HOME],
        &[
            bash("cargo build && rm -rf build"),
            bash("git status"),
            call(
                "Write",
                json!({"file_path": ".claude/settings.json"}),
                Some("/w/proj"),
            ),
            call(
                "Write",
                json!({"file_path": "src/../notes.txt"}),
                Some("/w/proj"),
            ),
            call("Write", json!({"file_path": "notes.txt"}), None),
            call(
                "Write",
                json!({"file_path": "notes.txt"}),
                Some("relative/dir"),
            ),
            call(
                "Read",
                json!({"file_path": "~/.ssh/id_rsa"}),
                Some("/w/proj"),
            ),
            call("Write", json!({"file_path": "notes.txt"}), Some("/w/proj")).tap_cwd(json!(7)),
            call("Write", json!({"file_path": policy}), Some("/w/proj")),
            call(
                "Edit",
                json!({"file_path": audit.to_str().unwrap()}),
                Some("/w/proj"),
            ),
            bash(&format!("echo '{{}}' > {policy}")),
            call("Bash", json!({"command": ["ls"]}), Some("/w/proj")),
            call("WebFetch", json!({"url": "https://example.com"}), None),
            bash("git log --oneline -5"),
            bash("mkdir out"),
            call(
                "Write",
                json!({"file_path": "src/main.rs"}),
                Some("/w/proj"),
            ),
        ],
    );
    assert_eq!(out.len(), 16);
    assert_eq!(
        out[0]["reasons"],
        json!([
            r#"rm -rf build (in "cargo build && rm -rf build") matches commands.rules[23] (prefix rm [-r|-R|--recursive] [-f|--force]): deny"#
        ])
    );
    assert_eq!(out[0]["decision"], "deny");
    assert_verdict(&out[1], "allow", "git status matches commands.rules[1]");
    assert_verdict(
        &out[2],
        "deny",
        r#"write of "/w/proj/.claude/settings.json" matches paths.rules[0] (glob .claude/**): deny"#,
    );
    assert_eq!(out[3]["decision"], "allow", "{}", out[3]);
    assert_verdict(&out[4], "hold", "no cwd and no --root");
    assert_verdict(&out[5], "hold", "no cwd and no --root");
    assert_verdict(&out[6], "hold", r#"read of "/home/me/.ssh/id_rsa""#);
    assert_verdict(
        &out[7],
        "deny",
        "malformed call: `cwd` must be a string (the working directory), not a number",
    );
    assert_verdict(&out[8], "deny", "the gate's own policy file");
    assert_verdict(&out[9], "deny", "the gate's own audit log");
    assert_verdict(&out[10], "deny", "the gate's own policy file");
    assert_verdict(
        &out[11],
        "deny",
        "malformed call: argument `command` of Bash",
    );
    // A web page taints the crew: reads and tests still run, anything else is held, naming why.
    assert_eq!(out[12]["decision"], "allow", "{}", out[12]);
    assert_verdict(
        &out[13],
        "allow",
        "git log --oneline -5 matches commands.rules[1]",
    );
    assert_verdict(&out[14], "hold", "the agent is tainted");
    assert_verdict(
        &out[14],
        "hold",
        "untrusted content was read through WebFetch",
    );
    // The pack's `sandbox.confineFileTools`: a tainted agent's file write inside the root is
    // judged by the sandbox's places and `paths`, as a confined command's write is.
    assert_eq!(out[15]["decision"], "allow", "{}", out[15]);

    // With --root, a call without a cwd is placed in the root.
    let out = gate(
        &scratch,
        &["--policy", policy, "--home", HOME, "--root", "/w/proj"],
        &[
            call("Write", json!({"file_path": "notes.txt"}), None),
            call(
                "Write",
                json!({"file_path": ".claude/settings.local.json"}),
                None,
            ),
            call("Write", json!({"file_path": "/tmp/elsewhere"}), None),
        ],
    );
    assert_eq!(out[0]["decision"], "allow", "{}", out[0]);
    assert_verdict(
        &out[1],
        "deny",
        r#"write of "/w/proj/.claude/settings.local.json""#,
    );
    assert_verdict(&out[2], "hold", r#"is outside the root "/w/proj""#);
}

trait TapCwd {
    fn tap_cwd(self, cwd: Value) -> Value;
}

impl TapCwd for Value {
    fn tap_cwd(mut self, cwd: Value) -> Value {
        self["cwd"] = cwd;
        self
    }
}

/// sc-exec decides every record again under its own policy: an allow the gate wrote for a
/// command its own `commands` rules deny is not run.
#[test]
fn sc_exec_applies_its_own_command_rules() {
    let scratch = Scratch::new();
    let record = |id: &str, command: &str| {
        json!({"id": id, "call": bash(command), "decision": "allow", "reasons": ["the gate said allow"]})
            .to_string()
    };
    let input = format!(
        "{}\n{}\n",
        record("wipe", "git status; rm -fr /w/proj"),
        record("hidden", "bash -c 'sudo rm -r -f ~'")
    );
    let out = scratch
        .cmd("sc-exec")
        .args(["--policy", pack_path().to_str().unwrap(), "--home", HOME])
        .timeout(PROCESS_LIMIT)
        .write_stdin(input)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let out = parse_stdout(&out.stdout);
    assert_eq!(out.len(), 2);
    for record in &out {
        assert_eq!(record["outcome"]["status"], "skipped", "{record}");
        let reason = record["outcome"]["reason"].as_str().unwrap();
        assert!(
            reason.contains("denied") && reason.contains("commands.rules[23]"),
            "{record}"
        );
    }
}

/// sc-mcp applies the command rules to a `tools/call` whose tool `commands` maps: a denied
/// command never reaches the server, an allowed one does.
#[test]
fn sc_mcp_applies_command_rules_to_a_tool_call() {
    let scratch = Scratch::new();
    let policy = scratch.write(
        "policy.json",
        json!({
            "denyTools": [],
            "sensitiveTools": [],
            "commands": {
                "tools": {"echo": "command"},
                "rules": [
                    {"prefix": ["git", "status"], "decision": "allow", "match": ["git status -s"]},
                    {"prefix": ["rm", "-r"], "decision": "deny", "match": ["rm -fr x"]}
                ]
            }
        })
        .to_string(),
    );
    let mut proxy = Proxy::spawn(
        &scratch,
        &["--policy", policy.to_str().unwrap(), "--agent", "coder"],
        &fake_server(),
    );
    proxy.initialize();
    let allowed = proxy.call(1, "echo", json!({"command": "git status"}));
    assert!(!is_error(&allowed), "{allowed}");
    let denied = proxy.call(
        2,
        "echo",
        json!({"command": "cd /tmp && command rm -rv stuff"}),
    );
    assert!(is_error(&denied), "{denied}");
    let text = result_text(&denied);
    assert!(
        text.contains("rm -rv stuff (in \"cd /tmp && command rm -rv stuff\") matches commands.rules[1] (prefix rm -r): deny"),
        "{text}"
    );
    let malformed = proxy.call(3, "echo", json!({"cmd": "git status"}));
    assert!(is_error(&malformed), "{malformed}");
    let done = proxy.finish();
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
    let received = server_received(&scratch);
    assert!(received.contains("git status"), "{received}");
    assert!(!received.contains("stuff"), "{received}");
    assert!(!received.contains("\"cmd\""), "{received}");
}

/// Every load error of the two keys stops every door with exit 2, naming the key (the rule's
/// index and the example, for an example that does not behave).
#[test]
fn a_policy_error_in_commands_or_paths_exits_2_naming_it() {
    let scratch = Scratch::new();
    let cases = [
        (json!({"comands": {}}), "unknown key `comands`; did you mean `commands`?"),
        (json!({"commands": {"rule": []}}), "key `commands`: unknown key `rule`; did you mean `rules`?"),
        (
            json!({"commands": {"rules": [{"prefix": ["ls"], "decison": "allow"}]}}),
            "key `commands.rules[0]`: unknown key `decison`; did you mean `decision`?",
        ),
        (
            json!({"commands": {"rules": [{"prefix": ["ls"], "decision": "allow"},
                {"prefix": ["git", "status"], "decision": "allow", "match": ["git status", "git -c a=b status"]}]}}),
            "key `commands.rules[1].match[1]`: the example \"git -c a=b status\" does not match the rule (prefix git status)",
        ),
        (
            json!({"commands": {"rules": [{"prefix": ["git"], "decision": "hold", "notMatch": ["ls; git push"]}]}}),
            "key `commands.rules[0].notMatch[0]`: the example \"ls; git push\" matches the rule (prefix git)",
        ),
        (
            json!({"commands": {"rules": [{"prefix": [], "decision": "deny"}]}}),
            "key `commands.rules[0].prefix`: is empty",
        ),
        (
            json!({"commands": {"rules": [{"prefix": ["rm"], "decision": "block"}]}}),
            "key `commands.rules[0].decision`: expected \"allow\", \"hold\" or \"deny\", found \"block\"",
        ),
        (
            json!({"commands": {"unmatched": "ask"}}),
            "key `commands.unmatched`: expected \"allow\", \"hold\" or \"deny\"",
        ),
        (json!({"commands": {"dynamic": "allow"}}), "key `commands.dynamic`: must be \"hold\" or \"deny\""),
        (
            json!({"paths": {"rules": [{"glob": ["src/[x"], "write": "deny"}]}}),
            "key `paths.rules[0].glob[0]`: the glob \"src/[x\" does not compile",
        ),
        (json!({"paths": {"outsideroot": "hold"}}), "key `paths`: unknown key `outsideroot`; did you mean `outsideRoot`?"),
        (
            json!({"paths": {"rules": [{"glob": "x", "write": "maybe"}]}}),
            "key `paths.rules[0].write`: expected \"allow\", \"hold\" or \"deny\", found \"maybe\"",
        ),
    ];
    for (n, (policy, expected)) in cases.iter().enumerate() {
        let file = scratch.write(&format!("bad-{n}.json"), policy.to_string());
        let out = scratch
            .cmd("sc-gate")
            .arg("--policy")
            .arg(&file)
            .timeout(PROCESS_LIMIT)
            .write_stdin("")
            .assert()
            .code(2)
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{policy}: {stderr}");
        assert!(stderr.contains(&format!("bad-{n}.json")), "{stderr}");
    }
    // The same loader at the other doors.
    let file = scratch.write("bad-example.json", cases[3].0.to_string());
    let file = file.to_str().unwrap();
    let expected = cases[3].1;
    for (bin, extra) in [
        ("sc-exec", &[][..]),
        ("sc-hook", &[][..]),
        ("sc-mcp", &["--", "true"][..]),
    ] {
        let out = scratch
            .cmd(bin)
            .args(["--policy", file])
            .args(extra)
            .timeout(PROCESS_LIMIT)
            .write_stdin("")
            .assert()
            .code(2)
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{bin}: {stderr}");
    }
}

/// `--help` of each door names `--home` and `--root` and says what the keys do.
#[test]
fn every_door_documents_home_and_root() {
    for bin in ["sc-gate", "sc-exec", "sc-mcp", "sc-hook"] {
        let out = Command::new(bin_path(bin)).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        for needle in [
            "--home <DIR>",
            "--root <DIR>",
            "`commands` and `paths`",
            "cwd",
        ] {
            assert!(
                help.contains(needle),
                "{bin} --help lacks {needle:?}:\n{help}"
            );
        }
    }
}

/// A symbolic link already in the project (a cloned repository can carry one) does not carry a
/// shell command's path past the rules that name where it leads: sc-hook follows a command's
/// paths through their links, wildcards expanded as bash would, and the stricter answer wins.
/// Without it, `cat cloud/credentials` with `cloud -> ~/.aws` was allowed in an untainted
/// session, and `echo x > conf/settings.json` with `conf -> .claude` wrote the agent's settings.
#[test]
fn a_link_in_the_project_does_not_carry_a_command_past_the_paths_rules() {
    let scratch = Scratch::new();
    let top = std::fs::canonicalize(scratch.dir.path()).unwrap();
    let (home, proj) = (top.join("home"), top.join("proj"));
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(home.join(".aws/credentials"), "[default]\nkey = k\n").unwrap();
    std::fs::create_dir_all(proj.join(".claude")).unwrap();
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::write(proj.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::os::unix::fs::symlink(home.join(".aws"), proj.join("cloud")).unwrap();
    std::os::unix::fs::symlink(".claude", proj.join("conf")).unwrap();
    // Found by a review: a name with a brace, a quoted `[`, a link through /proc/self/root.
    std::os::unix::fs::symlink(home.join(".aws"), proj.join("n{")).unwrap();
    std::os::unix::fs::symlink(".claude", proj.join("c{")).unwrap();
    std::fs::create_dir_all(proj.join("docs[1]")).unwrap();
    std::os::unix::fs::symlink(home.join(".aws"), proj.join("docs[1]/cloud")).unwrap();
    let through_root = format!("/proc/self/root{}", home.join(".aws").display());
    std::os::unix::fs::symlink(&through_root, proj.join("pcloud")).unwrap();
    let cwd = proj.to_str().unwrap();
    // One tool call through sc-hook, as Claude Code makes it: its decision and reason.
    let hook = |n: usize, tool: &str, input: Value| {
        let input = pre_tool_use("links", tool, &input, Some(cwd), &format!("toolu_{n}"));
        let homes = (home.as_path(), Some(home.as_path()));
        hook_answer(&run_hook_in(&scratch, &pack_path(), &input, homes, &proj))
    };
    let ask = |n: usize, command: &str| hook(n, "Bash", json!({"command": command}));
    let secret = home.join(".aws/credentials").display().to_string();
    // Held already by its text: a wildcard that may match `**/*.pem`.
    assert_eq!(ask(9, "cat cloud/*").0, "hold");
    for (n, command) in [
        "cat cloud/credentials",
        "cat cl*/credentials",
        "cat cloud/../.aws/credentials",
        "wc -c < cloud/credentials",
        "cat *{/credentials",
        "cat 'docs[1]'/cl*/credentials",
        "cat pcloud/credentials",
    ]
    .into_iter()
    .enumerate()
    {
        let (decision, reason) = ask(n, command);
        assert_eq!(decision, "hold", "{command}: {reason}");
        assert!(
            reason.contains("leads through a symbolic link to") && reason.contains(&secret),
            "{command}: {reason}"
        );
    }
    // Found by a second review: `..` after /proc/thread-self, and an open folder used as a path.
    let aws = home.join(".aws");
    for (n, command) in [
        format!(
            "cat /proc/thread-self/../../root{}/credentials",
            aws.display()
        ),
        format!("cat /dev/fd/../root{}/credentials", aws.display()),
        "cat /dev/fd/3/cloud/credentials 3<.".to_owned(),
        "cat /proc/thread-self/../../cwd/cloud/credentials".to_owned(),
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(ask(30 + n, &command).0, "hold", "{command}");
    }
    // Found by a third review: a file tool, and an MCP filesystem tool's path arguments, are
    // judged where they lead too.
    let tool = |n: usize, name: &str, input: Value| hook(n, name, input).0;
    let through_pid1 = format!("/proc/1/cwd{}/credentials", aws.display());
    assert_eq!(tool(40, "Read", json!({"file_path": through_pid1})), "hold");
    let linked = proj.join("cloud/credentials").display().to_string();
    assert_eq!(
        tool(
            41,
            "mcp__filesystem__read_multiple_files",
            json!({"paths": [linked]})
        ),
        "hold"
    );
    let settings = proj.join("conf/settings.json").display().to_string();
    let source = proj.join("src/main.rs").display().to_string();
    assert_eq!(
        tool(
            42,
            "mcp__filesystem__move_file",
            json!({"source": source, "destination": settings})
        ),
        "deny"
    );
    for (n, command) in [
        "echo x > conf/settings.json",
        "cp src/main.rs c*{/settings.json",
    ]
    .into_iter()
    .enumerate()
    {
        let (decision, reason) = ask(15 + n, command);
        assert_eq!(decision, "deny", "{command}: {reason}");
        assert!(
            reason.contains(".claude/settings.json"),
            "{command}: {reason}"
        );
    }
    // What leads where it is written is judged as before.
    for (n, command) in [
        "cat src/main.rs",
        "ls src/*.rs",
        "grep -n main src/*.rs",
        "echo done > /dev/stderr",
        "cat /proc/net/dev",
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(ask(20 + n, command).0, "allow", "{command}");
    }
}

/// A copy of a folder's contents (`cp -r tpl/. .`, `cp -rT tpl .`) names no file it writes:
/// sc-hook lists the tree and judges each file where it lands. Before, a copy of a template
/// holding `.claude/settings.json` onto the project was allowed by the folder's name.
#[test]
fn a_copy_of_a_trees_contents_is_judged_file_by_file_where_it_lands() {
    let scratch = Scratch::new();
    let top = std::fs::canonicalize(scratch.dir.path()).unwrap();
    let (home, proj) = (top.join("home"), top.join("proj"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(proj.join("tpl/.claude")).unwrap();
    std::fs::write(proj.join("tpl/.claude/settings.json"), "{}\n").unwrap();
    std::fs::create_dir_all(proj.join("docs/guide")).unwrap();
    std::fs::write(proj.join("docs/guide/intro.md"), "# Intro\n").unwrap();
    // A link in a tree is copied as a link, and judged where it lands.
    std::fs::create_dir_all(proj.join("linked")).unwrap();
    std::os::unix::fs::symlink("/tmp", proj.join("linked/.claude")).unwrap();
    let cwd = proj.to_str().unwrap();
    let ask = |n: usize, command: &str| {
        let input = pre_tool_use(
            "trees",
            "Bash",
            &json!({"command": command}),
            Some(cwd),
            &format!("toolu_{n}"),
        );
        let homes = (home.as_path(), Some(home.as_path()));
        hook_answer(&run_hook_in(&scratch, &pack_path(), &input, homes, &proj))
    };
    for (n, command) in [
        "cp -r tpl/. .",
        "cp -rT tpl .",
        "cp -a --no-target-directory tpl .",
        "cp -r tpl/./ \"$PWD\"",
        "cp -r linked/. .",
        // Found by a review: the destination named by `-t`.
        "cp -rt. tpl/.",
        "cp -r --target-directory . tpl/.",
        // Found by a third review: a required value taken for the destination.
        "cp -r tpl/. . --sparse auto",
        "cp -rT tpl . --no-preserve all",
    ]
    .into_iter()
    .enumerate()
    {
        let (decision, reason) = ask(n, command);
        assert_eq!(decision, "deny", "{command}: {reason}");
        assert!(
            reason.contains("which the copy writes"),
            "{command}: {reason}"
        );
        assert!(reason.contains(".claude"), "{command}: {reason}");
    }
    // A tree of ordinary files copied onto the project is ordinary work.
    for (n, command) in ["cp -r docs/. .", "cp -rT docs/guide out", "cp -r tpl out"]
        .into_iter()
        .enumerate()
    {
        let (decision, reason) = ask(10 + n, command);
        assert_eq!(decision, "allow", "{command}: {reason}");
    }
    // A tree that is not there yet (the command may make it) or that the rest of the command
    // may change is not judged by what the folder holds now: onto the project, any file.
    for (n, command) in [
        "cp -r made-later/. .",
        "git pull -q ../elsewhere && cp -r docs/. .",
    ]
    .into_iter()
    .enumerate()
    {
        let (decision, reason) = ask(20 + n, command);
        assert_eq!(decision, "deny", "{command}: {reason}");
        assert!(
            reason.contains("so it may match any glob"),
            "{command}: {reason}"
        );
    }
}
