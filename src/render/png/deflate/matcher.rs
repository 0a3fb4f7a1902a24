//! LZ77 matching (RFC 1951 §4) tuned for text frames (spec: snapcompact §7.9, §7.10): hash
//! chains that keep zero-run interiors out, the same bytes one row up tried first, one-step
//! lazy matching — and the zero-run scan of [`Effort::RUNS`], which needs no matcher.

use super::symbols::{Token, MAX_MATCH, MIN_MATCH};
use super::Effort;

const WINDOW: usize = 1 << 15;
const WINDOW_MASK: usize = WINDOW - 1;
const HASH_BITS: u32 = 15;
const NONE: u32 = u32::MAX;

/// Collects tokens through a small array, moved into the `Vec` a block at a time: in a build
/// for size (the package used `opt-level = "z"` until 2026-12-01), a `Vec::push` per token
/// stays a call.
struct Tokens {
    block: [Token; 64],
    n: usize,
    out: Vec<Token>,
}

impl Tokens {
    fn with_capacity(n: usize) -> Tokens {
        Tokens {
            block: [Token::literal(0); 64],
            n: 0,
            out: Vec::with_capacity(n),
        }
    }

    #[inline(always)]
    fn push(&mut self, t: Token) {
        if self.n == self.block.len() {
            self.out.extend_from_slice(&self.block);
            self.n = 0;
        }
        self.block[self.n] = t;
        self.n += 1;
    }

    fn finish(mut self) -> Vec<Token> {
        self.out.extend_from_slice(&self.block[..self.n]);
        self.out
    }
}

pub(super) struct Matcher<'a> {
    d: &'a [u8],
    /// Fixed sizes let the masked indices go unchecked.
    head: Box<[u32; 1 << HASH_BITS]>,
    prev: Box<[u32; WINDOW]>,
    effort: Effort,
    /// Bytes per scanline of an image (filter byte included), 0 for other data: the bytes
    /// one row up are an image's likeliest long match, tried before the chains.
    row: usize,
}

#[inline(always)]
fn load32(d: &[u8], p: usize) -> u32 {
    match d.get(p..p + 4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// Length of the common prefix of `d[a..]` and `d[b..]`, at most `max`.
#[inline(always)]
fn match_len(d: &[u8], a: usize, b: usize, max: usize) -> usize {
    let mut n = 0;
    while n + 8 <= max {
        let diff = load64(d, a + n) ^ load64(d, b + n);
        if diff != 0 {
            return n + (diff.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    while n < max && d[a + n] == d[b + n] {
        n += 1;
    }
    n
}

#[inline(always)]
fn load64(d: &[u8], p: usize) -> u64 {
    match d.get(p..p + 8) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => 0,
    }
}

impl<'a> Matcher<'a> {
    pub(super) fn new(d: &'a [u8], effort: Effort, row: usize) -> Matcher<'a> {
        Matcher {
            d,
            head: Box::new([NONE; 1 << HASH_BITS]),
            prev: Box::new([NONE; WINDOW]),
            effort,
            row,
        }
    }

    /// Hash of the 4 bytes at a position (or 6, see [`Effort::hash_len`]): chain candidates
    /// share them, so few of them fail (3-byte matches are only worth it close by, and
    /// distance 1 covers zero runs). `v` is the position's 4 bytes.
    #[inline(always)]
    fn hash(&self, p: usize, v: u32) -> usize {
        if self.effort.hash_len >= 6 {
            let x = load64(self.d, p) & 0xFFFF_FFFF_FFFF;
            (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HASH_BITS)) as usize
        } else {
            (v.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
        }
    }

    /// Adds position `p` to the chains, except deep inside zero runs: there the only useful
    /// candidates are distance 1 and the run's first and last few positions (where "zeros
    /// then ink" matches start).
    #[inline(always)]
    pub(super) fn insert(&mut self, p: usize) {
        let d = self.d;
        if p + 4 > d.len() {
            return;
        }
        let v = load32(d, p);
        if v == 0 && p > 0 && d[p - 1] == 0 {
            return;
        }
        let h = self.hash(p, v);
        self.prev[p & WINDOW_MASK] = self.head[h];
        self.head[h] = p as u32;
    }

    /// Indexes the positions a match of `len` at `p` covers (after `p` itself). Inside a zero
    /// run, and after a match longer than `effort.max_insert`, only the last positions before
    /// the next ink are worth it.
    #[inline(always)]
    pub(super) fn insert_covered(&mut self, p: usize, len: usize, dist: usize, effort: Effort) {
        let from = if (dist == 1 && self.d[p] == 0) || len > effort.max_insert {
            (p + len).saturating_sub(4).max(p + 1)
        } else {
            p + 1
        };
        for q in from..p + len {
            self.insert(q);
        }
    }

    /// The longest match at `p` (length, distance), length 0 when none.
    fn find(&self, p: usize) -> (usize, usize) {
        self.search(p, |_, _| {})
    }

    /// [`Self::find`], calling `each(length, distance)` for every match of at least
    /// [`MIN_MATCH`] that is longer than those before it (nearest first for each length).
    #[inline(always)]
    pub(super) fn search(&self, p: usize, mut each: impl FnMut(usize, usize)) -> (usize, usize) {
        let d = self.d;
        let max = (d.len() - p).min(MAX_MATCH);
        if max < 4 {
            return (0, 0);
        }
        let (mut best_len, mut best_dist) = (0, 0);
        let v = load32(d, p);
        if p > 0 && d[p - 1] == 0 && v & 0xFF == 0 {
            let run = match_len(d, p - 1, p, max);
            if run >= MIN_MATCH {
                best_len = run;
                best_dist = 1;
                each(run, 1);
                if run >= self.effort.nice_length || run == max {
                    return (best_len, best_dist);
                }
            }
        }
        if self.row > 0 && p >= self.row {
            let c = p - self.row;
            if load32(d, c) == v {
                let l = match_len(d, c, p, max);
                if l > best_len {
                    best_len = l;
                    best_dist = self.row;
                    each(l, self.row);
                    if l >= self.effort.nice_length || l == max {
                        return (best_len, best_dist);
                    }
                }
            }
        }
        let mut cand = self.head[self.hash(p, v)];
        let mut chain = self.effort.max_chain;
        let mut last = p;
        // The byte a candidate must share to beat the best match (once there is one of 4
        // or more), with its offset: one load per candidate rejects most of them.
        let mut probe = best_len.min(max - 1);
        let mut want = d.get(p + probe).copied().unwrap_or(0);
        while cand != NONE && chain > 0 {
            let c = cand as usize;
            if c >= last || p - c > WINDOW {
                break;
            }
            last = c;
            // Cheap rejects first: the byte that would extend the best, then the 4 hashed bytes.
            if (best_len < 4 || matches!(d.get(c + probe), Some(&x) if x == want))
                && load32(d, c) == v
            {
                let l = match_len(d, c, p, max);
                if l > best_len {
                    best_len = l;
                    best_dist = p - c;
                    if l >= MIN_MATCH {
                        each(l, best_dist);
                    }
                    if l >= self.effort.nice_length || l == max {
                        break;
                    }
                    probe = best_len.min(max - 1);
                    want = d.get(p + probe).copied().unwrap_or(0);
                }
            }
            cand = self.prev[c & WINDOW_MASK];
            chain -= 1;
        }
        if best_len >= MIN_MATCH {
            (best_len, best_dist)
        } else {
            (0, 0)
        }
    }
}

/// LZ77 with one-step lazy evaluation.
pub(super) fn tokenize(d: &[u8], effort: Effort, row: usize) -> Vec<Token> {
    let mut m = Matcher::new(d, effort, row);
    let mut tokens = Tokens::with_capacity(d.len() / 8 + 16);
    let mut p = 0;
    let mut pending: Option<(usize, usize)> = None;
    while p < d.len() {
        let (len, dist) = match pending.take() {
            Some(found) => found,
            None => m.find(p),
        };
        if len >= MIN_MATCH {
            m.insert(p);
            if len < effort.lazy_below && p + 1 < d.len() {
                let next = m.find(p + 1);
                if next.0 > len {
                    tokens.push(Token::literal(d[p]));
                    p += 1;
                    pending = Some(next);
                    continue;
                }
            }
            tokens.push(Token::matched(len, dist));
            m.insert_covered(p, len, dist, effort);
            p += len;
        } else {
            tokens.push(Token::literal(d[p]));
            m.insert(p);
            p += 1;
        }
    }
    tokens.finish()
}

/// Zero runs only ([`Effort::RUNS`]), 8 bytes at a time: calls `each(zeros, literals)`
/// with the length of a run of zero bytes (0 for none; [`run_tokens`] turns it into
/// tokens) and the stretch of bytes after it to write as literals. Zeros inside an 8-byte
/// word that is neither all zero nor at a run's edge go out as literals.
#[inline(always)]
pub(super) fn scan_zero_runs(d: &[u8], mut each: impl FnMut(usize, &[u8])) {
    let mut zeros = 0usize;
    let mut words = d.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_le_bytes([
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ]);
        if x == 0 {
            zeros += 8;
            continue;
        }
        let lead = (x.trailing_zeros() / 8) as usize;
        let tail = (x.leading_zeros() / 8) as usize;
        each(zeros + lead, &word[lead..8 - tail]);
        zeros = tail;
    }
    for b in words.remainder() {
        if *b == 0 {
            zeros += 1;
        } else {
            each(zeros, std::slice::from_ref(b));
            zeros = 0;
        }
    }
    each(zeros, &[]);
}

/// The tokens of a run of `n` zero bytes: short runs as literals, else a literal zero and
/// distance-1 matches.
#[inline(always)]
pub(super) fn run_tokens(n: usize, mut each: impl FnMut(Token)) {
    if n < 4 {
        for _ in 0..n {
            each(Token::literal(0));
        }
        return;
    }
    each(Token::literal(0));
    let mut left = n - 1;
    while left > MAX_MATCH {
        each(Token::matched(MAX_MATCH, 1));
        left -= MAX_MATCH;
    }
    if left >= MIN_MATCH {
        each(Token::matched(left, 1));
    } else {
        for _ in 0..left {
            each(Token::literal(0));
        }
    }
}
