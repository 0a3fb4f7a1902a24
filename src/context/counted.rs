//! The context the token accounting counts (spec: compaction §3, §13): the path as the
//! provider of its latest native compaction reads it, replay included.

use super::build::{build_context_with, BuildOptions, SessionContext};
use crate::archive::blocks::HistoryOptions;
use crate::error::Result;
use crate::session::Session;
use serde_json::Value;

/// The provider of the OpenAI native record of compaction entry `index`, if it has one.
fn openai_record_provider(session: &Session, index: usize) -> Option<String> {
    let text = session.entry_json(index);
    let path = [
        "preserveData",
        crate::session::preserve::OPENAI_REMOTE,
        "provider",
    ];
    let span = crate::support::json::edit::find_path(&text, &path).ok()??;
    match crate::support::json::parse(&text[span]).ok()? {
        Value::String(p) => Some(p),
        _ => None,
    }
}

/// The context the token accounting counts (spec: compaction §3): [`build_context_with`],
/// except that when `opts` names no reading provider, a path whose latest compaction carries
/// an OpenAI native record is built as that record's provider reads it — the requests after a
/// native compaction go to the model it compacted for, and they replay the record.
pub fn build_counted_context(
    session: &Session,
    opts: &BuildOptions,
    history: &HistoryOptions,
) -> Result<SessionContext> {
    let ctx = build_context_with(session, opts, history)?;
    if opts.replay_provider.is_some() || opts.transcript {
        return Ok(ctx);
    }
    match ctx
        .compaction
        .and_then(|c| openai_record_provider(session, c))
    {
        Some(provider) => {
            let reader = BuildOptions {
                replay_provider: Some(provider),
                replay_anthropic: false,
                ..opts.clone()
            };
            build_context_with(session, &reader, history)
        }
        None => Ok(ctx),
    }
}
