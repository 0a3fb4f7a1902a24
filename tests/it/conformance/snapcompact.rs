//! Conformance of snapcompact rendering against the reference frames in
//! `../shared/conformance/snapcompact/` (one test per shape folder): frame count, each
//! frame's width, height and characters, the page texts, and the decoded pixels (palette
//! colour per pixel), reporting the frame and rows that differ.
//!
//! Cells whose character the frame's bitmap font lacks are printed by the fallback font,
//! which differs from the reference's (GNU Unifont here, the Silver TTF there): those cells
//! are excluded from the pixel comparison and counted in the report; every other pixel must
//! match exactly.

use crate::common::{conformance_dir, fallbacks};
use ctxfold::render::{
    layout_page, render_frames, render_page, resolve_shape, ModelTarget, RenderOptions,
    ShapeVariant,
};
use ctxfold_testkit::png::{decode_rgb, Image};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// Writes our frames for review by eye (tests/out/snapcompact/<shape>/).
fn save_for_review(name: &str, i: usize, png: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/out/snapcompact")
        .join(name);
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(format!("frame-{i:03}.png")), png);
    }
}

fn check_shape(name: &str) {
    let dir = conformance_dir().join("snapcompact").join(name);
    let input = std::fs::read_to_string(dir.join("../input.txt")).expect("input.txt");
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("frames.json")).expect("frames.json"),
    )
    .expect("frames.json is JSON");

    // Resolve the shape the way the reference did: a model id, or a forced variant name.
    let shape = match meta["model"].as_object() {
        Some(m) => resolve_shape(
            ModelTarget {
                id: m.get("id").and_then(Value::as_str),
                api: m.get("api").and_then(Value::as_str),
            },
            None,
        ),
        None => resolve_shape(
            ModelTarget::default(),
            Some(ShapeVariant::parse(name).expect("variant name")),
        ),
    };
    assert_eq!(
        shape.to_json(),
        meta["shape"],
        "{name}: resolved shape record"
    );
    let geo = shape.geometry();
    assert_eq!(
        (geo.cols as u64, geo.rows as u64, geo.capacity as u64),
        (
            meta["geometry"]["cols"].as_u64().unwrap_or(0),
            meta["geometry"]["rows"].as_u64().unwrap_or(0),
            meta["geometry"]["capacity"].as_u64().unwrap_or(0)
        ),
        "{name}: geometry"
    );

    let fonts = fallbacks();
    let opts = RenderOptions::new(shape);
    let frames = render_frames(&input, &opts, &fonts).expect("render");
    let want = meta["frames"].as_array().expect("frames list");
    assert_eq!(frames.len(), want.len(), "{name}: frame count");

    let bitmap = shape.font.bitmap();
    let mut report = String::new();
    let mut masked_cells = 0usize;
    let mut coverage_diffs = 0usize;
    for (i, (frame, w)) in frames.iter().zip(want).enumerate() {
        save_for_review(name, i, &frame.png);
        let page_want =
            std::fs::read_to_string(dir.join(format!("page-{i:03}.txt"))).expect("page text");
        let ours: Vec<char> = frame.page.chars().collect();
        let theirs: Vec<char> = page_want.chars().collect();
        // The only difference allowed: the reference printed `?` for a character its fallback
        // font lacked and ours (Unifont) has.
        let coverage_only = |a: &char, b: &char| {
            *b == '?' && !bitmap.is_some_and(|f| f.has_glyph(*a)) && fonts.has_glyph(*a)
        };
        if ours.len() != theirs.len()
            || ours
                .iter()
                .zip(&theirs)
                .any(|(a, b)| a != b && !coverage_only(a, b))
        {
            let at = ours
                .iter()
                .zip(&theirs)
                .position(|(a, b)| a != b && !coverage_only(a, b));
            let at = at.unwrap_or(ours.len().min(theirs.len()));
            let around = |v: &[char]| -> String {
                v[at.saturating_sub(20)..(at + 20).min(v.len())]
                    .iter()
                    .collect()
            };
            let _ = writeln!(
                report,
                "frame {i}: page text differs at char {at} (ours {} chars, reference {}): ours {:?}, reference {:?}",
                ours.len(),
                theirs.len(),
                around(&ours),
                around(&theirs)
            );
        }
        coverage_diffs += ours.iter().zip(&theirs).filter(|(a, b)| a != b).count();
        let dims = (frame.width as u64, frame.height as u64, frame.chars as u64);
        let dims_want = (
            w["width"].as_u64().unwrap_or(0),
            w["height"].as_u64().unwrap_or(0),
            w["chars"].as_u64().unwrap_or(0),
        );
        if dims != dims_want {
            let _ = writeln!(
                report,
                "frame {i}: (width, height, chars) {dims:?}, reference {dims_want:?}"
            );
            continue;
        }
        // When the page texts differ (by fallback coverage only), a `?` can change the
        // sentence hue of everything after it: compare the rasterizer on the reference's page.
        let frame = if frame.page == page_want {
            frame.clone()
        } else {
            render_page(page_want.clone(), &opts, &fonts).expect("render reference page")
        };
        // Pixels: mask the cells the fallback font prints.
        let Image {
            width: fw,
            height: fh,
            data: ours,
            ..
        } = decode_rgb(&frame.png).expect("our frame decodes");
        let ref_png =
            std::fs::read(dir.join(format!("frame-{i:03}.png"))).expect("reference frame");
        let Image {
            width: rw,
            height: rh,
            data: theirs,
            ..
        } = decode_rgb(&ref_png).expect("the reference frame decodes");
        assert_eq!((fw, fh), (rw, rh), "{name} frame {i}: decoded size");
        let mut mask = vec![false; (fw * fh) as usize];
        for p in layout_page(&frame.page, &opts) {
            let fallback = p.c != '\u{2588}' && !bitmap.is_some_and(|b| b.has_glyph(p.c));
            if !fallback {
                continue;
            }
            masked_cells += 1;
            for k in 0..shape.line_repeat {
                let top = p.y + k * shape.cell_height;
                for y in top..(top + p.height).min(fh) {
                    for x in p.x..(p.x + p.width).min(fw) {
                        mask[(y * fw + x) as usize] = true;
                    }
                }
            }
        }
        let mut bad_rows = Vec::new();
        for y in 0..fh {
            let mut bad = 0;
            for x in 0..fw {
                let at = (y * fw + x) as usize;
                if !mask[at] && ours[at * 3..at * 3 + 3] != theirs[at * 3..at * 3 + 3] {
                    bad += 1;
                }
            }
            if bad > 0 {
                bad_rows.push((y, bad));
            }
        }
        if !bad_rows.is_empty() {
            let (y, n) = bad_rows[0];
            let text_row = y / (shape.cell_height * shape.line_repeat);
            let _ = writeln!(
                report,
                "frame {i}: pixels differ in {} pixel rows; first at y={y} ({n} px, text row {text_row})",
                bad_rows.len()
            );
        }
    }
    eprintln!(
        "{name}: {} frames compared; {coverage_diffs} page chars differ by fallback coverage only; \
         {masked_cells} fallback-font cells excluded from pixels",
        frames.len()
    );
    assert!(
        report.is_empty(),
        "{name} differs from the reference:\n{report}"
    );
}

macro_rules! conformance {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(#[test] fn $test() { check_shape($name); })*
    };
}

conformance! {
    shape_11on16_bw => "11on16-bw",
    shape_8on22_bw => "8on22-bw",
    shape_8on16_bw => "8on16-bw",
    shape_8x13_bw => "8x13-bw",
    shape_6x12_dim => "6x12-dim",
    shape_5x8_bw => "5x8-bw",
    shape_doc_8on16_sent_dim => "doc-8on16-sent-dim",
    shape_8x8r_sent => "8x8r-sent",
    model_claude_opus_4_7 => "claude-opus-4-7",
    model_gemini_3_pro_preview => "gemini-3-pro-preview",
}
