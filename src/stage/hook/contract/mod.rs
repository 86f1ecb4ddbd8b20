//! One hook binary, every agent's contract: Claude Code (the hook's own shape), Codex CLI,
//! Gemini CLI, GitHub Copilot CLI and Cursor. Each contract reads its agent's input onto the
//! hook's own (`HookInput`) and the one vocabulary ([`ToolKind`]: shell command, file read,
//! file write or edit, fetch, MCP tool, other), and says the decision in its agent's words
//! ([`answer`]). Which contract reads an input: `--for NAME`, else its shape ([`detect`]).

mod agent;
pub mod answer;
mod claude;
mod codex;
mod copilot;
mod cursor;
pub mod detect;
mod fields;
mod gemini;
mod patch;
mod quote;

pub use self::agent::{Abilities, Agent, Event, ToolKind, Translated, UnknownAgent};
pub use self::fields::ContractError;
pub use self::quote::shell_word;
