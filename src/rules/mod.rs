//! Rules that read what a coding agent's call does, not only which tool it names: the shell
//! command of a `Bash`-like tool ([`commands`]) and the file path of a file tool ([`paths`]).
//!
//! Both are pure: a policy key is checked once into compiled rules, and a decision is a function
//! of the rules and the call's text. [`shell`] turns a command line into the simple commands it
//! runs, with a real bash parser.

pub mod commands;
pub mod paths;
pub mod shell;

mod keys;
