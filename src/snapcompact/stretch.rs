//! The stretch path: a page laid out on the font's natural cell, then resampled to the
//! shape's cell with a separable Lanczos3 filter, PIL conventions (spec: snapcompact §7.7).

use super::raster::{IndexedCanvas, PALETTE};

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let px = std::f64::consts::PI * x;
        px.sin() / px
    }
}

fn lanczos3(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else if x.abs() >= 3.0 {
        0.0
    } else {
        sinc(x) * sinc(x / 3.0)
    }
}

/// For every output sample: the first source tap and the normalised weights.
fn weights(src: usize, dst: usize) -> Vec<(usize, Vec<f32>)> {
    let scale = src as f64 / dst as f64;
    let filter_scale = scale.max(1.0);
    let support = 3.0 * filter_scale;
    (0..dst)
        .map(|i| {
            let centre = (i as f64 + 0.5) * scale;
            let lo = ((centre - support).trunc().max(0.0)) as usize;
            let hi = ((centre + support).ceil() as usize).min(src);
            let mut w: Vec<f64> = (lo..hi)
                .map(|x| lanczos3((x as f64 + 0.5 - centre) / filter_scale))
                .collect();
            let sum: f64 = w.iter().sum();
            if sum != 0.0 {
                for v in &mut w {
                    *v /= sum;
                }
            }
            (lo, w.into_iter().map(|v| v as f32).collect())
        })
        .collect()
}

/// Resamples a palette canvas to `dst_w × dst_h` RGB bytes (horizontal pass, then
/// vertical; rounded and clamped to 0–255).
pub fn lanczos_rgb(src: &IndexedCanvas, dst_w: u32, dst_h: u32) -> Vec<u8> {
    let (sw, sh) = (src.width as usize, src.height as usize);
    let (dw, dh) = (dst_w as usize, dst_h as usize);
    if sw == 0 || sh == 0 || dw == 0 || dh == 0 {
        return vec![255; dw * dh * 3];
    }
    let palette: Vec<[f32; 3]> = PALETTE
        .iter()
        .map(|c| [c[0] as f32, c[1] as f32, c[2] as f32])
        .collect();
    // Horizontal pass: sh rows of dw RGB floats.
    let hw = weights(sw, dw);
    let mut mid = vec![0f32; dw * sh * 3];
    for y in 0..sh {
        let row = &src.pixels[y * sw..(y + 1) * sw];
        for (x, (lo, w)) in hw.iter().enumerate() {
            let mut acc = [0f32; 3];
            for (k, &wk) in w.iter().enumerate() {
                let c = palette[row[lo + k] as usize % palette.len()];
                acc[0] += c[0] * wk;
                acc[1] += c[1] * wk;
                acc[2] += c[2] * wk;
            }
            let at = (y * dw + x) * 3;
            mid[at..at + 3].copy_from_slice(&acc);
        }
    }
    // Vertical pass.
    let vw = weights(sh, dh);
    let mut out = vec![0u8; dw * dh * 3];
    for (y, (lo, w)) in vw.iter().enumerate() {
        for x in 0..dw * 3 {
            let mut acc = 0f32;
            for (k, &wk) in w.iter().enumerate() {
                acc += mid[(lo + k) * dw * 3 + x] * wk;
            }
            out[y * dw * 3 + x] = acc.round().clamp(0.0, 255.0) as u8;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_sum_to_one() {
        for (src, dst) in [(8, 6), (16, 12), (6, 8), (1568, 1176)] {
            for (_, w) in weights(src, dst) {
                let s: f32 = w.iter().sum();
                assert!((s - 1.0).abs() < 1e-4, "{src}->{dst}: {s}");
            }
        }
    }

    #[test]
    fn white_stays_white() {
        let c = IndexedCanvas::new(16, 8);
        let out = lanczos_rgb(&c, 12, 6);
        assert!(out.iter().all(|&v| v == 255));
    }
}
