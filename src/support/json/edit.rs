//! Surgical edits of raw JSON object text.
//!
//! A changed entry is written back by splicing only the members that changed into its
//! original line, so every other byte (field order, unknown fields, number spelling, escapes)
//! survives — the `toml_edit` approach. Values are given as ready JSON text.

use crate::support::json::scan::{for_each_member, key_is, skip_ws, Member, SyntaxError};
use std::ops::Range;

fn last_member(
    text: &str,
    start: usize,
    key: &str,
) -> Result<(Option<Member>, usize), SyntaxError> {
    let mut found = None;
    let end = for_each_member(text.as_bytes(), start, |b, m| {
        if key_is(&b[m.key.clone()], key) {
            found = Some(m.clone());
        }
    })?;
    Ok((found, end))
}

/// The span of the value of `path` (a chain of object keys) inside the object `text`. When a
/// key occurs more than once the last one counts, as in `JSON.parse`.
pub fn find_path(text: &str, path: &[&str]) -> Result<Option<Range<usize>>, SyntaxError> {
    let mut start = skip_ws(text.as_bytes(), 0);
    let mut span = start..text.len();
    for key in path {
        if text.as_bytes().get(start) != Some(&b'{') {
            return Ok(None);
        }
        match last_member(text, start, key)?.0 {
            Some(m) => {
                span = m.value.clone();
                start = m.value.start;
            }
            None => return Ok(None),
        }
    }
    Ok(Some(span))
}

/// Sets `key` of the object found at `path` inside `text` to the JSON text `value`: replaces
/// the value in place when the key exists, else appends the member before the closing brace
/// (where `JSON.stringify` would put a newly assigned property). Returns `None` when `path`
/// does not lead to an object.
pub fn set_member(
    text: &str,
    path: &[&str],
    key: &str,
    value: &str,
) -> Result<Option<String>, SyntaxError> {
    let Some(obj) = find_path(text, path)? else {
        return Ok(None);
    };
    if text.as_bytes().get(obj.start) != Some(&b'{') {
        return Ok(None);
    }
    let (found, end) = last_member(text, obj.start, key)?;
    let mut out = String::with_capacity(text.len() + key.len() + value.len() + 4);
    match found {
        Some(m) => {
            out.push_str(&text[..m.value.start]);
            out.push_str(value);
            out.push_str(&text[m.value.end..]);
        }
        None => {
            // `end` is just after the closing brace.
            let close = end - 1;
            let inner_empty = skip_ws(text.as_bytes(), obj.start + 1) == close;
            out.push_str(&text[..close]);
            if !inner_empty {
                out.push(',');
            }
            crate::support::json::js::write_string(&mut out, key);
            out.push(':');
            out.push_str(value);
            out.push_str(&text[close..]);
        }
    }
    Ok(Some(out))
}

/// Removes every occurrence of `key` from the object found at `path`. Returns the text
/// unchanged (as `Some`) when the key is absent, `None` when `path` leads to no object.
pub fn remove_member(text: &str, path: &[&str], key: &str) -> Result<Option<String>, SyntaxError> {
    let Some(obj) = find_path(text, path)? else {
        return Ok(None);
    };
    if text.as_bytes().get(obj.start) != Some(&b'{') {
        return Ok(None);
    }
    let mut out = text.to_string();
    // One occurrence at a time: a member goes together with the comma that separates it from
    // its neighbour (the following one, or the preceding one for the last member).
    loop {
        let mut all: Vec<Member> = Vec::new();
        for_each_member(out.as_bytes(), obj.start, |_, m| all.push(m.clone()))?;
        let b = out.as_bytes();
        let Some(i) = all.iter().position(|m| key_is(&b[m.key.clone()], key)) else {
            return Ok(Some(out));
        };
        let m = &all[i];
        let cut = if let Some(next) = all.get(i + 1) {
            m.span.start..next.span.start
        } else if i > 0 {
            all[i - 1].span.end..m.span.end
        } else {
            m.span.clone()
        };
        out.replace_range(cut, "");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replaces_in_place_or_appends() {
        let t = r#"{"type":"message","message":{"role":"hookMessage","x":1}}"#;
        assert_eq!(
            set_member(t, &["message"], "role", "\"custom\"")
                .unwrap()
                .unwrap(),
            r#"{"type":"message","message":{"role":"custom","x":1}}"#
        );
        assert_eq!(
            set_member(t, &[], "id", "\"00000001\"").unwrap().unwrap(),
            r#"{"type":"message","message":{"role":"hookMessage","x":1},"id":"00000001"}"#
        );
        assert_eq!(
            set_member("{ }", &[], "a", "1").unwrap().unwrap(),
            r#"{ "a":1}"#
        );
        assert_eq!(set_member(t, &["type"], "a", "1").unwrap(), None);
        assert_eq!(set_member(t, &["nope"], "a", "1").unwrap(), None);
    }

    #[test]
    fn remove_deletes_member_and_one_comma() {
        let t = r#"{"a":1,"firstKeptEntryIndex":5,"b":2}"#;
        assert_eq!(
            remove_member(t, &[], "firstKeptEntryIndex")
                .unwrap()
                .unwrap(),
            r#"{"a":1,"b":2}"#
        );
        assert_eq!(
            remove_member(r#"{"a":1,"b":2}"#, &[], "b")
                .unwrap()
                .unwrap(),
            r#"{"a":1}"#
        );
        assert_eq!(
            remove_member(r#"{"a":1,"b":2}"#, &[], "a")
                .unwrap()
                .unwrap(),
            r#"{"b":2}"#
        );
        assert_eq!(
            remove_member(r#"{"a":1}"#, &[], "a").unwrap().unwrap(),
            r#"{}"#
        );
        assert_eq!(
            remove_member(r#"{"a":1,"a":2,"c":3}"#, &[], "a")
                .unwrap()
                .unwrap(),
            r#"{"c":3}"#
        );
        assert_eq!(
            remove_member(r#"{"c":3,"a":1,"a":2}"#, &[], "a")
                .unwrap()
                .unwrap(),
            r#"{"c":3}"#
        );
        let out = remove_member(t, &[], "zzz").unwrap().unwrap();
        assert_eq!(out, t);
    }
}
