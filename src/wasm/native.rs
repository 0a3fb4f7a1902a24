//! The provider-native lanes of the `remote` method from JavaScript (spec: compaction §5.7
//! step 1, §13): the parts of a plan a native request is built from, and the commit of the
//! lane that got through. `src/js/providers/native-openai.ts`, sent by `src/js/runner/native.ts` and `src/js/providers/native-anthropic.ts`, sent by `src/js/runner/native.ts` build and send
//! the requests (fetch, credentials, time-outs, retries); the answers are read here.

use super::compact::{committed_json, committed_json_with, WasmCompactionPlan};
use super::interop::{now_ms, to_js};
use super::session::WasmSession;
use crate::compaction::native::anthropic::{commit_anthropic, replayed_block, request_parts};
use crate::compaction::native::openai::{
    commit_openai, leads_with_summary, native_messages, replayed_messages, replayed_record,
};
use crate::compaction::native::Lane;
use crate::error::{Error, ErrorCode};
use crate::support::json::js::{self, Object};
use serde_json::Value;
use wasm_bindgen::prelude::*;

/// Checks a reply's `serverCompaction` (its output items as JSON) before the reply is
/// appended (spec: compaction §13, `openai_inline::check_carried`): `E_INVALID_MESSAGE` when
/// it does not read as a server compaction.
#[wasm_bindgen(js_name = checkServerCompaction)]
pub fn check_server_compaction(items_json: &str) -> Result<(), JsValue> {
    crate::compaction::native::openai_inline::check_carried(items_json).map_err(to_js)
}

#[wasm_bindgen]
impl WasmSession {
    /// `{messages, previous, instructions, summary, compaction, …}` of a `remote` plan for a
    /// request of `provider`, as JSON: its messages as provider messages (a message's own
    /// Responses history only for its author: `openai::replayed_messages`), the previous OpenAI
    /// native record (or null; with `provider`, only a record of that provider:
    /// `openai::replayed_record`), the summarization system prompt, whether the first message
    /// is the previous summary, the Anthropic block that replaces it for that provider
    /// (`{content, encryptedContent?}` or null: `anthropic::replayed_block`), and the
    /// Anthropic lane's parts (`anthropic::request_parts`). Nothing is written.
    #[wasm_bindgen(js_name = nativeMessagesJson)]
    pub fn native_messages_json(
        &self,
        plan: &WasmCompactionPlan,
        provider: Option<String>,
    ) -> Result<String, JsValue> {
        let (mut messages, previous) = native_messages(self.s(), &plan.plan).map_err(to_js)?;
        replayed_messages(&mut messages, provider.as_deref());
        let previous = replayed_record(previous, provider.as_deref());
        let summary = leads_with_summary(&plan.plan);
        let block = replayed_block(&plan.plan, provider.as_deref());
        let parts = request_parts(self.s(), &plan.plan).map_err(to_js)?;
        let mut out = String::new();
        let mut o = Object::open(&mut out);
        js::write_value(o.key("messages"), &Value::Array(messages));
        js::write_value(o.key("previous"), &previous);
        o.str(
            "instructions",
            crate::prompts::SUMMARIZATION_SYSTEM.trim_end(),
        );
        o.bool("summary", summary);
        js::write_value(o.key("compaction"), block.as_ref().unwrap_or(&Value::Null));
        for (k, v) in &parts {
            js::write_value(o.key(k), v);
        }
        o.close();
        Ok(out)
    }

    /// Commits the answer text of `lane` — `"v1"` (the JSON body), `"v2"` (the whole event
    /// stream; `retained_json`: the real user messages the request kept, a JSON array),
    /// `"anthropic"` (the Messages API body, of `model`) or `"anthropic-ondemand"` (the
    /// on-demand answer; the session may have grown on the plan's path since: the background
    /// swap; `"anthropic-ondemand-live"` when the request carried the host request's system
    /// prompt and tools) — for `provider`: `{entryId,
    /// tokensAfter, compactionEntry, fromExtension}` as JSON. `E_SUMMARIZER` for an unusable
    /// answer; the session is unchanged then.
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen(js_name = commitNative)]
    pub fn commit_native(
        &mut self,
        plan: &WasmCompactionPlan,
        lane: &str,
        provider: &str,
        model: &str,
        answer: &str,
        retained_json: Option<String>,
        now: f64,
    ) -> Result<String, JsValue> {
        let now = now_ms(now)?;
        let (plan, s) = (&plan.plan, self.s_mut());
        let c = match lane {
            "anthropic" => commit_anthropic(s, plan, provider, model, answer, now),
            "anthropic-ondemand" | "anthropic-ondemand-live" => {
                let live = lane.ends_with("-live");
                crate::compaction::native::anthropic_ondemand::commit_ondemand(
                    s, plan, provider, model, answer, live, now,
                )
            }
            "v1" | "v2" => {
                let retained = match retained_json.as_deref().map(crate::support::json::parse) {
                    Some(Ok(Value::Array(a))) => a,
                    _ => Vec::new(),
                };
                let lane = if lane == "v1" {
                    Lane::OpenAiV1
                } else {
                    Lane::OpenAiV2
                };
                commit_openai(s, plan, provider, lane, answer, retained, now)
            }
            _ => Err(Error::coded(
                ErrorCode::InvalidArgument,
                "the lane is \"v1\", \"v2\", \"anthropic\" or \"anthropic-ondemand\"",
            )),
        }
        .map_err(to_js)?;
        Ok(committed_json(self.s(), &c, false))
    }
}

/// The inputs of the OpenAI native requests (spec: compaction §13): the Responses items of
/// `input_json` fitted to `window` (tokens; 0 or less: unknown) for V1 and, with the tools of
/// `tools_json`, for V2, and V2's retained messages (of its fitted input) within
/// `retained_budget`: `{v1, v2, retained}` as JSON. `E_INVALID_ARGUMENT` when the input is not
/// a JSON array.
#[wasm_bindgen(js_name = nativeOpenaiInputsJson)]
pub fn native_openai_inputs_json(
    input_json: &str,
    instructions: Option<String>,
    tools_json: Option<String>,
    window: f64,
    retained_budget: Option<f64>,
) -> Result<String, JsValue> {
    use crate::compaction::native::fit::{fit_to_window, retained_messages};
    let invalid = |what: &str| {
        to_js(Error::coded(
            ErrorCode::InvalidArgument,
            format!("the native request's {what} must be a JSON array"),
        ))
    };
    let Ok(Value::Array(input)) = crate::support::json::parse(input_json) else {
        return Err(invalid("input"));
    };
    let tools = match tools_json.as_deref().map(crate::support::json::parse) {
        None => None,
        Some(Ok(t @ Value::Array(_))) => Some(t),
        Some(_) => return Err(invalid("tools")),
    };
    let window = if window.is_finite() && window > 0.0 {
        window as u64
    } else {
        0
    };
    let instructions = instructions.as_deref();
    let v1 = fit_to_window(&input, instructions, None, window);
    let v2 = fit_to_window(&input, instructions, tools.as_ref(), window);
    let retained = retained_messages(&v2, retained_budget);
    Ok(js::stringify(&crate::support::json::object(vec![
        ("v1", Value::Array(v1)),
        ("v2", Value::Array(v2)),
        ("retained", Value::Array(retained)),
    ])))
}

/// The provider-native lanes of a model (spec: compaction §8.3, §13), for the options
/// `options_json` (`{model, provider?, contextWindow?}`) under the settings `settings_json`
/// at `tokens` live context tokens (undefined or not finite: unknown), as JSON: `{lanes:
/// ["v2", "v1"] | …, openai: {urls: {v2?, v1?}, id, provider, api, model, codex,
/// contextWindow, images, retainedBudget} | null, anthropic: null | "why not", anthropicLanes:
/// ["ondemand", "threshold"] | …, messagesApi, claude: {id, provider?, url} | null}`. `planned`: the `remote` method is planned (its lanes whatever
/// `remoteEnabled` says). `E_SETTINGS` for bad settings.
#[wasm_bindgen(js_name = nativeLanesJson)]
pub fn native_lanes_json(
    options_json: &str,
    settings_json: Option<String>,
    tokens: Option<f64>,
    planned: bool,
) -> Result<String, JsValue> {
    use crate::compaction::native::lanes;
    use crate::support::json::object;
    let settings = super::interop::compact::settings_from(settings_json)?;
    let options = super::interop::parse_json(options_json, "native lane options")?;
    let model = super::interop::native::native_model(&options);
    let openai = model
        .as_ref()
        .and_then(|m| lanes::openai_target(m, &settings, planned).map(|t| (m, t)));
    let names: Vec<Value> = openai
        .iter()
        .flat_map(|(_, t)| t.lanes.iter().map(|(l, _)| l.as_str().into()))
        .collect();
    let openai = openai.map_or(Value::Null, |(m, t)| {
        let urls = t
            .lanes
            .iter()
            .map(|(l, u)| (l.as_str(), u.as_str().into()))
            .collect();
        object(vec![
            ("urls", object(urls)),
            ("id", m.id.as_str().into()),
            ("provider", m.provider.as_deref().unwrap_or("").into()),
            ("api", m.api.as_deref().unwrap_or("").into()),
            ("model", t.wire_model.into()),
            ("codex", t.codex.into()),
            ("contextWindow", m.context_window.into()),
            ("images", m.images.into()),
            ("retainedBudget", settings.v2_retained_message_budget.into()),
        ])
    });
    let why = lanes::anthropic_ineligibility(model.as_ref(), tokens);
    // Which Anthropic lanes serve the model, in order, when one does (spec: compaction §13).
    let anthropic_lanes: Vec<Value> = match (&model, why) {
        (Some(m), None) => lanes::anthropic_lanes(m)
            .into_iter()
            .map(Value::from)
            .collect(),
        _ => Vec::new(),
    };
    let claude = model.as_ref().map_or(Value::Null, |m| {
        let mut fields = vec![
            ("id", m.id.as_str().into()),
            ("url", lanes::anthropic_url(m).into()),
        ];
        if let Some(p) = &m.provider {
            fields.push(("provider", p.as_str().into()));
        }
        object(fields)
    });
    // The `remote` method has a provider-native route when some lane takes the model.
    let usable = !names.is_empty() || why.is_none();
    Ok(js::stringify(&object(vec![
        ("usable", usable.into()),
        ("lanes", Value::Array(names)),
        ("openai", openai),
        ("anthropic", why.map_or(Value::Null, Into::into)),
        ("anthropicLanes", Value::Array(anthropic_lanes)),
        (
            "messagesApi",
            model.as_ref().is_some_and(lanes::speaks_messages).into(),
        ),
        ("claude", claude),
    ])))
}

/// How long to wait before sending a failed request of the OpenAI lane `lane` (`"v1"`,
/// `"v2"`) again — `attempt` counts from 0; `status` and `retry_after_ms` are negative when
/// unknown; `base_ms` is V2's back-off base (negative: 1 s) — or −1 to give the lane up
/// (`compaction::native::retry`).
#[wasm_bindgen(js_name = nativeRetryMs)]
pub fn native_retry_ms(
    lane: &str,
    attempt: u32,
    status: f64,
    message: &str,
    retry_after_ms: f64,
    base_ms: f64,
) -> Result<f64, JsValue> {
    use crate::compaction::native::lanes::OpenAiLane;
    use crate::compaction::native::retry::{retry_wait, LaneFailure};
    let lane = match lane {
        "v1" => OpenAiLane::V1,
        "v2" => OpenAiLane::V2,
        _ => {
            return Err(to_js(Error::coded(
                ErrorCode::InvalidArgument,
                "the lane is \"v1\" or \"v2\"",
            )))
        }
    };
    let known = |v: f64| (v.is_finite() && v >= 0.0).then_some(v);
    let failure = LaneFailure {
        status: known(status).map(|s| s.min(f64::from(u16::MAX)) as u16),
        message,
        retry_after_ms: known(retry_after_ms).map(|ms| ms as u64),
    };
    let base = known(base_ms).map_or(1_000, |ms| ms as u64);
    Ok(retry_wait(lane, attempt, &failure, base).map_or(-1.0, |ms| ms as f64))
}

/// Which failure of the OpenAI lanes tried (their HTTP statuses in the order they ran, negative
/// or not finite when unknown) the native attempt reports as its `E_SUMMARIZER`: its index
/// (`compaction::native::retry::reported_failure`), −1 when none failed.
#[wasm_bindgen(js_name = nativeReportedFailure)]
pub fn native_reported_failure(statuses: &[f64]) -> i32 {
    let statuses: Vec<Option<u16>> = statuses
        .iter()
        .map(|&s| (s.is_finite() && s >= 0.0).then(|| s.min(f64::from(u16::MAX)) as u16))
        .collect();
    crate::compaction::native::retry::reported_failure(&statuses).map_or(-1, |i| i as i32)
}

/// The summarization instructions of the Anthropic lane's compaction edit for `plan`
/// (`anthropic::plan_instructions`): `tail_count` wire messages, the first of role `tail_role`,
/// stay verbatim after the summary (none given: the whole conversation is summarized).
#[wasm_bindgen(js_name = anthropicInstructions)]
pub fn anthropic_instructions(
    plan: &WasmCompactionPlan,
    tail_count: Option<u32>,
    tail_role: Option<String>,
) -> String {
    let tail = match (tail_count, tail_role.as_deref()) {
        (Some(n), Some(role)) if n > 0 => Some((n as usize, role)),
        _ => None,
    };
    crate::compaction::native::anthropic::plan_instructions(&plan.plan, tail)
}

/// The input tokens the Anthropic lane's compaction edit triggers at.
#[wasm_bindgen(js_name = anthropicTriggerTokens)]
pub fn anthropic_trigger_tokens() -> f64 {
    crate::compaction::native::anthropic::TRIGGER_TOKENS as f64
}

/// What the host's own Responses request carries of server compaction (spec: compaction §13,
/// `openai_inline`) for the options `options_json` (`{model, provider?, contextWindow?}`)
/// under `settings_json`, its context being `tokens`: `{contextManagement}` (the
/// `context_management` member) or `{triggerItem}` (the input item to append last), as JSON;
/// `{}` when the model takes the lane but this request carries nothing yet (the trigger form
/// under the threshold); undefined when its requests never carry it. `E_SETTINGS` for bad
/// settings.
#[wasm_bindgen(js_name = inlineContextManagementJson)]
pub fn inline_context_management_json(
    options_json: &str,
    settings_json: Option<String>,
    tokens: f64,
) -> Result<Option<String>, JsValue> {
    use crate::compaction::native::openai_inline::{context_management, takes, trigger_item};
    let settings = super::interop::compact::settings_from(settings_json)?;
    let options = super::interop::parse_json(options_json, "native lane options")?;
    let Some(model) = super::interop::native::native_model(&options) else {
        return Ok(None);
    };
    let window = model.context_window;
    let tokens = if tokens.is_finite() && tokens > 0.0 {
        tokens as u64
    } else {
        0
    };
    if !takes(&model, &settings, window) {
        return Ok(None);
    }
    let member = match context_management(&model, &settings, window) {
        Some(cm) => vec![("contextManagement", cm)],
        None => trigger_item(&model, &settings, window, tokens)
            .map(|i| ("triggerItem", i))
            .into_iter()
            .collect(),
    };
    Ok(Some(js::stringify(&crate::support::json::object(member))))
}

#[wasm_bindgen]
impl WasmSession {
    /// Commits the server compaction a Responses reply carried (spec: compaction §13,
    /// `openai_inline`): `response_text` is the response JSON, its output items or the whole
    /// event stream; `reply_id` the reply's entry (the leaf). `{entryId, tokensAfter,
    /// compactionEntry, fromExtension, providerTokensBefore?}` as JSON, or undefined when the reply carried no
    /// compaction item. `E_SUMMARIZER` for an unusable response, `E_INVALID_ARGUMENT` for a
    /// reply that is not the leaf; the session is unchanged then.
    #[wasm_bindgen(js_name = commitInlineCompaction)]
    pub fn commit_inline_compaction(
        &mut self,
        provider: &str,
        reply_id: &str,
        response_text: &str,
        now: f64,
    ) -> Result<Option<String>, JsValue> {
        use crate::compaction::native::openai_inline::{commit_inline, read_output};
        let now = now_ms(now)?;
        let Some(c) = read_output(response_text).map_err(to_js)? else {
            return Ok(None);
        };
        // The prompt tokens the reply reports for the request the server compacted (spec:
        // compaction §3.2 `prompt_tokens`), read before the commit moves the leaf.
        let reported = self
            .s()
            .index_of(reply_id)
            .and_then(|i| self.s().last_assistant_usage(&[i]))
            .map(|(_, u)| crate::tokens::prompt_tokens(&u))
            .filter(|&p| p > 0);
        let committed = commit_inline(self.s_mut(), provider, reply_id, &c, now).map_err(to_js)?;
        Ok(Some(committed_json_with(
            self.s(),
            &committed,
            false,
            reported,
        )))
    }
}
