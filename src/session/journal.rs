//! The change journal (spec: compaction §1 session model, §6.7 pruning rewrites stored lines):
//! what changed in the session's file since a mark, so that a store can save a turn at the
//! cost of the turn instead of writing the whole file again.
//!
//! The file is a list of lines. Lines are never removed or moved: an append adds lines at the
//! end, and a rewrite (a prune, a shake, a compaction's `tokensAfter`, a label field) replaces
//! one line's text in place and moves the edit generation by one. The journal keeps, for the
//! generations since the oldest one it still tracks, which line each rewrite touched: the
//! changes since a mark (a generation and a line count) are the lines rewritten in the
//! generations after it, below its line count, and the lines after its line count. Nothing
//! reads the whole file.
//!
//! Line model: a store's file is the lines joined by `\n`, with a final `\n`. A line's text is
//! what lies between two line breaks, so a `\r` before a `\n` stays part of the line and
//! `\r\n` files round-trip; a byte order mark is part of line 0's text. A file loaded without
//! its final `\n` is the one difference: a store that writes the lines has the final `\n`
//! (`to_bytes` has it too as soon as a line is appended). Bytes that are not UTF-8 (the loader
//! warns about such lines) are given as U+FFFD: keep such a file with `to_bytes`.

use crate::session::lines::{bom_len, BOM};
use crate::session::model::Session;
use std::borrow::Cow;

/// What changed in the file since a mark ([`Session::changes`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Changes<'a> {
    /// The mark the changes start from (`None`: from nothing, the whole file).
    pub since: Option<String>,
    /// The mark of the file with the changes applied.
    pub mark: String,
    /// The store drops what it holds and writes `appended` as the whole file.
    pub reset: bool,
    /// Lines rewritten in place (index, new text without its line break), in index order.
    pub rewritten: Vec<(u32, Cow<'a, str>)>,
    /// Lines after the mark's last line, in order.
    pub appended: Vec<Cow<'a, str>>,
    /// The file's line count once applied.
    pub line_count: u32,
}

/// A mark's parts: (nonce, generation, line count).
fn parse_mark(mark: &str) -> Option<(u64, u64, u32)> {
    let mut parts = mark.strip_prefix("j1.")?.split('.');
    let nonce = u64::from_str_radix(parts.next()?, 16).ok()?;
    let generation = parts.next()?.parse().ok()?;
    let lines = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((nonce, generation, lines))
}

impl Session {
    /// Names this session object in its marks (the wasm layer draws a random one, so that a
    /// mark kept from another process never matches).
    pub fn set_journal_nonce(&mut self, nonce: u64) {
        self.journal.nonce = nonce;
    }

    /// Starts the journal at the file as loaded; `clean`: the load rewrote no line.
    pub(super) fn start_journal(&mut self, clean: bool) {
        self.journal.base = self.generation;
        self.journal.rewrites.clear();
        self.journal.loaded = clean.then_some(self.lines.len() as u32);
    }

    fn mark_of(&self, generation: u64, lines: u32) -> String {
        format!("j1.{:x}.{generation}.{lines}", self.journal.nonce)
    }

    /// The mark of the file this session was loaded from, when the load wrote back none of its
    /// lines changed (no migration): a store holding those bytes passes it to the first
    /// [`Session::changes`]. `None` for a created session or a migrated file.
    pub fn load_mark(&self) -> Option<String> {
        let lines = self.journal.loaded?;
        (self.journal.base == 0).then(|| self.mark_of(0, lines))
    }

    /// The text of line `i` as a store writes it (a byte order mark belongs to line 0).
    fn stored_line(&self, i: usize) -> Cow<'_, str> {
        let text = self.line_text(i);
        if i == 0 && bom_len(&self.source) > 0 {
            let mut with = String::from_utf8_lossy(BOM).into_owned();
            with.push_str(&text);
            return Cow::Owned(with);
        }
        text
    }

    /// What changed since `since` (a mark an earlier call returned): the lines rewritten and
    /// the lines appended, and the mark to pass next. Applied to the file at `since` (see the
    /// module's line model), they give [`Session::to_bytes`]. Without a mark, or with one of
    /// another session or older than what is tracked, the changes are a reset: the whole
    /// file. Costs the size of the change.
    pub fn changes(&self, since: Option<&str>) -> Changes<'_> {
        let count = self.lines.len();
        let mark = self.mark_of(self.generation, count as u32);
        let from = since.and_then(parse_mark).filter(|&(nonce, g, n)| {
            nonce == self.journal.nonce
                && g >= self.journal.base
                && g <= self.generation
                && n >= 1
                && n as usize <= count
        });
        let Some((_, generation, lines)) = from else {
            return Changes {
                since: None,
                mark,
                reset: true,
                rewritten: Vec::new(),
                appended: (0..count).map(|i| self.stored_line(i)).collect(),
                line_count: count as u32,
            };
        };
        let skip = (generation - self.journal.base) as usize;
        let mut touched: Vec<u32> = self.journal.rewrites[skip..]
            .iter()
            .copied()
            .filter(|&l| l < lines)
            .collect();
        crate::support::sort::sort_by_key(&mut touched, |&l| l);
        touched.dedup();
        Changes {
            since: since.map(str::to_string),
            mark,
            reset: false,
            rewritten: touched
                .into_iter()
                .map(|l| (l, self.stored_line(l as usize)))
                .collect(),
            appended: (lines as usize..count)
                .map(|i| self.stored_line(i))
                .collect(),
            line_count: count as u32,
        }
    }
}

/// Applies `changes` to a store's file `before` (the lines joined by `\n` with a final `\n`,
/// or empty): the file a store holds afterwards. For tests, fuzzing and stores in Rust.
pub fn apply_changes(before: &[u8], changes: &Changes<'_>) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = if changes.reset || before.is_empty() {
        Vec::new()
    } else {
        let body = before.strip_suffix(b"\n").unwrap_or(before);
        body.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
    };
    for (i, text) in &changes.rewritten {
        if let Some(line) = lines.get_mut(*i as usize) {
            *line = text.as_bytes().to_vec();
        }
    }
    lines.extend(changes.appended.iter().map(|t| t.as_bytes().to_vec()));
    let mut out = lines.join(&b'\n');
    out.push(b'\n');
    out
}

/// `to_bytes` as a store that follows the journal holds it: with a final `\n`.
pub fn stored_bytes(session: &Session) -> Vec<u8> {
    let mut bytes = session.to_bytes();
    if bytes.last() != Some(&b'\n') {
        bytes.push(b'\n');
    }
    bytes
}
