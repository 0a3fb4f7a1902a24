//! The zlib/deflate encoder of every PNG frame (RFC 1950/1951), tuned for text frames.
//!
//! Why our own: the reference compresses frames with zlib level 9 (miniz), which spends most
//! of its time walking hash chains clogged with the zero bytes of blank pixel rows (100 ms
//! per 1568 px frame in wasm). Frames are zero runs plus glyph rows that repeat, so this
//! matcher takes zero runs as distance-1 matches, keeps run interiors out of the hash
//! chains, hashes 4 bytes (6 for 2-bit frames; so chain candidates rarely fail), tries the
//! same bytes one row up first and walks short chains with one-step lazy matching
//! ([`Effort::for_depth`], `Compression::Tuned`): the 13 frames of the snapcompact
//! conformance case come out at 1,637,699 B, 9.9 % above zlib level 9 (1,489,809 B), at
//! several times its speed. The same matcher serves the other settings: [`Effort::RUNS`]
//! (`fast`: zero runs only, no hashing) and, for `high`, an optimal parse
//! ([`Effort::passes`]: a shortest path over the match graph priced by the previous pass's
//! symbol statistics) that comes out below level 9 (1,436,178 B when last measured).
//! Figures: README, "Performance".

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
    /// Optimal-parse passes; 0 = greedy matching with one-step lazy evaluation.
    pub passes: u8,
    /// Bytes hashed to pick a chain: 4, or 6 (fewer candidates that fail, but no chain
    /// match shorter than 6 bytes; distance 1 and one row up are tried either way).
    pub hash_len: u8,
}

impl Effort {
    /// Runs of zero bytes only, found 8 bytes at a time: no hashing, no chains, one block
    /// (`Compression::Fast`).
    pub const RUNS: Effort = Effort {
        max_chain: 0,
        nice_length: MAX_MATCH,
        lazy_below: 0,
        block_tokens: 1 << 14,
        max_insert: 0,
        passes: 0,
        hash_len: 4,
    };

    /// Effort for a zlib-style level 1–9 and a frame's bit depth: longer chains and lazier
    /// matching as the level rises; 9 is the optimal parse (`Compression::High`), with
    /// longer chains for 4-bit frames (see [`Effort::for_depth`]).
    pub fn level(level: u8, depth: u8) -> Effort {
        let (max_chain, nice_length, lazy_below, passes) = match level {
            0 | 1 => (2, 32, 0, 0),
            2 => (4, 32, 0, 0),
            3 => (8, 64, 4, 0),
            4 => (16, 64, 8, 0),
            5 => (32, 128, 16, 0),
            6 => (64, 128, 32, 0),
            7 => (256, 258, 128, 0),
            // The optimal parse walks a chain at every position, so short chains do: 4-bit
            // frames need longer ones (as in `for_depth`).
            8 if depth >= 4 => (32, 258, 258, 1),
            8 => (8, 258, 258, 1),
            _ if depth >= 4 => (64, 258, 258, 1),
            _ => (16, 258, 258, 1),
        };
        Effort {
            max_chain,
            nice_length,
            lazy_below,
            block_tokens: 1 << 14,
            max_insert: if level >= 7 { usize::MAX } else { 258 },
            passes,
            hash_len: 4,
        }
    }

    /// 1-bit frames (black text) find their matches one row up or within short chains: 10
    /// candidates, a 32-byte match ends the search, the inside of longer matches is not
    /// indexed, lazy matching below 4 bytes (first tuned on the conformance frames: 4.6 %
    /// larger than with 16 candidates, 64 and full indexing, at 0.68 times the
    /// instructions). 2-bit frames (black and dim ink, as snapcompact compactions print
    /// them) hash 6 bytes, which leads to longer matches through fewer candidates: with 4 of
    /// them and matches indexed up to 12 bytes, the 13 frames of the snapcompact conformance
    /// case come out 0.6 % smaller at 0.8 times the time (native, against the 1-bit
    /// settings; a 6-byte hash made 1-bit frames slower). 4-bit frames (sentence hues, dim
    /// ink) repeat 4 bytes per glyph row and need longer chains.
    pub fn for_depth(depth: u8) -> Effort {
        let (max_chain, nice_length, lazy_below, max_insert, hash_len) = match depth {
            4.. => (128, 128, 32, 258, 4),
            2 => (4, 32, 4, 12, 6),
            _ => (10, 32, 4, 32, 4),
        };
        Effort {
            max_chain,
            nice_length,
            lazy_below,
            block_tokens: 1 << 14,
            max_insert,
            passes: 0,
            hash_len,
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

#[inline(always)]
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

/// The distance "symbol" of a literal token: an extra slot of the distance tables that
/// counts nothing and writes no bits.
const NO_DIST: u8 = 30;

/// One LZ77 token, with its deflate symbols already worked out.
#[derive(Clone, Copy)]
struct Token {
    /// Literal/length symbol 0..=285.
    sym: u16,
    /// Extra bits of the length.
    len_extra: u16,
    /// Distance symbol 0..=29; [`NO_DIST`] for literals (so counting and writing need no
    /// branch on the token kind).
    dsym: u8,
    dist_extra: u16,
}

impl Token {
    #[inline(always)]
    fn literal(b: u8) -> Token {
        Token {
            sym: b as u16,
            len_extra: 0,
            dsym: NO_DIST,
            dist_extra: 0,
        }
    }

    #[inline(always)]
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

/// Collects tokens through a small array, moved into the `Vec` a block at a time: built for
/// size (`opt-level = "z"`), a `Vec::push` per token stays a call.
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

struct Matcher<'a> {
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
    fn new(d: &'a [u8], effort: Effort, row: usize) -> Matcher<'a> {
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
    fn insert(&mut self, p: usize) {
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

    /// The longest match at `p` (length, distance), length 0 when none.
    fn find(&self, p: usize) -> (usize, usize) {
        self.search(p, |_, _| {})
    }

    /// [`Self::find`], calling `each(length, distance)` for every match of at least
    /// [`MIN_MATCH`] that is longer than those before it (nearest first for each length).
    #[inline(always)]
    fn search(&self, p: usize, mut each: impl FnMut(usize, usize)) -> (usize, usize) {
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
fn tokenize(d: &[u8], effort: Effort, row: usize) -> Vec<Token> {
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
    }
    tokens.finish()
}

/// Zero runs only ([`Effort::RUNS`]), 8 bytes at a time: calls `each(zeros, literals)`
/// with the length of a run of zero bytes (0 for none; [`run_tokens`] turns it into
/// tokens) and the stretch of bytes after it to write as literals. Zeros inside an 8-byte
/// word that is neither all zero nor at a run's edge go out as literals.
#[inline(always)]
fn scan_zero_runs(d: &[u8], mut each: impl FnMut(usize, &[u8])) {
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
fn run_tokens(n: usize, mut each: impl FnMut(Token)) {
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

/// Prices in bits of the literal/length and distance symbols: their Huffman code lengths
/// for the symbol counts of a previous parse (unseen symbols counted once).
struct Prices {
    /// Per match length 0..=258: length symbol plus extra bits.
    len: [u32; MAX_MATCH + 1],
    lit: [u32; 256],
    dist: [u32; 30],
}

impl Prices {
    fn of(tokens: &[Token]) -> Prices {
        let mut lit_freq = [1u32; 286];
        let mut dist_freq = [1u32; 31];
        for t in tokens {
            lit_freq[t.sym as usize] += 1;
            dist_freq[t.dsym as usize] += 1;
        }
        let lit_lens = huffman_lengths(&lit_freq, 15);
        let dist_lens = huffman_lengths(&dist_freq[..30], 15);
        let mut p = Prices {
            len: [0; MAX_MATCH + 1],
            lit: [0; 256],
            dist: [0; 30],
        };
        for (i, l) in p.lit.iter_mut().enumerate() {
            *l = lit_lens[i] as u32;
        }
        for (len, l) in p.len.iter_mut().enumerate().skip(MIN_MATCH) {
            let lc = LENGTH_CODE[len] as usize;
            *l = lit_lens[257 + lc] as u32 + LENGTH_EXTRA[lc] as u32;
        }
        for (dc, l) in p.dist.iter_mut().enumerate() {
            *l = dist_lens[dc] as u32 + DIST_EXTRA[dc] as u32;
        }
        p
    }
}

/// One optimal-parse pass: the cheapest path through every literal and every match length
/// the matcher finds (each length at the nearest distance that reaches it), under
/// `prices`. A match of `nice_length` or more is taken as found and its interior skipped.
/// Zero runs at least this long are not explored by the optimal parse but for their last
/// [`RUN_KEEP`] bytes.
const RUN_FORCE: usize = 64;
const RUN_KEEP: usize = 16;

fn optimal_pass(d: &[u8], effort: Effort, row: usize, prices: &Prices) -> Vec<Token> {
    let n = d.len();
    let mut cost = vec![u32::MAX; n + 1];
    // The step that reaches each position: (length, distance); length 1 = a literal.
    let mut step = vec![(0u16, 0u16); n + 1];
    cost[0] = 0;
    let mut m = Matcher::new(d, effort, row);
    let mut found: Vec<(usize, usize)> = Vec::with_capacity(64);
    let mut p = 0;
    while p < n {
        let here = cost[p];
        let lit = here + prices.lit[d[p] as usize];
        if lit < cost[p + 1] {
            cost[p + 1] = lit;
            step[p + 1] = (1, 0);
        }
        found.clear();
        let (mut best, best_dist) = m.search(p, |len, dist| found.push((len, dist)));
        m.insert(p);
        // A long zero run is taken as found but for its last bytes, where matches of
        // "zeros then ink" may start (relaxing every length of every suffix of the run
        // would cost its length squared).
        let zero_run = best_dist == 1 && d[p] == 0 && best >= RUN_FORCE;
        if zero_run && best < effort.nice_length {
            best -= RUN_KEEP;
        }
        if best >= effort.nice_length || zero_run {
            let c = here + prices.len[best] + prices.dist[dist_code(best_dist as u16)];
            if c < cost[p + best] {
                cost[p + best] = c;
                step[p + best] = (best as u16, best_dist as u16);
            }
            let from = if (best_dist == 1 && d[p] == 0) || best > effort.max_insert {
                (p + best).saturating_sub(4).max(p + 1)
            } else {
                p + 1
            };
            for q in from..p + best {
                m.insert(q);
            }
            p += best;
            continue;
        }
        let mut len = MIN_MATCH;
        for &(reach, dist) in &found {
            let dc = here + prices.dist[dist_code(dist as u16)];
            while len <= reach {
                let c = dc + prices.len[len];
                if c < cost[p + len] {
                    cost[p + len] = c;
                    step[p + len] = (len as u16, dist as u16);
                }
                len += 1;
            }
        }
        p += 1;
    }
    let mut tokens = Vec::new();
    let mut at = n;
    while at > 0 {
        let (len, dist) = step[at];
        if len == 1 {
            at -= 1;
            tokens.push(Token::literal(d[at]));
        } else {
            at -= len as usize;
            tokens.push(Token::matched(len as usize, dist as usize));
        }
    }
    tokens.reverse();
    tokens
}

/// The tokens of an optimal parse: a lazy parse, then `effort.passes` optimal passes, each
/// priced by the one before.
fn tokenize_optimal(d: &[u8], effort: Effort, row: usize) -> Vec<Token> {
    let first = Effort {
        max_chain: effort.max_chain.min(16),
        lazy_below: 8,
        ..effort
    };
    let mut tokens = tokenize(d, first, row);
    for _ in 0..effort.passes {
        tokens = optimal_pass(d, effort, row, &Prices::of(&tokens));
    }
    tokens
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

/// Sorts ascending (a few lines instead of linking the standard library's sort for one
/// small array of distinct keys).
fn heapsort<T: Ord + Copy>(v: &mut [T]) {
    fn sift<T: Ord + Copy>(v: &mut [T], mut root: usize, end: usize) {
        loop {
            let mut child = 2 * root + 1;
            if child >= end {
                return;
            }
            if child + 1 < end && v[child] < v[child + 1] {
                child += 1;
            }
            if v[root] >= v[child] {
                return;
            }
            v.swap(root, child);
            root = child;
        }
    }
    for i in (0..v.len() / 2).rev() {
        sift(v, i, v.len());
    }
    for end in (1..v.len()).rev() {
        v.swap(0, end);
        sift(v, 0, end);
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
    heapsort(&mut leaves);
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
            let (out, p) = (self.out.as_mut_slice(), self.pos);
            let word = (self.acc as u32).to_le_bytes();
            (out[p], out[p + 1], out[p + 2], out[p + 3]) = (word[0], word[1], word[2], word[3]);
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

/// Code tables of a block: per symbol, code | (code length + extra bits) << 16 | code
/// length << 24. A literal's distance slot ([`NO_DIST`]) writes nothing, so every token is
/// the same two writes of at most 28 bits ([`put_token`]).
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
fn write_block(w: &mut BitWriter, tokens: &[Token], last: bool) {
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
fn write_runs(w: &mut BitWriter, d: &[u8]) {
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

fn adler32(d: &[u8]) -> u32 {
    const LANES: u64 = 0x00FF_00FF_00FF_00FF;
    let (mut a, mut b) = (1u64, 0u64);
    // 64 KiB between reductions keeps `b` far below 2^64.
    for chunk in d.chunks(1 << 16) {
        // Per 8 bytes x0..x7: `b` gains 8·a + Σ (8 − k)·xk and `a` gains Σ xk. The bytes
        // are spread over 16-bit lanes (even and odd positions) and each weighted sum is
        // read off the top lane of one multiplication (no lane carries: sums ≤ 5100).
        let mut words = chunk.chunks_exact(8);
        for w in &mut words {
            let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            let even = x & LANES;
            let odd = (x >> 8) & LANES;
            let sum = (even + odd).wrapping_mul(0x0001_0001_0001_0001) >> 48;
            let weighted = (even.wrapping_mul(0x0008_0006_0004_0002) >> 48)
                + (odd.wrapping_mul(0x0007_0005_0003_0001) >> 48);
            b += 8 * a + weighted;
            a += sum;
        }
        for &x in words.remainder() {
            a += u64::from(x);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    ((b << 16) | a) as u32
}

/// Compresses `data` into a zlib stream. For image scanlines `row` is the bytes per row
/// (filter byte included; 0 for other data): matches one row up are tried first.
pub fn zlib_compress(data: &[u8], effort: Effort, row: usize) -> Vec<u8> {
    let mut out = vec![0u8; data.len() / 4 + 4096];
    out[0] = 0x78;
    out[1] = 0xDA;
    let mut w = BitWriter {
        out,
        pos: 2,
        acc: 0,
        n: 0,
    };
    if effort.max_chain == 0 {
        write_runs(&mut w, data);
    } else {
        let tokens = if effort.passes > 0 {
            tokenize_optimal(data, effort, row)
        } else {
            tokenize(data, effort, row)
        };
        // Blocks of `block_tokens` tokens, then a final one with the rest (maybe none).
        let full = tokens.len() / effort.block_tokens * effort.block_tokens;
        for block in tokens[..full].chunks(effort.block_tokens) {
            write_block(&mut w, block, false);
        }
        write_block(&mut w, &tokens[full..], true);
    }
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
        // Zero runs of every length around the 8-byte words and the 258-byte match limit.
        let mut runs = Vec::new();
        for n in [
            1usize, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 258, 259, 260, 261, 516, 1000,
        ] {
            runs.extend(std::iter::repeat_n(0u8, n));
            runs.extend_from_slice(&[1, 2, 0, 3]);
        }
        samples.push(runs);
        samples.push(vec![0; 70_000]);
        let mut efforts = vec![
            Effort::default(),
            Effort::for_depth(2),
            Effort::for_depth(4),
            Effort::RUNS,
        ];
        efforts.extend((1..=9).flat_map(|l| [Effort::level(l, 1), Effort::level(l, 4)]));
        for d in &samples {
            for e in &efforts {
                // Row 197: the bitmap sample's scanline (the one-row-up candidate).
                for row in [0, 197] {
                    let z = zlib_compress(d, *e, row);
                    assert_eq!(&inflate(&z), d, "len {} effort {e:?} row {row}", d.len());
                }
            }
        }
    }

    #[test]
    fn optimal_parse_beats_lazy_matching() {
        // A text-bitmap-like sample: rows of repeating glyph bytes between zero bands.
        let mut s = Vec::new();
        let mut x = 99u32;
        let glyphs: Vec<[u8; 2]> = (0..40)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                [(x >> 16) as u8, (x >> 24) as u8]
            })
            .collect();
        for line in 0..60u32 {
            for r in 0..16u32 {
                s.push(0);
                for c in 0..98u32 {
                    let g = glyphs[((line * 7 + c * 13) % 40) as usize];
                    s.push(if r < 11 {
                        g[(r % 2) as usize] ^ (r as u8)
                    } else {
                        0
                    });
                }
            }
        }
        let lazy = zlib_compress(&s, Effort::level(7, 1), 0).len();
        let optimal = zlib_compress(&s, Effort::level(9, 1), 0).len();
        assert!(optimal < lazy, "optimal {optimal} vs lazy {lazy}");
    }

    #[test]
    fn adler_matches_reference() {
        // Lengths around the 8-byte steps and the 64 KiB reductions; runs of 0xFF (the
        // largest lane sums) and a byte pattern.
        let mut d: Vec<u8> = (0..140_000u32).map(|i| (i * 131 % 256) as u8).collect();
        d[70_000..140_000].fill(0xFF);
        for len in [0, 1, 7, 8, 9, 20_000, 65_535, 65_536, 65_537, 140_000] {
            let (mut a, mut b) = (1u64, 0u64);
            for &x in &d[..len] {
                a = (a + x as u64) % 65521;
                b = (b + a) % 65521;
            }
            assert_eq!(adler32(&d[..len]), ((b << 16) | a) as u32, "{len} bytes");
        }
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
    fn heapsort_sorts() {
        let mut x = 7u64;
        for n in [0usize, 1, 2, 3, 10, 286] {
            let mut v: Vec<(u64, usize)> = (0..n)
                .map(|i| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 60, i)
                })
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            heapsort(&mut v);
            assert_eq!(v, want);
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
