use super::*;
use serde_json::json;

use super::super::rule::literal_base;
use super::super::tests::{context, decide, decide_globbed, issue_rules, read_unplaced};
use super::super::{PathContext, PathRules, Placed};
use crate::verdict::Decision;

#[test]
fn the_literal_base_of_a_glob() {
    assert_eq!(literal_base(".ssh/**"), Path::new(".ssh"));
    assert_eq!(literal_base(".ssh"), Path::new(".ssh"));
    assert_eq!(literal_base(".cargo/credentials*"), Path::new(".cargo"));
    assert_eq!(literal_base(".config/gh/**"), Path::new(".config/gh"));
    assert_eq!(literal_base("/etc/ssl/*.key"), Path::new("/etc/ssl"));
    assert_eq!(literal_base("/*"), Path::new("/"));
    assert_eq!(literal_base("*.key"), Path::new(""));
    assert_eq!(literal_base("a/{b,c}/d"), Path::new("a"));
    assert_eq!(literal_base("a/b?/d"), Path::new("a"));
    assert_eq!(literal_base("a/[bc]/d"), Path::new("a"));
    assert_eq!(literal_base(r"we\*ird/x*"), Path::new("we*ird"));
    use super::super::rule::names_after_base;
    for (glob, names) in [
        ("*.pem", Some("*.pem")),
        ("config/*.pem", Some("*.pem")),
        ("*.pem/**", Some("*.pem")),
        ("/etc/ssl/*.key", Some("*.key")),
        (r"we\*ird/x*", Some("x*")),
        (".env", None),
        ("secrets/**", None),
        ("**", None),
        ("a*/b", None),
        ("{a,b}.pem", None),
    ] {
        assert_eq!(names_after_base(glob).as_deref(), names, "{glob}");
    }
    assert!(on_the_way(b"/", b"/home/me"));
    assert!(on_the_way(b"/home", b"/home/me"));
    assert!(on_the_way(b"/home/me", b"/home/me"));
    assert!(!on_the_way(b"/ho", b"/home/me"));
    assert!(!on_the_way(b"/home/me/x", b"/home/me"));
    assert!(!on_the_way(b"/home/you", b"/home/me"));
    assert!(matches!(
        Relation::of(b"/home/me/.ssh", b"/home/me"),
        Relation::Under(b".ssh")
    ));
    assert!(matches!(Relation::of(b"/x", b"/"), Relation::Under(b"x")));
    assert!(matches!(
        Relation::of(b"/home/mex", b"/home/me"),
        Relation::Apart
    ));
    assert!(matches!(
        Relation::of(b"/home", b"/home/me"),
        Relation::Above
    ));
    // A home at `/`: everything absolute is under it.
    let rules = issue_rules();
    let at_root = PathContext {
        home: Some(Path::new("/")),
        ..context()
    };
    for (path, decision) in [
        ("/", Decision::Hold),
        ("/.ssh", Decision::Hold),
        ("/w", Decision::Allow),
    ] {
        assert_eq!(
            rules.decide_path(path, false, at_root).decision,
            decision,
            "{path}"
        );
    }
}

#[test]
fn a_folder_on_the_way_to_a_read_glob_gets_its_read_decision() {
    let judged = decide("~", false);
    assert_eq!(judged.decision, Decision::Hold);
    assert_eq!(
        judged.reasons,
        ["read of \"/home/me\" is a folder on the way to (or the base of) what paths.rules[1] names (glob ~/.ssh/**), and a read of a folder may read what is under it: hold"]
    );
    for path in [
        "~/",
        "/home",
        "/home/",
        "/",
        "/home/me/.",
        "~/.ssh",
        "~/.aws",
        "../../home",
    ] {
        assert_eq!(decide(path, false).decision, Decision::Hold, "{path}");
    }
    // Not a folder on the way: a sibling, a name that only begins like the base, the
    // project's own folders (`**/.env` has no base: every folder is on the way to one).
    for path in [
        "~/src",
        "~/.sshx",
        "/home/you",
        "/homer",
        ".",
        "src",
        "README.md",
        "/w",
        "/etc/hosts",
    ] {
        assert_eq!(decide(path, false).decision, Decision::Allow, "{path}");
    }
    // A write rule has no say on reads.
    assert!(!decide("~", false).reasons[0].contains("paths.rules[0]"));
    // A glob relative to the root, and an absolute one.
    let rules = PathRules::from_json(
        "paths",
        &json!({"rules": [
            {"glob": ["secrets/**", "/etc/ssl/private/*.key"], "read": "hold"},
            {"glob": ["*.pem"], "read": "deny"}
        ]}),
    )
    .unwrap();
    let decide = |path: &str| rules.decide_path(path, false, context()).decision;
    assert_eq!(decide("."), Decision::Deny, "the root holds *.pem");
    assert_eq!(decide("secrets"), Decision::Hold);
    assert_eq!(decide("src"), Decision::Allow);
    assert_eq!(decide("src/secrets"), Decision::Allow);
    assert_eq!(decide("/etc/ssl"), Decision::Hold);
    assert_eq!(decide("/etc/ssl/private"), Decision::Hold);
    assert_eq!(decide("/etc/ssl/certs"), Decision::Allow);
    assert_eq!(decide("/w"), Decision::Deny);
    let secrets_only = PathRules::from_json(
        "paths",
        &json!({"rules": [{"glob": ["secrets/**"], "read": "hold"}]}),
    )
    .unwrap();
    let decide = |path: &str| secrets_only.decide_path(path, false, context()).decision;
    assert_eq!(decide("."), Decision::Hold);
    assert_eq!(decide("secrets"), Decision::Hold);
    assert_eq!(decide("secrets/a/b"), Decision::Hold, "the glob itself");
    assert_eq!(decide("src"), Decision::Allow);
    assert_eq!(decide("secretsx"), Decision::Allow);
}

#[test]
fn a_relative_path_that_cannot_be_placed_may_line_up_with_a_base() {
    let rules = issue_rules();
    let placed = rules.place(context());
    let read = |word: &str| read_unplaced(&rules, &placed, word);
    for word in [
        ".",
        "..",
        "../x",
        ".ssh",
        ".aws/credentials",
        "me",
        "me/.ssh/config",
        "home/me",
    ] {
        assert_eq!(read(word), Some(Decision::Hold), "{word}");
    }
    for word in ["src", "main.rs", "sshd", "me2", "home/you", ".ssh2"] {
        assert_eq!(read(word), None, "{word}");
    }
    let judged = rules
        .decide_arguments(
            &["cat".to_owned(), ".aws/credentials".to_owned()],
            &|| "cd ~ && cat .aws/credentials".to_owned(),
            false,
            &placed,
        )
        .unwrap();
    assert!(
        judged.reasons[0].starts_with(
            "read of \".aws/credentials\" by cd ~ && cat .aws/credentials cannot be placed"
        ),
        "{judged:?}"
    );
    // A call with no cwd and no root cannot place `.` either.
    let nowhere = PathContext {
        cwd: None,
        root: None,
        home: Some(Path::new("/home/me")),
        links: None,
    };
    assert_eq!(
        rules.decide_path(".", false, nowhere).decision,
        Decision::Hold
    );
    assert_eq!(
        rules.decide_path("src", false, nowhere).decision,
        Decision::Allow
    );
}

#[test]
fn a_wildcard_may_match_a_name_a_glob_names() {
    for path in [
        ".env*",
        ".en?",
        "./.e[n]v",
        "config/.e*",
        "/srv/.env*",
        "~/.ss?/id_rsa",
        "~/.aw[s]/credentials",
    ] {
        let judged = decide_globbed(path, false);
        assert_eq!(judged.decision, Decision::Hold, "{path}: {judged:?}");
    }
    let judged = decide_globbed(".env*", false);
    assert_eq!(
        judged.reasons,
        ["read of \"/w/proj/.env*\" has a wildcard that may match a name paths.rules[1] names (glob **/.env): hold"]
    );
    for path in ["src/*.rs", "*.md", "*", "src/[a-z]*.toml"] {
        assert_eq!(
            decide_globbed(path, false).decision,
            Decision::Allow,
            "{path}"
        );
    }
    // A write: the rule's write decision.
    assert_eq!(
        decide_globbed(".claud?/settings.json", true).decision,
        Decision::Deny
    );
    assert_eq!(decide_globbed("~/.bash[r]c", true).decision, Decision::Deny);
    assert_eq!(
        decide_globbed(".claud?/settings.json", false).decision,
        Decision::Allow
    );
    // A wildcard in the working folder's name is not the call's.
    let odd = PathContext {
        cwd: Some(Path::new("/w/p[1]")),
        root: None,
        home: Some(Path::new("/home/me")),
        links: None,
    };
    let rules = PathRules::from_json(
        "paths",
        &json!({"rules": [{"glob": ["**/p1/x"], "read": "hold"}]}),
    )
    .unwrap();
    assert_eq!(rules.decide_path("x", false, odd).decision, Decision::Allow);
    assert_eq!(rules.decide_path("?", false, odd).decision, Decision::Allow);
    // `*.rs` meets `**/id_rsa*` (on `id_rsa.rs`), not `**/id_rsa`.
    let keys = |glob: &str| {
        PathRules::from_json(
            "paths",
            &json!({"rules": [{"glob": [glob], "read": "hold"}]}),
        )
        .unwrap()
    };
    for (glob, decision) in [
        ("**/id_rsa*", Decision::Hold),
        ("**/id_rsa", Decision::Allow),
    ] {
        let placed = Placed::of(context());
        assert_eq!(
            keys(glob)
                .judge_with("src/*.rs", false, true, None, &placed, true, true)
                .decision,
            decision,
            "{glob}"
        );
    }
    let placed = Placed::of(context());
    assert_eq!(
        keys("**/id_rsa")
            .judge_with("deploy/id_rs?", false, true, None, &placed, true, true)
            .decision,
        Decision::Hold
    );
    // A relative path that cannot be placed lines up with a base through its wildcard.
    let rules = issue_rules();
    let placed = rules.place(context());
    let read = |word: &str| read_unplaced(&rules, &placed, word);
    assert_eq!(read(".ss?/id_rsa"), Some(Decision::Hold));
    assert_eq!(read(".en*"), Some(Decision::Hold));
    assert_eq!(read("src/*.rs"), None);
    assert_eq!(read("*.rs"), None);
    assert_eq!(read("*/x"), None, "`*` never matches `.ssh`");
    assert_eq!(
        read("*"),
        Some(Decision::Hold),
        "`*` may be `home`, after `cd /`"
    );
}

#[test]
fn a_name_is_matched_by_a_pattern_of_names_as_a_glob_matches_it() {
    use super::super::name_matches;
    use std::ffi::OsStr;
    for (glob, name, matched) in [
        ("*.pem", "server.pem", true),
        ("*.pem", ".pem", true),
        ("*.pem", "server.pem.txt", false),
        (".env.*", ".env.staging", true),
        (".env.*", ".env", false),
        ("id_?sa", "id_rsa", true),
        ("[a-c].key", "b.key", true),
        ("[!a-c].key", "b.key", false),
        ("[!a-c].key", "d.key", true),
        (r"\*.pem", "*.pem", true),
        (r"\*.pem", "x.pem", false),
        ("*", "anything at all", true),
    ] {
        assert_eq!(
            name_matches(glob, OsStr::new(name)),
            matched,
            "{glob} {name}"
        );
    }
    // A name that is not UTF-8: its bad bytes are matched by a wildcard.
    let odd = <OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"\xff.pem");
    assert!(name_matches("*.pem", odd));
    // Not ASCII: a `?` is one character here and one byte to the paths rules' globs, and a
    // match by either counts (a review found `??.key` showing `é.key`, which the paths rules'
    // `**/??.key` holds).
    assert!(name_matches("??.key", OsStr::new("é.key")));
    assert!(name_matches("?.key", OsStr::new("é.key")));
    assert!(!name_matches("???.key", OsStr::new("é.key")));
}
