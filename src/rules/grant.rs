//! Remembered approvals as the decision sees them ([`Grant`]): a person who approved a held call
//! let the same agent's later calls through without asking again, for a while. A `call` grant
//! covers the same tool with exactly the same arguments (their [`args_digest`]), and only the
//! kinds of rule that held the call it was given for; a `value` grant endorses the untrusted
//! values the hold named, for the agent. [`apply`] is the decision's part: it runs inside the one
//! decision ([`super::decision::evaluate_in`]); keeping grants is the store's
//! (`crate::store::grants`). How the decision applies them is [`super::granting`].

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// What a grant covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Covers {
    /// The same tool called with exactly these arguments ([`args_digest`]), held for no other
    /// kinds of rule than these (sorted, each once: `taint`, `amount`, `budget`, `coding`, …),
    /// while whatever tainted the session is among the taint `sources` of the moment it was
    /// given ([`taint_source`]; sorted, each once; none: only an untainted session).
    Call {
        digest: String,
        kinds: Vec<String>,
        sources: Vec<String>,
    },
    /// These untrusted values, endorsed (sorted, none twice).
    Value { values: Vec<String> },
}

impl Covers {
    /// `call` or `value`.
    pub fn scope(&self) -> &'static str {
        match self {
            Covers::Call { .. } => "call",
            Covers::Value { .. } => "value",
        }
    }
}

/// Who gave a grant: the way the approval was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GivenBy {
    Tty,
    Answers,
    Web,
    Elicitation,
}

impl GivenBy {
    pub fn as_str(self) -> &'static str {
        match self {
            GivenBy::Tty => "tty",
            GivenBy::Answers => "answers",
            GivenBy::Web => "web",
            GivenBy::Elicitation => "elicitation",
        }
    }
}

/// A remembered approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// 32 lowercase hex digits (128 random bits).
    pub id: String,
    pub crew: String,
    pub agent: String,
    /// The tool of the call that was approved. A `call` grant covers only this tool; a `value`
    /// grant endorses its values for the agent, whatever the tool.
    pub tool: String,
    pub covers: Covers,
    pub by: GivenBy,
    /// When it was given (whole seconds).
    pub at: SystemTime,
    /// When it ends (whole seconds): from then on it never matches.
    pub expires_at: SystemTime,
    /// The audit id of the approval that gave it.
    pub approval: String,
}

impl Grant {
    /// Whether it still applies at `now`.
    pub fn is_live(&self, now: SystemTime) -> bool {
        now < self.expires_at
    }

    /// Whether it covers a call of `agent` to `tool` with arguments of `digest` (`None` when
    /// the arguments could not be read) carrying the untrusted `values`: a `call` grant when the
    /// agent, the tool and the digest are the same; a `value` grant when the agent is the same
    /// and the call carries at least one value, every one of them endorsed by this grant.
    /// Liveness is not looked at here ([`Grant::is_live`]).
    pub fn covers(&self, agent: &str, tool: &str, digest: Option<&str>, values: &[&str]) -> bool {
        if self.agent != agent {
            return false;
        }
        match &self.covers {
            Covers::Call {
                digest: granted, ..
            } => self.tool == tool && digest == Some(granted),
            Covers::Value { values: endorsed } => {
                !values.is_empty()
                    && values
                        .iter()
                        .all(|value| endorsed.binary_search_by(|e| e.as_str().cmp(value)).is_ok())
            }
        }
    }

    /// The object `sc-state grants --json` prints: `id`, `crew`, `agent`, `tool`, `scope`,
    /// `digest` or `values`, `by`, `at`, `expiresAt`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut object = serde_json::Map::new();
        object.insert("id".into(), self.id.clone().into());
        object.insert("crew".into(), self.crew.clone().into());
        object.insert("agent".into(), self.agent.clone().into());
        object.insert("tool".into(), self.tool.clone().into());
        object.insert("scope".into(), self.covers.scope().into());
        match &self.covers {
            Covers::Call { digest, .. } => object.insert("digest".into(), digest.clone().into()),
            Covers::Value { values } => object.insert("values".into(), values.clone().into()),
        };
        object.insert("by".into(), self.by.as_str().into());
        object.insert("at".into(), time_text(self.at).into());
        object.insert("expiresAt".into(), time_text(self.expires_at).into());
        serde_json::Value::Object(object)
    }
}

/// What a `call` grant records of the taint of its moment, and compares with the session's
/// later: the tool that read the untrusted content, and its key argument when it has one
/// (`fetch_page url=https://…`). The same page read again after a reset is the same source;
/// another page, or mail, is another.
/// What stands for the untrusted sources past those a taint lists: no grant covers a session
/// that has it. Written so for the first read past the list; each later read counts on it
/// ([`more_sources`]), so a read since a record was shown changes it.
pub const MORE_SOURCES: &str = "(more untrusted sources than are listed)";

/// [`MORE_SOURCES`] after `reads` reads past the list (the first makes it).
pub fn more_sources(reads: u64) -> String {
    if reads <= 1 {
        return MORE_SOURCES.to_owned();
    }
    // Not `format!`: a hold of a session that read past the list writes it every time.
    let mut text = Vec::with_capacity(64);
    text.extend_from_slice(b"(more untrusted sources than are listed: ");
    crate::json_write::push_u64(&mut text, reads);
    text.extend_from_slice(b" reads of them)");
    String::from_utf8(text).expect("ASCII")
}

/// How many reads past the list a [`more_sources`] marker counts; `None` when `source`
/// is not one, as [`more_sources`] writes it (`007` or `+7` for 7 is not).
pub fn more_sources_reads(source: &str) -> Option<u64> {
    if source == MORE_SOURCES {
        return Some(1);
    }
    let digits = source
        .strip_prefix(MORE_SOURCES.strip_suffix(')')?)?
        .strip_prefix(": ")?
        .strip_suffix(" reads of them)")?;
    let reads: u64 = digits.parse().ok()?;
    (reads > 1 && more_sources(reads) == source).then_some(reads)
}

/// A session's taint as the grants read it: its first source's tool and key argument, and the
/// other sources read since ([`taint_source`] each).
#[derive(Debug, Clone, Copy)]
pub struct TaintSources<'a> {
    pub tool: &'a str,
    pub argument: Option<&'a str>,
    pub also: &'a [String],
    /// The reads past the full list ([`MORE_SOURCES`] ends `also`), which its marker says.
    pub reads_past: u64,
}

impl TaintSources<'_> {
    /// Every source, the first one first, the marker past the full list with its count.
    pub fn all(&self) -> Vec<String> {
        let mut all = Vec::with_capacity(1 + self.also.len());
        all.push(taint_source(self.tool, self.argument));
        // The marker, which only ever ends the list, is written with its count (not copied
        // and then replaced: every hold of a session past the list makes it).
        let (listed, marker) = match self.also.split_last() {
            Some((last, listed)) if last == MORE_SOURCES => (listed, true),
            _ => (self.also, false),
        };
        all.extend(listed.iter().cloned());
        if marker {
            all.push(more_sources(self.reads_past));
        }
        all
    }
}

pub fn taint_source(tool: &str, argument: Option<&str>) -> String {
    match argument {
        // Not `format!`: every hold that offers a `call` grant writes its sources.
        Some(argument) => {
            let mut source = String::with_capacity(tool.len() + 1 + argument.len());
            source.push_str(tool);
            source.push(' ');
            source.push_str(argument);
            source
        }
        None => tool.to_owned(),
    }
}

/// A time as grants show it: RFC 3339 in UTC, to the second.
pub fn time_text(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

fn lower_hex(bytes: &[u8]) -> String {
    crate::hex::encode(bytes)
}

/// The SHA-256 (lowercase hex) of a call's arguments in canonical JSON: object keys sorted (by
/// their UTF-8 bytes) at every depth, no whitespace, strings written as `serde_json` writes
/// them, and numbers exactly as they were written (so `1` and `1.0` differ: a grant covers the
/// same arguments only). `None` when the text is not strict JSON.
pub fn args_digest(args: &str) -> Option<String> {
    use sha2::{Digest, Sha256};
    crate::strict_json::validate(args).ok()?;
    let raw: &RawValue = serde_json::from_str(args).ok()?;
    let mut canonical = String::with_capacity(args.len());
    canonicalize(raw, &mut canonical)?;
    Some(lower_hex(&Sha256::digest(canonical.as_bytes())))
}

/// Writes one JSON value canonically ([`args_digest`]).
fn canonicalize(raw: &RawValue, out: &mut String) -> Option<()> {
    let text = raw.get().trim();
    match text.as_bytes().first()? {
        b'{' => {
            let map: BTreeMap<String, &RawValue> = serde_json::from_str(text).ok()?;
            out.push('{');
            for (at, (key, value)) in map.iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key).ok()?);
                out.push(':');
                canonicalize(value, out)?;
            }
            out.push('}');
        }
        b'[' => {
            let items: Vec<&RawValue> = serde_json::from_str(text).ok()?;
            out.push('[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                canonicalize(item, out)?;
            }
            out.push(']');
        }
        b'"' => {
            let string: String = serde_json::from_str(text).ok()?;
            out.push_str(&serde_json::to_string(&string).ok()?);
        }
        // A number, `true`, `false` or `null`, as written.
        _ => out.push_str(text),
    }
    Some(())
}

/// The digest a `call` grant keeps for a call ([`args_digest`] of its arguments exactly as they
/// came, with its `cwd` when it has one), or `None` when a grant may not cover it: an argument holds a number written with more
/// than 15 significant digits, which a door that reads numbers as floats (sc-hook) could not tell
/// from another (`98765432109876543210` and `98765432109876547777`).
pub fn call_digest(call: &crate::call::Call) -> Option<String> {
    use sha2::{Digest, Sha256};
    let text = call.args.text();
    if has_long_number(text) {
        return None;
    }
    let args = args_digest(text)?;
    // A relative path names another file in another folder: the call's working directory
    // (`cwd`) is part of what was approved.
    match &call.cwd {
        None => Some(args),
        Some(cwd) => Some(lower_hex(&Sha256::digest(
            format!("skeleton-crew call v1\0{args}\0{cwd}").as_bytes(),
        ))),
    }
}

/// Whether JSON text (read strictly before) holds a number, as written, of more than 15
/// significant digits.
fn has_long_number(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                // Past the string, its escapes included.
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while at < bytes.len()
                    && matches!(bytes[at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    at += 1;
                }
                let number = &text[start..at];
                let mantissa = number.split(['e', 'E']).next().unwrap_or("");
                let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
                if digits.trim_start_matches('0').trim_end_matches('0').len() > 15 {
                    return true;
                }
            }
            _ => at += 1,
        }
    }
    false
}

/// Why a grant TTL is refused (a usage error).
#[derive(Debug, thiserror::Error)]
pub enum GrantTtlError {
    #[error("not a duration such as 30m, 8h or 1d: {0}")]
    NotADuration(humantime::DurationError),
    #[error("a grant TTL is at least 1s")]
    TooShort,
}

/// Reads a `--grant-ttl` (`30m`, `8h`, `1d`): at least one second.
pub fn parse_ttl(text: &str) -> Result<Duration, GrantTtlError> {
    let ttl = humantime::parse_duration(text).map_err(GrantTtlError::NotADuration)?;
    if ttl < Duration::from_secs(1) {
        return Err(GrantTtlError::TooShort);
    }
    Ok(ttl)
}

/// `allowed by grant ID (given by BY at TIME)`.
pub fn reason(grant: &Grant) -> String {
    format!(
        "allowed by grant {} (given by {} at {})",
        grant.id,
        grant.by.as_str(),
        time_text(grant.at)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_marker_reads_as_formatted_and_back() {
        for reads in [2, 3, 9, 10, 11, 99, 100, 12_345, u64::MAX - 1, u64::MAX] {
            let marker = super::more_sources(reads);
            assert_eq!(
                marker,
                format!("(more untrusted sources than are listed: {reads} reads of them)")
            );
            assert_eq!(super::more_sources_reads(&marker), Some(reads));
        }
        for reads in [0, 1] {
            assert_eq!(super::more_sources(reads), super::MORE_SOURCES);
        }
    }

    #[test]
    fn numbers_are_counted_as_written() {
        for long in [
            r#"{"a":98765432109876543210}"#,
            r#"{"a":750.10000000000000001}"#,
            r#"{"a":[1,{"b":-1234567890123456}]}"#,
            r#"{"a":1.234567890123456e3}"#,
        ] {
            assert!(super::has_long_number(long), "{long}");
        }
        for short in [
            r#"{"a":750.10,"b":"98765432109876543210"}"#,
            r#"{"a":"\"98765432109876543210"}"#,
            r#"{"a":100000000000000000000}"#,
            r#"{"a":123456789012345}"#,
        ] {
            assert!(!super::has_long_number(short), "{short}");
        }
    }
}
