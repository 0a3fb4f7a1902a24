//! Reading JSON in place: an object's members are located once with the scanner, and values
//! are decoded only when asked for. It replaces derived deserializers for the many small
//! shapes of a session file — one shared code path instead of one generated deserializer per
//! type (the wasm is smaller), and no allocation for fields nobody reads.

use crate::support::json::scan::{decode_str_body, skip_ws, Scanner, SyntaxError};
use std::borrow::Cow;
use std::ops::Range;

/// A JSON object read in place.
#[derive(Debug, Clone)]
pub struct Obj<'a> {
    b: &'a [u8],
    /// (key span without quotes, value span) per member, in order.
    members: Vec<MemberSpan>,
}

/// Where one member of an object is: its key without the quotes, and its value.
pub type MemberSpan = (Range<usize>, Range<usize>);

/// One JSON value: its raw bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Val<'a> {
    raw: &'a [u8],
}

impl<'a> Obj<'a> {
    /// Reads the object that `text` holds (surrounding whitespace allowed).
    pub fn parse(text: &'a [u8]) -> Result<Obj<'a>, SyntaxError> {
        let start = skip_ws(text, 0);
        let mut members = Vec::with_capacity(8);
        let end = Scanner::new().members(text, start, |_, _, m| {
            members.push((m.key.clone(), m.value.clone()));
            true
        })?;
        if skip_ws(text, end) != text.len() {
            return Err(SyntaxError {
                offset: end,
                reason: "trailing characters after the object",
            });
        }
        Ok(Obj { b: text, members })
    }

    /// The object over `text` with members located by an earlier [`Obj::parse`] of the same
    /// text ([`Obj::members`]).
    pub fn from_members(text: &'a [u8], members: Vec<MemberSpan>) -> Obj<'a> {
        Obj { b: text, members }
    }

    /// (key span without quotes, value span) of each member, in order.
    pub fn members(&self) -> &[MemberSpan] {
        &self.members
    }

    /// The value of `key` (the last one when a key repeats, as in `JSON.parse`).
    pub fn get(&self, key: &str) -> Option<Val<'a>> {
        self.members.iter().rev().find_map(|(k, v)| {
            let raw = &self.b[k.clone()];
            let matches = raw == key.as_bytes()
                || (crate::support::json::scan::has_backslash(raw)
                    && decode_str_body(raw).is_some_and(|d| d == key));
            matches.then(|| Val {
                raw: &self.b[v.clone()],
            })
        })
    }

    /// The value of `key` unless it is absent or `null`.
    pub fn opt(&self, key: &str) -> Option<Val<'a>> {
        self.get(key).filter(|v| !v.is_null())
    }

    /// A string member.
    pub fn str(&self, key: &str) -> Option<Cow<'a, str>> {
        self.get(key).and_then(|v| v.str())
    }

    /// A string member, owned.
    pub fn string(&self, key: &str) -> Option<String> {
        self.str(key).map(Cow::into_owned)
    }

    /// A number member.
    pub fn f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(|v| v.f64())
    }

    /// A boolean member (`false` when absent or not a boolean).
    pub fn flag(&self, key: &str) -> bool {
        self.get(key).and_then(|v| v.bool()).unwrap_or(false)
    }

    /// A member as a `serde_json::Value` (absent and `null` give `None`).
    pub fn value(&self, key: &str) -> Option<serde_json::Value> {
        self.opt(key).and_then(|v| v.value())
    }

    /// The members as (decoded key, value) pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (Cow<'a, str>, Val<'a>)> + '_ {
        self.members.iter().filter_map(|(k, v)| {
            decode_str_body(&self.b[k.clone()]).map(|key| {
                (
                    key,
                    Val {
                        raw: &self.b[v.clone()],
                    },
                )
            })
        })
    }
}

impl<'a> Val<'a> {
    /// The value whose JSON text is `raw` (one whole value, no surrounding whitespace).
    pub fn of(raw: &'a [u8]) -> Val<'a> {
        Val { raw }
    }

    /// The value's raw JSON text.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        self.raw == b"null"
    }

    /// A string value, decoded.
    pub fn str(&self) -> Option<Cow<'a, str>> {
        let r = self.raw;
        if r.len() >= 2 && r[0] == b'"' && r[r.len() - 1] == b'"' {
            decode_str_body(&r[1..r.len() - 1])
        } else {
            None
        }
    }

    /// A number value.
    pub fn f64(&self) -> Option<f64> {
        match self.raw.first() {
            Some(b'-' | b'0'..=b'9') => std::str::from_utf8(self.raw).ok()?.parse().ok(),
            _ => None,
        }
    }

    /// A boolean value.
    pub fn bool(&self) -> Option<bool> {
        match self.raw {
            b"true" => Some(true),
            b"false" => Some(false),
            _ => None,
        }
    }

    /// An object value.
    pub fn obj(&self) -> Option<Obj<'a>> {
        (self.raw.first() == Some(&b'{'))
            .then(|| Obj::parse(self.raw).ok())
            .flatten()
    }

    /// The elements of an array value.
    pub fn array(&self) -> Option<Vec<Val<'a>>> {
        if self.raw.first() != Some(&b'[') {
            return None;
        }
        let b = self.raw;
        let mut sc = Scanner::new();
        let mut out = Vec::new();
        let mut i = skip_ws(b, 1);
        if b.get(i) == Some(&b']') {
            return Some(out);
        }
        loop {
            let end = sc.skip_value(b, i).ok()?;
            out.push(Val { raw: &b[i..end] });
            i = skip_ws(b, end);
            match b.get(i) {
                Some(b',') => i = skip_ws(b, i + 1),
                Some(b']') => return Some(out),
                _ => return None,
            }
        }
    }

    /// The value as a `serde_json::Value`.
    pub fn value(&self) -> Option<serde_json::Value> {
        crate::support::json::parse_bytes(self.raw)
    }

    /// JavaScript truthiness of raw value bytes (see [`Val::truthy`]).
    pub fn truthy_raw(raw: &[u8]) -> bool {
        Val { raw }.truthy()
    }

    /// JavaScript truthiness.
    pub fn truthy(&self) -> bool {
        match self.raw {
            b"null" | b"false" | b"\"\"" => false,
            r => match r.first() {
                Some(b'-' | b'0'..=b'9') => self.f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
                _ => true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_members_in_place() {
        let t = br#" {"a":"x\ny","n":-1.5e2,"t":true,"z":null,"o":{"k":[1,"two",{"d":3}]},"a":"last"} "#;
        let o = Obj::parse(t).unwrap();
        assert_eq!(o.str("a").as_deref(), Some("last"));
        assert_eq!(o.f64("n"), Some(-150.0));
        assert!(o.flag("t"));
        assert!(!o.flag("missing"));
        assert!(o.get("z").unwrap().is_null());
        assert!(o.opt("z").is_none());
        let inner = o.get("o").unwrap().obj().unwrap();
        let items = inner.get("k").unwrap().array().unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].str().as_deref(), Some("two"));
        assert_eq!(items[2].obj().unwrap().f64("d"), Some(3.0));
        assert_eq!(
            o.value("o"),
            Some(serde_json::json!({"k":[1,"two",{"d":3}]}))
        );
        assert_eq!(Val { raw: b"[]" }.array().unwrap().len(), 0);
        assert!(Obj::parse(b"[1]").is_err());
        assert!(Obj::parse(br#"{"a":1} x"#).is_err());
        let keys: Vec<String> = o.iter().map(|(k, _)| k.into_owned()).collect();
        assert_eq!(keys, ["a", "n", "t", "z", "o", "a"]);
    }

    #[test]
    fn truthiness_like_javascript() {
        for (raw, want) in [
            (&b"null"[..], false),
            (b"false", false),
            (b"0", false),
            (b"\"\"", false),
            (b"true", true),
            (b"1", true),
            (b"\"x\"", true),
            (b"[]", true),
            (b"{}", true),
        ] {
            assert_eq!(
                Val { raw }.truthy(),
                want,
                "{}",
                String::from_utf8_lossy(raw)
            );
        }
    }
}
