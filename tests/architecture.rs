//! The layers of `src/` point down only.
//!
//! Reads every module file of `src/` as text, takes the modules each one names (`use` items,
//! `crate::` / `super::` / `self::` paths, and a parent's paths into its own child modules), and
//! fails on:
//!
//! - an import circle: modules that name each other, directly or round a loop (a file that only
//!   declares and re-exports its children is a module too: a child naming its own parent's
//!   re-exports closes a loop, so children name their siblings directly);
//! - a module of the core (`core`) naming the Bevy layer or an integration;
//! - a module of the Bevy layer (`plugin`) naming an integration (`tilemap`, `avian`, `debug`).
//!
//! Test code (`#[cfg(test)]` items) is left out: tests may reach anything.
//!
//! A second check keeps functions short: no function outside test code runs over
//! [`MAX_FUNCTION_LINES`] lines, but for the hot loops listed in [`LONG_HOT_LOOPS`] (a search's
//! inner loop reads best whole, and splitting it has cost speed before).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module: its path from the crate root (`["core", "grid"]`) and its source file.
#[derive(Debug)]
struct Module {
    path: Vec<String>,
    file: PathBuf,
}

fn modules(src: &Path) -> Vec<Module> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .expect("src/ is readable")
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(src).expect("under src");
                let mut path: Vec<String> = rel
                    .with_extension("")
                    .iter()
                    .map(|s| s.to_string_lossy().into_owned())
                    .collect();
                if path.last().is_some_and(|l| l == "mod" || l == "lib") {
                    path.pop();
                }
                out.push(Module { path, file: p });
            }
        }
    }
    out
}

/// The source with comments, string and char literals blanked and `#[cfg(test)]` items cut.
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'r' && (b[i..].starts_with(b"r\"") || b[i..].starts_with(b"r#")) {
            // Raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while j < b.len() && b[j] == b'#' {
                hashes += 1;
                j += 1;
            }
            if j < b.len() && b[j] == b'"' {
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                j += 1;
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                i = j + close.len();
                out.push_str("\"\"");
            } else {
                out.push('r');
                i += 1;
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\'') or a lifetime ('a).
            if i + 2 < b.len() && b[i + 1] == b'\\' {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if i + 2 < b.len() && b[i + 2] == b'\'' {
                i += 3;
                out.push_str("' '");
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            let ch = text[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    cut_test_items(&out)
}

/// Cuts every item marked `#[cfg(test)]`: up to its `;`, or its whole `{ ... }` body.
fn cut_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let semi = after.find(';');
        let brace = after.find('{');
        let end = match (semi, brace) {
            (Some(s), Some(b)) if s < b => s + 1,
            (Some(s), None) => s + 1,
            (_, Some(b)) => {
                let mut depth = 0;
                let mut end = after.len();
                for (k, c) in after[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, None) => after.len(),
        };
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Files declared `#[cfg(test)] mod name;`: test-only modules.
fn test_only_children(text: &str) -> Vec<String> {
    let code = text.replace(['\n', '\r'], " ");
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let decl = after.strip_prefix("pub(crate) ").unwrap_or(after);
        if let Some(m) = decl.strip_prefix("mod ")
            && let Some(semi) = m.find(';')
            && !m[..semi].contains('{')
        {
            out.push(m[..semi].trim().to_string());
        }
        rest = &rest[at + 1..];
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path the code names: `use` trees expanded, and paths in expressions and types.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `use` items first, cut out of what is scanned for other paths.
    let mut rest = String::new();
    let mut s = code;
    loop {
        let Some(at) = find_keyword(s, "use") else {
            rest.push_str(s);
            break;
        };
        rest.push_str(&s[..at]);
        let end = s[at..].find(';').map_or(s.len(), |e| at + e + 1);
        let tree = s[at + 3..end - 1]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let tree = ["::", "{", "}", ","].iter().fold(tree, |t, tok| {
            t.replace(&format!(" {tok}"), tok)
                .replace(&format!("{tok} "), tok)
        });
        expand_use(&tree, &mut Vec::new(), &mut out);
        s = &s[end..];
    }
    // Paths elsewhere: `a::b::c` runs of identifiers.
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if is_ident(chars[i]) && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            let mut segs = Vec::new();
            let mut j = i;
            loop {
                let start = j;
                while j < chars.len() && is_ident(chars[j]) {
                    j += 1;
                }
                segs.push(chars[start..j].iter().collect::<String>());
                if j + 2 < chars.len() && chars[j] == ':' && chars[j + 1] == ':' {
                    let k = j + 2;
                    if k < chars.len() && is_ident(chars[k]) {
                        j = k;
                        continue;
                    }
                }
                break;
            }
            if segs.len() > 1 {
                out.push(segs);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The byte offset of the keyword `word` standing alone, if any.
fn find_keyword(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(k) = s[from..].find(word) {
        let at = from + k;
        let before = s[..at].chars().next_back();
        let after = s[at + word.len()..].chars().next();
        if !before.is_some_and(is_ident) && after.is_some_and(char::is_whitespace) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// Expands a `use` tree (no whitespace but round `as`) under `prefix`.
fn expand_use(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.strip_prefix("::").unwrap_or(tree);
    if let Some(open) = tree.find('{')
        && tree.ends_with('}')
        && tree[..open].chars().all(|c| is_ident(c) || c == ':')
    {
        let head: Vec<String> = tree[..open]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let n = prefix.len();
        prefix.extend(head);
        for part in split_top(&tree[open + 1..tree.len() - 1]) {
            expand_use(part, prefix, out);
        }
        prefix.truncate(n);
        return;
    }
    let name = tree.split(" as ").next().unwrap_or(tree);
    let mut path = prefix.clone();
    for seg in name.split("::").filter(|s| !s.is_empty()) {
        if seg == "self" && !path.is_empty() {
            continue;
        }
        path.push(seg.to_string());
    }
    if !path.is_empty() {
        out.push(path);
    }
}

/// Splits a `use` group's inside at its top-level commas.
fn split_top(inside: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (k, c) in inside.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inside[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&inside[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The module a path names from module `at`, if it is one of this crate's.
fn resolve(
    at: &[String],
    path: &[String],
    known: &BTreeSet<Vec<String>>,
    is_parent_file: bool,
) -> Option<Vec<String>> {
    let mut abs: Vec<String> = match path[0].as_str() {
        "crate" => Vec::new(),
        "self" => at.to_vec(),
        "super" => at.to_vec(),
        first => {
            // A path relative to this module: only its own children (or, in a module whose file
            // is a parent of others, the names it declares).
            let mut child = at.to_vec();
            child.push(first.to_string());
            if is_parent_file && known.contains(&child) {
                at.to_vec()
            } else {
                return None;
            }
        }
    };
    let mut segs = path;
    if segs[0] == "crate" || segs[0] == "self" {
        segs = &segs[1..];
    }
    while segs.first().is_some_and(|s| s == "super") {
        abs.pop()?;
        segs = &segs[1..];
    }
    // The longest prefix that is a module.
    let mut best = abs.clone();
    for seg in segs {
        abs.push(seg.clone());
        if known.contains(&abs) {
            best = abs.clone();
        } else {
            break;
        }
    }
    known.contains(&best).then_some(best)
}

type Graph = BTreeMap<Vec<String>, BTreeMap<Vec<String>, BTreeSet<String>>>;

/// The import graph of `src`: for every module, the modules it names and the names it takes.
fn graph(src: &Path) -> Graph {
    let all = modules(src);
    let mut test_only = BTreeSet::new();
    for m in &all {
        let text = std::fs::read_to_string(&m.file).expect("readable source");
        for child in test_only_children(&text) {
            let mut p = m.path.clone();
            p.push(child);
            test_only.insert(p);
        }
    }
    let known: BTreeSet<Vec<String>> = all
        .iter()
        .map(|m| m.path.clone())
        .filter(|p| !test_only.contains(p))
        .collect();
    let mut g = Graph::new();
    for m in all.iter().filter(|m| known.contains(&m.path)) {
        let text = std::fs::read_to_string(&m.file).expect("readable source");
        let code = code_of(&text);
        let is_parent = m.path.is_empty()
            || m.file.file_name().is_some_and(|f| f == "mod.rs")
            || all
                .iter()
                .any(|o| o.path.len() == m.path.len() + 1 && o.path.starts_with(&m.path));
        let arrows = g.entry(m.path.clone()).or_default();
        for path in named_paths(&code) {
            if let Some(to) = resolve(&m.path, &path, &known, is_parent)
                && to != m.path
            {
                arrows
                    .entry(to)
                    .or_default()
                    .insert(path.last().cloned().unwrap_or_default());
            }
        }
    }
    g
}

/// Strongly connected components of more than one module (Tarjan).
fn circles(g: &Graph) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        next: usize,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(arrows) = s.g.get(v) {
            for w in arrows.keys() {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn name(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_string()
    } else {
        path.join("::")
    }
}

/// The problems of the tree at `src`, one line each.
fn problems(src: &Path) -> Vec<String> {
    let g = graph(src);
    let mut out = Vec::new();
    for comp in circles(&g) {
        let set: BTreeSet<_> = comp.iter().collect();
        let mut lines = vec![format!(
            "import circle of {} modules: {}",
            comp.len(),
            comp.iter().map(|p| name(p)).collect::<Vec<_>>().join(", ")
        )];
        for from in &comp {
            for (to, names) in &g[from] {
                if set.contains(to) {
                    let names: Vec<_> = names.iter().cloned().collect();
                    lines.push(format!(
                        "    {} -> {}: {}",
                        name(from),
                        name(to),
                        names.join(", ")
                    ));
                }
            }
        }
        out.push(lines.join("\n"));
    }
    let layer = |p: &[String]| p.first().map(String::as_str).unwrap_or("").to_string();
    for (from, arrows) in &g {
        for (to, names) in arrows {
            let (a, b) = (layer(from), layer(to));
            let integration = |l: &str| matches!(l, "tilemap" | "avian" | "debug");
            let wrong = (a == "core" && (b == "plugin" || integration(&b)))
                || (a == "plugin" && integration(&b));
            if wrong {
                out.push(format!(
                    "layer broken: {} (layer {a}) names {} (layer {b}): {}",
                    name(from),
                    name(to),
                    names.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    out
}

/// The most lines a function of `src/` may take, its signature and closing brace included.
const MAX_FUNCTION_LINES: usize = 80;

/// Functions allowed past [`MAX_FUNCTION_LINES`]: `(file under src/, function)`.
const LONG_HOT_LOOPS: &[(&str, &str)] = &[
    // Jump point search's successors: the pruning rules and the jumps, in the kernel's loop.
    ("core/jps.rs", "expand"),
];

/// Every function of the file's code (test items cut) longer than `max` lines, as
/// `(name, first line, lines)`.
fn long_functions(text: &str, max: usize) -> Vec<(String, usize, usize)> {
    let code = code_of(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let Some(at) = find_keyword(line, "fn") else {
            continue;
        };
        let name: String = line[at + 2..]
            .trim_start()
            .chars()
            .take_while(|&c| is_ident(c))
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body: from the first `{` after the name to its matching `}` (a declaration ending
        // in `;` first has none).
        let mut depth = 0usize;
        let mut opened = false;
        let mut end = None;
        'scan: for (j, l) in lines.iter().enumerate().skip(k) {
            let from = if j == k { at } else { 0 };
            for c in l[from..].chars() {
                match c {
                    ';' if !opened && depth == 0 => break 'scan,
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if opened && depth == 0 {
                            end = Some(j);
                            break 'scan;
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(end) = end
            && end - k + 1 > max
        {
            out.push((name, k + 1, end - k + 1));
        }
    }
    out
}

#[test]
fn functions_read_as_steps() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for m in modules(&src) {
        let file = m
            .file
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&m.file).expect("readable source");
        for (name, line, count) in long_functions(&text, MAX_FUNCTION_LINES) {
            if !LONG_HOT_LOOPS.contains(&(file.as_str(), name.as_str())) {
                found.push(format!(
                    "{file}:{line}: fn {name} is {count} lines (at most {MAX_FUNCTION_LINES})"
                ));
            }
        }
    }
    assert!(found.is_empty(), "\n{}\n", found.join("\n"));
}

#[test]
fn a_long_function_is_caught() {
    let short = "fn a() {\n    let x = 1;\n}\n";
    assert!(long_functions(short, 3).is_empty());
    let long = format!(
        "fn b(x: u8) -> u8 {{\n{}    x\n}}\n#[cfg(test)]\nmod t {{ fn c() {{\n\n\n\n}} }}\n",
        "    let _ = '{';\n".repeat(3)
    );
    let found = long_functions(&long, 3);
    assert_eq!(found, vec![("b".to_string(), 1, 6)]);
}

#[test]
fn src_has_no_import_circles_and_layers_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = problems(&src);
    assert!(found.is_empty(), "\n{}\n", found.join("\n"));
}

#[test]
fn a_circle_and_an_upward_import_are_caught() {
    let dir = std::env::temp_dir().join(format!("tilepath-architecture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("core")).expect("temp dir");
    std::fs::create_dir_all(dir.join("plugin")).expect("temp dir");
    let write = |p: &str, s: &str| std::fs::write(dir.join(p), s).expect("temp file");
    write("lib.rs", "pub mod core;\npub mod plugin;\n");
    write("core/mod.rs", "mod a;\nmod b;\npub use a::A;\n");
    // a and b name each other: one through a `use` group, one in an expression.
    write("core/a.rs", "use super::{b::{self, B}};\npub struct A;\n");
    write(
        "core/b.rs",
        "pub struct B;\nfn f() { let _ = super::a::A; }\n// super::plugin::x in a comment\n\
         #[cfg(test)]\nmod tests { use crate::plugin::P; }\n",
    );
    write(
        "plugin/mod.rs",
        "pub struct P;\nfn g() { crate::core::A; }\n#[cfg(test)]\nmod t { }\n",
    );
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("import circle of 2 modules: core::a, core::b"));
    // The core naming the plugin layer, outside test code.
    write("core/b.rs", "pub struct B;\nfn f() { crate::plugin::P; }\n");
    write("core/a.rs", "pub struct A;\n");
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("layer broken: core::b (layer core) names plugin"));
    let _ = std::fs::remove_dir_all(&dir);
}
