//! `sc-hook doctor`: one line for each thing the hook needs, with the fix when it does not
//! hold. Each probe runs on its own thread and is given 500 ms: one that has not answered by
//! then fails, saying so.

pub use super::check::Check;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use super::entries::{command_key, is_ours};
use super::file::read;
use super::target::{config_file, Scope};
use crate::cli::{default_state_folder, PolicyArgs};
use crate::stage::hook::contract::Agent;
use crate::stage::sandbox::{bwrap, probe};

/// How long each probe may take.
pub const PROBE_DEADLINE: Duration = Duration::from_millis(500);

/// What `sc-hook doctor` checks.
#[derive(Debug, Clone)]
pub struct DoctorRequest {
    pub agent: Agent,
    pub project: Option<PathBuf>,
    /// The user's home (for the agent's user file).
    pub home: Option<PathBuf>,
    /// `--policy`, else the one the installed hook names.
    pub policy: Option<PathBuf>,
    /// The sc-hook binary running (sc-sandbox is beside it).
    pub exe: PathBuf,
}

/// Runs every check; each within [`PROBE_DEADLINE`].
pub fn doctor(request: &DoctorRequest) -> Vec<Check> {
    let (wired, installed_policy) = within("the hook", {
        let request = request.clone();
        move || wired(&request)
    })
    .unwrap_or_else(|timeout| (timeout, None));
    let policy = request.policy.clone().or(installed_policy);
    let root = request
        .project
        .clone()
        .or_else(|| std::env::current_dir().ok());
    let exe = request.exe.clone();
    let mut checks = vec![wired];
    if let (Agent::Codex, Some(project)) = (request.agent, request.project.clone()) {
        let home = request.home.clone();
        checks.push(checked("Codex's trust", move || {
            super::codex_trust::project_trusted(&project, home.as_deref())
        }));
    }
    checks.extend([
        checked("the policy", move || policy_loads(policy)),
        checked("the state folder", state_folder),
        checked("bubblewrap", bubblewrap),
        checked("user namespaces", user_namespaces),
        checked("the binaries", move || outside_root(&exe, root.as_deref())),
    ]);
    checks
}

/// Runs `probe` on its own thread, waiting [`PROBE_DEADLINE`] for it.
fn within<T: Send + 'static>(
    what: &str,
    probe: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Check> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(probe());
    });
    receive.recv_timeout(PROBE_DEADLINE).map_err(|_| {
        Check::fail(
            format!("{what}: the check did not answer within 500 ms"),
            "run sc-hook doctor again; if it persists, find what hangs (a network file system, a slow disk)",
        )
    })
}

fn checked(what: &str, probe: impl FnOnce() -> Check + Send + 'static) -> Check {
    within(what, probe).unwrap_or_else(|timeout| timeout)
}

/// Whether the agent's file (the project's, else the user's) runs sc-hook, and that sc-hook
/// runs; with the policy the hook names.
fn wired(request: &DoctorRequest) -> (Check, Option<PathBuf>) {
    let agent = request.agent;
    let mut scopes = Vec::new();
    if let Some(project) = &request.project {
        scopes.push(Scope::Project(project.clone()));
    }
    if let Some(home) = &request.home {
        scopes.push(Scope::User(home.clone()));
    }
    let install = format!(
        "sc-hook install --for {agent} {}",
        match &request.project {
            Some(dir) => format!("--project {}", dir.display()),
            None => "--user".to_owned(),
        }
    );
    for scope in scopes {
        let Ok(file) = config_file(agent, &scope) else {
            continue;
        };
        let Ok(Some(text)) = read(&file) else {
            continue;
        };
        let Some(command) = find_command(agent, &text) else {
            continue;
        };
        let words: Vec<&str> = command.split_whitespace().collect();
        let program = words
            .first()
            .map(|w| w.trim_matches('\''))
            .unwrap_or_default();
        let policy = words
            .windows(2)
            .find(|pair| pair[0] == "--policy")
            .map(|pair| PathBuf::from(pair[1].trim_matches('\'')));
        let ran = probe::trial_run(
            Command::new(program).arg("--version"),
            Duration::from_millis(450),
        );
        let check = match ran {
            Ok(trial) if trial.status.success() => Check::pass(format!(
                "the hook: {} runs {program} for {}",
                file.display(),
                agent.title()
            )),
            Ok(trial) => Check::fail(
                format!(
                    "the hook: {} names {program}, which fails ({})",
                    file.display(),
                    trial.status
                ),
                format!("reinstall sc-hook, then {install} --force"),
            ),
            Err(why) => Check::fail(
                format!("the hook: {} names {program}, which {why}", file.display()),
                format!("reinstall sc-hook, then {install} --force"),
            ),
        };
        return (check, policy);
    }
    (
        Check::fail(
            format!("the hook: {} does not run sc-hook", agent.title()),
            install,
        ),
        None,
    )
}

/// sc-hook's command in the agent's file, read as text (JSON or TOML): the first
/// `command`/`bash` string that is sc-hook's for this agent.
fn find_command(agent: Agent, text: &str) -> Option<String> {
    let key = command_key(agent);
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            match value {
                serde_json::Value::Object(map) => {
                    if let Some(serde_json::Value::String(command)) = map.get(key) {
                        if is_ours(agent, command) {
                            return Some(command.clone());
                        }
                    }
                    stack.extend(map.into_iter().map(|(_, v)| v));
                }
                serde_json::Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
        return None;
    }
    let document = text.parse::<toml_edit::DocumentMut>().ok()?;
    let groups = document.get("hooks")?.as_table()?;
    let found = groups.iter().find_map(|(_, groups)| {
        groups.as_array_of_tables()?.iter().find_map(|group| {
            group
                .get("hooks")?
                .as_array_of_tables()?
                .iter()
                .find_map(|handler| {
                    let command = handler.get("command")?.as_str()?;
                    is_ours(agent, command).then(|| command.to_owned())
                })
        })
    });
    found
}

fn policy_loads(policy: Option<PathBuf>) -> Check {
    let args = PolicyArgs {
        policy: policy.clone(),
        home: None,
        root: None,
    };
    match (args.load(), policy) {
        (Ok(_), Some(file)) => Check::pass(format!("the policy: {} loads", file.display())),
        (Ok(_), None) => Check::fail(
            "the policy: none is named, so sc-hook decides with the built-in defaults",
            "install again with --policy …/policies/claude-code.json",
        ),
        (Err(err), _) => Check::fail(
            format!("the policy: {err}"),
            "correct the policy file where the error says",
        ),
    }
}

fn state_folder() -> Check {
    let folder = match default_state_folder() {
        Ok(folder) => folder,
        Err(err) => {
            return Check::fail(
                format!("the state folder: {err}"),
                "set HOME or XDG_STATE_HOME",
            )
        }
    };
    if !folder.exists() {
        if let Err(err) = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&folder)
        {
            return Check::fail(
                format!(
                    "the state folder {} cannot be created: {err}",
                    folder.display()
                ),
                "create it, mode 0700",
            );
        }
    }
    let mode = match std::fs::metadata(&folder) {
        Ok(meta) => meta.permissions().mode() & 0o777,
        Err(err) => {
            return Check::fail(
                format!("the state folder {}: {err}", folder.display()),
                "create it, mode 0700",
            )
        }
    };
    if mode != 0o700 {
        return Check::fail(
            format!(
                "the state folder {} has mode {mode:04o}, not 0700",
                folder.display()
            ),
            format!("chmod 700 {}", folder.display()),
        );
    }
    let trial = folder.join(format!(".doctor-{}", std::process::id()));
    match std::fs::write(&trial, b"") {
        Ok(()) => {
            let _ = std::fs::remove_file(&trial);
            Check::pass(format!(
                "the state folder: {} is writable and 0700",
                folder.display()
            ))
        }
        Err(err) => Check::fail(
            format!(
                "the state folder {} is not writable: {err}",
                folder.display()
            ),
            format!("make {} yours and writable (chmod 700)", folder.display()),
        ),
    }
}

fn bubblewrap() -> Check {
    match bwrap::locate() {
        Ok(path) => Check::pass(format!(
            "bubblewrap: {} is there and trusted",
            path.display()
        )),
        Err(err) => Check::fail(
            format!("bubblewrap: {err}"),
            "install bubblewrap from the system's packages (it must be root's, in /usr/bin)",
        ),
    }
}

fn user_namespaces() -> Check {
    let read = |file: &str| {
        std::fs::read_to_string(file)
            .ok()
            .map(|t| t.trim().to_owned())
    };
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Check::fail(
            "user namespaces: Ubuntu's AppArmor restrict_unprivileged_userns is on, so bubblewrap cannot make its namespaces",
            "sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0 (or give bwrap an AppArmor profile that allows userns)",
        );
    }
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Check::fail(
            "user namespaces: user.max_user_namespaces is 0",
            "sudo sysctl user.max_user_namespaces=15000",
        );
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Check::fail(
            "user namespaces: kernel.unprivileged_userns_clone is 0",
            "sudo sysctl kernel.unprivileged_userns_clone=1",
        );
    }
    let Ok(bwrap) = bwrap::locate() else {
        return Check::fail(
            "user namespaces: not tried, there is no trusted bubblewrap",
            "install bubblewrap first",
        );
    };
    let trial = probe::trial_run(
        Command::new(&bwrap).args(["--unshare-user", "--ro-bind", "/", "/", "--", "true"]),
        Duration::from_millis(450),
    );
    match trial {
        Ok(trial) if trial.status.success() => Check::pass("user namespaces: bubblewrap made one"),
        Ok(trial) => Check::fail(
            format!(
                "user namespaces: bubblewrap could not make one: {}",
                trial.stderr.trim()
            ),
            "allow unprivileged user namespaces (a container needs them passed in)",
        ),
        Err(why) => Check::fail(
            format!("user namespaces: bubblewrap {why}"),
            "allow unprivileged user namespaces",
        ),
    }
}

/// The binaries a hook runs must be out of the root a confined command can write: else a
/// confined command could replace the gate.
fn outside_root(exe: &Path, root: Option<&Path>) -> Check {
    let Some(root) = root.and_then(|root| root.canonicalize().ok()) else {
        return Check::fail(
            "the binaries: no project root to compare with",
            "run doctor with --project DIR",
        );
    };
    let sandbox = exe.with_file_name("sc-sandbox");
    for binary in [exe, sandbox.as_path()] {
        let real = binary.canonicalize().unwrap_or_else(|_| binary.to_owned());
        if real.starts_with(&root) {
            return Check::fail(
                format!(
                    "the binaries: {} is inside {}, which a confined command can write",
                    real.display(),
                    root.display()
                ),
                "install them elsewhere (cargo install --locked --path .), then install the hook again",
            );
        }
    }
    Check::pass(format!(
        "the binaries: {} and sc-sandbox are outside {}",
        exe.display(),
        root.display()
    ))
}
