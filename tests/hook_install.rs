//! `sc-hook install`, `uninstall` and `doctor` on temporary homes and projects: each agent's
//! file in its format, merged, idempotent, backed up once, refusing a different sc-hook entry
//! without --force; and doctor's exit status with a broken policy, a 0777 state folder and a
//! missing bubblewrap.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::util::{bare_cmd, bin_path, Scratch};

fn pack() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/claude-code.json")
}

fn sc_hook(scratch: &Scratch, args: &[&str]) -> Output {
    bare_cmd("sc-hook")
        .current_dir(scratch.path(""))
        .env("HOME", scratch.path("home"))
        .env("XDG_STATE_HOME", scratch.path("state"))
        .env_remove("CODEX_HOME")
        .args(args)
        .output()
        .unwrap()
}

fn project(scratch: &Scratch) -> String {
    scratch.path("proj").to_string_lossy().into_owned()
}

#[test]
fn install_merges_keeps_other_hooks_backs_up_once_and_is_idempotent() {
    let scratch = Scratch::new();
    let settings = scratch.write(
        "proj/.claude/settings.json",
        r#"{"model": "x", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "other-hook"}]}]}}"#,
    );
    let original = std::fs::read(&settings).unwrap();
    let p = pack();
    let args = [
        "install",
        "--for",
        "claude",
        "--project",
        &project(&scratch),
        "--policy",
        p.to_str().unwrap(),
    ];
    let out = sc_hook(&scratch, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(written["model"], "x");
    let pre = written["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre[0]["hooks"][0]["command"], "other-hook");
    let ours = pre[1]["hooks"][0]["command"].as_str().unwrap();
    assert!(
        ours.starts_with(bin_path("sc-hook").to_str().unwrap()),
        "{ours}"
    );
    assert!(ours.contains("--for claude") && ours.contains(p.to_str().unwrap()));
    assert!(written["hooks"]["UserPromptSubmit"].is_array());
    let backup = scratch.path("proj/.claude/settings.json.sc-hook-backup");
    assert_eq!(std::fs::read(&backup).unwrap(), original);
    // A second run changes no byte.
    let first = std::fs::read(&settings).unwrap();
    assert!(sc_hook(&scratch, &args).status.success());
    assert_eq!(std::fs::read(&settings).unwrap(), first);
    // A different sc-hook entry of its own name: refused (exit 2, naming it) without --force.
    let other = [
        "install",
        "--for",
        "claude",
        "--project",
        &project(&scratch),
    ];
    let refused = sc_hook(&scratch, &other);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("PreToolUse"));
    assert_eq!(std::fs::read(&settings).unwrap(), first);
    let forced = sc_hook(&scratch, &[&other[..], &["--force"]].concat());
    assert!(forced.status.success());
    // The backup was made once: still the original.
    assert_eq!(std::fs::read(&backup).unwrap(), original);
    // Uninstall removes only what install wrote.
    let out = sc_hook(
        &scratch,
        &[
            "uninstall",
            "--for",
            "claude",
            "--project",
            &project(&scratch),
        ],
    );
    assert!(out.status.success());
    let left: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    let original: Value = serde_json::from_slice(&original).unwrap();
    assert_eq!(left, original);
}

#[test]
fn codex_toml_keeps_comments_and_uninstall_restores_it() {
    let scratch = Scratch::new();
    let text = "# my settings\nmodel = \"o3\"  # keep this\n\n[features]\nhooks = true\n";
    let config = scratch.write("home/.codex/config.toml", text);
    let out = sc_hook(&scratch, &["install", "--for", "codex", "--user"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(written.starts_with(text), "{written}");
    assert!(written.contains("[[hooks.PreToolUse.hooks]]") && written.contains("--for codex"));
    let again = sc_hook(&scratch, &["install", "--for", "codex", "--user"]);
    assert!(again.status.success());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), written);
    assert!(
        sc_hook(&scratch, &["uninstall", "--for", "codex", "--user"])
            .status
            .success()
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap().trim_end(),
        text.trim_end()
    );
}

#[test]
fn each_agent_gets_its_own_file() {
    let scratch = Scratch::new();
    for (agent, file, event) in [
        ("gemini", "proj/.gemini/settings.json", "BeforeTool"),
        (
            "copilot",
            "proj/.github/hooks/skeleton-crew.json",
            "preToolUse",
        ),
        ("cursor", "proj/.cursor/hooks.json", "beforeShellExecution"),
    ] {
        let out = sc_hook(
            &scratch,
            &["install", "--for", agent, "--project", &project(&scratch)],
        );
        assert!(
            out.status.success(),
            "{agent}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let written: Value =
            serde_json::from_slice(&std::fs::read(scratch.path(file)).unwrap()).unwrap();
        assert!(written["hooks"][event].is_array(), "{agent}: {written}");
        let out = sc_hook(
            &scratch,
            &["uninstall", "--for", agent, "--project", &project(&scratch)],
        );
        assert!(out.status.success());
        assert!(
            !scratch.path(file).exists(),
            "{agent}: a file install made is removed"
        );
    }
    // Copilot CLI has no user file.
    let out = sc_hook(&scratch, &["install", "--for", "copilot", "--user"]);
    assert_eq!(out.status.code(), Some(2));
}

fn doctor(scratch: &Scratch, extra: &[(&str, &str)]) -> Output {
    let mut cmd = bare_cmd("sc-hook");
    cmd.current_dir(scratch.path(""))
        .env("HOME", scratch.path("home"))
        .env("XDG_STATE_HOME", scratch.path("state"))
        .args(["doctor", "--for", "claude", "--project", &project(scratch)]);
    for (key, value) in extra {
        cmd.env(key, value);
    }
    cmd.output().unwrap()
}

#[test]
fn doctor_says_what_is_wrong_with_the_fix() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.path("proj")).unwrap();
    let p = pack();
    let install = sc_hook(
        &scratch,
        &[
            "install",
            "--for",
            "claude",
            "--project",
            &project(&scratch),
            "--policy",
            p.to_str().unwrap(),
        ],
    );
    assert!(install.status.success());
    let out = doctor(&scratch, &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // bubblewrap and user namespaces depend on the machine: the lines for them are there.
    assert!(
        text.contains("the hook:") && text.contains("the policy:") && text.contains("bubblewrap"),
        "{text}"
    );
    assert!(text.contains("ok   the policy:"), "{text}");
    let state = scratch.path("state/skeleton-crew");
    assert_eq!(
        std::fs::metadata(&state).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // A state folder anyone can write: exit 1, with the fix.
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = doctor(&scratch, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("chmod 700"));
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    // A missing bubblewrap: exit 1, named.
    let out = doctor(&scratch, &[("SC_SANDBOX_BWRAP", "/nonexistent/bwrap")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL bubblewrap"));
    // A policy that does not load: exit 1.
    let broken = scratch.write("broken.json", "{\"denyTools\": 7}");
    let out = bare_cmd("sc-hook")
        .env("HOME", scratch.path("home"))
        .env("XDG_STATE_HOME", scratch.path("state"))
        .args([
            "doctor",
            "--project",
            &project(&scratch),
            "--policy",
            broken.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL the policy"));
    // Not wired for another agent: exit 1 with the install command as the fix.
    let out = bare_cmd("sc-hook")
        .env("HOME", scratch.path("home"))
        .env("XDG_STATE_HOME", scratch.path("state"))
        .args(["doctor", "--for", "gemini", "--project", &project(&scratch)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("sc-hook install --for gemini"));
}

/// Codex CLI loads a project's hooks only in a project the user's Codex configuration trusts
/// (seen in the real runs of tests/real_agents.rs): `doctor --for codex --project` says whether
/// it does, with the fix, and that the hook itself must be trusted with /hooks.
#[test]
fn doctor_says_whether_codex_trusts_the_project() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.path("proj")).unwrap();
    let install = sc_hook(
        &scratch,
        &["install", "--for", "codex", "--project", &project(&scratch)],
    );
    assert!(install.status.success());
    let doctor = |scratch: &Scratch| {
        let out = sc_hook(
            scratch,
            &["doctor", "--for", "codex", "--project", &project(scratch)],
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    // No Codex configuration, then one that does not name the project: not trusted.
    let (status, text) = doctor(&scratch);
    assert_eq!(status, Some(1), "{text}");
    assert!(
        text.contains("loads none of the project's hooks") && text.contains("codex exec --trust"),
        "{text}"
    );
    scratch.write("home/.codex/config.toml", "model = \"o3\"\n");
    let (status, text) = doctor(&scratch);
    assert_eq!(status, Some(1), "{text}");
    assert!(
        text.contains("Codex does not trust") && text.contains("trust_level unset"),
        "{text}"
    );
    scratch.write(
        "home/.codex/config.toml",
        format!(
            "[projects.{:?}]\ntrust_level = \"trusted\"\n",
            project(&scratch)
        ),
    );
    let (_, text) = doctor(&scratch);
    assert!(
        text.contains("Codex trusts") && text.contains("/hooks"),
        "{text}"
    );
    assert!(!text.contains("Codex does not trust"), "{text}");
}
