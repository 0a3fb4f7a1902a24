//! The original text of the results a prune blanks (issue 38 item 2, opt-in): the host that
//! passes `saveArtifact` to a prune stores each before its notice is written, so what pruning
//! drops can be recalled later. The session file is unchanged by this: the notices are those of
//! spec: compaction §6.1, and no artifact name is written into them.

use super::apply::{apply_prune, PruneReport};
use super::plan::PrunePlan;
use crate::error::{Error, Result};
use crate::session::message::AgentMessage;
use crate::session::Session;

/// The artifact kind of a pruned original.
pub const PRUNED_ARTIFACT_KIND: &str = "prune";

/// The original of one result a plan prunes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunedOriginal {
    /// `pruned-ENTRYID.txt`: the name the host is asked to store it under.
    pub name: String,
    pub entry_id: String,
    pub tool_name: String,
    pub tool_call_id: String,
    /// The text blocks of the result's content, concatenated (images are not text).
    pub text: String,
    /// The line's edit stamp when the plan was made (see [`apply_prune_originals`]).
    stamp: u64,
}

impl PrunedOriginal {
    /// `{name, kind: "prune", entryId, toolName, toolCallId, text}`.
    pub fn to_json(&self) -> serde_json::Value {
        crate::support::json::object(vec![
            ("name", self.name.as_str().into()),
            ("kind", PRUNED_ARTIFACT_KIND.into()),
            ("entryId", self.entry_id.as_str().into()),
            ("toolName", self.tool_name.as_str().into()),
            ("toolCallId", self.tool_call_id.as_str().into()),
            ("text", self.text.as_str().into()),
        ])
    }
}

/// The originals of every candidate of `plan`, in its order. `E_STALE_PLAN` when a candidate
/// is no longer the tool result the plan names.
pub fn pruned_originals(session: &Session, plan: &PrunePlan) -> Result<Vec<PrunedOriginal>> {
    plan.candidates
        .iter()
        .map(|c| {
            let message = session
                .entry(c.index)
                .filter(|e| e.id() == c.id)
                .and_then(|_| session.entry_message(c.index).ok().flatten());
            let Some(AgentMessage::ToolResult(r)) = message else {
                return Err(Error::StalePlan {
                    reason: format!("entry {} is not a tool result at index {}", c.id, c.index),
                });
            };
            Ok(PrunedOriginal {
                name: format!("pruned-{}.txt", c.id),
                entry_id: c.id.clone(),
                tool_name: c.tool_name.clone(),
                tool_call_id: c.tool_call_id.clone(),
                text: r.content.text(),
                stamp: session.line_stamp(c.index),
            })
        })
        .collect()
}

/// Applies `plan` once its `originals` were saved: `E_STALE_PLAN`, nothing written, when a
/// result's line changed since they were read (what was saved would not be what is dropped).
pub fn apply_prune_originals(
    session: &mut Session,
    plan: &PrunePlan,
    originals: &[PrunedOriginal],
) -> Result<PruneReport> {
    let same = originals.len() == plan.candidates.len()
        && plan.candidates.iter().zip(originals).all(|(c, o)| {
            c.id == o.entry_id
                && session.entry(c.index).is_some_and(|e| e.id() == c.id)
                && session.line_stamp(c.index) == o.stamp
        });
    if !same {
        return Err(Error::StalePlan {
            reason: "a pruned result changed after its original was read".into(),
        });
    }
    apply_prune(session, plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pruning::{plan_tool_outputs, PruneConfig};

    fn session() -> Session {
        let mut lines = vec![
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#.to_string(),
        ];
        let mut parent = "null".to_string();
        for i in 0..6 {
            let big = format!("secret_{i} {}", "word ".repeat(400));
            lines.push(format!(
                r#"{{"type":"message","id":"a{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:0{i}.000Z","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"c{i}","name":"bash","arguments":{{}}}}],"timestamp":1}}}}"#
            ));
            lines.push(format!(
                r#"{{"type":"message","id":"r{i}","parentId":"a{i}","timestamp":"2025-01-01T00:00:0{i}.500Z","message":{{"role":"toolResult","toolCallId":"c{i}","toolName":"bash","content":[{{"type":"text","text":"{big}"}}],"isError":false,"timestamp":1}}}}"#
            ));
            parent = format!("\"r{i}\"");
        }
        Session::load(
            lines.join("\n").into_bytes(),
            crate::session::LoadOptions::default(),
        )
        .unwrap()
    }

    fn plan(s: &Session) -> PrunePlan {
        let cfg = PruneConfig {
            protect_tokens: 500,
            minimum_savings: 0,
            now: 1,
            ..PruneConfig::default()
        };
        plan_tool_outputs(s, &cfg).unwrap()
    }

    #[test]
    fn originals_are_the_texts_the_prune_drops() {
        let mut s = session();
        let plan = plan(&s);
        assert!(!plan.is_empty());
        let originals = pruned_originals(&s, &plan).unwrap();
        assert_eq!(originals.len(), plan.candidates.len());
        for (c, o) in plan.candidates.iter().zip(&originals) {
            assert_eq!(o.name, format!("pruned-{}.txt", c.id));
            assert!(o.text.starts_with(&format!("secret_{} word", &c.id[1..])));
        }
        apply_prune_originals(&mut s, &plan, &originals).unwrap();
        let text = String::from_utf8(s.to_bytes()).unwrap();
        for o in &originals {
            assert!(
                !text.contains(&o.text),
                "{} still holds its text",
                o.entry_id
            );
        }
    }

    #[test]
    fn a_changed_result_refuses_the_apply() {
        let mut s = session();
        let plan = plan(&s);
        let originals = pruned_originals(&s, &plan).unwrap();
        // Another pass prunes the first result meanwhile: its line changed.
        let mut first = plan.clone();
        first.candidates.truncate(1);
        apply_prune(&mut s, &first).unwrap();
        let before = s.to_bytes();
        let e = apply_prune_originals(&mut s, &plan, &originals).unwrap_err();
        assert_eq!(e.code(), crate::error::ErrorCode::StalePlan);
        assert_eq!(s.to_bytes(), before);
        let mut short = originals.clone();
        short.pop();
        assert!(apply_prune_originals(&mut s, &plan, &short).is_err());
    }
}
