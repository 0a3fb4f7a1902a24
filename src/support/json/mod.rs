//! Raw JSON: a strict scanner that locates values without building them, surgical edits of
//! object text, and `JSON.stringify`-compatible output.

pub mod deep;
pub mod edit;
pub mod fields;
pub mod js;
mod number;
pub mod parse;
mod raw;
pub mod restringify;
pub mod scan;
pub mod view;

pub use parse::parse;

/// Parses JSON bytes into a `serde_json::Value` (`None` if they are not UTF-8 or not JSON).
pub fn parse_bytes(b: &[u8]) -> Option<serde_json::Value> {
    parse(std::str::from_utf8(b).ok()?).ok()
}

/// A JSON object of `fields`, in order: one small function instead of the code `json!`
/// generates per field (and its `serde` round trip of every value).
pub fn object(fields: Vec<(&str, serde_json::Value)>) -> serde_json::Value {
    serde_json::Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn parse_bytes_agrees_with_from_slice() {
        let cases: [&[u8]; 11] = [
            b"{\"a\":[1,2.5,\"x\"],\"b\":null}",
            b"  true ",
            b"\"caf\xc3\xa9\"",
            b"\"\xff\"",
            b"[1,\xff]",
            b"{\"a\":1",
            b"",
            b"-0.0e-3",
            b"\"\\ud83d\\ude00\"",
            b"[\"\\ud83d\",\"\\ude00\"]",
            b"\"\\ud83d\xff\"",
        ];
        for b in cases {
            // A lone surrogate escape reads as U+FFFD, where serde_json refuses it.
            let b = &super::scan::lone_surrogates_as_fffd(b);
            let theirs = serde_json::from_slice::<serde_json::Value>(b).ok();
            assert_eq!(
                super::parse_bytes(b),
                theirs,
                "{}",
                String::from_utf8_lossy(b)
            );
        }
    }
}
