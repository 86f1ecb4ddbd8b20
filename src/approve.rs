//! `sc-approve`: puts each held call to a person and adds their answer to the record.
//!
//! Only `yes` (trimmed, any case) approves. Any other answer, end of input, a read error, the
//! timeout, a missing terminal or an answers file that has run out declines. An `approval` already
//! on an input record is never trusted: on a hold it is replaced by the person's answer, and on any
//! other record it is removed. With the audit key, each approval carries a MAC that binds it to
//! the record's id and call ([`crate::record::approval_mac`]), which sc-exec checks. Records that
//! are not holds and carry no approval pass through byte for byte. Agent-written text is escaped before it reaches the terminal
//! ([`crate::sanitize`]), and the person sees the exact arguments that will run.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use crate::audit::{self, IdMinter, Stage};
use crate::call::Call;
use crate::chain::Chain;
use crate::decision::Decision;
use crate::exit::{Completion, UsageError};
use crate::jsonl::{self, Input, InputLines, Line, StageOutput};
use crate::record::{approval_mac, AnsweredBy, Approval, Record, SealedApproval};
use crate::sanitize::for_terminal;
use crate::tty::{Terminal, TtyReply};

/// The default wait for an answer, as sudo's prompt: 300 seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 300;

/// What a person (or the stand-in for one) said to a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Answer(String),
    Eof,
    TimedOut(Duration),
    ReadFailed(String),
    NobodyToAsk(String),
    AnswersRanOut,
}

/// Someone who can be asked about a hold.
pub trait Human {
    fn ask(&mut self, prompt: &str) -> Reply;
    /// Shown after the answer (e.g. "approved"); ignored where nobody is watching.
    fn acknowledge(&mut self, _text: &str) {}
    /// Whether asking may keep a person waiting (so what is decided leaves first); not when
    /// the answer is at hand at once (no terminal, an answers file).
    fn may_keep_waiting(&self) -> bool {
        true
    }
    /// Whether `ask` shows its prompt to anyone, so it is worth composing.
    fn reads_prompt(&self) -> bool {
        true
    }
    fn kind(&self) -> AnsweredBy;
}

/// The person at the controlling terminal, opened at the first hold.
pub struct TerminalHuman {
    terminal: Option<std::result::Result<Terminal, String>>,
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
        let terminal = self.terminal.get_or_insert_with(|| {
            Terminal::open().map_err(|err| format!("cannot open /dev/tty: {err}"))
        });
        let terminal = match terminal {
            Ok(terminal) => terminal,
            Err(why) => return Reply::NobodyToAsk(why.clone()),
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

/// The scripted human: answers taken in order from a file, one per line.
pub struct ScriptedHuman {
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
    pub fn from_reader(answers: impl BufRead + 'static) -> Self {
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

/// Whether an answer approves: `yes`, trimmed, in any case; nothing else.
pub fn is_yes(answer: &str) -> bool {
    answer.trim().eq_ignore_ascii_case("yes")
}

/// Turns a reply into the approval written on the record.
pub fn approval_for(reply: Reply, by: AnsweredBy) -> Approval {
    let declined = |by, answer, reason: String| Approval {
        approved: false,
        by,
        answer,
        reason,
    };
    match reply {
        Reply::Answer(answer) if is_yes(&answer) => Approval {
            approved: true,
            by,
            reason: match by {
                AnsweredBy::Answers => "approved: the answers file said yes".to_owned(),
                _ => "approved: the person typed yes".to_owned(),
            },
            answer: Some(answer),
        },
        Reply::Answer(answer) => {
            let reason = format!(
                "declined: the answer {} is not yes",
                serde_json::Value::String(answer.clone())
            );
            declined(by, Some(answer), reason)
        }
        Reply::Eof => declined(
            by,
            None,
            "declined: end of input on the terminal (Ctrl-D)".into(),
        ),
        Reply::TimedOut(after) => declined(
            by,
            None,
            format!("declined: no answer within {} seconds", after.as_secs()),
        ),
        Reply::ReadFailed(why) => declined(
            by,
            None,
            format!("declined: reading the answer failed: {why}"),
        ),
        Reply::NobodyToAsk(why) => declined(
            AnsweredBy::None,
            None,
            format!("declined: no terminal to ask ({why})"),
        ),
        Reply::AnswersRanOut => declined(
            AnsweredBy::Answers,
            None,
            "declined: the answers file has no answer left".into(),
        ),
    }
}

/// The prompt a person sees for a held call. All agent-written text is escaped.
pub fn render_prompt(call: &Call, reasons: &[String], timeout: Option<Duration>) -> String {
    let args = serde_json::to_string(call.args.map()).expect("args serialize");
    let instruction = call
        .instruction
        .as_deref()
        .map_or_else(|| "(none)".into(), |text| format!("{}", for_terminal(text)));
    let mut prompt = String::new();
    prompt.push_str("\n── Skeleton Crew: a call is held for your approval ──\n");
    prompt.push_str(&format!("  agent:        {}\n", for_terminal(&call.agent)));
    prompt.push_str(&format!("  tool:         {}\n", for_terminal(&call.tool)));
    prompt.push_str(&format!("  args:         {}\n", for_terminal(&args)));
    let source = call.provenance.to_string();
    prompt.push_str(&format!("  source:       {}\n", for_terminal(&source)));
    prompt.push_str(&format!("  instruction:  {instruction}\n"));
    prompt.push_str("  held because:\n");
    for reason in reasons {
        prompt.push_str(&format!("    - {}\n", for_terminal(reason)));
    }
    let wait = match timeout {
        Some(timeout) => format!(" (declines by itself after {} s)", timeout.as_secs()),
        None => String::new(),
    };
    prompt.push_str(&format!(
        "Type yes to approve; anything else declines{wait}: "
    ));
    prompt
}

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
    use std::io;

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

    #[test]
    fn only_yes_approves() {
        for yes in ["yes", " YES ", "Yes", "yEs\t"] {
            assert!(is_yes(yes), "{yes:?}");
        }
        for no in [
            "y",
            "no",
            "",
            "yess",
            "ye s",
            "yes please",
            "oui",
            "\u{1b}yes",
        ] {
            assert!(!is_yes(no), "{no:?}");
        }
    }

    #[test]
    fn every_failure_declines() {
        for reply in [
            Reply::Eof,
            Reply::TimedOut(Duration::from_secs(300)),
            Reply::ReadFailed("EIO".into()),
            Reply::NobodyToAsk("no tty".into()),
            Reply::AnswersRanOut,
            Reply::Answer("no".into()),
        ] {
            let approval = approval_for(reply.clone(), AnsweredBy::Tty);
            assert!(!approval.approved, "{reply:?}");
            assert!(approval.reason.starts_with("declined"), "{reply:?}");
        }
        assert_eq!(
            approval_for(Reply::NobodyToAsk("x".into()), AnsweredBy::Tty).by,
            AnsweredBy::None
        );
        assert!(
            approval_for(Reply::TimedOut(Duration::from_secs(300)), AnsweredBy::Tty)
                .reason
                .contains("300 seconds")
        );
    }

    #[test]
    fn the_scripted_human_answers_in_order_then_runs_out() {
        let mut human = ScriptedHuman::from_reader(io::Cursor::new(b"yes\r\nno\n".to_vec()));
        assert_eq!(human.ask(""), Reply::Answer("yes".into()));
        assert_eq!(human.ask(""), Reply::Answer("no".into()));
        assert_eq!(human.ask(""), Reply::AnswersRanOut);
    }

    #[test]
    fn the_prompt_shows_everything_and_escapes_agent_text() {
        let (call, _) = Call::parse_line(
            br#"{"agent":"buyer","tool":"send_payment","args":{"to":"acme\u202e","amount":750},"source":"user","instruction":"pay \u001b[2Jnow"}"#,
        )
        .unwrap();
        let prompt = render_prompt(
            &call,
            &["amount 750 is above the hold limit of 100".into()],
            Some(Duration::from_secs(300)),
        );
        for expected in [
            "buyer",
            "send_payment",
            r#""amount":750"#,
            "user",
            "pay \\u{1b}[2Jnow",
            "amount 750 is above",
            "\\u{202e}",
            "300 s",
        ] {
            assert!(
                prompt.contains(expected),
                "prompt lacks {expected:?}:\n{prompt}"
            );
        }
        assert!(!prompt.contains('\u{1b}') && !prompt.contains('\u{202e}'));
    }
}
