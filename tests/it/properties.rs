//! Property tests (issue 9): invariants over generated session trees, texts and shapes.
//! Sessions come from proptest strategies over the testkit's session description
//! (`ctxfold_testkit::spec`) and from its seeded generator; the checks are
//! `ctxfold_testkit::invariants`, shared with the fuzz targets of `fuzz/`.

use ctxfold::archive::blocks::{FrameData, HistoryOptions};
use ctxfold::archive::get_preserved_archive;
use ctxfold::compaction::commit::commit_snapcompact;
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::compaction::snapcompact::ArchiveOptions;
use ctxfold::context::inline::{Candidate, InlineInput};
use ctxfold::context::{build_context, build_context_with, BuildOptions, LeafSelector};
use ctxfold::render::{
    normalize, render_frames, BillingFamily, FallbackFonts, RenderOptions, ShapeVariant,
};
use ctxfold::session::CompactionBody;
use ctxfold::settings::{CompactionSettings, Strategy as Method};
use ctxfold::support::base64::base64_decode;
use ctxfold_testkit::invariants;
use ctxfold_testkit::spec::{self, Body, Call, EntrySpec, Parent, SessionSpec, Tool};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};

const WORDS: &[&str] = &[
    "fix",
    "the",
    "failing",
    "test",
    "src/a.ts",
    "src/b.rs",
    "PLAN.md",
    "skill://s",
    "é",
    "日本",
    "\t",
    "\u{1b}[1m",
    "😀",
    "\\",
    "\"",
    "{",
    "}",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::collection::vec(prop::sample::select(WORDS), 0..12).prop_map(|w| w.join(" ")),
        2 => any::<String>(),
        1 => (1usize..3000).prop_map(|n| "word ".repeat(n)),
        1 => (1usize..2500, prop::sample::select(vec!["```ts", "~~~", "<notes>"]))
            .prop_map(|(n, open)| {
                let close = if open.starts_with('<') { "</notes>" } else { "```" };
                format!("see:\n{open}\n{}\n{close}\nend", "code ".repeat(n))
            }),
    ]
}

fn tool() -> impl Strategy<Value = Tool> {
    prop::sample::select(Tool::ALL.to_vec())
}

fn path() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "src/a.ts",
        "src/a.ts:1-20",
        "src/b.rs",
        "PLAN.md",
        "skill://s",
    ])
    .prop_map(str::to_string)
}

/// A bashExecution `meta`: absent, or a truncation record of some form with limits and a
/// capture error at times; values of the wrong type now and then.
fn meta() -> BoxedStrategy<Option<Value>> {
    let n = || {
        prop_oneof![
            8 => (0u64..6_000_000).prop_map(Value::from),
            1 => Just(Value::Null),
            1 => prop::sample::select(vec!["12", "", "x"]).prop_map(Value::from),
        ]
        .boxed()
    };
    let range = move || {
        (n(), n())
            .prop_map(|(start, end)| json!({"start": start, "end": end}))
            .boxed()
    };
    let truncation = (
        prop::sample::select(vec!["head", "tail", "middle"]),
        prop::sample::select(vec!["lines", "bytes", "middle"]),
        (n(), n(), n(), n(), n()),
        (
            prop::option::of(range()),
            prop::option::of(range()),
            prop::option::of(range()),
        ),
        (
            prop::option::of(n()),
            prop::option::of(n()),
            prop::option::of(n()),
        ),
        (any::<bool>(), prop::option::of("[0-9]{1,3}")),
    )
        .prop_map(
            |(
                direction,
                by,
                (tl, tb, ol, ob, max),
                (shown, head, tail),
                (eb, el, next),
                (partial, id),
            )| {
                let mut t = json!({"direction": direction, "truncatedBy": by, "totalLines": tl,
                    "totalBytes": tb, "outputLines": ol, "outputBytes": ob, "maxBytes": max,
                    "partialLine": partial});
                for (k, v) in [
                    ("shownRange", shown),
                    ("headRange", head),
                    ("tailRange", tail),
                    ("elidedBytes", eb),
                    ("elidedLines", el),
                    ("nextOffset", next),
                    ("artifactId", id.map(Value::from)),
                ] {
                    if let Some(v) = v {
                        t[k] = v;
                    }
                }
                t
            },
        )
        .boxed();
    prop_oneof![
        2 => Just(None),
        3 => (
            prop::option::of(truncation),
            prop::option::of(prop::sample::select(vec!["write", "read"])),
            prop::option::of((n(), n())),
            prop::option::of(prop::collection::vec(text(), 0..4)),
        )
            .prop_map(|(truncation, error, limit, diagnostics)| {
                let mut m = json!({});
                if let Some(t) = truncation {
                    m["truncation"] = t;
                }
                if let Some(e) = error {
                    m["artifactError"] = e.into();
                }
                if let Some((reached, suggestion)) = limit {
                    m["limits"] = json!({"matchLimit": {"reached": reached, "suggestion": suggestion}});
                }
                if let Some(messages) = diagnostics {
                    m["diagnostics"] = json!({"summary": "n", "messages": messages});
                }
                Some(m)
            }),
    ]
    .boxed()
}

fn back() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![1 => Just(None), 7 => (1usize..6).prop_map(Some)]
}

fn body() -> impl Strategy<Value = Body> {
    let call = (0u8..8, tool(), path()).prop_map(|(id, tool, path)| Call { id, tool, path });
    prop_oneof![
        3 => (text(), prop_oneof![5 => Just(0u8), 1 => 1u8..3])
            .prop_map(|(text, images)| Body::User { text, images }),
        4 => (
            text(),
            prop::option::weighted(0.2, text()),
            prop::collection::vec(call, 0..3),
            prop::option::weighted(0.8, 0u64..200_000),
            prop_oneof![6 => Just(0u8), 6 => Just(1u8), 1 => 2u8..5],
        )
            .prop_map(|(text, thinking, calls, usage, stop)| Body::Assistant {
                text,
                thinking,
                calls,
                usage,
                stop
            }),
        4 => (0u8..8, tool(), text(), prop::bool::weighted(0.1), prop::bool::weighted(0.15))
            .prop_map(|(call, tool, text, is_error, useless)| Body::ToolResult {
                call,
                tool,
                text,
                is_error,
                useless
            }),
        1 => (text(), text(), meta()).prop_map(|(command, output, meta)| Body::Bash { command, output, meta }),
        1 => (text(), any::<bool>()).prop_map(|(text, display)| Body::CustomMessage { text, display }),
        1 => (text(), back(), 0u64..300_000).prop_map(|(summary, first_kept, tokens_before)| {
            Body::Compaction {
                summary,
                first_kept,
                tokens_before,
            }
        }),
        1 => (back(), text()).prop_map(|(from, summary)| Body::BranchSummary { from, summary }),
        1 => (back(), prop::option::of(text()))
            .prop_map(|(target, label)| Body::Label { target, label }),
        1 => prop::sample::select(vec!["openai/gpt-4o", "anthropic/claude-opus-4-7", "x"])
            .prop_map(|m| Body::ModelChange { model: m.into() }),
        1 => any::<String>().prop_map(Body::Raw),
    ]
}

fn entry() -> impl Strategy<Value = EntrySpec> {
    let parent = prop_oneof![
        1 => Just(Parent::Null),
        1 => Just(Parent::Unknown),
        1 => Just(Parent::Absent),
        3 => (2usize..8).prop_map(Parent::Back),
        14 => Just(Parent::Back(1)),
    ];
    (parent, prop::option::weighted(0.03, 1usize..4), body()).prop_map(|(parent, dup_id, body)| {
        EntrySpec {
            parent,
            dup_id,
            body,
        }
    })
}

/// A session tree of up to `max` entries.
fn session(max: usize) -> impl Strategy<Value = SessionSpec> {
    (
        prop::collection::vec(entry(), 0..max),
        prop::bool::weighted(0.9),
    )
        .prop_map(|(entries, trailing_newline)| SessionSpec {
            entries,
            trailing_newline,
        })
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        // Failures are reported with the shrunk input; no files are written next to the tests.
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Saving an unmodified session gives back its input bytes, for generated trees with bad
    /// lines, duplicate ids, unknown parents and no final newline.
    #[test]
    fn save_of_unmodified_session_is_its_input(spec in session(40)) {
        let bytes = spec::write(&spec);
        prop_assert!(invariants::load(&bytes).is_ok());
        invariants::save_roundtrip(&bytes).map_err(TestCaseError::fail)?;
    }

    /// The same for a valid header followed by arbitrary bytes (lines that are not JSON,
    /// invalid UTF-8, CR LF endings).
    #[test]
    fn save_of_arbitrary_lines_is_its_input(tail in prop::collection::vec(any::<u8>(), 0..400)) {
        let mut bytes = br#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#.to_vec();
        bytes.push(b'\n');
        bytes.extend_from_slice(&tail);
        invariants::save_roundtrip(&bytes).map_err(TestCaseError::fail)?;
    }

    /// The same inputs give the same bytes: two loads save alike and build the same contexts.
    #[test]
    fn load_and_build_are_deterministic(spec in session(30)) {
        let bytes = spec::write(&spec);
        let (a, b) = (invariants::load(&bytes).unwrap(), invariants::load(&bytes).unwrap());
        prop_assert_eq!(a.to_bytes(), b.to_bytes());
        for transcript in [false, true] {
            let opts = BuildOptions { transcript, ..Default::default() };
            let (ca, cb) = (build_context(&a, &opts).unwrap(), build_context(&b, &opts).unwrap());
            prop_assert_eq!(ca.to_json(&a), cb.to_json(&b));
        }
    }

    /// The LLM context never holds a tool result without its call before it, nor a call
    /// without its result after it, at any leaf of any tree.
    #[test]
    fn llm_context_keeps_tool_pairs(spec in session(40)) {
        let s = invariants::load(&spec::write(&spec)).unwrap();
        invariants::contexts(&s, 12).map_err(TestCaseError::fail)?;
    }

    /// Compaction on arbitrary trees: the cut point is never a tool result, a refused or
    /// failed compaction leaves the file byte-identical, a committed one keeps tool pairs.
    #[test]
    fn compaction_cut_and_failure_semantics(
        spec in session(40),
        keep in 0u64..3000,
        strategy in prop::sample::select(vec![Method::ContextFull, Method::Handoff]),
        answer in text(),
    ) {
        let mut s = invariants::load(&spec::write(&spec)).unwrap();
        invariants::compact(&mut s, strategy, keep, &answer).map_err(TestCaseError::fail)?;
        invariants::compact(&mut s, Method::ContextFull, keep / 2, "again")
            .map_err(TestCaseError::fail)?;
    }

    /// Pruning never changes the number of entries (or lines), only pruned tool results; the
    /// facts of the rewritten lines stay those a parse of them gives.
    #[test]
    fn pruning_keeps_every_entry(spec in session(40), protect in 0u64..2000, start in any::<bool>()) {
        let mut s = invariants::load(&spec::write(&spec)).unwrap();
        invariants::prune(&mut s, protect, start).map_err(TestCaseError::fail)?;
        ctxfold::tokens::verify_recorded_facts(&s).map_err(TestCaseError::fail)?;
        ctxfold::context::convert::verify_adopted_forms(&s).map_err(TestCaseError::fail)?;
        ctxfold::summary::request::verify_in_place_transcripts(&s).map_err(TestCaseError::fail)?;
        ctxfold::summary::anchors::verify_in_place_anchors(&s).map_err(TestCaseError::fail)?;
    }

    /// Shake rewrites only the lines it reports, with placeholders; the facts of the rewritten
    /// lines stay those a parse gives; a stale plan is refused (`invariants::shake`).
    #[test]
    fn shake_rewrites_only_what_it_reports(
        spec in session(40),
        protect in 0u64..3000,
        fence in 0u64..600,
        artifact in any::<bool>(),
    ) {
        let mut s = invariants::load(&spec::write(&spec)).unwrap();
        let mut cfg = ctxfold::shake::ShakeConfig::preset(ctxfold::shake::Preset::Aggressive);
        cfg.protect_tokens = protect;
        cfg.fence_min_tokens = fence;
        invariants::shake(&mut s, &cfg, artifact.then_some("A1")).map_err(TestCaseError::fail)?;
        ctxfold::tokens::verify_recorded_facts(&s).map_err(TestCaseError::fail)?;
        // shake thinking: every planned reasoning block goes, nothing else does.
        cfg.thinking = true;
        let plan = ctxfold::shake::plan_shake(&s, &cfg).unwrap();
        let report = ctxfold::shake::apply_shake(&mut s, &plan, None, 1).unwrap();
        prop_assert_eq!(report.thinking_blocks_dropped, plan.regions.len());
        prop_assert_eq!(report.tokens_freed, plan.tokens());
        prop_assert!(ctxfold::shake::plan_shake(&s, &cfg).unwrap().regions.is_empty());
        ctxfold::tokens::verify_recorded_facts(&s).map_err(TestCaseError::fail)?;
    }

    /// Shake's block finder keeps its invariants on any text.
    #[test]
    fn shake_block_ranges_are_whole_lines(
        lines in prop::collection::vec(
            prop_oneof![
                3 => prop::sample::select(vec!["```", "~~~", " ```x", "<a>", "</a>", "<b c>", "</b>", " </a>", " <a>", "<A>", "x"])
                    .prop_map(str::to_string),
                1 => any::<String>(),
            ],
            0..30,
        ),
    ) {
        invariants::block_ranges(&lines.join("\n")).map_err(TestCaseError::fail)?;
    }

    /// JSON text handed to JavaScript with its non-ASCII characters escaped is ASCII and JSON
    /// of the same value, whatever the strings hold.
    #[test]
    fn ascii_json_is_json_of_the_same_value(keys in prop::collection::vec(any::<String>(), 0..4), texts in prop::collection::vec(any::<String>(), 0..6)) {
        let v = serde_json::json!({ "texts": texts, "keys": keys.iter().map(|k| (k.clone(), serde_json::Value::from(k.len()))).collect::<serde_json::Map<_, _>>() });
        let text = ctxfold::support::json::js::stringify(&v);
        let mut out = String::new();
        ctxfold::support::json::js::write_ascii_json(&mut |p| out.push_str(p), &text);
        prop_assert!(out.is_ascii());
        prop_assert_eq!(ctxfold::support::json::parse(&out).ok(), Some(v));
    }

    /// The facts the load pass records of each message (estimates, heads, tool results, file
    /// calls, usage) are those a parse of the message gives, and every message of an ordinary
    /// role has them.
    #[test]
    fn load_pass_facts_equal_parsed_facts(spec in session(40)) {
        let s = invariants::load(&spec::write(&spec)).unwrap();
        ctxfold::tokens::verify_recorded_facts(&s).map_err(TestCaseError::fail)?;
        ctxfold::context::convert::verify_adopted_forms(&s).map_err(TestCaseError::fail)?;
        ctxfold::summary::request::verify_in_place_transcripts(&s).map_err(TestCaseError::fail)?;
        ctxfold::summary::anchors::verify_in_place_anchors(&s).map_err(TestCaseError::fail)?;
    }

    /// Lone surrogate escapes (what `JSON.stringify` writes for a JavaScript string holding
    /// half a pair) in the strings of generated sessions, each `é` written as `\ud83d` and each
    /// `日` as `\ude00` (a pair where the two meet): the file is written back as its input,
    /// every message parses (none reaches the model empty), the load pass facts equal that
    /// parse, which reads each lone surrogate as U+FFFD, and the contexts keep their pairs.
    #[test]
    fn lone_surrogate_escapes_are_read_and_kept(spec in session(30)) {
        let text = String::from_utf8(spec::write(&spec)).unwrap();
        let bytes = text.replace('é', r"\ud83d").replace('日', r"\ude00").into_bytes();
        invariants::save_roundtrip(&bytes).map_err(TestCaseError::fail)?;
        let s = invariants::load(&bytes).unwrap();
        for i in 0..s.len() {
            if let Some(m) = s.message_json(i) {
                prop_assert!(ctxfold::support::json::parse(&m).is_ok(), "entry {}: {}", i, m);
            }
        }
        ctxfold::tokens::verify_recorded_facts(&s).map_err(TestCaseError::fail)?;
        ctxfold::context::convert::verify_adopted_forms(&s).map_err(TestCaseError::fail)?;
        ctxfold::summary::request::verify_in_place_transcripts(&s).map_err(TestCaseError::fail)?;
        ctxfold::summary::anchors::verify_in_place_anchors(&s).map_err(TestCaseError::fail)?;
        invariants::contexts(&s, 8).map_err(TestCaseError::fail)?;
    }
}

fn variant() -> impl Strategy<Value = ShapeVariant> {
    // unifont16-bw needs the fallback font (tested with it in snapcompact_render.rs).
    prop::sample::select(
        ShapeVariant::ALL
            .into_iter()
            .filter(|v| *v != ShapeVariant::Unifont16Bw)
            .collect::<Vec<_>>(),
    )
}

proptest! {
    #![proptest_config(config(32))]

    /// Rendered frames stay within the options: at most `maxFrames`, the frame width, between
    /// the minimum height and the frame size tall, PNG headers that say so; the same text and
    /// options give the same bytes.
    #[test]
    fn frames_stay_within_their_options(
        text in prop_oneof![any::<String>(), (1usize..1500).prop_map(|n| "abc def ".repeat(n))],
        variant in variant(),
        size in 16u32..600,
        // Without a cap a long text at a small size renders thousands of frames: keep it
        // to short texts.
        max_frames in prop::option::weighted(0.9, 1usize..4),
        min_height in 0u32..128,
    ) {
        let fallbacks = FallbackFonts::new();
        let shape = variant.shape(BillingFamily::Anthropic);
        let _ = normalize(&text, shape.font, &fallbacks);
        let max_frames = max_frames.or((text.len() > 2_000).then_some(3));
        let opts = RenderOptions {
            size: Some(size),
            max_frames,
            min_height,
            ..RenderOptions::new(shape)
        };
        match render_frames(&text, &opts, &fallbacks) {
            Ok(frames) => {
                invariants::frames_within(&frames, &opts).map_err(TestCaseError::fail)?;
                prop_assert_eq!(render_frames(&text, &opts, &fallbacks).unwrap(), frames);
            }
            // Only a frame too small for one cell is refused.
            Err(e) => prop_assert!(shape.with_frame_size(size).check_fits(size).is_err(), "{e:?}"),
        }
    }
}

fn inline_candidate() -> impl Strategy<Value = Candidate> {
    (
        prop_oneof![0u64..3_500, 2_500u64..60_000],
        prop_oneof![0u32..3, 0u32..12],
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.9),
        prop::option::of(any::<bool>()),
    )
        .prop_map(
            |(tokens, frames, stays_text, printable, previous)| Candidate {
                tokens,
                frames,
                stays_text,
                printable,
                previous,
            },
        )
}

proptest! {
    #![proptest_config(config(512))]

    /// Inline imaging's plan keeps its rules (`invariants::inline_plan`) for any candidates,
    /// budgets, prices and cache states.
    #[test]
    fn inline_plans_keep_their_rules(
        tool_results in prop::collection::vec(inline_candidate(), 0..12),
        system_prompt in prop::option::of(inline_candidate()),
        budget in prop_oneof![0u32..10, 0u32..200],
        frame_tokens in prop_oneof![Just(1120u32), Just(2882), Just(3293), 0u32..6_000],
        has_user_message in any::<bool>(),
        warm in any::<bool>(),
    ) {
        let input = InlineInput { tool_results, system_prompt, budget, frame_tokens, has_user_message, warm };
        invariants::inline_plan(&input).map_err(TestCaseError::fail)?;
    }
}

/// The width and height of a base64 PNG, decoded.
fn png_size(b64: &str) -> Option<(u32, u32)> {
    let image = ctxfold_testkit::png::decode(&base64_decode(b64)?).ok()?;
    Some((image.width, image.height))
}

/// A linear conversation of `turns` read turns with long outputs (so there is history to
/// archive) and realistic usage.
fn conversation(turns: usize, words: usize) -> SessionSpec {
    let mut entries = Vec::new();
    let mut context = 0u64;
    for t in 0..turns {
        let text = format!("turn {t}: ") + &"lorem ipsum dolor sit amet ".repeat(words);
        context += text.len() as u64 / 2;
        entries.push(EntrySpec {
            parent: Parent::Back(1),
            dup_id: None,
            body: Body::User {
                text: format!("please read file {t}"),
                images: 0,
            },
        });
        entries.push(EntrySpec {
            parent: Parent::Back(1),
            dup_id: None,
            body: Body::Assistant {
                text: "reading".into(),
                thinking: None,
                calls: vec![Call {
                    id: (t % 8) as u8,
                    tool: Tool::Read,
                    path: format!("src/f{t}.rs"),
                }],
                usage: Some(context),
                stop: 1,
            },
        });
        entries.push(EntrySpec {
            parent: Parent::Back(1),
            dup_id: None,
            body: Body::ToolResult {
                call: (t % 8) as u8,
                tool: Tool::Read,
                text,
                is_error: false,
                useless: false,
            },
        });
        entries.push(EntrySpec {
            parent: Parent::Back(1),
            dup_id: None,
            body: Body::Assistant {
                text: format!("done with turn {t}"),
                thinking: None,
                calls: vec![],
                usage: Some(context),
                stop: 0,
            },
        });
    }
    SessionSpec {
        entries,
        trailing_newline: true,
    }
}

proptest! {
    #![proptest_config(config(12))]

    /// A snapcompact compaction's frames stay within the archive's frame cap and frame size,
    /// and a context built with provider budgets attaches at most `maxImages` image blocks of
    /// at most `maxFrameDataBytes` base64 bytes in total. The history outweighs five frames
    /// (5,024 tokens each) and their text edges, so the commit's no-reduction guard lets it
    /// through.
    #[test]
    fn snapcompact_frames_stay_within_budgets(
        turns in 8usize..12,
        words in 1500usize..3000,
        variant in prop::sample::select(vec![ShapeVariant::V8on22Bw, ShapeVariant::V8x8rBw, ShapeVariant::V11on16Bw]),
        frame_size in 200u32..900,
        max_frames in 1u32..6,
        max_images in 0usize..4,
        max_bytes in 0u64..60_000,
    ) {
        let mut s = invariants::load(&spec::write(&conversation(turns, words))).unwrap();
        let settings = CompactionSettings {
            strategy: Method::Snapcompact,
            keep_recent_tokens: 200,
            ..Default::default()
        };
        let plan = plan_compaction(&s, &settings, PlanOptions::default()).unwrap();
        let opts = ArchiveOptions {
            shape: Some(variant.shape(BillingFamily::Anthropic)),
            frame_size: Some(frame_size),
            max_frames: Some(max_frames),
            ..Default::default()
        };
        let committed = commit_snapcompact(&mut s, &plan, &opts, &FallbackFonts::new(), 0).unwrap();
        let body = s.body::<CompactionBody>(committed.index).unwrap();
        let archive = get_preserved_archive(body.preserve_data.as_ref()).unwrap();
        prop_assert!(archive.frames.len() <= max_frames as usize, "{} frames", archive.frames.len());
        for f in &archive.frames {
            let (w, h) = png_size(&f.data).unwrap();
            prop_assert!(w == frame_size && h <= frame_size, "{w}x{h} at {frame_size}");
        }
        let ctx = build_context_with(&s, &BuildOptions::default(), &HistoryOptions {
            max_images: Some(max_images),
            max_frame_data_bytes: Some(max_bytes),
            data: FrameData::Inline,
        }).unwrap();
        let mut images = 0;
        let mut data = 0;
        for m in &ctx.messages {
            let v: Value = serde_json::from_str(&m.json(&s)).unwrap();
            for b in v.get("blocks").and_then(Value::as_array).into_iter().flatten() {
                if b["type"] == "image" {
                    images += 1;
                    data += b["data"].as_str().unwrap().len() as u64;
                }
            }
        }
        prop_assert!(images <= max_images, "{images} images over {max_images}");
        prop_assert!(data <= max_bytes, "{data} bytes over {max_bytes}");
        // Without budgets every frame is attached.
        let all = build_context(&s, &BuildOptions::default()).unwrap();
        let attached: usize = all.messages.iter().map(|m| m.json(&s).matches("\"type\":\"image\"").count()).sum();
        prop_assert_eq!(attached, archive.frames.len());
        // Leaves before the compaction still build.
        build_context(&s, &BuildOptions { leaf: LeafSelector::Id("e0".into()), ..Default::default() }).unwrap();
    }
}

mod generated {
    use super::*;
    use ctxfold_testkit::{generate, GenOptions};

    fn options() -> impl Strategy<Value = GenOptions> {
        (
            any::<u64>(),
            20usize..300,
            any::<bool>(),
            any::<bool>(),
            prop::option::of(8_000u64..60_000),
        )
            .prop_map(|(seed, entries, branches, images, every)| GenOptions {
                seed,
                entries,
                branches,
                images,
                compaction_every_tokens: every,
                keep_recent_tokens: 4_000,
                size_scale: 0.4,
                ..GenOptions::default()
            })
    }

    proptest! {
        #![proptest_config(config(24))]

        /// Generated sessions (any seed): byte-identical saves, tool pairs at every leaf,
        /// and every successful compaction frees tokens (`tokensAfter < tokensBefore`).
        #[test]
        fn generated_sessions_hold_every_invariant(opts in options(), keep in 500u64..6000) {
            let bytes = generate(&opts);
            invariants::save_roundtrip(&bytes).map_err(TestCaseError::fail)?;
            let mut s = invariants::load(&bytes).unwrap();
            invariants::contexts(&s, 16).map_err(TestCaseError::fail)?;
            match invariants::compact(&mut s, Method::ContextFull, keep, "A short summary.")
                .map_err(TestCaseError::fail)?
            {
                invariants::Compacted::Done(before, after) => {
                    prop_assert!(after < before, "tokensAfter {after} ≥ tokensBefore {before}");
                }
                invariants::Compacted::Refused(_) => {}
            }
            invariants::prune(&mut s, 2_000, false).map_err(TestCaseError::fail)?;
        }
    }
}
