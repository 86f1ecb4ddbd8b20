//! The reports: text for people, markdown for a CI job summary, JSON for programs.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde::ser::{Error as _, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use super::listing::{Record, Spill};
use super::{AgentSummary, Summary};
use crate::sanitize::for_terminal;

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
        "Grants     {} allowed by an earlier approval",
        summary.allowed_by_grant
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
        summary.veto_count
    );
    if summary.veto_count == 0 {
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
    if let Some(more) = unlisted(summary) {
        let _ = writeln!(
            out,
            "  … and {more} more; list them all with: {}",
            for_terminal(&summary.list_everything)
        );
    }

    let _ = writeln!(out, "\nBy agent");
    let headers = AGENT_COLUMNS;
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
            agent.allowed_by_grant,
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

    if let Some(questions) = &summary.questions {
        super::questions_render::text(&mut out, questions);
    }

    if summary.reset_count > 0 {
        let _ = writeln!(out, "\nState resets ({})", summary.reset_count);
        for reset in &summary.resets {
            let _ = writeln!(
                out,
                "  {} reset {} (id {})",
                for_terminal(&reset.ts),
                reset.agent.as_deref().map_or_else(
                    || "every agent".to_owned(),
                    |a| for_terminal(a).into_owned()
                ),
                for_terminal(&reset.id)
            );
        }
        let more = summary.reset_count - summary.resets.len() as u64;
        if more > 0 {
            let _ = writeln!(out, "  … and {more} more");
        }
    }

    if summary.problem_count > 0 {
        let _ = writeln!(out, "\nProblems in the logs ({})", summary.problem_count);
        for problem in &summary.problems {
            let _ = writeln!(
                out,
                "  {} line {}: {}",
                problem.log,
                problem.line,
                for_terminal(&problem.problem)
            );
        }
        if let Some(more) = unlisted_problems(summary) {
            let _ = writeln!(
                out,
                "  … and {more} more; list them all with: {}",
                for_terminal(&summary.list_everything)
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
    let _ = writeln!(out, "| calls | allow | by grant | hold | deny | approved | declined | never answered | executed | skipped | failed |");
    let _ = writeln!(
        out,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        summary.calls,
        d.allow,
        summary.allowed_by_grant,
        d.hold,
        d.deny,
        h.approved,
        h.declined,
        h.unanswered,
        o.executed,
        o.skipped,
        o.failed
    );
    let _ = writeln!(out, "### Vetoes ({})\n", summary.veto_count);
    if summary.veto_count == 0 {
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
        if let Some(more) = unlisted(summary) {
            let _ = writeln!(
                out,
                "… and {more} more; list them all with: `{}`\n",
                cell(&summary.list_everything)
            );
        }
    }
    let _ = writeln!(out, "### By agent\n");
    let _ = writeln!(out, "| agent | calls | allow | hold | deny | approved | declined | never answered | executed | by grant | tainted by |");
    let _ = writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for a in &summary.agents {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&a.agent),
            a.calls,
            a.allow,
            a.hold,
            a.deny,
            a.approved,
            a.declined,
            a.unanswered,
            a.executed,
            a.allowed_by_grant,
            a.tainted_by.as_deref().map(cell).unwrap_or_default()
        );
    }
    if let Some(questions) = &summary.questions {
        super::questions_render::markdown(&mut out, questions);
    }
    if summary.reset_count > 0 {
        let _ = writeln!(out, "\n### State resets ({})\n", summary.reset_count);
        for reset in &summary.resets {
            let _ = writeln!(
                out,
                "- {} reset {} (id `{}`)",
                cell(&reset.ts),
                reset
                    .agent
                    .as_deref()
                    .map_or_else(|| "every agent".to_owned(), |a| format!("`{}`", cell(a))),
                cell(&reset.id)
            );
        }
        let more = summary.reset_count - summary.resets.len() as u64;
        if more > 0 {
            let _ = writeln!(out, "\n… and {more} more");
        }
    }
    if summary.problem_count > 0 {
        let _ = writeln!(
            out,
            "\n### Problems in the logs ({})\n",
            summary.problem_count
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
        if let Some(more) = unlisted_problems(summary) {
            let _ = writeln!(
                out,
                "\n… and {more} more; list them all with: `{}`",
                cell(&summary.list_everything)
            );
        }
    }
    out
}

/// How many vetoes the summary counts but does not list, if any.
fn unlisted(summary: &Summary) -> Option<u64> {
    let more = summary.veto_count - summary.vetoes.len() as u64;
    (more > 0).then_some(more)
}

/// How many problems the summary counts but does not list, if any.
fn unlisted_problems(summary: &Summary) -> Option<u64> {
    let more = summary.problem_count - summary.problems.len() as u64;
    (more > 0).then_some(more)
}

/// The report for programs: the same summary as one JSON document, every veto listed, written as
/// it is made (the vetoes stream from the summary's temporary file).
pub fn write_json(summary: &Summary, mut out: impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut out, summary)?;
    out.write_all(b"\n")
}

/// [`write_json`] into a string, for a summary small enough to hold.
pub fn render_json(summary: &Summary) -> String {
    let mut text = Vec::new();
    write_json(summary, &mut text).expect("a summary serializes");
    String::from_utf8(text).expect("JSON is UTF-8")
}

impl Serialize for Summary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Summary", 12)?;
        out.serialize_field("logs", &self.logs)?;
        out.serialize_field("events", &self.events)?;
        out.serialize_field("calls", &self.calls)?;
        out.serialize_field("decisions", &self.decisions)?;
        out.serialize_field("allowedByGrant", &self.allowed_by_grant)?;
        out.serialize_field("holds", &self.holds)?;
        out.serialize_field("outcomes", &self.outcomes)?;
        let vetoes = Every {
            listed: &self.vetoes,
            count: self.veto_count,
            spill: self.every_veto.as_ref(),
        };
        out.serialize_field("vetoes", &vetoes)?;
        out.serialize_field("agents", &self.agents)?;
        let problems = Every {
            listed: &self.problems,
            count: self.problem_count,
            spill: self.every_problem.as_ref(),
        };
        out.serialize_field("problems", &problems)?;
        if self.reset_count > 0 {
            out.serialize_field("resets", &self.resets)?;
            out.serialize_field("resetCount", &self.reset_count)?;
        }
        if let Some(questions) = &self.questions {
            out.serialize_field("questions", &super::questions_render::json(questions))?;
        }
        out.end()
    }
}

/// Every veto or problem of a summary, as a JSON array: from the temporary file when there is
/// one, else those listed when they are all.
struct Every<'a, T> {
    listed: &'a [T],
    count: u64,
    spill: Option<&'a Spill<T>>,
}

impl<T: Serialize + Record> Serialize for Every<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(spill) = self.spill else {
            if self.count > self.listed.len() as u64 {
                return Err(S::Error::custom(
                    "the summary kept only the first vetoes or problems; keep everything to list \
                     them all",
                ));
            }
            return self.listed.serialize(serializer);
        };
        let mut seq = serializer.serialize_seq(Some(spill.count() as usize))?;
        for record in spill.read().map_err(S::Error::custom)? {
            seq.serialize_element(&record.map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

/// The counted columns of the per-agent table, after the agent's name, in every format (`by
/// grant`: allowed by an earlier approval).
pub(super) const AGENT_COLUMNS: [&str; 9] = [
    "calls",
    "allow",
    "hold",
    "deny",
    "approved",
    "declined",
    "unanswered",
    "executed",
    "by grant",
];
