//! The audit log, one concern a file: [`log`] appends events (and mints call ids), [`file`] opens
//! the log's file and refuses one that is not a regular file, [`chain`]
//! links each line to the one before, [`deferred`] lets the thread that appends write an event
//! that repeats its record, [`head`] begins every event line, [`verify`] walks a log's chain. Reading a log back: `blocks`
//! hands out its lines a block at a time on a second thread, `scan` reads an event line's
//! top-level members (and its chain fields) in one strict pass. The writer's items are
//! re-exported here, so `audit::AuditLog` and `audit::event` read as before.

pub(crate) mod blocks;
pub mod chain;
pub(crate) mod deferred;
pub mod file;
pub(crate) mod head;
pub mod log;
pub(crate) mod scan;
pub mod seal;
pub mod verify;

pub use log::*;
