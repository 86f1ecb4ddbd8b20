//! `sc-approve`: puts each held call to a person and adds their answer to the record.
//!
//! Only `yes` (trimmed, any case) approves. Any other answer, end of input, a read error, the
//! timeout, a missing terminal or an answers file that has run out declines. An `approval` already
//! on an input record is never trusted: on a hold it is replaced by the person's answer, and on any
//! other record it is removed. With the audit key, each approval carries a MAC that binds it to
//! the record's id and call ([`crate::record::approval_mac`]), which sc-exec checks. Records that
//! are not holds and carry no approval pass through byte for byte.
//!
//! One file per way of asking a person, each a [`Human`]: [`terminal`] (the person at `/dev/tty`)
//! and [`answers`] (the scripted human). What they share is written once in [`prompt`]: the text
//! a person reads, agent-written text escaped ([`crate::sanitize`]) so that the person sees the
//! exact arguments that will run, and the approval record a reply becomes.

pub mod answers;
pub mod elicitation;
pub mod human;
pub mod prompt;
pub mod terminal;
pub mod tty;

pub use answers::ScriptedHuman;
pub use human::{Human, Reply};
pub use prompt::{approval_for, is_yes, render_prompt};
pub use terminal::TerminalHuman;

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use crate::audit::chain::Chain;
use crate::audit::{self, IdMinter, Stage};
use crate::decision::Decision;
use crate::exit::Completion;
use crate::jsonl::{self, Input, InputLines, Line, StageOutput};
use crate::record::{approval_mac, AnsweredBy, Approval, Record, SealedApproval};
use crate::sanitize::for_terminal;

/// The default wait for an answer, as sudo's prompt: 300 seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 300;

/// What `sc-approve` needs besides its streams.
#[derive(Debug, Clone)]
pub struct ApproveOptions {
    pub max_line_bytes: usize,
    /// Shown in the prompt; the human enforces it.
    pub timeout: Option<Duration>,
    /// The audit key's chain: keyed, every approval is sealed with a MAC for sc-exec to check.
    pub chain: Chain,
}

/// Reads records, asks about each hold, writes every record on.
pub fn run<W: Write, E: Write>(
    inputs: &[Input],
    options: &ApproveOptions,
    human: &mut dyn Human,
    output: &mut StageOutput<W, E>,
    diagnostics: &mut dyn Write,
) -> Result<Completion> {
    let mut ids = IdMinter::new();
    let mut lines = InputLines::new("sc-approve", inputs, options.max_line_bytes, diagnostics);
    while let Some((line, _, _)) = lines.next_line()? {
        match line {
            Line::Text(bytes) if jsonl::is_blank(bytes) => {}
            Line::Text(bytes) if !needs_reading(bytes) => {
                output.pass_through(bytes);
                output.pass_through(b"\n");
            }
            Line::Text(bytes) => match Record::parse(bytes) {
                Ok(record) if record.decision() == Some(Decision::Hold) => {
                    // Everything before the hold leaves before a person is kept waiting, and
                    // the answer leaves as soon as it is given.
                    let waits = human.may_keep_waiting();
                    if waits {
                        output.commit()?;
                    }
                    settle_hold(&record, options, human, output, &mut ids);
                    if waits {
                        output.commit()?;
                    }
                }
                // Not a hold, yet carrying an approval: nobody here gave it, so it goes.
                Ok(record) if record.has("approval") => {
                    output.pass_through(&record.without_field("approval"));
                    output.narrate(&format!(
                        "sc-approve: removed an approval that sc-approve did not give from record {}",
                        for_terminal(&record.id().unwrap_or_default())
                    ));
                }
                // Not a hold, or not a record at all: passed on untouched; sc-exec refuses
                // what it cannot read.
                _ => {
                    output.pass_through(bytes);
                    output.pass_through(b"\n");
                }
            },
            Line::TooLong { length, start } => {
                let reason = format!(
                    "malformed record: the line is {length} bytes, over the line limit of {} bytes",
                    options.max_line_bytes
                );
                let line = jsonl::JsonLine::new()
                    .field("id", &ids.mint())
                    .field("raw", &jsonl::raw_excerpt(start))
                    .field("decision", &Decision::Deny)
                    .field("reasons", &[reason])
                    .finish();
                output.pass_through(&line);
            }
        }
        output.commit_if_due(!lines.next_read_would_block())?;
    }
    output.commit()?;
    Ok(lines.completion())
}

/// Whether a line may be a record whose decision is `hold`, or one that carries an `approval`,
/// without reading it: a JSON string that decodes to `hold` or `approval` is written so or with a
/// `\u` escape, so a line with none of these is neither and passes on untouched. The others are
/// read in full.
fn needs_reading(line: &[u8]) -> bool {
    match std::str::from_utf8(line) {
        Ok(text) => text.contains("hold") || text.contains("approval") || text.contains("\\u"),
        Err(_) => true,
    }
}

fn settle_hold<W: Write, E: Write>(
    record: &Record,
    options: &ApproveOptions,
    human: &mut dyn Human,
    output: &mut StageOutput<W, E>,
    ids: &mut IdMinter,
) {
    let reasons = record.reasons();
    let call = record
        .call()
        .ok_or_else(|| "it has no `call`".to_owned())
        .and_then(|call| call.clone().map_err(|m| m.to_string()));
    let (approval, agent, tool) = match (&call, record.id()) {
        (Ok(call), Some(_)) if !reasons.is_empty() => {
            let prompt = if human.reads_prompt() {
                render_prompt(call, &reasons, options.timeout)
            } else {
                String::new()
            };
            let reply = human.ask(&prompt);
            let approval = approval_for(reply, human.kind());
            human.acknowledge(if approval.approved {
                "→ approved"
            } else {
                "→ declined"
            });
            (approval, call.agent.clone(), call.tool.clone())
        }
        _ => {
            let why = match (&call, record.id()) {
                (Err(why), _) => why.clone(),
                (_, None) => "it has no `id`".to_owned(),
                _ => "it has no reasons".to_owned(),
            };
            let approval = Approval {
                approved: false,
                by: AnsweredBy::None,
                answer: None,
                reason: format!(
                    "declined: the hold record is malformed ({why}), so it was not put to a person"
                ),
            };
            let call = record.call_value();
            let name = |key: &str| {
                call.as_ref()
                    .and_then(|c| c.get(key))
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned()
            };
            (approval, name("agent"), name("tool"))
        }
    };
    let id = record.id().map_or_else(|| ids.mint(), Cow::into_owned);
    let sealed = SealedApproval {
        approval: &approval,
        mac: record
            .call_text()
            .and_then(|call| approval_mac(&options.chain, &id, call, &approval))
            .map(|mac| mac.to_string()),
    };
    let event = audit::event(Stage::Approve, &id)
        .field("agent", &agent)
        .field("tool", &tool)
        .field("approval", &sealed)
        .finish();
    output.emit(&event, &record.with_field("approval", &sealed));
    output.narrate(&format!(
        "sc-approve: {} → {}: {}",
        for_terminal(&agent),
        for_terminal(&tool),
        for_terminal(&approval.reason)
    ));
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_that_cannot_be_holds_nor_carry_approvals_skip_the_reading() {
        for line in [
            r#"{"id":"1","decision":"hold"}"#,
            r#"{"id":"1","decision":"h\u006fld"}"#,
            r#"{"id":"1","decision":"\u0068\u006f\u006c\u0064"}"#,
            r#"{"id":"1","decision":"allow","approval":{}}"#,
            r#"{"id":"1","decision":"allow","appr\u006fval":{}}"#,
        ] {
            assert!(needs_reading(line.as_bytes()), "{line}");
        }
        assert!(needs_reading(b"{\"decision\":\"\xff\"}"));
        for line in [
            r#"{"id":"1","decision":"allow"}"#,
            r#"{"id":"1","decision":"h\/old"}"#,
            r#"{"id":"1","decision":"deny","reasons":["h\nold"]}"#,
            r#"{"id":"1","decision":"allow","appr\/oval":{}}"#,
        ] {
            assert!(!needs_reading(line.as_bytes()), "{line}");
            let record = Record::parse(line.as_bytes()).unwrap();
            assert_ne!(record.decision(), Some(Decision::Hold), "{line}");
            assert!(!record.has("approval"), "{line}");
        }
    }
}
