//! Host values of the compaction walk: its input object and its steps. Read from / written as
//! the JSON text the JS driver (`src/js/runner/compact.ts`) sends and parses; errors reach JS through
//! [`to_js`](super::to_js) with a stable code.

use super::parse_json;
use super::triggers::{bad, field, flag, model, now, number, object, opt_tokens};
use crate::settings::{CompactionSettings, Strategy};
use crate::support::json::{fields, js};
use crate::triggers::{CompactionMethod, CompactionReason, Walk, WalkInput, WalkStep};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;

const WHAT: &str = "compaction walk input";

/// `{reason, methods?, explicit?, model: {provider, id, contextWindow?, input?}, summarizer?,
/// remoteEndpoint?, nativeLane?, remoteBlocked?, excludeSnapcompact?, customInstructions?,
/// liveTokens?, overheadTokens?, estimatedTokens?, providerRatio?, now?}` with the settings beside
/// it, and the settings' `strategy` as written (see [`written_strategy`]).
pub(crate) fn input(
    json: &str,
    settings: CompactionSettings,
    strategy: Option<Strategy>,
) -> Result<WalkInput, JsValue> {
    let o = object(parse_json(json, WHAT)?, WHAT)?;
    let reason = match o.get("reason").and_then(Value::as_str) {
        None => CompactionReason::Manual,
        Some(r) => CompactionReason::parse(r)
            .ok_or_else(|| bad(&format!("invalid {WHAT}: unknown reason \"{r}\"")))?,
    };
    let methods = match o.get("methods") {
        None | Some(Value::Null) => None,
        Some(Value::Array(list)) => {
            let mut out = Vec::new();
            for m in list {
                // An unknown name has no engine: passed over like `window`.
                let name = fields::string("methods", m).map_err(field(WHAT))?;
                out.extend(CompactionMethod::named(name));
            }
            Some(out)
        }
        Some(_) => return Err(bad(&format!("invalid {WHAT}: `methods` must be an array"))),
    };
    let explicit = match o.get("explicit").and_then(Value::as_str) {
        None => None,
        Some(s) => Some(
            Strategy::parse(s)
                .ok_or_else(|| bad(&format!("invalid {WHAT}: unknown strategy \"{s}\"")))?,
        ),
    }
    .filter(|s| *s != Strategy::Off);
    let m = o.get("model").cloned().unwrap_or(json!({}));
    let input_known = m.get("input").is_some_and(|i| !i.is_null());
    // Absent: the host has not measured it.
    let ratio = number(&o, "providerRatio", WHAT)?;
    let image_ratio = number(&o, "imageRatio", WHAT)?.unwrap_or(1.0);
    let count = |k: &str| -> Result<u64, JsValue> {
        Ok(opt_tokens(number(&o, k, WHAT)?.map(f64::round), k)?.unwrap_or(0))
    };
    Ok(WalkInput {
        methods,
        explicit,
        input_known,
        summarizer: flag(&o, "summarizer", WHAT)?,
        remote_endpoint: flag(&o, "remoteEndpoint", WHAT)?,
        native_lane: flag(&o, "nativeLane", WHAT)?,
        remote_blocked: flag(&o, "remoteBlocked", WHAT)?,
        exclude_snapcompact: flag(&o, "excludeSnapcompact", WHAT)?,
        custom_instructions: flag(&o, "customInstructions", WHAT)?,
        mid_turn: flag(&o, "midTurn", WHAT)?,
        live_tokens: count("liveTokens")?,
        overhead_tokens: count("overheadTokens")?,
        estimated_tokens: count("estimatedTokens")?,
        provider_ratio: ratio,
        image_ratio,
        strategy,
        now: now(&o, WHAT)?,
        ..WalkInput::new(reason, settings, model(&js::stringify(&m))?)
    })
}

/// The `strategy` member of the settings JSON as the host wrote it (`None`: absent or null),
/// once [`super::tokens::settings`] has accepted the text.
pub(crate) fn written_strategy(settings_json: Option<&str>) -> Option<Strategy> {
    let v = crate::support::json::parse(settings_json?).ok()?;
    v.get("strategy")?.as_str().and_then(Strategy::parse)
}

fn method(m: Option<CompactionMethod>) -> Value {
    m.map_or(Value::Null, |m| m.as_str().into())
}

/// A step as `{step: "plan" | "shake" | "rebuild" | "dropImages" | "summarize" | "commit" |
/// "warn" | "done" | "failed" | "skipped", …}`.
pub(crate) fn step(s: &WalkStep, remote_failed: bool) -> String {
    let v = match s {
        WalkStep::Plan {
            method: m,
            strategy,
            remote_enabled,
        } => json!({"step": "plan", "method": m.as_str(), "strategy": strategy.as_str(),
                    "remoteEnabled": remote_enabled}),
        WalkStep::Shake { preset } => json!({"step": "shake", "preset": preset.as_str()}),
        WalkStep::RebuildArchive { limit_tokens } => {
            json!({"step": "rebuild", "limitTokens": limit_tokens})
        }
        WalkStep::DropImages => json!({"step": "dropImages"}),
        WalkStep::Summarize { method: m, route } => {
            json!({"step": "summarize", "method": m.as_str(), "route": route.as_str(),
                   "sequential": route.one_at_a_time(), "initiator": Walk::summary_initiator(*m)})
        }
        WalkStep::Commit {
            method: m,
            artifact,
        } => {
            let artifact = artifact
                .as_ref()
                .map_or(Value::Null, |a| json!({"name": a.name, "kind": a.kind}));
            json!({"step": "commit", "method": m.as_str(), "artifact": artifact})
        }
        WalkStep::Skipped { why } => json!({"step": "skipped", "why": why.as_str()}),
        WalkStep::Warn { message, method: m } => {
            json!({"step": "warn", "message": message, "method": method(*m)})
        }
        WalkStep::Done { method: m } => {
            json!({"step": "done", "method": method(*m), "remoteFailed": remote_failed})
        }
        WalkStep::Failed {
            code,
            message,
            error_message,
        } => json!({"step": "failed", "code": code, "message": message,
                    "errorMessage": error_message, "remoteFailed": remote_failed}),
    };
    js::stringify(&v)
}
