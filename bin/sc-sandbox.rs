//! `sc-sandbox`: runs a program so that it keeps the promises the rules make for it, whatever it
//!
//! This file is its launcher: it starts the one program that holds every tool (`sc-hook`,
//! installed beside it) under this name. The tool itself is `bin/program/sandbox.rs`.

#[path = "launcher.rs"]
mod launcher;

fn main() {
    std::process::exit(launcher::launch("sc-sandbox"));
}
