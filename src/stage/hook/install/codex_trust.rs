//! Whether Codex CLI will load a project's hooks: Codex reads a project's `.codex/config.toml`
//! only in a project the user's configuration trusts (`[projects."DIR"] trust_level =
//! "trusted"` in `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`), and runs a hook only
//! once a person has reviewed and trusted it (`/hooks`, kept by the hook's hash, which only
//! Codex computes). The first is checked here; the second is said.

use std::path::Path;

use toml_edit::DocumentMut;

use super::check::Check;
use super::file::read;
use super::target::{config_file, Scope};
use crate::stage::hook::contract::Agent;

/// The check of `project`'s trust in the user's Codex configuration (in `home`).
pub(super) fn project_trusted(project: &Path, home: Option<&Path>) -> Check {
    let project = std::path::absolute(project).unwrap_or_else(|_| project.to_owned());
    let dir = project.display();
    let Some(home) = home else {
        return Check::fail(
            format!("Codex's trust of {dir}: no home folder to find Codex's configuration in"),
            "set HOME (or CODEX_HOME)",
        );
    };
    let fix = format!(
        "run `codex exec --trust` once in {dir}, or add [projects.\"{dir}\"] trust_level = \"trusted\" to Codex's config.toml; then trust the hook with /hooks in Codex"
    );
    let file = match config_file(Agent::Codex, &Scope::User(home.to_owned())) {
        Ok(file) => file,
        Err(err) => return Check::fail(format!("Codex's trust of {dir}: {err}"), fix),
    };
    let text = match read(&file) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return Check::fail(
                format!("Codex's trust of {dir}: {} does not exist, so Codex loads none of the project's hooks", file.display()),
                fix,
            )
        }
        Err(err) => return Check::fail(format!("Codex's trust of {dir}: {err}"), fix),
    };
    let level = text.parse::<DocumentMut>().ok().and_then(|doc| {
        doc.get("projects")?
            .get(project.to_string_lossy().as_ref())?
            .get("trust_level")?
            .as_str()
            .map(str::to_owned)
    });
    match level.as_deref() {
        Some("trusted") => Check::pass(format!(
            "Codex trusts {dir} ({}), so it loads the project's hooks; a hook runs once trusted with /hooks in Codex",
            file.display()
        )),
        other => Check::fail(
            format!(
                "Codex does not trust {dir} ({}: trust_level {}), so it loads none of the project's hooks",
                file.display(),
                other.map_or("unset".to_owned(), |level| format!("{level:?}"))
            ),
            fix,
        ),
    }
}
