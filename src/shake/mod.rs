//! Shake (spec: compaction §13 "Shake", §8.3 method order): an LLM-free reducer that replaces
//! heavy content of the sent history, in place, by short placeholders saying how many tokens
//! went and where to recover them. Whole tool-result texts and large fenced / top-level XML
//! blocks of user, developer, assistant and custom messages are elided; images and other
//! non-text tool-result content stay, tool calls are never touched, and a region never spans a
//! message. With `thinking` set (`shake thinking`) the regions are the reasoning blocks of old
//! assistant messages instead, removed without a placeholder.
//!
//! Sans-IO like the rest of the core: [`plan_shake`] only reads the session and returns the
//! regions with the text of the recovery artifact; the host stores that artifact (or not) and
//! [`apply_shake`] writes the placeholders, with the artifact's id when there is one. Every
//! touched line is spliced at its `content` (and, for a tool result, `prunedAt`) member; every
//! other line stays byte-identical. A plan is bound to what the session looked like: applying
//! it to a session that changed meanwhile is `E_STALE_PLAN` and changes nothing.

pub mod images;
mod scan;

pub use images::{drop_images, ImagesDropped, IMAGE_REMOVED};
pub use scan::block_ranges;

use crate::error::{Error, Result};
use crate::pruning::config::{bad, keep_boundary_of, protected_tools_of};
use crate::pruning::KeepBoundary;
use crate::session::message::Role;
use crate::session::{EntryKind, Session};
use crate::support::json::{self, fields, js};
use crate::tokens::{ByteEstimate, EstimateOptions, TokenCounter};
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::ops::Range;

/// Tokens a placeholder is assumed to cost when a plan checks `minSavings`.
pub const PLACEHOLDER_TOKENS: u64 = 16;
/// The smallest fenced / XML block worth eliding, in estimated tokens (`fenceMinTokens`).
pub const FENCE_MIN_TOKENS: u64 = 400;

/// The three configurations the coding agent uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// Automatic shake in the method walk: protect the newest 16,000 tokens, act only when it
    /// saves 4,000 (less below a 40,000-token threshold, `thresholdTokens`); recovery reads of
    /// artifacts are protected.
    Default,
    /// The manual `/shake`: protect 4,000, no savings floor, artifact reads may go.
    Aggressive,
    /// The dead-end rescue: nothing protected by recency, no savings floor, artifact reads
    /// protected (eliding one would only mint another artifact).
    Rescue,
}

impl Preset {
    pub fn parse(name: &str) -> Option<Preset> {
        match name {
            "default" => Some(Preset::Default),
            "aggressive" => Some(Preset::Aggressive),
            "rescue" => Some(Preset::Rescue),
            _ => None,
        }
    }
}

/// What a shake may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShakeConfig {
    /// The newest context tokens (all entries) left intact (`protectTokens`).
    pub protect_tokens: u64,
    /// Below these estimated savings a plan is empty (`minSavings`).
    pub min_savings: u64,
    /// The smallest block region, in tokens (`fenceMinTokens`).
    pub fence_min_tokens: u64,
    /// Tools whose results are never elided (`["skill"]`).
    pub protected_tools: Vec<String>,
    /// Protect `read` results of `skill://` paths.
    pub protect_skill_reads: bool,
    /// Protect recovery reads of `artifact://` paths.
    pub protect_artifact_reads: bool,
    /// Protect `read` results of this path (the active plan file).
    pub protected_path: Option<String>,
    /// Entries before this one are summarized away and never sent: they are left alone.
    pub keep_boundary: KeepBoundary,
    /// Elide tool results only (no blocks).
    pub tool_results_only: bool,
    /// `shake thinking`: the regions are the reasoning blocks of old assistant messages
    /// (nothing else), removed without a placeholder; no savings floor.
    pub thinking: bool,
    /// The leaf whose branch is shaken (`None` = the session's leaf).
    pub leaf: Option<String>,
}

impl ShakeConfig {
    pub fn preset(p: Preset) -> ShakeConfig {
        let (protect_tokens, min_savings) = match p {
            Preset::Default => (
                crate::tokens::SHAKE_PROTECT_TOKENS,
                crate::tokens::SHAKE_MIN_SAVINGS,
            ),
            Preset::Aggressive => (4_000, 0),
            Preset::Rescue => (0, 0),
        };
        ShakeConfig {
            protect_tokens,
            min_savings,
            fence_min_tokens: FENCE_MIN_TOKENS,
            protected_tools: vec![crate::pruning::DEFAULT_PROTECTED_TOOL.to_string()],
            protect_skill_reads: true,
            protect_artifact_reads: p != Preset::Aggressive,
            protected_path: None,
            keep_boundary: KeepBoundary::LatestCompaction,
            tool_results_only: false,
            thinking: false,
            leaf: None,
        }
    }

    /// Reads a configuration from JSON: `preset` (`default` | `aggressive` | `rescue`,
    /// default `aggressive`, the manual shake) and overrides `protectTokens`, `minSavings`,
    /// `fenceMinTokens`, `protectedTools` (tool names; `"isSkillReadToolResult"` and
    /// `"isArtifactRecoveryToolResult"` stand for the two read protections), `protectedPath`,
    /// `keepBoundaryId` (an id, or `false` for the start of the branch), `toolResultsOnly`,
    /// `leafId`, and `thresholdTokens`: the compaction threshold of the reading model, which
    /// scales the `default` preset's protection and savings floor down in a small window
    /// (`tokens::shake_budgets`; unchanged from 40,000 up). A bad value or an unknown key is
    /// `E_SETTINGS` naming it.
    pub fn from_json(v: &Value) -> Result<ShakeConfig> {
        let map = match v {
            Value::Null => return Ok(ShakeConfig::preset(Preset::Aggressive)),
            Value::Object(m) => m,
            _ => return Err(bad("shake", "expected an object")),
        };
        let preset = match map.get("preset") {
            None | Some(Value::Null) => Preset::Aggressive,
            Some(p) => p
                .as_str()
                .and_then(Preset::parse)
                .ok_or_else(|| bad("preset", "expected default, aggressive or rescue"))?,
        };
        let mut c = ShakeConfig::preset(preset);
        // The automatic preset in a small window: its protection and savings floor become
        // shares of the compaction threshold (tokens::window_budgets), before any override.
        if let Some(v) = map.get("thresholdTokens").filter(|v| !v.is_null()) {
            let t = fields::safe_count("thresholdTokens", v)?;
            if preset == Preset::Default {
                (c.protect_tokens, c.min_savings) = crate::tokens::shake_budgets(t);
            }
        }
        for (k, v) in map.iter().filter(|(_, v)| !v.is_null()) {
            let f = k.as_str();
            if let Some((_, count)) = COUNTS.iter().find(|(name, _)| *name == f) {
                *count(&mut c) = fields::safe_count(f, v)?;
                continue;
            }
            match f {
                "preset" | "thresholdTokens" => {}
                "toolResultsOnly" => c.tool_results_only = fields::boolean(f, v)?,
                "thinking" => c.thinking = fields::boolean(f, v)?,
                "protectedPath" => c.protected_path = Some(fields::non_empty_string(f, v)?.into()),
                "leafId" => c.leaf = Some(fields::non_empty_string(f, v)?.into()),
                "keepBoundaryId" => c.keep_boundary = keep_boundary_of(f, v)?,
                "protectedTools" => {
                    let matchers = [crate::pruning::SKILL_READ_MATCHER, ARTIFACT_READ_MATCHER];
                    let (tools, matched) = protected_tools_of(f, v, &matchers)?;
                    c.protected_tools = tools;
                    c.protect_skill_reads = matched & 1 != 0;
                    c.protect_artifact_reads = matched & 2 != 0;
                }
                _ => return Err(bad(f, "unknown shake setting (check the spelling)")),
            }
        }
        Ok(c)
    }
}

/// The whole-number shake settings, read by one lookup in [`ShakeConfig::from_json`].
type Count = fn(&mut ShakeConfig) -> &mut u64;
const COUNTS: [(&str, Count); 3] = [
    ("protectTokens", |c| &mut c.protect_tokens),
    ("minSavings", |c| &mut c.min_savings),
    ("fenceMinTokens", |c| &mut c.fence_min_tokens),
];

/// The `protectedTools` entry that stands for the artifact recovery-read protection.
pub const ARTIFACT_READ_MATCHER: &str = "isArtifactRecoveryToolResult";

/// Where a region sits in its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The whole text of a tool result (its text blocks).
    ToolResult,
    /// Block `block` of an assistant's content, a thinking or redacted-thinking block: removed.
    Thinking { block: usize },
    /// A byte range of one text: block `block` of the content array, or the string content;
    /// `units` is the range in UTF-16 code units (as JavaScript indexes the text).
    Block {
        block: Option<usize>,
        range: Range<usize>,
        units: (usize, usize),
    },
}

/// One elidable region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Entry index.
    pub index: usize,
    pub target: Target,
    /// Estimated tokens of the removable text.
    pub tokens: u64,
    /// The text that goes (a tool result's text blocks joined by newlines).
    pub text: String,
    /// The tool name, the role, or the custom message type.
    pub label: String,
}

/// A planned shake: the regions in branch order and what the plan was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShakePlan {
    pub regions: Vec<Region>,
    /// Identifies the session state and the regions: [`apply_shake`] refuses another.
    pub fingerprint: String,
}

impl ShakePlan {
    /// The first entry applying it rewrites, where the provider's prompt cache stops matching
    /// (issue 39 item 5; `triggers::rewrite_forecast` prices it); `None` for an empty plan.
    pub fn first_changed(&self) -> Option<usize> {
        self.regions.iter().map(|r| r.index).min()
    }

    /// The body of the recovery artifact: each region under a `### region k (label, ~N tok)`
    /// heading, as the coding agent writes its shake artifacts.
    pub fn artifact_text(&self) -> String {
        let mut out = String::new();
        for (k, r) in self.regions.iter().enumerate() {
            let heading = format!("### region {} ({}, ~{} tok)", k + 1, r.label, r.tokens);
            for part in [heading.as_str(), "", &r.text, ""] {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(part);
            }
        }
        out
    }

    /// Total estimated tokens of the regions.
    pub fn tokens(&self) -> u64 {
        self.regions.iter().map(|r| r.tokens).sum()
    }

    /// `{fingerprint, tokens, regions: [{index, entryId, tokens, label, kind, blockIndex,
    /// start, end}], artifactText}` as JSON text; `start`/`end` count UTF-16 code units, as
    /// JavaScript indexes the text; `blockIndex` -1 is string content.
    pub fn json(&self, session: &Session) -> String {
        fn field(out: &mut String, key: &str, text: Option<&str>, n: i64) {
            out.push_str(key);
            match text {
                Some(t) => js::write_string(out, t),
                None => out.push_str(&n.to_string()),
            }
        }
        let mut out = String::new();
        let o = &mut out;
        field(o, "{\"fingerprint\":", Some(&self.fingerprint), 0);
        field(o, ",\"tokens\":", None, self.tokens() as i64);
        o.push_str(",\"regions\":[");
        for (k, r) in self.regions.iter().enumerate() {
            field(
                o,
                if k == 0 {
                    "{\"index\":"
                } else {
                    ",{\"index\":"
                },
                None,
                k as i64 + 1,
            );
            field(o, ",\"entryId\":", Some(session.entries()[r.index].id()), 0);
            field(o, ",\"tokens\":", None, r.tokens as i64);
            field(o, ",\"label\":", Some(&r.label), 0);
            match &r.target {
                Target::ToolResult => field(o, ",\"kind\":", Some("toolResult"), 0),
                Target::Thinking { block } => {
                    field(o, ",\"kind\":", Some("thinking"), 0);
                    field(o, ",\"blockIndex\":", None, *block as i64);
                }
                Target::Block { block, units, .. } => {
                    field(o, ",\"kind\":", Some("block"), 0);
                    field(o, ",\"blockIndex\":", None, block.map_or(-1, |b| b as i64));
                    field(o, ",\"start\":", None, units.0 as i64);
                    field(o, ",\"end\":", None, units.1 as i64);
                }
            }
            o.push('}');
        }
        field(o, "],\"artifactText\":", Some(&self.artifact_text()), 0);
        o.push('}');
        out
    }
}

/// The placeholder written over region `k` (1-based): `[shaken ~N tokens — recover:
/// artifact://ID (region k)]`, or `[shaken ~N tokens]` without an artifact.
pub fn placeholder(tokens: u64, k: usize, artifact: Option<&str>) -> String {
    match artifact {
        Some(id) => format!("[shaken ~{tokens} tokens — recover: artifact://{id} (region {k})]"),
        None => format!("[shaken ~{tokens} tokens]"),
    }
}

/// What a shake did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShakeReport {
    pub tool_results_dropped: usize,
    pub blocks_dropped: usize,
    pub thinking_blocks_dropped: usize,
    /// Estimated tokens the context lost (regions minus placeholders).
    pub tokens_freed: u64,
    pub artifact_id: Option<String>,
    /// Ids of the rewritten entries, in branch order.
    pub entries: Vec<String>,
}

impl ShakeReport {
    /// `{toolResultsDropped, blocksDropped, thinkingBlocksDropped, tokensFreed, artifactId,
    /// entries}` as JSON text.
    pub fn json(&self) -> String {
        use js::write_string;
        let mut out = format!(
            "{{\"toolResultsDropped\":{},\"blocksDropped\":{},\"thinkingBlocksDropped\":{},\"tokensFreed\":{},\"artifactId\":",
            self.tool_results_dropped, self.blocks_dropped, self.thinking_blocks_dropped, self.tokens_freed
        );
        match &self.artifact_id {
            Some(id) => write_string(&mut out, id),
            None => out.push_str("null"),
        }
        out.push_str(",\"entries\":[");
        for (k, id) in self.entries.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            write_string(&mut out, id);
        }
        out.push_str("]}");
        out
    }
}

// ----- finding regions -------------------------------------------------------------------

fn count(text: &str) -> u64 {
    ByteEstimate.count(text)
}

/// The message object of a `message` entry, or the entry object of a `custom_message`.
fn object_of(session: &Session, index: usize) -> Option<Value> {
    let text = match session.entries()[index].kind() {
        EntryKind::Message => session.message_json(index)?,
        EntryKind::CustomMessage => session.entry_json(index),
        _ => return None,
    };
    json::parse(&text).ok().filter(Value::is_object)
}

/// Tokens of the text of a custom message's content (what the protect window counts).
fn text_tokens(content: Option<&Value>) -> u64 {
    match content {
        Some(Value::String(s)) => count(s),
        Some(Value::Array(blocks)) => text_blocks(blocks).map(|(_, t)| count(t)).sum(),
        _ => 0,
    }
}

/// The text blocks of a content array: `(position, text)`.
fn text_blocks(blocks: &[Value]) -> impl Iterator<Item = (usize, &str)> {
    blocks.iter().enumerate().filter_map(|(i, b)| {
        (b.get("type")?.as_str()? == "text")
            .then(|| b.get("text")?.as_str())
            .flatten()
            .map(|t| (i, t))
    })
}

/// The `read` calls of a branch: call id → index of its path (the map type is the session's
/// id index type, one `HashMap` instantiation less).
#[derive(Default)]
struct Reads {
    by_id: FxHashMap<Box<str>, u32>,
    paths: Vec<String>,
}

impl Reads {
    fn of(session: &Session, path: &[usize]) -> Reads {
        let mut out = Reads::default();
        for &i in path {
            for c in session.file_call_facts(i).unwrap_or_default() {
                if c.tool == crate::session::FileTool::Read {
                    out.by_id.insert(c.id.into(), out.paths.len() as u32);
                    out.paths.push(c.path.into_owned());
                }
            }
        }
        out
    }

    fn path(&self, call: &str) -> Option<&str> {
        self.by_id
            .get(call)
            .map(|&k| self.paths[k as usize].as_str())
    }
}

fn protected(cfg: &ShakeConfig, m: &Value, reads: &Reads) -> bool {
    let name = m.get("toolName").and_then(Value::as_str).unwrap_or("");
    if cfg.protected_tools.iter().any(|t| t == name) {
        return true;
    }
    let call = m.get("toolCallId").and_then(Value::as_str).unwrap_or("");
    let path = (name == "read").then(|| reads.path(call)).flatten();
    let starts = |prefix: &str| path.is_some_and(|p| p.starts_with(prefix));
    if cfg.protect_skill_reads && starts("skill://") {
        return true;
    }
    if cfg.protected_path.as_deref().is_some_and(|p| {
        path.is_some_and(|q| q == p || crate::summary::fileops::strip_read_selector(q) == p)
    }) {
        return true;
    }
    if cfg.protect_artifact_reads {
        let source = m.get("details").and_then(|d| d.get("meta")?.get("source"));
        let internal =
            source.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("internal");
        let value = source.and_then(|s| s.get("value")).and_then(Value::as_str);
        if starts("artifact://")
            || (internal && value.is_some_and(|v| v.starts_with("artifact://")))
        {
            return true;
        }
    }
    false
}

/// The block regions of one text.
fn push_blocks(
    out: &mut Vec<Region>,
    cfg: &ShakeConfig,
    index: usize,
    block: Option<usize>,
    text: &str,
    label: &str,
) {
    // UTF-16 offsets, counted once over the text.
    let (mut at, mut units) = (0, 0);
    let mut units_at = |to: usize| {
        units += text[at..to].encode_utf16().count();
        at = to;
        units
    };
    for range in block_ranges(text) {
        let slice = &text[range.clone()];
        let tokens = count(slice);
        let units = (units_at(range.start), units_at(range.end));
        if slice.is_empty() || tokens < cfg.fence_min_tokens {
            continue;
        }
        out.push(Region {
            index,
            target: Target::Block {
                block,
                range,
                units,
            },
            tokens,
            text: slice.to_string(),
            label: label.to_string(),
        });
    }
}

fn push_content_blocks(
    out: &mut Vec<Region>,
    cfg: &ShakeConfig,
    index: usize,
    content: Option<&Value>,
    label: &str,
) {
    match content {
        Some(Value::String(s)) => push_blocks(out, cfg, index, None, s, label),
        Some(Value::Array(blocks)) => {
            for (i, t) in text_blocks(blocks) {
                push_blocks(out, cfg, index, Some(i), t, label);
            }
        }
        _ => {}
    }
}

/// The thinking and redacted-thinking blocks of an assistant message, each a region of the
/// tokens the estimator charges it (its text and signature, or its data).
fn push_thinking(out: &mut Vec<Region>, session: &Session, index: usize) {
    let m = object_of(session, index);
    let Some(Value::Array(blocks)) = m.as_ref().and_then(|m| m.get("content")) else {
        return;
    };
    let str_of = |b: &Value, k: &str| b.get(k).and_then(Value::as_str).map_or(0, count);
    for (block, b) in blocks.iter().enumerate() {
        let tokens = match b.get("type").and_then(Value::as_str) {
            Some("thinking") => str_of(b, "thinking") + str_of(b, "thinkingSignature"),
            Some("redactedThinking") => str_of(b, "data"),
            _ => continue,
        };
        out.push(Region {
            index,
            target: Target::Thinking { block },
            tokens,
            text: String::new(),
            label: "assistant".into(),
        });
    }
}

/// Whether an entry's line can hold a block at all: a fence marker or a `<`. Most messages
/// hold neither, and this spares parsing them on every plan.
fn may_hold_blocks(line: &str) -> bool {
    let b = line.as_bytes();
    b.contains(&b'<') || b.windows(3).any(|w| w == b"```" || w == b"~~~")
}

/// Finds the regions of the branch a shake with `cfg` elides (empty when they would save less
/// than `minSavings`), and binds them to the session as it is.
pub fn plan_shake(session: &Session, cfg: &ShakeConfig) -> Result<ShakePlan> {
    let path = session.path_of(cfg.leaf.as_deref())?;
    let entries = session.entries();
    // Tokens of everything after each position: the protect window counts every message and
    // the text of custom messages.
    let mut after = vec![0u64; path.len()];
    let mut acc = 0;
    for (pos, &i) in path.iter().enumerate().rev() {
        after[pos] = acc;
        acc += match entries[i].kind() {
            EntryKind::Message => session.entry_tokens(i, EstimateOptions::default()),
            EntryKind::CustomMessage => text_tokens(
                object_of(session, i)
                    .as_ref()
                    .and_then(|o| o.get("content")),
            ),
            _ => 0,
        };
    }
    let protection =
        cfg.protect_skill_reads || cfg.protect_artifact_reads || cfg.protected_path.is_some();
    let reads = if protection {
        Reads::of(session, &path)
    } else {
        Reads::default()
    };
    let boundary = cfg.keep_boundary.position(session, &path);

    let mut regions = Vec::new();
    for (pos, &i) in path.iter().enumerate().skip(boundary) {
        let e = &entries[i];
        let recent = after[pos] < cfg.protect_tokens;
        if cfg.thinking {
            if !recent && e.kind() == EntryKind::Message && e.role() == Some(Role::Assistant) {
                push_thinking(&mut regions, session, i);
            }
            continue;
        }
        if e.kind() == EntryKind::Message && e.role() == Some(Role::ToolResult) {
            let Some(f) = session.result_facts(i) else {
                continue;
            };
            // A result its tool flagged useless says nothing once read: recency does not keep it.
            let useless = f.useless && !f.is_error;
            if (recent && !useless) || f.pruned {
                continue;
            }
            let Some(m) = object_of(session, i) else {
                continue;
            };
            if protected(cfg, &m, &reads) {
                continue;
            }
            let Some(Value::Array(blocks)) = m.get("content") else {
                continue;
            };
            let texts: Vec<&str> = text_blocks(blocks)
                .map(|(_, t)| t)
                .filter(|t| !t.is_empty())
                .collect();
            if texts.is_empty() {
                continue;
            }
            regions.push(Region {
                index: i,
                target: Target::ToolResult,
                tokens: texts.iter().map(|t| count(t)).sum(),
                text: texts.join("\n"),
                label: f.tool_name.to_string(),
            });
            continue;
        }
        if recent || cfg.tool_results_only || !may_hold_blocks(&session.entry_json(i)) {
            continue;
        }
        match (e.kind(), e.role()) {
            (EntryKind::Message, Some(Role::Assistant)) => {
                if let Some(Value::Array(blocks)) = object_of(session, i)
                    .as_ref()
                    .and_then(|m| m.get("content"))
                {
                    for (b, t) in text_blocks(blocks) {
                        push_blocks(&mut regions, cfg, i, Some(b), t, "assistant");
                    }
                }
            }
            (EntryKind::Message, Some(role @ (Role::User | Role::Developer))) => {
                let m = object_of(session, i);
                let label = if role == Role::User {
                    "user"
                } else {
                    "developer"
                };
                push_content_blocks(
                    &mut regions,
                    cfg,
                    i,
                    m.as_ref().and_then(|m| m.get("content")),
                    label,
                );
            }
            (EntryKind::CustomMessage, _) => {
                let o = object_of(session, i);
                let label = o
                    .as_ref()
                    .and_then(|o| o.get("customType"))
                    .and_then(Value::as_str)
                    .unwrap_or("custom")
                    .to_string();
                push_content_blocks(
                    &mut regions,
                    cfg,
                    i,
                    o.as_ref().and_then(|o| o.get("content")),
                    &label,
                );
            }
            _ => {}
        }
    }
    let savings: u64 = if cfg.thinking {
        u64::MAX
    } else {
        regions
            .iter()
            .map(|r| r.tokens.saturating_sub(PLACEHOLDER_TOKENS))
            .sum()
    };
    if savings < cfg.min_savings {
        regions.clear();
    }
    let fingerprint = fingerprint(session, &regions);
    Ok(ShakePlan {
        regions,
        fingerprint,
    })
}

/// The session's edit generation and size, and a hash of the regions.
fn fingerprint(session: &Session, regions: &[Region]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |x: u64| {
        h ^= x;
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    for r in regions {
        mix(r.index as u64);
        mix(r.tokens);
        if let Target::Block { block, range, .. } = &r.target {
            mix(block.map_or(u64::MAX, |b| b as u64));
            mix(range.start as u64);
            mix(range.end as u64);
        }
    }
    format!("{}.{}.{:x}", session.generation(), session.len(), h)
}

// ----- applying ----------------------------------------------------------------------------

/// Writes the placeholders of `plan` (with `artifact` as the recovery id, if any), stamping
/// `prunedAt = now` on each elided tool result. All new lines are built before any is
/// written: a plan that no longer fits the session (`E_STALE_PLAN`) changes nothing.
pub fn apply_shake(
    session: &mut Session,
    plan: &ShakePlan,
    artifact: Option<&str>,
    now: i64,
) -> Result<ShakeReport> {
    let mut report = ShakeReport {
        artifact_id: artifact.map(str::to_string),
        ..ShakeReport::default()
    };
    let edits = (fingerprint(session, &plan.regions) == plan.fingerprint)
        .then(|| shaken_lines(session, plan, artifact, now, &mut report))
        .flatten()
        .ok_or_else(|| Error::StalePlan {
            reason: "the session changed since the shake was planned".into(),
        })?;
    session.rewrite_entries(edits);
    Ok(report)
}

/// The new line of every entry the plan touches, filling in the report.
fn shaken_lines(
    session: &Session,
    plan: &ShakePlan,
    artifact: Option<&str>,
    now: i64,
    report: &mut ShakeReport,
) -> Option<Vec<(usize, String)>> {
    // A plan lists each entry's regions together, in branch order; `first` numbers them.
    let mut edits = Vec::new();
    let mut first = 1;
    for regions in plan.regions.chunk_by(|a, b| a.index == b.index) {
        let index = regions[0].index;
        let numbered = (first..first + regions.len()).zip(regions);
        first += regions.len();
        let mut o = object_of(session, index)?;
        let content = o.get_mut("content")?;
        let mut tool_result = false;
        // Each text is rebuilt once, whatever the number of its regions: splicing them one at
        // a time copied the whole text per region, quadratic in the blocks of a message.
        let mut spliced: Vec<(Option<usize>, String, usize)> = Vec::new();
        let mut thinking: Vec<usize> = Vec::new();
        for (k, r) in numbered {
            match &r.target {
                Target::Thinking { block } => {
                    // In order and each once, as planned: otherwise the plan is not this one's.
                    thinking.last().is_none_or(|&b| b < *block).then_some(())?;
                    thinking.push(*block);
                    report.tokens_freed += r.tokens;
                    report.thinking_blocks_dropped += 1;
                }
                Target::ToolResult => {
                    let text = placeholder(r.tokens, k, artifact);
                    report.tokens_freed += r.tokens.saturating_sub(count(&text));
                    elide_result(&mut *content, text)?;
                    tool_result = true;
                    report.tool_results_dropped += 1;
                }
                Target::Block { block, range, .. } => {
                    let text = placeholder(r.tokens, k, artifact);
                    report.tokens_freed += r.tokens.saturating_sub(count(&text));
                    let slot = match block {
                        None => &*content,
                        Some(b) => content.get(*b)?.get("text")?,
                    };
                    let s = slot.as_str()?;
                    // A new text for the slot unless the previous region was in it too; slots
                    // come in content order, each once (otherwise the plan is not this one's).
                    match spliced.last() {
                        Some((b, ..)) if b == block => {}
                        Some((b, ..)) if b > block => return None,
                        _ => spliced.push((*block, String::with_capacity(s.len()), 0)),
                    }
                    let (_, out, done) = spliced.last_mut()?;
                    // Regions of one text are in order and disjoint, and still fit it.
                    let gap = s.get(*done..range.start)?;
                    (s.get(range.clone()) == Some(&r.text)).then_some(())?;
                    out.push_str(gap);
                    out.push_str(&text);
                    *done = range.end;
                    report.blocks_dropped += 1;
                }
            }
        }
        for (block, mut out, done) in spliced {
            let slot = match block {
                None => &mut *content,
                Some(b) => content.get_mut(b)?.get_mut("text")?,
            };
            out.push_str(slot.as_str()?.get(done..)?);
            *slot = Value::String(out);
        }
        if !thinking.is_empty() {
            // Removed in one pass (indices of the content as planned, ascending).
            let blocks = content.as_array_mut()?;
            thinking.iter().all(|&b| b < blocks.len()).then_some(())?;
            let mut at = 0;
            blocks.retain(|_| {
                at += 1;
                thinking.binary_search(&(at - 1)).is_err()
            });
        }
        let content = js::stringify(o.get("content")?);
        let message = session.entries()[index].kind() == EntryKind::Message;
        let at: &[&str] = if message { &["message"] } else { &[] };
        let mut line =
            json::edit::set_member(&session.entry_json(index), at, "content", &content).ok()??;
        if tool_result {
            line = json::edit::set_member(&line, at, "prunedAt", &now.to_string()).ok()??;
        }
        report
            .entries
            .push(session.entries()[index].id().to_string());
        edits.push((index, line));
    }
    Some(edits)
}

/// A tool result's content with its first non-empty text block replaced by `text`, its other
/// text blocks removed and every other block kept. `None` when it has no text to replace.
fn elide_result(content: &mut Value, text: String) -> Option<()> {
    let blocks = content.as_array_mut()?;
    let first = text_blocks(blocks).find(|(_, t)| !t.is_empty())?.0;
    let mut kept = Vec::with_capacity(blocks.len());
    for (i, b) in std::mem::take(blocks).into_iter().enumerate() {
        if i == first {
            kept.push(json::object(vec![
                ("type", "text".into()),
                ("text", text.clone().into()),
            ]));
        } else if b.get("type").and_then(Value::as_str) != Some("text") {
            kept.push(b);
        }
    }
    *blocks = kept;
    Some(())
}
