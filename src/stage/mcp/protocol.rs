//! JSON-RPC as sc-mcp reads and writes it: what a client message is, request ids and how they
//! are compared, and the responses sc-mcp writes itself.

use serde_json::{json, Map, Value};

use crate::approve::elicitation;
use crate::json_write::JsonLine;
use crate::strict_json;

/// The largest integer id accepted: 2^53 − 1, JavaScript's `Number.MAX_SAFE_INTEGER`. A larger
/// one would come back from a JavaScript server rounded, as the id of another request or of none.
pub(crate) const MAX_EXACT_ID: u64 = (1 << 53) - 1;

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
pub(super) const INVALID_REQUEST: i64 = -32600;
pub(super) const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
pub(super) const INTERNAL_ERROR: i64 = -32603;

// ---------------------------------------------------------------------------------------------
// Messages from the client

/// What a client message is, as far as the gate is concerned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClientMessage<'a> {
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

/// Why a request's `id` is refused ([`IdKey::of_request`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadRequestId {
    /// An integer past what every JSON reader holds exactly.
    #[error(
        "a request's `id` must be a string or an integer from -{MAX_EXACT_ID} to {MAX_EXACT_ID} (which every JSON reader holds exactly), not {0}"
    )]
    TooLarge(serde_json::Number),
    /// A fraction, an exponent or `-0`.
    #[error(
        "a request's `id` must be a string or an integer written as one, not {0} (a fraction, an exponent or -0, which a server may read as another integer and answer with it)"
    )]
    NotAnInteger(serde_json::Number),
    #[error("a request's `id` must be a string or an integer, not {found}")]
    NotAnId { found: &'static str },
}

/// A request id as sc-mcp compares ids: by value, never by text. A string never equals a number
/// (`"2"` is not `2`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum IdKey {
    Integer(i64),
    String(String),
}

impl IdKey {
    /// The id of a request from the client: a string, or an integer written as one (no fraction,
    /// no exponent, not `-0`) within ±[`MAX_EXACT_ID`]. Anything else is refused with the reason:
    /// `2.0` or `1e0` is read as `2` or `1` by a JavaScript server, which answers with that, and a
    /// larger integer comes back rounded, so the answer could not be told apart.
    pub(crate) fn of_request(id: &Value) -> Result<IdKey, BadRequestId> {
        match id {
            Value::String(text) => Ok(IdKey::String(text.clone())),
            Value::Number(number) if number.is_i64() || number.is_u64() => match number.as_i64() {
                Some(integer) if integer.unsigned_abs() <= MAX_EXACT_ID => {
                    Ok(IdKey::Integer(integer))
                }
                _ => Err(BadRequestId::TooLarge(number.clone())),
            },
            Value::Number(number) => Err(BadRequestId::NotAnInteger(number.clone())),
            other => Err(BadRequestId::NotAnId {
                found: strict_json::type_name(other),
            }),
        }
    }

    /// The key of an id that names a request (in a server's answer, in a cancellation): a number
    /// by its value, as JavaScript and Python read it, so `2.0` and `1e0` name `2` and `1`. `None`
    /// when it can name no request the client was let send.
    pub(crate) fn of_reference(id: &Value) -> Option<IdKey> {
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
pub(crate) struct RequestId {
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
pub(crate) fn classify_client_message(bytes: &[u8]) -> ClientMessage<'_> {
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
    if let Some(reason) = spelt_otherwise(&object, text) {
        return refused(
            answerable(object.get("id")).into_iter().collect(),
            INVALID_REQUEST,
            reason,
        );
    }
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
    if let Some(known) = known_method_spelt_otherwise(method) {
        return refused(
            echo(),
            INVALID_REQUEST,
            format!(
                "the method `{}` is not `{known}`, but a server that matches methods without case, or drops white space or control characters, would take it for `{known}` (which the gate reads as written)",
                crate::sanitize::quoted(method)
            ),
        );
    }
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
        Some(Err(reason)) => return refused(echo(), INVALID_REQUEST, reason.to_string()),
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
    // A task-augmented call is answered with a task, and its result comes later in
    // `tasks/result`, which the gate would not see: provenance and the audit log need the
    // call's own result.
    if params.contains_key("task") {
        return invalid(
            "a task-augmented tools/call (`params.task`) is not relayed: the gate must see the call's result; call the tool without `task`"
                .to_owned(),
        );
    }
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

/// The MCP methods a client sends that sc-mcp knows: the ones it decides (`tools/call`), reads
/// or changes the answer to (`initialize`, `tools/list`, `server/discover`, a cancellation…), and
/// the others of MCP, whose names a server routes on.
const KNOWN_METHODS: [&str; 22] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/call",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
];

/// The known method ([`KNOWN_METHODS`]) that `method` is spelt otherwise, or `None`: not one of
/// them as written, but one of them once case is folded (fullwidth letters as ASCII, as
/// [`crate::call::fold_key`] does) and white space and control or invisible characters dropped.
/// `Tools/call`, `TOOLS/CALL`, `tools/call ` and `tools/call\u0000` reach a server that routes
/// methods so as `tools/call`, which the gate would have forwarded undecided (a review).
///
/// A second review got `tools//call`, `tools/call/`, `tools%2Fcall`, `tools\\call` and
/// `tools\u{2215}call` through: a router that collapses or trims slashes, decodes percent
/// escapes or folds look-alike characters reads those as `tools/call` too. So the comparison is
/// of the letters and digits alone, after percent escapes are decoded: every known method
/// differs from every other in them.
pub(crate) fn known_method_spelt_otherwise(method: &str) -> Option<&'static str> {
    if KNOWN_METHODS.contains(&method) {
        return None;
    }
    let squeezed = |name: &str| -> String {
        crate::call::fold_key(&percent_decoded(name))
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect()
    };
    let folded = squeezed(method);
    KNOWN_METHODS
        .iter()
        .find(|known| squeezed(known) == folded)
        .copied()
}

/// `text` with each `%XX` escape decoded (as a URL router would), the rest as it is.
fn percent_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// The keys of a JSON-RPC message, and of the `params` of the MCP requests and notifications
/// (a `tools/call`'s, a cancellation's `requestId`, a retry's `inputResponses`…), as the gate
/// and servers read them.
const MESSAGE_KEYS: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];
const PARAMS_KEYS: [&str; 18] = [
    "name",
    "arguments",
    "_meta",
    "task",
    "requestId",
    "reason",
    "cursor",
    "uri",
    "protocolVersion",
    "capabilities",
    "clientInfo",
    "progressToken",
    "level",
    "ref",
    "argument",
    "taskId",
    "inputResponses",
    "requestState",
];

/// Why a message may read differently to a server than to the gate, or `None`: two keys of one
/// object, at any depth, that differ only in case, fullwidth letters or invisible characters
/// ([`crate::call::fold_key`]), or a key spelt so of one the gate reads (`Method`, `Params`, a
/// `tools/call`'s `Name` or `argumentſ`, a cancellation's `RequestId`). A server that matches names without case (Go's
/// `encoding/json`, which takes the last of two, .NET's web defaults) would read `Method` as the
/// method, or `Name` over `name`, where the gate read another or none (a review ran a denied
/// tool so).
pub(crate) fn spelt_otherwise(object: &Map<String, Value>, text: &str) -> Option<String> {
    if !crate::call::keys_may_fold_alike(text) {
        return None;
    }
    if let Some((path, first, second)) = crate::call::keys_spelt_alike(object) {
        let within = if path.is_empty() {
            "the message".to_owned()
        } else {
            format!("`{}`", path.join("."))
        };
        return Some(format!(
            "{within} holds both `{}` and `{}`, which differ only in case, fullwidth letters or invisible characters: a server that reads names without case would take either",
            crate::sanitize::quoted(&first),
            crate::sanitize::quoted(&second)
        ));
    }
    fn stray(
        object: &Map<String, Value>,
        known: &[&'static str],
    ) -> Option<(String, &'static str)> {
        object.keys().find_map(|key| {
            let folded = crate::call::fold_key(key);
            known
                .iter()
                .find(|known| crate::call::fold_key(known) == folded && **known != key)
                .map(|known| (key.clone(), *known))
        })
    }
    let params = object
        .get("params")
        .and_then(Value::as_object)
        .filter(|_| object.contains_key("method"));
    stray(object, &MESSAGE_KEYS)
        .or_else(|| params.and_then(|params| stray(params, &PARAMS_KEYS)))
        .map(|(key, known)| {
            format!(
                "the message has `{}` where JSON-RPC and MCP name `{known}`: a server that reads names without case would take it for `{known}`",
                crate::sanitize::quoted(&key)
            )
        })
}

// ---------------------------------------------------------------------------------------------
// Responses sc-mcp writes itself

/// A JSON-RPC error response.
pub(crate) fn error_response(id: &Value, code: i64, message: &str) -> Vec<u8> {
    JsonLine::new()
        .field("jsonrpc", "2.0")
        .field("id", id)
        .field("error", &json!({"code": code, "message": message}))
        .finish()
}

/// The MCP protocol version sc-mcp answers `initialize` with itself (no server started) when the
/// client names none.
pub(super) const PROTOCOL_VERSION: &str = "2025-06-18";

/// A JSON-RPC result response.
pub(crate) fn result_response(id: &Value, result: &Value) -> Vec<u8> {
    JsonLine::new()
        .field("jsonrpc", "2.0")
        .field("id", id)
        .field("result", result)
        .finish()
}

/// A tool result that refuses the call: the model reads `text` and `isError: true`.
pub(crate) fn refusal_response(id: &Value, text: &str) -> Vec<u8> {
    JsonLine::new()
        .field("jsonrpc", "2.0")
        .field("id", id)
        .field(
            "result",
            &json!({"content": [{"type": "text", "text": text}], "isError": true}),
        )
        .finish()
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;
