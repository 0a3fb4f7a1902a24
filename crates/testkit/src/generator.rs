//! The session generator: a simulated coding-agent session written as a v3 JSONL file.
//!
//! The generator keeps the *current path* (root → leaf) in memory together with a running
//! context-size estimate per entry, so it can produce plausible usage numbers, decide when
//! to compact, pick valid `firstKeptEntryId`s and navigate back to earlier entries.

use super::jsonw::{iso8601, write_f64, write_i64, write_key, write_str, write_u64};
use super::png::{base64, pattern_png};
use super::rng::Rng;
use super::text::{self, Lang, FILES};
use std::collections::{BTreeSet, HashSet};
use std::io::{self, Write};

/// Options of the generator. Same options → same bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct GenOptions {
    /// PRNG seed.
    pub seed: u64,
    /// Number of entries after the header (exact).
    pub entries: usize,
    /// Append a compaction when the estimated context since the last compaction exceeds
    /// this many tokens; `None` disables compactions.
    pub compaction_every_tokens: Option<u64>,
    /// Tokens kept after a compaction (capped at 40 % of `compaction_every_tokens`).
    pub keep_recent_tokens: u64,
    /// Navigate back to earlier entries now and then (the session becomes a tree).
    pub branches: bool,
    /// Probability, at a turn boundary, of going back to an earlier entry.
    pub branch_rate: f64,
    /// Embed PNG images (user messages and `read` of image files).
    pub images: bool,
    /// Sprinkle labels, notes, extension state, settings changes and user shell commands.
    pub extras: bool,
    /// Multiplier on how often extras appear (1.0: about one per eight turns).
    pub extras_rate: f64,
    /// Multiplier on file and tool-output sizes (1.0 ≈ 2.6 KB per entry on average, the
    /// bench preset's 1.44 ≈ 2.9 KB).
    pub size_scale: f64,
    /// Session start (Unix ms).
    pub start_ms: i64,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            seed: 0x5eed,
            entries: 2_000,
            compaction_every_tokens: Some(150_000),
            keep_recent_tokens: 20_000,
            branches: true,
            branch_rate: 0.08,
            images: true,
            extras: true,
            extras_rate: 1.0,
            size_scale: 1.0,
            start_ms: 1_767_600_000_000, // 2026-01-05
        }
    }
}

impl GenOptions {
    /// A demo session: ~1,500 entries, branches, a few compactions, images and labels.
    pub fn sample() -> Self {
        GenOptions {
            seed: 7,
            entries: 1_500,
            compaction_every_tokens: Some(120_000),
            branch_rate: 0.12,
            extras_rate: 2.5,
            size_scale: 0.3,
            ..GenOptions::default()
        }
    }

    /// The benchmark session: 50,000 entries, ≈145 MB, compactions every ≈150k tokens.
    pub fn bench() -> Self {
        GenOptions {
            seed: 4,
            entries: 50_000,
            compaction_every_tokens: Some(150_000),
            size_scale: 1.44,
            ..GenOptions::default()
        }
    }

    /// A stress session: 350,000 entries (≈1 GB).
    pub fn huge() -> Self {
        GenOptions {
            seed: 3,
            entries: 350_000,
            ..GenOptions::bench()
        }
    }

    /// Many small compactions (every 8,000 tokens).
    pub fn many_compactions() -> Self {
        GenOptions {
            seed: 5,
            entries: 10_000,
            compaction_every_tokens: Some(8_000),
            ..GenOptions::default()
        }
    }
}

/// What was generated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GenStats {
    /// Entries after the header.
    pub entries: usize,
    /// Bytes written (header included).
    pub bytes: u64,
    /// `compaction` entries.
    pub compactions: usize,
    /// Entries with two or more children.
    pub branch_points: usize,
    /// `branch_summary` entries.
    pub branch_summaries: usize,
    /// Image blocks.
    pub images: usize,
    /// `label` entries.
    pub labels: usize,
    /// Tool calls (each answered by one toolResult).
    pub tool_calls: usize,
    /// Id of the last entry (the leaf of the active path); empty when there are no entries.
    pub leaf_id: String,
    /// Entries on the path root → leaf.
    pub active_path_len: usize,
    /// Largest estimated context (tokens, system prompt included) seen by an assistant turn.
    pub max_context_tokens: u64,
}

/// Generates a session into memory.
pub fn generate(opts: &GenOptions) -> Vec<u8> {
    generate_with_stats(opts).0
}

/// Generates a session into memory and returns it with its statistics.
pub fn generate_with_stats(opts: &GenOptions) -> (Vec<u8>, GenStats) {
    let mut buf = Vec::with_capacity(opts.entries.saturating_mul(3_000).min(1 << 30));
    // Writing into a Vec cannot fail.
    let stats = generate_to(opts, &mut buf).unwrap_or_default();
    (buf, stats)
}

/// Streams a session into `w` (wrap files in a `BufWriter`).
pub fn generate_to<W: Write + ?Sized>(opts: &GenOptions, w: &mut W) -> io::Result<GenStats> {
    let mut g = Gen::new(opts, w);
    g.run()?;
    Ok(g.finish())
}

// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    User,
    AsstStop,
    AsstTool,
    AsstOther,
    ToolResult,
    Bash,
    CustomMsg,
    BranchSummary,
    Compaction,
    Meta,
}

impl Kind {
    fn is_assistant(self) -> bool {
        matches!(self, Kind::AsstStop | Kind::AsstTool | Kind::AsstOther)
    }
    /// `message` entries (what findCutPoint accumulates).
    fn is_message(self) -> bool {
        matches!(
            self,
            Kind::User
                | Kind::AsstStop
                | Kind::AsstTool
                | Kind::AsstOther
                | Kind::ToolResult
                | Kind::Bash
        )
    }
    /// Where a kept region may start (user or assistant message).
    fn is_cut_point(self) -> bool {
        self == Kind::User || self.is_assistant()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Read,
    Modified,
}

#[derive(Debug)]
struct Node {
    seq: u32,
    id: u32,
    kind: Kind,
    tok: u64,
    /// Estimated context tokens (without the system prompt) after this entry.
    ctx: u64,
    time: i64,
    model: u8,
    thinking: u8,
    /// File operations (tool calls of an assistant; `details` of a compaction / branch
    /// summary).
    ops: Vec<(Op, u16)>,
}

enum Block {
    Text(String),
    Thinking(String, String),
    Call {
        id: String,
        name: &'static str,
        args: String,
    },
}

struct Call {
    id: String,
    name: &'static str,
    args: String,
    op: Option<(Op, u16)>,
    result: String,
    image: Option<String>,
    is_error: bool,
    run_ms: u64,
}

const MODELS: &[(&str, [f64; 4])] = &[
    // $ per million tokens: input, output, cacheRead, cacheWrite
    ("claude-sonnet-4-5", [3.0, 15.0, 0.3, 3.75]),
    ("claude-opus-4-5", [5.0, 25.0, 0.5, 6.25]),
];
const LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh"];

fn frag(s: &str) -> u64 {
    (s.len() as u64).div_ceil(4)
}

fn hex8(id: u32) -> String {
    format!("{id:08x}")
}

struct Gen<'a, W: Write + ?Sized> {
    o: &'a GenOptions,
    rng: Rng,
    w: &'a mut W,
    line: Vec<u8>,
    ids: HashSet<u32>,
    children: Vec<u8>,
    path: Vec<Node>,
    now: i64,
    files: Vec<Option<String>>,
    versions: Vec<u32>,
    stats: GenStats,
    max_leaf_depth: usize,
    emitted: usize,
    sys_tokens: u64,
    scale: f64,
}

impl<'a, W: Write + ?Sized> Gen<'a, W> {
    fn new(o: &'a GenOptions, w: &'a mut W) -> Self {
        let mut rng = Rng::new(o.seed);
        let sys_tokens = rng.range(5_000, 9_000);
        let scale = if o.size_scale.is_finite() && o.size_scale > 0.0 {
            o.size_scale
        } else {
            1.0
        };
        Gen {
            o,
            rng,
            w,
            line: Vec::with_capacity(1 << 16),
            ids: HashSet::new(),
            children: Vec::new(),
            path: Vec::new(),
            now: o.start_ms,
            files: vec![None; FILES.len()],
            versions: vec![0; FILES.len()],
            stats: GenStats::default(),
            max_leaf_depth: 0,
            emitted: 0,
            sys_tokens,
            scale,
        }
    }

    fn remaining(&self) -> usize {
        self.o.entries - self.emitted
    }

    fn scaled(&self, n: usize) -> usize {
        ((n as f64) * self.scale) as usize
    }

    fn model(&self) -> u8 {
        self.path.last().map_or(0, |n| n.model)
    }

    fn thinking_level(&self) -> u8 {
        self.path.last().map_or(3, |n| n.thinking)
    }

    fn finish(mut self) -> GenStats {
        self.stats.entries = self.emitted;
        self.stats.branch_points = self.children.iter().filter(|&&c| c >= 2).count();
        self.stats.active_path_len = self.path.len();
        self.stats.leaf_id = self.path.last().map(|n| hex8(n.id)).unwrap_or_default();
        self.stats
    }

    // ---- output plumbing ------------------------------------------------------------

    fn new_id(&mut self) -> u32 {
        loop {
            let id = self.rng.next_u32();
            if self.ids.insert(id) {
                return id;
            }
        }
    }

    /// Starts an entry line: `{"type":…,"id":…,"parentId":…,"timestamp":…`.
    fn open(&mut self, ty: &str, time: i64) -> u32 {
        let id = self.new_id();
        self.line.clear();
        self.line.extend_from_slice(b"{\"type\":\"");
        self.line.extend_from_slice(ty.as_bytes());
        self.line.extend_from_slice(b"\",\"id\":\"");
        self.line.extend_from_slice(hex8(id).as_bytes());
        self.line.extend_from_slice(b"\",\"parentId\":");
        match self.path.last() {
            Some(p) => {
                let pid = hex8(p.id);
                write_str(&mut self.line, &pid);
            }
            None => self.line.extend_from_slice(b"null"),
        }
        self.line.extend_from_slice(b",\"timestamp\":\"");
        self.line.extend_from_slice(iso8601(time).as_bytes());
        self.line.push(b'"');
        id
    }

    /// Finishes the entry line started by [`Self::open`] and appends it to the path.
    #[allow(clippy::too_many_arguments)]
    fn close(
        &mut self,
        id: u32,
        kind: Kind,
        tok: u64,
        ctx: Option<u64>,
        time: i64,
        ops: Vec<(Op, u16)>,
    ) -> io::Result<()> {
        self.line.extend_from_slice(b"}\n");
        self.w.write_all(&self.line)?;
        self.stats.bytes += self.line.len() as u64;
        let seq = self.children.len() as u32;
        if let Some(p) = self.path.last() {
            let c = &mut self.children[p.seq as usize];
            *c = c.saturating_add(1);
        }
        self.children.push(0);
        let prev_ctx = self.path.last().map_or(0, |n| n.ctx);
        let (model, thinking) = (self.model(), self.thinking_level());
        self.path.push(Node {
            seq,
            id,
            kind,
            tok,
            ctx: ctx.unwrap_or(prev_ctx + tok),
            time,
            model,
            thinking,
            ops,
        });
        self.emitted += 1;
        Ok(())
    }

    fn write_header(&mut self) -> io::Result<()> {
        let r = [self.rng.next_u64(), self.rng.next_u64()];
        let uuid = format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            r[0] >> 32,
            (r[0] >> 16) & 0xffff,
            r[0] & 0xfff,
            ((r[1] >> 48) & 0x3fff) | 0x8000,
            r[1] & 0xffff_ffff_ffff
        );
        self.line.clear();
        self.line
            .extend_from_slice(b"{\"type\":\"session\",\"version\":3,\"id\":");
        write_str(&mut self.line, &uuid);
        self.line.extend_from_slice(b",\"timestamp\":\"");
        self.line.extend_from_slice(iso8601(self.now).as_bytes());
        self.line
            .extend_from_slice(b"\",\"cwd\":\"/home/dev/project\"}\n");
        self.w.write_all(&self.line)?;
        self.stats.bytes += self.line.len() as u64;
        Ok(())
    }

    // ---- project files ----------------------------------------------------------------

    fn file(&mut self, i: usize) -> &str {
        if self.files[i].is_none() {
            let spec = &FILES[i];
            let mut r = Rng::derived(&[self.o.seed, 0xF11E, i as u64, u64::from(self.versions[i])]);
            let target = self.scaled(r.log_size(spec.min, spec.max)).max(300);
            self.files[i] = Some(text::file_content(&mut r, spec, target));
        }
        self.files[i].as_deref().unwrap_or("")
    }

    fn png_of(&mut self, key: &[u64]) -> String {
        let mut r = Rng::derived(key);
        let sizes = [32u32, 48, 64, 96, 128, 160, 256];
        let w = sizes[r.weighted(&[20, 15, 20, 15, 15, 8, 7])];
        let h = if r.chance(0.5) {
            w
        } else {
            (w * 3 / 4).max(16)
        };
        self.stats.images += 1;
        base64(&pattern_png(&mut r, w, h))
    }

    fn pick_focus(&mut self) -> Vec<u16> {
        let n = self.rng.range_usize(1, 4);
        let mut v: Vec<u16> = Vec::with_capacity(n);
        while v.len() < n {
            let weights: Vec<u32> = FILES
                .iter()
                .map(|f| match f.lang {
                    Lang::Png | Lang::Log => 0,
                    _ if f.max > 20_000 => 3,
                    Lang::Ts | Lang::Rs => 8,
                    _ => 3,
                })
                .collect();
            let i = self.rng.weighted(&weights) as u16;
            if !v.contains(&i) {
                v.push(i);
            }
        }
        v
    }

    // ---- main loop --------------------------------------------------------------------

    fn run(&mut self) -> io::Result<()> {
        self.write_header()?;
        if self.o.entries >= 6 {
            self.meta_model_change(0)?;
            self.meta_thinking(3)?;
        }
        let mut resume_after_user = false;
        while self.emitted < self.o.entries {
            if self.remaining() < 2 {
                self.tail_filler()?;
                continue;
            }
            if !resume_after_user {
                resume_after_user = self.maybe_branch()?;
            }
            if !resume_after_user && self.o.extras {
                self.sprinkles()?;
                if self.remaining() < 2 {
                    continue;
                }
            }
            self.turn(resume_after_user)?;
            resume_after_user = false;
        }
        Ok(())
    }

    /// Only reached when a single entry is requested: a prompt not yet answered.
    fn tail_filler(&mut self) -> io::Result<()> {
        self.user_message(&["README.md"])
    }

    fn sprinkles(&mut self) -> io::Result<()> {
        let r = if self.o.extras_rate.is_finite() {
            self.o.extras_rate.clamp(0.0, 10.0)
        } else {
            1.0
        };
        let w = |x: f64| (x * r) as u32;
        let roll = self
            .rng
            .weighted(&[860, w(15.0), w(3.0), w(30.0), w(20.0), w(20.0), w(45.0)]);
        if self.remaining() < 4 {
            return Ok(());
        }
        match roll {
            1 => {
                let cur = self.thinking_level();
                let mut l = self.rng.index(LEVELS.len()) as u8;
                if l == cur {
                    l = (l + 1) % LEVELS.len() as u8;
                }
                self.meta_thinking(l)
            }
            2 => {
                let m = 1 - self.model().min(1);
                self.meta_model_change(m)
            }
            3 => self.label(),
            4 => self.custom_message(),
            5 => self.custom_state(),
            6 => self.bash_execution(),
            _ => Ok(()),
        }
    }

    fn meta_thinking(&mut self, level: u8) -> io::Result<()> {
        self.now += self.rng.range(500, 20_000) as i64;
        let t = self.now;
        let id = self.open("thinking_level_change", t);
        write_key_str(&mut self.line, "thinkingLevel", LEVELS[usize::from(level)]);
        self.close(id, Kind::Meta, 0, None, t, Vec::new())?;
        if let Some(n) = self.path.last_mut() {
            n.thinking = level;
        }
        Ok(())
    }

    fn meta_model_change(&mut self, m: u8) -> io::Result<()> {
        self.now += self.rng.range(500, 20_000) as i64;
        let t = self.now;
        let id = self.open("model_change", t);
        let name = format!("anthropic/{}", MODELS[usize::from(m)].0);
        write_key_str(&mut self.line, "model", &name);
        self.close(id, Kind::Meta, 0, None, t, Vec::new())?;
        if let Some(n) = self.path.last_mut() {
            n.model = m;
        }
        Ok(())
    }

    fn label(&mut self) -> io::Result<()> {
        let cands: Vec<u32> = self
            .path
            .iter()
            .rev()
            .take(200)
            .filter(|n| matches!(n.kind, Kind::User | Kind::AsstStop))
            .map(|n| n.id)
            .collect();
        if cands.is_empty() {
            return self.custom_state();
        }
        let target = *self.rng.pick(&cands);
        self.now += self.rng.range(1_000, 30_000) as i64;
        let t = self.now;
        let id = self.open("label", t);
        write_key_str(&mut self.line, "targetId", &hex8(target));
        let label = text::label(&mut self.rng);
        write_key_str(&mut self.line, "label", &label);
        self.stats.labels += 1;
        self.close(id, Kind::Meta, 0, None, t, Vec::new())
    }

    fn custom_message(&mut self) -> io::Result<()> {
        self.now += self.rng.range(100, 5_000) as i64;
        let t = self.now;
        let content = text::note(&mut self.rng);
        let id = self.open("custom_message", t);
        write_key_str(&mut self.line, "customType", "note");
        write_key_str(&mut self.line, "content", &content);
        self.line.extend_from_slice(b",\"display\":true");
        self.close(id, Kind::CustomMsg, frag(&content), None, t, Vec::new())
    }

    fn custom_state(&mut self) -> io::Result<()> {
        self.now += self.rng.range(100, 5_000) as i64;
        let t = self.now;
        let id = self.open("custom", t);
        write_key_str(&mut self.line, "customType", "ext-state");
        self.line.extend_from_slice(b",\"data\":{\"todos\":[");
        let n = self.rng.range_usize(0, 5);
        for i in 0..n {
            if i > 0 {
                self.line.push(b',');
            }
            self.line.extend_from_slice(b"{\"id\":");
            write_u64(&mut self.line, i as u64 + 1);
            let task = text::task(&mut self.rng);
            write_key_str(&mut self.line, "text", task);
            self.line.extend_from_slice(if self.rng.chance(0.5) {
                b",\"done\":true}"
            } else {
                b",\"done\":false}"
            });
        }
        self.line.extend_from_slice(b"],\"mode\":");
        let mode = *self.rng.pick(&["plan", "build", "review"]);
        write_str(&mut self.line, mode);
        self.line.extend_from_slice(b",\"updatedAt\":");
        write_i64(&mut self.line, t);
        self.line.push(b'}');
        self.close(id, Kind::Meta, 0, None, t, Vec::new())
    }

    fn bash_execution(&mut self) -> io::Result<()> {
        self.now += self.rng.range(5_000, 120_000) as i64;
        let command = text::bash_command_line(&mut self.rng);
        let target = self.rng.log_size(200, 8_000);
        let target = self.scaled(target);
        let (output, code) = text::bash_output(&mut self.rng, &command, target);
        self.now += self.rng.range(50, 20_000) as i64;
        let t = self.now;
        let id = self.open("message", t);
        self.line
            .extend_from_slice(b",\"message\":{\"role\":\"bashExecution\"");
        write_key_str(&mut self.line, "command", &command);
        write_key_str(&mut self.line, "output", &output);
        self.line.extend_from_slice(b",\"exitCode\":");
        write_i64(&mut self.line, i64::from(code));
        self.line
            .extend_from_slice(b",\"cancelled\":false,\"truncated\":false,\"timestamp\":");
        write_i64(&mut self.line, t);
        self.line.push(b'}');
        let tok = frag(&command) + frag(&output);
        self.close(id, Kind::Bash, tok, None, t + 2, Vec::new())
    }

    // ---- branches -----------------------------------------------------------------------

    /// Maybe navigates back; returns true when the new branch starts right after a user
    /// message (the next turn then regenerates the answer instead of asking anew).
    fn maybe_branch(&mut self) -> io::Result<bool> {
        if !self.o.branches || self.path.len() < 10 || !self.rng.chance(self.o.branch_rate) {
            return Ok(false);
        }
        let len = self.path.len();
        let lo = len.saturating_sub(61);
        let cands: Vec<usize> = (lo..len - 3)
            .filter(|&j| matches!(self.path[j].kind, Kind::User | Kind::AsstStop))
            .collect();
        if cands.is_empty() {
            return Ok(false);
        }
        let j = *self.rng.pick(&cands);
        let remaining = self.remaining();
        // The active path must stay the longest story.
        if j + 1 + remaining <= self.max_leaf_depth.max(len) + 4 || remaining < 8 {
            return Ok(false);
        }
        self.max_leaf_depth = self.max_leaf_depth.max(len);
        let abandoned = self.path.split_off(j + 1);
        self.now += self.rng.range(10_000, 300_000) as i64;
        if self.rng.chance(0.5) {
            let mut read = BTreeSet::new();
            let mut modified = BTreeSet::new();
            for n in &abandoned {
                if n.kind.is_assistant() || n.kind == Kind::BranchSummary {
                    collect_ops(&n.ops, &mut read, &mut modified);
                }
            }
            let (rl, ml) = file_lists(&read, &modified);
            let summary = text::branch_summary(&mut self.rng, &rl, &ml);
            let from = hex8(self.path[j].id);
            let t = self.now;
            let id = self.open("branch_summary", t);
            write_key_str(&mut self.line, "fromId", &from);
            write_key_str(&mut self.line, "summary", &summary);
            write_details(&mut self.line, &rl, &ml);
            let ops = ops_of(&read, &modified);
            self.stats.branch_summaries += 1;
            self.close(id, Kind::BranchSummary, frag(&summary), None, t, ops)?;
        }
        Ok(self.path[j].kind == Kind::User)
    }

    // ---- compaction ---------------------------------------------------------------------

    fn maybe_compact(&mut self, force: bool) -> io::Result<()> {
        let Some(every) = self.o.compaction_every_tokens else {
            return Ok(());
        };
        if self.remaining() < 3 {
            return Ok(());
        }
        let Some(leaf) = self.path.last() else {
            return Ok(());
        };
        if leaf.kind == Kind::Compaction || (!force && leaf.ctx <= every) {
            return Ok(());
        }
        let end = self.path.len();
        let start = self
            .path
            .iter()
            .rposition(|n| n.kind == Kind::Compaction)
            .map_or(0, |i| i + 1);
        let keep = self.o.keep_recent_tokens.min(every * 2 / 5).max(1);
        let mut acc = 0u64;
        let mut at = None;
        for i in (start..end).rev() {
            if self.path[i].kind.is_message() {
                acc += self.path[i].tok;
                if acc >= keep {
                    at = Some(i);
                    break;
                }
            }
        }
        let Some(at) = at else { return Ok(()) };
        let cut = (at..end)
            .find(|&i| self.path[i].kind.is_cut_point())
            .or_else(|| {
                (start..end)
                    .rev()
                    .find(|&i| self.path[i].kind.is_cut_point())
            });
        let Some(cut) = cut else { return Ok(()) };
        if !self.path[start..cut].iter().any(|n| n.kind.is_message()) {
            return Ok(());
        }
        let mut read = BTreeSet::new();
        let mut modified = BTreeSet::new();
        if start > 0 {
            collect_ops(&self.path[start - 1].ops, &mut read, &mut modified);
        }
        for n in &self.path[start..cut] {
            if n.kind.is_assistant() {
                collect_ops(&n.ops, &mut read, &mut modified);
            }
        }
        let (rl, ml) = file_lists(&read, &modified);
        let summary = text::compaction_summary(&mut self.rng, &rl, &ml);
        let tokens_before = self.sys_tokens + self.path[end - 1].ctx;
        let first_kept = hex8(self.path[cut].id);
        let tok = frag(&summary);
        let kept: u64 = self.path[cut..end].iter().map(|n| n.tok).sum();
        self.now += self.rng.range(8_000, 90_000) as i64;
        let t = self.now;
        let id = self.open("compaction", t);
        write_key_str(&mut self.line, "summary", &summary);
        write_key_str(&mut self.line, "firstKeptEntryId", &first_kept);
        self.line.extend_from_slice(b",\"tokensBefore\":");
        write_u64(&mut self.line, tokens_before);
        write_details(&mut self.line, &rl, &ml);
        self.stats.compactions += 1;
        let ops = ops_of(&read, &modified);
        self.close(id, Kind::Compaction, tok, Some(tok + kept), t, ops)
    }

    // ---- turns --------------------------------------------------------------------------

    fn turn(&mut self, regenerate: bool) -> io::Result<()> {
        let focus = self.pick_focus();
        let fp: Vec<&'static str> = focus.iter().map(|&i| FILES[usize::from(i)].path).collect();
        if !regenerate {
            self.user_message(&fp)?;
        }
        let rounds = 1 + self
            .rng
            .weighted(&[14, 12, 12, 11, 10, 9, 8, 6, 5, 4, 3, 2, 2, 1, 1]);
        for r in 0..rounds {
            let remaining = self.remaining();
            if remaining == 2 {
                // A final answer now would leave a single entry, too few for another turn:
                // fail once and let the client retry (as pi's auto-retry does).
                self.error_assistant(false)?;
                return self.final_assistant(&fp, r);
            }
            if r + 1 == rounds || remaining <= 2 {
                return self.final_assistant(&fp, r);
            }
            let roll = self.rng.f64();
            if roll < 0.008 {
                return self.aborted_assistant(&fp);
            }
            if roll < 0.0095 {
                return self.error_assistant(true);
            }
            if roll < 0.0105 {
                return self.length_assistant();
            }
            let mut k = 1 + self.rng.weighted(&[60, 25, 15]);
            k = k.min(remaining - 2);
            let progress = r as f64 / rounds as f64;
            self.tool_round(&focus, &fp, k, progress)?;
            self.maybe_compact(false)?;
        }
        Ok(())
    }

    fn user_message(&mut self, fp: &[&str]) -> io::Result<()> {
        let gap = match self.rng.weighted(&[60, 30, 8, 2]) {
            0 => self.rng.range(3_000, 60_000),
            1 => self.rng.range(60_000, 600_000),
            2 => self.rng.range(600_000, 3_600_000),
            _ => self.rng.range(3_600_000, 16 * 3_600_000),
        };
        self.now += gap as i64;
        let t = self.now;
        let prompt = text::user_prompt(&mut self.rng, fp);
        let image = if self.o.images && self.rng.chance(0.03) {
            let key = [self.o.seed, 0x1A6E, self.emitted as u64];
            Some(self.png_of(&key))
        } else {
            None
        };
        let as_string = image.is_none() && self.rng.chance(0.2);
        let et = t + self.rng.range(1, 15) as i64;
        let id = self.open("message", et);
        self.line
            .extend_from_slice(b",\"message\":{\"role\":\"user\",\"content\":");
        let mut tok = frag(&prompt);
        if as_string {
            write_str(&mut self.line, &prompt);
        } else {
            self.line.push(b'[');
            write_text_block(&mut self.line, &prompt);
            if let Some(img) = &image {
                self.line.push(b',');
                write_image_block(&mut self.line, img);
                tok += 1200;
            }
            self.line.push(b']');
        }
        self.line.extend_from_slice(b",\"timestamp\":");
        write_i64(&mut self.line, t);
        self.line.push(b'}');
        self.close(id, Kind::User, tok, None, et, Vec::new())
    }

    fn maybe_thinking(&mut self, fp: &[&str], p: f64) -> Option<Block> {
        if self.thinking_level() == 0 || !self.rng.chance(p) {
            return None;
        }
        let th = text::thinking(&mut self.rng, fp);
        let sig = text::signature(&mut self.rng);
        Some(Block::Thinking(th, sig))
    }

    fn final_assistant(&mut self, fp: &[&str], rounds_done: usize) -> io::Result<()> {
        let mut blocks = Vec::new();
        if let Some(b) = self.maybe_thinking(fp, 0.5) {
            blocks.push(b);
        }
        let txt = if rounds_done == 0 && self.rng.chance(0.5) {
            text::prose_n(&mut self.rng, 1, 6)
        } else {
            text::assistant_final(&mut self.rng, fp)
        };
        blocks.push(Block::Text(txt));
        self.assistant(blocks, "stop", None, Kind::AsstStop, Vec::new())?;
        self.maybe_compact(false)
    }

    fn aborted_assistant(&mut self, fp: &[&str]) -> io::Result<()> {
        let mut blocks = Vec::new();
        if self.rng.chance(0.6) {
            if let Some(b) = self.maybe_thinking(fp, 0.5) {
                blocks.push(b);
            }
            let mut s = text::assistant_intro(&mut self.rng, fp);
            let mut c = s.len() / 2;
            while !s.is_char_boundary(c) {
                c -= 1;
            }
            s.truncate(c);
            blocks.push(Block::Text(s));
        }
        self.assistant(
            blocks,
            "aborted",
            Some("Request was aborted.".to_string()),
            Kind::AsstOther,
            Vec::new(),
        )
    }

    fn error_assistant(&mut self, may_overflow: bool) -> io::Result<()> {
        let prompt = self.sys_tokens + self.path.last().map_or(0, |n| n.ctx);
        let big = self
            .o
            .compaction_every_tokens
            .is_some_and(|e| self.path.last().is_some_and(|n| n.ctx > e / 2));
        let too_long = may_overflow && big && self.rng.chance(0.7);
        let msg = if too_long {
            format!(
                "400 {{\"type\":\"error\",\"error\":{{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: {} tokens > 200000 maximum\"}}}}",
                prompt.max(200_001 + self.rng.below(30_000))
            )
        } else {
            "529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}".to_string()
        };
        self.assistant(Vec::new(), "error", Some(msg), Kind::AsstOther, Vec::new())?;
        if too_long {
            self.maybe_compact(true)?;
        }
        Ok(())
    }

    fn length_assistant(&mut self) -> io::Result<()> {
        let target = self.rng.range_usize(6_000, 20_000);
        let s = text::long_answer(&mut self.rng, target);
        self.assistant(
            vec![Block::Text(s)],
            "length",
            None,
            Kind::AsstOther,
            Vec::new(),
        )
    }

    /// Writes an assistant message entry (usage derived from the current path).
    fn assistant(
        &mut self,
        blocks: Vec<Block>,
        stop: &str,
        error: Option<String>,
        kind: Kind,
        ops: Vec<(Op, u16)>,
    ) -> io::Result<()> {
        let mut tok = 0u64;
        for b in &blocks {
            tok += match b {
                Block::Text(s) => frag(s),
                Block::Thinking(t, s) => frag(t) + frag(s),
                Block::Call { name, args, .. } => frag(name) + frag(args),
            };
        }
        let start = self.now + self.rng.range(2, 40) as i64;
        let model = usize::from(self.model());
        let prices = MODELS[model].1;
        let prompt = self.sys_tokens + self.path.last().map_or(0, |n| n.ctx);
        self.stats.max_context_tokens = self.stats.max_context_tokens.max(prompt);
        let zero_usage = stop == "error" || (stop == "aborted" && blocks.is_empty());
        let (input, output, cache_read, cache_write) = if zero_usage {
            (0, 0, 0, 0)
        } else {
            // Tokens appended since the previous assistant (+ that assistant) are newly cached.
            let mut delta = 0u64;
            let mut prev: Option<(i64, u8)> = None;
            for n in self.path.iter().rev().take(64) {
                if n.kind.is_assistant() {
                    delta += n.tok;
                    prev = Some((n.time, n.model));
                    break;
                }
                if matches!(n.kind, Kind::Compaction | Kind::BranchSummary) {
                    break;
                }
                delta += n.tok;
            }
            let miss = match prev {
                Some((t, m)) => start - t > 300_000 || usize::from(m) != model,
                None => true,
            };
            let input = self.rng.range(1, 12).min(prompt);
            let cw = if miss {
                prompt - input
            } else {
                delta.min(prompt - input)
            };
            let cr = prompt - input - cw;
            let out = if stop == "length" {
                32_000
            } else {
                let f = 1.0 + self.rng.f64() * 0.3;
                ((tok as f64) * f) as u64 + self.rng.range(5, 60)
            };
            (input, out, cr, cw)
        };
        let dur = if zero_usage {
            self.rng.range(200, 3_000)
        } else {
            (800 + output * 12 + self.rng.range(0, 4_000)).min(180_000)
        };
        let end = start + dur as i64;
        self.now = end;

        let id = self.open("message", end);
        let l = &mut self.line;
        l.extend_from_slice(b",\"message\":{\"role\":\"assistant\",\"content\":[");
        for (i, b) in blocks.iter().enumerate() {
            if i > 0 {
                l.push(b',');
            }
            match b {
                Block::Text(s) => write_text_block(l, s),
                Block::Thinking(t, s) => {
                    l.extend_from_slice(b"{\"type\":\"thinking\",\"thinking\":");
                    write_str(l, t);
                    l.extend_from_slice(b",\"thinkingSignature\":");
                    write_str(l, s);
                    l.push(b'}');
                }
                Block::Call { id, name, args } => {
                    l.extend_from_slice(b"{\"type\":\"toolCall\",\"id\":");
                    write_str(l, id);
                    l.extend_from_slice(b",\"name\":");
                    write_str(l, name);
                    l.extend_from_slice(b",\"arguments\":");
                    l.extend_from_slice(args.as_bytes());
                    l.push(b'}');
                }
            }
        }
        l.extend_from_slice(
            b"],\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":",
        );
        write_str(l, MODELS[model].0);
        l.extend_from_slice(b",\"usage\":{\"input\":");
        write_u64(l, input);
        l.extend_from_slice(b",\"output\":");
        write_u64(l, output);
        l.extend_from_slice(b",\"cacheRead\":");
        write_u64(l, cache_read);
        l.extend_from_slice(b",\"cacheWrite\":");
        write_u64(l, cache_write);
        l.extend_from_slice(b",\"totalTokens\":");
        write_u64(l, input + output + cache_read + cache_write);
        let c = [
            input as f64 * prices[0] / 1e6,
            output as f64 * prices[1] / 1e6,
            cache_read as f64 * prices[2] / 1e6,
            cache_write as f64 * prices[3] / 1e6,
        ];
        l.extend_from_slice(b",\"cost\":{\"input\":");
        write_f64(l, c[0]);
        l.extend_from_slice(b",\"output\":");
        write_f64(l, c[1]);
        l.extend_from_slice(b",\"cacheRead\":");
        write_f64(l, c[2]);
        l.extend_from_slice(b",\"cacheWrite\":");
        write_f64(l, c[3]);
        l.extend_from_slice(b",\"total\":");
        write_f64(l, c[0] + c[1] + c[2] + c[3]);
        l.extend_from_slice(b"}},\"stopReason\":");
        write_str(l, stop);
        l.extend_from_slice(b",\"timestamp\":");
        write_i64(l, start);
        if let Some(e) = &error {
            write_key_str(l, "errorMessage", e);
        }
        l.push(b'}');
        self.close(id, kind, tok, None, end, ops)
    }

    fn tool_call_id(&mut self) -> String {
        const A: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let mut s = String::with_capacity(30);
        s.push_str("toolu_01");
        for _ in 0..22 {
            s.push(char::from(A[self.rng.index(62)]));
        }
        s
    }

    fn tool_round(
        &mut self,
        focus: &[u16],
        fp: &[&str],
        k: usize,
        progress: f64,
    ) -> io::Result<()> {
        let mut calls = Vec::with_capacity(k);
        for _ in 0..k {
            let weights: [u32; 5] = if progress < 0.35 {
                [55, 20, 3, 2, 20]
            } else if progress < 0.7 {
                [25, 8, 40, 7, 20]
            } else {
                [10, 7, 15, 3, 65]
            };
            let call = match self.rng.weighted(&weights) {
                0 => self.call_read(focus),
                1 => self.call_grep(focus),
                2 => self.call_edit(focus),
                3 => self.call_write(focus),
                _ => self.call_bash(),
            };
            calls.push(call);
        }
        let mut blocks = Vec::with_capacity(k + 2);
        if let Some(b) = self.maybe_thinking(fp, 0.45) {
            blocks.push(b);
        }
        if self.rng.chance(0.55) {
            blocks.push(Block::Text(text::assistant_intro(&mut self.rng, fp)));
        }
        let mut ops = Vec::new();
        for c in &calls {
            blocks.push(Block::Call {
                id: c.id.clone(),
                name: c.name,
                args: c.args.clone(),
            });
            if let Some(op) = c.op {
                ops.push(op);
            }
        }
        self.stats.tool_calls += calls.len();
        self.assistant(blocks, "toolUse", None, Kind::AsstTool, ops)?;
        for c in calls {
            self.now += c.run_ms as i64;
            let t = self.now;
            let id = self.open("message", t);
            let l = &mut self.line;
            l.extend_from_slice(b",\"message\":{\"role\":\"toolResult\"");
            write_key_str(l, "toolCallId", &c.id);
            write_key_str(l, "toolName", c.name);
            l.extend_from_slice(b",\"content\":[");
            write_text_block(l, &c.result);
            let mut tok = frag(&c.result);
            if let Some(img) = &c.image {
                l.push(b',');
                write_image_block(l, img);
                tok += 1200;
            }
            l.extend_from_slice(b"],\"isError\":");
            l.extend_from_slice(if c.is_error { b"true" } else { b"false" });
            l.extend_from_slice(b",\"timestamp\":");
            write_i64(l, t);
            l.push(b'}');
            self.close(id, Kind::ToolResult, tok, None, t, Vec::new())?;
        }
        Ok(())
    }

    fn pick_from_focus(&mut self, focus: &[u16], p_focus: f64) -> usize {
        if !focus.is_empty() && self.rng.chance(p_focus) {
            usize::from(*self.rng.pick(focus))
        } else {
            let i = self.rng.index(FILES.len());
            if FILES[i].lang == Lang::Png {
                usize::from(focus.first().copied().unwrap_or(0))
            } else {
                i
            }
        }
    }

    fn call_read(&mut self, focus: &[u16]) -> Call {
        let id = self.tool_call_id();
        let run_ms = self.rng.range(2, 40);
        let roll = self.rng.f64();
        if self.o.images && roll < 0.015 {
            let pngs: Vec<usize> = (0..FILES.len())
                .filter(|&i| FILES[i].lang == Lang::Png)
                .collect();
            let i = *self.rng.pick(&pngs);
            let key = [self.o.seed, 0x9A6, i as u64];
            let img = self.png_of(&key);
            return Call {
                id,
                name: "read",
                args: args_json(&[("path", FILES[i].path)]),
                op: Some((Op::Read, i as u16)),
                result: "Read image file [image/png]".to_string(),
                image: Some(img),
                is_error: false,
                run_ms,
            };
        }
        if roll < 0.045 {
            let p = format!(
                "src/{}/{}.ts",
                text::snake(&mut self.rng),
                text::camel(&mut self.rng)
            );
            return Call {
                id,
                name: "read",
                args: args_json(&[("path", &p)]),
                op: None,
                result: format!(
                    "ENOENT: no such file or directory, access '/home/dev/project/{p}'"
                ),
                image: None,
                is_error: true,
                run_ms,
            };
        }
        let i = self.pick_from_focus(focus, 0.75);
        let selector = self.rng.chance(0.25);
        let (a, b) = (self.rng.range_usize(1, 400), self.rng.range_usize(20, 160));
        let content = self.file(i);
        let (path, result) = if selector {
            let n_lines = content.lines().count().max(1);
            let a = 1 + (a - 1) % n_lines;
            let b = (a + b).min(n_lines);
            let out: Vec<&str> = content.lines().skip(a - 1).take(b + 1 - a).collect();
            let sel = if b > a {
                format!("{a}-{b}")
            } else {
                a.to_string()
            };
            (format!("{}:{sel}", FILES[i].path), out.join("\n"))
        } else {
            (FILES[i].path.to_string(), content.to_string())
        };
        Call {
            id,
            name: "read",
            args: args_json(&[("path", &path)]),
            op: Some((Op::Read, i as u16)),
            result,
            image: None,
            is_error: false,
            run_ms,
        }
    }

    fn call_grep(&mut self, focus: &[u16]) -> Call {
        let id = self.tool_call_id();
        let word = *self.rng.pick(text::WORDS);
        let regexy = self.rng.chance(0.3);
        let pattern = if regexy {
            format!("{word}\\(")
        } else {
            word.to_string()
        };
        let needle = if regexy {
            format!("{word}(")
        } else {
            word.to_string()
        };
        let f = usize::from(focus.first().copied().unwrap_or(0));
        let dir = match FILES[f].path.rfind('/') {
            Some(p) if self.rng.chance(0.8) => &FILES[f].path[..p],
            _ => FILES[f].path,
        };
        let scope: Vec<usize> = (0..FILES.len())
            .filter(|&i| FILES[i].path.starts_with(dir) && FILES[i].lang != Lang::Png)
            .take(6)
            .collect();
        let cap = self.rng.log_size(400, 8_000);
        let cap = self.scaled(cap).max(200);
        let mut out = String::new();
        for i in scope {
            let content = self.file(i);
            for (n, line) in content.lines().enumerate() {
                if line.contains(needle.as_str()) {
                    out.push_str(FILES[i].path);
                    out.push(':');
                    out.push_str(&(n + 1).to_string());
                    out.push(':');
                    out.push_str(line);
                    out.push('\n');
                    if out.len() > cap {
                        break;
                    }
                }
            }
            if out.len() > cap {
                break;
            }
        }
        if out.is_empty() {
            out.push_str("No matches found");
        }
        Call {
            id,
            name: "grep",
            args: args_json(&[("pattern", &pattern), ("path", dir)]),
            op: None,
            result: out,
            image: None,
            is_error: false,
            run_ms: self.rng.range(5, 300),
        }
    }

    fn call_edit(&mut self, focus: &[u16]) -> Call {
        let id = self.tool_call_id();
        let i = self.pick_from_focus(focus, 0.9);
        let lang = FILES[i].lang;
        let fail = self.rng.chance(0.05);
        let n_pick = self.rng.range_usize(2, 12);
        let line_pick = self.rng.next_u64();
        let content = self.file(i).to_string();
        // Line starts.
        let mut starts = vec![0usize];
        for (p, b) in content.bytes().enumerate() {
            if b == b'\n' && p + 1 < content.len() {
                starts.push(p + 1);
            }
        }
        let s = (line_pick % starts.len() as u64) as usize;
        let e = (s + n_pick).min(starts.len());
        let a = starts[s];
        let b = if e < starts.len() {
            starts[e]
        } else {
            content.len()
        };
        let old = content[a..b].to_string();
        let mut new = old.clone();
        match self.rng.below(4) {
            0 => {
                let w1 = *self.rng.pick(text::WORDS);
                let w2 = *self.rng.pick(text::WORDS);
                new = new.replacen(w1, w2, 1);
            }
            1 => {
                let n = self.rng.range_usize(60, 600);
                let extra = text::snippet(&mut self.rng, lang, n);
                let at = new.find('\n').map_or(new.len(), |p| p + 1);
                new.insert_str(at, &extra);
            }
            2 => {
                if let Some(p) = new.find('\n') {
                    new.replace_range(..=p, "");
                }
            }
            _ => {}
        }
        if new == old {
            let extra = text::snippet(&mut self.rng, lang, 80);
            new.push_str(&extra);
        }
        let path = FILES[i].path;
        if fail || old.trim().is_empty() {
            let wrong = old.replace('\t', "  ") + " ";
            return Call {
                id,
                name: "edit",
                args: args_json(&[("path", path), ("oldText", &wrong), ("newText", &new)]),
                op: None,
                result: format!("Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."),
                image: None,
                is_error: true,
                run_ms: self.rng.range(2, 30),
            };
        }
        let mut updated = content;
        updated.replace_range(a..b, &new);
        self.files[i] = Some(updated);
        Call {
            id,
            name: "edit",
            args: args_json(&[("path", path), ("oldText", &old), ("newText", &new)]),
            op: Some((Op::Modified, i as u16)),
            result: format!("Successfully replaced text in {path}."),
            image: None,
            is_error: false,
            run_ms: self.rng.range(2, 30),
        }
    }

    fn call_write(&mut self, focus: &[u16]) -> Call {
        let id = self.tool_call_id();
        let i = self.pick_from_focus(focus, 0.8);
        self.versions[i] += 1;
        let spec = &FILES[i];
        let mut r = Rng::derived(&[self.o.seed, 0xF11E, i as u64, u64::from(self.versions[i])]);
        let target = self.scaled(r.log_size(500, 9_000)).max(200);
        let content = text::file_content(&mut r, spec, target);
        let result = format!(
            "Successfully wrote {} bytes to {}",
            content.len(),
            spec.path
        );
        let args = args_json(&[("path", spec.path), ("content", &content)]);
        self.files[i] = Some(content);
        Call {
            id,
            name: "write",
            args,
            op: Some((Op::Modified, i as u16)),
            result,
            image: None,
            is_error: false,
            run_ms: self.rng.range(2, 30),
        }
    }

    fn call_bash(&mut self) -> Call {
        let id = self.tool_call_id();
        let command = text::bash_command_line(&mut self.rng);
        let target = match self.rng.weighted(&[69, 25, 6]) {
            0 => self.rng.log_size(200, 4_000),
            1 => self.rng.log_size(4_000, 12_000),
            _ => self.rng.log_size(30_000, 100_000),
        };
        let target = self.scaled(target).max(100);
        let (mut out, code) = text::bash_output(&mut self.rng, &command, target);
        if out.is_empty() {
            out.push_str("(no output)");
        }
        let is_error = code != 0;
        if is_error {
            out.push_str(&format!("\n\nCommand exited with code {code}"));
        }
        let run_ms = if command.contains("test") || command.contains("build") {
            self.rng.range(1_500, 90_000)
        } else {
            self.rng.range(10, 2_000)
        };
        Call {
            id,
            name: "bash",
            args: args_json(&[("command", &command)]),
            op: None,
            result: out,
            image: None,
            is_error,
            run_ms,
        }
    }
}

// ---------------------------------------------------------------------------------------

fn write_key_str(l: &mut Vec<u8>, key: &str, value: &str) {
    l.push(b',');
    write_key(l, key);
    write_str(l, value);
}

fn write_text_block(l: &mut Vec<u8>, s: &str) {
    l.extend_from_slice(b"{\"type\":\"text\",\"text\":");
    write_str(l, s);
    l.push(b'}');
}

fn write_image_block(l: &mut Vec<u8>, data: &str) {
    l.extend_from_slice(b"{\"type\":\"image\",\"data\":");
    write_str(l, data);
    l.extend_from_slice(b",\"mimeType\":\"image/png\"}");
}

fn write_details(l: &mut Vec<u8>, read: &[&str], modified: &[&str]) {
    l.extend_from_slice(b",\"details\":{\"readFiles\":[");
    for (i, f) in read.iter().enumerate() {
        if i > 0 {
            l.push(b',');
        }
        write_str(l, f);
    }
    l.extend_from_slice(b"],\"modifiedFiles\":[");
    for (i, f) in modified.iter().enumerate() {
        if i > 0 {
            l.push(b',');
        }
        write_str(l, f);
    }
    l.extend_from_slice(b"]}");
}

fn args_json(pairs: &[(&str, &str)]) -> String {
    let mut v = Vec::new();
    v.push(b'{');
    for (i, (k, val)) in pairs.iter().enumerate() {
        if i > 0 {
            v.push(b',');
        }
        write_key(&mut v, k);
        write_str(&mut v, val);
    }
    v.push(b'}');
    String::from_utf8(v).unwrap_or_default()
}

fn collect_ops(
    ops: &[(Op, u16)],
    read: &mut BTreeSet<&'static str>,
    modified: &mut BTreeSet<&'static str>,
) {
    for &(op, f) in ops {
        let p = FILES[usize::from(f)].path;
        match op {
            Op::Read => read.insert(p),
            Op::Modified => modified.insert(p),
        };
    }
}

/// `readFiles` (read minus modified) and `modifiedFiles`, both sorted.
fn file_lists(
    read: &BTreeSet<&'static str>,
    modified: &BTreeSet<&'static str>,
) -> (Vec<&'static str>, Vec<&'static str>) {
    let r = read
        .iter()
        .filter(|p| !modified.contains(*p))
        .copied()
        .collect();
    let m = modified.iter().copied().collect();
    (r, m)
}

fn ops_of(read: &BTreeSet<&'static str>, modified: &BTreeSet<&'static str>) -> Vec<(Op, u16)> {
    let idx = |p: &str| FILES.iter().position(|f| f.path == p).unwrap_or(0) as u16;
    read.iter()
        .map(|p| (Op::Read, idx(p)))
        .chain(modified.iter().map(|p| (Op::Modified, idx(p))))
        .collect()
}
