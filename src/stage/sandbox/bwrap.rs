//! bubblewrap: where it is, and the argument list that makes the sandbox of a [`Sandbox`] plan.
//!
//! Order matters: bubblewrap makes each mount in turn, each on top of the ones before. First the
//! base (`/` read-only, fresh `/dev`, `/proc`, a private `/tmp` and `/run`, which holds the host's
//! service sockets), then sc-sandbox's own files, then the plan's mounts shallow before deep, and
//! last the read-only remount of hidden folders (after anything mounted inside them).

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::plan::{MountKind, Sandbox};
use super::{SandboxError, INSIDE_DIR, INSIDE_HELPER};

/// The environment variable naming the bubblewrap binary (else `bwrap` on PATH).
pub const BWRAP_ENV: &str = "SC_SANDBOX_BWRAP";

/// The bubblewrap binary: `$SC_SANDBOX_BWRAP`, else the first trusted `bwrap` on PATH. The
/// error names what is missing and how to get it, or why a bwrap found is not trusted.
///
/// Only a bwrap that no one but root could have planted is run ([`trusted`]): owned by root and
/// writable by no one else, in folders that are too, as sudo and ssh judge their files. A bwrap
/// in a folder the agent can write (a `bin` in the home on PATH) would otherwise be the sandbox.
/// The path returned is the canonical one checked, so no link is followed again.
pub fn locate() -> Result<PathBuf, SandboxError> {
    locate_in(std::env::var_os(BWRAP_ENV), std::env::var_os("PATH"))
}

/// [`locate`] with the two variables given.
fn locate_in(named: Option<OsString>, path: Option<OsString>) -> Result<PathBuf, SandboxError> {
    if let Some(named) = named.filter(|v| !v.is_empty()) {
        let path = PathBuf::from(&named);
        if !is_executable(&path) {
            return Err(SandboxError::BwrapMissing(format!(
                "{BWRAP_ENV} names {}, which is not an executable file",
                path.display()
            )));
        }
        return trusted(&path).map_err(|why| {
            SandboxError::BwrapUntrusted(format!("{BWRAP_ENV} names {}: {why}", path.display()))
        });
    }
    let path = path.unwrap_or_default();
    let mut untrusted = Vec::new();
    for candidate in std::env::split_paths(&path).map(|folder| folder.join("bwrap")) {
        if !is_executable(&candidate) {
            continue;
        }
        match trusted(&candidate) {
            Ok(canonical) if in_system_folder(&canonical) => return Ok(canonical),
            Ok(canonical) => untrusted.push(format!(
                "{}: {} is not in a system folder ({})",
                candidate.display(),
                canonical.display(),
                SYSTEM_FOLDERS.join(", ")
            )),
            Err(why) => untrusted.push(format!("{}: {why}", candidate.display())),
        }
    }
    if untrusted.is_empty() {
        return Err(SandboxError::BwrapMissing(
            "no bwrap on PATH; install bubblewrap (Debian: apt-get install bubblewrap), or name it with SC_SANDBOX_BWRAP".to_owned(),
        ));
    }
    Err(SandboxError::BwrapUntrusted(format!(
        "no trusted bwrap on PATH ({}); install bubblewrap (Debian: apt-get install bubblewrap), or name a trusted one with SC_SANDBOX_BWRAP",
        untrusted.join("; ")
    )))
}

/// Where a bwrap found on PATH may be. Ownership alone proves nothing when the user is root (in a
/// container, a devcontainer, CI): every file a confined program writes in its root is root's
/// too, so a `bwrap` it left in a project folder on PATH (an activated `.venv/bin`,
/// `node_modules/.bin`) would pass, and run the next call unconfined. A bwrap elsewhere is named
/// with `SC_SANDBOX_BWRAP`, which the agent's commands do not set for sc-sandbox.
pub const SYSTEM_FOLDERS: &[&str] = &[
    "/usr/bin",
    "/bin",
    "/usr/sbin",
    "/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// Whether a canonical path is a file directly in one of [`SYSTEM_FOLDERS`] (or where `/bin` and
/// `/sbin` lead on a merged-/usr system).
fn in_system_folder(canonical: &Path) -> bool {
    canonical.parent().is_some_and(|folder| {
        SYSTEM_FOLDERS.iter().any(|system| {
            folder == Path::new(system)
                || std::fs::canonicalize(system).is_ok_and(|real| folder == real)
        })
    })
}

/// Whether `path` is a file with an execute bit (following links): what a door checks before
/// it starts a program or sc-sandbox.
pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The canonical path of `path` when it, and every folder above it, is owned by root and
/// writable by neither group nor others; else what is wrong, naming the file or folder.
pub fn trusted(path: &Path) -> Result<PathBuf, crate::stage::sandbox::Unconfinable> {
    use std::os::unix::fs::MetadataExt;
    let canonical =
        std::fs::canonicalize(path).map_err(|err| format!("cannot be resolved: {err}"))?;
    for (index, place) in canonical.ancestors().enumerate() {
        let what = if index == 0 { "the file" } else { "the folder" };
        let meta = std::fs::metadata(place)
            .map_err(|err| format!("{what} {} cannot be examined: {err}", place.display()))?;
        judge(what, place, meta.uid(), meta.mode())?;
    }
    Ok(canonical)
}

/// One file or folder on the way: owned by root, writable by neither group nor others.
fn judge(
    what: &str,
    place: &Path,
    uid: u32,
    mode: u32,
) -> Result<(), crate::stage::sandbox::Unconfinable> {
    if uid != 0 {
        return Err(format!("{what} {} is owned by uid {uid}, not root", place.display()).into());
    }
    if mode & 0o022 != 0 {
        let who = if mode & 0o002 != 0 {
            "others"
        } else {
            "its group"
        };
        return Err(format!(
            "{what} {} is writable by {who} (mode {:o})",
            place.display(),
            mode & 0o7777
        )
        .into());
    }
    Ok(())
}

/// Files of one run on the host: sc-sandbox's private folder (the proxy's socket, and the mount
/// point of the helper) and the empty file and folder that blocks and hidden files are.
#[derive(Debug, Clone)]
pub struct RunFiles {
    pub folder: PathBuf,
    pub empty_file: PathBuf,
    pub empty_dir: PathBuf,
}

/// The file descriptors bubblewrap and the helper inherit.
#[derive(Debug, Clone, Copy)]
pub struct Fds {
    pub seccomp: i32,
    pub status: i32,
    pub control: i32,
}

/// bubblewrap's arguments, up to and including the helper's (`helper`: this binary, mounted
/// inside): the program and its arguments follow.
///
/// `program_files`: files of the program's under the host's `/tmp` (host file, path inside),
/// bound read-only ([`super::program::tmp_files`]).
pub fn arguments(
    sandbox: &Sandbox,
    files: &RunFiles,
    helper: &Path,
    cwd: &Path,
    fds: Fds,
    program_files: &[(PathBuf, PathBuf)],
) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::with_capacity(64);
    let mut push = |items: &[&std::ffi::OsStr]| args.extend(items.iter().map(|s| s.to_os_string()));
    push(&[
        "--unshare-user".as_ref(),
        "--unshare-pid".as_ref(),
        // The helper is the namespace's init, so bubblewrap returns only once the namespace
        // is empty (its own init would report the program's end first, with daemons alive).
        "--as-pid-1".as_ref(),
        "--unshare-net".as_ref(),
        "--unshare-ipc".as_ref(),
        "--unshare-uts".as_ref(),
        "--unshare-cgroup-try".as_ref(),
        "--disable-userns".as_ref(),
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--cap-drop".as_ref(),
        "ALL".as_ref(),
        "--ro-bind".as_ref(),
        "/".as_ref(),
        "/".as_ref(),
        "--dev".as_ref(),
        "/dev".as_ref(),
        "--proc".as_ref(),
        "/proc".as_ref(),
        "--tmpfs".as_ref(),
        "/tmp".as_ref(),
        "--tmpfs".as_ref(),
        "/run".as_ref(),
        "--ro-bind".as_ref(),
        files.folder.as_os_str(),
        INSIDE_DIR.as_ref(),
    ]);
    // The helper runs from where it is when the sandbox shows that file as the host has it (one
    // mount fewer, each costing bubblewrap a read of the mount table); else it is mounted in.
    let helper = match std::fs::canonicalize(helper) {
        Ok(canonical) if sandbox.shows_host_file(&canonical) => canonical,
        _ => {
            push(&[
                "--ro-bind".as_ref(),
                helper.as_os_str(),
                INSIDE_HELPER.as_ref(),
            ]);
            PathBuf::from(INSIDE_HELPER)
        }
    };
    for (host, inside) in program_files {
        push(&["--ro-bind".as_ref(), host.as_os_str(), inside.as_os_str()]);
    }
    if sandbox.private_var_run() {
        push(&["--tmpfs".as_ref(), super::plan::VAR_RUN.as_ref()]);
    }
    let mut remount = Vec::new();
    for mount in sandbox.mounts() {
        let path = mount.path.as_os_str();
        match mount.kind {
            MountKind::Writable | MountKind::Pin => push(&["--bind".as_ref(), path, path]),
            MountKind::ReadOnly => push(&["--ro-bind".as_ref(), path, path]),
            MountKind::BlockFile | MountKind::HiddenFile => {
                push(&["--ro-bind".as_ref(), files.empty_file.as_os_str(), path])
            }
            MountKind::BlockDir => push(&["--ro-bind".as_ref(), files.empty_dir.as_os_str(), path]),
            MountKind::HiddenDir => {
                push(&["--tmpfs".as_ref(), path]);
                remount.push(path.to_os_string());
            }
            MountKind::GitInfo => {
                let index = sandbox
                    .git_views()
                    .iter()
                    .position(|view| view.info == mount.path)
                    .unwrap_or_default();
                let source = super::git::git_info_source(&files.folder, index);
                push(&["--ro-bind".as_ref(), source.as_os_str(), path]);
            }
        }
    }
    // git inside runs the filter the views name ([`super::git::filter_env`]).
    if !sandbox.git_views().is_empty() {
        let count = std::env::var_os("GIT_CONFIG_COUNT");
        for (name, value) in super::git::filter_env(count.as_deref()).unwrap_or_default() {
            push(&["--setenv".as_ref(), name.as_ref(), value.as_ref()]);
        }
    }
    for path in &remount {
        push(&["--remount-ro".as_ref(), path]);
    }
    let number = |fd: i32| OsString::from(fd.to_string());
    push(&[
        "--chdir".as_ref(),
        cwd.as_os_str(),
        "--seccomp".as_ref(),
        &number(fds.seccomp),
        "--".as_ref(),
        helper.as_os_str(),
        super::INSIDE_FLAG.as_ref(),
        &number(fds.status),
        &number(fds.control),
        "--".as_ref(),
    ]);
    args
}

/// The arguments as a shell would show them, for an error message.
pub fn shown(args: &[OsString]) -> String {
    args.iter()
        .map(|a| String::from_utf8_lossy(a.as_bytes()).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_bwrap_is_named() {
        let err = locate_in(Some("/nonexistent/bwrap".into()), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("SC_SANDBOX_BWRAP names /nonexistent/bwrap"),
            "{err}"
        );
        let err = locate_in(None, Some("/nonexistent".into())).unwrap_err();
        assert!(err.to_string().contains("no bwrap on PATH"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("bwrap");
        std::fs::write(&fake, "").unwrap();
        assert!(
            locate_in(None, Some(dir.path().into())).is_err(),
            "not executable"
        );
    }

    #[test]
    fn a_plantable_bwrap_is_refused_naming_why() {
        use std::os::unix::fs::PermissionsExt;
        // In a folder anyone can write.
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let fake = dir.path().join("bwrap");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = locate_in(Some(fake.clone().into()), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("SC_SANDBOX_BWRAP names"), "{err}");
        assert!(
            err.contains("writable by") || err.contains("not root"),
            "{err}"
        );
        let err = locate_in(None, Some(dir.path().into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no trusted bwrap on PATH"), "{err}");
        assert!(err.contains(&fake.display().to_string()), "{err}");
        // Owned by root and in a root-only folder, but not a system folder (a project's
        // `.venv/bin` when the user is root): not taken from PATH.
        assert!(!in_system_folder(Path::new("/srv/proj/.venv/bin/bwrap")));
        assert!(!in_system_folder(Path::new("/usr/bin/x/bwrap")));
        assert!(in_system_folder(Path::new("/usr/bin/bwrap")));
        assert!(in_system_folder(Path::new("/usr/local/bin/bwrap")));
        assert!(in_system_folder(&std::fs::canonicalize("/bin/sh").unwrap()));
        // What the system installs is trusted, at its canonical path.
        let shell = trusted(Path::new("/bin/sh")).unwrap();
        assert_eq!(shell, std::fs::canonicalize("/bin/sh").unwrap());
        // Each check alone.
        let at = Path::new("/x/bwrap");
        assert!(judge("the file", at, 0, 0o100755).is_ok());
        assert!(judge("the folder", at, 0, 0o41755).is_ok());
        let err = judge("the file", at, 1000, 0o100755).unwrap_err();
        assert_eq!(err, "the file /x/bwrap is owned by uid 1000, not root");
        let err = judge("the file", at, 0, 0o100775).unwrap_err();
        assert_eq!(err, "the file /x/bwrap is writable by its group (mode 775)");
        let err = judge("the folder", at, 0, 0o41777).unwrap_err();
        assert_eq!(err, "the folder /x/bwrap is writable by others (mode 1777)");
    }
}
