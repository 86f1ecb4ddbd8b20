//! Per-agent state across a stream: taint and spend. An explicit, serialisable value that the
//! decision reads ([`crate::decision::evaluate_with_state`]) and that is updated after each
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
//! The state is also a file (sc-hook keeps one per session), and [`CrewState::from_json`] reads
//! it back only in the exact shape [`CrewState`] writes: anything else is an error, never a
//! fresh start.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::policy::{BudgetScope, Policy, TaintScope};
use super::verdict::{Decision, Judgement};
use crate::amount::Amount;
use crate::call::Call;
use crate::sanitize::{for_terminal, quoted};
use crate::strict_json;

/// The argument keys that best name what a tool read, in order of preference.
const KEY_ARGUMENTS: &[&str] = &["url", "uri", "path", "file", "query", "from", "id", "to"];

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
    /// [`TaintCause::describe`], written once: a tainted agent's every sensitive call names it.
    #[serde(skip)]
    description: OnceLock<String>,
}

impl PartialEq for TaintCause {
    fn eq(&self, other: &TaintCause) -> bool {
        (&self.agent, &self.tool, &self.id, &self.argument)
            == (&other.agent, &other.tool, &other.id, &other.argument)
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
            description: OnceLock::new(),
        }
    }

    /// How reasons name the cause: `fetch_page (id 1a2b-3, url=https://…) by helper`.
    pub fn describe(&self) -> &str {
        self.description.get_or_init(|| {
            let argument = self
                .argument
                .as_ref()
                .map(|a| format!(", {a}"))
                .unwrap_or_default();
            format!(
                "{} (id {}{}) by {}",
                quoted(&self.tool),
                quoted(&self.id),
                for_terminal(&argument),
                quoted(&self.agent)
            )
        })
    }
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

/// The crew's state across a stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrewState {
    /// Each agent's state, by its name.
    pub agents: BTreeMap<String, AgentState>,
    /// The first taint of any agent, for `taintScope: "crew"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crew_tainted_by: Option<TaintCause>,
    /// Every agent's amounts together, for `budgetScope: "crew"`.
    pub crew_spent: f64,
    /// Whether `crew_spent` may differ from the exact decimal sum (as [`AgentState::inexact`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub crew_inexact: bool,
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
    pub fn spent_in_scope(&self, agent: &str, policy: &Policy) -> (f64, bool) {
        match policy.budget_scope() {
            BudgetScope::Agent => self
                .agent(agent)
                .map_or((0.0, false), |a| (a.spent, a.inexact)),
            BudgetScope::Crew => (self.crew_spent, self.crew_inexact),
        }
    }

    pub fn agent(&self, agent: &str) -> Option<&AgentState> {
        self.agents.get(agent)
    }

    /// Updates the state after a call was decided. Denied calls change nothing.
    pub fn record(&mut self, call: &Call, id: &str, judgement: &Judgement, policy: &Policy) {
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
        if !self.agents.contains_key(&call.agent) {
            self.agents
                .insert(call.agent.clone(), AgentState::default());
        }
        let agent = self.agents.get_mut(&call.agent).expect("inserted above");
        let (sum, sum_exact) = add_exactly(agent.spent, amount);
        agent.inexact |= !amount_exact || !sum_exact;
        agent.spent = sum.min(f64::MAX);
        // The first taint is the one kept: a cause is only built when it will be.
        let untrusted_output = policy.has_untrusted_output(&call.tool);
        if untrusted_output && (agent.tainted_by.is_none() || self.crew_tainted_by.is_none()) {
            let taint = TaintCause::new(
                call.agent.clone(),
                call.tool.clone(),
                id.to_owned(),
                key_argument(call),
            );
            agent.tainted_by.get_or_insert_with(|| taint.clone());
            self.crew_tainted_by.get_or_insert(taint);
        }
    }
}

impl CrewState {
    /// Reads a state written by [`serde_json::to_string`] of a [`CrewState`], and nothing else:
    /// valid UTF-8, one JSON object with no duplicate key and nothing after it; every key it
    /// writes that is not optional present (`agents`, `crewSpent`, each agent's `spent`, each
    /// cause's `agent`, `tool` and `id`); no other key; every value of the type written (an
    /// object where a state or cause goes, never an array or `null`); and the sums as the state keeps them (no spend below 0, the crew's spend at
    /// least any agent's, a crew taint whenever an agent is tainted). An empty text is an error:
    /// a state is never written empty.
    pub fn from_json(bytes: &[u8]) -> Result<CrewState, String> {
        let text = std::str::from_utf8(bytes)
            .map_err(|err| format!("not valid UTF-8 (bad byte at offset {})", err.valid_up_to()))?;
        let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        if text.is_empty() {
            return Err("the file is empty, and a state is never written empty".to_owned());
        }
        let value = strict_json::parse(text).map_err(|err| format!("not valid JSON: {err}"))?;
        objects_where_states_go(&value)?;
        let state: CrewState =
            serde_json::from_value(value).map_err(|err| format!("not a crew state: {err}"))?;
        state.check_sums()?;
        Ok(state)
    }

    fn check_sums(&self) -> Result<(), String> {
        let spend = |what: &str, spent: f64| {
            if spent >= 0.0 && spent.is_sign_positive() {
                Ok(())
            } else {
                Err(format!("{what} is {spent}, below 0"))
            }
        };
        spend("`crewSpent`", self.crew_spent)?;
        for (name, agent) in &self.agents {
            let shown = quoted(name);
            spend(&format!("the spend of agent {shown}"), agent.spent)?;
            if agent.spent > self.crew_spent {
                return Err(format!(
                    "agent {shown} spent {}, more than the crew's {}",
                    agent.spent, self.crew_spent
                ));
            }
            if agent.tainted_by.is_some() && self.crew_tainted_by.is_none() {
                return Err(format!(
                    "agent {shown} is tainted but the crew is not (`crewTaintedBy` is missing)"
                ));
            }
        }
        Ok(())
    }
}

/// Refuses an array or `null` where the state has an object: serde would read a struct from an
/// array (`[]` as a clean state) and an optional one from `null`.
fn objects_where_states_go(value: &Value) -> Result<(), String> {
    fn object<'a>(
        value: &'a Value,
        what: &str,
    ) -> Result<&'a serde_json::Map<String, Value>, String> {
        value.as_object().ok_or_else(|| {
            format!(
                "{what} must be an object, not {}",
                strict_json::type_name(value)
            )
        })
    }
    fn cause(value: Option<&Value>, what: &str) -> Result<(), String> {
        let Some(value) = value else {
            return Ok(());
        };
        let cause = object(value, what)?;
        match cause.get("argument") {
            None | Some(Value::String(_)) => Ok(()),
            Some(other) => Err(format!(
                "{what}.argument must be a string, not {}",
                strict_json::type_name(other)
            )),
        }
    }
    let state = object(value, "the state")?;
    cause(state.get("crewTaintedBy"), "`crewTaintedBy`")?;
    if let Some(agents) = state.get("agents") {
        for (name, agent) in object(agents, "`agents`")? {
            let what = format!("agent {}", quoted(name));
            let agent = object(agent, &what)?;
            cause(agent.get("taintedBy"), &format!("{what}'s `taintedBy`"))?;
        }
    }
    Ok(())
}

/// An understood amount's float, and whether the float is exactly the decimal written.
pub fn amount_and_exactness(amount: &Amount) -> (f64, bool) {
    match amount {
        Amount::Understood { value, exact, .. } => (
            *value,
            crate::amount::decimal_cmp(exact, &format!("{value}"))
                == Some(std::cmp::Ordering::Equal),
        ),
        Amount::NotUnderstood { .. } => (0.0, true),
    }
}

/// `a + b`, and whether the float sum is exact (Knuth's two-sum: the rounding error is zero).
pub fn add_exactly(a: f64, b: f64) -> (f64, bool) {
    let sum = a + b;
    if !sum.is_finite() {
        return (sum, false);
    }
    let b_virtual = sum - a;
    let a_virtual = sum - b_virtual;
    let error = (a - a_virtual) + (b - b_virtual);
    (sum, error == 0.0)
}

fn key_argument(call: &Call) -> Option<String> {
    KEY_ARGUMENTS
        .iter()
        .find_map(|key| match call.args.get(key)? {
            Value::String(text) => {
                let mut text = text.clone();
                if text.len() > 200 {
                    let mut cut = 200;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                    text.push('…');
                }
                Some(format!("{key}={text}"))
            }
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(line: &str) -> Call {
        Call::parse_line(line.as_bytes()).unwrap().0
    }

    fn allow() -> Judgement {
        Judgement {
            decision: Decision::Allow,
            reasons: vec!["ok".into()],
        }
    }

    #[test]
    fn reading_untrusted_output_taints_the_agent_with_its_cause() {
        let policy = Policy::default();
        let mut state = CrewState::new();
        let fetch = call(
            r#"{"agent":"helper","tool":"fetch_page","args":{"url":"https://evil.test/page"},"source":"user"}"#,
        );
        state.record(&fetch, "id-7", &allow(), &policy);
        let cause = state.taint_of("helper", &policy).unwrap();
        assert_eq!(
            cause.describe(),
            "fetch_page (id id-7, url=https://evil.test/page) by helper"
        );
        assert!(state.taint_of("buyer", &policy).is_none());
    }

    #[test]
    fn a_denied_call_neither_taints_nor_spends() {
        let policy = Policy::default();
        let mut state = CrewState::new();
        let deny = Judgement {
            decision: Decision::Deny,
            reasons: vec!["no".into()],
        };
        state.record(
            &call(r#"{"agent":"a","tool":"fetch_page","args":{"url":"u","amount":5}}"#),
            "1",
            &deny,
            &policy,
        );
        assert_eq!(state, CrewState::new());
    }

    #[test]
    fn spend_adds_up_understood_amounts() {
        let policy = Policy::default();
        let mut state = CrewState::new();
        for amount in ["99", "\"$99.50\"", "\"lots\""] {
            let line = format!(
                r#"{{"agent":"b","tool":"send_payment","args":{{"to":"x","amount":{amount}}},"source":"user"}}"#
            );
            state.record(&call(&line), "1", &allow(), &policy);
        }
        assert_eq!(state.spent_by("b"), 198.5);
    }

    #[test]
    fn the_state_round_trips_through_json() {
        let policy = Policy::default();
        let mut state = CrewState::new();
        state.record(
            &call(r#"{"agent":"h","tool":"fetch_page","args":{"url":"u"}}"#),
            "1",
            &allow(),
            &policy,
        );
        state.record(
            &call(r#"{"agent":"b","tool":"send_payment","args":{"to":"x","amount":12.5}}"#),
            "2",
            &allow(),
            &policy,
        );
        let text = serde_json::to_string(&state).unwrap();
        let back: CrewState = serde_json::from_str(&text).unwrap();
        assert_eq!(back, state);
    }

    #[test]
    fn the_crew_spend_adds_up_every_agent() {
        let policy = Policy::default();
        let mut state = CrewState::new();
        for (agent, amount) in [("a", "99"), ("b", "\"$99.50\""), ("a", "1"), ("c", "0.1")] {
            let line = format!(
                r#"{{"agent":"{agent}","tool":"send_payment","args":{{"to":"x","amount":{amount}}},"source":"user"}}"#
            );
            state.record(&call(&line), "1", &allow(), &policy);
        }
        assert_eq!(state.spent_by("a"), 100.0);
        assert_eq!(state.crew_spent, 199.6);
        assert!(
            state.crew_inexact,
            "0.1 is not a float's exact value, so the sum may round"
        );
        let crew = Policy::from_json_str(r#"{"budgetScope":"crew","holdAboveTotal":1}"#).unwrap();
        assert_eq!(state.spent_in_scope("a", &policy), (100.0, false));
        assert_eq!(state.spent_in_scope("a", &crew), (199.6, true));
        assert_eq!(state.spent_in_scope("nobody", &policy), (0.0, false));
    }

    /// A state as sc-hook writes it after a tainting read and a payment.
    fn written() -> String {
        let policy = Policy::default();
        let mut state = CrewState::new();
        state.record(
            &call(r#"{"agent":"h","tool":"fetch_page","args":{"url":"u"}}"#),
            "1",
            &allow(),
            &policy,
        );
        state.record(
            &call(r#"{"agent":"b","tool":"send_payment","args":{"to":"x","amount":0.1}}"#),
            "2",
            &allow(),
            &policy,
        );
        serde_json::to_string(&state).unwrap()
    }

    #[test]
    fn a_written_state_reads_back() {
        let text = written();
        let back = CrewState::from_json(format!("{text}\n").as_bytes()).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        let fresh = serde_json::to_string(&CrewState::new()).unwrap();
        assert_eq!(fresh, r#"{"agents":{},"crewSpent":0.0}"#);
        assert_eq!(CrewState::from_json(fresh.as_bytes()), Ok(CrewState::new()));
        // Everything optional may be written out in full.
        let full = r#"{"agents":{"a":{"taintedBy":{"agent":"a","tool":"t","id":"1","argument":"url=u"},"spent":5,"inexact":false}},"crewTaintedBy":{"agent":"a","tool":"t","id":"1"},"crewSpent":5.5,"crewInexact":true}"#;
        assert!(CrewState::from_json(full.as_bytes()).is_ok());
    }

    #[test]
    fn a_state_in_any_other_shape_is_an_error() {
        let text = written();
        let with = |from: &str, to: &str| {
            assert!(text.contains(from), "{from} not in {text}");
            text.replacen(from, to, 1)
        };
        let cases: Vec<(String, &str)> = vec![
            (String::new(), "empty"),
            (" \n".to_owned(), "empty"),
            ("[]".to_owned(), "the state must be an object, not an array"),
            ("null".to_owned(), "the state must be an object, not null"),
            ("\"{}\"".to_owned(), "not a string"),
            ("7".to_owned(), "not a number"),
            ("{}".to_owned(), "missing field `agents`"),
            (r#"{"agents":{}}"#.to_owned(), "missing field `crewSpent`"),
            (r#"{"crewSpent":0}"#.to_owned(), "missing field `agents`"),
            (r#"{"agents":[],"crewSpent":0}"#.to_owned(), "`agents` must be an object"),
            (r#"{"agents":{},"crewSpent":0,"extra":1}"#.to_owned(), "unknown field `extra`"),
            (r#"{"agents":{},"crewSpent":"0"}"#.to_owned(), "invalid type: string"),
            (r#"{"agents":{},"crewSpent":0,"crewInexact":null}"#.to_owned(), "invalid type: null"),
            (r#"{"agents":{},"crewSpent":0,"crewTaintedBy":null}"#.to_owned(), "`crewTaintedBy` must be an object, not null"),
            (r#"{"agents":{},"crewSpent":-1}"#.to_owned(), "`crewSpent` is -1, below 0"),
            (r#"{"agents":{},"crewSpent":-0.0}"#.to_owned(), "below 0"),
            (r#"{"agents":{"a":[]},"crewSpent":0}"#.to_owned(), "agent a must be an object, not an array"),
            (r#"{"agents":{"a":[null,0]},"crewSpent":0}"#.to_owned(), "agent a must be an object"),
            (r#"{"agents":{"a":null},"crewSpent":0}"#.to_owned(), "agent a must be an object, not null"),
            (r#"{"agents":{"a":{}},"crewSpent":0}"#.to_owned(), "missing field `spent`"),
            (r#"{"agents":{"a":{"spent":1,"budget":9}},"crewSpent":1}"#.to_owned(), "unknown field `budget`"),
            (r#"{"agents":{"a":{"spent":2}},"crewSpent":1}"#.to_owned(), "agent a spent 2, more than the crew's 1"),
            (r#"{"agents":{"a":{"spent":-5}},"crewSpent":0}"#.to_owned(), "the spend of agent a is -5, below 0"),
            (r#"{"agents":{"a":{"spent":0,"taintedBy":[]}},"crewSpent":0}"#.to_owned(), "agent a's `taintedBy` must be an object"),
            (r#"{"agents":{"a":{"spent":0,"taintedBy":{"agent":"a","tool":"t"}}},"crewSpent":0}"#.to_owned(), "missing field `id`"),
            (r#"{"agents":{"a":{"spent":0,"taintedBy":{"agent":"a","tool":"t","id":"1","argument":null}}},"crewSpent":0}"#.to_owned(), "argument must be a string, not null"),
            (r#"{"agents":{"a":{"spent":0,"taintedBy":{"agent":"a","tool":"t","id":"1"}}},"crewSpent":0}"#.to_owned(), "agent a is tainted but the crew is not"),
            (with("}", "}}"), "trailing characters"),
            (format!("{text}{text}"), "trailing characters"),
            (format!("{text} x"), "not valid JSON"),
            (with("\"crewSpent\"", "\"crewSpent\":1,\"crewSpent\""), "duplicate key `crewSpent`"),
            (with("{", "{\"agents\":{},"), "duplicate key `agents`"),
            (with("\"spent\"", "\"Spent\""), "unknown field `Spent`"),
        ];
        for (bad, expected) in cases {
            let err = CrewState::from_json(bad.as_bytes()).unwrap_err();
            assert!(err.contains(expected), "{bad:?}: {err}");
        }
        let err = CrewState::from_json(b"{\"agents\":{\"\xff\":{}}}").unwrap_err();
        assert!(err.contains("not valid UTF-8"), "{err}");
    }
}
