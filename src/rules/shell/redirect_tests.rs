use super::super::analyse;

#[test]
fn input_redirections_read_files() {
    let analysis =
        analyse("cat < a; < ~/.ssh/id_rsa cat; head 0<b; { cat; } < c; cat <> d; cat < /dev/null");
    let reads: Vec<&str> = analysis.reads.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(reads, ["a", "~/.ssh/id_rsa", "b", "c", "d"]);
    assert_eq!(analysis.writes.len(), 1, "<> writes too");
    assert!(
        analysis.reads[0].by.starts_with("cat <"),
        "{:?}",
        analysis.reads[0]
    );
    let moved = analyse("cd x && cat < y; cat < /etc/z");
    assert!(!moved.reads[0].placeable && moved.reads[1].placeable);
    let named = analyse("cat < $HOME/.ssh/id_rsa");
    assert!(named.reads.is_empty() && !named.dynamic.is_empty());
}

#[test]
fn redirections_and_tee_write_files() {
    let analysis = analyse(
        "echo x > a; echo y >> ~/.bashrc 2>/dev/null; ls &> b; echo | tee -a c d; cat x >| e 2>&1",
    );
    let paths: Vec<&str> = analysis.writes.iter().map(|w| w.path.as_str()).collect();
    assert_eq!(paths, ["a", "~/.bashrc", "b", "c", "d", "e"]);
    assert!(analysis.writes.iter().all(|w| w.placeable));
    let moved = analyse("cd .claude && echo x > settings.json; echo y > /tmp/z");
    assert!(moved.changes_directory);
    assert!(!moved.writes[0].placeable);
    assert!(moved.writes[1].placeable);
}
