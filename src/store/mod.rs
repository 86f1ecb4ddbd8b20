//! Where a crew's state (taint and spend, [`CrewState`]) lives between decisions: in the deciding
//! process's memory, or in a store that the processes of one crew share. Two stores sit behind
//! one trait, [`Store`]:
//!
//! - [`sqlite`]: an embedded SQLite database (WAL), for the processes of one machine; the
//!   default for sc-mcp with `--crew` and for sc-hook, at `state.sqlite` beside the audit log.
//! - [`redis`]: a Redis (7 or later) or Valkey server, `redis://HOST:PORT/DB` or `rediss://` with
//!   TLS, for many machines.
//!
//! Every update is atomic: [`Store::update`] reads a state, lets the decision run on it and
//! writes it back as one step (an `IMMEDIATE` transaction; `WATCH`/`MULTI` with a retry when
//! another process wrote in between), so concurrent processes never lose an update.
//!
//! Beside the states, a store keeps text values by [`ValueKey`] (sc-hook's call links of a
//! session), read, changed and written as one atomic step the same way ([`Store::update_value`]);
//! the store keeps the text as given, and its reader refuses what it did not write.
//!
//! A crew's remembered approvals ([`grants`]) are such a value, one per crew, and so is its
//! inbox ([`inbox`]): the holds its doors wait on, answered from one page.
//!
//! A state is found by its [`StateKey`]: whose it is (a crew, or one sc-hook session) and which
//! stage keeps it (the gate's decisions, or sc-exec's own re-check, which must not count a call
//! a second time). A store that cannot be reached or written, or whose content is not what this
//! program writes, is an error ([`StoreError`]); the doors then never allow the call.

mod backend;
pub mod grants;
pub mod inbox;
mod init;
mod key;
mod list;
mod memory;
pub mod redis;
mod redis_marker;
mod shared;
pub mod spent;
pub mod sqlite;
mod url;

pub(crate) use backend::parse_state;
pub use backend::Store;
pub(crate) use backend::{StoreError, ValueRead, ValueRefused};
pub use init::{InitError, Initialised};
pub use key::*;
pub use memory::MemoryStore;
pub use shared::*;
pub use url::*;

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
