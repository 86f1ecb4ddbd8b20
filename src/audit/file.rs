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
    /// A file of one of the kernel's own file systems (`/proc`, `/sys` …): it looks regular,
    /// but what is written to it is an instruction to the kernel, never kept, and it reads back
    /// as the kernel pleases.
    KernelFile(&'static str),
    /// Anything else the kernel may hand out that is not a regular file.
    Other,
}

/// The kernel's own file systems, by `statfs`'s magic number (linux/magic.h), with their names.
const KERNEL_FILE_SYSTEMS: [(i64, &str); 11] = [
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x6265_6570, "configfs"),
    (0xcafe_4a11, "bpf"),
    (0xde5e_81e4, "efivarfs"),
    (0x6165_676c, "pstore"),
];

/// The kernel file system `file` is on, if it is one of [`KERNEL_FILE_SYSTEMS`].
fn kernel_file_system(file: &File) -> io::Result<Option<&'static str>> {
    use std::os::fd::AsRawFd;
    let mut stats = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: an open descriptor and a buffer of the right type, filled on success.
    if unsafe { libc::fstatfs(file.as_raw_fd(), stats.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatfs succeeded, so the buffer is filled.
    let magic = unsafe { stats.assume_init() }.f_type;
    Ok(KERNEL_FILE_SYSTEMS
        .iter()
        .find(|(known, _)| *known == magic)
        .map(|(_, name)| *name))
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
            FileKind::KernelFile(name) => {
                return write!(f, "a file of the kernel's {name} file system");
            }
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
    #[error(
        "cannot open the audit log {}: it is this stage's own {stream}, whose writes would land over its events",
        .path.display()
    )]
    SameAsOutput { path: PathBuf, stream: &'static str },
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

/// The opened file, when `fstat` says it is a regular file and `fstatfs` that it is not on one
/// of the kernel's own file systems; a log to append to must not be the stage's own stdout or
/// stderr either (their writes, at their own offsets, would land over its events).
fn regular(file: File, path: &Path, purpose: Purpose) -> Result<File, LogFileError> {
    use std::os::unix::fs::MetadataExt;
    let open_error = |source| LogFileError::Open {
        path: path.to_owned(),
        purpose,
        source,
    };
    let metadata = file.metadata().map_err(open_error)?;
    let kind = match FileKind::of(metadata.file_type()) {
        None => kernel_file_system(&file)
            .map_err(open_error)?
            .map(FileKind::KernelFile),
        kind => kind,
    };
    if let Some(kind) = kind {
        return Err(LogFileError::NotRegular {
            path: path.to_owned(),
            purpose,
            kind,
        });
    }
    if purpose == Purpose::Append {
        for (fd, stream) in [(1, "standard output"), (2, "standard error")] {
            if same_file_as_fd(fd, metadata.dev(), metadata.ino()) {
                return Err(LogFileError::SameAsOutput {
                    path: path.to_owned(),
                    stream,
                });
            }
        }
    }
    Ok(file)
}

/// Whether descriptor `fd` is open on the file `(dev, ino)`.
fn same_file_as_fd(fd: i32, dev: u64, ino: u64) -> bool {
    let mut stats = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat of a descriptor number (a closed one fails) into a buffer of its type.
    if unsafe { libc::fstat(fd, stats.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: fstat succeeded, so the buffer is filled.
    let stats = unsafe { stats.assume_init() };
    stats.st_dev == dev && stats.st_ino == ino
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
