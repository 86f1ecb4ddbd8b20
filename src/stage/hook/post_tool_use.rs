//! A `PostToolUse`: the call that ran, linked to its `PreToolUse` and recorded once (the
//! approval it implies, its outcome, and the warning for a denied call that ran).

use std::io::Write;

use anyhow::{Context, Result};
use serde_json::json;

use super::contract::Agent;
use super::input::{reported_error, HookInput};
use super::links::{input_digest, update_links, ToolUse, ToolUses, MAX_AWAITING};
use super::output::write_answer;
use super::provenance;
use super::HookOptions;
use crate::approve::{approval_for, Reply};
use crate::audit::{self, AuditLog, IdMinter, Stage};
use crate::record::{AnsweredBy, Outcome, Status};
use crate::sanitize::quoted;
use crate::store;
use crate::verdict::Decision;

/// How a `PostToolUse` was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    /// A call sc-hook allowed: its `exec` event.
    Allowed,
    /// A call sc-hook held, so its user said yes: an `approve` and an `exec` event.
    Approved,
    /// A call sc-hook denied, which ran all the same: its `exec` event and a warning.
    Denied,
    /// A call sc-hook never saw: an `exec` event for an unknown call.
    Unknown,
    /// A `tool_use_id` whose run was already recorded: nothing written.
    AlreadyRecorded,
}

/// Records a `PostToolUse`: the call ran. Links the call by its `tool_use_id` and marks it as
/// run in one atomic update of the session's links ([`plan_run`]), so two hooks of the same
/// call never both record it; then audits what it found (see the `hook` module's doc), and only
/// then writes the warning for a denied call that ran. A run already recorded writes nothing. If
/// the audit log cannot be written, the run stays marked (exit 2 says so): it is never recorded
/// twice.
pub(super) fn record_run(
    hook: &HookInput,
    options: &HookOptions,
    audit_log: &mut AuditLog,
    out: &mut dyn Write,
) -> Result<Ran> {
    let mut store = options
        .state
        .open(store::OpenOptions {
            create: true,
            fsync: options.fsync,
        })
        .context("state store unavailable")?;
    let (ran, mut events, warning, mut judged, unjudged) =
        update_links(store.as_mut(), &hook.session_id, |uses| {
            plan_run(hook, options, uses)
        })
        .context("state store unavailable")?;
    drop(store);
    if ran == Ran::AlreadyRecorded {
        return Ok(ran);
    }
    // An untrusted-output tool that ran without the gate's allow taints as an allowed one does.
    if let Some(id) = unjudged {
        provenance::taint_by_run(hook, options, &id)?;
        judged = Some(id);
    }
    // Value provenance: an untrusted-output tool's response, into the state the decisions read.
    events.extend(provenance::take_result(hook, options, judged)?);
    audit_log.append(&events)?;
    if let Some(line) = warning {
        write_answer(out, &line)?;
    }
    Ok(ran)
}

/// What a `PostToolUse` records, worked out on the session's links (`uses`, the call marked as
/// run there): how it ran, its audit events, the warning for a denied call that ran, and the
/// gate's id of the call whose output value provenance awaits, and, for an untrusted-output
/// tool that ran without the gate's allow (never judged, or denied), the id to taint the
/// session under. Writes nothing itself: it may run more than once ([`update_links`]).
#[allow(clippy::type_complexity)]
fn plan_run(
    hook: &HookInput,
    options: &HookOptions,
    uses: &mut ToolUses,
) -> (Ran, Vec<u8>, Option<String>, Option<String>, Option<String>) {
    let known = hook
        .tool_use_id
        .as_deref()
        .and_then(|tool_use_id| uses.get(tool_use_id))
        .cloned();
    // The gate's id of the call, to await its output under (value provenance).
    let judged = known
        .as_ref()
        .filter(|call| call.tool == hook.tool_name && !call.ran)
        .map(|call| call.id.clone());
    let status = if reported_error(hook.tool_response.as_ref()) {
        Status::Failed
    } else {
        Status::Executed
    };
    let tool = quoted(&hook.tool_name);
    let untrusted = options.policy.has_untrusted_output(&hook.tool_name);
    let taints = if untrusted {
        "; its output taints the session (an untrustedOutputTools tool the gate did not allow)"
    } else {
        ""
    };
    // The agent the call ran in, by the contract its input came by (Claude Code, Codex CLI, …).
    let title = Agent::ALL
        .into_iter()
        .find(|agent| agent.kind() == options.agent_kind)
        .map_or("the agent", Agent::title);
    let ran_it = match status {
        Status::Failed => format!("ran {tool} in {title} and it reported an error"),
        _ => format!("ran {tool} in {title}"),
    };
    // The tool's response is not copied into the log: it may be a whole file.
    let exec = |id: &str, agent: &str, decision: Option<Decision>, reason: String| {
        let outcome = Outcome {
            status,
            result: None,
            reason,
        };
        let mut event = audit::event(Stage::Exec, id)
            .str_field("agent", agent)
            .str_field("tool", &hook.tool_name);
        if let Some(decision) = decision {
            event = event.str_field("decision", decision.as_str());
        }
        event.field("outcome", &outcome)
    };
    let with_tool_use_id = |event: crate::json_write::JsonLine| match &hook.tool_use_id {
        Some(tool_use_id) => event.str_field("toolUseId", tool_use_id),
        None => event,
    };
    let (ran, events, warning, unjudged) = match known {
        Some(call) if call.ran => return (Ran::AlreadyRecorded, Vec::new(), None, None, None),
        Some(ToolUse {
            tool_use_id,
            id,
            agent,
            tool: judged_tool,
            decision: Some(decision),
            input,
            ..
        }) if judged_tool == hook.tool_name
            && (decision != Decision::Hold
                || input.as_deref() == Some(input_digest(&hook.tool_input).as_str())) =>
        {
            let changed = if input.as_deref() == Some(input_digest(&hook.tool_input).as_str()) {
                String::new()
            } else {
                format!("; its input is not the one sc-hook judged (another hook or {title} changed it after the gate decided)")
            };
            let mut events = Vec::new();
            let (ran, reason, warning) = match decision {
                Decision::Allow => (
                    Ran::Allowed,
                    format!("{ran_it} (allowed by sc-hook){changed}"),
                    None,
                ),
                Decision::Hold => {
                    let mode = hook
                        .permission_mode
                        .as_deref()
                        .map(|mode| format!(" (permission mode {})", quoted(mode)))
                        .unwrap_or_default();
                    // The approval every way of asking writes ("approved in Claude Code"), with
                    // no answer: sc-hook never sees which of Claude Code's choices was taken.
                    let mut approval = approval_for(
                        Reply::Decision {
                            scope: crate::record::Scope::Once,
                            approve: true,
                            digest: None,
                        },
                        AnsweredBy::ClaudeCode,
                    );
                    approval.answer = None;
                    approval.reason.push_str(&format!(
                        ": sc-hook asked for its user's yes, and {title} ran the call{mode}{changed}"
                    ));
                    let approve = audit::event(Stage::Approve, &id)
                        .str_field("agent", &agent)
                        .str_field("tool", &hook.tool_name)
                        .field("approval", &approval);
                    events.extend(with_tool_use_id(approve).finish());
                    (
                        Ran::Approved,
                        format!("{ran_it} (approved in {title}){changed}"),
                        None,
                    )
                }
                Decision::Deny => {
                    let reason = format!(
                        "{ran_it} although sc-hook denied it: {title} must never run a denied call, so look at its settings and its other hooks{changed}{taints}"
                    );
                    let warning = json!({
                        "systemMessage": format!(
                            "Skeleton Crew: {title} ran {tool} although sc-hook denied it (call {}); see the audit log",
                            quoted(&id)
                        )
                    })
                    .to_string();
                    (Ran::Denied, reason, Some(warning))
                }
            };
            let unjudged = (ran == Ran::Denied && untrusted).then(|| id.clone());
            let event = exec(&id, &agent, Some(decision), reason);
            events.extend(with_tool_use_id(event).finish());
            uses.ran(&tool_use_id);
            (ran, events, warning, unjudged)
        }
        other => {
            let why = match (&hook.tool_use_id, other) {
                (None, _) => "the PostToolUse has no tool_use_id to link it by".to_owned(),
                (Some(tool_use_id), Some(decided)) if decided.tool != hook.tool_name => format!(
                    "its tool_use_id {} was decided for {}, not for this tool",
                    quoted(tool_use_id),
                    quoted(&decided.tool)
                ),
                // A held call is taken as approved only when what ran is what was held.
                (Some(tool_use_id), Some(_)) => format!(
                    "its input is not the one sc-hook held under tool_use_id {}, so no approval is taken from it and the held call stays unanswered",
                    quoted(tool_use_id)
                ),
                (Some(tool_use_id), None) => format!(
                    "its tool_use_id {} is not in this session's state (no PreToolUse of sc-hook saw it, or it was forgotten: sc-hook keeps the last {MAX_AWAITING} calls awaiting their run)",
                    quoted(tool_use_id)
                ),
            };
            let id = IdMinter::new().mint();
            let agent = hook.agent(&options.agent);
            let reason = format!("{ran_it}, a call the gate never judged: {why}{taints}");
            let event =
                exec(&id, agent, None, reason).field("call", &hook.call_value(&options.agent));
            let events = with_tool_use_id(event).finish();
            let unjudged = untrusted.then(|| id.clone());
            if let Some(tool_use_id) = &hook.tool_use_id {
                if uses.get(tool_use_id).is_none() {
                    uses.remember(ToolUse {
                        tool_use_id: tool_use_id.clone(),
                        id,
                        agent: agent.to_owned(),
                        tool: hook.tool_name.clone(),
                        decision: None,
                        input: None,
                        ran: true,
                    });
                }
            }
            (Ran::Unknown, events, None, unjudged)
        }
    };
    (ran, events, warning, judged, unjudged)
}
