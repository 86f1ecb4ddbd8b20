//! A shell command that Codex CLI does not run but applies itself: `apply_patch` (or
//! `applypatch`) reading a patch from a here-document, alone or after one `cd DIR &&`. Codex
//! intercepts exactly these forms (its `maybe_parse_apply_patch`) and writes the files the patch
//! names, so at its door the gate judges such a command as the patch, file by file, instead of
//! holding an `apply_patch` no `commands` rule names (which Codex, unable to ask, refused: an
//! honest edit never ran).
//!
//! Read more narrowly than Codex reads it, so that a command read here is one Codex intercepts,
//! or, if a Codex did not, one whose shell runs nothing but a program named `apply_patch` with
//! the same text on its standard input: the here-document's delimiter is quoted (its text is
//! taken as it is, with no expansion), no other word, redirection or assignment, one plain `cd`
//! argument, and nothing after.

use brush_parser::{ast, parse_tokens, uncached_tokenize_str, ParserOptions};

use super::{guarded, MAX_COMMAND_BYTES};

/// A patch a command hands Codex's `apply_patch`: the folder it is applied in (the `cd`), and
/// the patch.
#[derive(Debug, PartialEq, Eq)]
pub struct PatchInvocation {
    pub folder: Option<String>,
    pub patch: String,
}

/// The patch `command` applies, if it is one of the forms Codex intercepts.
pub fn patch_invocation(command: &str) -> Option<PatchInvocation> {
    if command.len() > MAX_COMMAND_BYTES || !command.contains("apply") {
        return None;
    }
    let options = ParserOptions::default();
    let tokens = guarded(|| uncached_tokenize_str(command, &options.tokenizer_options()))?.ok()?;
    let program = guarded(|| parse_tokens(&tokens, &options))?.ok()?;
    let [list] = program.complete_commands.as_slice() else {
        return None;
    };
    let [ast::CompoundListItem(and_or, ast::SeparatorOperator::Sequence)] = list.0.as_slice()
    else {
        return None;
    };
    match and_or.additional.as_slice() {
        [] => Some(PatchInvocation {
            folder: None,
            patch: apply(&and_or.first)?,
        }),
        [ast::AndOr::And(next)] => Some(PatchInvocation {
            folder: Some(cd(&and_or.first)?),
            patch: apply(next)?,
        }),
        _ => None,
    }
}

/// The one simple command of a pipeline of one, not negated or timed.
fn simple(pipeline: &ast::Pipeline) -> Option<&ast::SimpleCommand> {
    match pipeline.seq.as_slice() {
        [ast::Command::Simple(command)] if !pipeline.bang && pipeline.timed.is_none() => {
            (command.prefix.is_none()).then_some(command)
        }
        _ => None,
    }
}

/// `apply_patch <<'EOF'` with nothing else: the here-document's text.
fn apply(pipeline: &ast::Pipeline) -> Option<String> {
    let command = simple(pipeline)?;
    let name = command.word_or_name.as_ref()?;
    if !matches!(name.value.as_str(), "apply_patch" | "applypatch") {
        return None;
    }
    let suffix = command.suffix.as_ref()?;
    let [ast::CommandPrefixOrSuffixItem::IoRedirect(ast::IoRedirect::HereDocument(fd, here))] =
        suffix.0.as_slice()
    else {
        return None;
    };
    if !matches!(fd, None | Some(0)) || here.requires_expansion || here.remove_tabs {
        return None;
    }
    Some(here.doc.value.clone())
}

/// `cd DIR` with one argument that is a plain word or a single-quoted one: the folder.
fn cd(pipeline: &ast::Pipeline) -> Option<String> {
    let command = simple(pipeline)?;
    if command.word_or_name.as_ref()?.value != "cd" {
        return None;
    }
    let [ast::CommandPrefixOrSuffixItem::Word(word)] = command.suffix.as_ref()?.0.as_slice() else {
        return None;
    };
    let text = word.value.as_str();
    let folder = match text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        Some(quoted) if !quoted.contains('\'') => quoted,
        _ if text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/+-,@%:".contains(c)) =>
        {
            text
        }
        _ => return None,
    };
    (!folder.is_empty() && !folder.starts_with('-')).then(|| folder.to_owned())
}

#[cfg(test)]
#[path = "patch_invocation_tests.rs"]
mod tests;
