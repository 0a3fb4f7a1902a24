//! Conformance against the reference's recorded outputs in `../shared/conformance`
//! ([`crate::common::conformance_dir`]): the large session, the summary inputs, and the
//! snapcompact frames.

mod rules;
mod session;
mod shake;
mod snapcompact;
mod summary_input;
