//! Compaction and branch-summary settings with their defaults (spec: compaction §9.2).
//!
//! Settings arrive from the host as JSON objects. Every field is optional; a field with the
//! wrong type or an impossible value, or a field this library does not know, is an
//! `E_SETTINGS` error that names it. `reserveTokens` keeps its provenance: unset and an
//! explicit 16 384 behave differently (spec: compaction §3.3, §14.5).
//!
//! The object is the `compaction` group of the reference's settings; the `branchSummary`
//! group rides along as a nested object (`{branchSummary: {enabled, reserveTokens}}`), and
//! `modelThresholds` sets the compaction point per model.

use crate::error::{Error, Result};
use crate::support::json::fields;
use crate::support::json::js::{self, Object};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The engine strategy (spec: compaction §9.2 `compaction.strategy`). Provider-native lanes
/// are later work; the enum leaves room for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    ContextFull,
    Handoff,
    Shake,
    Snapcompact,
    Off,
}

impl Strategy {
    /// The strategy named by its setting string (`None` for an unknown name).
    pub fn parse(s: &str) -> Option<Strategy> {
        Some(match s {
            "context-full" => Strategy::ContextFull,
            "handoff" => Strategy::Handoff,
            "shake" => Strategy::Shake,
            "snapcompact" => Strategy::Snapcompact,
            "off" => Strategy::Off,
            _ => return None,
        })
    }

    /// The setting's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::ContextFull => "context-full",
            Strategy::Handoff => "handoff",
            Strategy::Shake => "shake",
            Strategy::Snapcompact => "snapcompact",
            Strategy::Off => "off",
        }
    }
}

/// Compaction settings (spec: compaction §9.2).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionSettings {
    pub enabled: bool,
    pub strategy: Strategy,
    /// ≤ 0 (default −1): the threshold comes from the reserve; else a percentage (1–99).
    pub threshold_percent: f64,
    /// > 0 wins over the percentage (default −1: unset).
    pub threshold_tokens: f64,
    /// `None` = unset (the engine falls back to 16 384, with the small-window rescue).
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: u64,
    pub auto_continue: bool,
    pub remote_enabled: bool,
    pub remote_endpoint: Option<String>,
    pub idle_enabled: bool,
    pub idle_threshold_tokens: u64,
    pub idle_timeout_seconds: u64,
    pub supersede_reads: bool,
    pub drop_useless: bool,
    pub mid_turn_enabled: bool,
    pub async_enabled: bool,
    pub handoff_save_to_disk: bool,
    pub remote_streaming_v2_enabled: bool,
    pub v2_retained_message_budget: u64,
    pub v2_timeout_ms: u64,
    /// Ordered fallback list of methods (spec: compaction §8.3); unknown and duplicate
    /// entries are dropped, as the reference does.
    pub method_order: Vec<String>,
    pub experimental_context_management: bool,
    /// `branchSummary.*` (spec: compaction §7.5, §9.2).
    pub branch_summary: BranchSummarySettings,
    /// Per-model compaction points, in the order the host wrote them (upstream 18.8.5
    /// `modelThresholds`); [`CompactionSettings::for_model`] applies the one that matches.
    pub model_thresholds: Vec<ModelThresholdRule>,
    /// pi's `compaction.modelOverrides` (pi ≥ 1.x): per `provider/model-id`, a
    /// `reserveTokens` and/or `keepRecentTokens` that replace the general ones for that model
    /// (0 is a valid value); [`CompactionSettings::for_model`] applies the one that matches.
    pub model_overrides: Vec<ModelOverride>,
    /// The `snapcompact` object: `snapcompact.shape` and the archive serializer's options.
    pub snapcompact: SnapcompactSettings,
    /// `anchorTokens`: budget of the `<anchors>` block every compaction appends (issue 38;
    /// default 1 000, 0 writes none).
    pub anchor_tokens: u64,
    /// `recallTool`: the host offers the model the `recall_history` tool, so every compaction
    /// that writes anchors adds a one-line recall pointer (issue 38 item 3; default off).
    pub recall_tool: bool,
}

/// `snapcompact.*` settings (spec: compaction §9.2 last row, snapcompact §6.1, §9.7), read
/// from the `snapcompact` object of the settings: `{shape, toolResultMaxChars,
/// toolArgMaxChars, toolCallMaxChars, truncateHeadRatio, dimToolResults, includeThinking}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SnapcompactSettings {
    /// `snapcompact.shape`: `None` for `auto` (resolved for the reading model), else a
    /// catalogue name; the snapcompact strategy checks it (`E_SETTINGS` for an unknown one).
    pub shape: Option<String>,
    pub serialize: SerializeSettings,
    /// `snapcompact.systemPrompt`: which system-prompt text a request may send as frames
    /// (inline imaging, spec: snapcompact §9.7): `none` (default), `agents-md`, `all`.
    pub system_prompt: InlineSystemPrompt,
    /// `snapcompact.toolResults`: large old tool results may be sent as frames.
    pub tool_results: bool,
    /// `snapcompact.frameStorage`: how a new archive stores frames the previous archive
    /// already holds (ours, not the reference's; issue 43 item 5, `crate::archive::stored`).
    pub frame_storage: FrameStorage,
}

/// `snapcompact.frameStorage`: how a snapcompact compaction writes its frames' PNG data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FrameStorage {
    /// Every frame's base64 in the entry, as the reference writes it (the default: files stay
    /// readable by oh-my-pi).
    #[default]
    Inline,
    /// A frame whose bytes an earlier compaction entry of the file already stores is written
    /// as a `dataRef` to that entry's frame: each frame is stored once. Not readable by the
    /// reference (its reader drops such frames and keeps the text edges).
    Reference,
}

impl FrameStorage {
    const NAMES: [(&'static str, FrameStorage); 2] = [
        ("inline", FrameStorage::Inline),
        ("reference", FrameStorage::Reference),
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("inline", |(n, _)| n)
    }

    /// The storage named `name` (`inline`, `reference`).
    pub fn parse(name: &str) -> Option<FrameStorage> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// `snapcompact.systemPrompt` (spec: snapcompact §9.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InlineSystemPrompt {
    #[default]
    None,
    /// Only the loaded context-file sections of the prompt.
    AgentsMd,
    /// The whole prompt.
    All,
}

impl InlineSystemPrompt {
    const NAMES: [(&'static str, InlineSystemPrompt); 3] = [
        ("none", InlineSystemPrompt::None),
        ("agents-md", InlineSystemPrompt::AgentsMd),
        ("all", InlineSystemPrompt::All),
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("none", |(n, _)| n)
    }
}

/// Overrides of the archive serializer's options (spec: snapcompact §6.1); `None` keeps the
/// default (`includeThinking`: the app's rule for the reading model, snapcompact §9.7).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SerializeSettings {
    /// Caps in UTF-16 units; `Some(None)` is no cap (`"Infinity"`).
    pub tool_result_max_chars: Option<Option<u64>>,
    pub tool_arg_max_chars: Option<Option<u64>>,
    pub tool_call_max_chars: Option<Option<u64>>,
    /// Clamped to [0, 1] where it is used.
    pub truncate_head_ratio: Option<f64>,
    pub dim_tool_results: Option<bool>,
    pub include_thinking: Option<bool>,
}

/// A character cap: a whole number, or `"Infinity"` (also a JSON number too large to be a
/// length) for none.
fn cap(field: &str, v: &Value) -> std::result::Result<Option<u64>, fields::FieldError> {
    match v {
        Value::String(s) if s == "Infinity" => Ok(None),
        Value::Number(n)
            if n.as_f64()
                .is_some_and(|f| f >= fields::MAX_SAFE_INTEGER as f64) =>
        {
            Ok(None)
        }
        _ => fields::safe_count(field, v).map(Some).map_err(|mut e| {
            e.expected = "a whole number of characters or \"Infinity\"".into();
            e
        }),
    }
}

/// The serializer's character caps, read by one lookup in [`SerializeSettings::read`].
type Cap = fn(&mut SerializeSettings) -> &mut Option<Option<u64>>;
const CAPS: [(&str, Cap); 3] = [
    ("toolResultMaxChars", |o| &mut o.tool_result_max_chars),
    ("toolArgMaxChars", |o| &mut o.tool_arg_max_chars),
    ("toolCallMaxChars", |o| &mut o.tool_call_max_chars),
];

impl SerializeSettings {
    /// Reads the serializer's options of an object (`prefix` names it in errors: `""` or
    /// `"snapcompact."`); keys it does not know are left to the caller.
    pub fn read(
        map: &Map<String, Value>,
        prefix: &str,
    ) -> std::result::Result<SerializeSettings, fields::FieldError> {
        let mut o = SerializeSettings::default();
        for (k, v) in map {
            if v.is_null() {
                continue;
            }
            let f = format!("{prefix}{k}");
            let k = k.as_str();
            if let Some((_, slot)) = CAPS.iter().find(|(name, _)| *name == k) {
                *slot(&mut o) = Some(cap(&f, v)?);
                continue;
            }
            match k {
                "truncateHeadRatio" => o.truncate_head_ratio = Some(fields::number(&f, v)?),
                "dimToolResults" => o.dim_tool_results = Some(fields::boolean(&f, v)?),
                "includeThinking" => o.include_thinking = Some(fields::boolean(&f, v)?),
                _ => {}
            }
        }
        Ok(o)
    }

    /// The keys [`SerializeSettings::read`] reads.
    pub const KEYS: [&'static str; 6] = [
        "toolResultMaxChars",
        "toolArgMaxChars",
        "toolCallMaxChars",
        "truncateHeadRatio",
        "dimToolResults",
        "includeThinking",
    ];

    fn write_json(self, o: &mut Object<'_>) {
        for (k, c) in [
            ("toolResultMaxChars", self.tool_result_max_chars),
            ("toolArgMaxChars", self.tool_arg_max_chars),
            ("toolCallMaxChars", self.tool_call_max_chars),
        ] {
            match c {
                None => o.null(k),
                Some(None) => o.str(k, "Infinity"),
                Some(Some(n)) => o.num(k, n as f64),
            }
        }
        o.opt_num("truncateHeadRatio", self.truncate_head_ratio);
        for (k, b) in [
            ("dimToolResults", self.dim_tool_results),
            ("includeThinking", self.include_thinking),
        ] {
            match b {
                Some(b) => o.bool(k, b),
                None => o.null(k),
            }
        }
    }
}

impl SnapcompactSettings {
    fn read(v: &Value) -> Result<SnapcompactSettings> {
        let map = v
            .as_object()
            .ok_or_else(|| bad("snapcompact", "expected an object"))?;
        let mut s = SnapcompactSettings {
            serialize: SerializeSettings::read(map, "snapcompact.")?,
            ..SnapcompactSettings::default()
        };
        for (k, v) in map {
            if v.is_null() || SerializeSettings::KEYS.contains(&k.as_str()) {
                continue;
            }
            match k.as_str() {
                "shape" => {
                    let name = fields::non_empty_string("snapcompact.shape", v)?;
                    s.shape = (name != "auto").then(|| name.to_string());
                }
                "systemPrompt" => {
                    let name = fields::string("snapcompact.systemPrompt", v)?;
                    s.system_prompt = InlineSystemPrompt::NAMES
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, m)| *m)
                        .ok_or_else(|| {
                            bad(
                                "snapcompact.systemPrompt",
                                "expected \"none\", \"agents-md\" or \"all\"",
                            )
                        })?;
                }
                "toolResults" => {
                    s.tool_results = fields::boolean("snapcompact.toolResults", v)?;
                }
                "frameStorage" => {
                    let name = fields::string("snapcompact.frameStorage", v)?;
                    s.frame_storage = FrameStorage::parse(name).ok_or_else(|| {
                        bad(
                            "snapcompact.frameStorage",
                            "expected \"inline\" or \"reference\"",
                        )
                    })?;
                }
                _ => {
                    return Err(bad(
                        &format!("snapcompact.{k}"),
                        "unknown setting (check the spelling)",
                    ))
                }
            }
        }
        Ok(s)
    }

    fn write_json(&self, out: &mut String) {
        let mut o = Object::open(out);
        o.str("shape", self.shape.as_deref().unwrap_or("auto"));
        o.str("systemPrompt", self.system_prompt.name());
        o.bool("toolResults", self.tool_results);
        o.str("frameStorage", self.frame_storage.name());
        self.serialize.write_json(&mut o);
        o.close();
    }
}

/// The `branchSummary` group (spec: compaction §7.5, §9.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchSummarySettings {
    /// Whether a tree UI offers to summarize the branch it leaves; the library's
    /// `navigateTree` summarizes whenever it is given a summarizer (spec §7.5: the setting
    /// "only controls whether the `/tree` UI offers to summarise").
    pub enabled: bool,
    /// Budget of the branch summary input: window − reserve (spec §7.4).
    pub reserve_tokens: u64,
}

impl Default for BranchSummarySettings {
    fn default() -> Self {
        BranchSummarySettings {
            enabled: false,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
        }
    }
}

/// A compaction point of `modelThresholds`: a number of tokens or a share of the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ModelThreshold {
    /// `90000`, `"90k"`, `"1.5M"`.
    Tokens(u64),
    /// `"80%"`: a percentage of the window, above 0 and at most 100.
    Percent(f64),
}

/// One `modelThresholds` entry: `provider/model-id` or `provider/*`, and its value as the host
/// wrote it (kept for [`CompactionSettings::to_json`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelThresholdRule {
    pub provider: String,
    /// The model id; `None` for the `provider/*` wildcard.
    pub model: Option<String>,
    pub threshold: ModelThreshold,
    written: Value,
}

impl ModelThresholdRule {
    /// The rule's key: `provider/model-id` or `provider/*`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.provider, self.model.as_deref().unwrap_or("*"))
    }
}

/// Reads a `modelThresholds` key: `provider/model-id` (the id may hold slashes, as
/// OpenRouter's do) or `provider/*`. A `*` anywhere else would read as a pattern that never
/// matches, so it is refused.
fn threshold_key(key: &str) -> Option<(String, Option<String>)> {
    let (provider, id) = key.split_once('/')?;
    if provider.is_empty() || id.is_empty() || provider.contains('*') {
        return None;
    }
    match id {
        "*" => Some((provider.to_string(), None)),
        _ if id.contains('*') => None,
        _ => Some((provider.to_string(), Some(id.to_string()))),
    }
}

/// `digits[.digits]` as `(mantissa, decimals)`, exactly (no float parsing: the grammar is
/// small, and the value stays exact for `"1.5M"`).
fn decimal(s: &str) -> Option<(u64, u32)> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if s.contains('.') && (frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let decimals = u32::try_from(frac.len()).ok().filter(|&d| d <= 6)?;
    let mut m: u64 = 0;
    for b in whole.bytes().chain(frac.bytes()) {
        m = m.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some((m, decimals))
}

/// A `modelThresholds` value: a whole number of tokens (`90000`), a string of one with an
/// optional `k` (thousand) or `M` (million) suffix, any case, decimals allowed (`"90k"`,
/// `"1.5M"`, `"90000"`), or a percentage of the window (`"80%"`, `"72.5%"`). Tokens must come
/// to at least 1, a percentage must be above 0 and at most 100.
pub fn parse_model_threshold(v: &Value) -> Option<ModelThreshold> {
    if let Some(n) = v.as_f64() {
        let ok = n.fract() == 0.0 && n >= 1.0 && n <= fields::MAX_SAFE_INTEGER as f64;
        return ok.then_some(ModelThreshold::Tokens(n as u64));
    }
    let s = v.as_str()?.trim();
    if let Some(p) = s.strip_suffix('%') {
        let (m, d) = decimal(p)?;
        let percent = m as f64 / 10f64.powi(d as i32);
        return (percent > 0.0 && percent <= 100.0).then_some(ModelThreshold::Percent(percent));
    }
    let (digits, scale) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1_000u64),
        b'm' | b'M' => (&s[..s.len() - 1], 1_000_000),
        _ => (s, 1),
    };
    let (m, d) = decimal(digits)?;
    let tokens = u128::from(m) * u128::from(scale) / 10u128.pow(d);
    u64::try_from(tokens)
        .ok()
        .filter(|&t| (1..=fields::MAX_SAFE_INTEGER).contains(&t))
        .map(ModelThreshold::Tokens)
}

/// Methods `methodOrder` may name (spec: compaction §9.2).
pub const METHODS: [&str; 6] = [
    "remote",
    "snapcompact",
    "handoff",
    "shake",
    "soft",
    "window",
];

/// The engine's fallback reserve (`DEFAULT_RESERVE_TOKENS`).
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            strategy: Strategy::ContextFull,
            threshold_percent: -1.0,
            threshold_tokens: -1.0,
            reserve_tokens: None,
            keep_recent_tokens: 20_000,
            auto_continue: true,
            remote_enabled: true,
            remote_endpoint: None,
            idle_enabled: false,
            idle_threshold_tokens: 200_000,
            idle_timeout_seconds: 300,
            supersede_reads: true,
            drop_useless: true,
            mid_turn_enabled: true,
            async_enabled: true,
            handoff_save_to_disk: false,
            remote_streaming_v2_enabled: true,
            v2_retained_message_budget: 64_000,
            v2_timeout_ms: 180_000,
            method_order: ["remote", "snapcompact", "handoff", "shake", "soft"]
                .map(String::from)
                .to_vec(),
            experimental_context_management: false,
            snapcompact: SnapcompactSettings::default(),
            branch_summary: BranchSummarySettings::default(),
            model_thresholds: Vec::new(),
            model_overrides: Vec::new(),
            anchor_tokens: 1_000,
            recall_tool: false,
        }
    }
}

/// The boolean settings and the whole-number ones, each read the same way: one lookup in
/// [`CompactionSettings::from_json`] instead of a match arm (and its error path) per field.
type Slot<T> = fn(&mut CompactionSettings) -> &mut T;

const FLAGS: [(&str, Slot<bool>); 12] = [
    ("enabled", |s| &mut s.enabled),
    ("autoContinue", |s| &mut s.auto_continue),
    ("remoteEnabled", |s| &mut s.remote_enabled),
    ("idleEnabled", |s| &mut s.idle_enabled),
    ("supersedeReads", |s| &mut s.supersede_reads),
    ("dropUseless", |s| &mut s.drop_useless),
    ("midTurnEnabled", |s| &mut s.mid_turn_enabled),
    ("asyncEnabled", |s| &mut s.async_enabled),
    ("handoffSaveToDisk", |s| &mut s.handoff_save_to_disk),
    ("remoteStreamingV2Enabled", |s| {
        &mut s.remote_streaming_v2_enabled
    }),
    ("experimentalContextManagement", |s| {
        &mut s.experimental_context_management
    }),
    ("recallTool", |s| &mut s.recall_tool),
];

const COUNTS: [(&str, Slot<u64>); 6] = [
    ("anchorTokens", |s| &mut s.anchor_tokens),
    ("keepRecentTokens", |s| &mut s.keep_recent_tokens),
    ("idleThresholdTokens", |s| &mut s.idle_threshold_tokens),
    ("idleTimeoutSeconds", |s| &mut s.idle_timeout_seconds),
    ("v2RetainedMessageBudget", |s| {
        &mut s.v2_retained_message_budget
    }),
    ("v2TimeoutMs", |s| &mut s.v2_timeout_ms),
];

fn bad(field: &str, reason: &str) -> Error {
    Error::Settings {
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

impl CompactionSettings {
    /// Reads settings from a JSON object, starting from the defaults. Field names are the
    /// camelCase names of the spec; `null` means "unset / default".
    pub fn from_json(v: &Value) -> Result<CompactionSettings> {
        let mut s = CompactionSettings::default();
        let Some(map) = v.as_object() else {
            if v.is_null() {
                return Ok(s);
            }
            return Err(bad("compaction", "expected an object"));
        };
        s.apply(map)?;
        Ok(s)
    }

    fn apply(&mut self, map: &Map<String, Value>) -> Result<()> {
        for (k, v) in map {
            if v.is_null() {
                continue;
            }
            let f = k.as_str();
            if let Some((_, flag)) = FLAGS.iter().find(|(name, _)| *name == f) {
                *flag(self) = fields::boolean(f, v)?;
                continue;
            }
            if let Some((_, count)) = COUNTS.iter().find(|(name, _)| *name == f) {
                *count(self) = fields::safe_count(f, v)?;
                continue;
            }
            match f {
                "strategy" => {
                    self.strategy = v.as_str().and_then(Strategy::parse).ok_or_else(|| {
                        bad(
                            f,
                            "expected one of \"context-full\", \"handoff\", \"shake\", \
                             \"snapcompact\", \"off\"",
                        )
                    })?
                }
                "thresholdPercent" => {
                    let p = fields::number(f, v)?;
                    if p > 100.0 {
                        return Err(bad(f, "a percentage above 100 can never be reached"));
                    }
                    self.threshold_percent = p;
                }
                "thresholdTokens" => self.threshold_tokens = fields::number(f, v)?,
                "reserveTokens" => self.reserve_tokens = Some(fields::safe_count(f, v)?),
                "remoteEndpoint" => {
                    let url = v
                        .as_str()
                        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
                        .ok_or_else(|| bad(f, "expected an http(s) URL"))?;
                    self.remote_endpoint = Some(url.to_string());
                }
                "snapcompact" => self.snapcompact = SnapcompactSettings::read(v)?,
                "methodOrder" => {
                    let list = v
                        .as_array()
                        .ok_or_else(|| bad(f, "expected an array of method names"))?;
                    let mut order: Vec<String> = Vec::new();
                    for m in list.iter().filter_map(Value::as_str) {
                        if METHODS.contains(&m) && !order.iter().any(|o| o == m) {
                            order.push(m.to_string());
                        }
                    }
                    self.method_order = order;
                }
                "branchSummary" => self.branch_summary = branch_summary(v)?,
                "modelThresholds" => self.model_thresholds = model_thresholds(v)?,
                "modelOverrides" => self.model_overrides = model_overrides(v)?,
                _ => return Err(bad(f, "unknown setting (check the spelling)")),
            }
        }
        Ok(())
    }

    /// The settings as JSON text with every field (unset ones as `null`).
    pub fn json(&self) -> String {
        let mut out = String::new();
        let mut o = Object::open(&mut out);
        o.bool("enabled", self.enabled);
        o.str("strategy", self.strategy.as_str());
        o.num("thresholdPercent", self.threshold_percent);
        o.num("thresholdTokens", self.threshold_tokens);
        o.opt_num("reserveTokens", self.reserve_tokens.map(|t| t as f64));
        o.num("keepRecentTokens", self.keep_recent_tokens as f64);
        o.bool("autoContinue", self.auto_continue);
        o.bool("remoteEnabled", self.remote_enabled);
        o.opt_str("remoteEndpoint", self.remote_endpoint.as_deref());
        o.bool("idleEnabled", self.idle_enabled);
        o.num("idleThresholdTokens", self.idle_threshold_tokens as f64);
        o.num("idleTimeoutSeconds", self.idle_timeout_seconds as f64);
        o.bool("supersedeReads", self.supersede_reads);
        o.bool("dropUseless", self.drop_useless);
        o.bool("midTurnEnabled", self.mid_turn_enabled);
        o.bool("asyncEnabled", self.async_enabled);
        o.bool("handoffSaveToDisk", self.handoff_save_to_disk);
        o.bool("remoteStreamingV2Enabled", self.remote_streaming_v2_enabled);
        o.num(
            "v2RetainedMessageBudget",
            self.v2_retained_message_budget as f64,
        );
        o.num("v2TimeoutMs", self.v2_timeout_ms as f64);
        o.num("anchorTokens", self.anchor_tokens as f64);
        o.bool("recallTool", self.recall_tool);
        let methods = o.key("methodOrder");
        methods.push('[');
        for (i, m) in self.method_order.iter().enumerate() {
            if i > 0 {
                methods.push(',');
            }
            js::write_string(methods, m);
        }
        methods.push(']');
        o.bool(
            "experimentalContextManagement",
            self.experimental_context_management,
        );
        self.snapcompact.write_json(o.key("snapcompact"));
        let mut b = Object::open(o.key("branchSummary"));
        b.bool("enabled", self.branch_summary.enabled);
        b.num("reserveTokens", self.branch_summary.reserve_tokens as f64);
        b.close();
        let mut m = Object::open(o.key("modelThresholds"));
        for r in &self.model_thresholds {
            js::write_value(m.key(&r.key()), &r.written);
        }
        m.close();
        if !self.model_overrides.is_empty() {
            let mut m = Object::open(o.key("modelOverrides"));
            for r in &self.model_overrides {
                let mut e = Object::open(m.key(&r.key));
                if let Some(t) = r.reserve_tokens {
                    e.num("reserveTokens", t as f64);
                }
                if let Some(t) = r.keep_recent_tokens {
                    e.num("keepRecentTokens", t as f64);
                }
                e.close();
            }
            m.close();
        }
        o.close();
        out
    }

    /// [`CompactionSettings::json`] as a value.
    pub fn to_json(&self) -> Value {
        crate::support::json::parse(&self.json()).unwrap_or(Value::Null)
    }

    /// The `modelThresholds` rule for a model: `provider/model-id` wins over `provider/*`.
    pub fn model_threshold(&self, provider: &str, model: &str) -> Option<&ModelThresholdRule> {
        let of_provider = |r: &&ModelThresholdRule| r.provider == provider;
        let rules = || self.model_thresholds.iter().filter(of_provider);
        rules()
            .find(|r| r.model.as_deref() == Some(model))
            .or_else(|| rules().find(|r| r.model.is_none()))
    }

    /// The settings that hold for one model: its `modelThresholds` rule, if any, replaces
    /// `thresholdTokens` / `thresholdPercent`, so every threshold computed from the result
    /// (`tokens::threshold_tokens`, `should_compact`, the §8.5 recovery band) is the model's.
    /// A percentage is clamped to 1–99 % like `thresholdPercent`, a token count to the window
    /// like `thresholdTokens`.
    pub fn for_model(&self, provider: &str, model: &str) -> Cow<'_, CompactionSettings> {
        let key = format!("{provider}/{model}");
        let over = self.model_overrides.iter().find(|o| o.key == key);
        let Some(rule) = self.model_threshold(provider, model) else {
            return match over {
                None => Cow::Borrowed(self),
                Some(o) => Cow::Owned(self.with_override(o)),
            };
        };
        let mut s = match over {
            None => self.clone(),
            Some(o) => self.with_override(o),
        };
        match rule.threshold {
            ModelThreshold::Tokens(t) => s.threshold_tokens = t as f64,
            ModelThreshold::Percent(p) => {
                s.threshold_tokens = -1.0;
                s.threshold_percent = p;
            }
        }
        Cow::Owned(s)
    }

    /// These settings with a `modelOverrides` entry applied: its `reserveTokens` and
    /// `keepRecentTokens` win over the general ones (`conformance/pi-1.6/outputs/
    /// settings-resolution.json`: an override of 0 holds).
    fn with_override(&self, o: &ModelOverride) -> CompactionSettings {
        let mut s = self.clone();
        if let Some(t) = o.reserve_tokens {
            s.reserve_tokens = Some(t);
        }
        if let Some(t) = o.keep_recent_tokens {
            s.keep_recent_tokens = t;
        }
        s
    }

    /// The reserve the budgets use: the raw setting or 16 384 (spec: compaction §5.5).
    pub fn reserve_or_default(&self) -> u64 {
        self.reserve_tokens.unwrap_or(DEFAULT_RESERVE_TOKENS)
    }
}

/// `branchSummary`: `{enabled?, reserveTokens?}` (spec: compaction §9.2).
fn branch_summary(v: &Value) -> Result<BranchSummarySettings> {
    let f = "branchSummary";
    let map = v.as_object().ok_or_else(|| bad(f, "expected an object"))?;
    let mut b = BranchSummarySettings::default();
    for (k, v) in map.iter().filter(|(_, v)| !v.is_null()) {
        match k.as_str() {
            "enabled" => b.enabled = fields::boolean("branchSummary.enabled", v)?,
            "reserveTokens" => {
                b.reserve_tokens = fields::safe_count("branchSummary.reserveTokens", v)?
            }
            _ => {
                return Err(bad(
                    &format!("{f}.{k}"),
                    "unknown setting (check the spelling)",
                ))
            }
        }
    }
    Ok(b)
}

/// `modelThresholds`: `{"provider/model-id" | "provider/*": 90000 | "90k" | "1M" | "80%"}`.
/// One entry of `modelOverrides` (pi's per-model compaction settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOverride {
    /// `provider/model-id`, as written.
    pub key: String,
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
}

/// `modelOverrides`: `{"provider/model-id": {reserveTokens?, keepRecentTokens?}}`.
fn model_overrides(v: &Value) -> Result<Vec<ModelOverride>> {
    let map = v.as_object().ok_or_else(|| {
        bad(
            "modelOverrides",
            "expected an object keyed `provider/model-id`",
        )
    })?;
    let mut out = Vec::with_capacity(map.len());
    for (key, value) in map.iter().filter(|(_, v)| !v.is_null()) {
        let field = format!("modelOverrides.{key}");
        if threshold_key(key).is_none_or(|(_, m)| m.is_none()) {
            return Err(bad(&field, "expected a key `provider/model-id`"));
        }
        let o = value.as_object().ok_or_else(|| {
            bad(
                &field,
                "expected an object {reserveTokens?, keepRecentTokens?}",
            )
        })?;
        let mut entry = ModelOverride {
            key: key.clone(),
            reserve_tokens: None,
            keep_recent_tokens: None,
        };
        for (k, v) in o.iter().filter(|(_, v)| !v.is_null()) {
            let f = format!("{field}.{k}");
            match k.as_str() {
                "reserveTokens" => entry.reserve_tokens = Some(fields::safe_count(&f, v)?),
                "keepRecentTokens" => entry.keep_recent_tokens = Some(fields::safe_count(&f, v)?),
                _ => return Err(bad(&f, "unknown setting (check the spelling)")),
            }
        }
        out.push(entry);
    }
    Ok(out)
}

fn model_thresholds(v: &Value) -> Result<Vec<ModelThresholdRule>> {
    let map = v.as_object().ok_or_else(|| {
        bad(
            "modelThresholds",
            "expected an object keyed `provider/model-id`",
        )
    })?;
    let mut rules = Vec::with_capacity(map.len());
    for (key, value) in map.iter().filter(|(_, v)| !v.is_null()) {
        let field = format!("modelThresholds.{key}");
        let (provider, model) = threshold_key(key)
            .ok_or_else(|| bad(&field, "expected a key `provider/model-id` or `provider/*`"))?;
        let threshold = parse_model_threshold(value).ok_or_else(|| {
            bad(
                &field,
                "expected a number of tokens (90000, \"90k\", \"1.5M\") or a percentage of \
                 the window (\"80%\")",
            )
        })?;
        rules.push(ModelThresholdRule {
            provider,
            model,
            threshold,
            written: value.clone(),
        });
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_overrides() {
        let s = CompactionSettings::from_json(&Value::Null).unwrap();
        assert_eq!(s, CompactionSettings::default());
        assert_eq!(s.reserve_tokens, None);
        assert_eq!(s.keep_recent_tokens, 20_000);
        let s = CompactionSettings::from_json(&json!({
            "reserveTokens": 16384, "thresholdPercent": 90, "strategy": "off",
            "remoteEndpoint": null
        }))
        .unwrap();
        assert_eq!(s.reserve_tokens, Some(16_384));
        assert_eq!(s.threshold_percent, 90.0);
        assert_eq!(s.strategy, Strategy::Off);
        assert_eq!(CompactionSettings::from_json(&s.to_json()).unwrap(), s);
        let s = CompactionSettings::from_json(&json!({
            "methodOrder": ["soft", "bogus", "soft", "remote"], "midTurnEnabled": false
        }))
        .unwrap();
        assert_eq!(s.method_order, ["soft", "remote"]);
        assert!(!s.mid_turn_enabled);
    }

    #[test]
    fn bad_values_name_the_field() {
        for (input, field) in [
            (json!({"reserveTokens": -1}), "reserveTokens"),
            (json!({"keepRecentTokens": "many"}), "keepRecentTokens"),
            (json!({"strategy": "magic"}), "strategy"),
            (json!({"thresholdPct": 5}), "thresholdPct"),
            (json!({"enabled": 1}), "enabled"),
            (json!({"remoteEndpoint": "ftp://x"}), "remoteEndpoint"),
            (json!({"thresholdPercent": 150}), "thresholdPercent"),
        ] {
            match CompactionSettings::from_json(&input) {
                Err(Error::Settings { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{input}: {other:?}"),
            }
        }
        assert!(CompactionSettings::from_json(&json!([1])).is_err());
    }

    #[test]
    fn snapcompact_settings() {
        let s = CompactionSettings::from_json(&json!({"snapcompact": {
            "shape": "8on16-bw", "toolResultMaxChars": "Infinity", "toolArgMaxChars": 100,
            "truncateHeadRatio": 0.5, "dimToolResults": false, "includeThinking": null,
            "systemPrompt": "agents-md", "toolResults": true
        }}))
        .unwrap();
        assert_eq!(s.snapcompact.shape.as_deref(), Some("8on16-bw"));
        assert_eq!(
            (s.snapcompact.system_prompt, s.snapcompact.tool_results),
            (InlineSystemPrompt::AgentsMd, true)
        );
        let d = CompactionSettings::default().to_json();
        assert_eq!(
            (
                &d["snapcompact"]["systemPrompt"],
                &d["snapcompact"]["toolResults"]
            ),
            (&json!("none"), &json!(false))
        );
        let o = s.snapcompact.serialize;
        assert_eq!(o.tool_result_max_chars, Some(None));
        assert_eq!(o.tool_arg_max_chars, Some(Some(100)));
        assert_eq!(o.tool_call_max_chars, None);
        assert_eq!(o.truncate_head_ratio, Some(0.5));
        assert_eq!(o.dim_tool_results, Some(false));
        assert_eq!(o.include_thinking, None, "null: the model's rule");
        assert_eq!(CompactionSettings::from_json(&s.to_json()).unwrap(), s);
        // `auto` is the default.
        let a = CompactionSettings::from_json(&json!({"snapcompact": {"shape": "auto"}})).unwrap();
        assert_eq!(a.snapcompact, SnapcompactSettings::default());
        assert_eq!(
            CompactionSettings::default().to_json()["snapcompact"]["shape"],
            "auto"
        );
        for (input, field) in [
            (json!({"snapcompact": 3}), "snapcompact"),
            (json!({"snapcompact": {"shape": ""}}), "snapcompact.shape"),
            (json!({"snapcompact": {"shap": "auto"}}), "snapcompact.shap"),
            (
                json!({"snapcompact": {"toolResultMaxChars": -1}}),
                "snapcompact.toolResultMaxChars",
            ),
            (
                json!({"snapcompact": {"toolCallMaxChars": 1.5}}),
                "snapcompact.toolCallMaxChars",
            ),
            (
                json!({"snapcompact": {"includeThinking": "no"}}),
                "snapcompact.includeThinking",
            ),
            (
                json!({"snapcompact": {"systemPrompt": "agents"}}),
                "snapcompact.systemPrompt",
            ),
            (
                json!({"snapcompact": {"toolResults": "yes"}}),
                "snapcompact.toolResults",
            ),
        ] {
            match CompactionSettings::from_json(&input) {
                Err(Error::Settings { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{input}: {other:?}"),
            }
        }
    }

    fn field_of(input: Value) -> String {
        match CompactionSettings::from_json(&input) {
            Err(Error::Settings { field, .. }) => field,
            other => panic!("{input}: {other:?}"),
        }
    }

    #[test]
    fn branch_summary_group() {
        let s = CompactionSettings::default();
        assert!(!s.branch_summary.enabled);
        assert_eq!(s.branch_summary.reserve_tokens, 16_384);
        let s = CompactionSettings::from_json(&json!({
            "branchSummary": {"enabled": true, "reserveTokens": 8000}
        }))
        .unwrap();
        assert_eq!(
            s.branch_summary,
            BranchSummarySettings {
                enabled: true,
                reserve_tokens: 8000
            }
        );
        assert_eq!(CompactionSettings::from_json(&s.to_json()).unwrap(), s);
        assert_eq!(
            field_of(json!({"branchSummary": {"reserveTokens": -5}})),
            "branchSummary.reserveTokens"
        );
        assert_eq!(
            field_of(json!({"branchSummary": {"enabled": "yes"}})),
            "branchSummary.enabled"
        );
        assert_eq!(
            field_of(json!({"branchSummary": {"reserve": 1}})),
            "branchSummary.reserve"
        );
        assert_eq!(field_of(json!({"branchSummary": 3})), "branchSummary");
    }

    #[test]
    fn model_threshold_values() {
        let t = |v: Value| parse_model_threshold(&v);
        use ModelThreshold::{Percent, Tokens};
        assert_eq!(t(json!(90000)), Some(Tokens(90_000)));
        assert_eq!(t(json!("90000")), Some(Tokens(90_000)));
        assert_eq!(t(json!("90k")), Some(Tokens(90_000)));
        assert_eq!(t(json!("90K")), Some(Tokens(90_000)));
        assert_eq!(t(json!("1M")), Some(Tokens(1_000_000)));
        assert_eq!(t(json!("1.5m")), Some(Tokens(1_500_000)));
        assert_eq!(t(json!(" 2.25k ")), Some(Tokens(2_250)));
        assert_eq!(
            t(json!("1.0005k")),
            Some(Tokens(1_000)),
            "floored to a token"
        );
        assert_eq!(t(json!("80%")), Some(Percent(80.0)));
        assert_eq!(t(json!("72.5%")), Some(Percent(72.5)));
        assert_eq!(t(json!("100%")), Some(Percent(100.0)));
        for bad in [
            json!(0),
            json!(-1),
            json!(1.5),
            json!(1.0e16),
            json!("0"),
            json!("0k"),
            json!("0.0001k"),
            json!(""),
            json!("k"),
            json!("%"),
            json!("0%"),
            json!("101%"),
            json!("-5%"),
            json!("1e5"),
            json!("1.k"),
            json!(".5M"),
            json!("1.5.5k"),
            json!("90 k"),
            json!("90kk"),
            json!("90G"),
            json!("80 %"),
            json!("1.1234567k"),
            json!("99999999999999999999"),
            json!(true),
            json!(null),
            json!([90000]),
        ] {
            assert_eq!(t(bad.clone()), None, "{bad}");
        }
    }

    #[test]
    fn model_thresholds_match_exact_before_wildcard() {
        let s = CompactionSettings::from_json(&json!({
            "thresholdTokens": 50000,
            "modelThresholds": {
                "openai/*": "80%",
                "openai/gpt-5.1": "90k",
                "openrouter/anthropic/claude-opus-4-7": 120000
            }
        }))
        .unwrap();
        let rule = |p: &str, m: &str| s.model_threshold(p, m).map(|r| r.key());
        assert_eq!(rule("openai", "gpt-5.1").as_deref(), Some("openai/gpt-5.1"));
        assert_eq!(rule("openai", "gpt-4o").as_deref(), Some("openai/*"));
        assert_eq!(
            rule("openrouter", "anthropic/claude-opus-4-7").as_deref(),
            Some("openrouter/anthropic/claude-opus-4-7")
        );
        assert_eq!(rule("anthropic", "gpt-5.1"), None);
        let exact = s.for_model("openai", "gpt-5.1");
        assert_eq!(exact.threshold_tokens, 90_000.0);
        let wild = s.for_model("openai", "gpt-4o");
        assert_eq!(
            (wild.threshold_tokens, wild.threshold_percent),
            (-1.0, 80.0)
        );
        assert!(matches!(s.for_model("x", "y"), Cow::Borrowed(_)));
        // The written values come back as written.
        let back = s.to_json();
        assert_eq!(back["modelThresholds"]["openai/gpt-5.1"], json!("90k"));
        assert_eq!(CompactionSettings::from_json(&back).unwrap(), s);
    }

    #[test]
    fn bad_model_thresholds_name_the_key() {
        for (input, field) in [
            (json!({"modelThresholds": []}), "modelThresholds"),
            (
                json!({"modelThresholds": {"gpt-5": 1000}}),
                "modelThresholds.gpt-5",
            ),
            (
                json!({"modelThresholds": {"/x": 1000}}),
                "modelThresholds./x",
            ),
            (
                json!({"modelThresholds": {"a/": 1000}}),
                "modelThresholds.a/",
            ),
            (
                json!({"modelThresholds": {"*/gpt-5": 1000}}),
                "modelThresholds.*/gpt-5",
            ),
            (
                json!({"modelThresholds": {"openai/gpt-*": 1000}}),
                "modelThresholds.openai/gpt-*",
            ),
            (
                json!({"modelThresholds": {"openai/*": "lots"}}),
                "modelThresholds.openai/*",
            ),
            (
                json!({"modelThresholds": {"openai/*": "0%"}}),
                "modelThresholds.openai/*",
            ),
        ] {
            assert_eq!(field_of(input.clone()), field, "{input}");
        }
    }
}
