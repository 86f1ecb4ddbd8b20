//! The guide a newcomer reads: every page carries the same nav bar naming every page, every
//! relative link lands on a file (and a heading) that exists, the README stays short, the example
//! policy shows every key the loader knows, and no tracked file names a package registry's host.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{bare_cmd, Scratch};

/// The guide's pages, in the nav bar's order.
const PAGES: &[&str] = &[
    "pipeline",
    "agents",
    "coding-agents",
    "sandbox",
    "provenance",
    "policy",
    "state",
    "inbox",
    "audit",
    "security",
    "benchmark",
    "architecture",
];

/// Pages being written on another branch: links to them are skipped while they are absent.
const COMING: &[&str] = &["sandbox"];

/// The README's length, at most.
const README_LINES: usize = 160;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The nav bar of `current`: every page, `current` in bold and not linked.
fn nav_bar(current: &str) -> String {
    let pages: Vec<String> = PAGES
        .iter()
        .map(|page| {
            if *page == current {
                format!("**{page}**")
            } else {
                format!("[{page}]({page}.md)")
            }
        })
        .collect();
    format!(
        "[← README](../README.md) · the guide: {}",
        pages.join(" · ")
    )
}

/// `docs/*.md`, sorted.
fn docs_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    assert!(pages.len() >= PAGES.len() - COMING.len(), "{pages:?}");
    pages
}

fn stem(path: &Path) -> &str {
    path.file_stem().unwrap().to_str().unwrap()
}

#[test]
fn every_docs_page_has_the_nav_bar_naming_every_page() {
    let pages = docs_pages();
    let present: BTreeSet<&str> = pages.iter().map(|p| stem(p)).collect();
    for page in &present {
        assert!(
            PAGES.contains(page),
            "docs/{page}.md is not in the nav bar: add it to PAGES in tests/docs.rs and to every page's bar"
        );
    }
    for page in PAGES {
        assert!(
            present.contains(page) || COMING.contains(page),
            "the nav bar names docs/{page}.md, which does not exist"
        );
    }
    for path in &pages {
        let text = read(path);
        let bar = text
            .lines()
            .take(5)
            .find(|line| line.starts_with("[← README]"))
            .unwrap_or_else(|| panic!("{}: no nav bar in its first 5 lines", path.display()));
        assert_eq!(bar, nav_bar(stem(path)), "{}", path.display());
        assert_eq!(
            text.lines().filter(|l| l.starts_with("[← README]")).count(),
            1,
            "{}: one nav bar",
            path.display()
        );
    }
}

/// The link targets of a markdown text, with their line numbers: inline links and images
/// (`[text](target)`, `![alt](target)`) and reference definitions (`[name]: target`), outside
/// fenced code blocks and code spans.
fn links(markdown: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fence: Option<&str> = None;
    for (index, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        for marker in ["```", "~~~"] {
            if trimmed.starts_with(marker) {
                match fence {
                    None => fence = Some(marker),
                    Some(open) if open == marker => fence = None,
                    Some(_) => {}
                }
            }
        }
        if fence.is_some() || trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            continue;
        }
        let text = without_code_spans(line);
        if let Some(rest) = text.trim_start().strip_prefix('[') {
            if let Some((label, target)) = rest.split_once("]: ") {
                if !label.contains(['[', ']', '(']) {
                    let target = target.split_whitespace().next().unwrap_or("");
                    found.push((index + 1, target.to_owned()));
                }
            }
        }
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            found.push((index + 1, target.trim_matches(['<', '>']).to_owned()));
            rest = &rest[end..];
        }
    }
    found
}

/// The line with its code spans (`` `…` ``, ``` ``…`` ```) blanked out.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find('`') {
        out.push_str(&rest[..at]);
        let run = rest[at..].len() - rest[at..].trim_start_matches('`').len();
        let ticks = &rest[at..at + run];
        let after = &rest[at + run..];
        match after.find(ticks) {
            Some(close) => rest = &after[close + run..],
            None => {
                // An unclosed run is literal text.
                out.push_str(ticks);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The anchors GitHub gives a markdown file's headings: lower case, letters, digits, `-` and
/// `_` kept, spaces made `-`, everything else dropped; a repeated anchor gets `-1`, `-2`, ….
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let title = line[hashes..].trim().trim_end_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = slug.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{slug}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

#[test]
fn anchors_are_read_as_github_writes_them() {
    let found = anchors(
        "# A\n## Answering on a web page: `--web ADDR`\n### Decisions\n```\n# not a heading\n```\n### Decisions\n",
    );
    let expected: BTreeSet<String> = [
        "a",
        "answering-on-a-web-page---web-addr",
        "decisions",
        "decisions-1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(found, expected);
    let found =
        links("[a](x.md) `[b](y.md)` ![c](d/e.png#f)\n```\n[g](h.md)\n```\n[i]: j.md \"t\"\n");
    let targets: Vec<&str> = found.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(targets, ["x.md", "d/e.png#f", "j.md"]);
}

#[test]
fn every_relative_link_points_to_a_file_that_exists() {
    let mut files = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    files.extend(docs_pages());
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in &files {
        let text = read(file);
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let where_ = format!("{}:{line}: {target}", file.display());
            if !resolved.exists() {
                let in_docs = resolved.parent().and_then(|p| p.file_name())
                    == Some(std::ffi::OsStr::new("docs"));
                let coming = in_docs && COMING.contains(&stem(&resolved));
                if !coming {
                    broken.push(format!("{where_}: no such file"));
                }
                continue;
            }
            checked += 1;
            if let Some(fragment) = fragment {
                if resolved.extension().is_some_and(|e| e == "md")
                    && !anchors(&read(&resolved)).contains(fragment)
                {
                    broken.push(format!("{where_}: no heading #{fragment}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 50, "only {checked} links checked");
}

#[test]
fn the_readme_is_at_most_160_lines() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(
        lines <= README_LINES,
        "README.md has {lines} lines: move the detail into a docs page"
    );
}

/// The package registries' web hosts, put together here so that this file does not name them.
fn registry_hosts() -> Vec<String> {
    [["crates", "io"], ["npmjs", "com"], ["npmjs", "org"]]
        .iter()
        .map(|parts| parts.join("."))
        .collect()
}

/// Where `host` occurs in `text` as a host name (or a subdomain of it): not inside a longer
/// name such as the index repository `<host>-index` that lock files name.
fn names_host(text: &str, host: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    lower.match_indices(host).any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + host.len()).copied();
        let part_of_name = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name)
    })
}

#[test]
fn no_tracked_file_names_a_package_registry_host() {
    let hosts = registry_hosts();
    assert!(names_host(
        &format!("see https://{}/x.", hosts[0]),
        &hosts[0]
    ));
    assert!(names_host(&format!("static.{}", hosts[0]), &hosts[0]));
    assert!(!names_host(
        &format!("rust-lang/{}-index", hosts[0]),
        &hosts[0]
    ));
    assert!(!names_host(&format!("my{}", hosts[1]), &hosts[1]));

    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git, to list the tracked files");
    assert!(
        listed.status.success(),
        "git ls-files: {}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let files: Vec<&[u8]> = listed
        .stdout
        .split(|b| *b == 0)
        .filter(|name| !name.is_empty())
        .collect();
    assert!(files.len() > 100, "{} tracked files", files.len());
    let mut named = Vec::new();
    for name in files {
        let name = std::str::from_utf8(name).expect("a UTF-8 file name");
        let Ok(bytes) = std::fs::read(root().join(name)) else {
            continue; // deleted in the work tree
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue; // not text
        };
        for host in &hosts {
            if names_host(&text, host) {
                named.push(format!("{name} names {host}"));
            }
        }
    }
    assert!(
        named.is_empty(),
        "say \"the crate registry\" or \"the npm registry\" instead:\n{}",
        named.join("\n")
    );
}

/// The keys the real loader knows at `policy`'s one unknown key, from its error: a key far
/// from every known one makes it list them all.
fn known_keys(policy: &str) -> Vec<String> {
    let scratch = Scratch::new();
    let file = scratch.write("probe.json", policy);
    let output = bare_cmd("sc-gate")
        .arg("--quiet")
        .arg("--audit")
        .arg(scratch.audit_path())
        .arg("--policy")
        .arg(&file)
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{policy}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let (_, list) = stderr
        .split_once("the known keys are ")
        .unwrap_or_else(|| panic!("{policy}: {stderr}"));
    list.lines()
        .next()
        .unwrap()
        .split(", ")
        .map(|key| key.trim().trim_matches('`').to_owned())
        .collect()
}

/// An object's keys (none for anything else).
fn keys_of(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .map(|object| object.keys().cloned().collect())
        .unwrap_or_default()
}

/// The keys of every object in an array, together.
fn keys_of_each(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(keys_of)
        .collect()
}

#[test]
fn the_example_policy_shows_every_key_the_loader_knows() {
    let path = root().join("policy.example.json");
    let example: Value = serde_json::from_str(&read(&path)).expect("JSON");

    // It loads, through the real loader.
    let scratch = Scratch::new();
    let output = scratch
        .cmd("sc-gate")
        .arg("--quiet")
        .arg("--policy")
        .arg(&path)
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let far = "q".repeat(40);
    let places: Vec<(&str, String, BTreeSet<String>)> = vec![
        ("the top", format!(r#"{{"{far}": 1}}"#), keys_of(&example)),
        (
            "commands",
            format!(r#"{{"commands": {{"{far}": 1}}}}"#),
            keys_of(&example["commands"]),
        ),
        (
            "commands.rules[]",
            format!(r#"{{"commands": {{"rules": [{{"{far}": 1}}]}}}}"#),
            keys_of_each(&example["commands"]["rules"]),
        ),
        (
            "paths",
            format!(r#"{{"paths": {{"{far}": 1}}}}"#),
            keys_of(&example["paths"]),
        ),
        (
            "paths.rules[]",
            format!(r#"{{"paths": {{"rules": [{{"{far}": 1}}]}}}}"#),
            keys_of_each(&example["paths"]["rules"]),
        ),
        (
            "provenance",
            format!(r#"{{"provenance": {{"{far}": 1}}}}"#),
            keys_of(&example["provenance"]),
        ),
    ];
    for (place, probe, shown) in places {
        let known = known_keys(&probe);
        assert!(!known.is_empty(), "{place}");
        for key in known {
            assert!(
                shown.contains(&key),
                "policy.example.json does not show `{key}` at {place}"
            );
        }
    }
    // A `toolArgs` entry's two keys (its error suggests one, never lists them).
    let entries = example["toolArgs"].as_object().expect("toolArgs");
    let shown: BTreeSet<String> = entries.values().flat_map(keys_of).collect();
    for key in ["schema", "whenTainted"] {
        assert!(
            shown.contains(key),
            "policy.example.json: toolArgs lacks {key}"
        );
    }
}

/// The README's coding-agent example prints what the README shows.
#[test]
fn the_readmes_hook_example_prints_what_it_shows() {
    let readme = read(&root().join("README.md"));
    let lines: Vec<&str> = readme.lines().collect();
    let at = lines
        .iter()
        .position(|line| line.starts_with("$ echo '") && line.contains("PreToolUse"))
        .expect("the sc-hook example in README.md");
    let input = lines[at]
        .strip_prefix("$ echo '")
        .and_then(|rest| rest.strip_suffix("' \\"))
        .expect("$ echo '…' \\");
    let args: Vec<&str> = lines[at + 1]
        .trim()
        .strip_prefix("| sc-hook ")
        .expect("| sc-hook …")
        .split_whitespace()
        .collect();
    let shown = lines[at + 2];
    let scratch = Scratch::new();
    let audit = scratch.path("audit.jsonl");
    let args: Vec<&str> = args
        .iter()
        .map(|arg| match *arg {
            "/tmp/audit.jsonl" => audit.to_str().unwrap(),
            other => other,
        })
        .collect();
    let output = bare_cmd("sc-hook")
        .current_dir(root())
        .env("HOME", scratch.path("home"))
        .args(&args)
        .write_stdin(format!("{input}\n"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{args:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim_end(), shown);
}

/// Every folder below `src/`, as a path relative to the repository (`src/rules/shell/`).
fn source_folders(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let relative = path.strip_prefix(root()).unwrap();
            out.push(format!("{}/", relative.display()));
            source_folders(&path, out);
        }
    }
}

#[test]
fn the_architecture_page_names_every_source_folder_and_the_layers() {
    let page = read(&root().join("docs/architecture.md"));
    let mut folders = Vec::new();
    source_folders(&root().join("src"), &mut folders);
    assert!(folders.len() > 5, "src/ was read");
    let missing: Vec<&String> = folders
        .iter()
        .filter(|folder| !page.contains(&format!("`{folder}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not name {missing:?}"
    );
    for layer in [
        "wire records and JSON",
        "rules",
        "state",
        "audit",
        "approve",
        "stages",
    ] {
        assert!(page.contains(layer), "the layer {layer} is not named");
    }
}

#[test]
fn no_source_file_cites_a_document_that_does_not_exist() {
    let listed = Command::new("git")
        .args(["ls-files", "src/*.rs", "bin/*.rs"])
        .current_dir(root())
        .output()
        .expect("git runs");
    let mut missing = Vec::new();
    for file in String::from_utf8(listed.stdout).unwrap().lines() {
        let text = read(&root().join(file));
        for (number, line) in text.lines().enumerate() {
            // Only what the comments cite: `//`, `///` and `//!` text.
            let Some((_, comment)) = line.split_once("//") else {
                continue;
            };
            for word in comment.split(|c: char| !(c.is_ascii_alphanumeric() || "_-./".contains(c)))
            {
                let Some(name) = word.strip_suffix(".md") else {
                    continue;
                };
                if name.is_empty() || name.starts_with("http") || name.starts_with('/') {
                    continue;
                }
                let cited = format!("{name}.md");
                let found = [root().join(&cited), root().join("docs").join(&cited)]
                    .iter()
                    .any(|path| path.exists());
                if !found {
                    missing.push(format!("{file}:{}: {cited}", number + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "cited documents that do not exist: {missing:#?}"
    );
}
