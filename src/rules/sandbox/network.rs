//! `sandbox.network.allow`: the hosts and ports the sandbox's proxy connects to, each `host:port`,
//! `*.domain:port` (every subdomain, not the domain itself) or `[v6 address]:port`. One port is
//! written one way and a name is compared without case, so that what the policy says is what is
//! matched.

use std::fmt;

/// A host an allow entry names: one name, or every subdomain of one (`*.example.org`, which
/// does not cover `example.org` itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    Exact(String),
    Subdomains(String),
}

/// Why a `network.allow` entry is not a `host:port`: the entry as shown, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("\"{shown}\" {why}; write host:port (such as registry.example:443, or *.example.org:443 for its subdomains)")]
pub struct HostPortError {
    pub shown: String,
    pub why: &'static str,
}

/// One `network.allow` entry: `host:port`, `*.domain:port` or `[v6 address]:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    pub host: HostPattern,
    pub port: u16,
}

impl HostPort {
    /// Parses `host:port`; the error says what is wrong (the caller names the key).
    pub fn parse(text: &str) -> Result<HostPort, HostPortError> {
        let shown = crate::sanitize::quoted(text).into_owned();
        let malformed = |why: &'static str| HostPortError {
            shown: shown.clone(),
            why,
        };
        if text.contains("://") {
            return Err(malformed("is a URL, not a host"));
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (address, port) = rest
                .split_once("]:")
                .ok_or_else(|| malformed("opens `[` without `]:port`"))?;
            address
                .parse::<std::net::Ipv6Addr>()
                .map_err(|_| malformed("has no IPv6 address between `[` and `]`"))?;
            (address, port)
        } else {
            let (host, port) = text
                .rsplit_once(':')
                .ok_or_else(|| malformed("has no port"))?;
            if host.contains(':') {
                return Err(malformed(
                    "holds `:` in its host; write an IPv6 address in brackets",
                ));
            }
            (host, port)
        };
        // Digits only, without a leading zero or sign, so that one port is written one way.
        let port = match port.parse::<u16>() {
            Ok(number) if number > 0 && number.to_string() == port => number,
            _ => return Err(malformed("has no port number from 1 to 65535")),
        };
        let host = normal_host(host);
        let pattern = match host.strip_prefix("*.") {
            Some(domain) => HostPattern::Subdomains(domain.to_owned()),
            None => HostPattern::Exact(host.clone()),
        };
        match &pattern {
            // A bracketed IPv6 address: already checked.
            HostPattern::Exact(name) if name.contains(':') => {}
            HostPattern::Exact(name) | HostPattern::Subdomains(name) => {
                host_name_problem(name).map_or(Ok(()), |why| Err(malformed(why)))?
            }
        }
        Ok(HostPort {
            host: pattern,
            port,
        })
    }

    /// Whether a host (as a client names it) and port are this entry's.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        if port != self.port {
            return false;
        }
        let host = normal_host(host);
        match &self.host {
            HostPattern::Exact(name) => host == *name,
            HostPattern::Subdomains(domain) => host
                .strip_suffix(domain.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.host {
            HostPattern::Exact(name) if name.contains(':') => write!(f, "[{name}]:{}", self.port),
            HostPattern::Exact(name) => write!(f, "{name}:{}", self.port),
            HostPattern::Subdomains(domain) => write!(f, "*.{domain}:{}", self.port),
        }
    }
}

/// What is wrong with `name` as a host name (`None`: nothing): labels of letters, digits and
/// `-` (not first or last), each 1 to 63 long, 253 in all, as DNS has them. An IPv4 address is
/// such a name too.
pub fn host_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("does not name a host")
    } else if name.len() > 253 {
        Some("names a host longer than 253 characters")
    } else if name.split('.').any(str::is_empty) {
        Some("names a host with an empty label (`..`, or a `.` first or last)")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    {
        Some("does not name a host (letters, digits, `-` and `.`, with a leading `*.` for subdomains)")
    } else if name.split('.').any(|label| label.len() > 63) {
        Some("names a host with a label longer than 63 characters")
    } else if name
        .split('.')
        .any(|label| label.starts_with('-') || label.ends_with('-'))
    {
        Some("names a host with a label that starts or ends with `-`")
    } else {
        None
    }
}

/// Names compare without case, without one final `.`, and without an IPv6 address's brackets.
pub fn normal_host(host: &str) -> String {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let host = host.strip_suffix('.').unwrap_or(host);
    host.to_ascii_lowercase()
}

/// `sandbox.network`: the hosts the proxy connects to. Empty: none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkRules {
    allow: Vec<HostPort>,
}

impl NetworkRules {
    pub fn new(allow: Vec<HostPort>) -> NetworkRules {
        NetworkRules { allow }
    }

    pub fn allow(&self) -> &[HostPort] {
        &self.allow
    }

    /// The entry that lets a client reach `host:port`, if one does.
    pub fn allowing(&self, host: &str, port: u16) -> Option<&HostPort> {
        self.allow.iter().find(|entry| entry.allows(host, port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports_match_exactly_or_by_subdomain() {
        let entry = HostPort::parse("Registry.Example:443").unwrap();
        assert!(entry.allows("registry.example", 443));
        assert!(entry.allows("REGISTRY.example.", 443));
        assert!(!entry.allows("registry.example", 80));
        assert!(!entry.allows("evil.registry.example", 443));
        let wild = HostPort::parse("*.mirror.example:443").unwrap();
        assert!(wild.allows("a.mirror.example", 443));
        assert!(wild.allows("a.b.mirror.example", 443));
        assert!(!wild.allows("mirror.example", 443));
        assert!(!wild.allows("evilmirror.example", 443));
        let v6 = HostPort::parse("[::1]:8080").unwrap();
        assert!(v6.allows("[::1]", 8080));
        assert_eq!(v6.to_string(), "[::1]:8080");
        assert_eq!(wild.to_string(), "*.mirror.example:443");
        let ip = HostPort::parse("127.0.0.1:5000").unwrap();
        assert!(ip.allows("127.0.0.1", 5000));
        let long_label = format!("{}.example:443", "a".repeat(64));
        let err = HostPort::parse(&long_label).unwrap_err().to_string();
        assert!(err.contains("longer than 63"), "{err}");
        assert!(HostPort::parse(&format!("{}.example:443", "a".repeat(63))).is_ok());
        let long_name = format!("{}a:443", "a.".repeat(127));
        let err = HostPort::parse(&long_name).unwrap_err().to_string();
        assert!(err.contains("longer than 253"), "{err}");
        assert!(HostPort::parse(&format!("{}a:443", "a.".repeat(126))).is_ok());
        assert!(HostPort::parse("Example.org.:443").is_ok());
        assert!(HostPort::parse("xn--bcher-kva.example:443").is_ok());
        for (text, expected) in [
            ("registry.example", "has no port"),
            ("registry.example:0", "from 1 to 65535"),
            ("registry.example:65536", "from 1 to 65535"),
            ("registry.example:+443", "from 1 to 65535"),
            ("registry.example:0443", "from 1 to 65535"),
            ("registry.example:", "from 1 to 65535"),
            (":443", "does not name a host"),
            ("*:443", "does not name a host"),
            ("a.*.example:443", "does not name a host"),
            ("a..example:443", "an empty label"),
            ("*.:443", "does not name a host"),
            ("*..x:443", "an empty label"),
            ("x..y:443", "an empty label"),
            ("*.x..:443", "an empty label"),
            (".x:443", "an empty label"),
            ("a_b.example:443", "does not name a host"),
            ("-a.example:443", "starts or ends with `-`"),
            ("a-.example:443", "starts or ends with `-`"),
            ("a b.example:443", "does not name a host"),
            ("https://registry.example:443", "is a URL"),
            ("::1:443", "in brackets"),
            ("[nope]:443", "no IPv6 address"),
            ("[::1]443", "without `]:port`"),
        ] {
            let err = HostPort::parse(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }
}
