//! The core's top-level modules form a DAG: no module reaches back to
//! one that imports it. Reads every `src/**/*.rs`, collects the `crate::<module>` references
//! outside comments and outside `#[cfg(test)]` (everything after a line `#[cfg(test)]` is test
//! code), resolves `crate::Name` through `lib.rs`'s re-exports, and fails on any cycle, printing it.
//! The `testing` module (test support) is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The `.rs` files under `dir`, recursively.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// Lines of a file that count: before the first `#[cfg(test)]`, not comments.
pub(crate) fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().take_while(|l| l.trim() != "#[cfg(test)]").filter(|l| !l.trim_start().starts_with("//"))
}

/// The first path segment of every `crate::…` reference on a line (`crate::{a::X, b}` gives a, b).
fn crate_refs(line: &str) -> Vec<String> {
    let mut refs = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            refs.extend(inner.split(',').map(|p| ident(p.trim()).to_string()).filter(|s| !s.is_empty()));
        } else {
            refs.push(ident(rest).to_string());
        }
    }
    refs
}

/// The top-level modules and, for each name `lib.rs` re-exports (`pub use m::{A, B}`), its module.
fn modules_and_reexports(lib: &str) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let mut modules = BTreeSet::new();
    let mut names = BTreeMap::new();
    for line in code_lines(lib) {
        let line = line.trim();
        if let Some(m) = line.strip_prefix("pub mod ").or_else(|| line.strip_prefix("mod ")) {
            modules.insert(ident(m).to_string());
        } else if let Some(u) = line.strip_prefix("pub use ") {
            let module = ident(u).to_string();
            let tail = &u[module.len()..];
            let list = match (tail.find('{'), tail.rfind("::")) {
                (Some(open), _) => tail[open + 1..tail.find('}').unwrap()].to_string(),
                (None, Some(sep)) => tail[sep + 2..].to_string(),
                _ => String::new(),
            };
            for name in list.split(',') {
                let name = ident(name.trim().rsplit("::").next().unwrap_or(""));
                if !name.is_empty() {
                    names.insert(name.to_string(), module.clone());
                }
            }
        }
    }
    (modules, names)
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (modules, reexports) = modules_and_reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
        let top = first.trim_end_matches(".rs").to_string();
        if top == "lib" || top == "testing" {
            continue;
        }
        assert!(modules.contains(&top), "{} is not declared in lib.rs", rel.display());
        let text = std::fs::read_to_string(&file).unwrap();
        let deps = graph.entry(top.clone()).or_default();
        for line in code_lines(&text) {
            for r in crate_refs(line) {
                let target = if modules.contains(&r) { Some(r) } else { reexports.get(&r).cloned() };
                if let Some(t) = target.filter(|t| *t != top && t != "testing") {
                    deps.insert(t);
                }
            }
        }
    }
    graph
}

/// A cycle in `graph`, as the path of modules that closes it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, done, stack) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

#[test]
fn the_checker_sees_imports_and_cycles() {
    assert_eq!(crate_refs("use crate::{ops::Op, roofline};  crate::Ledger::build"), ["ops", "roofline", "Ledger"]);
    let (modules, names) = modules_and_reexports("pub mod a;\npub use a::{X, y::Z};\npub use a::W;\n");
    assert!(modules.contains("a"));
    assert_eq!([&names["X"], &names["Z"], &names["W"]], ["a", "a", "a"]);
    let edge = |a: &str, b: &str| (a.to_string(), BTreeSet::from([b.to_string()]));
    let knot = BTreeMap::from([edge("a", "b"), edge("b", "c"), edge("c", "a")]);
    assert_eq!(find_cycle(&knot).unwrap(), ["a", "b", "c", "a"]);
    let chain = BTreeMap::from([edge("a", "b"), edge("b", "c")]);
    assert_eq!(find_cycle(&chain), None);
}

/// The module names of the layer table in `lib.rs`'s crate doc: the words of its `text` block
/// outside parentheses, the first column (the layer names) left out.
fn layer_table_modules(lib: &str) -> BTreeSet<String> {
    let doc: Vec<&str> =
        lib.lines().filter_map(|l| l.strip_prefix("//!")).map(|l| l.strip_prefix(' ').unwrap_or(l)).collect();
    let start = doc.iter().position(|l| *l == "## Layers").expect("a `## Layers` section");
    let open = start + doc[start..].iter().position(|l| l.starts_with("```text")).expect("its table");
    let mut names = BTreeSet::new();
    for line in doc[open + 1..].iter().take_while(|l| !l.starts_with("```")) {
        let mut depth = 0;
        let mut plain = String::new();
        for c in line.chars().skip(11) {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ if depth == 0 => plain.push(c),
                _ => {}
            }
        }
        names.extend(plain.split_whitespace().map(|w| ident(w).to_string()).filter(|w| !w.is_empty()));
    }
    names
}

/// Every top-level module (but the test support) is in the crate doc's layer table, and the
/// table names no module that is gone.
#[test]
fn the_crate_docs_layer_table_lists_every_module() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let (mut modules, _) = modules_and_reexports(&lib);
    modules.remove("testing");
    let table = layer_table_modules(&lib);
    let missing: Vec<&String> = modules.difference(&table).collect();
    let stale: Vec<&String> = table.difference(&modules).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "missing from the layer table: {missing:?}; not modules: {stale:?}"
    );
    let sample = "## Layers\n```text\nleaves     cost  kinds (operator kinds)\n           ops (+ ops::shard)\n```";
    let sample: String = sample.lines().map(|l| format!("//! {l}\n")).collect();
    assert_eq!(layer_table_modules(&sample), BTreeSet::from(["cost".to_string(), "kinds".into(), "ops".into()]));
}

#[test]
fn core_modules_form_a_dag() {
    let graph = graph();
    assert!(graph.contains_key("ops") && graph["ledger"].contains("ops"), "the checker reads the sources: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        let edges: Vec<String> = graph.iter().map(|(m, d)| format!("{m} -> {d:?}")).collect();
        panic!("import cycle among the core's modules: {}\n{}", cycle.join(" -> "), edges.join("\n"));
    }
}
