//! Which provider-native lane serves a model (spec: compaction §8.3, §13): the OpenAI lanes
//! (V2 streaming Responses, V1 `…/responses/compact`) a Responses model takes under the
//! settings, where each lane's requests go, and whether Anthropic server compaction applies to
//! a Claude model, its route and the live context. The JS shell asks once
//! (`nativeLanesJson`) and sends what it is told to; it decides none of this.

use crate::settings::CompactionSettings;

/// The Responses dialects a native OpenAI lane speaks (`openai::RESPONSES_APIS`).
use super::openai::RESPONSES_APIS;

const OPENAI_BASE: &str = "https://api.openai.com/v1";
const CODEX_BASE: &str = "https://chatgpt.com/backend-api";
const ANTHROPIC_API: &str = "anthropic-messages";
const ANTHROPIC_BASE: &str = "https://api.anthropic.com";
const ANTHROPIC_MESSAGES_PATH: &str = "/v1/messages";
/// The smallest live context the Anthropic lane compacts: the API refuses a compaction
/// trigger below 50,000 input tokens, and the margin absorbs the difference between the last
/// reported context and the request's input.
pub const ANTHROPIC_MIN_CONTEXT_TOKENS: f64 = 55_000.0;

/// A model's `remoteCompaction` options, as the host gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteCompaction {
    /// `enabled`: opts a route in (true) or out (false); unset: the provider's default.
    pub enabled: Option<bool>,
    /// `endpoint`: the V1 URL (trimmed, non-empty).
    pub endpoint: Option<String>,
    /// `v2Endpoint` (or `streamingEndpoint`): the V2 URL.
    pub v2_endpoint: Option<String>,
    /// `v2StreamingEnabled === true`: the model takes V2.
    pub v2_streaming: bool,
    /// `model`: the wire model id of the compaction requests.
    pub model: Option<String>,
    /// `inline === true`: the host's own Responses requests carry server compaction
    /// (`openai_inline`).
    pub inline: bool,
    /// `compactionTrigger === true`: that lane asks with Codex's explicit trigger item
    /// (`openai_inline::trigger_item`) instead of `compact_threshold`.
    pub trigger: bool,
    /// `onDemand === false`: the Anthropic on-demand lane is not used (the threshold lane is).
    pub no_on_demand: bool,
}

/// The model a native lane would serve, as the host describes it (`o.model` with the
/// `provider` and `contextWindow` options over it). Strings are as given; empty ones are
/// absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NativeModel {
    /// The model id; empty when the host gave none.
    pub id: String,
    pub provider: Option<String>,
    pub api: Option<String>,
    /// `baseUrl` as given (the OpenAI lanes read it trimmed).
    pub base_url: Option<String>,
    /// `requestModelId`: the id the provider's requests carry.
    pub request_model_id: Option<String>,
    /// Tokens; 0 when unknown.
    pub context_window: u64,
    /// The model reads images (`input` lists `image`).
    pub images: bool,
    pub remote: RemoteCompaction,
}

/// An OpenAI native lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiLane {
    V2,
    V1,
}

impl OpenAiLane {
    pub fn as_str(self) -> &'static str {
        match self {
            OpenAiLane::V2 => "v2",
            OpenAiLane::V1 => "v1",
        }
    }
}

/// The OpenAI lanes of a model: in the order they are tried (V2 first), with their URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiTarget {
    pub lanes: Vec<(OpenAiLane, String)>,
    /// The `model` of the requests' bodies.
    pub wire_model: String,
    /// ChatGPT's Codex backend (its beta headers).
    pub codex: bool,
}

/// `s` without JavaScript's `trim` whitespace.
fn js_trim(s: &str) -> &str {
    s.trim_matches(crate::support::text::is_js_whitespace)
}

/// `url` without its trailing slashes.
pub fn trim_slashes(url: &str) -> &str {
    url.trim_end_matches('/')
}

fn non_empty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

/// The query `api-version=v1` Azure needs, unless the URL has one.
fn with_azure_version(url: String) -> String {
    let has = ["?api-version=", "&api-version="]
        .iter()
        .any(|k| url.contains(k));
    if has {
        return url;
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}api-version=v1")
}

/// The OpenAI view of a model: id, provider and api all given.
struct OpenAiModel<'m> {
    m: &'m NativeModel,
    provider: &'m str,
    api: &'m str,
    base: Option<&'m str>,
    endpoint: Option<&'m str>,
    azure: bool,
    codex: bool,
}

impl<'m> OpenAiModel<'m> {
    fn of(m: &'m NativeModel) -> Option<Self> {
        let provider = non_empty(m.provider.as_deref())?;
        let api = non_empty(m.api.as_deref())?;
        if m.id.is_empty() {
            return None;
        }
        Some(OpenAiModel {
            m,
            provider,
            api,
            base: non_empty(m.base_url.as_deref().map(js_trim)),
            endpoint: non_empty(m.remote.endpoint.as_deref().map(js_trim)),
            azure: api == "azure-openai-responses",
            codex: provider == "openai-codex" || api == "openai-codex-responses",
        })
    }

    /// A Responses dialect whose route is not opted out.
    fn speaks_responses(&self) -> bool {
        self.m.remote.enabled != Some(false) && RESPONSES_APIS.contains(&self.api)
    }

    fn base_or(&self, fallback: &'m str) -> &'m str {
        trim_slashes(self.base.unwrap_or(fallback))
    }

    /// The V1 URL, or `None` when the model has no V1 lane: only the Responses dialects;
    /// `openai` always, `openai-codex` only with an explicit endpoint (ChatGPT's Codex backend
    /// has no V1 route), any other provider when it opts in; Azure needs a base URL.
    fn v1_url(&self) -> Option<String> {
        if !self.speaks_responses() {
            return None;
        }
        let allowed = if self.provider == "openai-codex" {
            self.endpoint.is_some()
        } else {
            self.provider == "openai" || self.m.remote.enabled == Some(true)
        };
        if !allowed {
            return None;
        }
        if self.azure {
            let url = match (self.endpoint, self.base) {
                (Some(e), _) => e.to_string(),
                (None, Some(_)) => format!("{}/responses/compact", self.base_or("")),
                (None, None) => return None,
            };
            return Some(with_azure_version(url));
        }
        if let Some(e) = self.endpoint {
            return Some(e.to_string());
        }
        if self.codex {
            let base = self.base_or(CODEX_BASE);
            return Some(if ends_with_codex(base) {
                format!("{base}/responses/compact")
            } else {
                format!("{base}/codex/responses/compact")
            });
        }
        let base = self.base_or(OPENAI_BASE);
        Some(if base.ends_with("/v1") {
            format!("{base}/responses/compact")
        } else {
            format!("{base}/v1/responses/compact")
        })
    }

    /// The V2 URL, or `None`: a Responses dialect that opted in (`v2StreamingEnabled`); Azure
    /// needs a base URL.
    fn v2_url(&self) -> Option<String> {
        if !self.speaks_responses() || !self.m.remote.v2_streaming {
            return None;
        }
        if let Some(e) = non_empty(self.m.remote.v2_endpoint.as_deref()) {
            return Some(e.to_string());
        }
        if self.azure {
            return self
                .base
                .map(|_| with_azure_version(format!("{}/responses", self.base_or(""))));
        }
        if self.codex {
            let base = self.base_or(CODEX_BASE);
            return Some(if base.ends_with("/codex/responses") {
                base.to_string()
            } else if base.ends_with("/codex") {
                format!("{base}/responses")
            } else {
                format!("{base}/codex/responses")
            });
        }
        let base = self.base_or(OPENAI_BASE);
        Some(if base.ends_with("/responses") {
            base.to_string()
        } else if base.ends_with("/v1") {
            format!("{base}/responses")
        } else {
            format!("{base}/v1/responses")
        })
    }
}

/// Whether `base` ends in `/codex` or `/codex/v<digits>`.
fn ends_with_codex(base: &str) -> bool {
    if base.ends_with("/codex") {
        return true;
    }
    let Some(slash) = base.rfind('/') else {
        return false;
    };
    let last = &base[slash + 1..];
    let versioned =
        last.len() > 1 && last.starts_with('v') && last[1..].bytes().all(|b| b.is_ascii_digit());
    versioned && base[..slash].ends_with("/codex")
}

/// The OpenAI lanes `m` takes under `settings` (spec: compaction §8.3, §13), V2 first, or
/// `None` when it takes none. `planned`: the `remote` method is planned, so remote compaction
/// is on whatever `remoteEnabled` says.
pub fn openai_target(
    m: &NativeModel,
    settings: &CompactionSettings,
    planned: bool,
) -> Option<OpenAiTarget> {
    if !planned && !settings.remote_enabled {
        return None;
    }
    let o = OpenAiModel::of(m)?;
    let mut lanes = Vec::new();
    if settings.remote_streaming_v2_enabled {
        if let Some(url) = o.v2_url() {
            lanes.push((OpenAiLane::V2, url));
        }
    }
    if let Some(url) = o.v1_url() {
        lanes.push((OpenAiLane::V1, url));
    }
    if lanes.is_empty() {
        return None;
    }
    let wire_model = non_empty(m.remote.model.as_deref())
        .or(non_empty(m.request_model_id.as_deref()))
        .unwrap_or(&m.id)
        .to_string();
    Some(OpenAiTarget {
        lanes,
        wire_model,
        codex: o.codex,
    })
}

/// Whether a Claude model line has server compaction (the lines Anthropic documents it for:
/// Opus and Sonnet from 4.6, Mythos and Fable). Ids name the family, then the version:
/// `claude-opus-4-6`, `claude-sonnet-4.6-20260101`, `anthropic/claude-opus-4.7`; a date is no
/// version number.
pub fn has_server_compaction(id: &str) -> bool {
    // ASCII lower case: no other character lowers into these names.
    let s = id.to_ascii_lowercase();
    if s.contains("mythos") || s.contains("fable") {
        return true;
    }
    let Some((at, family)) = ["opus", "sonnet"]
        .iter()
        .find_map(|f| s.find(f).map(|at| (at, *f)))
    else {
        return false;
    };
    let mut parts = s[at + family.len()..]
        .split(['-', '.', '@', ':'])
        .skip_while(|p| p.is_empty());
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    // A version number is below 100 (a date is not one).
    let version = |p: Option<&str>| match p {
        Some(p) if digits(p) => {
            let p = p.trim_start_matches('0');
            if p.len() > 2 {
                0
            } else {
                p.parse::<u32>().unwrap_or(0)
            }
        }
        _ => 0,
    };
    let first = parts.next();
    if !first.is_some_and(digits) {
        return false;
    }
    let (major, minor) = (version(first), version(parts.next()));
    major > 4 || (major == 4 && minor >= 6)
}

/// Whether the model speaks the Messages API (a model without `api` does when its provider is
/// `anthropic`).
pub fn speaks_messages(m: &NativeModel) -> bool {
    match non_empty(m.api.as_deref()) {
        None => m.provider.as_deref() == Some("anthropic"),
        Some(api) => api == ANTHROPIC_API,
    }
}

/// Whether requests reach an endpoint that speaks the compaction beta: the official API for
/// the first-party provider, or any route the host opted in (`remoteCompaction.enabled`).
fn endpoint_supports(m: &NativeModel) -> bool {
    if let Some(on) = m.remote.enabled {
        return on;
    }
    let official = match non_empty(m.base_url.as_deref()) {
        None => true,
        Some(b) => {
            let u = trim_slashes(b).to_ascii_lowercase();
            u == ANTHROPIC_BASE
                || u.strip_prefix(ANTHROPIC_BASE)
                    .is_some_and(|r| r.starts_with('/'))
        }
    };
    m.provider.as_deref() == Some("anthropic") && official
}

/// Why Anthropic server compaction does not apply to `m` at `tokens` live context tokens
/// (`None`: unknown), or `None` when it does (spec: compaction §13). `m` is `None` when the
/// host gave no model object.
pub fn anthropic_ineligibility(
    m: Option<&NativeModel>,
    tokens: Option<f64>,
) -> Option<&'static str> {
    let Some(m) = m else {
        return Some("no model object");
    };
    if !speaks_messages(m) {
        return Some("the model does not speak anthropic-messages");
    }
    let some_lane = has_server_compaction(&m.id)
        || (super::anthropic_ondemand::supports(&m.id) && !m.remote.no_on_demand);
    if !some_lane || m.remote.enabled == Some(false) {
        return Some("the model has no server-side compaction");
    }
    if !endpoint_supports(m) {
        return Some(
            "the endpoint is not the Anthropic API (model.remoteCompaction.enabled opts a route in)",
        );
    }
    if tokens.is_some_and(|t| t.is_finite() && t < ANTHROPIC_MIN_CONTEXT_TOKENS) {
        return Some("the context is below the 55,000 tokens server compaction needs");
    }
    None
}

/// Where the Anthropic lane POSTs: the model's base URL (else the official API) and the
/// Messages path.
pub fn anthropic_url(m: &NativeModel) -> String {
    let base = non_empty(m.base_url.as_deref()).unwrap_or(ANTHROPIC_BASE);
    format!("{}{ANTHROPIC_MESSAGES_PATH}", trim_slashes(base))
}

/// The Anthropic lanes a model takes, in the order they are tried (spec: compaction §13):
/// on-demand compaction (`compact-2026-09-04`) wherever the model supports it — the
/// documentation's method of choice — then the threshold lane (`compact-2026-01-12`) for the
/// lines that have it. `remoteCompaction.onDemand: false` keeps a model on the threshold
/// lane. Call it for a model the Anthropic lane applies to
/// ([`anthropic_ineligibility`] gave `None`).
pub fn anthropic_lanes(m: &NativeModel) -> Vec<&'static str> {
    let mut lanes = Vec::new();
    if super::anthropic_ondemand::supports(&m.id) && !m.remote.no_on_demand {
        lanes.push("ondemand");
    }
    if has_server_compaction(&m.id) {
        lanes.push("threshold");
    }
    lanes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openai(extra: impl FnOnce(&mut NativeModel)) -> NativeModel {
        let mut m = NativeModel {
            id: "gpt-5".into(),
            provider: Some("openai".into()),
            api: Some("openai-responses".into()),
            ..NativeModel::default()
        };
        extra(&mut m);
        m
    }

    fn lanes(m: &NativeModel) -> Vec<(&'static str, String)> {
        openai_target(m, &CompactionSettings::default(), false)
            .map(|t| t.lanes.into_iter().map(|(l, u)| (l.as_str(), u)).collect())
            .unwrap_or_default()
    }

    #[test]
    fn openai_lanes_and_urls() {
        let v1 = |u: &str| vec![("v1", u.to_string())];
        assert_eq!(
            lanes(&openai(|_| {})),
            v1("https://api.openai.com/v1/responses/compact")
        );
        assert_eq!(
            lanes(&openai(|m| m.base_url = Some(" http://h/x// ".into()))),
            v1("http://h/x/v1/responses/compact")
        );
        // V2 first when the model opts in.
        let both = openai(|m| m.remote.v2_streaming = true);
        assert_eq!(
            lanes(&both),
            vec![
                ("v2", "https://api.openai.com/v1/responses".to_string()),
                (
                    "v1",
                    "https://api.openai.com/v1/responses/compact".to_string()
                )
            ]
        );
        // The settings switch V2, or every lane, off; a planned `remote` ignores remoteEnabled.
        let mut s = CompactionSettings {
            remote_streaming_v2_enabled: false,
            ..CompactionSettings::default()
        };
        assert_eq!(openai_target(&both, &s, false).unwrap().lanes.len(), 1);
        s.remote_enabled = false;
        assert!(openai_target(&both, &s, false).is_none());
        assert_eq!(openai_target(&both, &s, true).unwrap().lanes.len(), 1);
        // Another provider opts in; Codex needs an endpoint for V1; Azure a base URL.
        assert!(lanes(&openai(|m| m.provider = Some("azure".into()))).is_empty());
        assert_eq!(
            lanes(&openai(|m| {
                m.provider = Some("gw".into());
                m.remote.enabled = Some(true);
            })),
            v1("https://api.openai.com/v1/responses/compact")
        );
        let codex = |e: Option<&str>| {
            openai(|m| {
                m.provider = Some("openai-codex".into());
                m.api = Some("openai-codex-responses".into());
                m.remote.endpoint = e.map(str::to_string);
                m.remote.v2_streaming = true;
            })
        };
        assert_eq!(
            lanes(&codex(None)),
            vec![(
                "v2",
                "https://chatgpt.com/backend-api/codex/responses".to_string()
            )]
        );
        assert_eq!(lanes(&codex(Some("http://e/c"))).len(), 2);
        let azure = |base: Option<&str>| {
            openai(|m| {
                m.provider = Some("azure".into());
                m.api = Some("azure-openai-responses".into());
                m.remote.enabled = Some(true);
                m.base_url = base.map(str::to_string);
            })
        };
        assert!(lanes(&azure(None)).is_empty());
        assert_eq!(
            lanes(&azure(Some("https://r.openai.azure.com/openai/v1/"))),
            v1("https://r.openai.azure.com/openai/v1/responses/compact?api-version=v1")
        );
        // Not a Responses dialect, opted out, or incomplete: no lane.
        for m in [
            openai(|m| m.api = Some("openai-completions".into())),
            openai(|m| m.remote.enabled = Some(false)),
            openai(|m| m.id.clear()),
            openai(|m| m.provider = None),
        ] {
            assert!(lanes(&m).is_empty(), "{m:?}");
        }
        let t = openai_target(
            &openai(|m| m.request_model_id = Some("gpt-5-2025".into())),
            &CompactionSettings::default(),
            false,
        )
        .unwrap();
        assert_eq!((t.wire_model.as_str(), t.codex), ("gpt-5-2025", false));
    }

    #[test]
    fn codex_bases() {
        assert!(ends_with_codex("https://x/codex"));
        assert!(ends_with_codex("https://x/codex/v2"));
        assert!(!ends_with_codex("https://x/codex/v"));
        assert!(!ends_with_codex("https://x/codexv2"));
        assert!(!ends_with_codex("https://x/v2"));
    }

    #[test]
    fn server_compaction_lines() {
        for yes in [
            "claude-opus-4-6",
            "claude-sonnet-4.6-20260101",
            "anthropic/claude-opus-4.7",
            "claude-opus-5",
            "claude-mythos",
            "Claude-Fable-1",
        ] {
            assert!(has_server_compaction(yes), "{yes}");
        }
        for no in [
            "claude-opus-4-5",
            "claude-sonnet-4-20250514",
            "claude-haiku-4-6",
            "claude-opus",
            "claude-opus-latest",
            "gpt-5",
            "",
        ] {
            assert!(!has_server_compaction(no), "{no}");
        }
    }

    #[test]
    fn anthropic_rules_in_order() {
        let claude = |extra: &dyn Fn(&mut NativeModel)| {
            let mut m = NativeModel {
                id: "claude-opus-4-6".into(),
                provider: Some("anthropic".into()),
                api: Some("anthropic-messages".into()),
                ..NativeModel::default()
            };
            extra(&mut m);
            m
        };
        let why = |m: &NativeModel, t: Option<f64>| anthropic_ineligibility(Some(m), t);
        assert_eq!(anthropic_ineligibility(None, None), Some("no model object"));
        assert_eq!(why(&claude(&|_| {}), None), None);
        assert_eq!(why(&claude(&|_| {}), Some(60_000.0)), None);
        assert_eq!(why(&claude(&|_| {}), Some(f64::NAN)), None);
        assert_eq!(
            why(&claude(&|_| {}), Some(54_999.0)),
            Some("the context is below the 55,000 tokens server compaction needs")
        );
        assert_eq!(
            why(&claude(&|m| m.api = Some("openai-responses".into())), None),
            Some("the model does not speak anthropic-messages")
        );
        // No api: the anthropic provider speaks Messages.
        assert_eq!(why(&claude(&|m| m.api = None), None), None);
        assert_eq!(
            why(&claude(&|m| m.id = "claude-opus-4-1".into()), None),
            Some("the model has no server-side compaction")
        );
        let proxy = claude(&|m| m.base_url = Some("https://proxy.example/v1".into()));
        assert!(why(&proxy, None).is_some_and(|r| r.starts_with("the endpoint")));
        let opted = claude(&|m| {
            m.base_url = Some("https://proxy.example".into());
            m.remote.enabled = Some(true);
        });
        assert_eq!(why(&opted, None), None);
        assert_eq!(anthropic_url(&opted), "https://proxy.example/v1/messages");
        let official = claude(&|m| m.base_url = Some("HTTPS://api.anthropic.com/".into()));
        assert_eq!(why(&official, None), None);
        assert_eq!(
            anthropic_url(&claude(&|_| {})),
            "https://api.anthropic.com/v1/messages"
        );
        let lookalike = claude(&|m| m.base_url = Some("https://api.anthropic.com.evil".into()));
        assert!(why(&lookalike, None).is_some());
    }
}
