//! `sc-gate`: reads tool calls (JSON Lines) and writes a verdict for each: allow, hold or deny.
//!
//! This file is its launcher: it starts the one program that holds every tool (`sc-hook`,
//! installed beside it) under this name. The tool itself is `bin/program/gate.rs`.

#[path = "launcher.rs"]
mod launcher;

fn main() {
    std::process::exit(launcher::launch("sc-gate"));
}
