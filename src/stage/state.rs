//! What `sc-state` does with a store: say what `init` made of it; show a crew's state (each agent's taint, with its cause,
//! and its spend in the current window) and reset it, with an audit event per reset; list a
//! crew's grants ([`crate::store::grants`]) and end them.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde_json::{json, Map, Value};

use crate::json_write::JsonLine;
use crate::rules::state::{AgentState, CrewState, TaintCause};
use crate::sanitize::{for_terminal, quoted};
use crate::store::grants::{self, Covers, Grant};
use crate::store::{Initialised, Owner, StateKey, Store, StoreError, ValueChange, ValueKey, View};

/// What a reset clears: a whole crew (or session), or one agent of it.
#[derive(Debug, Clone)]
pub struct Reset {
    pub owner: Owner,
    pub agent: Option<String>,
}

/// What `sc-state init` says on stderr: that it made the store, or that it was one already.
pub fn init_text(made: &Initialised) -> String {
    if made.created {
        format!(
            "sc-state: created the state store {}\n",
            for_terminal(&made.store)
        )
    } else {
        format!(
            "sc-state: {} is a state store already; nothing changed\n",
            for_terminal(&made.store)
        )
    }
}

/// The audit event of `sc-state init` that made the store `store`.
pub fn init_event(id: &str, store: &str, now: SystemTime) -> Vec<u8> {
    JsonLine::new()
        .str_field("ts", &crate::audit::timestamp(now))
        .str_field("stage", "state")
        .str_field("id", id)
        .str_field("action", "init")
        .str_field("stateStore", store)
        .finish()
}

/// The keys a reset or a show of `owner` covers: the gate's state, and for a crew sc-exec's.
pub fn keys_of(owner: &Owner) -> Vec<StateKey> {
    match owner {
        Owner::Crew(_) => vec![
            StateKey {
                owner: owner.clone(),
                view: View::Gate,
            },
            StateKey {
                owner: owner.clone(),
                view: View::Exec,
            },
        ],
        Owner::Session(_) => vec![StateKey {
            owner: owner.clone(),
            view: View::Gate,
        }],
    }
}

/// The states at `keys` that exist, read.
pub fn read_states(
    store: &mut dyn Store,
    keys: &[StateKey],
) -> Result<Vec<(StateKey, CrewState)>, StoreError> {
    let mut states = Vec::new();
    for key in keys {
        if let Some(state) = store.read(key)? {
            states.push((key.clone(), state));
        }
    }
    Ok(states)
}

/// A state as it stands at `now`: spend from a budget window that has ended counts for nothing.
fn current(state: &CrewState, now: SystemTime) -> (CrewState, bool) {
    let ended = state
        .spend_window
        .as_ref()
        .is_some_and(|window| window.ended_by(now));
    let mut state = state.clone();
    if ended {
        state.crew_spent = 0.0;
        state.crew_inexact = false;
        for agent in state.agents.values_mut() {
            agent.spent = 0.0;
            agent.inexact = false;
        }
        state.held_spend.clear();
    }
    (state, ended)
}

fn taint(cause: &TaintCause) -> String {
    match &cause.at {
        Some(at) => format!("{} (last untrusted read {at})", cause.describe()),
        None => cause.describe().to_owned(),
    }
}

fn spend(agent: &AgentState) -> String {
    if agent.inexact {
        format!("about {}", agent.spent)
    } else {
        agent.spent.to_string()
    }
}

/// The text `sc-state show` prints for a SQLite store whose file does not exist yet: there is
/// no state yet, and nothing is created to say so. `elsewhere`: a store that does exist where
/// sc-hook and sc-mcp keep theirs by default, to point to.
pub fn show_missing_text(store: &str, elsewhere: Option<&str>) -> String {
    let mut text = format!(
        "state store {}\n  no state yet: the file does not exist (the first stage that keeps state there makes it)\n",
        for_terminal(store)
    );
    if let Some(other) = elsewhere {
        let _ = writeln!(
            text,
            "  sc-hook and sc-mcp keep theirs in {} by default: show it with --state {}",
            for_terminal(other),
            for_terminal(other)
        );
    }
    text
}

/// The text `sc-state show` prints.
pub fn show_text(store: &str, states: &[(StateKey, CrewState)], now: SystemTime) -> String {
    let mut text = format!("state store {}\n", for_terminal(store));
    if states.is_empty() {
        text.push_str("  no state\n");
        return text;
    }
    for (key, stored) in states {
        let (state, ended) = current(stored, now);
        let _ = writeln!(text, "{}:", for_terminal(&key.describe()));
        if let Some(window) = &stored.spend_window {
            let _ = writeln!(
                text,
                "  budget window: the UTC {} from {}{}",
                window.unit,
                window.start,
                if ended {
                    " has ended: spend starts afresh"
                } else {
                    ""
                }
            );
        }
        let crew_taint = match &state.crew_tainted_by {
            Some(cause) => format!("tainted by {}", taint(cause)),
            None => "not tainted".to_owned(),
        };
        let crew_spend = if state.crew_inexact {
            format!("about {}", state.crew_spent)
        } else {
            state.crew_spent.to_string()
        };
        let _ = writeln!(text, "  the crew: {crew_taint}; spent {crew_spend}");
        for (name, agent) in &state.agents {
            let agent_taint = match &agent.tainted_by {
                Some(cause) => format!("tainted by {}", taint(cause)),
                None => "not tainted".to_owned(),
            };
            let _ = writeln!(
                text,
                "  agent {}: {agent_taint}; spent {}",
                quoted(name),
                spend(agent)
            );
        }
    }
    text
}

/// The JSON `sc-state show --json` prints: the store, and each state as it stands now (spend of
/// an ended window at 0, `windowEnded` true), with its key.
pub fn show_json(store: &str, states: &[(StateKey, CrewState)], now: SystemTime) -> Value {
    let states: Vec<Value> = states
        .iter()
        .map(|(key, stored)| {
            let (state, ended) = current(stored, now);
            let mut entry = Map::new();
            match &key.owner {
                Owner::Crew(crew) => entry.insert("crew".into(), json!(crew)),
                Owner::Session(id) => entry.insert("session".into(), json!(id)),
            };
            entry.insert("view".into(), json!(key.view.as_str()));
            entry.insert("windowEnded".into(), json!(ended));
            entry.insert(
                "state".into(),
                serde_json::to_value(&state).expect("a state serializes"),
            );
            Value::Object(entry)
        })
        .collect();
    json!({ "store": store, "states": states })
}

/// Clears what `reset` names in every state it covers. A whole session's reset forgets its call
/// links too (whatever they hold), so a call decided before it is recorded, if it runs, as a
/// call the gate never judged.
pub fn reset(store: &mut dyn Store, reset: &Reset) -> Result<(), StoreError> {
    if let (Owner::Session(id), None) = (&reset.owner, &reset.agent) {
        store.update_value(&ValueKey::links(id), &mut |_| Ok(ValueChange::Remove))?;
    }
    for key in keys_of(&reset.owner) {
        store.update(&key, &mut |state| match &reset.agent {
            Some(agent) => {
                state.reset_agent(agent);
            }
            None => {
                *state = CrewState {
                    span: state.span.clone(),
                    ..CrewState::new()
                }
            }
        })?;
    }
    Ok(())
}

/// The audit event of a reset: stage `state`, action `reset`, what was reset in which store, and
/// the states before it.
pub fn reset_event(
    id: &str,
    store: &str,
    reset: &Reset,
    before: &[(StateKey, CrewState)],
    now: SystemTime,
) -> Vec<u8> {
    let mut event = JsonLine::new()
        .str_field("ts", &crate::audit::timestamp(now))
        .str_field("stage", "state")
        .str_field("id", id)
        .str_field("action", "reset");
    event = match &reset.owner {
        Owner::Crew(crew) => event.str_field("crew", crew),
        Owner::Session(session) => event.str_field("session", session),
    };
    if let Some(agent) = &reset.agent {
        event = event.str_field("agent", agent);
    }
    let before: Map<String, Value> = before
        .iter()
        .map(|(key, state)| {
            (
                key.view.as_str().to_owned(),
                serde_json::to_value(state).expect("a state serializes"),
            )
        })
        .collect();
    event
        .str_field("stateStore", store)
        .field("before", &before)
        .finish()
}

/// How many hex digits of a `call` grant's digest the text table shows (`--json` has all 64).
const DIGEST_SHOWN: usize = 16;

/// The text `sc-state grants` prints: the crew and store, then a table of its live grants, one a
/// line, oldest first (agent-written text escaped for the terminal).
pub fn grants_text(store: &str, crew: &str, grants: &[Grant]) -> String {
    let mut text = format!(
        "grants of crew {} in {}\n",
        quoted(crew),
        for_terminal(store)
    );
    if grants.is_empty() {
        text.push_str("  none\n");
        return text;
    }
    let header = [
        "ID", "AGENT", "TOOL", "SCOPE", "BY", "GIVEN", "EXPIRES", "COVERS",
    ];
    let rows: Vec<[String; 8]> = grants
        .iter()
        .map(|grant| {
            let covers = match &grant.covers {
                Covers::Call { digest, .. } => format!("digest {}…", &digest[..DIGEST_SHOWN]),
                Covers::Value { values } => values
                    .iter()
                    .map(|value| {
                        for_terminal(&Value::String(value.clone()).to_string()).into_owned()
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            [
                grant.id.clone(),
                for_terminal(&grant.agent).into_owned(),
                for_terminal(&grant.tool).into_owned(),
                grant.covers.scope().to_owned(),
                grant.by.as_str().to_owned(),
                grants::time_text(grant.at),
                grants::time_text(grant.expires_at),
                covers,
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut line = |cells: &[&str]| {
        text.push_str("  ");
        for (at, cell) in cells.iter().enumerate() {
            if at + 1 == cells.len() {
                text.push_str(cell);
            } else {
                let pad = widths[at] - cell.chars().count();
                let _ = write!(text, "{cell}{}  ", " ".repeat(pad));
            }
        }
        text.push('\n');
    };
    line(&header);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
    text
}

/// The JSON `sc-state grants --json` prints: an array of [`Grant::to_json`] objects.
pub fn grants_json(grants: &[Grant]) -> Value {
    Value::Array(grants.iter().map(Grant::to_json).collect())
}

/// What `sc-state revoke ID` says on stderr when it ended the grant.
pub fn revoked_text(store: &str, grant: &Grant) -> String {
    format!(
        "sc-state: revoked grant {} ({} scope, agent {}, tool {}) of crew {} in {}\n",
        grant.id,
        grant.covers.scope(),
        quoted(&grant.agent),
        quoted(&grant.tool),
        quoted(&grant.crew),
        for_terminal(store)
    )
}

/// What `sc-state revoke --all` says on stderr: how many live grants it ended, and that stored
/// grants it could not read were removed, when they were.
pub fn revoked_all_text(store: &str, crew: &str, revoked: &grants::RevokedAll) -> String {
    let mut text = String::new();
    if let Some(why) = &revoked.unreadable {
        let _ = writeln!(
            text,
            "sc-state: the stored grants of crew {} were not what this program writes, and are removed: {}",
            quoted(crew),
            for_terminal(&why.0)
        );
    }
    let count = revoked.ended.len();
    let _ = writeln!(
        text,
        "sc-state: revoked {count} grant{} of crew {} in {}",
        if count == 1 { "" } else { "s" },
        quoted(crew),
        for_terminal(store)
    );
    text
}

/// The usage error of `sc-state revoke ID` for an id the crew has no grant of.
pub fn unknown_grant(store: &str, crew: &str, id: &str) -> String {
    format!(
        "no grant {} in crew {} in {} (list them with `sc-state grants`)",
        quoted(id),
        quoted(crew),
        for_terminal(store)
    )
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
