//! How sc-mcp opens with the server, in the newest revision the server speaks: it asks
//! `server/discover` first (as the 2026-07-28 revision recommends on stdio), and a server whose
//! answer names 2026-07-28 is spoken to in 2026-07-28 from then on (each request carries the
//! per-request protocol keys, [`super::revision::with_envelope`]); a server that answers any other
//! way (`-32601`, any error, or a result naming only legacy revisions) is a legacy one, opened with
//! `initialize`.
//!
//! The opening is made when a legacy client sends its `initialize` (answered from
//! `server/discover`, or forwarded as it came to a legacy server), or when a 2026-07-28 client,
//! which has no handshake, sends its first request (sc-mcp then makes its own `initialize` with a
//! legacy server, [`ensure_handshake`]). The server's `initialize` result (or the one made from its
//! `server/discover`) is kept for the client's `server/discover` ([`super::revision`]).

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::pending::PendingRequest;
use super::protocol::result_response;
use super::revision::{
    discover_request, initialize_from_discover, refused_as_modern, Discovering, HandshakeError,
    DISCOVER_ID, HANDSHAKE_ID, LEGACY_TO_SERVER,
};
use super::session::{lock, Session};

/// How long the server has to answer sc-mcp's own `server/discover` and `initialize`.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(60);

/// sc-mcp's own `initialize`, to a legacy server for a 2026-07-28 client.
fn own_initialize() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": HANDSHAKE_ID,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY_TO_SERVER,
            "capabilities": {},
            "clientInfo": {"name": "sc-mcp", "version": env!("CARGO_PKG_VERSION")},
        },
    }))
    .expect("JSON serializes")
}

/// Makes sure sc-mcp has opened with the server (by the client's own `initialize`, or else by
/// sc-mcp's `server/discover`, then its `initialize` to a legacy server, made now and waited
/// for), so a modern request can be given to it. `Err` says why not.
pub(crate) fn ensure_handshake(session: &Session) -> Result<(), HandshakeError> {
    let revisions = &session.revisions;
    let mut state = lock(&revisions.state);
    if state.server.is_some() {
        return Ok(());
    }
    if let Some(why) = &state.failed {
        return Err(why.clone());
    }
    if !state.waiting && state.discovering.is_none() {
        state.waiting = true;
        state.discovering = Some(Discovering::Own);
        drop(state);
        session.forward(&discover_request());
        state = lock(&revisions.state);
    }
    let deadline = Instant::now() + HANDSHAKE_WAIT;
    while state.server.is_none() && state.failed.is_none() {
        let now = Instant::now();
        if now >= deadline || session.is_stopping() {
            state.failed = Some(HandshakeError::NoAnswer);
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
        (None, None) => Err(HandshakeError::NoAnswer),
    }
}

/// A legacy client's `initialize` (`bytes`, awaited as `request`): answered from the server's
/// `server/discover` when the server speaks 2026-07-28, forwarded as it came to a legacy server.
/// The first one asks `server/discover` ([`take_discover_answer`] goes on).
pub(crate) fn initialize_for_client(
    session: &Session,
    bytes: &[u8],
    request: PendingRequest,
) -> anyhow::Result<()> {
    let mut state = lock(&session.revisions.state);
    if session.revisions.server_is_modern() {
        if let Some(result) = state.server.clone() {
            drop(state);
            session.to_client(&result_response(&request.id.value, &result));
            return Ok(());
        }
    }
    if state.discovering.is_some() {
        drop(state);
        session.fail_request(
            request,
            "the client's initialize came while sc-mcp was asking the MCP server server/discover",
        );
        return Ok(());
    }
    if state.fell_back || state.server.is_some() || state.failed.is_some() {
        drop(state);
        return session.forward_request(bytes, request);
    }
    state.discovering = Some(Discovering::Client {
        request: Box::new(request),
        bytes: bytes.to_vec(),
    });
    drop(state);
    session.forward(&discover_request());
    Ok(())
}

/// Takes the server's answer to sc-mcp's own `initialize` or `server/discover` (true when
/// `message` is one): keeps the result, says `notifications/initialized` to a legacy server, and
/// wakes the request that waits for it.
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
    if !state.waiting || state.discovering.is_some() {
        return false;
    }
    state.waiting = false;
    match message.get("result") {
        Some(result @ Value::Object(_)) => {
            state.server = Some(result.clone());
            drop(state);
            session.forward(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        }
        _ => {
            let error = message.get("error").unwrap_or(&Value::Null).to_string();
            // It answered server/discover as a legacy server, and refuses initialize as a
            // 2026-07-28 one: no revision both speak.
            state.failed = Some(if refused_as_modern(message) {
                HandshakeError::NoRevision(error)
            } else {
                HandshakeError::Refused(error)
            });
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
        drop(state);
        session.revisions.changed.notify_all();
    }
}

/// Takes the server's answer to sc-mcp's `server/discover` (true when one was asked): a result
/// naming 2026-07-28 makes the server a 2026-07-28 one, kept (as an `initialize` result) for
/// `server/discover` and given to the legacy client whose `initialize` waits; any other answer
/// (an error, `-32601` included, or a result naming legacy revisions only) makes it a legacy
/// one, opened with the client's `initialize` as it came, or with sc-mcp's own.
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
                "sc-mcp: the MCP server speaks 2026-07-28 (its server/discover says so): sc-mcp speaks 2026-07-28 to it, and translates",
            );
            if let Discovering::Client { request, .. } = discovering {
                session.to_client(&result_response(&request.id.value, &result));
            }
        }
        None => {
            state.fell_back = true;
            drop(state);
            match discovering {
                // Still waiting: for the server's `initialize` result now.
                Discovering::Own => session.forward(&own_initialize()),
                Discovering::Client { request, bytes } => {
                    if let Err(err) = session.forward_request(&bytes, *request) {
                        session.warn(&format!(
                            "cannot forward the client's initialize to the MCP server: {err}"
                        ));
                    }
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
    let why = HandshakeError::ExitedAtDiscover;
    let failed = match discovering {
        Some(Discovering::Client { request, .. }) => {
            drop(state);
            session.fail_request(*request, &why.to_string());
            true
        }
        Some(Discovering::Own) => {
            state.waiting = false;
            state.failed = Some(why);
            drop(state);
            false
        }
        None => false,
    };
    session.revisions.changed.notify_all();
    failed
}
