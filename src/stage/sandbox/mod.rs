//! `sc-sandbox`: runs a program so that, whatever it is, it keeps the promises the rules make for
//! it. The kernel keeps them, through field-standard parts, not through reading the command:
//!
//! - bubblewrap (`bwrap`) makes the namespaces and the mounts ([`bwrap`]): `/` read-only, the root,
//!   a private `/tmp` and the policy's `writable` folders writable, `readOnly` paths and the gate's
//!   own files read-only again, `hidden` paths empty ([`plan`]), every way git finds config and
//!   hooks protected once a `.git` path is ([`git`]), the host's unix sockets covered
//!   ([`sockets`]); a new network namespace with only `lo`, a new PID namespace with a fresh
//!   `/proc`, a new session, no capabilities;
//! - a seccomp filter ([`seccomp`]) refuses socket families other than `AF_UNIX`, `AF_INET` and
//!   `AF_INET6`, and io_uring (which makes sockets without `socket()`); bwrap sets
//!   `no_new_privs` with it;
//! - the only way out is an HTTP proxy: inside, a loopback listener ([`bridge`], run by
//!   sc-sandbox itself re-executed in the hidden mode of [`inside`]) forwards each connection
//!   over a unix socket to sc-sandbox outside ([`proxy`]), which decides against
//!   `sandbox.network.allow`, resolves the name, checks the addresses, connects, and audits the
//!   attempt ([`events`]).
//! - only a bubblewrap owned by root, in folders only root can write, is run
//!   ([`bwrap::locate`]); it and the binaries of the doors and of the sandbox stay read-only in
//!   every run, wherever they lie ([`machinery`]).
//!
//! Everything sc-sandbox itself fails at ends with [`EXIT_SANDBOX_FAILURE`] (125) before the
//! program runs; it never runs a program unconfined. [`run`] is the outside: it is what the
//! binary calls. Doors that confine a call (sc-hook, sc-exec, sc-mcp) go through the one
//! [`door`]: it checks that the sandbox can be made here and gives the [`Invocation`] that starts
//! the sc-sandbox binary.

pub mod bridge;
pub mod bwrap;
pub mod door;
pub mod events;
pub mod files;
pub mod git;
pub mod inside;
pub mod invocation;
pub mod machinery;
pub mod plan;
pub mod prepared;
pub mod probe;
pub mod program;
pub mod proxy;
pub mod relay;
pub mod remembered;
pub mod request;
pub mod run;
pub mod seccomp;
pub mod sharing;
pub mod sockets;
pub mod unconfinable;
pub mod walk;

use std::path::PathBuf;

pub use events::Who;
pub use invocation::Invocation;
pub use plan::Sandbox;
pub use run::{run, run_to_status, Ended, RunOptions};
pub use unconfinable::Unconfinable;

/// The exit status of every failure of sc-sandbox itself: the program did not run.
pub const EXIT_SANDBOX_FAILURE: u8 = 125;

/// The hidden first argument that makes sc-sandbox the sandbox's first process ([`inside`]).
pub const INSIDE_FLAG: &str = "--sc-sandbox-inside";

/// Where sc-sandbox's own files appear inside the sandbox (on its private `/tmp`): the unix
/// socket of the proxy and the helper binary.
pub const INSIDE_DIR: &str = "/tmp/.sc-sandbox";
/// The proxy's unix socket inside the sandbox.
pub const INSIDE_SOCKET: &str = "/tmp/.sc-sandbox/proxy.sock";
/// The helper (sc-sandbox itself) inside the sandbox.
pub const INSIDE_HELPER: &str = "/tmp/.sc-sandbox/init";

/// Why a sandbox could not be made or run. Each is exit status 125 for sc-sandbox, and a held
/// call with this reason for a door.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Policy(#[from] crate::error::PolicyError),
    #[error("bubblewrap is missing: {0}")]
    BwrapMissing(String),
    #[error("bubblewrap is not trusted: {0}")]
    BwrapUntrusted(String),
    #[error("{what} {}: {why}", path.display())]
    Place {
        what: String,
        path: PathBuf,
        why: String,
    },
    #[error("the sandbox's {entry} names the home folder, and no home folder is known (give --home, or set HOME)")]
    NoHome { entry: String },
    #[error("{} is protected, but the path to it goes through the symbolic link {} in a writable folder, which the program could replace; point the rule at the link's target, or replace the link by the folder", path.display(), link.display())]
    SymlinkInWritable { path: PathBuf, link: PathBuf },
    #[error("cannot compile the seccomp filter: {0}")]
    Seccomp(String),
    #[error("audit log: {0:#}")]
    Audit(anyhow::Error),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the sandbox could not start: {0}")]
    Start(String),
}

impl SandboxError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SandboxError {
        let what = what.into();
        move |source| SandboxError::Io { what, source }
    }
}
