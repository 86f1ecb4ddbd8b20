//! The verdict record sc-mcp makes of a call: the line the web page shows and the `gate` event
//! repeats.

use serde_json::Value;

use crate::json_write::JsonLine;
use crate::rules::state::AgentState;
use crate::verdict::{Granting, Judgement};

/// The verdict record sc-mcp makes of a well-formed call, as sc-gate writes one, with the agent's
/// state after the call: `{"id":…,"call":{…},"decision":…,"reasons":[…],"agentState":{…}}`.
/// The web page shows it and binds an answer to its SHA-256; the call's `gate` event repeats its
/// members after `id` byte for byte.
#[derive(Debug)]
pub(crate) struct Verdict {
    /// The line, without a newline.
    pub line: Vec<u8>,
    /// Where the members after `id` start.
    after_id: usize,
}

impl Verdict {
    pub fn new(
        call_id: &str,
        call: &Value,
        judgement: &Judgement,
        state: Option<&AgentState>,
    ) -> Verdict {
        let line = JsonLine::new().str_field("id", call_id);
        // Past the comma that the next member brings.
        let after_id = line.len() + 1;
        let mut line = line
            .field("call", call)
            .str_field("decision", judgement.decision.as_str())
            .strs_field("reasons", &judgement.reasons);
        match &judgement.granting {
            Granting::Nothing => {}
            Granting::Offers(grantable) => line = line.field("grantable", grantable),
            Granting::AllowedBy(grants) => line = line.strs_field("grants", grants),
        }
        if let Some(state) = state {
            line = line.field("agentState", state);
        }
        let mut line = line.finish();
        line.pop();
        Verdict { line, after_id }
    }

    /// `"call":…,"decision":…,"reasons":[…]` and `"agentState":…` when it has one.
    pub fn members(&self) -> &[u8] {
        &self.line[self.after_id..self.line.len() - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{self, Stage};
    use crate::verdict::Decision;
    use serde_json::{json, Map};

    #[test]
    fn the_verdict_line_is_what_the_gate_event_repeats() {
        let judgement = Judgement {
            granting: Default::default(),
            decision: Decision::Hold,
            reasons: vec!["amount 750 is above the hold limit of 100".into()],
        };
        let call = json!({"agent":"crew","tool":"echo","args":{"amount":750,"memo":"\u{202e}x"},"source":"agent","jsonrpcId":1});
        let verdict = Verdict::new("mcp-3", &call, &judgement, None);
        let line = std::str::from_utf8(&verdict.line).unwrap();
        assert_eq!(
            line,
            format!(
                r#"{{"id":"mcp-3","call":{call},"decision":"hold","reasons":["amount 750 is above the hold limit of 100"]}}"#
            )
        );
        assert_eq!(
            std::str::from_utf8(verdict.members()).unwrap(),
            &line[r#"{"id":"mcp-3","#.len()..line.len() - 1]
        );
        let event = audit::event(Stage::Gate, "mcp-3")
            .raw_members(verdict.members())
            .finish();
        let mut rebuilt: Map<String, Value> = serde_json::from_slice(&event).unwrap();
        rebuilt.shift_remove("ts");
        rebuilt.shift_remove("stage");
        assert_eq!(Value::Object(rebuilt).to_string(), line);
    }
}
