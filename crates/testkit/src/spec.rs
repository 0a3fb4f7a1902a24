//! A small description of a session tree and its JSONL writer, shared by the property tests
//! (`tests/it/properties.rs`: proptest strategies build the description) and the fuzz targets
//! (`fuzz/`: `arbitrary` bytes build it).

use serde_json::{json, Map, Value};

/// Where an entry hangs.
#[derive(Debug, Clone, PartialEq)]
pub enum Parent {
    /// `parentId: null` (a new root).
    Null,
    /// The entry `n` places back (1 = the previous entry; taken modulo the entries so far).
    Back(usize),
    /// An id that names no entry.
    Unknown,
    /// No `parentId` field at all.
    Absent,
}

/// The tools a call or result can name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tool {
    Read,
    Edit,
    Write,
    Bash,
    Grep,
    Skill,
}

impl Tool {
    pub const ALL: [Tool; 6] = [
        Tool::Read,
        Tool::Edit,
        Tool::Write,
        Tool::Bash,
        Tool::Grep,
        Tool::Skill,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Read => "read",
            Tool::Edit => "edit",
            Tool::Write => "write",
            Tool::Bash => "bash",
            Tool::Grep => "grep",
            Tool::Skill => "skill",
        }
    }
}

/// One tool call of an assistant turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The call id is `t<id>`: a small pool, so results may answer several calls or none.
    pub id: u8,
    pub tool: Tool,
    pub path: String,
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    User {
        text: String,
        images: u8,
    },
    Assistant {
        text: String,
        thinking: Option<String>,
        calls: Vec<Call>,
        /// `usage.input` (none: no usage record).
        usage: Option<u64>,
        /// 0 stop, 1 toolUse, 2 error, 3 aborted, 4 length.
        stop: u8,
    },
    ToolResult {
        call: u8,
        tool: Tool,
        text: String,
        is_error: bool,
        useless: bool,
    },
    Bash {
        command: String,
        output: String,
        /// The message's `meta` (the app's output notice record), written as it is.
        meta: Option<Value>,
    },
    CustomMessage {
        text: String,
        display: bool,
    },
    Compaction {
        summary: String,
        /// `firstKeptEntryId`: the entry this many places back (`None`: an unknown id).
        first_kept: Option<usize>,
        tokens_before: u64,
    },
    BranchSummary {
        from: Option<usize>,
        summary: String,
    },
    Label {
        target: Option<usize>,
        label: Option<String>,
    },
    ModelChange {
        model: String,
    },
    ThinkingLevel {
        level: String,
    },
    /// A line written as it is (need not be JSON).
    Raw(String),
}

/// One entry line.
#[derive(Debug, Clone, PartialEq)]
pub struct EntrySpec {
    pub parent: Parent,
    /// Reuse the id of the entry this many places back (a duplicate id).
    pub dup_id: Option<usize>,
    pub body: Body,
}

/// A whole session file.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSpec {
    pub entries: Vec<EntrySpec>,
    /// End the file with a newline.
    pub trailing_newline: bool,
}

/// A tiny valid PNG (1×1, grey), base64.
pub const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";

fn back(i: usize, n: usize) -> Option<usize> {
    if i == 0 {
        None
    } else {
        Some(i - 1 - (n.max(1) - 1) % i)
    }
}

fn id_of(ids: &[String], i: usize, n: Option<usize>) -> String {
    match n.and_then(|n| back(i, n)) {
        Some(j) => ids[j].clone(),
        None => "no-such-entry".to_string(),
    }
}

fn message(body: &Body, ts: i64) -> Option<Value> {
    Some(match body {
        Body::User { text, images } => {
            if *images == 0 {
                json!({"role":"user","content":text,"timestamp":ts})
            } else {
                let mut blocks = vec![json!({"type":"text","text":text})];
                for _ in 0..*images {
                    blocks.push(json!({"type":"image","data":PNG_1X1,"mimeType":"image/png"}));
                }
                json!({"role":"user","content":blocks,"timestamp":ts})
            }
        }
        Body::Assistant {
            text,
            thinking,
            calls,
            usage,
            stop,
        } => {
            let mut blocks = Vec::new();
            if let Some(t) = thinking {
                blocks.push(json!({"type":"thinking","thinking":t,"thinkingSignature":"sig"}));
            }
            blocks.push(json!({"type":"text","text":text}));
            for c in calls {
                let args = match c.tool {
                    Tool::Bash => json!({"command": c.path}),
                    Tool::Grep => json!({"pattern": "x", "path": c.path}),
                    Tool::Skill => json!({"name": c.path}),
                    Tool::Edit => json!({"path": c.path, "oldText": "a", "newText": "b"}),
                    Tool::Write => json!({"path": c.path, "content": "c"}),
                    Tool::Read => json!({"path": c.path}),
                };
                blocks.push(json!({"type":"toolCall","id":format!("t{}", c.id),"name":c.tool.name(),"arguments":args}));
            }
            let stop = ["stop", "toolUse", "error", "aborted", "length"][*stop as usize % 5];
            let mut m = json!({"role":"assistant","content":blocks,"api":"anthropic-messages",
                "provider":"anthropic","model":"claude-sonnet-4-5","stopReason":stop,"timestamp":ts});
            if let Some(u) = usage {
                m["usage"] = json!({"input":u,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":u + 10});
            }
            m
        }
        Body::ToolResult {
            call,
            tool,
            text,
            is_error,
            useless,
        } => {
            let mut m = json!({"role":"toolResult","toolCallId":format!("t{call}"),"toolName":tool.name(),
                "content":[{"type":"text","text":text}],"isError":is_error,"timestamp":ts});
            if *useless {
                m["useless"] = Value::Bool(true);
            }
            m
        }
        Body::Bash {
            command,
            output,
            meta,
        } => {
            let mut m = json!({"role":"bashExecution","command":command,"output":output,"exitCode":0,
                "cancelled":false,"truncated":false,"timestamp":ts});
            if let Some(meta) = meta {
                m["meta"] = meta.clone();
            }
            m
        }
        _ => return None,
    })
}

/// Writes the session file: a v3 header, then one line per entry.
pub fn write(spec: &SessionSpec) -> Vec<u8> {
    let mut out = String::from(
        r#"{"type":"session","version":3,"id":"spec","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    let mut ids: Vec<String> = Vec::with_capacity(spec.entries.len());
    for (i, e) in spec.entries.iter().enumerate() {
        let id = match e.dup_id.and_then(|n| back(i, n)) {
            Some(j) => ids[j].clone(),
            None => format!("e{i}"),
        };
        ids.push(id.clone());
        out.push('\n');
        if let Body::Raw(line) = &e.body {
            out.push_str(&line.replace('\n', " "));
            continue;
        }
        let ts_ms = 1_767_225_600_000i64 + i as i64 * 1000;
        let mut obj = Map::new();
        let ty = match &e.body {
            Body::User { .. }
            | Body::Assistant { .. }
            | Body::ToolResult { .. }
            | Body::Bash { .. } => "message",
            Body::CustomMessage { .. } => "custom_message",
            Body::Compaction { .. } => "compaction",
            Body::BranchSummary { .. } => "branch_summary",
            Body::Label { .. } => "label",
            Body::ModelChange { .. } => "model_change",
            Body::ThinkingLevel { .. } => "thinking_level_change",
            Body::Raw(_) => unreachable!("written above"),
        };
        obj.insert("type".into(), ty.into());
        obj.insert("id".into(), id.into());
        match &e.parent {
            Parent::Null => {
                obj.insert("parentId".into(), Value::Null);
            }
            Parent::Back(n) => {
                let p = back(i, *n).map_or(Value::Null, |j| Value::from(ids[j].clone()));
                obj.insert("parentId".into(), p);
            }
            Parent::Unknown => {
                obj.insert("parentId".into(), "missing-parent".into());
            }
            Parent::Absent => {}
        }
        obj.insert(
            "timestamp".into(),
            format!(
                "2026-01-01T{:02}:{:02}:{:02}.000Z",
                (i / 3600) % 24,
                (i / 60) % 60,
                i % 60
            )
            .into(),
        );
        if let Some(m) = message(&e.body, ts_ms) {
            obj.insert("message".into(), m);
        }
        match &e.body {
            Body::CustomMessage { text, display } => {
                obj.insert("customType".into(), "note".into());
                obj.insert("content".into(), text.clone().into());
                obj.insert("display".into(), (*display).into());
            }
            Body::Compaction {
                summary,
                first_kept,
                tokens_before,
            } => {
                obj.insert("summary".into(), summary.clone().into());
                obj.insert(
                    "firstKeptEntryId".into(),
                    id_of(&ids, i, *first_kept).into(),
                );
                obj.insert("tokensBefore".into(), (*tokens_before).into());
            }
            Body::BranchSummary { from, summary } => {
                obj.insert("fromId".into(), id_of(&ids, i, *from).into());
                obj.insert("summary".into(), summary.clone().into());
            }
            Body::Label { target, label } => {
                obj.insert("targetId".into(), id_of(&ids, i, *target).into());
                obj.insert(
                    "label".into(),
                    label.clone().map_or(Value::Null, Value::from),
                );
            }
            Body::ModelChange { model } => {
                obj.insert("model".into(), model.clone().into());
            }
            Body::ThinkingLevel { level } => {
                obj.insert("thinkingLevel".into(), level.clone().into());
            }
            _ => {}
        }
        out.push_str(&Value::Object(obj).to_string());
    }
    if spec.trailing_newline {
        out.push('\n');
    }
    out.into_bytes()
}
