//! The frames' colours: the global palette every frame indexes into, and the PNG bit depth a
//! frame's ink count needs. The rasterizer packs pixels at that depth and the encoder writes it,
//! so both read it here (spec: snapcompact §3.4, §7.9).

/// The global palette (spec: snapcompact §3.4). Indices matter: tests speak in them.
pub const PALETTE: [[u8; 3]; 10] = [
    [255, 255, 255], // 0 background
    [109, 2, 2],     // 1 sentence hue red
    [109, 53, 2],    // 2 amber
    [24, 109, 2],    // 3 green
    [2, 109, 109],   // 4 teal
    [2, 32, 109],    // 5 blue
    [75, 2, 109],    // 6 violet
    [0, 0, 0],       // 7 black ink, newline block
    [255, 247, 194], // 8 pale band behind repeated line copies
    [128, 128, 128], // 9 dim ink, anti-alias fringe
];
pub const BACKGROUND: u8 = 0;
pub const BLACK: u8 = 7;
pub const BAND: u8 = 8;
pub const DIM: u8 = 9;

/// Bit depth for a palette of `n` colours: ≤ 2 → 1, ≤ 4 → 2, else 4 (spec: §7.9).
pub fn bit_depth(colours: u32) -> u8 {
    match colours {
        0..=2 => 1,
        3..=4 => 2,
        _ => 4,
    }
}
