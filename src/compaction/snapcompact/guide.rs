//! The reading guide shown to the model beside the frames (spec: snapcompact §9.4).

use crate::archive::ArchiveFrame;
use crate::render::shape::catalogue::Shape;

/// Heading underline of the guide (19 `=`, spec: snapcompact §9.4).
const RULE: &str = "===================";

/// The facts the reading guide states (spec: snapcompact §9.4).
pub struct GuideFacts<'a> {
    pub frames: &'a [ArchiveFrame],
    /// The HQ shape at the frame size in effect.
    pub high: &'a Shape,
    pub truncated_chars: u64,
    pub included_previous_summary: bool,
    /// User turns of dropped middle history are kept as text.
    pub user_turns: bool,
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
    if f.user_turns {
        s.push_str(
            "- The user's own messages from that left-out history are still given word for \
             word, in the text block marked as the kept user turns.\n",
        );
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
