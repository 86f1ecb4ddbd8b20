//! Asking the person at the controlling terminal (`/dev/tty`, never stdin, which carries records).

use std::time::Duration;

use super::tty::{Terminal, TtyReply};
use super::{Human, Reply};
use crate::record::AnsweredBy;

/// Why there is nobody to ask: the controlling terminal did not open.
#[derive(Debug, thiserror::Error)]
#[error("cannot open /dev/tty: {0}")]
struct NoTerminal(std::io::Error);

/// The person at the controlling terminal, opened at the first hold.
pub(crate) struct TerminalHuman {
    terminal: Option<std::result::Result<Terminal, NoTerminal>>,
    timeout: Option<Duration>,
}

impl TerminalHuman {
    /// `timeout` of `None` waits forever.
    pub fn new(timeout: Option<Duration>) -> Self {
        TerminalHuman {
            terminal: None,
            timeout,
        }
    }
}

impl Human for TerminalHuman {
    fn ask(&mut self, prompt: &str) -> Reply {
        let terminal = self
            .terminal
            .get_or_insert_with(|| Terminal::open().map_err(NoTerminal));
        let terminal = match terminal {
            Ok(terminal) => terminal,
            Err(why) => return Reply::NobodyToAsk(why.to_string()),
        };
        match terminal.ask(prompt, self.timeout) {
            Ok(TtyReply::Line(line)) => Reply::Answer(line),
            Ok(TtyReply::Eof) => Reply::Eof,
            Ok(TtyReply::TimedOut) => Reply::TimedOut(self.timeout.unwrap_or_default()),
            Err(err) => Reply::ReadFailed(err.to_string()),
        }
    }

    fn acknowledge(&mut self, text: &str) {
        if let Some(Ok(terminal)) = &mut self.terminal {
            let _ = terminal.say(&format!("\n{text}\n\n"));
        }
    }

    fn kind(&self) -> AnsweredBy {
        match &self.terminal {
            Some(Err(_)) => AnsweredBy::None,
            _ => AnsweredBy::Tty,
        }
    }

    fn may_keep_waiting(&self) -> bool {
        !matches!(self.terminal, Some(Err(_)))
    }

    fn reads_prompt(&self) -> bool {
        !matches!(self.terminal, Some(Err(_)))
    }
}
