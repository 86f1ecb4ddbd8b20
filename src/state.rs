//! Per-agent state across a stream: taint and spend. An explicit, serialisable value that the
//! decision reads ([`crate::decision::evaluate_with_state`]) and that is updated after each
//! decision ([`CrewState::record`]), so the rules stay pure and a later adapter can persist it.
//!
//! - **Taint.** Once an agent has a call that is not denied to a tool in `untrustedOutputTools`
//!   (web pages, mail, files: third-party text), it is tainted for the rest of the stream. With
//!   `taintScope: "crew"`, the whole crew is. Taint never clears within a stream, and an approval
//!   does not clear it.
//! - **Spend.** The sum of the understood amounts of an agent's calls that were not denied. A hold
//!   counts whatever its answer: the gate cannot see the answer, so it fails closed.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::amount::Amount;
use crate::call::Call;
use crate::decision::{Decision, Judgement};
use crate::policy::{Policy, TaintScope};
use crate::sanitize::{for_terminal, quoted};

/// The argument keys that best name what a tool read, in order of preference.
const KEY_ARGUMENTS: &[&str] = &["url", "uri", "path", "file", "query", "from", "id", "to"];

/// The call that tainted an agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
#[serde(rename_all = "camelCase")]
pub struct AgentState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tainted_by: Option<TaintCause>,
    #[serde(default)]
    pub spent: f64,
    /// Whether `spent` may differ from the exact decimal sum (an amount a float cannot hold, or
    /// a sum that rounded). A budget check that ties in floats then holds rather than guess.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inexact: bool,
}

/// The crew's state across a stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrewState {
    #[serde(default)]
    pub agents: BTreeMap<String, AgentState>,
    /// The first taint of any agent, for `taintScope: "crew"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crew_tainted_by: Option<TaintCause>,
}

impl CrewState {
    pub fn new() -> Self {
        Self::default()
    }

    /// What taints `agent` under the policy's scope, if anything.
    pub fn taint_of(&self, agent: &str, policy: &Policy) -> Option<&TaintCause> {
        match policy.taint_scope() {
            TaintScope::Agent => self.agents.get(agent)?.tainted_by.as_ref(),
            TaintScope::Crew => self.crew_tainted_by.as_ref(),
        }
    }

    /// What `agent` has spent so far in the stream.
    pub fn spent_by(&self, agent: &str) -> f64 {
        self.agents.get(agent).map_or(0.0, |a| a.spent)
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
        if !self.agents.contains_key(&call.agent) {
            self.agents
                .insert(call.agent.clone(), AgentState::default());
        }
        let agent = self.agents.get_mut(&call.agent).expect("inserted above");
        let (sum, sum_exact) = add_exactly(agent.spent, amount);
        agent.inexact |= !amount_exact || !sum_exact;
        // Saturate rather than reach infinity, which JSON cannot carry (the state must round-trip).
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
}
