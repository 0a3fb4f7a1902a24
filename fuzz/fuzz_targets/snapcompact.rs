//! snapcompact normalize + render on arbitrary text and shapes (catalogue or arbitrary
//! records, frame sizes, caps): no panic, frames within their budgets, deterministic.
#![no_main]
use arbitrary::Unstructured;
use ctxfold::render::{
    normalize, render_frames, BillingFamily, Compression, FallbackFont, FallbackFonts, FontName,
    Ink, RenderOptions, Shape, ShapeVariant,
};
use libfuzzer_sys::fuzz_target;

thread_local! {
    /// The compiled Unifont asset as the fallback font (wide glyphs, the unifont shape).
    static UNIFONT: FallbackFonts = {
        let bytes = include_bytes!("../../fonts/compiled/unifont.cxfb");
        let mut f = FallbackFonts::new();
        f.push(FallbackFont::from_bytes(bytes).expect("the Unifont asset"));
        f
    };
}

fn shape(u: &mut Unstructured<'_>) -> arbitrary::Result<Shape> {
    let base = u
        .choose(&ShapeVariant::ALL)?
        .shape(BillingFamily::Anthropic);
    if u.ratio(1, 2)? {
        return Ok(base);
    }
    let font = *u.choose(&[
        FontName::F8x8,
        FontName::F5x8,
        FontName::F6x12,
        FontName::F8x13,
    ])?;
    Ok(Shape {
        font,
        cell_width: u.int_in_range(1..=24)?,
        cell_height: u.int_in_range(1..=32)?,
        stretch: *u.choose(&[None, Some(true), Some(false)])?,
        ink: *u.choose(&[Ink::Bw, Ink::Sent])?,
        stopword_dim: u.arbitrary()?,
        columns: u.int_in_range(1..=2)?,
        line_repeat: u.int_in_range(1..=3)?,
        frame_size: base.frame_size,
        frame_token_estimate: 1000,
        image_detail: None,
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(shape) = shape(&mut u) else { return };
    let Ok(size) = u.int_in_range(1..=800u32) else {
        return;
    };
    let Ok(max_frames) = u.int_in_range(0..=4usize) else {
        return;
    };
    let Ok(min_height) = u.int_in_range(0..=200u32) else {
        return;
    };
    let Ok(level) = u.int_in_range(0..=4u8) else {
        return;
    };
    let Ok(with_unifont) = u.arbitrary::<bool>() else {
        return;
    };
    let text = String::from_utf8_lossy(u.take_rest()).into_owned();
    if with_unifont {
        UNIFONT.with(|f| check(&text, shape, size, max_frames, min_height, level, f));
    } else {
        check(
            &text,
            shape,
            size,
            max_frames,
            min_height,
            level,
            &FallbackFonts::new(),
        );
    }
});

fn check(
    text: &str,
    shape: Shape,
    size: u32,
    max_frames: usize,
    min_height: u32,
    level: u8,
    fallbacks: &FallbackFonts,
) {
    let _ = normalize(text, shape.font, fallbacks);
    let opts = RenderOptions {
        shape,
        size: Some(size),
        max_frames: if max_frames == 0 {
            None
        } else {
            Some(max_frames)
        },
        min_height,
        compression: match level {
            0 => Compression::Fast,
            1 => Compression::Tuned,
            2 => Compression::High,
            _ => Compression::Level(level),
        },
    };
    let Ok(frames) = render_frames(text, &opts, fallbacks) else {
        return;
    };
    if let Err(e) = ctxfold_fuzz::invariants::frames_within(&frames, &opts) {
        panic!("{e}");
    }
    let again = render_frames(text, &opts, fallbacks).expect("rendered once");
    assert!(again == frames, "two renders differ");
}
