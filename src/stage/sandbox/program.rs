//! The program's own files under the host's `/tmp`, which the sandbox makes anew (private):
//! a program, a script or an interpreter given by such a path would be "No such file or
//! directory" inside. The program (when given by an absolute path), each argument that is an
//! absolute path to a file, and the `#!` interpreter of each of those files, when they lie under
//! the host's `/tmp` and nothing of the plan covers them, are bound read-only at the path they
//! were given by. Only regular files: a folder or a socket there stays unseen.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::plan::Sandbox;

/// The folder whose files are bound in when the program is given by them.
pub const HOST_TMP: &str = "/tmp";

/// How much of a file is read to find its `#!` line.
const SHEBANG_BYTES: u64 = 256;

/// Each file to bind read-only: (the host file, canonical; the path inside, as given).
pub fn tmp_files(sandbox: &Sandbox, program: &OsStr, args: &[OsString]) -> Vec<(PathBuf, PathBuf)> {
    let mut bound: Vec<(PathBuf, PathBuf)> = Vec::new();
    let given = std::iter::once(program).chain(args.iter().map(OsString::as_os_str));
    for word in given {
        let Some((host, inside)) = bindable(sandbox, Path::new(word)) else {
            continue;
        };
        let interpreter = shebang(&host);
        push(&mut bound, host, inside);
        if let Some((host, inside)) = interpreter.and_then(|path| bindable(sandbox, &path)) {
            push(&mut bound, host, inside);
        }
    }
    bound
}

fn push(bound: &mut Vec<(PathBuf, PathBuf)>, host: PathBuf, inside: PathBuf) {
    if !bound.iter().any(|(_, at)| *at == inside) {
        bound.push((host, inside));
    }
}

/// A path worth binding: absolute, under the host's `/tmp` (as given and where it leads), a
/// regular file, and not under a mount of the plan (a hidden path stays hidden, the root is
/// bound already).
fn bindable(sandbox: &Sandbox, given: &Path) -> Option<(PathBuf, PathBuf)> {
    if !given.is_absolute() {
        return None;
    }
    let inside = clean(given)?;
    let host = std::fs::canonicalize(&inside).ok()?;
    let under_tmp = |path: &Path| path.starts_with(HOST_TMP) && path != Path::new(HOST_TMP);
    if !under_tmp(&inside) || !std::fs::metadata(&host).is_ok_and(|meta| meta.is_file()) {
        return None;
    }
    let covered = |path: &Path| {
        sandbox
            .mounts()
            .iter()
            .any(|mount| path.starts_with(&mount.path))
    };
    if covered(&inside) || covered(&host) {
        return None;
    }
    // A file the link leads to elsewhere than /tmp is seen inside already, but its name here is
    // not: the name is bound to it.
    Some((host, inside))
}

/// `path` without `.` and `..` (read as the text says; `None` past `/`).
fn clean(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

/// The interpreter a `#!` line names, if the file starts with one.
fn shebang(file: &Path) -> Option<PathBuf> {
    let mut head = Vec::new();
    std::fs::File::open(file)
        .ok()?
        .take(SHEBANG_BYTES)
        .read_to_end(&mut head)
        .ok()?;
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|b| *b == b'\n').unwrap_or(line.len())];
    let text = std::str::from_utf8(line).ok()?;
    text.split_whitespace().next().map(PathBuf::from)
}

/// A hint for a program that was not found inside: its path is under a folder the sandbox makes
/// anew.
pub fn not_found_hint(program: &OsStr) -> Option<String> {
    let path = Path::new(program);
    super::plan::PRIVATE
        .iter()
        .chain(std::iter::once(&super::plan::VAR_RUN))
        .find(|folder| path.starts_with(folder))
        .map(|folder| {
            format!(
                " ({} is the sandbox's own inside, not the host's: only a program, script or interpreter given by its path under the host's /tmp is bound in; put the program in the root or give its path)",
                folder
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::sandbox::SandboxRules;

    #[test]
    fn files_under_tmp_named_by_the_call_are_bound_with_their_interpreter() {
        let root = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let sandbox = Sandbox::new(&SandboxRules::default(), root.path(), None, &[]).unwrap();
        let tmp = tempfile::tempdir_in(HOST_TMP).unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(base.join("bin")).unwrap();
        std::fs::write(base.join("bin/interp"), "").unwrap();
        let script = base.join("tool.sh");
        std::fs::write(
            &script,
            format!("#!{} -e\necho hi\n", base.join("bin/interp").display()),
        )
        .unwrap();
        std::fs::write(base.join("data.py"), "print(1)").unwrap();
        let bound = tmp_files(
            &sandbox,
            script.as_os_str(),
            &[
                base.join("bin/../data.py").into(),
                "relative.py".into(),
                base.join("bin").into(),
                base.join("missing").into(),
                "/usr/bin/env".into(),
            ],
        );
        assert_eq!(
            bound,
            vec![
                (script.clone(), script.clone()),
                (base.join("bin/interp"), base.join("bin/interp")),
                (base.join("data.py"), base.join("data.py")),
            ]
        );
        assert!(not_found_hint(script.as_os_str()).is_some());
        assert!(not_found_hint(OsStr::new("/usr/bin/x")).is_none());
    }
}
