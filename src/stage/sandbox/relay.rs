//! Copying bytes both ways between two connections until both directions end: the bridge's
//! loopback-to-unix hop inside, and the proxy's unix-to-host hop outside.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;

/// A connection that can be split into a reading and a writing half, each of which says when it
/// has no more to send.
pub trait Duplex: Read + Write + Send + Sized + 'static {
    fn split(&self) -> io::Result<Self>;
    fn end_writes(&self);
    fn end_reads(&self);
}

impl Duplex for TcpStream {
    fn split(&self) -> io::Result<Self> {
        self.try_clone()
    }
    fn end_writes(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
    fn end_reads(&self) {
        let _ = self.shutdown(Shutdown::Read);
    }
}

impl Duplex for UnixStream {
    fn split(&self) -> io::Result<Self> {
        self.try_clone()
    }
    fn end_writes(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
    fn end_reads(&self) {
        let _ = self.shutdown(Shutdown::Read);
    }
}

/// Copies `a` to `b` and `b` to `a` until both sides have ended; one direction on a thread of its
/// own. A side that ends (or fails) passes its end on as a half-close, as a TCP relay should.
pub fn relay<A: Duplex, B: Duplex>(a: A, b: B) -> io::Result<()> {
    let (a_reader, b_reader) = (a.split()?, b.split()?);
    let forward = std::thread::Builder::new()
        .name("sc-sandbox relay".into())
        .spawn(move || copy_then_end(a_reader, b))?;
    copy_then_end(b_reader, a);
    let _ = forward.join();
    Ok(())
}

fn copy_then_end<R: Duplex, W: Duplex>(mut from: R, mut to: W) {
    let _ = io::copy(&mut from, &mut to);
    let _ = to.flush();
    to.end_writes();
    from.end_reads();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_go_both_ways_and_ends_pass_on() {
        let (inner_a, outer_a) = UnixStream::pair().unwrap();
        let (inner_b, outer_b) = UnixStream::pair().unwrap();
        let relaying = std::thread::spawn(move || relay(inner_a, inner_b).unwrap());
        let (mut a, mut b) = (outer_a, outer_b);
        a.write_all(b"ping").unwrap();
        a.shutdown(Shutdown::Write).unwrap();
        let mut got = Vec::new();
        b.read_to_end(&mut got).unwrap_or_default();
        assert_eq!(got, b"ping");
        b.write_all(b"pong").unwrap();
        b.shutdown(Shutdown::Write).unwrap();
        let mut back = Vec::new();
        a.read_to_end(&mut back).unwrap();
        assert_eq!(back, b"pong");
        relaying.join().unwrap();
    }
}
