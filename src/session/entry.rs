//! Entries of the session tree (spec: compaction §1.5, §1.6) and the typed views of their
//! bodies. An entry keeps its original line; typed views are parsed from it on demand.

use crate::session::message::Role;
use crate::support::json::view::Obj;
use serde_json::{Map, Number, Value};

/// The `type` of an entry (spec: compaction §1.6). Types this library does not know are
/// [`EntryKind::Other`]; they are kept and written back unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    Message,
    ThinkingLevelChange,
    ModelChange,
    ServiceTierChange,
    Compaction,
    BranchSummary,
    CustomMessage,
    Custom,
    Label,
    TtsrInjection,
    SessionInit,
    ModeChange,
    ResetBoundary,
    /// pi ≥ 0.87: replaces or omits the message of an earlier entry in the context.
    ContextEdit,
    /// pi ≥ 1.x: a usage record (cache warm-ups); never in context, never counted.
    Usage,
    Other,
}

impl EntryKind {
    /// Maps a `type` string to its kind.
    pub fn from_type(t: &str) -> EntryKind {
        match t {
            "message" => EntryKind::Message,
            "thinking_level_change" => EntryKind::ThinkingLevelChange,
            "model_change" => EntryKind::ModelChange,
            "service_tier_change" => EntryKind::ServiceTierChange,
            "compaction" => EntryKind::Compaction,
            "branch_summary" => EntryKind::BranchSummary,
            "custom_message" => EntryKind::CustomMessage,
            "custom" => EntryKind::Custom,
            "label" => EntryKind::Label,
            "ttsr_injection" => EntryKind::TtsrInjection,
            "session_init" => EntryKind::SessionInit,
            "mode_change" => EntryKind::ModeChange,
            "reset_boundary" => EntryKind::ResetBoundary,
            "context_edit" => EntryKind::ContextEdit,
            "usage" => EntryKind::Usage,
            _ => EntryKind::Other,
        }
    }

    /// The `type` string of a known kind (`None` for [`EntryKind::Other`]).
    pub fn type_name(self) -> Option<&'static str> {
        Some(match self {
            EntryKind::Message => "message",
            EntryKind::ThinkingLevelChange => "thinking_level_change",
            EntryKind::ModelChange => "model_change",
            EntryKind::ServiceTierChange => "service_tier_change",
            EntryKind::Compaction => "compaction",
            EntryKind::BranchSummary => "branch_summary",
            EntryKind::CustomMessage => "custom_message",
            EntryKind::Custom => "custom",
            EntryKind::Label => "label",
            EntryKind::TtsrInjection => "ttsr_injection",
            EntryKind::SessionInit => "session_init",
            EntryKind::ModeChange => "mode_change",
            EntryKind::ResetBoundary => "reset_boundary",
            EntryKind::ContextEdit => "context_edit",
            EntryKind::Usage => "usage",
            EntryKind::Other => return None,
        })
    }

    /// Entries that carry a message into the LLM context (spec: compaction §4.4 step 8).
    pub fn carries_message(self) -> bool {
        matches!(
            self,
            EntryKind::Message | EntryKind::CustomMessage | EntryKind::BranchSummary
        )
    }
}

/// The index record of one entry. Everything the tree needs is here; bodies are read from
/// the entry's line when asked for.
#[derive(Debug, Clone)]
pub struct Entry {
    pub(crate) line: u32,
    pub(crate) kind: EntryKind,
    pub(crate) id: Box<str>,
    pub(crate) parent_id: Option<Box<str>>,
    /// Index of the parent entry; `None` for a root or an unknown parent.
    pub(crate) parent: Option<u32>,
    /// Role of a `message` entry's message, when known.
    pub(crate) role: Option<Role>,
}

impl Entry {
    /// The entry's id.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The `parentId` as written (may name an unknown entry).
    pub fn parent_id(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }
    /// The entry's kind.
    pub fn kind(&self) -> EntryKind {
        self.kind
    }
    /// Role of the message of a `message` entry.
    pub fn role(&self) -> Option<Role> {
        self.role
    }
    /// Zero-based index of the entry's line in the file (header and malformed lines count).
    pub fn line_index(&self) -> u32 {
        self.line
    }
}

/// The typed view of an entry's body, read in place from its line (`json::view`).
pub trait Body: Sized {
    /// Reads the body; `Err` says which required field is missing or mistyped.
    fn read(o: &Obj<'_>) -> Result<Self, String>;
}

fn required(o: &Obj<'_>, key: &str) -> Result<String, String> {
    o.string(key)
        .ok_or_else(|| format!("missing string field `{key}`"))
}

fn number(o: &Obj<'_>, key: &str) -> Option<Number> {
    match o.value(key) {
        Some(Value::Number(n)) => Some(n),
        _ => None,
    }
}

fn put(m: &mut Map<String, Value>, key: &str, v: Option<impl Into<Value>>) {
    if let Some(v) = v {
        m.insert(key.into(), v.into());
    }
}

/// Body of a `compaction` entry (spec: compaction §1.6).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionBody {
    pub summary: String,
    pub short_summary: Option<String>,
    pub first_kept_entry_id: String,
    pub tokens_before: Number,
    pub tokens_after: Option<Number>,
    pub method: Option<String>,
    pub provider_replay_through_entry_id: Option<String>,
    pub details: Option<Value>,
    pub preserve_data: Option<Value>,
    /// pi-mono spells it `fromHook`.
    pub from_extension: bool,
    pub warning: Option<String>,
}

impl Body for CompactionBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(CompactionBody {
            summary: required(o, "summary")?,
            short_summary: o.string("shortSummary"),
            first_kept_entry_id: o.string("firstKeptEntryId").unwrap_or_default(),
            tokens_before: number(o, "tokensBefore").unwrap_or_else(|| Number::from(0u8)),
            tokens_after: number(o, "tokensAfter"),
            method: o.string("method"),
            provider_replay_through_entry_id: o.string("providerReplayThroughEntryId"),
            details: o.value("details"),
            preserve_data: o.value("preserveData"),
            from_extension: o.flag("fromExtension") || o.flag("fromHook"),
            warning: o.string("warning"),
        })
    }
}

/// `firstKeptEntryId` of a `compaction` entry alone: where the kept entries start, read on
/// every context build and prune without decoding the rest (an archive's frames).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FirstKept(pub String);

impl Body for FirstKept {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(FirstKept(o.string("firstKeptEntryId").unwrap_or_default()))
    }
}

/// The fields of a `compaction` entry that its context message carries (spec: compaction
/// §2.6): [`CompactionBody`] without `details` and `preserveData`, which can hold megabytes
/// of snapcompact frames.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionMessageBody {
    pub summary: String,
    pub short_summary: Option<String>,
    pub tokens_before: Number,
    pub tokens_after: Option<Number>,
    pub method: Option<String>,
    pub warning: Option<String>,
}

impl Body for CompactionMessageBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(CompactionMessageBody {
            summary: required(o, "summary")?,
            short_summary: o.string("shortSummary"),
            tokens_before: number(o, "tokensBefore").unwrap_or_else(|| Number::from(0u8)),
            tokens_after: number(o, "tokensAfter"),
            method: o.string("method"),
            warning: o.string("warning"),
        })
    }
}

impl CompactionBody {
    /// The fields of a new entry, in the order the reference writes them.
    pub fn to_fields(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("summary".into(), self.summary.clone().into());
        put(&mut m, "shortSummary", self.short_summary.clone());
        m.insert(
            "firstKeptEntryId".into(),
            self.first_kept_entry_id.clone().into(),
        );
        m.insert(
            "tokensBefore".into(),
            Value::Number(self.tokens_before.clone()),
        );
        put(
            &mut m,
            "tokensAfter",
            self.tokens_after.clone().map(Value::Number),
        );
        put(&mut m, "method", self.method.clone());
        put(
            &mut m,
            "providerReplayThroughEntryId",
            self.provider_replay_through_entry_id.clone(),
        );
        put(&mut m, "details", self.details.clone());
        put(&mut m, "preserveData", self.preserve_data.clone());
        if self.from_extension {
            m.insert("fromExtension".into(), true.into());
        }
        put(&mut m, "warning", self.warning.clone());
        m
    }
}

/// Body of a pi `context_edit` entry (pi ≥ 0.87): the entry it edits and the content that
/// replaces that entry's message, `None` when the message is omitted (`replacement: null`).
#[derive(Debug, Clone, PartialEq)]
pub struct ContextEditBody {
    pub target_id: String,
    pub replacement: Option<Value>,
}

impl Body for ContextEditBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        let target_id = required(o, "targetId")?;
        let replacement = match o.value("replacement") {
            None | Some(Value::Null) => None,
            Some(Value::Object(mut r)) => Some(
                r.remove("content")
                    .filter(|c| c.is_string() || c.is_array())
                    .ok_or("`replacement.content` must be a string or an array")?,
            ),
            Some(_) => return Err("`replacement` must be an object or null".into()),
        };
        Ok(ContextEditBody {
            target_id,
            replacement,
        })
    }
}

/// Body of a `branch_summary` entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BranchSummaryBody {
    /// Id of the branch point, or the literal `"root"`.
    pub from_id: String,
    pub summary: String,
    pub details: Option<Value>,
    pub from_extension: bool,
}

impl Body for BranchSummaryBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(BranchSummaryBody {
            from_id: o.string("fromId").unwrap_or_default(),
            summary: required(o, "summary")?,
            details: o.value("details"),
            from_extension: o.flag("fromExtension") || o.flag("fromHook"),
        })
    }
}

impl BranchSummaryBody {
    /// The fields of a new entry.
    pub fn to_fields(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("fromId".into(), self.from_id.clone().into());
        m.insert("summary".into(), self.summary.clone().into());
        put(&mut m, "details", self.details.clone());
        if self.from_extension {
            m.insert("fromExtension".into(), true.into());
        }
        m
    }
}

/// Body of a `custom_message` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomMessageBody {
    pub custom_type: String,
    pub content: Value,
    pub details: Option<Value>,
    pub display: bool,
    pub attribution: Option<String>,
}

impl Body for CustomMessageBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(CustomMessageBody {
            custom_type: o.string("customType").unwrap_or_default(),
            content: o.value("content").unwrap_or(Value::Null),
            details: o.value("details"),
            display: o.flag("display"),
            attribution: o.string("attribution"),
        })
    }
}

/// Body of a `label` entry: an empty or missing label clears it.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelBody {
    pub target_id: String,
    pub label: Option<String>,
}

impl Body for LabelBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(LabelBody {
            target_id: required(o, "targetId")?,
            label: o.string("label"),
        })
    }
}

impl LabelBody {
    /// The fields of a new entry.
    pub fn to_fields(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("targetId".into(), self.target_id.clone().into());
        put(&mut m, "label", self.label.clone());
        m
    }
}

/// Body of a `thinking_level_change` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ThinkingLevelBody {
    pub thinking_level: Option<String>,
    pub configured: Option<String>,
}

impl Body for ThinkingLevelBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(ThinkingLevelBody {
            thinking_level: o.string("thinkingLevel"),
            configured: o.string("configured"),
        })
    }
}

/// Body of a `model_change` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelChangeBody {
    /// `"provider/modelId"`; v1 files spell it as separate `provider` and `modelId`.
    pub model: Option<String>,
    pub role: Option<String>,
}

impl Body for ModelChangeBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(ModelChangeBody {
            model: o.string("model"),
            role: o.string("role"),
        })
    }
}

/// Body of a `mode_change` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeChangeBody {
    pub mode: Option<String>,
    pub data: Option<Value>,
}

impl Body for ModeChangeBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(ModeChangeBody {
            mode: o.string("mode"),
            data: o.value("data"),
        })
    }
}

/// Body of a `service_tier_change` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceTierBody {
    pub service_tier: Option<Value>,
}

impl Body for ServiceTierBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(ServiceTierBody {
            service_tier: o.value("serviceTier"),
        })
    }
}

/// Body of a `ttsr_injection` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct TtsrInjectionBody {
    pub injected_rules: Vec<String>,
}

impl Body for TtsrInjectionBody {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(TtsrInjectionBody {
            injected_rules: o
                .get("injectedRules")
                .and_then(|v| v.array())
                .unwrap_or_default()
                .into_iter()
                .filter_map(|v| v.str().map(|s| s.into_owned()))
                .collect(),
        })
    }
}

/// The common base every entry has (spec: compaction §1.5).
#[derive(Debug, Clone, PartialEq)]
pub struct EntryBase {
    pub timestamp: Option<String>,
}

impl Body for EntryBase {
    fn read(o: &Obj<'_>) -> Result<Self, String> {
        Ok(EntryBase {
            timestamp: o.string("timestamp"),
        })
    }
}
