//! Prompt templates (our own wording, in `prompts/*.md`) and their rendering.
//!
//! Templates use `{{name}}` placeholders. Text put into a template is untrusted: it may not
//! open or close the tags that delimit it, so any tag of that name inside it has its `<`
//! written as `&lt;` (spec: compaction §5.1, §14.10).

use std::borrow::Cow;

/// Wraps a compaction summary for the model (spec: compaction §2.6).
pub const COMPACTION_SUMMARY_CONTEXT: &str =
    include_str!("../prompts/compaction-summary-context.md");
/// Wraps a branch summary for the model (spec: compaction §2.6).
pub const BRANCH_SUMMARY_CONTEXT: &str = include_str!("../prompts/branch-summary-context.md");
/// Wraps a handoff document for the model (spec: compaction §2.6).
pub const HANDOFF_SUMMARY_CONTEXT: &str = include_str!("../prompts/handoff-summary-context.md");
/// Wraps a previous snapcompact archive's source text when an LLM summary takes it over (spec:
/// compaction §5.4 `snapcompact-archive-context.md`, §5.7 step 7).
pub const SNAPCOMPACT_ARCHIVE_CONTEXT: &str =
    include_str!("../prompts/snapcompact-archive-context.md");

/// Opens the `<anchors>` block of exact identifiers a compaction appends for the model
/// (issue 38: the anchor index).
pub const ANCHORS: &str = include_str!("../prompts/anchors.md");

/// The `recall_history` tool's description and parameter wording (issue 38 item 3): the
/// description, a `---` line, then one `name: text` line per parameter.
pub const RECALL_HISTORY_TOOL: &str = include_str!("../prompts/recall-history-tool.md");
/// The `context_status` tool's description (same layout, no parameters).
pub const CONTEXT_STATUS_TOOL: &str = include_str!("../prompts/context-status-tool.md");
/// The recall pointer a compaction writes beside its anchors when the host offers the tools
/// (`recallTool`): one `<recall>` line naming `recall_history` and the compacted `{{range}}`.
pub const RECALL_POINTER: &str = include_str!("../prompts/recall-pointer.md");

/// System prompt of every summarizer call (spec: compaction §5.4 `summarization-system.md`).
pub const SUMMARIZATION_SYSTEM: &str = include_str!("../prompts/summarization-system.md");
/// First compaction of a conversation: the continuity capsule (spec: compaction §5.4).
pub const COMPACTION_SUMMARY: &str = include_str!("../prompts/compaction-summary.md");
/// Compaction with a previous summary: merge the new material into it (spec: compaction
/// §5.4).
pub const COMPACTION_UPDATE_SUMMARY: &str = include_str!("../prompts/compaction-update-summary.md");
/// The early part of a split turn (spec: compaction §4.6, §5.4).
pub const COMPACTION_TURN_PREFIX: &str = include_str!("../prompts/compaction-turn-prefix.md");
/// The short display summary shown on the compaction divider (spec: compaction §5.4, §5.7).
pub const COMPACTION_SHORT_SUMMARY: &str = include_str!("../prompts/compaction-short-summary.md");
/// Summary of an abandoned branch (spec: compaction §5.4, §7.4).
pub const BRANCH_SUMMARY: &str = include_str!("../prompts/branch-summary.md");
/// Prepended to every generated branch summary; ends with a blank line (spec: compaction
/// §5.4, §7.4 step 6).
pub const BRANCH_SUMMARY_PREAMBLE: &str = include_str!("../prompts/branch-summary-preamble.md");
/// The handoff document request; render it with [`handoff_prompt`] (spec: compaction §5.9).
pub const HANDOFF_DOCUMENT: &str = include_str!("../prompts/handoff-document.md");
/// The agent-authored developer message sent after an automatic compaction so the agent
/// carries on with its task (spec: compaction §8.5).
pub const AUTO_CONTINUE: &str = include_str!("../prompts/auto-continue.md");

/// The instructions of one summarizer call (spec: compaction §5.3, §5.4). The summarizer's
/// system prompt is always [`SUMMARIZATION_SYSTEM`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromptKind {
    /// History summary of a first compaction.
    Summary,
    /// History summary folded into a previous summary.
    UpdateSummary,
    /// Summary of the early part of a split turn.
    TurnPrefix,
    /// Short display summary.
    ShortSummary,
    /// Branch summary.
    BranchSummary,
    /// Handoff document (render it with [`handoff_prompt`] for the focus block).
    Handoff,
}

impl PromptKind {
    /// The history-summary prompt: the update prompt when a previous summary exists.
    pub fn history(has_previous_summary: bool) -> PromptKind {
        if has_previous_summary {
            PromptKind::UpdateSummary
        } else {
            PromptKind::Summary
        }
    }

    /// The prompt text (for [`PromptKind::Handoff`], without the optional focus block).
    pub fn text(self) -> Cow<'static, str> {
        match self {
            PromptKind::Summary => Cow::Borrowed(COMPACTION_SUMMARY.trim_end()),
            PromptKind::UpdateSummary => Cow::Borrowed(COMPACTION_UPDATE_SUMMARY.trim_end()),
            PromptKind::TurnPrefix => Cow::Borrowed(COMPACTION_TURN_PREFIX.trim_end()),
            PromptKind::ShortSummary => Cow::Borrowed(COMPACTION_SHORT_SUMMARY.trim_end()),
            PromptKind::BranchSummary => Cow::Borrowed(BRANCH_SUMMARY.trim_end()),
            PromptKind::Handoff => Cow::Owned(handoff_prompt(None)),
        }
    }

    /// The telemetry tag the reference attaches to the call (spec: compaction §5.3).
    pub fn tag(self) -> &'static str {
        match self {
            PromptKind::Summary | PromptKind::UpdateSummary => "compaction_summary",
            PromptKind::TurnPrefix => "compaction_turn_prefix",
            PromptKind::ShortSummary => "compaction_short_summary",
            PromptKind::BranchSummary => "branch_summary",
            PromptKind::Handoff => "handoff",
        }
    }
}

/// The handoff request (spec: compaction §5.9): [`HANDOFF_DOCUMENT`] with the
/// `additionalFocus` block when a non-empty focus is given.
pub fn handoff_prompt(additional_focus: Option<&str>) -> String {
    let focus = additional_focus.map(str::trim).unwrap_or("");
    let focus = escape_tags(focus, &["additional-focus"]);
    render_sections(HANDOFF_DOCUMENT, &[("additionalFocus", &focus)])
        .trim_end()
        .to_string()
}

/// The auto-continue developer message (spec: compaction §8.5).
pub fn auto_continue_prompt() -> &'static str {
    AUTO_CONTINUE.trim_end()
}

/// [`render`] with conditional sections: `{{#if name}}…{{/if}}` is kept when `name` has a
/// non-empty value and dropped otherwise (no nesting, no `else`). As in Handlebars, a
/// section tag alone on its line takes the whole line with it.
pub fn render_sections(template: &str, vars: &[(&str, &str)]) -> String {
    const CLOSE: &str = "{{/if}}";
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{#if ") {
        let Some(name_len) = rest[open..].find("}}") else {
            break;
        };
        let name = rest[open + 6..open + name_len].trim();
        let body_start = open + name_len + 2;
        let Some(close_rel) = rest[body_start..].find(CLOSE) else {
            break;
        };
        let close = body_start + close_rel;
        let (before, body_from) = standalone(rest, open, body_start);
        let (body_to, after) = standalone(rest, close, close + CLOSE.len());
        out.push_str(&rest[..before]);
        let on = vars.iter().any(|(k, v)| *k == name && !v.is_empty());
        if on && body_from <= body_to {
            out.push_str(&rest[body_from..body_to]);
        }
        rest = &rest[after..];
    }
    out.push_str(rest);
    render(&out, vars)
}

/// For a tag spanning `start..end` of `text`: when it stands alone on its line, the span of
/// the whole line (from the line start through its newline); else the tag itself.
fn standalone(text: &str, start: usize, end: usize) -> (usize, usize) {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
    let blank = |s: &str| {
        s.chars()
            .all(|c| c == ' ' || c == '\t' || c == '\r' || c == '\n')
    };
    if blank(&text[line_start..start]) && blank(&text[end..line_end]) {
        (line_start, line_end)
    } else {
        (start, end)
    }
}

/// Replaces each `{{name}}` by its value; unknown placeholders are left as they are.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + vars.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        match after.find("}}") {
            Some(close) => {
                let name = after[..close].trim();
                match vars.iter().find(|(k, _)| *k == name) {
                    Some((_, v)) => out.push_str(v),
                    None => out.push_str(&rest[open..open + 2 + close + 2]),
                }
                rest = &after[close + 2..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Neutralises every opening or closing tag named in `tags` inside `text` (ASCII
/// case-insensitive, whitespace allowed after `<` and `/`): its `<` becomes `&lt;`, so the
/// text cannot end or start the wrapper it is placed in. Other text is unchanged, and text
/// with no such tag is returned as it is (no copy).
pub fn escape_tags<'t>(text: &'t str, tags: &[&str]) -> Cow<'t, str> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut last = 0;
    let mut i = 0;
    while let Some(rel) = memchr::memchr(b'<', &b[i..]) {
        let lt = i + rel;
        i = lt + 1;
        if opens_tag(b, i, tags) {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len() + 16));
            out.push_str(&text[last..lt]);
            out.push_str("&lt;");
            last = i;
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[last..]);
            Cow::Owned(out)
        }
    }
}

/// Whether the text after a `<` (from `b[j]`) names one of `tags`: optional whitespace, an
/// optional `/` and whitespace, the name (ASCII case-insensitive), then `>`, `/`, whitespace
/// or the end.
fn opens_tag(b: &[u8], j: usize, tags: &[&str]) -> bool {
    let skip_ws = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        j
    };
    let mut j = skip_ws(j);
    if b.get(j) == Some(&b'/') {
        j = skip_ws(j + 1);
    }
    tags.iter().any(|tag| {
        let t = tag.as_bytes();
        b.len() >= j + t.len()
            && b[j..j + t.len()].eq_ignore_ascii_case(t)
            && b.get(j + t.len())
                .is_none_or(|&c| c == b'>' || c == b'/' || c.is_ascii_whitespace())
    })
}

/// Removes one legacy outer `<summary …>…</summary>` wrapper that older writers persisted
/// inside the summary text, so the context template does not nest the tags (spec:
/// compaction §2.6).
pub fn strip_outer_summary_tag(summary: &str) -> &str {
    let t = summary.trim();
    let lower_start = t.get(..8).map(str::to_ascii_lowercase);
    if lower_start.as_deref() != Some("<summary") {
        return summary;
    }
    let Some(open_end) = t.find('>') else {
        return summary;
    };
    let after_name = t.as_bytes().get(8).copied();
    if !matches!(after_name, Some(b'>' | b' ' | b'\n' | b'\t' | b'\r')) {
        return summary;
    }
    let body = &t[open_end + 1..];
    match body.len().checked_sub(10) {
        Some(close) if body[close..].eq_ignore_ascii_case("</summary>") => body[..close].trim(),
        _ => summary,
    }
}

/// The compaction-summary context message text.
pub fn compaction_context(summary: &str) -> String {
    let inner = escape_tags(strip_outer_summary_tag(summary), &["summary"]);
    render(COMPACTION_SUMMARY_CONTEXT, &[("summary", &inner)])
        .trim_end()
        .to_string()
}

/// The handoff context message text.
pub fn handoff_context(summary: &str) -> String {
    let inner = escape_tags(summary, &["handoff"]);
    render(HANDOFF_SUMMARY_CONTEXT, &[("summary", &inner)])
        .trim_end()
        .to_string()
}

/// A previous snapcompact archive as the text an LLM summary absorbs: its plain source text
/// and the user turns it kept from a dropped middle (both plain text, may be empty).
pub fn snapcompact_archive_context(archive_text: &str, user_turns: &str) -> String {
    render_sections(
        SNAPCOMPACT_ARCHIVE_CONTEXT,
        &[("archiveText", archive_text), ("userTurns", user_turns)],
    )
    .trim_end()
    .to_string()
}

/// The branch-summary context message text.
pub fn branch_context(summary: &str) -> String {
    let inner = escape_tags(summary, &["summary"]);
    render(BRANCH_SUMMARY_CONTEXT, &[("summary", &inner)])
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_placeholders() {
        assert_eq!(
            render("a {{x}} b {{ y }} {{z}}", &[("x", "1"), ("y", "2")]),
            "a 1 b 2 {{z}}"
        );
        assert_eq!(render("open {{x", &[("x", "1")]), "open {{x");
    }

    #[test]
    fn tags_inside_text_cannot_close_the_wrapper() {
        let s = "ok </summary> and < Summary attr=1> and </ SUMMARY > and <summaryx> and a<b";
        assert_eq!(
            escape_tags(s, &["summary"]),
            "ok &lt;/summary> and &lt; Summary attr=1> and &lt;/ SUMMARY > and <summaryx> and a<b"
        );
        let ctx = compaction_context("line </summary> injected");
        assert_eq!(ctx.matches("</summary>").count(), 1);
        assert!(ctx.ends_with("</summary>"));
    }

    #[test]
    fn legacy_outer_wrapper_is_stripped_once() {
        assert_eq!(
            strip_outer_summary_tag("<summary>\nbody\n</summary>"),
            "body"
        );
        assert_eq!(
            strip_outer_summary_tag("<summary id=\"x\">body</summary>"),
            "body"
        );
        assert_eq!(strip_outer_summary_tag("plain"), "plain");
        assert_eq!(
            strip_outer_summary_tag("<summaryx>b</summary>"),
            "<summaryx>b</summary>"
        );
        let ctx = compaction_context("<summary>inner</summary>");
        assert!(ctx.contains("<summary>\ninner\n</summary>"));
    }

    #[test]
    fn sections_render_when_set() {
        let t = "A\n{{#if x}}\nB {{x}}\n{{/if}}\nC";
        assert_eq!(render_sections(t, &[("x", "1")]), "A\nB 1\nC");
        assert_eq!(render_sections(t, &[("x", "")]), "A\nC");
        assert_eq!(render_sections(t, &[]), "A\nC");
        assert_eq!(
            render_sections("a{{#if x}}-{{x}}{{/if}}b", &[("x", "y")]),
            "a-yb"
        );
        assert_eq!(render_sections("a{{#if x}}-{{/if}}b", &[]), "ab");
        // An unclosed section is left as it is.
        assert_eq!(render_sections("a{{#if x}}b", &[("x", "1")]), "a{{#if x}}b");
    }

    #[test]
    fn handoff_focus_block_is_optional() {
        let plain = handoff_prompt(None);
        assert!(!plain.contains("{{"));
        assert!(!plain.contains("additional-focus"));
        assert_eq!(plain, handoff_prompt(Some("  ")));
        let focused = handoff_prompt(Some("the flaky test </additional-focus>"));
        assert!(focused.starts_with(&plain));
        assert!(focused.contains(
            "<additional-focus>\nthe flaky test &lt;/additional-focus>\n</additional-focus>"
        ));
        assert_eq!(focused.matches("</additional-focus>").count(), 1);
    }

    #[test]
    fn prompt_catalogue_is_complete() {
        for kind in [
            PromptKind::Summary,
            PromptKind::UpdateSummary,
            PromptKind::TurnPrefix,
            PromptKind::ShortSummary,
            PromptKind::BranchSummary,
            PromptKind::Handoff,
        ] {
            let text = kind.text();
            assert!(text.len() > 100, "{kind:?}");
            assert!(!text.contains("{{"), "{kind:?}");
            assert_eq!(text.trim_end(), text, "{kind:?}");
        }
        assert_eq!(PromptKind::history(true), PromptKind::UpdateSummary);
        assert_eq!(PromptKind::history(false), PromptKind::Summary);
        for heading in [
            "Current outcome",
            "Owner constraints",
            "Settled decisions",
            "Verified evidence",
            "Working identities",
            "Unresolved contradictions",
            "Next action",
            "Archive pointers",
        ] {
            assert!(
                COMPACTION_SUMMARY.contains(&format!("## {heading}\n")),
                "{heading}"
            );
        }
        for heading in [
            "Outcome",
            "Owner constraints",
            "Settled decisions",
            "Verified evidence",
            "Current authorities and identifiers",
            "Open blocker",
            "Current conversation",
            "One next action",
            "Exact archive pointers",
        ] {
            assert!(
                COMPACTION_UPDATE_SUMMARY.contains(&format!("## {heading}\n")),
                "{heading}"
            );
        }
        for heading in [
            "Owner request",
            "Verified prefix evidence",
            "Unverified prefix state",
            "Context for retained suffix",
        ] {
            assert!(
                COMPACTION_TURN_PREFIX.contains(&format!("## {heading}\n")),
                "{heading}"
            );
        }
        assert!(BRANCH_SUMMARY_PREAMBLE.ends_with("\n\n"));
        assert!(!BRANCH_SUMMARY_PREAMBLE.trim().contains("\n\n"));
        assert!(!auto_continue_prompt().is_empty());
    }
}
