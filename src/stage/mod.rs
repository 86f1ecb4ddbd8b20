//! The stages: what each binary runs, one folder or file each, each reaching the layers below
//! (rules, state, audit, approve) and never another stage's insides.

pub mod approve;
pub mod door;
pub mod exec;
pub mod gate;
pub mod hook;
pub mod inbox;
pub mod mcp;
pub mod quiet_thread;
pub mod report;
pub mod sandbox;
pub mod state;
