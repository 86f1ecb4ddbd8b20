//! Which person a command line asks: the answers file when given, else the terminal, and how long
//! it waits.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::answers::ScriptedHuman;
use super::human::Human;
use super::terminal::TerminalHuman;

/// The default wait for an answer, as sudo's prompt: 300 seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 300;

/// Opens the human for the command line: the answers file when given, else the terminal.
pub fn human_for(answers: Option<&Path>, timeout: Option<Duration>) -> Result<Box<dyn Human>> {
    Ok(match answers {
        Some(path) => Box::new(ScriptedHuman::open(path)?),
        None => Box::new(TerminalHuman::new(timeout)),
    })
}

/// `--timeout 0` waits forever.
pub fn timeout_from_seconds(seconds: u64) -> Option<Duration> {
    (seconds > 0).then(|| Duration::from_secs(seconds))
}
