//! The counts a report keeps: decisions, holds, outcomes, vetoes, problems and resets.

use serde::Serialize;

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
    /// Of the calls allowed, those an earlier approval allowed (a grant).
    #[serde(rename = "allowedByGrant")]
    pub allowed_by_grant: u64,
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
