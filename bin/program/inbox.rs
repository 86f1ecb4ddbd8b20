//! `sc-inbox`: one approval page for every door of a crew.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use skeleton_crew::approve::notify::Notifier;
use skeleton_crew::approve::{self as asking};
use skeleton_crew::cli::{self, AuditArgs, GenerateArgs};
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::stage::inbox::{self, InboxOptions};
use skeleton_crew::store::{self, OpenOptions, StateUrl};

/// Serve one approval page for every door of a crew.
///
/// The doors started with --inbox (`sc-approve --inbox`, `sc-mcp --inbox`, each with the same
/// --state and --crew) put their holds in the crew's inbox, in the crew's state store, and wait
/// there. sc-inbox shows every pending hold as a card on one web page at ADDR, a loopback address
/// and port, with the same token, API and page as `sc-approve --web`; `GET /api/holds` also names
/// each hold's door and pid. It prints `sc-inbox: approvals at http://ADDR/#token=TOKEN` on
/// stderr. An answer is first committed to the store, bound to the record's digest: a hold
/// answered in another inbox, expired, or whose door is gone is refused (409). A hold whose door
/// stopped refreshing its heartbeat is withdrawn ("the door is gone"); one nobody answers within
/// --timeout expires, and its door declines it. Every answer given or refused, and every hold
/// expired or withdrawn, is written to the audit log (stage `inbox`). With a SQLite store the
/// doors and the inbox share one machine; with Redis, any machines that reach it. It runs until
/// it is ended (Ctrl-C, SIGTERM).
/// Exit status: 1 runtime failure (the store or the page cannot be opened, the audit log), 2
/// usage error.
#[derive(Parser)]
#[command(name = "sc-inbox", version)]
struct Args {
    /// Serve the page at ADDR, a loopback address and port (127.0.0.1:0 takes any free port;
    /// [::1]:8080); reach it from another machine through `ssh -L`.
    #[arg(
        long,
        value_name = "ADDR",
        value_parser = asking::web::loopback_addr,
        required_unless_present = "generate"
    )]
    web: Option<SocketAddr>,
    /// The crew's state store, where its doors put their holds: a SQLite file, or
    /// redis://HOST:PORT/DB (rediss:// for TLS), created once with `sc-state init --state URL`.
    #[arg(
        long,
        value_name = "URL",
        value_parser = StateUrl::parse,
        required_unless_present = "generate"
    )]
    state: Option<StateUrl>,
    /// The crew whose inbox to serve (letters, digits, `.`, `_`, `-`).
    #[arg(
        long,
        value_name = "NAME",
        value_parser = store::crew_name,
        required_unless_present = "generate"
    )]
    crew: Option<String>,
    /// On every hold shown, run CMD through `sh -c` with one JSON object on its stdin (agent,
    /// tool, args, reasons, digest, summary, expiresAt when the hold expires, and the page's url
    /// with its token). It runs beside the asking, is given 5 s, then killed; its failure is said
    /// on stderr and never approves or declines.
    #[arg(long, value_name = "CMD")]
    notify: Option<String>,
    /// Seconds a hold waits on this page before it expires (its door then declines it); 0 lets
    /// each hold wait as long as its door does (the door's own --timeout).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    timeout: u64,
    #[command(flatten)]
    audit: AuditArgs,
    #[command(flatten)]
    generate: GenerateArgs,
}

pub fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(status) = cli::answer_generate::<Args>("sc-inbox", &args.generate) {
        return status;
    }
    exit::finish("sc-inbox", run(args))
}

fn run(args: Args) -> anyhow::Result<Completion> {
    let (Some(addr), Some(state), Some(crew)) = (args.web, &args.state, &args.crew) else {
        unreachable!("clap requires --web, --state and --crew without --generate");
    };
    let log = args.audit.open()?;
    let open = || {
        state
            .open(OpenOptions {
                create: true,
                fsync: args.audit.fsync,
            })
            .context("the crew's inbox is unavailable")
    };
    let options = InboxOptions {
        addr,
        crew: crew.clone(),
        timeout: asking::timeout_from_seconds(args.timeout),
        notify: args
            .notify
            .map(|command| Notifier::new(command, "sc-inbox")),
    };
    match inbox::run(options, open()?, open()?, log)? {}
}
