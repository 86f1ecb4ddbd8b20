//! The hidden places a link led to, remembered per root. A `hidden` entry that is a link
//! (`.env -> ../shared/.env`, as deploy tools lay it out), or that a linked folder leads to
//! (`config -> conf.d`), hides the link's target. But the link sits in a writable folder: a
//! confined call may remove it, and the next call, finding no `.env`, would hide nothing there
//! while `../shared/.env` is still on disk (found by a review). So each target reached through a
//! link is written down in the state folder, and every later sandbox of the same root hides it
//! too while it exists, the link gone or not.
//!
//! The file is `sandbox-hidden/<SHA-256 of the root>` in the state folder (folder 0700, file
//! 0600), the paths each ended by a NUL byte. Inside the sandbox the state folder is read-only,
//! so a confined call cannot make the gate forget. A file that cannot be read or written fails
//! the plan: the run would show a secret.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::SandboxError;

/// The folder of the remembered places, inside the state folder.
pub const FOLDER: &str = "sandbox-hidden";

/// Where the places of `root` (canonical) are remembered, under `state` (the state folder).
fn file(state: &Path, root: &Path) -> PathBuf {
    state.join(FOLDER).join(root_name(root))
}

/// What a root's files are named in the sandbox's folders of the state folder (this one and
/// [`super::sharing`]'s): the SHA-256 of its canonical path, in hexadecimal.
pub(super) fn root_name(root: &Path) -> String {
    let digest = Sha256::digest(root.as_os_str().as_bytes());
    crate::hex::encode(digest)
}

/// The folder `name` of the state folder `state`, made (0700, with what leads to it) if missing.
pub(super) fn state_folder(state: &Path, name: &str) -> Result<PathBuf, SandboxError> {
    let folder = state.join(name);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&folder)
        .map_err(SandboxError::io(format!("making {}", folder.display())))?;
    Ok(folder)
}

/// The places remembered for `root`; none when nothing was.
pub fn recall(state: &Path, root: &Path) -> Result<Vec<PathBuf>, SandboxError> {
    let path = file(state, root);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(SandboxError::io(format!("reading {}", path.display()))(err)),
    };
    Ok(bytes
        .split(|byte| *byte == 0)
        .filter(|place| place.first() == Some(&b'/'))
        .map(|place| PathBuf::from(OsString::from_vec(place.to_vec())))
        .collect())
}

/// Where a link may lead without the place being remembered: the system's own folders. A
/// confined call could plant `tool.key -> /usr/bin/bash`, and remembered, bash would be hidden
/// from every later sandbox of the root (found by a review). The sandbox of the call that finds
/// such a link still hides the place, while the link is there.
const NOT_REMEMBERED: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/boot",
    "/proc", "/sys", "/dev", "/run", "/snap", "/nix",
];

/// Whether a place a link led to is remembered: not one of the system's ([`NOT_REMEMBERED`]).
pub fn rememberable(place: &Path) -> bool {
    place.is_absolute()
        && place != Path::new("/")
        && !NOT_REMEMBERED
            .iter()
            .any(|folder| place.starts_with(folder))
}

/// The folder the places are remembered in, under `state`: made (0700) if missing, so that a
/// run can protect it (read-only inside the sandbox) before anything is remembered.
pub fn folder(state: &Path) -> Result<PathBuf, SandboxError> {
    state_folder(state, FOLDER)
}

/// Adds `places` to what is remembered for `root`, beside `known` (what [`recall`] gave),
/// leaving out the system's ([`rememberable`]); writes nothing when all of them are known. The
/// file is read again under a lock before it is written, so that two plans of one root at once
/// never lose each other's places.
pub fn remember(
    state: &Path,
    root: &Path,
    known: &[PathBuf],
    places: &[PathBuf],
) -> Result<(), SandboxError> {
    if places
        .iter()
        .all(|place| known.contains(place) || !rememberable(place))
    {
        return Ok(());
    }
    let path = file(state, root);
    let failed = |what: &str| SandboxError::io(format!("{what} {}", path.display()));
    folder(state)?;
    let lock = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path.with_extension("lock"))
        .map_err(failed("locking"))?;
    lock.lock().map_err(failed("locking"))?;
    let mut all = recall(state, root)?;
    for place in places {
        if rememberable(place) && !all.contains(place) {
            all.push(place.clone());
        }
    }
    let mut bytes = Vec::new();
    for place in &all {
        bytes.extend_from_slice(place.as_os_str().as_bytes());
        bytes.push(0);
    }
    // Written whole beside it, then renamed over it: a reader never sees half a list.
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    let written = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .and_then(|mut out| out.write_all(&bytes).and_then(|()| out.sync_all()));
    if let Err(err) = written.and_then(|()| fs::rename(&partial, &path)) {
        let _ = fs::remove_file(&partial);
        return Err(failed("writing")(err));
    }
    // The lock goes with the file's handle.
    drop(lock);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_remembered_per_root_and_a_file_that_cannot_be_read_fails() {
        let dir = tempfile::tempdir().unwrap();
        let (state, root) = (dir.path().join("state"), Path::new("/work/p"));
        assert!(recall(&state, root).unwrap().is_empty());
        let places = [PathBuf::from("/work/shared/.env"), PathBuf::from("/a\nb")];
        remember(&state, root, &[], &places).unwrap();
        let known = recall(&state, root).unwrap();
        assert_eq!(known, places);
        remember(&state, root, &known, &[PathBuf::from("/k/server.key")]).unwrap();
        assert_eq!(recall(&state, root).unwrap().len(), 3);
        // A place another plan remembered meanwhile is kept: the file is read again.
        remember(&state, root, &[], &[PathBuf::from("/k/other.key")]).unwrap();
        assert_eq!(recall(&state, root).unwrap().len(), 4);
        // The system's places are not remembered.
        for system in ["/usr/bin/bash", "/etc/passwd", "/", "relative"] {
            remember(&state, root, &[], &[PathBuf::from(system)]).unwrap();
        }
        assert_eq!(recall(&state, root).unwrap().len(), 4);
        assert!(recall(&state, Path::new("/work/q")).unwrap().is_empty());
        let file = file(&state, root);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // A folder where the file should be: neither read nor written, and the plan fails.
        fs::remove_file(&file).unwrap();
        fs::create_dir(&file).unwrap();
        assert!(recall(&state, root).is_err());
        assert!(remember(&state, root, &[], &places).is_err());
    }
}
