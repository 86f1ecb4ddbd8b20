//! The audit events of one confined run, in the crew's audit log (same file, same hash chain as
//! every stage's): `start` before the program runs, one `egress` for every connection the proxy
//! is asked for (allowed or denied, written before a byte flows), and `end` with the exit status.
//!
//! ```json
//! {"ts":"…","stage":"sandbox","id":"…","event":"egress","session":"s1","method":"CONNECT","host":"registry.example","port":443,"decision":"allow","rule":"registry.example:443","address":"192.0.2.7:443"}
//! ```

use std::ffi::OsString;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::audit::{self, AuditLog, IdMinter};
use crate::json_write::JsonLine;

/// Who a run is for: recorded with each event, so the report can put it beside the calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Who {
    pub agent: Option<String>,
    pub crew: Option<String>,
    pub session: Option<String>,
}

/// One connection attempt, as the proxy decided it.
#[derive(Debug, Clone, Default)]
pub struct Egress<'a> {
    pub method: &'a str,
    pub host: Option<&'a str>,
    pub port: Option<u16>,
    /// The `network.allow` entry that allowed its name; `None`: denied.
    pub rule: Option<String>,
    /// Where it connected, when it did.
    pub address: Option<String>,
    /// Why it was refused, or why an allowed connection failed.
    pub reason: Option<String>,
    /// An entry allowed the name, but not the address it resolves to: denied.
    pub refused: bool,
}

/// Writes a run's events; without a log, writes nothing.
#[derive(Debug)]
pub struct Recorder {
    log: Option<Mutex<AuditLog>>,
    id: String,
    who: Who,
}

impl Recorder {
    /// A recorder for one run, with a fresh id (`id` overrides it: a door's call id).
    pub fn new(log: Option<AuditLog>, id: Option<String>, who: Who) -> Recorder {
        Recorder {
            log: log.map(Mutex::new),
            id: id.unwrap_or_else(|| IdMinter::new().mint()),
            who,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    fn line(&self, event: &str) -> JsonLine {
        let mut line = JsonLine::new()
            .str_field("ts", &audit::timestamp(SystemTime::now()))
            .str_field("stage", "sandbox")
            .str_field("id", &self.id)
            .str_field("event", event);
        for (key, value) in [
            ("agent", &self.who.agent),
            ("crew", &self.who.crew),
            ("session", &self.who.session),
        ] {
            if let Some(value) = value {
                line = line.str_field(key, value);
            }
        }
        line
    }

    fn append(&self, line: JsonLine) -> anyhow::Result<()> {
        let Some(log) = &self.log else {
            return Ok(());
        };
        let mut log = log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        log.append(&line.finish())
    }

    /// The run is about to start: the program, its arguments, the root and the hosts allowed.
    pub fn start(
        &self,
        program: &OsString,
        args: &[OsString],
        root: &Path,
        allow: &[String],
    ) -> anyhow::Result<()> {
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        self.append(
            self.line("start")
                .str_field("program", &program.to_string_lossy())
                .strs_field("args", &args)
                .str_field("root", &root.to_string_lossy())
                .strs_field("allow", allow),
        )
    }

    /// One connection attempt.
    pub fn egress(&self, egress: &Egress) -> anyhow::Result<()> {
        let mut line = self.line("egress").str_field("method", egress.method);
        if let Some(host) = egress.host {
            line = line.str_field("host", host);
        }
        if let Some(port) = egress.port {
            line = line.field("port", &port);
        }
        let decision = if egress.rule.is_some() && !egress.refused {
            "allow"
        } else {
            "deny"
        };
        line = line.str_field("decision", decision);
        if let Some(rule) = &egress.rule {
            line = line.str_field("rule", rule);
        }
        if let Some(address) = &egress.address {
            line = line.str_field("address", address);
        }
        if let Some(reason) = &egress.reason {
            line = line.str_field("reason", reason);
        }
        self.append(line)
    }

    /// The run ended with `status` (128+N when the program was killed by signal N).
    pub fn end(&self, status: u8, signal: Option<i32>) -> anyhow::Result<()> {
        let mut line = self.line("end").field("status", &status);
        if let Some(signal) = signal {
            line = line.field("signal", &signal);
        }
        self.append(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_chain_into_the_audit_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let who = Who {
            session: Some("s1".into()),
            ..Who::default()
        };
        let recorder = Recorder::new(Some(AuditLog::open(&path).unwrap()), None, who);
        recorder
            .start(
                &"true".into(),
                &["-x".into()],
                dir.path(),
                &["a.test:443".into()],
            )
            .unwrap();
        recorder
            .egress(&Egress {
                method: "CONNECT",
                host: Some("b.test"),
                port: Some(443),
                reason: Some("not allowed".into()),
                ..Egress::default()
            })
            .unwrap();
        recorder.end(130, Some(2)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(events.len(), 3);
        assert!(events
            .iter()
            .all(|e| e["stage"] == "sandbox" && e["id"] == recorder.id()));
        assert_eq!(events[0]["event"], "start");
        assert_eq!(events[0]["session"], "s1");
        assert_eq!(events[1]["decision"], "deny");
        assert_eq!(events[1]["port"], 443);
        assert_eq!(events[2]["status"], 130);
        assert_eq!(events[2]["signal"], 2);
        assert_eq!(events[2]["seq"], 3, "sealed into the chain");
        Recorder::new(None, None, Who::default())
            .end(0, None)
            .unwrap();
    }
}
