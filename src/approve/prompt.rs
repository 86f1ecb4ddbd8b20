//! Written once for every way of asking: the prompt a person reads (agent-written text escaped,
//! [`crate::sanitize`]), what counts as a yes, and the approval record a reply becomes.

use std::time::Duration;

use super::reply::Reply;
use crate::call::Call;
use crate::record::{AnsweredBy, Approval, Scope};
use crate::sanitize::for_terminal;

/// Whether an answer approves: `yes`, trimmed, in any case, with or without a scope
/// ([`yes_scope`]); nothing else.
pub(crate) fn is_yes(answer: &str) -> bool {
    yes_scope(answer).is_some()
}

/// What a typed answer approves with: `yes` (or `yes once`) is [`Scope::Once`], `yes call` and
/// `yes value` the wider scopes (words separated by spaces or tabs, any case, trimmed). Anything
/// else approves nothing.
pub(crate) fn yes_scope(answer: &str) -> Option<Scope> {
    let mut words = answer.split([' ', '\t']).filter(|word| !word.is_empty());
    let first = words.next()?;
    if !first.eq_ignore_ascii_case("yes") {
        return None;
    }
    let scope = match words.next() {
        None => Scope::Once,
        Some(word) => Scope::ALL
            .into_iter()
            .find(|scope| word.eq_ignore_ascii_case(scope.as_str()))?,
    };
    words.next().is_none().then_some(scope)
}

/// The SHA-256 (lowercase hex) of a record line exactly as it arrived, without its newline:
/// what an answer given on the web page is bound to.
pub(crate) fn record_digest(line: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    lower_hex(&Sha256::digest(line))
}

/// Bytes as lowercase hex digits.
pub(crate) fn lower_hex(bytes: &[u8]) -> String {
    crate::hex::encode(bytes)
}

/// Where a person who pressed a button gave their answer, as the approval's reason says it.
fn where_answered(by: AnsweredBy) -> &'static str {
    match by {
        AnsweredBy::Web => "on the web page",
        AnsweredBy::Elicitation => "in the MCP client",
        AnsweredBy::ClaudeCode => "in Claude Code",
        AnsweredBy::Tty | AnsweredBy::Answers | AnsweredBy::None => "by the person",
    }
}

/// Turns a reply into the approval written on the record.
pub(crate) fn approval_for(reply: Reply, by: AnsweredBy) -> Approval {
    let declined = |by, answer, reason: String| Approval {
        approved: false,
        by,
        answer,
        digest: None,
        reason,
        scope: None,
        grant: None,
    };
    match reply {
        Reply::Answer(answer) if is_yes(&answer) => Approval {
            approved: true,
            by,
            reason: match by {
                AnsweredBy::Answers => "approved: the answers file said yes".to_owned(),
                _ => "approved: the person typed yes".to_owned(),
            },
            scope: yes_scope(&answer),
            answer: Some(answer),
            digest: None,
            grant: None,
        },
        Reply::Decision {
            approve,
            digest,
            scope,
        } => Approval {
            approved: approve,
            by,
            answer: Some(if approve { "approve" } else { "decline" }.to_owned()),
            digest,
            reason: format!(
                "{} {}",
                if approve { "approved" } else { "declined" },
                where_answered(by)
            ),
            scope: approve.then_some(scope),
            grant: None,
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
        Reply::Unanswered(why) => declined(by, None, format!("declined: {why}")),
    }
}

/// The prompt a person sees for a held call. All agent-written text is escaped.
pub(crate) fn render_prompt(
    call: &Call,
    reasons: &[String],
    timeout: Option<Duration>,
    scopes: &[Scope],
) -> String {
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
    let wider = |scope| scopes.contains(&scope);
    if wider(Scope::Call) {
        prompt.push_str("  yes call:     also allow this agent's later calls of this tool with exactly these arguments\n");
    }
    if wider(Scope::Value) {
        prompt.push_str(
            "  yes value:    also trust, for this agent, the untrusted values named above\n",
        );
    }
    let more = match (wider(Scope::Call), wider(Scope::Value)) {
        (true, true) => " (or yes call, yes value)",
        (true, false) => " (or yes call)",
        (false, true) => " (or yes value)",
        (false, false) => "",
    };
    prompt.push_str(&format!(
        "Type yes to approve{more}; anything else declines{wait}: "
    ));
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

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
            Reply::Unanswered("the inbox's store failed: down".into()),
            Reply::Answer("no".into()),
            Reply::Decision {
                approve: false,
                digest: Some("ab".into()),
                scope: Scope::Call,
            },
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
    fn a_decision_on_the_web_page_is_bound_to_the_record_it_was_given_for() {
        let digest = record_digest(br#"{"id":"1"}"#);
        assert_eq!(digest.len(), 64);
        assert!(digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        // The SHA-256 of the empty line, as sha256sum gives it.
        assert_eq!(
            record_digest(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let approval = approval_for(
            Reply::Decision {
                approve: true,
                digest: Some(digest.clone()),
                scope: Scope::Once,
            },
            AnsweredBy::Web,
        );
        assert_eq!(
            serde_json::to_value(&approval).unwrap(),
            serde_json::json!({
                "approved": true,
                "by": "web",
                "answer": "approve",
                "digest": digest,
                "reason": "approved on the web page",
                "scope": "once"
            })
        );
        let declined = approval_for(
            Reply::Decision {
                approve: false,
                digest: Some(digest),
                scope: Scope::Once,
            },
            AnsweredBy::Web,
        );
        assert_eq!(declined.answer.as_deref(), Some("decline"));
        assert_eq!(declined.reason, "declined on the web page");
        let expired = approval_for(Reply::TimedOut(Duration::from_secs(7)), AnsweredBy::Web);
        assert_eq!(
            serde_json::to_value(&expired).unwrap(),
            serde_json::json!({
                "approved": false,
                "by": "web",
                "answer": null,
                "reason": "declined: no answer within 7 seconds"
            })
        );
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
            &[Scope::Once],
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
