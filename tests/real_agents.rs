//! sc-hook inside the real coding agents (issue 31): Claude Code, Codex CLI, Gemini CLI and
//! GitHub Copilot CLI, the published packages pinned in testdata/agents (installed by
//! `make test-deps`), each run non-interactively in a temporary home and project with the hook
//! that `sc-hook install` wrote, against a scripted model endpoint on loopback
//! (testdata/agents/fake-model.py). The model asks for `git status` (allowed: it runs, and its
//! output comes back to the model) and then for a write to the agent's own hook configuration
//! (denied: the file is unchanged, and sc-hook's reason comes back to the model). The audit log
//! holds both decisions with the agent's kind, and its chain verifies.
//!
//! Cursor is not published as a package the tests can install: its contract is tested on
//! recorded inputs (tests/hook_contracts.rs).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::{bin_path, parse_lines, testdata, Scratch};

/// The most an agent run (or the model endpoint's start) may take: far above what any needs
/// here (one to five seconds).
const LIMIT: Duration = Duration::from_secs(60);

/// The prompt every agent is given; the scripted model ignores it.
const PROMPT: &str = "Check the repository's status, then update the hook settings.";

/// The scripted model endpoint, a child process that ends when this is dropped (its stdin, held
/// here, closes; it is killed as well).
struct FakeModel {
    child: Child,
    _stdin: ChildStdin,
    port: u16,
    log: PathBuf,
}

impl FakeModel {
    fn start(scratch: &Scratch, turns: Value) -> FakeModel {
        FakeModel::start_script(scratch, json!({"turns": turns, "final": "All done."}))
    }

    /// A model whose script is whole: its turns, and those of subagents by their markers.
    fn start_script(scratch: &Scratch, script: Value) -> FakeModel {
        let script = scratch.write("model-script.json", serde_json::to_vec(&script).unwrap());
        let log = scratch.path("model-requests.jsonl");
        let mut child = Command::new("python3")
            .arg(testdata("agents/fake-model.py"))
            .arg(&script)
            .arg(&log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the fake model endpoint");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = sender.send(line);
        });
        let line = receiver
            .recv_timeout(LIMIT)
            .expect("the fake model endpoint says its port");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the fake model endpoint did not start: {line:?}"));
        FakeModel {
            child,
            _stdin: stdin,
            port,
            log,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request the agent made, in order.
    fn requests(&self) -> Vec<Value> {
        parse_lines(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }

    /// The tool results of the longest conversation the agent sent: what each call gave back.
    fn tool_results(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|request| {
                request["results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|text| text.as_str().unwrap().to_owned())
                    .collect::<Vec<_>>()
            })
            .max_by_key(Vec::len)
            .unwrap_or_default()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One of the agents, as the tests drive it.
#[derive(Clone, Copy)]
enum Agent {
    Claude,
    Codex,
    Gemini,
    Copilot,
}

impl Agent {
    /// `sc-hook --for NAME`.
    fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Copilot => "copilot",
        }
    }

    /// The agent kind the audit log names.
    fn kind(self) -> &'static str {
        match self {
            Agent::Claude => "claude-code",
            other => other.name(),
        }
    }

    /// The agent's name in sc-hook's exec records.
    fn title(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex CLI",
            Agent::Gemini => "Gemini CLI",
            Agent::Copilot => "GitHub Copilot CLI",
        }
    }

    /// The file `sc-hook install --project` writes, relative to the project.
    fn hook_file(self) -> &'static str {
        match self {
            Agent::Claude => ".claude/settings.json",
            Agent::Codex => ".codex/config.toml",
            Agent::Gemini => ".gemini/settings.json",
            Agent::Copilot => ".github/hooks/skeleton-crew.json",
        }
    }

    /// The model's call of the agent's shell tool, in the agent's own tool names.
    fn shell(self, command: &str) -> Value {
        match self {
            Agent::Claude => {
                json!({"name": "Bash", "input": {"command": command, "description": "status"}})
            }
            Agent::Codex => json!({"name": "exec_command", "input": {"cmd": command}}),
            Agent::Gemini => json!({"name": "run_shell_command", "input": {"command": command}}),
            Agent::Copilot => {
                json!({"name": "bash", "input": {"command": command, "description": "status"}})
            }
        }
    }

    /// The model's write of `path` with the agent's file tool (Codex offers none to a model it
    /// has no metadata for: a shell command writes instead).
    fn write(self, path: &Path) -> Value {
        let path = path.to_str().unwrap();
        match self {
            Agent::Claude => {
                json!({"name": "Write", "input": {"file_path": path, "content": "{}"}})
            }
            Agent::Codex => {
                json!({"name": "exec_command", "input": {"cmd": format!("echo pwned >> {path}")}})
            }
            Agent::Gemini => {
                json!({"name": "write_file", "input": {"file_path": path, "content": "{}"}})
            }
            Agent::Copilot => json!({"name": "create", "input": {"path": path, "file_text": "{}"}}),
        }
    }

    /// The agent's executable, installed by `make test-deps`: a missing one fails the test
    /// (never a silent pass).
    fn program(self) -> PathBuf {
        let bin = testdata("agents/node_modules/.bin").join(self.name());
        assert!(
            bin.exists(),
            "{} is not installed: run `make test-deps` (npm ci --prefix testdata/agents)",
            bin.display()
        );
        bin
    }
}

/// A temporary home, state folder and git project, with sc-hook installed for the agent.
struct Setup {
    scratch: Scratch,
    home: PathBuf,
    project: PathBuf,
    audit: PathBuf,
}

impl Setup {
    fn new(agent: Agent) -> Setup {
        Setup::with_hook(agent, &bin_path("sc-hook"))
    }

    /// The hook installed by the sc-hook at `hook`, whose own path the entry names.
    fn with_hook(agent: Agent, hook: &Path) -> Setup {
        let scratch = Scratch::new();
        let home = scratch.path("home");
        let project = scratch.path("project");
        let audit = scratch.path("state/audit.jsonl");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&project)
            .env("HOME", &home)
            .output()
            .unwrap();
        assert!(git.status.success(), "git init: {git:?}");
        let pack = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/claude-code.json");
        let mut install = Command::new(hook);
        install
            .env_clear()
            .env("HOME", &home)
            .env("XDG_STATE_HOME", scratch.path("state"))
            .arg("install")
            .args(["--for", agent.name(), "--project"])
            .arg(&project)
            .arg("--policy")
            .arg(&pack)
            .arg("--audit")
            .arg(&audit);
        let install = crate::util::output_when_free(&mut install);
        assert!(
            install.status.success(),
            "sc-hook install --for {}: {}",
            agent.name(),
            String::from_utf8_lossy(&install.stderr)
        );
        Setup {
            scratch,
            home,
            project,
            audit,
        }
    }

    /// The agent's command, run non-interactively in the project against `model`, with nothing
    /// of this process's environment but PATH (for node), and every update check, telemetry and
    /// sign-in turned off so that only loopback is reached.
    fn command(&self, agent: Agent, model: &FakeModel) -> Command {
        let mut cmd = Command::new(agent.program());
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", self.scratch.path("state"))
            .env("NO_COLOR", "1")
            .current_dir(&self.project)
            .stdin(Stdio::null());
        match agent {
            Agent::Claude => {
                // No preflight of a fetched domain (a request to the vendor, off loopback).
                let settings = self.home.join(".claude/settings.json");
                std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
                std::fs::write(&settings, r#"{"skipWebFetchPreflight": true}"#).unwrap();
                cmd.env("ANTHROPIC_BASE_URL", model.url())
                    .env("ANTHROPIC_API_KEY", "sk-ant-fake")
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .env("DISABLE_AUTOUPDATER", "1")
                    .env("DISABLE_TELEMETRY", "1")
                    .env("DISABLE_ERROR_REPORTING", "1")
                    // The agent's own permissions allow every tool: what is refused, sc-hook
                    // refused.
                    .args(["-p", PROMPT, "--output-format", "json", "--allowedTools"])
                    .args(["Bash", "Write", "Edit", "Read"]);
            }
            Agent::Codex => {
                // A provider on loopback, the project trusted (Codex loads a project's
                // .codex/config.toml only then), analytics and the update check off.
                let codex_home = self.home.join(".codex");
                let config = format!(
                    "model = \"fake-model\"\nmodel_provider = \"fake\"\n\
                     check_for_update_on_startup = false\n\n\
                     [model_providers.fake]\nname = \"fake\"\nbase_url = \"{}/v1\"\n\
                     wire_api = \"responses\"\nenv_key = \"FAKE_MODEL_KEY\"\n\n\
                     [analytics]\nenabled = false\n\n[projects.{:?}]\ntrust_level = \"trusted\"\n",
                    model.url(),
                    self.project.to_str().unwrap()
                );
                std::fs::create_dir_all(&codex_home).unwrap();
                std::fs::write(codex_home.join("config.toml"), config).unwrap();
                // Codex runs a hook only once a person has reviewed and trusted it (`/hooks`,
                // by its hash); a non-interactive run says it vetted the hooks itself.
                cmd.env("CODEX_HOME", &codex_home)
                    .env("FAKE_MODEL_KEY", "fake")
                    .args(["exec", "--sandbox", "danger-full-access"])
                    .args(["--dangerously-bypass-hook-trust", "--skip-git-repo-check"])
                    .arg(PROMPT);
            }
            Agent::Gemini => {
                let settings = self.home.join(".gemini/settings.json");
                std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
                std::fs::write(
                    &settings,
                    r#"{"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},
                        "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
                        "security": {"auth": {"selectedType": "gemini-api-key"}}}"#,
                )
                .unwrap();
                // A named model: the default (auto) first asks a router model for a score.
                // The project is trusted: an untrusted one's settings, hooks included, are
                // not loaded.
                cmd.env("GOOGLE_GEMINI_BASE_URL", model.url())
                    .env("GEMINI_API_KEY", "fake")
                    .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
                    .args(["-p", PROMPT, "-m", "gemini-2.5-flash"])
                    .args(["--approval-mode", "yolo"]);
            }
            Agent::Copilot => {
                // Offline with a provider of one's own: no GitHub sign-in, no telemetry, no
                // update. COPILOT_ALLOW_ALL=true trusts the folder, which loads its hooks.
                cmd.env("COPILOT_OFFLINE", "true")
                    .env("COPILOT_PROVIDER_BASE_URL", format!("{}/v1", model.url()))
                    .env("COPILOT_PROVIDER_API_KEY", "fake")
                    .env("COPILOT_MODEL", "gpt-4.1")
                    .env("COPILOT_AUTO_UPDATE", "false")
                    .env("COPILOT_ALLOW_ALL", "true")
                    .args(["-p", PROMPT, "--allow-all-tools"]);
            }
        }
        cmd
    }
}

/// Runs a command to its end within [`LIMIT`], killing it past that (a failure).
fn run(mut cmd: Command) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agent starts");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    match receiver.recv_timeout(LIMIT) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            panic!("the agent did not end within {LIMIT:?}");
        }
    }
}

/// What a run did, for a failing assertion: its exit, its output and what the model was sent.
fn story(what: &str, out: &Output, model: &FakeModel) -> String {
    format!(
        "{what} exited {:?}\nstdout: {}\nstderr: {}\nmodel saw: {:#?}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        model.tool_results()
    )
}

/// The gate events of the audit log, and its chain checked by `sc-report --verify`.
fn verified_gate_events(audit: &Path) -> Vec<Value> {
    let verify = Command::new(bin_path("sc-report"))
        .env_clear()
        .arg("--verify")
        .arg(audit)
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "sc-report --verify: {}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    assert!(String::from_utf8_lossy(&verify.stdout).contains("chain intact"));
    parse_lines(&std::fs::read_to_string(audit).unwrap())
}

/// The agent runs `git status` (allowed) and is refused a write to its own hook file.
fn allowed_runs_denied_does_not(agent: Agent) {
    let setup = Setup::new(agent);
    let hook_file = setup.project.join(agent.hook_file());
    let installed = std::fs::read(&hook_file).unwrap();
    let model = FakeModel::start(
        &setup.scratch,
        json!([agent.shell("git status"), agent.write(&hook_file)]),
    );
    let out = run(setup.command(agent, &model));
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");

    // The allowed call ran: git's own words came back to the model.
    let results = model.tool_results();
    assert_eq!(results.len(), 2, "{said}");
    assert!(results[0].contains("No commits yet"), "{said}");
    // The denied one did not: the file is as installed, and sc-hook's reason reached the model.
    assert_eq!(std::fs::read(&hook_file).unwrap(), installed, "{said}");
    assert!(
        results[1].contains("Skeleton Crew") && results[1].contains(agent.hook_file()),
        "{said}"
    );

    // The audit log: both decisions, by the agent's kind, on a chain that verifies.
    let events = verified_gate_events(&setup.audit);
    let gate = |decision: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["stage"] == "gate" && e["decision"] == decision)
            .collect()
    };
    let allowed = gate("allow");
    assert_eq!(allowed.len(), 1, "{events:#?}");
    assert_eq!(allowed[0]["agentKind"], agent.kind());
    assert_eq!(allowed[0]["call"]["tool"], "Bash");
    assert_eq!(allowed[0]["call"]["args"]["command"], "git status");
    let denied = gate("deny");
    assert_eq!(denied.len(), 1, "{events:#?}");
    assert_eq!(denied[0]["agentKind"], agent.kind());
    let reasons = denied[0]["reasons"].to_string();
    assert!(reasons.contains(agent.hook_file()), "{reasons}");
    // The run was recorded too, as the agent's own (not another agent's).
    let ran = format!("ran Bash in {}", agent.title());
    assert!(
        events.iter().any(|e| e["stage"] == "exec"
            && e["outcome"]["reason"]
                .as_str()
                .is_some_and(|reason| reason.starts_with(&ran))),
        "no exec record says {ran:?}: {events:#?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| e["stage"] == "exec" && (e["tool"] == "Write" || e["call"]["tool"] == "Write")),
        "the denied call is recorded as run: {events:#?}"
    );
}

#[test]
fn claude_code_runs_git_status_and_is_refused_its_settings() {
    allowed_runs_denied_does_not(Agent::Claude);
}

#[test]
fn codex_runs_git_status_and_is_refused_its_config() {
    allowed_runs_denied_does_not(Agent::Codex);
}

#[test]
fn gemini_runs_git_status_and_is_refused_its_settings() {
    allowed_runs_denied_does_not(Agent::Gemini);
}

#[test]
fn copilot_runs_git_status_and_is_refused_its_hooks() {
    allowed_runs_denied_does_not(Agent::Copilot);
}

/// The model asks for `git push` to the project's remote (a bare repository beside it): the
/// pack holds it, and no agent here can ask its person through sc-hook in a non-interactive
/// run, so the push does not happen (Claude Code puts the question and, with no one to answer
/// in `-p`, refuses; Codex CLI, Gemini CLI and Copilot CLI have no ask, and sc-hook denies,
/// saying it needs a person). The remote stays empty; the audit log holds the hold.
fn a_push_is_held(agent: Agent) {
    let setup = Setup::new(agent);
    let remote = setup.scratch.path("remote.git");
    let git = |args: &[&str], dir: &Path| {
        let out = Command::new("git")
            .args(["-c", "user.name=Dev", "-c", "user.email=dev@example.test"])
            .args(args)
            .current_dir(dir)
            .env("HOME", &setup.home)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(
        &["init", "-q", "--bare", remote.to_str().unwrap()],
        &setup.project,
    );
    git(
        &["remote", "add", "origin", remote.to_str().unwrap()],
        &setup.project,
    );
    std::fs::write(setup.project.join("README.md"), "hello\n").unwrap();
    git(&["add", "README.md"], &setup.project);
    git(&["commit", "-qm", "first"], &setup.project);
    let model = FakeModel::start(
        &setup.scratch,
        json!([agent.shell("git push origin HEAD:main")]),
    );
    let out = run(setup.command(agent, &model));
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    let results = model.tool_results();
    assert_eq!(results.len(), 1, "{said}");
    assert!(results[0].contains("git push"), "{said}");
    // Nothing reached the remote.
    let refs = Command::new("git")
        .args(["for-each-ref"])
        .current_dir(&remote)
        .output()
        .unwrap();
    assert!(
        refs.status.success() && refs.stdout.is_empty(),
        "{said}\nremote: {refs:?}"
    );
    let events = verified_gate_events(&setup.audit);
    let held: Vec<&Value> = events
        .iter()
        .filter(|e| e["stage"] == "gate" && e["decision"] == "hold")
        .collect();
    assert_eq!(held.len(), 1, "{events:#?}");
    assert_eq!(held[0]["agentKind"], agent.kind());
    assert_eq!(
        held[0]["call"]["args"]["command"],
        "git push origin HEAD:main"
    );
    assert!(
        !events.iter().any(|e| e["stage"] == "exec"),
        "the push is recorded as run: {events:#?}"
    );
}

#[test]
fn claude_code_does_not_push_unasked() {
    a_push_is_held(Agent::Claude);
}

#[test]
fn codex_does_not_push_unasked() {
    a_push_is_held(Agent::Codex);
}

#[test]
fn gemini_does_not_push_unasked() {
    a_push_is_held(Agent::Gemini);
}

#[test]
fn copilot_does_not_push_unasked() {
    a_push_is_held(Agent::Copilot);
}

/// Taint at the doors of the agents that take a rewrite (Claude Code's `updatedInput`, Gemini
/// CLI's `tool_input`): after the hermetic MCP server as `fetch` (whose output the pack says
/// taints) answered, `touch` runs confined by sc-sandbox, for real: the file is made in the
/// project, and the gate record says the call was sandboxed, with the command as the model
/// wrote it.
fn a_tainted_session_runs_confined(agent: Agent) {
    let setup = Setup::new(agent);
    let fake = testdata("mcp/fake-server.py");
    let servers = json!({"fetch": {"command": "python3", "args": [fake]}});
    let fetch = match agent {
        Agent::Claude => "mcp__fetch__echo",
        Agent::Gemini => "mcp_fetch_echo",
        _ => unreachable!("only the agents that take a rewrite"),
    };
    let model = FakeModel::start(
        &setup.scratch,
        json!([
            {"name": fetch, "input": {"text": "a page from the web"}},
            agent.shell("touch after-the-page.txt"),
        ]),
    );
    let mut cmd = setup.command(agent, &model);
    match agent {
        Agent::Claude => {
            let config = setup.scratch.write(
                "mcp.json",
                serde_json::to_vec(&json!({"mcpServers": servers})).unwrap(),
            );
            cmd.arg("--mcp-config")
                .arg(config)
                .arg("--strict-mcp-config");
            cmd.args(["--allowedTools", "mcp__fetch__echo"]);
        }
        _ => {
            let file = setup.home.join(".gemini/settings.json");
            let mut settings: Value =
                serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            settings["mcpServers"] = servers;
            std::fs::write(&file, serde_json::to_vec(&settings).unwrap()).unwrap();
        }
    }
    let out = run(cmd);
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    assert_eq!(model.tool_results().len(), 2, "{said}");
    assert!(setup.project.join("after-the-page.txt").exists(), "{said}");
    let events = verified_gate_events(&setup.audit);
    let touch = events
        .iter()
        .find(|e| e["stage"] == "gate" && e["originalCommand"] == "touch after-the-page.txt")
        .unwrap_or_else(|| panic!("no confined gate record: {events:#?}"));
    assert_eq!(touch["decision"], "allow", "{touch}");
    assert_eq!(touch["sandboxed"], true, "{touch}");
    assert_eq!(touch["agentKind"], agent.kind(), "{touch}");
    assert!(
        touch["agentState"]["taintedBy"]["tool"] == "mcp__fetch__echo",
        "{touch}"
    );
}

#[test]
fn claude_code_runs_a_tainted_sessions_command_confined() {
    a_tainted_session_runs_confined(Agent::Claude);
}

#[test]
fn gemini_runs_a_tainted_sessions_command_confined() {
    a_tainted_session_runs_confined(Agent::Gemini);
}

/// Taint at the doors of the agents that cannot take a rewrite or ask: Copilot CLI with the
/// hermetic MCP server as `fetch` (whose output the pack says taints) and as `notes` (a server
/// the pack does not name). Before the taint `notes` answers and `touch` runs; after it, `notes`
/// is held and `touch`, which the pack would run confined, cannot be (Copilot CLI takes no
/// rewrite): both are held, so refused (Copilot CLI cannot ask) with a reason that says so, the
/// audit log says held, and neither happens.
#[test]
fn copilot_refuses_what_a_tainted_session_would_run_confined_or_held() {
    let agent = Agent::Copilot;
    let setup = Setup::new(agent);
    let fake = testdata("mcp/fake-server.py");
    let notes_log = setup.scratch.path("notes.log");
    let config = setup.home.join(".copilot/mcp-config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let server = |log: Option<&Path>| {
        let mut entry =
            json!({"type": "local", "command": "python3", "args": [fake], "tools": ["*"]});
        if let Some(log) = log {
            entry["env"] = json!({"FAKE_MCP_LOG": log});
        }
        entry
    };
    std::fs::write(
        &config,
        serde_json::to_vec(&json!({"mcpServers": {
            "notes": server(Some(&notes_log)),
            "fetch": server(None),
        }}))
        .unwrap(),
    )
    .unwrap();
    let model = FakeModel::start(
        &setup.scratch,
        json!([
            {"name": "notes-echo", "input": {"text": "before the page"}},
            agent.shell("touch before.txt"),
            {"name": "fetch-echo", "input": {"text": "a page from the web"}},
            {"name": "notes-echo", "input": {"text": "after the page"}},
            agent.shell("touch after.txt"),
        ]),
    );
    let out = run(setup.command(agent, &model));
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    let results = model.tool_results();
    assert_eq!(results.len(), 5, "{said}");
    assert!(results[0].contains("before the page"), "{said}");
    assert!(setup.project.join("before.txt").exists(), "{said}");
    assert!(results[3].contains("holdUnnamedWhenTainted"), "{said}");
    assert!(results[4].contains("Denied by preToolUse hook"), "{said}");
    assert!(!setup.project.join("after.txt").exists(), "{said}");
    let reached = std::fs::read_to_string(&notes_log).unwrap();
    assert!(
        reached.contains("before the page") && !reached.contains("after the page"),
        "{reached}"
    );
    let decisions: Vec<(String, String)> = verified_gate_events(&setup.audit)
        .iter()
        .filter(|e| e["stage"] == "gate" && e.get("decision").is_some())
        .inspect(|e| assert_eq!(e["agentKind"], "copilot", "{e}"))
        .map(|e| {
            (
                e["call"]["tool"].as_str().unwrap().to_owned(),
                e["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let tools: Vec<&str> = decisions.iter().map(|(tool, _)| tool.as_str()).collect();
    assert_eq!(
        tools,
        [
            "mcp__notes__echo",
            "Bash",
            "mcp__fetch__echo",
            "mcp__notes__echo",
            "Bash"
        ],
        "{decisions:?}"
    );
    // What the log says is what the agent was told: held (never "allowed, confined").
    assert_eq!(decisions[3].1, "hold", "{decisions:?}");
    assert_eq!(decisions[4].1, "hold", "{decisions:?}");
    assert!(
        results[4].contains("GitHub Copilot CLI cannot run a rewritten command"),
        "{said}"
    );
}

/// The agents the tests drive are the versions pinned for them (a newer one may speak another
/// contract, or need another switch to reach loopback).
#[test]
fn the_agents_run_are_the_pinned_versions() {
    let pins: Value =
        serde_json::from_slice(&std::fs::read(testdata("agents/package.json")).unwrap()).unwrap();
    for (agent, package) in [
        (Agent::Claude, "@anthropic-ai/claude-code"),
        (Agent::Codex, "@openai/codex"),
        (Agent::Gemini, "@google/gemini-cli"),
        (Agent::Copilot, "@github/copilot"),
    ] {
        let pinned = pins["dependencies"][package].as_str().unwrap();
        let home = Scratch::new();
        let mut cmd = Command::new(agent.program());
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path(""))
            .arg("--version")
            .stdin(Stdio::null());
        let out = run(cmd);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains(pinned),
            "{package}: {said}"
        );
    }
}

/// How the hook fails in [`hook_failure`].
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The binary the entry names is gone (uninstalled, moved, a new build elsewhere).
    Missing,
    /// It dies of a signal before it answers (an out-of-memory kill, a crash).
    Killed,
}

/// What the agent did with a call sc-hook would deny, when sc-hook could not answer.
#[derive(Debug, PartialEq)]
enum Seen {
    /// The call ran: the agent fails open.
    Ran,
    /// The call was refused: the agent fails closed.
    Refused,
    /// The agent stopped before it asked the model anything (its prompt hook failed).
    StoppedBeforeTheModel,
}

/// The model asks for a write sc-hook denies and that no agent refuses by itself (a CI workflow
/// of the project), with the hook broken by `fault`.
fn hook_failure(agent: Agent, fault: Fault) -> Seen {
    let copies = Scratch::new();
    let hook = copies.path("bin/sc-hook");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::copy(bin_path("sc-hook"), &hook).unwrap();
    let setup = Setup::with_hook(agent, &hook);
    let installed = std::fs::read_to_string(setup.project.join(agent.hook_file())).unwrap();
    assert!(installed.contains(hook.to_str().unwrap()), "{installed}");
    match fault {
        Fault::Missing => std::fs::remove_file(&hook).unwrap(),
        Fault::Killed => {
            std::fs::remove_file(&hook).unwrap();
            std::fs::write(&hook, "#!/bin/sh\nkill -KILL $$\n").unwrap();
            std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
    }
    let workflow = setup.project.join(".github/workflows/ci.yml");
    std::fs::create_dir_all(workflow.parent().unwrap()).unwrap();
    let model = FakeModel::start(&setup.scratch, json!([agent.write(&workflow)]));
    let out = run(setup.command(agent, &model));
    let said = story(
        &format!("{} with sc-hook {fault:?}", agent.name()),
        &out,
        &model,
    );
    eprintln!("{said}");
    if model.requests().is_empty() {
        assert!(!workflow.exists(), "{said}");
        return Seen::StoppedBeforeTheModel;
    }
    let results = model.tool_results();
    assert_eq!(results.len(), 1, "{said}");
    if workflow.exists() {
        Seen::Ran
    } else {
        Seen::Refused
    }
}

/// What each agent does when the hook it names is missing, or is killed before it answers, as
/// docs/coding-agents.md says ("When the hook crashes, times out or prints nothing"). A change
/// in an agent's behaviour fails this test, so the note is kept true.
#[test]
fn what_each_agent_does_when_sc_hook_cannot_answer() {
    let expected = [
        (Agent::Claude, Fault::Missing, Seen::Ran),
        (Agent::Claude, Fault::Killed, Seen::Ran),
        (Agent::Codex, Fault::Missing, Seen::Ran),
        (Agent::Codex, Fault::Killed, Seen::Ran),
        (Agent::Gemini, Fault::Missing, Seen::StoppedBeforeTheModel),
        (Agent::Gemini, Fault::Killed, Seen::Ran),
        (Agent::Copilot, Fault::Missing, Seen::Refused),
        (Agent::Copilot, Fault::Killed, Seen::Refused),
    ];
    let seen: Vec<_> = expected
        .iter()
        .map(|(agent, fault, _)| (agent.name(), *fault, hook_failure(*agent, *fault)))
        .collect();
    let wanted: Vec<_> = expected
        .into_iter()
        .map(|(agent, fault, seen)| (agent.name(), fault, seen))
        .collect();
    assert_eq!(format!("{seen:?}"), format!("{wanted:?}"));
}

/// Claude Code with three MCP servers: the published filesystem server (pinned in testdata/mcp)
/// as `filesystem`, and the hermetic fake server twice, as `notes` (a server the pack does not
/// name) and as `fetch` (whose output the pack says taints). The filesystem server's paths are
/// judged by the `paths` rules (`pathArguments`): its read of `~/.aws/credentials` is held and
/// its write of `~/.zshrc` denied, though the server may reach both. `notes` runs in an
/// untainted session; after `fetch` tainted it, `notes` is held (`holdUnnamedWhenTainted`) and
/// never reached.
#[test]
fn claude_code_mcp_paths_are_judged_and_an_unnamed_tool_is_held_when_tainted() {
    let agent = Agent::Claude;
    let setup = Setup::new(agent);
    let credentials = setup.home.join(".aws/credentials");
    let zshrc = setup.home.join(".zshrc");
    std::fs::create_dir_all(credentials.parent().unwrap()).unwrap();
    std::fs::write(&credentials, "aws_secret_access_key = NOT-FOR-THE-MODEL\n").unwrap();
    std::fs::write(&zshrc, "# mine\n").unwrap();
    let server = testdata("mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        server.exists(),
        "{} is not installed: run `make test-deps`",
        server.display()
    );
    let fake = testdata("mcp/fake-server.py");
    let notes_log = setup.scratch.path("notes.log");
    let config = setup.scratch.write(
        "mcp.json",
        serde_json::to_vec(&json!({"mcpServers": {
            "filesystem": {"command": "node", "args": [server, setup.home, setup.project]},
            "notes": {"command": "python3", "args": [fake], "env": {"FAKE_MCP_LOG": notes_log}},
            "fetch": {"command": "python3", "args": [fake]},
        }}))
        .unwrap(),
    );
    let model = FakeModel::start(
        &setup.scratch,
        json!([
            {"name": "mcp__filesystem__read_text_file", "input": {"path": credentials}},
            {"name": "mcp__filesystem__write_file", "input": {"path": zshrc, "content": "curl x | sh"}},
            {"name": "mcp__notes__echo", "input": {"text": "before the page"}},
            {"name": "mcp__fetch__echo", "input": {"text": "a page from the web"}},
            {"name": "mcp__notes__echo", "input": {"text": "after the page"}},
        ]),
    );
    let mut cmd = setup.command(agent, &model);
    cmd.arg("--mcp-config")
        .arg(&config)
        .arg("--strict-mcp-config")
        .args(["--allowedTools", "mcp__filesystem__read_text_file"])
        .args([
            "mcp__filesystem__write_file",
            "mcp__notes__echo",
            "mcp__fetch__echo",
        ]);
    let out = run(cmd);
    let results = model.tool_results();
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    assert_eq!(results.len(), 5, "{said}");
    // The secret never reached the model; ~/.zshrc is as it was.
    assert!(!results.concat().contains("NOT-FOR-THE-MODEL"), "{said}");
    assert!(results[0].contains("~/.aws/**"), "{said}");
    assert_eq!(std::fs::read_to_string(&zshrc).unwrap(), "# mine\n");
    assert!(results[1].contains("~/.zshrc"), "{said}");
    // `notes` answered before the taint, and was never asked after it.
    assert!(results[2].contains("before the page"), "{said}");
    assert!(results[4].contains("holdUnnamedWhenTainted"), "{said}");
    let reached = std::fs::read_to_string(&notes_log).unwrap();
    assert!(reached.contains("before the page"), "{reached}");
    assert!(!reached.contains("after the page"), "{reached}");
    // One gate record per call, each with the agent's kind, on a chain that verifies.
    let decisions: Vec<(String, String)> = verified_gate_events(&setup.audit)
        .iter()
        .filter(|e| e["stage"] == "gate" && e.get("decision").is_some())
        .inspect(|e| assert_eq!(e["agentKind"], "claude-code", "{e}"))
        .map(|e| {
            (
                e["call"]["tool"].as_str().unwrap().to_owned(),
                e["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("mcp__filesystem__read_text_file", "hold"),
        ("mcp__filesystem__write_file", "deny"),
        ("mcp__notes__echo", "allow"),
        ("mcp__fetch__echo", "allow"),
        ("mcp__notes__echo", "hold"),
    ]
    .map(|(tool, decision)| (tool.to_owned(), decision.to_owned()));
    assert_eq!(decisions, expected);
}

/// Claude Code's `WebFetch` of a loopback server (the fake model itself, which logs every
/// request it gets), by address and by name, is denied by the `fetch` rules before the agent
/// fetches: the server is never asked for either page. (Only loopback is used here: were the
/// hook to fail, the agent would fetch for real. Its preflight of the domain, a request to its
/// vendor, is turned off for the same reason. The other addresses are in the unit tests.)
#[test]
fn claude_code_is_refused_fetches_to_loopback_by_address_and_name() {
    let agent = Agent::Claude;
    let setup = Setup::new(agent);
    let model = FakeModel::start(
        &setup.scratch,
        json!([
            // `{{PORT}}`: the fake model's own port, put in by it.
            {"name": "WebFetch", "input": {"url": "http://127.0.0.1:{{PORT}}/secret-page", "prompt": "show it"}},
            {"name": "WebFetch", "input": {"url": "http://localhost:{{PORT}}/other-page", "prompt": "show it"}},
        ]),
    );
    let mut cmd = setup.command(agent, &model);
    cmd.arg("WebFetch");
    let out = run(cmd);
    let results = model.tool_results();
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    assert_eq!(results.len(), 2, "{said}");
    assert!(results[0].contains("a loopback address"), "{said}");
    assert!(results[1].contains("a loopback name address"), "{said}");
    assert!(
        !model.requests().iter().any(|request| {
            let path = request["path"].as_str().unwrap();
            path.contains("secret-page") || path.contains("other-page")
        }),
        "a loopback page was fetched: {said}"
    );
    let events = verified_gate_events(&setup.audit);
    let denied: Vec<&Value> = events
        .iter()
        .filter(|e| e["stage"] == "gate" && e["decision"] == "deny")
        .collect();
    assert_eq!(denied.len(), 2, "{events:#?}");
    assert!(denied.iter().all(|e| e["call"]["tool"] == "WebFetch"));
}

/// A secret in `~/.ssh` and in the project's `.env` and `server.pem` that no file tool of the agent may read
/// unasked: the model asks for it with each call `reads` gives (for `~/.ssh` and the project),
/// none is answered with the secret, each is refused with sc-hook's reason, and the audit log
/// holds a hold for each under the vocabulary's name of the tool (`Some`), or a denial with no
/// call for one refused as an input its agent's contract does not read (`None`).
fn no_file_tool_reads_a_secret(
    agent: Agent,
    reads: impl Fn(&Path, &Path) -> Vec<(Value, Option<&'static str>)>,
) {
    let setup = Setup::new(agent);
    let ssh = setup.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    let secret = "PRIVATE-KEY-4f1c9a";
    std::fs::write(ssh.join("id_ed25519"), format!("{secret}\n")).unwrap();
    std::fs::write(setup.project.join(".env"), format!("API_KEY={secret}\n")).unwrap();
    std::fs::write(setup.project.join("server.pem"), format!("{secret}\n")).unwrap();
    std::fs::write(setup.project.join("notes.txt"), "nothing here\n").unwrap();
    let reads = reads(&ssh, &setup.project);
    let turns: Vec<Value> = reads.iter().map(|(call, _)| call.clone()).collect();
    let model = FakeModel::start(&setup.scratch, json!(turns));
    let out = run(setup.command(agent, &model));
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    let results = model.tool_results();
    assert_eq!(results.len(), reads.len(), "{said}");
    for result in &results {
        assert!(
            !result.contains(secret),
            "the secret reached the model: {said}"
        );
        assert!(result.contains("Skeleton Crew"), "{said}");
    }
    let gates: Vec<(String, String)> = verified_gate_events(&setup.audit)
        .iter()
        .filter(|e| e["stage"] == "gate" && e.get("decision").is_some())
        .map(|e| {
            (
                e["call"]["tool"].as_str().unwrap_or("").to_owned(),
                e["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // A call the contract refuses is audited as a denial with no call.
    let expected: Vec<(String, String)> = reads
        .iter()
        .map(|(_, tool)| match tool {
            Some(tool) => (tool.to_string(), "hold".to_owned()),
            None => (String::new(), "deny".to_owned()),
        })
        .collect();
    assert_eq!(gates, expected, "{said}");
}

/// Copilot CLI's own search tools, `grep` (which prints what it finds) and `glob`, are judged
/// as Claude Code's `Grep` and `Glob` are: a search of `~/.ssh` is held, so refused, however
/// the model spells where to search (`paths` as a string or a list; a `path`, which the tool's
/// schema does not name but the tool takes, is refused as an input the gate cannot be sure of).
#[test]
fn copilot_searches_no_secret_unasked() {
    no_file_tool_reads_a_secret(Agent::Copilot, |ssh, _| {
        let ssh = ssh.to_str().unwrap().to_owned();
        vec![
            (
                json!({"name": "grep", "input": {"pattern": "PRIVATE", "paths": [ssh], "output_mode": "content"}}),
                Some("Grep"),
            ),
            (
                json!({"name": "grep", "input": {"pattern": "PRIVATE", "paths": ssh, "output_mode": "content"}}),
                Some("Grep"),
            ),
            // `path`, which the tool's schema does not name, yet this Copilot CLI searches.
            (
                json!({"name": "grep", "input": {"pattern": "PRIVATE", "path": ssh, "output_mode": "content"}}),
                None,
            ),
            (
                json!({"name": "glob", "input": {"pattern": "*", "paths": ssh}}),
                Some("Glob"),
            ),
            (
                json!({"name": "view", "input": {"path": format!("{ssh}/id_ed25519")}}),
                Some("Read"),
            ),
        ]
    });
}

/// Gemini CLI's `read_file` has named its path `absolute_path`, `path` and `file_path`: a call
/// that names a harmless file under one and the project's `server.pem` under another is refused
/// (the gate cannot know which one the tool reads; this Gemini CLI reads `file_path`).
#[test]
fn gemini_reads_no_secret_named_twice() {
    no_file_tool_reads_a_secret(Agent::Gemini, |_, project| {
        let name = |file: &str| project.join(file).to_str().unwrap().to_owned();
        vec![
            (
                json!({"name": "read_file", "input": {"file_path": name("server.pem"), "path": name("notes.txt")}}),
                None,
            ),
            (
                json!({"name": "read_file", "input": {"file_path": name("server.pem"), "absolute_path": name("notes.txt")}}),
                None,
            ),
            (
                json!({"name": "read_file", "input": {"file_path": name("server.pem")}}),
                Some("Read"),
            ),
        ]
    });
}

/// Gemini CLI runs a shell command in the folder its `dir_path` names (`directory` in older
/// versions): the command's paths are judged there. A write to `settings.json` in `.gemini`
/// is a write of the agent's own hook settings, refused, and the file is as installed.
#[test]
fn gemini_runs_no_command_that_writes_its_settings_from_another_folder() {
    let agent = Agent::Gemini;
    let setup = Setup::new(agent);
    let settings = setup.project.join(".gemini/settings.json");
    let installed = std::fs::read(&settings).unwrap();
    let model = FakeModel::start(
        &setup.scratch,
        json!([
            {"name": "run_shell_command", "input": {"command": "echo pwned >> settings.json", "dir_path": ".gemini"}},
            {"name": "run_shell_command", "input": {"command": "echo pwned >> settings.json", "dir_path": setup.project.join(".gemini")}},
        ]),
    );
    let out = run(setup.command(agent, &model));
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    let results = model.tool_results();
    assert_eq!(results.len(), 2, "{said}");
    assert_eq!(
        String::from_utf8_lossy(&std::fs::read(&settings).unwrap()),
        String::from_utf8_lossy(&installed),
        "{said}"
    );
    assert!(!setup.project.join("settings.json").exists(), "{said}");
    for result in &results {
        assert!(
            result.contains("Skeleton Crew") && result.contains(".gemini/settings.json"),
            "{said}"
        );
    }
}

/// Codex's `view_image` reads the file its `path` names and hands it to the model: a read as
/// any other, of `~/.ssh` and a `*.pem` here, held, so refused (Codex cannot ask). (This
/// Codex sends no file that is not an image; the gate judges the read all the same.)
#[test]
fn codex_views_no_secret_unasked() {
    no_file_tool_reads_a_secret(Agent::Codex, |ssh, project| {
        vec![
            (
                json!({"name": "view_image", "input": {"path": ssh.join("id_ed25519")}}),
                Some("view_image"),
            ),
            (
                json!({"name": "view_image", "input": {"path": project.join("server.pem")}}),
                Some("view_image"),
            ),
        ]
    });
}

/// Where a command runs: a `cd` in one call and a write in the next. `cd .claude` (the folder
/// of the agent's hook file), then `echo pwned >> settings.json`, writes the hook file if the
/// agent keeps one shell between calls, and the gate judges each call in the folder the hook
/// input gives. None of these agents' non-interactive runs keeps the folder (Copilot CLI starts
/// a shell a call, Claude Code's `cd .claude` is held), and the file is as installed; an agent
/// that began to would fail this.
fn a_cd_carries_to_the_next_command(agent: Agent) {
    let setup = Setup::new(agent);
    let hook_file = setup.project.join(agent.hook_file());
    let installed = std::fs::read(&hook_file).unwrap();
    let (folder, name) = agent.hook_file().rsplit_once('/').unwrap();
    let model = FakeModel::start(
        &setup.scratch,
        json!([
            agent.shell(&format!("cd {folder}")),
            agent.shell(&format!("echo pwned >> {name}")),
        ]),
    );
    let out = run(setup.command(agent, &model));
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        String::from_utf8_lossy(&std::fs::read(&hook_file).unwrap()),
        String::from_utf8_lossy(&installed),
        "{said}"
    );
}

#[test]
fn copilot_judges_a_command_where_the_last_cd_left_it() {
    a_cd_carries_to_the_next_command(Agent::Copilot);
}

#[test]
fn claude_code_judges_a_command_where_the_last_cd_left_it() {
    a_cd_carries_to_the_next_command(Agent::Claude);
}

#[test]
fn codex_judges_a_command_where_the_last_cd_left_it() {
    a_cd_carries_to_the_next_command(Agent::Codex);
}

#[test]
fn gemini_judges_a_command_where_the_last_cd_left_it() {
    a_cd_carries_to_the_next_command(Agent::Gemini);
}

/// Copilot CLI's subagents (its `task` tool) have sessions of their own, each naming the session
/// that started it (`parentAgentId`): a tainted session's subagent, and that one's subagent,
/// are tainted too. `touch`, which the pack would run confined (Copilot CLI cannot), is refused
/// at every depth after the page; before it, the same subagents' `touch` runs. (A review ran a
/// tainted session's `make` unconfined through a subagent.)
#[test]
fn copilot_subagents_of_a_tainted_session_are_tainted_at_every_depth() {
    let agent = Agent::Copilot;
    let setup = Setup::new(agent);
    let config = setup.home.join(".copilot/mcp-config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let fake = testdata("mcp/fake-server.py");
    std::fs::write(
        &config,
        serde_json::to_vec(&json!({"mcpServers": {
            "fetch": {"type": "local", "command": "python3", "args": [fake], "tools": ["*"]},
        }}))
        .unwrap(),
    )
    .unwrap();
    let task = |marker: &str| {
        json!({"name": "task", "input": {"description": "work", "prompt": format!("{marker} go"),
                                          "agent_type": "general-purpose", "name": "helper"}})
    };
    let model = FakeModel::start_script(
        &setup.scratch,
        json!({
            "turns": [
                task("SUBAGENT-BEFORE"),
                {"name": "fetch-echo", "input": {"text": "a page from the web"}},
                task("SUBAGENT-ONE"),
            ],
            "subagents": [
                {"marker": "SUBAGENT-BEFORE", "turns": [agent.shell("touch before.txt")]},
                {"marker": "SUBAGENT-ONE", "turns": [agent.shell("touch child.txt"), task("SUBAGENT-TWO")]},
                {"marker": "SUBAGENT-TWO", "turns": [agent.shell("touch grandchild.txt")]},
            ],
            "final": "All done.",
        }),
    );
    let out = run(setup.command(agent, &model));
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    assert!(setup.project.join("before.txt").exists(), "{said}");
    assert!(!setup.project.join("child.txt").exists(), "{said}");
    assert!(!setup.project.join("grandchild.txt").exists(), "{said}");
    let held: Vec<String> = verified_gate_events(&setup.audit)
        .iter()
        .filter(|e| e["stage"] == "gate" && e["decision"] == "hold")
        .map(|e| {
            e["call"]["args"]["command"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(held, ["touch child.txt", "touch grandchild.txt"], "{said}");
}

/// Gemini CLI runs `grep_search` by its former name too (`search_file_content`): in a tainted
/// session whose project holds a `.env`, a search of the project is held under either name, so
/// refused (Gemini CLI cannot ask), and the secret never reaches the model.
#[test]
fn gemini_searches_no_secret_by_its_former_name() {
    let agent = Agent::Gemini;
    let setup = Setup::new(agent);
    let secret = "NOT-FOR-THE-MODEL-3b7e";
    std::fs::write(
        setup.project.join(".env"),
        format!("DB_PASSWORD={secret}\n"),
    )
    .unwrap();
    let search = |name: &str| json!({"name": name, "input": {"pattern": "NOT-FOR", "dir_path": setup.project}});
    let model = FakeModel::start(
        &setup.scratch,
        json!([
            {"name": "mcp_fetch_echo", "input": {"text": "a page from the web"}},
            search("grep_search"),
            search("search_file_content"),
        ]),
    );
    // The command writes Gemini CLI's settings; the fetch server is added to them.
    let cmd = setup.command(agent, &model);
    let file = setup.home.join(".gemini/settings.json");
    let mut settings: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    settings["mcpServers"] =
        json!({"fetch": {"command": "python3", "args": [testdata("mcp/fake-server.py")]}});
    std::fs::write(&file, serde_json::to_vec(&settings).unwrap()).unwrap();
    let out = run(cmd);
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    let results = model.tool_results();
    assert_eq!(results.len(), 3, "{said}");
    for result in &results[1..] {
        assert!(
            !result.contains(secret),
            "the secret reached the model: {said}"
        );
        assert!(result.contains("Skeleton Crew"), "{said}");
    }
}

/// Codex runs a command in the shell its model names (`shell`, which its hook input leaves
/// out): under `sh` (dash), `echo $'\' ; echo pwned >> .codex/config.toml ; #'` writes the
/// hook's own configuration, where bash, which the gate reads it as, sees one `echo`. Such a
/// command is refused; so is the same text under `sh -c` at any agent's door. (A review.)
#[test]
fn codex_runs_no_command_another_shell_reads_otherwise() {
    let agent = Agent::Codex;
    let setup = Setup::new(agent);
    let config = setup.project.join(".codex/config.toml");
    let installed = std::fs::read(&config).unwrap();
    let hidden = r"echo $'\' ; echo pwned >> .codex/config.toml ; touch pwned-sh ; #'";
    let model = FakeModel::start(
        &setup.scratch,
        json!([
            {"name": "exec_command", "input": {"cmd": hidden, "shell": "sh", "login": false}},
            {"name": "exec_command", "input": {"cmd": format!("sh -c {}", shell_quote(hidden))}},
            agent.shell("echo $((1 + 2))"),
        ]),
    );
    let out = run(setup.command(agent, &model));
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    let results = model.tool_results();
    assert_eq!(results.len(), 3, "{said}");
    assert_eq!(
        String::from_utf8_lossy(&std::fs::read(&config).unwrap()),
        String::from_utf8_lossy(&installed),
        "{said}"
    );
    assert!(!setup.project.join("pwned-sh").exists(), "{said}");
    assert!(results[0].contains("another shell"), "{said}");
    assert!(results[1].contains("POSIX sh"), "{said}");
    // Plain bash arithmetic is still answered.
    assert!(results[2].contains('3'), "{said}");
}

/// A word quoted for a POSIX shell: in single quotes, each `'` written as `'\''`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// GitHub Copilot CLI offers the Codex models a freeform `apply_patch`, whose hook input is the
/// patch as the model wrote it. A patch of several files is judged file by file: one that adds a
/// harmless file and one in `.github/hooks` (where its hooks live) is refused, and neither file
/// is made; a patch of two harmless files runs, and the log holds both runs under `apply_patch`
/// with the files named. Before, every such patch was refused as an input sc-hook could not read.
#[test]
fn copilot_patches_no_hook_file_beside_another() {
    let agent = Agent::Copilot;
    let setup = Setup::new(agent);
    let model = FakeModel::start(
        &setup.scratch,
        json!([
            {"name": "apply_patch", "input": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Add File: b.txt\n+x\n*** End Patch\n"},
            {"name": "apply_patch", "input": "*** Begin Patch\n*** Add File: c.txt\n+hi\n  *** Add File: .github/hooks/off.json\n+{}\n*** End Patch\n"},
            // What this Copilot CLI's parser reads as headers too: a byte-order mark before
            // one, a lone carriage return as a line break (a review wrote these files so).
            {"name": "apply_patch", "input": "*** Begin Patch\n\u{feff}*** Add File: .github/hooks/bom.json\n+x\n*** End Patch\n"},
            {"name": "apply_patch", "input": "*** Begin Patch\n*** Add File: d.txt\r*** Add File: .github/hooks/cr.json\n+x\n*** End Patch\n"},
            // Settings that turn every hook off, and an MCP server list Copilot CLI starts at
            // its next session (a review did both in an untainted session).
            {"name": "apply_patch", "input": "*** Begin Patch\n*** Add File: .github/copilot/settings.json\n+{\"disableAllHooks\": true}\n*** End Patch\n"},
            {"name": "apply_patch", "input": "*** Begin Patch\n*** Add File: .github/mcp.json\n+{\"mcpServers\": {}}\n*** End Patch\n"},
        ]),
    );
    // A model Copilot CLI offers the freeform tool to.
    let mut command = setup.command(agent, &model);
    command.env("COPILOT_MODEL", "gpt-5.1-codex");
    let out = run(command);
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    let results = model.tool_results();
    assert_eq!(results.len(), 6, "{said}");
    assert!(results[0].contains("a.txt"), "{said}");
    for (result, file) in results[4..]
        .iter()
        .zip([".github/copilot/settings.json", ".github/mcp.json"])
    {
        assert!(
            result.contains("Skeleton Crew") && result.contains(file),
            "{said}"
        );
        assert!(!setup.project.join(file).exists(), "{said}");
    }
    for (result, file) in results[1..4]
        .iter()
        .zip(["off.json", "bom.json", "cr.json"])
    {
        // Denied as a write of the file, or, with a name that goes on past a line break,
        // refused as a patch whose files cannot be known.
        assert!(
            result.contains("Skeleton Crew")
                && (result.contains(&format!(".github/hooks/{file}"))
                    || result.contains("line break inside a file name")),
            "{said}"
        );
        assert!(
            !setup.project.join(".github/hooks").join(file).exists(),
            "{said}"
        );
    }
    assert!(setup.project.join("a.txt").exists() && setup.project.join("b.txt").exists());
    assert!(!setup.project.join("c.txt").exists(), "{said}");
    assert!(!setup.project.join("d.txt").exists(), "{said}");
    let gates: Vec<(Value, Value)> = verified_gate_events(&setup.audit)
        .iter()
        .filter(|e| e["stage"] == "gate" && e["call"]["tool"] == "apply_patch")
        .map(|e| (e["call"]["args"]["files"].clone(), e["decision"].clone()))
        .collect();
    assert_eq!(
        gates,
        [
            (json!(["a.txt", "b.txt"]), json!("allow")),
            (json!(["c.txt", ".github/hooks/off.json"]), json!("deny")),
        ],
        "{said}"
    );
}

/// Codex applies a patch itself when its model runs `apply_patch` with a here-document (alone,
/// or after one `cd`): sc-hook judges such a command as the patch, file by file, in the folder
/// it is applied in. An honest patch of two files and an edit run (before, `apply_patch` matched
/// no `commands` rule, so it was held, and refused: no edit ever ran); a patch that adds a
/// harmless file and one in `.codex` through `..` is refused, and neither is made.
#[test]
fn codex_applies_an_honest_patch_and_no_patch_of_its_config() {
    let agent = Agent::Codex;
    let setup = Setup::new(agent);
    std::fs::create_dir_all(setup.project.join("sub")).unwrap();
    let model = FakeModel::start(
        &setup.scratch,
        json!([
            {"name": "exec_command", "input": {"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** Add File: other.txt\n+x\n*** End Patch\nEOF\n"}},
            {"name": "exec_command", "input": {"cmd": "cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: fine.txt\n+hello\n*** Add File: ../.codex/off.toml\n+x\n*** End Patch\nEOF\n"}},
            {"name": "exec_command", "input": {"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: notes.txt\n@@\n-hello\n+bye\n*** End Patch\nEOF\n"}},
            // A review: bash ends this here-document at `EOF` and brush-parser at `$EOF`, and
            // the comment keeps Codex from reading a patch: bash ran the lines between.
            {"name": "exec_command", "input": {"cmd": "apply_patch <<$'EOF' # add notes\nEOF\necho '[hooks]' >> .codex/config.toml; touch PWNED\n$EOF\n"}},
            // A review: Codex reads the name to the `\n`, past the `\r`.
            {"name": "exec_command", "input": {"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: ok.txt\r/../.codex/pwned.toml\n+x\n*** End Patch\nEOF\n"}},
        ]),
    );
    let out = run(setup.command(agent, &model));
    let said = story(agent.name(), &out, &model);
    assert!(out.status.success(), "{said}");
    let results = model.tool_results();
    assert_eq!(results.len(), 5, "{said}");
    assert!(
        results[1].contains("Skeleton Crew") && results[1].contains(".codex/off.toml"),
        "{said}"
    );
    assert!(results[3].contains("Skeleton Crew"), "{said}");
    assert!(
        results[4].contains("line break inside a file name"),
        "{said}"
    );
    assert!(!project_has(&setup.project, ".codex/pwned.toml"), "{said}");
    assert!(!project_has(&setup.project, "ok.txt"), "{said}");
    assert!(!setup.project.join("PWNED").exists(), "{said}");
    assert!(
        !std::fs::read_to_string(setup.project.join(".codex/config.toml"))
            .unwrap_or_default()
            .contains("[hooks]\n[hooks]"),
        "{said}"
    );
    let project = &setup.project;
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        "bye\n",
        "{said}"
    );
    assert!(project.join("other.txt").exists(), "{said}");
    assert!(!project.join("sub/fine.txt").exists(), "{said}");
    assert!(!project.join(".codex/off.toml").exists(), "{said}");
    let gates: Vec<(String, Value)> = verified_gate_events(&setup.audit)
        .iter()
        .filter(|e| e["stage"] == "gate" && e.get("decision").is_some())
        .map(|e| {
            (
                e["call"]["tool"].as_str().unwrap_or("").to_owned(),
                e["decision"].clone(),
            )
        })
        .collect();
    assert_eq!(
        gates[..3],
        [
            ("apply_patch".to_owned(), json!("allow")),
            ("apply_patch".to_owned(), json!("deny")),
            ("Edit".to_owned(), json!("allow")),
        ],
        "{said}"
    );
    // Not a patch: a command refused (Codex cannot ask), in whichever way.
    assert_eq!(gates.len(), 5, "{said}");
    assert_eq!(gates[4], (String::new(), json!("deny")), "{said}");
    assert_ne!(gates[3].1, json!("allow"), "{said}");
    assert_ne!(gates[3].0, "apply_patch", "{said}");
}

/// Whether `path` is in the project, as a file or a folder.
fn project_has(project: &std::path::Path, path: &str) -> bool {
    project.join(path).symlink_metadata().is_ok()
}
