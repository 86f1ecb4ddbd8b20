//! Shared helpers for the process tests: commands with a private audit log, fixture paths, and
//! parsing of JSON Lines output.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// Puts a binary of the build at `to`: a hard link where it can, so that no file is open for
/// writing while another test thread forks (a copy's written file can make an exec fail with
/// "text file busy"), else a copy.
///
/// Never copies onto a path that is already there: a copy onto another name of the source
/// truncates the source itself (the build's own sc-hook, once, in a test that placed it twice).
pub fn place_exe(from: &Path, to: &Path) {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    assert!(
        std::fs::symlink_metadata(to).is_err(),
        "{} is already there",
        to.display()
    );
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap();
    }
}

/// A scratch folder with an audit log path inside it; every command built from it writes there.
pub struct Scratch {
    pub dir: TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("a temp dir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn audit_path(&self) -> PathBuf {
        self.path("logs/audit.jsonl")
    }

    /// Writes a file in the scratch folder and returns its path.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// A binary of this package, run in the scratch folder with `--audit` set to the scratch log
    /// and a clean environment.
    pub fn cmd(&self, bin: &str) -> Command {
        let mut cmd = bare_cmd(bin);
        cmd.current_dir(self.dir.path());
        cmd.arg("--audit").arg(self.audit_path());
        cmd
    }

    /// `sc-report` over the scratch audit log.
    pub fn cmd_report(&self) -> Command {
        let mut cmd = bare_cmd("sc-report");
        cmd.current_dir(self.dir.path()).arg(self.audit_path());
        cmd
    }

    /// `sc-report` with arguments, over the scratch audit log.
    pub fn cmd_report_args(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(bin_path("sc-report"));
        cmd.env_clear()
            .current_dir(self.dir.path())
            .args(args)
            .arg(self.audit_path());
        cmd
    }

    /// The audit log's events, one `Value` per whole line (panics on a whole line that is not
    /// JSON). A last line without its newline is still being written by another process (or was
    /// torn by one that died), so it is left out: this may be called while stages run.
    pub fn audit_events(&self) -> Vec<Value> {
        let bytes = std::fs::read(self.audit_path()).unwrap_or_default();
        parse_whole_lines(&bytes)
    }
}

/// A binary of this package with a clean environment and no extra arguments.
pub fn bare_cmd(bin: &str) -> Command {
    let mut cmd = Command::new(bin_path(bin));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    cmd
}

/// `command`'s output, started again while the kernel refuses to run its program because a
/// copy made moments ago is still open for writing in a child another test forked ("text file
/// busy", until that child's exec closes it), for at most a minute.
pub fn output_when_free(command: &mut std::process::Command) -> std::process::Output {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        match command.output() {
            Err(err)
                if err.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::yield_now()
            }
            out => return out.expect("the program starts"),
        }
    }
}

/// The path of a binary of this package.
pub fn bin_path(bin: &str) -> PathBuf {
    match bin {
        "sc-gate" => PathBuf::from(env!("CARGO_BIN_EXE_sc-gate")),
        "sc-approve" => PathBuf::from(env!("CARGO_BIN_EXE_sc-approve")),
        "sc-exec" => PathBuf::from(env!("CARGO_BIN_EXE_sc-exec")),
        "sc-report" => PathBuf::from(env!("CARGO_BIN_EXE_sc-report")),
        "sc-mcp" => PathBuf::from(env!("CARGO_BIN_EXE_sc-mcp")),
        "sc-hook" => PathBuf::from(env!("CARGO_BIN_EXE_sc-hook")),
        "sc-state" => PathBuf::from(env!("CARGO_BIN_EXE_sc-state")),
        "sc-sandbox" => PathBuf::from(env!("CARGO_BIN_EXE_sc-sandbox")),
        "sc-inbox" => PathBuf::from(env!("CARGO_BIN_EXE_sc-inbox")),
        other => panic!("no binary named {other}"),
    }
}

/// A file under `testdata/`.
pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// Parses JSON Lines (blank lines skipped) into values, panicking with the line on failure.
pub fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// Parses the whole lines of a file another process may be writing: everything up to the last
/// newline. A torn tail (bytes after it) is not an event yet, nor is it a failure.
pub fn parse_whole_lines(bytes: &[u8]) -> Vec<Value> {
    let whole = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(end) => &bytes[..=end],
        None => &[][..],
    };
    parse_lines(std::str::from_utf8(whole).expect("the whole lines are UTF-8"))
}

/// Parses a command's stdout bytes as JSON Lines.
pub fn parse_stdout(stdout: &[u8]) -> Vec<Value> {
    parse_lines(std::str::from_utf8(stdout).expect("stdout is UTF-8"))
}

/// A stage of the pipeline run in the scratch folder, writing to its audit log, quietly, with
/// stderr piped.
pub fn stage(scratch: &Scratch, bin: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin_path(bin));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(scratch.dir.path())
        .arg("--audit")
        .arg(scratch.audit_path())
        .arg("--quiet")
        .stderr(std::process::Stdio::piped());
    cmd
}

/// Reads a pipe to the end on a thread.
pub fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).expect("read a pipe");
        bytes
    })
}

/// Waits for every child, killing them all and failing after `limit`.
pub fn wait_all(
    children: &mut [(&str, std::process::Child)],
    limit: std::time::Duration,
) -> Vec<std::process::ExitStatus> {
    let start = std::time::Instant::now();
    let mut statuses: Vec<Option<std::process::ExitStatus>> = vec![None; children.len()];
    while statuses.iter().any(Option::is_none) {
        for ((_, child), status) in children.iter_mut().zip(statuses.iter_mut()) {
            if status.is_none() {
                *status = child.try_wait().expect("try_wait");
            }
        }
        if start.elapsed() > limit {
            for (_, child) in children.iter_mut() {
                let _ = child.kill();
                let _ = child.wait();
            }
            let names: Vec<&str> = children.iter().map(|(name, _)| *name).collect();
            panic!("{names:?} did not all exit within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    statuses.into_iter().map(Option::unwrap).collect()
}

/// Pipes three prepared stages together (gate's stdin and each stage's arguments already set),
/// with sc-approve in a session of its own so it has no terminal to ask; checks that each exits 0
/// without a panic (`label` names the run in failures) and returns sc-exec's stdout.
pub fn run_three_stages(
    mut gate: std::process::Command,
    mut approve: std::process::Command,
    mut exec: std::process::Command,
    limit: std::time::Duration,
    label: &str,
) -> Vec<u8> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut gate = gate.stdout(Stdio::piped()).spawn().expect("spawn sc-gate");
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        approve.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let mut approve = approve
        .stdin(Stdio::from(gate.stdout.take().unwrap()))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn sc-approve");
    let mut exec = exec
        .stdin(Stdio::from(approve.stdout.take().unwrap()))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn sc-exec");
    let stdout = drain(exec.stdout.take().unwrap());
    let stderrs: Vec<_> = [&mut gate, &mut approve, &mut exec]
        .into_iter()
        .map(|child| drain(child.stderr.take().unwrap()))
        .collect();
    let mut children = [
        ("sc-gate", gate),
        ("sc-approve", approve),
        ("sc-exec", exec),
    ];
    let statuses = wait_all(&mut children, limit);
    for (((stage, _), status), stderr) in children.iter().zip(statuses).zip(stderrs) {
        let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
        assert_eq!(status.code(), Some(0), "{label}: {stage} failed: {stderr}");
        assert!(!stderr.contains("panicked"), "{label}: {stage}: {stderr}");
    }
    stdout.join().unwrap()
}

/// The `outcome.status` of a final record.
pub fn outcome_status(record: &Value) -> &str {
    record["outcome"]["status"]
        .as_str()
        .unwrap_or_else(|| panic!("no outcome status in {record}"))
}

/// The `outcome.reason` of a final record.
pub fn outcome_reason(record: &Value) -> &str {
    record["outcome"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("no outcome reason in {record}"))
}

/// A real `redis-server` (Debian's package, which `make test-deps` installs) on a free loopback
/// port, with no persistence, in a temp folder of its own; killed when dropped. Started empty
/// ([`RedisServer::start`]), or with a state store made on it ([`RedisServer::with_store`]).
pub struct RedisServer {
    child: Option<std::process::Child>,
    pub port: u16,
    dir: TempDir,
}

impl RedisServer {
    /// Starts a server on a free port and waits until it answers PING.
    pub fn start() -> RedisServer {
        let mut server = RedisServer {
            child: None,
            port: 0,
            dir: tempfile::tempdir().expect("a temp dir"),
        };
        for _ in 0..20 {
            server.port = free_port();
            if server.start_again() {
                return server;
            }
        }
        panic!("redis-server did not start on any of 20 free ports");
    }

    /// Starts a server and creates a state store on it (`sc-state init`), as a crew's operator
    /// does once before its doors use it: they refuse a database without the store's marker.
    pub fn with_store() -> RedisServer {
        let server = RedisServer::start();
        server.init_store();
        server
    }

    /// Runs `sc-state init --state URL` on the server, which must succeed.
    pub fn init_store(&self) {
        let out = std::process::Command::new(bin_path("sc-state"))
            .args(["init", "--state", &self.url()])
            .env_clear()
            .stdin(std::process::Stdio::null())
            .output()
            .expect("sc-state runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "sc-state init: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts the server again on its port (after [`RedisServer::stop`]); whether it answers.
    pub fn start_again(&mut self) -> bool {
        assert!(self.child.is_none(), "the server is running");
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--protected-mode", "yes", "--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("redis-server runs (make test-deps installs it)");
        self.child = Some(child);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if self.child.as_mut().unwrap().try_wait().unwrap().is_some() {
                // The port was taken after all.
                self.child = None;
                return false;
            }
            if self.pings() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!(
            "redis-server on port {} did not answer within 30 s",
            self.port
        );
    }

    /// Whether the server answers PING now.
    pub fn pings(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
        let mut answer = [0u8; 7];
        stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut answer).is_ok()
            && &answer == b"+PONG\r\n"
    }

    /// Writes what the server holds to its folder (`SAVE`), so that it is there again when the
    /// server starts again after [`RedisServer::stop`]: a server with persistence.
    pub fn save(&self) {
        let _: () = redis::cmd("SAVE")
            .query(&mut self.connection())
            .expect("the test redis-server saves");
    }

    /// Kills the server and waits for it to end.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A connection for a test to look at or spoil what the server holds.
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .expect("connect to the test redis-server")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("bind a free port")
        .port()
}

/// Runs the demo (`make demo`: testdata/crew.jsonl through sc-gate | sc-approve with
/// testdata/answers.txt | sc-exec) to its end, every stage writing the scratch audit log.
pub fn run_demo(scratch: &Scratch) {
    let mut gate = stage(scratch, "sc-gate");
    gate.arg(testdata("crew.jsonl"));
    let mut approve = stage(scratch, "sc-approve");
    approve.arg("--answers").arg(testdata("answers.txt"));
    let exec = stage(scratch, "sc-exec");
    run_three_stages(
        gate,
        approve,
        exec,
        std::time::Duration::from_secs(60),
        "the demo",
    );
}

/// Starts `cmd` with the umask most shells have (022), so that a file it makes readable by
/// others shows, whatever the test runner's own umask is.
pub fn with_usual_umask(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: umask is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
            Ok(())
        })
    }
}

/// The permission bits of a file or folder.
pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// The holds `GET /api/holds` lists, without the clock's reading: `secondsLeft` counts down
/// while a test runs, so two lists of the same holds taken a second apart differ only there.
/// Each hold's `secondsLeft` must still be a whole number of seconds or null.
pub fn unclocked(holds: Vec<Value>) -> Vec<Value> {
    holds
        .into_iter()
        .map(|mut hold| {
            let left = hold
                .as_object_mut()
                .and_then(|fields| fields.remove("secondsLeft"))
                .unwrap_or_else(|| panic!("a hold without secondsLeft: {hold}"));
            assert!(left.is_u64() || left.is_null(), "secondsLeft {left}");
            hold
        })
        .collect()
}
