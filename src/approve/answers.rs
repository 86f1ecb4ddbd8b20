//! The scripted human: answers read in order from a file (or a pipe), one per line.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::Result;

use super::{Human, Reply};
use crate::error::UsageError;
use crate::record::AnsweredBy;

/// The scripted human: answers taken in order from a file, one per line.
pub(crate) struct ScriptedHuman {
    answers: Box<dyn BufRead>,
    /// Whether the answers come from a regular file, which never keeps the stage waiting.
    at_hand: bool,
}

impl ScriptedHuman {
    /// Opens the answers file; a missing or unreadable file is a usage error.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|err| {
            UsageError(format!(
                "cannot open the answers file {}: {err}",
                path.display()
            ))
        })?;
        let at_hand = file.metadata().is_ok_and(|m| m.is_file());
        let mut human = Self::from_reader(BufReader::new(file));
        human.at_hand = at_hand;
        Ok(human)
    }

    /// Answers from any reader (a pipe, say), which may keep the stage waiting.
    pub(crate) fn from_reader(answers: impl BufRead + 'static) -> Self {
        ScriptedHuman {
            answers: Box::new(answers),
            at_hand: false,
        }
    }
}

impl Human for ScriptedHuman {
    fn ask(&mut self, _prompt: &str) -> Reply {
        let mut line = Vec::new();
        match self.answers.read_until(b'\n', &mut line) {
            Ok(0) => Reply::AnswersRanOut,
            Ok(_) => {
                while matches!(line.last(), Some(b'\n' | b'\r')) {
                    line.pop();
                }
                Reply::Answer(String::from_utf8_lossy(&line).into_owned())
            }
            Err(err) => Reply::ReadFailed(err.to_string()),
        }
    }

    fn kind(&self) -> AnsweredBy {
        AnsweredBy::Answers
    }

    fn may_keep_waiting(&self) -> bool {
        !self.at_hand
    }

    fn reads_prompt(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn the_scripted_human_answers_in_order_then_runs_out() {
        let mut human = ScriptedHuman::from_reader(io::Cursor::new(b"yes\r\nno\n".to_vec()));
        assert_eq!(human.ask(""), Reply::Answer("yes".into()));
        assert_eq!(human.ask(""), Reply::Answer("no".into()));
        assert_eq!(human.ask(""), Reply::AnswersRanOut);
    }
}
