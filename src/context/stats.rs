//! What a built context holds, measured with the local estimate (spec: compaction §3.1): its
//! tokens per kind of message and its images, for the reports of the maintenance steps. The
//! archive's frames count by the estimate's flat rate, so build the context without their
//! payload (`archive::blocks::FrameData::Omitted`).

use super::SessionContext;
use crate::session::message::Role;
use crate::session::Session;
use crate::tokens::{ByteEstimate, EstimateOptions};

/// Tokens per kind: `summary` (compaction and branch summaries), `user` (user and developer),
/// `assistant`, `toolResult`, `other` (custom, bash and python runs, file mentions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextStats {
    pub tokens: u64,
    pub summary: u64,
    pub user: u64,
    pub assistant: u64,
    pub tool_result: u64,
    pub other: u64,
    /// Image blocks of the messages that can carry them (not assistants).
    pub images: u64,
}

/// Counts `"type": "image"` members in a message's JSON (images nest only as content blocks).
fn image_blocks(json: &str) -> u64 {
    let b = json.as_bytes();
    let mut n = 0;
    let mut from = 0;
    while let Some(at) = json[from..].find("\"type\"") {
        let mut i = from + at + 6;
        from = i;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b.get(i) != Some(&b':') {
            continue;
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if json[i..].starts_with("\"image\"") {
            n += 1;
        }
    }
    n
}

/// The stats of a built context.
pub fn context_stats(session: &Session, ctx: &SessionContext) -> ContextStats {
    let mut s = ContextStats::default();
    for m in &ctx.messages {
        let tokens = if m.is_entry_json() {
            session.entry_tokens(m.entry, EstimateOptions::default())
        } else {
            super::build::owned_tokens(m, session, &ByteEstimate, EstimateOptions::default())
        };
        s.tokens += tokens;
        let role = m.head.role;
        let slot = match role {
            Role::CompactionSummary | Role::BranchSummary => &mut s.summary,
            Role::User | Role::Developer => &mut s.user,
            Role::Assistant => &mut s.assistant,
            Role::ToolResult => &mut s.tool_result,
            _ => &mut s.other,
        };
        *slot += tokens;
        if role != Role::Assistant {
            s.images += image_blocks(&m.json(session));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::image_blocks;

    #[test]
    fn counts_image_blocks_only() {
        let j = r#"{"role":"user","content":[{"type":"text","text":"\"type\":\"image\" in text"},{"type": "image","data":"","mimeType":"image/png"},{"mimeType":"image/png","type":"image"}]}"#;
        // The text mentions the words inside a string, escaped: not a member.
        assert_eq!(image_blocks(j), 2);
        assert_eq!(image_blocks(r#"{"type":"text"}"#), 0);
        assert_eq!(image_blocks(r#"{"type""#), 0);
    }
}
