//! The host's unix sockets that a program inside could otherwise connect to.
//!
//! A read-only mount does not stop `connect()` on a unix socket: the kernel asks for write
//! permission on the socket file, not a writable file system. So a socket the sandbox can see is
//! a way out to whatever listens on it: a container runtime (`docker.sock`), the user's ssh or
//! gpg agent, an editor's or a desktop's service. What is already closed:
//! - abstract sockets (`@name`) belong to a network namespace, and the sandbox has its own;
//! - `/tmp`, `/run` (D-Bus, `/run/user/…`, the runtimes' sockets), `/dev` and `/proc` are made
//!   anew inside, and so is `/var/run` where it is a folder rather than the usual link to `/run`;
//! - hidden paths read as empty.
//!
//! The rest is found in the kernel's own list of bound unix sockets of the host's network
//! namespace (`/proc/net/unix`, one read, no walk of the file tree) and each socket file still
//! there, wherever it is (the home folder, the root, `/var/lib`…), gets an empty read-only file
//! mounted over it ([`super::plan`]), so `connect()` finds no listener. The list is the kernel's
//! socket diagnostics (as `ss -x` reads it), not the text of `/proc/net/unix`: a name is given
//! byte for byte (a newline in it would split a line of the text), and with the device and inode
//! of its file, so a name is checked to be that very socket. A name bound relative to a working
//! folder (how a path longer than `sun_path`'s 108 bytes is bound) is looked for in the working
//! folder of each process of this user holding the socket. Sockets bound after the sandbox
//! started, by processes of another network namespace, or relative to a folder their process has
//! since left, are not found.
//!
//! Why not the kernel's other tools: Landlock's scoping (ABI 6) covers abstract sockets alone,
//! which the network namespace already separates, and no Landlock ABI this kernel has restricts
//! `connect()` to a socket file; seccomp cannot see the address `connect()` is given, so it could
//! only refuse unix sockets altogether, which breaks every program that uses them among its own
//! processes inside (test servers, language servers, `multiprocessing`), and the bridge inside
//! itself.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The kernel's list of bound unix sockets of this network namespace.
pub const PROC_NET_UNIX: &str = "/proc/net/unix";

/// One bound unix socket, as the kernel's socket diagnostics tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The name it was bound with, byte for byte (relative, with newlines, whatever it was).
    pub name: Vec<u8>,
    /// The socket's own inode (what `/proc/PID/fd` links show as `socket:[INODE]`).
    pub inode: u32,
    /// The socket file's device (the kernel's encoding) and inode.
    pub file: Option<(u32, u32)>,
}

/// The socket files of the host's bound unix sockets that can be found: each name the kernel's
/// socket diagnostics give (exact bytes, whatever they hold), checked to be that very socket file
/// by its device and inode; a relative name is looked for in the working folder of each process
/// of this user that holds the socket. Without socket diagnostics, the names of
/// `/proc/net/unix` that are absolute and plain.
pub fn host_sockets() -> Vec<PathBuf> {
    let bound = match diag::dump() {
        Ok(bound) => bound,
        Err(_) => return from_proc_table(),
    };
    let mut found = Vec::new();
    let mut holders: Option<HashMap<u32, Vec<PathBuf>>> = None;
    for socket in &bound {
        let Some(file) = socket.file else { continue };
        let name = Path::new(OsStr::from_bytes(&socket.name));
        if name.is_absolute() && is_that_socket(name, file) {
            found.push(name.to_owned());
            continue;
        }
        // A relative name, or one whose file was moved: where the holders are.
        let cwds = holders.get_or_insert_with(holders_working_folders);
        for cwd in cwds.get(&socket.inode).into_iter().flatten() {
            let candidate = cwd.join(name);
            if is_that_socket(&candidate, file) {
                found.push(candidate);
                break;
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Whether `path` is the socket file `(dev, ino)` (the device in the kernel's encoding).
fn is_that_socket(path: &Path, (dev, ino): (u32, u32)) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| {
        meta.file_type().is_socket()
            && meta.ino() == u64::from(ino)
            && kernel_dev(meta.dev()) == dev
    })
}

/// A device number as `stat` gives it, in the kernel's own encoding (major << 20 | minor).
fn kernel_dev(dev: u64) -> u32 {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    ((major << 20) | (minor & 0xf_ffff)) as u32
}

/// For each socket inode held by a process this user can look into, the working folders of the
/// processes holding it.
fn holders_working_folders() -> HashMap<u32, Vec<PathBuf>> {
    let mut held: HashMap<u32, Vec<PathBuf>> = HashMap::new();
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return held;
    };
    for process in processes.flatten() {
        let pid = process.path();
        if !pid
            .file_name()
            .is_some_and(|n| n.as_bytes().iter().all(u8::is_ascii_digit))
        {
            continue;
        }
        let (Ok(cwd), Ok(fds)) = (
            std::fs::read_link(pid.join("cwd")),
            std::fs::read_dir(pid.join("fd")),
        ) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let inode = target
                .as_os_str()
                .as_bytes()
                .strip_prefix(b"socket:[")
                .and_then(|rest| rest.strip_suffix(b"]"))
                .and_then(|digits| std::str::from_utf8(digits).ok())
                .and_then(|digits| digits.parse::<u32>().ok());
            if let Some(inode) = inode {
                let cwds = held.entry(inode).or_default();
                if !cwds.contains(&cwd) {
                    cwds.push(cwd.clone());
                }
            }
        }
    }
    held
}

/// The plain absolute names of `/proc/net/unix` that are socket files now.
fn from_proc_table() -> Vec<PathBuf> {
    let Ok(table) = std::fs::read(PROC_NET_UNIX) else {
        return Vec::new();
    };
    paths(&String::from_utf8_lossy(&table))
        .into_iter()
        .filter(|path| {
            std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_socket())
        })
        .collect()
}

/// The kernel's unix socket diagnostics (`NETLINK_SOCK_DIAG`, `SOCK_DIAG_BY_FAMILY` for
/// `AF_UNIX`): every bound socket of this network namespace with its name, byte for byte, and
/// the device and inode of its file. `ss -x` reads the same.
mod diag {
    use super::Bound;
    use std::io;

    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const NLMSG_ERROR: u16 = 2;
    const NLMSG_DONE: u16 = 3;
    const UDIAG_SHOW_NAME: u32 = 1;
    const UDIAG_SHOW_VFS: u32 = 2;
    const UNIX_DIAG_NAME: u16 = 0;
    const UNIX_DIAG_VFS: u16 = 1;
    const HEADER: usize = 16;
    const MESSAGE: usize = 16;

    pub fn dump() -> io::Result<Vec<Bound>> {
        // SAFETY: a new socket, owned below.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just made and is this function's alone.
        let socket = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        let mut request = Vec::with_capacity(40);
        request.extend_from_slice(&40u32.to_ne_bytes());
        request.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
        request.extend_from_slice(&flags.to_ne_bytes());
        request.extend_from_slice(&1u32.to_ne_bytes());
        request.extend_from_slice(&0u32.to_ne_bytes());
        request.extend_from_slice(&[libc::AF_UNIX as u8, 0, 0, 0]);
        request.extend_from_slice(&u32::MAX.to_ne_bytes());
        request.extend_from_slice(&0u32.to_ne_bytes());
        request.extend_from_slice(&(UDIAG_SHOW_NAME | UDIAG_SHOW_VFS).to_ne_bytes());
        request.extend_from_slice(&[0xff; 8]);
        let raw = std::os::fd::AsRawFd::as_raw_fd(&socket);
        // SAFETY: the buffer is valid for its length.
        let sent = unsafe { libc::send(raw, request.as_ptr().cast(), request.len(), 0) };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut found = Vec::new();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: the buffer is valid for its length.
            let n = unsafe { libc::recv(raw, buffer.as_mut_ptr().cast(), buffer.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            if parse(&buffer[..n as usize], &mut found)? {
                return Ok(found);
            }
        }
    }

    /// Reads one datagram of messages into `found`; `true` at the end of the dump.
    pub fn parse(mut bytes: &[u8], found: &mut Vec<Bound>) -> io::Result<bool> {
        let bad = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "a malformed diagnostics message",
            )
        };
        let u16_at = |b: &[u8], at: usize| u16::from_ne_bytes([b[at], b[at + 1]]);
        let u32_at =
            |b: &[u8], at: usize| u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        while bytes.len() >= HEADER {
            let len = u32_at(bytes, 0) as usize;
            if len < HEADER || len > bytes.len() {
                return Err(bad());
            }
            let kind = u16_at(bytes, 4);
            let message = &bytes[HEADER..len];
            match kind {
                NLMSG_DONE => return Ok(true),
                NLMSG_ERROR => {
                    let errno = if message.len() >= 4 {
                        -(u32_at(message, 0) as i32)
                    } else {
                        0
                    };
                    return Err(io::Error::from_raw_os_error(errno));
                }
                SOCK_DIAG_BY_FAMILY if message.len() >= MESSAGE => {
                    let inode = u32_at(message, 4);
                    let mut name = None;
                    let mut file = None;
                    let mut attributes = &message[MESSAGE..];
                    while attributes.len() >= 4 {
                        let attr_len = u16_at(attributes, 0) as usize;
                        if attr_len < 4 || attr_len > attributes.len() {
                            return Err(bad());
                        }
                        let data = &attributes[4..attr_len];
                        match u16_at(attributes, 2) {
                            UNIX_DIAG_NAME => name = Some(data.to_vec()),
                            UNIX_DIAG_VFS if data.len() >= 8 => {
                                file = Some((u32_at(data, 4), u32_at(data, 0)))
                            }
                            _ => {}
                        }
                        let step = (attr_len + 3) & !3;
                        attributes = attributes.get(step..).unwrap_or_default();
                    }
                    // An abstract name starts with a zero byte; a path name ends with one.
                    if let Some(mut name) = name.filter(|n| n.first().is_some_and(|b| *b != 0)) {
                        while name.last() == Some(&0) {
                            name.pop();
                        }
                        found.push(Bound { name, inode, file });
                    }
                }
                _ => {}
            }
            let step = (len + 3) & !3;
            bytes = bytes.get(step..).unwrap_or_default();
        }
        Ok(false)
    }
}

/// The absolute paths in a `/proc/net/unix` table: after its seven fixed columns, a bound
/// socket's name (`@…` for an abstract one, nothing for an unnamed one).
pub fn paths(table: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut rest = line;
            for _ in 0..7 {
                rest = rest.trim_start();
                rest = &rest[rest.find(' ')?..];
            }
            let name = rest.strip_prefix(' ')?;
            name.starts_with('/').then(|| PathBuf::from(name))
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_table_gives_the_socket_files() {
        let table = "Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 23456 /home/me/.gnupg/S.gpg-agent
0000000000000000: 00000002 00000000 00010000 0001 01    77 /srv/with space.sock
0000000000000000: 00000003 00000000 00000000 0001 03 1057
0000000000000000: 00000002 00000000 00010000 0001 01 23457 @/tmp/.X11-unix/X0
0000000000000000: 00000002 00000000 00010000 0005 01 23458 relative.sock
0000000000000000: 00000002 00000000 00010000 0001 01 23459 /home/me/.gnupg/S.gpg-agent
";
        assert_eq!(
            paths(table),
            vec![
                PathBuf::from("/home/me/.gnupg/S.gpg-agent"),
                PathBuf::from("/srv/with space.sock"),
            ]
        );
        // This process's own listeners are found, a name with a newline and other bytes too.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let socket = base.join("s.sock");
        let odd = base.join(OsStr::from_bytes(b"new\nline \x01\xff.sock"));
        let _listeners =
            [&socket, &odd].map(|path| std::os::unix::net::UnixListener::bind(path).unwrap());
        let found = host_sockets();
        assert!(found.contains(&socket), "{found:?}");
        assert!(found.contains(&odd), "{found:?}");
        assert_eq!(kernel_dev(libc::makedev(8, 1)), (8 << 20) | 1);
        assert_eq!(kernel_dev(libc::makedev(259, 300)), (259 << 20) | 300);
    }
}
