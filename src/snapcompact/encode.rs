//! PNG encoding: indexed colour at the smallest bit depth that holds the frame's inks, or
//! RGB for stretched frames; deterministic bytes (spec: snapcompact §7.9).

use super::error::SnapError;
use super::raster::{IndexedCanvas, PALETTE};

/// Deflate effort. The bytes depend only on the frame and this setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Our deflate tuned for text frames ([`super::deflate`]): the default.
    #[default]
    Tuned,
    /// fdeflate's PNG-tuned fast mode: fast, frames about twice as large.
    Fast,
    /// zlib level 6.
    Balanced,
    /// zlib level 9, the reference's setting.
    High,
    /// An explicit zlib level 1–9.
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
                    "unknown compression {other:?}: use \"tuned\", \"fast\", \"balanced\", \"high\" or a \
                     level 1-9"
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

    fn deflate(self) -> png::DeflateCompression {
        match self {
            // Only reached for RGB frames, which take zlib level 6.
            Compression::Tuned => png::DeflateCompression::Level(6),
            Compression::Fast => png::DeflateCompression::FdeflateUltraFast,
            Compression::Balanced => png::DeflateCompression::Level(6),
            Compression::High => png::DeflateCompression::Level(9),
            Compression::Level(n) => png::DeflateCompression::Level(n.clamp(1, 9)),
        }
    }
}

fn encode_err(e: png::EncodingError) -> SnapError {
    SnapError::Encode(format!("PNG encoding failed: {e}"))
}

/// Bit depth for a palette of `n` colours: ≤ 2 → 1, ≤ 4 → 2, else 4 (spec: §7.9).
pub fn bit_depth(colours: u32) -> u8 {
    match colours {
        0..=2 => 1,
        3..=4 => 2,
        _ => 4,
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
    let mut out = Vec::with_capacity(scanlines.len() / 4 + 256);
    let mut enc = png::Encoder::new(&mut out, width, height);
    enc.set_color(png::ColorType::Indexed);
    enc.set_depth(match depth {
        1 => png::BitDepth::One,
        2 => png::BitDepth::Two,
        _ => png::BitDepth::Four,
    });
    enc.set_palette(plte);
    enc.set_deflate_compression(compression.deflate());
    enc.set_filter(png::Filter::NoFilter);
    let mut writer = enc.write_header().map_err(encode_err)?;
    if compression == Compression::Tuned {
        let idat =
            super::deflate::zlib_compress(scanlines, super::deflate::Effort::for_depth(depth));
        writer
            .write_chunk(png::chunk::IDAT, &idat)
            .map_err(encode_err)?;
        // The image data went in as a raw IDAT chunk, which `finish` does not count:
        // dropping the writer writes IEND (writing into a Vec cannot fail).
        drop(writer);
    } else {
        let stride = if height == 0 {
            0
        } else {
            scanlines.len() / height as usize
        };
        let mut raw = Vec::with_capacity(scanlines.len());
        for row in scanlines.chunks_exact(stride.max(1)) {
            raw.extend_from_slice(&row[1..]);
        }
        writer.write_image_data(&raw).map_err(encode_err)?;
        writer.finish().map_err(encode_err)?;
    }
    Ok(out)
}

/// Encodes an RGB frame with adaptive filtering (spec: snapcompact §7.9).
pub fn encode_rgb(
    width: u32,
    height: u32,
    rgb: &[u8],
    compression: Compression,
) -> Result<Vec<u8>, SnapError> {
    let mut out = Vec::with_capacity(rgb.len() / 8 + 256);
    let mut enc = png::Encoder::new(&mut out, width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_deflate_compression(compression.deflate());
    enc.set_filter(png::Filter::Adaptive);
    let mut writer = enc.write_header().map_err(encode_err)?;
    writer.write_image_data(rgb).map_err(encode_err)?;
    writer.finish().map_err(encode_err)?;
    Ok(out)
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
