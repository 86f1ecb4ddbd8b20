//! `sc-report --questions` and `--suggest` (issue 33) as a user meets them: on the demo log, and
//! on a day of a crew's work (tests/grants_doors.rs) run through real sc-gate and sc-approve
//! processes on one SQLite store, where the suggestions, applied, must remove at least half of
//! the questions and change no verdict of a red-team fixture that is held or denied.

use serde_json::{json, Value};

use crate::grants_doors::a_days_work;
use crate::util::{parse_lines, run_demo, testdata, Scratch};

fn report(scratch: &Scratch, args: &[&str]) -> String {
    let out = scratch.cmd_report_args(args).output().unwrap();
    assert!(
        out.status.success(),
        "sc-report {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn questions_on_the_demo_log_in_every_format() {
    let scratch = Scratch::new();
    run_demo(&scratch);
    let json: Value = serde_json::from_str(&report(&scratch, &["--questions", "--json"])).unwrap();
    let rows = json["questions"].as_array().unwrap();
    // The demo holds one call (Buyer's $750), answered by the answers file.
    assert_eq!(rows.len(), 1, "{json:#}");
    let row = &rows[0];
    assert_eq!(
        (row["agent"].as_str(), row["tool"].as_str()),
        (Some("buyer"), Some("send_payment"))
    );
    assert_eq!(
        (
            row["holds"].as_u64(),
            row["asked"].as_u64(),
            row["approved"].as_u64()
        ),
        (Some(1), Some(1), Some(1))
    );
    assert_eq!(row["byChannel"], json!({"answers file": 1}));
    assert_eq!(row["rules"], json!({"amount": 1}));
    assert_eq!(row["askedPerActiveHour"].as_f64(), Some(1.0));
    assert!(row["answerSeconds"]["median"].as_f64().unwrap() >= 0.0);
    let text = report(&scratch, &["--questions"]);
    assert!(
        text.contains("Questions put to a person (1 asked of 1 holds)"),
        "{text}"
    );
    assert!(
        text.contains("buyer → send_payment: 1 holds (amount 1), 1 asked, 1 approved (100%)"),
        "{text}"
    );
    let markdown = report(&scratch, &["--questions", "--format", "markdown"]);
    assert!(
        markdown.contains("### Questions (1 asked of 1 holds)"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| buyer | send_payment | 1 | 0 | 1 | 1 |"),
        "{markdown}"
    );
    let html = report(&scratch, &["--questions", "--format", "html"]);
    assert!(
        html.contains("id=\"tile-asked\"><dt>asked</dt><dd>1</dd>"),
        "no tile"
    );
    assert!(html.contains("<table id=\"question-table\">"), "no table");
    // Without --questions, no section.
    assert!(!report(&scratch, &[]).contains("Questions put to a person"));
}

fn day_policy() -> Value {
    json!({"holdAboveAmount": 100, "sensitiveTools": ["send_email", "send_payment"],
        "untrustedOutputTools": ["fetch_page"], "provenance": {"freeTextArgs": ["body", "subject"]}})
}

/// Runs the day one line at a time through sc-gate and, when held, sc-approve (new processes on
/// one SQLite store, audited to the scratch log), answering each hold with `answer`; the number
/// of questions asked.
fn run_day(scratch: &Scratch, state: &str, answer: impl Fn(&Value) -> String) -> usize {
    let policy = scratch.write("policy.json", day_policy().to_string());
    let mut questions = 0;
    for line in a_days_work() {
        let gate = scratch
            .cmd("sc-gate")
            .args(["--policy", policy.to_str().unwrap(), "--state", state])
            .args(["--crew", "day", "--quiet"])
            .write_stdin(format!("{line}\n"))
            .output()
            .unwrap();
        assert!(gate.status.success());
        let record: Value = serde_json::from_slice(&gate.stdout).unwrap();
        if record["decision"] != "hold" {
            continue;
        }
        questions += 1;
        let answers = scratch.write("answers.txt", format!("{}\n", answer(&record)));
        let approve = scratch
            .cmd("sc-approve")
            .args(["--answers", answers.to_str().unwrap(), "--state", state])
            .args(["--crew", "day", "--quiet"])
            .write_stdin(gate.stdout.clone())
            .output()
            .unwrap();
        assert!(approve.status.success());
        let approved: Value = serde_json::from_slice(&approve.stdout).unwrap();
        assert_eq!(approved["approval"]["approved"], true, "{approved}");
    }
    questions
}

/// Whether a suggestion is for this held record: a call grant for its agent, tool and arguments;
/// a value grant for its agent and a value it names.
fn suggested_scope(suggestions: &[Value], record: &Value) -> Option<&'static str> {
    let call = &record["call"];
    suggestions.iter().find_map(|s| {
        if s["agent"] != call["agent"] {
            return None;
        }
        match s["scope"].as_str() {
            Some("call") => {
                let args: Value = serde_json::from_str(s["policy"]["args"].as_str()?).ok()?;
                (s["tool"] == call["tool"] && args == call["args"]).then_some("yes call")
            }
            Some("value") => {
                let named = record["grantable"]["values"].as_array()?;
                let value = &s["policy"]["values"][0];
                named.contains(value).then_some("yes value")
            }
            _ => None,
        }
    })
}

/// The gate's verdicts for every red-team fixture line (those written as a `line`), family by
/// family under its policy, on the crew `day` of `state`.
fn fixture_verdicts(scratch: &Scratch, state: &str) -> Vec<(String, String)> {
    let mut verdicts = Vec::new();
    for family in [
        "parser",
        "names",
        "numbers",
        "types",
        "structure",
        "streams",
    ] {
        let text =
            std::fs::read_to_string(testdata(&format!("adversarial/{family}.jsonl"))).unwrap();
        let rows = parse_lines(&text);
        let mut gate = scratch.cmd("sc-gate");
        if let Some(policy) = rows[0].get("policy") {
            let path = scratch.write(&format!("{family}-policy.json"), policy.to_string());
            gate.args(["--policy", path.to_str().unwrap()]);
        }
        let cases: Vec<&Value> = rows[1..]
            .iter()
            .filter(|row| row["line"].is_string())
            .collect();
        let input: String = cases
            .iter()
            .map(|row| format!("{}\n", row["line"].as_str().unwrap()))
            .collect();
        let out = gate
            .args(["--state", state, "--crew", "day", "--quiet"])
            .write_stdin(input)
            .output()
            .unwrap();
        for (record, case) in parse_lines(&String::from_utf8_lossy(&out.stdout))
            .iter()
            .zip(&cases)
        {
            verdicts.push((
                format!("{family}: {}", case["name"]),
                record["decision"].as_str().unwrap_or("?").to_owned(),
            ));
        }
    }
    verdicts
}

#[test]
fn suggestions_applied_to_a_days_work_remove_half_its_questions_and_no_red_team_verdict() {
    // The day as it was: every hold answered `yes` (once).
    let scratch = Scratch::new();
    let state = scratch.path("state.sqlite");
    let once = run_day(&scratch, state.to_str().unwrap(), |_| "yes".to_owned());
    let policy = scratch.path("policy.json");
    let json: Value = serde_json::from_str(&report(
        &scratch,
        &[
            "--suggest",
            "--policy",
            policy.to_str().unwrap(),
            "--format",
            "json",
        ],
    ))
    .unwrap();
    let suggestions = json["suggestions"].as_array().unwrap().clone();
    // The questions report of the same log counts every question.
    let questions: Value =
        serde_json::from_str(&report(&scratch, &["--questions", "--json"])).unwrap();
    let asked: u64 = questions["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["asked"].as_u64().unwrap())
        .sum();
    assert_eq!(asked as usize, once);
    // Each suggestion lists the past holds it changes, and says how many questions they were.
    let removes: u64 = suggestions
        .iter()
        .map(|s| s["removes"].as_u64().unwrap())
        .sum();
    for s in &suggestions {
        assert_eq!(s["kind"], "grant", "{s}");
        assert_eq!(s["expiresIn"], "1h", "{s}");
        assert_eq!(
            s["changes"].as_array().unwrap().len() as u64,
            s["changed"].as_u64().unwrap()
        );
    }
    println!(
        "a day's work: {once} questions; the {} suggestions remove {removes}",
        suggestions.len()
    );
    assert!(removes * 2 >= once as u64, "{removes} of {once}: {json:#}");

    // Applied: the person answers the suggested scope, a new day on a new store.
    let applied = Scratch::new();
    let applied_state = applied.path("state.sqlite");
    let applied_state = applied_state.to_str().unwrap();
    let fewer = run_day(&applied, applied_state, |record| {
        suggested_scope(&suggestions, record)
            .unwrap_or("yes")
            .to_owned()
    });
    println!("applied: {fewer} questions instead of {once}");
    assert!(fewer * 2 <= once, "{fewer} of {once}");
    assert_eq!(
        once - fewer,
        removes as usize,
        "the replay foretold the questions removed"
    );

    // The day's grants change no verdict of a red-team fixture that is held or denied: the same
    // lines on a fresh store against the store with the grants (its taint and spend reset).
    let reset = applied
        .cmd("sc-state")
        .args(["reset", "--state", applied_state, "--crew", "day"])
        .output()
        .unwrap();
    assert!(
        reset.status.success(),
        "{}",
        String::from_utf8_lossy(&reset.stderr)
    );
    let granted = applied
        .cmd("sc-state")
        .args([
            "grants",
            "--json",
            "--state",
            applied_state,
            "--crew",
            "day",
        ])
        .output()
        .unwrap();
    let grants: Value = serde_json::from_slice(&granted.stdout).unwrap();
    assert_eq!(
        grants.as_array().unwrap().len(),
        suggestions.len(),
        "{grants:#}"
    );
    let fresh = Scratch::new();
    let without = fixture_verdicts(&fresh, fresh.path("state.sqlite").to_str().unwrap());
    let with = fixture_verdicts(&applied, applied_state);
    assert_eq!(with.len(), without.len());
    assert!(without.len() > 200, "{} fixtures", without.len());
    let stopped = without.iter().filter(|(_, d)| d != "allow").count();
    assert!(stopped > 50, "{stopped} held or denied");
    for ((case, before), (_, after)) in without.iter().zip(&with) {
        if before != "allow" {
            assert_eq!(before, after, "{case}: the grants changed its verdict");
        }
    }
}

#[test]
fn the_approve_event_says_when_the_question_was_put() {
    let scratch = Scratch::new();
    run_demo(&scratch);
    let events = scratch.audit_events();
    let time = |event: &Value, key: &str| {
        humantime::parse_rfc3339(
            event[key]
                .as_str()
                .unwrap_or_else(|| panic!("no {key}: {event}")),
        )
        .unwrap()
    };
    let approve = events.iter().find(|e| e["stage"] == "approve").unwrap();
    let hold = events
        .iter()
        .find(|e| e["stage"] == "gate" && e["id"] == approve["id"])
        .unwrap();
    let asked = time(approve, "askedAt");
    assert!(
        time(hold, "ts") <= asked && asked <= time(approve, "ts"),
        "{hold}\n{approve}"
    );
    // The answers file is its own channel, not the inbox.
    assert!(approve.get("channel").is_none(), "{approve}");
}

#[test]
fn suggest_fails_closed_without_its_policy_a_log_or_a_format_it_writes() {
    let scratch = Scratch::new();
    run_demo(&scratch);
    let policy = scratch.write("policy.json", day_policy().to_string());
    let policy = policy.to_str().unwrap();
    let status = |args: &[&str]| {
        let out = scratch.cmd_report_args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.stdout,
        )
    };
    // No policy, a policy without --suggest, a format it does not write: usage errors.
    for args in [
        &["--suggest"][..],
        &["--policy", policy][..],
        &["--suggest", "--policy", policy, "--format", "html"][..],
        &["--suggest", "--policy", "missing.json"][..],
    ] {
        let (code, stderr, stdout) = status(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}");
    }
    // A log that cannot be read: status 1, nothing written.
    let out = std::process::Command::new(crate::util::bin_path("sc-report"))
        .current_dir(scratch.dir.path())
        .args(["--suggest", "--policy", policy, "missing.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    // The demo's one hold came once: nothing to suggest, and it says why.
    let (code, _, stdout) = status(&["--suggest", "--policy", policy]);
    assert_eq!(code, Some(0));
    assert!(String::from_utf8_lossy(&stdout).starts_with("No suggestion:"));
    let (_, _, stdout) = status(&["--suggest", "--policy", policy, "--json"]);
    let json: Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(json, json!({"suggestions": []}));
}
