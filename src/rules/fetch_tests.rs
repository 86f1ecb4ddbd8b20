use super::*;
use serde_json::json;

fn rules() -> FetchRules {
    FetchRules::from_json(
        "fetch",
        &json!({
            "tools": {"WebFetch": "url", "mcp__fetch__fetch": "url"},
            "allowHosts": ["localhost:3000", "dev.internal"]
        }),
    )
    .unwrap()
}

fn judge(url: &str) -> Option<FetchJudgement> {
    judge_resolved(url, &[])
}

fn judge_resolved(url: &str, addresses: &[IpAddr]) -> Option<FetchJudgement> {
    let Value::Object(args) = json!({"url": url, "prompt": "summarise"}) else {
        unreachable!()
    };
    rules().decide_call("WebFetch", &args, addresses)
}

#[test]
fn local_and_metadata_addresses_are_denied_however_written() {
    for (url, kind) in [
        ("http://169.254.169.254/latest/meta-data/iam/", "link-local"),
        ("http://127.0.0.1:8080/admin", "loopback"),
        ("http://2130706433/", "loopback"),
        ("http://0x7f.1/", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://[::ffff:169.254.169.254]/", "link-local"),
        ("http://10.1.2.3/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://[fd00::1]/", "private (unique local)"),
        ("https://localhost/", "loopback name"),
        ("http://api.localhost:9000/", "loopback name"),
        ("http://printer.local/", "link-local (mDNS) name"),
        (
            "http://metadata.google.internal/computeMetadata/v1/",
            "private name",
        ),
        ("http://metadata/computeMetadata/v1/", "single-label"),
    ] {
        let judged = judge(url).unwrap_or_else(|| panic!("{url} was allowed"));
        assert_eq!(judged.decision, Decision::Deny, "{url}");
        assert!(judged.reason.contains(kind), "{url}: {}", judged.reason);
        assert!(
            judged.reason.contains("fetch.localAddresses deny"),
            "{}",
            judged.reason
        );
    }
}

#[test]
fn public_hosts_and_the_named_ones_are_not_judged() {
    for url in [
        "https://docs.rs/serde",
        "http://93.184.216.34/",
        "https://localhost:3000/page",
        "http://dev.internal/x",
        "http://DEV.internal./x",
    ] {
        assert_eq!(judge(url), None, "{url}");
    }
    // The port is part of the entry: another port of localhost is not named.
    assert!(judge("http://localhost:3001/").is_some());
    // Another tool is not judged.
    let Value::Object(args) = json!({"url": "http://127.0.0.1/"}) else {
        unreachable!()
    };
    assert_eq!(rules().decide_call("Read", &args, &[]), None);
}

#[test]
fn a_name_that_resolves_to_a_local_address_is_judged_by_where_it_leads() {
    let metadata: IpAddr = "169.254.169.254".parse().unwrap();
    let public: IpAddr = "93.184.216.34".parse().unwrap();
    let judged = judge_resolved("http://metadata.attacker.example/", &[public, metadata]).unwrap();
    assert_eq!(judged.decision, Decision::Deny);
    assert!(
        judged
            .reason
            .contains("169.254.169.254, as the name resolves"),
        "{}",
        judged.reason
    );
    assert_eq!(judge_resolved("http://docs.example/", &[public]), None);
    // Only a name not local by its text is given to the resolver.
    let Value::Object(args) = json!({"url": "https://docs.example:8443/x"}) else {
        unreachable!()
    };
    assert_eq!(
        rules().name_to_resolve("WebFetch", &args),
        Some(("docs.example".to_owned(), 8443))
    );
    let Value::Object(args) = json!({"url": "http://127.0.0.1/"}) else {
        unreachable!()
    };
    assert_eq!(rules().name_to_resolve("WebFetch", &args), None);
}

#[test]
fn a_url_that_is_not_http_is_malformed() {
    for url in [
        "file:///home/me/.ssh/id_rsa",
        "gopher://x/",
        "not a url",
        "http://",
    ] {
        let judged = judge(url).unwrap_or_else(|| panic!("{url} was allowed"));
        assert_eq!(judged.decision, Decision::Deny, "{url}");
        assert!(
            judged.reason.starts_with("malformed call"),
            "{url}: {}",
            judged.reason
        );
    }
    let Value::Object(args) = json!({"url": 7}) else {
        unreachable!()
    };
    assert!(rules().decide_call("WebFetch", &args, &[]).is_some());
    let Value::Object(args) = json!({}) else {
        unreachable!()
    };
    assert!(rules().decide_call("WebFetch", &args, &[]).is_some());
}

#[test]
fn the_key_is_checked_when_the_policy_loads() {
    for (value, says) in [
        (json!({"tool": {}}), "fetch"),
        (json!({"localAddresses": "maybe"}), "fetch.localAddresses"),
        (json!({"allowHosts": ["http://x/"]}), "fetch.allowHosts[0]"),
        (json!({"allowHosts": "localhost"}), "fetch.allowHosts"),
    ] {
        let err = FetchRules::from_json("fetch", &value)
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{value}: {err}");
    }
    let hold = FetchRules::from_json(
        "fetch",
        &json!({"tools": {"WebFetch": "url"}, "localAddresses": "hold"}),
    )
    .unwrap();
    let Value::Object(args) = json!({"url": "http://10.0.0.1/"}) else {
        unreachable!()
    };
    assert_eq!(
        hold.decide_call("WebFetch", &args, &[]).unwrap().decision,
        Decision::Hold
    );
}
