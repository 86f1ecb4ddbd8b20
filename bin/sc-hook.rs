//! `sc-hook`: the gate as a Claude Code hook, for PreToolUse and PostToolUse. Every error exits
//! 2, the only status Claude Code treats as "do not run the tool".

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use skeleton_crew::cli::{self, AgentAuditArgs, GenerateArgs, PolicyArgs, StateArgs};
use skeleton_crew::exit::USAGE_ERROR;
use skeleton_crew::stage::hook::{self, HookOptions, SandboxDoor, DEFAULT_AGENT};
use skeleton_crew::store::{StateUrl, DEFAULT_STATE_FILE};

/// Decide a Claude Code tool call (PreToolUse), and record that it ran (PostToolUse).
///
/// Reads the hook's JSON on stdin; its `hook_event_name` says which event it is. PreToolUse:
/// a denied call gets `"permissionDecision":"deny"` on stdout, a held one `"ask"` (Claude Code
/// asks its user), and an allowed one no decision at all, so Claude Code's own permission rules
/// still apply. A Bash call the policy's `sandbox` key confines (and not denied) is answered
/// with `updatedInput`, the command run under sc-sandbox (installed beside sc-hook), and "ask"
/// ("allow" only in the bypassPermissions mode, or with the policy's sandbox.approveConfined);
/// its root is --root, else CLAUDE_PROJECT_DIR, else the git work tree, never a folder that
/// holds the home folder; where no sandbox can be made (tried once, a success remembered in the
/// state folder), it is held. With a state folder, the command is short, `sc-sandbox --run ID --
/// bash -c 'ORIGINAL'`: the invocation is prepared there (0600), runs once within 24 hours.
/// PostToolUse of an untrusted-output tool taints the session, seen before or not.
/// PostToolUse: the call ran, linked to its PreToolUse by `tool_use_id`; a held call
/// that ran is recorded as approved by its user (`"by":"claude-code"`), and every call that ran
/// gets an `exec` event. Taint and budgets persist in a state store (state.sqlite beside the
/// audit log, or --state): one state per session, or with --crew one for the crew across
/// sessions. The calls awaiting their PostToolUse (the last 1024 per session) are kept in the
/// same store, beside the session's state. Without --audit, the log and the store are in
/// $XDG_STATE_HOME/skeleton-crew/ (else ~/.local/state/skeleton-crew/), never in the working
/// folder Claude Code starts the hook in.
/// With a policy's `commands` and `paths` keys, a `Bash` command and a file tool's path are
/// judged too, in the `cwd` Claude Code gives (--home and --root place the paths), and writes
/// to the gate's own policy, audit log and state (and .claude/settings*.json under the
/// claude-code pack) are denied.
/// Exit status: 0 answered; 2 on any error (bad input, another hook event, policy, state or
/// audit log), which Claude Code treats as a block. Never 1: Claude Code runs the tool after
/// any other status.
#[derive(Parser)]
#[command(name = "sc-hook", version)]
struct Args {
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    audit: AgentAuditArgs,
    /// The agent name of Claude Code's main thread; a subagent is named by its agent type.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_AGENT)]
    agent: String,
    #[command(flatten)]
    state: StateArgs,
    /// Deprecated, accepted until the next release with a warning on stderr: the same as
    /// --state DIR/state.sqlite (use --state). sc-hook keeps no JSON files in DIR any more.
    #[arg(long, value_name = "DIR", conflicts_with = "state")]
    state_dir: Option<PathBuf>,
    #[command(flatten)]
    generate: GenerateArgs,
}

fn main() -> ExitCode {
    // A panic must block the call too: exit 2, not Rust's 101.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(io::stderr(), "sc-hook: internal error: {info}");
        std::process::exit(i32::from(USAGE_ERROR));
    }));
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(err) if !err.use_stderr() => {
            // --help and --version.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(USAGE_ERROR);
        }
    };
    if let Some(status) = cli::answer_generate::<Args>("sc-hook", &args.generate) {
        return status;
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(io::stderr(), "sc-hook: {err:#}; the tool call is blocked");
            ExitCode::from(USAGE_ERROR)
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let audit = args.audit.resolve()?;
    if let Some(dir) = &args.state_dir {
        // Still where the store is, so a hook installed with it keeps its sessions' taint and
        // spend; a warning, not an error, so the hook does not block every call.
        let _ = writeln!(
            io::stderr(),
            "sc-hook: warning: --state-dir is deprecated and will be removed in the next release; use --state {}",
            dir.join(DEFAULT_STATE_FILE).display()
        );
    }
    // With --state-dir, the store is in that folder, and is the gate's own as --state's is.
    let store_in_dir = args
        .state_dir
        .as_ref()
        .map(|dir| dir.join(DEFAULT_STATE_FILE));
    let own: Vec<(&std::path::Path, &str)> = store_in_dir
        .iter()
        .map(|path| (path.as_path(), "state store"))
        .collect();
    let state = match &args.state_dir {
        Some(dir) => StateUrl::Sqlite(dir.join(DEFAULT_STATE_FILE)),
        None => args.state.url_or_beside(&audit.audit),
    };
    let options = HookOptions {
        policy: args.policy.load_guarding(&audit, &args.state, &own)?,
        agent: args.agent,
        sandbox: SandboxDoor {
            policy: args.policy.policy.clone(),
            audit: Some(audit.audit.clone()),
            audit_key: audit.audit_key.clone(),
            state: match &state {
                StateUrl::Sqlite(file) => Some(file.clone()),
                StateUrl::Redis(_) => None,
            },
            exe: None,
            project: std::env::var_os("CLAUDE_PROJECT_DIR").map(PathBuf::from),
            probe_cache: cli::default_state_folder().ok(),
            prepared: cli::default_state_folder().ok(),
        },
        state,
        crew: args.state.crew.clone(),
        timing: args.state.timing(),
        fsync: audit.fsync,
    };
    let input = hook::read_input(io::stdin().lock())?;
    let mut audit = audit.open()?;
    hook::run(&input, &options, &mut audit, &mut io::stdout().lock())?;
    Ok(())
}
