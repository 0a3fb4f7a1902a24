//! PNG both ways. The generator's minimal encoder (8-bit RGB, a zlib stream of stored deflate
//! blocks) and a base64 encoder, enough to embed real, decodable images in generated sessions;
//! and the one decoder of the tests ([`decode`], [`decode_rgb`], [`filter_types`]): the `png`
//! crate with every checksum verified, chunk CRCs and the zlib Adler-32 alike.

use super::rng::Rng;
use std::io::{Cursor, Read as _};

pub use ::png::{BitDepth, ColorType};

/// Encodes an RGB image (`rgb.len() == width * height * 3`) as a PNG file: 8-bit RGB, rows
/// unfiltered, the zlib stream made of stored (uncompressed) deflate blocks, no ancillary chunks.
pub fn encode_rgb(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rgb.len() + rgb.len() / 4096 + 128);
    let mut encoder = ::png::Encoder::new(&mut out, width, height);
    encoder.set_color(ColorType::Rgb);
    encoder.set_depth(BitDepth::Eight);
    encoder.set_compression(::png::Compression::NoCompression);
    encoder.set_filter(::png::Filter::NoFilter);
    assert_eq!(
        rgb.len(),
        width as usize * height as usize * 3,
        "{width}×{height} RGB"
    );
    // Into memory and with the right number of bytes, writing cannot fail.
    let mut writer = encoder.write_header().expect("PNG header");
    writer.write_image_data(rgb).expect("PNG data");
    writer.finish().expect("PNG end");
    out
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let b0 = u32::from(c[0]);
        let b1 = c.get(1).map_or(0, |&b| u32::from(b));
        let b2 = c.get(2).map_or(0, |&b| u32::from(b));
        let n = (b0 << 16) | (b1 << 8) | b2;
        out.push(char::from(A[(n >> 18) as usize & 63]));
        out.push(char::from(A[(n >> 12) as usize & 63]));
        out.push(if c.len() > 1 {
            char::from(A[(n >> 6) as usize & 63])
        } else {
            '='
        });
        out.push(if c.len() > 2 {
            char::from(A[n as usize & 63])
        } else {
            '='
        });
    }
    out
}

/// A small synthetic picture (gradients, checkers, stripes, rings or a fake UI
/// screenshot) of `w × h` pixels, returned as PNG bytes.
pub fn pattern_png(rng: &mut Rng, w: u32, h: u32) -> Vec<u8> {
    let kind = rng.below(5);
    let c1 = [
        rng.below(256) as u8,
        rng.below(256) as u8,
        rng.below(256) as u8,
    ];
    let c2 = [
        rng.below(256) as u8,
        rng.below(256) as u8,
        rng.below(256) as u8,
    ];
    let cell = rng.range(4, 16) as u32;
    let mut rgb = Vec::with_capacity((w * h * 3) as usize);
    let (cx, cy) = (w as i64 / 2, h as i64 / 2);
    for y in 0..h {
        for x in 0..w {
            let px = match kind {
                0 => {
                    let t = (x * 255 / w.max(1)) as u8;
                    let u = (y * 255 / h.max(1)) as u8;
                    [t, u, c1[2] ^ t]
                }
                1 => {
                    if ((x / cell) + (y / cell)).is_multiple_of(2) {
                        c1
                    } else {
                        c2
                    }
                }
                2 => {
                    if ((x + y) / cell).is_multiple_of(3) {
                        c1
                    } else {
                        c2
                    }
                }
                3 => {
                    let dx = x as i64 - cx;
                    let dy = y as i64 - cy;
                    let d = ((dx * dx + dy * dy) as u64) / u64::from(cell * cell).max(1);
                    if d.is_multiple_of(2) {
                        c1
                    } else {
                        c2
                    }
                }
                _ => {
                    // "Screenshot": title bar, sidebar, text-like lines.
                    if y < h / 10 {
                        [40, 44, 52]
                    } else if x < w / 5 {
                        [33, 37, 43]
                    } else if (y / 6) % 2 == 0 && (x * 7 + y * 13) % 23 < 17 && y % 6 < 3 {
                        c1
                    } else {
                        [250, 250, 250]
                    }
                }
            };
            rgb.extend_from_slice(&px);
        }
    }
    encode_rgb(w, h, &rgb)
}

/// A decoded PNG: the header facts and the rows of samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    /// The colour type and bit depth of `data`: as stored by [`decode`], 8-bit RGB by
    /// [`decode_rgb`].
    pub color: ColorType,
    pub depth: BitDepth,
    /// The PLTE entries (indexed images).
    pub palette: Vec<[u8; 3]>,
    /// Bytes per row of `data`.
    pub line_size: usize,
    /// The unfiltered rows.
    pub data: Vec<u8>,
}

impl Image {
    /// The sample at (`x`, `y`) of a one-channel image (indexed or grey); depths under 8 bits
    /// are unpacked.
    pub fn sample(&self, x: u32, y: u32) -> u8 {
        let bits = self.depth as usize;
        let row = &self.data[y as usize * self.line_size..][..self.line_size];
        let bit = x as usize * bits;
        let mask = ((1u16 << bits) - 1) as u8;
        (row[bit / 8] >> (8 - bits - bit % 8)) & mask
    }

    /// Every sample of a one-channel image, row by row.
    pub fn samples(&self) -> Vec<u8> {
        (0..self.height)
            .flat_map(|y| (0..self.width).map(move |x| self.sample(x, y)))
            .collect()
    }
}

fn read(bytes: &[u8], transformations: ::png::Transformations) -> Result<Image, String> {
    let mut options = ::png::DecodeOptions::default();
    options.set_ignore_adler32(false);
    options.set_ignore_crc(false);
    let mut decoder = ::png::Decoder::new_with_options(Cursor::new(bytes), options);
    decoder.set_transformations(transformations);
    let mut reader = decoder
        .read_info()
        .map_err(|e| format!("PNG header: {e}"))?;
    let palette = reader
        .info()
        .palette
        .as_ref()
        .map(|p| p.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
        .unwrap_or_default();
    let size = reader.output_buffer_size().ok_or("PNG: image too large")?;
    let mut data = vec![0; size];
    let frame = reader
        .next_frame(&mut data)
        .map_err(|e| format!("PNG data: {e}"))?;
    reader.finish().map_err(|e| format!("PNG end: {e}"))?;
    data.truncate(frame.buffer_size());
    Ok(Image {
        width: frame.width,
        height: frame.height,
        color: frame.color_type,
        depth: frame.bit_depth,
        palette,
        line_size: frame.line_size,
        data,
    })
}

/// Decodes a PNG as stored: palette indices and bit depths as they are.
pub fn decode(bytes: &[u8]) -> Result<Image, String> {
    read(bytes, ::png::Transformations::IDENTITY)
}

/// Decodes a PNG to 8-bit RGB: palette entries looked up, grey repeated, alpha dropped.
pub fn decode_rgb(bytes: &[u8]) -> Result<Image, String> {
    let mut image = read(bytes, ::png::Transformations::EXPAND)?;
    if image.depth != BitDepth::Eight {
        return Err(format!("PNG: {:?} samples after expansion", image.depth));
    }
    image.data = match image.color {
        ColorType::Rgb => image.data,
        ColorType::Rgba => image
            .data
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
        ColorType::Grayscale => image.data.iter().flat_map(|&g| [g, g, g]).collect(),
        ColorType::GrayscaleAlpha => image
            .data
            .chunks_exact(2)
            .flat_map(|p| [p[0], p[0], p[0]])
            .collect(),
        ColorType::Indexed => return Err("PNG: palette not expanded".into()),
    };
    image.color = ColorType::Rgb;
    image.line_size = image.width as usize * 3;
    Ok(image)
}

/// The filter type byte that starts each row of a (non-interlaced) PNG, read from its zlib
/// stream: the decoder undoes the filters, so it cannot tell them.
pub fn filter_types(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let reader = ::png::Decoder::new(Cursor::new(bytes))
        .read_info()
        .map_err(|e| format!("PNG header: {e}"))?;
    let stride = reader.info().raw_row_length();
    let mut zlib = Vec::new();
    let mut at = 8;
    while let Some(head) = bytes.get(at..at + 8) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let data = bytes
            .get(at + 8..at + 8 + len)
            .ok_or("PNG: truncated chunk")?;
        if &head[4..] == b"IDAT" {
            zlib.extend_from_slice(data);
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&zlib[..])
        .read_to_end(&mut raw)
        .map_err(|e| format!("PNG: inflate: {e}"))?;
    Ok(raw.chunks(stride).map(|row| row[0]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_known_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    /// Our output reads back, checksums verified, as the pixels we wrote.
    #[test]
    fn encoded_images_decode_to_their_pixels() {
        let mut rng = Rng::new(3);
        // 256 × 256 needs several stored blocks (a block holds at most 65,535 bytes).
        for (w, h) in [(32u32, 32u32), (100, 37), (256, 256), (1, 1)] {
            let rgb: Vec<u8> = (0..w * h * 3).map(|_| rng.below(256) as u8).collect();
            let png = encode_rgb(w, h, &rgb);
            let image = decode(&png).expect("decodes");
            assert_eq!(
                (image.width, image.height, image.color, image.depth),
                (w, h, ColorType::Rgb, BitDepth::Eight)
            );
            assert_eq!(image.data, rgb, "{w}x{h}");
            assert_eq!(
                filter_types(&png).expect("zlib stream"),
                vec![0; h as usize]
            );
            let picture = pattern_png(&mut rng, w, h);
            assert_eq!(decode_rgb(&picture).expect("decodes").data.len(), rgb.len());
        }
    }

    #[test]
    fn a_corrupt_checksum_is_refused() {
        let mut png = encode_rgb(2, 2, &[7; 12]);
        let adler = png.len() - 12 - 4 - 4; // IEND chunk (12), IDAT CRC (4), Adler-32 (4)
        png[adler] ^= 1;
        assert!(decode(&png).is_err(), "Adler-32");
        let mut png = encode_rgb(2, 2, &[7; 12]);
        png[29] ^= 1; // IHDR CRC
        assert!(decode(&png).is_err(), "chunk CRC");
    }

    #[test]
    fn samples_unpack_low_bit_depths() {
        let image = Image {
            width: 5,
            height: 2,
            color: ColorType::Indexed,
            depth: BitDepth::Two,
            palette: vec![[0; 3]; 4],
            line_size: 2,
            data: vec![0b00_01_10_11, 0b01_00_00_00, 0b11_10_01_00, 0b10_00_00_00],
        };
        assert_eq!(image.samples(), [0, 1, 2, 3, 1, 3, 2, 1, 0, 2]);
    }
}
