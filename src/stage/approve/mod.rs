//! `sc-approve`: puts each held call to a person and adds their answer to the record.
//!
//! Only `yes` (trimmed, any case) approves. Any other answer, end of input, a read error, the
//! timeout, a missing terminal or an answers file that has run out declines. An `approval` already
//! on an input record is never trusted: on a hold it is replaced by the person's answer, and on any
//! other record it is removed. With the audit key, each approval carries a MAC that binds it to
//! the record's id and call ([`crate::audit::seal::approval_mac`]), which sc-exec checks. Records that
//! are not holds and carry no approval pass through byte for byte.
//!
//! The ways of asking a person are in [`crate::approve`].
//!
//! [`run`] asks about one hold at a time, in order, as a terminal or an answers file answers.
//! With the web page, [`run_web`] lets several holds wait side by side, answered in any order,
//! while records still leave in input order.

use std::borrow::Cow;
use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

mod ordered;

pub use ordered::run_web;

use crate::approve::notify::{Notice, Notifier};
use crate::approve::remember::Grants;
use crate::approve::{approval_for, Hold, Human};
use crate::audit::chain::Chain;
use crate::audit::seal::approval_mac;
use crate::audit::{self, IdMinter, Stage};
use crate::call::Call;
use crate::exit::Completion;
use crate::jsonl::{self, Input, InputLines, Line, StageOutput};
use crate::record::{AnsweredBy, Approval, Grantable, Record, SealedApproval};
use crate::sanitize::for_terminal;
use crate::verdict::Decision;

/// What `sc-approve` needs besides its streams.
#[derive(Debug, Clone)]
pub struct ApproveOptions {
    pub max_line_bytes: usize,
    /// Shown in the prompt; the human enforces it.
    pub timeout: Option<Duration>,
    /// The audit key's chain: keyed, every approval is sealed with a MAC for sc-exec to check.
    pub chain: Chain,
    /// `--notify CMD`: run on every hold, beside the asking ([`crate::approve::notify`]).
    pub notify: Option<Notifier>,
    /// Where a `call` or `value` answer is kept as a grant ([`crate::approve::remember`]).
    pub grants: Grants,
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
                    settle_hold(&record, bytes, options, human, output, &mut ids);
                    if waits {
                        output.commit()?;
                    }
                }
                // Not a hold, yet carrying an approval: nobody here gave it, so it goes.
                Ok(record) if record.has("approval") => {
                    output.pass_through(&record.without_field("approval"));
                    output.narrate(&removed_approval(&record));
                }
                // Not a hold, or not a record at all: passed on untouched; sc-exec refuses
                // what it cannot read.
                _ => {
                    output.pass_through(bytes);
                    output.pass_through(b"\n");
                }
            },
            Line::TooLong { length, start } => {
                output.pass_through(&too_long(length, start, options, &mut ids));
            }
        }
        output.commit_if_due(!lines.next_read_would_block())?;
    }
    output.commit()?;
    Ok(lines.completion())
}

/// What is said of a record that is not a hold and came with an approval, which is removed.
fn removed_approval(record: &Record) -> String {
    format!(
        "sc-approve: removed an approval that sc-approve did not give from record {}",
        for_terminal(&record.id().unwrap_or_default())
    )
}

/// The `deny` record that stands for a line over the line limit.
fn too_long(length: u64, start: &[u8], options: &ApproveOptions, ids: &mut IdMinter) -> Vec<u8> {
    let reason = format!(
        "malformed record: the line is {length} bytes, over the line limit of {} bytes",
        options.max_line_bytes
    );
    jsonl::JsonLine::new()
        .field("id", &ids.mint())
        .field("raw", &jsonl::raw_excerpt(start))
        .field("decision", &Decision::Deny)
        .field("reasons", &[reason])
        .finish()
}

/// Whether a line may be a record whose decision is `hold`, or one that carries an `approval`,
/// without reading it: a JSON string that decodes to `hold` or `approval` is written so or with a
/// `\u` escape, so a line with none of these is neither and passes on untouched. The others are
/// read in full.
fn needs_reading(line: &[u8]) -> bool {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    // Built once: sc-approve asks this of every line that passes through it.
    static HOLD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"hold"));
    static APPROVAL: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"approval"));
    static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    HOLD.find(line).is_some()
        || APPROVAL.find(line).is_some()
        || ESCAPE.find(line).is_some()
        || std::str::from_utf8(line).is_err()
}

fn settle_hold<W: Write, E: Write>(
    record: &Record,
    line: &[u8],
    options: &ApproveOptions,
    human: &mut dyn Human,
    output: &mut StageOutput<W, E>,
    ids: &mut IdMinter,
) {
    let (approval, agent, tool, notify_failed, asked) = match examine_hold(record, &options.chain) {
        Examined::Ask {
            id,
            call,
            reasons,
            grantable,
        } => {
            let offered = offered(record, &id, grantable, options);
            let hold = Hold {
                scopes: &offered.scopes,
                line,
                id: &id,
                call,
                reasons: &reasons,
                timeout: options.timeout,
            };
            // The push goes out as the person is asked, not before.
            let notice = options
                .notify
                .as_ref()
                .map(|notifier| notifier.notify(&hold, None));
            let asked_at = std::time::SystemTime::now();
            let reply = human.ask_hold(&hold);
            let approval = approval_for(reply, human.kind());
            let notify_failed = notice.and_then(Notice::finish).map(|f| f.to_string());
            (
                approval,
                call.agent.clone(),
                call.tool.clone(),
                notify_failed,
                Some(Asked {
                    at: asked_at,
                    channel: human.channel(),
                }),
            )
        }
        Examined::Malformed {
            approval,
            agent,
            tool,
        } => (approval, agent, tool, None, None),
    };
    let was_asked = asked.is_some();
    let answered = answered(
        record,
        &approval,
        &agent,
        &tool,
        notify_failed.as_deref(),
        asked,
        options,
        ids,
    );
    if was_asked {
        // Said once the answer is kept: the scope it was kept with, and the grant.
        human.acknowledge(&acknowledgement(&answered.approval));
    }
    output.emit(&answered.event, &answered.record);
    output.narrate(&answered.narration);
}

/// What the person who answered is told: declined, approved once, or approved and remembered
/// (with the scope kept and the grant's id); a wider scope that could not be kept says why.
pub(crate) fn acknowledgement(approval: &Approval) -> String {
    if !approval.approved {
        return "→ declined".to_owned();
    }
    match (&approval.grant, approval.scope.unwrap_or_default()) {
        (Some(grant), scope) => format!("→ approved and remembered: scope {scope}, grant {grant}"),
        (None, _) => match approval.reason.split_once("; scope ") {
            Some((_, why)) => format!("→ approved once (scope {})", for_terminal(why)),
            None => "→ approved once".to_owned(),
        },
    }
}

/// What a yes to a hold may be remembered for, here: what the deciding door offered (under the
/// audit key, only from a verdict sc-gate sealed with it), where sc-approve can keep a grant
/// (the crew's store); else `once` only.
pub(crate) fn offered(
    record: &Record,
    id: &str,
    grantable: Grantable,
    options: &ApproveOptions,
) -> Grantable {
    match crate::stage::exec::check_seal(record, id, &options.chain) {
        Ok(()) => options.grants.keepable(&grantable),
        Err(_) => Grantable {
            scopes: vec![crate::record::Scope::Once],
            ..Grantable::default()
        },
    }
}

/// A hold as read from its record: whole enough to put to a person, or not.
enum Examined<'r> {
    Ask {
        id: Cow<'r, str>,
        call: &'r Call,
        reasons: Vec<String>,
        /// What a yes may be remembered for, as the deciding door wrote it.
        grantable: Grantable,
    },
    /// Declined without asking, with the agent and tool to name it by.
    Malformed {
        approval: Approval,
        agent: String,
        tool: String,
    },
}

/// Whether a hold can be put to a person: it needs an id, a call read as sc-gate reads one,
/// and reasons.
///
/// Under the audit key, a hold is put to a person only when sc-gate sealed it: its reasons are
/// what the person reads, and a hold whose reasons were rewritten (or that was made up whole)
/// would never run in sc-exec anyway.
fn examine_hold<'r>(record: &'r Record<'_>, chain: &crate::audit::chain::Chain) -> Examined<'r> {
    let reasons = record.reasons();
    let call = record
        .call()
        .ok_or_else(|| "it has no `call`".to_owned())
        .and_then(|call| call.as_ref().map_err(|m| m.to_string()));
    let unsealed = record
        .id()
        .and_then(|id| crate::stage::exec::check_seal(record, &id, chain).err());
    match (call, record.id()) {
        (Ok(call), Some(id)) if !reasons.is_empty() && unsealed.is_none() => Examined::Ask {
            id,
            call,
            reasons,
            grantable: record.grantable(),
        },
        (call, id) => {
            let why = match (call, id, unsealed) {
                (Err(why), _, _) => why,
                (_, None, _) => "it has no `id`".to_owned(),
                (_, _, Some(unsealed)) => unsealed.to_string(),
                _ => "it has no reasons".to_owned(),
            };
            let approval = Approval {
                scope: None,
                grant: None,
                approved: false,
                by: AnsweredBy::None,
                answer: None,
                digest: None,
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
            Examined::Malformed {
                approval,
                agent: name("agent"),
                tool: name("tool"),
            }
        }
    }
}

/// What an answered hold leaves behind: its audit event, its record with the approval (sealed
/// with a MAC under the audit key), and a line of narration. The event says why the `--notify`
/// command failed (`notifyFailed`), when it did.
struct Answered {
    /// The approval as kept: its scope narrowed where it could not be kept, its grant's id.
    approval: Approval,
    event: Vec<u8>,
    record: Vec<u8>,
    narration: String,
}

/// When a hold was put to a person, and the channel when its kind does not tell it: written on
/// the approve event as `askedAt` and `channel` (for `sc-report --questions`).
#[derive(Clone, Copy)]
struct Asked {
    at: std::time::SystemTime,
    channel: Option<&'static str>,
}

#[allow(clippy::too_many_arguments)]
fn answered(
    record: &Record,
    approval: &Approval,
    agent: &str,
    tool: &str,
    notify_failed: Option<&str>,
    asked: Option<Asked>,
    options: &ApproveOptions,
    ids: &mut IdMinter,
) -> Answered {
    let id = record.id().map_or_else(|| ids.mint(), Cow::into_owned);
    let mut approval = approval.clone();
    // Only a scope wider than once is kept as a grant, or taken back to once: a decline, or a
    // yes for this call alone, needs neither the call's grantable scopes nor its seal checked.
    let remembers = approval
        .scope
        .is_some_and(|scope| scope != crate::record::Scope::Once);
    if let Some(Ok(call)) = record.call().filter(|_| remembers) {
        // Under the audit key, what a yes may be remembered for is taken only from a verdict
        // sc-gate sealed with it; otherwise `once` only.
        let grantable = match crate::stage::exec::check_seal(record, &id, &options.chain) {
            Ok(()) => record.grantable(),
            Err(why) => {
                if let Some(scope) = approval
                    .scope
                    .filter(|scope| *scope != crate::record::Scope::Once)
                {
                    approval.scope = Some(crate::record::Scope::Once);
                    approval.reason =
                        format!("{}; scope {scope} taken as once: {why}", approval.reason);
                }
                crate::record::Grantable {
                    scopes: vec![crate::record::Scope::Once],
                    ..Default::default()
                }
            }
        };
        options.grants.keep(&mut approval, call, &grantable, &id);
    }
    let approval = &approval;
    let sealed = SealedApproval {
        approval,
        mac: record
            .call_text()
            .and_then(|call| approval_mac(&options.chain, &id, call, approval))
            .map(|mac| mac.to_string()),
    };
    let mut event = audit::event(Stage::Approve, &id)
        .field("agent", agent)
        .field("tool", tool)
        .field("approval", &sealed);
    if let Some(failed) = notify_failed {
        event = event.field("notifyFailed", failed);
    }
    if let Some(asked) = asked {
        event = event.field(
            "askedAt",
            &humantime::format_rfc3339_micros(asked.at).to_string(),
        );
        if let Some(channel) = asked.channel {
            event = event.field("channel", channel);
        }
    }
    let event = event.finish();
    Answered {
        approval: approval.clone(),
        event,
        record: record.with_field("approval", &sealed),
        narration: format!(
            "sc-approve: {} → {}: {}{}",
            for_terminal(agent),
            for_terminal(tool),
            for_terminal(&approval.reason),
            approval
                .grant
                .as_ref()
                .map(|grant| format!(
                    " (remembered: scope {}, grant {grant})",
                    approval.scope.unwrap_or_default()
                ))
                .unwrap_or_default()
        ),
    }
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
