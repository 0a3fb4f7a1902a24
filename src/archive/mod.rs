//! The snapcompact archive as persisted (spec: snapcompact §9.1, §9.5, §10): the record under
//! `preserveData.snapcompact`, reading and stripping it, its plain source text, the thinking
//! scrub of carried-forward text, and the blocks it puts into an LLM context ([`blocks`]).
//! Writing one is the snapcompact strategy's work (`crate::compaction::snapcompact`).

pub mod blocks;
mod frame_ref;
pub mod stored;

pub use blocks::frames_left_out_at;

use crate::render::text::dataurl::{elide_data_urls, Elision};
use crate::render::text::unicode::{utf16_len, DIM_OFF, DIM_ON, NEWLINE_GLYPH};
use serde_json::{Map, Value};

/// Key of the archive inside `CompactionEntry.preserveData` (spec: snapcompact §2).
pub const PRESERVE_KEY: &str = crate::session::preserve::SNAPCOMPACT;
/// Legible frames kept at each end of the imaged middle when foveating (spec: §2, §9.3).
pub const HQ_EDGE_FRAMES: usize = 3;
/// Verbatim text edge at each end, in HQ-frame capacities (spec: §2 `TEXT_EDGE_PAGES`).
pub const TEXT_EDGE_PAGES: usize = 1;
/// The summary of an archive that holds nothing (spec: §9.2 step 16).
pub const NO_PRIOR_HISTORY: &str = "No prior history.";
/// Label of a folded-in previous text summary (spec: §9.2 step 6).
pub const EARLIER_SUMMARY_LABEL: &str = "[Summary of earlier history]";
/// Label of the new turns after a folded-in previous summary (spec: §9.2 step 6).
pub const RECENT_LABEL: &str = "[Recent conversation]";
/// Key of the record's retained user turns ([`Archive::user_turns`]).
pub const USER_TURNS_KEY: &str = "userTurns";
/// Token budget of the retained user turns: the 64,000 tokens OpenAI's V2 compaction keeps
/// user messages under (spec: compaction §9.2 `compaction.v2RetainedMessageBudget`; issue 19
/// point 3).
pub const RETAINED_USER_BUDGET_TOKENS: u64 = 64_000;
/// Prefix of an externalised frame payload the host resolves (spec: §9.1).
pub const BLOB_PREFIX: &str = "blob:sha256:";

/// One frame of the record (spec: snapcompact §9.1). Legacy frames without metadata are
/// 5x8 `sent` frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveFrame {
    /// Base64 PNG, or a `blob:sha256:…` reference the host resolves.
    pub data: String,
    pub mime_type: String,
    /// Characters per row (per column on doc frames).
    pub cols: u64,
    /// Grid rows (not repeated copies).
    pub rows: u64,
    /// Visible characters printed.
    pub chars: u64,
    pub font: Option<String>,
    pub variant: Option<String>,
    pub line_repeat: Option<u64>,
    /// Only when 2.
    pub columns: Option<u64>,
    /// Only when true.
    pub stopword_dim: Option<bool>,
    /// Provider hint (`original`, …).
    pub detail: Option<String>,
    /// Where the payload is stored when the entry holds a `dataRef` instead of `data`
    /// ([`stored`]; ours, not the reference's). `data` is empty until [`stored::resolve`]
    /// finds the bytes, and stays empty when the file does not hold them.
    pub data_ref: Option<frame_ref::FrameRef>,
}

/// The persisted record `preserveData.snapcompact` (spec: snapcompact §9.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Archive {
    /// The imaged middle, oldest → newest (may be empty).
    pub frames: Vec<ArchiveFrame>,
    /// Characters readable across frames and text edges.
    pub total_chars: u64,
    /// Characters dropped over all compactions.
    pub truncated_chars: u64,
    /// The whole kept source (normalized, bounded): re-rendered by the next compaction.
    pub text: Option<String>,
    /// Oldest verbatim region.
    pub text_head: Option<String>,
    /// Newest verbatim region.
    pub text_tail: Option<String>,
    /// User turns of middle history the archive dropped, kept verbatim (printed form, turns
    /// joined by the newline glyph, oldest first), persisted as `userTurns`. Ours, not the
    /// reference's: user turns are never silently dropped when the archive overflows (issue
    /// 19 point 3); the reference's reader ignores the key.
    pub user_turns: Option<String>,
}

fn non_empty_string(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn count(v: Option<&Value>) -> Option<u64> {
    let f = v?.as_f64()?;
    Some(if f.is_finite() && f > 0.0 {
        f as u64
    } else {
        0
    })
}

impl ArchiveFrame {
    /// Reads a frame; `None` unless `data` is a non-empty string, `mimeType` a string and
    /// `cols`/`rows`/`chars` numbers (spec: §9.1 `getPreservedArchive`). A frame stored by
    /// reference (`dataRef` instead of `data`) is read with an empty `data` and its
    /// [`stored::FrameRef`] (a malformed one never resolves: a placeholder, not a skip).
    pub fn from_json(v: &Value) -> Option<ArchiveFrame> {
        let o = v.as_object()?;
        let (data, data_ref) = match non_empty_string(o.get("data")) {
            Some(data) => (data, None),
            None => (
                String::new(),
                Some(frame_ref::FrameRef::from_json(
                    o.get(frame_ref::DATA_REF_KEY)?,
                )),
            ),
        };
        let mime_type = o.get("mimeType")?.as_str()?.to_string();
        Some(ArchiveFrame {
            data,
            mime_type,
            cols: count(o.get("cols"))?,
            rows: count(o.get("rows"))?,
            chars: count(o.get("chars"))?,
            font: o.get("font").and_then(Value::as_str).map(str::to_string),
            variant: o.get("variant").and_then(Value::as_str).map(str::to_string),
            line_repeat: o.get("lineRepeat").and_then(Value::as_u64),
            columns: o.get("columns").and_then(Value::as_u64),
            stopword_dim: o.get("stopwordDim").and_then(Value::as_bool),
            detail: o.get("detail").and_then(Value::as_str).map(str::to_string),
            data_ref,
        })
    }

    /// The frame as persisted: `dataRef` in place of `data` for a frame stored by reference.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        match &self.data_ref {
            Some(r) => m.insert(frame_ref::DATA_REF_KEY.into(), r.to_json()),
            None => m.insert("data".into(), self.data.clone().into()),
        };
        m.insert("mimeType".into(), self.mime_type.clone().into());
        m.insert("cols".into(), self.cols.into());
        m.insert("rows".into(), self.rows.into());
        m.insert("chars".into(), self.chars.into());
        let opt = |m: &mut Map<String, Value>, k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.into(), v);
            }
        };
        opt(&mut m, "font", self.font.clone().map(Value::from));
        opt(&mut m, "variant", self.variant.clone().map(Value::from));
        opt(&mut m, "lineRepeat", self.line_repeat.map(Value::from));
        opt(&mut m, "columns", self.columns.map(Value::from));
        opt(&mut m, "stopwordDim", self.stopword_dim.map(Value::from));
        opt(&mut m, "detail", self.detail.clone().map(Value::from));
        Value::Object(m)
    }

    /// Is the payload an externalised reference the host has to resolve?
    pub fn is_blob_ref(&self) -> bool {
        self.data.starts_with(BLOB_PREFIX)
    }

    /// Does the record lack the frame's bytes: an externalised blob, or a `dataRef` the file
    /// does not resolve? Such a frame is a placeholder in the context, never an image.
    pub fn is_unavailable(&self) -> bool {
        self.data.is_empty() || self.is_blob_ref()
    }
}

impl Archive {
    /// The record as persisted (optional text fields only when non-empty).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "frames".into(),
            Value::Array(self.frames.iter().map(ArchiveFrame::to_json).collect()),
        );
        m.insert("totalChars".into(), self.total_chars.into());
        m.insert("truncatedChars".into(), self.truncated_chars.into());
        for (k, v) in [
            ("text", &self.text),
            ("textHead", &self.text_head),
            ("textTail", &self.text_tail),
            (USER_TURNS_KEY, &self.user_turns),
        ] {
            if let Some(s) = v.as_ref().filter(|s| !s.is_empty()) {
                m.insert(k.into(), s.clone().into());
            }
        }
        Value::Object(m)
    }

    /// Characters of the two verbatim edges (UTF-16 units, as the reference counts).
    pub fn text_edge_chars(&self) -> u64 {
        [&self.text_head, &self.text_tail]
            .iter()
            .map(|s| s.as_deref().map_or(0, utf16_len) as u64)
            .sum()
    }
}

/// `getPreservedArchive(preserveData)` (spec: snapcompact §9.1): `None` unless
/// `preserveData.snapcompact` is an object holding at least one valid frame or text; invalid
/// frames are skipped, empty text fields dropped, missing counters read as 0.
pub fn get_preserved_archive(preserve_data: Option<&Value>) -> Option<Archive> {
    let o = preserve_data?.get(PRESERVE_KEY)?.as_object()?;
    let frames: Vec<ArchiveFrame> = o
        .get("frames")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(ArchiveFrame::from_json).collect())
        .unwrap_or_default();
    let text = non_empty_string(o.get("text"));
    let text_head = non_empty_string(o.get("textHead"));
    let text_tail = non_empty_string(o.get("textTail"));
    let user_turns = non_empty_string(o.get(USER_TURNS_KEY));
    if frames.is_empty()
        && text.is_none()
        && text_head.is_none()
        && text_tail.is_none()
        && user_turns.is_none()
    {
        return None;
    }
    Some(Archive {
        frames,
        total_chars: count(o.get("totalChars")).unwrap_or(0),
        truncated_chars: count(o.get("truncatedChars")).unwrap_or(0),
        text,
        text_head,
        text_tail,
        user_turns,
    })
}

/// `stripPreservedArchive(preserveData)` (spec: snapcompact §9.1): without the `snapcompact`
/// key; unchanged when the key is absent; `None` when nothing else remains (never `{}`).
pub fn strip_preserved_archive(preserve_data: Option<&Value>) -> Option<Value> {
    let v = preserve_data?;
    let Some(o) = v.as_object() else {
        return Some(v.clone());
    };
    if !o.contains_key(PRESERVE_KEY) {
        return Some(v.clone());
    }
    let mut o = o.clone();
    o.remove(PRESERVE_KEY);
    (!o.is_empty()).then_some(Value::Object(o))
}

/// The archive's source in its printed form: `text`, else the non-empty head and tail
/// joined by the newline glyph (spec: snapcompact §9.2 step 2). Empty for a frame-only
/// legacy archive (§10).
pub fn printed_source(archive: &Archive) -> String {
    if let Some(t) = &archive.text {
        return t.clone();
    }
    let parts: Vec<&str> = [&archive.text_head, &archive.text_tail]
        .into_iter()
        .filter_map(|s| s.as_deref().filter(|s| !s.is_empty()))
        .collect();
    parts.join(&NEWLINE_GLYPH.to_string())
}

/// Printed archive text → what a reader sees: toggles removed, the newline glyph back to
/// `\n`, data URLs healed (archive mode) (spec: snapcompact §9.1 `archiveSourceText`).
pub fn plain_text(printed: &str) -> String {
    elide_data_urls(&without_toggles(printed), Elision::Archive).into_owned()
}

/// `printed` without the dim toggles and with each newline glyph back to `\n`, copied a run
/// at a time between the bytes that can start one of the three (an archive is megabytes).
fn without_toggles(printed: &str) -> String {
    const GLYPH: [u8; 3] = [0xE2, 0x96, 0x88];
    const _: () = assert!(DIM_ON as u32 == 0x0E && DIM_OFF as u32 == 0x0F);
    const _: () = assert!(NEWLINE_GLYPH as u32 == 0x2588);
    let b = printed.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut at = 0;
    while let Some(k) = memchr::memchr3(0x0E, 0x0F, GLYPH[0], &b[at..]) {
        let k = at + k;
        out.extend_from_slice(&b[at..k]);
        at = k + 1;
        match b[k] {
            0x0E | 0x0F => {}
            _ if b[k..].starts_with(&GLYPH) => {
                out.push(b'\n');
                at = k + GLYPH.len();
            }
            // Another character led by 0xE2: its continuation bytes follow as they are.
            lead => out.push(lead),
        }
    }
    out.extend_from_slice(&b[at..]);
    // Whole characters were removed and one replaced by an ASCII byte: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `archiveSourceText(archive)` (spec: snapcompact §9.1): the plain source text an LLM
/// summary absorbs when the next compaction is not a snapcompact one; `None` when empty.
pub fn archive_source_text(archive: &Archive) -> Option<String> {
    let s = plain_text(&printed_source(archive));
    (!s.is_empty()).then_some(s)
}

/// `renderabilityProbeText` (spec: snapcompact §9.1): everything that will be printed, for
/// shape choice and the renderability preflight.
pub fn renderability_probe_text(
    serialized: &str,
    previous_preserve_data: Option<&Value>,
    previous_summary: Option<&str>,
) -> String {
    let previous = get_preserved_archive(previous_preserve_data)
        .and_then(|a| archive_source_text(&a))
        .or_else(|| {
            previous_summary
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        });
    match previous {
        Some(p) => format!("{p}{NEWLINE_GLYPH}{serialized}"),
        None => serialized.to_string(),
    }
}

/// The thinking scrub for carried-forward archive text (spec: snapcompact §9.5): segments
/// between newline glyphs (and, within them, sections after a blank line that start a new
/// scope) that open with `¶think:` are dropped; empty segments are removed.
pub fn scrub_thinking(text: &str) -> String {
    let glyph = NEWLINE_GLYPH.to_string();
    let kept: Vec<String> = text
        .split(NEWLINE_GLYPH)
        .filter_map(|segment| {
            let sections: Vec<&str> = split_scope_sections(segment);
            let kept: Vec<&str> = sections
                .into_iter()
                .filter(|s| !s.starts_with("¶think:"))
                .collect();
            let joined = kept.join("\n\n");
            (!joined.is_empty()).then_some(joined)
        })
        .collect();
    kept.join(&glyph)
}

/// Splits on a blank line followed by a scope prefix (`¶`), dropping the blank line.
fn split_scope_sections(segment: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut from = 0;
    while let Some(off) = segment[from..].find("\n\n¶") {
        let at = from + off;
        out.push(&segment[start..at]);
        start = at + 2;
        from = start;
    }
    out.push(&segment[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toggles_go_and_glyphs_turn_into_newlines_as_a_character_walk_does() {
        let walk = |t: &str| -> String {
            t.chars()
                .filter(|&c| c != DIM_ON && c != DIM_OFF)
                .map(|c| if c == NEWLINE_GLYPH { '\n' } else { c })
                .collect()
        };
        let pieces = [
            "a", "\u{0E}", "\u{0F}", "\u{2588}", "\u{2589}", "\u{2000}", "é", "😀", "\n", "",
        ];
        // Every sequence of up to three pieces, plus one long mixed text.
        let mut texts = vec![pieces.concat().repeat(50)];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    texts.push(format!("{a}{b}{c}"));
                }
            }
        }
        for t in texts {
            assert_eq!(without_toggles(&t), walk(&t), "{t:?}");
        }
    }

    #[test]
    fn scrubs_thinking_segments() {
        let t = "¶user:hi█¶think:secret█more█¶ai:ok";
        assert_eq!(scrub_thinking(t), "¶user:hi█more█¶ai:ok");
    }
}
