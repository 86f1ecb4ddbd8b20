//! The built-in tools `sc-exec` can run: fakes with deterministic results and no side effects on
//! the machine. They are what sc-exec runs without a tools file, and, with one, only for the tools
//! it does not name and only with `--builtin-fallback`; real backends are in [`crate::stage::exec::backends`].
//!
//! A tool is found by its exact name; a name that is not here is never guessed at.

use serde_json::{json, Map, Value};

use crate::amount::Amount;

/// The names of the built-in tools.
pub(crate) const BUILTIN_TOOLS: &[&str] = &[
    "search_web",
    "fetch_page",
    "send_payment",
    "send_email",
    "delete_file",
];

/// Why a built-in tool refused its arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BuiltinError {
    #[error("{tool} needs `{key}`")]
    Missing {
        tool: &'static str,
        key: &'static str,
    },
    #[error("{tool} needs `{key}` to be a non-empty string")]
    NotText {
        tool: &'static str,
        key: &'static str,
    },
    /// `send_payment`'s `amount`, as given, is not an amount.
    #[error("send_payment cannot pay the amount {text}")]
    Amount { text: String },
}

/// Runs a built-in tool. `None` when there is no tool of that exact name; `Err` explains why the
/// tool refused its arguments.
pub(crate) fn run_builtin(
    tool: &str,
    args: &Map<String, Value>,
) -> Option<Result<Value, BuiltinError>> {
    let result = match tool {
        "search_web" => search_web(args),
        "fetch_page" => fetch_page(args),
        "send_payment" => send_payment(args),
        "send_email" => send_email(args),
        "delete_file" => delete_file(args),
        _ => return None,
    };
    Some(result)
}

fn search_web(args: &Map<String, Value>) -> Result<Value, BuiltinError> {
    let query = text_arg("search_web", args, "query")?;
    let results: Vec<Value> = (1..=3)
        .map(|n| {
            json!({
                "title": format!("Result {n} for {query}"),
                "url": format!("https://example.com/search/{:08x}/{n}", fingerprint(query.as_bytes()) as u32),
            })
        })
        .collect();
    Ok(json!({ "query": query, "results": results, "simulated": true }))
}

fn fetch_page(args: &Map<String, Value>) -> Result<Value, BuiltinError> {
    let url = text_arg("fetch_page", args, "url")?;
    Ok(json!({
        "url": url,
        "status": 200,
        "text": format!("(simulated page) Contents of {url}."),
        "simulated": true,
    }))
}

fn send_payment(args: &Map<String, Value>) -> Result<Value, BuiltinError> {
    let to = text_arg("send_payment", args, "to")?;
    match args.get("amount").map(Amount::from_json) {
        Some(Amount::Understood { .. }) => {}
        Some(Amount::NotUnderstood { text }) => return Err(BuiltinError::Amount { text }),
        None => {
            return Err(BuiltinError::Missing {
                tool: "send_payment",
                key: "amount",
            })
        }
    }
    Ok(json!({
        "receipt": format!("pay-{:016x}", fingerprint_args(args)),
        "to": to,
        "amount": args["amount"],
        "status": "sent",
        "simulated": true,
    }))
}

fn send_email(args: &Map<String, Value>) -> Result<Value, BuiltinError> {
    let to = text_arg("send_email", args, "to")?;
    Ok(json!({
        "message_id": format!("<{:016x}@skeleton-crew.invalid>", fingerprint_args(args)),
        "to": to,
        "status": "queued",
        "simulated": true,
    }))
}

fn delete_file(args: &Map<String, Value>) -> Result<Value, BuiltinError> {
    let path = text_arg("delete_file", args, "path")?;
    Ok(json!({ "path": path, "deleted": true, "simulated": true }))
}

fn text_arg<'a>(
    tool: &'static str,
    args: &'a Map<String, Value>,
    key: &'static str,
) -> Result<&'a str, BuiltinError> {
    match args.get(key) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text),
        Some(_) => Err(BuiltinError::NotText { tool, key }),
        None => Err(BuiltinError::Missing { tool, key }),
    }
}

fn fingerprint_args(args: &Map<String, Value>) -> u64 {
    fingerprint(&serde_json::to_vec(args).expect("args serialize"))
}

/// FNV-1a: stable across runs and platforms, unlike std's hasher.
fn fingerprint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn every_builtin_runs_and_is_deterministic() {
        let cases = [
            ("search_web", json!({"query": "flights to Lisbon"})),
            ("fetch_page", json!({"url": "https://example.com"})),
            ("send_payment", json!({"to": "acme-travel", "amount": 750})),
            (
                "send_email",
                json!({"to": "a@example.com", "subject": "hi"}),
            ),
            (
                "delete_file",
                json!({"path": "/tmp/definitely-not-deleted"}),
            ),
        ];
        assert_eq!(cases.len(), BUILTIN_TOOLS.len());
        for (tool, call_args) in cases {
            let first = run_builtin(tool, &args(call_args.clone()))
                .unwrap()
                .unwrap();
            let second = run_builtin(tool, &args(call_args)).unwrap().unwrap();
            assert_eq!(first, second, "{tool}");
            assert_eq!(first["simulated"], true, "{tool}");
        }
    }

    #[test]
    fn delete_file_touches_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keep.txt");
        std::fs::write(&path, "still here").unwrap();
        run_builtin("delete_file", &args(json!({"path": path})))
            .unwrap()
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "still here");
    }

    #[test]
    fn names_are_exact() {
        for name in [
            "Send_payment",
            "send_payment ",
            "send_paymen",
            "send\u{200b}_payment",
            "",
        ] {
            assert!(run_builtin(name, &Map::new()).is_none(), "{name:?}");
        }
    }

    #[test]
    fn bad_arguments_are_refused_with_a_reason() {
        let err = run_builtin("send_payment", &args(json!({"to": "x", "amount": "lots"})))
            .unwrap()
            .unwrap_err();
        assert_eq!(
            err,
            BuiltinError::Amount {
                text: "\"lots\"".into()
            }
        );
        assert!(err.to_string().contains("amount"), "{err}");
        let err = run_builtin("search_web", &Map::new()).unwrap().unwrap_err();
        assert_eq!(err.to_string(), "search_web needs `query`");
    }
}
