//! `sc-report`: what happened and what was stopped, summarised from one or more audit logs.
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
use std::time::SystemTime;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::record::{Approval, Status};
use crate::rules::state::AgentState;
use crate::verdict::Decision;

mod batch;
mod html;
mod listing;
mod render;
mod scan;
pub mod timeline;
mod window;

use crate::audit::blocks::Worker;
use batch::Item;
pub use html::{render_html, write_html, ChainStatus};
pub use listing::LISTED;
use listing::{Listing, Spill};
pub use render::{render_json, render_markdown, render_text, render_text_with, write_json};
use timeline::Timeline;
use window::{CallId, IdIndex};

/// Audit lines longer than this are reported as problems, not read.
const MAX_EVENT_BYTES: usize = 16 << 20;

/// How many events after a call's first event its other events are joined to it. Past that, the
/// call is folded into the counts as it stands, and its record is dropped.
pub const CALL_WINDOW_EVENTS: u64 = 100_000;

/// Agent and tool names are shared by the calls that name them; past this many different names,
/// the table of names is started afresh (names in use stay alive with their calls).
const NAME_TABLE_LIMIT: usize = 4096;

/// The most of a vetoed call's arguments (JSON text) kept for the HTML report.
const ARGS_KEPT: usize = 2048;

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionCounts {
    pub allow: u64,
    pub hold: u64,
    pub deny: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct HoldCounts {
    pub approved: u64,
    pub declined: u64,
    pub unanswered: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct OutcomeCounts {
    pub executed: u64,
    pub skipped: u64,
    pub failed: u64,
}

/// A call that was stopped: denied, or held and declined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Veto {
    pub id: String,
    /// `deny` or `declined`.
    pub kind: &'static str,
    pub agent: String,
    pub tool: String,
    /// The gate's reasons, and for a declined hold the approval's reason last.
    pub reasons: Vec<String>,
    /// The call's arguments as JSON text (cut to about 2 KiB), when the summariser kept them
    /// (for the HTML report: see [`Summariser::with_page_details`]). Not in the JSON report.
    #[serde(skip)]
    pub args: Option<String>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct AgentSummary {
    pub agent: String,
    pub calls: u64,
    pub allow: u64,
    pub hold: u64,
    pub deny: u64,
    pub approved: u64,
    pub declined: u64,
    pub unanswered: u64,
    pub executed: u64,
    /// What first tainted the agent (from sc-gate's `agentState`), if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tainted_by: Option<String>,
    /// The agent's running total of understood amounts, as sc-gate last saw it.
    pub spent: f64,
}

/// A line of a log that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub log: String,
    pub line: u64,
    pub problem: String,
}

/// A crew's or session's state reset by `sc-state reset`, as its `state` event says.
#[derive(Debug, Clone, Serialize)]
pub struct Reset {
    pub ts: String,
    pub id: String,
    /// The one agent reset, or `None` for every agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// Everything the report shows. Serialized (see [`write_json`]), it lists every veto.
#[derive(Debug, Default)]
pub struct Summary {
    pub logs: Vec<String>,
    pub events: u64,
    pub calls: u64,
    pub decisions: DecisionCounts,
    pub holds: HoldCounts,
    pub outcomes: OutcomeCounts,
    /// The first [`LISTED`] vetoes, in the order their calls were first seen.
    pub vetoes: Vec<Veto>,
    /// How many vetoes there are in all.
    pub veto_count: u64,
    pub agents: Vec<AgentSummary>,
    /// The first [`LISTED`] problems.
    pub problems: Vec<Problem>,
    /// How many problems there are in all.
    pub problem_count: u64,
    /// The command that lists every veto and problem, for the reports that list only the first.
    pub list_everything: String,
    /// The first [`LISTED`] state resets (`sc-state reset`), in the order of the logs.
    pub resets: Vec<Reset>,
    /// How many state resets there are in all.
    pub reset_count: u64,
    /// Decisions per time bucket and the span of the events, when the summariser was asked for
    /// them ([`Summariser::with_page_details`]).
    pub timeline: Option<Timeline>,
    /// The filter the summary was made with.
    pub filter: Filter,
    /// Every veto and problem, when the summariser was asked to keep them all.
    every_veto: Option<Spill<Veto>>,
    every_problem: Option<Spill<Problem>>,
}

/// Which events a report counts.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only calls by this agent.
    pub agent: Option<String>,
    /// Only events at or after this time.
    pub since: Option<SystemTime>,
    /// Only events before this time.
    pub until: Option<SystemTime>,
}

impl Filter {
    fn has_time_window(&self) -> bool {
        self.since.is_some() || self.until.is_some()
    }

    fn admits_time(&self, ts: SystemTime) -> bool {
        self.since.is_none_or(|since| ts >= since) && self.until.is_none_or(|until| ts < until)
    }

    fn admits_agent(&self, agent: &str) -> bool {
        self.agent.as_deref().is_none_or(|wanted| wanted == agent)
    }

    /// The options that give this filter on sc-report's command line.
    fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(agent) = &self.agent {
            args.extend(["--agent".to_owned(), agent.clone()]);
        }
        for (flag, time) in [("--since", self.since), ("--until", self.until)] {
            if let Some(time) = time {
                args.extend([flag.to_owned(), rfc3339(time)]);
            }
        }
        args
    }
}

/// Parses a `--since`/`--until` time: RFC 3339 (`2026-11-30T16:00:00Z`) or a date and time
/// without a zone, read as UTC (`2026-11-30 16:00:00`, `2026-11-30`).
pub fn parse_time(text: &str) -> Result<SystemTime, String> {
    let text = text.trim();
    let full = if text.len() == 10 {
        format!("{text}T00:00:00Z")
    } else {
        text.to_owned()
    };
    humantime::parse_rfc3339_weak(full.trim_end_matches('Z'))
        .or_else(|_| humantime::parse_rfc3339(&full))
        .map_err(|err| format!("{text:?} is not a time such as 2026-11-30T16:00:00Z ({err})"))
}

/// An argument as a POSIX shell reads it back: as it is when it is plain, else single-quoted.
fn shell_word(arg: &str) -> Cow<'_, str> {
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
fn kept_reasons(reasons: &Reasons) -> Box<str> {
    match reasons {
        Reasons::Text(text) => (*text).into(),
        Reasons::List(list) => Value::from(list.clone()).to_string().into(),
    }
}

/// A call's arguments as kept for a veto that may be shown: at most [`ARGS_KEPT`] bytes of their
/// JSON text.
fn kept_args(args: &str) -> Box<str> {
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
fn shown_args(kept: &str) -> String {
    match serde_json::from_str::<Value>(kept) {
        Ok(args) => args.to_string(),
        Err(_) => format!("{kept}…"),
    }
}

/// The strings among kept reasons.
fn reason_strings(text: &str) -> Vec<String> {
    match serde_json::from_str::<Vec<Value>>(text) {
        Ok(items) => strings(Some(&Value::Array(items))),
        // The scanner checked the text; were it not an array after all, none of it would be
        // worth showing.
        Err(_) => Vec::new(),
    }
}

/// A call's agent and tool, shared by the calls that name the same two.
struct Names {
    agent: Box<str>,
    tool: Box<str>,
}

/// What the logs say about one call, while it is in the window.
struct Trail {
    id: CallId,
    /// The id's hash in the [`IdIndex`].
    hash: u64,
    /// The number of events counted when its first event was read.
    first_seen: u64,
    /// The agent and tool, once an event named them.
    names: Option<Rc<Names>>,
    decision: Option<Decision>,
    /// The gate's reasons (see [`kept_reasons`]), kept only for a call that may become a veto
    /// that is shown.
    reasons: Option<Box<str>>,
    /// The call's arguments (JSON text, cut to [`ARGS_KEPT`]), kept only for the HTML report's
    /// vetoes.
    args: Option<Box<str>>,
    /// The time of its gate event (seconds since the epoch), for the timeline.
    at: Option<u64>,
    approval: Option<Answer>,
    status: Option<Status>,
}

/// What an approval said, as far as the report needs it.
enum Answer {
    Approved,
    /// Declined, with the approval's reason.
    Declined(Box<str>),
}

impl Answer {
    fn of(approval: &Approval) -> Answer {
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
struct AgentTally {
    summary: AgentSummary,
    /// Holds that left the window with no answer (counted as never answered).
    folded_unanswered: u64,
    /// Calls that left the window with no outcome.
    folded_without_outcome: u64,
}

/// An agent's last `agentState`, with the text it was read from (an event that repeats the text
/// is not read again).
struct LastState {
    text: String,
    state: AgentState,
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
    filter: Filter,
    summary: Summary,
    window: u64,
    /// The calls in the window, in the order first seen: `calls[0]` is call number `first`.
    calls: VecDeque<Trail>,
    first: u64,
    /// Each call id in the window, with its number.
    ids: IdIndex,
    /// Names by agent, then tool, and how many there are.
    names: HashMap<Box<str>, HashMap<Box<str>, Rc<Names>>>,
    name_count: usize,
    agents: BTreeMap<Box<str>, AgentTally>,
    agent_states: HashMap<String, LastState>,
    vetoes: Listing<Veto>,
    problems: Listing<Problem>,
    /// Counting the timeline and keeping vetoes' arguments (the HTML report).
    timeline: Option<Timeline>,
    /// With the filter's agent: the events of that agent (its calls' events, and the resets of
    /// its state), which the summary counts instead of every event read.
    agent_events: u64,
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
    fn with_window(mut self, events: u64) -> Self {
        self.window = events;
        self
    }

    /// Reads one log. Errors only when the log cannot be read at all (or the vetoes cannot be
    /// kept). The lines are read on a second thread (see [`crate::audit::blocks`]) and joined on this one.
    pub fn read_log(&mut self, name: &str, mut log: impl Read) -> Result<()> {
        self.summary.logs.push(name.to_owned());
        let mut worker = Worker::new(batch::reader()).context("cannot start a thread")?;
        let mut line = 0;
        while let Some(done) = worker
            .next(&mut log)
            .with_context(|| format!("cannot read {name}"))?
        {
            let batch = &done.output;
            for item in &batch.items {
                line += 1;
                let problem = match item {
                    Item::Blank => None,
                    Item::Problem(problem) => Some(batch.text(*problem).to_owned()),
                    Item::Event(event) => self.count_event(&batch.view(event)).err(),
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

    fn count_event(&mut self, event: &EventView) -> Result<(), String> {
        let id = event.id.as_deref().ok_or("event has no `id`")?;
        let stage = event.stage.as_deref().ok_or("event has no `stage`")?;
        let mut at = None;
        if self.filter.has_time_window() || self.timeline.is_some() {
            let ts = event
                .ts
                .as_deref()
                .and_then(|ts| humantime::parse_rfc3339(ts).ok());
            if self.filter.has_time_window() {
                let ts = ts.ok_or("event has no valid `ts`")?;
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

    /// Whether an event is the filter's agent's: a gate event names it in its `call`, the others
    /// in `agent`; a reset of every agent's state is each agent's.
    fn is_the_agents(&self, stage: &str, event: &EventView) -> bool {
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
    fn join(
        &mut self,
        id: &str,
        stage: &str,
        event: &EventView,
        at: Option<u64>,
    ) -> Result<(), String> {
        match stage {
            // A task or result record (value provenance): not a call.
            "gate" if matches!(event.kind.as_deref(), Some("task" | "result")) => {}
            "gate" => {
                let decision = event
                    .decision
                    .as_deref()
                    .and_then(Decision::parse)
                    .ok_or("gate event has no valid `decision`")?;
                let open = self.find(id);
                if open
                    .1
                    .is_some_and(|number| self.call(number).decision.is_some())
                {
                    return Err(format!("a second gate event for id {id}"));
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
                let trail = self.trail(open, id);
                trail.decision = Some(decision);
                trail.reasons = reasons;
                trail.args = args;
                trail.at = at;
                trail.names = Some(names);
            }
            "approve" => {
                let approval = event
                    .approval
                    .as_ref()
                    .ok_or("approve event has no valid `approval`")?;
                let open = self.find(id);
                if open.1.is_none() && self.late_answer(id, event, approval) {
                    return Ok(());
                }
                self.trail(open, id).approval = Some(Answer::of(approval));
            }
            "exec" => {
                let status = event.status.ok_or("exec event has no valid `outcome`")?;
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
            other => return Err(format!("unknown stage {}", Value::String(other.to_owned()))),
        }
        Ok(())
    }

    fn call(&self, number: u64) -> &Trail {
        &self.calls[(number - self.first) as usize]
    }

    /// The id's hash, and the number of its call if it is in the window.
    fn find(&self, id: &str) -> (u64, Option<u64>) {
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
    fn trail(&mut self, (hash, open): (u64, Option<u64>), id: &str) -> &mut Trail {
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
                });
                number
            }
        };
        &mut self.calls[(number - self.first) as usize]
    }

    /// A shared copy of an agent's and tool's names.
    fn names(&mut self, agent: &str, tool: &str) -> Rc<Names> {
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
    fn note_state(&mut self, agent: &str, state: &StateView) {
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
    fn slide(&mut self) {
        while let Some(oldest) = self.calls.front() {
            if self.summary.events - oldest.first_seen < self.window {
                break;
            }
            self.fold_oldest(true);
        }
    }

    /// Folds the oldest call in the window into the counts and drops it. `may_hear_more`: events
    /// may still come for it (it is leaving a window that slides on, not the last one).
    fn fold_oldest(&mut self, may_hear_more: bool) {
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

    fn count_outcome(&mut self, status: Option<Status>) {
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
    fn late_answer(&mut self, id: &str, event: &EventView, approval: &Approval) -> bool {
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
    fn late_outcome(&mut self, event: &EventView, status: Status) -> bool {
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
    fn named(name: &str) -> AgentTally {
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

/// An event's `reasons`: the array's text as the scanner found it, or the strings the reference
/// reading took from it.
enum Reasons<'a> {
    Text(&'a str),
    List(Vec<String>),
}

impl Default for Reasons<'_> {
    fn default() -> Self {
        Reasons::List(Vec::new())
    }
}

/// An event's `agentState`: its text as the scanner found it, or the state the reference reading
/// made of it.
enum StateView<'a> {
    Text(&'a str),
    Parsed(AgentState),
}

/// What the summary reads of one event, however the event was read.
#[derive(Default)]
struct EventView<'a> {
    id: Option<Cow<'a, str>>,
    stage: Option<Cow<'a, str>>,
    ts: Option<Cow<'a, str>>,
    decision: Option<Cow<'a, str>>,
    /// A gate event's `kind`: `task` or `result` for the records of value provenance.
    kind: Option<Cow<'a, str>>,
    reasons: Reasons<'a>,
    /// When the event has a `call`: its agent and tool, `?` for either that is not a name.
    call: Option<(Cow<'a, str>, Cow<'a, str>)>,
    /// The call's `args` as JSON text (as the scanner found it, or written again by the
    /// reference reading): shown only in the HTML report's vetoes.
    args: Option<Cow<'a, str>>,
    agent_state: Option<StateView<'a>>,
    approval: Option<Approval>,
    /// `outcome.status`.
    status: Option<Status>,
    agent: Option<Cow<'a, str>>,
    tool: Option<Cow<'a, str>>,
}

impl<'a> EventView<'a> {
    /// The reference reading, from the whole event.
    fn of(event: &'a Map<String, Value>) -> EventView<'a> {
        let text = |key: &str| event.get(key).and_then(Value::as_str).map(Cow::Borrowed);
        EventView {
            id: text("id"),
            stage: text("stage"),
            ts: text("ts"),
            decision: text("decision"),
            kind: text("kind"),
            reasons: Reasons::List(strings(event.get("reasons"))),
            call: event.get("call").map(|call| {
                (
                    Cow::Owned(name_in(call, "agent")),
                    Cow::Owned(name_in(call, "tool")),
                )
            }),
            args: event
                .get("call")
                .and_then(|call| call.get("args"))
                .map(|args| Cow::Owned(args.to_string())),
            agent_state: event
                .get("agentState")
                .cloned()
                .and_then(|s| serde_json::from_value::<AgentState>(s).ok())
                .map(StateView::Parsed),
            approval: event
                .get("approval")
                .cloned()
                .and_then(|a| serde_json::from_value(a).ok()),
            status: event
                .get("outcome")
                .and_then(|o| o.get("status"))
                .cloned()
                .and_then(|s| serde_json::from_value::<Status>(s).ok()),
            agent: text("agent"),
            tool: text("tool"),
        }
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

fn name_in(call: &Value, key: &str) -> String {
    call.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("?")
        .to_owned()
}

/// What `--fail-on` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Any call denied.
    Deny,
    /// Any hold declined.
    Declined,
    /// Any hold never answered.
    Unanswered,
    /// Any tool run that failed.
    Failed,
}

/// What the summary holds of each named kind, as `N deny`, for `--fail-on`; empty when none.
pub fn failures(summary: &Summary, fail_on: &[FailOn]) -> Vec<String> {
    fail_on
        .iter()
        .filter_map(|kind| {
            let (count, name) = match kind {
                FailOn::Deny => (summary.decisions.deny, "deny"),
                FailOn::Declined => (summary.holds.declined, "declined"),
                FailOn::Unanswered => (summary.holds.unanswered, "unanswered"),
                FailOn::Failed => (summary.outcomes.failed, "failed"),
            };
            (count > 0).then(|| format!("{count} {name}"))
        })
        .collect()
}

/// A time as RFC 3339 with fractions, or, past what RFC 3339 can write (year 9999), its seconds
/// since the Unix epoch: a log's times are written by whoever wrote the log, and a report never
/// panics on one.
pub fn rfc3339(time: std::time::SystemTime) -> String {
    formatted(time, |t| humantime::format_rfc3339(t).to_string_checked())
}

/// [`rfc3339`] to the second.
pub fn rfc3339_seconds(time: std::time::SystemTime) -> String {
    formatted(time, |t| {
        humantime::format_rfc3339_seconds(t).to_string_checked()
    })
}

fn formatted(
    time: std::time::SystemTime,
    format: impl Fn(std::time::SystemTime) -> Option<String>,
) -> String {
    format(time).unwrap_or_else(|| {
        let seconds = time
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        format!("{seconds} s after 1970-01-01T00:00:00Z")
    })
}

/// `to_string` that says `None` where a `Display` fails, instead of panicking.
trait ToStringChecked {
    fn to_string_checked(&self) -> Option<String>;
}

impl<T: std::fmt::Display> ToStringChecked for T {
    fn to_string_checked(&self) -> Option<String> {
        use std::fmt::Write;
        let mut text = String::new();
        write!(text, "{self}").ok().map(|()| text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::scan::{chain_fields, ChainFields, MAX_DEPTH};
    use crate::strict_json;

    const LOG: &str = concat!(
        r#"{"ts":"t","stage":"gate","id":"1","decision":"allow","reasons":["ok"],"call":{"agent":"scout","tool":"search_web"}}"#,
        "\n",
        r#"{"ts":"t","stage":"gate","id":"2","decision":"hold","reasons":["amount 750 is above the hold limit of 100"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
        "\n",
        r#"{"ts":"t","stage":"gate","id":"3","decision":"deny","reasons":["injected"],"call":{"agent":"helper","tool":"send_payment"},"agentState":{"taintedBy":{"agent":"helper","tool":"fetch_page","id":"0","argument":"url=https://evil.test"},"spent":0.0}}"#,
        "\n",
        r#"{"ts":"t","stage":"gate","id":"4","decision":"hold","reasons":["big"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
        "\n",
        r#"{"ts":"t","stage":"gate","id":"5","decision":"hold","reasons":["big"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
        "\n",
        r#"{"ts":"t","stage":"approve","id":"2","agent":"buyer","tool":"send_payment","approval":{"approved":true,"by":"tty","answer":"yes","reason":"approved"}}"#,
        "\n",
        r#"{"ts":"t","stage":"approve","id":"4","agent":"buyer","tool":"send_payment","approval":{"approved":false,"by":"tty","answer":"no","reason":"declined: no"}}"#,
        "\n",
        r#"{"ts":"t","stage":"exec","id":"1","decision":"allow","outcome":{"status":"executed","reason":"r"}}"#,
        "\n",
        r#"{"ts":"t","stage":"exec","id":"2","decision":"hold","outcome":{"status":"executed","reason":"r"}}"#,
        "\n",
        r#"{"ts":"t","stage":"exec","id":"3","decision":"deny","outcome":{"status":"skipped","reason":"r"}}"#,
        "\n",
        r#"{"ts":"t","stage":"ex"#,
    );

    fn summary() -> Summary {
        summarise([("audit.jsonl".to_owned(), LOG.as_bytes())]).unwrap()
    }

    #[test]
    fn counts_decisions_holds_and_outcomes() {
        let s = summary();
        assert_eq!(s.calls, 5);
        assert_eq!(
            s.decisions,
            DecisionCounts {
                allow: 1,
                hold: 3,
                deny: 1
            }
        );
        assert_eq!(
            s.holds,
            HoldCounts {
                approved: 1,
                declined: 1,
                unanswered: 1
            }
        );
        assert_eq!(
            s.outcomes,
            OutcomeCounts {
                executed: 2,
                skipped: 1,
                failed: 0
            }
        );
    }

    #[test]
    fn lists_every_veto_with_reasons() {
        let s = summary();
        let kinds: Vec<_> = s.vetoes.iter().map(|v| (v.id.as_str(), v.kind)).collect();
        assert_eq!(kinds, [("3", "deny"), ("4", "declined")]);
        assert_eq!(s.vetoes[1].reasons, ["big", "declined: no"]);
    }

    #[test]
    fn breaks_down_by_agent() {
        let s = summary();
        let buyer = s.agents.iter().find(|a| a.agent == "buyer").unwrap();
        assert_eq!(
            (
                buyer.calls,
                buyer.hold,
                buyer.approved,
                buyer.declined,
                buyer.unanswered,
                buyer.executed
            ),
            (3, 3, 1, 1, 1, 1)
        );
    }

    #[test]
    fn says_who_was_tainted_by_what() {
        let s = summary();
        let helper = s.agents.iter().find(|a| a.agent == "helper").unwrap();
        assert_eq!(
            helper.tainted_by.as_deref(),
            Some("fetch_page (id 0, url=https://evil.test) by helper")
        );
        assert!(
            render_text(&s).contains("helper tainted by fetch_page (id 0, url=https://evil.test)")
        );
    }

    #[test]
    fn the_agent_filter_keeps_one_agent() {
        let filter = Filter {
            agent: Some("buyer".into()),
            ..Filter::default()
        };
        let s = summarise_filtered([("audit.jsonl".to_owned(), LOG.as_bytes())], filter).unwrap();
        assert_eq!(s.calls, 3);
        assert_eq!(s.agents.len(), 1);
        assert_eq!(s.outcomes.executed, 1);
        assert!(s.vetoes.iter().all(|v| v.agent == "buyer"));
    }

    #[test]
    fn the_time_window_keeps_events_inside_it() {
        let log = concat!(
            r#"{"ts":"2026-11-30T10:00:00Z","stage":"gate","id":"1","decision":"deny","reasons":["r"],"call":{"agent":"a","tool":"t"}}"#,
            "\n",
            r#"{"ts":"2026-11-30T12:00:00Z","stage":"gate","id":"2","decision":"allow","reasons":["r"],"call":{"agent":"a","tool":"t"}}"#,
            "\n",
            r#"{"ts":"2026-11-30T14:00:00Z","stage":"gate","id":"3","decision":"hold","reasons":["r"],"call":{"agent":"a","tool":"t"}}"#,
            "\n",
        );
        let filter = Filter {
            since: Some(parse_time("2026-11-30T11:00:00Z").unwrap()),
            until: Some(parse_time("2026-11-30 13:00:00").unwrap()),
            ..Filter::default()
        };
        let s = summarise_filtered([("l".to_owned(), log.as_bytes())], filter).unwrap();
        assert_eq!((s.calls, s.decisions.allow), (1, 1));
        assert!(parse_time("yesterday").is_err());
        assert_eq!(
            parse_time("2026-11-30").unwrap(),
            parse_time("2026-11-30T00:00:00Z").unwrap()
        );
    }

    #[test]
    fn fail_on_names_what_occurred() {
        let s = summary();
        assert_eq!(
            failures(&s, &[FailOn::Deny, FailOn::Unanswered, FailOn::Failed]),
            ["1 deny", "1 unanswered"]
        );
        assert!(failures(&s, &[FailOn::Failed]).is_empty());
    }

    #[test]
    fn colour_only_when_asked() {
        let s = summary();
        assert!(!render_text(&s).contains('\x1b'));
        assert!(render_text_with(&s, true).contains("\x1b[31mDENY"));
    }

    #[test]
    fn markdown_matches_the_golden_file() {
        let golden =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/report.golden.md");
        let rendered = render_markdown(&summary());
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&golden, &rendered).unwrap();
        }
        let expected = std::fs::read_to_string(&golden)
            .expect("testdata/report.golden.md (UPDATE_GOLDEN=1 writes it)");
        assert_eq!(rendered, expected);
    }

    #[test]
    fn a_torn_last_line_is_a_problem_not_an_error() {
        let s = summary();
        assert_eq!(s.problems.len(), 1);
        assert_eq!(s.problems[0].line, 11);
        assert!(s.problems[0].problem.contains("torn"), "{:?}", s.problems);
    }

    #[test]
    fn text_and_json_show_the_same_numbers() {
        let s = summary();
        let text = render_text(&s);
        for expected in [
            "5 calls: 1 allow, 3 hold, 1 deny",
            "1 approved, 1 declined, 1 never answered",
            "2 executed, 1 skipped, 0 failed",
            "DENY",
            "DECLINED",
            "line 11",
        ] {
            assert!(text.contains(expected), "{expected}:\n{text}");
        }
        let json: Value = serde_json::from_str(&render_json(&s)).unwrap();
        assert_eq!(json["decisions"]["hold"], 3);
        assert_eq!(json["holds"]["unanswered"], 1);
        assert_eq!(json["vetoes"].as_array().unwrap().len(), 2);
    }

    fn event_line(value: Value) -> String {
        value.to_string()
    }

    fn gate(id: &str, agent: &str, decision: &str) -> String {
        event_line(serde_json::json!({
            "ts": "2026-11-30T16:00:00Z", "stage": "gate", "id": id, "decision": decision,
            "reasons": [format!("why {id}")],
            "call": {"agent": agent, "tool": "send_payment", "args": {"amount": 5}},
            "agentState": {"spent": 0.0},
        }))
    }

    fn approve(id: &str, agent: &str, approved: bool) -> String {
        event_line(serde_json::json!({
            "ts": "2026-11-30T16:00:00Z", "stage": "approve", "id": id, "agent": agent,
            "tool": "send_payment",
            "approval": {"approved": approved, "by": "answers", "answer": "a",
                         "reason": if approved { "approved: yes" } else { "declined: no" }},
        }))
    }

    fn exec(id: &str, agent: &str, status: &str) -> String {
        event_line(serde_json::json!({
            "ts": "2026-11-30T16:00:00Z", "stage": "exec", "id": id, "agent": agent,
            "tool": "send_payment", "decision": "allow",
            "outcome": {"status": status, "reason": "r", "result": {"n": [1, {"x": null}]}},
        }))
    }

    fn run_with(lines: &[String], summariser: Summariser) -> Summary {
        let mut summariser = summariser;
        let log = lines.join("\n");
        summariser.read_log("audit.jsonl", log.as_bytes()).unwrap();
        summariser.finish().unwrap()
    }

    /// Summarised with a window of `window` events.
    fn run(lines: &[String], window: u64) -> Summary {
        run_with(lines, Summariser::new().with_window(window))
    }

    /// Everything a summary shows.
    #[allow(clippy::type_complexity)]
    fn shown(
        s: &Summary,
    ) -> (
        u64,
        u64,
        DecisionCounts,
        HoldCounts,
        OutcomeCounts,
        u64,
        Vec<Veto>,
        Vec<AgentSummary>,
        Vec<Problem>,
    ) {
        (
            s.events,
            s.calls,
            s.decisions.clone(),
            s.holds.clone(),
            s.outcomes.clone(),
            s.veto_count,
            s.vetoes.clone(),
            s.agents.clone(),
            s.problems.clone(),
        )
    }

    fn filler(count: usize) -> Vec<String> {
        (0..count)
            .map(|n| gate(&format!("fill-{n}"), "scout", "allow"))
            .collect()
    }

    #[test]
    fn calls_leave_the_window_so_memory_stays_bounded() {
        let mut summariser = Summariser::new().with_window(100);
        let log = filler(10_000).join("\n");
        summariser
            .read_log("gate-only.jsonl", log.as_bytes())
            .unwrap();
        assert!(summariser.calls.len() <= 100, "{}", summariser.calls.len());
        assert!(summariser.ids.len() <= 100, "{}", summariser.ids.len());
        let s = summariser.finish().unwrap();
        assert_eq!(
            (s.events, s.calls, s.decisions.allow),
            (10_000, 10_000, 10_000)
        );
    }

    #[test]
    fn a_late_answer_moves_a_folded_hold() {
        let mut lines = vec![
            gate("h-yes", "buyer", "hold"),
            gate("h-no", "buyer", "hold"),
        ];
        lines.extend(filler(5));
        // Both holds have left a window of 3 events, counted as never answered.
        let before = run(&lines, 3);
        assert_eq!(
            before.holds,
            HoldCounts {
                approved: 0,
                declined: 0,
                unanswered: 2
            }
        );
        lines.push(approve("h-yes", "buyer", true));
        lines.push(approve("h-no", "buyer", false));
        let folded = run(&lines, 3);
        let whole = run(&lines, u64::MAX);
        let expected = HoldCounts {
            approved: 1,
            declined: 1,
            unanswered: 0,
        };
        assert_eq!((&folded.holds, &whole.holds), (&expected, &expected));
        assert_eq!(folded.agents, whole.agents);
        let buyer = folded.agents.iter().find(|a| a.agent == "buyer").unwrap();
        assert_eq!(
            (buyer.approved, buyer.declined, buyer.unanswered),
            (1, 1, 0)
        );
        // The veto of a late decline names the answer only: the gate's reasons left with it.
        assert_eq!(folded.veto_count, 1);
        assert_eq!(
            (folded.vetoes[0].id.as_str(), folded.vetoes[0].kind),
            ("h-no", "declined")
        );
        assert_eq!(folded.vetoes[0].reasons, ["declined: no"]);
        assert_eq!(whole.vetoes[0].reasons, ["why h-no", "declined: no"]);
    }

    #[test]
    fn a_late_outcome_adds_to_the_outcomes() {
        let mut lines = vec![gate("a", "buyer", "allow"), gate("d", "buyer", "deny")];
        lines.extend(filler(5));
        lines.push(exec("a", "buyer", "executed"));
        lines.push(exec("d", "buyer", "skipped"));
        let folded = run(&lines, 3);
        let whole = run(&lines, u64::MAX);
        assert_eq!(shown(&folded), shown(&whole));
        assert_eq!(
            folded.outcomes,
            OutcomeCounts {
                executed: 1,
                skipped: 1,
                failed: 0
            }
        );
        assert_eq!(folded.calls, 7);
        let buyer = folded.agents.iter().find(|a| a.agent == "buyer").unwrap();
        assert_eq!((buyer.calls, buyer.executed), (2, 1));
    }

    #[test]
    fn late_events_for_ids_never_seen_count_as_they_always_did() {
        let mut lines = vec![gate("a", "buyer", "allow"), exec("a", "buyer", "executed")];
        lines.extend(filler(5));
        // Nothing of buyer's is waiting: an approval alone is no call, an outcome is counted.
        lines.push(approve("ghost", "buyer", false));
        lines.push(exec("ghost", "buyer", "failed"));
        let folded = run(&lines, 3);
        assert_eq!(shown(&folded), shown(&run(&lines, u64::MAX)));
        assert_eq!(folded.holds, HoldCounts::default());
        assert_eq!((folded.calls, folded.outcomes.failed), (6, 1));
        let buyer = folded.agents.iter().find(|a| a.agent == "buyer").unwrap();
        assert_eq!((buyer.calls, buyer.executed), (1, 1));
        assert_eq!(folded.veto_count, 0);
    }

    #[test]
    fn a_second_gate_event_is_a_problem_while_the_first_is_in_the_window() {
        let mut lines = vec![gate("a", "buyer", "allow"), gate("a", "buyer", "deny")];
        lines.extend(filler(5));
        let s = run(&lines, 3);
        assert_eq!(s.problems.len(), 1, "{:?}", s.problems);
        assert!(s.problems[0]
            .problem
            .contains("a second gate event for id a"));
        assert_eq!((s.calls, s.decisions.deny), (6, 0));
    }

    fn denials(count: usize) -> Vec<String> {
        (0..count)
            .map(|n| gate(&format!("d-{n:04}"), "helper", "deny"))
            .collect()
    }

    #[test]
    fn page_details_add_a_timeline_and_the_vetoes_arguments_and_change_no_count() {
        let mut lines = denials(3);
        lines.push(gate("ok", "scout", "allow"));
        lines.push(gate("held", "buyer", "hold"));
        lines.push(approve("held", "buyer", false));
        let big = format!("{{\"blob\":\"{}\"}}", "é".repeat(ARGS_KEPT));
        lines.push(gate("big", "helper", "deny").replace(r#"{"amount":5}"#, &big));
        let plain = run(&lines, CALL_WINDOW_EVENTS);
        let mut detailed = run_with(&lines, Summariser::new().with_page_details());
        assert!(plain.timeline.is_none());
        assert!(plain.vetoes.iter().all(|v| v.args.is_none()));
        let args: Vec<String> = detailed
            .vetoes
            .iter_mut()
            .map(|v| v.args.take().unwrap())
            .collect();
        assert_eq!(shown(&plain), shown(&detailed));
        assert_eq!(args[..4], [r#"{"amount":5}"#; 4]);
        // Past the bytes kept: what was kept, cut on a character, marked as cut.
        assert!(args[4].starts_with(r#"{"blob":"éé"#) && args[4].ends_with('…'));
        assert!(args[4].len() <= ARGS_KEPT + '…'.len_utf8());
        let timeline = detailed.timeline.clone().unwrap();
        let bars = timeline.bars().unwrap();
        assert_eq!(bars.counts.len(), 1);
        assert_eq!(bars.counts[0], detailed.decisions);
        let at = parse_time("2026-11-30T16:00:00Z").unwrap();
        let at = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(timeline.span, Some((at, at)));
        // JSON is not changed by them.
        assert_eq!(render_json(&plain), render_json(&detailed));
    }

    #[test]
    fn text_and_markdown_list_the_first_thousand_vetoes_and_say_how_to_see_the_rest() {
        let s = run(&denials(LISTED + 1), CALL_WINDOW_EVENTS);
        assert_eq!((s.veto_count, s.vetoes.len()), (1001, 1000));
        assert_eq!(s.vetoes[999].id, "d-0999");
        let text = render_text(&s);
        assert!(text.contains("\nVetoes (1001): calls denied"), "{text}");
        assert_eq!(text.matches("\n  DENY").count(), 1000);
        assert!(!text.contains("d-1000"));
        assert!(
            text.contains(
                "\n  … and 1 more; list them all with: sc-report --format json audit.jsonl\n"
            ),
            "{text}"
        );
        let markdown = render_markdown(&s);
        assert!(markdown.contains("### Vetoes (1001)"), "{markdown}");
        assert_eq!(markdown.matches("\n| **deny** |").count(), 1000);
        assert!(
            markdown.contains(
                "\n\n… and 1 more; list them all with: `sc-report --format json audit.jsonl`\n\n### By agent"
            ),
            "{markdown}"
        );
        // Exactly a thousand: nothing more to say.
        let s = run(&denials(LISTED), CALL_WINDOW_EVENTS);
        assert!(!render_text(&s).contains("more; list them all"));
        assert!(!render_markdown(&s).contains("more; list them all"));
    }

    #[test]
    fn problems_are_listed_as_vetoes_are() {
        let lines: Vec<String> = (0..LISTED + 1).map(|n| format!("not json {n}")).collect();
        let s = run(&lines, CALL_WINDOW_EVENTS);
        assert_eq!((s.problem_count, s.problems.len()), (1001, 1000));
        let text = render_text(&s);
        assert!(text.contains("\nProblems in the logs (1001)\n"), "{text}");
        assert!(text.contains("audit.jsonl line 1000:") && !text.contains("line 1001:"));
        assert!(
            text.ends_with(
                "\n  … and 1 more; list them all with: sc-report --format json audit.jsonl\n"
            ),
            "{text}"
        );
        let markdown = render_markdown(&s);
        assert!(
            markdown.ends_with(
                "\n\n… and 1 more; list them all with: `sc-report --format json audit.jsonl`\n"
            ),
            "{markdown}"
        );
        let s = run_with(&lines, Summariser::new().keeping_everything().unwrap());
        let json: Value = serde_json::from_str(&render_json(&s)).unwrap();
        let problems = json["problems"].as_array().unwrap();
        assert_eq!(problems.len(), 1001);
        assert_eq!(problems[1000]["line"], 1001);
        assert!(problems[1000]["problem"]
            .as_str()
            .unwrap()
            .contains("torn or malformed"));
    }

    #[test]
    fn the_command_that_lists_everything_keeps_the_filter() {
        let filter = Filter {
            agent: Some("it's me".into()),
            since: Some(parse_time("2026-11-30T16:00:00Z").unwrap()),
            until: None,
        };
        let mut summariser = Summariser::with_filter(filter);
        summariser.read_log("logs/a b.jsonl", &b""[..]).unwrap();
        summariser.read_log("logs/c.jsonl", &b""[..]).unwrap();
        let s = summariser.finish().unwrap();
        assert_eq!(
            s.list_everything,
            r"sc-report --format json --agent 'it'\''s me' --since 2026-11-30T16:00:00Z 'logs/a b.jsonl' logs/c.jsonl"
        );
    }

    #[test]
    fn json_lists_every_veto_from_the_temporary_file() {
        let mut lines = denials(LISTED + 200);
        lines.insert(0, gate("held", "buyer", "hold"));
        lines.push(approve("held", "buyer", false));
        let summariser = Summariser::new().keeping_everything().unwrap();
        let s = run_with(&lines, summariser);
        // Only the first thousand are in memory.
        assert_eq!((s.veto_count, s.vetoes.len()), (1201, 1000));
        let json: Value = serde_json::from_str(&render_json(&s)).unwrap();
        let ids: Vec<&str> = json["vetoes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["id"].as_str().unwrap())
            .collect();
        let mut expected = vec!["held".to_owned()];
        expected.extend((0..LISTED + 200).map(|n| format!("d-{n:04}")));
        assert_eq!(ids, expected);
        assert_eq!(
            json["vetoes"][0]["reasons"],
            serde_json::json!(["why held", "declined: no"])
        );
        assert_eq!(
            json["vetoes"][1200]["reasons"],
            serde_json::json!(["why d-1199"])
        );
        // Without the file, a JSON report of more vetoes than are kept is refused, not cut.
        let s = run(&denials(LISTED + 1), CALL_WINDOW_EVENTS);
        assert!(write_json(&s, Vec::new()).is_err());
    }

    #[test]
    fn json_is_written_as_a_derived_serialization_would_write_it() {
        for s in [
            summary(),
            run_with(
                &LOG.lines().map(str::to_owned).collect::<Vec<_>>(),
                Summariser::new().keeping_everything().unwrap(),
            ),
            run(&[], 3),
        ] {
            let expected = serde_json::json!({
                "logs": s.logs,
                "events": s.events,
                "calls": s.calls,
                "decisions": s.decisions,
                "holds": s.holds,
                "outcomes": s.outcomes,
                "vetoes": s.vetoes,
                "agents": s.agents,
                "problems": s.problems,
            });
            let expected = serde_json::to_string_pretty(&expected).unwrap() + "\n";
            assert_eq!(render_json(&s), expected);
        }
    }

    #[test]
    fn the_scanner_reads_the_events_the_stages_write() {
        for line in [
            gate("g", "buyer", "hold"),
            approve("g", "buyer", true),
            exec("g", "buyer", "executed"),
            LOG.lines().nth(2).unwrap().to_owned(),
        ] {
            let view = scan::event(&line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(seen(&view), seen(&reference(&line).unwrap()));
            assert!(chain_fields(&line).is_some(), "{line}");
        }
        // The bases of the properties below are read by the scanners, not left to the reader.
        for line in MANGLED_EVENTS {
            let view = scan::event(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(seen(&view), seen(&reference(line).unwrap()));
            assert!(chain_fields(line).is_some(), "{line}");
        }
        let sealed = r#"{"stage":"gate","id":"1","seq":7,"prev":"00ff"}"#;
        assert_eq!(
            chain_fields(sealed),
            Some(ChainFields {
                prev: Some("00ff"),
                seq: Some(7)
            })
        );
    }

    #[test]
    fn what_the_scanner_leaves_alone_is_still_counted() {
        // Deeper than the scanner goes, within what the strict reader takes.
        let deep = format!(
            r#"{{"stage":"gate","id":"x","decision":"deny","reasons":["r"],"call":{{"agent":"a","tool":"t","args":{{"n":{}1{}}}}}}}"#,
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        let escaped_key =
            r#"{"stage":"gate","\u0069d":"y","decision":"allow","call":{"agent":"a","tool":"t"}}"#;
        let exponent =
            r#"{"stage":"exec","id":"z","n":1e2,"agent":"a","outcome":{"status":"failed"}}"#;
        for line in [deep.as_str(), escaped_key, exponent] {
            assert!(scan::event(line).is_none(), "{line}");
        }
        let s = run(&[deep, escaped_key.into(), exponent.into()], 3);
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!((s.calls, s.decisions.deny, s.outcomes.failed), (2, 1, 1));
    }

    fn reference(text: &str) -> Option<EventView<'static>> {
        match strict_json::parse(text) {
            Ok(Value::Object(map)) => Some(EventView::of(Box::leak(Box::new(map)))),
            _ => None,
        }
    }

    /// What the summary reads of an event, however it was read.
    #[allow(clippy::type_complexity)]
    fn seen(
        view: &EventView,
    ) -> (
        [Option<String>; 6],
        Vec<String>,
        Option<(String, String)>,
        Option<AgentState>,
        Option<Approval>,
        Option<Status>,
        Option<Value>,
    ) {
        let text = |t: &Option<Cow<str>>| t.as_deref().map(str::to_owned);
        (
            [
                text(&view.id),
                text(&view.stage),
                text(&view.ts),
                text(&view.decision),
                text(&view.agent),
                text(&view.tool),
            ],
            reason_strings(&kept_reasons(&view.reasons)),
            view.call
                .as_ref()
                .map(|(a, t)| (a.to_string(), t.to_string())),
            view.agent_state.as_ref().and_then(|state| match state {
                StateView::Text(text) => serde_json::from_str(text).ok(),
                StateView::Parsed(state) => Some(state.clone()),
            }),
            view.approval.clone(),
            view.status,
            // The arguments' text, read back: the scanner keeps it as written.
            view.args
                .as_deref()
                .map(|args| serde_json::from_str(args).expect("arguments are JSON")),
        )
    }

    /// Mangles `base` with edits of the bytes JSON cares about.
    fn mangle(base: &str, edits: Vec<(usize, usize, &str)>) -> String {
        let mut text = base.to_owned();
        for (at, cut, insert) in edits {
            let mut at = at.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + cut).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            text.replace_range(at..end, insert);
        }
        text
    }

    const MANGLED_EVENTS: [&str; 4] = [
        r#"{"ts":"2026-11-30T16:00:00Z","stage":"gate","id":"a-1","call":{"agent":"buyer","tool":"send_payment","args":{"to":"acme","amount":750,"memo":"a\"b"},"source":"user"},"decision":"hold","reasons":["amount 750 is above\n the limit",7],"agentState":{"taintedBy":{"agent":"buyer","tool":"fetch_page","id":"a-0","argument":"url=x"},"spent":1.5},"seq":3,"prev":"00ab"}"#,
        r#"{ "ts" : "t" , "stage" : "approve" , "id" : "a-1" , "agent" : "buyer" , "tool" : "send_payment" , "approval" : { "approved" : false , "by" : "tty" , "answer" : null , "reason" : "declined: \u00e9" } }"#,
        r#"{"ts":"t","stage":"exec","id":"a-1","agent":"b","tool":"t","decision":"allow","outcome":{"status":"executed","result":{"r":[{"u":"x"},-2.5,true]},"reason":"ran"},"seq":18446744073709551615}"#,
        r#"{"stage":"gate","id":"\u0061","decision":"deny","call":"not an object","reasons":"no","agentState":[],"outcome":{"status":"failed"},"prev":7}"#,
    ];

    const MANGLES: [&str; 32] = [
        "\"",
        "\\",
        "\\u",
        "\\ud800",
        "\\u0061",
        "e5",
        "E",
        "0",
        "01",
        "-",
        ".",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "\t",
        "\n",
        "\u{1}",
        "é",
        "true",
        "nul",
        "1e999",
        "\"id\":\"x\",",
        "\"stage\":7,",
        "\"reasons\":[],",
        "\"call\":{},",
        "\"status\":\"skipped\",",
        "\"seq\":-0,",
        "\"prev\":\"\\u0030\",",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

        /// Events cut, spliced and salted with the bytes JSON cares about: whatever the scanner
        /// accepts, the strict reader accepts, and reads the same.
        #[test]
        fn the_scanner_agrees_with_the_strict_reader_on_mangled_events(
            base in proptest::sample::select(MANGLED_EVENTS.to_vec()),
            edits in proptest::collection::vec(
                (0usize..300, 0usize..3, proptest::sample::select(MANGLES.to_vec())),
                0..4,
            ),
        ) {
            let text = mangle(base, edits);
            if let Some(view) = scan::event(&text) {
                let reference = reference(&text);
                proptest::prop_assert!(reference.is_some(), "{}", text);
                proptest::prop_assert_eq!(seen(&view), seen(&reference.unwrap()), "{}", text);
            }
        }

        /// The same for what `--verify` reads, against a plain JSON parser.
        #[test]
        fn the_chain_scanner_agrees_with_a_json_parser_on_mangled_events(
            base in proptest::sample::select(MANGLED_EVENTS.to_vec()),
            edits in proptest::collection::vec(
                (0usize..300, 0usize..3, proptest::sample::select(MANGLES.to_vec())),
                0..4,
            ),
        ) {
            let text = mangle(base, edits);
            if let Some(fields) = chain_fields(&text) {
                let parsed: Value = serde_json::from_str(&text).map_err(|e| {
                    proptest::test_runner::TestCaseError::fail(format!("{e}: {text}"))
                })?;
                proptest::prop_assert!(parsed.is_object(), "{}", text);
                proptest::prop_assert_eq!(fields.prev, parsed.get("prev").and_then(Value::as_str));
                proptest::prop_assert_eq!(fields.seq, parsed.get("seq").and_then(Value::as_u64));
            }
        }

        /// Logs in which each call's events come within a few events of each other: a window
        /// that spans them counts exactly what joining the whole log counts, vetoes in the same
        /// order, with or without an agent filter.
        #[test]
        fn a_window_that_spans_each_call_counts_as_the_whole_log(
            calls in proptest::collection::vec(
                (0usize..3, 0usize..3, 0usize..4, 0usize..3, 0usize..4),
                0..40,
            ),
            orphans in proptest::collection::vec((0usize..60, proptest::bool::ANY), 0..4),
            filtered in proptest::bool::ANY,
        ) {
            let agents = ["buyer", "scout", "helper"];
            let mut timed = Vec::new();
            for (n, &(decision, answer, outcome, agent, lag)) in calls.iter().enumerate() {
                let id = format!("c-{n}");
                let agent = agents[agent];
                let decision = ["allow", "hold", "deny"][decision];
                let at = 4 * n;
                timed.push((at, gate(&id, agent, decision)));
                if decision == "hold" && answer > 0 {
                    timed.push((at + lag + 1, approve(&id, agent, answer == 1)));
                }
                if outcome > 0 {
                    let status = ["executed", "skipped", "failed"][outcome - 1];
                    timed.push((at + 2 * lag + 2, exec(&id, agent, status)));
                }
            }
            for (k, (at, is_exec)) in orphans.into_iter().enumerate() {
                let id = format!("orphan-{k}");
                timed.push((at, if is_exec { exec(&id, "nobody", "failed") } else { approve(&id, "nobody", false) }));
            }
            timed.sort_by_key(|(at, _)| *at);
            let lines: Vec<String> = timed.into_iter().map(|(_, line)| line).collect();
            let filter = || Filter { agent: filtered.then(|| "buyer".to_owned()), ..Filter::default() };
            let windowed = run_with(&lines, Summariser::with_filter(filter()).with_window(16));
            let whole = run_with(&lines, Summariser::with_filter(filter()).with_window(u64::MAX));
            proptest::prop_assert_eq!(shown(&windowed), shown(&whole));
        }
    }
}
