//! Property tests over generated calls, policies and streams, through the library API.
//!
//! The safety rules hold for every call and policy, not just the examples: a deny-listed tool is
//! always denied; a sensitive tool from untrusted or unknown provenance is always denied; an amount
//! above the limit or not understood is never allowed; nothing panics, whatever the bytes; making
//! a policy stricter never makes a decision weaker; the stateful rules only ever make a decision
//! stronger; and the stream state survives a trip through JSON. The oracles here are written
//! independently of `src/` (the tool-list matching and what counts as a plain decimal are spelt
//! out again), so a bug in the rule is not also a bug in its test.

use std::collections::BTreeMap;

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Map, Value};
use skeleton_crew::call::Call;
use skeleton_crew::rules::argrules::{ArgRule, WhenTainted};
use skeleton_crew::rules::decision::{evaluate, evaluate_parsed, evaluate_with_state};
use skeleton_crew::rules::policy::{BudgetScope, Policy, PolicySettings, TaintScope};
use skeleton_crew::rules::state::{AgentState, CrewState, TaintCause};
use skeleton_crew::rules::tools::ToolPattern;
use skeleton_crew::verdict::{Decision, Judgement};

/// Tool names calls use: the built-ins, a denied one, look-alikes and a family under a prefix.
const CALL_TOOLS: &[&str] = &[
    "send_payment",
    "send_email",
    "delete_file",
    "shell_exec",
    "search_web",
    "fetch_page",
    "mcp__github__create_issue",
    "mcp__github__delete_repo",
    "Send_Payment",
    "send_payment ",
    "send\u{200b}payment",
    "run_query",
];
/// What policy lists hold: exact names and prefix patterns.
const POLICY_TOOLS: &[&str] = &[
    "send_payment",
    "send_email",
    "delete_file",
    "shell_exec",
    "search_web",
    "fetch_page",
    "mcp__github__*",
    "send_*",
    "run_query",
];
const AGENTS: &[&str] = &["buyer", "scout", "helper", "ops"];

/// Argument schemas of every kind of strictness, for the schema property.
const SCHEMAS: &[&str] = &[
    "{}",
    r#"{"properties": {"query": {"type": "string", "maxLength": 5}}}"#,
    r#"{"required": ["amount"]}"#,
    r#"{"properties": {"amount": {"type": "number", "maximum": 50}}}"#,
    r#"{"additionalProperties": false}"#,
    r#"{"not": {}}"#,
];

fn tool() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(CALL_TOOLS).prop_map(str::to_owned),
        1 => "[a-z_]{1,12}",
    ]
}

fn agent() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(AGENTS).prop_map(str::to_owned),
        1 => "[a-zA-Z]{1,6}",
    ]
}

/// The `source` field: absent, one of the three, or anything else.
fn source() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        3 => select(&["user", "agent", "untrusted-content"][..]).prop_map(|s| Some(json!(s))),
        1 => Just(None),
        1 => select(&["User", "user ", "", "admin", "untrusted_content", "agent\u{0}"][..])
            .prop_map(|s| Some(json!(s))),
        1 => select(vec![json!(null), json!(1), json!(["user"]), json!({"user": true}), json!(true)])
            .prop_map(Some),
    ]
}

/// Whether a call's `source` is one that may order a sensitive tool: exactly "user" or "agent".
fn trusted(source: &Option<Value>) -> bool {
    matches!(
        source.as_ref().and_then(Value::as_str),
        Some("user" | "agent")
    )
}

/// A plain decimal ≥ 0 as the contract writes it: `750`, `750.5`, with an optional `$`.
fn plain_decimal(value: f64, dollar: bool) -> String {
    format!("{}{value}", if dollar { "$" } else { "" })
}

/// An amount the rules understand: a non-negative JSON number or plain decimal string.
fn understood_amount() -> impl Strategy<Value = (f64, Value)> {
    prop_oneof![
        (0u64..5_000).prop_map(|n| (n as f64, json!(n))),
        (0.0f64..5_000.0).prop_map(|v| (v, json!(v))),
        ((0u64..5_000), any::<bool>())
            .prop_map(|(n, dollar)| (n as f64, json!(plain_decimal(n as f64, dollar)))),
        ((0u64..500_000), any::<bool>()).prop_map(|(cents, dollar)| {
            let value = cents as f64 / 100.0;
            (
                value,
                json!(format!(
                    "{}{}.{:02}",
                    if dollar { "$" } else { "" },
                    cents / 100,
                    cents % 100
                )),
            )
        }),
    ]
}

/// Characters that never occur in a plain decimal, wherever they are put.
const JUNK: &[&str] = &[
    " ", "+", "-", ",", "_", "e", "E", "x", "a", "\u{200b}", "\u{660}", "\t", "/", "%", "€",
];

/// An amount the rules must not understand.
fn not_understood_amount() -> impl Strategy<Value = Value> {
    let junk_in_decimal = (
        (0u64..100_000),
        select(JUNK),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(n, junk, at, dollar)| {
            let digits = n.to_string();
            let cut = at.index(digits.len() + 1);
            let text = format!("{}{}{}", &digits[..cut], junk, &digits[cut..]);
            json!(format!("{}{text}", if dollar { "$" } else { "" }))
        });
    prop_oneof![
        (1u64..1_000_000).prop_map(|n| json!(-(n as i64))),
        (-1e9f64..-1e-9).prop_map(|v| json!(v)),
        Just(json!(-0.0)),
        junk_in_decimal,
        (0u64..1000).prop_map(|n| json!(format!("$${n}"))),
        (0u64..1000).prop_map(|n| json!(format!("{n}."))),
        (0u64..1000).prop_map(|n| json!(format!(".{n}"))),
        (0u64..1000, 0u64..1000).prop_map(|(a, b)| json!(format!("{a}.{b}.5"))),
        select(
            &[
                "",
                "$",
                "NaN",
                "Infinity",
                "seven hundred",
                "0x64",
                "1e2",
                "７５０"
            ][..]
        )
        .prop_map(|s| json!(s)),
        any::<bool>().prop_map(|b| json!(b)),
        Just(json!(null)),
        (0u64..1000).prop_map(|n| json!([n])),
        (0u64..1000).prop_map(|n| json!({"value": n})),
    ]
}

/// Any amount, or none.
fn any_amount() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        2 => Just(None),
        3 => understood_amount().prop_map(|(_, v)| Some(v)),
        1 => not_understood_amount().prop_map(Some),
        1 => (1e6f64..1e300).prop_map(|v| Some(json!(v))),
    ]
}

/// A call as the JSON object an agent sends.
#[derive(Debug, Clone)]
struct CallSpec {
    agent: String,
    tool: String,
    source: Option<Value>,
    amount: Option<Value>,
    query: Option<String>,
}

impl CallSpec {
    fn to_json(&self) -> Value {
        let mut args = Map::new();
        if let Some(query) = &self.query {
            args.insert("query".into(), json!(query));
        }
        if let Some(amount) = &self.amount {
            args.insert("amount".into(), amount.clone());
        }
        let mut object = Map::new();
        object.insert("agent".into(), json!(self.agent));
        object.insert("tool".into(), json!(self.tool));
        object.insert("args".into(), Value::Object(args));
        if let Some(source) = &self.source {
            object.insert("source".into(), source.clone());
        }
        Value::Object(object)
    }

    /// The call as sc-gate reads it, from its line.
    fn call(&self) -> Call {
        let line = self.to_json().to_string();
        Call::parse_line(line.as_bytes())
            .unwrap_or_else(|err| panic!("{line}: {err}"))
            .0
    }
}

fn call_spec_with(amount: impl Strategy<Value = Option<Value>>) -> impl Strategy<Value = CallSpec> {
    (
        agent(),
        tool(),
        source(),
        amount,
        proptest::option::of("[a-z:/.]{0,12}"),
    )
        .prop_map(|(agent, tool, source, amount, query)| CallSpec {
            agent,
            tool,
            source,
            amount,
            query,
        })
}

fn call_spec() -> impl Strategy<Value = CallSpec> {
    call_spec_with(any_amount())
}

fn tool_list() -> impl Strategy<Value = Vec<String>> {
    vec(select(POLICY_TOOLS).prop_map(str::to_owned), 0..4)
}

fn limit() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(100.0),
        (0u64..2_000).prop_map(|n| n as f64),
        0.0f64..2_000.0
    ]
}

fn settings() -> impl Strategy<Value = PolicySettings> {
    let agents = prop_oneof![
        3 => Just(BTreeMap::new()),
        1 => btree_map(
            prop_oneof![select(AGENTS).prop_map(str::to_owned), Just("*".to_owned())],
            tool_list(),
            0..3,
        ),
    ];
    (
        limit(),
        tool_list(),
        tool_list(),
        tool_list(),
        any::<bool>(),
        proptest::option::of(limit()),
        agents,
    )
        .prop_map(
            |(hold_above_amount, deny, sensitive, untrusted, crew, total, agents)| PolicySettings {
                hold_above_amount,
                deny_tools: deny,
                sensitive_tools: sensitive,
                untrusted_output_tools: untrusted,
                taint_scope: if crew {
                    TaintScope::Crew
                } else {
                    TaintScope::Agent
                },
                hold_above_total: total,
                agents,
                ..PolicySettings::default()
            },
        )
}

fn policy_of(settings: &PolicySettings) -> Policy {
    Policy::new(settings.clone()).expect("generated settings are valid")
}

/// Whether a list of exact names and `prefix*` patterns covers a tool (the contract's rule,
/// spelt out again here).
fn listed(list: &[String], tool: &str) -> bool {
    list.iter().any(|item| match item.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => item == tool,
    })
}

/// Decides a stream as sc-gate does, returning each call with its stateful and stateless
/// judgement and the state before it.
fn run_stream(specs: &[CallSpec], policy: &Policy) -> Vec<(Call, CrewState, Judgement, Judgement)> {
    let mut state = CrewState::new();
    specs
        .iter()
        .enumerate()
        .map(|(n, spec)| {
            let call = spec.call();
            let before = state.clone();
            let stateful = evaluate_with_state(&call, policy, &state);
            let stateless = evaluate(&call, policy);
            state.record(&call, &format!("id-{n}"), &stateful, policy);
            (call, before, stateful, stateless)
        })
        .collect()
}

fn taint_cause() -> impl Strategy<Value = TaintCause> {
    (
        agent(),
        tool(),
        "[a-f0-9]{1,16}-[0-9]{1,3}",
        proptest::option::of("(url|query)=[ -~]{0,20}"),
    )
        .prop_map(|(agent, tool, id, argument)| TaintCause::new(agent, tool, id, argument))
}

fn crew_state() -> impl Strategy<Value = CrewState> {
    let agent_state = (
        proptest::option::of(taint_cause()),
        prop_oneof![
            (0u64..1_000_000).prop_map(|n| n as f64),
            0.0f64..1e12,
            (0u64..100_000_000).prop_map(|cents| cents as f64 / 100.0),
        ],
        any::<bool>(),
    )
        .prop_map(|(tainted_by, spent, inexact)| AgentState {
            tainted_by,
            spent,
            inexact,
        });
    (
        btree_map(agent(), agent_state, 0..5),
        proptest::option::of(taint_cause()),
        0.0f64..1e6,
        any::<bool>(),
    )
        .prop_map(|(agents, crew_tainted_by, others, crew_inexact)| {
            // As the state keeps it: the crew's spend at least the sum of its agents' (agents
            // not in the map may have spent too).
            let crew_spent = agents.values().map(|a| a.spent).sum::<f64>() + others;
            CrewState {
                agents: agents
                    .into_iter()
                    .map(|(name, state)| (name.into(), state))
                    .collect(),
                crew_tainted_by,
                crew_spent,
                crew_inexact,
                ..CrewState::default()
            }
        })
}

/// Arbitrary JSON, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,10}".prop_map(Value::String),
        select(
            &[
                "user",
                "agent",
                "untrusted-content",
                "send_payment",
                "shell_exec",
                "$750",
                "-0"
            ][..]
        )
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            btree_map(
                prop_oneof![
                    select(
                        &[
                            "agent",
                            "tool",
                            "args",
                            "source",
                            "instruction",
                            "amount",
                            "to"
                        ][..]
                    )
                    .prop_map(str::to_owned),
                    ".{0,6}"
                ],
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An object shaped like a call whose fields may each be missing or of any type.
fn call_shaped_json() -> impl Strategy<Value = Value> {
    let field = |good: BoxedStrategy<Value>| {
        prop_oneof![
            1 => Just(None),
            3 => good.prop_map(Some),
            2 => json_value().prop_map(Some),
        ]
    };
    (
        field(agent().prop_map(Value::String).boxed()),
        field(tool().prop_map(Value::String).boxed()),
        field(any_amount().prop_map(|a| json!({ "amount": a })).boxed()),
        field(source().prop_map(|s| s.unwrap_or(Value::Null)).boxed()),
        field(".{0,20}".prop_map(Value::String).boxed()),
    )
        .prop_map(|(agent, tool, args, source, instruction)| {
            let mut object = Map::new();
            for (key, value) in [
                ("agent", agent),
                ("tool", tool),
                ("args", args),
                ("source", source),
                ("instruction", instruction),
            ] {
                if let Some(value) = value {
                    object.insert(key.to_owned(), value);
                }
            }
            Value::Object(object)
        })
}

proptest! {
    #[test]
    fn a_deny_listed_tool_is_always_denied(
        settings in settings(),
        specs in vec(call_spec(), 0..5),
        last in call_spec(),
    ) {
        let policy = policy_of(&settings);
        let mut specs = specs;
        specs.push(last);
        for (call, _, stateful, stateless) in run_stream(&specs, &policy) {
            if listed(&settings.deny_tools, &call.tool) {
                prop_assert_eq!(stateless.decision, Decision::Deny, "{:?}", call);
                prop_assert_eq!(stateful.decision, Decision::Deny, "{:?}", call);
            }
        }
    }

    #[test]
    fn a_sensitive_tool_from_untrusted_or_unknown_provenance_is_always_denied(
        settings in settings(),
        spec in call_spec(),
        state in crew_state(),
    ) {
        let policy = policy_of(&settings);
        let call = spec.call();
        if listed(&settings.sensitive_tools, &call.tool) && !trusted(&spec.source) {
            prop_assert_eq!(evaluate(&call, &policy).decision, Decision::Deny, "{:?}", spec);
            prop_assert_eq!(
                evaluate_with_state(&call, &policy, &state).decision,
                Decision::Deny,
                "{:?}", spec
            );
        }
    }

    #[test]
    fn an_amount_above_the_limit_is_never_allowed(
        settings in settings(),
        spec in call_spec_with(Just(None)),
        base in understood_amount(),
        cents in 1u64..100_000,
        dollar in any::<bool>(),
        as_string in any::<bool>(),
    ) {
        // The amount is the limit plus at least a cent, written as a number or a plain decimal.
        let policy = policy_of(&settings);
        let limit = settings.hold_above_amount;
        let value = limit + cents as f64 / 100.0 + base.0;
        prop_assume!(value > limit);
        let amount = if as_string { json!(plain_decimal(value, dollar)) } else { json!(value) };
        let spec = CallSpec { amount: Some(amount), ..spec };
        let call = spec.call();
        prop_assert_ne!(evaluate(&call, &policy).decision, Decision::Allow, "{:?}", spec);
    }

    #[test]
    fn an_amount_not_understood_is_never_allowed(
        settings in settings(),
        spec in call_spec_with(not_understood_amount().prop_map(Some)),
        state in crew_state(),
    ) {
        let policy = policy_of(&settings);
        let call = spec.call();
        let judgement = evaluate(&call, &policy);
        prop_assert_ne!(judgement.decision, Decision::Allow, "{:?}", spec);
        prop_assert_ne!(evaluate_with_state(&call, &policy, &state).decision, Decision::Allow);
    }

    #[test]
    fn a_plain_call_within_policy_is_allowed(
        amount in prop_oneof![
            (0u64..=100).prop_map(|n| json!(n)),
            (0.0f64..=100.0).prop_map(|v| json!(v)),
            (0u64..=10_000).prop_map(|cents| json!(format!("${}.{:02}", cents / 100, cents % 100))),
        ],
        source in select(&["user", "agent"][..]),
    ) {
        // The properties above are not met by denying everything.
        let spec = CallSpec {
            agent: "buyer".into(),
            tool: "send_payment".into(),
            source: Some(json!(source)),
            amount: Some(amount),
            query: None,
        };
        prop_assert_eq!(evaluate(&spec.call(), &Policy::default()).decision, Decision::Allow);
    }

    #[test]
    fn evaluate_never_panics_on_any_bytes(
        settings in settings(),
        bytes in vec(any::<u8>(), 0..300),
    ) {
        let policy = policy_of(&settings);
        let parsed = Call::parse_line(&bytes).map(|(call, _)| call);
        let judgement = evaluate_parsed(&parsed, &policy, &CrewState::new());
        prop_assert!(!judgement.reasons.is_empty());
        if parsed.is_err() {
            prop_assert_eq!(judgement.decision, Decision::Deny);
        }
    }

    #[test]
    fn evaluate_never_panics_on_any_call_shaped_json(
        settings in settings(),
        value in call_shaped_json(),
        state in crew_state(),
    ) {
        let policy = policy_of(&settings);
        let line = value.to_string();
        let parsed = Call::parse_line(line.as_bytes()).map(|(call, _)| call);
        let judgement = evaluate_parsed(&parsed, &policy, &state);
        prop_assert!(!judgement.reasons.is_empty());
        prop_assert!(judgement.reasons.iter().all(|r| !r.trim().is_empty()));
        match &parsed {
            Err(_) => prop_assert_eq!(judgement.decision, Decision::Deny),
            Ok(call) => prop_assert_eq!(&judgement, &evaluate_with_state(call, &policy, &state)),
        }
    }

    #[test]
    fn no_schema_weakens_the_deny_list_or_explicit_provenance(
        settings in settings(),
        specs in vec(call_spec(), 0..5),
        last in call_spec(),
        rules in vec(
            (
                prop_oneof![tool(), select(POLICY_TOOLS).prop_map(str::to_owned)],
                select(SCHEMAS),
                any::<bool>(),
                any::<bool>(),
            ),
            0..4,
        ),
    ) {
        let mut with_schemas = settings.clone();
        for (other_tool, schema, for_last, allow) in rules {
            let tool = if for_last { last.tool.clone() } else { other_tool };
            let Ok(pattern) = ToolPattern::parse(&tool) else { continue };
            let when = if allow { WhenTainted::Allow } else { WhenTainted::Hold };
            let schema: Value = serde_json::from_str(schema).unwrap();
            with_schemas.tool_args.push(ArgRule::new(pattern, schema, when).unwrap());
        }
        let policy = policy_of(&with_schemas);
        let state = stream_state(&specs, &policy);
        let judgement = evaluate_with_state(&last.call(), &policy, &state);
        let deny_listed = listed(&settings.deny_tools, &last.tool);
        let untrusted_sensitive = listed(&settings.sensitive_tools, &last.tool) && !trusted(&last.source);
        if deny_listed || untrusted_sensitive {
            prop_assert_eq!(judgement.decision, Decision::Deny, "{:?}", judgement);
        }
    }

    #[test]
    fn adding_a_tool_to_deny_tools_never_weakens_a_decision(
        settings in settings(),
        specs in vec(call_spec(), 0..5),
        last in call_spec(),
        extra in prop_oneof![tool(), select(POLICY_TOOLS).prop_map(str::to_owned)],
        same_tool in any::<bool>(),
    ) {
        let before = policy_of(&settings);
        let added = if same_tool { last.tool.clone() } else { extra };
        let mut stricter = settings.clone();
        stricter.deny_tools.push(added);
        // A name with white space at an end or an invisible character does not load.
        prop_assume!(Policy::new(stricter.clone()).is_ok());
        let after = policy_of(&stricter);
        let state = stream_state(&specs, &before);
        let call = last.call();
        prop_assert!(
            evaluate_with_state(&call, &after, &state).decision
                >= evaluate_with_state(&call, &before, &state).decision
        );
    }

    #[test]
    fn adding_a_tool_to_sensitive_tools_never_weakens_a_decision(
        settings in settings(),
        specs in vec(call_spec(), 0..5),
        last in call_spec(),
        extra in prop_oneof![tool(), select(POLICY_TOOLS).prop_map(str::to_owned)],
        same_tool in any::<bool>(),
    ) {
        let before = policy_of(&settings);
        let added = if same_tool { last.tool.clone() } else { extra };
        let mut stricter = settings.clone();
        stricter.sensitive_tools.push(added);
        // A name with white space at an end or an invisible character does not load.
        prop_assume!(Policy::new(stricter.clone()).is_ok());
        let after = policy_of(&stricter);
        let state = stream_state(&specs, &before);
        let call = last.call();
        prop_assert!(
            evaluate_with_state(&call, &after, &state).decision
                >= evaluate_with_state(&call, &before, &state).decision
        );
    }

    #[test]
    fn lowering_a_limit_never_weakens_a_decision(
        settings in settings(),
        specs in vec(call_spec(), 0..5),
        last in call_spec(),
        factor in 0.0f64..1.0,
        budget in limit(),
    ) {
        let before = policy_of(&settings);
        let state = stream_state(&specs, &before);
        let call = last.call();
        let base = evaluate_with_state(&call, &before, &state).decision;
        // A lower hold limit.
        let mut lower = settings.clone();
        lower.hold_above_amount = settings.hold_above_amount * factor;
        prop_assert!(evaluate_with_state(&call, &policy_of(&lower), &state).decision >= base);
        // A lower budget, or a budget where there was none.
        let mut budgeted = settings.clone();
        budgeted.hold_above_total = Some(settings.hold_above_total.map_or(budget, |t| t * factor));
        prop_assert!(evaluate_with_state(&call, &policy_of(&budgeted), &state).decision >= base);
    }

    /// With whole amounts (sums a float holds exactly), a budget for the whole crew holds at
    /// least what the same budget per agent holds: the crew's total is never below an agent's.
    #[test]
    fn a_crew_budget_never_weakens_a_decision(
        settings in settings(),
        specs in vec(call_spec_with((0u64..5_000).prop_map(|n| Some(json!(n)))), 0..10),
        last in call_spec_with((0u64..5_000).prop_map(|n| Some(json!(n)))),
        budget in (0u64..5_000).prop_map(|n| n as f64),
    ) {
        let per_agent = PolicySettings { hold_above_total: Some(budget), ..settings };
        let crew = PolicySettings { budget_scope: BudgetScope::Crew, ..per_agent.clone() };
        let (per_agent, crew) = (policy_of(&per_agent), policy_of(&crew));
        let state = stream_state(&specs, &per_agent);
        let call = last.call();
        prop_assert!(
            evaluate_with_state(&call, &crew, &state).decision
                >= evaluate_with_state(&call, &per_agent, &state).decision
        );
    }

    #[test]
    fn stateful_rules_only_make_a_decision_stronger(
        settings in settings(),
        specs in vec(call_spec(), 1..12),
    ) {
        let policy = policy_of(&settings);
        for (call, _, stateful, stateless) in run_stream(&specs, &policy) {
            prop_assert!(stateful.decision >= stateless.decision, "{:?}: {:?} < {:?}", call, stateful, stateless);
            prop_assert!(!stateful.reasons.is_empty());
            // Without state, the stateful decision is the stateless one, reasons and all.
            prop_assert_eq!(evaluate_with_state(&call, &policy, &CrewState::new()), stateless);
        }
    }

    #[test]
    fn a_generated_crew_state_round_trips_through_json(state in crew_state()) {
        let text = serde_json::to_string(&state).unwrap();
        let back: CrewState = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, state);
    }

    #[test]
    fn a_stream_state_round_trips_through_json(
        settings in settings(),
        specs in vec(call_spec_with(proptest::option::of(understood_amount().prop_map(|a| a.1))), 0..12),
    ) {
        let policy = policy_of(&settings);
        let state = stream_state(&specs, &policy);
        let text = serde_json::to_string(&state).unwrap();
        let back: CrewState = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, state);
    }
}

/// The state after a stream, as sc-gate keeps it.
fn stream_state(specs: &[CallSpec], policy: &Policy) -> CrewState {
    let mut state = CrewState::new();
    for (n, spec) in specs.iter().enumerate() {
        let call = spec.call();
        let judgement = evaluate_with_state(&call, policy, &state);
        state.record(&call, &format!("id-{n}"), &judgement, policy);
    }
    state
}

/// Found by the round-trip property with amounts near `f64::MAX`: two held payments of 1.7e308
/// made an agent's `spent` infinite, which serde_json writes as `null` and cannot read back. The
/// total now saturates at `f64::MAX`.
#[test]
fn an_enormous_spend_round_trips_through_json() {
    let policy = Policy::default();
    let huge = CallSpec {
        agent: "buyer".into(),
        tool: "send_payment".into(),
        source: Some(json!("user")),
        amount: Some(json!(1.7e308)),
        query: None,
    };
    let state = stream_state(&[huge.clone(), huge], &policy);
    assert_eq!(state.spent_by("buyer"), f64::MAX);
    let text = serde_json::to_string(&state).unwrap();
    let back: Result<CrewState, _> = serde_json::from_str(&text);
    assert_eq!(back.ok(), Some(state), "{text}");
}
