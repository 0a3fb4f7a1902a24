//! snapcompact frames stored by reference (issue 43 item 5; `ctxfold::archive::stored`): the
//! opt-in `snapcompact.frameStorage: "reference"`, reading it everywhere frames are read, the
//! byte-faithful round trip, the migration both ways, hostile references, and the size saved.

use ctxfold::archive::blocks::{FrameData, HistoryOptions};
use ctxfold::archive::stored::{self, check, migrate_frames, DATA_REF_KEY};
use ctxfold::archive::{frames_left_out_at, get_preserved_archive};
use ctxfold::compaction::commit::commit_snapcompact;
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::compaction::snapcompact::ArchiveOptions;
use ctxfold::context::{build_context, build_context_with, BuildOptions, LeafSelector};
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::{BillingFamily, FallbackFonts, ShapeVariant};
use ctxfold::session::{
    CompactionBody, EntryKind, LoadOptions, NewSession, SequentialIds, Session,
};
use ctxfold::settings::{CompactionSettings, FrameStorage, SnapcompactSettings, Strategy};
use ctxfold::ErrorCode;
use serde_json::{json, Value};

fn words(turn: usize, n: usize) -> String {
    (0..n)
        .map(|i| format!("fact{turn}x{i} is recorded"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn add_turns(s: &mut Session, from: usize, turns: usize, now: &mut i64) {
    for t in from..from + turns {
        *now += 1000;
        s.append_message(
            json!({"role":"user","content":format!("Turn {t}: {}", words(t, 200)),"timestamp":*now}),
            *now,
        )
        .unwrap();
        let used = build_context(s, &BuildOptions::default())
            .unwrap()
            .estimated_tokens(s);
        *now += 1000;
        s.append_message(
            json!({"role":"assistant","content":[{"type":"text","text":format!("Reply {t}: {}", words(t, 200))}],
                "api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7",
                "usage":{"input":used,"output":50,"cacheRead":0,"cacheWrite":0,"totalTokens":used + 50},
                "stopReason":"stop","timestamp":*now}),
            *now,
        )
        .unwrap();
    }
}

fn options() -> ArchiveOptions {
    ArchiveOptions {
        model: Target {
            id: Some("claude-opus-4-7".into()),
            api: Some("anthropic-messages".into()),
        },
        shape: Some(ShapeVariant::V11on16Bw.shape(BillingFamily::Anthropic)),
        max_frames: Some(30),
        retained_user_tokens: 0,
        ..ArchiveOptions::default()
    }
}

fn settings(storage: FrameStorage) -> CompactionSettings {
    CompactionSettings {
        strategy: Strategy::Snapcompact,
        keep_recent_tokens: 2_000,
        snapcompact: SnapcompactSettings {
            frame_storage: storage,
            ..SnapcompactSettings::default()
        },
        ..CompactionSettings::default()
    }
}

fn new_session() -> Session {
    Session::create(
        NewSession {
            id: "frames".into(),
            cwd: "/w".into(),
            now: 0,
            parent_session: None,
        },
        Box::new(SequentialIds::new()),
    )
}

fn compact(s: &mut Session, storage: FrameStorage, now: i64) -> usize {
    let plan = plan_compaction(s, &settings(storage), PlanOptions::default()).unwrap();
    commit_snapcompact(s, &plan, &options(), &FallbackFonts::new(), now)
        .unwrap()
        .index
}

/// 100 turns, then `rounds` snapcompact compactions 4 turns apart, with `storage`.
fn session_with(storage: FrameStorage, rounds: usize) -> Session {
    let mut s = new_session();
    let mut now = 0;
    add_turns(&mut s, 0, 100, &mut now);
    for r in 0..rounds {
        compact(&mut s, storage, now);
        add_turns(&mut s, 100 + 4 * r, 4, &mut now);
    }
    s
}

fn load(bytes: Vec<u8>) -> Session {
    Session::load(bytes, LoadOptions::with_ids(Box::new(SequentialIds::new()))).unwrap()
}

fn compactions(s: &Session) -> Vec<usize> {
    (0..s.len())
        .filter(|&i| s.entries()[i].kind() == EntryKind::Compaction)
        .collect()
}

/// The context of `leaf` (default: the session's) with frame payloads inline, as JSON.
fn context_at(s: &Session, leaf: Option<&str>) -> String {
    let opts = BuildOptions {
        leaf: leaf.map_or(LeafSelector::Current, |l| LeafSelector::Id(l.into())),
        ..BuildOptions::default()
    };
    build_context_with(s, &opts, &HistoryOptions::default())
        .unwrap()
        .to_json(s)
}

fn refs_in(s: &Session, index: usize) -> usize {
    s.entry_json(index).matches(DATA_REF_KEY).count()
}

#[test]
fn reference_storage_keeps_each_frame_once_and_reads_back_the_same_contexts() {
    let inline = session_with(FrameStorage::Inline, 4);
    let by_ref = session_with(FrameStorage::Reference, 4);
    let (ci, cr) = (compactions(&inline), compactions(&by_ref));
    assert_eq!(ci.len(), 4);
    assert_eq!(ci, cr);
    // The first compaction has nothing to refer to; every later one carries frames forward.
    assert_eq!(refs_in(&by_ref, cr[0]), 0);
    for &c in &cr[1..] {
        assert!(refs_in(&by_ref, c) > 0, "entry {c} stores no reference");
        assert_eq!(refs_in(&inline, c), 0);
    }
    // A reference names the entry holding the bytes inline, never another reference.
    let first = by_ref.entries()[cr[0]].id().to_string();
    for &c in &cr[1..] {
        let body: CompactionBody = by_ref.body(c).unwrap();
        let frames = &body.preserve_data.unwrap()["snapcompact"]["frames"];
        for f in frames.as_array().unwrap() {
            if let Some(r) = f.get(DATA_REF_KEY) {
                let target = by_ref.index_of(r["entry"].as_str().unwrap()).unwrap();
                assert!(target < c);
                let t: CompactionBody = by_ref.body(target).unwrap();
                let named = &t.preserve_data.unwrap()["snapcompact"]["frames"]
                    [r["frame"].as_u64().unwrap() as usize];
                assert!(named["data"].is_string(), "{r}");
            }
        }
    }
    assert!(
        cr[1..].iter().any(|&c| by_ref
            .entry_json(c)
            .contains(&format!("\"entry\":\"{first}\""))),
        "the first archive's frames are carried the furthest"
    );
    // Every context reads the same: at each compaction and at the leaf, payloads inline,
    // left out, as the JS shell's references, and the frames a budget leaves out.
    for leaf in cr
        .iter()
        .map(|&c| Some(inline.entries()[c].id()))
        .chain([None])
    {
        assert_eq!(
            context_at(&inline, leaf),
            context_at(&by_ref, leaf),
            "{leaf:?}"
        );
    }
    for data in [FrameData::Inline, FrameData::Omitted, FrameData::Refs] {
        for budget in [None, Some(200_000)] {
            let h = HistoryOptions {
                max_frame_data_bytes: budget,
                max_images: Some(7),
                data,
            };
            let a = build_context_with(&inline, &BuildOptions::default(), &h).unwrap();
            let b = build_context_with(&by_ref, &BuildOptions::default(), &h).unwrap();
            assert_eq!(a.to_json(&inline), b.to_json(&by_ref), "{h:?}");
            let last = *cr.last().unwrap();
            assert_eq!(
                frames_left_out_at(&inline, last, &h),
                frames_left_out_at(&by_ref, last, &h)
            );
        }
    }
    // The frames a host copies (`archiveFrames`) come with their bytes.
    for &c in &cr {
        assert_eq!(
            stored::frames_json(&inline, c),
            stored::frames_json(&by_ref, c)
        );
    }
    // `tokensAfter` was measured with the frames resolved.
    for &c in &cr {
        let a: CompactionBody = inline.body(c).unwrap();
        let b: CompactionBody = by_ref.body(c).unwrap();
        assert_eq!(a.tokens_after, b.tokens_after);
    }
    assert!(check(&by_ref).is_empty());
    for &c in &cr {
        let body: CompactionBody = inline.body(c).unwrap();
        let a = get_preserved_archive(body.preserve_data.as_ref()).unwrap();
        let bytes: usize = a.frames.iter().map(|f| f.data.len()).sum();
        println!(
            "entry {c}: line {} B, {} frames of {bytes} B, text {} B; by reference: line {} B, {} references",
            inline.entry_json(c).len(),
            a.frames.len(),
            a.text.as_deref().map_or(0, str::len),
            by_ref.entry_json(c).len(),
            refs_in(&by_ref, c)
        );
    }
    let (a, b) = (inline.to_bytes().len(), by_ref.to_bytes().len());
    println!("4 compactions: inline {a} B, by reference {b} B");
    assert!(b * 10 < a * 8, "inline {a} B, by reference {b} B");
}

#[test]
fn a_session_with_references_loads_and_writes_back_byte_identical() {
    let bytes = session_with(FrameStorage::Reference, 3).to_bytes();
    let s = load(bytes.clone());
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    assert!(check(&s).is_empty());
    assert_eq!(s.to_bytes(), bytes);
    // A context build and an append leave the loaded lines alone.
    let ctx = context_at(&s, None);
    assert!(ctx.contains("\"type\":\"image\""));
    let mut s = s;
    s.append_message(json!({"role":"user","content":"next"}), 1)
        .unwrap();
    assert!(s.to_bytes().starts_with(&bytes));
}

#[test]
fn migration_both_ways_gives_the_file_back() {
    let inline = session_with(FrameStorage::Inline, 4).to_bytes();
    let by_ref = session_with(FrameStorage::Reference, 4).to_bytes();

    // Inline → by reference: the file the writer makes; and back: the inline file.
    let mut s = load(inline.clone());
    let m = migrate_frames(&mut s, FrameStorage::Reference);
    assert_eq!(m.entries, 3);
    assert!(m.frames > 0 && m.missing == 0);
    assert_eq!(m.bytes_before, inline.len() as u64);
    assert_eq!(m.bytes_after, s.to_bytes().len() as u64);
    assert_eq!(
        s.to_bytes(),
        by_ref,
        "the migration writes what the writer writes"
    );
    let back = migrate_frames(&mut s, FrameStorage::Inline);
    assert_eq!((back.entries, back.frames), (m.entries, m.frames));
    assert_eq!(s.to_bytes(), inline);

    // By reference → inline → by reference.
    let mut s = load(by_ref.clone());
    migrate_frames(&mut s, FrameStorage::Inline);
    assert_eq!(s.to_bytes(), inline);
    migrate_frames(&mut s, FrameStorage::Reference);
    assert_eq!(s.to_bytes(), by_ref);

    // Nothing to do: nothing changes.
    let mut s = load(by_ref.clone());
    let m = migrate_frames(&mut s, FrameStorage::Reference);
    assert_eq!((m.entries, m.frames), (0, 0));
    assert_eq!(s.to_bytes(), by_ref);
}

/// A migrated file may refer across branches (the first copy in file order is kept): the
/// context of a branch whose path does not hold the referenced entry reads the same.
#[test]
fn references_resolve_off_the_path() {
    let mut s = new_session();
    let mut now = 0;
    add_turns(&mut s, 0, 100, &mut now);
    let before = s.leaf_id().unwrap().to_string();
    let a = compact(&mut s, FrameStorage::Inline, now);
    add_turns(&mut s, 100, 2, &mut now);
    // A second branch from the same point, compacted again: the same frames.
    s.branch(&before).unwrap();
    let b = compact(&mut s, FrameStorage::Inline, now);
    add_turns(&mut s, 200, 2, &mut now);
    let leaf_b = s.leaf_id().unwrap().to_string();
    let want = context_at(&s, Some(&leaf_b));
    let m = migrate_frames(&mut s, FrameStorage::Reference);
    assert_eq!(m.entries, 1, "{m:?}");
    let a_id = s.entries()[a].id().to_string();
    assert!(s.entry_json(b).contains(&format!("\"entry\":\"{a_id}\"")));
    let ctx = build_context(&s, &BuildOptions::default()).unwrap();
    assert!(
        !ctx.path.contains(&a),
        "the referenced entry is off the path"
    );
    assert_eq!(context_at(&s, Some(&leaf_b)), want);
    // Its frames are read the same after the file is written and loaded again.
    let s = load(s.to_bytes());
    assert!(check(&s).is_empty());
    assert_eq!(context_at(&s, Some(&leaf_b)), want);
}

/// The next compaction builds on an archive stored by reference (the archive of archives):
/// an LLM-summary plan reads its text, a snapcompact one refers to its frames' origins.
#[test]
fn an_archive_of_archives_reads_through_references() {
    let mut s = session_with(FrameStorage::Reference, 2);
    let inline = session_with(FrameStorage::Inline, 2);
    let plan =
        plan_compaction(&s, &settings(FrameStorage::Inline), PlanOptions::default()).unwrap();
    let want = plan_compaction(
        &inline,
        &settings(FrameStorage::Inline),
        PlanOptions::default(),
    )
    .unwrap();
    assert_eq!(
        ctxfold::compaction::plan::previous_summary_for_llm(&plan.preparation),
        ctxfold::compaction::plan::previous_summary_for_llm(&want.preparation)
    );
    let c = compact(&mut s, FrameStorage::Reference, 1);
    let archive = stored::read_archive(&s, c).unwrap().unwrap();
    assert!(archive.frames.iter().all(|f| !f.data.is_empty()));
    assert!(refs_in(&s, c) > 0);
}

/// Replaces the first `dataRef` value of the last compaction's line with `value`.
fn with_ref(bytes: &[u8], value: &str) -> (Vec<u8>, u32) {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = lines
        .iter()
        .rposition(|l| l.contains(DATA_REF_KEY))
        .unwrap();
    let line = &lines[at];
    let start = line.find("\"dataRef\":").unwrap() + "\"dataRef\":".len();
    let end = start + line[start..].find('}').unwrap() + 1;
    lines[at] = format!("{}{value}{}", &line[..start], &line[end..]);
    (
        format!("{}\n", lines.join("\n")).into_bytes(),
        at as u32 + 1,
    )
}

#[test]
fn references_that_do_not_resolve_are_warnings_and_placeholders() {
    let good = session_with(FrameStorage::Reference, 3);
    let bytes = good.to_bytes();
    let last = *compactions(&good).last().unwrap();
    let frames = get_preserved_archive(
        good.body::<CompactionBody>(last)
            .unwrap()
            .preserve_data
            .as_ref(),
    )
    .unwrap()
    .frames
    .len();
    let first_id = good.entries()[compactions(&good)[0]].id().to_string();
    let second_id = good.entries()[compactions(&good)[1]].id().to_string();
    let user_id = good.entries()[0].id().to_string();
    // A frame of the second archive that is itself a reference.
    let second = good.entry_json(compactions(&good)[1]).into_owned();
    let ref_pos = second
        .split("{\"dataRef\"")
        .next()
        .map(|head| head.matches("\"mimeType\"").count())
        .unwrap();
    let cases = [
        r#"{"entry":"nope","frame":0,"bytes":10}"#.to_string(),
        format!(r#"{{"entry":"{first_id}","frame":999,"bytes":10}}"#),
        format!(r#"{{"entry":"{first_id}","frame":0,"bytes":1}}"#),
        format!(r#"{{"entry":"{user_id}","frame":0,"bytes":10}}"#),
        format!(r#"{{"entry":"{second_id}","frame":{ref_pos},"bytes":10}}"#),
        r#"5"#.to_string(),
        r#"{"entry":7,"frame":"x"}"#.to_string(),
        r#"{"frame":-1,"bytes":1e400}"#.to_string(),
    ];
    for case in cases {
        let (hostile, line) = with_ref(&bytes, &case);
        let s = load(hostile.clone());
        assert_eq!(s.to_bytes(), hostile, "{case}");
        let warnings = check(&s);
        assert_eq!(warnings.len(), 1, "{case}: {warnings:?}");
        assert_eq!(warnings[0].code, ErrorCode::InvalidEntryBody);
        assert_eq!(warnings[0].line, line);
        assert!(
            warnings[0].message.contains("placeholder"),
            "{}",
            warnings[0].message
        );
        // The context shows the placeholder where the frame was; the other frames stay.
        let ctx = build_context(&s, &BuildOptions::default()).unwrap();
        let json = ctx.to_json(&s);
        assert!(json.contains("1 archived image frame missing"), "{case}");
        let images = context_at(&s, None).matches("\"type\":\"image\"").count();
        assert_eq!(images, frames - 1, "{case}");
        assert_eq!(
            frames_left_out_at(&s, last, &HistoryOptions::WITHOUT_DATA),
            0
        );
        // Migrating to inline keeps the reference as it is, and counts it.
        let mut s = s;
        let m = migrate_frames(&mut s, FrameStorage::Inline);
        assert_eq!(m.missing, 1, "{case}");
        assert_eq!(check(&s).len(), 1);
        // The next compaction still works.
        let mut now = 10_000_000;
        add_turns(&mut s, 500, 3, &mut now);
        compact(&mut s, FrameStorage::Reference, now);
    }
}

#[test]
fn frame_storage_setting() {
    let s = CompactionSettings::from_json(&json!({"snapcompact": {"frameStorage": "reference"}}))
        .unwrap();
    assert_eq!(s.snapcompact.frame_storage, FrameStorage::Reference);
    let d = CompactionSettings::default().to_json();
    assert_eq!(d["snapcompact"]["frameStorage"], Value::from("inline"));
    let e = CompactionSettings::from_json(&json!({"snapcompact": {"frameStorage": "blob"}}))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Settings);
    assert!(e.to_string().contains("snapcompact.frameStorage"), "{e}");
}
