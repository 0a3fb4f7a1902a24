//! Host values of the provider-native lanes: the model a lane would serve, read from the
//! options the JS shell passes (`{model, provider?, contextWindow?}`). Compiled on every
//! target, so the reading is tested natively; the rules are `compaction::native::lanes`.

use crate::compaction::native::lanes::{NativeModel, RemoteCompaction};
use serde_json::Value;

fn string(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// `v` unless it is absent or null (JavaScript's `??`).
fn given(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// The model of `options` (`model` an object: `{id, provider, api, baseUrl, requestModelId,
/// contextWindow, input, remoteCompaction: {enabled, endpoint, v2Endpoint | streamingEndpoint,
/// v2StreamingEnabled, model}}`), with the options' `provider` and `contextWindow` over its
/// own; `None` when `model` is no object. Members of the wrong type count as absent.
pub fn native_model(options: &Value) -> Option<NativeModel> {
    let m = options.get("model").filter(|m| m.is_object())?;
    let rc = m.get("remoteCompaction").filter(|r| r.is_object());
    let rc_field = |k: &str| rc.and_then(|r| r.get(k));
    let window = given(options.get("contextWindow"))
        .or(m.get("contextWindow"))
        .and_then(Value::as_f64)
        .filter(|w| w.is_finite() && *w > 0.0)
        .map_or(0, |w| w as u64);
    Some(NativeModel {
        id: m
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        provider: string(given(options.get("provider")).or(m.get("provider"))),
        api: string(m.get("api")),
        base_url: string(m.get("baseUrl")),
        request_model_id: string(m.get("requestModelId")),
        context_window: window,
        images: m
            .get("input")
            .and_then(Value::as_array)
            .is_some_and(|i| i.iter().any(|x| x.as_str() == Some("image"))),
        remote: RemoteCompaction {
            enabled: rc_field("enabled").and_then(Value::as_bool),
            endpoint: string(rc_field("endpoint")),
            v2_endpoint: string(rc_field("v2Endpoint")).or(string(rc_field("streamingEndpoint"))),
            v2_streaming: rc_field("v2StreamingEnabled").and_then(Value::as_bool) == Some(true),
            inline: rc_field("inline").and_then(Value::as_bool) == Some(true),
            trigger: rc_field("compactionTrigger").and_then(Value::as_bool) == Some(true),
            no_on_demand: rc_field("onDemand").and_then(Value::as_bool) == Some(false),
            model: string(rc_field("model")),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_model_with_the_options_over_it() {
        assert_eq!(native_model(&json!({"model": "gpt-5"})), None);
        assert_eq!(native_model(&json!({})), None);
        let m = native_model(&json!({
            "model": {"id": "gpt-5", "provider": "openai", "api": "openai-responses",
                "baseUrl": "http://b", "contextWindow": 1000, "input": ["text", "image"],
                "remoteCompaction": {"enabled": true, "endpoint": "", "streamingEndpoint": "http://s",
                    "v2StreamingEnabled": 1, "model": 7}},
            "provider": "gw", "contextWindow": null}))
        .unwrap();
        assert_eq!(m.provider.as_deref(), Some("gw"));
        assert_eq!(m.context_window, 1000);
        assert!(m.images);
        assert_eq!(m.remote.enabled, Some(true));
        assert_eq!(m.remote.endpoint, None);
        assert_eq!(m.remote.v2_endpoint.as_deref(), Some("http://s"));
        assert!(!m.remote.v2_streaming, "only `true` opts in");
        assert_eq!(m.remote.model, None);
        let m =
            native_model(&json!({"model": {"id": 3, "contextWindow": -1}, "contextWindow": 5e4}))
                .unwrap();
        assert_eq!((m.id.as_str(), m.context_window), ("", 50_000));
    }
}
