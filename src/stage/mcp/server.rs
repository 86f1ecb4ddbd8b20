//! The server's side (the relay thread): each message from the MCP server reaches the client
//! only if it may, an answer only to a request still awaited, with its tool list filtered and
//! its tool call's outcome audited.

use std::io::{Read, Write};

use anyhow::{anyhow, Result};
use serde_json::{json, Map, Value};

use super::pending::{Answered, Awaiting, PendingRequest, Ticket};
use super::protocol::{error_response, IdKey, INTERNAL_ERROR};
use super::session::{lock, Session};
use crate::approve::elicitation;
use crate::jsonl::{self, Line, LineReader};
use crate::record::{Outcome, Status};
use crate::rules::policy::Policy;
use crate::rules::provenance::ResultRecord;
use crate::sanitize::for_terminal;
use crate::strict_json;

/// A tool result up to this size is kept in its `exec` event; a larger one is described.
const RESULT_IN_AUDIT_BYTES: usize = 16 * 1024;

/// Removes from a `tools/list` result every tool the agent may never call: denied tools, tools
/// outside its allowlist, and entries without a string name. Returns the names removed.
pub(crate) fn hide_denied_tools(result: &mut Value, policy: &Policy, agent: &str) -> Vec<String> {
    let Some(Value::Array(tools)) = result.get_mut("tools") else {
        return Vec::new();
    };
    let allowed = policy.allowed_tools(agent);
    let mut hidden = Vec::new();
    tools.retain(|tool| {
        let visible = match tool.get("name") {
            Some(Value::String(name)) => {
                let denied =
                    policy.is_denied(name) || allowed.is_some_and(|list| !list.matches(name));
                if denied {
                    hidden.push(name.clone());
                }
                !denied
            }
            _ => {
                hidden.push("(a tool without a name)".to_owned());
                false
            }
        };
        visible
    });
    hidden
}

/// What a tool call's answer from the server says happened.
fn outcome_of_answer(answer: &Map<String, Value>, ticket: &Ticket) -> Outcome {
    let approved = match &ticket.approval {
        Some(approval) => format!(" ({})", approval.reason),
        None => String::new(),
    };
    let (status, result, reason) = if let Some(error) = answer.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message");
        (
            Status::Failed,
            error.clone(),
            format!(
                "the MCP server answered {} with an error: {message}",
                ticket.tool
            ),
        )
    } else if let Some(result) = answer.get("result") {
        if result.get("isError") == Some(&Value::Bool(true)) {
            (
                Status::Failed,
                result.clone(),
                format!(
                    "{} ran on the MCP server and reported an error{approved}",
                    ticket.tool
                ),
            )
        } else {
            (
                Status::Executed,
                result.clone(),
                format!("ran {} on the MCP server{approved}", ticket.tool),
            )
        }
    } else {
        return Outcome {
            status: Status::Failed,
            result: None,
            reason: format!(
                "the MCP server's answer to {} has neither `result` nor `error`",
                ticket.tool
            ),
        };
    };
    let size = serde_json::to_vec(&result).map_or(usize::MAX, |bytes| bytes.len());
    if size <= RESULT_IN_AUDIT_BYTES {
        Outcome {
            status,
            result: Some(result),
            reason,
        }
    } else {
        Outcome {
            status,
            result: None,
            reason: format!("{reason} (the result, {size} bytes, is not kept in the audit log)"),
        }
    }
}

pub(super) fn relay_server(session: &Session, stdout: impl Read, max: usize) {
    let mut reader = LineReader::new(stdout, max);
    loop {
        let line = match reader.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(err) => {
                session.warn(&format!("cannot read the MCP server's output: {err}"));
                break;
            }
        };
        match line {
            Line::Text(bytes) if jsonl::is_blank(bytes) => {}
            Line::Text(bytes) => {
                if handle_server_line(session, bytes).is_err() {
                    break;
                }
            }
            Line::TooLong { length, .. } => session.warn(&format!(
                "dropped a message of {length} bytes from the MCP server: over the limit of {max} bytes"
            )),
        }
    }
    // The server's side has ended: nothing awaited will be answered now.
    let requests: Vec<PendingRequest> = {
        let mut pending = lock(&session.pending);
        pending.server_reading = false;
        pending.cancelled.clear();
        pending
            .requests
            .drain()
            .map(|(_, request)| request)
            .collect()
    };
    let mut failed = requests.len();
    for request in requests {
        session.fail_request(request, "the MCP server exited before answering");
    }
    failed += usize::from(super::handshake::end_discovering(session));
    lock(&session.ending).failed_requests += failed;
    if let Some(mut wake) = lock(&session.wake).take() {
        let _ = wake.write_all(b"x");
    }
}

/// A line from the server, shortened and made safe for a warning.
fn excerpt(bytes: &[u8]) -> String {
    for_terminal(&jsonl::raw_excerpt(&bytes[..bytes.len().min(200)])).into_owned()
}

/// One line from the server. An error means the session is stopping.
fn handle_server_line(session: &Session, bytes: &[u8]) -> Result<()> {
    let parsed = std::str::from_utf8(bytes)
        .map_err(|err| format!("not valid UTF-8 (bad byte at offset {})", err.valid_up_to()))
        .and_then(|text| {
            let value = strict_json::parse(text).map_err(|err| err.to_string())?;
            // Keys a case-blind client reads otherwise (`Tools` beside `tools` would show it a
            // tool list the denied tools were not taken out of): never relayed.
            match &value {
                Value::Object(object) => match super::protocol::spelt_otherwise(object, text) {
                    Some(reason) => Err(reason),
                    None => Ok(value),
                },
                _ => Ok(value),
            }
        });
    match parsed {
        Ok(Value::Array(items)) => {
            // A batch: each message goes on its own, so none escapes the checks.
            for item in items {
                let text = serde_json::to_vec(&item).expect("a JSON value serializes");
                let spelt = match &item {
                    Value::Object(object) => super::protocol::spelt_otherwise(
                        object,
                        std::str::from_utf8(&text).expect("serialized JSON is UTF-8"),
                    ),
                    _ => None,
                };
                match spelt {
                    Some(why) => drop_malformed(session, &text, &why)?,
                    None => handle_server_message(session, item, &text)?,
                }
            }
            Ok(())
        }
        Ok(value @ Value::Object(_)) => handle_server_message(session, value, bytes),
        Ok(other) => {
            session.warn(&format!(
                "dropped a message from the MCP server that is {}, not a JSON-RPC object",
                strict_json::type_name(&other)
            ));
            Ok(())
        }
        Err(why) => drop_malformed(session, bytes, &why),
    }
}

/// Drops a malformed message of the server. If it names a request sc-mcp awaits, that request is
/// answered with an error rather than left hanging; the message itself never reaches the client.
fn drop_malformed(session: &Session, bytes: &[u8], why: &str) -> Result<()> {
    let answered = {
        let key = serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|lenient| IdKey::of_reference(lenient.get("id")?));
        lock(&session.pending).take(key.as_ref())
    };
    session.warn(&format!(
        "dropped a line from the MCP server that is not valid JSON-RPC ({why}): {}",
        excerpt(bytes)
    ));
    if let Answered::Waiting(request) = answered {
        session.fail_request(
            request,
            &format!("the MCP server's answer was malformed ({why})"),
        );
    }
    if session.is_stopping() {
        return Err(anyhow!("stopping"));
    }
    Ok(())
}

fn handle_server_message(session: &Session, value: Value, bytes: &[u8]) -> Result<()> {
    relay_server_message(session, value, bytes)?;
    if session.is_stopping() {
        return Err(anyhow!("stopping"));
    }
    Ok(())
}

/// Relays one message from the server, if it may reach the client. An error means the audit log
/// could not be written.
fn relay_server_message(session: &Session, value: Value, bytes: &[u8]) -> Result<()> {
    let Value::Object(mut message) = value else {
        session.warn("dropped a message from the MCP server that is not a JSON-RPC object");
        return Ok(());
    };
    if message.contains_key("method") {
        // A client could read it either way, and an answer is relayed only once checked.
        if let Some(key) = ["result", "error"]
            .into_iter()
            .find(|key| message.contains_key(*key))
        {
            session.warn(&format!(
                "dropped a message from the MCP server that is both a request and an answer (it has `method` and `{key}`): {}",
                excerpt(bytes)
            ));
            return Ok(());
        }
        // The client's answer to a request with one of sc-mcp's ids would be taken for the
        // person's, and a cancellation naming one would withdraw sc-mcp's question.
        let names_own_question = message.get("id").is_some_and(elicitation::is_own_id)
            || (message.get("method") == Some(&json!("notifications/cancelled"))
                && message
                    .get("params")
                    .and_then(|params| params.get("requestId"))
                    .is_some_and(elicitation::is_own_id));
        if names_own_question {
            session.warn(&format!(
                "dropped a message from the MCP server that uses an id sc-mcp keeps for its own questions to the client ({}…): {}",
                elicitation::ID_PREFIX,
                excerpt(bytes)
            ));
            return Ok(());
        }
        // A request or a notification of the server's own.
        session.to_client(&with_newline(bytes));
        return Ok(());
    }
    if super::handshake::take_handshake_answer(session, &message) {
        return Ok(());
    }
    let key = message.get("id").and_then(IdKey::of_reference);
    let answered = lock(&session.pending).take(key.as_ref());
    let request = match answered {
        Answered::Waiting(request) => request,
        Answered::Cancelled(ticket) => {
            session.warn(&format!(
                "dropped the MCP server's answer to request {}, which the client cancelled",
                for_terminal(&message.get("id").unwrap_or(&Value::Null).to_string())
            ));
            // The cancelled call's event said it may have run in part: what the server answered
            // says what became of it (a server may finish a call it was asked to cancel).
            if let Some(ticket) = ticket {
                let mut outcome = outcome_of_answer(&message, &ticket);
                outcome.reason = format!(
                    "after the client cancelled it: {} (the client was not given the answer)",
                    outcome.reason
                );
                session.audit_outcome(&ticket, &outcome)?;
            }
            return Ok(());
        }
        Answered::Nothing => {
            session.warn(&format!(
                "dropped an answer from the MCP server with an id no request is waiting for: {}",
                excerpt(bytes)
            ));
            return Ok(());
        }
    };
    // JSON-RPC: exactly one of the two. With both, one client reads the result and another the
    // error; with neither, there is nothing to read.
    if message.contains_key("result") == message.contains_key("error") {
        let which = if message.contains_key("result") {
            "both `result` and `error`"
        } else {
            "neither `result` nor `error`"
        };
        session.fail_request(
            request,
            &format!("the MCP server's answer has {which}, so it was not relayed"),
        );
        return Ok(());
    }
    // The server answered `server/discover` as a legacy server, and refuses the client's
    // `initialize` as a 2026-07-28 one: no revision both speak, and nothing is made up.
    if request.awaiting.method() == "initialize" && super::revision::refused_as_modern(&message) {
        let error = message.get("error").unwrap_or(&Value::Null).to_string();
        session.fail_request(
            request,
            &super::revision::HandshakeError::NoRevision(error).to_string(),
        );
        return Ok(());
    }
    // The client reads its own id back, as it wrote it, even if the server wrote it otherwise.
    let mut rewritten = false;
    if message.get("id") != Some(&request.id.value) {
        message.insert("id".to_owned(), request.id.value.clone());
        rewritten = true;
    }
    // A 2026-07-28 client reads `resultType` (and a list's cache hints) the server did not give.
    let modern = key
        .as_ref()
        .and_then(|key| lock(&session.revisions.state).modern.remove(key));
    if let Some(result) = message.get_mut("result") {
        if request.awaiting.method() == "initialize" {
            super::handshake::keep_initialize_result(session, result);
            // Task-augmented calls are refused (their results would come past the gate in
            // `tasks/result`): the client is not told the server offers them.
            if let Some(capabilities) = result
                .get_mut("capabilities")
                .and_then(Value::as_object_mut)
            {
                rewritten |= capabilities.shift_remove("tasks").is_some();
            }
        }
        if session.revisions.server_is_modern() {
            // A 2026-07-28 server's question back (its own retry) cannot be carried yet: its
            // `requestState` would come back to sc-mcp as if sc-mcp had given it.
            if result.get("resultType") == Some(&json!("input_required")) {
                session.fail_request(
                    request,
                    "the MCP server asked for more input (input_required), which sc-mcp does not carry yet",
                );
                return Ok(());
            }
            // A legacy client reads no `resultType`.
            if modern.is_none() {
                if let Some(result) = result.as_object_mut() {
                    rewritten |= result.shift_remove("resultType").is_some();
                }
            }
        }
        if let Some(method) = &modern {
            rewritten |= super::revision::to_modern_result(result, method);
        }
    }
    // Whatever it answers, a tool list in it loses the tools the policy denies.
    let hidden = match message.get_mut("result") {
        Some(result) => hide_denied_tools(result, &session.policy, &session.agent),
        None => Vec::new(),
    };
    if !hidden.is_empty() {
        session.narrate(&format!(
            "sc-mcp: {}: hid {} (denied by the policy)",
            for_terminal(request.awaiting.method()),
            for_terminal(&hidden.join(", "))
        ));
        rewritten = true;
    }
    match &request.awaiting {
        Awaiting::ToolsList => {
            let not_a_list = message
                .get("result")
                .is_some_and(|result| !result.get("tools").is_some_and(Value::is_array));
            if not_a_list {
                session.fail_request(
                    request,
                    "the MCP server's answer to tools/list has no `tools` array, so it was not relayed",
                );
                return Ok(());
            }
        }
        Awaiting::ToolCall(ticket) => {
            let outcome = outcome_of_answer(&message, ticket);
            if let Err(err) = session.audit_outcome(ticket, &outcome) {
                // Nothing leaves that was not audited: the client learns only that it failed.
                session.to_client(&error_response(
                    &request.id.value,
                    INTERNAL_ERROR,
                    "sc-mcp: the call's outcome cannot be written to the audit log, so its result is withheld; sc-mcp is stopping",
                ));
                return Err(err);
            }
            if session.policy.provenance().is_some()
                && session.policy.has_untrusted_output(&ticket.tool)
            {
                let output = message.get("result").or_else(|| message.get("error"));
                lock(&session.taken).push(ResultRecord {
                    agent: ticket.agent.clone(),
                    tool: ticket.tool.clone(),
                    call: Some(ticket.call_id.clone()),
                    output: output.cloned().unwrap_or(Value::Null),
                });
            }
        }
        Awaiting::Other(_) => {}
    }
    if rewritten {
        let mut line = serde_json::to_vec(&message).expect("a JSON object serializes");
        line.push(b'\n');
        session.to_client(&line);
    } else {
        session.to_client(&with_newline(bytes));
    }
    Ok(())
}

fn with_newline(bytes: &[u8]) -> Vec<u8> {
    let mut line = Vec::with_capacity(bytes.len() + 1);
    line.extend_from_slice(bytes);
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Decision;

    #[test]
    fn denied_and_disallowed_tools_are_hidden() {
        let policy = Policy::from_json_str(
            r#"{"denyTools":["write_file","mcp__pay*"],"agents":{"fs":["read_file","write_file","list_directory"]}}"#,
        )
        .unwrap();
        let mut result = json!({"tools":[
            {"name":"read_file"},{"name":"write_file"},{"name":"list_directory"},
            {"name":"move_file"},{"name":"mcp__payments"},{"description":"no name"}
        ],"nextCursor":"c"});
        let hidden = hide_denied_tools(&mut result, &policy, "fs");
        let names: Vec<&str> = result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["read_file", "list_directory"]);
        assert_eq!(hidden.len(), 4, "{hidden:?}");
        assert_eq!(result["nextCursor"], "c");
        // An agent without an allowlist entry sees everything not denied.
        let mut result = json!({"tools":[{"name":"move_file"},{"name":"write_file"}]});
        hide_denied_tools(&mut result, &policy, "other");
        assert_eq!(result["tools"], json!([{"name":"move_file"}]));
    }

    #[test]
    fn the_outcome_follows_the_answer() {
        let ticket = Ticket {
            call_id: "c-1".into(),
            agent: "a".into(),
            tool: "t".into(),
            decision: Decision::Allow,
            approval: None,
            held_for: None,
            held_call: None,
            notify_failed: None,
        };
        let answer = |value: Value| value.as_object().unwrap().clone();
        let ok = outcome_of_answer(
            &answer(json!({"id":1,"result":{"content":[{"type":"text","text":"hi"}]}})),
            &ticket,
        );
        assert_eq!(ok.status, Status::Executed);
        assert_eq!(ok.result.unwrap()["content"][0]["text"], "hi");
        let tool_error =
            outcome_of_answer(&answer(json!({"id":1,"result":{"isError":true}})), &ticket);
        assert_eq!(tool_error.status, Status::Failed);
        let rpc_error = outcome_of_answer(
            &answer(json!({"id":1,"error":{"code":-1,"message":"boom"}})),
            &ticket,
        );
        assert_eq!(rpc_error.status, Status::Failed);
        assert!(rpc_error.reason.contains("boom"));
        let big = "x".repeat(RESULT_IN_AUDIT_BYTES + 1);
        let large = outcome_of_answer(
            &answer(json!({"id":1,"result":{"content":[{"type":"text","text":big}]}})),
            &ticket,
        );
        assert!(large.result.is_none());
        assert!(large.reason.contains("not kept"), "{}", large.reason);
    }
}
