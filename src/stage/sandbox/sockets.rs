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
//! mounted over it ([`super::plan`]), so `connect()` finds no listener. Sockets bound after the
//! sandbox started, or by processes of another network namespace, are not in that list.
//!
//! Why not the kernel's other tools: Landlock's scoping (ABI 6) covers abstract sockets alone,
//! which the network namespace already separates, and no Landlock ABI this kernel has restricts
//! `connect()` to a socket file; seccomp cannot see the address `connect()` is given, so it could
//! only refuse unix sockets altogether, which breaks every program that uses them among its own
//! processes inside (test servers, language servers, `multiprocessing`), and the bridge inside
//! itself.

use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;

/// The kernel's list of bound unix sockets of this network namespace.
pub const PROC_NET_UNIX: &str = "/proc/net/unix";

/// The socket files of the host's bound unix sockets that still exist (absolute paths only).
pub fn host_sockets() -> Vec<PathBuf> {
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
        // This process's own listener is found.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let socket = dir.path().join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        assert!(host_sockets().contains(&socket), "{:?}", host_sockets());
    }
}
