//! Real tool backends: the tools file, and running one backend for one call.
//!
//! ```json
//! {"send_email": {"command": ["./tools/send-email", "--smtp", "localhost:2525"], "timeoutSeconds": 10}}
//! ```
//!
//! The tools file maps each tool name to a backend. Per tool: `command` (required) is an argv list,
//! never a shell string; `timeoutSeconds` (default 30, at most a day); `env` (default `{}`) is the
//! whole environment the backend gets, since nothing is inherited, not even PATH; `output`
//! (`"json"`, the default, or `"text"`) says how its stdout is read; `sandbox` (default `false`):
//! `true` runs it under sc-sandbox ([`super::confine`]), and never unconfined. A program path with a `/` that
//! is relative is taken from the tools file's folder, so the file means the same from any working
//! directory; a bare program name is looked up on the PATH that `env` lists, and is an error when
//! it lists none. Loading is as strict as the policy's: malformed JSON, a non-object, an unknown
//! key (nearest key suggested), a wrong type, a duplicate key or an empty name are errors naming
//! the file and the key.
//!
//! A backend runs in a session of its own (no controlling terminal, so it cannot type into the
//! terminal a person answers in; its group is its session's), with the call's `args` as one JSON
//! document on stdin.
//! Its stdout (at most [`MAX_OUTPUT_BYTES`]) is the result; exit status 0 means it worked. Anything
//! else fails closed with a reason: a non-zero exit (with the tail of its stderr), a signal, a
//! timeout (the whole group is killed), too much output, output that is not the JSON it promised, a
//! program that cannot be started. When the backend's main process ends, whatever it left running
//! in its group is killed too: a backend's work ends when its run does.
//!
//! A process can leave its group: a daemon forks twice and calls `setsid()`. In a process that
//! called [`adopt_leftovers`] (sc-exec does, at its start), no process a backend forks outlives it.
//! That process is a child subreaper, so an orphan of a backend's tree is reparented to it rather
//! than to init, and each backend is a child subreaper too, so while it runs, the orphans of its own
//! tree are reparented to it. Whatever a backend leaves becomes a child of this process only when
//! the backend ends; so when a backend ends (or is killed at its timeout), every child of this
//! process that is not a running backend is what a finished backend left behind, in whatever
//! session or group it moved to, and is killed (SIGKILL) and reaped, again and again until none is
//! left. A backend running beside it under `--jobs` keeps its own tree, daemons included, until it
//! ends in turn. What a backend asks another program to start (a service manager, `at`, a container
//! runtime, a remote host) is not its descendant, and is out of reach.
//!
//! A backend with `"sandbox": true` is started as sc-sandbox with the program after `--`
//! ([`super::confine::Confined`]), with the same environment (and `SC_SANDBOX_BWRAP`, the
//! bubblewrap sc-exec found), stdin, pipes, process group, timeout and output cap. Everything it
//! starts runs in sc-sandbox's PID namespace, under bubblewrap's `--die-with-parent`: killing
//! sc-sandbox's group ends the namespace, and the program with all it left. Where the sandbox
//! cannot be made, the program is not started ([`BackendFailure::NoSandbox`]); sc-sandbox's own
//! exit status 125, with its reason on stderr, is [`BackendFailure::SandboxFailed`].

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::{getpid, Pid};
use serde::Serialize;
use serde_json::Value;

use crate::error::UsageError;
use crate::stage::sandbox::door::{sandbox_failure, Confined, ReportPipe};
use crate::stage::sandbox::run::Report;
use crate::stage::sandbox::EXIT_SANDBOX_FAILURE;
use crate::strict_json;

/// The keys a tool's entry may hold.
pub const KEYS: &[&str] = &["command", "timeoutSeconds", "env", "output", "sandbox"];
/// How long a backend may run when its entry does not say.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 30.0;
/// The longest timeout a tools file may ask for: a day.
pub(crate) const MAX_TIMEOUT_SECONDS: f64 = 86_400.0;
/// The most a backend may print on stdout: 1 MiB. More is a failure.
pub(crate) const MAX_OUTPUT_BYTES: usize = 1 << 20;
/// How much of the end of a failed backend's stderr its reason quotes.
pub(crate) const STDERR_TAIL_BYTES: usize = 1024;
/// How long sc-exec waits for a killed backend's pipes to close before giving up on them.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long the processes a backend left running may take to die once killed.
const LEFTOVER_GRACE: Duration = Duration::from_secs(5);
/// The longest pause between two looks at killed leftovers that have not died yet.
const LEFTOVER_POLL: Duration = Duration::from_millis(20);

/// Whether this process adopts and kills what its backends leave running ([`adopt_leftovers`]).
static ADOPTING: AtomicBool = AtomicBool::new(false);
/// The children this process already had when it began to adopt leftovers: never a backend's, so
/// never killed (and never reaped, so their pids are not reused while this process runs).
static FOREIGN: OnceLock<BTreeSet<i32>> = OnceLock::new();
/// The pids of the backends started and not yet reaped: the children of this process that are
/// not leftovers. Held while a backend is started and while leftovers are hunted, so a hunt never
/// takes a backend that has just started for a leftover.
static RUNNING: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Makes this process the reaper of everything its backends leave running: it becomes a child
/// subreaper, every backend it starts from now on is one too, and when a backend ends, every child
/// of this process that is not a running backend is killed and reaped (see the module's notes).
///
/// Call it at the start of a process whose only children are to be the backends it runs, as
/// sc-exec does. The children it already has are left alone, but whatever they leave running once
/// they end comes to this process too, and is taken for a backend's leftover; so is any orphan of
/// the namespace when this process is its init (pid 1 in a container). A backend that clears its
/// own subreaper attribute lets its orphans reach this process while it runs, where the end of
/// any other backend kills them. Calling it again does nothing more.
pub fn adopt_leftovers() -> io::Result<()> {
    // An error is kept to be given again: shared, as an `io::Error` cannot be copied.
    static ADOPTED: OnceLock<Result<(), Arc<io::Error>>> = OnceLock::new();
    let adopted = ADOPTED.get_or_init(|| {
        let adopt = || -> io::Result<()> {
            prctl::set_child_subreaper(true)?;
            let _ = FOREIGN.set(children_of(getpid().as_raw())?.into_iter().collect());
            ADOPTING.store(true, Ordering::SeqCst);
            Ok(())
        };
        adopt().map_err(Arc::new)
    });
    adopted.clone().map_err(io::Error::other)
}

/// The backends started and not yet reaped; a panic elsewhere does not make the list unusable.
fn running() -> MutexGuard<'static, BTreeSet<i32>> {
    RUNNING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a backend's stdout is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputKind {
    /// One JSON document; anything else is a failure.
    #[default]
    Json,
    /// UTF-8 text, kept exactly as printed, as a JSON string.
    Text,
}

/// Where the program of a backend is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Program {
    /// An absolute path (a relative one was resolved against the tools file's folder).
    Path(PathBuf),
    /// A bare name, looked up on the PATH that the tool's `env` lists.
    Search { name: String, path: String },
}

/// One tool's backend, as the tools file describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Backend {
    command: Vec<String>,
    program: Program,
    timeout_seconds: f64,
    env: BTreeMap<String, String>,
    output: OutputKind,
    /// Whether it runs under sc-sandbox (`"sandbox": true`).
    sandbox: bool,
}

/// A loaded tools file: tool name → backend.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsFile {
    path: PathBuf,
    tools: BTreeMap<String, Backend>,
}

/// Why a tools file was refused. Always names the file and, where there is one, the key.
#[derive(Debug, thiserror::Error)]
#[error("tools file {}: {problem}", .file.display())]
pub struct ToolsFileError {
    pub file: PathBuf,
    pub problem: ToolsFileProblem,
}

/// What is wrong with a tools file ([`ToolsFileError`]).
#[derive(Debug, thiserror::Error)]
pub enum ToolsFileProblem {
    #[error("cannot find its folder: {0}")]
    NoFolder(io::Error),
    #[error("cannot read it: {0}")]
    Unreadable(io::Error),
    #[error("not valid UTF-8 (at byte {offset})")]
    NotUtf8 { offset: usize },
    #[error("the file is empty; a tools file is a JSON object mapping tool names to backends")]
    Empty,
    /// Not strict JSON; the parser's error has the line and column.
    #[error("malformed JSON: {0}")]
    Malformed(serde_json::Error),
    #[error("the top-level value must be an object mapping tool names to backends, found {found}")]
    NotAnObject { found: &'static str },
    #[error("a tool name is empty")]
    EmptyName,
    /// A problem in one key: `send_email`, `send_email.command`, `send_email.env.LANG`.
    #[error("key `{key}`: {problem}")]
    Key { key: String, problem: KeyProblem },
}

impl ToolsFileProblem {
    /// The key path the problem is in, when it is in one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ToolsFileProblem::Key { key, .. } => Some(key),
            _ => None,
        }
    }
}

/// What is wrong with one key of a tools file ([`ToolsFileProblem::Key`]).
#[derive(Debug, thiserror::Error)]
pub enum KeyProblem {
    #[error("expected an object with at least `command`, found {found}")]
    NotAnEntry { found: &'static str },
    /// A key a tool's entry does not know, with the nearest known key when there is one.
    #[error("unknown key `{unknown}`; {}", known_keys(*.suggestion))]
    Unknown {
        unknown: String,
        suggestion: Option<&'static str>,
    },
    #[error("`command` is missing; give the argv list to run, e.g. [\"./tools/{tool}\"]")]
    NoCommand { tool: String },
    #[error(
        "expected an argv list (an array of strings), found a string; a command is never run through a shell: write it as [\"program\", \"arg\", …]"
    )]
    ShellString,
    #[error("expected an argv list (an array of strings), found {found}")]
    NotAnArgv { found: &'static str },
    #[error("the argv list is empty; it needs at least the program to run")]
    EmptyArgv,
    #[error("item 0 (the program) is empty")]
    EmptyProgram,
    #[error("item {index} contains a NUL byte")]
    NulInItem { index: usize },
    #[error("item {index} must be a string, found {found}")]
    ItemNotText { index: usize, found: &'static str },
    #[error(
        "expected a number of seconds above 0 and at most {MAX_TIMEOUT_SECONDS}, found {seconds}"
    )]
    TimeoutOutOfRange { seconds: f64 },
    #[error("expected a number of seconds, found {found}")]
    TimeoutNotANumber { found: &'static str },
    #[error("expected an object mapping variable names to strings, found {found}")]
    EnvNotAnObject { found: &'static str },
    #[error(
        "{} is not a variable name (empty, or holds `=` or NUL)",
        Value::String(.name.clone())
    )]
    BadVariableName { name: String },
    #[error("the value contains a NUL byte")]
    NulInValue,
    #[error("expected a string, found {found}")]
    NotText { found: &'static str },
    #[error("expected \"json\" or \"text\", found {found}")]
    BadOutput { found: Value },
    #[error("expected true or false, found {found}")]
    NotABoolean { found: &'static str },
    /// A bare program name with no PATH in the tool's `env` to find it on.
    #[error(
        "{} is a bare program name, and `{tool}.env` lists no PATH to find it on (a backend inherits no environment): give its path, e.g. \"/usr/bin/{program}\", or add PATH to `env`",
        Value::String(.program.clone())
    )]
    NoPath { tool: String, program: String },
}

/// The end of an unknown key's message: the nearest known key, or all of them.
fn known_keys(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(known) => format!("did you mean `{known}`?"),
        None => format!(
            "the known keys are {}",
            KEYS.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A problem in the key `key`.
fn in_key(key: impl Into<String>, problem: KeyProblem) -> ToolsFileProblem {
    ToolsFileProblem::Key {
        key: key.into(),
        problem,
    }
}

/// A tools file that does not load is a usage error: exit status 2.
impl From<ToolsFileError> for UsageError {
    fn from(err: ToolsFileError) -> UsageError {
        UsageError(err.to_string())
    }
}

impl ToolsFile {
    /// Loads a tools file strictly.
    pub fn load(path: &Path) -> Result<ToolsFile, ToolsFileError> {
        let in_file = |problem| ToolsFileError {
            file: path.to_owned(),
            problem,
        };
        let absolute =
            std::path::absolute(path).map_err(|err| in_file(ToolsFileProblem::NoFolder(err)))?;
        let folder = absolute.parent().unwrap_or(Path::new("/"));
        let bytes =
            std::fs::read(path).map_err(|err| in_file(ToolsFileProblem::Unreadable(err)))?;
        let text = String::from_utf8(bytes).map_err(|err| {
            in_file(ToolsFileProblem::NotUtf8 {
                offset: err.utf8_error().valid_up_to(),
            })
        })?;
        let tools = tools_from_json_str(&text, folder).map_err(in_file)?;
        Ok(ToolsFile {
            path: path.to_owned(),
            tools,
        })
    }

    /// Reads a tools file from JSON text, with relative program paths taken from `folder`.
    pub fn from_json_str(text: &str, folder: &Path) -> Result<ToolsFile, ToolsFileProblem> {
        Ok(ToolsFile {
            path: folder.join("<text>"),
            tools: tools_from_json_str(text, folder)?,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The backend of a tool, by its exact name.
    pub fn get(&self, tool: &str) -> Option<&Backend> {
        self.tools.get(tool)
    }

    /// The tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }
}

fn tools_from_json_str(
    text: &str,
    folder: &Path,
) -> Result<BTreeMap<String, Backend>, ToolsFileProblem> {
    let value = strict_json::parse(text).map_err(|err| match err.classify() {
        serde_json::error::Category::Eof if text.trim().is_empty() => ToolsFileProblem::Empty,
        _ => ToolsFileProblem::Malformed(err),
    })?;
    let Value::Object(object) = value else {
        return Err(ToolsFileProblem::NotAnObject {
            found: strict_json::type_name(&value),
        });
    };
    let mut tools = BTreeMap::new();
    for (name, entry) in &object {
        if name.is_empty() {
            return Err(ToolsFileProblem::EmptyName);
        }
        tools.insert(name.clone(), backend(name, entry, folder)?);
    }
    Ok(tools)
}

fn backend(name: &str, value: &Value, folder: &Path) -> Result<Backend, ToolsFileProblem> {
    let Value::Object(entry) = value else {
        return Err(in_key(
            name,
            KeyProblem::NotAnEntry {
                found: strict_json::type_name(value),
            },
        ));
    };
    let mut command = None;
    let mut timeout_seconds = DEFAULT_TIMEOUT_SECONDS;
    let mut env = BTreeMap::new();
    let mut output = OutputKind::default();
    let mut sandbox = false;
    for (key, value) in entry {
        let key_path = format!("{name}.{key}");
        let in_this = |problem| in_key(&key_path, problem);
        match key.as_str() {
            "command" => command = Some(argv(value).map_err(in_this)?),
            "timeoutSeconds" => timeout_seconds = timeout(value).map_err(in_this)?,
            "env" => env = environment(&key_path, value)?,
            "output" => output = output_kind(value).map_err(in_this)?,
            "sandbox" => sandbox = boolean(value).map_err(in_this)?,
            unknown => {
                return Err(in_key(
                    name,
                    KeyProblem::Unknown {
                        unknown: unknown.to_owned(),
                        suggestion: nearest_key(unknown),
                    },
                ))
            }
        }
    }
    let Some(command) = command else {
        return Err(in_key(
            name,
            KeyProblem::NoCommand {
                tool: name.to_owned(),
            },
        ));
    };
    let program = program(name, &command[0], &env, folder)?;
    Ok(Backend {
        command,
        program,
        timeout_seconds,
        env,
        output,
        sandbox,
    })
}

fn boolean(value: &Value) -> Result<bool, KeyProblem> {
    value.as_bool().ok_or_else(|| KeyProblem::NotABoolean {
        found: strict_json::type_name(value),
    })
}

fn argv(value: &Value) -> Result<Vec<String>, KeyProblem> {
    let items = match value {
        Value::Array(items) => items,
        Value::String(_) => return Err(KeyProblem::ShellString),
        other => {
            return Err(KeyProblem::NotAnArgv {
                found: strict_json::type_name(other),
            })
        }
    };
    if items.is_empty() {
        return Err(KeyProblem::EmptyArgv);
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::String(text) if index == 0 && text.is_empty() => Err(KeyProblem::EmptyProgram),
            Value::String(text) if text.contains('\0') => Err(KeyProblem::NulInItem { index }),
            Value::String(text) => Ok(text.clone()),
            other => Err(KeyProblem::ItemNotText {
                index,
                found: strict_json::type_name(other),
            }),
        })
        .collect()
}

fn timeout(value: &Value) -> Result<f64, KeyProblem> {
    match value.as_f64() {
        Some(seconds) if seconds > 0.0 && seconds <= MAX_TIMEOUT_SECONDS => Ok(seconds),
        Some(seconds) => Err(KeyProblem::TimeoutOutOfRange { seconds }),
        None => Err(KeyProblem::TimeoutNotANumber {
            found: strict_json::type_name(value),
        }),
    }
}

fn environment(key: &str, value: &Value) -> Result<BTreeMap<String, String>, ToolsFileProblem> {
    let Value::Object(entries) = value else {
        return Err(in_key(
            key,
            KeyProblem::EnvNotAnObject {
                found: strict_json::type_name(value),
            },
        ));
    };
    entries
        .iter()
        .map(|(name, value)| {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(in_key(
                    key,
                    KeyProblem::BadVariableName { name: name.clone() },
                ));
            }
            match value {
                Value::String(text) if text.contains('\0') => {
                    Err(in_key(format!("{key}.{name}"), KeyProblem::NulInValue))
                }
                Value::String(text) => Ok((name.clone(), text.clone())),
                other => Err(in_key(
                    format!("{key}.{name}"),
                    KeyProblem::NotText {
                        found: strict_json::type_name(other),
                    },
                )),
            }
        })
        .collect()
}

fn output_kind(value: &Value) -> Result<OutputKind, KeyProblem> {
    match value.as_str() {
        Some("json") => Ok(OutputKind::Json),
        Some("text") => Ok(OutputKind::Text),
        _ => Err(KeyProblem::BadOutput {
            found: value.clone(),
        }),
    }
}

fn program(
    name: &str,
    program: &str,
    env: &BTreeMap<String, String>,
    folder: &Path,
) -> Result<Program, ToolsFileProblem> {
    if program.contains('/') {
        return Ok(Program::Path(folder.join(program)));
    }
    match env.get("PATH") {
        Some(path) => Ok(Program::Search {
            name: program.to_owned(),
            path: path.clone(),
        }),
        None => Err(in_key(
            format!("{name}.command"),
            KeyProblem::NoPath {
                tool: name.to_owned(),
                program: program.to_owned(),
            },
        )),
    }
}

/// The known key nearest an unknown one: a typo, or the start of a key (`timeout` for
/// `timeoutSeconds`).
fn nearest_key(unknown: &str) -> Option<&'static str> {
    let lower = unknown.to_lowercase();
    KEYS.iter()
        .map(|known| {
            let prefix = lower.len() >= 3 && known.to_lowercase().starts_with(&lower);
            let distance = if prefix {
                0
            } else {
                strsim::damerau_levenshtein(unknown, known)
            };
            (distance, known)
        })
        .min()
        .filter(|(distance, _)| *distance <= 4)
        .map(|(_, known)| *known)
}

/// What the audit log says about one backend run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendReport {
    /// The program as the tools file names it (`command[0]`).
    pub command: String,
    pub duration_ms: u64,
    /// The exit status, when the program exited; `null` when a signal ended it or it never ran.
    pub exit_status: Option<i32>,
    /// The signal that ended it (`"SIGKILL"`), if one did.
    pub signal: Option<String>,
    /// How many bytes it printed on stdout (reading stops just past the limit).
    pub stdout_bytes: u64,
    /// Whether it was killed for running past its timeout.
    pub timed_out: bool,
    /// Whether it ran (or was to run) under sc-sandbox; left out when not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sandboxed: bool,
}

/// One backend run: its result (or why it failed) and what the audit log says about it.
#[derive(Debug)]
pub struct BackendRun {
    pub result: Result<Value, BackendFailure>,
    pub report: BackendReport,
}

/// Why a backend run failed. Each names the program as the tools file does (`command[0]`); the
/// tail of its stderr, where there is one, is quoted.
#[derive(Debug, thiserror::Error)]
pub enum BackendFailure {
    #[error("cannot start {program}: {error}")]
    CannotStart { program: String, error: io::Error },
    /// Its entry asks for the sandbox, and the sandbox cannot be made here: it was not started.
    #[error("{program} was not run: its tools file entry asks for the sandbox, which cannot be made here, and it is never run unconfined: {why}")]
    NoSandbox { program: String, why: String },
    /// sc-sandbox ended with status 125 and said why: the sandbox could not be made, and the
    /// program did not run.
    #[error("{program} was not run: sc-sandbox could not make the sandbox (status 125), and it is never run unconfined: {why}")]
    SandboxFailed { program: String, why: String },
    /// A bare name not found on the PATH of the tool's `env`.
    #[error("cannot start {name}: no executable of that name on the tool's PATH ({path})")]
    NotOnPath { name: String, path: String },
    #[error(
        "{program} ran past its timeout of {seconds} s and was killed with its whole process group{}",
        with_stderr(.stderr)
    )]
    TimedOut {
        program: String,
        seconds: f64,
        stderr: String,
    },
    /// It ended, but what it left running could not be ended ([`adopt_leftovers`]).
    #[error("{program} ended, but {why}")]
    Leftovers { program: String, why: Leftovers },
    #[error(
        "{program} ended, but its stdout was still open {} s later (a process outside its process group holds it)",
        KILL_GRACE.as_secs()
    )]
    StdoutHeld { program: String },
    #[error(
        "{program} printed more than {MAX_OUTPUT_BYTES} bytes (1 MiB) on stdout and was stopped"
    )]
    TooMuchOutput { program: String },
    #[error("{program} exited with status {code}{}", with_stderr(.stderr))]
    Exited {
        program: String,
        code: i32,
        stderr: String,
    },
    #[error("{program} was ended by signal {}{}", .signal.as_str(), with_stderr(.stderr))]
    Signaled {
        program: String,
        signal: Signal,
        stderr: String,
    },
    #[error("{program} ended in an unexpected way: {status:?}")]
    EndedOddly { program: String, status: WaitStatus },
    #[error("cannot wait for {program}: {errno}")]
    CannotWait { program: String, errno: Errno },
    #[error("{program} did not end within {} s of being killed", KILL_GRACE.as_secs())]
    NotEnded { program: String },
    #[error("cannot read the output of {program}: {error}")]
    CannotRead { program: String, error: io::Error },
    #[error("{program} printed output that is not valid UTF-8 (bad byte at offset {offset})")]
    NotUtf8 { program: String, offset: usize },
    #[error(
        "{program} printed nothing; its tools file entry expects JSON (set \"output\": \"text\" to take text)"
    )]
    PrintedNothing { program: String },
    #[error(
        "{program} printed output that is not JSON ({error}); its tools file entry expects JSON (set \"output\": \"text\" to take text)"
    )]
    NotJson {
        program: String,
        error: serde_json::Error,
    },
}

/// Why what a backend left running was not all ended ([`end_leftovers`]).
#[derive(Debug, thiserror::Error)]
pub enum Leftovers {
    #[error("cannot look in /proc for what it left running: {0}")]
    CannotLook(io::Error),
    #[error(
        "{count} process(es) it left running were still there {} s after being killed",
        LEFTOVER_GRACE.as_secs()
    )]
    StillThere { count: usize },
}

/// What the helper threads of a run tell the thread that waits on it.
enum Event {
    Exited(nix::Result<WaitStatus>),
    Stdout(Captured),
    Stderr((Vec<u8>, bool)),
}

struct Captured {
    bytes: Vec<u8>,
    total: u64,
    overflowed: bool,
    error: Option<io::Error>,
}

impl Backend {
    pub fn command(&self) -> &[String] {
        &self.command
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_seconds)
    }

    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    pub fn output(&self) -> OutputKind {
        self.output
    }

    /// Whether its entry asks for the sandbox (`"sandbox": true`).
    pub fn sandboxed(&self) -> bool {
        self.sandbox
    }

    /// Runs the backend with `args_json` (the call's `args`, one JSON document) and a newline on
    /// stdin, and waits for it, never longer than its timeout (and a short grace for its pipes to
    /// close once it is killed).
    pub fn run(&self, args_json: &str) -> BackendRun {
        self.run_confined(args_json, None)
    }

    /// [`Backend::run`], under sc-sandbox when the entry asks for the sandbox: `sandbox` is the
    /// checked command line for this call ([`SandboxDoor::confine`]), or why the sandbox cannot
    /// be made. A backend that asks for the sandbox and has none (an error, or `None`) is not
    /// started. A backend that does not ask for it ignores `sandbox`.
    ///
    /// [`SandboxDoor::confine`]: crate::stage::sandbox::door::SandboxDoor::confine
    pub fn run_confined(
        &self,
        args_json: &str,
        sandbox: Option<&Result<Confined, crate::stage::sandbox::Unconfinable>>,
    ) -> BackendRun {
        let started = Instant::now();
        let mut report = BackendReport {
            command: self.command[0].clone(),
            duration_ms: 0,
            exit_status: None,
            signal: None,
            stdout_bytes: 0,
            timed_out: false,
            sandboxed: self.sandbox,
        };
        let result = self.run_reporting(args_json, sandbox, started, &mut report);
        report.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        BackendRun { result, report }
    }

    fn run_reporting(
        &self,
        args_json: &str,
        sandbox: Option<&Result<Confined, crate::stage::sandbox::Unconfinable>>,
        started: Instant,
        report: &mut BackendReport,
    ) -> Result<Value, BackendFailure> {
        let program = self.command[0].clone();
        let path = self.resolve()?;
        let mut report_pipe = None;
        let mut command = if self.sandbox {
            let confined = match sandbox {
                Some(Ok(confined)) => confined,
                Some(Err(why)) => {
                    return Err(BackendFailure::NoSandbox {
                        program,
                        why: why.to_string(),
                    })
                }
                None => {
                    return Err(BackendFailure::NoSandbox {
                        program,
                        why: "no sandbox was given to run it in".to_owned(),
                    })
                }
            };
            let args: Vec<OsString> = self.command[1..].iter().map(OsString::from).collect();
            let mut command = confined.command(path.as_os_str(), &args);
            let (name, bwrap) = confined.bwrap_env();
            command.env_clear().envs(&self.env).env(name, bwrap);
            // How the run ended, told by sc-sandbox itself: a program's own status 125 is not
            // sc-sandbox's.
            report_pipe = Some(ReportPipe::attach(&mut command).map_err(|error| {
                BackendFailure::CannotStart {
                    program: program.clone(),
                    error,
                }
            })?);
            command
        } else {
            let mut command = Command::new(&path);
            command.args(&self.command[1..]).env_clear().envs(&self.env);
            command
        };
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // A session of its own (and so a group of its own, whose id is its pid): no controlling
        // terminal, so a backend cannot type an answer into the person's terminal (TIOCSTI on
        // /dev/tty) while sc-approve asks there. A review had a backend type "yes" so.
        // SAFETY: setsid is one system call, async-signal-safe; it allocates nothing and touches
        // no lock, which is all that is allowed between fork and exec.
        unsafe {
            command.pre_exec(|| nix::unistd::setsid().map(drop).map_err(io::Error::from));
        }
        let adopting = ADOPTING.load(Ordering::SeqCst);
        if adopting {
            // The backend keeps the orphans of its own tree while it runs, so that the leftovers
            // this process finds are only ever those of a backend that has ended.
            // SAFETY: prctl is one system call, async-signal-safe; it allocates nothing and
            // touches no lock, which is all that is allowed between fork and exec.
            unsafe {
                command.pre_exec(|| prctl::set_child_subreaper(true).map_err(io::Error::from));
            }
        }
        let mut running = running();
        let mut child = command
            .spawn()
            .map_err(|error| BackendFailure::CannotStart {
                program: program.clone(),
                error,
            })?;
        // This process's copy of the report pipe's writing end goes with the command.
        drop(command);
        let group = Pid::from_raw(i32::try_from(child.id()).expect("a pid fits in i32"));
        running.insert(group.as_raw());
        drop(running);
        let (events, received) = mpsc::channel();
        let (reap, reap_now) = mpsc::channel::<()>();
        let mut input = args_json.as_bytes().to_vec();
        input.push(b'\n');
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        // A backend that does not read its stdin gets a closed pipe; that is its business.
        thread::spawn(move || {
            let mut stdin = stdin;
            let _ = stdin.write_all(&input);
        });
        let sender = events.clone();
        thread::spawn(move || {
            let _ = sender.send(Event::Stdout(read_capped(stdout, MAX_OUTPUT_BYTES)));
        });
        let sender = events.clone();
        thread::spawn(move || {
            let _ = sender.send(Event::Stderr(read_tail(stderr, STDERR_TAIL_BYTES)));
        });
        thread::spawn(move || wait_then_reap(child, events, reap_now));

        let deadline = started + self.timeout();
        let mut killed_at: Option<Instant> = None;
        let mut exited = None;
        let mut leftovers = None;
        let mut captured = None;
        let mut stderr_tail = None;
        while exited.is_none() || captured.is_none() || stderr_tail.is_none() {
            let now = Instant::now();
            if killed_at.is_none() && now >= deadline {
                report.timed_out = true;
                kill_group(group);
                killed_at = Some(now);
            }
            let until = killed_at.map_or(deadline, |at| at + KILL_GRACE);
            match received.recv_timeout(until.saturating_duration_since(now)) {
                Ok(Event::Exited(status)) => {
                    // The main process is gone but not yet reaped, so the group id is still its
                    // own: whatever it left behind in the group is ended with it.
                    if killed_at.is_none() {
                        kill_group(group);
                        killed_at = Some(Instant::now());
                    }
                    // Its children, wherever they moved, are now this process's children.
                    leftovers = Some(end_leftovers());
                    exited = Some(status);
                }
                Ok(Event::Stdout(out)) => {
                    if out.overflowed && killed_at.is_none() {
                        kill_group(group);
                        killed_at = Some(Instant::now());
                    }
                    captured = Some(out);
                }
                Ok(Event::Stderr(tail)) => stderr_tail = Some(tail),
                Err(RecvTimeoutError::Timeout)
                    if killed_at.is_some() && Instant::now() >= until =>
                {
                    break
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        if killed_at.is_none() {
            kill_group(group);
        }
        // Only now may the waiter reap the main process (and free its pid for reuse).
        drop(reap);

        let tail = stderr_tail
            .map(|tail| quote_tail(&tail))
            .unwrap_or_default();
        match &exited {
            Some(Ok(WaitStatus::Exited(_, code))) => report.exit_status = Some(*code),
            Some(Ok(WaitStatus::Signaled(_, signal, _))) => {
                report.signal = Some(signal.as_str().to_owned())
            }
            _ => {}
        }
        if let Some(out) = &captured {
            report.stdout_bytes = out.total;
        }
        if report.timed_out {
            return Err(BackendFailure::TimedOut {
                program,
                seconds: self.timeout_seconds,
                stderr: tail,
            });
        }
        if let Some(Err(why)) = leftovers {
            return Err(BackendFailure::Leftovers { program, why });
        }
        let Some(out) = captured else {
            return Err(BackendFailure::StdoutHeld { program });
        };
        if out.overflowed {
            return Err(BackendFailure::TooMuchOutput { program });
        }
        match exited {
            Some(Ok(WaitStatus::Exited(_, 0))) => {}
            Some(Ok(WaitStatus::Exited(_, code)))
                if self.sandbox && code == i32::from(EXIT_SANDBOX_FAILURE) =>
            {
                // Whose 125 it is, sc-sandbox says on its report pipe: a program that ran and
                // exited 125 fails as any other, whatever it printed; without a word that the
                // program ran, it is sc-sandbox's own failure and the program did not run.
                let report = report_pipe.take().map(ReportPipe::read);
                return Err(match report {
                    Some(Report::Ran(_)) => BackendFailure::Exited {
                        program,
                        code,
                        stderr: tail,
                    },
                    Some(Report::Failed(Some(why))) => {
                        BackendFailure::SandboxFailed { program, why }
                    }
                    _ => BackendFailure::SandboxFailed {
                        program,
                        why: sandbox_failure(&tail)
                            .unwrap_or("sc-sandbox ended without saying the program ran")
                            .to_owned(),
                    },
                });
            }
            Some(Ok(WaitStatus::Exited(_, code))) => {
                return Err(BackendFailure::Exited {
                    program,
                    code,
                    stderr: tail,
                })
            }
            Some(Ok(WaitStatus::Signaled(_, signal, _))) => {
                return Err(BackendFailure::Signaled {
                    program,
                    signal,
                    stderr: tail,
                })
            }
            Some(Ok(status)) => return Err(BackendFailure::EndedOddly { program, status }),
            Some(Err(errno)) => return Err(BackendFailure::CannotWait { program, errno }),
            None => return Err(BackendFailure::NotEnded { program }),
        }
        if let Some(error) = out.error {
            return Err(BackendFailure::CannotRead { program, error });
        }
        self.result_from(program, out.bytes)
    }

    /// The program to start: a path as it is, or a bare name found on the tool's own PATH.
    fn resolve(&self) -> Result<PathBuf, BackendFailure> {
        match &self.program {
            Program::Path(path) => Ok(path.clone()),
            Program::Search { name, path } => path
                .split(':')
                .filter(|folder| !folder.is_empty())
                .map(|folder| Path::new(folder).join(name))
                .find(|candidate| crate::stage::sandbox::bwrap::is_executable(candidate))
                .ok_or_else(|| BackendFailure::NotOnPath {
                    name: name.clone(),
                    path: path.clone(),
                }),
        }
    }

    fn result_from(&self, program: String, bytes: Vec<u8>) -> Result<Value, BackendFailure> {
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(err) => {
                return Err(BackendFailure::NotUtf8 {
                    program,
                    offset: err.utf8_error().valid_up_to(),
                })
            }
        };
        match self.output {
            OutputKind::Text => Ok(Value::String(text)),
            OutputKind::Json => strict_json::parse(text.trim()).map_err(|error| {
                if text.trim().is_empty() {
                    BackendFailure::PrintedNothing { program }
                } else {
                    BackendFailure::NotJson { program, error }
                }
            }),
        }
    }
}

/// Kills every process in the group. A group already gone (ESRCH) is what was wanted; EPERM can
/// only mean a member changed its credentials, and there is nothing more to try.
fn kill_group(group: Pid) {
    let _ = killpg(group, Signal::SIGKILL);
}

/// Waits for the main process to end without reaping it, says so, and reaps it once the run is
/// over (or the runner is gone), so that its pid, the group's id, cannot be reused while the group
/// may still be signalled. It leaves the list of running backends as it is reaped, under the
/// list's lock, so a backend started later with the same pid is never struck off in its place.
fn wait_then_reap(mut child: Child, events: mpsc::Sender<Event>, reap_now: mpsc::Receiver<()>) {
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid fits in i32"));
    let status = loop {
        match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Err(Errno::EINTR) => continue,
            other => break other,
        }
    };
    let _ = events.send(Event::Exited(status));
    let _ = reap_now.recv();
    let mut running = running();
    if !matches!(child.try_wait(), Ok(Some(_))) {
        // Not reapable at once (it cannot happen after the wait above): wait without the lock.
        drop(running);
        let _ = child.wait();
        running = self::running();
    }
    running.remove(&pid.as_raw());
}

/// Kills and reaps every child of this process that is not a running backend, when this process
/// adopts leftovers ([`adopt_leftovers`]): those are what backends that have ended left running.
/// A leftover's own children come to this process when it dies, so it looks again until it finds
/// none; it gives up, saying how many it could not end, after [`LEFTOVER_GRACE`].
fn end_leftovers() -> Result<(), Leftovers> {
    if !ADOPTING.load(Ordering::SeqCst) {
        return Ok(());
    }
    // No backend starts, and none is struck off the list, while the hunt goes on.
    let running = running();
    let me = getpid().as_raw();
    let foreign = FOREIGN.get();
    let leftover = |pid: &i32| !running.contains(pid) && !foreign.is_some_and(|f| f.contains(pid));
    let deadline = Instant::now() + LEFTOVER_GRACE;
    let mut pause = Duration::from_millis(1);
    loop {
        let leftovers: Vec<i32> = children_of(me)
            .map_err(Leftovers::CannotLook)?
            .into_iter()
            .filter(leftover)
            .collect();
        if leftovers.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Leftovers::StillThere {
                count: leftovers.len(),
            });
        }
        let mut dying = 0;
        for pid in leftovers {
            let pid = Pid::from_raw(pid);
            // Also ends the other threads of a leader that is already a zombie.
            let _ = kill(pid, Signal::SIGKILL);
            if let Ok(WaitStatus::StillAlive) = waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                dying += 1;
            }
        }
        // A leftover that is reaped has handed its children to this process already: the next
        // look finds them. One still dying is looked at again after a pause.
        if dying > 0 {
            thread::sleep(pause);
            pause = (pause * 2).min(LEFTOVER_POLL);
        }
    }
}

/// The pids of the children of `parent`, from /proc. A process that ends while the folder is
/// read is left out; one that exists all through the reading is not.
fn children_of(parent: i32) -> io::Result<Vec<i32>> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let entry = entry?;
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if parent_in_stat(&stat) == Some(parent) {
            children.push(pid);
        }
    }
    Ok(children)
}

/// The parent pid in the text of /proc/PID/stat: `pid (comm) state ppid …`, where the command
/// name may hold spaces and parentheses, so the fields are counted from its last `)`.
fn parent_in_stat(stat: &str) -> Option<i32> {
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(1)?.parse().ok()
}

fn read_capped(mut pipe: impl Read, cap: usize) -> Captured {
    let mut captured = Captured {
        bytes: Vec::new(),
        total: 0,
        overflowed: false,
        error: None,
    };
    let mut chunk = vec![0; 64 * 1024];
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                captured.total += n as u64;
                if captured.bytes.len() + n > cap {
                    captured.overflowed = true;
                    break;
                }
                captured.bytes.extend_from_slice(&chunk[..n]);
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => {
                captured.error = Some(err);
                break;
            }
        }
    }
    captured
}

/// Reads a pipe to its end, keeping only the last `keep` bytes; says whether any were dropped.
fn read_tail(mut pipe: impl Read, keep: usize) -> (Vec<u8>, bool) {
    let mut tail = Vec::new();
    let mut cut = false;
    let mut chunk = vec![0; 16 * 1024];
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 2 * keep {
                    tail.drain(..tail.len() - keep);
                    cut = true;
                }
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if tail.len() > keep {
        tail.drain(..tail.len() - keep);
        cut = true;
    }
    (tail, cut)
}

/// The end of stderr as text for a reason: trimmed, with `…` when cut.
fn quote_tail((tail, cut): &(Vec<u8>, bool)) -> String {
    let text = String::from_utf8_lossy(tail);
    let text = text.trim();
    if *cut && !text.is_empty() {
        format!("…{text}")
    } else {
        text.to_owned()
    }
}

fn with_stderr(tail: &str) -> String {
    if tail.is_empty() {
        " (nothing on stderr)".to_owned()
    } else {
        format!("; stderr: {tail}")
    }
}

#[cfg(test)]
#[path = "backends_tests.rs"]
mod tests;
