//! What `--state` names ([`StateUrl`]) and opening it.

use std::path::{Path, PathBuf};

use super::backend::{Store, StoreError};
use super::init::{InitError, Initialised};
use super::key::DEFAULT_STATE_FILE;
use super::redis::{self, RedisUrlError};
use super::sqlite;

/// Why a `--state` value is refused (a usage error).
#[derive(Debug, thiserror::Error)]
pub enum StateUrlError {
    #[error("empty; give a file or a redis:// URL")]
    Empty,
    #[error(transparent)]
    Redis(#[from] RedisUrlError),
    /// `file:` or `sqlite:`, for what is given as a plain path.
    #[error("give a SQLite file as a plain path, without `{scheme}:`")]
    FileScheme { scheme: String },
    #[error(
        "unknown scheme `{scheme}:`; a state store is a SQLite file (a path), redis://HOST:PORT/DB or rediss://HOST:PORT/DB"
    )]
    UnknownScheme { scheme: String },
    #[error("names a folder; give a file")]
    Folder,
}

/// What `--state` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateUrl {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// `redis://…` or `rediss://…`, as given.
    Redis(String),
}

impl StateUrl {
    /// Reads a `--state` value: `redis://HOST:PORT/DB`, `rediss://…`, or a file path. Any other
    /// scheme, and a Redis URL that does not parse, is a usage error (what is wrong with it).
    pub fn parse(text: &str) -> Result<StateUrl, StateUrlError> {
        if text.is_empty() {
            return Err(StateUrlError::Empty);
        }
        if let Some(scheme) = scheme_of(text) {
            let scheme = scheme.to_owned();
            return match scheme.to_ascii_lowercase().as_str() {
                "redis" | "rediss" => {
                    redis::check_url(text)?;
                    Ok(StateUrl::Redis(text.to_owned()))
                }
                "file" | "sqlite" => Err(StateUrlError::FileScheme { scheme }),
                _ => Err(StateUrlError::UnknownScheme { scheme }),
            };
        }
        if text.ends_with('/') {
            return Err(StateUrlError::Folder);
        }
        Ok(StateUrl::Sqlite(PathBuf::from(text)))
    }

    /// `state.sqlite` beside the audit log.
    pub fn beside(audit: &Path) -> StateUrl {
        let folder = audit
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        StateUrl::Sqlite(folder.join(DEFAULT_STATE_FILE))
    }

    /// Opens the store, creating a SQLite file (and its folder) when `create` says so, and
    /// checks that it can be used: an error here is a runtime failure (exit 1). A Redis database
    /// without the store's marker is refused, empty or not (`sc-state init` makes the store).
    pub fn open(&self, options: OpenOptions) -> Result<Box<dyn Store>, StoreError> {
        Ok(match self {
            StateUrl::Sqlite(path) => Box::new(sqlite::SqliteStore::open(path, options)?),
            StateUrl::Redis(url) => Box::new(redis::RedisStore::open(url)?),
        })
    }

    /// Makes the store, or finds it is one already (`sc-state init`; see [`super::init`]).
    pub fn init(&self, fsync: bool) -> Result<Initialised, InitError> {
        match self {
            StateUrl::Redis(url) => redis::RedisStore::init(url),
            StateUrl::Sqlite(path) => {
                let existed = path.exists();
                let store = sqlite::SqliteStore::open(
                    path,
                    OpenOptions {
                        create: true,
                        fsync,
                    },
                )
                .map_err(InitError::Unavailable)?;
                Ok(Initialised {
                    store: Store::describe(&store).to_owned(),
                    created: !existed,
                })
            }
        }
    }
}

/// How a store is opened.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Create a SQLite file that does not exist (the doors do; `sc-state` does not). A Redis
    /// store is never created by opening it: only `sc-state init` makes one
    /// ([`StateUrl::init`]).
    pub create: bool,
    /// Make each SQLite commit durable on disk (`--fsync`).
    pub fsync: bool,
}

/// The scheme of a URL-like text (`redis` in `redis://…`), if it has one.
fn scheme_of(text: &str) -> Option<&str> {
    let (scheme, rest) = text.split_once(':')?;
    let well_formed = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (well_formed && rest.starts_with("//")).then_some(scheme)
}
