//! Tool names in a policy: a [`ToolPattern`] (a name, or a prefix ending in `*`) and a
//! [`ToolList`] of them, shared by every rule that names tools.

use std::fmt;

use serde_json::Value;

use super::names::{unseen_characters, NameError};

/// The value of the first entry of a `tools`-like map (tool name or pattern → value) whose
/// pattern matches `tool`.
pub(crate) fn entry_for<'a, T>(entries: &'a [(ToolPattern, T)], tool: &str) -> Option<&'a T> {
    entries
        .iter()
        .find(|(pattern, _)| pattern.matches(tool))
        .map(|(_, value)| value)
}

/// A tool name or a prefix pattern (`mcp__github__*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPattern {
    Exact(String),
    Prefix(String),
}

impl ToolPattern {
    /// Parses a list item: an exact name, or a non-empty prefix followed by one final `*`.
    pub fn parse(text: &str) -> Result<ToolPattern, PatternError> {
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        unseen_characters(text)?;
        match text.find('*') {
            None => Ok(ToolPattern::Exact(text.to_owned())),
            Some(at) if at + 1 != text.len() => Err(PatternError::StarInside(text.to_owned())),
            Some(0) => Err(PatternError::StarAlone),
            Some(at) => Ok(ToolPattern::Prefix(text[..at].to_owned())),
        }
    }

    /// Names compare exactly: no case folding, no trimming.
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            ToolPattern::Exact(name) => name == tool,
            ToolPattern::Prefix(prefix) => tool.starts_with(prefix.as_str()),
        }
    }
}

impl fmt::Display for ToolPattern {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            ToolPattern::Exact(name) => f.write_str(name),
            ToolPattern::Prefix(prefix) => write!(f, "{prefix}*"),
        }
    }
}

/// Why a tool name or pattern was refused; shown after the name or its place in a list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("is an empty tool name")]
    Empty,
    #[error(transparent)]
    Name(#[from] NameError),
    /// Shown as the JSON string it was written as.
    #[error("{} has `*` in the middle; only a final `*` (a prefix pattern) is allowed", Value::String(.0.clone()))]
    StarInside(String),
    #[error(
        "`*` alone is a pattern with an empty prefix; name the tool family (e.g. `mcp__github__*`)"
    )]
    StarAlone,
}

/// The first item of a tool list that is not a tool name or pattern, by its index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("item {index} {problem}")]
pub struct ItemError {
    pub index: usize,
    pub problem: PatternError,
}

/// A list of tool names and patterns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolList(Vec<ToolPattern>);

impl ToolList {
    /// Parses every item; the error names the first bad item's index.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<ToolList, ItemError> {
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                ToolPattern::parse(item.as_ref()).map_err(|problem| ItemError { index, problem })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(ToolList)
    }

    pub fn matches(&self, tool: &str) -> bool {
        self.0.iter().any(|pattern| pattern.matches(tool))
    }

    pub fn patterns(&self) -> &[ToolPattern] {
        &self.0
    }
}

impl fmt::Display for ToolList {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let names: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&names.join(", "))
    }
}
