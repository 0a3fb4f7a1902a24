//! Deflate's length and distance symbols (RFC 1951 §3.2.5) and the LZ77 token that carries
//! them, worked out once when a token is made so that counting and writing need no lookups
//! (spec: snapcompact §7.9).

pub(super) const MIN_MATCH: usize = 3;
pub(super) const MAX_MATCH: usize = 258;

const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
pub(super) const LENGTH_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
pub(super) const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// Length symbol (257..=285 minus 257) for match lengths 3..=258.
pub(super) static LENGTH_CODE: [u8; 259] = {
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
pub(super) fn dist_code(dist: u16) -> usize {
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
pub(super) const NO_DIST: u8 = 30;

/// One LZ77 token, with its deflate symbols already worked out.
#[derive(Clone, Copy)]
pub(super) struct Token {
    /// Literal/length symbol 0..=285.
    pub(super) sym: u16,
    /// Extra bits of the length.
    pub(super) len_extra: u16,
    /// Distance symbol 0..=29; [`NO_DIST`] for literals (so counting and writing need no
    /// branch on the token kind).
    pub(super) dsym: u8,
    pub(super) dist_extra: u16,
}

impl Token {
    #[inline(always)]
    pub(super) fn literal(b: u8) -> Token {
        Token {
            sym: b as u16,
            len_extra: 0,
            dsym: NO_DIST,
            dist_extra: 0,
        }
    }

    #[inline(always)]
    pub(super) fn matched(len: usize, dist: usize) -> Token {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
