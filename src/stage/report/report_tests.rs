use serde_json::Value;

use super::event::*;
use super::summariser::*;
use super::*;
use crate::audit::scan::{chain_fields, ChainFields, MAX_DEPTH};
use crate::record::Approval;
use crate::record::Status;
use crate::rules::state::AgentState;
use crate::strict_json;
use std::borrow::Cow;

const LOG: &str = concat!(
    r#"{"ts":"t","stage":"gate","id":"1","decision":"allow","reasons":["ok"],"call":{"agent":"scout","tool":"search_web"}}"#,
    "\n",
    r#"{"ts":"t","stage":"gate","id":"2","decision":"hold","reasons":["amount 750 is above the hold limit of 100"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
    "\n",
    r#"{"ts":"t","stage":"gate","id":"3","decision":"deny","reasons":["injected"],"call":{"agent":"helper","tool":"send_payment"},"agentState":{"taintedBy":{"agent":"helper","tool":"fetch_page","id":"0","argument":"url=https://evil.test"},"spent":0.0}}"#,
    "\n",
    r#"{"ts":"t","stage":"gate","id":"4","decision":"hold","reasons":["big"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
    "\n",
    r#"{"ts":"t","stage":"gate","id":"5","decision":"hold","reasons":["big"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
    "\n",
    r#"{"ts":"t","stage":"approve","id":"2","agent":"buyer","tool":"send_payment","approval":{"approved":true,"by":"tty","answer":"yes","reason":"approved"}}"#,
    "\n",
    r#"{"ts":"t","stage":"approve","id":"4","agent":"buyer","tool":"send_payment","approval":{"approved":false,"by":"tty","answer":"no","reason":"declined: no"}}"#,
    "\n",
    r#"{"ts":"t","stage":"exec","id":"1","decision":"allow","outcome":{"status":"executed","reason":"r"}}"#,
    "\n",
    r#"{"ts":"t","stage":"exec","id":"2","decision":"hold","outcome":{"status":"executed","reason":"r"}}"#,
    "\n",
    r#"{"ts":"t","stage":"exec","id":"3","decision":"deny","outcome":{"status":"skipped","reason":"r"}}"#,
    "\n",
    r#"{"ts":"t","stage":"ex"#,
);

fn summary() -> Summary {
    summarise([("audit.jsonl".to_owned(), LOG.as_bytes())]).unwrap()
}

#[test]
fn counts_decisions_holds_and_outcomes() {
    let s = summary();
    assert_eq!(s.calls, 5);
    assert_eq!(
        s.decisions,
        DecisionCounts {
            allow: 1,
            hold: 3,
            deny: 1
        }
    );
    assert_eq!(
        s.holds,
        HoldCounts {
            approved: 1,
            declined: 1,
            unanswered: 1
        }
    );
    assert_eq!(
        s.outcomes,
        OutcomeCounts {
            executed: 2,
            skipped: 1,
            failed: 0
        }
    );
}

#[test]
fn lists_every_veto_with_reasons() {
    let s = summary();
    let kinds: Vec<_> = s.vetoes.iter().map(|v| (v.id.as_str(), v.kind)).collect();
    assert_eq!(kinds, [("3", "deny"), ("4", "declined")]);
    assert_eq!(s.vetoes[1].reasons, ["big", "declined: no"]);
}

#[test]
fn breaks_down_by_agent() {
    let s = summary();
    let buyer = s.agents.iter().find(|a| a.agent == "buyer").unwrap();
    assert_eq!(
        (
            buyer.calls,
            buyer.hold,
            buyer.approved,
            buyer.declined,
            buyer.unanswered,
            buyer.executed
        ),
        (3, 3, 1, 1, 1, 1)
    );
}

#[test]
fn says_who_was_tainted_by_what() {
    let s = summary();
    let helper = s.agents.iter().find(|a| a.agent == "helper").unwrap();
    assert_eq!(
        helper.tainted_by.as_deref(),
        Some("fetch_page (id 0, url=https://evil.test) by helper")
    );
    assert!(render_text(&s).contains("helper tainted by fetch_page (id 0, url=https://evil.test)"));
}

#[test]
fn the_agent_filter_keeps_one_agent() {
    let filter = Filter {
        agent: Some("buyer".into()),
        ..Filter::default()
    };
    let s = summarise_filtered([("audit.jsonl".to_owned(), LOG.as_bytes())], filter).unwrap();
    assert_eq!(s.calls, 3);
    assert_eq!(s.agents.len(), 1);
    assert_eq!(s.outcomes.executed, 1);
    assert!(s.vetoes.iter().all(|v| v.agent == "buyer"));
}

#[test]
fn the_time_window_keeps_events_inside_it() {
    let log = concat!(
        r#"{"ts":"2026-11-30T10:00:00Z","stage":"gate","id":"1","decision":"deny","reasons":["r"],"call":{"agent":"a","tool":"t"}}"#,
        "\n",
        r#"{"ts":"2026-11-30T12:00:00Z","stage":"gate","id":"2","decision":"allow","reasons":["r"],"call":{"agent":"a","tool":"t"}}"#,
        "\n",
        r#"{"ts":"2026-11-30T14:00:00Z","stage":"gate","id":"3","decision":"hold","reasons":["r"],"call":{"agent":"a","tool":"t"}}"#,
        "\n",
    );
    let filter = Filter {
        since: Some(parse_time("2026-11-30T11:00:00Z").unwrap()),
        until: Some(parse_time("2026-11-30 13:00:00").unwrap()),
        ..Filter::default()
    };
    let s = summarise_filtered([("l".to_owned(), log.as_bytes())], filter).unwrap();
    assert_eq!((s.calls, s.decisions.allow), (1, 1));
    assert!(parse_time("yesterday").is_err());
    assert_eq!(
        parse_time("2026-11-30").unwrap(),
        parse_time("2026-11-30T00:00:00Z").unwrap()
    );
}

#[test]
fn fail_on_names_what_occurred() {
    let s = summary();
    assert_eq!(
        failures(&s, &[FailOn::Deny, FailOn::Unanswered, FailOn::Failed]),
        ["1 deny", "1 unanswered"]
    );
    assert!(failures(&s, &[FailOn::Failed]).is_empty());
}

#[test]
fn colour_only_when_asked() {
    let s = summary();
    assert!(!render_text(&s).contains('\x1b'));
    assert!(render_text_with(&s, true).contains("\x1b[31mDENY"));
}

#[test]
fn markdown_matches_the_golden_file() {
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/report.golden.md");
    let rendered = render_markdown(&summary());
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &rendered).unwrap();
    }
    let expected = std::fs::read_to_string(&golden)
        .expect("testdata/report.golden.md (UPDATE_GOLDEN=1 writes it)");
    assert_eq!(rendered, expected);
}

#[test]
fn a_torn_last_line_is_a_problem_not_an_error() {
    let s = summary();
    assert_eq!(s.problems.len(), 1);
    assert_eq!(s.problems[0].line, 11);
    assert!(s.problems[0].problem.contains("torn"), "{:?}", s.problems);
}

#[test]
fn text_and_json_show_the_same_numbers() {
    let s = summary();
    let text = render_text(&s);
    for expected in [
        "5 calls: 1 allow, 3 hold, 1 deny",
        "1 approved, 1 declined, 1 never answered",
        "2 executed, 1 skipped, 0 failed",
        "DENY",
        "DECLINED",
        "line 11",
    ] {
        assert!(text.contains(expected), "{expected}:\n{text}");
    }
    let json: Value = serde_json::from_str(&render_json(&s)).unwrap();
    assert_eq!(json["decisions"]["hold"], 3);
    assert_eq!(json["holds"]["unanswered"], 1);
    assert_eq!(json["vetoes"].as_array().unwrap().len(), 2);
}

fn event_line(value: Value) -> String {
    value.to_string()
}

fn gate(id: &str, agent: &str, decision: &str) -> String {
    event_line(serde_json::json!({
        "ts": "2026-11-30T16:00:00Z", "stage": "gate", "id": id, "decision": decision,
        "reasons": [format!("why {id}")],
        "call": {"agent": agent, "tool": "send_payment", "args": {"amount": 5}},
        "agentState": {"spent": 0.0},
    }))
}

fn approve(id: &str, agent: &str, approved: bool) -> String {
    event_line(serde_json::json!({
        "ts": "2026-11-30T16:00:00Z", "stage": "approve", "id": id, "agent": agent,
        "tool": "send_payment",
        "approval": {"approved": approved, "by": "answers", "answer": "a",
                     "reason": if approved { "approved: yes" } else { "declined: no" }},
    }))
}

fn exec(id: &str, agent: &str, status: &str) -> String {
    event_line(serde_json::json!({
        "ts": "2026-11-30T16:00:00Z", "stage": "exec", "id": id, "agent": agent,
        "tool": "send_payment", "decision": "allow",
        "outcome": {"status": status, "reason": "r", "result": {"n": [1, {"x": null}]}},
    }))
}

fn run_with(lines: &[String], summariser: Summariser) -> Summary {
    let mut summariser = summariser;
    let log = lines.join("\n");
    summariser.read_log("audit.jsonl", log.as_bytes()).unwrap();
    summariser.finish().unwrap()
}

/// Summarised with a window of `window` events.
fn run(lines: &[String], window: u64) -> Summary {
    run_with(lines, Summariser::new().with_window(window))
}

/// Everything a summary shows.
#[allow(clippy::type_complexity)]
fn shown(
    s: &Summary,
) -> (
    u64,
    u64,
    DecisionCounts,
    HoldCounts,
    OutcomeCounts,
    u64,
    Vec<Veto>,
    Vec<AgentSummary>,
    Vec<Problem>,
) {
    (
        s.events,
        s.calls,
        s.decisions.clone(),
        s.holds.clone(),
        s.outcomes.clone(),
        s.veto_count,
        s.vetoes.clone(),
        s.agents.clone(),
        s.problems.clone(),
    )
}

fn filler(count: usize) -> Vec<String> {
    (0..count)
        .map(|n| gate(&format!("fill-{n}"), "scout", "allow"))
        .collect()
}

#[test]
fn calls_leave_the_window_so_memory_stays_bounded() {
    let mut summariser = Summariser::new().with_window(100);
    let log = filler(10_000).join("\n");
    summariser
        .read_log("gate-only.jsonl", log.as_bytes())
        .unwrap();
    assert!(summariser.calls.len() <= 100, "{}", summariser.calls.len());
    assert!(summariser.ids.len() <= 100, "{}", summariser.ids.len());
    let s = summariser.finish().unwrap();
    assert_eq!(
        (s.events, s.calls, s.decisions.allow),
        (10_000, 10_000, 10_000)
    );
}

#[test]
fn a_late_answer_moves_a_folded_hold() {
    let mut lines = vec![
        gate("h-yes", "buyer", "hold"),
        gate("h-no", "buyer", "hold"),
    ];
    lines.extend(filler(5));
    // Both holds have left a window of 3 events, counted as never answered.
    let before = run(&lines, 3);
    assert_eq!(
        before.holds,
        HoldCounts {
            approved: 0,
            declined: 0,
            unanswered: 2
        }
    );
    lines.push(approve("h-yes", "buyer", true));
    lines.push(approve("h-no", "buyer", false));
    let folded = run(&lines, 3);
    let whole = run(&lines, u64::MAX);
    let expected = HoldCounts {
        approved: 1,
        declined: 1,
        unanswered: 0,
    };
    assert_eq!((&folded.holds, &whole.holds), (&expected, &expected));
    assert_eq!(folded.agents, whole.agents);
    let buyer = folded.agents.iter().find(|a| a.agent == "buyer").unwrap();
    assert_eq!(
        (buyer.approved, buyer.declined, buyer.unanswered),
        (1, 1, 0)
    );
    // The veto of a late decline names the answer only: the gate's reasons left with it.
    assert_eq!(folded.veto_count, 1);
    assert_eq!(
        (folded.vetoes[0].id.as_str(), folded.vetoes[0].kind),
        ("h-no", "declined")
    );
    assert_eq!(folded.vetoes[0].reasons, ["declined: no"]);
    assert_eq!(whole.vetoes[0].reasons, ["why h-no", "declined: no"]);
}

#[test]
fn a_late_outcome_adds_to_the_outcomes() {
    let mut lines = vec![gate("a", "buyer", "allow"), gate("d", "buyer", "deny")];
    lines.extend(filler(5));
    lines.push(exec("a", "buyer", "executed"));
    lines.push(exec("d", "buyer", "skipped"));
    let folded = run(&lines, 3);
    let whole = run(&lines, u64::MAX);
    assert_eq!(shown(&folded), shown(&whole));
    assert_eq!(
        folded.outcomes,
        OutcomeCounts {
            executed: 1,
            skipped: 1,
            failed: 0
        }
    );
    assert_eq!(folded.calls, 7);
    let buyer = folded.agents.iter().find(|a| a.agent == "buyer").unwrap();
    assert_eq!((buyer.calls, buyer.executed), (2, 1));
}

#[test]
fn late_events_for_ids_never_seen_count_as_they_always_did() {
    let mut lines = vec![gate("a", "buyer", "allow"), exec("a", "buyer", "executed")];
    lines.extend(filler(5));
    // Nothing of buyer's is waiting: an approval alone is no call, an outcome is counted.
    lines.push(approve("ghost", "buyer", false));
    lines.push(exec("ghost", "buyer", "failed"));
    let folded = run(&lines, 3);
    assert_eq!(shown(&folded), shown(&run(&lines, u64::MAX)));
    assert_eq!(folded.holds, HoldCounts::default());
    assert_eq!((folded.calls, folded.outcomes.failed), (6, 1));
    let buyer = folded.agents.iter().find(|a| a.agent == "buyer").unwrap();
    assert_eq!((buyer.calls, buyer.executed), (1, 1));
    assert_eq!(folded.veto_count, 0);
}

#[test]
fn a_second_gate_event_is_a_problem_while_the_first_is_in_the_window() {
    let mut lines = vec![gate("a", "buyer", "allow"), gate("a", "buyer", "deny")];
    lines.extend(filler(5));
    let s = run(&lines, 3);
    assert_eq!(s.problems.len(), 1, "{:?}", s.problems);
    assert!(s.problems[0]
        .problem
        .contains("a second gate event for id a"));
    assert_eq!((s.calls, s.decisions.deny), (6, 0));
}

fn denials(count: usize) -> Vec<String> {
    (0..count)
        .map(|n| gate(&format!("d-{n:04}"), "helper", "deny"))
        .collect()
}

#[test]
fn page_details_add_a_timeline_and_the_vetoes_arguments_and_change_no_count() {
    let mut lines = denials(3);
    lines.push(gate("ok", "scout", "allow"));
    lines.push(gate("held", "buyer", "hold"));
    lines.push(approve("held", "buyer", false));
    let big = format!("{{\"blob\":\"{}\"}}", "é".repeat(ARGS_KEPT));
    lines.push(gate("big", "helper", "deny").replace(r#"{"amount":5}"#, &big));
    let plain = run(&lines, CALL_WINDOW_EVENTS);
    let mut detailed = run_with(&lines, Summariser::new().with_page_details());
    assert!(plain.timeline.is_none());
    assert!(plain.vetoes.iter().all(|v| v.args.is_none()));
    let args: Vec<String> = detailed
        .vetoes
        .iter_mut()
        .map(|v| v.args.take().unwrap())
        .collect();
    assert_eq!(shown(&plain), shown(&detailed));
    assert_eq!(args[..4], [r#"{"amount":5}"#; 4]);
    // Past the bytes kept: what was kept, cut on a character, marked as cut.
    assert!(args[4].starts_with(r#"{"blob":"éé"#) && args[4].ends_with('…'));
    assert!(args[4].len() <= ARGS_KEPT + '…'.len_utf8());
    let timeline = detailed.timeline.clone().unwrap();
    let bars = timeline.bars().unwrap();
    assert_eq!(bars.counts.len(), 1);
    assert_eq!(bars.counts[0], detailed.decisions);
    let at = parse_time("2026-11-30T16:00:00Z").unwrap();
    let at = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(timeline.span, Some((at, at)));
    // JSON is not changed by them.
    assert_eq!(render_json(&plain), render_json(&detailed));
}

#[test]
fn text_and_markdown_list_the_first_thousand_vetoes_and_say_how_to_see_the_rest() {
    let s = run(&denials(LISTED + 1), CALL_WINDOW_EVENTS);
    assert_eq!((s.veto_count, s.vetoes.len()), (1001, 1000));
    assert_eq!(s.vetoes[999].id, "d-0999");
    let text = render_text(&s);
    assert!(text.contains("\nVetoes (1001): calls denied"), "{text}");
    assert_eq!(text.matches("\n  DENY").count(), 1000);
    assert!(!text.contains("d-1000"));
    assert!(
        text.contains(
            "\n  … and 1 more; list them all with: sc-report --format json audit.jsonl\n"
        ),
        "{text}"
    );
    let markdown = render_markdown(&s);
    assert!(markdown.contains("### Vetoes (1001)"), "{markdown}");
    assert_eq!(markdown.matches("\n| **deny** |").count(), 1000);
    assert!(
        markdown.contains(
            "\n\n… and 1 more; list them all with: `sc-report --format json audit.jsonl`\n\n### By agent"
        ),
        "{markdown}"
    );
    // Exactly a thousand: nothing more to say.
    let s = run(&denials(LISTED), CALL_WINDOW_EVENTS);
    assert!(!render_text(&s).contains("more; list them all"));
    assert!(!render_markdown(&s).contains("more; list them all"));
}

#[test]
fn problems_are_listed_as_vetoes_are() {
    let lines: Vec<String> = (0..LISTED + 1).map(|n| format!("not json {n}")).collect();
    let s = run(&lines, CALL_WINDOW_EVENTS);
    assert_eq!((s.problem_count, s.problems.len()), (1001, 1000));
    let text = render_text(&s);
    assert!(text.contains("\nProblems in the logs (1001)\n"), "{text}");
    assert!(text.contains("audit.jsonl line 1000:") && !text.contains("line 1001:"));
    assert!(
        text.ends_with(
            "\n  … and 1 more; list them all with: sc-report --format json audit.jsonl\n"
        ),
        "{text}"
    );
    let markdown = render_markdown(&s);
    assert!(
        markdown.ends_with(
            "\n\n… and 1 more; list them all with: `sc-report --format json audit.jsonl`\n"
        ),
        "{markdown}"
    );
    let s = run_with(&lines, Summariser::new().keeping_everything().unwrap());
    let json: Value = serde_json::from_str(&render_json(&s)).unwrap();
    let problems = json["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1001);
    assert_eq!(problems[1000]["line"], 1001);
    assert!(problems[1000]["problem"]
        .as_str()
        .unwrap()
        .contains("torn or malformed"));
}

#[test]
fn the_command_that_lists_everything_keeps_the_filter() {
    let filter = Filter {
        agent: Some("it's me".into()),
        since: Some(parse_time("2026-11-30T16:00:00Z").unwrap()),
        until: None,
    };
    let mut summariser = Summariser::with_filter(filter);
    summariser.read_log("logs/a b.jsonl", &b""[..]).unwrap();
    summariser.read_log("logs/c.jsonl", &b""[..]).unwrap();
    let s = summariser.finish().unwrap();
    assert_eq!(
        s.list_everything,
        r"sc-report --format json --agent 'it'\''s me' --since 2026-11-30T16:00:00Z 'logs/a b.jsonl' logs/c.jsonl"
    );
}

#[test]
fn json_lists_every_veto_from_the_temporary_file() {
    let mut lines = denials(LISTED + 200);
    lines.insert(0, gate("held", "buyer", "hold"));
    lines.push(approve("held", "buyer", false));
    let summariser = Summariser::new().keeping_everything().unwrap();
    let s = run_with(&lines, summariser);
    // Only the first thousand are in memory.
    assert_eq!((s.veto_count, s.vetoes.len()), (1201, 1000));
    let json: Value = serde_json::from_str(&render_json(&s)).unwrap();
    let ids: Vec<&str> = json["vetoes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    let mut expected = vec!["held".to_owned()];
    expected.extend((0..LISTED + 200).map(|n| format!("d-{n:04}")));
    assert_eq!(ids, expected);
    assert_eq!(
        json["vetoes"][0]["reasons"],
        serde_json::json!(["why held", "declined: no"])
    );
    assert_eq!(
        json["vetoes"][1200]["reasons"],
        serde_json::json!(["why d-1199"])
    );
    // Without the file, a JSON report of more vetoes than are kept is refused, not cut.
    let s = run(&denials(LISTED + 1), CALL_WINDOW_EVENTS);
    assert!(write_json(&s, Vec::new()).is_err());
}

#[test]
fn json_is_written_as_a_derived_serialization_would_write_it() {
    for s in [
        summary(),
        run_with(
            &LOG.lines().map(str::to_owned).collect::<Vec<_>>(),
            Summariser::new().keeping_everything().unwrap(),
        ),
        run(&[], 3),
    ] {
        let expected = serde_json::json!({
            "logs": s.logs,
            "events": s.events,
            "calls": s.calls,
            "decisions": s.decisions,
            "allowedByGrant": s.allowed_by_grant,
            "holds": s.holds,
            "outcomes": s.outcomes,
            "vetoes": s.vetoes,
            "agents": s.agents,
            "problems": s.problems,
        });
        let expected = serde_json::to_string_pretty(&expected).unwrap() + "\n";
        assert_eq!(render_json(&s), expected);
    }
}

#[test]
fn the_scanner_reads_the_events_the_stages_write() {
    let granted: Vec<String> = GRANTED.lines().map(str::to_owned).collect();
    for line in [
        gate("g", "buyer", "hold"),
        approve("g", "buyer", true),
        exec("g", "buyer", "executed"),
        LOG.lines().nth(2).unwrap().to_owned(),
    ]
    .into_iter()
    .chain(granted)
    {
        let view = scan::event(&line).unwrap_or_else(|| panic!("{line}"));
        assert_eq!(seen(&view), seen(&reference(&line).unwrap()));
        assert!(chain_fields(&line).is_some(), "{line}");
    }
    // The bases of the properties below are read by the scanners, not left to the reader.
    for line in MANGLED_EVENTS {
        let view = scan::event(line).unwrap_or_else(|| panic!("{line}"));
        assert_eq!(seen(&view), seen(&reference(line).unwrap()));
        assert!(chain_fields(line).is_some(), "{line}");
    }
    let sealed = r#"{"stage":"gate","id":"1","seq":7,"prev":"00ff"}"#;
    assert_eq!(
        chain_fields(sealed),
        Some(ChainFields {
            prev: Some("00ff"),
            seq: Some(7)
        })
    );
}

#[test]
fn what_the_scanner_leaves_alone_is_still_counted() {
    // Deeper than the scanner goes, within what the strict reader takes.
    let deep = format!(
        r#"{{"stage":"gate","id":"x","decision":"deny","reasons":["r"],"call":{{"agent":"a","tool":"t","args":{{"n":{}1{}}}}}}}"#,
        "[".repeat(MAX_DEPTH),
        "]".repeat(MAX_DEPTH)
    );
    let escaped_key =
        r#"{"stage":"gate","\u0069d":"y","decision":"allow","call":{"agent":"a","tool":"t"}}"#;
    let exponent = r#"{"stage":"exec","id":"z","n":1e2,"agent":"a","outcome":{"status":"failed"}}"#;
    for line in [deep.as_str(), escaped_key, exponent] {
        assert!(scan::event(line).is_none(), "{line}");
    }
    let s = run(&[deep, escaped_key.into(), exponent.into()], 3);
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    assert_eq!((s.calls, s.decisions.deny, s.outcomes.failed), (2, 1, 1));
}

fn reference(text: &str) -> Option<EventView<'static>> {
    match strict_json::parse(text) {
        Ok(Value::Object(map)) => Some(EventView::of(Box::leak(Box::new(map)))),
        _ => None,
    }
}

/// What the summary reads of an event, however it was read.
#[allow(clippy::type_complexity)]
fn seen(
    view: &EventView,
) -> (
    [Option<String>; 6],
    Vec<String>,
    Option<(String, String)>,
    Option<AgentState>,
    Option<Approval>,
    Option<Status>,
    Option<Value>,
    (Option<bool>, bool),
) {
    let text = |t: &Option<Cow<str>>| t.as_deref().map(str::to_owned);
    (
        [
            text(&view.id),
            text(&view.stage),
            text(&view.ts),
            text(&view.decision),
            text(&view.agent),
            text(&view.tool),
        ],
        reason_strings(&kept_reasons(&view.reasons)),
        view.call
            .as_ref()
            .map(|(a, t)| (a.to_string(), t.to_string())),
        view.agent_state.as_ref().and_then(|state| match state {
            StateView::Text(text) => serde_json::from_str(text).ok(),
            StateView::Parsed(state) => Some(state.clone()),
        }),
        view.approval.clone(),
        view.status,
        // The arguments' text, read back: the scanner keeps it as written.
        view.args
            .as_deref()
            .map(|args| serde_json::from_str(args).expect("arguments are JSON")),
        (view.grants, view.allowed_by_grant()),
    )
}

/// Mangles `base` with edits of the bytes JSON cares about.
fn mangle(base: &str, edits: Vec<(usize, usize, &str)>) -> String {
    crate::json_lex::mangled(base, edits)
}

const MANGLED_EVENTS: [&str; 4] = [
    r#"{"ts":"2026-11-30T16:00:00Z","stage":"gate","id":"a-1","call":{"agent":"buyer","tool":"send_payment","args":{"to":"acme","amount":750,"memo":"a\"b"},"source":"user"},"decision":"hold","reasons":["amount 750 is above\n the limit",7],"agentState":{"taintedBy":{"agent":"buyer","tool":"fetch_page","id":"a-0","argument":"url=x"},"spent":1.5},"seq":3,"prev":"00ab"}"#,
    r#"{ "ts" : "t" , "stage" : "approve" , "id" : "a-1" , "agent" : "buyer" , "tool" : "send_payment" , "approval" : { "approved" : false , "by" : "tty" , "answer" : null , "reason" : "declined: \u00e9" } }"#,
    r#"{"ts":"t","stage":"exec","id":"a-1","agent":"b","tool":"t","decision":"allow","outcome":{"status":"executed","result":{"r":[{"u":"x"},-2.5,true]},"reason":"ran"},"seq":18446744073709551615}"#,
    r#"{"stage":"gate","id":"\u0061","decision":"deny","call":"not an object","reasons":"no","agentState":[],"outcome":{"status":"failed"},"prev":7}"#,
];

const MANGLES: [&str; 32] = [
    "\"",
    "\\",
    "\\u",
    "\\ud800",
    "\\u0061",
    "e5",
    "E",
    "0",
    "01",
    "-",
    ".",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    " ",
    "\t",
    "\n",
    "\u{1}",
    "é",
    "true",
    "nul",
    "1e999",
    "\"id\":\"x\",",
    "\"stage\":7,",
    "\"reasons\":[],",
    "\"call\":{},",
    "\"status\":\"skipped\",",
    "\"seq\":-0,",
    "\"prev\":\"\\u0030\",",
];

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

    /// Events cut, spliced and salted with the bytes JSON cares about: whatever the scanner
    /// accepts, the strict reader accepts, and reads the same.
    #[test]
    fn the_scanner_agrees_with_the_strict_reader_on_mangled_events(
        base in proptest::sample::select(MANGLED_EVENTS.to_vec()),
        edits in proptest::collection::vec(
            (0usize..300, 0usize..3, proptest::sample::select(MANGLES.to_vec())),
            0..4,
        ),
    ) {
        let text = mangle(base, edits);
        if let Some(view) = scan::event(&text) {
            let reference = reference(&text);
            proptest::prop_assert!(reference.is_some(), "{}", text);
            proptest::prop_assert_eq!(seen(&view), seen(&reference.unwrap()), "{}", text);
        }
    }

    /// The same for what `--verify` reads, against a plain JSON parser.
    #[test]
    fn the_chain_scanner_agrees_with_a_json_parser_on_mangled_events(
        base in proptest::sample::select(MANGLED_EVENTS.to_vec()),
        edits in proptest::collection::vec(
            (0usize..300, 0usize..3, proptest::sample::select(MANGLES.to_vec())),
            0..4,
        ),
    ) {
        let text = mangle(base, edits);
        if let Some(fields) = chain_fields(&text) {
            let parsed: Value = serde_json::from_str(&text).map_err(|e| {
                proptest::test_runner::TestCaseError::fail(format!("{e}: {text}"))
            })?;
            proptest::prop_assert!(parsed.is_object(), "{}", text);
            proptest::prop_assert_eq!(fields.prev, parsed.get("prev").and_then(Value::as_str));
            proptest::prop_assert_eq!(fields.seq, parsed.get("seq").and_then(Value::as_u64));
        }
    }

    /// Logs in which each call's events come within a few events of each other: a window
    /// that spans them counts exactly what joining the whole log counts, vetoes in the same
    /// order, with or without an agent filter.
    #[test]
    fn a_window_that_spans_each_call_counts_as_the_whole_log(
        calls in proptest::collection::vec(
            (0usize..3, 0usize..3, 0usize..4, 0usize..3, 0usize..4),
            0..40,
        ),
        orphans in proptest::collection::vec((0usize..60, proptest::bool::ANY), 0..4),
        filtered in proptest::bool::ANY,
    ) {
        let agents = ["buyer", "scout", "helper"];
        let mut timed = Vec::new();
        for (n, &(decision, answer, outcome, agent, lag)) in calls.iter().enumerate() {
            let id = format!("c-{n}");
            let agent = agents[agent];
            let decision = ["allow", "hold", "deny"][decision];
            let at = 4 * n;
            timed.push((at, gate(&id, agent, decision)));
            if decision == "hold" && answer > 0 {
                timed.push((at + lag + 1, approve(&id, agent, answer == 1)));
            }
            if outcome > 0 {
                let status = ["executed", "skipped", "failed"][outcome - 1];
                timed.push((at + 2 * lag + 2, exec(&id, agent, status)));
            }
        }
        for (k, (at, is_exec)) in orphans.into_iter().enumerate() {
            let id = format!("orphan-{k}");
            timed.push((at, if is_exec { exec(&id, "nobody", "failed") } else { approve(&id, "nobody", false) }));
        }
        timed.sort_by_key(|(at, _)| *at);
        let lines: Vec<String> = timed.into_iter().map(|(_, line)| line).collect();
        let filter = || Filter { agent: filtered.then(|| "buyer".to_owned()), ..Filter::default() };
        let windowed = run_with(&lines, Summariser::with_filter(filter()).with_window(16));
        let whole = run_with(&lines, Summariser::with_filter(filter()).with_window(u64::MAX));
        proptest::prop_assert_eq!(shown(&windowed), shown(&whole));
    }
}

/// Decision events of calls an earlier approval allowed (a grant), and of calls that only look
/// like one: sc-gate's, sc-mcp's and sc-hook's decisions are all `gate` events.
const GRANTED: &str = concat!(
    // Allowed by a grant: its `grants`, and its reason.
    r#"{"ts":"t","stage":"gate","id":"g1","decision":"allow","reasons":["allowed by grant gr-1 (given by web at 2026-12-01T17:00:00Z)"],"grants":["gr-1"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
    "\n",
    // An older event with the reason only, its quotes escaped, among other reasons.
    r#"{"ts":"t","stage":"gate","id":"g2","decision":"allow","reasons":["within policy","allowed by grant gr-2 (given by \"tty\" at 2026-12-01T17:01:00Z)"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
    "\n",
    // Its `grants` name the grant; its reasons do not say it (whitespace in the array).
    r#"{"ts":"t","stage":"gate","id":"g3","decision":"allow","reasons":["ok"],"grants":[ "gr-3" ],"call":{"agent":"scout","tool":"fetch_page"}}"#,
    "\n",
    // Not by a grant: `grants` is there and empty, whatever a reason says.
    r#"{"ts":"t","stage":"gate","id":"n1","decision":"allow","reasons":["allowed by grant gr-9 (given by web at t)"],"grants":[ ],"call":{"agent":"buyer","tool":"send_payment"}}"#,
    "\n",
    // Not by a grant: the words are not at the reason's start.
    r#"{"ts":"t","stage":"gate","id":"n2","decision":"allow","reasons":["note: allowed by grant gr-1 (given by web at t)"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
    "\n",
    // Not allowed: a hold, whatever it carries.
    r#"{"ts":"t","stage":"gate","id":"n3","decision":"hold","reasons":["allowed by grant gr-1 (given by web at t)"],"grants":["gr-1"],"call":{"agent":"buyer","tool":"send_payment"}}"#,
    "\n",
    // A plain allow.
    r#"{"ts":"t","stage":"gate","id":"n4","decision":"allow","reasons":["within policy"],"call":{"agent":"scout","tool":"search_web"}}"#,
    "\n",
);

#[test]
fn calls_allowed_by_an_earlier_approval_are_counted_per_agent_in_every_format() {
    let lines: Vec<String> = GRANTED.lines().map(str::to_owned).collect();
    for s in [
        run(&lines, 100),
        // Left alone by the scanner (a key escaped), read by the strict reader: the same.
        run(
            &lines
                .iter()
                .map(|line| line.replacen("\"ts\"", "\"\\u0074s\"", 1))
                .collect::<Vec<_>>(),
            100,
        ),
    ] {
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!((s.calls, s.decisions.allow), (7, 6));
        assert_eq!(s.allowed_by_grant, 3);
        let by_agent: Vec<(&str, u64, u64)> = s
            .agents
            .iter()
            .map(|a| (a.agent.as_str(), a.allow, a.allowed_by_grant))
            .collect();
        assert_eq!(by_agent, [("buyer", 4, 2), ("scout", 2, 1)]);

        let text = render_text(&s);
        assert!(
            text.contains("Grants     3 allowed by an earlier approval"),
            "{text}"
        );
        let table = text.split("By agent").nth(1).unwrap();
        let header = table.lines().nth(1).unwrap();
        assert!(
            header.trim_end().ends_with("executed  by grant"),
            "{header}"
        );
        let buyer = table
            .lines()
            .find(|l| l.trim_start().starts_with("buyer"))
            .unwrap();
        let numbers: Vec<&str> = buyer.split_whitespace().skip(1).collect();
        assert_eq!(
            numbers,
            ["5", "4", "1", "0", "0", "0", "1", "0", "2"],
            "{buyer}"
        );

        let json: Value = serde_json::from_str(&render_json(&s)).unwrap();
        assert_eq!(json["allowedByGrant"], 3);
        assert_eq!(json["agents"][0]["allowedByGrant"], 2);
        assert_eq!(json["agents"][1]["allowedByGrant"], 1);

        let markdown = render_markdown(&s);
        assert!(
            markdown.contains("| calls | allow | by grant | hold |")
                && markdown.contains("| 7 | 6 | 3 | 1 | 0 |"),
            "{markdown}"
        );
        assert!(
            markdown.contains("| executed | by grant | tainted by |")
                && markdown.contains("| buyer | 5 | 4 | 1 | 0 | 0 | 0 | 1 | 0 | 2 |  |"),
            "{markdown}"
        );
    }
}

#[test]
fn sandbox_and_inbox_events_are_neither_calls_nor_problems() {
    let log = concat!(
        r#"{"ts":"t","stage":"gate","id":"1","decision":"allow","reasons":["ok"],"call":{"agent":"a","tool":"t"}}"#,
        "\n",
        r#"{"ts":"t","stage":"sandbox","id":"s-1","event":"egress","decision":"deny","host":"x.example"}"#,
        "\n",
        r#"{"ts":"t","stage":"inbox","id":"i-1","action":"answered","door":"sc-approve"}"#,
        "\n",
        r#"{"ts":"t","stage":"bogus","id":"b-1"}"#,
        "\n",
    );
    let s = summarise([("audit.jsonl".to_owned(), log.as_bytes())]).unwrap();
    assert_eq!(s.calls, 1);
    assert_eq!(s.problems.len(), 1, "{:?}", s.problems);
    assert!(s.problems[0].problem.contains("unknown stage \"bogus\""));
}
