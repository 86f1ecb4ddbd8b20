//! The call record: what an agent asks a tool to do, and who ordered it.
//!
//! One JSON object per line (see docs/pipeline.md, "Calls"):
//! `{"agent":"buyer","tool":"send_payment","args":{"to":"acme-travel","amount":750},"source":"user","instruction":"Pay for the trip"}`
//!
//! `agent` and `tool` are required non-empty strings, `args` an optional object, `instruction` an
//! optional string. `source` is read as provenance: anything but `user`, `agent` or
//! `untrusted-content` (missing, misspelt, not a string) counts as `untrusted-content`, and the
//! reasons say so. Other keys are kept in the record and ignored by the rules. A call that breaks
//! these rules is [`Malformed`], which the decision turns into a deny.

mod keys;
mod model;
mod parse;
mod scan;

pub(crate) use keys::{fold_key, keys_may_fold_alike, keys_spelt_alike};
pub use model::*;

#[cfg(test)]
#[path = "call_tests.rs"]
mod tests;
