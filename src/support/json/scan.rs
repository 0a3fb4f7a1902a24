//! A strict, allocation-free JSON scanner over raw bytes.
//!
//! It validates the JSON grammar the way `JSON.parse` does (no trailing commas, no raw control
//! characters in strings, valid escapes and numbers) while only *locating* values: loading a
//! session needs the `type`, `id` and `parentId` of every line, not its body. Strings — where
//! nearly all bytes of a session live — are crossed a word at a time, checking UTF-8 on the
//! way, so one pass over a line both validates it and finds what the index needs. Nesting is
//! tracked on an explicit stack, so deep input cannot overflow the call stack. The per-byte
//! helpers are `#[inline(always)]`: optimizing for size (the package's `.wasm` was built with
//! `opt-level = "z"` until 2026-12-01), LLVM ignores `#[inline]`.

use std::borrow::Cow;
use std::ops::Range;

/// Where and why a line is not valid JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset within the scanned slice.
    pub offset: usize,
    /// What was expected or found.
    pub reason: &'static str,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

fn err<T>(offset: usize, reason: &'static str) -> Result<T, SyntaxError> {
    Err(SyntaxError { offset, reason })
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
const LO: u64 = 0x0101_0101_0101_0101;
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
const HI: u64 = 0x8080_8080_8080_8080;

/// Flags (high bit per byte) the bytes of a little-endian word that need a closer look inside
/// a string: `"`, `\\`, control characters and, if `NON_ASCII`, non-ASCII bytes. No false
/// negatives; a false positive can only follow a true one, so the lowest flag is exact.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline(always)]
fn special_bytes<const NON_ASCII: bool>(x: u64) -> u64 {
    let quote = x ^ (LO * u64::from(b'"'));
    let backslash = x ^ (LO * u64::from(b'\\'));
    let special = quote.wrapping_sub(LO) & !quote
        | backslash.wrapping_sub(LO) & !backslash
        | x.wrapping_sub(LO * 0x20) & !x;
    (if NON_ASCII { special | x } else { special }) & HI
}

/// Index of the first byte at or after `i` that is not plain printable ASCII (a `"`, `\\`,
/// control character or non-ASCII byte), or `b.len()`. Crosses plain bytes a word at a time.
#[inline(always)]
pub(crate) fn skip_plain(b: &[u8], i: usize) -> usize {
    skip_run::<true>(b, i)
}

/// [`skip_plain`] that crosses non-ASCII bytes too: for text already known to be UTF-8.
#[inline(always)]
pub(crate) fn skip_str_run(b: &[u8], i: usize) -> usize {
    skip_run::<false>(b, i)
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline(always)]
fn skip_run<const NON_ASCII: bool>(b: &[u8], mut i: usize) -> usize {
    while let Some(word) = b.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let special = special_bytes::<NON_ASCII>(u64::from_le_bytes(*word));
        if special != 0 {
            return i + (special.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b
        .get(i)
        .is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20 && (c < 0x80 || !NON_ASCII))
    {
        i += 1;
    }
    i
}

/// [`skip_run`] with wasm SIMD: sixteen bytes per step. The vector is built from two
/// 64-bit reads, which keeps the code free of `unsafe` pointer loads (measured: the load path
/// of a 145 MB session spends most of its time here).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn skip_run<const NON_ASCII: bool>(b: &[u8], mut i: usize) -> usize {
    use core::arch::wasm32::*;
    let quote = u8x16_splat(b'"');
    let backslash = u8x16_splat(b'\\');
    let space = u8x16_splat(0x20);
    while let Some(chunk) = b.get(i..).and_then(<[u8]>::first_chunk::<16>) {
        let (lo, hi) = chunk.split_at(8);
        let lo = u64::from_le_bytes(lo.try_into().unwrap_or_default());
        let hi = u64::from_le_bytes(hi.try_into().unwrap_or_default());
        let v = u64x2(lo, hi);
        // Unsigned `< 0x20` catches control characters; signed `< 0` catches non-ASCII.
        let quoted = v128_or(u8x16_eq(v, quote), u8x16_eq(v, backslash));
        let special = if NON_ASCII {
            v128_or(
                quoted,
                v128_or(u8x16_lt(v, space), i8x16_lt(v, i8x16_splat(0))),
            )
        } else {
            v128_or(quoted, u8x16_lt(v, space))
        };
        let mask = u8x16_bitmask(special);
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    while b
        .get(i)
        .is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20 && (c < 0x80 || !NON_ASCII))
    {
        i += 1;
    }
    i
}

/// The bytes [`Scanner::skip_string_body`] tests at once: two vectors.
const BLOCK: usize = 32;

/// The mask of the bytes of `block` that need a look inside a string (bit `k` for
/// `block[k]`): `"`, `\\`, control characters and non-ASCII bytes. Exact: every bit set is
/// such a byte.
#[inline(always)]
fn special_mask(block: &[u8; BLOCK]) -> u32 {
    let (lo, hi) = block.split_at(16);
    let half = |h: &[u8]| mask16(<&[u8; 16]>::try_from(h).unwrap_or(&[0; 16]));
    half(lo) | half(hi) << 16
}

/// [`special_mask`] of sixteen bytes, with SIMD.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn mask16(block: &[u8; 16]) -> u32 {
    use core::arch::wasm32::*;
    let (lo, hi) = block.split_at(8);
    let lo = u64::from_le_bytes(lo.try_into().unwrap_or_default());
    let hi = u64::from_le_bytes(hi.try_into().unwrap_or_default());
    let v = u64x2(lo, hi);
    // Unsigned `< 0x20` catches control characters; signed `< 0` catches non-ASCII.
    let special = v128_or(
        v128_or(
            u8x16_eq(v, u8x16_splat(b'"')),
            u8x16_eq(v, u8x16_splat(b'\\')),
        ),
        v128_or(u8x16_lt(v, u8x16_splat(0x20)), i8x16_lt(v, i8x16_splat(0))),
    );
    u32::from(u8x16_bitmask(special))
}

/// [`special_mask`] of sixteen bytes without SIMD: the exact per-byte test of eight bytes at a
/// time (no borrow crosses bytes, unlike [`special_bytes`]), then the high bits gathered.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline(always)]
fn mask16(block: &[u8; 16]) -> u32 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    // The high bit of each byte of `y` that is not zero.
    let nonzero = |y: u64| ((y & LOW7).wrapping_add(LOW7) | y) & HI;
    let half = |x: u64| {
        let quote = !nonzero(x ^ (LO * u64::from(b'"')));
        let backslash = !nonzero(x ^ (LO * u64::from(b'\\')));
        let control = !nonzero(x & (LO * 0xE0));
        let flags = (quote | backslash | control) & HI | x & HI;
        // Bit 7 of byte j to bit j.
        ((flags >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
    };
    let (lo, hi) = block.split_at(8);
    let lo = u64::from_le_bytes(lo.try_into().unwrap_or_default());
    let hi = u64::from_le_bytes(hi.try_into().unwrap_or_default());
    half(lo) | half(hi) << 8
}

/// What the escapes of a string counted so far change in its measures
/// ([`Scanner::skip_string_counting`]).
#[derive(Debug, Clone, Copy)]
struct Counting {
    /// Bytes the escapes remove (decoded).
    decoded_less: usize,
    /// The difference the escapes make to the stringified form.
    stringified_more: isize,
    decodes: bool,
}

impl Default for Counting {
    fn default() -> Self {
        Counting {
            decoded_less: 0,
            stringified_more: 0,
            decodes: true,
        }
    }
}

impl Counting {
    /// The measures of a string of `raw` bytes between its quotes.
    #[inline(always)]
    fn finish(self, raw: usize) -> StrCount {
        let decoded = raw - self.decoded_less;
        StrCount {
            decoded,
            stringified: (decoded as isize + self.stringified_more) as usize + 2,
            decodes: self.decodes,
        }
    }
}

/// The escape whose backslash is at `b[i]`: the index after it, the bytes it removes from
/// the decoded text and what it adds to the stringified text.
fn escape_counts(b: &[u8], i: usize) -> Result<(usize, usize, isize), SyntaxError> {
    match b.get(i + 1) {
        // Two bytes that decode to one and are written back as two.
        Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => Ok((i + 2, 1, 1)),
        Some(b'/') => Ok((i + 2, 1, 0)),
        Some(b'u') => match decode_escape(b, i + 1) {
            // A surrogate pair: 12 bytes, 4 decoded and written as they are.
            Some((_, next)) if next == i + 12 => Ok((next, 8, 0)),
            // One unit; a lone surrogate is U+FFFD (3 bytes, written as is).
            Some((ch, next)) => {
                let more = match ch as u32 {
                    0x22 | 0x5c | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 1,
                    0..=0x1f => 5,
                    _ => 0,
                };
                Ok((next, 6 - ch.len_utf8(), more))
            }
            // Fewer than four hex digits.
            None => err(i, "invalid \\u escape"),
        },
        _ => err(i, "invalid escape"),
    }
}

/// Length of the valid UTF-8 sequence starting at `b[i]` (a byte ≥ 0x80), or `None`.
#[inline]
fn utf8_sequence(b: &[u8], i: usize) -> Option<usize> {
    let cont = |k: usize, lo: u8, hi: u8| b.get(i + k).is_some_and(|&c| (lo..=hi).contains(&c));
    let tail = |from: usize, to: usize| (from..to).all(|k| cont(k, 0x80, 0xBF));
    let len = match b[i] {
        0xC2..=0xDF => 2,
        0xE0 if cont(1, 0xA0, 0xBF) => 3,
        0xE1..=0xEC | 0xEE..=0xEF => 3,
        0xED if cont(1, 0x80, 0x9F) => 3,
        0xF0 if cont(1, 0x90, 0xBF) => 4,
        0xF1..=0xF3 => 4,
        0xF4 if cont(1, 0x80, 0x8F) => 4,
        _ => return None,
    };
    let first_checked = if matches!(b[i], 0xE0 | 0xED | 0xF0 | 0xF4) {
        2
    } else {
        1
    };
    tail(first_checked, len).then_some(len)
}

/// The scanner. It remembers, across the values it crosses, whether any string held bytes
/// that are not UTF-8 and whether a newline appeared between tokens (which a JSONL line must
/// not contain).
#[derive(Debug, Default)]
pub struct Scanner {
    /// A string held bytes that are not valid UTF-8 (the JSON itself may still be valid).
    pub bad_utf8: bool,
    /// A `\n` appeared as whitespace between tokens.
    pub newline: bool,
    /// A value crossed by [`Scanner::skip_value`] nested [`DEEP_HINT`] containers or more: the
    /// text may be too deep for the value parser (which its reader then checks).
    pub deep: bool,
    stack: Vec<bool>,
}

/// The nesting inside one skipped value from which [`Scanner::deep`] is set: below the value
/// parser's limit (128 levels from the line's root), with room for the levels above the value.
pub const DEEP_HINT: usize = 96;

impl Scanner {
    /// A fresh scanner.
    pub fn new() -> Self {
        Scanner::default()
    }

    /// Index of the first non-whitespace byte at or after `i` (JSON whitespace).
    #[inline(always)]
    pub fn skip_ws(&mut self, b: &[u8], mut i: usize) -> usize {
        while let Some(&c) = b.get(i) {
            match c {
                b' ' | b'\r' | b'\t' => i += 1,
                b'\n' => {
                    self.newline = true;
                    i += 1;
                }
                _ => break,
            }
        }
        i
    }

    /// Skips a string whose opening quote is at `i - 1`; returns the index after the closing
    /// quote. The string is crossed 32 bytes (two vectors) at a time: one test per block gives the
    /// mask of its bytes that need a look (`"`, `\\`, control characters, non-ASCII), and the
    /// events of a block are taken from that mask without reading the block again (sessions
    /// hold long strings with an escape or a non-ASCII character every dozen bytes or so,
    /// where stopping the block scan at each of them cost most of the load; issue 42). The
    /// last bytes of the input, fewer than a block, go byte by byte
    /// ([`Scanner::skip_string_body_bytes`], which also gives the same answers on any input:
    /// the property test of this module compares the two).
    pub fn skip_string_body(&mut self, b: &[u8], mut i: usize) -> Result<usize, SyntaxError> {
        while let Some(block) = b.get(i..).and_then(<[u8]>::first_chunk::<BLOCK>) {
            let base = i;
            i += BLOCK;
            let mut mask = special_mask(block);
            while mask != 0 {
                let k = mask.trailing_zeros() as usize;
                let p = base + k;
                let next = match block[k] {
                    b'"' => return Ok(p + 1),
                    b'\\' => match b.get(p + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => p + 2,
                        Some(b'u') => match b.get(p + 2..p + 6) {
                            Some(h) if h.iter().all(u8::is_ascii_hexdigit) => p + 6,
                            _ => return err(p, "invalid \\u escape"),
                        },
                        _ => return err(p, "invalid escape"),
                    },
                    c if c < 0x20 => return err(p, "control character in string"),
                    _ => self.utf8_step(b, p),
                };
                if next >= base + BLOCK {
                    i = next;
                    break;
                }
                mask &= u32::MAX << (next - base);
            }
        }
        self.skip_string_body_bytes(b, i)
    }

    /// The length of the character at `b[p]` (a byte ≥ 0x80) when it is valid UTF-8, else
    /// 1 with the bad bytes noted: the index after it.
    #[inline(always)]
    fn utf8_step(&mut self, b: &[u8], p: usize) -> usize {
        match utf8_sequence(b, p) {
            Some(n) => p + n,
            None => {
                self.bad_utf8 = true;
                p + 1
            }
        }
    }

    /// [`Scanner::skip_string_body`] a byte (or a plain run) at a time: the end of the input,
    /// and the simple path the block scan must agree with.
    fn skip_string_body_bytes(&mut self, b: &[u8], mut i: usize) -> Result<usize, SyntaxError> {
        loop {
            i = skip_plain(b, i);
            match b.get(i) {
                None => return err(b.len(), "unterminated string"),
                Some(b'"') => return Ok(i + 1),
                Some(b'\\') => match b.get(i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                    Some(b'u') => match b.get(i + 2..i + 6) {
                        Some(h) if h.iter().all(u8::is_ascii_hexdigit) => i += 6,
                        _ => return err(i, "invalid \\u escape"),
                    },
                    _ => return err(i, "invalid escape"),
                },
                Some(&c) if c < 0x20 => return err(i, "control character in string"),
                Some(&c) if c >= 0x80 => i = self.utf8_step(b, i),
                Some(_) => i += 1,
            }
        }
    }

    /// [`Scanner::skip_string_body`] that also measures the string: the UTF-8 length of its
    /// decoded text and the length of `JSON.stringify` of that text (quotes included), so a
    /// token estimate needs no decoded copy (spec: compaction §3.1 counts UTF-8 bytes of
    /// text fragments and of `JSON.stringify(arguments)`). Validation is exactly
    /// `skip_string_body`'s, by blocks the same way; only `\u` escapes take a slower path.
    pub fn skip_string_counting(
        &mut self,
        b: &[u8],
        start: usize,
    ) -> Result<(usize, StrCount), SyntaxError> {
        let mut i = start;
        // Kept in locals (not a struct the escapes update through a reference), so that they
        // stay in registers in the loop.
        let mut decoded_less = 0usize;
        let mut stringified_more = 0isize;
        let mut decodes = true;
        while let Some(block) = b.get(i..).and_then(<[u8]>::first_chunk::<BLOCK>) {
            let base = i;
            i += BLOCK;
            let mut mask = special_mask(block);
            while mask != 0 {
                let k = mask.trailing_zeros() as usize;
                let p = base + k;
                let next = match block[k] {
                    b'"' => {
                        let count = Counting {
                            decoded_less,
                            stringified_more,
                            decodes,
                        };
                        return Ok((p + 1, count.finish(p - start)));
                    }
                    b'\\' => match b.get(p + 1) {
                        Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            decoded_less += 1;
                            stringified_more += 1;
                            p + 2
                        }
                        _ => {
                            let (next, less, more) = escape_counts(b, p)?;
                            decoded_less += less;
                            stringified_more += more;
                            next
                        }
                    },
                    c if c < 0x20 => return err(p, "control character in string"),
                    _ => {
                        let next = self.utf8_step(b, p);
                        decodes &= next != p + 1;
                        next
                    }
                };
                if next >= base + BLOCK {
                    i = next;
                    break;
                }
                mask &= u32::MAX << (next - base);
            }
        }
        let count = Counting {
            decoded_less,
            stringified_more,
            decodes,
        };
        self.skip_string_counting_bytes(b, start, i, count)
    }

    /// [`Scanner::skip_string_counting`] a byte (or a plain run) at a time, from `i` with what
    /// was counted from `start` so far: the end of the input, and the simple path.
    fn skip_string_counting_bytes(
        &mut self,
        b: &[u8],
        start: usize,
        mut i: usize,
        mut count: Counting,
    ) -> Result<(usize, StrCount), SyntaxError> {
        loop {
            i = skip_plain(b, i);
            match b.get(i) {
                None => return err(b.len(), "unterminated string"),
                Some(b'"') => return Ok((i + 1, count.finish(i - start))),
                Some(b'\\') => {
                    let (next, less, more) = escape_counts(b, i)?;
                    count.decoded_less += less;
                    count.stringified_more += more;
                    i = next;
                }
                Some(&c) if c < 0x20 => return err(i, "control character in string"),
                Some(&c) if c >= 0x80 => {
                    let next = self.utf8_step(b, i);
                    count.decodes &= next != i + 1;
                    i = next;
                }
                Some(_) => i += 1,
            }
        }
    }

    /// Walks the members of the object at `start` (which must be `{`) like
    /// [`Scanner::members`], but `f` crosses each value itself: it gets the key's span (between
    /// the quotes) and the value's start, and returns the index after the value. A caller can
    /// so measure the values it cares about while validating them, in the same pass.
    pub fn members_custom(
        &mut self,
        b: &[u8],
        start: usize,
        f: &mut MemberCrossing<'_>,
    ) -> Result<usize, SyntaxError> {
        if !matches!(b.get(start), Some(b'{')) {
            return err(start, "expected an object");
        }
        let mut i = self.skip_ws(b, start + 1);
        if matches!(b.get(i), Some(b'}')) {
            return Ok(i + 1);
        }
        loop {
            if !matches!(b.get(i), Some(b'"')) {
                return err(i, "expected object key");
            }
            let key_start = i + 1;
            let key_end = self.skip_string_body(b, key_start)?;
            let mut j = self.skip_ws(b, key_end);
            if !matches!(b.get(j), Some(b':')) {
                return err(j, "expected ':'");
            }
            j = self.skip_ws(b, j + 1);
            let value_end = f(self, b, key_start..key_end - 1, j)?;
            i = self.skip_ws(b, value_end);
            match b.get(i) {
                Some(b',') => i = self.skip_ws(b, i + 1),
                Some(b'}') => return Ok(i + 1),
                Some(_) => return err(i, "expected ',' or '}'"),
                None => return err(i, "unexpected end of input"),
            }
        }
    }

    /// Walks the elements of the array at `start` (which must be `[`); `f` crosses each
    /// element itself (see [`Scanner::members_custom`]). Returns the index after the `]`.
    pub fn elements_custom(
        &mut self,
        b: &[u8],
        start: usize,
        f: &mut ElementCrossing<'_>,
    ) -> Result<usize, SyntaxError> {
        if !matches!(b.get(start), Some(b'[')) {
            return err(start, "expected an array");
        }
        let mut i = self.skip_ws(b, start + 1);
        if matches!(b.get(i), Some(b']')) {
            return Ok(i + 1);
        }
        loop {
            let end = f(self, b, i)?;
            i = self.skip_ws(b, end);
            match b.get(i) {
                Some(b',') => i = self.skip_ws(b, i + 1),
                Some(b']') => return Ok(i + 1),
                Some(_) => return err(i, "expected ',' or ']'"),
                None => return err(i, "unexpected end of input"),
            }
        }
    }

    /// Expects `"key" :` at `i`; returns the index of the value (after whitespace).
    fn skip_key_colon(&mut self, b: &[u8], i: usize) -> Result<usize, SyntaxError> {
        if !matches!(b.get(i), Some(b'"')) {
            return err(i, "expected object key");
        }
        let end = self.skip_string_body(b, i + 1)?;
        let i = self.skip_ws(b, end);
        if !matches!(b.get(i), Some(b':')) {
            return err(i, "expected ':'");
        }
        Ok(self.skip_ws(b, i + 1))
    }

    /// Skips one JSON value starting exactly at `start`; returns the index just after it.
    pub fn skip_value(&mut self, b: &[u8], start: usize) -> Result<usize, SyntaxError> {
        // true = object, false = array.
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        let result = self.skip_value_with(b, start, &mut stack);
        self.stack = stack;
        result
    }

    fn skip_value_with(
        &mut self,
        b: &[u8],
        start: usize,
        stack: &mut Vec<bool>,
    ) -> Result<usize, SyntaxError> {
        let mut i = start;
        loop {
            // A value starts at `i`.
            match b.get(i) {
                Some(b'{') => {
                    i = self.skip_ws(b, i + 1);
                    if matches!(b.get(i), Some(b'}')) {
                        i += 1;
                    } else {
                        stack.push(true);
                        self.deep |= stack.len() >= DEEP_HINT;
                        i = self.skip_key_colon(b, i)?;
                        continue;
                    }
                }
                Some(b'[') => {
                    i = self.skip_ws(b, i + 1);
                    if matches!(b.get(i), Some(b']')) {
                        i += 1;
                    } else {
                        stack.push(false);
                        self.deep |= stack.len() >= DEEP_HINT;
                        continue;
                    }
                }
                Some(b'"') => i = self.skip_string_body(b, i + 1)?,
                Some(b't') => i = skip_literal(b, i, b"true")?,
                Some(b'f') => i = skip_literal(b, i, b"false")?,
                Some(b'n') => i = skip_literal(b, i, b"null")?,
                Some(b'-' | b'0'..=b'9') => i = skip_number(b, i)?,
                Some(_) => return err(i, "expected a value"),
                None => return err(i, "unexpected end of input"),
            }
            // After a value: close containers or move to the next element.
            loop {
                let Some(&is_object) = stack.last() else {
                    return Ok(i);
                };
                i = self.skip_ws(b, i);
                match b.get(i) {
                    Some(b',') => {
                        i = self.skip_ws(b, i + 1);
                        if is_object {
                            i = self.skip_key_colon(b, i)?;
                        }
                        break;
                    }
                    Some(b'}') if is_object => {
                        stack.pop();
                        i += 1;
                    }
                    Some(b']') if !is_object => {
                        stack.pop();
                        i += 1;
                    }
                    Some(_) => return err(i, "expected ',' or a closing bracket"),
                    None => return err(i, "unexpected end of input"),
                }
            }
        }
    }

    /// Walks the members of the object at `start` (which must be `{`), calling `f` for each;
    /// `f` returns `false` to stop early. Returns the index after the closing brace, or after
    /// the last member visited when stopped.
    pub fn members(
        &mut self,
        b: &[u8],
        start: usize,
        mut f: impl FnMut(&mut Self, &[u8], &Member) -> bool,
    ) -> Result<usize, SyntaxError> {
        self.members_dyn(b, start, &mut f)
    }

    /// [`Scanner::members`] without the type parameter: one copy of the walk in the `.wasm`
    /// instead of one per caller (an object has a handful of members, so the indirect call
    /// costs nothing measurable next to scanning their values).
    fn members_dyn(
        &mut self,
        b: &[u8],
        start: usize,
        f: &mut dyn FnMut(&mut Self, &[u8], &Member) -> bool,
    ) -> Result<usize, SyntaxError> {
        if !matches!(b.get(start), Some(b'{')) {
            return err(start, "expected an object");
        }
        let mut i = self.skip_ws(b, start + 1);
        if matches!(b.get(i), Some(b'}')) {
            return Ok(i + 1);
        }
        loop {
            if !matches!(b.get(i), Some(b'"')) {
                return err(i, "expected object key");
            }
            let key_start = i + 1;
            let key_end = self.skip_string_body(b, key_start)?;
            let mut j = self.skip_ws(b, key_end);
            if !matches!(b.get(j), Some(b':')) {
                return err(j, "expected ':'");
            }
            j = self.skip_ws(b, j + 1);
            let value_end = self.skip_value(b, j)?;
            let member = Member {
                key: key_start..key_end - 1,
                span: i..value_end,
                value: j..value_end,
            };
            if !f(self, b, &member) {
                return Ok(value_end);
            }
            i = self.skip_ws(b, value_end);
            match b.get(i) {
                Some(b',') => i = self.skip_ws(b, i + 1),
                Some(b'}') => return Ok(i + 1),
                Some(_) => return err(i, "expected ',' or '}'"),
                None => return err(i, "unexpected end of input"),
            }
        }
    }
}

/// The callback of [`Scanner::members_custom`]: crosses the value of the member whose key
/// span is given, starting at the index given; returns the index after it.
pub type MemberCrossing<'f> =
    dyn FnMut(&mut Scanner, &[u8], Range<usize>, usize) -> Result<usize, SyntaxError> + 'f;

/// The callback of [`Scanner::elements_custom`]: crosses the element at the index given.
pub type ElementCrossing<'f> =
    dyn FnMut(&mut Scanner, &[u8], usize) -> Result<usize, SyntaxError> + 'f;

/// What [`Scanner::skip_string_counting`] measured of a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrCount {
    /// UTF-8 bytes of the decoded text (meaningful when `decodes`).
    pub decoded: usize,
    /// Bytes of `JSON.stringify` of the decoded text, quotes included.
    pub stringified: usize,
    /// False for bytes that are not UTF-8: decoding the string fails (our reader then sees
    /// no string at all). A lone surrogate escape decodes, as U+FFFD (see [`decode_escape`]).
    pub decodes: bool,
}

/// Index of the first non-whitespace byte at or after `i` (JSON whitespace only).
#[inline]
pub fn skip_ws(b: &[u8], i: usize) -> usize {
    Scanner::new().skip_ws(b, i)
}

/// Skips a string whose opening quote is at `i - 1` (see [`Scanner::skip_string_body`]).
pub fn skip_string_body(b: &[u8], i: usize) -> Result<usize, SyntaxError> {
    Scanner::new().skip_string_body(b, i)
}

pub(crate) fn skip_number(b: &[u8], start: usize) -> Result<usize, SyntaxError> {
    let mut i = start;
    if matches!(b.get(i), Some(b'-')) {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        _ => return err(i, "invalid number"),
    }
    if matches!(b.get(i), Some(b'.')) {
        i += 1;
        if !matches!(b.get(i), Some(b'0'..=b'9')) {
            return err(i, "invalid number fraction");
        }
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !matches!(b.get(i), Some(b'0'..=b'9')) {
            return err(i, "invalid number exponent");
        }
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    Ok(i)
}

pub(crate) fn skip_literal(b: &[u8], i: usize, lit: &'static [u8]) -> Result<usize, SyntaxError> {
    if b.get(i..i + lit.len()) == Some(lit) {
        Ok(i + lit.len())
    } else {
        err(i, "invalid literal")
    }
}

/// Skips one JSON value starting exactly at `start`; returns the index just after it.
pub fn skip_value(b: &[u8], start: usize) -> Result<usize, SyntaxError> {
    Scanner::new().skip_value(b, start)
}

/// One member of a JSON object: the key's raw bytes (between the quotes, still escaped) and
/// the value's span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Span of the key text between its quotes.
    pub key: Range<usize>,
    /// Span of the whole member (`"key":value`), for edits that remove it.
    pub span: Range<usize>,
    /// Span of the value.
    pub value: Range<usize>,
}

/// Walks the members of the object that starts at `start` (which must be `{`), calling `f`
/// for each. Returns the index just after the closing brace.
pub fn for_each_member(
    b: &[u8],
    start: usize,
    mut f: impl FnMut(&[u8], &Member),
) -> Result<usize, SyntaxError> {
    Scanner::new().members(b, start, |_, b, m| {
        f(b, m);
        true
    })
}

/// The first member named `name` of the object at `start`, walking only as far as needed.
/// Meant for keys that writers put first (a message's `role`): it stops at the match, so the
/// rest of the object is not scanned (and not validated) by this call.
pub fn find_first_member(
    b: &[u8],
    start: usize,
    name: &str,
) -> Result<Option<Member>, SyntaxError> {
    let mut found = None;
    Scanner::new().members(b, start, |_, b, m| {
        if key_is(&b[m.key.clone()], name) {
            found = Some(m.clone());
            return false;
        }
        true
    })?;
    Ok(found)
}

/// Collects the members of the object at `start` (see [`for_each_member`]).
pub fn members(b: &[u8], start: usize) -> Result<(Vec<Member>, usize), SyntaxError> {
    let mut out = Vec::new();
    let end = for_each_member(b, start, |_, m| out.push(m.clone()))?;
    Ok((out, end))
}

/// Whether `raw` holds a backslash (an escape). Keys, type names and roles are short: a loop
/// over them costs less than the `memchr` call that `contains` makes (which was a few
/// percent of a load, called for every key compared).
#[inline(always)]
#[allow(clippy::manual_contains)] // `contains` is the out-of-line call this avoids.
pub(crate) fn has_backslash(raw: &[u8]) -> bool {
    if raw.len() < 32 {
        raw.iter().any(|&c| c == b'\\')
    } else {
        memchr::memchr(b'\\', raw).is_some()
    }
}

/// True if the raw (still escaped) key bytes equal `name`. Keys with escapes are decoded.
#[inline]
pub fn key_is(raw: &[u8], name: &str) -> bool {
    if raw == name.as_bytes() {
        return true;
    }
    // An escape is longer than what it stands for, so only a longer key can decode to `name`.
    raw.len() > name.len() && has_backslash(raw) && decode_str_body(raw).is_some_and(|k| k == name)
}

/// Decodes the body of a string (between the quotes). `None` if it is not valid JSON string
/// content or not valid UTF-8; a lone surrogate escape reads as U+FFFD.
pub fn decode_str_body(raw: &[u8]) -> Option<Cow<'_, str>> {
    if !has_backslash(raw) {
        return std::str::from_utf8(raw).ok().map(Cow::Borrowed);
    }
    unescape(raw).map(Cow::Owned)
}

/// Decodes string content with escapes by the rules `serde_json` applies to a `String`: the
/// JSON escapes, `\u` pairs for characters above U+FFFF, no raw control characters or quotes,
/// valid UTF-8. One deliberate difference: a lone surrogate escape, which serde_json refuses,
/// reads as U+FFFD (see [`decode_escape`]). Ours rather than a typed `serde_json` call, whose
/// error path links the float formatting machinery into the `.wasm`.
fn unescape(raw: &[u8]) -> Option<String> {
    // Every escape is longer than what it writes, so the output fits in `raw.len()` bytes.
    // Plain stretches are found by `skip_plain` (SIMD on wasm) and copied as one slice: a
    // tool output holds kilobytes between escapes, and a store per byte stays a loop of
    // bounds-checked calls when built for size. UTF-8 is checked once at the end.
    let mut out = vec![0u8; raw.len()];
    let buf = out.as_mut_slice();
    let (mut i, mut n) = (0, 0);
    loop {
        let plain = skip_plain(raw, i);
        buf.get_mut(n..n + plain - i)?
            .copy_from_slice(raw.get(i..plain)?);
        n += plain - i;
        i = plain;
        let Some(&c) = raw.get(i) else { break };
        match c {
            b'\\' => {
                let (ch, next) = decode_escape(raw, i + 1)?;
                let len = ch.len_utf8();
                ch.encode_utf8(buf.get_mut(n..n + len)?);
                n += len;
                i = next;
            }
            b'"' | 0..=0x1f => return None,
            // Non-ASCII: copied as is (`skip_plain` stops at every such byte).
            _ => {
                *buf.get_mut(n)? = c;
                n += 1;
                i += 1;
            }
        }
    }
    out.truncate(n);
    String::from_utf8(out).ok()
}

/// The character of the escape whose backslash is at `i - 1` (the JSON escapes; a `\u`
/// pair for a character above U+FFFF; a lone surrogate as U+FFFD), and the index after it;
/// `None` for an invalid escape.
///
/// A lone surrogate is a high one (`\ud800`–`\udbff`) not followed by a `\u` escape of a low
/// one, or a low one (`\udc00`–`\udfff`) on its own. `JSON.stringify` writes one for a
/// JavaScript string holding half a pair (a string cut between the two, `'\ud800'`), and
/// `JSON.parse` (the reference's reader) keeps it in the string; JavaScript's UTF-8 encoders
/// (a request body, `TextEncoder`, `Buffer`) then write it as U+FFFD. A Rust string cannot
/// hold it, so it reads as U+FFFD here, where serde_json refuses the whole text: a session
/// line that holds one is read (and written back byte for byte while unchanged) instead of
/// reaching the model without its content, and a message appended from JavaScript is
/// accepted (its new line holds U+FFFD). Only this escape differs from serde_json.
pub(crate) fn decode_escape(raw: &[u8], i: usize) -> Option<(char, usize)> {
    let simple = match *raw.get(i)? {
        e @ (b'"' | b'\\' | b'/') => e as char,
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hi = hex4(raw, i + 1)?;
            let lo = || match raw.get(i + 5..i + 7) {
                Some(b"\\u") => hex4(raw, i + 7).filter(|lo| (0xDC00..0xE000).contains(lo)),
                _ => None,
            };
            let (cp, next) = match hi {
                0xD800..=0xDBFF => match lo() {
                    Some(lo) => (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), i + 11),
                    None => (0xFFFD, i + 5),
                },
                // A low surrogate alone: what a lone high one reads as, too.
                0xDC00..=0xDFFF => (0xFFFD, i + 5),
                _ => (hi, i + 5),
            };
            return Some((char::from_u32(cp)?, next));
        }
        _ => return None,
    };
    Some((simple, i + 1))
}

/// The four hex digits at `at` as a number.
fn hex4(raw: &[u8], at: usize) -> Option<u32> {
    raw.get(at..at + 4)?.iter().try_fold(0u32, |n, &d| {
        let v = (d as char).to_digit(16)?;
        Some(n << 4 | v)
    })
}

/// Decodes a value span that must be a JSON string (with its quotes).
pub fn decode_string_value(raw: &[u8]) -> Option<Cow<'_, str>> {
    if raw.len() >= 2 && raw[0] == b'"' && raw[raw.len() - 1] == b'"' {
        decode_str_body(&raw[1..raw.len() - 1])
    } else {
        None
    }
}

/// Validates that `b` holds exactly one JSON value surrounded by optional whitespace. Syntax
/// only: a lone surrogate escape (`\ud83d` alone) passes, as `JSON.parse` accepts it (decoding
/// it reads U+FFFD, see [`decode_escape`]); serde_json refuses it.
pub fn validate(b: &[u8]) -> Result<(), SyntaxError> {
    let mut sc = Scanner::new();
    let i = sc.skip_ws(b, 0);
    let end = sc.skip_value(b, i)?;
    let end = sc.skip_ws(b, end);
    if end != b.len() {
        return err(end, "trailing characters after the value");
    }
    Ok(())
}

/// `text` with every lone surrogate escape written as `\ufffd`, the escape of what
/// [`decode_escape`] reads it as: serde_json reads the result as this crate reads `text`, so
/// the tests that compare the two give serde_json this. Written apart from `decode_escape`
/// (and on bytes, for texts that are not UTF-8), so it checks rather than repeats it.
#[cfg(test)]
pub(crate) fn lone_surrogates_as_fffd(text: &[u8]) -> Vec<u8> {
    let unit = |at: usize| {
        let h = text.get(at..at + 4)?;
        h.iter().all(u8::is_ascii_hexdigit).then(|| {
            h.iter()
                .fold(0, |n, &d| n << 4 | (d as char).to_digit(16).unwrap_or(0))
        })
    };
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while let Some(&c) = text.get(i) {
        let len = match (c, text.get(i + 1), unit(i + 2)) {
            (b'\\', Some(b'u'), Some(0xD800..=0xDBFF))
                if text.get(i + 6..i + 8) == Some(b"\\u")
                    && unit(i + 8).is_some_and(|lo| (0xDC00..=0xDFFF).contains(&lo)) =>
            {
                12
            }
            (b'\\', Some(b'u'), Some(0xD800..=0xDFFF)) => {
                out.extend_from_slice(br"\ufffd");
                i += 6;
                continue;
            }
            // Any other escape: its backslash and the byte after it, so `\\ud800` stays.
            (b'\\', Some(_), _) => 2,
            _ => 1,
        };
        out.extend_from_slice(&text[i..i + len]);
        i += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) {
        assert_eq!(validate(s.as_bytes()), Ok(()), "{s}");
        assert!(serde_json::from_str::<serde_json::Value>(s).is_ok(), "{s}");
    }
    fn bad(s: &str) {
        assert!(validate(s.as_bytes()).is_err(), "accepted {s:?}");
        assert!(serde_json::from_str::<serde_json::Value>(s).is_err(), "{s}");
    }

    #[test]
    fn accepts_what_json_parse_accepts() {
        for s in [
            "{}",
            "[]",
            " { \"a\" : [1, -2.5e+3, 0, true, false, null, \"x\\u00e9\\n\"] } ",
            "\"str\"",
            "0",
            "-0.0",
            "{\"a\":{\"b\":{\"c\":[[[]]]}}}",
            "{\"k\\\"ey\":1}",
            "\"é→😀\"",
        ] {
            ok(s);
        }
    }

    #[test]
    fn rejects_what_json_parse_rejects() {
        for s in [
            "",
            "{",
            "{\"a\":1,}",
            "[1,]",
            "{\"a\" 1}",
            "{a:1}",
            "01",
            "1.",
            "1e",
            "-",
            "\"tab\there\"",
            "\"bad \\x escape\"",
            "\"\\u12g4\"",
            "tru",
            "nul",
            "{\"a\":1}}",
            "[1 2]",
            "{\"a\":1]",
            "\"unterminated",
        ] {
            bad(s);
        }
    }

    /// The word-at-a-time path agrees with serde_json on every placement of a special byte
    /// around the 8-byte boundaries, and with multi-byte UTF-8 next to it.
    #[test]
    fn word_scan_agrees_with_serde_json() {
        let specials: &[&str] = &[
            "\\\"", "\\\\", "\\n", "\\u00e9", "\u{1}", "\t", "\\x", "\\u12", "é", "😀", "\"",
            "\\ud83d", "\\ude00",
        ];
        for len in 0..24 {
            for pos in 0..=len {
                for sp in specials {
                    let body: String = "a".repeat(pos) + sp + &"b".repeat(len - pos);
                    let doc = format!("[\"{body}\",1]");
                    let ours = validate(doc.as_bytes()).is_ok();
                    let doc = lone_surrogates_as_fffd(doc.as_bytes());
                    let theirs = serde_json::from_slice::<serde_json::Value>(&doc).is_ok();
                    assert_eq!(ours, theirs, "{doc:?}");
                }
            }
        }
    }

    /// The counting crossing agrees with decoding then `JSON.stringify`: on every escape
    /// piece at every position, and with the same validation as the plain crossing.
    #[test]
    fn string_counts_agree_with_decode_and_stringify() {
        let pieces: &[&str] = &[
            "a",
            "\\\"",
            "\\\\",
            "\\/",
            "\\b",
            "\\f",
            "\\n",
            "\\r",
            "\\t",
            "\\u0001",
            "\\u001f",
            "\\u0022",
            "\\u005c",
            "\\u0008",
            "\\u00e9",
            "\\u20ac",
            "\\ud83d\\ude00",
            "\\ud83d",
            "\\ude00",
            "\\ud83d\\u0041",
            "é",
            "😀",
            "\\x",
            "\\u12",
        ];
        let mut x = 7u64;
        for round in 0..4000 {
            let mut body = String::new();
            for _ in 0..(round % 7) + 1 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                body.push_str(pieces[(x >> 40) as usize % pieces.len()]);
                body.push_str(&"z".repeat((x >> 20) as usize % 20));
            }
            let doc = format!("\"{body}\"");
            let b = doc.as_bytes();
            let plain = Scanner::new().skip_string_body(b, 1);
            let counted = Scanner::new().skip_string_counting(b, 1);
            assert_eq!(plain.is_ok(), counted.is_ok(), "{doc}");
            let Ok((end, c)) = counted else { continue };
            assert_eq!(Ok(end), plain, "{doc}");
            match decode_str_body(body.as_bytes()) {
                Some(text) => {
                    assert!(c.decodes, "{doc}");
                    assert_eq!(c.decoded, text.len(), "{doc}");
                    let mut out = String::new();
                    crate::support::json::js::write_string(&mut out, &text);
                    assert_eq!(c.stringified, out.len(), "{doc}");
                }
                None => assert!(!c.decodes, "{doc}"),
            }
        }
    }

    /// The block scan of strings ([`Scanner::skip_string_body`],
    /// [`Scanner::skip_string_counting`]) gives what the byte-at-a-time crossing gives: the
    /// end or the error (its offset and reason), the counts, and the bad-UTF-8 flag, on
    /// strings made of escape pieces, multi-byte and broken UTF-8 and control characters at
    /// every alignment, ending anywhere (inside a block, at its edge, or with the input).
    #[test]
    fn block_scan_equals_the_byte_scan() {
        use proptest::prelude::*;
        let pieces: Vec<&[u8]> = vec![
            b"a",
            b"abcdefghijklmnop",
            b"\\\"",
            b"\\\\",
            b"\\/",
            b"\\n",
            b"\\t",
            b"\\u00e9",
            b"\\u001f",
            b"\\ud83d\\ude00",
            b"\\ud83d",
            b"\\u12",
            b"\\x",
            b"\\",
            b"\\u",
            b"\xc3\xa9",
            b"\xe2\x86\x92",
            b"\xf0\x9f\x98\x80",
            b"\xff",
            b"\xc3",
            b"\xe0\x80",
            b"\x01",
            b"\t",
            b"\"",
            b" ",
        ];
        let n = pieces.len();
        let strat = (
            0usize..20,
            proptest::collection::vec((0..n, 0usize..24), 0..12),
            any::<bool>(),
        );
        proptest!(ProptestConfig::with_cases(4000), |((lead, parts, close) in strat)| {
            let mut b = vec![b'x'; lead];
            b.push(b'"');
            let start = b.len();
            for (piece, run) in parts {
                b.extend_from_slice(pieces[piece]);
                b.extend(std::iter::repeat_n(b'z', run));
            }
            if close {
                b.push(b'"');
                b.extend_from_slice(b",1]");
            }
            let mut fast = Scanner::new();
            let mut slow = Scanner::new();
            prop_assert_eq!(
                fast.skip_string_body(&b, start),
                slow.skip_string_body_bytes(&b, start)
            );
            prop_assert_eq!(fast.bad_utf8, slow.bad_utf8);
            let mut fast = Scanner::new();
            let mut slow = Scanner::new();
            prop_assert_eq!(
                fast.skip_string_counting(&b, start),
                slow.skip_string_counting_bytes(&b, start, start, Counting::default())
            );
            prop_assert_eq!(fast.bad_utf8, slow.bad_utf8);
        });
    }

    /// The portable [`special_mask`] flags exactly the bytes a string scan must look at.
    #[test]
    fn special_mask_is_exact() {
        for c in 0..=255u8 {
            for k in 0..BLOCK {
                let mut block = [b'a'; BLOCK];
                block[k] = c;
                let want = c == b'"' || c == b'\\' || !(0x20..0x80).contains(&c);
                assert_eq!(special_mask(&block), u32::from(want) << k, "{c:#x} at {k}");
            }
        }
    }

    #[test]
    fn reports_invalid_utf8_inside_strings() {
        for (bytes, bad) in [
            (&b"\"caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80\""[..], false),
            (&b"\"\xff\""[..], true),
            (&b"\"\xc3\""[..], true),
            (&b"\"\xe0\x80\x80\""[..], true),
            (&b"\"\xed\xa0\x80\""[..], true),
            (&b"\"\xf4\x90\x80\x80\""[..], true),
        ] {
            let mut sc = Scanner::new();
            assert!(sc.skip_value(bytes, 0).is_ok());
            assert_eq!(sc.bad_utf8, bad, "{bytes:?}");
            assert_eq!(std::str::from_utf8(bytes).is_err(), bad);
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let depth = 200_000;
        let s = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(validate(s.as_bytes()), Ok(()));
        let s = "[".repeat(depth);
        assert!(validate(s.as_bytes()).is_err());
    }

    #[test]
    fn members_and_keys() {
        let s = br#"{"type":"message","id":"ab","p\u0061rentId":null,"message":{"role":"user"}}"#;
        let (ms, end) = members(s, 0).unwrap();
        assert_eq!(end, s.len());
        assert_eq!(ms.len(), 4);
        assert!(key_is(&s[ms[0].key.clone()], "type"));
        assert!(key_is(&s[ms[2].key.clone()], "parentId"));
        assert!(key_is(br"\u0061", "a"));
        assert!(!key_is(br"t\u0079pe", "typ"));
        assert!(!key_is(b"typ", "type"));
        assert_eq!(&s[ms[2].value.clone()], b"null");
        assert_eq!(
            decode_string_value(&s[ms[1].value.clone()]).as_deref(),
            Some("ab")
        );
        assert_eq!(&s[ms[3].span.clone()], br#""message":{"role":"user"}"#);
    }

    #[test]
    fn decodes_escaped_strings() {
        assert_eq!(
            decode_str_body(br"a\nb\u00e9\ud83d\ude00").as_deref(),
            Some("a\nbé😀")
        );
        assert_eq!(decode_str_body(b"plain").as_deref(), Some("plain"));
        assert_eq!(decode_str_body(b"\xff"), None);
    }

    /// A lone surrogate escape reads as U+FFFD, as JavaScript's `JSON.parse` and then a UTF-8
    /// encoder read it; a valid pair and every other escape read as before, and an invalid
    /// escape next to a lone surrogate is still refused.
    #[test]
    fn lone_surrogates_read_as_replacement_characters() {
        for (body, want) in [
            (&br"\ud800"[..], Some("\u{fffd}")),
            (br"a\ud800b", Some("a\u{fffd}b")),
            (br"\udc00", Some("\u{fffd}")),
            (br"\udfffx", Some("\u{fffd}x")),
            (br"\udbff", Some("\u{fffd}")),
            (br"\ud83d\u0041", Some("\u{fffd}A")),
            (br"\ud83d\n", Some("\u{fffd}\n")),
            (br"\ud83d\ud83d\ude00", Some("\u{fffd}😀")),
            (br"\ude00\ud83d", Some("\u{fffd}\u{fffd}")),
            (br"\ud83d\ud83d", Some("\u{fffd}\u{fffd}")),
            (br"\ud83d\\ude00", Some("\u{fffd}\\ude00")),
            (br"\udbff\udfff", Some("\u{10ffff}")),
            (br"\ud800\udc00", Some("\u{10000}")),
            (br"\\ud800", Some("\\ud800")),
            (br"\ud83d\u12", None),
            (br"\ud83d\uzzzz", None),
            (br"\ud83d\x", None),
            (br"\ud83d\", None),
            (br"\ud8", None),
            (b"\\ud83d\xff", None),
        ] {
            let shown = String::from_utf8_lossy(body);
            assert_eq!(decode_str_body(body).as_deref(), want, "{shown}");
            // The counting crossing agrees: 3 bytes each, written as they are.
            let quoted = [&b"\""[..], body, b"\""].concat();
            let counted = Scanner::new().skip_string_counting(&quoted, 1);
            match want {
                Some(text) => {
                    let (end, c) = counted.unwrap();
                    assert_eq!(end, quoted.len(), "{shown}");
                    assert!(c.decodes, "{shown}");
                    assert_eq!(c.decoded, text.len(), "{shown}");
                    let mut out = String::new();
                    crate::support::json::js::write_string(&mut out, text);
                    assert_eq!(c.stringified, out.len(), "{shown}");
                }
                _ => assert!(counted.map_or(true, |(_, c)| !c.decodes), "{shown}"),
            }
        }
        // The escape's text is what a session line keeps: validation accepts it, as
        // `JSON.parse` does.
        assert_eq!(validate(br#"{"t":"\ud800"}"#), Ok(()));
        assert!(key_is(br"\ud800", "\u{fffd}"));
        assert_eq!(
            decode_string_value(br#""\udc00""#).as_deref(),
            Some("\u{fffd}")
        );
    }

    #[test]
    fn unescaping_agrees_with_serde_json() {
        // Random bodies over an alphabet rich in escape pieces, and fixed edge cases; each
        // must decode exactly as serde_json decodes the quoted string into a `String` (once
        // its lone surrogate escapes are written as `\ufffd`).
        let pieces: [&[u8]; 24] = [
            b"\\",
            b"\\\\",
            b"\\\"",
            b"\\/",
            b"\\b",
            b"\\f",
            b"\\n",
            b"\\r",
            b"\\t",
            b"\\u",
            b"\\x",
            b"00e9",
            b"D83D",
            b"DE00",
            b"dc00",
            b"d800",
            b"zz",
            b"a",
            b"\xc3\xa9",
            b"\xff",
            b"\x01",
            b"\"",
            b"\xf0\x9f\x98",
            b"\x80",
        ];
        let mut x = 99u64;
        let mut cases: Vec<Vec<u8>> = vec![
            br"\ud83d\ude00".to_vec(),
            br"\ud83d".to_vec(),
            br"\ude00".to_vec(),
            br"\ud83d\u0041".to_vec(),
            br"\ud83dx".to_vec(),
            br"\u12".to_vec(),
            br"\".to_vec(),
            br"\u00E9\u00e9".to_vec(),
        ];
        for _ in 0..20_000 {
            let mut body = b"\\".to_vec();
            for _ in 0..(x >> 61) + 1 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                body.extend_from_slice(pieces[(x >> 40) as usize % pieces.len()]);
            }
            cases.push(body);
        }
        for body in cases {
            let mut quoted = b"\"".to_vec();
            quoted.extend_from_slice(&body);
            quoted.push(b'"');
            // serde_json refuses lone surrogates, which we read as U+FFFD.
            let theirs = serde_json::from_slice::<String>(&lone_surrogates_as_fffd(&quoted)).ok();
            assert_eq!(
                unescape(&body),
                theirs,
                "{}",
                String::from_utf8_lossy(&body)
            );
        }
    }
}
