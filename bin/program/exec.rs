//! `sc-exec`: runs what was allowed or approved, and skips everything else.

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use skeleton_crew::cli::{self, AuditArgs, GenerateArgs, PolicyArgs, StateArgs, StreamArgs};
use skeleton_crew::error::UsageError;
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::jsonl::DEFAULT_MAX_RECORD_BYTES;
use skeleton_crew::rules::state::CrewState;
use skeleton_crew::stage::exec::backends;
use skeleton_crew::stage::exec::{self, ExecOptions, ToolSet};
use skeleton_crew::stage::sandbox::door::SandboxDoor;
use skeleton_crew::store::{StateHandle, StateUrl, View};

/// Run the calls that were allowed or approved.
///
/// Reads records (the output of sc-gate or sc-approve) from the FILEs or stdin. Every call is
/// evaluated again under this stage's own policy and the stronger decision wins: a call runs only
/// when that is `allow`, or `hold` with an approval. Every record is written on with an `outcome`:
/// executed, skipped or failed. Without --tools the built-in tools are fakes with no side effects;
/// with it, each tool runs the backend the tools file names. sc-exec's own re-check keeps its state
/// for the stream, or, with --state or --crew, in the shared store, apart from the gate's.
/// With a policy's `commands` and `paths` keys, a shell tool's command and a file tool's path are
/// judged too (a call may carry its working directory as `"cwd"`; --home and --root place the
/// paths), and writes to the gate's own policy, audit log and state are denied.
/// A tools-file entry with `"sandbox": true` runs its program under sc-sandbox (installed beside
/// sc-exec) with the policy's `sandbox` key, rooted at --root (else the working folder), with
/// this stage's audit log and crew; where no sandbox can be made (no bubblewrap, no sc-sandbox,
/// a `sandbox` key that cannot be placed here), it is not run, and its record is `failed` with a
/// reason naming what is missing.
/// Before it starts a backend, sc-exec appends the call's `exec-start` event to the audit log and
/// waits for it: when the log cannot be written, the backend is not run and sc-exec stops (exit
/// status 1). The `exec` event with the outcome follows once the backend has ended.
/// Exit status: 0 done, 1 runtime failure (I/O, audit log, a state store unavailable at start),
/// 2 usage, policy or tools file error.
#[derive(Parser)]
#[command(name = "sc-exec", version)]
struct Args {
    #[command(flatten)]
    policy: PolicyArgs,
    /// Tools file (JSON) mapping each tool name to the command that runs it.
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Run the built-in fakes for tools the tools file does not name (else they fail).
    #[arg(long, requires = "tools")]
    builtin_fallback: bool,
    /// How many backends may run at once; output stays in input order, and an agent's calls
    /// still run one after the other.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
    #[command(flatten)]
    audit: AuditArgs,
    #[command(flatten)]
    state: StateArgs,
    /// Longest record line in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_RECORD_BYTES)]
    max_line_bytes: usize,
    #[command(flatten)]
    stream: StreamArgs,
    #[command(flatten)]
    generate: GenerateArgs,
}

pub fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(status) = cli::answer_generate::<Args>("sc-exec", &args.generate) {
        return status;
    }
    exit::finish("sc-exec", run(args))
}

fn run(args: Args) -> anyhow::Result<Completion> {
    let chain = args.audit.chain()?;
    let options = ExecOptions {
        policy: args.policy.load_guarding(&args.audit, &args.state, &[])?,
        max_line_bytes: args.max_line_bytes,
        tools: ToolSet::load(args.tools.as_deref(), args.builtin_fallback)
            .map_err(UsageError::from)?,
        jobs: usize::from(args.jobs),
        chain: chain.clone(),
        timing: args.state.timing(),
        sandbox: SandboxDoor {
            door: "sc-exec",
            policy: args.policy.policy.clone(),
            audit: Some(args.audit.audit.clone()),
            audit_key: args.audit.audit_key.clone(),
            state: match args.state.url_or_beside(&args.audit.audit) {
                StateUrl::Sqlite(file) => Some(file),
                StateUrl::Redis(_) => None,
            },
            crew: args.state.crew.clone(),
            exe: None,
        },
    };
    let state = match args.state.open_for_stream(&args.audit, View::Exec)? {
        Some(shared) => StateHandle::Shared(shared),
        None => StateHandle::Memory(CrewState::new()),
    };
    if args.tools.is_some() {
        // Before any backend starts: what a backend leaves running, even in a session of its
        // own, becomes this process's to kill when the backend ends.
        backends::adopt_leftovers()
            .context("cannot become the child subreaper that ends what backends leave running")?;
    }
    let mut output = args.stream.output(args.audit.open_with_chain(chain)?);
    exec::run_with_state(
        &args.stream.inputs(),
        &options,
        state,
        &mut output,
        &mut io::stderr(),
    )
}
