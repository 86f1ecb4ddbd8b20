//! `sc-gate`: calls in, verdicts out. Read → parse → decide → audit → write, one line at a time.
//!
//! The crew's state (taint, spend) lives in memory for the stream, or, with `--state`, in a
//! store shared with other processes of the crew ([`crate::store`]). With a store, the calls of
//! one read buffer (at most [`SHARED_BATCH_BYTES`] of lines, and never past a read that would
//! wait) are decided in one atomic update of the state, and their verdicts leave only after it
//! was written; if the store fails, every call of the batch is denied with the reason
//! `state store unavailable: …`, and the stream goes on.

use std::io::Write;
use std::time::SystemTime;

use anyhow::Result;

use crate::audit::chain::Chain;
use crate::audit::{self, IdMinter, Stage};
use crate::call::{Call, Malformed};
use crate::exit::Completion;
use crate::jsonl::{self, Input, InputLines, JsonLine, Line, StageOutput};
use crate::record::{self, CallText};
use crate::rules::decision::{decide, decide_in, CallContext};
use crate::rules::granting::Granted;
use crate::rules::policy::Policy;
use crate::rules::provenance::{self, ValueRecord};
use crate::rules::state::{AgentState, CrewState};
use crate::sanitize::for_terminal;
use crate::stage::door;
use crate::store::{self, Owner, Shared, Timing};
use crate::verdict::Judgement;

/// The most line bytes decided in one update of a shared state: one read buffer.
pub(crate) const SHARED_BATCH_BYTES: usize = 64 * 1024;

/// What `sc-gate` needs besides its streams.
#[derive(Debug, Clone)]
pub struct GateOptions {
    pub policy: Policy,
    pub max_line_bytes: usize,
    /// The clock decisions are made at, and `--taint-ttl`.
    pub timing: Timing,
    /// The audit key's chain: keyed, every verdict on a call is sealed
    /// ([`crate::audit::seal::verdict_seal`]), so that sc-exec can tell the gate's decision from a forged one.
    pub chain: Chain,
}

/// Decides every call of every input, in order, with the crew's state in memory. Inputs that
/// cannot be opened are reported on `diagnostics` and counted; the others are still read.
pub fn run<W: Write, E: Write>(
    inputs: &[Input],
    options: &GateOptions,
    output: &mut StageOutput<W, E>,
    diagnostics: &mut dyn Write,
) -> Result<Completion> {
    let mut ids = IdMinter::new();
    let mut state = CrewState::new();
    let mut rendered_states = RenderedStates::default();
    // The call of the line, read in place: each call is read into the last one's buffers, and
    // its id into the last one's.
    let mut scanned: Option<Call> = None;
    let mut id = String::new();
    let mut lines = InputLines::new("sc-gate", inputs, options.max_line_bytes, diagnostics);
    while let Some((line, input, line_number)) = lines.next_line()? {
        let now = options.timing.clock.now();
        let wall = match options.timing.clock.is_wall_clock() {
            true => now,
            false => SystemTime::now(),
        };
        let origin = (input, line_number);
        let decided = match line {
            Line::Text(bytes) if jsonl::is_blank(bytes) => None,
            Line::Text(bytes) => {
                if let Some(text) = Call::scan_line_into(bytes, &mut scanned) {
                    let call = scanned.as_ref().expect("a call was read into it");
                    ids.mint_into(&mut id);
                    let judgement = decide_call(call, &id, options, &mut state, now);
                    let verdict = Verdict {
                        id: &id,
                        judgement: &judgement,
                        call: Some(call),
                        text: CallText::Json(text),
                        origin,
                        at: wall,
                        agent: state.agent(&call.agent),
                    };
                    write_verdict(&verdict, &mut rendered_states, &[], &options.chain, output);
                    None
                } else {
                    match value_record(bytes) {
                        Some(Ok(record)) => {
                            state.enter(&options.policy, now, options.timing.taint_ttl);
                            let id = ids.mint();
                            let values = record.apply(&mut state, &id, &options.policy);
                            write_value_record(bytes, &id, &record, values, &[], output);
                            None
                        }
                        Some(Err((malformed, raw))) => {
                            Some(Decided::malformed(ids.mint(), &malformed, raw))
                        }
                        None => Some(decide_line(None, bytes, options, &mut state, now, &mut ids)),
                    }
                }
            }
            Line::TooLong { length, start } => Some(Decided::malformed(
                ids.mint(),
                &too_long(length, options),
                jsonl::raw_excerpt(start),
            )),
        };
        if let Some(decided) = decided {
            let id = decided.id;
            let agent = decided
                .call
                .as_ref()
                .and_then(|call| state.agent(&call.agent));
            let verdict = Verdict {
                id: &id,
                judgement: &decided.judgement,
                call: decided.call.as_ref(),
                text: decided.text.as_call_text(),
                origin,
                at: wall,
                agent,
            };
            write_verdict(&verdict, &mut rendered_states, &[], &options.chain, output);
        }
        output.commit_if_due(!lines.next_read_would_block())?;
    }
    output.commit()?;
    Ok(lines.completion())
}

/// Decides every call of every input, in order, with the crew's state in a shared store.
pub fn run_shared<W: Write, E: Write>(
    inputs: &[Input],
    options: &GateOptions,
    shared: &mut Shared,
    output: &mut StageOutput<W, E>,
    diagnostics: &mut dyn Write,
) -> Result<Completion> {
    let mut ids = IdMinter::new();
    let mut rendered_states = RenderedStates::default();
    let audit_members = store_members(shared);
    let mut batch: Vec<Pending> = Vec::new();
    let mut batch_bytes = 0;
    let mut lines = InputLines::new("sc-gate", inputs, options.max_line_bytes, diagnostics);
    while let Some((line, input, line_number)) = lines.next_line()? {
        match line {
            Line::Text(bytes) if jsonl::is_blank(bytes) => {}
            Line::Text(bytes) => {
                batch_bytes += bytes.len() + 1;
                let id = ids.mint();
                let origin = (input, line_number);
                let (scanned, record) = match read_line(bytes) {
                    Read::Call(call, text) => (Some((call, text)), None),
                    Read::Record(record) => (None, Some(record)),
                    Read::Other => (None, None),
                };
                batch.push(match record {
                    Some(Ok(record)) => Pending {
                        id,
                        // Taken with the batch.
                        judgement: Judgement::malformed(&Malformed::new("not taken")),
                        call: None,
                        text: LineText::Json(String::from_utf8_lossy(bytes).into_owned()),
                        origin,
                        agent: None,
                        record: Some((record, None)),
                    },
                    Some(Err((malformed, raw))) => Pending {
                        id,
                        judgement: Judgement::malformed(&malformed),
                        call: None,
                        text: LineText::Raw(raw),
                        origin,
                        agent: None,
                        record: None,
                    },
                    None => match scanned.map_or_else(|| Call::parse_line(bytes), Ok) {
                        Ok((call, text)) => Pending {
                            id,
                            // Decided with the batch.
                            judgement: Judgement::malformed(&Malformed::new("not decided")),
                            text: LineText::Json(text.to_owned()),
                            call: Some(call),
                            origin,
                            agent: None,
                            record: None,
                        },
                        Err(malformed) => Pending::malformed(id, &malformed, bytes, origin),
                    },
                });
            }
            Line::TooLong { length, start } => {
                batch_bytes += start.len();
                let malformed = too_long(length, options);
                batch.push(Pending::malformed(
                    ids.mint(),
                    &malformed,
                    start,
                    (input, line_number),
                ));
            }
        }
        let input_waiting = !lines.next_read_would_block();
        if !input_waiting || batch_bytes >= SHARED_BATCH_BYTES {
            settle(&mut batch, options, shared);
            for pending in batch.drain(..) {
                write_pending(
                    &pending,
                    &mut rendered_states,
                    &audit_members,
                    options,
                    output,
                );
            }
            batch_bytes = 0;
        }
        output.commit_if_due(input_waiting)?;
    }
    settle(&mut batch, options, shared);
    for pending in batch.drain(..) {
        write_pending(
            &pending,
            &mut rendered_states,
            &audit_members,
            options,
            output,
        );
    }
    output.commit()?;
    Ok(lines.completion())
}

/// The members every event of a shared state carries: which store, and which crew.
fn store_members(shared: &Shared) -> Vec<u8> {
    let line = JsonLine::new().str_field("stateStore", shared.describe_store());
    let mut line = match &shared.key().owner {
        Owner::Crew(crew) => line.str_field("crew", crew),
        Owner::Session(_) => line,
    }
    .finish();
    line.truncate(line.len() - b"}\n".len());
    line.remove(0);
    line
}

fn too_long(length: u64, options: &GateOptions) -> Malformed {
    Malformed::new(format!(
        "the line is {length} bytes, over the line limit of {} bytes",
        options.max_line_bytes
    ))
}

/// What a line is, at a first look.
enum Read<'a> {
    /// A plain call, read by the scanner, to be decided.
    Call(Call, &'a str),
    /// A `task` or `result` record, or the deny for a malformed one.
    Record(Result<ValueRecord, (Malformed, String)>),
    /// Anything else: the call reader words what it is.
    Other,
}

/// Reads a line as a plain call with the scanner, or else as a record ([`value_record`]). The
/// scanner refuses a line with a top-level `kind`, so a record is never taken for a call, and a
/// plain call is never searched for a `kind`.
fn read_line(bytes: &[u8]) -> Read<'_> {
    if let Some((call, text)) = Call::scan_line(bytes) {
        return Read::Call(call, text);
    }
    match value_record(bytes) {
        Some(record) => Read::Record(record),
        None => Read::Other,
    }
}

/// A `task` or `result` record in a line ([`crate::rules::provenance`]), or the deny for a
/// malformed one; `None` for a line that is not one (a call, or not readable as a record).
fn value_record(bytes: &[u8]) -> Option<Result<ValueRecord, (Malformed, String)>> {
    let (kind, object) = provenance::kind_of(bytes)?;
    Some(ValueRecord::from_object(&kind, &object).map_err(|why| {
        (
            Malformed::new(format!("malformed record: {why}")),
            jsonl::raw_excerpt(bytes),
        )
    }))
}

/// Writes a `task` or `result` record on unchanged, and its audit event: what it carried (its
/// SHA-256 and length, not the text) and how many values were taken.
fn write_value_record<W: Write, E: Write>(
    line: &[u8],
    id: &str,
    record: &ValueRecord,
    values: Option<usize>,
    store_members: &[u8],
    output: &mut StageOutput<W, E>,
) {
    output.emit_with(|events, records| {
        records.extend_from_slice(line);
        records.push(b'\n');
        let mut event = audit::event_in(std::mem::take(events), Stage::Gate, id, SystemTime::now())
            .raw_members(&record.event_members(values));
        if !store_members.is_empty() {
            event = event.raw_members(store_members);
        }
        *events = event.finish();
    });
    if output.narrating() {
        let taken = match values {
            Some(values) => format!("{values} values taken"),
            None => "no values taken".to_owned(),
        };
        output.narrate(&format!(
            "sc-gate: {:<5} {}: {taken}",
            record.kind().to_uppercase(),
            for_terminal(record.agent())
        ));
    }
}

fn write_pending<W: Write, E: Write>(
    pending: &Pending,
    rendered_states: &mut RenderedStates,
    store_members: &[u8],
    options: &GateOptions,
    output: &mut StageOutput<W, E>,
) {
    match (&pending.record, &pending.text) {
        (Some((record, Some(values))), LineText::Json(line)) => write_value_record(
            line.as_bytes(),
            &pending.id,
            record,
            *values,
            store_members,
            output,
        ),
        _ => write_verdict(
            &pending.verdict(),
            rendered_states,
            store_members,
            &options.chain,
            output,
        ),
    }
}

/// What a verdict carries of its line: the call's JSON (or the record's line), or an excerpt of a
/// line that could not be read ([`CallText`], owned or borrowed).
enum LineText<J> {
    Json(J),
    Raw(String),
}

impl<J: AsRef<str>> LineText<J> {
    fn as_call_text(&self) -> CallText<'_> {
        match self {
            LineText::Json(json) => CallText::Json(json.as_ref()),
            LineText::Raw(raw) => CallText::Raw(raw),
        }
    }
}

/// A line of a batch waiting for the shared state's update.
struct Pending<'i> {
    id: String,
    judgement: Judgement,
    call: Option<Call>,
    /// The call's JSON, or an excerpt of a malformed line.
    text: LineText<String>,
    origin: (&'i Input, u64),
    agent: Option<AgentState>,
    /// A `task` or `result` record, and, once the state took it, how many values it gave.
    record: Option<(ValueRecord, Option<Option<usize>>)>,
}

impl<'i> Pending<'i> {
    fn malformed(
        id: String,
        malformed: &Malformed,
        bytes: &[u8],
        origin: (&'i Input, u64),
    ) -> Self {
        Pending {
            id,
            judgement: Judgement::malformed(malformed),
            call: None,
            text: LineText::Raw(jsonl::raw_excerpt(bytes)),
            origin,
            agent: None,
            record: None,
        }
    }

    fn verdict(&self) -> Verdict<'_> {
        Verdict {
            id: &self.id,
            judgement: &self.judgement,
            call: self.call.as_ref(),
            text: self.text.as_call_text(),
            origin: self.origin,
            at: SystemTime::now(),
            agent: self.agent.as_ref(),
        }
    }
}

/// Decides a batch's calls in one update of the shared state; if the store fails, denies them.
fn settle(batch: &mut [Pending], options: &GateOptions, shared: &mut Shared) {
    if batch
        .iter()
        .all(|pending| pending.call.is_none() && pending.record.is_none())
    {
        return;
    }
    let policy = &options.policy;
    // The crew's remembered approvals, read once a batch, in its update.
    let result = door::transact_with_grants(
        shared,
        policy,
        &options.timing,
        &mut |state, now, grants| {
            for pending in batch.iter_mut() {
                if let Some((record, values)) = &mut pending.record {
                    *values = Some(record.apply(state, &pending.id, policy));
                }
                let Some(call) = &pending.call else {
                    continue;
                };
                let context = CallContext {
                    grants: Some(Granted { grants, now }),
                    ..CallContext::default()
                };
                pending.judgement = decide_in(call, &pending.id, policy, state, Some(now), context);
                pending.agent = state.agent(&call.agent).cloned();
            }
        },
    );
    if let Err(err) = result {
        let judgement = store::unavailable(&err);
        for pending in batch
            .iter_mut()
            .filter(|pending| pending.call.is_some() || pending.record.is_some())
        {
            pending.judgement = judgement.clone();
            pending.agent = None;
            // A record the store did not take is denied, with the reason, as a call would be.
            if let Some((_, values)) = &mut pending.record {
                *values = None;
                if let LineText::Json(line) = &pending.text {
                    pending.text = LineText::Raw(jsonl::raw_excerpt(line.as_bytes()));
                }
            }
        }
    }
}

/// A line's judgement, with what the verdict needs to carry of the line.
struct Decided<'a> {
    id: String,
    judgement: Judgement,
    call: Option<Call>,
    text: LineText<&'a str>,
}

impl Decided<'_> {
    fn malformed(id: String, malformed: &Malformed, raw: String) -> Decided<'static> {
        Decided {
            id,
            judgement: Judgement::malformed(malformed),
            call: None,
            text: LineText::Raw(raw),
        }
    }
}

/// Decides a line: the call the scanner already read from it, or read now.
fn decide_line<'a>(
    scanned: Option<(Call, &'a str)>,
    bytes: &'a [u8],
    options: &GateOptions,
    state: &mut CrewState,
    now: std::time::SystemTime,
    ids: &mut IdMinter,
) -> Decided<'a> {
    let id = ids.mint();
    match scanned.map_or_else(|| Call::parse_line(bytes), Ok) {
        Ok((call, text)) => Decided {
            judgement: decide_call(&call, &id, options, state, now),
            id,
            call: Some(call),
            text: LineText::Json(text),
        },
        Err(malformed) => Decided::malformed(id, &malformed, jsonl::raw_excerpt(bytes)),
    }
}

/// Decides a call read from a line, with the crew's state in memory, brought to `now` first.
fn decide_call(
    call: &Call,
    id: &str,
    options: &GateOptions,
    state: &mut CrewState,
    now: std::time::SystemTime,
) -> Judgement {
    state.enter(&options.policy, now, options.timing.taint_ttl);
    // In memory, the time of a taint matters only to `--taint-ttl` (no other process
    // reads this state); leaving it out keeps every event of a tainted agent shorter and
    // skips formatting a time for each call.
    let at = options.timing.taint_ttl.map(|_| now);
    decide(call, id, &options.policy, state, at)
}

/// What one verdict and its event are written from.
struct Verdict<'a> {
    id: &'a str,
    judgement: &'a Judgement,
    call: Option<&'a Call>,
    text: CallText<'a>,
    origin: (&'a Input, u64),
    /// When it was decided, by the wall clock: its event's `ts`.
    at: SystemTime,
    /// The agent's state after the call.
    agent: Option<&'a AgentState>,
}

fn write_verdict<W: Write, E: Write>(
    verdict: &Verdict,
    rendered_states: &mut RenderedStates,
    store_members: &[u8],
    chain: &Chain,
    output: &mut StageOutput<W, E>,
) {
    let judgement = verdict.judgement;
    output.emit_with(|events, records| {
        // The record's `{`: its members from `"id"` on follow it.
        let opens = records.len();
        let grantable = record::grantable_text(judgement);
        let (mut batch, shared) = record::write_verdict(
            std::mem::take(records),
            verdict.id,
            verdict.text,
            judgement,
            grantable.as_deref(),
        );
        if let CallText::Json(call) = verdict.text {
            if let Some(seal) = crate::audit::seal::verdict_seal(
                chain,
                verdict.id,
                call,
                judgement.decision,
                &judgement.reasons,
                grantable.as_deref(),
            ) {
                record::push_seal(&mut batch, &seal.hex());
            }
        }
        *records = batch;
        // The event repeats the verdict's id, call, decision and reasons as just written, then
        // the agent's state after this call, so the report can say who was tainted by what.
        let state = match (verdict.call, verdict.agent) {
            (Some(call), Some(agent)) => rendered_states.render(&call.agent, agent),
            _ => &[],
        };
        // Written by the thread that appends it, from the record ([`audit::deferred`]).
        if audit::deferred::push(
            events,
            verdict.at,
            Stage::Gate,
            opens + 1..shared.end,
            &[state, store_members],
        ) {
            return;
        }
        *events = audit::event_in(std::mem::take(events), Stage::Gate, verdict.id, verdict.at)
            .raw_members(&records[shared])
            .raw_members(state)
            .raw_members(store_members)
            .finish();
    });
    if !output.narrating() {
        return;
    }
    let (input, line_number) = verdict.origin;
    let who = match verdict.call {
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
    agents: foldhash::HashMap<String, RenderedState>,
}

struct RenderedState {
    tainted: bool,
    /// The taint's cause's id and time (which moves on with every untrusted read).
    taint: Option<(String, Option<String>)>,
    spent: u64,
    inexact: bool,
    member: Vec<u8>,
    /// Where the spend's fields begin in `member`: a spend that moved while the taint did not
    /// (most changes, one with each amount) is written again from there on.
    spent_at: usize,
}

/// Where the `agentState` object opens in its member: after `"agentState":`.
const STATE_OPENS: usize = "\"agentState\":".len();

impl RenderedStates {
    fn render(&mut self, name: &str, state: &AgentState) -> &[u8] {
        let (tainted, spent, inexact) = (
            state.tainted_by.is_some(),
            state.spent.to_bits(),
            state.inexact,
        );
        let taint = state
            .tainted_by
            .as_ref()
            .map(|cause| (cause.id.as_str(), cause.at.as_deref()));
        if !self.agents.contains_key(name) {
            let stale = RenderedState {
                tainted: !tainted,
                taint: None,
                spent,
                inexact,
                member: Vec::new(),
                spent_at: 0,
            };
            self.agents.insert(name.to_owned(), stale);
        }
        let rendered = self.agents.get_mut(name).expect("inserted above");
        // A taint's cause is replaced only after a TTL lifted it: its id and time say whether
        // it changed.
        let same_taint = rendered.tainted == tainted
            && rendered
                .taint
                .as_ref()
                .map(|(id, at)| (id.as_str(), at.as_deref()))
                == taint;
        if !same_taint {
            let mut buffer = std::mem::take(&mut rendered.member);
            buffer.clear();
            let mut spent_at = 0;
            let mut line = JsonLine::append_to(buffer)
                .object_field("agentState", |fields| {
                    let fields = taint_fields(fields, state);
                    spent_at = fields.len();
                    spent_fields(fields, state)
                })
                .finish();
            // Only the member: without the braces and line ending that make it a line.
            line.truncate(line.len() - b"}\n".len());
            line.remove(0);
            *rendered = RenderedState {
                tainted,
                taint: taint.map(|(id, at)| (id.to_owned(), at.map(str::to_owned))),
                spent,
                inexact,
                member: line,
                spent_at: spent_at - 1,
            };
        } else if (rendered.spent, rendered.inexact) != (spent, inexact) {
            let mut buffer = std::mem::take(&mut rendered.member);
            buffer.truncate(rendered.spent_at);
            let mut line = spent_fields(JsonLine::resume(buffer, STATE_OPENS), state).finish();
            // The object's `}` kept, the line's ending not.
            line.truncate(line.len() - 1);
            rendered.member = line;
            rendered.spent = spent;
            rendered.inexact = inexact;
        }
        &rendered.member
    }
}

/// An [`AgentState`]'s fields, written as its `Serialize` writes them (a test keeps the two
/// the same), without going through serde for every event: its taint, then its spend. Not
/// written: the taint's other sources read since and its count of reads past them (`also`,
/// `readsPast`), which would lengthen every event of a tainted agent and change with each read;
/// a hold's `grantable.sources`, which its event repeats, lists them where a decision used them
/// (docs/audit.md).
fn taint_fields(fields: JsonLine, state: &AgentState) -> JsonLine {
    match &state.tainted_by {
        Some(cause) => fields.object_field("taintedBy", |taint| {
            let taint = taint
                .str_field("agent", &cause.agent)
                .str_field("tool", &cause.tool)
                .str_field("id", &cause.id);
            let taint = match &cause.argument {
                Some(argument) => taint.str_field("argument", argument),
                None => taint,
            };
            match &cause.at {
                Some(at) => taint.str_field("at", at),
                None => taint,
            }
        }),
        None => fields,
    }
}

/// The spend's fields of an [`AgentState`], after [`taint_fields`].
fn spent_fields(fields: JsonLine, state: &AgentState) -> JsonLine {
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
    use crate::rules::state::TaintCause;

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
        // The spend alone moves on, and back, under a taint and without one.
        for spent in [13.0, 0.1 + 0.2, 1e21, 0.0] {
            state.spent = spent;
            check(&state, &mut rendered);
        }
        state.inexact = false;
        check(&state, &mut rendered);
        state.tainted_by = None;
        check(&state, &mut rendered);
        for spent in [7.25, 1e300] {
            state.spent = spent;
            check(&state, &mut rendered);
        }
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
            AgentState {
                tainted_by: Some(cause(None).at(Some("2026-12-02T13:45:10Z".into()))),
                spent: 5.0,
                inexact: false,
            },
        ] {
            let ours = JsonLine::new()
                .object_field("agentState", |f| {
                    spent_fields(taint_fields(f, &state), &state)
                })
                .finish();
            let serde = JsonLine::new().field("agentState", &state).finish();
            assert_eq!(String::from_utf8(ours), String::from_utf8(serde));
        }
    }
}
