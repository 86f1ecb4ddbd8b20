use super::*;

#[test]
fn paths_are_placed_lexically() {
    assert_eq!(normalize(Path::new("/a/./b/../c")), Path::new("/a/c"));
    assert_eq!(normalize(Path::new("/../x")), Path::new("/x"));
    assert_eq!(normalize(Path::new("a/../../x")), Path::new("../x"));
    assert_eq!(
        resolve("~/.bashrc", None, Some(Path::new("/home/me"))),
        Path::new("/home/me/.bashrc")
    );
    assert_eq!(
        resolve("src/../.claude/x", Some(Path::new("/w")), None),
        Path::new("/w/.claude/x")
    );
}

#[test]
fn a_tilde_prefix_names_a_folder_that_cannot_be_known() {
    let home = Some(Path::new("/home/me"));
    assert_eq!(unknown_tilde("~", home), None);
    assert_eq!(unknown_tilde("~/x", home), None);
    assert_eq!(unknown_tilde("x/~bob", home), None);
    assert_eq!(unknown_tilde("~bob", home), Some("~bob"));
    assert_eq!(unknown_tilde("~root/.ssh/id_rsa", home), Some("~root"));
    assert_eq!(unknown_tilde("~+/x", home), Some("~+"));
    assert_eq!(unknown_tilde("~-", home), Some("~-"));
    assert_eq!(unknown_tilde("~2/x", home), Some("~2"));
    assert_eq!(unknown_tilde("~/x", None), Some("~"));
    assert_eq!(unknown_tilde("~", None), Some("~"));
}
