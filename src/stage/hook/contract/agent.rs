//! The five agents sc-hook speaks for, the one vocabulary their tools map onto, and an agent's
//! input once translated into the hook's own (Claude Code's) shape.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde_json::{Map, Value};

/// A coding agent whose hook contract sc-hook speaks (`--for NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    Claude,
    Codex,
    Gemini,
    Copilot,
    Cursor,
}

impl Agent {
    /// Every agent, in the order `--for` lists them.
    pub const ALL: [Agent; 5] = [
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Copilot,
        Agent::Cursor,
    ];

    /// The name `--for` takes.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Copilot => "copilot",
            Agent::Cursor => "cursor",
        }
    }

    /// The agent kind the audit log names (`agentKind`), and `--agent`'s default.
    pub fn kind(self) -> &'static str {
        match self {
            Agent::Claude => "claude-code",
            other => other.name(),
        }
    }

    /// The agent's name for people.
    pub fn title(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex CLI",
            Agent::Gemini => "Gemini CLI",
            Agent::Copilot => "GitHub Copilot CLI",
            Agent::Cursor => "Cursor",
        }
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--for` names no agent sc-hook speaks for.
#[derive(Debug, thiserror::Error)]
#[error("--for {0:?} names no agent sc-hook speaks for (claude, codex, gemini, copilot, cursor)")]
pub struct UnknownAgent(pub String);

impl FromStr for Agent {
    type Err = UnknownAgent;

    fn from_str(text: &str) -> Result<Agent, UnknownAgent> {
        match text {
            "claude" | "claude-code" => Ok(Agent::Claude),
            "codex" => Ok(Agent::Codex),
            "gemini" => Ok(Agent::Gemini),
            "copilot" => Ok(Agent::Copilot),
            "cursor" => Ok(Agent::Cursor),
            other => Err(UnknownAgent(other.to_owned())),
        }
    }
}

/// The one vocabulary every agent's tools map onto. Its tool names are Claude Code's (`Bash`,
/// `Read`, `Write`, `Edit`, `WebFetch`, `WebSearch`, `mcp__SERVER__TOOL`), so the pack's rules,
/// taint, grants and the sandbox rewrite work the same at every door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Shell,
    FileRead,
    FileWrite,
    Fetch,
    Mcp,
    Other,
}

impl ToolKind {
    /// The kind of a tool named in the vocabulary.
    pub fn of(tool: &str) -> ToolKind {
        match tool {
            "Bash" => ToolKind::Shell,
            "Read" => ToolKind::FileRead,
            "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => ToolKind::FileWrite,
            "WebFetch" | "WebSearch" => ToolKind::Fetch,
            name if name.starts_with("mcp__") => ToolKind::Mcp,
            _ => ToolKind::Other,
        }
    }
}

/// Which hook event an input is, in the vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Before a tool call: decide it.
    Pre,
    /// After a tool call: record it.
    Post,
    /// The user's prompt.
    Prompt,
}

impl Event {
    /// The event's name in the hook's own shape.
    pub(crate) fn claude_name(self) -> &'static str {
        match self {
            Event::Pre => "PreToolUse",
            Event::Post => "PostToolUse",
            Event::Prompt => "UserPromptSubmit",
        }
    }
}

/// How an agent can be answered for one input: what its contract lets a hook say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abilities {
    /// It can ask its user.
    pub ask: bool,
    /// It can run a rewritten tool input (the sandbox rewrite).
    pub rewrite: bool,
}

/// An agent's hook input, translated into the hook's own shape.
#[derive(Debug, Clone)]
pub struct Translated {
    pub agent: Agent,
    pub event: Event,
    /// The input as the hook reads it (Claude Code's shape, the vocabulary's tool names).
    pub input: Vec<u8>,
    /// The tool's name as the agent called it, where it differs from the vocabulary's.
    pub native_tool: Option<String>,
    /// The agent's event name, for the answer (Cursor answers each event its own way).
    pub native_event: String,
    /// What the answer may say.
    pub abilities: Abilities,
    /// The key of the agent's own tool input that holds the shell command (for a rewrite).
    pub command_key: Option<&'static str>,
    /// The project the agent runs in, where its input or environment names one.
    pub project: Option<PathBuf>,
    /// The session of the agent that started this one (a subagent with a session of its own:
    /// Copilot CLI's `parentAgentId`). Its state is the parent's, and so on up to the session
    /// that has no parent ([`crate::stage::hook::run_translated`]).
    pub parent_session: Option<String>,
}

/// Builds the hook's input in its own shape.
pub(super) struct Shape {
    pub event: Event,
    pub session_id: String,
    pub tool_name: String,
    pub tool_input: Map<String, Value>,
    pub tool_response: Option<Value>,
    pub tool_use_id: Option<String>,
    pub cwd: Option<String>,
    pub agent_type: Option<String>,
    pub prompt: Option<String>,
}

impl Shape {
    /// A tool call's input in the hook's shape.
    pub fn call(
        event: Event,
        session_id: String,
        tool: String,
        input: Map<String, Value>,
    ) -> Shape {
        Shape {
            event,
            session_id,
            tool_name: tool,
            tool_input: input,
            tool_response: None,
            tool_use_id: None,
            cwd: None,
            agent_type: None,
            prompt: None,
        }
    }

    /// The JSON text the hook reads.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut object = Map::new();
        object.insert("session_id".into(), Value::String(self.session_id.clone()));
        object.insert(
            "hook_event_name".into(),
            Value::String(self.event.claude_name().into()),
        );
        if let Some(prompt) = &self.prompt {
            object.insert("prompt".into(), Value::String(prompt.clone()));
        } else {
            object.insert("tool_name".into(), Value::String(self.tool_name.clone()));
            object.insert("tool_input".into(), Value::Object(self.tool_input.clone()));
        }
        for (key, value) in [
            ("tool_use_id", &self.tool_use_id),
            ("cwd", &self.cwd),
            ("agent_type", &self.agent_type),
        ] {
            if let Some(value) = value {
                object.insert(key.into(), Value::String(value.clone()));
            }
        }
        if let Some(response) = &self.tool_response {
            object.insert("tool_response".into(), response.clone());
        }
        Value::Object(object).to_string().into_bytes()
    }
}
