//! Block output (RFC 1951 §3.2.3, §3.2.7): the LSB-first bit writer, dynamic-Huffman block
//! headers with their run-length coded code lengths, and the tokens of each block (spec:
//! snapcompact §7.9).

use super::huffman::{canonical_codes, huffman_lengths};
use super::matcher::{run_tokens, scan_zero_runs};
use super::symbols::{Token, DIST_EXTRA, LENGTH_EXTRA};

const CLEN_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

pub(super) struct BitWriter {
    pub(super) out: Vec<u8>,
    /// Bytes of `out` written so far (the rest is scratch space).
    pub(super) pos: usize,
    pub(super) acc: u64,
    pub(super) n: u32,
}

impl BitWriter {
    /// Appends `count` ≤ 32 bits (LSB first); `acc` holds fewer than 32 bits between calls.
    #[inline(always)]
    fn put(&mut self, bits: u32, count: u32) {
        self.acc |= (bits as u64) << self.n;
        self.n += count;
        if self.n >= 32 {
            if self.pos + 4 > self.out.len() {
                let grow = self.out.len() + 4096;
                self.out.resize(grow, 0);
            }
            let (out, p) = (self.out.as_mut_slice(), self.pos);
            let word = (self.acc as u32).to_le_bytes();
            (out[p], out[p + 1], out[p + 2], out[p + 3]) = (word[0], word[1], word[2], word[3]);
            self.pos += 4;
            self.acc >>= 32;
            self.n -= 32;
        }
    }

    /// Pads to a byte boundary and returns the bytes written.
    pub(super) fn finish(mut self) -> Vec<u8> {
        self.out.truncate(self.pos);
        while self.n > 0 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n = self.n.saturating_sub(8);
        }
        self.out
    }
}

/// Run-length codes (16, 17, 18) of a code-length sequence: (symbol, extra value).
fn rle_lengths(lens: &[u8]) -> Vec<(u8, u8)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lens.len() {
        let l = lens[i];
        let mut run = 1;
        while i + run < lens.len() && lens[i + run] == l {
            run += 1;
        }
        let mut left = run;
        if l == 0 {
            while left >= 11 {
                let k = left.min(138);
                out.push((18, (k - 11) as u8));
                left -= k;
            }
            if left >= 3 {
                out.push((17, (left - 3) as u8));
                left = 0;
            }
        } else {
            out.push((l, 0));
            left -= 1;
            while left >= 3 {
                let k = left.min(6);
                out.push((16, (k - 3) as u8));
                left -= k;
            }
        }
        for _ in 0..left {
            out.push((l, 0));
        }
        i += run;
    }
    out
}

/// Code tables of a block: per symbol, code | (code length + extra bits) << 16 | code
/// length << 24. A literal's distance slot ([`NO_DIST`]) writes nothing, so every token is
/// the same two writes of at most 28 bits ([`put_token`]).
///
/// [`NO_DIST`]: super::symbols::NO_DIST
struct Codes {
    lit: [u32; 286],
    dist: [u32; 31],
}

#[inline(always)]
fn put_token(w: &mut BitWriter, c: &Codes, t: Token) {
    let l = c.lit[t.sym as usize];
    w.put(
        l & 0xFFFF | (t.len_extra as u32) << (l >> 24),
        (l >> 16) & 0xFF,
    );
    let d = c.dist[t.dsym as usize];
    w.put(
        d & 0xFFFF | (t.dist_extra as u32) << (d >> 24),
        (d >> 16) & 0xFF,
    );
}

/// A dynamic-Huffman block of `tokens`.
pub(super) fn write_block(w: &mut BitWriter, tokens: &[Token], last: bool) {
    let mut lit_freq = [0u32; 286];
    let mut dist_freq = [0u32; 31];
    for t in tokens {
        lit_freq[t.sym as usize] += 1;
        dist_freq[t.dsym as usize] += 1;
    }
    let codes = block_header(w, &mut lit_freq, &dist_freq, last);
    for &t in tokens {
        put_token(w, &codes, t);
    }
    w.put(codes.lit[256] & 0xFFFF, (codes.lit[256] >> 16) & 0xFF);
}

/// [`Effort::RUNS`]: one dynamic-Huffman block, counted in one scan and written in a second
/// (no token buffer); literals go out two per write.
///
/// [`Effort::RUNS`]: super::Effort::RUNS
pub(super) fn write_runs(w: &mut BitWriter, d: &[u8]) {
    let mut lit_freq = [0u32; 286];
    let mut dist_freq = [0u32; 31];
    scan_zero_runs(d, |zeros, lits| {
        run_tokens(zeros, |t| lit_freq[t.sym as usize] += 1);
        for &b in lits {
            lit_freq[b as usize] += 1;
        }
    });
    dist_freq[0] = 1;
    let codes = block_header(w, &mut lit_freq, &dist_freq, true);
    scan_zero_runs(d, |zeros, lits| {
        run_tokens(zeros, |t| put_token(w, &codes, t));
        let mut pairs = lits.chunks_exact(2);
        for pair in &mut pairs {
            let (a, b) = (codes.lit[pair[0] as usize], codes.lit[pair[1] as usize]);
            let la = (a >> 16) & 0xFF;
            w.put(a & 0xFFFF | (b & 0xFFFF) << la, la + ((b >> 16) & 0xFF));
        }
        for &b in pairs.remainder() {
            let l = codes.lit[b as usize];
            w.put(l & 0xFFFF, (l >> 16) & 0xFF);
        }
    });
    w.put(codes.lit[256] & 0xFFFF, (codes.lit[256] >> 16) & 0xFF);
}

/// Writes a dynamic block's header for the symbol counts (RFC 1951 §3.2.7) and returns
/// its code tables.
fn block_header(
    w: &mut BitWriter,
    lit_freq: &mut [u32; 286],
    dist_freq: &[u32; 31],
    last: bool,
) -> Codes {
    lit_freq[256] = 1;
    let lit_lens = huffman_lengths(lit_freq, 15);
    let mut dist_lens = huffman_lengths(&dist_freq[..30], 15);
    if dist_lens.iter().all(|&l| l == 0) {
        dist_lens[0] = 1;
    }
    let hlit = (257..=286)
        .rev()
        .find(|&n| lit_lens[n - 1] != 0)
        .unwrap_or(257)
        .max(257);
    let hdist = (1..=30)
        .rev()
        .find(|&n| dist_lens[n - 1] != 0)
        .unwrap_or(1)
        .max(1);
    let mut all = lit_lens[..hlit].to_vec();
    all.extend_from_slice(&dist_lens[..hdist]);
    let rle = rle_lengths(&all);
    let mut clen_freq = [0u32; 19];
    for &(s, _) in &rle {
        clen_freq[s as usize] += 1;
    }
    let clen_lens = huffman_lengths(&clen_freq, 7);
    let hclen = (4..=19)
        .rev()
        .find(|&n| clen_lens[CLEN_ORDER[n - 1]] != 0)
        .unwrap_or(4)
        .max(4);

    w.put(last as u32, 1);
    w.put(2, 2); // dynamic Huffman
    w.put((hlit - 257) as u32, 5);
    w.put((hdist - 1) as u32, 5);
    w.put((hclen - 4) as u32, 4);
    for &i in &CLEN_ORDER[..hclen] {
        w.put(clen_lens[i] as u32, 3);
    }
    let clen_codes = canonical_codes(&clen_lens);
    for &(s, extra) in &rle {
        w.put(clen_codes[s as usize] as u32, clen_lens[s as usize] as u32);
        match s {
            16 => w.put(extra as u32, 2),
            17 => w.put(extra as u32, 3),
            18 => w.put(extra as u32, 7),
            _ => {}
        }
    }
    let table = |lens: &[u8], extra: &dyn Fn(usize) -> u8, out: &mut [u32]| {
        for (i, (&code, &len)) in canonical_codes(lens).iter().zip(lens).enumerate() {
            out[i] = code as u32 | ((len + extra(i)) as u32) << 16 | (len as u32) << 24;
        }
    };
    let mut codes = Codes {
        lit: [0; 286],
        dist: [0; 31],
    };
    table(
        &lit_lens,
        &|s| if s > 256 { LENGTH_EXTRA[s - 257] } else { 0 },
        &mut codes.lit,
    );
    table(&dist_lens, &|d| DIST_EXTRA[d], &mut codes.dist);
    codes
}
