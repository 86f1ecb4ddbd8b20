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

/// The patch `command` applies, if it is one of the forms Codex intercepts: read by its text
/// ([`by_text`]) and by brush-parser's grammar, which must agree.
pub fn patch_invocation(command: &str) -> Option<PatchInvocation> {
    if command.len() > MAX_COMMAND_BYTES || !command.contains("apply") {
        return None;
    }
    let by_text = by_text(command)?;
    (by_grammar(command)? == by_text).then_some(by_text)
}

/// The form read by its text alone, as narrowly as it can be written: a first line that is
/// exactly `[cd DIR && ]apply_patch <<'WORD'` (or `applypatch`, `"WORD"`, a space after `<<`),
/// WORD of letters, digits and `_`; then the patch; then a last line that is exactly WORD, and no
/// line before it that any shell could take as the end (WORD or `$WORD`, with white space around
/// them). A review ended a here-document early in bash (`<<$'EOF'`, which bash ends at `EOF` and
/// brush-parser at `$EOF`) and hid the command from Codex's reading with a comment, so that
/// Codex ran the lines in between as commands: nothing of that kind is read here.
fn by_text(command: &str) -> Option<PatchInvocation> {
    let (first, rest) = command.split_once('\n')?;
    let (folder, first) = match first.strip_prefix("cd ") {
        Some(after) => {
            let (word, after) = after.split_once(" && ")?;
            (Some(cd_word(word)?), after)
        }
        None => (None, first),
    };
    let redirect = first
        .strip_prefix("apply_patch ")
        .or_else(|| first.strip_prefix("applypatch "))?
        .strip_prefix("<<")?;
    let quoted = redirect.strip_prefix(' ').unwrap_or(redirect);
    let word = ['\'', '"'].iter().find_map(|quote| {
        quoted
            .strip_prefix(*quote)
            .and_then(|inner| inner.strip_suffix(*quote))
    })?;
    if word.is_empty() || !word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let rest = rest.strip_suffix('\n').unwrap_or(rest);
    let patch = rest.strip_suffix(word)?;
    if !(patch.is_empty() || patch.ends_with('\n')) {
        return None;
    }
    let ends_early = patch.split('\n').any(|line| {
        let line = line.trim_matches(char::is_whitespace);
        line.trim_start_matches('$') == word
    });
    (!ends_early).then(|| PatchInvocation {
        folder,
        patch: patch.to_owned(),
    })
}

/// The same form read by brush-parser's grammar.
fn by_grammar(command: &str) -> Option<PatchInvocation> {
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

/// `cd DIR` with one argument: the folder ([`cd_word`]).
fn cd(pipeline: &ast::Pipeline) -> Option<String> {
    let command = simple(pipeline)?;
    if command.word_or_name.as_ref()?.value != "cd" {
        return None;
    }
    let [ast::CommandPrefixOrSuffixItem::Word(word)] = command.suffix.as_ref()?.0.as_slice() else {
        return None;
    };
    cd_word(&word.value)
}

/// The folder a `cd` word names when it is a plain word or a single-quoted one.
fn cd_word(text: &str) -> Option<String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._/+-,@%:".contains(c);
    let folder = match text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        Some(quoted) if !quoted.contains(['\'', '\n']) => quoted,
        _ if text.chars().all(plain) => text,
        _ => return None,
    };
    // Not an option, nor zsh's `+N` (a folder of its stack).
    (!folder.is_empty() && !folder.starts_with(['-', '+'])).then(|| folder.to_owned())
}

#[cfg(test)]
#[path = "patch_invocation_tests.rs"]
mod tests;
