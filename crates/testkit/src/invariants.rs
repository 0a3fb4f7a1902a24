//! Invariants checked by the property tests (`tests/it/properties.rs`) and the fuzz targets
//! (`fuzz/`): each returns `Err(what went wrong)` instead of panicking, so proptest can shrink
//! and a fuzz target can panic with the message.

use ctxfold::compaction::commit::commit_compaction;
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::context::{build_context, BuildOptions, LeafSelector, SessionContext};
use ctxfold::pruning::{
    apply_prune, plan_superseded_tool_results, plan_tool_outputs, KeepBoundary, PruneConfig,
};
use ctxfold::render::{Frame, RenderOptions};
use ctxfold::session::{LoadOptions, SequentialIds, Session, SourceBuffer};
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::{AgentMessage, ErrorCode, Role};
use serde_json::Value;

pub type Check = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// JSON equality as JavaScript reads it: a number is its double (`8.64e15` is written, as
/// `JSON.stringify` writes it, `8640000000000000`).
pub fn same_as_js(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_as_js(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, a), (l, b))| k == l && same_as_js(a, b))
        }
        _ => a == b,
    }
}

/// Loads with deterministic ids (migrations then give the same bytes every time).
pub fn load(bytes: &[u8]) -> ctxfold::Result<Session> {
    Session::load(
        bytes.to_vec(),
        LoadOptions::with_ids(Box::new(SequentialIds::new())),
    )
}

/// Everything a loaded session says of its file, as one comparable text: the header, the
/// warnings, the entries (ids, parents, kinds, roles, lines), each entry's line number,
/// message text and recorded facts, and the bytes it saves.
pub fn load_fingerprint(s: &Session) -> String {
    let mut out = format!("{:?}\n{:?}\n{:?}\n", s.header(), s.warnings(), s.entries());
    for i in 0..s.len() {
        out.push_str(&format!(
            "{} {:?} {:?}\n",
            s.line_number(i),
            s.message_json(i),
            s.recorded_facts(i)
        ));
    }
    out.push_str(&String::from_utf8_lossy(&s.to_bytes()));
    out
}

/// A file written into a [`SourceBuffer`] in pieces of the given lengths (cycled; 0 reads
/// as 1), its complete lines read after each piece when `scan` says so, loads as the whole
/// file does: the same session, or the same error. The lines read while it arrived must
/// reach the last line break of what arrived.
pub fn load_in_pieces(file: &[u8], size: usize, pieces: &[usize], scan: bool) -> Check {
    let mut buf = SourceBuffer::with_size(size).map_err(|e| e.to_string())?;
    let mut at = 0;
    let mut k = 0;
    while at < file.len() {
        let n = pieces
            .get(k % pieces.len().max(1))
            .copied()
            .unwrap_or(7)
            .clamp(1, file.len() - at);
        k += 1;
        let window = buf.window(n).map_err(|e| e.to_string())?;
        window.copy_from_slice(&file[at..at + n]);
        buf.advance(n).map_err(|e| e.to_string())?;
        at += n;
        if scan {
            buf.read_lines();
            let last_break = file[..at].iter().rposition(|&c| c == b'\n');
            if let Some(b) = last_break {
                // Read to the last break, or not begun: no header in the lines so far.
                let read = buf.lines_read_to();
                ensure!(
                    read == b + 1 || (read == 0 && load(&file[..=b]).is_err()),
                    "after {at} bytes the lines were read to {read}, not to the last break at {b}"
                );
            }
        }
    }
    ensure!(
        buf.len() == file.len(),
        "{} bytes written of {}",
        buf.len(),
        file.len()
    );
    let pieces = buf.load(LoadOptions::with_ids(Box::new(SequentialIds::new())));
    match (load(file), pieces) {
        (Ok(a), Ok(b)) => {
            let (a, b) = (load_fingerprint(&a), load_fingerprint(&b));
            ensure!(a == b, "loaded in pieces:\n{b}\nwhole:\n{a}");
        }
        (Err(a), Err(b)) => ensure!(
            a.to_string() == b.to_string(),
            "errors differ: {b} in pieces, {a} whole"
        ),
        (a, b) => {
            return Err(format!(
                "the file loads {} whole and {} in pieces",
                if a.is_ok() { "" } else { "not" },
                if b.is_ok() { "" } else { "not" }
            ))
        }
    }
    Ok(())
}

/// A session that needs no migration is written back byte for byte; loading and saving
/// twice gives the same bytes (migrated or not).
pub fn save_roundtrip(bytes: &[u8]) -> Check {
    let Ok(s) = load(bytes) else { return Ok(()) };
    let saved = s.to_bytes();
    let migrated = s.warnings().iter().any(|w| w.code == ErrorCode::Migrated);
    if !migrated {
        ensure!(
            saved == bytes,
            "an unmigrated session was not saved byte for byte ({} → {} bytes)",
            bytes.len(),
            saved.len()
        );
    }
    let again = load(&saved).map_err(|e| format!("the saved file does not load: {e}"))?;
    ensure!(
        again.to_bytes() == saved,
        "load → save is not stable on its own output"
    );
    ensure!(again.len() == s.len(), "entry count changed over a save");
    Ok(())
}

/// In an LLM context, every tool result answers a call made earlier in the context, and every
/// tool call is answered by a result later in it.
pub fn context_pairs(s: &Session, ctx: &SessionContext) -> Check {
    let msgs: Vec<AgentMessage> = ctx.agent_messages(s).collect();
    let mut called: std::collections::HashSet<&str> = Default::default();
    for (pos, m) in msgs.iter().enumerate() {
        match m {
            AgentMessage::Assistant(a) => called.extend(a.tool_call_ids()),
            AgentMessage::ToolResult(r) => ensure!(
                called.contains(r.tool_call_id.as_str()),
                "message {pos}: a tool result for {:?} without its call before it",
                r.tool_call_id
            ),
            _ => {}
        }
    }
    let mut answered: std::collections::HashSet<&str> = Default::default();
    for (pos, m) in msgs.iter().enumerate().rev() {
        match m {
            AgentMessage::ToolResult(r) => {
                answered.insert(r.tool_call_id.as_str());
            }
            AgentMessage::Assistant(a) => {
                for id in a.tool_call_ids() {
                    ensure!(
                        answered.contains(id),
                        "message {pos}: a tool call {id:?} without a result after it"
                    );
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Builds the LLM context at the leaf, at `Null`, and at up to `leaves` entries, in both modes;
/// LLM contexts keep their tool pairs. Returns the number of contexts built.
pub fn contexts(s: &Session, leaves: usize) -> Result<usize, String> {
    let mut selectors = vec![LeafSelector::Current, LeafSelector::Null];
    let step = (s.len() / leaves.max(1)).max(1);
    for i in (0..s.len()).step_by(step).take(leaves) {
        selectors.push(LeafSelector::Id(s.entries()[i].id().to_string()));
    }
    selectors.push(LeafSelector::Id("no-such-entry".into()));
    let mut n = 0;
    for leaf in selectors {
        for transcript in [false, true] {
            let opts = BuildOptions {
                leaf: leaf.clone(),
                transcript,
                ..Default::default()
            };
            let ctx = build_context(s, &opts).map_err(|e| format!("buildContext: {e}"))?;
            if !transcript {
                context_pairs(s, &ctx).map_err(|e| format!("leaf {leaf:?}: {e}"))?;
                provider_messages(s, &ctx).map_err(|e| format!("leaf {leaf:?}: {e}"))?;
            }
            n += 1;
        }
    }
    Ok(n)
}

/// The provider messages of a context (`convertToLlm`) are objects with a role, and a
/// bashExecution run converts to its text (command, output block, exit) followed by nothing
/// but its output notice, `\n\n[…]`, and only when it has a `meta`.
fn provider_messages(s: &Session, ctx: &SessionContext) -> Result<(), String> {
    use ctxfold::context::convert::{bash_execution_text, convert_message, convert_to_llm};
    for m in &convert_to_llm(s, ctx) {
        if m.get("role").and_then(|r| r.as_str()).is_none() {
            return Err(format!("a provider message without a role: {m}"));
        }
    }
    for m in &ctx.messages {
        let AgentMessage::BashExecution(b) = m.message(s) else {
            continue;
        };
        let mut out = Vec::new();
        convert_message(&mut out, s, m, None);
        if b.exclude_from_context {
            continue;
        }
        let text = out
            .first()
            .and_then(|o| o.pointer("/content/0/text"))
            .and_then(|t| t.as_str())
            .unwrap_or("");
        let base = bash_execution_text(&b.command, &b.output, b.exit_code, b.cancelled);
        let Some(notice) = text.strip_prefix(base.as_str()) else {
            return Err(format!(
                "a bash run's text does not start with its run: {text:?}"
            ));
        };
        let fits = notice.is_empty()
            || (b.meta.is_some() && notice.starts_with("\n\n[") && notice.ends_with(']'));
        if !fits {
            return Err(format!(
                "a bash run's notice {notice:?} for meta {:?}",
                b.meta
            ));
        }
    }
    Ok(())
}

/// The result of one compaction attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Compacted {
    /// Committed: `(tokensBefore, tokensAfter)`.
    Done(u64, u64),
    /// Refused with this code (the session was left byte-identical).
    Refused(ErrorCode),
}

/// Plans a compaction, answers every request with `answer`, commits. The cut point is never a
/// tool result; a refused or failed compaction leaves the session byte-identical; a committed
/// one adds exactly one entry and its context keeps its tool pairs.
pub fn compact(
    s: &mut Session,
    strategy: Strategy,
    keep_recent_tokens: u64,
    answer: &str,
) -> Result<Compacted, String> {
    let before = s.to_bytes();
    let len = s.len();
    let settings = CompactionSettings {
        strategy,
        keep_recent_tokens,
        ..Default::default()
    };
    let mut plan = match plan_compaction(s, &settings, PlanOptions::default()) {
        Ok(p) => p,
        Err(e) => {
            ensure!(s.to_bytes() == before, "a refused plan changed the session");
            return Ok(Compacted::Refused(e.code()));
        }
    };
    let prep = &plan.preparation;
    if let Some(e) = s.entries().get(prep.first_kept) {
        ensure!(
            e.role() != Some(Role::ToolResult),
            "the cut point {} is a tool result",
            e.id()
        );
    }
    let mut rounds = 0;
    while !plan.is_complete() {
        rounds += 1;
        ensure!(rounds < 10_000, "the plan never completes");
        let ids: Vec<String> = plan.pending().iter().map(|r| r.id.clone()).collect();
        ensure!(!ids.is_empty(), "an incomplete plan with nothing pending");
        for id in ids {
            match plan.answer(s, &id, answer) {
                Ok(()) => {}
                // An answer far over the request's maxTokens is refused; nothing changes.
                Err(e) if e.code() == ErrorCode::Summarizer => {
                    ensure!(
                        plan.pending().iter().any(|r| r.id == id),
                        "a refused answer left its request answered"
                    );
                    ensure!(
                        s.to_bytes() == before,
                        "a refused answer changed the session"
                    );
                    return Ok(Compacted::Refused(e.code()));
                }
                Err(e) => return Err(format!("answer: {e}")),
            }
        }
    }
    ensure!(s.to_bytes() == before, "planning changed the session");
    match commit_compaction(s, &plan, 1_800_000_000_000) {
        Ok(c) => {
            ensure!(s.len() == len + 1, "a commit did not add exactly one entry");
            let ctx = build_context(s, &BuildOptions::default())
                .map_err(|e| format!("buildContext after commit: {e}"))?;
            context_pairs(s, &ctx).map_err(|e| format!("after commit: {e}"))?;
            Ok(Compacted::Done(
                plan.preparation.tokens_before,
                c.tokens_after,
            ))
        }
        Err(e) => {
            ensure!(
                s.to_bytes() == before,
                "a failed commit ({}) changed the session",
                e.code().as_str()
            );
            Ok(Compacted::Refused(e.code()))
        }
    }
}

/// Both pruning passes with thresholds low enough to prune: entry count and line count stay,
/// only tool-result lines change, and a second pass never picks a result already pruned.
pub fn prune(s: &mut Session, protect_tokens: u64, boundary_start: bool) -> Check {
    let len = s.len();
    let before = s.to_bytes();
    let cfg = PruneConfig {
        protect_tokens,
        minimum_savings: 0,
        supersede: true,
        cache_warm_suffix_tokens: None,
        keep_boundary: if boundary_start {
            KeepBoundary::Start
        } else {
            KeepBoundary::LatestCompaction
        },
        idle_flush_ms: 0,
        now: 1_800_000_000_000,
        ..Default::default()
    };
    let stale = plan_superseded_tool_results(s, &cfg).map_err(|e| format!("stale plan: {e}"))?;
    apply_prune(s, &stale).map_err(|e| format!("apply stale: {e}"))?;
    let threshold = plan_tool_outputs(s, &cfg).map_err(|e| format!("threshold plan: {e}"))?;
    let report = apply_prune(s, &threshold).map_err(|e| format!("apply threshold: {e}"))?;
    ensure!(s.len() == len, "pruning changed the entry count");
    let after = s.to_bytes();
    let lines = |b: &[u8]| b.split(|&c| c == b'\n').count();
    ensure!(
        lines(&after) == lines(&before),
        "pruning changed the line count"
    );
    for (a, b) in before
        .split(|&c| c == b'\n')
        .zip(after.split(|&c| c == b'\n'))
    {
        if a != b {
            let text = String::from_utf8_lossy(b);
            ensure!(
                text.contains("\"toolResult\"") && text.contains("prunedAt"),
                "pruning changed a line that is not a pruned tool result: {text:.200}"
            );
        }
    }
    let again = plan_tool_outputs(s, &cfg).map_err(|e| format!("second plan: {e}"))?;
    for c in &again.candidates {
        ensure!(
            !report.pruned.iter().any(|p| p.index == c.index),
            "entry {} pruned twice",
            c.id
        );
    }
    build_context(s, &BuildOptions::default())
        .map_err(|e| format!("buildContext after prune: {e}"))
        .and_then(|c| context_pairs(s, &c))?;
    Ok(())
}

/// Frames respect the options they were rendered with: at most `max_frames`, exactly the frame
/// width, at least the minimum height, at most the frame size tall, and a PNG that decodes
/// (checksums verified) to the reported size.
pub fn frames_within(frames: &[Frame], opts: &RenderOptions) -> Check {
    if let Some(max) = opts.max_frames {
        ensure!(
            frames.len() <= max,
            "{} frames over maxFrames {max}",
            frames.len()
        );
    }
    let size = opts.frame_size();
    for (i, f) in frames.iter().enumerate() {
        ensure!(f.width == size, "frame {i}: width {} ≠ {size}", f.width);
        ensure!(
            f.height >= opts.min_height.min(size).max(1),
            "frame {i}: height {} under minHeight {}",
            f.height,
            opts.min_height
        );
        ensure!(
            f.height <= size.max(opts.min_height),
            "frame {i}: height {} over the frame size {size}",
            f.height
        );
        let image = crate::png::decode(&f.png).map_err(|e| format!("frame {i}: {e}"))?;
        ensure!(
            (image.width, image.height) == (f.width, f.height),
            "frame {i}: decoded {}x{} ≠ {}x{}",
            image.width,
            image.height,
            f.width,
            f.height
        );
        ensure!(
            f.chars <= opts.geometry().capacity,
            "frame {i}: {} chars over the capacity {}",
            f.chars,
            opts.geometry().capacity
        );
    }
    Ok(())
}

/// The block ranges of `text` (shake's region finder): ascending, disjoint, each a run of
/// whole lines that opens with a fence marker or an opening tag and closes with one.
pub fn block_ranges(text: &str) -> Check {
    let ranges = ctxfold::shake::block_ranges(text);
    let mut last = 0;
    for r in &ranges {
        ensure!(
            r.start >= last && r.start < r.end,
            "ranges out of order: {ranges:?}"
        );
        ensure!(
            text.is_char_boundary(r.start) && text.is_char_boundary(r.end),
            "a range splits a character"
        );
        ensure!(
            r.start == 0 || text.as_bytes()[r.start - 1] == b'\n',
            "a range starts inside a line"
        );
        ensure!(
            r.end == text.len() || text.as_bytes()[r.end] == b'\n',
            "a range ends inside a line"
        );
        let block = &text[r.clone()];
        let first = block.lines().next().unwrap_or("").trim_start();
        ensure!(
            first.starts_with("```") || first.starts_with("~~~") || first.starts_with('<'),
            "a range opens with neither a fence nor a tag: {first:.80}"
        );
        last = r.end;
    }
    Ok(())
}

/// A shake of `s` with `cfg`: planning changes nothing; applying the fresh plan (with or
/// without an artifact id) rewrites exactly the lines of the entries it reports and keeps
/// every other byte; the placeholders are in those lines; the session still loads; a second
/// plan finds none of the elided tool results again; a plan made before another edit is
/// refused and changes nothing.
pub fn shake(s: &mut Session, cfg: &ctxfold::shake::ShakeConfig, artifact: Option<&str>) -> Check {
    use ctxfold::shake::{apply_shake, plan_shake, Target};
    let before = s.to_bytes();
    let plan = plan_shake(s, cfg).map_err(|e| format!("plan: {e}"))?;
    ensure!(
        s.to_bytes() == before,
        "planning a shake changed the session"
    );
    let lines_before: Vec<String> = (0..s.len()).map(|i| s.entry_json(i).into_owned()).collect();
    let report = apply_shake(s, &plan, artifact, 7).map_err(|e| format!("apply: {e}"))?;
    let mut entries: Vec<usize> = plan.regions.iter().map(|r| r.index).collect();
    entries.dedup();
    ensure!(
        report.entries.len() == entries.len(),
        "the report lists other entries"
    );
    ensure!(
        report.tool_results_dropped + report.blocks_dropped == plan.regions.len(),
        "the report counts {} regions of {}",
        report.tool_results_dropped + report.blocks_dropped,
        plan.regions.len()
    );
    for (i, old) in lines_before.iter().enumerate() {
        // By index: generated sessions repeat ids.
        let touched = plan.regions.iter().any(|r| r.index == i);
        let new = s.entry_json(i);
        if touched {
            ensure!(
                new.contains("[shaken ~"),
                "a shaken line has no placeholder"
            );
            if let Some(id) = artifact {
                ensure!(
                    new.contains(&format!("artifact://{id}")),
                    "the placeholder lacks the artifact"
                );
            }
        } else {
            ensure!(*old == new, "shake changed an untouched line: {new:.200}");
        }
    }
    let bytes = s.to_bytes();
    Session::load(bytes, LoadOptions::with_ids(Box::new(SequentialIds::new())))
        .map_err(|e| format!("the shaken session does not load: {e}"))?;
    let again = plan_shake(s, cfg).map_err(|e| format!("second plan: {e}"))?;
    for r in again
        .regions
        .iter()
        .filter(|r| r.target == Target::ToolResult)
    {
        ensure!(
            !plan
                .regions
                .iter()
                .any(|p| p.index == r.index && p.target == Target::ToolResult),
            "a shaken tool result is found again"
        );
    }
    // A stale plan: the session moved on since it was made.
    if !again.regions.is_empty() {
        let _ = apply_shake(s, &again, None, 8).map_err(|e| format!("apply again: {e}"))?;
        let bytes = s.to_bytes();
        let refused = apply_shake(s, &again, None, 9);
        ensure!(refused.is_err(), "a stale shake plan was applied");
        ensure!(s.to_bytes() == bytes, "a refused shake changed the session");
    }
    Ok(())
}

/// The dead-end rescue's image drop (spec: compaction §8.3) on the active branch of `s`:
/// the lines of the entries it reports change and no other byte does; none of them holds an
/// image block any more; the count is zero exactly when nothing changed; the session loads
/// again with as many entries; a second drop finds nothing.
pub fn drop_images(s: &mut Session) -> Check {
    use ctxfold::shake::drop_images;
    let lines_before: Vec<String> = (0..s.len()).map(|i| s.entry_json(i).into_owned()).collect();
    let before = s.to_bytes();
    let report = match drop_images(s, None) {
        Ok(r) => r,
        Err(_) => {
            ensure!(
                s.to_bytes() == before,
                "a failed image drop changed the session"
            );
            return Ok(());
        }
    };
    ensure!(
        (report.removed == 0) == report.entries.is_empty(),
        "{} images removed from {} entries",
        report.removed,
        report.entries.len()
    );
    let mut changed = 0;
    for (i, old) in lines_before.iter().enumerate() {
        let new = s.entry_json(i);
        if *old != new {
            changed += 1;
            ensure!(
                report.entries.iter().any(|id| id == s.entries()[i].id()),
                "an unreported line changed: {new:.200}"
            );
            ensure!(
                !new.contains(r#""type":"image""#),
                "a rewritten line still holds an image: {new:.200}"
            );
        }
    }
    ensure!(
        changed <= report.entries.len(),
        "more lines changed than reported"
    );
    let reloaded = Session::load(
        s.to_bytes(),
        LoadOptions::with_ids(Box::new(SequentialIds::new())),
    )
    .map_err(|e| format!("the session does not load after the image drop: {e}"))?;
    ensure!(
        reloaded.len() == s.len(),
        "the reloaded session has other entries"
    );
    let again = drop_images(s, None).map_err(|e| format!("second drop: {e}"))?;
    ensure!(
        again.removed == 0,
        "a second drop removed {} images",
        again.removed
    );
    Ok(())
}

/// Inline imaging's plan (spec: snapcompact §9.7): within the image budget, only eligible
/// candidates that save tokens, never the newest tool result, never against a warm cache's
/// form; frames a warm cache holds are kept whenever they all fit; a cold cache ignores
/// `previous`.
pub fn inline_plan(input: &ctxfold::context::inline::InlineInput) -> Check {
    use ctxfold::context::inline::{
        plan_inline, MAX_SYSTEM_PROMPT_FRAMES, MIN_TOOL_RESULT_TOKENS, SAVINGS_MARGIN,
    };
    let plan = plan_inline(input);
    let price = input.frame_tokens as f64;
    let saves = |c: &ctxfold::context::inline::Candidate| {
        c.frames >= 1 && c.printable && c.frames as f64 * price <= c.tokens as f64 * SAVINGS_MARGIN
    };
    let n = input.tool_results.len();
    ensure!(
        plan.tool_results.windows(2).all(|w| w[0] < w[1]),
        "indices not ascending: {:?}",
        plan.tool_results
    );
    let mut frames = 0u64;
    for &k in &plan.tool_results {
        ensure!(
            k + 1 < n,
            "tool result {k} of {n} chosen: the newest stays text"
        );
        let c = &input.tool_results[k];
        ensure!(
            !c.stays_text && c.tokens >= MIN_TOOL_RESULT_TOKENS && saves(c),
            "{c:?} chosen"
        );
        ensure!(
            !(input.warm && c.previous == Some(false)),
            "{c:?} rewrites a warm cache"
        );
        frames += c.frames as u64;
    }
    if plan.system_prompt {
        let s = input
            .system_prompt
            .ok_or("a system prompt chosen that was not offered")?;
        ensure!(
            input.has_user_message,
            "prompt frames without a user message"
        );
        ensure!(
            saves(&s) && s.frames <= MAX_SYSTEM_PROMPT_FRAMES,
            "{s:?} chosen"
        );
        ensure!(
            !(input.warm && s.previous == Some(false)),
            "the prompt rewrites a warm cache"
        );
        frames += s.frames as u64;
    }
    ensure!(
        frames <= input.budget as u64,
        "{frames} frames over the budget {}",
        input.budget
    );
    if input.warm {
        let held: Vec<usize> = (0..n.saturating_sub(1))
            .filter(|&k| {
                let c = &input.tool_results[k];
                c.previous == Some(true)
                    && !c.stays_text
                    && c.tokens >= MIN_TOOL_RESULT_TOKENS
                    && saves(c)
            })
            .collect();
        let sum: u64 = held
            .iter()
            .map(|&k| input.tool_results[k].frames as u64)
            .sum();
        if sum <= input.budget as u64 {
            ensure!(
                held.iter().all(|k| plan.tool_results.contains(k)),
                "held frames {held:?} fit ({sum} ≤ {}) but the plan dropped some: {:?}",
                input.budget,
                plan.tool_results
            );
        }
    } else {
        ensure!(
            plan.kept_for_cache == 0,
            "a cold cache kept {}",
            plan.kept_for_cache
        );
        let mut fresh = input.clone();
        for c in fresh
            .tool_results
            .iter_mut()
            .chain(fresh.system_prompt.iter_mut())
        {
            c.previous = None;
        }
        ensure!(plan_inline(&fresh) == plan, "a cold cache read `previous`");
    }
    Ok(())
}
