//! The snapcompact strategy (spec: snapcompact §9.2–§9.4): `planArchive` (verbatim text
//! edges around a foveated imaged middle), the deterministic `compact` step that renders the
//! archive, carry-forward of earlier archives and the reading guide shown to the model.
//!
//! Everything here is sans-IO and deterministic: the same messages, previous record, options
//! and registered fallback fonts give the same record and the same PNG bytes.

use crate::archive::*;
use crate::render::error::SnapError;
use crate::render::font::FallbackFonts;
use crate::render::png::Compression;
use crate::render::shape::billing::MAX_FRAMES_DEFAULT;
use crate::render::shape::catalogue::Shape;
use crate::render::shape::resolve::Target;
use crate::render::shape::resolve::{dense_companion, resolve_shape_for_text};
use crate::render::text::cells::{paginate_cells, wide_cells};
use crate::render::text::dataurl::{elide_data_urls, Elision};
use crate::render::text::normalize::normalize;
use crate::render::text::paginate::ends_dim;
use crate::render::text::serialize::{
    serialize_conversation, ArchiveMessage, AssistantBlock, SerializeOptions,
};
use crate::render::text::stopwords::dim_stopwords;
use crate::render::text::unicode::{utf16_len, DIM_ON, NEWLINE_GLYPH};
use crate::render::text::wrap::wrap;
use crate::render::{render_page, Frame, RenderOptions, DEFAULT_MIN_HEIGHT};
use crate::summary::fileops::{format_file_operations, FileLists};
use rustc_hash::FxHashSet;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

use crate::support::base64::base64;

// ----- planArchive ------------------------------------------------------------------------

/// One planned frame of the imaged middle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedPage {
    /// The page text (normalized; toggles as they fall).
    pub text: String,
    /// Printed in the dense (LQ) companion shape, not the legible (HQ) one.
    pub dense: bool,
}

/// What `planArchive` decides (spec: snapcompact §9.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveLayout {
    pub text_head: String,
    pub pages: Vec<PlannedPage>,
    pub text_tail: String,
    /// The kept source: head, the kept middle and tail (what the next compaction re-renders).
    pub kept_text: String,
    /// Characters (UTF-16 units) of middle history dropped to fit `max_frames`.
    pub truncated_chars: u64,
}

/// Byte offset after the first `units` UTF-16 units, never inside a character.
fn utf16_prefix_end(s: &str, units: usize) -> usize {
    let mut n = 0;
    for (i, c) in s.char_indices() {
        if n + c.len_utf16() > units {
            return i;
        }
        n += c.len_utf16();
    }
    s.len()
}

/// Byte offset where the last `units` UTF-16 units begin, never inside a character.
fn utf16_suffix_start(s: &str, units: usize) -> usize {
    let mut n = 0;
    for (i, c) in s.char_indices().rev() {
        if n + c.len_utf16() > units {
            return i + c.len_utf8();
        }
        n += c.len_utf16();
    }
    0
}

fn ulen(s: &str) -> u64 {
    utf16_len(s) as u64
}

/// Splits `text` into pages of `shape` (grid: by cells; doc: wrapped line groups).
fn grid_pages<'t>(text: &'t str, shape: &Shape) -> Vec<&'t str> {
    let geo = shape.geometry();
    paginate_cells(
        text,
        geo.capacity.max(1),
        geo.cols.max(1),
        wide_cells(shape.font),
    )
}

/// `planArchive(text, high, low, maxFrames)` (spec: snapcompact §9.3). `high` and `low`
/// carry their frame size. The text head and tail are one HQ capacity each (UTF-16 units,
/// cut on character boundaries); the middle is imaged: all HQ when it fits `max_frames`,
/// else up to [`HQ_EDGE_FRAMES`] HQ frames at each end around a dense LQ centre whose
/// oldest pages are dropped first. Doc shapes are not foveated: the first page and the
/// newest `max_frames − 1` are kept.
pub fn plan_archive(text: &str, high: &Shape, low: &Shape, max_frames: usize) -> ArchiveLayout {
    let edge = TEXT_EDGE_PAGES * high.geometry().capacity as usize;
    let total = utf16_len(text);
    if total <= 2 * edge {
        return ArchiveLayout {
            text_head: text.to_string(),
            kept_text: text.to_string(),
            ..ArchiveLayout::default()
        };
    }
    let head_end = utf16_prefix_end(text, edge);
    let tail_start = utf16_suffix_start(text, edge).max(head_end);
    let (head, middle, tail) = (
        &text[..head_end],
        &text[head_end..tail_start],
        &text[tail_start..],
    );
    if max_frames < 1 {
        return ArchiveLayout {
            text_head: head.to_string(),
            text_tail: tail.to_string(),
            kept_text: format!("{head}{tail}"),
            truncated_chars: ulen(middle),
            pages: Vec::new(),
        };
    }
    let mut out = ArchiveLayout {
        text_head: head.to_string(),
        text_tail: tail.to_string(),
        ..ArchiveLayout::default()
    };
    if high.is_doc() {
        let size = high.frame_size;
        let pages = shape_pages_raw(middle, high, size);
        if pages.len() > max_frames {
            let keep_tail = max_frames - 1;
            let dropped = &pages[1..pages.len() - keep_tail];
            out.truncated_chars = dropped.iter().map(|p| ulen(p)).sum();
            let kept: Vec<String> = std::iter::once(&pages[0])
                .chain(&pages[pages.len() - keep_tail..])
                .cloned()
                .collect();
            let flat: Vec<String> = kept.iter().map(|p| p.replace('\n', " ")).collect();
            out.kept_text = format!("{head}{}{tail}", flat.join(" "));
            out.pages = kept
                .into_iter()
                .map(|text| PlannedPage { text, dense: false })
                .collect();
        } else {
            out.kept_text = text.to_string();
            out.pages = pages
                .into_iter()
                .map(|text| PlannedPage { text, dense: false })
                .collect();
        }
        return out;
    }
    let hi = grid_pages(middle, high);
    if hi.len() <= max_frames {
        out.kept_text = text.to_string();
        out.pages = hi
            .into_iter()
            .map(|p| PlannedPage {
                text: p.to_string(),
                dense: false,
            })
            .collect();
        return out;
    }
    // Foveate: E legible frames at each end, a dense centre, oldest centre dropped first.
    let e = HQ_EDGE_FRAMES.min((max_frames - 1) / 2);
    let head_pages = &hi[..e];
    let tail_pages = &hi[hi.len() - e..];
    let head_len: usize = head_pages.iter().map(|p| p.len()).sum();
    let tail_len: usize = tail_pages.iter().map(|p| p.len()).sum();
    let centre = &middle[head_len..middle.len() - tail_len];
    let lo = grid_pages(centre, low);
    let budget = max_frames - 2 * e;
    let drop = lo.len().saturating_sub(budget);
    out.truncated_chars = lo[..drop].iter().map(|p| ulen(p)).sum();
    let kept_lo = &lo[drop..];
    let mut kept = String::with_capacity(text.len());
    kept.push_str(head);
    for p in head_pages.iter().chain(kept_lo).chain(tail_pages) {
        kept.push_str(p);
    }
    kept.push_str(tail);
    out.kept_text = kept;
    out.pages = head_pages
        .iter()
        .map(|p| (p, false))
        .chain(kept_lo.iter().map(|p| (p, true)))
        .chain(tail_pages.iter().map(|p| (p, false)))
        .map(|(p, dense)| PlannedPage {
            text: p.to_string(),
            dense,
        })
        .collect();
    out
}

/// Doc pages (`docPages`): wrapped lines in groups of `2 × rows`, joined by `\n`, without
/// the finishing pass (the render pass applies it with the carried dim state).
fn shape_pages_raw(text: &str, shape: &Shape, size: u32) -> Vec<String> {
    let geo = shape.geometry_at(size);
    let lines = wrap(text, geo.cols, wide_cells(shape.font));
    let per_page = (2 * geo.rows).max(1) as usize;
    lines.chunks(per_page).map(|c| c.join("\n")).collect()
}

// ----- compact -----------------------------------------------------------------------------

/// Options of [`compact`] (spec: snapcompact §9.2).
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveOptions {
    /// Transcript caps and switches; `include_thinking: false` also scrubs carried text.
    pub serialize: SerializeOptions,
    /// The reader model (`{api, id}`).
    pub model: Target,
    /// An explicit shape (else resolved for the model and the text).
    pub shape: Option<Shape>,
    /// Frame width (default: the shape's).
    pub frame_size: Option<u32>,
    /// Frame cap, clamped to [1, 80] (default 80).
    pub max_frames: Option<u32>,
    /// Minimum frame height in px (spec §7.8; default [`DEFAULT_MIN_HEIGHT`]).
    pub min_height: u32,
    pub compression: Compression,
}

impl Default for ArchiveOptions {
    fn default() -> Self {
        ArchiveOptions {
            serialize: SerializeOptions::default(),
            model: Target::default(),
            shape: None,
            frame_size: None,
            max_frames: None,
            min_height: DEFAULT_MIN_HEIGHT,
            compression: Compression::default(),
        }
    }
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

/// `compact(preparation, options)` (spec: snapcompact §9.2): serializes the messages, folds
/// in the previous archive's kept source (or a previous text summary), plans and renders the
/// archive, and writes the reading guide. No model is asked anything.
pub fn compact(
    input: ArchiveInput<'_>,
    options: &ArchiveOptions,
    fallbacks: &FallbackFonts,
) -> Result<ArchiveResult, SnapError> {
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

    // Render, carrying the dim state from the text head through the frames (§9.2 step 11).
    let mut dim_open = ends_dim(&layout.text_head);
    let mut frames = Vec::with_capacity(layout.pages.len());
    let mut records = Vec::with_capacity(layout.pages.len());
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
        let frame = render_page(text, &snap_options(shape, options), fallbacks)?;
        records.push(frame_record(&frame, &shape));
        frames.push(frame);
    }
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
    };
    let files = files_section(input.file_lists, input.read_set);
    let summary = if archive.frames.is_empty()
        && archive.text_head.is_none()
        && archive.text_tail.is_none()
        && files.is_none()
    {
        NO_PRIOR_HISTORY.to_string()
    } else {
        reading_guide(&GuideFacts {
            frames: &archive.frames,
            high: &high,
            truncated_chars: archive.truncated_chars,
            included_previous_summary,
            files: files.as_deref(),
        })
    };
    let short_summary = short_summary(&archive);
    let mut preserve = match input.previous_preserve_data {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    preserve.remove("openaiRemoteCompaction");
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

// ----- reading guide -------------------------------------------------------------------------

/// Heading underline of the guide (19 `=`, spec: snapcompact §9.4).
const RULE: &str = "===================";

/// The facts the reading guide states (spec: snapcompact §9.4).
pub struct GuideFacts<'a> {
    pub frames: &'a [ArchiveFrame],
    /// The HQ shape at the frame size in effect.
    pub high: &'a Shape,
    pub truncated_chars: u64,
    pub included_previous_summary: bool,
    /// The FILES tree.
    pub files: Option<&'a str>,
}

/// The width note: distinct frame widths in first-seen order joined by ` or `, else the HQ
/// width (spec: snapcompact §9.2 step 14).
pub fn width_note(frames: &[ArchiveFrame], high: &Shape) -> String {
    let mut seen: Vec<u64> = Vec::new();
    for f in frames {
        if !seen.contains(&f.cols) {
            seen.push(f.cols);
        }
    }
    if seen.is_empty() {
        seen.push(high.geometry().cols.into());
    }
    seen.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The reading guide (spec: snapcompact §9.4), in our own words: how the archived history
/// below is laid out (scopes, verbatim text edges, imaged middle and its grid geometry,
/// inks), what was folded in or dropped, the FILES tree, and the HISTORY heading the
/// history blocks follow.
pub fn reading_guide(f: &GuideFacts<'_>) -> String {
    let geo = f.high.geometry();
    let mut s = String::with_capacity(2048);
    s.push_str(
        "Context note: the conversation so far was compacted. Its earlier turns are archived \
         under HISTORY at the end of this message, from oldest to newest. Read all of HISTORY, \
         then carry on with the live conversation that follows it.\n\n",
    );
    s.push_str("How the archived transcript is written:\n");
    s.push_str(
        "- Scope markers `¶user:`, `¶think:`, `¶ai:` and `¶call:` open a user turn, assistant \
         reasoning, an assistant reply and a tool call.\n",
    );
    s.push_str(
        "- A line with no marker belongs to the scope above it; when blocks of the same kind \
         follow each other the marker is written only once.\n",
    );
    s.push_str(
        "- A tool call reads `¶call:name(args)//intent`, where the `//intent` part may be \
         absent; `<out>…</out>` encloses the tool's output.\n\n",
    );
    s.push_str("How to read HISTORY:\n");
    s.push_str("- Plain text there is the verbatim transcript: take it as exact.\n");
    if !f.frames.is_empty() {
        s.push_str(
            "- The middle of the transcript is given as images instead of text. Each image \
             is one page of the same transcript, in reading order, between delimiter lines. A \
             solid black cell stands for a line break, and runs of spaces are printed as one.\n",
        );
        let cols = width_note(f.frames, f.high);
        if f.high.is_doc() {
            s.push_str(&format!(
                "  - Page layout: two columns side by side, each {cols} characters wide and \
                 up to {} rows tall; read the left column from top to bottom, then the right \
                 one.\n",
                geo.rows
            ));
        } else {
            s.push_str(&format!(
                "  - Page layout: a single grid {cols} characters wide and up to {} rows \
                 tall, read left to right and top to bottom. Text is not word-wrapped, so a \
                 word can continue on the next row.\n",
                geo.rows
            ));
        }
        if f.high.ink == crate::render::shape::catalogue::Ink::Sent {
            s.push_str("  - Sentences cycle through six ink colours, one colour per sentence.\n");
        }
        if f.high.stopword_dim {
            s.push_str("  - Function words are printed in dim gray, content words in full ink.\n");
        }
        if f.high.line_repeat > 1 {
            s.push_str(
                "  - Every line is printed twice, first on white and then on a pale yellow \
                 band; the two copies are identical.\n",
            );
        }
    }
    if f.included_previous_summary {
        s.push_str(
            "- HISTORY begins with a condensed digest of still-older context, written before \
             the archived turns.\n",
        );
    }
    if f.truncated_chars > 0 {
        s.push_str(&format!(
            "- About {} characters of older middle history were left out to keep the archive \
             within its budget.\n",
            f.truncated_chars
        ));
    }
    s.push_str(
        "- When an exact earlier detail matters and its section is hard to read, recover it \
         from the workspace (re-read the file, re-run the command) instead of guessing.\n",
    );
    if let Some(files) = f.files {
        s.push_str(&format!("\nFILES\n{RULE}\n{files}\n"));
    }
    s.push_str(&format!("\nHISTORY\n{RULE}"));
    s
}

// ----- messages ------------------------------------------------------------------------------

/// A provider message (the output of `convertToLlm`: roles `user`, `developer`, `assistant`,
/// `toolResult`) → the transcript's message model (`None` for other roles). `useless` holds
/// the `toolCallId`s of results flagged useless (spec: snapcompact §6.1: those pairs are
/// skipped).
pub fn archive_message(m: &Value, useless: &FxHashSet<Box<str>>) -> Option<ArchiveMessage> {
    let text_of = |v: Option<&Value>| -> String {
        match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect(),
            _ => String::new(),
        }
    };
    let s = |b: &Value, k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match m.get("role").and_then(Value::as_str) {
        Some("user") | Some("developer") => Some(ArchiveMessage::User {
            text: text_of(m.get("content")),
        }),
        Some("assistant") => {
            let blocks = m
                .get("content")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("text") => Some(AssistantBlock::Text(s(b, "text"))),
                    Some("thinking") => Some(AssistantBlock::Thinking(s(b, "thinking"))),
                    Some("toolCall") => Some(AssistantBlock::ToolCall {
                        id: s(b, "id"),
                        name: s(b, "name"),
                        arguments: b
                            .get("arguments")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                        intent: b.get("intent").and_then(Value::as_str).map(str::to_string),
                    }),
                    _ => None,
                })
                .collect();
            Some(ArchiveMessage::Assistant { blocks })
        }
        Some("toolResult") => {
            let id = s(m, "toolCallId");
            Some(ArchiveMessage::ToolResult {
                useless: useless.contains(id.as_str())
                    || m.get("useless").and_then(Value::as_bool) == Some(true),
                tool_call_id: id,
                text: text_of(m.get("content")),
                is_error: m.get("isError").and_then(Value::as_bool) == Some(true),
            })
        }
        _ => None,
    }
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

    #[test]
    fn utf16_edges_do_not_split_pairs() {
        let s = "a😀b";
        assert_eq!(utf16_prefix_end(s, 2), 1);
        assert_eq!(utf16_suffix_start(s, 2), 5);
    }
}
