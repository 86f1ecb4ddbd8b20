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
//! checks the program. Its relative relocations are packed where a probe shows the C library
//! applies packed ones (`SKELETON_CREW_RELR`, see `Static`).
//!
//! And the program's hot code: the functions the stages' stream (sc-gate, sc-approve, sc-exec)
//! and sc-hook's calls run (link/hot-text.ld, written by scripts/hot-text.sh) are put side by
//! side at the front of its code. The kernel maps a program's code in pieces of 64 KiB or more
//! around each page that runs, so spread among the other tools' functions they cost sc-gate
//! 4.8 MB of mapped code; side by side, its peak went from 7.1 to 5.4 MiB (`dist`, with the
//! packed relocations). On Linux, where a probe links with the script (lld, Rust's linker there,
//! and GNU ld read it; mold and gold do not); `SKELETON_CREW_HOT_TEXT=off` leaves the layout to
//! the linker (`SKELETON_CREW_HOT_TEXT` tells the crate which, for tests/hot_text.rs).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The program every tool runs as (see `bin/program/main.rs`).
const PROGRAM: &str = "sc-hook";

/// The programs linked statically where the system can: the one program, and the launcher every
/// confined call starts through (a tainted session's shell commands, under sc-hook).
const STATIC: &[&str] = &[PROGRAM, "sc-sandbox"];

/// The functions sc-gate and sc-hook run, for the linker to put side by side (see hot_text).
const HOT_TEXT: &str = "link/hot-text.ld";

/// A C program that does nothing, for the probes that ask only whether a link succeeds.
const EMPTY_PROGRAM: &str = "int main(void) { return 0; }\n";

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
    println!("cargo:rerun-if-changed={HOT_TEXT}");
    println!("cargo:rerun-if-env-changed=SKELETON_CREW_HOT_TEXT");
    println!("cargo:rerun-if-env-changed=SKELETON_CREW_LINK");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let linked = match static_folder() {
        Ok(Static { folder, relr }) => {
            for bin in STATIC {
                println!("cargo:rustc-link-arg-bin={bin}=-static-pie");
                println!("cargo:rustc-link-arg-bin={bin}=-L{}", folder.display());
                if relr {
                    println!("cargo:rustc-link-arg-bin={bin}=-Wl,-z,pack-relative-relocs");
                }
            }
            println!(
                "cargo:rustc-env=SKELETON_CREW_RELR={}",
                if relr { "on" } else { "off" }
            );
            "static-pie"
        }
        Err(Without { why, say }) => {
            if say {
                println!("cargo:warning=linking sc-hook and sc-sandbox dynamically: {why}");
            }
            println!("cargo:rustc-env=SKELETON_CREW_RELR=off");
            "dynamic"
        }
    };
    println!("cargo:rustc-env=SKELETON_CREW_LINKED={linked}");
    let hot = match hot_text() {
        Ok(script) => {
            println!("cargo:rustc-link-arg-bin={PROGRAM}=-Wl,-T,{script}");
            "on"
        }
        Err(Without { why, say }) => {
            if say {
                println!("cargo:warning=sc-hook's code is laid out as the linker likes: {why}");
            }
            // A list the build refused is a test failure (tests/hot_text.rs), not a quiet "off".
            if why.starts_with(HOT_TEXT) {
                "refused"
            } else {
                "off"
            }
        }
    };
    println!("cargo:rustc-env=SKELETON_CREW_HOT_TEXT={hot}");
}

/// The linker script that puts the functions sc-gate and sc-hook run side by side at the front of
/// the program's code (`.text.hot`, see scripts/hot-text.sh), or why the program is linked
/// without it: a target other than Linux, a linker that cannot read it (lld, Rust's own on
/// Linux, and GNU ld can; mold and gold cannot), or `SKELETON_CREW_HOT_TEXT=off` in the
/// environment.
fn hot_text() -> Result<String, Without> {
    let quiet = |why: String| Without { why, say: false };
    if env::var("SKELETON_CREW_HOT_TEXT").as_deref() == Ok("off") {
        return Err(quiet("SKELETON_CREW_HOT_TEXT=off".into()));
    }
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os != "linux" {
        return Err(quiet(format!("the target is {target_os}")));
    }
    let folder = env::var("CARGO_MANIFEST_DIR").map_err(|_| "no CARGO_MANIFEST_DIR")?;
    let listed = Path::new(&folder).join(HOT_TEXT);
    let text = fs::read_to_string(&listed).map_err(|err| format!("{}: {err}", listed.display()))?;
    // The linker is given a script this build writes from the names alone, never the file: a
    // linker script can also set symbols (`decide = allow_all;`), which would change what the
    // program does under a file nobody reads.
    let names = hot_names(&text).map_err(|why| Without {
        why: format!("{HOT_TEXT} refused: {why}"),
        say: true,
    })?;
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|_| "no OUT_DIR")?);
    let written = out.join("hot-text.ld");
    let mut script = String::from("SECTIONS\n{\n  .text.hot : {\n");
    for line in &names {
        script.push_str(&format!("    {line}\n"));
    }
    script.push_str("  }\n}\nINSERT BEFORE .text;\n");
    fs::write(&written, script).map_err(|err| format!("{}: {err}", written.display()))?;
    let script = match written.to_str() {
        // `-Wl,` splits its argument at commas.
        Some(script) if !script.contains(',') => script.to_owned(),
        _ => return Err("the build folder's path is not one `-Wl,` can pass".into()),
    };
    // A linker that cannot read it (mold, gold, one chosen by RUSTFLAGS or started in its place
    // by `mold -run`) fails the link: a probe is linked with it first.
    let linker = linker();
    probe(
        &linker,
        &out,
        "hot-probe",
        EMPTY_PROGRAM,
        &[&format!("-Wl,-T,{script}")],
    )
    .map_err(|why| format!("{linker} does not link with {HOT_TEXT} ({why})"))?;
    Ok(script)
}

/// The input sections link/hot-text.ld lists, as lines for the linker's script, or the first line
/// that is not one scripts/hot-text.sh writes: outside comments, only `SECTIONS`, braces,
/// `.text.hot : {`, `INSERT BEFORE .text;`, `*(.text.NAME .text.unlikely.NAME)`, where NAME is a
/// symbol's letters, digits, `_`, `$` and `.`, with `*` for a hash, and
/// `*libc.a:OBJECT.o(.text .text.*)`, an object of the static C library by its file name
/// (letters, digits, `_`, `-` and `.`).
fn hot_names(text: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut in_comment = false;
    for (n, line) in text.lines().enumerate() {
        let mut line = line.trim();
        if in_comment || line.starts_with("/*") {
            in_comment = !line.ends_with("*/");
            continue;
        }
        if let Some(object) = line
            .strip_prefix("*libc.a:")
            .and_then(|rest| rest.strip_suffix("(.text .text.*)"))
        {
            // An object of the static C library, whose functions are not each in a section.
            let file = |c: char| c.is_ascii_alphanumeric() || "_-.".contains(c);
            if object.ends_with(".o") && object.chars().all(file) && !object.starts_with('.') {
                names.push(format!("*libc.a:{object}(.text .text.*)"));
                continue;
            }
        } else if let Some(listed) = line.strip_prefix("*(.text.") {
            line = listed;
            let name = line.split(' ').next().unwrap_or_default();
            let symbol = |c: char| c.is_ascii_alphanumeric() || "_$.*".contains(c);
            if !name.is_empty()
                && name.chars().all(symbol)
                && line == format!("{name} .text.unlikely.{name})")
            {
                names.push(format!("*(.text.{name} .text.unlikely.{name})"));
                continue;
            }
        } else if [
            "SECTIONS",
            "{",
            "}",
            ".text.hot : {",
            "INSERT BEFORE .text;",
            "",
        ]
        .contains(&line)
        {
            continue;
        }
        return Err(format!(
            "line {} is not one scripts/hot-text.sh writes",
            n + 1
        ));
    }
    Ok(names)
}

/// The C compiler that links the programs, as Cargo names it to build scripts.
fn linker() -> String {
    env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into())
}

/// The link arguments RUSTFLAGS give rustc (`-C link-arg=`, `-C link-args=`), which reach the
/// linker of every program, so the probes are linked with them too (a `-fuse-ld=mold` in them,
/// say, is then probed, not assumed). rustc's own choice of linker is not among them.
fn rustflags_link_args() -> Vec<String> {
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let mut flags = flags.split('\x1f').filter(|flag| !flag.is_empty());
    let mut args = Vec::new();
    while let Some(flag) = flags.next() {
        let option = match flag.strip_prefix("-C") {
            Some("") => flags.next().unwrap_or_default(),
            Some(option) => option,
            None => continue,
        };
        if let Some(arg) = option.strip_prefix("link-arg=") {
            args.push(arg.to_owned());
        } else if let Some(list) = option.strip_prefix("link-args=") {
            args.extend(list.split_whitespace().map(str::to_owned));
        }
    }
    args
}

/// Why the programs are linked without something (statically, the hot code's layout), and
/// whether the build says so (not where that is the platform's way, or what was asked for).
struct Without {
    why: String,
    say: bool,
}

impl From<String> for Without {
    fn from(why: String) -> Without {
        Without { why, say: true }
    }
}

impl From<&str> for Without {
    fn from(why: &str) -> Without {
        Without::from(why.to_owned())
    }
}

/// How the programs are linked statically: the folder of linker scripts that turn rustc's
/// dynamic C libraries into static archives, and whether their relative relocations are packed.
///
/// A position-independent program is moved to a random address at each start, and each of its
/// pointers to itself is fixed up then. sc-hook has about 22,000 in `dist` and 36,000 in
/// `release`: as a table of 24 bytes each (`.rela.dyn`, 530 and 870 KB) the start reads all of
/// it, which then counts in every tool's memory; packed (`-z pack-relative-relocs`, `.relr.dyn`)
/// they take 6-9 KB, and sc-gate's peak went from 9.0 to 8.3 MiB (release, before the hot code
/// was laid out). The C library applies packed ones from version 2.36 on; an older one would
/// start the program with its pointers unfixed, so the build links and runs a probe first.
struct Static {
    folder: PathBuf,
    relr: bool,
}

/// How the programs are linked statically, or why they are linked dynamically.
fn static_folder() -> Result<Static, Without> {
    let quiet = |why: String| Without { why, say: false };
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
    let linker = linker();
    if env::var("TARGET").ok() != env::var("HOST").ok() && env::var("RUSTC_LINKER").is_err() {
        return Err("a cross build with no linker named".into());
    }
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|_| "no OUT_DIR")?);
    let folder = out.join("static-c");
    fs::create_dir_all(&folder).map_err(|err| format!("{}: {err}", folder.display()))?;
    links_statically(&linker, &out)?;
    let relr = packs_relative_relocations(&linker, &out);
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
    Ok(Static { folder, relr })
}

/// Whether the C compiler links a static position-independent program at all (GCC 8 or later,
/// the C library's `rcrt1.o` installed).
fn links_statically(linker: &str, out: &Path) -> Result<(), String> {
    probe(linker, out, "static-probe", EMPTY_PROGRAM, &["-static-pie"])
        .map(drop)
        .map_err(|why| format!("{linker} -static-pie does not link a program here ({why})"))
}

/// Links the C program `source` as `out/NAME` with `args` and RUSTFLAGS' link arguments; the
/// program, or why it did not link. The probe's linker is the C compiler's (GNU ld, say), not
/// always the one rustc picks for the programs (its own lld on Linux): a probe that passes where
/// the programs' link then fails stops the build, it cannot make a program that runs wrongly.
fn probe(
    linker: &str,
    out: &Path,
    name: &str,
    source: &str,
    args: &[&str],
) -> Result<PathBuf, String> {
    let path = out.join(format!("{name}.c"));
    let program = out.join(name);
    fs::write(&path, source).map_err(|err| format!("{}: {err}", path.display()))?;
    let output = Command::new(linker)
        .args(rustflags_link_args())
        .args(args)
        .arg(&path)
        .arg("-o")
        .arg(&program)
        .output()
        .map_err(|err| format!("cannot run {linker}: {err}"))?;
    if !output.status.success() {
        // What the linker said, on one line (a warning the build prints is one line).
        let said = String::from_utf8_lossy(&output.stderr);
        let said: Vec<&str> = said
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect();
        return Err(if said.is_empty() {
            output.status.to_string()
        } else {
            said.join(" / ").chars().take(400).collect()
        });
    }
    Ok(program)
}

/// Whether a static position-independent program linked with packed relative relocations starts
/// with its pointers fixed: the linker knows the option (lld 15, GNU ld 2.38) and the C library
/// applies them (2.36). Only where the probe can run here, on the machine it was built for.
fn packs_relative_relocations(linker: &str, out: &Path) -> bool {
    if env::var("TARGET").ok() != env::var("HOST").ok() {
        return false;
    }
    // `at` is fixed up at the start: the program's address plus that of `value`.
    let source = "static int value = 7;\nint *volatile at = &value;\n\
                  int main(void) { return at == &value && *at == 7 ? 0 : 1; }\n";
    // A linker that does not know the option may warn and link unpacked (GNU ld before 2.38),
    // which would prove nothing: warnings fail the probe, and the table must be there.
    let args = [
        "-static-pie",
        "-Wl,-z,pack-relative-relocs",
        "-Wl,--fatal-warnings",
    ];
    let Ok(program) = probe(linker, out, "relr-probe", source, &args) else {
        return false;
    };
    let packed =
        fs::read(&program).is_ok_and(|bytes| bytes.windows(10).any(|name| name == b".relr.dyn\0"));
    packed
        && Command::new(&program)
            .status()
            .is_ok_and(|status| status.success())
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
