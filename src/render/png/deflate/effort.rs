//! The matcher's settings per compression level: chain length, lazy matching, block size,
//! optimal-parse passes. Read by the matcher, the optimal parse and the container.

use super::symbols::MAX_MATCH;

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
