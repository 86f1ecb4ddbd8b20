//! `sc-hook`: the gate as a Claude Code `PreToolUse` hook.
//!
//! Claude Code runs the hook before each tool call with one JSON object on stdin (`session_id`,
//! `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`, `cwd`, `permission_mode`, and
//! `agent_id`/`agent_type` inside a subagent) and reads its answer on stdout:
//! - deny → `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",…}}`;
//! - hold → the same with `"ask"`: Claude Code asks its user (the hook has no terminal);
//! - allow → nothing at all, so Claude Code's own permission rules still apply and the gate can
//!   only make things stricter.
//!
//! Claude Code treats every exit status but 2 as "go ahead" (a crash, exit 1, a timeout), so every
//! error here (bad input, a policy that does not load, a state or audit failure, a panic) exits 2
//! with the reason on stderr, which Claude Code shows to the model instead of running the tool.
//!
//! Each hook run is a new process, so taint and budgets persist between runs in a state store
//! ([`crate::store`]; by default `state.sqlite` beside the audit log): one state per session, or,
//! with `--crew`, one for the whole crew across sessions. Each decision reads, decides and writes
//! the state in one atomic update, so concurrent hooks never lose one. A store that cannot be
//! read or written is an error (exit 2). A session id names a state, so anything but
//! `[A-Za-z0-9._-]` in it is refused. ([`SessionState`], the JSON file per session of earlier
//! versions, is no longer used to decide.)

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Map, Value};

use crate::audit::{self, AuditLog, IdMinter, Stage};
use crate::call::Call;
use crate::decision::{evaluate_with_state, Decision, Judgement};
use crate::policy::Policy;
use crate::state::CrewState;
use crate::store::{self, Shared, StateKey, StateUrl, Timing, View};
use crate::strict_json;

/// The agent name of Claude Code's main thread; a subagent is named by its `agent_type`.
pub const DEFAULT_AGENT: &str = "claude-code";
/// The largest hook input read (a `Write` carries the whole file): 32 MiB.
pub const MAX_INPUT_BYTES: usize = 32 << 20;
/// The longest session id accepted.
const MAX_SESSION_ID_CHARS: usize = 128;
/// How long a hook waits for another hook of the same session to release the state. Claude
/// Code's own hook timeout (60 s by default) must not be the one that fires: it lets the call run.
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// The folder beside the audit log that holds the session state files.
pub const STATE_FOLDER: &str = "sc-hook";

/// What the hook was told about a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct HookInput {
    pub session_id: String,
    pub tool_name: String,
    pub tool_input: Map<String, Value>,
    pub tool_use_id: Option<String>,
    pub cwd: Option<String>,
    pub permission_mode: Option<String>,
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
}

/// Whether a session id may name a file: 1 to 128 of `[A-Za-z0-9._-]`, not starting with a dot.
pub fn is_safe_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_SESSION_ID_CHARS
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl HookInput {
    /// Reads the hook's input strictly: valid UTF-8 JSON, an object, no duplicate key, a
    /// `PreToolUse` event, a safe session id, a tool name, an object of tool input.
    pub fn parse(bytes: &[u8]) -> Result<HookInput> {
        let text = std::str::from_utf8(bytes).map_err(|err| {
            anyhow!(
                "the hook input is not valid UTF-8 (bad byte at offset {})",
                err.valid_up_to()
            )
        })?;
        let value = strict_json::parse(text.trim())
            .map_err(|err| anyhow!("the hook input is not valid JSON: {err}"))?;
        let Value::Object(object) = value else {
            bail!(
                "the hook input is {}, not a JSON object",
                strict_json::type_name(&value)
            );
        };
        let string = |key: &str| -> Result<Option<String>> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(text)) => Ok(Some(text.clone())),
                Some(other) => bail!(
                    "the hook input's `{key}` must be a string, not {}",
                    strict_json::type_name(other)
                ),
            }
        };
        let required = |key: &str| -> Result<String> {
            match string(key)? {
                Some(text) if !text.is_empty() => Ok(text),
                Some(_) => bail!("the hook input's `{key}` is empty"),
                None => bail!("the hook input has no `{key}`"),
            }
        };
        let event = required("hook_event_name")?;
        if event != "PreToolUse" {
            bail!(
                "sc-hook answers PreToolUse hooks only, not {}; install it under \"PreToolUse\"",
                Value::String(event)
            );
        }
        let session_id = required("session_id")?;
        if !is_safe_session_id(&session_id) {
            bail!(
                "the session id {} is not safe to use in a file name (only letters, digits, `.`, `_` and `-`, at most {MAX_SESSION_ID_CHARS}, not starting with `.`)",
                Value::String(session_id.chars().take(200).collect())
            );
        }
        let tool_name = required("tool_name")?;
        let tool_input = match object.get("tool_input") {
            Some(Value::Object(input)) => input.clone(),
            Some(other) => bail!(
                "the hook input's `tool_input` must be an object, not {}",
                strict_json::type_name(other)
            ),
            None => bail!("the hook input has no `tool_input`"),
        };
        Ok(HookInput {
            session_id,
            tool_name,
            tool_input,
            tool_use_id: string("tool_use_id")?,
            cwd: string("cwd")?,
            permission_mode: string("permission_mode")?,
            agent_id: string("agent_id")?,
            agent_type: string("agent_type")?,
        })
    }

    /// The agent the call is made in the name of: the subagent's type, else `default_agent`.
    pub fn agent<'a>(&'a self, default_agent: &'a str) -> &'a str {
        self.agent_type
            .as_deref()
            .filter(|kind| !kind.is_empty())
            .unwrap_or(default_agent)
    }

    /// The call as the gate sees it (and the audit log records it): the model ordered it, so its
    /// source is `agent`; the hook's context is kept in extra keys the rules ignore.
    pub fn call_value(&self, default_agent: &str) -> Value {
        let mut call = json!({
            "agent": self.agent(default_agent),
            "tool": self.tool_name,
            "args": self.tool_input,
            "source": "agent",
            "session": self.session_id,
        });
        let object = call.as_object_mut().expect("an object");
        for (key, value) in [
            ("toolUseId", &self.tool_use_id),
            ("cwd", &self.cwd),
            ("permissionMode", &self.permission_mode),
            ("agentId", &self.agent_id),
        ] {
            if let Some(value) = value {
                object.insert(key.to_owned(), Value::String(value.clone()));
            }
        }
        call
    }
}

/// The hook's answer for a judgement: `None` for allow (no decision: Claude Code's own rules
/// apply), else the `deny` or `ask` JSON line.
pub fn hook_output(judgement: &Judgement) -> Option<String> {
    let decision = match judgement.decision {
        Decision::Allow => return None,
        Decision::Hold => "ask",
        Decision::Deny => "deny",
    };
    let reason = format!("Skeleton Crew: {}", judgement.reasons.join("; "));
    Some(
        json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": reason,
            }
        })
        .to_string(),
    )
}

/// A session's crew state, locked for this process until it is dropped.
#[derive(Debug)]
pub struct SessionState {
    /// Held locked; the lock is released when the file is closed.
    _lock: File,
    path: PathBuf,
    pub state: CrewState,
}

impl SessionState {
    /// The state file of a session in `folder`.
    pub fn path_in(folder: &Path, session_id: &str) -> PathBuf {
        folder.join(format!("{session_id}.json"))
    }

    /// Locks the session's state (waiting at most 10 s for another hook of the session) and reads
    /// it; a session seen for the first time (no state file: the hook only ever writes a whole
    /// one, by renaming it into place) starts clean. A state file that is not exactly what the
    /// hook writes (empty, `[]`, `null`, a key missing or unknown, a value of another type,
    /// anything after the object) is an error, never a fresh start.
    pub fn open(folder: &Path, session_id: &str) -> Result<SessionState> {
        if !is_safe_session_id(session_id) {
            bail!("the session id is not safe to use in a file name");
        }
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)
            .with_context(|| format!("cannot create the state folder {}", folder.display()))?;
        let lock_path = folder.join(format!("{session_id}.lock"));
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .with_context(|| format!("cannot open the state lock {}", lock_path.display()))?;
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(fs::TryLockError::WouldBlock) => bail!(
                    "another hook of this session held its state {} for more than {} s",
                    lock_path.display(),
                    LOCK_WAIT.as_secs()
                ),
                Err(fs::TryLockError::Error(err)) => {
                    return Err(err).with_context(|| {
                        format!("cannot lock the state lock {}", lock_path.display())
                    })
                }
            }
        }
        let path = SessionState::path_in(folder, session_id);
        let state = match fs::read(&path) {
            Ok(bytes) => read_state(&bytes)
                .with_context(|| format!("the session state {} is unreadable", path.display()))?,
            Err(err) if err.kind() == ErrorKind::NotFound => CrewState::new(),
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("cannot read the session state {}", path.display()))
            }
        };
        Ok(SessionState {
            _lock: lock,
            path,
            state,
        })
    }

    /// Writes the state: to a temporary file, then renamed over the old one, so a crash leaves
    /// the old state or the new, never half of one.
    pub fn save(&self, fsync: bool) -> Result<()> {
        let temporary = self.path.with_extension("json.tmp");
        let context = || format!("cannot write the session state {}", self.path.display());
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)
            .with_context(context)?;
        let mut text = serde_json::to_vec(&self.state).expect("the crew state serializes");
        text.push(b'\n');
        file.write_all(&text).with_context(context)?;
        if fsync {
            file.sync_all().with_context(context)?;
        }
        drop(file);
        fs::rename(&temporary, &self.path).with_context(context)?;
        Ok(())
    }
}

/// A state file as [`SessionState::save`] writes it, and nothing else ([`CrewState::from_json`]).
fn read_state(bytes: &[u8]) -> Result<CrewState> {
    CrewState::from_json(bytes).map_err(|why| anyhow!(why))
}

/// What `sc-hook` needs besides its input and the audit log.
#[derive(Debug, Clone)]
pub struct HookOptions {
    pub policy: Policy,
    /// The agent name of the main thread (`--agent`).
    pub agent: String,
    /// The state store (`--state`, by default `state.sqlite` beside the audit log).
    pub state: StateUrl,
    /// `--crew`: one state for the crew across sessions, instead of one per session.
    pub crew: Option<String>,
    /// The clock decisions are made at, and `--taint-ttl`.
    pub timing: Timing,
    /// Make the state store's commit durable on disk before answering.
    pub fsync: bool,
}

/// The state folder for an audit log: `sc-hook/` beside it.
pub fn default_state_folder(audit: &Path) -> PathBuf {
    audit
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(STATE_FOLDER)
}

/// Reads at most [`MAX_INPUT_BYTES`] of hook input; more is an error.
pub fn read_input(mut input: impl Read) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    input
        .by_ref()
        .take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .context("cannot read the hook input")?;
    if bytes.len() > MAX_INPUT_BYTES {
        bail!("the hook input is over {MAX_INPUT_BYTES} bytes");
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        bail!("the hook input is empty");
    }
    Ok(bytes)
}

/// Decides one hook input: reads and locks the session's state, decides, audits the decision,
/// saves the state, and only then writes the answer (nothing for allow). Any error means the
/// answer was not written.
pub fn run(
    input: &[u8],
    options: &HookOptions,
    audit_log: &mut AuditLog,
    out: &mut dyn Write,
) -> Result<Judgement> {
    let hook = HookInput::parse(input)?;
    let call_value = hook.call_value(&options.agent);
    let mut call = Call::from_value(&call_value)
        .map_err(|malformed| anyhow!("the hook input is not a call: {malformed}"))?;
    if let Ok(text) = std::str::from_utf8(input) {
        call.take_amount_text_from(text.trim(), &["tool_input", "amount"]);
    }
    let key = match &options.crew {
        Some(crew) => StateKey::crew(crew, View::Gate),
        None => StateKey::session(&hook.session_id),
    };
    let store = options
        .state
        .open(store::OpenOptions {
            create: true,
            fsync: options.fsync,
        })
        .context("state store unavailable")?;
    let mut shared = Shared::new(store, key);
    let id = IdMinter::new().mint();
    // Read, decide and write in one atomic update: concurrent hooks never lose one.
    let mut decided = None;
    shared
        .transact(&options.policy, &options.timing, &mut |state, now| {
            let judgement = evaluate_with_state(&call, &options.policy, state);
            state.record_at(&call, &id, &judgement, &options.policy, Some(now));
            decided = Some((judgement, state.agent(&call.agent).cloned()));
        })
        .context("state store unavailable")?;
    let (judgement, agent) = decided.context("state store unavailable: no decision was made")?;
    let mut event = audit::event(Stage::Gate, &id)
        .field("decision", &judgement.decision)
        .field("reasons", &judgement.reasons)
        .field("call", &call_value);
    if let Some(agent) = &agent {
        event = event.field("agentState", agent);
    }
    event = event.field("stateStore", shared.describe_store());
    if let Some(crew) = &options.crew {
        event = event.field("crew", crew);
    }
    audit_log.append(&event.finish())?;
    if let Some(line) = hook_output(&judgement) {
        out.write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush())
            .context("cannot write the hook's answer")?;
    }
    Ok(judgement)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(extra: &str) -> String {
        format!(
            r#"{{"session_id":"s-1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"ls"}}{extra}}}"#
        )
    }

    #[test]
    fn reads_a_hook_input() {
        let hook = HookInput::parse(
            input(r#","tool_use_id":"toolu_1","cwd":"/w","permission_mode":"default","transcript_path":"/t","agent_type":"Explore""#)
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(hook.tool_name, "Bash");
        assert_eq!(hook.tool_input["command"], "ls");
        assert_eq!(hook.agent("claude-code"), "Explore");
        let call = hook.call_value("claude-code");
        assert_eq!(call["source"], "agent");
        assert_eq!(call["toolUseId"], "toolu_1");
        assert_eq!(call["session"], "s-1");
    }

    #[test]
    fn refuses_bad_input() {
        for (text, expected) in [
            ("", "not valid JSON"),
            ("[]", "not a JSON object"),
            (r#"{"a":1,"a":2}"#, "duplicate key"),
            (
                r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}"#,
                "PreToolUse hooks only",
            ),
            (
                r#"{"session_id":"../x","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}"#,
                "not safe",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"","tool_input":{}}"#,
                "`tool_name` is empty",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"ls"}"#,
                "must be an object",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash"}"#,
                "no `tool_input`",
            ),
            (
                r#"{"session_id":7,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}"#,
                "must be a string",
            ),
        ] {
            let err = HookInput::parse(text.as_bytes()).unwrap_err();
            assert!(err.to_string().contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn session_ids_must_be_safe_file_names() {
        for good in ["abc", "0b1e-4f.2_x", "a".repeat(128).as_str()] {
            assert!(is_safe_session_id(good), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "../etc",
            "a b",
            "a\0b",
            "é",
            "a\\b",
            "a".repeat(129).as_str(),
        ] {
            assert!(!is_safe_session_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn allow_says_nothing_and_the_others_say_why() {
        let judgement = |decision| Judgement {
            decision,
            reasons: vec!["r1".into(), "r2".into()],
        };
        assert_eq!(hook_output(&judgement(Decision::Allow)), None);
        let deny: Value =
            serde_json::from_str(&hook_output(&judgement(Decision::Deny)).unwrap()).unwrap();
        assert_eq!(
            deny,
            json!({"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Skeleton Crew: r1; r2"}})
        );
        let ask: Value =
            serde_json::from_str(&hook_output(&judgement(Decision::Hold)).unwrap()).unwrap();
        assert_eq!(ask["hookSpecificOutput"]["permissionDecision"], "ask");
    }

    #[test]
    fn the_state_survives_between_runs_and_a_corrupt_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("state");
        {
            let mut session = SessionState::open(&folder, "s1").unwrap();
            session.state.crew_tainted_by = Some(crate::state::TaintCause::new(
                "a".into(),
                "WebFetch".into(),
                "1".into(),
                None,
            ));
            session.save(false).unwrap();
        }
        let session = SessionState::open(&folder, "s1").unwrap();
        assert!(session.state.crew_tainted_by.is_some());
        drop(session);
        assert!(SessionState::open(&folder, "s2")
            .unwrap()
            .state
            .crew_tainted_by
            .is_none());
        fs::write(SessionState::path_in(&folder, "s1"), "{not json").unwrap();
        let err = SessionState::open(&folder, "s1").unwrap_err();
        assert!(format!("{err:#}").contains("unreadable"), "{err:#}");
    }

    #[test]
    fn the_state_folder_is_beside_the_audit_log() {
        assert_eq!(
            default_state_folder(Path::new("logs/audit.jsonl")),
            Path::new("logs/sc-hook")
        );
        assert_eq!(
            default_state_folder(Path::new("audit.jsonl")),
            Path::new("./sc-hook")
        );
    }

    #[test]
    fn input_is_bounded_and_not_empty() {
        assert!(read_input(&b" \n"[..]).is_err());
        assert!(read_input(&b"{}"[..]).is_ok());
    }
}
