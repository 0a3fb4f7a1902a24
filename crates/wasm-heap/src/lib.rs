//! The module's global allocator: the `dlmalloc` crate (the allocator Rust's standard library
//! uses on wasm32) over linear memory that grows in large steps.
//!
//! The standard library's allocator asks the engine for memory 64 KiB at a time: every time its
//! top chunk runs out, one `memory.grow` of a page or two. Each `memory.grow` tells V8 that
//! external memory grew, and past a few hundred megabytes V8 answers that with a full
//! mark-compact collection of the JavaScript heap — about 1.5 ms each on this machine with a
//! nearly empty heap, and more the more the host keeps. An operation that builds many small
//! values (the Anthropic lane's messages of a 60,000-result session: thousands of grows) spent
//! most of its time in those collections, growing worse than linearly with the session.
//!
//! So the system allocator below grows by what dlmalloc asks plus an eighth of the memory
//! already there (at least 1 MiB, at most 64 MiB): reaching a gigabyte takes about sixty grows
//! instead of sixteen thousand, and the memory held beyond what is used stays within an eighth
//! (or 64 MiB). Pages grown and never touched cost the process no resident memory. When the
//! larger step cannot be had (the 4 GiB limit), it grows by exactly what was asked.
//!
//! On other targets the crate has only [`step`] (tested natively); ctxfold links it on wasm32.
#![cfg_attr(not(test), no_std)]

#[cfg(target_arch = "wasm32")]
mod heap;

const MIN_EXTRA: usize = 1024 * 1024;
const MAX_EXTRA: usize = 64 * 1024 * 1024;

/// Bytes to grow by for a request of `size` bytes when the memory holds `current` bytes.
pub fn step(size: usize, current: usize) -> usize {
    let extra = (current / 8).clamp(MIN_EXTRA, MAX_EXTRA);
    size.saturating_add(extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_grow_by_an_eighth_within_bounds() {
        assert_eq!(step(100, 0), 100 + MIN_EXTRA);
        assert_eq!(step(100, 80 << 20), 100 + (10 << 20));
        assert_eq!(step(100, 4 << 30), 100 + MAX_EXTRA);
        assert_eq!(step(usize::MAX, 1 << 20), usize::MAX);
    }
}
