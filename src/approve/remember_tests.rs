use super::*;

fn narrowed(scope: Scope, offered: &[Scope]) -> String {
    let (call, _) =
        Call::scan_line(br#"{"agent":"a","tool":"send_payment","args":{"amount":500}}"#)
            .expect("a call");
    let grantable = Grantable {
        scopes: offered.to_vec(),
        ..Grantable::default()
    };
    let given = Given {
        call: &call,
        grantable: &grantable,
        approval_id: "g-1",
        crew: "default",
    };
    let mut approval = Approval {
        approved: true,
        by: AnsweredBy::Answers,
        answer: Some("yes".into()),
        digest: None,
        reason: "approved".into(),
        scope: Some(scope),
        grant: None,
    };
    let remember = Remember {
        ttl: Duration::from_secs(60),
        program: "test",
    };
    remember.keep(&mut approval, &given, Keep::Nowhere, SystemTime::now());
    assert_eq!(approval.scope, Some(Scope::Once), "{approval:?}");
    approval.reason
}

#[test]
fn a_value_scope_not_offered_says_no_value_was_named_not_never_remember() {
    let reason = narrowed(Scope::Value, &[Scope::Once, Scope::Call]);
    assert!(
        reason.contains("value provenance named no untrusted value"),
        "{reason}"
    );
    assert!(!reason.contains("neverRemember"), "{reason}");
}

#[test]
fn once_alone_names_never_remember_among_its_causes() {
    let reason = narrowed(Scope::Call, &[Scope::Once]);
    assert!(reason.contains("offered only once"), "{reason}");
    assert!(reason.contains("neverRemember"), "{reason}");
}
