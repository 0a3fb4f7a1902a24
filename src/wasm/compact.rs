//! Compaction from JavaScript: the sans-IO plan/commit cycle as a class, and the async shell
//! `session.compact()` that runs it — hooks, summarizer callbacks or the remote endpoint
//! (spec: compaction §5.8, fetched with gloo-net), parallel requests, retries with back-off
//! (§8.3), abort signals, start/end events. Whatever fails, nothing is appended: the commit
//! is the only step that writes, and it runs last.

use super::interop::{js_error, now_ms, opt_f64, opt_str, options, to_js};
use super::session::WasmSession;
use crate::compaction::plan::{
    commit_compaction, commit_extension_compaction, commit_handoff, plan_compaction, Committed,
    CompactionPlan, ExtensionCompaction, PlanOptions, SummaryRequest,
};
use crate::compaction::prepare::{Preparation, PrepareOptions};
use crate::compaction::retry::{classify, parse_retry_after, RetryPolicy, RetryStep};
use crate::error::ErrorCode;
use crate::json::js;
use crate::session::{RandomIds, Session};
use crate::settings::CompactionSettings;
use js_sys::{Function, Object, Promise, Reflect};
use serde_json::{json, Map, Value};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// Time-out of one remote-endpoint request (spec: compaction §5.8).
const REMOTE_TIMEOUT_MS: f64 = 180_000.0;

// ----- options ---------------------------------------------------------------------------

/// Plan options from the JS options object (see `PlanOptions` in the types).
fn plan_options(session: &Session, o: &Value) -> Result<PlanOptions, JsValue> {
    let leaf = match opt_str(o, "leafId") {
        Some(id) => Some(session.require(&id).map_err(to_js)?),
        None => None,
    };
    Ok(PlanOptions {
        prepare: PrepareOptions {
            active_provider: opt_str(o, "provider"),
            leaf,
        },
        custom_instructions: opt_str(o, "customInstructions"),
        extra_context: o
            .get("extraContext")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        prompt_override: opt_str(o, "promptOverride"),
        preserve_data: o.get("preserveData").and_then(Value::as_object).cloned(),
        context_window: opt_f64(o, "contextWindow")
            .filter(|w| w.is_finite() && *w > 0.0)
            .unwrap_or(0.0) as u64,
        method: opt_str(o, "method"),
    })
}

fn settings_from(json: Option<String>) -> Result<CompactionSettings, JsValue> {
    match json.as_deref() {
        None | Some("") | Some("null") | Some("undefined") => Ok(CompactionSettings::default()),
        Some(t) => {
            let v: Value = serde_json::from_str(t)
                .map_err(|e| js_error(ErrorCode::Settings, &format!("invalid settings: {e}")))?;
            CompactionSettings::from_json(&v).map_err(to_js)
        }
    }
}

// ----- JSON views --------------------------------------------------------------------------

fn request_json(r: &SummaryRequest) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), r.id.clone().into());
    m.insert("purpose".into(), r.purpose.as_str().into());
    m.insert("systemPrompt".into(), r.system_prompt.clone().into());
    m.insert("prompt".into(), r.prompt.clone().into());
    m.insert("maxTokens".into(), r.max_tokens.into());
    if let Some((n, of)) = r.window {
        m.insert("window".into(), json!({"index": n, "count": of}));
    }
    Value::Object(m)
}

/// Appends `"key":[ids…]` — written directly: region lists can hold tens of thousands of ids.
fn push_ids(out: &mut String, session: &Session, key: &str, v: &[usize]) {
    out.push(',');
    js::write_string(out, key);
    out.push_str(":[");
    for (n, &i) in v.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        js::write_string(out, session.entries()[i].id());
    }
    out.push(']');
}

/// The preparation as the hooks and the JS API see it (spec: compaction §4.5), as JSON text.
fn preparation_json(session: &Session, p: &Preparation) -> String {
    let set =
        |s: &std::collections::BTreeSet<String>| Value::from(s.iter().cloned().collect::<Vec<_>>());
    let lists = p.file_ops.file_lists();
    let id_of = |i: usize| session.entries()[i].id().to_string();
    let small = json!({
        "firstKeptEntryId": p.first_kept_entry_id,
        "isSplitTurn": p.is_split_turn,
        "turnStartEntryId": p.turn_start.map(id_of),
        "tokensBefore": p.tokens_before,
        "keepRecentTokens": p.keep_recent_tokens,
        "estimatedTokens": {
            "messagesToSummarize": p.tokens_to_summarize,
            "turnPrefixMessages": p.tokens_turn_prefix,
            "recentMessages": p.tokens_recent,
        },
        "previousSummary": p.previous_summary,
        "previousCompactionId": p.previous_compaction.map(id_of),
        "fileOps": {
            "read": set(&p.file_ops.read),
            "written": set(&p.file_ops.written),
            "edited": set(&p.file_ops.edited),
        },
        "readFiles": lists.read_files,
        "modifiedFiles": lists.modified_files,
    });
    let mut out = js::stringify(&small);
    out.pop(); // the closing brace
    push_ids(
        &mut out,
        session,
        "messagesToSummarize",
        &p.messages_to_summarize,
    );
    push_ids(&mut out, session, "turnPrefixMessages", &p.turn_prefix);
    push_ids(&mut out, session, "recentMessages", &p.recent);
    out.push('}');
    out
}

fn committed_json(
    session: &Session,
    c: &Committed,
    from_extension: bool,
) -> Result<String, JsValue> {
    let entry: Value = serde_json::from_str(&session.entry_json(c.index))
        .map_err(|e| js_error(ErrorCode::InvalidEntryBody, &e.to_string()))?;
    Ok(js::stringify(&json!({
        "entryId": c.id,
        "tokensAfter": c.tokens_after,
        "fromExtension": from_extension,
        "compactionEntry": entry,
    })))
}

// ----- the plan class ----------------------------------------------------------------------

/// A compaction plan: requests to answer, then `commitCompaction`.
#[wasm_bindgen]
pub struct WasmCompactionPlan {
    plan: CompactionPlan,
    preparation: String,
}

#[wasm_bindgen]
impl WasmCompactionPlan {
    /// The requests that can be sent now, as JSON.
    #[wasm_bindgen(js_name = pendingJson)]
    pub fn pending_json(&self) -> String {
        js::stringify(&Value::Array(
            self.plan.pending().into_iter().map(request_json).collect(),
        ))
    }

    /// The preparation (cut, regions, file operations), as JSON.
    #[wasm_bindgen(js_name = preparationJson)]
    pub fn preparation_json(&self) -> String {
        self.preparation.clone()
    }

    /// Records the answer to a pending request.
    pub fn answer(&mut self, id: &str, text: &str) -> Result<(), JsValue> {
        self.plan.answer(id, text).map_err(to_js)
    }

    /// A history window overflowed the summarizer's context: plan it at half the budget.
    #[wasm_bindgen(js_name = retrySmaller)]
    pub fn retry_smaller(&mut self, id: &str, tokens_sent: Option<f64>) -> Result<(), JsValue> {
        self.plan
            .retry_smaller(id, tokens_sent.map(|t| t.max(0.0) as u64))
            .map_err(to_js)
    }

    /// True when every request is answered.
    #[wasm_bindgen(getter, js_name = isComplete)]
    pub fn is_complete(&self) -> bool {
        self.plan.is_complete()
    }

    /// `"context-full"` or `"handoff"`.
    #[wasm_bindgen(getter)]
    pub fn strategy(&self) -> String {
        self.plan.strategy.as_str().to_string()
    }
}

fn make_plan(
    session: &Session,
    settings_json: Option<String>,
    options_json: Option<String>,
) -> Result<WasmCompactionPlan, JsValue> {
    let settings = settings_from(settings_json)?;
    let o = options(options_json, "plan options")?;
    let plan = plan_compaction(session, &settings, plan_options(session, &o)?).map_err(to_js)?;
    let preparation = preparation_json(session, &plan.preparation);
    Ok(WasmCompactionPlan { plan, preparation })
}

#[wasm_bindgen]
impl WasmSession {
    /// Prepares a compaction without writing requests: the cut, the regions, the file
    /// operations (spec: compaction §4.5), as JSON.
    #[wasm_bindgen(js_name = prepareCompactionJson)]
    pub fn prepare_compaction_json(
        &self,
        settings_json: Option<String>,
        options_json: Option<String>,
    ) -> Result<String, JsValue> {
        let session = self.s();
        let settings = settings_from(settings_json)?;
        let o = options(options_json, "prepare options")?;
        let prep = crate::compaction::prepare::prepare_compaction(
            &session,
            &settings,
            &plan_options(&session, &o)?.prepare,
        )
        .map_err(to_js)?;
        Ok(preparation_json(&session, &prep))
    }

    /// Plans a compaction (sans-IO): prepares and writes the first summarizer requests.
    #[wasm_bindgen(js_name = planCompaction)]
    pub fn plan_compaction(
        &self,
        settings_json: Option<String>,
        options_json: Option<String>,
    ) -> Result<WasmCompactionPlan, JsValue> {
        make_plan(&self.s(), settings_json, options_json)
    }

    /// Commits a complete plan: appends the compaction entry. Returns `{entryId,
    /// tokensAfter, compactionEntry, fromExtension}` as JSON.
    #[wasm_bindgen(js_name = commitCompaction)]
    pub fn commit_compaction(
        &mut self,
        plan: &WasmCompactionPlan,
        now: f64,
    ) -> Result<String, JsValue> {
        let now = now_ms(now)?;
        let mut s = self.s_mut();
        let c = commit_compaction(&mut s, &plan.plan, now).map_err(to_js)?;
        committed_json(&s, &c, false)
    }

    /// Commits a compaction supplied by a hook for a plan's preparation.
    #[wasm_bindgen(js_name = commitExtensionCompaction)]
    pub fn commit_extension_compaction(
        &mut self,
        plan: &WasmCompactionPlan,
        result_json: &str,
        now: f64,
    ) -> Result<String, JsValue> {
        let now = now_ms(now)?;
        let result = extension_result(result_json)?;
        let mut s = self.s_mut();
        let c = commit_extension_compaction(&mut s, &plan.plan.preparation, result, now)
            .map_err(to_js)?;
        committed_json(&s, &c, true)
    }

    /// Commits a handoff plan: a new session holding the handoff document.
    #[wasm_bindgen(js_name = commitHandoff)]
    pub fn commit_handoff(
        &self,
        plan: &WasmCompactionPlan,
        new_session_id: Option<String>,
        now: f64,
    ) -> Result<WasmSession, JsValue> {
        let now = now_ms(now)?;
        let seed = (js_sys::Math::random() * 9.0e15) as u64;
        let id = new_session_id.unwrap_or_else(|| {
            let mut r = RandomIds::new(seed ^ 0xA5A5);
            use crate::session::IdSource;
            format!("{}-{}", r.draw(), r.draw())
        });
        let next = commit_handoff(
            &self.s(),
            &plan.plan,
            id,
            Box::new(RandomIds::new(seed)),
            now,
        )
        .map_err(to_js)?;
        Ok(WasmSession::wrap(next))
    }

    /// The async shell: runs a whole compaction (see `js/compact.js` for the options).
    #[wasm_bindgen(js_name = compactAsync)]
    pub fn compact_async(&self, options: JsValue) -> Promise {
        let session = self.shared();
        let busy = self.busy_flag();
        wasm_bindgen_futures::future_to_promise(async move {
            if busy.replace(true) {
                return Err(js_error(ErrorCode::Busy, "Compaction already in progress"));
            }
            let result = run(session, options).await;
            busy.set(false);
            result
        })
    }
}

fn extension_result(json: &str) -> Result<ExtensionCompaction, JsValue> {
    let r = options(Some(json.to_string()), "compaction result")?;
    let summary = opt_str(&r, "summary").ok_or_else(|| {
        js_error(
            ErrorCode::InvalidArgument,
            "a hook's compaction needs a string `summary`",
        )
    })?;
    Ok(ExtensionCompaction {
        summary,
        short_summary: opt_str(&r, "shortSummary"),
        first_kept_entry_id: opt_str(&r, "firstKeptEntryId"),
        tokens_before: opt_f64(&r, "tokensBefore").map(|t| t.max(0.0) as u64),
        details: r.get("details").filter(|v| !v.is_null()).cloned(),
        preserve_data: r.get("preserveData").filter(|v| !v.is_null()).cloned(),
    })
}

// ----- the async shell ---------------------------------------------------------------------

fn get(obj: &JsValue, key: &str) -> JsValue {
    if obj.is_object() {
        Reflect::get(obj, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
    } else {
        JsValue::UNDEFINED
    }
}

fn get_string(obj: &JsValue, key: &str) -> Option<String> {
    get(obj, key).as_string()
}

fn to_json_text(v: &JsValue) -> Option<String> {
    if v.is_undefined() || v.is_null() {
        return None;
    }
    js_sys::JSON::stringify(v).ok().and_then(|s| s.as_string())
}

fn from_json_value(v: &Value) -> JsValue {
    js_sys::JSON::parse(&js::stringify(v)).unwrap_or(JsValue::NULL)
}

/// A failure of one summarizer call.
#[derive(Debug, Clone)]
struct CallError {
    message: String,
    status: Option<u16>,
    retry_after_ms: Option<u64>,
    aborted: bool,
}

impl CallError {
    fn aborted() -> CallError {
        CallError {
            message: "aborted".into(),
            status: None,
            retry_after_ms: None,
            aborted: true,
        }
    }

    /// From a thrown JS value: `message`, `status`/`statusCode`, `retryAfter` (seconds or an
    /// HTTP date) or `retryAfterMs`.
    fn from_js(err: &JsValue, signal: &web_sys::AbortSignal) -> CallError {
        if signal.aborted() {
            return CallError::aborted();
        }
        let message = get_string(err, "message")
            .or_else(|| err.as_string())
            .unwrap_or_else(|| "the summarizer failed".into());
        let status = [get(err, "status"), get(err, "statusCode")]
            .iter()
            .find_map(JsValue::as_f64)
            .map(|s| s as u16);
        let retry_after_ms = get(err, "retryAfterMs")
            .as_f64()
            .map(|m| m.max(0.0) as u64)
            .or_else(|| {
                let ra = get(err, "retryAfter");
                ra.as_f64()
                    .map(|s| (s.max(0.0) * 1000.0) as u64)
                    .or_else(|| {
                        ra.as_string()
                            .and_then(|s| parse_retry_after(&s, js_sys::Date::now() as i64))
                    })
            });
        CallError {
            message,
            status,
            retry_after_ms,
            aborted: false,
        }
    }
}

/// A promise that rejects when `signal` aborts (at once if it already has).
fn abort_promise(signal: &web_sys::AbortSignal) -> Promise {
    let signal = signal.clone();
    Promise::new(&mut |_resolve, reject| {
        if signal.aborted() {
            let _ = reject.call1(&JsValue::NULL, &JsValue::from_str("aborted"));
            return;
        }
        let on_abort = Closure::once_into_js(move || {
            let _ = reject.call1(&JsValue::NULL, &JsValue::from_str("aborted"));
        });
        let _ = signal.add_event_listener_with_callback("abort", on_abort.unchecked_ref());
    })
}

/// Awaits `p`, or fails as soon as `signal` aborts.
async fn until_abort(p: Promise, signal: &web_sys::AbortSignal) -> Result<JsValue, CallError> {
    let race = Promise::race(&js_sys::Array::of2(&p, &abort_promise(signal)));
    JsFuture::from(race)
        .await
        .map_err(|e| CallError::from_js(&e, signal))
}

/// Waits `ms`, or fails as soon as `signal` aborts.
async fn sleep(ms: u64, signal: &web_sys::AbortSignal) -> Result<(), CallError> {
    let timer = Rc::new(RefCell::new(JsValue::UNDEFINED));
    let t = Rc::clone(&timer);
    let p = Promise::new(&mut |resolve, _| {
        *t.borrow_mut() = set_timeout(&resolve, ms as f64);
    });
    let r = until_abort(p, signal).await;
    clear_timeout(&timer.borrow());
    r.map(|_| ())
}

/// Where summaries come from.
#[derive(Clone)]
enum Summarizer {
    /// `summarize(request, {signal})` → text or `{summary}`.
    Callback(Function),
    /// POST to a remote endpoint (spec: compaction §5.8).
    Remote {
        url: String,
        headers: Vec<(String, String)>,
        model: Option<String>,
    },
}

fn text_of_answer(v: &JsValue) -> Option<String> {
    v.as_string().or_else(|| get_string(v, "summary"))
}

async fn call_callback(
    f: &Function,
    request: &Value,
    signal: &web_sys::AbortSignal,
) -> Result<String, CallError> {
    let ctx = Object::new();
    let _ = Reflect::set(&ctx, &"signal".into(), signal);
    let returned = f
        .call2(&JsValue::NULL, &from_json_value(request), &ctx)
        .map_err(|e| CallError::from_js(&e, signal))?;
    let p = returned
        .dyn_into::<Promise>()
        .unwrap_or_else(|v| Promise::resolve(&v));
    let v = until_abort(p, signal).await?;
    text_of_answer(&v).ok_or_else(|| CallError {
        message: "the summarizer returned neither a string nor {summary}".into(),
        status: None,
        retry_after_ms: None,
        aborted: false,
    })
}

fn remote_error(message: String, status: Option<u16>) -> CallError {
    CallError {
        message,
        status,
        retry_after_ms: None,
        aborted: false,
    }
}

/// One POST to the remote endpoint, with its own 180 s time-out and the caller's signal.
async fn call_remote(
    url: &str,
    headers: &[(String, String)],
    model: Option<&str>,
    request: &SummaryRequest,
    signal: &web_sys::AbortSignal,
) -> Result<String, CallError> {
    let chat = url.trim_end_matches('/').ends_with("/chat/completions");
    let body = if chat {
        json!({
            "model": model.unwrap_or_default(),
            "messages": [
                {"role": "system", "content": request.system_prompt},
                {"role": "user", "content": request.prompt},
            ],
            "stream": false,
            "max_tokens": request.max_tokens,
        })
    } else {
        json!({"systemPrompt": request.system_prompt, "prompt": request.prompt, "maxTokens": request.max_tokens})
    };
    let controller = web_sys::AbortController::new().map_err(|e| CallError::from_js(&e, signal))?;
    let inner = controller.signal();
    let c1 = controller.clone();
    let timer = set_timeout(
        &Closure::once_into_js(move || c1.abort()).unchecked_into(),
        REMOTE_TIMEOUT_MS,
    );
    let c2 = controller.clone();
    let forward = Closure::once_into_js(move || c2.abort());
    let _ = signal.add_event_listener_with_callback("abort", forward.unchecked_ref());
    if signal.aborted() {
        controller.abort();
    }
    let mut builder = gloo_net::http::Request::post(url)
        .header("content-type", "application/json")
        .abort_signal(Some(&inner));
    for (k, v) in headers {
        builder = builder.header(k, v);
    }
    let result = async {
        let req = builder
            .body(js::stringify(&body))
            .map_err(|e| remote_error(format!("Remote compaction request failed: {e}"), None))?;
        let resp = req.send().await.map_err(|e| {
            if signal.aborted() {
                CallError::aborted()
            } else if inner.aborted() {
                remote_error("Remote compaction timed out after 180 s".into(), Some(408))
            } else {
                remote_error(
                    format!("Remote compaction failed: {e} (fetch failed)"),
                    None,
                )
            }
        })?;
        if !resp.ok() {
            let mut err = remote_error(
                format!(
                    "Remote compaction failed ({} {})",
                    resp.status(),
                    resp.status_text()
                ),
                Some(resp.status()),
            );
            err.retry_after_ms = resp
                .headers()
                .get("retry-after")
                .and_then(|v| parse_retry_after(&v, js_sys::Date::now() as i64));
            return Err(err);
        }
        let v: Value = resp.json().await.map_err(|e| {
            remote_error(
                format!("Remote compaction returned invalid JSON: {e}"),
                None,
            )
        })?;
        if chat {
            let content = &v["choices"][0]["message"]["content"];
            let text = match content {
                Value::String(s) => Some(s.clone()),
                Value::Array(parts) => Some(
                    parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<String>(),
                ),
                _ => None,
            };
            text.filter(|t| !t.is_empty()).ok_or_else(|| {
                remote_error(
                    "Remote compaction response missing choices[0].message.content".into(),
                    None,
                )
            })
        } else {
            v.get("summary")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| {
                    remote_error("Remote compaction response missing summary".into(), None)
                })
        }
    }
    .await;
    clear_timeout(&timer);
    result
}

/// What became of one request after retries.
enum Outcome {
    Answer(String),
    /// The window overflowed: plan it smaller and ask again.
    Shrink,
}

/// Calls the summarizers for one request: candidates in order, retries per the policy.
async fn summarize_one(
    request: SummaryRequest,
    candidates: Rc<Vec<Summarizer>>,
    policy: RetryPolicy,
    signal: web_sys::AbortSignal,
) -> Result<Outcome, CallError> {
    let request_value = request_json(&request);
    let mut last: Option<CallError> = None;
    for (n, candidate) in candidates.iter().enumerate() {
        let more = n + 1 < candidates.len();
        let mut attempt = 0u32;
        loop {
            let result = match candidate {
                Summarizer::Callback(f) => call_callback(f, &request_value, &signal).await,
                Summarizer::Remote {
                    url,
                    headers,
                    model,
                } => call_remote(url, headers, model.as_deref(), &request, &signal).await,
            };
            let err = match result {
                Ok(text) if !text.trim().is_empty() => return Ok(Outcome::Answer(text)),
                Ok(_) => remote_error("the summarizer returned an empty summary".into(), None),
                Err(e) => e,
            };
            if err.aborted {
                return Err(err);
            }
            let kind = classify(&err.message, err.status);
            let step = policy.next(attempt, kind, err.retry_after_ms, more);
            last = Some(err);
            match step {
                RetryStep::Wait(ms) => {
                    sleep(ms, &signal).await?;
                    attempt += 1;
                }
                RetryStep::Shrink if request.window.is_some() => return Ok(Outcome::Shrink),
                RetryStep::Shrink | RetryStep::GiveUp => {
                    return Err(
                        last.unwrap_or_else(|| remote_error("the summarizer failed".into(), None))
                    )
                }
                RetryStep::NextCandidate => break,
            }
        }
    }
    Err(last.unwrap_or_else(|| {
        remote_error(
            "no summarizer: pass `summarize` or `remoteEndpoint`".into(),
            None,
        )
    }))
}

/// Hook handlers in registration order: `hooks` is one object or an array of them.
fn hook_handlers(hooks: &JsValue, name: &str) -> Vec<Function> {
    let objects: Vec<JsValue> = if js_sys::Array::is_array(hooks) {
        js_sys::Array::from(hooks).iter().collect()
    } else {
        vec![hooks.clone()]
    };
    objects
        .iter()
        .filter_map(|o| get(o, name).dyn_into::<Function>().ok())
        .collect()
}

/// Calls a hook; a handler that throws or rejects is ignored (spec: compaction §8.8).
async fn call_hook(
    f: &Function,
    payload: &JsValue,
    signal: &web_sys::AbortSignal,
) -> Result<JsValue, CallError> {
    let Ok(returned) = f.call1(&JsValue::NULL, payload) else {
        return Ok(JsValue::UNDEFINED);
    };
    let p = returned
        .dyn_into::<Promise>()
        .unwrap_or_else(|v| Promise::resolve(&v));
    match until_abort(p, signal).await {
        Ok(v) => Ok(v),
        Err(e) if e.aborted => Err(e),
        Err(_) => Ok(JsValue::UNDEFINED),
    }
}

fn emit(hooks: &JsValue, event: Value) {
    let payload = from_json_value(&event);
    for f in hook_handlers(hooks, "onEvent") {
        let _ = f.call1(&JsValue::NULL, &payload);
    }
}

/// The error prefix of a failed compaction for its reason (spec: compaction §8.3).
fn error_prefix(reason: &str) -> &'static str {
    match reason {
        "overflow" => "Context overflow recovery failed: ",
        "incomplete" => "Incomplete response recovery failed: ",
        "threshold" | "idle" => "Auto-compaction failed: ",
        _ => "Compaction failed: ",
    }
}

struct Run {
    session: Rc<RefCell<Session>>,
    options: JsValue,
    hooks: JsValue,
    signal: web_sys::AbortSignal,
    reason: String,
}

async fn run(session: Rc<RefCell<Session>>, options: JsValue) -> Result<JsValue, JsValue> {
    let signal = get(&options, "signal")
        .dyn_into::<web_sys::AbortSignal>()
        .or_else(|_| web_sys::AbortController::new().map(|c| c.signal()))?;
    let reason = get_string(&options, "reason").unwrap_or_else(|| "manual".into());
    let hooks = get(&options, "hooks");
    let r = Run {
        session,
        options,
        hooks,
        signal,
        reason,
    };
    let auto = r.reason != "manual";
    let will_retry = get(&r.options, "willRetry").as_bool().unwrap_or(false);
    if auto {
        emit(
            &r.hooks,
            json!({"type": "auto_compaction_start", "reason": r.reason, "action": "context-full"}),
        );
    }
    let result = r.compact().await;
    if auto {
        let end = match &result {
            Ok(v) => {
                json!({"type": "auto_compaction_end", "action": "context-full", "aborted": false,
                "willRetry": will_retry,
                "result": serde_json::from_str::<Value>(&to_json_text(v).unwrap_or_default()).unwrap_or(Value::Null)})
            }
            Err(e) => {
                let code = get_string(e, "code");
                json!({"type": "auto_compaction_end", "action": "context-full",
                    "aborted": matches!(code.as_deref(), Some("E_ABORTED" | "E_CANCELLED")),
                    "willRetry": false,
                    "errorMessage": get_string(e, "message")})
            }
        };
        emit(&r.hooks, end);
    }
    result
}

impl Run {
    fn fail(&self, code: ErrorCode, message: &str) -> JsValue {
        js_error(code, message)
    }

    fn aborted(&self) -> JsValue {
        self.fail(
            ErrorCode::Aborted,
            "Compaction aborted: the signal was aborted; the session is unchanged",
        )
    }

    async fn compact(&self) -> Result<JsValue, JsValue> {
        let settings = settings_from(to_json_text(&get(&self.options, "settings")))?;
        let plan_json = {
            let mut m = Map::new();
            for key in ["customInstructions", "contextWindow", "provider", "leafId"] {
                if let Some(t) = to_json_text(&get(&self.options, key)) {
                    if let Ok(v) = serde_json::from_str::<Value>(&t) {
                        m.insert(key.into(), v);
                    }
                }
            }
            m
        };
        let base = |extra: &Map<String, Value>| {
            let mut m = plan_json.clone();
            m.extend(extra.clone());
            Some(js::stringify(&Value::Object(m)))
        };
        // Prepare and plan without hook input first: the hooks see the preparation.
        let first = make_plan(
            &self.session.borrow(),
            to_json_text(&get(&self.options, "settings")),
            base(&Map::new()),
        )?;
        let preparation = js_sys::JSON::parse(&first.preparation).unwrap_or(JsValue::NULL);

        // session_before_compact: cancel, or supply the compaction.
        for f in hook_handlers(&self.hooks, "session_before_compact") {
            let payload = Object::new();
            let _ = Reflect::set(&payload, &"preparation".into(), &preparation);
            let _ = Reflect::set(
                &payload,
                &"customInstructions".into(),
                &get(&self.options, "customInstructions"),
            );
            let _ = Reflect::set(&payload, &"signal".into(), &self.signal);
            let answer = call_hook(&f, &payload, &self.signal)
                .await
                .map_err(|_| self.aborted())?;
            if get(&answer, "cancel").as_bool() == Some(true) {
                return Err(self.fail(
                    ErrorCode::Cancelled,
                    "Compaction cancelled by a session_before_compact hook",
                ));
            }
            let supplied = get(&answer, "compaction");
            if let Some(text) = to_json_text(&supplied) {
                let result = extension_result(&text)?;
                let now = now_ms(js_sys::Date::now())?;
                let committed = {
                    let mut s = self.session.borrow_mut();
                    let c =
                        commit_extension_compaction(&mut s, &first.plan.preparation, result, now)
                            .map_err(to_js)?;
                    committed_json(&s, &c, true)?
                };
                return Ok(self.finish(&committed).await);
            }
        }

        // session.compacting: extra context lines, a prompt override, preserveData.
        let mut extra = Map::new();
        let mut context_lines: Vec<Value> = Vec::new();
        for f in hook_handlers(&self.hooks, "session.compacting") {
            let payload = Object::new();
            let _ = Reflect::set(
                &payload,
                &"sessionId".into(),
                &JsValue::from_str(&self.session.borrow().header().id),
            );
            let _ = Reflect::set(&payload, &"preparation".into(), &preparation);
            let answer = call_hook(&f, &payload, &self.signal)
                .await
                .map_err(|_| self.aborted())?;
            if let Some(lines) = to_json_text(&get(&answer, "context"))
                .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
            {
                context_lines.extend(lines.into_iter().map(Value::from));
            }
            if let Some(p) = get_string(&answer, "prompt") {
                extra.insert("promptOverride".into(), p.into());
            }
            if let Some(Value::Object(pd)) = to_json_text(&get(&answer, "preserveData"))
                .and_then(|t| serde_json::from_str(&t).ok())
            {
                let merged = match extra.remove("preserveData") {
                    Some(Value::Object(mut m)) => {
                        m.extend(pd);
                        m
                    }
                    _ => pd,
                };
                extra.insert("preserveData".into(), Value::Object(merged));
            }
        }
        if !context_lines.is_empty() {
            extra.insert("extraContext".into(), Value::Array(context_lines));
        }

        // The summarizers.
        let mut candidates: Vec<Summarizer> = Vec::new();
        let endpoint =
            get_string(&self.options, "remoteEndpoint").or(settings.remote_endpoint.clone());
        if let Some(url) = endpoint.filter(|_| settings.remote_enabled) {
            let headers = to_json_text(&get(&self.options, "headers"))
                .and_then(|t| serde_json::from_str::<Map<String, Value>>(&t).ok())
                .map(|m| {
                    m.into_iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            candidates.push(Summarizer::Remote {
                url,
                headers,
                model: get_string(&self.options, "model"),
            });
            extra.insert("method".into(), "remote".into());
        }
        let summarize = get(&self.options, "summarize");
        if let Ok(f) = summarize.clone().dyn_into::<Function>() {
            candidates.push(Summarizer::Callback(f));
        } else if js_sys::Array::is_array(&summarize) {
            for f in js_sys::Array::from(&summarize).iter() {
                if let Ok(f) = f.dyn_into::<Function>() {
                    candidates.push(Summarizer::Callback(f));
                }
            }
        }
        if candidates.is_empty() {
            return Err(self.fail(
                ErrorCode::InvalidArgument,
                "compact() needs `summarize` (a function returning a Promise of the summary text) or `remoteEndpoint`",
            ));
        }
        let candidates = Rc::new(candidates);
        let retry = policy_from(&get(&self.options, "retry"));

        let mut plan = if extra.is_empty() {
            first
        } else {
            make_plan(
                &self.session.borrow(),
                to_json_text(&get(&self.options, "settings")),
                base(&extra),
            )?
        };

        // Answer the requests, round by round, in parallel within a round.
        while !plan.plan.is_complete() {
            let pending: Vec<SummaryRequest> = plan.plan.pending().into_iter().cloned().collect();
            if pending.is_empty() {
                return Err(self.fail(
                    ErrorCode::Summarizer,
                    "the plan is stuck without pending requests",
                ));
            }
            let calls = pending
                .iter()
                .cloned()
                .map(|req| summarize_one(req, Rc::clone(&candidates), retry, self.signal.clone()));
            let outcomes = futures_util::future::join_all(calls).await;
            for (req, outcome) in pending.iter().zip(outcomes) {
                match outcome {
                    Ok(Outcome::Answer(text)) => plan.plan.answer(&req.id, &text).map_err(to_js)?,
                    Ok(Outcome::Shrink) => plan.plan.retry_smaller(&req.id, None).map_err(|e| {
                        self.fail(
                            ErrorCode::Summarizer,
                            &format!("{}{e}", error_prefix(&self.reason)),
                        )
                    })?,
                    Err(e) if e.aborted => return Err(self.aborted()),
                    Err(e) => {
                        return Err(self.fail(
                            ErrorCode::Summarizer,
                            &format!("{}{}", error_prefix(&self.reason), e.message),
                        ))
                    }
                }
            }
        }
        if self.signal.aborted() {
            return Err(self.aborted());
        }
        let now = now_ms(js_sys::Date::now())?;
        let committed = {
            let mut s = self.session.borrow_mut();
            let c = commit_compaction(&mut s, &plan.plan, now).map_err(to_js)?;
            committed_json(&s, &c, false)?
        };
        Ok(self.finish(&committed).await)
    }

    /// After the commit: the `session_compact` notification, then the result.
    async fn finish(&self, committed: &str) -> JsValue {
        let result = js_sys::JSON::parse(committed).unwrap_or(JsValue::NULL);
        for f in hook_handlers(&self.hooks, "session_compact") {
            let _ = call_hook(&f, &result, &self.signal).await;
        }
        result
    }
}

fn policy_from(v: &JsValue) -> RetryPolicy {
    let d = RetryPolicy::default();
    RetryPolicy {
        enabled: get(v, "enabled").as_bool().unwrap_or(d.enabled),
        max_retries: get(v, "maxRetries")
            .as_f64()
            .map_or(d.max_retries, |n| n.max(0.0) as u32),
        base_delay_ms: get(v, "baseDelayMs")
            .as_f64()
            .map_or(d.base_delay_ms, |n| n.max(0.0) as u64),
        max_wait_ms: get(v, "maxWaitMs")
            .as_f64()
            .map_or(d.max_wait_ms, |n| n.max(0.0) as u64),
    }
}

/// The per-session "compaction running" flag.
pub(crate) type BusyFlag = Rc<Cell<bool>>;
