//! Deciding shell commands under the `commands` rules: `cargo bench --bench commands`.
//!
//! Each 4 KiB command is decided against 50 rules (the Claude Code pack's first 50, or all of
//! its rules and more when it has fewer, so the figure stays the one the goal names): one
//! `git commit` with a long message (one simple command, one long quoted word), a chain of 64
//! simple commands at most with pipes, redirections, `find -exec` and a `bash -c`, and the same commands
//! as a script of lines. `analyse` is the parse and normalization alone; `…_and_paths` adds the
//! pack's `paths` rules (the files the command writes, and its arguments as paths read), as every
//! door decides a `Bash` call.
//!
//! brush-parser keeps the last 64 texts it tokenized and the last 64 words it parsed. A bench
//! that decided one text over and over would time those caches, not the parse, so each case runs
//! through 128 texts of the same length and shape (one file name differs) in turn: every
//! decision reads a text none of the last 64 decisions read, as an agent's next command is.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};
use skeleton_crew::rules::commands::CommandRules;
use skeleton_crew::rules::decide_command;
use skeleton_crew::rules::paths::{PathContext, PathRules};
use skeleton_crew::rules::shell::analyse;

const PACK: &str = include_str!("../policies/claude-code.json");

/// The pack's first 50 rules, or its rules and more to 50. The pack grew past 50 (77 on
/// 2026-12-05): the bench once padded by `50 - len`, which wrapped and failed its own check.
fn fifty_rules() -> CommandRules {
    let mut pack: Value = serde_json::from_str(PACK).expect("the pack is JSON");
    let rules = pack["commands"]["rules"]
        .as_array_mut()
        .expect("the pack has rules");
    let programs = [
        "kubectl",
        "helm",
        "terraform",
        "aws",
        "gcloud",
        "az",
        "docker",
        "podman",
        "psql",
        "mysql",
        "redis-cli",
        "mongo",
        "sqlite3",
        "ansible",
        "vagrant",
        "brew",
        "apt",
        "yum",
        "snap",
        "systemctl",
        "journalctl",
        "crontab",
        "at",
        "iptables",
        "mount",
    ];
    rules.truncate(50);
    let missing = 50 - rules.len();
    for (n, program) in programs.iter().take(missing).enumerate() {
        let decision = ["allow", "hold", "deny"][n % 3];
        rules.push(json!({"prefix": [program, ["get", "list", "describe", "apply"], "--force"], "decision": decision}));
    }
    assert_eq!(rules.len(), 50);
    CommandRules::from_json("commands", &pack["commands"]).expect("50 rules load")
}

/// Appends `filler` while the text stays within 4 KiB less `reserve` bytes.
fn fill(mut text: String, filler: &str, reserve: usize) -> String {
    while text.len() + filler.len() + reserve <= 4096 {
        text.push_str(filler);
    }
    text
}

fn commands() -> Vec<(&'static str, String)> {
    let mut message = fill(
        "git commit -m \"rules: read the shell command with a real parser".to_owned(),
        " and decide each simple command it runs,",
        1,
    );
    message.push('"');
    let parts = [
        "cargo build --release --locked --features 'serde tracing' --target x86_64-unknown-linux-gnu",
        "cargo test --locked --test tests -- --nocapture 2>&1 | tee test.log",
        "git status --short | grep -v '^??' | wc -l",
        "find . -name '*.rs' -not -path './target/*' -exec grep -n 'unsafe' {} +",
        "git log --oneline -n 20 --format='%h %s' -- src/rules",
        "rg -n --glob '!target/**' 'TODO|FIXME' src tests > todo.txt",
        "bash -c 'cd sub && make -j4 check'",
        "ls -la --time-style=long-iso target/debug/deps target/debug/build target/debug/examples",
        "diff -u old.txt new.txt || true",
        "sort -u names.txt | cut -d, -f2 | sort -rn | head",
    ];
    let mut chain = String::new();
    let mut lines = String::new();
    for (n, part) in parts.iter().cycle().enumerate() {
        let separator = if n == 0 {
            ""
        } else {
            [" && ", "; ", " || "][n % 3]
        };
        let longer = format!("{chain}{separator}{part}");
        if longer.len() > 4096 || !analyse(&longer).dynamic.is_empty() {
            break;
        }
        chain.push_str(separator);
        chain.push_str(part);
        if n > 0 {
            lines.push('\n');
        }
        lines.push_str(part);
    }
    let lines = fill(lines, " ", 0);
    let chain = fill(chain, " ", 0);
    vec![
        ("commit_message", message),
        ("chain", chain),
        ("script_of_lines", lines),
    ]
}

/// The pack's `paths` key.
fn pack_paths() -> PathRules {
    let pack: Value = serde_json::from_str(PACK).expect("the pack is JSON");
    PathRules::from_json("paths", &pack["paths"]).expect("the paths load")
}

/// How many texts each case cycles through: twice brush-parser's cache sizes.
const VARIANTS: usize = 128;

/// `VARIANTS` texts like `command`, each with its `marker` (the first) spelt differently but
/// as long, so none repeats within brush-parser's caches.
fn variants(command: &str, marker: &str) -> Vec<String> {
    assert!(command.contains(marker), "{marker}");
    (0..VARIANTS)
        .map(|n| {
            let spelt = format!("{}{n:03}", &marker[..marker.len() - 3]);
            command.replacen(marker, &spelt, 1)
        })
        .collect()
}

/// Runs `decide` on the next of `texts` each time.
fn cycling<'t, T>(
    texts: &'t [String],
    mut decide: impl FnMut(&'t str) -> T + 't,
) -> impl FnMut() -> T + 't {
    let mut next = 0;
    move || {
        next = (next + 1) % texts.len();
        decide(&texts[next])
    }
}

fn bench(c: &mut Criterion) {
    let rules = fifty_rules();
    let paths = pack_paths();
    let context = PathContext {
        cwd: Some(std::path::Path::new("/w/proj")),
        root: None,
        home: Some(std::path::Path::new("/home/me")),
        links: None,
    };
    let mut group = c.benchmark_group("commands");
    group.throughput(Throughput::Elements(1));
    for (name, command) in commands() {
        assert!(
            (4000..=4096).contains(&command.len()),
            "{name}: {}",
            command.len()
        );
        let analysis = analyse(&command);
        assert!(
            analysis.dynamic.is_empty(),
            "{name}: {:?}",
            analysis.dynamic
        );
        eprintln!(
            "{name}: {} bytes, {} simple commands",
            command.len(),
            analysis.commands.len()
        );
        let marker = if name == "commit_message" {
            "rules:"
        } else {
            "test.log"
        };
        let texts = variants(&command, marker);
        group.bench_function(format!("decide_4k_{name}_50_rules"), |b| {
            b.iter(cycling(&texts, |text| {
                black_box(rules.decide(black_box(text), false))
            }))
        });
        group.bench_function(format!("decide_4k_{name}_50_rules_and_paths"), |b| {
            b.iter(cycling(&texts, |text| {
                black_box(decide_command(
                    &rules,
                    Some(&paths),
                    black_box(text),
                    false,
                    context,
                ))
            }))
        });
        group.bench_function(format!("analyse_4k_{name}"), |b| {
            b.iter(cycling(&texts, |text| black_box(analyse(black_box(text)))))
        });
    }
    let short = variants("cargo build && rm -rf build", "build");
    group.bench_function("decide_short_50_rules", |b| {
        b.iter(cycling(&short, |text| {
            black_box(rules.decide(black_box(text), false))
        }))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
