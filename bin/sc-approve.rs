//! `sc-approve`: puts each held call to a person on /dev/tty; only a typed `yes` approves.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use skeleton_crew::approve::{self, ApproveOptions, DEFAULT_TIMEOUT_SECONDS};
use skeleton_crew::audit::{AuditLog, DEFAULT_AUDIT_PATH};
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::jsonl::{Input, StageOutput, DEFAULT_MAX_LINE_BYTES};

/// Ask a person about every held call.
///
/// Reads verdicts (the output of sc-gate) from the FILEs or stdin and writes every record on, in
/// order. For each `hold` it shows the agent, tool, exact arguments, source, instruction and
/// reasons on /dev/tty and reads one line: only `yes` (any case) approves. Anything else, Ctrl-D,
/// the timeout or no terminal declines. Records that are not holds pass through byte for byte.
/// Exit status: 0 done, 1 runtime failure (I/O, audit log), 2 usage error.
#[derive(Parser)]
#[command(name = "sc-approve", version)]
struct Args {
    /// Take the answers from FILE, one per line, in order, instead of the terminal (the scripted
    /// human); holds after the last answer decline.
    #[arg(long, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// Seconds to wait for each answer before declining; 0 waits forever.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT_SECONDS)]
    timeout: u64,
    /// Audit log to append to (created with its folder when missing).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_AUDIT_PATH)]
    audit: PathBuf,
    /// Longest record line in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 4 * DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// Don't narrate each answer on stderr.
    #[arg(short, long)]
    quiet: bool,
    /// Verdict files to read, in order.
    #[arg(value_name = "FILE")]
    files: Vec<OsString>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    exit::finish("sc-approve", run(args))
}

fn run(args: Args) -> anyhow::Result<Completion> {
    let options = ApproveOptions {
        max_line_bytes: args.max_line_bytes,
        timeout: approve::timeout_from_seconds(args.timeout),
    };
    let mut human = approve::human_for(args.answers.as_deref(), options.timeout)?;
    let audit = AuditLog::open(&args.audit)?;
    let narration = (!args.quiet).then(io::stderr);
    let mut output = StageOutput::new(audit, io::stdout().lock(), narration);
    approve::run(
        &Input::from_args(&args.files),
        &options,
        human.as_mut(),
        &mut output,
        &mut io::stderr(),
    )
}
