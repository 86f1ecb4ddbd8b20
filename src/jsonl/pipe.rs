//! A wider pipe to the next stage: fewer wake-ups for the same bytes.
//!
//! A Linux pipe holds 64 KiB unless asked for more. A stage writes a batch of about that size at
//! once, so with the default each batch fills the pipe: the writer sleeps until the reader has
//! taken it, and both are woken once a batch. Over `sc-gate | sc-approve | sc-exec` on two cores
//! (1M calls, eight alternating rounds, issue 34) the pipes between the stages set to 256 KiB took
//! the wall time from a median of 4.67 s to 4.53 s (512 KiB: 4.47 s; 1 MiB no faster).
//!
//! What it costs others: the kernel counts each pipe's pages against its user's pipe quota
//! (`/proc/sys/fs/pipe-user-pages-soft`, 16,384 pages by default), and a user past it gets pipes
//! of 8 KiB from then on, in every program. A 256 KiB pipe counts 64 pages against the default's
//! 16, so only a stage's stdout is widened (a pipe it writes, not one its caller handed it to read
//! from), and only an anonymous pipe (not a named FIFO, whose pages count against whoever opened
//! it first) made by the stage's own user: a stage run as root, which the quota does not bound,
//! does not charge another user's pipe. A pipe of the overflow uid (`nobody`, which a user
//! namespace shows for every user it does not map) may be anyone's, and is left alone too. One
//! case is not seen: a pipe made by a setuid program shows its effective uid, while its pages
//! count against its real uid. A pipeline of three stages counts up to 192 pages.
//!
//! Widening is a hint only: a pipe the kernel will not widen (a user at its quota; for users other
//! than root, a `/proc/sys/fs/pipe-max-size` under 256 KiB) works as it did.

use std::os::fd::AsFd;

use nix::fcntl::{fcntl, FcntlArg};
use nix::sys::stat::{fstat, SFlag};
use nix::sys::statfs::{fstatfs, FsType};

/// The file system of anonymous pipes (`statfs(2)`'s `f_type`).
const PIPEFS_MAGIC: FsType = FsType(0x5049_5045);

/// The uid a user namespace shows for any user it does not map (`nobody` by default): a pipe of
/// that uid may be anyone's.
const OVERFLOW_UID: u32 = 65534;

/// The size asked for.
pub const WIDE_PIPE_BYTES: i32 = 256 << 10;

/// Asks the kernel to hold up to [`WIDE_PIPE_BYTES`] in `fd` when it is an anonymous pipe of this
/// process's user; anything else (a file, a terminal, a socket, a named FIFO, another user's pipe)
/// is left alone. Says whether the pipe now holds that much.
pub fn widen(fd: impl AsFd) -> bool {
    let fd = fd.as_fd();
    let ours = fstat(fd).is_ok_and(|stat| {
        SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFIFO
            && stat.st_uid == nix::unistd::geteuid().as_raw()
            && stat.st_uid != OVERFLOW_UID
    }) && fstatfs(fd).is_ok_and(|fs| fs.filesystem_type() == PIPEFS_MAGIC);
    if !ours {
        return false;
    }
    if fcntl(fd, FcntlArg::F_GETPIPE_SZ).is_ok_and(|size| size >= WIDE_PIPE_BYTES) {
        return true;
    }
    fcntl(fd, FcntlArg::F_SETPIPE_SZ(WIDE_PIPE_BYTES)).is_ok_and(|size| size >= WIDE_PIPE_BYTES)
}

#[cfg(test)]
#[path = "pipe_tests.rs"]
mod tests;
