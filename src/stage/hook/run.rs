//! The run entry: one hook input, handled by its event.

use std::io::Write;

use anyhow::Result;

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
