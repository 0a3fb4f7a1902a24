//! The load-time skim of one entry line: validates the whole line as JSON and picks out
//! only what the tree index needs (`type`, `id`, `parentId`, the message's `role` and span).
//! Bodies are parsed later, when something asks for them.

use crate::session::facts::{scan_message, CallFacts, MessageFacts};
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
    /// The message's facts (spans relative like the others; its tool calls were appended to
    /// the calls vector the skim was given).
    pub facts: Option<MessageFacts>,
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
            facts: None,
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
        if let Some(f) = &mut self.facts {
            f.shift(by);
        }
    }
}

/// Skims the object that starts at `b[start]` (a `{`), validating all of it. Returns the
/// skim (spans are offsets into `b`) and the index after the closing brace. Later duplicates
/// of a key win, as in `JSON.parse`. The `message` member is crossed by the facts scan
/// (`session::facts`), which validates it as a skip would and records what later operations
/// read; its tool-call blocks are appended to `calls`.
pub(crate) fn skim_object(
    sc: &mut Scanner,
    b: &[u8],
    start: usize,
    calls: &mut Vec<CallFacts>,
) -> Result<(LineSkim, usize), SyntaxError> {
    let mut out = LineSkim::empty(true);
    let calls_from = calls.len();
    let end = sc.members_custom(b, start, &mut |sc, b, key, v| {
        let key = &b[key];
        if key_is(key, "message") {
            out.message = None;
            out.role_value = None;
            out.facts = None;
            calls.truncate(calls_from);
            if b.get(v) == Some(&b'{') {
                let (end, scan) = scan_message(sc, b, v, calls)?;
                out.message = Some(v..end);
                out.role_value = scan.role;
                out.facts = scan.facts;
                return Ok(end);
            }
            return sc.skip_value(b, v);
        }
        let end = sc.skip_value(b, v)?;
        let value = &b[v..end];
        let is_string = value.first() == Some(&b'"');
        if key_is(key, "type") {
            out.type_value = is_string.then_some(v..end);
        } else if key_is(key, "id") {
            out.id_value = is_string.then_some(v..end);
        } else if key_is(key, "parentId") {
            out.parent = if is_string {
                ParentField::Id(v..end)
            } else if value == b"null" {
                ParentField::Null
            } else {
                ParentField::Invalid
            };
        }
        Ok(end)
    })?;
    Ok((out, end))
}

/// Skims one whole line (a slice without its `\n`): an object, or any other JSON value
/// (reported as not an object by the caller).
pub(crate) fn skim_line(line: &[u8], calls: &mut Vec<CallFacts>) -> Result<LineSkim, SyntaxError> {
    let mut sc = Scanner::new();
    let start = sc.skip_ws(line, 0);
    if line.get(start) != Some(&b'{') {
        scan::validate(line)?;
        return Ok(LineSkim::empty(false));
    }
    let (mut skim, end) = skim_object(&mut sc, line, start, calls)?;
    if sc.bad_utf8 {
        // Read with U+FFFD in place of the bad bytes: the facts would not match.
        skim.facts = None;
    }
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

    fn skim_line_(l: &[u8]) -> Result<LineSkim, SyntaxError> {
        skim_line(l, &mut Vec::new())
    }

    #[test]
    fn skims_index_fields() {
        let l = br#"{"type":"message","id":"a1","parentId":null,"timestamp":"x","message":{"content":[],"role":"user"}}"#;
        let s = skim_line(l, &mut Vec::new()).unwrap();
        assert_eq!(s.string(l, &s.type_value).as_deref(), Some("message"));
        assert_eq!(s.string(l, &s.id_value).as_deref(), Some("a1"));
        assert_eq!(s.parent, ParentField::Null);
        assert_eq!(s.string(l, &s.role_value).as_deref(), Some("user"));
        let m = s.message.unwrap();
        assert_eq!(&l[m], br#"{"content":[],"role":"user"}"#);
    }

    #[test]
    fn reports_syntax_errors_with_offsets() {
        let e = skim_line_(br#"{"type":"message","id":"a1""#).unwrap_err();
        assert!(e.offset >= 26);
        assert!(skim_line_(br#"{"type":"x"} junk"#).is_err());
        assert!(skim_line_(br#"{"message":{"role":"user",}}"#).is_err());
        let s = skim_line_(b"[1,2]").unwrap();
        assert!(!s.is_object);
    }

    #[test]
    fn non_string_fields_are_not_taken() {
        let l = br#"{"type":5,"id":{"x":1},"parentId":7}"#;
        let s = skim_line(l, &mut Vec::new()).unwrap();
        assert_eq!(s.type_value, None);
        assert_eq!(s.id_value, None);
        assert_eq!(s.parent, ParentField::Invalid);
    }
}
