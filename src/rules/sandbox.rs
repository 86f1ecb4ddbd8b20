//! The `sandbox` key: what a confined run ([`crate::stage::sandbox`]) may write, what it reads as empty,
//! and which hosts its proxy reaches.
//!
//! ```json
//! "sandbox": {
//!   "when": "tainted",
//!   "readOnly": [".claude", ".git/hooks", "~/.bashrc"],
//!   "hidden": ["~/.ssh", ".env"],
//!   "writable": [],
//!   "network": {"allow": ["registry.example:443", "*.mirror.example:443"]}
//! }
//! ```
//!
//! Loading is as strict as the rest of the policy: an unknown key (with the nearest suggested), a
//! wrong type, and a path that could mean more than one place are errors naming the key. A path is
//! relative to the root, `~` or `~/…` (the home folder), or absolute. It names one place: a
//! wildcard, an empty path, a `..` component, `~user` and an invisible character are refused,
//! because the kernel mounts places, not patterns, and a rule that silently covers nothing would
//! break the promise it was written for. One exception: a `hidden` path's last part may be a
//! pattern of names in one folder (`*.pem`), which the sandbox lists when it starts.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::keys;
use super::keys::{one_of, KeyError, KeyProblem, Problem};
use crate::sanitize::is_invisible;

mod network;
pub use network::{
    host_name_problem, normal_host, HostPattern, HostPort, HostPortError, NetworkRules,
};

/// The keys of the `sandbox` object.
pub const KEYS: &[&str] = &[
    "when",
    "readOnly",
    "hidden",
    "writable",
    "network",
    "approveConfined",
    "confineFileTools",
];
/// The keys of `sandbox.network`.
pub const NETWORK_KEYS: &[&str] = &["allow"];

/// When a door that decides (sc-hook) confines a call. sc-sandbox itself, a tools-file
/// `"sandbox": true` and `sc-mcp --sandbox` always confine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum When {
    /// Every call.
    Always,
    /// Calls of a tainted agent (or of any agent of a tainted crew, under `taintScope: "crew"`).
    Tainted,
    /// No call (the default): the rules alone decide.
    #[default]
    Never,
}

impl When {
    pub fn as_str(self) -> &'static str {
        match self {
            When::Always => "always",
            When::Tainted => "tainted",
            When::Never => "never",
        }
    }

    /// Whether a call of an agent that is (or is not) tainted runs confined.
    pub fn applies(self, tainted: bool) -> bool {
        match self {
            When::Always => true,
            When::Tainted => tainted,
            When::Never => false,
        }
    }
}

/// One place a `readOnly`, `hidden` or `writable` entry names, as written and as parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPath {
    written: String,
    base: Base,
    /// Normal components only (no `.`, `..` or root), possibly empty (the base itself).
    relative: PathBuf,
    /// Whether the last component is a pattern of names (`hidden` only: `*.pem`, `.env.*`).
    pattern: bool,
}

/// What a [`SandboxPath`] is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// The sandbox's root (`--root`, else the working folder).
    Root,
    /// The home folder (`--home`, else `$HOME`): `~` and `~/…`.
    Home,
    /// `/`: an absolute path.
    Absolute,
}

impl SandboxPath {
    /// Parses one entry; the error says what is wrong (the caller names the key).
    pub fn parse(text: &str) -> Result<SandboxPath, PathError> {
        Self::parse_as(text, false)
    }

    /// Parses one `hidden` entry: as [`SandboxPath::parse`], but its last component may be a
    /// pattern of names in one folder (`*`, `?`, `[…]`: `*.pem`, `config/.env.*`), which the
    /// sandbox matches against the folder's entries when it starts. Every file a pattern
    /// matches is hidden; one made while the program runs is the program's own.
    pub fn parse_hidden(text: &str) -> Result<SandboxPath, PathError> {
        Self::parse_as(text, true)
    }

    fn parse_as(text: &str, patterns: bool) -> Result<SandboxPath, PathError> {
        if text.is_empty() {
            return Err(PathError::Empty);
        }
        let shown = crate::sanitize::quoted(text).into_owned();
        if text.chars().any(is_invisible) {
            return Err(PathError::Invisible(shown));
        }
        let (folder, last) = text.rsplit_once('/').unwrap_or(("", text));
        let pattern = patterns && last.contains(['*', '?', '[', ']', '{', '}']);
        let fixed = if pattern { folder } else { text };
        if let Some(c) = fixed.chars().find(|c| "*?[]{}".contains(*c)) {
            return Err(if patterns {
                PathError::WildcardBeforeLast(shown, c)
            } else {
                PathError::Wildcard(shown, c)
            });
        }
        if pattern {
            if let Some(c) = last.chars().find(|c| "{}\\".contains(*c)) {
                return Err(PathError::NotAPattern(shown, c.to_string()));
            }
            if last.contains("**") {
                return Err(PathError::NotAPattern(shown, "**".into()));
            }
            if let Err(err) = globset::Glob::new(last) {
                return Err(PathError::NotAPattern(shown, err.kind().to_string()));
            }
        }
        let (base, rest) = if text == "~" {
            (Base::Home, "")
        } else if let Some(rest) = text.strip_prefix("~/") {
            (Base::Home, rest)
        } else if text.starts_with('~') {
            return Err(PathError::OtherHome(shown));
        } else if let Some(rest) = text.strip_prefix('/') {
            (Base::Absolute, rest)
        } else {
            (Base::Root, text)
        };
        let mut relative = PathBuf::new();
        for component in Path::new(rest).components() {
            match component {
                Component::Normal(part) => relative.push(part),
                Component::CurDir => {}
                Component::ParentDir => return Err(PathError::Climbs(shown)),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(PathError::NotUnderstood(shown))
                }
            }
        }
        if base == Base::Absolute && relative.as_os_str().is_empty() {
            return Err(PathError::WholeFileSystem(shown));
        }
        Ok(SandboxPath {
            written: text.to_owned(),
            base,
            relative,
            pattern,
        })
    }

    /// Whether the last component is a pattern of names ([`SandboxPath::parse_hidden`]).
    pub fn is_pattern(&self) -> bool {
        self.pattern
    }

    /// The entry as the policy wrote it.
    pub fn as_written(&self) -> &str {
        &self.written
    }

    pub fn base(&self) -> Base {
        self.base
    }

    /// The absolute place: joined to `root`, to `home` (`None` when no home is known), or `/`.
    /// For a pattern, its last component is the pattern as written.
    pub fn place(&self, root: &Path, home: Option<&Path>) -> Option<PathBuf> {
        let base = match self.base {
            Base::Root => root,
            Base::Home => home?,
            Base::Absolute => Path::new("/"),
        };
        Some(base.join(&self.relative))
    }
}

impl fmt::Display for SandboxPath {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.written)
    }
}

/// The parsed `sandbox` key. Without the key, the default: `when` never, no extra paths, no hosts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxRules {
    pub when: When,
    pub read_only: Vec<SandboxPath>,
    pub hidden: Vec<SandboxPath>,
    pub writable: Vec<SandboxPath>,
    pub network: NetworkRules,
    /// `approveConfined`: sc-hook answers a call the gate allows and confines with `allow`, so
    /// Claude Code runs it without its permission prompt. Off by default: the confined call is
    /// answered `ask`, and the user's own permission rules still decide.
    pub approve_confined: bool,
    /// `confineFileTools`: where the sandbox applies to a session, a file tool's write is judged
    /// as a confined call's write is (the sandbox's `readOnly` and `hidden` places, the `paths`
    /// rules, `outsideRoot`), not held by the taint rule: inside the root, the file tool can
    /// change only what a confined shell command could. Off by default.
    pub confine_file_tools: bool,
}

/// Why a sandbox path is refused (the caller names the key); the path as shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("is an empty path")]
    Empty,
    #[error("\"{0}\" holds a control or invisible character")]
    Invisible(String),
    #[error("\"{0}\" holds the wildcard `{1}`; a sandbox path names one file or folder")]
    Wildcard(String, char),
    #[error(
        "\"{0}\" holds the wildcard `{1}` before its last part; a hidden path names one folder, \
         and only its last part may be a pattern of names (`*.pem`)"
    )]
    WildcardBeforeLast(String, char),
    #[error(
        "\"{0}\": its last part is not a pattern of names in one folder (`{1}`); use `*`, `?` and `[…]`"
    )]
    NotAPattern(String, String),
    #[error("\"{0}\": only `~` and `~/…` (the home folder) are understood, not `~user`")]
    OtherHome(String),
    #[error("\"{0}\" holds `..`; name the place without climbing out of it")]
    Climbs(String),
    #[error("\"{0}\" is not a path this rule understands")]
    NotUnderstood(String),
    #[error("\"{0}\" names the whole file system")]
    WholeFileSystem(String),
}

/// What can be wrong in the `sandbox` key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SandboxProblem {
    #[error(transparent)]
    Key(#[from] Problem),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    Host(#[from] HostPortError),
}

impl KeyProblem for SandboxProblem {
    fn suggestion(&self) -> Option<&str> {
        match self {
            SandboxProblem::Key(problem) => problem.suggestion(),
            _ => None,
        }
    }
}

/// A problem of the `sandbox` key, at its key path (`sandbox.hidden[2]`).
pub type SandboxError = KeyError<SandboxProblem>;

impl From<KeyError> for SandboxError {
    fn from(err: KeyError) -> SandboxError {
        SandboxProblem::Key(err.problem).at(err.key)
    }
}

/// Reads the `sandbox` key strictly; errors name the key path (`sandbox.hidden[2]`).
pub fn from_json(key: &str, value: &Value) -> Result<SandboxRules, SandboxError> {
    let object = keys::object(key, value, KEYS)?;
    let mut rules = SandboxRules::default();
    for (name, value) in object {
        let path = format!("{key}.{name}");
        match name.as_str() {
            "when" => {
                rules.when = one_of(
                    &path,
                    value,
                    &[
                        ("always", When::Always),
                        ("tainted", When::Tainted),
                        ("never", When::Never),
                    ],
                )?
            }
            "approveConfined" => {
                rules.approve_confined = match value {
                    Value::Bool(yes) => *yes,
                    other => return Err(keys::wrong_type("true or false", other).at(path).into()),
                }
            }
            "confineFileTools" => {
                rules.confine_file_tools = match value {
                    Value::Bool(yes) => *yes,
                    other => return Err(keys::wrong_type("true or false", other).at(path).into()),
                }
            }
            "readOnly" => rules.read_only = paths(&path, value)?,
            "hidden" => rules.hidden = paths_as(&path, value, SandboxPath::parse_hidden)?,
            "writable" => rules.writable = paths(&path, value)?,
            "network" => {
                let network = keys::object(&path, value, NETWORK_KEYS)?;
                if let Some(allow) = network.get("allow") {
                    let allow_key = format!("{path}.allow");
                    let entries = keys::strings(&allow_key, allow)?
                        .into_iter()
                        .enumerate()
                        .map(|(index, text)| {
                            HostPort::parse(text).map_err(|why| {
                                SandboxProblem::from(why).at(format!("{allow_key}[{index}]"))
                            })
                        })
                        .collect::<Result<_, _>>()?;
                    rules.network = NetworkRules::new(entries);
                }
            }
            _ => unreachable!("keys::object checked the keys"),
        }
    }
    Ok(rules)
}

fn paths(key: &str, value: &Value) -> Result<Vec<SandboxPath>, SandboxError> {
    paths_as(key, value, SandboxPath::parse)
}

fn paths_as(
    key: &str,
    value: &Value,
    parse: fn(&str) -> Result<SandboxPath, PathError>,
) -> Result<Vec<SandboxPath>, SandboxError> {
    keys::strings(key, value)?
        .into_iter()
        .enumerate()
        .map(|(index, text)| {
            parse(text).map_err(|why| SandboxProblem::from(why).at(format!("{key}[{index}]")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(value: Value) -> Result<SandboxRules, String> {
        from_json("sandbox", &value).map_err(|err| err.to_string())
    }

    #[test]
    fn the_issue_example_loads() {
        let rules = load(json!({
            "when": "tainted",
            "readOnly": [".claude", ".git/hooks", ".git/config", ".github/workflows", "~/.claude", "~/.bashrc", "~/.profile"],
            "hidden": ["~/.ssh", "~/.aws", "~/.gnupg", "~/.kube", "~/.netrc", ".env"],
            "writable": [],
            "network": {"allow": []}
        }))
        .unwrap();
        assert_eq!(rules.when, When::Tainted);
        assert_eq!(rules.read_only.len(), 7);
        let root = Path::new("/work/p");
        let home = Path::new("/home/me");
        assert_eq!(
            rules.read_only[1].place(root, Some(home)).unwrap(),
            Path::new("/work/p/.git/hooks")
        );
        assert_eq!(
            rules.hidden[0].place(root, Some(home)).unwrap(),
            Path::new("/home/me/.ssh")
        );
        assert_eq!(rules.hidden[0].place(root, None), None);
        assert_eq!(load(json!({})).unwrap(), SandboxRules::default());
        assert_eq!(SandboxRules::default().when, When::Never);
        assert!(!rules.approve_confined, "off unless the policy says so");
        assert!(
            load(json!({"approveConfined": true}))
                .unwrap()
                .approve_confined
        );
    }

    #[test]
    fn when_decides_by_taint() {
        assert!(When::Always.applies(false));
        assert!(When::Tainted.applies(true));
        assert!(!When::Tainted.applies(false));
        assert!(!When::Never.applies(true));
    }

    #[test]
    fn paths_name_one_place() {
        let place = |text: &str| {
            SandboxPath::parse(text)
                .unwrap()
                .place(Path::new("/r"), Some(Path::new("/h")))
                .unwrap()
        };
        assert_eq!(place("./a//b/."), Path::new("/r/a/b"));
        assert_eq!(place("."), Path::new("/r"));
        assert_eq!(place("~"), Path::new("/h"));
        assert_eq!(place("~/.ssh"), Path::new("/h/.ssh"));
        assert_eq!(place("/etc/x"), Path::new("/etc/x"));
        for (text, expected) in [
            ("", "is an empty path"),
            ("a/*.pem", "wildcard `*`"),
            ("secret?", "wildcard `?`"),
            (".en[v]", "wildcard `[`"),
            ("{a,b}", "wildcard `{`"),
            ("../up", "holds `..`"),
            ("a/../../b", "holds `..`"),
            ("~root/.ssh", "not `~user`"),
            ("a\u{200b}b", "invisible"),
            ("/", "the whole file system"),
        ] {
            let err = SandboxPath::parse(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn the_policy_keeps_the_key_and_names_it_in_errors() {
        use crate::rules::policy::Policy;
        let policy =
            Policy::from_json_str(r#"{"sandbox": {"when": "always", "hidden": [".env"]}}"#)
                .unwrap();
        let rules = policy.sandbox().unwrap();
        assert_eq!(rules.when, When::Always);
        assert_eq!(rules.hidden[0].as_written(), ".env");
        assert!(Policy::default().sandbox().is_none());
        for (text, expected) in [
            (
                r#"{"sandbx": {}}"#,
                "unknown key `sandbx`; did you mean `sandbox`?",
            ),
            (
                r#"{"sandbox": {"hidden": ["~/.ssh/*/id"]}}"#,
                "key `sandbox.hidden[0]`: \"~/.ssh/*/id\" holds the wildcard `*` before its last part",
            ),
            (
                r#"{"sandbox": {"hidden": ["{a,b}.pem"]}}"#,
                "key `sandbox.hidden[0]`: \"{a,b}.pem\": its last part is not a pattern of names in one folder (`{`)",
            ),
            (
                r#"{"sandbox": {"hidden": ["config/**.key"]}}"#,
                "(`**`)",
            ),
            (
                r#"{"sandbox": {"hidden": ["[a.pem"]}}"#,
                "its last part is not a pattern of names",
            ),
        ] {
            let err = Policy::from_json_str(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn errors_name_the_key() {
        for (value, expected) in [
            (json!([]), "key `sandbox`: expected an object"),
            (
                json!({"approveConfined": "yes"}),
                "key `sandbox.approveConfined`: expected true or false, found a string",
            ),
            (
                json!({"readonly": []}),
                "key `sandbox`: unknown key `readonly`; did you mean `readOnly`?",
            ),
            (
                json!({"when": "sometimes"}),
                "key `sandbox.when`: expected \"always\", \"tainted\" or \"never\"",
            ),
            (json!({"when": "Tainted"}), "did you mean \"tainted\"?"),
            (
                json!({"hidden": "~/.ssh"}),
                "key `sandbox.hidden`: expected an array of strings",
            ),
            (
                json!({"hidden": ["~/.ssh", 3]}),
                "key `sandbox.hidden[1]`: expected a string",
            ),
            (
                json!({"readOnly": [".claude", "*.pem"]}),
                "key `sandbox.readOnly[1]`: \"*.pem\" holds the wildcard",
            ),
            (
                json!({"writable": [""]}),
                "key `sandbox.writable[0]`: is an empty path",
            ),
            (json!({"writable": ["../x"]}), "key `sandbox.writable[0]`"),
            (
                json!({"network": {"allows": []}}),
                "key `sandbox.network`: unknown key `allows`; did you mean `allow`?",
            ),
            (
                json!({"network": {"allow": ["x"]}}),
                "key `sandbox.network.allow[0]`: \"x\" has no port",
            ),
            (
                json!({"network": {"allow": ["a.example:443", "*..example:443"]}}),
                "key `sandbox.network.allow[1]`: \"*..example:443\" names a host with an empty label",
            ),
            (
                json!({"network": []}),
                "key `sandbox.network`: expected an object",
            ),
        ] {
            let err = load(value.clone()).unwrap_err();
            assert!(err.contains(expected), "{value}: {err}");
        }
    }
}
