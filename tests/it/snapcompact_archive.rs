//! The archive cases of spec snapcompact §11 (50–67), restated against `compact`,
//! `planArchive`, the record helpers and `historyBlocks`.

use crate::common;
use ctxfold::archive::blocks::{history_blocks, HistoryBlock, HistoryOptions};
use ctxfold::archive::{get_preserved_archive, strip_preserved_archive, Archive, ArchiveFrame};
use ctxfold::compaction::snapcompact::{compact, ArchiveInput, ArchiveOptions, ArchiveResult};
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::text::serialize::{ArchiveMessage, AssistantBlock};
use ctxfold::render::FallbackFonts;
use ctxfold::summary::fileops::FileLists;
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn user(s: &str) -> ArchiveMessage {
    ArchiveMessage::User { text: s.into() }
}
fn asst(s: &str) -> ArchiveMessage {
    ArchiveMessage::Assistant {
        blocks: vec![AssistantBlock::Text(s.into())],
    }
}
fn orphan(s: &str) -> ArchiveMessage {
    ArchiveMessage::ToolResult {
        tool_call_id: "call-1".into(),
        text: s.into(),
        is_error: false,
        useless: false,
    }
}
fn default_messages() -> Vec<ArchiveMessage> {
    vec![
        user("Fix the login bug. The token expires too early!"),
        asst("Fixed the TTL comparison in src/login.ts."),
    ]
}

fn options(max_frames: u32) -> ArchiveOptions {
    ArchiveOptions {
        model: Target {
            id: Some("claude-opus-4-6".into()),
            api: Some("anthropic-messages".into()),
        },
        frame_size: Some(320),
        max_frames: Some(max_frames),
        ..ArchiveOptions::default()
    }
}

fn run(
    messages: &[ArchiveMessage],
    previous: Option<&Value>,
    previous_summary: Option<&str>,
    o: &ArchiveOptions,
) -> ArchiveResult {
    let lists = FileLists::default();
    compact(
        ArchiveInput {
            messages,
            previous_summary,
            previous_preserve_data: previous,
            file_lists: &lists,
            read_set: None,
        },
        o,
        &FallbackFonts::new(),
    )
    .unwrap()
}

/// Global palette index of a pixel colour: 7 black, 9 dim gray (spec §3.4).
fn has_colour(png: &[u8], rgb: [u8; 3]) -> bool {
    let image = ctxfold_testkit::png::decode_rgb(png).expect("PNG");
    image.data.chunks_exact(3).any(|p| p == rgb)
}

fn dim_rgb() -> [u8; 3] {
    let c = ctxfold::render::raster::PALETTE[9];
    [c[0], c[1], c[2]]
}

/// §11 case 50.
#[test]
fn small_archive_with_files() {
    let lists = FileLists {
        read_files: vec!["src/auth.ts".into()],
        modified_files: vec!["src/login.ts".into()],
    };
    let read: BTreeSet<String> = ["src/auth.ts".to_string()].into();
    let r = compact(
        ArchiveInput {
            messages: &default_messages(),
            previous_summary: None,
            previous_preserve_data: None,
            file_lists: &lists,
            read_set: Some(&read),
        },
        &options(80),
        &FallbackFonts::new(),
    )
    .unwrap();
    for t in [
        "HISTORY",
        "`¶user:`",
        "`¶call:`",
        "`¶call:name(args)//intent`",
    ] {
        assert!(r.summary.contains(t), "{t}");
    }
    assert!(r
        .summary
        .contains("FILES\n===================\n# src/\nauth.ts (Read)\nlogin.ts (Write)"));
    assert!(r.archive.frames.is_empty());
    assert!(r.archive.text_tail.is_none());
    assert_eq!(r.archive.truncated_chars, 0);
    let blocks = history_blocks(&r.archive, &HistoryOptions::default());
    assert!(matches!(&blocks[..], [HistoryBlock::Text(_)]));
}

/// §11 cases 51–52: a dim span opened in the text head carries into the first frame.
#[test]
fn dim_span_carries_from_head_into_frame() {
    let r = run(
        &[user("Run the suite."), orphan(&"FAIL ".repeat(330))],
        None,
        None,
        &options(2),
    );
    assert!(!r.frames.is_empty());
    assert!(has_colour(&r.frames[0].png, dim_rgb()));
    let mut o = options(2);
    o.serialize.dim_tool_results = false;
    let r = run(
        &[user("Run the suite."), orphan(&"all good ".repeat(200))],
        None,
        None,
        &o,
    );
    assert!(!r.frames.is_empty());
    assert!(!has_colour(&r.frames[0].png, dim_rgb()));
}

fn sentinel_text() -> String {
    format!(
        "HEAD sentinel AA. {}TAIL sentinel QQZZ.",
        "Important fact number one. ".repeat(400)
    )
}

/// §11 case 53 (the reference's layout: no user turns kept beside the frames).
#[test]
fn head_and_tail_sentinels_around_frames() {
    let mut o = options(5);
    o.retained_user_tokens = 0;
    let r = run(&[user(&sentinel_text())], None, None, &o);
    assert_eq!(r.archive.frames.len(), 5);
    assert!(r
        .archive
        .text_head
        .as_deref()
        .unwrap()
        .contains("HEAD sentinel AA."));
    assert!(r
        .archive
        .text_tail
        .as_deref()
        .unwrap()
        .contains("TAIL sentinel QQZZ."));
    let blocks = history_blocks(&r.archive, &HistoryOptions::default());
    assert_eq!(blocks.len(), 7);
    assert!(matches!(&blocks[0], HistoryBlock::Text(t) if t.contains("imaged middle below")));
    assert!(matches!(&blocks[6], HistoryBlock::Text(t) if t.contains("imaged middle above")));
    assert!(blocks[1..6]
        .iter()
        .all(|b| matches!(b, HistoryBlock::Image { .. })));
}

/// Issue 19 point 3: the user turns of a dropped middle are kept verbatim as text beside the
/// frames, within the retained-user budget, newest first; the next compaction carries them.
#[test]
fn dropped_user_turns_are_kept_verbatim() {
    let r = run(&[user(&sentinel_text())], None, None, &options(5));
    assert!(r.archive.truncated_chars > 0);
    let turns = r.archive.user_turns.clone().expect("user turns kept");
    assert!(turns.starts_with("\u{b6}user:"));
    assert!(turns.contains("Important fact number one."));
    assert_eq!(
        turns.encode_utf16().count() as u64,
        r.archive.truncated_chars + "\u{b6}user:".len() as u64 - 1,
        "the whole dropped middle was the user's message"
    );
    let blocks = history_blocks(&r.archive, &HistoryOptions::default());
    assert_eq!(blocks.len(), 8);
    assert!(
        matches!(&blocks[1], HistoryBlock::Text(t) if t.contains("user turns of the omitted middle"))
    );
    assert!(r.summary.contains("kept user turns"));
    // The record keeps them; a budget keeps the newest part only.
    let pd = json!({"snapcompact": r.archive.to_json()});
    assert_eq!(get_preserved_archive(Some(&pd)), Some(r.archive.clone()));
    let mut o = options(5);
    o.retained_user_tokens = 100;
    let small = run(&[user(&sentinel_text())], None, None, &o);
    let kept = small.archive.user_turns.expect("newest part kept");
    assert!(kept.len() <= 100 * 4 + "\u{b6}user:".len());
    assert!(turns.ends_with(kept.trim_start_matches("\u{b6}user:")));
    // Assistant text and tool output are not user turns.
    let r = run(
        &[
            user("short question"),
            asst(&"Important fact number one. ".repeat(400)),
        ],
        None,
        None,
        &options(5),
    );
    assert!(r.archive.truncated_chars > 0);
    assert_eq!(r.archive.user_turns, None);
}

#[test]
fn user_turns_of_a_dropped_middle() {
    use ctxfold::compaction::snapcompact::{retained_user_turns, user_turns};
    let t = "\u{b6}user:a\u{2588}b\u{2588}\u{b6}ai:x\u{2588}\u{b6}user:c\u{2588}\u{b6}call:f()";
    assert_eq!(
        user_turns(t, false),
        ["\u{b6}user:a\u{2588}b", "\u{b6}user:c"]
    );
    // Opening inside a user turn: its rest is a turn too.
    assert_eq!(
        user_turns("rest\u{2588}\u{b6}ai:x", true),
        ["\u{b6}user:rest"]
    );
    assert!(user_turns("rest\u{2588}\u{b6}ai:x", false).is_empty());
    // Earlier turns first; the newest win the budget.
    let prev = "\u{b6}user:one\u{2588}\u{b6}user:two";
    let all = retained_user_turns(Some(prev), &["\u{b6}user:three".to_string()], 1000);
    assert_eq!(
        all.as_deref(),
        Some("\u{b6}user:one\u{2588}\u{b6}user:two\u{2588}\u{b6}user:three")
    );
    let newest = retained_user_turns(Some(prev), &["\u{b6}user:three".to_string()], 6);
    assert_eq!(newest.as_deref(), Some("\u{b6}user:three"));
    assert_eq!(retained_user_turns(None, &[], 1000), None);
    assert_eq!(retained_user_turns(Some(prev), &[], 0), None);
}

/// §11 case 54: foveation (HQ 29 × 20 = 580, LQ 40 × 20 = 800 at 320 px).
#[test]
fn foveated_widths() {
    let text = "Important fact number one. ".repeat(1000);
    let r = run(&[user(&text)], None, None, &options(7));
    let cols: Vec<u64> = r.archive.frames.iter().map(|f| f.cols).collect();
    assert_eq!(cols, [29, 29, 29, 40, 29, 29, 29]);
    assert!(r.summary.contains("29 or 40 characters wide"));
    assert!(r.archive.truncated_chars > 0);
    assert_eq!(
        r.archive.text_head.as_ref().map(|s| s.chars().count()),
        Some(580)
    );
}

/// §11 case 55, with our fallback: the reference forces its Silver TTF; ours is GNU Unifont
/// (a decision of the spec README), so the forced fallback shape is `unifont16-bw`. 64 px,
/// maxFrames 1, "你好世界" × 200 → at least one frame, every frame in the fallback font.
#[test]
fn forced_fallback_font() {
    let fonts = common::fallbacks();
    let mut o = options(1);
    o.shape = Some(ctxfold::render::resolve_shape(
        ctxfold::render::ModelTarget::default(),
        Some(ctxfold::render::ShapeVariant::Unifont16Bw),
    ));
    o.frame_size = Some(64);
    let text = "你好世界".repeat(200);
    let lists = FileLists::default();
    let r = compact(
        ArchiveInput {
            messages: &[user(&text)],
            previous_summary: None,
            previous_preserve_data: None,
            file_lists: &lists,
            read_set: None,
        },
        &o,
        &fonts,
    )
    .expect("compacts");
    assert!(!r.archive.frames.is_empty());
    assert!(r.archive.frames.len() <= 1);
    for f in &r.archive.frames {
        assert_eq!(f.font.as_deref(), Some("unifont"), "{f:?}");
    }
}

/// §11 cases 56–58: re-compaction keeps the session start and adds the new turn.
#[test]
fn recompaction_carries_forward() {
    let first = run(
        &[user(&format!("HEAD SENTINEL. {}", sentinel_text()))],
        None,
        None,
        &options(5),
    );
    let prev = first.preserve_data.clone();
    let second = run(
        &[user("A short new turn NEWTURN.")],
        Some(&prev),
        None,
        &options(5),
    );
    let text = second.archive.text.clone().unwrap();
    assert!(text.contains("NEWTURN"));
    assert!(second
        .archive
        .text_tail
        .as_deref()
        .unwrap()
        .contains("NEWTURN"));
    assert_eq!(second.archive.frames.len(), 5);
    assert!(second
        .archive
        .text_head
        .as_deref()
        .unwrap()
        .contains("HEAD SENTINEL."));
    // Case 57: no new messages, fewer frames.
    let third = run(&[], Some(&second.preserve_data), None, &options(3));
    assert!((1..=3).contains(&third.archive.frames.len()));
    assert!(third
        .archive
        .text_head
        .as_deref()
        .unwrap()
        .contains("HEAD SENTINEL."));
    assert!(third.archive.truncated_chars >= second.archive.truncated_chars);
}

/// §11 cases 59–60: a previous text summary is folded into the head.
#[test]
fn previous_summary_is_folded_in() {
    let legacy = json!({"snapcompact": {"frames": [{"data": "AAAA", "mimeType": "image/png",
        "cols": 64, "rows": 40, "chars": 10}], "totalChars": 10, "truncatedChars": 0}});
    let r = run(
        &default_messages(),
        Some(&legacy),
        Some("Earlier we set up CI."),
        &options(80),
    );
    let text = r.archive.text.unwrap();
    assert!(text.starts_with(
        "[Summary of earlier history] Earlier we set up CI. [Recent conversation] ¶user:"
    ));
    assert!(r
        .summary
        .contains("condensed digest of still-older context"));
    let r = run(
        &default_messages(),
        None,
        Some("Earlier we set up CI."),
        &options(80),
    );
    assert!(r
        .summary
        .contains("condensed digest of still-older context"));
}

/// §11 case 61: provider payloads dropped, other keys kept, no summary folded when an
/// archive with text exists.
#[test]
fn preserve_data_rules() {
    let first = run(&default_messages(), None, None, &options(80));
    let mut prev = first.preserve_data.as_object().unwrap().clone();
    prev.insert("openaiRemoteCompaction".into(), json!({"x": 1}));
    prev.insert("appKey".into(), json!("keep"));
    let prev = Value::Object(prev);
    let r = run(
        &default_messages(),
        Some(&prev),
        Some("old summary"),
        &options(80),
    );
    assert!(!r
        .archive
        .text
        .unwrap()
        .contains("[Summary of earlier history]"));
    assert!(r.preserve_data.get("openaiRemoteCompaction").is_none());
    assert_eq!(r.preserve_data["appKey"], "keep");
    assert!(!r.summary.contains("condensed digest"));
}

/// §11 cases 62–63: thinking scrub of carried text.
#[test]
fn thinking_scrub() {
    let msgs = vec![
        user("Question here."),
        ArchiveMessage::Assistant {
            blocks: vec![
                AssistantBlock::Thinking("private reasoning SECRET".into()),
                AssistantBlock::Text("The reply.".into()),
            ],
        },
    ];
    let first = run(&msgs, None, None, &options(80));
    assert!(first.archive.text.as_deref().unwrap().contains("¶think:"));
    let mut o = options(80);
    o.serialize.include_thinking = false;
    let second = run(&[], Some(&first.preserve_data), None, &o);
    let t = second.archive.text.unwrap();
    assert!(!t.contains("¶think:") && !t.contains("SECRET"));
    assert!(t.contains("Question here.") && t.contains("The reply."));
    let again = run(&[], Some(&first.preserve_data), None, &options(80));
    assert!(again.archive.text.unwrap().contains("¶think:"));
}

fn frame(data: &str) -> ArchiveFrame {
    ArchiveFrame {
        data: data.into(),
        mime_type: "image/png".into(),
        cols: 29,
        rows: 20,
        chars: 580,
        font: Some("8x13".into()),
        variant: Some("bw".into()),
        line_repeat: None,
        columns: None,
        stopword_dim: None,
        detail: None,
        data_ref: None,
    }
}

/// §11 cases 64–66: record helpers.
#[test]
fn record_helpers() {
    assert!(get_preserved_archive(None).is_none());
    assert!(get_preserved_archive(Some(&json!({"snapcompact": 3}))).is_none());
    assert!(get_preserved_archive(Some(&json!({"snapcompact": {"frames": []}}))).is_none());
    let a = Archive {
        frames: vec![frame("QUJD")],
        total_chars: 580,
        truncated_chars: 0,
        ..Archive::default()
    };
    let pd = json!({"snapcompact": a.to_json()});
    assert_eq!(get_preserved_archive(Some(&pd)), Some(a));
    let t = Archive {
        text: Some("t".into()),
        text_head: Some("h".into()),
        ..Archive::default()
    };
    assert_eq!(
        get_preserved_archive(Some(&json!({"snapcompact": t.to_json()}))),
        Some(t)
    );
    let ft = Archive {
        frames: vec![frame("QUJD")],
        text_tail: Some("tail".into()),
        total_chars: 584,
        ..Archive::default()
    };
    assert_eq!(
        get_preserved_archive(Some(&json!({"snapcompact": ft.to_json()}))),
        Some(ft)
    );
    assert_eq!(strip_preserved_archive(None), None);
    let other = json!({"a": 1});
    assert_eq!(strip_preserved_archive(Some(&other)), Some(other.clone()));
    assert_eq!(
        strip_preserved_archive(Some(&json!({"a": 1, "snapcompact": {}}))),
        Some(other)
    );
    assert_eq!(
        strip_preserved_archive(Some(&json!({"snapcompact": {}}))),
        None
    );
}

/// §11 case 67 and the byte budget of §9.6.
#[test]
fn history_blocks_layout_and_budgets() {
    let a = Archive {
        frames: vec![frame("QUJD")],
        text_head: Some("head text".into()),
        text_tail: Some("tail text".into()),
        total_chars: 598,
        ..Archive::default()
    };
    let b = history_blocks(&a, &HistoryOptions::default());
    assert_eq!(b.len(), 3);
    assert!(matches!(&b[0], HistoryBlock::Text(t) if t.starts_with("head text")));
    assert!(matches!(&b[1], HistoryBlock::Image { data, .. } if data == "QUJD"));
    assert!(matches!(&b[2], HistoryBlock::Text(t) if t.ends_with("tail text")));
    // Two frames, room for one: the newest is kept, the notice precedes it.
    let two = Archive {
        frames: vec![frame("AAAA"), frame("BBBB")],
        ..a.clone()
    };
    let b = history_blocks(
        &two,
        &HistoryOptions {
            max_frame_data_bytes: Some(5),
            ..HistoryOptions::default()
        },
    );
    let imgs: Vec<&str> = b
        .iter()
        .filter_map(|x| match x {
            HistoryBlock::Image { data, .. } => Some(data.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(imgs, ["BBBB"]);
    assert!(
        matches!(&b[1], HistoryBlock::Text(t) if t.contains("1 archived image frame could not be included"))
    );
    // A blob reference without a resolver is an unavailable slot.
    let blob = Archive {
        frames: vec![frame("blob:sha256:abc")],
        ..a
    };
    let b = history_blocks(&blob, &HistoryOptions::default());
    assert!(b.iter().all(|x| matches!(x, HistoryBlock::Text(_))));
    assert!(b
        .iter()
        .any(|x| matches!(x, HistoryBlock::Text(t) if t.contains("unavailable"))));
}

// ----- the option readers (issue 19 point 3) -----------------------------------------------

mod option_readers {
    use ctxfold::compaction::snapcompact::{anthropic_dialect, model_class, ArchiveOptions};
    use ctxfold::settings::CompactionSettings;
    use ctxfold::wasm::interop::options::archive_options;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-5.0e3f64..5.0e3).prop_map(Value::from),
            (0u64..100_000).prop_map(Value::from),
            Just(json!("Infinity")),
            Just(json!("auto")),
            Just(json!("8on16-bw")),
            Just(json!("claude-opus-4-7")),
            "[a-z]{0,6}".prop_map(Value::from),
            Just(json!({})),
            Just(json!([1])),
        ]
    }

    const KEYS: [&str; 12] = [
        "shape",
        "toolResultMaxChars",
        "toolArgMaxChars",
        "toolCallMaxChars",
        "truncateHeadRatio",
        "dimToolResults",
        "includeThinking",
        "model",
        "maxFrames",
        "frameSize",
        "nonMessageTokens",
        "bogus",
    ];

    fn object() -> impl Strategy<Value = Value> {
        proptest::collection::vec((0..KEYS.len(), value()), 0..6).prop_map(|kv| {
            let mut m = serde_json::Map::new();
            for (k, v) in kv {
                m.insert(KEYS[k].to_string(), v);
            }
            Value::Object(m)
        })
    }

    proptest! {
        /// Any `snapcompact` settings object reads or fails with `E_SETTINGS` naming a
        /// `snapcompact` field; what reads survives a round trip through `to_json`.
        #[test]
        fn snapcompact_settings_read_or_name_the_field(o in object()) {
            match CompactionSettings::from_json(&json!({"snapcompact": o})) {
                Ok(s) => {
                    prop_assert_eq!(CompactionSettings::from_json(&s.to_json()).unwrap(), s);
                }
                Err(ctxfold::Error::Settings { field, .. }) => {
                    prop_assert!(field.starts_with("snapcompact"), "{}", field);
                }
                Err(e) => prop_assert!(false, "unexpected {:?}", e),
            }
        }

        /// The commit's options reader never panics; given nothing it returns the base, and
        /// an explicit `includeThinking` always wins over the model's rule.
        #[test]
        fn archive_options_reader(o in object()) {
            let base = ArchiveOptions::default();
            if let Ok(read) = archive_options(Some(&o), base.clone()) {
                if let Some(b) = o.get("includeThinking").and_then(Value::as_bool) {
                    prop_assert_eq!(read.serialize.include_thinking, b);
                }
                if o.as_object().is_some_and(|m| m.values().all(Value::is_null)) {
                    prop_assert_eq!(read, base);
                }
            }
        }

        /// Any model id classifies without panicking; a `claude…` or `anthropic/…` id that no
        /// stronger class claims is Anthropic.
        #[test]
        fn dialect_of_any_id(id in "[a-zA-Z0-9./:_ -]{0,24}") {
            let _ = model_class(&id);
            let claude = format!("claude-{}", id.trim().to_lowercase().replace(['/', ':'], ""));
            if !claude.contains("distill-qwen") {
                prop_assert!(anthropic_dialect(&claude), "{}", claude);
            }
        }
    }

    #[test]
    fn dialects_of_known_ids() {
        for (id, class) in [
            ("claude-opus-4-7", "anthropic"),
            ("claude-sonnet-4-5-thinking", "anthropic"),
            ("anthropic/claude-3.5-haiku", "anthropic"),
            ("us.anthropic.claude-opus-4-1", "anthropic"),
            ("gpt-5.1", "openai"),
            ("openai/gpt-oss-120b", "gpt-oss"),
            ("o3", "openai"),
            ("o3-high", "openai"),
            ("gemini-3-pro-preview", "gemini"),
            ("Qwen3.5-27B-Claude-4.6-Opus-Reasoning-Distilled", "qwen"),
            ("deepseek-r1-distill-qwen-32b", "qwen"),
            ("grok-4", "xai"),
            ("", "unknown"),
            ("my-model", "unknown"),
        ] {
            assert_eq!(model_class(id), class, "{id}");
        }
        assert!(
            !ArchiveOptions::for_model(ctxfold::render::shape::resolve::Target {
                id: Some("claude-opus-4-7".into()),
                api: None,
            })
            .serialize
            .include_thinking
        );
        assert!(
            ArchiveOptions::for_model(Default::default())
                .serialize
                .include_thinking
        );
    }
}
