//! Where a file tool's path leads on the file system. The `paths` rules and the sandbox's places
//! judge a path by its text; a symbolic link the agent made (`ln -s .claude cl`, in a confined
//! call) would carry a `Write cl/settings.json` past them. sc-hook, which sees the file system,
//! gives the decision the path with its links resolved as well, and the stricter answer wins
//! ([`crate::rules::decision::CallContext::resolved`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::rules::paths::Leads;

/// The keys of Claude Code's file tools that name a file.
const PATH_KEYS: &[&str] = &["file_path", "notebook_path", "path", "files"];

/// The tool input with each file path resolved through its symbolic links, when one of them
/// leads elsewhere than its text says; `None` when none does (or none can be placed: a relative
/// path with no absolute `cwd`). A key may hold a path or a list of paths (a search's `path`s,
/// the files of a patch): each path of a list is resolved.
pub(super) fn resolved_args(
    input: &Map<String, Value>,
    cwd: Option<&str>,
) -> Option<Map<String, Value>> {
    let mut resolved = None;
    let lead = |text: &str| {
        leads_to(Path::new(text), cwd.map(Path::new))
            .map(|leads| Value::String(leads.display().to_string()))
    };
    for key in PATH_KEYS {
        let value = match input.get(*key) {
            Some(Value::String(text)) => lead(text),
            Some(Value::Array(items)) => {
                let leads: Vec<Option<Value>> = items
                    .iter()
                    .map(|item| item.as_str().and_then(lead))
                    .collect();
                leads.iter().any(Option::is_some).then(|| {
                    let each = items.iter().zip(leads);
                    Value::Array(
                        each.map(|(item, led)| led.unwrap_or(item.clone()))
                            .collect(),
                    )
                })
            }
            _ => None,
        };
        if let Some(value) = value {
            resolved
                .get_or_insert_with(|| input.clone())
                .insert((*key).to_owned(), value);
        }
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
    // The tool runs in the agent's process, whose working directory is the call's `cwd`.
    let leads = match follow(&absolute, 40, cwd.filter(|cwd| cwd.is_absolute()))? {
        Followed::Leads(leads) => leads,
        // Judged from where it stopped, by its text (a write there is outside the root).
        Followed::Anywhere(stopped) => stopped,
        Followed::Here => return None,
    };
    (leads != written).then_some(leads)
}

/// The most directory entries a shell command's wildcards are matched against when sc-hook looks
/// for the symbolic links they may lead through: past it the path may lead anywhere.
const MAX_LISTED: usize = 50_000;

/// Where a shell command's path (absolute, as the rules placed it, `..` not folded) leads
/// through symbolic links ([`crate::rules::paths::Links`]): each place other than the path as
/// written. With `wild` (bash expands its `*`, `?` and `[`), each name the wildcards match in the
/// folders they stand in is followed, and the word as written too (what bash keeps when nothing
/// matches); more than [`MAX_LISTED`] entries listed: it may lead anywhere. A loop of links leads
/// nowhere (the command reads nothing through it).
pub(super) fn places_behind(path: &Path, wild: bool, listings: &Listings) -> Leads {
    let mut candidates = vec![path.to_owned()];
    if wild {
        match expand(path, listings) {
            Ok(found) => candidates.extend(found),
            Err(why) => return Leads::Unknown(why),
        }
    }
    let mut places: Vec<PathBuf> = Vec::new();
    for candidate in candidates {
        let written = crate::rules::paths::normalized(&candidate);
        let leads = match follow(&candidate, 40, None) {
            None | Some(Followed::Here) => continue,
            Some(Followed::Leads(leads)) => leads,
            // A process's working directory or open file used as a folder (`/proc/self/cwd`,
            // `/dev/fd/3/x`): a place this process cannot see as the command will.
            Some(Followed::Anywhere(stopped)) => {
                return Leads::Unknown(format!(
                    "it leads through \"{}\", a folder of the process that uses it",
                    stopped.display()
                ))
            }
        };
        if leads != written && !places.contains(&leads) {
            places.push(leads);
        }
    }
    Leads::Elsewhere(places)
}

/// Whether a place is there ([`crate::rules::paths::Links::present`]): `lstat` finds it, or
/// fails with anything but "not found" (a folder it cannot search may hold it: fail closed).
/// With a pattern of `names`: whether the folder `path` holds an entry whose name matches it,
/// listed (a folder that cannot be listed holds one).
pub(super) fn present(path: &Path, names: Option<&str>) -> bool {
    let unless_missing = |err: std::io::Error| {
        !matches!(
            err.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
        )
    };
    let Some(names) = names else {
        return std::fs::symlink_metadata(path).map_or_else(unless_missing, |_| true);
    };
    match std::fs::read_dir(path) {
        Ok(mut entries) => entries.any(|entry| {
            entry.map_or(true, |entry| {
                crate::rules::paths::name_matches(names, &entry.file_name())
            })
        }),
        Err(err) => unless_missing(err),
    }
}

/// The most entries of a copied tree listed ([`tree`]): past it, the copy may write any file.
const MAX_TREE: usize = 10_000;

/// What the folder `path` holds, to the bottom ([`crate::rules::paths::Links::tree`]): the
/// paths of its entries that are not folders, relative to it, its links not followed (a copy
/// copies a link as a link, and the link is judged where it lands). A file copies no tree (an
/// empty list: the copy is judged by its destination's name). A folder that is missing (the
/// command may make it before the copy), cannot be read, holds over [`MAX_TREE`] entries, or is
/// a process's own (`/proc`, `/dev/fd`, as this process would see them) cannot be listed.
pub(super) fn tree(path: &Path) -> Result<Vec<PathBuf>, String> {
    let process = [Path::new("/proc"), Path::new("/dev")];
    if process
        .iter()
        .any(|place| crate::rules::paths::normalized(path).starts_with(place))
    {
        return Err("it is a folder of a process, seen otherwise by the command".to_owned());
    }
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_dir() => return Ok(Vec::new()),
        Ok(_) => {}
        Err(err) => return Err(format!("\"{}\": {err}", path.display())),
    }
    let mut files = Vec::new();
    let mut folders = vec![PathBuf::new()];
    let mut listed = 0usize;
    while let Some(folder) = folders.pop() {
        let at = path.join(&folder);
        let unreadable = |err: std::io::Error| format!("\"{}\": {err}", at.display());
        for entry in std::fs::read_dir(&at).map_err(unreadable)? {
            let entry = entry.map_err(unreadable)?;
            listed += 1;
            if listed > MAX_TREE {
                return Err(format!("it holds over {MAX_TREE} entries"));
            }
            let relative = folder.join(entry.file_name());
            if entry.file_type().map_err(unreadable)?.is_dir() {
                folders.push(relative);
            } else {
                files.push(relative);
            }
        }
    }
    Ok(files)
}

/// The most names listed and matched for all of one call's wildcards together: past it, a path
/// may lead anywhere (a command of a thousand wildcards over a big folder would otherwise take
/// seconds).
const MAX_LISTED_IN_A_CALL: usize = 200_000;

/// The folders one call's wildcards were matched in, each read once for the whole call.
pub(super) struct Listings {
    folders: std::cell::RefCell<HashMap<PathBuf, std::rc::Rc<Vec<OsString>>>>,
    listed: std::cell::Cell<usize>,
    budget: usize,
    per_path: usize,
}

impl Default for Listings {
    fn default() -> Listings {
        Listings::with_limits(MAX_LISTED, MAX_LISTED_IN_A_CALL)
    }
}

impl Listings {
    fn with_limits(per_path: usize, budget: usize) -> Listings {
        Listings {
            folders: Default::default(),
            listed: Default::default(),
            budget,
            per_path,
        }
    }

    /// One more name listed or matched in this call; an error past the call's budget.
    fn count(&self) -> Result<(), String> {
        let listed = self.listed.get() + 1;
        self.listed.set(listed);
        if listed > self.budget {
            return Err(format!(
                "the call's wildcards match among more than {} names, more than sc-hook lists to find where they lead",
                self.budget
            ));
        }
        Ok(())
    }

    /// The names in `folder` (none when it cannot be read), read once.
    fn of(&self, folder: &Path) -> Result<std::rc::Rc<Vec<OsString>>, String> {
        if let Some(names) = self.folders.borrow().get(folder) {
            return Ok(names.clone());
        }
        let mut names = Vec::new();
        match std::fs::read_dir(folder) {
            Ok(entries) => {
                for entry in entries.flatten() {
                    self.count()?;
                    names.push(entry.file_name());
                }
            }
            // Not there, not a folder, or not readable: bash finds nothing in it either.
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::NotFound
                        | std::io::ErrorKind::NotADirectory
                        | std::io::ErrorKind::PermissionDenied
                ) => {}
            Err(err) => {
                return Err(format!(
                    "sc-hook cannot list \"{}\" to find where its wildcards lead: {err}",
                    folder.display()
                ))
            }
        }
        let names = std::rc::Rc::new(names);
        self.folders
            .borrow_mut()
            .insert(folder.to_owned(), names.clone());
        Ok(names)
    }
}

/// The names an absolute path's wildcards match, one folder level at a time as bash expands
/// them; a dot-file is matched too (bash would need `.*`), which only adds places to judge.
fn expand(path: &Path, listings: &Listings) -> Result<Vec<PathBuf>, String> {
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
        if !has_wildcard(&text) {
            for place in &mut found {
                place.push(name);
            }
            continue;
        }
        let matches = part_matcher(&text);
        let mut next = Vec::new();
        for folder in &found {
            for file in listings.of(folder)?.iter() {
                listings.count()?;
                listed += 1;
                if listed > listings.per_path {
                    return Err(format!(
                        "its wildcards match among more than {} names, more than sc-hook lists to find where they lead",
                        listings.per_path
                    ));
                }
                if file == name || matches(file) {
                    next.push(folder.join(file));
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

/// Whether a name may be one that a part of a path with wildcards matches, erring towards yes:
/// the rules do not say which of its characters were quoted (`'docs[1]'/cl*`), nor is a folder
/// the call's `cwd` names a pattern (`p[1]`), so the name as written matches too (the caller
/// checks), the part is read with and without `\` escaping, braces are plain characters (bash
/// expands them before), and a part no glob reads (`[` unclosed) matches every name.
fn part_matcher(text: &str) -> impl Fn(&std::ffi::OsStr) -> bool {
    let braces_plain = text.replace('{', "[{]").replace('}', "[}]");
    let globs: Vec<globset::GlobMatcher> = [true, false]
        .into_iter()
        .filter_map(|escape| {
            globset::GlobBuilder::new(&braces_plain)
                .literal_separator(true)
                .backslash_escape(escape)
                .build()
                .ok()
        })
        .map(|glob| glob.compile_matcher())
        .collect();
    move |name: &std::ffi::OsStr| globs.is_empty() || globs.iter().any(|glob| glob.is_match(name))
}

fn has_wildcard(text: &str) -> bool {
    text.bytes().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// Where [`follow`] took a path.
#[derive(Debug, PartialEq, Eq)]
enum Followed {
    /// Every link on it resolved.
    Leads(PathBuf),
    /// Through a link of a process in `/proc` (its working directory; an open file, with more
    /// of the path after it): where that leads is the using process's, not this one's.
    Anywhere(PathBuf),
    /// It ends at a process's open file (`/dev/stderr`): judged by its text.
    Here,
}

/// `path` (absolute) with every symbolic link on it resolved; `links` bounds how many are
/// followed (a loop leads nowhere: `None`). A part that does not exist is kept as written.
/// `/proc/self` and `/proc/thread-self` are followed in this process (the using process's are
/// shaped alike, so `..` after them goes where it goes there); a process's `root` is `/`; the
/// using process's own `cwd` is `cwd` when the caller knows it (a file tool's), and any other
/// process's `cwd`, or a path on past an open file (`/dev/fd/3/x`), may lead anywhere. These
/// are known by their place in `/proc`, not by what this process finds there.
fn follow(path: &Path, mut links: usize, cwd: Option<&Path>) -> Option<Followed> {
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
    // This process's folder in `/proc`, once the path went through `/proc/self`: what the using
    // process sees there as its own.
    let mut own: Option<PathBuf> = None;
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
        // A process's (or thread's) `root` is the root the using process sees: this one's,
        // outside a sandbox, so what follows it is followed from `/`.
        if is_proc_root(&next) {
            out = PathBuf::from("/");
            continue;
        }
        // A process's working directory and open files, known by their place, whether or not
        // such a process runs now (a command's own `cat` gets a PID of its own).
        let rest_empty = todo.iter().all(|part| part == "/");
        let stopped = |next: PathBuf, todo: &VecDeque<std::ffi::OsString>| {
            let mut stopped = next;
            stopped.extend(todo.iter().filter(|part| *part != "/"));
            Some(Followed::Anywhere(stopped))
        };
        if is_proc_cwd(&next) {
            // Only the using process's own (reached through `/proc/self`) is the call's `cwd`.
            match cwd.filter(|_| own.as_ref().is_some_and(|own| next.starts_with(own))) {
                Some(cwd) => {
                    links = links.checked_sub(1)?;
                    push_front(&mut todo, cwd);
                    out = PathBuf::from("/");
                    continue;
                }
                None => return stopped(next, &todo),
            }
        }
        if is_proc_open_file(&next) {
            // The using process's own (`/dev/stderr`), ending there: judged by its text.
            // Another process's may be any file or folder it holds open.
            let owned = own.as_ref().is_some_and(|own| next.starts_with(own));
            if rest_empty && owned {
                return Some(Followed::Here);
            }
            return stopped(next, &todo);
        }
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links = links.checked_sub(1)?;
                let target = std::fs::read_link(&next).ok()?;
                if next == Path::new("/proc/self") || next == Path::new("/proc/thread-self") {
                    own = Some(PathBuf::from(format!("/proc/{}", std::process::id())));
                }
                push_front(&mut todo, &target);
            }
            Ok(_) => out = next,
            // What does not exist (or is under a file) is kept as written: nothing there leads
            // elsewhere. Any other failure (a path longer than the kernel looks up at once,
            // which it still walks a part at a time) may hide a link.
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                out = next
            }
            Err(_) => return stopped(next, &todo),
        }
    }
    Some(Followed::Leads(out))
}

/// Whether `path` is a process's or a thread's working directory in `/proc`
/// (`/proc/PID/cwd`, `/proc/PID/task/TID/cwd`).
fn is_proc_cwd(path: &Path) -> bool {
    proc_entry_is(path, "cwd")
}

/// Whether `path` is one of a process's (or thread's) open files or mapped files in `/proc`, or
/// its program: `/proc/PID/fd/N`, `/proc/PID/map_files/R`, `/proc/PID/exe` (and under
/// `/proc/PID/task/TID/`).
fn is_proc_open_file(path: &Path) -> bool {
    proc_entry_is(path, "exe")
        || path
            .parent()
            .is_some_and(|folder| proc_entry_is(folder, "fd") || proc_entry_is(folder, "map_files"))
}

/// Whether `path` is a process's or a thread's root in `/proc`: `/proc/PID/root`,
/// `/proc/self/root`, `/proc/thread-self/root`, `/proc/PID/task/TID/root`.
fn is_proc_root(path: &Path) -> bool {
    proc_entry_is(path, "root")
}

/// Whether `path` is `/proc/X/NAME` or `/proc/X/task/Y/NAME`.
fn proc_entry_is(path: &Path, name: &str) -> bool {
    let parts: Vec<&std::ffi::OsStr> = path.iter().collect();
    match parts.as_slice() {
        [root, proc, _, last] => *root == "/" && *proc == "proc" && *last == name,
        [root, proc, _, task, _, last] => {
            *root == "/" && *proc == "proc" && *task == "task" && *last == name
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_place_is_absent_only_when_the_kernel_says_it_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".env"), "KEY=1").unwrap();
        std::fs::create_dir(root.join(".envrc")).unwrap();
        std::os::unix::fs::symlink("nowhere", root.join(".env.local")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        // A file, a folder and a dangling link are there.
        for there in [".env", ".envrc", ".env.local"] {
            assert!(present(&root.join(there), None), "{there}");
        }
        // Not found, or under a file: not there.
        assert!(!present(&root.join(".env.production"), None));
        assert!(!present(&root.join(".env/x"), None));
        // Any other error (a loop of links on the way) may hide it: there, failing closed.
        assert!(present(&root.join("loop/.env"), None));
        // A pattern of names: there when an entry of the folder matches it.
        assert!(present(root, Some(".env.*")));
        assert!(present(root, Some("*rc")));
        assert!(!present(root, Some("*.pem")));
        assert!(!present(&root.join("missing"), Some("*")));
        assert!(!present(&root.join(".env"), Some("*")));
        // A folder that cannot be listed (a loop) may hold one.
        assert!(present(&root.join("loop"), Some("*.pem")));
    }

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
        // A link through /proc/self/cwd leads, for a file tool, where the call's cwd does.
        std::os::unix::fs::symlink("/proc/self/cwd/cl/settings.json", root.join("w")).unwrap();
        let proc_self = resolved_args(&input("w"), Some(cwd)).unwrap();
        assert_eq!(
            proc_self["file_path"],
            json!(root.join(".claude/settings.json"))
        );
        // Paths with no link on the way are judged as written only.
        assert!(resolved_args(&input("src/main.rs"), Some(cwd)).is_none());
        assert!(resolved_args(&input(".claude/settings.json"), Some(cwd)).is_none());
        assert!(
            resolved_args(&input("cl/x"), None).is_none(),
            "relative, no cwd"
        );
        // A list of paths (a patch's files, a search's paths): each is followed, the others
        // kept as written; a list with no link on the way is judged as written only.
        let files = |paths: Value| json!({"files": paths}).as_object().unwrap().clone();
        let listed = resolved_args(
            &files(json!(["notes.txt", "cl/settings.json", 7])),
            Some(cwd),
        )
        .unwrap();
        assert_eq!(
            listed["files"],
            json!(["notes.txt", root.join(".claude/settings.json"), 7])
        );
        assert!(resolved_args(&files(json!(["notes.txt", "src/main.rs"])), Some(cwd)).is_none());
        let path = json!({"path": ["src", "cl"]}).as_object().unwrap().clone();
        assert_eq!(
            resolved_args(&path, Some(cwd)).unwrap()["path"],
            json!(["src", root.join(".claude")])
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
        // A call's listings are kept for the call; each check here is a call of its own, as the
        // folders change between them.
        let listings = Listings::default();
        let leads =
            |path: &str, wild: bool| places_behind(&proj.join(path), wild, &Listings::default());
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
        // A folder is listed once in a call: what a second wildcard over it finds is that list.
        let once = Listings::default();
        let before = places_behind(&proj.join("cl*/credentials"), true, &once);
        std::os::unix::fs::symlink(home.join(".aws"), proj.join("clone")).unwrap();
        assert_eq!(
            places_behind(&proj.join("cl*/credentials"), true, &once),
            before
        );
        assert_eq!(
            places_behind(&proj.join("cl*/credentials"), true, &Listings::default()),
            Leads::Elsewhere(vec![secret.clone()]),
            "the same place, once: both links lead to it"
        );
        std::fs::remove_file(proj.join("clone")).unwrap();
        // And a call lists so many names in all, then its paths may lead anywhere.
        let small = Listings::with_limits(MAX_LISTED, 2);
        assert!(matches!(
            places_behind(&proj.join("*/x"), true, &small),
            Leads::Unknown(why) if why.contains("more than 2 names")
        ));
        // More names than sc-hook lists: it may lead anywhere.
        let many = proj.join("many");
        std::fs::create_dir_all(&many).unwrap();
        for n in 0..=100 {
            std::fs::write(many.join(n.to_string()), "").unwrap();
        }
        let per_path = |path: &str| {
            places_behind(
                &proj.join(path),
                true,
                &Listings::with_limits(100, MAX_LISTED_IN_A_CALL),
            )
        };
        assert!(
            matches!(per_path("many/*"), Leads::Unknown(why) if why.contains("more than 100 names"))
        );
        assert_eq!(
            leads("many/*", true),
            Leads::Elsewhere(vec![]),
            "within the real limits"
        );
        assert_eq!(leads("many/1", false), Leads::Elsewhere(vec![]));

        // Found by a review. A brace no glob reads (bash keeps it as a character).
        std::os::unix::fs::symlink(home.join(".aws"), proj.join("n{")).unwrap();
        assert_eq!(
            leads("*{/credentials", true),
            Leads::Elsewhere(vec![secret.clone()])
        );
        // A quoted `[` (or one in the working directory's name) is a character, not a class.
        std::fs::create_dir_all(proj.join("docs[1]")).unwrap();
        std::os::unix::fs::symlink(home.join(".aws"), proj.join("docs[1]/cloud")).unwrap();
        assert_eq!(
            leads("docs[1]/cl*/credentials", true),
            Leads::Elsewhere(vec![secret.clone()])
        );
        // A backslash a quote kept, before a wildcard.
        std::os::unix::fs::symlink(home.join(".aws"), proj.join("a\\bk")).unwrap();
        assert_eq!(
            leads("a\\*k/credentials", true),
            Leads::Elsewhere(vec![secret.clone()])
        );
        // A link into /proc/self/root is followed from the root it names.
        let through_root = format!("/proc/self/root{}", home.join(".aws").display());
        std::os::unix::fs::symlink(&through_root, proj.join("pcloud")).unwrap();
        assert_eq!(
            leads("pcloud/credentials", false),
            Leads::Elsewhere(vec![secret.clone()])
        );
        // A process's working directory may be any folder.
        assert!(matches!(
            places_behind(
                Path::new("/proc/self/cwd/cloud/credentials"),
                false,
                &listings
            ),
            Leads::Unknown(_)
        ));
        std::os::unix::fs::symlink("/proc/self/cwd", proj.join("here")).unwrap();
        assert!(matches!(leads("here/x", false), Leads::Unknown(_)));
        // Found by a second review: `..` after /proc/thread-self or /dev/fd goes where the
        // kernel takes it, and an open folder used as a path may be any folder.
        let aws = home.join(".aws");
        for path in [
            format!("/proc/thread-self/../../root{}/credentials", aws.display()),
            format!("/dev/fd/../root{}/credentials", aws.display()),
            format!("/proc/self/task/../root{}/credentials", aws.display()),
        ] {
            assert_eq!(
                places_behind(Path::new(&path), false, &listings),
                Leads::Elsewhere(vec![secret.clone()]),
                "{path}"
            );
        }
        for path in [
            "/proc/thread-self/../../cwd/cloud/credentials",
            "/dev/fd/../cwd/cloud/credentials",
            "/dev/fd/3/cloud/credentials",
            "/proc/self/fd/0/x",
            "/dev/stdin/cloud/credentials",
        ] {
            assert!(
                matches!(
                    places_behind(Path::new(path), false, &listings),
                    Leads::Unknown(_)
                ),
                "{path}"
            );
        }
        std::os::unix::fs::symlink("/dev/fd/..", proj.join("pl")).unwrap();
        assert_eq!(
            leads(&format!("pl/root{}/credentials", aws.display()), false),
            Leads::Elsewhere(vec![secret.clone()])
        );
        // A file tool runs in the agent's process, whose working directory is the call's.
        let input = json!({"file_path": "/proc/self/cwd/cloud/credentials"});
        let through_cwd = resolved_args(input.as_object().unwrap(), proj.to_str()).unwrap();
        assert_eq!(through_cwd["file_path"], json!(secret));
        // Found by a third review: a process's cwd or open file is known by its place, whether
        // or not such a process runs now (each `cat` gets a PID of its own); only the using
        // process's own cwd is the call's; /proc/net is /proc/self/net.
        for path in [
            "/proc/999999999/cwd/../home/.aws/credentials",
            "/proc/self/task/999999999/cwd/x",
            "/proc/1/cwd/.aws/credentials",
            "/proc/1/fd/3/credentials",
            "/proc/999999999/fd/3/credentials",
            "/proc/1/map_files/1-2/x",
        ] {
            assert!(
                matches!(
                    places_behind(Path::new(path), false, &listings),
                    Leads::Unknown(_)
                ),
                "{path}"
            );
        }
        let input = json!({"file_path": "/proc/1/cwd/cloud/credentials"});
        let other = resolved_args(input.as_object().unwrap(), proj.to_str());
        assert_ne!(
            other.map(|args| args["file_path"].clone()),
            Some(json!(proj.join("cloud/credentials"))),
            "another process's cwd is not the call's"
        );
        assert!(!matches!(
            places_behind(Path::new("/proc/net/dev"), false, &listings),
            Leads::Unknown(_)
        ));
        // Found by a fourth review: a path the kernel walks a part at a time but this process
        // cannot look up at once (over 4096 bytes) may hide a link; another process's open
        // file may be any file.
        let long = format!("/tmp/{}/cloud/credentials", "a/".repeat(2100));
        assert!(matches!(
            places_behind(Path::new(&long), false, &listings),
            Leads::Unknown(_)
        ));
        assert!(matches!(
            places_behind(Path::new("/proc/1/fd/3"), false, &listings),
            Leads::Unknown(_)
        ));
        // What a command reads of its own process stays judged by its text.
        for plain in [
            "/proc/self/status",
            "/proc/cpuinfo",
            "/dev/null",
            "/dev/stderr",
        ] {
            assert!(
                !matches!(
                    places_behind(Path::new(plain), false, &listings),
                    Leads::Unknown(_)
                ),
                "{plain}"
            );
        }
    }
}
