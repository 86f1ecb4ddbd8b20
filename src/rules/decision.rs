//! The decision: `evaluate(call, policy)`, a pure function from a call and a policy to a
//! judgement, and `evaluate_with_state(call, policy, state)` for the rules that look at what an
//! agent did earlier in the stream ([`crate::state`]). No I/O, no clock, no randomness.
//!
//! The rules, strongest first (docs/policy.md, "Decisions"). The decision is the strongest that
//! matches, with the reasons of every rule that matched at that strength:
//! 1. malformed call → deny ([`Judgement::malformed`])
//! 2. `tool` in `denyTools` → deny
//! 3. `agents` names the agent (or has a `*` entry) and the tool is not in its list → deny
//! 4. `tool` in `sensitiveTools` and the source is untrusted content (or counts as it) → deny
//! 5. `tool` in `sensitiveTools`, the agent is tainted, and the source is not `user` → hold
//! 6. `args.amount` above `holdAboveAmount` → hold (exactly the limit is not above it)
//! 7. `args.amount` present but not understood, or an argument spelt like `amount` but not as it
//!    (`AMOUNT`, `Amount`, `amount\u{200b}`) → hold
//! 8. the spend in the stream would go above `holdAboveTotal` → hold: the agent's own, or every
//!    agent's together with `budgetScope: "crew"`
//! 9. `args` outside the tool's `toolArgs` schema → deny, whoever asks ([`crate::argrules`]);
//!    and, for every tool, two keys of one object in `args` that differ only in case, fullwidth
//!    letters or invisible characters (`to` and `TO`) → deny: a tool that reads names without
//!    case takes either, and the rules read one
//! 10. otherwise → allow, with a reason too
//!
//! Rule 5 gives way for a tool whose `toolArgs` entry says `whenTainted: "allow"` and whose args
//! are inside its schema: the call is allowed, and the reason says the taint was seen and why.
//!
//! For coding agents, the `commands` and `paths` keys add their findings
//! ([`super::coding::coding_agent_findings`]): a shell tool that `commands` maps is decided by its
//! command, which replaces rule 5 for it (an allow counts as hold for a tainted agent unless the
//! rule says otherwise); a file tool that `paths` maps gets its path's decision when it is
//! stricter than allow, and rule 5 still holds it.
//!
//! The instruction text is never read: provenance decides, not keywords. Each rule is one
//! function in [`RULES`]; a new rule is one more function there. Rules only ever add findings,
//! so the stateful rules can only make a decision stronger than the stateless ones.

use super::argrules::{self, Violation, WhenTainted};
use super::granting::{Endorsed, Granted};
use super::policy::{BudgetScope, Policy};
use super::state::{CrewState, Span, TaintCause};
use crate::amount::Amount;
use crate::call::{Call, Malformed, Source};
use crate::sanitize::quoted;
use crate::verdict::Decision;
use crate::verdict::Judgement;

impl Judgement {
    /// Rule 1: a malformed call is denied, with what is wrong with it as the reasons.
    pub fn malformed(malformed: &Malformed) -> Judgement {
        let mut reasons: Vec<String> = malformed
            .reasons
            .iter()
            .map(|reason| format!("malformed call: {reason}"))
            .collect();
        if reasons.is_empty() {
            reasons.push("malformed call".to_owned());
        }
        Judgement {
            granting: Default::default(),
            decision: Decision::Deny,
            reasons,
        }
    }
}

/// One rule's finding about a call.
struct Finding {
    decision: Decision,
    reason: String,
}

type Rule = fn(&Call, &Policy, &CrewState, &Endorsed) -> Option<Finding>;

/// Rules 2 to 9, each with its kind (what a `call` grant names as the reasons it covers).
/// Rule 1 is [`Judgement::malformed`]; rule 10 is the fallback in [`evaluate_with_state`]; the
/// `commands`, `paths` and `sandbox` findings are of kind `coding`.
/// The kinds of rule whose hold the session's taint makes: a yes to one covers only the taint's
/// sources and untrusted values its record showed (sc-exec compares them as it decides again).
pub const TAINT_KINDS: [&str; 2] = [TAINT, CODING_TAINTED];
const TAINT: &str = "taint";
const CODING_TAINTED: &str = "coding-tainted";

const RULES: &[(&str, Rule)] = &[
    ("deny-list", deny_listed_tool),
    ("agents", tool_not_allowed_for_agent),
    ("untrusted-source", sensitive_tool_from_untrusted_source),
    (TAINT, sensitive_tool_from_tainted_agent),
    (TAINT, unnamed_tool_from_tainted_agent),
    ("amount", amount_rules),
    ("amount-spelling", amount_spelt_another_way),
    ("budget", spend_budget),
    ("schema", args_outside_schema),
    ("keys", args_keys_spelt_alike),
];

/// Decides a well-formed call under a policy, as the first call of a stream.
pub fn evaluate(call: &Call, policy: &Policy) -> Judgement {
    evaluate_with_state(call, policy, &CrewState::new())
}

/// What the door knows about how a call will run, beyond the call itself. Every door but
/// sc-hook passes the default: not confined, the project is the root (`--root`, else the call's
/// `cwd`).
#[derive(Debug, Clone, Copy, Default)]
pub struct CallContext<'a> {
    /// The call runs under the sandbox (sc-hook rewrites a `Bash` call to run under
    /// sc-sandbox): a `commands` rule's `whenConfined` decides in place of its `decision` and
    /// `whenTainted`.
    pub confined: bool,
    /// The project's folder, which the sandbox is rooted at: its relative `readOnly` and
    /// `hidden` places are placed there for the file tools. `None`: `--root`, else the call's
    /// `cwd`.
    pub project: Option<&'a std::path::Path>,
    /// The call's arguments with a file tool's path replaced by where it leads on the file
    /// system (its symbolic links resolved), when that differs from the path as written: the
    /// `paths` rules and the sandbox's places judge both, so a link to `.claude` does not carry
    /// a write past them. Only a door that sees the file system gives it (sc-hook).
    pub resolved: Option<&'a serde_json::Map<String, serde_json::Value>>,
    /// The crew's remembered approvals, as the door read them ([`super::grant`]); `None`: the
    /// door keeps none.
    pub grants: Option<Granted<'a>>,
    /// What the host name of a fetch tool's URL resolved to (`fetch` key), when the door
    /// resolved it within its deadline; empty: judged by the name alone.
    pub addresses: &'a [std::net::IpAddr],
    /// Where a shell command's paths lead through symbolic links, when the door sees the file
    /// system (sc-hook): the `paths` rules judge those places too, and the strictest answer wins.
    pub links: Option<super::paths::Links<'a>>,
}

/// Decides a well-formed call under a policy, given what the stream so far did.
pub fn evaluate_with_state(call: &Call, policy: &Policy, state: &CrewState) -> Judgement {
    evaluate_in(call, policy, state, CallContext::default())
}

/// [`evaluate_with_state`], with what the door knows about how the call runs.
pub fn evaluate_in(
    call: &Call,
    policy: &Policy,
    state: &CrewState,
    context: CallContext,
) -> Judgement {
    let endorsed = Endorsed::with_cause(
        call,
        policy,
        state
            .taint_of(&call.agent, policy)
            .map(super::state::TaintCause::sources),
        context.grants,
    );
    let mut findings: Vec<(&'static str, Decision, String)> = RULES
        .iter()
        .filter_map(|(kind, rule)| {
            rule(call, policy, state, &endorsed).map(|f| (*kind, f.decision, f.reason))
        })
        .collect();
    findings.extend(
        coding_agent_rules(call, policy, state, context)
            .into_iter()
            .map(|(kind, f)| (kind, f.decision, f.reason)),
    );
    super::granting::settle(call, policy, &endorsed, findings, || allow_reason(call))
}

/// Decides a line's outcome: the call's judgement, or a deny for a malformed one.
/// The one decision every door makes: decides `call` (`id`) against the policy and the crew's
/// state, and records in the state what the call changes (spend, taint, reads), with a taint
/// recorded at `at` when given. sc-gate, sc-hook, sc-mcp and sc-exec all call this, inside the
/// store's atomic update when the state is shared.
pub fn decide(
    call: &Call,
    id: &str,
    policy: &Policy,
    state: &mut CrewState,
    at: Option<std::time::SystemTime>,
) -> Judgement {
    decide_in(call, id, policy, state, at, CallContext::default())
}

/// [`decide`], with what the door knows about how the call runs ([`CallContext`]): sc-hook
/// passes whether it confines the call, and the project's folder; every other door
/// passes the default.
pub fn decide_in(
    call: &Call,
    id: &str,
    policy: &Policy,
    state: &mut CrewState,
    at: Option<std::time::SystemTime>,
    context: CallContext,
) -> Judgement {
    let judgement = evaluate_in(call, policy, state, context);
    state.record_at(call, id, &judgement, policy, at);
    judgement
}

pub fn evaluate_parsed(
    call: &Result<Call, Malformed>,
    policy: &Policy,
    state: &CrewState,
) -> Judgement {
    match call {
        Ok(call) => evaluate_with_state(call, policy, state),
        Err(malformed) => Judgement::malformed(malformed),
    }
}

fn deny_listed_tool(call: &Call, policy: &Policy, _: &CrewState, _: &Endorsed) -> Option<Finding> {
    policy.is_denied(&call.tool).then(|| Finding {
        decision: Decision::Deny,
        reason: format!("{} is on the policy's deny list", quoted(&call.tool)),
    })
}

fn tool_not_allowed_for_agent(
    call: &Call,
    policy: &Policy,
    _: &CrewState,
    _: &Endorsed,
) -> Option<Finding> {
    let allowed = policy.allowed_tools(&call.agent)?;
    (!allowed.matches(&call.tool)).then(|| Finding {
        decision: Decision::Deny,
        reason: format!(
            "agent {} may not use {}: the policy allows it only {}",
            quoted(&call.agent),
            quoted(&call.tool),
            if allowed.patterns().is_empty() {
                "no tools".to_owned()
            } else {
                allowed.to_string()
            }
        ),
    })
}

fn sensitive_tool_from_untrusted_source(
    call: &Call,
    policy: &Policy,
    _: &CrewState,
    _: &Endorsed,
) -> Option<Finding> {
    (policy.is_sensitive(&call.tool) && !call.provenance.is_trusted()).then(|| Finding {
        decision: Decision::Deny,
        reason: format!(
            "{} is a sensitive tool and the call's source is {}: only a user or agent may order it",
            quoted(&call.tool),
            call.provenance
        ),
    })
}

fn sensitive_tool_from_tainted_agent(
    call: &Call,
    policy: &Policy,
    state: &CrewState,
    endorsed: &Endorsed,
) -> Option<Finding> {
    if !policy.is_sensitive(&call.tool)
        || call.provenance.source() == Source::User
        || is_command_tool(call, policy)
        || is_confined_file_write(call, policy)
    {
        return None;
    }
    let cause = state.taint_of(&call.agent, policy)?;
    let mut rules = policy.arg_rules_for(&call.tool).peekable();
    let bounded = rules.peek().is_some()
        && policy
            .arg_rules_for(&call.tool)
            .all(|rule| rule.when_tainted == WhenTainted::Allow)
        && argrules::check_all(rules, &call.tool, &call.args).is_none();
    if bounded {
        return Some(Finding {
            decision: Decision::Allow,
            reason: format!(
                "{} is tainted by {}, but the policy allows {} to a tainted agent inside its argument schema, and these arguments are inside it",
                quoted(&call.agent),
                cause.describe(),
                quoted(&call.tool)
            ),
        });
    }
    let reason = tainted_by(
        call,
        cause,
        state,
        ", so a sensitive call from it needs a person unless the user ordered it",
    );
    // With `provenance`, the hold needs an argument that carries an untrusted value.
    let (decision, reason) = match policy.provenance() {
        Some(rules) => {
            let ledger = state.provenance.ledger(&call.agent, policy);
            super::provenance::judge(call, policy, rules, ledger, reason, endorsed)
        }
        None => (Decision::Hold, reason),
    };
    Some(Finding { decision, reason })
}

/// Rule 5, for a tool no key of the policy names that `holdUnnamedWhenTainted` takes in (an
/// MCP server's tool the pack was not written for): held for a tainted agent unless the user
/// ordered the call.
fn unnamed_tool_from_tainted_agent(
    call: &Call,
    policy: &Policy,
    state: &CrewState,
    _: &Endorsed,
) -> Option<Finding> {
    if call.provenance.source() == Source::User || !policy.holds_unnamed(&call.tool) {
        return None;
    }
    let cause = state.taint_of(&call.agent, policy)?;
    Some(Finding {
        decision: Decision::Hold,
        reason: tainted_by(
            call,
            cause,
            state,
            ", and no key of the policy names this tool (holdUnnamedWhenTainted), so a call of it needs a person unless the user ordered it",
        ),
    })
}

/// `agent is tainted: untrusted content was read through … earlier in this stream`.
fn tainted_by(call: &Call, cause: &TaintCause, state: &CrewState, then: &str) -> String {
    // Joined, not formatted: every hold of a tainted agent writes it.
    let agent = quoted(&call.agent);
    let cause = cause.describe();
    let mut reason = String::with_capacity(agent.len() + cause.len() + then.len() + 96);
    reason.push_str(&agent);
    reason.push_str(" is tainted: untrusted content was read through ");
    reason.push_str(cause);
    match &state.span {
        Span::Crew(crew) => {
            reason.push_str(" earlier in crew ");
            reason.push_str(&quoted(crew));
            reason.push_str("'s shared state");
        }
        Span::Session => reason.push_str(" earlier in this session"),
        Span::Stream => reason.push_str(" earlier in this stream"),
    }
    reason.push_str(then);
    reason
}

/// Whether a file tool's write is judged as a confined call's write, in place of rule 5: the
/// policy's `sandbox.confineFileTools`, a tool `paths` maps as a write, and a sandbox that
/// applies to a tainted session (rule 5 is only asked about a tainted agent). The sandbox's
/// `readOnly` and `hidden` places, the `paths` rules and `outsideRoot` still judge its path
/// ([`coding_agent_rules`]).
fn is_confined_file_write(call: &Call, policy: &Policy) -> bool {
    let Some(sandbox) = policy.sandbox() else {
        return false;
    };
    sandbox.confine_file_tools
        && sandbox.when.applies(true)
        && policy.paths().is_some_and(|paths| {
            paths.arg_key(&call.tool).is_some() && paths.is_write_tool(&call.tool)
        })
}

/// Whether `commands` decides the tool, in place of rule 5.
fn is_command_tool(call: &Call, policy: &Policy) -> bool {
    policy
        .commands()
        .is_some_and(|commands| commands.arg_key(&call.tool).is_some())
}

/// The `commands` and `paths` findings, each reason its own; and, where the policy's sandbox
/// applies to the session (`sandbox.when`), its `readOnly` and `hidden` places for the file
/// tools, which it does not confine.
fn coding_agent_rules(
    call: &Call,
    policy: &Policy,
    state: &CrewState,
    context: CallContext,
) -> Vec<(&'static str, Finding)> {
    if policy.commands().is_none()
        && policy.paths().is_none()
        && policy.sandbox().is_none()
        && policy.fetch().is_none()
    {
        return Vec::new();
    }
    let cause = match call.provenance.source() {
        Source::User => None,
        _ => state.taint_of(&call.agent, policy),
    };
    // As sc-hook decides confinement: the agent's taint whoever ordered the call, and a call
    // whose own output taints the session counts as tainted.
    let sandboxed = policy.sandbox().is_some_and(|sandbox| {
        sandbox.when.applies(
            state.taint_of(&call.agent, policy).is_some()
                || policy.has_untrusted_output(&call.tool),
        )
    });
    let judging = super::coding::Judging {
        tainted: cause.is_some(),
        confined: context.confined,
        sandboxed,
        project: context.project,
        resolved: context.resolved,
        addresses: context.addresses,
        links: context.links,
    };
    let mut findings = Vec::new();
    for found in super::coding::coding_agent_findings(call, policy, judging) {
        let decision = found.decision;
        // A finding on a tainted agent (or one the taint made) is of its own kind: a `call`
        // grant given before the session was tainted does not cover it.
        let kind = if found.by_taint || cause.is_some() {
            CODING_TAINTED
        } else {
            "coding"
        };
        findings.extend(
            found
                .reasons
                .into_iter()
                .map(|reason| (kind, Finding { decision, reason })),
        );
        if let (true, Some(cause)) = (found.by_taint, cause) {
            findings.push((
                TAINT,
                Finding {
                    decision,
                    reason: tainted_by(call, cause, state, ""),
                },
            ));
        }
    }
    findings
}

fn spend_budget(call: &Call, policy: &Policy, state: &CrewState, _: &Endorsed) -> Option<Finding> {
    let budget = policy.hold_above_total()?;
    let amount = Amount::from_json_exact(call.args.get("amount")?, call.amount_text.as_deref());
    let Amount::Understood { value, .. } = amount else {
        return None;
    };
    let (before, before_inexact) = state.spent_in_scope(&call.agent, policy);
    let (total, sum_exact) = super::state::add_exactly(before, value);
    let exact = sum_exact && super::state::amount_and_exactness(&amount).1 && !before_inexact;
    let (whose, before_whom, budget_of) = match policy.budget_scope() {
        BudgetScope::Agent => (
            format!("{}'s amounts", quoted(&call.agent)),
            "before this call",
            "the budget",
        ),
        BudgetScope::Crew => (
            "the crew's amounts (every agent's together)".to_owned(),
            "by the crew before this call",
            "the crew's budget",
        ),
    };
    // Only written when a reason needs it.
    let span = || match (&state.spend_window, policy.budget_window()) {
        (Some(window), Some(_)) => format!("in this UTC {} (from {})", window.unit, window.start),
        _ => match &state.span {
            Span::Stream => "in this stream".to_owned(),
            Span::Session => "in this session".to_owned(),
            Span::Crew(crew) => format!("in crew {} since its state was last reset", quoted(crew)),
        },
    };
    if total > budget {
        return Some(Finding {
            decision: Decision::Hold,
            reason: format!(
                "{whose} {} would total {total} ({before} {before_whom}), above {budget_of} of {budget}",
                span()
            ),
        });
    }
    // A tie in floats with a total that is not exact could be above the budget in decimal.
    (total == budget && !exact).then(|| Finding {
        decision: Decision::Hold,
        reason: format!(
            "{whose} {} would total about {total}, too close to {budget_of} of {budget} to tell in floating point, so a person must check it",
            span()
        ),
    })
}

fn args_outside_schema(
    call: &Call,
    policy: &Policy,
    _: &CrewState,
    _: &Endorsed,
) -> Option<Finding> {
    let Violation(reason) =
        argrules::check_all(policy.arg_rules_for(&call.tool), &call.tool, &call.args)?;
    Some(Finding {
        decision: Decision::Deny,
        reason,
    })
}

fn args_keys_spelt_alike(call: &Call, _: &Policy, _: &CrewState, _: &Endorsed) -> Option<Finding> {
    if !call.args.keys_may_fold() {
        return None;
    }
    let (path, first, second) = crate::call::keys_spelt_alike(call.args.map())?;
    let within = if path.is_empty() {
        "the arguments".to_owned()
    } else {
        format!("argument `{}`", quoted(&path.join(".")))
    };
    Some(Finding {
        decision: Decision::Deny,
        reason: format!(
            "{within} of {} hold both `{}` and `{}`, which differ only in case, fullwidth letters or invisible characters: a tool that reads names without case would take either, and the policy's rules read one",
            quoted(&call.tool),
            quoted(&first),
            quoted(&second)
        ),
    })
}

fn amount_spelt_another_way(
    call: &Call,
    _: &Policy,
    _: &CrewState,
    _: &Endorsed,
) -> Option<Finding> {
    if call.args.amount().is_some() || !call.args.keys_may_fold() {
        return None;
    }
    let key = call
        .args
        .map()
        .keys()
        .find(|key| crate::call::fold_key(key) == "amount")?;
    Some(Finding {
        decision: Decision::Hold,
        reason: format!(
            "argument `{}` is spelt like `amount` but is not it, so the amount rules cannot read it, and a tool that reads names without case would take it as the amount; a person must check it",
            quoted(key)
        ),
    })
}

fn amount_rules(call: &Call, policy: &Policy, _: &CrewState, _: &Endorsed) -> Option<Finding> {
    let limit = policy.hold_above_amount();
    let amount = Amount::from_json_exact(call.args.get("amount")?, call.amount_text.as_deref());
    let above = amount.is_above(limit);
    match amount {
        Amount::Understood { text, .. } => above.then(|| {
            // Joined, not formatted: every payment held for its amount says it.
            let (amount, limit) = (quoted(&text), policy.hold_above_amount_text());
            let mut reason = String::with_capacity(amount.len() + limit.len() + 40);
            reason.push_str("amount ");
            reason.push_str(&amount);
            reason.push_str(" is above the hold limit of ");
            reason.push_str(limit);
            Finding {
                decision: Decision::Hold,
                reason,
            }
        }),
        Amount::NotUnderstood { text } => Some(Finding {
            decision: Decision::Hold,
            reason: format!(
                "amount {} is not understood (expected a number ≥ 0 such as 750, \"750.00\" or \"$750\"), so a person must check it",
                quoted(&text)
            ),
        }),
    }
}

/// The reason of most verdicts: joined from its parts rather than formatted (the formatter's
/// machinery cost the gate more than the rest of the sentence), the same text as
/// `format!("trusted source {}; within policy", call.provenance)` and its untrusted twin.
fn allow_reason(call: &Call) -> String {
    let source: &str = match &call.provenance {
        crate::call::Provenance::Stated(source) => source.as_str(),
        other => return allow_reason_formatted(call, other),
    };
    let mut reason = String::with_capacity(96);
    if call.provenance.is_trusted() {
        reason.push_str("trusted source ");
        reason.push_str(source);
        reason.push_str("; within policy");
    } else {
        reason.push_str("source ");
        reason.push_str(source);
        reason.push_str(", but ");
        reason.push_str(&quoted(&call.tool));
        reason.push_str(" is not a sensitive tool; within policy");
    }
    reason
}

fn allow_reason_formatted(call: &Call, provenance: &crate::call::Provenance) -> String {
    if provenance.is_trusted() {
        format!("trusted source {provenance}; within policy")
    } else {
        format!(
            "source {provenance}, but {} is not a sensitive tool; within policy",
            quoted(&call.tool)
        )
    }
}

#[cfg(test)]
#[path = "decision_tests.rs"]
mod tests;

/// The `commands` and `paths` keys in the decision.
#[cfg(test)]
mod coding_agent_tests {
    use std::path::PathBuf;

    use super::*;
    use crate::rules::paths::Places;

    const ISSUE_POLICY: &str = r#"{
      "sensitiveTools": ["Bash", "Write", "Edit"],
      "untrustedOutputTools": ["WebFetch"],
      "commands": {
        "tools": {"Bash": "command"},
        "rules": [
          {"prefix": ["git", ["status", "diff", "log", "show"]], "decision": "allow", "whenTainted": "allow",
           "match": ["git status", "git log --oneline -5"], "notMatch": ["git push"]},
          {"prefix": ["cargo", ["test", "build"]], "decision": "allow", "whenTainted": "allow"},
          {"prefix": ["git", "push"], "decision": "hold"},
          {"prefix": ["rm"], "decision": "hold"},
          {"prefix": ["rm", "-r", "-f"], "decision": "deny"},
          {"prefix": ["ls"], "decision": "allow"}
        ],
        "unmatched": "hold",
        "dynamic": "hold"
      },
      "paths": {
        "tools": {"Write": "file_path", "Edit": "file_path", "Read": "file_path"},
        "writeTools": ["Write", "Edit"],
        "rules": [
          {"glob": [".claude/**", "~/.bashrc"], "write": "deny"},
          {"glob": ["**/.env", "~/.ssh/**"], "read": "hold"}
        ],
        "outsideRoot": "hold"
      }
    }"#;

    fn policy(text: &str) -> Policy {
        Policy::from_json_str(text).unwrap().with_places(Places {
            home: Some(PathBuf::from("/home/me")),
            root: None,
        })
    }

    fn call(tool: &str, args: &str, source: &str, cwd: Option<&str>) -> Call {
        let cwd = cwd.map(|c| format!(r#","cwd":"{c}""#)).unwrap_or_default();
        let line = format!(
            r#"{{"agent":"coder","tool":"{tool}","args":{args},"source":"{source}"{cwd}}}"#
        );
        Call::parse_line(line.as_bytes()).unwrap().0
    }

    fn bash(command: &str) -> Call {
        call(
            "Bash",
            &serde_json::json!({ "command": command }).to_string(),
            "agent",
            Some("/w/proj"),
        )
    }

    /// A state in which every agent read a web page.
    fn tainted(policy: &Policy) -> CrewState {
        let mut state = CrewState::new();
        let fetch = call("WebFetch", r#"{"url":"https://x.example"}"#, "agent", None);
        let judged = evaluate(&fetch, policy);
        state.record(&fetch, "fetch-1", &judged, policy);
        let reader = call("WebFetch", r#"{"url":"https://x.example"}"#, "agent", None);
        assert!(state.taint_of(&reader.agent, policy).is_some());
        state
    }

    #[test]
    fn the_command_decides_a_shell_tool_with_the_issue_reason() {
        let policy = policy(ISSUE_POLICY);
        let judged = evaluate(&bash("cargo build && rm -rf build"), &policy);
        assert_eq!(judged.decision, Decision::Deny);
        assert_eq!(
            judged.reasons,
            [
                r#"rm -rf build (in "cargo build && rm -rf build") matches commands.rules[4] (prefix rm -r -f): deny"#
            ]
        );
        let allowed = evaluate(&bash("git status"), &policy);
        assert_eq!(allowed.decision, Decision::Allow);
        assert_eq!(
            allowed.reasons,
            ["git status matches commands.rules[0] (prefix git [status|diff|log|show]): allow"]
        );
        assert_eq!(
            evaluate(&bash("git push"), &policy).decision,
            Decision::Hold
        );
        assert_eq!(evaluate(&bash("make"), &policy).decision, Decision::Hold);
    }

    #[test]
    fn for_a_tainted_agent_the_command_replaces_the_taint_rule() {
        let policy = policy(ISSUE_POLICY);
        let state = tainted(&policy);
        // Bash is sensitive, but its command decides: a read-only command still runs.
        let judged = evaluate_with_state(&bash("git log --oneline -5"), &policy, &state);
        assert_eq!(judged.decision, Decision::Allow, "{judged:?}");
        // An allow without whenTainted is held, and the reasons say what tainted the agent.
        let judged = evaluate_with_state(&bash("ls -la"), &policy, &state);
        assert_eq!(judged.decision, Decision::Hold);
        assert!(
            judged.reasons[0].contains("the agent is tainted"),
            "{judged:?}"
        );
        assert!(
            judged.reasons[1].starts_with(
                "coder is tainted: untrusted content was read through WebFetch (id fetch-1"
            ),
            "{judged:?}"
        );
        // A deny stays a deny, with its own reason only.
        let judged = evaluate_with_state(&bash("rm -fr /"), &policy, &state);
        assert_eq!(judged.decision, Decision::Deny);
        assert_eq!(judged.reasons.len(), 1, "{judged:?}");
        // What the user ordered is not held for the taint, as under the taint rule.
        let ordered = call("Bash", r#"{"command":"ls"}"#, "user", Some("/w/proj"));
        assert_eq!(
            evaluate_with_state(&ordered, &policy, &state).decision,
            Decision::Allow
        );
    }

    #[test]
    fn every_other_rule_still_applies_and_the_strictest_wins() {
        let denied = policy(
            r#"{"denyTools": ["Bash"], "commands": {"tools": {"Bash": "command"},
                "rules": [{"prefix": ["ls"], "decision": "allow"}]}}"#,
        );
        let judged = evaluate(&bash("ls"), &denied);
        assert_eq!(judged.decision, Decision::Deny);
        assert!(judged.reasons[0].contains("deny list"), "{judged:?}");
        // Provenance: a sensitive shell tool ordered by untrusted content is denied.
        let policy = policy(ISSUE_POLICY);
        let injected = call("Bash", r#"{"command":"ls"}"#, "untrusted-content", None);
        assert_eq!(evaluate(&injected, &policy).decision, Decision::Deny);
        // Amounts: an amount above the limit holds, whatever the command.
        let paid = call(
            "Bash",
            r#"{"command":"git status","amount":500}"#,
            "agent",
            Some("/w/proj"),
        );
        assert_eq!(evaluate(&paid, &policy).decision, Decision::Hold);
        // A malformed command argument is denied.
        let missing = call("Bash", r#"{"cmd":"ls"}"#, "agent", None);
        let judged = evaluate(&missing, &policy);
        assert_eq!(judged.decision, Decision::Deny);
        assert!(
            judged.reasons[0].starts_with("malformed call: "),
            "{judged:?}"
        );
    }

    #[test]
    fn confined_file_tools_write_where_a_confined_command_could_and_nowhere_else() {
        let text = ISSUE_POLICY.trim_end().trim_end_matches('}').to_owned()
            + r#", "sandbox": {"when": "tainted", "readOnly": [".mcp.json"], "hidden": [".env.local"], "confineFileTools": true}}"#;
        let confining = policy(&text);
        let state = tainted(&confining);
        let write = |path: &str| {
            let judged = evaluate_with_state(
                &call(
                    "Write",
                    &serde_json::json!({ "file_path": path }).to_string(),
                    "agent",
                    Some("/w/proj"),
                ),
                &confining,
                &state,
            );
            judged.decision
        };
        // Inside the root, not protected: the taint rule does not hold it.
        assert_eq!(write("src/main.rs"), Decision::Allow);
        // The paths rules, the sandbox's places and outsideRoot still judge it.
        assert_eq!(write(".claude/settings.json"), Decision::Deny);
        assert!(write(".mcp.json") > Decision::Allow);
        assert!(write(".env.local") > Decision::Allow);
        assert_eq!(write("/etc/passwd"), Decision::Hold);
        assert_eq!(write("../elsewhere/x"), Decision::Hold);
        // Without the key, the taint rule holds every write, as before.
        let without = ISSUE_POLICY.trim_end().trim_end_matches('}').to_owned()
            + r#", "sandbox": {"when": "tainted"}}"#;
        let without = policy(&without);
        let state = tainted(&without);
        let judged = evaluate_with_state(
            &call(
                "Write",
                r#"{"file_path":"src/main.rs"}"#,
                "agent",
                Some("/w/proj"),
            ),
            &without,
            &state,
        );
        assert_eq!(judged.decision, Decision::Hold);
        assert!(
            judged.reasons.iter().any(|r| r.contains("is tainted")),
            "{judged:?}"
        );
    }

    #[test]
    fn path_rules_only_add_and_never_lift_the_taint_rule() {
        let policy = policy(ISSUE_POLICY);
        let write = |path: &str, cwd: Option<&str>| {
            call(
                "Write",
                &serde_json::json!({ "file_path": path }).to_string(),
                "agent",
                cwd,
            )
        };
        let judged = evaluate(
            &write("src/../.claude/settings.json", Some("/w/proj")),
            &policy,
        );
        assert_eq!(judged.decision, Decision::Deny);
        assert_eq!(
            judged.reasons,
            [
                r#"write of "/w/proj/.claude/settings.json" matches paths.rules[0] (glob .claude/**): deny"#
            ]
        );
        assert_eq!(
            evaluate(&write("~/.bashrc", Some("/w/proj")), &policy).decision,
            Decision::Deny
        );
        let fine = evaluate(&write("src/main.rs", Some("/w/proj")), &policy);
        assert_eq!(fine.decision, Decision::Allow);
        assert!(fine.reasons[0].contains("within policy"), "{fine:?}");
        // No cwd and no root: a relative path is outside the root.
        assert_eq!(
            evaluate(&write("src/main.rs", None), &policy).decision,
            Decision::Hold
        );
        // Tainted: the taint rule still holds a sensitive file tool, whatever the path.
        let state = tainted(&policy);
        let judged = evaluate_with_state(&write("src/main.rs", Some("/w/proj")), &policy, &state);
        assert_eq!(judged.decision, Decision::Hold);
        assert!(judged.reasons[0].contains("is tainted"), "{judged:?}");
        // Read is not sensitive; a secret's read is held by its rule.
        let read = call("Read", r#"{"file_path":"~/.ssh/id_rsa"}"#, "agent", None);
        assert_eq!(evaluate(&read, &policy).decision, Decision::Hold);
        // The gate's own files, protected at start.
        let mut guarded = policy.clone();
        guarded.protect(std::path::Path::new("/etc/sc/policy.json"), "policy file");
        let judged = evaluate(&write("/etc/sc/policy.json", Some("/etc/sc")), &guarded);
        assert_eq!(judged.decision, Decision::Deny);
        assert!(
            judged.reasons[0].contains("the gate's own policy file"),
            "{judged:?}"
        );
    }

    #[test]
    fn the_root_places_calls_without_a_cwd() {
        let rooted = Policy::from_json_str(ISSUE_POLICY)
            .unwrap()
            .with_places(Places {
                home: None,
                root: Some(PathBuf::from("/w/proj")),
            });
        let write = call("Write", r#"{"file_path":".claude/x.json"}"#, "agent", None);
        let judged = evaluate(&write, &rooted);
        assert_eq!(judged.decision, Decision::Deny);
        assert!(
            judged.reasons[0].contains("/w/proj/.claude/x.json"),
            "{judged:?}"
        );
        let inside = call("Write", r#"{"file_path":"a.txt"}"#, "agent", None);
        assert_eq!(evaluate(&inside, &rooted).decision, Decision::Allow);
    }

    const SANDBOX_POLICY: &str = r#"{
      "sensitiveTools": ["Bash"],
      "untrustedOutputTools": ["WebFetch"],
      "commands": {
        "tools": {"Bash": "command"},
        "rules": [
          {"prefix": ["python3"], "decision": "hold", "whenConfined": "allow"},
          {"prefix": ["curl"], "decision": "hold"}
        ],
        "programByPath": {"decision": "hold", "whenConfined": "allow"}
      },
      "sandbox": {"when": "tainted", "readOnly": [".mcp.json", ".claude", "~/.bashrc"],
                  "hidden": ["~/.ssh"]}
    }"#;

    fn file_call(tool: &str, path: &str, cwd: &str) -> Call {
        call(
            tool,
            &serde_json::json!({ "file_path": path }).to_string(),
            "agent",
            Some(cwd),
        )
    }

    #[test]
    fn where_the_sandbox_applies_file_tools_cannot_change_its_read_only_places() {
        let policy = policy(SANDBOX_POLICY);
        let state = tainted(&policy);
        let judged =
            evaluate_with_state(&file_call("Write", ".mcp.json", "/w/proj"), &policy, &state);
        assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
        assert!(
            judged.reasons[0].contains("sandbox.readOnly[0]"),
            "{judged:?}"
        );
        let judged = evaluate_with_state(
            &file_call("Edit", ".claude/settings.json", "/w/proj"),
            &policy,
            &state,
        );
        assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
        assert!(
            judged.reasons[0].contains("sandbox.readOnly[1]"),
            "{judged:?}"
        );
        let judged =
            evaluate_with_state(&file_call("Write", "~/.bashrc", "/w/proj"), &policy, &state);
        assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
        // A hidden place's read is held.
        let judged = evaluate_with_state(
            &file_call("Read", "~/.ssh/id_rsa", "/w/proj"),
            &policy,
            &state,
        );
        assert_eq!(judged.decision, Decision::Hold, "{judged:?}");
        assert!(
            judged.reasons[0].contains("sandbox.hidden[0]"),
            "{judged:?}"
        );
        // Elsewhere, the file tools are as before.
        let fine = evaluate_with_state(&file_call("Write", "src/x.rs", "/w/proj"), &policy, &state);
        assert_eq!(fine.decision, Decision::Allow, "{fine:?}");
        // Untainted, `when: tainted` does not apply: the sandbox's places say nothing.
        let clean = evaluate(&file_call("Write", ".mcp.json", "/w/proj"), &policy);
        assert_eq!(clean.decision, Decision::Allow, "{clean:?}");
        // `when: always` applies to an untainted session too.
        let always =
            super::coding_agent_tests::policy(&SANDBOX_POLICY.replace("\"tainted\"", "\"always\""));
        let judged = evaluate(&file_call("Write", ".mcp.json", "/w/proj"), &always);
        assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
    }

    #[test]
    fn the_sandbox_places_sit_at_the_project_and_guard_the_gate_files() {
        let mut policy = policy(SANDBOX_POLICY);
        let state = tainted(&policy);
        let write = file_call("Write", "../.mcp.json", "/w/proj/sub");
        // Placed at the call's cwd, the project's file is not the sandbox's place ...
        let judged = evaluate_with_state(&write, &policy, &state);
        assert_eq!(judged.decision, Decision::Allow, "{judged:?}");
        // ... placed at the project, it is.
        let context = CallContext {
            confined: false,
            project: Some(std::path::Path::new("/w/proj")),
            ..CallContext::default()
        };
        let judged = evaluate_in(&write, &policy, &state, context);
        assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
        // A path through a link is judged where it leads too (sc-hook resolves it).
        let linked = file_call("Write", "/w/proj/cl/settings.json", "/w/proj");
        let judged = evaluate_in(&linked, &policy, &state, context);
        assert_eq!(judged.decision, Decision::Allow, "as written: {judged:?}");
        let leads = serde_json::json!({"file_path": "/w/proj/.claude/settings.json"});
        let through = CallContext {
            resolved: leads.as_object(),
            ..context
        };
        let judged = evaluate_in(&linked, &policy, &state, through);
        assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
        // The gate's own files, with no `paths` key.
        policy.protect(std::path::Path::new("/etc/sc/audit.jsonl"), "audit log");
        let judged = evaluate_with_state(
            &file_call("Write", "/etc/sc/audit.jsonl", "/w/proj"),
            &policy,
            &state,
        );
        assert_eq!(judged.decision, Decision::Deny, "{judged:?}");
        assert!(
            judged.reasons[0].contains("the gate's own audit log"),
            "{judged:?}"
        );
    }

    #[test]
    fn when_confined_decides_a_confined_call() {
        let policy = policy(SANDBOX_POLICY);
        let state = tainted(&policy);
        let confined = CallContext {
            confined: true,
            ..CallContext::default()
        };
        for command in ["python3 x.py", "./build.sh", "target/debug/tool --x"] {
            let held = evaluate_with_state(&bash(command), &policy, &state);
            assert_eq!(held.decision, Decision::Hold, "{command}: {held:?}");
            let judged = evaluate_in(&bash(command), &policy, &state, confined);
            assert_eq!(judged.decision, Decision::Allow, "{command}: {judged:?}");
            assert!(judged.reasons[0].contains("whenConfined"), "{judged:?}");
        }
        // Egress stays held, confined or not, and the strictest still wins.
        for command in [
            "curl -d @x https://x.example",
            "python3 x.py && curl x.example",
        ] {
            let judged = evaluate_in(&bash(command), &policy, &state, confined);
            assert_eq!(judged.decision, Decision::Hold, "{command}: {judged:?}");
        }
    }

    #[test]
    fn a_policy_without_the_keys_decides_as_before() {
        let plain = Policy::from_json_str(r#"{"sensitiveTools": ["Bash"]}"#).unwrap();
        let judged = evaluate(&bash("rm -rf /"), &plain);
        assert_eq!(judged.decision, Decision::Allow);
    }
}
