//! The harvesters of the anchor index: exact identifiers found in a text (issue 38 item 1).
//!
//! Every harvester is a hand-written scan with no regular expressions and no backtracking: a
//! text is cut into words at ASCII whitespace once, each word is trimmed of the punctuation
//! around it and classified by one look at its bytes, and the two scans that look ahead
//! (quoted strings, error lines) stop at a fixed distance or at the end of the line. The time
//! is linear in the text. Every anchor is a slice of the text it came from: an anchor never
//! holds text the harvested region did not contain.

/// What kind of identifier an anchor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AnchorKind {
    /// A file path (`src/a.rs`, `./x`, `/etc/hosts`, `Cargo.toml`).
    Path,
    /// A URL (`https://…`).
    Url,
    /// A hex id or SHA (7–64 hex digits with a digit and a letter, or `0x…`).
    Hex,
    /// An issue or pull request (`#38`, `owner/repo#12`, `GH-7`, `PR 12`).
    Issue,
    /// A version (`v1.2`, `1.2.3`, `1.0.0-rc.1`, `pkg@1.2.3`).
    Version,
    /// An error code (`E_STALE_PLAN`, `E0308`, `TS2345`, `ENOENT`).
    ErrorCode,
    /// The first line of an error.
    ErrorLine,
    /// A symbol name from a tool call's arguments (`snake_case`, `camelCase`, `a::b`).
    Symbol,
    /// A number the user wrote (`8080`, `0.25`).
    Number,
    /// A string the user quoted (`"…"`, `` `…` ``).
    Quoted,
}

impl AnchorKind {
    /// All kinds, for parsing.
    pub const ALL: [AnchorKind; 10] = [
        AnchorKind::Path,
        AnchorKind::Url,
        AnchorKind::Hex,
        AnchorKind::Issue,
        AnchorKind::Version,
        AnchorKind::ErrorCode,
        AnchorKind::ErrorLine,
        AnchorKind::Symbol,
        AnchorKind::Number,
        AnchorKind::Quoted,
    ];

    /// The name stored in `details.anchors` and printed in the block.
    pub fn as_str(self) -> &'static str {
        match self {
            AnchorKind::Path => "path",
            AnchorKind::Url => "url",
            AnchorKind::Hex => "id",
            AnchorKind::Issue => "issue",
            AnchorKind::Version => "version",
            AnchorKind::ErrorCode => "code",
            AnchorKind::ErrorLine => "error",
            AnchorKind::Symbol => "symbol",
            AnchorKind::Number => "number",
            AnchorKind::Quoted => "quote",
        }
    }

    /// The kind named `s` ([`AnchorKind::as_str`]).
    pub fn parse(s: &str) -> Option<AnchorKind> {
        AnchorKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Which harvesters run over a text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scope {
    /// The user wrote it: numbers and quoted strings count too.
    pub user: bool,
    /// A tool call's argument: code-shaped names count as symbols.
    pub symbols: bool,
}

/// Longest anchor kept, in bytes (a longer word is not an identifier anyone retypes).
pub const MAX_ANCHOR_BYTES: usize = 200;
/// How far a quoted string may run, in bytes, before its opening quote is taken as stray.
const MAX_QUOTED_BYTES: usize = 120;

/// Leading punctuation a word sheds.
fn leading_junk(b: u8) -> bool {
    matches!(
        b,
        b'(' | b'[' | b'{' | b'<' | b'"' | b'\'' | b'`' | b'*' | b',' | b';' | b'='
    )
}

/// Trailing punctuation a word sheds.
fn trailing_junk(b: u8) -> bool {
    matches!(
        b,
        b')' | b']'
            | b'}'
            | b'>'
            | b'"'
            | b'\''
            | b'`'
            | b'*'
            | b','
            | b'.'
            | b';'
            | b':'
            | b'!'
            | b'?'
    )
}

/// `word` without the punctuation around it (ASCII only, so the cut stays on a character
/// boundary).
fn trim_word(word: &str) -> &str {
    let b = word.as_bytes();
    let mut start = 0;
    let mut end = b.len();
    while start < end && leading_junk(b[start]) {
        start += 1;
    }
    while end > start && trailing_junk(b[end - 1]) {
        end -= 1;
    }
    &word[start..end]
}

/// Harvests the identifiers of `text`, calling `found` with each (in order, repeats
/// included).
pub fn harvest_text<'a>(text: &'a str, scope: Scope, found: &mut impl FnMut(AnchorKind, &'a str)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    // The previous word, for `PR 12` / `issue 12`.
    let mut previous: &str = "";
    let mut previous_end = 0;
    while at < bytes.len() {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        let start = at;
        // The word's end and the classes of its bytes, in one pass.
        let mut raw_mix = 0;
        while let Some(&c) = bytes.get(at) {
            let class = Mix::CLASSES[c as usize];
            if class == Mix::SPACE {
                break;
            }
            raw_mix |= class;
            at += 1;
        }
        if start == at {
            break;
        }
        let raw = &text[start..at];
        // A word of lowercase letters alone is prose, which no harvester takes: most words
        // of a transcript stop here, after one look at their bytes (no punctuation to trim:
        // the word is its trimmed form).
        if Mix(raw_mix).plain() {
            previous = raw;
            previous_end = at;
            continue;
        }
        let word = trim_word(raw);
        // Nothing trimmed: the classes are the raw word's.
        let mix = match word.len() == raw.len() {
            true => Mix(raw_mix),
            false => Mix::of(word),
        };
        take_word(
            text,
            start..at,
            word,
            mix,
            scope,
            (previous, previous_end),
            found,
        );
        previous = raw;
        previous_end = at;
    }
    if scope.user {
        harvest_quoted(text, found);
    }
}

/// What [`harvest_text`] takes of one word: `text[span]` as written, `word` its trimmed form
/// with the byte classes `mix`, `previous` the word before it and where that one ended (for
/// `PR 12`).
#[inline(always)]
fn take_word<'a>(
    text: &'a str,
    span: std::ops::Range<usize>,
    word: &'a str,
    mix: Mix,
    scope: Scope,
    (previous, previous_end): (&'a str, usize),
    found: &mut impl FnMut(AnchorKind, &'a str),
) {
    if mix.plain() || word.len() > MAX_ANCHOR_BYTES {
        return;
    }
    let url = mix.has(Mix::COLON) && mix.has(Mix::SLASH);
    if let Some(s) = url.then(|| url_start(word)).flatten() {
        // A URL, or one behind a Markdown link's text (`[text](https://…)`).
        let url = trim_word(&word[s..]);
        if url_start(url) == Some(0) {
            found(AnchorKind::Url, url);
        }
        return;
    }
    match classify(word, mix, scope) {
        // `src/a.rs:12:5` is the file `src/a.rs`: one anchor however many lines of it
        // a listing or a stack names (the line is in the error line, when it matters).
        Some(AnchorKind::Path) => found(AnchorKind::Path, without_location(word)),
        Some(kind) => found(kind, word),
        None if is_digits(word) && issue_word(previous) && previous_end + 1 == span.start => {
            // `PR 12`: the two words as written (one space between them).
            let from = previous_end - previous.len();
            let trimmed = span.len() - word.len();
            found(AnchorKind::Issue, &text[from..span.end - trimmed]);
        }
        None if scope.user && mix.has(Mix::DIGIT) && is_number(word) => {
            found(AnchorKind::Number, word)
        }
        None => {}
    }
}

/// Words that make the number after them an issue or pull request.
fn issue_word(w: &str) -> bool {
    ["pr", "issue", "pull", "bug", "ticket"]
        .iter()
        .any(|k| w.eq_ignore_ascii_case(k))
}

fn is_digits(w: &str) -> bool {
    !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit())
}

/// A number the user wrote: at least two digits, or a decimal (`8080`, `0.25`, `1,000`).
fn is_number(w: &str) -> bool {
    let digits = w.bytes().filter(u8::is_ascii_digit).count();
    let b = w.as_bytes();
    digits >= 2
        && b[0].is_ascii_digit()
        && b[b.len() - 1].is_ascii_digit()
        && w.bytes()
            .all(|c| c.is_ascii_digit() || c == b'.' || c == b',')
        && w.bytes().filter(|&c| c == b'.').count() <= 1
}

/// Which classes of bytes a word holds: one pass over it, so that [`classify`] asks only the
/// harvesters whose shape the word can have (each needs some byte class: a version a digit
/// and a dot, a path a slash or a dot, …). Most words of tool output are none of them.
#[derive(Clone, Copy)]
struct Mix(u16);

impl Mix {
    const LOWER: u16 = 1;
    const UPPER: u16 = 1 << 1;
    const DIGIT: u16 = 1 << 2;
    const SLASH: u16 = 1 << 3;
    const DOT: u16 = 1 << 4;
    const HASH: u16 = 1 << 5;
    const UNDERSCORE: u16 = 1 << 6;
    const COLON: u16 = 1 << 7;
    const DASH: u16 = 1 << 8;
    /// Any other byte (punctuation, non-ASCII).
    const OTHER: u16 = 1 << 9;
    /// ASCII whitespace (`u8::is_ascii_whitespace`), which ends a word: its class alone.
    const SPACE: u16 = 1 << 10;

    /// The class of each byte value, looked up once per byte.
    const CLASSES: [u16; 256] = {
        let mut t = [Mix::OTHER; 256];
        let mut c = 0;
        while c < 256 {
            t[c] = match c as u8 {
                b'a'..=b'z' => Mix::LOWER,
                b'A'..=b'Z' => Mix::UPPER,
                b'0'..=b'9' => Mix::DIGIT,
                b'/' => Mix::SLASH,
                b'.' => Mix::DOT,
                b'#' => Mix::HASH,
                b'_' => Mix::UNDERSCORE,
                b':' => Mix::COLON,
                b'-' => Mix::DASH,
                b'\t' | b'\n' | 0x0C | b'\r' | b' ' => Mix::SPACE,
                _ => Mix::OTHER,
            };
            c += 1;
        }
        t
    };

    fn of(w: &str) -> Mix {
        Mix(w.bytes().fold(0, |m, c| m | Mix::CLASSES[c as usize]))
    }

    fn has(self, any: u16) -> bool {
        self.0 & any != 0
    }

    /// Lowercase ASCII letters alone (or nothing): prose.
    fn plain(self) -> bool {
        self.0 & !Mix::LOWER == 0
    }
}

/// The kind of one trimmed word, or `None` for an ordinary word. Each harvester is asked only
/// when the word holds the bytes it cannot do without (`mix`, the word's [`Mix`]), in the
/// order that decides between them.
fn classify(w: &str, mix: Mix, scope: Scope) -> Option<AnchorKind> {
    let letter = mix.has(Mix::LOWER | Mix::UPPER);
    if mix.has(Mix::HASH | Mix::DASH) && is_issue(w) {
        return Some(AnchorKind::Issue);
    }
    if mix.has(Mix::DIGIT) && is_hex(w) {
        return Some(AnchorKind::Hex);
    }
    if mix.has(Mix::DIGIT) && mix.has(Mix::DOT) && is_version(w) {
        return Some(AnchorKind::Version);
    }
    // `E_…` holds an underscore, `E0308` digits, a POSIX name starts with `E`.
    if (mix.has(Mix::UNDERSCORE | Mix::DIGIT) || w.as_bytes().first() == Some(&b'E'))
        && is_error_code(w)
    {
        return Some(AnchorKind::ErrorCode);
    }
    if letter && mix.has(Mix::SLASH | Mix::DOT) && is_path(w) {
        return Some(AnchorKind::Path);
    }
    // A symbol has an underscore, a `::` or a lower-to-upper change.
    let symbol_shape =
        mix.has(Mix::UNDERSCORE | Mix::COLON) || (mix.has(Mix::LOWER) && mix.has(Mix::UPPER));
    if scope.symbols && symbol_shape && is_symbol(w) {
        return Some(AnchorKind::Symbol);
    }
    if scope.user && mix.has(Mix::SLASH) && is_ref_name(w) {
        return Some(AnchorKind::Path);
    }
    None
}

/// `w` without a `:line` or `:line:column` suffix.
fn without_location(w: &str) -> &str {
    let mut end = w.len();
    for _ in 0..2 {
        match w[..end].rfind(':') {
            Some(c) if c > 0 && is_digits(&w[c + 1..end]) => end = c,
            _ => break,
        }
    }
    &w[..end]
}

/// A name with one slash the user wrote that is no prose pair like `and/or`: a branch
/// (`feature/r1-9b6f77`, `fix/issue-12`) or a `group/name` (`acme/widgets-2`). Identifier
/// characters only, both sides non-empty, and a digit, `-` or `_` somewhere.
fn is_ref_name(w: &str) -> bool {
    let Some((a, b)) = w.split_once('/') else {
        return false;
    };
    let ident = |p: &str| {
        !p.is_empty()
            && p.as_bytes()[0].is_ascii_alphanumeric()
            && p.bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    };
    ident(a)
        && ident(b)
        && w.bytes()
            .any(|c| c.is_ascii_digit() || c == b'-' || c == b'_')
        && w.bytes().any(|c| c.is_ascii_alphabetic())
}

/// Where a URL starts in `w` (its scheme before `://`); `Some(n > 0)` when something precedes
/// it (a Markdown link's `[text](`).
fn url_start(w: &str) -> Option<usize> {
    let sep = memchr::memmem::find(w.as_bytes(), b"://")?;
    let b = w.as_bytes();
    let mut s = sep;
    while s > 0 && (b[s - 1].is_ascii_alphanumeric() || matches!(b[s - 1], b'+' | b'-' | b'.')) {
        s -= 1;
    }
    (sep - s >= 2 && sep + 3 < b.len() && b[s].is_ascii_alphabetic()).then_some(s)
}

/// `#12`, `owner/repo#12`, `GH-12`.
fn is_issue(w: &str) -> bool {
    if let Some(n) = w.strip_prefix("GH-").or_else(|| w.strip_prefix("gh-")) {
        return is_digits(n) && n.len() <= 7;
    }
    match w.rfind('#') {
        Some(h) => {
            let (repo, n) = (&w[..h], &w[h + 1..]);
            is_digits(n)
                && n.len() <= 7
                && (repo.is_empty()
                    || (repo.contains('/')
                        && repo.bytes().all(|b| {
                            b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.')
                        })))
        }
        None => false,
    }
}

/// 7–64 hex digits with at least one digit and one letter (a SHA, an object id), or `0x`
/// and at least 4 hex digits.
fn is_hex(w: &str) -> bool {
    if let Some(h) = w.strip_prefix("0x") {
        return h.len() >= 4 && h.len() <= 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
    }
    let b = w.as_bytes();
    (7..=64).contains(&b.len())
        && b.iter().all(|c| c.is_ascii_hexdigit())
        && b.iter().any(u8::is_ascii_digit)
        && b.iter().any(u8::is_ascii_alphabetic)
        // One case throughout: `DeadBeef1` is a name.
        && (b.iter().all(|c| !c.is_ascii_uppercase()) || b.iter().all(|c| !c.is_ascii_lowercase()))
}

/// `v1.2`, `1.2.3`, `1.0.0-rc.1`, `2.7.0+build`, `name@1.2.3`.
fn is_version(w: &str) -> bool {
    let (named, w) = match w.rfind('@') {
        Some(a) if a > 0 => (true, &w[a + 1..]),
        _ => (false, w),
    };
    let (prefixed, core) = match w.strip_prefix(['v', 'V']) {
        Some(rest) => (true, rest),
        None => (false, w),
    };
    let core = core.split(['-', '+']).next().unwrap_or("");
    let parts = core.split('.');
    let mut n = 0;
    for p in parts {
        if !is_digits(p) || p.len() > 9 {
            return false;
        }
        n += 1;
    }
    n >= 3 || (n == 2 && (prefixed || named))
}

/// POSIX error names worth keeping (the all-capitals `E…` words that are not shouting).
const ERRNO: [&str; 16] = [
    "ENOENT",
    "EACCES",
    "EEXIST",
    "EPERM",
    "EISDIR",
    "ENOTDIR",
    "ENOTEMPTY",
    "EADDRINUSE",
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "EPIPE",
    "EMFILE",
    "ENOSPC",
    "EAGAIN",
    "EINVAL",
];

/// `E_CODE`, `E0308` / `TS2345` (1–4 capitals then 3–5 digits), or a POSIX error name.
fn is_error_code(w: &str) -> bool {
    if let Some(rest) = w.strip_prefix("E_") {
        return rest.len() >= 2
            && rest
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    }
    let b = w.as_bytes();
    let letters = b.iter().take_while(|c| c.is_ascii_uppercase()).count();
    let digits = b.len() - letters;
    if (1..=4).contains(&letters)
        && (3..=5).contains(&digits)
        && b[letters..].iter().all(u8::is_ascii_digit)
    {
        return true;
    }
    ERRNO.contains(&w)
}

/// File extensions a bare `name.ext` is a path for.
const EXTENSIONS: [&str; 40] = [
    "rs", "ts", "tsx", "js", "jsx", "mjs", "cjs", "json", "jsonl", "md", "toml", "yaml", "yml",
    "py", "go", "c", "h", "cc", "cpp", "hpp", "java", "kt", "swift", "rb", "sh", "txt", "lock",
    "html", "css", "sql", "wasm", "png", "log", "cfg", "ini", "xml", "csv", "zig", "lua", "env",
];

/// A path: with a slash (rooted, relative, home, or two segments with an extension or more
/// than two segments), or `name.ext` with a known extension.
fn is_path(w: &str) -> bool {
    let b = w.as_bytes();
    if !b.iter().any(u8::is_ascii_alphabetic) {
        return false;
    }
    // A path is one token: no quotes or brackets inside.
    if b.iter()
        .any(|c| matches!(c, b'"' | b'\'' | b'`' | b'(' | b')' | b'<' | b'>' | b'|'))
    {
        return false;
    }
    let slashes = b.iter().filter(|&&c| c == b'/').count();
    let last = w.rsplit('/').next().unwrap_or("");
    let has_extension = |name: &str| {
        let name = name.split(':').next().unwrap_or(name);
        match name.rsplit_once('.') {
            Some((stem, ext)) => {
                !stem.is_empty()
                    && !ext.is_empty()
                    && ext.len() <= 8
                    && ext.bytes().all(|c| c.is_ascii_alphanumeric())
                    && ext.bytes().any(|c| c.is_ascii_alphabetic())
            }
            None => false,
        }
    };
    if slashes > 0 {
        let rooted = w.starts_with('/')
            || w.starts_with("./")
            || w.starts_with("../")
            || w.starts_with("~/");
        return rooted || slashes >= 2 || has_extension(last);
    }
    let name = w.split(':').next().unwrap_or(w);
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            stem.bytes().any(|c| c.is_ascii_alphabetic())
                && stem
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
                && EXTENSIONS.contains(&ext)
        }
        None => false,
    }
}

/// A code-shaped name: identifier characters (and `::`, `.`), with an underscore inside,
/// a `::`, or a lower-to-upper case change (`snake_case`, `a::b`, `camelCase`).
fn is_symbol(w: &str) -> bool {
    let b = w.as_bytes();
    if b.len() < 3 || !(b[0].is_ascii_alphabetic() || b[0] == b'_') {
        return false;
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b':' | b'.' | b'$'))
    {
        return false;
    }
    let inner_underscore = b[1..b.len() - 1].contains(&b'_');
    let path_sep = memchr::memmem::find(b, b"::").is_some();
    let camel = b
        .windows(2)
        .any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase());
    inner_underscore || path_sep || camel
}

/// Quoted strings of a user's text: `"…"`, `“…”` and `` `…` `` on one line, at most
/// [`MAX_QUOTED_BYTES`] long, opened after a non-word character. Code fences (```` ``` ````)
/// are skipped. Linear: each opening quote looks ahead a bounded distance.
fn harvest_quoted<'a>(text: &'a str, found: &mut impl FnMut(AnchorKind, &'a str)) {
    let b = text.as_bytes();
    let mut at = 0;
    while at < b.len() {
        let (close, open_len): (&[u8], usize) = match b[at] {
            b'"' => (b"\"", 1),
            b'`' => (b"`", 1),
            0xE2 if b[at..].starts_with("“".as_bytes()) => ("”".as_bytes(), 3),
            _ => {
                at += 1;
                continue;
            }
        };
        if b[at] == b'`' && b.get(at + 1) == Some(&b'`') {
            // A fence or an empty span: skip the run of backticks.
            while at < b.len() && b[at] == b'`' {
                at += 1;
            }
            continue;
        }
        let after_word = at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        let from = at + open_len;
        let limit = (from + MAX_QUOTED_BYTES + close.len()).min(b.len());
        let window = &b[from..limit];
        let end = window
            .iter()
            .position(|&c| c == b'\n')
            .unwrap_or(window.len());
        match memchr::memmem::find(&window[..end], close) {
            Some(n) if !after_word => {
                let inner = &text[from..from + n];
                if !inner.trim().is_empty() && inner.trim() == inner {
                    found(AnchorKind::Quoted, inner);
                }
                at = from + n + close.len();
            }
            _ => at = from,
        }
    }
}

/// The first line of an error: the first non-blank line of `text`, trimmed and cut to
/// [`MAX_ANCHOR_BYTES`] at a character boundary.
pub fn first_line(text: &str) -> Option<&str> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(cut(line))
}

/// `s` cut to at most [`MAX_ANCHOR_BYTES`] bytes at a character boundary.
fn cut(s: &str) -> &str {
    if s.len() <= MAX_ANCHOR_BYTES {
        return s;
    }
    let mut end = MAX_ANCHOR_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].trim_end()
}

/// The first line of `text` that reads as an error report (`error: …`, `error[E0308]: …`,
/// `Error: …`, `fatal: …`, `panicked at …`, `Traceback …`, `FAILED …`), trimmed and cut.
pub fn error_line(text: &str) -> Option<&str> {
    const OPENERS: [&str; 7] = [
        "error",
        "fatal",
        "panic",
        "traceback",
        "exception",
        "uncaught",
        "failed",
    ];
    // One search of the whole text first: most have no panic, and their lines need none.
    let panics = memchr::memmem::find(text.as_bytes(), b"panicked at").is_some();
    text.lines().map(str::trim).find_map(|line| {
        let head = line.as_bytes();
        // The opener is the whole first word: `errors.rs` and `Errorless` are not reports.
        let word = head.iter().take_while(|c| c.is_ascii_alphabetic()).count();
        let ends = head
            .get(word)
            .is_none_or(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-')));
        let opens = ends
            && OPENERS
                .iter()
                .any(|o| o.len() == word && head[..word].eq_ignore_ascii_case(o.as_bytes()));
        (opens || (panics && memchr::memmem::find(head, b"panicked at").is_some()))
            .then(|| cut(line))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`classify`] before the byte classes gated its harvesters: the oracle of
    /// `the_gates_change_no_kind`.
    fn classify_ungated(w: &str, scope: Scope) -> Option<AnchorKind> {
        [
            (is_issue(w), AnchorKind::Issue),
            (is_hex(w), AnchorKind::Hex),
            (is_version(w), AnchorKind::Version),
            (is_error_code(w), AnchorKind::ErrorCode),
            (is_path(w), AnchorKind::Path),
            (scope.symbols && is_symbol(w), AnchorKind::Symbol),
            (scope.user && is_ref_name(w), AnchorKind::Path),
        ]
        .into_iter()
        .find_map(|(yes, kind)| yes.then_some(kind))
    }

    #[test]
    fn the_gates_change_no_kind() {
        // Every word of up to four pieces, each piece a shape some harvester looks for.
        const PIECES: [&str; 24] = [
            "a",
            "Z",
            "E",
            "E_",
            "0",
            "7",
            "0x",
            "GH-",
            "#",
            "/",
            "./",
            "~/",
            ".",
            ":",
            "::",
            "_",
            "-",
            "@",
            "v",
            "rs",
            "deadbeef1",
            "ENOENT",
            "`",
            "é",
        ];
        let scopes = [
            Scope::default(),
            Scope {
                user: true,
                symbols: false,
            },
            Scope {
                user: false,
                symbols: true,
            },
        ];
        fn each(word: &mut String, depth: u32, f: &mut impl FnMut(&str)) {
            f(word);
            if depth == 4 {
                return;
            }
            for p in PIECES {
                let len = word.len();
                word.push_str(p);
                each(word, depth + 1, f);
                word.truncate(len);
            }
        }
        let mut n = 0;
        each(&mut String::new(), 0, &mut |word| {
            let w = trim_word(word);
            let mix = Mix::of(w);
            if mix.plain() {
                return;
            }
            for scope in scopes {
                assert_eq!(
                    classify(w, mix, scope),
                    classify_ungated(w, scope),
                    "{w:?} {scope:?}"
                );
            }
            n += 1;
        });
        assert!(n > 300_000, "{n} words");
    }

    /// [`harvest_text`] as it cut words before issue 42 (a scan for the word's end, then its
    /// trimmed form's classes): the oracle of `the_one_pass_cut_finds_the_same_anchors`.
    fn harvest_reference<'a>(
        text: &'a str,
        scope: Scope,
        found: &mut impl FnMut(AnchorKind, &'a str),
    ) {
        let bytes = text.as_bytes();
        let mut at = 0;
        let mut previous: &str = "";
        let mut previous_end = 0;
        while at < bytes.len() {
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            let start = at;
            while at < bytes.len() && !bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            if start == at {
                break;
            }
            let raw = &text[start..at];
            let word = trim_word(raw);
            let mix = Mix::of(word);
            take_word(
                text,
                start..at,
                word,
                mix,
                scope,
                (previous, previous_end),
                found,
            );
            previous = raw;
            previous_end = at;
        }
        if scope.user {
            harvest_quoted(text, found);
        }
    }

    #[test]
    fn the_one_pass_cut_finds_the_same_anchors() {
        // Texts of random pieces: prose, punctuation around words, every whitespace byte,
        // `PR 12` pairs split by prose, identifiers of each kind, non-ASCII.
        const PIECES: [&str; 28] = [
            "word",
            "pr",
            "PR",
            "issue",
            " ",
            "  ",
            "\t",
            "\n",
            "\r",
            "\x0c",
            "\x0b",
            "12",
            "(",
            ")",
            "\"",
            "`",
            ".",
            ",",
            ":",
            "src/a.rs",
            "#38",
            "v1.2.3",
            "E_X1",
            "deadbeef1",
            "https://x.dev/a",
            "snake_case",
            "é",
            "8080",
        ];
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..3_000 {
            let n = next() % 40;
            let text: String = (0..n)
                .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
                .collect();
            for user in [false, true] {
                for symbols in [false, true] {
                    let scope = Scope { user, symbols };
                    let mut got = Vec::new();
                    harvest_text(&text, scope, &mut |k, t| got.push((k, t)));
                    let mut want = Vec::new();
                    harvest_reference(&text, scope, &mut |k, t| want.push((k, t)));
                    assert_eq!(got, want, "{text:?} {scope:?}");
                }
            }
        }
    }

    fn harvest(text: &str, scope: Scope) -> Vec<(AnchorKind, String)> {
        let mut out = Vec::new();
        harvest_text(text, scope, &mut |k, t| out.push((k, t.to_string())));
        out
    }

    fn of(text: &str, kind: AnchorKind, scope: Scope) -> Vec<String> {
        harvest(text, scope)
            .into_iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| t)
            .collect()
    }

    const USER: Scope = Scope {
        user: true,
        symbols: false,
    };
    const TOOL: Scope = Scope {
        user: false,
        symbols: false,
    };
    const ARGS: Scope = Scope {
        user: false,
        symbols: true,
    };

    #[test]
    fn paths() {
        let t = "Edit src/summary/anchors.rs, then (./run.sh) and ~/x/y; see Cargo.toml: \
                 and/or 1/2 foo.bar /etc/hosts src/session/ docs/guide/a.md:12.";
        assert_eq!(
            of(t, AnchorKind::Path, TOOL),
            [
                "src/summary/anchors.rs",
                "./run.sh",
                "~/x/y",
                "Cargo.toml",
                "/etc/hosts",
                "src/session/",
                "docs/guide/a.md"
            ]
        );
    }

    #[test]
    fn a_path_drops_its_line_and_column() {
        let t = "at src/a.rs:12:5 and src/a.rs:80, lib.rs:3 and C:/x/y.txt";
        assert_eq!(
            of(t, AnchorKind::Path, TOOL),
            ["src/a.rs", "src/a.rs", "lib.rs", "C:/x/y.txt"]
        );
    }

    #[test]
    fn branch_names_only_from_the_user() {
        let t = "push to feature/r1-9b6f77 or fix/issue_12, not and/or, read/write or 1/2";
        assert_eq!(
            of(t, AnchorKind::Path, USER),
            ["feature/r1-9b6f77", "fix/issue_12"]
        );
        assert!(of(t, AnchorKind::Path, TOOL).is_empty());
    }

    #[test]
    fn urls() {
        let t = "See https://github.com/a/b/pull/3. and [x](https://x.dev/a) or ftp://h/f; \
                 not http:// alone";
        assert_eq!(
            of(t, AnchorKind::Url, TOOL),
            [
                "https://github.com/a/b/pull/3",
                "https://x.dev/a",
                "ftp://h/f"
            ]
        );
    }

    #[test]
    fn hex_ids() {
        let t = "commit 59bbce2 and 0x7ffe12 and deadbeef, DEADBEEF12, Abc1234, facade, \
                 1234567 and 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        assert_eq!(
            of(t, AnchorKind::Hex, TOOL),
            [
                "59bbce2",
                "0x7ffe12",
                "DEADBEEF12",
                "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
            ]
        );
    }

    #[test]
    fn issues() {
        let t = "Fixes #38, see ctxfold/core#12 and GH-7; PR 415 and issue  9; C# no";
        assert_eq!(
            of(t, AnchorKind::Issue, TOOL),
            ["#38", "ctxfold/core#12", "GH-7", "PR 415"]
        );
    }

    #[test]
    fn versions() {
        let t = "Node v20.11, serde 1.0.197, 1.0.0-rc.1 and wasm-bindgen@0.2.130; 3.14 is not";
        assert_eq!(
            of(t, AnchorKind::Version, TOOL),
            ["v20.11", "1.0.197", "1.0.0-rc.1", "wasm-bindgen@0.2.130"]
        );
    }

    #[test]
    fn error_codes() {
        let t = "E_STALE_PLAN and error[E0308]: and TS2345 ENOENT EVERYTHING E_ A1";
        assert_eq!(
            of(t, AnchorKind::ErrorCode, TOOL),
            ["E_STALE_PLAN", "TS2345", "ENOENT"]
        );
        // `error[E0308]:` is one word; its code is in the error line instead.
        assert_eq!(
            error_line("ok\n  error[E0308]: mismatched types\n"),
            Some("error[E0308]: mismatched types")
        );
        assert_eq!(error_line("errors.rs is fine\nErrorless"), None);
        assert_eq!(
            error_line("thread 'main' panicked at src/a.rs:3:5"),
            Some("thread 'main' panicked at src/a.rs:3:5")
        );
        assert_eq!(first_line("\n\n  boom  \nmore"), Some("boom"));
        let long = "x".repeat(500);
        assert_eq!(first_line(&long).map(str::len), Some(MAX_ANCHOR_BYTES));
        let wide = "é".repeat(300);
        assert!(first_line(&wide).is_some_and(|l| l.len() <= MAX_ANCHOR_BYTES));
    }

    #[test]
    fn symbols_only_in_arguments() {
        let t = "fn harvest_text(text) calls AnchorIndex::add and camelCase but not plain";
        assert_eq!(
            of(t, AnchorKind::Symbol, ARGS),
            ["AnchorIndex::add", "camelCase"]
        );
        assert!(of(t, AnchorKind::Symbol, TOOL).is_empty());
        // `harvest_text(text)` is not one identifier; the trimmed word keeps its parenthesis.
        assert_eq!(
            of("harvest_text", AnchorKind::Symbol, ARGS),
            ["harvest_text"]
        );
    }

    #[test]
    fn numbers_and_quotes_only_from_the_user() {
        let t = "Use port 8080, ratio 0.25 and \"--no-verify\" with `make pkg`; 7 is one digit; \
                 don't say it's “exactly this”";
        assert_eq!(of(t, AnchorKind::Number, USER), ["8080", "0.25"]);
        assert_eq!(
            of(t, AnchorKind::Quoted, USER),
            ["--no-verify", "make pkg", "exactly this"]
        );
        assert!(of(t, AnchorKind::Number, TOOL).is_empty());
        assert!(of(t, AnchorKind::Quoted, TOOL).is_empty());
        // A fence, an unclosed quote and a quote over a line break are not quoted strings.
        let t = "```rust\nlet a = 1;\n```\n\"open\nclose\" and \"unterminated";
        assert!(of(t, AnchorKind::Quoted, USER).is_empty());
    }

    #[test]
    fn every_anchor_is_a_slice_of_its_text() {
        let t = "a \"b c\" PR 12 #3 src/x.rs https://h.io/p v1.2 E_X1 0x1234 8080 camel_case";
        harvest_text(
            t,
            Scope {
                user: true,
                symbols: true,
            },
            &mut |_, s| {
                let start = s.as_ptr() as usize - t.as_ptr() as usize;
                assert!(start + s.len() <= t.len());
            },
        );
    }
}
