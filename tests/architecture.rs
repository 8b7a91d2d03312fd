//! Rules about the code's shape that the compiler cannot hold: model names
//! live in the registry only, no source file outgrows one job, and the
//! functions issue 17 shortened stay short. Each failure names the file and
//! line to change.

use std::path::{Path, PathBuf};

use loadlab::catalog::models::Model;

/// Where hand-kept lists of models could hide.
const SCANNED: [&str; 5] = ["src", "tests", "scripts", "examples", ".ci"];
/// The one place that names every model.
const REGISTRY_FILE: &str = "src/catalog/models.rs";
/// A comment with this on a list's first line, or in the comment lines
/// right above it, says the list is a deliberate choice of models (and
/// why), not a copy of the registry: e.g. the two models a stress test
/// compares.
const SUBSET_MARKER: &str = "model subset:";
/// Longest .rs file in src/ and tests/: past this, a file does more than
/// one job.
const MAX_FILE_LINES: usize = 600;
/// Where files are held to `MAX_FILE_LINES`, subdirectories included.
const SIZED_DIRS: [&str; 2] = ["src", "tests"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir`, sorted, so failures come out in a stable order.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => out.extend(files_under(&path)),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
    out.sort();
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

// ------------------------------------------------------------ model names

/// How a file's text is read: in Rust, model names count in string
/// literals and comments (identifiers such as `Model::Prefork` are checked
/// by the compiler); in scripts, everywhere.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Syntax {
    Rust,
    Script,
}

fn syntax_of(path: &Path, text: &str) -> Option<Syntax> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("rs") => Some(Syntax::Rust),
        Some("sh" | "bash" | "py") => Some(Syntax::Script),
        // Extensionless scripts such as .ci/run.
        None if text.starts_with("#!") => Some(Syntax::Script),
        // Data files (fixtures, golden outputs) are not lists people keep.
        _ => None,
    }
}

/// The registry's model names found as words in `text` (a word is a run
/// of letters, digits, `-` and `_`, so `reactors-nodefer` is no mention).
fn names_in(text: &str, names: &[&'static str]) -> Vec<&'static str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .filter_map(|w| names.iter().copied().find(|n| *n == w))
        .collect()
}

/// Where a Rust line ends: in code, or inside a string literal that goes
/// on (raw strings remember their `#` count).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lexed {
    Code,
    Str,
    RawStr(usize),
}

/// One line of a Rust file split into what counts (string literal text and
/// comment text) and the code around them (for brackets). `state` carries a
/// string literal across lines.
fn rust_line(line: &str, state: &mut Lexed) -> (String, String) {
    let b = line.as_bytes();
    let is_ident = |i: usize| i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_');
    // `r` starts a raw string only as a word of its own or after a lone `b`.
    let raw_prefix =
        |i: usize| i == 0 || !is_ident(i - 1) || (b[i - 1] == b'b' && (i == 1 || !is_ident(i - 2)));
    let (mut counted, mut code) = (String::new(), String::new());
    let mut i = 0;
    while i < b.len() {
        match *state {
            Lexed::Str => match b[i] {
                b'\\' => i += 1,
                b'"' => *state = Lexed::Code,
                c => counted.push(c as char),
            },
            Lexed::RawStr(n) => {
                let closes =
                    b[i] == b'"' && b[i + 1..].iter().take_while(|&&c| c == b'#').count() >= n;
                if closes {
                    *state = Lexed::Code;
                    i += n;
                } else {
                    counted.push(b[i] as char);
                }
            }
            Lexed::Code => match b[i] {
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    counted.push(' ');
                    counted.push_str(&line[i..]);
                    break;
                }
                b'"' => {
                    counted.push(' ');
                    *state = Lexed::Str;
                }
                // r"..", r#".."#, br#".."#: no escapes inside.
                b'r' if raw_prefix(i) => {
                    let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                    if b.get(i + 1 + hashes) == Some(&b'"') {
                        counted.push(' ');
                        *state = Lexed::RawStr(hashes);
                        i += hashes + 1;
                    } else {
                        code.push('r');
                    }
                }
                // A char literal ('"' or '\"') is no string; a lifetime
                // ('a) has no closing quote.
                b'\'' if b.get(i + 1) == Some(&b'\\') => {
                    i += b[i.saturating_add(3).min(b.len())..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map_or(1, |p| p + 3);
                }
                b'\'' if b.get(i + 2) == Some(&b'\'') => i += 2,
                c => code.push(c as char),
            },
        }
        i += 1;
    }
    (counted, code)
}

/// A hand-kept list of models: where it starts and the names it holds.
#[derive(Debug, PartialEq, Eq)]
struct Finding {
    line: usize,
    names: Vec<&'static str>,
}

/// Lines, bracketed lists (`[...]` across lines, in Rust code) and string
/// literals across lines that name two or more distinct models, unless
/// marked as a deliberate subset.
fn model_lists(text: &str, syntax: Syntax, names: &[&'static str]) -> Vec<Finding> {
    let lines: Vec<&str> = text.lines().collect();
    let is_comment = |l: &str| {
        let t = l.trim_start();
        t.starts_with("//") || t.starts_with('#')
    };
    let marked = |i: usize| {
        lines[i].contains(SUBSET_MARKER)
            || lines[..i]
                .iter()
                .rev()
                .take_while(|l| is_comment(l))
                .any(|l| l.contains(SUBSET_MARKER))
    };
    let mut found = Vec::new();
    let mut report = |start: usize, mut seen: Vec<&'static str>| {
        seen.sort_unstable();
        seen.dedup();
        if seen.len() >= 2 && !found.iter().any(|f: &Finding| f.line == start + 1) {
            found.push(Finding {
                line: start + 1,
                names: seen,
            });
        }
    };
    // Open groups: the line each started on, the names seen inside, and
    // whether it is marked (a mark covers everything inside).
    let mut brackets: Vec<(usize, Vec<&'static str>, bool)> = Vec::new();
    let mut string: Option<(usize, Vec<&'static str>)> = None;
    let mut state = Lexed::Code;
    for (i, line) in lines.iter().enumerate() {
        let (countable, code) = match syntax {
            Syntax::Script => (line.to_string(), String::new()),
            Syntax::Rust => rust_line(line, &mut state),
        };
        let here = names_in(&countable, names);
        let covered = marked(i) || brackets.iter().any(|b| b.2);
        if !covered {
            report(i, here.clone());
        }
        for (_, seen, _) in brackets.iter_mut() {
            seen.extend(&here);
        }
        if let Some((_, seen)) = string.as_mut() {
            seen.extend(&here);
        }
        for c in code.chars() {
            match c {
                '[' => brackets.push((i, here.clone(), covered)),
                ']' => match brackets.pop() {
                    Some((start, seen, false)) if start != i => report(start, seen),
                    _ => {}
                },
                _ => {}
            }
        }
        match (&mut string, state != Lexed::Code) {
            (None, true) if !covered => string = Some((i, here)),
            (Some(_), false) => {
                let (start, seen) = string.take().unwrap();
                report(start, seen);
            }
            _ => {}
        }
    }
    found
}

fn all_names() -> Vec<&'static str> {
    Model::ALL.iter().map(|m| m.name()).collect()
}

#[test]
fn model_names_live_only_in_the_registry() {
    let names = all_names();
    let mut failures = Vec::new();
    for dir in SCANNED {
        for path in files_under(&root().join(dir)) {
            let rel = relative(&path);
            if rel == REGISTRY_FILE {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Some(syntax) = syntax_of(&path, &text) else {
                continue;
            };
            for f in model_lists(&text, syntax, &names) {
                failures.push(format!("{rel}:{}: names {}", f.line, f.names.join(", ")));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "hand-kept lists of models; read them from the registry ({REGISTRY_FILE}: \
         Model::ALL, `loadlab serve --list-models`, per_model!), or mark a deliberate \
         choice with a `{SUBSET_MARKER} why` comment:\n{}",
        failures.join("\n")
    );
}

/// The scanner itself, on text made from the registry's names (this file
/// names no model, so it passes its own scan).
#[test]
fn the_model_list_scanner_catches_lists_and_lets_prose_pass() {
    let names = all_names();
    let (a, b) = (names[0], names[1]);
    let rust = |t: &str| model_lists(t, Syntax::Rust, &names);
    let script = |t: &str| model_lists(t, Syntax::Script, &names);
    let at = |v: Vec<Finding>| v.iter().map(|f| f.line).collect::<Vec<_>>();

    // Lists: on one line, down a bracket, inside one string, in a script.
    assert_eq!(at(rust(&format!("let m = [\"{a}\", \"{b}\"];"))), [1]);
    assert_eq!(at(rust(&format!("x(\"--models {a},{b}\");"))), [1]);
    assert_eq!(
        at(rust(&format!("fn f() {{\n    for m in [\n        (\"{a}\", 1),\n        (\"{b}\", 2),\n    ] {{}}\n}}"))),
        [2]
    );
    assert_eq!(
        at(rust(&format!("let s = \"first {a},\\\n    then {b}\";"))),
        [1]
    );
    assert_eq!(at(rust(&format!("/// Models: {a}, {b}."))), [1]);
    assert_eq!(at(script(&format!("models=\"{a} {b}\""))), [1]);
    assert_eq!(at(script(&format!("for m in {a} {b}; do"))), [1]);

    // Not lists: one model in prose or code, two statements, identifiers,
    // a longer word that contains a name, a marked subset.
    assert!(rust(&format!("/// The {a} model serves one at a time.")).is_empty());
    assert!(rust(&format!("start(\"{a}\");\nstart(\"{b}\");")).is_empty());
    assert!(rust("match m { Model::Prefork | Model::Reactors => {} }").is_empty());
    assert!(script(&format!("x=({a}-nodefer {b}-nodefer)")).is_empty());
    assert!(rust(&format!(
        "// {SUBSET_MARKER} the two it compares\nlet m = [\"{a}\", \"{b}\"];"
    ))
    .is_empty());
    assert!(rust(&format!(
        "// {SUBSET_MARKER} the two it\n// compares\nlet m = [\"{a}\", \"{b}\"];"
    ))
    .is_empty());
    assert_eq!(
        at(rust(&format!(
            "// {SUBSET_MARKER} x\nlet y = 1;\nlet m = [\"{a}\", \"{b}\"];"
        ))),
        [3]
    );
    assert!(rust(&format!(
        "// {SUBSET_MARKER} the two it compares\nrun(&[\n    \"--models\",\n    \"{a},{b}\",\n    \"-T\",\n    \"{a}\",\n]);"
    ))
    .is_empty());
    assert!(rust(&format!("let q = b'\"'; let m = \"{a}\"; let c = '\"';")).is_empty());
}

/// The stress schema keeps its model enum, so that readers of stress.json
/// see the values; it is held to the registry here instead of by hand.
#[test]
fn stress_schema_lists_the_registry_models() {
    let path = root().join("docs/schema/stress-v1.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let listed: Vec<&str> = schema["$defs"]["model"]["enum"]
        .as_array()
        .expect("$defs.model.enum")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        all_names(),
        "docs/schema/stress-v1.schema.json $defs.model.enum is not the registry's list"
    );
}

// ------------------------------------------------------------- file sizes

#[test]
fn no_source_file_over_600_lines() {
    let mut over = Vec::new();
    for path in SIZED_DIRS
        .iter()
        .flat_map(|dir| files_under(&root().join(dir)))
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
    {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let n = text.lines().count();
        if n > MAX_FILE_LINES {
            over.push(format!("{}: {n} lines", relative(&path)));
        }
    }
    assert!(
        over.is_empty(),
        "files in {SIZED_DIRS:?} over {MAX_FILE_LINES} lines (split them by job):\n{}",
        over.join("\n")
    );
}

// ------------------------------------------------------- function lengths

/// Lines of `fn name` in `file` (relative to the crate root), from its
/// `fn` line to the closing brace at the same indentation, both included.
fn fn_lines(file: &str, name: &str) -> usize {
    let text = std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let is_start = |l: &str| {
        let t = l.trim_start();
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let t = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub(super) "))
            .unwrap_or(t);
        t.strip_prefix("fn ")
            .and_then(|r| r.strip_prefix(name))
            .is_some_and(|r| r.starts_with(['(', '<']))
    };
    let start = lines
        .iter()
        .position(|l| is_start(l))
        .unwrap_or_else(|| panic!("{file}: no fn {name}"));
    let indent = &lines[start][..lines[start].len() - lines[start].trim_start().len()];
    let end = lines[start..]
        .iter()
        .position(|l| l.strip_prefix(indent) == Some("}"))
        .unwrap_or_else(|| panic!("{file}: fn {name} has no closing brace at its indentation"));
    end + 1
}

/// Fails if `fn name` in `file` has `max` lines or more.
fn assert_shorter_than(file: &str, name: &str, max: usize) {
    let n = fn_lines(file, name);
    assert!(
        n < max,
        "{file}: fn {name} is {n} lines; keep it under {max} (issue 17)"
    );
}

#[test]
fn long_functions_named_by_issue_17_are_short() {
    assert_shorter_than("src/server/models/event_loop.rs", "run_loop", 80);
    // lab::sweep::run became lab::execute::run when planning moved out.
    assert_shorter_than("src/lab/execute.rs", "run", 80);
}

#[test]
fn function_length_counts_from_fn_to_its_closing_brace() {
    // This file's own helper, measured against a count by hand.
    let text = std::fs::read_to_string(root().join("tests/architecture.rs")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("fn assert_shorter_than("))
        .unwrap();
    let last = first + lines[first..].iter().position(|l| *l == "}").unwrap();
    assert_eq!(
        fn_lines("tests/architecture.rs", "assert_shorter_than"),
        last - first + 1
    );
}
