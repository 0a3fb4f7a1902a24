//! PNG encoding: indexed colour at the smallest bit depth that holds the frame's inks, or
//! RGB for stretched frames; deterministic bytes (spec: snapcompact §7.9). The container
//! (chunks, CRC-32) is written here and the image data compressed by [`crate::render::png::deflate`],
//! so no PNG or zlib library is linked.

pub mod deflate;

use crate::render::error::SnapError;
pub use crate::render::palette::bit_depth;
use crate::render::palette::PALETTE;
use crate::render::png::deflate::{zlib_compress, Effort};
use crate::render::raster::IndexedCanvas;

/// Deflate effort. The bytes depend only on the frame and this setting; the pixels do not
/// depend on it at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Our deflate tuned for text frames ([`crate::render::png::deflate`]): the default.
    #[default]
    Tuned,
    /// Zero runs only: fastest, frames about 1.4–2 times as large.
    Fast,
    /// Effort level 6.
    Balanced,
    /// Effort level 9: an optimal parse, frames smaller than zlib level 9's (the
    /// reference's setting), several times slower than `Tuned`.
    High,
    /// An explicit effort level 1–9 (zlib-like: 1 fastest, 9 = `High`).
    Level(u8),
}

impl Compression {
    pub fn parse(s: &str) -> Result<Compression, SnapError> {
        Ok(match s {
            "tuned" => Compression::Tuned,
            "fast" => Compression::Fast,
            "balanced" => Compression::Balanced,
            "high" => Compression::High,
            other => {
                return Err(SnapError::Options(format!(
                    "unknown compression {}: use \"tuned\", \"fast\", \"balanced\", \"high\" or a \
                     level 1-9",
                    crate::support::json::js::quoted(other)
                )))
            }
        })
    }

    pub fn level(n: u32) -> Result<Compression, SnapError> {
        if (1..=9).contains(&n) {
            Ok(Compression::Level(n as u8))
        } else {
            Err(SnapError::Options(format!(
                "compression level {n} is out of range: use 1 to 9"
            )))
        }
    }

    /// The deflate effort for a frame of `depth` bits per sample (8 for RGB frames).
    fn effort(self, depth: u8) -> Effort {
        match self {
            Compression::Tuned if depth <= 4 => Effort::for_depth(depth),
            Compression::Tuned | Compression::Balanced => Effort::level(6, depth),
            Compression::Fast => Effort::RUNS,
            Compression::High => Effort::level(9, depth),
            Compression::Level(n) => Effort::level(n.clamp(1, 9), depth),
        }
    }
}

/// Packs palette indices (already remapped to local indices) MSB-first at `depth` bits;
/// with `filter_bytes` each row starts with its PNG filter byte (0, None), as the zlib
/// stream of an IDAT holds it.
fn pack_rows(canvas: &IndexedCanvas, local: &[u8; 256], depth: u8, filter_bytes: bool) -> Vec<u8> {
    let w = canvas.width as usize;
    let per_byte = 8 / depth as usize;
    let lead = filter_bytes as usize;
    let stride = w.div_ceil(per_byte);
    let mut out = vec![0u8; (stride + lead) * canvas.height as usize];
    for (src, dst) in canvas
        .pixels
        .chunks_exact(w.max(1))
        .zip(out.chunks_exact_mut((stride + lead).max(1)))
    {
        let dst = &mut dst[lead..];
        match depth {
            1 => {
                let mut chunks = src.chunks_exact(8);
                for (d, px) in dst.iter_mut().zip(&mut chunks) {
                    let mut b = 0u8;
                    for &p in px {
                        b = (b << 1) | local[p as usize];
                    }
                    *d = b;
                }
                let rest = chunks.remainder();
                if !rest.is_empty() {
                    let mut b = 0u8;
                    for &p in rest {
                        b = (b << 1) | local[p as usize];
                    }
                    dst[stride - 1] = b << (8 - rest.len());
                }
            }
            _ => {
                let d = depth as usize;
                for (i, &p) in src.iter().enumerate() {
                    let shift = 8 - d * (i % per_byte + 1);
                    dst[i / per_byte] |= local[p as usize] << shift;
                }
            }
        }
    }
    out
}

/// Encodes an indexed frame: PLTE lists only the inks that occur, in ascending global
/// order; no tRNS; filter None on every row (spec: snapcompact §7.9).
pub fn encode_indexed(
    canvas: &IndexedCanvas,
    compression: Compression,
) -> Result<Vec<u8>, SnapError> {
    let used = canvas.used_inks() | if canvas.pixels.is_empty() { 1 } else { 0 };
    let mut local = [0u8; 256];
    let mut n = 0u32;
    for (i, slot) in local.iter_mut().enumerate().take(PALETTE.len()) {
        if used & (1 << i) != 0 {
            *slot = n as u8;
            n += 1;
        }
    }
    let depth = bit_depth(n);
    let data = pack_rows(canvas, &local, depth, true);
    write_indexed(canvas.width, canvas.height, used, depth, &data, compression)
}

/// Writes an indexed PNG from scanlines that already carry their filter bytes (0).
/// `inks`: the global palette indices in the frame, as a bit set.
pub(crate) fn write_indexed(
    width: u32,
    height: u32,
    inks: u16,
    depth: u8,
    scanlines: &[u8],
    compression: Compression,
) -> Result<Vec<u8>, SnapError> {
    let plte: Vec<u8> = PALETTE
        .iter()
        .enumerate()
        .filter(|(i, _)| inks & (1 << i) != 0)
        .flat_map(|(_, rgb)| *rgb)
        .collect();
    let row = scanlines.len().checked_div(height as usize).unwrap_or(0);
    let idat = zlib_compress(scanlines, compression.effort(depth), row);
    Ok(png(width, height, depth, COLOR_INDEXED, &plte, &idat))
}

/// Encodes an RGB frame with adaptive filtering (spec: snapcompact §7.9).
pub fn encode_rgb(
    width: u32,
    height: u32,
    rgb: &[u8],
    compression: Compression,
) -> Result<Vec<u8>, SnapError> {
    let filtered = filter_adaptive(rgb, width as usize * 3, 3);
    let idat = zlib_compress(&filtered, compression.effort(8), width as usize * 3 + 1);
    Ok(png(width, height, 8, COLOR_RGB, &[], &idat))
}

const COLOR_RGB: u8 = 2;
const COLOR_INDEXED: u8 = 3;

/// A PNG file: signature, IHDR, PLTE (when given), one IDAT, IEND (PNG §5, §11).
fn png(width: u32, height: u32, depth: u8, color: u8, plte: &[u8], idat: &[u8]) -> Vec<u8> {
    let crc_table = crc_tables();
    let mut out = Vec::with_capacity(idat.len() + plte.len() + 57);
    out.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        let crc = crc32(&crc_table, &out[start..]);
        out.extend_from_slice(&crc.to_be_bytes());
    };
    let mut ihdr = [0u8; 13];
    ihdr[..4].copy_from_slice(&width.to_be_bytes());
    ihdr[4..8].copy_from_slice(&height.to_be_bytes());
    ihdr[8] = depth;
    ihdr[9] = color;
    // Compression 0 (deflate), filter method 0, no interlace.
    chunk(b"IHDR", &ihdr);
    if !plte.is_empty() {
        chunk(b"PLTE", plte);
    }
    chunk(b"IDAT", idat);
    chunk(b"IEND", &[]);
    out
}

/// CRC-32 tables for four bytes at a time (slicing-by-4), built per frame (1024 steps)
/// rather than stored in the module.
fn crc_tables() -> [[u32; 256]; 4] {
    let mut t = [[0u32; 256]; 4];
    for (n, entry) in t[0].iter_mut().enumerate() {
        let mut c = n as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *entry = c;
    }
    for n in 0..256 {
        for k in 1..4 {
            let c = t[k - 1][n];
            t[k][n] = (c >> 8) ^ t[0][(c & 0xFF) as usize];
        }
    }
    t
}

/// The CRC-32 of PNG §5.5 (ISO 3309).
fn crc32(t: &[[u32; 256]; 4], data: &[u8]) -> u32 {
    let mut c = !0u32;
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        c ^= u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        c = t[3][(c & 0xFF) as usize]
            ^ t[2][((c >> 8) & 0xFF) as usize]
            ^ t[1][((c >> 16) & 0xFF) as usize]
            ^ t[0][(c >> 24) as usize];
    }
    for &b in words.remainder() {
        c = t[0][((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
    }
    !c
}

/// PNG filtering with the per-row heuristic of PNG §12.8: each row takes the filter whose
/// output has the smallest sum of absolute values (as signed bytes). `bpp`: bytes per pixel.
fn filter_adaptive(data: &[u8], stride: usize, bpp: usize) -> Vec<u8> {
    let rows = data.len().checked_div(stride).unwrap_or(0);
    let mut out = Vec::with_capacity((stride + 1) * rows);
    let zero = vec![0u8; stride];
    let mut cand = vec![0u8; stride];
    let mut best = vec![0u8; stride];
    for y in 0..rows {
        let row = &data[y * stride..(y + 1) * stride];
        let prev = if y == 0 {
            &zero[..]
        } else {
            &data[(y - 1) * stride..y * stride]
        };
        let mut best_score = u64::MAX;
        let mut best_filter = 0u8;
        for filter in 0..5u8 {
            for i in 0..stride {
                let a = if i >= bpp { row[i - bpp] } else { 0 };
                let b = prev[i];
                let c = if i >= bpp { prev[i - bpp] } else { 0 };
                let predicted = predict(filter, a, b, c);
                cand[i] = row[i].wrapping_sub(predicted);
            }
            let score: u64 = cand.iter().map(|&v| (v as i8).unsigned_abs() as u64).sum();
            if score < best_score {
                best_score = score;
                best_filter = filter;
                std::mem::swap(&mut best, &mut cand);
            }
        }
        out.push(best_filter);
        out.extend_from_slice(&best);
    }
    out
}

/// The value PNG filter `filter` (0 None, 1 Sub, 2 Up, 3 Average, 4 Paeth) predicts from
/// the left (`a`), upper (`b`) and upper-left (`c`) bytes (PNG §9.2).
#[inline(always)]
fn predict(filter: u8, a: u8, b: u8, c: u8) -> u8 {
    match filter {
        0 => 0,
        1 => a,
        2 => b,
        3 => ((a as u16 + b as u16) / 2) as u8,
        _ => paeth(a, b, c),
    }
}

/// The Paeth predictor (PNG §9.4).
fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = a as i16 + b as i16 - c as i16;
    let (pa, pb, pc) = (
        (p - a as i16).abs(),
        (p - b as i16).abs(),
        (p - c as i16).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths() {
        assert_eq!(bit_depth(2), 1);
        assert_eq!(bit_depth(3), 2);
        assert_eq!(bit_depth(4), 2);
        assert_eq!(bit_depth(5), 4);
        assert_eq!(bit_depth(10), 4);
    }

    #[test]
    fn chunks_carry_png_crcs() {
        let t = crc_tables();
        assert_eq!(crc32(&t, b"IEND"), 0xAE42_6082);
        assert_eq!(crc32(&t, b"123456789"), 0xCBF4_3926);
        let png = png(1, 1, 1, COLOR_INDEXED, &[0, 0, 0], &[]);
        assert_eq!(&png[png.len() - 12..], b"\0\0\0\0IEND\xAE\x42\x60\x82");
    }

    #[test]
    fn adaptive_filter_round_trips() {
        let (w, h) = (5usize, 4usize);
        let rgb: Vec<u8> = (0..w * h * 3).map(|i| (i * 37 % 251) as u8).collect();
        let f = filter_adaptive(&rgb, w * 3, 3);
        let mut out = vec![0u8; rgb.len()];
        for y in 0..h {
            let kind = f[y * (w * 3 + 1)];
            for x in 0..w * 3 {
                let a = if x >= 3 { out[y * w * 3 + x - 3] } else { 0 };
                let b = if y > 0 { out[(y - 1) * w * 3 + x] } else { 0 };
                let c = if x >= 3 && y > 0 {
                    out[(y - 1) * w * 3 + x - 3]
                } else {
                    0
                };
                let p = predict(kind, a, b, c);
                out[y * w * 3 + x] = f[y * (w * 3 + 1) + 1 + x].wrapping_add(p);
            }
        }
        assert_eq!(out, rgb);
    }

    #[test]
    fn packs_msb_first() {
        let mut c = IndexedCanvas::new(10, 1);
        c.pixels[0] = 7;
        c.pixels[9] = 7;
        let mut local = [0u8; 256];
        local[7] = 1;
        assert_eq!(
            pack_rows(&c, &local, 1, false),
            vec![0b1000_0000, 0b0100_0000]
        );
        assert_eq!(
            pack_rows(&c, &local, 1, true),
            vec![0, 0b1000_0000, 0b0100_0000]
        );
        local[7] = 3;
        assert_eq!(
            pack_rows(&c, &local, 2, false),
            vec![0b1100_0000, 0, 0b0011_0000]
        );
    }
}
