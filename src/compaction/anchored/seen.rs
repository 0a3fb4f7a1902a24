//! What the model sees of a text, for the anchors it shows (every harvester's scope).

use crate::summary::anchors::harvest::{harvest_text, Scope};
use rustc_hash::FxHashSet;

/// What the model sees of `text`: its words (every harvester's scope) for quick lookups,
/// and the text itself for identifiers that are not one word.
pub(super) struct Haystack<'t> {
    words: FxHashSet<&'t str>,
    text: &'t str,
}

impl<'t> Haystack<'t> {
    pub(super) fn new(text: &'t str) -> Haystack<'t> {
        let mut words = FxHashSet::default();
        let scope = Scope {
            user: true,
            symbols: true,
        };
        harvest_text(text, scope, &mut |_, w| {
            words.insert(w);
        });
        Haystack { words, text }
    }

    pub(super) fn shows(&self, anchor: &str) -> bool {
        self.words.contains(anchor)
            || memchr::memmem::find(self.text.as_bytes(), anchor.as_bytes()).is_some()
    }
}
