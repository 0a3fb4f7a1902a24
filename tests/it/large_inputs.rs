//! Deep and large inputs (issue 9): a 100,000-deep chain, 1 MB tokens without a space, and
//! 10,000 images go through load, save, buildContext, planCompaction (+ commit), both pruning
//! passes, planNavigation (+ commit) and snapcompact rendering without overflowing the stack
//! (tests run on 2 MiB threads, the Rust default for spawned threads and less than a browser
//! main thread gives wasm).

use ctxfold::compaction::commit::commit_snapcompact;
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::compaction::snapcompact::ArchiveOptions;
use ctxfold::context::convert::write_message_json;
use ctxfold::context::{build_context, BuildOptions};
use ctxfold::navigation::{commit_navigation, plan_navigation, NavigateOptions, NavigationAnswer};
use ctxfold::pruning::{
    apply_prune, plan_superseded_tool_results, plan_tool_outputs, KeepBoundary, PruneConfig,
};
use ctxfold::render::{
    normalize, render_frames, BillingFamily, FallbackFonts, RenderOptions, ShapeVariant,
};
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::shake::{apply_shake, plan_shake, Preset, ShakeConfig};
use ctxfold::ErrorCode;
use ctxfold_testkit::invariants;
use ctxfold_testkit::spec::{self, Body, Call, EntrySpec, Parent, SessionSpec, Tool};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Mutex;
use std::time::Instant;

/// Counts, per thread, the bytes allocated and not freed, and their peak, so each operation's
/// working memory can be held against its input (issue 9: "within memory"). Per thread because
/// the other tests of this binary allocate at the same time on their own threads.
struct Counting;

thread_local! {
    // `isize`: a thread may free what another allocated.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// Every byte allocated so far, freed or not: the work of an operation that copies its
    /// input over and over shows here and not in its peak.
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

/// One of these tests at a time: each takes hundreds of MB.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn count(delta: isize) {
    // `try_with`: no counting while the thread's locals are torn down.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
    if delta > 0 {
        let _ = ALLOCATED.try_with(|a| a.set(a.get() + delta as usize));
    }
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Runs `f`, reports the peak memory it took beyond what was live before it, and asserts that
/// it stayed within `times` × its `input` bytes + 16 MiB: 3 for operations on a loaded session
/// (a session is the file once plus its index; a transcript's JSON is about the file again), 5
/// for compactions, whose test harness (`invariants::compact`) keeps a copy of the file and
/// makes another to check that nothing changed before the commit.
fn within_memory<T>(
    name: &str,
    what: &str,
    input: usize,
    times: usize,
    f: impl FnOnce() -> T,
) -> T {
    let before = LIVE.get();
    PEAK.set(before);
    let value = f();
    let took = (PEAK.get() - before) as usize;
    eprintln!(
        "{name}: {what}: peak {:.1} MB over {:.1} MB of input ({:.2} ×)",
        took as f64 / 1e6,
        input as f64 / 1e6,
        took as f64 / input as f64
    );
    assert!(
        took <= times * input + (16 << 20),
        "{name}: {what} took {took} bytes for {input} bytes of input"
    );
    value
}

/// Runs `f` on a thread with a 2 MiB stack (so a recursion on input depth would overflow).
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic, no stack overflow");
}

fn e(body: Body) -> EntrySpec {
    EntrySpec {
        parent: Parent::Back(1),
        dup_id: None,
        body,
    }
}

fn user(text: &str) -> Body {
    Body::User {
        text: text.into(),
        images: 0,
    }
}

fn assistant(text: &str, calls: Vec<Call>, usage: u64) -> Body {
    Body::Assistant {
        text: text.into(),
        thinking: None,
        stop: if calls.is_empty() { 0 } else { 1 },
        calls,
        usage: Some(usage),
    }
}

fn read(id: u8, path: &str) -> Call {
    Call {
        id,
        tool: Tool::Read,
        path: path.into(),
    }
}

fn result(call: u8, text: String) -> Body {
    Body::ToolResult {
        call,
        tool: Tool::Read,
        text,
        is_error: false,
        useless: false,
    }
}

/// Load, save, buildContext, pruning and navigation on one session file; `nav_target` is the
/// index of an entry to navigate to. Returns the number of LLM context messages at the leaf.
fn exercise(name: &str, bytes: &[u8], nav_target: usize) -> usize {
    let t = Instant::now();
    let lap = |what: &str| eprintln!("{name}: {what} at {:?}", t.elapsed());
    let size = bytes.len();
    let s = within_memory(name, "load", size, 3, || {
        invariants::load(bytes).expect("loads")
    });
    assert!(s.warnings().is_empty(), "{:?}", &s.warnings()[..1]);
    within_memory(name, "save", size, 3, || {
        assert_eq!(s.to_bytes(), bytes, "saved byte for byte")
    });
    lap("load + save");

    let ctx = within_memory(name, "LLM context + JSON", size, 3, || {
        let ctx = build_context(&s, &BuildOptions::default()).expect("context");
        let _ = ctx.to_json(&s);
        ctx
    });
    invariants::context_pairs(&s, &ctx).expect("tool pairs");
    let n = ctx.messages.len();
    drop(ctx);
    let transcript = BuildOptions {
        transcript: true,
        ..Default::default()
    };
    within_memory(name, "transcript + JSON", size, 3, || {
        let ctx = build_context(&s, &transcript).expect("transcript");
        assert!(ctx.messages.len() >= n);
        let _ = ctx.to_json(&s);
    });
    lap("buildContext");
    drop(s);

    // Both passes as the API runs them (measured), then again under the invariant checks.
    let mut p = invariants::load(bytes).unwrap();
    within_memory(name, "prune", size, 3, || {
        let cfg = PruneConfig {
            protect_tokens: 1_000,
            keep_boundary: KeepBoundary::Start,
            ..Default::default()
        };
        let stale = plan_superseded_tool_results(&p, &cfg).expect("stale plan");
        apply_prune(&mut p, &stale).expect("stale pass");
        let threshold = plan_tool_outputs(&p, &cfg).expect("threshold plan");
        apply_prune(&mut p, &threshold).expect("threshold pass");
    });
    drop(p);
    let mut p = invariants::load(bytes).unwrap();
    invariants::prune(&mut p, 1_000, true).expect("prune");
    drop(p);
    lap("prune");

    let mut nav = invariants::load(bytes).unwrap();
    let target = nav.entries()[nav_target].id().to_string();
    within_memory(name, "planNavigation + commit", size, 3, || {
        let plan = plan_navigation(
            &nav,
            &target,
            NavigateOptions {
                summarize: true,
                ..Default::default()
            },
        )
        .expect("planNavigation");
        let answer = if plan.request.is_some() {
            NavigationAnswer::Summary("branch summary".into())
        } else {
            NavigationAnswer::None
        };
        commit_navigation(&mut nav, &plan, answer, 0).expect("commitNavigation");
        build_context(&nav, &BuildOptions::default()).expect("context after navigation");
    });
    lap("planNavigation + commit");
    n
}

/// A summarized compaction (every window answered) and a snapcompact compaction.
fn compact(name: &str, bytes: &[u8]) {
    let t = Instant::now();
    let lap = |what: &str| eprintln!("{name}: {what} at {:?}", t.elapsed());
    let len = invariants::load(bytes).unwrap().len();

    // A summarized compaction, every history window answered.
    let mut c = invariants::load(bytes).unwrap();
    within_memory(
        name,
        "summarized compaction",
        bytes.len(),
        5,
        || match invariants::compact(&mut c, Strategy::ContextFull, 2_000, "summary").unwrap() {
            invariants::Compacted::Done(..) => {}
            other => panic!("{name}: compaction refused: {other:?}"),
        },
    );
    assert_eq!(c.len(), len + 1);
    drop(c);
    lap("planCompaction + commit");

    // A snapcompact compaction: the history printed onto at most 4 frames.
    let mut c = invariants::load(bytes).unwrap();
    let settings = CompactionSettings {
        strategy: Strategy::Snapcompact,
        keep_recent_tokens: 2_000,
        ..Default::default()
    };
    let plan = plan_compaction(&c, &settings, PlanOptions::default()).unwrap();
    let opts = ArchiveOptions {
        shape: Some(ShapeVariant::V8on22Bw.shape(BillingFamily::Anthropic)),
        max_frames: Some(4),
        ..Default::default()
    };
    within_memory(name, "snapcompact compaction", bytes.len(), 5, || {
        commit_snapcompact(&mut c, &plan, &opts, &FallbackFonts::new(), 0).expect("snapcompact");
        build_context(&c, &BuildOptions::default()).expect("context with frames");
    });
    lap("snapcompact compaction");
}

fn deep_chain() -> Vec<u8> {
    let mut entries = Vec::with_capacity(100_000);
    for i in 0..50_000u64 {
        entries.push(e(user("q")));
        entries.push(e(assistant("a", vec![], 20 + i * 4)));
    }
    spec::write(&SessionSpec {
        entries,
        trailing_newline: true,
    })
}

#[test]
fn a_100000_deep_chain() {
    on_small_stack(|| {
        let bytes = deep_chain();
        let s = invariants::load(&bytes).unwrap();
        let leaf = s.leaf().unwrap();
        assert_eq!(s.path_to(leaf).len(), 100_000, "one chain");
        drop(s);
        assert_eq!(exercise("deep chain", &bytes, 10), 100_000);
    });
}

#[test]
fn a_100000_deep_chain_compacts() {
    on_small_stack(|| compact("deep chain", &deep_chain()));
}

#[test]
fn one_megabyte_tokens_without_spaces() {
    on_small_stack(|| {
        let mega = "x".repeat(1 << 20);
        let mixed: String = "αβγ😀日".chars().cycle().take(300_000).collect();
        let entries = vec![
            e(user(&mega)),
            e(assistant(&mega, vec![read(1, "src/a.ts")], 300_000)),
            e(result(1, mega.clone())),
            e(assistant("done", vec![read(2, "src/a.ts")], 600_000)),
            e(result(2, mixed.clone())),
            e(assistant("ok", vec![], 700_000)),
            e(user("next")),
            e(assistant("fine", vec![], 700_010)),
        ];
        let bytes = spec::write(&SessionSpec {
            entries,
            trailing_newline: true,
        });
        exercise("1 MB tokens", &bytes, 2);
        compact("1 MB tokens", &bytes);

        // The renderer on one 1 MB word and on 1 MB of wide characters: every page counted,
        // the first ones drawn.
        let fallbacks = FallbackFonts::new();
        for (text, variant) in [
            (&mega, ShapeVariant::V11on16Bw),
            (&mega, ShapeVariant::Doc8on16SentDim),
            (&mixed, ShapeVariant::V8x8rBw),
        ] {
            let shape = variant.shape(BillingFamily::Anthropic);
            assert!(!normalize(text, shape.font, &fallbacks).is_empty());
            let opts = RenderOptions {
                max_frames: Some(2),
                ..RenderOptions::new(shape)
            };
            let frames = render_frames(text, &opts, &fallbacks).expect("frames");
            assert_eq!(frames.len(), 2, "{}", variant.name());
            invariants::frames_within(&frames, &opts).unwrap();
        }
    });
}

#[test]
fn ten_thousand_images() {
    on_small_stack(|| {
        let mut entries = Vec::with_capacity(6_000);
        for i in 0..2_000u64 {
            entries.push(e(Body::User {
                text: format!("look {i}"),
                images: 5,
            }));
            entries.push(e(assistant(
                "reading",
                vec![read(1, "img.png")],
                6_000 * (i + 1),
            )));
            entries.push(e(result(1, "an image".into())));
        }
        entries.push(e(assistant("seen", vec![], 12_000_001)));
        let bytes = spec::write(&SessionSpec {
            entries,
            trailing_newline: true,
        });
        assert_eq!(
            bytes.windows(9).filter(|w| w == b"\"image\",\"").count(),
            10_000
        );
        let n = exercise("10,000 images", &bytes, 3);
        compact("10,000 images", &bytes);
        assert_eq!(n, 6_001);
    });
}

/// Bytes allocated by `f` on this thread, freed or not.
fn allocated_by<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATED.get();
    let value = f();
    (value, ALLOCATED.get() - before)
}

/// One user message of 800 KB holding 2,000 fenced code blocks (issue 36 item 11): shaking
/// it rewrote the whole text once per block (≈ 1.6 GB copied, 12 s in the package); each
/// text is now rebuilt once, so the work stays within a few times the message.
#[test]
fn shake_of_a_message_with_thousands_of_blocks_is_linear() {
    on_small_stack(|| {
        let block = format!("```\n{}\n```\n", "let x = 1;\n".repeat(36));
        let text = format!("intro\n{}end", block.repeat(2_000));
        let size = text.len();
        assert!(size > 800_000, "{size}");
        let bytes = spec::write(&SessionSpec {
            entries: vec![e(user(&text)), e(assistant("done", vec![], 10))],
            trailing_newline: true,
        });
        let mut s = invariants::load(&bytes).unwrap();
        let mut cfg = ShakeConfig::preset(Preset::Rescue);
        cfg.fence_min_tokens = 50;
        let (plan, planned) = allocated_by(|| plan_shake(&s, &cfg).expect("plan"));
        assert_eq!(plan.regions.len(), 2_000);
        assert!(planned <= 20 * size, "{planned} bytes allocated to plan");
        let (json, _) = allocated_by(|| plan.json(&s));
        assert!(json.len() < 3 * size);
        let (report, took) = allocated_by(|| apply_shake(&mut s, &plan, Some("A1"), 7));
        let report = report.expect("apply");
        assert_eq!(report.blocks_dropped, 2_000);
        eprintln!("applyShake: {took} bytes allocated for {size} bytes of text");
        assert!(took <= 20 * size, "{took} bytes allocated for {size}");
        // The placeholders stand where the blocks were, in order.
        let line = s.entry_json(0);
        assert!(line.contains("intro\\n[shaken ~"), "{}", &line[..200]);
        assert!(line.contains("(region 2000)]\\nend"));
        assert!(!line.contains("let x"));
    });
}

/// A tool call whose arguments nest 10,000 levels deep (issue 43 item 2): `JSON.parse` reads
/// it, so the provider view has the call, whole, and its result (dropping the call orphaned
/// the result, which providers reject); on a 2 MiB stack, so nothing walks it recursively.
#[test]
fn tool_call_arguments_nested_10000_deep_reach_the_provider() {
    on_small_stack(|| {
        let depth = 10_000;
        let args = format!("{}\"deep\"{}", "{\"a\":[".repeat(depth), "]}".repeat(depth));
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;
        let lines = [
            header.to_string(),
            r#"{"type":"message","id":"u","parentId":null,"message":{"role":"user","content":"go"}}"#.into(),
            format!(
                r#"{{"type":"message","id":"a","parentId":"u","message":{{"role":"assistant","content":[{{"type":"text","text":"calling"}},{{"type":"toolCall","id":"t1","name":"probe","arguments":{args}}}],"stopReason":"toolUse","usage":{{"input":10,"output":5,"cacheRead":0,"cacheWrite":0}}}}}}"#
            ),
            format!(
                r#"{{"type":"message","id":"r","parentId":"a","message":{{"role":"toolResult","toolCallId":"t1","toolName":"probe","content":[{{"type":"text","text":"ok"}}],"details":{args},"isError":false}}}}"#
            ),
            r#"{"type":"message","id":"z","parentId":"r","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"stopReason":"stop"}}"#.into(),
        ];
        let bytes = (lines.join("\n") + "\n").into_bytes();
        let s = invariants::load(&bytes).expect("loads");
        assert_eq!(s.len(), 4);
        assert_eq!(s.to_bytes(), bytes);
        // Kept, and named: the readers of its fields cannot walk it.
        let warned: Vec<_> = s.warnings().iter().map(|w| (w.code, w.line)).collect();
        assert_eq!(
            warned,
            [
                (ErrorCode::InvalidEntryBody, 3),
                (ErrorCode::InvalidEntryBody, 4)
            ]
        );
        let ctx = build_context(&s, &BuildOptions::default()).expect("context");
        let roles: Vec<_> = ctx
            .messages
            .iter()
            .map(|m| format!("{:?}", m.role()))
            .collect();
        assert_eq!(roles, ["User", "Assistant", "ToolResult", "Assistant"]);
        let mut parts = Vec::new();
        for (pos, m) in ctx.messages.iter().enumerate() {
            let mut text = String::new();
            write_message_json(&mut text, &s, m, ctx.messages.get(pos + 1));
            parts.push(text);
        }
        // The call, its arguments byte for byte, and its result with its details.
        assert!(
            parts[1].contains(&format!(r#""id":"t1","name":"probe","arguments":{args}}}"#)),
            "{}",
            &parts[1][..200.min(parts[1].len())]
        );
        assert!(
            parts[2].contains(r#""toolCallId":"t1""#),
            "{}",
            &parts[2][..200]
        );
        assert!(parts[2].contains(&format!(r#""details":{args}"#)));
        assert!(!parts.concat().contains('\u{FDD0}'));
    });
}
