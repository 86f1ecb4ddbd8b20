//! `sc-hook`: the gate as a Claude Code hook, for `PreToolUse` and `PostToolUse`.
//!
//! Claude Code runs the hook with one JSON object on stdin (`session_id`, `hook_event_name`,
//! `tool_name`, `tool_input`, `tool_use_id`, `cwd`, `permission_mode`, and `agent_id`/`agent_type`
//! inside a subagent; `tool_response` after the call). The input's `hook_event_name` says which
//! event it is; any other event is an error.
//!
//! **`PreToolUse`**, before each tool call: sc-hook decides and answers on stdout:
//! - deny → `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",…}}`;
//! - hold → the same with `"ask"`: Claude Code asks its user (the hook has no terminal);
//! - allow → nothing at all, so Claude Code's own permission rules still apply and the gate can
//!   only make things stricter.
//!
//! **`PostToolUse`**, after a call ran, closes the loop in the audit log; it never writes to
//! stdout, except the warning below. The call is linked to its `PreToolUse` by `tool_use_id`
//! ([`ToolUses`], kept in the session's state):
//! - a call sc-hook held: Claude Code asked its user and the call ran, so the person said yes. An
//!   `approve` event (`"by":"claude-code"`) and an `exec` event are written under the gate
//!   event's id, and sc-report counts the hold as approved. The approval's reason names Claude
//!   Code's permission mode: some Claude Code versions have been reported to run an `ask` without
//!   asking in some modes (`bypassPermissions`, `auto`), and then the yes was Claude Code's;
//! - a call sc-hook allowed: the `exec` event;
//! - a call sc-hook denied that ran all the same (Claude Code should never run one): an `exec`
//!   event `executed` whose reason says the gate denied it, and a `systemMessage` warning for
//!   the user on stdout;
//! - a call sc-hook never saw (no `tool_use_id`, one this session's state does not know, or one
//!   seen for another tool): an `exec` event for an unknown call under a new id, with the call.
//!
//! The `exec` event is `failed` when the tool's response is a JSON object with `isError: true`
//! (an MCP tool that reported an error, as sc-mcp reads it), else `executed`; the response itself
//! is not copied into the log. A second `PostToolUse` for a `tool_use_id` already recorded writes
//! nothing: the call ran once, and a hook registered twice must not count it twice. A held call
//! that never gets a `PostToolUse` (the person said no, or the tool failed) stays unanswered.
//!
//! Claude Code treats every exit status but 2 as "go ahead" (a crash, exit 1, a timeout), so every
//! error here (bad input, a policy that does not load, a state or audit failure, a panic) exits 2
//! with the reason on stderr, which Claude Code shows to the model instead of running the tool.
//!
//! Each hook run is a new process, so taint and budgets persist between runs in a state store
//! ([`crate::store`]; by default `state.sqlite` beside the audit log): one state per session, or,
//! with `--crew`, one for the whole crew across sessions. Each decision reads, decides and writes
//! the state in one atomic update, so concurrent hooks never lose one. A store that cannot be
//! read or written is an error (exit 2). The calls awaiting their `PostToolUse` ([`ToolUses`],
//! the session's call links) are kept per session in the same store, beside the state, and are
//! read, changed and written in one atomic update too ([`update_links`]), so two hooks of one
//! session (parallel tool calls) never lose a link; links that are not what sc-hook writes are
//! refused (exit 2), never read as none. A session id names a state and its links, so anything
//! but `[A-Za-z0-9._-]` in it is refused.

use std::collections::{HashSet, VecDeque};
use std::io::{Read, Write};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::approve::prompt::lower_hex;
use crate::approve::{approval_for, Reply};
use crate::audit::{self, AuditLog, IdMinter, Stage};
use crate::call::Call;
use crate::decision::{Decision, Judgement};
use crate::policy::Policy;
use crate::record::{AnsweredBy, Outcome, Status};
use crate::sanitize::quoted;
use crate::store::{
    self, Shared, StateKey, StateUrl, Store, StoreError, Timing, ValueChange, ValueKey, View,
};
use crate::strict_json;

/// The agent name of Claude Code's main thread; a subagent is named by its `agent_type`.
pub const DEFAULT_AGENT: &str = "claude-code";
/// The largest hook input read (a `Write` carries the whole file): 32 MiB.
pub const MAX_INPUT_BYTES: usize = 32 << 20;
/// The longest session id accepted.
const MAX_SESSION_ID_CHARS: usize = 128;

/// The most calls awaiting their `PostToolUse` that a session's state remembers by
/// `tool_use_id` ([`ToolUses`]); past it the oldest is forgotten, and if it runs after all it is
/// recorded as an unknown call. A call waits only while it runs (or while Claude Code asks about
/// it), so this is far more than a session has in flight; but a denied call, a hold the person
/// turned down, or every call when only PreToolUse is registered never gets one, and stays until
/// forgotten. The links are read and rewritten on every call: 1024 of them is about 220 KB.
pub const MAX_AWAITING: usize = 1024;
/// The most calls that ran that a session's state remembers, the latest, so that a
/// `PostToolUse` repeated (a hook registered twice runs twice at once) is recognised and
/// recorded once.
pub const MAX_RAN: usize = 64;

/// The hook events sc-hook handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// Before a tool call: decide it.
    PreToolUse,
    /// After a tool call ran: record that it ran.
    PostToolUse,
    /// The user's prompt: trusted values for value provenance.
    UserPromptSubmit,
}

impl HookEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
        }
    }
}

/// What the hook was told about a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct HookInput {
    pub event: HookEvent,
    pub session_id: String,
    pub tool_name: String,
    pub tool_input: Map<String, Value>,
    /// What the tool answered (`PostToolUse` only), as Claude Code wrote it.
    pub tool_response: Option<Value>,
    pub tool_use_id: Option<String>,
    pub cwd: Option<String>,
    pub permission_mode: Option<String>,
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    /// The user's prompt (`UserPromptSubmit` only).
    pub prompt: Option<String>,
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
    /// `PreToolUse` or `PostToolUse` event, a safe session id, a tool name, an object of tool
    /// input. `tool_use_id` is optional on both events (a call without one cannot be linked).
    pub fn parse(bytes: &[u8]) -> Result<HookInput> {
        let text = std::str::from_utf8(bytes).map_err(|err| {
            anyhow!(
                "the hook input is not valid UTF-8 (bad byte at offset {})",
                err.valid_up_to()
            )
        })?;
        let value = strict_json::parse(text.trim())
            .map_err(|err| anyhow!("the hook input is not valid JSON: {err}"))?;
        let Value::Object(mut object) = value else {
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
        let event = match required("hook_event_name")?.as_str() {
            "PreToolUse" => HookEvent::PreToolUse,
            "PostToolUse" => HookEvent::PostToolUse,
            "UserPromptSubmit" => HookEvent::UserPromptSubmit,
            other => bail!(
                "sc-hook answers PreToolUse and PostToolUse hooks only, not {} (and UserPromptSubmit, for value provenance); install it under \"PreToolUse\" and \"PostToolUse\"",
                Value::String(other.chars().take(200).collect())
            ),
        };
        let session_id = required("session_id")?;
        if !is_safe_session_id(&session_id) {
            bail!(
                "the session id {} is not safe to use in a file name (only letters, digits, `.`, `_` and `-`, at most {MAX_SESSION_ID_CHARS}, not starting with `.`)",
                Value::String(session_id.chars().take(200).collect())
            );
        }
        if event == HookEvent::UserPromptSubmit {
            let prompt = string("prompt")?
                .ok_or_else(|| anyhow!("the UserPromptSubmit input has no `prompt`"))?;
            return Ok(HookInput {
                event,
                session_id,
                tool_name: String::new(),
                tool_input: Map::new(),
                tool_response: None,
                tool_use_id: None,
                cwd: string("cwd")?,
                permission_mode: string("permission_mode")?,
                agent_id: string("agent_id")?,
                agent_type: string("agent_type")?,
                prompt: Some(prompt),
            });
        }
        let tool_name = required("tool_name")?;
        let tool_use_id = string("tool_use_id")?;
        if tool_use_id.as_deref() == Some("") {
            bail!("the hook input's `tool_use_id` is empty");
        }
        let cwd = string("cwd")?;
        let permission_mode = string("permission_mode")?;
        let agent_id = string("agent_id")?;
        let agent_type = string("agent_type")?;
        let tool_input = match object.remove("tool_input") {
            Some(Value::Object(input)) => input,
            Some(other) => bail!(
                "the hook input's `tool_input` must be an object, not {}",
                strict_json::type_name(&other)
            ),
            None => bail!("the hook input has no `tool_input`"),
        };
        // A file's whole text may be in the response: taken, not copied.
        let tool_response = match event {
            HookEvent::PostToolUse => object.remove("tool_response"),
            HookEvent::PreToolUse | HookEvent::UserPromptSubmit => None,
        };
        Ok(HookInput {
            event,
            session_id,
            tool_name,
            tool_input,
            tool_response,
            tool_use_id,
            cwd,
            permission_mode,
            agent_id,
            agent_type,
            prompt: None,
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

/// What sc-hook remembers of a call by Claude Code's `tool_use_id`, so that its `PostToolUse`
/// is recorded under the call's id with what the gate decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolUse {
    pub tool_use_id: String,
    /// The call's id in the audit log: its gate event's, or for a call first seen when it had
    /// run, its exec event's.
    pub id: String,
    pub agent: String,
    pub tool: String,
    /// What the gate decided; absent for a call first seen when it had run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// [`input_digest`] of the tool input the gate judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// Whether its `PostToolUse` was recorded.
    pub ran: bool,
}

/// The calls of a session by `tool_use_id`, oldest first: at most [`MAX_AWAITING`] awaiting
/// their `PostToolUse` and the last [`MAX_RAN`] that ran. Kept in the state store as the JSON
/// array of the calls ([`update_links`]), and no value while there are none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ToolUses {
    calls: VecDeque<ToolUse>,
}

impl ToolUses {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    pub fn get(&self, tool_use_id: &str) -> Option<&ToolUse> {
        self.calls.iter().find(|c| c.tool_use_id == tool_use_id)
    }

    fn get_mut(&mut self, tool_use_id: &str) -> Option<&mut ToolUse> {
        self.calls.iter_mut().find(|c| c.tool_use_id == tool_use_id)
    }

    /// Remembers a call that `PreToolUse` decided. A `tool_use_id` decided before (the hook
    /// registered twice, say) keeps the stricter decision, as Claude Code does with two hooks'
    /// answers (the first on a tie); one that already ran is left as it is.
    pub fn decided(&mut self, call: ToolUse) {
        if let Some(known) = self.get_mut(&call.tool_use_id) {
            if !known.ran && call.decision > known.decision {
                *known = call;
            }
            return;
        }
        self.remember(call);
    }

    /// Marks a call as run; false if it is not known.
    fn ran(&mut self, tool_use_id: &str) -> bool {
        let Some(call) = self.get_mut(tool_use_id) else {
            return false;
        };
        call.ran = true;
        self.forget_past_bounds();
        true
    }

    fn remember(&mut self, call: ToolUse) {
        self.calls.push_back(call);
        self.forget_past_bounds();
    }

    /// Forgets the oldest calls awaiting their run past [`MAX_AWAITING`], and the oldest that
    /// ran past [`MAX_RAN`].
    fn forget_past_bounds(&mut self) {
        let mut ran = self.calls.iter().filter(|c| c.ran).count();
        let mut awaiting = self.calls.len() - ran;
        while ran > MAX_RAN || awaiting > MAX_AWAITING {
            let forget_ran = ran > MAX_RAN;
            let Some(oldest) = self.calls.iter().position(|c| c.ran == forget_ran) else {
                break;
            };
            self.calls.remove(oldest);
            if forget_ran {
                ran -= 1;
            } else {
                awaiting -= 1;
            }
        }
    }

    /// Reads the links as [`update_links`] writes them: strict JSON (no duplicate key, nothing
    /// after it), then [`ToolUses::from_value`].
    fn from_text(text: &str) -> Result<ToolUses, String> {
        let value = strict_json::parse(text).map_err(|err| format!("not valid JSON: {err}"))?;
        ToolUses::from_value(value)
    }

    /// Reads the `toolUses` array exactly as it is written: an array of objects, at most
    /// [`MAX_AWAITING`] awaiting their run and [`MAX_RAN`] that ran, each with every key it
    /// needs, no other key, no `null`, no empty name, a digest of 64 lowercase hex digits, a
    /// decision unless the call was first seen when it had run, and each `tool_use_id` once.
    fn from_value(value: Value) -> Result<ToolUses, String> {
        let Value::Array(items) = value else {
            return Err(format!(
                "`toolUses` must be an array, not {}",
                strict_json::type_name(&value)
            ));
        };
        if items.len() > MAX_AWAITING + MAX_RAN {
            return Err(format!(
                "`toolUses` has {} calls, more than the {} sc-hook keeps",
                items.len(),
                MAX_AWAITING + MAX_RAN
            ));
        }
        let mut calls = VecDeque::with_capacity(items.len());
        let mut seen = HashSet::with_capacity(items.len());
        for (at, item) in items.into_iter().enumerate() {
            let bad = |why: String| format!("`toolUses[{at}]` {why}");
            let Value::Object(object) = &item else {
                return Err(bad(format!(
                    "must be an object, not {}",
                    strict_json::type_name(&item)
                )));
            };
            if let Some((key, _)) = object.iter().find(|(_, value)| value.is_null()) {
                return Err(bad(format!("has `{key}` null")));
            }
            let call: ToolUse =
                serde_json::from_value(item).map_err(|err| bad(format!("is not a call: {err}")))?;
            for (key, text) in [
                ("toolUseId", &call.tool_use_id),
                ("id", &call.id),
                ("agent", &call.agent),
                ("tool", &call.tool),
            ] {
                if text.is_empty() {
                    return Err(bad(format!("has an empty `{key}`")));
                }
            }
            if let Some(digest) = &call.input {
                if digest.len() != 64
                    || !digest
                        .bytes()
                        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                {
                    return Err(bad("has an `input` that is not a SHA-256 in hex".into()));
                }
            }
            if call.decision.is_none() && !call.ran {
                return Err(bad("has no `decision` and has not run".into()));
            }
            if !seen.insert(call.tool_use_id.clone()) {
                return Err(bad(format!(
                    "repeats the toolUseId {}",
                    Value::String(call.tool_use_id)
                )));
            }
            calls.push_back(call);
        }
        let ran = calls.iter().filter(|c| c.ran).count();
        let awaiting = calls.len() - ran;
        if ran > MAX_RAN || awaiting > MAX_AWAITING {
            return Err(format!(
                "`toolUses` has {ran} calls that ran and {awaiting} awaiting their run, more than the {MAX_RAN} and {MAX_AWAITING} sc-hook keeps"
            ));
        }
        Ok(ToolUses { calls })
    }
}

/// The SHA-256 (lowercase hex) of a tool input as JSON with every object's keys sorted, so the
/// input a call ran with can be compared with the one the gate judged whatever the key order.
pub fn input_digest(input: &Map<String, Value>) -> String {
    fn sort(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.sort_keys();
                map.values_mut().for_each(sort);
            }
            Value::Array(items) => items.iter_mut().for_each(sort),
            _ => {}
        }
    }
    let mut value = Value::Object(input.clone());
    sort(&mut value);
    let text = serde_json::to_vec(&value).expect("a JSON value serializes");
    lower_hex(&Sha256::digest(&text))
}

/// Runs `change` on a session's call links in the store ([`ValueKey::links`]), as one atomic
/// update: concurrent hooks of the session (parallel tool calls) never lose a link. `change` may
/// run more than once ([`Store::update_value`]); only its last run counts, and its result is
/// returned. Links that are not exactly what this writes are refused, never read as none.
pub fn update_links<R>(
    store: &mut dyn Store,
    session_id: &str,
    mut change: impl FnMut(&mut ToolUses) -> R,
) -> Result<R, StoreError> {
    let mut result = None;
    store.update_value(&ValueKey::links(session_id), &mut |stored| {
        let mut uses = match stored {
            Some(text) => ToolUses::from_text(text)?,
            None => ToolUses::new(),
        };
        let before = uses.clone();
        result = Some(change(&mut uses));
        Ok(if uses == before {
            ValueChange::Keep
        } else if uses.is_empty() {
            ValueChange::Remove
        } else {
            ValueChange::Set(serde_json::to_string(&uses).expect("the calls serialize"))
        })
    })?;
    result.ok_or_else(|| StoreError("the store did not run the update".to_owned()))
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

/// What one hook run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// A `PreToolUse`, decided.
    Decided(Judgement),
    /// A `PostToolUse`, recorded.
    Ran(Ran),
    /// A `UserPromptSubmit`, taken as the user's instruction.
    Prompt,
}

/// How a `PostToolUse` was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    /// A call sc-hook allowed: its `exec` event.
    Allowed,
    /// A call sc-hook held, so its user said yes: an `approve` and an `exec` event.
    Approved,
    /// A call sc-hook denied, which ran all the same: its `exec` event and a warning.
    Denied,
    /// A call sc-hook never saw: an `exec` event for an unknown call.
    Unknown,
    /// A `tool_use_id` whose run was already recorded: nothing written.
    AlreadyRecorded,
}

/// Handles one hook input, by its event: [`decide`] a `PreToolUse`, [`record_run`] a
/// `PostToolUse`. Any error means no answer was written.
pub fn run(
    input: &[u8],
    options: &HookOptions,
    audit_log: &mut AuditLog,
    out: &mut dyn Write,
) -> Result<Handled> {
    let hook = HookInput::parse(input)?;
    match hook.event {
        HookEvent::PreToolUse => {
            decide(input, &hook, options, audit_log, out).map(Handled::Decided)
        }
        HookEvent::PostToolUse => record_run(&hook, options, audit_log, out).map(Handled::Ran),
        HookEvent::UserPromptSubmit => {
            provenance_hook::take_prompt(&hook, options, audit_log).map(|()| Handled::Prompt)
        }
    }
}

fn write_answer(out: &mut dyn Write, line: &str) -> Result<()> {
    out.write_all(line.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .context("cannot write the hook's answer")
}

/// Decides a `PreToolUse`: decides on the state in one atomic update, audits the decision,
/// remembers the call by its `tool_use_id` in the session's links, and only then writes the
/// answer (nothing for allow).
fn decide(
    input: &[u8],
    hook: &HookInput,
    options: &HookOptions,
    audit_log: &mut AuditLog,
    out: &mut dyn Write,
) -> Result<Judgement> {
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
            let judgement =
                crate::rules::decision::decide(&call, &id, &options.policy, state, Some(now));
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
    if let Some(tool_use_id) = &hook.tool_use_id {
        let linked = ToolUse {
            tool_use_id: tool_use_id.clone(),
            id,
            agent: call.agent.clone(),
            tool: call.tool.clone(),
            decision: Some(judgement.decision),
            input: Some(input_digest(&hook.tool_input)),
            ran: false,
        };
        update_links(shared.store(), &hook.session_id, |uses| {
            uses.decided(linked.clone())
        })
        .context("state store unavailable")?;
    }
    if let Some(line) = hook_output(&judgement) {
        write_answer(out, &line)?;
    }
    Ok(judgement)
}

/// Whether a tool's response says it failed: a JSON object with `isError: true`, as an MCP
/// tool's result says it (and as sc-mcp reads it). Nothing else is read into it.
fn reported_error(response: Option<&Value>) -> bool {
    matches!(response, Some(Value::Object(response)) if response.get("isError") == Some(&Value::Bool(true)))
}

/// Records a `PostToolUse`: the call ran. Links the call by its `tool_use_id` and marks it as
/// run in one atomic update of the session's links ([`plan_run`]), so two hooks of the same
/// call never both record it; then audits what it found (see the module's doc), and only then
/// writes the warning for a denied call that ran. A run already recorded writes nothing. If the
/// audit log cannot be written, the run stays marked (exit 2 says so): it is never recorded
/// twice.
fn record_run(
    hook: &HookInput,
    options: &HookOptions,
    audit_log: &mut AuditLog,
    out: &mut dyn Write,
) -> Result<Ran> {
    let mut store = options
        .state
        .open(store::OpenOptions {
            create: true,
            fsync: options.fsync,
        })
        .context("state store unavailable")?;
    let (ran, mut events, warning, judged) =
        update_links(store.as_mut(), &hook.session_id, |uses| {
            plan_run(hook, options, uses)
        })
        .context("state store unavailable")?;
    drop(store);
    if ran == Ran::AlreadyRecorded {
        return Ok(ran);
    }
    // Value provenance: an untrusted-output tool's response, into the state the decisions read.
    events.extend(provenance_hook::take_result(hook, options, judged)?);
    audit_log.append(&events)?;
    if let Some(line) = warning {
        write_answer(out, &line)?;
    }
    Ok(ran)
}

/// What a `PostToolUse` records, worked out on the session's links (`uses`, the call marked as
/// run there): how it ran, its audit events, the warning for a denied call that ran, and the
/// gate's id of the call whose output value provenance awaits. Writes
/// nothing itself: it may run more than once ([`update_links`]).
fn plan_run(
    hook: &HookInput,
    options: &HookOptions,
    uses: &mut ToolUses,
) -> (Ran, Vec<u8>, Option<String>, Option<String>) {
    let known = hook
        .tool_use_id
        .as_deref()
        .and_then(|tool_use_id| uses.get(tool_use_id))
        .cloned();
    // The gate's id of the call, to await its output under (value provenance).
    let judged = known
        .as_ref()
        .filter(|call| call.tool == hook.tool_name && !call.ran)
        .map(|call| call.id.clone());
    let status = if reported_error(hook.tool_response.as_ref()) {
        Status::Failed
    } else {
        Status::Executed
    };
    let tool = quoted(&hook.tool_name);
    let ran_it = match status {
        Status::Failed => format!("ran {tool} in Claude Code and it reported an error"),
        _ => format!("ran {tool} in Claude Code"),
    };
    // The tool's response is not copied into the log: it may be a whole file.
    let exec = |id: &str, agent: &str, decision: Option<Decision>, reason: String| {
        let outcome = Outcome {
            status,
            result: None,
            reason,
        };
        let mut event = audit::event(Stage::Exec, id)
            .str_field("agent", agent)
            .str_field("tool", &hook.tool_name);
        if let Some(decision) = decision {
            event = event.str_field("decision", decision.as_str());
        }
        event.field("outcome", &outcome)
    };
    let with_tool_use_id = |event: crate::json_write::JsonLine| match &hook.tool_use_id {
        Some(tool_use_id) => event.str_field("toolUseId", tool_use_id),
        None => event,
    };
    let (ran, events, warning) = match known {
        Some(call) if call.ran => return (Ran::AlreadyRecorded, Vec::new(), None, None),
        Some(ToolUse {
            tool_use_id,
            id,
            agent,
            tool: judged_tool,
            decision: Some(decision),
            input,
            ..
        }) if judged_tool == hook.tool_name
            && (decision != Decision::Hold
                || input.as_deref() == Some(input_digest(&hook.tool_input).as_str())) =>
        {
            let changed = if input.as_deref() == Some(input_digest(&hook.tool_input).as_str()) {
                String::new()
            } else {
                "; its input is not the one sc-hook judged (another hook or Claude Code changed it after the gate decided)".to_owned()
            };
            let mut events = Vec::new();
            let (ran, reason, warning) = match decision {
                Decision::Allow => (
                    Ran::Allowed,
                    format!("{ran_it} (allowed by sc-hook){changed}"),
                    None,
                ),
                Decision::Hold => {
                    let mode = hook
                        .permission_mode
                        .as_deref()
                        .map(|mode| format!(" (permission mode {})", quoted(mode)))
                        .unwrap_or_default();
                    // The approval every way of asking writes ("approved in Claude Code"), with
                    // no answer: sc-hook never sees which of Claude Code's choices was taken.
                    let mut approval = approval_for(
                        Reply::Decision {
                            approve: true,
                            digest: None,
                        },
                        AnsweredBy::ClaudeCode,
                    );
                    approval.answer = None;
                    approval.reason.push_str(&format!(
                        ": sc-hook asked for its user's yes, and Claude Code ran the call{mode}{changed}"
                    ));
                    let approve = audit::event(Stage::Approve, &id)
                        .str_field("agent", &agent)
                        .str_field("tool", &hook.tool_name)
                        .field("approval", &approval);
                    events.extend(with_tool_use_id(approve).finish());
                    (
                        Ran::Approved,
                        format!("{ran_it} (approved in Claude Code){changed}"),
                        None,
                    )
                }
                Decision::Deny => {
                    let reason = format!(
                        "{ran_it} although sc-hook denied it: Claude Code must never run a denied call, so look at its settings and its other hooks{changed}"
                    );
                    let warning = json!({
                        "systemMessage": format!(
                            "Skeleton Crew: Claude Code ran {tool} although sc-hook denied it (call {}); see the audit log",
                            quoted(&id)
                        )
                    })
                    .to_string();
                    (Ran::Denied, reason, Some(warning))
                }
            };
            let event = exec(&id, &agent, Some(decision), reason);
            events.extend(with_tool_use_id(event).finish());
            uses.ran(&tool_use_id);
            (ran, events, warning)
        }
        other => {
            let why = match (&hook.tool_use_id, other) {
                (None, _) => "the PostToolUse has no tool_use_id to link it by".to_owned(),
                (Some(tool_use_id), Some(decided)) if decided.tool != hook.tool_name => format!(
                    "its tool_use_id {} was decided for {}, not for this tool",
                    quoted(tool_use_id),
                    quoted(&decided.tool)
                ),
                // A held call is taken as approved only when what ran is what was held.
                (Some(tool_use_id), Some(_)) => format!(
                    "its input is not the one sc-hook held under tool_use_id {}, so no approval is taken from it and the held call stays unanswered",
                    quoted(tool_use_id)
                ),
                (Some(tool_use_id), None) => format!(
                    "its tool_use_id {} is not in this session's state (no PreToolUse of sc-hook saw it, or it was forgotten: sc-hook keeps the last {MAX_AWAITING} calls awaiting their run)",
                    quoted(tool_use_id)
                ),
            };
            let id = IdMinter::new().mint();
            let agent = hook.agent(&options.agent);
            let reason = format!("{ran_it}, a call the gate never judged: {why}");
            let event =
                exec(&id, agent, None, reason).field("call", &hook.call_value(&options.agent));
            let events = with_tool_use_id(event).finish();
            if let Some(tool_use_id) = &hook.tool_use_id {
                if uses.get(tool_use_id).is_none() {
                    uses.remember(ToolUse {
                        tool_use_id: tool_use_id.clone(),
                        id,
                        agent: agent.to_owned(),
                        tool: hook.tool_name.clone(),
                        decision: None,
                        input: None,
                        ran: true,
                    });
                }
            }
            (Ran::Unknown, events, None)
        }
    };
    (ran, events, warning, judged)
}

/// Value provenance in the hook: the user's prompt as trusted text, and the response of an
/// untrusted-output tool as untrusted values, both kept in the state the decisions read.
mod provenance_hook {
    use super::*;
    use crate::rules::provenance::{ResultRecord, TaskRecord, ValueRecord};

    fn shared(hook: &HookInput, options: &HookOptions) -> Result<Shared> {
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
        Ok(Shared::new(store, key))
    }

    /// Takes a record into the state and returns its audit event (`kind`, SHA-256, length and
    /// the number of values taken, never the text).
    fn take(hook: &HookInput, options: &HookOptions, record: &ValueRecord) -> Result<Vec<u8>> {
        let mut shared = shared(hook, options)?;
        let id = IdMinter::new().mint();
        let mut values = None;
        shared
            .transact(&options.policy, &options.timing, &mut |state, _| {
                values = record.apply(state, &id, &options.policy);
            })
            .context("state store unavailable")?;
        let mut event = audit::event(Stage::Gate, &id)
            .raw_members(&record.event_members(values))
            .field("stateStore", shared.describe_store());
        if let Some(crew) = &options.crew {
            event = event.field("crew", crew);
        }
        Ok(event.finish())
    }

    /// A `UserPromptSubmit`: the prompt is the user's instruction to the main thread's agent.
    pub(super) fn take_prompt(
        hook: &HookInput,
        options: &HookOptions,
        audit_log: &mut AuditLog,
    ) -> Result<()> {
        let record = ValueRecord::Task(TaskRecord {
            agent: hook.agent(&options.agent).to_owned(),
            instruction: hook.prompt.clone().unwrap_or_default(),
        });
        let event = take(hook, options, &record)?;
        audit_log.append(&event)
    }

    /// A `PostToolUse` of an untrusted-output tool, under a policy with `provenance`: its
    /// response's values become untrusted, awaited under the gate's id of the call. Nothing
    /// otherwise.
    pub(super) fn take_result(
        hook: &HookInput,
        options: &HookOptions,
        judged: Option<String>,
    ) -> Result<Vec<u8>> {
        let policy = &options.policy;
        let Some(response) = &hook.tool_response else {
            return Ok(Vec::new());
        };
        if policy.provenance().is_none() || !policy.has_untrusted_output(&hook.tool_name) {
            return Ok(Vec::new());
        }
        let record = ValueRecord::Result(ResultRecord {
            agent: hook.agent(&options.agent).to_owned(),
            tool: hook.tool_name.clone(),
            call: judged,
            output: response.clone(),
        });
        take(hook, options, &record)
    }
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
                r#"{"session_id":"s","hook_event_name":"Stop","tool_name":"Bash","tool_input":{}}"#,
                "PreToolUse and PostToolUse hooks only, not \"Stop\"",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{}}"#,
                "not \"PostToolUseFailure\"",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":""}"#,
                "`tool_use_id` is empty",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":7}"#,
                "must be a string",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash"}"#,
                "no `tool_input`",
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
    fn reads_a_post_tool_use_input_with_its_response() {
        let hook = HookInput::parse(
            br#"{"session_id":"s-1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a\n","isError":false},"tool_use_id":"toolu_1"}"#,
        )
        .unwrap();
        assert_eq!(hook.event, HookEvent::PostToolUse);
        assert_eq!(hook.tool_response.as_ref().unwrap()["stdout"], "a\n");
        assert_eq!(hook.tool_use_id.as_deref(), Some("toolu_1"));
        assert!(!reported_error(hook.tool_response.as_ref()));
        // Without a tool_use_id it still reads: the call cannot be linked, and is recorded so.
        let hook = HookInput::parse(
            br#"{"session_id":"s-1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}"#,
        )
        .unwrap();
        assert_eq!((hook.tool_use_id, hook.tool_response), (None, None));
        // A PreToolUse keeps no response, whatever it says.
        let hook =
            HookInput::parse(input(r#","tool_response":{"isError":true}"#).as_bytes()).unwrap();
        assert_eq!(hook.event, HookEvent::PreToolUse);
        assert_eq!(hook.tool_response, None);
    }

    #[test]
    fn only_an_object_with_is_error_true_is_a_failure() {
        for (response, failed) in [
            (json!({"isError": true, "content": []}), true),
            (json!({"isError": false}), false),
            (json!({"isError": "true"}), false),
            (
                json!({"stdout": "", "stderr": "error: isError true", "interrupted": false}),
                false,
            ),
            (json!([{"isError": true}]), false),
            (json!("isError"), false),
            (Value::Null, false),
        ] {
            assert_eq!(reported_error(Some(&response)), failed, "{response}");
        }
        assert!(!reported_error(None));
    }

    #[test]
    fn the_input_digest_ignores_key_order_and_nothing_else() {
        let object = |text: &str| match strict_json::parse(text).unwrap() {
            Value::Object(map) => map,
            _ => unreachable!(),
        };
        let digest = input_digest(&object(r#"{"a":1,"b":{"c":[1,{"d":2,"e":3}]}}"#));
        assert_eq!(digest.len(), 64);
        assert_eq!(
            digest,
            input_digest(&object(r#"{"b":{"c":[1,{"e":3,"d":2}]},"a":1}"#))
        );
        for other in [
            r#"{"a":1,"b":{"c":[{"d":2,"e":3},1]}}"#,
            r#"{"a":1.0,"b":{"c":[1,{"d":2,"e":3}]}}"#,
            r#"{"a":"1","b":{"c":[1,{"d":2,"e":3}]}}"#,
            r#"{"a":1,"b":{"c":[1,{"d":2,"e":3}]},"f":null}"#,
        ] {
            assert_ne!(digest, input_digest(&object(other)), "{other}");
        }
    }

    fn tool_use(tool_use_id: &str, decision: Decision) -> ToolUse {
        ToolUse {
            tool_use_id: tool_use_id.to_owned(),
            id: format!("id-{tool_use_id}-{decision}"),
            agent: "claude-code".to_owned(),
            tool: "Bash".to_owned(),
            decision: Some(decision),
            input: Some("0".repeat(64)),
            ran: false,
        }
    }

    #[test]
    fn a_call_decided_twice_keeps_the_stricter_decision() {
        let mut uses = ToolUses::new();
        uses.decided(tool_use("t1", Decision::Hold));
        uses.decided(tool_use("t1", Decision::Allow));
        assert_eq!(uses.get("t1").unwrap().id, "id-t1-hold");
        uses.decided(tool_use("t1", Decision::Hold));
        assert_eq!(
            uses.get("t1").unwrap().id,
            "id-t1-hold",
            "the first on a tie"
        );
        uses.decided(tool_use("t1", Decision::Deny));
        assert_eq!(uses.get("t1").unwrap().id, "id-t1-deny");
        assert_eq!(uses.len(), 1);
        // Once it ran, it is what it was.
        uses.get_mut("t1").unwrap().ran = true;
        uses.decided(tool_use("t1", Decision::Deny));
        let mut again = tool_use("t1", Decision::Deny);
        again.id = "other".into();
        uses.decided(again);
        assert_eq!(uses.get("t1").unwrap().id, "id-t1-deny");
        assert!(uses.get("t1").unwrap().ran);
    }

    #[test]
    fn at_most_1024_calls_awaiting_and_64_that_ran_are_kept() {
        let mut uses = ToolUses::new();
        for n in 0..MAX_AWAITING + 3 {
            uses.decided(tool_use(&format!("t{n}"), Decision::Allow));
        }
        assert_eq!(uses.len(), MAX_AWAITING);
        for forgotten in ["t0", "t1", "t2"] {
            assert!(uses.get(forgotten).is_none(), "{forgotten}");
        }
        assert!(uses.get("t3").is_some());
        // Calls that ran are forgotten past the last 64, oldest first, and make room.
        for n in 3..3 + MAX_RAN + 10 {
            assert!(uses.ran(&format!("t{n}")));
        }
        assert_eq!(uses.len(), MAX_AWAITING - 10);
        assert!(uses.get("t12").is_none() && !uses.ran("t12"));
        assert!(uses.get("t13").unwrap().ran);
        assert!(!uses.get(&format!("t{}", 3 + MAX_RAN + 10)).unwrap().ran);
        // An awaiting call is never forgotten for one that ran, nor the other way round.
        for n in 0..MAX_RAN + 10 + 20 {
            uses.decided(tool_use(&format!("new{n}"), Decision::Hold));
        }
        assert_eq!(uses.len(), MAX_AWAITING + MAX_RAN);
        assert!(uses.get("t13").is_some());
        let first_awaiting = 3 + MAX_RAN + 10;
        for forgotten in first_awaiting..first_awaiting + 20 {
            assert!(uses.get(&format!("t{forgotten}")).is_none(), "t{forgotten}");
        }
        assert!(uses.get(&format!("t{}", first_awaiting + 20)).is_some());
        // Links with as many read back; more are not what sc-hook writes.
        let calls = serde_json::to_value(&uses).unwrap();
        assert_eq!(ToolUses::from_value(calls.clone()).unwrap(), uses);
        let mut one_more = calls.clone();
        one_more
            .as_array_mut()
            .unwrap()
            .push(serde_json::to_value(tool_use("one-more", Decision::Allow)).unwrap());
        let err = ToolUses::from_value(one_more).unwrap_err();
        assert!(err.contains("more than the 1088 sc-hook keeps"), "{err}");
        let mut one_more_awaiting = calls;
        assert_eq!(one_more_awaiting[0]["ran"], true);
        one_more_awaiting[0]["ran"] = json!(false);
        let err = ToolUses::from_value(one_more_awaiting).unwrap_err();
        assert!(err.contains("63 calls that ran and 1025 awaiting"), "{err}");
    }

    fn sqlite(path: &std::path::Path) -> Box<dyn Store> {
        StateUrl::Sqlite(path.to_owned())
            .open(store::OpenOptions {
                create: true,
                fsync: false,
            })
            .unwrap()
    }

    /// Writes a session's links as someone with the store file could.
    fn store_links(path: &std::path::Path, session: &str, text: &str) {
        rusqlite::Connection::open(path)
            .unwrap()
            .execute(
                "INSERT INTO sc_values (key, value, updated) VALUES (?1, ?2, 'now')
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [ValueKey::links(session).path().as_str(), text],
            )
            .unwrap();
    }

    #[test]
    fn the_calls_are_kept_in_the_store_and_read_back_strictly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.sqlite");
        {
            let mut store = sqlite(&path);
            update_links(store.as_mut(), "s1", |uses| {
                uses.decided(tool_use("t1", Decision::Hold));
                let mut ran = tool_use("t2", Decision::Allow);
                (ran.decision, ran.input, ran.ran) = (None, None, true);
                uses.decided(ran);
            })
            .unwrap();
        }
        let written: String = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT value FROM sc_values WHERE key = 'session/s1/links'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        let value: Value = serde_json::from_str(&written).unwrap();
        assert_eq!(value[0]["toolUseId"], "t1");
        assert_eq!(value[0]["decision"], "hold");
        assert_eq!(value[1].get("decision"), None);
        // Another process (another connection) reads them back; another session has none.
        let mut store = sqlite(&path);
        let uses = update_links(store.as_mut(), "s1", |uses| uses.clone()).unwrap();
        assert_eq!(uses.len(), 2);
        assert_eq!(uses.get("t1"), Some(&tool_use("t1", Decision::Hold)));
        assert!(update_links(store.as_mut(), "s2", |uses| uses.is_empty()).unwrap());
        // Anything else is an error, never a session that forgot its calls, and nothing is
        // written over it.
        let entry = r#"{"toolUseId":"t1","id":"1","agent":"a","tool":"Bash","decision":"hold","input":"0000000000000000000000000000000000000000000000000000000000000000","ran":false}"#;
        for (text, expected) in [
            (format!("[{entry}]"), None),
            (
                "{}".to_owned(),
                Some("`toolUses` must be an array, not an object"),
            ),
            (
                "null".to_owned(),
                Some("`toolUses` must be an array, not null"),
            ),
            (String::new(), Some("not valid JSON")),
            (
                "[[]]".to_owned(),
                Some("`toolUses[0]` must be an object, not an array"),
            ),
            (
                format!("[{entry},{entry}]"),
                Some("`toolUses[1]` repeats the toolUseId \"t1\""),
            ),
            (
                format!(
                    "[{}]",
                    entry.replace(r#""ran":false"#, r#""ran":false,"x":1"#)
                ),
                Some("unknown field `x`"),
            ),
            (
                format!("[{}]", entry.replace(r#","ran":false"#, "")),
                Some("missing field `ran`"),
            ),
            (
                format!(
                    "[{}]",
                    entry.replace(r#""decision":"hold""#, r#""decision":null"#)
                ),
                Some("has `decision` null"),
            ),
            (
                format!("[{}]", entry.replace(r#""decision":"hold","#, "")),
                Some("has no `decision` and has not run"),
            ),
            (
                format!(
                    "[{}]",
                    entry.replace(r#""decision":"hold""#, r#""decision":"maybe""#)
                ),
                Some("unknown variant"),
            ),
            (
                format!("[{}]", entry.replace(r#""id":"1""#, r#""id":"""#)),
                Some("has an empty `id`"),
            ),
            (
                format!("[{}]", entry.replace("0000000000", "000000000X")),
                Some("not a SHA-256 in hex"),
            ),
            (
                format!("[{}]", entry.replace("0000000000", "0000")),
                Some("not a SHA-256 in hex"),
            ),
            (
                format!("[{}]", entry.replace(r#""id":"1""#, r#""id":"1","id":"2""#)),
                Some("duplicate key"),
            ),
            (format!("[{entry}]") + "[]", Some("trailing characters")),
        ] {
            store_links(&path, "s1", &text);
            let result = update_links(store.as_mut(), "s1", |uses| {
                uses.decided(tool_use("t9", Decision::Allow));
                uses.len()
            });
            match (result, expected) {
                (Ok(len), None) => assert_eq!(len, 2),
                (Err(err), Some(expected)) => {
                    let err = err.to_string();
                    assert!(
                        err.contains(
                            "the call links of session s1 are not what this program writes"
                        ) && err.contains(expected),
                        "{text}: {err}"
                    );
                    let kept: String = rusqlite::Connection::open(&path)
                        .unwrap()
                        .query_row(
                            "SELECT value FROM sc_values WHERE key = 'session/s1/links'",
                            [],
                            |row| row.get(0),
                        )
                        .unwrap();
                    assert_eq!(kept, text, "a refused value is left as it was");
                }
                (Ok(_), Some(expected)) => panic!("{text} read, expected {expected:?}"),
                (Err(err), None) => panic!("{text}: {err}"),
            }
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
    fn input_is_bounded_and_not_empty() {
        assert!(read_input(&b" \n"[..]).is_err());
        assert!(read_input(&b"{}"[..]).is_ok());
    }
}
