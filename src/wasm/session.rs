//! The exported session class. The public `Session` class of the package (`src/js/runner/session.ts`)
//! wraps it; this layer only converts.

use super::interop::session::{build_options, transcript_options};
use super::interop::{
    batch_to_js, chunked_text, now_ms, opt_f64, opt_str, options, parse_json, to_js,
};
use crate::context::{build_context_with, SessionContext};
use crate::error::{Error, ErrorCode};
use crate::session::{
    CompactionBody, IdSource, LoadOptions, NewSession, RandomIds, SequentialIds, Session,
    SourceBuffer,
};
use crate::support::json::js;
use crate::tokens::{ByteEstimate, EstimateOptions};
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;

/// Ids from a host callback; a callback that throws or returns a non-string falls back to
/// a random id so an append never fails for it.
struct JsIds {
    f: js_sys::Function,
    fallback: RandomIds,
}

impl IdSource for JsIds {
    fn draw(&mut self) -> String {
        match self
            .f
            .call0(&JsValue::NULL)
            .ok()
            .and_then(|v| v.as_string())
        {
            Some(s) if !s.is_empty() => s,
            _ => self.fallback.draw(),
        }
    }
}

/// Grows the heap once, up front, by about what the index of a file of this size needs.
/// Every growth of WebAssembly memory makes V8 consider a full garbage collection; letting the
/// allocator grow in small steps while a large session is indexed cost a dozen of them
/// (measured: first load of a 144 MB session in a fresh Node process).
/// Best effort: when that much memory cannot be had, nothing happens (the allocation that
/// needs it fails, with an error, later).
fn reserve_heap(bytes: usize) {
    let _ = Vec::<u8>::new().try_reserve_exact(bytes);
}

thread_local! {
    /// The session files hosts are writing (`Session.fromReader`, `Session.fromStream`), by
    /// handle: a stream is filled across awaits, so two may be in flight at once.
    static SOURCES: std::cell::RefCell<Vec<Option<SourceBuffer>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn no_source() -> JsValue {
    to_js(Error::coded(
        ErrorCode::InvalidArgument,
        "no session buffer under this handle",
    ))
}

/// Runs `f` on the buffer of `handle`.
fn with_source<T>(
    handle: u32,
    f: impl FnOnce(&mut SourceBuffer) -> Result<T, JsValue>,
) -> Result<T, JsValue> {
    SOURCES.with(|s| {
        match s
            .borrow_mut()
            .get_mut(handle as usize)
            .and_then(Option::as_mut)
        {
            Some(buffer) => f(buffer),
            None => Err(no_source()),
        }
    })
}

/// A buffer in the module's memory for the host to write a session file into: `size` bytes
/// of room when it knows the file's size (one allocation, grown in one step with the room
/// the index of such a file needs, so that the load does not grow the memory again), `0`
/// when it does not. Returns its handle, for `sourceRoom`, `sourceAdvance`, `fromSource` and
/// `sourceDrop`.
#[wasm_bindgen(js_name = sourceNew)]
pub fn source_new(size: usize) -> Result<u32, JsValue> {
    reserve_heap(size.saturating_add(size / 8));
    let buffer = SourceBuffer::with_size(size).map_err(to_js)?;
    Ok(SOURCES.with(|s| {
        let mut s = s.borrow_mut();
        let free = s.iter().position(Option::is_none);
        match free {
            Some(i) => {
                s[i] = Some(buffer);
                i as u32
            }
            None => {
                s.push(Some(buffer));
                s.len() as u32 - 1
            }
        }
    }))
}

/// The address in `sourceMemory().buffer` where the next `n` bytes of the file go (the
/// buffer grows, geometrically, when it has less room). A view there stays valid until the
/// module is called again: the host writes the bytes, then calls `sourceAdvance`.
#[wasm_bindgen(js_name = sourceRoom)]
pub fn source_room(handle: u32, n: usize) -> Result<usize, JsValue> {
    with_source(handle, |b| {
        if let Some(capacity) = b.grown_capacity(n) {
            // The growth as free memory at the top of the heap, which the buffer (the last
            // allocation while a host fills it) then extends into in place: no copy, and the
            // old buffer and the new one are never both touched (the peak memory of a stream
            // of unknown length stays about its size).
            reserve_heap(capacity - b.capacity());
        }
        let at = b.room(n).map_err(to_js)?;
        Ok(b.address() + at)
    })
}

/// Records that the host wrote `n` bytes at the address `sourceRoom` gave.
#[wasm_bindgen(js_name = sourceAdvance)]
pub fn source_advance(handle: u32, n: usize) -> Result<(), JsValue> {
    // SAFETY: the glue calls this after writing the `n` bytes at the address `sourceRoom`
    // gave (the contract above); linear memory holds a value in every byte.
    #[allow(unsafe_code)]
    with_source(handle, |b| unsafe { b.advance_written(n) }.map_err(to_js))
}

/// Reads the lines of the file written so far that are complete (the load's scan, done while
/// the host waits for more of the file); `fromSource` does not read them again.
#[wasm_bindgen(js_name = sourceScan)]
pub fn source_scan(handle: u32) -> Result<(), JsValue> {
    with_source(handle, |b| {
        b.read_lines();
        Ok(())
    })
}

/// Frees a buffer the host will not load (a read that failed, a stream that errored).
#[wasm_bindgen(js_name = sourceDrop)]
pub fn source_drop(handle: u32) {
    SOURCES.with(|s| {
        if let Some(slot) = s.borrow_mut().get_mut(handle as usize) {
            *slot = None;
        }
    });
}

/// The module's memory (a `WebAssembly.Memory`), whose `buffer` holds the source buffers.
#[wasm_bindgen(js_name = sourceMemory)]
pub fn source_memory() -> JsValue {
    wasm_bindgen::memory()
}

fn random_seed() -> u64 {
    let hi = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    let lo = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    (hi << 32) | lo
}

/// The id generator of the options: `{ids: "random" (default) | "deterministic", seed, start}`,
/// or a host callback.
fn id_source(o: &Value, callback: Option<js_sys::Function>) -> Result<Box<dyn IdSource>, JsValue> {
    if let Some(f) = callback {
        return Ok(Box::new(JsIds {
            f,
            fallback: RandomIds::new(random_seed()),
        }));
    }
    match opt_str(o, "ids")?.as_deref() {
        None | Some("random") => Ok(Box::new(RandomIds::new(
            opt_f64(o, "seed")?.map_or_else(random_seed, |s| s as u64),
        ))),
        Some("deterministic") => Ok(Box::new(SequentialIds::starting_at(
            opt_f64(o, "start")?.map_or(1, |s| s.max(1.0) as u64),
        ))),
        Some(other) => Err(to_js(Error::coded(
            ErrorCode::InvalidArgument,
            format!(
                "unknown id generator \"{other}\": use \"random\", \"deterministic\" or a function"
            ),
        ))),
    }
}

/// The header fields of a new session from `create`'s options (`now` defaults to the clock).
fn new_session(o: &Value) -> Result<NewSession, JsValue> {
    let now = now_ms(opt_f64(o, "now")?.unwrap_or_else(js_sys::Date::now))?;
    let id = opt_str(o, "id")?.unwrap_or_else(|| {
        let mut r = RandomIds::new(random_seed());
        format!(
            "{}-{}-{}-{}",
            r.draw(),
            &r.draw()[..4],
            &r.draw()[..4],
            r.draw()
        )
    });
    Ok(NewSession {
        id,
        cwd: opt_str(o, "cwd")?.unwrap_or_default(),
        now,
        parent_session: opt_str(o, "parentSession")?,
    })
}

/// The fields of a batch's system prompt entry (a JSON object), if any.
fn system_fields(json: Option<String>) -> Result<Option<Map<String, Value>>, JsValue> {
    match json.as_deref() {
        None | Some("") | Some("null") => Ok(None),
        Some(t) => match parse_json(t, "system entry")? {
            Value::Object(m) => Ok(Some(m)),
            _ => Err(to_js(Error::coded(
                ErrorCode::InvalidArgument,
                "the system entry must be an object",
            ))),
        },
    }
}

fn ids_json(session: &Session, indices: impl IntoIterator<Item = usize>) -> String {
    let mut out = String::from("[");
    for (n, i) in indices.into_iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        js::write_string(&mut out, session.entries()[i].id());
    }
    out.push(']');
    out
}

/// What `llmMessageParts` converted last, by the entry each message came from: a host asks
/// for the provider messages every turn, and between two turns only the new messages differ
/// (a prune rewrites a few lines, a compaction builds a new summary message).
#[derive(Default)]
struct LlmCache {
    /// The number of that call (0: none yet).
    serial: u32,
    /// (entry, whether the next message marks an interrupted turn, whether it is a pi-family
    /// projection's) → the message as it was converted and the position of its part in that
    /// call. The conversion reads nothing but those, so it holds while the message is the same.
    converted: rustc_hash::FxHashMap<(usize, bool, bool), (Converted, u32)>,
    /// The compaction that call's context started from and its frame budgets, for
    /// `lastFramesLeftOut`.
    frames: Option<(usize, crate::archive::blocks::HistoryOptions)>,
}

/// Which message was converted: one taken from its entry's line as it is (named by the line's
/// stamp, `Session::line_stamp`) or one built for the context (its JSON, copied only when it
/// changed).
enum Converted {
    Line(u64),
    Json(String),
}

impl Converted {
    fn of(m: &crate::context::ContextMessage, s: &Session) -> Converted {
        if m.is_entry_json() {
            Converted::Line(s.line_stamp(m.entry))
        } else {
            Converted::Json(m.json(s).into_owned())
        }
    }

    /// `m` is the message this was made of.
    fn is(&self, m: &crate::context::ContextMessage, s: &Session) -> bool {
        match self {
            Converted::Line(stamp) => m.is_entry_json() && *stamp == s.line_stamp(m.entry),
            Converted::Json(json) => !m.is_entry_json() && *json == *m.json(s),
        }
    }
}

/// A session loaded into WebAssembly memory.
#[wasm_bindgen]
pub struct WasmSession {
    inner: Session,
    llm: std::cell::RefCell<LlmCache>,
}

impl WasmSession {
    pub(crate) fn wrap(mut session: Session) -> WasmSession {
        session.set_journal_nonce(random_seed());
        WasmSession {
            inner: session,
            llm: Default::default(),
        }
    }

    pub(crate) fn s(&self) -> &Session {
        &self.inner
    }

    pub(crate) fn s_mut(&mut self) -> &mut Session {
        &mut self.inner
    }

    /// The session of a load, with the warnings of the frame references it holds added.
    fn loaded(load: crate::error::Result<Session>) -> Result<WasmSession, JsValue> {
        let mut session = load.map_err(to_js)?;
        // Frame references the file does not resolve (archive::stored).
        let unresolved = crate::archive::stored::check(&session);
        session.add_warnings(unresolved);
        Ok(WasmSession::wrap(session))
    }
}

#[wasm_bindgen]
impl WasmSession {
    /// Loads a session file from its bytes (taken over without a second copy).
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        bytes: Vec<u8>,
        options_json: Option<String>,
        id_callback: Option<js_sys::Function>,
    ) -> Result<WasmSession, JsValue> {
        let o = options(options_json, "load options")?;
        let ids = id_source(&o, id_callback)?;
        reserve_heap(bytes.len() / 8);
        Self::loaded(Session::load(bytes, LoadOptions::with_ids(ids)))
    }

    /// Loads the session file a host wrote into the buffer `handle` (`sourceNew`), which the
    /// session takes over: the file's bytes reach the module's memory once, with no copy of
    /// them in JavaScript (`Session.fromReader`, `Session.fromStream`). The handle is spent
    /// whatever the outcome. `E_INVALID_ARGUMENT` for a handle that holds no buffer.
    #[wasm_bindgen(js_name = fromSource)]
    pub fn from_source(
        handle: u32,
        options_json: Option<String>,
        id_callback: Option<js_sys::Function>,
    ) -> Result<WasmSession, JsValue> {
        let buffer = SOURCES
            .with(|s| {
                s.borrow_mut()
                    .get_mut(handle as usize)
                    .and_then(Option::take)
            })
            .ok_or_else(no_source)?;
        let o = options(options_json, "load options")?;
        let ids = id_source(&o, id_callback)?;
        // The index's room (a buffer of a known size had it reserved with it).
        reserve_heap(buffer.len() / 8);
        Self::loaded(buffer.load(LoadOptions::with_ids(ids)))
    }

    /// A new empty session.
    pub fn create(
        options_json: Option<String>,
        id_callback: Option<js_sys::Function>,
    ) -> Result<WasmSession, JsValue> {
        let o = options(options_json, "create options")?;
        let ids = id_source(&o, id_callback)?;
        Ok(WasmSession::wrap(Session::create(new_session(&o)?, ids)))
    }

    /// `createBranchedSession(leafId)`: a new session holding the path from the root to
    /// `leaf_id`, its labels written again at the end (`Session::branched`). Options as
    /// `create`'s (`id`, `now`, `parentSession`, `ids`); the cwd is the source's. Throws
    /// `E_UNKNOWN_ENTRY`. The source is unchanged.
    #[wasm_bindgen(js_name = createBranched)]
    pub fn create_branched(
        &self,
        leaf_id: &str,
        options_json: Option<String>,
        id_callback: Option<js_sys::Function>,
    ) -> Result<WasmSession, JsValue> {
        let s = self.s();
        let leaf = s.require(leaf_id).map_err(to_js)?;
        let o = options(options_json, "branch options")?;
        let mut ids = id_source(&o, id_callback)?;
        let header = new_session(&o)?;
        let branched = s
            .branched(
                leaf,
                &crate::session::BranchedOptions {
                    id: header.id,
                    timestamp: crate::support::time::format_iso(header.now),
                    parent_session: header.parent_session,
                },
                ids.as_mut(),
            )
            .map_err(to_js)?;
        Ok(WasmSession::wrap(branched))
    }

    /// A new session holding a batch of messages (`messages`: JSON lines, one message each,
    /// as UTF-8), after a `custom` entry of `system_json`'s fields when given: what `create`
    /// and an append per entry make, with the same ids. A refused message throws
    /// `E_INVALID_MESSAGE` with its `index` and `field`.
    #[wasm_bindgen(js_name = fromMessages)]
    pub fn from_messages(
        messages: &[u8],
        options_json: Option<String>,
        id_callback: Option<js_sys::Function>,
        system_json: Option<String>,
    ) -> Result<WasmSession, JsValue> {
        let o = options(options_json, "create options")?;
        let init = new_session(&o)?;
        let now = init.now;
        let ids = id_source(&o, id_callback)?;
        reserve_heap(messages.len() / 8);
        Session::from_messages(init, ids, system_fields(system_json)?, messages, now)
            .map(WasmSession::wrap)
            .map_err(batch_to_js)
    }

    /// The file as bytes, copied straight from the session's memory into a JavaScript array
    /// (no second copy of the file in wasm memory: a 200 MB session would need 200 MB more).
    /// Small segments are gathered first, so a session with many rewritten lines does not
    /// cost a JavaScript call per line.
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> js_sys::Uint8Array {
        const GATHER: usize = 64 * 1024;
        let s = self.s();
        let out = js_sys::Uint8Array::new_with_length(s.byte_len() as u32);
        let mut at = 0u32;
        let mut put = |bytes: &[u8]| {
            let end = at + bytes.len() as u32;
            out.subarray(at, end).copy_from(bytes);
            at = end;
        };
        let mut gathered: Vec<u8> = Vec::with_capacity(GATHER);
        s.write_segments(|seg| {
            if gathered.len() + seg.len() > GATHER && !gathered.is_empty() {
                put(&gathered);
                gathered.clear();
            }
            if seg.len() >= GATHER {
                put(seg);
            } else {
                gathered.extend_from_slice(seg);
            }
        });
        put(&gathered);
        out
    }

    /// What changed in the file since `since` (`Session::changes`, spec: compaction §1):
    /// `[since | undefined, mark, reset, lineCount, rewritten line indices, texts]`, the texts
    /// being the rewritten lines' then the appended ones.
    pub fn changes(&self, since: Option<String>) -> js_sys::Array {
        let c = self.s().changes(since.as_deref());
        let indices: Vec<u32> = c.rewritten.iter().map(|(i, _)| *i).collect();
        let texts = js_sys::Array::new();
        for text in c.rewritten.iter().map(|(_, t)| t).chain(&c.appended) {
            texts.push(&JsValue::from_str(text));
        }
        let out = js_sys::Array::new();
        out.push(
            &c.since
                .map_or(JsValue::UNDEFINED, |m| JsValue::from_str(&m)),
        );
        out.push(&JsValue::from_str(&c.mark));
        out.push(&JsValue::from_bool(c.reset));
        out.push(&JsValue::from(c.line_count));
        out.push(&js_sys::Uint32Array::from(indices.as_slice()));
        out.push(&texts);
        out
    }

    /// The mark of the bytes this session was loaded from (`Session::load_mark`).
    #[wasm_bindgen(js_name = loadMark)]
    pub fn load_mark(&self) -> Option<String> {
        self.s().load_mark()
    }

    /// Load warnings as JSON: `[{code, line, message}]`.
    #[wasm_bindgen(js_name = warningsJson)]
    pub fn warnings_json(&self) -> String {
        let list: Vec<Value> = self
            .s()
            .warnings()
            .iter()
            .map(|w| {
                crate::support::json::object(vec![
                    ("code", w.code.as_str().into()),
                    ("line", w.line.into()),
                    ("message", w.message.as_str().into()),
                ])
            })
            .collect();
        js::stringify(&Value::Array(list))
    }

    /// The header line.
    #[wasm_bindgen(js_name = headerJson)]
    pub fn header_json(&self) -> String {
        self.s().header_json().into_owned()
    }

    /// Format version after loading, and the one found on disk.
    #[wasm_bindgen(js_name = versionInfo)]
    pub fn version_info(&self) -> Vec<f64> {
        let s = self.s();
        let h = s.header();
        vec![h.version as f64, h.version_on_disk as f64]
    }

    /// Number of entries.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> usize {
        self.s().len()
    }

    /// Id of the leaf entry (undefined without a leaf).
    #[wasm_bindgen(getter, js_name = leafId)]
    pub fn leaf_id(&self) -> Option<String> {
        self.s().leaf_id().map(str::to_string)
    }

    /// The entry's JSON line (undefined for an unknown id).
    #[wasm_bindgen(js_name = entryJson)]
    pub fn entry_json(&self, id: &str) -> Option<String> {
        self.s()
            .index_of(id)
            .map(|i| self.s().entry_json(i).into_owned())
    }

    /// The entries from the root to `id` (the leaf when undefined) as one JSON array of their
    /// lines: the branch a compaction or navigation works on (`branchEntries` of the
    /// `session_before_compact` event). Throws `E_UNKNOWN_ENTRY` for an unknown id.
    #[wasm_bindgen(js_name = branchJson)]
    pub fn branch_json(&self, id: Option<String>) -> Result<String, JsValue> {
        let s = self.s();
        let leaf = match id {
            Some(id) => Some(s.require(&id).map_err(to_js)?),
            None => s.leaf(),
        };
        let mut out = String::from("[");
        for (n, i) in leaf
            .map(|l| s.path_to(l))
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            if n > 0 {
                out.push(',');
            }
            out.push_str(&s.entry_json(i));
        }
        out.push(']');
        Ok(out)
    }

    /// All entries as one JSON array of their lines.
    #[wasm_bindgen(js_name = entriesJson)]
    pub fn entries_json(&self) -> String {
        let mut out = String::from("[");
        for i in 0..self.s().len() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&self.s().entry_json(i));
        }
        out.push(']');
        out
    }

    /// The tree index as JSON: `[{id, parentId, type, role?, label?, line}]` in file order —
    /// what a tree view needs, without entry bodies. `label` is the entry's current label
    /// (the newest `label` entry targeting it; a cleared label shows none).
    #[wasm_bindgen(js_name = indexJson)]
    pub fn index_json(&self) -> String {
        let s = &self.s();
        let labels = s.labels();
        let mut out = String::with_capacity(s.len() * 80 + 2);
        out.push('[');
        for (i, e) in s.entries().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"id\":");
            js::write_string(&mut out, e.id());
            out.push_str(",\"parentId\":");
            match s.parent_of(i) {
                Some(p) => js::write_string(&mut out, s.entries()[p].id()),
                None => out.push_str("null"),
            }
            out.push_str(",\"type\":");
            let ty = match e.kind().type_name() {
                Some(t) => std::borrow::Cow::Borrowed(t),
                None => std::borrow::Cow::Owned(
                    crate::support::json::parse(&s.entry_json(i))
                        .ok()
                        .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_string))
                        .unwrap_or_default(),
                ),
            };
            js::write_string(&mut out, &ty);
            if let Some(role) = e.role() {
                out.push_str(",\"role\":");
                match role.as_str() {
                    Some(r) => js::write_string(&mut out, r),
                    None => out.push_str("null"),
                }
            }
            if let Some(label) = labels.get(e.id()).and_then(Value::as_str) {
                out.push_str(",\"label\":");
                js::write_string(&mut out, label);
            }
            out.push_str(",\"line\":");
            out.push_str(&s.line_number(i).to_string());
            out.push('}');
        }
        out.push(']');
        out
    }

    /// Ids from the root to `id`, as JSON.
    #[wasm_bindgen(js_name = pathTo)]
    pub fn path_to(&self, id: &str) -> Result<String, JsValue> {
        let i = self.s().require(id).map_err(to_js)?;
        Ok(ids_json(self.s(), self.s().path_to(i)))
    }

    /// Ids of the children of `id` (the roots for `undefined`), as JSON.
    pub fn children(&self, id: Option<String>) -> Result<String, JsValue> {
        let parent = match id {
            Some(id) => Some(self.s().require(&id).map_err(to_js)?),
            None => None,
        };
        Ok(ids_json(self.s(), self.s().children(parent)))
    }

    /// Moves the leaf to `id`.
    pub fn branch(&mut self, id: &str) -> Result<(), JsValue> {
        self.s_mut().branch(id).map_err(to_js)
    }

    /// Clears the leaf.
    #[wasm_bindgen(js_name = resetLeaf)]
    pub fn reset_leaf(&mut self) {
        self.s_mut().reset_leaf();
    }

    fn context(&self, options_json: Option<String>) -> Result<SessionContext, JsValue> {
        let (o, history) = build_options(options_json)?;
        build_context_with(self.s(), &o, &history).map_err(to_js)
    }

    /// The built context as JSON (see `SessionContext::to_json`), in pieces to `join('')`.
    #[wasm_bindgen(js_name = buildContextJson)]
    pub fn build_context_json(
        &self,
        options_json: Option<String>,
    ) -> Result<js_sys::Array, JsValue> {
        let ctx = self.context(options_json)?;
        Ok(chunked_text(|f| ctx.write_json(self.s(), f)))
    }

    /// A page of the display transcript as JSON (see `TranscriptPage::write_json`), in pieces
    /// to `join('')`.
    #[wasm_bindgen(js_name = transcriptJson)]
    pub fn transcript_json(&self, options_json: Option<String>) -> Result<js_sys::Array, JsValue> {
        let (o, from, count) = transcript_options(options_json)?;
        let page = crate::context::transcript_page(self.s(), &o, from, count).map_err(to_js)?;
        Ok(chunked_text(|f| page.write_json(self.s(), f)))
    }

    /// The provider messages of the built context, one part per context message: the JSON of
    /// what it converts to (0–2 provider messages, comma-joined; empty for none), or, where
    /// the message converts as it did in the call whose parts the caller holds (`held`, the
    /// number that call ended with), the position of its part there. The last element is this
    /// call's number. JS joins the parts into one array (`toLlmMessages`): between two turns
    /// only the new messages cross.
    #[wasm_bindgen(js_name = llmMessageParts)]
    pub fn llm_message_parts(
        &self,
        options_json: Option<String>,
        held: u32,
    ) -> Result<js_sys::Array, JsValue> {
        let (o, history) = build_options(options_json)?;
        let ctx = build_context_with(self.s(), &o, &history).map_err(to_js)?;
        let s = self.s();
        let mut cache = self.llm.borrow_mut();
        cache.frames = ctx.compaction.map(|c| (c, history));
        let reuse = held != 0 && held == cache.serial;
        let serial = cache.serial.wrapping_add(1).max(1);
        let mut kept = rustc_hash::FxHashMap::default();
        let out = js_sys::Array::new();
        for (pos, m) in ctx.messages.iter().enumerate() {
            let next = ctx.messages.get(pos + 1);
            // A message of a pi-family projection converts differently from the same entry's
            // message in an oh-my-pi context: the key tells them apart.
            let key = (
                m.entry,
                next.is_some_and(crate::context::ContextMessage::is_interrupt_marker),
                m.is_pi(),
            );
            let source = match cache.converted.remove(&key) {
                Some((was, at)) if reuse && was.is(m, s) => {
                    out.push(&JsValue::from(at));
                    was
                }
                _ => {
                    let mut text = String::new();
                    crate::context::convert::write_message_json(&mut text, s, m, next);
                    out.push(&JsValue::from_str(&text));
                    Converted::of(m, s)
                }
            };
            kept.insert(key, (source, pos as u32));
        }
        out.push(&JsValue::from(serial));
        cache.converted = kept;
        cache.serial = serial;
        Ok(out)
    }

    /// Takes the messages of the entries from `first` on as converted in a call whose parts
    /// the caller holds: JS wrote those lines from message objects it keeps
    /// (`Session.fromMessages`), so the next `llmMessageParts` names such a message by
    /// position rather than sending its JSON back. `offered[k]` is non-zero where JS holds
    /// entry `first + k` as an object equal to its line's message. Returns this "call"'s
    /// number, then a code per offered entry: 0 not taken (its part must be empty), 1 the
    /// message as it is, 2 and 3 with `attribution` set to `user` or `agent`
    /// (`convert::adopted_form`); JS holds position `k` as that message.
    #[wasm_bindgen(js_name = adoptLlmParts)]
    pub fn adopt_llm_parts(&self, first: u32, offered: &[u8]) -> Vec<u32> {
        let s = self.s();
        let mut cache = self.llm.borrow_mut();
        let serial = cache.serial.wrapping_add(1).max(1);
        let mut kept = rustc_hash::FxHashMap::default();
        let mut out = vec![serial];
        for (k, &o) in offered.iter().enumerate() {
            let entry = first as usize + k;
            let form = if o != 0 {
                crate::context::convert::adopted_form(s, entry)
            } else {
                0
            };
            out.push(form);
            if form != 0 {
                let source = Converted::Line(s.line_stamp(entry));
                kept.insert((entry, false, false), (source, k as u32));
            }
        }
        cache.converted = kept;
        cache.serial = serial;
        out
    }

    /// The context the token figures count, frames at their flat rate: without a reading
    /// `model` in the options, a native compaction's replay as its provider reads it.
    fn counted_context(
        &self,
        options_json: Option<String>,
    ) -> Result<crate::context::SessionContext, JsValue> {
        let named = super::interop::session::names_reader(options_json.as_deref())?;
        let (o, mut history) = build_options(options_json)?;
        history.data = crate::archive::blocks::FrameData::Omitted;
        let ctx = if named {
            build_context_with(self.s(), &o, &history)
        } else {
            crate::context::build_counted_context(self.s(), &o, &history)
        };
        ctx.map_err(to_js)
    }

    /// Token figures of the built context as JSON: `{tokens, usageTokens, trailingTokens,
    /// estimatedTokens, lastUsageEntryId, usageIsCurrent, tokensBefore, messages}` (spec:
    /// compaction §3.2, §3.5, §8.2).
    #[wasm_bindgen(js_name = contextTokensJson)]
    pub fn context_tokens_json(&self, options_json: Option<String>) -> Result<String, JsValue> {
        // The estimate charges a frame a flat rate: the archive's payload is not copied.
        let ctx = self.counted_context(options_json)?;
        let est = ctx.estimate_context_tokens(self.s(), &ByteEstimate);
        let estimated = ctx.estimated_tokens(self.s());
        let usage_entry = est.last_usage_index.map(|i| ctx.messages[i].entry);
        let last = usage_entry
            .map(|e| Value::from(self.s().entries()[e].id()))
            .unwrap_or(Value::Null);
        // spec: compaction §8.2 step 9 (a reply before the latest compaction measured the
        // history it replaced).
        let current = usage_entry
            .is_some_and(|e| crate::tokens::usage_is_current(&ctx.path, ctx.compaction, e));
        Ok(js::stringify(&crate::support::json::object(vec![
            ("tokens", est.tokens.into()),
            ("usageTokens", est.usage_tokens.into()),
            ("trailingTokens", est.trailing_tokens.into()),
            ("estimatedTokens", estimated.into()),
            ("lastUsageEntryId", last),
            ("usageIsCurrent", current.into()),
            ("tokensBefore", self.s().tokens_before(&ctx.path).into()),
            ("messages", ctx.messages.len().into()),
        ])))
    }

    /// Tokens per kind of message and images of the built context (the maintenance reports).
    #[wasm_bindgen(js_name = contextStatsJson)]
    pub fn context_stats_json(&self, options_json: Option<String>) -> Result<String, JsValue> {
        let ctx = self.counted_context(options_json)?;
        let s = crate::context::context_stats(self.s(), &ctx);
        Ok(js::stringify(&crate::support::json::object(vec![
            ("tokens", s.tokens.into()),
            ("images", s.images.into()),
            (
                "byKind",
                crate::support::json::object(vec![
                    ("summary", s.summary.into()),
                    ("user", s.user.into()),
                    ("assistant", s.assistant.into()),
                    ("toolResult", s.tool_result.into()),
                    ("other", s.other.into()),
                ]),
            ),
        ])))
    }

    /// The `frames` array of the snapcompact archive of entry `id` (its
    /// `preserveData.snapcompact.frames`) as the JSON text of its line, `[]` for an entry
    /// without one, undefined for an unknown id: what the frame references of
    /// `llmMessageParts` with `frameRefs` (`\0<id>:<frame>:<length>`) name, and what
    /// `archiveFrames` lists.
    #[wasm_bindgen(js_name = archiveFramesJson)]
    pub fn archive_frames_json(&self, id: &str) -> Option<String> {
        let s = self.s();
        // Frames stored by reference come with their `data` (archive::stored).
        Some(crate::archive::stored::frames_json(s, s.index_of(id)?))
    }

    /// Estimated tokens of the message an entry carries.
    #[wasm_bindgen(js_name = entryTokens)]
    pub fn entry_tokens(
        &self,
        id: &str,
        exclude_encrypted_reasoning: bool,
    ) -> Result<f64, JsValue> {
        let i = self.s().require(id).map_err(to_js)?;
        Ok(self.s().entry_tokens(
            i,
            EstimateOptions {
                exclude_encrypted_reasoning,
            },
        ) as f64)
    }

    /// Appends an entry of any type; `fields_json` is an object of its fields (JSON as UTF-8).
    pub fn append(
        &mut self,
        entry_type: &str,
        fields_json: &[u8],
        now: f64,
    ) -> Result<String, JsValue> {
        let fields_json = std::str::from_utf8(fields_json).map_err(|_| {
            to_js(Error::coded(
                ErrorCode::InvalidArgument,
                "entry fields are not UTF-8",
            ))
        })?;
        let parsed = parse_json(fields_json, "entry fields").map_err(|e| {
            if entry_type != "message" {
                return e;
            }
            // A message the parser refuses (nesting too deep) is a malformed message.
            let reason = js_sys::Reflect::get(&e, &JsValue::from_str("message"))
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_default();
            to_js(Error::InvalidMessage {
                field: String::new(),
                reason,
            })
        })?;
        let fields = match parsed {
            Value::Object(m) => m,
            _ => {
                return Err(to_js(Error::coded(
                    ErrorCode::InvalidArgument,
                    "entry fields must be an object",
                )))
            }
        };
        self.s_mut()
            .append(entry_type, fields, now_ms(now)?)
            .map_err(to_js)
    }

    /// Appends a batch of messages (JSON lines, one message each) after the leaf, after a
    /// `custom` entry of `system_json`'s fields when given; returns the new ids as a JSON
    /// array. All or nothing: a refused message (`E_INVALID_MESSAGE` with its `index`) leaves
    /// the session as it was.
    #[wasm_bindgen(js_name = appendMessages)]
    pub fn append_messages(
        &mut self,
        messages: &[u8],
        system_json: Option<String>,
        now: f64,
    ) -> Result<String, JsValue> {
        let system = system_fields(system_json)?;
        let ids = self
            .s_mut()
            .append_messages(system, messages, now_ms(now)?)
            .map_err(batch_to_js)?;
        Ok(js::stringify(&Value::from(ids)))
    }

    /// Appends a compaction entry (body as JSON: summary, firstKeptEntryId, tokensBefore, …).
    #[wasm_bindgen(js_name = appendCompaction)]
    pub fn append_compaction(&mut self, body_json: &str, now: f64) -> Result<String, JsValue> {
        let body = crate::support::json::view::Obj::parse(body_json.as_bytes())
            .map_err(|e| e.reason.to_string())
            .and_then(|o| <CompactionBody as crate::session::Body>::read(&o))
            .map_err(|e| {
                to_js(Error::coded(
                    ErrorCode::InvalidArgument,
                    format!("invalid compaction: {e}"),
                ))
            })?;
        self.s_mut()
            .append_compaction(&body, now_ms(now)?)
            .map_err(to_js)
    }

    /// Moves the leaf to `from` (the root for `undefined`) and appends a branch summary there.
    #[wasm_bindgen(js_name = branchWithSummary)]
    pub fn branch_with_summary(
        &mut self,
        from: Option<String>,
        summary: &str,
        details_json: Option<String>,
        from_extension: bool,
        now: f64,
    ) -> Result<String, JsValue> {
        let details = match details_json.as_deref() {
            None | Some("") | Some("null") | Some("undefined") => None,
            Some(t) => Some(parse_json(t, "details")?),
        };
        self.s_mut()
            .branch_with_summary(
                from.as_deref(),
                summary,
                details,
                from_extension,
                now_ms(now)?,
            )
            .map_err(to_js)
    }

    /// Appends a label for `target` (undefined or empty clears it).
    #[wasm_bindgen(js_name = appendLabel)]
    pub fn append_label(
        &mut self,
        target: &str,
        label: Option<String>,
        now: f64,
    ) -> Result<String, JsValue> {
        self.s_mut()
            .append_label(target, label.as_deref(), now_ms(now)?)
            .map_err(to_js)
    }

    /// Whether a turn is under way at the leaf (a tool result, or tool calls, last).
    #[wasm_bindgen(js_name = turnUnderWay)]
    pub fn turn_under_way(&self) -> bool {
        self.s().turn_under_way()
    }

    /// Whether the leaf's path holds conversation (`Session::path_holds_conversation`).
    #[wasm_bindgen(js_name = holdsConversation)]
    pub fn holds_conversation(&self) -> bool {
        self.s().path_holds_conversation()
    }

    /// Resolved labels as a JSON object `{id: label}`.
    #[wasm_bindgen(js_name = labelsJson)]
    pub fn labels_json(&self) -> String {
        js::stringify(&Value::Object(self.s().labels()))
    }
}

#[wasm_bindgen]
impl WasmSession {
    /// The number of snapcompact frames the last `llmMessageParts` call (`toLlmMessages`) left
    /// out of its compaction summary for its budgets (`maxFrameDataBytes`, `maxImages`;
    /// spec: snapcompact §9.6): the count the summary's omission notice states, as data. 0
    /// before any call, without an archive, or when every frame fit.
    #[wasm_bindgen(js_name = lastFramesLeftOut)]
    pub fn last_frames_left_out(&self) -> u32 {
        let Some((index, history)) = self.llm.borrow().frames else {
            return 0;
        };
        crate::archive::frames_left_out_at(self.s(), index, &history) as u32
    }

    /// Whether the last `llmMessageParts` call's context started from a compaction: its first
    /// message is the summary, whose images are the archive's frames (the Maintainer's image
    /// estimate, `WasmCalibration.requestImages`).
    #[wasm_bindgen(js_name = lastViewCompacted)]
    pub fn last_view_compacted(&self) -> bool {
        self.llm.borrow().frames.is_some()
    }
}
