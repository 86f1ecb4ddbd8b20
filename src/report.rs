//! `sc-report`: what happened and what was stopped, summarised from one or more audit logs.
//!
//! The summary is built once ([`summarise`]) and rendered for people ([`render_text`]) or for
//! programs ([`render_json`]), so both show the same numbers. A torn or malformed log line is
//! reported as a problem, never fatal: the rest of the log still counts.

use std::borrow::{Borrow, Cow};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::hash::Hash;
use std::io::Read;
use std::time::SystemTime;

use anyhow::{Context, Result};
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::decision::Decision;
use crate::jsonl::{Line, LineReader};
use crate::record::{Approval, Status};
use crate::sanitize::for_terminal;
use crate::state::AgentState;
use crate::strict_json;

/// Audit lines longer than this are reported as problems, not read.
const MAX_EVENT_BYTES: usize = 16 << 20;

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

/// Everything the report shows.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub logs: Vec<String>,
    pub events: u64,
    pub calls: u64,
    pub decisions: DecisionCounts,
    pub holds: HoldCounts,
    pub outcomes: OutcomeCounts,
    pub vetoes: Vec<Veto>,
    pub agents: Vec<AgentSummary>,
    pub problems: Vec<Problem>,
}

/// What the logs say about one call id. Names and reasons are numbers in the summariser's
/// [`Interner`]s: a log holds millions of calls and a handful of agents, tools and reasons.
#[derive(Debug, Default)]
struct CallTrail {
    /// The agent and tool, once an event named them.
    names: Option<(usize, usize)>,
    decision: Option<Decision>,
    reasons: Option<usize>,
    approval: Option<Approval>,
    status: Option<Status>,
}

/// Equal values kept once, each known by its number.
#[derive(Debug)]
struct Interner<T> {
    numbers: HashMap<T, usize>,
    values: Vec<T>,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            numbers: HashMap::new(),
            values: Vec::new(),
        }
    }
}

impl<T: Hash + Eq + Clone> Interner<T> {
    fn intern<Q>(&mut self, value: &Q) -> usize
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = T> + ?Sized,
    {
        if let Some(&number) = self.numbers.get(value) {
            return number;
        }
        let number = self.values.len();
        self.values.push(value.to_owned());
        self.numbers.insert(value.to_owned(), number);
        number
    }

    fn get(&self, number: usize) -> &T {
        &self.values[number]
    }
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

/// Builds a summary from audit logs, read as streams in the order given.
#[derive(Debug, Default)]
pub struct Summariser {
    filter: Filter,
    summary: Summary,
    /// Every call id, in the order first seen.
    trails: IndexMap<String, CallTrail>,
    names: Interner<String>,
    reason_lists: Interner<Vec<String>>,
    agent_states: HashMap<String, AgentState>,
}

impl Summariser {
    pub fn new() -> Self {
        Self::default()
    }

    /// A summariser that counts only what the filter admits.
    pub fn with_filter(filter: Filter) -> Self {
        Summariser {
            filter,
            ..Self::default()
        }
    }

    /// Reads one log. Errors only when the log cannot be read at all.
    pub fn read_log(&mut self, name: &str, log: impl Read) -> Result<()> {
        self.summary.logs.push(name.to_owned());
        let mut reader = LineReader::new(log, MAX_EVENT_BYTES);
        loop {
            let line_number = reader.line_number() + 1;
            let problem = match reader
                .next_line()
                .with_context(|| format!("cannot read {name}"))?
            {
                None => break,
                Some(Line::TooLong { length, .. }) => {
                    Some(format!("line of {length} bytes is too long to be an event"))
                }
                Some(Line::Text(bytes)) if bytes.iter().all(u8::is_ascii_whitespace) => None,
                Some(Line::Text(bytes)) => self.read_event(bytes).err(),
            };
            if let Some(problem) = problem {
                self.summary.problems.push(Problem {
                    log: name.to_owned(),
                    line: line_number,
                    problem,
                });
            }
        }
        Ok(())
    }

    fn read_event(&mut self, bytes: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| "torn or malformed line: not valid UTF-8".to_owned())?;
        // One strict pass that keeps only what the summary reads; a line it refuses is read
        // again the reference way, which words the problem.
        if let Some(event) = fast::read(text) {
            return self.count_event(event);
        }
        let event = match strict_json::parse(text) {
            Ok(Value::Object(event)) => event,
            Ok(_) => return Err("malformed line: not a JSON object".to_owned()),
            Err(err) => return Err(format!("torn or malformed line: {err}")),
        };
        self.count_event(EventView::of(&event))
    }

    fn count_event(&mut self, event: EventView) -> Result<(), String> {
        let id = event.id.as_deref().ok_or("event has no `id`")?;
        let stage = event.stage.as_deref().ok_or("event has no `stage`")?;
        if self.filter.has_time_window() {
            let ts = event
                .ts
                .as_deref()
                .and_then(|ts| humantime::parse_rfc3339(ts).ok())
                .ok_or("event has no valid `ts`")?;
            if !self.filter.admits_time(ts) {
                return Ok(());
            }
        }
        self.summary.events += 1;
        match stage {
            "gate" => {
                let decision = event
                    .decision
                    .as_deref()
                    .and_then(Decision::parse)
                    .ok_or("gate event has no valid `decision`")?;
                if self.trails.get(id).is_some_and(|t| t.decision.is_some()) {
                    return Err(format!("a second gate event for id {id}"));
                }
                let (agent, tool) = match event.call {
                    Some(names) => names,
                    None => ("(malformed call)".to_owned(), "-".to_owned()),
                };
                if let Some(state) = event.agent_state {
                    self.agent_states.insert(agent.clone(), state);
                }
                let names = (self.names.intern(&*agent), self.names.intern(&*tool));
                // Only a veto (a deny, or a hold that is declined) shows its reasons.
                let reasons = (decision != Decision::Allow)
                    .then(|| self.reason_lists.intern(event.reasons.as_slice()));
                let trail = self.trail(id);
                trail.decision = Some(decision);
                trail.reasons = reasons;
                trail.names = Some(names);
            }
            "approve" => {
                let approval = event
                    .approval
                    .ok_or("approve event has no valid `approval`")?;
                self.trail(id).approval = Some(approval);
            }
            "exec" => {
                let status = event.status.ok_or("exec event has no valid `outcome`")?;
                let named = self.trails.get(id).is_some_and(|t| t.names.is_some());
                let names = (!named).then(|| {
                    (
                        self.names.intern(event.agent.as_deref().unwrap_or("?")),
                        self.names.intern(event.tool.as_deref().unwrap_or("?")),
                    )
                });
                let trail = self.trail(id);
                trail.status = Some(status);
                if names.is_some() {
                    trail.names = names;
                }
            }
            other => return Err(format!("unknown stage {}", Value::String(other.to_owned()))),
        }
        Ok(())
    }

    fn trail(&mut self, id: &str) -> &mut CallTrail {
        if !self.trails.contains_key(id) {
            self.trails.insert(id.to_owned(), CallTrail::default());
        }
        self.trails.get_mut(id).expect("inserted above")
    }

    /// Finishes the summary.
    pub fn finish(mut self) -> Summary {
        let mut agents: BTreeMap<String, AgentSummary> = BTreeMap::new();
        let no_reasons = Vec::new();
        for (id, trail) in &self.trails {
            let (agent_name, tool_name) = match trail.names {
                Some((agent, tool)) => (
                    self.names.get(agent).as_str(),
                    self.names.get(tool).as_str(),
                ),
                None => ("", ""),
            };
            let trail_reasons = match trail.reasons {
                Some(reasons) => self.reason_lists.get(reasons),
                None => &no_reasons,
            };
            if !self.filter.admits_agent(agent_name) {
                continue;
            }
            let summary = &mut self.summary;
            match trail.status {
                Some(Status::Executed) => summary.outcomes.executed += 1,
                Some(Status::Skipped) => summary.outcomes.skipped += 1,
                Some(Status::Failed) => summary.outcomes.failed += 1,
                None => {}
            }
            let Some(decision) = trail.decision else {
                continue;
            };
            summary.calls += 1;
            let agent = agents
                .entry(agent_name.to_owned())
                .or_insert_with(|| AgentSummary {
                    agent: agent_name.to_owned(),
                    ..AgentSummary::default()
                });
            agent.calls += 1;
            agent.executed += u64::from(trail.status == Some(Status::Executed));
            let veto = |kind, reasons| Veto {
                id: id.clone(),
                kind,
                agent: agent_name.to_owned(),
                tool: tool_name.to_owned(),
                reasons,
            };
            match decision {
                Decision::Allow => {
                    summary.decisions.allow += 1;
                    agent.allow += 1;
                }
                Decision::Deny => {
                    summary.decisions.deny += 1;
                    agent.deny += 1;
                    summary.vetoes.push(veto("deny", trail_reasons.clone()));
                }
                Decision::Hold => {
                    summary.decisions.hold += 1;
                    agent.hold += 1;
                    match &trail.approval {
                        Some(approval) if approval.approved => {
                            summary.holds.approved += 1;
                            agent.approved += 1;
                        }
                        Some(approval) => {
                            summary.holds.declined += 1;
                            agent.declined += 1;
                            let mut reasons = trail_reasons.clone();
                            reasons.push(approval.reason.clone());
                            summary.vetoes.push(veto("declined", reasons));
                        }
                        None => {
                            summary.holds.unanswered += 1;
                            agent.unanswered += 1;
                        }
                    }
                }
            }
        }
        for (name, state) in &self.agent_states {
            if let Some(agent) = agents.get_mut(name) {
                agent.tainted_by = state
                    .tainted_by
                    .as_ref()
                    .map(|cause| cause.describe().to_owned());
                agent.spent = state.spent;
            }
        }
        self.summary.agents = agents.into_values().collect();
        self.summary
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
    Ok(summariser.finish())
}

/// What the summary reads of one event, however the event was read.
#[derive(Default)]
struct EventView<'a> {
    id: Option<Cow<'a, str>>,
    stage: Option<Cow<'a, str>>,
    ts: Option<Cow<'a, str>>,
    decision: Option<Cow<'a, str>>,
    /// The strings among `reasons`.
    reasons: Vec<String>,
    /// When the event has a `call`: its agent and tool, `?` for either that is not a name.
    call: Option<(String, String)>,
    agent_state: Option<AgentState>,
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
            reasons: strings(event.get("reasons")),
            call: event
                .get("call")
                .map(|call| (name_in(call, "agent"), name_in(call, "tool"))),
            agent_state: event
                .get("agentState")
                .cloned()
                .and_then(|s| serde_json::from_value::<AgentState>(s).ok()),
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

/// The one strict pass over an event that builds only an [`EventView`]. It gives up (`None`) on
/// any line that [`strict_json::parse`] would refuse or that is not an object, so that the
/// reference reading words the problem; on the others it gives the reference's view.
mod fast {
    use std::borrow::Cow;
    use std::fmt;

    use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde_json::value::RawValue;

    use super::EventView;
    use crate::record::Status;
    use crate::strict_json::{self, Checked, Key, KeySet, StrictValue};

    pub fn read(text: &str) -> Option<EventView<'_>> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let view = deserializer.deserialize_map(EventVisitor).ok()?;
        deserializer.end().ok()?;
        Some(view)
    }

    struct EventVisitor;

    impl<'de> Visitor<'de> for EventVisitor {
        type Value = EventView<'de>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an event object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EventView<'de>, A::Error> {
            let mut view = EventView::default();
            let mut keys = KeySet::new();
            while let Some(Key(key)) = map.next_key()? {
                if !keys.insert(key.clone()) {
                    return Err(strict_json::duplicate_key(&key));
                }
                let slot = match &*key {
                    "id" => &mut view.id,
                    "stage" => &mut view.stage,
                    "ts" => &mut view.ts,
                    "decision" => &mut view.decision,
                    "agent" => &mut view.agent,
                    "tool" => &mut view.tool,
                    "reasons" => {
                        view.reasons = map.next_value_seed(Any(Strings))?;
                        continue;
                    }
                    "call" => {
                        let names = map.next_value_seed(Any(Names))?;
                        view.call = Some(names.unwrap_or_else(|| ("?".into(), "?".into())));
                        continue;
                    }
                    "agentState" => {
                        let raw = checked_raw(&mut map)?;
                        view.agent_state = serde_json::from_str(raw).ok();
                        continue;
                    }
                    "approval" => {
                        let raw = checked_raw(&mut map)?;
                        view.approval = serde_json::from_str(raw).ok();
                        continue;
                    }
                    "outcome" => {
                        view.status = map.next_value_seed(Any(OutcomeStatus))?.flatten();
                        continue;
                    }
                    _ => {
                        map.next_value::<Checked>()?;
                        continue;
                    }
                };
                *slot = map.next_value_seed(Any(Str))?;
            }
            Ok(view)
        }
    }

    /// A value's text as written, once checked as strictly as [`strict_json::parse`] checks.
    fn checked_raw<'de, A: MapAccess<'de>>(map: &mut A) -> Result<&'de str, A::Error> {
        let raw: &'de RawValue = map.next_value()?;
        strict_json::validate(raw.get()).map_err(de::Error::custom)?;
        Ok(raw.get())
    }

    /// What to keep of a value of a given kind; every other value is checked and dropped.
    trait Keep<'de>: Copy {
        type Kept: Default;
        fn string(self, _: Cow<'de, str>) -> Self::Kept {
            Self::Kept::default()
        }
        fn seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Kept, A::Error> {
            strict_json::check_seq(seq).map(|()| Self::Kept::default())
        }
        fn map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Kept, A::Error> {
            strict_json::check_map(map).map(|()| Self::Kept::default())
        }
    }

    /// A string (`Value::as_str`).
    #[derive(Clone, Copy)]
    struct Str;
    impl<'de> Keep<'de> for Str {
        type Kept = Option<Cow<'de, str>>;
        fn string(self, text: Cow<'de, str>) -> Self::Kept {
            Some(text)
        }
    }

    /// The strings of an array (`strings`).
    #[derive(Clone, Copy)]
    struct Strings;
    impl<'de> Keep<'de> for Strings {
        type Kept = Vec<String>;
        fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut strings = Vec::new();
            while let Some(item) = seq.next_element_seed(Any(Str))? {
                if let Some(text) = item {
                    strings.push(text.into_owned());
                }
            }
            Ok(strings)
        }
    }

    /// A call's agent and tool as `name_in` gives them; `None` for a call that is no object.
    #[derive(Clone, Copy)]
    struct Names;
    impl<'de> Keep<'de> for Names {
        type Kept = Option<(String, String)>;
        fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Kept, A::Error> {
            let (mut agent, mut tool) = (None, None);
            let mut keys = KeySet::new();
            while let Some(Key(key)) = map.next_key()? {
                if !keys.insert(key.clone()) {
                    return Err(strict_json::duplicate_key(&key));
                }
                match &*key {
                    "agent" => agent = map.next_value_seed(Any(Str))?,
                    "tool" => tool = map.next_value_seed(Any(Str))?,
                    _ => {
                        map.next_value::<Checked>()?;
                    }
                }
            }
            let name = |text: Option<Cow<str>>| match text {
                Some(text) if !text.is_empty() => text.into_owned(),
                _ => "?".to_owned(),
            };
            Ok(Some((name(agent), name(tool))))
        }
    }

    /// An outcome's `status`, when the outcome is an object (`Some(None)`: one without a valid
    /// status).
    #[derive(Clone, Copy)]
    struct OutcomeStatus;
    impl<'de> Keep<'de> for OutcomeStatus {
        type Kept = Option<Option<Status>>;
        fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Kept, A::Error> {
            let mut status = None;
            let mut keys = KeySet::new();
            while let Some(Key(key)) = map.next_key()? {
                if !keys.insert(key.clone()) {
                    return Err(strict_json::duplicate_key(&key));
                }
                if key == "status" {
                    let StrictValue(value) = map.next_value()?;
                    status = serde_json::from_value(value).ok();
                } else {
                    map.next_value::<Checked>()?;
                }
            }
            Ok(Some(status))
        }
    }

    /// Any value, checked strictly, keeping what `K` keeps of it.
    #[derive(Clone, Copy)]
    struct Any<K>(K);

    impl<'de, K: Keep<'de>> DeserializeSeed<'de> for Any<K> {
        type Value = K::Kept;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K::Kept, D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de, K: Keep<'de>> Visitor<'de> for Any<K> {
        type Value = K::Kept;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<K::Kept, E> {
            Ok(K::Kept::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<K::Kept, E> {
            Ok(K::Kept::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<K::Kept, E> {
            Ok(K::Kept::default())
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<K::Kept, E> {
            strict_json::check_f64(v).map(|()| K::Kept::default())
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<K::Kept, E> {
            Ok(self.0.string(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<K::Kept, E> {
            Ok(self.0.string(Cow::Owned(v.to_owned())))
        }
        fn visit_string<E>(self, v: String) -> Result<K::Kept, E> {
            Ok(self.0.string(Cow::Owned(v)))
        }
        fn visit_unit<E>(self) -> Result<K::Kept, E> {
            Ok(K::Kept::default())
        }
        fn visit_none<E>(self) -> Result<K::Kept, E> {
            Ok(K::Kept::default())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<K::Kept, A::Error> {
            self.0.seq(seq)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<K::Kept, A::Error> {
            self.0.map(map)
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

/// ANSI styles for a terminal; all empty when colour is off.
struct Style {
    bold: &'static str,
    red: &'static str,
    yellow: &'static str,
    reset: &'static str,
}

impl Style {
    fn new(colour: bool) -> Style {
        if colour {
            Style {
                bold: "\x1b[1m",
                red: "\x1b[31m",
                yellow: "\x1b[33m",
                reset: "\x1b[0m",
            }
        } else {
            Style {
                bold: "",
                red: "",
                yellow: "",
                reset: "",
            }
        }
    }
}

/// The report for people, without colour.
pub fn render_text(summary: &Summary) -> String {
    render_text_with(summary, false)
}

/// The report for people; `colour` adds ANSI colour (for a terminal only).
pub fn render_text_with(summary: &Summary, colour: bool) -> String {
    let style = Style::new(colour);
    let mut out = String::new();
    let d = &summary.decisions;
    let h = &summary.holds;
    let o = &summary.outcomes;
    let _ = writeln!(
        out,
        "{}Skeleton Crew audit report{}: {} ({} events)\n",
        style.bold,
        style.reset,
        summary.logs.join(", "),
        summary.events
    );
    let _ = writeln!(
        out,
        "Decisions  {} calls: {} allow, {} hold, {} deny",
        summary.calls, d.allow, d.hold, d.deny
    );
    let _ = writeln!(
        out,
        "Holds      {} approved, {} declined, {} never answered",
        h.approved, h.declined, h.unanswered
    );
    let _ = writeln!(
        out,
        "Outcomes   {} executed, {} skipped, {} failed",
        o.executed, o.skipped, o.failed
    );

    let _ = writeln!(
        out,
        "\nVetoes ({}): calls denied, or held and declined",
        summary.vetoes.len()
    );
    if summary.vetoes.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for veto in &summary.vetoes {
        let colour = if veto.kind == "deny" {
            style.red
        } else {
            style.yellow
        };
        let _ = writeln!(
            out,
            "  {colour}{:<9}{} {} → {}  (id {})",
            veto.kind.to_uppercase(),
            style.reset,
            for_terminal(&veto.agent),
            for_terminal(&veto.tool),
            for_terminal(&veto.id)
        );
        for reason in &veto.reasons {
            let _ = writeln!(out, "            - {}", for_terminal(reason));
        }
    }

    let _ = writeln!(out, "\nBy agent");
    let headers = [
        "calls",
        "allow",
        "hold",
        "deny",
        "approved",
        "declined",
        "unanswered",
        "executed",
    ];
    let names: Vec<String> = summary
        .agents
        .iter()
        .map(|a| for_terminal(&a.agent).into_owned())
        .collect();
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max("agent".len());
    let _ = write!(out, "  {:<width$}", "agent");
    for header in headers {
        let _ = write!(out, "  {header:>w$}", w = header.len());
    }
    out.push('\n');
    for (agent, name) in summary.agents.iter().zip(&names) {
        let pad = width - name.chars().count();
        let _ = write!(out, "  {name}{}", " ".repeat(pad));
        let values = [
            agent.calls,
            agent.allow,
            agent.hold,
            agent.deny,
            agent.approved,
            agent.declined,
            agent.unanswered,
            agent.executed,
        ];
        for (header, value) in headers.iter().zip(values) {
            let _ = write!(out, "  {value:>w$}", w = header.len());
        }
        out.push('\n');
    }

    let tainted: Vec<&AgentSummary> = summary
        .agents
        .iter()
        .filter(|a| a.tainted_by.is_some())
        .collect();
    if !tainted.is_empty() {
        let _ = writeln!(out, "\nTaint");
        for agent in tainted {
            let cause = agent.tainted_by.as_deref().unwrap_or_default();
            let _ = writeln!(
                out,
                "  {} tainted by {}",
                for_terminal(&agent.agent),
                for_terminal(cause)
            );
        }
    }

    if !summary.problems.is_empty() {
        let _ = writeln!(out, "\nProblems in the logs ({})", summary.problems.len());
        for problem in &summary.problems {
            let _ = writeln!(
                out,
                "  {} line {}: {}",
                problem.log,
                problem.line,
                for_terminal(&problem.problem)
            );
        }
    }
    out
}

/// A table cell for markdown: escaped for a terminal, pipes escaped, one line.
fn cell(text: &str) -> String {
    for_terminal(text).replace('|', "\\|")
}

/// The report as markdown, fit for a CI job summary.
pub fn render_markdown(summary: &Summary) -> String {
    let mut out = String::new();
    let d = &summary.decisions;
    let h = &summary.holds;
    let o = &summary.outcomes;
    let logs: Vec<String> = summary
        .logs
        .iter()
        .map(|l| format!("`{}`", cell(l)))
        .collect();
    let _ = writeln!(out, "## Skeleton Crew audit report\n");
    let _ = writeln!(out, "{} ({} events)\n", logs.join(", "), summary.events);
    let _ = writeln!(out, "| calls | allow | hold | deny | approved | declined | never answered | executed | skipped | failed |");
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        summary.calls,
        d.allow,
        d.hold,
        d.deny,
        h.approved,
        h.declined,
        h.unanswered,
        o.executed,
        o.skipped,
        o.failed
    );
    let _ = writeln!(out, "### Vetoes ({})\n", summary.vetoes.len());
    if summary.vetoes.is_empty() {
        let _ = writeln!(out, "None.\n");
    } else {
        let _ = writeln!(out, "| kind | agent | tool | reasons | id |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for veto in &summary.vetoes {
            let reasons: Vec<String> = veto.reasons.iter().map(|r| cell(r)).collect();
            let _ = writeln!(
                out,
                "| **{}** | {} | `{}` | {} | `{}` |",
                veto.kind,
                cell(&veto.agent),
                cell(&veto.tool),
                reasons.join("<br>"),
                cell(&veto.id)
            );
        }
        out.push('\n');
    }
    let _ = writeln!(out, "### By agent\n");
    let _ = writeln!(out, "| agent | calls | allow | hold | deny | approved | declined | never answered | executed | tainted by |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for a in &summary.agents {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&a.agent),
            a.calls,
            a.allow,
            a.hold,
            a.deny,
            a.approved,
            a.declined,
            a.unanswered,
            a.executed,
            a.tainted_by.as_deref().map(cell).unwrap_or_default()
        );
    }
    if !summary.problems.is_empty() {
        let _ = writeln!(
            out,
            "\n### Problems in the logs ({})\n",
            summary.problems.len()
        );
        for p in &summary.problems {
            let _ = writeln!(
                out,
                "- `{}` line {}: {}",
                cell(&p.log),
                p.line,
                cell(&p.problem)
            );
        }
    }
    out
}

/// The report for programs: the same summary as one JSON document.
pub fn render_json(summary: &Summary) -> String {
    let mut text = serde_json::to_string_pretty(summary).expect("a summary serializes");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_names_and_reasons_are_kept_once() {
        let mut names = Interner::<String>::default();
        let scout = names.intern("scout");
        assert_eq!(names.intern("booker"), 1);
        assert_eq!(names.intern("scout"), scout);
        assert_eq!(names.get(scout), "scout");
        let mut reasons = Interner::<Vec<String>>::default();
        let held = reasons.intern(["a".to_owned(), "b".to_owned()].as_slice());
        assert_ne!(reasons.intern(["a".to_owned()].as_slice()), held);
        assert_eq!(
            reasons.intern(["a".to_owned(), "b".to_owned()].as_slice()),
            held
        );
        assert_eq!(reasons.values.len(), 2);
    }

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
}
