//! Where each agent reads its hooks: the project's file (`--project DIR`) or the user's
//! (`--user`), as its documentation names them.

use std::path::{Path, PathBuf};

use super::error::InstallError;
use crate::stage::hook::contract::Agent;

/// Which of an agent's hook files: a project's, or the user's (in `home`).
#[derive(Debug, Clone)]
pub enum Scope {
    Project(PathBuf),
    User(PathBuf),
}

/// The file `agent` reads its hooks from in `scope`:
/// - Claude Code: `.claude/settings.json` (project), `~/.claude/settings.json` (user);
/// - Codex CLI: `.codex/config.toml`, `$CODEX_HOME/config.toml` (else `~/.codex/config.toml`);
/// - Gemini CLI: `.gemini/settings.json`, `~/.gemini/settings.json`;
/// - GitHub Copilot CLI: `.github/hooks/skeleton-crew.json` (its documentation names the
///   repository's `.github/hooks/*.json` only, so there is no user file);
/// - Cursor: `.cursor/hooks.json`, `~/.cursor/hooks.json`.
pub fn config_file(agent: Agent, scope: &Scope) -> Result<PathBuf, InstallError> {
    let (base, user) = match scope {
        Scope::Project(dir) => (dir.as_path(), false),
        Scope::User(home) => (home.as_path(), true),
    };
    let join = |folder: &str, file: &str| base.join(folder).join(file);
    Ok(match agent {
        Agent::Claude => join(".claude", "settings.json"),
        Agent::Codex if user => match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
            Some(home) => Path::new(&home).join("config.toml"),
            None => join(".codex", "config.toml"),
        },
        Agent::Codex => join(".codex", "config.toml"),
        Agent::Gemini => join(".gemini", "settings.json"),
        Agent::Copilot if user => {
            return Err(InstallError::NoUserFile {
                agent: agent.title(),
            })
        }
        Agent::Copilot => base.join(".github/hooks/skeleton-crew.json"),
        Agent::Cursor => join(".cursor", "hooks.json"),
    })
}
