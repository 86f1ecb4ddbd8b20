//! The policy's `provenance` key, checked: which tools are action tools and which arguments
//! hold free text (see docs/provenance.md). The rule itself is in [`super::provenance`].

use serde_json::Value;

use super::keys::{self, KeyError, KeyProblem, Problem};
use super::tools::{ItemError, ToolList, ToolPattern};

/// The default `actionTools`: tools whose harm is the act on an existing object.
pub(crate) const DEFAULT_ACTION_TOOLS: &[&str] = &[
    "update_password",
    "delete_*",
    "cancel_*",
    "reschedule_*",
    "reserve_*",
];
/// The default `freeTextArgs`: arguments that hold prose, checked for typed tokens only.
pub(crate) const DEFAULT_FREE_TEXT_ARGS: &[&str] = &[
    "body",
    "content",
    "message",
    "subject",
    "description",
    "text",
];
/// The longest value the whole-value check looks for in untrusted text.
pub(crate) const MAX_WHOLE_VALUE_CHARS: usize = 80;
/// The most untrusted reads a ledger waits on at once.
pub(crate) const MAX_PENDING_READS: usize = 4096;

const KNOWN: &[&str] = &["actionTools", "freeTextArgs"];

/// What can be wrong with the `provenance` key, besides what every key's reader finds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProvenanceProblem {
    #[error(transparent)]
    Key(#[from] Problem),
    #[error("expected an array of tool names")]
    NotToolNames,
    #[error("item {0} must be a tool name (a string)")]
    NotAToolName(usize),
    #[error("expected an array of argument names")]
    NotArgumentNames,
    #[error("item {0} must be an argument name (a non-empty string)")]
    NotAnArgumentName(usize),
}

impl KeyProblem for ProvenanceProblem {
    fn suggestion(&self) -> Option<&str> {
        match self {
            ProvenanceProblem::Key(problem) => problem.suggestion(),
            _ => None,
        }
    }
}

/// An error of the `provenance` key, naming the key path.
pub(crate) type ProvenanceError = KeyError<ProvenanceProblem>;

impl From<KeyError> for ProvenanceError {
    fn from(err: KeyError) -> ProvenanceError {
        ProvenanceProblem::Key(err.problem).at(err.key)
    }
}

/// The policy's `provenance` key, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvenanceRules {
    pub action_tools: ToolList,
    pub free_text_args: Vec<String>,
}

impl Default for ProvenanceRules {
    fn default() -> Self {
        ProvenanceRules {
            action_tools: ToolList::parse(DEFAULT_ACTION_TOOLS).expect("valid patterns"),
            free_text_args: DEFAULT_FREE_TEXT_ARGS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

/// Reads the `provenance` key: an object with `actionTools` (tool names and patterns) and
/// `freeTextArgs` (argument names), each defaulting to the lists above.
pub fn from_json(key: &str, value: &Value) -> Result<ProvenanceRules, ProvenanceError> {
    let object = keys::object(key, value, KNOWN)?;
    let mut rules = ProvenanceRules::default();
    if let Some(tools) = object.get("actionTools") {
        let what = format!("{key}.actionTools");
        let Value::Array(items) = tools else {
            return Err(ProvenanceProblem::NotToolNames.at(what));
        };
        let mut names = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let Value::String(name) = item else {
                return Err(ProvenanceProblem::NotAToolName(index).at(what));
            };
            ToolPattern::parse(name)
                .map_err(|problem| Problem::ToolItem(ItemError { index, problem }).at(&what))?;
            names.push(name.clone());
        }
        rules.action_tools =
            ToolList::parse(&names).map_err(|item| Problem::ToolItem(item).at(&what))?;
    }
    if let Some(args) = object.get("freeTextArgs") {
        let what = format!("{key}.freeTextArgs");
        let Value::Array(items) = args else {
            return Err(ProvenanceProblem::NotArgumentNames.at(what));
        };
        rules.free_text_args = items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(name) if !name.is_empty() => Ok(name.clone()),
                _ => Err(ProvenanceProblem::NotAnArgumentName(index).at(&what)),
            })
            .collect::<Result<_, _>>()?;
    }
    Ok(rules)
}
