//! Small windows out of the box (issue 36 item 10; docs/guide/maintainer.md "Small windows"):
//! the budgets of `tokens::window_budgets` over windows of 8k to 2M tokens, the defaults kept
//! where they fit, and compactions that work in a 32k and a 16k window with default settings.

use ctxfold::compaction::commit::build_snapcompact;
use ctxfold::compaction::plan::{plan_compaction, PlanOptions};
use ctxfold::compaction::snapcompact::ArchiveOptions;
use ctxfold::render::shape::resolve::Target;
use ctxfold::render::FallbackFonts;
use ctxfold::session::{NewSession, SequentialIds, Session};
use ctxfold::settings::{CompactionSettings, Strategy};
use ctxfold::shake::ShakeConfig;
use ctxfold::tokens::{effective_reserve_tokens, threshold_tokens, window_budgets};
use ctxfold::triggers::*;
use proptest::prelude::*;
use serde_json::json;

fn settings(v: serde_json::Value) -> CompactionSettings {
    CompactionSettings::from_json(&v).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Any window from 8k to 2M with default settings: keep < threshold < window, the
    /// automatic shake protects less than the threshold, and an archive's room is inside the
    /// window; a user's keep (any value) resolves below the threshold too.
    #[test]
    fn budgets_fit_every_window(window in 8_000u64..=2_000_000, keep in 1u64..3_000_000) {
        let d = window_budgets(window, &CompactionSettings::default());
        prop_assert!(d.keep_recent_tokens > 0);
        prop_assert!(d.keep_recent_tokens < d.threshold_tokens, "{d:?}");
        prop_assert!(d.threshold_tokens < window, "{d:?}");
        prop_assert!(d.shake_protect_tokens < d.threshold_tokens, "{d:?}");
        prop_assert!(d.shake_min_savings < d.shake_protect_tokens, "{d:?}");
        prop_assert!(d.archive_budget_tokens <= d.threshold_tokens, "{d:?}");
        prop_assert!(d.archive_budget_tokens > d.keep_recent_tokens, "{d:?}");
        prop_assert!(!d.keep_recent_clamped);
        let s = settings(json!({"keepRecentTokens": keep}));
        let u = window_budgets(window, &s);
        prop_assert!(u.keep_recent_tokens < u.threshold_tokens, "{u:?}");
        prop_assert_eq!(u.keep_recent_clamped, keep != 20_000 && keep >= u.threshold_tokens);
        if keep < u.threshold_tokens && keep != 20_000 {
            prop_assert_eq!(u.keep_recent_tokens, keep, "a user's value that fits is kept");
        }
    }
}

/// Where the defaults fit (a threshold of 40,000 or more: windows from 56,384 tokens with
/// default settings) every budget is the reference's.
#[test]
fn defaults_are_unchanged_where_they_fit() {
    let s = CompactionSettings::default();
    for window in [
        56_384u64, 64_000, 65_536, 128_000, 200_000, 400_000, 1_000_000, 2_000_000,
    ] {
        let b = window_budgets(window, &s);
        assert!(b.threshold_tokens >= 40_000, "{window}");
        assert_eq!(
            (
                b.keep_recent_tokens,
                b.shake_protect_tokens,
                b.shake_min_savings
            ),
            (20_000, 16_000, 4_000),
            "{window}"
        );
        assert_eq!(
            b.archive_budget_tokens,
            window - effective_reserve_tokens(window, &s),
            "{window}"
        );
        assert!(matches!(
            s.for_window(window),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}

/// The 32k window: threshold 15,616 < the default keep of 20,000 and the automatic
/// shake's 16,000; resolved, they are shares of it.
#[test]
fn a_32k_window_gets_proportionate_budgets() {
    let b = window_budgets(32_000, &CompactionSettings::default());
    assert_eq!(b.threshold_tokens, 15_616);
    assert_eq!(b.reserve_tokens, 16_384);
    assert_eq!(b.keep_recent_tokens, 7_808);
    assert_eq!(
        (b.shake_protect_tokens, b.shake_min_savings),
        (6_246, 1_561)
    );
    assert_eq!(b.archive_budget_tokens, 12_492, "the recovery band");
    assert!(!b.keep_recent_clamped);
    // A user's 10,000 fits and is kept; 30,000 could summarize nothing and is clamped.
    let b = window_budgets(32_000, &settings(json!({"keepRecentTokens": 10_000})));
    assert_eq!(
        (b.keep_recent_tokens, b.keep_recent_clamped),
        (10_000, false)
    );
    let b = window_budgets(32_000, &settings(json!({"keepRecentTokens": 30_000})));
    assert_eq!((b.keep_recent_tokens, b.keep_recent_clamped), (7_808, true));
    // Unknown window: everything as set.
    let b = window_budgets(0, &CompactionSettings::default());
    assert_eq!(
        (b.keep_recent_tokens, b.shake_protect_tokens),
        (20_000, 16_000)
    );
}

/// The automatic shake preset scales with the threshold it is given; the manual one and an
/// explicit `protectTokens` do not.
#[test]
fn the_automatic_shake_preset_follows_the_threshold() {
    let c =
        ShakeConfig::from_json(&json!({"preset": "default", "thresholdTokens": 15_616})).unwrap();
    assert_eq!((c.protect_tokens, c.min_savings), (6_246, 1_561));
    let c =
        ShakeConfig::from_json(&json!({"preset": "default", "thresholdTokens": 183_616})).unwrap();
    assert_eq!((c.protect_tokens, c.min_savings), (16_000, 4_000));
    let c = ShakeConfig::from_json(
        &json!({"preset": "default", "thresholdTokens": 15_616, "protectTokens": 9_000}),
    )
    .unwrap();
    assert_eq!(c.protect_tokens, 9_000, "an explicit value wins");
    let c = ShakeConfig::from_json(&json!({"preset": "aggressive", "thresholdTokens": 15_616}))
        .unwrap();
    assert_eq!(c.protect_tokens, 4_000);
    assert!(ShakeConfig::from_json(&json!({"thresholdTokens": -1})).is_err());
}

fn new_session() -> Session {
    Session::create(
        NewSession {
            id: "small".into(),
            cwd: "/w".into(),
            now: 0,
            parent_session: None,
        },
        Box::new(SequentialIds::new()),
    )
}

/// `turns` user/assistant turns of about 1,000 tokens each (byte estimate).
fn grown(turns: usize) -> Session {
    let mut s = new_session();
    let mut now = 1_000;
    for t in 0..turns {
        let text = format!("turn {t} ").repeat(500);
        s.append_message(
            json!({"role": "user", "content": text, "timestamp": now}),
            now,
        )
        .unwrap();
        now += 1_000;
        s.append_message(
            json!({"role": "assistant", "content": [{"type": "text", "text": text}],
                   "provider": "anthropic", "model": "claude-opus-4-7", "api": "anthropic-messages",
                   "stopReason": "stop", "timestamp": now}),
            now,
        )
        .unwrap();
        now += 1_000;
    }
    s
}

/// A session of ~18,000 tokens in a 32k window (threshold 15,616) with default settings: the
/// default keep of 20,000 kept it all, so nothing could be compacted. Resolved for the window,
/// the compaction keeps about half the threshold.
#[test]
fn a_compaction_in_a_32k_window_with_default_settings_makes_room() {
    let s = grown(9);
    let plan = plan_compaction(
        &s,
        &CompactionSettings::default(),
        PlanOptions {
            context_window: 32_000,
            ..PlanOptions::default()
        },
    )
    .expect("something to compact");
    let p = &plan.preparation;
    assert_eq!(p.keep_recent_tokens, 7_808);
    assert!(!p.messages_to_summarize.is_empty());
    assert!(p.tokens_recent < 15_616 * 4 / 5, "{}", p.tokens_recent);
    // An unknown window keeps the setting (and here, everything).
    assert!(plan_compaction(&s, &CompactionSettings::default(), PlanOptions::default()).is_err());
}

/// snapcompact in a 16k window: the default reserve (16,384) is the whole window, so the
/// archive had no room at all (`E_NOTHING_TO_COMPACT`); with the small-window rescue it gets
/// the recovery band.
#[test]
fn a_snapcompact_archive_fits_a_16k_window() {
    let s = grown(9);
    let settings = CompactionSettings {
        strategy: Strategy::Snapcompact,
        ..CompactionSettings::default()
    };
    let reader = Target {
        id: Some("claude-opus-4-7".into()),
        api: Some("anthropic-messages".into()),
    };
    let mut options = PlanOptions {
        context_window: 16_000,
        model: reader.clone(),
        ..PlanOptions::default()
    };
    options.prepare.active_provider = Some("anthropic".into());
    let plan = plan_compaction(&s, &settings, options).expect("a plan");
    let built = build_snapcompact(
        &s,
        &plan,
        &ArchiveOptions::for_model(reader),
        &FallbackFonts::new(),
    )
    .expect("an archive");
    assert!(
        built.archive.frames.len() <= 2,
        "{}",
        built.archive.frames.len()
    );
    assert_eq!(threshold_tokens(16_000, &settings), 13_600);
}

fn model(window: u64) -> ModelInfo {
    ModelInfo {
        provider: "local".into(),
        id: "small".into(),
        context_window: window,
        max_output_tokens: 4_000,
        accepts_images: false,
    }
}

fn answer(context: u64) -> ctxfold::session::message::AssistantMessage {
    let v = json!({"role": "assistant", "provider": "local", "model": "small",
        "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}],
        "stopReason": "toolUse", "timestamp": 1_000,
        "usage": {"input": context - 100, "output": 100, "cacheRead": 0, "cacheWrite": 0,
                  "totalTokens": context}});
    match ctxfold::AgentMessage::parse(&v.to_string(), None).unwrap() {
        ctxfold::AgentMessage::Assistant(a) => a,
        other => panic!("{other:?}"),
    }
}

/// The requests carry the window's budgets for the host to compact with.
#[test]
fn requests_carry_the_budgets_of_the_window() {
    let mut cm = ContextManager::new(CompactionSettings::default());
    let m = model(32_000);
    let a = answer(16_000);
    let d = cm.after_turn(TurnInput::new(&a, &m, 5_000));
    let c = d.compact.expect("over the threshold");
    assert_eq!(
        c.budgets,
        Some(window_budgets(32_000, &CompactionSettings::default()))
    );
    let back = CompactRequest::from_json(&c.to_json()).unwrap();
    assert_eq!(back, c);
    assert_eq!(c.to_json()["budgets"]["keepRecentTokens"], 7_808);
    assert!(d.notices.is_empty(), "{:?}", d.notices);
}

/// A model without a context window: said once, never silence (issue 36 item 4).
#[test]
fn a_model_without_a_window_is_reported_once() {
    let mut cm = ContextManager::new(CompactionSettings::default());
    let m = model(0);
    let d = cm.check_model(&m);
    assert_eq!(d.notices.len(), 1, "{:?}", d.notices);
    assert_eq!(d.notices[0].level, NoticeLevel::Warning);
    assert!(d.notices[0]
        .text
        .contains("local/small has no contextWindow"));
    let a = answer(16_000);
    assert!(cm
        .after_turn(TurnInput::new(&a, &m, 5_000))
        .notices
        .is_empty());
    assert!(cm
        .before_prompt(PromptInput::new(&m, 6_000))
        .notices
        .is_empty());
    // A fresh machine says it at its first decision.
    let mut fresh = ContextManager::new(CompactionSettings::default());
    let d = fresh.before_prompt(PromptInput::new(&m, 6_000));
    assert_eq!(d.notices.len(), 1, "{:?}", d.notices);
    // With compaction off there is nothing to warn about.
    let mut off = ContextManager::new(settings(json!({"enabled": false})));
    assert!(off.check_model(&m).notices.is_empty());
}

/// A `keepRecentTokens` at or above the window's threshold is clamped, with a warning once
/// per window.
#[test]
fn a_keep_budget_too_large_for_the_window_is_clamped_with_a_warning() {
    let mut cm = ContextManager::new(settings(json!({"keepRecentTokens": 30_000})));
    let m = model(32_000);
    let a = answer(16_000);
    let d = cm.after_turn(TurnInput::new(&a, &m, 5_000));
    assert_eq!(d.notices.len(), 1, "{:?}", d.notices);
    assert!(
        d.notices[0].text.starts_with(
            "keepRecentTokens 30000 is at or above the compaction threshold of local/small \
             (15616 tokens of a 32000-token window)"
        ),
        "{}",
        d.notices[0].text
    );
    assert_eq!(
        d.compact
            .and_then(|c| c.budgets)
            .map(|b| b.keep_recent_tokens),
        Some(7_808)
    );
    assert!(cm
        .after_turn(TurnInput::new(&a, &m, 6_000))
        .notices
        .is_empty());
    // Another window that also clamps: said again for it; a large one: nothing.
    assert_eq!(cm.check_model(&model(24_000)).notices.len(), 1);
    assert!(cm.check_model(&model(200_000)).notices.is_empty());
}
