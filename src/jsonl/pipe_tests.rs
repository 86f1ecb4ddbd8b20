use std::io::{Read, Write};

use super::*;

#[test]
fn a_pipe_is_widened_from_either_end() {
    for end in 0..2 {
        // Close-on-exec: a child another test spawns meanwhile must not hold the write end open.
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let fds = [&read, &write];
        assert_eq!(fcntl(fds[1 - end], FcntlArg::F_GETPIPE_SZ).unwrap(), 65536);
        assert!(widen(fds[end]), "end {end}");
        assert_eq!(
            fcntl(fds[1 - end], FcntlArg::F_GETPIPE_SZ).unwrap(),
            WIDE_PIPE_BYTES,
            "the other end sees the same pipe"
        );
        // Asked again, it is already wide.
        assert!(widen(fds[end]));
        // And it still carries bytes in order.
        let mut writer = std::fs::File::from(write);
        writer.write_all(b"{\"a\":1}\n").unwrap();
        drop(writer);
        let mut text = String::new();
        std::fs::File::from(read).read_to_string(&mut text).unwrap();
        assert_eq!(text, "{\"a\":1}\n");
    }
}

#[test]
fn a_file_is_left_alone() {
    let file = tempfile::tempfile().unwrap();
    assert!(!widen(&file));
}

#[test]
fn a_socket_is_left_alone() {
    let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    assert!(!widen(&a));
}
