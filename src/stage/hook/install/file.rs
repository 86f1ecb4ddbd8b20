//! Install and uninstall on one agent's file: read it (a missing file is empty), merge or
//! remove sc-hook's entries in its format, and write it only when a byte changes, with a backup
//! of the file as it was, made once.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::entries::entries;
pub use super::error::InstallError;
use super::target::{config_file, Scope};
use super::{json, toml};
use crate::stage::hook::contract::{shell_word, Agent};

/// What `sc-hook install` is asked to write.
#[derive(Debug, Clone)]
pub struct InstallRequest {
    pub agent: Agent,
    pub scope: Scope,
    /// The sc-hook binary the hook runs (the one that ran `install`), absolute.
    pub exe: PathBuf,
    pub policy: Option<PathBuf>,
    pub audit: Option<PathBuf>,
    /// Replace a different sc-hook entry for this agent.
    pub force: bool,
}

/// What install or uninstall did to the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The file was written; `backup` is the copy of what it was, made by this run.
    Written {
        file: PathBuf,
        backup: Option<PathBuf>,
    },
    /// Nothing to change: not a byte written.
    Unchanged { file: PathBuf },
    /// Uninstall removed the file, which held nothing but sc-hook's entries.
    Removed { file: PathBuf },
}

/// The command line the hook runs: this sc-hook, for this agent, with the policy and audit log
/// given (absolute).
pub(super) fn command_line(request: &InstallRequest) -> String {
    let mut words = vec![
        shell_word(&request.exe.to_string_lossy()),
        "--for".to_owned(),
        request.agent.name().to_owned(),
    ];
    for (flag, path) in [("--policy", &request.policy), ("--audit", &request.audit)] {
        if let Some(path) = path {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            words.push(flag.to_owned());
            words.push(shell_word(&path.to_string_lossy()));
        }
    }
    words.join(" ")
}

/// Writes sc-hook's entries into the agent's file, merged with what is there.
pub fn install(request: &InstallRequest) -> Result<Outcome, InstallError> {
    let file = config_file(request.agent, &request.scope)?;
    let before = read(&file)?;
    let command = command_line(request);
    let wanted = entries(request.agent, &command);
    let after = if is_toml(&file) {
        toml::merge(
            &file,
            before.as_deref(),
            request.agent,
            &wanted,
            request.force,
        )?
    } else {
        json::merge(
            &file,
            before.as_deref(),
            request.agent,
            &wanted,
            request.force,
        )?
    };
    if before.as_deref() == Some(after.as_str()) {
        return Ok(Outcome::Unchanged { file });
    }
    let backup = match &before {
        Some(text) => backup_once(&file, text)?,
        None => None,
    };
    write(&file, &after)?;
    Ok(Outcome::Written { file, backup })
}

/// Removes sc-hook's entries for the agent, and nothing else; a file left with nothing but
/// what install made around them is removed.
pub fn uninstall(agent: Agent, scope: &Scope) -> Result<Outcome, InstallError> {
    let file = config_file(agent, scope)?;
    let Some(before) = read(&file)? else {
        return Ok(Outcome::Unchanged { file });
    };
    let after = if is_toml(&file) {
        toml::remove(&file, &before, agent)?
    } else {
        json::remove(&file, &before, agent)?
    };
    match after {
        None => {
            fs::remove_file(&file).map_err(|source| InstallError::Write {
                file: file.clone(),
                source,
            })?;
            Ok(Outcome::Removed { file })
        }
        Some(after) if after == before => Ok(Outcome::Unchanged { file }),
        Some(after) => {
            write(&file, &after)?;
            Ok(Outcome::Written { file, backup: None })
        }
    }
}

fn is_toml(file: &Path) -> bool {
    file.extension().is_some_and(|ext| ext == "toml")
}

/// The file's text, `None` when there is none.
pub(super) fn read(file: &Path) -> Result<Option<String>, InstallError> {
    match fs::read_to_string(file) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(InstallError::Read {
            file: file.to_owned(),
            source,
        }),
    }
}

/// `FILE.sc-hook-backup`, the file as it was before sc-hook first changed it; never replaced.
fn backup_once(file: &Path, text: &str) -> Result<Option<PathBuf>, InstallError> {
    let mut name = file.as_os_str().to_owned();
    name.push(".sc-hook-backup");
    let backup = PathBuf::from(name);
    if backup.exists() {
        return Ok(None);
    }
    fs::write(&backup, text).map_err(|source| InstallError::Write {
        file: backup.clone(),
        source,
    })?;
    Ok(Some(backup))
}

/// Writes the file whole: a new file beside it, renamed over it.
fn write(file: &Path, text: &str) -> Result<(), InstallError> {
    let error = |source| InstallError::Write {
        file: file.to_owned(),
        source,
    };
    if let Some(folder) = file.parent() {
        fs::create_dir_all(folder).map_err(error)?;
    }
    let mut name = file.as_os_str().to_owned();
    name.push(".sc-hook-new");
    let temporary = PathBuf::from(name);
    let mut out = fs::File::create(&temporary).map_err(error)?;
    out.write_all(text.as_bytes()).map_err(error)?;
    out.sync_all().map_err(error)?;
    if let Ok(meta) = fs::metadata(file) {
        fs::set_permissions(&temporary, meta.permissions()).map_err(error)?;
    }
    fs::rename(&temporary, file).map_err(error)
}
