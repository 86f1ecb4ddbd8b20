//! `sc-gate`: reads tool calls (JSON Lines) and writes a verdict for each: allow, hold or deny.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use skeleton_crew::audit::{AuditLog, DEFAULT_AUDIT_PATH};
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::gate::{self, GateOptions};
use skeleton_crew::jsonl::{Input, StageOutput, DEFAULT_MAX_LINE_BYTES};
use skeleton_crew::policy::Policy;

/// Decide every tool call: allow, hold for a person, or deny.
///
/// Reads calls as JSON Lines from the FILEs (or stdin; `-` is stdin) and writes one verdict per
/// call to stdout, in input order. Every verdict is written to the audit log before it leaves.
/// Exit status: 0 done, 1 runtime failure (I/O, audit log), 2 usage or policy error.
#[derive(Parser)]
#[command(name = "sc-gate", version)]
struct Args {
    /// Policy file (JSON); without it, the built-in defaults.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Audit log to append to (created with its folder when missing).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_AUDIT_PATH)]
    audit: PathBuf,
    /// Longest call line in bytes; longer lines are denied as malformed.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// Don't narrate each verdict on stderr.
    #[arg(short, long)]
    quiet: bool,
    /// Call files to read, in order.
    #[arg(value_name = "FILE")]
    files: Vec<OsString>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    exit::finish("sc-gate", run(args))
}

fn run(args: Args) -> anyhow::Result<Completion> {
    let options = GateOptions {
        policy: Policy::load_or_default(args.policy.as_deref())?,
        max_line_bytes: args.max_line_bytes,
    };
    let audit = AuditLog::open(&args.audit)?;
    let narration = (!args.quiet).then(io::stderr);
    let mut output = StageOutput::new(audit, io::stdout().lock(), narration);
    gate::run(&Input::from_args(&args.files), &options, &mut output, &mut io::stderr())
}
