//! `sc-report`: summarises audit logs for people (text) and for programs (`--json`).

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use skeleton_crew::audit::DEFAULT_AUDIT_PATH;
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::report::{self, Summariser};

/// Summarise what the crew did and what it was stopped from doing.
///
/// Reads one or more audit logs and prints counts per decision, holds approved / declined /
/// never answered, every veto (a deny or a declined hold) with agent, tool and reasons, and a
/// per-agent breakdown. A torn or malformed log line is reported, not fatal.
/// Exit status: 0 done, 1 a log could not be read, 2 usage error.
#[derive(Parser)]
#[command(name = "sc-report", version)]
struct Args {
    /// Print the summary as one JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// Audit logs to read, in order.
    #[arg(value_name = "LOG", default_value = DEFAULT_AUDIT_PATH)]
    logs: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    exit::finish("sc-report", run(args))
}

fn run(args: Args) -> anyhow::Result<Completion> {
    let mut summariser = Summariser::new();
    for path in &args.logs {
        let file = File::open(path)
            .with_context(|| format!("cannot open the audit log {}", path.display()))?;
        summariser.read_log(&path.display().to_string(), file)?;
    }
    let summary = summariser.finish();
    let text = if args.json {
        report::render_json(&summary)
    } else {
        report::render_text(&summary)
    };
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(Completion::default())
}
