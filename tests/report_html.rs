//! `sc-report --format html` as people and tools meet it: the page of the demo crew, parsed as HTML
//! and held to the JSON report's numbers; a log written by a hostile agent, parsed the same way;
//! chains verified and broken; `--output` whole or not at all; and the page in a real headless
//! Chromium (the approval card's harness, tests/web.rs) with JavaScript off and on.

use std::collections::BTreeSet;
use std::path::Path;

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::Client;
use scraper::{ElementRef, Html, Selector};
use serde_json::{json, Value};

use crate::util::{run_demo, Scratch};
use crate::web::{find, runtime, screenshot_path, text_of, ChromeDriver};

fn select<'a>(page: &'a Html, css: &str) -> Vec<ElementRef<'a>> {
    let selector = Selector::parse(css).unwrap_or_else(|err| panic!("{css}: {err}"));
    page.select(&selector).collect()
}

fn text(element: &ElementRef) -> String {
    element.text().collect::<String>()
}

/// The number a tile shows.
fn tile(page: &Html, key: &str) -> u64 {
    let shown = select(page, &format!("#tile-{key} dd"));
    assert_eq!(shown.len(), 1, "one tile {key}");
    text(&shown[0])
        .replace(',', "")
        .trim()
        .parse()
        .unwrap_or_else(|err| panic!("tile {key}: {err}"))
}

/// sc-report with these arguments; its exit code, stdout and stderr.
fn report(scratch: &Scratch, args: &[&str]) -> (i32, String, String) {
    let out = scratch
        .cmd_report_args(args)
        .output()
        .expect("run sc-report");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The page's embedded summary.
fn embedded(page: &Html) -> Value {
    let blocks = select(page, "script#sc-summary");
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].value().attr("type"), Some("application/json"));
    serde_json::from_str(&text(&blocks[0])).expect("the data block is JSON")
}

#[test]
fn the_demo_page_shows_the_json_reports_numbers_with_a_timeline_and_agent_bars() {
    let scratch = Scratch::new();
    run_demo(&scratch);
    let (code, json, _) = report(&scratch, &["--format", "json"]);
    assert_eq!(code, 0);
    let json: Value = serde_json::from_str(&json).unwrap();
    let (code, html, stderr) = report(&scratch, &["--format", "html", "--verify"]);
    assert_eq!(code, 0, "{stderr}");
    let page = Html::parse_document(&html);
    assert!(page.errors.is_empty(), "{:?}", page.errors);

    // The tiles are the JSON report's numbers.
    assert_eq!(tile(&page, "calls"), json["calls"]);
    assert_eq!(tile(&page, "by-grant"), json["allowedByGrant"]);
    for (key, group, field) in [
        ("allow", "decisions", "allow"),
        ("hold", "decisions", "hold"),
        ("deny", "decisions", "deny"),
        ("approved", "holds", "approved"),
        ("declined", "holds", "declined"),
        ("unanswered", "holds", "unanswered"),
        ("executed", "outcomes", "executed"),
        ("skipped", "outcomes", "skipped"),
        ("failed", "outcomes", "failed"),
    ] {
        assert_eq!(tile(&page, key), json[group][field], "{key}");
    }
    // The demo: one call each allowed, held and approved, denied.
    assert_eq!(
        [
            tile(&page, "allow"),
            tile(&page, "hold"),
            tile(&page, "deny")
        ],
        [1, 1, 1]
    );

    // The timeline: an SVG of stacked bars, whose table adds up to the decisions.
    let timeline = select(&page, "#timeline-chart svg");
    assert_eq!(timeline.len(), 1, "a timeline chart");
    let bars = select(&page, "#timeline-chart svg rect");
    assert!(
        bars.len() >= 3,
        "three stacked parts at least: {}",
        bars.len()
    );
    let mut sums = [0u64; 3];
    for row in select(&page, "#timeline-table tbody tr") {
        let cells: Vec<u64> = row
            .select(&Selector::parse("td.n").unwrap())
            .map(|td| text(&td).replace(',', "").parse().unwrap())
            .collect();
        for (sum, cell) in sums.iter_mut().zip(cells) {
            *sum += cell;
        }
    }
    assert_eq!(sums, [1, 1, 1]);
    assert!(text(&select(&page, "#timeline figcaption")[0]).contains("per minute"));

    // Per agent: a bar per agent, and the same table as the text report.
    assert_eq!(select(&page, "#agents-chart svg").len(), 1);
    let labels: Vec<String> = select(&page, "#agents-chart svg text")
        .iter()
        .map(text)
        .map(|t| t.trim().to_owned())
        .collect();
    let agents = json["agents"].as_array().unwrap();
    for agent in agents {
        let name = agent["agent"].as_str().unwrap();
        assert!(labels.iter().any(|l| l == name), "{name} in {labels:?}");
    }
    let rows = select(&page, "#agent-table tbody tr");
    assert_eq!(rows.len(), agents.len());
    for (row, agent) in rows.iter().zip(agents) {
        let cells: Vec<String> = row
            .select(&Selector::parse("td").unwrap())
            .map(|td| text(&td))
            .collect();
        assert_eq!(cells[0], agent["agent"].as_str().unwrap());
        let numbers: Vec<u64> = cells[1..].iter().map(|c| c.parse().unwrap()).collect();
        let expected: Vec<u64> = [
            "calls",
            "allow",
            "hold",
            "deny",
            "approved",
            "declined",
            "unanswered",
            "executed",
            "allowedByGrant",
        ]
        .iter()
        .map(|k| agent[k].as_u64().unwrap())
        .collect();
        assert_eq!(numbers, expected);
    }

    // Vetoes: the JSON report's, with the call's arguments.
    let vetoes = select(&page, "#veto-table tbody tr");
    assert_eq!(vetoes.len(), json["vetoes"].as_array().unwrap().len());
    let veto = &json["vetoes"][0];
    let cells: Vec<String> = vetoes[0]
        .select(&Selector::parse("td").unwrap())
        .map(|td| text(&td))
        .collect();
    assert_eq!(cells[0], veto["kind"]);
    assert_eq!(cells[1], veto["agent"]);
    assert_eq!(cells[2], veto["tool"]);
    assert_eq!(cells[3], r#"{"to":"attacker-wallet","amount":40}"#);
    assert_eq!(cells[4], veto["reasons"][0]);
    assert_eq!(cells[5], veto["id"]);

    // Taint, with its cause.
    let taint = select(&page, "#taint-table tbody tr");
    let tainted: Vec<&Value> = agents
        .iter()
        .filter(|a| a.get("tainted_by").is_some())
        .collect();
    assert_eq!(taint.len(), tainted.len());
    assert!(!tainted.is_empty());
    assert!(text(&taint[0]).contains(tainted[0]["tainted_by"].as_str().unwrap()));

    // The chain, in words.
    let chain = select(&page, "#logs tbody tr");
    assert_eq!(chain.len(), 1);
    assert!(
        text(&chain[0]).contains("verified: 7 events, intact"),
        "{}",
        text(&chain[0])
    );
    assert!(select(&page, "#chain-alert").is_empty());

    // The embedded numbers: the JSON report's summary without its vetoes.
    let data = embedded(&page);
    for key in [
        "logs",
        "events",
        "calls",
        "decisions",
        "holds",
        "outcomes",
        "agents",
    ] {
        assert_eq!(data[key], json[key], "{key}");
    }
    assert!(data.get("vetoes").is_none());
    assert_eq!(data["vetoCount"], 1);
    assert_eq!(data["chains"][0]["status"], "verified");

    // Nothing to load, nothing to run.
    let policy = select(&page, "meta[http-equiv=Content-Security-Policy]");
    assert_eq!(policy.len(), 1);
    let policy = policy[0].value().attr("content").unwrap();
    assert!(
        policy.starts_with("default-src 'none'; style-src 'sha256-"),
        "{policy}"
    );
    assert!(!policy.contains("unsafe"), "{policy}");
    assert_eq!(select(&page, "script").len(), 1, "the data block only");
    for attribute in ["src", "href", "srcset", "action", "style"] {
        assert!(
            select(&page, &format!("[{attribute}]")).is_empty(),
            "no {attribute}="
        );
    }
}

/// Strings a hostile agent might write, to break out of text, attributes, the SVG or the data
/// block, or to make text read backwards.
const HOSTILE: [&str; 6] = [
    "<script>alert('agent')</script>",
    "</svg><img src=x onerror=alert(1)>",
    "\" onmouseover=\"alert(2)\" x=\"",
    "' onerror='alert(3)",
    "pay\u{202e}tellaw-rekcatta\u{202c} now",
    "</script><script>alert(4)</script><!--",
];

fn hostile_log() -> String {
    let mut lines = Vec::new();
    for (n, &text) in HOSTILE.iter().enumerate() {
        let id = format!("{text}-{n}");
        let taint = json!({"agent": text, "tool": text, "id": text, "argument": text});
        lines.push(json!({
            "ts": format!("2026-11-30T16:{:02}:00Z", n), "stage": "gate", "id": id,
            "decision": if n % 2 == 0 { "deny" } else { "hold" },
            "reasons": [text, format!("because {text}")],
            "call": {"agent": text, "tool": text, "args": {"to": text, text: [text]}, "source": "user"},
            "agentState": {"taintedBy": taint, "spent": 0},
        }));
        if n % 2 == 1 {
            lines.push(json!({
                "ts": "2026-11-30T17:00:00Z", "stage": "approve", "id": id, "agent": text, "tool": text,
                "approval": {"approved": false, "by": "answers", "answer": "no", "reason": text},
            }));
        }
        lines.push(json!({"ts": text, "stage": "state", "id": text, "agent": text}));
        lines.push(json!({"ts": "2026-11-30T17:00:00Z", "stage": text, "id": text}));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn a_hostile_log_puts_no_markup_and_no_invisible_characters_in_the_page() {
    let scratch = Scratch::new();
    scratch.write("logs/audit.jsonl", hostile_log());
    let (code, html, stderr) = report(&scratch, &["--format", "html"]);
    assert_eq!(code, 0, "{stderr}");
    let page = Html::parse_document(&html);
    assert!(page.errors.is_empty(), "{:?}", page.errors);

    // Only the elements the page is made of, and no attribute a hostile string could have made.
    let allowed: BTreeSet<&str> = [
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "header",
        "h1",
        "h2",
        "h3",
        "p",
        "time",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "code",
        "strong",
        "span",
        "section",
        "div",
        "dl",
        "dt",
        "dd",
        "figure",
        "figcaption",
        "details",
        "summary",
        "footer",
        "script",
        "svg",
        "rect",
        "text",
        "line",
        "polyline",
        "g",
    ]
    .into();
    let every = select(&page, "*");
    for element in &every {
        let name = element.value().name();
        assert!(allowed.contains(name), "an injected <{name}>");
        for (attribute, value) in element.value().attrs() {
            assert!(
                !attribute.starts_with("on") && !["src", "href", "style"].contains(&attribute),
                "an injected {attribute}={value:?} on <{name}>"
            );
        }
    }
    assert_eq!(select(&page, "script").len(), 1);
    assert_eq!(select(&page, "svg").len(), 2);
    assert!(!html.contains('\u{202e}') && !html.contains('\u{202c}'));

    // Each string is there, as text: shown escaped, never run.
    let vetoes = select(&page, "#veto-table tbody tr");
    assert_eq!(vetoes.len(), HOSTILE.len());
    let shown = |s: &str| {
        s.replace('\u{202e}', "\\u{202e}")
            .replace('\u{202c}', "\\u{202c}")
    };
    for (row, hostile) in vetoes.iter().zip(HOSTILE) {
        let cells: Vec<String> = row
            .select(&Selector::parse("td").unwrap())
            .map(|td| text(&td))
            .collect();
        assert_eq!(cells[1], shown(hostile), "the agent");
        assert_eq!(cells[2], shown(hostile), "the tool");
        let args: Value = serde_json::from_str(
            &cells[3]
                .replace("\\u{202e}", "\u{202e}")
                .replace("\\u{202c}", "\u{202c}"),
        )
        .unwrap();
        assert_eq!(args, json!({"to": hostile, hostile: [hostile]}));
        assert!(cells[4].starts_with(&shown(hostile)), "{}", cells[4]);
    }
    let taint: Vec<String> = select(&page, "#taint-table tbody tr td:first-child")
        .iter()
        .map(text)
        .collect();
    assert_eq!(taint.len(), HOSTILE.len());
    let labels: Vec<String> = select(&page, "#agents-chart svg text")
        .iter()
        .map(|t| text(t).trim().to_owned())
        .collect();
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("&lt;") || l.starts_with("<script")),
        "{labels:?}"
    );
    assert_eq!(select(&page, "#reset-table tbody tr").len(), HOSTILE.len());
    assert_eq!(
        select(&page, "#problem-table tbody tr").len(),
        HOSTILE.len()
    );

    // The data block holds the strings as they were, and nothing in it ended it early.
    let data = embedded(&page);
    let names: BTreeSet<&str> = data["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent"].as_str().unwrap())
        .collect();
    assert_eq!(names, HOSTILE.into_iter().collect());
}

#[test]
fn a_broken_chain_is_said_in_words_at_the_top_and_fails_the_run() {
    let scratch = Scratch::new();
    run_demo(&scratch);
    let (code, html, _) = report(&scratch, &["--format", "html"]);
    assert_eq!(code, 0);
    let page = Html::parse_document(&html);
    assert!(text(&select(&page, "#logs tbody tr")[0]).contains("not verified"));
    assert_eq!(embedded(&page)["chains"][0]["status"], "not verified");

    let log = std::fs::read_to_string(scratch.audit_path()).unwrap();
    assert!(log.contains(r#""amount":40"#));
    std::fs::write(
        scratch.audit_path(),
        log.replacen(r#""amount":40"#, r#""amount":4"#, 1),
    )
    .unwrap();
    let (code, html, stderr) = report(&scratch, &["--format", "html", "--verify"]);
    assert_eq!(code, 1, "a broken chain fails the run");
    assert!(stderr.contains("broken"), "{stderr}");
    let page = Html::parse_document(&html);
    let alert = select(&page, "header #chain-alert");
    assert_eq!(alert.len(), 1, "said at the top");
    assert!(text(&alert[0]).starts_with("Chain broken"));
    let row = text(&select(&page, "#logs tbody tr")[0]);
    assert!(row.contains("broken: chain broken at line"), "{row}");
    assert_eq!(embedded(&page)["chains"][0]["status"], "broken");
    // The numbers are still shown.
    assert_eq!(tile(&page, "calls"), 3);
}

#[test]
fn filters_fail_on_and_output_work_as_for_the_other_formats() {
    let scratch = Scratch::new();
    run_demo(&scratch);
    // --agent: the same numbers as the JSON report with it.
    let (_, json, _) = report(&scratch, &["--format", "json", "--agent", "buyer"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    let (code, html, _) = report(&scratch, &["--format", "html", "--agent", "buyer"]);
    assert_eq!(code, 0);
    let page = Html::parse_document(&html);
    assert_eq!(tile(&page, "calls"), 1);
    assert_eq!(embedded(&page)["decisions"], json["decisions"]);
    assert!(text(&select(&page, "#filter")[0]).contains("buyer"));
    // --until before everything: nothing counted, and the page says so.
    let (code, html, _) = report(
        &scratch,
        &["--format", "html", "--until", "2000-01-01T00:00:00Z"],
    );
    assert_eq!(code, 0);
    let page = Html::parse_document(&html);
    assert_eq!(tile(&page, "calls"), 0);
    assert!(text(&select(&page, "#timeline")[0]).contains("No call with a valid time"));

    // --output: the page in the file, nothing on stdout; --fail-on still fails the run.
    let out = scratch.path("out/report.html");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let target = out.display().to_string();
    let (code, stdout, stderr) = report(
        &scratch,
        &["--format", "html", "--output", &target, "--fail-on", "deny"],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("failing on"), "{stderr}");
    assert!(stdout.is_empty());
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(written.starts_with("<!DOCTYPE html>") && written.ends_with("</html>\n"));
    for format in ["text", "json", "markdown"] {
        let (code, stdout, _) = report(&scratch, &["--format", format, "-o", &target]);
        assert_eq!((code, stdout.as_str()), (0, ""));
        let (_, direct, _) = report(&scratch, &["--format", format]);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), direct, "{format}");
    }
    // A report that fails leaves the file as it was, and no temporary file beside it.
    let before = std::fs::read_to_string(&out).unwrap();
    let out_missing_log = scratch
        .cmd_report_args(&["--format", "html", "-o", &target])
        .arg(scratch.path("no-such.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out_missing_log.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), before);
    let beside: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, vec![std::ffi::OsString::from("report.html")]);
    // A file that cannot be written: exit 1, said on stderr.
    let nowhere = scratch
        .path("no/such/folder/report.html")
        .display()
        .to_string();
    let (code, stdout, stderr) = report(&scratch, &["--format", "html", "-o", &nowhere]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert!(stderr.contains("cannot write"), "{stderr}");
}

/// sc-report in the scratch folder, with only the arguments given.
fn plain_report(scratch: &Scratch) -> std::process::Command {
    let mut cmd = std::process::Command::new(crate::util::bin_path("sc-report"));
    cmd.env_clear().current_dir(scratch.path(""));
    cmd
}

#[test]
fn output_never_replaces_a_log_it_reads_and_is_private_and_a_far_future_time_is_no_panic() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new();
    // A time RFC 3339 cannot write past (year 9999 ends within the bucket): every format reports.
    let log = scratch.write(
        "far.jsonl",
        r#"{"ts":"9999-12-31T23:59:30Z","stage":"gate","id":"a","call":{"agent":"x","tool":"t","args":{}},"decision":"allow","reasons":["r"]}"#
            .to_owned()
            + "\n",
    );
    let log_text = std::fs::read_to_string(&log).unwrap();
    for format in ["html", "text", "json", "markdown"] {
        let out = plain_report(&scratch)
            .args(["--format", format])
            .arg(&log)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // --output naming the log read, or a symlink to it: refused, the log untouched, nothing beside.
    let link = scratch.path("link.jsonl");
    std::os::unix::fs::symlink(&log, &link).unwrap();
    for target in [&log, &link] {
        let out = plain_report(&scratch)
            .args(["--format", "html", "--output"])
            .arg(target)
            .arg(&log)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("refusing to replace it"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), log_text);
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }
    // The page carries vetoed calls' arguments: written 0600, as the audit log is.
    let page = scratch.path("page.html");
    let out = plain_report(&scratch)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let mode = std::fs::metadata(&page).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn agent_written_text_in_the_data_block_is_cut_so_the_page_stays_bounded() {
    let scratch = Scratch::new();
    // 200 problems quoting a 20,000-character stage name, and an agent name as long.
    let long = "<".repeat(20_000);
    let mut lines = String::new();
    for n in 0..200 {
        lines.push_str(&format!(
            r#"{{"ts":"2026-12-01T00:00:00Z","stage":"{long}","id":"p{n}"}}"#
        ));
        lines.push('\n');
    }
    lines.push_str(&format!(
        r#"{{"ts":"2026-12-01T00:00:00Z","stage":"gate","id":"a","call":{{"agent":"{long}","tool":"t","args":{{}}}},"decision":"allow","reasons":["r"]}}"#
    ));
    lines.push('\n');
    let log = scratch.write("long.jsonl", lines.clone());
    let out = plain_report(&scratch)
        .args(["--format", "html"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = String::from_utf8(out.stdout).unwrap();
    // Each problem and name is cut to a few hundred characters on the page and in its data
    // block (uncut, the block alone held 200 × 20,000 `\u003c`, 24 MB).
    assert!(
        html.len() < 2_000_000,
        "a page of {} bytes for a log of {}",
        html.len(),
        lines.len()
    );
    let page = Html::parse_document(&html);
    let data = embedded(&page);
    assert_eq!(data["problemCount"], 200);
    assert!(data["agents"][0]["agent"].as_str().unwrap().ends_with('…'));
}

// ---------------------------------------------------------------------------------------------
// In a real browser

/// chromedriver's log of one kind (`browser` or `performance`) since the last read.
#[derive(Debug)]
struct Log(&'static str);

impl WebDriverCompatibleCommand for Log {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({"type": self.0}).to_string()),
        )
    }
}

/// What a page did while it loaded: the URLs it requested (from Chrome's performance log, every
/// `Network.requestWillBeSent`) and the console messages that name the Content Security Policy
/// (from its browser log, where Chrome says what a policy refused).
async fn activity(browser: &Client) -> (Vec<String>, Vec<String>) {
    let performance = browser
        .issue_cmd(Log("performance"))
        .await
        .expect("the performance log");
    let mut requests = Vec::new();
    for entry in performance.as_array().expect("log entries") {
        let message: Value =
            serde_json::from_str(entry["message"].as_str().unwrap_or("{}")).unwrap_or_default();
        if message["message"]["method"] == "Network.requestWillBeSent" {
            let url = &message["message"]["params"]["request"]["url"];
            requests.push(url.as_str().unwrap_or_default().to_owned());
        }
    }
    let console = browser
        .issue_cmd(Log("browser"))
        .await
        .expect("the browser log");
    let violations = console
        .as_array()
        .expect("log entries")
        .iter()
        .filter_map(|entry| entry["message"].as_str())
        .filter(|message| message.contains("Content Security Policy"))
        .map(str::to_owned)
        .collect();
    (requests, violations)
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

#[test]
fn the_page_in_a_real_browser_with_javascript_off_and_on_loads_nothing_and_breaks_no_policy() {
    let scratch = Scratch::new();
    run_demo(&scratch);
    let page_path = scratch.path("report.html");
    // Named as `make report` names it, so that the screenshot shows no scratch folder.
    let made = std::process::Command::new(crate::util::bin_path("sc-report"))
        .env_clear()
        .current_dir(scratch.dir.path())
        .args([
            "--format",
            "html",
            "--verify",
            "-o",
            "report.html",
            "logs/audit.jsonl",
        ])
        .output()
        .expect("run sc-report");
    assert!(made.status.success(), "{made:?}");
    let page_url = file_url(&page_path);
    // Controls, so that the checks below can fail: the same policy refusing an image is logged
    // as a violation; with no policy, the image is requested; a <noscript> shows JavaScript off.
    let image = "<img src=\"http://127.0.0.1:9/tracker.png\" alt=\"\">";
    let refused = scratch.write(
        "refused.html",
        format!(
            "<!DOCTYPE html><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">{image}"
        ),
    );
    let loaded = scratch.write("loaded.html", format!("<!DOCTYPE html>{image}"));
    let noscript = scratch.write(
        "noscript.html",
        "<!DOCTYPE html><noscript><p id=\"off\">off</p></noscript><p id=\"here\">here</p>",
    );
    let driver = ChromeDriver::start();
    runtime().block_on(async {
        for javascript in [false, true] {
            let prefs = json!({
                "profile.managed_default_content_settings.javascript": if javascript { 1 } else { 2 },
            });
            let browser = driver
                .browser_with(
                    "--window-size=1100,1700",
                    json!({"prefs": prefs, "perfLoggingPrefs": {"enableNetwork": true, "enablePage": false}}),
                    json!({"goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"}}),
                )
                .await;
            let mode = if javascript { "on" } else { "off" };

            browser.goto(&file_url(&noscript)).await.expect("the noscript control");
            find(&browser, "#here").await;
            let off = browser.find_all(fantoccini::Locator::Css("#off")).await.unwrap();
            assert_eq!(off.len(), usize::from(!javascript), "JavaScript {mode}");
            activity(&browser).await;

            browser.goto(&page_url).await.expect("the page");
            let calls = text_of(&browser, "#tile-calls dd").await;
            assert_eq!(calls, "3", "JavaScript {mode}");
            assert!(text_of(&browser, "#logs").await.contains("verified"));
            find(&browser, "#timeline-chart svg rect").await;
            find(&browser, "#agents-chart svg rect").await;
            // The style block ran (its hash matched): the tiles are laid out in a row.
            let display = browser
                .find(fantoccini::Locator::Css("#tiles"))
                .await
                .unwrap()
                .css_value("display")
                .await
                .unwrap();
            assert_eq!(display, "flex", "the style sheet applies");
            let screenshot = browser.screenshot().await.expect("a screenshot");
            let name = format!("report-javascript-{mode}.png");
            std::fs::write(screenshot_path(&name), &screenshot).expect("save it");
            if !javascript && std::env::var_os("SC_REFRESH_SCREENSHOTS").is_some() {
                let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots/report.png");
                std::fs::write(docs, &screenshot).expect("refresh docs/screenshots/report.png");
            }
            let (requests, violations) = activity(&browser).await;
            assert!(violations.is_empty(), "JavaScript {mode}: {violations:?}");
            assert!(
                requests.iter().all(|url| *url == page_url),
                "JavaScript {mode}: the page requested {requests:?}"
            );

            browser.goto(&file_url(&refused)).await.unwrap();
            find(&browser, "img").await;
            let (requests, violations) = activity(&browser).await;
            // (Chrome lists a request the policy then blocks: the page's check above is the
            // stricter one, no request but the page's own.)
            let _ = requests;
            assert!(!violations.is_empty(), "the control's refusal is logged");

            browser.goto(&file_url(&loaded)).await.unwrap();
            find(&browser, "img").await;
            let (requests, violations) = activity(&browser).await;
            assert!(violations.is_empty());
            assert!(
                requests.iter().any(|url| url.contains("tracker")),
                "the control's request is logged: {requests:?}"
            );
            browser.close().await.expect("close the browser");
        }
    });
}

/// Calls an earlier approval allowed are counted on the page as in the JSON report: a tile, and
/// a column of the agents' table.
#[test]
fn the_page_counts_the_calls_an_earlier_approval_allowed() {
    let scratch = Scratch::new();
    scratch.write("logs/audit.jsonl", crate::report::granted_log());
    let (code, json, stderr) = report(&scratch, &["--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let json: Value = serde_json::from_str(&json).unwrap();
    let (code, html, stderr) = report(&scratch, &["--format", "html"]);
    assert_eq!(code, 0, "{stderr}");
    let page = Html::parse_document(&html);
    assert!(page.errors.is_empty(), "{:?}", page.errors);
    assert_eq!(json["allowedByGrant"], 3);
    assert_eq!(tile(&page, "by-grant"), 3);
    assert_eq!(text(&select(&page, "#tile-by-grant dt")[0]), "by grant");
    let headers: Vec<String> = select(&page, "#agent-table thead th")
        .iter()
        .map(text)
        .collect();
    assert_eq!(headers.last().map(String::as_str), Some("by grant"));
    let rows: Vec<Vec<String>> = select(&page, "#agent-table tbody tr")
        .iter()
        .map(|row| {
            row.select(&Selector::parse("td").unwrap())
                .map(|td| text(&td))
                .collect()
        })
        .collect();
    let by_grant: Vec<(&str, &str)> = rows
        .iter()
        .map(|row| (row[0].as_str(), row.last().unwrap().as_str()))
        .collect();
    assert_eq!(by_grant, [("buyer", "2"), ("fs", "1")]);
    assert_eq!(embedded(&page)["allowedByGrant"], 3);
    assert_eq!(embedded(&page)["agents"][0]["allowedByGrant"], 2);
}

/// Issue 33 ("the phone"): the HTML report of the demo log reads on a 390 px phone: the page does
/// not scroll sideways, no element is wider than the screen, the vetoes and their reasons wrap,
/// the charts scale, and no table cell is wider inside than it shows.
#[test]
fn the_report_of_the_demo_reads_on_a_phone_without_sideways_scrolling() {
    let scratch = Scratch::new();
    run_demo(&scratch);
    let made = std::process::Command::new(crate::util::bin_path("sc-report"))
        .env_clear()
        .current_dir(scratch.dir.path())
        .args(["--format", "html", "-o", "report.html", "logs/audit.jsonl"])
        .output()
        .expect("run sc-report");
    assert!(made.status.success(), "{made:?}");
    let page_url = file_url(&scratch.path("report.html"));
    let driver = ChromeDriver::start();
    runtime().block_on(async {
        let phone = driver
            .browser_with(
                "--window-size=390,844",
                json!({"mobileEmulation": {
                    "deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 2, "touch": true},
                }}),
                json!({}),
            )
            .await;
        phone.goto(&page_url).await.expect("the page");
        find(&phone, "#agents-chart svg rect").await;
        let page = phone
            .execute(
                r##"
const width = window.innerWidth;
const wide = [];
for (const el of document.querySelectorAll("body, body *")) {
  const r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) { continue; }
  if (r.left < -0.5 || r.right > width + 0.5) {
    wide.push(el.tagName + "#" + el.id + "." + el.className.baseVal + el.className + " " + Math.round(r.left) + ".." + Math.round(r.right));
  }
}
const cut = [...document.querySelectorAll("td, th, p, li, dd, figcaption")]
  .filter((el) => el.scrollWidth > el.clientWidth + 0.5)
  .map((el) => el.tagName + " " + el.textContent.slice(0, 40));
const charts = [...document.querySelectorAll(".chart svg")]
  .map((svg) => Math.round(svg.getBoundingClientRect().width));
const vetoes = document.querySelectorAll("#veto-table tr").length;
return { width, scrollWidth: document.documentElement.scrollWidth, wide, cut, charts, vetoes };
"##,
                vec![],
            )
            .await
            .expect("measure the page");
        assert_eq!(page["width"], 390, "{page:#}");
        assert!(
            page["scrollWidth"].as_u64().unwrap() <= 390,
            "the page scrolls sideways: {page:#}"
        );
        assert_eq!(page["wide"], json!([]), "{page:#}");
        assert_eq!(page["cut"], json!([]), "{page:#}");
        assert!(page["vetoes"].as_u64().unwrap() > 1, "{page:#}");
        for chart in page["charts"].as_array().unwrap() {
            assert!(chart.as_u64().unwrap() <= 390, "{page:#}");
        }
        phone
            .execute(
                "document.documentElement.style.scrollbarWidth = 'none';",
                vec![],
            )
            .await
            .expect("hide the scrollbar");
        let screenshot = phone.screenshot().await.expect("a screenshot");
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots");
        std::fs::write(docs.join("report-phone.png"), &screenshot).expect("save it");
        phone
            .execute(
                "document.querySelector('#veto-table').scrollIntoView();",
                vec![],
            )
            .await
            .expect("scroll to the vetoes");
        let screenshot = phone.screenshot().await.expect("a screenshot");
        std::fs::write(docs.join("report-phone-vetoes.png"), &screenshot).expect("save it");
        phone.close().await.expect("close the browser");
    });
}
