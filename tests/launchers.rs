//! The nine names and the one program behind them (issue 34): `sc-hook` holds every tool, the
//! other eight are launchers that start it under their own name. What a user meets: each name is
//! its own tool with its own flags, a launcher without its program beside it runs nothing, and
//! the program started by a name it does not know runs nothing either.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::elf::{Elf, ET_DYN, PT_INTERP};
use crate::util::{bin_path, place_exe, Scratch};

const NAMES: [&str; 9] = [
    "sc-gate",
    "sc-approve",
    "sc-exec",
    "sc-report",
    "sc-mcp",
    "sc-hook",
    "sc-state",
    "sc-sandbox",
    "sc-inbox",
];

/// Hard-links (or copies) `names` from the build into `dir`.
fn place(dir: &Path, names: &[&str]) {
    for name in names {
        place_exe(&bin_path(name), &dir.join(name));
    }
}

#[test]
fn each_name_is_its_own_tool_with_its_own_help() {
    for name in NAMES {
        let out = Command::new(bin_path(name)).arg("--help").output().unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(help.contains(&format!("Usage: {name}")), "{name}: {help}");
        let version = Command::new(bin_path(name))
            .arg("--version")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(version.stdout).unwrap(),
            format!("{name} {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

/// The eight launchers are small and link none of the library: one copy of it is installed.
#[test]
fn the_launchers_are_small_beside_the_program() {
    let program = std::fs::metadata(bin_path("sc-hook")).unwrap().len();
    for name in NAMES.iter().filter(|name| **name != "sc-hook") {
        let launcher = std::fs::metadata(bin_path(name)).unwrap().len();
        assert!(
            launcher * 10 < program,
            "{name} is {launcher} bytes against the program's {program}"
        );
    }
}

/// A launcher passes its input, output, arguments and exit status through: sc-gate reads calls
/// on stdin and writes verdicts on stdout, and a usage error keeps its status.
#[test]
fn a_launcher_passes_streams_arguments_and_status_through() {
    let scratch = Scratch::new();
    let out = scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .write_stdin("{\"id\":\"c-1\",\"agent\":\"scout\",\"tool\":\"search_web\",\"args\":{\"query\":\"x\"},\"source\":\"user\"}\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdict["call"]["id"], "c-1", "{verdict}");
    let bad = Command::new(bin_path("sc-gate"))
        .arg("--no-such-flag")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--no-such-flag"));
}

#[test]
fn a_launcher_without_its_program_beside_it_runs_nothing() {
    let scratch = Scratch::new();
    let dir = scratch.path("bin");
    place(&dir, &["sc-exec"]);
    let out = Command::new(dir.join("sc-exec"))
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sc-exec: cannot start") && err.contains("sc-hook"),
        "{err}"
    );
}

/// A symlink to a launcher, elsewhere, still starts the program beside the launcher's real file.
#[test]
fn a_symlinked_launcher_finds_its_program() {
    let scratch = Scratch::new();
    let dir = scratch.path("bin");
    place(&dir, &["sc-report", "sc-hook"]);
    let link = scratch.path("elsewhere/sc-report");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(dir.join("sc-report"), &link).unwrap();
    let out = Command::new(&link).arg("--version").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("sc-report "));
}

#[test]
fn the_program_under_a_name_it_does_not_know_runs_nothing() {
    let scratch = Scratch::new();
    let renamed = scratch.path("bin/gate");
    place_exe(&bin_path("sc-hook"), &renamed);
    let out = Command::new(&renamed)
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("\"gate\""),
        "{out:?}"
    );
}

/// The kernel's name of the process is the tool's, not the program's file: `pgrep sc-gate` and
/// `pkill sc-gate` find sc-gate, though the file that runs is sc-hook.
#[test]
fn the_process_is_named_for_its_tool() {
    let mut gate = Command::new(bin_path("sc-gate"))
        .arg("--quiet")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let proc = format!("/proc/{}", gate.id());
    // The launcher (a file named sc-gate) execs the program (a file named sc-hook), which names
    // itself: wait until the file that runs is the program and read the name then, as ps does.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (mut exe, mut name) = (String::new(), String::new());
    while std::time::Instant::now() < deadline {
        exe = std::fs::read_link(format!("{proc}/exe"))
            .map(|exe| exe.to_string_lossy().into_owned())
            .unwrap_or_default();
        name = std::fs::read_to_string(format!("{proc}/comm")).unwrap_or_default();
        if exe.ends_with("/sc-hook") && name.trim() == "sc-gate" {
            break;
        }
        std::thread::yield_now();
    }
    drop(gate.stdin.take());
    gate.wait().unwrap();
    assert!(exe.ends_with("/sc-hook"), "{exe}");
    assert_eq!(name.trim(), "sc-gate");
}

/// The program is linked the way the build says it is (build.rs): statically against the C
/// library where the system has its static archives, with no dynamic loader to start at each
/// call, and position-independent either way, so its addresses are still randomised.
#[test]
fn the_program_is_linked_as_the_build_says() {
    let linked = env!("SKELETON_CREW_LINKED");
    // The program, and sc-sandbox's launcher, which starts every confined call.
    for name in ["sc-hook", "sc-sandbox"] {
        let elf = Elf::read(&std::fs::read(bin_path(name)).unwrap());
        assert_eq!(elf.kind, ET_DYN, "{name} is not position-independent");
        match linked {
            "static-pie" => assert!(
                !elf.segments.contains(&PT_INTERP),
                "build.rs linked {name} statically, yet it names a dynamic loader"
            ),
            "dynamic" => assert!(elf.segments.contains(&PT_INTERP)),
            other => panic!("build.rs said {other:?}"),
        }
    }
    // Its pointers to itself are fixed up at each start from a packed table where the C library
    // can read one (build.rs runs a probe): 9 KB read, not half a megabyte.
    let program = Elf::read(&std::fs::read(bin_path("sc-hook")).unwrap());
    let table = |name| program.section(name).map_or(0, |section| section.size);
    match env!("SKELETON_CREW_RELR") {
        "on" => assert!(
            table(".relr.dyn") > 0 && table(".rela.dyn") < 64 * 1024,
            "packed: {} bytes, unpacked: {} bytes",
            table(".relr.dyn"),
            table(".rela.dyn")
        ),
        off => assert_eq!(table(".relr.dyn"), 0, "build.rs said {off:?}"),
    }
    // The other launchers are dynamic: small, each linking none of the C library's archive.
    let launcher = std::fs::read(bin_path("sc-gate")).unwrap();
    assert!(Elf::read(&launcher).segments.contains(&PT_INTERP));
}
