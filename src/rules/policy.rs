//! The policy: which tools are refused outright, which need trusted provenance, which carry
//! third-party text, who may use what, and the amounts above which a person must approve.
//!
//! ```json
//! {"holdAboveAmount": 100, "denyTools": ["shell_exec"], "sensitiveTools": ["send_payment", "send_email", "delete_file"]}
//! ```
//!
//! Loading is strict: a mistyped safety policy never falls back to looser rules. Malformed JSON,
//! a non-object, an unknown key (with the nearest known key suggested), an unknown value of a key
//! that takes a few words (`"taintScope": "Crew"`, with the nearest suggested), a wrong type, a
//! duplicate key, a negative or non-finite limit, an empty tool name, a malformed pattern, a tool
//! or agent name with white space at an end or an invisible character (it would never match),
//! and a number a float does not hold as written (`100.0000000000000000001`: every limit and
//! schema bound is compared as a float) are all errors naming the file and the key. Omitted keys take the built-in defaults one by one. Every policy,
//! whether loaded from a file or built in code, passes through [`Policy::new`], which holds the
//! same checks.
//!
//! Tool lists hold exact names and prefix patterns ending in `*` (`mcp__github__*`), nothing else.
//! In `denyTools`, `sensitiveTools` and `untrustedOutputTools` a pattern only adds tools to the
//! list: no list has exceptions, so a pattern can only make the policy stricter.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::argrules::{self, ArgRule};
use super::commands::CommandRules;
use super::paths::{PathRules, Places};
use super::provenance::{self, ProvenanceRules};
use super::sandbox::{self, SandboxRules};
use crate::strict_json;

pub const DEFAULT_HOLD_ABOVE_AMOUNT: f64 = 100.0;
pub const DEFAULT_DENY_TOOLS: &[&str] = &["shell_exec"];
pub const DEFAULT_SENSITIVE_TOOLS: &[&str] = &["send_payment", "send_email", "delete_file"];
/// The built-in tools whose results carry third-party text.
pub const DEFAULT_UNTRUSTED_OUTPUT_TOOLS: &[&str] = &["fetch_page", "search_web"];
/// The `agents` entry that applies to agents not named.
pub const DEFAULT_AGENT_ENTRY: &str = "*";

/// The keys a policy file may hold, in the order the docs list them.
pub const KEYS: &[&str] = &[
    "holdAboveAmount",
    "denyTools",
    "sensitiveTools",
    "untrustedOutputTools",
    "taintScope",
    "holdAboveTotal",
    "budgetScope",
    "budgetWindow",
    "agents",
    "toolArgs",
    "commands",
    "paths",
    "provenance",
    "sandbox",
];

pub(crate) use super::names::one_of;
pub use super::names::ToolPattern;
use super::names::{did_you_mean, unseen_characters};

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

/// Whether taint follows one agent or the whole crew.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaintScope {
    /// An agent that read untrusted output is tainted.
    #[default]
    Agent,
    /// Any agent reading untrusted output taints every agent (they may pass content on).
    Crew,
}

/// Whose spend `holdAboveTotal` bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BudgetScope {
    /// Each agent's own total. Agents name themselves, so an agent that calls itself by several
    /// names has a budget under each.
    #[default]
    Agent,
    /// One total for every agent of the stream (or session) together.
    Crew,
}

/// The calendar window (UTC) a budget spans with `budgetWindow`; without one, the budget spans
/// the state's whole life (a stream, a session, or a shared crew's state until it is reset).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum BudgetWindow {
    /// From the top of each hour.
    Hour,
    /// From midnight UTC each day.
    Day,
    /// From Monday 00:00 UTC each week (ISO 8601 weeks).
    Week,
}

impl BudgetWindow {
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetWindow::Hour => "hour",
            BudgetWindow::Day => "day",
            BudgetWindow::Week => "week",
        }
    }

    pub fn parse(text: &str) -> Option<BudgetWindow> {
        match text {
            "hour" => Some(BudgetWindow::Hour),
            "day" => Some(BudgetWindow::Day),
            "week" => Some(BudgetWindow::Week),
            _ => None,
        }
    }

    /// The start, in seconds since the Unix epoch, of the window that holds `seconds`.
    pub fn start_of(self, seconds: u64) -> u64 {
        const HOUR: u64 = 3600;
        const DAY: u64 = 24 * HOUR;
        match self {
            BudgetWindow::Hour => seconds - seconds % HOUR,
            BudgetWindow::Day => seconds - seconds % DAY,
            BudgetWindow::Week => {
                let days = seconds / DAY;
                // 1970-01-01 was a Thursday: three days after a Monday.
                days.saturating_sub((days + 3) % 7) * DAY
            }
        }
    }
}

impl fmt::Display for BudgetWindow {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A validated policy. Build one with [`Policy::new`], [`Policy::load`] or [`Policy::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    hold_above_amount: f64,
    deny_tools: ToolList,
    sensitive_tools: ToolList,
    untrusted_output_tools: ToolList,
    taint_scope: TaintScope,
    hold_above_total: Option<f64>,
    budget_scope: BudgetScope,
    budget_window: Option<BudgetWindow>,
    agents: BTreeMap<String, ToolList>,
    tool_args: Vec<ArgRule>,
    commands: Option<CommandRules>,
    paths: Option<PathRules>,
    /// Where calls happen (`--home`, `--root`); not a key of the file.
    places: Places,
    provenance: Option<ProvenanceRules>,
    sandbox: Option<SandboxRules>,
}

/// The raw settings of a policy, before validation.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySettings {
    pub hold_above_amount: f64,
    pub deny_tools: Vec<String>,
    pub sensitive_tools: Vec<String>,
    pub untrusted_output_tools: Vec<String>,
    pub taint_scope: TaintScope,
    /// No budget when `None`.
    pub hold_above_total: Option<f64>,
    pub budget_scope: BudgetScope,
    /// The calendar window the budget spans; `None`: the state's whole life.
    pub budget_window: Option<BudgetWindow>,
    /// Agent name (or `*` for agents not named) → the tools it may use. Empty: no restriction.
    pub agents: BTreeMap<String, Vec<String>>,
    /// Argument rules, already compiled ([`crate::argrules::from_json`] or [`ArgRule::new`]).
    pub tool_args: Vec<ArgRule>,
    /// `commands`: rules over a shell tool's command ([`CommandRules::from_json`]).
    pub commands: Option<CommandRules>,
    /// `paths`: rules over a file tool's path ([`PathRules::from_json`]).
    pub paths: Option<PathRules>,
    /// Value provenance ([`crate::rules::provenance`]); `None`: taint alone decides.
    pub provenance: Option<ProvenanceRules>,
    /// `sandbox`: how sc-sandbox confines a run ([`crate::rules::sandbox`]).
    pub sandbox: Option<SandboxRules>,
}

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

impl Default for PolicySettings {
    fn default() -> Self {
        PolicySettings {
            hold_above_amount: DEFAULT_HOLD_ABOVE_AMOUNT,
            deny_tools: owned(DEFAULT_DENY_TOOLS),
            sensitive_tools: owned(DEFAULT_SENSITIVE_TOOLS),
            untrusted_output_tools: owned(DEFAULT_UNTRUSTED_OUTPUT_TOOLS),
            taint_scope: TaintScope::Agent,
            hold_above_total: None,
            budget_scope: BudgetScope::Agent,
            budget_window: None,
            agents: BTreeMap::new(),
            tool_args: Vec::new(),
            commands: None,
            paths: None,
            provenance: None,
            sandbox: None,
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(PolicySettings::default()).expect("the built-in policy is valid")
    }
}

/// Why a policy was refused. Always names the file (when there is one) and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    pub file: Option<PathBuf>,
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "policy file {}: {}", file.display(), self.message),
            None => write!(f, "policy: {}", self.message),
        }
    }
}

impl std::error::Error for PolicyError {}

fn check_limit(key: &str, limit: f64) -> Result<f64, String> {
    if limit.is_finite() && limit >= 0.0 {
        Ok(limit)
    } else {
        Err(format!(
            "key `{key}`: expected a finite number ≥ 0, found {limit}"
        ))
    }
}

impl Policy {
    /// Validates settings into a policy.
    pub fn new(settings: PolicySettings) -> Result<Policy, PolicyError> {
        let error = |message: String| PolicyError {
            file: None,
            message,
        };
        let list = |key: &str, items: &[String]| {
            ToolList::parse(items).map_err(|why| error(format!("key `{key}`: {why}")))
        };
        let mut agents = BTreeMap::new();
        for (agent, tools) in settings.agents {
            if agent.is_empty() {
                return Err(error("key `agents`: an agent name is empty".to_owned()));
            }
            unseen_characters(&agent)
                .map_err(|why| error(format!("key `agents`: the agent name {why}")))?;
            let tools = list(&format!("agents.{agent}"), &tools)?;
            agents.insert(agent, tools);
        }
        if settings.budget_scope == BudgetScope::Crew && settings.hold_above_total.is_none() {
            return Err(error(
                "key `budgetScope`: \"crew\" scopes the budget `holdAboveTotal`, which the policy does not set; set one, or drop `budgetScope`".to_owned(),
            ));
        }
        if settings.budget_window.is_some() && settings.hold_above_total.is_none() {
            return Err(error(
                "key `budgetWindow`: a window spans the budget `holdAboveTotal`, which the policy does not set; set one, or drop `budgetWindow`".to_owned(),
            ));
        }
        Ok(Policy {
            hold_above_amount: check_limit("holdAboveAmount", settings.hold_above_amount)
                .map_err(error)?,
            deny_tools: list("denyTools", &settings.deny_tools)?,
            sensitive_tools: list("sensitiveTools", &settings.sensitive_tools)?,
            untrusted_output_tools: list("untrustedOutputTools", &settings.untrusted_output_tools)?,
            taint_scope: settings.taint_scope,
            hold_above_total: settings
                .hold_above_total
                .map(|limit| check_limit("holdAboveTotal", limit))
                .transpose()
                .map_err(error)?,
            budget_scope: settings.budget_scope,
            budget_window: settings.budget_window,
            agents,
            tool_args: settings.tool_args,
            commands: settings.commands,
            paths: settings.paths,
            places: Places::default(),
            provenance: settings.provenance,
            sandbox: settings.sandbox,
        })
    }

    /// Loads a policy file strictly.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let in_file = |message: String| PolicyError {
            file: Some(path.to_owned()),
            message,
        };
        let bytes = std::fs::read(path).map_err(|err| in_file(format!("cannot read it: {err}")))?;
        let text = String::from_utf8(bytes).map_err(|err| {
            in_file(format!(
                "not valid UTF-8 (at byte {})",
                err.utf8_error().valid_up_to()
            ))
        })?;
        Policy::from_json_str(&text).map_err(|err| in_file(err.message))
    }

    /// Loads the policy file if one is given, else the built-in defaults.
    pub fn load_or_default(path: Option<&Path>) -> Result<Policy, PolicyError> {
        path.map_or_else(|| Ok(Policy::default()), Policy::load)
    }

    /// Reads a policy from JSON text with the same strictness as [`Policy::load`].
    pub fn from_json_str(text: &str) -> Result<Policy, PolicyError> {
        let error = |message: String| PolicyError {
            file: None,
            message,
        };
        let value = strict_json::parse(text).map_err(|err| match err.classify() {
            serde_json::error::Category::Eof if text.trim().is_empty() => {
                error("the file is empty; a policy is a JSON object such as {}".to_owned())
            }
            _ => error(format!("malformed JSON: {err}")),
        })?;
        let Value::Object(object) = value else {
            return Err(error(format!(
                "the top-level value must be an object, found {}",
                strict_json::type_name(&value)
            )));
        };
        let settings = settings_from_object(&object).map_err(error)?;
        // Limits and schema bounds are compared as floats: each must be the number written.
        if let Some(number) = crate::amount::first_inexact_number(text.trim()) {
            let key = number.path.join(".");
            return Err(error(format!(
                "key `{key}`: the number {} is not one a float holds as written (it would be read as {}); write the number a float holds, so that what is compared is what the policy says",
                crate::sanitize::quoted(&number.text),
                number.read_as
            )));
        }
        Policy::new(settings)
    }

    pub fn hold_above_amount(&self) -> f64 {
        self.hold_above_amount
    }

    pub fn hold_above_total(&self) -> Option<f64> {
        self.hold_above_total
    }

    pub fn taint_scope(&self) -> TaintScope {
        self.taint_scope
    }

    pub fn budget_scope(&self) -> BudgetScope {
        self.budget_scope
    }

    pub fn budget_window(&self) -> Option<BudgetWindow> {
        self.budget_window
    }

    pub fn deny_tools(&self) -> &ToolList {
        &self.deny_tools
    }

    pub fn sensitive_tools(&self) -> &ToolList {
        &self.sensitive_tools
    }

    pub fn untrusted_output_tools(&self) -> &ToolList {
        &self.untrusted_output_tools
    }

    pub fn is_denied(&self, tool: &str) -> bool {
        self.deny_tools.matches(tool)
    }

    pub fn is_sensitive(&self, tool: &str) -> bool {
        self.sensitive_tools.matches(tool)
    }

    pub fn has_untrusted_output(&self, tool: &str) -> bool {
        self.untrusted_output_tools.matches(tool)
    }

    /// The argument rules that apply to a tool (every entry whose name or pattern matches).
    pub fn arg_rules_for<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a ArgRule> + 'a {
        self.tool_args
            .iter()
            .filter(move |rule| rule.pattern.matches(tool))
    }

    /// The `provenance` key, when the policy has one.
    pub fn provenance(&self) -> Option<&ProvenanceRules> {
        self.provenance.as_ref()
    }

    /// The tools an agent may use: its own entry, else the `*` entry; `None` means unrestricted.
    pub fn allowed_tools(&self, agent: &str) -> Option<&ToolList> {
        self.agents
            .get(agent)
            .or_else(|| self.agents.get(DEFAULT_AGENT_ENTRY))
    }

    /// The `sandbox` key, if the policy has one.
    pub fn sandbox(&self) -> Option<&SandboxRules> {
        self.sandbox.as_ref()
    }

    /// The `commands` key, if the policy has one.
    pub fn commands(&self) -> Option<&CommandRules> {
        self.commands.as_ref()
    }

    /// The `paths` key, if the policy has one.
    pub fn paths(&self) -> Option<&PathRules> {
        self.paths.as_ref()
    }

    /// Where calls happen: the home directory and the root ([`Policy::with_places`]).
    pub fn places(&self) -> &Places {
        &self.places
    }

    /// The policy with the home directory (`--home`, else `$HOME`) and the root (`--root`)
    /// the `paths` rules resolve against; the decision itself reads no environment.
    pub fn with_places(mut self, places: Places) -> Policy {
        self.places = places;
        self
    }

    /// Denies writes to one of the gate's own files (and anything under it) through the
    /// `paths` rules, whatever they say; nothing when the policy has no `paths` key.
    pub fn protect(&mut self, path: &Path, what: &str) {
        if let Some(paths) = &mut self.paths {
            paths.protect(path, what);
        }
    }
}

fn settings_from_object(object: &Map<String, Value>) -> Result<PolicySettings, String> {
    let mut settings = PolicySettings::default();
    for (key, value) in object {
        match key.as_str() {
            "holdAboveAmount" => settings.hold_above_amount = limit(key, value)?,
            "denyTools" => settings.deny_tools = tool_names(key, value)?,
            "sensitiveTools" => settings.sensitive_tools = tool_names(key, value)?,
            "untrustedOutputTools" => settings.untrusted_output_tools = tool_names(key, value)?,
            "taintScope" => {
                settings.taint_scope = one_of(
                    key,
                    value,
                    &[("agent", TaintScope::Agent), ("crew", TaintScope::Crew)],
                )?
            }
            "holdAboveTotal" => settings.hold_above_total = Some(limit(key, value)?),
            "budgetScope" => {
                settings.budget_scope = one_of(
                    key,
                    value,
                    &[("agent", BudgetScope::Agent), ("crew", BudgetScope::Crew)],
                )?
            }
            "budgetWindow" => {
                settings.budget_window = Some(one_of(
                    key,
                    value,
                    &[
                        ("hour", BudgetWindow::Hour),
                        ("day", BudgetWindow::Day),
                        ("week", BudgetWindow::Week),
                    ],
                )?)
            }
            "agents" => settings.agents = agents(key, value)?,
            "toolArgs" => settings.tool_args = argrules::from_json(key, value)?,
            "commands" => settings.commands = Some(CommandRules::from_json(key, value)?),
            "paths" => settings.paths = Some(PathRules::from_json(key, value)?),
            "provenance" => settings.provenance = Some(provenance::from_json(key, value)?),
            "sandbox" => settings.sandbox = Some(sandbox::from_json(key, value)?),
            unknown => return Err(unknown_key_message(unknown)),
        }
    }
    Ok(settings)
}

fn limit(key: &str, value: &Value) -> Result<f64, String> {
    match value.as_f64() {
        Some(limit) => check_limit(key, limit),
        None => Err(format!(
            "key `{key}`: expected a number, found {}",
            strict_json::type_name(value)
        )),
    }
}

fn agents(key: &str, value: &Value) -> Result<BTreeMap<String, Vec<String>>, String> {
    let Value::Object(entries) = value else {
        return Err(format!(
            "key `{key}`: expected an object mapping agent names to tool lists, found {}",
            strict_json::type_name(value)
        ));
    };
    entries
        .iter()
        .map(|(agent, tools)| Ok((agent.clone(), tool_names(&format!("{key}.{agent}"), tools)?)))
        .collect()
}

fn tool_names(key: &str, value: &Value) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err(format!(
            "key `{key}`: expected an array of tool names, found {}",
            strict_json::type_name(value)
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::String(name) => ToolPattern::parse(name)
                .map(|_| name.clone())
                .map_err(|why| format!("key `{key}`: item {index} {why}")),
            other => Err(format!(
                "key `{key}`: item {index} must be a tool name (a string), found {}",
                strict_json::type_name(other)
            )),
        })
        .collect()
}

fn unknown_key_message(unknown: &str) -> String {
    match did_you_mean(unknown, KEYS) {
        Some(known) => format!("unknown key `{unknown}`; did you mean `{known}`?"),
        None => format!(
            "unknown key `{unknown}`; the known keys are {}",
            KEYS.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_err(text: &str) -> String {
        Policy::from_json_str(text).unwrap_err().to_string()
    }

    #[test]
    fn omitted_keys_fall_back_one_by_one() {
        let policy = Policy::from_json_str(r#"{"holdAboveAmount": 5}"#).unwrap();
        assert_eq!(policy.hold_above_amount(), 5.0);
        assert_eq!(policy.deny_tools(), Policy::default().deny_tools());
        assert_eq!(
            policy.sensitive_tools(),
            Policy::default().sensitive_tools()
        );

        let policy = Policy::from_json_str(r#"{"denyTools": []}"#).unwrap();
        assert_eq!(policy.hold_above_amount(), DEFAULT_HOLD_ABOVE_AMOUNT);
        assert!(policy.deny_tools().patterns().is_empty());
        assert_eq!(
            policy.sensitive_tools(),
            Policy::default().sensitive_tools()
        );

        assert_eq!(Policy::from_json_str("{}").unwrap(), Policy::default());
        assert_eq!(Policy::default().hold_above_total(), None);
        assert!(Policy::default().allowed_tools("anyone").is_none());
    }

    #[test]
    fn strict_failures_name_the_key() {
        let cases = [
            ("{", "malformed JSON"),
            ("{\n  \"holdAboveAmount\": 1,,\n}", "line 2 column"),
            ("", "empty"),
            ("[]", "top-level value must be an object, found an array"),
            (
                r#"{"holdAboveAmout": 1}"#,
                "unknown key `holdAboveAmout`; did you mean `holdAboveAmount`?",
            ),
            (r#"{"denytools": []}"#, "did you mean `denyTools`?"),
            (r#"{"colour": "red"}"#, "the known keys are"),
            (
                r#"{"holdAboveAmount": "100"}"#,
                "key `holdAboveAmount`: expected a number, found a string",
            ),
            (
                r#"{"holdAboveAmount": -1}"#,
                "key `holdAboveAmount`: expected a finite number ≥ 0",
            ),
            (r#"{"holdAboveAmount": 1e999}"#, "malformed JSON"),
            (
                r#"{"denyTools": "shell_exec"}"#,
                "key `denyTools`: expected an array",
            ),
            (
                r#"{"denyTools": [""]}"#,
                "key `denyTools`: item 0 is an empty tool name",
            ),
            (
                r#"{"sensitiveTools": ["a", 3]}"#,
                "key `sensitiveTools`: item 1 must be a tool name",
            ),
            (
                r#"{"denyTools": [], "denyTools": ["x"]}"#,
                "duplicate key `denyTools`",
            ),
            (
                r#"{"holdAboveTotal": -5}"#,
                "key `holdAboveTotal`: expected a finite number ≥ 0",
            ),
            (r#"{"holdAboveTotl": 5}"#, "did you mean `holdAboveTotal`?"),
            (
                r#"{"taintScope": "team"}"#,
                "key `taintScope`: expected \"agent\" or \"crew\", found \"team\"",
            ),
            (
                r#"{"taintScope": "Crew"}"#,
                "found \"Crew\"; did you mean \"crew\"?",
            ),
            (
                r#"{"budgetScope": "team"}"#,
                "key `budgetScope`: expected \"agent\" or \"crew\", found \"team\"",
            ),
            (
                r#"{"budgetScope": "agents"}"#,
                "did you mean \"agent\"?",
            ),
            (
                r#"{"budgetScope": true}"#,
                "key `budgetScope`: expected \"agent\" or \"crew\", found true",
            ),
            (r#"{"budgetScop": "crew"}"#, "did you mean `budgetScope`?"),
            (
                r#"{"denyTools": ["shell_exec "]}"#,
                "key `denyTools`: item 0 \"shell_exec \" has white space at its start or end",
            ),
            (
                r#"{"sensitiveTools": ["send\u200bpayment"]}"#,
                "key `sensitiveTools`: item 0 \"send\\u{200b}payment\" holds a control or invisible character",
            ),
            (
                r#"{"untrustedOutputTools": ["fetch_\u0000*"]}"#,
                "holds a control or invisible character",
            ),
            (
                r#"{"agents": {" scout": ["search_web"]}}"#,
                "key `agents`: the agent name \" scout\" has white space",
            ),
            (
                r#"{"agents": {"scout": ["search_web\t"]}}"#,
                "key `agents.scout`: item 0",
            ),
            (
                r#"{"toolArgs": {"send_payment\u202e": {"schema": {}}}}"#,
                "the tool name \"send_payment\\u{202e}\" holds a control or invisible character",
            ),
            (
                r#"{"holdAboveAmount": 100.0000000000000000001}"#,
                "key `holdAboveAmount`: the number 100.0000000000000000001 is not one a float holds as written (it would be read as 100)",
            ),
            (
                r#"{"holdAboveTotal": 9007199254740993}"#,
                "key `holdAboveTotal`: the number 9007199254740993",
            ),
            (
                r#"{"toolArgs": {"t": {"schema": {"properties": {"n": {"maximum": 100.0000000000000000001}}}}}}"#,
                "key `toolArgs.t.schema.properties.n.maximum`: the number 100.0000000000000000001",
            ),
            (
                r#"{"toolArgs": {"t": {"schema": {"enum": [1, 2, 0.30000000000000000001]}}}}"#,
                "key `toolArgs.t.schema.enum.2`",
            ),
            (
                r#"{"untrustedOutputTools": ["fetch_*_page"]}"#,
                "key `untrustedOutputTools`: item 0 \"fetch_*_page\" has `*` in the middle",
            ),
            (
                r#"{"sensitiveTools": ["*"]}"#,
                "key `sensitiveTools`: item 0 `*` alone is a pattern with an empty prefix",
            ),
            (
                r#"{"agents": ["scout"]}"#,
                "key `agents`: expected an object",
            ),
            (
                r#"{"agents": {"scout": "search_web"}}"#,
                "key `agents.scout`: expected an array",
            ),
            (
                r#"{"agents": {"scout": ["**"]}}"#,
                "key `agents.scout`: item 0",
            ),
        ];
        for (text, expected) in cases {
            let message = load_err(text);
            assert!(message.contains(expected), "{text:?}: {message}");
        }
    }

    #[test]
    fn the_budget_is_per_agent_unless_the_policy_says_crew() {
        assert_eq!(Policy::default().budget_scope(), BudgetScope::Agent);
        let crew =
            Policy::from_json_str(r#"{"budgetScope": "crew", "holdAboveTotal": 300}"#).unwrap();
        assert_eq!(crew.budget_scope(), BudgetScope::Crew);
        // A scope for a budget there is not: its author expected a bound.
        let err = load_err(r#"{"budgetScope": "crew"}"#);
        assert!(
            err.contains("key `budgetScope`: \"crew\" scopes the budget `holdAboveTotal`, which the policy does not set"),
            "{err}"
        );
        let agent = Policy::from_json_str(r#"{"budgetScope": "agent"}"#).unwrap();
        assert_eq!(agent, Policy::default());
    }

    #[test]
    fn a_budget_window_is_an_hour_a_day_or_a_week() {
        assert_eq!(Policy::default().budget_window(), None);
        let daily =
            Policy::from_json_str(r#"{"holdAboveTotal": 300, "budgetWindow": "day"}"#).unwrap();
        assert_eq!(daily.budget_window(), Some(BudgetWindow::Day));
        for (text, expected) in [
            (
                r#"{"budgetWindow": "day"}"#,
                "key `budgetWindow`: a window spans the budget `holdAboveTotal`, which the policy does not set",
            ),
            (
                r#"{"holdAboveTotal": 1, "budgetWindow": "Day"}"#,
                "did you mean \"day\"?",
            ),
            (
                r#"{"holdAboveTotal": 1, "budgetWindow": "month"}"#,
                "key `budgetWindow`: expected \"hour\", \"day\" or \"week\", found \"month\"",
            ),
            (r#"{"holdAboveTotal": 1, "budgetWindow": 24}"#, "key `budgetWindow`"),
            (r#"{"budgetWindo": "day"}"#, "did you mean `budgetWindow`?"),
        ] {
            let message = load_err(text);
            assert!(message.contains(expected), "{text}: {message}");
        }
    }

    #[test]
    fn windows_start_on_utc_calendar_boundaries() {
        // 2026-12-02T13:45:10Z, a Wednesday.
        let t = 1_796_219_110;
        let hour = BudgetWindow::Hour.start_of(t);
        let day = BudgetWindow::Day.start_of(t);
        let week = BudgetWindow::Week.start_of(t);
        let show = |s: u64| {
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_secs(s),
            )
            .to_string()
        };
        assert_eq!(show(t), "2026-12-02T13:45:10Z");
        assert_eq!(show(hour), "2026-12-02T13:00:00Z");
        assert_eq!(show(day), "2026-12-02T00:00:00Z");
        assert_eq!(show(week), "2026-11-30T00:00:00Z", "the Monday before");
        // A boundary belongs to the window it starts.
        assert_eq!(BudgetWindow::Week.start_of(week), week);
        assert_eq!(BudgetWindow::Week.start_of(week - 1), week - 7 * 86_400);
        assert_eq!(BudgetWindow::Day.start_of(day - 1), day - 86_400);
        assert_eq!(
            BudgetWindow::Week.start_of(0),
            0,
            "before the first Monday of 1970"
        );
    }

    #[test]
    fn numbers_a_float_holds_as_written_load() {
        let policy = Policy::from_json_str(
            r#"{"holdAboveAmount": 1e2, "holdAboveTotal": 99.99, "toolArgs": {"t": {"schema": {
                "properties": {"n": {"maximum": 100.0, "multipleOf": 0.01, "enum": [0.1, -0, 5e-324]}}}}}}"#,
        )
        .unwrap();
        assert_eq!(policy.hold_above_amount(), 100.0);
        assert_eq!(policy.hold_above_total(), Some(99.99));
    }

    #[test]
    fn building_in_code_has_the_same_checks() {
        let mut settings = PolicySettings {
            hold_above_amount: f64::NAN,
            ..PolicySettings::default()
        };
        assert!(Policy::new(settings.clone()).is_err());
        settings.hold_above_amount = -0.5;
        assert!(Policy::new(settings.clone()).is_err());
        settings.hold_above_amount = f64::INFINITY;
        assert!(Policy::new(settings.clone()).is_err());
        settings.hold_above_amount = 10.0;
        settings.hold_above_total = Some(f64::NAN);
        assert!(Policy::new(settings.clone()).is_err());
        settings.hold_above_total = None;
        settings.deny_tools.push("a*b".into());
        assert!(Policy::new(settings.clone()).is_err());
        settings.deny_tools.pop();
        settings.sensitive_tools.push(String::new());
        assert!(Policy::new(settings).is_err());
    }

    #[test]
    fn the_example_policy_loads_and_shows_every_key() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policy.example.json");
        Policy::load(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        // The coding agents' keys are shown by their own pack, policies/claude-code.json.
        for key in KEYS.iter().filter(|k| !["commands", "paths"].contains(k)) {
            assert!(
                text.contains(&format!("\"{key}\"")),
                "policy.example.json lacks {key}"
            );
        }
    }

    #[test]
    fn the_policy_packs_load() {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
        let mut loaded = 0;
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                Policy::load(&path).unwrap_or_else(|e| panic!("{e}"));
                loaded += 1;
            }
        }
        assert!(loaded >= 2);
    }

    #[test]
    fn tool_names_compare_exactly() {
        let policy = Policy::default();
        assert!(policy.is_sensitive("send_payment"));
        assert!(!policy.is_sensitive("Send_Payment"));
        assert!(!policy.is_sensitive("send_payment "));
    }

    #[test]
    fn prefix_patterns_cover_a_tool_family() {
        let policy = Policy::from_json_str(r#"{"sensitiveTools": ["mcp__github__*"]}"#).unwrap();
        assert!(policy.is_sensitive("mcp__github__create_issue"));
        assert!(policy.is_sensitive("mcp__github__"));
        assert!(!policy.is_sensitive("mcp__gitlab__create_issue"));
        assert!(!policy.is_sensitive("MCP__github__create_issue"));
    }

    #[test]
    fn agents_map_to_their_tools_with_a_default_entry() {
        let policy = Policy::from_json_str(
            r#"{"agents": {"scout": ["search_web", "fetch_*"], "*": ["search_web"]}}"#,
        )
        .unwrap();
        assert!(policy.allowed_tools("scout").unwrap().matches("fetch_page"));
        assert!(!policy.allowed_tools("scout").unwrap().matches("send_email"));
        assert!(!policy
            .allowed_tools("stranger")
            .unwrap()
            .matches("fetch_page"));
        let open = Policy::from_json_str(r#"{"agents": {"scout": ["search_web"]}}"#).unwrap();
        assert!(open.allowed_tools("stranger").is_none());
    }
}

#[cfg(test)]
mod coding_agent_key_tests {
    use super::*;

    #[test]
    fn commands_and_paths_load_and_fail_as_every_key() {
        let policy = Policy::from_json_str(
            r#"{"commands": {"tools": {"Bash": "command"}, "rules": [{"prefix": ["ls"], "decision": "allow", "match": ["ls -la"]}]},
                "paths": {"tools": {"Write": "file_path"}, "rules": [{"glob": ".env", "read": "hold"}]}}"#,
        )
        .unwrap();
        assert_eq!(policy.commands().unwrap().arg_key("Bash"), Some("command"));
        assert_eq!(policy.paths().unwrap().arg_key("Write"), Some("file_path"));
        assert!(Policy::default().commands().is_none());
        for (text, expected) in [
            (r#"{"comands": {}}"#, "unknown key `comands`; did you mean `commands`?"),
            (r#"{"path": {}}"#, "did you mean `paths`?"),
            (r#"{"commands": []}"#, "key `commands`: expected an object"),
            (
                r#"{"commands": {"rules": [{"prefix": ["git", "status"], "decision": "allow", "match": ["git -c a=b status"]}]}}"#,
                "key `commands.rules[0].match[0]`: the example \"git -c a=b status\" does not match",
            ),
            (
                r#"{"commands": {"rules": [{"prefix": ["git"], "decision": "allow", "notMatch": ["git push"]}]}}"#,
                "key `commands.rules[0].notMatch[0]`: the example \"git push\" matches",
            ),
            (r#"{"commands": {"rules": [{"prefix": [], "decision": "allow"}]}}"#, "is empty"),
            (
                r#"{"commands": {"rules": [{"prefix": ["ls"], "decision": "ok"}]}}"#,
                "key `commands.rules[0].decision`: expected",
            ),
            (
                r#"{"paths": {"rules": [{"glob": ["a/[b"], "write": "deny"}]}}"#,
                "key `paths.rules[0].glob[0]`: the glob \"a/[b\" does not compile",
            ),
            (r#"{"paths": {"writetools": []}}"#, "did you mean `writeTools`?"),
        ] {
            let message = Policy::from_json_str(text).unwrap_err().to_string();
            assert!(message.contains(expected), "{text}: {message}");
        }
    }
}
