//! Fuzz target: the strict policy loader, `Policy::from_json_str`.
//!
//! Never panics; a refusal always says something; a policy that loads has finite, non-negative
//! limits, and deciding a few calls under it neither panics nor gives empty reasons. A policy
//! that loads is as strict as its text says: a tool it names in `denyTools` is denied.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use skeleton_crew::call::{Call, Provenance, Source};
use skeleton_crew::rules::decision::evaluate;
use skeleton_crew::verdict::Decision;
use skeleton_crew::rules::policy::Policy;

const CALLS: &[&str] = &[
    r#"{"agent":"buyer","tool":"send_payment","args":{"to":"acme","amount":750},"source":"user"}"#,
    r#"{"agent":"helper","tool":"send_payment","args":{"to":"x","amount":40},"source":"untrusted-content"}"#,
    r#"{"agent":"scout","tool":"search_web","args":{"query":"q"},"source":"agent"}"#,
    r#"{"agent":"ops","tool":"shell_exec","args":{"cmd":"ls"},"source":"user"}"#,
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let policy = match Policy::from_json_str(text) {
        Ok(policy) => policy,
        Err(err) => {
            assert!(!err.message.is_empty());
            return;
        }
    };
    assert!(policy.hold_above_amount().is_finite() && policy.hold_above_amount() >= 0.0);
    if let Some(total) = policy.hold_above_total() {
        assert!(total.is_finite() && total >= 0.0);
    }
    for line in CALLS {
        let (call, _) = Call::parse_line(line.as_bytes()).expect("a valid call");
        let judgement = evaluate(&call, &policy);
        assert!(!judgement.reasons.is_empty());
    }
    // Every exact name in `denyTools` denies, whoever asks.
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(text) else {
        return;
    };
    if let Some(Value::Array(names)) = object.get("denyTools") {
        for name in names.iter().filter_map(Value::as_str) {
            // An exact name is itself denied; a prefix pattern denies any name it starts.
            let tool = match name.strip_suffix('*') {
                Some(prefix) => format!("{prefix}x"),
                None => name.to_owned(),
            };
            let call = Call {
                agent: "a".into(),
                tool,
                args: Default::default(),
                provenance: Provenance::Stated(Source::User),
                instruction: None,
                amount_text: None,
                cwd: None,
            };
            assert!(policy.is_denied(&call.tool), "{name} is not denied");
            assert_eq!(evaluate(&call, &policy).decision, Decision::Deny);
        }
    }
});
