//! Fuzz target: the shell command reader and the `commands`/`paths` decision
//! (`skeleton_crew::rules`), under the Claude Code pack.
//!
//! Never panics (a panic inside brush-parser itself is caught by the library and makes the
//! command dynamic), never overflows its stack, and stays fast on any text up to 1 MiB
//! (`-max_len=1048576`): what is longer than the parse limit, or nests more than it allows, is
//! dynamic without being parsed. Every judgement has reasons; taint never makes a decision
//! weaker; nothing dynamic is allowed; a file the command writes is never an empty path.

#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use skeleton_crew::verdict::Decision;
use skeleton_crew::rules::commands::CommandRules;
use skeleton_crew::rules::decide_command;
use skeleton_crew::rules::paths::{PathContext, PathRules};

const PACK: &str = include_str!("../../policies/claude-code.json");

/// The pack, loaded once (loading checks every rule's examples).
fn pack() -> &'static (CommandRules, PathRules) {
    static PACK_RULES: OnceLock<(CommandRules, PathRules)> = OnceLock::new();
    PACK_RULES.get_or_init(|| {
        // libFuzzer's panic hook aborts on any panic. A panic inside brush-parser is caught by
        // the library (the command is dynamic), so let those unwind to that catch; any other
        // panic still aborts and is a finding.
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info
                .location()
                .is_some_and(|at| at.file().contains("brush-parser"))
            {
                return;
            }
            abort(info);
        }));
        let pack: Value = serde_json::from_str(PACK).expect("the pack is JSON");
        (
            CommandRules::from_json("commands", &pack["commands"]).expect("commands load"),
            PathRules::from_json("paths", &pack["paths"]).expect("paths load"),
        )
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (commands, paths) = pack();
    let context = PathContext {
        cwd: Some(Path::new("/w/proj")),
        root: None,
        home: Some(Path::new("/home/me")),
    };
    let clean = decide_command(commands, Some(paths), &text, false, context);
    let tainted = decide_command(commands, Some(paths), &text, true, context);
    assert!(!clean.reasons.is_empty() && !tainted.reasons.is_empty());
    assert!(tainted.decision >= clean.decision, "{clean:?} {tainted:?}");
    assert!(clean.writes.iter().all(|w| !w.path.is_empty()));
    // Nothing dynamic is ever allowed.
    if clean.decision == Decision::Allow {
        assert!(skeleton_crew::rules::shell::analyse(&text).dynamic.is_empty());
    }
});
