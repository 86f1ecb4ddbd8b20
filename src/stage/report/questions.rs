//! `sc-report --questions`: what people were asked, per agent and tool, read from the audit logs
//! in one streaming pass ([`QuestionCounter`]).
//!
//! A hold is a gate event whose decision is `hold`, or an `allow` that a grant settled (a hold a
//! remembered approval spared the person). A question is an `approve` event whose approval was
//! put to someone (`by` is not `none`): the terminal, the web page or the crew's inbox, the MCP
//! client's elicitation, Claude Code, or the answers file. The approve event carries the hold's
//! id, so the two are joined by id, in a window of [`HOLD_WINDOW_EVENTS`] events as the rest of
//! the report is. The time to answer runs from when the question was put (the approve event's
//! `askedAt`, written since issue 33; for older logs the hold's gate event, which is earlier when
//! several holds wait their turn) to the approve event.
//!
//! Memory is bounded: per agent and tool, answer times are kept exactly for the first
//! [`EXACT_TIMES`] answers (median and 90th percentile by nearest rank), past that they are
//! read from a histogram of 5 % wide buckets; the repeated held calls and values are counted
//! in [`TopCounts`] of [`TOP_KEPT`] entries (the space-saving count: a count is exact unless the
//! table was full when its first hold came, and then counts the holds since); the active hours are a set of hour numbers per
//! agent (at most one entry per hour of the logs' span).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde_json::Value;

use super::event::MAX_EVENT_BYTES;
use super::question_rows::{QuestionRow, Questions, Repeat};
use super::summary::Filter;
use crate::record::{AnsweredBy, Approval};
use crate::verdict::Grantable;

/// How many events after a hold its answer is joined to it.
pub(crate) const HOLD_WINDOW_EVENTS: u64 = 100_000;
/// Answer times kept exactly per agent and tool.
pub(crate) const EXACT_TIMES: usize = 1024;
/// Entries of each table of repeated calls or values.
pub(crate) const TOP_KEPT: usize = 64;
/// Repeated calls and values shown per agent and tool.
pub(crate) const REPEATS_SHOWN: usize = 5;
/// The most of a repeated call's arguments (JSON text) kept to show it.
const ARGS_SHOWN: usize = 200;
/// Past this many agent-and-tool rows, further pairs are counted under `(others)`.
const MAX_ROWS: usize = 10_000;

/// The channels, as the report names them.
pub(crate) fn channel_name(by: AnsweredBy, channel: Option<&str>) -> &'static str {
    match (by, channel) {
        (AnsweredBy::Web, Some("inbox")) => "inbox",
        (AnsweredBy::Tty, _) => "terminal",
        (AnsweredBy::Web, _) => "web",
        (AnsweredBy::Answers, _) => "answers file",
        (AnsweredBy::Elicitation, _) => "elicitation",
        (AnsweredBy::ClaudeCode, _) => "claude-code",
        (AnsweredBy::None, _) => "none",
    }
}

/// One audit event, read for the questions and suggestions (`None` for a line that is not one).
pub(crate) fn read_events(
    name: &str,
    log: impl Read,
    mut each: impl FnMut(&serde_json::Map<String, Value>),
) -> Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, log);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_EVENT_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("cannot read {name}"))?;
        if read == 0 {
            return Ok(());
        }
        if line.last() != Some(&b'\n') && line.len() > MAX_EVENT_BYTES {
            // Too long to be an event: skip to the end of the line (the summary reports it).
            let mut rest = Vec::new();
            loop {
                rest.clear();
                let n = (&mut reader)
                    .take(64 * 1024)
                    .read_until(b'\n', &mut rest)
                    .with_context(|| format!("cannot read {name}"))?;
                if n == 0 || rest.last() == Some(&b'\n') {
                    break;
                }
            }
            continue;
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            continue;
        };
        if let Ok(Value::Object(event)) = crate::strict_json::parse(text.trim_end()) {
            each(&event);
        }
    }
}

/// An event's time.
pub(crate) fn event_time(event: &serde_json::Map<String, Value>, key: &str) -> Option<SystemTime> {
    event
        .get(key)
        .and_then(Value::as_str)
        .and_then(|ts| humantime::parse_rfc3339(ts).ok())
}

/// Counts of keys, at most [`TOP_KEPT`] of them: when full, a new key takes the place of the
/// least counted one and starts from its count (the space-saving count), so a key that repeats
/// is never lost to keys that come once. What a key inherited is kept apart: a key is shown with
/// the holds counted since it came, never with another key's.
#[derive(Debug, Default, Clone)]
pub(crate) struct TopCounts {
    entries: Vec<Counted>,
}

#[derive(Debug, Clone)]
pub(crate) struct Counted {
    pub(crate) key: String,
    pub(crate) count: u64,
    /// The count it inherited from the key it replaced.
    inherited: u64,
    /// The arguments of the first call counted (cut), for a call.
    pub(crate) example: Option<String>,
}

impl TopCounts {
    fn add(&mut self, key: &str, example: impl FnOnce() -> Option<String>) {
        if let Some(entry) = self.entries.iter_mut().find(|entry| entry.key == key) {
            entry.count += 1;
            return;
        }
        let counted = Counted {
            key: key.to_owned(),
            count: 1,
            inherited: 0,
            example: example(),
        };
        if self.entries.len() < TOP_KEPT {
            self.entries.push(counted);
            return;
        }
        let least = self
            .entries
            .iter_mut()
            .min_by_key(|entry| entry.count)
            .expect("the table is full");
        *least = Counted {
            count: least.count + 1,
            inherited: least.count,
            ..counted
        };
    }

    /// The keys counted more than once since they came, with that count, most first (then by
    /// key), at most `n`.
    pub(crate) fn repeated(&self, n: usize) -> Vec<Counted> {
        let mut repeated: Vec<Counted> = self
            .entries
            .iter()
            .filter(|entry| entry.count - entry.inherited > 1)
            .map(|entry| Counted {
                count: entry.count - entry.inherited,
                inherited: 0,
                ..entry.clone()
            })
            .collect();
        repeated.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        repeated.truncate(n);
        repeated
    }
}

/// Answer times: exact for the first [`EXACT_TIMES`], then a histogram.
#[derive(Debug, Default)]
struct Times {
    exact: Vec<f64>,
    buckets: BTreeMap<u32, u64>,
    count: u64,
    under_2s: u64,
}

/// The histogram's buckets: 10 ms, then 5 % wider each.
fn bucket(seconds: f64) -> u32 {
    if seconds < 0.01 {
        0
    } else {
        1 + ((seconds / 0.01).ln() / 1.05f64.ln()).floor() as u32
    }
}

fn bucket_middle(bucket: u32) -> f64 {
    if bucket == 0 {
        0.005
    } else {
        0.01 * 1.05f64.powf(f64::from(bucket - 1) + 0.5)
    }
}

impl Times {
    fn add(&mut self, seconds: f64) {
        let seconds = seconds.max(0.0);
        self.count += 1;
        if seconds < 2.0 {
            self.under_2s += 1;
        }
        if self.exact.len() < EXACT_TIMES {
            self.exact.push(seconds);
        }
        *self.buckets.entry(bucket(seconds)).or_default() += 1;
    }

    /// The `q` quantile by nearest rank: exact while every time is kept, else the middle of the
    /// histogram bucket it falls in (within 5 %).
    fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).max(1);
        if self.count as usize <= self.exact.len() {
            let mut sorted = self.exact.clone();
            sorted.sort_by(f64::total_cmp);
            return Some(sorted[rank as usize - 1]);
        }
        let mut seen = 0;
        for (bucket, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return Some(bucket_middle(*bucket));
            }
        }
        None
    }
}

/// What is counted for one agent and tool.
#[derive(Debug, Default)]
struct Group {
    rules: BTreeMap<String, u64>,
    holds: u64,
    by_grant: u64,
    asked: u64,
    approved: u64,
    channels: BTreeMap<&'static str, u64>,
    times: Times,
    calls: TopCounts,
    values: TopCounts,
}

/// A hold waiting for its answer.
struct Waiting {
    group: (String, String),
    /// The gate event's time.
    held_at: Option<SystemTime>,
    seen: u64,
}

/// Reads audit events for the questions report.
pub struct QuestionCounter {
    filter: Filter,
    groups: HashMap<(String, String), Group>,
    hours: HashMap<String, BTreeSet<u64>>,
    waiting: HashMap<String, Waiting>,
    order: VecDeque<(String, u64)>,
    events: u64,
}

impl QuestionCounter {
    pub fn new(filter: Filter) -> Self {
        QuestionCounter {
            filter,
            groups: HashMap::new(),
            hours: HashMap::new(),
            waiting: HashMap::new(),
            order: VecDeque::new(),
            events: 0,
        }
    }

    /// Reads one log.
    pub fn read_log(&mut self, name: &str, log: impl Read) -> Result<()> {
        read_events(name, log, |event| self.event(event))
    }

    fn group(&mut self, agent: &str, tool: &str) -> &mut Group {
        let mut key = (agent.to_owned(), tool.to_owned());
        if !self.groups.contains_key(&key) && self.groups.len() >= MAX_ROWS {
            key = ("(others)".to_owned(), "(others)".to_owned());
        }
        self.groups.entry(key).or_default()
    }

    /// Counts one event.
    pub fn event(&mut self, event: &serde_json::Map<String, Value>) {
        let ts = event_time(event, "ts");
        if self.filter.has_time_window() && !ts.is_some_and(|ts| self.filter.admits_time(ts)) {
            return;
        }
        self.events += 1;
        self.expire();
        let text = |key: &str| event.get(key).and_then(Value::as_str);
        let (Some(id), Some(stage)) = (text("id"), text("stage")) else {
            return;
        };
        match stage {
            "gate" if event.get("kind").is_none() => {
                let Some(call) = event.get("call") else {
                    return;
                };
                let name = |key| call.get(key).and_then(Value::as_str).unwrap_or("?");
                let (agent, tool) = (name("agent"), name("tool"));
                if !self.filter.admits_agent(agent) {
                    return;
                }
                if let Some(ts) = ts {
                    let hour = ts
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs() / 3600);
                    self.hours.entry(agent.to_owned()).or_default().insert(hour);
                }
                let grantable: Option<Grantable> = event
                    .get("grantable")
                    .and_then(|g| serde_json::from_value(g.clone()).ok());
                match text("decision") {
                    Some("hold") => {
                        let digest = crate::call::Call::from_value(call)
                            .ok()
                            .and_then(|call| crate::rules::grant::call_digest(&call));
                        let group = self.group(agent, tool);
                        group.holds += 1;
                        let rule = grantable
                            .as_ref()
                            .filter(|g| !g.kinds.is_empty())
                            .map_or_else(|| "-".to_owned(), |g| g.kinds.join("+"));
                        *group.rules.entry(rule).or_default() += 1;
                        if let Some(digest) = &digest {
                            group.calls.add(digest, || {
                                call.get("args").map(|args| cut(&args.to_string()))
                            });
                        }
                        for value in grantable.iter().flat_map(|g| &g.values) {
                            group.values.add(value, || None);
                        }
                        let group = (agent.to_owned(), tool.to_owned());
                        self.waiting.insert(
                            id.to_owned(),
                            Waiting {
                                group,
                                held_at: ts,
                                seen: self.events,
                            },
                        );
                        self.order.push_back((id.to_owned(), self.events));
                    }
                    Some("allow") if has_grants(event) => {
                        let group = self.group(agent, tool);
                        group.holds += 1;
                        group.by_grant += 1;
                    }
                    _ => {}
                }
            }
            "approve" => {
                let Some(approval) = event
                    .get("approval")
                    .and_then(|a| serde_json::from_value::<Approval>(a.clone()).ok())
                else {
                    return;
                };
                let waiting = self.waiting.remove(id);
                let (agent, tool) = match &waiting {
                    Some(waiting) => waiting.group.clone(),
                    None => (
                        text("agent").unwrap_or("?").to_owned(),
                        text("tool").unwrap_or("?").to_owned(),
                    ),
                };
                if !self.filter.admits_agent(&agent) || approval.by == AnsweredBy::None {
                    return;
                }
                let asked_at = event_time(event, "askedAt")
                    .or_else(|| waiting.as_ref().and_then(|w| w.held_at));
                let group = self.group(&agent, &tool);
                group.asked += 1;
                if approval.approved {
                    group.approved += 1;
                }
                *group
                    .channels
                    .entry(channel_name(approval.by, text("channel")))
                    .or_default() += 1;
                if let (Some(asked), Some(answered), true) =
                    (asked_at, ts, approval.answer.is_some())
                {
                    let took = answered
                        .duration_since(asked)
                        .unwrap_or(Duration::ZERO)
                        .as_secs_f64();
                    group.times.add(took);
                }
            }
            _ => {}
        }
    }

    /// Forgets the holds that have waited the whole window.
    fn expire(&mut self) {
        while let Some((id, seen)) = self.order.front() {
            if self.events - seen < HOLD_WINDOW_EVENTS {
                break;
            }
            if self.waiting.get(id).is_some_and(|w| w.seen == *seen) {
                self.waiting.remove(id);
            }
            self.order.pop_front();
        }
    }

    pub fn finish(self) -> Questions {
        let mut rows: Vec<QuestionRow> = self
            .groups
            .into_iter()
            .map(|((agent, tool), group)| {
                let repeats = |counts: &TopCounts| {
                    counts
                        .repeated(REPEATS_SHOWN)
                        .into_iter()
                        .map(|c| Repeat {
                            key: c.key,
                            holds: c.count,
                            args: c.example,
                        })
                        .collect()
                };
                QuestionRow {
                    active_hours: self.hours.get(&agent).map_or(0, |h| h.len() as u64),
                    rules: group.rules.clone(),
                    holds: group.holds,
                    settled_by_grant: group.by_grant,
                    asked: group.asked,
                    approved: group.approved,
                    answered: group.times.count,
                    median_seconds: group.times.quantile(0.5),
                    p90_seconds: group.times.quantile(0.9),
                    under_2s: group.times.under_2s,
                    by_channel: group
                        .channels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), *v))
                        .collect(),
                    repeated_calls: repeats(&group.calls),
                    repeated_values: repeats(&group.values),
                    agent,
                    tool,
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.asked
                .cmp(&a.asked)
                .then_with(|| b.holds.cmp(&a.holds))
                .then_with(|| (&a.agent, &a.tool).cmp(&(&b.agent, &b.tool)))
        });
        Questions { rows }
    }
}

fn has_grants(event: &serde_json::Map<String, Value>) -> bool {
    match event.get("grants") {
        Some(Value::Array(grants)) => !grants.is_empty(),
        _ => event
            .get("reasons")
            .and_then(Value::as_array)
            .is_some_and(|reasons| {
                reasons
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|reason| reason.starts_with(super::event::GRANT_REASON))
            }),
    }
}

fn cut(text: &str) -> String {
    if text.len() <= ARGS_SHOWN {
        return text.to_owned();
    }
    let mut end = ARGS_SHOWN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
#[path = "questions_tests.rs"]
mod tests;
