//! Values nested deeper than [`parse`](super::parse) reads (issue 43 item 2).
//!
//! The value parser refuses containers from 128 levels deep, as `serde_json` does: a
//! `serde_json::Value` is built, compared, cloned and dropped recursively, and wasm's call
//! stack is small, so the crate never holds a much deeper one. `JSON.parse` reads any depth,
//! though, and a session line nested deeper (a tool call's arguments, a result's details) is
//! still a message the provider must get whole: were it dropped, its tool call's result would
//! be orphaned, which providers reject.
//!
//! [`parse_deep`] reads such a text with every container from [`CUT`] levels down kept aside
//! as raw text (re-printed as `JSON.stringify` prints it, by a loop with its own stack) and a
//! placeholder string in its place; [`DeepValues::write`] writes a value built from it with the
//! raw texts back in place of the placeholders. A placeholder is [`MARK`], the index, [`MARK`]:
//! `MARK` is a noncharacter, and a text holding it (or an escape of it) is refused, so no
//! string of the text can be taken for a placeholder.

use super::js::write_value;
use super::parse::{parse, parse_cut};
pub use super::raw::MARK;
use serde_json::Value;

/// The depth from which [`parse_deep`] keeps containers as raw text: the values it builds stay
/// this shallow, far from what a recursive walk of them can overflow.
pub const CUT: usize = 64;

/// The raw texts of the deep containers of the values [`parse_deep`] read.
#[derive(Debug, Default)]
pub struct DeepValues {
    raws: Vec<String>,
}

/// Whether `text` holds `MARK` or a `\u` escape of it.
fn holds_mark(text: &str) -> bool {
    text.contains(MARK)
        || text
            .as_bytes()
            .windows(6)
            .any(|w| w.starts_with(b"\\u") && w[2..].eq_ignore_ascii_case(b"fdd0"))
}

/// Parses `text` as [`parse`] does; where that refuses it only for its depth, reads it with
/// its containers from [`CUT`] levels down kept in `deep` (see the module documentation).
/// `None` when it is not JSON, holds [`MARK`], or a deep object repeats a key (which
/// `JSON.parse` merges; kept as raw text, it could not be).
pub fn parse_deep(text: &str, deep: &mut DeepValues) -> Option<Value> {
    match parse(text) {
        Ok(v) => Some(v),
        Err(e) if e.reason == super::parse::TOO_DEEP && !holds_mark(text) => {
            parse_cut(text, CUT, &mut deep.raws).ok()
        }
        Err(_) => None,
    }
}

impl DeepValues {
    /// `JSON.stringify` of `v` with the raw texts in place of their placeholders.
    pub fn write(&self, out: &mut String, v: &Value) {
        if self.raws.is_empty() {
            return write_value(out, v);
        }
        let mut text = String::new();
        write_value(&mut text, v);
        // Every MARK is a placeholder's (the parsed text held none), printed as `"MARK k MARK"`.
        let mut rest = text.as_str();
        let quoted_mark = format!("\"{MARK}");
        while let Some(at) = rest.find(&quoted_mark) {
            out.push_str(&rest[..at]);
            let after = &rest[at + quoted_mark.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let close = after[digits..]
                .strip_prefix(MARK)
                .and_then(|r| r.strip_prefix('"'));
            let raw = after[..digits]
                .parse::<usize>()
                .ok()
                .and_then(|k| self.raws.get(k));
            match (raw, close) {
                (Some(raw), Some(r)) => {
                    out.push_str(raw);
                    rest = r;
                }
                // Not a placeholder after all (cannot happen): written as it is.
                _ => {
                    out.push_str(&quoted_mark);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
    }

    /// Whether any value read so far had deep containers.
    pub fn is_empty(&self) -> bool {
        self.raws.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deep text reads, and writes back as `JSON.stringify(JSON.parse(text))` would.
    fn round_trip(text: &str) -> Option<String> {
        let mut deep = DeepValues::default();
        let v = parse_deep(text, &mut deep)?;
        let mut out = String::new();
        deep.write(&mut out, &v);
        Some(out)
    }

    #[test]
    fn shallow_texts_read_as_parse_reads_them() {
        let mut deep = DeepValues::default();
        let t = r#"{"a":[1,2.50,"x\u0041"],"b":{"c":null}}"#;
        assert_eq!(parse_deep(t, &mut deep), parse(t).ok());
        assert!(deep.is_empty());
        assert_eq!(
            round_trip(t).as_deref(),
            Some(r#"{"a":[1,2.5,"xA"],"b":{"c":null}}"#)
        );
        assert_eq!(round_trip("[1,"), None);
    }

    #[test]
    fn deep_containers_are_written_back_whole_and_normalized() {
        for depth in [127, 128, 1_000, 100_000] {
            let t = format!(
                "{{\"x\":1,\"args\":{}{}}}",
                "[".repeat(depth),
                "]".repeat(depth)
            );
            assert_eq!(round_trip(&t), Some(t.clone()), "depth {depth}");
            let o = format!("{}\"v\"{}", "{\"a\" : ".repeat(depth), " }".repeat(depth));
            let want = format!("{}\"v\"{}", "{\"a\":".repeat(depth), "}".repeat(depth));
            assert_eq!(round_trip(&o), Some(want), "object depth {depth}");
        }
        // Strings, numbers and literals inside are printed as the shallow writer prints them.
        let inner = r#"{"s":"\u00e9\/\ud83d","n":[1.0,-0,1e400,12345678901234567890],"t":[true,false,null]}"#;
        let t = format!("{}{inner}{}", "[".repeat(200), "]".repeat(200));
        let want_inner = r#"{"s":"é/�","n":[1,0,null,12345678901234567000],"t":[true,false,null]}"#;
        assert_eq!(
            round_trip(&t),
            Some(format!(
                "{}{want_inner}{}",
                "[".repeat(200),
                "]".repeat(200)
            ))
        );
    }

    #[test]
    fn the_cut_keeps_values_shallow_and_the_top_levels_editable() {
        let t = format!(
            "{{\"role\":\"assistant\",\"a\":{}1{}}}",
            "[".repeat(500),
            "]".repeat(500)
        );
        let mut deep = DeepValues::default();
        let mut v = parse_deep(&t, &mut deep).expect("reads");
        assert!(!deep.is_empty());
        // Editable where the writer then puts the raw text.
        v.as_object_mut().unwrap().insert("b".into(), true.into());
        let mut out = String::new();
        deep.write(&mut out, &v);
        assert_eq!(out, t.replace("}", ",\"b\":true}"));
        let mut depth = 0;
        let mut at = &v["a"];
        while let Value::Array(items) = at {
            depth += 1;
            at = &items[0];
        }
        assert_eq!(depth, CUT - 2, "arrays of the value above the placeholder");
        assert!(at.as_str().is_some_and(|s| s.starts_with(MARK)));
    }

    #[test]
    fn texts_holding_the_mark_or_repeating_a_deep_key_are_refused() {
        let deep = |inner: &str| format!("{}{inner}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(round_trip(&deep("\"\u{FDD0}0\u{FDD0}\"")), None);
        assert_eq!(round_trip(&deep(r#""\uFDD0""#)), None);
        assert_eq!(round_trip(&deep(r#"{"k":1,"k":2}"#)), None);
        // Shallow, they read as before.
        assert!(round_trip("\"\u{FDD0}0\u{FDD0}\"").is_some());
        assert!(round_trip(r#"{"k":1,"k":2}"#).is_some());
    }
}
