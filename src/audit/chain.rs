//! The audit log's hash chain: what makes a deleted, edited, inserted or reordered line visible.
//!
//! Every event carries `seq` (its place in the file's chain, from 1) and `prev`: the link of the
//! previous line. Unkeyed, a line's link is the SHA-256 of its exact bytes (without its newline)
//! and the first event's `prev` is [`GENESIS`] (all zeros). With a key, every line also ends with
//! `mac`: the HMAC-SHA-256, under the key, of the line as it stands before `mac` (so of its `prev`
//! too), and that MAC is the line's link. The first event's `prev` is then [`Chain::genesis`], an
//! HMAC of a fixed label under the key, so a keyed chain cannot be started, or replaced whole, by
//! anyone without the key, and every line, the last one included, vouches for itself.
//!
//! The *head* is the link of the last line: store it elsewhere (`sc-report --head`) and
//! `--expect-head` also catches a cut-off tail.
//!
//! What it protects against: anyone who edits, deletes, inserts or reorders lines inside the log
//! without recomputing every later link; with a key, anyone without the key, even one who rewrites
//! the whole file or seeds an empty one (writers refuse to extend a keyed log whose last line does
//! not carry a valid MAC: [`Chain::authenticate`]). What it does not: an attacker who holds the
//! key; one who deletes the whole file or cuts its tail (unless the head was stored elsewhere); and,
//! unkeyed, one who recomputes the chain from the point of the edit on.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::error::UsageError;

/// The `prev` of a file's first event in an unkeyed chain.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Names an environment variable holding the key file's path, for `--audit-key`.
pub(crate) const AUDIT_KEY_ENV: &str = "SC_AUDIT_KEY_FILE";
const MIN_KEY_BYTES: usize = 16;
/// What a keyed chain's genesis is the MAC of.
const KEYED_GENESIS_LABEL: &[u8] = b"skeleton-crew audit chain genesis v1";
/// How a keyed line ends: `,"mac":"` 64 hex digits `"}`.
const MAC_PREFIX: &[u8] = b",\"mac\":\"";
const MAC_SUFFIX_LEN: usize = MAC_PREFIX.len() + 64 + 2;

/// A link: the digest of one line, shown as 64 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Link(pub [u8; 32]);

impl Link {
    pub fn genesis() -> Link {
        Link([0; 32])
    }

    pub fn parse(hex: &str) -> Option<Link> {
        Link::parse_bytes(hex.as_bytes())
    }

    /// A link as sc-gate, sc-approve and the chain write it: 64 lowercase hex digits only, so
    /// that a MAC or seal has exactly one spelling and a line cannot change unnoticed.
    pub(crate) fn parse_lowercase(hex: &str) -> Option<Link> {
        if hex.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        Link::parse(hex)
    }

    /// [`Link::parse`] of ASCII bytes: 64 hex digits, either case.
    pub(crate) fn parse_bytes(hex: &[u8]) -> Option<Link> {
        if hex.len() != 64 {
            return None;
        }
        let digit = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = digit(hex[2 * i])? << 4 | digit(hex[2 * i + 1])?;
        }
        Some(Link(bytes))
    }
}

impl Link {
    /// Equality in time that does not depend on where the links differ, for MACs.
    pub(crate) fn ct_eq(&self, other: &Link) -> bool {
        self.0
            .iter()
            .zip(other.0.iter())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
    }

    /// The 64 lowercase hex digits.
    pub fn hex(&self) -> [u8; 64] {
        const HEX: &[u8; 16] = crate::hex::DIGITS;
        let mut out = [0u8; 64];
        for (i, byte) in self.0.iter().enumerate() {
            out[2 * i] = HEX[(byte >> 4) as usize];
            out[2 * i + 1] = HEX[(byte & 0xf) as usize];
        }
        out
    }
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let hex = self.hex();
        f.write_str(std::str::from_utf8(&hex).expect("hex digits are ASCII"))
    }
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Link({self})")
    }
}

/// How lines are linked: plain SHA-256, or HMAC-SHA-256 under a secret key.
#[derive(Clone)]
pub enum Chain {
    Sha256,
    Keyed(Vec<u8>),
}

impl fmt::Debug for Chain {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Chain::Sha256 => f.write_str("Chain::Sha256"),
            Chain::Keyed(_) => f.write_str("Chain::Keyed(<secret>)"),
        }
    }
}

impl Chain {
    /// The link of one sealed line (its bytes without the newline): unkeyed, its SHA-256; keyed,
    /// the HMAC of the line without its trailing `mac` member, which is what that member holds
    /// when the line is authentic (a line without one is linked whole, and never authentic).
    pub fn link(&self, line: &[u8]) -> Link {
        match self {
            Chain::Sha256 => Link(Sha256::digest(line).into()),
            Chain::Keyed(key) => match split_mac(line) {
                Some((before_mac, _)) => hmac(key, &[before_mac, b"}"]),
                None => hmac(key, &[line]),
            },
        }
    }

    /// The `prev` of a file's first event: all zeros unkeyed; keyed, a MAC under the key, so
    /// that nobody without the key can start a chain that verifies.
    pub fn genesis(&self) -> Link {
        match self {
            Chain::Sha256 => Link::genesis(),
            Chain::Keyed(key) => hmac(key, &[KEYED_GENESIS_LABEL]),
        }
    }

    /// The head of an empty file.
    pub(crate) fn genesis_head(&self) -> Head {
        Head {
            link: self.genesis(),
            seq: 0,
        }
    }

    /// The HMAC of `parts`, one after the other, under the key; `None` unkeyed.
    pub fn mac(&self, parts: &[&[u8]]) -> Option<Link> {
        match self {
            Chain::Sha256 => None,
            Chain::Keyed(key) => Some(hmac(key, parts)),
        }
    }

    /// Whether the chain is keyed.
    pub fn is_keyed(&self) -> bool {
        matches!(self, Chain::Keyed(_))
    }

    /// The link of a sealed line, once the line has vouched for itself: keyed, its `mac` member
    /// must be the MAC of the rest of it under the key; unkeyed, every line does.
    pub fn authenticate(&self, line: &[u8]) -> Result<Link, Unauthentic> {
        let link = self.link(line);
        match self {
            Chain::Sha256 => Ok(link),
            Chain::Keyed(_) => match split_mac(line) {
                None => Err(Unauthentic::NoMac),
                Some((_, mac)) if Link::parse_bytes(mac) == Some(link) => Ok(link),
                Some(_) => Err(Unauthentic::WrongMac),
            },
        }
    }

    /// Adds `seq` and `prev` (and, keyed, `mac`) to an event line (`{…}` without its newline),
    /// appending the sealed line to `out`; returns the sealed line's link.
    pub(crate) fn seal_into(&self, out: &mut Vec<u8>, line: &[u8], head: Head) -> Link {
        let start = out.len();
        seal_into(out, line, head);
        match self {
            Chain::Sha256 => self.link(&out[start..]),
            Chain::Keyed(key) => {
                let mac = hmac(key, &[&out[start..]]);
                out.pop(); // the closing brace
                out.extend_from_slice(MAC_PREFIX);
                out.extend_from_slice(&mac.hex());
                out.extend_from_slice(b"\"}");
                mac
            }
        }
    }

    /// The chain for `--audit-key FILE`, else for the file named by `SC_AUDIT_KEY_FILE`, else
    /// unkeyed. A named key file that is missing, unreadable, too short, another user's, or
    /// readable or writable by anyone but its owner is a usage error (exit 2): a keyed log never
    /// silently goes unkeyed.
    pub fn from_key_option(key_file: Option<&Path>) -> Result<Chain, UsageError> {
        let from_env = std::env::var_os(AUDIT_KEY_ENV).filter(|v| !v.is_empty());
        match key_file
            .map(Path::to_owned)
            .or_else(|| from_env.map(Into::into))
        {
            Some(path) => Chain::load_key(&path),
            None => Ok(Chain::Sha256),
        }
    }

    fn load_key(path: &Path) -> Result<Chain, UsageError> {
        let fail = |why: String| UsageError(format!("audit key {}: {why}", path.display()));
        key_place(path).map_err(fail)?;
        // O_NONBLOCK: a FIFO named as the key opens at once and is refused below as not a
        // regular file, instead of waiting for a writer (a regular file's reads ignore it).
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|err| fail(format!("cannot open it: {err}")))?;
        let meta = file.metadata().map_err(|err| fail(err.to_string()))?;
        if !meta.is_file() {
            return Err(fail("not a regular file".into()));
        }
        let (owner, me) = (meta.uid(), nix::unistd::geteuid().as_raw());
        if owner != me {
            // Another user could rewrite it, and with it every seal and MAC: the key is ours only.
            return Err(fail(format!(
                "it belongs to user {owner}, not to this user ({me}); a key must be the user's own"
            )));
        }
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(fail(format!(
                "its permissions {:o} let others read or write it; chmod 600 it",
                mode & 0o777
            )));
        }
        let mut key = Vec::new();
        file.read_to_end(&mut key)
            .map_err(|err| fail(format!("cannot read it: {err}")))?;
        if key.len() < MIN_KEY_BYTES {
            return Err(fail(format!(
                "it holds {} bytes; a key needs at least {MIN_KEY_BYTES}",
                key.len()
            )));
        }
        Ok(Chain::Keyed(key))
    }
}

/// Whether the key's path is this user's alone to change, as ssh's StrictModes asks of its
/// files: a link on the way that another user owns, or a folder on the way (as named, and as the
/// links resolve) that another user but root owns or that anyone may write without the sticky
/// bit, would let that user put a key whose content they know in its place (a review pointed a
/// link of its own at a root-owned file of public content, and forged seals with it).
fn key_place(path: &Path) -> Result<(), String> {
    use std::collections::VecDeque;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Component, PathBuf};
    let me = nix::unistd::geteuid().as_raw();
    let ours = |uid: u32| uid == me || uid == 0;
    let refuse = |what: String| {
        Err(format!(
            "{what}: a key's path must be this user's to change"
        ))
    };
    let start = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|err| format!("cannot open it: {err}"))?
            .join(path)
    };
    // Walked a part at a time, each link read and followed where it stands (a third review hid
    // another user's link in the middle of a chain of links), every folder visited checked.
    let mut parts: VecDeque<std::ffi::OsString> = VecDeque::new();
    let push_front = |parts: &mut VecDeque<std::ffi::OsString>, path: &Path| {
        for component in path.components().rev() {
            match component {
                Component::RootDir => parts.push_front("/".into()),
                Component::CurDir => {}
                Component::ParentDir => parts.push_front("..".into()),
                Component::Normal(name) => parts.push_front(name.to_owned()),
                Component::Prefix(_) => {}
            }
        }
    };
    push_front(&mut parts, &start);
    let mut at = PathBuf::from("/");
    let mut hops = 0;
    while let Some(part) = parts.pop_front() {
        if part == "/" {
            at = PathBuf::from("/");
            continue;
        }
        if part == ".." {
            at.pop();
            continue;
        }
        let folder = std::fs::metadata(&at).map_err(|err| format!("cannot open it: {err}"))?;
        if !ours(folder.uid()) {
            return refuse(format!(
                "its folder \"{}\" belongs to user {}",
                at.display(),
                folder.uid()
            ));
        }
        if folder.mode() & 0o002 != 0 && folder.mode() & 0o1000 == 0 {
            return refuse(format!(
                "its folder \"{}\" can be written by anyone",
                at.display()
            ));
        }
        let next = at.join(&part);
        let link =
            std::fs::symlink_metadata(&next).map_err(|err| format!("cannot open it: {err}"))?;
        if link.file_type().is_symlink() {
            if !ours(link.uid()) {
                return refuse(format!(
                    "\"{}\" on its way is a link of user {}",
                    next.display(),
                    link.uid()
                ));
            }
            hops += 1;
            if hops > 40 {
                return Err("cannot open it: too many links on its way".to_owned());
            }
            let target =
                std::fs::read_link(&next).map_err(|err| format!("cannot open it: {err}"))?;
            push_front(&mut parts, &target);
            continue;
        }
        at = next;
    }
    Ok(())
}

/// Why a keyed line does not vouch for itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unauthentic {
    /// It has no `mac` member at its end: written without a key, or forged.
    NoMac,
    /// Its `mac` is not the MAC of the line under the key: edited, forged, or another key's.
    WrongMac,
}

impl fmt::Display for Unauthentic {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Unauthentic::NoMac => {
                "it carries no `mac`: it was written without the audit key, or forged"
            }
            Unauthentic::WrongMac => {
                "its `mac` does not match under the audit key: it was edited or forged, or written under another key"
            }
        })
    }
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> Link {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(part);
    }
    Link(mac.finalize().into_bytes().into())
}

/// A keyed line split before its trailing `,"mac":"…"}` member: the part the MAC covers (without
/// the closing brace) and the MAC's 64 hex digits.
fn split_mac(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = line.len().checked_sub(MAC_SUFFIX_LEN)?;
    let (before, suffix) = line.split_at(at);
    let hex = suffix.strip_prefix(MAC_PREFIX)?.strip_suffix(b"\"}")?;
    // One spelling only: an upper-case digit would let a line change while its MAC still held.
    if hex.iter().any(u8::is_ascii_uppercase) {
        return None;
    }
    Some((before, hex))
}

/// Whether a sealed line ends with a `mac` member, as every line of a keyed chain does: a log
/// whose first line carries one was written with a key, and is verified only with it.
pub fn carries_mac(line: &[u8]) -> bool {
    split_mac(line).is_some()
}

/// Where a file's chain ends: the link of its last line and that line's `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub link: Link,
    pub seq: u64,
}

impl Head {
    /// The head of an empty unkeyed file ([`Chain::genesis_head`] for any chain).
    pub fn genesis() -> Head {
        Head {
            link: Link::genesis(),
            seq: 0,
        }
    }
}

/// Adds `seq` and `prev` to an event line (`{…}` without its newline), returning the new line.
pub fn seal(line: &[u8], head: Head) -> Vec<u8> {
    let mut sealed = Vec::with_capacity(line.len() + 96);
    seal_into(&mut sealed, line, head);
    sealed
}

/// [`seal`], appending the sealed line to `out`.
pub(crate) fn seal_into(out: &mut Vec<u8>, line: &[u8], head: Head) {
    let body = line.strip_suffix(b"}").expect("an event is a JSON object");
    out.reserve(body.len() + 100);
    out.extend_from_slice(body);
    if body.len() > 1 {
        out.push(b',');
    }
    out.extend_from_slice(b"\"seq\":");
    crate::json_write::push_u64(out, head.seq.saturating_add(1));
    out.extend_from_slice(b",\"prev\":\"");
    out.extend_from_slice(&head.link.hex());
    out.extend_from_slice(b"\"}");
}

/// Reads the head of a file of `len` bytes from its last line: the link of that line and the
/// `seq` it carries (or the nearest earlier line's, for a torn last line).
///
/// Keyed, a whole last line must vouch for itself ([`Chain::authenticate`]), or the head is an
/// error of kind `InvalidData`: a writer never extends, and so never authenticates, a line it
/// cannot authenticate. A torn last line (no newline: a writer died mid-line) is linked as it is;
/// the verifier shows it as torn, so nothing after it can pass for intact.
pub(crate) fn read_head(file: &mut File, len: u64, chain: &Chain) -> io::Result<Head> {
    if len == 0 {
        return Ok(chain.genesis_head());
    }
    // Another writer moved the file on since our last append (as the stages of a pipeline do
    // all the time): the last line is nearly always in the last few KiB, and whole.
    const SHORT_TAIL: u64 = 4 * 1024;
    if len > SHORT_TAIL {
        let mut tail = vec![0u8; SHORT_TAIL as usize];
        std::os::unix::fs::FileExt::read_exact_at(&*file, &mut tail, len - SHORT_TAIL)?;
        if let Some(body) = tail.strip_suffix(b"\n") {
            if let Some(at) = body.iter().rposition(|&b| b == b'\n') {
                let last = &body[at + 1..];
                if let Some(seq) = seq_of(last) {
                    return whole_head(chain, last, seq);
                }
            }
        }
    }
    const TAIL: u64 = 64 * 1024;
    let mut start = len.saturating_sub(TAIL);
    loop {
        file.seek(SeekFrom::Start(start))?;
        let mut tail = Vec::with_capacity((len - start) as usize);
        file.by_ref().take(len - start).read_to_end(&mut tail)?;
        let whole = tail.ends_with(b"\n");
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
        let line_start = match body.iter().rposition(|&b| b == b'\n') {
            Some(at) => at + 1,
            None if start == 0 => 0,
            None => {
                start = start.saturating_sub(TAIL * 16);
                continue;
            }
        };
        let last = &body[line_start..];
        // Keyed, a last line that reads as JSON is no torn write, whatever its ending: it must
        // vouch for itself, or a forger could leave off the newline to be chained past.
        let reads = || serde_json::from_slice::<serde_json::Value>(last).is_ok();
        if whole || (chain.is_keyed() && reads()) {
            return whole_head(chain, last, seq_of(last).unwrap_or(0));
        }
        // A torn last line has no seq of its own: it took the place after the line before.
        let seq = seq_of(last)
            .or_else(|| {
                let earlier = body[..line_start].split(|&b| b == b'\n').rev();
                earlier
                    .take(64)
                    .find_map(seq_of)
                    .map(|s| s.saturating_add(1))
            })
            .unwrap_or(0);
        return Ok(Head {
            link: chain.link(last),
            seq,
        });
    }
}

/// The head after a whole last line, which must vouch for itself under a key.
fn whole_head(chain: &Chain, last: &[u8], seq: u64) -> io::Result<Head> {
    match chain.authenticate(last) {
        Ok(link) => Ok(Head { link, seq }),
        Err(why) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "refusing to extend a keyed chain it cannot authenticate: the log's last line (seq {seq}) {why}"
            ),
        )),
    }
}

/// The `seq` of an event line, if it is a JSON object carrying one.
pub(crate) fn seq_of(line: &[u8]) -> Option<u64> {
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    value.get("seq")?.as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_print_and_parse_as_hex() {
        let link = Chain::Sha256.link(b"abc");
        assert_eq!(
            link.to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Link::parse(&link.to_string()), Some(link));
        assert_eq!(Link::genesis().to_string(), GENESIS);
        assert_eq!(Link::parse("xyz"), None);
    }

    #[test]
    fn a_key_changes_every_link() {
        let keyed = Chain::Keyed(b"0123456789abcdef".to_vec());
        let other = Chain::Keyed(b"fedcba9876543210".to_vec());
        assert_ne!(keyed.link(b"line"), Chain::Sha256.link(b"line"));
        assert_ne!(keyed.link(b"line"), other.link(b"line"));
    }

    #[test]
    fn sealing_appends_seq_and_prev() {
        let head = Head {
            link: Chain::Sha256.link(b"x"),
            seq: 4,
        };
        let sealed = seal(br#"{"a":1}"#, head);
        let value: serde_json::Value = serde_json::from_slice(&sealed).unwrap();
        assert_eq!(value["seq"], 5);
        assert_eq!(value["prev"], head.link.to_string());
        assert_eq!(
            seal(b"{}", Head::genesis()),
            format!("{{\"seq\":1,\"prev\":\"{GENESIS}\"}}").into_bytes()
        );
    }

    #[test]
    fn a_key_that_is_a_device_or_a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("audit.key");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // Opened without O_NONBLOCK, the FIFO would wait for a writer and the test never end.
        for path in [fifo.as_path(), Path::new("/dev/null")] {
            let refused = Chain::from_key_option(Some(path)).unwrap_err().0;
            assert_eq!(
                refused,
                format!("audit key {}: not a regular file", path.display())
            );
        }
    }

    #[test]
    fn key_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        assert!(Chain::from_key_option(Some(&missing))
            .unwrap_err()
            .0
            .contains("cannot open"));
        let open = dir.path().join("open.key");
        std::fs::write(&open, "0123456789abcdef0123").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(Chain::from_key_option(Some(&open))
            .unwrap_err()
            .0
            .contains("chmod 600"));
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            Chain::from_key_option(Some(&open)).unwrap(),
            Chain::Keyed(_)
        ));
        // Someone else's key, mode 600 or not: refused (chown needs root, which CI is); so is
        // our key through another user's link, or in a folder anyone may write.
        if nix::unistd::geteuid().is_root() {
            let link = dir.path().join("link.key");
            std::os::unix::fs::symlink(&open, &link).unwrap();
            assert!(matches!(
                Chain::from_key_option(Some(&link)).unwrap(),
                Chain::Keyed(_)
            ));
            std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
            let refused = Chain::from_key_option(Some(&link)).unwrap_err().0;
            assert!(refused.contains("is a link of user 65534"), "{refused}");
            let open_folder = dir.path().join("open");
            std::fs::create_dir(&open_folder).unwrap();
            let inside = open_folder.join("audit.key");
            std::fs::copy(&open, &inside).unwrap();
            std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o600)).unwrap();
            // A link of another user's in the middle of a chain of links (a third review).
            let middle = dir.path().join("middle");
            std::os::unix::fs::symlink(&open, &middle).unwrap();
            std::os::unix::fs::lchown(&middle, Some(65534), None).unwrap();
            let chained = dir.path().join("chained.key");
            std::os::unix::fs::symlink(&middle, &chained).unwrap();
            let refused = Chain::from_key_option(Some(&chained)).unwrap_err().0;
            assert!(refused.contains("is a link of user 65534"), "{refused}");
            std::fs::set_permissions(&open_folder, std::fs::Permissions::from_mode(0o777)).unwrap();
            let refused = Chain::from_key_option(Some(&inside)).unwrap_err().0;
            assert!(refused.contains("can be written by anyone"), "{refused}");
            std::fs::set_permissions(&open_folder, std::fs::Permissions::from_mode(0o1777))
                .unwrap();
            assert!(Chain::from_key_option(Some(&inside)).is_ok());
            std::os::unix::fs::chown(&open_folder, Some(65534), None).unwrap();
            let refused = Chain::from_key_option(Some(&inside)).unwrap_err().0;
            assert!(refused.contains("belongs to user 65534"), "{refused}");
            std::os::unix::fs::chown(&open, Some(65534), None).unwrap();
            assert!(Chain::from_key_option(Some(&open))
                .unwrap_err()
                .0
                .contains("it belongs to user 65534"));
        }
        let short = dir.path().join("short.key");
        std::fs::write(&short, "tiny").unwrap();
        std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Chain::from_key_option(Some(&short))
            .unwrap_err()
            .0
            .contains("at least 16"));
    }

    #[test]
    fn the_head_is_read_from_a_long_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut head = Head::genesis();
        let mut text = Vec::new();
        for n in 0..100 {
            let line = seal(
                format!(r#"{{"id":"{n}","pad":"{}"}}"#, "x".repeat(n * 7)).as_bytes(),
                head,
            );
            head = Head {
                link: Chain::Sha256.link(&line),
                seq: head.seq + 1,
            };
            text.extend_from_slice(&line);
            text.push(b'\n');
        }
        std::fs::write(&path, &text).unwrap();
        let mut file = File::open(&path).unwrap();
        assert_eq!(
            read_head(&mut file, text.len() as u64, &Chain::Sha256).unwrap(),
            head
        );
        // A torn last line after them: its seq continues from the line before.
        text.extend_from_slice(br#"{"id":"torn","se"#);
        std::fs::write(&path, &text).unwrap();
        let mut file = File::open(&path).unwrap();
        let torn = read_head(&mut file, text.len() as u64, &Chain::Sha256).unwrap();
        assert_eq!(
            torn,
            Head {
                link: Chain::Sha256.link(br#"{"id":"torn","se"#),
                seq: 101
            }
        );
    }

    #[test]
    fn the_head_is_read_from_the_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, "{\"seq\":1}\n{\"seq\":2}\n").unwrap();
        let mut file = File::open(&path).unwrap();
        let head = read_head(&mut file, 20, &Chain::Sha256).unwrap();
        assert_eq!(
            head,
            Head {
                link: Chain::Sha256.link(b"{\"seq\":2}"),
                seq: 2
            }
        );
        // A torn last line: its bytes are linked, and seq continues from the line before.
        std::fs::write(&path, "{\"seq\":1}\n{\"seq\":2}\n{\"se").unwrap();
        let mut file = File::open(&path).unwrap();
        let head = read_head(&mut file, 24, &Chain::Sha256).unwrap();
        assert_eq!(
            head,
            Head {
                link: Chain::Sha256.link(b"{\"se"),
                seq: 3
            }
        );
    }
}
