//! The summary built from audit logs, one event at a time ([`Summariser`]).
//!
//! The summary is built once ([`Summariser`]) and rendered for people ([`render_text`]), for a CI
//! job summary ([`render_markdown`]) or for programs ([`write_json`]), so all show the same
//! numbers. A torn or malformed log line is reported as a problem, never fatal: the rest of the
//! log still counts.
//!
//! Memory does not grow with the log. A call's events (gate, approve, exec) are joined by id in a
//! window of the last [`CALL_WINDOW_EVENTS`] events: a call leaves the window, and is folded into
//! the counts as its events then stand, when that many events have been read since its first.
//! Every stage writes a call's events long before that, so the counts are those of joining every
//! event of the log. An event that comes later still counts (see [`Summariser`]). Vetoes are
//! listed in the order their calls were first seen; the text and markdown reports list the first
//! [`LISTED`], and the JSON report every one, streamed from a temporary file.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Read;
use std::rc::Rc;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::record::{Approval, Status};
use crate::rules::state::AgentState;
use crate::verdict::Decision;

use super::batch::{self, Item};

/// Why an event of a log cannot be counted: reported as a problem of its line.
#[derive(Debug, thiserror::Error)]
pub(super) enum EventProblem {
    #[error("event has no `{0}`")]
    Missing(&'static str),
    /// The stage (with a space, or empty) and the member.
    #[error("{0}event has no valid `{1}`")]
    Invalid(&'static str, &'static str),
    #[error("a second gate event for id {0}")]
    SecondGate(String),
    #[error("unknown stage {0}")]
    UnknownStage(Value),
}
use super::counts::*;
use super::event::{strings, EventView, Reasons, StateView};
use super::listing::Listing;
use super::listing::LISTED;
use super::starts::{kept_id, StartLine, Starts};
use super::summary::*;
use super::timeline::Timeline;
use super::window::{CallId, IdIndex};
use crate::audit::blocks::Worker;

/// How many events after a call's first event its other events are joined to it. Past that, the
/// call is folded into the counts as it stands, and its record is dropped.
pub(crate) const CALL_WINDOW_EVENTS: u64 = 100_000;

/// Agent and tool names are shared by the calls that name them; past this many different names,
/// the table of names is started afresh (names in use stay alive with their calls).
pub(super) const NAME_TABLE_LIMIT: usize = 4096;

/// The most of a vetoed call's arguments (JSON text) kept for the HTML report.
pub(super) const ARGS_KEPT: usize = 2048;

/// An argument as a POSIX shell reads it back: as it is when it is plain, else single-quoted.
pub(super) fn shell_word(arg: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        Cow::Borrowed(arg)
    } else {
        Cow::Owned(format!("'{}'", arg.replace('\'', r"'\''")))
    }
}

/// A gate's reasons, kept for a call that may become a veto that is shown: the JSON text of the
/// array (as the scanner found it, or written again from the strings the reference reading took),
/// read only if the veto is shown.
pub(super) fn kept_reasons(reasons: &Reasons) -> Box<str> {
    match reasons {
        Reasons::Text(text) => (*text).into(),
        Reasons::List(list) => Value::from(list.clone()).to_string().into(),
    }
}

/// A call's arguments as kept for a veto that may be shown: at most [`ARGS_KEPT`] bytes of their
/// JSON text.
pub(super) fn kept_args(args: &str) -> Box<str> {
    if args.len() <= ARGS_KEPT {
        return args.into();
    }
    let mut cut = ARGS_KEPT;
    while !args.is_char_boundary(cut) {
        cut -= 1;
    }
    args[..cut].into()
}

/// Kept arguments as a veto shows them: as compact JSON when they are whole, else as kept, cut
/// with `…`.
pub(super) fn shown_args(kept: &str) -> String {
    match serde_json::from_str::<Value>(kept) {
        Ok(args) => args.to_string(),
        Err(_) => format!("{kept}…"),
    }
}

/// The strings among kept reasons.
pub(super) fn reason_strings(text: &str) -> Vec<String> {
    match serde_json::from_str::<Vec<Value>>(text) {
        Ok(items) => strings(Some(&Value::Array(items))),
        // The scanner checked the text; were it not an array after all, none of it would be
        // worth showing.
        Err(_) => Vec::new(),
    }
}

/// A call's agent and tool, shared by the calls that name the same two.
pub(super) struct Names {
    pub(super) agent: Box<str>,
    pub(super) tool: Box<str>,
}

/// What the logs say about one call, while it is in the window.
pub(super) struct Trail {
    pub(super) id: CallId,
    /// The id's hash in the [`IdIndex`].
    pub(super) hash: u64,
    /// The number of events counted when its first event was read.
    pub(super) first_seen: u64,
    /// The agent and tool, once an event named them.
    pub(super) names: Option<Rc<Names>>,
    pub(super) decision: Option<Decision>,
    /// The gate's reasons (see [`kept_reasons`]), kept only for a call that may become a veto
    /// that is shown.
    pub(super) reasons: Option<Box<str>>,
    /// The call's arguments (JSON text, cut to [`ARGS_KEPT`]), kept only for the HTML report's
    /// vetoes.
    pub(super) args: Option<Box<str>>,
    /// The time of its gate event (seconds since the epoch), for the timeline.
    pub(super) at: Option<u64>,
    pub(super) approval: Option<Answer>,
    pub(super) status: Option<Status>,
    /// Allowed by an earlier approval (a grant).
    pub(super) by_grant: bool,
}

/// What an approval said, as far as the report needs it.
pub(super) enum Answer {
    Approved,
    /// Declined, with the approval's reason.
    Declined(Box<str>),
}

impl Answer {
    pub(super) fn of(approval: &Approval) -> Answer {
        if approval.approved {
            Answer::Approved
        } else {
            Answer::Declined(approval.reason.as_str().into())
        }
    }
}

/// Per agent: the counts shown, and what may still move them when an event comes after its call
/// has left the window.
#[derive(Default)]
pub(super) struct AgentTally {
    pub(super) summary: AgentSummary,
    /// Holds that left the window with no answer (counted as never answered).
    pub(super) folded_unanswered: u64,
    /// Calls that left the window with no outcome.
    pub(super) folded_without_outcome: u64,
}

/// An agent's last `agentState`, with the text it was read from (an event that repeats the text
/// is not read again).
pub(super) struct LastState {
    pub(super) text: String,
    pub(super) state: AgentState,
}

/// Builds a summary from audit logs, read as streams in the order given.
///
/// Calls are joined by id in a window ([`CALL_WINDOW_EVENTS`]). An event that comes after its
/// call left the window still counts, by what the event says: an approval by an agent with holds
/// folded as never answered moves one of them to approved or declined (its veto then names the
/// approval's reason only, and is listed where the approval came); an outcome by an agent with
/// calls folded without one is added to the outcomes and to the agent's executed count. Any other
/// event counts as an event whose call was never seen (an outcome is counted, an approval alone is
/// not a call). A second gate event for an id is a problem while the first is in the window.
pub struct Summariser {
    pub(super) filter: Filter,
    pub(super) summary: Summary,
    pub(super) window: u64,
    /// The calls in the window, in the order first seen: `calls[0]` is call number `first`.
    pub(super) calls: VecDeque<Trail>,
    pub(super) first: u64,
    /// Each call id in the window, with its number.
    pub(super) ids: IdIndex,
    /// Names by agent, then tool, and how many there are.
    pub(super) names: HashMap<Box<str>, HashMap<Box<str>, Rc<Names>>>,
    pub(super) name_count: usize,
    pub(super) agents: BTreeMap<Box<str>, AgentTally>,
    pub(super) agent_states: HashMap<String, LastState>,
    pub(super) vetoes: Listing<Veto>,
    pub(super) problems: Listing<Problem>,
    /// Counting the timeline and keeping vetoes' arguments (the HTML report).
    pub(super) timeline: Option<Timeline>,
    /// With the filter's agent: the events of that agent (its calls' events, and the resets of
    /// its state), which the summary counts instead of every event read.
    pub(super) agent_events: u64,
    /// sc-exec's starts still waiting for their outcome ([`Starts`]).
    pub(super) starts: Starts,
    /// The log and line being read, for a start's problem.
    pub(super) reading: (Rc<str>, u64),
}

impl Default for Summariser {
    fn default() -> Self {
        Summariser::with_filter(Filter::default())
    }
}

impl Summariser {
    pub fn new() -> Self {
        Self::default()
    }

    /// A summariser that counts only what the filter admits. It keeps the first
    /// [`LISTED`] vetoes and counts the others (see [`Summariser::keeping_every_veto`]).
    pub fn with_filter(filter: Filter) -> Self {
        Summariser {
            filter,
            summary: Summary::default(),
            window: CALL_WINDOW_EVENTS,
            calls: VecDeque::new(),
            first: 0,
            ids: IdIndex::default(),
            names: HashMap::new(),
            name_count: 0,
            agents: BTreeMap::new(),
            agent_states: HashMap::new(),
            vetoes: Listing::default(),
            problems: Listing::default(),
            timeline: None,
            agent_events: 0,
            starts: Starts::default(),
            reading: ("".into(), 0),
        }
    }

    /// Also counts decisions per time bucket (the timeline) and the span of the events, and
    /// keeps the arguments of the vetoes listed: what the HTML report shows besides the others.
    pub fn with_page_details(mut self) -> Self {
        self.timeline = Some(Timeline::default());
        self
    }

    /// Keeps every veto and every problem, in a temporary file that is gone when the summary
    /// is, so that the JSON report lists them all.
    pub fn keeping_everything(mut self) -> Result<Self> {
        self.vetoes.keep_all()?;
        self.problems.keep_all()?;
        Ok(self)
    }

    /// A window of `events` events instead of [`CALL_WINDOW_EVENTS`], for tests.
    #[cfg(test)]
    pub(super) fn with_window(mut self, events: u64) -> Self {
        self.window = events;
        self
    }

    /// Reads one log. Errors only when the log cannot be read at all (or the vetoes cannot be
    /// kept). The lines are read on a second thread (see [`crate::audit::blocks`]) and joined on this one.
    pub fn read_log(&mut self, name: &str, mut log: impl Read) -> Result<()> {
        self.summary.logs.push(name.to_owned());
        let log_name: Rc<str> = name.into();
        let mut worker = Worker::new(batch::reader()).context("cannot start a thread")?;
        let mut line = 0;
        while let Some(done) = worker
            .next(&mut log)
            .with_context(|| format!("cannot read {name}"))?
        {
            let batch = &done.output;
            for item in &batch.items {
                line += 1;
                self.reading = (log_name.clone(), line);
                let problem = match item {
                    Item::Blank => None,
                    Item::Problem(problem) => Some(batch.text(*problem).to_owned()),
                    Item::Event(event) => self
                        .count_event(&batch.view(event))
                        .err()
                        .map(|problem| problem.to_string()),
                };
                match problem {
                    Some(problem) if self.problems.wants_details() => {
                        self.problems.push(Problem {
                            log: name.to_owned(),
                            line,
                            problem,
                        });
                    }
                    Some(_) => self.problems.count_unshown(),
                    None => {}
                }
            }
        }
        self.vetoes.check()?;
        self.problems.check()
    }

    pub(super) fn count_event(&mut self, event: &EventView) -> Result<(), EventProblem> {
        let id = event.id.as_deref().ok_or(EventProblem::Missing("id"))?;
        let stage = event
            .stage
            .as_deref()
            .ok_or(EventProblem::Missing("stage"))?;
        // Before the time window: a start inside it is done by an outcome after it.
        self.note_start_or_outcome(id, stage, event);
        let mut at = None;
        if self.filter.has_time_window() || self.timeline.is_some() {
            let ts = event
                .ts
                .as_deref()
                .and_then(|ts| humantime::parse_rfc3339(ts).ok());
            if self.filter.has_time_window() {
                let ts = ts.ok_or(EventProblem::Invalid("", "ts"))?;
                if !self.filter.admits_time(ts) {
                    return Ok(());
                }
            }
            at = ts
                .and_then(|ts| ts.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|since| since.as_secs());
        }
        self.summary.events += 1;
        if self.filter.agent.is_some() && self.is_the_agents(stage, event) {
            self.agent_events += 1;
        }
        if let (Some(timeline), Some(at)) = (&mut self.timeline, at) {
            timeline.saw(at);
        }
        let result = self.join(id, stage, event, at);
        self.slide();
        result
    }

    /// Keeps an `exec-start` of the filter's agent until an `exec` event of its id comes; a start
    /// pushed out of the [`Starts`] kept is a problem at once.
    fn note_start_or_outcome(&mut self, id: &str, stage: &str, event: &EventView) {
        match stage {
            "exec-start" if self.filter.agent.is_none() || self.is_the_agents(stage, event) => {
                let (log, line) = &self.reading;
                let start = StartLine {
                    log: log.clone(),
                    line: *line,
                    id: kept_id(id),
                };
                if let Some(pushed) = self.starts.begin(start) {
                    self.start_problem(pushed, true);
                }
            }
            // Only an outcome of a backend that ran ends its start: a later `exec` of the same
            // id that ran none (a sealed record fed again to an sc-exec that skipped or failed
            // it) says nothing of how the started one ended.
            "exec" if event.ran_backend => self.starts.end(id),
            _ => {}
        }
    }

    fn start_problem(&mut self, start: StartLine, pushed_out: bool) {
        if !self.problems.wants_details() {
            return self.problems.count_unshown();
        }
        let problem = start.problem(pushed_out);
        self.problems.push(Problem {
            log: start.log.to_string(),
            line: start.line,
            problem,
        });
    }

    /// Whether an event is the filter's agent's: a gate event names it in its `call`, the others
    /// in `agent`; a reset of every agent's state is each agent's.
    pub(super) fn is_the_agents(&self, stage: &str, event: &EventView) -> bool {
        let agent = match (stage, &event.call) {
            ("gate", Some((agent, _))) => Some(&**agent),
            _ => event.agent.as_deref(),
        };
        match agent {
            Some(agent) => self.filter.admits_agent(agent),
            None => stage == "state",
        }
    }

    /// Adds one counted event to its call.
    pub(super) fn join(
        &mut self,
        id: &str,
        stage: &str,
        event: &EventView,
        at: Option<u64>,
    ) -> Result<(), EventProblem> {
        match stage {
            // A task or result record (value provenance): not a call.
            "gate" if matches!(event.kind.as_deref(), Some("task" | "result")) => {}
            "gate" => {
                let decision = event
                    .decision
                    .as_deref()
                    .and_then(Decision::parse)
                    .ok_or(EventProblem::Invalid("gate ", "decision"))?;
                let open = self.find(id);
                if open
                    .1
                    .is_some_and(|number| self.call(number).decision.is_some())
                {
                    return Err(EventProblem::SecondGate(id.to_owned()));
                }
                let (agent, tool) = match &event.call {
                    Some((agent, tool)) => (&**agent, &**tool),
                    None => ("(malformed call)", "-"),
                };
                if let Some(state) = &event.agent_state {
                    self.note_state(agent, state);
                }
                let names = self.names(agent, tool);
                // Only a veto (a deny, or a hold that is declined) shows its reasons.
                let shown = decision != Decision::Allow && self.vetoes.wants_details();
                let reasons = shown.then(|| kept_reasons(&event.reasons));
                let args = match &event.args {
                    Some(args) if shown && self.timeline.is_some() => Some(kept_args(args)),
                    _ => None,
                };
                let by_grant = event.allowed_by_grant();
                let trail = self.trail(open, id);
                trail.decision = Some(decision);
                trail.by_grant = by_grant;
                trail.reasons = reasons;
                trail.args = args;
                trail.at = at;
                trail.names = Some(names);
            }
            "approve" => {
                let approval = event
                    .approval
                    .as_ref()
                    .ok_or(EventProblem::Invalid("approve ", "approval"))?;
                let open = self.find(id);
                if open.1.is_none() && self.late_answer(id, event, approval) {
                    return Ok(());
                }
                self.trail(open, id).approval = Some(Answer::of(approval));
            }
            "exec" => {
                let status = event
                    .status
                    .ok_or(EventProblem::Invalid("exec ", "outcome"))?;
                let open = self.find(id);
                if open.1.is_none() && self.late_outcome(event, status) {
                    return Ok(());
                }
                let named = open
                    .1
                    .is_some_and(|number| self.call(number).names.is_some());
                let names = (!named).then(|| {
                    self.names(
                        event.agent.as_deref().unwrap_or("?"),
                        event.tool.as_deref().unwrap_or("?"),
                    )
                });
                let trail = self.trail(open, id);
                trail.status = Some(status);
                if names.is_some() {
                    trail.names = names;
                }
            }
            // `sc-state init` made the store: not a call, and nothing to list.
            "state" if event.made_store => {}
            // `sc-state reset`: listed, not a call.
            "state" => {
                self.summary.reset_count += 1;
                if self.summary.resets.len() < LISTED {
                    self.summary.resets.push(Reset {
                        ts: event.ts.as_deref().unwrap_or("?").to_owned(),
                        id: id.to_owned(),
                        agent: event.agent.as_deref().map(str::to_owned),
                    });
                }
            }
            // sc-sandbox's egress and sc-inbox's answers: about calls the doors' own events
            // count, so not calls themselves, and no problem. sc-exec's `exec-start`, written
            // before a backend starts, is not an outcome: the call's `exec` event counts it.
            "sandbox" | "inbox" | "exec-start" => {}
            other => return Err(EventProblem::UnknownStage(Value::String(other.to_owned()))),
        }
        Ok(())
    }

    pub(super) fn call(&self, number: u64) -> &Trail {
        &self.calls[(number - self.first) as usize]
    }

    /// The id's hash, and the number of its call if it is in the window.
    pub(super) fn find(&self, id: &str) -> (u64, Option<u64>) {
        let id = id.as_bytes();
        let hash = self.ids.hash(id);
        if let Some(number) = self.ids.by_hash(hash) {
            if self.call(number).id.bytes() == id {
                return (hash, Some(number));
            }
        }
        (hash, self.ids.collided(id))
    }

    /// The call in the window that [`Summariser::find`] found, or a new one for `id`.
    pub(super) fn trail(&mut self, (hash, open): (u64, Option<u64>), id: &str) -> &mut Trail {
        let number = match open {
            Some(number) => number,
            None => {
                let number = self.first + self.calls.len() as u64;
                let id = CallId::new(id);
                self.ids.insert(&id, hash, number);
                self.calls.push_back(Trail {
                    id,
                    hash,
                    first_seen: self.summary.events,
                    names: None,
                    decision: None,
                    reasons: None,
                    args: None,
                    at: None,
                    approval: None,
                    status: None,
                    by_grant: false,
                });
                number
            }
        };
        &mut self.calls[(number - self.first) as usize]
    }

    /// A shared copy of an agent's and tool's names.
    pub(super) fn names(&mut self, agent: &str, tool: &str) -> Rc<Names> {
        if let Some(names) = self.names.get(agent).and_then(|tools| tools.get(tool)) {
            return names.clone();
        }
        if self.name_count >= NAME_TABLE_LIMIT {
            self.names.clear();
            self.name_count = 0;
        }
        let names = Rc::new(Names {
            agent: agent.into(),
            tool: tool.into(),
        });
        self.names
            .entry(agent.into())
            .or_default()
            .insert(tool.into(), names.clone());
        self.name_count += 1;
        names
    }

    /// Keeps an agent's latest state, reading its text only when it changed.
    pub(super) fn note_state(&mut self, agent: &str, state: &StateView) {
        let last = self.agent_states.get_mut(agent);
        let (text, state) = match state {
            StateView::Text(text) => {
                if last.as_ref().is_some_and(|last| last.text == *text) {
                    return;
                }
                match serde_json::from_str::<AgentState>(text) {
                    Ok(state) => (*text, state),
                    Err(_) => return,
                }
            }
            // Read the reference way: no text to compare the next one with.
            StateView::Parsed(state) => ("", state.clone()),
        };
        match last {
            Some(last) => {
                last.text.clear();
                last.text.push_str(text);
                last.state = state;
            }
            None => {
                self.agent_states.insert(
                    agent.to_owned(),
                    LastState {
                        text: text.to_owned(),
                        state,
                    },
                );
            }
        }
    }

    /// Folds the calls that have been in the window for its whole length.
    pub(super) fn slide(&mut self) {
        while let Some(oldest) = self.calls.front() {
            if self.summary.events - oldest.first_seen < self.window {
                break;
            }
            self.fold_oldest(true);
        }
    }

    /// Folds the oldest call in the window into the counts and drops it. `may_hear_more`: events
    /// may still come for it (it is leaving a window that slides on, not the last one).
    pub(super) fn fold_oldest(&mut self, may_hear_more: bool) {
        let Some(trail) = self.calls.pop_front() else {
            return;
        };
        self.first += 1;
        self.ids.remove(&trail.id, trail.hash, self.first - 1);
        let Some(names) = &trail.names else {
            if self.filter.admits_agent("") {
                self.count_outcome(trail.status);
            }
            return;
        };
        let (agent_name, tool_name) = (&*names.agent, &*names.tool);
        if !self.filter.admits_agent(agent_name) {
            return;
        }
        self.count_outcome(trail.status);
        let Some(decision) = trail.decision else {
            return;
        };
        if let Some(timeline) = &mut self.timeline {
            timeline.add(trail.at, decision);
        }
        let summary = &mut self.summary;
        summary.calls += 1;
        if !self.agents.contains_key(agent_name) {
            self.agents
                .insert(agent_name.into(), AgentTally::named(agent_name));
        }
        let tally = self.agents.get_mut(agent_name).expect("inserted above");
        let agent = &mut tally.summary;
        agent.calls += 1;
        agent.executed += u64::from(trail.status == Some(Status::Executed));
        if may_hear_more && trail.status.is_none() {
            tally.folded_without_outcome += 1;
        }
        // A veto is made whole only when it is shown (or kept for the JSON report).
        let details = self.vetoes.wants_details();
        let veto = |kind, reasons: Vec<String>| Veto {
            id: trail.id.text(),
            kind,
            agent: agent_name.to_string(),
            tool: tool_name.to_string(),
            reasons,
            args: trail.args.as_deref().map(shown_args),
        };
        let reasons = || {
            trail
                .reasons
                .as_deref()
                .map(reason_strings)
                .unwrap_or_default()
        };
        let veto = match decision {
            Decision::Allow => {
                summary.decisions.allow += 1;
                agent.allow += 1;
                if trail.by_grant {
                    summary.allowed_by_grant += 1;
                    agent.allowed_by_grant += 1;
                }
                None
            }
            Decision::Deny => {
                summary.decisions.deny += 1;
                agent.deny += 1;
                Some(details.then(|| veto("deny", reasons())))
            }
            Decision::Hold => {
                summary.decisions.hold += 1;
                agent.hold += 1;
                match &trail.approval {
                    Some(Answer::Approved) => {
                        summary.holds.approved += 1;
                        agent.approved += 1;
                        None
                    }
                    Some(Answer::Declined(reason)) => {
                        summary.holds.declined += 1;
                        agent.declined += 1;
                        Some(details.then(|| {
                            let mut reasons = reasons();
                            reasons.push(reason.to_string());
                            veto("declined", reasons)
                        }))
                    }
                    None => {
                        summary.holds.unanswered += 1;
                        agent.unanswered += 1;
                        if may_hear_more {
                            tally.folded_unanswered += 1;
                        }
                        None
                    }
                }
            }
        };
        match veto {
            Some(Some(veto)) => self.vetoes.push(veto),
            Some(None) => self.vetoes.count_unshown(),
            None => {}
        }
    }

    pub(super) fn count_outcome(&mut self, status: Option<Status>) {
        let outcomes = &mut self.summary.outcomes;
        match status {
            Some(Status::Executed) => outcomes.executed += 1,
            Some(Status::Skipped) => outcomes.skipped += 1,
            Some(Status::Failed) => outcomes.failed += 1,
            None => {}
        }
    }

    /// An approval for a call no longer in the window: when its agent has holds folded as never
    /// answered, one of them is answered now.
    pub(super) fn late_answer(&mut self, id: &str, event: &EventView, approval: &Approval) -> bool {
        let Some(agent_name) = event.agent.as_deref() else {
            return false;
        };
        let Some(tally) = self.agents.get_mut(agent_name) else {
            return false;
        };
        if tally.folded_unanswered == 0 {
            return false;
        }
        tally.folded_unanswered -= 1;
        let (holds, agent) = (&mut self.summary.holds, &mut tally.summary);
        holds.unanswered -= 1;
        agent.unanswered -= 1;
        if approval.approved {
            holds.approved += 1;
            agent.approved += 1;
        } else {
            holds.declined += 1;
            agent.declined += 1;
            if !self.vetoes.wants_details() {
                self.vetoes.count_unshown();
                return true;
            }
            self.vetoes.push(Veto {
                id: id.to_owned(),
                kind: "declined",
                agent: agent_name.to_owned(),
                tool: event.tool.as_deref().unwrap_or("?").to_owned(),
                reasons: vec![approval.reason.clone()],
                args: None,
            });
        }
        true
    }

    /// An outcome for a call no longer in the window: when its agent has calls folded without
    /// one, it is one of theirs.
    pub(super) fn late_outcome(&mut self, event: &EventView, status: Status) -> bool {
        let Some(tally) = event.agent.as_deref().and_then(|a| self.agents.get_mut(a)) else {
            return false;
        };
        if tally.folded_without_outcome == 0 {
            return false;
        }
        tally.folded_without_outcome -= 1;
        tally.summary.executed += u64::from(status == Status::Executed);
        self.count_outcome(Some(status));
        true
    }

    /// Finishes the summary.
    pub fn finish(mut self) -> Result<Summary> {
        while !self.calls.is_empty() {
            self.fold_oldest(false);
        }
        for start in std::mem::take(&mut self.starts).unfinished() {
            self.start_problem(start, false);
        }
        self.problems.check()?;
        let mut summary = self.summary;
        if self.filter.agent.is_some() {
            summary.events = self.agent_events;
        }
        summary.timeline = self.timeline;
        summary.filter = self.filter.clone();
        let mut args = vec!["sc-report".to_owned(), "--format".into(), "json".into()];
        args.extend(self.filter.args());
        args.extend(summary.logs.iter().cloned());
        summary.list_everything = args
            .iter()
            .map(|arg| shell_word(arg))
            .collect::<Vec<_>>()
            .join(" ");
        (summary.vetoes, summary.veto_count, summary.every_veto) = self.vetoes.finish()?;
        (
            summary.problems,
            summary.problem_count,
            summary.every_problem,
        ) = self.problems.finish()?;
        summary.agents = self
            .agents
            .into_values()
            .map(|tally| {
                let mut agent = tally.summary;
                if let Some(last) = self.agent_states.get(&agent.agent) {
                    agent.tainted_by = last
                        .state
                        .tainted_by
                        .as_ref()
                        .map(|cause| cause.describe().to_owned());
                    agent.spent = last.state.spent;
                }
                agent
            })
            .collect();
        Ok(summary)
    }
}

impl AgentTally {
    pub(super) fn named(name: &str) -> AgentTally {
        AgentTally {
            summary: AgentSummary {
                agent: name.to_owned(),
                ..AgentSummary::default()
            },
            ..AgentTally::default()
        }
    }
}

/// Summarises logs given as (name, reader) pairs.
pub fn summarise<R: Read>(logs: impl IntoIterator<Item = (String, R)>) -> Result<Summary> {
    summarise_filtered(logs, Filter::default())
}

/// Summarises logs, counting only what the filter admits.
pub fn summarise_filtered<R: Read>(
    logs: impl IntoIterator<Item = (String, R)>,
    filter: Filter,
) -> Result<Summary> {
    let mut summariser = Summariser::with_filter(filter);
    for (name, log) in logs {
        summariser.read_log(&name, log)?;
    }
    summariser.finish()
}

#[cfg(test)]
#[path = "summariser_tests.rs"]
mod tests;
