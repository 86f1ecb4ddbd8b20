//! `sc-sandbox`: runs a program so that it keeps the promises the rules make for it, whatever it
//! is.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use skeleton_crew::cli::{self, GenerateArgs};
use skeleton_crew::stage::sandbox::{self, prepared, RunOptions, Who, EXIT_SANDBOX_FAILURE};
use skeleton_crew::store::{self, StateUrl};

/// Run PROGRAM confined by the kernel, under the policy's `sandbox` key.
///
/// Files: `/` is read-only; the root (default: the working folder), a private /tmp and the
/// policy's `writable` folders are writable; `readOnly` paths, and the gate's own files (the policy
/// file, the audit log and its key, the state store), are read-only even inside the root; `hidden`
/// paths (a last part may be a pattern: `*.pem`) read as empty, and so does a place a link to one
/// led to in an earlier run of the root (remembered in the state folder); a protected path that
/// does not exist yet cannot be created. Runs at once share their placeholders (records and a
/// lock in the state folder of the user's home, whatever HOME each run was given; nested roots
/// and a shared writable `~` alike), and git inside any of them keeps every run's placeholders
/// out of a commit.
/// Network: none but an HTTP proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) that reaches the hosts of
/// `network.allow` alone; with --audit, every connection attempt is an audit event, as are the
/// start and end of the run. Processes: new PID, network, IPC and user namespaces, no
/// capabilities, no_new_privs, a seccomp filter on socket families; nothing started inside
/// outlives the run. Needs bubblewrap (`bwrap` on PATH in a system folder such as /usr/bin, or
/// SC_SANDBOX_BWRAP), owned by root and writable by no one else.
/// Exit status: the program's (128+N when signal N killed it; 127 not found, 126 not runnable),
/// or 125 when sc-sandbox itself fails (a bad flag, a policy that does not load, no bubblewrap,
/// a kernel that refuses a namespace); then the program did not run.
#[derive(Parser)]
#[command(name = "sc-sandbox", version)]
struct Args {
    /// Policy file (JSON) whose `sandbox` key gives the paths and hosts; without it, no extra
    /// paths and no hosts.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The writable root, where relative paths of the `sandbox` key are placed (default: the
    /// working folder).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The home folder `~` stands for (default: $HOME).
    #[arg(long, value_name = "DIR")]
    home: Option<PathBuf>,
    /// Audit log to record the run's start, end and connection attempts in.
    #[arg(long, value_name = "PATH")]
    audit: Option<PathBuf>,
    /// Key file of the audit log's HMAC chain (also read from SC_AUDIT_KEY_FILE).
    #[arg(long, value_name = "FILE", requires = "audit")]
    audit_key: Option<PathBuf>,
    /// The gate's state store, kept read-only inside (default: state.sqlite beside the audit log).
    #[arg(long, value_name = "URL", value_parser = StateUrl::parse)]
    state: Option<StateUrl>,
    /// Another of the gate's own files or folders, kept read-only inside (repeatable).
    #[arg(long, value_name = "PATH")]
    protect: Vec<PathBuf>,
    /// The agent the run is for, recorded with its events.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// The crew the run is for, recorded with its events.
    #[arg(long, value_name = "NAME", value_parser = store::crew_name)]
    crew: Option<String>,
    /// The session the run is for, recorded with its events.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The id of the run's audit events (a door's call id; default: a fresh one).
    #[arg(long, value_name = "ID", hide = true)]
    id: Option<String>,
    /// Run the invocation sc-hook prepared under ID in its state folder
    /// ($XDG_STATE_HOME/skeleton-crew/invocations, else ~/.local/state/…): its policy, root,
    /// home, audit log, state and session, for the program and arguments after `--`, which must
    /// be, byte for byte, those it was prepared for. Once, within 24 hours, from a file of this
    /// user's, mode 0600; else 125 and nothing runs. No other flag goes with it.
    #[arg(
        long,
        value_name = "ID",
        conflicts_with_all = ["policy", "root", "home", "audit", "audit_key", "state", "protect", "agent", "crew", "session", "id"]
    )]
    run: Option<String>,
    /// The program to run, and its arguments.
    #[arg(
        value_name = "PROGRAM",
        allow_hyphen_values = true,
        required_unless_present = "generate",
        last = true
    )]
    command: Vec<OsString>,
    #[command(flatten)]
    generate: GenerateArgs,
}

pub fn main() -> ExitCode {
    // A panic is a failure of sc-sandbox itself too: 125, not Rust's 101.
    std::panic::catch_unwind(sc_sandbox).unwrap_or(ExitCode::from(EXIT_SANDBOX_FAILURE))
}

fn sc_sandbox() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|flag| flag == sandbox::INSIDE_FLAG) {
        return ExitCode::from(sandbox::inside::main(&argv[2..]));
    }
    let args = match Args::try_parse_from(&argv) {
        Ok(args) => args,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() {
                EXIT_SANDBOX_FAILURE
            } else {
                0
            });
        }
    };
    if let Some(status) = cli::answer_generate::<Args>("sc-sandbox", &args.generate) {
        return status;
    }
    let Some((program, rest)) = args.command.split_first() else {
        eprintln!("sc-sandbox: no program to run; give it after --");
        return ExitCode::from(EXIT_SANDBOX_FAILURE);
    };
    if let Some(id) = &args.run {
        return match prepared_options(id, program, rest) {
            Ok(options) => ExitCode::from(sandbox::run_to_status(&options)),
            Err(why) => {
                eprintln!("sc-sandbox: {why}; nothing was run");
                ExitCode::from(EXIT_SANDBOX_FAILURE)
            }
        };
    }
    let options = RunOptions {
        policy: args.policy,
        root: args.root,
        home: args.home,
        audit: args.audit,
        audit_key: args.audit_key,
        state: args.state,
        protect: args.protect,
        who: Who {
            agent: args.agent,
            crew: args.crew,
            session: args.session,
        },
        id: args.id,
        program: program.clone(),
        args: rest.to_vec(),
    };
    ExitCode::from(sandbox::run_to_status(&options))
}

/// The run sc-hook prepared under `id`, for `program` and `rest` ([`prepared::take`]).
fn prepared_options(id: &str, program: &OsString, rest: &[OsString]) -> Result<RunOptions, String> {
    let state = cli::default_state_folder().map_err(|err| err.to_string())?;
    let folder = prepared::folder_in(&state);
    let invocation = prepared::take(&folder, id, program, rest, std::time::SystemTime::now())
        .map_err(|err| err.to_string())?;
    let state = match invocation.state.as_deref().map(StateUrl::parse).transpose() {
        Ok(state) => state,
        Err(err) => return Err(format!("the prepared invocation's state store: {err}")),
    };
    Ok(RunOptions {
        policy: invocation.policy,
        root: invocation.root,
        home: invocation.home,
        audit: invocation.audit,
        audit_key: invocation.audit_key,
        state,
        protect: invocation.protect,
        who: Who {
            agent: invocation.agent,
            crew: invocation.crew,
            session: invocation.session,
        },
        id: invocation.id,
        program: program.clone(),
        args: rest.to_vec(),
    })
}
