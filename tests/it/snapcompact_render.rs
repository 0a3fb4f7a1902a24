//! snapcompact rendering: the render and renderMany cases of spec §11 (23–35), the native
//! renderer tests the spec lists as worth porting, the fallback-font cases (3, 10, 18, 21),
//! and property tests over random text. Frames are decoded and checked in global palette
//! indices (spec §3.4), the way the reference's tests read them.

use crate::common;
use ctxfold::render::raster::PALETTE;
use ctxfold::render::{
    frame_count, normalize, page_texts, render_frames, render_page, resolve_shape,
    resolve_shape_for_text, scan_renderability, Compression, FallbackFont, FallbackFonts, FontName,
    Frame, ModelTarget, RenderOptions, Shape, ShapeVariant, SnapError,
};
use ctxfold_testkit::png::{self, BitDepth, ColorType};
use std::path::Path;

fn unifont() -> FallbackFonts {
    common::fallbacks()
}

fn none() -> FallbackFonts {
    FallbackFonts::new()
}

fn shape(name: &str) -> Shape {
    resolve_shape(ModelTarget::default(), ShapeVariant::parse(name))
}

/// Options at `size` px without the 64 px floor (the reference's tests predate it).
fn at(shape: Shape, size: u32) -> RenderOptions {
    let mut o = RenderOptions::new(shape);
    o.size = Some(size);
    o.min_height = 0;
    o
}

/// A decoded frame: its header facts and every pixel as a global palette index (RGB frames:
/// no pixels).
struct Decoded {
    width: u32,
    height: u32,
    color: ColorType,
    depth: BitDepth,
    palette: Vec<[u8; 3]>,
    /// Global indices (indexed frames only).
    px: Vec<u8>,
}

impl Decoded {
    fn at(&self, x: u32, y: u32) -> u8 {
        self.px[(y * self.width + x) as usize]
    }
    fn has(&self, index: u8) -> bool {
        self.px.contains(&index)
    }
}

fn decode(frame: &Frame) -> Decoded {
    let image = png::decode(&frame.png).expect("the frame decodes");
    assert_eq!((image.width, image.height), (frame.width, frame.height));
    let mut px = Vec::new();
    if image.color == ColorType::Indexed {
        let global: Vec<u8> = image
            .palette
            .iter()
            .map(|c| {
                PALETTE
                    .iter()
                    .position(|p| p == c)
                    .expect("palette colour is a global one") as u8
            })
            .collect();
        px = image
            .samples()
            .iter()
            .map(|&v| global[v as usize])
            .collect();
    }
    Decoded {
        width: image.width,
        height: image.height,
        color: image.color,
        depth: image.depth,
        palette: image.palette,
        px,
    }
}

/// Every row of the zlib stream is filtered None (spec §7.9).
fn filter_bytes_are_none(frame: &Frame) -> bool {
    png::filter_types(&frame.png)
        .expect("the frame's zlib stream")
        .iter()
        .all(|&f| f == 0)
}

// --------------------------------------------------------------------------------------------
// Spec §11 render cases

#[test]
fn case_23_legacy_5x8_sentence_hues() {
    let o = at(shape("5x8-sent"), 320);
    let g = o.geometry();
    assert_eq!((g.cols, g.rows, g.capacity), (64, 40, 2560));
    let frames =
        render_frames("First sentence here. Second one differs.", &o, &none()).expect("render");
    assert_eq!(frames.len(), 1);
    let f = &frames[0];
    assert_eq!((f.cols, f.rows, f.chars), (64, 40, 40));
    let d = decode(f);
    assert_eq!((d.width, d.height, d.color), (320, 8, ColorType::Indexed));
    assert!(d.has(1) && d.has(2) && !d.has(3));
    assert!(filter_bytes_are_none(f));
}

#[test]
fn case_24_repeat_rows_have_bands() {
    let o = at(shape("8x8r-bw"), 320);
    assert_eq!(o.geometry().capacity, 800);
    let f = &render_frames("Hello world. Again.", &o, &none()).expect("render")[0];
    let d = decode(f);
    assert_eq!(d.color, ColorType::Indexed);
    assert!(d.has(7) && d.has(8) && !d.has(1));
}

#[test]
fn case_25_anthropic_preset_is_plain_black() {
    let s = resolve_shape(
        ModelTarget {
            id: None,
            api: Some("anthropic-messages"),
        },
        None,
    );
    let o = at(s, 320);
    assert_eq!(o.geometry().capacity, 580);
    let f =
        &render_frames("Reading the films of the archive. Again.", &o, &none()).expect("render")[0];
    let d = decode(f);
    assert!(d.has(7) && !d.has(9) && !d.has(8) && !d.has(1));
    // bw → 1 bit, 2 colours.
    assert_eq!((d.depth, d.palette.len()), (BitDepth::One, 2));
}

#[test]
fn case_26_stopword_dim() {
    let f = &render_frames(
        "Reading the films of the archive. Again.",
        &at(shape("6x12-dim"), 320),
        &none(),
    )
    .expect("render")[0];
    let d = decode(f);
    assert!(d.has(7) && d.has(9));
    assert_eq!((d.depth, d.palette.len()), (BitDepth::Two, 3));
}

#[test]
fn case_27_squeezed_6x6_is_rgb() {
    let o = at(shape("6x6u-sent"), 320);
    assert_eq!(o.geometry().cols, 53);
    let f = &render_frames("Squeezed cells. Lanczos resample.", &o, &none()).expect("render")[0];
    let d = decode(f);
    assert_eq!(d.color, ColorType::Rgb);
    assert_eq!((d.width, d.height), (320, 6));
}

#[test]
fn case_28_unifont_frame() {
    let o = at(shape("silver16-bw"), 64);
    let f = &render_frames("你好안녕", &o, &unifont()).expect("render")[0];
    assert_eq!((f.cols, f.chars, f.width, f.height), (4, 4, 64, 16));
    // Our fallback is a bitmap font: its frames stay indexed (the reference's TTF was RGB).
    assert_eq!(decode(f).color, ColorType::Indexed);
    // Without a registered fallback font the shape cannot print.
    assert!(matches!(
        render_frames("你好", &o, &none()),
        Err(SnapError::Font(_))
    ));
}

#[test]
fn case_29_wide_glyph_spans_two_cells() {
    let o = at(shape("8on16-bw"), 64);
    let f = &render_frames("你", &o, &unifont()).expect("render")[0];
    assert_eq!(f.chars, 1);
    let d = decode(f);
    assert_eq!(d.color, ColorType::Indexed);
    let ink_right = (0..16).any(|y| (8..16).any(|x| d.at(x, y) == 7));
    assert!(ink_right, "the glyph reaches into its second cell");
}

#[test]
fn case_30_overflow_is_cut_at_capacity() {
    let o = at(shape("5x8-sent"), 320);
    let cap = o.geometry().capacity as usize;
    let f = render_page("x".repeat(cap + 500), &o, &none()).expect("render");
    assert_eq!(f.chars as usize, cap);
}

#[test]
fn case_31_newline_block_fills_its_cell() {
    let o = at(shape("5x8-sent"), 320);
    let f = render_page("a\u{2588}b".into(), &o, &none()).expect("render");
    assert_eq!(f.chars, 3);
    let d = decode(&f);
    for y in 0..8 {
        for x in 5..10 {
            assert_eq!(d.at(x, y), 7, "({x},{y})");
        }
    }
}

#[test]
fn case_32_33_frame_counts() {
    let o = at(shape("5x8-sent"), 320);
    assert!(render_frames("", &o, &none()).expect("render").is_empty());
    assert!(render_frames(" \n\t ", &o, &none())
        .expect("render")
        .is_empty());
    assert_eq!(frame_count("", &o, &none()), Ok(0));
    assert_eq!(
        render_frames("hello world", &o, &none())
            .expect("render")
            .len(),
        1
    );
    let cap = o.geometry().capacity as usize;
    let text = "x".repeat(2 * cap + 10);
    assert_eq!(render_frames(&text, &o, &none()).expect("render").len(), 3);
    assert_eq!(frame_count(&text, &o, &none()), Ok(3));
}

#[test]
fn case_34_wide_pagination() {
    let fonts = unifont();
    let o = at(shape("8on16-bw"), 64);
    assert_eq!(o.geometry().capacity, 32);
    assert_eq!(frame_count(&"你".repeat(16), &o, &fonts), Ok(1));
    assert_eq!(frame_count(&"你".repeat(17), &o, &fonts), Ok(2));
    assert_eq!(frame_count(&"a".repeat(32), &o, &fonts), Ok(1));
    let s = at(shape("unifont16-bw"), 64);
    assert_eq!(s.geometry().capacity, 16);
    assert_eq!(frame_count(&"你".repeat(16), &s, &fonts), Ok(1));
}

#[test]
fn case_35_max_frames() {
    let s = resolve_shape(
        ModelTarget {
            id: None,
            api: Some("openai-responses"),
        },
        None,
    );
    let mut o = at(s, 320);
    o.max_frames = Some(2);
    let text = "x".repeat(3 * o.geometry().capacity as usize);
    assert_eq!(render_frames(&text, &o, &none()).expect("render").len(), 2);
    assert_eq!(frame_count(&text, &o, &none()), Ok(2));
}

// --------------------------------------------------------------------------------------------
// Native renderer tests (spec §11, "worth porting")

#[test]
fn bw_inks_only_black_and_overflow_stays_in_bounds() {
    let o = at(shape("8x13-bw"), 64);
    let f = render_page("Hi. Ok. ".repeat(20), &o, &none()).expect("render");
    let d = decode(&f);
    assert!(d.px.iter().all(|&p| p == 0 || p == 7));
}

#[test]
fn toggles_change_ink_not_cells() {
    let o = at(shape("8x13-bw"), 64);
    let plain = decode(&render_page("abc def".into(), &o, &none()).expect("render"));
    let dimmed = decode(&render_page("abc \u{e}def\u{f}".into(), &o, &none()).expect("render"));
    for (a, b) in plain.px.iter().zip(&dimmed.px) {
        assert_eq!(*a != 0, *b != 0, "same pixels inked");
    }
    assert!(dimmed.has(9) && dimmed.has(7));
}

#[test]
fn repeat_copies_are_identical_over_the_band() {
    let o = at(shape("8x8r-sent"), 64);
    let d = decode(&render_page("Hi. Ok.".into(), &o, &none()).expect("render"));
    assert_eq!(d.height, 16);
    for y in 0..8 {
        for x in 0..64 {
            let (a, b) = (d.at(x, y), d.at(x, y + 8));
            if a == 0 {
                assert_eq!(b, 8, "band behind the copy at ({x},{y})");
            } else {
                assert_eq!(a, b, "copy equals original at ({x},{y})");
            }
        }
    }
}

#[test]
fn block_advances_the_hue() {
    let o = at(shape("8x8u-sent"), 64);
    let d = decode(&render_page("A.\u{2588}B".into(), &o, &none()).expect("render"));
    // The block itself is black in the 8x8 cell at x 16..24; B (after ". █") takes hue 2.
    assert!((16..24).all(|x| (0..8).all(|y| d.at(x, y) == 7)));
    assert!((24..32).any(|x| (0..8).any(|y| d.at(x, y) == 2)));
    assert!((0..8).any(|x| (0..8).any(|y| d.at(x, y) == 1)));
}

#[test]
fn indexed_and_rgb_colour_types() {
    for (name, color) in [
        ("8on16-bw", ColorType::Indexed),
        ("5x8-sent", ColorType::Indexed),
        ("6x6u-bw", ColorType::Rgb),
    ] {
        let d = decode(
            &render_page("Text. More.".into(), &at(shape(name), 64), &none()).expect("render"),
        );
        assert_eq!(d.color, color, "{name}");
    }
    // "Hi. Ok." in sent: two hues + white → 2 bits, 3 colours.
    let d = decode(
        &render_page("Hi. Ok.".into(), &at(shape("5x8-sent"), 64), &none()).expect("render"),
    );
    assert_eq!((d.depth, d.palette.len()), (BitDepth::Two, 3));
    // bw + dim + bands → 2 bits, 4 colours.
    let mut s = shape("8x8r-bw");
    s.stopword_dim = true;
    let page = ctxfold::render::text::stopwords::dim_stopwords("the cat");
    let d = decode(&render_page(page, &at(s, 64), &none()).expect("render"));
    assert_eq!((d.depth, d.palette.len()), (BitDepth::Two, 4));
}

#[test]
fn invalid_options_are_rejected() {
    let mut o = at(shape("8on16-bw"), 0);
    assert!(matches!(
        render_page("x".into(), &o, &none()),
        Err(SnapError::Options(_))
    ));
    o.size = Some(16385);
    assert!(matches!(
        render_page("x".into(), &o, &none()),
        Err(SnapError::Options(_))
    ));
    o.size = Some(4);
    assert!(matches!(
        render_page("x".into(), &o, &none()),
        Err(SnapError::Shape(_))
    ));
    let mut s = shape("8on16-bw");
    s.columns = 3;
    assert!(matches!(
        render_page("x".into(), &at(s, 64), &none()),
        Err(SnapError::Shape(_))
    ));
    assert!(FontName::parse("9x9").is_err());
    assert!(ctxfold::render::Ink::parse("zebra").is_err());
}

#[test]
fn eight_on_sixteen_inks_only_the_top_13_rows() {
    let o = at(shape("8on16-bw"), 128);
    let f = render_page("Mighty Jq|{[( ".repeat(2), &o, &none()).expect("render");
    assert_eq!((f.width, f.height), (128, 32));
    let d = decode(&f);
    assert_eq!(d.color, ColorType::Indexed);
    for y in 0..32 {
        if y % 16 >= 13 {
            assert!((0..128).all(|x| d.at(x, y) == 0), "row {y} is leading");
        }
    }
}

#[test]
fn doc_layout_second_column_and_hues() {
    // 8x8 cells at 64 px: G = 8 columns → colW = (8 − 3) / 2 = 2; 8 rows.
    let mut s = shape("doc-8on16-bw");
    s.font = FontName::F8x8;
    s.cell_width = 8;
    s.cell_height = 8;
    s.stretch = Some(false);
    let o = at(s, 64);
    // Line 9 (index 8) is the first of the right column, at x = (2 + 3) × 8 = 40.
    let lines: Vec<String> = (0..9).map(|i| format!("{}", i % 10)).collect();
    let d = decode(&render_page(lines.join("\n"), &o, &none()).expect("render"));
    assert!((40..48).any(|x| (0..8).any(|y| d.at(x, y) != 0)));
    // Doc hues advance across "\n" (sent ink).
    s.ink = ctxfold::render::Ink::Sent;
    let d = decode(&render_page("A.\nB".into(), &at(s, 64), &none()).expect("render"));
    assert!((0..8).any(|x| (8..16).any(|y| d.at(x, y) == 2)));
}

#[test]
fn height_hugs_rows_with_optional_floor() {
    let mut s = shape("8x8u-bw");
    let o = at(s, 64);
    assert_eq!(
        render_page("0123456789".into(), &o, &none())
            .expect("render")
            .height,
        16
    );
    assert_eq!(
        render_page("\u{e}0123456789\u{f}".into(), &o, &none())
            .expect("render")
            .height,
        16
    );
    assert_eq!(
        render_page("x".repeat(64), &o, &none())
            .expect("render")
            .height,
        64
    );
    s.line_repeat = 2;
    assert_eq!(
        render_page("0123456789".into(), &at(s, 64), &none())
            .expect("render")
            .height,
        32
    );
    let squeeze = at(shape("6x6u-bw"), 60);
    let f = render_page("x".repeat(12), &squeeze, &none()).expect("render");
    assert_eq!((f.width, f.height), (60, 12));
    // Default options keep a 64 px floor (spec §7.8).
    let floor = RenderOptions::new(shape("8x8u-bw"));
    assert_eq!(
        render_page("hi".into(), &floor, &none())
            .expect("render")
            .height,
        64
    );
}

#[test]
fn compression_settings_decode_to_the_same_pixels() {
    let text = "Compression must not change pixels. ".repeat(40);
    let mut base = at(shape("11on16-bw"), 320);
    let mut px = Vec::new();
    for c in [
        Compression::Tuned,
        Compression::Fast,
        Compression::Balanced,
        Compression::High,
        Compression::Level(1),
    ] {
        base.compression = c;
        let f = render_page(text.clone(), &base, &none()).expect("render");
        assert!(filter_bytes_are_none(&f), "{c:?}");
        px.push(decode(&f).px);
    }
    assert!(px.windows(2).all(|w| w[0] == w[1]));
    // Deterministic bytes.
    base.compression = Compression::Tuned;
    let a = render_page(text.clone(), &base, &none())
        .expect("render")
        .png;
    let b = render_page(text, &base, &none()).expect("render").png;
    assert_eq!(a, b);
}

// --------------------------------------------------------------------------------------------
// Fallback-font cases of spec §11 (3, 10, 18, 21)

#[test]
fn case_3_cjk_in_code_is_safe_with_unifont() {
    let r = scan_renderability("const a = '你好世界';", FontName::F5x8, &unifont());
    assert!(r.is_safe);
    assert_eq!(r.unrenderable_ratio, 0.0);
}

#[test]
fn case_10_kana_and_hangul_survive() {
    let t = "ひらがな カタカナ 한국어";
    assert_eq!(normalize(t, FontName::F5x8, &unifont()), t);
}

#[test]
fn case_18_cjk_heavy_text_switches_to_unifont() {
    let fonts = unifont();
    let t = "こんにちは 你好 안녕 世界 한국어";
    for font in [FontName::F5x8, FontName::Unifont] {
        assert!(scan_renderability(t, font, &fonts).is_safe);
        assert_eq!(normalize(t, font, &fonts), t);
    }
    let s = resolve_shape_for_text(
        t,
        ModelTarget {
            id: None,
            api: Some("anthropic-messages"),
        },
        None,
        &fonts,
    );
    assert_eq!(s.font, FontName::Unifont);
    // Case 19: ASCII code on gpt stays on the bitmap font; case 20: a forced shape stays.
    let ascii = "fn main() { println!(\"hi\"); }";
    let gpt = ModelTarget {
        id: Some("gpt-5.5"),
        api: Some("openai-responses"),
    };
    assert_eq!(
        resolve_shape_for_text(ascii, gpt, None, &fonts),
        resolve_shape(gpt, None)
    );
    let forced = resolve_shape_for_text(t, gpt, Some(ShapeVariant::V8on16Bw), &fonts);
    assert_eq!(forced.font, FontName::F8x13);
}

#[test]
fn case_21_unprintable_for_every_font() {
    let r = scan_renderability(&"\u{31350}".repeat(12), FontName::Unifont, &unifont());
    assert!(!r.is_safe);
    assert_eq!(r.unrenderable_ratio, 1.0);
}

#[test]
fn outline_fonts_are_accepted_as_fallback() {
    // Debian's Unifont OTF (fonts-unifont) when installed: rasterized by src/snapcompact/outline.rs,
    // thresholded.
    let ttf = Path::new("/usr/share/fonts/opentype/unifont/unifont.otf");
    let Ok(bytes) = std::fs::read(ttf) else {
        eprintln!(
            "SKIP: {} not installed (apt-get install fonts-unifont)",
            ttf.display()
        );
        return;
    };
    let mut fonts = FallbackFonts::new();
    fonts.push(FallbackFont::from_bytes(&bytes).expect("OTF parses"));
    let f = render_page("你".into(), &at(shape("8on16-bw"), 64), &fonts).expect("render");
    let d = decode(&f);
    assert!(d.has(7));
    assert!(d.px.iter().all(|&p| p == 0 || p == 7 || p == 9));
}

// --------------------------------------------------------------------------------------------
// Property tests

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &'a [&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

const PIECES: &[&str] = &[
    "a",
    "Z",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    ".",
    "! ",
    "? ",
    "the ",
    "of ",
    "你",
    "好",
    "안",
    "ｈ",
    "é",
    "ß",
    "Ω",
    "Ж",
    "\u{e}",
    "\u{f}",
    "\u{2588}",
    "\u{1b}[31m",
    "\u{1b}]0;x\u{7}",
    "\u{200b}",
    "\u{feff}",
    "\u{301}",
    "\u{fe0f}",
    "😀",
    "✅",
    "🎞",
    "\u{e000}",
    "\u{31350}",
    "→",
    "…",
    "│",
    "┌",
    "ﬁ",
    "①",
    "data:image/png;base64,QUFBQQ==",
    "[…12ch elided…]",
    "\0",
    "\u{7f}",
    "\u{85}",
];

fn random_text(rng: &mut Rng) -> String {
    let n = (rng.next() % 400) as usize;
    (0..n).map(|_| rng.pick(PIECES)).collect()
}

/// Any input renders without panicking; frameCount equals the frames rendered; pages cover
/// the normalized text (frames × capacity ≥ normalized cells); page texts re-join to it.
#[test]
fn property_random_text_renders() {
    let fonts = unifont();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let names = [
        "11on16-bw",
        "8on22-bw",
        "doc-8on16-sent-dim",
        "6x12-dim",
        "8x8r-sent",
        "5x8-bw",
        "6x6u-sent",
        "unifont16-bw",
    ];
    for i in 0..240 {
        let text = random_text(&mut rng);
        let name = names[i % names.len()];
        let size = [64, 96, 128, 200][i % 4];
        let o = at(shape(name), size);
        let frames = render_frames(&text, &o, &fonts)
            .unwrap_or_else(|e| panic!("{name} @{size}: {e} for {text:?}"));
        assert_eq!(
            frame_count(&text, &o, &fonts),
            Ok(frames.len()),
            "{name} {text:?}"
        );
        let normalized = normalize(&text, o.shape.font, &fonts);
        let wide = o.shape.font != FontName::Unifont;
        let cells = ctxfold::render::text::cells::cell_len(&normalized, wide) as usize;
        if !o.shape.is_doc() {
            let cap = o.geometry().capacity as usize;
            assert!(
                frames.len() * cap >= cells,
                "{name}: {} frames × {cap} < {cells}",
                frames.len()
            );
            let strip = |s: &str| -> String {
                s.chars()
                    .filter(|&c| c != '\u{e}' && c != '\u{f}')
                    .collect()
            };
            let joined: String = frames.iter().map(|f| strip(&f.page)).collect();
            assert_eq!(
                joined,
                strip(&normalized),
                "{name}: pages are the normalized text"
            );
        }
        for f in &frames {
            let d = decode(f);
            assert_eq!(d.width, size);
            assert!(f.chars <= o.geometry().capacity);
        }
        assert_eq!(
            page_texts(&text, &o, &fonts).map(|p| p.len()),
            Ok(frames.len())
        );
    }
}

/// Normalization is idempotent and keeps only drawable characters.
#[test]
fn property_normalize_is_idempotent() {
    let fonts = unifont();
    let mut rng = Rng(12345);
    for _ in 0..300 {
        let text = random_text(&mut rng);
        for font in [FontName::F8x13, FontName::F5x8] {
            let once = normalize(&text, font, &fonts);
            assert_eq!(normalize(&once, font, &fonts), once, "{text:?}");
            assert!(!once.starts_with(' ') && !once.ends_with(' '));
            assert!(!once.contains("  "));
            assert!(!once.contains('\n'));
        }
    }
}

/// Glyphs cut by the right edge of frames of any width: no write past a row (a 255 px frame
/// of 5x8 cells used to panic when its bottom-right cell held a glyph reaching the cell's last
/// pixel row, such as `@`), and nothing printed beyond the width.
#[test]
fn frames_of_every_width_render() {
    let fonts = unifont();
    for variant in ShapeVariant::ALL {
        let name = variant.name();
        for size in [97, 253, 255, 256, 513] {
            let o = at(resolve_shape(ModelTarget::default(), Some(variant)), size);
            // A full frame of one glyph, for glyphs that reach low and right.
            for glyph in ['@', 'g', '_', '|'] {
                let text: String =
                    std::iter::repeat_n(glyph, o.geometry().capacity as usize).collect();
                let frames = render_frames(&text, &o, &fonts)
                    .unwrap_or_else(|e| panic!("{name} at {size} px, {glyph:?}: {e:?}"));
                assert!(!frames.is_empty(), "{name} at {size} px");
                for f in &frames {
                    assert_eq!(f.width, size, "{name}");
                }
            }
        }
    }
}

// --------------------------------------------------------------------------------------------
// Outline fallback fonts: our rasterizer (src/render/font/outline.rs) against fontdue 0.9,
// which the spec names and which the library used before. The fonts are Debian's: DejaVu
// (fonts-dejavu-core, TrueType quadratics; part of this machine image) and, when installed,
// Unifont's OTF (fonts-unifont, CFF cubics).

/// What the library drew with fontdue (the code it had), for `c` in `gbox`.
fn fontdue_glyph(
    f: &fontdue::Font,
    c: char,
    gbox: ctxfold::render::font::GlyphBox,
) -> Option<(i32, i32, usize, usize, Vec<u8>)> {
    if f.lookup_glyph_index(c) == 0 {
        return None;
    }
    let px = gbox.span.min(gbox.cell_height).max(1) as f32;
    let (m, coverage) = f.rasterize(c, px);
    let ascent = match gbox.bitmap_ascent {
        Some(a) => a as f32,
        None => f
            .horizontal_line_metrics(px)
            .map(|l| l.ascent)
            .unwrap_or(0.8 * px),
    };
    let adv = m.advance_width.ceil() as i32;
    let left = (gbox.span as i32 - adv).max(0) / 2 + m.xmin;
    let top = (ascent - m.height as f32 - m.ymin as f32).round() as i32;
    Some((left, top, m.width, m.height, coverage))
}

/// The frame's quantisation of coverage (src/render/raster/mod.rs `quantise`), black ink and
/// a coloured ink: 0 none, 1 dim fringe, 2 ink.
fn levels(a: u8) -> (u8, u8) {
    let black = if a >= 170 {
        2
    } else if a >= 56 {
        1
    } else {
        0
    };
    (black, u8::from(a >= 110) * 2)
}

/// Compares every glyph of `chars` at the frame sizes of the catalogue's cells. Returns the
/// number of glyphs compared, and of pixels whose quantised ink differs.
fn compare_with_fontdue(path: &str, chars: &[char]) -> Option<(usize, usize, usize)> {
    use ctxfold::render::font::GlyphBox;
    let bytes = std::fs::read(path).ok()?;
    let ours = FallbackFont::from_bytes(&bytes).expect("font parses");
    let theirs =
        fontdue::Font::from_bytes(bytes.as_slice(), fontdue::FontSettings::default()).ok()?;
    assert_eq!(
        ours.glyph_count(),
        theirs.chars().len(),
        "{path}: code points mapped"
    );
    let boxes = [
        (5, 8, Some(7)),
        (6, 12, Some(10)),
        (8, 13, Some(11)),
        (8, 16, Some(13)),
        (16, 13, Some(11)),
        (16, 16, None),
        (11, 16, Some(13)),
        (22, 22, None),
    ];
    let (mut glyphs, mut pixels, mut differ) = (0, 0, 0);
    for &c in chars {
        assert_eq!(
            ours.has_glyph(c),
            theirs.lookup_glyph_index(c) != 0,
            "{c:?}"
        );
        for (span, cell_height, bitmap_ascent) in boxes {
            let gbox = GlyphBox {
                span,
                cell_height,
                bitmap_ascent,
            };
            let a = ours.rasterize(c, gbox);
            let b = fontdue_glyph(&theirs, c, gbox);
            let (a, (left, top, width, height, coverage)) = match (a, b) {
                (Some(a), Some(b)) => (a, b),
                (None, None) => continue,
                _ => panic!("{path}: {c:?} drawn by one rasterizer only"),
            };
            assert_eq!(
                (a.left, a.top, a.width, a.height),
                (left, top, width, height),
                "{path}: box of {c:?} in {gbox:?}"
            );
            glyphs += 1;
            pixels += coverage.len();
            for (&x, &y) in a.coverage.iter().zip(&coverage) {
                assert!(
                    x.abs_diff(y) <= 1,
                    "{path}: {c:?} in {gbox:?}: coverage {x} vs {y}"
                );
                differ += usize::from(levels(x) != levels(y));
            }
        }
    }
    Some((glyphs, pixels, differ))
}

#[test]
fn outline_rasterizer_matches_fontdue() {
    let latin: Vec<char> = (' '..='~').chain('\u{a0}'..='\u{17f}').collect();
    let mixed: Vec<char> = latin
        .iter()
        .copied()
        .chain('\u{391}'..='\u{3c9}')
        .chain('\u{410}'..='\u{44f}')
        .chain([
            '←', '→', '∑', '√', '∞', '≠', '█', '░', '♥', '✓', '€', '‰', 'ﬁ',
        ])
        .collect();
    let cjk: Vec<char> = "你好世界日本語한국어かなカナ中文字"
        .chars()
        .chain(latin.iter().copied())
        .collect();
    let mut compared = 0;
    for (path, chars) in [
        ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", &mixed),
        (
            "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
            &mixed,
        ),
        ("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf", &latin),
        ("/usr/share/fonts/opentype/unifont/unifont.otf", &cjk),
    ] {
        let Some((glyphs, pixels, differ)) = compare_with_fontdue(path, chars) else {
            eprintln!("SKIP: {path} not installed");
            continue;
        };
        eprintln!(
            "{path}: {glyphs} glyphs, {pixels} px, {differ} px of another ink than fontdue's"
        );
        // Coverage differs by at most 1 of 255 (float rounding), which inks no pixel otherwise.
        assert_eq!(differ, 0, "{path}: {differ} of {pixels} px inked otherwise");
        compared += 1;
    }
    // DejaVu is part of the machine image (Debian fonts-dejavu-core): CI compares it.
    if std::env::var_os("CI").is_some() {
        assert!(
            compared > 0,
            "no outline font to compare: apt-get install fonts-dejavu-core"
        );
    }
}
