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
use std::path::Path;

use serde_json::{Map, Value};

use super::argrules::{self, ArgRule};
use super::commands::CommandRules;
use super::fetch::FetchRules;
use super::paths::{PathRules, Places};
use super::provenance_rules::{self, ProvenanceRules};
use super::sandbox::{self, SandboxRules};
use crate::strict_json;

pub(crate) const DEFAULT_HOLD_ABOVE_AMOUNT: f64 = 100.0;
pub(crate) const DEFAULT_DENY_TOOLS: &[&str] = &["shell_exec"];
pub(crate) const DEFAULT_SENSITIVE_TOOLS: &[&str] = &["send_payment", "send_email", "delete_file"];
/// The built-in tools whose results carry third-party text.
pub(crate) const DEFAULT_UNTRUSTED_OUTPUT_TOOLS: &[&str] = &["fetch_page", "search_web"];
/// The `agents` entry that applies to agents not named.
pub(crate) const DEFAULT_AGENT_ENTRY: &str = "*";

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
    "neverRemember",
    "grantTtl",
    "holdUnnamedWhenTainted",
    "fetch",
];

use super::keys::{one_of, wrong_type, KeyError, KeyProblem, Problem, UnknownKey};
use super::names::{unseen_characters, NameError};
use super::tools::{ItemError, ToolList, ToolPattern};
use crate::error::PolicyError;

/// What can be wrong with the policy's own keys (the keys of the other rules have theirs).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum PolicyProblem {
    #[error(transparent)]
    Key(#[from] Problem),
    #[error("expected a finite number ≥ 0, found {0}")]
    Limit(f64),
    #[error("item {index} must be a tool name (a string), found {found}")]
    NotAToolName { index: usize, found: &'static str },
    #[error("an agent name is empty")]
    EmptyAgentName,
    #[error("the agent name {0}")]
    AgentName(NameError),
    #[error("\"crew\" scopes the budget `holdAboveTotal`, which the policy does not set; set one, or drop `budgetScope`")]
    CrewBudgetUnset,
    #[error("a window spans the budget `holdAboveTotal`, which the policy does not set; set one, or drop `budgetWindow`")]
    WindowBudgetUnset,
    /// A number that a float does not hold as written, and the float it would be read as.
    #[error("the number {} is not one a float holds as written (it would be read as {read_as}); write the number a float holds, so that what is compared is what the policy says", crate::sanitize::quoted(.text))]
    Inexact { text: String, read_as: f64 },
    #[error("expected a duration such as \"30m\", \"8h\" or \"1d\" (at least 1s): {0}")]
    GrantTtl(String),
}

impl KeyProblem for PolicyProblem {
    fn suggestion(&self) -> Option<&str> {
        match self {
            PolicyProblem::Key(problem) => problem.suggestion(),
            _ => None,
        }
    }
}

/// Every reader's [`KeyError`] becomes the policy error of the key path, with its did-you-mean.
impl<P: KeyProblem> From<KeyError<P>> for PolicyError {
    fn from(err: KeyError<P>) -> PolicyError {
        let suggestion = err.problem.suggestion().map(str::to_owned);
        let message = err.to_string();
        PolicyError::at_key(err.key, suggestion, message)
    }
}

/// An unknown top-level key: its key path is itself.
impl From<UnknownKey> for PolicyError {
    fn from(err: UnknownKey) -> PolicyError {
        let suggestion = err.suggestion.map(str::to_owned);
        let message = err.to_string();
        PolicyError::at_key(err.unknown, suggestion, message)
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
    pub(crate) fn start_of(self, seconds: u64) -> u64 {
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
    /// `hold_above_amount` as a reason writes it (`{}` of the number), made once: every payment
    /// held for its amount says it.
    hold_above_amount_text: String,
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
    never_remember: ToolList,
    /// `neverRemember`'s `TOOL(PROGRAM)` entries: a shell tool's command that runs PROGRAM.
    never_remember_programs: Vec<(ToolPattern, String)>,
    grant_ttl: Option<std::time::Duration>,
    hold_unnamed_when_tainted: ToolList,
    fetch: Option<FetchRules>,
    /// The `sandbox` key's `readOnly` and `hidden` places as path rules for the file tools,
    /// which the sandbox does not confine ([`PathRules::for_sandbox`]), compiled when a call
    /// first needs them: most calls of a process (sc-hook's one) never do, and the globs cost a
    /// quarter of loading the claude-code pack.
    sandbox_paths: std::sync::OnceLock<Option<PathRules>>,
    /// The gate's own files given to [`Policy::protect`], for the sandbox's path rules.
    own_files: Vec<(std::path::PathBuf, String)>,
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
    /// Argument rules, already compiled ([`crate::rules::argrules::from_json`] or [`ArgRule::new`]).
    pub tool_args: Vec<ArgRule>,
    /// `commands`: rules over a shell tool's command ([`CommandRules::from_json`]).
    pub commands: Option<CommandRules>,
    /// `paths`: rules over a file tool's path ([`PathRules::from_json`]).
    pub paths: Option<PathRules>,
    /// Value provenance ([`crate::rules::provenance`]); `None`: taint alone decides.
    pub provenance: Option<ProvenanceRules>,
    /// `sandbox`: how sc-sandbox confines a run ([`crate::rules::sandbox`]).
    pub sandbox: Option<SandboxRules>,
    /// `neverRemember`: tools (names and prefix patterns) whose approvals are never remembered
    /// ([`crate::rules::grant`]).
    pub never_remember: Vec<String>,
    /// `grantTtl`: the longest a remembered approval lasts; `None`: as long as it was given for.
    pub grant_ttl: Option<std::time::Duration>,
    /// `holdUnnamedWhenTainted`: tools (names and prefix patterns, `mcp__*`) held for a tainted
    /// agent when no other key of the policy names them ([`Policy::holds_unnamed`]).
    pub hold_unnamed_when_tainted: Vec<String>,
    /// `fetch`: where a fetch tool may go ([`FetchRules::from_json`]).
    pub fetch: Option<FetchRules>,
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
            never_remember: Vec::new(),
            grant_ttl: None,
            hold_unnamed_when_tainted: Vec::new(),
            fetch: None,
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(PolicySettings::default()).expect("the built-in policy is valid")
    }
}

fn check_limit(key: &str, limit: f64) -> Result<f64, KeyError<PolicyProblem>> {
    if limit.is_finite() && limit >= 0.0 {
        Ok(limit)
    } else {
        Err(PolicyProblem::Limit(limit).at(key))
    }
}

impl Policy {
    /// Validates settings into a policy.
    pub fn new(settings: PolicySettings) -> Result<Policy, PolicyError> {
        let list = |key: &str, items: &[String]| {
            ToolList::parse(items).map_err(|item| Problem::ToolItem(item).at(key))
        };
        let mut agents = BTreeMap::new();
        for (agent, tools) in settings.agents {
            if agent.is_empty() {
                return Err(PolicyProblem::EmptyAgentName.at("agents").into());
            }
            unseen_characters(&agent).map_err(|why| PolicyProblem::AgentName(why).at("agents"))?;
            let tools = list(&format!("agents.{agent}"), &tools)?;
            agents.insert(agent, tools);
        }
        if settings.budget_scope == BudgetScope::Crew && settings.hold_above_total.is_none() {
            return Err(PolicyProblem::CrewBudgetUnset.at("budgetScope").into());
        }
        if settings.budget_window.is_some() && settings.hold_above_total.is_none() {
            return Err(PolicyProblem::WindowBudgetUnset.at("budgetWindow").into());
        }
        let hold_above_amount = check_limit("holdAboveAmount", settings.hold_above_amount)?;
        Ok(Policy {
            hold_above_amount,
            hold_above_amount_text: hold_above_amount.to_string(),
            deny_tools: list("denyTools", &settings.deny_tools)?,
            sensitive_tools: list("sensitiveTools", &settings.sensitive_tools)?,
            untrusted_output_tools: list("untrustedOutputTools", &settings.untrusted_output_tools)?,
            taint_scope: settings.taint_scope,
            hold_above_total: settings
                .hold_above_total
                .map(|limit| check_limit("holdAboveTotal", limit))
                .transpose()?,
            budget_scope: settings.budget_scope,
            budget_window: settings.budget_window,
            agents,
            tool_args: settings.tool_args,
            sandbox_paths: std::sync::OnceLock::new(),
            own_files: Vec::new(),
            commands: settings.commands,
            // The sandbox's secrets and home files bind every session, confined or not.
            paths: settings.paths.map(|mut paths| {
                if let Some(sandbox) = &settings.sandbox {
                    paths.add_sandbox_places(sandbox);
                }
                paths
            }),
            places: Places::default(),
            provenance: settings.provenance,
            sandbox: settings.sandbox,
            never_remember: list(
                "neverRemember",
                &settings
                    .never_remember
                    .iter()
                    .filter(|entry| split_program(entry).is_none())
                    .cloned()
                    .collect::<Vec<_>>(),
            )?,
            never_remember_programs: settings
                .never_remember
                .iter()
                .filter_map(|entry| split_program(entry))
                .map(|(tool, program)| {
                    ToolPattern::parse(tool)
                        .map(|tool| (tool, program.to_owned()))
                        .map_err(|problem| {
                            Problem::ToolItem(ItemError { index: 0, problem }).at("neverRemember")
                        })
                })
                .collect::<Result<_, _>>()?,
            grant_ttl: settings.grant_ttl,
            hold_unnamed_when_tainted: list(
                "holdUnnamedWhenTainted",
                &settings.hold_unnamed_when_tainted,
            )?,
            fetch: settings.fetch,
        })
    }

    /// Loads a policy file strictly.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let in_file = |message: String| PolicyError::of_text(message).in_file(path.to_owned());
        let bytes = std::fs::read(path).map_err(|err| in_file(format!("cannot read it: {err}")))?;
        let text = String::from_utf8(bytes).map_err(|err| {
            in_file(format!(
                "not valid UTF-8 (at byte {})",
                err.utf8_error().valid_up_to()
            ))
        })?;
        Policy::from_json_str(&text).map_err(|err| err.in_file(path.to_owned()))
    }

    /// Loads the policy file if one is given, else the built-in defaults.
    pub(crate) fn load_or_default(path: Option<&Path>) -> Result<Policy, PolicyError> {
        path.map_or_else(|| Ok(Policy::default()), Policy::load)
    }

    /// Reads a policy from JSON text with the same strictness as [`Policy::load`].
    pub fn from_json_str(text: &str) -> Result<Policy, PolicyError> {
        let error = PolicyError::of_text;
        let value = strict_json::parse(text).map_err(|err| match err.classify() {
            serde_json::error::Category::Eof if text.trim().is_empty() => {
                error("the file is empty; a policy is a JSON object such as {}".to_owned())
            }
            _ => error(format!("malformed JSON: {err}")).at(err.line(), err.column()),
        })?;
        let Value::Object(object) = value else {
            return Err(error(format!(
                "the top-level value must be an object, found {}",
                strict_json::type_name(&value)
            )));
        };
        // The pack this build ships, to the byte: the examples of its command rules were run
        // when it was built (`the_shipped_pack_s_examples_hold`), and running them again costs
        // a sixth of each start of sc-hook.
        let shipped = text == SHIPPED_PACK;
        let settings = settings_from_object(&object, !shipped)?;
        // Limits and schema bounds are compared as floats: each must be the number written (the
        // shipped pack's numbers are checked by `the_shipped_pack_s_examples_hold`).
        if let Some(number) = (!shipped)
            .then(|| crate::amount::first_inexact_number(text.trim()))
            .flatten()
        {
            let problem = PolicyProblem::Inexact {
                text: number.text,
                read_as: number.read_as,
            };
            return Err(problem.at(number.path.join(".")).into());
        }
        Policy::new(settings)
    }

    pub fn hold_above_amount(&self) -> f64 {
        self.hold_above_amount
    }

    /// [`Policy::hold_above_amount`] as `{}` writes it.
    pub fn hold_above_amount_text(&self) -> &str {
        &self.hold_above_amount_text
    }

    pub fn hold_above_total(&self) -> Option<f64> {
        self.hold_above_total
    }

    pub fn taint_scope(&self) -> TaintScope {
        self.taint_scope
    }

    /// The same policy with taint kept at `scope`: `sc-mcp --listen` makes every agent name
    /// an HTTP client's token uses share that token's taint, in a state of the token's own.
    pub fn with_taint_scope(mut self, scope: TaintScope) -> Policy {
        self.taint_scope = scope;
        self
    }

    pub fn budget_scope(&self) -> BudgetScope {
        self.budget_scope
    }

    pub(crate) fn budget_window(&self) -> Option<BudgetWindow> {
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

    /// The `fetch` key, if the policy has one.
    pub fn fetch(&self) -> Option<&FetchRules> {
        self.fetch.as_ref()
    }

    pub fn is_denied(&self, tool: &str) -> bool {
        self.deny_tools.matches(tool)
    }

    /// Whether a call of `tool` is held for a tainted agent because `holdUnnamedWhenTainted`
    /// takes it in and no other key names it: not `denyTools`, `sensitiveTools`,
    /// `untrustedOutputTools`, `neverRemember`, `toolArgs`, `agents`, nor the tools of
    /// `commands` or `paths` (`tools`, `pathArguments`). An MCP server's tool the pack was not
    /// written for is one the person has not been asked about: a tainted session does not
    /// reach it unasked.
    pub fn holds_unnamed(&self, tool: &str) -> bool {
        self.hold_unnamed_when_tainted.matches(tool)
            && !(self.deny_tools.matches(tool)
                || self.sensitive_tools.matches(tool)
                || self.untrusted_output_tools.matches(tool)
                || self.never_remember.matches(tool)
                || self.arg_rules_for(tool).next().is_some()
                || self.agents.values().any(|tools| tools.matches(tool))
                || self
                    .commands
                    .as_ref()
                    .is_some_and(|commands| commands.arg_key(tool).is_some())
                || self
                    .fetch
                    .as_ref()
                    .is_some_and(|fetch| fetch.arg_key(tool).is_some())
                || self.paths.as_ref().is_some_and(|paths| {
                    paths.arg_key(tool).is_some() || paths.path_argument_names(tool).is_some()
                }))
    }

    /// Whether a call's approvals are never remembered (`neverRemember`): its tool is listed, or
    /// it is a shell tool (`commands.tools`) with `TOOL(PROGRAM)` entries whose command runs a
    /// listed program: any word of any simple command whose file name is PROGRAM (or starts with
    /// it, for `PROGRAM*`), so `env curl …` and `grep curl x` count too (the list only ever
    /// narrows what is remembered); a program given by a path (`./x.sh`); parts known only when
    /// it runs; or a network redirection (`/dev/tcp/…`).
    pub fn never_remembers(&self, call: &crate::call::Call) -> bool {
        if self.never_remember.matches(&call.tool) {
            return true;
        }
        let listed: Vec<&str> = self
            .never_remember_programs
            .iter()
            .filter(|(tool, _)| tool.matches(&call.tool))
            .map(|(_, program)| program.as_str())
            .collect();
        if listed.is_empty() {
            return false;
        }
        let Some(command) = self
            .commands
            .as_ref()
            .and_then(|commands| commands.arg_key(&call.tool))
            .and_then(|key| call.args.get(key))
            .and_then(|value| value.as_str())
        else {
            // Not a command this policy reads: nothing can show it does not run the program.
            return true;
        };
        let analysis = super::shell::analyse(command);
        let is_listed = |name: &str| {
            listed
                .iter()
                .any(|program| match program.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => name == *program,
                })
        };
        !analysis.network.is_empty()
            || !analysis.dynamic.is_empty()
            || analysis.commands.iter().any(|simple| {
                // A program given by a path (`./x.sh`) runs whatever the file holds then.
                simple
                    .caveats
                    .iter()
                    .any(|caveat| matches!(caveat, super::shell::Caveat::ProgramByPath(_)))
                    || simple
                        .words
                        .iter()
                        .any(|word| is_listed(word.rsplit('/').next().unwrap_or(word)))
            })
    }

    /// `grantTtl`: the longest a remembered approval lasts under this policy.
    pub fn grant_ttl(&self) -> Option<std::time::Duration> {
        self.grant_ttl
    }

    pub fn is_sensitive(&self, tool: &str) -> bool {
        self.sensitive_tools.matches(tool)
    }

    pub(crate) fn has_untrusted_output(&self, tool: &str) -> bool {
        self.untrusted_output_tools.matches(tool)
    }

    /// The argument rules that apply to a tool (every entry whose name or pattern matches).
    pub(crate) fn arg_rules_for<'a>(
        &'a self,
        tool: &'a str,
    ) -> impl Iterator<Item = &'a ArgRule> + 'a {
        self.tool_args
            .iter()
            .filter(move |rule| rule.pattern.matches(tool))
    }

    /// The `provenance` key, when the policy has one.
    pub fn provenance(&self) -> Option<&ProvenanceRules> {
        self.provenance.as_ref()
    }

    /// The tools an agent may use: its own entry, else the `*` entry; `None` means unrestricted.
    pub(crate) fn allowed_tools(&self, agent: &str) -> Option<&ToolList> {
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
    pub(crate) fn protect(&mut self, path: &Path, what: &str) {
        if let Some(paths) = &mut self.paths {
            paths.protect(path, what);
        }
        self.own_files.push((path.to_owned(), what.to_owned()));
        if let Some(Some(paths)) = self.sandbox_paths.get_mut() {
            paths.protect(path, what);
        }
    }

    /// [`Policy::sandbox_paths`] when they judge some call of `tool`. A call they do not judge
    /// (a shell command's, which the sandbox itself confines) does not compile their globs: a
    /// fifth of a confined `Bash` call's instructions under the pack.
    pub(crate) fn sandbox_paths_for(&self, tool: &str) -> Option<&PathRules> {
        self.sandbox.as_ref()?;
        if !PathRules::sandbox_tools(self.paths.as_ref()).judges_tool(tool) {
            return None;
        }
        self.sandbox_paths()
    }

    /// The `sandbox` key's `readOnly` and `hidden` places (and the gate's own files) as path
    /// rules for the file tools, when the policy has a `sandbox` key.
    pub(crate) fn sandbox_paths(&self) -> Option<&PathRules> {
        self.sandbox_paths
            .get_or_init(|| {
                let sandbox = self.sandbox.as_ref()?;
                let mut rules = PathRules::for_sandbox(sandbox, self.paths.as_ref());
                for (path, what) in &self.own_files {
                    rules.protect(path, what);
                }
                Some(rules)
            })
            .as_ref()
    }
}

/// The settings of the policy's keys; the error names the key path.
/// The Claude Code pack, as `policies/claude-code.json` was when this program was built.
pub(crate) const SHIPPED_PACK: &str = include_str!("../../policies/claude-code.json");

/// The keys of a policy; `check_examples` runs the examples of the `commands` key's rules.
fn settings_from_object(
    object: &Map<String, Value>,
    check_examples: bool,
) -> Result<PolicySettings, PolicyError> {
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
            "commands" => {
                settings.commands = Some(CommandRules::from_json_examples(
                    key,
                    value,
                    check_examples,
                )?)
            }
            "paths" => settings.paths = Some(PathRules::from_json(key, value)?),
            "provenance" => settings.provenance = Some(provenance_rules::from_json(key, value)?),
            "sandbox" => settings.sandbox = Some(sandbox::from_json(key, value)?),
            "neverRemember" => settings.never_remember = never_remember(key, value)?,
            "grantTtl" => settings.grant_ttl = Some(grant_ttl(key, value)?),
            "fetch" => settings.fetch = Some(FetchRules::from_json(key, value)?),
            "holdUnnamedWhenTainted" => {
                settings.hold_unnamed_when_tainted = tool_names(key, value)?
            }
            unknown => return Err(UnknownKey::new(unknown, KEYS).into()),
        }
    }
    Ok(settings)
}

fn grant_ttl(key: &str, value: &Value) -> Result<std::time::Duration, KeyError<PolicyProblem>> {
    let Value::String(text) = value else {
        return Err(PolicyProblem::Key(wrong_type("a duration string", value)).at(key));
    };
    super::grant::parse_ttl(text).map_err(|err| PolicyProblem::GrantTtl(err.to_string()).at(key))
}

fn limit(key: &str, value: &Value) -> Result<f64, KeyError<PolicyProblem>> {
    match value.as_f64() {
        Some(limit) => check_limit(key, limit),
        None => Err(PolicyProblem::Key(wrong_type("a number", value)).at(key)),
    }
}

fn agents(
    key: &str,
    value: &Value,
) -> Result<BTreeMap<String, Vec<String>>, KeyError<PolicyProblem>> {
    let Value::Object(entries) = value else {
        let expected = "an object mapping agent names to tool lists";
        return Err(PolicyProblem::Key(wrong_type(expected, value)).at(key));
    };
    entries
        .iter()
        .map(|(agent, tools)| Ok((agent.clone(), tool_names(&format!("{key}.{agent}"), tools)?)))
        .collect()
}

/// A `neverRemember` entry `TOOL(PROGRAM)`: the tool pattern and the program.
fn split_program(entry: &str) -> Option<(&str, &str)> {
    let (tool, rest) = entry.split_once('(')?;
    let program = rest.strip_suffix(')')?;
    (!tool.is_empty() && !program.is_empty() && !program.contains(['(', ')', '/', ' ']))
        .then_some((tool, program))
}

/// `neverRemember`: tool names and patterns, and `TOOL(PROGRAM)` entries.
fn never_remember(key: &str, value: &Value) -> Result<Vec<String>, KeyError<PolicyProblem>> {
    let Value::Array(items) = value else {
        return Err(PolicyProblem::Key(wrong_type("an array of tool names", value)).at(key));
    };
    let plain: Vec<Value> = items
        .iter()
        .map(|item| match item.as_str().and_then(split_program) {
            Some((tool, _)) => Value::String(tool.to_owned()),
            // A parenthesis that does not make `TOOL(PROGRAM)` is a mistake, not a tool name.
            None if item.as_str().is_some_and(|s| s.contains(['(', ')'])) => Value::Null,
            None => item.clone(),
        })
        .collect();
    tool_names(key, &Value::Array(plain))?;
    Ok(items
        .iter()
        .filter_map(|item| item.as_str().map(str::to_owned))
        .collect())
}

fn tool_names(key: &str, value: &Value) -> Result<Vec<String>, KeyError<PolicyProblem>> {
    let Value::Array(items) = value else {
        return Err(PolicyProblem::Key(wrong_type("an array of tool names", value)).at(key));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::String(name) => {
                ToolPattern::parse(name)
                    .map(|_| name.clone())
                    .map_err(|problem| {
                        PolicyProblem::Key(Problem::ToolItem(ItemError { index, problem })).at(key)
                    })
            }
            other => Err(PolicyProblem::NotAToolName {
                index,
                found: strict_json::type_name(other),
            }
            .at(key)),
        })
        .collect()
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;

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
