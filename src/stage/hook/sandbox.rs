//! Confining a `Bash` call: when the policy's `sandbox.when` applies to the session (`always`, or
//! `tainted` and the agent, or the crew under `taintScope: "crew"`, is tainted in the state the
//! decision read), a call that is not denied is answered with `updatedInput`: the same tool input
//! with `command` replaced by a shell command that runs the original text, byte for byte, with
//! `bash -c` under sc-sandbox ([`Invocation::shell_command`]), with the hook's policy file, root
//! (`--root`, else the git work tree that holds the call's `cwd`, else the `cwd`:
//! [`project_root`]), home, audit log and key, state store and session. A call whose own output
//! taints the session (an `untrustedOutputTools` tool) is confined as a tainted one.
//!
//! Whether the sandbox can be made is found before the decision ([`prepare`]): the decision
//! then knows whether the call runs confined, and a rule's `whenConfined` decides it.
//!
//! Where the machine cannot give a sandbox (no bubblewrap, no sc-sandbox beside sc-hook, a kernel
//! that refuses the namespaces, a `sandbox` key that cannot be placed here, no `cwd`), the call is
//! never run unconfined: it is held, with a reason naming what is missing and saying that
//! approving it runs it unconfined. The checks and their words are those of sc-exec and sc-mcp:
//! the one door, [`crate::stage::sandbox::door`].

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::input::HookInput;
use super::HookOptions;
use crate::stage::sandbox::door::{Call, Check};
use crate::stage::sandbox::{bwrap, prepared, Invocation};

/// The gate's own files, as sc-hook was given them, for sc-sandbox's command line.
#[derive(Debug, Clone, Default)]
pub struct SandboxDoor {
    /// `--policy`; `None`: the built-in defaults.
    pub policy: Option<PathBuf>,
    /// The audit log sc-hook appends to.
    pub audit: Option<PathBuf>,
    /// `--audit-key`.
    pub audit_key: Option<PathBuf>,
    /// The state store, when it is a SQLite file (a Redis URL is not passed on: it may hold a
    /// password, and the command is shown to the model and the user).
    pub state: Option<PathBuf>,
    /// The sc-sandbox binary; `None`: beside the running binary.
    pub exe: Option<PathBuf>,
    /// The project folder Claude Code gives its hooks (`CLAUDE_PROJECT_DIR`, the folder it was
    /// started in): the sandbox's root when `--root` is not given, wherever the call's `cwd` is.
    pub project: Option<PathBuf>,
    /// The state folder, where a successful trial of the sandbox is remembered
    /// ([`crate::stage::sandbox::probe`]); `None`: tried on every confined call.
    pub probe_cache: Option<PathBuf>,
    /// The state folder, where confined calls' invocations are prepared
    /// ([`crate::stage::sandbox::prepared`]) for a short command; `None`: the whole sc-sandbox
    /// command line is the command.
    pub prepared: Option<PathBuf>,
    /// The agent whose contract the call came by, when it cannot run a rewritten command (Codex
    /// CLI, Copilot CLI, Cursor): a call the policy would confine is decided unconfined, and
    /// held, with a reason naming it; `None`: the agent takes a rewrite.
    pub cannot_rewrite: Option<&'static str>,
}

/// What to do with one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Confinement {
    /// Not confined: not `Bash`, or the sandbox does not apply to this session.
    Unconfined,
    /// Confined: sc-sandbox's command line, and the original command.
    Confined(Box<Confined>),
    /// It should be confined, and cannot be: why.
    Impossible(String),
}

/// Whether the policy's sandbox applies to a call of `tool` in a session that is (or is not)
/// tainted: `sandbox.when` holds, and a call whose own output taints the session (an
/// `untrustedOutputTools` tool) counts as tainted, since its output reaches the agent once it
/// ran.
pub(super) fn applies(options: &HookOptions, tool: &str, tainted: bool) -> bool {
    options.policy.sandbox().is_some_and(|rules| {
        rules
            .when
            .applies(tainted || options.policy.has_untrusted_output(tool))
    })
}

/// How a `Bash` call would run confined, made before the decision (it reads the machine, not
/// the state): `None` when the call is not `Bash` or the policy never confines; else the
/// confined input, or why no sandbox can be made. `id`: the gate event's id, which
/// sc-sandbox's events carry.
pub(super) fn prepare(
    hook: &HookInput,
    agent: &str,
    options: &HookOptions,
    id: &str,
) -> Option<Result<Confined, crate::stage::sandbox::Unconfinable>> {
    if hook.tool_name != "Bash" {
        return None;
    }
    let rules = options.policy.sandbox()?;
    if rules.when == crate::rules::sandbox::When::Never {
        return None;
    }
    if let Some(agent) = options.sandbox.cannot_rewrite {
        return Some(Err(format!(
            "the policy runs this command only confined by sc-sandbox, and {agent} cannot run a rewritten command, so a person decides"
        )
        .into()));
    }
    let Some(Value::String(original)) = hook.tool_input.get("command") else {
        return Some(Err(
            "the sandbox cannot be made: the Bash call has no command text"
                .to_owned()
                .into(),
        ));
    };
    Some(
        invocation(hook, agent, options, id)
            .map(|invocation| Confined {
                invocation,
                original: original.clone(),
            })
            .map_err(|why| format!("the sandbox cannot be made here: {why}").into()),
    )
}

/// A `Bash` call to run under sc-sandbox: its command line, and the original command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Confined {
    pub invocation: Invocation,
    pub original: String,
}

/// The tool input to answer a confined call with: the call's input with `command` replaced.
/// With a state folder (`door.prepared`), the invocation is prepared there and the command is
/// short, `SC-SANDBOX --run ID -- bash -c 'ORIGINAL'` ([`prepared`]); without one, or when it
/// cannot be written there, the whole sc-sandbox command line, with the reason why in the
/// second value. Either runs the original, byte for byte, confined.
pub(super) fn confined_input(
    tool_input: &Map<String, Value>,
    confined: &Confined,
    door: &SandboxDoor,
) -> (Map<String, Value>, Option<String>) {
    let original = &confined.original;
    let (command, note) = match &door.prepared {
        None => (confined.invocation.shell_command(original), None),
        Some(state) => match prepared::prepare(
            &prepared::folder_in(state),
            &confined.invocation,
            original,
            std::time::SystemTime::now(),
        ) {
            Ok(id) => (
                prepared::shell_command(&confined.invocation.exe, &id, original),
                None,
            ),
            Err(err) => (
                confined.invocation.shell_command(original),
                Some(format!(
                    "the short command could not be prepared ({err}), so the whole sc-sandbox command line is given"
                )),
            ),
        },
    };
    let mut updated_input = tool_input.clone();
    updated_input.insert("command".to_owned(), Value::String(command));
    (updated_input, note)
}

/// Whether the call runs confined, and how, once the decision is known: `prepared` from
/// [`prepare`], `applies` from [`applies`] on the state the decision read.
pub(super) fn confine(
    prepared: Option<Result<Confined, crate::stage::sandbox::Unconfinable>>,
    applies: bool,
    denied: bool,
) -> Confinement {
    match prepared {
        _ if denied || !applies => Confinement::Unconfined,
        None => Confinement::Unconfined,
        Some(Ok(confined)) => Confinement::Confined(Box::new(confined)),
        Some(Err(why)) => Confinement::Impossible(format!(
            "the policy confines this call, and {why}, so it is not run unconfined: approving it runs the command unconfined, outside the sandbox"
        )),
    }
}

/// The folder the sandbox is rooted at, and the file tools' sandbox places are placed at:
/// `--root` if given, else the project folder Claude Code names (`CLAUDE_PROJECT_DIR`), else the
/// top of the git work tree that holds `cwd` (the nearest folder with a `.git`, walking up),
/// else `cwd`. A call made in a sub-folder of the project is confined to the project, with the
/// project's `.claude` and `.git/hooks` read-only, not its sub-folder's. A git work tree at the
/// home folder or above it (a home kept in git) is not taken: that would make the whole home
/// writable; `cwd` is the root then.
pub(super) fn project_root(options: &HookOptions, cwd: Option<&str>) -> Option<PathBuf> {
    let places = options.policy.places();
    if let Some(root) = &places.root {
        return Some(root.clone());
    }
    if let Some(project) = options.sandbox.project.as_deref() {
        if project.is_absolute() {
            return Some(crate::rules::paths::normalized(project));
        }
    }
    let cwd = Path::new(cwd?);
    if !cwd.is_absolute() {
        return None;
    }
    let cwd = crate::rules::paths::normalized(cwd);
    let homes = homes(places.home.as_deref());
    let top = cwd
        .ancestors()
        .find(|folder| folder.join(".git").symlink_metadata().is_ok())
        .filter(|top| !holds_a_home(top, &homes))
        .unwrap_or(&cwd);
    Some(top.to_path_buf())
}

/// The home folders a root must not hold: the one the paths are placed with (`--home`, else
/// `$HOME`), `$HOME` itself and the user's home in the password database (when `HOME` is unset),
/// each as written and where its links lead (`/home` may be a link to `/var/home`, while the
/// call's `cwd` is the real path).
fn homes(home: Option<&Path>) -> Vec<PathBuf> {
    let env_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute());
    let passwd_home = crate::cli::passwd_home();
    let mut homes = Vec::new();
    for home in home
        .map(Path::to_path_buf)
        .into_iter()
        .chain(env_home)
        .chain(passwd_home)
    {
        homes.push(crate::rules::paths::normalized(&home));
        if let Ok(real) = std::fs::canonicalize(&home) {
            homes.push(real);
        }
    }
    homes
}

/// Whether `root` (as written, and where its links lead) is one of `homes` or above one.
fn holds_a_home(root: &Path, homes: &[PathBuf]) -> bool {
    let mut roots = vec![crate::rules::paths::normalized(root)];
    if let Ok(real) = std::fs::canonicalize(root) {
        roots.push(real);
    }
    roots
        .iter()
        .any(|root| homes.iter().any(|home| home.starts_with(root)))
}

/// sc-sandbox's command line for the call, once everything it needs is known to be there: the
/// root is sc-hook's to find (the project, never one that holds the home); the rest is the one
/// door every door confines with ([`crate::stage::sandbox::door`]), the kernel tried once and the
/// success remembered in the state folder.
fn invocation(
    hook: &HookInput,
    agent: &str,
    options: &HookOptions,
    id: &str,
) -> Result<Invocation, crate::stage::sandbox::Unconfinable> {
    let places = options.policy.places();
    let Some(root) = project_root(options, hook.cwd.as_deref()) else {
        return Err("the call has no absolute cwd to root the sandbox in (give --root)".into());
    };
    let homes = homes(places.home.as_deref());
    if holds_a_home(&root, &homes) {
        return Err(format!(
            "its root would be {}, which holds the home folder ({}), and the whole home would be writable (shell profiles, ~/.gitconfig, ~/.claude.json); start Claude Code in a project folder, or give sc-hook --root",
            root.display(),
            homes
                .iter()
                .map(|home| home.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ).into());
    }
    let door = &options.sandbox;
    let confined = crate::stage::sandbox::door::SandboxDoor {
        door: "sc-hook",
        policy: door.policy.clone(),
        audit: door.audit.clone(),
        audit_key: door.audit_key.clone(),
        state: door.state.clone(),
        crew: options.crew.clone(),
        exe: door.exe.clone(),
    }
    .confine_call(
        &options.policy,
        Call {
            root: &root,
            agent,
            session: Some(&hook.session_id),
            id: Some(id),
            check: Check::Probe {
                cache: door.probe_cache.as_deref(),
            },
        },
    )?;
    Ok(confined.invocation)
}

/// The files a confined run keeps read-only that are not in the policy: the sc-sandbox binary
/// beside sc-hook with the other binaries beside it and bubblewrap
/// ([`crate::stage::sandbox::machinery::files`]), and sc-hook's state folder, where prepared
/// invocations and the sandbox's trial cache are kept. sc-hook protects them from the file tools
/// as the gate's own files, so that a file tool can change only what a confined command could.
///
/// `inside`: the folders a file tool's write counts as inside (the project, the call's `cwd`,
/// `--root`), when the input names them. The other names of a hard-linked binary (a cargo
/// target folder's `deps/`) are then looked for only where one of them and the binaries'
/// folder overlap: a write outside them is asked already (`outsideRoot`), and reading `deps/`
/// at every call cost more than the rest of the list. `None`: looked for everywhere.
///
/// An error when sc-hook cannot find its own binary (`/proc` not mounted): its files could not
/// be protected, so the call is refused rather than judged without them.
pub fn guarded_machinery(inside: Option<&[PathBuf]>) -> std::io::Result<Vec<(PathBuf, String)>> {
    let mut files = Vec::new();
    {
        let helper = Invocation::beside_current_exe()?;
        let bwrap = bwrap::locate().unwrap_or_default();
        let writable: Option<Vec<PathBuf>> = inside.map(|inside| {
            inside
                .iter()
                .map(|place| std::fs::canonicalize(place).unwrap_or_else(|_| place.clone()))
                .collect()
        });
        files.extend(crate::stage::sandbox::machinery::files_within(
            &helper,
            &bwrap,
            writable.as_deref(),
        ));
    }
    if let Ok(folder) = crate::cli::default_state_folder() {
        files.push((folder, "state folder".to_owned()));
    }
    Ok(files)
}
