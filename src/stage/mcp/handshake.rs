//! sc-mcp's own `initialize` with a legacy server, made when a 2026-07-28 client (which has no
//! handshake) sends its first request, and the server's `initialize` result kept for
//! `server/discover` ([`super::revision`]).

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::revision::{HANDSHAKE_ID, LEGACY_TO_SERVER};
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

/// Takes the server's answer to sc-mcp's own `initialize` (true when `message` is it): keeps the
/// result, says `notifications/initialized`, and wakes the request that waits for it.
pub(crate) fn take_handshake_answer(session: &Session, message: &Map<String, Value>) -> bool {
    if message.get("id") != Some(&json!(HANDSHAKE_ID)) || message.contains_key("method") {
        return false;
    }
    let mut state = lock(&session.revisions.state);
    if !state.waiting {
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
