//! A copy of a folder's contents onto another (`cp -r tpl/. .`, `cp -rT tpl .`): the command
//! names no file it writes, so each file the tree holds is judged as a write where it lands. A
//! tree the door cannot list (no door that sees the file system, a tree too big, a folder that
//! cannot be read, a command that may change the tree before the copy) may write any file in
//! the destination; that counts where the rules' places are (the root, the home, a folder above
//! them), and elsewhere the copy is judged by the destination's name, as any copy is.

use std::path::{Path, PathBuf};

use super::place::{joined, resolve, unknown_tilde, Leads, Placed};
use super::{PathJudgement, PathRules};
use crate::rules::keys::shown;
use crate::rules::shell::TreeCopy;
use crate::verdict::Decision;

impl PathRules {
    /// Decides a copy of a tree's contents ([`crate::rules::shell::Analysis::tree_copies`]).
    pub(crate) fn decide_tree_copy(&self, copy: &TreeCopy, placed: &Placed) -> PathJudgement {
        let home = placed.home.as_deref();
        let base = placed.base(copy.placeable);
        let absolute = |path: PathBuf| path.is_absolute().then_some(path);
        let place = |path: &str, lexical: bool| {
            if unknown_tilde(path, home).is_some() {
                return None;
            }
            absolute(if lexical {
                resolve(path, base, home)
            } else {
                joined(path, base, home)
            })
        };
        let onto = place(&copy.onto, true);
        let from = place(&copy.from, false);
        let shown_from = shown(&copy.from);
        let (Some(onto), Some(from)) = (onto, from) else {
            return self.any_file_in(copy, None, placed, "cannot be placed".to_owned());
        };
        let Some(links) = placed.links else {
            let why =
                format!("receives the contents of \"{shown_from}\", which the gate cannot list");
            return self.any_file_in(copy, Some(&onto), placed, why);
        };
        if !copy.sole {
            let why = format!(
                "receives the contents of \"{shown_from}\", which the rest of the command (or an earlier source of the copy) may change before the copy"
            );
            return self.any_file_in(copy, Some(&onto), placed, why);
        }
        let entries = match (links.tree)(&from) {
            Ok(entries) => entries,
            Err(why) => {
                let why = format!(
                    "receives the contents of \"{shown_from}\", which could not be listed: {why}"
                );
                return self.any_file_in(copy, Some(&onto), placed, why);
            }
        };
        let mut best: Option<PathJudgement> = None;
        for entry in entries {
            let lands = onto.join(&entry);
            let mut judged = self.judge_with(
                &lands.to_string_lossy(),
                true,
                true,
                Some(&copy.by),
                placed,
                false,
                false,
            );
            if judged.decision == Decision::Allow
                || best
                    .as_ref()
                    .is_some_and(|best| best.decision >= judged.decision)
            {
                continue;
            }
            let note = format!(
                "\"{shown_from}\" holds \"{}\", which the copy writes: ",
                shown(&entry.to_string_lossy())
            );
            for reason in &mut judged.reasons {
                reason.insert_str(0, &note);
            }
            best = Some(judged);
        }
        best.unwrap_or_else(|| PathJudgement {
            decision: Decision::Allow,
            reasons: Vec::new(),
        })
    }

    /// A tree copy whose files are not known: any file in `onto` where the rules' places are
    /// (the root, the home, a folder above either; anywhere when `onto` cannot be placed);
    /// elsewhere nothing beyond the destination's own name, which is judged as a write already.
    fn any_file_in(
        &self,
        copy: &TreeCopy,
        onto: Option<&Path>,
        placed: &Placed,
        why: String,
    ) -> PathJudgement {
        // The destination as written, and where it leads through links (`dot -> .`), which a
        // review copied an unlistable tree onto.
        let mut places: Vec<PathBuf> = onto.map(Path::to_path_buf).into_iter().collect();
        if let (Some(onto), Some(links)) = (onto, placed.links) {
            match (links.leads)(onto, false) {
                Leads::Elsewhere(elsewhere) => places.extend(elsewhere),
                Leads::Unknown(_) => places.push(PathBuf::from("/")),
            }
        }
        let anchored = |anchor: Option<&Path>| {
            anchor.is_some_and(|anchor| places.iter().any(|place| anchor.starts_with(place)))
        };
        if onto.is_some() && !anchored(placed.root.as_deref()) && !anchored(placed.home.as_deref())
        {
            return PathJudgement {
                decision: Decision::Allow,
                reasons: Vec::new(),
            };
        }
        let any = match onto {
            Some(onto) => format!("{}/…", onto.to_string_lossy().trim_end_matches('/')),
            None => format!("{}/…", copy.onto.trim_end_matches('/')),
        };
        self.judge_as_any(&any, &why, true, Some(&copy.by))
    }
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
