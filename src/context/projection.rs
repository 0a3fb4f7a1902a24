//! pi-family sessions (pi 0.87–1.6): the projection of a path (spec: compaction §1.6, §2).
//!
//! pi writes entries oh-my-pi never writes: `context_edit` (`targetId`, `replacement:
//! {content} | null`), `usage`, `system`-role messages (a base prompt and later patches:
//! `sections`, `toolsAdded`, `toolsRemoved`) and a `systemMessage` checkpoint on compaction
//! entries. A path that holds any of them is a pi-family path and its context is pi's
//! projection: the entries the latest compaction selects, each contributing the messages it
//! carries after the newest edit that targets it. oh-my-pi files never hold these entries, so
//! the choice is made on what the file holds, not on a flag
//! (`conformance/pi-1.6/README.md`, cases 01–05).

use crate::context::build::{ContextMessage, MessageJson};
use crate::error::Result;
use crate::session::message::{MessageHead, Role};
use crate::session::{EntryKind, Session};
use crate::support::json::{edit::find_path, js, view::Obj};
use serde_json::Value;
use std::rc::Rc;

/// True for a `message` entry whose message has the role `system` (pi's prompt entries).
pub fn is_system_message(session: &Session, index: usize) -> bool {
    let e = &session.entries()[index];
    if e.kind() != EntryKind::Message || e.role() != Some(Role::Other) {
        return false;
    }
    let Some(j) = session.message_json(index) else {
        return false;
    };
    Obj::parse(j.as_bytes())
        .ok()
        .and_then(|o| o.str("role").map(|r| r == "system"))
        .unwrap_or(false)
}

/// True when the path holds an entry only pi writes (see the module comment): a
/// `context_edit`, a `usage` entry, a system message, or a latest compaction with a
/// `systemMessage` checkpoint.
pub fn is_pi_family(session: &Session, path: &[usize]) -> bool {
    // Only the latest compaction's checkpoint reaches the context: older compaction lines
    // (which may hold large archives) are not scanned.
    let latest = path
        .iter()
        .rposition(|&i| session.entries()[i].kind() == EntryKind::Compaction);
    path.iter()
        .enumerate()
        .any(|(pos, &i)| match session.entries()[i].kind() {
            EntryKind::ContextEdit | EntryKind::Usage => true,
            EntryKind::Compaction => Some(pos) == latest && system_checkpoint(session, i).is_some(),
            EntryKind::Message => is_system_message(session, i),
            _ => false,
        })
}

/// The `systemMessage` checkpoint of a compaction entry, as written.
pub fn system_checkpoint(session: &Session, index: usize) -> Option<String> {
    let text = session.entry_json(index);
    let span = find_path(&text, &["systemMessage"]).ok()??;
    let raw = &text[span];
    raw.starts_with('{').then(|| raw.to_string())
}

/// pi's `buildContextEntries`: the path when it holds no compaction; else the latest
/// compaction, the entries it keeps (from `firstKeptEntryId` on, system messages left out:
/// its checkpoint replays them) and everything after it. A retain-none compaction names
/// itself as the first kept entry, so it keeps nothing (case 03).
pub fn context_entries(session: &Session, path: &[usize]) -> Vec<usize> {
    let entries = session.entries();
    let Some(cpos) = path
        .iter()
        .rposition(|&i| entries[i].kind() == EntryKind::Compaction)
    else {
        return path.to_vec();
    };
    let cidx = path[cpos];
    let first_kept = session.first_kept_id(cidx);
    let mut out = vec![cidx];
    let mut found = false;
    for &i in &path[..cpos] {
        found |= entries[i].id() == &*first_kept;
        if found && !is_system_message(session, i) {
            out.push(i);
        }
    }
    out.extend_from_slice(&path[cpos + 1..]);
    out
}

/// One entry of a projection and the messages it contributes.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectedEntry {
    pub entry: usize,
    pub messages: Vec<ContextMessage>,
}

/// The newest `context_edit` per target among `entries`: target id → replacement (`None`
/// omits the target; `Some(content)`).
fn edits(session: &Session, entries: &[usize]) -> Vec<(String, Option<Value>)> {
    let mut out: Vec<(String, Option<Value>)> = Vec::new();
    for &i in entries {
        if session.entries()[i].kind() != EntryKind::ContextEdit {
            continue;
        }
        // An edit that does not read (no `targetId`) edits nothing.
        let Ok(body) = session.body::<crate::session::ContextEditBody>(i) else {
            continue;
        };
        out.retain(|(t, _)| *t != body.target_id);
        out.push((body.target_id, body.replacement));
    }
    out
}

fn owned(entry: usize, json: String, role: Option<Role>) -> Option<ContextMessage> {
    let head = MessageHead::read(&json, role).ok()?;
    Some(ContextMessage::owned(entry, Rc::new(head), json))
}

/// The messages an entry carries before edits (pi's `sessionEntryToContextMessages`): a
/// compaction gives its checkpoint, if any, then its summary.
pub fn entry_messages(session: &Session, index: usize) -> Result<Vec<ContextMessage>> {
    let mut out = Vec::new();
    if session.entries()[index].kind() == EntryKind::Compaction {
        if let Some(cp) = system_checkpoint(session, index) {
            out.extend(owned(index, cp, None));
        }
    }
    if let Some(m) = ContextMessage::from_entry(session, index)? {
        out.push(m);
    }
    Ok(out)
}

/// Applies a replacement to a message: user, assistant, tool-result and custom messages
/// take the new content (a string becomes one text block for assistant and tool-result
/// messages); other messages are left as they are.
fn replace(session: &Session, m: ContextMessage, content: &Value) -> ContextMessage {
    let role = m.role();
    if !matches!(
        role,
        Role::User | Role::Assistant | Role::ToolResult | Role::Custom
    ) {
        return m;
    }
    let content = match content {
        Value::String(s) if matches!(role, Role::Assistant | Role::ToolResult) => {
            text_blocks(s.clone())
        }
        other => other.clone(),
    };
    let mut v = crate::support::json::parse(&m.json(session)).unwrap_or(Value::Null);
    let Some(o) = v.as_object_mut() else {
        return m;
    };
    o.insert("content".into(), content);
    owned(m.entry, js::stringify(&v), None).unwrap_or(m)
}

/// pi's `buildSessionProjection`: the context entries of the path to `leaf`, each with the
/// messages it contributes after the newest edit that targets it (edits are looked up among
/// the context entries only: one on a summarized entry has no effect, case 02).
pub fn project(session: &Session, path: &[usize]) -> Result<Vec<ProjectedEntry>> {
    let selected = context_entries(session, path);
    let edits = edits(session, &selected);
    let mut out = Vec::with_capacity(selected.len());
    for (n, &i) in selected.iter().enumerate() {
        let e = &session.entries()[i];
        let messages = if e.kind() == EntryKind::Compaction && n > 0 {
            Vec::new()
        } else {
            let base = entry_messages(session, i)?;
            match edits.iter().find(|(t, _)| t == e.id()) {
                None => base,
                Some((_, None)) => Vec::new(),
                Some((_, Some(content))) => base
                    .into_iter()
                    .map(|m| replace(session, m, content))
                    .collect(),
            }
        };
        let messages = messages
            .into_iter()
            .map(|mut m| {
                m.pi = true;
                m
            })
            .collect();
        out.push(ProjectedEntry { entry: i, messages });
    }
    Ok(out)
}

/// `MessageJson` for the module: the entry's own message or one built here.
impl ContextMessage {
    /// True for a message of a pi-family projection (converted as pi converts it).
    pub fn is_pi(&self) -> bool {
        self.pi
    }

    pub(crate) fn owned(entry: usize, head: Rc<MessageHead>, json: String) -> ContextMessage {
        ContextMessage {
            entry,
            head,
            json: MessageJson::Owned(json),
            stripped_tool_calls: 0,
            pi: true,
        }
    }
}

/// The text around a compaction summary in pi's LLM view (model-facing wording, pi 1.6).
const PI_COMPACTION_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const PI_COMPACTION_SUFFIX: &str = "\n</summary>";
/// The text around a branch summary in pi's LLM view.
const PI_BRANCH_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const PI_BRANCH_SUFFIX: &str = "</summary>";

/// pi's `convertToLlm` of a projected context: system, user, assistant and tool-result
/// messages pass as they are; summaries become user messages with pi's wording; custom
/// messages become user messages; a bash execution its text (unless excluded).
pub fn convert_pi(session: &Session, messages: &[ContextMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        convert_pi_message(&mut out, session, m);
    }
    out
}

/// [`convert_pi`] of one message, appended to `out` (none or one provider message).
pub fn convert_pi_message(out: &mut Vec<Value>, session: &Session, m: &ContextMessage) {
    let Ok(Value::Object(o)) = crate::support::json::parse(&m.json(session)) else {
        return;
    };
    let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or_default();
    let text = match s("role") {
        "system" | "user" | "assistant" | "toolResult" => return out.push(Value::Object(o)),
        "compactionSummary" => format!(
            "{PI_COMPACTION_PREFIX}{}{PI_COMPACTION_SUFFIX}",
            s("summary")
        ),
        "branchSummary" => format!("{PI_BRANCH_PREFIX}{}{PI_BRANCH_SUFFIX}", s("summary")),
        "bashExecution" => {
            if o.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                return;
            }
            crate::context::convert::bash_execution_text(
                s("command"),
                s("output"),
                o.get("exitCode").and_then(Value::as_f64),
                o.get("cancelled").and_then(Value::as_bool) == Some(true),
            )
        }
        "custom" => {
            let content = match o.get("content") {
                Some(Value::String(t)) => text_blocks(t.clone()),
                Some(c) => c.clone(),
                None => Value::Array(Vec::new()),
            };
            return out.push(pi_user(content, &o));
        }
        _ => return,
    };
    out.push(pi_user(text_blocks(text), &o));
}

/// `[{type: "text", text}]`.
fn text_blocks(text: String) -> Value {
    let mut b = serde_json::Map::new();
    b.insert("type".into(), "text".into());
    b.insert("text".into(), text.into());
    Value::Array(vec![Value::Object(b)])
}

/// A user message of `content` with the timestamp of `of`.
fn pi_user(content: Value, of: &serde_json::Map<String, Value>) -> Value {
    let mut u = serde_json::Map::new();
    u.insert("role".into(), "user".into());
    u.insert("content".into(), content);
    u.insert(
        "timestamp".into(),
        of.get("timestamp").cloned().unwrap_or(Value::Null),
    );
    Value::Object(u)
}
