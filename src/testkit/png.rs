//! A minimal PNG encoder (8-bit RGB, zlib stream of stored deflate blocks) and a base64
//! encoder, enough to embed real, decodable images in generated sessions.

use super::rng::Rng;

fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    for (n, slot) in table.iter_mut().enumerate() {
        let mut c = n as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *slot = c;
    }
    table
}

/// CRC-32 (IEEE) as used by PNG chunks.
pub fn crc32(parts: &[&[u8]]) -> u32 {
    let table = crc_table();
    let mut c = 0xFFFF_FFFFu32;
    for part in parts {
        for &b in *part {
            c = table[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
        }
    }
    c ^ 0xFFFF_FFFF
}

/// Adler-32 as used by zlib.
pub fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= 65_521;
        b %= 65_521;
    }
    (b << 16) | a
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32(&[kind, data]).to_be_bytes());
}

/// Encodes an RGB image (`rgb.len() == width * height * 3`) as a PNG file.
pub fn encode_rgb(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let row = width as usize * 3;
    let mut raw = Vec::with_capacity((row + 1) * height as usize);
    for y in 0..height as usize {
        raw.push(0); // filter: none
        let start = (y * row).min(rgb.len());
        let end = (start + row).min(rgb.len());
        raw.extend_from_slice(&rgb[start..end]);
        raw.resize(raw.len() + row - (end - start), 0);
    }
    // zlib: CMF/FLG for deflate with a 32K window, no preset dictionary, "fastest".
    let mut z = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    if blocks.is_empty() {
        z.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    for (i, block) in blocks.iter().enumerate() {
        z.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        z.extend_from_slice(&len.to_le_bytes());
        z.extend_from_slice(&(!len).to_le_bytes());
        z.extend_from_slice(block);
    }
    z.extend_from_slice(&adler32(&raw).to_be_bytes());

    let mut out = Vec::with_capacity(z.len() + 64);
    out.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit, RGB, deflate, filter 0, no interlace
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &z);
    chunk(&mut out, b"IEND", &[]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums() {
        assert_eq!(crc32(&[b"IEND"]), 0xAE42_6082);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(crc32(&[b"123456789"]), 0xCBF4_3926);
    }

    #[test]
    fn base64_known_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    /// Decodes our own output with a straightforward reader to prove it is a valid PNG.
    #[test]
    fn png_is_decodable() {
        let mut rng = Rng::new(3);
        for (w, h) in [(32u32, 32u32), (100, 37), (256, 256)] {
            let png = pattern_png(&mut rng, w, h);
            assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
            let mut pos = 8;
            let mut idat = Vec::new();
            let mut seen_end = false;
            while pos < png.len() {
                let len = u32::from_be_bytes([png[pos], png[pos + 1], png[pos + 2], png[pos + 3]])
                    as usize;
                let kind = &png[pos + 4..pos + 8];
                let data = &png[pos + 8..pos + 8 + len];
                let crc = u32::from_be_bytes([
                    png[pos + 8 + len],
                    png[pos + 9 + len],
                    png[pos + 10 + len],
                    png[pos + 11 + len],
                ]);
                assert_eq!(crc, crc32(&[kind, data]));
                if kind == b"IHDR" {
                    assert_eq!(&data[..4], &w.to_be_bytes());
                    assert_eq!(&data[4..8], &h.to_be_bytes());
                }
                if kind == b"IDAT" {
                    idat.extend_from_slice(data);
                }
                if kind == b"IEND" {
                    seen_end = true;
                }
                pos += 12 + len;
            }
            assert!(seen_end);
            // Inflate stored blocks.
            assert_eq!(idat[0] & 0x0f, 8);
            assert_eq!((u16::from(idat[0]) << 8 | u16::from(idat[1])) % 31, 0);
            let mut p = 2;
            let mut raw = Vec::new();
            loop {
                let last = idat[p] & 1;
                assert_eq!(idat[p] & 0b110, 0);
                let len = u16::from_le_bytes([idat[p + 1], idat[p + 2]]) as usize;
                let nlen = u16::from_le_bytes([idat[p + 3], idat[p + 4]]) as usize;
                assert_eq!(len ^ 0xffff, nlen);
                raw.extend_from_slice(&idat[p + 5..p + 5 + len]);
                p += 5 + len;
                if last == 1 {
                    break;
                }
            }
            let ad = u32::from_be_bytes([idat[p], idat[p + 1], idat[p + 2], idat[p + 3]]);
            assert_eq!(ad, adler32(&raw));
            assert_eq!(raw.len(), (w as usize * 3 + 1) * h as usize);
        }
    }
}
