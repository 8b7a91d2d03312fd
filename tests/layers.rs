//! The dependency rule of lib.rs (and shared/DESIGN.md), held by reading the source:
//! every `crate::` and `super::` path in src/ (in `use` trees and inline
//! alike) is resolved to the module it names, and
//! - a path from one top-level module into another must be an allowed edge
//!   (anything not listed in `ALLOWED` is forbidden);
//! - no two files import each other, directly or round a longer cycle.
//!   Paths through a `mod.rs` that only declares and re-exports are
//!   followed to the file that defines the item; a module's own file
//!   reaching into its children is its structure, not an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module -> the modules it may use. `sys` and `catalog` are
/// leaves every job may use; `cli` may use everything.
const ALLOWED: &[(&str, &[&str])] = &[
    ("cli", &["*"]),
    (
        "lab",
        &[
            "bench", "check", "server", "results", "proc", "net", "http", "stats", "catalog", "sys",
        ],
    ),
    (
        "stress",
        &["results", "proc", "net", "http", "catalog", "sys"],
    ),
    (
        "check",
        &["results", "proc", "net", "http", "catalog", "sys"],
    ),
    ("report", &["results", "stats", "catalog", "sys"]),
    ("bench", &["net", "http", "stats", "catalog", "sys"]),
    ("server", &["http", "results", "catalog", "sys"]),
    ("results", &["http", "stats", "catalog", "sys"]),
    ("proc", &["results", "net", "http", "catalog", "sys"]),
    ("net", &["http", "sys"]),
    ("http", &["sys"]),
    ("catalog", &["sys"]),
    ("stats", &[]),
    ("sys", &[]),
];

/// What `lab` may take from `server`: the embedded docroot and the listen
/// constants (the model registry is `catalog::models`).
const LAB_FROM_SERVER: &[&str] = &[
    "server::handlers::write_embedded_docroot",
    "server::LISTEN_BACKLOG",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file: src/lab/plan.rs -> ["lab", "plan"],
/// src/lab/mod.rs -> ["lab"], src/lib.rs -> [].
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Source with comments and string literals blanked out, so a path in a
/// doc comment or a message is not taken for an import.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A char literal such as '{' would unbalance a use tree.
            i += 3;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path that starts with `crate::`, `$crate::`, `super::` or the
/// name of one of the file's own child modules (`files::route`), with
/// `use` trees expanded (`use super::{a, b::{C, D}}` gives three paths).
fn paths_in(code: &str, children: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut starts_with: Vec<String> = vec!["crate::".into(), "super::".into()];
    starts_with.extend(children.iter().map(|c| format!("{c}::")));
    let mut i = 0;
    while i < chars.len() {
        let before_ok = i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':');
        let starts = before_ok
            && starts_with.iter().any(|s| {
                s.chars()
                    .enumerate()
                    .all(|(k, c)| chars.get(i + k) == Some(&c))
            });
        if !starts {
            i += 1;
            continue;
        }
        let (tree, end) = read_tree(&chars, i);
        expand("", &tree, &mut out);
        i = end.max(i + 1);
    }
    out
}

/// Reads a path or use tree starting at `i`: identifiers, `::`, `{`, `}`,
/// `,`, `*`, `self` and `as` renames, up to where it ends.
fn read_tree(chars: &[char], mut i: usize) -> (String, usize) {
    let mut s = String::new();
    let mut depth = 0i32;
    while i < chars.len() {
        let c = chars[i];
        if is_ident(c) || c == ':' || c == '*' {
            s.push(c);
        } else if c == '{' {
            depth += 1;
            s.push(c);
        } else if c == '}' {
            if depth == 0 {
                break;
            }
            depth -= 1;
            s.push(c);
        } else if c == ',' && depth > 0 {
            s.push(c);
        } else if c.is_whitespace() && depth > 0 {
            s.push(' ');
        } else {
            break;
        }
        i += 1;
    }
    (s, i)
}

/// Expands `prefix` + a use tree into whole paths; `as` renames and `self`
/// are dropped.
fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or("").trim();
        let path = path.trim_end_matches("::self").trim_end_matches("::");
        if !path.is_empty() && path != "self" {
            out.push(format!("{prefix}{path}"));
        } else if path == "self" {
            out.push(prefix.trim_end_matches("::").to_string());
        }
        return;
    };
    let head = &tree[..open];
    let body = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut depth = 0;
    let mut start = 0;
    for (k, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand(&format!("{prefix}{head}"), &body[start..k], out);
                start = k + 1;
            }
            _ => {}
        }
    }
    expand(&format!("{prefix}{head}"), &body[start..], out);
}

/// The module path a `crate::`/`super::` path names, from the module of
/// the file it stands in; identifiers after the last module are items.
fn absolute(from: &[String], path: &str) -> Vec<String> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = Vec::new();
    match segs.first() {
        Some(&"crate") | Some(&"$crate") => {
            segs.remove(0);
        }
        Some(&"super") => {
            base = from.to_vec();
            while segs.first() == Some(&"super") {
                segs.remove(0);
                base.pop();
            }
        }
        // A child module of the file's own module.
        _ => base = from.to_vec(),
    }
    base.extend(segs.iter().map(|s| s.to_string()));
    base
}

struct Tree {
    /// Module path -> file.
    files: BTreeMap<Vec<String>, PathBuf>,
    /// File -> the child modules it declares (`mod x;`).
    children: BTreeMap<PathBuf, Vec<String>>,
    /// Files that define items of their own (outside tests), as opposed to
    /// a facade that only declares modules and re-exports.
    defines_items: BTreeSet<PathBuf>,
    /// File -> (re-exported name -> module path of the item's file).
    reexports: BTreeMap<PathBuf, BTreeMap<String, Vec<String>>>,
    /// `#[macro_export]` macro name -> module of the file defining it.
    macros: BTreeMap<String, Vec<String>>,
}

impl Tree {
    fn read() -> (Tree, Vec<(PathBuf, String)>) {
        let mut list = Vec::new();
        rust_files(&src(), &mut list);
        let mut tree = Tree {
            files: BTreeMap::new(),
            children: BTreeMap::new(),
            defines_items: BTreeSet::new(),
            reexports: BTreeMap::new(),
            macros: BTreeMap::new(),
        };
        let mut sources = Vec::new();
        for f in list {
            let text = std::fs::read_to_string(&f).expect("read source");
            let code = code_only(&text);
            let module = module_of(&f);
            for l in code.lines().filter(|l| l.contains("macro_rules!")) {
                let name: String = l
                    .split("macro_rules!")
                    .nth(1)
                    .unwrap_or("")
                    .trim()
                    .chars()
                    .take_while(|c| is_ident(*c))
                    .collect();
                tree.macros.insert(name, module.clone());
            }
            tree.files.insert(module, f.clone());
            tree.children.insert(f.clone(), child_modules(&code));
            if defines_items(&code) {
                tree.defines_items.insert(f.clone());
            }
            sources.push((f, code));
        }
        for (f, code) in &sources {
            let module = module_of(f);
            let mut re = BTreeMap::new();
            for stmt in code
                .split(';')
                .filter(|s| s.trim_start().starts_with("pub use "))
            {
                let tree_text = stmt.trim_start().trim_start_matches("pub use ").trim();
                let mut paths = Vec::new();
                expand("", tree_text, &mut paths);
                for p in paths {
                    let full = if p.starts_with("crate::") || p.starts_with("super::") {
                        absolute(&module, &p)
                    } else {
                        let mut m = module.clone();
                        m.extend(p.split("::").map(str::to_string));
                        m
                    };
                    if let Some(name) = full.last() {
                        re.insert(name.clone(), full.clone());
                    }
                }
            }
            tree.reexports.insert(f.clone(), re);
        }
        (tree, sources)
    }

    /// The file that defines what `path` (absolute) names: the deepest
    /// module file on the path, followed through a facade's re-exports.
    fn resolve(&self, path: &[String], hops: usize) -> Option<(PathBuf, Vec<String>)> {
        if path.len() == 1 {
            if let Some(m) = self.macros.get(&path[0]) {
                return Some((self.files.get(m)?.clone(), m.clone()));
            }
        }
        let mut k = path.len();
        while k > 0 {
            if let Some(f) = self.files.get(&path[..k]) {
                if k < path.len() && hops < 8 {
                    if let Some(target) = self.reexports.get(f).and_then(|r| r.get(&path[k])) {
                        let mut next = target.clone();
                        next.extend(path[k + 1..].iter().cloned());
                        return self.resolve(&next, hops + 1);
                    }
                }
                return Some((f.clone(), path[..k].to_vec()));
            }
            k -= 1;
        }
        None
    }
}

/// `mod x;` and `pub mod x;` declarations: the file's child modules.
fn child_modules(code: &str) -> Vec<String> {
    code.lines()
        .map(str::trim)
        .filter_map(|l| {
            let l = l.strip_prefix("pub ").unwrap_or(l);
            let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
            l.strip_prefix("mod ")?.strip_suffix(';')
        })
        .map(str::to_string)
        .collect()
}

/// Whether the file defines anything itself (before its tests): a
/// function, type, trait, constant or impl.
fn defines_items(code: &str) -> bool {
    let code = code.split("#[cfg(test)]").next().unwrap_or(code);
    code.lines().any(|l| {
        let mut l = l.trim_start();
        if let Some(rest) = l.strip_prefix("pub") {
            l = rest.trim_start();
            if l.starts_with('(') {
                l = l.split_once(')').map_or("", |(_, r)| r).trim_start();
            }
        }
        [
            "fn ", "struct ", "enum ", "trait ", "const ", "static ", "type ", "impl",
        ]
        .iter()
        .any(|k| l.starts_with(k))
    })
}

fn allowed(from: &str, to: &str, path: &[String]) -> bool {
    if from == to {
        return true;
    }
    let Some((_, targets)) = ALLOWED.iter().find(|(m, _)| *m == from) else {
        return false;
    };
    if !(targets.contains(&"*") || targets.contains(&to)) {
        return false;
    }
    if (from, to) == ("lab", "server") {
        let joined = path.join("::");
        return LAB_FROM_SERVER.iter().any(|p| joined.starts_with(p));
    }
    true
}

#[test]
fn every_path_follows_the_dependency_rule() {
    let (tree, sources) = Tree::read();
    let mut bad = Vec::new();
    let mut count = 0;
    for (f, code) in &sources {
        let module = module_of(f);
        let Some(from) = module.first() else { continue };
        for p in paths_in(code, &tree.children[f]) {
            let abs = absolute(&module, &p);
            let Some(to) = abs.first() else { continue };
            let to = tree
                .macros
                .get(to)
                .and_then(|m| m.first())
                .unwrap_or(to)
                .clone();
            count += 1;
            if !allowed(from, &to, &abs) {
                bad.push(format!(
                    "{}: {p} ({from} -> {to})",
                    f.strip_prefix(src()).unwrap().display()
                ));
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(count > 200, "only {count} paths read: the reader is broken");
    assert!(
        bad.is_empty(),
        "paths that break the dependency rule:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_two_files_import_each_other() {
    let (tree, sources) = Tree::read();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (f, code) in &sources {
        let module = module_of(f);
        for p in paths_in(code, &tree.children[f]) {
            let abs = absolute(&module, &p);
            if let Some((to, _)) = tree.resolve(&abs, 0) {
                // A facade (a mod.rs or lib.rs that defines nothing itself)
                // declares and re-exports; a path that still points at it
                // after re-exports are followed names a module, not an
                // import from a file.
                let facade = (to.ends_with("mod.rs") || to.ends_with("lib.rs"))
                    && !tree.defines_items.contains(&to);
                // A module's own file reaching into its children (a router
                // calling its handlers) is the module's structure; what
                // counts are imports between files that are not parent and
                // child: siblings, cousins, and children back to a parent
                // that reaches elsewhere.
                let own_child = (f.ends_with("mod.rs") || f.ends_with("lib.rs"))
                    && f.parent().is_some_and(|dir| to.starts_with(dir));
                if own_child {
                    continue;
                }
                if to != *f && !facade {
                    edges.entry(f.clone()).or_default().insert(to);
                }
            }
        }
    }
    let cycles = find_cycles(&edges);
    let show = |c: &Vec<PathBuf>| {
        c.iter()
            .map(|p| p.strip_prefix(src()).unwrap().display().to_string())
            .collect::<Vec<_>>()
            .join(" -> ")
    };
    assert!(
        cycles.is_empty(),
        "files that import each other:\n{}",
        cycles.iter().map(show).collect::<Vec<_>>().join("\n")
    );
}

/// Each cycle once, found by depth-first search.
fn find_cycles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    fn visit(
        n: &PathBuf,
        edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        stack: &mut Vec<PathBuf>,
        done: &mut BTreeSet<PathBuf>,
        out: &mut Vec<Vec<PathBuf>>,
    ) {
        if let Some(at) = stack.iter().position(|s| s == n) {
            let mut c = stack[at..].to_vec();
            c.push(n.clone());
            out.push(c);
            return;
        }
        if done.contains(n) {
            return;
        }
        stack.push(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            visit(m, edges, stack, done, out);
        }
        stack.pop();
        done.insert(n.clone());
    }
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for n in edges.keys() {
        visit(n, edges, &mut Vec::new(), &mut done, &mut out);
    }
    out
}

#[test]
fn the_reader_sees_use_trees_and_inline_paths() {
    let code = code_only(
        "use super::{a, b::{C, D as E}};\n// crate::in_a::comment\nlet x = crate::lab::raw::X; \"crate::in_a_string\"",
    );
    let paths = paths_in(&code, &[]);
    assert_eq!(
        paths,
        [
            "super::a",
            "super::b::C",
            "super::b::D",
            "crate::lab::raw::X"
        ]
    );
    let from = vec!["report".to_string(), "page".to_string()];
    assert_eq!(
        absolute(&from, "super::table::Table"),
        ["report", "table", "Table"]
    );
    assert!(!allowed(
        "report",
        "lab",
        &absolute(&from, "crate::lab::raw::X")
    ));
    assert!(allowed("cli", "lab", &[]));
    assert!(!allowed(
        "lab",
        "server",
        &absolute(&from, "crate::server::handlers::files::stale")
    ));
}

#[test]
fn the_cycle_finder_finds_a_cycle_of_three() {
    let p = |s: &str| PathBuf::from(s);
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    edges.entry(p("a")).or_default().insert(p("b"));
    edges.entry(p("b")).or_default().insert(p("c"));
    edges.entry(p("c")).or_default().insert(p("a"));
    edges.entry(p("c")).or_default().insert(p("d"));
    assert_eq!(find_cycles(&edges), [vec![p("a"), p("b"), p("c"), p("a")]]);
    edges.get_mut(&p("c")).unwrap().remove(&p("a"));
    assert!(find_cycles(&edges).is_empty());
}

#[test]
fn a_facade_defines_nothing_and_child_paths_are_read() {
    let children = child_modules("mod files;\npub mod synthetic;\n");
    assert_eq!(children, ["files", "synthetic"]);
    let mod_rs = code_only("fn route() { files::route(); x::files::y(); }");
    assert_eq!(paths_in(&mod_rs, &children), ["files::route"]);
    assert_eq!(
        absolute(&["server".to_string()], "files::route"),
        ["server", "files", "route"]
    );
    assert!(defines_items("pub(crate) fn x() {}") && defines_items("impl A {}"));
    assert!(!defines_items(
        "pub mod a;\npub use a::B;\n#[cfg(test)]\nmod tests { fn t() {} }"
    ));
}

#[test]
fn no_model_imports_from_another_model_s_file() {
    let (_, sources) = Tree::read();
    let (mut bad, mut count) = (Vec::new(), 0);
    for (f, code) in &sources {
        let module = module_of(f);
        let [s, m, own, ..] = module.as_slice() else {
            continue;
        };
        if (s.as_str(), m.as_str()) != ("server", "models") {
            continue;
        }
        // A file's tests sit in an inline module, where `super` is the file.
        let code = code.split("#[cfg(test)]").next().unwrap_or(code);
        for p in paths_in(code, &[]) {
            let abs = absolute(&module, &p);
            if let [s, m, other, ..] = abs.as_slice() {
                if (s.as_str(), m.as_str()) == ("server", "models") {
                    count += 1;
                    if other != own {
                        let f = f.strip_prefix(src()).unwrap().display();
                        bad.push(format!("{f}: {p} ({own} -> {other})"));
                    }
                }
            }
        }
    }
    assert!(count > 5, "only {count} paths read: the reader is broken");
    assert!(
        bad.is_empty(),
        "a model's file imports another model's: share it from server/ instead:\n{}",
        bad.join("\n")
    );
}
