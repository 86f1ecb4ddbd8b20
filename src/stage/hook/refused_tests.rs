use super::*;

fn events(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn a_refusal_is_a_chained_deny_with_its_reason_and_the_input_s_start() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("audit.jsonl");
    let mut log = AuditLog::open(&path).unwrap();
    let long = format!("{{\"toolName\":\"{}\"}}", "x".repeat(5000));
    let reason = anyhow::anyhow!("a name given twice").context("the input");
    audit_refusal(
        &mut log,
        Agent::Copilot,
        Some(Event::Pre),
        Some(long.as_bytes()),
        &reason,
    )
    .unwrap();
    audit_refusal(&mut log, Agent::Gemini, None, None, &reason).unwrap();
    let events = events(&path);
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["decision"], "deny");
    assert_eq!(events[0]["stage"], "gate");
    assert_eq!(events[0]["agentKind"], "copilot");
    assert_eq!(events[0]["hookEvent"], "PreToolUse");
    assert_eq!(
        events[0]["reasons"][0],
        "sc-hook refused the hook input before the gate could decide it: the input: a name given twice"
    );
    let raw = events[0]["raw"].as_str().unwrap();
    assert!(
        raw.starts_with("{\"toolName\":\"xxx") && raw.len() < 1100,
        "{raw}"
    );
    assert_eq!(events[0]["inputLength"], long.len());
    assert_eq!(events[0]["inputSha256"].as_str().unwrap().len(), 64);
    assert_eq!(events[1]["agentKind"], "gemini");
    assert!(events[1].get("raw").is_none() && events[1].get("hookEvent").is_none());
    assert_eq!(events[1]["seq"], 2);
    let intact = crate::audit::verify::verify(
        || std::fs::File::open(&path),
        &crate::audit::chain::Chain::Sha256,
        None,
    )
    .unwrap();
    assert!(intact.is_ok());
}

/// A prompt and a tool's response are kept in the log as digests only: a refused one is too.
/// A refused `PostToolUse` is a run not recorded, never a denial (the call ran).
#[test]
fn a_refused_prompt_or_response_leaves_no_text_and_a_ran_call_is_no_denial() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("audit.jsonl");
    let mut log = AuditLog::open(&path).unwrap();
    let secret = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI";
    let prompt = format!("{{\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"{secret}\"}}");
    let post = format!("{{\"hook_event_name\":\"PostToolUse\",\"tool_response\":\"{secret}\"}}");
    let reason = anyhow::anyhow!("state store unavailable");
    for (event, input) in [
        (Some(Event::Prompt), &prompt),
        (Some(Event::Post), &post),
        (None, &prompt),
    ] {
        audit_refusal(
            &mut log,
            Agent::Claude,
            event,
            Some(input.as_bytes()),
            &reason,
        )
        .unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(secret), "{text}");
    let events = events(&path);
    assert_eq!(events[0]["decision"], "deny");
    assert_eq!(events[1]["stage"], "exec");
    assert!(events[1].get("decision").is_none(), "{}", events[1]);
    assert_eq!(events[1]["outcome"]["status"], "unrecorded");
    assert!(events[1]["outcome"]["reason"]
        .as_str()
        .unwrap()
        .contains("state store unavailable"));
    assert_eq!(events[2]["stage"], "gate");
}

/// The reason quotes the input: it is cut as `raw` is, so a refusal line stays small.
#[test]
fn a_long_reason_is_cut() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("audit.jsonl");
    let mut log = AuditLog::open(&path).unwrap();
    let reason = anyhow::anyhow!("is a {:?} event", "x".repeat(3 << 20));
    audit_refusal(&mut log, Agent::Codex, None, None, &reason).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() < 4096);
}
