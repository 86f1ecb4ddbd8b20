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
//!   200 and `{"approved":bool}`. `digest` is the SHA-256 of the record line exactly as it
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

use std::collections::BTreeMap;
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
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use subtle::ConstantTimeEq;

use super::prompt::lower_hex;
use super::{Hold, Human, Reply};
use crate::error::UsageError;
use crate::record::{AnsweredBy, Scope};
use crate::sanitize::{for_terminal, quoted};
use crate::strict_json;

/// The largest request body read: an answer is a few dozen bytes.
pub(crate) const MAX_BODY_BYTES: usize = 64 * 1024;
/// How many ended holds `GET /api/history` keeps, and how many bytes of them at most.
const HISTORY_HOLDS: usize = 50;
const HISTORY_BYTES: usize = 16 << 20;
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

/// A hold submitted to the page: its number there, and when it declines by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    id: u64,
    expires: Option<Instant>,
}

impl Ticket {
    /// The hold's number on the page and in the API (`/api/holds/ID`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// When the hold declines by itself; `None` waits forever.
    pub fn expires(&self) -> Option<Instant> {
        self.expires
    }
}

/// Called (on the server's thread) whenever a hold is settled there: answered, or found expired.
pub(crate) type OnSettle = Box<dyn Fn(Ticket) + Send + Sync>;

/// Where a hold on the page came from, when it came from another process (`sc-inbox`): `GET
/// /api/holds` shows its `door` and `pid`, and an answer to it is first committed through the
/// page's [`OnAnswer`], which is given `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `sc-approve` or `sc-mcp`.
    pub door: String,
    pub pid: u32,
    /// What the program that submitted the hold knows it by (the inbox's hold id).
    pub key: String,
}

/// An answer given on the page, as [`OnAnswer`] is shown it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Given<'a> {
    pub approve: bool,
    pub digest: &'a str,
    pub scope: Scope,
}

/// Called (on the server's thread, the holds locked) with a valid answer to a hold that has an
/// [`Origin`], before the page takes it: an `Err` refuses the answer with 409 and its reason, and
/// the hold stays pending on the page (`sc-inbox`: the answer is committed to the store first,
/// and one given in another inbox wins).
pub(crate) type OnAnswer =
    Box<dyn Fn(&Origin, Given<'_>) -> std::result::Result<(), String> + Send + Sync>;

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

#[derive(Default)]
struct Holds {
    /// The last hold number given.
    next: u64,
    entries: BTreeMap<u64, Entry>,
    /// How many entries have ended and been collected, and their bytes.
    history: usize,
    history_bytes: usize,
    /// Where the holds that came from elsewhere came from, by number.
    origins: BTreeMap<u64, Origin>,
    /// What an answer to a hold with an [`Origin`] goes through first.
    on_answer: Option<OnAnswer>,
}

struct Entry {
    digest: String,
    /// The verdict record as it came (trimmed of surrounding whitespace).
    record: Box<RawValue>,
    /// The hold as the terminal shows it ([`Display`]), as JSON.
    display: Box<RawValue>,
    timeout: Option<Duration>,
    expires: Option<(Instant, SystemTime)>,
    state: HoldState,
    /// Why it was withdrawn, when it was.
    withdrawn: Option<String>,
    /// Whether the program that submitted it has taken its reply (it is kept until then).
    collected: bool,
    /// The scopes a yes may take, as the deciding door offered them.
    scopes: Vec<Scope>,
    /// The scope the person approved with.
    scope: Scope,
}

impl Entry {
    fn bytes(&self) -> usize {
        self.record.get().len() + self.display.get().len() + 256
    }

    fn ticket(&self, id: u64) -> Ticket {
        Ticket {
            id,
            expires: self.expires.map(|(at, _)| at),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum HoldState {
    Pending,
    Approved,
    Declined,
    Expired,
    /// Taken off the page by the program (sc-mcp: the client cancelled the call).
    Withdrawn,
}

impl Holds {
    /// Settles as expired every pending hold whose time is up; returns their tickets.
    fn expire_due(&mut self, now: Instant) -> Vec<Ticket> {
        let mut expired = Vec::new();
        for (&id, entry) in &mut self.entries {
            let due = entry.expires.is_some_and(|(at, _)| at <= now);
            if entry.state == HoldState::Pending && due {
                entry.state = HoldState::Expired;
                expired.push(entry.ticket(id));
            }
        }
        expired
    }

    /// The reply to a settled hold, marking it taken (and so free to leave the history later).
    fn collect(&mut self, id: u64) -> Option<Reply> {
        let Some(entry) = self.entries.get_mut(&id) else {
            return Some(Reply::ReadFailed(format!(
                "hold {id} is not known to the web page"
            )));
        };
        let digest = Some(entry.digest.clone());
        let reply = match entry.state {
            HoldState::Pending => return None,
            HoldState::Approved => Reply::Decision {
                approve: true,
                digest,
                scope: entry.scope,
            },
            HoldState::Declined => Reply::Decision {
                approve: false,
                digest,
                scope: Scope::Once,
            },
            HoldState::Expired => Reply::TimedOut(entry.timeout.unwrap_or_default()),
            HoldState::Withdrawn => Reply::NobodyToAsk(format!(
                "the hold was withdrawn from the web page: {}",
                entry.withdrawn.as_deref().unwrap_or("no reason given")
            )),
        };
        if !entry.collected {
            entry.collected = true;
            self.history += 1;
            self.history_bytes += entry.bytes();
            self.prune();
        }
        Some(reply)
    }

    /// Forgets the oldest ended holds that were collected, beyond what the history keeps.
    fn prune(&mut self) {
        let mut gone = Vec::new();
        for (&id, entry) in &self.entries {
            if self.history <= HISTORY_HOLDS && self.history_bytes <= HISTORY_BYTES {
                break;
            }
            if self.history <= 1 {
                break;
            }
            if entry.collected {
                self.history -= 1;
                self.history_bytes -= entry.bytes();
                gone.push(id);
            }
        }
        for id in gone {
            self.entries.remove(&id);
            self.origins.remove(&id);
        }
    }

    fn pending_json(&self, now: Instant) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Pending<'a> {
            hold: u64,
            digest: &'a str,
            record: &'a RawValue,
            expires_at: Option<String>,
            seconds_left: Option<u64>,
            display: &'a RawValue,
            /// The scopes a yes may take: `once`, and `call` or `value` where they apply.
            scopes: &'a [Scope],
            /// The door that holds it and its process id, for a hold from elsewhere.
            #[serde(skip_serializing_if = "Option::is_none")]
            door: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            pid: Option<u32>,
        }
        let pending: Vec<Pending> = self
            .entries
            .iter()
            .filter(|(_, entry)| entry.state == HoldState::Pending)
            .map(|(&hold, entry)| Pending {
                hold,
                digest: &entry.digest,
                record: &entry.record,
                expires_at: entry
                    .expires
                    .map(|(_, at)| humantime::format_rfc3339_seconds(at).to_string()),
                seconds_left: entry.expires.map(|(at, _)| {
                    let left = at.saturating_duration_since(now);
                    left.as_secs() + u64::from(left.subsec_nanos() > 0)
                }),
                display: &entry.display,
                scopes: &entry.scopes,
                door: self.origins.get(&hold).map(|origin| origin.door.as_str()),
                pid: self.origins.get(&hold).map(|origin| origin.pid),
            })
            .collect();
        serde_json::to_string(&pending).expect("holds serialize")
    }

    fn history_json(&self) -> String {
        #[derive(Serialize)]
        struct Ended<'a> {
            hold: u64,
            digest: &'a str,
            record: &'a RawValue,
            state: HoldState,
            /// The approval's reason, as the record will carry it.
            reason: String,
            display: &'a RawValue,
        }
        let ended: Vec<Ended> = self
            .entries
            .iter()
            .rev()
            .filter(|(_, entry)| entry.state != HoldState::Pending)
            .take(HISTORY_HOLDS)
            .map(|(&hold, entry)| Ended {
                hold,
                digest: &entry.digest,
                record: &entry.record,
                state: entry.state,
                reason: match entry.state {
                    HoldState::Approved => "approved on the web page".into(),
                    HoldState::Declined => "declined on the web page".into(),
                    HoldState::Withdrawn => entry.withdrawn.clone().unwrap_or_default(),
                    _ => format!(
                        "declined: no answer within {} seconds",
                        entry.timeout.unwrap_or_default().as_secs()
                    ),
                },
                display: &entry.display,
            })
            .collect();
        serde_json::to_string(&ended).expect("holds serialize")
    }

    /// Ends a pending hold as withdrawn, and marks it taken (nobody will collect it). Returns
    /// whether it was pending.
    fn withdraw(&mut self, id: u64, why: &str) -> bool {
        let Some(entry) = self.entries.get_mut(&id) else {
            return false;
        };
        let pending = entry.state == HoldState::Pending;
        if pending {
            entry.state = HoldState::Withdrawn;
            entry.withdrawn = Some(why.to_owned());
        }
        let _ = self.collect(id);
        pending
    }

    /// Settles a pending hold with the person's answer, if it is still pending and the digest
    /// is its record's.
    fn answer(
        &mut self,
        id: u64,
        approve: bool,
        digest: &str,
        scope: Scope,
    ) -> Result<Ticket, Refusal> {
        let Some(entry) = self.entries.get_mut(&id) else {
            return Err(Refusal::new(StatusCode::NOT_FOUND, "no such hold"));
        };
        match entry.state {
            HoldState::Pending => {}
            HoldState::Expired => {
                return Err(Refusal::new(
                    StatusCode::CONFLICT,
                    "the hold has expired: it was declined",
                ))
            }
            HoldState::Approved | HoldState::Declined => {
                return Err(Refusal::new(
                    StatusCode::CONFLICT,
                    "the hold was already answered",
                ))
            }
            HoldState::Withdrawn => {
                return Err(Refusal::new(
                    StatusCode::CONFLICT,
                    "the hold was withdrawn: it was declined",
                ))
            }
        }
        if digest != entry.digest {
            return Err(Refusal::new(
                StatusCode::CONFLICT,
                "the digest is not that of this hold's record",
            ));
        }
        if let (Some(origin), Some(on_answer)) = (self.origins.get(&id), &self.on_answer) {
            let given = Given {
                approve,
                digest,
                scope,
            };
            on_answer(origin, given).map_err(|why| Refusal::new(StatusCode::CONFLICT, why))?;
        }
        entry.state = if approve {
            HoldState::Approved
        } else {
            HoldState::Declined
        };
        entry.scope = scope;
        Ok(entry.ticket(id))
    }
}

/// The record line as JSON to embed: it was read strictly, so it is one JSON value; a line that
/// somehow is not is carried as a string.
fn record_json(line: &[u8]) -> Box<RawValue> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    RawValue::from_string(text.to_owned())
        .unwrap_or_else(|_| serde_json::value::to_raw_value(text).expect("a string serializes"))
}

/// A hold as the terminal shows it: every piece of agent-written text escaped, the arguments
/// pretty-printed from their exact text.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Display {
    /// The call in plain words, one line: `AGENT wants to run TOOL: KEY VALUE, …` ([`summary`]).
    summary: String,
    id: String,
    agent: String,
    tool: String,
    args: String,
    source: String,
    instruction: Option<String>,
    reasons: Vec<String>,
    /// What tainted the agent, when the record carries its state.
    tainted_by: Option<String>,
    /// What the agent has spent in this stream, when the record carries its state.
    spent: Option<String>,
}

fn display_json(hold: &Hold<'_>) -> Box<RawValue> {
    let call = hold.call;
    let state = std::str::from_utf8(hold.line)
        .ok()
        .and_then(|text| strict_json::parse(text).ok())
        .and_then(|record| record.get("agentState").cloned());
    let tainted_by = state
        .as_ref()
        .and_then(|state| state.get("taintedBy"))
        .map(|cause| {
            let part = |key: &str| cause.get(key).and_then(Value::as_str).unwrap_or("?");
            let mut text = format!(
                "{} read untrusted content through {} (id {}",
                part("agent"),
                part("tool"),
                part("id")
            );
            if let Some(argument) = cause.get("argument").and_then(Value::as_str) {
                text.push_str(", ");
                text.push_str(argument);
            }
            text.push(')');
            for_terminal(&text).into_owned()
        });
    let spent = state.as_ref().and_then(|state| {
        // Only a number: sc-gate writes one; anything else came from somewhere else.
        let spent = state.get("spent").filter(|spent| spent.is_number())?;
        let inexact = state.get("inexact") == Some(&Value::Bool(true));
        Some(format!(
            "{spent}{}",
            if inexact {
                " (not exact: an amount a float cannot hold, or a sum that rounded)"
            } else {
                ""
            }
        ))
    });
    let display = Display {
        summary: summary(&call.agent, &call.tool, call.args.text()),
        id: for_terminal(hold.id).into_owned(),
        agent: for_terminal(&call.agent).into_owned(),
        tool: for_terminal(&call.tool).into_owned(),
        args: pretty_json(call.args.text()),
        source: for_terminal(&call.provenance.to_string()).into_owned(),
        instruction: call
            .instruction
            .as_deref()
            .map(|text| for_terminal(text).into_owned()),
        reasons: hold
            .reasons
            .iter()
            .map(|reason| for_terminal(reason).into_owned())
            .collect(),
        tainted_by,
        spent,
    };
    serde_json::value::to_raw_value(&display).expect("a display serializes")
}

/// How many characters of one argument's value the first line shows before it cuts it with `…`.
const SUMMARY_VALUE_CHARS: usize = 24;
/// How many arguments the first line names; more are `…`.
const SUMMARY_ARGS: usize = 4;

/// The call in plain words, the card's first line: `buyer wants to run send_payment: to
/// acme-travel, amount 750.10`. Each argument is its key and its value (a string without its
/// quotes, anything else as its JSON text, numbers as written, white space runs as one space);
/// a long value is cut with `…`, and arguments after the first few are one `…`: the whole call
/// is in the arguments box. Cut before escaping, so an escape ([`for_terminal`]) is never cut
/// in half.
pub(crate) fn summary(agent: &str, tool: &str, args: &str) -> String {
    let mut line = format!(
        "{} wants to run {}",
        for_terminal(agent),
        for_terminal(tool)
    );
    let args = args.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    let pairs: Vec<String> = match serde_json::from_str::<Members>(args) {
        Ok(Members(members)) => {
            let mut pairs: Vec<String> = members
                .iter()
                .take(SUMMARY_ARGS)
                .map(|(key, value)| {
                    format!(
                        "{} {}",
                        for_terminal(&cut(key)),
                        for_terminal(&cut(&plain_value(value.get())))
                    )
                })
                .collect();
            if members.len() > SUMMARY_ARGS {
                pairs.push("\u{2026}".to_owned());
            }
            pairs
        }
        // Arguments that are not an object (sc-gate takes only objects; a record may say else).
        Err(_) if !args.is_empty() => vec![for_terminal(&cut(&plain_value(args))).into_owned()],
        Err(_) => Vec::new(),
    };
    if !pairs.is_empty() {
        line.push_str(": ");
        line.push_str(&pairs.join(", "));
    }
    line
}

/// A JSON value as the first line shows it: a string's text, or the JSON text with each run of
/// white space one space.
fn plain_value(text: &str) -> String {
    if let Ok(text) = serde_json::from_str::<String>(text) {
        return text;
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text, or its first characters and `…` when it is longer than [`SUMMARY_VALUE_CHARS`].
fn cut(text: &str) -> String {
    if text.chars().count() <= SUMMARY_VALUE_CHARS {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(SUMMARY_VALUE_CHARS - 1).collect();
    out.push('\u{2026}');
    out
}

/// JSON text indented two spaces a level, every number and string exactly as written (no float
/// rounding), so what runs is what the person reads; agent-written text escaped as for the
/// terminal ([`for_terminal`]), the indentation's own line breaks kept.
fn pretty_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    write_pretty(text, 0, &mut out);
    out
}

fn write_pretty(text: &str, depth: usize, out: &mut String) {
    let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    let indent = |out: &mut String, depth: usize| {
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    if text.starts_with('{') {
        if let Ok(Members(members)) = serde_json::from_str::<Members>(text) {
            if members.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push_str("{\n");
            for (at, (key, value)) in members.iter().enumerate() {
                indent(out, depth + 1);
                out.push_str(&for_terminal(
                    &serde_json::to_string(key).expect("a string serializes"),
                ));
                out.push_str(": ");
                write_pretty(value.get(), depth + 1, out);
                if at + 1 < members.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            indent(out, depth);
            out.push('}');
            return;
        }
    } else if text.starts_with('[') {
        if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push_str("[\n");
            for (at, item) in items.iter().enumerate() {
                indent(out, depth + 1);
                write_pretty(item.get(), depth + 1, out);
                if at + 1 < items.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            indent(out, depth);
            out.push(']');
            return;
        }
    }
    out.push_str(&for_terminal(text));
}

/// An object's members in order, each value as its JSON text.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
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

/// Why a request was refused; carried on the response for the narration.
#[derive(Debug, Clone)]
struct Refusal {
    status: StatusCode,
    why: String,
}

impl Refusal {
    fn new(status: StatusCode, why: impl Into<String>) -> Refusal {
        Refusal {
            status,
            why: why.into(),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.why }).to_string();
        let mut response = (self.status, json_headers(), body).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response.extensions_mut().insert(self);
        response
    }
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

fn json_headers() -> [(header::HeaderName, &'static str); 1] {
    [(header::CONTENT_TYPE, "application/json")]
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
    let mut holds = shared.lock();
    let mut settled = holds.expire_due(Instant::now());
    let answered = holds.answer(id, answer.approve, &answer.digest, scope);
    drop(holds);
    if let Ok(ticket) = answered {
        settled.push(ticket);
    }
    shared.settled_all(&settled);
    answered?;
    let body = serde_json::json!({ "approved": answer.approve }).to_string();
    Ok((json_headers(), body).into_response())
}

#[cfg(test)]
#[path = "web_tests.rs"]
mod tests;
