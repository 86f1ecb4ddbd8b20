//! Keeping a wider yes as a grant ([`Remember`]): a person who approved a hold with the scope
//! `call` or `value` lets the same agent's later calls through without asking again
//! ([`crate::rules::grant`]). The scope is narrowed to `once`, and the approval's reason says
//! why, when the deciding door did not offer it for the hold (a tool in `neverRemember`, a
//! `value` for a hold that named no untrusted value), when there is nowhere to keep it beyond
//! this process, or when the store would not keep it. A grant never changes whether this call
//! is approved.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use crate::call::Call;
use crate::record::{AnsweredBy, Approval, Grantable, Scope};
use crate::rules::grant::{call_digest, Covers, GivenBy, Grant};
use crate::store::grants::{self, NewGrant};
use crate::store::Shared;

/// Where a door keeps the grants its person gives, and for how long: the crew's store
/// (`--state`, `--crew`); else this process's memory for a door that also decides (sc-mcp); else
/// nowhere (sc-approve: the gate is another process, so a wider scope is taken as `once`).
#[derive(Debug, Clone)]
pub struct Grants {
    pub store: Option<Arc<Mutex<Shared>>>,
    pub crew: String,
    /// `--grant-ttl`.
    pub ttl: Duration,
    /// The program, named when it says that grants do not outlive it.
    pub program: &'static str,
    /// The process's own grants, for a door without a store that decides itself.
    pub local: Option<Arc<Mutex<Vec<Grant>>>>,
}

impl Grants {
    /// The scopes a person is offered for a hold whose deciding door offered `grantable`: those
    /// it offered where a grant can be kept (the crew's store, or this process's memory), else
    /// `once` only, so that no button, word or choice promises what cannot be kept.
    pub fn keepable(&self, grantable: &Grantable) -> Grantable {
        if self.store.is_none() && self.local.is_none() {
            return Grantable {
                scopes: vec![Scope::Once],
                ..Grantable::default()
            };
        }
        grantable.clone()
    }

    /// Keeps the approval's scope as a grant where it can ([`Remember::keep`]).
    pub fn keep(&self, approval: &mut Approval, call: &Call, grantable: &Grantable, id: &str) {
        let given = Given {
            call,
            grantable,
            approval_id: id,
            crew: &self.crew,
        };
        let remember = Remember {
            ttl: self.ttl,
            program: self.program,
        };
        let now = SystemTime::now();
        match (&self.store, &self.local) {
            (Some(shared), _) => {
                let mut shared = shared.lock().unwrap_or_else(PoisonError::into_inner);
                let keep = Keep::Store {
                    shared: &mut shared,
                    crew: &self.crew,
                };
                remember.keep(approval, &given, keep, now);
            }
            (None, Some(local)) => {
                let mut local = local.lock().unwrap_or_else(PoisonError::into_inner);
                remember.keep(approval, &given, Keep::Process(&mut local), now);
            }
            (None, None) => remember.keep(approval, &given, Keep::Nowhere, now),
        }
    }

    /// The process's own grants (none with a store, whose grants the decision reads there).
    pub fn local(&self) -> Vec<Grant> {
        match (&self.store, &self.local) {
            (None, Some(local)) => local.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            _ => Vec::new(),
        }
    }
}

/// Where one grant is kept.
enum Keep<'a> {
    /// The crew's store (`--state`, `--crew`): every door and later runs honour them.
    Store {
        shared: &'a mut Shared,
        crew: &'a str,
    },
    /// This process's memory (sc-mcp without a store): they end with it.
    Process(&'a mut Vec<Grant>),
    /// Nowhere (sc-approve without a store: the gate is another process).
    Nowhere,
}

/// How a door remembers: for how long, and for which program (named when it says once that
/// grants do not outlive it).
#[derive(Debug, Clone, Copy)]
struct Remember {
    /// `--grant-ttl` (default 8h), lowered by the policy's `grantTtl` where the door has one.
    pub ttl: Duration,
    pub program: &'static str,
}

/// Said once a process: a wider scope meets a door without a shared store.
static SAID_NO_STORE: AtomicBool = AtomicBool::new(false);

/// The hold a yes was given for, as a grant needs it.
struct Given<'a> {
    pub call: &'a Call,
    pub grantable: &'a Grantable,
    /// The audit id of the approval (the hold record's id).
    pub approval_id: &'a str,
    /// The crew the grant is for (also named in [`Keep::Store`]); a process's own grants use
    /// the door's crew or `default`.
    pub crew: &'a str,
}

impl Remember {
    /// Keeps the approval's scope as a grant when it is `call` or `value`, and writes its id on
    /// the approval; narrows the scope to `once` (saying why in the reason) when it cannot.
    fn keep(&self, approval: &mut Approval, given: &Given, keep: Keep, now: SystemTime) {
        let Some(scope) = approval.scope.filter(|_| approval.approved) else {
            return;
        };
        if scope == Scope::Once {
            return;
        }
        let narrow = |approval: &mut Approval, why: String| {
            approval.scope = Some(Scope::Once);
            approval.reason = format!("{}; scope {scope} taken as once: {why}", approval.reason);
        };
        if !given.grantable.offers(scope) {
            let offered: Vec<&str> = given.grantable.scopes.iter().map(|s| s.as_str()).collect();
            return narrow(
                approval,
                format!(
                    "the deciding door offered only {} for this hold ({})",
                    offered.join(", "),
                    not_offered_because(scope, given.grantable)
                ),
            );
        }
        let Some(by) = given_by(approval.by) else {
            return narrow(approval, "nobody who can give a grant answered".into());
        };
        let covers = match scope {
            Scope::Call => {
                let digest = call_digest(given.call);
                match (digest, given.grantable.kinds.is_empty()) {
                    (Some(digest), false) => Covers::Call {
                        digest,
                        kinds: given.grantable.kinds.clone(),
                        sources: given.grantable.sources.clone(),
                    },
                    _ => return narrow(
                        approval,
                        "the hold does not say what held it, or its arguments hold a number too long to tell from another"
                            .into(),
                    ),
                }
            }
            Scope::Value if !given.grantable.values.is_empty() => Covers::Value {
                values: given.grantable.values.clone(),
            },
            _ => return narrow(approval, "the hold named no untrusted value".into()),
        };
        let new = NewGrant {
            crew: given.crew.to_owned(),
            agent: given.call.agent.clone(),
            tool: given.call.tool.clone(),
            covers,
            by,
            approval: given.approval_id.to_owned(),
        };
        if matches!(keep, Keep::Process(_) | Keep::Nowhere)
            && !SAID_NO_STORE.swap(true, Ordering::Relaxed)
        {
            eprintln!(
                "{}: no shared state store (--state, --crew): a remembered approval {}",
                self.program,
                if matches!(keep, Keep::Nowhere) {
                    "cannot be kept, so call and value answers are taken as once"
                } else {
                    "lasts only while this process runs"
                }
            );
        }
        let kept = match keep {
            Keep::Store { shared, crew } => {
                let new = NewGrant {
                    crew: crew.to_owned(),
                    ..new
                };
                grants::add(shared.store(), new, now, self.ttl).map_err(|err| err.to_string())
            }
            Keep::Process(local) => grants::in_memory(local, new, now, self.ttl)
                .map_err(|err| err.to_string()),
            Keep::Nowhere => Err(
                "there is no shared state store (--state, --crew) to keep it in, so it would not outlive this process".to_owned(),
            ),
        };
        match kept {
            Ok(grant) => approval.grant = Some(grant.id),
            Err(why) => narrow(approval, why),
        }
    }
}

/// Who gave a grant, by the way the person was asked.
fn given_by(by: AnsweredBy) -> Option<GivenBy> {
    match by {
        AnsweredBy::Tty => Some(GivenBy::Tty),
        AnsweredBy::Answers => Some(GivenBy::Answers),
        AnsweredBy::Web => Some(GivenBy::Web),
        AnsweredBy::Elicitation => Some(GivenBy::Elicitation),
        AnsweredBy::ClaudeCode | AnsweredBy::None => None,
    }
}

/// Why a deciding door did not offer `scope`: a `value` grant needs untrusted values that value
/// provenance named, while a door offers `once` alone for a tool in the policy's `neverRemember`
/// or for a verdict whose offer cannot be trusted (unsealed under the key).
fn not_offered_because(scope: Scope, grantable: &Grantable) -> &'static str {
    if scope == Scope::Value && grantable.offers(Scope::Call) {
        "value provenance named no untrusted value in this call, so there is no value to trust"
    } else {
        "a tool in the policy's neverRemember, or a verdict whose offer could not be trusted, gets no grant"
    }
}

#[cfg(test)]
#[path = "remember_tests.rs"]
mod tests;
