use super::*;

/// A FIFO made in `folder`.
fn fifo(folder: &Path) -> PathBuf {
    let path = folder.join("fifo");
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    path
}

fn refused(result: Result<File, LogFileError>) -> (FileKind, String) {
    match result {
        Err(err @ LogFileError::NotRegular { kind, .. }) => (kind, err.to_string()),
        other => panic!("not refused as not a regular file: {other:?}"),
    }
}

#[test]
fn devices_and_fifos_are_refused_to_append_naming_what_they_are() {
    let folder = tempfile::tempdir().unwrap();
    let fifo = fifo(folder.path());
    for (path, kind) in [
        (Path::new("/dev/null"), FileKind::CharacterDevice),
        (Path::new("/dev/full"), FileKind::CharacterDevice),
        (fifo.as_path(), FileKind::Fifo),
    ] {
        let (seen, message) = refused(open_to_append(path));
        assert_eq!(seen, kind, "{message}");
        assert_eq!(
            message,
            format!(
                "cannot open the audit log {}: it is {kind}, not a regular file",
                path.display()
            )
        );
    }
}

#[test]
fn a_link_to_a_device_is_refused_and_a_link_to_a_file_is_followed() {
    let folder = tempfile::tempdir().unwrap();
    let to_null = folder.path().join("to-null.jsonl");
    std::os::unix::fs::symlink("/dev/null", &to_null).unwrap();
    let (kind, message) = refused(open_to_append(&to_null));
    assert_eq!(kind, FileKind::CharacterDevice);
    assert!(
        message.contains(&to_null.display().to_string()),
        "{message}"
    );
    let real = folder.path().join("real.jsonl");
    let to_real = folder.path().join("to-real.jsonl");
    std::os::unix::fs::symlink(&real, &to_real).unwrap();
    use std::io::Write;
    open_to_append(&to_real).unwrap().write_all(b"x\n").unwrap();
    assert_eq!(std::fs::read(&real).unwrap(), b"x\n");
}

#[test]
fn a_new_log_is_created_private_with_its_folder() {
    use std::os::unix::fs::PermissionsExt;
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("new/audit.jsonl");
    open_to_append(&path).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.permissions().mode() & 0o077, 0);
}

#[test]
fn a_directory_is_refused_either_way() {
    let folder = tempfile::tempdir().unwrap();
    let err = open_to_append(folder.path()).unwrap_err();
    assert!(matches!(err, LogFileError::Open { .. }), "{err:?}");
    let (kind, message) = refused(open_to_verify(folder.path()));
    assert_eq!(kind, FileKind::Directory);
    assert!(
        message.starts_with("cannot verify the audit log "),
        "{message}"
    );
}

#[test]
fn a_fifo_is_refused_to_verify_at_once_not_waited_on() {
    let folder = tempfile::tempdir().unwrap();
    let fifo = fifo(folder.path());
    // Without O_NONBLOCK the open would wait for a writer, and the test would never end.
    let (kind, message) = refused(open_to_verify(&fifo));
    assert_eq!(kind, FileKind::Fifo);
    assert_eq!(
        message,
        format!(
            "cannot verify the audit log {}: it is a FIFO (named pipe), not a regular file",
            fifo.display()
        )
    );
    let (kind, _) = refused(open_to_verify(Path::new("/dev/null")));
    assert_eq!(kind, FileKind::CharacterDevice);
}

#[test]
fn a_regular_file_opens_to_verify_and_reads_whole() {
    use std::io::Read;
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("audit.jsonl");
    std::fs::write(&path, b"{}\n").unwrap();
    let mut text = Vec::new();
    open_to_verify(&path)
        .unwrap()
        .read_to_end(&mut text)
        .unwrap();
    assert_eq!(text, b"{}\n");
}

#[test]
fn a_missing_log_to_verify_is_an_open_error_naming_it() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("missing.jsonl");
    let err = open_to_verify(&path).unwrap_err();
    assert!(
        matches!(&err, LogFileError::Open { source, .. } if source.kind() == io::ErrorKind::NotFound)
    );
    assert_eq!(
        err.to_string(),
        format!("cannot verify the audit log {}", path.display())
    );
}

#[test]
fn a_file_of_the_kernels_own_file_systems_is_refused_though_it_looks_regular() {
    // `/proc/self/comm` is a regular file to fstat; what is written to it renames the process
    // and its length stays 0: a log there would keep nothing.
    let comm = Path::new("/proc/self/comm");
    for result in [open_to_append(comm), open_to_verify(comm)] {
        let (kind, message) = refused(result);
        assert_eq!(kind, FileKind::KernelFile("proc"), "{message}");
        assert!(
            message.ends_with("it is a file of the kernel's proc file system, not a regular file"),
            "{message}"
        );
    }
    let sysfs = Path::new("/sys/kernel/uevent_seqnum");
    if sysfs.exists() {
        let (kind, message) = refused(open_to_verify(sysfs));
        assert_eq!(kind, FileKind::KernelFile("sysfs"), "{message}");
    }
}
