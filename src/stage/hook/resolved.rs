//! Where a file tool's path leads on the file system. The `paths` rules and the sandbox's places
//! judge a path by its text; a symbolic link the agent made (`ln -s .claude cl`, in a confined
//! call) would carry a `Write cl/settings.json` past them. sc-hook, which sees the file system,
//! gives the decision the path with its links resolved as well, and the stricter answer wins
//! ([`crate::rules::decision::CallContext::resolved`]).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::rules::paths::Leads;

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
/// than its text: resolved as the kernel does, one component at a time, a link's target put in
/// its place before what follows it, and `..` taken after the links before it are followed (so
/// `a/s/../x`, with `a/s` a link, is the folder above where `a/s` leads, not `a/x`). A dangling
/// link is followed too: writing through it makes the file it names.
fn leads_to(path: &Path, cwd: Option<&Path>) -> Option<PathBuf> {
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        let cwd = cwd.filter(|cwd| cwd.is_absolute())?;
        cwd.join(path)
    };
    let written = crate::rules::paths::normalized(&absolute);
    let leads = follow(&absolute, 40)?;
    (leads != written).then_some(leads)
}

/// The most directory entries a shell command's wildcards are matched against when sc-hook looks
/// for the symbolic links they may lead through: past it the path may lead anywhere.
const MAX_LISTED: usize = 10_000;

/// Where a shell command's path (absolute, as the rules placed it, `..` not folded) leads
/// through symbolic links ([`crate::rules::paths::Links`]): each place other than the path as
/// written. With `wild` (bash expands its `*`, `?` and `[`), each name the wildcards match in the
/// folders they stand in is followed, and the word as written too (what bash keeps when nothing
/// matches); more than [`MAX_LISTED`] entries listed: it may lead anywhere. A loop of links leads
/// nowhere (the command reads nothing through it).
pub(super) fn places_behind(path: &Path, wild: bool) -> Leads {
    let mut candidates = vec![path.to_owned()];
    if wild {
        match expand(path) {
            Ok(found) => candidates.extend(found),
            Err(why) => return Leads::Unknown(why),
        }
    }
    let mut places: Vec<PathBuf> = Vec::new();
    for candidate in candidates {
        let written = crate::rules::paths::normalized(&candidate);
        if let Some(leads) = follow(&candidate, 40).filter(|leads| *leads != written) {
            if !places.contains(&leads) {
                places.push(leads);
            }
        }
    }
    Leads::Elsewhere(places)
}

/// The names an absolute path's wildcards match, one folder level at a time as bash expands
/// them; a dot-file is matched too (bash would need `.*`), which only adds places to judge.
fn expand(path: &Path) -> Result<Vec<PathBuf>, String> {
    use std::path::Component;
    let mut found = vec![PathBuf::from("/")];
    let mut listed = 0usize;
    for part in path.components() {
        let name = match part {
            Component::RootDir | Component::Prefix(_) => continue,
            Component::CurDir => continue,
            Component::ParentDir => std::ffi::OsStr::new(".."),
            Component::Normal(name) => name,
        };
        let text = name.to_string_lossy();
        let matcher = has_wildcard(&text)
            .then(|| {
                globset::GlobBuilder::new(&text)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .ok()
            })
            .flatten()
            .map(|glob| glob.compile_matcher());
        let Some(matcher) = matcher else {
            // A part without a wildcard (or one bash would keep as it is written).
            for place in &mut found {
                place.push(name);
            }
            continue;
        };
        let mut next = Vec::new();
        for folder in &found {
            let Ok(entries) = std::fs::read_dir(folder) else {
                continue;
            };
            for entry in entries.flatten() {
                listed += 1;
                if listed > MAX_LISTED {
                    return Err(format!(
                        "its wildcards match among more than {MAX_LISTED} names, more than sc-hook lists to find where they lead"
                    ));
                }
                let file = entry.file_name();
                if matcher.is_match(Path::new(&file)) {
                    next.push(folder.join(&file));
                }
            }
        }
        found = next;
        if found.is_empty() {
            break;
        }
    }
    Ok(found)
}

fn has_wildcard(text: &str) -> bool {
    text.bytes().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// `path` (absolute) with every symbolic link on it resolved; `links` bounds how many are
/// followed (a loop leads nowhere: `None`). A part that does not exist is kept as written.
fn follow(path: &Path, mut links: usize) -> Option<PathBuf> {
    use std::collections::VecDeque;
    use std::path::Component;
    let mut out = PathBuf::from("/");
    let mut todo: VecDeque<std::ffi::OsString> = VecDeque::new();
    let push_front = |todo: &mut VecDeque<std::ffi::OsString>, path: &Path| {
        for part in path.components().rev() {
            match part {
                Component::RootDir => todo.push_front("/".into()),
                Component::CurDir | Component::Prefix(_) => {}
                Component::ParentDir => todo.push_front("..".into()),
                Component::Normal(name) => todo.push_front(name.to_owned()),
            }
        }
    };
    push_front(&mut todo, path);
    while let Some(part) = todo.pop_front() {
        if part == "/" {
            out = PathBuf::from("/");
            continue;
        }
        if part == ".." {
            // `out` holds no links, so its parent is where `..` leads.
            out.pop();
            continue;
        }
        let next = out.join(&part);
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                // `/proc/self/cwd`, `/dev/fd/N` and the like lead somewhere else in the process
                // that writes than in this one: not followed, the path is judged from there
                // (outside the root, which the pack holds).
                if next.starts_with("/proc") || next.starts_with("/dev/fd") {
                    let mut rest = next;
                    rest.extend(todo.iter().filter(|part| *part != "/"));
                    return Some(rest);
                }
                links = links.checked_sub(1)?;
                let target = std::fs::read_link(&next).ok()?;
                push_front(&mut todo, &target);
            }
            _ => out = next,
        }
    }
    Some(out)
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
        // `..` after a link is taken where the link leads, as the kernel does.
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::os::unix::fs::symlink("../src", root.join("a/s")).unwrap();
        std::os::unix::fs::symlink("a/s/../cl/settings.local.json", root.join("x")).unwrap();
        let dotdot = resolved_args(&input("x"), Some(cwd)).unwrap();
        assert_eq!(
            dotdot["file_path"],
            json!(root.join(".claude/settings.local.json"))
        );
        let written = resolved_args(&input("a/s/../cl/settings.local.json"), Some(cwd)).unwrap();
        assert_eq!(
            written["file_path"],
            json!(root.join(".claude/settings.local.json"))
        );
        // A link through /proc/self is not followed in this process: judged from there.
        std::os::unix::fs::symlink("/proc/self/cwd/cl/settings.json", root.join("w")).unwrap();
        let proc_self = resolved_args(&input("w"), Some(cwd)).unwrap();
        assert_eq!(
            proc_self["file_path"],
            json!("/proc/self/cwd/cl/settings.json")
        );
        // Paths with no link on the way are judged as written only.
        assert!(resolved_args(&input("src/main.rs"), Some(cwd)).is_none());
        assert!(resolved_args(&input(".claude/settings.json"), Some(cwd)).is_none());
        assert!(
            resolved_args(&input("cl/x"), None).is_none(),
            "relative, no cwd"
        );
    }

    #[test]
    fn a_command_s_path_is_followed_through_links_and_wildcards() {
        let dir = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(dir.path()).unwrap();
        let (home, proj) = (top.join("home"), top.join("proj"));
        std::fs::create_dir_all(home.join(".aws")).unwrap();
        std::fs::write(home.join(".aws/credentials"), "key").unwrap();
        std::fs::create_dir_all(proj.join("src")).unwrap();
        std::fs::write(proj.join("src/main.rs"), "fn main() {}").unwrap();
        std::os::unix::fs::symlink(home.join(".aws"), proj.join("cloud")).unwrap();
        let leads = |path: &str, wild: bool| places_behind(&proj.join(path), wild);
        let secret = home.join(".aws/credentials");

        assert_eq!(
            leads("cloud/credentials", false),
            Leads::Elsewhere(vec![secret.clone()])
        );
        // `..` is taken after the link before it, as the kernel does.
        assert_eq!(
            leads("cloud/../.aws/credentials", false),
            Leads::Elsewhere(vec![secret.clone()])
        );
        // A wildcard that matches the link, and one under it.
        assert_eq!(
            leads("cl*/credentials", true),
            Leads::Elsewhere(vec![secret.clone()])
        );
        assert_eq!(
            leads("cloud/*", true),
            Leads::Elsewhere(vec![home.join(".aws/*"), secret.clone()])
        );
        // Unexpanded (quoted), the same word names a file called `cl*`: no link on its way.
        assert_eq!(leads("cl*/credentials", false), Leads::Elsewhere(vec![]));
        assert_eq!(leads("src/*.rs", true), Leads::Elsewhere(vec![]));
        assert_eq!(leads("src/main.rs", false), Leads::Elsewhere(vec![]));
        // A loop leads nowhere: the command reads nothing through it.
        std::os::unix::fs::symlink("loop", proj.join("loop")).unwrap();
        assert_eq!(leads("loop/x", false), Leads::Elsewhere(vec![]));
        // More names than sc-hook lists: it may lead anywhere.
        let many = proj.join("many");
        std::fs::create_dir_all(&many).unwrap();
        for n in 0..=MAX_LISTED {
            std::fs::write(many.join(n.to_string()), "").unwrap();
        }
        assert!(matches!(leads("many/*", true), Leads::Unknown(_)));
        assert_eq!(leads("many/1", false), Leads::Elsewhere(vec![]));
    }
}
