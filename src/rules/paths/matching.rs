//! Whether a rule holds a placed path: a glob that matches it, a glob a wildcard in it may
//! meet, or a read glob's base it is a folder on the way to.

use std::path::{Component, Path};

use super::pattern::{parts_may_meet, parts_meet, Base, Part};
use super::rule::PathRule;
use super::CASE_INSENSITIVE;

/// A path as each base sees it: under the root, under the home (`None` where it is not).
#[derive(Clone, Copy)]
pub(super) struct Placing<'p> {
    pub path: &'p Path,
    pub in_root: Option<&'p Path>,
    pub in_home: Option<&'p Path>,
}

impl<'p> Placing<'p> {
    pub fn of(path: &'p Path, root: Option<&Path>, home: Option<&Path>) -> Placing<'p> {
        let under = |base: Option<&Path>| {
            base.filter(|_| path.is_absolute())
                .and_then(|base| path.strip_prefix(base).ok())
                .filter(|rest| !rest.as_os_str().is_empty())
        };
        let in_root = if path.is_absolute() {
            under(root)
        } else {
            Some(path)
        };
        Placing {
            path,
            in_root,
            in_home: under(home),
        }
    }
}

impl PathRule {
    /// The first glob of the rule that matches the path, as written (the path placed once for
    /// every rule: [`Placing::of`]).
    pub(super) fn matching(&self, placing: &Placing<'_>) -> Option<&str> {
        let Placing {
            path,
            in_root,
            in_home,
        } = *placing;
        // The first glob of the rule, in the order written, that matches.
        let mut first: Option<usize> = None;
        for literal in &self.literals {
            let candidate = match literal.base {
                Base::Root => in_root,
                Base::Home => in_home,
                Base::Absolute => path.is_absolute().then_some(path),
                Base::Anywhere => None,
            };
            if candidate.is_some_and(|candidate| literal.matches(candidate)) {
                first = Some(first.map_or(literal.index, |f| f.min(literal.index)));
            }
        }
        let Ok(compiled) = self.compiled() else {
            // The globs do not build as a set: the rule is taken to name every path.
            return self.globs.first().map(String::as_str);
        };
        for (base, set, members) in compiled {
            let candidate = match base {
                Base::Root => in_root,
                Base::Home => in_home,
                Base::Absolute => path.is_absolute().then_some(path),
                Base::Anywhere => Some(in_root.unwrap_or(path)),
            };
            // Most paths match nothing: `is_match` first, and the indices only for a hit.
            let hits_on = |p: &Path| set.is_match(p).then(|| set.matches(p));
            let hits = candidate
                .and_then(hits_on)
                .or_else(|| (*base == Base::Anywhere).then(|| hits_on(path)).flatten());
            if let Some(&hit) = hits.as_ref().and_then(|hits| hits.first()) {
                let index = members[hit];
                first = Some(first.map_or(index, |f| f.min(index)));
            }
        }
        first.map(|i| {
            self.globs
                .get(i)
                .map_or(self.globs[0].as_str(), String::as_str)
        })
    }

    /// The first glob (as written) that may match a name the parts of `word` (a path with a
    /// wildcard, [`word_parts`](super::pattern::word_parts)) match, as the shell expands it: each glob's parts, after the
    /// parts of the folder it is relative to (`heads`: the root's and the home's, when known),
    /// against the word's ([`parts_meet`]). A relative `word` (it cannot be placed) meets the
    /// globs relative to the root as they are written, and those from `**`, as
    /// [`PathRule::matching`] tries them.
    ///
    /// Cost: only for a path with a wildcard; a walk over the word's parts times the glob's,
    /// each pair a walk over their characters.
    pub(super) fn meeting(
        &self,
        word: &[Part],
        absolute: bool,
        (root, home): (Option<&[Part]>, Option<&[Part]>),
    ) -> Option<&str> {
        self.shapes()
            .iter()
            .find(|shape| {
                let head = match (shape.base, absolute) {
                    (Base::Anywhere, _) | (Base::Root, false) | (Base::Absolute, true) => &[][..],
                    (Base::Root, true) => match root {
                        Some(root) => root,
                        None => return false,
                    },
                    (Base::Home, true) => match home {
                        Some(home) => home,
                        None => return false,
                    },
                    (Base::Home | Base::Absolute, false) => return false,
                };
                parts_meet(word, head, &shape.parts)
            })
            .map(|shape| self.globs[shape.glob].as_str())
    }

    /// The first glob (as written) whose literal base `path` may be, or be a folder on the way
    /// to, with the folder a wildcard in the path cut it to, if it did. A read of `~`, `/home`
    /// or `/` may read `~/.ssh/id_rsa` (`rg -uuu . ~`, `tar czf x.tgz ~`,
    /// `find / -name id_rsa`). Which commands read a folder recursively is not known here (nor
    /// are their options), so every read counts: fail closed.
    ///
    /// An absolute path counts when it is the base or an ancestor of it (for `~/.ssh/**`: `~`,
    /// `/home`, `/` and `~/.ssh`, not `~/src` nor `~/.sshx`). A relative path that cannot be
    /// placed (the command changes directory, or the call gives no cwd) is an unknown folder
    /// joined to it, so it counts when it may line up with the base: `.` and `../…` always,
    /// else when its parts match a run of the base's parts, from any of them on (`.ssh`,
    /// `me/.ssh`, and past the base's end, `.aws/credentials`). Globs from `**/` have no base
    /// and are skipped: every folder is on the way to some `.env`. A base relative to a home or
    /// root the call does not give is skipped for an absolute path.
    ///
    /// Cost: the bases were found when the policy loaded. An absolute path is placed against the
    /// home and the root once (above, under or apart, by comparing bytes), then each base costs
    /// a comparison of bytes at most; a path apart from the home skips the home's bases.
    ///
    /// `writing`: the path is written (a copy into it, its rename or removal), so a base that is
    /// not there yet counts too, and the root and the home themselves, and the folders above
    /// them, are not folders on the way (`cp x .` is ordinary work); nor is a path that cannot be
    /// placed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn holding<'p>(
        &self,
        path: &'p Path,
        written_from: usize,
        wild: bool,
        root: Option<&Path>,
        home: Option<&Path>,
        present: Option<&super::place::Present<'_>>,
        writing: bool,
    ) -> Option<(&str, Option<&'p [u8]>)> {
        if self.read_bases.is_empty() {
            return None;
        }
        if writing {
            let above = |folder: Option<&Path>| folder.is_some_and(|f| f.starts_with(path));
            if !path.is_absolute() || above(root) || above(home) || path == Path::new("/") {
                return None;
            }
        }
        let present = present.filter(|_| !writing);
        if !path.is_absolute() {
            // The path's parts are read once for every base (a `Path`'s components are parsed
            // anew each time they are walked).
            let path_parts: Vec<Component> = path.components().collect();
            let mut base_parts: Vec<Component> = Vec::new();
            return self
                .read_bases
                .iter()
                .find(|base| {
                    let head = match base.base {
                        Base::Home => match home {
                            Some(home) => Some(home),
                            None => return false,
                        },
                        Base::Root => root,
                        Base::Absolute | Base::Anywhere => None,
                    };
                    base_parts.clear();
                    base_parts.extend(parts(head, &base.rel));
                    may_line_up(&path_parts, &base_parts, wild)
                })
                .map(|base| (self.globs[base.glob].as_str(), None));
        }
        // A wildcard in the path (`rg -uuu x /home/*`, `grep -r x /h*`) is expanded by the
        // shell into entries of the folder before it: that folder is what may be on the way.
        // Only the first bytes can matter (a longer folder is on the way to no base), so only
        // they are scanned, whatever the length of the argument.
        let length = |folder: Option<&Path>| folder.map_or(0, |f| f.as_os_str().len());
        let window = length(home).max(length(root)) + 1 + self.longest_base;
        let whole = path.as_os_str().as_encoded_bytes();
        let bytes = if wild {
            before_wildcard(whole, written_from, window)
        } else {
            whole
        };
        let from = |folder: Option<&Path>| {
            folder.map_or(Relation::Apart, |folder| {
                Relation::of(bytes, folder.as_os_str().as_encoded_bytes())
            })
        };
        let (to_home, to_root) = (from(home), from(root));
        // Where the door can look (sc-hook), a folder in the project on the way to a base in it
        // that is not there reads nothing the rule names: `Grep` of the project holds no `.env`
        // it does not have; nor a wildcard in it, which reads in the folder before it.
        // A folder above the root (`..` from it) keeps its hold: where the root is only the
        // working folder (no git work tree, no project folder given), the project may be above.
        let in_root = root.is_some_and(|root| path.starts_with(root));
        let absent = |base: &super::rule::ReadBase| {
            let Some(present) = present.filter(|_| in_root) else {
                return false;
            };
            // Only in the project: a home's secrets (`~/.ssh`) are asked about whether or not
            // they are there yet, as `rg -uuu . ~` is rare in honest work.
            let place = match base.base {
                Base::Root => root.map(|root| root.join(&base.rel)),
                Base::Home | Base::Absolute | Base::Anywhere => None,
            };
            place.is_some_and(|place| !present(&place, base.names.as_deref()))
        };
        self.read_bases
            .iter()
            .find(|base| {
                let rel = base.rel.as_os_str().as_encoded_bytes();
                let on_the_way = match base.base {
                    Base::Home => to_home.holds(rel),
                    Base::Root => to_root.holds(rel),
                    Base::Absolute => on_the_way(bytes, rel),
                    Base::Anywhere => false,
                };
                on_the_way && !absent(base)
            })
            .map(|base| {
                let cut = (bytes.len() < path.as_os_str().len()).then_some(bytes);
                (self.globs[base.glob].as_str(), cut)
            })
    }
}

/// Where an absolute path stands to a folder (both normalized).
#[derive(Clone, Copy)]
enum Relation<'p> {
    /// The path is the folder or a folder above it.
    Above,
    /// The path is under the folder: the rest of it, below the folder.
    Under(&'p [u8]),
    Apart,
}

impl<'p> Relation<'p> {
    fn of(path: &'p [u8], folder: &[u8]) -> Relation<'p> {
        if on_the_way(path, folder) {
            return Relation::Above;
        }
        if path.len() > folder.len() && same_bytes(&path[..folder.len()], folder) {
            if folder.last().is_some_and(|&b| is_separator(b)) {
                return Relation::Under(&path[folder.len()..]);
            }
            if is_separator(path[folder.len()]) {
                return Relation::Under(&path[folder.len() + 1..]);
            }
        }
        Relation::Apart
    }

    /// Whether the path is `rel` under the folder, or a folder on the way to it.
    fn holds(self, rel: &[u8]) -> bool {
        match self {
            Relation::Above => true,
            Relation::Under(rest) => on_the_way(rest, rel),
            Relation::Apart => false,
        }
    }
}

/// An absolute path's bytes cut before the part that holds the first wildcard (`*`, `?`, `[`, `{`)
/// among its bytes from `from` to `window`, `/` kept: `/home` for `/home/*`, `/` for `/h*`.
fn before_wildcard(path: &[u8], from: usize, window: usize) -> &[u8] {
    let scanned = &path[..path.len().min(window)];
    let Some(wildcard) = scanned.get(from..).and_then(|tail| {
        tail.iter()
            .position(|b| matches!(b, b'*' | b'?' | b'[' | b'{'))
    }) else {
        return path;
    };
    let cut = scanned[..from + wildcard]
        .iter()
        .rposition(|&b| is_separator(b))
        .unwrap_or(0);
    &path[..cut.max(1)]
}

/// Whether `path` is `target` or a folder above it, as normalized paths' bytes: a prefix of it
/// that ends at a separator (`/home` for `/home/me`, not `/ho`).
fn on_the_way(path: &[u8], target: &[u8]) -> bool {
    path.len() <= target.len()
        && same_bytes(path, &target[..path.len()])
        && (path.len() == target.len()
            || is_separator(target[path.len()])
            || path.last().is_some_and(|&b| is_separator(b)))
}

fn is_separator(byte: u8) -> bool {
    byte == b'/' || (cfg!(windows) && byte == b'\\')
}

/// Bytes of two paths compared as the globs compare them (without regard to ASCII case where
/// the file system usually does).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if CASE_INSENSITIVE {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// The parts of `head` joined with `rel`.
fn parts<'a>(head: Option<&'a Path>, rel: &'a Path) -> impl Iterator<Item = Component<'a>> + Clone {
    head.into_iter()
        .flat_map(Path::components)
        .chain(rel.components())
}

/// Two parts of paths are the same (without regard to ASCII case where globs match that way).
fn same(a: Component, b: Component) -> bool {
    if CASE_INSENSITIVE {
        a.as_os_str().eq_ignore_ascii_case(b.as_os_str())
    } else {
        a == b
    }
}

/// Whether a relative path joined to an unknown folder may be a folder on the way to `base`,
/// `base` itself or a file under it ([`PathRule::holding`]).
/// A part with a wildcard (`wild`: the path has one) counts when it may match the base's part
/// (`cd && cat .ss?/id_rsa`).
fn may_line_up(path: &[Component], base: &[Component], wild: bool) -> bool {
    if matches!(path.first(), None | Some(Component::ParentDir)) {
        return true;
    }
    (0..base.len()).any(|from| {
        path.iter()
            .zip(&base[from..])
            .all(|(&part, &other)| same(part, other) || (wild && parts_may_meet(part, other)))
    })
}

#[cfg(test)]
#[path = "matching_tests.rs"]
mod tests;
