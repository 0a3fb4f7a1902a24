//! The load-time skim of one entry line: validates the whole line as JSON and picks out
//! only what the tree index needs (`type`, `id`, `parentId`, the message's `role` and span).
//! Bodies are parsed later, when something asks for them.

use crate::support::json::scan::{self, decode_string_value, key_is, Scanner, SyntaxError};
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

/// The index-relevant parts of one entry line (spans are byte ranges of the scanned slice).
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
    fn empty(is_object: bool) -> Self {
        LineSkim {
            is_object,
            type_value: None,
            id_value: None,
            parent: ParentField::Missing,
            message: None,
            role_value: None,
        }
    }

    /// Decodes a string member found by the skim.
    pub fn string<'a>(&self, line: &'a [u8], span: &Option<Range<usize>>) -> Option<Cow<'a, str>> {
        span.as_ref()
            .and_then(|r| decode_string_value(&line[r.clone()]))
    }

    /// Moves every span by `-by` (from buffer offsets to line offsets).
    pub fn shift(&mut self, by: usize) {
        let sh = |r: &mut Range<usize>| *r = r.start - by..r.end - by;
        for r in [
            &mut self.type_value,
            &mut self.id_value,
            &mut self.message,
            &mut self.role_value,
        ]
        .into_iter()
        .flatten()
        {
            sh(r);
        }
        if let ParentField::Id(r) = &mut self.parent {
            sh(r);
        }
    }
}

/// Skims the object that starts at `b[start]` (a `{`), validating all of it. Returns the
/// skim (spans are offsets into `b`) and the index after the closing brace. Later duplicates
/// of a key win, as in `JSON.parse`.
pub(crate) fn skim_object(
    sc: &mut Scanner,
    b: &[u8],
    start: usize,
) -> Result<(LineSkim, usize), SyntaxError> {
    let mut out = LineSkim::empty(true);
    let mut inner_error: Option<SyntaxError> = None;
    let end = sc.members(b, start, |_, b, m| {
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
        true
    })?;
    if let Some(e) = inner_error {
        return Err(e);
    }
    Ok((out, end))
}

/// Skims one whole line (a slice without its `\n`): an object, or any other JSON value
/// (reported as not an object by the caller).
pub(crate) fn skim_line(line: &[u8]) -> Result<LineSkim, SyntaxError> {
    let mut sc = Scanner::new();
    let start = sc.skip_ws(line, 0);
    if line.get(start) != Some(&b'{') {
        scan::validate(line)?;
        return Ok(LineSkim::empty(false));
    }
    let (skim, end) = skim_object(&mut sc, line, start)?;
    let rest = sc.skip_ws(line, end);
    if rest != line.len() {
        return Err(SyntaxError {
            offset: rest,
            reason: "trailing characters after the object",
        });
    }
    Ok(skim)
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
