use super::*;
use crate::audit::chain::Chain;

/// The seal's bytes are a format: a log sealed by one release is checked by the next. The
/// expected values were computed outside Rust (Python's hmac over the parts the doc comment
/// lists), so a change of the parts, their order or their length prefixes fails here.
#[test]
fn a_verdict_seal_is_the_hmac_of_its_documented_parts() {
    let chain = Chain::Keyed(b"0123456789abcdef".to_vec());
    let call = r#"{"agent":"a","tool":"t","args":{}}"#;
    let allow = verdict_seal(
        &chain,
        "g-1",
        call,
        Decision::Allow,
        &["not sealed".into()],
        None,
    );
    assert_eq!(
        allow.expect("keyed").to_string(),
        "80291b1b6660dcd91e59819772cbdf5df64c22756b44556aeff90914467155a6"
    );
    let hold = verdict_seal(
        &chain,
        "g-2",
        call,
        Decision::Hold,
        &["amount 500 is above 100".into(), "tainted".into()],
        Some(r#"{"scopes":["once"]}"#),
    );
    assert_eq!(
        hold.expect("keyed").to_string(),
        "9e0357fee1d9469f7b5d3ac99c6fd28468631881f0a35946ed989a2894581f76"
    );
    assert!(verdict_seal(&Chain::Sha256, "g-1", call, Decision::Allow, &[], None).is_none());
}
