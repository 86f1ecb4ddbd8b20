//! Links the one program (`sc-hook`, which every tool runs as) statically against the C library
//! where the system can: a static position-independent executable, so address space layout
//! randomisation stays. Where it cannot, the program is linked dynamically, as before.
//!
//! Why: sc-hook is a new process at every tool call an agent makes. Loading `libc`, `libm` and
//! `libgcc_s` at each start, binding their symbols and tearing their mappings down again took
//! 0.6 to 1.3 ms of a 4.5 to 6 ms call (alternating runs on two cores,
//! `scripts/spawn-times.py`), and sc-sandbox pays it twice (the program, then the program again
//! inside bubblewrap). `cargo install` builds on the machine that runs the programs, so the C
//! library linked in is the one installed there; host names and users are still looked up
//! through `/etc/nsswitch.conf`. sc-sandbox's launcher is linked the same way: it starts every
//! call a door confines, a megabyte more for 0.3 ms at each. The seven other launchers stay
//! dynamic: a pipeline started 0.3 ms sooner is not worth seven megabytes.
//!
//! How: rustc's own switch (`-C target-feature=+crt-static`) cannot be given to one program
//! alone: Cargo passes it to every crate, and the procedural macros then fail to build. So the
//! program alone (`rustc-link-arg-bin`) is linked with `-static-pie`, and the C libraries rustc
//! asks for by name (`-lc`, `-lgcc_s`, ...) are found first in a folder of this build's own, as
//! linker scripts naming the system's static archives (`libgcc_s` becomes `libgcc_eh`, the
//! static unwinder, as rustc does for a static link). The integration tests, examples, launchers
//! and the library are linked as before; the program's own unit tests (its test build is the
//! same binary target) are linked statically too.
//!
//! When: Linux with the GNU C library, the C compiler links a static program (`-static-pie`)
//! and every archive is installed (on Fedora they are in `glibc-static`). Anything else, or
//! `SKELETON_CREW_LINK=dynamic` in the build's environment, links dynamically; the choice is
//! given to the crate as `SKELETON_CREW_LINKED` (`static-pie` or `dynamic`) for the test that
//! checks the program.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The program every tool runs as (see `bin/program/main.rs`).
const PROGRAM: &str = "sc-hook";

/// The programs linked statically where the system can: the one program, and the launcher every
/// confined call starts through (a tainted session's shell commands, under sc-hook).
const STATIC: &[&str] = &[PROGRAM, "sc-sandbox"];

/// The C libraries rustc names for a dynamic link on Linux with the GNU C library, and the
/// static archives each stands for.
const ARCHIVES: &[(&str, &[&str])] = &[
    ("gcc_s", &["libgcc_eh.a", "libgcc.a"]),
    ("c", &["libc.a", "libgcc.a", "libgcc_eh.a"]),
    ("m", &["libm.a"]),
    ("pthread", &["libpthread.a"]),
    ("dl", &["libdl.a"]),
    ("rt", &["librt.a"]),
    ("util", &["libutil.a"]),
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SKELETON_CREW_LINK");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let linked = match static_folder() {
        Ok(folder) => {
            for bin in STATIC {
                println!("cargo:rustc-link-arg-bin={bin}=-static-pie");
                println!("cargo:rustc-link-arg-bin={bin}=-L{}", folder.display());
            }
            "static-pie"
        }
        Err(Dynamic { why, say }) => {
            if say {
                println!("cargo:warning=linking sc-hook and sc-sandbox dynamically: {why}");
            }
            "dynamic"
        }
    };
    println!("cargo:rustc-env=SKELETON_CREW_LINKED={linked}");
}

/// Why the programs are linked dynamically, and whether the build says so (not where that is
/// the platform's way, or what was asked for).
struct Dynamic {
    why: String,
    say: bool,
}

impl From<String> for Dynamic {
    fn from(why: String) -> Dynamic {
        Dynamic { why, say: true }
    }
}

impl From<&str> for Dynamic {
    fn from(why: &str) -> Dynamic {
        Dynamic::from(why.to_owned())
    }
}

/// The folder of linker scripts that turn rustc's dynamic C libraries into static archives, or
/// why the programs are linked dynamically.
fn static_folder() -> Result<PathBuf, Dynamic> {
    let quiet = |why: String| Dynamic { why, say: false };
    if env::var("SKELETON_CREW_LINK").as_deref() == Ok("dynamic") {
        return Err(quiet("SKELETON_CREW_LINK=dynamic".into()));
    }
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if target_os != "linux" || target_env != "gnu" {
        return Err(quiet(format!("the target is {target_os}-{target_env}")));
    }
    let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    if features.split(',').any(|feature| feature == "crt-static") {
        return Err(quiet("rustc links statically already (crt-static)".into()));
    }
    let linker = env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into());
    if env::var("TARGET").ok() != env::var("HOST").ok() && env::var("RUSTC_LINKER").is_err() {
        return Err("a cross build with no linker named".into());
    }
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|_| "no OUT_DIR")?);
    let folder = out.join("static-c");
    fs::create_dir_all(&folder).map_err(|err| format!("{}: {err}", folder.display()))?;
    links_statically(&linker, &out)?;
    for (name, archives) in ARCHIVES {
        let mut paths = Vec::new();
        for archive in *archives {
            paths.push(installed(&linker, archive)?);
        }
        let script = folder.join(format!("lib{name}.a"));
        let listed = paths
            .iter()
            .map(|path| quoted(path))
            .collect::<Option<Vec<String>>>()
            .ok_or("the path of an archive is not one a linker script can name")?;
        fs::write(&script, format!("GROUP ( {} )\n", listed.join(" ")))
            .map_err(|err| format!("{}: {err}", script.display()))?;
    }
    Ok(folder)
}

/// Whether the C compiler links a static position-independent program at all (GCC 8 or later,
/// the C library's `rcrt1.o` installed).
fn links_statically(linker: &str, out: &Path) -> Result<(), String> {
    let source = out.join("static-probe.c");
    let program = out.join("static-probe");
    fs::write(&source, "int main(void) { return 0; }\n")
        .map_err(|err| format!("{}: {err}", source.display()))?;
    let status = Command::new(linker)
        .arg("-static-pie")
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .output()
        .map_err(|err| format!("cannot run {linker}: {err}"))?;
    if !status.status.success() {
        return Err(format!("{linker} -static-pie does not link a program here"));
    }
    Ok(())
}

/// Where the C compiler finds `archive`, when it is installed.
fn installed(linker: &str, archive: &str) -> Result<PathBuf, String> {
    let output = Command::new(linker)
        .arg(format!("-print-file-name={archive}"))
        .output()
        .map_err(|err| format!("cannot run {linker}: {err}"))?;
    let printed = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let path = PathBuf::from(&printed);
    // The compiler prints the bare name back when it does not have the file.
    if !output.status.success() || !path.is_absolute() || !path.is_file() {
        return Err(format!("{archive} is not installed"));
    }
    Ok(path)
}

/// A path as a linker script names a file; none for a path a script cannot name.
fn quoted(path: &Path) -> Option<String> {
    let path = path.to_str()?;
    (!path.contains('"')).then(|| format!("\"{path}\""))
}
