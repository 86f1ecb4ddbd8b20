//! Redirections: the files a command reads and writes through them, here-documents and
//! process substitutions.

use brush_parser::word;
use brush_parser::{ast, ParserOptions};

use super::show::cut;
use super::words::Word;
use super::{guarded, Walker, WrittenPath, PARSER_FAILED};

/// Files a redirection may name without writing a file.
const NOT_FILES: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

impl Walker {
    /// A redirection: its words are checked, and a file it writes is recorded.
    pub(super) fn redirect(&mut self, redirect: &ast::IoRedirect, by: &str, depth: usize) -> bool {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match redirect {
            ast::IoRedirect::File(_, kind, target) => {
                let writes = matches!(
                    kind,
                    K::Write | K::Append | K::Clobber | K::ReadAndWrite | K::DuplicateOutput
                );
                let reads = matches!(kind, K::Read | K::ReadAndWrite | K::DuplicateInput);
                match target {
                    T::Filename(word) => {
                        let word = self.word(&word.value, depth);
                        if writes {
                            self.write(&word, by, &redirect.to_string());
                        }
                        if reads {
                            self.read(&word, by, &redirect.to_string());
                        }
                    }
                    T::Duplicate(word) => {
                        let word = self.word(&word.value, depth);
                        let descriptor = word.is_fixed()
                            && word
                                .text
                                .trim_end_matches('-')
                                .chars()
                                .all(|c| c.is_ascii_digit());
                        if writes && !descriptor {
                            self.write(&word, by, &redirect.to_string());
                        }
                        if reads && !descriptor {
                            self.read(&word, by, &redirect.to_string());
                        }
                    }
                    T::Fd(_) => {}
                    T::ProcessSubstitution(_, subshell) => {
                        self.process_substitution(subshell, depth)
                    }
                }
                false
            }
            ast::IoRedirect::OutputAndError(word, _) => {
                let word = self.word(&word.value, depth);
                self.write(&word, by, &redirect.to_string());
                false
            }
            ast::IoRedirect::HereDocument(_, here) => {
                if here.requires_expansion {
                    match guarded(|| {
                        word::parse_heredoc(&here.doc.value, &ParserOptions::default())
                            .map_err(|e| e.to_string())
                    })
                    .unwrap_or_else(|| Err(PARSER_FAILED.to_owned()))
                    {
                        Ok(pieces) => {
                            let mut ignored = Word::default();
                            for piece in &pieces {
                                self.piece(
                                    &piece.piece,
                                    &here.doc.value,
                                    piece.start_index,
                                    piece.end_index,
                                    true,
                                    &mut ignored,
                                    depth,
                                );
                            }
                        }
                        Err(err) => self.dynamic(
                            cut(&here.doc.value),
                            format!("the here-document does not parse: {err}"),
                        ),
                    }
                }
                true
            }
            ast::IoRedirect::HereString(_, word) => {
                self.word(&word.value, depth);
                true
            }
        }
    }

    pub(super) fn process_substitution(&mut self, subshell: &ast::SubshellCommand, depth: usize) {
        // Not the subshell's text: showing a deeply nested tree costs time quadratic in its depth.
        let _ = subshell;
        self.dynamic("<( … )", "a process substitution");
        if self.nest(depth, "<( … )") {
            self.compound_list(&subshell.list, depth + 1);
        }
    }

    /// The file a redirection or an option names, for the `paths` rules (`verb` says what is
    /// done to it): a name the text does not fix is dynamic, and an empty name (an error at run
    /// time), `/dev/null` and friends name no file.
    fn named_file(&mut self, word: &Word, by: &str, redirect: &str, verb: &str) -> Option<String> {
        if !(word.is_fixed() || word.tilde && !word.expanded && !word.glob && !word.brace) {
            self.dynamic(
                format!("{by} {redirect}"),
                format!("it {verb} a file named by an expansion"),
            );
            return None;
        }
        if is_network_device(&word.text) {
            let part = super::DynamicPart {
                what: format!("{by} {redirect}"),
                why: "bash opens a network connection for a redirection to /dev/tcp or /dev/udp"
                    .to_owned(),
            };
            if !self.out.network.contains(&part) {
                self.out.network.push(part);
            }
            return None;
        }
        if word.text.is_empty()
            || NOT_FILES.contains(&word.text.as_str())
            || word.text.starts_with("/dev/fd/")
        {
            return None;
        }
        Some(word.text.clone())
    }

    /// A file an input redirection reads, for the `paths` read rules.
    fn read(&mut self, word: &Word, by: &str, redirect: &str) {
        if let Some(path) = self.named_file(word, by, redirect, "reads") {
            self.out.reads.push(WrittenPath {
                path,
                by: format!("{by} {redirect}"),
                placeable: true,
                expands: false,
            });
        }
    }

    /// A file written through a redirection or an option.
    pub(super) fn write(&mut self, word: &Word, by: &str, redirect: &str) {
        if let Some(path) = self.named_file(word, by, redirect, "writes") {
            self.out.writes.push(WrittenPath {
                path,
                by: by.to_owned(),
                placeable: true,
                expands: false,
            });
        }
    }
}

/// Whether a redirection's file is one of bash's network devices, `/dev/tcp/…` or `/dev/udp/…`
/// (bash compares the text; read by components here, so `/dev//tcp/…` and `/dev/./udp/…` count
/// as well: fail closed).
pub(crate) fn is_network_device(path: &str) -> bool {
    let mut parts = std::path::Path::new(path)
        .components()
        .map(|c| c.as_os_str());
    parts.next() == Some("/".as_ref())
        && parts.next() == Some("dev".as_ref())
        && matches!(parts.next(), Some(p) if p == "tcp" || p == "udp")
}

#[cfg(test)]
#[path = "redirect_tests.rs"]
mod tests;
