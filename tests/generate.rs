//! Man pages and completions come from the clap definitions through the hidden `--generate`.

use std::path::Path;

use crate::util::bare_cmd;

/// Every binary of the package, as `make dist` ships them.
const BINARIES: [&str; 9] = [
    "sc-gate",
    "sc-approve",
    "sc-exec",
    "sc-report",
    "sc-sandbox",
    "sc-state",
    "sc-mcp",
    "sc-hook",
    "sc-inbox",
];

#[test]
fn every_binary_writes_its_man_page_and_completions() {
    for bin in BINARIES {
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

/// `make dist` writes a man page and completions for every binary Cargo.toml declares: its DIST_BINS names
/// them all, and each answers `--generate` (above).
#[test]
fn make_dist_ships_every_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let makefile = std::fs::read_to_string(root.join("Makefile")).unwrap();
    let line = makefile
        .lines()
        .find_map(|line| line.strip_prefix("DIST_BINS :="))
        .expect("a DIST_BINS := line in the Makefile");
    let mut shipped: Vec<&str> = line.split_whitespace().collect();
    shipped.sort_unstable();
    // The binaries Cargo.toml declares (`[[bin]]` tables): the eight launchers and sc-hook.
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut binaries: Vec<String> = manifest
        .split("[[bin]]")
        .skip(1)
        .filter_map(|table| {
            let line = table.lines().find(|line| line.starts_with("name = "))?;
            Some(
                line.trim_start_matches("name = ")
                    .trim_matches('"')
                    .to_owned(),
            )
        })
        .collect();
    binaries.sort_unstable();
    assert_eq!(shipped, binaries, "DIST_BINS in the Makefile");
    let mut listed = BINARIES.to_vec();
    listed.sort_unstable();
    assert_eq!(listed, binaries, "the binaries tested above");
}
