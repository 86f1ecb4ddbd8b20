//! The bridge inside: a listener on the sandbox's own loopback (the network namespace has nothing
//! else) that forwards each connection, byte for byte, over the unix socket bound into the sandbox
//! to the proxy outside. It decides nothing: the proxy outside does, so a program that talks to
//! the unix socket directly gains nothing.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use super::relay::relay;

/// Listens on `127.0.0.1` (a free port) and forwards on a thread of its own; returns the address
/// to put in the proxy variables.
pub fn start(socket: &Path) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let address = listener.local_addr()?;
    let socket = socket.to_owned();
    std::thread::Builder::new()
        .name("sc-sandbox bridge".into())
        .spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let socket = socket.clone();
                let _ = std::thread::Builder::new()
                    .name("sc-sandbox bridge client".into())
                    .spawn(move || forward(client, &socket));
            }
        })?;
    Ok(address)
}

fn forward(client: TcpStream, socket: &PathBuf) {
    match UnixStream::connect(socket) {
        Ok(outside) => {
            let _ = relay(client, outside);
        }
        Err(err) => {
            use std::io::Write;
            let body = format!("sc-sandbox: the proxy outside cannot be reached: {err}\n");
            let _ = write!(
                &client,
                "HTTP/1.1 502 Bad Gateway\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    }
}
