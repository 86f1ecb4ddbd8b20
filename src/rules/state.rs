//! Per-agent state across a stream: taint and spend. An explicit, serialisable value that the
//! decision reads ([`crate::rules::decision::evaluate_with_state`]) and that is updated after each
//! decision ([`CrewState::record`]), so the rules stay pure and a later adapter can persist it.
//!
//! - **Taint.** Once an agent has a call that is not denied to a tool in `untrustedOutputTools`
//!   (web pages, mail, files: third-party text), it is tainted for the rest of the stream. With
//!   `taintScope: "crew"`, the whole crew is. Taint never clears within a stream, and an approval
//!   does not clear it.
//! - **Spend.** The sum of the understood amounts of an agent's calls that were not denied, and the
//!   same sum over the whole crew (for `budgetScope: "crew"`). A hold counts whatever its answer:
//!   the gate cannot see the answer, so it fails closed.
//!
//! Agents are told apart by their names exactly, as the policy's `agents` does. An agent that may
//! choose its own name can start clean under a new one, so where agents name themselves the
//! crew scopes (`taintScope`, `budgetScope`) are the ones that bind.
//!
//! Time enters only through [`CrewState::enter`] and [`CrewState::record_at`], with the time a
//! door read from its [`Clock`]: with `budgetWindow`, spend from an ended window (UTC calendar
//! hour, day or week) no longer counts; with a taint TTL, a taint whose last untrusted read is
//! older than the TTL is lifted. A test passes a [`SetClock`] instead of sleeping.
//!
//! The state is also stored (in a [`crate::store`], shared by the processes of one crew), and
//! [`CrewState::from_json`] reads it back only in the exact shape [`CrewState`] writes: anything
//! else is an error, never a fresh start.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::agent_name::{AgentName, Name};
use super::policy::{BudgetScope, BudgetWindow, Policy, TaintScope};
use super::provenance::{ProvenanceState, ValueRecord};
use crate::amount::Amount;
use crate::call::Call;
use crate::sanitize::{for_terminal, quoted};
use crate::strict_json;
use crate::verdict::{Decision, Judgement};

/// The argument keys that best name what a tool read, in order of preference.
const KEY_ARGUMENTS: &[&str] = &["url", "uri", "path", "file", "query", "from", "id", "to"];

/// The most other sources a taint cause lists ([`TaintCause::also`]).
pub const MAX_ALSO: usize = 4;
/// What stands for the sources past [`MAX_ALSO`]: no grant covers a session that has it.
pub use crate::rules::grant::MORE_SOURCES;

/// The call that tainted an agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaintCause {
    pub agent: String,
    pub tool: String,
    pub id: String,
    /// The key argument, as `name=value` (e.g. `url=https://example.com/page`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<String>,
    /// When untrusted content was last read (by this agent; for the crew's taint, by any agent),
    /// RFC 3339 in UTC to the second: a taint TTL counts from it. Absent, the taint never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The other untrusted sources read since ([`crate::rules::grant::taint_source`]), each
    /// once, at most [`MAX_ALSO`]; past that, [`MORE_SOURCES`] stands for the rest. A `call`
    /// grant covers a call only while every source of the session is one it recorded.
    ///
    /// Shared, not copied, by each copy of the state: a door keeps a copy of the agent's state
    /// with every call it decides in a shared store.
    #[serde(default, skip_serializing_if = "no_other_sources")]
    pub also: Arc<Vec<String>>,
    /// Once `also` ends in [`MORE_SOURCES`], how many untrusted reads were made past the list
    /// (1 for the read that filled it; absent before): the marker says the count
    /// ([`crate::rules::grant::more_sources`]), so a read since a record was shown, which the
    /// list cannot name, still changes what the record's `grantable` would say. Every read
    /// counts, a source read again too: past the list it cannot be told from a new one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reads_past: u64,
    /// [`TaintCause::describe`], written once: a tainted agent's every sensitive call names it.
    #[serde(skip)]
    description: OnceLock<Arc<str>>,
}

impl PartialEq for TaintCause {
    fn eq(&self, other: &TaintCause) -> bool {
        (
            &self.agent,
            &self.tool,
            &self.id,
            &self.argument,
            &self.at,
            &*self.also,
            self.reads_past,
        ) == (
            &other.agent,
            &other.tool,
            &other.id,
            &other.argument,
            &other.at,
            &*other.also,
            other.reads_past,
        )
    }
}

impl Eq for TaintCause {}

impl TaintCause {
    pub fn new(agent: String, tool: String, id: String, argument: Option<String>) -> TaintCause {
        TaintCause {
            agent,
            tool,
            id,
            argument,
            at: None,
            also: Arc::default(),
            reads_past: 0,
            description: OnceLock::new(),
        }
    }

    /// Every untrusted source of the taint, as the grants read them.
    pub fn sources(&self) -> crate::rules::grant::TaintSources<'_> {
        crate::rules::grant::TaintSources {
            tool: &self.tool,
            argument: self.argument.as_deref(),
            also: self.also.as_slice(),
            reads_past: self.reads_past,
        }
    }

    /// Whether `also` is full: past it, a read only counts ([`TaintCause::reads_past`]).
    fn full(&self) -> bool {
        self.also.last().map(String::as_str) == Some(MORE_SOURCES)
    }

    /// Notes another untrusted source read, once; past [`MAX_ALSO`], [`MORE_SOURCES`], and
    /// from then on each read only counts ([`TaintCause::read_past`]).
    fn read_also(&mut self, source: &str) {
        if self.full() {
            self.read_past();
            return;
        }
        let first = crate::rules::grant::taint_source(&self.tool, self.argument.as_deref());
        if first == source || self.also.iter().any(|known| known == source) {
            return;
        }
        let also = Arc::make_mut(&mut self.also);
        if also.len() < MAX_ALSO {
            also.push(source.to_owned());
        } else {
            also.push(MORE_SOURCES.to_owned());
            self.reads_past = 1;
        }
    }

    /// Counts a read past the full list.
    fn read_past(&mut self) {
        self.reads_past = self.reads_past.max(1).saturating_add(1);
    }

    /// The same cause, stamped with the time of the read.
    pub fn at(mut self, at: Option<String>) -> TaintCause {
        self.at = at;
        self
    }

    /// How reasons name the cause: `fetch_page (id 1a2b-3, url=https://…) by helper`.
    pub fn describe(&self) -> &str {
        self.description.get_or_init(|| {
            let argument = self
                .argument
                .as_ref()
                .map(|a| format!(", {a}"))
                .unwrap_or_default();
            Arc::from(format!(
                "{} (id {}{}) by {}",
                quoted(&self.tool),
                quoted(&self.id),
                for_terminal(&argument),
                quoted(&self.agent)
            ))
        })
    }
}

/// A taint's sources (`with_first`: the first one too, as a `grantable` lists them; else its
/// `also`), and the reads its marker counts past the list when the list is full. A marker is
/// only ever the last of a full list ([`MAX_ALSO`] others after the first), so a source that
/// merely reads like one (a tool named so) anywhere else is a source like any other.
pub fn listed_and_past(sources: &[String], with_first: bool) -> (&[String], Option<u64>) {
    let full = MAX_ALSO + usize::from(with_first);
    match sources.split_last() {
        Some((last, listed)) if listed.len() == full => {
            match crate::rules::grant::more_sources_reads(last) {
                Some(reads) => (listed, Some(reads)),
                None => (sources, None),
            }
        }
        _ => (sources, None),
    }
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// Whether a taint lists no other source (`also` is then left out).
fn no_other_sources(also: &Arc<Vec<String>>) -> bool {
    also.is_empty()
}

/// What the stream so far says about one agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tainted_by: Option<TaintCause>,
    pub spent: f64,
    /// Whether `spent` may differ from the exact decimal sum (an amount a float cannot hold, or
    /// a sum that rounded). A budget check that ties in floats then holds rather than guess.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inexact: bool,
}

/// Where the time comes from: the system's clock, or a [`SetClock`] in tests.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> SystemTime;

    /// Whether [`Clock::now`] is the system's wall clock, so that an audit event's time may be
    /// the decision's (a clock set by a test is never an event's time).
    fn is_wall_clock(&self) -> bool {
        false
    }
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn is_wall_clock(&self) -> bool {
        true
    }
}

/// A clock that says what it was last set to, to the second: what tests pass instead of waiting.
#[derive(Debug, Default)]
pub struct SetClock(AtomicU64);

impl SetClock {
    /// A clock at `seconds` since the Unix epoch.
    pub fn at(seconds: u64) -> SetClock {
        SetClock(AtomicU64::new(seconds))
    }

    pub fn set(&self, seconds: u64) {
        self.0.store(seconds, Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(by.as_secs(), Ordering::SeqCst);
    }
}

impl Clock for SetClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.0.load(Ordering::SeqCst))
    }
}

/// Seconds since the Unix epoch (0 before it).
pub(crate) fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// RFC 3339 in UTC to the second, as the state writes times: `2026-12-02T13:00:00Z`.
pub(crate) fn rfc3339_seconds(seconds: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(seconds)).to_string()
}

/// Reads a time the state wrote ([`rfc3339_seconds`]).
fn parse_seconds(text: &str) -> Option<u64> {
    let time = humantime::parse_rfc3339(text).ok()?;
    (rfc3339_seconds(unix_seconds(time)) == text).then(|| unix_seconds(time))
}

/// The most held calls whose counted amount a state remembers ([`CrewState::held_spend`]); past
/// it, the oldest is forgotten.
pub const MAX_HELD_SPEND: usize = 1_000;

/// The longest id a held call's note may carry (a call's id is a few dozen bytes); a state
/// with a longer one is not one this program wrote.
pub const MAX_HELD_ID: usize = 128;

/// A held call whose amount is counted in the spend, for a 2026-07-28 client's retry of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeldSpend {
    /// The held call's id (its `gate` event's, sealed in the retry's `requestState`).
    pub id: String,
    pub agent: String,
    /// The amount counted for it, above 0.
    pub amount: f64,
}

/// The budget window the spend counts in: its unit, and when it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpendWindow {
    pub unit: BudgetWindow,
    /// RFC 3339 in UTC ([`rfc3339_seconds`]).
    pub start: String,
}

impl SpendWindow {
    /// The window of `unit` that holds `now`.
    pub(crate) fn holding(unit: BudgetWindow, now: SystemTime) -> SpendWindow {
        SpendWindow {
            unit,
            start: rfc3339_seconds(unit.start_of(unix_seconds(now))),
        }
    }

    /// Whether the window has ended by `now` (a later window of its unit has started).
    pub(crate) fn ended_by(&self, now: SystemTime) -> bool {
        let current = SpendWindow::holding(self.unit, now);
        parse_seconds(&current.start) > parse_seconds(&self.start)
    }
}

/// What a state spans, for the reasons that name it: a stream (in memory), one session, or a
/// crew's shared state. Not stored: the store that reads a state says what it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Span {
    #[default]
    Stream,
    Session,
    Crew(String),
}

/// The crew's state across a stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrewState {
    /// Each agent's state, by its name.
    pub agents: BTreeMap<AgentName, AgentState>,
    /// The first taint of any agent, for `taintScope: "crew"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crew_tainted_by: Option<TaintCause>,
    /// Every agent's amounts together, for `budgetScope: "crew"`.
    pub crew_spent: f64,
    /// Whether `crew_spent` may differ from the exact decimal sum (as [`AgentState::inexact`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub crew_inexact: bool,
    /// With `budgetWindow`, the window the spend counts in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend_window: Option<SpendWindow>,
    /// With the policy's `provenance`: what each agent (or the crew) read and was told. Boxed:
    /// a state is moved whole, and most have none.
    #[serde(default, skip_serializing_if = "super::provenance::is_empty_box")]
    pub provenance: Box<ProvenanceState>,
    /// The held calls whose amount the spend still counts, oldest first (at most
    /// [`MAX_HELD_SPEND`]): noted by a door that asks through a 2026-07-28 client's retry, so
    /// that the retry takes the amount back only while it is counted. Forgotten with the spend
    /// (a budget window that ends, a reset). A note whose retry never comes stays until then,
    /// or until [`MAX_HELD_SPEND`] newer ones push it out: its amount is counted, so it is
    /// true, only unused. Not in [`AgentState`], which every audit event carries; left out when
    /// empty, so most states are written as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_spend: Vec<HeldSpend>,
    /// What the state spans, for the reasons.
    #[serde(skip)]
    pub span: Span,
}

impl CrewState {
    pub fn new() -> Self {
        Self::default()
    }

    /// What taints `agent` under the policy's scope, if anything.
    pub fn taint_of(&self, agent: &str, policy: &Policy) -> Option<&TaintCause> {
        match policy.taint_scope() {
            TaintScope::Agent => self.agent(agent)?.tainted_by.as_ref(),
            TaintScope::Crew => self.crew_tainted_by.as_ref(),
        }
    }

    /// What `agent` has spent so far in the stream.
    pub fn spent_by(&self, agent: &str) -> f64 {
        self.agent(agent).map_or(0.0, |a| a.spent)
    }

    /// What the policy's budget counts so far for `agent`: its own spend, or the crew's with
    /// `budgetScope: "crew"`; and whether that float may differ from the exact decimal sum.
    pub(crate) fn spent_in_scope(&self, agent: &str, policy: &Policy) -> (f64, bool) {
        match policy.budget_scope() {
            BudgetScope::Agent => self
                .agent(agent)
                .map_or((0.0, false), |a| (a.spent, a.inexact)),
            BudgetScope::Crew => (self.crew_spent, self.crew_inexact),
        }
    }

    pub fn agent(&self, agent: &str) -> Option<&AgentState> {
        self.agents.get(Name::of(agent))
    }

    /// Brings the state to `now`, before a decision: with the policy's `budgetWindow`, spend
    /// from a window that has ended no longer counts (a later window is never left for an
    /// earlier one: a process whose clock is behind another's spends in the later window); with
    /// `taint_ttl`, a taint whose last untrusted read is that old is lifted. A taint with no time
    /// never expires.
    pub(crate) fn enter(&mut self, policy: &Policy, now: SystemTime, taint_ttl: Option<Duration>) {
        match policy.budget_window() {
            Some(unit) => {
                let current = SpendWindow::holding(unit, now);
                let keep = self.spend_window.as_ref().is_some_and(|window| {
                    window.unit == unit
                        && parse_seconds(&window.start) >= parse_seconds(&current.start)
                });
                if !keep {
                    self.clear_spend();
                    self.spend_window = Some(current);
                }
            }
            None => self.spend_window = None,
        }
        if let Some(ttl) = taint_ttl {
            let now = unix_seconds(now);
            let expired = |cause: &Option<TaintCause>| {
                cause
                    .as_ref()
                    .and_then(|cause| cause.at.as_deref())
                    .and_then(parse_seconds)
                    .is_some_and(|at| at.saturating_add(ttl.as_secs()) <= now)
            };
            for agent in self.agents.values_mut() {
                if expired(&agent.tainted_by) {
                    agent.tainted_by = None;
                }
            }
            if expired(&self.crew_tainted_by) {
                self.crew_tainted_by = None;
            }
            self.keep_crew_taint();
            self.agents
                .retain(|_, agent| agent.tainted_by.is_some() || agent.spent != 0.0);
        }
    }

    /// Every agent's spend, and the crew's, back to 0.
    fn clear_spend(&mut self) {
        for agent in self.agents.values_mut() {
            agent.spent = 0.0;
            agent.inexact = false;
        }
        self.agents.retain(|_, agent| agent.tainted_by.is_some());
        self.crew_spent = 0.0;
        self.crew_inexact = false;
        // No held amount is counted any more.
        self.held_spend.clear();
    }

    /// The crew stays tainted while any agent is: by the agent taint read last.
    fn keep_crew_taint(&mut self) {
        if self.crew_tainted_by.is_none() {
            self.crew_tainted_by = self
                .agents
                .values()
                .filter_map(|agent| agent.tainted_by.as_ref())
                .max_by(|a, b| a.at.cmp(&b.at))
                .cloned();
        }
    }

    /// Clears one agent's taint and spend (`sc-state reset --agent`); the crew's spend loses the
    /// agent's, and a crew taint it caused passes to another tainted agent's, if any. Whether
    /// the agent had a state.
    pub(crate) fn reset_agent(&mut self, agent: &str) -> bool {
        self.provenance.reset_agent(agent);
        // Its held amounts are no longer counted.
        self.held_spend.retain(|held| held.agent != agent);
        if self.agents.remove(Name::of(agent)).is_none() {
            return false;
        }
        let (mut sum, mut inexact) = (0.0, false);
        for state in self.agents.values() {
            let (added, exact) = add_exactly(sum, state.spent);
            sum = added.min(f64::MAX);
            inexact |= state.inexact || !exact;
        }
        self.crew_spent = sum;
        self.crew_inexact = inexact;
        if self
            .crew_tainted_by
            .as_ref()
            .is_some_and(|cause| cause.agent == agent)
        {
            self.crew_tainted_by = None;
        }
        self.keep_crew_taint();
        true
    }

    /// Notes that the amount [`CrewState::record`] added for the held call `call` (`id`) is
    /// counted, for a retry of it ([`CrewState::held_is_counted`]): nothing for a call without an
    /// understood amount above 0. Past [`MAX_HELD_SPEND`], the oldest is forgotten; its retry
    /// then counts its amount again, as a call first decided would: twice at worst, stricter,
    /// never looser.
    pub(crate) fn note_held(&mut self, id: &str, call: &Call) {
        let Some(amount) = counted_amount(call) else {
            return;
        };
        self.held_spend.retain(|held| held.id != id);
        if self.held_spend.len() >= MAX_HELD_SPEND {
            let over = self.held_spend.len() + 1 - MAX_HELD_SPEND;
            self.held_spend.drain(..over);
        }
        self.held_spend.push(HeldSpend {
            id: id.to_owned(),
            agent: call.agent.clone(),
            amount,
        });
    }

    /// Whether the amount of the held call `call` (`id`) is still counted: noted when it was
    /// held ([`CrewState::note_held`]), for the same agent and amount, and not forgotten since
    /// (a budget window that ended, a reset, or [`MAX_HELD_SPEND`] holds noted after it).
    pub(crate) fn held_is_counted(&self, id: &str, call: &Call) -> bool {
        let Some(amount) = counted_amount(call) else {
            return false;
        };
        self.held_spend
            .iter()
            .any(|held| held.id == id && held.agent == call.agent && held.amount == amount)
    }

    /// Forgets the held call `id` (its retry was settled): its amount stays counted.
    pub(crate) fn forget_held(&mut self, id: &str) {
        self.held_spend.retain(|held| held.id != id);
    }

    /// Takes back from the agent's spend and the crew's the amount [`CrewState::record`] added
    /// for `call` (never below 0), so a call recorded when it was held is decided again on the
    /// spend without its own. Only for a call whose amount is still counted
    /// ([`CrewState::held_is_counted`]): one a budget window that ended or a reset took back
    /// already would be taken from the spend of other calls.
    pub(crate) fn take_back_spend(&mut self, call: &Call) {
        let Some(value) = call.args.amount() else {
            return;
        };
        let (amount, amount_exact) =
            amount_and_exactness(&Amount::from_json_exact(value, call.amount_text.as_deref()));
        if amount == 0.0 || !amount.is_finite() {
            return;
        }
        let (crew, crew_exact) = add_exactly(self.crew_spent, -amount);
        self.crew_inexact |= !amount_exact || !crew_exact;
        self.crew_spent = crew.max(0.0);
        if let Some(agent) = self.agents.get_mut(Name::of(&call.agent)) {
            let (sum, sum_exact) = add_exactly(agent.spent, -amount);
            agent.inexact |= !amount_exact || !sum_exact;
            agent.spent = sum.max(0.0);
        }
    }

    /// Updates the state after a call was decided. Denied calls change nothing.
    pub fn record(&mut self, call: &Call, id: &str, judgement: &Judgement, policy: &Policy) {
        self.record_at(call, id, judgement, policy, None);
    }

    /// [`CrewState::record`], with the time of the call: a tainting read stamps the taint with
    /// it (the agent's and the crew's, kept or new), so a taint TTL counts from the last read.
    /// Two parts: the call's amount, added to the spend; then its reads ([`record_read`]), which
    /// [`CrewState::record_reads_at`] records alone.
    pub fn record_at(
        &mut self,
        call: &Call,
        id: &str,
        judgement: &Judgement,
        policy: &Policy,
        now: Option<SystemTime>,
    ) {
        if judgement.decision == Decision::Deny {
            return;
        }
        let (amount, amount_exact) = match call.args.amount() {
            Some(value) => {
                amount_and_exactness(&Amount::from_json_exact(value, call.amount_text.as_deref()))
            }
            None => (0.0, true),
        };
        let (crew_sum, crew_sum_exact) = add_exactly(self.crew_spent, amount);
        self.crew_inexact |= !amount_exact || !crew_sum_exact;
        // Saturate rather than reach infinity, which JSON cannot carry (the state must round-trip).
        self.crew_spent = crew_sum.min(f64::MAX);
        // One lookup for an agent seen before (every call but its first).
        let agent = match self.agents.get_mut(Name::of(&call.agent)) {
            Some(agent) => agent,
            None => self.agents.entry(call.agent.as_str().into()).or_default(),
        };
        let (sum, sum_exact) = add_exactly(agent.spent, amount);
        agent.inexact |= !amount_exact || !sum_exact;
        agent.spent = sum.min(f64::MAX);
        if !policy.has_untrusted_output(&call.tool) {
            return;
        }
        record_read(
            agent,
            &mut self.crew_tainted_by,
            &mut self.provenance,
            (call, id, policy),
            now,
        );
    }

    /// The reads part of [`CrewState::record_at`] alone, without the amount: for a held call
    /// retried while the spend still counts its amount ([`CrewState::held_is_counted`]). Its
    /// read of untrusted output taints the agent and the crew, and is awaited for provenance,
    /// as when it was first decided, so a reset or a taint TTL between the hold and the retry
    /// does not let the call run untainting. A taint already there is kept, cause and all (its
    /// first read's), its time moved on to `now`, as any later read moves it. Denied calls
    /// change nothing.
    pub(crate) fn record_reads_at(
        &mut self,
        call: &Call,
        id: &str,
        judgement: &Judgement,
        policy: &Policy,
        now: Option<SystemTime>,
    ) {
        if judgement.decision == Decision::Deny || !policy.has_untrusted_output(&call.tool) {
            return;
        }
        let agent = self.agents.entry(call.agent.as_str().into()).or_default();
        record_read(
            agent,
            &mut self.crew_tainted_by,
            &mut self.provenance,
            (call, id, policy),
            now,
        );
    }
}

/// What [`CrewState::record_at`] records of a call (`id`) not denied whose tool's output is
/// untrusted: the agent's taint and the crew's (the first kept), the read awaited for
/// provenance, and the read's time. `agent`, the crew's taint and the provenance are the
/// state's, borrowed apart so that the spend's lookup of the agent serves this too.
#[inline]
fn record_read(
    agent: &mut AgentState,
    crew_tainted_by: &mut Option<TaintCause>,
    provenance: &mut ProvenanceState,
    (call, id, policy): (&Call, &str, &Policy),
    now: Option<SystemTime>,
) {
    provenance.read_called(call, id, policy);
    let at = now.map(|now| rfc3339_seconds(unix_seconds(now)));
    // The first taint is the one kept (a later read only moves its time on): a cause is only
    // built when it will be.
    if agent.tainted_by.is_none() || crew_tainted_by.is_none() {
        let taint = TaintCause::new(
            call.agent.clone(),
            call.tool.clone(),
            id.to_owned(),
            key_argument(call),
        )
        .at(at.clone());
        agent.tainted_by.get_or_insert_with(|| taint.clone());
        crew_tainted_by.get_or_insert(taint);
    }
    // Every other source read is noted on the cause: a `call` grant covers a call only while
    // the session's sources are among those of its moment. Past the list, a read only counts,
    // and its source is not worked out.
    let open = [&agent.tainted_by, &*crew_tainted_by]
        .into_iter()
        .flatten()
        .any(|cause| !cause.full());
    if open {
        let source = crate::rules::grant::taint_source(&call.tool, key_argument(call).as_deref());
        for cause in [&mut agent.tainted_by, &mut *crew_tainted_by]
            .into_iter()
            .flatten()
        {
            cause.read_also(&source);
        }
    } else {
        for cause in [&mut agent.tainted_by, &mut *crew_tainted_by]
            .into_iter()
            .flatten()
        {
            cause.read_past();
        }
    }
    if at.is_some() {
        for cause in [&mut agent.tainted_by, crew_tainted_by]
            .into_iter()
            .flatten()
        {
            if cause.at < at {
                cause.at.clone_from(&at);
            }
        }
    }
}

/// Why a stored state is refused: each names what in it is wrong (`what` and `field` say
/// where: `the state`, `` `agents` ``, `agent "a"'s `taintedBy``).
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("not valid UTF-8 (bad byte at offset {0})")]
    NotUtf8(usize),
    #[error("the file is empty, and a state is never written empty")]
    Empty,
    #[error("not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("not a crew state: {0}")]
    NotAState(serde_json::Error),
    #[error("{what} must be an object, not {found}")]
    NotAnObject { what: String, found: &'static str },
    #[error("{what}.{field} must be a string, not {found}")]
    NotAString {
        what: String,
        field: &'static str,
        found: &'static str,
    },
    #[error("{what} is {spent}, below 0")]
    BelowZero { what: String, spent: f64 },
    #[error("agent {} spent {spent}, more than the crew's {crew}", quoted(.agent))]
    AboveTheCrew {
        agent: String,
        spent: f64,
        crew: f64,
    },
    #[error("agent {} is tainted but the crew is not (`crewTaintedBy` is missing)", quoted(.0))]
    TaintedAlone(String),
    #[error("`{field}` {} is not a time as the state writes it (such as 2026-12-02T13:45:10Z)", quoted(.at))]
    NotATime { field: &'static str, at: String },
    #[error("`spendWindow.start` {} is not a time as the state writes it (such as 2026-12-02T00:00:00Z)", quoted(.0))]
    WindowStartNotATime(String),
    #[error("`spendWindow.start` {} is not the start of a UTC {unit}", quoted(.start))]
    WindowStartInside { start: String, unit: BudgetWindow },
    #[error("`heldSpend` names {0} held calls, more than the {MAX_HELD_SPEND} a state keeps")]
    TooManyHeld(usize),
    #[error("`heldSpend` counts {amount} for call {}, not an amount above 0", quoted(.id))]
    HeldNotAnAmount { id: String, amount: f64 },
    #[error("`heldSpend` names a call by an id that is empty, over {MAX_HELD_ID} bytes or not as ids are minted: {}", quoted(.0))]
    HeldBadId(String),
    #[error("`heldSpend` names call {} twice", quoted(.0))]
    HeldTwice(String),
    #[error("`heldSpend` counts call {} for agent {}, which has no state", quoted(.id), quoted(.agent))]
    HeldWithoutAgent { id: String, agent: String },
    #[error("`heldSpend` counts {amount} for call {}, more than agent {} spent ({spent})", quoted(.id), quoted(.agent))]
    HeldAboveSpend {
        id: String,
        agent: String,
        amount: f64,
        spent: f64,
    },
}

impl CrewState {
    /// Reads a state written by [`serde_json::to_string`] of a [`CrewState`], and nothing else:
    /// valid UTF-8, one JSON object with no duplicate key and nothing after it; every key it
    /// writes that is not optional present (`agents`, `crewSpent`, each agent's `spent`, each
    /// cause's `agent`, `tool` and `id`); no other key; every value of the type written (an
    /// object where a state or cause goes, never an array or `null`); and the sums as the state keeps them (no spend below 0, the crew's spend at
    /// least any agent's, a crew taint whenever an agent is tainted, at most [`MAX_HELD_SPEND`]
    /// held amounts, each above 0). An empty text is an error:
    /// a state is never written empty.
    pub fn from_json(bytes: &[u8]) -> Result<CrewState, StateError> {
        let text =
            std::str::from_utf8(bytes).map_err(|err| StateError::NotUtf8(err.valid_up_to()))?;
        let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        if text.is_empty() {
            return Err(StateError::Empty);
        }
        let value = strict_json::parse(text).map_err(StateError::NotJson)?;
        objects_where_states_go(&value)?;
        let state: CrewState = serde_json::from_value(value).map_err(StateError::NotAState)?;
        state.check_sums()?;
        Ok(state)
    }

    fn check_sums(&self) -> Result<(), StateError> {
        let spend = |what: String, spent: f64| {
            if spent >= 0.0 && spent.is_sign_positive() {
                Ok(())
            } else {
                Err(StateError::BelowZero { what, spent })
            }
        };
        spend("`crewSpent`".to_owned(), self.crew_spent)?;
        for (name, agent) in &self.agents {
            spend(format!("the spend of agent {}", quoted(name)), agent.spent)?;
            if agent.spent > self.crew_spent {
                return Err(StateError::AboveTheCrew {
                    agent: name.to_string(),
                    spent: agent.spent,
                    crew: self.crew_spent,
                });
            }
            if agent.tainted_by.is_some() && self.crew_tainted_by.is_none() {
                return Err(StateError::TaintedAlone(name.to_string()));
            }
            time("taintedBy.at", agent.tainted_by.as_ref())?;
        }
        time("crewTaintedBy.at", self.crew_tainted_by.as_ref())?;
        if self.held_spend.len() > MAX_HELD_SPEND {
            return Err(StateError::TooManyHeld(self.held_spend.len()));
        }
        self.check_held()?;
        if let Some(window) = &self.spend_window {
            let start = parse_seconds(&window.start)
                .ok_or_else(|| StateError::WindowStartNotATime(window.start.clone()))?;
            if window.unit.start_of(start) != start {
                return Err(StateError::WindowStartInside {
                    start: window.start.clone(),
                    unit: window.unit,
                });
            }
        }
        Ok(())
    }
}

impl CrewState {
    /// Each held call's note as [`CrewState::note_held`] writes it: a non-empty id of at most
    /// [`MAX_HELD_ID`] bytes, named once, for an agent with a state, counting an amount above 0
    /// and at most what the agent spent (the spend counts it). A note that broke these would
    /// let a retry take back from the spend what it never added.
    fn check_held(&self) -> Result<(), StateError> {
        use std::collections::{HashMap, HashSet};
        let mut ids = HashSet::with_capacity(self.held_spend.len());
        for held in &self.held_spend {
            let minted =
                |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':');
            if held.id.is_empty() || held.id.len() > MAX_HELD_ID || !held.id.bytes().all(minted) {
                return Err(StateError::HeldBadId(held.id.clone()));
            }
            if !ids.insert(held.id.as_str()) {
                return Err(StateError::HeldTwice(held.id.clone()));
            }
            if !(held.amount > 0.0 && held.amount.is_finite()) {
                return Err(StateError::HeldNotAnAmount {
                    id: held.id.clone(),
                    amount: held.amount,
                });
            }
            let Some(agent) = self.agents.get(Name::of(&held.agent)) else {
                return Err(StateError::HeldWithoutAgent {
                    id: held.id.clone(),
                    agent: held.agent.clone(),
                });
            };
            if held.amount > agent.spent {
                return Err(StateError::HeldAboveSpend {
                    id: held.id.clone(),
                    agent: held.agent.clone(),
                    amount: held.amount,
                    spent: agent.spent,
                });
            }
        }
        // Together, an agent's notes count no more than it spent (each was added to its spend;
        // a float sum may round a little above the exact one, never by a part in a billion).
        let mut noted: HashMap<&str, f64> = HashMap::new();
        for held in &self.held_spend {
            *noted.entry(held.agent.as_str()).or_default() += held.amount;
        }
        for (agent, sum) in noted {
            let spent = self
                .agents
                .get(Name::of(agent))
                .map_or(0.0, |state| state.spent);
            if sum > spent * (1.0 + 1e-9) {
                return Err(StateError::HeldAboveSpend {
                    id: "(all of the agent's notes together)".to_owned(),
                    agent: agent.to_owned(),
                    amount: sum,
                    spent,
                });
            }
        }
        Ok(())
    }
}

fn time(field: &'static str, cause: Option<&TaintCause>) -> Result<(), StateError> {
    match cause.and_then(|cause| cause.at.as_deref()) {
        Some(at) if parse_seconds(at).is_none() => Err(StateError::NotATime {
            field,
            at: at.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// Refuses an array or `null` where the state has an object: serde would read a struct from an
/// array (`[]` as a clean state) and an optional one from `null`.
fn objects_where_states_go(value: &Value) -> Result<(), StateError> {
    fn object<'a>(
        value: &'a Value,
        what: &str,
    ) -> Result<&'a serde_json::Map<String, Value>, StateError> {
        value.as_object().ok_or_else(|| StateError::NotAnObject {
            what: what.to_owned(),
            found: strict_json::type_name(value),
        })
    }
    fn cause(value: Option<&Value>, what: &str) -> Result<(), StateError> {
        let Some(value) = value else {
            return Ok(());
        };
        let cause = object(value, what)?;
        for field in ["argument", "at"] {
            match cause.get(field) {
                None | Some(Value::String(_)) => {}
                Some(other) => {
                    return Err(StateError::NotAString {
                        what: what.to_owned(),
                        field,
                        found: strict_json::type_name(other),
                    })
                }
            }
        }
        Ok(())
    }
    let state = object(value, "the state")?;
    cause(state.get("crewTaintedBy"), "`crewTaintedBy`")?;
    if let Some(window) = state.get("spendWindow") {
        object(window, "`spendWindow`")?;
    }
    if let Some(Value::Array(held)) = state.get("heldSpend") {
        for held in held {
            object(held, "each of `heldSpend`")?;
        }
    }
    if let Some(agents) = state.get("agents") {
        for (name, agent) in object(agents, "`agents`")? {
            let what = format!("agent {}", quoted(name));
            let agent = object(agent, &what)?;
            cause(agent.get("taintedBy"), &format!("{what}'s `taintedBy`"))?;
        }
    }
    Ok(())
}

/// The amount [`CrewState::record`] counts for `call`, when it is one above 0.
fn counted_amount(call: &Call) -> Option<f64> {
    let value = call.args.amount()?;
    let (amount, _) =
        amount_and_exactness(&Amount::from_json_exact(value, call.amount_text.as_deref()));
    (amount > 0.0 && amount.is_finite()).then_some(amount)
}

/// An understood amount's float, and whether the float is exactly the decimal written.
pub(crate) fn amount_and_exactness(amount: &Amount) -> (f64, bool) {
    match amount {
        Amount::Understood { value, exact, .. } => (
            *value,
            crate::amount::surely_round_trips(exact)
                || crate::amount::decimal_cmp(exact, &format!("{value}"))
                    == Some(std::cmp::Ordering::Equal),
        ),
        Amount::NotUnderstood { .. } => (0.0, true),
    }
}

/// `a + b`, and whether the float sum is exact (Knuth's two-sum: the rounding error is zero).
pub(crate) fn add_exactly(a: f64, b: f64) -> (f64, bool) {
    let sum = a + b;
    if !sum.is_finite() {
        return (sum, false);
    }
    let b_virtual = sum - a;
    let a_virtual = sum - b_virtual;
    let error = (a - a_virtual) + (b - b_virtual);
    (sum, error == 0.0)
}

/// The argument that says what a tainting read read, as its taint cause and a grant's sources
/// name it: the first of [`KEY_ARGUMENTS`] that is a string, else the call's first string
/// argument, as `KEY=TEXT`. It is an identity too (a `call` grant covers a session tainted by
/// the same sources only), so it never loses what tells two reads apart: a text over 200 bytes
/// is cut for reading but keeps the SHA-256 of the whole, and an argument that is not one of the
/// known keys (`q` of a search) carries the SHA-256 of all the call's arguments, since another
/// argument may say as much about what was read. A review's two pages alike in their first 200
/// bytes, and two searches by `q`, were one source before.
fn key_argument(call: &Call) -> Option<String> {
    let known = KEY_ARGUMENTS
        .iter()
        .find_map(|key| match call.args.get(key)? {
            Value::String(text) => Some((*key, text.as_str())),
            _ => None,
        });
    let (key, text, whole_args) = match known {
        Some((key, text)) => (key, text, false),
        None => {
            let (key, text) = call
                .args
                .map()
                .iter()
                .find_map(|(key, value)| match value {
                    Value::String(text) => Some((key.as_str(), text.as_str())),
                    _ => None,
                })?;
            (key, text, true)
        }
    };
    let digest = |bytes: &[u8]| {
        use sha2::{Digest, Sha256};
        crate::hex::encode(&Sha256::digest(bytes)[..8])
    };
    let mut argument = format!("{key}=");
    if text.len() > 200 {
        let mut cut = 200;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        argument.push_str(&text[..cut]);
        argument.push_str(&format!("… (sha256 {})", digest(text.as_bytes())));
    } else {
        argument.push_str(text);
    }
    if whole_args {
        let args = crate::rules::grant::args_digest(call.args.text())
            .unwrap_or_else(|| digest(call.args.text().as_bytes()));
        argument.push_str(&format!(" (args sha256 {})", &args[..16.min(args.len())]));
    }
    Some(argument)
}

impl ValueRecord {
    /// Takes the record into the state: how many values it gave, `None` when it gave none
    /// (no `provenance` in the policy, or a result of a tool whose output is not untrusted).
    pub fn apply(&self, state: &mut CrewState, id: &str, policy: &Policy) -> Option<usize> {
        match self {
            ValueRecord::Task(task) => {
                state
                    .provenance
                    .task(&task.agent, &task.instruction, policy)
            }
            ValueRecord::Result(result) => state.provenance.result(result, id, policy),
        }
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
