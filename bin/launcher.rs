//! What each of the eight launchers does: start `sc-hook` beside it (the one program that holds
//! every tool, see `bin/program/main.rs`) with the launcher's own name as `argv[0]`, the same
//! arguments, environment and file descriptors, in the same process (`exec`). It uses std only,
//! so it stays a few hundred kilobytes and links none of the library (sc-sandbox's is 1.4 MB:
//! `build.rs` links it statically against the C library, as the program).

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// The program every launcher starts, installed beside it.
const PROGRAM: &str = "sc-hook";

/// What a launcher exits with when the program cannot be started: a shell's "cannot execute".
const CANNOT_START: i32 = 126;

/// Starts the program as `name`; returns only when that fails, with the status to exit with.
pub fn launch(name: &str) -> i32 {
    let mut args = std::env::args_os();
    let argv0 = args.next();
    let program = match beside_this(argv0) {
        Some(program) => program,
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "{name}: cannot find this launcher's own folder to start {PROGRAM} from"
            );
            return CANNOT_START;
        }
    };
    let err = Command::new(&program).arg0(name).args(args).exec();
    let _ = writeln!(
        std::io::stderr(),
        "{name}: cannot start {}: {err} (the nine sc-* programs are installed together, in one folder)",
        program.display()
    );
    CANNOT_START
}

/// `sc-hook` in this launcher's folder: the real file's folder (`/proc/self/exe`, so a symlink
/// to a launcher still finds it), else the folder `argv[0]` names.
fn beside_this(argv0: Option<OsString>) -> Option<PathBuf> {
    if let Ok(exe) = std::env::current_exe() {
        return Some(exe.with_file_name(PROGRAM));
    }
    let argv0 = PathBuf::from(argv0?);
    (argv0.components().count() > 1).then(|| argv0.with_file_name(PROGRAM))
}
