//! `sc-approve`: puts each held call to a person on /dev/tty; only a typed `yes` approves.
//!
//! This file is its launcher: it starts the one program that holds every tool (`sc-hook`,
//! installed beside it) under this name. The tool itself is `bin/program/approve.rs`.

#[path = "launcher.rs"]
mod launcher;

fn main() {
    std::process::exit(launcher::launch("sc-approve"));
}
