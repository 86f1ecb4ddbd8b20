//! What can go wrong installing the hook, naming the file.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{file}: {event} already runs sc-hook differently: {command:?}; run install again with --force to replace it", file = .file.display())]
    Conflict {
        file: PathBuf,
        event: String,
        command: String,
    },
    #[error(
        "{agent} reads hooks from the repository's .github/hooks/*.json only; use --project DIR"
    )]
    NoUserFile { agent: &'static str },
    #[error("cannot read {file}: {source}", file = .file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{file} is not valid {format}: {why}; fix it or move it away, then install again", file = .file.display())]
    Parse {
        file: PathBuf,
        format: &'static str,
        why: String,
    },
    #[error("cannot write {file}: {source}", file = .file.display())]
    Write {
        file: PathBuf,
        source: std::io::Error,
    },
}
