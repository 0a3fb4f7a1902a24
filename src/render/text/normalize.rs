//! `normalize`: one line of text every code point of which the frame's font (or a registered
//! fallback font) can draw (spec: snapcompact §6.4–§6.6).

use crate::render::font::{bitmap_supports, BitmapFont, FallbackFonts, FontName};
use crate::render::text::unicode::{
    is_dropped, is_extended_pictographic, is_format, is_js_space, is_latin, nfkd_fold, DIM_OFF,
    DIM_ON, NEWLINE_GLYPH,
};
use crate::support::text::char_at;

/// Share of `?` fallbacks among graphic characters above which text is unsafe to print
/// (spec: snapcompact §2, §6.6).
pub const UNRENDERABLE_THRESHOLD: f64 = 0.05;

/// Result of [`scan_renderability`] (spec: snapcompact §6.6).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Renderability {
    /// `?` fallbacks / graphic characters (0 when there are none).
    pub unrenderable_ratio: f64,
    /// `unrenderable_ratio <= 0.05`.
    pub is_safe: bool,
    pub graphics: usize,
    pub fallbacks: usize,
}

/// Does `text` hold an ESC or a CSI (U+009B), which every ANSI sequence starts with?
pub(crate) fn has_ansi_introducer(text: &str) -> bool {
    text.as_bytes().contains(&0x1B) || text.contains('\u{9B}')
}

/// Removes ANSI escape sequences: OSC strings ended by BEL or ST, CSI sequences with
/// parameters and intermediates, and two-character escapes (spec: snapcompact §14.3, the
/// `strip-ansi` pattern). An ESC that starts no sequence is left for later steps to drop.
pub fn strip_ansi(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    // Whether an OSC string found no terminator: none after any later opening either.
    let mut osc_unended = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\u{1B}' || c == '\u{9B}' {
            if let Some(end) = ansi_sequence_end(&chars, i, &mut osc_unended) {
                i = end;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// End (exclusive) of the escape sequence starting at `i`, if one starts there.
/// `osc_unended`: set once an OSC string is found to have no terminator after it, so later
/// openings do not scan the rest of the text again (quadratic on a run of them).
fn ansi_sequence_end(chars: &[char], i: usize, osc_unended: &mut bool) -> Option<usize> {
    // OSC: ESC ] … (BEL | ESC \ | U+009C)
    if chars[i] == '\u{1B}' && chars.get(i + 1) == Some(&']') && !*osc_unended {
        let mut j = i + 2;
        while j < chars.len() {
            match chars[j] {
                '\u{07}' | '\u{9C}' => return Some(j + 1),
                '\u{1B}' if chars.get(j + 1) == Some(&'\\') => return Some(j + 2),
                _ => j += 1,
            }
        }
        *osc_unended = true;
    }
    // CSI and two-character escapes: [ESC|CSI] [[\]()#;?]* (\d{1,4}([;:]\d{0,4})*)? final
    let mut j = i + 1;
    while j < chars.len() && matches!(chars[j], '[' | ']' | '(' | ')' | '#' | ';' | '?') {
        j += 1;
    }
    let digits = |from: usize, max: usize| -> usize {
        let mut k = from;
        while k < chars.len() && k - from < max && chars[k].is_ascii_digit() {
            k += 1;
        }
        k - from
    };
    let is_final = |c: char| {
        c.is_ascii_digit()
            || matches!(c, 'A'..='P' | 'R'..='T' | 'Z' | 'c' | 'f'..='n' | 'q'..='u' | 'y' | '=' | '>' | '<' | '~')
    };
    // Try with the parameter block, then (backtracking like the regex) without it.
    let n = digits(j, 4);
    if n > 0 {
        let mut k = j + n;
        while k < chars.len() && matches!(chars[k], ';' | ':') {
            k += 1;
            k += digits(k, 4);
        }
        if k < chars.len() && is_final(chars[k]) {
            return Some(k + 1);
        }
    }
    if j < chars.len() && is_final(chars[j]) {
        return Some(j + 1);
    }
    None
}

/// Length of the run of printable ASCII other than the space at `b[i..]`; the run ends on a
/// character boundary.
#[inline(always)]
fn plain_run(b: &[u8], i: usize) -> usize {
    let mut end = i;
    while end < b.len() && matches!(b[end], 0x21..=0x7E) {
        end += 1;
    }
    end - i
}

/// Steps 1–3 of §6.4: strip ANSI, collapse whitespace/format runs (a run holding a line
/// break → U+2588, else a space when it holds anything but format characters, else
/// nothing), trim runs of spaces and U+2588 at both ends.
pub fn collapse_whitespace(text: &str) -> String {
    let stripped;
    let text = if has_ansi_introducer(text) {
        stripped = strip_ansi(text);
        stripped.as_str()
    } else {
        text
    };
    let mut out = String::with_capacity(text.len());
    let mut run_active = false;
    let mut run_newline = false;
    let mut run_visible = false;
    let flush = |out: &mut String, newline: bool, visible: bool| {
        if newline {
            out.push(NEWLINE_GLYPH);
        } else if visible {
            out.push(' ');
        }
    };
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // Printable ASCII other than the space passes as a run.
        let plain = plain_run(bytes, i);
        if plain > 0 {
            if run_active {
                flush(&mut out, run_newline, run_visible);
                run_active = false;
                run_newline = false;
                run_visible = false;
            }
            out.push_str(&text[i..i + plain]);
            i += plain;
            continue;
        }
        let Some(c) = char_at(text, i) else {
            break;
        };
        i += c.len_utf8();
        let space = is_js_space(c);
        if space || is_format(c) {
            run_active = true;
            if matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}') {
                run_newline = true;
            }
            // U+FEFF is both `\s` and Cf: it counts as a format character here.
            if space && c != '\u{FEFF}' {
                run_visible = true;
            }
            continue;
        }
        if run_active {
            flush(&mut out, run_newline, run_visible);
            run_active = false;
            run_newline = false;
            run_visible = false;
        }
        out.push(c);
    }
    if run_active {
        flush(&mut out, run_newline, run_visible);
    }
    let trimmed = out.trim_matches(|c| c == ' ' || c == NEWLINE_GLYPH);
    if trimmed.len() == out.len() {
        out
    } else {
        trimmed.to_string()
    }
}

/// Semantic emoji labels, checked first (spec: snapcompact §6.5).
pub fn emoji_label(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2705}' | '\u{2611}' | '\u{2714}' => "[OK]",
        '\u{274C}' | '\u{274E}' | '\u{2716}' => "[FAIL]",
        '\u{26A0}' => "[WARN]",
        '\u{1F6A8}' => "[ALERT]",
        '\u{2139}' => "[INFO]",
        '\u{1F41B}' => "[BUG]",
        '\u{1F4A5}' => "[CRASH]",
        '\u{1F525}' => "[HOT]",
        '\u{1F512}' => "[LOCK]",
        '\u{1F513}' => "[UNLOCK]",
        '\u{1F4C1}' | '\u{1F4C2}' => "[DIR]",
        '\u{1F4C4}' => "[FILE]",
        '\u{1F4DD}' => "[NOTE]",
        '\u{1F9EA}' => "[TEST]",
        '\u{23F3}' | '\u{231B}' => "[WAIT]",
        '\u{1F680}' => "[RUN]",
        _ => return None,
    })
}

/// Punctuation fold, applied before NFKD (spec: snapcompact §6.5).
pub fn punctuation_fold(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{2035}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{2033}' | '\u{2036}' => "\"",
        '\u{2039}' => "<",
        '\u{203A}' => ">",
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{2043}' => "-",
        '\u{2044}' => "/",
        '\u{2024}' => ".",
        '\u{2025}' => "..",
        '\u{2026}' | '\u{22EF}' => "...",
        '\u{2022}' | '\u{2023}' | '\u{2219}' | '\u{25CF}' | '\u{25A0}' | '\u{25AA}' => "*",
        '\u{2190}' => "<-",
        '\u{2191}' => "^",
        '\u{2192}' => "->",
        '\u{2193}' => "v",
        '\u{2194}' => "<->",
        '\u{21D0}' => "<=",
        '\u{21D2}' => "=>",
        '\u{21D4}' => "<=>",
        '\u{2713}' | '\u{2714}' => "v",
        '\u{2717}' | '\u{2718}' => "x",
        _ => return None,
    })
}

/// What step 4 of §6.4 does with one code point.
enum Fold {
    Keep,
    /// Keep, but not a graphic character (toggles, the block glyph).
    KeepSilent,
    Replace(&'static str),
    Drop,
    Unrenderable,
}

fn fold(c: char, bitmap: Option<&BitmapFont>, fallbacks: &FallbackFonts) -> Fold {
    if is_latin(c) {
        return Fold::Keep;
    }
    if c == DIM_ON || c == DIM_OFF || c == NEWLINE_GLYPH {
        return Fold::KeepSilent;
    }
    // Controls are dropped even where a font has a glyph for them (8x13 and 6x12 carry a
    // default glyph at U+0000, unscii-8 control pictures at U+0001–U+001F): printing NUL or
    // BEL as a box helps no reader. The reference keeps them in those fonts.
    if c.is_control() {
        return Fold::Drop;
    }
    if let Some(label) = emoji_label(c) {
        return Fold::Replace(label);
    }
    if let Some(p) = punctuation_fold(c) {
        return Fold::Replace(p);
    }
    if matches!(c, '\u{2500}'..='\u{257F}') {
        return Fold::Replace(match c {
            '\u{2502}' | '\u{2503}' => "|",
            '\u{2500}' | '\u{2501}' => "-",
            _ => "+",
        });
    }
    // A character with an NFKD fold never counts as supported, so fullwidth Latin always
    // folds even where a font has it.
    if let Some(f) = nfkd_fold(c) {
        return Fold::Replace(f);
    }
    // The fallback font is not asked for controls and combining marks: Unifont draws them
    // (as dotted boxes), the reference's fallback did not, and they are dropped below.
    if !is_extended_pictographic(c)
        && (bitmap_supports(bitmap, fallbacks, c) || (!is_dropped(c) && fallbacks.has_glyph(c)))
    {
        return Fold::Keep;
    }
    if is_extended_pictographic(c) || is_dropped(c) {
        return Fold::Drop;
    }
    Fold::Unrenderable
}

fn normalize_counting(
    text: &str,
    font: FontName,
    fallbacks: &FallbackFonts,
) -> (String, usize, usize) {
    let collapsed = collapse_whitespace(text);
    let bitmap = font.bitmap();
    let mut out = String::with_capacity(collapsed.len());
    let (mut graphics, mut unrenderable) = (0usize, 0usize);
    let mut last_space = true; // also trims leading spaces (step 5)
    let push = |out: &mut String, last_space: &mut bool, s: &str| {
        for c in s.chars() {
            if c == ' ' {
                if *last_space {
                    continue;
                }
                *last_space = true;
            } else {
                *last_space = false;
            }
            out.push(c);
        }
    };
    let bytes = collapsed.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // Printable ASCII other than the space is kept as is: a run at a time.
        let plain = plain_run(bytes, i);
        if plain > 0 {
            graphics += plain;
            out.push_str(&collapsed[i..i + plain]);
            last_space = false;
            i += plain;
            continue;
        }
        let Some(c) = char_at(&collapsed, i) else {
            break;
        };
        i += c.len_utf8();
        match fold(c, bitmap, fallbacks) {
            Fold::Keep => {
                graphics += 1;
                let mut buf = [0u8; 4];
                push(&mut out, &mut last_space, c.encode_utf8(&mut buf));
            }
            Fold::KeepSilent => {
                let mut buf = [0u8; 4];
                push(&mut out, &mut last_space, c.encode_utf8(&mut buf));
            }
            Fold::Replace(s) => {
                graphics += 1;
                push(&mut out, &mut last_space, s);
            }
            Fold::Drop => {}
            Fold::Unrenderable => {
                graphics += 1;
                unrenderable += 1;
                push(&mut out, &mut last_space, "?");
            }
        }
    }
    // Step 5 trims the block glyph as well as spaces, like step 3: a dropped character at
    // an edge (a lone control before a newline run) must not leave a leading block, and
    // normalizing twice must change nothing.
    let end = out.trim_end_matches([' ', NEWLINE_GLYPH]).len();
    out.truncate(end);
    let start = out.len() - out.trim_start_matches([' ', NEWLINE_GLYPH]).len();
    if start > 0 {
        out.drain(..start);
    }
    (out, graphics, unrenderable)
}

/// `normalize(text, font)` (spec: snapcompact §6.4). The primary font is the shape's; what
/// it lacks may be drawn by `fallbacks` (for [`FontName::Unifont`] the fallbacks are the
/// font). Deterministic for a given set of registered fallback fonts.
pub fn normalize(text: &str, font: FontName, fallbacks: &FallbackFonts) -> String {
    normalize_counting(text, font, fallbacks).0
}

/// `scanRenderability(text, font)` (spec: snapcompact §6.6).
pub fn scan_renderability(text: &str, font: FontName, fallbacks: &FallbackFonts) -> Renderability {
    let (_, graphics, fallbacks_n) = normalize_counting(text, font, fallbacks);
    let ratio = if graphics == 0 {
        0.0
    } else {
        fallbacks_n as f64 / graphics as f64
    };
    Renderability {
        unrenderable_ratio: ratio,
        is_safe: ratio <= UNRENDERABLE_THRESHOLD,
        graphics,
        fallbacks: fallbacks_n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> String {
        normalize(s, FontName::F5x8, &FallbackFonts::new())
    }

    #[test]
    fn strips_ansi() {
        assert_eq!(strip_ansi("\u{1b}[31mred\u{1b}[0m plain"), "red plain");
        assert_eq!(
            strip_ansi("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\"),
            "link"
        );
        assert_eq!(strip_ansi("a\u{1b}cb"), "ab");
        assert_eq!(strip_ansi("a\u{1b}[1;2;3Hb"), "ab");
        assert_eq!(strip_ansi("keep \u{1b}"), "keep \u{1b}");
    }

    /// An OSC opening (`ESC ]`) that nothing ends, repeated: each one scanned to the end of the
    /// text for its terminator (quadratic: a megabyte took minutes); the first scan that finds
    /// none settles every later one.
    #[test]
    fn unterminated_osc_runs_strip_in_linear_time() {
        for (text, kept) in [
            ("\u{1b}]".repeat(1 << 19), "]".repeat(1 << 19)),
            (
                format!(
                    "{}\u{7}{}",
                    "\u{1b}]".repeat(1 << 18),
                    "\u{1b}]x".repeat(1 << 18)
                ),
                "]x".repeat(1 << 18),
            ),
        ] {
            // 5 s in an unoptimized build on a busy machine; the quadratic scan took minutes.
            let start = std::time::Instant::now();
            let out = strip_ansi(&text);
            let took = start.elapsed();
            // No sequence starts at an unterminated opening (`]` is no final character): the
            // ESC stays, for later steps to drop.
            assert_eq!(out.replace('\u{1b}', ""), kept);
            assert!(
                took < std::time::Duration::from_secs(5),
                "{} bytes of unterminated OSC openings stripped in {took:?}",
                text.len()
            );
        }
    }

    /// Spec §11 cases 7–9 and 11–12 (fallback-free parts; tests/it/snapcompact_render.rs has
    /// the ones needing a fallback font).
    #[test]
    fn spec_examples() {
        assert_eq!(n("a \t b   c"), "a b c");
        assert_eq!(n("x → y ✓ “quoted” — em…"), "x -> y v \"quoted\" - em...");
        assert_eq!(n("café größe"), "café größe");
        assert_eq!(n("box │─┌ emoji 🎞"), "box |-+ emoji");
        assert_eq!(n("a\n\n\tb   c\r\nd"), "a█b c█d");
        assert_eq!(n("\n\nbody\n"), "body");
        assert_eq!(n("  \n\t  "), "");
        assert_eq!(n("\u{1b}[31mred\u{1b}[0m plain"), "red plain");
        assert_eq!(n("a\0b\u{7}c\u{200b}d\u{feff}e\u{301}f"), "abcdef");
        assert_eq!(n("\u{e}dim\u{f} x"), "\u{e}dim\u{f} x");
        assert_eq!(
            n("✅ pass ⚠️ warn ❌ fail 😄"),
            "[OK] pass [WARN] warn [FAIL] fail"
        );
        assert_eq!(n("✗ ✘"), "x x");
        assert_eq!(n("x⁵ ＨＥＬＬＯ ﬁ ① Ⅻ ⅓ 𝐇"), "x5 HELLO fi 1 XII 1/3 H");
        assert_eq!(n("™ ‹q› ′ ″ ⇐ ↑"), "TM <q> ' \" <= ^");
        assert_eq!(n("emoji 🎞 \u{E000}"), "emoji ?");
    }

    #[test]
    fn renderability_without_fallback() {
        let f = FallbackFonts::new();
        let r = scan_renderability("fn main() { println!(\"hi\"); }", FontName::F8x13, &f);
        assert!(r.is_safe);
        assert_eq!(r.unrenderable_ratio, 0.0);
        let r = scan_renderability("café résumé naïve", FontName::F5x8, &f);
        assert_eq!((r.is_safe, r.unrenderable_ratio), (true, 0.0));
        let r = scan_renderability(&"\u{E000}".repeat(10), FontName::F8x13, &f);
        assert_eq!((r.is_safe, r.unrenderable_ratio), (false, 1.0));
        let r = scan_renderability(
            "\u{1b}[1m\u{e}\thello\n\u{f}  world\u{1b}[0m",
            FontName::F8x13,
            &f,
        );
        assert_eq!((r.is_safe, r.unrenderable_ratio), (true, 0.0));
        // Without a fallback font CJK cannot print.
        let r = scan_renderability("你好世界", FontName::F8x13, &f);
        assert!(!r.is_safe);
    }
}
