//! sc-hook's entries in an agent's JSON file (Claude Code, Gemini CLI, Copilot CLI, Cursor),
//! merged with the other keys and hooks there, in their order.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::entries::{command_key, is_ours, layout, Entry, Layout};
use super::error::InstallError;
use crate::stage::hook::contract::Agent;

fn parse(file: &Path, text: Option<&str>) -> Result<Map<String, Value>, InstallError> {
    let error = |why: String| InstallError::Parse {
        file: file.to_owned(),
        format: "JSON",
        why,
    };
    match text {
        None => Ok(Map::new()),
        Some(text) if text.trim().is_empty() => Ok(Map::new()),
        Some(text) => match crate::strict_json::parse(text.trim()) {
            Ok(Value::Object(root)) => Ok(root),
            Ok(_) => Err(error("not a JSON object".into())),
            Err(err) => Err(error(err.to_string())),
        },
    }
}

fn render(root: &Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(root).expect("JSON values serialize");
    text.push('\n');
    text
}

/// The file's text with sc-hook's entries in it.
pub(super) fn merge(
    file: &Path,
    text: Option<&str>,
    agent: Agent,
    wanted: &[Entry],
    force: bool,
) -> Result<String, InstallError> {
    let mut root = parse(file, text)?;
    if layout(agent) == Layout::Flat && !root.contains_key("version") {
        root.insert("version".into(), json!(1));
    }
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err(InstallError::Parse {
            file: file.to_owned(),
            format: "JSON",
            why: "its `hooks` is not an object".into(),
        });
    };
    let key = command_key(agent);
    for entry in wanted {
        let list = hooks
            .entry(entry.event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else {
            return Err(InstallError::Parse {
                file: file.to_owned(),
                format: "JSON",
                why: format!("its `hooks.{}` is not a list", entry.event),
            });
        };
        merge_event(file, agent, key, list, entry, force)?;
    }
    Ok(render(&root))
}

/// Every handler of an event's list, with where it is: `(group, handler)` for grouped files.
fn handlers(agent: Agent, list: &[Value]) -> Vec<(usize, Option<usize>, Value)> {
    let mut found = Vec::new();
    for (i, item) in list.iter().enumerate() {
        match layout(agent) {
            Layout::Flat => found.push((i, None, item.clone())),
            Layout::Grouped => {
                if let Some(Value::Array(inner)) = item.get("hooks") {
                    for (j, handler) in inner.iter().enumerate() {
                        found.push((i, Some(j), handler.clone()));
                    }
                }
            }
        }
    }
    found
}

fn merge_event(
    file: &Path,
    agent: Agent,
    key: &str,
    list: &mut Vec<Value>,
    entry: &Entry,
    force: bool,
) -> Result<(), InstallError> {
    let ours: Vec<_> = handlers(agent, list)
        .into_iter()
        .filter(|(_, _, handler)| {
            handler
                .get(key)
                .and_then(Value::as_str)
                .is_some_and(|command| is_ours(agent, command))
        })
        .collect();
    if let [(_, _, handler)] = ours.as_slice() {
        if *handler == entry.handler {
            return Ok(());
        }
    }
    if let Some((_, _, handler)) = ours.first() {
        if !force {
            return Err(InstallError::Conflict {
                file: file.to_owned(),
                event: entry.event.to_owned(),
                command: handler
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
        remove_ours(agent, key, list);
    }
    list.push(match (layout(agent), entry.matcher) {
        (Layout::Flat, _) => entry.handler.clone(),
        (Layout::Grouped, Some(matcher)) => {
            json!({"matcher": matcher, "hooks": [entry.handler.clone()]})
        }
        (Layout::Grouped, None) => json!({"hooks": [entry.handler.clone()]}),
    });
    Ok(())
}

/// Removes sc-hook's handlers from an event's list, and the groups they leave empty.
fn remove_ours(agent: Agent, key: &str, list: &mut Vec<Value>) {
    let mine = |handler: &Value| {
        handler
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|command| is_ours(agent, command))
    };
    match layout(agent) {
        Layout::Flat => list.retain(|handler| !mine(handler)),
        Layout::Grouped => list.retain_mut(|group| match group.get_mut("hooks") {
            Some(Value::Array(inner)) if inner.iter().any(mine) => {
                inner.retain(|handler| !mine(handler));
                !inner.is_empty()
            }
            _ => true,
        }),
    }
}

/// The file's text without sc-hook's entries; `None` when nothing else is left in it.
pub(super) fn remove(
    file: &Path,
    text: &str,
    agent: Agent,
) -> Result<Option<String>, InstallError> {
    let mut root = parse(file, Some(text))?;
    let key = command_key(agent);
    if let Some(Value::Object(hooks)) = root.get_mut("hooks") {
        for list in hooks.values_mut() {
            if let Value::Array(list) = list {
                remove_ours(agent, key, list);
            }
        }
        hooks.retain(|_, list| !matches!(list, Value::Array(items) if items.is_empty()));
        if hooks.is_empty() {
            root.remove("hooks");
        }
    }
    let only_version = root.len() == 1 && root.get("version") == Some(&json!(1));
    if root.is_empty() || (layout(agent) == Layout::Flat && only_version) {
        return Ok(None);
    }
    Ok(Some(render(&root)))
}
