//! Asking the person through their MCP client: `elicitation/create` (sc-mcp).
//!
//! When the client's `initialize` declared the `elicitation` capability for forms, sc-mcp puts a
//! hold to the person through the client, which shows it wherever the person is (a desktop
//! client's dialog). The request's `message` is the prompt every surface shows
//! ([`render_prompt`]: agent, tool, exact arguments, source, instruction, reasons, agent-written
//! text escaped), and its form asks one boolean and how far a yes reaches, [`requested_schema`]:
//! `approve`, and `scope`, one of the scopes the hold offers (`once`, the default, and `call` or
//! `value` where a grant may be given). Only `"action": "accept"` with `content.approve` exactly
//! `true` approves; every other answer declines, with a reason that says which
//! ([`approval_for_answer`]). A yes without a `scope` is `once`; one whose `scope` is not among
//! those offered declines (it reaches further than the person was offered, or is not a scope).
//!
//! This is not a [`Human`](super::Human): a `Human` answers while its caller waits, but the
//! answer to an elicitation comes back on the client's input, which sc-mcp must go on reading
//! and relaying while the person decides (the client may well send other requests meanwhile). So
//! sc-mcp sends the [`request`], keeps the call, and settles it when the answer comes, or as
//! [`declined`] when the timeout, a cancellation or the end of the session comes first.
//!
//! sc-mcp's own request ids are strings that start with [`ID_PREFIX`]; a client's answer to one
//! is sc-mcp's to read and never reaches the server.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::render_prompt;
use crate::call::Call;
use crate::json_write::JsonLine;
use crate::record::{AnsweredBy, Approval, Scope};
use crate::sanitize::quoted;
use crate::strict_json::type_name;

/// What every id of sc-mcp's own requests to the client starts with: `sc-mcp-elicit-1-R`,
/// `-2-R`, … where R is 16 random bytes in hex, so that nobody can answer a question whose id it
/// was not shown.
pub(crate) const ID_PREFIX: &str = "sc-mcp-elicit-";

/// The form's one question.
pub(crate) const QUESTION: &str = "Run this call?";

/// Whether a JSON-RPC id is one sc-mcp gives its own requests to the client.
pub(crate) fn is_own_id(id: &Value) -> bool {
    matches!(id, Value::String(text) if text.starts_with(ID_PREFIX))
}

/// Mints sc-mcp's request ids, in order from `sc-mcp-elicit-1-R`, each with random bytes of its
/// own.
#[derive(Debug, Default)]
pub(crate) struct Questions {
    asked: u64,
}

impl Questions {
    pub fn mint(&mut self) -> String {
        self.asked += 1;
        let mut bytes = [0u8; 16];
        // Without a random source no question can be asked safely: the process ends (a panic
        // ends every binary), which fails closed.
        getrandom::fill(&mut bytes).expect("the system's random source is readable");
        let random: String = crate::hex::encode(bytes);
        format!("{ID_PREFIX}{}-{random}", self.asked)
    }
}

/// Whether an `initialize` request's `params` declare elicitation in form mode: an
/// `elicitation` capability that is an object with `form`, or with neither `form` nor `url` (as
/// every client before URL mode declared it). A client that declared only `url` cannot show a
/// form, and anything that is not an object declares nothing.
pub(crate) fn declares_form_elicitation(params: Option<&Value>) -> bool {
    let capability = params
        .and_then(|params| params.get("capabilities"))
        .and_then(|capabilities| capabilities.get("elicitation"));
    match capability {
        Some(Value::Object(modes)) => modes.contains_key("form") || !modes.contains_key("url"),
        _ => false,
    }
}

/// The scope field's title.
pub(crate) const SCOPE_TITLE: &str = "If yes, for how long?";

/// What a scope means, in plain words, as the form and the message say it.
fn scope_in_words(scope: Scope) -> &'static str {
    match scope {
        Scope::Once => "once: this call only",
        Scope::Call => {
            "call: also this agent's later calls of this tool with exactly these arguments"
        }
        Scope::Value => "value: also trust, for this agent, the untrusted values named above",
    }
}

/// The scopes offered, `once` first and always, each once, in their order.
fn offered(scopes: &[Scope]) -> Vec<Scope> {
    Scope::ALL
        .into_iter()
        .filter(|scope| *scope == Scope::Once || scopes.contains(scope))
        .collect()
}

/// The form: one required boolean, `approve`, and `scope`, one of the scopes offered (`once`
/// by default).
pub(crate) fn requested_schema(scopes: &[Scope]) -> Value {
    let offered = offered(scopes);
    let words: Vec<&str> = offered.iter().map(|scope| scope_in_words(*scope)).collect();
    json!({
        "type": "object",
        "properties": {
            "approve": {"type": "boolean", "title": QUESTION},
            "scope": {
                "type": "string",
                "title": SCOPE_TITLE,
                "description": format!("{}.", words.join("; ")),
                "enum": offered,
                "default": Scope::Once,
            }
        },
        "required": ["approve"]
    })
}

/// The text the person reads: the terminal's prompt (agent-written text escaped), ending with
/// what the form's answer does instead of what to type.
pub fn message(
    call: &Call,
    reasons: &[String],
    timeout: Option<Duration>,
    scopes: &[Scope],
) -> String {
    let prompt = render_prompt(call, reasons, None, &[]);
    // The prompt's last line tells a terminal user what to type; the form asks its own question.
    let body = prompt
        .rsplit_once('\n')
        .map_or(prompt.as_str(), |(body, _)| body);
    let refusals = match timeout {
        Some(timeout) => format!(
            "no, decline, cancel or no answer within {} s",
            timeout.as_secs()
        ),
        None => "no, decline or cancel".to_owned(),
    };
    let offered = offered(scopes);
    let wider = if offered.len() > 1 {
        let words: Vec<&str> = offered.iter().map(|scope| scope_in_words(*scope)).collect();
        format!(
            "\n{SCOPE_TITLE} {}. A yes wider than once is kept for this agent until it expires or sc-state revoke takes it back.",
            words.join("; ")
        )
    } else {
        String::new()
    };
    format!(
        "{}\n{QUESTION} Only yes runs it; {refusals} refuses it.{wider}",
        body.trim_start_matches('\n')
    )
}

/// The `elicitation/create` request, as a line for the client.
pub fn request(id: &str, message: &str, scopes: &[Scope]) -> Vec<u8> {
    JsonLine::new()
        .field("jsonrpc", "2.0")
        .field("id", id)
        .field("method", "elicitation/create")
        .field(
            "params",
            &json!({"message": message, "requestedSchema": requested_schema(scopes)}),
        )
        .finish()
}

/// Tells the client that sc-mcp no longer waits for the answer to `id` (`notifications/cancelled`),
/// so it can close the question.
pub fn cancellation(id: &str, reason: &str) -> Vec<u8> {
    JsonLine::new()
        .field("jsonrpc", "2.0")
        .field("method", "notifications/cancelled")
        .field("params", &json!({"requestId": id, "reason": reason}))
        .finish()
}

/// A hold settled without the person's yes: the timeout, a cancellation, the end of the session.
pub fn declined(reason: impl Into<String>) -> Approval {
    Approval {
        scope: None,
        grant: None,
        approved: false,
        by: AnsweredBy::Elicitation,
        answer: None,
        reason: reason.into(),
        digest: None,
    }
}

/// The approval a client's answer to `elicitation/create` becomes (the whole JSON-RPC response),
/// to a question that offered `scopes`. `answer` is the action the person took, when it is one of
/// the three; `null` otherwise. A yes carries its scope: `content.scope` when it is one of those
/// offered, `once` when there is none; any other scope declines.
pub(crate) fn approval_for_answer(response: &Map<String, Value>, scopes: &[Scope]) -> Approval {
    let malformed = |why: String| {
        declined(format!(
            "declined: the MCP client's answer is malformed ({why})"
        ))
    };
    let result = match (response.get("result"), response.get("error")) {
        (Some(_), Some(_)) => return malformed("it has both `result` and `error`".to_owned()),
        (None, None) => return malformed("it has neither `result` nor `error`".to_owned()),
        (None, Some(error)) => {
            let said = match error.get("message") {
                Some(Value::String(message)) => format!(": {}", quoted(message)),
                _ => String::new(),
            };
            return declined(format!(
                "declined: the MCP client answered the question with an error{said}"
            ));
        }
        (Some(Value::Object(result)), None) => result,
        (Some(other), None) => {
            return malformed(format!("`result` is {}, not an object", type_name(other)))
        }
    };
    let action = match result.get("action") {
        Some(Value::String(action)) => action.as_str(),
        Some(other) => return malformed(format!("`action` is {}, not a string", type_name(other))),
        None => return malformed("its result has no `action`".to_owned()),
    };
    let answered = |action: &str, approved: bool, reason: String| Approval {
        scope: None,
        grant: None,
        approved,
        by: AnsweredBy::Elicitation,
        answer: Some(action.to_owned()),
        reason,
        digest: None,
    };
    match action {
        "accept" => {}
        "decline" => {
            return answered(
                action,
                false,
                "declined: the person declined in the MCP client".to_owned(),
            )
        }
        "cancel" => {
            return answered(
                action,
                false,
                "declined: the person dismissed the question in the MCP client (cancel)".to_owned(),
            )
        }
        other => {
            return malformed(format!(
                "`action` is {}, not accept, decline or cancel",
                quoted(&Value::String(other.to_owned()).to_string())
            ))
        }
    }
    let (approve, scope) = match result.get("content") {
        Some(Value::Object(content)) => (content.get("approve"), content.get("scope")),
        None | Some(Value::Null) => (None, None),
        Some(other) => {
            return malformed(format!("`content` is {}, not an object", type_name(other)))
        }
    };
    match approve {
        Some(Value::Bool(true)) => {
            let offered = offered(scopes);
            let scope = match scope {
                None | Some(Value::Null) => Scope::Once,
                Some(Value::String(text)) => match Scope::parse(text) {
                    Some(scope) if offered.contains(&scope) => scope,
                    _ => {
                        let names: Vec<&str> = offered.iter().map(|scope| scope.as_str()).collect();
                        return answered(
                            action,
                            false,
                            format!(
                                "declined: `scope` in the MCP client's answer is {}, not one of those offered ({})",
                                quoted(&Value::String(text.clone()).to_string()),
                                names.join(", ")
                            ),
                        );
                    }
                },
                Some(other) => {
                    return answered(
                        action,
                        false,
                        format!(
                            "declined: `scope` in the MCP client's answer is {}, not a string",
                            type_name(other)
                        ),
                    )
                }
            };
            Approval {
                scope: Some(scope),
                ..answered(
                    action,
                    true,
                    format!(
                        "approved: the person answered yes to \"{QUESTION}\" in the MCP client{}",
                        match scope {
                            Scope::Once => String::new(),
                            wider => format!(" ({})", scope_in_words(wider)),
                        }
                    ),
                )
            }
        }
        Some(Value::Bool(false)) => answered(
            action,
            false,
            format!("declined: the person answered no to \"{QUESTION}\" in the MCP client"),
        ),
        Some(other) => answered(
            action,
            false,
            format!(
                "declined: `approve` in the MCP client's answer is {}, not true",
                type_name(other)
            ),
        ),
        None => answered(
            action,
            false,
            "declined: the MCP client accepted without an `approve` answer".to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(response: Value) -> Approval {
        approval_for_answer(response.as_object().unwrap(), &[Scope::Once])
    }

    #[test]
    fn only_accept_with_approve_true_approves() {
        let yes = approval(json!({"jsonrpc":"2.0","id":"sc-mcp-elicit-1",
            "result":{"action":"accept","content":{"approve":true}}}));
        assert!(yes.approved);
        assert_eq!(yes.by, AnsweredBy::Elicitation);
        assert_eq!(yes.answer.as_deref(), Some("accept"));
        assert!(yes.reason.starts_with("approved"), "{}", yes.reason);
        for (response, expected) in [
            (
                json!({"result":{"action":"accept","content":{"approve":false}}}),
                "answered no",
            ),
            (
                json!({"result":{"action":"accept","content":{"approve":"true"}}}),
                "a string, not true",
            ),
            (
                json!({"result":{"action":"accept","content":{"approve":1}}}),
                "a number, not true",
            ),
            (
                json!({"result":{"action":"accept","content":{"approve":null}}}),
                "null, not true",
            ),
            (
                json!({"result":{"action":"accept","content":{"yes":true}}}),
                "without an `approve`",
            ),
            (
                json!({"result":{"action":"accept"}}),
                "without an `approve`",
            ),
            (
                json!({"result":{"action":"accept","content":null}}),
                "without an `approve`",
            ),
            (
                json!({"result":{"action":"accept","content":[true]}}),
                "`content` is an array",
            ),
            (
                json!({"result":{"action":"decline","content":{"approve":true}}}),
                "declined in the MCP client",
            ),
            (json!({"result":{"action":"cancel"}}), "dismissed"),
            (
                json!({"result":{"action":"ACCEPT","content":{"approve":true}}}),
                "not accept, decline or cancel",
            ),
            (json!({"result":{"action":true}}), "`action` is a boolean"),
            (
                json!({"result":{"content":{"approve":true}}}),
                "no `action`",
            ),
            (json!({"result":"accept"}), "`result` is a string"),
            (
                json!({"error":{"code":-1,"message":"the dialog \u{1b}[2J broke"}}),
                "with an error: the dialog \\u{1b}[2J broke",
            ),
            (json!({"error":{"code":-1}}), "with an error"),
            (
                json!({"result":{"action":"accept","content":{"approve":true}},"error":{"code":1,"message":"no"}}),
                "both `result` and `error`",
            ),
            (
                json!({"id":"sc-mcp-elicit-1"}),
                "neither `result` nor `error`",
            ),
        ] {
            let approval = approval(response.clone());
            assert!(!approval.approved, "{response}");
            assert_eq!(approval.by, AnsweredBy::Elicitation, "{response}");
            assert!(
                approval.reason.starts_with("declined: "),
                "{response}: {}",
                approval.reason
            );
            assert!(
                approval.reason.contains(expected),
                "{response}: {} lacks {expected:?}",
                approval.reason
            );
            assert!(!approval.reason.contains('\u{1b}'), "{}", approval.reason);
        }
    }

    #[test]
    fn the_answer_kept_is_the_action_when_it_is_one_of_the_three() {
        let answer = |response: Value| approval(response).answer;
        assert_eq!(
            answer(json!({"result":{"action":"decline"}})).as_deref(),
            Some("decline")
        );
        assert_eq!(
            answer(json!({"result":{"action":"cancel"}})).as_deref(),
            Some("cancel")
        );
        assert_eq!(answer(json!({"result":{"action":"maybe"}})), None);
        assert_eq!(answer(json!({"error":{"code":1,"message":"x"}})), None);
    }

    #[test]
    fn form_mode_is_declared_by_an_elicitation_object_without_only_url() {
        let declares = |params: Value| declares_form_elicitation(Some(&params));
        assert!(declares(json!({"capabilities":{"elicitation":{}}})));
        assert!(declares(
            json!({"capabilities":{"elicitation":{"form":{}}}})
        ));
        assert!(declares(
            json!({"capabilities":{"elicitation":{"form":{},"url":{}}}})
        ));
        assert!(!declares(
            json!({"capabilities":{"elicitation":{"url":{}}}})
        ));
        assert!(!declares(json!({"capabilities":{}})));
        assert!(!declares(json!({"capabilities":{"elicitation":true}})));
        assert!(!declares(json!({"capabilities":{"elicitation":null}})));
        assert!(!declares(json!({"capabilities":{"sampling":{}}})));
        assert!(!declares(json!({})));
        assert!(!declares_form_elicitation(None));
    }

    #[test]
    fn the_request_carries_the_prompt_and_the_one_question_form() {
        let (call, _) = Call::parse_line(
            br#"{"agent":"fs","tool":"create_directory","args":{"path":"/srv/x\u202e"},"source":"agent"}"#,
        )
        .unwrap();
        let text = message(
            &call,
            &["the agent is tainted".to_owned()],
            Some(Duration::from_secs(300)),
            &[Scope::Once],
        );
        for expected in [
            "a call is held for your approval",
            "agent:        fs",
            "tool:         create_directory",
            r#"args:         {"path":"/srv/x\u{202e}"}"#,
            "source:       agent",
            "- the agent is tainted",
            "Run this call? Only yes runs it",
            "no, decline, cancel or no answer within 300 s refuses it.",
        ] {
            assert!(text.contains(expected), "{expected:?} not in {text}");
        }
        assert!(!text.contains("Type yes"), "{text}");
        assert!(
            !text.contains('\u{202e}') && !text.starts_with('\n'),
            "{text:?}"
        );
        assert!(!text.contains(SCOPE_TITLE), "once only: {text}");
        let line = request("sc-mcp-elicit-7", &text, &[Scope::Once]);
        assert!(line.ends_with(b"}\n"));
        let value: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(value["id"], "sc-mcp-elicit-7");
        assert_eq!(value["method"], "elicitation/create");
        assert_eq!(value["params"]["message"], text);
        let exact: Value = serde_json::from_str(
            r#"{"type":"object","properties":{"approve":{"type":"boolean","title":"Run this call?"},"scope":{"type":"string","title":"If yes, for how long?","description":"once: this call only.","enum":["once"],"default":"once"}},"required":["approve"]}"#,
        )
        .unwrap();
        assert_eq!(value["params"]["requestedSchema"], exact);
        assert_eq!(value.as_object().unwrap().len(), 4, "{value}");
        assert_eq!(value["params"].as_object().unwrap().len(), 2, "{value}");
    }

    #[test]
    fn the_form_offers_the_scopes_that_apply_and_the_message_says_what_they_mean() {
        let (call, _) = Call::parse_line(
            br#"{"agent":"fs","tool":"create_directory","args":{"path":"/srv/x"},"source":"agent"}"#,
        )
        .unwrap();
        let reasons = ["the agent is tainted".to_owned()];
        // Asked in any order, each offered once, `once` first and always.
        let scopes = [Scope::Value, Scope::Call, Scope::Call];
        let schema = requested_schema(&scopes);
        assert_eq!(
            schema["properties"]["scope"],
            json!({
                "type": "string",
                "title": "If yes, for how long?",
                "description": "once: this call only; call: also this agent's later calls of this tool with exactly these arguments; value: also trust, for this agent, the untrusted values named above.",
                "enum": ["once", "call", "value"],
                "default": "once"
            })
        );
        assert_eq!(
            schema["required"],
            json!(["approve"]),
            "a scope may be left out"
        );
        assert_eq!(
            requested_schema(&[Scope::Call])["properties"]["scope"]["enum"],
            json!(["once", "call"])
        );
        let text = message(&call, &reasons, None, &[Scope::Once, Scope::Call]);
        for expected in [
            "Run this call? Only yes runs it; no, decline or cancel refuses it.",
            "If yes, for how long? once: this call only; call: also this agent's later calls of this tool with exactly these arguments.",
            "until it expires or sc-state revoke takes it back",
        ] {
            assert!(text.contains(expected), "{expected:?} not in {text}");
        }
        assert!(!text.contains("value:"), "{text}");
        let line: Value = serde_json::from_slice(&request("q", &text, &[Scope::Call])).unwrap();
        assert_eq!(
            line["params"]["requestedSchema"]["properties"]["scope"]["enum"],
            json!(["once", "call"])
        );
    }

    #[test]
    fn a_yes_carries_the_scope_answered_and_one_not_offered_declines() {
        let answer = |content: Value, scopes: &[Scope]| {
            approval_for_answer(
                json!({"result": {"action": "accept", "content": content}})
                    .as_object()
                    .unwrap(),
                scopes,
            )
        };
        let offered = [Scope::Once, Scope::Call];
        for (content, scope) in [
            (json!({"approve": true}), Scope::Once),
            (json!({"approve": true, "scope": null}), Scope::Once),
            (json!({"approve": true, "scope": "once"}), Scope::Once),
            (json!({"approve": true, "scope": "call"}), Scope::Call),
        ] {
            let approval = answer(content.clone(), &offered);
            assert!(approval.approved, "{content}: {}", approval.reason);
            assert_eq!(approval.scope, Some(scope), "{content}");
            assert_eq!(approval.answer.as_deref(), Some("accept"));
        }
        let call = answer(json!({"approve": true, "scope": "call"}), &offered);
        assert!(
            call.reason.ends_with("in the MCP client (call: also this agent's later calls of this tool with exactly these arguments)"),
            "{}",
            call.reason
        );
        for (content, scopes, expected) in [
            (
                json!({"approve": true, "scope": "value"}),
                &offered[..],
                "`scope` in the MCP client's answer is \"value\", not one of those offered (once, call)",
            ),
            (
                json!({"approve": true, "scope": "call"}),
                &[Scope::Once][..],
                "is \"call\", not one of those offered (once)",
            ),
            (
                json!({"approve": true, "scope": "CALL"}),
                &offered[..],
                "is \"CALL\", not one of those offered",
            ),
            (
                json!({"approve": true, "scope": "forever\u{1b}[2J"}),
                &offered[..],
                "is \"forever\\u001b[2J\", not one of those offered",
            ),
            (
                json!({"approve": true, "scope": ["call"]}),
                &offered[..],
                "`scope` in the MCP client's answer is an array, not a string",
            ),
            (
                json!({"approve": false, "scope": "call"}),
                &offered[..],
                "answered no",
            ),
        ] {
            let approval = answer(content.clone(), scopes);
            assert!(!approval.approved, "{content}");
            assert_eq!(approval.scope, None, "{content}");
            assert!(
                approval.reason.starts_with("declined: ") && approval.reason.contains(expected),
                "{content}: {} lacks {expected:?}",
                approval.reason
            );
            assert!(!approval.reason.contains('\u{1b}'), "{}", approval.reason);
        }
    }

    #[test]
    fn own_ids_are_minted_in_order_unguessable_and_recognised() {
        let mut questions = Questions::default();
        let first = questions.mint();
        let second = questions.mint();
        let random = |id: &str, n: &str| {
            let rest = id.strip_prefix(&format!("sc-mcp-elicit-{n}-")).unwrap();
            assert_eq!(rest.len(), 32, "{id}");
            assert!(rest.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
            rest.to_owned()
        };
        assert_ne!(random(&first, "1"), random(&second, "2"));
        assert!(is_own_id(&json!(second)));
        assert!(is_own_id(&json!("sc-mcp-elicit-2")));
        assert!(is_own_id(&json!("sc-mcp-elicit-")));
        assert!(!is_own_id(&json!("sc-mcp-elicit")));
        assert!(!is_own_id(&json!(1)));
        assert!(!is_own_id(&json!("x-sc-mcp-elicit-1")));
        let cancel: Value =
            serde_json::from_slice(&cancellation("sc-mcp-elicit-2", "no answer")).unwrap();
        assert_eq!(cancel["method"], "notifications/cancelled");
        assert_eq!(cancel["params"]["requestId"], "sc-mcp-elicit-2");
        assert!(cancel.get("id").is_none());
    }
}
