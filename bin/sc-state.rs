//! `sc-state`: shows and resets a crew's shared state (taint and spend).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context;
use clap::{Parser, Subcommand};
use skeleton_crew::audit::chain::Chain;
use skeleton_crew::audit::{AuditLog, AuditOptions, IdMinter, DEFAULT_AUDIT_PATH};
use skeleton_crew::cli::{self, GenerateArgs};
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::stage::state::{self as admin, Reset};
use skeleton_crew::store::{self, OpenOptions, Owner, StateUrl};

/// Show or reset a crew's shared state: each agent's taint, with its cause, and its spend.
///
/// The state is the one sc-gate, sc-exec, sc-mcp and sc-hook keep with --state or --crew. A
/// crew's taint lasts until it is reset (or until the deciding process's --taint-ttl passes):
/// reset it at the start of a new task. Every reset is written to the audit log first.
/// Exit status: 0 done, 1 runtime failure (the store or the audit log), 2 usage error.
#[derive(Parser)]
#[command(name = "sc-state", version)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// The audit log: resets are written to it, and the default store is beside it.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_AUDIT_PATH, global = true)]
    audit: PathBuf,
    #[command(flatten)]
    generate: GenerateArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Print each agent's taint, with its cause, and its spend in the current budget window.
    Show {
        #[command(flatten)]
        target: Target,
        /// Every state in the store (every crew, and every sc-hook session).
        #[arg(long, conflicts_with_all = ["crew", "session"])]
        all: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Clear a crew's (or a session's) taint and spend, or one agent's.
    Reset {
        #[command(flatten)]
        target: Target,
        /// Clear only this agent's taint and spend.
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// Key file of the audit log's HMAC chain (as the other stages take it).
        #[arg(long, value_name = "FILE")]
        audit_key: Option<PathBuf>,
        /// Make the audit append durable on disk before the reset.
        #[arg(long)]
        fsync: bool,
    },
}

/// Which store, and whose state.
#[derive(clap::Args)]
struct Target {
    /// The store: a SQLite file, or redis://HOST:PORT/DB (rediss:// for TLS); default:
    /// state.sqlite beside the audit log.
    #[arg(long, value_name = "URL", value_parser = StateUrl::parse)]
    state: Option<StateUrl>,
    /// The crew (default: `default`, the crew of sc-gate and sc-exec given --state alone).
    #[arg(long, value_name = "NAME", value_parser = store::crew_name, conflicts_with = "session")]
    crew: Option<String>,
    /// An sc-hook session's own state (sc-hook without --crew).
    #[arg(long, value_name = "ID", value_parser = store::crew_name)]
    session: Option<String>,
}

impl Target {
    fn owner(&self) -> Owner {
        match (&self.crew, &self.session) {
            (_, Some(session)) => Owner::Session(session.clone()),
            (Some(crew), None) => Owner::Crew(crew.clone()),
            (None, None) => Owner::Crew(store::DEFAULT_CREW.to_owned()),
        }
    }

    fn url(&self, audit: &Path) -> StateUrl {
        self.state
            .clone()
            .unwrap_or_else(|| StateUrl::beside(audit))
    }

    /// The SQLite file of the store when it does not exist yet (nothing has kept state there).
    fn missing_file(&self, audit: &Path) -> Option<PathBuf> {
        match self.url(audit) {
            StateUrl::Sqlite(path) if !path.exists() => Some(path),
            _ => None,
        }
    }

    fn open(&self, audit: &Path) -> anyhow::Result<Box<dyn store::Store>> {
        self.url(audit)
            .open(OpenOptions {
                create: false,
                fsync: false,
            })
            .context("state store unavailable")
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(status) = cli::answer_generate::<Args>("sc-state", &args.generate) {
        return status;
    }
    let Some(command) = args.command else {
        let _ = writeln!(
            io::stderr(),
            "sc-state: say `show` or `reset` (see sc-state --help)"
        );
        return ExitCode::from(exit::USAGE_ERROR);
    };
    exit::finish("sc-state", run(command, &args.audit))
}

fn run(command: Command, audit_path: &Path) -> anyhow::Result<Completion> {
    let now = SystemTime::now();
    match command {
        Command::Show { target, all, json } => {
            if let Some(missing) = target.missing_file(audit_path) {
                return show_missing(&target, &missing, json);
            }
            let mut store = target.open(audit_path)?;
            let keys = if all {
                store.keys().context("state store unavailable")?
            } else {
                admin::keys_of(&target.owner())
            };
            let states =
                admin::read_states(store.as_mut(), &keys).context("state store unavailable")?;
            let text = if json {
                let mut line = admin::show_json(store.describe(), &states, now).to_string();
                line.push('\n');
                line
            } else {
                admin::show_text(store.describe(), &states, now)
            };
            let mut stdout = io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
        }
        Command::Reset {
            target,
            agent,
            audit_key,
            fsync,
        } => {
            let reset = Reset {
                owner: target.owner(),
                agent,
            };
            let mut store = target.open(audit_path)?;
            let chain = Chain::from_key_option(audit_key.as_deref())?;
            let mut audit = AuditLog::open_with(audit_path, AuditOptions { chain, fsync })?;
            let before = admin::read_states(store.as_mut(), &admin::keys_of(&reset.owner))
                .context("state store unavailable")?;
            // Audited first: a reset the log does not show never happens.
            let id = IdMinter::new().mint();
            audit.append(&admin::reset_event(
                &id,
                store.describe(),
                &reset,
                &before,
                now,
            ))?;
            admin::reset(store.as_mut(), &reset).context(
                "the reset is in the audit log, but the state store could not be written",
            )?;
            let whose = match &reset.agent {
                Some(agent) => format!("agent {agent:?} of "),
                None => String::new(),
            };
            let owner = admin::keys_of(&reset.owner)[0].describe();
            let _ = writeln!(
                io::stderr(),
                "sc-state: reset {whose}{owner} in {} (audit id {id})",
                store.describe()
            );
        }
    }
    Ok(Completion::default())
}

/// `sc-state show` on a SQLite store that does not exist yet: no state yet (status 0), and the
/// file is not made. Without --state, where sc-hook and sc-mcp keep theirs is named when a store
/// is there.
fn show_missing(target: &Target, missing: &Path, json: bool) -> anyhow::Result<Completion> {
    let shown = format!(
        "sqlite:{}",
        std::path::absolute(missing)
            .unwrap_or_else(|_| missing.to_owned())
            .display()
    );
    let text = if json {
        let mut line = admin::show_json(&shown, &[], SystemTime::now()).to_string();
        line.push('\n');
        line
    } else {
        let elsewhere = cli::default_state_folder()
            .ok()
            .map(|folder| folder.join(store::DEFAULT_STATE_FILE))
            .filter(|agents| target.state.is_none() && agents.exists());
        admin::show_missing_text(
            &shown,
            elsewhere
                .as_deref()
                .map(|p| p.display().to_string())
                .as_deref(),
        )
    };
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(Completion::default())
}
