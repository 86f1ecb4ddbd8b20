//! `sc-mcp --listen ADDR`: MCP over Streamable HTTP at `/mcp`, in front of the same run as stdio.
//!
//! Each HTTP client is a principal of its own (its agent name from `--agent-header`, else
//! `--agent`), with a session of its own: the very run a stdio client gets
//! ([`super::proxy::run_with_io`], so the same decision path), fed the client's messages one
//! line each, its answers routed back to the `POST` they answer. A request's `POST` is answered
//! with an event stream carrying what sc-mcp sends the client while it waits (a held call's
//! elicitation) and then the answer; a notification's or a response's with `202 Accepted`.
//!
//! Every request is checked before anything reads it: the `Host` must be the listener's own
//! address (or `localhost` at its port) and an `Origin`, when given, the same (else 403: a page
//! on another name that resolves here, a DNS rebinding, gets nothing); the bearer token must be
//! the listener's (else 401); the body at most `--max-message-bytes` (else 413); at most
//! `--max-streams` requests wait at once (else 429); the 2026-07-28 routing headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) must say what the body says (else 400 with
//! JSON-RPC error −32020, HeaderMismatch). A principal's session that has been idle for
//! `--idle-timeout` ends (its server is stopped); its next request starts a new one.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::{self, PipeWriter, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use subtle::ConstantTimeEq;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::sync::Semaphore;

use super::protocol::IdKey;
use super::proxy::ClientIo;
use super::upstream::header_value;

pub use axum::http::HeaderName;

/// JSON-RPC's error for routing headers that do not say what the body says (2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;

/// Starts one principal's session: the agent's name and the client's messages; returns the
/// session's exit status when it ends.
pub type StartSession = Arc<dyn Fn(&str, ClientIo) -> Result<u8> + Send + Sync>;

/// What `--listen` was told.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// The bearer token every request must carry.
    pub token: String,
    /// The header an HTTP client names its agent in (`--agent-header`).
    pub agent_header: Option<HeaderName>,
    /// The agent of a client that names none.
    pub agent: String,
    pub max_body: usize,
    /// How many requests may wait for their answers at once, all clients together.
    pub max_streams: usize,
    /// How many principals may have a session at once.
    pub max_sessions: usize,
    /// A principal's session that long without a request ends.
    pub idle: Duration,
}

/// Binds `addr` (a loopback address unless `public`); returns the listener and the address it
/// is bound to (the port `:0` picked).
pub fn bind(addr: SocketAddr, public: bool) -> Result<(std::net::TcpListener, SocketAddr)> {
    if !public && !addr.ip().is_loopback() {
        return Err(crate::error::UsageError(format!(
            "--listen {addr} is not a loopback address: give --listen-public to serve other machines"
        ))
        .into());
    }
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("cannot listen on {addr} for MCP"))?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    Ok((listener, bound))
}

/// A new token: 32 bytes of the system's random source, as hex.
pub fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|err| anyhow::anyhow!("cannot read the system's random source: {err}"))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Serves MCP at `/mcp` until the process ends.
pub fn serve(
    listener: std::net::TcpListener,
    bound: SocketAddr,
    options: ListenOptions,
    start: StartSession,
) -> Result<u8> {
    let port = bound.port();
    let mut hosts = vec![bound.to_string(), format!("localhost:{port}")];
    if bound.ip().is_loopback() {
        hosts.push(format!("127.0.0.1:{port}"));
        hosts.push(format!("[::1]:{port}"));
    }
    hosts.dedup();
    let shared = Arc::new(Shared {
        streams: Arc::new(Semaphore::new(options.max_streams)),
        origins: hosts.iter().map(|host| format!("http://{host}")).collect(),
        hosts,
        options,
        start,
        sessions: Mutex::new(HashMap::new()),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("cannot start the MCP listener's runtime")?;
    runtime.block_on(async move {
        use axum::serve::ListenerExt;
        // Each answer leaves at once: without it, an event stream's last chunk waits for the
        // client's delayed acknowledgement (some 40 ms a call).
        let listener = tokio::net::TcpListener::from_std(listener)?.tap_io(|stream| {
            let _ = stream.set_nodelay(true);
        });
        let reaper = Arc::clone(&shared);
        tokio::spawn(async move { reap_idle(reaper).await });
        let app = Router::new()
            .route("/mcp", post(post_mcp).get(no_stream).delete(delete_mcp))
            .fallback(|| async { StatusCode::NOT_FOUND })
            .layer(DefaultBodyLimit::max(shared.options.max_body))
            .layer(middleware::from_fn_with_state(Arc::clone(&shared), guard))
            .with_state(shared);
        axum::serve(listener, app).await
    })?;
    Ok(crate::exit::SUCCESS)
}

struct Shared {
    options: ListenOptions,
    /// The `Host`s a request may carry: the bound address and port, and `localhost` at it.
    hosts: Vec<String>,
    /// The `Origin`s a request may carry: the same, as `http://` origins.
    origins: Vec<String>,
    start: StartSession,
    sessions: Mutex<HashMap<String, Arc<ClientSession>>>,
    streams: Arc<Semaphore>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One principal's session: the pipe its run reads, and the requests waiting for answers.
struct ClientSession {
    agent: String,
    id: String,
    input: Mutex<Option<PipeWriter>>,
    /// The requests waiting, oldest first, each with the stream its answer goes to.
    waiting: Mutex<Vec<(IdKey, UnboundedSender<Vec<u8>>)>>,
    last_used: Mutex<Instant>,
    ended: AtomicBool,
}

impl ClientSession {
    /// A message from the run to the client: an answer to the request it names, anything else
    /// (a question about a held call) on the newest waiting request's stream.
    fn deliver(&self, line: &[u8]) {
        let value: Option<Value> = serde_json::from_slice(line).ok();
        let answer = value
            .as_ref()
            .filter(|value| value.get("method").is_none())
            .and_then(|value| IdKey::of_reference(value.get("id")?));
        let mut waiting = lock(&self.waiting);
        match answer {
            Some(key) => {
                if let Some(at) = waiting.iter().position(|(id, _)| *id == key) {
                    let (_, stream) = waiting.remove(at);
                    let _ = stream.send(line.to_vec());
                    return;
                }
            }
            None => {
                if let Some((_, stream)) = waiting.last() {
                    let _ = stream.send(line.to_vec());
                    return;
                }
            }
        }
        drop(waiting);
        let _ = writeln!(
            io::stderr().lock(),
            "sc-mcp: listen: dropped a message for {}: no request of its is waiting",
            crate::sanitize::for_terminal(&self.agent)
        );
    }

    /// Writes one message to the run's input; `false` when the session has ended.
    fn write(&self, line: &[u8]) -> bool {
        let mut input = lock(&self.input);
        let Some(pipe) = input.as_mut() else {
            return false;
        };
        let written = pipe
            .write_all(line)
            .and_then(|()| pipe.write_all(b"\n"))
            .and_then(|()| pipe.flush());
        if written.is_err() {
            *input = None;
            return false;
        }
        true
    }

    /// The session ended: every request still waiting is answered with an error.
    fn end(&self, why: &str) {
        self.ended.store(true, Ordering::SeqCst);
        lock(&self.input).take();
        for (key, stream) in lock(&self.waiting).drain(..) {
            let id = match key {
                IdKey::Integer(n) => json!(n),
                IdKey::String(s) => json!(s),
            };
            let answer = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": format!("sc-mcp: {why}")}});
            let _ = stream.send(serde_json::to_vec(&answer).expect("JSON serializes"));
        }
    }
}

/// The run's output: lines, each delivered to the HTTP client.
struct SessionOutput {
    session: Arc<ClientSession>,
    buffer: Vec<u8>,
}

impl Write for SessionOutput {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        while let Some(end) = memchr::memchr(b'\n', &self.buffer) {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            if !crate::jsonl::is_blank(&line) {
                self.session.deliver(&line[..line.len() - 1]);
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Shared {
    /// The principal's live session, started when it has none.
    fn session_for(self: &Arc<Self>, agent: &str) -> Result<Arc<ClientSession>, Refusal> {
        let mut sessions = lock(&self.sessions);
        if let Some(session) = sessions.get(agent) {
            if !session.ended.load(Ordering::SeqCst) && lock(&session.input).is_some() {
                return Ok(Arc::clone(session));
            }
        }
        let live = sessions
            .values()
            .filter(|session| !session.ended.load(Ordering::SeqCst))
            .count();
        if live >= self.options.max_sessions {
            return Err(refused(
                StatusCode::SERVICE_UNAVAILABLE,
                &Value::Null,
                -32603,
                "sc-mcp: too many clients have a session; try again later",
            ));
        }
        let (reader, writer) = io::pipe().map_err(|_| internal())?;
        let session = Arc::new(ClientSession {
            agent: agent.to_owned(),
            id: new_token().map_err(|_| internal())?,
            input: Mutex::new(Some(writer)),
            waiting: Mutex::new(Vec::new()),
            last_used: Mutex::new(Instant::now()),
            ended: AtomicBool::new(false),
        });
        let io = ClientIo {
            input: reader.into(),
            output: Box::new(SessionOutput {
                session: Arc::clone(&session),
                buffer: Vec::new(),
            }),
        };
        let start = Arc::clone(&self.start);
        let shared = Arc::clone(self);
        let running = Arc::clone(&session);
        std::thread::Builder::new()
            .name("mcp-session".into())
            .spawn(move || {
                let why = match start(&running.agent, io) {
                    Ok(0) => "the session ended".to_owned(),
                    Ok(status) => {
                        format!("the session ended (status {status}): see sc-mcp's stderr")
                    }
                    Err(err) => format!("the session ended: {err:#}"),
                };
                running.end(&why);
                let _ = writeln!(
                    io::stderr().lock(),
                    "sc-mcp: listen: {}: {why}",
                    crate::sanitize::for_terminal(&running.agent)
                );
                let mut sessions = lock(&shared.sessions);
                if sessions
                    .get(&running.agent)
                    .is_some_and(|kept| Arc::ptr_eq(kept, &running))
                {
                    sessions.remove(&running.agent);
                }
            })
            .map_err(|_| internal())?;
        sessions.insert(agent.to_owned(), Arc::clone(&session));
        Ok(session)
    }
}

fn internal() -> Refusal {
    refused(
        StatusCode::INTERNAL_SERVER_ERROR,
        &Value::Null,
        -32603,
        "sc-mcp: cannot start a session",
    )
}

/// An HTTP refusal with a JSON-RPC error body.
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    id: Value,
    code: i64,
    message: String,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = json!({"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}});
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_vec(&body).expect("JSON serializes"),
        )
            .into_response()
    }
}

fn refused(status: StatusCode, id: &Value, code: i64, message: &str) -> Refusal {
    Refusal {
        status,
        id: id.clone(),
        code,
        message: message.to_owned(),
    }
}

fn refusal(status: StatusCode, id: &Value, code: i64, message: &str) -> Response {
    refused(status, id, code, message).into_response()
}

/// Ends the sessions idle for longer than `--idle-timeout`.
async fn reap_idle(shared: Arc<Shared>) {
    let every = (shared.options.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    loop {
        tokio::time::sleep(every).await;
        let idle: Vec<Arc<ClientSession>> = lock(&shared.sessions)
            .values()
            .filter(|session| {
                lock(&session.waiting).is_empty()
                    && lock(&session.last_used).elapsed() >= shared.options.idle
            })
            .cloned()
            .collect();
        for session in idle {
            // Closing its input ends the run, as a stdio client closing its input does.
            lock(&session.input).take();
        }
    }
}

/// Host, Origin and token, before anything else.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let hosts: Vec<&HeaderValue> = headers.get_all(header::HOST).iter().collect();
    let host_ok = matches!(hosts.as_slice(), [host] if shared.hosts.iter().any(|allowed| host.as_bytes() == allowed.as_bytes()));
    let origins: Vec<&HeaderValue> = headers.get_all(header::ORIGIN).iter().collect();
    let origin_ok = match origins.as_slice() {
        [] => true,
        [origin] => shared
            .origins
            .iter()
            .any(|allowed| origin.as_bytes() == allowed.as_bytes()),
        _ => false,
    };
    if !host_ok || !origin_ok {
        let why = if host_ok { "Origin" } else { "Host" };
        let _ = writeln!(
            io::stderr().lock(),
            "sc-mcp: listen: refused a request: its {why} is not this listener's (403)"
        );
        return refusal(
            StatusCode::FORBIDDEN,
            &Value::Null,
            -32600,
            &format!("sc-mcp: the {why} is not this listener's own"),
        );
    }
    let token_ok = bearer(headers)
        .is_some_and(|token| bool::from(token.as_bytes().ct_eq(shared.options.token.as_bytes())));
    if !token_ok {
        let mut response = refusal(
            StatusCode::UNAUTHORIZED,
            &Value::Null,
            -32600,
            "sc-mcp: no bearer token, or a wrong one",
        );
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    next.run(request).await
}

/// The token of the one `Authorization: Bearer TOKEN` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let (scheme, token) = value.to_str().ok()?.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The principal a request is made for: `--agent-header`'s value (letters, digits, `.`, `_`,
/// `-`, `@`; at most 64), else `--agent`.
fn principal(shared: &Shared, headers: &HeaderMap) -> Result<String, Refusal> {
    let Some(name) = &shared.options.agent_header else {
        return Ok(shared.options.agent.clone());
    };
    let values: Vec<&HeaderValue> = headers.get_all(name).iter().collect();
    match values.as_slice() {
        [] => Ok(shared.options.agent.clone()),
        [value] => {
            let text = value.to_str().unwrap_or("");
            let fine = !text.is_empty()
                && text.len() <= 64
                && text
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b));
            if fine {
                Ok(text.to_owned())
            } else {
                Err(refused(
                    StatusCode::BAD_REQUEST,
                    &Value::Null,
                    -32600,
                    &format!("sc-mcp: the {name} header is not an agent name (letters, digits, . _ - @; at most 64)"),
                ))
            }
        }
        _ => Err(refused(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            -32600,
            &format!("sc-mcp: more than one {name} header"),
        )),
    }
}

/// The one value of a header, `Err` when it is given more than once or is not text.
fn one<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ()> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(());
    }
    value.to_str().map(Some).map_err(|_| ())
}

/// Checks the routing headers against the body, as the 2026-07-28 transport asks: a message
/// that carries its protocol version in `_meta` must carry it in `MCP-Protocol-Version` too, and
/// its method in `Mcp-Method`, and for `tools/call`, `prompts/get` and `resources/read` its name
/// in `Mcp-Name`; any of these headers given must say what the body says.
pub(crate) fn check_routing_headers(headers: &HeaderMap, message: &Value) -> Result<(), String> {
    let header = |name: &str| {
        one(headers, name).map_err(|()| format!("{name} is given more than once, or is not text"))
    };
    let version = header("mcp-protocol-version")?;
    let method_header = header("mcp-method")?;
    let name_header = header("mcp-name")?;
    let meta_version = message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str);
    let method = message.get("method").and_then(Value::as_str);
    if let Some(meta_version) = meta_version {
        if version != Some(meta_version) {
            return Err(
                "MCP-Protocol-Version does not match the request's protocol version".into(),
            );
        }
        if method_header != method {
            return Err("Mcp-Method does not match the request's method".into());
        }
    } else if method_header.is_some() && method_header != method {
        return Err("Mcp-Method does not match the request's method".into());
    }
    let name_key = match method {
        Some("tools/call" | "prompts/get") => Some("name"),
        Some("resources/read") => Some("uri"),
        _ => None,
    };
    if let Some(key) = name_key {
        let body = message
            .get("params")
            .and_then(|params| params.get(key))
            .and_then(Value::as_str);
        let required = meta_version.is_some();
        match (name_header, body) {
            (None, _) if !required => {}
            (Some(given), Some(body)) if given == header_value(body) || given == body => {}
            _ => return Err(format!("Mcp-Name does not match the request's {key}")),
        }
    } else if name_header.is_some() && meta_version.is_some() {
        return Err("Mcp-Name is given for a method that names nothing".into());
    }
    Ok(())
}

async fn no_stream() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST, DELETE")],
    )
        .into_response()
}

/// Ends the principal's session (the client is done with it).
async fn delete_mcp(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let agent = match principal(&shared, &headers) {
        Ok(agent) => agent,
        Err(refusal) => return refusal.into_response(),
    };
    let given = one(&headers, "mcp-session-id").ok().flatten();
    let session = lock(&shared.sessions).get(&agent).cloned();
    match (session, given) {
        (Some(session), Some(given)) if session.id == given => {
            lock(&session.input).take();
            StatusCode::OK.into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn post_mcp(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let agent = match principal(&shared, &headers) {
        Ok(agent) => agent,
        Err(refusal) => return refusal.into_response(),
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            -32700,
            "sc-mcp: the body is not JSON",
        );
    };
    if !message.is_object() {
        return refusal(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            -32600,
            "sc-mcp: the body must be one JSON-RPC message (no batches)",
        );
    }
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    if let Err(why) = check_routing_headers(&headers, &message) {
        return refusal(
            StatusCode::BAD_REQUEST,
            &id,
            HEADER_MISMATCH,
            &format!("sc-mcp: {why}"),
        );
    }
    let given_session = match one(&headers, "mcp-session-id") {
        Ok(given) => given,
        Err(()) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                &id,
                -32600,
                "sc-mcp: a bad Mcp-Session-Id",
            )
        }
    };
    if let Some(given) = given_session {
        let live = lock(&shared.sessions)
            .get(&agent)
            .is_some_and(|session| session.id == given && !session.ended.load(Ordering::SeqCst));
        if !live {
            return refusal(
                StatusCode::NOT_FOUND,
                &id,
                -32600,
                "sc-mcp: no such session (it ended); start a new one",
            );
        }
    }
    let session = match shared.session_for(&agent) {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    *lock(&session.last_used) = Instant::now();
    // Parsed, so every line break is whitespace between tokens: the line stays the message as
    // it came, which the run checks strictly (duplicate keys, numbers' text).
    let line: Vec<u8> = body
        .iter()
        .map(|&byte| {
            if byte == b'\n' || byte == b'\r' {
                b' '
            } else {
                byte
            }
        })
        .collect();
    let is_request = message.get("method").is_some() && message.get("id").is_some();
    let session_header = HeaderValue::from_str(&session.id).ok();
    if !is_request {
        let written = {
            let session = Arc::clone(&session);
            tokio::task::spawn_blocking(move || session.write(&line))
                .await
                .unwrap_or(false)
        };
        if !written {
            return refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                &Value::Null,
                -32603,
                "sc-mcp: the session ended",
            );
        }
        return StatusCode::ACCEPTED.into_response();
    }
    let key = match IdKey::of_request(&id) {
        Ok(key) => key,
        Err(_) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                -32600,
                "sc-mcp: a request's id must be a string or an integer",
            )
        }
    };
    let Ok(permit) = Arc::clone(&shared.streams).try_acquire_owned() else {
        return refusal(
            StatusCode::TOO_MANY_REQUESTS,
            &id,
            -32603,
            "sc-mcp: too many requests are waiting; try again later",
        );
    };
    let (stream, answers) = unbounded_channel::<Vec<u8>>();
    {
        let mut waiting = lock(&session.waiting);
        if waiting.iter().any(|(waiting_id, _)| *waiting_id == key) {
            return refusal(
                StatusCode::CONFLICT,
                &id,
                -32600,
                "sc-mcp: a request with this id is still waiting for its answer",
            );
        }
        waiting.push((key.clone(), stream));
    }
    let written = {
        let session = Arc::clone(&session);
        tokio::task::spawn_blocking(move || session.write(&line))
            .await
            .unwrap_or(false)
    };
    if !written {
        lock(&session.waiting).retain(|(waiting_id, _)| *waiting_id != key);
        return refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            &id,
            -32603,
            "sc-mcp: the session ended",
        );
    }
    let events =
        futures_util::stream::unfold((answers, permit), |(mut answers, permit)| async move {
            let line = answers.recv().await?;
            let text = String::from_utf8_lossy(&line).into_owned();
            Some((
                Ok::<_, Infallible>(Event::default().event("message").data(text)),
                (answers, permit),
            ))
        });
    let mut response = Sse::new(events).into_response();
    if let Some(value) = session_header {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn routing_headers_must_say_what_the_body_says() {
        let modern = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_file", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        let right = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "read_file"),
        ];
        assert!(check_routing_headers(&headers(&right), &modern).is_ok());
        for wrong in [
            [
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
                ("mcp-name", "read_file"),
            ],
            [
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "write_file"),
            ],
            [
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "read_file"),
            ],
        ] {
            assert!(
                check_routing_headers(&headers(&wrong), &modern).is_err(),
                "{wrong:?}"
            );
        }
        // Missing, or given twice.
        assert!(check_routing_headers(&headers(&right[..2]), &modern).is_err());
        let mut twice = headers(&right);
        twice.append("mcp-method", HeaderValue::from_static("tools/call"));
        assert!(check_routing_headers(&twice, &modern).is_err());
        // A legacy request needs none, but one given must match.
        let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_file"}});
        assert!(check_routing_headers(&HeaderMap::new(), &legacy).is_ok());
        assert!(check_routing_headers(&headers(&[("mcp-name", "write_file")]), &legacy).is_err());
    }
}
