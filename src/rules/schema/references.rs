//! Where a `$ref` may lead: only to a schema the walk saw, and never back to itself.

use std::collections::HashSet;

use super::error::SchemaError;

/// A reference as written, and where.
pub(super) struct Reference {
    /// `$recursiveRef`, which leads to the root whatever it says.
    pub(super) recursive: bool,
    pub(super) text: String,
    /// The schema that holds it, as pointer tokens; and its own path, for errors.
    pub(super) holder: Vec<String>,
    pub(super) at: String,
}

/// The schemas a reference may lead to: it points inside the schema, at a place the validator
/// reads as a schema (by JSON pointer, `#/…`), or names an anchor (`#name`; a `$dynamicRef` may
/// reach any anchor of that name), or is `$recursiveRef` (the root, as far as the walk knows).
pub(super) fn reference_targets(
    reference: &Reference,
    positions: &HashSet<Vec<String>>,
    anchors: &[(String, Vec<String>)],
) -> Result<Vec<Vec<String>>, SchemaError> {
    let refused = |why: &str| SchemaError::NotCompiled {
        at: reference.at.clone(),
        message: format!("{} {why}", crate::sanitize::quoted(&reference.text)),
    };
    let Some(fragment) = reference.text.strip_prefix('#') else {
        return Err(refused(
            "leaves the schema: only `#/…` and `#name` are followed",
        ));
    };
    if reference.recursive {
        return Ok(vec![Vec::new()]);
    }
    let fragment = percent_decode(fragment);
    if !fragment.is_empty() && !fragment.starts_with('/') {
        let named = anchors.iter().filter(|(name, _)| *name == fragment);
        return Ok(named.map(|(_, tokens)| tokens.clone()).collect());
    }
    let tokens: Vec<String> = fragment
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    if positions.contains(&tokens) {
        Ok(vec![tokens])
    } else {
        Err(refused("does not point at a schema"))
    }
}

/// Refuses a schema that refers to itself: where a reference leads to a schema that holds, at
/// any depth, a reference that leads back. The validator checks every branch of a recursive
/// schema and keeps each branch's errors, so its work can double with each level of an
/// argument: a 600-byte argument took it gigabytes.
pub(super) fn no_recursion(
    references: &[Reference],
    targets: &[Vec<Vec<String>>],
) -> Result<(), SchemaError> {
    // From reference i, reference j is next when j stands inside a schema i leads to.
    let next = |i: usize| {
        (0..references.len()).filter(move |&j| {
            targets[i]
                .iter()
                .any(|target| references[j].holder.starts_with(target))
        })
    };
    // Depth-first, three colours: unseen, on the current path, done.
    let mut colour = vec![0u8; references.len()];
    for start in 0..references.len() {
        if colour[start] != 0 {
            continue;
        }
        let mut stack = vec![(start, next(start).collect::<Vec<_>>())];
        colour[start] = 1;
        while let Some((at, pending)) = stack.last_mut() {
            let at = *at;
            match pending.pop() {
                Some(j) if colour[j] == 1 => {
                    let reference = &references[j];
                    return Err(SchemaError::NotCompiled {
                        at: reference.at.clone(),
                        message: format!(
                            "{} makes the schema refer to itself; a recursive schema's checks can double with each level of an argument, so the gate does not load one",
                            crate::sanitize::quoted(&reference.text)
                        ),
                    });
                }
                Some(j) if colour[j] == 0 => {
                    colour[j] = 1;
                    stack.push((j, next(j).collect()));
                }
                Some(_) => {}
                None => {
                    colour[at] = 2;
                    stack.pop();
                }
            }
        }
    }
    Ok(())
}

/// `text` with each `%XX` escape decoded, as the validator reads a reference's fragment.
pub(super) fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}
