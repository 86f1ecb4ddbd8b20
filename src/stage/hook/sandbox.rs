//! Confining a `Bash` call: when the policy's `sandbox.when` applies to the session (`always`, or
//! `tainted` and the agent, or the crew under `taintScope: "crew"`, is tainted in the state the
//! decision read), a call that is not denied is answered with `updatedInput`: the same tool input
//! with `command` replaced by a shell command that runs the original text, byte for byte, with
//! `bash -c` under sc-sandbox ([`Invocation::shell_command`]), with the hook's policy file, root
//! (the call's `cwd`, or `--root`), home, audit log and key, state store and session.
//!
//! Where the machine cannot give a sandbox (no bubblewrap, no sc-sandbox beside sc-hook, a
//! `sandbox` key that cannot be placed here, no `cwd`), the call is never run unconfined: it is
//! held, with a reason naming what is missing.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::input::HookInput;
use super::HookOptions;
use crate::stage::sandbox::run::{own_files, RunOptions};
use crate::stage::sandbox::{bwrap, Invocation, Sandbox};
use crate::store::StateUrl;

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
}

/// What to do with one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Confinement {
    /// Not confined: not `Bash`, or the sandbox does not apply to this session.
    Unconfined,
    /// Confined: the tool input to answer with, and the original command.
    Confined {
        updated_input: Map<String, Value>,
        original: String,
    },
    /// It should be confined, and cannot be: why.
    Impossible(String),
}

/// Whether the call runs confined, and how. `tainted`: whether the agent (or the crew, under
/// `taintScope: "crew"`) was tainted in the state the decision read. `id`: the gate event's id,
/// which sc-sandbox's events carry.
pub(super) fn confine(
    hook: &HookInput,
    agent: &str,
    tainted: bool,
    options: &HookOptions,
    id: &str,
) -> Confinement {
    if hook.tool_name != "Bash" {
        return Confinement::Unconfined;
    }
    let Some(rules) = options.policy.sandbox() else {
        return Confinement::Unconfined;
    };
    if !rules.when.applies(tainted) {
        return Confinement::Unconfined;
    }
    let Some(Value::String(original)) = hook.tool_input.get("command") else {
        return Confinement::Impossible(
            "the sandbox cannot be made: the Bash call has no command text".to_owned(),
        );
    };
    match invocation(hook, agent, options, id) {
        Ok(invocation) => {
            let mut updated_input = hook.tool_input.clone();
            updated_input.insert(
                "command".to_owned(),
                Value::String(invocation.shell_command(original)),
            );
            Confinement::Confined {
                updated_input,
                original: original.clone(),
            }
        }
        Err(why) => Confinement::Impossible(format!(
            "the policy confines this call, and the sandbox cannot be made here, so it is not run unconfined: {why}"
        )),
    }
}

/// sc-sandbox's command line for the call, once everything it needs is known to be there.
fn invocation(
    hook: &HookInput,
    agent: &str,
    options: &HookOptions,
    id: &str,
) -> Result<Invocation, String> {
    let places = options.policy.places();
    let root = match (&places.root, &hook.cwd) {
        (Some(root), _) => root.clone(),
        (None, Some(cwd)) if Path::new(cwd).is_absolute() => PathBuf::from(cwd),
        (None, _) => {
            return Err("the call has no absolute cwd to root the sandbox in (give --root)".into())
        }
    };
    let home = places.home.clone();
    bwrap::locate().map_err(|err| err.to_string())?;
    let door = absolute_door(&options.sandbox);
    let door = &door;
    let exe = match &door.exe {
        Some(exe) => exe.clone(),
        None => Invocation::beside_current_exe()
            .map_err(|err| format!("cannot find sc-hook's own binary: {err}"))?,
    };
    if !is_executable(&exe) {
        return Err(format!(
            "sc-sandbox is missing: {} is not an executable file (install sc-sandbox beside sc-hook)",
            exe.display()
        ));
    }
    let run = RunOptions {
        policy: door.policy.clone(),
        root: Some(root.clone()),
        home: home.clone(),
        audit: door.audit.clone(),
        audit_key: door.audit_key.clone(),
        state: door.state.clone().map(StateUrl::Sqlite),
        ..RunOptions::default()
    };
    Sandbox::from_policy(&options.policy, &root, home.as_deref(), &own_files(&run))
        .map_err(|err| err.to_string())?;
    Ok(Invocation {
        exe,
        policy: door.policy.clone(),
        root: Some(root),
        home,
        audit: door.audit.clone(),
        audit_key: door.audit_key.clone(),
        state: door.state.as_ref().map(|file| file.display().to_string()),
        protect: Vec::new(),
        agent: Some(agent.to_owned()),
        crew: options.crew.clone(),
        session: Some(hook.session_id.clone()),
        id: Some(id.to_owned()),
    })
}

/// The door's paths made absolute against sc-hook's working folder: sc-sandbox runs in the
/// call's.
fn absolute_door(door: &SandboxDoor) -> SandboxDoor {
    let absolute = |path: &Option<PathBuf>| {
        path.as_deref()
            .map(|path| std::path::absolute(path).unwrap_or_else(|_| path.to_owned()))
    };
    SandboxDoor {
        policy: absolute(&door.policy),
        audit: absolute(&door.audit),
        audit_key: absolute(&door.audit_key),
        state: absolute(&door.state),
        exe: door.exe.clone(),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}
