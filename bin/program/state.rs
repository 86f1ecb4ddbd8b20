//! `sc-state`: creates a store, shows and resets a crew's shared state (taint and spend), and
//! lists and revokes its grants (remembered approvals).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context;
use clap::{Parser, Subcommand};
use skeleton_crew::audit::chain::Chain;
use skeleton_crew::audit::{AuditLog, AuditOptions, IdMinter, DEFAULT_AUDIT_PATH};
use skeleton_crew::cli::{self, GenerateArgs};
use skeleton_crew::error::UsageError;
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::stage::state::{self as admin, Reset};
use skeleton_crew::store::{self, grants, InitError, OpenOptions, Owner, StateUrl};

/// Create a store; show or reset a crew's shared state: each agent's taint, with its cause, and
/// its spend; list or revoke its grants (remembered approvals).
///
/// The state is the one sc-gate, sc-exec, sc-mcp and sc-hook keep with --state or --crew. A
/// Redis store is created once with `sc-state init --state redis://HOST:PORT/DB` before any of
/// them uses it: they refuse a Redis that was never created, or that lost its data. A crew's
/// taint lasts until it is reset (or until the deciding process's --taint-ttl passes): reset it
/// at the start of a new task. Every reset is written to the audit log first.
/// Exit status: 0 done, 1 runtime failure (the store or the audit log), 2 usage error (and an
/// unknown grant id, and a database init will not make a store).
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
    /// Create the store, once, before the crew's doors use it (on a store already made, nothing
    /// changes).
    ///
    /// On Redis, it marks an empty database as a store: the doors refuse a database without the
    /// mark, so that a Redis that lost its data is never taken as new. A database that holds keys
    /// but no mark, or another program's, is refused (exit 2). A SQLite file is made (with its
    /// folder), as the first door would.
    Init {
        /// The store: a SQLite file, or redis://HOST:PORT/DB (rediss:// for TLS); default:
        /// state.sqlite beside the audit log.
        #[arg(long, value_name = "URL", value_parser = StateUrl::parse)]
        state: Option<StateUrl>,
        /// Key file of the audit log's HMAC chain (as the other stages take it).
        #[arg(long, value_name = "FILE")]
        audit_key: Option<PathBuf>,
        /// Make the audit append durable on disk.
        #[arg(long)]
        fsync: bool,
    },
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
    /// List a crew's live grants (remembered approvals): id, agent, tool, scope, who gave it,
    /// when, when it expires, and the digest or values it covers.
    Grants {
        #[command(flatten)]
        target: CrewTarget,
        /// Print a JSON array of objects (id, crew, agent, tool, scope, digest or values, by, at,
        /// expiresAt) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// End a crew's grant ID, or every grant of the crew with --all.
    #[command(group = clap::ArgGroup::new("which").required(true).args(["id", "all"]))]
    Revoke {
        /// The grant's id, as `sc-state grants` lists it.
        #[arg(value_name = "ID")]
        id: Option<String>,
        /// Every grant of the crew (stored grants this program cannot read too).
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        target: CrewTarget,
    },
}

/// Which store, and which crew's grants.
#[derive(clap::Args)]
struct CrewTarget {
    /// The store: a SQLite file, or redis://HOST:PORT/DB (rediss:// for TLS); default:
    /// state.sqlite beside the audit log.
    #[arg(long, value_name = "URL", value_parser = StateUrl::parse)]
    state: Option<StateUrl>,
    /// The crew (default: `default`, the crew of sc-gate and sc-exec given --state alone).
    #[arg(long, value_name = "NAME", value_parser = store::crew_name)]
    crew: Option<String>,
}

impl CrewTarget {
    fn crew(&self) -> &str {
        self.crew.as_deref().unwrap_or(store::DEFAULT_CREW)
    }

    /// The store as `Target` opens it (never created).
    fn target(&self) -> Target {
        Target {
            state: self.state.clone(),
            crew: self.crew.clone(),
            session: None,
        }
    }
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

pub fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(status) = cli::answer_generate::<Args>("sc-state", &args.generate) {
        return status;
    }
    let Some(command) = args.command else {
        let _ = writeln!(
            io::stderr(),
            "sc-state: say `init`, `show`, `reset`, `grants` or `revoke` (see sc-state --help)"
        );
        return ExitCode::from(exit::USAGE_ERROR);
    };
    exit::finish("sc-state", run(command, &args.audit))
}

fn run(command: Command, audit_path: &Path) -> anyhow::Result<Completion> {
    let now = SystemTime::now();
    match command {
        Command::Init {
            state,
            audit_key,
            fsync,
        } => {
            let url = state.unwrap_or_else(|| StateUrl::beside(audit_path));
            // Opened first: a store is not made where its making could not be logged.
            let chain = Chain::from_key_option(audit_key.as_deref())?;
            let audit = AuditLog::open_with(audit_path, AuditOptions { chain, fsync })?;
            return init(&url, audit, now);
        }
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
        Command::Grants { target, json } => {
            let crew = target.crew();
            let (shown, grants) = match target.target().missing_file(audit_path) {
                Some(missing) => (shown_missing(&missing), Vec::new()),
                None => {
                    let mut store = target.target().open(audit_path)?;
                    let grants = grants::list(store.as_mut(), crew, now)
                        .context("state store unavailable")?;
                    (store.describe().to_owned(), grants)
                }
            };
            let text = if json {
                let mut line = admin::grants_json(&grants).to_string();
                line.push('\n');
                line
            } else {
                admin::grants_text(&shown, crew, &grants)
            };
            let mut stdout = io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
        }
        Command::Revoke { id, all, target } => {
            return revoke(&target, id.as_deref(), all, audit_path, now);
        }
    }
    Ok(Completion::default())
}

/// `sc-state init`: makes the store, or says it is one already (status 0 both). A database that
/// holds something else is a usage error (exit 2), an unreachable store a runtime failure. A
/// store made is written to the audit log (`"action":"init"`); a log that cannot be written
/// then is a runtime failure, said as one that left the store made.
fn init(url: &StateUrl, mut audit: AuditLog, now: SystemTime) -> anyhow::Result<Completion> {
    let made = match url.init(false) {
        Ok(made) => made,
        Err(InitError::Refused(why)) => {
            return Err(UsageError(format!("not made a state store: {why}")).into())
        }
        Err(InitError::Unavailable(why)) => {
            return Err(anyhow::Error::new(why).context("state store unavailable"))
        }
    };
    if made.created {
        let id = IdMinter::new().mint();
        audit
            .append(&admin::init_event(&id, &made.store, now))
            .context("the state store was made, but the audit log could not be written")?;
    }
    let _ = io::stderr().write_all(admin::init_text(&made).as_bytes());
    Ok(Completion::default())
}

/// `sc-state revoke ID|--all`: ends the grant (an unknown id is a usage error naming it), or
/// every grant of the crew. A SQLite store that does not exist yet holds none, and is not made.
fn revoke(
    target: &CrewTarget,
    id: Option<&str>,
    all: bool,
    audit_path: &Path,
    now: SystemTime,
) -> anyhow::Result<Completion> {
    let crew = target.crew();
    let mut stderr = io::stderr();
    let missing = target.target().missing_file(audit_path);
    let mut store = match &missing {
        Some(_) => None,
        None => Some(target.target().open(audit_path)?),
    };
    let shown = match (&store, &missing) {
        (Some(store), _) => store.describe().to_owned(),
        (None, Some(missing)) => shown_missing(missing),
        (None, None) => unreachable!("a store is open or missing"),
    };
    if all {
        let revoked = match store.as_mut() {
            Some(store) => {
                grants::revoke_all(store.as_mut(), crew, now).context("state store unavailable")?
            }
            None => grants::RevokedAll::default(),
        };
        let _ = stderr.write_all(admin::revoked_all_text(&shown, crew, &revoked).as_bytes());
        return Ok(Completion::default());
    }
    let id = id.expect("clap requires an id or --all");
    let ended = match store.as_mut() {
        Some(store) => {
            grants::revoke(store.as_mut(), crew, id).context("state store unavailable")?
        }
        None => None,
    };
    match ended {
        Some(grant) => {
            let _ = stderr.write_all(admin::revoked_text(&shown, &grant).as_bytes());
            Ok(Completion::default())
        }
        None => Err(UsageError(admin::unknown_grant(&shown, crew, id)).into()),
    }
}

/// How a SQLite store that does not exist yet is named: `sqlite:/abs/path`.
fn shown_missing(missing: &Path) -> String {
    format!(
        "sqlite:{}",
        std::path::absolute(missing)
            .unwrap_or_else(|_| missing.to_owned())
            .display()
    )
}

/// `sc-state show` on a SQLite store that does not exist yet: no state yet (status 0), and the
/// file is not made. Without --state, where sc-hook and sc-mcp keep theirs is named when a store
/// is there.
fn show_missing(target: &Target, missing: &Path, json: bool) -> anyhow::Result<Completion> {
    let shown = shown_missing(missing);
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
