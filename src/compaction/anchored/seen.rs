//! What the model sees of a text, for the anchors it shows (every harvester's scope).

use crate::summary::anchors::harvest::{harvest_text, Scope};
use rustc_hash::{FxHashMap, FxHashSet};

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

    /// [`Haystack::shows`] of each of `anchors` (the same answers, issue 42): a word of the
    /// text is looked up; the others of [`PREFIX`] bytes or more are searched together in
    /// one scan of the text (each position's first two bytes checked in a table of the
    /// anchors' first two, then its first [`PREFIX`] looked up), instead of one scan of the
    /// whole text for each; a shorter one is searched alone.
    pub(super) fn shows_each(&self, anchors: &[&str]) -> Vec<bool> {
        let mut seen: Vec<bool> = anchors.iter().map(|a| self.words.contains(a)).collect();
        // The anchors of each prefix, as a chain: the last one's position by prefix, then
        // `next` (the map's type is the anchor index's, whose code the .wasm has already).
        let mut heads: FxHashMap<u64, u32> = FxHashMap::default();
        let mut next = vec![u32::MAX; anchors.len()];
        let mut pairs = vec![0u64; (1 << 16) / 64];
        let mut left = 0;
        for (k, a) in anchors.iter().enumerate() {
            if seen[k] {
                continue;
            }
            let b = a.as_bytes();
            match b.first_chunk::<PREFIX>() {
                Some(head) => {
                    let pair = usize::from(head[0]) << 8 | usize::from(head[1]);
                    pairs[pair / 64] |= 1 << (pair % 64);
                    if let Some(after) = heads.insert(prefix_key(head), k as u32) {
                        next[k] = after;
                    }
                    left += 1;
                }
                None => seen[k] = memchr::memmem::find(self.text.as_bytes(), b).is_some(),
            }
        }
        let t = self.text.as_bytes();
        let mut at = 0;
        while left > 0 && at + PREFIX <= t.len() {
            let pair = usize::from(t[at]) << 8 | usize::from(t[at + 1]);
            if pairs[pair / 64] & (1 << (pair % 64)) != 0 {
                let head = t[at..].first_chunk::<PREFIX>().map(prefix_key);
                let mut k = head
                    .and_then(|h| heads.get(&h))
                    .copied()
                    .unwrap_or(u32::MAX);
                while let Some(&after) = next.get(k as usize) {
                    let a = k as usize;
                    if !seen[a] && t[at..].starts_with(anchors[a].as_bytes()) {
                        seen[a] = true;
                        left -= 1;
                    }
                    k = after;
                }
            }
            at += 1;
        }
        seen
    }
}

/// The bytes of an anchor [`Haystack::shows_each`] looks up at each position of the text.
const PREFIX: usize = 4;

/// The map key of a prefix.
fn prefix_key(head: &[u8; PREFIX]) -> u64 {
    u64::from(u32::from_le_bytes(*head))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Texts and anchors over a few letters, so that prefixes collide and anchors occur,
    /// overlap and repeat.
    fn text(len: std::ops::Range<usize>) -> impl Strategy<Value = String> {
        const ALPHABET: [&str; 9] = ["a", "b", "/", ".", " ", "\n", "é", "ab", "x1"];
        proptest::collection::vec(proptest::sample::select(&ALPHABET[..]), len)
            .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn shows_each_equals_a_substring_check(
            text in text(0..200),
            mut anchors in proptest::collection::vec(text(0..9), 0..30),
            slices in proptest::collection::vec((any::<usize>(), any::<usize>()), 5),
        ) {
            let hay = Haystack::new(&text);
            // Slices of the text itself, and its words.
            let chars: Vec<(usize, char)> = text.char_indices().collect();
            if chars.len() > 2 {
                for (a, b) in slices {
                    let a = a % chars.len();
                    let b = a + b % (chars.len() - a);
                    let end = chars.get(b).map_or(text.len(), |c| c.0);
                    anchors.push(text[chars[a].0..end].to_string());
                }
            }
            anchors.extend(text.split_whitespace().take(5).map(str::to_string));
            let refs: Vec<&str> = anchors.iter().map(String::as_str).collect();
            let want: Vec<bool> = refs.iter().map(|a| hay.shows(a)).collect();
            let naive: Vec<bool> = refs.iter().map(|a| text.contains(a)).collect();
            prop_assert_eq!(&want, &naive, "{:?}", text);
            prop_assert_eq!(hay.shows_each(&refs), want, "{:?} {:?}", text, refs);
        }
    }
}
