//! Word banks and text generators: source code, logs, tool output, prompts, replies and
//! summaries. Everything is driven by [`Rng`]; nothing depends on the environment.

use super::rng::Rng;
use std::fmt::Write as _;

/// Language / kind of a project file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Ts,
    Rs,
    Md,
    Json,
    Sql,
    Yaml,
    Toml,
    Log,
    Png,
}

/// Size class of a project file (bytes).
#[derive(Clone, Copy, Debug)]
pub struct FileSpec {
    pub path: &'static str,
    pub lang: Lang,
    pub min: usize,
    pub max: usize,
}

const S: (usize, usize) = (700, 4_000);
const M: (usize, usize) = (4_000, 12_000);
const L: (usize, usize) = (30_000, 100_000);

macro_rules! files {
    ($(($p:expr, $l:ident, $s:ident)),* $(,)?) => {
        &[$(FileSpec { path: $p, lang: Lang::$l, min: $s.0, max: $s.1 }),*]
    };
}

/// The fake project every session works on.
pub static FILES: &[FileSpec] = files![
    ("src/server/http.ts", Ts, M),
    ("src/server/router.ts", Ts, M),
    ("src/server/routes/users.ts", Ts, M),
    ("src/server/routes/sessions.ts", Ts, M),
    ("src/server/middleware/auth.ts", Ts, S),
    ("src/server/middleware/rate-limit.ts", Ts, S),
    ("src/db/pool.ts", Ts, S),
    ("src/db/queries.ts", Ts, L),
    ("src/db/schema.ts", Ts, M),
    ("src/session/manager.ts", Ts, L),
    ("src/session/compaction.ts", Ts, L),
    ("src/session/branch-summary.ts", Ts, M),
    ("src/session/tokens.ts", Ts, S),
    ("src/tui/editor.ts", Ts, L),
    ("src/tui/selector.ts", Ts, M),
    ("src/tui/theme.ts", Ts, M),
    ("src/tui/markdown.ts", Ts, M),
    ("src/utils/strings.ts", Ts, S),
    ("src/utils/paths.ts", Ts, S),
    ("src/utils/i18n.ts", Ts, M),
    ("src/cli/main.ts", Ts, M),
    ("src/cli/args.ts", Ts, S),
    ("src/index.ts", Ts, S),
    ("test/session-manager.test.ts", Ts, L),
    ("test/compaction.test.ts", Ts, M),
    ("test/router.test.ts", Ts, M),
    ("test/strings.test.ts", Ts, S),
    ("scripts/release.ts", Ts, S),
    ("crates/core/src/lib.rs", Rs, S),
    ("crates/core/src/parser.rs", Rs, L),
    ("crates/core/src/lexer.rs", Rs, M),
    ("crates/core/src/tree.rs", Rs, M),
    ("crates/core/src/error.rs", Rs, S),
    ("crates/core/tests/roundtrip.rs", Rs, M),
    ("crates/cli/src/main.rs", Rs, S),
    ("README.md", Md, M),
    ("docs/architecture.md", Md, M),
    ("docs/compaction.md", Md, M),
    ("docs/themes.md", Md, M),
    ("CHANGELOG.md", Md, L),
    ("package.json", Json, S),
    ("tsconfig.json", Json, S),
    ("biome.json", Json, S),
    ("fixtures/large-session.json", Json, L),
    ("migrations/0001_init.sql", Sql, S),
    ("migrations/0002_sessions.sql", Sql, S),
    ("migrations/0003_add_index.sql", Sql, S),
    (".github/workflows/ci.yml", Yaml, S),
    ("docker-compose.yml", Yaml, S),
    ("Cargo.toml", Toml, S),
    ("crates/core/Cargo.toml", Toml, S),
    ("logs/server.log", Log, L),
    ("logs/test-output.txt", Log, M),
    ("assets/logo.png", Png, S),
    ("screenshots/dashboard.png", Png, S),
    ("screenshots/error-dialog.png", Png, S),
    ("docs/img/tree-view.png", Png, S),
];

pub static WORDS: &[&str] = &[
    "user",
    "session",
    "token",
    "config",
    "parser",
    "entry",
    "cache",
    "buffer",
    "request",
    "response",
    "handler",
    "router",
    "index",
    "path",
    "node",
    "tree",
    "summary",
    "message",
    "context",
    "budget",
    "offset",
    "limit",
    "stream",
    "writer",
    "reader",
    "queue",
    "worker",
    "retry",
    "timeout",
    "schema",
    "field",
    "value",
    "result",
    "error",
    "state",
    "model",
    "provider",
    "usage",
    "cost",
    "branch",
    "leaf",
    "label",
    "compaction",
    "window",
    "chunk",
    "frame",
    "image",
    "file",
    "line",
    "column",
    "range",
    "span",
    "cursor",
    "event",
    "hook",
    "plugin",
    "theme",
    "color",
    "border",
    "selector",
    "item",
    "list",
    "key",
    "name",
    "kind",
    "size",
    "count",
    "total",
    "flag",
    "option",
    "setting",
    "migration",
    "version",
    "header",
    "payload",
    "prompt",
    "tool",
    "call",
    "output",
    "input",
    "estimate",
    "threshold",
    "reserve",
];

static TYPES_TS: &[&str] = &[
    "string",
    "number",
    "boolean",
    "Entry[]",
    "Promise<void>",
    "Map<string, Entry>",
    "SessionEntry | undefined",
    "Record<string, unknown>",
    "ReadonlyArray<Message>",
    "AbortSignal",
    "Usage",
    "CompactionResult",
    "Set<string>",
    "TokenBudget",
];

static TYPES_RS: &[&str] = &[
    "usize",
    "u64",
    "&str",
    "String",
    "Vec<Entry>",
    "Option<&Entry>",
    "Result<(), Error>",
    "HashMap<String, usize>",
    "&[u8]",
    "bool",
    "Cow<'_, str>",
    "Box<dyn Fn(&str) -> bool>",
];

static SUBJECTS: &[&str] = &[
    "the parser",
    "this helper",
    "the compaction pass",
    "each entry",
    "the session manager",
    "the cache",
    "the router",
    "the summary",
    "every tool result",
    "the branch walker",
    "the token estimator",
    "this test",
    "the migration",
    "the renderer",
    "the retry loop",
    "the file tracker",
    "the cut-point search",
    "the theme loader",
    "the editor",
];

static VERBS: &[&str] = &[
    "keeps",
    "drops",
    "rewrites",
    "validates",
    "normalises",
    "skips",
    "counts",
    "buffers",
    "reuses",
    "returns",
    "mirrors",
    "serialises",
    "truncates",
    "merges",
    "re-reads",
    "caches",
];

static OBJECTS: &[&str] = &[
    "the original order",
    "stale reads",
    "oversized payloads",
    "the active path",
    "trailing whitespace",
    "unknown fields",
    "the last usage block",
    "pending tool calls",
    "image blocks",
    "the byte estimate",
    "duplicate ids",
    "the leaf pointer",
    "the previous summary",
    "empty lines",
    "the kept tail",
    "aborted turns",
    "line ranges",
];

static TAILS: &[&str] = &[
    "",
    "",
    "",
    " before writing",
    " so the UI stays responsive",
    " (see #412)",
    " — cheap enough for now",
    " → no extra allocation",
    " when the window is full",
    " to avoid a second pass",
    " unless `force` is set",
    " for backwards compatibility",
    " after the first compaction",
    " on every reload",
];

/// Non-ASCII sprinkles (accents, arrows, CJK, emoji, other scripts).
pub static UNICODE: &[&str] = &[
    "café",
    "naïve",
    "résumé",
    "→",
    "—",
    "…",
    "日本語のテキスト",
    "用户会话",
    "données",
    "größe",
    "✅",
    "🚀",
    "⚠️",
    "🎉",
    "ñandú",
    "Привет",
    "한국어",
    "½",
    "°C",
    "“smart quotes”",
    "Ünïcödé",
    "错误: 无效的输入",
    "emoji 🧪",
    "straße",
    "←↑→↓",
    "ç",
    "€ 12,50",
];

static TASKS: &[&str] = &[
    "fix the off-by-one in the cut-point search",
    "add a test for branch summaries that contain images",
    "port the selector to the new theme API",
    "figure out why the leaf is undefined after a reload",
    "make the token estimate count thinking signatures",
    "speed up loading of large session files",
    "add a --json flag to the CLI",
    "handle aborted turns in the compaction pass",
    "clean up the error messages in the router",
    "add rate limiting to the sessions endpoint",
    "support line-range selectors in read paths",
    "migrate the users table to the new schema",
    "write docs for the compaction settings",
    "fix the flaky router test",
    "render markdown tables in the TUI",
    "stop the editor from losing the cursor on resize",
    "add i18n strings for the French and Japanese UI",
    "deduplicate the file lists in summaries",
    "make the parser accept trailing commas",
    "track modified files across branch summaries",
];

static SHORT_PROMPTS: &[&str] = &[
    "continue",
    "yes, do it",
    "run the tests again",
    "looks good, thanks!",
    "hmm, that broke the build",
    "can you also update the docs?",
    "ok now commit it",
    "go on",
    "that's not quite right, try again",
    "wait — don't touch the migrations",
    "why did you change that?",
    "perfect 👍",
];

fn cap(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// A random identifier in camelCase (1–3 words).
pub fn camel(rng: &mut Rng) -> String {
    let n = rng.range_usize(1, 3);
    let mut s = String::new();
    for i in 0..n {
        let w = rng.ps(WORDS);
        if i == 0 {
            s.push_str(w);
        } else {
            s.push_str(&cap(w));
        }
    }
    s
}

/// A random identifier in snake_case (1–3 words).
pub fn snake(rng: &mut Rng) -> String {
    let n = rng.range_usize(1, 3);
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push('_');
        }
        s.push_str(rng.ps(WORDS));
    }
    s
}

/// A random PascalCase type name.
pub fn pascal(rng: &mut Rng) -> String {
    cap(&camel(rng))
}

/// One sentence (no trailing newline), sometimes with a non-ASCII sprinkle.
pub fn sentence(rng: &mut Rng) -> String {
    let mut s = cap(rng.ps(SUBJECTS));
    s.push(' ');
    s.push_str(rng.ps(VERBS));
    s.push(' ');
    s.push_str(rng.ps(OBJECTS));
    s.push_str(rng.ps(TAILS));
    if rng.chance(0.06) {
        s.push_str(" (");
        s.push_str(rng.ps(UNICODE));
        s.push(')');
    }
    s.push('.');
    s
}

/// `n` sentences separated by spaces.
pub fn prose(rng: &mut Rng, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&sentence(rng));
    }
    s
}

/// Between `lo` and `hi` sentences.
pub fn prose_n(rng: &mut Rng, lo: usize, hi: usize) -> String {
    let n = rng.range_usize(lo, hi);
    prose(rng, n)
}

/// A task phrase ("fix the ...").
pub fn task(rng: &mut Rng) -> &'static str {
    rng.ps(TASKS)
}

fn string_literal(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => format!("{} {}", rng.ps(WORDS), rng.ps(UNICODE)),
        1 => format!("{}\\n", sentence(rng)),
        2 => format!("{}: \\\"{}\\\"", rng.ps(WORDS), rng.ps(WORDS)),
        3 => format!("C:\\\\Users\\\\dev\\\\{}", rng.ps(WORDS)),
        4 => format!("{}\\t{}", rng.ps(WORDS), rng.ps(WORDS)),
        _ => format!("{} {}", rng.ps(WORDS), rng.ps(WORDS)),
    }
}

fn ts_statement(rng: &mut Rng, ind: &str, out: &mut String) {
    let a = camel(rng);
    let b = camel(rng);
    let c = camel(rng);
    match rng.below(18) {
        0 => {
            let _ = writeln!(
                out,
                "{ind}const {a} = {b}.{c}({}, \"{}\");",
                camel(rng),
                string_literal(rng)
            );
        }
        1 => {
            let _ = writeln!(
                out,
                "{ind}let {a}: {} = {};",
                rng.ps(TYPES_TS),
                rng.below(4096)
            );
        }
        2 => {
            let _ = writeln!(out, "{ind}if (!{a}) {{");
            let _ = writeln!(out, "{ind}\tthrow new Error(`Unknown {a}: ${{{b}}}`);");
            let _ = writeln!(out, "{ind}}}");
        }
        3 => {
            let _ = writeln!(out, "{ind}for (const {a} of {b}s) {{");
            let _ = writeln!(out, "{ind}\tif ({a}.{c} === undefined) continue;");
            let _ = writeln!(out, "{ind}\t{b}Total += {a}.{c}.length;");
            let _ = writeln!(out, "{ind}}}");
        }
        4 => {
            let _ = writeln!(out, "{ind}return {a}.replace(/\\s+/g, \" \").trim();");
        }
        5 | 6 => {
            let _ = writeln!(out, "{ind}// {}", sentence(rng));
        }
        7 => {
            let _ = writeln!(
                out,
                "{ind}logger.debug(\"{}\", {{ {a}, {b} }});",
                sentence(rng)
            );
        }
        8 => {
            let _ = writeln!(out, "{ind}const {a} = JSON.parse(raw) as {};", pascal(rng));
        }
        9 => {
            let _ = writeln!(out, "{ind}await fs.writeFile(path.join(dir, \"{a}.json\"), {b}.join(\"\\n\"), \"utf8\");");
        }
        10 => {
            let _ = writeln!(
                out,
                "{ind}const {a}Re = /^([A-Za-z_][\\w-]*):(\\d+)(?:-(\\d+))?$/;"
            );
        }
        11 => {
            let _ = writeln!(out, "{ind}{a}.set({b}.id, {{ ...{b}, {c}: Date.now() }});");
        }
        12 => {
            let _ = writeln!(
                out,
                "{ind}const {a}Label = '{} \"{}\"';",
                rng.ps(WORDS),
                rng.ps(UNICODE)
            );
        }
        13 => {
            let _ = writeln!(
                out,
                "{ind}return {{ ok: false, error: `{}` }};",
                sentence(rng)
            );
        }
        14 => {
            let _ = writeln!(
                out,
                "{ind}const {{ {a}, {b} = {} }} = options;",
                rng.below(100)
            );
        }
        15 => {
            let _ = writeln!(
                out,
                "{ind}if ({a}.length > MAX_{}) {{",
                snake(rng).to_uppercase()
            );
            let _ = writeln!(
                out,
                "{ind}\t{a} = {a}.slice(0, MAX_{});",
                snake(rng).to_uppercase()
            );
            let _ = writeln!(out, "{ind}}}");
        }
        16 => {
            let _ = writeln!(
                out,
                "{ind}const {a} = await this.{b}({c}, {{ signal, timeoutMs: {} }});",
                rng.range(100, 30_000)
            );
        }
        _ => {
            let _ = writeln!(out, "{ind}{a}.push(`${{{b}}}\\t${{{c}}}`);");
        }
    }
}

fn ts_function(rng: &mut Rng, out: &mut String) {
    let name = camel(rng);
    if rng.chance(0.3) {
        let _ = writeln!(
            out,
            "/**\n * {}\n * @param {} {}\n */",
            prose_n(rng, 1, 2),
            camel(rng),
            sentence(rng)
        );
    }
    let exported = if rng.chance(0.6) { "export " } else { "" };
    let asy = if rng.chance(0.4) { "async " } else { "" };
    let _ = writeln!(
        out,
        "{exported}{asy}function {name}({}: {}, {}: {}): {} {{",
        camel(rng),
        rng.ps(TYPES_TS),
        camel(rng),
        rng.ps(TYPES_TS),
        rng.ps(TYPES_TS)
    );
    for _ in 0..rng.range_usize(2, 9) {
        ts_statement(rng, "\t", out);
    }
    let _ = writeln!(out, "\treturn {};\n}}\n", camel(rng));
}

fn ts_file(rng: &mut Rng, target: usize, i18n: bool) -> String {
    let mut out = String::with_capacity(target + 2048);
    for _ in 0..rng.range_usize(2, 6) {
        let _ = writeln!(
            out,
            "import {{ {}, {} }} from \"./{}.js\";",
            pascal(rng),
            camel(rng),
            rng.ps(WORDS)
        );
    }
    out.push('\n');
    if i18n {
        out.push_str("export const messages = {\n");
        while out.len() < target / 2 {
            let _ = writeln!(
                out,
                "\t{}: \"{} {}\",",
                camel(rng),
                rng.ps(UNICODE),
                rng.ps(UNICODE)
            );
        }
        out.push_str("};\n\n");
    }
    while out.len() < target {
        if rng.chance(0.15) {
            let _ = writeln!(out, "export interface {} {{", pascal(rng));
            for _ in 0..rng.range_usize(2, 7) {
                let _ = writeln!(
                    out,
                    "\t{}{}: {};",
                    camel(rng),
                    if rng.chance(0.3) { "?" } else { "" },
                    rng.ps(TYPES_TS)
                );
            }
            out.push_str("}\n\n");
        } else {
            ts_function(rng, &mut out);
        }
    }
    out
}

fn rs_statement(rng: &mut Rng, ind: &str, out: &mut String) {
    let a = snake(rng);
    let b = snake(rng);
    match rng.below(14) {
        0 => {
            let _ = writeln!(
                out,
                "{ind}let {a} = {b}.split('\\n').map(str::trim).collect::<Vec<_>>();"
            );
        }
        1 => {
            let _ = writeln!(
                out,
                "{ind}let mut {a}: {} = Default::default();",
                rng.ps(TYPES_RS)
            );
        }
        2 => {
            let _ = writeln!(out, "{ind}if {a}.is_empty() {{\n{ind}    return Err(Error::new(format!(\"empty {a}: {{:?}}\", {b})));\n{ind}}}");
        }
        3 => {
            let _ = writeln!(
                out,
                "{ind}for {a} in {b}.iter() {{\n{ind}    total += {a}.len();\n{ind}}}"
            );
        }
        4 | 5 => {
            let _ = writeln!(out, "{ind}// {}", sentence(rng));
        }
        6 => {
            let _ = writeln!(out, "{ind}println!(\"{{}}\\t{{}}\", {a}, {b});");
        }
        7 => {
            let _ = writeln!(
                out,
                "{ind}assert_eq!(parse(\"\\\"{}\\\"\"), Ok({}));",
                rng.ps(WORDS),
                rng.below(100)
            );
        }
        8 => {
            let _ = writeln!(out, "{ind}let {a} = match {b} {{\n{ind}    Some(x) => x,\n{ind}    None => return Ok(None),\n{ind}}};");
        }
        9 => {
            let _ = writeln!(out, "{ind}let re = Regex::new(r\"^(\\w+):(\\d+)$\")?;");
        }
        10 => {
            let _ = writeln!(out, "{ind}self.{a}.insert({b}.id.clone(), {b});");
        }
        11 => {
            let _ = writeln!(out, "{ind}let path = \"C:\\\\Users\\\\dev\\\\{a}.json\";");
        }
        12 => {
            let _ = writeln!(out, "{ind}const LABEL: &str = \"{}\";", rng.ps(UNICODE));
        }
        _ => {
            let _ = writeln!(
                out,
                "{ind}{a} += {b}.bytes().filter(|b| *b == b'\\\\').count();"
            );
        }
    }
}

fn rs_file(rng: &mut Rng, target: usize) -> String {
    let mut out = String::with_capacity(target + 2048);
    let _ = writeln!(out, "//! {}\n", prose(rng, 2));
    for _ in 0..rng.range_usize(1, 4) {
        let _ = writeln!(
            out,
            "use crate::{}::{{{}, {}}};",
            snake(rng),
            pascal(rng),
            pascal(rng)
        );
    }
    out.push('\n');
    while out.len() < target {
        if rng.chance(0.2) {
            let _ = writeln!(
                out,
                "#[derive(Debug, Clone, PartialEq)]\npub struct {} {{",
                pascal(rng)
            );
            for _ in 0..rng.range_usize(2, 6) {
                let _ = writeln!(out, "    pub {}: {},", snake(rng), rng.ps(TYPES_RS));
            }
            out.push_str("}\n\n");
        } else if rng.chance(0.15) {
            let _ = writeln!(out, "#[test]\nfn {}() {{", snake(rng));
            for _ in 0..rng.range_usize(2, 6) {
                rs_statement(rng, "    ", &mut out);
            }
            out.push_str("}\n\n");
        } else {
            let _ = writeln!(out, "/// {}", sentence(rng));
            let _ = writeln!(
                out,
                "pub fn {}(&self, {}: {}) -> {} {{",
                snake(rng),
                snake(rng),
                rng.ps(TYPES_RS),
                rng.ps(TYPES_RS)
            );
            for _ in 0..rng.range_usize(2, 8) {
                rs_statement(rng, "    ", &mut out);
            }
            out.push_str("    Ok(())\n}\n\n");
        }
    }
    out
}

fn md_file(rng: &mut Rng, target: usize) -> String {
    let mut out = String::with_capacity(target + 2048);
    let _ = writeln!(
        out,
        "# {}\n\n{}\n",
        cap(&format!("{} {}", rng.ps(WORDS), rng.ps(WORDS))),
        prose(rng, 3)
    );
    while out.len() < target {
        match rng.below(6) {
            0 => {
                let _ = writeln!(out, "## {}\n", cap(rng.ps(WORDS)));
            }
            1 => {
                for _ in 0..rng.range_usize(2, 6) {
                    let _ = writeln!(out, "- `{}` — {}", camel(rng), sentence(rng));
                }
                out.push('\n');
            }
            2 => {
                out.push_str("| Setting | Default | Notes |\n|---------|---------|-------|\n");
                for _ in 0..rng.range_usize(2, 6) {
                    let _ = writeln!(
                        out,
                        "| `{}` | `{}` | {} |",
                        camel(rng),
                        rng.below(20_000),
                        sentence(rng)
                    );
                }
                out.push('\n');
            }
            3 => {
                out.push_str("```ts\n");
                for _ in 0..rng.range_usize(2, 6) {
                    ts_statement(rng, "", &mut out);
                }
                out.push_str("```\n\n");
            }
            _ => {
                let _ = writeln!(out, "{}\n", prose_n(rng, 2, 5));
            }
        }
    }
    out
}

fn json_value(rng: &mut Rng, depth: usize, ind: usize, out: &mut String) {
    let pad = "  ".repeat(ind);
    if depth == 0 || rng.chance(0.45) {
        match rng.below(5) {
            0 => {
                let _ = write!(out, "{}", rng.below(100_000));
            }
            1 => out.push_str(if rng.chance(0.5) { "true" } else { "false" }),
            2 => {
                let _ = write!(
                    out,
                    "\"{} \\\"{}\\\" {}\"",
                    rng.ps(WORDS),
                    rng.ps(WORDS),
                    rng.ps(UNICODE)
                );
            }
            _ => {
                let _ = write!(out, "\"{}\"", string_literal(rng));
            }
        }
        return;
    }
    if rng.chance(0.3) {
        out.push_str("[\n");
        let n = rng.range_usize(1, 4);
        for i in 0..n {
            let _ = write!(out, "{pad}  ");
            json_value(rng, depth - 1, ind + 1, out);
            out.push_str(if i + 1 < n { ",\n" } else { "\n" });
        }
        let _ = write!(out, "{pad}]");
    } else {
        out.push_str("{\n");
        let n = rng.range_usize(1, 6);
        for i in 0..n {
            let _ = write!(out, "{pad}  \"{}\": ", camel(rng));
            json_value(rng, depth - 1, ind + 1, out);
            out.push_str(if i + 1 < n { ",\n" } else { "\n" });
        }
        let _ = write!(out, "{pad}}}");
    }
}

fn json_file(rng: &mut Rng, target: usize) -> String {
    let mut out = String::with_capacity(target + 2048);
    out.push_str("{\n");
    let mut first = true;
    while out.len() < target {
        if !first {
            out.push_str(",\n");
        }
        first = false;
        let _ = write!(out, "  \"{}\": ", camel(rng));
        json_value(rng, 3, 1, &mut out);
    }
    out.push_str("\n}\n");
    out
}

fn sql_file(rng: &mut Rng, target: usize) -> String {
    let mut out = String::with_capacity(target + 1024);
    while out.len() < target {
        let t = snake(rng);
        let _ = writeln!(
            out,
            "-- {}\nCREATE TABLE IF NOT EXISTS {t} (\n  id TEXT PRIMARY KEY,",
            sentence(rng)
        );
        for _ in 0..rng.range_usize(2, 6) {
            let _ = writeln!(
                out,
                "  {} {} NOT NULL DEFAULT '{}',",
                snake(rng),
                rng.ps(&["TEXT", "INTEGER", "BLOB", "REAL"]),
                rng.ps(WORDS)
            );
        }
        let _ = writeln!(
            out,
            "  created_at INTEGER NOT NULL\n);\nCREATE INDEX idx_{t}_created ON {t}(created_at);"
        );
        let _ = writeln!(
            out,
            "INSERT INTO {t} (id, created_at) VALUES ('{}', {});\n",
            rng.next_u32(),
            rng.below(1 << 40)
        );
    }
    out
}

fn yaml_file(rng: &mut Rng, target: usize) -> String {
    let mut out = String::with_capacity(target + 1024);
    out.push_str("name: ci\non:\n  push:\n    branches: [main]\n  pull_request:\njobs:\n");
    while out.len() < target {
        let _ = writeln!(
            out,
            "  {}:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4",
            snake(rng).replace('_', "-")
        );
        for _ in 0..rng.range_usize(1, 5) {
            let _ = writeln!(
                out,
                "      - name: {}\n        run: {}",
                cap(rng.ps(WORDS)),
                bash_command_line(rng)
            );
        }
    }
    out
}

fn toml_file(rng: &mut Rng, target: usize) -> String {
    let mut out = String::with_capacity(target + 512);
    let _ = writeln!(
        out,
        "[package]\nname = \"{}\"\nversion = \"0.{}.{}\"\nedition = \"2021\"\n\n[dependencies]",
        snake(rng).replace('_', "-"),
        rng.below(20),
        rng.below(30)
    );
    while out.len() < target {
        let _ = writeln!(
            out,
            "{} = {{ version = \"{}.{}\", features = [\"{}\"] }}",
            snake(rng).replace('_', "-"),
            rng.below(5),
            rng.below(40),
            rng.ps(WORDS)
        );
    }
    out
}

/// Log lines: timestamps, levels, JSON payloads, stack traces, Windows paths, ANSI colours.
pub fn log_text(rng: &mut Rng, target: usize) -> String {
    let mut out = String::with_capacity(target + 1024);
    let mut t = 1_767_000_000_000i64 + rng.below(10_000_000_000) as i64;
    while out.len() < target {
        t += rng.range(1, 4000) as i64;
        let ts = super::jsonw::iso8601(t);
        match rng.weighted(&[50, 12, 6, 10, 6, 4]) {
            0 => {
                let _ = writeln!(
                    out,
                    "{ts} INFO  [{}] {} {} /api/{}/{} {} {}ms",
                    rng.ps(WORDS),
                    rng.ps(&["GET", "POST", "PUT", "DELETE"]),
                    rng.ps(&["200", "201", "204", "304"]),
                    rng.ps(WORDS),
                    rng.below(10_000),
                    rng.ps(&["", "ok"]),
                    rng.range(1, 900)
                );
            }
            1 => {
                let _ = writeln!(out, "{ts} WARN  [{}] {}", rng.ps(WORDS), sentence(rng));
            }
            2 => {
                let _ = writeln!(out, "{ts} ERROR [{}] Unhandled rejection: TypeError: Cannot read properties of undefined (reading '{}')", rng.ps(WORDS), camel(rng));
                for _ in 0..rng.range_usize(3, 8) {
                    let f = rng.pick(FILES).path;
                    let _ = writeln!(
                        out,
                        "    at {} (/home/dev/project/{}:{}:{})",
                        camel(rng),
                        f,
                        rng.range(1, 900),
                        rng.range(1, 80)
                    );
                }
            }
            3 => {
                let _ = writeln!(out, "{{\"level\":\"info\",\"ts\":{t},\"msg\":\"request \\\"{}\\\" done\",\"path\":\"C:\\\\Users\\\\dev\\\\{}\",\"tags\":[\"{}\"]}}", camel(rng), snake(rng), rng.ps(UNICODE));
            }
            4 => {
                let _ = writeln!(
                    out,
                    "{ts} \u{1b}[32mDEBUG\u{1b}[39m {}\t{}={}",
                    sentence(rng),
                    snake(rng),
                    rng.below(1 << 20)
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "{ts} INFO  [i18n] loaded locale {} ({})",
                    rng.ps(&["fr-FR", "ja-JP", "zh-CN", "de-DE", "ru-RU"]),
                    rng.ps(UNICODE)
                );
            }
        }
    }
    out
}

/// Contents of project file `spec`, generated from `rng`, about `target` bytes.
pub fn file_content(rng: &mut Rng, spec: &FileSpec, target: usize) -> String {
    match spec.lang {
        Lang::Ts => ts_file(rng, target, spec.path.contains("i18n")),
        Lang::Rs => rs_file(rng, target),
        Lang::Md => md_file(rng, target),
        Lang::Json => json_file(rng, target),
        Lang::Sql => sql_file(rng, target),
        Lang::Yaml => yaml_file(rng, target),
        Lang::Toml => toml_file(rng, target),
        Lang::Log => log_text(rng, target),
        Lang::Png => String::new(),
    }
}

/// A code snippet (used for `write` of a fresh file and for edit replacements).
pub fn snippet(rng: &mut Rng, lang: Lang, target: usize) -> String {
    match lang {
        Lang::Rs => {
            let mut out = String::new();
            while out.len() < target {
                rs_statement(rng, "    ", &mut out);
            }
            out
        }
        Lang::Md => {
            let mut out = String::new();
            while out.len() < target {
                let _ = writeln!(out, "- {}", sentence(rng));
            }
            out
        }
        _ => {
            let mut out = String::new();
            while out.len() < target {
                ts_statement(rng, "\t", &mut out);
            }
            out
        }
    }
}

/// A shell command line (for `bash` tool calls and user `!` commands).
pub fn bash_command_line(rng: &mut Rng) -> String {
    match rng.below(12) {
        0 => "npm test".to_string(),
        1 => format!(
            "npx vitest run {}",
            rng.ps(&[
                "test/router.test.ts",
                "test/compaction.test.ts",
                "test/session-manager.test.ts",
                "test/strings.test.ts"
            ])
        ),
        2 => "cargo test -p core".to_string(),
        3 => "npx tsc --noEmit".to_string(),
        4 => "git status".to_string(),
        5 => format!("git diff {}", rng.pick(FILES).path),
        6 => "git log --oneline -n 15".to_string(),
        7 => format!(
            "ls -la {}",
            rng.ps(&["src", "src/session", "test", "crates/core/src", "docs"])
        ),
        8 => format!(
            "tail -n {} logs/server.log",
            rng.ps(&["200", "500", "1000"])
        ),
        9 => "npm run build".to_string(),
        10 => format!(
            "find src -name \"*.ts\" | xargs grep -l \"{}\" | head -20",
            camel(rng)
        ),
        _ => "curl -s localhost:3000/api/health | jq .".to_string(),
    }
}

/// Output of `command` (about `target` bytes for open-ended outputs) and its exit code.
pub fn bash_output(rng: &mut Rng, command: &str, target: usize) -> (String, i32) {
    let mut out = String::with_capacity(target.min(200_000) + 512);
    let mut code = 0;
    if command.starts_with("npm test") || command.starts_with("npx vitest") {
        let fail = rng.chance(0.3);
        let color = rng.chance(0.3);
        let _ = writeln!(out, "\n RUN  v3.2.4 /home/dev/project\n");
        let mut files = 0;
        while out.len() < target {
            files += 1;
            let f = rng.ps(&[
                "test/router.test.ts",
                "test/compaction.test.ts",
                "test/session-manager.test.ts",
                "test/strings.test.ts",
            ]);
            if color {
                let _ = writeln!(
                    out,
                    " \u{1b}[32m✓\u{1b}[39m {f} ({} tests) {}ms",
                    rng.range(3, 60),
                    rng.range(4, 900)
                );
            } else {
                let _ = writeln!(
                    out,
                    " ✓ {f} ({} tests) {}ms",
                    rng.range(3, 60),
                    rng.range(4, 900)
                );
            }
            if rng.chance(0.3) {
                let _ = writeln!(
                    out,
                    "   ✓ {} > {} {}ms",
                    camel(rng),
                    sentence(rng),
                    rng.range(1, 90)
                );
            }
        }
        if fail {
            code = 1;
            let _ = writeln!(out, " ❯ test/compaction.test.ts (14 tests | 1 failed)\n   × {} > {}\n     → expected '{}' to be '{}'\n\n- Expected\n+ Received\n\n-   \"{}\"\n+   \"{}\"\n\n ❯ test/compaction.test.ts:{}:{}", camel(rng), sentence(rng), camel(rng), camel(rng), snake(rng), snake(rng), rng.range(10, 400), rng.range(1, 40));
            let _ = writeln!(
                out,
                "\n Test Files  1 failed | {files} passed ({})\n      Tests  1 failed | {} passed",
                files + 1,
                files * 12
            );
        } else {
            let _ = writeln!(out, "\n Test Files  {files} passed ({files})\n      Tests  {} passed ({})\n   Duration  {}.{}s", files * 12, files * 12, rng.range(1, 30), rng.below(100));
        }
    } else if command.starts_with("cargo test") {
        let _ = writeln!(out, "   Compiling core v0.3.1 (/home/dev/project/crates/core)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in {}.{}s\n     Running unittests src/lib.rs (target/debug/deps/core-{:016x})\n", rng.range(1, 60), rng.below(100), rng.next_u64());
        let mut n = 0;
        let fail = rng.chance(0.25);
        while out.len() < target {
            n += 1;
            let _ = writeln!(out, "test {}::tests::{} ... ok", snake(rng), snake(rng));
        }
        if fail {
            code = 101;
            let _ = writeln!(out, "test parser::tests::{} ... FAILED\n\nfailures:\n\n---- parser::tests::{} stdout ----\nthread 'parser::tests::{}' panicked at crates/core/src/parser.rs:{}:{}:\nassertion `left == right` failed\n  left: \"{}\\\\n\"\n right: \"{}\"\n\ntest result: FAILED. {n} passed; 1 failed; 0 ignored", snake(rng), snake(rng), snake(rng), rng.range(10, 900), rng.range(1, 60), camel(rng), camel(rng));
        } else {
            let _ = writeln!(out, "\ntest result: ok. {n} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in {}.{:02}s", rng.below(5), rng.below(100));
        }
    } else if command.starts_with("npx tsc") || command.starts_with("npm run build") {
        if rng.chance(0.5) {
            if command.starts_with("npm run build") {
                let _ = writeln!(out, "\n> project@1.4.0 build\n> tsc -p tsconfig.build.json && node scripts/bundle.js\n\nbundled 214 modules in {}ms → dist/index.js ({} kB)", rng.range(300, 4000), rng.range(100, 900));
            }
        } else {
            code = 2;
            while out.len() < target.min(6000) {
                let f = FILES[rng.index(28)].path;
                let _ = writeln!(out, "{f}({},{}): error TS{}: Argument of type '{}' is not assignable to parameter of type '{}'.", rng.range(1, 900), rng.range(1, 80), rng.range(2300, 2800), rng.ps(TYPES_TS), rng.ps(TYPES_TS));
            }
            let _ = writeln!(out, "\nFound {} errors.", rng.range(1, 30));
        }
    } else if command.starts_with("git status") {
        let _ = writeln!(out, "On branch feat/{}\nChanges not staged for commit:\n  (use \"git add <file>...\" to update what will be committed)\n", snake(rng).replace('_', "-"));
        let mut seen: Vec<&str> = Vec::new();
        for _ in 0..rng.range_usize(1, 8) {
            let p = rng.pick(FILES).path;
            if !seen.contains(&p) {
                seen.push(p);
                let _ = writeln!(out, "\tmodified:   {p}");
            }
        }
        out.push_str("\nno changes added to commit (use \"git add\" and/or \"git commit -a\")\n");
    } else if command.starts_with("git log") {
        for _ in 0..15 {
            let _ = writeln!(
                out,
                "{:07x} {}: {}",
                rng.next_u32() >> 4,
                rng.ps(&["fix", "feat", "chore", "refactor", "test", "docs"]),
                task(rng)
            );
        }
    } else if command.starts_with("git diff") {
        let f = command.trim_start_matches("git diff ").to_string();
        let _ = writeln!(
            out,
            "diff --git a/{f} b/{f}\nindex {:07x}..{:07x} 100644\n--- a/{f}\n+++ b/{f}",
            rng.next_u32() >> 4,
            rng.next_u32() >> 4
        );
        while out.len() < target.min(20_000) {
            let _ = writeln!(
                out,
                "@@ -{},7 +{},9 @@",
                rng.range(1, 500),
                rng.range(1, 500)
            );
            let mut hunk = String::new();
            snippet_into(rng, &mut hunk, 300);
            for line in hunk.lines() {
                let p = rng.ps(&[" ", " ", "+", "-"]);
                let _ = writeln!(out, "{p}{line}");
            }
        }
    } else if command.starts_with("ls") {
        let _ = writeln!(out, "total {}", rng.range(8, 400));
        for _ in 0..rng.range_usize(4, 30) {
            let _ = writeln!(
                out,
                "-rw-r--r--  1 dev dev {:>6} Jan {:>2} {:02}:{:02} {}.{}",
                rng.range(100, 90_000),
                rng.range(1, 31),
                rng.below(24),
                rng.below(60),
                snake(rng).replace('_', "-"),
                rng.ps(&["ts", "rs", "md", "json"])
            );
        }
    } else if command.starts_with("tail") {
        out = log_text(rng, target);
    } else if command.starts_with("find") {
        for _ in 0..rng.range_usize(0, 20) {
            let _ = writeln!(out, "{}", FILES[rng.index(28)].path);
        }
        if out.is_empty() {
            code = 123;
        }
    } else {
        let _ = writeln!(out, "{{\n  \"status\": \"ok\",\n  \"uptime\": {},\n  \"version\": \"1.4.{}\",\n  \"checks\": {{ \"db\": \"ok\", \"cache\": \"{}\" }}\n}}", rng.range(10, 1_000_000), rng.below(20), rng.ps(&["ok", "degraded"]));
    }
    (out, code)
}

fn snippet_into(rng: &mut Rng, out: &mut String, target: usize) {
    let start = out.len();
    while out.len() - start < target {
        ts_statement(rng, "\t", out);
    }
}

/// A user prompt.
pub fn user_prompt(rng: &mut Rng, focus: &[&str]) -> String {
    let f = focus.first().copied().unwrap_or("src/index.ts");
    match rng.weighted(&[30, 18, 14, 10, 8, 6, 14]) {
        0 => format!("Can you {} in `{f}`? {}", task(rng), prose_n(rng, 0, 3)),
        1 => format!(
            "{} Look at {} first.",
            cap(task(rng)),
            focus
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        2 => rng.ps(SHORT_PROMPTS).to_string(),
        3 => {
            let mut s = format!(
                "I'm getting this error when I run the server, can you {}?\n\n```\n",
                task(rng)
            );
            let n = rng.range_usize(400, 3000);
            s.push_str(&log_text(rng, n));
            s.push_str("```");
            s
        }
        4 => format!(
            "The {} labels show “{}” instead of “{}” in `{f}` — probably an encoding issue. {}",
            rng.ps(&["French", "Japanese", "German", "Chinese"]),
            rng.ps(&["Ã©", "â€™", "?", "\u{fffd}"]),
            rng.ps(UNICODE),
            prose(rng, 1)
        ),
        5 => {
            let mut s = format!(
                "Here is the spec for the next step:\n\n## {}\n\n",
                cap(task(rng))
            );
            for i in 0..rng.range_usize(3, 8) {
                let _ = writeln!(s, "{}. {}", i + 1, sentence(rng));
            }
            s.push_str("\nKeep the public API unchanged.");
            s
        }
        _ => format!("{}. {}", cap(task(rng)), prose_n(rng, 1, 4)),
    }
}

/// A thinking block's text.
pub fn thinking(rng: &mut Rng, focus: &[&str]) -> String {
    let f = focus.first().copied().unwrap_or("src/index.ts");
    let mut s = match rng.below(4) {
        0 => format!("The user wants me to {}. ", task(rng)),
        1 => format!(
            "Let me think about how `{}` flows through {f}. ",
            camel(rng)
        ),
        2 => {
            "The test output shows a failure; I need to find where the value diverges. ".to_string()
        }
        _ => format!("I should check {f} before editing anything. "),
    };
    s.push_str(&prose_n(rng, 1, 10));
    if rng.chance(0.3) {
        let _ = write!(
            s,
            "\n\nPlan:\n1. read {f}\n2. {}\n3. run the tests",
            task(rng)
        );
    }
    s
}

/// An opaque provider reasoning signature.
pub fn signature(rng: &mut Rng) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let n = rng.range_usize(60, 220) * 4;
    let mut s = String::with_capacity(n + 2);
    s.push_str("Er");
    for _ in 2..n {
        s.push(char::from(A[rng.index(64)]));
    }
    s
}

/// A short assistant remark before tool calls.
pub fn assistant_intro(rng: &mut Rng, focus: &[&str]) -> String {
    let f = focus.first().copied().unwrap_or("src/index.ts");
    match rng.below(7) {
        0 => format!(
            "I'll start by reading `{f}` to see how `{}` is wired up.",
            camel(rng)
        ),
        1 => "Let me check the tests.".to_string(),
        2 => format!("Found it: {}", sentence(rng)),
        3 => format!("Now let me update `{f}`:"),
        4 => format!(
            "The build fails because `{}` is `undefined` here. Let me fix that.",
            camel(rng)
        ),
        5 => format!(
            "Let me run the tests to verify the change. {}",
            sentence(rng)
        ),
        _ => prose_n(rng, 1, 3),
    }
}

/// The closing assistant message of a turn (markdown).
pub fn assistant_final(rng: &mut Rng, focus: &[&str]) -> String {
    let mut s = String::new();
    match rng.below(3) {
        0 => s.push_str("Done! Here's what I changed:\n\n## Changes\n\n"),
        1 => s.push_str("All tests pass now. Summary:\n\n"),
        _ => {
            let _ = write!(s, "{}\n\n", prose(rng, 2));
        }
    }
    for (i, f) in focus.iter().enumerate() {
        let _ = writeln!(s, "{}. **`{f}`** — {}", i + 1, prose_n(rng, 1, 3));
    }
    if rng.chance(0.4) {
        let _ = write!(
            s,
            "\n```\n Test Files  {} passed\n      Tests  {} passed\n```\n",
            rng.range(3, 20),
            rng.range(20, 400)
        );
    }
    if rng.chance(0.5) {
        let _ = write!(s, "\n{}", prose_n(rng, 1, 3));
    }
    if rng.chance(0.15) {
        let _ = write!(s, " {}", rng.ps(UNICODE));
    }
    s
}

/// A long markdown answer that was cut off (`stopReason: "length"`).
pub fn long_answer(rng: &mut Rng, target: usize) -> String {
    let mut s = md_file(rng, target);
    let cut = s.len() - s.len() / 7;
    let mut c = cut;
    while !s.is_char_boundary(c) {
        c -= 1;
    }
    s.truncate(c);
    s
}

/// Renders `files` as a `<files>` block grouped by directory (ctxfold/oh-my-pi style).
fn files_block(read: &[&str], modified: &[&str]) -> String {
    let mut all: Vec<(&str, &str)> = Vec::new();
    for f in read {
        all.push((f, "Read"));
    }
    for f in modified {
        all.push((f, if read.contains(f) { "RW" } else { "Write" }));
    }
    all.sort();
    let mut s = String::from("<files>\n");
    let mut dir = "";
    for (f, mode) in &all {
        let (d, base) = match f.rfind('/') {
            Some(i) => (&f[..i], &f[i + 1..]),
            None => ("", *f),
        };
        if d != dir && !d.is_empty() {
            let _ = writeln!(s, "# {d}/");
        }
        dir = d;
        let _ = writeln!(s, "{base} ({mode})");
    }
    s.push_str("</files>");
    s
}

/// A compaction summary (a few KB of markdown).
pub fn compaction_summary(rng: &mut Rng, read: &[&str], modified: &[&str]) -> String {
    let mut s = String::with_capacity(4096);
    let _ = write!(
        s,
        "## Goal\n{}. {}\n\n## Constraints & Preferences\n",
        cap(task(rng)),
        sentence(rng)
    );
    for _ in 0..rng.range_usize(2, 5) {
        let _ = writeln!(s, "- {}", sentence(rng));
    }
    s.push_str("\n## Progress\n### Done\n");
    for _ in 0..rng.range_usize(3, 9) {
        let _ = writeln!(s, "- [x] {} in `{}`", cap(task(rng)), rng.pick(FILES).path);
    }
    s.push_str("\n### In Progress\n");
    for _ in 0..rng.range_usize(1, 4) {
        let _ = writeln!(s, "- [ ] {}", sentence(rng));
    }
    s.push_str("\n### Blocked\n- (none)\n\n## Key Decisions\n");
    for _ in 0..rng.range_usize(2, 6) {
        let _ = writeln!(s, "- **`{}`**: {}", camel(rng), prose_n(rng, 1, 3));
    }
    s.push_str("\n## Next Steps\n");
    for i in 0..rng.range_usize(2, 6) {
        let _ = writeln!(s, "{}. {}", i + 1, cap(task(rng)));
    }
    s.push_str("\n## Critical Context\n");
    for _ in 0..rng.range_usize(2, 6) {
        let _ = writeln!(s, "- {}", prose_n(rng, 1, 3));
    }
    if !read.is_empty() || !modified.is_empty() {
        s.push('\n');
        s.push_str(&files_block(read, modified));
    }
    s
}

/// A branch summary.
pub fn branch_summary(rng: &mut Rng, read: &[&str], modified: &[&str]) -> String {
    let mut s = String::with_capacity(1500);
    let _ = write!(s, "## Goal\n{}.\n\n## Progress\n", cap(task(rng)));
    for _ in 0..rng.range_usize(1, 4) {
        let _ = writeln!(s, "- {}", sentence(rng));
    }
    let _ = write!(
        s,
        "\n## Outcome\nThe approach was abandoned: {}\n",
        sentence(rng)
    );
    if !read.is_empty() || !modified.is_empty() {
        s.push('\n');
        s.push_str(&files_block(read, modified));
    }
    s
}

/// A label text.
pub fn label(rng: &mut Rng) -> String {
    match rng.below(6) {
        0 => "checkpoint: tests green".to_string(),
        1 => "before refactor".to_string(),
        2 => format!("bookmark: {}", task(rng)),
        3 => format!("good state ✅ {}", rng.ps(WORDS)),
        4 => "release candidate".to_string(),
        _ => format!("{} done", cap(rng.ps(WORDS))),
    }
}

/// A `custom_message` note.
pub fn note(rng: &mut Rng) -> String {
    match rng.below(3) {
        0 => format!("Reminder from the todo extension: {}", task(rng)),
        1 => format!(
            "Project rules loaded from AGENTS.md:\n- {}\n- {}",
            sentence(rng),
            sentence(rng)
        ),
        _ => format!("Context note: {}", prose_n(rng, 1, 4)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generators_hit_their_targets() {
        let mut rng = Rng::new(11);
        for spec in FILES {
            if spec.lang == Lang::Png {
                continue;
            }
            let target = spec.min;
            let s = file_content(&mut rng, spec, target);
            assert!(s.len() >= target, "{}", spec.path);
            assert!(s.len() < target + 8_000, "{} {}", spec.path, s.len());
        }
        let big = log_text(&mut rng, 50_000);
        assert!(big.len() >= 50_000);
    }
}
