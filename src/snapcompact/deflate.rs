//! A zlib/deflate encoder tuned for text frames (the default `Compression::Tuned`).
//!
//! Why our own: the reference compresses frames with zlib level 9 (miniz), which spends most
//! of its time walking hash chains clogged with the zero bytes of blank pixel rows (100 ms
//! per 1568 px frame in wasm). Frames are zero runs plus glyph rows that repeat, so this
//! matcher takes zero runs as distance-1 matches, keeps run interiors out of the hash
//! chains, hashes 4 bytes (so chain candidates rarely fail) and walks short chains with
//! one-step lazy matching. Frames come out about 1–2 % larger than level 9's (4-bit frames
//! about 3 %) at several times the speed; `Compression::High` keeps the reference's exact
//! sizes. Figures: README, "Performance". Output is standard zlib (RFC 1950/1951).

const WINDOW: usize = 1 << 15;
const WINDOW_MASK: usize = WINDOW - 1;
const HASH_BITS: u32 = 15;
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 258;
const NONE: u32 = u32::MAX;

/// Matcher effort.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    /// Chain entries tried per position.
    pub max_chain: u32,
    /// A match this long ends the search.
    pub nice_length: usize,
    /// Matches shorter than this are checked against a match one byte later (lazy).
    pub lazy_below: usize,
    /// Tokens per deflate block: small enough to follow local statistics (blank bands vs
    /// text), large enough that tree headers stay cheap.
    pub block_tokens: usize,
    /// Positions inside matches longer than this are not indexed (but the last few).
    pub max_insert: usize,
}

impl Effort {
    /// Tuned on the conformance frames: 1- and 2-bit frames (black text) find their matches
    /// within short chains; 4-bit frames (sentence hues, dim ink) repeat 4 bytes per glyph row
    /// and need longer ones.
    pub fn for_depth(depth: u8) -> Effort {
        if depth >= 4 {
            Effort {
                max_chain: 128,
                nice_length: 128,
                lazy_below: 32,
                block_tokens: 1 << 14,
                max_insert: 258,
            }
        } else {
            Effort {
                max_chain: 16,
                nice_length: 64,
                lazy_below: 8,
                block_tokens: 1 << 14,
                max_insert: 258,
            }
        }
    }
}

impl Default for Effort {
    fn default() -> Self {
        Effort::for_depth(1)
    }
}

/// Length symbol (257..=285 minus 257) for match lengths 3..=258.
static LENGTH_CODE: [u8; 259] = {
    let mut t = [0u8; 259];
    let mut code = 0;
    let mut len = 3;
    while len <= 258 {
        while code + 1 < 29 && LENGTH_BASE[code + 1] as usize <= len {
            code += 1;
        }
        t[len] = code as u8;
        len += 1;
    }
    t
};

#[inline]
fn dist_code(dist: u16) -> usize {
    // Distance codes double every two codes: derive from the bit length.
    let d = dist as u32 - 1;
    if d < 4 {
        d as usize
    } else {
        let bits = 31 - d.leading_zeros();
        (2 * bits + ((d >> (bits - 1)) & 1)) as usize
    }
}

/// One LZ77 token, with its deflate symbols already worked out.
#[derive(Clone, Copy)]
struct Token {
    /// Literal/length symbol 0..=285.
    sym: u16,
    /// Extra bits of the length.
    len_extra: u16,
    /// Distance symbol 0..=29 (unused for literals).
    dsym: u8,
    dist_extra: u16,
}

impl Token {
    #[inline]
    fn literal(b: u8) -> Token {
        Token {
            sym: b as u16,
            len_extra: 0,
            dsym: 0,
            dist_extra: 0,
        }
    }

    #[inline]
    fn matched(len: usize, dist: usize) -> Token {
        let lc = LENGTH_CODE[len] as usize;
        let dc = dist_code(dist as u16);
        Token {
            sym: 257 + lc as u16,
            len_extra: len as u16 - LENGTH_BASE[lc],
            dsym: dc as u8,
            dist_extra: dist as u16 - DIST_BASE[dc],
        }
    }
}

struct Matcher<'a> {
    d: &'a [u8],
    /// Fixed sizes let the masked indices go unchecked.
    head: Box<[u32; 1 << HASH_BITS]>,
    prev: Box<[u32; WINDOW]>,
    effort: Effort,
}

#[inline(always)]
fn load32(d: &[u8], p: usize) -> u32 {
    match d.get(p..p + 4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

#[inline(always)]
fn load64(d: &[u8], p: usize) -> u64 {
    match d.get(p..p + 8) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => 0,
    }
}

impl<'a> Matcher<'a> {
    fn new(d: &'a [u8], effort: Effort) -> Matcher<'a> {
        Matcher {
            d,
            head: Box::new([NONE; 1 << HASH_BITS]),
            prev: Box::new([NONE; WINDOW]),
            effort,
        }
    }

    /// Hash of the 4 bytes at a position: chain candidates share 4 bytes, so few of them
    /// fail (3-byte matches are only worth it close by, and distance 1 covers zero runs).
    #[inline(always)]
    fn hash(v: u32) -> usize {
        (v.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
    }

    /// Adds position `p` to the chains, except deep inside zero runs: there the only useful
    /// candidates are distance 1 and the run's first and last few positions (where "zeros
    /// then ink" matches start).
    #[inline(always)]
    fn insert(&mut self, p: usize) {
        let d = self.d;
        if p + 4 > d.len() {
            return;
        }
        let v = load32(d, p);
        if v == 0 && p > 0 && d[p - 1] == 0 {
            return;
        }
        let h = Self::hash(v);
        self.prev[p & WINDOW_MASK] = self.head[h];
        self.head[h] = p as u32;
    }

    #[inline(always)]
    fn match_len(&self, a: usize, b: usize, max: usize) -> usize {
        let d = self.d;
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

    /// The longest match at `p` (length, distance), length 0 when none.
    fn find(&self, p: usize) -> (usize, usize) {
        let d = self.d;
        let max = (d.len() - p).min(MAX_MATCH);
        if max < 4 {
            return (0, 0);
        }
        let (mut best_len, mut best_dist) = (0, 0);
        let v = load32(d, p);
        if p > 0 && d[p - 1] == 0 && v & 0xFF == 0 {
            let run = self.match_len(p - 1, p, max);
            if run >= MIN_MATCH {
                best_len = run;
                best_dist = 1;
                if run >= self.effort.nice_length || run == max {
                    return (best_len, best_dist);
                }
            }
        }
        let mut cand = self.head[Self::hash(v)];
        let mut chain = self.effort.max_chain;
        let mut last = p;
        while cand != NONE && chain > 0 {
            let c = cand as usize;
            if c >= last || p - c > WINDOW {
                break;
            }
            last = c;
            // Cheap rejects first: the 4 hashed bytes, then the byte that would extend the best.
            if load32(d, c) == v
                && (best_len < 4 || d[c + best_len.min(max - 1)] == d[p + best_len.min(max - 1)])
            {
                let l = self.match_len(c, p, max);
                if l > best_len {
                    best_len = l;
                    best_dist = p - c;
                    if l >= self.effort.nice_length || l == max {
                        break;
                    }
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

/// LZ77 with one-step lazy evaluation; calls `block` with each block's tokens.
fn tokenize(d: &[u8], effort: Effort, mut block: impl FnMut(&mut Vec<Token>)) {
    let mut m = Matcher::new(d, effort);
    let mut tokens: Vec<Token> = Vec::with_capacity(effort.block_tokens + 2);
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
                    if tokens.len() >= effort.block_tokens {
                        block(&mut tokens);
                        tokens.clear();
                    }
                    continue;
                }
            }
            tokens.push(Token::matched(len, dist));
            // Inside a zero run only the last positions before ink are worth indexing.
            let from = if (dist == 1 && d[p] == 0) || len > effort.max_insert {
                (p + len).saturating_sub(4).max(p + 1)
            } else {
                p + 1
            };
            for q in from..p + len {
                m.insert(q);
            }
            p += len;
        } else {
            tokens.push(Token::literal(d[p]));
            m.insert(p);
            p += 1;
        }
        if tokens.len() >= effort.block_tokens {
            block(&mut tokens);
            tokens.clear();
        }
    }
    block(&mut tokens);
}

// ---------------------------------------------------------------------------------------------
// Huffman coding (RFC 1951 §3.2)

const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LENGTH_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
const CLEN_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// Code lengths of a Huffman code over `freqs`, limited to `max_bits` (by flattening the
/// frequencies until the tree fits).
fn huffman_lengths(freqs: &[u32], max_bits: u8) -> Vec<u8> {
    let mut f: Vec<u64> = freqs.iter().map(|&x| x as u64).collect();
    loop {
        let lens = unlimited_lengths(&f);
        if lens.iter().all(|&l| l <= max_bits) {
            return lens;
        }
        for x in &mut f {
            if *x > 0 {
                *x = (*x >> 1).max(1);
            }
        }
    }
}

fn unlimited_lengths(freqs: &[u64]) -> Vec<u8> {
    let mut lens = vec![0u8; freqs.len()];
    let mut leaves: Vec<(u64, usize)> = freqs
        .iter()
        .enumerate()
        .filter(|(_, &f)| f > 0)
        .map(|(i, &f)| (f, i))
        .collect();
    match leaves.len() {
        0 => return lens,
        1 => {
            lens[leaves[0].1] = 1;
            return lens;
        }
        _ => {}
    }
    leaves.sort_unstable();
    // Two-queue Huffman: leaves sorted, internal nodes created in non-decreasing order.
    let n = leaves.len();
    let mut parent = vec![0usize; 2 * n - 1];
    let mut weight: Vec<u64> = leaves.iter().map(|l| l.0).collect();
    weight.resize(2 * n - 1, 0);
    let (mut li, mut ni) = (0usize, n);
    let mut next = n;
    let pick = |weight: &Vec<u64>, li: &mut usize, ni: &mut usize, next: usize| -> usize {
        if *li < n && (*ni >= next || weight[*li] <= weight[*ni]) {
            *li += 1;
            *li - 1
        } else {
            *ni += 1;
            *ni - 1
        }
    };
    while next < 2 * n - 1 {
        let a = pick(&weight, &mut li, &mut ni, next);
        let b = pick(&weight, &mut li, &mut ni, next);
        weight[next] = weight[a] + weight[b];
        parent[a] = next;
        parent[b] = next;
        next += 1;
    }
    // Depths: root is the last node.
    let mut depth = vec![0u8; 2 * n - 1];
    for i in (0..2 * n - 2).rev() {
        depth[i] = depth[parent[i]].saturating_add(1);
    }
    for (k, &(_, sym)) in leaves.iter().enumerate() {
        lens[sym] = depth[k];
    }
    lens
}

/// Canonical codes (bit-reversed for LSB-first output) from code lengths.
fn canonical_codes(lens: &[u8]) -> Vec<u16> {
    let mut bl_count = [0u16; 16];
    for &l in lens {
        bl_count[l as usize] += 1;
    }
    bl_count[0] = 0;
    let mut next = [0u16; 16];
    let mut code = 0u16;
    for bits in 1..16 {
        code = (code + bl_count[bits - 1]) << 1;
        next[bits] = code;
    }
    lens.iter()
        .map(|&l| {
            if l == 0 {
                return 0;
            }
            let c = next[l as usize];
            next[l as usize] += 1;
            c.reverse_bits() >> (16 - l)
        })
        .collect()
}

struct BitWriter {
    out: Vec<u8>,
    /// Bytes of `out` written so far (the rest is scratch space).
    pos: usize,
    acc: u64,
    n: u32,
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
            self.out[self.pos..self.pos + 4].copy_from_slice(&(self.acc as u32).to_le_bytes());
            self.pos += 4;
            self.acc >>= 32;
            self.n -= 32;
        }
    }

    /// Pads to a byte boundary and returns the bytes written.
    fn finish(mut self) -> Vec<u8> {
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

fn write_block(w: &mut BitWriter, tokens: &[Token], last: bool) {
    let mut lit_freq = [0u32; 286];
    let mut dist_freq = [0u32; 30];
    for t in tokens {
        lit_freq[t.sym as usize] += 1;
        if t.sym > 256 {
            dist_freq[t.dsym as usize] += 1;
        }
    }
    lit_freq[256] = 1;
    let lit_lens = huffman_lengths(&lit_freq, 15);
    let mut dist_lens = huffman_lengths(&dist_freq, 15);
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
    let lit_codes = canonical_codes(&lit_lens);
    let dist_codes = canonical_codes(&dist_lens);
    for t in tokens {
        let s = t.sym as usize;
        if s < 256 {
            w.put(lit_codes[s] as u32, lit_lens[s] as u32);
            continue;
        }
        // Length code + extra bits, then distance code + extra bits: two writes of ≤ 28 bits.
        let lc = s - 257;
        let (ll, le) = (lit_lens[s] as u32, LENGTH_EXTRA[lc] as u32);
        w.put(lit_codes[s] as u32 | (t.len_extra as u32) << ll, ll + le);
        let dc = t.dsym as usize;
        let (dl, de) = (dist_lens[dc] as u32, DIST_EXTRA[dc] as u32);
        w.put(dist_codes[dc] as u32 | (t.dist_extra as u32) << dl, dl + de);
    }
    w.put(lit_codes[256] as u32, lit_lens[256] as u32);
}

fn adler32(d: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in d.chunks(5552) {
        // Four lanes: b gains 4·a per step plus the weighted bytes of the step.
        let mut quads = chunk.chunks_exact(4);
        for q in &mut quads {
            b += 4 * a + 4 * q[0] as u32 + 3 * q[1] as u32 + 2 * q[2] as u32 + q[3] as u32;
            a += q[0] as u32 + q[1] as u32 + q[2] as u32 + q[3] as u32;
        }
        for &x in quads.remainder() {
            a += x as u32;
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

/// Compresses `data` into a zlib stream.
pub fn zlib_compress(data: &[u8], effort: Effort) -> Vec<u8> {
    let mut out = vec![0u8; data.len() / 4 + 4096];
    out[0] = 0x78;
    out[1] = 0xDA;
    let mut w = BitWriter {
        out,
        pos: 2,
        acc: 0,
        n: 0,
    };
    // Blocks are written one behind so the final one can carry the BFINAL bit: swap the
    // buffers instead of copying tokens.
    let mut held: Vec<Token> = Vec::new();
    let mut any = false;
    tokenize(data, effort, |tokens| {
        if any {
            write_block(&mut w, &held, false);
        }
        std::mem::swap(&mut held, tokens);
        any = true;
    });
    write_block(&mut w, &held, true);
    let mut out = w.finish();
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inflate(z: &[u8]) -> Vec<u8> {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(z)
            .read_to_end(&mut out)
            .expect("valid zlib stream");
        out
    }

    #[test]
    fn round_trips() {
        let mut samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![7; 1000],
            b"abcabcabcabcabd".to_vec(),
            (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect(),
        ];
        // A text-bitmap-like sample: zero rows and repeating glyph bytes.
        let mut s = Vec::new();
        for r in 0..400u32 {
            s.push(0);
            for c in 0..196u32 {
                s.push(if r % 16 < 13 {
                    ((c * 31 + r % 16 * 7) % 5 * 17) as u8
                } else {
                    0
                });
            }
        }
        samples.push(s);
        let mut x = 12345u32;
        samples.push(
            (0..100_000)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect(),
        );
        for d in samples {
            let z = zlib_compress(&d, Effort::default());
            assert_eq!(inflate(&z), d, "len {}", d.len());
        }
    }

    #[test]
    fn adler_matches_reference() {
        let d: Vec<u8> = (0..20_000u32).map(|i| (i * 131 % 256) as u8).collect();
        let (mut a, mut b) = (1u64, 0u64);
        for &x in &d {
            a = (a + x as u64) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!(adler32(&d), ((b << 16) | a) as u32);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
    }

    #[test]
    fn distance_codes() {
        for dist in 1..=32768u32 {
            let want = DIST_BASE.partition_point(|&b| b as u32 <= dist) - 1;
            assert_eq!(dist_code(dist as u16), want, "{dist}");
        }
        for (len, &code) in LENGTH_CODE.iter().enumerate().skip(3) {
            let want = LENGTH_BASE.partition_point(|&b| b as usize <= len) - 1;
            assert_eq!(code as usize, want, "{len}");
        }
    }

    #[test]
    fn limits_code_lengths() {
        // Fibonacci frequencies force a deep tree.
        let mut f = vec![1u32, 1];
        for i in 2..30 {
            let v = f[i - 1] + f[i - 2];
            f.push(v);
        }
        let lens = huffman_lengths(&f, 15);
        assert!(lens.iter().all(|&l| l <= 15 && l > 0));
        let kraft: f64 = lens.iter().map(|&l| 0.5f64.powi(l as i32)).sum();
        assert!(kraft <= 1.0 + 1e-9);
    }
}
