//! `sc-hook`: the gate as a Claude Code hook, for PreToolUse and PostToolUse. Every error exits
//! 2, the only status Claude Code treats as "do not run the tool".

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use skeleton_crew::cli::{self, AgentAuditArgs, GenerateArgs, PolicyArgs, StateArgs};
use skeleton_crew::exit::USAGE_ERROR;
use skeleton_crew::stage::hook::contract::{answer, detect, Agent, ContractError, Translated};
use skeleton_crew::stage::hook::install::{self, InstallRequest, Outcome, Scope};
use skeleton_crew::stage::hook::{self, Handled, HookOptions, SandboxDoor};
use skeleton_crew::store::{StateUrl, DEFAULT_STATE_FILE};

use crate::deadline;

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
/// audit log), which Claude Code treats as a block, and once the audit log is open the refusal
/// is in it (a `deny`, or for a PostToolUse an `exec` event whose run is `unrecorded`). Never
/// 1: Claude Code runs the tool after any other status. A call not decided within --timeout
/// seconds (25) is refused the same way, before the agent stops waiting for its hook and runs
/// the call; so is a crash, and a stop by SIGTERM, SIGINT, SIGHUP or another signal that would
/// end it (none of these refusals is in the audit log).
///
/// `--for codex|gemini|copilot|cursor` speaks that agent's hook contract instead (without it,
/// the input's shape decides): its events and fields in, its way to deny, ask and allow out.
/// Where it cannot ask, a held call is refused; where it cannot run a rewritten command, a call
/// the sandbox would confine is asked or refused, never run unconfined. An input no contract
/// reads is refused as the agent's contract blocks (Copilot CLI and Cursor: a deny answer,
/// status 0; the others: status 2). `sc-hook install --for NAME` writes the hook into that
/// agent's own configuration; `sc-hook doctor` checks it.
#[derive(Parser)]
#[command(name = "sc-hook", version, args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Action>,
    /// The agent whose hook contract the input follows: claude, codex, gemini, copilot or
    /// cursor (default: told by the input's shape).
    #[arg(long = "for", value_name = "NAME", value_parser = parse_agent)]
    for_agent: Option<Agent>,
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    audit: AgentAuditArgs,
    /// The agent name of the main thread (default: claude-code, codex, gemini, copilot or
    /// cursor, by the contract); a subagent is named by its agent type.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    #[command(flatten)]
    state: StateArgs,
    /// Deprecated, accepted until the next release with a warning on stderr: the same as
    /// --state DIR/state.sqlite (use --state). sc-hook keeps no JSON files in DIR any more.
    #[arg(long, value_name = "DIR", conflicts_with = "state")]
    state_dir: Option<PathBuf>,
    /// Refuse the call (as the agent's contract blocks one) when it is not decided within
    /// SECONDS: an agent that stops waiting for its hook runs the call as if there were none.
    /// Keep it below the agent's hook timeout (`sc-hook install` gives each agent 30 s).
    #[arg(long, value_name = "SECONDS", default_value_t = 25,
          value_parser = clap::value_parser!(u32).range(1..=3600))]
    timeout: u32,
    #[command(flatten)]
    generate: GenerateArgs,
}

fn parse_agent(text: &str) -> Result<Agent, String> {
    text.parse::<Agent>().map_err(|err| err.to_string())
}

#[derive(Subcommand)]
enum Action {
    /// Write the hook into an agent's own configuration file (merged with what is there, a
    /// backup beside it once; a second run changes nothing).
    Install(InstallArgs),
    /// Remove what install wrote, and nothing else.
    Uninstall(ScopeArgs),
    /// Check the hook (for Codex with --project, that Codex trusts the project too), the policy,
    /// the state folder, bubblewrap, user namespaces and where the binaries are; one line each
    /// with the fix. Exit 0 when all hold, 1 otherwise.
    Doctor(DoctorArgs),
}

#[derive(clap::Args)]
struct ScopeArgs {
    /// The agent: claude, codex, gemini, copilot or cursor.
    #[arg(long = "for", value_name = "NAME", value_parser = parse_agent)]
    for_agent: Agent,
    /// The project's configuration file (DIR/.claude/settings.json, …).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "user",
        required_unless_present = "user"
    )]
    project: Option<PathBuf>,
    /// The user's configuration file (~/.claude/settings.json, …).
    #[arg(long)]
    user: bool,
}

#[derive(clap::Args)]
struct InstallArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// The policy the hook decides with (written into the hook's command, absolute).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The audit log the hook appends to.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Replace an sc-hook entry for this agent that differs.
    #[arg(long)]
    force: bool,
}

#[derive(clap::Args)]
struct DoctorArgs {
    /// The agent whose hook to check (default: claude).
    #[arg(long = "for", value_name = "NAME", value_parser = parse_agent)]
    for_agent: Option<Agent>,
    /// The project the agent runs in.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// The policy to check (default: the one the installed hook names).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

pub fn main() -> ExitCode {
    // A stop before the deadline's handlers are set waits for them: held from the start of the
    // program's `main` (`deadline::hold_stops`), released for what answers no call.
    // One call and out: nothing allocated from here on is ever freed (`arena`).
    crate::arena::never_free();
    // SQLite's memory from the same region, before SQLite is first used.
    crate::sqlite_memory::use_the_arena();
    deadline::clear_inherited_timers();
    // A panic must block the call too: the agent's refusal (a crash's, once the deadline has
    // made it; exit 2 before), not Rust's 101. The shell parser's own panic is caught where it
    // is called, and the command read as dynamic: it unwinds there.
    std::panic::set_hook(Box::new(|info| {
        if skeleton_crew::rules::shell::catching_a_parser_panic() {
            return;
        }
        let _ = writeln!(io::stderr(), "sc-hook: internal error: {info}");
        deadline::crash();
    }));
    let parsed = Args::try_parse();
    if !matches!(&parsed, Ok(args) if args.command.is_none() && args.generate.generate.is_none()) {
        // --help, --version, a usage error, --generate, install, uninstall, doctor.
        deadline::release_stops();
    }
    let mut args = match parsed {
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
    match args.command.take() {
        Some(Action::Install(install)) => return run_install(&install),
        Some(Action::Uninstall(scope)) => return run_uninstall(&scope),
        Some(Action::Doctor(doctor)) => return run_doctor(&doctor),
        None => {}
    }
    // From here on a call that is not decided in time is refused (`deadline`).
    if let Err(err) = deadline::arm(args.timeout, args.for_agent.unwrap_or(Agent::Claude)) {
        let err = anyhow::Error::new(err).context("cannot set sc-hook's deadline");
        return refuse(args.for_agent.unwrap_or(Agent::Claude), None, &err);
    }
    // The input is read first, for its contract says how an error is refused; the policy and
    // the stores are opened before an input error is reported, as they always were.
    let (raw, translated) = match hook::read_input(io::stdin().lock()) {
        Ok(input) => {
            let translated = detect::translate(args.for_agent, &input).map_err(Into::into);
            (Some(input), translated)
        }
        Err(err) => (None, Err(err)),
    };
    let (agent, event) = match &translated {
        Ok(translated) => (translated.agent, Some(translated.event)),
        Err(err) => (
            err.downcast_ref::<ContractError>()
                .map(|err| err.agent)
                .or(args.for_agent)
                .unwrap_or(Agent::Claude),
            None,
        ),
    };
    deadline::refuse_as(agent, event, args.timeout);
    let read = translated.as_ref().ok().and_then(detect::event_read);
    match run(args, agent, read, raw.as_deref(), translated) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => refuse(agent, event, &err),
    }
}

/// An error, refused as the agent's contract blocks a call: the reason on stderr, and the
/// agent's deny answer where it reads one.
fn refuse(
    agent: Agent,
    event: Option<skeleton_crew::stage::hook::contract::Event>,
    err: &anyhow::Error,
) -> ExitCode {
    // The answer first: for Copilot CLI and Cursor it is the block, and stderr may be a pipe
    // nobody reads. None after an answer already begun (a write of it failed): the agent never
    // reads two, and the status is 2, as the deadline's then.
    let began = deadline::answering();
    let (line, status) = answer::refusal(agent, event, &format!("{err:#}"));
    let mut given = !began;
    if let Some(line) = line.filter(|_| !began) {
        let mut out = io::stdout().lock();
        given = writeln!(out, "{line}").and_then(|()| out.flush()).is_ok();
    }
    let _ = writeln!(io::stderr(), "sc-hook: {err:#}; the tool call is blocked");
    // A deny answer that could not be given (a closed stdout) blocks nothing with status 0.
    ExitCode::from(if given { status } else { 2 })
}

fn scope_of(args: &ScopeArgs) -> anyhow::Result<Scope> {
    Ok(match &args.project {
        Some(dir) => Scope::Project(std::path::absolute(dir)?),
        None => Scope::User(
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute())
                .ok_or_else(|| {
                    anyhow::anyhow!("HOME is not set to an absolute path, so there is no user file")
                })?,
        ),
    })
}

fn run_install(args: &InstallArgs) -> ExitCode {
    let result = (|| -> anyhow::Result<Outcome> {
        let request = InstallRequest {
            agent: args.scope.for_agent,
            scope: scope_of(&args.scope)?,
            exe: std::env::current_exe()?,
            policy: args.policy.clone(),
            audit: args.audit.clone(),
            force: args.force,
        };
        Ok(install::install(&request)?)
    })();
    report(result, "installed in")
}

fn run_uninstall(args: &ScopeArgs) -> ExitCode {
    let result = (|| -> anyhow::Result<Outcome> {
        Ok(install::uninstall(args.for_agent, &scope_of(args)?)?)
    })();
    report(result, "removed from")
}

fn report(result: anyhow::Result<Outcome>, done: &str) -> ExitCode {
    match result {
        Ok(Outcome::Written { file, backup }) => {
            println!("sc-hook: {done} {}", file.display());
            if let Some(backup) = backup {
                println!("sc-hook: the file as it was is in {}", backup.display());
            }
            ExitCode::SUCCESS
        }
        Ok(Outcome::Unchanged { file }) => {
            println!("sc-hook: {} needs no change", file.display());
            ExitCode::SUCCESS
        }
        Ok(Outcome::Removed { file }) => {
            println!(
                "sc-hook: removed {}, which held only sc-hook's entries",
                file.display()
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            let _ = writeln!(io::stderr(), "sc-hook: {err:#}");
            ExitCode::from(USAGE_ERROR)
        }
    }
}

fn run_doctor(args: &DoctorArgs) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            let _ = writeln!(io::stderr(), "sc-hook: cannot find this binary: {err}");
            return ExitCode::from(1);
        }
    };
    let request = install::DoctorRequest {
        agent: args.for_agent.unwrap_or(Agent::Claude),
        project: args
            .project
            .as_ref()
            .and_then(|dir| std::path::absolute(dir).ok()),
        home: std::env::var_os("HOME").map(PathBuf::from),
        policy: args.policy.clone(),
        exe,
    };
    let checks = install::doctor(&request);
    for check in &checks {
        println!("{} {}", if check.ok { "ok  " } else { "FAIL" }, check.line);
    }
    if checks.iter().all(|check| check.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn run(
    args: Args,
    agent: Agent,
    event: Option<skeleton_crew::stage::hook::contract::Event>,
    raw: Option<&[u8]>,
    translated: anyhow::Result<Translated>,
) -> anyhow::Result<()> {
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
    // The sandbox's machinery and sc-hook's state folder (prepared invocations, the trial cache)
    // are the gate's own too: every confined run keeps them read-only, so a file tool must not
    // change them either (a `Write` of a vendored sc-sandbox would make the next confined call
    // run unconfined).
    // Where the call's paths rules place a relative path (--root, else the call's cwd) and
    // the project: where a file tool's write counts as inside.
    let places: Option<Vec<PathBuf>> = translated.as_ref().ok().and_then(|t| {
        #[derive(serde::Deserialize)]
        struct Cwd {
            cwd: Option<PathBuf>,
        }
        let mut places = vec![serde_json::from_slice::<Cwd>(&t.input).ok()?.cwd?];
        places.extend(t.project.clone());
        places.extend(args.policy.root.clone());
        Some(places)
    });
    let machinery = hook::guarded_machinery(places.as_deref())
        .context("cannot find sc-hook's own binary to protect it (is /proc mounted?)")?;
    let own: Vec<(&std::path::Path, &str)> = store_in_dir
        .iter()
        .map(|path| (path.as_path(), "state store"))
        .chain(
            machinery
                .iter()
                .map(|(path, what)| (path.as_path(), what.as_str())),
        )
        .collect();
    let state = match &args.state_dir {
        Some(dir) => StateUrl::Sqlite(dir.join(DEFAULT_STATE_FILE)),
        None => args.state.url_or_beside(&audit.audit),
    };
    // Never dropped: the process ends after this one call, and freeing the compiled policy's
    // thousands of allocations would cost more than a twentieth of the call.
    let options = std::mem::ManuallyDrop::new(HookOptions {
        policy: args.policy.load_guarding(&audit, &args.state, &own)?,
        agent: args.agent.unwrap_or_else(|| agent.kind().to_owned()),
        agent_kind: agent.kind(),
        sandbox: SandboxDoor {
            policy: args.policy.policy.clone(),
            audit: Some(audit.audit.clone()),
            audit_key: audit.audit_key.clone(),
            state: match &state {
                StateUrl::Sqlite(file) => Some(file.clone()),
                StateUrl::Redis(_) => None,
            },
            exe: None,
            project: translated.as_ref().ok().and_then(|t| t.project.clone()),
            probe_cache: cli::default_state_folder().ok(),
            prepared: cli::default_state_folder().ok(),
            cannot_rewrite: translated
                .as_ref()
                .ok()
                .filter(|t| !t.abilities.rewrite && t.agent != Agent::Claude)
                .map(|t| t.agent.title()),
        },
        state,
        crew: args.state.crew.clone(),
        timing: args.state.timing(),
        fsync: audit.fsync,
    });
    let mut audit = audit.open()?;
    let answered = answer(translated, &options, &mut audit);
    if let Err(err) = &answered {
        // Refused before any decision of this call reached the log: the refusal is its
        // decision, and the log holds it (a failure to append it changes no answer).
        if !audit.appended() {
            let _ = hook::audit_refusal(&mut audit, agent, event, raw, err);
        }
    }
    answered
}

/// Decides (or records) one translated input and answers the agent.
fn answer(
    translated: anyhow::Result<Translated>,
    options: &HookOptions,
    audit: &mut skeleton_crew::audit::AuditLog,
) -> anyhow::Result<()> {
    let translated = translated?;
    let translated = &translated;
    if translated.agent == Agent::Claude {
        // Claude Code's own shape: the hook answers it as it always has.
        hook::run(
            &translated.input,
            options,
            audit,
            &mut deadline::Answering(io::stdout().lock()),
        )?;
        return Ok(());
    }
    let mut own = Vec::new();
    let handled = hook::run_translated(translated, options, audit, &mut own)?;
    let line = String::from_utf8_lossy(&own);
    let line = Some(line.trim()).filter(|line| !line.is_empty());
    let answer = match &handled {
        Handled::Decided(judgement) => answer::decided(translated, judgement, line),
        Handled::Ran(_) | Handled::Prompt => answer::recorded(translated, line),
    };
    if let Some(answer) = answer {
        deadline::answering();
        let mut out = io::stdout().lock();
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(())
}
