//! The crate's folders are its pipeline, and they depend one way (CONTRIBUTING.md, layout):
//! every `crate::X` path outside a test module must name a module of a lower layer. This reads
//! the sources, so a new upward import fails here with the file that made it.

use std::collections::BTreeMap;
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

/// The `crate::NAME` and `crate::{NAME, …}` roots a source text uses, test modules and
/// comments left out.
fn used_roots(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut roots = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                roots.push(name);
            }
        } else {
            roots.push(
                rest.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect(),
            );
        }
    }
    roots.retain(|r| !r.is_empty());
    roots
}

#[test]
fn modules_depend_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    let mut seen = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src/");
        let first = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or("");
        let module = first.trim_end_matches(".rs");
        if module == "lib" {
            continue;
        }
        let Some(&own) = layers.get(module) else {
            violations.push(format!(
                "{}: module `{module}` has no layer in LAYERS",
                rel.display()
            ));
            continue;
        };
        seen += 1;
        let text = std::fs::read_to_string(file).expect("readable source");
        for root in used_roots(&text) {
            if root == module || root == "self" {
                continue;
            }
            let Some(&theirs) = layers.get(root.as_str()) else {
                continue; // an item of lib.rs (re-exports), not a module
            };
            let render_ok = module != "render" || matches!(root.as_str(), "support" | "error");
            if theirs >= own || !render_ok {
                violations.push(format!(
                    "{}: `{module}` uses `crate::{root}`",
                    rel.display()
                ));
            }
        }
    }
    assert!(seen > 50, "read only {seen} source files");
    violations.sort();
    violations.dedup();
    assert!(
        violations.is_empty(),
        "upward or sideways imports:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_reader_sees_grouped_and_plain_paths() {
    let roots = used_roots("use crate::{session, tokens::X};\nfn f() { crate::render::x(); }\n// crate::wasm\n#[cfg(test)]\nuse crate::triggers;");
    assert_eq!(roots, ["session", "tokens", "render"]);
}
