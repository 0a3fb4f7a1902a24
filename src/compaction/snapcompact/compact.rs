//! The deterministic `compact` step (spec: snapcompact §9.2): the archive rendered to frames,
//! carried forward from an earlier one, with its record and short summary.

use super::guide::{reading_guide, GuideFacts};
use super::layout::{plan_archive, ulen};
use super::options::ArchiveOptions;
use super::turns::{retained_user_turns, user_turns};
use crate::archive::{
    get_preserved_archive, printed_source, renderability_probe_text, scrub_thinking, Archive,
    ArchiveFrame, EARLIER_SUMMARY_LABEL, NO_PRIOR_HISTORY, PRESERVE_KEY, RECENT_LABEL,
};
use crate::render::error::SnapError;
use crate::render::font::FallbackFonts;
use crate::render::shape::billing::MAX_FRAMES_DEFAULT;
use crate::render::shape::catalogue::Shape;
use crate::render::shape::resolve::{dense_companion, resolve_shape_for_text};
use crate::render::text::dataurl::{elide_data_urls, Elision};
use crate::render::text::normalize::normalize;
use crate::render::text::paginate::ends_dim;
use crate::render::text::serialize::{serialize_conversation, ArchiveMessage};
use crate::render::text::stopwords::dim_stopwords;
use crate::render::text::unicode::{DIM_ON, NEWLINE_GLYPH};
use crate::render::{render_page, Frame, RenderOptions};
use crate::summary::fileops::{format_file_operations, FileLists};
use crate::support::base64::base64;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::BTreeSet;

thread_local! {
    /// The frames of the latest archive rendered on this thread, with their options and the
    /// fallback fonts they were drawn with. The next compaction of a session prints its
    /// archive text from this one's kept text, so most of its pages come out the same and
    /// are taken from here instead of being drawn and compressed again (a page is reused
    /// only when its text, options and fonts are exactly those of the cached frame: the
    /// output does not change). Holds one archive's frames, up to 17 PNGs in practice.
    static LAST_FRAMES: RefCell<(Vec<(RenderOptions, Frame)>, FallbackFonts)> =
        RefCell::default();
}

/// What the archive is built from (a compaction preparation, spec: snapcompact §9.2).
#[derive(Debug, Clone, Copy)]
pub struct ArchiveInput<'a> {
    /// `messagesToSummarize ++ turnPrefixMessages`, in order.
    pub messages: &'a [ArchiveMessage],
    pub previous_summary: Option<&'a str>,
    pub previous_preserve_data: Option<&'a Value>,
    pub file_lists: &'a FileLists,
    /// The cumulative raw read set (marks modified files `(RW)`).
    pub read_set: Option<&'a BTreeSet<String>>,
}

/// The result of [`compact`].
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveResult {
    /// The reading guide (or `No prior history.`).
    pub summary: String,
    pub short_summary: String,
    /// The record persisted under `preserveData.snapcompact`.
    pub archive: Archive,
    /// The previous `preserveData` minus a provider replacement history, plus the record.
    pub preserve_data: Value,
    /// The archive serialization of the new messages.
    pub serialized: String,
    /// The HQ shape at the frame size in effect.
    pub shape: Shape,
    /// The rendered frames (PNG bytes, sizes, page texts), oldest first.
    pub frames: Vec<Frame>,
    /// A previous text summary was folded into the archive head.
    pub included_previous_summary: bool,
}

fn snap_options(shape: Shape, o: &ArchiveOptions) -> RenderOptions {
    RenderOptions {
        shape,
        size: Some(shape.frame_size),
        max_frames: None,
        min_height: o.min_height,
        compression: o.compression,
    }
}

/// One frame of an archive to render: its exact page text and render options (the shape of
/// its band, dense or not). Rendering it is deterministic: [`render_job`] gives the frame the
/// commit would draw.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameJob {
    pub options: RenderOptions,
    pub text: String,
}

/// What `compact` lays out before it renders: the serialized history, the previous record,
/// the shapes, the archive layout and the frames to draw, in order.
struct Laid {
    serialized: String,
    previous: Option<Archive>,
    included_previous_summary: bool,
    high: Shape,
    layout: super::layout::ArchiveLayout,
    truncated: u64,
    jobs: Vec<FrameJob>,
    /// The dim state open at the end of the last frame.
    dim_open: bool,
}

/// Serializes, folds in the previous archive and plans the archive (spec: snapcompact §9.2
/// steps 1–11 without the drawing): everything [`compact`] does before it renders a frame.
fn lay_out(
    input: ArchiveInput<'_>,
    options: &ArchiveOptions,
    fallbacks: &FallbackFonts,
) -> std::result::Result<Laid, SnapError> {
    let serialized = serialize_conversation(input.messages, &options.serialize);
    let previous = get_preserved_archive(input.previous_preserve_data);
    let mut previous_text = previous.as_ref().map(printed_source).unwrap_or_default();
    if !previous_text.is_empty() {
        previous_text = elide_data_urls(&previous_text, Elision::Archive).into_owned();
        if !options.serialize.include_thinking {
            previous_text = scrub_thinking(&previous_text);
        }
    }
    let previous_summary = input.previous_summary.filter(|s| !s.is_empty());
    let included_previous_summary = previous_text.is_empty() && previous_summary.is_some();

    let target = options.model.as_ref();
    let shape = match options.shape {
        Some(s) => s,
        None => {
            let probe = renderability_probe_text(
                &serialized,
                input.previous_preserve_data,
                input.previous_summary,
            );
            resolve_shape_for_text(&probe, target, None, fallbacks)
        }
    };
    let size = options.frame_size.unwrap_or(shape.frame_size);
    let high = shape.with_frame_size(size);
    let low = dense_companion(&high, target.api);
    let max_frames = options
        .max_frames
        .unwrap_or(MAX_FRAMES_DEFAULT)
        .clamp(1, MAX_FRAMES_DEFAULT) as usize;
    snap_options(high, options).check(fallbacks)?;

    let mut archive_text = normalize(&serialized, high.font, fallbacks);
    if included_previous_summary {
        let summary = normalize(previous_summary.unwrap_or_default(), high.font, fallbacks);
        let head = format!("{EARLIER_SUMMARY_LABEL} {summary}");
        archive_text = if archive_text.is_empty() {
            head
        } else {
            format!("{head} {RECENT_LABEL} {archive_text}")
        };
    }
    let mut truncated = previous.as_ref().map_or(0, |p| p.truncated_chars);
    if !previous_text.is_empty() {
        archive_text = if archive_text.is_empty() {
            previous_text
        } else {
            format!("{previous_text}{NEWLINE_GLYPH}{archive_text}")
        };
    }
    let archive_text = elide_data_urls(&archive_text, Elision::Source).into_owned();
    let layout = plan_archive(&archive_text, &high, &low, max_frames);
    truncated += layout.truncated_chars;
    // The page texts, carrying the dim state from the text head through the frames.
    let mut dim_open = ends_dim(&layout.text_head);
    let mut jobs = Vec::with_capacity(layout.pages.len());
    for page in &layout.pages {
        let shape = if page.dense { low } else { high };
        let mut text = String::with_capacity(page.text.len() + 1);
        if dim_open {
            text.push(DIM_ON);
        }
        text.push_str(&page.text);
        dim_open = ends_dim(&text);
        let text = if shape.stopword_dim {
            dim_stopwords(&text)
        } else {
            text
        };
        jobs.push(FrameJob {
            options: snap_options(shape, options),
            text,
        });
    }
    Ok(Laid {
        serialized,
        previous,
        included_previous_summary,
        high,
        layout,
        truncated,
        jobs,
        dim_open,
    })
}

/// The frames [`compact`] would draw for `input`, in order, without drawing them: a host
/// renders them one at a time ([`render_job`]) to report progress or to interleave other
/// work, and the compaction then takes them from the cache of drawn frames.
pub fn frame_jobs(
    input: ArchiveInput<'_>,
    options: &ArchiveOptions,
    fallbacks: &FallbackFonts,
) -> std::result::Result<Vec<FrameJob>, SnapError> {
    Ok(lay_out(input, options, fallbacks)?.jobs)
}

/// Draws one frame of [`frame_jobs`] (or takes it from the cache) and keeps it in this
/// thread's cache of drawn frames, where the next [`compact`] finds it: the archive it then
/// writes is byte-for-byte the one it would have drawn itself.
pub fn render_job(
    job: &FrameJob,
    fallbacks: &FallbackFonts,
) -> std::result::Result<Frame, SnapError> {
    LAST_FRAMES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.1.same_as(fallbacks) {
            *cache = (Vec::new(), fallbacks.clone());
        }
        if let Some((_, f)) = cache
            .0
            .iter()
            .find(|(o, f)| *o == job.options && f.page == job.text)
        {
            return Ok(f.clone());
        }
        let frame = render_page(job.text.clone(), &job.options, fallbacks)?;
        cache.0.push((job.options, frame.clone()));
        Ok(frame)
    })
}

/// `compact(preparation, options)` (spec: snapcompact §9.2): serializes the messages, folds
/// in the previous archive's kept source (or a previous text summary), plans and renders the
/// archive, and writes the reading guide. No model is asked anything.
pub fn compact(
    input: ArchiveInput<'_>,
    options: &ArchiveOptions,
    fallbacks: &FallbackFonts,
) -> std::result::Result<ArchiveResult, SnapError> {
    let Laid {
        serialized,
        previous,
        included_previous_summary,
        high,
        layout,
        truncated,
        jobs,
        dim_open,
    } = lay_out(input, options, fallbacks)?;
    let user_turns = retained_user_turns(
        previous.as_ref().and_then(|p| p.user_turns.as_deref()),
        &user_turns(&layout.dropped, layout.dropped_opens_in_user),
        options.retained_user_tokens,
    );

    // Render (the dim state carried through the frames by `lay_out`, §9.2 step 11).
    let (mut reusable, fonts) = LAST_FRAMES.with(RefCell::take);
    if !fonts.same_as(fallbacks) {
        reusable.clear();
    }
    let mut rendered = Vec::with_capacity(jobs.len());
    let mut frames = Vec::with_capacity(jobs.len());
    let mut records = Vec::with_capacity(jobs.len());
    for FrameJob {
        options: opts,
        text,
    } in jobs
    {
        let frame = match reusable
            .iter()
            .position(|(o, f)| *o == opts && f.page == text)
        {
            Some(i) => reusable.swap_remove(i).1,
            None => render_page(text, &opts, fallbacks)?,
        };
        records.push(frame_record(&frame, &opts.shape));
        rendered.push((opts, frame.clone()));
        frames.push(frame);
    }
    LAST_FRAMES.with(|c| c.replace((rendered, fallbacks.clone())));
    let text_tail = if layout.text_tail.is_empty() {
        String::new()
    } else if dim_open {
        format!("{DIM_ON}{}", layout.text_tail)
    } else {
        layout.text_tail.clone()
    };
    let text_head = layout.text_head.clone();
    let total_chars =
        records.iter().map(|f| f.chars).sum::<u64>() + ulen(&text_head) + ulen(&text_tail);
    let mut kept = layout.kept_text.clone();
    if text_tail.len() != layout.text_tail.len() {
        kept.truncate(kept.len() - layout.text_tail.len());
        kept.push_str(&text_tail);
    }

    let archive = Archive {
        frames: records,
        total_chars,
        truncated_chars: truncated,
        text: (!kept.is_empty()).then_some(kept),
        text_head: (!text_head.is_empty()).then_some(text_head),
        text_tail: (!text_tail.is_empty()).then_some(text_tail),
        user_turns,
    };
    let files = files_section(input.file_lists, input.read_set);
    let summary = if archive.frames.is_empty()
        && archive.text_head.is_none()
        && archive.text_tail.is_none()
        && archive.user_turns.is_none()
        && files.is_none()
    {
        NO_PRIOR_HISTORY.to_string()
    } else {
        reading_guide(&GuideFacts {
            frames: &archive.frames,
            high: &high,
            truncated_chars: archive.truncated_chars,
            included_previous_summary,
            user_turns: archive.user_turns.is_some(),
            files: files.as_deref(),
        })
    };
    let short_summary = short_summary(&archive);
    let mut preserve = match input.previous_preserve_data {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    crate::compaction::native::drop_native_records(&mut preserve);
    preserve.insert(PRESERVE_KEY.into(), archive.to_json());
    Ok(ArchiveResult {
        summary,
        short_summary,
        archive,
        preserve_data: Value::Object(preserve),
        serialized,
        shape: high,
        frames,
        included_previous_summary,
    })
}

fn frame_record(frame: &Frame, shape: &Shape) -> ArchiveFrame {
    ArchiveFrame {
        data: base64(&frame.png),
        mime_type: "image/png".into(),
        cols: frame.cols.into(),
        rows: frame.rows.into(),
        chars: frame.chars.into(),
        font: Some(shape.font.as_str().into()),
        variant: Some(shape.ink.as_str().into()),
        line_repeat: (shape.line_repeat != 1).then_some(shape.line_repeat.into()),
        columns: (shape.columns == 2).then_some(2),
        stopword_dim: shape.stopword_dim.then_some(true),
        detail: shape.image_detail.map(|d| d.as_str().into()),
        data_ref: None,
    }
}

/// `1234567` → `1,234,567` (the reference's `toLocaleString()` in en-US).
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The short summary (spec: snapcompact §9.2 step 19).
pub fn short_summary(archive: &Archive) -> String {
    let n = archive.frames.len();
    let mut s = format!(
        "Archived {} chars of history onto {n} snapcompact frame{}",
        thousands(archive.total_chars),
        if n == 1 { "" } else { "s" }
    );
    let text_chars = archive.text_edge_chars();
    if text_chars > 0 {
        s.push_str(&format!(" (+{} chars as text)", thousands(text_chars)));
    }
    s
}

/// The FILES tree (spec: snapcompact §9.2 step 15): the grouped tree of the `<files>` block,
/// without its tags; `None` without files.
fn files_section(lists: &FileLists, read_set: Option<&BTreeSet<String>>) -> Option<String> {
    let block = format_file_operations(&lists.read_files, &lists.modified_files, read_set);
    let inner = block
        .strip_prefix("<files>\n")?
        .strip_suffix("\n</files>")?;
    Some(inner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(297190), "297,190");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
