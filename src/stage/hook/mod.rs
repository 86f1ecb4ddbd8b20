//! `sc-hook`: the gate as a Claude Code hook, for `PreToolUse` and `PostToolUse`.
//!
//! Claude Code runs the hook with one JSON object on stdin (`session_id`, `hook_event_name`,
//! `tool_name`, `tool_input`, `tool_use_id`, `cwd`, `permission_mode`, and `agent_id`/`agent_type`
//! inside a subagent; `tool_response` after the call). The input's `hook_event_name` says which
//! event it is; any other event is an error.
//!
//! **`PreToolUse`**, before each tool call: sc-hook decides and answers on stdout:
//! - deny → `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",…}}`;
//! - hold → the same with `"ask"`: Claude Code asks its user (the hook has no terminal);
//! - allow → nothing at all, so Claude Code's own permission rules still apply and the gate can
//!   only make things stricter;
//! - a `Bash` call the policy's `sandbox` key confines (`when`), and not denied → the answer
//!   carries `updatedInput`, the command run under sc-sandbox (short, `sc-sandbox --run ID --
//!   bash -c 'ORIGINAL'`, with a state folder to prepare the invocation in), with `allow` under
//!   `sandbox.approveConfined`, else `ask` (`allow` only in the `bypassPermissions` mode); where
//!   no sandbox can be made, the call is held ([`sandbox`]). The
//!   decision knows whether the call runs confined (a `commands` rule's `whenConfined` then
//!   decides it), and where the project is: the sandbox is rooted there, and where it applies
//!   its `readOnly` and `hidden` places bind the file tools, which it does not confine.
//!
//! **`PostToolUse`**, after a call ran, closes the loop in the audit log; it never writes to
//! stdout, except the warning below. The call is linked to its `PreToolUse` by `tool_use_id`
//! ([`ToolUses`], kept in the session's state):
//! - a call sc-hook held: Claude Code asked its user and the call ran, so the person said yes. An
//!   `approve` event (`"by":"claude-code"`) and an `exec` event are written under the gate
//!   event's id, and sc-report counts the hold as approved. The approval's reason names Claude
//!   Code's permission mode: some Claude Code versions have been reported to run an `ask` without
//!   asking in some modes (`bypassPermissions`, `auto`), and then the yes was Claude Code's;
//! - a call sc-hook allowed: the `exec` event;
//! - a call sc-hook denied that ran all the same (Claude Code should never run one): an `exec`
//!   event `executed` whose reason says the gate denied it, and a `systemMessage` warning for
//!   the user on stdout;
//! - a call sc-hook never saw (no `tool_use_id`, one this session's state does not know, or one
//!   seen for another tool): an `exec` event for an unknown call under a new id, with the call.
//!   An untrusted-output tool's run taints the session then, as it does when sc-hook denied it
//!   and it ran: its output reached the agent all the same.
//!
//! The `exec` event is `failed` when the tool's response is a JSON object with `isError: true`
//! (an MCP tool that reported an error, as sc-mcp reads it), else `executed`; the response itself
//! is not copied into the log. A second `PostToolUse` for a `tool_use_id` already recorded writes
//! nothing: the call ran once, and a hook registered twice must not count it twice. A held call
//! that never gets a `PostToolUse` (the person said no, or the tool failed) stays unanswered.
//!
//! Claude Code treats every exit status but 2 as "go ahead" (a crash, exit 1, a timeout), so every
//! error here (bad input, a policy that does not load, a state or audit failure, a panic) exits 2
//! with the reason on stderr, which Claude Code shows to the model instead of running the tool.
//! An input refused once the audit log is open, before its decision is in the log, is audited
//! as a denial ([`audit_refusal`]).
//!
//! Each hook run is a new process, so taint and budgets persist between runs in a state store
//! ([`crate::store`]; by default `state.sqlite` beside the audit log): one state per session, or,
//! with `--crew`, one for the whole crew across sessions. Each decision reads, decides and writes
//! the state in one atomic update, so concurrent hooks never lose one. A store that cannot be
//! read or written is an error (exit 2). The calls awaiting their `PostToolUse` ([`ToolUses`],
//! the session's call links) are kept per session in the same store, beside the state, and are
//! read, changed and written in one atomic update too ([`update_links`]), so two hooks of one
//! session (parallel tool calls) never lose a link; links that are not what sc-hook writes are
//! refused (exit 2), never read as none. A session id names a state and its links, so anything
//! but `[A-Za-z0-9._-]` in it is refused.

mod bounded;
pub mod contract;
mod fetch_host;
mod input;
pub mod install;
mod links;
mod output;
mod oversized;
mod parents;
mod post_tool_use;
mod pre_tool_use;
mod provenance;
mod refused;
mod resolved;
mod run;
mod sandbox;

pub use self::input::read_input;
pub use self::refused::audit_refusal;
pub use self::run::{run, run_translated, Handled};
pub use self::sandbox::{guarded_machinery, SandboxDoor};
use crate::rules::policy::Policy;
use crate::store::{StateUrl, Timing};

/// The agent name of Claude Code's main thread; a subagent is named by its `agent_type`.
pub const DEFAULT_AGENT: &str = "claude-code";

/// What `sc-hook` needs besides its input and the audit log.
#[derive(Debug, Clone)]
pub struct HookOptions {
    pub policy: Policy,
    /// The agent name of the main thread (`--agent`).
    pub agent: String,
    /// The state store (`--state`, by default `state.sqlite` beside the audit log).
    pub state: StateUrl,
    /// `--crew`: one state for the crew across sessions, instead of one per session.
    pub crew: Option<String>,
    /// The clock decisions are made at, and `--taint-ttl`.
    pub timing: Timing,
    /// Make the state store's commit durable on disk before answering.
    pub fsync: bool,
    /// The gate's own files, for a `Bash` call the policy's `sandbox` confines.
    pub sandbox: SandboxDoor,
    /// The kind of agent whose contract the input came by (`claude-code`, `codex`, …), named
    /// in the gate event (`agentKind`).
    pub agent_kind: &'static str,
}
