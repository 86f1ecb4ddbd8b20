//! Issue 30 §1, measured: a tainted coding session under the claude-code pack, as an agent makes
//! it, through the real sc-hook (PreToolUse and PostToolUse, one process each) in a real git
//! repository, every confined command run as Claude Code runs it (`bash -c`) under real
//! bubblewrap. Only the push is asked; the curl to an unlisted host gets the proxy's 403, and
//! the write to `.claude/settings.json` is denied.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::util::{bare_cmd, Scratch};

fn pack() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/claude-code.json")
}

struct Session {
    /// Kept for its folder, removed when the session ends.
    _scratch: Scratch,
    project: PathBuf,
    state: PathBuf,
    home: PathBuf,
    next: usize,
    /// The sc-hook to run; `None`: this package's.
    hook_exe: Option<PathBuf>,
}

/// What sc-hook answered a call, and what running it gave.
struct Turn {
    decision: Option<String>,
    ran: Option<Output>,
}

impl Session {
    /// A session in a fresh repository; its state folder inside the project when
    /// `state_inside` (a folder the sandbox would otherwise let a confined call write).
    fn new(state_inside: bool) -> Session {
        let scratch = Scratch::new();
        let project = scratch.path("proj");
        let state = if state_inside {
            project.join(".state")
        } else {
            scratch.path("state")
        };
        let home = scratch.path("home");
        for dir in [&project, &state, &home] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let session = Session {
            _scratch: scratch,
            project,
            state,
            home,
            next: 0,
            hook_exe: None,
        };
        session.write("README.md", "# demo\n");
        session.write(
            "Makefile",
            "build:\n\t@mkdir -p out && cp src/lib.sh out/lib.sh && echo built\ntest: build\n\t@bash tests/run.sh\n",
        );
        session.write("src/lib.sh", "greet() { echo \"hello $1\"; }\n");
        session.write(
            "tests/run.sh",
            ". out/lib.sh\n[ \"$(greet x)\" = 'hello x' ] && echo 'tests passed'\n",
        );
        session.write(".gitignore", "out/\n");
        session.git(&["init", "-q", "-b", "main"]);
        session.git(&["add", "-A"]);
        session.git(&["commit", "-qm", "start"]);
        session
    }

    fn write(&self, name: &str, text: &str) {
        let path = self.project.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn env(&self, command: &mut Command) {
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env("CLAUDE_PROJECT_DIR", &self.project)
            .env("GIT_AUTHOR_NAME", "Agent")
            .env("GIT_AUTHOR_EMAIL", "agent@example.com")
            .env("GIT_COMMITTER_NAME", "Agent")
            .env("GIT_COMMITTER_EMAIL", "agent@example.com");
    }

    fn git(&self, args: &[&str]) -> Output {
        let mut git = Command::new("git");
        self.env(&mut git);
        let out = git.args(args).current_dir(&self.project).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        out
    }

    /// One hook event; its `hookSpecificOutput`, if it answered.
    fn hook(&mut self, event: &str, tool: &str, input: &Value, id: &str) -> Option<Value> {
        let mut event = json!({
            "session_id": "tainted-session",
            "transcript_path": "/t",
            "cwd": self.project,
            "permission_mode": "default",
            "hook_event_name": event,
            "tool_name": tool,
            "tool_input": input,
            "tool_use_id": id,
        });
        if event["hook_event_name"] == "PostToolUse" {
            event["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
        }
        let mut cmd = match &self.hook_exe {
            Some(exe) => {
                let mut cmd = assert_cmd::Command::new(exe);
                cmd.env_clear()
                    .env("PATH", std::env::var_os("PATH").unwrap_or_default());
                cmd
            }
            None => bare_cmd("sc-hook"),
        };
        cmd.arg("--policy").arg(pack());
        // The default audit log and state, in the state folder, as a user's install has them.
        cmd.env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env("CLAUDE_PROJECT_DIR", &self.project)
            .current_dir(&self.project);
        cmd.write_stdin(event.to_string());
        // A hook copied into the project moments ago may still be open for writing in a child
        // another test forked meanwhile, until that child's exec closes it: the kernel then
        // refuses to run it ("text file busy"). It is started again until the copy is free.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let out = loop {
            match cmd.output() {
                Err(err)
                    if err.kind() == std::io::ErrorKind::ExecutableFileBusy
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::yield_now()
                }
                out => break out.unwrap(),
            }
        };
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        if out.stdout.is_empty() {
            return None;
        }
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        Some(answer["hookSpecificOutput"].clone())
    }

    /// A tool call as Claude Code makes it: PreToolUse; if not denied or asked, run (a `Bash`
    /// command with `bash -c`, a file tool by `run`), then PostToolUse.
    fn call(&mut self, tool: &str, input: Value, run: impl FnOnce(&Session)) -> Turn {
        self.next += 1;
        let id = format!("toolu_{:04}", self.next);
        let answer = self.hook("PreToolUse", tool, &input, &id);
        let decision = answer
            .as_ref()
            .map(|a| a["permissionDecision"].as_str().unwrap().to_owned());
        if matches!(decision.as_deref(), Some("deny" | "ask")) {
            // Denied, or a question the person is not asked here: it does not run.
            return Turn {
                decision,
                ran: None,
            };
        }
        let mut ran = None;
        let mut input_ran = input.clone();
        if tool == "Bash" {
            let command = match &answer {
                Some(answer) => answer["updatedInput"]["command"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                None => input["command"].as_str().unwrap().to_owned(),
            };
            input_ran["command"] = json!(command);
            let mut bash = Command::new("bash");
            self.env(&mut bash);
            ran = Some(
                bash.arg("-c")
                    .arg(&command)
                    .current_dir(&self.project)
                    .output()
                    .unwrap(),
            );
        } else {
            run(self);
        }
        self.hook("PostToolUse", tool, &input_ran, &id);
        Turn { decision, ran }
    }

    fn bash(&mut self, command: &str) -> Turn {
        self.call(
            "Bash",
            json!({"command": command, "description": "a step"}),
            |_| {},
        )
    }
}

fn stdout(turn: &Turn) -> String {
    let out = turn.ran.as_ref().expect("it ran");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_tainted_session_asks_only_about_the_push() {
    let mut s = Session::new(false);
    let mut asked = Vec::new();
    let mut calls = 0;
    let mut tally = |what: &str, turn: &Turn| {
        calls += 1;
        if turn.decision.as_deref() == Some("ask") {
            asked.push(what.to_owned());
        }
    };
    // The session reads a web page: only its PostToolUse reaches sc-hook.
    let fetch = json!({"url": "https://blog.example.com/setup", "prompt": "summarise"});
    assert_eq!(
        s.hook("PostToolUse", "WebFetch", &fetch, "toolu_fetch"),
        None
    );
    let project = s.project.clone();
    let path = |name: &str| project.join(name).display().to_string();
    // Reads.
    for (tool, input) in [
        ("Read", json!({"file_path": path("README.md")})),
        ("Read", json!({"file_path": path("src/lib.sh")})),
        ("Glob", json!({"pattern": "**/*.sh"})),
        ("Grep", json!({"pattern": "greet"})),
        ("Grep", json!({"pattern": "greet", "path": path(".")})),
        ("Grep", json!({"pattern": "greet", "path": path("src")})),
        ("Glob", json!({"pattern": "*.sh", "path": path("src")})),
    ] {
        let turn = s.call(tool, input, |_| {});
        tally(tool, &turn);
    }
    // A search of a place the sandbox hides, or of the project's root once it has a `.env`
    // the sandbox hides (the search would print it), is asked: the file tools are not
    // confined. A search without a path searches the root too. Without a `.env`, the same
    // searches of the root were answered above, unasked.
    std::fs::write(path(".env"), "API_KEY=secret\n").unwrap();
    for input in [
        json!({"pattern": "greet", "path": path(".")}),
        json!({"pattern": "API_KEY"}),
        json!({"pattern": "API_KEY", "glob": ".env"}),
        json!({"pattern": ".", "path": s.home.join(".ssh").display().to_string()}),
    ] {
        let turn = s.call("Grep", input.clone(), |_| {});
        assert_eq!(turn.decision.as_deref(), Some("ask"), "{input}");
    }
    std::fs::remove_file(path(".env")).unwrap();
    // Likewise for a secret the sandbox hides by a pattern of names (`*.pem`, `config/.env.*`),
    // asked while one is there.
    std::fs::create_dir_all(path("config")).unwrap();
    for secret in ["server.pem", "config/.env.staging"] {
        std::fs::write(path(secret), "SECRET\n").unwrap();
        for input in [
            json!({"pattern": "greet", "path": path(".")}),
            json!({"pattern": "SECRET"}),
        ] {
            let turn = s.call("Grep", input.clone(), |_| {});
            assert_eq!(turn.decision.as_deref(), Some("ask"), "{secret}: {input}");
        }
        std::fs::remove_file(path(secret)).unwrap();
    }
    let turn = s.call("Grep", json!({"pattern": "SECRET"}), |_| {});
    assert_eq!(turn.decision, None, "{:?}", turn.decision);
    // Edits through the file tools, as an agent makes most of them: judged as a confined
    // command's writes (`sandbox.confineFileTools`), so they run unasked inside the root.
    let edits = [
        (
            "Write",
            json!({"file_path": path("src/util.sh"), "content": "util() { :; }\n"}),
        ),
        (
            "Edit",
            json!({"file_path": path("README.md"), "old_string": "# demo", "new_string": "# demo tool"}),
        ),
        (
            "Write",
            json!({"file_path": path("docs/notes.md"), "content": "notes\n"}),
        ),
    ];
    for (tool, input) in edits {
        let file = PathBuf::from(input["file_path"].as_str().unwrap());
        let content = input.get("content").cloned();
        let turn = s.call(tool, input, |_| {
            // As Claude Code writes it, in its own process.
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            let text = match &content {
                Some(text) => text.as_str().unwrap().to_owned(),
                None => std::fs::read_to_string(&file)
                    .unwrap()
                    .replace("# demo", "# demo tool"),
            };
            std::fs::write(&file, text).unwrap();
        });
        assert_eq!(
            turn.decision, None,
            "{tool} is left to Claude Code's own rules"
        );
        tally(tool, &turn);
    }
    let steps: &[&str] = &[
        "ls",
        "ls -la src tests",
        "pwd",
        "git status",
        "git log --oneline -5",
        "git diff",
        "cat README.md",
        "head -5 src/lib.sh",
        "wc -l src/lib.sh tests/run.sh",
        "grep -rn greet .",
        "find . -name '*.sh'",
        "git branch --show-current",
        // Edits, as an agent makes them in a shell.
        "cat > src/lib.sh <<'EOF'\ngreet() { echo \"hello $1\"; }\nbye() { echo \"bye $1\"; }\nEOF",
        "printf 'bye() test\\n' >> README.md",
        "mkdir -p docs",
        "echo '# usage' > docs/usage.md",
        "python3 -c \"import pathlib; p = pathlib.Path('docs/usage.md'); p.write_text(p.read_text() + 'greet NAME\\n')\"",
        // Builds and tests.
        "make build",
        "make test",
        "bash tests/run.sh",
        "git diff --stat",
        "git status --short",
        // Local git.
        "git add -A",
        "git commit -qm 'Add bye'",
        "git log --oneline -3",
        "git show --stat HEAD",
        "git branch feature",
        "git switch feature",
        "echo more >> docs/usage.md",
        "git add docs/usage.md && git commit -qm 'More usage'",
        "git stash list",
        "git switch main",
        "git diff main feature --stat",
        "git tag v0.1",
    ];
    for step in steps {
        let turn = s.bash(step);
        tally(step, &turn);
        if let Some(out) = &turn.ran {
            assert!(out.status.success(), "{step}: {}", stdout(&turn));
        }
    }
    assert!(stdout(&s.bash("make test")).contains("tests passed"));
    // The commits are in the host's repository.
    let log = s.git(&["log", "--oneline", "feature"]);
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(
        log.contains("Add bye") && log.contains("More usage"),
        "{log}"
    );
    // A curl to a host the pack does not list: run confined, the proxy refuses it.
    let curl = s.bash("curl -sS -o /dev/null -w '%{http_code}' https://unlisted.example/ || true");
    tally("curl", &curl);
    assert_eq!(curl.decision.as_deref(), Some("allow"));
    assert!(stdout(&curl).contains("403"), "{}", stdout(&curl));
    // The settings file, by the shell and by the file tool: denied.
    let settings = path(".claude/settings.json");
    let write = s.bash("echo '{}' > .claude/settings.json");
    tally("settings by the shell", &write);
    assert_eq!(write.decision.as_deref(), Some("deny"));
    let write = s.call(
        "Write",
        json!({"file_path": settings, "content": "{}"}),
        |_| panic!("a denied write must not run"),
    );
    tally("settings by Write", &write);
    assert_eq!(write.decision.as_deref(), Some("deny"));
    assert!(!Path::new(&settings).exists());
    // A file tool's write outside the root, or of a protected place, is still not unasked.
    let outside = s.call(
        "Write",
        json!({"file_path": s.home.join(".bashrc").display().to_string(), "content": "x"}),
        |_| panic!("a write of ~/.bashrc must not run unasked"),
    );
    assert!(matches!(outside.decision.as_deref(), Some("deny" | "ask")));
    let mcp = s.call(
        "Write",
        json!({"file_path": path(".mcp.json"), "content": "{}"}),
        |_| panic!("a write of .mcp.json must not run unasked"),
    );
    assert!(matches!(mcp.decision.as_deref(), Some("deny" | "ask")));
    // A confined command left running in the background could turn a path into a link
    // between a file tool's decision and its write: asked.
    let background = s.call(
        "Bash",
        json!({"command": "sleep 1", "run_in_background": true}),
        |_| {},
    );
    assert_eq!(background.decision.as_deref(), Some("ask"));
    // The push: asked.
    let push = s.bash("git push origin main");
    tally("git push", &push);
    assert!(calls >= 40, "{calls} calls");
    assert_eq!(asked, ["git push"], "of {calls} calls");
    // The person is shown the original command after a short prefix.
    let asked = s
        .hook(
            "PreToolUse",
            "Bash",
            &json!({"command": "git push origin main"}),
            "toolu_again",
        )
        .unwrap();
    let command = asked["updatedInput"]["command"].as_str().unwrap();
    let prefix = command.strip_suffix("'git push origin main'").unwrap();
    let exe = crate::util::bin_path("sc-sandbox");
    assert_eq!(prefix.len(), exe.as_os_str().len() + 35, "{command}");
}

/// The short command is bound to what was decided: changed, replayed, or with no invocation
/// prepared, sc-sandbox exits 125 and runs nothing.
#[test]
fn a_short_command_runs_only_what_was_prepared_once() {
    let mut s = Session::new(true);
    let fetch = json!({"url": "https://blog.example.com/setup", "prompt": "summarise"});
    s.hook("PostToolUse", "WebFetch", &fetch, "toolu_fetch");
    let answer = s
        .hook(
            "PreToolUse",
            "Bash",
            &json!({"command": "echo ran > ran.txt"}),
            "toolu_1",
        )
        .unwrap();
    assert_eq!(answer["permissionDecision"], "allow", "{answer}");
    let command = answer["updatedInput"]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = |s: &Session, command: &str| {
        let mut bash = Command::new("bash");
        s.env(&mut bash);
        bash.arg("-c")
            .arg(command)
            .current_dir(&s.project)
            .output()
            .unwrap()
    };
    // Altered: another script under the same id.
    let altered = command.replace("echo ran", "echo changed");
    let out = run(&s, &altered);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not the one prepared"));
    assert!(!s.project.join("ran.txt").exists());
    // As prepared: runs, confined.
    let out = run(&s, &command);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(s.project.join("ran.txt")).unwrap(),
        "ran\n"
    );
    // Once.
    std::fs::remove_file(s.project.join("ran.txt")).unwrap();
    let out = run(&s, &command);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("already run once"));
    assert!(!s.project.join("ran.txt").exists());
    // The gate denies a visible write of the state folder (it is the gate's own)...
    let target = s
        .state
        .join("skeleton-crew/invocations/0123456789abcdef")
        .display()
        .to_string();
    let answer = s
        .hook(
            "PreToolUse",
            "Bash",
            &json!({ "command": format!("touch {target}") }),
            "toolu_2",
        )
        .unwrap();
    assert_eq!(answer["permissionDecision"], "deny", "{answer}");
    // ...and inside the sandbox, the state folder (and its invocations) is read-only, even
    // inside the project, for a write no rule can see.
    let answer = s
        .hook(
            "PreToolUse",
            "Bash",
            &json!({ "command": format!("python3 -c \"open('{target}', 'w').write('x')\"") }),
            "toolu_3",
        )
        .unwrap();
    let out = run(&s, answer["updatedInput"]["command"].as_str().unwrap());
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    assert!(!s
        .state
        .join("skeleton-crew/invocations/0123456789abcdef")
        .exists());
}

/// A file tool can change only what a confined command could: the sandbox's own binaries in a
/// vendored tools folder inside the project, and the state folder where sc-hook prepares its
/// invocations (here inside the project too), are denied to `Write` and `Edit` in a tainted
/// session, as every confined run keeps them read-only. Found by a review: a `Write` of
/// `tools/sc-sandbox` made the next "confined" call run unconfined.
#[test]
fn a_file_tool_cannot_change_the_sandboxs_own_machinery() {
    let mut s = Session::new(true);
    let tools = s.project.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for name in ["sc-hook", "sc-sandbox"] {
        std::fs::copy(crate::util::bin_path(name), tools.join(name)).unwrap();
    }
    // cargo's other name for the hook, in the project too: looked for since the project and
    // the binaries' folder overlap.
    std::fs::create_dir_all(tools.join("deps")).unwrap();
    std::fs::hard_link(tools.join("sc-hook"), tools.join("deps/sc_hook-0123")).unwrap();
    s.hook_exe = Some(tools.join("sc-hook"));
    let fetch = json!({"url": "https://blog.example.com/setup", "prompt": "summarise"});
    s.hook("PostToolUse", "WebFetch", &fetch, "toolu_fetch");
    // A confined call prepares an invocation in the state folder.
    let answer = s
        .hook(
            "PreToolUse",
            "Bash",
            &json!({"command": "git status"}),
            "toolu_1",
        )
        .unwrap();
    assert_eq!(answer["permissionDecision"], "allow", "{answer}");
    let invocations = s.state.join("skeleton-crew/invocations");
    // An invocation's file (its id: 16 hexadecimal digits), not the folder's sweep mark.
    let prepared = std::fs::read_dir(&invocations)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.file_name().is_some_and(|name| name.len() == 16))
        .expect("a prepared invocation");
    let sandbox = tools.join("sc-sandbox").display().to_string();
    for (tool, input) in [
        (
            "Write",
            json!({"file_path": sandbox, "content": "#!/bin/sh\necho escaped\n"}),
        ),
        (
            "Edit",
            json!({"file_path": sandbox, "old_string": "a", "new_string": "b"}),
        ),
        (
            "Write",
            json!({"file_path": tools.join("sc-hook").display().to_string(), "content": "x"}),
        ),
        (
            "Write",
            json!({"file_path": tools.join("deps/sc_hook-0123").display().to_string(), "content": "x"}),
        ),
        (
            "Edit",
            json!({"file_path": prepared.display().to_string(), "old_string": "\"root\"", "new_string": "\"x\""}),
        ),
        (
            "Write",
            json!({"file_path": invocations.join("0123456789abcdef").display().to_string(), "content": "{}"}),
        ),
    ] {
        let what = input["file_path"].as_str().unwrap().to_owned();
        let answer = s
            .hook("PreToolUse", tool, &input, "toolu_w")
            .unwrap_or_else(|| panic!("{tool} {what} was let through"));
        assert_eq!(
            answer["permissionDecision"], "deny",
            "{tool} {what}: {answer}"
        );
    }
    // An ordinary file beside them is still written unasked.
    let fine =
        json!({"file_path": s.project.join("src/new.sh").display().to_string(), "content": "x"});
    assert_eq!(s.hook("PreToolUse", "Write", &fine, "toolu_f"), None);
}

/// The hook that runs from the project's own build folder (`target/debug/sc-hook`, as while
/// developing) cannot be taken away or replaced by an unconfined command through a folder above
/// it or another name of it, which its globs do not name. Found by a review: `mv target t2`
/// left the agent's hook command naming nothing (the agent then runs every call without it),
/// and `mv target/debug/deps target/debug/d2` let the moved hard link of sc-hook be written.
#[test]
fn the_hook_in_the_project_cannot_be_moved_away_or_written_under_another_name() {
    let mut s = Session::new(false);
    let debug = s.project.join("target/debug");
    std::fs::create_dir_all(debug.join("deps")).unwrap();
    for name in ["sc-hook", "sc-sandbox"] {
        std::fs::copy(crate::util::bin_path(name), debug.join(name)).unwrap();
    }
    std::fs::hard_link(debug.join("sc-hook"), debug.join("deps/sc_hook-0123")).unwrap();
    s.hook_exe = Some(debug.join("sc-hook"));
    let bash = |s: &mut Session, command: &str| {
        s.hook(
            "PreToolUse",
            "Bash",
            &json!({ "command": command }),
            "toolu_b",
        )
    };
    let reason = |answer: &Value| {
        answer["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // A symbolic link to the build folder names the same folders by other words.
    std::os::unix::fs::symlink(s.project.join("target"), s.project.join("tlink")).unwrap();
    for command in [
        "mv target t2",
        "mv target/debug target/d2",
        "mv target/debug/deps target/debug/d2",
        "rm -rf target/debug",
        "mv tlink/debug x",
    ] {
        let answer = bash(&mut s, command).unwrap_or_default();
        assert_eq!(answer["permissionDecision"], "deny", "{command}: {answer}");
    }
    // What find runs on the paths it finds is not judged as a file named `{}`: a person is
    // asked (it was allowed, and moved the build folder with the hook away).
    for command in [
        r"find . -name target -exec mv {} t2 \;",
        "find . -maxdepth 1 -name 'tl*' -execdir mv {} x +",
        "find . -name sc-hook -exec tee {} ';'",
        // Found by a review: a write through an option's value, and code run from a folder
        // find names.
        "find .git -maxdepth 1 -name hooks -exec go build -o {}/pre-commit ./x ';'",
        "find /tmp -maxdepth 0 -exec make -C {} ';'",
    ] {
        let answer = bash(&mut s, command).unwrap_or_default();
        assert_eq!(answer["permissionDecision"], "ask", "{command}: {answer}");
        assert!(
            reason(&answer).contains("find puts the paths it finds where {} is"),
            "{command}: {answer}"
        );
    }
    // The folder moved anyway (by a person, or before the session): the link is still sc-hook.
    std::fs::rename(debug.join("deps"), debug.join("d2")).unwrap();
    let moved = debug.join("d2/sc_hook-0123");
    let answer = s
        .hook(
            "PreToolUse",
            "Write",
            &json!({"file_path": moved, "content": "x"}),
            "toolu_w",
        )
        .unwrap_or_default();
    assert_eq!(answer["permissionDecision"], "deny", "{answer}");
    assert!(reason(&answer).contains("the same file"), "{answer}");
    // A found path put into a shell's script runs as code: asked, as dynamic.
    let answer = bash(&mut s, r"find . -name 'x;*' -exec bash -c 'cat {}' \;").unwrap_or_default();
    assert_eq!(answer["permissionDecision"], "ask", "{answer}");
    assert!(
        reason(&answer).contains("where a file's name runs as code"),
        "{answer}"
    );
    // Work in the project's own folder is not a write above the hook; what find reads is not
    // written.
    for command in [
        "cp README.md .",
        "mv README.md README.txt",
        "git status",
        "find . -name '*.rs' -exec grep -n unsafe {} +",
    ] {
        let answer = bash(&mut s, command).unwrap_or_default();
        assert_ne!(answer["permissionDecision"], "deny", "{command}: {answer}");
    }
}
