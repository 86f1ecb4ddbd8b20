//! Properties of value provenance, through the library API: a value that never appeared in
//! untrusted output never causes a provenance hold; any untrusted typed token placed in any
//! free-text argument of a non-action sensitive call of a tainted agent causes one.

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Value};
use skeleton_crew::call::Call;
use skeleton_crew::rules::decision::evaluate_with_state;
use skeleton_crew::rules::policy::Policy;
use skeleton_crew::rules::provenance::ResultRecord;
use skeleton_crew::rules::state::CrewState;
use skeleton_crew::verdict::Decision;

const FREE_TEXT: &[&str] = &[
    "body",
    "content",
    "message",
    "subject",
    "description",
    "text",
];

fn policy() -> Policy {
    Policy::from_json_str(
        r#"{"sensitiveTools":["send_email","post_message"],"untrustedOutputTools":["read_inbox"],"provenance":{}}"#,
    )
    .unwrap()
}

/// Typed tokens as they may be written in text, each with a second spelling of the same value.
fn typed_token() -> impl Strategy<Value = (String, String)> {
    let word = "[a-z]{3,8}";
    prop_oneof![
        (word, word).prop_map(|(user, host)| (
            format!("{user}@{host}.com"),
            format!("<{}@{}.COM>", user.to_uppercase(), host)
        )),
        (word, word).prop_map(|(host, path)| (
            format!("https://www.{host}-portal.com/{path}"),
            format!("({host}-portal.com/{path}/)")
        )),
        (1000u32..99_999_999).prop_map(|n| (format!("#{n}"), format!("({n})"))),
        ("[A-Z]{3}[0-9]{3}[A-Z0-9]{2}").prop_map(|code| (code.clone(), code.to_lowercase())),
        (word).prop_map(|stem| (
            format!("{stem}-plan.xlsx"),
            format!("/tmp/{stem}-PLAN.XLSX")
        )),
        (10_000_000u64..999_999_999).prop_map(|n| (
            format!("+1 {} {}", n / 10_000, n % 10_000),
            format!("+1-{}-{}", n / 10_000, n % 10_000)
        )),
    ]
}

/// A tainted agent `helper` whose read returned `output`, and whose task was `instruction`.
fn tainted(policy: &Policy, instruction: &str, output: &str) -> CrewState {
    let mut state = CrewState::new();
    state.provenance.task("helper", instruction, policy);
    let read = Call::parse_line(
        br#"{"agent":"helper","tool":"read_inbox","args":{"folder":"in"},"source":"user"}"#,
    )
    .unwrap()
    .0;
    let judgement = evaluate_with_state(&read, policy, &state);
    state.record(&read, "r-1", &judgement, policy);
    let result = ResultRecord {
        agent: "helper".into(),
        tool: "read_inbox".into(),
        call: Some("r-1".into()),
        output: Value::String(output.to_owned()),
    };
    state.provenance.result(&result, "g-2", policy);
    state
}

fn send(args: Value) -> Call {
    let line = json!({"agent": "helper", "tool": "send_email", "args": args, "source": "agent"});
    Call::parse_line(line.to_string().as_bytes()).unwrap().0
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_value_never_in_untrusted_output_never_causes_a_provenance_hold(
        output in "[a-m0-4 .@/:#-]{0,300}",
        extra in "[a-m]{2,6}@[a-m]{2,6}\\.de|https://[a-m]{2,8}\\.be/[a-m0-4]{1,6}|[a-m]{3}[0-4]{4}|[0-4]{4,10}",
        body in "[n-zN-Z5-9 .,@:/-]{0,120}",
        to in "[n-z5-9.@]{1,30}|[n-z]{2,6}@[n-z]{2,6}\\.ru",
        key in select(&["body", "to", "note", "title"][..]),
    ) {
        // The untrusted output's letters and digits (a to m, 0 to 4) are not those of the
        // arguments (n to z, 5 to 9): no value of the call appeared in it, so nothing holds.
        let policy = policy();
        let state = tainted(&policy, "", &format!("{output} {extra} {output}"));
        let call = send(json!({"to": to, key: body}));
        let judged = evaluate_with_state(&call, &policy, &state);
        prop_assert_eq!(judged.decision, Decision::Allow, "{:?}", judged);
    }

    #[test]
    fn an_untrusted_typed_token_in_any_free_text_argument_holds(
        (written, spelt) in typed_token(),
        before in "[a-z ]{0,40}",
        after in "[a-z ]{0,40}",
        key in select(FREE_TEXT),
        noise in "[a-z ]{0,80}",
    ) {
        let policy = policy();
        let state = tainted(&policy, "Send Alice the notes", &format!("{noise} {written} {noise}"));
        let call = send(json!({"to": "alice", key: format!("{before} {spelt} {after}")}));
        let judged = evaluate_with_state(&call, &policy, &state);
        prop_assert_eq!(judged.decision, Decision::Hold, "{:?}", judged);
        prop_assert!(judged.reasons[0].contains(&format!("argument `{key}`")), "{:?}", judged);
    }
}
