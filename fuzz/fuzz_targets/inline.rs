//! Inline imaging's plan on arbitrary input, as the JS shell hands it over: candidates as
//! `[tokens, frames, flags]` numbers (any f64: NaN, negative, huge, fractional), any budget,
//! a reader model id and API of arbitrary text, any frame size. No panic, and the plan keeps
//! its rules (`ctxfold_testkit::invariants::inline_plan`).
#![no_main]
use arbitrary::{Result, Unstructured};
use ctxfold::context::inline::{reader_frame_tokens, Candidate, InlineInput};
use ctxfold_fuzz::invariants;
use libfuzzer_sys::fuzz_target;

/// A number as JavaScript might pass it: small counts mostly, sometimes anything.
fn number(u: &mut Unstructured<'_>, typical: u32) -> Result<f64> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => u.arbitrary::<f64>()?,
        _ => u.int_in_range(0..=typical)? as f64,
    })
}

fn candidate(u: &mut Unstructured<'_>) -> Result<Candidate> {
    let tokens = number(u, 60_000)?;
    let frames = number(u, 12)?;
    let flags = number(u, 15)?;
    Ok(Candidate::from_flat(tokens, frames, flags))
}

fn input(u: &mut Unstructured<'_>) -> Result<InlineInput> {
    let mut tool_results = Vec::new();
    for _ in 0..u.int_in_range(0..=16u8)? {
        tool_results.push(candidate(u)?);
    }
    let system_prompt = if u.arbitrary()? {
        Some(candidate(u)?)
    } else {
        None
    };
    let id: Option<String> = u.arbitrary()?;
    let api: Option<String> = u.arbitrary()?;
    let frame_size = u.int_in_range(0..=4096u32)?;
    Ok(InlineInput {
        tool_results,
        system_prompt,
        budget: u.int_in_range(0..=210u32)?,
        frame_tokens: reader_frame_tokens(id.as_deref(), api.as_deref(), frame_size),
        has_user_message: u.arbitrary()?,
        warm: u.arbitrary()?,
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = input(&mut Unstructured::new(data)) else {
        return;
    };
    if let Err(e) = invariants::inline_plan(&input) {
        panic!("{e}");
    }
});
