//! Conformance on `../shared/conformance/rules/` (issue 19, point 5): a small session of
//! `bashExecution` variants (trailing newline or not, non-zero exit, cancelled, truncated,
//! excluded), thinking, fenced and XML blocks and images.
//!
//! - `prepare-keep-3000.json`: `prepareCompaction` at `keepRecentTokens` 3,000 (first kept
//!   entry, split turn, counts, tokens) and the exact `serializedConversation` and
//!   `serializedTurnPrefix` the summarizer receives, read off the plan's own requests;
//! - `snapcompact-claude-opus-4-7/`, `snapcompact-gpt-5.1/`: a snapcompact compaction with
//!   the default settings as the app runs it; the two archives differ by the thinking rule
//!   (left out for Anthropic-dialect readers), which the core applies from the model alone.

use crate::common::{assert_same_text, conformance_dir, read, strings};
use ctxfold::compaction::commit::build_snapcompact;
use ctxfold::compaction::plan::{plan_compaction, CompactionPlan, PlanOptions};
use ctxfold::compaction::prepare::{prepare_compaction, PrepareOptions};
use ctxfold::compaction::snapcompact::ArchiveOptions;
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::FallbackFonts;
use ctxfold::session::{LoadOptions, SequentialIds, Session};
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::summary::request::Purpose;
use ctxfold_testkit::png::{decode_rgb, Image};
use serde_json::Value;

fn session() -> Session {
    let s = Session::load(
        read("rules/session.jsonl"),
        LoadOptions::with_ids(Box::new(SequentialIds::new())),
    )
    .expect("the rules session loads");
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    s
}

fn json(rel: &str) -> Value {
    serde_json::from_slice(&read(rel)).expect("valid JSON")
}

fn text(rel: &str) -> String {
    String::from_utf8(read(rel)).expect("UTF-8 text")
}

/// The `<conversation>` body of a summarizer prompt.
fn conversation_of(prompt: &str) -> &str {
    let body = prompt
        .strip_prefix("<conversation>\n")
        .expect("the prompt opens with the conversation");
    let end = body
        .find("\n</conversation>\n\n")
        .expect("the conversation is closed");
    &body[..end]
}

fn request_prompt(plan: &CompactionPlan, purpose: Purpose) -> String {
    plan.pending()
        .into_iter()
        .find(|r| r.purpose == purpose)
        .unwrap_or_else(|| panic!("a pending {purpose:?} request"))
        .prompt
        .clone()
}

#[test]
fn prepare_at_keep_3000_matches() {
    let s = session();
    let doc = json("rules/prepare-keep-3000.json");
    let want = &doc["prepare"];
    assert_eq!(s.len() as u64, doc["session"]["entries"].as_u64().unwrap());
    assert_eq!(s.leaf_id(), doc["session"]["leafId"].as_str());
    let settings = CompactionSettings::from_json(&doc["settings"]).expect("settings");
    let prep = prepare_compaction(&s, &settings, &PrepareOptions::default()).expect("prepare");
    let path = s.active_path();
    let pos = |i: usize| path.iter().position(|&x| x == i).expect("on the path") as u64;
    assert_eq!(
        prep.first_kept_entry_id,
        want["firstKeptEntryId"].as_str().unwrap()
    );
    assert_eq!(
        pos(prep.first_kept),
        want["firstKeptBranchIndex"].as_u64().unwrap()
    );
    assert_eq!(prep.is_split_turn, want["isSplitTurn"].as_bool().unwrap());
    assert_eq!(
        prep.turn_start.map(pos),
        want["turnStartBranchIndex"].as_u64()
    );
    assert_eq!(prep.tokens_before, want["tokensBefore"].as_u64().unwrap());
    assert_eq!(
        prep.keep_recent_tokens,
        want["keepRecentTokensEffective"].as_u64().unwrap()
    );
    assert!((prep.ratio - want["providerToEstimateRatio"].as_f64().unwrap()).abs() < 1e-12);
    assert_eq!(
        prep.previous_summary.is_some(),
        want["hasPreviousSummary"].as_bool().unwrap()
    );
    let counts = &want["counts"];
    assert_eq!(
        (
            prep.messages_to_summarize.len() as u64,
            prep.turn_prefix.len() as u64,
            prep.recent.len() as u64
        ),
        (
            counts["messagesToSummarize"].as_u64().unwrap(),
            counts["turnPrefixMessages"].as_u64().unwrap(),
            counts["recentMessages"].as_u64().unwrap()
        ),
        "message counts"
    );
    let est = &want["estimatedTokens"];
    assert_eq!(
        (
            prep.tokens_to_summarize,
            prep.tokens_turn_prefix,
            prep.tokens_recent
        ),
        (
            est["messagesToSummarize"].as_u64().unwrap(),
            est["turnPrefixMessages"].as_u64().unwrap(),
            est["recentMessages"].as_u64().unwrap()
        ),
        "estimated tokens"
    );
    let lists = prep.file_ops.file_lists();
    assert_eq!(lists.read_files, strings(&want["readFiles"]));
    assert_eq!(lists.modified_files, strings(&want["modifiedFiles"]));
    // Every entry's estimate.
    for e in doc["perEntry"].as_array().unwrap() {
        let i = s.index_of(e["id"].as_str().unwrap()).expect("entry");
        if let Some(t) = e["tokens"].as_u64() {
            assert_eq!(
                s.entry_tokens(i, Default::default()),
                t,
                "tokens of {}",
                e["id"]
            );
        }
    }
}

/// The summarizer's input, character for character, as the plan writes it: the history
/// request's `<conversation>` and the turn-prefix request's.
#[test]
fn summarizer_input_matches() {
    let s = session();
    let doc = json("rules/prepare-keep-3000.json");
    let want = &doc["prepare"];
    let settings = CompactionSettings::from_json(&doc["settings"]).expect("settings");
    let plan = plan_compaction(&s, &settings, PlanOptions::default()).expect("plan");
    let history = request_prompt(&plan, Purpose::History);
    assert_same_text(
        "serializedConversation",
        conversation_of(&history),
        want["serializedConversation"].as_str().unwrap(),
    );
    let prefix = request_prompt(&plan, Purpose::TurnPrefix);
    assert_same_text(
        "serializedTurnPrefix",
        conversation_of(&prefix),
        want["serializedTurnPrefix"].as_str().unwrap(),
    );
    // The rules the data exercises: a trailing newline kept inside the fence, the exit code,
    // the cancelled run, no notice for a truncated run without output metadata, and the
    // excluded run left out.
    let conv = want["serializedConversation"].as_str().unwrap();
    assert!(conv.contains("[User]: Ran `ls`\n```\nCargo.toml\nREADME.md\nsrc\ntests\n\n```"));
    assert!(conv.contains("\n\nCommand exited with code 101"));
    assert!(conv.contains("[User]: Ran `sleep 100`\n(no output)\n\n(command cancelled)"));
    assert!(!conv.contains("secrets.env"));
}

/// A snapcompact compaction of the rules session for `model` with the default settings; the
/// archive options come from the model alone (the core picks the thinking rule).
fn check_snapcompact(folder: &str, id: &str, api: &str) {
    let dir = format!("rules/{folder}");
    let want = json(&format!("{dir}/compaction.json"));
    let c = &want["compaction"];
    let s = session();
    let settings = CompactionSettings {
        strategy: Strategy::Snapcompact,
        ..CompactionSettings::default()
    };
    let plan = plan_compaction(&s, &settings, PlanOptions::default()).expect("plan");
    assert_eq!(
        plan.preparation.first_kept_entry_id,
        c["firstKeptEntryId"].as_str().unwrap()
    );
    assert_eq!(
        plan.preparation.tokens_before,
        c["tokensBefore"].as_u64().unwrap()
    );
    let model = Target {
        id: Some(id.into()),
        api: Some(api.into()),
    };
    let options = ArchiveOptions::for_model(model);
    assert_eq!(
        options.serialize.include_thinking,
        c["includeThinking"].as_bool().unwrap(),
        "{id}: the thinking rule"
    );
    let built = build_snapcompact(&s, &plan, &options, &FallbackFonts::new()).expect("archive");
    assert_eq!(built.shape.to_json(), want["shape"], "{id}: shape");
    let geo = built.shape.geometry();
    assert_eq!(
        (geo.cols as u64, geo.rows as u64, geo.capacity as u64),
        (
            want["geometry"]["cols"].as_u64().unwrap(),
            want["geometry"]["rows"].as_u64().unwrap(),
            want["geometry"]["capacity"].as_u64().unwrap()
        ),
        "{id}: geometry"
    );
    assert_same_text(
        &format!("{id}: serialized source"),
        &built.serialized,
        &text(&format!("{dir}/serialized-source.txt")),
    );
    assert_eq!(
        built.serialized.encode_utf16().count() as u64,
        c["serializedSourceChars"].as_u64().unwrap()
    );
    assert_same_text(
        &format!("{id}: archive text"),
        built.archive.text.as_deref().unwrap_or(""),
        &text(&format!("{dir}/archive-text.txt")),
    );
    let a = &c["archive"];
    let units = |s: &Option<String>| s.as_deref().map_or(0, |t| t.encode_utf16().count()) as u64;
    assert_eq!(
        (
            built.archive.frames.len() as u64,
            built.archive.total_chars,
            built.archive.truncated_chars,
            units(&built.archive.text_head),
            units(&built.archive.text_tail),
            units(&built.archive.text),
        ),
        (
            a["frames"].as_u64().unwrap(),
            a["totalChars"].as_u64().unwrap(),
            a["truncatedChars"].as_u64().unwrap(),
            a["textHeadChars"].as_u64().unwrap(),
            a["textTailChars"].as_u64().unwrap(),
            a["keptTextChars"].as_u64().unwrap(),
        ),
        "{id}: archive (frames, totalChars, truncatedChars, head, tail, kept)"
    );
    assert_eq!(built.short_summary, c["shortSummary"].as_str().unwrap());
    assert_eq!(
        c["details"],
        serde_json::json!({
            "readFiles": plan.file_lists.read_files,
            "modifiedFiles": plan.file_lists.modified_files,
        })
    );
    // The reading guide (our wording) states the reference's facts.
    let guide_want = c["readingGuideSummary"].as_str().unwrap();
    let files = |g: &str| {
        let from = g.find("FILES\n").map_or(0, |i| i + 6);
        let to = g.find("\n\nHISTORY").unwrap_or(g.len());
        g[from..to].to_string()
    };
    assert_eq!(files(&built.summary), files(guide_want), "{id}: FILES");
    let frames = c["frames"].as_array().unwrap();
    assert_eq!(built.frames.len(), frames.len());
    if !frames.is_empty() {
        assert!(built
            .summary
            .contains(&format!("{} characters wide", geo.cols)));
    }
    for (i, (frame, meta)) in built.frames.iter().zip(frames).enumerate() {
        let rec = &built.archive.frames[i];
        assert_eq!(
            (
                u64::from(frame.width),
                u64::from(frame.height),
                rec.chars,
                rec.cols,
                rec.rows
            ),
            (
                meta["width"].as_u64().unwrap(),
                meta["height"].as_u64().unwrap(),
                meta["chars"].as_u64().unwrap(),
                meta["cols"].as_u64().unwrap(),
                meta["rows"].as_u64().unwrap()
            ),
            "{id}: frame {i} (width, height, chars, cols, rows)"
        );
        assert_eq!(rec.font.as_deref(), meta["font"].as_str());
        assert_eq!(rec.variant.as_deref(), meta["variant"].as_str());
        // Decoded pixels, row by row.
        let path = conformance_dir().join(format!("{dir}/frame-{i:03}.png"));
        let reference =
            std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let Image {
            width: rw,
            height: rh,
            data: rpx,
            ..
        } = decode_rgb(&reference).expect("the reference frame decodes");
        let Image {
            width: ow,
            height: oh,
            data: opx,
            ..
        } = decode_rgb(&frame.png).expect("our frame decodes");
        assert_eq!((ow, oh), (rw, rh), "{id}: frame {i} decoded size");
        let w = ow as usize * 3;
        let rows: Vec<usize> = (0..oh as usize)
            .filter(|&y| opx[y * w..(y + 1) * w] != rpx[y * w..(y + 1) * w])
            .collect();
        assert!(
            rows.is_empty(),
            "{id}: frame {i}: {} pixel rows differ, first {:?}",
            rows.len(),
            &rows[..rows.len().min(10)]
        );
    }
}

#[test]
fn snapcompact_claude_opus_4_7_leaves_thinking_out() {
    check_snapcompact(
        "snapcompact-claude-opus-4-7",
        "claude-opus-4-7",
        "anthropic-messages",
    );
}

#[test]
fn snapcompact_gpt_5_1_keeps_thinking() {
    check_snapcompact("snapcompact-gpt-5.1", "gpt-5.1", "openai-responses");
}

/// The two archives differ exactly by the thinking rule: the Claude one is the GPT one with
/// its `¶think:` parts left out, neighbouring parts of the same scope then merging (spec:
/// snapcompact §6.1 output model).
#[test]
fn archives_differ_by_the_thinking_rule() {
    let claude = text("rules/snapcompact-claude-opus-4-7/serialized-source.txt");
    let gpt = text("rules/snapcompact-gpt-5.1/serialized-source.txt");
    assert!(gpt.contains("\u{b6}think:"));
    assert!(!claude.contains("\u{b6}think:"));
    let scope = |p: &str| p.split(':').next().unwrap_or("").to_string();
    let mut parts: Vec<String> = Vec::new();
    for p in gpt.split("\n\n\u{b6}") {
        let p = if p.starts_with('\u{b6}') {
            p.to_string()
        } else {
            format!("\u{b6}{p}")
        };
        if p.starts_with("\u{b6}think:") {
            continue;
        }
        match parts.last_mut() {
            Some(last) if scope(last) == scope(&p) => {
                let body = &p[scope(&p).len() + 1..];
                if !last.ends_with('\n') && !body.starts_with('\n') {
                    last.push('\n');
                }
                last.push_str(body);
            }
            _ => parts.push(p),
        }
    }
    assert_same_text(
        "claude = gpt without thinking",
        &claude,
        &parts.join("\n\n"),
    );
}
