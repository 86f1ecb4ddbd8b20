//! The layering of `src/`, held by a test (docs/architecture.md says it in words).
//!
//! Every `.rs` file below `src/` is a module; every path it names that starts with `crate::`,
//! `super::` or `self::` (in a `use` or in code, comments and strings left out) is an edge to the
//! module that path leads to. Test code (`#[cfg(test)] mod …` blocks and `*_tests.rs` files) is
//! left out: a test may reach for anything. A parent reaches its children through `mod` and
//! `pub use`, which are not edges; a child may use its parent (`super::`), so a parent that *uses*
//! a child besides re-exporting it makes a cycle. The test fails when:
//! - any cycle appears, between files or between folders at any depth;
//! - a top-level module imports one of a higher layer ([`LAYERS`]);
//! - a top-level module is in no layer (a new one is placed on purpose, in [`LAYERS`] and in
//!   docs/architecture.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, lowest first. A module may import from its own layer or a lower one, never from a
/// higher one; within a layer, the no-cycle rule alone applies.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "wire records and JSON",
        &[
            "error",
            "exit",
            "hex",
            "strict_json",
            "json_lex",
            "json_write",
            "sanitize",
            "amount",
            "verdict",
            "call",
            "jsonl",
            "record",
        ],
    ),
    ("rules", &["rules"]),
    ("state", &["store"]),
    ("audit", &["audit"]),
    ("approve", &["approve"]),
    ("stages", &["stage", "cli"]),
];

type Module = Vec<String>;

#[derive(Debug, Default)]
struct Graph {
    /// Every module, with the modules it uses.
    edges: BTreeMap<Module, BTreeSet<Module>>,
}

/// Reads every module file below `root` into a graph.
fn read_tree(root: &Path) -> Graph {
    let mut files = Vec::new();
    collect(root, root, &mut files);
    let sources = files
        .into_iter()
        .map(|(module, path)| {
            let text = std::fs::read_to_string(&path).expect("a source file");
            (
                module,
                path.ends_with("mod.rs") || path.ends_with("lib.rs"),
                text,
            )
        })
        .collect::<Vec<_>>();
    graph_of(&sources)
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(Module, std::path::PathBuf)>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            collect(root, &path, out);
            continue;
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.ends_with(".rs") || name.ends_with("_tests.rs") {
            continue;
        }
        let relative = path.strip_prefix(root).unwrap().with_extension("");
        let mut module: Module = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
            module.pop();
        }
        out.push((module, path));
    }
}

/// The graph of modules given as (path, is a folder's `mod.rs`/`lib.rs`, source text).
fn graph_of(sources: &[(Module, bool, String)]) -> Graph {
    let codes: Vec<(Module, String)> = sources
        .iter()
        .map(|(m, _, text)| (m.clone(), without_tests(&blank_comments_and_strings(text))))
        .collect();
    let mut known = Known {
        modules: codes.iter().map(|(m, _)| m.clone()).collect(),
        ..Known::default()
    };
    for (module, code) in &codes {
        for (path, reexport) in paths_in(code, &children_of(module, &known.modules)) {
            if !reexport || path.len() < 2 {
                continue;
            }
            let name = path[path.len() - 1].clone();
            if let Some(target) = resolve(&path, module, &known) {
                known.reexports.insert((module.clone(), name), target);
            }
        }
    }
    let mut graph = Graph::default();
    for (module, code) in &codes {
        let mut uses = BTreeSet::new();
        for (path, reexport) in paths_in(code, &children_of(module, &known.modules)) {
            let Some(target) = resolve(&path, module, &known) else {
                continue;
            };
            let descendant = target.len() > module.len() && target.starts_with(module);
            if target == *module || (reexport && descendant) {
                continue;
            }
            if target.is_empty() {
                // The crate root only declares and re-exports: a path that ends there names
                // something the root does not lead to (a removed old name).
                continue;
            }
            uses.insert(target);
        }
        graph.edges.insert(module.clone(), uses);
    }
    graph
}

/// The module a path leads to: the longest prefix of it that is a module file, followed through
/// that module's `pub use` of the next name, so that a path through a re-export counts as a use
/// of the module that defines the item.
fn resolve(path: &[String], module: &Module, known: &Known) -> Option<Module> {
    let mut full: Module = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("self") => module.clone(),
        Some("super") => {
            let mut base = module.clone();
            base.pop()?;
            base
        }
        _ => return None,
    };
    let mut rest = &path[1..];
    while rest.first().map(String::as_str) == Some("super") {
        full.pop()?;
        rest = &rest[1..];
    }
    full.extend(rest.iter().cloned());
    let mut target = (0..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|prefix| known.modules.contains(prefix))?;
    // Follow re-exports, one name of the path at a time.
    let mut next = target.len();
    while let Some(name) = full.get(next) {
        match known.reexports.get(&(target.clone(), name.clone())) {
            Some(defined) if *defined != target => target = defined.clone(),
            _ => break,
        }
        next += 1;
    }
    Some(target)
}

/// The names of a module's child modules.
fn children_of(module: &Module, modules: &BTreeSet<Module>) -> Vec<String> {
    modules
        .iter()
        .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
        .map(|m| m[module.len()].clone())
        .collect()
}

/// The modules of the tree, and what each re-exports: (module, name) → the module it comes from.
#[derive(Debug, Default)]
struct Known {
    modules: BTreeSet<Module>,
    reexports: BTreeMap<(Module, String), Module>,
}

/// Every `crate::…`, `super::…` and `self::…` path in the code, brace groups of `use` expanded,
/// each with whether it sits in a `pub use` (a re-export).
/// A path that starts with the name of one of the module's `children` is read as `self::…` (the
/// 2018 edition's relative paths).
fn paths_in(code: &str, children: &[String]) -> Vec<(Module, bool)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !is_ident(bytes[i - 1]) && bytes[i - 1] != b':';
        let root = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|r| starts_word && code[i..].starts_with(r));
        let (root_len, first) = match root {
            Some(root) => (root.len(), root.trim_end_matches(':').to_owned()),
            None => match children.iter().find(|c| {
                starts_word
                    && code[i..].starts_with(c.as_str())
                    && code[i + c.len()..].starts_with("::")
                    && !code[..i].trim_end().ends_with("mod")
            }) {
                // `child::x` is `self::child::x`: read from the child's name on.
                Some(_) => (0, "self".to_owned()),
                None => {
                    i += 1;
                    continue;
                }
            },
        };
        let reexport = in_pub_use(code, i);
        let (paths, end) = path_at(code, i + root_len, vec![first]);
        found.extend(paths.into_iter().map(|p| (p, reexport)));
        i = end.max(i + 1);
    }
    found
}

/// The paths named from `i` on, after `prefix` (`a::b::{c, d::e}` gives a::b::c and a::b::d::e).
fn path_at(code: &str, mut i: usize, mut prefix: Module) -> (Vec<Module>, usize) {
    let bytes = code.as_bytes();
    loop {
        if bytes.get(i) == Some(&b'{') {
            let mut paths = Vec::new();
            i += 1;
            loop {
                while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b',') {
                    i += 1;
                }
                if i >= bytes.len() || bytes[i] == b'}' {
                    return (paths, i + 1);
                }
                let (inner, end) = path_at(code, i, prefix.clone());
                paths.extend(inner);
                i = end.max(i + 1);
            }
        }
        if bytes.get(i) == Some(&b'*') {
            return (vec![prefix], i + 1);
        }
        let word_start = i;
        while i < bytes.len() && is_ident(bytes[i]) {
            i += 1;
        }
        if i == word_start {
            return (vec![prefix], i);
        }
        let word = &code[word_start..i];
        if word != "self" || prefix.is_empty() {
            prefix.push(word.to_owned());
        }
        if code[i..].starts_with("::") {
            i += 2;
            continue;
        }
        return (vec![prefix], skip_alias(code, i));
    }
}

fn skip_alias(code: &str, mut i: usize) -> usize {
    let rest = code[i..].trim_start();
    if let Some(after) = rest.strip_prefix("as ") {
        i = code.len() - after.len();
        while i < code.len() && is_ident(code.as_bytes()[i]) {
            i += 1;
        }
    }
    i
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether the path at `at` stands in a `pub use` (or `pub(…) use`) statement.
fn in_pub_use(code: &str, at: usize) -> bool {
    let statement_start = code[..at].rfind([';', '}', '{']).map_or(0, |i| i + 1);
    let statement = code[statement_start..at].trim_start();
    let statement = statement.trim_start_matches(|c: char| c == '#' || c.is_whitespace());
    statement.starts_with("pub use ")
        || statement.starts_with("pub(crate) use ")
        || statement.starts_with("pub(super) use ")
}

/// The code with comments, string and character literals replaced by spaces (lengths kept).
fn blank_comments_and_strings(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = memchr_from(bytes, i, b'\n');
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                let mut j = i;
                while j < bytes.len() {
                    if bytes[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if bytes[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' if (i == 0 || !is_ident(bytes[i - 1]))
                && matches!(bytes.get(i + 1), Some(b'"' | b'#')) =>
            {
                let hashes = bytes[i + 1..].iter().take_while(|&&b| b == b'#').count();
                if bytes.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let body = i + 2 + hashes;
                let end = bytes[body..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(bytes.len(), |p| body + p + close.len());
                blank(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(bytes.len());
                blank(&mut out, i, end);
                i = end;
            }
            b'\'' => {
                // A character literal ('x', '\n', '\u{..}'), else a lifetime.
                let end = if bytes.get(i + 1) == Some(&b'\\') {
                    bytes[i + 2..]
                        .iter()
                        .position(|&b| b == b'\'')
                        .map(|p| i + 2 + p + 1)
                } else {
                    let ch_len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (bytes.get(i + 1 + ch_len) == Some(&b'\'')).then_some(i + 2 + ch_len)
                };
                match end {
                    Some(end) => {
                        blank(&mut out, i, end);
                        i = end;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8")
}

fn memchr_from(bytes: &[u8], from: usize, byte: u8) -> usize {
    bytes[from..]
        .iter()
        .position(|&b| b == byte)
        .map_or(bytes.len(), |p| from + p)
}

/// The code without its `#[cfg(test)]` items (a test module, a test-only function).
fn without_tests(code: &str) -> String {
    let mut out = code.to_owned();
    let mut from = 0;
    while let Some(found) = out[from..].find("#[cfg(test)]") {
        let start = from + found;
        let bytes = out.as_bytes();
        // The item ends at its first `;` at depth 0 or at the brace closing its first `{`.
        let mut depth = 0usize;
        let mut end = bytes.len();
        for (j, &b) in bytes.iter().enumerate().skip(start + "#[cfg(test)]".len()) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                _ => {}
            }
        }
        let blanked: String = out[start..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(start..end, &blanked);
        from = end;
    }
    out
}

/// The cycles of the graph with every module cut to `depth` segments (a folder stands for all it
/// holds): each strongly connected part, as its edges.
fn cycles_at(graph: &Graph, depth: usize) -> Vec<Vec<(Module, Module)>> {
    let cut = |m: &Module| m[..m.len().min(depth)].to_vec();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (from, tos) in &graph.edges {
        let from_cut = cut(from);
        let entry = edges.entry(from_cut.clone()).or_default();
        for to in tos {
            let to_cut = cut(to);
            if to_cut != from_cut {
                entry.insert(to_cut);
            }
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|part| part.len() > 1)
        .map(|part| {
            let inside: BTreeSet<&Module> = part.iter().collect();
            let mut within = Vec::new();
            for from in &part {
                for to in edges.get(from).into_iter().flatten() {
                    if inside.contains(to) {
                        within.push((from.clone(), to.clone()));
                    }
                }
            }
            within.sort();
            within
        })
        .collect()
}

/// Tarjan's strongly connected components, iteratively.
fn strongly_connected(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    let nodes: Vec<&Module> = edges
        .keys()
        .chain(edges.values().flatten())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let index_of: BTreeMap<&Module, usize> =
        nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|m| {
            edges
                .get(*m)
                .into_iter()
                .flatten()
                .map(|t| index_of[t])
                .collect()
        })
        .collect();
    let n = nodes.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut parts, mut next) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = succ[v].get(*child) {
                *child += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut part = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    part.push(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                parts.push(part);
            }
        }
    }
    parts
}

/// Every breach of the rules, in words; empty when the tree is layered.
fn breaches(graph: &Graph) -> Vec<String> {
    let mut found = Vec::new();
    let depth = graph.edges.keys().map(Vec::len).max().unwrap_or(0);
    for d in 1..=depth {
        for part in cycles_at(graph, d) {
            let names: BTreeSet<String> = part.iter().map(|(from, _)| show(from)).collect();
            let names: Vec<String> = names.into_iter().collect();
            let edges: Vec<String> = part
                .iter()
                .map(|(from, to)| format!("{} -> {}", show(from), show(to)))
                .collect();
            found.push(format!(
                "import cycle among {} ({})",
                names.join(", "),
                edges.join(", ")
            ));
        }
    }
    let layer_of = |top: &str| LAYERS.iter().position(|(_, mods)| mods.contains(&top));
    for (from, tos) in &graph.edges {
        let Some(from_top) = from.first() else {
            continue;
        };
        let Some(from_layer) = layer_of(from_top) else {
            found.push(format!(
                "src/{} is in no layer of tests/architecture.rs",
                from_top
            ));
            continue;
        };
        for to in tos {
            let Some(to_top) = to.first() else {
                continue;
            };
            if let Some(to_layer) = layer_of(to_top) {
                if to_layer > from_layer {
                    found.push(format!(
                        "{} ({}) imports {} ({}), a higher layer",
                        show(from),
                        LAYERS[from_layer].0,
                        show(to),
                        LAYERS[to_layer].0
                    ));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

fn show(module: &Module) -> String {
    if module.is_empty() {
        "crate (lib.rs)".to_owned()
    } else {
        module.join("::")
    }
}

#[test]
fn src_is_layered_without_cycles() {
    let graph = read_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph.edges.len() > 20, "src/ was read");
    if let Ok(module) = std::env::var("SC_ARCH_SHOW") {
        for (from, tos) in &graph.edges {
            if show(from) == module {
                eprintln!(
                    "{module} uses: {:?}",
                    tos.iter().map(show).collect::<Vec<_>>()
                );
            }
        }
    }
    let found = breaches(&graph);
    assert!(
        found.is_empty(),
        "{} breaches:\n{}",
        found.len(),
        found.join("\n")
    );
}

fn tree(files: &[(&str, bool, &str)]) -> Graph {
    let sources: Vec<(Module, bool, String)> = files
        .iter()
        .map(|(path, folder, text)| {
            let module = if path.is_empty() {
                Vec::new()
            } else {
                path.split('/').map(str::to_owned).collect()
            };
            (module, *folder, (*text).to_owned())
        })
        .collect();
    graph_of(&sources)
}

#[test]
fn the_checker_sees_cycles_between_files_and_folders() {
    // A cycle between two files of one folder.
    let files = tree(&[
        ("", true, "pub mod rules;"),
        ("rules", true, "mod a; mod b; pub use a::A;"),
        ("rules/a", false, "use super::b::B; pub struct A;"),
        (
            "rules/b",
            false,
            "pub struct B; fn f() { let _ = crate::rules::a::A; }",
        ),
    ]);
    assert!(breaches(&files)
        .iter()
        .any(|b| b.contains("cycle") && b.contains("rules::a")));
    // A cycle between folders, though no two files import each other.
    let folders = tree(&[
        ("rules", true, ""),
        ("rules/x", false, "use crate::store::y::Y;"),
        ("rules/z", false, ""),
        ("store", true, ""),
        ("store/y", false, ""),
        ("store/w", false, "use crate::rules::z;"),
    ]);
    assert!(breaches(&folders)
        .iter()
        .any(|b| b.contains("cycle among rules, store")));
    // A parent that uses a child (besides re-exporting it) while the child uses the parent.
    let parent = tree(&[
        (
            "audit",
            true,
            "mod log; pub use log::Log; fn f(l: log::Log) {}",
        ),
        ("audit/log", false, "use super::Stage; pub struct Log;"),
    ]);
    assert!(breaches(&parent).iter().any(|b| b.contains("cycle")));
    // Re-exports and comments and strings and tests are not edges.
    let clean = tree(&[
        ("audit", true, "mod log; pub use log::{Log, Stage as S};\n// crate::stage::x\n"),
        (
            "audit/log",
            false,
            "use super::Stage; const X: &str = \"crate::stage::y\";\n#[cfg(test)]\nmod tests { use crate::stage::z; }",
        ),
        ("stage", true, "use crate::audit::Log;"),
    ]);
    assert_eq!(breaches(&clean), Vec::<String>::new());
}

#[test]
fn the_checker_sees_an_import_from_a_higher_layer() {
    let upward = tree(&[
        ("rules", true, "use crate::audit::Log;"),
        ("audit", true, ""),
    ]);
    let found = breaches(&upward);
    assert!(
        found
            .iter()
            .any(|b| b.contains("rules (rules) imports audit (audit), a higher layer")),
        "{found:?}"
    );
    let unplaced = tree(&[("gadgets", true, "")]);
    assert!(breaches(&unplaced)
        .iter()
        .any(|b| b.contains("src/gadgets is in no layer")));
}
