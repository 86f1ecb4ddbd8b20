//! A `PreToolUse`: the call decided on the state, audited, linked by its `tool_use_id`, and
//! answered.

use std::io::Write;

use anyhow::{anyhow, Context, Result};

use super::input::HookInput;
use super::links::{input_digest, update_links, ToolUse};
use super::output::{hook_answer, write_answer};
use super::sandbox::{applies, confine, confined_input, prepare, project_root, Confinement};
use super::HookOptions;
use crate::audit::{self, AuditLog, IdMinter, Stage};
use crate::call::Call;
use crate::rules::decision::{decide_in, CallContext};
use crate::store::{self, Shared, StateKey, View};
use crate::verdict::{Decision, Judgement};

/// Decides a `PreToolUse`: decides on the state in one atomic update, audits the decision,
/// remembers the call by its `tool_use_id` in the session's links, and only then writes the
/// answer (nothing for allow). A `Bash` call the policy's `sandbox` confines is answered with
/// the confined command ([`confine`]), or held when no sandbox can be made.
pub(super) fn decide(
    input: &[u8],
    hook: &HookInput,
    options: &HookOptions,
    audit_log: &mut AuditLog,
    out: &mut dyn Write,
) -> Result<Judgement> {
    let call_value = hook.call_value(&options.agent);
    let mut call = Call::from_value(&call_value)
        .map_err(|malformed| anyhow!("the hook input is not a call: {malformed}"))?;
    if let Ok(text) = std::str::from_utf8(input) {
        call.take_amount_text_from(text.trim(), &["tool_input", "amount"]);
    }
    let key = match &options.crew {
        Some(crew) => StateKey::crew(crew, View::Gate),
        None => StateKey::session(&hook.session_id),
    };
    let store = options
        .state
        .open(store::OpenOptions {
            create: true,
            fsync: options.fsync,
        })
        .context("state store unavailable")?;
    let mut shared = Shared::new(store, key);
    let id = IdMinter::new().mint();
    let project = options
        .policy
        .sandbox()
        .and_then(|_| project_root(options, hook.cwd.as_deref()));
    // Whether a sandbox can be made (it reads the machine, not the state) is found before the
    // decision, so that it knows whether the call will run confined; and only where the sandbox
    // applies, so that a session it does not apply to pays nothing for it.
    let mut prepared = None;
    // Where a file tool's path leads, links resolved (read before the decision: it reads the
    // file system, not the state).
    let resolved = if call.tool == "Bash" {
        None
    } else {
        super::resolved::resolved_args(&hook.tool_input, hook.cwd.as_deref())
    };
    // Where a command's paths lead through symbolic links: asked by the decision for each path
    // it judges, each answer kept for a second look (a store update that is retried).
    let leads = std::cell::RefCell::new(std::collections::HashMap::new());
    let listings = super::resolved::Listings::default();
    let places_behind = |path: &std::path::Path, wild: bool| {
        leads
            .borrow_mut()
            .entry((path.to_owned(), wild))
            .or_insert_with(|| super::resolved::places_behind(path, wild, &listings))
            .clone()
    };
    // Where a fetch tool's host name leads (read before the decision: it asks the resolver).
    let addresses =
        super::fetch_host::fetch_addresses(&options.policy, &call.tool, call.args.map());
    // Read, decide and write in one atomic update, the crew's remembered approvals read in it:
    // concurrent hooks never lose one.
    let mut decided = None;
    crate::stage::door::transact_with_grants(
        &mut shared,
        &options.policy,
        &options.timing,
        &mut |state, now, grants| {
            // The taint the decision reads, before the call itself changes the state.
            let tainted = state.taint_of(&call.agent, &options.policy).is_some();
            let applies = applies(options, &call.tool, tainted);
            let can_confine = applies
                && matches!(
                    prepared.get_or_insert_with(|| prepare(hook, &call.agent, options, &id)),
                    Some(Ok(_))
                );
            let context = CallContext {
                confined: can_confine,
                project: project.as_deref(),
                resolved: resolved.as_ref(),
                grants: Some(crate::rules::granting::Granted { grants, now }),
                addresses: &addresses,
                links: Some(crate::rules::paths::Links {
                    leads: &places_behind,
                    present: &super::resolved::present,
                    tree: &super::resolved::tree,
                }),
            };
            let judgement = decide_in(&call, &id, &options.policy, state, Some(now), context);
            decided = Some((judgement, state.agent(&call.agent).cloned(), applies));
        },
    )
    .context("state store unavailable")?;
    let (mut judgement, agent, applies) =
        decided.context("state store unavailable: no decision was made")?;
    let confinement = confine(
        prepared.flatten(),
        applies,
        judgement.decision == Decision::Deny,
    );
    let mut updated_input = None;
    let mut original = None;
    match confinement {
        Confinement::Unconfined => {}
        Confinement::Confined(confined) => {
            let (input, note) = confined_input(&hook.tool_input, &confined, &options.sandbox);
            judgement.reasons.extend(note);
            updated_input = Some(input);
            original = Some(confined.original);
            if runs_on_after_the_call(hook, options) && judgement.decision == Decision::Allow {
                // A confined run ends with its call, so it cannot change a path between a file
                // tool's decision and its write; one left running in the background could.
                judgement.decision = Decision::Hold;
                judgement.reasons.push(
                    "it runs in the background, and under sandbox.confineFileTools a confined command must end with its call: one left running could turn a path into a link between a file tool's decision and its write".to_owned(),
                );
            }
        }
        Confinement::Impossible(why) => {
            // Never run unconfined what the policy confines: a person decides.
            judgement.decision = Decision::Hold;
            judgement.reasons.push(why);
        }
    }
    let mut event = audit::event(Stage::Gate, &id)
        .field("decision", &judgement.decision)
        .field("reasons", &judgement.reasons)
        .field("call", &call_value)
        .field("agentKind", options.agent_kind);
    if let Some(native) = &hook.agent_tool {
        event = event.field("agentTool", native);
    }
    if let crate::verdict::Granting::AllowedBy(grants) = &judgement.granting {
        event = event.field("grants", grants);
    }
    if let Some(agent) = &agent {
        event = event.field("agentState", agent);
    }
    if let Some(original) = &original {
        event = event
            .field("sandboxed", &true)
            .field("originalCommand", original);
    }
    event = event.field("stateStore", shared.describe_store());
    if let Some(crew) = &options.crew {
        event = event.field("crew", crew);
    }
    audit_log.append(&event.finish())?;
    if let Some(tool_use_id) = &hook.tool_use_id {
        let linked = ToolUse {
            tool_use_id: tool_use_id.clone(),
            id,
            agent: call.agent.clone(),
            tool: call.tool.clone(),
            decision: Some(judgement.decision),
            // The input Claude Code will run, and report in the call's PostToolUse.
            input: Some(input_digest(
                updated_input.as_ref().unwrap_or(&hook.tool_input),
            )),
            ran: false,
        };
        update_links(shared.store(), &hook.session_id, |uses| {
            uses.decided(linked.clone())
        })
        .context("state store unavailable")?;
    }
    let approve_confined = options
        .policy
        .sandbox()
        .is_some_and(|sandbox| sandbox.approve_confined);
    if let Some(line) = hook_answer(
        &judgement,
        updated_input.as_ref(),
        hook.permission_mode.as_deref(),
        approve_confined,
    ) {
        write_answer(out, &line)?;
    }
    Ok(judgement)
}

/// Whether a confined `Bash` call would outlive its call (Claude Code's `run_in_background`)
/// in a session whose file tools are judged as confined (`sandbox.confineFileTools`).
fn runs_on_after_the_call(hook: &HookInput, options: &HookOptions) -> bool {
    let confine_file_tools = options
        .policy
        .sandbox()
        .is_some_and(|sandbox| sandbox.confine_file_tools);
    confine_file_tools
        && hook
            .tool_input
            .get("run_in_background")
            .is_some_and(|value| value != &serde_json::Value::Bool(false) && !value.is_null())
}
