//! sc-sandbox against the real kernel: every promise is checked by running real programs inside
//! (bash, python3, curl when installed) and looking from outside at what they could reach.
//! The machine needs bubblewrap (`make test-deps` installs it).

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::util::{parse_whole_lines, Scratch};

pub(crate) fn sc_sandbox() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sc-sandbox"))
}

/// sc-sandbox in the scratch folder (the root), with a clean environment, its audit log in the
/// scratch folder and `policy` (JSON) as its policy.
pub(crate) fn sandboxed(scratch: &Scratch, policy: &str) -> Command {
    let policy = scratch.write("policy.json", policy);
    let mut cmd = Command::new(sc_sandbox());
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(scratch.dir.path())
        .arg("--policy")
        .arg(policy)
        .arg("--audit")
        .arg(scratch.audit_path());
    cmd
}

pub(crate) fn bash(cmd: &mut Command, script: &str) -> Output {
    cmd.args(["--", "bash", "-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("sc-sandbox runs")
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(crate) fn events(scratch: &Scratch, event: &str) -> Vec<Value> {
    parse_whole_lines(&std::fs::read(scratch.audit_path()).unwrap_or_default())
        .into_iter()
        .filter(|e| e["stage"] == "sandbox" && e["event"] == event)
        .collect()
}

pub(crate) fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The processes on the machine with `token` in their command line, each with its status.
fn processes_with(token: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| cmdline.windows(token.len()).any(|w| w == token.as_bytes()))
        })
        .map(|entry| {
            let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            format!(
                "{}: {} [{}]",
                entry.path().display(),
                status.lines().take(9).collect::<Vec<_>>().join("; "),
                String::from_utf8_lossy(&cmdline)
            )
        })
        .collect()
}

#[test]
fn nothing_inside_reaches_a_listener_of_the_parent_namespace() {
    let scratch = Scratch::new();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (tcp_port, udp_port) = (
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    // Positive control: from outside, both listeners answer.
    std::net::TcpStream::connect(("127.0.0.1", tcp_port)).unwrap();
    tcp.accept().unwrap();
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .send_to(b"control", ("127.0.0.1", udp_port))
        .unwrap();
    let mut buf = [0u8; 64];
    udp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(udp.recv(&mut buf).unwrap(), 7);

    let token = format!("sc-sandbox-daemon-{}", std::process::id());
    let curl = if has("curl") {
        format!("curl -s --max-time 5 --noproxy '*' http://127.0.0.1:{tcp_port}/ && echo curl-reached\n")
    } else {
        eprintln!("curl is not installed: its attempt is skipped");
        String::new()
    };
    let script = format!(
        r#"
echo "bridge $HTTP_PROXY"
exec 3<>/dev/tcp/127.0.0.1/{tcp_port} && echo tcp-reached
echo leak >/dev/udp/127.0.0.1/{udp_port} && echo udp-sent
python3 - <<'EOF'
import socket
for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
    s = socket.socket(socket.AF_INET, kind)
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", {tcp_port} if kind == socket.SOCK_STREAM else {udp_port}))
        s.send(b"leak")
        print("python-sent", int(kind))
    except OSError as err:
        print("python-refused", int(kind), err)
EOF
{curl}
setsid nohup bash -c 'echo started > daemon-started; while :; do (exec 3<>/dev/tcp/127.0.0.1/{tcp_port}) 2>/dev/null && echo leak; sleep 0.05; done # {token}' >/dev/null 2>&1 &
for _ in $(seq 1 200); do [ -e daemon-started ] && break; sleep 0.05; done
[ -e daemon-started ] && echo daemon-running
"#
    );
    let out = bash(&mut sandboxed(&scratch, "{}"), &script);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("daemon-running"), "{stdout}");
    // The sandbox's own loopback has one listener, the bridge to the proxy, on a port of its
    // own; only if that port were the listener's could bash reach something there.
    let bridge_is_on_that_port = stdout.contains(&format!("bridge http://127.0.0.1:{tcp_port}\n"));
    assert!(
        !stdout.contains("tcp-reached") || bridge_is_on_that_port,
        "{stdout}"
    );
    assert!(!stdout.contains("curl-reached"), "{stdout}");
    assert!(!stdout.contains("python-sent 1"), "{stdout}");
    // The daemon did not outlive the run.
    let left = processes_with(&token);
    assert!(
        left.is_empty(),
        "processes of the sandbox outlived it: {left:?}"
    );
    // Everything inside has ended: whatever it sent would be waiting now.
    tcp.set_nonblocking(true).unwrap();
    let accepted = tcp.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener got a connection from inside: {accepted:?}"
    );
    udp.set_nonblocking(true).unwrap();
    let received = udp.recv(&mut buf);
    assert!(
        matches!(&received, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the UDP listener got a datagram from inside: {received:?}"
    );
}

/// An HTTP origin on loopback that answers `requests` requests, one a connection, with `body`.
fn origin(body: &'static str, requests: usize) -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serving = std::thread::spawn(move || {
        for _ in 0..requests {
            let (mut stream, _) = listener.accept().unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
                head.push(byte[0]);
            }
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        }
    });
    (port, serving)
}

#[test]
fn an_allowed_host_answers_through_the_proxy_and_another_is_refused_both_audited() {
    let scratch = Scratch::new();
    let (port, serving) = origin("hello from the allowed origin", 2);
    let refused = crate::util::free_port();
    let policy = format!(r#"{{"sandbox": {{"network": {{"allow": ["127.0.0.1:{port}"]}}}}}}"#);
    // A plain request (absolute URL) and a tunnel (CONNECT) to the allowed origin, then a plain
    // request to a port the policy does not allow.
    let script = if has("curl") {
        format!(
            "curl -s --max-time 10 http://127.0.0.1:{port}/; echo
curl -s --max-time 10 --proxytunnel http://127.0.0.1:{port}/; echo
curl -s --max-time 10 -w ' %{{http_code}}' http://127.0.0.1:{refused}/; echo
"
        )
    } else {
        format!(
            r#"python3 - <<'EOF'
import http.client, os, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=10).read().decode())
proxy = os.environ["HTTP_PROXY"].removeprefix("http://").split(":")
tunnel = http.client.HTTPConnection(proxy[0], int(proxy[1]), timeout=10)
tunnel.set_tunnel("127.0.0.1", {port})
tunnel.request("GET", "/")
print(tunnel.getresponse().read().decode())
try:
    urllib.request.urlopen("http://127.0.0.1:{refused}/", timeout=10)
except Exception as err:
    print(err)
EOF
"#
        )
    };
    let out = bash(&mut sandboxed(&scratch, &policy), &script);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    serving.join().unwrap();
    assert_eq!(
        stdout.matches("hello from the allowed origin").count(),
        2,
        "{stdout}"
    );
    assert!(
        stdout.contains("403") || stdout.contains("Forbidden"),
        "{stdout}"
    );
    let egress = events(&scratch, "egress");
    assert_eq!(egress.len(), 3, "{egress:?}");
    for (event, method, decision, to) in [
        (&egress[0], "GET", "allow", port),
        (&egress[1], "CONNECT", "allow", port),
        (&egress[2], "GET", "deny", refused),
    ] {
        assert_eq!(event["host"], "127.0.0.1");
        assert_eq!(event["port"], to);
        assert_eq!(event["method"], method);
        assert_eq!(event["decision"], decision);
    }
    let (start, end) = (events(&scratch, "start"), events(&scratch, "end"));
    assert_eq!((start.len(), end.len()), (1, 1));
    assert_eq!(end[0]["status"], 0);
    assert_eq!(start[0]["id"], egress[0]["id"]);
}

fn protected_project(scratch: &Scratch) -> String {
    scratch.write(".claude/settings.json", r#"{"hooks": "the gate"}"#);
    std::fs::create_dir_all(scratch.path(".git/hooks")).unwrap();
    std::os::unix::fs::symlink(".claude/settings.json", scratch.path("innocent.json")).unwrap();
    r#"{"sandbox": {"readOnly": [".claude", ".git/hooks/pre-commit"]}}"#.to_owned()
}

#[test]
fn protected_files_cannot_be_written_directly_through_a_link_created_or_removed() {
    let scratch = Scratch::new();
    let policy = protected_project(&scratch);
    let out = bash(
        &mut sandboxed(&scratch, &policy),
        r#"
echo '{"hooks": {}}' > .claude/settings.json && echo wrote-direct
echo '{"hooks": {}}' > innocent.json && echo wrote-link
python3 -c "open('innocent.json', 'w').write('x')" 2>/dev/null && echo wrote-python
printf '#!/bin/sh\ncurl evil\n' > .git/hooks/pre-commit && echo wrote-hook
rm -rf .claude 2>/dev/null; [ -e .claude/settings.json ] && echo still-there
mv .git .git-moved 2>/dev/null && echo moved-git
echo built > output.txt && echo wrote-root
"#,
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for refused in [
        "wrote-direct",
        "wrote-link",
        "wrote-python",
        "wrote-hook",
        "moved-git",
    ] {
        assert!(!stdout.contains(refused), "{refused}: {stdout}");
    }
    assert!(
        stdout.contains("still-there") && stdout.contains("wrote-root"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(scratch.path(".claude/settings.json")).unwrap(),
        r#"{"hooks": "the gate"}"#
    );
    assert!(!scratch.path(".git/hooks/pre-commit").exists());
    assert!(scratch.path(".git/hooks").is_dir() && !scratch.path(".git-moved").exists());
    assert_eq!(
        std::fs::read_to_string(scratch.path("output.txt")).unwrap(),
        "built\n"
    );
    // The gate's own files: the policy and the audit log.
    let out = bash(
        &mut sandboxed(&scratch, &policy),
        "echo '{}' > policy.json || echo policy-refused; : > logs/audit.jsonl || echo audit-refused",
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("policy-refused") && stdout.contains("audit-refused"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(scratch.path("policy.json")).unwrap(),
        policy
    );
    assert_eq!(events(&scratch, "end").len(), 2, "the log was not emptied");
}

#[test]
fn a_protected_path_behind_a_replaceable_link_is_refused_before_anything_runs() {
    let scratch = Scratch::new();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), scratch.path(".claude")).unwrap();
    let mut cmd = sandboxed(
        &scratch,
        r#"{"sandbox": {"readOnly": [".claude/settings.json"]}}"#,
    );
    let out = bash(&mut cmd, "touch ran");
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("symbolic link"),
        "{}",
        text(&out.stderr)
    );
    assert!(!scratch.path("ran").exists());
}

#[test]
fn hidden_secrets_read_empty_and_the_rest_of_home_stays_readable() {
    let scratch = Scratch::new();
    // Not under /tmp: the sandbox has a /tmp of its own, where the host's is not seen.
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let write = |name: &str, contents: &str| {
        let path = home.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    };
    write(".ssh/id_rsa", "PRIVATE KEY");
    write(".aws/credentials", "aws_secret_access_key=x");
    write(".netrc", "machine x password y");
    write("notes.txt", "ordinary notes");
    scratch.write(".env", "API_KEY=secret");
    let mut cmd = sandboxed(
        &scratch,
        r#"{"sandbox": {"hidden": ["~/.ssh", "~/.aws", "~/.netrc", ".env", "~/.kube"]}}"#,
    );
    cmd.arg("--home").arg(home.path()).env("HOME", home.path());
    let out = bash(
        &mut cmd,
        "cat ~/.ssh/id_rsa ~/.aws/credentials ~/.netrc .env 2>/dev/null; ls -A ~/.ssh ~/.aws; echo; cat ~/notes.txt",
    );
    let stdout = text(&out.stdout);
    for secret in [
        "PRIVATE KEY",
        "aws_secret",
        "password",
        "API_KEY",
        "id_rsa",
        "credentials",
    ] {
        assert!(!stdout.contains(secret), "{secret}: {stdout}");
    }
    assert!(stdout.contains("ordinary notes"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(home.path().join(".ssh/id_rsa")).unwrap(),
        "PRIVATE KEY"
    );
}

#[test]
fn status_output_input_and_signals_pass_through() {
    let scratch = Scratch::new();
    let mut cmd = sandboxed(&scratch, "{}");
    let mut child = cmd
        .args(["--", "bash", "-c", "tr a-z A-Z; echo to-stderr >&2; exit 7"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"piped in\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(out.stdout, b"PIPED IN\n");
    assert_eq!(text(&out.stderr), "to-stderr\n");
    let killed = bash(&mut sandboxed(&scratch, "{}"), "kill -KILL $$");
    assert_eq!(killed.status.code(), Some(128 + 9));
    let end = events(&scratch, "end");
    assert_eq!(
        (end[0]["status"].as_u64(), end[1]["signal"].as_u64()),
        (Some(7), Some(9))
    );
    // No signal is blocked for the program (sc-hook holds its stops until its handler is set;
    // the sandbox's helper starts as the same program, and a blocked signal survives exec).
    let mask = bash(
        &mut sandboxed(&scratch, "{}"),
        "grep SigBlk /proc/self/status",
    );
    assert_eq!(text(&mask.stdout), "SigBlk:\t0000000000000000\n");
    let missing = sandboxed(&scratch, "{}")
        .args(["--", "no-such-program-anywhere"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(127));
}

#[test]
fn a_signal_to_sc_sandbox_reaches_the_program() {
    let scratch = Scratch::new();
    let mut child = sandboxed(&scratch, "{}")
        .args([
            "--",
            "python3",
            "-c",
            "import signal,sys,time\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(42))\nprint('ready', flush=True)\ntime.sleep(60)",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = [0u8; 6];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut line)
        .unwrap();
    assert_eq!(&line, b"ready\n");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(42));
}

#[test]
fn a_bad_policy_or_flag_is_125_and_the_program_does_not_run() {
    let scratch = Scratch::new();
    for (policy, flag, expected) in [
        (
            r#"{"sandbox": {"hidden": ["~/.ssh/*/id_rsa"]}}"#,
            None,
            "key `sandbox.hidden[0]`",
        ),
        (
            r#"{"sandbox": {"readonly": []}}"#,
            None,
            "did you mean `readOnly`?",
        ),
        ("{", None, "malformed JSON"),
        ("{}", Some("--no-such-flag"), "unexpected argument"),
    ] {
        let mut cmd = sandboxed(&scratch, policy);
        if let Some(flag) = flag {
            cmd.arg(flag);
        }
        let out = bash(&mut cmd, "touch ran");
        assert_eq!(out.status.code(), Some(125), "{policy} {flag:?}");
        assert!(
            text(&out.stderr).contains(expected),
            "{}",
            text(&out.stderr)
        );
        assert!(!scratch.path("ran").exists(), "{policy}");
    }
}

#[test]
fn without_bubblewrap_it_is_125_naming_what_is_missing() {
    let scratch = Scratch::new();
    let mut named = sandboxed(&scratch, "{}");
    named.env("SC_SANDBOX_BWRAP", "/nonexistent/bwrap");
    let out = bash(&mut named, "touch ran");
    assert_eq!(out.status.code(), Some(125));
    assert!(
        text(&out.stderr).contains("/nonexistent/bwrap"),
        "{}",
        text(&out.stderr)
    );
    let mut no_path = sandboxed(&scratch, "{}");
    no_path.env("PATH", Path::new("/nonexistent"));
    let out = no_path.args(["--", "/bin/touch", "ran"]).output().unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(
        text(&out.stderr).contains("bubblewrap"),
        "{}",
        text(&out.stderr)
    );
    assert!(!scratch.path("ran").exists());
}

#[test]
fn the_man_page_and_completions_come_from_the_flags() {
    let man = Command::new(sc_sandbox())
        .args(["--generate", "man"])
        .output()
        .unwrap();
    assert!(man.status.success());
    assert!(
        text(&man.stdout).contains("sc\\-sandbox"),
        "{}",
        text(&man.stdout)
    );
    let bash = Command::new(sc_sandbox())
        .args(["--generate", "bash"])
        .output()
        .unwrap();
    assert!(text(&bash.stdout).contains("--policy"));
}

#[test]
fn a_home_folder_under_tmp_stays_readable_and_its_secrets_hidden() {
    let scratch = Scratch::new();
    // Under /tmp, which the sandbox makes anew: the home is bound back read-only.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_rsa"), "PRIVATE KEY").unwrap();
    std::fs::write(home.path().join("notes.txt"), "ordinary notes").unwrap();
    let mut cmd = sandboxed(&scratch, r#"{"sandbox": {"hidden": ["~/.ssh"]}}"#);
    cmd.arg("--home").arg(home.path()).env("HOME", home.path());
    let out = bash(
        &mut cmd,
        "cat ~/.ssh/id_rsa 2>/dev/null; cat ~/notes.txt; echo more >> ~/notes.txt || echo refused",
    );
    let stdout = text(&out.stdout);
    // The run's status and stderr with every failure: one CI run (of fourteen) saw no output at
    // all here, and said nothing of why.
    let said = format!(
        "status {:?}, stdout {stdout:?}, stderr {:?}",
        out.status,
        text(&out.stderr)
    );
    assert!(!stdout.contains("PRIVATE KEY"), "{said}");
    assert!(stdout.contains("ordinary notes"), "{said}");
    assert!(stdout.contains("refused"), "{said}");
    assert_eq!(
        std::fs::read_to_string(home.path().join("notes.txt")).unwrap(),
        "ordinary notes"
    );
}

#[test]
fn a_git_path_protects_every_way_git_finds_config_and_hooks() {
    let scratch = Scratch::new();
    // A repository with a submodule's git dir, and a worktree whose `.git` is a file pointing to
    // a git dir with a common dir of its own: all inside the writable root.
    for (name, contents) in [
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".git/config", "[core]\n"),
        (".git/modules/sub/HEAD", "ref: refs/heads/main\n"),
        (".git/modules/sub/config", "[core]\n"),
        (".git/worktrees/linked/commondir", "../..\n"),
        ("wt/.git", "gitdir: ../gitdirs/wt\n"),
        ("gitdirs/wt/HEAD", "ref: refs/heads/wt\n"),
        ("gitdirs/wt/commondir", "../common\n"),
        ("gitdirs/common/HEAD", "ref: refs/heads/main\n"),
        ("gitdirs/common/config", "[core]\n"),
    ] {
        scratch.write(name, contents);
    }
    for folder in [
        ".git/hooks",
        ".git/modules/sub/hooks",
        "gitdirs/common/hooks",
    ] {
        std::fs::create_dir_all(scratch.path(folder)).unwrap();
    }
    let policy = r#"{"sandbox": {"readOnly": [".git/hooks", "wt/.git/hooks"]}}"#;
    let out = bash(
        &mut sandboxed(&scratch, policy),
        r#"
try() { name=$1; shift; ( "$@" ) 2>/dev/null && echo "wrote $name"; }
try commondir sh -c 'echo ../evil > .git/commondir'
try config sh -c 'printf "[core]\n\thooksPath = evil\n" >> .git/config'
try config.worktree sh -c 'echo "[core]" > .git/config.worktree'
try attributes sh -c 'mkdir -p .git/info && echo "* filter=evil" > .git/info/attributes'
try sub-config sh -c 'echo "[core]" >> .git/modules/sub/config'
try sub-hook sh -c 'echo evil > .git/modules/sub/hooks/post-checkout'
try sub-commondir sh -c 'echo ../evil > .git/modules/sub/commondir'
try linked-commondir sh -c 'echo /evil > .git/worktrees/linked/commondir'
try linked-config.worktree sh -c 'echo "[core]" > .git/worktrees/linked/config.worktree'
try dot-git-file sh -c 'echo "gitdir: ../evil" > wt/.git'
try wt-commondir sh -c 'echo ../evil > gitdirs/wt/commondir'
try wt-config sh -c 'echo "[core]" > gitdirs/wt/config'
try common-config sh -c 'echo "[core]" >> gitdirs/common/config'
try common-hook sh -c 'echo evil > gitdirs/common/hooks/pre-commit'
echo "commondir reads $(cat .git/commondir)"
echo ref > .git/ORIG_HEAD && echo wrote-git-state
echo ref > .git/modules/sub/ORIG_HEAD && echo wrote-sub-state
"#,
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(!stdout.contains("wrote "), "{stdout}");
    // git reads a `commondir` of `.` as no other common dir (an empty one would stop git).
    assert!(stdout.contains("commondir reads .\n"), "{stdout}");
    // What git writes in its git dirs as it works stays writable.
    assert!(
        stdout.contains("wrote-git-state") && stdout.contains("wrote-sub-state"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(scratch.path(".git/config")).unwrap(),
        "[core]\n"
    );
    for gone in [".git/commondir", ".git/config.worktree", ".git/info"] {
        assert!(!scratch.path(gone).exists(), "{gone} was left behind");
    }
    assert_eq!(
        std::fs::read_to_string(scratch.path("wt/.git")).unwrap(),
        "gitdir: ../gitdirs/wt\n"
    );
}

#[test]
fn a_bwrap_that_someone_else_could_have_planted_is_not_run() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new();
    // A working copy of the real bubblewrap, in a folder anyone can write.
    let Ok(real) = bwrap_path() else {
        panic!("bubblewrap is needed: make test-deps installs it");
    };
    let planted = tempfile::tempdir().unwrap();
    std::fs::set_permissions(planted.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let copy = planted.path().join("bwrap");
    std::fs::copy(&real, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (variable, value) in [
        ("SC_SANDBOX_BWRAP", copy.clone().into_os_string()),
        (
            "PATH",
            std::env::join_paths([planted.path(), Path::new("/nonexistent")]).unwrap(),
        ),
    ] {
        let mut cmd = sandboxed(&scratch, "{}");
        cmd.env(variable, &value);
        let out = cmd.args(["--", "/bin/touch", "ran"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{variable}: {stderr}");
        assert!(stderr.contains("bubblewrap is not trusted"), "{stderr}");
        assert!(stderr.contains(&copy.display().to_string()), "{stderr}");
        assert!(
            stderr.contains("writable by") || stderr.contains("not root"),
            "{stderr}"
        );
        assert!(!scratch.path("ran").exists(), "{variable}");
    }
    // The trusted one, named, runs.
    let mut cmd = sandboxed(&scratch, "{}");
    cmd.env("SC_SANDBOX_BWRAP", &real);
    let out = cmd.args(["--", "/bin/true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

fn bwrap_path() -> Result<PathBuf, String> {
    let out = Command::new("sh")
        .args(["-c", "command -v bwrap"])
        .output()
        .map_err(|err| err.to_string())?;
    let path = text(&out.stdout).trim().to_owned();
    if path.is_empty() {
        return Err("no bwrap".into());
    }
    Ok(PathBuf::from(path))
}

#[test]
fn a_unix_socket_in_the_home_or_the_root_cannot_be_connected_to() {
    use std::os::unix::net::UnixListener;
    let scratch = Scratch::new();
    // Not under /tmp: the home is seen as it is, read-only (where a read-only mount alone does
    // not stop connect()).
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let agent = home.path().join("agent.sock");
    let in_root = scratch.path("service.sock");
    let listeners: Vec<UnixListener> = [&agent, &in_root]
        .iter()
        .map(|path| UnixListener::bind(path).unwrap())
        .collect();
    // Positive control: from outside, both answer.
    for (path, listener) in [&agent, &in_root].iter().zip(&listeners) {
        std::os::unix::net::UnixStream::connect(path).unwrap();
        listener.accept().unwrap();
    }
    let mut cmd = sandboxed(&scratch, "{}");
    cmd.arg("--home").arg(home.path()).env("HOME", home.path());
    let out = bash(
        &mut cmd,
        &format!(
            r#"python3 - <<'EOF'
import socket
for path in ("{}", "{}"):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect(path)
        s.send(b"leak")
        print("connected", path)
    except OSError as err:
        print("refused", path, err)
EOF
ls -l ~/agent.sock service.sock"#,
            agent.display(),
            in_root.display()
        ),
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(!stdout.contains("connected"), "{stdout}");
    assert_eq!(stdout.matches("refused").count(), 2, "{stdout}");
    for listener in &listeners {
        listener.set_nonblocking(true).unwrap();
        let accepted = listener.accept();
        assert!(
            matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "a unix listener got a connection from inside: {accepted:?}"
        );
    }
    // Outside, the socket files are as they were.
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&agent)
        .unwrap()
        .file_type()
        .is_socket());
}

#[test]
fn a_project_without_git_runs_and_its_git_paths_cannot_be_made() {
    // The pack protects `.git/hooks` and `.git/config`: where there is no `.git`, both are
    // missing from the same component, which one placeholder blocks (two made the run fail).
    let scratch = Scratch::new();
    let policy =
        r#"{"sandbox": {"readOnly": [".git/hooks", ".git/config", ".git/modules", ".claude"]}}"#;
    let out = bash(
        &mut sandboxed(&scratch, policy),
        "echo ran; mkdir -p .git/hooks 2>/dev/null || echo refused; echo x > .git 2>/dev/null || echo refused",
    );
    assert_eq!(
        text(&out.stdout),
        "ran\nrefused\nrefused\n",
        "{}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0));
    // The placeholder is gone after the run.
    assert!(!scratch.path(".git").exists());
}

#[test]
fn the_audit_key_reads_empty_and_cannot_be_written() {
    // The key seals the log, verdicts and approvals: a program that read it could forge them.
    let scratch = Scratch::new();
    let home = scratch.path("home");
    std::fs::create_dir_all(home.join(".config/skeleton-crew")).unwrap();
    let key = home.join(".config/skeleton-crew/audit.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut cmd = sandboxed(&scratch, r#"{"sandbox": {}}"#);
    cmd.arg("--audit-key").arg(&key).arg("--home").arg(&home);
    let script = format!(
        "echo \"[$(cat '{0}')]\"; echo x > '{0}' 2>/dev/null || echo refused",
        key.display()
    );
    let out = bash(&mut cmd, &script);
    assert_eq!(text(&out.stdout), "[]\nrefused\n", "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&key).unwrap(),
        "0123456789abcdef0123456789abcdef"
    );
}
