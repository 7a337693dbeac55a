//! The dependency rules of `docs/ARCHITECTURE.md`, held against the code:
//! which crate of the workspace may depend on which (counted from each
//! crate's `Cargo.toml`), and which folder of the engine may import which
//! (counted from the `crate::…` paths in its source). Both tables must be
//! free of cycles, name every crate and every folder, and allow every
//! dependency the code has.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The rows of the table between `<!-- begin NAME -->` and `<!-- end NAME
/// -->`: the first column's name, and the names in backticks of the last
/// column (`—` for none).
fn table(doc: &str, name: &str) -> Graph {
    let begin = format!("<!-- begin {name} -->");
    let end = format!("<!-- end {name} -->");
    let start = doc.find(&begin).unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no {begin}"));
    let stop = doc[start..].find(&end).unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no {end}")) + start;
    let ticked = |cell: &str| -> Vec<String> { cell.split('`').skip(1).step_by(2).map(str::to_string).collect() };
    let mut out = Graph::new();
    for line in doc[start..stop].lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let first = ticked(cells[0]);
        if first.is_empty() {
            continue; // the header and its rule
        }
        let allowed: BTreeSet<String> = ticked(cells[cells.len() - 1]).into_iter().collect();
        for n in first {
            assert!(out.insert(n.clone(), allowed.clone()).is_none(), "{name}: `{n}` has two rows");
        }
    }
    assert!(!out.is_empty(), "{name}: the table is empty");
    out
}

/// A cycle of `g`, if it has one.
fn cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(g: &Graph, n: &str, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            return Some(path[at..].to_vec());
        }
        if !done.insert(n.to_string()) {
            return None;
        }
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(g, m, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    g.keys().find_map(|n| visit(g, n, &mut Vec::new(), &mut done))
}

/// `actual` ⊆ `allowed`, every node of `actual` has a row, and `allowed` has
/// no cycle; the failures, one line each.
fn compare(what: &str, actual: &Graph, allowed: &Graph) -> Vec<String> {
    let mut bad = Vec::new();
    if let Some(c) = cycle(allowed) {
        bad.push(format!("{what}: the table allows a cycle: {}", c.join(" → ")));
    }
    for (from, tos) in actual {
        let Some(ok) = allowed.get(from) else {
            bad.push(format!("{what}: `{from}` has no row in the table"));
            continue;
        };
        for to in tos.iter().filter(|t| !ok.contains(*t)) {
            bad.push(format!("{what}: `{from}` depends on `{to}`, which its row does not allow"));
        }
    }
    for name in allowed.keys().filter(|n| !actual.contains_key(*n)) {
        bad.push(format!("{what}: the table names `{name}`, which does not exist"));
    }
    bad
}

/// The workspace's packages named `mnemon…` each manifest depends on
/// (normal and target-specific dependencies; dev-dependencies are test
/// scaffolding and excluded).
fn crate_graph() -> Graph {
    let mut manifests: Vec<PathBuf> = fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("Cargo.toml"))
        .filter(|p| p.is_file())
        .collect();
    manifests.push(root().join("python/Cargo.toml"));
    manifests.push(root().join("node/Cargo.toml"));
    let mut g = Graph::new();
    for m in manifests {
        let text = fs::read_to_string(&m).unwrap();
        let mut name = None;
        let mut deps = BTreeSet::new();
        let mut section = String::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line.trim_matches(|c| c == '[' || c == ']').to_string();
                continue;
            }
            let Some((key, value)) = line.split_once('=') else { continue };
            let key = key.trim();
            if section == "package" && key == "name" {
                name = Some(value.trim().trim_matches('"').to_string());
            }
            let normal =
                section == "dependencies" || (section.starts_with("target.") && section.ends_with(".dependencies"));
            let key = key.split('.').next().unwrap();
            if normal && key.starts_with("mnemon") {
                deps.insert(key.to_string());
            }
        }
        g.insert(name.unwrap_or_else(|| panic!("{} has no package name", m.display())), deps);
    }
    g
}

/// The engine's top-level modules each module imports (`crate::m…`, also
/// inside grouped `use crate::{…}`); `error.rs`, `types.rs`, `cancel.rs`
/// and `crash.rs` count as one node, `(root)`.
fn engine_graph() -> Graph {
    let src = root().join("crates/mnemon/src");
    let node = |m: &str| -> String {
        match m {
            "error" | "types" | "cancel" | "crash" => "(root)".to_string(),
            m => m.to_string(),
        }
    };
    let mut modules = BTreeSet::new();
    for e in fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        if stem != "lib" && (p.is_dir() || p.extension().is_some_and(|x| x == "rs")) {
            modules.insert(stem);
        }
    }
    let mut g: Graph = modules.iter().map(|m| (node(m), BTreeSet::new())).collect();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") || p == src.join("lib.rs") {
                continue;
            }
            let top = p.strip_prefix(&src).unwrap().components().next().unwrap().as_os_str().to_string_lossy();
            let from = node(top.trim_end_matches(".rs"));
            let code: String = fs::read_to_string(&p)
                .unwrap()
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            let mut used = BTreeSet::new();
            for (at, _) in code.match_indices("crate::") {
                let rest = &code[at + "crate::".len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    let end = group.find("};").unwrap_or(group.len());
                    for part in group[..end].split(',') {
                        let name: String =
                            part.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        if part.trim()[name.len()..].starts_with("::") {
                            used.insert(name);
                        }
                    }
                } else {
                    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    used.insert(name);
                }
            }
            for m in used.iter().filter(|m| modules.contains(*m)) {
                let to = node(m);
                if to != from {
                    g.get_mut(&from).unwrap().insert(to);
                }
            }
        }
    }
    g
}

#[test]
fn crates_depend_only_as_the_architecture_allows() {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let bad = compare("crates", &crate_graph(), &table(&doc, "crates"));
    assert!(bad.is_empty(), "docs/ARCHITECTURE.md, \"Crates\":\n{}", bad.join("\n"));
}

#[test]
fn engine_folders_import_only_as_the_architecture_allows() {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let bad = compare("engine", &engine_graph(), &table(&doc, "engine layers"));
    assert!(bad.is_empty(), "docs/ARCHITECTURE.md, \"Layers of the engine\":\n{}", bad.join("\n"));
}

/// The checker itself: a cycle, a missing row and an import the table does
/// not allow are each reported.
#[test]
fn the_checker_reports_what_breaks_the_rules() {
    let g = |edges: &[(&str, &[&str])]| -> Graph {
        edges.iter().map(|(f, t)| (f.to_string(), t.iter().map(|s| s.to_string()).collect())).collect()
    };
    let allowed = g(&[("a", &[]), ("b", &["a"]), ("c", &["a", "b"])]);
    assert!(compare("t", &g(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]), &allowed).is_empty());
    let bad = compare("t", &g(&[("a", &["b"]), ("b", &["a"]), ("c", &[])]), &allowed);
    assert_eq!(bad, ["t: `a` depends on `b`, which its row does not allow"]);
    let bad = compare("t", &g(&[("a", &[]), ("b", &[]), ("c", &[]), ("d", &[])]), &allowed);
    assert_eq!(bad, ["t: `d` has no row in the table"]);
    let cyclic = g(&[("a", &["c"]), ("b", &["a"]), ("c", &["b"])]);
    assert!(compare("t", &g(&[("a", &[]), ("b", &[]), ("c", &[])]), &cyclic)[0].contains("cycle"));
    let doc = "x\n<!-- begin t -->\n| name | may |\n| --- | --- |\n| `a` | — |\n| `b` | `a` |\n<!-- end t -->\n";
    assert_eq!(table(doc, "t"), g(&[("a", &[]), ("b", &["a"])]));
}
