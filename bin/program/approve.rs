//! `sc-approve`: puts each held call to a person on /dev/tty; only a typed `yes` approves.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use skeleton_crew::approve::inbox::{InboxDoor, InboxHuman};
use skeleton_crew::approve::notify::Notifier;
use skeleton_crew::approve::remember::Grants;
use skeleton_crew::approve::{self as asking, DEFAULT_TIMEOUT_SECONDS};
use skeleton_crew::cli::{self, AuditArgs, GenerateArgs, GrantArgs, StreamArgs};
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::jsonl::DEFAULT_MAX_RECORD_BYTES;
use skeleton_crew::stage::approve::{self, ApproveOptions};
use skeleton_crew::store::{inbox::Door, OpenOptions, StateUrl};
use std::sync::{Arc, Mutex};

/// Ask a person about every held call.
///
/// Reads verdicts (the output of sc-gate) from the FILEs or stdin and writes every record on, in
/// order. For each `hold` it shows the agent, tool, exact arguments, source, instruction and
/// reasons on /dev/tty and reads one line: only `yes` (any case) approves. Anything else, Ctrl-D,
/// the timeout or no terminal declines. With --web, the holds are cards on a web page instead,
/// each approved or declined by a button; with --inbox, they wait in the crew's inbox, answered on
/// `sc-inbox`'s page. Records that are not holds pass through byte for byte
/// (an `approval` on them, which sc-approve did not give, is removed).
/// A person may answer `yes call` (also allow this agent's later calls of this tool with exactly
/// these arguments) or `yes value` (also trust the untrusted values the hold named), where the
/// gate offers it: with --state/--crew, such an answer is kept as a grant that every door of the
/// crew honours for --grant-ttl (`sc-state grants` lists them, `sc-state revoke` ends them).
/// Exit status: 0 done, 1 runtime failure (I/O, audit log), 2 usage error.
#[derive(Parser)]
#[command(name = "sc-approve", version)]
struct Args {
    /// Take the answers from FILE, one per line, in order, instead of the terminal (the scripted
    /// human); holds after the last answer decline.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["web", "inbox"])]
    answers: Option<PathBuf>,
    /// Serve the holds as cards on a web page at ADDR, a loopback address and port
    /// (127.0.0.1:0 takes any free port; [::1]:8080), instead of the terminal. The page's
    /// address, with its token, is printed on stderr and the terminal. Holds wait side by side and
    /// are answered in any order; records still leave in input order.
    #[arg(long, value_name = "ADDR", value_parser = asking::web::loopback_addr, conflicts_with = "inbox")]
    web: Option<SocketAddr>,
    /// Put each hold in the crew's inbox (--state, --crew) and wait there for the answer given on
    /// `sc-inbox`'s page, instead of asking here. A store that fails, a hold the inbox expires or
    /// withdraws, and no answer in time decline, and the approval's reason says which.
    #[arg(long, requires_all = ["state", "crew"])]
    inbox: bool,
    /// On every hold, run CMD through `sh -c` with one JSON object on its stdin (agent, tool,
    /// args, reasons, digest, summary, expiresAt when there is a timeout, and with --web the
    /// card's url with its token), to push the hold to a person (ntfy, a chat webhook, a desktop
    /// notification). It runs beside the asking, is given 5 s, then killed; its failure is said
    /// on stderr and in the audit event (`notifyFailed`) and never approves or declines.
    #[arg(long, value_name = "CMD")]
    notify: Option<String>,
    /// Seconds to wait for each answer before declining; 0 waits forever.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT_SECONDS)]
    timeout: u64,
    #[command(flatten)]
    grants: GrantArgs,
    #[command(flatten)]
    audit: AuditArgs,
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
    if let Some(status) = cli::answer_generate::<Args>("sc-approve", &args.generate) {
        return status;
    }
    exit::finish("sc-approve", run(args))
}

fn run(args: Args) -> anyhow::Result<Completion> {
    let chain = args.audit.chain()?;
    let options = ApproveOptions {
        max_line_bytes: args.max_line_bytes,
        timeout: asking::timeout_from_seconds(args.timeout),
        chain: chain.clone(),
        notify: args
            .notify
            .map(|command| Notifier::new(command, "sc-approve")),
        grants: Grants {
            store: args
                .grants
                .open(&args.audit)?
                .map(|shared| Arc::new(Mutex::new(shared))),
            crew: args.grants.crew(),
            ttl: args.grants.ttl.grant_ttl,
            program: "sc-approve",
            local: None,
        },
    };
    let mut output = args.stream.output(args.audit.open_with_chain(chain)?);
    if let Some(addr) = args.web {
        return approve::run_web(&args.stream.inputs(), &options, addr, &mut output);
    }
    let mut human = match (args.inbox, &args.grants.state, &args.grants.crew) {
        (true, Some(url), Some(crew)) => {
            use anyhow::Context;
            let store = url
                .open(OpenOptions {
                    create: true,
                    fsync: args.audit.fsync,
                })
                .context("the crew's inbox is unavailable")?;
            let mut door = InboxDoor::new(store, crew.clone(), Door::Approve);
            if let StateUrl::Sqlite(path) = url {
                door = door.watching_file(path);
            }
            Box::new(InboxHuman::new(door))
        }
        _ => asking::human_for(args.answers.as_deref(), options.timeout)?,
    };
    approve::run(
        &args.stream.inputs(),
        &options,
        human.as_mut(),
        &mut output,
        &mut io::stderr(),
    )
}
