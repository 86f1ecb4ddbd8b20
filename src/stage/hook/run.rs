//! The run entry: one hook input, handled by its event.

use std::io::Write;

use anyhow::{Context, Result};

use super::input::{HookEvent, HookInput};
use super::post_tool_use::{record_run, Ran};
use super::pre_tool_use::decide;
use super::provenance;
use super::HookOptions;
use crate::audit::AuditLog;
use crate::verdict::Judgement;

/// What one hook run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// A `PreToolUse`, decided.
    Decided(Judgement),
    /// A `PostToolUse`, recorded.
    Ran(Ran),
    /// A `UserPromptSubmit`, taken as the user's instruction.
    Prompt,
}

/// Handles one hook input, by its event: [`decide`] a `PreToolUse`, [`record_run`] a
/// `PostToolUse`. Any error means no answer was written.
pub fn run(
    input: &[u8],
    options: &HookOptions,
    audit_log: &mut AuditLog,
    out: &mut dyn Write,
) -> Result<Handled> {
    let hook = HookInput::parse(input)?;
    dispatch(input, &hook, options, audit_log, out)
}

/// [`run`] for an input another agent's contract translated: its tool's own name goes into the
/// gate event (`agentTool`).
pub fn run_translated(
    translated: &super::contract::Translated,
    options: &HookOptions,
    audit_log: &mut AuditLog,
    out: &mut dyn Write,
) -> Result<Handled> {
    let mut hook = HookInput::parse(&translated.input)?;
    hook.agent_tool = translated.native_tool.clone();
    if translated.agent == super::contract::Agent::Copilot && options.crew.is_none() {
        let parent = translated.parent_session.as_deref();
        if let Some(parent) = parent {
            if !super::input::is_safe_session_id(parent) {
                anyhow::bail!("the hook input's parent session is not a session id: {parent:?}");
            }
            // A subagent's prompt is its parent model's words, not the user's: never taken as
            // the user's instruction (value provenance would trust what it names).
            if hook.event == HookEvent::UserPromptSubmit {
                return Ok(Handled::Prompt);
            }
        }
        let mut store = options
            .state
            .open(crate::store::OpenOptions {
                create: true,
                fsync: options.fsync,
            })
            .context("state store unavailable")?;
        let state_of = super::parents::session_state_of(store.as_mut(), &hook.session_id, parent)
            .context("the session's parent")?;
        if state_of != hook.session_id {
            // The subagent's own session is kept in the call record (`agentId`).
            hook.agent_id = Some(std::mem::replace(&mut hook.session_id, state_of));
        }
    }
    dispatch(&translated.input, &hook, options, audit_log, out)
}

fn dispatch(
    input: &[u8],
    hook: &HookInput,
    options: &HookOptions,
    audit_log: &mut AuditLog,
    out: &mut dyn Write,
) -> Result<Handled> {
    match hook.event {
        HookEvent::PreToolUse => decide(input, hook, options, audit_log, out).map(Handled::Decided),
        HookEvent::PostToolUse => record_run(hook, options, audit_log, out).map(Handled::Ran),
        HookEvent::UserPromptSubmit => {
            provenance::take_prompt(hook, options, audit_log).map(|()| Handled::Prompt)
        }
    }
}
