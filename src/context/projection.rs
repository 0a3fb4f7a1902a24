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

use crate::context::message::{text_blocks, ContextMessage, MessageJson};
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
    if !session.may_hold_pi_entries() {
        return false;
    }
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
pub fn newest_edits(session: &Session, entries: &[usize]) -> Vec<(String, Option<Value>)> {
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

/// pi's `projectContextEntry`: the messages entry `index` carries ([`entry_messages`]) under
/// the edit of `edits` ([`newest_edits`]) that targets it: none when it omits the entry, its
/// content when it replaces it.
pub fn edited_messages(
    session: &Session,
    index: usize,
    edits: &[(String, Option<Value>)],
) -> Result<Vec<ContextMessage>> {
    let id = session.entries()[index].id();
    let base = entry_messages(session, index)?;
    Ok(match edits.iter().find(|(t, _)| t == id) {
        None => base,
        Some((_, None)) => Vec::new(),
        Some((_, Some(content))) => base
            .into_iter()
            .map(|m| replace(session, m, content))
            .collect(),
    })
}

/// pi's `buildSessionProjection`: the context entries of the path to `leaf`, each with the
/// messages it contributes after the newest edit that targets it (edits are looked up among
/// the context entries only: one on a summarized entry has no effect, case 02).
pub fn project(session: &Session, path: &[usize]) -> Result<Vec<ProjectedEntry>> {
    let selected = context_entries(session, path);
    let edits = newest_edits(session, &selected);
    let mut out = Vec::with_capacity(selected.len());
    for (n, &i) in selected.iter().enumerate() {
        let e = &session.entries()[i];
        let messages = if e.kind() == EntryKind::Compaction && n > 0 {
            Vec::new()
        } else {
            edited_messages(session, i, &edits)?
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

/// The `systemMessage` checkpoint pi 1.6 records on a compaction appended after `path`
/// (`appendCompaction`: pi-ai's `getCurrentSystemMessage` of the projection's messages), with
/// `timestamp` as its time: every system message replayed in order — the texts of their
/// contents joined by a blank line, `sections` patched by name (`null` removes one), tools
/// added and removed by name — or `None` when the projection holds no system message.
pub fn pi_system_checkpoint(
    session: &Session,
    path: &[usize],
    timestamp: i64,
) -> Result<Option<Value>> {
    let mut seen = false;
    let mut content: Vec<String> = Vec::new();
    // Name → value in first-set order, as a JS `Map` keeps them (a removal forgets the place).
    let mut sections = serde_json::Map::new();
    let mut tools = serde_json::Map::new();
    for p in project(session, path)? {
        for m in &p.messages {
            let v: Value = crate::support::json::parse(&m.json(session)).unwrap_or_default();
            if v.get("role").and_then(Value::as_str) != Some("system") {
                continue;
            }
            seen = true;
            let text = match v.get("content") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(blocks)) => blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .map(|b| b.get("text").and_then(Value::as_str).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            if !text.is_empty() {
                content.push(text);
            }
            for (name, value) in v
                .get("sections")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                patch_named(
                    &mut sections,
                    name,
                    (!value.is_null()).then(|| value.clone()),
                );
            }
            for (key, add) in [("toolsRemoved", false), ("toolsAdded", true)] {
                for t in v.get(key).and_then(Value::as_array).into_iter().flatten() {
                    if let Some(name) = t.get("name").and_then(Value::as_str) {
                        patch_named(&mut tools, name, add.then(|| t.clone()));
                    }
                }
            }
        }
    }
    if !seen && tools.is_empty() {
        return Ok(None);
    }
    let mut out = serde_json::Map::new();
    out.insert("role".into(), "system".into());
    out.insert("content".into(), content.join("\n\n").into());
    if !sections.is_empty() {
        out.insert("sections".into(), Value::Object(sections));
    }
    if !tools.is_empty() {
        out.insert(
            "toolsAdded".into(),
            Value::Array(tools.into_values().collect()),
        );
    }
    out.insert("timestamp".into(), timestamp.into());
    Ok(Some(Value::Object(out)))
}

/// Sets (`Some`) or removes (`None`) `name` in `map` as a JS `Map` does: a known name keeps
/// its place, a new one goes last, a removal keeps the others' order.
fn patch_named(map: &mut serde_json::Map<String, Value>, name: &str, value: Option<Value>) {
    match value {
        Some(v) => {
            map.insert(name.to_string(), v);
        }
        None => {
            map.shift_remove(name);
        }
    }
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

/// pi's `estimateProjectedContextTokens` (pi 1.6; `conformance/pi-1.6` cases 01, 05): the
/// last assistant usage of the projection plus estimates of what follows it, trusted only
/// when that assistant's entry is newer on `path` than every `context_edit` and compaction;
/// otherwise an estimate of the current system message plus every other message. `usage`
/// entries never count.
pub fn estimate_projected_context_tokens(
    session: &crate::session::Session,
    projected: &[ProjectedEntry],
    path: &[usize],
) -> crate::tokens::ContextEstimate {
    use crate::session::EntryKind;
    let mut messages: Vec<serde_json::Value> = Vec::new();
    let mut source: Vec<usize> = Vec::new();
    for p in projected {
        for m in &p.messages {
            messages.push(crate::support::json::parse(&m.json(session)).unwrap_or_default());
            source.push(p.entry);
        }
    }
    use crate::tokens::{
        estimate_context_tokens_by, estimate_pi_message, pi_current_system_tokens, pi_usage_tokens,
    };
    let estimate = estimate_context_tokens_by(
        messages.len(),
        |i| pi_usage_tokens(&messages[i]).is_some(),
        |i| estimate_pi_message(&messages[i]),
        |i| pi_usage_tokens(&messages[i]).unwrap_or(0),
    );
    if let Some(last) = estimate.last_usage_index {
        let at = path.iter().position(|&i| i == source[last]);
        let invalidating = path.iter().rposition(|&i| {
            matches!(
                session.entries()[i].kind(),
                EntryKind::ContextEdit | EntryKind::Compaction
            )
        });
        if at.is_some() && (invalidating.is_none() || at > invalidating) {
            return estimate;
        }
    }
    let system = pi_current_system_tokens(&messages);
    let rest: u64 = messages
        .iter()
        .filter(|m| m.get("role").and_then(serde_json::Value::as_str) != Some("system"))
        .map(estimate_pi_message)
        .sum();
    let tokens = system + rest;
    crate::tokens::ContextEstimate {
        tokens,
        usage_tokens: 0,
        trailing_tokens: tokens,
        last_usage_index: None,
    }
}

impl crate::session::Session {
    /// `tokensBefore` of a compaction of `path` (spec: compaction §3.5): the context tokens of
    /// the last valid usage, or 0; on a pi-family path pi's projected estimate
    /// ([`estimate_projected_context_tokens`], what pi's `prepareCompaction` records).
    pub fn tokens_before(&self, path: &[usize]) -> u64 {
        if is_pi_family(self, path) {
            if let Ok(p) = project(self, path) {
                return estimate_projected_context_tokens(self, &p, path).tokens;
            }
        }
        self.last_assistant_usage(path)
            .map_or(0, |(_, u)| crate::tokens::context_tokens(&u))
    }
}
