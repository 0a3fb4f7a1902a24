//! `historyBlocks` (spec: snapcompact §9.6): an archive back into the content blocks of the
//! compaction-summary message — verbatim text head, the imaged middle, verbatim text tail —
//! within a per-request byte budget and image count; frame payloads inline, left out (for
//! estimates) or as references the JS shell resolves.

use crate::archive::{plain_text, Archive, ArchiveFrame};

/// One content block of the compaction-summary message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryBlock {
    Text(String),
    Image {
        /// Base64 PNG.
        data: String,
        mime_type: String,
        /// Provider hint (`original`, …), copied from the frame.
        detail: Option<String>,
    },
}

impl HistoryBlock {
    /// The block as a provider content block (`{type:"text",text}` /
    /// `{type:"image",data,mimeType,detail?}`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            HistoryBlock::Text(t) => crate::support::json::object(vec![
                ("type", "text".into()),
                ("text", t.as_str().into()),
            ]),
            HistoryBlock::Image {
                data,
                mime_type,
                detail,
            } => {
                let mut v = crate::support::json::object(vec![
                    ("type", "image".into()),
                    ("data", data.as_str().into()),
                    ("mimeType", mime_type.as_str().into()),
                ]);
                if let (Some(d), Some(o)) = (detail, v.as_object_mut()) {
                    o.insert("detail".into(), d.clone().into());
                }
                v
            }
        }
    }
}

/// What the image block of a frame carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FrameData {
    /// The base64 payload, as a provider request needs it.
    #[default]
    Inline,
    /// Nothing: for token estimates, which charge every frame a flat rate (spec: compaction
    /// §3.1), so the context need not copy and parse megabytes of base64.
    Omitted,
    /// `<frame>:<length>`, a reference to frame `frame` (position in the archive's frames)
    /// whose payload has `length` bytes; the context builder prefixes `\0<entry id>:`. The
    /// JS shell resolves it from its copy of that entry's frames, so the payload crosses into
    /// JS once per compaction instead of on every request.
    Refs,
}

/// Budgets of one rebuilt request (spec: snapcompact §5.1, §5.4, §9.6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistoryOptions {
    /// Max base64 bytes of frames attached (newest frames win).
    pub max_frame_data_bytes: Option<u64>,
    /// Max image blocks attached (the provider's image budget; newest frames win).
    pub max_images: Option<usize>,
    pub data: FrameData,
}

impl HistoryOptions {
    /// Without frame payloads (see [`FrameData::Omitted`]).
    pub const WITHOUT_DATA: HistoryOptions = HistoryOptions {
        max_frame_data_bytes: None,
        max_images: None,
        data: FrameData::Omitted,
    };
}

/// Delimiter prefix (14 `-`, spec: snapcompact §9.6).
const DASHES: &str = "--------------";

/// `X.X MB` / `X.X KB` / `N B`.
fn format_bytes(n: u64) -> String {
    if n >= 1024 * 1024 {
        format!("{} MB", one_decimal(n, 20))
    } else if n >= 1024 {
        format!("{} KB", one_decimal(n, 10))
    } else {
        format!("{n} B")
    }
}

/// `n / 2^shift` with one decimal, rounded half to even: what `format!("{:.1}", x)` prints for
/// that (exactly representable) quotient, in integer arithmetic, so that the float formatting
/// machinery stays out of the build.
fn one_decimal(n: u64, shift: u32) -> String {
    let scaled = u128::from(n) * 10;
    let rest = scaled & ((1 << shift) - 1);
    // Below 2^64 for a shift of 10 or more (printed as u64: u128 formatting is more code).
    let mut tenths = (scaled >> shift) as u64;
    let half = 1u128 << (shift - 1);
    if rest > half || (rest == half && tenths % 2 == 1) {
        tenths += 1;
    }
    format!("{}.{}", tenths / 10, tenths % 10)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn omission_notice(frames: usize, bytes: u64) -> String {
    let mut s = format!("{DASHES} snapcompact image middle omitted\n");
    s.push_str(&format!(
        "{frames} archived image frame{} could not be included.",
        plural(frames)
    ));
    if bytes > 0 {
        s.push_str(&format!(
            " Their {} of base64 exceeded the per-request payload budget.",
            format_bytes(bytes)
        ));
    }
    s.push_str(" The summary above and the text edges are still complete.\n");
    s.push_str(DASHES);
    s
}

/// Whether a frame of `size` base64 bytes does not fit beside `kept` frames of `used` bytes
/// (spec: snapcompact §9.6, §15.6).
fn over_budget(opts: &HistoryOptions, used: u64, kept: usize, size: u64) -> bool {
    let over_bytes = opts
        .max_frame_data_bytes
        .is_some_and(|b| used.saturating_add(size) > b);
    let over_count = opts.max_images.is_some_and(|m| kept >= m);
    over_bytes || over_count
}

/// The number of frames [`history_blocks`] leaves out of the request under `opts`' budgets:
/// the count its omission notice states, as data (a host need not read it back from the
/// notice's text).
pub fn frames_left_out(archive: &Archive, opts: &HistoryOptions) -> usize {
    let (mut used, mut kept, mut omitted) = (0u64, 0usize, 0usize);
    for f in archive.frames.iter().rev().filter(|f| !f.is_unavailable()) {
        let size = f.data.len() as u64;
        if over_budget(opts, used, kept, size) {
            omitted += 1;
        } else {
            used += size;
            kept += 1;
        }
    }
    omitted
}

enum Slot {
    Image(String, Option<String>, String),
    Unavailable,
    /// Stored by reference to bytes the file does not hold ([`crate::archive::stored`]).
    Missing,
}

/// `historyBlocks(archive, {maxFrameDataBytes?, resolveFrameData?})` (spec: snapcompact
/// §9.6): `[text head (+ delimiter), (omission notice), images / unavailable notices,
/// (delimiter +) text tail]`. Without budgets, blob references or another [`FrameData`], every frame is
/// attached; otherwise frames are chosen newest first, skipping any that would exceed a
/// budget (spec §15.6: a smaller older frame may still fit). Blob references (frames kept
/// outside the entry) are unavailable slots.
pub fn history_blocks(archive: &Archive, opts: &HistoryOptions) -> Vec<HistoryBlock> {
    let needs_walk = opts.max_frame_data_bytes.is_some()
        || opts.max_images.is_some()
        || opts.data != FrameData::Inline
        || archive.frames.iter().any(ArchiveFrame::is_unavailable);
    let mut slots: Vec<Slot> = Vec::with_capacity(archive.frames.len());
    let mut omitted = 0usize;
    let mut omitted_bytes = 0u64;
    if !needs_walk {
        slots.extend(
            archive
                .frames
                .iter()
                .map(|f| Slot::Image(f.data.clone(), f.detail.clone(), f.mime_type.clone())),
        );
    } else {
        let mut used = 0u64;
        let mut kept = 0usize;
        for (k, f) in archive.frames.iter().enumerate().rev() {
            if f.is_blob_ref() {
                slots.push(Slot::Unavailable);
                continue;
            }
            if f.data.is_empty() {
                slots.push(Slot::Missing);
                continue;
            }
            let size = f.data.len() as u64;
            if over_budget(opts, used, kept, size) {
                omitted += 1;
                omitted_bytes += size;
                continue;
            }
            let data = match opts.data {
                FrameData::Inline => f.data.clone(),
                FrameData::Omitted => String::new(),
                FrameData::Refs => format!("{k}:{size}"),
            };
            used += size;
            kept += 1;
            slots.push(Slot::Image(data, f.detail.clone(), f.mime_type.clone()));
        }
        slots.reverse();
    }

    let mut middle: Vec<HistoryBlock> = Vec::new();
    let mut images = 0usize;
    let mut i = 0;
    while i < slots.len() {
        match &slots[i] {
            Slot::Image(data, detail, mime) => {
                images += 1;
                middle.push(HistoryBlock::Image {
                    data: data.clone(),
                    mime_type: mime.clone(),
                    detail: detail.clone(),
                });
                i += 1;
            }
            Slot::Unavailable => {
                let start = i;
                while i < slots.len() && matches!(slots[i], Slot::Unavailable) {
                    i += 1;
                }
                let n = i - start;
                middle.push(HistoryBlock::Text(format!(
                    "{DASHES} {n} archived image frame{} unavailable here {DASHES}",
                    plural(n)
                )));
            }
            Slot::Missing => {
                let start = i;
                while i < slots.len() && matches!(slots[i], Slot::Missing) {
                    i += 1;
                }
                let n = i - start;
                middle.push(HistoryBlock::Text(format!(
                    "{DASHES} {n} archived image frame{} missing: the session file does not \
                     hold the stored bytes {} refer{} to {DASHES}",
                    plural(n),
                    if n == 1 { "it" } else { "they" },
                    if n == 1 { "s" } else { "" }
                )));
            }
        }
    }

    let mut blocks: Vec<HistoryBlock> = Vec::new();
    let notice = (omitted > 0).then(|| omission_notice(omitted, omitted_bytes));
    let mut notice_placed = false;
    if let Some(head) = &archive.text_head {
        let mut t = plain_text(head);
        if images > 0 {
            t.push_str(&format!(
                "\n{DASHES} end of the text head; imaged middle below\n"
            ));
        } else if let Some(n) = &notice {
            t.push('\n');
            t.push_str(n);
            t.push('\n');
            notice_placed = true;
        }
        blocks.push(HistoryBlock::Text(t));
    }
    if let Some(n) = notice.filter(|_| !notice_placed) {
        blocks.push(HistoryBlock::Text(n));
    }
    // User turns of the dropped middle: older than every kept frame, so before them.
    if let Some(turns) = &archive.user_turns {
        blocks.push(HistoryBlock::Text(format!(
            "{DASHES} user turns of the omitted middle history, verbatim, oldest first\n{}\n\
             {DASHES} end of the kept user turns",
            plain_text(turns)
        )));
    }
    blocks.extend(middle);
    if let Some(tail) = &archive.text_tail {
        let prefix = if images > 0 {
            format!("{DASHES} text tail follows; imaged middle above\n")
        } else if archive.truncated_chars > 0 || omitted > 0 {
            format!("\n{DASHES} middle history omitted above\n")
        } else {
            String::new()
        };
        let t = format!("{prefix}{}", plain_text(tail));
        match blocks.last_mut() {
            Some(HistoryBlock::Text(last)) => last.push_str(&t),
            _ => blocks.push(HistoryBlock::Text(t)),
        }
    }
    blocks
}

/// `images(archive)` (spec: snapcompact §9.6): every frame as an image block, oldest first.
pub fn images(archive: &Archive) -> Vec<HistoryBlock> {
    archive
        .frames
        .iter()
        .filter(|f| !f.data.is_empty())
        .map(|f| HistoryBlock::Image {
            data: f.data.clone(),
            mime_type: f.mime_type.clone(),
            detail: f.detail.clone(),
        })
        .collect()
}

/// The number of frames the archive of compaction `index` loses to `opts`' budgets in a
/// request ([`frames_left_out`]; 0 without an archive). Kept with the entry's other
/// derived texts, so a host that asks on every request parses the entry once per compaction.
pub fn frames_left_out_at(
    session: &crate::session::Session,
    index: usize,
    opts: &HistoryOptions,
) -> usize {
    // The context's derived texts use 0–2 for the frame data; 3 is this count.
    let key = [
        opts.max_frame_data_bytes.unwrap_or(u64::MAX),
        opts.max_images.map_or(u64::MAX, |n| n as u64),
        3,
    ];
    let count = session.derived_text(index, key, &mut || {
        let archive = crate::archive::stored::read_archive(session, index)?;
        Ok(Some(
            archive.map_or(0, |a| frames_left_out(&a, opts)).to_string(),
        ))
    });
    count
        .ok()
        .flatten()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_print_as_the_float_formatting_did() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1024), "1.0 KB");
        assert_eq!(format_bytes(1024 * 1024 - 1), "1024.0 KB");
        assert_eq!(format_bytes(3 * 1024 * 1024 / 2), "1.5 MB");
        assert_eq!(format_bytes(1280), "1.2 KB");
        assert_eq!(format_bytes(1792 << 10), "1.8 MB");
        // Every value up to a few MB, including the exact halves (x.x5 rounds to even), and
        // some large ones, against `{:.1}` of the f64 quotient.
        let large = [u64::MAX >> 12, 987_654_321_987, 5 << 40];
        for n in (1024..3 << 20)
            .step_by(97)
            .chain([1280, 1792, 1280 << 10, 1792 << 10])
            .chain(large)
        {
            let want = if n >= 1 << 20 {
                format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
            } else {
                format!("{:.1} KB", n as f64 / 1024.0)
            };
            assert_eq!(format_bytes(n), want, "{n}");
        }
    }

    /// The count [`frames_left_out`] gives is the one the omission notice states, for every
    /// byte and image budget over frames of mixed sizes (blob references among them).
    #[test]
    fn frames_left_out_is_the_notices_count() {
        let frame = |n: usize| ArchiveFrame {
            data: "A".repeat(n),
            mime_type: "image/png".into(),
            cols: 1,
            rows: 1,
            chars: 1,
            font: None,
            variant: None,
            line_repeat: None,
            columns: None,
            stopword_dim: None,
            detail: None,
            data_ref: None,
        };
        let sizes = [40, 10, 70, 10, 30, 50];
        let mut archive = Archive {
            frames: sizes.iter().map(|&n| frame(n)).collect(),
            text_head: Some("head".into()),
            text_tail: Some("tail".into()),
            ..Archive::default()
        };
        for blob_ref in [false, true] {
            if blob_ref {
                archive.frames[2].data = "blob:sha256:00".into();
            }
            for bytes in [None, Some(0), Some(25), Some(80), Some(1000)] {
                for images in [None, Some(0), Some(1), Some(3), Some(9)] {
                    let opts = HistoryOptions {
                        max_frame_data_bytes: bytes,
                        max_images: images,
                        data: FrameData::Omitted,
                    };
                    let notice = history_blocks(&archive, &opts)
                        .iter()
                        .find_map(|b| match b {
                            HistoryBlock::Text(t) => t
                                .split_once(" archived image frame")
                                .filter(|(_, rest)| rest.contains("could not be included"))
                                .and_then(|(n, _)| n.rsplit(['\n', ' ']).next()?.parse().ok()),
                            _ => None,
                        })
                        .unwrap_or(0);
                    assert_eq!(frames_left_out(&archive, &opts), notice, "{opts:?}");
                }
            }
        }
        let all = HistoryOptions {
            max_images: Some(0),
            ..HistoryOptions::default()
        };
        assert_eq!(frames_left_out(&archive, &all), 5);
    }
}
