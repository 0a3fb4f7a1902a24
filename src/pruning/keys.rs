//! Supersede keys of `read` results (spec: compaction §6.2): the key a newer read of the same
//! file (or range) shares with the result it makes stale.

use crate::summary::fileops::{split_read_selector, SelectorKind};
use serde_json::Value;

/// `readToolSupersedeKey(toolName, args)` (spec: compaction §6.2): the key under which a
/// `read` result can be superseded by a newer one.
/// - only tool `read` with a non-empty string `path`; paths containing `://` get none;
/// - no read selector (§5.10) ⇒ the path; a line-range selector ⇒ `path + "\0" + selector`
///   (its parent key is the bare path); `raw`/`conflicts`, alone or compound ⇒
///   `path + "\u{1}" + selector` (no parent: only an identical read supersedes it).
///
/// `src/foo.ts:50-200` → `"src/foo.ts\u{0}50-200"`; `db.sqlite:users` → unchanged;
/// `skill://react` → none.
pub fn read_tool_supersede_key(tool_name: &str, args: &Value) -> Option<String> {
    if tool_name != "read" {
        return None;
    }
    let mut key = String::new();
    write_key(args.get("path")?.as_str()?, &mut key)?;
    Some(key)
}

/// Writes the supersede key of a `read` path (spec: compaction §6.2) into `out` (cleared
/// first): the path, or `path + "\0" + selector` for a line range, or `path + "\u{1}" +
/// selector` for `raw`/`conflicts`. Returns `None` when the path has no key, else the length
/// of its parent key (the bare path) for a line range, `Some(None)` otherwise.
pub(super) fn write_key(path: &str, out: &mut String) -> Option<Option<usize>> {
    if path.is_empty() || path.contains("://") {
        return None;
    }
    out.clear();
    let target = split_read_selector(path);
    Some(match target.selector {
        None => {
            out.push_str(path);
            None
        }
        Some((selector, kind)) => {
            out.push_str(target.path);
            out.push(match kind {
                SelectorKind::Lines => '\u{0}',
                SelectorKind::Verbatim => '\u{1}',
            });
            out.push_str(selector);
            (kind == SelectorKind::Lines).then_some(target.path.len())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_written_like_the_reference() {
        let mut k = String::new();
        assert_eq!(write_key("a.ts:1-2", &mut k), Some(Some(4)));
        assert_eq!(k, "a.ts\u{0}1-2");
        assert_eq!(write_key("a.ts:raw", &mut k), Some(None));
        assert_eq!(k, "a.ts\u{1}raw");
        assert_eq!(write_key("a.ts", &mut k), Some(None));
        assert_eq!(k, "a.ts");
        assert_eq!(write_key("local://x", &mut k), None);
        assert_eq!(write_key("", &mut k), None);
    }
}
