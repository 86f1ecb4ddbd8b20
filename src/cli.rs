//! Command-line pieces shared by the stages, so every binary spells its common flags the same way
//! and opens its streams the same way.

use std::ffi::OsString;
use std::io::{self, Stderr, StdoutLock};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::approve::turn::Story;
use crate::audit::chain::Chain;
use crate::audit::{AuditLog, AuditOptions, DEFAULT_AUDIT_PATH};
use crate::error::PolicyError;
use crate::error::UsageError;
use crate::jsonl::{Input, StageOutput};
use crate::rules::paths::Places;
use crate::rules::policy::Policy;
use crate::rules::state::SystemClock;
use crate::store::{self, OpenOptions, Shared, StateKey, StateUrl, Timing, View};

/// `--audit PATH`, `--audit-key FILE` and `--fsync`: where and how a writing stage appends its
/// events.
#[derive(Debug, Clone, clap::Args)]
pub struct AuditArgs {
    /// Audit log to append to (created with its folder when missing).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_AUDIT_PATH)]
    pub audit: PathBuf,
    /// Key file for an HMAC-SHA-256 chain (a regular file of at least 16 bytes, mode 600, owned by
    /// you, reached through no link or folder another user owns and no folder anyone may write
    /// without the sticky bit); also read from the file
    /// named by SC_AUDIT_KEY_FILE. Without a key the chain is plain SHA-256. With it, sc-gate also
    /// seals each verdict and sc-approve each approval, and sc-exec acts only on sealed verdicts
    /// and runs a held call only on an approval sealed under it.
    #[arg(long, value_name = "FILE")]
    pub audit_key: Option<PathBuf>,
    /// Make each audit append durable on disk before the records it describes leave the stage.
    #[arg(long)]
    pub fsync: bool,
}

impl AuditArgs {
    /// The chain of `--audit-key` (or `SC_AUDIT_KEY_FILE`): the log's, and the key that seals
    /// and checks approvals between sc-approve and sc-exec.
    pub fn chain(&self) -> Result<Chain> {
        Ok(Chain::from_key_option(self.audit_key.as_deref())?)
    }

    pub fn open(&self) -> Result<AuditLog> {
        self.open_with_chain(self.chain()?)
    }

    /// Opens the log with a chain already loaded (by [`AuditArgs::chain`]).
    pub fn open_with_chain(&self, chain: Chain) -> Result<AuditLog> {
        Ok(AuditLog::open_with(
            &self.audit,
            AuditOptions {
                chain,
                fsync: self.fsync,
            },
        )?)
    }
}

/// The folder under the XDG state folder where sc-hook and sc-mcp keep their audit log and state
/// store by default.
pub(crate) const STATE_FOLDER: &str = "skeleton-crew";

/// `--audit PATH`, `--audit-key FILE` and `--fsync` for the stages an agent starts (sc-hook,
/// sc-mcp), in the agent's working folder: without `--audit`, the log is in the user's XDG state
/// folder, never in the repository the agent works in. [`AgentAuditArgs::resolve`] gives the
/// [`AuditArgs`] the rest of the stage uses.
#[derive(Debug, Clone, clap::Args)]
pub struct AgentAuditArgs {
    /// Audit log to append to (created with its folder when missing) [default:
    /// $XDG_STATE_HOME/skeleton-crew/audit.jsonl, else ~/.local/state/skeleton-crew/audit.jsonl;
    /// the folder is created mode 700, and the state store is state.sqlite in it].
    #[arg(long, value_name = "PATH")]
    pub audit: Option<PathBuf>,
    /// Key file for an HMAC-SHA-256 chain (a regular file of at least 16 bytes, mode 600, owned by
    /// you, reached through no link or folder another user owns and no folder anyone may write
    /// without the sticky bit); also read from the file
    /// named by SC_AUDIT_KEY_FILE. Without a key the chain is plain SHA-256. With it, sc-gate also
    /// seals each verdict and sc-approve each approval, and sc-exec acts only on sealed verdicts
    /// and runs a held call only on an approval sealed under it.
    #[arg(long, value_name = "FILE")]
    pub audit_key: Option<PathBuf>,
    /// Make each audit append durable on disk before the records it describes leave the stage.
    #[arg(long)]
    pub fsync: bool,
}

impl AgentAuditArgs {
    /// The audit arguments with the log's path decided: `--audit`, else `audit.jsonl` in
    /// [`default_state_folder`], which is created (mode 700) when missing. Neither
    /// `XDG_STATE_HOME` nor `HOME` set (as absolute paths) is a usage error (exit 2): the log
    /// never falls back to the working folder.
    pub fn resolve(&self) -> Result<AuditArgs> {
        let audit = match &self.audit {
            Some(path) => path.clone(),
            None => {
                let folder = default_state_folder()?;
                create_private_folder(&folder)?;
                folder.join("audit.jsonl")
            }
        };
        Ok(AuditArgs {
            audit,
            audit_key: self.audit_key.clone(),
            fsync: self.fsync,
        })
    }
}

/// The user's home in the password database, whatever `HOME` says; `None` when it has none or
/// an odd one (not absolute).
pub(crate) fn passwd_home() -> Option<PathBuf> {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|user| user.dir)
        .filter(|home| home.is_absolute())
}

/// `$XDG_STATE_HOME/skeleton-crew`, else `$HOME/.local/state/skeleton-crew` (a relative or empty
/// value of either is ignored, as the XDG base directory specification says); neither is a usage
/// error.
pub fn default_state_folder() -> Result<PathBuf, UsageError> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    if let Some(state) = absolute("XDG_STATE_HOME") {
        return Ok(state.join(STATE_FOLDER));
    }
    if let Some(home) = absolute("HOME") {
        return Ok(home.join(".local/state").join(STATE_FOLDER));
    }
    Err(UsageError(
        "neither XDG_STATE_HOME nor HOME is set to an absolute path, so there is no state folder \
         for the default audit log and state store: set one, or give --audit PATH"
            .to_owned(),
    ))
}

/// Creates `folder` (and the folders above it that are missing) readable by its owner only.
fn create_private_folder(folder: &Path) -> Result<()> {
    use anyhow::Context;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
        .with_context(|| format!("cannot create the state folder {}", folder.display()))
}

/// `--policy FILE`, `--home DIR` and `--root DIR` on every stage that decides.
#[derive(Debug, Clone, clap::Args)]
pub struct PolicyArgs {
    /// Policy file (JSON); without it, the built-in defaults.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The home directory that `~` stands for in the policy's `paths` rules (default: $HOME).
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// The root the `paths` rules place relative globs in, and outside which a write gets
    /// `outsideRoot` (default: each call's `cwd`).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

impl PolicyArgs {
    /// Loads the policy (or the built-in defaults) with the places of `--home` (else `$HOME`)
    /// and `--root`, made absolute against this process's working directory; under a `paths`
    /// key, writes to the policy file are denied.
    pub fn load(&self) -> Result<Policy, PolicyError> {
        let policy = Policy::load_or_default(self.policy.as_deref())?;
        let absolute = |path: &Path| std::path::absolute(path).ok();
        let home = match &self.home {
            Some(home) => absolute(home),
            None => std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute()),
        };
        let mut policy = policy.with_places(Places {
            home,
            root: self.root.as_deref().and_then(absolute),
        });
        if let Some(file) = self.policy.as_deref().and_then(absolute) {
            policy.protect(&file, "policy file");
        }
        Ok(policy)
    }

    /// [`PolicyArgs::load`], and, under a `paths` key, writes denied to the gate's other own
    /// files too: the audit log, its key file, the state store (`--state`, else `state.sqlite`
    /// beside the audit log, with SQLite's side files) and `more` (sc-hook's session folder),
    /// so that an agent cannot switch the gate off or rewrite what it recorded.
    pub fn load_guarding(
        &self,
        audit: &AuditArgs,
        state: &StateArgs,
        more: &[(&Path, &str)],
    ) -> Result<Policy, PolicyError> {
        let mut policy = self.load()?;
        if policy.paths().is_none() && policy.sandbox().is_none() {
            return Ok(policy);
        }
        let mut own: Vec<(PathBuf, &str)> = vec![(audit.audit.clone(), "audit log")];
        if let Some(key) = &audit.audit_key {
            own.push((key.clone(), "audit key"));
        }
        if let StateUrl::Sqlite(file) = state.url_or_beside(&audit.audit) {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut name = file.clone().into_os_string();
                name.push(suffix);
                own.push((PathBuf::from(name), "state store"));
            }
        }
        own.extend(more.iter().map(|(path, what)| (path.to_path_buf(), *what)));
        for (path, what) in own {
            if let Ok(path) = std::path::absolute(&path) {
                policy.protect(&path, what);
            }
        }
        Ok(policy)
    }
}

/// `--state URL`, `--crew NAME` and `--taint-ttl DURATION`: where a deciding stage keeps the
/// crew's taint and spend, and how long a taint lasts.
#[derive(Debug, Clone, clap::Args)]
pub struct StateArgs {
    /// Keep the crew's taint and spend in a store shared with other processes: a SQLite file, or
    /// redis://HOST:PORT/DB (rediss:// for TLS), created once with `sc-state init --state URL`
    /// (a Redis without it is refused).
    #[arg(long, value_name = "URL", value_parser = StateUrl::parse)]
    pub state: Option<StateUrl>,
    /// Share taint and spend with every process of crew NAME on the same store (letters, digits,
    /// `.`, `_`, `-`).
    #[arg(long, value_name = "NAME", value_parser = store::crew_name)]
    pub crew: Option<String>,
    /// Lift a taint once the last untrusted read behind it is this old (such as 30m, 8h, 7days).
    #[arg(long, value_name = "DURATION", value_parser = parse_ttl)]
    pub taint_ttl: Option<Duration>,
}

/// Why a `--taint-ttl` is refused.
#[derive(Debug, thiserror::Error)]
enum TtlError {
    #[error("not a duration such as 30m, 8h or 7days: {0}")]
    NotADuration(humantime::DurationError),
    #[error("a taint TTL is at least 1s")]
    TooShort,
}

fn parse_ttl(text: &str) -> Result<Duration, TtlError> {
    let ttl = humantime::parse_duration(text).map_err(TtlError::NotADuration)?;
    if ttl < Duration::from_secs(1) {
        return Err(TtlError::TooShort);
    }
    Ok(ttl)
}

impl StateArgs {
    /// The clock and the taint TTL.
    pub fn timing(&self) -> Timing {
        Timing {
            clock: Arc::new(SystemClock),
            taint_ttl: self.taint_ttl,
        }
    }

    /// The store: `--state`, else `state.sqlite` beside the audit log.
    pub fn url_or_beside(&self, audit: &Path) -> StateUrl {
        self.state
            .clone()
            .unwrap_or_else(|| StateUrl::beside(audit))
    }

    /// Opens `url` and checks the state at `key` can be read (exit 1 when it cannot).
    pub fn open(url: &StateUrl, key: StateKey, fsync: bool) -> Result<Shared> {
        use anyhow::Context;
        let store = url
            .open(OpenOptions {
                create: true,
                fsync,
            })
            .context("state store unavailable")?;
        let mut shared = Shared::new(store, key);
        shared.check().context("state store unavailable")?;
        Ok(shared)
    }

    /// For sc-gate and sc-exec: a shared state with `--state` or `--crew` (the store defaults to
    /// `state.sqlite` beside the audit log; the crew to `default`), else `None`: in memory.
    pub fn open_for_stream(&self, audit: &AuditArgs, view: View) -> Result<Option<Shared>> {
        if self.state.is_none() && self.crew.is_none() {
            return Ok(None);
        }
        let crew = self.crew.as_deref().unwrap_or(store::DEFAULT_CREW);
        let url = self.url_or_beside(&audit.audit);
        Self::open(&url, StateKey::crew(crew, view), audit.fsync).map(Some)
    }
}

/// `--grant-ttl DURATION`: how long a remembered approval lasts.
#[derive(Debug, Clone, clap::Args)]
pub struct GrantTtlArgs {
    /// How long an approval answered with the scope `call` or `value` is remembered (such as
    /// 30m, 8h, 1d); the policy's `grantTtl` may lower it.
    #[arg(long, value_name = "DURATION", default_value = "8h", value_parser = crate::store::grants::parse_ttl)]
    pub grant_ttl: Duration,
}

/// `--state URL`, `--crew NAME` and `--grant-ttl DURATION` for sc-approve: where the approvals a
/// person gives with a wider scope are kept as grants, for every door of the crew.
#[derive(Debug, Clone, clap::Args)]
pub struct GrantArgs {
    /// The crew's shared store: a SQLite file, or redis://HOST:PORT/DB (rediss:// for TLS;
    /// created once with `sc-state init --state URL`), where remembered approvals (grants) are kept, and the crew's inbox with --inbox. Without
    /// --state and --crew, an answer of `yes call` or `yes value` is taken as once.
    #[arg(long, value_name = "URL", value_parser = StateUrl::parse)]
    pub state: Option<StateUrl>,
    /// The crew whose doors honour the grants, and whose inbox --inbox uses (letters, digits,
    /// `.`, `_`, `-`) [default: default].
    #[arg(long, value_name = "NAME", value_parser = store::crew_name)]
    pub crew: Option<String>,
    #[command(flatten)]
    pub ttl: GrantTtlArgs,
}

impl GrantArgs {
    /// The crew's store with `--state` or `--crew` (the store defaults to `state.sqlite` beside
    /// the audit log), else `None`.
    pub fn open(&self, audit: &AuditArgs) -> Result<Option<Shared>> {
        let state = StateArgs {
            state: self.state.clone(),
            crew: self.crew.clone(),
            taint_ttl: None,
        };
        state.open_for_stream(audit, View::Gate)
    }

    /// The crew's name: `--crew`, else `default`.
    pub fn crew(&self) -> String {
        self.crew
            .clone()
            .unwrap_or_else(|| store::DEFAULT_CREW.to_owned())
    }
}

/// `--quiet` and the input FILEs of a stage.
#[derive(Debug, Clone, clap::Args)]
pub struct StreamArgs {
    /// Don't narrate on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    /// Files to read, in order; none or `-` means stdin.
    #[arg(value_name = "FILE")]
    pub files: Vec<OsString>,
}

impl StreamArgs {
    pub fn inputs(&self) -> Vec<Input> {
        Input::from_args(&self.files)
    }

    /// The stage's output: records to stdout, events to the audit log, narration to stderr
    /// unless quiet, held back while sc-approve asks a person on the same terminal
    /// ([`crate::approve::turn`]).
    /// A pipe to the next stage is widened first ([`crate::jsonl::pipe`]).
    pub fn output(&self, audit: AuditLog) -> StageOutput<StdoutLock<'static>, Story<Stderr>> {
        crate::jsonl::pipe::widen(io::stdout());
        StageOutput::new(
            audit,
            io::stdout().lock(),
            (!self.quiet).then(|| Story::new(io::stderr())),
        )
    }
}

/// The hidden `--generate KIND`: a man page or shell completions, built from the same clap
/// definitions as `--help`, so they never drift from the binary (`make dist` writes them all).
#[derive(Debug, Clone, clap::Args)]
pub struct GenerateArgs {
    /// Print a man page (`man`) or completions (`bash`, `zsh`, `fish`, `elvish`, `powershell`)
    /// for this command, then exit.
    #[arg(long, value_name = "KIND", value_enum, hide = true)]
    pub generate: Option<Generate>,
}

/// What `--generate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Generate {
    Man,
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

/// Writes the man page or completions for `command` to `out`. They are built in memory first:
/// clap_complete panics on a write error, and a closed pipe must end quietly.
pub fn generate(kind: Generate, mut command: clap::Command, out: &mut dyn io::Write) -> Result<()> {
    use clap_complete::Shell;
    let name = command.get_name().to_owned();
    let mut text = Vec::new();
    let shell = match kind {
        Generate::Man => {
            clap_mangen::Man::new(command).render(&mut text)?;
            out.write_all(&text)?;
            return Ok(());
        }
        Generate::Bash => Shell::Bash,
        Generate::Zsh => Shell::Zsh,
        Generate::Fish => Shell::Fish,
        Generate::Elvish => Shell::Elvish,
        Generate::Powershell => Shell::PowerShell,
    };
    clap_complete::generate(shell, &mut command, name, &mut text);
    out.write_all(&text)?;
    Ok(())
}

/// For a binary's `main`: `Some(status)` when `--generate` was given and has been answered.
pub fn answer_generate<A: clap::CommandFactory>(
    program: &str,
    args: &GenerateArgs,
) -> Option<std::process::ExitCode> {
    let kind = args.generate?;
    let mut stdout = io::stdout().lock();
    let result = generate(kind, A::command(), &mut stdout)
        .and_then(|()| Ok(io::Write::flush(&mut stdout)?))
        .map(|()| crate::exit::Completion::default());
    Some(crate::exit::finish(program, result))
}
