//! The dead-end rescue's last tier (spec: compaction §8.3 "…else drop attached images;
//! re-test prepareCompaction after each tier"): every image attached to an entry of the branch
//! is removed, in place.
//!
//! What holds images: the content arrays of user, developer, custom (`hookMessage`) and tool
//! result messages and of custom message entries; a tool result's `details.images`; a bash
//! execution's `images`; a file mention's `files[].image`. A content array left with no block
//! gets one text block, [`IMAGE_REMOVED`], so that no message goes out empty. Nothing else of a
//! line changes: the touched members are spliced in, every other byte of the line stays, and
//! every other line is left alone. All new lines are built before any is written, so an entry
//! that cannot be edited leaves the session unchanged.

use crate::error::{Error, Result};
use crate::session::message::Role;
use crate::session::{EntryKind, Session};
use crate::support::json::{self, js};
use serde_json::Value;

/// The text block that stands in for a content array whose every block was an image.
pub const IMAGE_REMOVED: &str = "[image removed]";

/// What [`drop_images`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImagesDropped {
    /// Images removed.
    pub removed: u64,
    /// Ids of the rewritten entries, in branch order.
    pub entries: Vec<String>,
}

impl ImagesDropped {
    /// `{removed, entries}`.
    pub fn json(&self) -> String {
        js::stringify(&serde_json::json!({"removed": self.removed, "entries": self.entries}))
    }
}

fn is_image(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("image")
}

/// The content array without its image blocks (one [`IMAGE_REMOVED`] text block when nothing
/// is left), and how many went; `None` when it holds no image (or is not an array).
fn strip_content(content: Option<&Value>) -> Option<(Value, u64)> {
    let blocks = content?.as_array()?;
    let kept: Vec<Value> = blocks.iter().filter(|b| !is_image(b)).cloned().collect();
    let removed = (blocks.len() - kept.len()) as u64;
    if removed == 0 {
        return None;
    }
    let kept = if kept.is_empty() {
        vec![serde_json::json!({"type": "text", "text": IMAGE_REMOVED})]
    } else {
        kept
    };
    Some((Value::Array(kept), removed))
}

/// One member edit of a line: set `key` of the object at `path` to a value, or remove it.
struct Edit {
    path: Vec<&'static str>,
    key: &'static str,
    value: Option<Value>,
}

/// The edits that strip the images of the object `o` at `at` in its line (a message of
/// `role`, or with `None` a custom message entry), and how many images they remove.
fn edits_of(o: &Value, role: Option<Role>, at: &[&'static str]) -> (Vec<Edit>, u64) {
    let mut edits = Vec::new();
    let mut removed = 0;
    let path =
        |extra: &[&'static str]| -> Vec<&'static str> { at.iter().chain(extra).copied().collect() };
    let content = matches!(
        role,
        None | Some(Role::User)
            | Some(Role::Developer)
            | Some(Role::Custom)
            | Some(Role::HookMessage)
            | Some(Role::ToolResult)
    );
    if content {
        if let Some((kept, n)) = strip_content(o.get("content")) {
            edits.push(Edit {
                path: path(&[]),
                key: "content",
                value: Some(kept),
            });
            removed += n;
        }
    }
    match role {
        Some(Role::ToolResult) => {
            if let Some(list) = o
                .get("details")
                .and_then(|d| d.get("images"))
                .and_then(Value::as_array)
            {
                let kept: Vec<Value> = list.iter().filter(|b| !is_image(b)).cloned().collect();
                if kept.len() < list.len() {
                    removed += (list.len() - kept.len()) as u64;
                    edits.push(Edit {
                        path: path(&["details"]),
                        key: "images",
                        value: Some(Value::Array(kept)),
                    });
                }
            }
        }
        Some(Role::BashExecution) => {
            if let Some(list) = o.get("images").and_then(Value::as_array) {
                if !list.is_empty() {
                    removed += list.len() as u64;
                    edits.push(Edit {
                        path: path(&[]),
                        key: "images",
                        value: None,
                    });
                }
            }
        }
        Some(Role::FileMention) => {
            if let Some(files) = o.get("files").and_then(Value::as_array) {
                let mut n = 0;
                let files: Vec<Value> = files
                    .iter()
                    .map(|f| match f {
                        Value::Object(m) if m.get("image").is_some_and(|i| !i.is_null()) => {
                            n += 1;
                            let mut m = m.clone();
                            m.shift_remove("image");
                            Value::Object(m)
                        }
                        other => other.clone(),
                    })
                    .collect();
                if n > 0 {
                    removed += n;
                    edits.push(Edit {
                        path: path(&[]),
                        key: "files",
                        value: Some(Value::Array(files)),
                    });
                }
            }
        }
        _ => {}
    }
    (edits, removed)
}

/// Removes every image attached to an entry of the branch to `leaf` (the active branch
/// without one), rewriting those entries' lines; `E_UNKNOWN_ENTRY` for a leaf not in the
/// session. Nothing is written when the branch holds no image.
pub fn drop_images(session: &mut Session, leaf: Option<&str>) -> Result<ImagesDropped> {
    let path = session.path_of(leaf)?;
    let mut report = ImagesDropped::default();
    let mut lines = Vec::new();
    for i in path {
        let entry = &session.entries()[i];
        let (text, role, at): (_, _, &[&'static str]) = match entry.kind() {
            EntryKind::Message => match session.message_json(i) {
                Some(t) => (t, Some(entry.role().unwrap_or(Role::Other)), &["message"]),
                None => continue,
            },
            EntryKind::CustomMessage => (session.entry_json(i), None, &[]),
            _ => continue,
        };
        let Ok(o) = json::parse(&text) else {
            continue;
        };
        let (edits, removed) = edits_of(&o, role, at);
        if edits.is_empty() {
            continue;
        }
        let unedited = || Error::InvalidEntryBody {
            id: entry.id().to_string(),
            line: session.line_number(i),
            reason: "its images could not be removed".into(),
        };
        let mut line = session.entry_json(i).into_owned();
        for e in edits {
            let edited = match e.value {
                Some(v) => json::edit::set_member(&line, &e.path, e.key, &js::stringify(&v)),
                None => json::edit::remove_member(&line, &e.path, e.key),
            };
            line = edited.ok().flatten().ok_or_else(unedited)?;
        }
        report.removed += removed;
        report.entries.push(entry.id().to_string());
        lines.push((i, line));
    }
    if !lines.is_empty() {
        session.rewrite_entries(lines);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{LoadOptions, SequentialIds};
    use proptest::prelude::*;

    const HEAD: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;
    const IMG: &str = r#"{"type":"image","data":"AAAA","mimeType":"image/png"}"#;

    fn load(lines: &[String]) -> Session {
        let mut text = format!("{HEAD}\n");
        for l in lines {
            text.push_str(l);
            text.push('\n');
        }
        Session::load(
            text.into_bytes(),
            LoadOptions::with_ids(Box::new(SequentialIds::new())),
        )
        .unwrap()
    }

    fn message(id: &str, parent: Option<&str>, message: &str) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z", "message":{message}}}"#
        )
    }

    fn lines() -> Vec<String> {
        vec![
            message(
                "u1",
                None,
                &format!(
                    r#"{{"role":"user","content":[{{"type":"text","text":"look"}},{IMG}],"timestamp":1}}"#
                ),
            ),
            message(
                "a1",
                Some("u1"),
                r#"{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.png"}}],"provider":"p","model":"m","stopReason":"toolUse","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0},"timestamp":2}"#,
            ),
            message(
                "t1",
                Some("a1"),
                &format!(
                    r#"{{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{IMG}],"details":{{"images":[{IMG},{{"type":"text","text":"x"}}],"path":"a.png"}},"isError":false,"timestamp":3}}"#
                ),
            ),
            format!(
                r#"{{"type":"custom_message","id":"m1","parentId":"t1","timestamp":"2026-01-01T00:00:04.000Z","customType":"shot","content":[{IMG},{IMG}],"display":true}}"#
            ),
            message(
                "b1",
                Some("m1"),
                &format!(
                    r#"{{"role":"bashExecution","command":"shot","output":"ok","exitCode":0,"cancelled":false,"truncated":false,"images":[{IMG}],"timestamp":5}}"#
                ),
            ),
            message(
                "u2",
                Some("b1"),
                r#"{"role":"user","content":"plain   text","timestamp":6}"#,
            ),
        ]
    }

    #[test]
    fn every_attached_image_goes_and_the_rest_of_each_line_stays() {
        let mut s = load(&lines());
        let before = s.to_jsonl();
        let r = drop_images(&mut s, None).unwrap();
        // user 1, tool result 1 + details 1, custom message 2, bash 1.
        assert_eq!(r.removed, 6);
        assert_eq!(r.entries, ["u1", "t1", "m1", "b1"]);
        let after = s.to_jsonl();
        assert!(!after.contains(r#""type":"image""#), "{after}");
        let (old, new): (Vec<&str>, Vec<&str>) =
            (before.lines().collect(), after.lines().collect());
        assert_eq!(old.len(), new.len());
        // Untouched lines are byte-identical (the header, the assistant, the plain user).
        for k in [0, 2, 6] {
            assert_eq!(old[k], new[k]);
        }
        // The edited lines keep their other bytes (the space before `"message"`).
        assert!(new[1].contains(r#", "message":{"role":"user","content":[{"type":"text","text":"look"}],"timestamp":1}"#), "{}", new[1]);
        // A content left empty gets the placeholder; other details stay.
        let t: Value = serde_json::from_str(new[3]).unwrap();
        assert_eq!(
            t["message"]["content"],
            serde_json::json!([{"type": "text", "text": IMAGE_REMOVED}])
        );
        assert_eq!(
            t["message"]["details"]["images"],
            serde_json::json!([{"type": "text", "text": "x"}])
        );
        assert_eq!(t["message"]["details"]["path"], "a.png");
        let m: Value = serde_json::from_str(new[4]).unwrap();
        assert_eq!(
            m["content"],
            serde_json::json!([{"type": "text", "text": IMAGE_REMOVED}])
        );
        let b: Value = serde_json::from_str(new[5]).unwrap();
        assert!(b["message"].get("images").is_none());
        assert_eq!(b["message"]["output"], "ok");
        // It loads again with every entry, and a second drop finds nothing and writes nothing.
        let mut again = load(&new[1..].iter().map(|l| l.to_string()).collect::<Vec<_>>());
        assert_eq!(again.len(), s.len());
        let r = drop_images(&mut again, None).unwrap();
        assert_eq!(r, ImagesDropped::default());
        assert_eq!(again.to_jsonl(), after);
    }

    #[test]
    fn only_the_branch_to_the_leaf_is_touched() {
        let mut ls = lines();
        // A sibling branch off u1 with an image of its own.
        ls.push(message(
            "x1",
            Some("u1"),
            &format!(r#"{{"role":"user","content":[{IMG}],"timestamp":7}}"#),
        ));
        let mut s = load(&ls);
        let r = drop_images(&mut s, Some("x1")).unwrap();
        assert_eq!(r.entries, ["u1", "x1"]);
        assert_eq!(r.removed, 2);
        // The other branch keeps its images.
        assert!(s
            .entry_json(s.require("t1").unwrap())
            .contains(r#""type":"image""#));
        let e = drop_images(&mut s, Some("nope")).unwrap_err();
        assert_eq!(e.code(), crate::error::ErrorCode::UnknownEntry);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Dropping the images leaves every entry that held none byte-identical, removes every
        /// image block, and the session loads again with as many entries.
        #[test]
        fn entries_without_images_stay_byte_identical(
            shapes in prop::collection::vec((0u8..5, 0usize..3, 0usize..3, "[a-z ]{0,12}"), 1..12)
        ) {
            let mut ls = Vec::new();
            for (k, (kind, texts, images, word)) in shapes.iter().enumerate() {
                let id = format!("e{k}");
                let parent = (k > 0).then(|| format!("e{}", k - 1));
                let mut blocks: Vec<String> = (0..*texts)
                    .map(|_| format!(r#"{{"type":"text","text":"{word}"}}"#))
                    .collect();
                blocks.extend((0..*images).map(|_| IMG.to_string()));
                let content = format!("[{}]", blocks.join(", "));
                ls.push(match kind {
                    0 => message(&id, parent.as_deref(), &format!(r#"{{"role":"user","content":{content},"timestamp":{k}}}"#)),
                    1 => message(&id, parent.as_deref(), &format!(r#"{{"role":"developer","content":{content},"timestamp":{k}}}"#)),
                    2 => message(&id, parent.as_deref(), &format!(
                        r#"{{"role":"toolResult","toolCallId":"c{k}","toolName":"read","content":{content},"isError":false,"timestamp":{k}}}"#
                    )),
                    3 => format!(
                        r#"{{"type":"custom_message","id":"{id}","parentId":{},"timestamp":"2026-01-01T00:00:04.000Z","customType":"t","content":{content},"display":false}}"#,
                        parent.as_ref().map_or("null".to_string(), |p| format!("\"{p}\""))
                    ),
                    _ => message(&id, parent.as_deref(), &format!(r#"{{"role":"user","content":"{word}","timestamp":{k}}}"#)),
                });
            }
            let mut s = load(&ls);
            let before: Vec<String> = s.to_jsonl().lines().map(str::to_string).collect();
            let r = drop_images(&mut s, None).unwrap();
            let after = s.to_jsonl();
            let after: Vec<&str> = after.lines().collect();
            prop_assert_eq!(before.len(), after.len());
            let mut want = 0u64;
            for (k, (kind, _, images, _)) in shapes.iter().enumerate() {
                let held = if *kind < 4 { *images as u64 } else { 0 };
                want += held;
                // Line 0 is the header.
                if held == 0 {
                    prop_assert_eq!(&before[k + 1], after[k + 1]);
                } else {
                    prop_assert!(!after[k + 1].contains(r#""type":"image""#));
                    let id = format!("e{k}");
                    prop_assert!(r.entries.contains(&id));
                }
            }
            prop_assert_eq!(r.removed, want);
            let reloaded = load(&after[1..].iter().map(|l| l.to_string()).collect::<Vec<_>>());
            prop_assert_eq!(reloaded.len(), s.len());
        }
    }
}
