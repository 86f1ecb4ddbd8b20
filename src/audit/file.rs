//! The audit log's own file, opened to append to or to verify, and refused unless it is a regular
//! file: a character device (`/dev/null`), a FIFO or a socket takes every event and keeps none,
//! and reads back as an empty log, which a verifier would call intact.
//!
//! The check is of the opened file descriptor (`fstat`), never of the path before the open: a
//! path swapped between a check and an open cannot pass one file and hand over another. A
//! symbolic link to a regular file is followed, as before: it is the file it names.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What an audit log's path opened as, when it was not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    CharacterDevice,
    BlockDevice,
    Fifo,
    Socket,
    Directory,
    /// Anything else the kernel may hand out that is not a regular file.
    Other,
}

impl FileKind {
    /// The kind of an opened file, or `None` when it is a regular file.
    pub fn of(file_type: std::fs::FileType) -> Option<FileKind> {
        Some(if file_type.is_file() {
            return None;
        } else if file_type.is_char_device() {
            FileKind::CharacterDevice
        } else if file_type.is_block_device() {
            FileKind::BlockDevice
        } else if file_type.is_fifo() {
            FileKind::Fifo
        } else if file_type.is_socket() {
            FileKind::Socket
        } else if file_type.is_dir() {
            FileKind::Directory
        } else {
            FileKind::Other
        })
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            FileKind::CharacterDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::Socket => "a socket",
            FileKind::Directory => "a directory",
            FileKind::Other => "not a file of a known type",
        })
    }
}

/// What the log was opened for, as its errors say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A stage appends its events.
    Append,
    /// `sc-report --verify` (or `--head`) walks its chain.
    Verify,
}

impl fmt::Display for Purpose {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Purpose::Append => "open",
            Purpose::Verify => "verify",
        })
    }
}

/// Why an audit log's file could not be opened; each names the path. A stage stops on any (exit
/// status 1), before anything leaves it.
#[derive(Debug, thiserror::Error)]
pub enum LogFileError {
    #[error("cannot create the audit log's folder {}", .folder.display())]
    Folder {
        folder: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot {purpose} the audit log {}", .path.display())]
    Open {
        path: PathBuf,
        purpose: Purpose,
        #[source]
        source: io::Error,
    },
    #[error(
        "cannot {purpose} the audit log {}: it is {kind}, not a regular file",
        .path.display()
    )]
    NotRegular {
        path: PathBuf,
        purpose: Purpose,
        kind: FileKind,
    },
}

/// Opens the log to append to (and to read its tail back), creating it and its folder when
/// missing, and refuses it unless it is a regular file.
///
/// Created readable by its owner only: events carry every call's arguments and the approvals
/// given, which are nobody else's to read or to replay. `O_NOCTTY`: a terminal named as the log
/// is refused, never made the stage's controlling terminal by the open.
pub fn open_to_append(path: &Path) -> Result<File, LogFileError> {
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|source| LogFileError::Folder {
            folder: folder.to_owned(),
            source,
        })?;
    }
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOCTTY)
        .open(path)
        .map_err(|source| LogFileError::Open {
            path: path.to_owned(),
            purpose: Purpose::Append,
            source,
        })?;
    regular(file, path, Purpose::Append)
}

/// Opens the log to walk its chain, and refuses it unless it is a regular file.
///
/// `O_NONBLOCK`: a FIFO's open for reading would otherwise wait for a writer; it returns at once
/// and the FIFO is refused. A regular file's reads ignore the flag.
pub fn open_to_verify(path: &Path) -> Result<File, LogFileError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|source| LogFileError::Open {
            path: path.to_owned(),
            purpose: Purpose::Verify,
            source,
        })?;
    regular(file, path, Purpose::Verify)
}

/// The opened file, when `fstat` says it is a regular file.
fn regular(file: File, path: &Path, purpose: Purpose) -> Result<File, LogFileError> {
    let file_type = file
        .metadata()
        .map_err(|source| LogFileError::Open {
            path: path.to_owned(),
            purpose,
            source,
        })?
        .file_type();
    match FileKind::of(file_type) {
        None => Ok(file),
        Some(kind) => Err(LogFileError::NotRegular {
            path: path.to_owned(),
            purpose,
            kind,
        }),
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
