//! The audit log's hash chain: what makes a deleted, edited, inserted or reordered line visible.
//!
//! Every event carries `seq` (its place in the file's chain, from 1) and `prev`: the SHA-256 of the
//! previous line's exact bytes (without its newline), or, with a key, the HMAC-SHA-256 under that
//! key. The first event of a file has `prev` = [`GENESIS`]. The *head* is the link of the last
//! line: store it elsewhere (`sc-report --head`) and `--expect-head` also catches a cut-off tail.
//!
//! What it protects against: anyone who edits, deletes, inserts or reorders lines inside the log
//! without recomputing every later link; with a key, anyone without the key, even one who rewrites
//! the whole file. What it does not: an attacker who holds the key; one who deletes the whole file
//! or cuts its tail (unless the head was stored elsewhere); and, unkeyed, one who recomputes the
//! chain from the point of the edit on.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::exit::UsageError;

/// The `prev` of a file's first event.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Names an environment variable holding the key file's path, for `--audit-key`.
pub const AUDIT_KEY_ENV: &str = "SC_AUDIT_KEY_FILE";
const MIN_KEY_BYTES: usize = 16;

/// A link: the digest of one line, shown as 64 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Link(pub [u8; 32]);

impl Link {
    pub fn genesis() -> Link {
        Link([0; 32])
    }

    pub fn parse(hex: &str) -> Option<Link> {
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Link(bytes))
    }
}

impl Link {
    /// The 64 lowercase hex digits.
    pub fn hex(&self) -> [u8; 64] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
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
    /// The link of one line (its bytes without the newline).
    pub fn link(&self, line: &[u8]) -> Link {
        match self {
            Chain::Sha256 => Link(Sha256::digest(line).into()),
            Chain::Keyed(key) => {
                let mut mac =
                    Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
                mac.update(line);
                Link(mac.finalize().into_bytes().into())
            }
        }
    }

    /// The chain for `--audit-key FILE`, else for the file named by `SC_AUDIT_KEY_FILE`, else
    /// unkeyed. A named key file that is missing, unreadable, too short, or readable or writable
    /// by anyone but its owner is a usage error (exit 2): a keyed log never silently goes unkeyed.
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
        let mut file = File::open(path).map_err(|err| fail(format!("cannot open it: {err}")))?;
        let meta = file.metadata().map_err(|err| fail(err.to_string()))?;
        if !meta.is_file() {
            return Err(fail("not a regular file".into()));
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

/// Where a file's chain ends: the link of its last line and that line's `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub link: Link,
    pub seq: u64,
}

impl Head {
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
pub fn seal_into(out: &mut Vec<u8>, line: &[u8], head: Head) {
    let body = line.strip_suffix(b"}").expect("an event is a JSON object");
    out.reserve(body.len() + 100);
    out.extend_from_slice(body);
    if body.len() > 1 {
        out.push(b',');
    }
    out.extend_from_slice(b"\"seq\":");
    crate::jsonl::push_u64(out, head.seq + 1);
    out.extend_from_slice(b",\"prev\":\"");
    out.extend_from_slice(&head.link.hex());
    out.extend_from_slice(b"\"}");
}

/// Reads the head of a file of `len` bytes from its last line: the link of that line and the
/// `seq` it carries (or the nearest earlier line's, for a torn last line).
pub fn read_head(file: &mut File, len: u64, chain: &Chain) -> io::Result<Head> {
    if len == 0 {
        return Ok(Head::genesis());
    }
    // Another writer moved the file on since our last append (as the stages of a pipeline do
    // all the time): the last line is nearly always in the last few KiB, and whole.
    const SHORT_TAIL: u64 = 4 * 1024;
    if len > SHORT_TAIL {
        let mut tail = vec![0u8; SHORT_TAIL as usize];
        std::os::unix::fs::FileExt::read_exact_at(&*file, &mut tail, len - SHORT_TAIL)?;
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
        if let Some(at) = body.iter().rposition(|&b| b == b'\n') {
            let last = &body[at + 1..];
            if let Some(seq) = seq_of(last) {
                return Ok(Head {
                    link: chain.link(last),
                    seq,
                });
            }
        }
    }
    const TAIL: u64 = 64 * 1024;
    let mut start = len.saturating_sub(TAIL);
    loop {
        file.seek(SeekFrom::Start(start))?;
        let mut tail = Vec::with_capacity((len - start) as usize);
        file.by_ref().take(len - start).read_to_end(&mut tail)?;
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
        let line_start = body.iter().rposition(|&b| b == b'\n').map(|i| i + 1);
        match line_start {
            Some(at) => {
                let last = &body[at..];
                // A torn last line has no seq of its own: it took the place after the line before.
                let seq = seq_of(last)
                    .or_else(|| {
                        let earlier = body[..at].split(|&b| b == b'\n').rev();
                        earlier.take(64).find_map(seq_of).map(|s| s + 1)
                    })
                    .unwrap_or(0);
                return Ok(Head {
                    link: chain.link(last),
                    seq,
                });
            }
            None if start == 0 => {
                return Ok(Head {
                    link: chain.link(body),
                    seq: seq_of(body).unwrap_or(0),
                });
            }
            None => start = start.saturating_sub(TAIL * 16),
        }
    }
}

/// The `seq` of an event line, if it is a JSON object carrying one.
pub fn seq_of(line: &[u8]) -> Option<u64> {
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
