//! The report as one self-contained HTML page (`sc-report --format html`).
//!
//! Built from the same [`Summary`] as the other reports, so its size follows the report, not the
//! log: at most [`LISTED`] vetoes, agents, problems and resets, each piece of agent-written text
//! cut to a bounded length, a timeline of at most [`timeline::MAX_BARS`] bars. The charts are
//! inline SVG drawn by `plotters`. The page loads nothing and runs no script: its
//! Content-Security-Policy is `default-src 'none'` with its one `<style>` block allowed by hash.
//! Every agent-written string is HTML-escaped, with control, bidi and invisible characters shown
//! as `\u{…}` escapes (see [`crate::sanitize`]). The summary's numbers are also embedded as JSON
//! in a `<script type="application/json" id="sc-summary">` data block, never executed, with `<`,
//! `>`, `&` and control, bidi and invisible characters written as `\u` escapes, so no text in it
//! can end the block or hide in it.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

use base64::Engine as _;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::timeline::{self, Bars};
use super::{AgentSummary, DecisionCounts, HoldCounts, OutcomeCounts, Problem, Reset, Summary};
use super::{Filter, LISTED};
use crate::sanitize::{for_terminal, html_escape, is_unsafe};

/// The page's style sheet: its one `<style>` block, allowed by its hash.
const STYLE: &str = include_str!("report.css");

/// The longest agent, tool name or call id shown, in characters (cut with `…`).
const NAME_CHARS: usize = 120;
/// The longest reason, argument list, taint cause or problem shown.
const TEXT_CHARS: usize = 600;
/// The most reasons shown for one veto.
const REASONS_SHOWN: usize = 12;
/// The agents with the most calls drawn in the chart (the table lists more).
const AGENTS_CHARTED: usize = 25;
/// Agent names in the chart's labels.
const CHART_NAME_CHARS: usize = 24;

const ALLOW: RGBColor = RGBColor(46, 139, 87);
const HOLD: RGBColor = RGBColor(214, 158, 0);
const DENY: RGBColor = RGBColor(200, 50, 45);
const FONT: &str = "sans-serif";

/// A log's hash chain, as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainStatus {
    /// `--verify` was not given.
    NotVerified,
    /// Walked and intact.
    Verified { events: u64, head: String },
    /// Walked and broken: where and how, in words.
    Broken(String),
}

impl ChainStatus {
    fn word(&self) -> &'static str {
        match self {
            ChainStatus::NotVerified => "not verified",
            ChainStatus::Verified { .. } => "verified",
            ChainStatus::Broken(_) => "broken",
        }
    }
}

/// Agent-written text for the page: unsafe characters shown escaped, cut to `max` characters
/// with `…`, then HTML-escaped.
fn shown(text: &str, max: usize) -> String {
    let escaped = for_terminal(text);
    let cut = match escaped.char_indices().nth(max) {
        Some((at, _)) => Cow::Owned(format!("{}…", &escaped[..at])),
        None => escaped,
    };
    html_escape(&cut).into_owned()
}

/// Agent-written text cut to `max` characters (with `…`), for the data block, which escapes the
/// rest itself.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Agent-written text for a chart label (plotters escapes it for SVG).
fn label(text: &str, max: usize) -> String {
    let escaped = for_terminal(text);
    match escaped.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &escaped[..at]),
        None => escaped.into_owned(),
    }
}

/// A count with thousands separators.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn time(seconds: u64) -> String {
    super::rfc3339_seconds(timeline::at(seconds))
}

/// The page's Content-Security-Policy: nothing from anywhere, its style block by hash.
pub(crate) fn content_security_policy() -> String {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(STYLE));
    format!("default-src 'none'; style-src 'sha256-{hash}'; base-uri 'none'; form-action 'none'")
}

/// Writes the page. `chains` gives each log's chain, in the order of `summary.logs` (missing
/// ones are not verified).
pub fn write_html(
    summary: &Summary,
    chains: &[ChainStatus],
    mut out: impl Write,
) -> io::Result<()> {
    out.write_all(render_html(summary, chains)?.as_bytes())
}

/// The page as a string (a few MiB at most, see the module's notes).
pub(crate) fn render_html(summary: &Summary, chains: &[ChainStatus]) -> io::Result<String> {
    let mut page = String::with_capacity(64 * 1024);
    let chain = |n: usize| chains.get(n).unwrap_or(&ChainStatus::NotVerified);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <meta name=\"generator\" content=\"sc-report {}\">\n\
         <title>Skeleton Crew audit report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        content_security_policy(),
        env!("CARGO_PKG_VERSION"),
    );
    header(&mut page, summary, &chain);
    tiles(&mut page, summary);
    timeline_section(&mut page, summary)?;
    agents(&mut page, summary)?;
    if let Some(questions) = &summary.questions {
        super::questions_render::html_section(&mut page, questions);
    }
    vetoes(&mut page, summary);
    taint(&mut page, summary);
    resets(&mut page, summary);
    problems(&mut page, summary);
    let _ = writeln!(
        page,
        "<footer>Made by sc-report {}. Times are UTC. The numbers are also in this page's \
         <code>sc-summary</code> JSON block; <code>{}</code> lists every veto.</footer>",
        env!("CARGO_PKG_VERSION"),
        shown(&summary.list_everything, usize::MAX),
    );
    embedded(&mut page, summary, &chain)?;
    page.push_str("</body>\n</html>\n");
    Ok(page)
}

fn header<'a>(page: &mut String, summary: &Summary, chain: &impl Fn(usize) -> &'a ChainStatus) {
    page.push_str("<header>\n<h1>Skeleton Crew audit report</h1>\n");
    let span = summary.timeline.as_ref().and_then(|t| t.span);
    let _ = match span {
        Some((first, last)) => writeln!(
            page,
            "<p id=\"span\">{} events from <time>{}</time> to <time>{}</time></p>",
            count(summary.events),
            time(first),
            time(last)
        ),
        None => writeln!(
            page,
            "<p id=\"span\">{} events, none with a valid time</p>",
            count(summary.events)
        ),
    };
    if let Some(filter) = filter_words(&summary.filter) {
        let _ = writeln!(page, "<p id=\"filter\">Counting only {filter}.</p>");
    }
    let broken: Vec<usize> = (0..summary.logs.len())
        .filter(|&n| matches!(chain(n), ChainStatus::Broken(_)))
        .collect();
    if !broken.is_empty() {
        let names: Vec<String> = broken
            .iter()
            .map(|&n| format!("<code>{}</code>", shown(&summary.logs[n], NAME_CHARS)))
            .collect();
        let _ = writeln!(
            page,
            "<p class=\"alert\" id=\"chain-alert\" role=\"alert\">Chain broken: the hash chain of {} \
             does not hold. Events were changed, removed or added after they were written; do not \
             trust the numbers below for {}.</p>",
            names.join(", "),
            if broken.len() == 1 { "it" } else { "them" }
        );
    }
    page.push_str(
        "<table id=\"logs\">\n<thead><tr><th>log</th><th>hash chain</th></tr></thead>\n<tbody>\n",
    );
    for (n, log) in summary.logs.iter().enumerate() {
        let status = chain(n);
        let detail = match status {
            ChainStatus::NotVerified => {
                " <span class=\"muted\">(<code>sc-report --verify</code> checks it)</span>"
                    .to_owned()
            }
            ChainStatus::Verified { events, head } => format!(
                ": {} events, intact, head <code>{}</code>",
                count(*events),
                shown(head, NAME_CHARS)
            ),
            ChainStatus::Broken(how) => format!(": {}", shown(how, TEXT_CHARS)),
        };
        let _ = writeln!(
            page,
            "<tr class=\"chain-{}\"><td><code>{}</code></td><td><strong>{}</strong>{detail}</td></tr>",
            match status {
                ChainStatus::NotVerified => "unverified",
                ChainStatus::Verified { .. } => "verified",
                ChainStatus::Broken(_) => "broken",
            },
            shown(log, NAME_CHARS),
            status.word(),
        );
    }
    page.push_str("</tbody>\n</table>\n</header>\n");
}

/// The filter in words, if there is one.
fn filter_words(filter: &Filter) -> Option<String> {
    let mut words = Vec::new();
    if let Some(agent) = &filter.agent {
        words.push(format!(
            "calls by agent <code>{}</code>",
            shown(agent, NAME_CHARS)
        ));
    }
    if let Some(since) = filter.since {
        words.push(format!("events at or after {}", super::rfc3339(since)));
    }
    if let Some(until) = filter.until {
        words.push(format!("events before {}", super::rfc3339(until)));
    }
    (!words.is_empty()).then(|| words.join(", "))
}

/// A tile: its key (id and class), its words and its number.
type Tile<'a> = (&'a str, &'a str, u64);

fn tiles(page: &mut String, summary: &Summary) {
    let d = &summary.decisions;
    let h = &summary.holds;
    let o = &summary.outcomes;
    let groups: [(&str, &[Tile]); 3] = [
        (
            "Decisions",
            &[
                ("calls", "calls", summary.calls),
                ("allow", "allow", d.allow),
                // Of the allows, those an earlier approval (a grant) allowed.
                ("by-grant", "by grant", summary.allowed_by_grant),
                ("hold", "hold", d.hold),
                ("deny", "deny", d.deny),
            ],
        ),
        (
            "Holds",
            &[
                ("approved", "approved", h.approved),
                ("declined", "declined", h.declined),
                ("unanswered", "never answered", h.unanswered),
            ],
        ),
        (
            "Outcomes",
            &[
                ("executed", "executed", o.executed),
                ("skipped", "skipped", o.skipped),
                ("failed", "failed", o.failed),
            ],
        ),
    ];
    page.push_str("<section id=\"tiles\" aria-label=\"Summary\">\n");
    for (title, tiles) in groups {
        let _ = writeln!(page, "<div class=\"group\"><h3>{title}</h3><dl>");
        for (key, words, value) in tiles {
            let _ = writeln!(
                page,
                "<div class=\"tile {key}\" id=\"tile-{key}\"><dt>{words}</dt><dd>{}</dd></div>",
                count(*value)
            );
        }
        page.push_str("</dl></div>\n");
    }
    if let Some(questions) = &summary.questions {
        super::questions_render::html_tile(page, questions);
    }
    page.push_str("</section>\n");
}

fn legend(page: &mut String) {
    page.push_str(
        "<p class=\"legend\"><span><span class=\"key allow\"></span>allow</span>\
         <span><span class=\"key hold\"></span>hold</span>\
         <span><span class=\"key deny\"></span>deny</span></p>\n",
    );
}

fn chart_error<E: std::error::Error + Send + Sync>(
    err: plotters::drawing::DrawingAreaErrorKind<E>,
) -> io::Error {
    io::Error::other(format!("cannot draw a chart: {err}"))
}

/// A bar's label: the start of its bucket, as much of it as the bucket's size needs.
fn bucket_label(bars: &Bars, n: usize) -> String {
    let text = super::rfc3339_seconds(bars.time_of(n));
    // 2026-11-30T16:05:00Z; a time past year 9999 is shown whole.
    if text.len() != 20 {
        return text;
    }
    match bars.width {
        60 => text[11..16].to_owned(),
        3600 => format!("{} {}h", &text[5..10], &text[11..13]),
        _ => text[..10].to_owned(),
    }
}

/// The timeline's stacked bars, as inline SVG.
fn timeline_svg(bars: &Bars) -> io::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 300)).into_drawing_area();
        let n = bars.counts.len() as u32;
        let top = bars
            .counts
            .iter()
            .map(|c| c.allow + c.hold + c.deny)
            .max()
            .unwrap_or(0)
            .max(1);
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(32)
            .y_label_area_size(56)
            .build_cartesian_2d(0..n, 0..top + top.div_ceil(20))
            .map_err(chart_error)?;
        // A tick at the start of a bucket (the left edge of its bar), labelled with that time.
        let x_label = |tick: &u32| bucket_label(bars, *tick as usize);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(8.min(n as usize + 1))
            .y_labels(6)
            .x_label_formatter(&x_label)
            .y_label_formatter(&|y| count(*y))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
            .y_desc("calls")
            .draw()
            .map_err(chart_error)?;
        // Bars at most 60 pixels wide, however few.
        let plot_width = chart.plotting_area().dim_in_pixel().0;
        let side = ((plot_width / n.max(1)).saturating_sub(60) / 2).max(1);
        let stacks = bars.counts.iter().enumerate().flat_map(|(n, c)| {
            stacked(c).into_iter().map(move |(from, to, colour)| {
                let mut bar =
                    Rectangle::new([(n as u32, from), (n as u32 + 1, to)], colour.filled());
                bar.set_margin(0, 0, side, side);
                bar
            })
        });
        chart.draw_series(stacks).map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

/// A bar's three parts, bottom to top: allow, hold, deny (the empty ones left out).
fn stacked(c: &DecisionCounts) -> Vec<(u64, u64, RGBColor)> {
    let mut parts = Vec::with_capacity(3);
    let mut at = 0;
    for (value, colour) in [(c.allow, ALLOW), (c.hold, HOLD), (c.deny, DENY)] {
        if value > 0 {
            parts.push((at, at + value, colour));
            at += value;
        }
    }
    parts
}

fn timeline_section(page: &mut String, summary: &Summary) -> io::Result<()> {
    page.push_str("<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    let Some(timeline) = &summary.timeline else {
        page.push_str("<p>No timeline.</p>\n</section>\n");
        return Ok(());
    };
    let Some(bars) = timeline.bars() else {
        page.push_str("<p>No call with a valid time.</p>\n</section>\n");
        return Ok(());
    };
    legend(page);
    let last = bars.start + bars.width * bars.counts.len() as u64;
    let _ = writeln!(
        page,
        "<figure><div class=\"chart\" id=\"timeline-chart\" role=\"img\" aria-label=\"Decisions per {unit}\">{}</div>\
         <figcaption>Decisions per {unit} by the time of the gate's verdict, from {} to {}.{}</figcaption></figure>",
        timeline_svg(&bars)?,
        time(bars.start),
        time(last),
        match timeline.untimed {
            0 => String::new(),
            n => format!(" {} calls with no valid time are not drawn.", count(n)),
        },
        unit = bars.unit(),
    );
    page.push_str(
        "<details><summary>The same as a table</summary>\n<table id=\"timeline-table\">\
         <thead><tr><th>from (UTC)</th><th class=\"n\">allow</th><th class=\"n\">hold</th>\
         <th class=\"n\">deny</th></tr></thead>\n<tbody>\n",
    );
    for (n, c) in bars.counts.iter().enumerate() {
        if c.allow + c.hold + c.deny == 0 {
            continue;
        }
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            time(bars.start + n as u64 * bars.width),
            count(c.allow),
            count(c.hold),
            count(c.deny)
        );
    }
    page.push_str("</tbody>\n</table>\n</details>\n</section>\n");
    Ok(())
}

/// The per-agent stacked bars (the agents with the most calls), as inline SVG.
fn agents_svg(agents: &[&AgentSummary]) -> io::Result<String> {
    let mut svg = String::new();
    {
        let n = agents.len() as u32;
        let height = 60 + 30 * n;
        let root = SVGBackend::with_string(&mut svg, (1000, height)).into_drawing_area();
        let top = agents.iter().map(|a| a.calls).max().unwrap_or(0).max(1);
        let names: Vec<String> = agents
            .iter()
            .map(|a| label(&a.agent, CHART_NAME_CHARS))
            .collect();
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(32)
            .y_label_area_size(220)
            .build_cartesian_2d(0..top + top.div_ceil(20), (0..n - 1).into_segmented())
            .map_err(chart_error)?;
        let y_label = |value: &SegmentValue<u32>| match value {
            // The busiest at the top.
            SegmentValue::CenterOf(k) if *k < n => names[(n - 1 - k) as usize].clone(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n as usize)
            .x_labels(6)
            .y_label_formatter(&y_label)
            .x_label_formatter(&|x| count(*x))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
            .x_desc("calls")
            .draw()
            .map_err(chart_error)?;
        let bars = agents.iter().enumerate().flat_map(|(k, a)| {
            let k = n as usize - 1 - k;
            let decisions = DecisionCounts {
                allow: a.allow,
                hold: a.hold,
                deny: a.deny,
            };
            stacked(&decisions)
                .into_iter()
                .map(move |(from, to, colour)| {
                    let mut bar = Rectangle::new(
                        [
                            (from, SegmentValue::Exact(k as u32)),
                            (to, SegmentValue::Exact(k as u32 + 1)),
                        ],
                        colour.filled(),
                    );
                    bar.set_margin(5, 5, 0, 0);
                    bar
                })
        });
        chart.draw_series(bars).map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

fn agents(page: &mut String, summary: &Summary) -> io::Result<()> {
    let _ = writeln!(
        page,
        "<section id=\"agents\">\n<h2>By agent ({})</h2>",
        count(summary.agents.len() as u64)
    );
    if summary.agents.is_empty() {
        page.push_str("<p>No calls.</p>\n</section>\n");
        return Ok(());
    }
    let mut busiest: Vec<&AgentSummary> = summary.agents.iter().collect();
    busiest.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.agent.cmp(&b.agent)));
    busiest.truncate(AGENTS_CHARTED);
    legend(page);
    let _ = writeln!(
        page,
        "<figure><div class=\"chart\" id=\"agents-chart\" role=\"img\" aria-label=\"Decisions by agent\">{}</div>\
         <figcaption>Decisions by agent{}.</figcaption></figure>",
        agents_svg(&busiest)?,
        if summary.agents.len() > AGENTS_CHARTED {
            format!(", the {AGENTS_CHARTED} agents with the most calls; the table lists them all")
        } else {
            String::new()
        }
    );
    let headers = super::render::AGENT_COLUMNS;
    page.push_str("<table id=\"agent-table\">\n<thead><tr><th>agent</th>");
    for header in headers {
        let _ = write!(page, "<th class=\"n\">{header}</th>");
    }
    page.push_str("</tr></thead>\n<tbody>\n");
    for a in summary.agents.iter().take(LISTED) {
        let _ = write!(
            page,
            "<tr><td><code>{}</code></td>",
            shown(&a.agent, NAME_CHARS)
        );
        for value in [
            a.calls,
            a.allow,
            a.hold,
            a.deny,
            a.approved,
            a.declined,
            a.unanswered,
            a.executed,
            a.allowed_by_grant,
        ] {
            let _ = write!(page, "<td class=\"n\">{}</td>", count(value));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</tbody>\n</table>\n");
    more(
        page,
        summary.agents.len() as u64,
        LISTED as u64,
        &summary.list_everything,
    );
    page.push_str("</section>\n");
    Ok(())
}

/// "… and N more" with the command that lists them all, when `listed` is less than `all`.
fn more(page: &mut String, all: u64, listed: u64, command: &str) {
    if all > listed {
        let _ = writeln!(
            page,
            "<p class=\"more\">… and {} more; list them all with: <code>{}</code></p>",
            count(all - listed),
            shown(command, usize::MAX)
        );
    }
}

fn vetoes(page: &mut String, summary: &Summary) {
    let _ = writeln!(
        page,
        "<section id=\"vetoes\">\n<h2>Vetoes ({})</h2>\n<p class=\"muted\">Calls denied, or held and declined.</p>",
        count(summary.veto_count)
    );
    if summary.veto_count == 0 {
        page.push_str("<p>None.</p>\n</section>\n");
        return;
    }
    page.push_str(
        "<table id=\"veto-table\">\n<thead><tr><th>kind</th><th>agent</th><th>tool</th>\
         <th>arguments</th><th>reasons</th><th>call id</th></tr></thead>\n<tbody>\n",
    );
    for veto in &summary.vetoes {
        let mut reasons = String::new();
        for reason in veto.reasons.iter().take(REASONS_SHOWN) {
            let _ = write!(reasons, "<div>{}</div>", shown(reason, TEXT_CHARS));
        }
        if veto.reasons.len() > REASONS_SHOWN {
            let _ = write!(
                reasons,
                "<div class=\"muted\">… and {} more</div>",
                veto.reasons.len() - REASONS_SHOWN
            );
        }
        let _ = writeln!(
            page,
            "<tr><td class=\"kind {kind}\">{kind}</td><td><code>{}</code></td><td><code>{}</code></td>\
             <td><code>{}</code></td><td>{reasons}</td><td><code>{}</code></td></tr>",
            shown(&veto.agent, NAME_CHARS),
            shown(&veto.tool, NAME_CHARS),
            veto.args
                .as_deref()
                .map(|args| shown(args, TEXT_CHARS))
                .unwrap_or_default(),
            shown(&veto.id, NAME_CHARS),
            kind = veto.kind,
        );
    }
    page.push_str("</tbody>\n</table>\n");
    more(
        page,
        summary.veto_count,
        summary.vetoes.len() as u64,
        &summary.list_everything,
    );
    page.push_str("</section>\n");
}

fn taint(page: &mut String, summary: &Summary) {
    let tainted: Vec<&AgentSummary> = summary
        .agents
        .iter()
        .filter(|a| a.tainted_by.is_some())
        .collect();
    let _ = writeln!(
        page,
        "<section id=\"taint\">\n<h2>Taint ({})</h2>\n<p class=\"muted\">Agents whose context holds \
         content they did not write, and the read that put it there.</p>",
        count(tainted.len() as u64)
    );
    if tainted.is_empty() {
        page.push_str("<p>No agent was tainted.</p>\n</section>\n");
        return;
    }
    page.push_str(
        "<table id=\"taint-table\">\n<thead><tr><th>agent</th><th>tainted by</th></tr></thead>\n<tbody>\n",
    );
    for agent in tainted.iter().take(LISTED) {
        let _ = writeln!(
            page,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            shown(&agent.agent, NAME_CHARS),
            shown(agent.tainted_by.as_deref().unwrap_or_default(), TEXT_CHARS)
        );
    }
    page.push_str("</tbody>\n</table>\n");
    more(
        page,
        tainted.len() as u64,
        LISTED as u64,
        &summary.list_everything,
    );
    page.push_str("</section>\n");
}

fn resets(page: &mut String, summary: &Summary) {
    if summary.reset_count == 0 {
        return;
    }
    let _ = writeln!(
        page,
        "<section id=\"resets\">\n<h2>State resets ({})</h2>\n<table id=\"reset-table\">\n\
         <thead><tr><th>time</th><th>reset</th><th>id</th></tr></thead>\n<tbody>",
        count(summary.reset_count)
    );
    for reset in &summary.resets {
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            shown(&reset.ts, NAME_CHARS),
            reset.agent.as_deref().map_or_else(
                || "every agent".to_owned(),
                |a| format!("<code>{}</code>", shown(a, NAME_CHARS))
            ),
            shown(&reset.id, NAME_CHARS)
        );
    }
    page.push_str("</tbody>\n</table>\n");
    let more = summary.reset_count - summary.resets.len() as u64;
    if more > 0 {
        let _ = writeln!(page, "<p class=\"more\">… and {} more</p>", count(more));
    }
    page.push_str("</section>\n");
}

fn problems(page: &mut String, summary: &Summary) {
    if summary.problem_count == 0 {
        return;
    }
    let _ = writeln!(
        page,
        "<section id=\"problems\">\n<h2>Problems in the logs ({})</h2>\n<table id=\"problem-table\">\n\
         <thead><tr><th>log</th><th class=\"n\">line</th><th>problem</th></tr></thead>\n<tbody>",
        count(summary.problem_count)
    );
    for p in &summary.problems {
        let _ = writeln!(
            page,
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td>{}</td></tr>",
            shown(&p.log, NAME_CHARS),
            p.line,
            shown(&p.problem, TEXT_CHARS)
        );
    }
    page.push_str("</tbody>\n</table>\n");
    more(
        page,
        summary.problem_count,
        summary.problems.len() as u64,
        &summary.list_everything,
    );
    page.push_str("</section>\n");
}

/// The JSON report's summary without its vetoes, as the page embeds it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Embedded<'a> {
    logs: Vec<String>,
    events: u64,
    calls: u64,
    decisions: &'a DecisionCounts,
    allowed_by_grant: u64,
    holds: &'a HoldCounts,
    outcomes: &'a OutcomeCounts,
    veto_count: u64,
    /// The first [`LISTED`] agents, by name.
    agents: Vec<AgentSummary>,
    agent_count: u64,
    /// The first [`LISTED`] problems.
    problems: Vec<Problem>,
    problem_count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    resets: Option<&'a [Reset]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reset_count: Option<u64>,
    chains: Vec<EmbeddedChain>,
}

#[derive(Serialize)]
struct EmbeddedChain {
    log: String,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

fn embedded<'a>(
    page: &mut String,
    summary: &Summary,
    chain: &impl Fn(usize) -> &'a ChainStatus,
) -> io::Result<()> {
    // Agent-written text is cut here as on the page, so that the block, like the page, is bounded
    // by the report and not by the length of what an agent wrote.
    let data = Embedded {
        logs: summary
            .logs
            .iter()
            .map(|log| cut(log, TEXT_CHARS))
            .collect(),
        events: summary.events,
        calls: summary.calls,
        decisions: &summary.decisions,
        allowed_by_grant: summary.allowed_by_grant,
        holds: &summary.holds,
        outcomes: &summary.outcomes,
        veto_count: summary.veto_count,
        agents: summary.agents[..summary.agents.len().min(LISTED)]
            .iter()
            .map(|agent| AgentSummary {
                agent: cut(&agent.agent, NAME_CHARS),
                tainted_by: agent.tainted_by.as_deref().map(|t| cut(t, TEXT_CHARS)),
                ..agent.clone()
            })
            .collect(),
        agent_count: summary.agents.len() as u64,
        problems: summary
            .problems
            .iter()
            .map(|p| Problem {
                log: cut(&p.log, TEXT_CHARS),
                line: p.line,
                problem: cut(&p.problem, TEXT_CHARS),
            })
            .collect(),
        problem_count: summary.problem_count,
        resets: (summary.reset_count > 0).then_some(&summary.resets[..]),
        reset_count: (summary.reset_count > 0).then_some(summary.reset_count),
        chains: summary
            .logs
            .iter()
            .enumerate()
            .map(|(n, log)| EmbeddedChain {
                log: cut(log, TEXT_CHARS),
                status: chain(n).word(),
                detail: match chain(n) {
                    ChainStatus::NotVerified => None,
                    ChainStatus::Verified { head, .. } => Some(format!("head {head}")),
                    ChainStatus::Broken(how) => Some(cut(how, TEXT_CHARS)),
                },
            })
            .collect(),
    };
    let json = serde_json::to_string(&data).map_err(io::Error::other)?;
    page.push_str("<script type=\"application/json\" id=\"sc-summary\">");
    // `<`, `>`, `&` and the characters a terminal would be shown escaped appear in compact JSON
    // only inside strings, where their `\\u` escapes mean the same.
    for c in json.chars() {
        if matches!(c, '<' | '>' | '&') || is_unsafe(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(page, "\\u{unit:04x}");
            }
        } else {
            page.push(c);
        }
    }
    page.push_str("</script>\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(
            [0, 999, 1000, 1234567].map(count),
            ["0", "999", "1,000", "1,234,567"]
        );
    }

    #[test]
    fn the_policy_allows_exactly_the_style_block() {
        let policy = content_security_policy();
        assert!(policy.starts_with("default-src 'none'; style-src 'sha256-"));
        let page = render_html(&Summary::default(), &[]).unwrap();
        let start = page.find("<style>").unwrap() + "<style>".len();
        let end = page.find("</style>").unwrap();
        let hash =
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&page[start..end]));
        assert!(policy.contains(&format!("'sha256-{hash}'")));
        assert_eq!(page.matches("<style").count(), 1);
        assert!(!page.contains("<script>") && !page.contains(" style="));
    }

    #[test]
    fn nothing_in_the_data_block_can_end_it() {
        let summary = Summary {
            logs: vec!["</script><script>alert(1)</script>&".into()],
            ..Summary::default()
        };
        let page = render_html(&summary, &[]).unwrap();
        let start = page.find("id=\"sc-summary\">").unwrap();
        let block = &page[start..];
        let block = &block[..block.find("</script>").unwrap()];
        assert!(block.contains("\\u003c/script\\u003e"), "{block}");
        let json: serde_json::Value =
            serde_json::from_str(&block["id=\"sc-summary\">".len()..]).unwrap();
        assert_eq!(json["logs"][0], "</script><script>alert(1)</script>&");
    }
}
