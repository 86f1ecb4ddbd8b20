//! `sc-exec`: runs what was allowed or approved, and skips everything else.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use skeleton_crew::audit::{AuditLog, DEFAULT_AUDIT_PATH};
use skeleton_crew::exec::{self, ExecOptions};
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::jsonl::{Input, StageOutput, DEFAULT_MAX_LINE_BYTES};
use skeleton_crew::policy::Policy;

/// Run the calls that were allowed or approved.
///
/// Reads records (the output of sc-gate or sc-approve) from the FILEs or stdin. Every call is
/// evaluated again under this stage's own policy and the stronger decision wins: a call runs only
/// when that is `allow`, or `hold` with an approval. Every record is written on with an `outcome`:
/// executed, skipped or failed. The built-in tools are fakes with no side effects.
/// Exit status: 0 done, 1 runtime failure (I/O, audit log), 2 usage or policy error.
#[derive(Parser)]
#[command(name = "sc-exec", version)]
struct Args {
    /// Policy file (JSON); without it, the built-in defaults.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Audit log to append to (created with its folder when missing).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_AUDIT_PATH)]
    audit: PathBuf,
    /// Longest record line in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 4 * DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// Don't narrate each outcome on stderr.
    #[arg(short, long)]
    quiet: bool,
    /// Record files to read, in order.
    #[arg(value_name = "FILE")]
    files: Vec<OsString>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    exit::finish("sc-exec", run(args))
}

fn run(args: Args) -> anyhow::Result<Completion> {
    let options = ExecOptions {
        policy: Policy::load_or_default(args.policy.as_deref())?,
        max_line_bytes: args.max_line_bytes,
    };
    let audit = AuditLog::open(&args.audit)?;
    let narration = (!args.quiet).then(io::stderr);
    let mut output = StageOutput::new(audit, io::stdout().lock(), narration);
    exec::run(&Input::from_args(&args.files), &options, &mut output, &mut io::stderr())
}
