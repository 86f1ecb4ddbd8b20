//! Tests of whether a yes covers a retried hold's reasons, and that the reasons it was given to
//! travel under the `requestState`'s seal.

use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::json;

use super::not_shown;
use crate::stage::mcp::request_state::{
    call_digest, millis, nonce, spent_in_memory, DoorBinding, HeldState, Key, StateRefused,
};
use crate::verdict::Scope;

const AMOUNT: &str = "amount \"750\" is above the hold limit of 100";
const TAINT: &str = "\"crew\" is tainted: untrusted content was read through garbage earlier in this session, and echo is sensitive";

fn reasons(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|text| (*text).to_owned()).collect()
}

#[test]
fn the_same_reasons_or_fewer_are_covered() {
    let shown = reasons(&[AMOUNT, TAINT]);
    assert!(not_shown(&shown, &reasons(&[AMOUNT, TAINT])).is_empty());
    assert!(not_shown(&shown, &reasons(&[TAINT, AMOUNT])).is_empty());
    assert!(not_shown(&shown, &reasons(&[TAINT])).is_empty());
    assert!(not_shown(&shown, &[]).is_empty());
}

#[test]
fn a_reason_the_person_was_not_shown_is_not_covered() {
    let shown = reasons(&[AMOUNT]);
    assert_eq!(not_shown(&shown, &reasons(&[AMOUNT, TAINT])), vec![TAINT]);
    assert_eq!(not_shown(&shown, &reasons(&[TAINT, AMOUNT])), vec![TAINT]);
    assert_eq!(not_shown(&[], &reasons(&[AMOUNT])), vec![AMOUNT]);
}

/// Exact text: a budget total that moved is another reason, whichever way it moved; so is a
/// reason that differs only by a space or its case.
#[test]
fn a_reason_whose_number_changed_is_a_new_reason() {
    let budget = |total: u32, before: u32| {
        format!("\"crew\"'s amounts in this session would total {total} ({before} before this call), above the budget of 1000")
    };
    let shown = vec![budget(1150, 400)];
    let more = vec![budget(1250, 500)];
    assert_eq!(not_shown(&shown, &more), vec![more[0].as_str()]);
    let less = vec![budget(1050, 300)];
    assert_eq!(not_shown(&shown, &less), vec![less[0].as_str()]);
    assert!(not_shown(&shown, &[budget(1150, 400)]).is_empty());
    let spaced = vec![format!("{} ", shown[0])];
    assert_eq!(not_shown(&shown, &spaced).len(), 1);
    let upper = vec![shown[0].to_uppercase()];
    assert_eq!(not_shown(&shown, &upper).len(), 1);
}

fn door() -> DoorBinding {
    DoorBinding {
        server: DoorBinding::server_command(&["srv".into()]),
        sandbox: false,
        asking: "wherever(elicitation=true,web=false)".into(),
    }
}

/// The reasons the person was shown are sealed with the rest of the state: a client that adds
/// the new reason to them (so that its yes would seem to cover it) breaks the seal.
#[test]
fn the_reasons_shown_are_sealed_and_cannot_be_grown_by_the_client() {
    let key = Key::random().unwrap();
    let now = SystemTime::now();
    let place = spent_in_memory("0123");
    let held = HeldState {
        nonce: nonce().unwrap(),
        call_id: "mcp-1".into(),
        principal: "crew".into(),
        tool: "echo".into(),
        call: call_digest("echo", &json!({"amount": 750})),
        policy: "p1".into(),
        door: door(),
        spent_at: place.clone(),
        expires: millis(now + Duration::from_secs(60)),
        reasons: reasons(&[AMOUNT]),
        scopes: vec![Scope::Once],
        grantable: None,
    };
    let sealed = key.seal(&held);
    let open = |sealed: &str| key.open(sealed, "crew", &held.call, ("p1", &door(), &place), now);
    assert_eq!(open(&sealed).unwrap().reasons, reasons(&[AMOUNT]));
    let (payload, tag) = sealed.split_once('.').unwrap();
    let mut state: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    state["reasons"] = json!([AMOUNT, TAINT]);
    let grown = format!(
        "{}.{tag}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&state).unwrap())
    );
    assert_eq!(open(&grown), Err(StateRefused::Tampered));
}
