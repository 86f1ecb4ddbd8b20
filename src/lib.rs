//! Skeleton Crew: a safety gate between a crew of AI agents and their tools.
//!
//! Content is data, not an instruction: only a trusted source may order a tool call, risky calls
//! wait for a person, and every decision is written to an audit log. The data's way through the
//! library follows the pipeline: [`jsonl`] reads lines, [`call`] parses them, [`decision`] decides
//! under a [`policy`], [`audit`] writes the event, and [`record`] is what each stage writes.

pub mod amount;
pub mod approve;
pub mod audit;
pub mod backends;
pub mod call;
pub mod cli;
pub mod exec;
pub mod exit;
pub mod gate;
pub mod hook;
pub mod json_write;
pub mod jsonl;
pub mod mcp;
pub mod record;
pub mod report;
pub mod rules;
pub mod sandbox;
pub mod sanitize;
pub mod store;
pub mod strict_json;
pub mod tools;

// Paths from before the audit log became a folder.
pub use audit::{chain, verify};
// Paths from before the rules became a folder.
pub use rules::{argrules, decision, policy, state};
