//! The door of sc-exec and sc-mcp to sc-sandbox: a tools-file entry with `"sandbox": true`, and
//! the MCP server under `sc-mcp --sandbox`, run inside sc-sandbox with the door's policy file
//! (its `sandbox` key's paths and network; `when` is not read: these always confine), root
//! (`--root`, else the working folder), home, audit log and key, state store, agent and crew.
//!
//! It is the one door sc-hook uses too ([`crate::stage::sandbox::door`]): the same checks, in
//! the same order, with the same reasons. sc-exec checks the kernel when the backend runs
//! ([`Check::AtRun`]); sc-mcp makes the sandbox once around `true` before its server starts
//! ([`Check::Trial`]). Where the sandbox cannot be made, the program is never run unconfined.

pub use crate::stage::sandbox::door::{sandbox_failure, Check, Confined, ReportPipe, SandboxDoor};
