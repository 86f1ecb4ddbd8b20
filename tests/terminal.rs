//! A pseudo-terminal for process tests: the child's controlling terminal, so that its
//! `/dev/tty` is a screen the test reads and a keyboard it types on — what users have.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::unistd::setsid;

/// How a child is connected to a terminal.
pub enum Tty {
    /// A fresh pty, the child's controlling terminal.
    Pty,
    /// A new session with no controlling terminal (so a developer's own terminal is never asked).
    None,
}

/// The test's side of a child's terminal.
pub struct Terminal {
    /// The master side, for typing.
    keyboard: Option<File>,
    /// Everything the child wrote to its terminal so far.
    screen: Arc<Mutex<Vec<u8>>>,
    /// How far `wait_for` has read the screen: each wait looks only at newer text.
    seen: usize,
    /// The test's copy of the slave side, held until the child has ended: between exec and the
    /// child's opening /dev/tty no other copy is open, and the master would read EIO.
    slave: Option<OwnedFd>,
    master: Option<OwnedFd>,
    reader: Option<JoinHandle<()>>,
}

fn set_cloexec(fd: &OwnedFd) {
    // So that processes other tests spawn meanwhile do not keep this pty open.
    fcntl(fd.as_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).expect("FD_CLOEXEC");
}

impl Terminal {
    /// Sets `cmd` up to run in a session of its own, with a fresh pty as its controlling terminal
    /// for `Tty::Pty`. Call [`Terminal::start`] once the child is spawned.
    pub fn attach(cmd: &mut Command, tty: Tty) -> Terminal {
        let mut terminal = Terminal {
            keyboard: None,
            screen: Arc::new(Mutex::new(Vec::new())),
            seen: 0,
            slave: None,
            master: None,
            reader: None,
        };
        match tty {
            Tty::Pty => {
                let pty = nix::pty::openpty(None, None).expect("openpty");
                set_cloexec(&pty.master);
                set_cloexec(&pty.slave);
                let slave_fd = pty.slave.as_raw_fd();
                // SAFETY: only async-signal-safe calls (setsid, ioctl) run between fork and exec.
                unsafe {
                    cmd.pre_exec(move || {
                        setsid()?;
                        if nix::libc::ioctl(slave_fd, nix::libc::TIOCSCTTY, 0) == -1 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
                terminal.master = Some(pty.master);
                terminal.slave = Some(pty.slave);
            }
            Tty::None => {
                // SAFETY: setsid is async-signal-safe.
                unsafe {
                    cmd.pre_exec(|| {
                        setsid()?;
                        Ok(())
                    });
                }
            }
        }
        terminal
    }

    /// Starts reading the screen (after the child is spawned).
    pub fn start(&mut self) {
        let Some(master) = self.master.take() else {
            return;
        };
        let mut display = File::from(master);
        self.keyboard = Some(display.try_clone().expect("dup the pty master"));
        let screen = Arc::clone(&self.screen);
        self.reader = Some(thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            loop {
                match display.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => screen.lock().unwrap().extend_from_slice(&chunk[..n]),
                    Err(err) if err.kind() == ErrorKind::Interrupted => continue,
                    // EIO: every slave descriptor is closed, the child is gone.
                    Err(_) => break,
                }
            }
        }));
    }

    pub fn screen_text(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Waits until `text` shows up on the terminal after what earlier waits matched, and returns
    /// the screen; panics with the screen so far after `limit`.
    pub fn wait_for(&mut self, text: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            {
                let screen = self.screen.lock().unwrap();
                let fresh = &screen[self.seen.min(screen.len())..];
                if let Some(at) = fresh.windows(text.len()).position(|w| w == text.as_bytes()) {
                    self.seen += at + text.len();
                    return String::from_utf8_lossy(&screen).into_owned();
                }
            }
            if Instant::now() >= deadline {
                panic!(
                    "{text:?} did not show up on the terminal within {limit:?}; the screen so far:\n{}",
                    self.screen_text()
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types raw bytes on the terminal.
    pub fn type_bytes(&mut self, bytes: &[u8]) {
        let keyboard = self.keyboard.as_mut().expect("this run has a terminal");
        keyboard.write_all(bytes).expect("type on the pty");
        keyboard.flush().unwrap();
    }

    /// Types a line and Enter.
    pub fn type_line(&mut self, line: &str) {
        self.type_bytes(format!("{line}\n").as_bytes());
    }

    /// Once the child has ended: lets go of the slave so the screen reader drains and ends, waits
    /// for it (up to `limit`), and returns the whole screen.
    pub fn close(&mut self, limit: Duration) -> Vec<u8> {
        self.slave = None;
        if let Some(reader) = self.reader.take() {
            let deadline = Instant::now() + limit;
            while !reader.is_finished() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(10));
            }
        }
        self.screen.lock().unwrap().clone()
    }
}
