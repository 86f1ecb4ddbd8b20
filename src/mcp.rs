//! `sc-mcp`: the gate in front of an MCP server, as a stdio proxy.
//!
//! `sc-mcp [--policy F] [--audit F] [--agent NAME] -- SERVER_CMD ARGS…` spawns the server and
//! relays newline-delimited JSON-RPC both ways, byte for byte, except:
//! - every `tools/call` request from the client becomes a call (`agent` from `--agent`, `tool` =
//!   `params.name`, `args` = `params.arguments`, `source` = `agent`) and is decided by
//!   [`crate::decision::evaluate_with_state`], with the session's [`CrewState`] updated after each
//!   decision (this process's own, or with `--crew` the crew's in a shared [`crate::store`]; a
//!   store that fails denies the call). An
//!   allowed call is forwarded; a denied one is answered by sc-mcp itself with the same `id` and a
//!   tool result with `isError: true`, and never reaches the server; a held one is put to the
//!   person (the approver's own code, [`crate::approve`]) and, unless approved, is answered like
//!   a deny. The person is asked, first that applies: by `--answers`; through the client, when
//!   its `initialize` declared elicitation ([`crate::approve::elicitation`]; not with
//!   `--no-elicitation`); on the web page, with `--web` ([`crate::approve::web`]); on /dev/tty;
//!   else nobody is asked and the call is declined;
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
//! A card on the page shows the verdict record sc-mcp makes of the call,
//! `{"id":…,"call":{…},"decision":"hold","reasons":[…],"agentState":{…}}` ([`Verdict`]), and an
//! answer there is bound to that line's SHA-256, which the `approve` event carries. The call's
//! `gate` event repeats the line's members after `id` byte for byte (then the chain's `seq` and
//! `prev`), so the line and its digest can be rebuilt from the log.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, PipeReader, PipeWriter, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use indexmap::IndexSet;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Map, Value};

use crate::approve::elicitation::{self, Questions};
use crate::approve::web::{self, WebApprovals};
use crate::approve::{approval_for, render_prompt, Hold, Human, Reply};
use crate::audit::{self, AuditLog, IdMinter, Stage};
use crate::call::Call;
use crate::decision::{Decision, Judgement};
use crate::jsonl::{self, JsonLine, Line, LineReader};
use crate::policy::Policy;
use crate::record::{AnsweredBy, Approval, Outcome, Status};
use crate::rules::provenance::ResultRecord;
use crate::sanitize::for_terminal;
use crate::state::{AgentState, CrewState};
use crate::store::{Owner, StateHandle, Timing};
use crate::strict_json;

/// The longest JSON-RPC message read in either direction: 16 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 << 20;
/// A tool result up to this size is kept in its `exec` event; a larger one is described.
const RESULT_IN_AUDIT_BYTES: usize = 16 * 1024;
/// How long the server has to exit after the client closed its input, before SIGTERM, and again
/// before SIGKILL.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The largest integer id accepted: 2^53 − 1, JavaScript's `Number.MAX_SAFE_INTEGER`. A larger
/// one would come back from a JavaScript server rounded, as the id of another request or of none.
pub const MAX_EXACT_ID: u64 = (1 << 53) - 1;
/// How many cancelled requests are remembered, so a late answer to one is dropped and its id is
/// not reused while the server may still answer it; past that, the oldest is forgotten (a late
/// answer to it is then dropped as an answer to nothing).
const CANCELLED_REMEMBERED: usize = 4096;
/// How many calls may wait at once for the person's answer, through the client or on the web
/// page; a hold past that is declined without asking, so a flood of held calls cannot grow memory
/// without bound.
pub const MAX_HELD_CALLS: usize = 16;

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;

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

// ---------------------------------------------------------------------------------------------
// Messages from the client

/// What a client message is, as far as the gate is concerned.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientMessage<'a> {
    /// Never forwarded. Answered with a JSON-RPC error for each id (as an array for a batch).
    Refused {
        ids: Vec<Value>,
        batch: bool,
        code: i64,
        reason: String,
    },
    /// A well-formed `tools/call` request: to be decided.
    ToolCall {
        id: RequestId,
        name: String,
        arguments: Map<String, Value>,
        /// The message's text, for the exact text of `arguments.amount`.
        text: &'a str,
    },
    /// Any other request: forwarded and awaited.
    Request { id: RequestId, method: String },
    /// A notification: forwarded. `cancels` is the request id of `notifications/cancelled`.
    Notification { cancels: Option<IdKey> },
    /// A response to a request of the server's (or anything without a method): forwarded.
    Response,
    /// A response to one of sc-mcp's own requests (an id that starts with
    /// [`elicitation::ID_PREFIX`]): read by sc-mcp, never forwarded.
    OwnAnswer {
        id: String,
        answer: Map<String, Value>,
    },
}

/// A JSON-RPC id that can be answered: a string or a number.
fn answerable(id: Option<&Value>) -> Option<Value> {
    match id? {
        id @ (Value::String(_) | Value::Number(_)) => Some(id.clone()),
        _ => None,
    }
}

/// The id to answer a refused request with: its own when it is a string or a number, else null
/// (JSON-RPC's id for a request whose id could not be read).
fn echo_id(id: &Value) -> Value {
    answerable(Some(id)).unwrap_or(Value::Null)
}

/// A request id as sc-mcp compares ids: by value, never by text. A string never equals a number
/// (`"2"` is not `2`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IdKey {
    Integer(i64),
    String(String),
}

impl IdKey {
    /// The id of a request from the client: a string, or an integer written as one (no fraction,
    /// no exponent, not `-0`) within ±[`MAX_EXACT_ID`]. Anything else is refused with the reason:
    /// `2.0` or `1e0` is read as `2` or `1` by a JavaScript server, which answers with that, and a
    /// larger integer comes back rounded, so the answer could not be told apart.
    pub fn of_request(id: &Value) -> Result<IdKey, String> {
        match id {
            Value::String(text) => Ok(IdKey::String(text.clone())),
            Value::Number(number) if number.is_i64() || number.is_u64() => {
                match number.as_i64() {
                    Some(integer) if integer.unsigned_abs() <= MAX_EXACT_ID => {
                        Ok(IdKey::Integer(integer))
                    }
                    _ => Err(format!(
                        "a request's `id` must be a string or an integer from -{MAX_EXACT_ID} to {MAX_EXACT_ID} (which every JSON reader holds exactly), not {number}"
                    )),
                }
            }
            Value::Number(number) => Err(format!(
                "a request's `id` must be a string or an integer written as one, not {number} (a fraction, an exponent or -0, which a server may read as another integer and answer with it)"
            )),
            other => Err(format!(
                "a request's `id` must be a string or an integer, not {}",
                strict_json::type_name(other)
            )),
        }
    }

    /// The key of an id that names a request (in a server's answer, in a cancellation): a number
    /// by its value, as JavaScript and Python read it, so `2.0` and `1e0` name `2` and `1`. `None`
    /// when it can name no request the client was let send.
    pub fn of_reference(id: &Value) -> Option<IdKey> {
        match id {
            Value::String(text) => Some(IdKey::String(text.clone())),
            Value::Number(number) => {
                if let Some(integer) = number.as_i64() {
                    (integer.unsigned_abs() <= MAX_EXACT_ID).then_some(IdKey::Integer(integer))
                } else if number.is_u64() {
                    None
                } else {
                    let float = number.as_f64()?;
                    // Exact both ways: every integer up to 2^53 is a float.
                    let exact = float.fract() == 0.0 && float.abs() <= MAX_EXACT_ID as f64;
                    exact.then_some(IdKey::Integer(float as i64))
                }
            }
            _ => None,
        }
    }
}

/// A client request's id: as the client wrote it (to answer with), and as it is compared.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestId {
    pub value: Value,
    pub key: IdKey,
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}

/// Reads one client message. Parsing is strict (duplicate keys refused at any depth), so the
/// server never reads a message differently from the gate.
pub fn classify_client_message(bytes: &[u8]) -> ClientMessage<'_> {
    let refused = |ids: Vec<Value>, code, reason: String| ClientMessage::Refused {
        ids,
        batch: false,
        code,
        reason,
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n')),
        Err(err) => {
            return refused(
                Vec::new(),
                PARSE_ERROR,
                format!(
                    "the message is not valid UTF-8 (bad byte at offset {})",
                    err.valid_up_to()
                ),
            )
        }
    };
    let value = match strict_json::parse(text) {
        Ok(value) => value,
        Err(err) => {
            // Only to answer it: a message we cannot read strictly is never acted on.
            let id = serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|lenient| answerable(lenient.get("id")));
            return refused(
                id.into_iter().collect(),
                PARSE_ERROR,
                format!("the message is not valid JSON: {err}"),
            );
        }
    };
    let object = match value {
        Value::Object(object) => object,
        Value::Array(items) => {
            return ClientMessage::Refused {
                ids: items
                    .iter()
                    .filter_map(|item| answerable(item.get("id")))
                    .collect(),
                batch: true,
                code: INVALID_REQUEST,
                reason: "JSON-RPC batches are not relayed: send each message on its own line"
                    .to_owned(),
            }
        }
        other => {
            return refused(
                Vec::new(),
                INVALID_REQUEST,
                format!(
                    "the message is {}, not a JSON-RPC object",
                    strict_json::type_name(&other)
                ),
            )
        }
    };
    if !object.contains_key("method") {
        let own = object
            .get("id")
            .filter(|id| elicitation::is_own_id(id))
            .and_then(Value::as_str)
            .map(str::to_owned);
        return match own {
            Some(id) => ClientMessage::OwnAnswer { id, answer: object },
            None => ClientMessage::Response,
        };
    }
    let id_field = object.get("id");
    let echo = || id_field.map(echo_id).into_iter().collect::<Vec<_>>();
    let method = match object.get("method") {
        None => return ClientMessage::Response,
        Some(Value::String(method)) => method,
        Some(other) => {
            return refused(
                echo(),
                INVALID_REQUEST,
                format!(
                    "`method` must be a string, not {}",
                    strict_json::type_name(other)
                ),
            )
        }
    };
    // Read as a request by one reader and as an answer by another.
    if let Some(key) = ["result", "error"]
        .into_iter()
        .find(|key| object.contains_key(*key))
    {
        return refused(
            echo(),
            INVALID_REQUEST,
            format!("a message with a `method` is a request or a notification, so it cannot carry `{key}` as an answer does"),
        );
    }
    let id = match id_field.map(|value| IdKey::of_request(value).map(|key| (value, key))) {
        None => None,
        Some(Ok((value, key))) => Some(RequestId {
            value: value.clone(),
            key,
        }),
        Some(Err(reason)) => return refused(echo(), INVALID_REQUEST, reason),
    };
    if id.is_some() && method.starts_with("notifications/") {
        return refused(
            echo(),
            INVALID_REQUEST,
            format!("`{method}` is a notification, which never carries an `id`: with one, some servers read it as a request and others act on it as a notification"),
        );
    }
    if method != "tools/call" {
        return match id {
            Some(id) => ClientMessage::Request {
                id,
                method: method.clone(),
            },
            None => ClientMessage::Notification {
                cancels: (method == "notifications/cancelled")
                    .then(|| IdKey::of_reference(object.get("params")?.get("requestId")?))
                    .flatten(),
            },
        };
    }
    let Some(id) = id else {
        return refused(
            Vec::new(),
            INVALID_REQUEST,
            "a tools/call without an `id` is a notification, and a tool call is never sent as one"
                .to_owned(),
        );
    };
    let invalid = |reason: String| refused(vec![id.value.clone()], INVALID_PARAMS, reason);
    let params = match object.get("params") {
        Some(Value::Object(params)) => params,
        Some(other) => {
            return invalid(format!(
                "tools/call `params` must be an object, not {}",
                strict_json::type_name(other)
            ))
        }
        None => return invalid("tools/call has no `params`".to_owned()),
    };
    let name = match params.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        Some(Value::String(_)) => return invalid("tools/call `params.name` is empty".to_owned()),
        Some(other) => {
            return invalid(format!(
                "tools/call `params.name` must be a string, not {}",
                strict_json::type_name(other)
            ))
        }
        None => return invalid("tools/call has no `params.name`".to_owned()),
    };
    let arguments = match params.get("arguments") {
        None => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(other) => {
            return invalid(format!(
                "tools/call `params.arguments` must be an object, not {}",
                strict_json::type_name(other)
            ))
        }
    };
    ClientMessage::ToolCall {
        id,
        name,
        arguments,
        text,
    }
}

// ---------------------------------------------------------------------------------------------
// Responses sc-mcp writes itself

/// A JSON-RPC error response.
pub fn error_response(id: &Value, code: i64, message: &str) -> Vec<u8> {
    JsonLine::new()
        .field("jsonrpc", "2.0")
        .field("id", id)
        .field("error", &json!({"code": code, "message": message}))
        .finish()
}

/// A tool result that refuses the call: the model reads `text` and `isError: true`.
pub fn refusal_response(id: &Value, text: &str) -> Vec<u8> {
    JsonLine::new()
        .field("jsonrpc", "2.0")
        .field("id", id)
        .field(
            "result",
            &json!({"content": [{"type": "text", "text": text}], "isError": true}),
        )
        .finish()
}

/// The verdict record sc-mcp makes of a well-formed call, as sc-gate writes one, with the agent's
/// state after the call: `{"id":…,"call":{…},"decision":…,"reasons":[…],"agentState":{…}}`.
/// The web page shows it and binds an answer to its SHA-256; the call's `gate` event repeats its
/// members after `id` byte for byte.
#[derive(Debug)]
pub struct Verdict {
    /// The line, without a newline.
    pub line: Vec<u8>,
    /// Where the members after `id` start.
    after_id: usize,
}

impl Verdict {
    pub fn new(
        call_id: &str,
        call: &Value,
        judgement: &Judgement,
        state: Option<&AgentState>,
    ) -> Verdict {
        let line = JsonLine::new().str_field("id", call_id);
        // Past the comma that the next member brings.
        let after_id = line.len() + 1;
        let mut line = line
            .field("call", call)
            .str_field("decision", judgement.decision.as_str())
            .strs_field("reasons", &judgement.reasons);
        if let Some(state) = state {
            line = line.field("agentState", state);
        }
        let mut line = line.finish();
        line.pop();
        Verdict { line, after_id }
    }

    /// `"call":…,"decision":…,"reasons":[…]` and `"agentState":…` when it has one.
    pub fn members(&self) -> &[u8] {
        &self.line[self.after_id..self.line.len() - 1]
    }
}

/// Removes from a `tools/list` result every tool the agent may never call: denied tools, tools
/// outside its allowlist, and entries without a string name. Returns the names removed.
pub fn hide_denied_tools(result: &mut Value, policy: &Policy, agent: &str) -> Vec<String> {
    let Some(Value::Array(tools)) = result.get_mut("tools") else {
        return Vec::new();
    };
    let allowed = policy.allowed_tools(agent);
    let mut hidden = Vec::new();
    tools.retain(|tool| {
        let visible = match tool.get("name") {
            Some(Value::String(name)) => {
                let denied =
                    policy.is_denied(name) || allowed.is_some_and(|list| !list.matches(name));
                if denied {
                    hidden.push(name.clone());
                }
                !denied
            }
            _ => {
                hidden.push("(a tool without a name)".to_owned());
                false
            }
        };
        visible
    });
    hidden
}

/// What a tool call's answer from the server says happened.
fn outcome_of_answer(answer: &Map<String, Value>, ticket: &Ticket) -> Outcome {
    let approved = match &ticket.approval {
        Some(approval) => format!(" ({})", approval.reason),
        None => String::new(),
    };
    let (status, result, reason) = if let Some(error) = answer.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message");
        (
            Status::Failed,
            error.clone(),
            format!(
                "the MCP server answered {} with an error: {message}",
                ticket.tool
            ),
        )
    } else if let Some(result) = answer.get("result") {
        if result.get("isError") == Some(&Value::Bool(true)) {
            (
                Status::Failed,
                result.clone(),
                format!(
                    "{} ran on the MCP server and reported an error{approved}",
                    ticket.tool
                ),
            )
        } else {
            (
                Status::Executed,
                result.clone(),
                format!("ran {} on the MCP server{approved}", ticket.tool),
            )
        }
    } else {
        return Outcome {
            status: Status::Failed,
            result: None,
            reason: format!(
                "the MCP server's answer to {} has neither `result` nor `error`",
                ticket.tool
            ),
        };
    };
    let size = serde_json::to_vec(&result).map_or(usize::MAX, |bytes| bytes.len());
    if size <= RESULT_IN_AUDIT_BYTES {
        Outcome {
            status,
            result: Some(result),
            reason,
        }
    } else {
        Outcome {
            status,
            result: None,
            reason: format!("{reason} (the result, {size} bytes, is not kept in the audit log)"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The session shared by the two threads

/// A tool call on its way to the server.
#[derive(Debug, Clone)]
struct Ticket {
    /// The call's id in the audit log.
    call_id: String,
    agent: String,
    tool: String,
    /// The decision acted on: allow, or an approved hold.
    decision: Decision,
    approval: Option<Approval>,
}

#[derive(Debug)]
enum Awaiting {
    ToolsList,
    ToolCall(Ticket),
    Other(String),
}

impl Awaiting {
    fn method(&self) -> &str {
        match self {
            Awaiting::ToolsList => "tools/list",
            Awaiting::ToolCall(_) => "tools/call",
            Awaiting::Other(method) => method,
        }
    }
}

#[derive(Debug)]
struct PendingRequest {
    id: RequestId,
    awaiting: Awaiting,
}

/// Where a held call waits for the person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Asked {
    /// Through the client: sc-mcp's own request id for the question (`sc-mcp-elicit-N`).
    Client(String),
    /// On the web page: its card.
    Page(web::Ticket),
}

/// A held call's key among those waiting: its question's id, or its card's number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum HoldKey {
    Question(String),
    Card(u64),
}

impl Asked {
    fn key(&self) -> HoldKey {
        match self {
            Asked::Client(question) => HoldKey::Question(question.clone()),
            Asked::Page(card) => HoldKey::Card(card.id()),
        }
    }

    /// The approval of a call settled here without the person's answer: the timeout, a
    /// cancellation, the end of the session.
    fn declined(&self, reason: impl Into<String>) -> Approval {
        Approval {
            approved: false,
            by: match self {
                Asked::Client(_) => AnsweredBy::Elicitation,
                Asked::Page(_) => AnsweredBy::Web,
            },
            answer: None,
            reason: reason.into(),
            digest: None,
        }
    }
}

/// A held call put to the person through the client or on the web page, waiting for the answer.
#[derive(Debug)]
struct HeldCall {
    /// Where it was put to the person.
    asked: Asked,
    /// The client's `tools/call` id.
    id: RequestId,
    ticket: Ticket,
    /// Why the gate held it.
    reasons: Vec<String>,
    /// The client's message, forwarded as it came if the person approves.
    bytes: Vec<u8>,
    /// When no answer through the client declines it; `None` waits forever (`--timeout 0`),
    /// or for the page, which expires its cards itself.
    deadline: Option<Instant>,
}

#[derive(Debug, Default)]
struct Pending {
    /// Whether the server can still answer; once false, no request is forwarded.
    server_reading: bool,
    requests: HashMap<IdKey, PendingRequest>,
    /// Requests the client cancelled, oldest first: the server may still answer them.
    cancelled: IndexSet<IdKey>,
    /// Calls waiting for the person's answer, through the client or on the page.
    held: HashMap<HoldKey, HeldCall>,
    /// The same calls' client ids, each to its key.
    held_ids: HashMap<IdKey, HoldKey>,
    /// The session is ending: no call is held any more, and the timer stops.
    holds_closed: bool,
}

/// What an answer from the server answers. Returned and taken apart at once, so its size is no
/// matter.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Answered {
    /// A request the client is waiting on, now answered.
    Waiting(PendingRequest),
    /// A request the client cancelled.
    Cancelled,
    /// Nothing: an id never sent, one already answered, or no id sc-mcp could have let through.
    Nothing,
}

impl Pending {
    /// Why a new request may not use this id, if it may not.
    fn in_use(&self, key: &IdKey) -> Option<&'static str> {
        if self.requests.contains_key(key) {
            Some("a request still waiting for an answer")
        } else if self.held_ids.contains_key(key) {
            Some("a call still waiting for the person's answer")
        } else if self.cancelled.contains(key) {
            Some("a request the client cancelled, which the MCP server may still answer")
        } else {
            None
        }
    }

    /// Takes the request an answer with this id answers.
    fn take(&mut self, key: Option<&IdKey>) -> Answered {
        let Some(key) = key else {
            return Answered::Nothing;
        };
        if let Some(request) = self.requests.remove(key) {
            Answered::Waiting(request)
        } else if self.cancelled.shift_remove(key) {
            Answered::Cancelled
        } else {
            Answered::Nothing
        }
    }

    fn hold(&mut self, call: HeldCall) {
        let key = call.asked.key();
        self.held_ids.insert(call.id.key.clone(), key.clone());
        self.held.insert(key, call);
    }

    /// Takes the held call that the question with this id, or the card with this number, is
    /// about.
    fn take_held(&mut self, key: &HoldKey) -> Option<HeldCall> {
        let call = self.held.remove(key)?;
        self.held_ids.remove(&call.id.key);
        Some(call)
    }

    /// Takes the held call with this client id.
    fn take_held_call(&mut self, key: &IdKey) -> Option<HeldCall> {
        let held = self.held_ids.get(key)?.clone();
        self.take_held(&held)
    }

    /// Takes every held call whose deadline has passed.
    fn take_overdue(&mut self, now: Instant) -> Vec<HeldCall> {
        let overdue: Vec<HoldKey> = self
            .held
            .values()
            .filter(|call| call.deadline.is_some_and(|deadline| deadline <= now))
            .map(|call| call.asked.key())
            .collect();
        overdue
            .iter()
            .filter_map(|key| self.take_held(key))
            .collect()
    }

    /// The cards of the calls waiting on the web page.
    fn cards(&self) -> Vec<web::Ticket> {
        self.held
            .values()
            .filter_map(|call| match call.asked {
                Asked::Page(card) => Some(card),
                Asked::Client(_) => None,
            })
            .collect()
    }

    /// The client cancelled the request with this id: it is not awaited any more, and a late
    /// answer to it is dropped.
    fn cancel(&mut self, key: &IdKey) -> Option<PendingRequest> {
        let request = self.requests.remove(key)?;
        if self.cancelled.len() >= CANCELLED_REMEMBERED {
            self.cancelled.shift_remove_index(0);
        }
        self.cancelled.insert(key.clone());
        Some(request)
    }
}

/// How the session ended, beyond the server's own status.
#[derive(Debug, Default)]
struct Ending {
    /// The first error that stopped the session (the audit log could not be written).
    fatal: Option<anyhow::Error>,
    /// The client's output went away.
    client_gone: bool,
    /// Requests answered with an error because the server ended first.
    failed_requests: usize,
}

struct Session {
    policy: Policy,
    agent: String,
    quiet: bool,
    audit: Mutex<AuditLog>,
    client: Mutex<Box<dyn Write + Send>>,
    /// The server's input, written by the calling thread and by the thread that settles the
    /// page's answers; `None` once it cannot be written (or is closed at the end).
    server: Mutex<Option<ChildStdin>>,
    pending: Mutex<Pending>,
    /// Signalled when a call is held or the session ends, for the thread that declines what
    /// nobody answered in time.
    holds_changed: Condvar,
    /// `--timeout`: how long a held call waits for the person.
    hold_timeout: Option<Duration>,
    ending: Mutex<Ending>,
    /// Written to when the server's side has ended, to wake the client reader.
    wake: Mutex<Option<PipeWriter>>,
    server_pid: Pid,
    killed_by_us: AtomicBool,
    /// What untrusted-output tools answered, queued by the server's reader before the answer
    /// leaves for the client, and taken into the state before the next call is decided (value
    /// provenance).
    taken: Mutex<Vec<ResultRecord>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere ends the process (see the binaries), so a poisoned lock's data is as good
    // as any.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Session {
    fn narrate(&self, text: &str) {
        if !self.quiet {
            let _ = writeln!(io::stderr().lock(), "{text}");
        }
    }

    fn warn(&self, text: &str) {
        let _ = writeln!(io::stderr().lock(), "sc-mcp: {text}");
    }

    /// Appends one event; a failure stops the session.
    fn audit(&self, event: &[u8]) -> Result<()> {
        let result = lock(&self.audit).append(event);
        if let Err(err) = &result {
            self.stop(anyhow!("{err:#}"));
        }
        result
    }

    /// Writes one message to the client. A client that went away ends the session quietly.
    fn to_client(&self, message: &[u8]) {
        let mut client = lock(&self.client);
        let written = client.write_all(message).and_then(|()| client.flush());
        drop(client);
        if written.is_err() {
            lock(&self.ending).client_gone = true;
            self.terminate_server();
        }
    }

    /// Stops the session for good: records the first fatal error and ends the server.
    fn stop(&self, err: anyhow::Error) {
        let mut ending = lock(&self.ending);
        if ending.fatal.is_none() {
            ending.fatal = Some(err);
        }
        drop(ending);
        self.terminate_server();
    }

    fn is_stopping(&self) -> bool {
        let ending = lock(&self.ending);
        ending.fatal.is_some() || ending.client_gone
    }

    fn terminate_server(&self) {
        self.killed_by_us.store(true, Ordering::SeqCst);
        // The server is reaped only after its output ended and this thread's kin are done, so
        // the pid still names it.
        let _ = kill(self.server_pid, Signal::SIGTERM);
    }

    /// Audits a tool call's `exec` event.
    fn audit_outcome(&self, ticket: &Ticket, outcome: &Outcome) -> Result<()> {
        let event = audit::event(Stage::Exec, &ticket.call_id)
            .field("agent", &ticket.agent)
            .field("tool", &ticket.tool)
            .field("decision", &ticket.decision)
            .field("outcome", outcome)
            .finish();
        self.audit(&event)?;
        self.narrate(&format!(
            "sc-mcp: {} → {}: {}: {}",
            for_terminal(&ticket.agent),
            for_terminal(&ticket.tool),
            outcome.status.as_str(),
            for_terminal(&outcome.reason)
        ));
        Ok(())
    }

    /// Answers a request the server will never answer: a JSON-RPC error, and for a tool call an
    /// `exec` event saying it failed.
    fn fail_request(&self, request: PendingRequest, why: &str) {
        if let Awaiting::ToolCall(ticket) = &request.awaiting {
            let outcome = Outcome {
                status: Status::Failed,
                result: None,
                reason: why.to_owned(),
            };
            if self.audit_outcome(ticket, &outcome).is_err() {
                // Already stopping; the client still learns the call did not complete.
            }
        }
        self.to_client(&error_response(
            &request.id.value,
            INTERNAL_ERROR,
            &format!("sc-mcp: {why} ({})", request.awaiting.method()),
        ));
    }

    /// Forwards a request to the server and awaits its answer, unless the server is gone.
    fn forward_request(&self, bytes: &[u8], request: PendingRequest) -> Result<()> {
        let key = request.id.key.clone();
        // Held while the line is written, so requests reach the server in the order they were
        // awaited; the pending requests are locked only inside it, never the other way round.
        let mut server = lock(&self.server);
        let mut pending = lock(&self.pending);
        if !pending.server_reading || server.is_none() {
            drop(pending);
            drop(server);
            self.fail_request(
                request,
                "the MCP server has exited, so the request was not sent",
            );
            return Ok(());
        }
        pending.requests.insert(key.clone(), request);
        drop(pending);
        if let Err(err) = write_line(&mut server, bytes) {
            *server = None;
            drop(server);
            if let Some(request) = lock(&self.pending).requests.remove(&key) {
                self.fail_request(
                    request,
                    &format!("the request could not be sent to the MCP server: {err}"),
                );
            }
        }
        Ok(())
    }

    /// Forwards a message that awaits no answer.
    fn forward(&self, bytes: &[u8]) {
        let mut server = lock(&self.server);
        if let Err(err) = write_line(&mut server, bytes) {
            if server.take().is_some() {
                drop(server);
                self.warn(&format!("cannot write to the MCP server: {err}"));
            }
        }
    }

    /// Acts on the person's answer to a held call: audits it, then forwards the call as it came
    /// if approved, or answers it with a refusal.
    fn settle(
        &self,
        id: RequestId,
        bytes: &[u8],
        mut ticket: Ticket,
        reasons: &[String],
        approval: Approval,
    ) -> Result<()> {
        if !approval.approved {
            return self.decline_held(&id.value, &ticket, reasons, &approval, true);
        }
        if let Err(err) = self.audit_approval(&ticket, &approval) {
            self.answer_audit_failure(&id.value);
            return Err(err);
        }
        ticket.approval = Some(approval);
        if self.is_stopping() {
            return Ok(());
        }
        self.forward_request(
            bytes,
            PendingRequest {
                id,
                awaiting: Awaiting::ToolCall(ticket),
            },
        )
    }

    /// Why a new request may not use this id, if it may not.
    fn id_in_use(&self, id: &RequestId) -> Option<&'static str> {
        lock(&self.pending).in_use(&id.key)
    }

    /// Audits the person's answer to a held call (the `approve` event) and narrates it.
    fn audit_approval(&self, ticket: &Ticket, approval: &Approval) -> Result<()> {
        let event = audit::event(Stage::Approve, &ticket.call_id)
            .field("agent", &ticket.agent)
            .field("tool", &ticket.tool)
            .field("approval", approval)
            .finish();
        self.audit(&event)?;
        self.narrate(&format!(
            "sc-mcp: {} → {}: {}",
            for_terminal(&ticket.agent),
            for_terminal(&ticket.tool),
            for_terminal(&approval.reason)
        ));
        Ok(())
    }

    /// Settles a held call the person did not approve: audits the approval and that the call was
    /// skipped, and answers the client's `tools/call` with a refusal (`answer`), unless the client
    /// cancelled it and awaits no answer.
    fn decline_held(
        &self,
        id: &Value,
        ticket: &Ticket,
        reasons: &[String],
        approval: &Approval,
        answer: bool,
    ) -> Result<()> {
        if let Err(err) = self.audit_approval(ticket, approval) {
            if answer {
                self.answer_audit_failure(id);
            }
            return Err(err);
        }
        if answer {
            return self.refuse_call(id, ticket, reasons, Some(approval));
        }
        self.audit_outcome(
            ticket,
            &Outcome {
                status: Status::Skipped,
                result: None,
                reason: format!(
                    "not run: held ({}) and {}",
                    reasons.join("; "),
                    approval.reason
                ),
            },
        )
    }

    /// Declines a held call nobody answered in time, and tells the client to close the question.
    fn expire(&self, call: HeldCall) {
        let after = self.hold_timeout.unwrap_or_default().as_secs();
        let reason = format!("declined: no answer within {after} seconds");
        if let Asked::Client(question) = &call.asked {
            self.to_client(&elicitation::cancellation(question, &reason));
        }
        // An audit failure has stopped the session already.
        let _ = self.decline_held(
            &call.id.value,
            &call.ticket,
            &call.reasons,
            &call.asked.declined(reason),
            true,
        );
    }

    /// Answers a denied or declined call itself: it never reaches the server.
    fn refuse_call(
        &self,
        id: &Value,
        ticket: &Ticket,
        reasons: &[String],
        approval: Option<&Approval>,
    ) -> Result<()> {
        let reasons = reasons.join("; ");
        let (reason, text) = match approval {
            None => (
                format!("not run: denied ({reasons})"),
                format!(
                    "Skeleton Crew denied this call to {}: {reasons}",
                    ticket.tool
                ),
            ),
            Some(approval) => (
                format!("not run: held ({reasons}) and {}", approval.reason),
                format!(
                    "Skeleton Crew held this call to {} for a person ({reasons}), and it was {}",
                    ticket.tool, approval.reason
                ),
            ),
        };
        let outcome = Outcome {
            status: Status::Skipped,
            result: None,
            reason,
        };
        if let Err(err) = self.audit_outcome(ticket, &outcome) {
            self.answer_audit_failure(id);
            return Err(err);
        }
        self.to_client(&refusal_response(id, &text));
        Ok(())
    }

    fn answer_audit_failure(&self, id: &Value) {
        self.to_client(&error_response(
            id,
            INTERNAL_ERROR,
            "sc-mcp: the audit log cannot be written, so the call was not run; sc-mcp is stopping",
        ));
    }
}

/// The thread that declines held calls nobody answered within `--timeout`: it waits for the
/// earliest deadline (or for a new hold), and ends with the session.
fn expire_holds(session: &Session) {
    let mut pending = lock(&session.pending);
    loop {
        if pending.holds_closed {
            return;
        }
        let now = Instant::now();
        let overdue = pending.take_overdue(now);
        if !overdue.is_empty() {
            drop(pending);
            for call in overdue {
                session.expire(call);
            }
            pending = lock(&session.pending);
            continue;
        }
        let next = pending.held.values().filter_map(|call| call.deadline).min();
        pending = match next {
            Some(deadline) => {
                session
                    .holds_changed
                    .wait_timeout(pending, deadline.saturating_duration_since(now))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => session
                .holds_changed
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner),
        };
    }
}

/// What wakes the thread that settles the calls held on the web page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageEvent {
    /// A card was answered or expired on the page, or one was put there: look again.
    Changed,
    /// The session is ending.
    End,
}

/// The web page and what tells its thread that something changed.
struct Page {
    web: Arc<WebApprovals>,
    wake: Sender<PageEvent>,
}

/// The thread that settles the calls held on the web page: each answered card's call is audited
/// and forwarded (or refused), and a card nobody answered is declined when its time is up (the
/// page expires it when asked after that). Ends with the session.
fn settle_page_holds(session: &Session, web: &WebApprovals, events: &Receiver<PageEvent>) {
    loop {
        let cards = lock(&session.pending).cards();
        let mut next: Option<Instant> = None;
        for card in cards {
            let Some(reply) = web.poll(card) else {
                next = match (next, card.expires()) {
                    (Some(next), Some(at)) => Some(next.min(at)),
                    (next, at) => next.or(at),
                };
                continue;
            };
            // Taken by now if the client cancelled the call or the session ended: then the
            // person's answer comes too late to act on.
            let held = lock(&session.pending).take_held(&HoldKey::Card(card.id()));
            if let Some(call) = held {
                let approval = approval_for(reply, AnsweredBy::Web);
                if session
                    .settle(call.id, &call.bytes, call.ticket, &call.reasons, approval)
                    .is_err()
                {
                    // The audit log cannot be written: the session is stopping.
                    return;
                }
            }
        }
        let event = match next {
            Some(at) => match events.recv_timeout(at.saturating_duration_since(Instant::now())) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => PageEvent::Changed,
                Err(RecvTimeoutError::Disconnected) => PageEvent::End,
            },
            None => events.recv().unwrap_or(PageEvent::End),
        };
        if event == PageEvent::End {
            return;
        }
    }
}

fn write_line(server: &mut Option<ChildStdin>, bytes: &[u8]) -> io::Result<()> {
    let stdin = server
        .as_mut()
        .ok_or_else(|| io::Error::from(io::ErrorKind::BrokenPipe))?;
    stdin.write_all(bytes)?;
    stdin.write_all(b"\n")?;
    stdin.flush()
}

// ---------------------------------------------------------------------------------------------
// Client → server (the calling thread)

struct ClientSide<'a> {
    session: &'a Session,
    human: &'a mut dyn Human,
    timeout: Option<Duration>,
    asking: Asking,
    /// Whether the client's `initialize` declared elicitation in form mode.
    client_elicits: bool,
    questions: Questions,
    /// The web page, with `--web`.
    page: Option<Page>,
    state: StateHandle,
    timing: Timing,
    ids: IdMinter,
}

/// A way of putting a held call to the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Surface {
    /// The human given to [`run`]: the answers file, nobody (`--no-prompt`), or the terminal
    /// (which declines when there is none).
    Human,
    /// The person, through the client (`elicitation/create`).
    Elicitation,
    /// The person, on the web page (`--web`).
    Page,
}

impl ClientSide<'_> {
    /// Which way a held call is put to the person: the first that applies.
    fn surface(&self) -> Surface {
        match self.asking {
            // 1. `--answers`; `--no-prompt` asks nobody and declines everything.
            Asking::OnlyTheHuman => Surface::Human,
            // 2. Elicitation, when the client declared it (unless `--no-elicitation`).
            Asking::Wherever {
                elicitation: true, ..
            } if self.client_elicits => Surface::Elicitation,
            // 3. The web page, with `--web`.
            Asking::Wherever { .. } if self.page.is_some() => Surface::Page,
            // 4. /dev/tty; 5. declined when there is no terminal to ask.
            Asking::Wherever { .. } => Surface::Human,
        }
    }

    fn handle(&mut self, bytes: &[u8]) -> Result<()> {
        match classify_client_message(bytes) {
            ClientMessage::Refused {
                ids,
                batch,
                code,
                reason,
            } => self.refuse(bytes, &ids, batch, code, &reason),
            ClientMessage::ToolCall {
                id,
                name,
                arguments,
                text,
            } => self.tool_call(bytes, id, name, arguments, text),
            ClientMessage::Request { id, method } => {
                if let Some(user) = self.session.id_in_use(&id) {
                    self.session.to_client(&error_response(
                        &id.value,
                        INVALID_REQUEST,
                        &format!("sc-mcp: the request id {id} is already in use by {user}"),
                    ));
                    return Ok(());
                }
                if method == "initialize" {
                    self.read_capabilities(bytes);
                }
                let awaiting = if method == "tools/list" {
                    Awaiting::ToolsList
                } else {
                    Awaiting::Other(method)
                };
                self.session
                    .forward_request(bytes, PendingRequest { id, awaiting })
            }
            ClientMessage::Notification { cancels } => {
                if let Some(cancelled) = cancels {
                    let held = lock(&self.session.pending).take_held_call(&cancelled);
                    if let Some(call) = held {
                        // The server never saw the call, so the cancellation stays here; the
                        // client awaits no answer to it.
                        return self.withdraw_question(call);
                    }
                    // The client will ignore a late answer; sc-mcp drops it.
                    let request = lock(&self.session.pending).cancel(&cancelled);
                    if let Some(PendingRequest {
                        awaiting: Awaiting::ToolCall(ticket),
                        ..
                    }) = request
                    {
                        self.session.audit_outcome(
                            &ticket,
                            &Outcome {
                                status: Status::Failed,
                                result: None,
                                reason: "the client cancelled the call before the MCP server answered; it may have run in part".to_owned(),
                            },
                        )?;
                    }
                }
                self.forward(bytes);
                Ok(())
            }
            ClientMessage::Response => {
                self.forward(bytes);
                Ok(())
            }
            ClientMessage::OwnAnswer { id, answer } => {
                let held = lock(&self.session.pending).take_held(&HoldKey::Question(id.clone()));
                match held {
                    Some(call) => {
                        let approval = elicitation::approval_for_answer(&answer);
                        self.settle(call.id, &call.bytes, call.ticket, &call.reasons, approval)
                    }
                    None => {
                        self.session.warn(&format!(
                            "dropped the client's answer to {}, a question sc-mcp is not waiting on (it was answered, timed out or never asked)",
                            for_terminal(&Value::String(id).to_string())
                        ));
                        Ok(())
                    }
                }
            }
        }
    }

    /// Notes whether the client's `initialize` declared elicitation in form mode.
    fn read_capabilities(&mut self, bytes: &[u8]) {
        // Read strictly already: the message was classified.
        let message = serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null);
        self.client_elicits = elicitation::declares_form_elicitation(message.get("params"));
        if self.surface() == Surface::Elicitation {
            self.session.narrate(
                "sc-mcp: the client can ask the person (elicitation): held calls are put to the person through it",
            );
        }
    }

    /// The client cancelled a call that waits for the person: the question (or the card) is
    /// withdrawn and the call declined, unanswered.
    fn withdraw_question(&mut self, call: HeldCall) -> Result<()> {
        let reason = "declined: the client cancelled the call before the person answered";
        self.withdraw(&call.asked, reason);
        self.session.decline_held(
            &call.id.value,
            &call.ticket,
            &call.reasons,
            &call.asked.declined(reason),
            false,
        )
    }

    /// Takes a question back from where it was put: tells the client to close it, or ends the
    /// card on the page.
    fn withdraw(&self, asked: &Asked, reason: &str) {
        match asked {
            Asked::Client(question) => self
                .session
                .to_client(&elicitation::cancellation(question, reason)),
            Asked::Page(card) => {
                if let Some(page) = &self.page {
                    page.web.withdraw(*card, reason);
                }
            }
        }
    }

    /// Forwards a message that awaits no answer.
    fn forward(&mut self, bytes: &[u8]) {
        self.session.forward(bytes);
    }

    /// Audits a refused message as a denied, malformed call and answers it. A malformed answer
    /// to one of sc-mcp's questions declines the call it is about.
    fn refuse(
        &mut self,
        bytes: &[u8],
        ids: &[Value],
        batch: bool,
        code: i64,
        reason: &str,
    ) -> Result<()> {
        let judgement = Judgement {
            decision: Decision::Deny,
            reasons: vec![format!("malformed message: {reason}")],
        };
        let call_id = self.ids.mint();
        let event = audit::event(Stage::Gate, &call_id)
            .field("decision", &judgement.decision)
            .field("reasons", &judgement.reasons)
            .field("raw", &jsonl::raw_excerpt(bytes))
            .finish();
        self.session.audit(&event)?;
        self.session.narrate(&format!(
            "sc-mcp: DENY  a message from the client (not forwarded): {}",
            for_terminal(reason)
        ));
        let (questions, ids): (Vec<&Value>, Vec<&Value>) =
            ids.iter().partition(|id| elicitation::is_own_id(id));
        for question in questions.into_iter().filter_map(Value::as_str) {
            let held =
                lock(&self.session.pending).take_held(&HoldKey::Question(question.to_owned()));
            if let Some(call) = held {
                let approval = elicitation::declined(format!(
                    "declined: the MCP client's answer is malformed ({reason})"
                ));
                self.settle(call.id, &call.bytes, call.ticket, &call.reasons, approval)?;
            }
        }
        let message = format!("sc-mcp: {reason}; the message was not forwarded");
        let responses: Vec<Vec<u8>> = ids
            .iter()
            .map(|id| error_response(id, code, &message))
            .collect();
        match (batch, responses.is_empty()) {
            (_, true) => {}
            (false, false) => {
                for response in responses {
                    self.session.to_client(&response);
                }
            }
            (true, false) => {
                let mut array = b"[".to_vec();
                for (index, response) in responses.iter().enumerate() {
                    if index > 0 {
                        array.push(b',');
                    }
                    array.extend_from_slice(response.strip_suffix(b"\n").unwrap_or(response));
                }
                array.extend_from_slice(b"]\n");
                self.session.to_client(&array);
            }
        }
        Ok(())
    }

    fn tool_call(
        &mut self,
        bytes: &[u8],
        id: RequestId,
        name: String,
        arguments: Map<String, Value>,
        text: &str,
    ) -> Result<()> {
        let session = self.session;
        let call_value = json!({
            "agent": session.agent,
            "tool": name,
            "args": arguments,
            "source": "agent",
            "jsonrpcId": id.value,
        });
        let call_id = self.ids.mint();
        let parsed = Call::from_value(&call_value).map(|mut call| {
            call.take_amount_text_from(text, &["params", "arguments", "amount"]);
            call
        });
        let in_use_by = session.id_in_use(&id);
        let id_in_use = in_use_by.is_some();
        let mut agent_state = None;
        let judgement = match (&parsed, in_use_by) {
            (_, Some(user)) => Judgement {
                decision: Decision::Deny,
                reasons: vec![format!(
                    "the request id {id} is already in use by {user}, so this call's answer could not be told apart from that one's"
                )],
            },
            // Decided and recorded in one step; a state store that fails denies the call.
            (Ok(call), None) => {
                let mut taken = std::mem::take(&mut *lock(&session.taken));
                crate::stage::exec::take_results_into(
                    &mut self.state,
                    &mut taken,
                    &session.policy,
                    &self.timing,
                );
                let decided = crate::stage::door::decide_on(
                    &mut self.state,
                    call,
                    &call_id,
                    &session.policy,
                    &self.timing,
                    true,
                );
                agent_state = decided.agent;
                decided.judgement
            }
            (Err(malformed), None) => Judgement::malformed(malformed),
        };
        let verdict = Verdict::new(&call_id, &call_value, &judgement, agent_state.as_ref());
        let mut event = audit::event(Stage::Gate, &call_id).raw_members(verdict.members());
        if let Some(shared) = self.state.shared() {
            event = event.field("stateStore", shared.describe_store());
            if let Owner::Crew(crew) = &shared.key().owner {
                event = event.field("crew", crew);
            }
        }
        self.audit_or_answer(&id.value, &event.finish())?;
        session.narrate(&format!(
            "sc-mcp: {:<5} {} → {}: {}",
            judgement.decision.as_str().to_uppercase(),
            for_terminal(&session.agent),
            for_terminal(&name),
            for_terminal(&judgement.reasons.join("; "))
        ));
        let ticket = Ticket {
            call_id,
            agent: session.agent.clone(),
            tool: name,
            decision: judgement.decision,
            approval: None,
        };
        let call = match (judgement.decision, parsed) {
            (Decision::Deny, _) | (_, Err(_)) if id_in_use => {
                // A protocol error: answered as one, so the client's waiting request keeps its id.
                let outcome = Outcome {
                    status: Status::Skipped,
                    result: None,
                    reason: format!("not run: denied ({})", judgement.reasons.join("; ")),
                };
                if let Err(err) = session.audit_outcome(&ticket, &outcome) {
                    self.answer_audit_failure(&id.value);
                    return Err(err);
                }
                session.to_client(&error_response(
                    &id.value,
                    INVALID_REQUEST,
                    &format!("sc-mcp: {}", judgement.reasons.join("; ")),
                ));
                return Ok(());
            }
            (Decision::Deny, _) | (_, Err(_)) => {
                return session.refuse_call(&id.value, &ticket, &judgement.reasons, None);
            }
            (Decision::Allow, Ok(_)) => {
                return session.forward_request(
                    bytes,
                    PendingRequest {
                        id,
                        awaiting: Awaiting::ToolCall(ticket),
                    },
                );
            }
            (Decision::Hold, Ok(call)) => call,
        };
        match self.surface() {
            Surface::Elicitation => {
                return self.ask_through_client(bytes, id, ticket, &call, judgement.reasons)
            }
            Surface::Page => {
                return self.ask_on_the_page(bytes, id, ticket, &call, judgement.reasons, &verdict)
            }
            Surface::Human => {}
        }
        let prompt = render_prompt(&call, &judgement.reasons, self.timeout);
        let reply = self.human.ask(&prompt);
        let approval = approval_for(reply, self.human.kind());
        self.human.acknowledge(if approval.approved {
            "→ approved"
        } else {
            "→ declined"
        });
        self.settle(id, bytes, ticket, &judgement.reasons, approval)
    }

    /// Puts a held call to the person through the client, and keeps it until the answer, the
    /// timeout, a cancellation or the end of the session settles it.
    fn ask_through_client(
        &mut self,
        bytes: &[u8],
        id: RequestId,
        ticket: Ticket,
        call: &Call,
        reasons: Vec<String>,
    ) -> Result<()> {
        let session = self.session;
        let mut pending = lock(&session.pending);
        if pending.held.len() >= MAX_HELD_CALLS {
            drop(pending);
            return self.decline_unasked(&id, &ticket, &reasons);
        }
        let question = self.questions.mint();
        let message = elicitation::message(call, &reasons, self.timeout);
        session.narrate(&format!(
            "sc-mcp: {} → {}: asking the person through the MCP client ({question})",
            for_terminal(&ticket.agent),
            for_terminal(&ticket.tool),
        ));
        pending.hold(HeldCall {
            asked: Asked::Client(question.clone()),
            id,
            ticket,
            reasons,
            bytes: bytes.to_vec(),
            deadline: self.timeout.map(|timeout| Instant::now() + timeout),
        });
        drop(pending);
        session.holds_changed.notify_all();
        session.to_client(&elicitation::request(&question, &message));
        Ok(())
    }

    /// Puts a held call on the web page as a card showing its verdict record, and keeps it until
    /// the person's answer there, the card's expiry, a cancellation or the end of the session
    /// settles it (the page's thread, [`settle_page_holds`], settles the first two).
    fn ask_on_the_page(
        &mut self,
        bytes: &[u8],
        id: RequestId,
        ticket: Ticket,
        call: &Call,
        reasons: Vec<String>,
        verdict: &Verdict,
    ) -> Result<()> {
        let session = self.session;
        let Some(page) = &self.page else {
            unreachable!("a call is put on the page only when there is one");
        };
        // Locked while the card is put up, so the page's thread, woken by a quick answer, finds
        // the call waiting.
        let mut pending = lock(&session.pending);
        if pending.held.len() >= MAX_HELD_CALLS {
            drop(pending);
            return self.decline_unasked(&id, &ticket, &reasons);
        }
        let card = page.web.submit(&Hold {
            line: &verdict.line,
            id: &ticket.call_id,
            call,
            reasons: &reasons,
            timeout: self.timeout,
        });
        session.narrate(&format!(
            "sc-mcp: {} → {}: waiting for the person on the web page (card {})",
            for_terminal(&ticket.agent),
            for_terminal(&ticket.tool),
            card.id()
        ));
        pending.hold(HeldCall {
            asked: Asked::Page(card),
            id,
            ticket,
            reasons,
            bytes: bytes.to_vec(),
            deadline: None,
        });
        drop(pending);
        // The page's thread waits for this card's expiry too.
        let _ = page.wake.send(PageEvent::Changed);
        Ok(())
    }

    /// Declines a held call without asking: too many are waiting for the person already.
    fn decline_unasked(&self, id: &RequestId, ticket: &Ticket, reasons: &[String]) -> Result<()> {
        let approval = Approval {
            approved: false,
            by: AnsweredBy::None,
            answer: None,
            reason: format!(
                "declined: {MAX_HELD_CALLS} held calls are already waiting for the person, so this one was not put to them"
            ),
            digest: None,
        };
        self.session
            .decline_held(&id.value, ticket, reasons, &approval, true)
    }

    /// Acts on the person's answer to a held call: audits it, then forwards the call as it came
    /// if approved, or answers it with a refusal.
    fn settle(
        &mut self,
        id: RequestId,
        bytes: &[u8],
        ticket: Ticket,
        reasons: &[String],
        approval: Approval,
    ) -> Result<()> {
        self.session.settle(id, bytes, ticket, reasons, approval)
    }

    /// Appends an event about the request `id`; when the log cannot be written, the request is
    /// answered with an error (nothing was decided or run) and the session stops.
    fn audit_or_answer(&mut self, id: &Value, event: &[u8]) -> Result<()> {
        let result = self.session.audit(event);
        if result.is_err() {
            self.answer_audit_failure(id);
        }
        result
    }

    fn answer_audit_failure(&mut self, id: &Value) {
        self.session.answer_audit_failure(id);
    }
}

// ---------------------------------------------------------------------------------------------
// Server → client (the relay thread)

fn relay_server(session: &Session, stdout: ChildStdout, max: usize) {
    let mut reader = LineReader::new(stdout, max);
    loop {
        let line = match reader.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(err) => {
                session.warn(&format!("cannot read the MCP server's output: {err}"));
                break;
            }
        };
        match line {
            Line::Text(bytes) if jsonl::is_blank(bytes) => {}
            Line::Text(bytes) => {
                if handle_server_line(session, bytes).is_err() {
                    break;
                }
            }
            Line::TooLong { length, .. } => session.warn(&format!(
                "dropped a message of {length} bytes from the MCP server: over the limit of {max} bytes"
            )),
        }
    }
    // The server's side has ended: nothing awaited will be answered now.
    let requests: Vec<PendingRequest> = {
        let mut pending = lock(&session.pending);
        pending.server_reading = false;
        pending.cancelled.clear();
        pending
            .requests
            .drain()
            .map(|(_, request)| request)
            .collect()
    };
    let failed = requests.len();
    for request in requests {
        session.fail_request(request, "the MCP server exited before answering");
    }
    lock(&session.ending).failed_requests += failed;
    if let Some(mut wake) = lock(&session.wake).take() {
        let _ = wake.write_all(b"x");
    }
}

/// A line from the server, shortened and made safe for a warning.
fn excerpt(bytes: &[u8]) -> String {
    for_terminal(&jsonl::raw_excerpt(&bytes[..bytes.len().min(200)])).into_owned()
}

/// One line from the server. An error means the session is stopping.
fn handle_server_line(session: &Session, bytes: &[u8]) -> Result<()> {
    let parsed = std::str::from_utf8(bytes)
        .map_err(|err| format!("not valid UTF-8 (bad byte at offset {})", err.valid_up_to()))
        .and_then(|text| strict_json::parse(text).map_err(|err| err.to_string()));
    match parsed {
        Ok(Value::Array(items)) => {
            // A batch: each message goes on its own, so none escapes the checks.
            for item in items {
                let text = serde_json::to_vec(&item).expect("a JSON value serializes");
                handle_server_message(session, item, &text)?;
            }
            Ok(())
        }
        Ok(value @ Value::Object(_)) => handle_server_message(session, value, bytes),
        Ok(other) => {
            session.warn(&format!(
                "dropped a message from the MCP server that is {}, not a JSON-RPC object",
                strict_json::type_name(&other)
            ));
            Ok(())
        }
        Err(why) => {
            // If it names a request we await, that request is answered with an error rather than
            // left hanging; the message itself never reaches the client.
            let answered = {
                let key = serde_json::from_slice::<Value>(bytes)
                    .ok()
                    .and_then(|lenient| IdKey::of_reference(lenient.get("id")?));
                lock(&session.pending).take(key.as_ref())
            };
            session.warn(&format!(
                "dropped a line from the MCP server that is not valid JSON-RPC ({why}): {}",
                excerpt(bytes)
            ));
            if let Answered::Waiting(request) = answered {
                session.fail_request(
                    request,
                    &format!("the MCP server's answer was malformed ({why})"),
                );
            }
            if session.is_stopping() {
                return Err(anyhow!("stopping"));
            }
            Ok(())
        }
    }
}

fn handle_server_message(session: &Session, value: Value, bytes: &[u8]) -> Result<()> {
    relay_server_message(session, value, bytes)?;
    if session.is_stopping() {
        return Err(anyhow!("stopping"));
    }
    Ok(())
}

/// Relays one message from the server, if it may reach the client. An error means the audit log
/// could not be written.
fn relay_server_message(session: &Session, value: Value, bytes: &[u8]) -> Result<()> {
    let Value::Object(mut message) = value else {
        session.warn("dropped a message from the MCP server that is not a JSON-RPC object");
        return Ok(());
    };
    if message.contains_key("method") {
        // A client could read it either way, and an answer is relayed only once checked.
        if let Some(key) = ["result", "error"]
            .into_iter()
            .find(|key| message.contains_key(*key))
        {
            session.warn(&format!(
                "dropped a message from the MCP server that is both a request and an answer (it has `method` and `{key}`): {}",
                excerpt(bytes)
            ));
            return Ok(());
        }
        // The client's answer to a request with one of sc-mcp's ids would be taken for the
        // person's, and a cancellation naming one would withdraw sc-mcp's question.
        let names_own_question = message.get("id").is_some_and(elicitation::is_own_id)
            || (message.get("method") == Some(&json!("notifications/cancelled"))
                && message
                    .get("params")
                    .and_then(|params| params.get("requestId"))
                    .is_some_and(elicitation::is_own_id));
        if names_own_question {
            session.warn(&format!(
                "dropped a message from the MCP server that uses an id sc-mcp keeps for its own questions to the client ({}…): {}",
                elicitation::ID_PREFIX,
                excerpt(bytes)
            ));
            return Ok(());
        }
        // A request or a notification of the server's own.
        session.to_client(&with_newline(bytes));
        return Ok(());
    }
    let key = message.get("id").and_then(IdKey::of_reference);
    let answered = lock(&session.pending).take(key.as_ref());
    let request = match answered {
        Answered::Waiting(request) => request,
        Answered::Cancelled => {
            session.warn(&format!(
                "dropped the MCP server's answer to request {}, which the client cancelled",
                for_terminal(&message.get("id").unwrap_or(&Value::Null).to_string())
            ));
            return Ok(());
        }
        Answered::Nothing => {
            session.warn(&format!(
                "dropped an answer from the MCP server with an id no request is waiting for: {}",
                excerpt(bytes)
            ));
            return Ok(());
        }
    };
    // JSON-RPC: exactly one of the two. With both, one client reads the result and another the
    // error; with neither, there is nothing to read.
    if message.contains_key("result") == message.contains_key("error") {
        let which = if message.contains_key("result") {
            "both `result` and `error`"
        } else {
            "neither `result` nor `error`"
        };
        session.fail_request(
            request,
            &format!("the MCP server's answer has {which}, so it was not relayed"),
        );
        return Ok(());
    }
    // The client reads its own id back, as it wrote it, even if the server wrote it otherwise.
    let mut rewritten = false;
    if message.get("id") != Some(&request.id.value) {
        message.insert("id".to_owned(), request.id.value.clone());
        rewritten = true;
    }
    // Whatever it answers, a tool list in it loses the tools the policy denies.
    let hidden = match message.get_mut("result") {
        Some(result) => hide_denied_tools(result, &session.policy, &session.agent),
        None => Vec::new(),
    };
    if !hidden.is_empty() {
        session.narrate(&format!(
            "sc-mcp: {}: hid {} (denied by the policy)",
            for_terminal(request.awaiting.method()),
            for_terminal(&hidden.join(", "))
        ));
        rewritten = true;
    }
    match &request.awaiting {
        Awaiting::ToolsList => {
            let not_a_list = message
                .get("result")
                .is_some_and(|result| !result.get("tools").is_some_and(Value::is_array));
            if not_a_list {
                session.fail_request(
                    request,
                    "the MCP server's answer to tools/list has no `tools` array, so it was not relayed",
                );
                return Ok(());
            }
        }
        Awaiting::ToolCall(ticket) => {
            let outcome = outcome_of_answer(&message, ticket);
            if let Err(err) = session.audit_outcome(ticket, &outcome) {
                // Nothing leaves that was not audited: the client learns only that it failed.
                session.to_client(&error_response(
                    &request.id.value,
                    INTERNAL_ERROR,
                    "sc-mcp: the call's outcome cannot be written to the audit log, so its result is withheld; sc-mcp is stopping",
                ));
                return Err(err);
            }
            if session.policy.provenance().is_some()
                && session.policy.has_untrusted_output(&ticket.tool)
            {
                let output = message.get("result").or_else(|| message.get("error"));
                lock(&session.taken).push(ResultRecord {
                    agent: ticket.agent.clone(),
                    tool: ticket.tool.clone(),
                    call: Some(ticket.call_id.clone()),
                    output: output.cloned().unwrap_or(Value::Null),
                });
            }
        }
        Awaiting::Other(_) => {}
    }
    if rewritten {
        let mut line = serde_json::to_vec(&message).expect("a JSON object serializes");
        line.push(b'\n');
        session.to_client(&line);
    } else {
        session.to_client(&with_newline(bytes));
    }
    Ok(())
}

fn with_newline(bytes: &[u8]) -> Vec<u8> {
    let mut line = Vec::with_capacity(bytes.len() + 1);
    line.extend_from_slice(bytes);
    line.push(b'\n');
    line
}

// ---------------------------------------------------------------------------------------------
// The client's input, which the server's end can interrupt

/// Stdin that reads as ended once the wake pipe is written to (the server's side has ended), so
/// the calling thread never stays blocked on a client that has nothing more to say.
struct WakeableInput {
    input: File,
    wake: PipeReader,
    woken: Arc<AtomicBool>,
}

impl Read for WakeableInput {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut fds = [
                PollFd::new(self.input.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.wake.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(errno) => return Err(io::Error::from(errno)),
            }
            if fds[1].revents().is_some_and(|events| !events.is_empty()) {
                self.woken.store(true, Ordering::SeqCst);
                return Ok(0);
            }
            if fds[0].revents().is_some_and(|events| !events.is_empty()) {
                return match self.input.read(buf) {
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                    other => other,
                };
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The whole run

/// Runs the proxy until the client closes its input or the server ends; returns the exit status.
pub fn run(
    options: &McpOptions,
    audit_log: AuditLog,
    command: &[OsString],
    human: &mut dyn Human,
) -> Result<u8> {
    let state = StateHandle::Memory(CrewState::new());
    run_with_state(options, audit_log, state, command, human)
}

/// [`run`], with the crew's state in memory (this process's alone) or in a shared store.
pub fn run_with_state(
    options: &McpOptions,
    audit_log: AuditLog,
    state: StateHandle,
    command: &[OsString],
    human: &mut dyn Human,
) -> Result<u8> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| crate::exit::UsageError("no MCP server command after `--`".into()))?;
    // The page is up before the server starts, so a port in use ends nothing but sc-mcp.
    let page = match options.asking {
        Asking::Wherever {
            web: Some(addr), ..
        } => {
            let (wake, events) = mpsc::channel();
            let settled = wake.clone();
            let web = WebApprovals::start(
                addr,
                "sc-mcp",
                Some(Box::new(move |_| {
                    let _ = settled.send(PageEvent::Changed);
                })),
            )?;
            web::announce("sc-mcp", web.url());
            Some((
                Page {
                    web: Arc::new(web),
                    wake,
                },
                events,
            ))
        }
        _ => None,
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| {
            format!(
                "cannot start the MCP server {}",
                Value::String(program.to_string_lossy().into_owned())
            )
        })?;
    let server_stdout = child.stdout.take().expect("piped stdout");
    let server_stdin = child.stdin.take().expect("piped stdin");
    let (wake_reader, wake_writer) = io::pipe().context("cannot create a pipe")?;
    let server_pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid fits in i32"));
    let session = Arc::new(Session {
        policy: options.policy.clone(),
        agent: options.agent.clone(),
        quiet: options.quiet,
        audit: Mutex::new(audit_log),
        client: Mutex::new(Box::new(io::stdout())),
        server: Mutex::new(Some(server_stdin)),
        pending: Mutex::new(Pending {
            server_reading: true,
            requests: HashMap::new(),
            cancelled: IndexSet::new(),
            ..Pending::default()
        }),
        holds_changed: Condvar::new(),
        hold_timeout: options.timeout,
        ending: Mutex::new(Ending::default()),
        wake: Mutex::new(Some(wake_writer)),
        server_pid,
        killed_by_us: AtomicBool::new(false),
        taken: Mutex::new(Vec::new()),
    });
    let relay = {
        let session = Arc::clone(&session);
        let max = options.max_message_bytes;
        thread::Builder::new()
            .name("server-to-client".into())
            .spawn(move || relay_server(&session, server_stdout, max))
            .context("cannot start the relay thread")?
    };
    // Only calls asked through the client wait without blocking this thread, so only they need
    // a timer.
    let timer = match (options.asking, options.timeout) {
        (
            Asking::Wherever {
                elicitation: true, ..
            },
            Some(_),
        ) => {
            let session = Arc::clone(&session);
            Some(
                thread::Builder::new()
                    .name("hold-timeout".into())
                    .spawn(move || expire_holds(&session))
                    .context("cannot start the timeout thread")?,
            )
        }
        _ => None,
    };
    let (page, page_thread) = match page {
        Some((page, events)) => {
            let session = Arc::clone(&session);
            let web = Arc::clone(&page.web);
            let thread = thread::Builder::new()
                .name("web-answers".into())
                .spawn(move || settle_page_holds(&session, &web, &events))
                .context("cannot start the web page's thread")?;
            (Some(page), Some(thread))
        }
        None => (None, None),
    };

    let woken = Arc::new(AtomicBool::new(false));
    let input = WakeableInput {
        input: File::from(
            io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .context("cannot read stdin")?,
        ),
        wake: wake_reader,
        woken: Arc::clone(&woken),
    };
    let mut client = ClientSide {
        session: &session,
        human,
        timeout: options.timeout,
        asking: options.asking,
        client_elicits: false,
        questions: Questions::default(),
        page,
        state,
        timing: options.timing.clone(),
        ids: IdMinter::new(),
    };
    let mut reader = LineReader::new(input, options.max_message_bytes);
    loop {
        if session.is_stopping() {
            break;
        }
        let line = match reader.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(err) => {
                session.warn(&format!("cannot read the client's input: {err}"));
                break;
            }
        };
        let handled = match line {
            Line::Text(bytes) if jsonl::is_blank(bytes) => Ok(()),
            Line::Text(bytes) => client.handle(bytes),
            Line::TooLong { length, start } => {
                let reason = format!(
                    "the message is {length} bytes, over the limit of {} bytes",
                    options.max_message_bytes
                );
                client.refuse(start, &[], false, INVALID_REQUEST, &reason)
            }
        };
        if handled.is_err() {
            break;
        }
    }
    let client_closed_first = !woken.load(Ordering::SeqCst) && !session.is_stopping();
    // Calls still waiting for the person are declined: nobody can act on an answer now.
    let why = if session.is_stopping() {
        "sc-mcp is stopping"
    } else if client_closed_first {
        "the client closed its input"
    } else {
        "the MCP server's side ended"
    };
    let unanswered: Vec<HeldCall> = {
        let mut pending = lock(&session.pending);
        pending.holds_closed = true;
        pending.held_ids.clear();
        pending.held.drain().map(|(_, call)| call).collect()
    };
    session.holds_changed.notify_all();
    if let Some(timer) = timer {
        let _ = timer.join();
    }
    if let Some(page) = &client.page {
        let _ = page.wake.send(PageEvent::End);
    }
    if let Some(thread) = page_thread {
        let _ = thread.join();
    }
    for call in unanswered {
        let reason = format!("declined: {why} before the person answered");
        if let Asked::Page(_) = call.asked {
            client.withdraw(&call.asked, &reason);
        }
        let approval = call.asked.declined(reason);
        // An audit failure has stopped the session already.
        let _ = session.decline_held(&call.id.value, &call.ticket, &call.reasons, &approval, true);
    }
    // Nothing more can be asked: the page stops serving.
    drop(client.page.take());
    // Closing the server's input is how MCP's stdio transport asks it to exit.
    drop(lock(&session.server).take());
    drop(reader);

    // The server has SHUTDOWN_GRACE to end by itself, then SIGTERM, then SIGKILL; a server whose
    // output stays open after that (a child of its holds it) is given up on.
    let started = Instant::now();
    let mut signals = vec![
        (SHUTDOWN_GRACE * 3, None),
        (SHUTDOWN_GRACE * 2, Some(Signal::SIGKILL)),
        (SHUTDOWN_GRACE, Some(Signal::SIGTERM)),
    ];
    let mut relay_done = true;
    while !relay.is_finished() {
        if let Some(&(after, signal)) = signals.last() {
            if started.elapsed() >= after {
                signals.pop();
                match signal {
                    Some(signal) => {
                        session.killed_by_us.store(true, Ordering::SeqCst);
                        let _ = kill(server_pid, signal);
                    }
                    None => {
                        relay_done = false;
                        break;
                    }
                }
            }
        }
        thread::sleep(Duration::from_millis(10));
    }
    if relay_done {
        let _ = relay.join();
    } else {
        session.stop(anyhow!(
            "the MCP server's output stayed open after it was killed; giving up on it"
        ));
    }
    let status = child.wait().context("cannot wait for the MCP server")?;
    let ending = std::mem::take(&mut *lock(&session.ending));
    let killed = session.killed_by_us.load(Ordering::SeqCst);
    Ok(exit_status(
        &session,
        ending,
        status,
        client_closed_first,
        killed,
    ))
}

fn exit_status(
    session: &Session,
    ending: Ending,
    status: ExitStatus,
    client_closed_first: bool,
    killed: bool,
) -> u8 {
    if let Some(err) = ending.fatal {
        session.warn(&format!("{err:#}"));
        return crate::exit::RUNTIME_FAILURE;
    }
    if ending.client_gone {
        return crate::exit::SUCCESS;
    }
    let server = describe_status(status);
    if !client_closed_first {
        session.warn(&format!(
            "the MCP server {server} while the client was still connected{}",
            match ending.failed_requests {
                0 => String::new(),
                n => format!("; {n} request(s) waiting for it were answered with an error"),
            }
        ));
        return crate::exit::RUNTIME_FAILURE;
    }
    if ending.failed_requests > 0 {
        session.warn(&format!(
            "the MCP server {server} with {} request(s) still unanswered; they were answered with an error",
            ending.failed_requests
        ));
        return crate::exit::RUNTIME_FAILURE;
    }
    if !status.success() && !killed {
        session.warn(&format!("the MCP server {server}"));
        return crate::exit::RUNTIME_FAILURE;
    }
    crate::exit::SUCCESS
}

fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => "ended".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(text: &str) -> ClientMessage<'_> {
        classify_client_message(text.as_bytes())
    }

    fn refused_code(message: ClientMessage) -> (Vec<Value>, i64, String) {
        match message {
            ClientMessage::Refused {
                ids, code, reason, ..
            } => (ids, code, reason),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_tool_call_is_read_with_its_name_and_arguments() {
        let text = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/x","amount":1.50}}}"#;
        match classify(text) {
            ClientMessage::ToolCall {
                id,
                name,
                arguments,
                ..
            } => {
                assert_eq!(id.value, json!(7));
                assert_eq!(id.key, IdKey::Integer(7));
                assert_eq!(name, "read_file");
                assert_eq!(arguments["path"], "/x");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_messages_are_requests_notifications_or_responses() {
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#),
            ClientMessage::Request {
                id: RequestId {
                    value: json!("a"),
                    key: IdKey::String("a".into())
                },
                method: "tools/list".into()
            }
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            ClientMessage::Notification { cancels: None }
        );
        assert_eq!(
            classify(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}"#
            ),
            ClientMessage::Notification {
                cancels: Some(IdKey::Integer(4))
            }
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            ClientMessage::Response
        );
    }

    #[test]
    fn malformed_messages_are_refused_and_answered_only_when_they_have_an_id() {
        let (ids, code, _) = refused_code(classify("not json"));
        assert!(ids.is_empty());
        assert_eq!(code, PARSE_ERROR);
        // A duplicate key: the server might read the other `method`.
        let (ids, _, reason) = refused_code(classify(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","method":"tools/call","params":{"name":"x"}}"#,
        ));
        assert_eq!(ids, [json!(3)]);
        assert!(reason.contains("duplicate key `method`"), "{reason}");
        for (text, expected) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
                "must be a string",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
                "no `params.name`",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
                "no `params`",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#,
                "must be an object",
            ),
        ] {
            let (ids, code, reason) = refused_code(classify(text));
            assert_eq!(ids, [json!(1)], "{text}");
            assert_eq!(code, INVALID_PARAMS, "{text}");
            assert!(reason.contains(expected), "{text}: {reason}");
        }
        let (ids, _, _) = refused_code(classify(
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
        ));
        assert!(ids.is_empty(), "a tools/call notification is dropped");
        let (ids, code, _) = refused_code(classify(
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
        ));
        assert_eq!(ids, [Value::Null], "answered with a null id");
        assert_eq!(code, INVALID_REQUEST);
        let (ids, _, _) = refused_code(classify("\u{0}[1,2]"));
        assert!(ids.is_empty());
    }

    #[test]
    fn a_request_id_is_a_string_or_an_integer_written_as_one() {
        let id = |text: &str| IdKey::of_request(&serde_json::from_str(text).unwrap());
        assert_eq!(id("2"), Ok(IdKey::Integer(2)));
        assert_eq!(id("-7"), Ok(IdKey::Integer(-7)));
        assert_eq!(id("0"), Ok(IdKey::Integer(0)));
        assert_eq!(
            id("9007199254740991"),
            Ok(IdKey::Integer(9_007_199_254_740_991))
        );
        assert_eq!(
            id("-9007199254740991"),
            Ok(IdKey::Integer(-9_007_199_254_740_991))
        );
        assert_eq!(id(r#""2""#), Ok(IdKey::String("2".into())));
        assert_eq!(id(r#""""#), Ok(IdKey::String(String::new())));
        for refused in [
            "2.0",
            "1e0",
            "1E0",
            "-0",
            "0.5",
            "9007199254740992",
            "-9007199254740992",
            "18446744073709551615",
            "123456789012345678901234567890",
            "null",
            "true",
            "[1]",
            r#"{"a":1}"#,
        ] {
            assert!(id(refused).is_err(), "{refused}");
        }
        // Invalid JSON never gets this far.
        assert!(serde_json::from_str::<Value>("01").is_err());
    }

    #[test]
    fn an_id_that_names_a_request_is_read_by_value() {
        let key = |text: &str| IdKey::of_reference(&serde_json::from_str(text).unwrap());
        for (text, expected) in [
            ("2", 2),
            ("2.0", 2),
            ("1e0", 1),
            ("1E0", 1),
            ("-0", 0),
            ("-3.0", -3),
        ] {
            assert_eq!(key(text), Some(IdKey::Integer(expected)), "{text}");
        }
        assert_eq!(key(r#""2""#), Some(IdKey::String("2".into())));
        assert_ne!(key(r#""2""#), key("2"), "a string never names an integer");
        for nothing in [
            "2.5",
            "9007199254740992",
            "1e300",
            "18446744073709551615",
            "null",
            "true",
            "[2]",
        ] {
            assert_eq!(key(nothing), None, "{nothing}");
        }
    }

    #[test]
    fn requests_that_readers_could_read_apart_are_refused() {
        for (text, expected_ids) in [
            (
                r#"{"jsonrpc":"2.0","id":2.0,"method":"tools/list"}"#,
                vec![json!(2.0)],
            ),
            (
                r#"{"jsonrpc":"2.0","id":1e0,"method":"tools/call","params":{"name":"x"}}"#,
                vec![json!(1.0)],
            ),
            (
                r#"{"jsonrpc":"2.0","id":[1],"method":"tools/list"}"#,
                vec![Value::Null],
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"notifications/cancelled","params":{"requestId":1}}"#,
                vec![json!(3)],
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","result":{}}"#,
                vec![json!(4)],
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/x","error":{}}"#,
                vec![],
            ),
        ] {
            let (ids, code, _) = refused_code(classify(text));
            assert_eq!(ids, expected_ids, "{text}");
            assert_eq!(code, INVALID_REQUEST, "{text}");
        }
        // A cancellation names its request by value.
        assert_eq!(
            classify(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2.0}}"#
            ),
            ClientMessage::Notification {
                cancels: Some(IdKey::Integer(2))
            }
        );
    }

    #[test]
    fn a_cancelled_request_keeps_its_id_until_answered_and_the_oldest_is_forgotten() {
        let mut pending = Pending::default();
        let request = |n: i64| PendingRequest {
            id: RequestId {
                value: json!(n),
                key: IdKey::Integer(n),
            },
            awaiting: Awaiting::ToolsList,
        };
        pending.requests.insert(IdKey::Integer(1), request(1));
        assert!(pending.in_use(&IdKey::Integer(1)).is_some());
        assert!(pending.cancel(&IdKey::Integer(1)).is_some());
        assert!(pending
            .in_use(&IdKey::Integer(1))
            .unwrap()
            .contains("cancelled"));
        assert!(matches!(
            pending.take(Some(&IdKey::Integer(1))),
            Answered::Cancelled
        ));
        assert!(pending.in_use(&IdKey::Integer(1)).is_none());
        assert!(matches!(
            pending.take(Some(&IdKey::Integer(1))),
            Answered::Nothing
        ));
        assert!(matches!(pending.take(None), Answered::Nothing));
        for n in 0..=i64::try_from(CANCELLED_REMEMBERED).unwrap() {
            pending.requests.insert(IdKey::Integer(n), request(n));
            pending.cancel(&IdKey::Integer(n));
        }
        assert_eq!(pending.cancelled.len(), CANCELLED_REMEMBERED);
        assert!(
            pending.in_use(&IdKey::Integer(0)).is_none(),
            "the oldest is forgotten"
        );
        assert!(pending.in_use(&IdKey::Integer(1)).is_some());
    }

    #[test]
    fn an_answer_to_one_of_sc_mcps_questions_is_its_own() {
        match classify(
            r#"{"jsonrpc":"2.0","id":"sc-mcp-elicit-3","result":{"action":"accept","content":{"approve":true}}}"#,
        ) {
            ClientMessage::OwnAnswer { id, answer } => {
                assert_eq!(id, "sc-mcp-elicit-3");
                assert_eq!(answer["result"]["action"], "accept");
            }
            other => panic!("{other:?}"),
        }
        // Any answer with such an id, even a malformed one, is sc-mcp's to read.
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":"sc-mcp-elicit-3"}"#),
            ClientMessage::OwnAnswer { .. }
        ));
        // Other answers go to the server; a request with such an id is the client's own.
        for text in [
            r#"{"jsonrpc":"2.0","id":"sc-mcp-elicit","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        ] {
            assert_eq!(classify(text), ClientMessage::Response, "{text}");
        }
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":"sc-mcp-elicit-3","method":"tools/list"}"#),
            ClientMessage::Request { .. }
        ));
    }

    #[test]
    fn a_held_call_keeps_its_id_until_settled_and_is_taken_once() {
        let mut pending = Pending::default();
        let question = |n: i64| HoldKey::Question(format!("sc-mcp-elicit-{n}"));
        let held = |n: i64, deadline: Option<Instant>| HeldCall {
            asked: Asked::Client(format!("sc-mcp-elicit-{n}")),
            id: RequestId {
                value: json!(n),
                key: IdKey::Integer(n),
            },
            ticket: Ticket {
                call_id: format!("c-{n}"),
                agent: "a".into(),
                tool: "t".into(),
                decision: Decision::Hold,
                approval: None,
            },
            reasons: vec!["r".into()],
            bytes: b"{}".to_vec(),
            deadline,
        };
        let now = Instant::now();
        pending.hold(held(1, Some(now)));
        pending.hold(held(2, Some(now + Duration::from_secs(3600))));
        pending.hold(held(3, None));
        assert!(pending
            .in_use(&IdKey::Integer(1))
            .unwrap()
            .contains("person"));
        let overdue = pending.take_overdue(now);
        assert_eq!(overdue.len(), 1);
        assert_eq!(overdue[0].asked.key(), question(1));
        assert!(pending.in_use(&IdKey::Integer(1)).is_none());
        assert!(pending.take_held(&question(1)).is_none(), "taken once");
        let second = pending.take_held_call(&IdKey::Integer(2)).unwrap();
        assert_eq!(second.asked.key(), question(2));
        assert!(pending.take_held(&question(2)).is_none());
        assert!(pending
            .take_overdue(now + Duration::from_secs(7200))
            .is_empty());
        assert!(pending.cards().is_empty(), "none on the page");
        assert!(pending.take_held(&question(3)).is_some());
        assert!(pending.held.is_empty() && pending.held_ids.is_empty());
    }

    #[test]
    fn a_batch_is_refused_whole() {
        match classify(
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}},{"jsonrpc":"2.0","method":"n"}]"#,
        ) {
            ClientMessage::Refused { ids, batch, .. } => {
                assert!(batch);
                assert_eq!(ids, [json!(1)]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn denied_and_disallowed_tools_are_hidden() {
        let policy = Policy::from_json_str(
            r#"{"denyTools":["write_file","mcp__pay*"],"agents":{"fs":["read_file","write_file","list_directory"]}}"#,
        )
        .unwrap();
        let mut result = json!({"tools":[
            {"name":"read_file"},{"name":"write_file"},{"name":"list_directory"},
            {"name":"move_file"},{"name":"mcp__payments"},{"description":"no name"}
        ],"nextCursor":"c"});
        let hidden = hide_denied_tools(&mut result, &policy, "fs");
        let names: Vec<&str> = result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["read_file", "list_directory"]);
        assert_eq!(hidden.len(), 4, "{hidden:?}");
        assert_eq!(result["nextCursor"], "c");
        // An agent without an allowlist entry sees everything not denied.
        let mut result = json!({"tools":[{"name":"move_file"},{"name":"write_file"}]});
        hide_denied_tools(&mut result, &policy, "other");
        assert_eq!(result["tools"], json!([{"name":"move_file"}]));
    }

    #[test]
    fn responses_sc_mcp_writes_are_json_rpc() {
        let line = refusal_response(&json!("x"), "denied: because");
        let value: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(value["id"], "x");
        assert_eq!(value["result"]["isError"], true);
        assert_eq!(value["result"]["content"][0]["text"], "denied: because");
        let line = error_response(&json!(2), INVALID_PARAMS, "bad");
        let value: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(value["error"]["code"], INVALID_PARAMS);
        assert!(line.ends_with(b"}\n"));
    }

    #[test]
    fn the_outcome_follows_the_answer() {
        let ticket = Ticket {
            call_id: "c-1".into(),
            agent: "a".into(),
            tool: "t".into(),
            decision: Decision::Allow,
            approval: None,
        };
        let answer = |value: Value| value.as_object().unwrap().clone();
        let ok = outcome_of_answer(
            &answer(json!({"id":1,"result":{"content":[{"type":"text","text":"hi"}]}})),
            &ticket,
        );
        assert_eq!(ok.status, Status::Executed);
        assert_eq!(ok.result.unwrap()["content"][0]["text"], "hi");
        let tool_error =
            outcome_of_answer(&answer(json!({"id":1,"result":{"isError":true}})), &ticket);
        assert_eq!(tool_error.status, Status::Failed);
        let rpc_error = outcome_of_answer(
            &answer(json!({"id":1,"error":{"code":-1,"message":"boom"}})),
            &ticket,
        );
        assert_eq!(rpc_error.status, Status::Failed);
        assert!(rpc_error.reason.contains("boom"));
        let big = "x".repeat(RESULT_IN_AUDIT_BYTES + 1);
        let large = outcome_of_answer(
            &answer(json!({"id":1,"result":{"content":[{"type":"text","text":big}]}})),
            &ticket,
        );
        assert!(large.result.is_none());
        assert!(large.reason.contains("not kept"), "{}", large.reason);
    }

    #[test]
    fn the_verdict_line_is_what_the_gate_event_repeats() {
        let judgement = Judgement {
            decision: Decision::Hold,
            reasons: vec!["amount 750 is above the hold limit of 100".into()],
        };
        let call = json!({"agent":"crew","tool":"echo","args":{"amount":750,"memo":"\u{202e}x"},"source":"agent","jsonrpcId":1});
        let verdict = Verdict::new("mcp-3", &call, &judgement, None);
        let line = std::str::from_utf8(&verdict.line).unwrap();
        assert_eq!(
            line,
            format!(
                r#"{{"id":"mcp-3","call":{call},"decision":"hold","reasons":["amount 750 is above the hold limit of 100"]}}"#
            )
        );
        assert_eq!(
            std::str::from_utf8(verdict.members()).unwrap(),
            &line[r#"{"id":"mcp-3","#.len()..line.len() - 1]
        );
        let event = audit::event(Stage::Gate, "mcp-3")
            .raw_members(verdict.members())
            .finish();
        let mut rebuilt: Map<String, Value> = serde_json::from_slice(&event).unwrap();
        rebuilt.shift_remove("ts");
        rebuilt.shift_remove("stage");
        assert_eq!(Value::Object(rebuilt).to_string(), line);
    }

    #[test]
    fn the_default_agent_is_the_command_name() {
        assert_eq!(
            default_agent(&["/usr/bin/mcp-server-x".into(), "--flag".into()]),
            "mcp-server-x"
        );
        assert_eq!(default_agent(&[]), "mcp-server");
    }
}
