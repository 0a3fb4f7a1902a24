//! The anchor index (issue 38 item 1): the exact identifiers of the region a compaction drops
//! — paths, URLs, hex ids, issue numbers, versions, error codes and first error lines, symbol
//! names of tool calls, numbers and quoted strings the user wrote — ranked, deduplicated,
//! carried from compaction to compaction in the entry's `details` the way file operations are
//! (spec: compaction §5.10 "Cumulative sources"), and appended to what the model reads as one
//! `<anchors>` block within a token budget.
//!
//! Pipeline: messages → [`harvest`] (linear scans of their text) → [`AnchorIndex`] (dedupe,
//! counts, recency; seeded from the previous compaction's `details.anchors`) → [`AnchorIndex::ranked`]
//! (user-stated first, then mentioned more than once, then most recent) →
//! [`anchor_block`] (those the model does not already see, within the budget) →
//! [`upsert_anchor_block`].

pub mod harvest;

use crate::error::Result;
use crate::session::message::{AgentMessage, Content, ContentBlock, Role};
use crate::session::Session;
use crate::summary::view::{in_place_role, BlockView, Content as ViewContent, MsgView};
use harvest::{error_line, first_line, harvest_text, AnchorKind, Scope, MAX_ANCHOR_BYTES};
use rustc_hash::FxHashMap;
use serde_json::Value;

/// At most this many anchors are carried in `details.anchors` from one compaction to the next.
pub const MAX_CARRIED: usize = 200;
/// The default budget of the block, in estimated tokens (setting `anchorTokens`).
pub const DEFAULT_ANCHOR_TOKENS: u64 = 1_000;
/// The stored bytes of a region a plan harvests at most ([`AnchorIndex::add_region`]): about
/// 20 ms of reading on this project's benchmark machine, and far more text than the block's
/// budget can show (a region past it keeps its newest messages' and all its user's anchors
/// that fit).
pub const HARVEST_BYTES: usize = 1 << 20;
/// The `details` key of the carried anchors.
pub const DETAILS_KEY: &str = "anchors";
/// The order in which kinds take turns in the ranking after the user's anchors: the ones a
/// model can least rebuild first (an error's words, a SHA, a URL), paths and numbers last
/// (a path can be listed again; a number outside the user's words means least).
const KIND_TURNS: [AnchorKind; 10] = [
    AnchorKind::ErrorLine,
    AnchorKind::ErrorCode,
    AnchorKind::Hex,
    AnchorKind::Url,
    AnchorKind::Issue,
    AnchorKind::Version,
    AnchorKind::Symbol,
    AnchorKind::Quoted,
    AnchorKind::Path,
    AnchorKind::Number,
];
/// The tag of the block.
const OPEN: &str = "<anchors>";
const CLOSE: &str = "</anchors>";

/// One identifier of the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub kind: AnchorKind,
    /// Verbatim, as the region wrote it.
    pub text: String,
    /// The user wrote it (in a message of theirs).
    pub user: bool,
    /// Mentions, across the compactions that carried it.
    pub count: u32,
    /// Carried from an earlier compaction and not seen again in this region.
    pub carried: bool,
    /// Order of the last mention (higher is more recent; carried anchors come first).
    last: u64,
}

/// The identifiers of a region, deduplicated by their exact text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnchorIndex {
    anchors: Vec<Anchor>,
    /// Hash of an anchor's text → its position (open addressing on a collision: the next
    /// hash value), so each new anchor costs one allocation, its text.
    at: FxHashMap<u64, u32>,
    seq: u64,
}

/// Distinct anchors an index holds at most (a bound on memory for enormous regions; the
/// block and `details` hold far fewer).
const MAX_DISTINCT: usize = 50_000;

impl AnchorIndex {
    /// An empty index.
    pub fn new() -> AnchorIndex {
        AnchorIndex::default()
    }

    /// Number of distinct anchors.
    pub fn len(&self) -> usize {
        self.anchors.len()
    }

    /// True when nothing was harvested or carried.
    pub fn is_empty(&self) -> bool {
        self.anchors.is_empty()
    }

    /// Records one mention.
    pub fn add(&mut self, kind: AnchorKind, text: &str, user: bool) {
        self.mention(kind, text, user, 1, false);
    }

    fn mention(&mut self, kind: AnchorKind, text: &str, user: bool, count: u32, carried: bool) {
        if text.is_empty() || text.len() > MAX_ANCHOR_BYTES {
            return;
        }
        self.seq += 1;
        let mut key = hash(text);
        while let Some(&i) = self.at.get(&key) {
            let a = &mut self.anchors[i as usize];
            if a.text == text {
                a.user |= user;
                a.count = a.count.saturating_add(count);
                a.carried &= carried;
                a.last = self.seq;
                return;
            }
            key = key.wrapping_add(1);
        }
        // A block line holds one line, and never the block's own tags (checked once per
        // distinct text: a repeated mention was checked when first seen).
        if self.anchors.len() >= MAX_DISTINCT
            || text.bytes().any(|b| b == b'\n' || b == b'\r')
            || memchr::memmem::find(text.as_bytes(), b"anchors>").is_some()
        {
            return;
        }
        self.at.insert(key, self.anchors.len() as u32);
        self.anchors.push(Anchor {
            kind,
            text: text.to_string(),
            user,
            count,
            carried,
            last: self.seq,
        });
    }

    /// The text before an `<anchors>` block, word by word, then the block's lines (`block`,
    /// between its tags) as they name them ([`AnchorIndex::add_text`]).
    fn add_text_and_block(&mut self, before: &str, block: &str, scope: Scope) {
        harvest_text(before, scope, &mut |kind, t| self.add(kind, t, scope.user));
        for line in block.lines() {
            let Some((kind, t)) = line.strip_prefix("- ").and_then(|l| l.split_once(": ")) else {
                continue;
            };
            if let Some(kind) = AnchorKind::parse(kind) {
                let user = scope.user || matches!(kind, AnchorKind::Number | AnchorKind::Quoted);
                self.add(kind, t, user);
            }
        }
    }

    /// Harvests one text. An `<anchors>` block inside it (a handoff document's, or one a
    /// summary copied) is read back line by line with the kind each line names, and a
    /// `<files>` block's tree as the paths it lists, so that what an earlier document held
    /// survives a handoff, where no `details` carry it: numbers and quoted strings only ever
    /// come from the user, so those lines count as the user's.
    pub fn add_text(&mut self, text: &str, scope: Scope) {
        // A `<files>` block shows its paths grouped by folder, never whole: read them back.
        // Both tags are looked for in one look at each `<` ([`find_tag`]): every text of the
        // region passes here, and almost none holds a block.
        let (mut files, mut first_open) = (false, None);
        for at in memchr::memchr_iter(b'<', text.as_bytes()) {
            let tail = &text.as_bytes()[at..];
            files |= tail.starts_with(b"<files>\n");
            if first_open.is_none() && tail.starts_with(OPEN.as_bytes()) {
                first_open = Some(at);
            }
            if files && first_open.is_some() {
                break;
            }
        }
        if files {
            for path in crate::summary::fileops::listed_paths(text) {
                self.add(AnchorKind::Path, &path, scope.user);
            }
        }
        let mut rest = text;
        let mut next = first_open;
        while let Some(open) = next {
            let body = &rest[open + OPEN.len()..];
            let Some(close) = body.find(CLOSE) else {
                break;
            };
            self.add_text_and_block(&rest[..open], &body[..close], scope);
            rest = &body[close + CLOSE.len()..];
            next = find_tag(rest.as_bytes(), OPEN.as_bytes());
        }
        harvest_text(rest, scope, &mut |kind, t| self.add(kind, t, scope.user));
    }

    /// Harvests the message an entry carries (see [`for_each_text`] for what is read). A
    /// custom message whose `details` hold anchors (a handoff document's) seeds the index
    /// with them first, who stated each included.
    pub fn add_message(&mut self, message: &AgentMessage) {
        if let AgentMessage::Custom(m) = message {
            if let Some(details) = &m.details {
                self.add_details(details);
            }
        }
        for_each_text(message, &mut |text, source| self.add_source(text, source));
    }

    /// Harvests one text of a message as its source says.
    fn add_source(&mut self, text: &str, source: Source) {
        match source {
            Source::Text(scope) => self.add_text(text, scope),
            Source::Error => {
                if let Some(line) = first_line(text) {
                    self.add(AnchorKind::ErrorLine, line, false);
                }
            }
            Source::Output => {
                if let Some(line) = error_line(text) {
                    self.add(AnchorKind::ErrorLine, line, false);
                }
            }
        }
    }

    /// Harvests the messages of `entries` (in order) of `session`. Entries whose message
    /// cannot be read are skipped: what the index cannot read it cannot anchor. The user,
    /// developer, assistant and tool-result messages are read in place ([`texts_in_place`]),
    /// the others through their typed message.
    pub fn add_entries(&mut self, session: &Session, entries: &[usize]) {
        for &i in entries {
            if !texts_in_place(session, i, &mut |text, source| {
                self.add_source(text, source)
            }) {
                self.add_typed_entry(session, i);
            }
        }
    }

    /// Harvests the entry through its typed message (the reading before issue 42, and the
    /// oracle of [`verify_in_place_anchors`]).
    fn add_typed_entry(&mut self, session: &Session, i: usize) {
        if let Ok(Some(m)) = session.entry_message(i) {
            self.add_message(&m);
        }
    }

    /// Harvests the entries of `lists` (one region, in order) within [`HARVEST_BYTES`] of
    /// their stored lines: a region that fits is read whole; a larger one gives its bytes to
    /// the user's messages first (what the ranking puts first), newest first, then to the
    /// others newest first, passing over a message that does not fit what is left. The chosen
    /// ones are read in their order, so recency keeps its meaning. Deterministic, and bounded
    /// whatever the region weighs (issue 38: ≤ 20 ms for a 50,000-entry region).
    pub fn add_region(&mut self, session: &Session, lists: &[&[usize]]) {
        let all: Vec<usize> = lists.iter().flat_map(|l| l.iter().copied()).collect();
        let bytes = |i: usize| session.entry_line_bytes(i).len();
        if all.iter().map(|&i| bytes(i)).sum::<usize>() <= HARVEST_BYTES {
            return self.add_entries(session, &all);
        }
        let user = |i: usize| session.entry(i).and_then(|e| e.role()) == Some(Role::User);
        let mut chosen = vec![false; all.len()];
        let mut left = HARVEST_BYTES;
        for users in [true, false] {
            for (k, &i) in all.iter().enumerate().rev() {
                let n = bytes(i);
                if !chosen[k] && user(i) == users && n <= left {
                    chosen[k] = true;
                    left -= n;
                }
            }
        }
        let picked: Vec<usize> = all
            .iter()
            .zip(&chosen)
            .filter_map(|(&i, &c)| c.then_some(i))
            .collect();
        self.add_entries(session, &picked);
    }

    /// Seeds the index from the `details` of an earlier compaction (`details.anchors`, as
    /// [`AnchorIndex::details_json`] writes it): those anchors are carried, older than any
    /// mention harvested after. Malformed items are skipped. Whether a compaction contributes
    /// is the caller's rule (one written by an extension does not, as for file lists).
    pub fn add_details(&mut self, details: &Value) {
        let Some(items) = details.get(DETAILS_KEY).and_then(Value::as_array) else {
            return;
        };
        // Stored best first: read oldest-ranked first so the best ends most recent.
        for item in items.iter().rev() {
            let kind = item
                .get("kind")
                .and_then(Value::as_str)
                .and_then(AnchorKind::parse);
            let text = item.get("text").and_then(Value::as_str);
            let (Some(kind), Some(text)) = (kind, text) else {
                continue;
            };
            let user = item.get("user").and_then(Value::as_bool).unwrap_or(false);
            let count = item
                .get("count")
                .and_then(Value::as_u64)
                .map_or(1, |c| c.clamp(1, u64::from(u32::MAX)) as u32);
            self.mention(kind, text, user, count, true);
        }
    }

    /// The anchors, best first: the user-stated ones, then the others taking turns by kind
    /// ([`KIND_TURNS`]: one error line, one code, one id, … then the next of each), each kind's
    /// own order being mentioned more than once, then most recent; ties by text, so the order
    /// is deterministic. Taking turns keeps one kind that a region holds by the hundred (the
    /// paths of a directory listing) from filling the block before a single SHA or error
    /// line gets in (`tests/bench/retention.mjs` measures what the block keeps).
    pub fn ranked(&self) -> Vec<&Anchor> {
        self.ranked_order()
            .into_iter()
            .map(|i| &self.anchors[i as usize])
            .collect()
    }

    /// [`AnchorIndex::ranked`] as positions in the index, for a caller that keeps the order
    /// while the index does not change (a plan ranks once for all it writes).
    pub fn ranked_order(&self) -> Vec<u32> {
        // Each mention takes the next `seq` for the one anchor it names, so no two anchors
        // share `last`: "repeated first, then most recent" is one number per anchor (ties by
        // text never arise), and the lists sort as plain numbers.
        let key =
            |a: &Anchor| u64::from(a.count < 2) << 63 | (u64::MAX >> 1).saturating_sub(a.last);
        let mut user: Vec<(u64, u32)> = Vec::new();
        let mut queues: Vec<Vec<(u64, u32)>> = vec![Vec::new(); KIND_TURNS.len()];
        for (i, a) in self.anchors.iter().enumerate() {
            if a.user {
                user.push((key(a), i as u32));
            } else {
                let k = KIND_TURNS.iter().position(|&k| k == a.kind).unwrap_or(0);
                // Reversed, so that taking the best is a pop.
                queues[k].push((!key(a), i as u32));
            }
        }
        user.sort_unstable();
        for q in &mut queues {
            q.sort_unstable();
        }
        let mut out: Vec<u32> = user.into_iter().map(|(_, i)| i).collect();
        out.reserve(self.anchors.len() - out.len());
        while out.len() < self.anchors.len() {
            for q in &mut queues {
                if let Some((_, i)) = q.pop() {
                    out.push(i);
                }
            }
        }
        out
    }

    /// Every anchor, in first-seen order (the positions [`AnchorIndex::ranked_order`] gives).
    pub fn all(&self) -> &[Anchor] {
        &self.anchors
    }

    /// Anchors harvested from the region itself (not only carried), in first-seen order.
    pub fn harvested(&self) -> impl Iterator<Item = &Anchor> {
        self.anchors.iter().filter(|a| !a.carried)
    }

    /// Keeps the anchors `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&Anchor) -> bool) {
        self.anchors.retain(|a| keep(a));
        self.at.clear();
        for (i, a) in self.anchors.iter().enumerate() {
            let mut key = hash(&a.text);
            while self.at.contains_key(&key) {
                key = key.wrapping_add(1);
            }
            self.at.insert(key, i as u32);
        }
    }

    /// `[{kind, text, user, count}]`, best first, at most [`MAX_CARRIED`]: what a compaction
    /// stores under `details.anchors` for the next one to carry.
    pub fn details_json(&self) -> Value {
        AnchorIndex::details_json_of(&self.ranked())
    }

    /// [`AnchorIndex::details_json`] of anchors already ranked.
    pub fn details_json_of(ranked: &[&Anchor]) -> Value {
        Value::Array(
            ranked
                .iter()
                .take(MAX_CARRIED)
                .map(|a| {
                    crate::support::json::object(vec![
                        ("kind", a.kind.as_str().into()),
                        ("text", a.text.as_str().into()),
                        ("user", a.user.into()),
                        ("count", a.count.into()),
                    ])
                })
                .collect(),
        )
    }
}

/// Where `tag` (which starts with `<`) first occurs in `text`: a look at each `<` (memchr's
/// vector search for the byte), with no searcher built per text as `memmem::find` builds.
fn find_tag(text: &[u8], tag: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'<', text).find(|&at| text[at..].starts_with(tag))
}

/// The map key of an anchor's text.
fn hash(text: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    h.write(text.as_bytes());
    h.finish()
}

/// Where a text of a message comes from, which says what is harvested from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Harvested word by word with this scope.
    Text(Scope),
    /// An error's text: its first line is an anchor.
    Error,
    /// A command's output: its first error-looking line is an anchor.
    Output,
}

const USER: Scope = Scope {
    user: true,
    symbols: false,
};
const PLAIN: Scope = Scope {
    user: false,
    symbols: false,
};
const ARGUMENTS: Scope = Scope {
    user: false,
    symbols: true,
};

/// Calls `f` with each text of `message` the model reads and where it comes from: the user's
/// text; assistant text and tool-call arguments (string values, nested ones included; calls
/// hidden by `contextOmitted` left out, as file operations leave them, spec: compaction
/// §10.8); tool results and command outputs (an error's first line; an output's first error
/// line); custom messages, file mentions' paths, branch summaries; a compaction summary and
/// its text blocks (an archive's text). Reasoning is left out: the model does not read it back.
pub fn for_each_text(message: &AgentMessage, f: &mut dyn FnMut(&str, Source)) {
    let content = |c: &Content, scope: Scope, f: &mut dyn FnMut(&str, Source)| match c {
        Content::Text(t) => f(t, Source::Text(scope)),
        Content::Blocks(blocks) => {
            for b in blocks {
                if let ContentBlock::Text { text } = b {
                    f(text, Source::Text(scope));
                }
            }
        }
    };
    match message {
        AgentMessage::User(m) => content(&m.content, USER, f),
        AgentMessage::Developer(m) => content(&m.content, PLAIN, f),
        AgentMessage::Assistant(m) => {
            for b in m.blocks().iter() {
                match b {
                    ContentBlock::Text { text } => f(text, Source::Text(PLAIN)),
                    ContentBlock::ToolCall {
                        arguments,
                        context_omitted: false,
                        ..
                    } => each_string(arguments, 0, &mut |s| f(s, Source::Text(ARGUMENTS))),
                    _ => {}
                }
            }
            if let Some(e) = &m.error_message {
                f(e, Source::Error);
            }
        }
        AgentMessage::ToolResult(m) => {
            if crate::session::message::truthy(m.context_omitted.as_ref()) {
                return;
            }
            content(&m.content, PLAIN, f);
            // The whole text, borrowed when it is one piece (most results are).
            let text: std::borrow::Cow<'_, str> = match &m.content {
                Content::Text(t) => t.as_str().into(),
                Content::Blocks(b) => match b.as_slice() {
                    [ContentBlock::Text { text }] => text.as_str().into(),
                    _ => m.content.text().into(),
                },
            };
            f(
                &text,
                if m.is_error {
                    Source::Error
                } else {
                    Source::Output
                },
            );
        }
        AgentMessage::BashExecution(m) => {
            if m.exclude_from_context {
                return;
            }
            f(&m.command, Source::Text(ARGUMENTS));
            f(&m.output, Source::Text(PLAIN));
            f(&m.output, Source::Output);
        }
        AgentMessage::PythonExecution(m) => {
            if m.exclude_from_context {
                return;
            }
            f(&m.code, Source::Text(ARGUMENTS));
            f(&m.output, Source::Text(PLAIN));
            f(&m.output, Source::Output);
        }
        AgentMessage::FileMention(m) => {
            for file in &m.files {
                f(&file.path, Source::Text(PLAIN));
            }
        }
        AgentMessage::Custom(m) => content(&m.content, PLAIN, f),
        AgentMessage::BranchSummary(m) => f(&m.summary, Source::Text(PLAIN)),
        AgentMessage::CompactionSummary(m) => {
            f(&m.summary, Source::Text(PLAIN));
            for b in m.blocks.iter().flatten() {
                if let ContentBlock::Text { text } = b {
                    f(text, Source::Text(PLAIN));
                }
            }
        }
        AgentMessage::Other => {}
    }
}

/// The string values of a JSON value, depth-first, at most 8 levels deep.
fn each_string(v: &Value, depth: u32, f: &mut dyn FnMut(&str)) {
    if depth > 8 {
        return;
    }
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| each_string(x, depth + 1, f)),
        Value::Object(o) => o.values().for_each(|x| each_string(x, depth + 1, f)),
        _ => {}
    }
}

/// Calls `f` with each text of the message of entry `i` as [`for_each_text`] gives them for
/// its typed message, read in place from the session's JSON through the transcript's view
/// ([`MsgView`]; issue 42: no typed parse, no owned copy of a text that has no escape): a
/// `message` entry of role user, developer, assistant or tool result that the view reads. A
/// message the typed reading refuses (its `content` of the wrong type) gives nothing, as the
/// typed path skips it. False, with nothing called, for any other entry: read it typed.
pub(crate) fn texts_in_place(session: &Session, i: usize, f: &mut dyn FnMut(&str, Source)) -> bool {
    let Some(role) = in_place_role(session, i) else {
        return false;
    };
    let Some(json) = session.message_json(i) else {
        return false;
    };
    let Some(m) = MsgView::of_json(json.as_bytes()) else {
        return false;
    };
    texts_of_view(role, &m, f);
    true
}

/// The texts of a message of `role` read through its view `m` ([`texts_in_place`]).
fn texts_of_view(role: Role, m: &MsgView<'_>, f: &mut dyn FnMut(&str, Source)) {
    if m.mistyped || (role == Role::ToolResult && m.omitted) {
        return;
    }
    let scope = if role == Role::User { USER } else { PLAIN };
    // The content as blocks: a string is one text block (a text block without a string
    // `text` reads as empty).
    let one;
    let blocks: &[BlockView] = match &m.content {
        ViewContent::Text(t) => {
            one = [BlockView {
                kind: Some("text".into()),
                text: Some(t.as_ref().into()),
                ..BlockView::default()
            }];
            &one
        }
        ViewContent::Blocks(b) => b,
        ViewContent::Other => &[],
    };
    // A tool result's whole text: its text blocks joined, borrowed when it is one piece.
    let mut whole: std::borrow::Cow<'_, str> = "".into();
    for b in blocks {
        match b.kind.as_deref() {
            Some("text") => {
                let t = b.text.as_deref().unwrap_or("");
                f(t, Source::Text(scope));
                if whole.is_empty() {
                    whole = t.into();
                } else {
                    whole.to_mut().push_str(t);
                }
            }
            Some("toolCall") if role == Role::Assistant && !b.omitted => {
                if let Some(args) = &b.arguments {
                    each_string(&args.value(), 0, &mut |s| f(s, Source::Text(ARGUMENTS)));
                }
            }
            _ => {}
        }
    }
    match role {
        Role::Assistant => {
            if let Some(e) = &m.error_message {
                f(e, Source::Error);
            }
        }
        Role::ToolResult => f(
            &whole,
            if m.is_error == Some(true) {
                Source::Error
            } else {
                Source::Output
            },
        ),
        _ => {}
    }
}

/// The model's visible text (as [`visible_text`]) of the messages of `entries`, read in
/// place where [`texts_in_place`] can, typed otherwise; unreadable messages are skipped.
pub(crate) fn visible_text_of(session: &Session, entries: &[usize]) -> String {
    let mut out = String::new();
    let mut push = |t: &str, source: Source| {
        if matches!(source, Source::Text(_)) {
            out.push_str(t);
            out.push('\n');
        }
    };
    for &i in entries {
        if !texts_in_place(session, i, &mut push) {
            if let Ok(Some(m)) = session.entry_message(i) {
                for_each_text(&m, &mut push);
            }
        }
    }
    out
}

/// Checks the in-place reading of the anchor index ([`texts_in_place`]) against the typed one
/// over every entry of `s` in file order: each entry's texts and sources, the index of all
/// entries (each anchor's kind, text, who stated it, count and rank) and the visible text.
/// The number of entries read in place, or the first difference.
pub fn verify_in_place_anchors(s: &Session) -> std::result::Result<usize, String> {
    let mut in_place = 0;
    for i in 0..s.len() {
        let mut got: Vec<(String, Source)> = Vec::new();
        if !texts_in_place(s, i, &mut |t, source| got.push((t.to_string(), source))) {
            continue;
        }
        in_place += 1;
        let mut want: Vec<(String, Source)> = Vec::new();
        if let Ok(Some(m)) = s.entry_message(i) {
            for_each_text(&m, &mut |t, source| want.push((t.to_string(), source)));
        }
        if got != want {
            return Err(format!("entry {i}: read in place {got:?}, typed {want:?}"));
        }
    }
    let all: Vec<usize> = (0..s.len()).collect();
    let mut fast = AnchorIndex::new();
    fast.add_entries(s, &all);
    let mut typed = AnchorIndex::new();
    for &i in &all {
        typed.add_typed_entry(s, i);
    }
    let listed = |ix: &AnchorIndex| -> Vec<(AnchorKind, String, bool, u32)> {
        ix.ranked()
            .iter()
            .map(|a| (a.kind, a.text.clone(), a.user, a.count))
            .collect()
    };
    if listed(&fast) != listed(&typed) {
        return Err(format!(
            "the indexes differ: {:?} against {:?}",
            listed(&fast),
            listed(&typed)
        ));
    }
    let messages: Vec<AgentMessage> = all
        .iter()
        .filter_map(|&i| s.entry_message(i).ok().flatten())
        .collect();
    if visible_text_of(s, &all) != visible_text(&messages) {
        return Err("the visible texts differ".into());
    }
    Ok(in_place)
}

/// All text the model reads of `messages`, joined by line breaks: the haystack that says
/// whether an identifier is still in view.
pub fn visible_text<'m>(messages: impl IntoIterator<Item = &'m AgentMessage>) -> String {
    let mut out = String::new();
    for m in messages {
        for_each_text(m, &mut |t, source| {
            if matches!(source, Source::Text(_)) {
                out.push_str(t);
                out.push('\n');
            }
        });
    }
    out
}

/// Estimated tokens of a text (the library's rule of thumb: 4 UTF-16 units a token, spec:
/// compaction §3.1).
fn text_tokens(text: &str) -> u64 {
    (text.encode_utf16().count() as u64).div_ceil(4)
}

/// The block written for the model: the prompt's preamble, then one `- kind: text` line per
/// anchor, best first, leaving out those `seen` accepts (already in view) and those a line
/// already in the block holds (the code and the SHA of an error line), as many as fit in
/// `budget` tokens. `None` when the budget is 0 or no anchor is left. Returns the block and
/// the anchors it holds.
pub fn anchor_block<'a>(
    ranked: &[&'a Anchor],
    seen: impl Fn(&str) -> bool,
    budget: u64,
) -> Option<(String, Vec<&'a Anchor>)> {
    let preamble = crate::prompts::ANCHORS.trim_end();
    let mut block = format!("{OPEN}\n{preamble}\n");
    // Where the lines start: the preamble's own words do not count as holding an anchor.
    let lines_from = block.len();
    let closing = CLOSE.len() as u64;
    let mut held = Vec::new();
    for a in ranked {
        // In view already, or inside a line of the block (a SHA or code within an error line).
        let in_a_line =
            memchr::memmem::find(&block.as_bytes()[lines_from..], a.text.as_bytes()).is_some();
        if seen(&a.text) || in_a_line {
            continue;
        }
        let line = format!("- {}: {}\n", a.kind.as_str(), a.text);
        let after = text_tokens(&block) + text_tokens(&line) + closing.div_ceil(4) + 1;
        if after > budget {
            // A shorter line further down may still fit.
            continue;
        }
        block.push_str(&line);
        held.push(*a);
    }
    if held.is_empty() {
        return None;
    }
    block.push_str(CLOSE);
    Some((block, held))
}

/// `text` without any `<anchors>` block (one an LLM copied from the previous summary) and
/// with `block` appended after a blank line. Without a block, only the removal.
pub fn upsert_anchor_block(text: &str, block: Option<&str>) -> String {
    let mut out = String::with_capacity(text.len() + block.map_or(0, str::len) + 2);
    let mut rest = text;
    while let Some(open) = rest.find(OPEN) {
        let Some(close) = rest[open..].find(CLOSE) else {
            break;
        };
        out.push_str(&rest[..open]);
        rest = &rest[open + close + CLOSE.len()..];
    }
    out.push_str(rest);
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    if let Some(block) = block {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(block);
    }
    out
}

/// Anchors of `session`'s `entries`, seeded from `carried` (the previous compaction's
/// `details`, when it contributes).
pub fn harvest_region(
    session: &Session,
    carried: Option<&Value>,
    entries: &[usize],
) -> Result<AnchorIndex> {
    let mut index = AnchorIndex::new();
    if let Some(d) = carried {
        index.add_details(d);
    }
    index.add_entries(session, entries);
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> AgentMessage {
        AgentMessage::parse(&json!({"role": "user", "content": text}).to_string(), None)
            .expect("message")
    }

    fn assistant_call(args: Value) -> AgentMessage {
        AgentMessage::parse(
            &json!({"role": "assistant", "content": [
                {"type": "text", "text": "Looking at src/b.rs"},
                {"type": "toolCall", "id": "c1", "name": "grep", "arguments": args},
                {"type": "thinking", "thinking": "secret/path.rs"}
            ]})
            .to_string(),
            None,
        )
        .expect("message")
    }

    fn texts(index: &AnchorIndex) -> Vec<String> {
        index.ranked().into_iter().map(|a| a.text.clone()).collect()
    }

    #[test]
    fn ranking_user_then_kinds_in_turn_each_repeated_then_recent() {
        let mut ix = AnchorIndex::new();
        ix.add(AnchorKind::Path, "old/a.rs", false);
        ix.add(AnchorKind::Path, "twice/b.rs", false);
        ix.add(AnchorKind::Hex, "abc1234", false);
        ix.add(AnchorKind::Path, "twice/b.rs", false);
        ix.add(AnchorKind::Number, "8080", true);
        ix.add(AnchorKind::Path, "new/c.rs", false);
        ix.add(AnchorKind::Hex, "def5678", false);
        ix.add(AnchorKind::Url, "https://x.dev/1", false);
        // The user's first; then an id, the URL and a path take turns (ids before paths),
        // each kind's own best first: repeated, then recent.
        assert_eq!(
            texts(&ix),
            [
                "8080",
                "def5678",
                "https://x.dev/1",
                "twice/b.rs",
                "abc1234",
                "new/c.rs",
                "old/a.rs"
            ]
        );
        // Deduplicated: one entry per text, the count of its mentions.
        assert_eq!(ix.len(), 7);
        assert_eq!(ix.ranked()[3].count, 2);
    }

    #[test]
    fn a_kind_held_by_the_hundred_does_not_crowd_out_the_others() {
        let mut ix = AnchorIndex::new();
        ix.add(
            AnchorKind::ErrorLine,
            "error[E5402]: connection reset",
            false,
        );
        ix.add(AnchorKind::Hex, "16c43069c43a", false);
        for n in 0..500 {
            let p = format!("src/mod_{}.ts", n % 40);
            ix.add(AnchorKind::Path, &p, false);
        }
        let top: Vec<&str> = ix
            .ranked()
            .iter()
            .take(3)
            .map(|a| a.text.as_str())
            .collect();
        assert_eq!(top[..2], ["error[E5402]: connection reset", "16c43069c43a"]);
        assert!(top[2].starts_with("src/mod_"));
        // Every anchor once, whatever the turns.
        assert_eq!(ix.ranked().len(), ix.len());
    }

    #[test]
    fn a_region_past_the_harvest_budget_keeps_its_users_and_newest_messages() {
        use crate::session::LoadOptions;
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;
        let mut s = Session::load(header.as_bytes().to_vec(), LoadOptions::default()).unwrap();
        let mut ids = Vec::new();
        let mut push = |s: &mut Session, m: serde_json::Value| {
            s.append_message(m, 0).unwrap();
            ids.push(s.leaf().unwrap());
        };
        push(
            &mut s,
            json!({"role": "user", "content": "deploy to port 6432"}),
        );
        // 24 assistant turns of 100 KB, each naming its own commit: 2.4 MB, past the budget.
        let filler = "lorem ipsum ".repeat(100_000 / 12);
        for n in 0..24 {
            let text = format!("commit {:07x}f00d done\n{filler}", 0xabc0000 + n);
            push(
                &mut s,
                json!({"role": "assistant", "content": [{"type": "text", "text": text}],
                    "provider": "p", "model": "m", "stopReason": "stop",
                    "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}),
            );
        }
        let mut ix = AnchorIndex::new();
        ix.add_region(&s, &[&ids[..10], &ids[10..]]);
        let got = texts(&ix);
        assert!(
            got.iter().any(|t| t == "6432"),
            "the user's, however old: {got:?}"
        );
        let commit = |n: u32| format!("{:07x}f00d", 0xabc0000 + n);
        assert!(got.contains(&commit(23)), "the newest");
        assert!(!got.contains(&commit(0)), "the oldest is past the budget");
        let read: usize = (0..24).filter(|&n| got.contains(&commit(n))).count();
        assert!(
            read * 100_000 <= HARVEST_BYTES && read >= 8,
            "{read} turns read"
        );
        // A region within the budget is read whole, as `add_entries` reads it.
        let mut whole = AnchorIndex::new();
        whole.add_region(&s, &[&ids[..3]]);
        let mut plain = AnchorIndex::new();
        plain.add_entries(&s, &ids[..3]);
        assert_eq!(texts(&whole), texts(&plain));
    }

    #[test]
    fn messages_by_role() {
        let mut ix = AnchorIndex::new();
        ix.add_message(&user("Use port 8080 and keep \"--frozen\"; see #38"));
        ix.add_message(&assistant_call(
            json!({"pattern": "fn harvest_text", "path": "src/summary/"}),
        ));
        let tr = AgentMessage::parse(
            &json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                "content": [{"type": "text", "text": "\n  error: cannot find ENOENT\nmore 4242"}],
                "isError": true})
            .to_string(),
            None,
        )
        .expect("message");
        ix.add_message(&tr);
        let got = texts(&ix);
        for want in [
            "8080",
            "--frozen",
            "#38",
            "harvest_text",
            "src/summary/",
            "src/b.rs",
            "ENOENT",
            "error: cannot find ENOENT",
        ] {
            assert!(got.iter().any(|g| g == want), "{want} missing from {got:?}");
        }
        // Reasoning is not read; numbers count only from the user.
        assert!(!got.iter().any(|g| g == "secret/path.rs" || g == "4242"));
        let user_stated: Vec<&str> = ix
            .ranked()
            .into_iter()
            .filter(|a| a.user)
            .map(|a| a.text.as_str())
            .collect();
        // Quoted strings are read after the words of the same text.
        assert_eq!(user_stated, ["--frozen", "#38", "8080"]);
    }

    #[test]
    fn details_round_trip_and_carry() {
        let mut ix = AnchorIndex::new();
        ix.add(AnchorKind::Path, "a/b.rs", true);
        ix.add(AnchorKind::Hex, "abc1234", false);
        ix.add(AnchorKind::Hex, "abc1234", false);
        let details = json!({"readFiles": [], DETAILS_KEY: ix.details_json()});
        let mut next = AnchorIndex::new();
        next.add_details(&details);
        assert_eq!(texts(&next), texts(&ix));
        assert!(next.ranked().iter().all(|a| a.carried));
        assert_eq!(next.ranked()[1].count, 2);
        // Seen again: no longer only carried, one more mention, and the most recent.
        next.add(AnchorKind::Hex, "abc1234", false);
        next.add(AnchorKind::Path, "z.rs", false);
        assert_eq!(next.harvested().count(), 2);
        assert_eq!(next.ranked()[1].count, 3);
        // Malformed items are skipped.
        let mut bad = AnchorIndex::new();
        bad.add_details(
            &json!({DETAILS_KEY: [1, {"kind": "nope", "text": "x"}, {"kind": "path"},
            {"kind": "path", "text": "ok.rs", "count": -3}]}),
        );
        assert_eq!(texts(&bad), ["ok.rs"]);
    }

    #[test]
    fn block_budget_and_visibility() {
        let mut ix = AnchorIndex::new();
        for i in 0..500 {
            ix.add(AnchorKind::Path, &format!("src/module_{i}/file.rs"), false);
        }
        let ranked = ix.ranked();
        let (block, held) = anchor_block(&ranked, |_| false, 1_000).expect("a block");
        assert!(text_tokens(&block) <= 1_000, "{}", text_tokens(&block));
        assert!(held.len() > 10 && held.len() < 500);
        assert!(block.starts_with("<anchors>\n") && block.ends_with("</anchors>"));
        // What the model still sees is not repeated.
        let (block, held) =
            anchor_block(&ranked, |t| t == "src/module_499/file.rs", 1_000).expect("a block");
        assert!(!block.contains("module_499/"));
        assert_eq!(held[0].text, "src/module_498/file.rs");
        assert!(anchor_block(&ranked, |_| false, 0).is_none());
        assert!(anchor_block(&ranked, |_| true, 1_000).is_none());
    }

    #[test]
    fn what_a_line_of_the_block_holds_gets_no_line_of_its_own() {
        let mut ix = AnchorIndex::new();
        ix.add(AnchorKind::Hex, "16c43069c43a", false);
        ix.add(AnchorKind::ErrorCode, "E5402", false);
        ix.add(
            AnchorKind::ErrorLine,
            "error[E5402]: reset at 16c43069c43a",
            false,
        );
        ix.add(AnchorKind::Url, "https://x.dev/1", false);
        let ranked = ix.ranked();
        let (block, held) = anchor_block(&ranked, |_| false, 1_000).expect("a block");
        let texts: Vec<&str> = held.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(
            texts,
            ["error[E5402]: reset at 16c43069c43a", "https://x.dev/1"],
            "{block}"
        );
    }

    #[test]
    fn a_word_of_the_preamble_still_gets_its_line() {
        let mut ix = AnchorIndex::new();
        // The user quoted a word the preamble also uses.
        ix.add(AnchorKind::Quoted, "exactly", true);
        let ranked = ix.ranked();
        let (block, held) = anchor_block(&ranked, |_| false, 1_000).expect("a block");
        assert_eq!(held.len(), 1, "{block}");
        assert!(block.contains("- quote: exactly"), "{block}");
    }

    #[test]
    fn a_block_inside_a_text_is_read_back_with_its_kinds() {
        let mut ix = AnchorIndex::new();
        let doc = "# Handoff\nWe fixed the deploy.\n\n<anchors>\nExact identifiers.\n\
                   - number: 48218\n- quote: --retry-budget-8ff4\n- path: feature/r1-9b6f77\n\
                   - nonsense line\n- unknown: x\n</anchors>\nafter 9999";
        ix.add_text(doc, PLAIN);
        let got: Vec<(AnchorKind, &str, bool)> = ix
            .ranked()
            .iter()
            .map(|a| (a.kind, a.text.as_str(), a.user))
            .collect();
        assert_eq!(
            got,
            [
                (AnchorKind::Quoted, "--retry-budget-8ff4", true),
                (AnchorKind::Number, "48218", true),
                (AnchorKind::Path, "feature/r1-9b6f77", false),
            ]
        );
    }

    #[test]
    fn upsert_replaces_a_copied_block() {
        let s = upsert_anchor_block(
            "Summary.\n\n<anchors>\nold\n</anchors>\n",
            Some("<anchors>\nnew\n</anchors>"),
        );
        assert_eq!(s, "Summary.\n\n<anchors>\nnew\n</anchors>");
        assert_eq!(upsert_anchor_block("Summary.", None), "Summary.");
        // An unclosed tag is left as it is.
        assert_eq!(
            upsert_anchor_block("a <anchors> b", Some("B")),
            "a <anchors> b\n\nB"
        );
    }

    #[test]
    fn colliding_keys_stay_apart() {
        let mut ix = AnchorIndex::new();
        ix.add(AnchorKind::Path, "a.rs", false);
        // Occupy the key `b.rs` would probe next, then add it: both found again.
        let key = hash("b.rs");
        ix.at.insert(key, 0);
        ix.add(AnchorKind::Path, "b.rs", false);
        ix.add(AnchorKind::Path, "b.rs", false);
        ix.add(AnchorKind::Path, "a.rs", false);
        assert_eq!(ix.len(), 2);
        assert!(ix.ranked().iter().all(|a| a.count == 2));
        ix.retain(|a| a.text == "b.rs");
        ix.add(AnchorKind::Path, "b.rs", false);
        assert_eq!(ix.ranked()[0].count, 3);
    }

    /// [`AnchorIndex::ranked_order`] as it sorted before issue 42 (by the tuple, text last):
    /// the oracle of `ranked_order_equals_the_tuple_sort`.
    fn ranked_order_reference(ix: &AnchorIndex) -> Vec<u32> {
        let order = |a: &(u32, &Anchor), b: &(u32, &Anchor)| {
            let (a, b) = (a.1, b.1);
            (a.count < 2, std::cmp::Reverse(a.last), &a.text).cmp(&(
                b.count < 2,
                std::cmp::Reverse(b.last),
                &b.text,
            ))
        };
        let numbered = ix.anchors.iter().enumerate().map(|(i, a)| (i as u32, a));
        let mut user: Vec<(u32, &Anchor)> = numbered.clone().filter(|(_, a)| a.user).collect();
        user.sort_by(order);
        let mut queues: Vec<Vec<(u32, &Anchor)>> = vec![Vec::new(); KIND_TURNS.len()];
        for (i, a) in numbered.filter(|(_, a)| !a.user) {
            let k = KIND_TURNS.iter().position(|&k| k == a.kind).unwrap_or(0);
            queues[k].push((i, a));
        }
        for q in &mut queues {
            q.sort_by(|a, b| order(b, a));
        }
        let mut out: Vec<u32> = user.into_iter().map(|(i, _)| i).collect();
        while out.len() < ix.anchors.len() {
            for q in &mut queues {
                if let Some((i, _)) = q.pop() {
                    out.push(i);
                }
            }
        }
        out
    }

    #[test]
    fn ranked_order_equals_the_tuple_sort() {
        let mut state: u64 = 0x853c_49e6_748f_ea9b;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for round in 0..300 {
            let mut ix = AnchorIndex::new();
            if next(3) == 0 {
                // Carried anchors first, as a plan seeds them.
                let items: Vec<Value> = (0..next(20))
                    .map(|n| {
                        serde_json::json!({"kind": AnchorKind::ALL[(n % 10) as usize].as_str(),
                            "text": format!("c{}", next(15)), "user": next(2) == 0,
                            "count": next(4)})
                    })
                    .collect();
                ix.add_details(&serde_json::json!({ DETAILS_KEY: items }));
            }
            for _ in 0..next(120) {
                let kind = AnchorKind::ALL[next(10) as usize];
                ix.add(kind, &format!("t{}", next(40)), next(4) == 0);
            }
            if next(4) == 0 {
                ix.retain(|a| a.text.len() % 2 == 0);
            }
            assert_eq!(
                ix.ranked_order(),
                ranked_order_reference(&ix),
                "round {round}"
            );
        }
    }

    /// [`AnchorIndex::add_text`] as it found its tags before issue 42 (a `memmem` search for
    /// each): the oracle of `add_text_reads_the_same_blocks`.
    fn add_text_reference(ix: &mut AnchorIndex, text: &str, scope: Scope) {
        if memchr::memmem::find(text.as_bytes(), b"<files>\n").is_some() {
            for path in crate::summary::fileops::listed_paths(text) {
                ix.add(AnchorKind::Path, &path, scope.user);
            }
        }
        let mut rest = text;
        while let Some(open) = memchr::memmem::find(rest.as_bytes(), OPEN.as_bytes()) {
            let body = &rest[open + OPEN.len()..];
            let Some(close) = body.find(CLOSE) else {
                break;
            };
            ix.add_text_and_block(&rest[..open], &body[..close], scope);
            rest = &body[close + CLOSE.len()..];
        }
        harvest_text(rest, scope, &mut |kind, t| ix.add(kind, t, scope.user));
    }

    #[test]
    fn add_text_reads_the_same_blocks() {
        const PIECES: [&str; 14] = [
            "<files>\n",
            "<files>",
            "<anchors>",
            "<anchors>\n",
            "</anchors>",
            "- path: a/b.rs\n",
            "- number: 4242\n",
            "src/\n  c.rs\n",
            "</files>\n",
            "x ",
            "<",
            "deadbeef1 ",
            "\n",
            "#12 ",
        ];
        let mut state: u64 = 0xda94_2042_e4dd_58b5;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..3_000 {
            let text: String = (0..next(16))
                .map(|_| PIECES[next(PIECES.len() as u64) as usize])
                .collect();
            for scope in [PLAIN, USER] {
                let mut got = AnchorIndex::new();
                got.add_text(&text, scope);
                let mut want = AnchorIndex::new();
                add_text_reference(&mut want, &text, scope);
                assert_eq!(got, want, "{text:?}");
            }
        }
    }

    #[test]
    fn find_tag_equals_memmem() {
        for text in [
            "",
            "<",
            "<files>",
            "a <files>\n b",
            "<<files>\n",
            "<anchors <anchors>x<anchors>",
            "x<file<files>\n<anchors>",
            "é<anchors>é",
        ] {
            for tag in ["<files>\n", OPEN] {
                assert_eq!(
                    find_tag(text.as_bytes(), tag.as_bytes()),
                    memchr::memmem::find(text.as_bytes(), tag.as_bytes()),
                    "{text:?} {tag:?}"
                );
            }
        }
    }

    #[test]
    fn tags_and_long_lines_are_never_anchors() {
        let mut ix = AnchorIndex::new();
        ix.add(AnchorKind::Quoted, "x</anchors>y", true);
        ix.add(AnchorKind::Quoted, "a\nb", true);
        ix.add(AnchorKind::Quoted, &"x".repeat(MAX_ANCHOR_BYTES + 1), true);
        assert!(ix.is_empty());
    }
}
