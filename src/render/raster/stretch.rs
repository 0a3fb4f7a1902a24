//! The stretch path: a page laid out on the font's natural cell, then resampled to the
//! shape's cell with a separable Lanczos3 filter, PIL conventions (spec: snapcompact §7.7).

use crate::render::raster::{IndexedCanvas, PALETTE};

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let px = std::f64::consts::PI * x;
        sin(px) / px
    }
}

/// `f64::sin` as the WebAssembly build's libm (a port of musl's) computes it, bit for bit,
/// for |x| < 2^20·π/2 — without its reduction for huge arguments, which the module would
/// otherwise carry (our arguments stay below 3π). Native builds compute the same values.
fn sin(x: f64) -> f64 {
    let ix = (x.to_bits() >> 32) as u32 & 0x7fff_ffff;
    if ix <= 0x3fe9_21fb {
        // |x| <~ π/4
        if ix < 0x3e50_0000 {
            return x;
        }
        return k_sin(x, 0.0, false);
    }
    let (n, y0, y1) = rem_pio2(x);
    match n & 3 {
        0 => k_sin(y0, y1, true),
        1 => k_cos(y0, y1),
        2 => -k_sin(y0, y1, true),
        _ => -k_cos(y0, y1),
    }
}

/// musl's `__sin` on [-π/4, π/4]: `y` is the tail of `x`. (Constants as musl's bit
/// patterns.)
fn k_sin(x: f64, y: f64, tail: bool) -> f64 {
    const S1: f64 = f64::from_bits(0xBFC5_5555_5555_5549);
    const S2: f64 = f64::from_bits(0x3F81_1111_1110_F8A6);
    const S3: f64 = f64::from_bits(0xBF2A_01A0_19C1_61D5);
    const S4: f64 = f64::from_bits(0x3EC7_1DE3_57B1_FE7D);
    const S5: f64 = f64::from_bits(0xBE5A_E5E6_8A2B_9CEB);
    const S6: f64 = f64::from_bits(0x3DE5_D93A_5ACF_D57C);
    let z = x * x;
    let w = z * z;
    let r = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
    let v = z * x;
    if !tail {
        x + v * (S1 + z * r)
    } else {
        x - ((z * (0.5 * y - v * r) - y) - v * S1)
    }
}

/// musl's `__cos` on [-π/4, π/4].
fn k_cos(x: f64, y: f64) -> f64 {
    const C1: f64 = f64::from_bits(0x3FA5_5555_5555_554C);
    const C2: f64 = f64::from_bits(0xBF56_C16C_16C1_5177);
    const C3: f64 = f64::from_bits(0x3EFA_01A0_19CB_1590);
    const C4: f64 = f64::from_bits(0xBE92_7E4F_809C_52AD);
    const C5: f64 = f64::from_bits(0x3E21_EE9E_BDB4_B1C4);
    const C6: f64 = f64::from_bits(0xBDA8_FAE9_BE88_38D4);
    let z = x * x;
    let w = z * z;
    let r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + (z * r - x * y))
}

/// musl's `__rem_pio2` for |x| < 2^20·π/2: `x` − n·π/2 as a head and a tail, and n.
fn rem_pio2(x: f64) -> (i32, f64, f64) {
    const TO_INT: f64 = 1.5 / f64::EPSILON;
    const INV_PIO2: f64 = f64::from_bits(0x3FE4_5F30_6DC9_C883);
    const PIO2_1: f64 = f64::from_bits(0x3FF9_21FB_5440_0000);
    const PIO2_1T: f64 = f64::from_bits(0x3DD0_B461_1A62_6331);
    const PIO2_2: f64 = f64::from_bits(0x3DD0_B461_1A60_0000);
    const PIO2_2T: f64 = f64::from_bits(0x3BA3_198A_2E03_7073);
    const PIO2_3: f64 = f64::from_bits(0x3BA3_198A_2E00_0000);
    const PIO2_3T: f64 = f64::from_bits(0x397B_839A_2520_49C1);
    let sign = x.is_sign_negative();
    let ix = (x.to_bits() >> 32) as u32 & 0x7fff_ffff;
    let medium = || {
        let f_n = x * INV_PIO2 + TO_INT - TO_INT;
        let n = f_n as i32;
        let mut r = x - f_n * PIO2_1;
        let mut w = f_n * PIO2_1T;
        let mut y0 = r - w;
        let ex = (ix >> 20) as i32;
        let ey = (y0.to_bits() >> 52) as i32 & 0x7ff;
        if ex - ey > 16 {
            let t = r;
            w = f_n * PIO2_2;
            r = t - w;
            w = f_n * PIO2_2T - ((t - r) - w);
            y0 = r - w;
            let ey = (y0.to_bits() >> 52) as i32 & 0x7ff;
            if ex - ey > 49 {
                let t = r;
                w = f_n * PIO2_3;
                r = t - w;
                w = f_n * PIO2_3T - ((t - r) - w);
                y0 = r - w;
            }
        }
        (n, y0, (r - y0) - w)
    };
    // Near a multiple of π/2 up to 9π/4: one subtraction of k·π/2 (with its tail), unless
    // the multiple cancels too many bits.
    let k = if ix <= 0x400f_6a7a {
        if ix & 0xfffff == 0x921fb {
            return medium();
        }
        if ix <= 0x4002_d97c {
            1
        } else {
            2
        }
    } else if ix <= 0x401c_463b {
        if ix <= 0x4015_fdbc {
            if ix == 0x4012_d97c {
                return medium();
            }
            3
        } else {
            if ix == 0x4019_21fb {
                return medium();
            }
            4
        }
    } else {
        return medium();
    };
    let kf = k as f64;
    if !sign {
        let z = x - kf * PIO2_1;
        let y0 = z - kf * PIO2_1T;
        (k, y0, (z - y0) - kf * PIO2_1T)
    } else {
        let z = x + kf * PIO2_1;
        let y0 = z + kf * PIO2_1T;
        (-k, y0, (z - y0) + kf * PIO2_1T)
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
    fn sin_matches_the_reference_values() {
        // musl's results (libm's own tests), and agreement with the platform's sin to an ulp.
        assert_eq!(
            sin(f64::from_bits(0x4009_21fb_000f_d5dd)).to_bits(),
            0x3ea5_0d15_ced1_a4a2
        );
        for i in -3000..=3000 {
            let x = i as f64 * std::f64::consts::PI / 1000.0;
            let (a, b) = (sin(x), x.sin());
            assert!(
                (a - b).abs() <= f64::EPSILON * b.abs().max(1e-300) * 2.0,
                "{x}"
            );
        }
    }

    #[test]
    fn white_stays_white() {
        let c = IndexedCanvas::new(16, 8);
        let out = lanczos_rgb(&c, 12, 6);
        assert!(out.iter().all(|&v| v == 255));
    }
}
