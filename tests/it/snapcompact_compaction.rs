//! The snapcompact compaction strategy (spec: snapcompact §9, §11; compaction §8.3):
//! conformance against `../shared/conformance/snapcompact/compaction-claude-opus-4-7/`, and
//! successive compactions of a generated session.

use crate::common;
use crate::common::fallbacks;
use ctxfold_testkit::png::{decode_rgb, Image};

use ctxfold::compaction::commit::build_snapcompact;
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::compaction::snapcompact::ArchiveOptions;
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::FallbackFonts;
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::support::base64::base64_decode;
use serde_json::Value;
use std::time::Instant;

fn first_diff(a: &str, b: &str) -> String {
    let pos = a
        .chars()
        .zip(b.chars())
        .position(|(x, y)| x != y)
        .unwrap_or(a.chars().count().min(b.chars().count()));
    let ctx = |s: &str| {
        s.chars()
            .skip(pos.saturating_sub(80))
            .take(200)
            .collect::<String>()
    };
    format!(
        "lengths {} vs {} (chars); first difference at char {pos}:\n--- ours\n{:?}\n--- reference\n{:?}",
        a.chars().count(),
        b.chars().count(),
        ctx(a),
        ctx(b)
    )
}

/// The app's options for the reader: thinking left out for a Claude model.
fn opus_options() -> ArchiveOptions {
    let o = ArchiveOptions::for_model(Target {
        id: Some("claude-opus-4-7".into()),
        api: Some("anthropic-messages".into()),
    });
    assert!(!o.serialize.include_thinking);
    o
}

/// Plan options of an Anthropic reader (its image budget caps the archive's frames).
fn anthropic_plan() -> PlanOptions {
    let mut o = PlanOptions::default();
    o.prepare.active_provider = Some("anthropic".into());
    o
}

/// Exact conformance runs without a fallback font: the reference's fallback (Silver) lacks
/// the few symbols of this session that its bitmap font lacks (e.g. `➜`), so it printed `?`
/// for them, which is what our normalization does with no fallback registered.
#[test]
fn conformance_compaction_claude_opus_4_7() {
    check_conformance(&FallbackFonts::new(), true);
}

/// With GNU Unifont registered, the archive differs only where Unifont has a glyph the
/// reference's Silver lacked (the reference shows `?` there).
#[test]
fn conformance_compaction_with_unifont_differs_only_at_fallback_glyphs() {
    check_conformance(&fallbacks(), false);
}

fn check_conformance(fonts: &FallbackFonts, exact: bool) {
    let session = common::fixture_session();
    let dir = common::conformance_dir().join("snapcompact/compaction-claude-opus-4-7");
    let want: Value =
        serde_json::from_slice(&std::fs::read(dir.join("compaction.json")).unwrap()).unwrap();
    let want = &want["compaction"];
    let settings = CompactionSettings {
        strategy: Strategy::Snapcompact,
        ..CompactionSettings::default()
    };
    let t0 = Instant::now();
    let plan = plan_compaction(&session, &settings, anthropic_plan()).unwrap();
    assert!(plan.pending().is_empty(), "snapcompact sends no request");
    let built = build_snapcompact(&session, &plan, &opus_options(), fonts).unwrap();
    eprintln!("snapcompact conformance compaction: {:?}", t0.elapsed());

    assert_eq!(
        plan.preparation.first_kept_entry_id,
        want["firstKeptEntryId"].as_str().unwrap()
    );
    assert_eq!(
        plan.preparation.tokens_before,
        want["tokensBefore"].as_u64().unwrap()
    );
    let serialized = std::fs::read_to_string(dir.join("serialized-source.txt")).unwrap();
    assert!(
        built.serialized == serialized,
        "serialized source differs: {}",
        first_diff(&built.serialized, &serialized)
    );
    let text = std::fs::read_to_string(dir.join("archive-text.txt")).unwrap();
    let ours = built.archive.text.clone().unwrap_or_default();
    if !exact {
        assert_eq!(ours.chars().count(), text.chars().count());
        let mut diffs = 0;
        for (o, r) in ours.chars().zip(text.chars()) {
            if o != r {
                assert_eq!(r, '?', "only fallback glyphs may differ (ours {o:?})");
                diffs += 1;
            }
        }
        eprintln!("{diffs} characters print in Unifont where the reference printed `?`");
        assert_eq!(built.archive.frames.len(), 13);
        return;
    }
    assert!(
        ours == text,
        "archive text differs: {}",
        first_diff(&ours, &text)
    );
    let a = &want["archive"];
    assert_eq!(
        built.archive.frames.len() as u64,
        a["frames"].as_u64().unwrap()
    );
    assert_eq!(built.archive.total_chars, a["totalChars"].as_u64().unwrap());
    assert_eq!(
        built.archive.truncated_chars,
        a["truncatedChars"].as_u64().unwrap()
    );
    assert_eq!(built.short_summary, want["shortSummary"].as_str().unwrap());
    assert_eq!(
        serde_json::to_value(&want["details"]).unwrap(),
        serde_json::json!({
            "readFiles": plan.file_lists.read_files,
            "modifiedFiles": plan.file_lists.modified_files,
        })
    );
    for (i, (frame, rec)) in built.frames.iter().zip(&built.archive.frames).enumerate() {
        let meta = &want["frames"][i];
        assert_eq!(
            u64::from(frame.width),
            meta["width"].as_u64().unwrap(),
            "frame {i} width"
        );
        assert_eq!(
            u64::from(frame.height),
            meta["height"].as_u64().unwrap(),
            "frame {i} height"
        );
        assert_eq!(
            rec.chars,
            meta["chars"].as_u64().unwrap(),
            "frame {i} chars"
        );
        assert_eq!(rec.cols, meta["cols"].as_u64().unwrap(), "frame {i} cols");
        assert_eq!(rec.rows, meta["rows"].as_u64().unwrap(), "frame {i} rows");
        assert_eq!(rec.font.as_deref(), meta["font"].as_str(), "frame {i} font");
        assert_eq!(
            rec.variant.as_deref(),
            meta["variant"].as_str(),
            "frame {i} variant"
        );
        // The record's payload is the PNG.
        assert_eq!(base64_decode(&rec.data).as_deref(), Some(&frame.png[..]));
        let reference = std::fs::read(dir.join(format!("frame-{i:03}.png"))).unwrap();
        let Image {
            width: rw,
            height: rh,
            data: rpx,
            ..
        } = decode_rgb(&reference).unwrap();
        let Image {
            width: ow,
            height: oh,
            data: opx,
            ..
        } = decode_rgb(&frame.png).unwrap();
        assert_eq!((ow, oh), (rw, rh), "frame {i} size");
        if opx != rpx {
            let w = ow as usize * 3;
            let rows: Vec<usize> = (0..oh as usize)
                .filter(|&y| opx[y * w..(y + 1) * w] != rpx[y * w..(y + 1) * w])
                .collect();
            panic!(
                "frame {i}: pixel rows differ: {} rows, first {:?}",
                rows.len(),
                &rows[..rows.len().min(10)]
            );
        }
    }
    // The reading guide (our wording) states the reference's geometry and conventions.
    let guide = &built.summary;
    for token in [
        "`¶user:`",
        "`¶think:`",
        "`¶ai:`",
        "`¶call:`",
        "`¶call:name(args)//intent`",
        "`<out>…</out>`",
        "175 characters wide",
        "120 rows",
        "\nFILES\n===================\n",
        "\nHISTORY\n===================",
    ] {
        assert!(guide.contains(token), "guide lacks {token:?}:\n{guide}");
    }
    let reference_guide = want["readingGuideSummary"].as_str().unwrap();
    let files = |s: &str| {
        let from = s.find("FILES\n").map(|i| i + 6).unwrap_or(0);
        let to = s.find("\n\nHISTORY").unwrap_or(s.len());
        s[from..to].to_string()
    };
    assert_eq!(files(guide), files(reference_guide), "FILES tree");
    assert!(guide.ends_with("HISTORY\n==================="));
}

// ----- successive compactions of a generated session ----------------------------------------

use ctxfold::archive::blocks::HistoryOptions;
use ctxfold::archive::get_preserved_archive;
use ctxfold::compaction::commit::commit_snapcompact;
use ctxfold::context::{build_context, build_context_with, BuildOptions};
use ctxfold::render::{BillingFamily, ShapeVariant};
use ctxfold::session::{CompactionBody, Session};
use ctxfold::AgentMessage;
use serde_json::json;

fn words(turn: usize, n: usize) -> String {
    (0..n)
        .map(|i| format!("fact{turn}x{i} is recorded"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn assistant_json(text: &str, input_tokens: u64) -> Value {
    json!({"role":"assistant","content":[{"type":"text","text":text}],"api":"anthropic-messages",
        "provider":"anthropic","model":"claude-opus-4-7",
        "usage":{"input":input_tokens,"output":50,"cacheRead":0,"cacheWrite":0,"totalTokens":input_tokens + 50},
        "stopReason":"stop","timestamp":2})
}

/// Appends `turns` user/assistant turns; usage grows with the estimated context.
fn add_turns(s: &mut Session, from: usize, turns: usize, now: &mut i64) {
    for t in from..from + turns {
        *now += 1000;
        let user = if t == 0 {
            "HEAD SENTINEL. Start of the session.".to_string()
        } else {
            format!("Turn {t}: {}", words(t, 200))
        };
        s.append_message(json!({"role":"user","content":user,"timestamp":*now}), *now)
            .unwrap();
        let ctx = build_context(s, &BuildOptions::default()).unwrap();
        let used = ctx.estimated_tokens(s);
        *now += 1000;
        s.append_message(
            assistant_json(&format!("Reply {t}: {}", words(t, 200)), used),
            *now,
        )
        .unwrap();
    }
}

fn small_options(max_frames: u32) -> ArchiveOptions {
    let shape = ShapeVariant::V11on16Bw.shape(BillingFamily::Anthropic);
    ArchiveOptions {
        model: Target {
            id: Some("claude-opus-4-7".into()),
            api: Some("anthropic-messages".into()),
        },
        shape: Some(shape),
        frame_size: Some(320),
        max_frames: Some(max_frames),
        // The reference's carry-forward, without the user turns kept beside the frames.
        retained_user_tokens: 0,
        ..ArchiveOptions::default()
    }
}

fn latest_archive(s: &Session) -> (CompactionBody, ctxfold::archive::Archive) {
    let i = (0..s.len())
        .rev()
        .find(|&i| s.entries()[i].kind() == ctxfold::session::EntryKind::Compaction)
        .unwrap();
    let body: CompactionBody = s.body(i).unwrap();
    let archive = get_preserved_archive(body.preserve_data.as_ref()).unwrap();
    (body, archive)
}

#[test]
fn successive_snapcompact_compactions() {
    let (mut s, mut now, settings) = forty_turns();
    let max_frames = 3u32;
    let mut previous_text: Option<(String, u64)> = None;
    for round in 0..3 {
        let plan = plan_compaction(&s, &settings, PlanOptions::default())
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert!(plan.pending().is_empty() && plan.is_complete());
        let tokens_before = plan.preparation.tokens_before;
        let committed = commit_snapcompact(
            &mut s,
            &plan,
            &small_options(max_frames),
            &FallbackFonts::new(),
            now,
        )
        .unwrap();
        let (body, archive) = latest_archive(&s);
        assert_eq!(body.method.as_deref(), Some("snapcompact"));
        assert!(!archive.frames.is_empty() && archive.frames.len() <= max_frames as usize);
        let text = archive.text.clone().unwrap();
        // Pinned head: the session start stays in the verbatim head.
        assert!(
            archive
                .text_head
                .as_deref()
                .unwrap()
                .contains("HEAD SENTINEL."),
            "round {round}"
        );
        // Carry-forward: the previous archive's source is re-rendered first: its text head
        // and first imaged page (one HQ capacity each, 580 at 320 px) open the new source;
        // the dense centre loses its oldest pages, so truncation only grows.
        if let Some((prev, prev_truncated)) = &previous_text {
            let opening: String = prev.chars().take(2 * 580).collect();
            assert!(
                text.starts_with(&opening),
                "round {round}: previous archive not carried"
            );
            assert!(archive.truncated_chars > *prev_truncated);
        }
        previous_text = Some((text, archive.truncated_chars));
        // Budgets: frames within maxFrames, payload within the per-request byte budget.
        let bytes: usize = archive.frames.iter().map(|f| f.data.len()).sum();
        assert!(bytes <= 3_000_000);
        assert!(
            committed.tokens_after < tokens_before,
            "round {round}: {} !< {tokens_before}",
            committed.tokens_after
        );
        // Context rebuild: the summary message carries head, frames, tail; `tokensAfter`
        // (counted without the frames' payload) is its estimate.
        let ctx = build_context(&s, &BuildOptions::default()).unwrap();
        assert_eq!(committed.tokens_after, ctx.estimated_tokens(&s));
        let AgentMessage::CompactionSummary(m) = &ctx.messages[0].message(&s) else {
            panic!("first message is the compaction summary");
        };
        let blocks = m.blocks.as_ref().unwrap();
        let images = blocks
            .iter()
            .filter(|b| matches!(b, ctxfold::session::message::ContentBlock::Image { .. }))
            .count();
        assert_eq!(images, archive.frames.len());
        // An image budget keeps the newest frames and says what was left out.
        let ctx = build_context_with(
            &s,
            &BuildOptions::default(),
            &HistoryOptions {
                max_images: Some(2),
                ..HistoryOptions::default()
            },
        )
        .unwrap();
        let AgentMessage::CompactionSummary(m) = &ctx.messages[0].message(&s) else {
            panic!();
        };
        let blocks = m.blocks.as_ref().unwrap();
        let images = blocks
            .iter()
            .filter(|b| matches!(b, ctxfold::session::message::ContentBlock::Image { .. }))
            .count();
        assert_eq!(images, 2.min(archive.frames.len()));
        add_turns(&mut s, 40 + round * 20, 20, &mut now);
    }
}

/// Issue 19 point 3: the commit caps the frames by the provider's image budget (a host
/// override here), keeps the dropped user turns, and a plain plan/commit with the plan's model
/// archives what explicit options for that model give.
#[test]
fn commit_caps_frames_by_the_provider_and_keeps_user_turns() {
    use ctxfold::compaction::commit::snapcompact_options;
    let (s, _, settings) = forty_turns();
    let model = Target {
        id: Some("claude-opus-4-7".into()),
        api: Some("anthropic-messages".into()),
    };
    let plan_options = PlanOptions {
        model: model.clone(),
        ..anthropic_plan()
    };
    let plan = plan_compaction(&s, &settings, plan_options).unwrap();
    // The plan's own options are the app's for its model.
    let from_plan = snapcompact_options(&plan).unwrap();
    assert_eq!(from_plan, ArchiveOptions::for_model(model));
    let mut capped = small_options(80);
    capped.retained_user_tokens = 64_000;
    capped.image_budgets.set_count("anthropic".into(), 2);
    let built = build_snapcompact(&s, &plan, &capped, &FallbackFonts::new()).unwrap();
    assert_eq!(built.archive.frames.len(), 2, "the provider takes 2 images");
    assert!(built.archive.truncated_chars > 0);
    let turns = built
        .archive
        .user_turns
        .as_deref()
        .expect("user turns kept");
    assert!(turns.contains("Turn 5: fact5x0 is recorded"));
    // No provider: the API family's budget (90), within the byte budget's 17 frames; with
    // neither, the floor of 5 images.
    let plan = plan_compaction(&s, &settings, PlanOptions::default()).unwrap();
    let built = build_snapcompact(&s, &plan, &small_options(80), &FallbackFonts::new()).unwrap();
    assert_eq!(built.archive.frames.len(), 17);
    let mut o = small_options(80);
    o.model.api = None;
    let built = build_snapcompact(&s, &plan, &o, &FallbackFonts::new()).unwrap();
    assert_eq!(built.archive.frames.len(), 5);
    // A known window leaves the turns a quarter of the frame tokens at most.
    let windowed = PlanOptions {
        context_window: 60_000,
        ..anthropic_plan()
    };
    let plan = plan_compaction(&s, &settings, windowed).unwrap();
    let mut o = small_options(80);
    o.retained_user_tokens = 64_000;
    let built = build_snapcompact(&s, &plan, &o, &FallbackFonts::new()).unwrap();
    let kept = built.archive.user_turns.as_deref().map_or(0, str::len) as u64;
    assert!(kept.div_ceil(4) <= 60_000 / 4, "{kept} bytes of user turns");
    // The session is unchanged by building.
    let before = s.to_bytes();
    let _ = build_snapcompact(&s, &plan, &o, &FallbackFonts::new()).unwrap();
    assert_eq!(s.to_bytes(), before);
}

// ----- the no-reduction guard and the window fit (spec: compaction §8.3) ---------------------

use ctxfold::ErrorCode;

/// A session of 40 turns of [`add_turns`], its clock, and snapcompact settings keeping 2,000
/// tokens.
fn forty_turns() -> (Session, i64, CompactionSettings) {
    let mut s = new_session();
    let mut now = 0i64;
    add_turns(&mut s, 0, 40, &mut now);
    let settings = CompactionSettings {
        strategy: Strategy::Snapcompact,
        keep_recent_tokens: 2_000,
        ..CompactionSettings::default()
    };
    (s, now, settings)
}

fn new_session() -> Session {
    Session::create(
        ctxfold::session::NewSession {
            id: "guard".into(),
            cwd: "/w".into(),
            now: 0,
            parent_session: None,
        },
        Box::new(ctxfold::session::SequentialIds::new()),
    )
}

/// Appends `turns` one-line user/assistant turns.
fn add_short_turns(s: &mut Session, turns: usize, now: &mut i64) {
    for t in 0..turns {
        *now += 1000;
        s.append_message(
            json!({"role":"user","content":format!("ok {t}"),"timestamp":*now}),
            *now,
        )
        .unwrap();
        *now += 1000;
        s.append_message(assistant_json(&format!("done {t}"), 100), *now)
            .unwrap();
    }
}

/// Appends `turns` turns in which the assistant reads `files` files and answers at length.
fn add_read_turns(s: &mut Session, from: usize, turns: usize, files: usize, now: &mut i64) {
    for t in from..from + turns {
        *now += 1000;
        s.append_message(
            json!({"role":"user","content":format!("Turn {t}: {}", words(t, 100)),"timestamp":*now}),
            *now,
        )
        .unwrap();
        let paths: Vec<String> = (0..files)
            .map(|f| format!("/w/packages/module-{t}/src/components/deeply/nested/directory/file-{f}-of-turn-{t}.ts"))
            .collect();
        let calls: Vec<Value> = paths
            .iter()
            .enumerate()
            .map(|(f, p)| json!({"type":"toolCall","id":format!("c{t}x{f}"),"name":"read","arguments":{"path":p}}))
            .collect();
        *now += 1000;
        let mut a = assistant_json("", 100);
        a["content"] = Value::Array(calls);
        a["stopReason"] = "toolUse".into();
        s.append_message(a, *now).unwrap();
        for f in 0..files {
            *now += 10;
            s.append_message(
                json!({"role":"toolResult","toolCallId":format!("c{t}x{f}"),"toolName":"read",
                    "content":[{"type":"text","text":format!("export const v{f} = {t};")}],"isError":false,"timestamp":*now}),
                *now,
            )
            .unwrap();
        }
        *now += 1000;
        s.append_message(
            assistant_json(&format!("Reply {t}: {}", words(t, 150)), 100),
            *now,
        )
        .unwrap();
    }
}

fn context_estimate(s: &Session) -> u64 {
    build_context(s, &BuildOptions::default())
        .unwrap()
        .estimated_tokens(s)
}

fn snap_settings(keep: u64) -> CompactionSettings {
    CompactionSettings {
        strategy: Strategy::Snapcompact,
        keep_recent_tokens: keep,
        ..CompactionSettings::default()
    }
}

fn opus_plan(window: u64) -> PlanOptions {
    PlanOptions {
        context_window: window,
        model: Target {
            id: Some("claude-opus-4-7".into()),
            api: Some("anthropic-messages".into()),
        },
        ..anthropic_plan()
    }
}

fn assert_no_reduction(r: ctxfold::Result<ctxfold::compaction::commit::Committed>, why: &str) {
    match r {
        Err(e) => {
            assert_eq!(e.code(), ErrorCode::NoReduction, "{e}");
            assert!(e.to_string().contains(why), "{e}");
        }
        Ok(c) => panic!("committed with tokensAfter {}", c.tokens_after),
    }
}

/// Spec: compaction §8.3 (an unproductive method advances to the next). A history of
/// one-line turns is lighter than the reading guide alone: the archive is built, but the
/// commit refuses it and writes nothing.
#[test]
fn an_archive_heavier_than_a_short_history_is_refused() {
    let mut now = 0;
    let mut s = new_session();
    add_short_turns(&mut s, 30, &mut now);
    let plan = plan_compaction(&s, &snap_settings(20), anthropic_plan()).unwrap();
    let before = context_estimate(&s);
    let built = build_snapcompact(&s, &plan, &opus_options(), &FallbackFonts::new()).unwrap();
    assert!(
        built.archive.frames.is_empty(),
        "all of it fits the text edges"
    );
    assert!(
        built.summary.len() as u64 / 4 > before,
        "the guide alone outweighs the history"
    );
    let bytes = s.to_bytes();
    let r = commit_snapcompact(&mut s, &plan, &opus_options(), &FallbackFonts::new(), now);
    assert_no_reduction(r, "would not reduce the context");
    assert_eq!(s.to_bytes(), bytes, "nothing appended");
}

/// Frames charged 5,024 tokens each that print 580 characters each (small frames) outweigh
/// the text they replace once the window allows many of them (the scripted agent's
/// `tokensAfter > tokensBefore`, issue 19); a smaller window's cap gives a lighter archive
/// that is committed.
#[test]
fn frames_heavier_than_the_history_they_print_are_refused() {
    let mut now = 0;
    let mut s = new_session();
    add_read_turns(&mut s, 0, 30, 12, &mut now);
    let before = context_estimate(&s);
    let plan = plan_compaction(
        &s,
        &snap_settings(2_000),
        PlanOptions {
            context_window: 100_000,
            ..anthropic_plan()
        },
    )
    .unwrap();
    let built = build_snapcompact(&s, &plan, &small_options(80), &FallbackFonts::new()).unwrap();
    let frames = built.archive.frames.len() as u64;
    assert!(
        frames * 5024 > before,
        "{frames} frames against {before} tokens"
    );
    let bytes = s.to_bytes();
    let r = commit_snapcompact(
        &mut s,
        &plan,
        &small_options(80),
        &FallbackFonts::new(),
        now,
    );
    assert_no_reduction(r, "would not reduce the context");
    assert_eq!(s.to_bytes(), bytes);

    let plan = plan_compaction(
        &s,
        &snap_settings(2_000),
        PlanOptions {
            context_window: 60_000,
            ..anthropic_plan()
        },
    )
    .unwrap();
    // Committed for a host that measured its provider at the estimate (the fixture's usage
    // reports 100 prompt tokens a request: read from it, the rate would be the lowest, 0.5x,
    // where these dense words are not smaller).
    let measured = ArchiveOptions {
        text_ratio: Some(1.0),
        ..small_options(80)
    };
    let c = commit_snapcompact(&mut s, &plan, &measured, &FallbackFonts::new(), now).unwrap();
    assert!(c.tokens_after < before, "{} !< {before}", c.tokens_after);
    assert_eq!(c.tokens_after, context_estimate(&s));
}

/// A Cyrillic history: its verbatim text edges take 1.76 bytes a character, more than the
/// frame cap assumes for them (spec: snapcompact §5.2), so the archive the window's cap
/// allows runs over `contextWindow − reserve`. The commit renders it again with fewer frames
/// (spec: compaction §8.3, dead-end rescue tier 1) and stores that; a window that one frame
/// still overflows is refused.
#[test]
fn an_archive_over_the_window_is_rebuilt_with_fewer_frames() {
    let mut now = 0;
    let mut s = new_session();
    for t in 0..60 {
        now += 1000;
        s.append_message(
            json!({"role":"user","content":format!("Тур {t}: {}", cyrillic(t, 100)),"timestamp":now}),
            now,
        )
        .unwrap();
        now += 1000;
        s.append_message(
            assistant_json(&format!("Ответ {t}: {}", cyrillic(t, 150)), 100),
            now,
        )
        .unwrap();
    }
    let mut options = opus_options();
    options.retained_user_tokens = 0;
    let settings = snap_settings(2_000);
    let before = context_estimate(&s);

    let window = 60_000;
    let limit = window - 16_384;
    let plan = plan_compaction(&s, &settings, opus_plan(window)).unwrap();
    let capped = build_snapcompact(&s, &plan, &options, &FallbackFonts::new()).unwrap();
    let head = capped.archive.text_head.clone().unwrap();
    assert!(
        head.len() > head.chars().count() * 17 / 10,
        "multi-byte edges"
    );
    let c = commit_snapcompact(&mut s, &plan, &options, &FallbackFonts::new(), now).unwrap();
    let (_, archive) = latest_archive(&s);
    assert!(
        !archive.frames.is_empty() && archive.frames.len() < capped.archive.frames.len(),
        "{} frames committed, the cap gave {}",
        archive.frames.len(),
        capped.archive.frames.len()
    );
    assert!(c.tokens_after <= limit, "{} > {limit}", c.tokens_after);
    assert!(c.tokens_after < before);
    assert_eq!(c.tokens_after, context_estimate(&s));

    // One frame and the text edges alone are over a 40,000-token window's limit.
    let mut s = Session::load(s.to_bytes(), Default::default()).unwrap();
    let id = s.entries()[s.len() - 2].id().to_string();
    s.branch(&id).unwrap();
    let plan = plan_compaction(&s, &settings, opus_plan(40_000)).unwrap();
    let bytes = s.to_bytes();
    let r = commit_snapcompact(&mut s, &plan, &options, &FallbackFonts::new(), now);
    assert_no_reduction(r, "could not bring the context under the limit");
    assert_eq!(s.to_bytes(), bytes);
}

fn cyrillic(turn: usize, n: usize) -> String {
    (0..n)
        .map(|i| format!("ученик{turn}ж{i} уже записано рядом"))
        .collect::<Vec<_>>()
        .join(" ")
}

mod guard_properties {
    use super::*;
    use ctxfold_testkit::{generate, GenOptions};
    use proptest::prelude::*;
    use proptest::strategy::Strategy as _;

    fn options() -> impl proptest::strategy::Strategy<Value = (GenOptions, u64, u64, u32)> {
        (
            any::<u64>(),
            20usize..240,
            any::<bool>(),
            prop::option::of(8_000u64..60_000),
            prop::sample::select(vec![0u64, 24_000, 32_000, 40_000, 64_000, 200_000]),
            300u64..6_000,
            1u32..17,
        )
            .prop_map(|(seed, entries, images, every, window, keep, frames)| {
                let gen = GenOptions {
                    seed,
                    entries,
                    images,
                    compaction_every_tokens: every,
                    keep_recent_tokens: 4_000,
                    size_scale: 0.4,
                    ..GenOptions::default()
                };
                (gen, window, keep, frames)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

        /// Generated sessions: a snapcompact commit either makes the context smaller (and,
        /// with a known window, fits `contextWindow − reserve`) or leaves the bytes as they
        /// were.
        #[test]
        fn a_snapcompact_commit_shrinks_the_context_or_changes_nothing((gen, window, keep, frames) in options()) {
            let mut s = ctxfold_testkit::invariants::load(&generate(&gen)).unwrap();
            let Ok(plan) = plan_compaction(&s, &snap_settings(keep), PlanOptions { context_window: window, ..anthropic_plan() }) else {
                return Ok(());
            };
            let before = context_estimate(&s);
            let bytes = s.to_bytes();
            match commit_snapcompact(&mut s, &plan, &small_options(frames), &FallbackFonts::new(), 1) {
                Ok(c) => {
                    prop_assert!(c.tokens_after < before, "tokensAfter {} ≥ {before}", c.tokens_after);
                    prop_assert_eq!(c.tokens_after, context_estimate(&s));
                    if window > 0 {
                        let limit = window - ctxfold::tokens::effective_reserve_tokens(window, &snap_settings(keep));
                        prop_assert!(c.tokens_after <= limit, "tokensAfter {} > {limit}", c.tokens_after);
                    }
                }
                Err(e) => {
                    prop_assert_eq!(s.to_bytes(), bytes, "{} changed the session", e);
                }
            }
        }
    }
}

/// A compaction reuses the frames of the previous archive rendered on the same thread when a
/// page prints exactly the same (most do: the archive text starts with the previous kept
/// text). The entry it writes is byte for byte the one a cold thread writes.
#[test]
fn reused_frames_give_the_entry_a_cold_render_gives() {
    use ctxfold::session::{LoadOptions, SequentialIds};
    let mut s = new_session();
    let mut now = 0i64;
    add_turns(&mut s, 0, 40, &mut now);
    fn compact(s: &mut Session, now: i64) -> String {
        let settings = CompactionSettings {
            strategy: Strategy::Snapcompact,
            keep_recent_tokens: 2_000,
            ..CompactionSettings::default()
        };
        let plan = plan_compaction(s, &settings, PlanOptions::default()).unwrap();
        let c =
            commit_snapcompact(s, &plan, &small_options(9), &FallbackFonts::new(), now).unwrap();
        s.entry_json(c.index).into_owned()
    }
    let first = compact(&mut s, now);
    add_turns(&mut s, 40, 12, &mut now);
    let before_second = s.to_bytes();
    // Warm: the first archive's frames are this thread's cache.
    let warm = compact(&mut s, now);
    // Cold: a fresh thread renders every page.
    let cold = std::thread::spawn(move || {
        let mut s = Session::load(
            before_second,
            LoadOptions::with_ids(Box::new(SequentialIds::new())),
        )
        .unwrap();
        compact(&mut s, now)
    })
    .join()
    .unwrap();
    // The ids differ (the loaded session numbers its new entries afresh); nothing else.
    let without_id =
        |line: &str| line.replacen(&line[7..line.find(",\"parentId\"").unwrap()], "", 1);
    let (a, b) = (without_id(&warm), without_id(&cold));
    assert!(a == b, "{}", first_diff(&a, &b));
    // The case exercises the reuse: some frame of the second archive is one of the first's.
    let frames = |line: &str| -> Vec<String> {
        let v: Value = serde_json::from_str(line).unwrap();
        v["preserveData"]["snapcompact"]["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["data"].as_str().unwrap().to_string())
            .collect()
    };
    let old = frames(&first);
    let new = frames(&warm);
    assert!(
        new.iter().any(|f| old.contains(f)),
        "no page printed the same"
    );
    assert!(new.iter().any(|f| !old.contains(f)), "no new page");
}

/// The active compaction's message is kept between builds (`derived_text`) until its line
/// changes; frames can come as references (`\0<entry id>:<frame>:<length>`) or without data.
#[test]
fn compaction_message_follows_its_line_and_refers_to_frames() {
    use ctxfold::archive::blocks::FrameData;
    use ctxfold::session::message::ContentBlock;
    let (mut s, now, settings) = forty_turns();
    let plan = plan_compaction(&s, &settings, PlanOptions::default()).unwrap();
    let c =
        commit_snapcompact(&mut s, &plan, &small_options(4), &FallbackFonts::new(), now).unwrap();
    let (_, archive) = latest_archive(&s);
    let images = |s: &Session, data: FrameData| -> (Vec<String>, Option<String>) {
        let h = HistoryOptions {
            data,
            ..HistoryOptions::default()
        };
        let ctx = build_context_with(s, &BuildOptions::default(), &h).unwrap();
        let AgentMessage::CompactionSummary(m) = ctx.messages[0].message(s) else {
            panic!("first message is the compaction summary");
        };
        let data = m
            .blocks
            .iter()
            .flatten()
            .filter_map(|b| match b {
                ContentBlock::Image { data, .. } => Some(data.clone()),
                _ => None,
            })
            .collect();
        (data, m.warning)
    };
    let inline: Vec<String> = archive.frames.iter().map(|f| f.data.clone()).collect();
    assert_eq!(images(&s, FrameData::Inline).0, inline);
    assert_eq!(images(&s, FrameData::Inline).0, inline, "kept copy");
    let refs: Vec<String> = inline
        .iter()
        .enumerate()
        .map(|(k, d)| format!("\0{}:{k}:{}", c.id, d.len()))
        .collect();
    assert_eq!(images(&s, FrameData::Refs).0, refs);
    assert!(images(&s, FrameData::Omitted)
        .0
        .iter()
        .all(String::is_empty));
    assert_eq!(images(&s, FrameData::Omitted).0.len(), inline.len());
    // A rewrite of the entry's line (the progress guard's note) shows on the next build.
    assert_eq!(images(&s, FrameData::Refs).1, None);
    ctxfold::compaction::warning::stamp_warning(&mut s, &c.id, "tail too large").unwrap();
    assert_eq!(
        images(&s, FrameData::Refs).1.as_deref(),
        Some("tail too large")
    );
    assert_eq!(images(&s, FrameData::Inline).0, inline);
}
