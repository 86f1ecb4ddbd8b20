//! Fuzz target: the line parser and the decision, as sc-gate and sc-exec use them.
//!
//! The input is a stream: split on `\n`, each line is parsed with `Call::parse_line` and decided
//! with `evaluate_with_state` under the default policy and a strict one, the state updated after
//! each call as sc-gate does. Beyond "never panics", every judgement must keep the contract:
//! reasons are never empty, a deny-listed tool is denied, a sensitive tool from untrusted or
//! unknown provenance is denied, an amount that is not understood or above the limit is never
//! allowed, and the stateful decision is never weaker than the stateless one. The verdict line
//! sc-gate would write is read back as sc-exec reads it: when that works, it must carry the very
//! same call and decision (no parser differential between the stages), and `parse_line` must
//! read every line as the reference path does (`strict_json::parse`, then `Call::from_value`).

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use skeleton_crew::amount::Amount;
use skeleton_crew::call::{deeper_than, Call, MAX_CALL_DEPTH};
use skeleton_crew::rules::decision::{evaluate, evaluate_parsed, evaluate_with_state};
use skeleton_crew::verdict::Decision;
use skeleton_crew::rules::policy::{Policy, PolicySettings, TaintScope};
use skeleton_crew::record::{verdict_line, CallText, Record};
use skeleton_crew::rules::state::CrewState;
use skeleton_crew::strict_json;

fn policies() -> &'static [Policy; 2] {
    static POLICIES: OnceLock<[Policy; 2]> = OnceLock::new();
    POLICIES.get_or_init(|| {
        let strict = PolicySettings {
            hold_above_amount: 0.5,
            deny_tools: vec!["shell_exec".into(), "mcp__*".into()],
            sensitive_tools: vec!["send_*".into(), "delete_file".into()],
            untrusted_output_tools: vec!["fetch_page".into(), "search_web".into()],
            taint_scope: TaintScope::Crew,
            hold_above_total: Some(300.0),
            agents: [("scout".to_owned(), vec!["search_web".to_owned()])].into(),
            ..PolicySettings::default()
        };
        [
            Policy::default(),
            Policy::new(strict).expect("a valid policy"),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    for policy in policies() {
        let mut state = CrewState::new();
        for (n, line) in data.split(|&b| b == b'\n').enumerate() {
            let parsed = Call::parse_line(line).map(|(call, text)| (call, text.to_owned()));
            // The parser sc-gate uses agrees with the reference path: the strict JSON value,
            // then the call read from it.
            let reference = std::str::from_utf8(line).ok().and_then(|text| {
                let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
                let value = strict_json::parse(text).ok()?;
                let mut call = Call::from_value(&value).ok()?;
                call.take_amount_text_from(text, &["args", "amount"]);
                // A call deeper than its records can carry is malformed, however it parses.
                deeper_than(text, MAX_CALL_DEPTH).is_none().then_some(call)
            });
            assert_eq!(
                parsed.as_ref().ok().map(|(call, _)| call),
                reference.as_ref(),
                "parse_line and the reference path disagree on {:?}",
                String::from_utf8_lossy(line)
            );
            let judgement = evaluate_parsed(&parsed.clone().map(|(call, _)| call), policy, &state);
            assert!(!judgement.reasons.is_empty(), "empty reasons for {line:?}");
            let Ok((call, text)) = parsed else {
                assert_eq!(judgement.decision, Decision::Deny);
                continue;
            };
            let stateless = evaluate(&call, policy);
            assert!(!stateless.reasons.is_empty());
            assert!(
                judgement.decision >= stateless.decision,
                "state weakened {call:?}"
            );
            if policy.is_denied(&call.tool) {
                assert_eq!(judgement.decision, Decision::Deny, "{call:?}");
            }
            if policy.is_sensitive(&call.tool) && !call.provenance.is_trusted() {
                assert_eq!(judgement.decision, Decision::Deny, "{call:?}");
            }
            match call.args.get("amount").map(Amount::from_json) {
                Some(Amount::NotUnderstood { .. }) => {
                    assert_ne!(judgement.decision, Decision::Allow, "{call:?}")
                }
                // Rounding keeps order, so a float above the limit is above it in decimal too.
                Some(Amount::Understood { value, .. }) if value > policy.hold_above_amount() => {
                    assert_ne!(judgement.decision, Decision::Allow, "{call:?}")
                }
                _ => {}
            }
            // What sc-exec reads back must be the same call, decided the same way.
            let verdict = verdict_line("id-1", CallText::Json(&text), &judgement);
            if let Ok(record) = Record::parse(verdict.strip_suffix(b"\n").unwrap()) {
                let again = record
                    .call()
                    .expect("the verdict has its call")
                    .clone()
                    .expect("a call that parsed once parses again");
                assert_eq!(again, call);
                // And the reference way: the record's call as a JSON value.
                let mut reference = Call::from_value(&record.call_value().expect("a call value"))
                    .expect("a call that parsed once parses again");
                reference.take_amount_text_from(record.text, &["call", "args", "amount"]);
                assert_eq!(reference, call);
                assert_eq!(record.decision(), Some(judgement.decision));
                assert_eq!(record.reasons(), judgement.reasons);
                assert_eq!(evaluate_with_state(&again, policy, &state), judgement);
            }
            state.record(&call, &format!("id-{n}"), &judgement, policy);
        }
    }
});
