//! Where a file tool's path leads on the file system. The `paths` rules and the sandbox's places
//! judge a path by its text; a symbolic link the agent made (`ln -s .claude cl`, in a confined
//! call) would carry a `Write cl/settings.json` past them. sc-hook, which sees the file system,
//! gives the decision the path with its links resolved as well, and the stricter answer wins
//! ([`crate::rules::decision::CallContext::resolved`]).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The keys of Claude Code's file tools that name a file.
const PATH_KEYS: &[&str] = &["file_path", "notebook_path", "path"];

/// The tool input with each file path resolved through its symbolic links, when one of them
/// leads elsewhere than its text says; `None` when none does (or none can be placed: a relative
/// path with no absolute `cwd`).
pub(super) fn resolved_args(
    input: &Map<String, Value>,
    cwd: Option<&str>,
) -> Option<Map<String, Value>> {
    let mut resolved = None;
    for key in PATH_KEYS {
        let Some(Value::String(text)) = input.get(*key) else {
            continue;
        };
        let Some(leads) = leads_to(Path::new(text), cwd.map(Path::new)) else {
            continue;
        };
        resolved.get_or_insert_with(|| input.clone()).insert(
            (*key).to_owned(),
            Value::String(leads.display().to_string()),
        );
    }
    resolved
}

/// Where `path` leads when a symbolic link on its way (or at its end) makes that another place
/// than its text: the longest part of it that exists, canonicalized, with the rest after it.
fn leads_to(path: &Path, cwd: Option<&Path>) -> Option<PathBuf> {
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        let cwd = cwd.filter(|cwd| cwd.is_absolute())?;
        cwd.join(path)
    };
    let written = crate::rules::paths::normalized(&absolute);
    let leads = follow(&written, 40)?;
    (leads != written).then_some(leads)
}

/// `written` (absolute, normalized) with its links resolved; `links` bounds how many dangling
/// links are followed by hand (a loop of them leads nowhere: `None`).
fn follow(written: &Path, links: usize) -> Option<PathBuf> {
    let existing = written
        .ancestors()
        .find(|part| part.symlink_metadata().is_ok())?;
    let rest = written.strip_prefix(existing).ok()?;
    let canonical = match std::fs::canonicalize(existing) {
        Ok(canonical) => canonical,
        // A dangling link (to a file not made yet: writing through it makes the file): where
        // it points, followed by hand.
        Err(_) if links > 0 => {
            let target = std::fs::read_link(existing).ok()?;
            let folder = existing.parent().unwrap_or(Path::new("/"));
            let target = crate::rules::paths::normalized(&folder.join(target));
            follow(&target, links - 1)?
        }
        Err(_) => return None,
    };
    // `join("")` would end the path with a `/`.
    Some(if rest.as_os_str().is_empty() {
        canonical
    } else {
        canonical.join(rest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_link_on_the_way_or_at_the_end_is_followed_and_a_plain_path_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        std::os::unix::fs::symlink(".claude", root.join("cl")).unwrap();
        std::os::unix::fs::symlink(".claude/settings.json", root.join("innocent.json")).unwrap();
        let cwd = root.to_str().unwrap();
        let input = |path: &str| {
            json!({"file_path": path, "content": "x"})
                .as_object()
                .unwrap()
                .clone()
        };

        let through = resolved_args(&input("cl/settings.json"), Some(cwd)).unwrap();
        assert_eq!(
            through["file_path"],
            json!(root.join(".claude/settings.json"))
        );
        assert_eq!(through["content"], "x");
        // A new file under a linked folder.
        let new = resolved_args(&input("cl/new/x.json"), Some(cwd)).unwrap();
        assert_eq!(new["file_path"], json!(root.join(".claude/new/x.json")));
        let end = resolved_args(&input(&format!("{cwd}/innocent.json")), None).unwrap();
        assert_eq!(end["file_path"], json!(root.join(".claude/settings.json")));
        // A dangling link: writing through it makes the file it names.
        std::os::unix::fs::symlink(".mcp.json", root.join("dangling.json")).unwrap();
        let dangling = resolved_args(&input("dangling.json"), Some(cwd)).unwrap();
        assert_eq!(dangling["file_path"], json!(root.join(".mcp.json")));
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        assert!(resolved_args(&input("loop"), Some(cwd)).is_none());
        // Paths with no link on the way are judged as written only.
        assert!(resolved_args(&input("src/main.rs"), Some(cwd)).is_none());
        assert!(resolved_args(&input(".claude/settings.json"), Some(cwd)).is_none());
        assert!(
            resolved_args(&input("cl/x"), None).is_none(),
            "relative, no cwd"
        );
    }
}
