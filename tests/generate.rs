//! Man pages and completions come from the clap definitions through the hidden `--generate`.

use crate::util::bare_cmd;

#[test]
fn every_binary_writes_its_man_page_and_completions() {
    for bin in ["sc-gate", "sc-approve", "sc-exec", "sc-report"] {
        let man = bare_cmd(bin).args(["--generate", "man"]).output().unwrap();
        assert!(man.status.success(), "{bin}");
        let man = String::from_utf8(man.stdout).unwrap();
        assert!(
            man.contains(".TH") && man.contains(bin) && man.contains("audit"),
            "{bin}: {man}"
        );
        for shell in ["bash", "zsh", "fish"] {
            let out = bare_cmd(bin).args(["--generate", shell]).output().unwrap();
            assert!(out.status.success(), "{bin} {shell}");
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("audit"),
                "{bin} {shell}"
            );
        }
        let help = bare_cmd(bin).arg("--help").output().unwrap();
        assert!(
            !String::from_utf8_lossy(&help.stdout).contains("--generate"),
            "{bin}: --generate is hidden"
        );
    }
}

#[test]
fn a_closed_pipe_ends_generation_quietly() {
    let mut child = std::process::Command::new(crate::util::bin_path("sc-gate"))
        .args(["--generate", "zsh"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
