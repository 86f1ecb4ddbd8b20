//! A patch in Codex's `apply_patch` format, as Codex CLI gives it (`tool_input.command`) and as
//! GitHub Copilot CLI offers the same tool to the Codex models (a freeform tool: `toolArgs` is
//! the patch as a JSON string), onto the vocabulary: a patch of one file is a `Write` (a new
//! file) or an `Edit` of it; a patch of several keeps its name, `apply_patch`, with the files it
//! touches in `files`, each judged by the `paths` rules as a write (the pack lists `files` in
//! `pathArguments` and the tool in `writeTools`). Before, a patch of several files was judged by
//! no path rule: an untainted session's patch rewrote `.codex/config.toml` beside a harmless file.

use serde_json::{Map, Value};

/// Why an `apply_patch` call without a patch is refused: what it would touch cannot be read.
pub(super) const NO_PATCH: &str =
    "has an `apply_patch` call without its patch as text (`command`, `input` or `patch`), so the files it touches cannot be judged";

/// The patch of an `apply_patch` call's arguments: Codex gives it as `command`; `input` and
/// `patch` are read too. `None` when none of them is there, when one is not a string, or when
/// two of them differ (the gate cannot know which one the tool applies).
pub(super) fn patch_in(input: &Map<String, Value>) -> Option<String> {
    let mut found: Option<&str> = None;
    for key in ["command", "input", "patch"] {
        match input.get(key) {
            None => {}
            Some(Value::String(patch)) if found.is_none_or(|known| known == patch) => {
                found = Some(patch)
            }
            Some(_) => return None,
        }
    }
    found.map(str::to_owned)
}

/// Why a patch with a line break inside a file name is refused.
pub(super) const BREAK_IN_NAME: &str =
    "has a patch with a line break inside a file name (a carriage return, a vertical tab, a form feed, NEL, U+2028 or U+2029 before the end of its line), which Codex CLI reads as part of the name and Copilot CLI as the end of it, so the file it writes cannot be known";

/// A tool call's name and arguments.
type Call = (String, Map<String, Value>);

/// The tool and arguments a patch is judged as; `Err` says why it is refused.
pub(super) fn patch_call(patch: String) -> Result<Call, &'static str> {
    let files = patch_files(&patch)?;
    Ok(call_of(files, patch))
}

/// The tool and arguments a shell command that hands a patch to `apply_patch` on a
/// here-document is judged as: the files are read from the whole command, so that where its
/// here-document ends cannot matter (a parser that ended it later than the gate's would find no
/// header the gate missed).
pub(super) fn heredoc_patch_call(patch: String, command: &str) -> Result<Call, &'static str> {
    Ok(call_of(patch_files(command)?, patch))
}

fn call_of(files: Vec<(bool, String)>, patch: String) -> Call {
    let mut args = Map::new();
    let tool = match files.as_slice() {
        [(added, path)] => {
            args.insert("file_path".into(), Value::String(path.clone()));
            if *added {
                "Write"
            } else {
                "Edit"
            }
        }
        _ => {
            let paths = files.into_iter().map(|(_, path)| Value::String(path));
            args.insert("files".into(), Value::Array(paths.collect()));
            "apply_patch"
        }
    };
    args.insert("patch".into(), Value::String(patch));
    (tool.into(), args)
}

/// The files a patch names (`*** Add File: P`, `*** Update File: P`, `*** Delete File: P`,
/// `*** Move to: P`), each with whether it is a new file, read more widely than any agent reads
/// them, so that a header an agent applies is never one missed here: Codex reads a header with
/// white space before it (`  *** Delete File: P`, a review deleted `.codex/config.toml` so);
/// Copilot CLI's parser takes a lone `\r` as a line break and drops a byte-order mark before a
/// header (a review rewrote `.git/config` through each). So a line ends at any line break
/// (`\n`, `\r`, a vertical tab, a form feed, NEL, U+2028, U+2029), a header may stand anywhere
/// in a line, and white space and invisible format characters around a path are trimmed. A
/// line of a hunk read as a header only adds a file to judge.
///
/// Codex reads a line to its `\n` (one `\r` before it dropped), so a name that goes on past
/// another line break is a different name for Codex than for Copilot CLI (a review wrote
/// `.codex/config.toml` through `*** Add File: ok.txt\r/../.codex/config.toml`, read here as
/// `ok.txt`): such a patch is refused.
fn patch_files(patch: &str) -> Result<Vec<(bool, String)>, &'static str> {
    const MARKERS: [(&str, bool); 4] = [
        ("*** Add File: ", true),
        ("*** Update File: ", false),
        ("*** Delete File: ", false),
        ("*** Move to: ", false),
    ];
    let mut files: Vec<(bool, String)> = Vec::new();
    for whole in patch.split('\n') {
        // The line as Codex reads it.
        let whole = whole.strip_suffix('\r').unwrap_or(whole);
        let mut start = 0;
        for line in whole.split(is_line_break) {
            for (marker, added) in MARKERS {
                let Some(at) = line.find(marker) else {
                    continue;
                };
                let name_at = start + at + marker.len();
                if whole[name_at..].contains(is_line_break) {
                    return Err(BREAK_IN_NAME);
                }
                let path = line[at + marker.len()..]
                    .trim_matches(|c: char| c.is_whitespace() || is_format(c));
                if !files.iter().any(|(_, known)| known == path) {
                    files.push((added, path.to_owned()));
                }
            }
            // Past this piece and the one break after it.
            start += line.len();
            start += whole[start..].chars().next().map_or(0, char::len_utf8);
        }
    }
    Ok(files)
}

/// A character any agent's patch parser may take as the end of a line.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// An invisible format character a parser may drop around a name (a byte-order mark, a zero
/// width space or joiner, a direction mark, a soft hyphen, …).
fn is_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
            | '\u{fffe}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_of_one_file_is_a_write_or_an_edit() {
        let patch =
            "*** Begin Patch\n*** Update File: .codex/config.toml\n@@\n-a\n+b\n*** End Patch\n";
        let (tool, args) = patch_call(patch.into()).unwrap();
        assert_eq!(tool, "Edit");
        assert_eq!(args["file_path"], ".codex/config.toml");
        assert_eq!(args["patch"], patch);
        let patch = "*** Begin Patch\n*** Add File: new.txt\n+x\n*** End Patch\n";
        assert_eq!(patch_call(patch.into()).unwrap().0, "Write");
        // Headers with white space before them, as Codex reads them too (a review).
        let patch = "*** Begin Patch\n   *** Add File: .codex/hidden.toml\r\n+x\n*** End Patch\n";
        let (tool, args) = patch_call(patch.into()).unwrap();
        assert_eq!(tool, "Write");
        assert_eq!(args["file_path"], ".codex/hidden.toml");
    }

    #[test]
    fn the_patch_is_found_once_or_the_call_is_refused() {
        let input = |value: serde_json::Value| value.as_object().unwrap().clone();
        let patch = "*** Add File: a\n+x\n";
        assert_eq!(
            patch_in(&input(serde_json::json!({"command": patch}))).as_deref(),
            Some(patch)
        );
        assert_eq!(
            patch_in(&input(serde_json::json!({"input": patch, "patch": patch}))).as_deref(),
            Some(patch)
        );
        for refused in [
            serde_json::json!({}),
            serde_json::json!({"command": ["apply_patch", patch]}),
            serde_json::json!({"command": patch, "input": "*** Add File: .codex/config.toml\n"}),
            serde_json::json!({"command": patch, "patch": null}),
        ] {
            assert_eq!(patch_in(&input(refused.clone())), None, "{refused}");
        }
    }

    /// The spellings a review wrote `.git/config` and `.github/hooks` through under Copilot CLI
    /// (a lone `\r` as a line break, a byte-order mark before a header), and others like them.
    #[test]
    fn a_header_any_agent_may_read_is_never_missed() {
        for patch in [
            "*** Begin Patch\n\u{feff}*** Add File: .github/hooks/v1.json\n+x\n*** End Patch\n",
            "*** Begin Patch\r*** Add File: .github/hooks/v1.json\r+x\r*** End Patch\r",
            "*** Begin Patch\n*** Add File: ok.txt\r*** Add File: .github/hooks/v1.json\n+x\n",
            "*** Begin Patch\n*** Add File: ok.txt\u{2028}*** Add File: .github/hooks/v1.json\n",
            "*** Begin Patch\n\u{200b} *** Add File: \u{feff}.github/hooks/v1.json\u{200b}\n+x\n",
            "*** Begin Patch\n*** Update File: ok.txt\n\u{feff}*** Move to: .github/hooks/v1.json\n",
            "x*** Add File: .github/hooks/v1.json",
        ] {
            // Read, or refused where a name goes on past a line break.
            match patch_files(patch) {
                Ok(files) => assert!(
                    files.iter().any(|(_, path)| path == ".github/hooks/v1.json"),
                    "{patch:?}: {files:?}"
                ),
                Err(why) => assert_eq!(why, BREAK_IN_NAME),
            }
        }
    }

    /// Codex reads a name to its line's `\n`: one that goes on past another line break is
    /// refused (a review wrote `.codex/config.toml` through `ok.txt\r/../.codex/config.toml`).
    #[test]
    fn a_name_that_goes_on_past_a_line_break_is_refused() {
        for cut in ["\r", "\u{0b}", "\u{0c}", "\u{85}", "\u{2028}", "\u{2029}"] {
            for header in ["Add File", "Update File", "Delete File", "Move to"] {
                let patch = format!(
                    "*** Begin Patch\n*** {header}: ok.txt{cut}/../.codex/config.toml\n+x\n*** End Patch\n"
                );
                assert_eq!(patch_files(&patch), Err(BREAK_IN_NAME), "{patch:?}");
            }
        }
        // A CRLF line ending is no break inside a name.
        let patch = "*** Begin Patch\r\n*** Add File: a.txt\r\n+x\r\n*** End Patch\r\n";
        assert_eq!(patch_files(patch), Ok(vec![(true, "a.txt".to_owned())]));
    }

    #[test]
    fn a_here_document_s_files_are_read_from_the_whole_command() {
        let command = "apply_patch <<'EOF'\n*** Add File: a\nEOF\n*** Add File: .codex/x\n";
        let (tool, args) = heredoc_patch_call("*** Add File: a\n".into(), command).unwrap();
        assert_eq!(tool, "apply_patch");
        assert_eq!(args["files"], serde_json::json!(["a", ".codex/x"]));
        assert_eq!(args["patch"], "*** Add File: a\n");
    }

    #[test]
    fn a_patch_of_several_files_names_each() {
        let patch = "*** Begin Patch\n*** Add File: notes.txt\n+hi\n  *** Delete File: .codex/config.toml\n\t*** Update File: a.rs\n*** Move to: .git/hooks/pre-commit\n@@\n-a\n+b\n*** Add File: notes.txt\n*** End Patch\n";
        let (tool, args) = patch_call(patch.into()).unwrap();
        assert_eq!(tool, "apply_patch");
        assert_eq!(
            args["files"],
            serde_json::json!([
                "notes.txt",
                ".codex/config.toml",
                "a.rs",
                ".git/hooks/pre-commit"
            ])
        );
        assert_eq!(args["patch"], patch);
        // A patch that names no file touches none: an empty list.
        let (tool, args) = patch_call("*** Begin Patch\n*** End Patch\n".into()).unwrap();
        assert_eq!(
            (tool.as_str(), &args["files"]),
            ("apply_patch", &serde_json::json!([]))
        );
    }
}
