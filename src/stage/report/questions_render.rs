//! The questions report ([`Questions`]) as a section of each format: text, markdown, JSON and
//! the HTML page (a tile and a table).

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::question_rows::{QuestionRow, Questions, Repeat};
use crate::sanitize::for_terminal;

/// Seconds as the report shows them: `0.4 s`, `12 s`, `3.5 min`; `-` for none.
pub(crate) fn seconds_words(seconds: Option<f64>) -> String {
    match seconds {
        None => "-".to_owned(),
        Some(s) if s < 10.0 => format!("{s:.1} s"),
        Some(s) if s < 120.0 => format!("{s:.0} s"),
        Some(s) if s < 7200.0 => format!("{:.1} min", s / 60.0),
        Some(s) => format!("{:.1} h", s / 3600.0),
    }
}

fn share(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{:.0}%", v * 100.0))
}

fn rate(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
}

fn channels(row: &QuestionRow) -> String {
    if row.by_channel.is_empty() {
        return "-".to_owned();
    }
    row.by_channel
        .iter()
        .map(|(channel, n)| format!("{channel} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn rules(row: &QuestionRow) -> String {
    row.rules
        .iter()
        .map(|(rule, n)| format!("{rule} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn repeat_words(repeat: &Repeat, value: bool) -> String {
    if value {
        format!("value {} ×{}", for_terminal(&repeat.key), repeat.holds)
    } else {
        format!(
            "call {} ×{}",
            for_terminal(repeat.args.as_deref().unwrap_or(&repeat.key)),
            repeat.holds
        )
    }
}

fn repeats(row: &QuestionRow) -> Vec<String> {
    row.repeated_calls
        .iter()
        .map(|r| repeat_words(r, false))
        .chain(row.repeated_values.iter().map(|r| repeat_words(r, true)))
        .collect()
}

/// The text section.
pub(crate) fn text(out: &mut String, questions: &Questions) {
    let _ = writeln!(
        out,
        "\nQuestions put to a person ({} asked of {} holds)",
        questions.total_asked(),
        questions.total_holds()
    );
    if questions.rows.is_empty() {
        let _ = writeln!(out, "  none: no call was held");
        return;
    }
    for row in &questions.rows {
        let _ =
            writeln!(
            out,
            "  {} → {}: {} holds ({}{}), {} asked, {} approved ({}), {} per active hour over {} h",
            for_terminal(&row.agent),
            for_terminal(&row.tool),
            row.holds,
            if row.rules.is_empty() { "-".to_owned() } else { rules(row) },
            if row.settled_by_grant > 0 {
                format!("; {} settled by a grant", row.settled_by_grant)
            } else {
                String::new()
            },
            row.asked,
            row.approved,
            share(row.approval_rate()),
            rate(row.asked_per_active_hour()),
            row.active_hours,
        );
        let _ = writeln!(
            out,
            "    answer time: median {}, p90 {}, {} under 2 s; by {}",
            seconds_words(row.median_seconds),
            seconds_words(row.p90_seconds),
            share(row.under_2s_share()),
            channels(row),
        );
        for repeat in repeats(row) {
            let _ = writeln!(out, "    repeated: {repeat}");
        }
    }
}

fn cell(text: &str) -> String {
    for_terminal(text).replace('|', "\\|").replace('\n', " ")
}

/// The markdown section.
pub(crate) fn markdown(out: &mut String, questions: &Questions) {
    let _ = writeln!(
        out,
        "\n### Questions ({} asked of {} holds)\n",
        questions.total_asked(),
        questions.total_holds()
    );
    if questions.rows.is_empty() {
        let _ = writeln!(out, "No call was held.");
        return;
    }
    let _ = writeln!(out, "| agent | tool | holds | by grant | asked | approved | asked / active hour | median answer | p90 answer | under 2 s | by channel | repeated |");
    let _ = writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    );
    for row in &questions.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&row.agent),
            cell(&row.tool),
            row.holds,
            row.settled_by_grant,
            row.asked,
            row.approved,
            rate(row.asked_per_active_hour()),
            seconds_words(row.median_seconds),
            seconds_words(row.p90_seconds),
            share(row.under_2s_share()),
            cell(&channels(row)),
            cell(&repeats(row).join("; ")),
        );
    }
}

fn repeat_json(repeat: &Repeat, value: bool) -> Value {
    if value {
        json!({"value": repeat.key, "holds": repeat.holds})
    } else {
        json!({"digest": repeat.key, "args": repeat.args, "holds": repeat.holds})
    }
}

/// The JSON `questions` array.
pub(crate) fn json(questions: &Questions) -> Value {
    Value::Array(
        questions
            .rows
            .iter()
            .map(|row| {
                json!({
                    "agent": row.agent,
                    "tool": row.tool,
                    "rules": row.rules,
                    "holds": row.holds,
                    "settledByGrant": row.settled_by_grant,
                    "asked": row.asked,
                    "approved": row.approved,
                    "approvalRate": row.approval_rate(),
                    "activeHours": row.active_hours,
                    "askedPerActiveHour": row.asked_per_active_hour(),
                    "answered": row.answered,
                    "answerSeconds": {"median": row.median_seconds, "p90": row.p90_seconds},
                    "under2s": row.under_2s_share(),
                    "byChannel": row.by_channel,
                    "repeated": row.repeated_calls.iter().map(|r| repeat_json(r, false))
                        .chain(row.repeated_values.iter().map(|r| repeat_json(r, true)))
                        .collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in for_terminal(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page's tile: the questions asked.
pub(crate) fn html_tile(page: &mut String, questions: &Questions) {
    let _ = writeln!(
        page,
        "<div class=\"group\"><h3>Questions</h3><dl>\
         <div class=\"tile asked\" id=\"tile-asked\"><dt>asked</dt><dd>{}</dd></div>\
         <div class=\"tile asked-holds\" id=\"tile-asked-holds\"><dt>of holds</dt><dd>{}</dd></div>\
         </dl></div>",
        questions.total_asked(),
        questions.total_holds()
    );
}

/// The page's section: the table.
pub(crate) fn html_section(page: &mut String, questions: &Questions) {
    let _ = writeln!(
        page,
        "<section id=\"questions\">\n<h2>Questions put to a person ({} asked of {} holds)</h2>",
        questions.total_asked(),
        questions.total_holds()
    );
    if questions.rows.is_empty() {
        page.push_str("<p>No call was held.</p>\n</section>\n");
        return;
    }
    page.push_str(
        "<table id=\"question-table\">\n<thead><tr><th>agent</th><th>tool</th>\
         <th class=\"n\">holds</th><th class=\"n\">by grant</th><th class=\"n\">asked</th>\
         <th class=\"n\">approved</th><th class=\"n\">asked / active hour</th>\
         <th class=\"n\">median answer</th><th class=\"n\">p90 answer</th>\
         <th class=\"n\">under 2 s</th><th>by channel</th><th>repeated</th></tr></thead>\n<tbody>\n",
    );
    for row in &questions.rows {
        let _ = writeln!(
            page,
            "<tr><td><code>{}</code></td><td><code>{}</code></td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td>{}</td><td class=\"reasons\">{}</td></tr>",
            escape(&row.agent),
            escape(&row.tool),
            row.holds,
            row.settled_by_grant,
            row.asked,
            row.approved,
            rate(row.asked_per_active_hour()),
            seconds_words(row.median_seconds),
            seconds_words(row.p90_seconds),
            share(row.under_2s_share()),
            escape(&channels(row)),
            repeats(row)
                .iter()
                .map(|r| escape(r))
                .collect::<Vec<_>>()
                .join("<br>"),
        );
    }
    page.push_str("</tbody>\n</table>\n</section>\n");
}
