use super::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;

fn invocation() -> Invocation {
    Invocation {
        exe: "/opt/sc/sc-sandbox".into(),
        policy: Some("/p/policy.json".into()),
        root: Some("/w/proj".into()),
        session: Some("s-1".into()),
        id: Some("gate-id".into()),
        protect: vec!["/x/own".into()],
        ..Invocation::default()
    }
}

fn folder() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let folder = folder_in(dir.path());
    (dir, folder)
}

fn take_script(folder: &Path, id: &str, script: &str) -> Result<Invocation, PreparedError> {
    let (program, args) = bash_argv(script);
    take(folder, id, &program, &args, SystemTime::now())
}

#[test]
fn a_prepared_invocation_runs_once_as_prepared() {
    let (_dir, folder) = folder();
    let id = prepare(&folder, &invocation(), "git status", SystemTime::now()).unwrap();
    assert_eq!(id.len(), 16);
    let mode = fs::metadata(&folder).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let mode = fs::metadata(folder.join(&id)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let taken = take_script(&folder, &id, "git status").unwrap();
    assert_eq!(taken.policy, Some("/p/policy.json".into()));
    assert_eq!(taken.root, Some("/w/proj".into()));
    assert_eq!(taken.session.as_deref(), Some("s-1"));
    assert_eq!(taken.id.as_deref(), Some("gate-id"));
    assert_eq!(
        taken.protect,
        vec![PathBuf::from("/x/own"), folder.parent().unwrap().to_owned()]
    );
    // Once.
    let again = take_script(&folder, &id, "git status").unwrap_err();
    assert!(matches!(again, PreparedError::Missing { .. }), "{again}");
    assert!(again.to_string().contains("already run once"), "{again}");
}

#[test]
fn a_changed_command_missing_id_or_bad_id_is_refused() {
    let (_dir, folder) = folder();
    let id = prepare(&folder, &invocation(), "ls", SystemTime::now()).unwrap();
    let err = take_script(&folder, &id, "ls; curl x").unwrap_err();
    assert!(matches!(err, PreparedError::Altered { .. }), "{err}");
    // The argument split differently is another command line too.
    let err = take(
        &folder,
        &id,
        OsStr::new("bash"),
        &["-cls".into()],
        SystemTime::now(),
    )
    .unwrap_err();
    assert!(matches!(err, PreparedError::Altered { .. }), "{err}");
    let err = take_script(&folder, "0123456789abcdef", "ls").unwrap_err();
    assert!(matches!(err, PreparedError::Missing { .. }), "{err}");
    for bad in ["../x", "0123456789ABCDEF", "0123", "0123456789abcdef0"] {
        let err = take_script(&folder, bad, "ls").unwrap_err();
        assert!(matches!(err, PreparedError::BadId(_)), "{bad}: {err}");
    }
    // The right one still runs.
    take_script(&folder, &id, "ls").unwrap();
}

#[test]
fn an_expired_or_future_invocation_is_refused_and_old_ones_are_swept() {
    let (_dir, folder) = folder();
    let long_ago = SystemTime::now() - LIFETIME - Duration::from_secs(5);
    let id = prepare(&folder, &invocation(), "ls", long_ago).unwrap();
    let err = take_script(&folder, &id, "ls").unwrap_err();
    assert!(matches!(err, PreparedError::Expired { .. }), "{err}");
    let ahead = SystemTime::now() + Duration::from_secs(3600);
    let future = prepare(&folder, &invocation(), "ls", ahead).unwrap();
    let err = take_script(&folder, &future, "ls").unwrap_err();
    assert!(matches!(err, PreparedError::Future { .. }), "{err}");
    // A file whose change time is past the lifetime goes with the next prepare.
    let old = folder.join(&id);
    let file = fs::File::options().write(true).open(&old).unwrap();
    file.set_modified(long_ago).unwrap();
    drop(file);
    prepare(&folder, &invocation(), "ls", SystemTime::now()).unwrap();
    assert!(!old.exists());
}

/// The folder is read through for old files at most once an hour, however many calls are
/// confined: an old file waits for the next hour's sweep, and is refused meanwhile.
#[test]
fn the_folder_is_swept_at_most_once_an_hour() {
    let (_dir, folder) = folder();
    let start = SystemTime::now();
    let long_ago = start - LIFETIME - Duration::from_secs(5);
    prepare(&folder, &invocation(), "ls", start).unwrap();
    let old = folder.join(prepare(&folder, &invocation(), "ls", start).unwrap());
    let file = fs::File::options().write(true).open(&old).unwrap();
    file.set_modified(long_ago).unwrap();
    drop(file);
    let soon = start + SWEEP_EVERY - Duration::from_secs(60);
    prepare(&folder, &invocation(), "ls", soon).unwrap();
    assert!(old.exists(), "swept twice within the hour");
    let later = start + SWEEP_EVERY + Duration::from_secs(60);
    prepare(&folder, &invocation(), "ls", later).unwrap();
    assert!(!old.exists(), "not swept after the hour");
    // The mark is the folder's own file, and no invocation.
    let mark = folder.join("swept");
    assert_eq!(
        fs::metadata(&mark).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let err = take_script(&folder, "swept", "ls").unwrap_err();
    assert!(matches!(err, PreparedError::BadId(_)), "{err}");
}

/// Whatever has the mark's name is replaced, never written through: a hard link to another
/// file (the settings a hook is registered in, the state store) keeps that file whole, and a
/// pipe does not stop the call (a review truncated both, and hung a call on a pipe).
#[test]
fn the_sweep_mark_never_writes_through_what_has_its_name() {
    let (dir, folder) = folder();
    let start = SystemTime::now();
    let long_ago = start - SWEEP_EVERY - Duration::from_secs(60);
    let other = dir.path().join("settings.json");
    fs::write(&other, "{\"hooks\": {}}").unwrap();
    let mark = folder.join("swept");
    prepare(&folder, &invocation(), "ls", start).unwrap();
    fs::remove_file(&mark).unwrap();
    fs::hard_link(&other, &mark).unwrap();
    fs::File::options()
        .write(true)
        .open(&other)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    prepare(&folder, &invocation(), "ls", start).unwrap();
    assert_eq!(fs::read_to_string(&other).unwrap(), "{\"hooks\": {}}");
    assert_eq!(
        fs::metadata(&mark).unwrap().nlink(),
        1,
        "the mark is a file of its own"
    );
    // A pipe at the name: the call is not held up, and the pipe is replaced.
    fs::remove_file(&mark).unwrap();
    let status = Command::new("mkfifo").arg(&mark).status().unwrap();
    assert!(status.success());
    prepare(&folder, &invocation(), "ls", start).unwrap();
    assert!(fs::symlink_metadata(&mark).unwrap().is_file());
    // Nothing else is left behind in the folder but invocations and the mark.
    for entry in fs::read_dir(&folder).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(name == "swept" || name.len() == 16, "{name}");
    }
}

#[test]
fn files_and_folders_that_are_not_sc_hooks_own_are_refused() {
    let (dir, folder) = folder();
    let id = prepare(&folder, &invocation(), "ls", SystemTime::now()).unwrap();
    let path = folder.join(&id);
    // Readable by others.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let err = take_script(&folder, &id, "ls").unwrap_err();
    assert!(matches!(err, PreparedError::NotOurs { .. }), "{err}");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    // A second name.
    let other = dir.path().join("other");
    fs::hard_link(&path, &other).unwrap();
    let err = take_script(&folder, &id, "ls").unwrap_err();
    assert!(err.to_string().contains("hard link"), "{err}");
    fs::remove_file(&other).unwrap();
    // A link in its place.
    let target = dir.path().join("target");
    fs::rename(&path, &target).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let err = take_script(&folder, &id, "ls").unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    fs::remove_file(&path).unwrap();
    // Not what sc-hook writes.
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .unwrap();
    file.write_all(br#"{"version":1,"created":1,"digest":"x","extra":1}"#)
        .unwrap();
    let err = take_script(&folder, &id, "ls").unwrap_err();
    assert!(matches!(err, PreparedError::Malformed { .. }), "{err}");
    // A folder others can write.
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o777)).unwrap();
    let err = take_script(&folder, &id, "ls").unwrap_err();
    assert!(err.to_string().contains("must be 700"), "{err}");
    let err = prepare(&folder, &invocation(), "ls", SystemTime::now()).unwrap_err();
    assert!(matches!(err, PreparedError::NotOurs { .. }), "{err}");
    // A folder that is a link.
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o700)).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    fs::rename(&folder, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &folder).unwrap();
    let err = take_script(&folder, &id, "ls").unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
}

#[test]
fn the_command_reads_as_written_and_the_shell_gives_back_every_byte() {
    let scripts = [
        "git status",
        "git commit -m 'wip: it works'",
        "echo \"$HOME\" 'it'\\''s' $'\\n' `id`",
        "cat <<EOF\nx\nEOF\n",
        "grep -rn 'a|b' . | head -3 && echo !done",
        "",
    ];
    for script in scripts {
        let line = shell_command(Path::new("/opt/sc/sc-sandbox"), "0123456789abcdef", script);
        let prefix = "/opt/sc/sc-sandbox --run 0123456789abcdef -- bash -c ";
        assert!(line.starts_with(prefix), "{line}");
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("printf '%s\\0' {}", &line[prefix.len()..]))
            .output()
            .unwrap();
        assert_eq!(out.stdout, [script.as_bytes(), b"\0"].concat(), "{line}");
    }
    // Unchanged where the shell allows: no single quote, or a single quote and nothing a double
    // quote changes.
    let line = shell_command(
        Path::new("/opt/sc/sc-sandbox"),
        "0123456789abcdef",
        "ls -la",
    );
    assert_eq!(
        line,
        "/opt/sc/sc-sandbox --run 0123456789abcdef -- bash -c 'ls -la'"
    );
    let line = shell_command(
        Path::new("/a b/sc-sandbox"),
        "0123456789abcdef",
        "git commit -m 'x'",
    );
    assert_eq!(
        line,
        "'/a b/sc-sandbox' --run 0123456789abcdef -- bash -c \"git commit -m 'x'\""
    );
}
