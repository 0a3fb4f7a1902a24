//! The error classifier (issue 39): any status, stop reason, usage, window, `Retry-After` value
//! and error text (any bytes read as UTF-8 lossily, JSON or not) gets a class, never a panic;
//! the class's JSON names it; the legacy readers agree with it (an overflow class is an
//! overflow for `is_overflow_error_text`); and the classification does not depend on letter
//! case (the tables are matched against the lower-case text).
//!
//! Input: a header of choices (arbitrary), a NUL, then the error text.
#![no_main]
use arbitrary::{Result, Unstructured};
use ctxfold::session::message::StopReason;
use ctxfold::triggers::{classify_error, is_overflow_error_text, ErrorClass, ErrorInput};
use libfuzzer_sys::fuzz_target;

const STATUSES: [u16; 12] = [200, 400, 401, 403, 404, 408, 413, 422, 429, 500, 503, 529];
const RETRY: [&str; 5] = ["0", "1.5", "Sun, 06 Nov 1994 08:49:37 GMT", "soon", "-3"];

fn input<'a>(u: &mut Unstructured<'_>, text: &'a str) -> Result<ErrorInput<'a>> {
    Ok(ErrorInput {
        status: if u.arbitrary()? {
            Some(if u.arbitrary()? {
                *u.choose(&STATUSES)?
            } else {
                u.arbitrary()?
            })
        } else {
            None
        },
        text,
        retry_after: if u.arbitrary()? {
            Some(*u.choose(&RETRY)?)
        } else {
            None
        },
        now: u.arbitrary()?,
        stop_reason: match u.int_in_range(0..=5u8)? {
            0 => None,
            1 => Some(StopReason::Error),
            2 => Some(StopReason::Stop),
            3 => Some(StopReason::Length),
            4 => Some(StopReason::Aborted),
            _ => Some(StopReason::ToolUse),
        },
        prompt_tokens: if u.arbitrary()? {
            Some(u.arbitrary::<u32>()? as f64)
        } else {
            None
        },
        delivered: u.arbitrary()?,
        window: u.arbitrary::<u32>()? as u64,
    })
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (head, text) = (&data[..split], data.get(split + 1..).unwrap_or(&[]));
    let text = String::from_utf8_lossy(text);
    let mut u = Unstructured::new(head);
    let Ok(i) = input(&mut u, &text) else {
        return;
    };
    let class = classify_error(&i);
    let json = class.to_json();
    assert_eq!(json["class"], class.name());
    if matches!(i.stop_reason, None | Some(StopReason::Error)) {
        if i.status.is_none() && matches!(class, ErrorClass::ContextOverflow { .. }) {
            assert!(is_overflow_error_text(&text), "{text:?}");
        }
        let upper = text.to_uppercase();
        if upper.to_ascii_lowercase() == text.to_ascii_lowercase() {
            let again = classify_error(&ErrorInput {
                text: &upper,
                ..i.clone()
            });
            assert_eq!(again, class, "case changed the class of {text:?}");
        }
    }
});
