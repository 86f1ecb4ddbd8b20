//! `sc-exec`: runs what was allowed or approved, and says what happened to every record.
//!
//! It does not take the record's word for it: every call is evaluated again under sc-exec's own
//! policy, and it acts on the stronger of the record's decision and its own. It runs a call only
//! when that is `allow`, or `hold` with an approval saying `approved: true`. A forged `allow`
//! therefore runs neither a denied call nor one that should have been held. A record it cannot
//! read, or whose decision is missing or unknown, counts as denied. Everything not run is
//! `skipped` with the reason; a tool it does not know is `failed`.

use std::io::Write;

use anyhow::{Context, Result};

use crate::audit::{self, IdMinter, Stage};
use crate::call::{Call, Malformed};
use crate::decision::{evaluate_parsed, Decision, Judgement};
use crate::exit::Completion;
use crate::jsonl::{self, Input, JsonLine, Line, LineReader, StageOutput};
use crate::policy::Policy;
use crate::record::{Approval, Outcome, Record, Status};
use crate::sanitize::for_terminal;
use crate::state::CrewState;
use crate::tools::{self, BUILTIN_TOOLS};

/// What `sc-exec` needs besides its streams.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    pub policy: Policy,
    pub max_line_bytes: usize,
}

/// The decision sc-exec acts on, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    pub decision: Decision,
    pub reasons: Vec<String>,
}

/// The stronger of the record's decision and sc-exec's own; a missing or unknown record decision
/// counts as deny.
pub fn effective_decision(
    record_decision: Option<Decision>,
    record_reasons: &[String],
    own: &Judgement,
) -> Effective {
    let (recorded, recorded_reasons) = match record_decision {
        Some(decision) => (decision, record_reasons.to_vec()),
        None => (
            Decision::Deny,
            vec!["the record has no valid decision (allow, hold or deny)".to_owned()],
        ),
    };
    if own.decision >= recorded {
        Effective {
            decision: own.decision,
            reasons: own.reasons.clone(),
        }
    } else {
        Effective {
            decision: recorded,
            reasons: recorded_reasons,
        }
    }
}

/// What to do with a call, given the effective decision and any approval on the record.
pub fn outcome_for(
    call: Option<&Call>,
    effective: &Effective,
    approval: Option<&Approval>,
) -> Outcome {
    let skipped = |reason: String| Outcome {
        status: Status::Skipped,
        result: None,
        reason,
    };
    let why = effective.reasons.join("; ");
    let cleared = match (effective.decision, approval) {
        (Decision::Allow, _) => "allowed by policy".to_owned(),
        (Decision::Hold, Some(approval)) if approval.approved => approval.reason.clone(),
        (Decision::Hold, Some(approval)) => {
            return skipped(format!("not run: held ({why}) and {}", approval.reason))
        }
        (Decision::Hold, None) => {
            return skipped(format!("not run: held ({why}) and never approved"))
        }
        (Decision::Deny, _) => return skipped(format!("not run: denied ({why})")),
    };
    let Some(call) = call else {
        return skipped("not run: the record has no readable call".to_owned());
    };
    match tools::run_builtin(&call.tool, &call.args) {
        Some(Ok(result)) => Outcome {
            status: Status::Executed,
            result: Some(result),
            reason: format!("ran {} ({cleared})", call.tool),
        },
        Some(Err(why)) => Outcome {
            status: Status::Failed,
            result: None,
            reason: format!("{} failed: {why}", call.tool),
        },
        None => Outcome {
            status: Status::Failed,
            result: None,
            reason: format!(
                "no tool named {} (sc-exec knows {})",
                serde_json::Value::String(call.tool.clone()),
                BUILTIN_TOOLS.join(", ")
            ),
        },
    }
}

/// Reads records and acts on each, in order.
pub fn run<W: Write, E: Write>(
    inputs: &[Input],
    options: &ExecOptions,
    output: &mut StageOutput<W, E>,
    diagnostics: &mut dyn Write,
) -> Result<Completion> {
    let mut ids = IdMinter::new();
    let mut state = CrewState::new();
    let mut completion = Completion::default();
    for input in inputs {
        let source = match input.open() {
            Ok(source) => source,
            Err(err) => {
                let _ = writeln!(diagnostics, "sc-exec: {err:#}");
                completion.unreadable_inputs += 1;
                continue;
            }
        };
        let mut reader = LineReader::new(source, options.max_line_bytes);
        loop {
            let line = reader
                .next_line()
                .with_context(|| format!("cannot read {}", input.name()))?;
            match line {
                None => break,
                Some(Line::Text(bytes)) if jsonl::is_blank(bytes) => {}
                Some(Line::Text(bytes)) => match Record::parse(bytes) {
                    Ok(record) => act_on_record(&record, options, output, &mut ids, &mut state),
                    Err(why) => refuse_unreadable(&ids.mint(), &why, bytes, output),
                },
                Some(Line::TooLong { length, start }) => {
                    let why = format!(
                        "the record is {length} bytes, over the line limit of {} bytes",
                        options.max_line_bytes
                    );
                    refuse_unreadable(&ids.mint(), &why, start, output);
                }
            }
            output.commit_if_due(reader.has_complete_line())?;
        }
    }
    output.commit()?;
    Ok(completion)
}

fn act_on_record<W: Write, E: Write>(
    record: &Record,
    options: &ExecOptions,
    output: &mut StageOutput<W, E>,
    ids: &mut IdMinter,
    state: &mut CrewState,
) {
    let call = match record.call() {
        Some(value) => Call::from_value(value),
        None => Err(Malformed::new("the record has no `call`")),
    };
    let own = evaluate_parsed(&call, &options.policy, state);
    let effective = effective_decision(record.decision(), &record.reasons(), &own);
    let approval = record.approval();
    let call = call.ok();
    let outcome = outcome_for(call.as_ref(), &effective, approval.as_ref());
    let id = record.id().map_or_else(|| ids.mint(), str::to_owned);
    if let Some(call) = &call {
        // The same stream update as sc-gate's, so the same policy reaches the same decisions.
        state.record(call, &id, &own, &options.policy);
    }
    let (agent, tool) = call
        .as_ref()
        .map_or(("?", "?"), |c| (c.agent.as_str(), c.tool.as_str()));
    let event = audit::event(Stage::Exec, &id)
        .field("agent", agent)
        .field("tool", tool)
        .field("decision", &effective.decision)
        .field("outcome", &outcome)
        .finish();
    output.emit(&event, &record.with_field("outcome", &outcome));
    let approval_note = match (&approval, effective.decision) {
        (Some(approval), Decision::Hold) if approval.approved => " → approved",
        (Some(_), Decision::Hold) => " → declined",
        _ => "",
    };
    output.narrate(&format!(
        "sc-exec: {} → {}: {} ({}){approval_note} → {}",
        for_terminal(agent),
        for_terminal(tool),
        effective.decision.as_str().to_uppercase(),
        for_terminal(&effective.reasons.join("; ")),
        match outcome.status {
            Status::Executed => "executed".to_owned(),
            Status::Skipped => "skipped, never run".to_owned(),
            Status::Failed => format!("failed: {}", for_terminal(&outcome.reason)),
        }
    ));
}

fn refuse_unreadable<W: Write, E: Write>(
    id: &str,
    why: &str,
    bytes: &[u8],
    output: &mut StageOutput<W, E>,
) {
    let reasons = [format!("malformed record: {why}")];
    let outcome = Outcome {
        status: Status::Skipped,
        result: None,
        reason: format!("not run: denied ({})", reasons[0]),
    };
    let raw = jsonl::raw_excerpt(bytes);
    let line = JsonLine::new()
        .field("id", id)
        .field("raw", &raw)
        .field("decision", &Decision::Deny)
        .field("reasons", &reasons)
        .field("outcome", &outcome)
        .finish();
    let event = audit::event(Stage::Exec, id)
        .field("raw", &raw)
        .field("decision", &Decision::Deny)
        .field("outcome", &outcome)
        .finish();
    output.emit(&event, &line);
    output.narrate(&format!("sc-exec: {}", for_terminal(&outcome.reason)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::AnsweredBy;

    fn call(line: &str) -> Call {
        Call::parse_line(line.as_bytes()).unwrap().0
    }

    fn judged(decision: Decision) -> Judgement {
        Judgement {
            decision,
            reasons: vec![format!("own {decision}")],
        }
    }

    #[test]
    fn the_stronger_decision_wins() {
        let reasons = vec!["recorded".to_owned()];
        let cases = [
            (Some(Decision::Allow), Decision::Deny, Decision::Deny),
            (Some(Decision::Allow), Decision::Hold, Decision::Hold),
            (Some(Decision::Deny), Decision::Allow, Decision::Deny),
            (Some(Decision::Hold), Decision::Allow, Decision::Hold),
            (None, Decision::Allow, Decision::Deny),
        ];
        for (recorded, own, expected) in cases {
            let effective = effective_decision(recorded, &reasons, &judged(own));
            assert_eq!(effective.decision, expected, "{recorded:?} vs {own:?}");
            assert!(!effective.reasons.is_empty());
        }
    }

    #[test]
    fn only_allow_or_approved_hold_runs() {
        let payment = call(
            r#"{"agent":"b","tool":"send_payment","args":{"to":"acme","amount":750},"source":"user"}"#,
        );
        let approved = Approval {
            approved: true,
            by: AnsweredBy::Tty,
            answer: Some("yes".into()),
            reason: "approved: the person typed yes".into(),
        };
        let declined = Approval {
            approved: false,
            ..approved.clone()
        };
        let effective = |decision| Effective {
            decision,
            reasons: vec!["r".into()],
        };
        let run = |decision, approval: Option<&Approval>| {
            outcome_for(Some(&payment), &effective(decision), approval).status
        };
        assert_eq!(run(Decision::Allow, None), Status::Executed);
        assert_eq!(run(Decision::Hold, Some(&approved)), Status::Executed);
        assert_eq!(run(Decision::Hold, Some(&declined)), Status::Skipped);
        assert_eq!(run(Decision::Hold, None), Status::Skipped);
        assert_eq!(run(Decision::Deny, Some(&approved)), Status::Skipped);
    }

    #[test]
    fn an_unknown_tool_fails() {
        let unknown = call(r#"{"agent":"b","tool":"Send_Payment","source":"user"}"#);
        let effective = Effective {
            decision: Decision::Allow,
            reasons: vec!["r".into()],
        };
        let outcome = outcome_for(Some(&unknown), &effective, None);
        assert_eq!(outcome.status, Status::Failed);
        assert!(
            outcome.reason.contains("no tool named \"Send_Payment\""),
            "{}",
            outcome.reason
        );
    }
}
