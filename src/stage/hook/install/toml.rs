//! sc-hook's entries in Codex's `config.toml` (`[[hooks.EVENT]]` groups with
//! `[[hooks.EVENT.hooks]]` handlers), edited with toml_edit so that the user's comments, order
//! and formatting stay as they were.

use std::path::Path;

use toml_edit::{value, ArrayOfTables, DocumentMut, Item, Table};

use super::entries::{is_ours, Entry};
use super::error::InstallError;
use crate::stage::hook::contract::Agent;

fn parse(file: &Path, text: Option<&str>) -> Result<DocumentMut, InstallError> {
    text.unwrap_or("")
        .parse::<DocumentMut>()
        .map_err(|err| InstallError::Parse {
            file: file.to_owned(),
            format: "TOML",
            why: err.to_string().trim().to_owned(),
        })
}

fn not_tables(file: &Path, what: String) -> InstallError {
    InstallError::Parse {
        file: file.to_owned(),
        format: "TOML",
        why: format!("its `{what}` is not an array of tables"),
    }
}

/// The handler as a TOML table.
fn handler_table(entry: &Entry) -> Table {
    let mut table = Table::new();
    for (key, field) in entry.handler.as_object().expect("an object") {
        match field {
            serde_json::Value::String(text) => table.insert(key, value(text.as_str())),
            serde_json::Value::Number(n) => table.insert(key, value(n.as_i64().unwrap_or(30))),
            _ => None,
        };
    }
    table
}

fn command_of(handler: &Table) -> Option<&str> {
    handler.get("command").and_then(Item::as_str)
}

/// Sc-hook's handlers in an event's groups: `(group, handler)`.
fn ours(agent: Agent, groups: &ArrayOfTables) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for (i, group) in groups.iter().enumerate() {
        if let Some(handlers) = group.get("hooks").and_then(Item::as_array_of_tables) {
            for (j, handler) in handlers.iter().enumerate() {
                if command_of(handler).is_some_and(|command| is_ours(agent, command)) {
                    found.push((i, j));
                }
            }
        }
    }
    found
}

pub(super) fn merge(
    file: &Path,
    text: Option<&str>,
    agent: Agent,
    wanted: &[Entry],
    force: bool,
) -> Result<String, InstallError> {
    let mut document = parse(file, text)?;
    let hooks = document
        .entry("hooks")
        .or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        })
        .as_table_mut()
        .ok_or_else(|| not_tables(file, "hooks".into()))?;
    for entry in wanted {
        let groups = hooks
            .entry(entry.event)
            .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
            .as_array_of_tables_mut()
            .ok_or_else(|| not_tables(file, format!("hooks.{}", entry.event)))?;
        let wanted_handler = handler_table(entry);
        let found = ours(agent, groups);
        if let [(i, j)] = found.as_slice() {
            let handler = groups
                .get(*i)
                .and_then(|group| group.get("hooks"))
                .and_then(Item::as_array_of_tables)
                .and_then(|handlers| handlers.get(*j));
            if handler.is_some_and(|handler| same(handler, &wanted_handler)) {
                continue;
            }
        }
        if let Some((i, j)) = found.first() {
            if !force {
                let command = groups
                    .get(*i)
                    .and_then(|group| group.get("hooks"))
                    .and_then(Item::as_array_of_tables)
                    .and_then(|handlers| handlers.get(*j))
                    .and_then(command_of)
                    .unwrap_or_default()
                    .to_owned();
                return Err(InstallError::Conflict {
                    file: file.to_owned(),
                    event: entry.event.to_owned(),
                    command,
                });
            }
            remove_ours(agent, groups);
        }
        let mut group = Table::new();
        if let Some(matcher) = entry.matcher {
            group.insert("matcher", value(matcher));
        }
        let mut handlers = ArrayOfTables::new();
        handlers.push(wanted_handler);
        group.insert("hooks", Item::ArrayOfTables(handlers));
        groups.push(group);
    }
    Ok(document.to_string())
}

/// Two handlers with the same keys and values, whatever their formatting.
fn same(a: &Table, b: &Table) -> bool {
    let pairs = |t: &Table| -> Vec<(String, String)> {
        let mut pairs: Vec<_> = t
            .iter()
            .map(|(k, v)| {
                (
                    k.to_owned(),
                    v.as_value()
                        .map(|v| v.to_string().trim().to_owned())
                        .unwrap_or_default(),
                )
            })
            .collect();
        pairs.sort();
        pairs
    };
    pairs(a) == pairs(b)
}

fn remove_ours(agent: Agent, groups: &mut ArrayOfTables) {
    for group in groups.iter_mut() {
        if let Some(handlers) = group
            .get_mut("hooks")
            .and_then(Item::as_array_of_tables_mut)
        {
            handlers.retain(|handler| !command_of(handler).is_some_and(|c| is_ours(agent, c)));
        }
    }
    groups.retain(|group| {
        group
            .get("hooks")
            .and_then(Item::as_array_of_tables)
            .is_none_or(|handlers| !handlers.is_empty())
    });
}

pub(super) fn remove(
    file: &Path,
    text: &str,
    agent: Agent,
) -> Result<Option<String>, InstallError> {
    let mut document = parse(file, Some(text))?;
    if let Some(hooks) = document.get_mut("hooks").and_then(Item::as_table_mut) {
        let events: Vec<String> = hooks.iter().map(|(k, _)| k.to_owned()).collect();
        for event in events {
            if let Some(groups) = hooks.get_mut(&event).and_then(Item::as_array_of_tables_mut) {
                remove_ours(agent, groups);
                if groups.is_empty() {
                    hooks.remove(&event);
                }
            }
        }
        if hooks.is_empty() {
            document.remove("hooks");
        }
    }
    let text = document.to_string();
    if text.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(text))
}
