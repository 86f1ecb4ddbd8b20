//! sc-mcp's own `initialize` with a legacy server, made when a 2026-07-28 client (which has no
//! handshake) sends its first request, and the server's `initialize` result kept for
//! `server/discover` ([`super::revision`]).
//!
//! A server that speaks 2026-07-28 only refuses `initialize` (`-32022` naming 2026-07-28, or
//! `-32601`): sc-mcp then asks it `server/discover`, and from its result answers the client's
//! `initialize` (a legacy client) or sc-mcp's own (a 2026-07-28 client); from then on each request
//! to the server carries the per-request protocol keys ([`super::revision::with_envelope`]).

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::pending::PendingRequest;
use super::protocol::result_response;
use super::revision::{
    discover_request, initialize_from_discover, refused_as_modern, Discovering, DISCOVER_ID,
    HANDSHAKE_ID, LEGACY_TO_SERVER,
};
use super::session::{lock, Session};

/// How long the server has to answer sc-mcp's own `initialize`.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(60);

/// Makes sure the server was initialized (by the client's own `initialize`, or else by sc-mcp's,
/// made now and waited for), so a modern request can be given to it. `Err` says why not.
pub(crate) fn ensure_handshake(session: &Session) -> Result<(), String> {
    let revisions = &session.revisions;
    let mut state = lock(&revisions.state);
    if state.server.is_some() {
        return Ok(());
    }
    if let Some(why) = &state.failed {
        return Err(why.clone());
    }
    if !state.waiting {
        state.waiting = true;
        let request = json!({
            "jsonrpc": "2.0",
            "id": HANDSHAKE_ID,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_TO_SERVER,
                "capabilities": {},
                "clientInfo": {"name": "sc-mcp", "version": env!("CARGO_PKG_VERSION")},
            },
        });
        drop(state);
        session.forward(&serde_json::to_vec(&request).expect("JSON serializes"));
        state = lock(&revisions.state);
    }
    let deadline = Instant::now() + HANDSHAKE_WAIT;
    while state.server.is_none() && state.failed.is_none() {
        let now = Instant::now();
        if now >= deadline || session.is_stopping() {
            state.failed = Some("the MCP server did not answer sc-mcp's initialize".to_owned());
            break;
        }
        state = revisions
            .changed
            .wait_timeout(state, deadline - now)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
    match (&state.server, &state.failed) {
        (Some(_), _) => Ok(()),
        (None, Some(why)) => Err(why.clone()),
        (None, None) => Err("the MCP server did not answer sc-mcp's initialize".to_owned()),
    }
}

/// Takes the server's answer to sc-mcp's own `initialize` or `server/discover` (true when
/// `message` is one): keeps the result, says `notifications/initialized` to a legacy server, and
/// wakes the request that waits for it. A refusal of `initialize` as a 2026-07-28 server refuses
/// it is followed by `server/discover` ([`take_discover_answer`]).
pub(crate) fn take_handshake_answer(session: &Session, message: &Map<String, Value>) -> bool {
    if message.contains_key("method") {
        return false;
    }
    if message.get("id") == Some(&json!(DISCOVER_ID)) {
        return take_discover_answer(session, message);
    }
    if message.get("id") != Some(&json!(HANDSHAKE_ID)) {
        return false;
    }
    let mut state = lock(&session.revisions.state);
    if !state.waiting {
        return false;
    }
    if refused_as_modern(message) && state.discovering.is_none() {
        // Still waiting: for the server's `server/discover` result now.
        state.discovering = Some(Discovering::Own);
        drop(state);
        session.forward(&discover_request());
        return true;
    }
    state.waiting = false;
    match message.get("result") {
        Some(result @ Value::Object(_)) => {
            state.server = Some(result.clone());
            drop(state);
            session.forward(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        }
        _ => {
            state.failed = Some(format!(
                "the MCP server refused sc-mcp's initialize: {}",
                message.get("error").unwrap_or(&Value::Null)
            ));
            drop(state);
        }
    }
    session.revisions.changed.notify_all();
    true
}

/// Keeps the server's answer to the client's own `initialize`, for `server/discover`.
pub(crate) fn keep_initialize_result(session: &Session, result: &Value) {
    let mut state = lock(&session.revisions.state);
    if state.server.is_none() && result.is_object() {
        state.server = Some(result.clone());
    }
}

/// The server refused a legacy client's `initialize` as a 2026-07-28 server does: sc-mcp asks it
/// `server/discover`, and answers the client's `initialize` from that result
/// ([`take_discover_answer`]).
pub(crate) fn discover_for_client(session: &Session, request: PendingRequest) {
    let mut state = lock(&session.revisions.state);
    if state.discovering.is_some() {
        drop(state);
        session.fail_request(
            request,
            "the MCP server refused initialize while sc-mcp was already asking it server/discover",
        );
        return;
    }
    state.discovering = Some(Discovering::Client(Box::new(request)));
    drop(state);
    session.forward(&discover_request());
}

/// Takes the server's answer to sc-mcp's `server/discover` (true when one was asked): a result
/// naming 2026-07-28 makes the server a 2026-07-28 one, kept (as an `initialize` result) for
/// `server/discover` and given to the legacy client whose `initialize` waits; anything else
/// fails the handshake that waits, with the server's error.
fn take_discover_answer(session: &Session, message: &Map<String, Value>) -> bool {
    let mut state = lock(&session.revisions.state);
    let Some(discovering) = state.discovering.take() else {
        return false;
    };
    let made = message
        .get("result")
        .and_then(|result| initialize_from_discover(result, state.client_version.as_deref()));
    match made {
        Some(result) => {
            state.server = Some(result.clone());
            state.waiting = false;
            session
                .revisions
                .server_modern
                .store(true, std::sync::atomic::Ordering::SeqCst);
            drop(state);
            session.narrate(
                "sc-mcp: the MCP server speaks 2026-07-28 only (it refused initialize): sc-mcp speaks 2026-07-28 to it, and translates",
            );
            if let Discovering::Client(request) = discovering {
                session.to_client(&result_response(&request.id.value, &result));
            }
        }
        None => {
            let why = format!(
                "the MCP server refused initialize, and its answer to server/discover names no revision sc-mcp speaks: {}",
                message.get("error").unwrap_or(&Value::Null)
            );
            match discovering {
                Discovering::Own => {
                    state.waiting = false;
                    state.failed = Some(why);
                    drop(state);
                }
                Discovering::Client(request) => {
                    drop(state);
                    session.fail_request(*request, &why);
                }
            }
        }
    }
    session.revisions.changed.notify_all();
    true
}

/// The server's side ended: a legacy client's `initialize` that waits for `server/discover` is
/// answered with an error, and sc-mcp's own handshake fails.
pub(crate) fn end_discovering(session: &Session) -> bool {
    let mut state = lock(&session.revisions.state);
    let discovering = state.discovering.take();
    let why = "the MCP server exited before answering server/discover";
    let failed = match discovering {
        Some(Discovering::Client(request)) => {
            drop(state);
            session.fail_request(*request, why);
            true
        }
        Some(Discovering::Own) => {
            state.waiting = false;
            state.failed = Some(why.to_owned());
            drop(state);
            false
        }
        None => false,
    };
    session.revisions.changed.notify_all();
    failed
}
