//! `sc-report`: summarises audit logs for people and CI, and verifies their hash chain.
//!
//! This file is its launcher: it starts the one program that holds every tool (`sc-hook`,
//! installed beside it) under this name. The tool itself is `bin/program/report.rs`.

#[path = "launcher.rs"]
mod launcher;

fn main() {
    std::process::exit(launcher::launch("sc-report"));
}
