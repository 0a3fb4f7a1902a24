//! `dimStopwords`: print function words in dim ink so content words stand out (spec:
//! snapcompact §6.7).

use crate::render::text::unicode::{DIM_OFF, DIM_ON};
use crate::support::text::char_indices;

/// The 70 stopwords of the research renderer (spec: snapcompact §6.7), sorted.
const STOPWORDS: [&str; 70] = [
    "a", "about", "after", "also", "an", "and", "are", "as", "at", "be", "been", "before",
    "between", "but", "by", "could", "during", "each", "for", "from", "had", "has", "have", "he",
    "her", "his", "in", "into", "is", "it", "its", "more", "most", "not", "of", "on", "only", "or",
    "other", "over", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "to", "under", "was", "were",
    "when", "where", "which", "while", "who", "whom", "will", "with", "would",
];

/// Letters of a word: ASCII letters and the Latin-1 letters U+00C0–U+00FF except × and ÷.
fn is_letter(c: char) -> bool {
    c.is_ascii_alphabetic()
        || matches!(c, '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}' | '\u{F8}'..='\u{FF}')
}

fn is_stopword(word: &str) -> bool {
    if word.len() > 7 || !word.is_ascii() {
        return false;
    }
    let mut buf = [0u8; 7];
    let lower = &mut buf[..word.len()];
    lower.copy_from_slice(word.as_bytes());
    lower.make_ascii_lowercase();
    // ASCII in, ASCII out.
    let lower = std::str::from_utf8(lower).unwrap_or("");
    STOPWORDS.binary_search(&lower).is_ok()
}

/// Wraps every stopword outside dim spans in DIM_ON…DIM_OFF. Inside dim spans (an
/// unterminated DIM_ON dims to the end) nothing changes; only zero-width markers are added.
pub fn dim_stopwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut dim = false;
    let mut word_start: Option<usize> = None;
    let flush_word = |out: &mut String, word: &str| {
        if is_stopword(word) {
            out.push(DIM_ON);
            out.push_str(word);
            out.push(DIM_OFF);
        } else {
            out.push_str(word);
        }
    };
    for (i, c) in char_indices(text) {
        if !dim && is_letter(c) {
            word_start.get_or_insert(i);
            continue;
        }
        if let Some(s) = word_start.take() {
            flush_word(&mut out, &text[s..i]);
        }
        if c == DIM_ON {
            dim = true;
        } else if c == DIM_OFF {
            dim = false;
        }
        out.push(c);
    }
    if let Some(s) = word_start {
        flush_word(&mut out, &text[s..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(s: &str) -> String {
        s.replace(DIM_ON, "‹").replace(DIM_OFF, "›")
    }

    #[test]
    fn list_is_sorted_and_complete() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(STOPWORDS.len(), 70);
    }

    /// Spec §6.7 tests.
    #[test]
    fn spec_examples() {
        assert_eq!(
            marks(&dim_stopwords("the cat sat on a mat")),
            "‹the› cat sat ‹on› ‹a› mat"
        );
        assert_eq!(marks(&dim_stopwords("The end.")), "‹The› end.");
        assert_eq!(dim_stopwords("theory"), "theory");
        assert_eq!(
            marks(&dim_stopwords("alpha \u{e}the tool output\u{f} and omega")),
            "alpha ‹the tool output› ‹and› omega"
        );
        assert_eq!(dim_stopwords("\u{e}so it goes"), "\u{e}so it goes");
        for s in ["the cat", "a\u{e}b the\u{f}c of", "éthe the", "", "THE"] {
            let strip = |s: &str| -> String {
                s.chars().filter(|&c| c != DIM_ON && c != DIM_OFF).collect()
            };
            assert_eq!(strip(&dim_stopwords(s)), strip(s));
        }
    }
}
