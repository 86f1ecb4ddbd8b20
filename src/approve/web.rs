//! The web approval page: holds served as cards to a browser, and the JSON API behind it that any
//! other channel (a chat bot, a phone) can use too.
//!
//! [`WebApprovals::start`] binds a loopback address and serves, on a thread of its own running a
//! small tokio runtime, with axum (a well-kept HTTP server: nothing here parses HTTP). The rest of
//! the program stays synchronous: it [`submit`](WebApprovals::submit)s a [`Hold`] and gets a
//! [`Ticket`], then [`poll`](WebApprovals::poll)s or [`wait`](WebApprovals::wait)s for the
//! [`Reply`]. Several holds may be pending at once; each is answered once.
//!
//! - `GET /` is the page, `GET /app.js` and `GET /app.css` its script and style (`GET
//!   /favicon.ico`, which browsers ask for on their own, is an empty 204). The page carries
//!   no hold data: its script loads the holds from the API with the token from the URL fragment
//!   (`#token=…`, never sent in a request line, a log or a Referer) and writes every string as
//!   text, never as HTML.
//! - `GET /api/holds`: the pending holds,
//!   `[{"hold":ID,"digest":HEX,"record":{…},"expiresAt":RFC3339|null,"secondsLeft":N|null,"display":{…}}]`,
//!   and, for a hold from a door elsewhere (`sc-inbox`), its `door` and `pid`.
//!   `record` is the verdict record exactly as it came; `display` is the same hold as the
//!   terminal shows it, agent-written text escaped ([`crate::sanitize::for_terminal`]) and the
//!   arguments pretty-printed from their exact text, with `summary`, the call in plain words
//!   (`buyer wants to run send_payment: to acme-travel, amount 750.10`), the card's first line.
//! - `GET /api/history`: the holds that ended lately, newest first, each with `state`
//!   (`approved`, `declined`, `expired`, or `withdrawn` when sc-mcp took it off the page).
//! - `POST /api/holds/ID` with `{"approve":true|false,"digest":HEX,"scope":"once"|"call"|"value"}`:
//!   200 and `{"approved":bool}` (a yes also names the `scope` and `grant` kept, and `notRun`
//!   with why, when the program that holds the call decided it again and does not run it).
//!   `digest` is the SHA-256 of the record line exactly as it
//!   arrived, so an answer is bound to the record the person was shown. A missing `scope` is
//!   `once`; an unknown one is 400. Each pending hold lists its `scopes`, the ones that apply.
//!   An answer to a hold from a door elsewhere (`sc-inbox`) is first committed to the crew's
//!   inbox ([`OnAnswer`]); refused there (answered in another inbox, expired, its door gone), it
//!   is 409.
//!
//! Every request must name the bound address and port as its `Host` (DNS rebinding), and any
//! `Origin` must be the page's own (cross-site requests); every API request must carry
//! `Authorization: Bearer TOKEN`, compared in constant time. A refusal changes nothing, is
//! narrated on stderr and answered with its status: 401, 403, 404, 409, 400 or 413.

use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, Request, State as With};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::Value;
use subtle::ConstantTimeEq;

mod display;
mod holds;
mod refusal;

pub(crate) use display::summary;
use display::*;
pub(crate) use holds::OnAnswer;
use holds::*;
pub use holds::{Given, Kept, Origin, Ticket};
use refusal::{json_headers, Refusal};

use super::prompt::lower_hex;
use super::{Hold, Human, Reply};
use crate::error::UsageError;
use crate::record::{AnsweredBy, Scope};
use crate::sanitize::quoted;
use crate::strict_json;

/// The largest request body read: an answer is a few dozen bytes.
pub(crate) const MAX_BODY_BYTES: usize = 64 * 1024;
/// How long an approving answer waits for the program to say what it kept (the scope, the
/// grant) before the reply says that it is not known yet.
const KEPT_WAIT: Duration = Duration::from_secs(15);
/// How long a stopping server lets requests in progress finish.
const STOP_GRACE: Duration = Duration::from_secs(1);

const INDEX_HTML: &str = include_str!("web/index.html");
const APP_JS: &str = include_str!("web/app.js");
const APP_CSS: &str = include_str!("web/app.css");

/// The policy every response carries: nothing but this server's own script, style and API, no
/// inline script, in no frame.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// Called (on the server's thread) whenever a hold is settled there: answered, or found expired.
pub(crate) type OnSettle = Box<dyn Fn(Ticket) + Send + Sync>;

/// The web approval page and its API, serving on a thread of its own until dropped.
pub struct WebApprovals {
    shared: Arc<Shared>,
    url: String,
    bound: SocketAddr,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for WebApprovals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebApprovals")
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}

impl WebApprovals {
    /// Binds `addr`, which must be a loopback address (else a usage error: the page is reached
    /// from elsewhere through `ssh -L`), makes a new token, and starts serving. `program` names
    /// the narration of refusals on stderr; `on_settle` is told of every hold settled.
    pub fn start(
        addr: SocketAddr,
        program: &'static str,
        on_settle: Option<OnSettle>,
    ) -> Result<WebApprovals> {
        Self::start_with(addr, program, on_settle, None)
    }

    /// [`WebApprovals::start`], with a hook every answer to a hold with an [`Origin`] goes through
    /// first ([`OnAnswer`]).
    pub(crate) fn start_with(
        addr: SocketAddr,
        program: &'static str,
        on_settle: Option<OnSettle>,
        on_answer: Option<OnAnswer>,
    ) -> Result<WebApprovals> {
        check_loopback(addr)?;
        let listener = std::net::TcpListener::bind(addr)
            .with_context(|| format!("cannot listen on {addr} for the web approval page"))?;
        listener
            .set_nonblocking(true)
            .context("cannot set up the web approval page's socket")?;
        let bound = listener
            .local_addr()
            .context("cannot read the web approval page's address")?;
        let token = new_token()?;
        let shared = Arc::new(Shared {
            program,
            host: bound.to_string(),
            origin: format!("http://{bound}"),
            token: token.clone(),
            holds: Mutex::new(Holds {
                on_answer,
                ..Holds::default()
            }),
            settled: Condvar::new(),
            kept: tokio::sync::Notify::new(),
            on_settle,
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .context("cannot start the web approval page's runtime")?;
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let app = router(Arc::clone(&shared));
        let thread = std::thread::Builder::new()
            .name("web".into())
            .spawn(move || runtime.block_on(serve(listener, app, stopping, program)))
            .context("cannot start the web approval page's thread")?;
        Ok(WebApprovals {
            shared,
            url: format!("http://{bound}/#token={token}"),
            bound,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The page's address with the token in its fragment: what the person opens.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address and port the page is served on.
    pub fn bound(&self) -> SocketAddr {
        self.bound
    }

    /// Puts a hold on the page; it declines by itself after `hold.timeout`.
    pub(crate) fn submit(&self, hold: &Hold<'_>) -> Ticket {
        self.submit_from(hold, None)
    }

    /// [`WebApprovals::submit`], for a program that says what it kept of each answer
    /// ([`WebApprovals::kept`]): a wider yes's `POST` waits for it, to name the scope kept and
    /// the grant.
    pub(crate) fn submit_reporting(&self, hold: &Hold<'_>) -> Ticket {
        let ticket = self.submit_from(hold, None);
        if let Some(entry) = self.shared.lock().entries.get_mut(&ticket.id) {
            entry.reports = true;
        }
        ticket
    }

    /// Puts a hold that came from elsewhere on the page ([`Origin`]).
    pub(crate) fn submit_from(&self, hold: &Hold<'_>, origin: Option<Origin>) -> Ticket {
        let now = Instant::now();
        let expires = hold
            .timeout
            .map(|timeout| (now + timeout, SystemTime::now() + timeout));
        let entry = Entry {
            digest: hold.digest(),
            record: record_json(hold.line),
            display: display_json(hold),
            timeout: hold.timeout,
            expires,
            state: HoldState::Pending,
            withdrawn: None,
            collected: false,
            scopes: hold.scopes.to_vec(),
            scope: Scope::Once,
            kept: None,
            reports: false,
        };
        let mut holds = self.shared.lock();
        holds.next += 1;
        let id = holds.next;
        holds.entries.insert(id, entry);
        if let Some(origin) = origin {
            holds.origins.insert(id, origin);
        }
        Ticket {
            id,
            expires: expires.map(|(at, _)| at),
        }
    }

    /// The reply to a hold, once it is settled: answered on the page, or expired (which this
    /// settles when its time is up). `None` while it is pending.
    pub(crate) fn poll(&self, ticket: Ticket) -> Option<Reply> {
        let mut holds = self.shared.lock();
        let expired = holds.expire_due(Instant::now());
        let reply = holds.collect(ticket.id);
        drop(holds);
        self.shared.settled_all(&expired);
        reply
    }

    /// Waits until the hold is settled (answered, or expired when its time is up).
    pub fn wait(&self, ticket: Ticket) -> Reply {
        let mut holds = self.shared.lock();
        loop {
            let expired = holds.expire_due(Instant::now());
            if !expired.is_empty() {
                drop(holds);
                self.shared.settled_all(&expired);
                holds = self.shared.lock();
            }
            if let Some(reply) = holds.collect(ticket.id) {
                return reply;
            }
            holds = match ticket.expires {
                Some(at) => {
                    let left = at.saturating_duration_since(Instant::now());
                    self.shared
                        .settled
                        .wait_timeout(holds, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .shared
                    .settled
                    .wait(holds)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }

    /// Says what the program kept of the answer to a hold (its scope, narrowed where a wider one
    /// could not be kept, and the grant's id) and, for a yes it does not act on, why the call
    /// does not run (`not_run`): the answer's `POST` waits for it, to name them.
    pub(crate) fn kept(
        &self,
        ticket: Ticket,
        approval: &crate::record::Approval,
        not_run: Option<String>,
    ) {
        self.note_kept(ticket, approval, not_run, false);
    }

    /// [`Web::kept`], for a program that runs no call (sc-approve): it passed the answer on to
    /// the stage that runs calls, which decides each again as it runs it, and the card says so
    /// instead of saying that the call runs.
    pub(crate) fn kept_and_passed_on(&self, ticket: Ticket, approval: &crate::record::Approval) {
        self.note_kept(ticket, approval, None, true);
    }

    fn note_kept(
        &self,
        ticket: Ticket,
        approval: &crate::record::Approval,
        not_run: Option<String>,
        passed_on: bool,
    ) {
        let kept = Kept {
            scope: approval.scope.unwrap_or_default(),
            grant: approval.grant.clone(),
            not_run,
            passed_on,
        };
        self.shared.lock().kept(ticket.id, kept);
        self.shared.kept.notify_waiters();
    }

    /// Takes a pending hold off the page because the program settled it another way (sc-mcp: the
    /// client cancelled the call, or the session ended): its card ends as withdrawn, with `why`,
    /// and an answer to it is refused (409). Returns whether it was still pending; an answer
    /// given before stands as given.
    pub(crate) fn withdraw(&self, ticket: Ticket, why: &str) -> bool {
        let mut holds = self.shared.lock();
        let expired = holds.expire_due(Instant::now());
        let withdrawn = holds.withdraw(ticket.id, why);
        drop(holds);
        self.shared.settled_all(&expired);
        withdrawn
    }

    /// Stops serving: requests in progress get a moment to finish.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for WebApprovals {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Why `--web ADDR` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebAddrError {
    #[error("{text:?} is not an address and port such as 127.0.0.1:8080 or [::1]:8080")]
    NotAnAddress { text: String },
    #[error(
        "--web {addr}: the approval page is served on a loopback address only (127.0.0.1:PORT or [::1]:PORT); reach it from another machine through `ssh -L`"
    )]
    NotLoopback { addr: SocketAddr },
}

/// A loopback address, or a usage error that says how to reach the page from elsewhere.
pub(crate) fn check_loopback(addr: SocketAddr) -> Result<()> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    Err(UsageError(WebAddrError::NotLoopback { addr }.to_string()).into())
}

/// `--web ADDR` as the command line gives it: an IP address and port on the loopback interface,
/// nothing else (a clap value parser).
pub fn loopback_addr(text: &str) -> std::result::Result<SocketAddr, WebAddrError> {
    let addr: SocketAddr = text.parse().map_err(|_| WebAddrError::NotAnAddress {
        text: text.to_owned(),
    })?;
    if !addr.ip().is_loopback() {
        return Err(WebAddrError::NotLoopback { addr });
    }
    Ok(addr)
}

/// Tells the person where the page is: one line on stderr, and on the terminal when there is
/// one and stderr is not it.
pub fn announce(program: &str, url: &str) {
    let line = format!("{program}: approvals at {url}\n");
    let _ = io::stderr().write_all(line.as_bytes());
    if !io::stderr().is_terminal() {
        if let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
            let _ = tty.write_all(line.as_bytes());
        }
    }
}

/// A person on the web page, asked about one hold at a time, for a program that asks one at a
/// time; sc-approve's and sc-mcp's `--web` instead let several wait at once.
pub struct WebHuman {
    web: Arc<WebApprovals>,
}

impl WebHuman {
    pub fn new(web: Arc<WebApprovals>) -> Self {
        WebHuman { web }
    }
}

impl Human for WebHuman {
    /// The page shows whole holds, never bare prompt text: without one there is nothing to show.
    fn ask(&mut self, _prompt: &str) -> Reply {
        Reply::NobodyToAsk("the web page is shown whole holds, and this one came as text".into())
    }

    fn ask_hold(&mut self, hold: &Hold<'_>) -> Reply {
        let ticket = self.web.submit(hold);
        self.web.wait(ticket)
    }

    fn kind(&self) -> AnsweredBy {
        AnsweredBy::Web
    }
}

/// 32 bytes from the operating system's random source, as 64 hex digits.
fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|err| anyhow::anyhow!("cannot read the system's random source: {err}"))?;
    Ok(lower_hex(&bytes))
}

// ---------------------------------------------------------------------------------------------
// The holds

struct Shared {
    program: &'static str,
    /// The `Host` every request must carry: the bound address and port.
    host: String,
    /// The only `Origin` a request may carry: the page's own.
    origin: String,
    token: String,
    holds: Mutex<Holds>,
    /// Notified whenever a hold is settled.
    settled: Condvar,
    /// Notified whenever the program says what it kept of an answer ([`WebApprovals::kept`]).
    kept: tokio::sync::Notify,
    on_settle: Option<OnSettle>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Holds> {
        self.holds.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the waiters that these holds were settled.
    fn settled_all(&self, tickets: &[Ticket]) {
        if tickets.is_empty() {
            return;
        }
        self.settled.notify_all();
        if let Some(on_settle) = &self.on_settle {
            for &ticket in tickets {
                on_settle(ticket);
            }
        }
    }

    fn token_matches(&self, given: &str) -> bool {
        given.as_bytes().ct_eq(self.token.as_bytes()).into()
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP

async fn serve(
    listener: std::net::TcpListener,
    app: Router,
    mut stopping: tokio::sync::watch::Receiver<bool>,
    program: &'static str,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(err) => {
            let _ = writeln!(
                io::stderr(),
                "{program}: the web approval page cannot serve: {err}"
            );
            return;
        }
    };
    let mut grace = stopping.clone();
    let server = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        let _ = stopping.wait_for(|stop| *stop).await;
    });
    tokio::select! {
        result = server => {
            if let Err(err) = result {
                let _ = writeln!(io::stderr(), "{program}: the web approval page stopped: {err}");
            }
        }
        // Requests in progress get a moment; a browser's idle connection does not hold it up.
        _ = async {
            let _ = grace.wait_for(|stop| *stop).await;
            tokio::time::sleep(STOP_GRACE).await;
        } => {}
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/app.js", get(app_js))
        .route("/app.css", get(app_css))
        .route("/favicon.ico", get(favicon))
        .route("/api/holds", get(list_holds))
        .route("/api/history", get(history))
        .route("/api/holds/{id}", post(answer_hold))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(Arc::clone(&shared), guard))
        .with_state(shared)
}

/// Checks every request before it is served, and puts the security headers on every response;
/// narrates each refusal, whoever refused it.
async fn guard(
    With(shared): With<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let mut response = match check(&shared, &request) {
        Err(refusal) => refusal.into_response(),
        Ok(()) => next.run(request).await,
    };
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        let why = response
            .extensions()
            .get::<Refusal>()
            .map(|refusal| refusal.why.clone())
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("refused").to_owned());
        let _ = writeln!(
            io::stderr(),
            "{}: web: refused {method} {} from {peer}: {why} ({})",
            shared.program,
            quoted(&path),
            status.as_u16()
        );
    }
    secure(response.headers_mut());
    response
}

/// The `Host` must be the bound address and port (a page on another name that resolves here, a
/// DNS rebinding, gets nothing); an `Origin`, when present, the page's own; an API request needs
/// the token.
fn check(shared: &Shared, request: &Request) -> Result<(), Refusal> {
    let headers = request.headers();
    let hosts: Vec<&HeaderValue> = headers.get_all(header::HOST).iter().collect();
    let host_ok = matches!(hosts.as_slice(), [host] if host.as_bytes() == shared.host.as_bytes());
    let authority_ok = request
        .uri()
        .authority()
        .is_none_or(|authority| authority.as_str() == shared.host);
    if !host_ok || !authority_ok {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "the Host is not {}, the address the page is served on",
                shared.host
            ),
        ));
    }
    let origins: Vec<&HeaderValue> = headers.get_all(header::ORIGIN).iter().collect();
    let origin_ok = match origins.as_slice() {
        [] => true,
        [origin] => origin.as_bytes() == shared.origin.as_bytes(),
        _ => false,
    };
    if !origin_ok {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!("the Origin is not {}, the page's own", shared.origin),
        ));
    }
    if request.uri().path().starts_with("/api/") {
        let token_ok = bearer(headers).is_some_and(|token| shared.token_matches(token));
        if !token_ok {
            return Err(Refusal::new(
                StatusCode::UNAUTHORIZED,
                "no token, or a wrong one",
            ));
        }
    }
    Ok(())
}

/// The token of an `Authorization: Bearer TOKEN` header (the only one).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let value = value.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn secure(headers: &mut HeaderMap) {
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::HeaderName::from_static("cross-origin-opener-policy"),
            "same-origin",
        ),
        (
            header::HeaderName::from_static("cross-origin-resource-policy"),
            "same-origin",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

async fn index() -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        INDEX_HTML,
    )
        .into_response()
}

async fn app_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        APP_JS,
    )
        .into_response()
}

async fn app_css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], APP_CSS).into_response()
}

/// The icon a browser asks for on its own when it opens the page: none, and no refusal narrated.
async fn favicon() -> StatusCode {
    StatusCode::NO_CONTENT
}

async fn not_found() -> Refusal {
    Refusal::new(StatusCode::NOT_FOUND, "no such page")
}

async fn list_holds(With(shared): With<Arc<Shared>>) -> Response {
    let now = Instant::now();
    let mut holds = shared.lock();
    let expired = holds.expire_due(now);
    let body = holds.pending_json(now);
    drop(holds);
    shared.settled_all(&expired);
    (json_headers(), Body::from(body)).into_response()
}

async fn history(With(shared): With<Arc<Shared>>) -> Response {
    let mut holds = shared.lock();
    let expired = holds.expire_due(Instant::now());
    let body = holds.history_json();
    drop(holds);
    shared.settled_all(&expired);
    (json_headers(), Body::from(body)).into_response()
}

/// A hold's id as the API names it: decimal digits, no sign, no leading zero; one spelling each,
/// so that `/api/holds/01`, `/api/holds/+1` and `/api/holds/%31` are not hold 1.
fn canonical_hold_id(text: &str) -> Option<u64> {
    let plain = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    plain.then(|| text.parse().ok()).flatten()
}

/// The person's answer to one hold, as `POST /api/holds/ID` carries it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    approve: bool,
    digest: String,
    /// `once` (when missing), `call` or `value`; anything else is refused with 400. A scope
    /// that does not apply to the hold is taken as `once` by the door, which says so.
    #[serde(default)]
    scope: Option<String>,
}

async fn answer_hold(
    With(shared): With<Arc<Shared>>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Refusal> {
    let body = body.map_err(|rejection| {
        let status = rejection.status();
        let why = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!("the body is over {MAX_BODY_BYTES} bytes")
        } else {
            "the body could not be read".to_owned()
        };
        Refusal::new(status, why)
    })?;
    let id = canonical_hold_id(&id)
        .ok_or_else(|| Refusal::new(StatusCode::NOT_FOUND, "no such hold"))?;
    // Only an object: serde would also build the answer from an array (`[true, "…"]`).
    let answer: Answer = std::str::from_utf8(&body)
        .ok()
        .and_then(|text| strict_json::parse(text).ok())
        .filter(Value::is_object)
        .and_then(|value| serde_json::from_value(value).ok())
        .ok_or_else(|| {
            Refusal::new(
                StatusCode::BAD_REQUEST,
                r#"the body is not {"approve": true|false, "digest": HEX, "scope": "once"|"call"|"value"}"#,
            )
        })?;
    let scope = match answer.scope.as_deref() {
        None => Scope::Once,
        Some(text) => Scope::parse(text).ok_or_else(|| {
            Refusal::new(
                StatusCode::BAD_REQUEST,
                r#"the scope is not "once", "call" or "value""#,
            )
        })?,
    };
    let (mut settled, answered, from_elsewhere) = {
        let mut holds = shared.lock();
        let settled = holds.expire_due(Instant::now());
        let answered = holds.answer(id, answer.approve, &answer.digest, scope);
        // A hold from a door elsewhere (sc-inbox) is kept by that door, and a program that
        // does not say what it kept: this page cannot name it.
        let from_elsewhere = !holds.entries.get(&id).is_some_and(|entry| entry.reports);
        (settled, answered, from_elsewhere)
    };
    if let Ok(ticket) = answered {
        settled.push(ticket);
    }
    shared.settled_all(&settled);
    answered?;
    let body = if !answer.approve {
        serde_json::json!({ "approved": false })
    } else if from_elsewhere {
        if scope == Scope::Once {
            serde_json::json!({ "approved": true, "scope": "once", "grant": null })
        } else {
            serde_json::json!({ "approved": true, "scope": null, "grant": null,
                "kept": "by the program that holds the call, which says it in its audit log" })
        }
    } else {
        // Waited for even for `once`: the program may decide the call again and not run it.
        match kept_answer(&shared, id).await {
            Some(kept) => {
                let mut body = serde_json::json!({
                    "approved": true, "scope": kept.scope, "grant": kept.grant
                });
                if let Some(not_run) = kept.not_run {
                    body["notRun"] = serde_json::Value::String(not_run);
                }
                body
            }
            // Not said in time (deciding again waits on a busy store, say): whether the call
            // runs is not known, so a `once` yes is not said to be kept either.
            None => serde_json::json!({ "approved": true, "scope": null, "grant": null,
                "kept": "not known yet: the approver has not said" }),
        }
    };
    Ok((json_headers(), body.to_string()).into_response())
}

/// Waits (at most [`KEPT_WAIT`]) for the program to say what it kept of the answer to hold `id`.
async fn kept_answer(shared: &Shared, id: u64) -> Option<Kept> {
    let deadline = tokio::time::Instant::now() + KEPT_WAIT;
    loop {
        let notified = shared.kept.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let kept = shared.lock().kept_of(id);
        if kept.is_some() {
            return kept;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            let kept = shared.lock().kept_of(id);
            return kept;
        }
    }
}

#[cfg(test)]
#[path = "web_tests.rs"]
mod tests;
