//! The MCP revisions sc-mcp speaks to the client, and the translation to the server's.
//!
//! A client speaks one of two eras, told apart per request:
//! - **legacy** (2025-06-18, 2025-11-25): an `initialize` handshake, then plain requests. These
//!   are relayed as they come (the rest of sc-mcp);
//! - **modern** (2026-07-28): no handshake; every request carries
//!   `_meta["io.modelcontextprotocol/protocolVersion"]` and `…/clientCapabilities`, and every
//!   result a `resultType`. [`read_modern`] reads such a request and strips the per-request
//!   protocol keys (the rest of `_meta`, `traceparent` included, is passed on).
//!
//! The server is spoken to in the newest revision it speaks: sc-mcp opens with `server/discover`
//! and falls back to `initialize` with a legacy server ([`super::handshake`]), translating each
//! way. `server/discover` from a client is answered by sc-mcp from the server's `initialize`
//! result (or the one made from its `server/discover`), filtered by the policy ([`discover_result`]), and each
//!   answer to a modern request gains `resultType: "complete"` and, on a list or read, `ttlMs: 0`
//!   and `cacheScope: "private"` where the server gave none ([`to_modern_result`]).
//!
//! A held `tools/call` from a modern client that declared elicitation is answered with
//! `input_required` ([`super::mrtr`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use serde_json::{json, Map, Value};

use super::pending::PendingRequest;
use super::protocol::{IdKey, METHOD_NOT_FOUND};
use crate::rules::policy::Policy;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The revision a modern client speaks.
pub(crate) const MODERN: &str = "2026-07-28";
/// Every revision sc-mcp speaks to a client, newest first.
pub(crate) const SUPPORTED: [&str; 3] = [MODERN, "2025-11-25", "2025-06-18"];
/// The legacy revision sc-mcp asks a server for in its own handshake.
pub(crate) const LEGACY_TO_SERVER: &str = "2025-11-25";

pub(crate) const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// The per-request protocol keys a legacy server is not given.
const PROTOCOL_KEYS: [&str; 4] = [
    VERSION_KEY,
    CAPABILITIES_KEY,
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/logLevel",
];
/// JSON-RPC: Unsupported protocol version (2026-07-28).
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The id of sc-mcp's own `initialize` to the server: it starts with the prefix of sc-mcp's own
/// ids, which a server's request may never use (see `server.rs`).
pub(crate) const HANDSHAKE_ID: &str = "sc-mcp-elicit-initialize";
/// The id of sc-mcp's own `server/discover`, with which it opens with the server.
pub(crate) const DISCOVER_ID: &str = "sc-mcp-elicit-discover";

/// What a modern request said of itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Modern {
    pub version: String,
    /// The client declared elicitation in form mode for this request.
    pub elicits_form: bool,
    /// The method, for the answer's `ttlMs`/`cacheScope`.
    pub method: String,
    /// The request without the per-request protocol keys, as the server is given it.
    pub stripped: Vec<u8>,
    /// The request as read (with the keys stripped), for the retry's `requestState`.
    pub message: Map<String, Value>,
}

/// Reads a client message as a modern request: `None` when it is not one (no version in
/// `params._meta`, or not a request), the message as it came.
pub(crate) fn read_modern(bytes: &[u8]) -> Option<Modern> {
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(bytes) else {
        return None;
    };
    let method = message.get("method")?.as_str()?.to_owned();
    message.get("id")?;
    let params = message.get_mut("params")?.as_object_mut()?;
    let meta = params.get_mut("_meta")?.as_object_mut()?;
    let version = meta.get(VERSION_KEY)?.as_str()?.to_owned();
    let capabilities = meta.get(CAPABILITIES_KEY).cloned();
    for key in PROTOCOL_KEYS {
        meta.shift_remove(key);
    }
    if meta.is_empty() {
        params.shift_remove("_meta");
    }
    let elicits_form = crate::approve::elicitation::declares_form_elicitation(Some(
        &json!({"capabilities": capabilities.unwrap_or(Value::Null)}),
    ));
    let stripped = serde_json::to_vec(&message).expect("a JSON object serializes");
    Some(Modern {
        version,
        elicits_form,
        method,
        stripped,
        message,
    })
}

/// The error a modern request in a revision sc-mcp does not speak gets.
pub(crate) fn unsupported(id: &Value, requested: &str) -> Vec<u8> {
    crate::json_write::JsonLine::new()
        .field("jsonrpc", "2.0")
        .field("id", id)
        .field(
            "error",
            &json!({
                "code": UNSUPPORTED_PROTOCOL_VERSION,
                "message": "Unsupported protocol version",
                "data": {"supported": SUPPORTED, "requested": requested},
            }),
        )
        .finish()
}

/// The server's side of the revisions: its `initialize` result, and which requests awaiting an
/// answer came from a modern client.
#[derive(Debug, Default)]
pub(crate) struct Revisions {
    pub(crate) state: Mutex<Handshake>,
    pub(crate) changed: Condvar,
    /// The server speaks 2026-07-28 (its `server/discover` said so): each request to it carries
    /// the per-request protocol keys ([`with_envelope`]), and its results lose `resultType` for a
    /// legacy client.
    pub(crate) server_modern: AtomicBool,
}

impl Revisions {
    pub(crate) fn server_is_modern(&self) -> bool {
        self.server_modern.load(Ordering::SeqCst)
    }
}

/// Who a `server/discover` sc-mcp sent to the server is for.
#[derive(Debug)]
pub(crate) enum Discovering {
    /// sc-mcp's own handshake, for a 2026-07-28 client ([`super::handshake::ensure_handshake`]).
    Own,
    /// A legacy client's `initialize` (as it came), answered from the server's
    /// `server/discover` result, or forwarded to a legacy server.
    Client {
        request: Box<PendingRequest>,
        bytes: Vec<u8>,
    },
}

#[derive(Debug, Default)]
pub(crate) struct Handshake {
    /// The server's `initialize` result (the client's handshake, or sc-mcp's own).
    pub(crate) server: Option<Value>,
    /// sc-mcp's own handshake was sent and is not answered yet.
    pub(crate) waiting: bool,
    /// Why sc-mcp's own handshake failed.
    pub(crate) failed: Option<HandshakeError>,
    /// Requests from a modern client awaiting the server's answer, with their method.
    pub(crate) modern: std::collections::HashMap<IdKey, String>,
    /// sc-mcp's `server/discover` to the server, not answered yet.
    pub(crate) discovering: Option<Discovering>,
    /// The server answered `server/discover` as a legacy server: it is opened with `initialize`.
    pub(crate) fell_back: bool,
    /// The revision a legacy client asked for in its `initialize`.
    pub(crate) client_version: Option<String>,
}

/// The keys sc-mcp's requests to a 2026-07-28 server carry in `params._meta`: the revision, no
/// client capabilities (a server's request to the client cannot be carried back yet), and
/// sc-mcp as the client.
fn envelope() -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(VERSION_KEY.to_owned(), json!(MODERN));
    meta.insert(CAPABILITIES_KEY.to_owned(), json!({}));
    meta.insert(
        "io.modelcontextprotocol/clientInfo".to_owned(),
        json!({"name": "sc-mcp", "version": env!("CARGO_PKG_VERSION")}),
    );
    meta
}

/// A request for a 2026-07-28 server: `params._meta` gains the per-request protocol keys
/// ([`envelope`]), the rest of `_meta` (`traceparent`…) kept. `None` when `bytes` is not a
/// request (a notification, an answer) or its `params` or `_meta` is not an object: it goes as
/// it came, for the server to refuse.
pub(crate) fn with_envelope(bytes: &[u8]) -> Option<Vec<u8>> {
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(bytes) else {
        return None;
    };
    if !message.contains_key("method") || !message.contains_key("id") {
        return None;
    }
    let params = message
        .entry("params")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()?;
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()?;
    for (key, value) in envelope() {
        meta.insert(key, value);
    }
    Some(serde_json::to_vec(&message).expect("a JSON object serializes"))
}

/// sc-mcp's own `server/discover`, its first request to the server.
pub(crate) fn discover_request() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": DISCOVER_ID,
        "method": "server/discover",
        "params": {"_meta": envelope()},
    }))
    .expect("JSON serializes")
}

/// Whether an error answer to `initialize` is a 2026-07-28 server's: `-32022` with `2026-07-28`
/// among its supported revisions, or `-32601` (a server with no `initialize` at all).
pub(crate) fn refused_as_modern(message: &Map<String, Value>) -> bool {
    let Some(error) = message.get("error") else {
        return false;
    };
    match error.get("code").and_then(Value::as_i64) {
        Some(UNSUPPORTED_PROTOCOL_VERSION) => error
            .pointer("/data/supported")
            .and_then(Value::as_array)
            .is_some_and(|supported| supported.iter().any(|version| version == MODERN)),
        Some(METHOD_NOT_FOUND) => true,
        _ => false,
    }
}

/// A `server/discover` result that names 2026-07-28 among its supported revisions, made the
/// `initialize` result a legacy client reads (in the revision it asked for, when sc-mcp speaks
/// it): the capabilities, the server's info (a member, or in `_meta`) and its instructions.
pub(crate) fn initialize_from_discover(
    discovered: &Value,
    client_version: Option<&str>,
) -> Option<Value> {
    let speaks_modern = discovered
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|versions| versions.iter().any(|version| version == MODERN));
    if !speaks_modern {
        return None;
    }
    let version = client_version
        .filter(|version| *version != MODERN && SUPPORTED.contains(version))
        .unwrap_or(LEGACY_TO_SERVER);
    let info = discovered
        .get("serverInfo")
        .or_else(|| discovered.pointer("/_meta/io.modelcontextprotocol~1serverInfo"))
        .filter(|info| info.is_object())
        .cloned()
        .unwrap_or_else(|| json!({"name": "mcp-server", "version": "unknown"}));
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": discovered.get("capabilities").filter(|c| c.is_object()).cloned().unwrap_or_else(|| json!({})),
        "serverInfo": info,
    });
    if let Some(instructions) = discovered.get("instructions").filter(|i| i.is_string()) {
        result["instructions"] = instructions.clone();
    }
    Some(result)
}

/// The answer to `server/discover`: the server's capabilities (from its `initialize` result),
/// without what sc-mcp does not relay to a modern client (server-to-client requests cannot be
/// carried, and no tools when the policy lets the agent call none), and the revisions sc-mcp
/// speaks.
pub(crate) fn discover_result(server: &Value, policy: &Policy, agent: &str) -> Value {
    let mut capabilities = server
        .get("capabilities")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    capabilities.shift_remove("experimental");
    capabilities.shift_remove("extensions");
    capabilities.shift_remove("tasks");
    if policy
        .allowed_tools(agent)
        .is_some_and(|allowed| allowed.patterns().is_empty())
    {
        capabilities.shift_remove("tools");
    }
    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": SUPPORTED,
        "capabilities": capabilities,
        "ttlMs": 0,
        "cacheScope": "private",
    });
    if let Some(instructions) = server.get("instructions").filter(|i| i.is_string()) {
        result["instructions"] = instructions.clone();
    }
    if let Some(info) = server.get("serverInfo") {
        result["_meta"] = json!({"io.modelcontextprotocol/serverInfo": info});
    }
    result
}

/// An answer sc-mcp writes itself to a 2026-07-28 client's request (a refusal, an error), as
/// that revision reads it: `Some` with `resultType` (and a list's cache hints) added. Answers the
/// server gave were made so already ([`to_modern_result`]).
pub(crate) fn for_modern_client(revisions: &Revisions, message: &[u8]) -> Option<Vec<u8>> {
    let mut state = lock(&revisions.state);
    if state.modern.is_empty() {
        return None;
    }
    let mut value: Map<String, Value> = serde_json::from_slice(message).ok()?;
    if value.contains_key("method") {
        return None;
    }
    let key = value.get("id").and_then(IdKey::of_reference)?;
    let method = state.modern.remove(&key)?;
    drop(state);
    let result = value.get_mut("result")?;
    if !to_modern_result(result, &method) {
        return None;
    }
    let mut line = serde_json::to_vec(&value).expect("a JSON object serializes");
    line.push(b'\n');
    Some(line)
}

/// The methods whose results are cacheable in 2026-07-28 (`ttlMs` and `cacheScope` required).
fn is_cacheable(method: &str) -> bool {
    matches!(
        method,
        "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "server/discover"
    )
}

/// Makes a legacy server's result a 2026-07-28 one for a modern client's request of `method`:
/// `resultType: "complete"` where it has none, and on a cacheable result `ttlMs: 0` and
/// `cacheScope: "private"` where the server gave none. True when it changed.
pub(crate) fn to_modern_result(result: &mut Value, method: &str) -> bool {
    let Some(result) = result.as_object_mut() else {
        return false;
    };
    let mut changed = false;
    if !result.contains_key("resultType") {
        result.insert("resultType".to_owned(), json!("complete"));
        changed = true;
    }
    if is_cacheable(method) {
        if !result.contains_key("ttlMs") {
            result.insert("ttlMs".to_owned(), json!(0));
            changed = true;
        }
        if !result.contains_key("cacheScope") {
            result.insert("cacheScope".to_owned(), json!("private"));
            changed = true;
        }
    }
    changed
}

/// Why sc-mcp could not open with the MCP server for a 2026-07-28 client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HandshakeError {
    #[error("the MCP server did not answer sc-mcp's initialize")]
    NoAnswer,
    #[error("the MCP server refused sc-mcp's initialize: {0}")]
    Refused(String),
    #[error("the MCP server refused initialize, and its answer to server/discover names no revision sc-mcp speaks: {0}")]
    NoRevision(String),
    #[error("the MCP server exited before answering server/discover")]
    ExitedAtDiscover,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modern_request_loses_only_the_protocol_keys() {
        let line = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}}}"#;
        let modern = read_modern(line).unwrap();
        assert_eq!(modern.version, "2026-07-28");
        assert!(modern.elicits_form);
        assert_eq!(
            String::from_utf8(modern.stripped).unwrap(),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}}}"#
        );
        let bare = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let modern = read_modern(bare).unwrap();
        assert!(!modern.elicits_form);
        assert_eq!(
            String::from_utf8(modern.stripped).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#
        );
        // Legacy requests and notifications are not modern.
        assert!(read_modern(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).is_none());
        assert!(read_modern(br#"{"jsonrpc":"2.0","method":"n","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#).is_none());
    }

    #[test]
    fn results_gain_result_type_and_cache_hints_only_where_missing() {
        let mut list = json!({"tools": []});
        assert!(to_modern_result(&mut list, "tools/list"));
        assert_eq!(
            list,
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
        let mut given =
            json!({"tools": [], "resultType": "complete", "ttlMs": 5000, "cacheScope": "public"});
        assert!(!to_modern_result(&mut given, "tools/list"));
        let mut call = json!({"content": []});
        to_modern_result(&mut call, "tools/call");
        assert_eq!(call, json!({"content": [], "resultType": "complete"}));
    }

    #[test]
    fn a_request_to_a_modern_server_gains_the_envelope_and_keeps_its_meta() {
        let line = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","_meta":{"traceparent":"x"}}}"#;
        let sent: Value = serde_json::from_slice(&with_envelope(line).unwrap()).unwrap();
        let meta = &sent["params"]["_meta"];
        assert_eq!(meta["traceparent"], "x");
        assert_eq!(meta[VERSION_KEY], MODERN);
        assert_eq!(meta[CAPABILITIES_KEY], json!({}));
        let bare: Value = serde_json::from_slice(
            &with_envelope(br#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#).unwrap(),
        )
        .unwrap();
        assert_eq!(bare["params"]["_meta"][VERSION_KEY], MODERN);
        // Notifications, answers and a `params` that is not an object go as they came.
        assert!(
            with_envelope(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#).is_none()
        );
        assert!(with_envelope(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_none());
        assert!(with_envelope(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#).is_none());
    }

    #[test]
    fn a_modern_servers_refusal_and_discover_make_a_legacy_initialize_result() {
        let refusal = |error: Value| {
            json!({"jsonrpc": "2.0", "id": 1, "error": error})
                .as_object()
                .unwrap()
                .clone()
        };
        assert!(refused_as_modern(&refusal(
            json!({"code": -32022, "message": "m", "data": {"supported": ["2026-07-28"]}})
        )));
        assert!(refused_as_modern(&refusal(
            json!({"code": -32601, "message": "m"})
        )));
        assert!(!refused_as_modern(&refusal(
            json!({"code": -32022, "message": "m", "data": {"supported": ["2030-01-01"]}})
        )));
        assert!(!refused_as_modern(&refusal(
            json!({"code": -32603, "message": "m"})
        )));
        let discovered = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": true}}, "instructions": "hi",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "py", "version": "1"}},
            "ttlMs": 0, "cacheScope": "private"});
        let result = initialize_from_discover(&discovered, Some("2025-06-18")).unwrap();
        assert_eq!(
            result,
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "py", "version": "1"}, "instructions": "hi"})
        );
        let result = initialize_from_discover(&discovered, Some("2026-07-28")).unwrap();
        assert_eq!(result["protocolVersion"], LEGACY_TO_SERVER);
        let legacy_only = json!({"supportedVersions": ["2025-11-25"], "capabilities": {}});
        assert!(initialize_from_discover(&legacy_only, None).is_none());
    }

    #[test]
    fn discover_answers_from_the_servers_capabilities_filtered_by_the_policy() {
        let server = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": true}, "experimental": {"x": {}}}, "serverInfo": {"name": "fs", "version": "1"}, "instructions": "hi"});
        let policy = Policy::from_json_str(r#"{"agents":{"none":[]}}"#).unwrap();
        let result = discover_result(&server, &policy, "fs");
        assert_eq!(
            result["capabilities"],
            json!({"tools": {"listChanged": true}})
        );
        assert_eq!(result["supportedVersions"][0], "2026-07-28");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "fs"
        );
        assert_eq!(result["ttlMs"], 0);
        let result = discover_result(&server, &policy, "none");
        assert_eq!(result["capabilities"], json!({}));
    }
}
