//! `sc-mcp`: the gate in front of an MCP server, relaying JSON-RPC over stdio.

use std::ffi::OsString;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use skeleton_crew::approve::notify::Notifier;
use skeleton_crew::approve::remember::Grants;
use skeleton_crew::approve::Human;
use skeleton_crew::approve::{self, DEFAULT_TIMEOUT_SECONDS};
use skeleton_crew::cli::{self, AgentAuditArgs, GenerateArgs, GrantTtlArgs, PolicyArgs, StateArgs};
use skeleton_crew::error::UsageError;
use skeleton_crew::exit;
use skeleton_crew::rules::policy::TaintScope;
use skeleton_crew::rules::state::CrewState;
use skeleton_crew::stage::mcp::principals::{self as listen_principals, Principal};
use skeleton_crew::stage::mcp::{
    self, listen, Asking, ClientIo, InboxAt, McpOptions, NobodyHuman, ServerAt,
    DEFAULT_MAX_MESSAGE_BYTES,
};
use skeleton_crew::stage::sandbox::door::SandboxDoor;
use skeleton_crew::store::{MemoryStore, Shared, StateHandle, StateKey, StateUrl, View};
use std::sync::{Arc, Mutex};

/// Put the gate in front of an MCP server.
///
/// Spawns SERVER_CMD and relays newline-delimited JSON-RPC between the client (this process's
/// stdin and stdout) and the server, unchanged, except: every `tools/call` is decided by the policy
/// (allowed calls are forwarded, denied ones are answered with `isError: true` and never reach the
/// server, held ones are put to the person: through the client when its `initialize` declared
/// elicitation, else on the web page with --web, else on /dev/tty; with --inbox, in the crew's
/// inbox, answered on `sc-inbox`'s page); `tools/list` results lose the
/// tools the policy denies; a malformed message (including a request whose id is not a string or
/// an integer) is never forwarded; an answer from the server to no request the client is waiting on
/// (an unknown or already answered id, a cancelled request) is dropped. Every decision, approval
/// and outcome is written to the audit log. The server's stderr passes through. Without --audit,
/// the log (and with --crew, the state store) is in $XDG_STATE_HOME/skeleton-crew/ (else
/// ~/.local/state/skeleton-crew/), never in the working folder the client starts sc-mcp in.
/// With a policy's `commands` and `paths` keys, a shell tool's command and a file tool's path are
/// judged too (a call may carry its working directory as `"cwd"`; --home and --root place the
/// paths), and writes to the gate's own policy, audit log and state are denied. With --sandbox,
/// the server runs under sc-sandbox, or is never started (every tools/call is then held).
/// Exit status: 0 the client closed and the server ended cleanly; 1 the server died, or the audit
/// log could not be written; 2 usage or policy error.
#[derive(Parser)]
#[command(name = "sc-mcp", version)]
struct Args {
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    audit: AgentAuditArgs,
    /// With --crew, taint and spend are shared with the crew's other processes through --state
    /// (default: state.sqlite beside the audit log); without it, they are this process's own.
    #[command(flatten)]
    state: StateArgs,
    /// The agent every call is made in the name of (default: the server command's name).
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// Seconds to wait for the person's answer to a held call before declining; 0 waits forever.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT_SECONDS)]
    timeout: u64,
    /// Take the answers to held calls from FILE, one per line, in order, instead of asking the
    /// person.
    #[arg(long, value_name = "FILE", conflicts_with = "no_prompt")]
    answers: Option<PathBuf>,
    /// Put held calls to the person as cards on a web page at ADDR, a loopback address and port
    /// (127.0.0.1:0 takes any free port; [::1]:8080), when the client cannot ask them itself (it
    /// did not declare elicitation, or --no-elicitation). The page's address, with its token, is
    /// printed on stderr and the terminal. Held calls wait side by side while everything else is
    /// relayed; one nobody answers within --timeout is declined. Not with --answers or
    /// --no-prompt, which ask nobody.
    #[arg(
        long,
        value_name = "ADDR",
        value_parser = approve::web::loopback_addr,
        conflicts_with_all = ["answers", "no_prompt"]
    )]
    web: Option<SocketAddr>,
    /// Whenever a held call is put to the person (through the client, on the web page, or on
    /// the terminal), run CMD through `sh -c` with one JSON object on its stdin (agent, tool, args,
    /// reasons, digest, summary, expiresAt when there is a timeout, and on the web page the card's
    /// url with its token), to push the hold to a person (ntfy, a chat webhook, a desktop
    /// notification). It runs beside the asking, is given 5 s, then killed; its failure is said on
    /// stderr and in the audit event (`notifyFailed`) and never approves or declines. Not run with
    /// --no-prompt, which asks nobody.
    #[arg(long, value_name = "CMD")]
    notify: Option<String>,
    /// Put every held call in the crew's inbox (--crew, and --state or the store beside the audit
    /// log) and wait there for the answer given on `sc-inbox`'s page, instead of asking here;
    /// held calls wait side by side while everything else is relayed. A store that fails, a hold
    /// the inbox expires or withdraws, and no answer within --timeout decline, and the approval's
    /// reason says which. Not with --web, --answers or --no-prompt.
    #[arg(long, requires = "crew", conflicts_with_all = ["web", "answers", "no_prompt"])]
    inbox: bool,
    /// Decline every held call without asking anyone (for clients that own the terminal).
    #[arg(long)]
    no_prompt: bool,
    /// Never put held calls to the person through the client (MCP elicitation), even when the
    /// client declared it can; ask on the web page (with --web) or /dev/tty instead.
    #[arg(long)]
    no_elicitation: bool,
    /// Longest JSON-RPC message in bytes, in either direction.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_MESSAGE_BYTES)]
    max_message_bytes: usize,
    /// Run the MCP server itself under sc-sandbox (installed beside sc-mcp), with the policy's
    /// `sandbox` key's paths and network (its `when` is not read: the server is always
    /// confined), rooted at --root (else the working folder), with this process's audit log and
    /// crew. Where no sandbox can be made (no bubblewrap, no sc-sandbox, a `sandbox` key that
    /// cannot be placed here), the server is never started: sc-mcp says why on stderr and answers
    /// the client itself, with no tools, holding every tools/call with that reason (audited as a
    /// hold). If sc-sandbox itself then fails (status 125), sc-mcp ends as with a server that
    /// died (exit 1).
    #[arg(long)]
    sandbox: bool,
    /// Seconds a 2026-07-28 client may take to retry a held call with the person's answer (the
    /// `requestState` sc-mcp seals expires then).
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    request_state_ttl: u64,
    #[command(flatten)]
    grant_ttl: GrantTtlArgs,
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio (127.0.0.1:0 picks a
    /// free port). Prints `sc-mcp: MCP at http://HOST:PORT/mcp` on stderr, then ` (token in
    /// FILE)` when it made the token. Every request needs `Authorization: Bearer TOKEN`; its Host
    /// and Origin must be the listener's own (DNS rebinding); a 2026-07-28 request's
    /// MCP-Protocol-Version, Mcp-Method and Mcp-Name headers must say what its body says. Each
    /// client (its token's label, or its --agent-header name) is a principal with a session of its
    /// own: its own server process (or upstream session). Its taint is kept for the life of
    /// the process (with --crew, in the crew's store), never ended by a DELETE or an idle
    /// timeout. Loopback only unless --listen-public. Not with --web.
    #[arg(long, value_name = "ADDR", conflicts_with = "web")]
    listen: Option<std::net::SocketAddr>,
    /// With --listen, serve other machines too (a non-loopback ADDR); the Host must then be ADDR.
    #[arg(long, requires = "listen")]
    listen_public: bool,
    /// With --listen, the bearer token of the --agent principal is the first line of FILE,
    /// trimmed (else a new one is made into sc-mcp-listen-PORT.token, mode 600, in the state
    /// folder).
    #[arg(long, value_name = "FILE", requires = "listen")]
    token_file: Option<PathBuf>,
    /// With --listen, another principal: its token is the first line of FILE, trimmed, and NAME
    /// (letters, digits, . _ - @) its label, the agent its requests are made for; repeatable.
    /// Each token is its own principal, with its own session and taint.
    #[arg(long, value_name = "NAME=FILE", requires = "listen")]
    client: Vec<String>,
    /// With --listen, an HTTP client may name its agent in this header (e.g. X-Agent); without
    /// it, the agent is its token's label. The name is a label the client chooses, not a
    /// credential: it belongs to the token that used it first (another token naming it is
    /// refused, 403), every name a token uses shares that token's taint, and with --crew a
    /// token may use one name only.
    #[arg(long, value_name = "NAME", requires = "listen")]
    agent_header: Option<String>,
    /// With --listen, how many connections may be open at once (more are closed at once).
    #[arg(long, value_name = "N", default_value_t = 256, requires = "listen")]
    max_connections: usize,
    /// With --listen, seconds a request's headers, and then its body, may take to arrive (else
    /// the connection is closed, or 408).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10,
        requires = "listen"
    )]
    read_timeout: u64,
    /// With --listen, how many requests may wait for their answers at once, one token's at most
    /// half of them, rounded up (more get 429).
    #[arg(long, value_name = "N", default_value_t = 32, requires = "listen")]
    max_streams: usize,
    /// With --listen, how many clients may have a session at once (more get 503).
    #[arg(long, value_name = "N", default_value_t = 64, requires = "listen")]
    max_sessions: usize,
    /// With --listen, a client's session without a request for this long ends (its server
    /// stops); its next request starts a new one.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 600,
        requires = "listen"
    )]
    idle_timeout: u64,
    /// Gate a remote MCP server spoken to over Streamable HTTP at URL (http://), instead of
    /// starting SERVER_CMD. Its answers pass the same checks; a request it does not answer
    /// (down, a status that is not 2xx, not JSON-RPC, slower than --upstream-timeout) is answered
    /// with an error. Not with --sandbox.
    #[arg(long, value_name = "URL", conflicts_with = "sandbox")]
    upstream: Option<String>,
    /// A header every request to --upstream carries, `Name: value` (e.g. 'Authorization: Bearer
    /// …'); repeatable. Its value never appears in the audit log, the card or an error.
    #[arg(long, value_name = "HEADER", requires = "upstream")]
    upstream_header: Vec<String>,
    /// --upstream-header's lines read from FILE (one `Name: value` a line), to keep credentials
    /// off the command line.
    #[arg(long, value_name = "FILE", requires = "upstream")]
    upstream_header_file: Option<PathBuf>,
    /// Seconds --upstream has to answer one message.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 60,
        requires = "upstream"
    )]
    upstream_timeout: u64,
    /// Don't narrate decisions on stderr.
    #[arg(short, long)]
    quiet: bool,
    /// The MCP server command and its arguments, after `--`.
    #[arg(
        last = true,
        required_unless_present_any = ["generate", "upstream"],
        conflicts_with = "upstream",
        value_name = "SERVER_CMD"
    )]
    server: Vec<OsString>,
    #[command(flatten)]
    generate: GenerateArgs,
}

pub fn main() -> ExitCode {
    // A panic anywhere ends the whole proxy, so no thread is left relaying unchecked.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(std::io::stderr(), "sc-mcp: internal error: {info}");
        std::process::exit(i32::from(exit::RUNTIME_FAILURE));
    }));
    let args = Args::parse();
    if let Some(status) = cli::answer_generate::<Args>("sc-mcp", &args.generate) {
        return status;
    }
    match run(args) {
        Ok(status) => ExitCode::from(status),
        Err(err) => exit::finish("sc-mcp", Err(err)),
    }
}

fn run(args: Args) -> anyhow::Result<u8> {
    let timeout = approve::timeout_from_seconds(args.timeout);
    if args.state.state.is_some() && args.state.crew.is_none() {
        return Err(UsageError(
            "--state needs --crew: without a crew, sc-mcp keeps its state for its own process"
                .into(),
        )
        .into());
    }
    // clap's `requires` does not hold here (--upstream conflicts with SERVER_CMD): said by hand.
    if args.upstream.is_none()
        && (!args.upstream_header.is_empty() || args.upstream_header_file.is_some())
    {
        return Err(UsageError(
            "--upstream-header and --upstream-header-file need --upstream".into(),
        )
        .into());
    }
    let audit = args.audit.resolve()?;
    let policy = args.policy.load_guarding(&audit, &args.state, &[])?;
    // A `call` or `value` answer is kept as a grant in the crew's store (a connection of its
    // own: the page's thread keeps them too), else in this process's memory.
    let grants = Grants {
        store: match &args.state.crew {
            Some(crew) => Some(Arc::new(Mutex::new(StateArgs::open(
                &args.state.url_or_beside(&audit.audit),
                StateKey::crew(crew, View::Gate),
                audit.fsync,
            )?))),
            None => None,
        },
        crew: args
            .state
            .crew
            .clone()
            .unwrap_or_else(|| skeleton_crew::store::DEFAULT_CREW.to_owned()),
        // The policy's `grantTtl` lowers it (and the decision holds to it as well).
        ttl: policy.grant_ttl().map_or(args.grant_ttl.grant_ttl, |ttl| {
            ttl.min(args.grant_ttl.grant_ttl)
        }),
        program: "sc-mcp",
        local: Some(Arc::new(Mutex::new(Vec::new()))),
    };
    // A hold put to a 2026-07-28 client as its retry: the requestState's key is derived from
    // the audit key (so every sc-mcp holding it reads the others' states), else this run's own.
    let retries = {
        let key = match audit.chain()?.mac(&[b"sc-mcp requestState"]) {
            Some(link) => mcp::request_state::Key::derived(&link.hex()),
            None => mcp::request_state::Key::random().map_err(|err| {
                anyhow::anyhow!("no random bytes for the requestState key: {err}")
            })?,
        };
        let file = match &args.policy.policy {
            Some(path) => std::fs::read(path)?,
            None => b"(built-in defaults)".to_vec(),
        };
        let place = |path: &Option<PathBuf>| {
            path.as_deref()
                .map(|path| path.as_os_str().as_encoded_bytes().to_vec())
                .unwrap_or_default()
        };
        let digest = mcp::request_state::policy_digest(&[
            &file,
            &place(&args.policy.home),
            &place(&args.policy.root),
        ]);
        // Bound to the server, --sandbox and the ways of asking too: set below, once known.
        let door = mcp::request_state::DoorBinding::default();
        let mut retries = mcp::Retries::new(key, digest, door).map_err(|err| {
            anyhow::anyhow!("no random bytes for the requestState instance: {err}")
        })?;
        retries.ttl = std::time::Duration::from_secs(args.request_state_ttl);
        retries
    };
    let mut options = McpOptions {
        retries,
        policy,
        grants,
        timing: args.state.timing(),
        agent: args
            .agent
            .unwrap_or_else(|| mcp::default_agent(&args.server)),
        timeout,
        quiet: args.quiet,
        max_message_bytes: args.max_message_bytes,
        // Which way a held call is asked, first that applies: --answers (or --no-prompt,
        // nobody), elicitation, --web, /dev/tty.
        asking: if args.answers.is_some() || args.no_prompt {
            Asking::OnlyTheHuman
        } else {
            Asking::Wherever {
                elicitation: !args.no_elicitation,
                web: args.web,
            }
        },
        sandbox: args.sandbox.then(|| SandboxDoor {
            door: "sc-mcp",
            policy: args.policy.policy.clone(),
            audit: Some(audit.audit.clone()),
            audit_key: audit.audit_key.clone(),
            // The crew's store, or, without a crew, the one beside the audit log (protected
            // all the same).
            state: match args.state.url_or_beside(&audit.audit) {
                StateUrl::Sqlite(file) => Some(file),
                StateUrl::Redis(_) => None,
            },
            crew: args.state.crew.clone(),
            exe: None,
        }),
        notify: args.notify.map(|command| Notifier::new(command, "sc-mcp")),
        inbox: match (&args.state.crew, args.inbox) {
            (Some(crew), true) => Some(InboxAt {
                state: args.state.url_or_beside(&audit.audit),
                crew: crew.clone(),
                fsync: audit.fsync,
            }),
            _ => None,
        },
    };
    // A requestState is taken only by an sc-mcp in front of the same server, with the same
    // --sandbox, asking the person the same ways.
    options.retries.door = mcp::request_state::DoorBinding {
        server: match &args.upstream {
            Some(url) => mcp::request_state::DoorBinding::server_url(url),
            None => mcp::request_state::DoorBinding::server_command(&args.server),
        },
        sandbox: options.sandbox.is_some(),
        asking: mcp::request_state::DoorBinding::asking(options.asking, options.inbox.is_some()),
    };
    let upstream = match &args.upstream {
        Some(url) => {
            let mut headers = args.upstream_header.clone();
            if let Some(file) = &args.upstream_header_file {
                headers.extend(mcp::upstream::Upstream::headers_from_file(file)?);
            }
            Some(mcp::upstream::Upstream::new(
                url,
                &headers,
                std::time::Duration::from_secs(args.upstream_timeout.max(1)),
            )?)
        }
        None => None,
    };
    let no_prompt = args.no_prompt;
    let answers = args.answers.clone();
    let human = move || -> anyhow::Result<Box<dyn Human>> {
        Ok(if no_prompt {
            Box::new(NobodyHuman("sc-mcp was started with --no-prompt".into()))
        } else {
            approve::human_for(answers.as_deref(), timeout)?
        })
    };
    let state_args = args.state.clone();
    let open_state = {
        let audit = audit.clone();
        move || -> anyhow::Result<StateHandle> {
            Ok(match &state_args.crew {
                Some(crew) => StateHandle::Shared(StateArgs::open(
                    &state_args.url_or_beside(&audit.audit),
                    StateKey::crew(crew, View::Gate),
                    audit.fsync,
                )?),
                None => StateHandle::Memory(CrewState::new()),
            })
        }
    };
    let server = args.server.clone();
    let Some(addr) = args.listen else {
        let mut human = human()?;
        let log = audit.open()?;
        let at = match &upstream {
            Some(upstream) => ServerAt::Upstream(upstream),
            None => ServerAt::Command(&server),
        };
        return mcp::run_with_io(
            &options,
            log,
            open_state()?,
            at,
            human.as_mut(),
            ClientIo::stdio()?,
        );
    };
    // Read before anything is bound: a bad one is a usage error.
    let mut clients = Vec::new();
    for given in &args.client {
        let Some((label, file)) = given.split_once('=') else {
            return Err(UsageError(format!("--client {given:?}: expected NAME=FILE")).into());
        };
        if !listen_principals::is_agent_name(label) {
            return Err(UsageError(format!(
                "--client {label:?}: not an agent name (letters, digits, . _ - @; at most 64)"
            ))
            .into());
        }
        clients.push(listen_principals::Client {
            label: label.to_owned(),
            token: read_token(std::path::Path::new(file))?,
        });
    }
    let (listener, bound) = listen::bind(addr, args.listen_public)?;
    let (token, made) = match &args.token_file {
        Some(file) => (read_token(file)?, None),
        None => {
            let token = listen::new_token()?;
            (token.clone(), Some(write_token(bound.port(), &token)?))
        }
    };
    let announced = match &made {
        Some(file) => format!(
            "sc-mcp: MCP at http://{bound}/mcp (token in {})\n",
            file.display()
        ),
        None => format!("sc-mcp: MCP at http://{bound}/mcp\n"),
    };
    let _ = std::io::stderr().write_all(announced.as_bytes());
    let agent_header =
        match &args.agent_header {
            Some(name) => Some(axum_header_name(name).ok_or_else(|| {
                UsageError(format!("--agent-header {name:?} is not a header name"))
            })?),
            None => None,
        };
    clients.insert(
        0,
        listen_principals::Client {
            label: options.agent.clone(),
            token,
        },
    );
    let principals = listen_principals::Principals::new(
        clients,
        agent_header,
        // In the crew's store taint is kept per name: a token switching names would shed it.
        args.state.crew.is_some(),
    )
    .map_err(|err| UsageError(format!("--token-file and --client: {err}")))?;
    let listen_options = listen::ListenOptions {
        principals,
        max_body: args.max_message_bytes,
        max_streams: args.max_streams.max(1),
        max_sessions: args.max_sessions.max(1),
        max_connections: args.max_connections.max(1),
        idle: std::time::Duration::from_secs(args.idle_timeout.max(1)),
        read_timeout: std::time::Duration::from_secs(args.read_timeout.max(1)),
    };
    // Without --crew, the principals' states and grants are kept in this process's memory for
    // its life, each token's apart (every name it uses sharing its taint), or all together
    // under `taintScope: "crew"`: a session that ends (DELETE, idle) takes no taint with it.
    let memory = MemoryStore::new();
    let crew_wide = options.policy.taint_scope() == TaintScope::Crew;
    let crew = args.state.crew.clone();
    // Each HTTP client's session is the very run a stdio client gets, in its own agent's name.
    let start: listen::StartSession = Arc::new(move |principal: &Principal, io: ClientIo| {
        let mut options = options.clone();
        options.agent = principal.agent.clone();
        let state = match &crew {
            Some(_) => open_state()?,
            None => {
                // `*` is no label: no token's state is the crew-wide one.
                let owner = if crew_wide {
                    "*"
                } else {
                    principal.label.as_str()
                };
                let key = StateKey::crew(owner, View::Gate);
                if !crew_wide {
                    options.policy = options.policy.clone().with_taint_scope(TaintScope::Crew);
                }
                options.grants.crew = owner.to_owned();
                options.grants.store = Some(Arc::new(Mutex::new(Shared::new(
                    Box::new(memory.clone()),
                    key.clone(),
                ))));
                StateHandle::Shared(Shared::new(Box::new(memory.clone()), key))
            }
        };
        let mut human = human()?;
        let log = audit.open()?;
        let at = match &upstream {
            Some(upstream) => ServerAt::Upstream(upstream),
            None => ServerAt::Command(&server),
        };
        mcp::run_with_io(&options, log, state, at, human.as_mut(), io)
    });
    listen::serve(listener, bound, listen_options, start)
}

fn axum_header_name(name: &str) -> Option<listen::HeaderName> {
    listen::HeaderName::from_bytes(name.as_bytes()).ok()
}

/// The first line of --token-file, trimmed; an empty one is a usage error.
fn read_token(file: &std::path::Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(file)
        .map_err(|err| UsageError(format!("--token-file {}: {err}", file.display())))?;
    let token = text.lines().next().unwrap_or("").trim().to_owned();
    if token.is_empty() {
        return Err(UsageError(format!(
            "--token-file {}: its first line is empty",
            file.display()
        ))
        .into());
    }
    Ok(token)
}

/// Writes a made token into the state folder, mode 600.
fn write_token(port: u16, token: &str) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let folder = cli::default_state_folder()?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&folder)?;
    let file = folder.join(format!("sc-mcp-listen-{port}.token"));
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&file)?;
    out.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    out.write_all(format!("{token}\n").as_bytes())?;
    Ok(file)
}
