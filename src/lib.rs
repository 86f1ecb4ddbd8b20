//! Skeleton Crew: a safety gate between a crew of AI agents and their tools.
//!
//! Content is data, not an instruction: only a trusted source may order a tool call, risky calls
//! wait for a person, and every decision is written to an audit log. The data's way through the
//! library follows the pipeline: [`jsonl`] reads lines, [`call`] parses them, [`decision`] decides
//! under a [`policy`], [`audit`] writes the event, and [`record`] is what each stage writes.

pub mod amount;
pub mod approve;
pub mod audit;
pub mod call;
pub mod cli;
pub mod error;
pub mod exit;
pub mod hex;
pub(crate) mod json_lex;
pub mod json_write;
pub mod jsonl;
pub mod record;
pub mod rules;
pub mod sanitize;
pub mod stage;
pub mod store;
pub mod strict_json;
pub mod verdict;
