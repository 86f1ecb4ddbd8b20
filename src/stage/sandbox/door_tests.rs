use std::fs;
use std::os::unix::fs::PermissionsExt;

use super::*;

const DOORS: [&str; 3] = ["sc-hook", "sc-exec", "sc-mcp"];

fn door(name: &'static str, exe: &Path) -> SandboxDoor {
    SandboxDoor {
        door: name,
        policy: None,
        audit: None,
        audit_key: None,
        state: None,
        crew: None,
        exe: Some(exe.to_owned()),
    }
}

/// A stand-in sc-sandbox: a shell script with `body`.
fn script(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("sc-sandbox");
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn call<'a>(root: &'a Path, check: Check<'a>) -> Call<'a> {
    Call {
        root,
        agent: "a",
        session: None,
        id: None,
        check,
    }
}

/// Every way a door checks the kernel, with a cache folder for the probe.
fn checks(cache: &Path) -> [Check<'_>; 4] {
    [
        Check::AtRun,
        Check::Probe { cache: None },
        Check::Probe { cache: Some(cache) },
        Check::Trial,
    ]
}

#[test]
fn sc_sandboxs_own_failure_is_found_in_stderr() {
    assert_eq!(
        sandbox_failure("x\nsc-sandbox: bubblewrap is missing: no bwrap on PATH\n"),
        Some("bubblewrap is missing: no bwrap on PATH")
    );
    assert_eq!(sandbox_failure("the program's own error"), None);
}

#[test]
fn every_door_refuses_a_missing_sc_sandbox_in_the_same_words() {
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy::load_or_default(None).unwrap();
    let missing = dir.path().join("nonexistent/sc-sandbox");
    for name in DOORS {
        for check in checks(dir.path()) {
            let why = door(name, &missing)
                .confine_call(&policy, call(dir.path(), check))
                .unwrap_err();
            // Where bubblewrap is missing, that is named first, for every door alike.
            let expected = match bwrap::locate() {
                Err(err) => err.to_string(),
                Ok(_) => format!(
                    "sc-sandbox is missing: {} is not an executable file (install sc-sandbox beside {name})",
                    missing.display()
                ),
            };
            assert_eq!(why, expected.as_str(), "{name} {check:?}");
        }
        // The doors that root the sandbox in the working folder go the same way.
        let why = door(name, &missing)
            .confine(&policy, "a", None, Check::AtRun)
            .unwrap_err();
        assert!(
            why.contains("sc-sandbox is missing") || why.contains("bubblewrap is missing"),
            "{why}"
        );
    }
}

#[test]
fn a_kernel_that_refuses_the_sandbox_is_found_by_the_probe_and_the_trial() {
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy::load_or_default(None).unwrap();
    let refusing = script(
        dir.path(),
        "echo 'sc-sandbox: bwrap: Creating new namespace failed' >&2; exit 125",
    );
    if let Err(err) = bwrap::locate() {
        let why = door("sc-hook", &refusing)
            .confine_call(&policy, call(dir.path(), Check::Trial))
            .unwrap_err();
        assert_eq!(why, err.to_string().as_str());
        return;
    }
    let cache = dir.path().join("state");
    for name in DOORS {
        let door = door(name, &refusing);
        let probed = door
            .confine_call(
                &policy,
                call(
                    dir.path(),
                    Check::Probe {
                        cache: Some(&cache),
                    },
                ),
            )
            .unwrap_err();
        assert!(
            probed.starts_with("this machine cannot make the sandbox: a trial run of sc-sandbox ended with exit status: 125: sc-sandbox: bwrap: Creating new namespace failed"),
            "{probed}"
        );
        assert!(
            !cache.join(probe::PROBE_FILE).exists(),
            "a failure is never remembered"
        );
        let tried = door
            .confine_call(&policy, call(dir.path(), Check::Trial))
            .unwrap_err();
        assert_eq!(
            tried,
            "sc-sandbox could not make the sandbox (status 125): bwrap: Creating new namespace failed"
        );
        // Checked only when the program runs: the command line is made, and nothing ran.
        let at_run = door
            .confine_call(&policy, call(dir.path(), Check::AtRun))
            .unwrap();
        assert_eq!(at_run.invocation.exe, refusing);
    }
}

#[test]
fn the_command_line_carries_the_doors_files_made_absolute_and_the_calls_names() {
    if bwrap::locate().is_err() {
        // Without bubblewrap no command line is made: proven above.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = script(dir.path(), "exit 0");
    let policy = Policy::load_or_default(None).unwrap();
    let door = SandboxDoor {
        door: "sc-hook",
        policy: Some("policy.json".into()),
        audit: Some("audit.jsonl".into()),
        audit_key: Some("/keys/k".into()),
        state: Some("state.sqlite".into()),
        crew: Some("crew-1".into()),
        exe: Some(exe.clone()),
    };
    let cache = dir.path().join("state");
    let confined = door
        .confine_call(
            &policy,
            Call {
                root: dir.path(),
                agent: "claude",
                session: Some("s-1"),
                id: Some("id-1"),
                check: Check::Probe {
                    cache: Some(&cache),
                },
            },
        )
        .unwrap();
    let here = std::env::current_dir().unwrap();
    assert_eq!(
        confined.invocation,
        Invocation {
            exe,
            policy: Some(here.join("policy.json")),
            root: Some(dir.path().to_owned()),
            home: policy.places().home.clone(),
            audit: Some(here.join("audit.jsonl")),
            audit_key: Some("/keys/k".into()),
            state: Some(here.join("state.sqlite").display().to_string()),
            protect: Vec::new(),
            agent: Some("claude".into()),
            crew: Some("crew-1".into()),
            session: Some("s-1".into()),
            id: Some("id-1".into()),
        }
    );
    assert_eq!(confined.bwrap, bwrap::locate().unwrap());
    assert!(
        cache.join(probe::PROBE_FILE).exists(),
        "the probe's success is remembered"
    );
}
