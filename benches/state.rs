//! The state round trip of one decision: read the crew's state from a store, decide, write it
//! back, as sc-mcp and sc-hook do for every call (`Shared::transact`). `make bench` runs it
//! against SQLite and a Redis on loopback:
//!
//! `cargo bench --bench state -- --state URL [--calls N]` prints
//! `median_us=… p99_us=… max_us=…` over N calls (default 5000) after 200 warm-up calls. A Redis
//! store must have been created first (`sc-state init --state URL`), as for any door.

use std::time::Instant;

use skeleton_crew::call::Call;
use skeleton_crew::rules::decision::evaluate_with_state;
use skeleton_crew::rules::policy::Policy;
use skeleton_crew::store::{OpenOptions, Shared, StateKey, StateUrl, Timing, View};

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut url, mut calls) = (None, 5000usize);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--state" => url = args.next(),
            "--calls" => calls = args.next().and_then(|n| n.parse().ok()).expect("--calls N"),
            // What cargo bench passes to every bench target.
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    let url = StateUrl::parse(&url.expect("--state URL")).expect("a state URL");
    let store = url
        .open(OpenOptions {
            create: true,
            fsync: false,
        })
        .expect("the store opens");
    let mut shared = Shared::new(store, StateKey::crew("bench", View::Gate));
    let policy = Policy::from_json_str(
        r#"{"holdAboveTotal": 1e12, "budgetScope": "crew", "taintScope": "crew"}"#,
    )
    .unwrap();
    let timing = Timing::default();
    let lines = [
        r#"{"agent":"buyer","tool":"send_payment","args":{"to":"acme","amount":12.5},"source":"agent"}"#,
        r#"{"agent":"scout","tool":"fetch_page","args":{"url":"https://example.com/a"},"source":"agent"}"#,
        r#"{"agent":"clerk","tool":"send_email","args":{"to":"a@example.com"},"source":"agent"}"#,
    ];
    let calls_parsed: Vec<Call> = lines
        .iter()
        .map(|line| Call::parse_line(line.as_bytes()).unwrap().0)
        .collect();
    let mut micros = Vec::with_capacity(calls);
    for n in 0..calls + 200 {
        let call = &calls_parsed[n % calls_parsed.len()];
        let id = format!("bench-{n}");
        let start = Instant::now();
        shared
            .transact(&policy, &timing, &mut |state, now| {
                let judgement = evaluate_with_state(call, &policy, state);
                state.record_at(call, &id, &judgement, &policy, Some(now));
            })
            .expect("the store answers");
        if n >= 200 {
            micros.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    micros.sort_by(f64::total_cmp);
    let at = |q: f64| micros[((micros.len() as f64 * q) as usize).min(micros.len() - 1)];
    println!(
        "median_us={:.0} p99_us={:.0} max_us={:.0}",
        at(0.5),
        at(0.99),
        micros[micros.len() - 1]
    );
}
