//! Which mounts make the policy's `sandbox` paths true, worked out on the real file tree before
//! bubblewrap runs.
//!
//! Mounts are placed on canonical paths, so a symlink anywhere leads to the same mount: writing
//! `.claude/settings.json` through a link to it meets the read-only mount. Three tricks keep a
//! protected path protected where its folder is writable:
//! - a path that does not exist yet is blocked at its first missing component (an empty
//!   read-only file or folder mounted there), so it cannot be created;
//! - every folder on the way to a protected path inside a writable folder is bound onto itself
//!   (a pin): a mount point cannot be renamed or removed, so `mv .git .git2` cannot swap the
//!   protected `.git/hooks` for a new one;
//! - a symbolic link on the way, itself in a writable folder, could be replaced by a real folder;
//!   that is refused ([`SandboxError::SymlinkInWritable`]) rather than left open.

use std::path::{Path, PathBuf};

use super::walk::{Resolved, Walker};
use super::SandboxError;
use super::{git, sockets};
use crate::rules::policy::Policy;
use crate::rules::sandbox::{NetworkRules, SandboxPath, SandboxRules};

/// Folders bubblewrap makes anew inside (a private `/tmp` and `/run`, `/dev`, `/proc`): what the
/// host has there is not seen, so nothing there needs protecting.
pub const PRIVATE: &[&str] = &["/tmp", "/run", "/dev", "/proc"];

/// Made anew inside too when it is a folder of its own rather than the usual link to `/run`:
/// services put their sockets there.
pub const VAR_RUN: &str = "/var/run";

/// What the gate's own file that is hidden as well as read-only is called (the `what` of
/// [`super::run::own_files`]).
pub const SECRET_OWN_FILE: &str = "audit key";
/// What the runs' locks and records are called among the gate's own files: hidden too.
pub const HIDDEN_OWN_FOLDER: &str = "the sandbox's runs";

/// What one mount does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MountKind {
    /// The root or a `writable` folder, bound read-write.
    Writable,
    /// A folder on the way to a protected path, bound onto itself so it cannot be renamed.
    Pin,
    /// A `readOnly` path or one of the gate's own files, bound read-only.
    ReadOnly,
    /// The first missing component of a protected path: an empty read-only file.
    BlockFile,
    /// The first missing component of a protected path with more after it: an empty read-only
    /// folder.
    BlockDir,
    /// A hidden folder: an empty read-only tmpfs.
    HiddenDir,
    /// A hidden file: an empty read-only file.
    HiddenFile,
    /// A repository's `info` folder as git inside sees it ([`git::GitView`]): a read-only copy
    /// with lines that keep the stand-ins out of commits.
    GitInfo,
}

/// One mount, on a canonical path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub kind: MountKind,
    pub path: PathBuf,
}

/// A mount point sc-sandbox creates on the host before the run (where a protected path's first
/// missing component is blocked) and removes after it, when it is still empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    pub path: PathBuf,
    pub dir: bool,
    /// What a file placeholder holds (empty, but for a git `commondir`: [`git::COMMONDIR_SELF`]).
    pub contents: &'static [u8],
    /// Which file it is once made; `None` while only planned (or recorded before this was).
    pub made: Option<Made>,
}

/// Which file or folder a placeholder is: its device, inode and, where the file system keeps
/// one, its birth time. A user's own empty file put at a placeholder's path (after removing it
/// during a run, or after a killed run left it) is another file, and is neither taken for a
/// stand-in nor removed (a review found both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Made {
    pub dev: u64,
    pub ino: u64,
    /// Nanoseconds since the epoch; `None` where the file system keeps no birth time.
    pub born: Option<u128>,
}

impl Made {
    pub fn of(meta: &std::fs::Metadata) -> Made {
        use std::os::unix::fs::MetadataExt;
        Made {
            dev: meta.dev(),
            ino: meta.ino(),
            born: meta
                .created()
                .ok()
                .and_then(|born| born.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|since| since.as_nanos()),
        }
    }

    /// Whether `meta` is of this file (the birth time compared where both have one: an inode
    /// number is reused as soon as it is free).
    pub fn is(&self, meta: &std::fs::Metadata) -> bool {
        let now = Made::of(meta);
        now.dev == self.dev
            && now.ino == self.ino
            && match (now.born, self.born) {
                (Some(now), Some(then)) => now == then,
                _ => true,
            }
    }
}

impl Placeholder {
    /// Whether the placeholder is there as it is made: a folder with nothing in it, a file
    /// holding what it is made with, and, once made, the same file.
    pub fn is_as_made(&self) -> bool {
        let path = &self.path;
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return false;
        };
        if self.made.is_some_and(|made| !made.is(&meta)) {
            return false;
        }
        if self.dir {
            meta.is_dir()
                && std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
        } else {
            meta.is_file()
                && meta.len() == self.contents.len() as u64
                && super::walk::open_regular(path).is_ok_and(|file| {
                    use std::io::Read;
                    let mut held = Vec::new();
                    file.take(self.contents.len() as u64 + 1)
                        .read_to_end(&mut held)
                        .is_ok_and(|_| held == self.contents)
                })
        }
    }
}

/// A sandbox worked out for one root: its mounts, in the order bubblewrap must make them, and its
/// network rules.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
    network: NetworkRules,
    mounts: Vec<Mount>,
    placeholders: Vec<Placeholder>,
    /// Other runs' placeholders this run found as made and stands on.
    stands_on: Vec<Placeholder>,
    /// What git inside sees of the repositories the stand-ins are in.
    git_views: Vec<git::GitView>,
    /// Whether `/var/run` is a folder (not a link to `/run`), made anew inside.
    var_run: bool,
}

/// How writes to a place fare inside, judged by the deepest mount above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Writable,
    ReadOnly,
    /// Not the host's: a private folder, or inside a hidden one.
    Private,
}

impl Sandbox {
    /// The sandbox of a policy's `sandbox` key (or the defaults without one) at `root` (an
    /// existing folder) with `home` for `~`, protecting the gate's `own` files (path, what).
    pub fn from_policy(
        policy: &Policy,
        root: &Path,
        home: Option<&Path>,
        own: &[(PathBuf, String)],
    ) -> Result<Sandbox, SandboxError> {
        Sandbox::from_policy_among(policy, root, home, own, &[])
    }

    /// [`Sandbox::from_policy`] beside other runs, whose placeholders (`others`,
    /// recorded by [`super::sharing`]) this plan finds made: git inside keeps them out of a
    /// commit as it does this run's own (a second run's `git add -A` committed the first's
    /// empty `.mcp.json`, found by a review).
    pub fn from_policy_among(
        policy: &Policy,
        root: &Path,
        home: Option<&Path>,
        own: &[(PathBuf, String)],
        others: &[Placeholder],
    ) -> Result<Sandbox, SandboxError> {
        let rules = policy.sandbox().cloned().unwrap_or_default();
        let state = crate::cli::default_state_folder().ok();
        Sandbox::remembering(&rules, root, home, own, state.as_deref(), others)
    }

    /// [`Sandbox::from_policy`] from the rules themselves, remembering nothing.
    pub fn new(
        rules: &SandboxRules,
        root: &Path,
        home: Option<&Path>,
        own: &[(PathBuf, String)],
    ) -> Result<Sandbox, SandboxError> {
        Sandbox::remembering(rules, root, home, own, None, &[])
    }

    /// [`Sandbox::new`], hiding too the places a link on the way to a hidden one led to in an
    /// earlier plan of the same root, remembered in the `state` folder ([`super::remembered`]),
    /// and taking `others`, the placeholders other runs made, for the stand-ins
    /// they are where they are found as made.
    pub fn remembering(
        rules: &SandboxRules,
        root: &Path,
        home: Option<&Path>,
        own: &[(PathBuf, String)],
        state_folder: Option<&Path>,
        others: &[Placeholder],
    ) -> Result<Sandbox, SandboxError> {
        let place_err = |what: &str, path: &Path, why: String| SandboxError::Place {
            what: what.to_owned(),
            path: path.to_owned(),
            why,
        };
        let root = std::fs::canonicalize(root)
            .map_err(|err| place_err("the root", root, err.to_string()))?;
        if !root.is_dir() || root == Path::new("/") {
            return Err(place_err(
                "the root",
                &root,
                "must be a folder other than /".into(),
            ));
        }
        let place = |entry: &SandboxPath, key: &str| {
            entry
                .place(&root, home)
                .ok_or_else(|| SandboxError::NoHome {
                    entry: format!("{key} entry \"{entry}\""),
                })
        };
        // The places remembered for the root ([`super::remembered`]) are the gate's own too:
        // read-only inside, whichever door runs the sandbox, so that no confined call can make
        // a later one forget (a review wrote them with `writable: ["~/.local"]`).
        let mut own = own.to_vec();
        if let Some(state) = state_folder {
            own.push((
                super::remembered::folder(state)?,
                "the sandbox's remembered places".to_owned(),
            ));
        }
        // The audit key seals the log, verdicts and approvals: the program must not read it
        // either, so it is hidden, not only read-only.
        let secret_own: Vec<PathBuf> = own
            .iter()
            .filter(|(_, what)| what == SECRET_OWN_FILE || what == HIDDEN_OWN_FOLDER)
            .map(|(path, _)| absolute(path))
            .collect();
        let own: Vec<PathBuf> = own.iter().map(|(path, _)| absolute(path)).collect();
        let mut entries: Vec<(PathBuf, State)> = PRIVATE
            .iter()
            .map(|p| (PathBuf::from(p), State::Private))
            .collect();
        let var_run = std::fs::symlink_metadata(VAR_RUN).is_ok_and(|meta| meta.is_dir());
        if var_run {
            entries.push((PathBuf::from(VAR_RUN), State::Private));
        }
        let mut mounts = vec![Mount {
            kind: MountKind::Writable,
            path: root.clone(),
        }];
        entries.push((root.clone(), State::Writable));
        // A home folder inside a folder the sandbox makes anew (`/tmp`, `/run`) would not be
        // seen at all: bind it back read-only, as `/` shows every other home folder.
        if let Some(home) = home.map(absolute).filter(|home| home.is_dir()) {
            if state(&entries, &home, true) == State::Private {
                entries.push((home.clone(), State::ReadOnly));
                mounts.push(Mount {
                    kind: MountKind::ReadOnly,
                    path: home,
                });
            }
        }
        // One walker for every path of the plan: they share their folders.
        let mut walker = Walker::default();
        for entry in &rules.writable {
            if let Resolved::Exists(path) =
                walker.resolve(&place(entry, "writable")?, &mut |_, _| Ok(()))?
            {
                if path == Path::new("/") {
                    return Err(place_err(
                        "the writable entry",
                        &path,
                        "is the whole file system".into(),
                    ));
                }
                if own.iter().any(|own| path.starts_with(own)) {
                    continue;
                }
                entries.push((path.clone(), State::Writable));
                mounts.push(Mount {
                    kind: MountKind::Writable,
                    path,
                });
            }
        }
        let mut hidden = Vec::new();
        let mut listed = Listed::new();
        for entry in &rules.hidden {
            let path = place(entry, "hidden")?;
            if entry.is_pattern() {
                hidden.extend(matching(&mut walker, &mut listed, &path)?);
            } else {
                hidden.push(path);
            }
        }
        hidden.extend(secret_own);
        let remembered = match state_folder {
            Some(folder) => super::remembered::recall(folder, &root)?,
            None => Vec::new(),
        };
        // Those still there: the memory only grows, and places long gone must not count toward
        // the bound below and refuse the root for good (a review).
        hidden.extend(
            remembered
                .iter()
                .filter(|place| std::fs::symlink_metadata(place).is_ok())
                .cloned(),
        );
        // Bounded before the work that grows with it: bubblewrap refuses the run near 5,000
        // mounts anyway, and planning 30,000 planted `*.pem` took 91 s under the lock every run
        // of the user waits on (a review). Refused, the call is asked about instead.
        within_bound(&root, hidden.len(), Bound::Hidden)?;
        // The places a link on the way led to, to be remembered.
        let mut led_to = Vec::new();
        // The files whose stand-ins git must not take for the real thing.
        let mut stand_ins = Vec::new();
        for placed in &hidden {
            if let Resolved::Exists(path) = walker.resolve(placed, &mut |_, _| Ok(()))? {
                if path != *placed {
                    led_to.push(path.clone());
                }
                if state(&entries, &path, true) == State::Private {
                    continue;
                }
                let kind = if path.is_dir() {
                    MountKind::HiddenDir
                } else {
                    stand_ins.push(path.clone());
                    MountKind::HiddenFile
                };
                entries.push((path.clone(), State::Private));
                // A folder on the way is pinned: renamed (`mv config old`), it would take the
                // hidden file out of the place the next sandbox hides (found by a review).
                pin(&entries, &mut mounts, &path);
                mounts.push(Mount { kind, path });
            }
        }
        if let Some(folder) = state_folder {
            super::remembered::remember(folder, &root, &remembered, &led_to)?;
        }
        // The host's unix sockets the program could still see: a read-only mount does not stop
        // connect(); an empty file over each does.
        for socket in sockets::host_sockets() {
            if let Resolved::Exists(path) = walker.resolve(&socket, &mut |_, _| Ok(()))? {
                if state(&entries, &path, true) != State::Private {
                    entries.push((path.clone(), State::Private));
                    mounts.push(Mount {
                        kind: MountKind::HiddenFile,
                        path,
                    });
                }
            }
        }
        let mut protected = Vec::new();
        for entry in &rules.read_only {
            protected.push(place(entry, "readOnly")?);
        }
        // A `readOnly` path under `.git`: every file by which git finds config and hooks too.
        let git = git::protected(&protected);
        protected.extend(git.paths);
        protected.extend(own);
        // Bounded as the hidden places are, before the work that grows with them: 12,000 empty
        // folders a confined program made in `.git/worktrees` took 43 s to plan under the lock
        // every run of the user waits on (a review).
        within_bound(&root, protected.len(), Bound::Protected)?;
        // First pass: where the protected paths are, so that the second judges every folder
        // with all read-only mounts known.
        let mut read_only = Vec::new();
        for path in &protected {
            if let Resolved::Exists(target) = walker.resolve(path, &mut |_, _| Ok(()))? {
                read_only.push((target, State::ReadOnly));
            }
        }
        let before = entries.clone();
        entries.extend(read_only);
        let mut placeholders = Vec::new();
        for path in &protected {
            let mut check_link = |link: &Path, folder: &Path| {
                if state(&entries, folder, true) == State::Writable {
                    return Err(SandboxError::SymlinkInWritable {
                        path: path.clone(),
                        link: link.to_owned(),
                    });
                }
                Ok(())
            };
            let (target, kind) = match walker.resolve(path, &mut check_link)? {
                Resolved::Exists(target) => {
                    if state(&before, &target, true) != State::Writable {
                        continue;
                    }
                    (target, MountKind::ReadOnly)
                }
                Resolved::Missing { first, more } => {
                    let parent = first.parent().unwrap_or(Path::new("/"));
                    if state(&entries, parent, true) != State::Writable {
                        continue;
                    }
                    // Several protected paths may be missing from the same component
                    // (`.git/hooks` and `.git/config` where there is no `.git`): one
                    // placeholder blocks them all.
                    if placeholders.iter().any(|p: &Placeholder| p.path == first) {
                        continue;
                    }
                    // git dies on an empty `commondir`: that one holds `.`, bound read-only
                    // onto itself.
                    let commondir = !more
                        && git.commondirs.contains(path)
                        && first.file_name() == path.file_name();
                    placeholders.push(Placeholder {
                        path: first.clone(),
                        dir: more,
                        contents: if commondir { git::COMMONDIR_SELF } else { b"" },
                        made: None,
                    });
                    let kind = if more {
                        MountKind::BlockDir
                    } else if commondir {
                        MountKind::ReadOnly
                    } else {
                        MountKind::BlockFile
                    };
                    (first, kind)
                }
            };
            pin(&entries, &mut mounts, &target);
            mounts.push(Mount { kind, path: target });
        }
        // Other runs' placeholders (recorded by [`super::sharing`]) found as they were made:
        // stand-ins here too, which git inside keeps out of a commit (a folder is nothing to
        // git), and read-only where this run could write them, whatever its own policy
        // protects. A second run, or one under a smaller policy, committed them, or removed
        // them and so took the other run's mounts away (found by reviews).
        // Those of other roots count where this run could reach them: in its root, in the
        // repository around it (whose `git add -A` would take them), or where it may write (a
        // run rooted inside another, or sharing a writable `~`). This run stands on them:
        // recorded as its own, no run removes them while it runs.
        let mut others_found = Vec::new();
        let mut stands_on = Vec::new();
        let work_tree = git::work_tree_of(&root);
        for other in others {
            let path = &other.path;
            let writable = state(&entries, path, true) == State::Writable;
            // In a folder this run may write, whether or not it protects the place itself.
            let reached = path.starts_with(&root)
                || work_tree.as_ref().is_some_and(|top| path.starts_with(top))
                || state(&entries, path, false) == State::Writable;
            if !reached || stands_on.contains(other) {
                continue;
            }
            // Stood on whether or not it is as made now: a folder placeholder with a host's
            // temporary file in it, emptied again later, was removed under this run's mount
            // (a review). Removal still takes only the file made, and only empty.
            stands_on.push(other.clone());
            if !other.is_as_made() {
                continue;
            }
            if !other.dir {
                others_found.push(path.clone());
            }
            let mounted = mounts.iter().any(|mount| &mount.path == path);
            if !mounted && writable {
                pin(&entries, &mut mounts, path);
                mounts.push(Mount {
                    kind: MountKind::ReadOnly,
                    path: path.clone(),
                });
            }
        }
        stand_ins.extend(
            placeholders
                .iter()
                .filter(|placeholder| !placeholder.dir)
                .map(|placeholder| placeholder.path.clone())
                .chain(others_found),
        );
        let git_views = git_views(&stand_ins, &entries, &mut mounts, &mut placeholders);
        Ok(Sandbox {
            root,
            network: rules.network.clone(),
            mounts: ordered(mounts),
            placeholders,
            stands_on,
            git_views,
            var_run,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn network(&self) -> &NetworkRules {
        &self.network
    }

    /// The mounts, shallow before deep, so each deeper one lands on top.
    pub fn mounts(&self) -> &[Mount] {
        &self.mounts
    }

    pub fn placeholders(&self) -> &[Placeholder] {
        &self.placeholders
    }

    /// What git inside sees of the repositories the stand-ins are in; each is mounted by a
    /// [`MountKind::GitInfo`] at its `info`.
    /// Other runs' placeholders (`others`) found as made, that this run stands on: as stand-ins
    /// for git, read-only where it could write them.
    pub fn stands_on(&self) -> &[Placeholder] {
        &self.stands_on
    }

    pub fn git_views(&self) -> &[git::GitView] {
        &self.git_views
    }

    /// Whether the sandbox shows the host's file at `path` (canonical) as it is: not in a folder
    /// made anew inside, nor under a hidden path or a block.
    pub fn shows_host_file(&self, path: &Path) -> bool {
        if !path.is_absolute() {
            return false;
        }
        // The deepest place that decides what is at `path` inside: a folder made anew, or a
        // mount (a deeper one lands on top; at one depth, a mount is made after the folder).
        let depth = |place: &Path| place.components().count();
        let private = PRIVATE
            .iter()
            .chain(self.var_run.then_some(&VAR_RUN))
            .map(Path::new)
            .filter(|folder| path.starts_with(folder))
            .map(depth)
            .max();
        let mount = self
            .mounts
            .iter()
            .filter(|mount| path.starts_with(&mount.path))
            .max_by_key(|mount| depth(&mount.path));
        match (mount, private) {
            (Some(mount), Some(private)) if depth(&mount.path) < private => false,
            (Some(mount), _) => matches!(
                mount.kind,
                MountKind::Writable | MountKind::Pin | MountKind::ReadOnly
            ),
            (None, private) => private.is_none(),
        }
    }

    /// Whether `/var/run` is made anew inside (it is a folder, not a link to `/run`).
    pub fn private_var_run(&self) -> bool {
        self.var_run
    }
}

/// Binds each folder on the way to `target` that sits in a writable folder onto itself, so that
/// it cannot be renamed away.
fn pin(entries: &[(PathBuf, State)], mounts: &mut Vec<Mount>, target: &Path) {
    for folder in target.ancestors().skip(1) {
        let Some(parent) = folder.parent() else { break };
        let mounted = entries.iter().any(|(path, _)| path == folder);
        if !mounted && state(entries, parent, true) == State::Writable {
            mounts.push(Mount {
                kind: MountKind::Pin,
                path: folder.to_owned(),
            });
        }
    }
}

/// The most places one sandbox keeps read-only (`readOnly` entries, the git files they bring
/// in, among them each linked worktree's and submodule's, and the gate's own files).
pub const MAX_PROTECTED: usize = 2_000;

/// The most places one sandbox hides (patterns' matches, named places, remembered ones).
pub const MAX_HIDDEN: usize = 2_000;

/// The two lists of places a plan bounds before the work that grows with them.
#[derive(Clone, Copy)]
enum Bound {
    Hidden,
    Protected,
}

/// Refuses a plan with more places of one kind than [`MAX_HIDDEN`] or [`MAX_PROTECTED`].
fn within_bound(root: &Path, count: usize, bound: Bound) -> Result<(), SandboxError> {
    let (what, doing, max) = match bound {
        Bound::Hidden => ("the hidden places", "to hide", MAX_HIDDEN),
        Bound::Protected => ("the read-only places", "to keep read-only", MAX_PROTECTED),
    };
    if count <= max {
        return Ok(());
    }
    Err(SandboxError::Place {
        what: what.to_owned(),
        path: root.to_owned(),
        why: format!("{count} places {doing}, over the {max} a sandbox takes"),
    })
}

/// The names in each folder a hidden pattern was matched in (canonical), listed once per plan:
/// the pack matches three patterns in the root.
type Listed = std::collections::HashMap<PathBuf, Vec<std::ffi::OsString>>;

/// The entries of a folder whose names match the pattern that ends `pattern` (a `hidden` place
/// such as `/work/p/*.pem`), in the folder as it is now, sorted; none when the folder is not
/// there. A folder that cannot be listed fails the plan: a secret in it would be shown.
fn matching(
    walker: &mut Walker,
    listed: &mut Listed,
    pattern: &Path,
) -> Result<Vec<PathBuf>, SandboxError> {
    let (Some(placed), Some(name)) = (pattern.parent(), pattern.file_name()) else {
        return Ok(Vec::new());
    };
    let refused = |why: String| SandboxError::Place {
        what: "a hidden pattern's folder".into(),
        path: placed.to_owned(),
        why,
    };
    // Checked as a glob when the policy loaded; matched as the `paths` rules match a name
    // (no regular expression is built: this runs at every confined call's start).
    let pattern = name.to_string_lossy();
    let Resolved::Exists(folder) = walker.resolve(placed, &mut |_, _| Ok(()))? else {
        return Ok(Vec::new());
    };
    let names = match listed.entry(folder.clone()) {
        std::collections::hash_map::Entry::Occupied(names) => names.into_mut(),
        std::collections::hash_map::Entry::Vacant(slot) => {
            let entries = match std::fs::read_dir(&folder) {
                Ok(entries) => entries,
                Err(err) if err.kind() == std::io::ErrorKind::NotADirectory => {
                    return Ok(Vec::new())
                }
                Err(err) => return Err(refused(err.to_string())),
            };
            let mut names = Vec::new();
            for entry in entries {
                names.push(entry.map_err(|err| refused(err.to_string()))?.file_name());
            }
            names.sort();
            slot.insert(names)
        }
    };
    // As placed (through any link on the way, which the caller resolves and remembers).
    Ok(names
        .iter()
        .filter(|name| crate::rules::paths::name_matches(&pattern, name))
        .map(|name| placed.join(name))
        .collect())
}

/// The git views of the stand-ins (hidden files, file placeholders) that are in repositories
/// ([`git::views`]), each replacing what the plan mounted at or under its `info` folder (the
/// view is read-only as a whole). A missing `info` folder gets a placeholder, as a protected
/// path's does; one that cannot be made or mounted on (not a folder, in a folder the program
/// cannot write) gets no view.
fn git_views(
    stand_ins: &[PathBuf],
    entries: &[(PathBuf, State)],
    mounts: &mut Vec<Mount>,
    placeholders: &mut Vec<Placeholder>,
) -> Vec<git::GitView> {
    let mut kept = Vec::new();
    for view in git::views(stand_ins) {
        let info = &view.info;
        let missing = match std::fs::symlink_metadata(info) {
            Ok(meta) if meta.is_dir() => false,
            Ok(_) => continue,
            Err(_) => {
                let parent = info.parent().unwrap_or(Path::new("/"));
                if !parent.is_dir() || state(entries, parent, true) != State::Writable {
                    continue;
                }
                true
            }
        };
        mounts.retain(|mount| !mount.path.starts_with(info));
        placeholders.retain(|placeholder| !placeholder.path.starts_with(info));
        if missing {
            placeholders.push(Placeholder {
                path: info.clone(),
                dir: true,
                contents: b"",
                made: None,
            });
        }
        pin(entries, mounts, info);
        mounts.push(Mount {
            kind: MountKind::GitInfo,
            path: info.clone(),
        });
        kept.push(view);
    }
    kept
}

/// Shallow before deep; at one path, the strongest kind alone (a read-only or hidden mount over a
/// writable one).
fn ordered(mut mounts: Vec<Mount>) -> Vec<Mount> {
    mounts.sort_by(|a, b| {
        let depth = |m: &Mount| m.path.components().count();
        depth(a)
            .cmp(&depth(b))
            .then_with(|| a.path.cmp(&b.path))
            .then_with(|| b.kind.cmp(&a.kind))
    });
    mounts.dedup_by(|later, kept| later.path == kept.path);
    mounts
}

/// The state of `path` under the deepest entry at or above it (`/` alone: read-only).
fn state(entries: &[(PathBuf, State)], path: &Path, include_self: bool) -> State {
    entries
        .iter()
        .filter(|(at, _)| path.starts_with(at) && (include_self || at != path))
        .max_by_key(|(at, _)| at.components().count())
        .map_or(State::ReadOnly, |(_, state)| *state)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::sandbox::from_json;
    use std::os::unix::fs::symlink;

    fn rules(json: serde_json::Value) -> SandboxRules {
        from_json("sandbox", &json).unwrap()
    }

    fn kinds(sandbox: &Sandbox, root: &Path) -> Vec<(MountKind, String)> {
        // Only what is under the root: the host's own sockets elsewhere are hidden too.
        sandbox
            .mounts()
            .iter()
            .filter(|m| m.path.starts_with(root))
            .map(|m| {
                let shown = m.path.strip_prefix(root).map_or_else(
                    |_| m.path.display().to_string(),
                    |p| format!("./{}", p.display()),
                );
                (m.kind, shown)
            })
            .collect()
    }

    #[test]
    fn protected_paths_are_read_only_pinned_or_blocked() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::write(root.join(".env"), "SECRET=1").unwrap();
        let rules = rules(serde_json::json!({
            "readOnly": [".claude", ".git/hooks", ".github/workflows"],
            "hidden": [".env", "missing-secret"]
        }));
        let own = [(root.join("logs/audit.jsonl"), "audit log".to_owned())];
        let sandbox = Sandbox::new(&rules, &root, None, &own).unwrap();
        let s = |k: MountKind, p: &str| (k, p.to_owned());
        assert_eq!(
            kinds(&sandbox, &root),
            vec![
                s(MountKind::Writable, "./"),
                s(MountKind::ReadOnly, "./.claude"),
                s(MountKind::HiddenFile, "./.env"),
                s(MountKind::Pin, "./.git"),
                s(MountKind::BlockDir, "./.github"),
                s(MountKind::BlockDir, "./logs"),
                // A `.git` path is protected: so is every way git finds config and hooks.
                s(MountKind::ReadOnly, "./.git/commondir"),
                s(MountKind::BlockFile, "./.git/config"),
                s(MountKind::BlockFile, "./.git/config.worktree"),
                s(MountKind::ReadOnly, "./.git/hooks"),
                // The hidden `.env` is in a repository: git inside sees its `info` folder
                // with lines that keep the stand-in out of commits.
                s(MountKind::GitInfo, "./.git/info"),
                s(MountKind::BlockDir, "./.git/objects"),
            ]
        );
        let placeholder = |path: &str, dir: bool, contents: &'static [u8]| Placeholder {
            path: root.join(path),
            dir,
            contents,
            made: None,
        };
        assert_eq!(
            sandbox.placeholders(),
            &[
                placeholder(".github", true, b""),
                placeholder(".git/config", false, b""),
                placeholder(".git/config.worktree", false, b""),
                placeholder(".git/commondir", false, b".\n"),
                placeholder(".git/objects", true, b""),
                placeholder("logs", true, b""),
                placeholder(".git/info", true, b""),
            ]
        );
        assert_eq!(sandbox.git_views().len(), 1);
        assert_eq!(sandbox.git_views()[0].info, root.join(".git/info"));
        assert_eq!(sandbox.git_views()[0].exclude, b"/.env\n");
    }

    #[test]
    fn links_lead_to_the_protected_target_and_a_replaceable_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let elsewhere = std::fs::canonicalize(outside.path()).unwrap();
        std::fs::write(elsewhere.join("settings.json"), "{}").unwrap();
        symlink(&elsewhere, root.join(".claude")).unwrap();
        let read_only = rules(serde_json::json!({"readOnly": [".claude/settings.json"]}));
        let err = Sandbox::new(&read_only, &root, None, &[]).unwrap_err();
        assert!(
            matches!(err, SandboxError::SymlinkInWritable { .. }),
            "{err}"
        );
        // Through a link in a folder the program cannot write, the target is protected (when it
        // is writable) and nothing is refused.
        let home = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(home.path()).unwrap();
        symlink(root.join("dotfiles/bashrc"), home.join(".bashrc")).unwrap();
        std::fs::create_dir(root.join("dotfiles")).unwrap();
        let bashrc = rules(serde_json::json!({"readOnly": ["~/.bashrc"]}));
        let sandbox = Sandbox::new(&bashrc, &root, Some(&home), &[]).unwrap();
        assert!(sandbox.mounts().contains(&Mount {
            kind: MountKind::BlockFile,
            path: root.join("dotfiles/bashrc")
        }));
    }

    #[test]
    fn the_host_file_is_shown_unless_private_hidden_or_blocked() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("secret")).unwrap();
        std::fs::create_dir_all(root.join("bin")).unwrap();
        let rules = rules(serde_json::json!({"hidden": ["secret"], "readOnly": ["bin"]}));
        let sandbox = Sandbox::new(&rules, &root, None, &[]).unwrap();
        assert!(sandbox.shows_host_file(Path::new("/usr/bin/env")));
        assert!(sandbox.shows_host_file(&root.join("bin/sc-sandbox")));
        assert!(sandbox.shows_host_file(&root.join("target/sc-sandbox")));
        assert!(!sandbox.shows_host_file(&root.join("secret/sc-sandbox")));
        assert!(!sandbox.shows_host_file(Path::new("/tmp/sc-sandbox")));
        assert!(!sandbox.shows_host_file(Path::new("/run/x/sc-sandbox")));
        assert!(!sandbox.shows_host_file(Path::new("relative")));
        // A root under /tmp (which is made anew) is bound in: its files are shown, and its
        // hidden places are not.
        let under_tmp = tempfile::tempdir().unwrap();
        let tmp_root = std::fs::canonicalize(under_tmp.path()).unwrap();
        std::fs::create_dir_all(tmp_root.join("secret")).unwrap();
        std::fs::create_dir_all(tmp_root.join("bin")).unwrap();
        if tmp_root.starts_with("/tmp") {
            let sandbox = Sandbox::new(&rules, &tmp_root, None, &[]).unwrap();
            assert!(sandbox.shows_host_file(&tmp_root.join("bin/sc-sandbox")));
            assert!(sandbox.shows_host_file(&tmp_root.join("x/sc-sandbox")));
            assert!(!sandbox.shows_host_file(&tmp_root.join("secret/sc-sandbox")));
            assert!(!sandbox.shows_host_file(Path::new("/tmp/elsewhere/sc-sandbox")));
        }
    }

    #[test]
    fn more_places_to_keep_read_only_than_a_sandbox_takes_refuse_the_plan() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let hooks = rules(serde_json::json!({"readOnly": [".git/hooks"]}));
        std::fs::create_dir_all(root.join(".git/worktrees")).unwrap();
        assert!(Sandbox::new(&hooks, &root, None, &[]).is_ok());
        // Linked worktrees' git dirs, made by a confined program: each brings its files in.
        for i in 0..MAX_PROTECTED {
            std::fs::create_dir(root.join(format!(".git/worktrees/w{i}"))).unwrap();
        }
        let err = Sandbox::new(&hooks, &root, None, &[]).unwrap_err();
        assert!(
            err.to_string().contains("places to keep read-only"),
            "{err}"
        );
    }

    #[test]
    fn more_places_to_hide_than_a_sandbox_takes_refuse_the_plan() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let patterns = rules(serde_json::json!({"hidden": ["*.pem"]}));
        for i in 0..MAX_HIDDEN {
            std::fs::write(root.join(format!("f{i}.pem")), "").unwrap();
        }
        // At the bound, planned.
        assert!(Sandbox::new(&patterns, &root, None, &[]).is_ok());
        // One more (planted by a confined program, say), refused rather than planned for
        // minutes under the lock every run waits on.
        std::fs::write(root.join("one-more.pem"), "").unwrap();
        let err = Sandbox::new(&patterns, &root, None, &[]).unwrap_err();
        assert!(err.to_string().contains("places to hide"), "{err}");
    }

    #[test]
    fn a_hidden_pattern_hides_each_entry_of_its_folder_that_matches_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("config/.env.d")).unwrap();
        for file in [
            "server.pem",
            "b.pem",
            "a.pem.txt",
            "config/.env.staging",
            "config/x.pem",
        ] {
            std::fs::write(root.join(file), "SECRET").unwrap();
        }
        let patterns = rules(serde_json::json!({
            "hidden": ["*.pem", "config/.env.*", "none/*.pem", "server.pem/*"]
        }));
        let sandbox = Sandbox::new(&patterns, &root, None, &[]).unwrap();
        assert_eq!(
            kinds(&sandbox, &root)
                .into_iter()
                .filter(|(kind, _)| matches!(kind, MountKind::HiddenFile | MountKind::HiddenDir))
                .collect::<Vec<_>>(),
            vec![
                (MountKind::HiddenFile, "./b.pem".to_owned()),
                (MountKind::HiddenFile, "./server.pem".to_owned()),
                (MountKind::HiddenDir, "./config/.env.d".to_owned()),
                (MountKind::HiddenFile, "./config/.env.staging".to_owned()),
            ]
        );
        // The folder on the way is pinned, once: renamed, it would take them out of view.
        let pins: Vec<_> = kinds(&sandbox, &root)
            .into_iter()
            .filter(|(kind, _)| *kind == MountKind::Pin)
            .collect();
        assert_eq!(pins, vec![(MountKind::Pin, "./config".to_owned())]);
        // A folder that cannot be listed fails the plan: a secret in it would be shown.
        std::fs::create_dir(root.join("locked")).unwrap();
        std::fs::set_permissions(
            root.join("locked"),
            std::os::unix::fs::PermissionsExt::from_mode(0o300),
        )
        .unwrap();
        let locked = rules(serde_json::json!({"hidden": ["locked/*.pem"]}));
        let listed = std::fs::read_dir(root.join("locked")).is_ok();
        let planned = Sandbox::new(&locked, &root, None, &[]);
        // Root lists any folder: the refusal is seen only where the kernel refuses.
        assert_eq!(planned.is_ok(), listed, "{:?}", planned.err());
    }

    #[test]
    fn a_place_a_link_led_to_stays_hidden_once_the_link_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("proj");
        let state = dir.path().join("state");
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::create_dir_all(root.join("conf.d")).unwrap();
        std::fs::write(root.join("secrets/real.env"), "KEY=1").unwrap();
        std::fs::write(root.join("conf.d/server.key"), "KEY").unwrap();
        std::os::unix::fs::symlink("secrets/real.env", root.join(".env")).unwrap();
        std::os::unix::fs::symlink("conf.d", root.join("config")).unwrap();
        let rules = rules(serde_json::json!({"hidden": [".env", "config/*.key"]}));
        let hidden = |sandbox: &Sandbox| -> Vec<String> {
            kinds(sandbox, &root)
                .into_iter()
                .filter(|(kind, _)| *kind == MountKind::HiddenFile)
                .map(|(_, path)| path)
                .collect()
        };
        let expected = ["./conf.d/server.key", "./secrets/real.env"];
        let first = Sandbox::remembering(&rules, &root, None, &[], Some(&state), &[]).unwrap();
        assert_eq!(hidden(&first), expected);
        // A confined call removes both links; the next plan of the root hides the same.
        std::fs::remove_file(root.join(".env")).unwrap();
        std::fs::remove_file(root.join("config")).unwrap();
        let next = Sandbox::remembering(&rules, &root, None, &[], Some(&state), &[]).unwrap();
        assert_eq!(hidden(&next), expected);
        // Without the state folder, nothing is remembered: the two are shown.
        assert!(hidden(&Sandbox::new(&rules, &root, None, &[]).unwrap()).is_empty());
        // A place no longer there is not hidden (and nothing fails).
        std::fs::remove_file(root.join("secrets/real.env")).unwrap();
        let gone = Sandbox::remembering(&rules, &root, None, &[], Some(&state), &[]).unwrap();
        assert_eq!(hidden(&gone), ["./conf.d/server.key"]);
        // Many places remembered and gone since do not count toward the bound.
        let many: Vec<PathBuf> = (0..=MAX_HIDDEN)
            .map(|i| root.join(format!("gone-{i}.key")))
            .collect();
        super::super::remembered::remember(&state, &root, &[], &many).unwrap();
        let after = Sandbox::remembering(&rules, &root, None, &[], Some(&state), &[]).unwrap();
        assert_eq!(hidden(&after), ["./conf.d/server.key"]);
    }

    #[test]
    fn home_entries_need_a_home_and_the_root_must_be_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let err = Sandbox::new(
            &rules(serde_json::json!({"hidden": ["~/.ssh"]})),
            dir.path(),
            None,
            &[],
        )
        .unwrap_err();
        assert!(err.to_string().contains("hidden entry \"~/.ssh\""), "{err}");
        let err = Sandbox::new(
            &SandboxRules::default(),
            &dir.path().join("nope"),
            None,
            &[],
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("the root"), "{err}");
        let err = Sandbox::new(&SandboxRules::default(), Path::new("/"), None, &[]).unwrap_err();
        assert!(err.to_string().contains("other than /"), "{err}");
    }
}
