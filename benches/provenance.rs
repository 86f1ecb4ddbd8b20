//! Value provenance: deciding a tainted agent's call with 1 MiB of untrusted output on record
//! (the issue asks for under 100 µs). `cargo bench --bench provenance`.
//!
//! The untrusted output is about 1 MiB of mixed text (prose, links, addresses, codes, numbers),
//! taken in results of 16 KiB; the calls are a send that carries none of its values (allowed)
//! and one that carries a link from it (held), each with free-text and plain arguments.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;
use skeleton_crew::call::Call;
use skeleton_crew::rules::decision::evaluate_with_state;
use skeleton_crew::rules::policy::Policy;
use skeleton_crew::rules::provenance::ResultRecord;
use skeleton_crew::rules::state::CrewState;
use skeleton_crew::verdict::Decision;

/// About 1 MiB of untrusted text in results of 16 KiB, written deterministically.
fn untrusted_results() -> Vec<String> {
    let mut results = Vec::new();
    let mut text = String::new();
    let mut n: u64 = 0;
    while results.len() * 16 * 1024 < 1024 * 1024 - 16 * 1024 {
        n += 1;
        let x = n.wrapping_mul(2_654_435_761) % 1_000_003;
        text.push_str(&format!(
            "Message {n} from Team Lead Jordan Reyes: see https://portal-{x}.example.com/doc/{n} and mail ops{x}@vendor.example, ref INV-{x}-{n}, call +1 555 {:03} {:04}; the Quarterly Planning Review covers item {x} in Q3-Report-{n}.pdf. ",
            x % 1000,
            n % 10000
        ));
        if text.len() >= 16 * 1024 {
            results.push(std::mem::take(&mut text));
        }
    }
    results
}

fn provenance(c: &mut Criterion) {
    let policy = Policy::from_json_str(
        r#"{"sensitiveTools":["send_email"],"untrustedOutputTools":["read_inbox"],"provenance":{}}"#,
    )
    .unwrap();
    let mut state = CrewState::new();
    state.provenance.task(
        "helper",
        "Send Alice at alice@corp.example a summary of the planning thread",
        &policy,
    );
    let read = Call::parse_line(
        br#"{"agent":"helper","tool":"read_inbox","args":{"folder":"planning"},"source":"user"}"#,
    )
    .unwrap()
    .0;
    let judgement = evaluate_with_state(&read, &policy, &state);
    state.record(&read, "r-1", &judgement, &policy);
    for (n, text) in untrusted_results().into_iter().enumerate() {
        let result = ResultRecord {
            agent: "helper".into(),
            tool: "read_inbox".into(),
            call: Some("r-1".into()),
            output: Value::String(text),
        };
        state.provenance.result(&result, &format!("g-{n}"), &policy);
    }
    let (bytes, tokens) = state.provenance.agents["helper"].size();
    eprintln!("untrusted text on record: {bytes} bytes, {tokens} values");
    let clean = Call::parse_line(br#"{"agent":"helper","tool":"send_email","args":{"to":"alice@corp.example","subject":"Planning thread","body":"The team discussed the quarterly plan and the review of open items; nothing needs action before Friday.","cc":"Planning"},"source":"agent"}"#).unwrap().0;
    let laundered = Call::parse_line(br#"{"agent":"helper","tool":"send_email","args":{"to":"alice@corp.example","subject":"Planning thread","body":"The team discussed the plan. Details: https://portal-123.example.com/doc/4000 and more.","cc":"Planning"},"source":"agent"}"#).unwrap().0;
    assert_eq!(
        evaluate_with_state(&clean, &policy, &state).decision,
        Decision::Allow
    );
    let held = evaluate_with_state(&laundered, &policy, &state);
    assert_eq!(held.decision, Decision::Hold, "{held:?}");
    let mut group = c.benchmark_group("provenance_1MiB");
    group.bench_function("tainted_call_allowed", |b| {
        b.iter(|| evaluate_with_state(black_box(&clean), &policy, &state))
    });
    group.bench_function("tainted_call_held", |b| {
        b.iter(|| evaluate_with_state(black_box(&laundered), &policy, &state))
    });
    group.finish();
    c.bench_function("provenance_take_16KiB_result", |b| {
        let text = untrusted_results().remove(0);
        b.iter(|| {
            let mut fresh = CrewState::new();
            let result = ResultRecord {
                agent: "helper".into(),
                tool: "read_inbox".into(),
                call: None,
                output: Value::String(text.clone()),
            };
            fresh.provenance.result(black_box(&result), "g-1", &policy)
        })
    });
}

criterion_group!(benches, provenance);
criterion_main!(benches);
