//! The journal's record of rewrites (spec: compaction §1, §6.7): which line each edit
//! generation touched. The session holds one; the changes it gives are worked out in
//! `journal.rs`, which reads the session's lines.

use std::sync::atomic::{AtomicU64, Ordering};

/// Rewrites tracked before the older half is forgotten (a mark from before them gives a reset).
const TRACKED: usize = 1 << 20;

/// Names session objects in marks, for a core built without a host to draw random nonces.
static NEXT_NONCE: AtomicU64 = AtomicU64::new(1);

/// Which lines the rewrites of the tracked generations touched.
#[derive(Debug, Clone)]
pub(crate) struct Journal {
    /// Names this session object in its marks: a mark of another session gives a reset.
    pub(super) nonce: u64,
    /// The generation the records start after.
    pub(super) base: u64,
    /// `rewrites[k]` is the line rewritten by generation `base + k + 1`.
    pub(super) rewrites: Vec<u32>,
    /// The line count of the file as loaded, when the load rewrote none of its lines (a
    /// store holding the loaded bytes can go on from there).
    pub(super) loaded: Option<u32>,
}

impl Default for Journal {
    fn default() -> Journal {
        Journal {
            nonce: NEXT_NONCE.fetch_add(1, Ordering::Relaxed),
            base: 0,
            rewrites: Vec::new(),
            loaded: None,
        }
    }
}

impl Journal {
    /// Records that generation `generation` rewrote `line`.
    pub(crate) fn rewritten(&mut self, generation: u64, line: usize) {
        if generation != self.base + self.rewrites.len() as u64 + 1 {
            // Out of step (cannot happen while every rewrite is recorded): track afresh.
            self.base = generation.saturating_sub(1);
            self.rewrites.clear();
            self.loaded = None;
        }
        if self.rewrites.len() >= TRACKED {
            let half = TRACKED / 2;
            self.rewrites.drain(..half);
            self.base += half as u64;
        }
        self.rewrites.push(line as u32);
    }
}
