//! The program's hot code (issue 34): the functions sc-gate's stream and sc-hook's calls run,
//! named in link/hot-text.ld by scripts/hot-text.sh, lie side by side at the front of the
//! program's code, in `.text.hot`, so that a gate maps the megabyte it runs and not the twenty it
//! carries. The list goes stale when those functions are renamed; this test says when.

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::elf::Elf;
use crate::util::bin_path;

/// The functions link/hot-text.ld names, as the patterns it gives the linker.
fn listed() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/link/hot-text.ld");
    let script = std::fs::read_to_string(path).unwrap();
    script
        .lines()
        .filter_map(|line| line.trim().strip_prefix("*(.text."))
        .map(|rest| rest.split_whitespace().next().unwrap().to_owned())
        .collect()
}

/// Whether a line names a function with its hash (`…17h0123456789abcdefE`): one copy of a
/// generic function in one build.
fn has_hash(pattern: &str) -> bool {
    pattern
        .strip_suffix('E')
        .and_then(|rest| rest.get(rest.len().saturating_sub(19)..))
        .is_some_and(|tail| {
            tail.starts_with("17h") && tail[3..].chars().all(|c| c.is_ascii_hexdigit())
        })
}

#[test]
fn the_functions_the_gate_and_the_hook_run_lie_side_by_side() {
    let listed = listed();
    assert!(
        listed.len() > 500,
        "link/hot-text.ld lists {}",
        listed.len()
    );
    let mut globs = GlobSetBuilder::new();
    for pattern in &listed {
        globs.add(Glob::new(pattern).unwrap());
    }
    let globs: GlobSet = globs.build().unwrap();

    let program = Elf::read(&std::fs::read(bin_path("sc-hook")).unwrap());
    if program.functions.is_empty() {
        // A build with its symbols stripped (`strip = "symbols"`): no name to look for.
        eprintln!("sc-hook has no symbol table: which functions lie where cannot be read");
        return;
    }
    let hot = program.section(".text.hot");
    let mut named = vec![false; listed.len()];
    let (mut inside, mut outside) = (0, Vec::new());
    for function in &program.functions {
        let matches = globs.matches(&function.name);
        if matches.is_empty() {
            continue;
        }
        for n in matches {
            named[n] = true;
        }
        match hot {
            Some(hot) if hot.holds(function.addr) => inside += 1,
            _ => outside.push(&function.name),
        }
    }

    // A renamed function leaves a line that names nothing: a few are the compiler's choice
    // (what it inlines differs between builds), many mean the list is out of date. A line that
    // keeps its hash names one generic copy in the release or dist build (scripts/hot-text.sh),
    // which this test's build does not have: only the others are counted.
    let kept: Vec<(&String, &bool)> = listed
        .iter()
        .zip(&named)
        .filter(|(pattern, _)| !has_hash(pattern))
        .collect();
    assert!(
        kept.len() > 500,
        "link/hot-text.ld lists {} functions without a hash",
        kept.len()
    );
    let stale: Vec<&String> = kept
        .iter()
        .filter(|(_, named)| !**named)
        .map(|(pattern, _)| *pattern)
        .collect();
    assert!(
        stale.len() * 10 <= kept.len(),
        "{} of the {} functions link/hot-text.ld names are not in the program (first {:?}): \
         run `make hot-text` (scripts/hot-text.sh; it needs valgrind)",
        stale.len(),
        kept.len(),
        &stale[..stale.len().min(5)]
    );

    match env!("SKELETON_CREW_HOT_TEXT") {
        "on" => {
            assert!(
                hot.is_some(),
                "build.rs gave the linker link/hot-text.ld, yet the program has no .text.hot"
            );
            // The linker matches a function's section, the test its symbol: the two differ for
            // the odd function of the prebuilt standard library.
            assert!(
                outside.len() * 100 <= inside,
                "{} of the functions link/hot-text.ld names lie outside .text.hot (first {:?})",
                outside.len(),
                &outside[..outside.len().min(5)]
            );
            assert!(inside > 500, "{inside} functions in .text.hot");
            // The static C library's objects are listed by file: its allocator lies there too.
            if env!("SKELETON_CREW_LINKED") == "static-pie" {
                let malloc = program.functions.iter().find(|f| f.name == "malloc");
                assert!(
                    malloc.is_some_and(|f| hot.is_some_and(|hot| hot.holds(f.addr))),
                    "the C library's malloc lies outside .text.hot (at {:?})",
                    malloc.map(|f| f.addr)
                );
            }
        }
        off => assert!(
            hot.is_none(),
            "build.rs said {off:?}, yet the program has .text.hot"
        ),
    }
}
