//! `sc-gate`: reads tool calls (JSON Lines) and writes a verdict for each: allow, hold or deny.

use std::io;
use std::process::ExitCode;

use clap::Parser;
use skeleton_crew::cli::{self, AuditArgs, GenerateArgs, PolicyArgs, StreamArgs};
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::gate::{self, GateOptions};
use skeleton_crew::jsonl::DEFAULT_MAX_LINE_BYTES;

/// Decide every tool call: allow, hold for a person, or deny.
///
/// Reads calls as JSON Lines from the FILEs (or stdin; `-` is stdin) and writes one verdict per
/// call to stdout, in input order. Every verdict is written to the audit log before it leaves.
/// Exit status: 0 done, 1 runtime failure (I/O, audit log), 2 usage or policy error.
#[derive(Parser)]
#[command(name = "sc-gate", version)]
struct Args {
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    audit: AuditArgs,
    /// Longest call line in bytes; longer lines are denied as malformed.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    #[command(flatten)]
    stream: StreamArgs,
    #[command(flatten)]
    generate: GenerateArgs,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(status) = cli::answer_generate::<Args>("sc-gate", &args.generate) {
        return status;
    }
    exit::finish("sc-gate", run(args))
}

fn run(args: Args) -> anyhow::Result<Completion> {
    let chain = args.audit.chain()?;
    let options = GateOptions {
        policy: args.policy.load()?,
        max_line_bytes: args.max_line_bytes,
        chain: chain.clone(),
    };
    let mut output = args.stream.output(args.audit.open_with_chain(chain)?);
    gate::run(
        &args.stream.inputs(),
        &options,
        &mut output,
        &mut io::stderr(),
    )
}
