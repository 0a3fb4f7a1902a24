//! The exported trigger state machine (spec: compaction §8). The public `ContextManager` class
//! of the package (`src/js/core/triggers.ts`) wraps it; this layer only converts JSON to the core's
//! inputs and decisions back to JSON.

use super::interop::triggers::{
    assistant, bad, compaction_time, flag, host_model, model, model_json, now, number, opt_tokens,
    options, outcome, string, tokens,
};
use super::interop::{now_ms, parse_json, to_js};
use crate::support::json::js;
use crate::triggers::{
    self, CompactRequest, CompactionMethod, CompactionOutcome, CompactionReason, CompactionReport,
    ContextManager, Decision, HostCount, HostRoutes, MethodContext, PromptInput, ReplyStep,
    StepInput, TurnInput,
};
use serde_json::Value;
use wasm_bindgen::prelude::*;

fn decision_json(d: &Decision) -> Result<String, JsValue> {
    Ok(d.json())
}

/// The host's own count of the live context (`counting`: it counts with a `tokenCounter`),
/// else none: the prune windows stay in the core's estimate.
fn host_count(counting: bool, estimated: f64, counted: f64, usage: f64) -> Option<HostCount> {
    counting.then_some(HostCount {
        estimated,
        counted,
        usage,
    })
}

/// The facts of a step of the host's loop: `{now, storedTokens?, latestCompactionAt?,
/// canPromote?, freedTokens?, state?, serverCompaction?}`, run through `f` with the model.
fn with_step<T>(
    model_json: &str,
    options_json: Option<String>,
    what: &str,
    f: impl FnOnce(StepInput<'_>) -> T,
) -> Result<T, JsValue> {
    let m = model(model_json)?;
    let o = options(options_json, what)?;
    let state = match o.get("state") {
        None | Some(Value::Null) => None,
        Some(_) => Some(string(&o, "state", what)?),
    };
    let s = StepInput {
        stored_tokens: opt_tokens(number(&o, "storedTokens", what)?, "storedTokens")?,
        latest_compaction_at: compaction_time(number(&o, "latestCompactionAt", what)?)?,
        can_promote: flag(&o, "canPromote", what)?,
        freed_tokens: opt_tokens(number(&o, "freedTokens", what)?, "freedTokens")?.unwrap_or(0),
        state: state.as_deref(),
        server_compaction: flag(&o, "serverCompaction", what)?,
        ..StepInput::new(&m, now(&o, what)?)
    };
    Ok(f(s))
}

/// The trigger state machine of one live session.
#[wasm_bindgen]
pub struct WasmContextManager {
    inner: ContextManager,
}

#[wasm_bindgen]
impl WasmContextManager {
    /// A machine with the given compaction settings (JSON; `E_SETTINGS` names a bad field);
    /// `remote`: the host has a remote route besides `settings.remoteEndpoint`.
    #[wasm_bindgen(constructor)]
    pub fn new(settings_json: Option<String>, remote: bool) -> Result<WasmContextManager, JsValue> {
        let settings = super::interop::tokens::settings(settings_json)?;
        let mut inner = ContextManager::new(settings);
        inner.set_remote_route(remote);
        Ok(WasmContextManager { inner })
    }

    /// Refuses (`E_SETTINGS`, naming why) settings under which no compaction method could ever
    /// run for the model on this host (`ContextManager::check_methods`). `host_json`:
    /// `{summarizer?, remoteEndpoint?, nativeLane?}` (booleans).
    #[wasm_bindgen(js_name = checkMethods)]
    pub fn check_methods(
        &self,
        model_json: &str,
        host_json: Option<String>,
    ) -> Result<(), JsValue> {
        let m = model(model_json)?;
        let what = "host routes";
        let o = options(host_json, what)?;
        let host = HostRoutes {
            summarizer: flag(&o, "summarizer", what)?,
            remote_endpoint: flag(&o, "remoteEndpoint", what)?,
            native_lane: flag(&o, "nativeLane", what)?,
        };
        self.inner.check_methods(&m, host).map_err(to_js)
    }

    /// The settings with defaults filled in, as JSON.
    #[wasm_bindgen(js_name = settingsJson)]
    pub fn settings_json(&self) -> String {
        self.inner.settings().json()
    }

    /// Counters and flags, as JSON.
    #[wasm_bindgen(js_name = stateJson)]
    pub fn state_json(&self) -> Result<String, JsValue> {
        Ok(self.inner.state().json())
    }

    /// An assistant turn ended; returns the decision as JSON.
    #[wasm_bindgen(js_name = afterTurn)]
    pub fn after_turn(
        &mut self,
        assistant_json: &str,
        model_json: &str,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let a = assistant(assistant_json)?;
        let m = model(model_json)?;
        let what = "afterTurn options";
        let o = options(options_json, what)?;
        let t = TurnInput {
            stored_tokens: opt_tokens(number(&o, "storedTokens", what)?, "storedTokens")?,
            latest_compaction_at: compaction_time(number(&o, "latestCompactionAt", what)?)?,
            can_promote: flag(&o, "canPromote", what)?,
            freed_tokens: opt_tokens(number(&o, "freedTokens", what)?, "freedTokens")?.unwrap_or(0),
            freed_lowers_trigger: flag(&o, "freedLowersTrigger", what)?,
            mid_run: flag(&o, "midRun", what)?,
            ..TurnInput::new(&a, &m, now(&o, what)?)
        };
        decision_json(&self.inner.after_turn(t))
    }

    /// The stale pass to run before a request (`ContextManager::stale_pass`): the prune step
    /// as JSON, or `null`. `counting`: the host counts tokens itself, `estimated` / `counted` /
    /// `usage` its count of the live context.
    #[wasm_bindgen(js_name = stalePass)]
    pub fn stale_pass(&self, counting: bool, estimated: f64, counted: f64, usage: f64) -> String {
        let count = host_count(counting, estimated, counted, usage);
        self.inner
            .stale_pass(count)
            .map_or_else(|| "null".into(), |p| p.json())
    }

    /// The rewrites that waited for a break (`ContextManager::break_prune`): the prune step
    /// as JSON, or `null`; the count as in `stalePass`, `now` in ms.
    #[wasm_bindgen(js_name = breakPrune)]
    pub fn break_prune(
        &self,
        counting: bool,
        estimated: f64,
        counted: f64,
        usage: f64,
        now: f64,
    ) -> String {
        let count = host_count(counting, estimated, counted, usage);
        self.inner
            .break_prune(count, now as i64)
            .map_or_else(|| "null".into(), |p| p.json())
    }

    /// A reply the host appended (`ContextManager::on_reply`): true when it is deferred to
    /// the next request (a turn that asked for tools).
    #[wasm_bindgen(js_name = onReply)]
    pub fn on_reply(&mut self, assistant_json: &str) -> Result<bool, JsValue> {
        let a = assistant(assistant_json)?;
        Ok(self.inner.on_reply(a) == ReplyStep::Deferred)
    }

    /// The threshold prune before the reply's check (`ContextManager::reply_prune`): the prune
    /// step as JSON, or `null`; the count as in `stalePass`.
    #[wasm_bindgen(js_name = replyPrune)]
    pub fn reply_prune(&self, counting: bool, estimated: f64, counted: f64, usage: f64) -> String {
        let count = host_count(counting, estimated, counted, usage);
        self.inner
            .reply_prune(count)
            .map_or_else(|| "null".into(), |p| p.json())
    }

    /// The reply `onReply` took carried the provider's compaction and the host committed it
    /// (`ContextManager::server_compacted`).
    #[wasm_bindgen(js_name = serverCompacted)]
    pub fn server_compacted(&mut self) {
        self.inner.server_compacted();
    }

    /// The check of the reply `onReply` took, after its prune (`ContextManager::after_reply`).
    #[wasm_bindgen(js_name = afterReply)]
    pub fn after_reply(
        &mut self,
        model_json: &str,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let inner = &mut self.inner;
        with_step(model_json, options_json, "afterReply options", |s| {
            inner.after_reply(s).json()
        })
    }

    /// A request is about to be sent (`ContextManager::before_request`): the decision as
    /// JSON, or `null` for a retry (nothing appended since the last step).
    #[wasm_bindgen(js_name = beforeRequest)]
    pub fn before_request(
        &mut self,
        model_json: &str,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let inner = &mut self.inner;
        with_step(model_json, options_json, "beforeRequest options", |s| {
            inner
                .before_request(s)
                .map_or_else(|| "null".into(), |d| d.json())
        })
    }

    /// What a compaction for `request_json` keeps (`ContextManager::keep_budgets`):
    /// `{keepRecentTokens, v2RetainedMessageBudget}` as JSON, the count as in `stalePass`.
    #[wasm_bindgen(js_name = keepBudgets)]
    pub fn keep_budgets(
        &self,
        request_json: &str,
        counting: bool,
        estimated: f64,
        counted: f64,
        usage: f64,
    ) -> Result<String, JsValue> {
        let request = CompactRequest::from_json(&parse_json(request_json, "compaction request")?)
            .map_err(|e| bad(&format!("invalid compaction request: {e}")))?;
        let count = host_count(counting, estimated, counted, usage);
        let mut out = String::new();
        let mut o = js::Object::open(&mut out);
        for (name, tokens) in self.inner.keep_budgets(&request, count) {
            o.num(name, tokens as f64);
        }
        o.close();
        Ok(out)
    }

    /// Whether the host runs background compaction (`ContextManager::set_speculation_host`).
    #[wasm_bindgen(js_name = setSpeculationHost)]
    pub fn set_speculation_host(&mut self, allowed: bool) {
        self.inner.set_speculation_host(allowed);
    }

    /// The background step of the last `afterReply` / `beforeRequest` (spec: compaction §13):
    /// `{step, state, request}` as JSON, `request` (the threshold compaction a start prepares)
    /// on a start or refresh only.
    #[wasm_bindgen(js_name = speculationJson)]
    pub fn speculation_json(&self, model_json: &str) -> Result<String, JsValue> {
        use crate::triggers::speculation::SpeculationStep;
        let step = self.inner.speculation_step();
        let request = match step {
            SpeculationStep::Start | SpeculationStep::Refresh => {
                self.inner.speculation_request(&model(model_json)?)
            }
            _ => None,
        };
        let mut out = String::new();
        let mut o = js::Object::open(&mut out);
        o.str("step", step.as_str());
        o.str("state", self.inner.speculation().as_str());
        match request {
            Some(r) => r.write_json(o.key("request")),
            None => o.null("request"),
        }
        o.close();
        Ok(out)
    }

    /// The host's background plan answered every request (`ContextManager::speculation_ready`).
    #[wasm_bindgen(js_name = speculationReady)]
    pub fn speculation_ready(&mut self) {
        self.inner.speculation_ready();
    }

    /// The host's background compaction ended without a result (`ContextManager::speculation_ended`).
    #[wasm_bindgen(js_name = speculationEnded)]
    pub fn speculation_ended(&mut self) {
        self.inner.speculation_ended();
    }

    /// The host's session state at the end of a step (`ContextManager::settle`).
    pub fn settle(&mut self, state: &str) {
        self.inner.settle(state);
    }

    /// The once-only warnings about a model (no context window; a keep budget too large for
    /// it), as a decision with notices only: for a host to call when it learns its model.
    #[wasm_bindgen(js_name = checkModel)]
    pub fn check_model(&mut self, model_json: &str) -> Result<String, JsValue> {
        decision_json(&self.inner.check_model(&model(model_json)?))
    }

    /// The host tried the promotion a decision asked for.
    #[wasm_bindgen(js_name = afterPromotion)]
    pub fn after_promotion(&mut self, promoted: bool) -> Result<String, JsValue> {
        decision_json(&self.inner.after_promotion(promoted))
    }

    /// A compaction ended: the request it ran, how it ended, and the report flags.
    #[wasm_bindgen(js_name = afterCompaction)]
    pub fn after_compaction(
        &mut self,
        request_json: &str,
        outcome_json: &str,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let request = CompactRequest::from_json(&parse_json(request_json, "compaction request")?)
            .map_err(|e| bad(&format!("invalid compaction request: {e}")))?;
        let outcome = outcome(outcome_json)?;
        let what = "afterCompaction options";
        let o = options(options_json, what)?;
        let report = CompactionReport {
            queued_messages: flag(&o, "queuedMessages", what)?,
            interrupted_turn: flag(&o, "interruptedTurn", what)?,
            suppress_continuation: flag(&o, "suppressContinuation", what)?,
            // The method that ran; a name the core does not know leaves the request's action.
            method: match o.get("method") {
                None | Some(Value::Null) => None,
                Some(_) => CompactionMethod::named(&string(&o, "method", what)?),
            },
            ..CompactionReport::new(request, outcome)
        };
        decision_json(&self.inner.after_compaction(&report))
    }

    /// A user prompt is about to be sent.
    #[wasm_bindgen(js_name = beforePrompt)]
    pub fn before_prompt(
        &mut self,
        model_json: &str,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let m = model(model_json)?;
        let what = "beforePrompt options";
        let o = options(options_json, what)?;
        let last = match o.get("lastAssistant") {
            None | Some(Value::Null) => None,
            Some(v) => Some(assistant(&js::stringify(v))?),
        };
        let p = PromptInput {
            last_assistant: last.as_ref(),
            stored_tokens: opt_tokens(number(&o, "storedTokens", what)?, "storedTokens")?,
            latest_compaction_at: compaction_time(number(&o, "latestCompactionAt", what)?)?,
            can_promote: flag(&o, "canPromote", what)?,
            ..PromptInput::new(&m, now(&o, what)?)
        };
        decision_json(&self.inner.before_prompt(p))
    }

    /// The user switches to a model; compact first if the context is over its threshold.
    #[wasm_bindgen(js_name = beforeModelSwitch)]
    pub fn before_model_switch(
        &mut self,
        target_json: &str,
        context_tokens: f64,
        now: f64,
    ) -> Result<String, JsValue> {
        let target = model(target_json)?;
        let d = self.inner.before_model_switch(
            &target,
            tokens(context_tokens, "contextTokens")?,
            now_ms(now)?,
        );
        decision_json(&d)
    }

    /// A compaction walk's `remote` method failed at `now`: the cooldown starts.
    #[wasm_bindgen(js_name = noteRemoteFailure)]
    pub fn note_remote_failure(&mut self, now: f64) -> Result<(), JsValue> {
        self.inner.note_remote_failure(now_ms(now)?);
        Ok(())
    }

    /// Whether `remote` still waits out its cooldown at `now`.
    #[wasm_bindgen(js_name = remoteBlocked)]
    pub fn remote_blocked(&self, now: f64) -> Result<bool, JsValue> {
        Ok(self.inner.remote_blocked(now_ms(now)?))
    }

    /// Idle maintenance check.
    #[wasm_bindgen(js_name = onIdle)]
    pub fn on_idle(
        &mut self,
        model_json: &str,
        context_tokens: f64,
        now: f64,
    ) -> Result<String, JsValue> {
        let m = model(model_json)?;
        let d = self
            .inner
            .on_idle(&m, tokens(context_tokens, "contextTokens")?, now_ms(now)?);
        decision_json(&d)
    }
}

/// The images a request to `model` (JSON) over `provider`'s route carries at most
/// (`ModelInfo::image_budget` of the provider's default budget); 0 for a model that reads none.
#[wasm_bindgen(js_name = requestImageBudget)]
pub fn request_image_budget(model_json: &str, provider: &str) -> Result<u32, JsValue> {
    let budget = super::interop::snapcompact::budgets(None)?.provider_image_budget(provider, None);
    Ok(model(model_json)?.image_budget(budget))
}

/// The state machine's constants the package exports (spec: compaction §8.2, §8.3), as JSON:
/// `{continueDelayMs, incompleteRecoveryMaxRetries}`.
#[wasm_bindgen(js_name = triggersConstantsJson)]
pub fn triggers_constants_json() -> String {
    js::stringify(&serde_json::json!({
        "continueDelayMs": crate::triggers::CONTINUE_DELAY_MS,
        "incompleteRecoveryMaxRetries": crate::triggers::INCOMPLETE_RECOVERY_MAX_RETRIES,
    }))
}

/// A host's model object, checked (`ModelInfo::from_host`: `E_INVALID_ARGUMENT` naming the
/// field), as the JSON the other calls take. `what` names it in errors.
#[wasm_bindgen(js_name = hostModelJson)]
pub fn host_model_json(model: JsValue, what: &str) -> Result<String, JsValue> {
    Ok(model_json(&host_model(&model, what)?))
}

/// `isContextOverflow(message, contextWindow?)` (spec: compaction §8.2).
#[wasm_bindgen(js_name = isContextOverflowJson)]
pub fn is_context_overflow_json(
    message_json: &str,
    context_window: Option<f64>,
) -> Result<bool, JsValue> {
    let a = assistant(message_json)?;
    let w = opt_tokens(context_window, "contextWindow")?.unwrap_or(0);
    Ok(triggers::is_context_overflow(&a, w))
}

/// `classifyError(input)` (spec: compaction §8.2, issue 39): the class of a failed call or a
/// turn, as the JSON `{class, …}`. `input`: `{text, status?, retryAfter?, now?, stopReason?,
/// promptTokens?, outputTokens?, contextWindow?, delivered?}` (`outputTokens` 0 = nothing
/// delivered; `delivered`, a boolean, says so instead).
#[wasm_bindgen(js_name = classifyErrorJson)]
pub fn classify_error_json(input_json: &str) -> Result<String, JsValue> {
    let what = "classifyError input";
    let o = options(Some(input_json.to_string()), what)?;
    let text = string(&o, "text", what)?;
    let status = match number(&o, "status", what)? {
        Some(s) if s.is_finite() && (100.0..600.0).contains(&s) && s.fract() == 0.0 => {
            Some(s as u16)
        }
        Some(_) => return Err(bad("`status` must be an HTTP status (100–599)")),
        None => None,
    };
    let retry_after = match o.get("retryAfter") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => return Err(bad("`retryAfter` must be a string or a number")),
    };
    let stop_reason = match o.get("stopReason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(crate::session::message::StopReason::parse(s)),
        Some(_) => return Err(bad("`stopReason` must be a string")),
    };
    let prompt = opt_tokens(number(&o, "promptTokens", what)?, "promptTokens")?;
    let output = opt_tokens(number(&o, "outputTokens", what)?, "outputTokens")?;
    let window = opt_tokens(number(&o, "contextWindow", what)?, "contextWindow")?;
    let input = triggers::ErrorInput {
        status,
        text: &text,
        retry_after: retry_after.as_deref(),
        now: number(&o, "now", what)?
            .map(now_ms)
            .transpose()?
            .unwrap_or(0),
        stop_reason,
        prompt_tokens: prompt.map(|p| p as f64),
        delivered: match o.get("delivered") {
            None | Some(Value::Null) => output.map(|t| t > 0),
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err(bad("`delivered` must be a boolean")),
        },
        window: window.unwrap_or(0),
    };
    Ok(js::stringify(&triggers::classify_error(&input).to_json()))
}

/// The methods of `methodOrder` that can run for a reason and model (spec: compaction §8.3,
/// §8.6), by the rule the `ContextManager` uses; a JSON array of method names. `options`:
/// `{payloadRejection?, remote?, customInstructions?}` (booleans).
#[wasm_bindgen(js_name = compactionMethodsJson)]
pub fn compaction_methods_json(
    settings_json: Option<String>,
    reason: &str,
    model_json: &str,
    options_json: Option<String>,
) -> Result<String, JsValue> {
    let s = super::interop::tokens::settings(settings_json)?;
    let r = reason_of(reason)?;
    let m = model(model_json)?;
    let what = "compactionMethods options";
    let o = options(options_json, what)?;
    let c = MethodContext {
        payload_rejection: flag(&o, "payloadRejection", what)?,
        remote_route: flag(&o, "remote", what)?,
        custom_instructions: flag(&o, "customInstructions", what)?,
        ..MethodContext::new(r, &m)
    };
    let names: Vec<Value> = triggers::usable_methods(&s, &c)
        .iter()
        .map(|m| m.as_str().into())
        .collect();
    Ok(js::stringify(&Value::Array(names)))
}

fn reason_of(reason: &str) -> Result<CompactionReason, JsValue> {
    CompactionReason::parse(reason).ok_or_else(|| {
        bad("reason must be \"threshold\", \"overflow\", \"incomplete\", \"idle\" or \"manual\"")
    })
}

/// How a compaction that threw an error with `code` ended (`CompactionOutcome::of_error`),
/// as the outcome JSON `afterCompaction` takes.
#[wasm_bindgen(js_name = compactionOutcomeOfError)]
pub fn compaction_outcome_of_error(code: Option<String>, message: &str) -> String {
    CompactionOutcome::of_error(code.as_deref(), message).json()
}

/// The end-event error text of a failed compaction (spec: compaction §8.3).
#[wasm_bindgen(js_name = compactionErrorMessage)]
pub fn compaction_error_message(reason: &str, message: &str) -> Result<String, JsValue> {
    Ok(triggers::compaction_error_message(
        reason_of(reason)?,
        message,
    ))
}
