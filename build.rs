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
//! Where a probe linked that way runs, the program's relocations are packed
//! ([`PACK_RELOCATIONS`]), so that each start reads 8 KB of them instead of 850 KB.
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
            let linker = env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into());
            let packed = packs_relocations(&linker, &out_dir());
            println!(
                "cargo:rustc-env=SKELETON_CREW_RELOCATIONS={}",
                if packed { "packed" } else { "listed" }
            );
            for bin in STATIC {
                println!("cargo:rustc-link-arg-bin={bin}=-static-pie");
                println!("cargo:rustc-link-arg-bin={bin}=-L{}", folder.display());
                if packed {
                    println!("cargo:rustc-link-arg-bin={bin}={PACK_RELOCATIONS}");
                }
            }
            "static-pie"
        }
        Err(Dynamic { why, say }) => {
            println!("cargo:rustc-env=SKELETON_CREW_RELOCATIONS=listed");
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

/// The linker's flag that writes the program's relocations packed (`DT_RELR`): a static
/// position-independent program relocates its own pointers as it starts, and the one program
/// has about 36,000 of them. Listed one by one they took 850 KB that every start read through;
/// packed, they take 8 KB, and sc-hook started about 0.15 ms sooner in alternating runs
/// (issue 34).
///
/// A static program's start-up code is the C library's, and one older than glibc 2.36 does not
/// apply a packed table: the program would crash before `main`, before sc-hook's own crash
/// handler could refuse the call, and an agent whose hook crashes may run the call. So the flag
/// is used only when two probes say so ([`packs_relocations`]).
const PACK_RELOCATIONS: &str = "-Wl,-z,pack-relative-relocs";

/// ELF's section type of a packed relocation table.
const SHT_RELR: u32 = 19;

fn out_dir() -> PathBuf {
    PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
}

/// Whether the program may be linked with [`PACK_RELOCATIONS`]: a static position-independent C
/// program linked with it holds a packed table and runs with its pointers right (the C
/// library applies such a table), and a Rust program linked by rustc, with the flags Cargo
/// gives this crate, holds one too (rustc's own linker packs: it is not the C compiler's
/// linker, since rustc links with its own LLD on x86-64 Linux, and a linker that does not
/// know the flag warns and ignores it). Not tried in a cross build, whose programs cannot run
/// here.
fn packs_relocations(linker: &str, out: &Path) -> bool {
    if env::var("TARGET").ok() != env::var("HOST").ok() {
        return false;
    }
    c_library_applies_packed(linker, out) && rustc_packs(out)
}

fn c_library_applies_packed(linker: &str, out: &Path) -> bool {
    let source = out.join("relr-probe.c");
    let program = out.join("relr-probe");
    // A table of pointers: each one a relative relocation the start-up code must apply.
    let probe = "static const char *const words[] = {\"alpha\", \"beta\", \"gamma\"};\n\
                 int main(void) { return words[0][0] == 'a' && words[1][0] == 'b' \
                 && words[2][0] == 'g' ? 0 : 1; }\n";
    if fs::write(&source, probe).is_err() {
        return false;
    }
    let linked = Command::new(linker)
        .arg("-static-pie")
        .arg(PACK_RELOCATIONS)
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .output()
        .is_ok_and(|output| output.status.success());
    linked
        && has_packed_relocations(&program)
        && Command::new(&program)
            .status()
            .is_ok_and(|status| status.success())
}

fn rustc_packs(out: &Path) -> bool {
    let source = out.join("relr_probe.rs");
    let program = out.join("relr-probe-rs");
    let probe = "static WORDS: [&str; 3] = [\"alpha\", \"beta\", \"gamma\"];\n\
                 fn main() { std::process::exit(i32::from(WORDS[1] != \"beta\")) }\n";
    if fs::write(&source, probe).is_err() {
        return false;
    }
    let mut rustc = Command::new(env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    // The flags Cargo passes this crate (a linker chosen in RUSTFLAGS), then the linker it names.
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        rustc.args(flags.split('\x1f').filter(|flag| !flag.is_empty()));
    }
    if let Ok(linker) = env::var("RUSTC_LINKER") {
        rustc.arg(format!("-Clinker={linker}"));
    }
    let linked = rustc
        .arg(format!("-Clink-arg={PACK_RELOCATIONS}"))
        .arg("-o")
        .arg(&program)
        .arg(&source)
        .output()
        .is_ok_and(|output| output.status.success());
    linked && has_packed_relocations(&program)
}

/// Whether the 64-bit little-endian ELF file at `path` has a packed relocation table.
fn has_packed_relocations(path: &Path) -> bool {
    let Ok(bytes) = fs::read(path) else {
        return false;
    };
    let u16_at = |at: usize| Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
    if bytes.get(..6) != Some(b"\x7fELF\x02\x01".as_slice()) {
        return false;
    }
    let (Some(table), Some(size), Some(count)) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c)) else {
        return false;
    };
    (0..usize::from(count)).any(|n| {
        usize::try_from(table)
            .ok()
            .and_then(|table| u32_at(table + n * usize::from(size) + 4))
            == Some(SHT_RELR)
    })
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
