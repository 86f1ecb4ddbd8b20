//! Value provenance in the hook: the user's prompt as trusted text, and the response of an
//! untrusted-output tool as untrusted values, both kept in the state the decisions read.

use anyhow::{Context, Result};

use super::input::HookInput;
use super::HookOptions;
use crate::audit::{self, AuditLog, IdMinter, Stage};
use crate::rules::provenance::{ResultRecord, TaskRecord, ValueRecord};
use crate::store::{self, Shared, StateKey, View};

fn shared(hook: &HookInput, options: &HookOptions) -> Result<Shared> {
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
    Ok(Shared::new(store, key))
}

/// Takes a record into the state and returns its audit event (`kind`, SHA-256, length and
/// the number of values taken, never the text).
fn take(hook: &HookInput, options: &HookOptions, record: &ValueRecord) -> Result<Vec<u8>> {
    let mut shared = shared(hook, options)?;
    let id = IdMinter::new().mint();
    let mut values = None;
    shared
        .transact(&options.policy, &options.timing, &mut |state, _| {
            values = record.apply(state, &id, &options.policy);
        })
        .context("state store unavailable")?;
    let mut event = audit::event(Stage::Gate, &id)
        .raw_members(&record.event_members(values))
        .field("stateStore", shared.describe_store());
    if let Some(crew) = &options.crew {
        event = event.field("crew", crew);
    }
    Ok(event.finish())
}

/// A `UserPromptSubmit`: the prompt is the user's instruction to the main thread's agent.
pub(super) fn take_prompt(
    hook: &HookInput,
    options: &HookOptions,
    audit_log: &mut AuditLog,
) -> Result<()> {
    let record = ValueRecord::Task(TaskRecord {
        agent: hook.agent(&options.agent).to_owned(),
        instruction: hook.prompt.clone().unwrap_or_default(),
    });
    let event = take(hook, options, &record)?;
    audit_log.append(&event)
}

/// A `PostToolUse` of an untrusted-output tool that ran although the gate never allowed it
/// (no `PreToolUse` of sc-hook saw it, or sc-hook denied it): its output reached the agent all
/// the same, so the agent (and the crew) are tainted as an allowed call of it taints them,
/// under `id`, the id of its `exec` event ([`crate::rules::state::CrewState::record_at`]).
pub(super) fn taint_by_run(hook: &HookInput, options: &HookOptions, id: &str) -> Result<()> {
    let call = crate::call::Call::from_value(&hook.call_value(&options.agent))
        .map_err(|malformed| anyhow::anyhow!("the hook input is not a call: {malformed}"))?;
    let ran = crate::verdict::Judgement {
        granting: Default::default(),
        decision: crate::verdict::Decision::Allow,
        reasons: Vec::new(),
    };
    let mut shared = shared(hook, options)?;
    shared
        .transact(&options.policy, &options.timing, &mut |state, now| {
            state.record_at(&call, id, &ran, &options.policy, Some(now));
        })
        .context("state store unavailable")
}

/// A `PostToolUse` of an untrusted-output tool, under a policy with `provenance`: its
/// response's values become untrusted, awaited under the gate's id of the call. Nothing
/// otherwise.
pub(super) fn take_result(
    hook: &HookInput,
    options: &HookOptions,
    judged: Option<String>,
) -> Result<Vec<u8>> {
    let policy = &options.policy;
    let Some(response) = &hook.tool_response else {
        return Ok(Vec::new());
    };
    if policy.provenance().is_none() || !policy.has_untrusted_output(&hook.tool_name) {
        return Ok(Vec::new());
    }
    let record = ValueRecord::Result(ResultRecord {
        agent: hook.agent(&options.agent).to_owned(),
        tool: hook.tool_name.clone(),
        call: judged,
        output: response.clone(),
    });
    take(hook, options, &record)
}
