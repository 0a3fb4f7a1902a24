//! What a compaction left the model: the region's identifiers nothing it still sees shows.

use super::seen::Haystack;
use crate::archive::blocks::HistoryOptions;
use crate::compaction::plan::CompactionPlan;
use crate::context::{build_context_with, BuildOptions};
use crate::error::{Error, Result};
use crate::session::Session;
use crate::settings::Strategy;
use crate::summary::anchors::visible_text;

/// What a compaction left the model (issue 38 item 4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LossReport {
    /// Identifiers of the dropped region that nothing the model still sees shows: not the
    /// summary, not the anchor block, not a kept message, not an archive's text.
    pub lost: Vec<String>,
    /// Identifiers the anchor block holds.
    pub anchored: Vec<String>,
}

/// The loss report of `plan` once committed into `session` (the session the model reads
/// next: the compacted one, or a handoff's new session): the context at its leaf, as built
/// for the model (frames as images, which show no text), against the region's identifiers.
/// A plan no commit harvested the anchors of yet is harvested from `session` (the plan's
/// own session, compacted or not); a handoff's new session holds none of the entries the
/// plan names, so its plan must have been committed (`E_INVALID_ARGUMENT` otherwise).
pub fn loss_report(session: &Session, plan: &CompactionPlan) -> Result<LossReport> {
    let anchors = match plan.harvested_anchors() {
        Some(a) => a,
        None if plan.strategy != Strategy::Handoff => plan.anchors(session)?,
        None => {
            return Err(Error::InvalidArgument {
                what: "a handoff plan's loss report reads the plan its commit used: commit it \
                       first"
                    .into(),
            })
        }
    };
    let ctx = build_context_with(
        session,
        &BuildOptions::default(),
        &HistoryOptions::WITHOUT_DATA,
    )?;
    let messages: Vec<_> = ctx.messages.iter().map(|m| m.message(session)).collect();
    let text = visible_text(&messages);
    let hay = Haystack::new(&text);
    // The `<files>` block shows its paths grouped by folder (spec: compaction §5.10), never
    // whole: a path it lists is in view.
    let listed = plan.file_lists.listed();
    let lost = anchors
        .index
        .harvested()
        .filter(|a| !listed.contains(a.text.as_str()) && !hay.shows(&a.text))
        .map(|a| a.text.clone())
        .collect();
    let mut anchored = Vec::new();
    let mut rest = text.as_str();
    while let Some(open) = rest.find("<anchors>\n") {
        let body = &rest[open..];
        let end = body.find("</anchors>").unwrap_or(body.len());
        for line in body[..end].lines() {
            if let Some((_, t)) = line.strip_prefix("- ").and_then(|l| l.split_once(": ")) {
                anchored.push(t.to_string());
            }
        }
        rest = &body[end..];
    }
    Ok(LossReport { lost, anchored })
}
