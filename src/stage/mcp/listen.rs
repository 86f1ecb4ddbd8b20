//! `sc-mcp --listen ADDR`: MCP over Streamable HTTP at `/mcp`, in front of the same run as stdio.
//!
//! Each HTTP client is a principal of its own, known by its bearer token
//! ([`super::principals`]: the token's label, or the name it gives in `--agent-header`, which
//! belongs to the token that first used it), with a session of its own: the very run a stdio
//! client gets ([`super::proxy::run_with_io`], so the same decision path), fed the client's
//! messages one line each, its answers routed back to the `POST` they answer. A request's `POST`
//! is answered with an event stream carrying what sc-mcp sends the client while it waits (a held
//! call's elicitation) and then the answer; a notification's or a response's with `202 Accepted`.
//! Once a session has been initialized, every request to it must carry its `Mcp-Session-Id`
//! (a 2026-07-28 request, stateless, carries none); a client's answer to a question (a JSON-RPC
//! response) is taken only with the id of the session the question was sent on, and only for a
//! question that session was asked and has not had answered. A request whose client went away
//! before its answer is no longer waited on, and the run is told it was cancelled.
//!
//! Every request is checked before anything reads it: the `Host` must be the listener's own
//! address (or `localhost` at its port) and an `Origin`, when given, the same (else 403: a page
//! on another name that resolves here, a DNS rebinding, gets nothing); the bearer token must be
//! one of the listener's (else 401); the body at most `--max-message-bytes` (a `Content-Length`
//! over it at once, else as it is read: 413), read within the read timeout (else 408), as are
//! the headers (else the connection is closed); at most `--max-connections` connections are open
//! at once (more are closed at once); at most `--max-streams` requests wait at once, and one
//! token's at most half of them, rounded up (else 429); the 2026-07-28 routing headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) must say what the body says (else 400 with
//! JSON-RPC error −32020, HeaderMismatch). A principal's session that has been idle for
//! `--idle-timeout` ends (its server is stopped); its next request starts a new one. A
//! principal's taint is not the session's: the binary keeps it for the life of the process.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::io::{self, PipeWriter, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Router};
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::principals::{Principal, Principals};
use super::protocol::IdKey;
use super::proxy::ClientIo;
use super::upstream::header_value;

pub use axum::http::HeaderName;

/// JSON-RPC's error for routing headers that do not say what the body says (2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;

/// Starts one principal's session: who it is and the client's messages; returns the session's
/// exit status when it ends.
pub type StartSession = Arc<dyn Fn(&Principal, ClientIo) -> Result<u8> + Send + Sync>;

/// What `--listen` was told.
pub struct ListenOptions {
    /// The tokens and their labels, and how a request's agent is named.
    pub principals: Principals,
    pub max_body: usize,
    /// How many requests may wait for their answers at once, all clients together; one token's
    /// at most half of them, rounded up.
    pub max_streams: usize,
    /// How many principals may have a session at once.
    pub max_sessions: usize,
    /// How many connections may be open at once.
    pub max_connections: usize,
    /// A principal's session that long without a request ends.
    pub idle: Duration,
    /// How long a request's headers, and then its body, may take to arrive.
    pub read_timeout: Duration,
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
    Ok(crate::hex::encode(bytes))
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
        share: options.max_streams.div_ceil(2).max(1),
        origins: hosts.iter().map(|host| format!("http://{host}")).collect(),
        hosts,
        options,
        start,
        sessions: Mutex::new(HashMap::new()),
        held_streams: Mutex::new(HashMap::new()),
        serial: AtomicU64::new(0),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("cannot start the MCP listener's runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let reaper = Arc::clone(&shared);
        tokio::spawn(async move { reap_idle(reaper).await });
        let connections = Arc::new(Semaphore::new(shared.options.max_connections));
        let read_timeout = shared.options.read_timeout;
        let app = Router::new()
            .route("/mcp", post(post_mcp).get(no_stream).delete(delete_mcp))
            .fallback(|| async { StatusCode::NOT_FOUND })
            .layer(middleware::from_fn_with_state(Arc::clone(&shared), guard))
            .with_state(shared);
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                // Out of descriptors, or a connection reset before it was taken: the next.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // Over the cap, a connection is closed at once: nothing of it is read.
            let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
                drop(stream);
                continue;
            };
            // Each answer leaves at once: without it, an event stream's last chunk waits for
            // the client's delayed acknowledgement (some 40 ms a call).
            let _ = stream.set_nodelay(true);
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            tokio::spawn(async move {
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(read_timeout)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                let _ = connection.await;
                drop(permit);
            });
        }
        #[allow(unreachable_code)]
        Ok::<(), io::Error>(())
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
    /// How many of `--max-streams` one token may hold.
    share: usize,
    /// How many streams each token holds.
    held_streams: Mutex<HashMap<String, usize>>,
    /// Numbers each waiting request, so that a stream ends only its own wait.
    serial: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A request waiting for its answer: its id, its number, the stream its answer goes to.
type Waiting = (IdKey, u64, UnboundedSender<Vec<u8>>);

/// One principal's session: the pipe its run reads, and the requests waiting for answers.
struct ClientSession {
    principal: Principal,
    id: String,
    input: Mutex<Option<PipeWriter>>,
    /// The requests waiting, oldest first.
    waiting: Mutex<Vec<Waiting>>,
    /// The ids of the requests the run sent the client (its questions) not yet answered.
    asked: Mutex<HashSet<IdKey>>,
    /// An `initialize` went through it: from then on every request must name it.
    initialized: AtomicBool,
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
                if let Some(at) = waiting.iter().position(|(id, _, _)| *id == key) {
                    let (_, _, stream) = waiting.remove(at);
                    let _ = stream.send(line.to_vec());
                    return;
                }
            }
            None => {
                if let Some((_, _, stream)) = waiting.last() {
                    let question = value
                        .as_ref()
                        .filter(|value| value.get("method").is_some())
                        .and_then(|value| IdKey::of_reference(value.get("id")?));
                    if let Some(question) = question {
                        lock(&self.asked).insert(question);
                    }
                    let _ = stream.send(line.to_vec());
                    return;
                }
            }
        }
        drop(waiting);
        let _ = writeln!(
            io::stderr().lock(),
            "sc-mcp: listen: dropped a message for {}: no request of its is waiting",
            crate::sanitize::for_terminal(&self.principal.agent)
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
        for (key, _, stream) in lock(&self.waiting).drain(..) {
            let answer = json!({"jsonrpc": "2.0", "id": id_value(&key), "error": {"code": -32603, "message": format!("sc-mcp: {why}")}});
            let _ = stream.send(serde_json::to_vec(&answer).expect("JSON serializes"));
        }
    }

    fn is_live(&self) -> bool {
        !self.ended.load(Ordering::SeqCst) && lock(&self.input).is_some()
    }
}

fn id_value(key: &IdKey) -> Value {
    match key {
        IdKey::Integer(n) => json!(n),
        IdKey::String(s) => json!(s),
    }
}

/// What a request's event stream holds while it is open: its slot among `--max-streams` and
/// its token's share. Dropped when the stream ends: answered, or its client went away; then a
/// request still waiting is no longer waited on, and the run is told it was cancelled.
struct Wait {
    shared: Arc<Shared>,
    session: Arc<ClientSession>,
    key: IdKey,
    serial: u64,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Wait {
    fn drop(&mut self) {
        if let Some(held) = lock(&self.shared.held_streams).get_mut(&self.session.principal.label) {
            *held = held.saturating_sub(1);
        }
        let mut waiting = lock(&self.session.waiting);
        let Some(at) = waiting
            .iter()
            .position(|(_, serial, _)| *serial == self.serial)
        else {
            return;
        };
        waiting.remove(at);
        drop(waiting);
        *lock(&self.session.last_used) = Instant::now();
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id_value(&self.key), "reason": "the HTTP client went away"}});
        let line = serde_json::to_vec(&cancel).expect("JSON serializes");
        let session = Arc::clone(&self.session);
        let _ = writeln!(
            io::stderr().lock(),
            "sc-mcp: listen: {}: a request's client went away before its answer; it is cancelled",
            crate::sanitize::for_terminal(&session.principal.agent)
        );
        // The pipe may be full: written off the event loop.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn_blocking(move || session.write(&line));
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
    /// The principal's live session, if it has one.
    fn live_session(&self, agent: &str) -> Option<Arc<ClientSession>> {
        lock(&self.sessions)
            .get(agent)
            .filter(|session| session.is_live())
            .cloned()
    }

    /// The principal's live session, started when it has none.
    fn session_for(self: &Arc<Self>, principal: &Principal) -> Result<Arc<ClientSession>, Refusal> {
        let mut sessions = lock(&self.sessions);
        if let Some(session) = sessions.get(&principal.agent) {
            if session.is_live() {
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
            principal: principal.clone(),
            id: new_token().map_err(|_| internal())?,
            input: Mutex::new(Some(writer)),
            waiting: Mutex::new(Vec::new()),
            asked: Mutex::new(HashSet::new()),
            initialized: AtomicBool::new(false),
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
                let why = match start(&running.principal, io) {
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
                    crate::sanitize::for_terminal(&running.principal.agent)
                );
                let mut sessions = lock(&shared.sessions);
                if sessions
                    .get(&running.principal.agent)
                    .is_some_and(|kept| Arc::ptr_eq(kept, &running))
                {
                    sessions.remove(&running.principal.agent);
                }
            })
            .map_err(|_| internal())?;
        sessions.insert(principal.agent.clone(), Arc::clone(&session));
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

/// Which client's token a request came with.
#[derive(Debug, Clone, Copy)]
struct ClientIndex(usize);

/// Host, Origin, token and the body's announced length, before anything else.
async fn guard(State(shared): State<Arc<Shared>>, mut request: Request, next: Next) -> Response {
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
    // An absolute-form target (`POST http://elsewhere/mcp`) names a host of its own: refused,
    // whatever its `Host` says.
    let absolute = request.uri().authority().is_some();
    if !host_ok || !origin_ok || absolute {
        let why = if absolute {
            "request target"
        } else if host_ok {
            "Origin"
        } else {
            "Host"
        };
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
    let Some(client) = shared.options.principals.client(headers) else {
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
    };
    // A body announced over the limit is refused before a byte of it is read.
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse::<u128>().ok());
    if announced.is_some_and(|length| length > shared.options.max_body as u128) {
        return too_large();
    }
    request.extensions_mut().insert(ClientIndex(client));
    next.run(request).await
}

fn too_large() -> Response {
    refusal(
        StatusCode::PAYLOAD_TOO_LARGE,
        &Value::Null,
        -32600,
        "sc-mcp: the body is longer than --max-message-bytes",
    )
}

/// The principal a request is made for ([`Principals::principal`]).
fn principal(
    shared: &Shared,
    client: ClientIndex,
    headers: &HeaderMap,
) -> Result<Principal, Refusal> {
    shared
        .options
        .principals
        .principal(client.0, headers)
        .map_err(|why| {
            let status = match why {
                super::principals::NameRefused::Taken(_)
                | super::principals::NameRefused::OneName(_) => StatusCode::FORBIDDEN,
                _ => StatusCode::BAD_REQUEST,
            };
            refused(status, &Value::Null, -32600, &format!("sc-mcp: {why}"))
        })
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

/// Why a message's routing headers are refused: each says which header does not say what the
/// body says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RoutingMismatch {
    #[error("{0} is given more than once, or is not text")]
    BadHeader(&'static str),
    #[error("MCP-Protocol-Version does not match the request's protocol version")]
    Version,
    #[error("Mcp-Method does not match the request's method")]
    Method,
    #[error("Mcp-Name does not match the request's {0}")]
    Name(&'static str),
    #[error("Mcp-Name is given for a method that names nothing")]
    NameForNothing,
}

/// Checks the routing headers against the body, as the 2026-07-28 transport asks: a message
/// that carries its protocol version in `_meta` must carry it in `MCP-Protocol-Version` too, and
/// its method in `Mcp-Method`, and for `tools/call`, `prompts/get` and `resources/read` its name
/// in `Mcp-Name`; any of these headers given must say what the body says.
pub(crate) fn check_routing_headers(
    headers: &HeaderMap,
    message: &Value,
) -> Result<(), RoutingMismatch> {
    let header =
        |name: &'static str| one(headers, name).map_err(|()| RoutingMismatch::BadHeader(name));
    let version = header("mcp-protocol-version")?;
    let method_header = header("mcp-method")?;
    let name_header = header("mcp-name")?;
    let meta_version = message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str);
    let method = message.get("method").and_then(Value::as_str);
    if let Some(meta_version) = meta_version {
        if version != Some(meta_version) {
            return Err(RoutingMismatch::Version);
        }
        if method_header != method {
            return Err(RoutingMismatch::Method);
        }
    } else if method_header.is_some() && method_header != method {
        return Err(RoutingMismatch::Method);
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
            _ => return Err(RoutingMismatch::Name(key)),
        }
    } else if name_header.is_some() && meta_version.is_some() {
        return Err(RoutingMismatch::NameForNothing);
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

/// Ends the principal's session (the client is done with it). Its taint stays: it is the
/// principal's, not the session's.
async fn delete_mcp(
    State(shared): State<Arc<Shared>>,
    Extension(client): Extension<ClientIndex>,
    headers: HeaderMap,
) -> Response {
    let principal = match principal(&shared, client, &headers) {
        Ok(principal) => principal,
        Err(refusal) => return refusal.into_response(),
    };
    let given = one(&headers, "mcp-session-id").ok().flatten();
    let session = lock(&shared.sessions).get(&principal.agent).cloned();
    match (session, given) {
        (Some(session), Some(given)) if session.id == given => {
            lock(&session.input).take();
            StatusCode::OK.into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Reads the body: at most `--max-message-bytes` (else 413), within the read timeout (else 408).
async fn read_body(shared: &Shared, body: Body) -> Result<axum::body::Bytes, Response> {
    match tokio::time::timeout(
        shared.options.read_timeout,
        axum::body::to_bytes(body, shared.options.max_body),
    )
    .await
    {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(too_large()),
        Err(_) => Err(refusal(
            StatusCode::REQUEST_TIMEOUT,
            &Value::Null,
            -32600,
            "sc-mcp: the body did not arrive in time",
        )),
    }
}

async fn post_mcp(
    State(shared): State<Arc<Shared>>,
    Extension(client): Extension<ClientIndex>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let principal = match principal(&shared, client, &headers) {
        Ok(principal) => principal,
        Err(refusal) => return refusal.into_response(),
    };
    let body = match read_body(&shared, body).await {
        Ok(body) => body,
        Err(response) => return response,
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
    let method = message.get("method").and_then(Value::as_str);
    let is_response = method.is_none();
    let stateless = message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .is_some();
    let live = shared.live_session(&principal.agent);
    match (&live, given_session) {
        (Some(session), Some(given)) if session.id == given => {}
        (_, Some(_)) => {
            return refusal(
                StatusCode::NOT_FOUND,
                &id,
                -32600,
                "sc-mcp: no such session (it ended); start a new one",
            );
        }
        // A client's answer is taken only on the session its question was sent on.
        (_, None) if is_response => {
            return refusal(
                StatusCode::BAD_REQUEST,
                &id,
                -32600,
                "sc-mcp: an answer must carry the Mcp-Session-Id of the session that asked",
            );
        }
        (Some(session), None)
            if session.initialized.load(Ordering::SeqCst)
                && !stateless
                && method != Some("initialize") =>
        {
            return refusal(
                StatusCode::BAD_REQUEST,
                &id,
                -32600,
                "sc-mcp: this principal's session was initialized: every request must carry its Mcp-Session-Id",
            );
        }
        (_, None) => {}
    }
    let session = match live {
        Some(session) => session,
        None => match shared.session_for(&principal) {
            Ok(session) => session,
            Err(refusal) => return refusal.into_response(),
        },
    };
    if is_response {
        let asked = IdKey::of_reference(&id).is_some_and(|key| lock(&session.asked).remove(&key));
        if !asked {
            return refusal(
                StatusCode::BAD_REQUEST,
                &id,
                -32600,
                "sc-mcp: this answers no question this session was asked",
            );
        }
    }
    *lock(&session.last_used) = Instant::now();
    // Parsed, so every line break is whitespace between tokens: the line stays the message as
    // it came, which the run checks strictly (duplicate keys, numbers' text).
    let line = crate::json_write::on_one_line(&body);
    let is_request = method.is_some() && message.get("id").is_some();
    let session_header = HeaderValue::from_str(&session.id).ok();
    if !is_request {
        let written = write_blocking(&session, line).await;
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
    let too_many = || {
        refusal(
            StatusCode::TOO_MANY_REQUESTS,
            &id,
            -32603,
            "sc-mcp: too many requests are waiting; try again later",
        )
    };
    {
        let mut held = lock(&shared.held_streams);
        let held = held.entry(principal.label.clone()).or_default();
        if *held >= shared.share {
            return too_many();
        }
        *held += 1;
    }
    let serial = shared.serial.fetch_add(1, Ordering::SeqCst);
    let permit = Arc::clone(&shared.streams).try_acquire_owned();
    // From here the wait gives its slots back when it ends, however it ends.
    let wait = match permit {
        Ok(permit) => Wait {
            shared: Arc::clone(&shared),
            session: Arc::clone(&session),
            key: key.clone(),
            serial,
            _permit: permit,
        },
        Err(_) => {
            if let Some(held) = lock(&shared.held_streams).get_mut(&principal.label) {
                *held = held.saturating_sub(1);
            }
            return too_many();
        }
    };
    let (stream, answers) = unbounded_channel::<Vec<u8>>();
    {
        let mut waiting = lock(&session.waiting);
        if waiting.iter().any(|(waiting_id, _, _)| *waiting_id == key) {
            drop(waiting);
            drop(wait);
            return refusal(
                StatusCode::CONFLICT,
                &id,
                -32600,
                "sc-mcp: a request with this id is still waiting for its answer",
            );
        }
        waiting.push((key.clone(), serial, stream));
    }
    if method == Some("initialize") {
        session.initialized.store(true, Ordering::SeqCst);
    }
    let written = write_blocking(&session, line).await;
    if !written {
        lock(&session.waiting).retain(|(_, waiting, _)| *waiting != serial);
        return refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            &id,
            -32603,
            "sc-mcp: the session ended",
        );
    }
    let events = futures_util::stream::unfold((answers, wait), |(mut answers, wait)| async move {
        let line = answers.recv().await?;
        let text = String::from_utf8_lossy(&line).into_owned();
        Some((
            Ok::<_, Infallible>(Event::default().event("message").data(text)),
            (answers, wait),
        ))
    });
    let mut response = Sse::new(events).into_response();
    if let Some(value) = session_header {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

/// Gives a message line to the session's run, off the async workers (the write may block on a
/// full pipe); `false` when the run has ended.
async fn write_blocking(session: &Arc<ClientSession>, line: Vec<u8>) -> bool {
    let session = Arc::clone(session);
    tokio::task::spawn_blocking(move || session.write(&line))
        .await
        .unwrap_or(false)
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
        assert_eq!(
            check_routing_headers(&headers(&right[..2]), &modern)
                .unwrap_err()
                .to_string(),
            "Mcp-Name does not match the request's name"
        );
        let mut twice = headers(&right);
        twice.append("mcp-method", HeaderValue::from_static("tools/call"));
        assert_eq!(
            check_routing_headers(&twice, &modern),
            Err(RoutingMismatch::BadHeader("mcp-method"))
        );
        // A legacy request needs none, but one given must match.
        let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_file"}});
        assert!(check_routing_headers(&HeaderMap::new(), &legacy).is_ok());
        assert!(check_routing_headers(&headers(&[("mcp-name", "write_file")]), &legacy).is_err());
    }
}
