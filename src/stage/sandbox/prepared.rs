//! Prepared invocations: sc-hook writes the whole sc-sandbox command line of a confined call
//! (policy, root, home, audit log and key, state store, protected files, agent, crew, session,
//! the gate's id, and a digest of the exact program and arguments) into a file of its state
//! folder, under a random id, and answers Claude Code with a short command:
//!
//! ```text
//! /usr/local/bin/sc-sandbox --run 3f9c0a7e12b45d68 -- bash -c 'git status'
//! ```
//!
//! so that the person asked sees the original command after a short prefix
//! ([`shell_command`]). `sc-sandbox --run ID` ([`take`]) finds the file, and refuses (exit 125,
//! nothing run) unless:
//! - the id is 16 lowercase hexadecimal digits (so it names a file of the folder, nothing else);
//! - the folder ([`FOLDER`] in the state folder) is a real folder, not a link, owned by this user,
//!   and open to no one else;
//! - the file is a regular file, not a link (opened with `O_NOFOLLOW`), with one name, owned by
//!   this user, mode 0600, and holds what [`prepare`] writes (strict JSON, this version);
//! - it was prepared less than [`LIFETIME`] ago (a held call waits for its person), and not in the
//!   future;
//! - the program and arguments after `--` are, byte for byte, those it was prepared for
//!   (SHA-256 of each, length-prefixed);
//! - it can be removed: an invocation runs once. A second run of the same command (a retry) is
//!   refused, and says so; the model then makes the call again and sc-hook prepares a new one.
//!
//! No key seals the file. Only this user can write the folder, and anything running as this
//! user unconfined could read a key kept beside it as well as write the file; inside the
//! sandbox the state folder is read-only ([`take`] adds it to the run's protected files, and `/`
//! is read-only anyway), so a confined call cannot prepare, change or remove an invocation.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::invocation::single_quoted;
use super::Invocation;

/// The folder of prepared invocations, inside the state folder.
pub const FOLDER: &str = "invocations";

/// How long a prepared invocation can be run: a held call is run when its person says yes,
/// which may be hours later. Older files are refused, and removed by the next [`prepare`].
pub const LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// How often [`prepare`] looks for files past their lifetime: each look reads every file of the
/// folder, and a day of confined calls that were held, declined or not run leaves hundreds (a
/// sweep at every call took a millisecond of it with 170 files).
pub const SWEEP_EVERY: Duration = Duration::from_secs(60 * 60);

/// The file of the folder whose modification time says when it was last swept (not 16
/// hexadecimal digits, so never an invocation).
const SWEPT: &str = "swept";

/// The format of the file; another is refused.
const VERSION: u32 = 1;

/// The most a prepared file may hold.
const MAX_SIZE: u64 = 64 * 1024;

/// How far in the future a file's time may be (clocks of one machine agree; this is slack).
const FUTURE_SLACK: Duration = Duration::from_secs(60);

/// Why an invocation cannot be prepared or run. sc-sandbox exits 125 on each.
#[derive(Debug, thiserror::Error)]
pub enum PreparedError {
    #[error("the invocation id {0:?} is not one sc-hook makes (16 lowercase hexadecimal digits)")]
    BadId(String),
    #[error("no prepared invocation {id} in {}: it was never prepared, already run once (an invocation runs once: make the call again), or removed", folder.display())]
    Missing { id: String, folder: PathBuf },
    #[error("{} is not sc-hook's own: {why}", path.display())]
    NotOurs { path: PathBuf, why: String },
    #[error("the prepared invocation {} is not what sc-hook writes: {why}", path.display())]
    Malformed { path: PathBuf, why: String },
    #[error("the prepared invocation {id} has expired (prepared {age} seconds ago; it runs within {} seconds)", LIFETIME.as_secs())]
    Expired { id: String, age: u64 },
    #[error("the prepared invocation {id} was made in the future ({ahead} seconds ahead)")]
    Future { id: String, ahead: u64 },
    #[error("the command to run is not the one prepared under {id}: it was changed after sc-hook decided it")]
    Altered { id: String },
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> PreparedError {
    let path = path.to_owned();
    move |source| PreparedError::Io { what, path, source }
}

/// What the file holds: the invocation, when it was made, and the digest of what it runs.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Stored {
    version: u32,
    /// Seconds since the epoch.
    created: u64,
    /// [`argv_digest`] of the program and its arguments.
    digest: String,
    policy: Option<PathBuf>,
    root: Option<PathBuf>,
    home: Option<PathBuf>,
    audit: Option<PathBuf>,
    audit_key: Option<PathBuf>,
    state: Option<String>,
    protect: Vec<PathBuf>,
    agent: Option<String>,
    crew: Option<String>,
    session: Option<String>,
    id: Option<String>,
}

/// The folder of prepared invocations in `state_folder`.
pub fn folder_in(state_folder: &Path) -> PathBuf {
    state_folder.join(FOLDER)
}

/// SHA-256 over the program and each argument, each preceded by its length: two different
/// command lines never give the same bytes to hash.
pub fn argv_digest(program: &OsStr, args: &[OsString]) -> String {
    let mut hash = Sha256::new();
    for word in std::iter::once(program).chain(args.iter().map(OsString::as_os_str)) {
        hash.update((word.len() as u64).to_be_bytes());
        hash.update(word.as_bytes());
    }
    crate::hex::encode(hash.finalize())
}

/// Writes `invocation` (its `exe` aside: sc-sandbox runs itself) to run `bash -c script`, in
/// `folder` (made 0700 if missing), and returns its id. Files past their [`LIFETIME`] are removed
/// on the way (best effort).
pub fn prepare(
    folder: &Path,
    invocation: &Invocation,
    script: &str,
    now: SystemTime,
) -> Result<String, PreparedError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
        .map_err(io("cannot make the folder", folder))?;
    check_folder(folder)?;
    sweep(folder, now);
    let (program, args) = bash_argv(script);
    let stored = Stored {
        version: VERSION,
        created: seconds(now),
        digest: argv_digest(&program, &args),
        policy: invocation.policy.clone(),
        root: invocation.root.clone(),
        home: invocation.home.clone(),
        audit: invocation.audit.clone(),
        audit_key: invocation.audit_key.clone(),
        state: invocation.state.clone(),
        protect: invocation.protect.clone(),
        agent: invocation.agent.clone(),
        crew: invocation.crew.clone(),
        session: invocation.session.clone(),
        id: invocation.id.clone(),
    };
    let text = serde_json::to_vec(&stored).map_err(|err| PreparedError::Malformed {
        path: folder.to_owned(),
        why: format!("a path is not UTF-8: {err}"),
    })?;
    let id = new_id().map_err(io("cannot draw a random id for", folder))?;
    let path = folder.join(&id);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(io("cannot create", &path))?;
    if let Err(err) = file.write_all(&text).and_then(|()| file.flush()) {
        let _ = fs::remove_file(&path);
        return Err(io("cannot write", &path)(err));
    }
    Ok(id)
}

/// The program and arguments sc-hook prepares for a script: `bash -c SCRIPT`.
pub fn bash_argv(script: &str) -> (OsString, Vec<OsString>) {
    ("bash".into(), vec!["-c".into(), script.into()])
}

/// The command sc-hook answers with: `EXE --run ID -- bash -c SCRIPT`, the script quoted so that
/// it reads as written where it can ([`shell_word`]).
pub fn shell_command(exe: &Path, id: &str, script: &str) -> String {
    format!(
        "{} --run {id} -- bash -c {}",
        shell_word(exe.as_os_str()),
        shell_word(OsStr::new(script))
    )
}

/// `word` as one word of a POSIX shell, changed as little as the shell allows: as it is when it
/// holds only characters no shell reads specially; in single quotes when it holds no single
/// quote; in double quotes when it holds none of `$`, `` ` ``, `"`, `\` (the only characters
/// special there; `!` is not, in a shell that is not interactive); else in single quotes with
/// each `'` written `'\''`.
pub fn shell_word(word: &OsStr) -> String {
    let text = String::from_utf8_lossy(word.as_bytes());
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text.into_owned();
    }
    if !text.contains('\'') {
        return format!("'{text}'");
    }
    if !text.contains(['$', '`', '"', '\\']) {
        return format!("\"{text}\"");
    }
    single_quoted(word)
}

/// Reads the invocation prepared under `id` in `folder` for `program` and `args`, checks it
/// (see the module's doc), removes it, and returns it with `exe` empty and the state folder
/// that holds `folder` added to its protected files.
pub fn take(
    folder: &Path,
    id: &str,
    program: &OsStr,
    args: &[OsString],
    now: SystemTime,
) -> Result<Invocation, PreparedError> {
    if id.len() != 16
        || !id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(PreparedError::BadId(id.to_owned()));
    }
    check_folder(folder)?;
    let path = folder.join(id);
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(&path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(PreparedError::Missing {
                id: id.to_owned(),
                folder: folder.to_owned(),
            })
        }
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            return Err(not_ours(&path, "it is a symbolic link"))
        }
        Err(err) => return Err(io("cannot open", &path)(err)),
    };
    let meta = file.metadata().map_err(io("cannot read", &path))?;
    if !meta.file_type().is_file() {
        return Err(not_ours(&path, "it is not a regular file"));
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(not_ours(
            &path,
            &format!("it belongs to user {}", meta.uid()),
        ));
    }
    if meta.mode() & 0o777 != 0o600 {
        return Err(not_ours(
            &path,
            &format!("its mode is {:o}, not 600", meta.mode() & 0o777),
        ));
    }
    if meta.nlink() != 1 {
        return Err(not_ours(&path, "it has more than one name (a hard link)"));
    }
    let mut text = Vec::new();
    file.take(MAX_SIZE + 1)
        .read_to_end(&mut text)
        .map_err(io("cannot read", &path))?;
    if text.len() as u64 > MAX_SIZE {
        return Err(malformed(&path, "it is too large"));
    }
    let stored: Stored =
        serde_json::from_slice(&text).map_err(|err| malformed(&path, &err.to_string()))?;
    if stored.version != VERSION {
        return Err(malformed(
            &path,
            &format!(
                "version {} (this sc-sandbox reads {VERSION})",
                stored.version
            ),
        ));
    }
    let now = seconds(now);
    if stored.created > now + FUTURE_SLACK.as_secs() {
        return Err(PreparedError::Future {
            id: id.to_owned(),
            ahead: stored.created - now,
        });
    }
    let age = now.saturating_sub(stored.created);
    if age >= LIFETIME.as_secs() {
        return Err(PreparedError::Expired {
            id: id.to_owned(),
            age,
        });
    }
    if argv_digest(program, args) != stored.digest {
        return Err(PreparedError::Altered { id: id.to_owned() });
    }
    // Once: whoever removes it runs it; a second run at the same time finds it gone.
    fs::remove_file(&path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => PreparedError::Missing {
            id: id.to_owned(),
            folder: folder.to_owned(),
        },
        _ => io("cannot remove (an invocation runs once)", &path)(err),
    })?;
    // The state folder that holds the folder (the probe cache, the default audit log and
    // state) is the gate's own too: read-only inside, wherever it is.
    let mut protect = stored.protect;
    protect.push(folder.parent().unwrap_or(folder).to_owned());
    Ok(Invocation {
        exe: PathBuf::new(),
        policy: stored.policy,
        root: stored.root,
        home: stored.home,
        audit: stored.audit,
        audit_key: stored.audit_key,
        state: stored.state,
        protect,
        agent: stored.agent,
        crew: stored.crew,
        session: stored.session,
        id: stored.id,
    })
}

fn not_ours(path: &Path, why: &str) -> PreparedError {
    PreparedError::NotOurs {
        path: path.to_owned(),
        why: why.to_owned(),
    }
}

fn malformed(path: &Path, why: &str) -> PreparedError {
    PreparedError::Malformed {
        path: path.to_owned(),
        why: why.to_owned(),
    }
}

/// The folder is a folder (not a link), this user's, and no one else's to read or write.
fn check_folder(folder: &Path) -> Result<(), PreparedError> {
    let meta = fs::symlink_metadata(folder).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => PreparedError::Missing {
            id: String::new(),
            folder: folder.to_owned(),
        },
        _ => io("cannot read", folder)(err),
    })?;
    if meta.file_type().is_symlink() {
        return Err(not_ours(folder, "it is a symbolic link"));
    }
    if !meta.is_dir() {
        return Err(not_ours(folder, "it is not a folder"));
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(not_ours(
            folder,
            &format!("it belongs to user {}", meta.uid()),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(not_ours(
            folder,
            &format!(
                "its mode is {:o}: others can reach it (it must be 700)",
                meta.mode() & 0o777
            ),
        ));
    }
    Ok(())
}

/// Removes the files of `folder` past their lifetime, by their change time, when it was not
/// swept in the last [`SWEEP_EVERY`] (best effort: a file left over is refused by [`take`] all
/// the same).
fn sweep(folder: &Path, now: SystemTime) {
    let marker = folder.join(SWEPT);
    let swept = fs::symlink_metadata(&marker)
        .ok()
        .filter(|meta| meta.is_file())
        .and_then(|meta| meta.modified().ok());
    // A mark in the future (a clock set back) is no mark.
    if swept
        .and_then(|swept| now.duration_since(swept).ok())
        .is_some_and(|since| since < SWEEP_EVERY)
    {
        return;
    }
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .ok()
            .and_then(|meta| meta.modified().ok())
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age >= LIFETIME);
        if old {
            let _ = fs::remove_file(entry.path());
        }
    }
    mark(folder, &marker, now);
}

/// Puts a new mark in place, timed `now`: a file of its own, made anew and renamed over the old
/// name. Whatever had the name (a hard link to another file, a pipe, a link) is never opened or
/// written: writing through it would truncate the other file, or wait on the pipe forever.
fn mark(folder: &Path, marker: &Path, now: SystemTime) {
    let Ok(id) = new_id() else {
        return;
    };
    let fresh = folder.join(format!("{SWEPT}.{id}"));
    let made = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&fresh)
        .and_then(|file| file.set_modified(now));
    if made.is_err() || fs::rename(&fresh, marker).is_err() {
        let _ = fs::remove_file(&fresh);
    }
}

fn new_id() -> std::io::Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|err| std::io::Error::other(err.to_string()))?;
    Ok(crate::hex::encode(bytes))
}

fn seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
#[path = "prepared_tests.rs"]
mod tests;
