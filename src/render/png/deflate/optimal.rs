//! The optimal parse of the `high` setting ([`Effort::passes`]; spec: snapcompact §7.9): a
//! shortest path over the match graph, priced by the previous pass's symbol statistics.

use super::huffman::huffman_lengths;
use super::matcher::{tokenize, Matcher};
use super::symbols::{
    dist_code, Token, DIST_EXTRA, LENGTH_CODE, LENGTH_EXTRA, MAX_MATCH, MIN_MATCH,
};
use super::Effort;

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
            m.insert_covered(p, best, best_dist, effort);
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
pub(super) fn tokenize_optimal(d: &[u8], effort: Effort, row: usize) -> Vec<Token> {
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
