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
//! Figures: docs/performance.md and docs/decisions/size-budget.md.
//!
//! Stages, one file each: `matcher` (hash chains, lazy LZ77, zero runs) and `optimal` (the
//! `high` parse) turn the bytes into `symbols` tokens, `huffman` sizes their codes, `writer`
//! writes the blocks; `effort` holds the matcher's settings; the zlib container (header,
//! Adler-32) is here.

mod effort;
mod huffman;
mod matcher;
mod optimal;
mod symbols;
mod writer;

pub use effort::Effort;
use matcher::tokenize;
use optimal::tokenize_optimal;
use writer::{write_block, write_runs, BitWriter};

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
}
