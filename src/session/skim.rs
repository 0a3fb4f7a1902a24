//! The load-time skim of one entry line: validates the whole line as JSON and picks out
//! only what the tree index needs (`type`, `id`, `parentId`, the message's `role` and span).
//! Bodies are parsed later, when something asks for them.

use crate::json::scan::{self, decode_string_value, key_is, SyntaxError};
use std::borrow::Cow;
use std::ops::Range;

/// What the `parentId` member holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParentField {
    Missing,
    Null,
    Id(Range<usize>),
    /// Present but neither a string nor null.
    Invalid,
}

/// The index-relevant parts of one entry line (spans are byte ranges of the line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineSkim {
    /// The line is a JSON object (other JSON values are malformed entries).
    pub is_object: bool,
    pub type_value: Option<Range<usize>>,
    pub id_value: Option<Range<usize>>,
    pub parent: ParentField,
    /// Span of the `message` member's value when it is an object.
    pub message: Option<Range<usize>>,
    /// Span of the message's `role` value (a JSON string, with quotes).
    pub role_value: Option<Range<usize>>,
}

impl LineSkim {
    /// Decodes a string member found by the skim.
    pub fn string<'a>(&self, line: &'a [u8], span: &Option<Range<usize>>) -> Option<Cow<'a, str>> {
        span.as_ref()
            .and_then(|r| decode_string_value(&line[r.clone()]))
    }
}

/// Skims one non-blank line. Later duplicates of a key win, as in `JSON.parse`.
pub(crate) fn skim_line(line: &[u8]) -> Result<LineSkim, SyntaxError> {
    let start = scan::skip_ws(line, 0);
    let mut out = LineSkim {
        is_object: line.get(start) == Some(&b'{'),
        type_value: None,
        id_value: None,
        parent: ParentField::Missing,
        message: None,
        role_value: None,
    };
    if !out.is_object {
        scan::validate(line)?;
        return Ok(out);
    }
    let mut inner_error: Option<SyntaxError> = None;
    let end = scan::for_each_member(line, start, |b, m| {
        let key = &b[m.key.clone()];
        let value = &b[m.value.clone()];
        let is_string = value.first() == Some(&b'"');
        if key_is(key, "type") {
            out.type_value = is_string.then(|| m.value.clone());
        } else if key_is(key, "id") {
            out.id_value = is_string.then(|| m.value.clone());
        } else if key_is(key, "parentId") {
            out.parent = if is_string {
                ParentField::Id(m.value.clone())
            } else if value == b"null" {
                ParentField::Null
            } else {
                ParentField::Invalid
            };
        } else if key_is(key, "message") {
            out.message = None;
            out.role_value = None;
            if value.first() == Some(&b'{') {
                out.message = Some(m.value.clone());
                // The value was validated by the member walk; writers put `role` first.
                match scan::find_first_member(b, m.value.start, "role") {
                    Ok(Some(r)) if b[r.value.start] == b'"' => out.role_value = Some(r.value),
                    Ok(_) => {}
                    Err(e) => inner_error = Some(e),
                }
            }
        }
    })?;
    if let Some(e) = inner_error {
        return Err(e);
    }
    let rest = scan::skip_ws(line, end);
    if rest != line.len() {
        return Err(SyntaxError {
            offset: rest,
            reason: "trailing characters after the object",
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skims_index_fields() {
        let l = br#"{"type":"message","id":"a1","parentId":null,"timestamp":"x","message":{"content":[],"role":"user"}}"#;
        let s = skim_line(l).unwrap();
        assert_eq!(s.string(l, &s.type_value).as_deref(), Some("message"));
        assert_eq!(s.string(l, &s.id_value).as_deref(), Some("a1"));
        assert_eq!(s.parent, ParentField::Null);
        assert_eq!(s.string(l, &s.role_value).as_deref(), Some("user"));
        let m = s.message.unwrap();
        assert_eq!(&l[m], br#"{"content":[],"role":"user"}"#);
    }

    #[test]
    fn reports_syntax_errors_with_offsets() {
        let e = skim_line(br#"{"type":"message","id":"a1""#).unwrap_err();
        assert!(e.offset >= 26);
        assert!(skim_line(br#"{"type":"x"} junk"#).is_err());
        assert!(skim_line(br#"{"message":{"role":"user",}}"#).is_err());
        let s = skim_line(b"[1,2]").unwrap();
        assert!(!s.is_object);
    }

    #[test]
    fn non_string_fields_are_not_taken() {
        let l = br#"{"type":5,"id":{"x":1},"parentId":7}"#;
        let s = skim_line(l).unwrap();
        assert_eq!(s.type_value, None);
        assert_eq!(s.id_value, None);
        assert_eq!(s.parent, ParentField::Invalid);
    }
}
