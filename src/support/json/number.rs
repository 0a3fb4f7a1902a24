//! The value of a JSON number token, read by the parser and by the re-printer of raw text.

use serde_json::Number;

/// A number token as `serde_json` reads it (`None` beyond the `f64` range).
pub(crate) fn number(t: &str) -> Option<Number> {
    if !t.bytes().any(|c| matches!(c, b'.' | b'e' | b'E')) {
        if t.starts_with('-') {
            // -0 and integers below i64::MIN are floats.
            if let Ok(n) = t.parse::<i64>() {
                if n != 0 {
                    return Some(n.into());
                }
            }
        } else if let Ok(n) = t.parse::<u64>() {
            return Some(n.into());
        }
    }
    Number::from_f64(t.parse().ok()?)
}
