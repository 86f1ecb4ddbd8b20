//! The decision's part of remembered approvals ([`super::grant`]): which of the crew's grants may
//! apply to a call ([`Endorsed`]), the values a `value` grant lets value provenance skip, and the
//! decision's last step ([`settle`]): a hold whose every held finding a grant covers is allowed,
//! naming the grants; a deny never is.

use std::time::SystemTime;

use super::grant::{call_digest, reason, Covers, Grant};
use super::policy::Policy;
use crate::call::Call;
use crate::verdict::{Decision, Grantable, Granting, Judgement, Scope};

/// The grants a door read for one call, and the time it decides at: what [`CallContext`]
/// carries to the decision.
///
/// [`CallContext`]: super::decision::CallContext
#[derive(Debug, Clone, Copy)]
pub struct Granted<'a> {
    pub grants: &'a [Grant],
    pub now: SystemTime,
}

/// The grants that may apply to one call, as the decision uses them: the agent's own (under any
/// `taintScope`), live at the time of the decision and no
/// older than the policy's `grantTtl`; none for a tool in `neverRemember`. It remembers which
/// endorsed values the value-provenance rule skipped, and which untrusted values it named.
pub(crate) struct Endorsed<'a> {
    usable: Vec<&'a Grant>,
    digest: std::cell::OnceCell<Option<String>>,
    used: std::cell::RefCell<Vec<String>>,
    named: std::cell::RefCell<Vec<String>>,
    /// Whether the call carries more untrusted values than those named.
    more_named: std::cell::Cell<bool>,
    /// What taints the session now ([`taint_source`]): made on first use from `cause`.
    sources: std::cell::OnceCell<Vec<String>>,
    cause: Option<super::grant::TaintSources<'a>>,
}

/// The most untrusted values a hold names for a `value` grant.
pub(crate) const MAX_NAMED: usize = 16;

impl<'a> Endorsed<'a> {
    /// `sources`: what taints the session now ([`super::grant::taint_source`]).
    pub(crate) fn new(
        call: &Call,
        policy: &Policy,
        sources: Vec<String>,
        granted: Option<Granted<'a>>,
    ) -> Self {
        let endorsed = Endorsed::with_cause(call, policy, None, granted);
        let _ = endorsed.sources.set(sources);
        endorsed
    }

    /// As [`Endorsed::new`], the session's sources read from its taint `cause` only when a
    /// grant or a hold needs them (most calls need neither).
    pub(crate) fn with_cause(
        call: &Call,
        policy: &Policy,
        cause: Option<super::grant::TaintSources<'a>>,
        granted: Option<Granted<'a>>,
    ) -> Self {
        let usable = match granted {
            Some(granted) if !policy.never_remembers(call) => granted
                .grants
                .iter()
                .filter(|grant| {
                    // The agent's own, whatever the taint's scope: the person trusted the values
                    // "for this agent", as every way of asking says (under `taintScope: "crew"`
                    // another agent's call carrying them is asked about again).
                    let whose = grant.agent == call.agent;
                    let young = policy
                        .grant_ttl()
                        .is_none_or(|ttl| granted.now < grant.at + ttl);
                    whose && young && grant.is_live(granted.now)
                })
                .collect(),
            _ => Vec::new(),
        };
        Endorsed {
            usable,
            digest: std::cell::OnceCell::new(),
            used: Default::default(),
            named: Default::default(),
            more_named: Default::default(),
            sources: std::cell::OnceCell::new(),
            cause,
        }
    }

    /// What taints the session now: the sources given, or its taint cause's.
    fn sources(&self) -> &Vec<String> {
        self.sources
            .get_or_init(|| self.cause.map(|cause| cause.all()).unwrap_or_default())
    }

    /// [`Endorsed::sources`], owned: made anew (not copied) when no grant needed them.
    fn sources_owned(&self) -> Vec<String> {
        match self.sources.get() {
            Some(sources) => sources.clone(),
            None => self.cause.map(|cause| cause.all()).unwrap_or_default(),
        }
    }

    /// Whether an untrusted value is endorsed by a `value` grant (and so not named): noted as
    /// used.
    pub(crate) fn skips(&self, value: &str) -> bool {
        let endorsed = self.usable.iter().any(|grant| match &grant.covers {
            Covers::Value { values } => values.binary_search_by(|v| v.as_str().cmp(value)).is_ok(),
            Covers::Call { .. } => false,
        });
        if endorsed {
            self.used.borrow_mut().push(value.to_owned());
        }
        endorsed
    }

    /// Notes the untrusted values a value-provenance hold named.
    pub(crate) fn name(&self, values: Vec<String>, more: bool) {
        *self.named.borrow_mut() = values;
        self.more_named.set(more);
    }

    /// The `call` grant that covers this call's hold of `kind`: same tool, same arguments, and
    /// the session tainted by nothing but the sources the grant recorded (a grant given before
    /// a reset does not cover the call once another source tainted the session; a grant that
    /// recorded none, an old one included, covers only an untainted session). A budget is
    /// never covered: it depends on what was spent since, not on the call.
    fn covering(&self, call: &Call, kind: &str) -> Option<&'a Grant> {
        // No call grant of this agent and tool: nothing to digest the arguments for (most
        // holds, and every hold of a door that keeps none).
        let tool_granted = self
            .usable
            .iter()
            .any(|grant| grant.tool == call.tool && matches!(grant.covers, Covers::Call { .. }));
        if kind == "budget" || !tool_granted {
            return None;
        }
        let digest = self.digest.get_or_init(|| call_digest(call));
        let digest = digest.as_deref()?;
        self.usable
            .iter()
            .copied()
            .find(|grant| match &grant.covers {
                Covers::Call {
                    digest: granted,
                    kinds,
                    sources,
                } => {
                    grant.tool == call.tool
                        && granted == digest
                        && kinds.binary_search_by(|k| k.as_str().cmp(kind)).is_ok()
                        && self.sources().iter().all(|source| {
                            super::grant::more_sources_reads(source).is_none()
                                && sources.contains(source)
                        })
                }
                Covers::Value { .. } => false,
            })
    }

    /// The `value` grants whose endorsed values the decision skipped.
    fn value_grants_used(&self) -> Vec<&'a Grant> {
        let used = self.used.borrow();
        self.usable
            .iter()
            .copied()
            .filter(|grant| match &grant.covers {
                Covers::Value { values } => values.iter().any(|v| used.contains(v)),
                Covers::Call { .. } => false,
            })
            .collect()
    }
}

/// The decision's last step, after every rule: `findings` are the rules' (kind, decision,
/// reason), and the judgement without grants is their strongest. A deny stays a deny. A hold
/// whose every held finding a `call` grant covers (same agent, tool, arguments and kind) is
/// allowed, by those grants (and the `value` grants that let a value through). An allow that
/// only `value` grants made names them. Otherwise a hold offers the scopes that apply: `once`;
/// `call` unless the tool is in `neverRemember`; `value` when value provenance named untrusted
/// values and the tool is not in `neverRemember`.
pub(crate) fn settle(
    call: &Call,
    policy: &Policy,
    endorsed: &Endorsed,
    findings: Vec<(&'static str, Decision, String)>,
    allow_reason: impl FnOnce() -> String,
) -> Judgement {
    let strongest = findings.iter().map(|(_, decision, _)| *decision).max();
    let by_values = endorsed.value_grants_used();
    match strongest {
        Some(Decision::Deny) => Judgement {
            decision: Decision::Deny,
            reasons: findings
                .into_iter()
                .filter(|(_, decision, _)| *decision == Decision::Deny)
                .map(|(_, _, reason)| reason)
                .collect(),
            granting: Granting::Nothing,
        },
        Some(Decision::Hold) => {
            let mut by = by_values;
            let mut held = Vec::new();
            for (kind, decision, reason) in findings {
                if decision != Decision::Hold {
                    continue;
                }
                match endorsed.covering(call, kind) {
                    Some(grant) => {
                        if !by.iter().any(|g| g.id == grant.id) {
                            by.push(grant);
                        }
                    }
                    None => held.push((kind, reason)),
                }
            }
            if held.is_empty() {
                return allowed_by(&by);
            }
            let remember = !policy.never_remembers(call);
            let named = endorsed.named.borrow().clone();
            let mut scopes = vec![Scope::Once];
            if remember {
                // A `call` grant covers the call whatever values it carries: not offered when
                // it carries more than the hold names, which the person was not shown (a
                // review found `yes call` ran such a call).
                if !endorsed.more_named.get() {
                    scopes.push(Scope::Call);
                }
                if !named.is_empty() {
                    scopes.push(Scope::Value);
                }
            }
            let mut kinds: Vec<String> = held.iter().map(|(kind, _)| kind.to_string()).collect();
            kinds.sort();
            kinds.dedup();
            Judgement {
                decision: Decision::Hold,
                reasons: held.into_iter().map(|(_, reason)| reason).collect(),
                // The values and sources are written whatever is offered: a yes covers what
                // the record showed, and sc-exec compares them as it decides the call again
                // (a review found a `neverRemember` tool's yes ran whatever was read since).
                granting: Granting::Offers(Box::new(Grantable {
                    scopes,
                    kinds,
                    values: named,
                    sources: endorsed.sources_owned(),
                    more_values: endorsed.more_named.get(),
                })),
            }
        }
        Some(Decision::Allow) | None if !by_values.is_empty() => allowed_by(&by_values),
        Some(Decision::Allow) => Judgement {
            decision: Decision::Allow,
            reasons: findings.into_iter().map(|(_, _, reason)| reason).collect(),
            granting: Granting::Nothing,
        },
        None => Judgement {
            decision: Decision::Allow,
            reasons: vec![allow_reason()],
            granting: Granting::Nothing,
        },
    }
}

fn allowed_by(grants: &[&Grant]) -> Judgement {
    Judgement {
        decision: Decision::Allow,
        reasons: grants.iter().map(|grant| reason(grant)).collect(),
        granting: Granting::AllowedBy(grants.iter().map(|grant| grant.id.clone()).collect()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::rules::decision::{decide_in, CallContext};
    use crate::rules::grant::{call_digest, GivenBy};

    fn call(line: &str) -> Call {
        Call::parse_line(line.as_bytes()).unwrap().0
    }

    const EMAIL: &str = r#"{"agent":"a","tool":"send_email","args":{"to":"ops@example.com","body":"hi"},"source":"agent"}"#;

    fn read_page(url: &str) -> Call {
        call(&format!(
            r#"{{"agent":"a","tool":"fetch_page","args":{{"url":"{url}"}},"source":"agent"}}"#
        ))
    }

    /// A session tainted by reading `url`, and the email it then sends, decided with `grants`.
    fn decide_tainted(url: Option<&str>, grants: &[Grant]) -> Judgement {
        decide_after_reads(url.as_slice(), grants)
    }

    /// A session tainted by reading each of `urls` in turn, and the email it then sends.
    fn decide_after_reads(urls: &[&str], grants: &[Grant]) -> Judgement {
        let policy = Policy::default();
        let mut state = Default::default();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        for (n, url) in urls.iter().enumerate() {
            let read = read_page(url);
            decide_in(
                &read,
                &format!("r{n}"),
                &policy,
                &mut state,
                None,
                CallContext::default(),
            );
        }
        let context = CallContext {
            grants: Some(Granted { grants, now }),
            ..CallContext::default()
        };
        decide_in(&call(EMAIL), "e1", &policy, &mut state, None, context)
    }

    fn grant(sources: Vec<String>) -> Grant {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_799_999_000);
        Grant {
            id: "0".repeat(32),
            crew: "default".into(),
            agent: "a".into(),
            tool: "send_email".into(),
            covers: Covers::Call {
                digest: call_digest(&call(EMAIL)).unwrap(),
                kinds: vec!["taint".into()],
                sources,
            },
            by: GivenBy::Tty,
            at,
            expires_at: at + Duration::from_secs(8 * 3600),
            approval: "e0".into(),
        }
    }

    /// Issue 33: a `call` grant records what tainted the session when it was given, and covers
    /// the call only while the session's taint is among those sources: after a reset, a session
    /// tainted by another page is asked again.
    #[test]
    fn a_call_grant_covers_the_call_only_while_the_session_is_tainted_by_its_sources() {
        let held = decide_tainted(Some("https://a.example/one"), &[]);
        assert_eq!(held.decision, Decision::Hold, "{held:?}");
        let Granting::Offers(grantable) = &held.granting else {
            panic!("a hold offers scopes: {held:?}")
        };
        assert_eq!(
            grantable.sources,
            ["fetch_page url=https://a.example/one"],
            "{grantable:?}"
        );
        let given = grant(grantable.sources.clone());
        let same = decide_tainted(Some("https://a.example/one"), std::slice::from_ref(&given));
        assert_eq!(same.decision, Decision::Allow, "{same:?}");
        let other = decide_tainted(Some("https://b.example/two"), std::slice::from_ref(&given));
        assert_eq!(other.decision, Decision::Hold, "{other:?}");
        // A grant that recorded no source (one kept before sources were recorded) covers only an
        // untainted session: tainted, the call is asked again.
        let old = grant(Vec::new());
        let tainted = decide_tainted(Some("https://a.example/one"), std::slice::from_ref(&old));
        assert_eq!(tainted.decision, Decision::Hold, "{tainted:?}");
        // A second page read after the grant was given: the session's taint is no longer among
        // the grant's sources, so the call is asked again (found by a review: only the first
        // source was kept). A grant given after both reads covers it.
        let two = ["https://a.example/one", "https://evil.example/two"];
        let after = decide_after_reads(&two, std::slice::from_ref(&given));
        assert_eq!(after.decision, Decision::Hold, "{after:?}");
        let Granting::Offers(both) = &after.granting else {
            panic!("a hold offers scopes: {after:?}")
        };
        assert_eq!(both.sources.len(), 2, "{both:?}");
        let wider = grant(both.sources.clone());
        let covered = decide_after_reads(&two, std::slice::from_ref(&wider));
        assert_eq!(covered.decision, Decision::Allow, "{covered:?}");
        // Past the listed sources, no grant covers the session.
        let many: Vec<String> = (0..=crate::rules::state::MAX_ALSO + 1)
            .map(|n| format!("https://p{n}.example/"))
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let crowded = decide_after_reads(&many, &[]);
        let Granting::Offers(all) = &crowded.granting else {
            panic!("a hold offers scopes: {crowded:?}")
        };
        let everything = grant(all.sources.clone());
        let past = decide_after_reads(&many, std::slice::from_ref(&everything));
        assert_eq!(past.decision, Decision::Hold, "{past:?}");
    }

    /// Before the list is full a source read again changes nothing; past it, the marker counts
    /// every read, a listed source's too (it is not worked out there, to cost nothing).
    #[test]
    fn the_marker_past_the_list_counts_every_read_past_it() {
        let urls: Vec<String> = (0..9).map(|n| format!("https://p{n}.example/")).collect();
        let sources_after = |reads: &[&str]| {
            let judgement = decide_after_reads(reads, &[]);
            let Granting::Offers(offered) = judgement.granting else {
                panic!("a hold offers scopes: {judgement:?}")
            };
            offered.sources
        };
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        let full = crate::rules::state::MAX_ALSO + 1;
        // The first read past the list makes the marker.
        let at_first = sources_after(&urls[..=full]);
        assert_eq!(at_first.len(), full + 1, "{at_first:?}");
        assert_eq!(at_first.last().unwrap(), crate::rules::grant::MORE_SOURCES);
        // A listed source read again before the list filled: the same.
        let mut again = urls[..full].to_vec();
        again.push(urls[1]);
        again.push(urls[full]);
        assert_eq!(sources_after(&again), at_first);
        // Two more reads past the list, one of them a listed source read again: three reads.
        let mut more = urls[..=full + 1].to_vec();
        more.push(urls[1]);
        let counted = sources_after(&more);
        assert_eq!(
            counted.last().unwrap(),
            "(more untrusted sources than are listed: 3 reads of them)"
        );
        assert_eq!(counted[..full], at_first[..full]);
        assert_eq!(
            crate::rules::grant::more_sources_reads(counted.last().unwrap()),
            Some(3)
        );
        for not_a_marker in [
            "search_web query=(more untrusted sources than are listed)",
            "(more untrusted sources than are listed: 1 reads of them)",
            "(more untrusted sources than are listed: x reads of them)",
            "(more untrusted sources than are listed: 007 reads of them)",
            "(more untrusted sources than are listed: +7 reads of them)",
        ] {
            assert_eq!(
                crate::rules::grant::more_sources_reads(not_a_marker),
                None,
                "{not_a_marker}"
            );
        }
    }
}
