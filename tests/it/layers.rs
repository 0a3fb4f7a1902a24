//! The crate's folders are its pipeline, and they depend one way (CONTRIBUTING.md, layout):
//! every path into another top-level module, outside test code, must name a module of a lower
//! layer; and no two source files import each other, directly or round a longer loop, inside a
//! folder or across folders. This reads the sources, every file of every sub-folder, so a new
//! upward import or a new cycle fails here with the file that made it.
//!
//! Test code is left out item by item: a `#[cfg(test)]` module, function or `use` is skipped
//! up to its matching brace or semicolon, and the production code after it is still read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layer of each top-level module: a module may use modules of lower layers only.
/// `render` is held to `support` and `error` alone below (it knows nothing of sessions).
const LAYERS: &[(&str, u8)] = &[
    ("support", 0),
    ("prompts", 0),
    ("error", 1),
    ("render", 2),
    ("session", 2),
    ("settings", 2),
    ("archive", 3),
    ("tokens", 3),
    ("context", 4),
    ("summary", 5),
    ("compaction", 6),
    ("pruning", 6),
    ("navigation", 6),
    ("triggers", 6),
    // Shake reuses pruning's keep boundary and protection readers.
    ("shake", 7),
    ("wasm", 8),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src/") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text with comments, string literals and character literals blanked to spaces (line
/// breaks kept), so a `crate::` or a brace inside them is not read as code.
fn blank_literals(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let prev_ident = i > 0 && ident(b[i - 1]);
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
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
        } else if !prev_ident && (b[i] == b'r' || b[i..].starts_with(b"br")) && {
            let s = if b[i] == b'r' { i + 1 } else { i + 2 };
            let hashes = b[s..].iter().take_while(|&&c| c == b'#').count();
            b.get(s + hashes) == Some(&b'"')
        } {
            // A raw string: r"…", r#"…"#, br"…".
            let s = if b[i] == b'r' { i + 1 } else { i + 2 };
            let hashes = b[s..].iter().take_while(|&&c| c == b'#').count();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = s + hashes + 1;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| body + p + close.len());
            blank(&mut out, body, end - close.len());
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{1F600}', '"'), not a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b.get(i + 3..)
                    .and_then(|r| r.iter().position(|&c| c == b'\''))
                    .map(|p| i + 3 + p)
            } else {
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 1 + len)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i + 1, end);
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Whether an attribute's text (`#[…]`) compiles its item for tests only.
fn test_only(attribute: &str) -> bool {
    let squeezed: String = attribute.chars().filter(|c| !c.is_whitespace()).collect();
    squeezed == "#[cfg(test)]" || squeezed.starts_with("#[cfg(all(test,")
}

/// The end (exclusive) of the attribute that opens at `at` (`#[`), brackets matched.
fn attribute_end(b: &[u8], at: usize) -> usize {
    let mut depth = 0usize;
    for (j, &c) in b.iter().enumerate().skip(at + 1) {
        match c {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// Blanked code (see [`blank_literals`]) without its test-only items: each `#[cfg(test)]` item
/// (module, function, `use`, statement) is cut from its attribute to the `;` or the brace that
/// ends it, and reading goes on after it.
fn strip_test_items(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        if !b[i..].starts_with(b"#[") {
            i += 1;
            continue;
        }
        let end = attribute_end(b, i);
        if !test_only(&code[i..end]) {
            i = end;
            continue;
        }
        // Further attributes of the same item, then the item up to `;` or its closing brace.
        let mut j = end;
        loop {
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if b[j..].starts_with(b"#[") {
                j = attribute_end(b, j);
            } else {
                break;
            }
        }
        let mut depth = 0usize;
        while j < b.len() {
            match b[j] {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' => depth = depth.saturating_sub(1),
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        for c in &mut out[i..j.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        i = j;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// The production code of a source text: comments, literals and test-only items blanked.
fn production_code(text: &str) -> String {
    strip_test_items(&blank_literals(text))
}

/// Identifiers, `::` and single punctuation characters of blanked code.
fn tokens(code: &str) -> Vec<&str> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            out.push(&code[start..i]);
        } else if b[i..].starts_with(b"::") {
            out.push("::");
            i += 2;
        } else {
            out.push(&code[i..i + 1]);
            i += 1;
        }
    }
    out
}

/// One name a `use` declaration binds: the path it names, the local name (`*` for a glob)
/// and whether it is re-exported (`pub`, `pub(crate)`, …).
#[derive(Debug, Clone, PartialEq)]
struct UseItem {
    path: Vec<String>,
    name: String,
    public: bool,
}

fn is_ident(t: &str) -> bool {
    t.bytes()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c >= 0x80)
}

/// Parses one use tree at `toks[*at]` under `prefix`, pushing its bindings.
fn use_tree(
    toks: &[&str],
    at: &mut usize,
    prefix: &[String],
    public: bool,
    out: &mut Vec<UseItem>,
) {
    let mut path = prefix.to_vec();
    loop {
        match toks.get(*at).copied() {
            Some("{") => {
                *at += 1;
                while !matches!(toks.get(*at).copied(), Some("}") | None) {
                    use_tree(toks, at, &path, public, out);
                    if toks.get(*at) == Some(&",") {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            Some("*") => {
                *at += 1;
                out.push(UseItem {
                    path,
                    name: "*".into(),
                    public,
                });
                return;
            }
            Some("::") => *at += 1,
            Some(t) if is_ident(t) => {
                *at += 1;
                if t == "self" && !path.is_empty() && toks.get(*at) != Some(&"::") {
                    // `a::{self}` binds `a` itself.
                } else {
                    path.push(t.to_string());
                }
                if toks.get(*at) == Some(&"::") {
                    continue;
                }
                let mut name = path.last().cloned().unwrap_or_default();
                if toks.get(*at) == Some(&"as") {
                    name = toks.get(*at + 1).map_or(name, |n| n.to_string());
                    *at += 2;
                }
                out.push(UseItem { path, name, public });
                return;
            }
            _ => return,
        }
    }
}

/// What a file's production code refers to: its `use` bindings, the other paths it writes
/// (`crate::a::b`, `super::x`, `child::y`, `Alias::z`), and the identifiers it uses outside
/// its `use` declarations.
#[derive(Debug, Default)]
struct References {
    uses: Vec<UseItem>,
    paths: Vec<Vec<String>>,
    idents: BTreeSet<String>,
    /// Names of the items the code defines (`fn`, `struct`, `const`, …).
    defs: BTreeSet<String>,
}

/// Whether tokens ending in `)` end with a visibility `pub(…)`.
fn restricted_pub(before: &[&str]) -> bool {
    let open = before.iter().rposition(|t| *t == "(");
    open.is_some_and(|o| o > 0 && before[o - 1] == "pub")
}

fn references(code: &str) -> References {
    let toks = tokens(code);
    let mut refs = References::default();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        let prev = if i > 0 { toks[i - 1] } else { "" };
        if t == "use"
            && toks
                .get(i + 1)
                .is_some_and(|n| is_ident(n) || *n == "{" || *n == "::")
        {
            let public = prev == "pub" || (prev == ")" && restricted_pub(&toks[..i]));
            i += 1;
            while i < toks.len() && toks[i] != ";" {
                use_tree(&toks, &mut i, &[], public, &mut refs.uses);
                if i < toks.len() && toks[i] != ";" {
                    i += 1;
                }
            }
            continue;
        }
        let item = [
            "fn", "struct", "enum", "const", "static", "type", "trait", "union", "mod",
        ];
        if item.contains(&t) {
            if let Some(name) = toks.get(i + 1).filter(|n| is_ident(n)) {
                refs.defs.insert(name.to_string());
            }
        }
        if is_ident(t) {
            refs.idents.insert(t.to_string());
            if prev != "::" && toks.get(i + 1) == Some(&"::") {
                let mut path = vec![t.to_string()];
                let mut j = i + 1;
                while toks.get(j) == Some(&"::") && toks.get(j + 1).is_some_and(|n| is_ident(n)) {
                    path.push(toks[j + 1].to_string());
                    j += 2;
                }
                for seg in &path {
                    refs.idents.insert(seg.clone());
                }
                refs.paths.push(path);
                i = j;
                continue;
            }
        }
        i += 1;
    }
    refs
}

/// The `crate::NAME` and `crate::{NAME, …}` roots a source text uses, test items and comments
/// left out.
fn used_roots(text: &str) -> Vec<String> {
    let refs = references(&production_code(text));
    let mut roots = Vec::new();
    let uses = refs.uses.iter().map(|u| &u.path);
    for path in uses.chain(refs.paths.iter()) {
        if path.len() > 1 && path[0] == "crate" && !roots.contains(&path[1]) {
            roots.push(path[1].clone());
        }
    }
    roots
}

/// One source file: where it is, the module path it defines, and what it refers to.
struct SourceFile {
    rel: PathBuf,
    module: Vec<String>,
    refs: References,
}

/// The module path a file under src/ defines: `a/b.rs` → `[a, b]`, `a/mod.rs` → `[a]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if segs.last().is_some_and(|s| s == "mod" || s == "lib") {
        segs.pop();
    }
    segs
}

/// The crate: its files and the module each file defines.
struct Crate {
    files: Vec<SourceFile>,
    by_module: BTreeMap<Vec<String>, usize>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut paths = Vec::new();
        rust_files(src, &mut paths);
        paths.sort();
        let files: Vec<SourceFile> = paths
            .iter()
            .map(|p| {
                let rel = p.strip_prefix(src).expect("under src/").to_path_buf();
                let text = std::fs::read_to_string(p).expect("readable source");
                SourceFile {
                    module: module_path(&rel),
                    refs: references(&production_code(&text)),
                    rel,
                }
            })
            .collect();
        let by_module = files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.module.clone(), i))
            .collect();
        Crate { files, by_module }
    }

    /// A path as written in `file`, made absolute (from the crate root), or `None` for a path
    /// outside the crate (std, serde_json, a type's associated item).
    fn absolute(&self, file: usize, path: &[String]) -> Option<Vec<String>> {
        let module = &self.files[file].module;
        let first = path.first()?;
        let mut abs = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.clone(),
            "super" => {
                let mut m = module.clone();
                let mut k = 0;
                while path.get(k).is_some_and(|s| s == "super") {
                    m.pop();
                    k += 1;
                }
                m.extend(path[k..].iter().cloned());
                return Some(m);
            }
            _ => {
                let mut child = module.clone();
                child.push(first.clone());
                if self.by_module.contains_key(&child) {
                    let mut abs = module.clone();
                    abs.extend(path.iter().cloned());
                    return Some(abs);
                }
                // A name a `use` of this file binds (`use super::openai_v2;` then
                // `openai_v2::parse`).
                let bound = self.files[file]
                    .refs
                    .uses
                    .iter()
                    .find(|u| &u.name == first && u.path.first() != Some(first))?;
                let mut abs = self.absolute(file, &bound.path)?;
                abs.extend(path[1..].iter().cloned());
                return Some(abs);
            }
        };
        abs.extend(path[1..].iter().cloned());
        Some(abs)
    }

    /// The file that defines what an absolute path names: the deepest module on the path, or,
    /// when that module only imports the name (a re-export), the file it comes from.
    fn defining_file(&self, abs: &[String], depth: u8) -> Option<usize> {
        let mut k = abs.len();
        let file = loop {
            if let Some(&f) = self.by_module.get(&abs[..k]) {
                break f;
            }
            k = k.checked_sub(1)?;
        };
        if let (Some(name), true) = (abs.get(k), depth < 8) {
            let refs = &self.files[file].refs;
            let bound = refs.uses.iter().find(|u| &u.name == name);
            if let Some(bound) = bound {
                if let Some(mut target) = self.absolute(file, &bound.path) {
                    target.extend(abs[k + 1..].iter().cloned());
                    if let Some(f) = self.defining_file(&target, depth + 1) {
                        return Some(f);
                    }
                }
            } else if !refs.defs.contains(name) {
                // Neither bound nor defined here: a glob import (`pub use entry::*`) brings it.
                for glob in refs.uses.iter().filter(|u| u.name == "*") {
                    let Some(mut target) = self.absolute(file, &glob.path) else {
                        continue;
                    };
                    let Some(&from) = self.by_module.get(&target) else {
                        continue;
                    };
                    let there = &self.files[from].refs;
                    if there.defs.contains(name) || there.uses.iter().any(|u| &u.name == name) {
                        target.extend(abs[k..].iter().cloned());
                        return self.defining_file(&target, depth + 1);
                    }
                }
            }
        }
        Some(file)
    }

    /// The files each file depends on, with one path that makes each dependency. A `pub use`
    /// whose name the file never uses itself is a re-export (the module's face), not a
    /// dependency of the file's code; paths through it resolve to the file it names.
    fn imports(&self) -> Vec<BTreeMap<usize, String>> {
        let mut edges = vec![BTreeMap::new(); self.files.len()];
        for (i, file) in self.files.iter().enumerate() {
            let used = file
                .refs
                .uses
                .iter()
                // A public glob is the module's face too: names through it resolve past it.
                .filter(|u| !u.public || file.refs.idents.contains(&u.name));
            let paths = used.map(|u| &u.path).chain(file.refs.paths.iter());
            for path in paths {
                let Some(abs) = self.absolute(i, path) else {
                    continue;
                };
                if let Some(to) = self.defining_file(&abs, 0) {
                    if to != i {
                        edges[i].entry(to).or_insert_with(|| path.join("::"));
                    }
                }
            }
        }
        edges
    }
}

/// The strongly connected groups of more than one file (Tarjan), each sorted.
fn cycles(edges: &[BTreeMap<usize, String>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        edges: &'a [BTreeMap<usize, String>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        groups: Vec<Vec<usize>>,
    }
    fn visit(w: &mut Walk, v: usize) {
        w.index[v] = Some(w.next);
        w.low[v] = w.next;
        w.next += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        let targets: Vec<usize> = w.edges[v].keys().copied().collect();
        for t in targets {
            match w.index[t] {
                None => {
                    visit(w, t);
                    w.low[v] = w.low[v].min(w.low[t]);
                }
                Some(ti) if w.on_stack[t] => w.low[v] = w.low[v].min(ti),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.index[v] {
            let mut group = Vec::new();
            while let Some(t) = w.stack.pop() {
                w.on_stack[t] = false;
                group.push(t);
                if t == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort_unstable();
                w.groups.push(group);
            }
        }
    }
    let n = edges.len();
    let mut w = Walk {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        groups: Vec::new(),
    };
    for v in 0..n {
        if w.index[v].is_none() {
            visit(&mut w, v);
        }
    }
    w.groups.sort();
    w.groups
}

/// One loop through a group, from its first file back to it (breadth first: a shortest one).
fn one_loop(edges: &[BTreeMap<usize, String>], group: &[usize]) -> Vec<usize> {
    let start = group[0];
    let mut from: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &t in edges[v].keys() {
            if t == start {
                let mut path = vec![v];
                while let Some(&p) = from.get(path.last().expect("non-empty")) {
                    path.push(p);
                }
                path.reverse();
                path.push(start);
                if path[0] != start {
                    path.insert(0, start);
                }
                return path;
            }
            if group.contains(&t) && !from.contains_key(&t) && t != start {
                from.insert(t, v);
                queue.push_back(t);
            }
        }
    }
    vec![start]
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn modules_depend_one_way() {
    let krate = Crate::read(&src_dir());
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let edges = krate.imports();
    let mut violations = Vec::new();
    let mut seen = 0;
    for (i, file) in krate.files.iter().enumerate() {
        let Some(module) = file.module.first().map(String::as_str) else {
            continue; // lib.rs
        };
        let Some(&own) = layers.get(module) else {
            violations.push(format!(
                "{}: module `{module}` has no layer in LAYERS",
                file.rel.display()
            ));
            continue;
        };
        seen += 1;
        // Every path into the crate, re-exports included (a `pub use` of a higher layer is
        // an upward dependency all the same).
        let paths = file
            .refs
            .uses
            .iter()
            .map(|u| &u.path)
            .chain(&file.refs.paths);
        let mut roots: BTreeSet<&str> = BTreeSet::new();
        for path in paths {
            let Some(abs) = krate.absolute(i, path) else {
                continue;
            };
            if let Some(to) = krate.defining_file(&abs, 0) {
                if let Some(root) = krate.files[to].module.first() {
                    roots.insert(root);
                }
            }
        }
        roots.extend(
            edges[i]
                .keys()
                .filter_map(|&t| krate.files[t].module.first().map(String::as_str)),
        );
        for root in roots {
            if root == module {
                continue;
            }
            let Some(&theirs) = layers.get(root) else {
                continue;
            };
            let render_ok = module != "render" || matches!(root, "support" | "error");
            if theirs >= own || !render_ok {
                violations.push(format!(
                    "{}: `{module}` uses `crate::{root}`",
                    file.rel.display()
                ));
            }
        }
    }
    assert!(seen > 50, "read only {seen} source files");
    let nested = krate.files.iter().filter(|f| f.module.len() > 2).count();
    assert!(nested > 10, "read only {nested} files of sub-folders");
    violations.sort();
    violations.dedup();
    assert!(
        violations.is_empty(),
        "upward or sideways imports:\n{}",
        violations.join("\n")
    );
}

/// Cycles not broken yet, each as the files of its group. A cycle found must lie inside one of
/// these groups, and each group must still hold a cycle (delete it once broken), so the list
/// only shrinks. None is left.
const KNOWN_CYCLES: &[&[&str]] = &[];

/// Each cycle of the import graph, printed: its files, a shortest loop through them and every
/// import inside the group.
fn cycle_reports(krate: &Crate, edges: &[BTreeMap<usize, String>]) -> Vec<(Vec<String>, String)> {
    let name = |i: usize| krate.files[i].rel.display().to_string();
    let mut reports = Vec::new();
    for group in cycles(edges) {
        let members: Vec<String> = group.iter().map(|&i| name(i)).collect();
        let mut lines = vec![format!("cycle among {}:", members.join(", "))];
        let path = one_loop(edges, &group);
        for pair in path.windows(2) {
            lines.push(format!(
                "  {} → {} (`{}`)",
                name(pair[0]),
                name(pair[1]),
                edges[pair[0]][&pair[1]]
            ));
        }
        lines.push("  all imports inside it:".into());
        for &from in &group {
            for (to, path) in edges[from].iter().filter(|(t, _)| group.contains(t)) {
                lines.push(format!("    {} → {} (`{path}`)", name(from), name(*to)));
            }
        }
        reports.push((members, lines.join("\n")));
    }
    reports
}

#[test]
fn no_file_imports_itself_round_a_loop() {
    let krate = Crate::read(&src_dir());
    let edges = krate.imports();
    let reports = cycle_reports(&krate, &edges);
    let new: Vec<&str> = reports
        .iter()
        .filter(|(members, _)| {
            !KNOWN_CYCLES
                .iter()
                .any(|known| members.iter().all(|m| known.contains(&m.as_str())))
        })
        .map(|(_, report)| report.as_str())
        .collect();
    assert!(
        new.is_empty(),
        "{} import cycle(s) between source files:\n{}",
        new.len(),
        new.join("\n")
    );
    let broken: Vec<String> = KNOWN_CYCLES
        .iter()
        .filter(|known| {
            !reports
                .iter()
                .any(|(members, _)| members.iter().all(|m| known.contains(&m.as_str())))
        })
        .map(|known| known.join(", "))
        .collect();
    assert!(
        broken.is_empty(),
        "no cycle left among these files; delete them from KNOWN_CYCLES:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_reader_sees_grouped_and_plain_paths() {
    let roots = used_roots("use crate::{session, tokens::X};\nfn f() { crate::render::x(); }\n// crate::wasm\n#[cfg(test)]\nuse crate::triggers;");
    assert_eq!(roots, ["session", "tokens", "render"]);
}

#[test]
fn the_reader_skips_test_items_only() {
    let text = r##"
use crate::a::A;
#[cfg(test)]
mod tests {
    use crate::b::B;
    fn f() { let s = "}"; let c = '}'; }
}
#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(dead_code)]
fn helper() -> u8 { crate::c::f() }
fn g() -> u32 { crate::d::h() /* crate::e */ }
#[cfg(test)]
use crate::f::F;
const S: &str = r#"crate::g"#;
#[cfg(not(test))]
fn h() { crate::i::j() }
"##;
    assert_eq!(used_roots(text), ["a", "d", "i"]);
}

#[test]
fn the_reader_binds_nested_groups_and_aliases() {
    let refs = references(&production_code(
        "pub(crate) use super::{x::{self, Y as Z}, w::*};\nuse q;",
    ));
    let bound: Vec<(String, String, bool)> = refs
        .uses
        .iter()
        .map(|u| (u.path.join("::"), u.name.clone(), u.public))
        .collect();
    assert_eq!(
        bound,
        [
            ("super::x".into(), "x".into(), true),
            ("super::x::Y".into(), "Z".into(), true),
            ("super::w".into(), "*".into(), true),
            ("q".into(), "q".into(), false),
        ]
    );
}

#[test]
fn a_loop_is_found_and_a_chain_is_not() {
    let edge = |to: &[usize]| to.iter().map(|&t| (t, String::new())).collect();
    let chain: Vec<BTreeMap<usize, String>> = vec![edge(&[1]), edge(&[2]), edge(&[])];
    assert!(cycles(&chain).is_empty());
    let looped: Vec<BTreeMap<usize, String>> =
        vec![edge(&[1]), edge(&[2]), edge(&[0, 3]), edge(&[])];
    assert_eq!(cycles(&looped), [vec![0, 1, 2]]);
    assert_eq!(one_loop(&looped, &[0, 1, 2]), [0, 1, 2, 0]);
}

#[test]
fn the_reader_reads_past_an_early_test_item() {
    // pruning/apply.rs has a test-only function near its top and production code after it.
    let text = std::fs::read_to_string(src_dir().join("pruning/apply.rs")).expect("readable");
    let refs = references(&production_code(&text));
    let first_test = text.find("#[cfg(test)]").expect("a test item");
    let later = refs
        .uses
        .iter()
        .find(|u| u.path.join("::") == "crate::support::json::scan::for_each_member")
        .expect("the production `use` after the first test item is read");
    assert!(
        text.find("for_each_member")
            .is_some_and(|at| at > first_test),
        "{later:?}"
    );
    assert!(!refs
        .uses
        .iter()
        .any(|u| u.path.join("::") == "crate::pruning::SUPERSEDED_NOTICE"));
}

#[test]
fn paths_resolve_through_re_exports_to_the_defining_file() {
    let dir = std::env::temp_dir().join(format!("ctxfold-layers-{}", std::process::id()));
    let files = [
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        (
            "a/mod.rs",
            "mod inner;\nmod deep;\npub use inner::*;\npub use deep::Deep;\n",
        ),
        (
            "a/inner.rs",
            "pub struct Inner;\nfn f() { crate::b::g() }\n",
        ),
        ("a/deep.rs", "pub struct Deep;\n"),
        ("b.rs", "use crate::a::{Deep, Inner};\npub fn g() {}\n"),
    ];
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("temp dir");
        std::fs::write(path, text).expect("temp file");
    }
    let krate = Crate::read(&dir);
    let edges = krate.imports();
    let _ = std::fs::remove_dir_all(&dir);
    let named = |i: usize| krate.files[i].rel.display().to_string();
    let graph: BTreeSet<(String, String)> = edges
        .iter()
        .enumerate()
        .flat_map(|(from, to)| to.keys().map(move |&t| (from, t)))
        .map(|(from, to)| (named(from), named(to)))
        .collect();
    let want = [
        ("a/inner.rs", "b.rs"),
        ("b.rs", "a/deep.rs"),
        ("b.rs", "a/inner.rs"),
    ];
    let want: BTreeSet<(String, String)> = want
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect();
    assert_eq!(graph, want);
    assert_eq!(cycles(&edges).len(), 1);
}
