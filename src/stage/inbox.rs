//! `sc-inbox`: one approval page for every door of a crew.
//!
//! The doors (`sc-approve --inbox`, `sc-mcp --inbox`) put their holds in the crew's inbox, a
//! value in the crew's state store ([`crate::store::inbox`]). sc-inbox looks at it every
//! [`POLL_EVERY`] and shows each pending hold as a card on the same page, token and API as
//! `sc-approve --web` ([`WebApprovals`]), where `GET /api/holds` also names each hold's `door`
//! and `pid`. An answer given on the page is first committed to the store, in one atomic update
//! bound to the record's digest, the hold's expiry and its door's heartbeat: of two inboxes
//! answering one hold, the first wins and the other is refused (409). The door, which looks at its
//! hold as often, acts on the answer.
//!
//! A hold whose door is gone (its heartbeat is stale) is withdrawn, on the page and in the store;
//! one answered in another inbox, or taken back by its door, is withdrawn from the page; one
//! nobody answers within `--timeout` expires, and its door declines it. Every answer given or
//! refused, and every hold expired or withdrawn here, is an audit event (stage `inbox`).

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use anyhow::Result;

use crate::approve::inbox::host_name;
use crate::approve::notify::{Notice, Notifier};
use crate::approve::web::{announce, Given, Origin, Ticket, WebApprovals};
use crate::approve::{Hold, Reply};
use crate::audit::{timestamp, AuditLog};
use crate::json_write::JsonLine;
use crate::record::Record;
use crate::sanitize::for_terminal;
use crate::store::inbox::{self, Answer, HoldState, InboxHold};
use crate::store::Store;

/// How often the inbox looks at the store.
pub const POLL_EVERY: Duration = Duration::from_millis(150);

/// What `sc-inbox` needs.
pub struct InboxOptions {
    /// Where the page is served (a loopback address).
    pub addr: SocketAddr,
    pub crew: String,
    /// How long a hold waits on this page before it expires; `None`: as long as its door waits.
    pub timeout: Option<Duration>,
    pub notify: Option<Notifier>,
}

/// A hold shown on the page.
struct Shown {
    ticket: Ticket,
    hold: InboxHold,
    notice: Option<Notice>,
    /// Whether the card expires at this inbox's `--timeout` (else at its door's, which then
    /// gives up by itself).
    ours: bool,
}

/// Who this inbox is, as an answer it gives names it.
fn answerer() -> String {
    format!("sc-inbox {} on {}", std::process::id(), host_name())
}

fn narrate(text: &str) {
    let _ = writeln!(io::stderr(), "sc-inbox: {}", for_terminal(text));
}

/// The audit log, shared by the loop and the page's thread.
#[derive(Clone)]
struct Audit(Arc<Mutex<AuditLog>>);

impl Audit {
    /// Appends an event about `hold`: what was done (`action`), and the rest of its fields.
    fn event(
        &self,
        crew: &str,
        hold: &InboxHold,
        action: &str,
        more: &dyn Fn(JsonLine) -> JsonLine,
    ) {
        let id = Record::parse(hold.line.as_bytes())
            .ok()
            .and_then(|record| record.id().map(|id| id.into_owned()))
            .unwrap_or_else(|| hold.id.clone());
        let line = JsonLine::new()
            .str_field("ts", &timestamp(SystemTime::now()))
            .str_field("stage", "inbox")
            .str_field("id", &id)
            .str_field("action", action)
            .str_field("crew", crew)
            .str_field("hold", &hold.id)
            .str_field("door", hold.door.as_str())
            .field("pid", &hold.pid)
            .str_field("host", &hold.host)
            .str_field("digest", &hold.digest);
        let line = more(line).finish();
        let mut log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(err) = log.append(&line) {
            narrate(&format!("the audit log cannot be written: {err:#}"));
        }
    }
}

/// The hook every answer on the page goes through: committed to the store first, or refused.
fn on_answer(
    store: Box<dyn Store>,
    crew: String,
    audit: Audit,
    holds: Arc<Mutex<HashMap<String, InboxHold>>>,
) -> crate::approve::web::OnAnswer {
    let store = Mutex::new(store);
    let by = answerer();
    Box::new(move |origin: &Origin, given: Given<'_>| {
        let answer = Answer {
            approve: given.approve,
            digest: given.digest,
            scope: given.scope,
            by: &by,
        };
        let mut store = store.lock().unwrap_or_else(PoisonError::into_inner);
        let result = inbox::answer(
            store.as_mut(),
            &crew,
            &origin.key,
            &answer,
            SystemTime::now(),
        );
        drop(store);
        let shown = holds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&origin.key)
            .cloned();
        let refused = match result {
            Ok(Ok(hold)) => {
                audit.event(&crew, &hold, "answered", &|line| {
                    let line = line.field("approved", &given.approve);
                    match hold.scope {
                        Some(scope) => line.str_field("scope", scope.as_str()),
                        None => line,
                    }
                });
                narrate(&format!(
                    "{} hold {} of {} {}",
                    if given.approve {
                        "approved"
                    } else {
                        "declined"
                    },
                    hold.id,
                    hold.door.as_str(),
                    hold.pid
                ));
                return Ok(());
            }
            Ok(Err(conflict)) => conflict.0,
            Err(err) => format!("the inbox's store failed: {err}"),
        };
        if let Some(hold) = shown {
            audit.event(&crew, &hold, "refused", &|line| {
                line.field("approved", &given.approve)
                    .str_field("reason", &refused)
            });
        }
        Err(refused)
    })
}

/// Serves the crew's inbox until the process is ended. `store` is looked at by the loop,
/// `answers` commits the page's answers.
pub fn run(
    options: InboxOptions,
    mut store: Box<dyn Store>,
    answers: Box<dyn Store>,
    log: AuditLog,
) -> Result<std::convert::Infallible> {
    let crew = options.crew.clone();
    let audit = Audit(Arc::new(Mutex::new(log)));
    let known = Arc::new(Mutex::new(HashMap::new()));
    let hook = on_answer(answers, crew.clone(), audit.clone(), Arc::clone(&known));
    let web = WebApprovals::start_with(options.addr, "sc-inbox", None, Some(hook))?;
    announce("sc-inbox", web.url());
    let mut shown: HashMap<String, Shown> = HashMap::new();
    let mut failing: Option<String> = None;
    let by = answerer();
    loop {
        match inbox::list(store.as_mut(), &crew) {
            Err(err) => {
                let why = err.to_string();
                if failing.as_ref() != Some(&why) {
                    narrate(&format!(
                        "the crew's inbox cannot be read: {why}; its doors decline what they hold"
                    ));
                }
                failing = Some(why);
            }
            Ok(holds) => {
                if failing.take().is_some() {
                    narrate("the crew's inbox can be read again");
                }
                let now = inbox::millis(SystemTime::now());
                for hold in &holds {
                    if hold.state != HoldState::Pending || shown.contains_key(&hold.id) {
                        continue;
                    }
                    if !hold.door_alive(now) {
                        let why = "the door is gone";
                        end(
                            store.as_mut(),
                            &crew,
                            &audit,
                            hold,
                            HoldState::Withdrawn,
                            &by,
                            why,
                        );
                        continue;
                    }
                    if hold.is_due(now) {
                        // Its door gives up on it now: not shown.
                        continue;
                    }
                    if let Some(card) = show(&web, hold, &options, now) {
                        known
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(hold.id.clone(), hold.clone());
                        shown.insert(hold.id.clone(), card);
                    } else {
                        let why = "the hold's record cannot be shown (it is not a whole hold)";
                        end(
                            store.as_mut(),
                            &crew,
                            &audit,
                            hold,
                            HoldState::Withdrawn,
                            &by,
                            why,
                        );
                    }
                }
                let by_id: HashMap<&str, &InboxHold> =
                    holds.iter().map(|hold| (hold.id.as_str(), hold)).collect();
                let mut gone = Vec::new();
                for (id, card) in &shown {
                    let ended = match by_id.get(id.as_str()) {
                        None => Some("the hold is no longer in the crew's inbox: answered in another inbox, or its door stopped waiting".to_owned()),
                        Some(hold) if hold.state != HoldState::Pending => Some(format!(
                            "the hold was {} elsewhere ({})",
                            hold.state.as_str(),
                            hold.by.as_deref().unwrap_or("?")
                        )),
                        Some(hold) if !hold.door_alive(now) => {
                            let why = "the door is gone";
                            end(store.as_mut(), &crew, &audit, hold, HoldState::Withdrawn, &by, why);
                            Some(why.to_owned())
                        }
                        Some(_) => None,
                    };
                    if let Some(why) = ended {
                        web.withdraw(card.ticket, &why);
                    }
                    match web.poll(card.ticket) {
                        None => {}
                        Some(Reply::TimedOut(after)) if card.ours => {
                            let why = format!(
                                "no answer in the crew's inbox within {} seconds",
                                after.as_secs()
                            );
                            end(
                                store.as_mut(),
                                &crew,
                                &audit,
                                &card.hold,
                                HoldState::Expired,
                                &by,
                                &why,
                            );
                            gone.push(id.clone());
                        }
                        Some(_) => gone.push(id.clone()),
                    }
                }
                for id in gone {
                    known
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&id);
                    if let Some(Shown {
                        notice: Some(notice),
                        ..
                    }) = shown.remove(&id)
                    {
                        // Its failure was said on stderr; the inbox does not wait for it.
                        let _ = std::thread::Builder::new()
                            .name("notify-end".into())
                            .spawn(move || notice.finish());
                    }
                }
            }
        }
        std::thread::sleep(POLL_EVERY);
    }
}

/// Puts a hold on the page (and tells the notifier): `None` when its record is not a whole hold.
fn show(web: &WebApprovals, hold: &InboxHold, options: &InboxOptions, now: u64) -> Option<Shown> {
    let record = Record::parse(hold.line.as_bytes()).ok()?;
    let call = record.call()?.as_ref().ok()?;
    let id = record.id()?;
    let reasons = record.reasons();
    if reasons.is_empty() {
        return None;
    }
    let door_left = hold
        .expires
        .map(|at| Duration::from_millis(at.saturating_sub(now)));
    let ours = match (door_left, options.timeout) {
        (Some(door), Some(inbox)) => inbox < door,
        (door, inbox) => door.is_none() && inbox.is_some(),
    };
    let timeout = if ours { options.timeout } else { door_left };
    let asked = Hold {
        line: hold.line.as_bytes(),
        id: &id,
        call,
        reasons: &reasons,
        timeout,
        scopes: &hold.scopes,
    };
    let origin = Origin {
        door: hold.door.as_str().to_owned(),
        pid: hold.pid,
        key: hold.id.clone(),
    };
    let ticket = web.submit_from(&asked, Some(origin));
    narrate(&format!(
        "{} → {}: hold {} of {} {} on {} is on the page (card {})",
        call.agent,
        call.tool,
        hold.id,
        hold.door.as_str(),
        hold.pid,
        hold.host,
        ticket.id()
    ));
    let notice = options
        .notify
        .as_ref()
        .map(|notifier| notifier.notify(&asked, Some(web.url())));
    Some(Shown {
        ticket,
        hold: hold.clone(),
        notice,
        ours,
    })
}

/// Ends a pending hold here (expired, withdrawn), and audits it when this inbox ended it.
fn end(
    store: &mut dyn Store,
    crew: &str,
    audit: &Audit,
    hold: &InboxHold,
    state: HoldState,
    by: &str,
    why: &str,
) {
    match inbox::end(store, crew, &hold.id, state, by, why, SystemTime::now()) {
        Ok(Some(ended)) => {
            audit.event(crew, &ended, state.as_str(), &|line| {
                line.str_field("reason", why)
            });
            narrate(&format!("hold {} {}: {why}", hold.id, state.as_str()));
        }
        Ok(None) => {}
        Err(err) => narrate(&format!(
            "hold {} could not be marked {}: {err}",
            hold.id,
            state.as_str()
        )),
    }
}
