//! `sc-inbox`: one approval page for every door of a crew.
//!
//! This file is its launcher: it starts the one program that holds every tool (`sc-hook`,
//! installed beside it) under this name. The tool itself is `bin/program/inbox.rs`.

#[path = "launcher.rs"]
mod launcher;

fn main() {
    std::process::exit(launcher::launch("sc-inbox"));
}
