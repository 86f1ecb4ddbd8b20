//! The one program behind the nine names. `sc-hook` is this program itself, the door that runs on
//! every tool call of every coding agent, so it starts without a second `exec`; the other eight
//! names (`bin/sc-gate.rs` …) are launchers a few hundred kilobytes long that start this program
//! with their own name as `argv[0]` (see `bin/launcher.rs`). Each name keeps its own flags, help,
//! man page and purpose: the name picks which tool's `main` runs, as busybox does.
//!
//! One program instead of nine lets the optimiser and the linker run once, which is most of a
//! fresh `cargo install` (issue 34), and installs one copy of the library instead of nine.

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

mod approve;
mod arena;
mod deadline;
mod exec;
mod gate;
mod hook;
mod inbox;
mod mcp;
mod report;
mod sandbox;
mod sqlite_memory;
mod state;

/// The system's allocator, except in sc-hook's one-shot run (`arena`).
#[global_allocator]
static ALLOCATOR: arena::Allocator = arena::Allocator;

/// A tool's `main`.
type Main = fn() -> ExitCode;

/// The names this program answers to, with the tool each one runs.
const TOOLS: [(&str, Main); 9] = [
    ("sc-gate", gate::main),
    ("sc-approve", approve::main),
    ("sc-exec", exec::main),
    ("sc-report", report::main),
    ("sc-mcp", mcp::main),
    ("sc-hook", hook::main),
    ("sc-state", state::main),
    ("sc-sandbox", sandbox::main),
    ("sc-inbox", inbox::main),
];

fn main() -> ExitCode {
    // sc-hook refuses a call when it is stopped, once its handler is set: a stop before then
    // waits for it (`deadline::hold_stops`), from the first instruction here on. Released at
    // once for every other tool.
    crate::deadline::hold_stops();
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let name = Path::new(&argv0).file_name().unwrap_or(OsStr::new(""));
    if name != "sc-hook" {
        crate::deadline::release_stops();
        // sc-hook ignores the signal from its deadline's start on.
        answer_the_file_size_limit_as_an_error();
    }
    // bubblewrap starts the sandbox's helper as this binary, by its own path or mounted as
    // `/tmp/.sc-sandbox/init` (a launcher's name cannot be passed through it), with the helper's
    // hidden first flag: under those names (and sc-sandbox's), that flag says which tool runs.
    if ["sc-hook", "sc-sandbox", "init"]
        .iter()
        .any(|own| name == *own)
        && std::env::args_os()
            .nth(1)
            .is_some_and(|flag| flag == skeleton_crew::stage::sandbox::INSIDE_FLAG)
    {
        // The sandbox's helper: what it runs must take a stop as it comes.
        crate::deadline::release_stops();
        return sandbox::main();
    }
    match TOOLS.iter().find(|(tool, _)| name == *tool) {
        Some((tool, main)) => {
            name_the_process(tool);
            main()
        }
        None => {
            // An unknown name runs nothing: a copy renamed by hand must not guess which tool
            // it is (a gate that guesses could run as the executor).
            let names: Vec<&str> = TOOLS.iter().map(|(tool, _)| *tool).collect();
            let _ = writeln!(
                std::io::stderr(),
                "skeleton-crew: this program runs as one of {} and was started as {:?}; \
                 start it by one of those names",
                names.join(", "),
                name
            );
            ExitCode::from(2)
        }
    }
}

/// A write past the file size limit (`ulimit -f`) ends the process by `SIGXFSZ` unless the
/// signal is caught or ignored: a stage so ended said nothing, its shell reported status 153. With
/// a handler that does nothing, the write fails with `EFBIG` instead, and the stage refuses as it
/// does any failed write ("cannot write the audit log …: File too large"). A handler, not
/// `SIG_IGN`: an ignored signal stays ignored across `exec`, so every tool, backend and server
/// the stage starts would change with it, while a handler is reset to the default there.
fn answer_the_file_size_limit_as_an_error() {
    extern "C" fn nothing(_: libc::c_int) {}
    // SAFETY: the handler does nothing (async-signal-safe); `sigaction` reads only the action.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = nothing as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        // A failure leaves the default: the process then ends by the signal, still writing
        // nothing it should not.
        libc::sigaction(libc::SIGXFSZ, &action, std::ptr::null_mut());
    }
}

/// The kernel's name of the process (`ps -o comm`, `pgrep`, `pkill`, `top`) is the file that was
/// run, `sc-hook`, whichever name started it: set it to the tool's, so that `pkill sc-gate` still
/// finds sc-gate. Threads started later take this name, or their own.
fn name_the_process(tool: &str) {
    // At most 15 bytes and a NUL, as the kernel keeps it; every tool's name is shorter.
    let mut comm = [0u8; 16];
    let len = tool.len().min(15);
    comm[..len].copy_from_slice(&tool.as_bytes()[..len]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes from the pointer.
    unsafe { libc::prctl(libc::PR_SET_NAME, comm.as_ptr() as libc::c_ulong, 0, 0, 0) };
}
