//! `sc-mcp --upstream URL`: the MCP server is a remote one, spoken to over Streamable HTTP.
//!
//! The session writes the server's input and reads its output one JSON-RPC message a line, as
//! with a server it started; here a thread of its own turns each line into a `POST` to the URL
//! (with `--upstream-header`s, the `Mcp-Session-Id` the server gave at `initialize`, and
//! `MCP-Protocol-Version`; a 2026-07-28 message also gets `Mcp-Method` and `Mcp-Name`), and each
//! message of the answer (a JSON body, or the events of a stream) into a line of the server's
//! output. So every answer passes the same checks as a local server's.
//!
//! Fails closed: a request the remote server does not answer (refused connection, a status that
//! is not 2xx, a body that is not JSON-RPC, no answer within `--upstream-timeout`) is answered by
//! sc-mcp itself with a JSON-RPC error, which the session audits as the call's failure. The
//! upstream's headers (its credentials) are never written anywhere: not in an error, not in the
//! audit log, not on the card; errors name only the URL without its user information.

use std::io::{self, PipeReader, PipeWriter, Write};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use axum::http::{header, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

use crate::jsonl::{self, Line, LineReader};

/// Why the remote server cannot be used. Never carries a header's value.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("--upstream {url}: {why}")]
    BadUrl { url: String, why: &'static str },
    #[error("--upstream-header number {index}: {why} (its value is not shown)")]
    BadHeader { index: usize, why: &'static str },
    #[error("--upstream-header-file {path}: {source}")]
    HeaderFile {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("the remote MCP server {url}: {why}")]
    Io { url: String, why: String },
}

/// Why one message's exchange with the remote server failed. Never carries a header's value, nor
/// the remote server's text (which may say anything).
#[derive(Debug, thiserror::Error)]
enum ExchangeError {
    #[error("the message cannot be sent as an HTTP request")]
    NotARequest,
    #[error("cannot reach it ({0})")]
    Unreachable(String),
    #[error("it answered HTTP {0}")]
    Status(u16),
    #[error("its answer broke off ({0})")]
    BrokeOff(String),
    #[error("its answer is over {0} bytes")]
    TooLarge(usize),
    #[error("its answer is not JSON")]
    NotJson,
}

/// The remote server's input (to write lines to), its output (to read lines from), and the
/// thread that speaks to it.
pub(crate) type Started = (
    PipeWriter,
    PipeReader,
    JoinHandle<Result<(), UpstreamError>>,
);

/// The remote server: its URL and the headers every request carries.
#[derive(Clone)]
pub struct Upstream {
    uri: Uri,
    /// The URL as errors show it: its scheme, host and port only (a path or a query may hold a
    /// key).
    shown: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// The headers' values, and each of their words of 8 bytes or more (the token of
    /// `Bearer TOKEN`), longest first: redacted from whatever the remote server answers, so that
    /// a credential it echoes reaches neither the audit log, nor stderr, nor the client.
    secrets: Vec<Vec<u8>>,
    /// How long one message's answer may take.
    pub timeout: Duration,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("url", &self.shown)
            .field("headers", &self.headers.len())
            .finish_non_exhaustive()
    }
}

/// The headers sc-mcp sets itself, which `--upstream-header` may not set.
const OWN_HEADERS: [&str; 8] = [
    "host",
    "content-type",
    "content-length",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
];

impl Upstream {
    /// `url` (an `http://` URL: TLS to the remote server is not built in yet) and the headers,
    /// each `Name: value`.
    pub fn new(
        url: &str,
        headers: &[String],
        timeout: Duration,
    ) -> Result<Upstream, UpstreamError> {
        let bad = |why| UpstreamError::BadUrl {
            url: shown_url(url),
            why,
        };
        let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(bad(
                    "https is not supported yet: reach the server through a local TLS tunnel on loopback",
                ))
            }
            _ => return Err(bad("the URL must start with http://")),
        }
        if uri
            .authority()
            .is_none_or(|authority| authority.as_str().contains('@'))
        {
            return Err(bad(
                "the URL needs a host, and no user information (give credentials as a header)",
            ));
        }
        let mut parsed = Vec::new();
        for (index, line) in headers.iter().enumerate() {
            let index = index + 1;
            let (name, value) = line.split_once(':').ok_or(UpstreamError::BadHeader {
                index,
                why: "not `Name: value`",
            })?;
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                UpstreamError::BadHeader {
                    index,
                    why: "not a header name",
                }
            })?;
            if OWN_HEADERS.contains(&name.as_str()) {
                return Err(UpstreamError::BadHeader {
                    index,
                    why: "sc-mcp sets this header itself",
                });
            }
            let mut value =
                HeaderValue::from_str(value.trim()).map_err(|_| UpstreamError::BadHeader {
                    index,
                    why: "not a header value",
                })?;
            value.set_sensitive(true);
            parsed.push((name, value));
        }
        let mut secrets: Vec<Vec<u8>> = Vec::new();
        for (_, value) in &parsed {
            let value = value.as_bytes();
            secrets.push(value.to_vec());
            secrets.extend(
                value
                    .split(|byte| byte.is_ascii_whitespace())
                    .filter(|word| word.len() >= 8)
                    .map(<[u8]>::to_vec),
            );
        }
        secrets.retain(|secret| !secret.is_empty());
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets.dedup();
        Ok(Upstream {
            shown: shown_url(url),
            uri,
            headers: parsed,
            secrets,
            timeout,
        })
    }

    /// Reads `--upstream-header-file`: one `Name: value` a line (blank lines skipped).
    pub fn headers_from_file(path: &std::path::Path) -> Result<Vec<String>, UpstreamError> {
        let text = std::fs::read_to_string(path).map_err(|source| UpstreamError::HeaderFile {
            path: path.display().to_string(),
            source,
        })?;
        Ok(text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// Starts the thread that speaks to the remote server: returns the server's input (to write
    /// lines to), its output (to read lines from) and the thread, which ends when the input is
    /// closed.
    pub(crate) fn start(&self, max: usize) -> anyhow::Result<Started> {
        let (input_reader, input_writer) = io::pipe()?;
        let (output_reader, output_writer) = io::pipe()?;
        let upstream = self.clone();
        let thread = thread::Builder::new()
            .name("upstream".into())
            .spawn(move || upstream.relay(input_reader, output_writer, max))?;
        Ok((input_writer, output_reader, thread))
    }

    fn io_error(&self, why: impl std::fmt::Display) -> UpstreamError {
        UpstreamError::Io {
            url: self.shown.clone(),
            why: why.to_string(),
        }
    }

    fn relay(self, input: PipeReader, output: PipeWriter, max: usize) -> Result<(), UpstreamError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|err| self.io_error(err))?;
        let (lines, mut received) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        // A blocking reader of the session's lines, so that a message may be sent while another
        // one's stream is still open (an answer to the remote server's own question).
        thread::Builder::new()
            .name("upstream-input".into())
            .spawn(move || {
                let mut reader = LineReader::new(input, max);
                while let Ok(Some(line)) = reader.next_line() {
                    if let Line::Text(bytes) = line {
                        if !jsonl::is_blank(bytes) && lines.send(bytes.to_vec()).is_err() {
                            break;
                        }
                    }
                }
            })
            .map_err(|err| self.io_error(err))?;
        let link = Arc::new(Link {
            upstream: self,
            client: {
                let mut connector = HttpConnector::new();
                connector.set_nodelay(true);
                Client::builder(TokioExecutor::new()).build(connector)
            },
            output: Mutex::new(output),
            session: Mutex::new(None),
            version: Mutex::new(None),
            max,
        });
        runtime.block_on(async move {
            let local = tokio::task::LocalSet::new();
            local
                .run_until(async {
                    let mut tasks = tokio::task::JoinSet::new();
                    while let Some(line) = received.recv().await {
                        let message: Option<Value> = serde_json::from_slice(&line).ok();
                        let initialize = message
                            .as_ref()
                            .and_then(|message| message.get("method"))
                            .and_then(Value::as_str)
                            == Some("initialize");
                        let link = Arc::clone(&link);
                        if initialize {
                            // Awaited: what follows needs the session it opens.
                            link.send(line, message).await;
                        } else {
                            tasks.spawn_local(async move { link.send(line, message).await });
                        }
                    }
                    while tasks.join_next().await.is_some() {}
                    link.end().await;
                })
                .await;
        });
        Ok(())
    }
}

/// The URL's scheme, host and port, for errors, stderr and the audit log: no user information,
/// path or query, any of which may hold a key.
fn shown_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let authority = &rest[..end];
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}")
        }
        None => "(not a URL)".to_owned(),
    }
}

impl Upstream {
    /// A message of the remote server as it goes on: `line` with every configured header value
    /// (and each long word of one) replaced by `[redacted]`, in its bytes and in every string of
    /// `value` (its parse) once decoded, since a server may write the value with escapes
    /// (`\/` for `/`, `\u0041` for `A`): then the message is written anew from `value`.
    fn redact_message(&self, line: Vec<u8>, mut value: Value) -> Vec<u8> {
        if self.secrets.is_empty() {
            return line;
        }
        if self.redact_strings(&mut value) {
            return serde_json::to_vec(&value).expect("a JSON value serializes");
        }
        self.redact(line)
    }

    /// Redacts every string of `value`, keys too; whether any held a secret.
    fn redact_strings(&self, value: &mut Value) -> bool {
        let text = |text: &str| -> Option<String> {
            let redacted = self.redact(text.as_bytes().to_vec());
            (redacted != text.as_bytes()).then(|| String::from_utf8_lossy(&redacted).into_owned())
        };
        match value {
            Value::String(string) => match text(string) {
                Some(redacted) => {
                    *string = redacted;
                    true
                }
                None => false,
            },
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |any, item| self.redact_strings(item) | any),
            Value::Object(object) => {
                let mut any = false;
                let entries = std::mem::take(object);
                for (key, mut item) in entries {
                    any |= self.redact_strings(&mut item);
                    let key = match text(&key) {
                        Some(redacted) => {
                            any = true;
                            redacted
                        }
                        None => key,
                    };
                    object.insert(key, item);
                }
                any
            }
            _ => false,
        }
    }

    /// `bytes` with every configured header value (and each long word of one) replaced by
    /// `[redacted]`.
    fn redact(&self, mut bytes: Vec<u8>) -> Vec<u8> {
        for secret in &self.secrets {
            if memchr::memmem::find(&bytes, secret).is_none() {
                continue;
            }
            let mut out = Vec::with_capacity(bytes.len());
            let mut rest = &bytes[..];
            while let Some(at) = memchr::memmem::find(rest, secret) {
                out.extend_from_slice(&rest[..at]);
                out.extend_from_slice(b"[redacted]");
                rest = &rest[at + secret.len()..];
            }
            out.extend_from_slice(rest);
            bytes = out;
        }
        bytes
    }
}

struct Link {
    upstream: Upstream,
    client: Client<HttpConnector, Full<Bytes>>,
    output: Mutex<PipeWriter>,
    /// The `Mcp-Session-Id` the remote server gave at `initialize`.
    session: Mutex<Option<HeaderValue>>,
    /// The protocol version the remote server answered `initialize` with.
    version: Mutex<Option<HeaderValue>>,
    max: usize,
}

/// A request's id and method, read leniently (the session checked the message already).
fn request_of(message: &Option<Value>) -> Option<(Value, String)> {
    let message = message.as_ref()?;
    let method = message.get("method")?.as_str()?;
    let id = message.get("id")?;
    Some((id.clone(), method.to_owned()))
}

impl Link {
    /// Sends one message; what answers it goes to the session as lines, and a request the remote
    /// server did not answer is answered with an error.
    async fn send(&self, line: Vec<u8>, message: Option<Value>) {
        let request = request_of(&message);
        let answered = match tokio::time::timeout(
            self.upstream.timeout,
            self.exchange(line, &message, request.as_ref()),
        )
        .await
        {
            Ok(Ok(answered)) => answered,
            Ok(Err(why)) => {
                self.fail(request.as_ref(), &why.to_string());
                return;
            }
            Err(_) => {
                self.fail(
                    request.as_ref(),
                    &format!("no answer within {} s", self.upstream.timeout.as_secs_f64()),
                );
                return;
            }
        };
        if !answered {
            self.fail(request.as_ref(), "its answer did not answer the request");
        }
    }

    fn fail(&self, request: Option<&(Value, String)>, why: &str) {
        let message = format!(
            "sc-mcp: the remote MCP server {} failed: {why}",
            self.upstream.shown
        );
        let _ = writeln!(io::stderr().lock(), "{message}");
        if let Some((id, _)) = request {
            let answer =
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}});
            self.write(&serde_json::to_vec(&answer).expect("JSON serializes"));
        }
    }

    fn write(&self, message: &[u8]) {
        let mut output = self.output.lock().unwrap_or_else(|p| p.into_inner());
        let _ = output.write_all(message);
        let _ = output.write_all(b"\n");
        let _ = output.flush();
    }

    /// One message's `POST`; `Ok(true)` when a request was answered (or was none).
    async fn exchange(
        &self,
        line: Vec<u8>,
        message: &Option<Value>,
        request: Option<&(Value, String)>,
    ) -> Result<bool, ExchangeError> {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(self.upstream.uri.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        for (name, value) in &self.upstream.headers {
            builder = builder.header(name, value);
        }
        if let Some(session) = self
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            builder = builder.header("mcp-session-id", session);
        }
        let meta_version = message
            .as_ref()
            .and_then(|m| m.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion"))
            .and_then(Value::as_str)
            .and_then(|v| HeaderValue::from_str(v).ok());
        let version = meta_version.clone().or_else(|| {
            self.version
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        });
        if let Some(version) = version {
            builder = builder.header("mcp-protocol-version", version);
        }
        if meta_version.is_some() {
            if let Some((_, method)) = request {
                if let Ok(value) = HeaderValue::from_str(method) {
                    builder = builder.header("mcp-method", value);
                }
                let name = match method.as_str() {
                    "tools/call" | "prompts/get" => "/params/name",
                    "resources/read" => "/params/uri",
                    _ => "",
                };
                if let Some(name) = message
                    .as_ref()
                    .and_then(|m| m.pointer(name))
                    .and_then(Value::as_str)
                {
                    if let Ok(value) = HeaderValue::from_str(&header_value(name)) {
                        builder = builder.header("mcp-name", value);
                    }
                }
            }
        }
        let request_body = builder
            .body(Full::new(Bytes::from(line)))
            .map_err(|_| ExchangeError::NotARequest)?;
        let response = self
            .client
            .request(request_body)
            .await
            .map_err(|err| ExchangeError::Unreachable(describe(&err)))?;
        let status = response.status();
        if let Some(session) = response.headers().get("mcp-session-id") {
            if request.is_some_and(|(_, method)| method == "initialize") {
                *self.session.lock().unwrap_or_else(|p| p.into_inner()) = Some(session.clone());
            }
        }
        if status == StatusCode::ACCEPTED {
            return Ok(request.is_none());
        }
        if !status.is_success() {
            // The body is not shown: it is the remote server's text, which may say anything.
            return Err(ExchangeError::Status(status.as_u16()));
        }
        let stream = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        let mut body = response.into_body();
        let mut buffer: Vec<u8> = Vec::new();
        let mut answered = request.is_none();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|err| ExchangeError::BrokeOff(describe(&err)))?;
            if let Some(data) = frame.data_ref() {
                buffer.extend_from_slice(data);
            }
            if buffer.len() > self.max {
                return Err(ExchangeError::TooLarge(self.max));
            }
            if stream {
                while let Some(end) = event_end(&buffer) {
                    let event: Vec<u8> = buffer.drain(..end).collect();
                    if let Some(data) = event_data(&event) {
                        answered |= self.deliver(&data, request)?;
                    }
                }
                if answered && request.is_some() {
                    return Ok(true);
                }
            }
        }
        if stream {
            if let Some(data) = event_data(&buffer) {
                answered |= self.deliver(&data, request)?;
            }
        } else if !buffer.iter().all(u8::is_ascii_whitespace) {
            answered |= self.deliver(&buffer, request)?;
        }
        Ok(answered)
    }

    /// Gives one message of the answer to the session as a line; `Ok(true)` when it answers the
    /// request.
    fn deliver(
        &self,
        data: &[u8],
        request: Option<&(Value, String)>,
    ) -> Result<bool, ExchangeError> {
        let value: Value = serde_json::from_slice(data).map_err(|_| ExchangeError::NotJson)?;
        // Parsed, so every line break is whitespace between tokens: the line stays one message,
        // as it came.
        let line = crate::json_write::on_one_line(data);
        let line = self.upstream.redact_message(line, value.clone());
        let answers = match (request, &value) {
            (Some((id, method)), Value::Object(object))
                if object.get("id") == Some(id) && !object.contains_key("method") =>
            {
                if method == "initialize" {
                    if let Some(version) = value
                        .pointer("/result/protocolVersion")
                        .and_then(Value::as_str)
                        .and_then(|v| HeaderValue::from_str(v).ok())
                    {
                        *self.version.lock().unwrap_or_else(|p| p.into_inner()) = Some(version);
                    }
                }
                true
            }
            _ => false,
        };
        self.write(&line);
        Ok(answers)
    }

    /// Ends the remote session (best effort, bounded) when the session's input has ended.
    async fn end(&self) {
        let Some(session) = self
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        else {
            return;
        };
        let mut builder = Request::builder()
            .method(Method::DELETE)
            .uri(self.upstream.uri.clone())
            .header("mcp-session-id", session);
        for (name, value) in &self.upstream.headers {
            builder = builder.header(name, value);
        }
        if let Ok(request) = builder.body(Full::new(Bytes::new())) {
            let _ =
                tokio::time::timeout(Duration::from_secs(5), self.client.request(request)).await;
        }
    }
}

/// An error's kind, without its text (which could carry what was sent).
fn describe(err: &(dyn std::error::Error + 'static)) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            return format!("{:?}", io.kind());
        }
        source = err.source();
    }
    "the connection failed".to_owned()
}

/// The end of the first whole event in `buffer` (after its blank line).
fn event_end(buffer: &[u8]) -> Option<usize> {
    let lf = memchr::memmem::find(buffer, b"\n\n").map(|at| at + 2);
    let crlf = memchr::memmem::find(buffer, b"\r\n\r\n").map(|at| at + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The data of one server-sent event (its `data:` lines joined), if it has any.
fn event_data(event: &[u8]) -> Option<Vec<u8>> {
    let mut data: Option<Vec<u8>> = None;
    for line in event.split(|&byte| byte == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            let data = data.get_or_insert_with(Vec::new);
            if !data.is_empty() {
                data.push(b'\n');
            }
            data.extend_from_slice(rest);
        }
    }
    data.filter(|data| !data.iter().all(u8::is_ascii_whitespace))
}

/// A header value for `Mcp-Name`: printable ASCII as it is, anything else base64 in the
/// `=?base64?…?=` form the 2026-07-28 transport reads.
pub(crate) fn header_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|byte| (0x20..0x7f).contains(&byte))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        return value.to_owned();
    }
    use base64::Engine;
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_is_shown_as_its_host_only_and_echoed_credentials_are_redacted() {
        assert_eq!(
            shown_url("http://u:p@127.0.0.1:9/s/PATHSECRET/mcp?api_key=QSECRET"),
            "http://127.0.0.1:9"
        );
        assert_eq!(shown_url("http://h:1?k=QSECRET"), "http://h:1");
        let upstream = Upstream::new(
            "http://127.0.0.1:1/mcp",
            &["Authorization: Bearer UPSECRET-abc123".into()],
            Duration::from_secs(1),
        )
        .unwrap();
        let echoed = br#"{"error":{"message":"bad credentials: Bearer UPSECRET-abc123; token UPSECRET-abc123"}}"#;
        let redacted = String::from_utf8(upstream.redact(echoed.to_vec())).unwrap();
        assert!(!redacted.contains("UPSECRET"), "{redacted}");
        assert!(
            redacted.contains("bad credentials: [redacted]; token [redacted]"),
            "{redacted}"
        );
        // Written with escapes, as PHP writes `/` and Go `<`: found once decoded (a review).
        let upstream = Upstream::new(
            "http://127.0.0.1:1/mcp",
            &["Authorization: Bearer sk-live/Zx9+Qw7/Rt5<vB2nM8kL4".into()],
            Duration::from_secs(1),
        )
        .unwrap();
        let echoed = br#"{"result":{"content":[{"type":"text","text":"you sent Bearer sk-live\/Zx9+Qw7\/Rt5<vB2nM8kL4"}],"sk-live\/Zx9+Qw7\/Rt5<vB2nM8kL4":1}}"#;
        let value: Value = serde_json::from_slice(echoed).unwrap();
        let redacted = String::from_utf8(upstream.redact_message(echoed.to_vec(), value)).unwrap();
        let back: Value = serde_json::from_str(&redacted).unwrap();
        assert!(!back.to_string().contains("Zx9"), "{redacted}");
        assert_eq!(
            back["result"]["content"][0]["text"], "you sent [redacted]",
            "{redacted}"
        );
        assert_eq!(back["result"]["[redacted]"], 1, "{redacted}");
    }

    #[test]
    fn errors_never_show_a_header_value_or_user_information() {
        let err = Upstream::new(
            "http://127.0.0.1:1/mcp",
            &["Authorization Bearer s3cret".into()],
            Duration::from_secs(1),
        )
        .unwrap_err()
        .to_string();
        assert!(!err.contains("s3cret"), "{err}");
        let err = Upstream::new(
            "http://user:s3cret@127.0.0.1:1/mcp",
            &[],
            Duration::from_secs(1),
        )
        .unwrap_err()
        .to_string();
        assert!(!err.contains("s3cret"), "{err}");
        let upstream = Upstream::new(
            "http://127.0.0.1:1/mcp",
            &["Authorization: Bearer s3cret".into()],
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(!format!("{upstream:?}").contains("s3cret"));
        assert!(Upstream::new(
            "http://127.0.0.1:1/mcp",
            &["Mcp-Session-Id: x".into()],
            Duration::from_secs(1)
        )
        .is_err());
    }

    #[test]
    fn events_are_cut_and_read() {
        let buffer = b"event: message\ndata: {\"a\":\ndata: 1}\n\nid: 2\r\n\r\n";
        let end = event_end(buffer).unwrap();
        assert_eq!(event_data(&buffer[..end]).unwrap(), b"{\"a\":\n1}");
        assert_eq!(event_data(&buffer[end..]), None);
        assert_eq!(header_value("read_file"), "read_file");
        assert_eq!(header_value("é"), "=?base64?w6k=?=");
    }
}
