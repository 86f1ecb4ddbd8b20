//! Policy key `fetch`: where a fetch tool may go. A fetch of a URL whose host is a loopback,
//! private, link-local (the cloud metadata service, 169.254.169.254) or unique-local address, or
//! a name that stands for one (`localhost`, `*.localhost`, `*.local`, `*.internal`,
//! `*.home.arpa`, and a name of one label, which the resolver's search list places on the local
//! network), is given `localAddresses` (default `deny`), unless `allowHosts` names the host (or
//! the host and port). A URL that does not parse, or whose scheme is not `http` or `https`, is
//! denied as malformed.
//!
//! ```json
//! "fetch": {
//!   "tools": {"WebFetch": "url", "mcp__fetch__fetch": "url"},
//!   "localAddresses": "deny",
//!   "allowHosts": ["localhost:3000"]
//! }
//! ```
//!
//! The host is read as browsers read it (the `url` crate, the WHATWG parser): `http://2130706433/`,
//! `http://0x7f.1/` and `http://[::ffff:127.0.0.1]/` are all 127.0.0.1. Pure: a name is judged
//! by its text; a door that can resolve names passes the addresses a name resolved to
//! ([`crate::rules::decision::CallContext::addresses`]), and each is judged too.

use std::net::IpAddr;

use serde_json::{Map, Value};
use url::{Host, Url};

use super::address::kind;
use super::keys::{self, KeyError, KeyProblem, Problem};
use super::tools::ToolPattern;
use crate::sanitize::quoted;
use crate::verdict::Decision;

/// The keys of `fetch`.
pub const KEYS: &[&str] = &["tools", "localAddresses", "allowHosts"];

/// The checked `fetch` key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRules {
    tools: Vec<(ToolPattern, String)>,
    local_addresses: Decision,
    /// Lowercase hosts, each with its port when the entry names one.
    allow_hosts: Vec<(String, Option<u16>)>,
}

/// The decision on a fetch, with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchJudgement {
    pub decision: Decision,
    pub reason: String,
}

impl FetchRules {
    /// Checks the `fetch` key (`key` is its name, for errors).
    pub fn from_json(key: &str, value: &Value) -> Result<FetchRules, KeyError> {
        let object = keys::object(key, value, KEYS)?;
        let mut rules = FetchRules {
            tools: Vec::new(),
            local_addresses: Decision::Deny,
            allow_hosts: Vec::new(),
        };
        if let Some(tools) = object.get("tools") {
            rules.tools = keys::tool_map(&format!("{key}.tools"), tools)?;
        }
        if let Some(decision) = object.get("localAddresses") {
            rules.local_addresses = keys::decision(&format!("{key}.localAddresses"), decision)?;
        }
        if let Some(hosts) = object.get("allowHosts") {
            let at = format!("{key}.allowHosts");
            for (index, entry) in keys::strings(&at, hosts)?.into_iter().enumerate() {
                let host = allowed_host(entry).ok_or_else(|| {
                    let problem = Problem::Type {
                        expected: "a host or host:port",
                        found: "a string that is neither",
                    };
                    problem.at(format!("{at}[{index}]"))
                })?;
                rules.allow_hosts.push(host);
            }
        }
        Ok(rules)
    }

    /// The key of `args` that holds the URL of `tool`, if the rules apply to it.
    pub(crate) fn arg_key(&self, tool: &str) -> Option<&str> {
        crate::rules::tools::entry_for(&self.tools, tool).map(String::as_str)
    }

    /// Decides a call of a fetch tool: `None` when the rules do not apply to `tool`, or its URL
    /// reaches a public host; the decision and its reason otherwise. `addresses`: what the
    /// URL's name resolved to, when the door resolved it.
    pub fn decide_call(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        addresses: &[IpAddr],
    ) -> Option<FetchJudgement> {
        let key = self.arg_key(tool)?;
        let malformed = |why: String| FetchJudgement {
            decision: Decision::Deny,
            reason: format!("malformed call: {why}"),
        };
        let text = match args.get(key) {
            Some(Value::String(text)) => text,
            None => {
                return Some(malformed(format!(
                    "{} has no `{key}` argument, which names what it fetches",
                    quoted(tool)
                )))
            }
            Some(other) => {
                return Some(malformed(format!(
                    "argument `{key}` of {} must be a URL (a string), found {}",
                    quoted(tool),
                    crate::strict_json::type_name(other)
                )))
            }
        };
        let url = match Url::parse(text) {
            Ok(url) => url,
            Err(err) => return Some(malformed(format!("{} is not a URL: {err}", quoted(text)))),
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Some(malformed(format!(
                "{} is a {} URL: a fetch tool reaches http and https only",
                quoted(text),
                url.scheme()
            )));
        }
        let port = url.port_or_known_default();
        let (host, local) = match url.host() {
            Some(Host::Ipv4(v4)) => (v4.to_string(), kind(IpAddr::V4(v4)).map(str::to_owned)),
            Some(Host::Ipv6(v6)) => (v6.to_string(), kind(IpAddr::V6(v6)).map(str::to_owned)),
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                let local = local_name(&name).map(str::to_owned).or_else(|| {
                    addresses.iter().find_map(|address| {
                        kind(*address)
                            .map(|kind| format!("{kind} ({address}, as the name resolves)"))
                    })
                });
                (name, local)
            }
            None => return Some(malformed(format!("{} names no host", quoted(text)))),
        };
        let local = local?;
        if self.allows(&host, port) {
            return None;
        }
        Some(FetchJudgement {
            decision: self.local_addresses,
            reason: format!(
                "fetch of {} reaches a {local} address, not the internet: fetch.localAddresses {} (fetch.allowHosts may name the host)",
                quoted(text),
                self.local_addresses
            ),
        })
    }

    /// The host name (and port) of a fetch tool's URL that a door should resolve before the
    /// decision: `None` for another tool, a URL that names an address, or a name judged local
    /// by its text already.
    pub fn name_to_resolve(&self, tool: &str, args: &Map<String, Value>) -> Option<(String, u16)> {
        let text = args.get(self.arg_key(tool)?)?.as_str()?;
        let url = Url::parse(text).ok()?;
        let port = url.port_or_known_default()?;
        match url.host()? {
            Host::Domain(name) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                local_name(&name).is_none().then_some((name, port))
            }
            Host::Ipv4(_) | Host::Ipv6(_) => None,
        }
    }

    fn allows(&self, host: &str, port: Option<u16>) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.allow_hosts.iter().any(|(allowed, allowed_port)| {
            same_host(allowed, host) && allowed_port.is_none_or(|p| Some(p) == port)
        })
    }
}

/// Two hosts are the same: the same name (case aside), or the same address however written.
fn same_host(allowed: &str, host: &str) -> bool {
    match (allowed.parse::<IpAddr>(), host.parse::<IpAddr>()) {
        (Ok(a), Ok(b)) => super::address::unmapped(a) == super::address::unmapped(b),
        _ => allowed.eq_ignore_ascii_case(host),
    }
}

/// What a name that stands for a non-public place is, by its text alone.
fn local_name(name: &str) -> Option<&'static str> {
    let under = |suffix: &str| name == suffix || name.ends_with(&format!(".{suffix}"));
    if under("localhost") || name == "localhost.localdomain" || name.starts_with("ip6-local") {
        Some("loopback name")
    } else if under("local") {
        Some("link-local (mDNS) name")
    } else if under("internal") || under("home.arpa") || under("intranet") || under("lan") {
        Some("private name")
    } else if !name.contains('.') {
        Some("single-label (local network) name")
    } else {
        None
    }
}

/// An `allowHosts` entry: `host`, `host:port`, `[v6]` or `[v6]:port`.
fn allowed_host(entry: &str) -> Option<(String, Option<u16>)> {
    let url = Url::parse(&format!("http://{entry}/")).ok()?;
    let host = match url.host()? {
        Host::Domain(name) => name.trim_end_matches('.').to_ascii_lowercase(),
        Host::Ipv4(v4) => v4.to_string(),
        Host::Ipv6(v6) => v6.to_string(),
    };
    let rest = url.path() == "/" && url.query().is_none() && url.username().is_empty();
    rest.then_some((host, url.port()))
}

#[cfg(test)]
#[path = "fetch_tests.rs"]
mod tests;
