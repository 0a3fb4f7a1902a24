//! Entries of the session tree (spec: compaction §1.5, §1.6) and the typed views of their
//! bodies. An entry keeps its original line; typed views are parsed from it on demand.

use crate::message::Role;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

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

fn zero() -> Number {
    Number::from(0u8)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `details` of compactions and branch summaries (spec: compaction §5.10).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDetails {
    #[serde(default)]
    pub read_files: Vec<String>,
    #[serde(default)]
    pub modified_files: Vec<String>,
}

/// Body of a `compaction` entry (spec: compaction §1.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionBody {
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_summary: Option<String>,
    #[serde(default)]
    pub first_kept_entry_id: String,
    #[serde(default = "zero")]
    pub tokens_before: Number,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_replay_through_entry_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_data: Option<Value>,
    /// pi-mono spells it `fromHook`.
    #[serde(default, alias = "fromHook", skip_serializing_if = "is_false")]
    pub from_extension: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Body of a `branch_summary` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryBody {
    /// Id of the branch point, or the literal `"root"`.
    #[serde(default)]
    pub from_id: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, alias = "fromHook", skip_serializing_if = "is_false")]
    pub from_extension: bool,
}

/// Body of a `custom_message` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessageBody {
    #[serde(default)]
    pub custom_type: String,
    #[serde(default)]
    pub content: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default)]
    pub display: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<String>,
}

/// Body of a `label` entry: an empty or missing label clears it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelBody {
    pub target_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// Body of a `thinking_level_change` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingLevelBody {
    #[serde(default)]
    pub thinking_level: Option<String>,
    #[serde(default)]
    pub configured: Option<String>,
}

/// Body of a `model_change` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelChangeBody {
    /// `"provider/modelId"`; v1 files spell it as separate `provider` and `modelId`.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
}

/// Body of a `mode_change` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModeChangeBody {
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub data: Option<Value>,
}

/// Body of a `service_tier_change` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceTierBody {
    #[serde(default)]
    pub service_tier: Option<Value>,
}

/// Body of a `ttsr_injection` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TtsrInjectionBody {
    #[serde(default)]
    pub injected_rules: Vec<String>,
}

/// The common base every entry has (spec: compaction §1.5).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryBase {
    #[serde(default)]
    pub timestamp: Option<String>,
}
