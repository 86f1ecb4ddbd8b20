//! The rules, one concern a file: what a policy says ([`policy`], [`argrules`]), the decision
//! ([`decision`]) over a call and the crew's state ([`state`]). The types they share sit below
//! them: [`verdict`] (a decision and its reasons), [`tools`] (tool patterns), [`names`]
//! (did-you-mean), and `keys`: the helpers of every key's reader and their error, which names
//! the key path and becomes the [`crate::error::PolicyError`] at the loader.
//!
//! For coding agents, rules that read what a call does, not only which tool it names: the shell
//! command of a `Bash`-like tool ([`commands`]) and the file path of a file tool ([`paths`]).
//! Both are pure: a policy key is checked once into compiled rules, and a decision is a function
//! of the rules and the call's text. [`shell`] turns a command line into the simple commands it
//! runs, with a real bash parser.

pub mod address;
pub mod agent_name;
pub mod argrules;
pub mod coding;
pub mod decision;
mod ecma;
pub mod fetch;
pub mod git;
pub mod grant;
pub mod granting;
pub mod names;
pub mod policy;
pub mod provenance;
pub mod provenance_rules;
mod schema;
pub mod state;
pub mod tokens;
pub mod tools;

pub mod command_paths;
pub mod commands;
mod operands;
pub mod paths;
pub mod sandbox;
pub mod shell;

mod keys;

pub use command_paths::{decide_command, decide_command_confined};
