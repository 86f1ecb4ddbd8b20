//! `sc-gate`: calls in, verdicts out. Read → parse → decide → audit → write, one line at a time.

use std::collections::HashMap;
use std::io::Write;

use anyhow::Result;

use crate::audit::chain::Chain;
use crate::audit::{self, IdMinter, Stage};
use crate::call::{Call, Malformed};
use crate::decision::{evaluate_with_state, Judgement};
use crate::exit::Completion;
use crate::jsonl::{self, Input, InputLines, JsonLine, Line, StageOutput};
use crate::policy::Policy;
use crate::record::{self, CallText};
use crate::sanitize::for_terminal;
use crate::state::{AgentState, CrewState};

/// What `sc-gate` needs besides its streams.
#[derive(Debug, Clone)]
pub struct GateOptions {
    pub policy: Policy,
    pub max_line_bytes: usize,
    /// The audit key's chain: keyed, every verdict on a call is sealed
    /// ([`record::verdict_seal`]), so that sc-exec can tell the gate's decision from a forged one.
    pub chain: Chain,
}

/// Decides every call of every input, in order. Inputs that cannot be opened are reported on
/// `diagnostics` and counted; the others are still read.
pub fn run<W: Write, E: Write>(
    inputs: &[Input],
    options: &GateOptions,
    output: &mut StageOutput<W, E>,
    diagnostics: &mut dyn Write,
) -> Result<Completion> {
    let mut ids = IdMinter::new();
    let mut state = CrewState::new();
    let mut rendered_states = RenderedStates::default();
    let mut lines = InputLines::new("sc-gate", inputs, options.max_line_bytes, diagnostics);
    while let Some((line, input, line_number)) = lines.next_line()? {
        let decided = match line {
            Line::Text(bytes) if jsonl::is_blank(bytes) => None,
            Line::Text(bytes) => Some(decide_line(bytes, &options.policy, &state)),
            Line::TooLong { length, start } => Some(Decided::malformed(
                &Malformed::new(format!(
                    "the line is {length} bytes, over the line limit of {} bytes",
                    options.max_line_bytes
                )),
                jsonl::raw_excerpt(start),
            )),
        };
        if let Some(decided) = decided {
            let id = ids.mint();
            if let Some(call) = &decided.call {
                state.record(call, &id, &decided.judgement, &options.policy);
            }
            write_decided(
                &id,
                &decided,
                (input, line_number),
                &state,
                &mut rendered_states,
                &options.chain,
                output,
            );
        }
        output.commit_if_due(!lines.next_read_would_block())?;
    }
    output.commit()?;
    Ok(lines.completion())
}

/// A line's judgement, with what the verdict needs to carry of the line.
struct Decided<'a> {
    judgement: Judgement,
    call: Option<Call>,
    text: Result<&'a str, String>,
}

impl Decided<'_> {
    fn malformed(malformed: &Malformed, raw: String) -> Decided<'static> {
        Decided {
            judgement: Judgement::malformed(malformed),
            call: None,
            text: Err(raw),
        }
    }
}

fn decide_line<'a>(bytes: &'a [u8], policy: &Policy, state: &CrewState) -> Decided<'a> {
    match Call::parse_line(bytes) {
        Ok((call, text)) => Decided {
            judgement: evaluate_with_state(&call, policy, state),
            call: Some(call),
            text: Ok(text),
        },
        Err(malformed) => Decided::malformed(&malformed, jsonl::raw_excerpt(bytes)),
    }
}

fn write_decided<W: Write, E: Write>(
    id: &str,
    decided: &Decided,
    (input, line_number): (&Input, u64),
    state: &CrewState,
    rendered_states: &mut RenderedStates,
    chain: &Chain,
    output: &mut StageOutput<W, E>,
) {
    let call_text = match &decided.text {
        Ok(json) => CallText::Json(json),
        Err(raw) => CallText::Raw(raw),
    };
    let judgement = &decided.judgement;
    output.emit_with(|events, records| {
        let (mut batch, shared) =
            record::write_verdict(std::mem::take(records), id, call_text, judgement);
        if let CallText::Json(call) = call_text {
            if let Some(seal) = record::verdict_seal(chain, id, call, judgement.decision) {
                record::push_seal(&mut batch, &seal);
            }
        }
        *records = batch;
        // The event repeats the verdict's call, decision and reasons as just written.
        let mut event =
            audit::event_in(std::mem::take(events), Stage::Gate, id).raw_members(&records[shared]);
        // The agent's state after this call, so the report can say who was tainted by what.
        if let Some(call) = &decided.call {
            if let Some(agent) = state.agent(&call.agent) {
                event = event.raw_members(rendered_states.render(&call.agent, agent));
            }
        }
        *events = event.finish();
    });
    if !output.narrating() {
        return;
    }
    let who = match &decided.call {
        Some(call) => format!(
            "{} → {}",
            for_terminal(&call.agent),
            for_terminal(&call.tool)
        ),
        None => format!("{} line {line_number}", input.name()),
    };
    output.narrate(&format!(
        "sc-gate: {:<5} {who}: {}",
        judgement.decision.as_str().to_uppercase(),
        for_terminal(&judgement.reasons.join("; "))
    ));
}

/// Each agent's `"agentState":{…}` member as last written. An agent's state changes seldom (its
/// taint is set once, its spend only with an amount), while every one of its calls' events
/// carries it, so it is written again only when it changed.
#[derive(Default)]
struct RenderedStates {
    agents: HashMap<String, RenderedState>,
}

struct RenderedState {
    tainted: bool,
    spent: u64,
    inexact: bool,
    member: Vec<u8>,
}

impl RenderedStates {
    fn render(&mut self, name: &str, state: &AgentState) -> &[u8] {
        let (tainted, spent, inexact) = (
            state.tainted_by.is_some(),
            state.spent.to_bits(),
            state.inexact,
        );
        if !self.agents.contains_key(name) {
            let stale = RenderedState {
                tainted: !tainted,
                spent,
                inexact,
                member: Vec::new(),
            };
            self.agents.insert(name.to_owned(), stale);
        }
        let rendered = self.agents.get_mut(name).expect("inserted above");
        // A taint, once set, is never replaced, so whether there is one says whether it changed.
        if (rendered.tainted, rendered.spent, rendered.inexact) != (tainted, spent, inexact) {
            let mut buffer = std::mem::take(&mut rendered.member);
            buffer.clear();
            let mut line = JsonLine::append_to(buffer)
                .object_field("agentState", |fields| agent_state_fields(fields, state))
                .finish();
            // Only the member: without the braces and line ending that make it a line.
            line.truncate(line.len() - b"}\n".len());
            line.remove(0);
            *rendered = RenderedState {
                tainted,
                spent,
                inexact,
                member: line,
            };
        }
        &rendered.member
    }
}

/// An [`AgentState`]'s fields, written as its `Serialize` writes them (a test keeps the two
/// the same), without going through serde for every event.
fn agent_state_fields(fields: JsonLine, state: &AgentState) -> JsonLine {
    let fields = match &state.tainted_by {
        Some(cause) => fields.object_field("taintedBy", |taint| {
            let taint = taint
                .str_field("agent", &cause.agent)
                .str_field("tool", &cause.tool)
                .str_field("id", &cause.id);
            match &cause.argument {
                Some(argument) => taint.str_field("argument", argument),
                None => taint,
            }
        }),
        None => fields,
    };
    let fields = fields.field("spent", &state.spent);
    if state.inexact {
        fields.field("inexact", &true)
    } else {
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::TaintCause;

    #[test]
    fn an_agent_state_is_written_again_whenever_it_changed() {
        let fresh = |state: &AgentState| {
            let line = JsonLine::new().field("agentState", state).finish();
            line[1..line.len() - 2].to_vec()
        };
        let mut rendered = RenderedStates::default();
        let mut state = AgentState::default();
        let check = |state: &AgentState, rendered: &mut RenderedStates| {
            assert_eq!(
                String::from_utf8_lossy(rendered.render("a", state)),
                String::from_utf8_lossy(&fresh(state))
            );
        };
        check(&state, &mut rendered);
        check(&state, &mut rendered);
        state.spent = 12.5;
        check(&state, &mut rendered);
        state.tainted_by = Some(TaintCause::new(
            "a".into(),
            "fetch_page".into(),
            "x-1".into(),
            None,
        ));
        check(&state, &mut rendered);
        state.inexact = true;
        check(&state, &mut rendered);
        assert_eq!(
            String::from_utf8_lossy(rendered.render("b", &AgentState::default())),
            String::from_utf8_lossy(&fresh(&AgentState::default()))
        );
    }

    #[test]
    fn agent_states_are_written_as_serde_writes_them() {
        let cause = |argument: Option<&str>| {
            TaintCause::new(
                "helper \"h\"".into(),
                "fetch_page".into(),
                "abc-1".into(),
                argument.map(str::to_owned),
            )
        };
        for state in [
            AgentState::default(),
            AgentState {
                tainted_by: Some(cause(Some("url=https://x.test/\u{1b}é"))),
                spent: 1234.5,
                inexact: false,
            },
            AgentState {
                tainted_by: Some(cause(None)),
                spent: 1e21,
                inexact: true,
            },
        ] {
            let ours = JsonLine::new()
                .object_field("agentState", |f| agent_state_fields(f, &state))
                .finish();
            let serde = JsonLine::new().field("agentState", &state).finish();
            assert_eq!(String::from_utf8(ours), String::from_utf8(serde));
        }
    }
}
