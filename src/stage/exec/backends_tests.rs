use super::*;
use serde_json::json;

fn load(text: &str) -> Result<ToolsFile, ToolsFileProblem> {
    ToolsFile::from_json_str(text, Path::new("/srv/crew"))
}

fn load_err(text: &str) -> String {
    load(text).unwrap_err().to_string()
}

fn sh(script: &str, extra: &str) -> Backend {
    let text = format!(
        r#"{{"t": {{"command": ["/bin/sh", "-c", {}], "env": {{"PATH": "/usr/bin:/bin"}}{extra}}}}}"#,
        Value::String(script.to_owned())
    );
    load(&text).unwrap().get("t").unwrap().clone()
}

/// No args: `{}`.
const NONE: &str = "{}";

#[test]
fn a_full_entry_loads_with_defaults_for_what_is_left_out() {
    let file = load(
        r#"{
            "send_email": {"command": ["./tools/send-email", "--smtp", "localhost:2525"],
                           "timeoutSeconds": 10, "env": {"LANG": "C"}, "output": "text"},
            "write_note": {"command": ["/usr/local/bin/write-note"]}
        }"#,
    )
    .unwrap();
    let email = file.get("send_email").unwrap();
    assert_eq!(
        email.command(),
        ["./tools/send-email", "--smtp", "localhost:2525"]
    );
    assert_eq!(
        email.program,
        Program::Path(PathBuf::from("/srv/crew/./tools/send-email"))
    );
    assert_eq!(email.timeout(), Duration::from_secs(10));
    assert_eq!(email.env()["LANG"], "C");
    assert_eq!(email.output(), OutputKind::Text);
    let note = file.get("write_note").unwrap();
    assert_eq!(
        note.program,
        Program::Path(PathBuf::from("/usr/local/bin/write-note"))
    );
    assert_eq!(note.timeout(), Duration::from_secs(30));
    assert!(note.env().is_empty());
    assert_eq!(note.output(), OutputKind::Json);
    assert_eq!(
        file.names().collect::<Vec<_>>(),
        ["send_email", "write_note"]
    );
    assert!(file.get("Send_email").is_none());
    assert!(load("{}").unwrap().names().next().is_none());
}

#[test]
fn strict_failures_name_the_key() {
    let cases = [
        ("", "the file is empty"),
        ("{", "malformed JSON"),
        ("{\n \"t\": {\"command\": [\"/x\"]},,\n}", "line 2 column"),
        ("[]", "top-level value must be an object"),
        (
            r#"{"t": {"command": "./send-email --to boss"}}"#,
            "key `t.command`: expected an argv list (an array of strings), found a string; a command is never run through a shell",
        ),
        (r#"{"t": {"command": []}}"#, "key `t.command`: the argv list is empty"),
        (r#"{"t": {"command": [""]}}"#, "key `t.command`: item 0 (the program) is empty"),
        (r#"{"t": {"command": ["/x", 3]}}"#, "key `t.command`: item 1 must be a string, found a number"),
        (r#"{"t": {"command": ["/x", "a\u0000b"]}}"#, "item 1 contains a NUL byte"),
        (r#"{"t": {}}"#, "key `t`: `command` is missing"),
        (r#"{"t": ["/x"]}"#, "key `t`: expected an object"),
        (r#"{"": {"command": ["/x"]}}"#, "a tool name is empty"),
        (
            r#"{"t": {"command": ["/x"], "timeout": 5}}"#,
            "key `t`: unknown key `timeout`; did you mean `timeoutSeconds`?",
        ),
        (
            r#"{"t": {"command": ["/x"], "workingDirectory": "/"}}"#,
            "key `t`: unknown key `workingDirectory`; the known keys are `command`",
        ),
        (
            r#"{"t": {"command": ["/x"], "command": ["/y"]}}"#,
            "duplicate key `command`",
        ),
        (
            r#"{"t": {"command": ["/x"]}, "t": {"command": ["/y"]}}"#,
            "duplicate key `t`",
        ),
        (r#"{"t": {"command": ["/x"], "timeoutSeconds": "10"}}"#, "key `t.timeoutSeconds`: expected a number of seconds, found a string"),
        (r#"{"t": {"command": ["/x"], "timeoutSeconds": 0}}"#, "key `t.timeoutSeconds`: expected a number of seconds above 0"),
        (r#"{"t": {"command": ["/x"], "timeoutSeconds": -1}}"#, "above 0"),
        (r#"{"t": {"command": ["/x"], "timeoutSeconds": 1e9}}"#, "at most 86400"),
        (r#"{"t": {"command": ["/x"], "env": ["A=b"]}}"#, "key `t.env`: expected an object"),
        (r#"{"t": {"command": ["/x"], "env": {"A": 1}}}"#, "key `t.env.A`: expected a string, found a number"),
        (r#"{"t": {"command": ["/x"], "env": {"A=B": "c"}}}"#, "key `t.env`: \"A=B\" is not a variable name"),
        (r#"{"t": {"command": ["/x"], "env": {"": "c"}}}"#, "is not a variable name"),
        (r#"{"t": {"command": ["/x"], "output": "yaml"}}"#, "key `t.output`: expected \"json\" or \"text\""),
        (
            r#"{"t": {"command": ["sh", "-c", "true"]}}"#,
            "key `t.command`: \"sh\" is a bare program name, and `t.env` lists no PATH",
        ),
    ];
    for (text, expected) in cases {
        let message = load_err(text);
        assert!(message.contains(expected), "{text:?}: {message}");
    }
}

#[test]
fn a_file_error_names_the_file_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(&path, r#"{"t": {"command": "rm -rf /"}}"#).unwrap();
    let err = ToolsFile::load(&path).unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("tools file {}: ", path.display())),
        "{message}"
    );
    assert!(message.contains("key `t.command`"), "{message}");
    assert_eq!(err.problem.key(), Some("t.command"));
    assert!(matches!(
        err.problem,
        ToolsFileProblem::Key {
            problem: KeyProblem::ShellString,
            ..
        }
    ));
    let usage = anyhow::Error::new(UsageError::from(err));
    assert_eq!(crate::exit::status_for(&usage), crate::exit::USAGE_ERROR);

    let missing = ToolsFile::load(&dir.path().join("nope.json")).unwrap_err();
    assert!(missing.to_string().contains("cannot read it"), "{missing}");
}

#[test]
fn relative_programs_are_found_from_the_files_folder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.json");
    std::fs::write(&path, r#"{"t": {"command": ["bin/t"]}}"#).unwrap();
    let file = ToolsFile::load(&path).unwrap();
    assert_eq!(
        file.get("t").unwrap().program,
        Program::Path(dir.path().join("bin/t"))
    );
}

#[test]
fn a_bare_name_is_found_on_the_tools_own_path() {
    let file =
        load(r#"{"t": {"command": ["true"], "env": {"PATH": "/nowhere:/usr/bin:/bin"}}}"#).unwrap();
    let run = file.get("t").unwrap().run(NONE);
    assert_eq!(run.report.exit_status, Some(0));
    let file = load(r#"{"t": {"command": ["true"], "env": {"PATH": "/nowhere"}}}"#).unwrap();
    let run = file.get("t").unwrap().run(NONE);
    let why = run.result.unwrap_err().to_string();
    assert!(
        why.contains("no executable of that name on the tool's PATH (/nowhere)"),
        "{why}"
    );
    assert_eq!(run.report.exit_status, None);
}

#[test]
fn the_args_go_in_and_the_json_comes_out() {
    // The text goes in exactly as given (an amount finer than a float is not rounded).
    let call_args = r#"{"to": "a@example.com", "amount": 100.0000000000000001, "n": {"k": [1]}}"#;
    let run = sh("cat", r#", "output": "text""#).run(call_args);
    assert_eq!(run.result.unwrap(), Value::String(format!("{call_args}\n")));
    let run = sh("cat", "").run(call_args);
    assert_eq!(run.result.unwrap(), strict_json::parse(call_args).unwrap());
    assert_eq!(run.report.exit_status, Some(0));
    assert_eq!(run.report.signal, None);
    assert!(!run.report.timed_out);
    assert!(run.report.stdout_bytes > 10);
    assert_eq!(run.report.command, "/bin/sh");
}

#[test]
fn text_output_is_kept_exactly() {
    let run = sh("printf 'hello\\n  world\\n'", r#", "output": "text""#).run(NONE);
    assert_eq!(run.result.unwrap(), json!("hello\n  world\n"));
}

#[test]
fn only_the_listed_environment_is_passed() {
    let backend =
        load(r#"{"t": {"command": ["/usr/bin/env"], "env": {"ONLY": "this"}, "output": "text"}}"#)
            .unwrap()
            .get("t")
            .unwrap()
            .clone();
    let run = backend.run(NONE);
    assert_eq!(run.result.unwrap(), json!("ONLY=this\n"));
}

#[test]
fn failures_fail_closed_with_a_reason() {
    let cases = [
        (
            sh("echo 'smtp refused' >&2; exit 3", ""),
            "exited with status 3; stderr: smtp refused",
        ),
        (sh("exit 4", ""), "exited with status 4 (nothing on stderr)"),
        (sh("echo not json", ""), "printed output that is not JSON"),
        (sh("true", ""), "printed nothing"),
        (sh(r#"echo '{"a":1,"a":2}'"#, ""), "duplicate key `a`"),
        (
            sh("printf '\\377'", r#", "output": "text""#),
            "not valid UTF-8",
        ),
        (sh("kill -TERM $$", ""), "was ended by signal SIGTERM"),
    ];
    for (backend, expected) in cases {
        let run = backend.run(NONE);
        let why = run.result.unwrap_err().to_string();
        assert!(why.contains(expected), "{expected:?} not in {why:?}");
        assert!(why.starts_with("/bin/sh "), "{why}");
    }
    let missing = load(r#"{"t": {"command": ["/no/such/program"]}}"#).unwrap();
    let run = missing.get("t").unwrap().run(NONE);
    let why = run.result.unwrap_err().to_string();
    assert!(why.contains("cannot start /no/such/program"), "{why}");
}

#[test]
fn a_long_stderr_is_quoted_by_its_tail() {
    let run = sh(
        "i=0; while [ $i -lt 500 ]; do echo \"line $i\" >&2; i=$((i+1)); done; exit 1",
        "",
    )
    .run(NONE);
    let why = run.result.unwrap_err().to_string();
    assert!(why.contains("stderr: …"), "{why}");
    assert!(why.ends_with("line 499"), "{why}");
    assert!(why.len() < STDERR_TAIL_BYTES + 200, "{}", why.len());
}

#[test]
fn a_timeout_kills_the_whole_group() {
    let started = Instant::now();
    let run = sh("sleep 30 & sleep 30", r#", "timeoutSeconds": 0.3"#).run(NONE);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let why = run.result.unwrap_err().to_string();
    assert!(why.contains("ran past its timeout of 0.3 s"), "{why}");
    assert!(run.report.timed_out);
    assert_eq!(run.report.signal.as_deref(), Some("SIGKILL"));
    assert_eq!(run.report.exit_status, None);
}

#[test]
fn what_a_backend_leaves_behind_is_ended_with_it() {
    // The background sleep holds stdout open; without the group kill this would wait 30 s.
    let started = Instant::now();
    let run = sh("sleep 30 & echo '{\"ok\":true}'", "").run(NONE);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.result.unwrap(), json!({"ok": true}));
}

#[test]
fn too_much_output_is_stopped() {
    let run = sh("yes", "").run(NONE);
    let why = run.result.unwrap_err().to_string();
    assert!(why.contains("more than 1048576 bytes"), "{why}");
    assert!(run.report.stdout_bytes > MAX_OUTPUT_BYTES as u64);
    assert!(!run.report.timed_out);
}

#[test]
fn the_parent_is_read_from_proc_stat_past_any_command_name() {
    assert_eq!(parent_in_stat("42 (sleep) S 7 42 42 0 -1 4194304"), Some(7));
    assert_eq!(
        parent_in_stat("42 (a) S 9 (b c) ) R 1234 42 42 0 -1"),
        Some(1234)
    );
    assert_eq!(parent_in_stat("42 (sleep) S"), None);
    assert_eq!(parent_in_stat("42 sleep S 7"), None);
}

#[test]
fn the_children_of_a_process_are_found_in_proc() {
    let mut child = Command::new("/bin/sh")
        .args(["-c", "read line"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = i32::try_from(child.id()).unwrap();
    let found = children_of(getpid().as_raw()).unwrap();
    drop(child.stdin.take());
    child.wait().unwrap();
    assert!(found.contains(&pid), "{pid} not in {found:?}");
    assert!(!children_of(pid).unwrap().contains(&pid));
}

#[test]
fn the_report_serializes_as_the_audit_log_shows_it() {
    let mut report = BackendReport {
        command: "./tools/x".into(),
        duration_ms: 12,
        exit_status: Some(0),
        signal: None,
        stdout_bytes: 30,
        timed_out: false,
        sandboxed: false,
    };
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({"command": "./tools/x", "durationMs": 12, "exitStatus": 0, "signal": null, "stdoutBytes": 30, "timedOut": false})
    );
    report.sandboxed = true;
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({"command": "./tools/x", "durationMs": 12, "exitStatus": 0, "signal": null, "stdoutBytes": 30, "timedOut": false, "sandboxed": true})
    );
}

#[test]
fn the_sandbox_key_is_a_boolean() {
    let folder = Path::new("/");
    let file = ToolsFile::from_json_str(
        r#"{"a": {"command": ["/bin/true"], "sandbox": true}, "b": {"command": ["/bin/true"]}}"#,
        folder,
    )
    .unwrap();
    assert!(file.get("a").unwrap().sandboxed());
    assert!(!file.get("b").unwrap().sandboxed());
    let err = ToolsFile::from_json_str(
        r#"{"a": {"command": ["/bin/true"], "sandbox": "yes"}}"#,
        folder,
    )
    .unwrap_err();
    assert_eq!(err.key(), Some("a.sandbox"));
    assert_eq!(
        err.to_string(),
        "key `a.sandbox`: expected true or false, found a string"
    );
    // A backend that asks for the sandbox and is given none is not started.
    let run = file.get("a").unwrap().run("{}");
    let why = run.result.unwrap_err().to_string();
    assert!(
        why.contains("was not run") && why.contains("never run unconfined"),
        "{why}"
    );
    assert_eq!(run.report.exit_status, None);
    assert!(run.report.sandboxed);
    let run = file
        .get("a")
        .unwrap()
        .run_confined("{}", Some(&Err("bubblewrap is missing: x".into())));
    let why = run.result.unwrap_err().to_string();
    assert!(why.contains("bubblewrap is missing: x"), "{why}");
}
