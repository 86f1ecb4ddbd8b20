//! The audit log, one concern a file: [`log`] appends events (and mints call ids), [`chain`]
//! links each line to the one before, [`verify`] walks a log's chain. The writer's items are
//! re-exported here, so `audit::AuditLog` and `audit::event` read as before.

pub mod chain;
pub mod log;
pub mod seal;
pub mod verify;

pub use log::*;
