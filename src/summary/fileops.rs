//! File-operation tracking and the `<files>` block (spec: compaction §5.10).
//!
//! Pipeline: tool calls (and the `details` of earlier summaries) → [`FileOperations`]
//! (`read` / `written` / `edited` path sets) → [`compute_file_lists`] (the sorted
//! `readFiles` / `modifiedFiles` persisted in `details`) → [`format_file_operations`] (the
//! grouped `<files>` tree appended to a summary by [`upsert_file_operations`]).
//!
//! Sorting is by UTF-16 code units, as JavaScript's default `Array.prototype.sort` orders
//! strings (spec: compaction §5.10 "plain code-unit order").

use crate::session::message::{AgentMessage, ContentBlock};
use crate::support::text::is_js_whitespace;
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// At most this many files are listed in a `<files>` block (spec: compaction §5.10).
pub const MAX_LISTED_FILES: usize = 20;

/// The paths a conversation read, wrote and edited (spec: compaction §5.10
/// `FileOperations`). The sets are ordered so that every output built from them is
/// deterministic; the lists derived from them are sorted anyway.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOperations {
    /// Paths of `read` calls, read selectors stripped.
    pub read: BTreeSet<String>,
    /// Paths of `write` calls.
    pub written: BTreeSet<String>,
    /// Paths of `edit` calls, and the `modifiedFiles` of earlier summaries.
    pub edited: BTreeSet<String>,
}

/// The two lists persisted in a summary's `details` (spec: compaction §5.10
/// `computeFileLists`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileLists {
    /// Files only read: `read − modified`, without URL-scheme paths, sorted.
    pub read_files: Vec<String>,
    /// Files written or edited, without URL-scheme paths, sorted.
    pub modified_files: Vec<String>,
}

impl FileLists {
    /// Every path of both lists: what the `<files>` block shows (grouped by folder there).
    pub fn listed(&self) -> rustc_hash::FxHashSet<&str> {
        self.read_files
            .iter()
            .chain(&self.modified_files)
            .map(String::as_str)
            .collect()
    }

    /// `{readFiles, modifiedFiles}`, the `details` of a summary entry.
    pub fn to_json(&self) -> serde_json::Value {
        crate::support::json::object(vec![
            ("readFiles", self.read_files.clone().into()),
            ("modifiedFiles", self.modified_files.clone().into()),
        ])
    }
}

impl FileOperations {
    /// Empty sets.
    pub fn new() -> FileOperations {
        FileOperations::default()
    }

    /// Records one tool call (spec: compaction §5.10 "Extraction"): tools `read`, `write`
    /// and `edit` with an object `arguments` holding a string `path`. Paths with a URL
    /// scheme are skipped; a `read` path loses its trailing read selector. Other tools are
    /// ignored.
    pub fn add_tool_call(&mut self, name: &str, arguments: &Value) {
        if let Some(path) = arguments.get("path").and_then(Value::as_str) {
            self.add(name, path);
        }
    }

    /// Records one `path` touched by tool `name` (see [`FileOperations::add_tool_call`]).
    pub fn add(&mut self, name: &str, path: &str) {
        if is_url_scheme_path(path) {
            return;
        }
        let (set, path) = match name {
            "read" => (&mut self.read, strip_read_selector(path)),
            "write" => (&mut self.written, path),
            "edit" => (&mut self.edited, path),
            _ => return,
        };
        // Most paths repeat: look before allocating.
        if !set.contains(path) {
            set.insert(path.to_string());
        }
    }

    /// Records the tool calls of an agent message. Only assistant messages make tool
    /// calls; calls hidden by `contextOmitted` do not count (spec: compaction §10.8).
    pub fn add_message(&mut self, message: &AgentMessage) {
        let Some(assistant) = message.as_assistant() else {
            return;
        };
        for block in assistant.blocks().iter() {
            if let ContentBlock::ToolCall {
                name,
                arguments,
                context_omitted: false,
                ..
            } = block
            {
                self.add_tool_call(name, arguments);
            }
        }
    }

    /// Seeds the sets from the `details` of an earlier compaction or branch summary (spec:
    /// compaction §5.10 "Cumulative sources"): `readFiles` → `read` (selector-stripped),
    /// `modifiedFiles` → `edited`. Non-string items are ignored; URL-scheme paths of legacy
    /// details are kept here and dropped by [`compute_file_lists`].
    ///
    /// Whether a summary contributes is the caller's rule: one written by an extension
    /// (`fromExtension`) does not.
    pub fn add_details(&mut self, details: &Value) {
        let strings = |key: &str| {
            details
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
        };
        for path in strings("readFiles") {
            self.read.insert(strip_read_selector(path).to_string());
        }
        for path in strings("modifiedFiles") {
            self.edited.insert(path.to_string());
        }
    }

    /// pi's `extractFileOpsFromMessage` of an assistant message (pi-family paths, pi 1.6):
    /// the `path` of each `read`, `write` and `edit` call, as written.
    pub fn add_pi_calls(&mut self, m: &Value) {
        if m.get("role").and_then(Value::as_str) != Some("assistant") {
            return;
        }
        let blocks = m.get("content").and_then(Value::as_array);
        for b in blocks.into_iter().flatten() {
            if b.get("type").and_then(Value::as_str) != Some("toolCall") {
                continue;
            }
            let Some(path) = b.pointer("/arguments/path").and_then(Value::as_str) else {
                continue;
            };
            let set = match b.get("name").and_then(Value::as_str) {
                Some("read") => &mut self.read,
                Some("write") => &mut self.written,
                Some("edit") => &mut self.edited,
                _ => continue,
            };
            set.insert(path.to_string());
        }
    }

    /// [`compute_file_lists`] of these operations.
    pub fn file_lists(&self) -> FileLists {
        compute_file_lists(self)
    }

    /// True when no path was recorded.
    pub fn is_empty(&self) -> bool {
        self.read.is_empty() && self.written.is_empty() && self.edited.is_empty()
    }
}

/// Orders strings by UTF-16 code units, as JavaScript's default sort does. It differs from
/// byte order only between characters above U+FFFF and those in U+E000..=U+FFFF.
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// `computeFileLists` (spec: compaction §5.10): `modified = edited ∪ written`, `readFiles =
/// read − modified`, both without URL-scheme paths and sorted by code units.
pub fn compute_file_lists(ops: &FileOperations) -> FileLists {
    file_lists_keeping(ops, |p| !is_url_scheme_path(p))
}

/// [`compute_file_lists`] of the paths `keep` accepts.
fn file_lists_keeping(ops: &FileOperations, keep: fn(&str) -> bool) -> FileLists {
    let mut modified_files: Vec<String> = ops
        .edited
        .iter()
        .chain(ops.written.iter())
        .filter(|p| keep(p))
        .cloned()
        .collect();
    // Sorted by code units, then deduplicated (equal under `cmp_utf16` means equal strings),
    // so membership is a binary search in the same order.
    crate::support::sort::sort_by(&mut modified_files, |a, b| cmp_utf16(a, b));
    modified_files.dedup();
    let mut read_files: Vec<String> = ops
        .read
        .iter()
        .filter(|p| {
            keep(p)
                && modified_files
                    .binary_search_by(|m| cmp_utf16(m, p))
                    .is_err()
        })
        .cloned()
        .collect();
    crate::support::sort::sort_by(&mut read_files, |a, b| cmp_utf16(a, b));
    FileLists {
        read_files,
        modified_files,
    }
}

/// pi 1.6's `computeFileLists` (pi-family paths): [`compute_file_lists`] with no path left
/// out (pi keeps URL-like paths).
pub fn pi_file_lists(ops: &FileOperations) -> FileLists {
    file_lists_keeping(ops, |_| true)
}

/// The file lists pi 1.6 appends to a compaction or branch summary (`formatFileOperations`):
/// a `<read-files>` then a `<modified-files>` section, each path on its own line, the ones
/// present separated and preceded by a blank line; empty when both lists are.
pub fn pi_file_operations(lists: &FileLists) -> String {
    let mut out = String::new();
    for (tag, files) in [
        ("read-files", &lists.read_files),
        ("modified-files", &lists.modified_files),
    ] {
        if files.is_empty() {
            continue;
        }
        out.push_str("\n\n<");
        out.push_str(tag);
        out.push_str(">\n");
        out.push_str(&files.join("\n"));
        out.push_str("\n</");
        out.push_str(tag);
        out.push('>');
    }
    out
}

/// True when `path` contains a URL scheme anywhere: `[a-z][a-z0-9+.-]*://` (spec: compaction
/// §5.10), e.g. `artifact://7`, `local://ctx.md`, `https://…`, `src/a.ts:conflict://3`.
/// Such paths name tool-internal resources, not files of the workspace.
pub fn is_url_scheme_path(path: &str) -> bool {
    let b = path.as_bytes();
    let mut from = 0;
    // Each `://` in order. A `:` search rather than `memchr::memmem`, the crate's only
    // substring search, whose searchers would be linked for these short paths alone.
    while let Some(rel) = memchr::memchr(b':', &b[from..]) {
        let sep = from + rel;
        if !b[sep..].starts_with(b"://") {
            from = sep + 1;
            continue;
        }
        // Walk back over scheme characters; the scheme must start with a letter.
        let mut start = sep;
        while start > 0 {
            let c = b[start - 1];
            if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'+' | b'.' | b'-') {
                start -= 1;
            } else {
                break;
            }
        }
        // Any letter inside the run can begin a match (the regex is unanchored).
        if b[start..sep].iter().any(u8::is_ascii_lowercase) {
            return true;
        }
        from = sep + 1;
    }
    false
}

/// What kind of read selector a path ends with (spec: compaction §5.10, §6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorKind {
    /// A comma-separated list of line ranges (`50`, `50-200`, `L5+10`, `5-16,960-973`,
    /// `50-`, `2724..2727`): a part of the file. Supersede keys join it with `\u{0}`.
    Lines,
    /// `raw` or `conflicts`, alone or compound with a range list (`100-170:raw`,
    /// `raw:2-4`): a different view of the file. Supersede keys join it with `\u{1}`.
    Verbatim,
}

/// A path split from its read selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadTarget<'a> {
    /// The path without the selector.
    pub path: &'a str,
    /// The selector text (without its leading `:`) and its kind, if there was one.
    pub selector: Option<(&'a str, SelectorKind)>,
}

/// True for `L?\d+` followed by nothing, by `-`/`..` (open end), or by `-`/`+`/`..` and
/// another `L?\d+`.
fn is_line_range(s: &str) -> bool {
    fn number(s: &str) -> Option<&str> {
        let s = s.strip_prefix('L').unwrap_or(s);
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        (digits > 0).then(|| &s[digits..])
    }
    let Some(rest) = number(s) else {
        return false;
    };
    if rest.is_empty() || rest == "-" || rest == ".." {
        return true;
    }
    let tail = rest
        .strip_prefix("..")
        .or_else(|| rest.strip_prefix('-'))
        .or_else(|| rest.strip_prefix('+'));
    tail.and_then(number).is_some_and(str::is_empty)
}

fn is_range_list(s: &str) -> bool {
    !s.is_empty() && s.split(',').all(is_line_range)
}

fn is_raw(s: &str) -> bool {
    s.eq_ignore_ascii_case("raw")
}

fn single_selector_kind(s: &str) -> Option<SelectorKind> {
    if is_raw(s) || s.eq_ignore_ascii_case("conflicts") {
        Some(SelectorKind::Verbatim)
    } else if is_range_list(s) {
        Some(SelectorKind::Lines)
    } else {
        None
    }
}

/// `splitReadSelector` (spec: compaction §5.10, §14.8): splits the selector after the last
/// `:` (a colon at index 0 does not count) off a `read` path. A `raw` and a range list may be
/// stacked in either order (`a.ts:100-170:raw`, `a.ts:raw:2-4`); both are stripped then.
/// `archive.zip:dir/file.ts:50-60` keeps the archive member; `db.sqlite:users` and
/// `local://ctx.md` have no selector.
pub fn split_read_selector(path: &str) -> ReadTarget<'_> {
    let none = ReadTarget {
        path,
        selector: None,
    };
    let Some(colon) = path.rfind(':').filter(|&i| i > 0) else {
        return none;
    };
    let last = &path[colon + 1..];
    let Some(kind) = single_selector_kind(last) else {
        return none;
    };
    let base = &path[..colon];
    if let Some(inner) = base.rfind(':').filter(|&i| i > 0) {
        let prev = &base[inner + 1..];
        let compound =
            (is_raw(prev) && is_range_list(last)) || (is_range_list(prev) && is_raw(last));
        if compound {
            return ReadTarget {
                path: &path[..inner],
                selector: Some((&path[inner + 1..], SelectorKind::Verbatim)),
            };
        }
    }
    ReadTarget {
        path: base,
        selector: Some((last, kind)),
    }
}

/// The path of a `read` call without its selector.
pub fn strip_read_selector(path: &str) -> &str {
    split_read_selector(path).path
}

/// How a listed file was touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileMode {
    Read,
    Write,
    /// Read and later written or edited.
    ReadWrite,
}

impl FileMode {
    /// The marker appended to the file's line.
    pub fn marker(self) -> &'static str {
        match self {
            FileMode::Read => "(Read)",
            FileMode::Write => "(Write)",
            FileMode::ReadWrite => "(RW)",
        }
    }
}

/// `formatFileOperations` (spec: compaction §5.10): the `<files>` block, or `""` when both
/// lists are empty. Read files are marked `(Read)`; modified files `(RW)` when `read_set`
/// (the cumulative raw read set, [`FileOperations::read`]) holds them, else `(Write)`. The
/// first [`MAX_LISTED_FILES`] paths in code-unit order are shown as a grouped tree
/// ([`format_grouped_paths`]); the rest are counted in a `[…N files elided…]` line.
///
/// The wrapper is the reference's `file-operations.md` template, `<files>\n{files}\n</files>`,
/// written here directly.
pub fn format_file_operations(
    read_files: &[String],
    modified_files: &[String],
    read_set: Option<&BTreeSet<String>>,
) -> String {
    if read_files.is_empty() && modified_files.is_empty() {
        return String::new();
    }
    // Modified files first so that, after a stable sort, dedup keeps their mode.
    let mut modes: Vec<(&str, FileMode)> = modified_files
        .iter()
        .map(|path| {
            let rw = read_set.is_some_and(|s| s.contains(path));
            let mode = if rw {
                FileMode::ReadWrite
            } else {
                FileMode::Write
            };
            (path.as_str(), mode)
        })
        .chain(
            read_files
                .iter()
                .map(|path| (path.as_str(), FileMode::Read)),
        )
        .collect();
    // Equal paths: the modified entry (listed first above) sorts first and survives the dedup.
    crate::support::sort::sort_by(&mut modes, |a, b| {
        cmp_utf16(a.0, b.0).then((a.1 == FileMode::Read).cmp(&(b.1 == FileMode::Read)))
    });
    modes.dedup_by(|later, earlier| later.0 == earlier.0);
    let shown = modes.len().min(MAX_LISTED_FILES);
    let entries: Vec<(&str, &str)> = modes[..shown]
        .iter()
        .map(|(p, m)| (*p, m.marker()))
        .collect();
    let mut out = String::from("<files>\n");
    out.push_str(&format_grouped_paths(&entries));
    if modes.len() > shown {
        out.push_str(&format!("\n[…{} files elided…]", modes.len() - shown));
    }
    out.push_str("\n</files>");
    out
}

/// One directory of the grouped tree.
#[derive(Default)]
struct DirNode<'a> {
    name: String,
    /// Set when a path named this directory itself (a trailing `/`).
    annotation: Option<&'a str>,
    /// `(basename, annotation)` in first-seen order, deduplicated.
    files: Vec<(String, &'a str)>,
    /// Indices into the node arena, in first-seen order.
    dirs: Vec<usize>,
}

/// `formatGroupedPaths` (spec: compaction §5.10): paths as a directory tree, one line per
/// file or folded directory header, without a trailing newline.
///
/// `\` is read as `/`; URL-like paths are root-level files kept whole; absolute paths fold
/// under a `/…` header. A directory's own files come first (basename + `" "` + annotation,
/// or the bare basename when the annotation is empty), then its subdirectories, depth first,
/// in first-seen order. A directory with no files and exactly one subdirectory merges into
/// it (`a/b/c/`). A header is `#` × (depth + 1), a space, the folded name and `/`.
///
/// A path ending in `/` names a directory: it gets a header even when empty, and its
/// annotation is written after that header (`# src/gen/ (Read)`); it never folds away.
pub fn format_grouped_paths(entries: &[(&str, &str)]) -> String {
    let mut arena: Vec<DirNode> = vec![DirNode::default()];
    for &(path, annotation) in entries {
        if is_url_scheme_path(path) {
            add_file(&mut arena[0], path.to_string(), annotation);
            continue;
        }
        let normalized = path.replace('\\', "/");
        let (body, is_dir) = match normalized.strip_suffix('/') {
            Some(b) if !b.is_empty() => (b, true),
            _ => (normalized.as_str(), false),
        };
        let segments: Vec<&str> = body.split('/').collect();
        let (dirs, file) = if is_dir {
            (&segments[..], None)
        } else {
            let (last, dirs) = segments.split_last().unwrap_or((&"", &[]));
            (dirs, Some(*last))
        };
        let mut node = 0;
        for segment in dirs {
            let existing = arena[node]
                .dirs
                .iter()
                .copied()
                .find(|&d| arena[d].name == *segment);
            node = match existing {
                Some(d) => d,
                None => {
                    arena.push(DirNode {
                        name: (*segment).to_string(),
                        ..DirNode::default()
                    });
                    let id = arena.len() - 1;
                    arena[node].dirs.push(id);
                    id
                }
            };
        }
        match file {
            Some(name) => add_file(&mut arena[node], name.to_string(), annotation),
            None if node != 0 => {
                arena[node].annotation.get_or_insert(annotation);
            }
            None => add_file(&mut arena[0], path.to_string(), annotation),
        }
    }
    let mut lines: Vec<String> = Vec::new();
    write_files(&arena[0], &mut lines);
    for &d in &arena[0].dirs {
        write_dir(&arena, d, 0, &mut lines);
    }
    lines.join("\n")
}

fn add_file<'a>(node: &mut DirNode<'a>, name: String, annotation: &'a str) {
    if !node.files.iter().any(|(n, _)| *n == name) {
        node.files.push((name, annotation));
    }
}

fn annotated(name: &str, annotation: &str) -> String {
    if annotation.is_empty() {
        name.to_string()
    } else {
        format!("{name} {annotation}")
    }
}

fn write_files(node: &DirNode, lines: &mut Vec<String>) {
    for (name, annotation) in &node.files {
        lines.push(annotated(name, annotation));
    }
}

fn write_dir(arena: &[DirNode], mut id: usize, depth: usize, lines: &mut Vec<String>) {
    let mut name = arena[id].name.clone();
    while arena[id].files.is_empty() && arena[id].annotation.is_none() && arena[id].dirs.len() == 1
    {
        id = arena[id].dirs[0];
        name.push('/');
        name.push_str(&arena[id].name);
    }
    let node = &arena[id];
    let header = format!("{} {}/", "#".repeat(depth + 1), name);
    lines.push(annotated(&header, node.annotation.unwrap_or("")));
    write_files(node, lines);
    for &d in &node.dirs {
        write_dir(arena, d, depth + 1, lines);
    }
}

/// The paths the `<files>` blocks of `text` list, read back from their grouped tree
/// ([`format_grouped_paths`]: a `#` × depth header per folder, then `name (Mode)` lines), in
/// the order listed. What a handoff document or a copied summary shows of the files survives
/// that way where no `details` carry the lists.
pub fn listed_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("<files>\n") {
        let body = &rest[open + "<files>\n".len()..];
        let end = body.find("</files>").unwrap_or(body.len());
        // The folders of the current header, outermost first (each ends in `/`).
        let mut dirs: Vec<&str> = Vec::new();
        for line in body[..end].lines() {
            let depth = line.bytes().take_while(|&b| b == b'#').count();
            if depth > 0 && line.as_bytes().get(depth) == Some(&b' ') {
                let header = without_mode(&line[depth + 1..]);
                dirs.truncate(depth - 1);
                if dirs.len() == depth - 1 && header.ends_with('/') {
                    dirs.push(header);
                }
                continue;
            }
            let name = without_mode(line);
            if name.is_empty() || name.starts_with("[…") {
                continue;
            }
            let mut path = dirs.concat();
            path.push_str(name);
            out.push(path);
        }
        rest = &body[end..];
    }
    out
}

/// A line of the tree without its ` (Read)` / ` (Write)` / ` (RW)` marker.
fn without_mode(line: &str) -> &str {
    for m in [" (Read)", " (Write)", " (RW)"] {
        if let Some(s) = line.strip_suffix(m) {
            return s;
        }
    }
    line
}

/// Removes every `<files>…</files>`, `<read-files>…</read-files>` and
/// `<modified-files>…</modified-files>` block (shortest match, with the whitespace after it)
/// and trims the end (spec: compaction §5.10 `upsertFileOperations`). An opening tag with no
/// closing tag stays.
pub fn strip_file_operations(summary: &str) -> String {
    const TAGS: [(&str, &str); 3] = [
        ("<files>", "</files>"),
        ("<read-files>", "</read-files>"),
        ("<modified-files>", "</modified-files>"),
    ];
    let mut text = summary.to_string();
    for (open, close) in TAGS {
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(start) = rest.find(open) {
            let Some(len) = rest[start + open.len()..].find(close) else {
                break;
            };
            out.push_str(&rest[..start]);
            let after = &rest[start + open.len() + len + close.len()..];
            rest = after.trim_start_matches(is_js_whitespace);
        }
        out.push_str(rest);
        text = out;
    }
    let trimmed = text.trim_end_matches(is_js_whitespace).len();
    text.truncate(trimmed);
    text
}

/// `upsertFileOperations` (spec: compaction §5.10): replaces any file-list block of
/// `summary` (including the legacy `<read-files>` / `<modified-files>` tags, so old
/// summaries heal on recompaction) by a fresh [`format_file_operations`] block, separated
/// by a blank line. No files: the stripped summary. Empty summary: the block alone.
pub fn upsert_file_operations(
    summary: &str,
    read_files: &[String],
    modified_files: &[String],
    read_set: Option<&BTreeSet<String>>,
) -> String {
    let base = strip_file_operations(summary);
    let block = format_file_operations(read_files, modified_files, read_set);
    if block.is_empty() {
        base
    } else if base.is_empty() {
        block
    } else {
        format!("{base}\n\n{block}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn assistant(calls: &[(&str, Value)]) -> AgentMessage {
        let content: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"type":"toolCall","id":format!("c{i}"),"name":name,"arguments":args})
            })
            .collect();
        let raw = json!({"role":"assistant","content":content,"stopReason":"toolUse"});
        AgentMessage::parse(&raw.to_string(), None).expect("assistant parses")
    }

    #[test]
    fn selectors_are_stripped() {
        for p in [
            "src/foo.ts:50",
            "src/foo.ts:50-",
            "src/foo.ts:50-200",
            "src/foo.ts:50+150",
            "src/foo.ts:5-16,960-973",
            "src/foo.ts:2724..2727",
            "src/foo.ts:raw",
            "src/foo.ts:conflicts",
            "src/foo.ts:RAW",
            "src/foo.ts:Conflicts",
            "src/foo.ts:L50-L60",
            "src/foo.ts:L10",
            "src/foo.ts:50..",
            "src/foo.ts:100-170:raw",
            "src/foo.ts:raw:2-4",
        ] {
            assert_eq!(strip_read_selector(p), "src/foo.ts", "{p}");
        }
        assert_eq!(
            strip_read_selector("archive.zip:dir/file.ts:50-60"),
            "archive.zip:dir/file.ts"
        );
        for p in [
            "db.sqlite:users",
            "local://ctx.md",
            "src/foo.ts",
            "C:/Users/me/file.ts",
            ":50",
            "src/foo.ts:",
            "src/foo.ts:50+",
            "src/foo.ts:-5",
            "src/foo.ts:5,,6",
            "src/foo.ts:5-6-7",
        ] {
            assert_eq!(strip_read_selector(p), p, "{p}");
        }
    }

    #[test]
    fn selector_kinds() {
        let t = split_read_selector("src/foo.ts:50-200");
        assert_eq!(t.selector, Some(("50-200", SelectorKind::Lines)));
        let t = split_read_selector("src/foo.ts:2-4:raw");
        assert_eq!(t.path, "src/foo.ts");
        assert_eq!(t.selector, Some(("2-4:raw", SelectorKind::Verbatim)));
        let t = split_read_selector("src/foo.ts:raw:2-4");
        assert_eq!(t.selector, Some(("raw:2-4", SelectorKind::Verbatim)));
        let t = split_read_selector("src/foo.ts:conflicts");
        assert_eq!(t.selector, Some(("conflicts", SelectorKind::Verbatim)));
        let t = split_read_selector("db.sqlite:users:42");
        assert_eq!(t.path, "db.sqlite:users");
        assert_eq!(t.selector, Some(("42", SelectorKind::Lines)));
        // `conflicts` does not stack with a range list; only `raw` does.
        let t = split_read_selector("a.ts:conflicts:2-4");
        assert_eq!(t.path, "a.ts:conflicts");
        assert_eq!(split_read_selector("src/foo.ts").selector, None);
    }

    #[test]
    fn url_scheme_paths() {
        for p in [
            "conflict://1",
            "conflict://*",
            "artifact://7",
            "local://ctx.md",
            "history://AuthLoader",
            "https://example.com/a.ts",
            "src/login.ts:conflict://3",
            "agent://reviewer",
            "x/9a+b.c-d://z",
        ] {
            assert!(is_url_scheme_path(p), "{p}");
        }
        for p in [
            "src/foo.ts",
            "C:/Users/me/file.ts",
            "db.sqlite:users",
            "archive.zip:dir/file.ts",
            "docs/compaction.md:100-170:raw",
            "HTTPS://UPPER",
            "9://x",
            "://x",
        ] {
            assert!(!is_url_scheme_path(p), "{p}");
        }
    }

    #[test]
    fn reads_with_different_selectors_dedupe() {
        let mut ops = FileOperations::new();
        ops.add_message(&assistant(&[
            ("read", json!({"path":"src/a.ts:1-10"})),
            ("read", json!({"path":"src/a.ts:raw"})),
            ("read", json!({"path":"src/a.ts"})),
        ]));
        assert_eq!(ops.read, set(&["src/a.ts"]));
        assert_eq!(ops.file_lists().read_files, strings(&["src/a.ts"]));
    }

    #[test]
    fn read_then_write_is_modified_only() {
        let mut ops = FileOperations::new();
        ops.add_message(&assistant(&[
            ("read", json!({"path":"src/login.ts:30-80"})),
            ("write", json!({"path":"src/login.ts","content":"x"})),
        ]));
        let lists = compute_file_lists(&ops);
        assert!(lists.read_files.is_empty());
        assert_eq!(lists.modified_files, strings(&["src/login.ts"]));
    }

    #[test]
    fn edit_counts_as_modified_and_other_tools_are_ignored() {
        let mut ops = FileOperations::new();
        ops.add_message(&assistant(&[
            ("edit", json!({"path":"b.ts","oldText":"a","newText":"b"})),
            ("bash", json!({"path":"c.ts","command":"ls"})),
            ("read", json!({"path":5})),
            ("read", json!("not an object")),
        ]));
        assert_eq!(ops.edited, set(&["b.ts"]));
        assert!(ops.read.is_empty() && ops.written.is_empty());
        assert_eq!(ops.file_lists().modified_files, strings(&["b.ts"]));
    }

    #[test]
    fn hidden_tool_calls_do_not_count() {
        let raw = json!({"role":"assistant","content":[
            {"type":"toolCall","id":"a","name":"read","arguments":{"path":"seen.ts"}},
            {"type":"toolCall","id":"b","name":"read","arguments":{"path":"hidden.ts"},"contextOmitted":true}
        ]});
        let msg = AgentMessage::parse(&raw.to_string(), None).unwrap();
        let mut ops = FileOperations::new();
        ops.add_message(&msg);
        assert_eq!(ops.read, set(&["seen.ts"]));
        // Only assistant messages make calls.
        let user = AgentMessage::parse(r#"{"role":"user","content":"read a.ts"}"#, None).unwrap();
        ops.add_message(&user);
        assert_eq!(ops.read.len(), 1);
    }

    #[test]
    fn url_scheme_paths_never_enter_lists() {
        let mut ops = FileOperations::new();
        ops.add_message(&assistant(&[
            ("read", json!({"path":"artifact://7"})),
            ("read", json!({"path":"local://ctx.md"})),
            ("read", json!({"path":"https://example.com/x"})),
            ("read", json!({"path":"conflict://1"})),
            ("edit", json!({"path":"agent://a"})),
            ("write", json!({"path":"src/login.ts:conflict://3"})),
            ("read", json!({"path":"src/ok.ts"})),
        ]));
        assert!(ops.written.is_empty() && ops.edited.is_empty());
        assert_eq!(ops.read, set(&["src/ok.ts"]));
        // Legacy details with URLs are accepted into the sets and filtered by the lists.
        ops.add_details(&json!({
            "readFiles": ["artifact://9", "src/r.ts:10-20", 7],
            "modifiedFiles": ["local://m.md", "src/m.ts"]
        }));
        assert!(ops.read.contains("artifact://9"));
        assert!(ops.read.contains("src/r.ts"));
        let lists = compute_file_lists(&ops);
        assert_eq!(lists.read_files, strings(&["src/ok.ts", "src/r.ts"]));
        assert_eq!(lists.modified_files, strings(&["src/m.ts"]));
    }

    #[test]
    fn lists_sort_by_utf16_code_units() {
        let mut ops = FileOperations::new();
        // U+FF21 (one unit) sorts after U+1F600 (a surrogate pair, 0xD83D…) in JavaScript.
        for p in ["\u{ff21}.ts", "\u{1f600}.ts", "a.ts", "B.ts"] {
            ops.add_tool_call("read", &json!({ "path": p }));
        }
        assert_eq!(
            ops.file_lists().read_files,
            strings(&["B.ts", "a.ts", "\u{1f600}.ts", "\u{ff21}.ts"])
        );
    }

    #[test]
    fn formats_grouped_block_with_markers() {
        let out = format_file_operations(
            &strings(&["src/a.ts", "src/b.ts"]),
            &strings(&["src/c.ts", "src/d.ts"]),
            Some(&set(&["src/a.ts", "src/b.ts", "src/c.ts"])),
        );
        assert_eq!(
            out,
            "<files>\n# src/\na.ts (Read)\nb.ts (Read)\nc.ts (RW)\nd.ts (Write)\n</files>"
        );
        assert_eq!(
            format_file_operations(&[], &strings(&["c.ts"]), None),
            "<files>\nc.ts (Write)\n</files>"
        );
        assert_eq!(format_file_operations(&[], &[], None), "");
    }

    #[test]
    fn listed_paths_read_the_tree_back() {
        let read: Vec<String> = [
            "src/a.ts",
            "src/svc/x/h.rs",
            "README.md",
            "/etc/hosts",
            "src/b/c/d.ts",
        ]
        .map(String::from)
        .to_vec();
        let modified = vec!["src/svc/x/h.rs".to_string(), "lib/z.rs".to_string()];
        let block = format_file_operations(&read, &modified, None);
        let text = format!("A summary.\n\n{block}\nafter");
        let mut got = listed_paths(&text);
        got.sort();
        let mut want: Vec<String> = read.iter().chain(&modified).cloned().collect();
        want.sort();
        want.dedup();
        assert_eq!(got, want, "{block}");
        assert!(listed_paths("no block here").is_empty());
    }

    #[test]
    fn caps_at_twenty_files() {
        let read: Vec<String> = (0..25).map(|i| format!("src/f{i:02}.ts")).collect();
        let out = format_file_operations(&read, &[], None);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "<files>");
        assert_eq!(lines[1], "# src/");
        assert_eq!(lines[2], "f00.ts (Read)");
        assert_eq!(lines[21], "f19.ts (Read)");
        assert!(!out.contains("f20.ts"));
        assert_eq!(lines[22], "[…5 files elided…]");
        assert_eq!(lines[23], "</files>");
        assert_eq!(lines.len(), 24);
        // Exactly twenty: no elision line.
        let out = format_file_operations(&read[..20], &[], None);
        assert!(!out.contains("elided"));
    }

    #[test]
    fn grouped_tree_folds_and_orders() {
        let out = format_grouped_paths(&[
            ("README.md", "(Read)"),
            ("packages/app/src/main.ts", "(Write)"),
            ("packages/app/src/ui/a.ts", "(RW)"),
            ("packages/app/README.md", "(Read)"),
            ("packages/lib/x/y/z.ts", "(Read)"),
            ("/etc/hosts", "(Read)"),
            ("win\\dir\\f.ts", "(Read)"),
            ("~/.cfg/t.json", "(RW)"),
            ("https://h/x", "(Read)"),
        ]);
        assert_eq!(
            out,
            [
                "README.md (Read)",
                "https://h/x (Read)",
                "# packages/",
                "## app/",
                "README.md (Read)",
                "### src/",
                "main.ts (Write)",
                "#### ui/",
                "a.ts (RW)",
                "## lib/x/y/",
                "z.ts (Read)",
                "# /etc/",
                "hosts (Read)",
                "# win/dir/",
                "f.ts (Read)",
                "# ~/.cfg/",
                "t.json (RW)",
            ]
            .join("\n")
        );
    }

    #[test]
    fn grouped_tree_dedupes_and_marks_directories() {
        let out = format_grouped_paths(&[
            ("a/b.ts", "(Read)"),
            ("a\\b.ts", "(Write)"),
            ("gen/out/", "(Read)"),
            ("gen/out/x.ts", "(Write)"),
            ("plain", ""),
        ]);
        assert_eq!(
            out,
            "plain\n# a/\nb.ts (Read)\n# gen/out/ (Read)\nx.ts (Write)"
        );
    }

    #[test]
    fn upsert_replaces_and_heals() {
        let read = strings(&["src/a.ts"]);
        let modified = strings(&["src/b.ts"]);
        let stale = "Summary text.\n\n<files>\n# old/\nx.ts (Read)\n</files>\n";
        let out = upsert_file_operations(stale, &read, &modified, None);
        assert_eq!(
            out,
            "Summary text.\n\n<files>\n# src/\na.ts (Read)\nb.ts (Write)\n</files>"
        );
        let legacy = "Body\n\n<read-files>\nsrc/a.ts\n</read-files>\n\n<modified-files>\nsrc/b.ts\n</modified-files>";
        assert_eq!(
            upsert_file_operations(legacy, &read, &modified, None),
            out.replace("Summary text.", "Body")
        );
        // No files: the base, stripped of stale blocks.
        assert_eq!(upsert_file_operations("Body  \n", &[], &[], None), "Body");
        assert_eq!(
            upsert_file_operations(stale, &[], &[], None),
            "Summary text."
        );
        // Empty base: the block alone.
        assert_eq!(
            upsert_file_operations("", &read, &[], None),
            "<files>\n# src/\na.ts (Read)\n</files>"
        );
        // Several blocks and text between them.
        let many = "A <files>1</files>  B <files>2</files>\n";
        assert_eq!(strip_file_operations(many), "A B");
        // An unclosed tag is left alone.
        assert_eq!(strip_file_operations("A <files> tail"), "A <files> tail");
    }

    #[test]
    fn cumulative_details_seed_the_sets() {
        let mut ops = FileOperations::new();
        ops.add_details(
            &json!({"readFiles":["src/a.ts:1-5","src/b.ts"],"modifiedFiles":["src/c.ts"]}),
        );
        ops.add_message(&assistant(&[("read", json!({"path":"src/c.ts"}))]));
        let lists = ops.file_lists();
        assert_eq!(lists.read_files, strings(&["src/a.ts", "src/b.ts"]));
        assert_eq!(lists.modified_files, strings(&["src/c.ts"]));
        let block =
            format_file_operations(&lists.read_files, &lists.modified_files, Some(&ops.read));
        assert!(block.contains("c.ts (RW)"));
        // Details that are not an object, or lists of the wrong type, add nothing.
        let mut empty = FileOperations::new();
        empty.add_details(&json!("x"));
        empty.add_details(&json!({"readFiles":"a.ts"}));
        assert!(empty.is_empty());
    }
}
