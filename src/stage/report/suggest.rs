//! `sc-report --suggest`: for each repeated hold, the narrowest remembered approval that would
//! have spared the person the repeats, checked against the whole log.
//!
//! Two streaming passes over the logs. The first ([`Suggester::event`]) joins each hold to its
//! answer (by id, in a window of [`HOLD_WINDOW_EVENTS`] events) and counts, per agent, the held
//! calls with the same arguments (their `call` grant digest) and the untrusted values held more
//! than once, in a table of at most [`CANDIDATES_KEPT`] entries (when full, the least held entry
//! makes room). A candidate becomes a suggestion when it was held at least twice, approved at
//! least once and never declined, and none of its holds was a budget's, or of a tool in the
//! policy's `neverRemember`: a `call` grant for a repeated call, else a `value` grant for a
//! repeated value, given when the person first said yes and expiring in whole hours after the
//! last repeat (no longer than the policy's `grantTtl`).
//!
//! The second pass ([`Replay`]) replays every hold of the logs with each suggested grant through
//! the decision's own last step ([`crate::rules::granting::settle`], with the grant read as the
//! gate reads the crew's grants, [`crate::rules::granting::Endorsed`]): the rules' findings are
//! the hold's as the gate recorded them (its `grantable` kinds and named values), since the log
//! keeps the calls but not the untrusted text value provenance read. A grant only turns a hold
//! into an allow: a deny stays a deny, an allow an allow, so the holds are the only verdicts
//! that can change, and every one that does is listed.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::Read;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use serde_json::{json, Map, Value};

use super::questions::{event_time, read_events, HOLD_WINDOW_EVENTS};
use super::summary::Filter;
use crate::call::Call;
use crate::record::{AnsweredBy, Approval};
use crate::rules::grant::{call_digest, Covers, GivenBy, Grant};
use crate::rules::granting::{settle, Endorsed, Granted, MAX_NAMED};
use crate::rules::policy::Policy;
use crate::sanitize::for_terminal;
use crate::verdict::{Decision, Grantable, Scope};

/// Candidates kept in the first pass.
pub(crate) const CANDIDATES_KEPT: usize = 4096;
/// The ids of changed verdicts listed per suggestion (the count is always whole).
pub(crate) const CHANGES_LISTED: usize = 10_000;
/// The most arguments (JSON text) kept to show a suggested call.
const ARGS_SHOWN: usize = 200;

/// The kinds of rule a hold can name, as the decision spells them.
const KINDS: &[&str] = &[
    "deny-list",
    "agents",
    "untrusted-source",
    "taint",
    "amount",
    "amount-spelling",
    "budget",
    "schema",
    "keys",
    "coding",
    "coding-tainted",
];

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Call {
        agent: String,
        tool: String,
        digest: String,
    },
    Value {
        agent: String,
        value: String,
    },
}

#[derive(Debug, Default)]
struct Candidate {
    tool: String,
    holds: u64,
    approved: u64,
    declined: u64,
    /// The first hold approved: when it was held, and its id.
    first_yes: Option<(SystemTime, String)>,
    last_hold: Option<SystemTime>,
    kinds: BTreeSet<String>,
    /// What tainted the session at its holds: a `call` grant covers a call only while the
    /// session's taint is among them.
    sources: BTreeSet<String>,
    args: Option<String>,
    /// Why it may not be suggested: a budget, a `neverRemember` tool, a scope not offered.
    barred: bool,
}

/// A suggested grant, with what replaying it over the logs changed.
#[derive(Debug, Clone)]
pub struct Suggestion {
    /// The first approved hold was held then: the grant covers the holds after it.
    pub from: SystemTime,
    pub grant: Grant,
    pub expires_in: Duration,
    /// The holds of the repeat, and the arguments of its call (for a `call` grant).
    pub holds: u64,
    pub args: Option<String>,
    /// Questions the grant would have spared the person.
    pub removes: u64,
    /// Every past call whose verdict the grant changes (hold → allow): the first
    /// [`CHANGES_LISTED`] ids, and how many in all.
    pub changes: Vec<String>,
    pub changed: u64,
}

struct Waiting {
    keys: Vec<Key>,
    seen: u64,
    held_at: Option<SystemTime>,
}

/// The first pass: the repeated holds and their answers.
pub struct Suggester<'p> {
    policy: &'p Policy,
    filter: Filter,
    candidates: HashMap<Key, Candidate>,
    waiting: HashMap<String, Waiting>,
    order: VecDeque<(String, u64)>,
    events: u64,
}

/// A gate hold as replayed: its id, time, call and what it offered.
struct Held {
    id: String,
    ts: Option<SystemTime>,
    call: Call,
    grantable: Grantable,
    reasons: Vec<String>,
}

fn held(event: &Map<String, Value>) -> Option<Held> {
    if event.get("stage").and_then(Value::as_str) != Some("gate")
        || event.get("kind").is_some()
        || event.get("decision").and_then(Value::as_str) != Some("hold")
    {
        return None;
    }
    Some(Held {
        id: event.get("id")?.as_str()?.to_owned(),
        ts: event_time(event, "ts"),
        call: Call::from_value(event.get("call")?).ok()?,
        grantable: serde_json::from_value(event.get("grantable")?.clone()).ok()?,
        reasons: event
            .get("reasons")
            .and_then(Value::as_array)
            .map(|reasons| {
                reasons
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    })
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

fn whole_seconds(time: SystemTime) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

impl<'p> Suggester<'p> {
    pub fn new(policy: &'p Policy, filter: Filter) -> Self {
        Suggester {
            policy,
            filter,
            candidates: HashMap::new(),
            waiting: HashMap::new(),
            order: VecDeque::new(),
            events: 0,
        }
    }

    pub fn read_log(&mut self, name: &str, log: impl Read) -> Result<()> {
        read_events(name, log, |event| self.event(event))
    }

    fn admits(&self, event: &Map<String, Value>) -> bool {
        !self.filter.has_time_window()
            || event_time(event, "ts").is_some_and(|ts| self.filter.admits_time(ts))
    }

    fn candidate(&mut self, key: Key) -> &mut Candidate {
        if !self.candidates.contains_key(&key) && self.candidates.len() >= CANDIDATES_KEPT {
            let least = self
                .candidates
                .iter()
                .min_by_key(|(_, c)| c.holds)
                .map(|(key, _)| key.clone())
                .expect("the table is full");
            self.candidates.remove(&least);
        }
        self.candidates.entry(key).or_default()
    }

    pub fn event(&mut self, event: &Map<String, Value>) {
        if !self.admits(event) {
            return;
        }
        self.events += 1;
        while let Some((id, seen)) = self.order.front() {
            if self.events - seen < HOLD_WINDOW_EVENTS {
                break;
            }
            if self.waiting.get(id).is_some_and(|w| w.seen == *seen) {
                self.waiting.remove(id);
            }
            self.order.pop_front();
        }
        if let Some(hold) = held(event) {
            if !self.filter.admits_agent(&hold.call.agent) {
                return;
            }
            let kinds = &hold.grantable.kinds;
            let barred = kinds.iter().any(|k| k == "budget")
                || self.policy.never_remembers(&hold.call)
                || kinds.is_empty();
            let mut keys = Vec::new();
            if let Some(digest) = call_digest(&hold.call) {
                keys.push(Key::Call {
                    agent: hold.call.agent.clone(),
                    tool: hold.call.tool.clone(),
                    digest,
                });
            }
            if hold.grantable.values.len() < MAX_NAMED {
                for value in &hold.grantable.values {
                    keys.push(Key::Value {
                        agent: hold.call.agent.clone(),
                        value: value.clone(),
                    });
                }
            }
            for key in &keys {
                let offered = match key {
                    Key::Call { .. } => hold.grantable.offers(Scope::Call),
                    Key::Value { .. } => hold.grantable.offers(Scope::Value),
                };
                let candidate = self.candidate(key.clone());
                candidate.holds += 1;
                candidate.tool.clone_from(&hold.call.tool);
                candidate.last_hold = hold.ts.or(candidate.last_hold);
                candidate.kinds.extend(kinds.iter().cloned());
                candidate
                    .sources
                    .extend(hold.grantable.sources.iter().cloned());
                candidate.barred |= barred || !offered;
                if candidate.args.is_none() {
                    candidate.args = Some(cut(hold.call.args.text()));
                }
            }
            self.waiting.insert(
                hold.id.clone(),
                Waiting {
                    keys,
                    seen: self.events,
                    held_at: hold.ts,
                },
            );
            self.order.push_back((hold.id, self.events));
            return;
        }
        if event.get("stage").and_then(Value::as_str) != Some("approve") {
            return;
        }
        let Some(id) = event.get("id").and_then(Value::as_str) else {
            return;
        };
        let Some(approval) = event
            .get("approval")
            .and_then(|a| serde_json::from_value::<Approval>(a.clone()).ok())
        else {
            return;
        };
        let Some(waiting) = self.waiting.remove(id) else {
            return;
        };
        if approval.by == AnsweredBy::None {
            return;
        }
        for key in waiting.keys {
            let Some(candidate) = self.candidates.get_mut(&key) else {
                continue;
            };
            if approval.approved {
                candidate.approved += 1;
                // The first hold approved: from then on, the grant would have been there.
                if let Some(held_at) = waiting.held_at {
                    if candidate
                        .first_yes
                        .as_ref()
                        .is_none_or(|(at, _)| held_at < *at)
                    {
                        candidate.first_yes = Some((held_at, id.to_owned()));
                    }
                }
            } else {
                candidate.declined += 1;
            }
        }
    }

    /// The suggestions of the first pass, most held first: a `call` grant for each repeated call,
    /// then a `value` grant for each repeated value.
    pub fn finish(self) -> Vec<Suggestion> {
        let mut found: Vec<(Key, Candidate)> = self
            .candidates
            .into_iter()
            .filter(|(_, c)| c.holds >= 2 && c.approved >= 1 && c.declined == 0 && !c.barred)
            .filter(|(_, c)| match (&c.first_yes, c.last_hold) {
                (Some((yes, _)), Some(last)) => last > *yes,
                _ => false,
            })
            .collect();
        found.sort_by(|(ka, a), (kb, b)| {
            let call_first = |k: &Key| matches!(k, Key::Value { .. });
            call_first(ka)
                .cmp(&call_first(kb))
                .then_with(|| b.holds.cmp(&a.holds))
                .then_with(|| format!("{ka:?}").cmp(&format!("{kb:?}")))
        });
        found
            .into_iter()
            .enumerate()
            .map(|(n, (key, candidate))| {
                let (from, approval) = candidate.first_yes.expect("filtered");
                let at = whole_seconds(from);
                let last = candidate.last_hold.expect("filtered");
                let span = last.duration_since(at).unwrap_or_default().as_secs();
                let mut expires_in = Duration::from_secs((span / 3600 + 1) * 3600);
                if let Some(ttl) = self.policy.grant_ttl() {
                    expires_in = expires_in.min(ttl);
                }
                let (agent, tool, covers, args) = match key {
                    Key::Call {
                        agent,
                        tool,
                        digest,
                    } => (
                        agent,
                        tool,
                        Covers::Call {
                            digest,
                            kinds: candidate.kinds.iter().cloned().collect(),
                            sources: candidate.sources.iter().cloned().collect(),
                        },
                        candidate.args,
                    ),
                    Key::Value { agent, value } => (
                        agent,
                        candidate.tool,
                        Covers::Value {
                            values: vec![value],
                        },
                        None,
                    ),
                };
                Suggestion {
                    from,
                    grant: Grant {
                        id: format!("suggestion-{}", n + 1),
                        crew: String::new(),
                        agent,
                        tool,
                        covers,
                        by: GivenBy::Answers,
                        at,
                        expires_at: at + expires_in,
                        approval,
                    },
                    expires_in,
                    holds: candidate.holds,
                    args,
                    removes: 0,
                    changes: Vec::new(),
                    changed: 0,
                }
            })
            .collect()
    }
}

/// Whether a hold, as the gate recorded it, would have been allowed with `grant` live at `now`:
/// the decision's last step run again with the hold's findings.
pub(crate) fn allowed_with(
    call: &Call,
    grantable: &Grantable,
    reasons: &[String],
    policy: &Policy,
    grant: &Grant,
    now: SystemTime,
) -> bool {
    if now < grant.at {
        return false;
    }
    let grants = std::slice::from_ref(grant);
    let endorsed = Endorsed::new(
        call,
        policy,
        grantable.sources.clone(),
        Some(Granted { grants, now }),
    );
    // Value provenance skips the values a `value` grant endorses: when it endorses every value
    // the hold named (all of them: fewer than the most a hold names), the `taint` finding that
    // named them is gone.
    let values = &grantable.values;
    let values_endorsed = !values.is_empty()
        && values.len() < MAX_NAMED
        && values.iter().all(|value| endorsed.skips(value));
    let mut findings = Vec::new();
    for (n, kind) in grantable.kinds.iter().enumerate() {
        let Some(kind) = KINDS.iter().find(|known| **known == kind) else {
            // A kind this build does not know: not replayed, so not changed.
            return false;
        };
        if *kind == "taint" && values_endorsed {
            continue;
        }
        let reason = reasons.get(n).cloned().unwrap_or_default();
        findings.push((*kind, Decision::Hold, reason));
    }
    settle(call, policy, &endorsed, findings, String::new).decision == Decision::Allow
}

/// The second pass: every hold replayed with each suggestion.
pub struct Replay<'p> {
    policy: &'p Policy,
    filter: Filter,
    suggestions: Vec<Suggestion>,
    /// The suggestions by the digest a `call` grant covers, and by each value a `value` grant
    /// endorses: only these can change a hold (a call grant covers its digest only; a value
    /// grant lifts a hold only when it endorses every value the hold named).
    by_digest: HashMap<String, Vec<usize>>,
    by_value: HashMap<String, Vec<usize>>,
    waiting: HashMap<String, Vec<usize>>,
    order: VecDeque<(String, u64)>,
    events: u64,
}

impl<'p> Replay<'p> {
    pub fn new(policy: &'p Policy, filter: Filter, suggestions: Vec<Suggestion>) -> Self {
        let mut by_digest: HashMap<String, Vec<usize>> = HashMap::new();
        let mut by_value: HashMap<String, Vec<usize>> = HashMap::new();
        for (n, suggestion) in suggestions.iter().enumerate() {
            match &suggestion.grant.covers {
                Covers::Call { digest, .. } => by_digest.entry(digest.clone()).or_default().push(n),
                Covers::Value { values } => {
                    for value in values {
                        by_value.entry(value.clone()).or_default().push(n);
                    }
                }
            }
        }
        Replay {
            policy,
            filter,
            suggestions,
            by_digest,
            by_value,
            waiting: HashMap::new(),
            order: VecDeque::new(),
            events: 0,
        }
    }

    pub fn read_log(&mut self, name: &str, log: impl Read) -> Result<()> {
        read_events(name, log, |event| self.event(event))
    }

    pub fn event(&mut self, event: &Map<String, Value>) {
        if self.filter.has_time_window()
            && !event_time(event, "ts").is_some_and(|ts| self.filter.admits_time(ts))
        {
            return;
        }
        self.events += 1;
        while let Some((id, seen)) = self.order.front() {
            if self.events - seen < HOLD_WINDOW_EVENTS {
                break;
            }
            self.waiting.remove(id);
            self.order.pop_front();
        }
        if let Some(hold) = held(event) {
            let (Some(now), true) = (hold.ts, self.filter.admits_agent(&hold.call.agent)) else {
                return;
            };
            let mut changed = Vec::new();
            let digest = call_digest(&hold.call);
            let mut which: Vec<usize> = digest
                .and_then(|digest| self.by_digest.get(&digest))
                .into_iter()
                .flatten()
                .chain(
                    hold.grantable
                        .values
                        .iter()
                        .filter_map(|value| self.by_value.get(value))
                        .flatten(),
                )
                .copied()
                .collect();
            which.sort_unstable();
            which.dedup();
            for n in which {
                let suggestion = &mut self.suggestions[n];
                if now > suggestion.from
                    && allowed_with(
                        &hold.call,
                        &hold.grantable,
                        &hold.reasons,
                        self.policy,
                        &suggestion.grant,
                        now,
                    )
                {
                    suggestion.changed += 1;
                    if suggestion.changes.len() < CHANGES_LISTED {
                        suggestion.changes.push(hold.id.clone());
                    }
                    changed.push(n);
                }
            }
            if !changed.is_empty() {
                self.waiting.insert(hold.id.clone(), changed);
                self.order.push_back((hold.id, self.events));
            }
            return;
        }
        if event.get("stage").and_then(Value::as_str) != Some("approve") {
            return;
        }
        let Some(id) = event.get("id").and_then(Value::as_str) else {
            return;
        };
        let asked = event
            .get("approval")
            .and_then(|a| serde_json::from_value::<Approval>(a.clone()).ok())
            .is_some_and(|approval| approval.by != AnsweredBy::None);
        if let Some(changed) = self.waiting.remove(id) {
            if asked {
                for n in changed {
                    self.suggestions[n].removes += 1;
                }
            }
        }
    }

    /// The suggestions that change anything, most questions removed first.
    pub fn finish(self) -> Vec<Suggestion> {
        let mut suggestions: Vec<Suggestion> = self
            .suggestions
            .into_iter()
            .filter(|s| s.changed > 0)
            .collect();
        suggestions.sort_by(|a, b| b.removes.cmp(&a.removes).then(a.grant.id.cmp(&b.grant.id)));
        suggestions
    }
}

fn duration_words(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

/// What a suggestion is, as JSON (`sc-report --suggest --format json`).
pub fn suggestion_json(suggestion: &Suggestion) -> Value {
    let grant = &suggestion.grant;
    let scope = grant.covers.scope();
    let mut policy = Map::new();
    policy.insert("scope".into(), scope.into());
    policy.insert("agent".into(), grant.agent.clone().into());
    policy.insert("tool".into(), grant.tool.clone().into());
    match &grant.covers {
        Covers::Call {
            digest,
            kinds,
            sources,
        } => {
            policy.insert("digest".into(), digest.clone().into());
            policy.insert("kinds".into(), kinds.clone().into());
            policy.insert("sources".into(), sources.clone().into());
            policy.insert("args".into(), suggestion.args.clone().into());
        }
        Covers::Value { values } => {
            policy.insert("values".into(), values.clone().into());
        }
    }
    policy.insert(
        "expiresIn".into(),
        duration_words(suggestion.expires_in).into(),
    );
    policy.insert("answer".into(), format!("yes {scope}").into());
    json!({
        "kind": "grant",
        "agent": grant.agent,
        "tool": grant.tool,
        "scope": scope,
        "expiresIn": duration_words(suggestion.expires_in),
        "expiresInSeconds": suggestion.expires_in.as_secs(),
        "policy": Value::Object(policy),
        "holds": suggestion.holds,
        "removes": suggestion.removes,
        "changed": suggestion.changed,
        "changes": suggestion.changes,
    })
}

/// The JSON report: `{"suggestions": [...]}`.
pub fn suggestions_json(suggestions: &[Suggestion]) -> Value {
    json!({"suggestions": suggestions.iter().map(suggestion_json).collect::<Vec<_>>()})
}

/// The text report.
pub fn suggestions_text(suggestions: &[Suggestion]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if suggestions.is_empty() {
        out.push_str(
            "No suggestion: no held call or value came back with only yes for answers \
             (a deny, a budget, a neverRemember tool or a declined hold is never suggested).\n",
        );
        return out;
    }
    let _ = writeln!(
        out,
        "Suggestions: remembered approvals that would have removed repeated questions,\n\
         each replayed over every hold of the logs (docs/audit.md)\n"
    );
    for (n, s) in suggestions.iter().enumerate() {
        let grant = &s.grant;
        let what = match &grant.covers {
            Covers::Call { .. } => format!(
                "a call grant: {} → {} {}",
                for_terminal(&grant.agent),
                for_terminal(&grant.tool),
                for_terminal(s.args.as_deref().unwrap_or("?"))
            ),
            Covers::Value { values } => format!(
                "a value grant: {} may use {} (held on {})",
                for_terminal(&grant.agent),
                values
                    .iter()
                    .map(|v| format!("{:?}", for_terminal(v)))
                    .collect::<Vec<_>>()
                    .join(", "),
                for_terminal(&grant.tool)
            ),
        };
        let _ = writeln!(
            out,
            "{}. {what}, expiring in {}",
            n + 1,
            duration_words(s.expires_in)
        );
        let _ = writeln!(
            out,
            "   give it: answer `yes {}` when it is next asked (sc-approve --grant-ttl {})",
            grant.covers.scope(),
            duration_words(s.expires_in)
        );
        let listed = s
            .changes
            .iter()
            .map(|id| for_terminal(id).into_owned())
            .collect::<Vec<_>>()
            .join(", ");
        let more = s.changed - s.changes.len() as u64;
        let _ = writeln!(
            out,
            "   would have removed {} of {} questions; changes {} past verdicts (hold → allow): {listed}{}",
            s.removes,
            s.holds,
            s.changed,
            if more > 0 { format!(" … and {more} more") } else { String::new() }
        );
    }
    out
}
