//! `sc-exec`: runs what was allowed or approved, and says what happened to every record.
//!
//! It does not take the record's word for it: every call is evaluated again under sc-exec's own
//! policy, and it acts on the stronger of the record's decision and its own. It runs a call only
//! when that is `allow`, or `hold` with an approval saying `approved: true` that it honours
//! ([`approval_to_act_on`]): only on a record whose own decision is `hold` (what sc-approve
//! answers), once per id in a run, and, with the audit key, only when the approval's MAC binds it
//! to this record's id and call. With the key, a sealed record is acted on once in a run
//! ([`replays`]). A forged `allow`, with or without a forged approval, therefore
//! runs neither a denied call nor one that should have been held. A record it cannot
//! read, or whose decision is missing or unknown, counts as denied. Everything not run is
//! `skipped` with the reason; a tool it does not know is `failed`.
//!
//! A tool is found in a [`ToolSet`]: the built-in fakes, or the backends of a tools file
//! ([`crate::stage::exec::backends`]), with the fakes behind them only when asked for. A backend
//! whose entry says `"sandbox": true` runs under sc-sandbox with sc-exec's policy file, root, home,
//! audit log and crew, and the call's agent and id ([`confine`](crate::stage::sandbox::door)); where the sandbox cannot be
//! made it is not run, and its record is `failed` with a reason naming what is missing. Calls run one at a time
//! in input order; with `jobs` above 1, backend runs overlap, at most `jobs` at once, except that
//! an agent's calls still run one after the other, in the order it made them. Decisions are always
//! made one record at a time in input order, and records and their audit events always leave in
//! input order, each event before its record.
//!
//! No backend starts unless the log already says it is about to: before it starts, sc-exec appends
//! the call's `exec-start` event ([`start`]), with every event queued before it, and waits for the
//! append. If the log cannot be written, the backend is not run and the stage stops, as on any
//! failed append. With `jobs` above 1 a start is written when its backend starts, so it may come
//! before the `exec` events of earlier calls still running.
//!
//! sc-exec's own state (what its re-check counted) lives in memory for the stream, or, with
//! `--state` or `--crew`, in a shared store under the crew's `exec` view, apart from the gate's
//! (which counted the same calls once already). A record whose state cannot be read or written
//! is decided `deny` (`state store unavailable: …`) and skipped.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::thread::{Scope, ScopedJoinHandle};

use anyhow::Result;
use serde_json::Value;

use crate::audit::chain::{Chain, Link};
use crate::audit::{self, IdMinter, Stage};
pub mod backends;
mod replays;
mod start;
pub mod tools;

use crate::call::{Call, Malformed};
use crate::exit::Completion;
use crate::jsonl::{self, Input, InputLines, JsonLine, Line, StageOutput};
use crate::record::{self, Approval, Outcome, Record, Status};
use crate::rules::policy::Policy;
use crate::rules::provenance::{self, ResultRecord, ValueRecord};
use crate::rules::state::CrewState;
use crate::sanitize::for_terminal;
use crate::stage::sandbox::door::{self as confine, Confined, SandboxDoor};
use crate::store::{Owner, StateHandle, Timing};
use crate::verdict::{Decision, Grantable, Granting, Judgement};
use backends::{Backend, BackendReport, ToolsFile, ToolsFileError};
use tools::BUILTIN_TOOLS;

/// How many records may wait behind a running backend before sc-exec waits for it.
const MAX_WAITING_RECORDS: usize = 1024;

/// What `sc-exec` needs besides its streams.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    pub policy: Policy,
    pub max_line_bytes: usize,
    pub tools: ToolSet,
    /// How many backends may run at once (at least 1).
    pub jobs: usize,
    /// The audit key's chain: keyed, a held call runs only on an approval sealed under it.
    pub chain: Chain,
    /// The clock decisions are made at, and `--taint-ttl`.
    pub timing: Timing,
    /// What a backend with `"sandbox": true` runs under sc-sandbox with.
    pub sandbox: SandboxDoor,
}

/// Where sc-exec finds the tool a call names.
#[derive(Debug, Clone)]
pub enum ToolSet {
    /// The built-in fakes only: sc-exec without `--tools`.
    Builtin,
    /// The backends of a tools file; a tool not in it falls back to the built-in fakes only
    /// when `builtin_fallback` says so, and is unknown otherwise.
    Backends {
        file: ToolsFile,
        builtin_fallback: bool,
    },
}

/// What a tool name stands for.
#[derive(Debug, Clone, Copy)]
pub enum Resolved<'a> {
    Backend(&'a Backend),
    Builtin,
    Unknown,
}

impl ToolSet {
    /// The built-in fakes without a tools file, else the tools file's backends.
    pub fn load(
        tools: Option<&std::path::Path>,
        builtin_fallback: bool,
    ) -> Result<ToolSet, ToolsFileError> {
        Ok(match tools {
            None => ToolSet::Builtin,
            Some(path) => ToolSet::Backends {
                file: ToolsFile::load(path)?,
                builtin_fallback,
            },
        })
    }

    /// Finds a tool by its exact name; a name that is nowhere is never guessed at.
    pub fn resolve(&self, tool: &str) -> Resolved<'_> {
        let builtin = || {
            if BUILTIN_TOOLS.contains(&tool) {
                Resolved::Builtin
            } else {
                Resolved::Unknown
            }
        };
        match self {
            ToolSet::Builtin => builtin(),
            ToolSet::Backends {
                file,
                builtin_fallback,
            } => match file.get(tool) {
                Some(backend) => Resolved::Backend(backend),
                None if *builtin_fallback => builtin(),
                None => Resolved::Unknown,
            },
        }
    }

    /// Why a tool is unknown, naming what is known.
    fn unknown(&self, tool: &str) -> String {
        let name = Value::String(tool.to_owned());
        let builtins = BUILTIN_TOOLS.join(", ");
        match self {
            ToolSet::Builtin => format!("no tool named {name} (sc-exec knows {builtins})"),
            ToolSet::Backends {
                file,
                builtin_fallback,
            } => {
                let names = file.names().collect::<Vec<_>>().join(", ");
                let names = if names.is_empty() {
                    "none".to_owned()
                } else {
                    names
                };
                let fallback = if *builtin_fallback {
                    format!(" nor among the built-in tools ({builtins})")
                } else {
                    ", and the built-in tools are not used (no --builtin-fallback)".to_owned()
                };
                format!(
                    "no tool named {name} in the tools file {} (it has {names}){fallback}",
                    file.path().display()
                )
            }
        }
    }
}

/// The decision sc-exec acts on, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    pub decision: Decision,
    pub reasons: Vec<String>,
}

/// The stronger of the record's decision and sc-exec's own; a missing or unknown record decision
/// counts as deny. The record's reasons are read only when its decision wins.
pub(crate) fn effective_decision(
    record_decision: Option<Decision>,
    record_reasons: impl FnOnce() -> Vec<String>,
    own: Judgement,
) -> Effective {
    let recorded = record_decision.unwrap_or(Decision::Deny);
    if own.decision >= recorded {
        return Effective {
            decision: own.decision,
            reasons: own.reasons,
        };
    }
    Effective {
        decision: recorded,
        reasons: match record_decision {
            Some(_) => record_reasons(),
            None => vec!["the record has no valid decision (allow, hold or deny)".to_owned()],
        },
    }
}

/// Why a call the gate allowed by grant is held here, when it is: sc-exec decides again, and
/// without the crew's store (`--state`, `--crew`) it has no grant to find; with one, the grant
/// is gone (revoked, expired) or kept in another store or crew than the gate's. `None` for a
/// record that names no grant.
fn unchecked_grants(record: &Record<'_>, state: &StateHandle) -> Option<String> {
    let parsed = crate::strict_json::parse(record.text).ok()?;
    let grants: Vec<&str> = parsed
        .get("grants")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if grants.is_empty() {
        return None;
    }
    let named = grants
        .iter()
        .map(|grant| crate::sanitize::quoted(grant).into_owned())
        .collect::<Vec<_>>()
        .join(", ");
    let plural = if grants.len() == 1 { "" } else { "s" };
    Some(match state {
        StateHandle::Memory(_) => format!(
            "sc-gate allowed it by grant{plural} {named}, which sc-exec cannot check without the crew's store: give sc-exec the gate's --state and --crew"
        ),
        StateHandle::Shared(_) => format!(
            "sc-gate allowed it by grant{plural} {named}, which is not among the crew's live grants here (revoked, expired, or kept in another store or crew than the gate's --state and --crew)"
        ),
    })
}

/// The approval sc-exec acts on, if any: the record's, when it may be honoured, or a refusal in
/// its place that says why not. An approval is honoured only
/// - on a record whose own decision is `hold`: sc-approve answers holds and removes every other
///   approval, so one on an `allow` (or a `deny`) was put there by someone else;
/// - once per id in a run: a replayed record does not run its call again;
/// - keyed, when its `mac` is the one sc-approve makes under the key for this record's id and
///   call ([`crate::audit::seal::approval_mac`]).
///
/// A declining approval is taken as it is; it can only keep a call from running.
pub(crate) fn approval_to_act_on(
    record: &Record<'_>,
    id: &str,
    chain: &Chain,
    used: &mut HashSet<String>,
) -> Option<Approval> {
    let approval = record.approval()?;
    if !approval.approved {
        return Some(approval);
    }
    let refusal = |why: &str| Approval {
        scope: None,
        grant: None,
        approved: false,
        by: approval.by,
        answer: approval.answer.clone(),
        digest: None,
        reason: format!("its approval is not honoured: {why}"),
    };
    if record.decision() != Some(Decision::Hold) {
        return Some(refusal(
            "the record's own decision is not hold, and sc-approve only answers holds",
        ));
    }
    if chain.is_keyed() {
        let expected = record
            .call_text()
            .and_then(|call| crate::audit::seal::approval_mac(chain, id, call, &approval));
        let given = record
            .approval_mac()
            .as_deref()
            .and_then(Link::parse_lowercase);
        match (expected, given) {
            (Some(expected), Some(given)) if expected.ct_eq(&given) => {}
            (_, None) => {
                return Some(refusal(
                    "it carries no MAC, and with the audit key sc-exec runs a held call only on an approval sealed by sc-approve under that key",
                ))
            }
            _ => {
                return Some(refusal(
                    "its MAC does not match this record's id and call under the audit key: it was forged, moved from another record, or sealed under another key",
                ))
            }
        }
    }
    if !used.insert(id.to_owned()) {
        return Some(refusal(
            "an approval for this id was already used in this run (a replayed record)",
        ));
    }
    Some(approval)
}

/// A yes covers what the person was shown, which the record's `grantable` names (sealed with the
/// verdict under the audit key): the kinds of rule that held the call, what had tainted the
/// session (`sources`) and the untrusted values named (`values`). sc-exec decides the call again,
/// and a call it holds now (`own`, `None` when it does not) for a kind of rule, a taint source or
/// a value the record did not show (a taint since, read by another pipeline of the crew) is not
/// run on that yes. Not the reasons' words: they name what each stage minted (a result's id) and
/// totals that each stage's state counts apart, so two stages that agree read them otherwise; a
/// budget total that moved within its kind is not told apart. A record without `grantable` (not
/// sc-gate's) is compared by its reasons' exact text.
fn covered(
    approval: Approval,
    record: &Record<'_>,
    own: Option<&Grantable>,
    effective: &Effective,
) -> Approval {
    if !approval.approved {
        return approval;
    }
    let shown = record
        .grantable_text()
        .and_then(|text| serde_json::from_str::<Grantable>(text).ok());
    // The record itself says the person was not shown every untrusted value the call carries:
    // no yes covers it, whatever sc-exec's own view counts now (records dropped or put into its
    // input between the stages can make that view count fewer).
    if shown.as_ref().is_some_and(|shown| shown.more_values) {
        return not_honoured(approval, &more_values_than_named());
    }
    let Some(own) = own else {
        return approval;
    };
    let not_shown: Vec<String> = match &shown {
        Some(shown) if !own.kinds.is_empty() => {
            let missing = |own: &[String], shown: &[String], what: &str| {
                own.iter()
                    .filter(|item| !shown.contains(item))
                    .map(|item| format!("{what} {}", crate::sanitize::quoted(item)))
                    .collect::<Vec<_>>()
            };
            let mut missing_items = missing(&own.kinds, &shown.kinds, "the kind of rule");
            // What tainted the session and the untrusted values it carries matter only to a
            // hold that the taint makes: a payment held for its amount alone is not refused
            // because the session read a page since (a review's false refusal).
            if own
                .kinds
                .iter()
                .any(|kind| crate::rules::decision::TAINT_KINDS.contains(&kind.as_str()))
            {
                missing_items.extend(cut_lists(own, shown));
                let listed = |sources| crate::rules::state::listed_and_past(sources, true).0;
                missing_items.extend(missing(
                    listed(&own.sources),
                    listed(&shown.sources),
                    "the taint source",
                ));
                missing_items.extend(missing(&own.values, &shown.values, "the untrusted value"));
            }
            if missing_items.is_empty() {
                Vec::new()
            } else {
                vec![format!(
                    "{}; held now for: {}",
                    missing_items.join(", "),
                    effective.reasons.join("; ")
                )]
            }
        }
        _ => crate::verdict::not_shown(&record.reasons(), &effective.reasons)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    };
    if not_shown.is_empty() {
        return approval;
    }
    not_honoured(approval, &not_shown.join("; "))
}

/// `approval`, turned into a refusal for what the person was `not_shown`.
fn not_honoured(approval: Approval, not_shown: &str) -> Approval {
    let reason = format!(
        "its approval is not honoured: sc-exec holds the call now for reasons the approval was not given to (not shown: {not_shown})"
    );
    Approval {
        scope: None,
        grant: None,
        approved: false,
        digest: None,
        reason,
        ..approval
    }
}

/// Why a yes does not cover a call carrying more untrusted values than a record names.
fn more_values_than_named() -> String {
    format!(
        "the call carries more untrusted values than the {} a record names, so a value not shown cannot be told from those shown",
        crate::rules::granting::MAX_NAMED
    )
}

/// What a yes cannot cover where the record could not show it all: a source read since the
/// taint's list filled (one marker then counts every read past the list, so a new one shows
/// only as more reads than the record's marker counted), or a call carrying more untrusted
/// values than a hold names (a new one could hide past them).
fn cut_lists(own: &Grantable, shown: &Grantable) -> Vec<String> {
    let mut cut = Vec::new();
    let past = |sources| crate::rules::state::listed_and_past(sources, true).1;
    if let Some(now) = past(&own.sources) {
        // The record's marker counts the reads past the list as sc-gate's view saw them, this
        // one as sc-exec's does; more here means a read since. The two views can differ (a read
        // through sc-gate alone counts only there, and can mask one here; a taint lifted and
        // read again starts over): docs/security.md names what this does not tell apart. A
        // count at its ceiling no longer moves, so it cannot show a read since: never covered.
        if now == u64::MAX || past(&shown.sources).is_none_or(|then| now > then) {
            cut.push(format!(
                "a source read since, past the {} a taint lists: the session's reads past the list number {now} now",
                crate::rules::state::MAX_ALSO + 1
            ));
        }
    }
    if own.more_values {
        cut.push(more_values_than_named());
    }
    cut
}

/// With the audit key, a record is acted on only when it carries the seal sc-gate puts on a
/// verdict under that key, for this record's id, call and decision
/// ([`crate::audit::seal::verdict_seal`]): a decision or its reasons changed between the stages (a hold made an allow, a deny
/// made a hold to be approved) or a record made up whole is refused. Unkeyed, every record passes.
pub(crate) fn check_seal(record: &Record<'_>, id: &str, chain: &Chain) -> Result<(), Unsealed> {
    if !chain.is_keyed() {
        return Ok(());
    }
    let (Some(decision), Some(call)) = (record.decision(), record.call_text()) else {
        return Err(Unsealed::NoDecisionOrCall);
    };
    let Some(given) = record.seal().as_deref().and_then(Link::parse_lowercase) else {
        return Err(Unsealed::NoSeal);
    };
    // Only a hold's reasons are sealed (a person reads them): read only for a hold, and only
    // strings, as sc-gate writes them (a review added objects beside them, which the seal did
    // not cover and a page showing the record whole would).
    let reasons = if decision == Decision::Hold {
        if !record.reasons_are_strings() {
            return Err(Unsealed::Mismatch);
        }
        record.reasons()
    } else {
        Vec::new()
    };
    match crate::audit::seal::verdict_seal(
        chain,
        id,
        call,
        decision,
        &reasons,
        record.grantable_text(),
    ) {
        Some(expected) if expected.ct_eq(&given) => Ok(()),
        _ => Err(Unsealed::Mismatch),
    }
}

/// Why a record is not acted on under the audit key ([`check_seal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unsealed {
    #[error("the record is not a verdict sealed by sc-gate under the audit key: it has no decision or no call")]
    NoDecisionOrCall,
    #[error("the record is not a verdict sealed by sc-gate under the audit key: it carries no seal (64 lowercase hex digits)")]
    NoSeal,
    #[error("the record is not a verdict sealed by sc-gate under the audit key: its seal does not match its id, call, decision and reasons (one of them was changed, or it was sealed under another key)")]
    Mismatch,
}

/// What sc-exec did with a call: the outcome, and the backend run behind it, if there was one.
#[derive(Debug, Clone, PartialEq)]
pub struct Acted {
    pub outcome: Outcome,
    pub backend: Option<BackendReport>,
}

/// What acting on a call takes: nothing more (its outcome is settled), or running a backend.
#[derive(Debug, Clone)]
pub enum Plan<'t> {
    Settled(Outcome),
    Backend {
        tool: String,
        /// The call's `args` as one JSON document, for the backend's stdin.
        args_json: String,
        /// Why it may run ("allowed by policy", or the approval's reason).
        cleared: String,
        backend: &'t Backend,
        /// For a backend whose entry asks for the sandbox: sc-sandbox's command line for this
        /// call, or why the sandbox cannot be made ([`SandboxDoor::confine`]). Without it, such
        /// a backend is not run.
        sandbox: Option<Box<Result<Confined, crate::stage::sandbox::Unconfinable>>>,
    },
}

impl<'t> Plan<'t> {
    /// Carries the plan out: runs the backend, if there is one to run.
    pub fn run(self) -> Acted {
        match self {
            Plan::Settled(outcome) => Acted {
                outcome,
                backend: None,
            },
            Plan::Backend {
                tool,
                args_json,
                cleared,
                backend,
                sandbox,
            } => {
                let run = backend.run_confined(&args_json, sandbox.as_deref());
                let outcome = match run.result {
                    Ok(result) => Outcome {
                        status: Status::Executed,
                        result: Some(result),
                        reason: format!("ran {tool} ({cleared})"),
                    },
                    Err(why) => Outcome {
                        status: Status::Failed,
                        result: None,
                        reason: format!("{tool} failed: {why}"),
                    },
                };
                Acted {
                    outcome,
                    backend: Some(run.report),
                }
            }
        }
    }

    #[cfg(test)]
    fn is_backend(&self) -> bool {
        matches!(self, Plan::Backend { .. })
    }

    /// The backend the plan starts, if it starts one: not one that asks for the sandbox and has
    /// none, which [`Plan::run`] fails at once without starting anything.
    fn backend_to_start(&self) -> Option<&'t Backend> {
        match self {
            Plan::Backend {
                backend, sandbox, ..
            } if !backend.sandboxed() || sandbox.as_deref().is_some_and(Result::is_ok) => {
                Some(backend)
            }
            Plan::Backend { .. } | Plan::Settled(_) => None,
        }
    }
}

/// What to do with a call, given the effective decision and any approval on the record: only
/// `allow`, or `hold` with an approval, runs; a built-in tool's outcome is settled here, and a
/// backend is left to run.
pub fn plan<'t>(
    call: Option<&Call>,
    effective: &Effective,
    approval: Option<&Approval>,
    tools: &'t ToolSet,
) -> Plan<'t> {
    let skipped = |reason: String| {
        Plan::Settled(Outcome {
            status: Status::Skipped,
            result: None,
            reason,
        })
    };
    // Joined only for a call that does not run: most calls are allowed.
    let why = || effective.reasons.join("; ");
    let cleared = match (effective.decision, approval) {
        (Decision::Allow, _) => "allowed by policy".to_owned(),
        (Decision::Hold, Some(approval)) if approval.approved => approval.reason.clone(),
        (Decision::Hold, Some(approval)) => {
            return skipped(format!("not run: held ({}) and {}", why(), approval.reason))
        }
        (Decision::Hold, None) => {
            return skipped(format!("not run: held ({}) and never approved", why()))
        }
        (Decision::Deny, _) => return skipped(format!("not run: denied ({})", why())),
    };
    let Some(call) = call else {
        return skipped("not run: the record has no readable call".to_owned());
    };
    let failed = |reason: String| {
        Plan::Settled(Outcome {
            status: Status::Failed,
            result: None,
            reason,
        })
    };
    match tools.resolve(&call.tool) {
        Resolved::Backend(backend) => Plan::Backend {
            tool: call.tool.clone(),
            args_json: call.args.text().to_owned(),
            cleared,
            backend,
            sandbox: None,
        },
        Resolved::Builtin => match tools::run_builtin(&call.tool, call.args.map()) {
            Some(Ok(result)) => Plan::Settled(Outcome {
                status: Status::Executed,
                result: Some(result),
                reason: format!("ran {} ({cleared})", call.tool),
            }),
            Some(Err(why)) => failed(format!("{} failed: {why}", call.tool)),
            None => failed(tools.unknown(&call.tool)),
        },
        Resolved::Unknown => failed(tools.unknown(&call.tool)),
    }
}

/// What to do with a call, carried out at once (see [`plan`]).
pub fn outcome_for(
    call: Option<&Call>,
    effective: &Effective,
    approval: Option<&Approval>,
    tools: &ToolSet,
) -> Acted {
    plan(call, effective, approval, tools).run()
}

/// Reads records and acts on each, in order, with sc-exec's state in memory.
pub fn run<W: Write, E: Write>(
    inputs: &[Input],
    options: &ExecOptions,
    output: &mut StageOutput<W, E>,
    diagnostics: &mut dyn Write,
) -> Result<Completion> {
    let state = StateHandle::Memory(CrewState::new());
    run_with_state(inputs, options, state, output, diagnostics)
}

/// Reads records and acts on each, in order, with sc-exec's state in memory or in a store.
pub fn run_with_state<W: Write, E: Write>(
    inputs: &[Input],
    options: &ExecOptions,
    mut state: StateHandle,
    output: &mut StageOutput<W, E>,
    diagnostics: &mut dyn Write,
) -> Result<Completion> {
    // Which store and crew, on every event of a shared state.
    let store_members: Option<(String, Option<String>)> = state.shared().map(|shared| {
        let crew = match &shared.key().owner {
            Owner::Crew(crew) => Some(crew.clone()),
            Owner::Session(_) => None,
        };
        (shared.describe_store().to_owned(), crew)
    });
    std::thread::scope(|scope| {
        let mut window = Window::new(scope, options.jobs.max(1));
        let mut ids = IdMinter::new();
        let mut used_approvals = HashSet::new();
        let mut replays = replays::Replays::default();
        let mut lines = InputLines::new("sc-exec", inputs, options.max_line_bytes, diagnostics);
        while let Some((line, _, _)) = lines.next_line()? {
            match line {
                Line::Text(bytes) if jsonl::is_blank(bytes) => {}
                // A record with a top-level `kind` is a task or result record (value provenance),
                // told apart by the record reader itself rather than a search of every line.
                Line::Text(bytes) => match Record::parse(bytes) {
                    Ok(record) if record.has("kind") => {
                        let emission = value_record(bytes, options, &mut ids, &mut state);
                        window.push_ready(emission, output);
                    }
                    Err(_) if provenance::kind_of(bytes).is_some() => {
                        let emission = value_record(bytes, options, &mut ids, &mut state);
                        window.push_ready(emission, output);
                    }
                    Ok(record) => {
                        let (mut parts, plan) = prepare(
                            record,
                            options,
                            &mut ids,
                            &mut state,
                            &mut used_approvals,
                            &mut replays,
                            output.narrating(),
                        );
                        parts.store.clone_from(&store_members);
                        window.push(parts, plan, output)?;
                    }
                    Err(why) => window.push_ready(
                        refuse_unreadable(&ids.mint(), &why.to_string(), bytes),
                        output,
                    ),
                },
                Line::TooLong { length, start } => {
                    let why = format!(
                        "the record is {length} bytes, over the line limit of {} bytes",
                        options.max_line_bytes
                    );
                    window.push_ready(refuse_unreadable(&ids.mint(), &why, start), output);
                }
            }
            let waiting = !lines.next_read_would_block();
            if !waiting {
                // The input is about to block: what is running finishes and leaves first.
                window.drain(output);
            }
            take_results(&mut window.taken, options, &mut state);
            output.commit_if_due(waiting)?;
        }
        window.drain(output);
        output.commit()?;
        Ok(lines.completion())
    })
}

/// A `task` or `result` record: passed on unchanged, and taken into sc-exec's own state (in
/// memory, or its view of a shared one), so that sc-exec decides the next calls as sc-gate did
/// (sc-gate took it into the gate's view). A malformed one is refused as sc-gate denies it.
fn value_record(
    bytes: &[u8],
    options: &ExecOptions,
    ids: &mut IdMinter,
    state: &mut StateHandle,
) -> Emission {
    let Some((kind, object)) = provenance::kind_of(bytes) else {
        return refuse_unreadable(&ids.mint(), "the record could not be read", bytes);
    };
    match ValueRecord::from_object(&kind, &object) {
        Ok(record) => {
            let id = ids.mint();
            match state {
                StateHandle::Memory(state) => {
                    let now = options.timing.clock.now();
                    state.enter(&options.policy, now, options.timing.taint_ttl);
                    record.apply(state, &id, &options.policy);
                }
                // sc-exec's own view; a store that fails leaves it stricter, never looser.
                StateHandle::Shared(shared) => {
                    let _ = shared.transact(&options.policy, &options.timing, &mut |state, _| {
                        record.apply(state, &id, &options.policy);
                    });
                }
            }
            let mut line = bytes.to_vec();
            line.push(b'\n');
            Emission {
                event: Vec::new(),
                line,
                narration: None,
                taken: None,
            }
        }
        Err(why) => refuse_unreadable(&ids.mint(), &why.to_string(), bytes),
    }
}

/// Takes what the tools that ran returned into the state (memory or shared), for value
/// provenance: the values of untrusted-output tools become untrusted for their agent. A store
/// that fails leaves the read awaited, so the agent's sensitive calls hold.
fn take_results(taken: &mut Vec<ResultRecord>, options: &ExecOptions, state: &mut StateHandle) {
    take_results_into(state, taken, &options.policy, &options.timing);
}

/// [`take_results`] for any state and policy (sc-mcp takes its server's answers so).
pub(crate) fn take_results_into(
    state: &mut StateHandle,
    taken: &mut Vec<ResultRecord>,
    policy: &Policy,
    timing: &Timing,
) {
    if taken.is_empty() {
        return;
    }
    if policy.provenance().is_none() {
        taken.clear();
        return;
    }
    let results = std::mem::take(taken);
    let take = |state: &mut CrewState| {
        for result in &results {
            let id = result.call.clone().unwrap_or_default();
            state.provenance.result(result, &id, policy);
        }
    };
    match state {
        StateHandle::Memory(state) => take(state),
        StateHandle::Shared(shared) => {
            // A store that fails keeps the reads awaited: the agent's sensitive calls hold.
            let _ = shared.transact(policy, timing, &mut |state, _| take(state));
            // sc-exec keeps its own view of the crew's state; the gate decides the next calls
            // on the gate's, so the values go there too.
            if shared.key().view != crate::store::View::Gate {
                let gate = crate::store::StateKey {
                    owner: shared.key().owner.clone(),
                    view: crate::store::View::Gate,
                };
                let _ = shared.store().update(&gate, &mut |state| take(state));
            }
        }
    }
}

/// A readable record, with everything about it settled except what running its tool will say.
struct Parts {
    id: String,
    text: String,
    /// Whether the record came with an `outcome` (forged) that its own replaces.
    has_outcome: bool,
    /// Whether the stage narrates, so the narration is worth composing.
    narrate: bool,
    agent: String,
    tool: String,
    effective: Effective,
    approval: Option<Approval>,
    /// The shared state's store and crew, for the event.
    store: Option<(String, Option<String>)>,
    /// Whether what the tool returns is kept for value provenance (the policy has `provenance`
    /// and the tool is an untrusted-output tool); otherwise its result is not copied.
    keeps_result: bool,
}

/// One record's lines, ready to leave: its audit event, the record, and the narration.
struct Emission {
    event: Vec<u8>,
    line: Vec<u8>,
    narration: Option<String>,
    /// What a tool that ran returned, for value provenance.
    taken: Option<ResultRecord>,
}

enum Slot<'scope> {
    Ready(Emission),
    Running {
        parts: Box<Parts>,
        handle: ScopedJoinHandle<'scope, Acted>,
    },
}

/// Records in input order, some of them waiting on a backend that runs on another thread.
struct Window<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    jobs: usize,
    slots: VecDeque<Slot<'scope>>,
    /// The results of tools that ran, in the order their records left, for the state.
    taken: Vec<ResultRecord>,
}

impl<'scope, 'env> Window<'scope, 'env> {
    fn new(scope: &'scope Scope<'scope, 'env>, jobs: usize) -> Self {
        Window {
            scope,
            jobs,
            slots: VecDeque::new(),
            taken: Vec::new(),
        }
    }

    /// Acts on a readable record: at once, or, with jobs above 1 and a backend to run, on a
    /// thread of its own once there is room and the agent's earlier calls are done. Before a
    /// backend starts, the records already settled leave (audited first), since a backend may
    /// take a while, and its `exec-start` event is in the log ([`start`]): when that append
    /// fails, the backend does not run and the error stops the stage.
    fn push<W: Write, E: Write>(
        &mut self,
        parts: Parts,
        plan: Plan<'env>,
        output: &mut StageOutput<W, E>,
    ) -> Result<()> {
        let Some(backend) = plan.backend_to_start() else {
            let acted = plan.run();
            self.push_ready(finish(parts, acted), output);
            return Ok(());
        };
        let started = start::event(&start::Starting {
            id: &parts.id,
            agent: &parts.agent,
            tool: &parts.tool,
            decision: parts.effective.decision,
            backend,
            store: parts.store.as_ref(),
        });
        if self.jobs == 1 {
            output.write_ahead(&started)?;
            let acted = plan.run();
            self.push_ready(finish(parts, acted), output);
            return Ok(());
        }
        while self.running() >= self.jobs || self.running_for(&parts.agent) {
            self.emit_front(output);
        }
        self.emit_finished(output);
        output.write_ahead(&started)?;
        let handle = self.scope.spawn(move || plan.run());
        self.slots.push_back(Slot::Running {
            parts: Box::new(parts),
            handle,
        });
        Ok(())
    }

    fn push_ready<W: Write, E: Write>(
        &mut self,
        emission: Emission,
        output: &mut StageOutput<W, E>,
    ) {
        self.slots.push_back(Slot::Ready(emission));
        while self.slots.len() > MAX_WAITING_RECORDS {
            self.emit_front(output);
        }
        self.emit_finished(output);
    }

    fn running(&self) -> usize {
        self.slots
            .iter()
            .filter(|slot| matches!(slot, Slot::Running { .. }))
            .count()
    }

    fn running_for(&self, agent: &str) -> bool {
        self.slots
            .iter()
            .any(|slot| matches!(slot, Slot::Running { parts, .. } if parts.agent == agent))
    }

    /// Emits the records at the front that are ready, without waiting.
    fn emit_finished<W: Write, E: Write>(&mut self, output: &mut StageOutput<W, E>) {
        while let Some(front) = self.slots.front() {
            if let Slot::Running { handle, .. } = front {
                if !handle.is_finished() {
                    break;
                }
            }
            self.emit_front(output);
        }
    }

    /// Emits every record, waiting for the backends still running.
    fn drain<W: Write, E: Write>(&mut self, output: &mut StageOutput<W, E>) {
        while !self.slots.is_empty() {
            self.emit_front(output);
        }
    }

    /// Emits the first record, waiting for its backend if it is still running.
    fn emit_front<W: Write, E: Write>(&mut self, output: &mut StageOutput<W, E>) {
        let emission = match self.slots.pop_front() {
            None => return,
            Some(Slot::Ready(emission)) => emission,
            Some(Slot::Running { parts, handle }) => {
                let acted = handle.join().unwrap_or_else(|_| Acted {
                    outcome: Outcome {
                        status: Status::Failed,
                        result: None,
                        reason: format!(
                            "{} failed: sc-exec's runner for it stopped unexpectedly",
                            parts.tool
                        ),
                    },
                    backend: None,
                });
                finish(*parts, acted)
            }
        };
        output.emit(&emission.event, &emission.line);
        if let Some(narration) = &emission.narration {
            output.narrate(narration);
        }
        if let Some(taken) = emission.taken {
            self.taken.push(taken);
        }
    }
}

/// Decides about one record (in input order, updating the stream's state) and plans what to do.
fn prepare<'t>(
    mut record: Record<'_>,
    options: &'t ExecOptions,
    ids: &mut IdMinter,
    state: &mut StateHandle,
    used_approvals: &mut HashSet<String>,
    replays: &mut replays::Replays,
    narrate: bool,
) -> (Parts, Plan<'t>) {
    let call = record
        .take_call()
        .unwrap_or_else(|| Err(Malformed::new("the record has no `call`")));
    let id = record.id().map_or_else(|| ids.mint(), Cow::into_owned);
    // The same decision and stream update as sc-gate's, so the same policy reaches the same
    // decisions.
    let own = match &call {
        Ok(call) => {
            crate::stage::door::decide_on(
                state,
                call,
                &id,
                &options.policy,
                &options.timing,
                false,
                false,
                &[],
            )
            .judgement
        }
        Err(malformed) => Judgement::malformed(malformed),
    };
    // What sc-exec holds the call for now (the kinds of rule, the taint's sources, the untrusted
    // values), for a yes to cover ([`covered`]).
    let own_held = match (&own.decision, &own.granting) {
        (Decision::Hold, Granting::Offers(grantable)) => Some((**grantable).clone()),
        (Decision::Hold, _) => Some(Grantable::default()),
        _ => None,
    };
    let mut effective = effective_decision(record.decision(), || record.reasons(), own);
    if effective.decision != Decision::Deny {
        if let Err(why) = check_seal(&record, &id, &options.chain) {
            effective = Effective {
                decision: Decision::Deny,
                reasons: vec![why.to_string()],
            };
        } else if options.chain.is_keyed() && !replays.first(&id) {
            effective = Effective {
                decision: Decision::Deny,
                reasons: vec![
                    "a replayed record: this run already acted on this id, or on a later one of the same sc-gate run (its records come in order)".to_owned(),
                ],
            };
        }
    }
    if effective.decision == Decision::Hold && record.decision() == Some(Decision::Allow) {
        if let Some(why) = unchecked_grants(&record, state) {
            effective.reasons.push(why);
        }
    }
    let approval = match effective.decision {
        Decision::Hold => approval_to_act_on(&record, &id, &options.chain, used_approvals)
            .map(|approval| covered(approval, &record, own_held.as_ref(), &effective)),
        _ => record.approval(),
    };
    let call = call.ok();
    let mut plan = plan(call.as_ref(), &effective, approval.as_ref(), &options.tools);
    let (agent, tool) = call
        .as_ref()
        .map_or(("?", "?"), |c| (c.agent.as_str(), c.tool.as_str()));
    if let Plan::Backend {
        args_json,
        backend,
        sandbox,
        ..
    } = &mut plan
    {
        // The backend runs on the args exactly as the gate and the person saw them.
        if let Some(text) = record.args_text() {
            *args_json = text.to_owned();
        }
        if backend.sandboxed() {
            *sandbox = Some(Box::new(options.sandbox.confine(
                &options.policy,
                agent,
                Some(&id),
                confine::Check::AtRun,
            )));
        }
    }
    let parts = Parts {
        id,
        text: record.text.to_owned(),
        has_outcome: record.has("outcome"),
        narrate,
        agent: agent.to_owned(),
        tool: tool.to_owned(),
        effective,
        approval,
        store: None,
        keeps_result: options.policy.provenance().is_some()
            && options.policy.has_untrusted_output(tool),
    };
    (parts, plan)
}

/// The lines for a record whose outcome is known.
fn finish(parts: Parts, acted: Acted) -> Emission {
    let Acted { outcome, backend } = acted;
    let taken = match (&outcome.status, &outcome.result) {
        (Status::Executed, Some(result)) if parts.keeps_result => Some(ResultRecord {
            agent: parts.agent.clone(),
            tool: parts.tool.clone(),
            call: Some(parts.id.clone()),
            output: result.clone(),
        }),
        _ => None,
    };
    let mut event = audit::event(Stage::Exec, &parts.id)
        .str_field("agent", &parts.agent)
        .str_field("tool", &parts.tool)
        .str_field("decision", parts.effective.decision.as_str());
    // Written once, for the event and the record alike.
    let outcome_json = serde_json::to_string(&outcome).expect("an outcome serializes");
    event = event.raw_field("outcome", &outcome_json);
    if let Some(backend) = &backend {
        event = event.field("backend", backend);
    }
    if let Some((store, crew)) = &parts.store {
        event = event.str_field("stateStore", store);
        if let Some(crew) = crew {
            event = event.str_field("crew", crew);
        }
    }
    let line = record::with_raw_field(&parts.text, parts.has_outcome, "outcome", &outcome_json);
    if !parts.narrate {
        return Emission {
            event: event.finish(),
            line,
            narration: None,
            taken,
        };
    }
    let approval_note = match (&parts.approval, parts.effective.decision) {
        (Some(approval), Decision::Hold) if approval.approved => " → approved",
        (Some(_), Decision::Hold) => " → declined",
        _ => "",
    };
    let narration = format!(
        "sc-exec: {} → {}: {} ({}){approval_note} → {}",
        for_terminal(&parts.agent),
        for_terminal(&parts.tool),
        parts.effective.decision.as_str().to_uppercase(),
        for_terminal(&parts.effective.reasons.join("; ")),
        match outcome.status {
            Status::Executed => "executed".to_owned(),
            Status::Skipped => "skipped, never run".to_owned(),
            Status::Failed => format!("failed: {}", for_terminal(&outcome.reason)),
        }
    );
    Emission {
        event: event.finish(),
        line,
        narration: Some(narration),
        taken,
    }
}

fn refuse_unreadable(id: &str, why: &str, bytes: &[u8]) -> Emission {
    let reasons = [format!("malformed record: {why}")];
    let outcome = Outcome {
        status: Status::Skipped,
        result: None,
        reason: format!("not run: denied ({})", reasons[0]),
    };
    let raw = jsonl::raw_excerpt(bytes);
    let line = JsonLine::new()
        .field("id", id)
        .field("raw", &raw)
        .field("decision", &Decision::Deny)
        .field("reasons", &reasons)
        .field("outcome", &outcome)
        .finish();
    let event = audit::event(Stage::Exec, id)
        .field("raw", &raw)
        .field("decision", &Decision::Deny)
        .field("outcome", &outcome)
        .finish();
    Emission {
        event,
        line,
        narration: Some(format!("sc-exec: {}", for_terminal(&outcome.reason))),
        taken: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::AnsweredBy;

    fn call(line: &str) -> Call {
        Call::parse_line(line.as_bytes()).unwrap().0
    }

    fn judged(decision: Decision) -> Judgement {
        Judgement {
            granting: Default::default(),
            decision,
            reasons: vec![format!("own {decision}")],
        }
    }

    #[test]
    fn a_count_of_reads_past_the_list_at_its_ceiling_is_never_covered() {
        let with = |reads: u64| Grantable {
            scopes: Vec::new(),
            kinds: Vec::new(),
            values: Vec::new(),
            sources: (0..=crate::rules::state::MAX_ALSO)
                .map(|n| format!("source {n}"))
                .chain([crate::rules::grant::more_sources(reads)])
                .collect(),
            more_values: false,
        };
        assert!(cut_lists(&with(7), &with(7)).is_empty());
        assert_eq!(cut_lists(&with(8), &with(7)).len(), 1);
        // A saturated count (a state written to its ceiling) stops counting reads made since.
        assert_eq!(cut_lists(&with(u64::MAX), &with(u64::MAX)).len(), 1);
    }

    #[test]
    fn the_stronger_decision_wins() {
        let reasons = vec!["recorded".to_owned()];
        let cases = [
            (Some(Decision::Allow), Decision::Deny, Decision::Deny),
            (Some(Decision::Allow), Decision::Hold, Decision::Hold),
            (Some(Decision::Deny), Decision::Allow, Decision::Deny),
            (Some(Decision::Hold), Decision::Allow, Decision::Hold),
            (None, Decision::Allow, Decision::Deny),
        ];
        for (recorded, own, expected) in cases {
            let effective = effective_decision(recorded, || reasons.clone(), judged(own));
            assert_eq!(effective.decision, expected, "{recorded:?} vs {own:?}");
            assert!(!effective.reasons.is_empty());
        }
    }

    #[test]
    fn only_allow_or_approved_hold_runs() {
        let payment = call(
            r#"{"agent":"b","tool":"send_payment","args":{"to":"acme","amount":750},"source":"user"}"#,
        );
        let approved = Approval {
            scope: None,
            grant: None,
            approved: true,
            by: AnsweredBy::Tty,
            answer: Some("yes".into()),
            digest: None,
            reason: "approved: the person typed yes".into(),
        };
        let declined = Approval {
            scope: None,
            grant: None,
            approved: false,
            ..approved.clone()
        };
        let effective = |decision| Effective {
            decision,
            reasons: vec!["r".into()],
        };
        let run = |decision, approval: Option<&Approval>| {
            outcome_for(
                Some(&payment),
                &effective(decision),
                approval,
                &ToolSet::Builtin,
            )
            .outcome
            .status
        };
        assert_eq!(run(Decision::Allow, None), Status::Executed);
        assert_eq!(run(Decision::Hold, Some(&approved)), Status::Executed);
        assert_eq!(run(Decision::Hold, Some(&declined)), Status::Skipped);
        assert_eq!(run(Decision::Hold, None), Status::Skipped);
        assert_eq!(run(Decision::Deny, Some(&approved)), Status::Skipped);
    }

    #[test]
    fn a_tools_file_comes_first_and_the_fakes_only_on_request() {
        let file = ToolsFile::from_json_str(
            r#"{"send_payment": {"command": ["/usr/local/bin/pay"]}}"#,
            std::path::Path::new("/"),
        )
        .unwrap();
        let strict = ToolSet::Backends {
            file: file.clone(),
            builtin_fallback: false,
        };
        let lenient = ToolSet::Backends {
            file,
            builtin_fallback: true,
        };
        assert!(matches!(
            strict.resolve("send_payment"),
            Resolved::Backend(_)
        ));
        assert!(matches!(
            lenient.resolve("send_payment"),
            Resolved::Backend(_)
        ));
        assert!(matches!(strict.resolve("search_web"), Resolved::Unknown));
        assert!(matches!(lenient.resolve("search_web"), Resolved::Builtin));
        assert!(matches!(lenient.resolve("Search_web"), Resolved::Unknown));
        assert!(matches!(
            ToolSet::Builtin.resolve("send_payment"),
            Resolved::Builtin
        ));

        // A call that may not run never reaches its backend's plan.
        let payment = call(
            r#"{"agent":"b","tool":"send_payment","args":{"to":"acme","amount":750},"source":"user"}"#,
        );
        let held = Effective {
            decision: Decision::Hold,
            reasons: vec!["r".into()],
        };
        assert!(!plan(Some(&payment), &held, None, &strict).is_backend());
        let allowed = Effective {
            decision: Decision::Allow,
            reasons: vec!["r".into()],
        };
        assert!(plan(Some(&payment), &allowed, None, &strict).is_backend());
        let search =
            call(r#"{"agent":"s","tool":"search_web","args":{"query":"q"},"source":"user"}"#);
        let outcome = outcome_for(Some(&search), &allowed, None, &strict).outcome;
        assert_eq!(outcome.status, Status::Failed);
        assert!(
            outcome.reason.contains("--builtin-fallback"),
            "{}",
            outcome.reason
        );
    }

    #[test]
    fn an_unknown_tool_fails() {
        let unknown = call(r#"{"agent":"b","tool":"Send_Payment","source":"user"}"#);
        let effective = Effective {
            decision: Decision::Allow,
            reasons: vec!["r".into()],
        };
        let outcome = outcome_for(Some(&unknown), &effective, None, &ToolSet::Builtin).outcome;
        assert_eq!(outcome.status, Status::Failed);
        assert!(
            outcome.reason.contains("no tool named \"Send_Payment\""),
            "{}",
            outcome.reason
        );
    }
}
