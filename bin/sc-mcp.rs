//! `sc-mcp`: the gate in front of an MCP server, relaying JSON-RPC over stdio.
//!
//! This file is its launcher: it starts the one program that holds every tool (`sc-hook`,
//! installed beside it) under this name. The tool itself is `bin/program/mcp.rs`.

#[path = "launcher.rs"]
mod launcher;

fn main() {
    std::process::exit(launcher::launch("sc-mcp"));
}
