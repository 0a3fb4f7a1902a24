//! Compaction and branch-summary settings with their defaults (spec: compaction §9.2).
//!
//! Settings arrive from the host as JSON objects. Every field is optional; a field with the
//! wrong type or an impossible value, or a field this library does not know, is an
//! `E_SETTINGS` error that names it. `reserveTokens` keeps its provenance: unset and an
//! explicit 16 384 behave differently (spec: compaction §3.3, §14.5).

use crate::error::{Error, Result};
use crate::support::json::fields;
use serde_json::{Map, Value};

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
    /// The `snapcompact` object: `snapcompact.shape` and the archive serializer's options.
    pub snapcompact: SnapcompactSettings,
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
            match k.as_str() {
                "toolResultMaxChars" => o.tool_result_max_chars = Some(cap(&f, v)?),
                "toolArgMaxChars" => o.tool_arg_max_chars = Some(cap(&f, v)?),
                "toolCallMaxChars" => o.tool_call_max_chars = Some(cap(&f, v)?),
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

    fn to_json(self, m: &mut Map<String, Value>) {
        let cap = |c: Option<Option<u64>>| match c {
            None => Value::Null,
            Some(None) => "Infinity".into(),
            Some(Some(n)) => n.into(),
        };
        m.insert("toolResultMaxChars".into(), cap(self.tool_result_max_chars));
        m.insert("toolArgMaxChars".into(), cap(self.tool_arg_max_chars));
        m.insert("toolCallMaxChars".into(), cap(self.tool_call_max_chars));
        m.insert("truncateHeadRatio".into(), self.truncate_head_ratio.into());
        m.insert("dimToolResults".into(), self.dim_tool_results.into());
        m.insert("includeThinking".into(), self.include_thinking.into());
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

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "shape".into(),
            self.shape.as_deref().unwrap_or("auto").into(),
        );
        self.serialize.to_json(&mut m);
        Value::Object(m)
    }
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
        }
    }
}

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
            match f {
                "enabled" => self.enabled = fields::boolean(f, v)?,
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
                "keepRecentTokens" => self.keep_recent_tokens = fields::safe_count(f, v)?,
                "autoContinue" => self.auto_continue = fields::boolean(f, v)?,
                "remoteEnabled" => self.remote_enabled = fields::boolean(f, v)?,
                "remoteEndpoint" => {
                    let url = v
                        .as_str()
                        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
                        .ok_or_else(|| bad(f, "expected an http(s) URL"))?;
                    self.remote_endpoint = Some(url.to_string());
                }
                "idleEnabled" => self.idle_enabled = fields::boolean(f, v)?,
                "idleThresholdTokens" => self.idle_threshold_tokens = fields::safe_count(f, v)?,
                "idleTimeoutSeconds" => self.idle_timeout_seconds = fields::safe_count(f, v)?,
                "supersedeReads" => self.supersede_reads = fields::boolean(f, v)?,
                "dropUseless" => self.drop_useless = fields::boolean(f, v)?,
                "midTurnEnabled" => self.mid_turn_enabled = fields::boolean(f, v)?,
                "asyncEnabled" => self.async_enabled = fields::boolean(f, v)?,
                "handoffSaveToDisk" => self.handoff_save_to_disk = fields::boolean(f, v)?,
                "remoteStreamingV2Enabled" => {
                    self.remote_streaming_v2_enabled = fields::boolean(f, v)?
                }
                "v2RetainedMessageBudget" => {
                    self.v2_retained_message_budget = fields::safe_count(f, v)?
                }
                "v2TimeoutMs" => self.v2_timeout_ms = fields::safe_count(f, v)?,
                "experimentalContextManagement" => {
                    self.experimental_context_management = fields::boolean(f, v)?
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
                _ => return Err(bad(f, "unknown setting (check the spelling)")),
            }
        }
        Ok(())
    }

    /// The settings as a JSON object with every field (unset ones as `null`).
    pub fn to_json(&self) -> Value {
        crate::support::json::object(vec![
            ("enabled", self.enabled.into()),
            ("strategy", self.strategy.as_str().into()),
            ("thresholdPercent", self.threshold_percent.into()),
            ("thresholdTokens", self.threshold_tokens.into()),
            ("reserveTokens", self.reserve_tokens.into()),
            ("keepRecentTokens", self.keep_recent_tokens.into()),
            ("autoContinue", self.auto_continue.into()),
            ("remoteEnabled", self.remote_enabled.into()),
            ("remoteEndpoint", self.remote_endpoint.clone().into()),
            ("idleEnabled", self.idle_enabled.into()),
            ("idleThresholdTokens", self.idle_threshold_tokens.into()),
            ("idleTimeoutSeconds", self.idle_timeout_seconds.into()),
            ("supersedeReads", self.supersede_reads.into()),
            ("dropUseless", self.drop_useless.into()),
            ("midTurnEnabled", self.mid_turn_enabled.into()),
            ("asyncEnabled", self.async_enabled.into()),
            ("handoffSaveToDisk", self.handoff_save_to_disk.into()),
            (
                "remoteStreamingV2Enabled",
                self.remote_streaming_v2_enabled.into(),
            ),
            (
                "v2RetainedMessageBudget",
                self.v2_retained_message_budget.into(),
            ),
            ("v2TimeoutMs", self.v2_timeout_ms.into()),
            ("methodOrder", self.method_order.clone().into()),
            (
                "experimentalContextManagement",
                self.experimental_context_management.into(),
            ),
            ("snapcompact", self.snapcompact.to_json()),
        ])
    }

    /// The reserve the budgets use: the raw setting or 16 384 (spec: compaction §5.5).
    pub fn reserve_or_default(&self) -> u64 {
        self.reserve_tokens.unwrap_or(DEFAULT_RESERVE_TOKENS)
    }
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
            "truncateHeadRatio": 0.5, "dimToolResults": false, "includeThinking": null
        }}))
        .unwrap();
        assert_eq!(s.snapcompact.shape.as_deref(), Some("8on16-bw"));
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
        ] {
            match CompactionSettings::from_json(&input) {
                Err(Error::Settings { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{input}: {other:?}"),
            }
        }
    }
}
