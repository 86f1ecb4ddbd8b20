//! JSON Lines stream I/O shared by every stage: where lines come from, how they are read with a
//! bound on their length, how records are written, and when output leaves the process.
//!
//! Memory stays flat however long the input is: a line is read into one reused buffer, and a line
//! over the limit is counted and skipped, never stored. Output is held in a batch and leaves in one
//! write when the input has no complete line waiting (so a verdict goes out as soon as it is decided
//! when the input pauses) or when the batch is large (so fast input is block-buffered). The audit
//! events of a batch are written, in one locked append, before the batch's records leave.
//!
//! Three files, one concern each: [`input`] reads lines, [`output`] is a stage's output, which
//! audits each batch before its records leave, and [`pipe`] widens the pipe to the next stage.
//! Writing JSON text is [`crate::json_write`], below both this module and the audit log, and is
//! re-exported here.

pub mod input;
pub mod output;
pub mod pipe;

pub use crate::json_write::*;
pub use input::*;
pub use output::*;

/// The default longest line a stage reads: 1 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 1 << 20;
/// The default longest record line the later stages read: 4 MiB, room for a verdict that
/// carries a call of the longest size sc-gate accepts.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 4 * DEFAULT_MAX_LINE_BYTES;
const READ_BUFFER_BYTES: usize = 64 * 1024;
const BATCH_BYTES: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{self, Read};

    /// Hands out its bytes a few at a time, as a pipe may.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            out.push(match line {
                Line::Text(text) => String::from_utf8_lossy(text).into_owned(),
                Line::TooLong { length, start } => {
                    format!("too long {length} {}", String::from_utf8_lossy(start))
                }
            });
        }
        out
    }

    #[test]
    fn splits_lines_and_keeps_a_last_line_without_newline() {
        assert_eq!(lines(b"a\nb\n\nc", 10), ["a", "b", "", "c"]);
        assert_eq!(lines(b"", 10), Vec::<String>::new());
    }

    #[test]
    fn a_line_over_the_limit_is_reported_with_its_length_and_the_stream_goes_on() {
        assert_eq!(
            lines(b"12345\n123456\nok\n", 5),
            ["12345", "too long 6 123456", "ok"]
        );
    }

    #[test]
    fn a_huge_line_is_not_stored() {
        let mut input = vec![b'x'; 10 << 20];
        input.extend_from_slice(b"\nnext\n");
        let mut reader = LineReader::new(&input[..], 1024);
        match reader.next_line().unwrap() {
            Some(Line::TooLong { length, start }) => {
                assert_eq!(length, 10 << 20);
                assert_eq!(start.len(), RAW_EXCERPT_BYTES);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            reader.line.capacity() < 64 * 1024,
            "the line buffer grew to {}",
            reader.line.capacity()
        );
        assert_eq!(reader.next_line().unwrap(), Some(Line::Text(b"next")));
        assert_eq!(reader.line_number(), 2);
    }

    #[test]
    fn blank_lines_are_white_space_only() {
        assert!(is_blank(b""));
        assert!(is_blank(b" \t\r"));
        assert!(!is_blank(b" x"));
    }

    #[test]
    fn raw_excerpts_are_bounded() {
        let long = vec![b'a'; 5000];
        let excerpt = raw_excerpt(&long);
        assert!(excerpt.len() <= RAW_EXCERPT_BYTES + '…'.len_utf8());
        assert!(excerpt.ends_with('…'));
        assert_eq!(raw_excerpt(b"\xffok"), "\u{fffd}ok");
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut every_byte = String::new();
        for c in (0u8..0x80)
            .map(char::from)
            .chain(['é', '≥', '\u{2028}', '\u{7f}', '😀'])
        {
            every_byte.push(c);
        }
        let long = format!("{}\"{}\\{}", "a".repeat(17), "b".repeat(9), "c".repeat(30));
        // Escapes between plain runs of every length up to past two words.
        let mixed: String = (0..20)
            .map(|run| {
                format!(
                    "{}{}",
                    "x".repeat(run),
                    ["\"", "\\", "\n", "\u{1}"][run % 4]
                )
            })
            .collect();
        for text in [
            "",
            "plain",
            "tab\there",
            "\u{1b}[2J",
            "\"",
            "\\",
            &every_byte,
            &long,
            &mixed,
        ] {
            for cut in 0..text.len().min(24) {
                let mut at = cut;
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                let text = &text[at..];
                let mut ours = Vec::new();
                push_json_str(&mut ours, text);
                assert_eq!(ours, serde_json::to_vec(text).unwrap(), "{text:?}");
            }
        }
    }

    #[test]
    fn newlines_are_found_in_every_position() {
        for len in 0..40 {
            for at in 0..len {
                let mut bytes = vec![b'x'; len];
                bytes[at] = b'\n';
                assert_eq!(find_newline(&bytes), Some(at));
            }
            assert_eq!(find_newline(&vec![0x8a; len]), None);
        }
    }

    #[test]
    fn asking_whether_a_line_waits_changes_no_line_read() {
        let input = b"a\nsecond\n\nthis line is too long\nok\nlast";
        let plain = lines(input, 8);
        for step in 1..input.len() + 1 {
            let mut reader = LineReader::new(Trickle(input, step), 8);
            let mut got = Vec::new();
            reader.has_complete_line();
            // As the stages read: whether the input is at its end, then the line.
            while !reader.at_end().unwrap() {
                let line = reader.next_line().unwrap().expect("a line was waiting");
                got.push(match line {
                    Line::Text(text) => String::from_utf8_lossy(text).into_owned(),
                    Line::TooLong { length, start } => {
                        format!("too long {length} {}", String::from_utf8_lossy(start))
                    }
                });
                reader.has_complete_line();
                reader.has_complete_line();
            }
            assert_eq!(got, plain, "{step}");
        }
    }

    #[test]
    fn lines_straddling_reads_are_whole() {
        let input = b"first line\nsecond\n\nthird line here\nlast";
        for step in 1..12 {
            let mut reader = LineReader::new(Trickle(input, step), 100);
            let mut got = Vec::new();
            while let Some(Line::Text(text)) = reader.next_line().unwrap() {
                got.push(String::from_utf8(text.to_vec()).unwrap());
            }
            assert_eq!(
                got,
                ["first line", "second", "", "third line here", "last"],
                "{step}"
            );
        }
        let mut reader = LineReader::new(&b"a\nb\n"[..], 10);
        assert!(matches!(
            reader.next_line().unwrap(),
            Some(Line::Text(b"a"))
        ));
        assert!(reader.has_complete_line(), "b is waiting");
        assert!(matches!(
            reader.next_line().unwrap(),
            Some(Line::Text(b"b"))
        ));
        assert!(
            !reader.has_complete_line(),
            "the line handed out is not waiting"
        );
    }

    #[test]
    fn nested_objects_are_written_as_serde_writes_them() {
        let line = JsonLine::new()
            .str_field("a", "x")
            .object_field("o", |o| {
                o.object_field("p", |p| p.field("n", &1.5))
                    .strs_field("l", &["y", "z"])
            })
            .object_field("e", |e| e)
            .finish();
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "{\"a\":\"x\",\"o\":{\"p\":{\"n\":1.5},\"l\":[\"y\",\"z\"]},\"e\":{}}\n"
        );
    }

    #[test]
    fn json_lines_are_built_field_by_field() {
        let line = JsonLine::new()
            .field("id", "x")
            .raw_field("call", r#"{"a":1}"#)
            .field("reasons", &["r"])
            .finish();
        assert_eq!(
            line,
            b"{\"id\":\"x\",\"call\":{\"a\":1},\"reasons\":[\"r\"]}\n"
        );
    }

    #[test]
    fn input_lines_read_every_input_in_order_and_count_the_missing() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.jsonl");
        let b = dir.path().join("b.jsonl");
        std::fs::write(&a, "a1\n\na3").unwrap();
        std::fs::write(&b, "b1\n").unwrap();
        let inputs = [
            Input::File(a),
            Input::File(dir.path().join("missing.jsonl")),
            Input::File(b),
        ];
        let mut diagnostics = Vec::new();
        let mut lines = InputLines::new("sc-test", &inputs, 100, &mut diagnostics);
        let mut seen = Vec::new();
        while let Some((line, input, number)) = lines.next_line().unwrap() {
            let Line::Text(text) = line else { panic!() };
            let name = input.name();
            let file = name.rsplit('/').next().unwrap().to_owned();
            seen.push(format!("{file}:{number}:{}", String::from_utf8_lossy(text)));
        }
        assert_eq!(
            seen,
            ["a.jsonl:1:a1", "a.jsonl:2:", "a.jsonl:3:a3", "b.jsonl:1:b1"]
        );
        assert_eq!(lines.completion().unreadable_inputs, 1);
        drop(lines);
        let said = String::from_utf8(diagnostics).unwrap();
        assert!(
            said.starts_with("sc-test: cannot open") && said.contains("missing.jsonl"),
            "{said}"
        );
    }
}
