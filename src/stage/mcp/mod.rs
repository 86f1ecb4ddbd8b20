//! `sc-mcp`: the gate in front of an MCP server, as a stdio proxy.
//!
//! Over Streamable HTTP too: with `--listen` ([`listen`]) each HTTP client gets this same run
//! ([`run_with_io`]) fed its messages, and with `--upstream` ([`upstream`]) the server is a remote
//! one, whose messages reach the run as a started server's lines would.
//!
//! `sc-mcp [--policy F] [--audit F] [--agent NAME] -- SERVER_CMD ARGS…` spawns the server and
//! relays newline-delimited JSON-RPC both ways, byte for byte, except:
//! - every `tools/call` request from the client becomes a call (`agent` from `--agent`, `tool` =
//!   `params.name`, `args` = `params.arguments`, `source` = `agent`) and is decided by
//!   [`crate::rules::decision::decide`], with the session's [`CrewState`] updated after each
//!   decision (this process's own, or with `--crew` the crew's in a shared [`crate::store`]; a
//!   store that fails denies the call). An
//!   allowed call is forwarded; a denied one is answered by sc-mcp itself with the same `id` and a
//!   tool result with `isError: true`, and never reaches the server; a held one is put to the
//!   person (the approver's own code, [`crate::approve`]) and, unless approved, is answered like
//!   a deny. The person is asked, first that applies: by `--answers`; through the client, when
//!   its `initialize` declared elicitation ([`crate::approve::elicitation`]; not with
//!   `--no-elicitation`); on the web page, with `--web` ([`crate::approve::web`]); on /dev/tty;
//!   else nobody is asked and the call is declined. Every surface offers the same scopes for a
//!   yes (`once`, and `call` or `value` where a grant may be given). With `--notify CMD`, the
//!   command is run whenever the person is asked, on any surface ([`crate::approve::notify`]);
//!   its failure is said in the `approve` event (`notifyFailed`);
//!   With `--inbox`, every held call waits in the
//!   crew's inbox instead, answered on `sc-inbox`'s page ([`crate::approve::inbox`]);
//! - sc-mcp's own requests to the client (`elicitation/create`) have string ids that start with
//!   `sc-mcp-elicit-`. The client's answers to them are read by sc-mcp and never forwarded; a
//!   server message that uses such an id (a request, or a cancellation naming one) is dropped, so
//!   no answer to the server can be taken for the person's;
//! - `tools/list` results lose the tools the policy denies (the deny list, and tools outside the
//!   agent's allowlist), so the model never sees them;
//! - a client message that is not valid JSON, has a duplicate key, is a batch, is a `tools/call`
//!   without a string `params.name`, is a request whose `id` is neither a string nor an integer
//!   written as one (within ±(2^53−1), the integers every JSON reader holds exactly), is a
//!   `notifications/…` message carrying an `id`, or has a `method` and also a `result` or an
//!   `error`, is never forwarded: it gets a JSON-RPC error when it has an id, and is dropped
//!   otherwise;
//! - request ids are compared by value, never by their text (`2` and `2.0` are one id, the string
//!   `"2"` another), and an answer from the server reaches the client only if it answers a request
//!   the client sent and is still waiting on, once, with the client's own id. An answer to nothing
//!   awaited (an id never sent, an id already answered, a request the client cancelled) is dropped
//!   with a warning, and every tool list an answer carries (`result.tools`) is filtered, whatever
//!   request it answers.
//!
//! Every decision, approval and outcome is audited as the pipeline's stages audit them (`gate`,
//! `approve` and `exec` events with the same fields), so `sc-report` reads the log. An event is
//! written before the message it describes leaves; if the log cannot be written, sc-mcp stops the
//! server and exits 1.
//!
//! Two threads relay: the calling thread reads the client and decides (it alone holds the crew
//! state and the human), and one thread reads the server. Each direction reads one bounded line
//! at a time, so memory stays flat. A call put to the person through the client or on the web
//! page does not stop the calling thread: the call is kept (at most [`MAX_HELD_CALLS`] at once;
//! past that a hold is declined unasked) while everything else is relayed, and settled when the
//! answer comes: on the client's input, or on the page (a thread of its own waits for the page's
//! answers and expiries, and forwards an approved call itself). Another thread declines the
//! calls asked through the client that nobody answered within `--timeout` (and tells the client
//! with `notifications/cancelled`); on the page, the page's own expiry does it. A client that
//! cancels a held call withdraws the question (or the card) the same way; those still waiting
//! when the session ends are declined. If the server dies, every request still waiting for it is
//! answered with a JSON-RPC error (tool calls get an `exec` event saying so) and sc-mcp exits 1.
//! The server's stderr passes through to sc-mcp's.
//!
//! With `--sandbox`, the server itself runs under sc-sandbox, through the one door sc-hook and
//! sc-exec use too ([`crate::stage::sandbox::door`]): sc-mcp's policy file (its `sandbox` key's
//! paths and network), root (`--root`, else the working folder), home, audit log and key, agent and
//! crew. A filesystem server is then confined to the root and what the key makes writable, and
//! reaches no network but `network.allow` through sc-sandbox's proxy. Before the server starts, the
//! sandbox is made once around `true` ([`Confined::trial`]). Where the sandbox cannot be made (no
//! bubblewrap, no sc-sandbox beside sc-mcp, a `sandbox` key that cannot be placed here,
//! sc-sandbox's status 125 on the trial), the server is never started: sc-mcp says why on stderr
//! and stays up as an MCP server of its own, answering `initialize`, `tools/list` (no tools) and
//! `ping` itself, and holding every `tools/call` with the reason (audited as a hold nobody was
//! asked about, answered as a declined one). sc-sandbox's own status 125 after a trial that worked
//! ends the session as a server that died.
//!
//! [`Confined::trial`]: crate::stage::sandbox::door::Confined::trial
//!
//! A card on the page shows the verdict record sc-mcp makes of the call,
//! `{"id":…,"call":{…},"decision":"hold","reasons":[…],"agentState":{…}}` ([`Verdict`]), and an
//! answer there is bound to that line's SHA-256, which the `approve` event carries. The call's
//! `gate` event repeats the line's members after `id` byte for byte (then the chain's `seq` and
//! `prev`), so the line and its digest can be rebuilt from the log.
//!
//! [`CrewState`]: crate::rules::state::CrewState

mod client;
mod cover;
mod handshake;
mod holds;
mod inbox;
pub mod listen;
mod mrtr;
mod pending;
pub mod principals;
mod protocol;
mod proxy;
pub mod request_state;
mod revision;
mod server;
mod session;
pub mod upstream;
mod verdict;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

pub use self::proxy::{run, run_with_io, run_with_state, ClientIo, ServerAt};
pub use self::request_state::Retries;
use crate::approve::notify::Notifier;
use crate::approve::remember::Grants;
use crate::approve::{Human, Reply};
use crate::record::AnsweredBy;
use crate::rules::policy::Policy;
use crate::stage::sandbox::door::SandboxDoor;
use crate::store::Timing;

/// The longest JSON-RPC message read in either direction: 16 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 << 20;

/// How many calls may wait at once for the person's answer, through the client or on the web
/// page; a hold past that is declined without asking, so a flood of held calls cannot grow memory
/// without bound.
pub(crate) const MAX_HELD_CALLS: usize = 16;

/// What `sc-mcp` needs besides the server command.
#[derive(Debug, Clone)]
pub struct McpOptions {
    pub policy: Policy,
    /// The clock decisions are made at, and `--taint-ttl`.
    pub timing: Timing,
    /// The agent every call is made in the name of.
    pub agent: String,
    /// Shown in the approver's prompt; the human enforces it.
    pub timeout: Option<Duration>,
    pub quiet: bool,
    pub max_message_bytes: usize,
    /// Which ways a held call may be put to the person.
    pub asking: Asking,
    /// With `--sandbox`: the server runs under sc-sandbox with these files, or does not start.
    pub sandbox: Option<SandboxDoor>,
    /// Where a `call` or `value` answer is kept as a grant: the crew's store, else this
    /// process's memory ([`crate::approve::remember`]).
    pub grants: Grants,
    /// `--notify CMD`: run whenever a held call is put to the person, on any surface
    /// ([`crate::approve::notify`]).
    pub notify: Option<Notifier>,
    /// With `--inbox`: every held call waits in this crew's inbox, answered by `sc-inbox`.
    pub inbox: Option<InboxAt>,
    /// How a hold is put to a 2026-07-28 client as the protocol's retry: the key its
    /// `requestState` is sealed with, the policy's digest, the state's lifetime.
    pub retries: Retries,
}

/// The crew's inbox a door puts its holds in (`--inbox`).
#[derive(Debug, Clone)]
pub struct InboxAt {
    pub state: crate::store::StateUrl,
    pub crew: String,
    /// Make each SQLite commit durable on disk.
    pub fsync: bool,
}

/// Which ways a held call may be put to the person. The first that applies is used
/// (see `ClientSide::surface`):
/// 1. `--answers` (or `--no-prompt`, which asks nobody and declines): [`Asking::OnlyTheHuman`];
/// 2. elicitation, when the client's `initialize` declared it (unless `--no-elicitation`);
/// 3. the web page, with `--web ADDR`;
/// 4. `/dev/tty`, and 5. declined when there is no terminal: the human given to [`run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// Only the human given to [`run`] is asked (the answers file, or nobody).
    OnlyTheHuman,
    /// Wherever the person is: through the client when it can ask (and `elicitation` is true),
    /// else on the web page served at `web` (a loopback address) when given, else the human given
    /// to [`run`] (the terminal).
    Wherever {
        elicitation: bool,
        web: Option<SocketAddr>,
    },
}

/// The default agent name: the server command's file name (`npx`, `mcp-server-filesystem`).
pub fn default_agent(command: &[OsString]) -> String {
    command
        .first()
        .and_then(|program| Path::new(program).file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "mcp-server".to_owned())
}

/// A human nobody can reach: every hold is declined without asking (`--no-prompt`).
pub struct NobodyHuman(pub String);

impl Human for NobodyHuman {
    fn ask(&mut self, _prompt: &str) -> Reply {
        Reply::NobodyToAsk(self.0.clone())
    }

    fn kind(&self) -> AnsweredBy {
        AnsweredBy::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_agent_is_the_command_name() {
        assert_eq!(
            default_agent(&["/usr/bin/mcp-server-x".into(), "--flag".into()]),
            "mcp-server-x"
        );
        assert_eq!(default_agent(&[]), "mcp-server");
    }
}
