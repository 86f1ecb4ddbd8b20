//! `sc-gate`: reads tool calls (JSON Lines) and writes a verdict for each: allow, hold or deny.

use std::io;
use std::process::ExitCode;

use clap::Parser;
use skeleton_crew::cli::{self, AuditArgs, GenerateArgs, PolicyArgs, StateArgs, StreamArgs};
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::jsonl::DEFAULT_MAX_LINE_BYTES;
use skeleton_crew::stage::gate::{self, GateOptions};
use skeleton_crew::store::View;

/// Decide every tool call: allow, hold for a person, or deny.
///
/// Reads calls as JSON Lines from the FILEs (or stdin; `-` is stdin) and writes one verdict per
/// call to stdout, in input order. Every verdict is written to the audit log before it leaves.
/// Taint and spend last the stream, or, with --state or --crew, live in a store that other
/// processes of the crew share (a call whose state cannot be read or written is denied).
/// With a policy's `commands` and `paths` keys, a shell tool's command and a file tool's path are
/// judged too (a call may carry its working directory as `"cwd"`; --home and --root place the
/// paths), and writes to the gate's own policy, audit log and state are denied.
/// Exit status: 0 done, 1 runtime failure (I/O, audit log, a state store unavailable at start),
/// 2 usage or policy error.
#[derive(Parser)]
#[command(name = "sc-gate", version)]
struct Args {
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    audit: AuditArgs,
    #[command(flatten)]
    state: StateArgs,
    /// Longest call line in bytes; longer lines are denied as malformed.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    #[command(flatten)]
    stream: StreamArgs,
    #[command(flatten)]
    generate: GenerateArgs,
}

pub fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(status) = cli::answer_generate::<Args>("sc-gate", &args.generate) {
        return status;
    }
    exit::finish("sc-gate", run(args))
}

fn run(args: Args) -> anyhow::Result<Completion> {
    let chain = args.audit.chain()?;
    let options = GateOptions {
        policy: args.policy.load_guarding(&args.audit, &args.state, &[])?,
        max_line_bytes: args.max_line_bytes,
        timing: args.state.timing(),
        chain: chain.clone(),
    };
    let shared = args.state.open_for_stream(&args.audit, View::Gate)?;
    let mut output = args.stream.output(args.audit.open_with_chain(chain)?);
    let inputs = args.stream.inputs();
    match shared {
        None => gate::run(&inputs, &options, &mut output, &mut io::stderr()),
        Some(mut shared) => gate::run_shared(
            &inputs,
            &options,
            &mut shared,
            &mut output,
            &mut io::stderr(),
        ),
    }
}
