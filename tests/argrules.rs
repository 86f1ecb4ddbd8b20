//! Argument rules (`toolArgs`) through sc-gate, with the shipped policy packs (issue 9).

use std::path::PathBuf;

use crate::util::{parse_stdout, Scratch};

fn pack(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("policies")
        .join(name)
}

fn decide(scratch: &Scratch, policy: &PathBuf, lines: &[&str]) -> Vec<serde_json::Value> {
    let out = scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .arg("--policy")
        .arg(policy)
        .write_stdin(lines.join("\n") + "\n")
        .assert()
        .code(0);
    parse_stdout(&out.get_output().stdout)
}

fn decisions(records: &[serde_json::Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["decision"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_payments_pack_lets_a_tainted_buyer_pay_known_payees_only() {
    let scratch = Scratch::new();
    let records = decide(
        &scratch,
        &pack("payments-crew.json"),
        &[
            r#"{"agent":"buyer","tool":"read_invoice","args":{"id":"inv-7"},"source":"user"}"#,
            r#"{"agent":"buyer","tool":"send_payment","args":{"to":"hotel-lisboa","amount":80},"source":"agent"}"#,
            r#"{"agent":"buyer","tool":"send_payment","args":{"to":"attacker-wallet","amount":40},"source":"agent"}"#,
            r#"{"agent":"buyer","tool":"send_payment","args":{"to":"hotel-lisboa","amount":80,"note":"x"},"source":"user"}"#,
        ],
    );
    assert_eq!(decisions(&records), ["allow", "allow", "deny", "deny"]);
    let allowed = records[1]["reasons"][0].as_str().unwrap();
    assert!(
        allowed.contains("tainted") && allowed.contains("schema"),
        "{allowed}"
    );
    let denied = records[2]["reasons"][0].as_str().unwrap();
    assert!(
        denied.contains("argument `to` = \"attacker-wallet\""),
        "{denied}"
    );
}

#[test]
fn the_office_pack_bounds_mail_to_the_domain_and_deletes_to_one_folder() {
    let scratch = Scratch::new();
    let records = decide(
        &scratch,
        &pack("office-assistant.json"),
        &[
            r#"{"agent":"a","tool":"send_email","args":{"to":"ann@example.com"},"source":"user"}"#,
            r#"{"agent":"a","tool":"send_email","args":{"to":"Ann@Example.com"},"source":"user"}"#,
            r#"{"agent":"a","tool":"send_email","args":{"to":"ann@example.com","cc":["x@evil.test"]},"source":"user"}"#,
            r#"{"agent":"a","tool":"delete_file","args":{"path":"/srv/scratch/old/report.txt"},"source":"user"}"#,
            r#"{"agent":"a","tool":"delete_file","args":{"path":"/srv/scratch/../../etc/passwd"},"source":"user"}"#,
            r#"{"agent":"a","tool":"delete_file","args":{"path":"/etc/passwd"},"source":"user"}"#,
        ],
    );
    assert_eq!(
        decisions(&records),
        ["allow", "deny", "deny", "allow", "deny", "deny"]
    );
    assert!(
        records[2]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("argument `cc.0`"),
        "{:?}",
        records[2]
    );
}

#[test]
fn invalid_schemas_exit_2_naming_the_tool_and_the_path() {
    let scratch = Scratch::new();
    let cases = [
        (
            r#"{"toolArgs":{"send_email":{"schema":{"properties":{"to":{"pattern":"([a-z"}}}}}}"#,
            "toolArgs.send_email.schema",
            "/properties/to/pattern",
        ),
        (
            r#"{"toolArgs":{"send_email":{"schema":{"type":"text"}}}}"#,
            "toolArgs.send_email.schema",
            "/type",
        ),
        (
            r#"{"toolArgs":{"send_email":{"schema":{"$ref":"https://schemas.example/mail.json"}}}}"#,
            "toolArgs.send_email.schema",
            "not fetched",
        ),
        (
            r#"{"toolArgs":{"send_email":{"schema":{"$ref":"../mail.json"}}}}"#,
            "toolArgs.send_email.schema",
            "not fetched",
        ),
    ];
    for (index, (policy, key, path)) in cases.iter().enumerate() {
        let file = scratch.write(&format!("bad-{index}.json"), policy);
        let out = scratch
            .cmd("sc-gate")
            .arg("--policy")
            .arg(&file)
            .write_stdin("")
            .assert()
            .code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(
            stderr.contains(key) && stderr.contains(path),
            "{policy}: {stderr}"
        );
    }
}
