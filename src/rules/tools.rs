//! Tool names in a policy: a [`ToolPattern`] (a name, or a prefix ending in `*`) and a
//! [`ToolList`] of them, shared by every rule that names tools.

use std::fmt;

use serde_json::Value;

use super::names::unseen_characters;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPattern {
    Exact(String),
    Prefix(String),
}

impl ToolPattern {
    /// Parses a list item: an exact name, or a non-empty prefix followed by one final `*`.
    pub fn parse(text: &str) -> Result<ToolPattern, String> {
        if text.is_empty() {
            return Err("is an empty tool name".to_owned());
        }
        unseen_characters(text)?;
        match text.find('*') {
            None => Ok(ToolPattern::Exact(text.to_owned())),
            Some(at) if at + 1 != text.len() => Err(format!(
                "{} has `*` in the middle; only a final `*` (a prefix pattern) is allowed",
                Value::String(text.to_owned())
            )),
            Some(0) => Err("`*` alone is a pattern with an empty prefix; name the tool family (e.g. `mcp__github__*`)".to_owned()),
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

/// A list of tool names and patterns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolList(Vec<ToolPattern>);

impl ToolList {
    /// Parses every item; the error names the first bad item's index.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<ToolList, String> {
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                ToolPattern::parse(item.as_ref()).map_err(|why| format!("item {index} {why}"))
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
