//! The adversarial corpus (`testdata/adversarial/`, see its README): hostile lines, each with the
//! decision sc-gate gives and a fragment of its reason. Every family runs three ways: through the
//! library as sc-gate streams it, through `sc-gate` alone, and through the whole pipeline
//! `sc-gate | sc-approve | sc-exec` with no terminal and no answers, where nothing the gate denied
//! or held may end `executed`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use skeleton_crew::call::Call;
use skeleton_crew::jsonl::{is_blank, DEFAULT_MAX_LINE_BYTES};
use skeleton_crew::rules::decision::evaluate_parsed;
use skeleton_crew::rules::policy::Policy;
use skeleton_crew::rules::state::CrewState;
use skeleton_crew::verdict::Decision;

use crate::util::{self, parse_lines, testdata, Scratch};

/// The families, one file each.
const FAMILIES: &[&str] = &[
    "parser",
    "names",
    "numbers",
    "types",
    "structure",
    "streams",
];
/// How long one family's pipeline may take before it is treated as hung.
const PIPELINE_LIMIT: Duration = Duration::from_secs(120);

/// What the gate says about a case's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    Decided(Decision),
    /// A blank line: no verdict at all.
    Skipped,
}

#[derive(Debug)]
struct Case {
    name: String,
    bytes: Vec<u8>,
    expected: Expected,
    reason: Option<String>,
    /// What sc-exec does with an allowed call: executed, failed or skipped.
    outcome: Option<String>,
    contract: Option<Decision>,
    bug: Option<String>,
}

#[derive(Debug)]
struct Family {
    name: String,
    about: String,
    policy: Option<Value>,
    cases: Vec<Case>,
}

impl Family {
    fn load(name: &str) -> Family {
        let path = testdata(&format!("adversarial/{name}.jsonl"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let mut rows = parse_lines(&text).into_iter();
        let header = rows.next().expect("a header line");
        assert_eq!(header["family"], name, "{}: header", path.display());
        let cases = rows.map(|row| Case::from_json(name, &row)).collect();
        Family {
            name: name.to_owned(),
            about: header["about"].as_str().unwrap_or_default().to_owned(),
            policy: header.get("policy").cloned(),
            cases,
        }
    }

    fn policy(&self) -> Policy {
        match &self.policy {
            Some(policy) => Policy::from_json_str(&policy.to_string())
                .unwrap_or_else(|err| panic!("{}: {err}", self.name)),
            None => Policy::default(),
        }
    }

    /// The cases that get a verdict, in order.
    fn decided(&self) -> impl Iterator<Item = (&Case, Decision)> {
        self.cases.iter().filter_map(|case| match case.expected {
            Expected::Decided(decision) => Some((case, decision)),
            Expected::Skipped => None,
        })
    }

    /// The family's lines as one input stream.
    fn stream(&self) -> Vec<u8> {
        let mut input = Vec::new();
        for case in &self.cases {
            input.extend_from_slice(&case.bytes);
            input.push(b'\n');
        }
        input
    }
}

fn decision_named(text: &str) -> Decision {
    Decision::parse(text).unwrap_or_else(|| panic!("not a decision: {text}"))
}

impl Case {
    fn from_json(family: &str, row: &Value) -> Case {
        let name = row["name"]
            .as_str()
            .unwrap_or_else(|| panic!("{family}: a case without a name: {row}"))
            .to_owned();
        let text = |key: &str| row.get(key).and_then(Value::as_str).map(str::to_owned);
        let inputs = ["line", "lineBase64", "generate"]
            .iter()
            .filter(|key| row.get(**key).is_some())
            .count();
        assert_eq!(
            inputs, 1,
            "{family}/{name}: one of line, lineBase64, generate"
        );
        let bytes = if let Some(line) = text("line") {
            line.into_bytes()
        } else if let Some(encoded) = text("lineBase64") {
            base64_decode(&encoded)
        } else {
            generate(&row["generate"])
        };
        assert!(
            !bytes.contains(&b'\n'),
            "{family}/{name}: a line has no \\n"
        );
        let expected = match text("decision").as_deref() {
            Some("skip") => Expected::Skipped,
            Some(decision) => Expected::Decided(decision_named(decision)),
            None => panic!("{family}/{name}: no decision"),
        };
        Case {
            name,
            bytes,
            expected,
            reason: text("reason"),
            outcome: text("outcome"),
            contract: text("contractDecision").map(|d| decision_named(&d)),
            bug: text("bug"),
        }
    }

    fn label(&self, family: &str) -> String {
        format!("{family}/{}", self.name)
    }
}

/// Builds a generated line: the template with `@@` replaced by the parts (see the README).
fn generate(spec: &Value) -> Vec<u8> {
    let template = spec["template"].as_str().expect("a template");
    assert_eq!(template.matches("@@").count(), 1, "one @@ in {template}");
    let parts = spec["parts"].as_array().expect("parts");
    let fixed: usize = parts
        .iter()
        .filter_map(|part| {
            let count = part.get("count")?.as_u64()? as usize;
            Some(part["text"].as_str()?.len() * count)
        })
        .sum();
    let base = template.len() - 2 + fixed;
    let mut fill = String::new();
    let mut padding = 0;
    for part in parts {
        let text = part["text"].as_str().expect("a part's text");
        if let Some(count) = part.get("count").and_then(Value::as_u64) {
            fill.push_str(&text.repeat(count as usize));
        } else {
            let target = part["toLineBytes"].as_u64().expect("count or toLineBytes") as usize;
            let room = target
                .checked_sub(base)
                .expect("the target fits the template");
            fill.push_str(&text.repeat(room / text.len()));
            padding = room % text.len();
        }
    }
    let mut line = template.replace("@@", &fill).into_bytes();
    line.resize(line.len() + padding, b' ');
    line
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {text}"),
        }
    };
    let symbols: Vec<u8> = text.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::new();
    for chunk in symbols.chunks(4) {
        let mut bits = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            bits |= value(c) << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

fn load_all() -> Vec<Family> {
    FAMILIES.iter().map(|name| Family::load(name)).collect()
}

#[track_caller]
fn assert_verdict(case: &Case, family: &str, decision: Decision, reasons: &[String]) {
    let label = case.label(family);
    let Expected::Decided(expected) = case.expected else {
        panic!("{label}: a skipped line got a verdict: {decision} {reasons:?}");
    };
    assert_eq!(decision, expected, "{label}: {reasons:?}");
    assert!(!reasons.is_empty(), "{label}: no reasons");
    assert!(
        reasons.iter().all(|reason| !reason.trim().is_empty()),
        "{label}: a blank reason in {reasons:?}"
    );
    if let Some(fragment) = &case.reason {
        assert!(
            reasons
                .iter()
                .any(|reason| reason.contains(fragment.as_str())),
            "{label}: no reason contains {fragment:?}: {reasons:?}"
        );
    }
}

#[test]
fn the_corpus_is_documented_and_large_enough() {
    let families = load_all();
    let readme = std::fs::read_to_string(testdata("adversarial/README.md")).unwrap();
    let mut total = 0;
    for family in &families {
        assert!(
            readme.contains(&format!("`{}.jsonl`", family.name)),
            "the README lists {}",
            family.name
        );
        assert!(
            !family.about.is_empty(),
            "{}: the header says what",
            family.name
        );
        assert!(
            family.cases.len() >= 10,
            "{}: at least 10 cases",
            family.name
        );
        let mut names: Vec<&str> = family.cases.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            family.cases.len(),
            "{}: case names are unique",
            family.name
        );
        for case in &family.cases {
            let label = case.label(&family.name);
            match case.expected {
                Expected::Skipped => {
                    assert!(is_blank(&case.bytes), "{label}: only blank lines skip")
                }
                Expected::Decided(decision) => {
                    assert!(case.reason.is_some(), "{label}: a reason fragment");
                    match (decision, case.outcome.as_deref()) {
                        (Decision::Allow, Some("executed" | "failed" | "skipped")) => {}
                        (Decision::Allow, other) => panic!("{label}: outcome {other:?}"),
                        (_, None | Some("skipped")) => {}
                        (_, Some(other)) => panic!("{label}: a {decision} cannot end {other}"),
                    }
                    // Today's decision may only be weaker than the contract's with a bug noted.
                    if let Some(contract) = case.contract {
                        assert!(
                            case.bug.is_some(),
                            "{label}: contractDecision without a bug"
                        );
                        assert!(contract > decision, "{label}: contractDecision is stronger");
                    }
                }
            }
        }
        total += family.cases.len();
    }
    assert!(total >= 80, "{total} cases");
}

/// Every case through the library, each family as one stream, as sc-gate decides it.
#[test]
fn the_library_decides_every_case() {
    for family in load_all() {
        let policy = family.policy();
        let mut state = CrewState::new();
        for (n, case) in family.cases.iter().enumerate() {
            if case.bytes.len() > DEFAULT_MAX_LINE_BYTES {
                // The line limit is sc-gate's, not the parser's; the binary test covers it.
                continue;
            }
            if is_blank(&case.bytes) {
                assert_eq!(
                    case.expected,
                    Expected::Skipped,
                    "{}",
                    case.label(&family.name)
                );
                continue;
            }
            let call = Call::parse_line(&case.bytes).map(|(call, _)| call);
            let judgement = evaluate_parsed(&call, &policy, &state);
            assert_verdict(case, &family.name, judgement.decision, &judgement.reasons);
            if let Ok(call) = &call {
                state.record(call, &format!("id-{n}"), &judgement, &policy);
            }
        }
    }
}

/// A stage of the pipeline (see `util::stage`), under `policy` when one is given.
fn stage(scratch: &Scratch, bin: &str, policy: Option<&Path>) -> Command {
    let mut cmd = util::stage(scratch, bin);
    if let Some(policy) = policy {
        cmd.arg("--policy").arg(policy);
    }
    cmd
}

/// A record as the stages write it. The call is kept as raw text: a call may be nested as
/// deeply as the parser allows, and its record one level deeper still.
#[derive(Debug, Deserialize)]
struct Record {
    id: Option<String>,
    /// Audit events only.
    stage: Option<String>,
    decision: Option<String>,
    #[serde(default)]
    reasons: Vec<String>,
    raw: Option<String>,
    call: Option<Box<RawValue>>,
    approval: Option<Value>,
    outcome: Option<Value>,
}

impl Record {
    fn decision(&self) -> Decision {
        decision_named(self.decision.as_deref().expect("a decision"))
    }
}

/// Parses JSON Lines output, splitting on `\n` only (a record may hold U+2028 and the like).
fn records(stdout: &[u8]) -> Vec<Record> {
    stdout
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            serde_json::from_slice(line).unwrap_or_else(|e| {
                panic!(
                    "{e}: {}",
                    String::from_utf8_lossy(&line[..line.len().min(300)])
                )
            })
        })
        .collect()
}

/// Runs a family through sc-gate alone, then through the pipeline, checking every record.
fn check_family(name: &str) {
    let family = Family::load(name);
    let scratch = Scratch::new();
    let input = scratch.write("input.jsonl", family.stream());
    let policy = family
        .policy
        .as_ref()
        .map(|policy| scratch.write("policy.json", policy.to_string()));
    let decided: Vec<(&Case, Decision)> = family.decided().collect();

    // sc-gate alone.
    let output = stage(&scratch, "sc-gate", policy.as_deref())
        .arg(&input)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .output()
        .expect("run sc-gate");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{name}: sc-gate: {stderr}");
    assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    let verdicts = records(&output.stdout);
    assert_eq!(
        verdicts.len(),
        decided.len(),
        "{name}: one verdict per line"
    );
    for ((case, _), verdict) in decided.iter().zip(&verdicts) {
        let label = case.label(name);
        assert_verdict(case, name, verdict.decision(), &verdict.reasons);
        let malformed = verdict
            .reasons
            .iter()
            .any(|r| r.starts_with("malformed call"));
        assert_eq!(
            verdict.raw.is_some(),
            malformed,
            "{label}: raw for a malformed line"
        );
        assert_eq!(
            verdict.call.is_some(),
            !malformed,
            "{label}: call for a call"
        );
        if let Some(raw) = &verdict.raw {
            assert!(
                raw.len() <= 1024 + '…'.len_utf8(),
                "{label}: raw is bounded"
            );
        }
    }
    let audit = std::fs::read(scratch.audit_path()).expect("the audit log");
    let gate_events: Vec<Record> = records(&audit)
        .into_iter()
        .filter(|event| event.stage.as_deref() == Some("gate"))
        .collect();
    assert_eq!(
        gate_events.len(),
        verdicts.len(),
        "{name}: one gate event per verdict"
    );
    for (event, verdict) in gate_events.iter().zip(&verdicts) {
        assert_eq!(event.id, verdict.id);
        assert_eq!(event.decision, verdict.decision);
    }

    // The whole pipeline, with nobody to approve anything.
    let pipeline = Scratch::new();
    let mut gate = stage(&pipeline, "sc-gate", policy.as_deref());
    gate.arg(&input).stdin(Stdio::null());
    let approve = stage(&pipeline, "sc-approve", None);
    let exec = stage(&pipeline, "sc-exec", policy.as_deref());
    let stdout = util::run_three_stages(gate, approve, exec, PIPELINE_LIMIT, name);
    let finals = records(&stdout);
    assert_eq!(
        finals.len(),
        decided.len(),
        "{name}: one final record per line"
    );
    for ((case, decision), record) in decided.iter().zip(&finals) {
        let label = case.label(name);
        let outcome = record
            .outcome
            .as_ref()
            .unwrap_or_else(|| panic!("{label}: no outcome"));
        let status = outcome["status"].as_str().expect("a status");
        assert!(
            *decision == Decision::Allow || status != "executed",
            "{label}: a {decision} ended executed: {outcome}"
        );
        let expected = match decision {
            Decision::Allow => case
                .outcome
                .as_deref()
                .expect("allow cases name an outcome"),
            Decision::Hold | Decision::Deny => "skipped",
        };
        assert_eq!(status, expected, "{label}: {outcome}");
        // Nobody approved anything: a hold that sc-approve could read was declined, with nobody
        // to ask.
        if let Some(approval) = &record.approval {
            assert_eq!(approval["approved"], false, "{label}: {approval}");
            assert_eq!(approval["by"], "none", "{label}: {approval}");
            assert_eq!(
                *decision,
                Decision::Hold,
                "{label}: only holds get an approval"
            );
        }
        // Records sc-exec could read keep the gate's decision.
        if record.call.is_some() {
            assert_eq!(record.decision(), *decision, "{label}: {outcome}");
        }
    }
}

#[test]
fn parser_differentials() {
    check_family("parser");
}

#[test]
fn exact_names() {
    check_family("names");
}

#[test]
fn numbers() {
    check_family("numbers");
}

#[test]
fn types() {
    check_family("types");
}

#[test]
fn structure() {
    check_family("structure");
}

#[test]
fn streams() {
    check_family("streams");
}

/// Found by running the structure family stage by stage from files: sc-approve, handed at once
/// more than a batch (64 KiB) of records that are not holds, sent an empty batch of audit events
/// to its audit thread, whose `debug_assert!` in `AuditLog::append` panicked, and the stage
/// stopped (exit 1). It failed closed, but valid input must not stop the pipeline.
#[test]
fn sc_approve_passes_a_large_batch_of_non_holds() {
    let scratch = Scratch::new();
    let big = format!(
        r#"{{"agent":"scout","tool":"search_web","args":{{"query":"x","list":[{}0]}},"source":"user"}}"#,
        "0,".repeat(40_000)
    );
    let small = r#"{"agent":"scout","tool":"search_web","args":{"query":"x"},"source":"user"}"#;
    let calls = scratch.write("calls.jsonl", format!("{big}\n{small}\n"));
    let verdicts = stage(&scratch, "sc-gate", None)
        .arg(&calls)
        .stdin(Stdio::null())
        .output()
        .expect("run sc-gate");
    assert_eq!(verdicts.status.code(), Some(0));
    let verdicts = scratch.write("verdicts.jsonl", &verdicts.stdout);
    let approved = stage(&scratch, "sc-approve", None)
        .arg(&verdicts)
        .stdin(Stdio::null())
        .output()
        .expect("run sc-approve");
    let stderr = String::from_utf8_lossy(&approved.stderr);
    assert_eq!(approved.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(records(&approved.stdout).len(), 2);
}
