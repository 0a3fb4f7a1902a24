//! Reading host option objects. Every options object the host passes (settings, prune and
//! render options, trigger inputs) is read through these functions, so a wrong field is
//! reported one way everywhere: by its name and what it must be. Absent and `null` fields
//! mean "not set". Callers turn a [`FieldError`] into their layer's error and code.

use serde_json::{Map, Value};
use std::fmt;

/// A field of the wrong type or out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's name as the host wrote it (prefixed by its object's name where known).
    pub field: String,
    /// What it must be: "a boolean", "a non-negative number", …
    pub expected: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` must be {}", self.field, self.expected)
    }
}

fn wrong(field: &str, expected: impl Into<String>) -> FieldError {
    FieldError {
        field: field.to_string(),
        expected: expected.into(),
    }
}

/// `v` as a boolean.
pub fn boolean(field: &str, v: &Value) -> Result<bool, FieldError> {
    v.as_bool().ok_or_else(|| wrong(field, "true or false"))
}

/// `v` as a finite number.
pub fn number(field: &str, v: &Value) -> Result<f64, FieldError> {
    v.as_f64()
        .filter(|f| f.is_finite())
        .ok_or_else(|| wrong(field, "a finite number"))
}

/// `v` as a non-negative number, truncated to an integer (token counts, milliseconds).
pub fn count(field: &str, v: &Value) -> Result<u64, FieldError> {
    match v.as_f64() {
        Some(f) if f.is_finite() && f >= 0.0 => Ok(f as u64),
        _ => Err(wrong(field, "a non-negative number")),
    }
}

/// `v` as a whole number from `min` to `max`.
pub fn whole(field: &str, v: &Value, min: u64, max: u64) -> Result<u64, FieldError> {
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && (min as f64..=max as f64).contains(&f) => Ok(f as u64),
        _ => Err(wrong(field, format!("a whole number from {min} to {max}"))),
    }
}

/// `Number.MAX_SAFE_INTEGER`: the largest whole number JavaScript holds exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// `v` as a whole number JavaScript holds exactly (token counts in settings).
pub fn safe_count(field: &str, v: &Value) -> Result<u64, FieldError> {
    whole(field, v, 0, MAX_SAFE_INTEGER)
}

/// `v` as a string that is not empty.
pub fn non_empty_string<'v>(field: &str, v: &'v Value) -> Result<&'v str, FieldError> {
    v.as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| wrong(field, "a non-empty string"))
}

/// `v` as a string.
pub fn string<'v>(field: &str, v: &'v Value) -> Result<&'v str, FieldError> {
    v.as_str().ok_or_else(|| wrong(field, "a string"))
}

/// An options object: `None` or `null` reads as an empty one.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    map: Option<&'a Map<String, Value>>,
}

impl<'a> Fields<'a> {
    /// The fields of `v`, which must be absent, `null` or an object (`what` names it in the
    /// error).
    pub fn of(v: Option<&'a Value>, what: &str) -> Result<Fields<'a>, FieldError> {
        match v {
            None | Some(Value::Null) => Ok(Fields { map: None }),
            Some(Value::Object(map)) => Ok(Fields { map: Some(map) }),
            Some(_) => Err(wrong(what, "an object")),
        }
    }

    /// The field's value; `None` when absent or `null`.
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map?.get(key).filter(|v| !v.is_null())
    }

    fn read<T>(
        &self,
        key: &str,
        f: impl FnOnce(&str, &'a Value) -> Result<T, FieldError>,
    ) -> Result<Option<T>, FieldError> {
        self.get(key).map(|v| f(key, v)).transpose()
    }

    pub fn boolean(&self, key: &str) -> Result<Option<bool>, FieldError> {
        self.read(key, boolean)
    }

    pub fn number(&self, key: &str) -> Result<Option<f64>, FieldError> {
        self.read(key, number)
    }

    pub fn count(&self, key: &str) -> Result<Option<u64>, FieldError> {
        self.read(key, count)
    }

    pub fn string(&self, key: &str) -> Result<Option<&'a str>, FieldError> {
        self.read(key, string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_and_null_are_not_set() {
        let v = json!({"a": null});
        let f = Fields::of(Some(&v), "options").unwrap();
        assert_eq!(f.count("a"), Ok(None));
        assert_eq!(f.count("b"), Ok(None));
        assert_eq!(Fields::of(None, "options").unwrap().boolean("x"), Ok(None));
        assert_eq!(
            Fields::of(Some(&Value::Null), "o").unwrap().number("x"),
            Ok(None)
        );
    }

    #[test]
    fn errors_name_the_field_and_what_it_must_be() {
        let v = json!({"n": -1, "s": 3, "b": "yes", "w": 2.5, "f": "x"});
        let f = Fields::of(Some(&v), "options").unwrap();
        assert_eq!(
            f.count("n").unwrap_err().to_string(),
            "`n` must be a non-negative number"
        );
        assert_eq!(f.string("s").unwrap_err().field, "s");
        assert_eq!(f.boolean("b").unwrap_err().expected, "true or false");
        assert_eq!(
            whole("w", &v["w"], 1, 9).unwrap_err().to_string(),
            "`w` must be a whole number from 1 to 9"
        );
        assert_eq!(f.number("f").unwrap_err().expected, "a finite number");
        assert_eq!(safe_count("c", &json!(1.0e16)).unwrap_err().field, "c");
        assert_eq!(safe_count("c", &json!(12)), Ok(12));
        assert_eq!(
            non_empty_string("e", &json!("")).unwrap_err().expected,
            "a non-empty string"
        );
        assert_eq!(
            Fields::of(Some(&json!([1])), "options").unwrap_err().field,
            "options"
        );
    }

    #[test]
    fn values_read_as_their_type() {
        let v = json!({"n": 12.7, "w": 4, "s": "x", "b": true, "f": -0.5});
        let f = Fields::of(Some(&v), "o").unwrap();
        assert_eq!(f.count("n"), Ok(Some(12)));
        assert_eq!(whole("w", &v["w"], 1, 9), Ok(4));
        assert_eq!(whole("w", &v["w"], 5, 9).unwrap_err().field, "w");
        assert_eq!(f.string("s"), Ok(Some("x")));
        assert_eq!(f.boolean("b"), Ok(Some(true)));
        assert_eq!(f.number("f"), Ok(Some(-0.5)));
    }
}
