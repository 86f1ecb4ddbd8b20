//! What a report says ([`Summary`]) and which events were read ([`Filter`]).

use std::time::SystemTime;

use anyhow::Result;

use super::counts::*;
use super::listing::Spill;
use super::time::rfc3339;
use super::timeline::Timeline;

/// Everything the report shows. Serialized (see [`write_json`]), it lists every veto.
#[derive(Debug, Default)]
pub struct Summary {
    pub logs: Vec<String>,
    pub events: u64,
    pub calls: u64,
    pub decisions: DecisionCounts,
    /// Of the calls allowed, those an earlier approval allowed (a grant).
    pub allowed_by_grant: u64,
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
    /// What people were asked (`--questions`), when it was counted ([`super::QuestionCounter`]).
    pub questions: Option<super::question_rows::Questions>,
    /// Every veto and problem, when the summariser was asked to keep them all.
    pub(super) every_veto: Option<Spill<Veto>>,
    pub(super) every_problem: Option<Spill<Problem>>,
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
    pub(super) fn has_time_window(&self) -> bool {
        self.since.is_some() || self.until.is_some()
    }

    pub(super) fn admits_time(&self, ts: SystemTime) -> bool {
        self.since.is_none_or(|since| ts >= since) && self.until.is_none_or(|until| ts < until)
    }

    pub(super) fn admits_agent(&self, agent: &str) -> bool {
        self.agent.as_deref().is_none_or(|wanted| wanted == agent)
    }

    /// The options that give this filter on sc-report's command line.
    pub(super) fn args(&self) -> Vec<String> {
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
pub fn parse_time(text: &str) -> Result<SystemTime, TimeError> {
    let text = text.trim();
    let full = if text.len() == 10 {
        format!("{text}T00:00:00Z")
    } else {
        text.to_owned()
    };
    humantime::parse_rfc3339_weak(full.trim_end_matches('Z'))
        .or_else(|_| humantime::parse_rfc3339(&full))
        .map_err(|error| TimeError {
            text: text.to_owned(),
            error,
        })
}

/// A `--since`/`--until` time that is not one.
#[derive(Debug, thiserror::Error)]
#[error("{text:?} is not a time such as 2026-11-30T16:00:00Z ({error})")]
pub struct TimeError {
    text: String,
    error: humantime::TimestampError,
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
