use super::super::tests::words_of;
use super::*;

#[test]
fn ansi_c_strings_decode_as_bash_does() {
    assert_eq!(ansi_c(r"\x72m"), "rm");
    assert_eq!(ansi_c(r"\162m"), "rm");
    assert_eq!(ansi_c(r"\u0072\n\'"), "r\n'");
    assert_eq!(ansi_c(r"a\qb"), r"a\qb");
    assert_eq!(ansi_c(r"\cA"), "\u{1}");
}

#[test]
fn a_nul_ends_an_ansi_c_string_as_in_bash() {
    assert_eq!(ansi_c(r"/etc/passwd\0junk"), "/etc/passwd");
    assert_eq!(ansi_c(r"a\x00b"), "a");
    assert_eq!(ansi_c(r"a\c@b"), "a");
    assert_eq!(
        words_of("cat $'/x/id_rsa\\0'y"),
        [vec!["cat", "/x/id_rsay"]]
    );
}
