//! What the sandbox fakes never reaches the repository: a real git repository with a tracked
//! hidden file (`.env`, read empty inside) and a missing protected path (`.mcp.json`), under the
//! claude-code pack's sandbox, run by the real sc-sandbox under the real kernel's sandbox.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::Scratch;

const SECRET: &str = "API_KEY=do-not-commit-me\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// git on the host, in `dir`, without the machine's or the user's config.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir.parent().unwrap().join("home"))
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// A repository in `scratch/proj` with `.env`, `a`, `server.pem` and `config/.env.staging`
/// committed, and `.env.local` (hidden too) untracked; no `.mcp.json`.
fn project(scratch: &Scratch) -> PathBuf {
    let proj = scratch.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(scratch.path("home")).unwrap();
    git(&proj, &["init", "-q", "-b", "main"]);
    git(&proj, &["config", "user.email", "dev@example.invalid"]);
    git(&proj, &["config", "user.name", "dev"]);
    std::fs::write(proj.join(".env"), SECRET).unwrap();
    std::fs::write(proj.join("a"), "one\n").unwrap();
    // Hidden by the pack's patterns (`*.pem`, `config/.env.*`), not by name.
    std::fs::write(proj.join("server.pem"), SECRET).unwrap();
    std::fs::create_dir_all(proj.join("config")).unwrap();
    std::fs::write(proj.join("config/.env.staging"), SECRET).unwrap();
    git(&proj, &["add", "-A"]);
    git(&proj, &["commit", "-qm", "init"]);
    std::fs::write(proj.join(".env.local"), "LOCAL=1\n").unwrap();
    proj
}

/// sc-sandbox under the claude-code pack, rooted at `proj`, running `script` in bash.
fn confined(scratch: &Scratch, proj: &Path, script: &str) -> Command {
    let pack = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/claude-code.json");
    confined_under(scratch, proj, &pack, script)
}

/// [`confined`] under `policy`.
fn confined_under(scratch: &Scratch, proj: &Path, policy: &Path, script: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sc-sandbox"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", scratch.path("home"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .current_dir(proj)
        .arg("--policy")
        .arg(policy)
        .arg("--audit")
        .arg(scratch.path("logs/audit.jsonl"))
        .args(["--", "bash", "-c", script])
        .stdin(Stdio::null());
    cmd
}

fn run(scratch: &Scratch, proj: &Path, script: &str) -> Output {
    confined(scratch, proj, script)
        .output()
        .expect("sc-sandbox runs")
}

#[test]
fn a_confined_commit_takes_neither_the_hidden_stand_in_nor_the_placeholder() {
    let scratch = Scratch::new();
    let proj = project(&scratch);
    let out = run(
        &scratch,
        &proj,
        r#"set -e
test ! -s .env && echo "env reads empty"
test ! -s server.pem && test ! -s config/.env.staging && echo "patterns read empty"
! mv config config-old 2>/dev/null && echo "config pinned"
test -e .mcp.json && echo "placeholder inside"
echo two >> a
git add -A
git commit -qm wip
echo "inside: $(git status --porcelain | tr '\n' ' ')"
"#,
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("env reads empty"), "{stdout}");
    assert!(stdout.contains("patterns read empty"), "{stdout}");
    assert!(stdout.contains("config pinned"), "{stdout}");
    assert!(stdout.contains("placeholder inside"), "{stdout}");
    // Inside, git sees neither stand-in: not the hidden file, not the placeholder.
    assert!(stdout.contains("inside: \n"), "{stdout}");
    // The commit changed `a` alone; its tree holds `.env` as it was, and no `.mcp.json`.
    assert_eq!(
        git(&proj, &["show", "--name-status", "--format=", "HEAD"]),
        "M\ta\n"
    );
    assert_eq!(
        git(&proj, &["ls-tree", "-r", "--name-only", "HEAD"]),
        ".env\na\nconfig/.env.staging\nserver.pem\n"
    );
    for hidden in [".env", "server.pem", "config/.env.staging"] {
        assert_eq!(git(&proj, &["show", &format!("HEAD:{hidden}")]), SECRET);
        assert_eq!(std::fs::read_to_string(proj.join(hidden)).unwrap(), SECRET);
    }
    // On the host afterwards: the hidden file unchanged, the placeholder gone, the untracked
    // hidden file still untracked.
    assert_eq!(
        git(&proj, &["status", "--porcelain", "--untracked-files=all"]),
        "?? .env.local\n"
    );
    assert_eq!(std::fs::read_to_string(proj.join(".env")).unwrap(), SECRET);
    assert!(!proj.join(".mcp.json").exists());
}

#[test]
fn adding_a_hidden_file_by_name_commit_all_and_stash_never_take_its_stand_in() {
    let scratch = Scratch::new();
    let proj = project(&scratch);
    let out = run(
        &scratch,
        &proj,
        r#"
echo two >> a
git add .env && echo "add .env: $?"
git commit -qam all && echo "commit -a: $?"
git add -f .env.local; echo "add -f .env.local: $?"
git add -f .mcp.json; echo "add -f .mcp.json: $?"
echo three >> a
git stash; echo "stash: $?"
true
"#,
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("add .env: 0"), "{stdout}{stderr}");
    assert!(stdout.contains("commit -a: 0"), "{stdout}{stderr}");
    assert_eq!(
        git(&proj, &["show", "--name-status", "--format=", "HEAD"]),
        "M\ta\n"
    );
    // Forcing a stand-in that git does not track fails, naming it.
    assert!(!stdout.contains("add -f .env.local: 0"), "{stdout}{stderr}");
    assert!(stderr.contains(".env.local"), "{stderr}");
    assert!(!stdout.contains("add -f .mcp.json: 0"), "{stdout}{stderr}");
    assert!(stderr.contains(".mcp.json"), "{stderr}");
    // A stash either leaves `.env` out or fails naming it; what it saved holds the real one.
    if !stdout.contains("stash: 0") {
        assert!(stderr.contains(".env"), "{stderr}");
    }
    let stashed = Command::new("git")
        .args(["show", "stash@{0}:.env"])
        .current_dir(&proj)
        .output()
        .unwrap();
    if stashed.status.success() {
        assert_eq!(text(&stashed.stdout), SECRET);
    }
    assert_eq!(git(&proj, &["show", "HEAD:.env"]), SECRET);
    assert_eq!(std::fs::read_to_string(proj.join(".env")).unwrap(), SECRET);
    assert_eq!(
        git(&proj, &["ls-files", "--stage", ".env.local", ".mcp.json"]),
        ""
    );
    assert!(!proj.join(".mcp.json").exists());
}

#[test]
fn the_placeholder_of_a_missing_protected_path_is_empty_while_it_runs_and_gone_after() {
    let scratch = Scratch::new();
    let proj = project(&scratch);
    // The confined program says it runs (a file in its root) and waits for the test to let it
    // go.
    let mut child = confined(
        &scratch,
        &proj,
        r#"seen=$(git status --porcelain --untracked-files=all)
printf %s "$seen" > .inside-status
: > .running
while [ ! -e .go ]; do sleep 0.05; done
rm -f .running .go .inside-status"#,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !proj.join(".running").exists() {
        assert!(
            Instant::now() < deadline,
            "the confined program did not start"
        );
        if let Ok(Some(status)) = child.try_wait() {
            panic!("sc-sandbox ended early: {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // During the run, the host sees the placeholder: an empty file (a mount needs a file to
    // land on, and the project folder is the host's; docs/sandbox.md says why), which git
    // inside does not see.
    let during = std::fs::symlink_metadata(proj.join(".mcp.json"));
    let inside = std::fs::read_to_string(proj.join(".inside-status")).unwrap();
    std::fs::write(proj.join(".go"), "").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(
        during
            .as_ref()
            .is_ok_and(|meta| meta.is_file() && meta.len() == 0),
        "{during:?}"
    );
    // Inside, git lists neither the placeholder nor the untracked hidden file. A tracked hidden
    // file may show as modified (its size differs from what the index recorded, and git says
    // so without reading it) until a `git add` reads it as unchanged: status only.
    let tracked_hidden = [" M .env", " M config/.env.staging", " M server.pem"];
    assert!(
        inside.lines().all(|line| tracked_hidden.contains(&line)),
        "git inside lists a stand-in: {inside:?}"
    );
    assert!(
        !proj.join(".mcp.json").exists(),
        "the placeholder is removed"
    );
    assert_eq!(
        git(&proj, &["status", "--porcelain", "--untracked-files=all"]),
        "?? .env.local\n"
    );
}

/// Every path the sandbox protects under a `.git` (worked out on a repository with a submodule's
/// and a linked worktree's git dirs) is denied, in an untainted session that runs unconfined, to
/// a file tool and to a shell redirection: the two guards read one list (`rules::git`).
#[test]
fn every_git_path_the_sandbox_protects_is_denied_to_file_tools_and_redirections() {
    use serde_json::json;
    use skeleton_crew::call::Call;
    use skeleton_crew::rules::decision::evaluate;
    use skeleton_crew::rules::paths::Places;
    use skeleton_crew::rules::policy::Policy;
    use skeleton_crew::stage::sandbox::git::protected;
    use skeleton_crew::verdict::Decision;

    let scratch = Scratch::new();
    let root = std::fs::canonicalize(scratch.dir.path()).unwrap();
    for name in [
        ".git/HEAD",
        ".git/modules/sub/HEAD",
        ".git/modules/nested/name/HEAD",
        ".git/worktrees/linked/commondir",
    ] {
        scratch.write(name, "ref: refs/heads/main\n");
    }
    let found = protected(&[root.join(".git/hooks")]);
    let under_git: Vec<_> = found
        .paths
        .iter()
        .filter(|path| path.components().any(|c| c.as_os_str() == ".git"))
        .collect();
    // The plan reaches into the submodules and the linked worktree: the list is exercised.
    assert!(
        under_git.len() > 15
            && under_git
                .iter()
                .any(|p| p.ends_with("worktrees/linked/commondir")),
        "{under_git:?}"
    );
    let policy =
        Policy::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/claude-code.json"))
            .expect("the pack loads")
            .with_places(Places {
                home: Some(root.join("home")),
                root: Some(root.clone()),
            });
    let judge = |tool: &str, args: serde_json::Value| {
        let line = json!({"agent": "claude-code", "tool": tool, "args": args,
                          "source": "user", "cwd": root.display().to_string()});
        let (call, _) = Call::parse_line(line.to_string().as_bytes()).unwrap();
        evaluate(&call, &policy)
    };
    for path in under_git {
        // A folder (hooks) is written through a file under it.
        let path = if path.ends_with("hooks") {
            path.join("pre-commit")
        } else {
            path.clone()
        };
        let shown = path.display().to_string();
        for tool in ["Write", "Edit"] {
            let judged = judge(
                tool,
                json!({"file_path": shown, "content": "x",
                                            "old_string": "a", "new_string": "b"}),
            );
            assert_eq!(
                judged.decision,
                Decision::Deny,
                "{tool} {shown}: {judged:?}"
            );
        }
        let relative = path.strip_prefix(&root).unwrap().display().to_string();
        for command in [
            format!("echo x > {relative}"),
            format!("echo x >> '{shown}'"),
        ] {
            let judged = judge("Bash", json!({"command": command}));
            assert_eq!(judged.decision, Decision::Deny, "{command}: {judged:?}");
        }
    }
}

/// A hidden `.env` that is a link (`.env -> secrets/real.env`, as deploy tools lay it out)
/// hides its target; a confined call may remove the link, and the next confined call still
/// hides the target: the place is remembered in the state folder (found by a review).
#[test]
fn a_hidden_link_removed_by_one_confined_call_keeps_its_target_hidden_from_the_next() {
    let scratch = Scratch::new();
    let proj = scratch.path("proj");
    std::fs::create_dir_all(proj.join("secrets")).unwrap();
    std::fs::create_dir_all(scratch.path("home")).unwrap();
    std::fs::write(proj.join("secrets/real.env"), SECRET).unwrap();
    std::os::unix::fs::symlink("secrets/real.env", proj.join(".env")).unwrap();
    let first = run(
        &scratch,
        &proj,
        "cat .env secrets/real.env; rm .env && echo removed",
    );
    assert_eq!(text(&first.stdout), "removed\n", "{}", text(&first.stderr));
    assert!(std::fs::symlink_metadata(proj.join(".env")).is_err());
    let next = run(&scratch, &proj, "cat secrets/real.env; echo end");
    assert_eq!(text(&next.stdout), "end\n", "{}", text(&next.stderr));
    // On the host, the secret is as it was.
    assert_eq!(
        std::fs::read_to_string(proj.join("secrets/real.env")).unwrap(),
        SECRET
    );
}

/// The remembered places are the gate's own: read-only inside however the policy opens the
/// home (here `writable: ["~/.local"]`, where the state folder is), so that a confined call
/// cannot make the next one forget (found by a review).
#[test]
fn a_confined_call_cannot_make_the_next_forget_a_hidden_place() {
    let scratch = Scratch::new();
    let proj = scratch.path("proj");
    let home = scratch.path("home");
    std::fs::create_dir_all(proj.join("secrets")).unwrap();
    std::fs::create_dir_all(home.join(".local")).unwrap();
    std::fs::write(proj.join("secrets/real.env"), SECRET).unwrap();
    std::os::unix::fs::symlink("secrets/real.env", proj.join(".env")).unwrap();
    let policy = scratch.write(
        "policy.json",
        r#"{"sandbox": {"hidden": [".env"], "writable": ["~/.local"]}}"#,
    );
    let confined = |script: &str| {
        confined_under(&scratch, &proj, &policy, script)
            .output()
            .expect("sc-sandbox runs")
    };
    // The runs' locks are in the state folder of the user's home in the password database.
    let runs = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .expect("the user has a home")
        .dir
        .join(".local/state/skeleton-crew/sandbox-runs");
    let first = confined(&format!(
        "rm .env; rm -rf ~/.local/state/skeleton-crew/sandbox-hidden 2>/dev/null || echo kept
ls -A '{}' | grep -q . || echo runs hidden",
        runs.display()
    ));
    assert_eq!(
        text(&first.stdout),
        "kept\nruns hidden\n",
        "{}",
        text(&first.stderr)
    );
    assert!(
        std::fs::read_dir(&runs).unwrap().next().is_some(),
        "the locks are there on the host"
    );
    let next = confined("cat secrets/real.env; echo end");
    assert_eq!(text(&next.stdout), "end\n", "{}", text(&next.stderr));
}

/// Waits, with a generous deadline, until `path` exists.
fn appears(path: &Path, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        if let Ok(Some(status)) = child.try_wait() {
            panic!("sc-sandbox ended early: {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two confined calls of one root at once (an agent's parallel tool calls): the first to end
/// once removed its placeholders (`.claude`) while the second ran on them, which detached the
/// second's mounts, and its program wrote `.claude/settings.json` (found by a review). The
/// placeholders now go only when no running run recorded them.
#[test]
fn a_run_that_ends_first_leaves_the_placeholders_of_one_still_running() {
    ends_first_while_another_runs(|first| first, |second| second);
}

/// The same with runs given different environments: another `HOME` (an agent's), and none at
/// all (a door's trial run, sc-exec's commands). They share the lock of the user's home.
#[test]
fn runs_given_different_homes_or_none_leave_each_other_s_placeholders() {
    ends_first_while_another_runs(
        |first| first.env("HOME", std::env::temp_dir()),
        |second| second,
    );
    ends_first_while_another_runs(
        |first| first,
        |second| second.env("XDG_STATE_HOME", std::env::temp_dir()),
    );
    // No HOME at all (the home given by `--home`, as the doors do).
    ends_first_while_another_runs(
        |first| {
            let args: Vec<std::ffi::OsString> = first.get_args().map(Into::into).collect();
            let home = first
                .get_envs()
                .find(|(name, _)| *name == "HOME")
                .and_then(|(_, value)| value.map(std::ffi::OsStr::to_os_string))
                .unwrap();
            let mut without = Command::new(first.get_program());
            without
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .current_dir(first.get_current_dir().unwrap())
                .stdin(Stdio::null())
                .arg("--home")
                .arg(home)
                .args(args);
            *first = without;
            first
        },
        |second| second,
    );
}

/// Two confined runs of one project at once, each command given its own environment by
/// `first` and `second`: the first ends while the second still runs, and the second then tries
/// to write `.claude/settings.json`, whose placeholder the first must not have taken away.
fn ends_first_while_another_runs(
    first: impl FnOnce(&mut Command) -> &mut Command,
    second: impl FnOnce(&mut Command) -> &mut Command,
) {
    let scratch = Scratch::new();
    let proj = scratch.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(scratch.path("home")).unwrap();
    let mut a = confined(
        &scratch,
        &proj,
        ": > a-running; while [ ! -e a-go ]; do sleep 0.02; done",
    );
    let mut first = first(&mut a)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    appears(&proj.join("a-running"), &mut first);
    let mut b = confined(
        &scratch,
        &proj,
        ": > b-running; while [ ! -e b-go ]; do sleep 0.02; done
mkdir -p .claude 2>/dev/null; echo '{}' > .claude/settings.json 2>/dev/null && echo wrote
echo done",
    );
    let mut second = second(&mut b)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    appears(&proj.join("b-running"), &mut second);
    std::fs::write(proj.join("a-go"), "").unwrap();
    assert!(first.wait().unwrap().success());
    std::fs::write(proj.join("b-go"), "").unwrap();
    let out = second.wait_with_output().unwrap();
    assert_eq!(text(&out.stdout), "done\n", "{}", text(&out.stderr));
    assert!(!proj.join(".claude/settings.json").exists());
    // Both ended: the placeholders are gone, the program's own files stay.
    let mut left: Vec<String> = std::fs::read_dir(&proj)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["a-go", "a-running", "b-go", "b-running"]);
}

/// Two runs of one repository at once: the second finds the first's placeholders (`.mcp.json`,
/// `.claude`) made, and its `git add -A` must keep them out of the commit as the first's own
/// does (a review committed them; the host then saw them deleted).
#[test]
fn a_second_run_commits_none_of_the_first_run_s_placeholders() {
    let scratch = Scratch::new();
    let proj = project(&scratch);
    let tracked = git(&proj, &["ls-tree", "-r", "--name-only", "HEAD"]);
    let mut first = confined(
        &scratch,
        &proj,
        ": > .a-running; while [ ! -e .a-go ]; do sleep 0.02; done",
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    appears(&proj.join(".a-running"), &mut first);
    assert!(
        proj.join(".mcp.json").exists(),
        "the first run made its placeholders"
    );
    let out = run(
        &scratch,
        &proj,
        "rm -f .a-running; echo two > b; git add -A && git commit -qm second",
    );
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    std::fs::write(proj.join(".a-go"), "").unwrap();
    assert!(first.wait().unwrap().success());
    assert_eq!(
        git(&proj, &["ls-tree", "-r", "--name-only", "HEAD"]),
        tracked.replacen("a\n", "a\nb\n", 1),
        "the second commit holds b and no placeholder"
    );
    std::fs::remove_file(proj.join(".a-go")).unwrap();
    assert_eq!(git(&proj, &["status", "--porcelain"]), "?? .env.local\n");
}

/// Runs `second` to its end while `first` waits (a sc-sandbox command whose program runs
/// [`WAIT`] in the folder `folder`), then lets `first` end; the second's output.
fn while_another_runs(folder: &Path, mut first: Command, mut second: Command) -> Output {
    let mut first = first
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    appears(&folder.join(".a-running"), &mut first);
    let out = second.output().expect("sc-sandbox runs");
    std::fs::write(folder.join(".a-go"), "").unwrap();
    assert!(first.wait().unwrap().success());
    for name in [".a-go", ".a-running"] {
        let _ = std::fs::remove_file(folder.join(name));
    }
    out
}

/// What the first run's program does: says it runs, waits to be let go.
const WAIT: &str = ": > .a-running; while [ ! -e .a-go ]; do sleep 0.02; done";

/// Runs that protect less than another (a smaller policy, another HOME) keep its placeholders out of their commits and cannot remove or write them (found by a
/// review: each committed them, and removing one took the other run's mount away).
#[test]
fn a_run_that_protects_less_neither_commits_nor_removes_another_run_s_placeholders() {
    let second_script = "rm -f .a-running sub/.a-running; echo two > b
git add -A && git commit -qm second
rm -f .mcp.json sub/.mcp.json .bashrc 2>/dev/null; echo x > .claude 2>/dev/null; echo end";
    // The first's `.claude` is `sub/.claude` when it is rooted there.
    let above_script = second_script.replace(".claude", "sub/.claude");
    let policies = Scratch::new();
    let small = policies.write("small.json", r#"{"sandbox": {"readOnly": []}}"#);
    // A smaller policy; the first run's HOME in the project; the first rooted in `sub/`, the
    // second above it (per-root locks did not see each other: a review).
    for case in ["smaller policy", "home in the project", "root above"] {
        let scratch = Scratch::new();
        let proj = project(&scratch);
        std::fs::create_dir_all(proj.join("sub")).unwrap();
        let tracked = git(&proj, &["ls-tree", "-r", "--name-only", "HEAD"]);
        let first_root = match case {
            "root above" => proj.join("sub"),
            _ => proj.clone(),
        };
        let mut first = confined(&scratch, &first_root, WAIT);
        if case == "home in the project" {
            first.env("HOME", &proj);
        }
        let second = match case {
            "smaller policy" => confined_under(&scratch, &proj, &small, second_script),
            "root above" => confined(&scratch, &proj, &above_script),
            _ => confined(&scratch, &proj, second_script),
        };
        let out = while_another_runs(&first_root, first, second);
        assert_eq!(text(&out.stdout), "end\n", "{case}: {}", text(&out.stderr));
        // The smaller policy hides nothing: `.env.local` is the project's to commit there.
        let (committed, untracked) = match case {
            "smaller policy" => (tracked.replacen(".env\n", ".env\n.env.local\n", 1), ""),
            _ => (tracked.clone(), "?? .env.local\n"),
        };
        assert_eq!(
            git(&proj, &["ls-tree", "-r", "--name-only", "HEAD"]),
            committed.replacen("a\n", "a\nb\n", 1),
            "{case}: the second commit holds b and no placeholder"
        );
        // Both ended: every placeholder is gone.
        assert_eq!(
            git(&proj, &["status", "--porcelain", "--untracked-files=all"]),
            untracked,
            "{case}"
        );
    }
}

/// A user's own empty file at a placeholder's path is not the placeholder: put there while a run
/// lasts (the placeholder removed on the host first), or after a killed run left its placeholder
/// and record behind, it is neither removed at the end nor kept out of a commit as a stand-in
/// (a review found both: an empty file at the path was taken for the placeholder).
#[test]
fn a_user_s_own_empty_file_at_a_placeholder_s_path_is_neither_removed_nor_a_stand_in() {
    // Moved away rather than removed, so that its inode is not the new file's: told apart by
    // the inode here, by its birth time too where a removed one's number is reused.
    let replace = |proj: &Path| {
        let placeholder = proj.join(".mcp.json");
        assert!(placeholder.exists(), "the run made its placeholder");
        let away = proj.parent().unwrap().join("moved-away");
        std::fs::rename(&placeholder, away).unwrap();
        std::fs::File::create(&placeholder).unwrap();
    };
    // While a run lasts.
    let scratch = Scratch::new();
    let proj = project(&scratch);
    let mut first = confined(&scratch, &proj, WAIT)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    appears(&proj.join(".a-running"), &mut first);
    replace(&proj);
    std::fs::write(proj.join(".a-go"), "").unwrap();
    assert!(first.wait().unwrap().success());
    assert!(proj.join(".mcp.json").is_file(), "the user's file is kept");

    // After a killed run: the next run's commit takes the user's file, and its end keeps it.
    let scratch = Scratch::new();
    let proj = project(&scratch);
    let mut killed = confined(&scratch, &proj, WAIT)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    appears(&proj.join(".a-running"), &mut killed);
    killed.kill().unwrap();
    killed.wait().unwrap();
    replace(&proj);
    let out = run(
        &scratch,
        &proj,
        "rm -f .a-running; git add -A && git commit -qm second && echo end",
    );
    assert_eq!(text(&out.stdout), "end\n", "{}", text(&out.stderr));
    assert!(proj.join(".mcp.json").is_file(), "the user's file is kept");
    let tree = git(&proj, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(tree.lines().any(|name| name == ".mcp.json"), "{tree}");
}

/// Runs of two projects that share a writable `~` (a policy's `writable: ["~"]`) each need the
/// placeholder of a missing `~/.gitconfig`: the first to end left the other's in place only
/// while the locks were per root by chance of timing; now a run that stands on another's
/// placeholder records it, and the first to end leaves it, so the second's program cannot write
/// `~/.gitconfig`.
#[test]
fn runs_of_two_projects_sharing_a_writable_home_keep_each_other_s_placeholders() {
    let scratch = Scratch::new();
    let policy = scratch.write(
        "policy.json",
        r#"{"sandbox": {"readOnly": ["~/.gitconfig"], "writable": ["~"]}}"#,
    );
    std::fs::create_dir_all(scratch.path("home")).unwrap();
    let (one, two) = (scratch.path("one"), scratch.path("two"));
    std::fs::create_dir_all(&one).unwrap();
    std::fs::create_dir_all(&two).unwrap();
    let mut first = confined_under(&scratch, &one, &policy, WAIT)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    appears(&one.join(".a-running"), &mut first);
    let gitconfig = scratch.path("home/.gitconfig");
    assert!(gitconfig.is_file(), "the first run made its placeholder");
    let mut second = confined_under(
        &scratch,
        &two,
        &policy,
        ": > b-running; while [ ! -e b-go ]; do sleep 0.02; done
echo '[x]' > ~/.gitconfig 2>/dev/null && echo wrote; echo done",
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    appears(&two.join("b-running"), &mut second);
    std::fs::write(one.join(".a-go"), "").unwrap();
    assert!(first.wait().unwrap().success());
    assert!(gitconfig.is_file(), "the second run stands on it");
    std::fs::write(two.join("b-go"), "").unwrap();
    let out = second.wait_with_output().unwrap();
    assert_eq!(text(&out.stdout), "done\n", "{}", text(&out.stderr));
    assert!(!gitconfig.exists(), "the last run out removed it");
}

/// Waits, with a generous deadline, for `child` to end; a run that hangs fails the test.
fn ends_within_deadline(mut child: std::process::Child, what: &str) -> Output {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A confined program that makes a folder look like a repository whose `commondir` is a pipe
/// made every later plan wait on it, under the lock every run takes: every run of the user, in
/// any project, hung (a review). Plans now read such files without waiting.
#[test]
fn a_pipe_planted_where_git_keeps_a_file_hangs_no_later_run() {
    let scratch = Scratch::new();
    let proj = project(&scratch);
    let out = run(
        &scratch,
        &proj,
        "mkdir -p config/.git && : > config/.git/HEAD && : > config/.env && mkfifo config/.git/commondir && echo planted",
    );
    assert_eq!(text(&out.stdout), "planted\n", "{}", text(&out.stderr));
    let other = scratch.path("other");
    std::fs::create_dir_all(&other).unwrap();
    for (root, what) in [
        (&proj, "the project's next run"),
        (&other, "another project's run"),
    ] {
        let child = confined(&scratch, root, "echo ran")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = ends_within_deadline(child, what);
        assert_eq!(text(&out.stdout), "ran\n", "{what}: {}", text(&out.stderr));
    }
}

/// A folder placeholder that held a host's temporary file while another run planned was not
/// found as made, so that run did not stand on it; emptied again, the first run to end removed
/// it under the other's mount, and the other's program wrote `.github/workflows/x.yml` (a
/// review). A run now stands on every placeholder of others it reaches.
#[test]
fn a_placeholder_not_as_made_while_another_run_plans_is_still_kept_for_it() {
    let scratch = Scratch::new();
    let proj = scratch.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(scratch.path("home")).unwrap();
    let workflows = scratch.write(
        "workflows.json",
        r#"{"sandbox": {"readOnly": [".github/workflows"]}}"#,
    );
    let github = scratch.write("github.json", r#"{"sandbox": {"readOnly": [".github"]}}"#);
    let mut first = confined_under(&scratch, &proj, &workflows, WAIT)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    appears(&proj.join(".a-running"), &mut first);
    assert!(proj.join(".github").is_dir(), "the first run's placeholder");
    // An editor's swap file, on the host, while the second run plans.
    std::fs::write(proj.join(".github/editor.swp"), "x").unwrap();
    let mut second = confined_under(
        &scratch,
        &proj,
        &github,
        ": > b-running; while [ ! -e b-go ]; do sleep 0.02; done
mkdir -p .github/workflows 2>/dev/null && echo evil > .github/workflows/x.yml 2>/dev/null && echo wrote
echo done",
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    appears(&proj.join("b-running"), &mut second);
    std::fs::remove_file(proj.join(".github/editor.swp")).unwrap();
    std::fs::write(proj.join(".a-go"), "").unwrap();
    assert!(first.wait().unwrap().success());
    std::fs::write(proj.join("b-go"), "").unwrap();
    let out = second.wait_with_output().unwrap();
    assert_eq!(text(&out.stdout), "done\n", "{}", text(&out.stderr));
    assert!(!proj.join(".github/workflows/x.yml").exists());
    assert!(
        !proj.join(".github").exists(),
        "the last run out removed it"
    );
}
