//! The Maintainer's calibration (spec: compaction §3): how many tokens the provider bills per
//! token of the core's estimate, learnt from the prompt tokens it reported for the requests it
//! answered. Sans-IO: the host reports what it sent and what came back; this answers the rates.
//!
//! A request's estimate is split into its text and its images, because providers bill an image
//! by its pixels whatever their tokenizer does to text. The provider's prompt tokens are
//! modelled as `text × ratio + images × image_rate`; over the model's last
//! [`SAMPLES_KEPT`] answered requests, the image rate is the least-squares fit of that model
//! (kept from the last fit that could tell the two apart, 1 until then) and the text ratio the
//! median of `(reported − images × image_rate) / text` over the requests with at least
//! [`MIN_CALIBRATION_TOKENS`] of text (kept while none has). Both are clamped. A request that
//! is nearly all images so teaches the image rate, not the text ratio.

use crate::session::message::{StopReason, Usage};
use crate::tokens::TEXT_RATIO_BOUNDS;
use std::collections::VecDeque;

/// The requests per model the fit reads (the newest).
pub const SAMPLES_KEPT: usize = 8;
/// Below this estimate a request says little about the ratio (a system prompt, a greeting).
pub const MIN_CALIBRATION_TOKENS: f64 = 1_000.0;
/// The text ratio's bounds (`compaction::snapcompact::TEXT_RATIO_BOUNDS`, which also bound the
/// rate a snapcompact commit reads from reported usage).
pub const MIN_RATIO: f64 = TEXT_RATIO_BOUNDS.0;
pub const MAX_RATIO: f64 = TEXT_RATIO_BOUNDS.1;
/// The image rate's bounds: a frame estimated at 5,024 tokens bills 1,120 on Gemini (0.22); an
/// image estimated at 1,200 bills up to 4,784 on Anthropic (about 4).
pub const MIN_IMAGE_RATE: f64 = 0.2;
pub const MAX_IMAGE_RATE: f64 = 4.0;
/// The fit separates text from images only when the requests mix them in different
/// proportions: the squared sine of the angle between the text and the image columns must
/// reach this.
pub const MIN_SEPARATION: f64 = 0.01;

/// One answered request: its estimate of text and of images, and the prompt tokens reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub text: f64,
    pub images: f64,
    pub reported: f64,
}

/// The rates of one model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Provider tokens per estimated token of text.
    pub ratio: f64,
    /// Provider tokens per estimated token of images.
    pub image_rate: f64,
    /// The answered requests they come from.
    pub samples: usize,
}

impl Rates {
    const NONE: Rates = Rates {
        ratio: 1.0,
        image_rate: 1.0,
        samples: 0,
    };
}

#[derive(Debug, Clone)]
struct ModelFit {
    key: String,
    samples: VecDeque<Sample>,
    /// A request with enough text fitted `ratio` (else it is the 1 it started at).
    text_fitted: bool,
    ratio: f64,
    image_rate: f64,
}

/// The request last sent, as the calibration compares it with its reply.
#[derive(Debug, Clone, PartialEq)]
pub struct SentRequest {
    /// `provider/id` of the model it went to.
    pub key: String,
    /// The model's id (a reply naming another model says nothing about this one).
    pub model_id: String,
    pub text: f64,
    pub images: f64,
}

impl SentRequest {
    /// What a request sent to `key` (`model_id`), estimated at `text` and `images` tokens,
    /// is calibrated on: nothing when inline imaging saved tokens (it sent less than the
    /// estimate counts); its text only when the host counts tokens itself (`host_counts`: a
    /// host's counter prices the images too, so the provider's figure is read against text).
    pub fn of(
        key: &str,
        model_id: &str,
        text: f64,
        images: f64,
        inline_saved: f64,
        host_counts: bool,
    ) -> Option<SentRequest> {
        (inline_saved <= 0.0 || inline_saved.is_nan()).then(|| SentRequest {
            key: key.to_string(),
            model_id: model_id.to_string(),
            text,
            images: if host_counts { 0.0 } else { images },
        })
    }
}

/// Per-model calibration (module docs).
#[derive(Debug, Clone, Default)]
pub struct Calibration {
    disabled: bool,
    models: Vec<ModelFit>,
}

impl Calibration {
    /// A calibration; `enabled: false` keeps every rate at 1.
    pub fn new(enabled: bool) -> Calibration {
        Calibration {
            disabled: !enabled,
            models: Vec::new(),
        }
    }

    /// The rates of the model `key` (`provider/id`): 1 until it answered a request.
    pub fn rates(&self, key: &str) -> Rates {
        if self.disabled {
            return Rates::NONE;
        }
        self.models
            .iter()
            .find(|m| m.key == key)
            .map_or(Rates::NONE, |m| Rates {
                ratio: m.ratio,
                image_rate: m.image_rate,
                samples: m.samples.len(),
            })
    }

    /// A request of `key` estimated at `text` tokens of text and `images` of images, as the
    /// provider would count it.
    pub fn calibrated(&self, key: &str, text: f64, images: f64) -> f64 {
        let r = self.rates(key);
        text * r.ratio + images * r.image_rate
    }

    /// A reply to `sent`: its reported prompt tokens (input + cache read + cache write)
    /// calibrate the model, unless the reply failed (`error`, `aborted`), came from another
    /// model, or carries no usage. Returns whether it was taken.
    pub fn observe_reply(
        &mut self,
        sent: &SentRequest,
        stop: Option<&StopReason>,
        model: Option<&str>,
        usage: Option<&Usage>,
    ) -> bool {
        if matches!(stop, Some(StopReason::Error | StopReason::Aborted)) {
            return false;
        }
        if model.is_some_and(|m| m != sent.model_id) {
            return false;
        }
        let Some(u) = usage else { return false };
        let reported = u.input + u.cache_read + u.cache_write;
        self.observe(&sent.key, sent.text, sent.images, reported)
    }

    /// A request of `key` estimated at `text` and `images` tokens was reported as `reported`
    /// prompt tokens. Too small a request (under [`MIN_CALIBRATION_TOKENS`]) or a count that is
    /// not positive teaches nothing. Returns whether it was taken.
    pub fn observe(&mut self, key: &str, text: f64, images: f64, reported: f64) -> bool {
        if self.disabled
            || !(text >= 0.0 && images >= 0.0 && text + images >= MIN_CALIBRATION_TOKENS)
            || !(reported > 0.0 && reported.is_finite() && (text + images).is_finite())
        {
            return false;
        }
        let i = match self.models.iter().position(|m| m.key == key) {
            Some(i) => i,
            None => {
                self.models.push(ModelFit {
                    key: key.to_string(),
                    samples: VecDeque::new(),
                    text_fitted: false,
                    ratio: 1.0,
                    image_rate: 1.0,
                });
                self.models.len() - 1
            }
        };
        let m = &mut self.models[i];
        m.samples.push_back(Sample {
            text,
            images,
            reported,
        });
        if m.samples.len() > SAMPLES_KEPT {
            m.samples.pop_front();
        }
        m.image_rate = fit_image_rate(&m.samples).unwrap_or(m.image_rate);
        if let Some(r) = text_ratio(&m.samples, m.image_rate) {
            m.ratio = r;
            m.text_fitted = true;
        }
        true
    }

    /// The text ratio of the model `key` when it was measured: a request with at least
    /// [`MIN_CALIBRATION_TOKENS`] of text was answered (`None` before that, and with the
    /// calibration off).
    pub fn measured_ratio(&self, key: &str) -> Option<f64> {
        if self.disabled {
            return None;
        }
        self.models
            .iter()
            .find(|m| m.key == key && m.text_fitted)
            .map(|m| m.ratio)
    }

    /// The provider's tokens per token of the core's estimate of text for `key`, as the
    /// compaction walk takes it (`WalkInput::provider_ratio`): the measured ratio, times the
    /// host's count over the core's estimate when the host counts ([`HostCount::provider_ratio`];
    /// its counter stands in for a ratio not measured yet). `None` when neither says anything,
    /// not 1: a snapcompact commit then reads the rate from the usage reported on the path
    /// (issue 36, the agent fuzz target's finding: an archive smaller at 1x was billed larger
    /// by a provider counting 0.5x).
    pub fn provider_ratio(&self, key: &str, count: HostCount) -> Option<f64> {
        let measured = self.measured_ratio(key);
        if count.estimated > 0.0 && count.counted > 0.0 {
            Some(count.provider_ratio(measured.unwrap_or(1.0)))
        } else {
            measured
        }
    }

    /// Every model calibrated so far, in the order first seen.
    pub fn models(&self) -> impl Iterator<Item = (&str, Rates)> {
        self.models.iter().map(|m| {
            (
                m.key.as_str(),
                Rates {
                    ratio: m.ratio,
                    image_rate: m.image_rate,
                    samples: m.samples.len(),
                },
            )
        })
    }
}

/// The image rate of the least-squares fit `reported ≈ text × ratio + images × rate`, clamped;
/// `None` when the samples hold no images or mix text and images in too similar proportions.
fn fit_image_rate(samples: &VecDeque<Sample>) -> Option<f64> {
    let (mut tt, mut ii, mut ti, mut tr, mut ir) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for s in samples {
        tt += s.text * s.text;
        ii += s.images * s.images;
        ti += s.text * s.images;
        tr += s.text * s.reported;
        ir += s.images * s.reported;
    }
    if ii == 0.0 {
        return None;
    }
    // Images alone (no text in any sample): the rate is the images' own ratio.
    if tt == 0.0 {
        return Some((ir / ii).clamp(MIN_IMAGE_RATE, MAX_IMAGE_RATE));
    }
    let det = tt * ii - ti * ti;
    if det.is_nan() || det < MIN_SEPARATION * tt * ii {
        return None;
    }
    Some(((tt * ir - ti * tr) / det).clamp(MIN_IMAGE_RATE, MAX_IMAGE_RATE))
}

/// The median of `(reported − images × image_rate) / text` over the samples with enough text,
/// each clamped; `None` when none has.
fn text_ratio(samples: &VecDeque<Sample>, image_rate: f64) -> Option<f64> {
    let mut ratios: Vec<f64> = samples
        .iter()
        .filter(|s| s.text >= MIN_CALIBRATION_TOKENS)
        .map(|s| ((s.reported - s.images * image_rate) / s.text).clamp(MIN_RATIO, MAX_RATIO))
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let mid = ratios.len() / 2;
    Some(if ratios.len() % 2 == 1 {
        ratios[mid]
    } else {
        (ratios[mid - 1] + ratios[mid]) / 2.0
    })
}

/// How a host's own token count (a `tokenCounter`) maps onto the core's estimate of one live
/// context: `estimated` by the core, `counted` by the host, `usage` the prompt tokens the
/// provider reported for the path (0 without).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostCount {
    pub estimated: f64,
    pub counted: f64,
    pub usage: f64,
}

impl HostCount {
    /// Core estimate per host token (1 when either figure is missing).
    fn estimate_per_count(&self) -> f64 {
        if self.estimated > 0.0 && self.counted > 0.0 {
            self.estimated / self.counted
        } else {
            1.0
        }
    }

    /// A window the host gives in its tokens, in the core's estimate (spec: compaction §3.1,
    /// §4.3, §6: the core picks what a compaction keeps and what a prune spares in its own
    /// estimate), rounded up. `keepRecentTokens` stays as it is when the path has reported
    /// usage: the core scales it by that usage itself (§3.4), and scaling it by the host's
    /// count as well would shrink it twice.
    pub fn window_in_estimate(&self, name: &str, tokens: f64) -> f64 {
        if name == "keepRecentTokens" && self.usage > 0.0 {
            tokens
        } else {
            (tokens * self.estimate_per_count()).ceil()
        }
    }

    /// Provider tokens per token of the core's estimate of text: the calibration's `ratio`
    /// (learnt in the host's tokens) times the host's count over the core's estimate.
    pub fn provider_ratio(&self, ratio: f64) -> f64 {
        if self.estimated > 0.0 && self.counted > 0.0 {
            (self.counted / self.estimated) * ratio
        } else {
            ratio
        }
    }
}

/// The characters of one message a host's token counter reads by default: a 50 MB tool output
/// must not stall a tokenizer.
pub const DEFAULT_MAX_COUNT_CHARS: f64 = 200_000.0;
/// The least cap a host may set (a smaller cut says too little about the text).
pub const MIN_MAX_COUNT_CHARS: f64 = 1_000.0;

/// The cap of the characters a host's counter reads of one message: `requested`, or the
/// default when absent; an error when it is not a number of at least [`MIN_MAX_COUNT_CHARS`].
pub fn max_count_chars(requested: Option<f64>) -> Result<f64, String> {
    match requested {
        None => Ok(DEFAULT_MAX_COUNT_CHARS),
        Some(v) if v.is_finite() && v >= MIN_MAX_COUNT_CHARS => Ok(v),
        Some(_) => Err(format!(
            "options.maxCountChars must be a number of at least {MIN_MAX_COUNT_CHARS}"
        )),
    }
}

/// How a message of `total` characters reaches a host's counter under `cap`: `None`, whole;
/// `Some((keep, scale))`, every string cut to `ceil(length × keep)` (proportionally, so the
/// strings keep their shares) and the count multiplied by `scale` for what was left out.
pub fn count_cut(total: f64, cap: f64) -> Option<(f64, f64)> {
    (total > cap && cap > 0.0).then(|| (cap / total, total / cap))
}

/// The images of one request as the estimate charges them (spec: compaction §3.1, snapcompact
/// §5.3), and what the provider's image budget leaves out of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestImages {
    /// Images to leave out of each message, oldest first, so that at most the budget is sent.
    pub drops: Vec<u32>,
    /// Images left out in all.
    pub omitted: u64,
    /// The estimate of the images sent: frames at [`FRAME_TOKEN_ESTIMATE`](crate::tokens::FRAME_TOKEN_ESTIMATE), any other image
    /// at [`IMAGE_TOKENS`](crate::tokens::IMAGE_TOKENS).
    pub sent_tokens: u64,
    /// The estimate of the context's images: every frame of the archive, those the view's
    /// frame budgets left out too, and every other image (no provider budget applied).
    pub context_tokens: u64,
}

/// What a tool result left empty by the provider's image budget reads instead of its images
/// (spec: snapcompact §5.1: the host clamps a request to the budget, oldest images first).
pub const IMAGE_OMITTED: &str = "[image omitted: provider image limit]";

/// The images of a request built from a view of the context: `counts`, the image parts of
/// each of its messages in order (none for an assistant's); `summary_first`, the first
/// message is the compaction summary, whose images are the snapcompact archive's frames;
/// `frames_left_out`, the frames the view's budgets left out of that summary; `limit`, the
/// provider's image budget. Over the budget the oldest images are left out first (ours: a
/// provider refuses a request over its image limit, and the oldest images matter least; the
/// summary's frames are the oldest of all). Frames are charged [`FRAME_TOKEN_ESTIMATE`](crate::tokens::FRAME_TOKEN_ESTIMATE) each
/// (spec: snapcompact §5.3), any other image [`IMAGE_TOKENS`](crate::tokens::IMAGE_TOKENS) (spec: compaction §3.1).
pub fn request_images(
    counts: &[u32],
    summary_first: bool,
    frames_left_out: u64,
    limit: u64,
) -> RequestImages {
    use crate::tokens::{FRAME_TOKEN_ESTIMATE, IMAGE_TOKENS};
    let total: u64 = counts.iter().map(|&n| u64::from(n)).sum();
    let omitted = total.saturating_sub(limit);
    let mut left = omitted;
    let drops: Vec<u32> = counts
        .iter()
        .map(|&n| {
            let d = left.min(u64::from(n));
            left -= d;
            d as u32
        })
        .collect();
    let frames = if summary_first {
        counts.first().map_or(0, |&n| u64::from(n))
    } else {
        0
    };
    let frames_dropped = if summary_first {
        drops.first().map_or(0, |&d| u64::from(d))
    } else {
        0
    };
    let others = total - frames;
    let others_sent = others - (omitted - frames_dropped);
    let frame = FRAME_TOKEN_ESTIMATE;
    RequestImages {
        drops,
        omitted,
        sent_tokens: (frames - frames_dropped) * frame + others_sent * IMAGE_TOKENS,
        context_tokens: (frames + frames_left_out) * frame + others * IMAGE_TOKENS,
    }
}

/// A maintenance report's figures in the host's tokens (spec: compaction §3.1): `figures`
/// (the tokens per kind, the shake's share), measured by the core's estimate of a context it
/// puts at `estimated_after`, scaled by the host's count of that context, `counted_after`,
/// over that estimate (unchanged when the estimate is 0), each rounded.
pub fn in_counted(figures: &mut [f64], estimated_after: f64, counted_after: f64) {
    let scale = if estimated_after > 0.0 {
        counted_after / estimated_after
    } else {
        1.0
    };
    for f in figures {
        *f = (*f * scale).round();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk's text rate is not known until a request with enough text was answered (or
    /// the host counts); before that it is `None`, not the starting 1 (issue 36: an archive
    /// smaller at 1x was billed larger by a provider counting 0.5x).
    #[test]
    fn a_request_is_calibrated_on_what_it_sent_as_the_estimate_counts() {
        let sent = SentRequest::of("p/m", "m", 1_000.0, 500.0, 0.0, false).unwrap();
        assert_eq!((sent.text, sent.images), (1_000.0, 500.0));
        // A host's counter prices images itself: text only.
        let counted = SentRequest::of("p/m", "m", 1_000.0, 500.0, 0.0, true).unwrap();
        assert_eq!((counted.text, counted.images), (1_000.0, 0.0));
        // Inline imaging sent less than the estimate: nothing to calibrate on.
        assert_eq!(
            SentRequest::of("p/m", "m", 1_000.0, 0.0, 200.0, false),
            None
        );
        assert!(SentRequest::of("p/m", "m", 1_000.0, 0.0, f64::NAN, false).is_some());
    }

    #[test]
    fn the_providers_text_rate_is_unknown_until_measured() {
        let none = HostCount {
            estimated: 10_000.0,
            counted: 0.0,
            usage: 0.0,
        };
        let mut c = Calibration::new(true);
        assert_eq!(c.provider_ratio("p/m", none), None);
        // A request that is nearly all images teaches the image rate, not the text rate.
        assert!(c.observe("p/m", 0.0, 20_000.0, 12_000.0));
        assert_eq!(c.rates("p/m").samples, 1);
        assert_eq!(c.provider_ratio("p/m", none), None);
        assert!(c.observe("p/m", 10_000.0, 0.0, 5_000.0));
        assert_eq!(c.provider_ratio("p/m", none), Some(0.5));
        // A host's counter stands in for the ratio not measured yet, and scales a measured one.
        let counted = HostCount {
            counted: 15_000.0,
            ..none
        };
        assert_eq!(c.provider_ratio("p/other", counted), Some(1.5));
        assert_eq!(c.provider_ratio("p/m", counted), Some(0.75));
        // Calibration off: nothing is measured.
        let mut off = Calibration::new(false);
        off.observe("p/m", 10_000.0, 0.0, 5_000.0);
        assert_eq!(off.provider_ratio("p/m", none), None);
    }

    #[test]
    fn the_text_ratio_is_the_median_and_images_are_fitted_apart() {
        let mut c = Calibration::new(true);
        assert_eq!(c.rates("p/m"), Rates::NONE);
        // Too small to teach anything.
        assert!(!c.observe("p/m", 500.0, 0.0, 600.0));
        assert!(c.observe("p/m", 10_000.0, 0.0, 12_000.0));
        assert_eq!(c.rates("p/m").ratio, 1.2);
        // Clamped.
        c.observe("p/m", 10_000.0, 0.0, 100_000.0);
        c.observe("p/m", 10_000.0, 0.0, 100_000.0);
        assert_eq!(c.rates("p/m").ratio, 3.0);
        // Text and images in varying proportions: the image rate is fitted (text at 1.5,
        // images at 0.6).
        let mut c = Calibration::new(true);
        for (t, i) in [(4_000.0, 10_000.0), (8_000.0, 2_000.0), (2_000.0, 20_000.0)] {
            c.observe("p/v", t, i, 1.5 * t + 0.6 * i);
        }
        let r = c.rates("p/v");
        assert!((r.image_rate - 0.6).abs() < 1e-9, "{r:?}");
        assert!((r.ratio - 1.5).abs() < 1e-9, "{r:?}");
        assert_eq!(r.samples, 3);
        assert!((c.calibrated("p/v", 1_000.0, 1_000.0) - 2_100.0).abs() < 1e-6);
        // The window keeps the newest eight.
        for _ in 0..20 {
            c.observe("p/v", 5_000.0, 0.0, 5_000.0);
        }
        assert_eq!(c.rates("p/v").samples, SAMPLES_KEPT);
        // Off: always 1.
        let mut off = Calibration::new(false);
        assert!(!off.observe("p/m", 10_000.0, 0.0, 20_000.0));
        assert_eq!(off.rates("p/m").ratio, 1.0);
    }

    #[test]
    fn a_reply_calibrates_only_when_it_answered_the_request() {
        let sent = SentRequest {
            key: "p/m".into(),
            model_id: "m".into(),
            text: 10_000.0,
            images: 0.0,
        };
        let usage = Usage {
            input: 11_000.0,
            cache_read: 500.0,
            cache_write: 500.0,
            ..Usage::default()
        };
        let mut c = Calibration::new(true);
        assert!(!c.observe_reply(&sent, Some(&StopReason::Error), None, Some(&usage)));
        assert!(!c.observe_reply(&sent, Some(&StopReason::Aborted), None, Some(&usage)));
        assert!(!c.observe_reply(&sent, Some(&StopReason::Stop), Some("other"), Some(&usage)));
        assert!(!c.observe_reply(&sent, Some(&StopReason::Stop), Some("m"), None));
        assert!(c.observe_reply(&sent, Some(&StopReason::Stop), Some("m"), Some(&usage)));
        assert_eq!(c.rates("p/m").ratio, 1.2);
    }

    #[test]
    fn a_huge_message_reaches_the_counter_cut_and_is_scaled_back() {
        assert_eq!(count_cut(1_000.0, 200_000.0), None);
        assert_eq!(count_cut(400_000.0, 200_000.0), Some((0.5, 2.0)));
        assert_eq!(max_count_chars(None), Ok(DEFAULT_MAX_COUNT_CHARS));
        assert_eq!(max_count_chars(Some(5_000.0)), Ok(5_000.0));
        for bad in [999.0, f64::NAN, f64::INFINITY, -1.0] {
            assert!(max_count_chars(Some(bad)).is_err());
        }
    }

    #[test]
    fn a_host_count_converts_windows_and_the_provider_ratio() {
        let h = HostCount {
            estimated: 1_000.0,
            counted: 2_000.0,
            usage: 0.0,
        };
        assert_eq!(h.window_in_estimate("protectTokens", 4_001.0), 2_001.0);
        assert_eq!(h.window_in_estimate("keepRecentTokens", 4_000.0), 2_000.0);
        let with_usage = HostCount { usage: 5.0, ..h };
        assert_eq!(
            with_usage.window_in_estimate("keepRecentTokens", 4_000.0),
            4_000.0
        );
        assert_eq!(h.provider_ratio(1.5), 3.0);
        let unknown = HostCount {
            estimated: 0.0,
            ..h
        };
        assert_eq!(unknown.window_in_estimate("protectTokens", 10.0), 10.0);
        assert_eq!(unknown.provider_ratio(1.5), 1.5);
    }

    #[test]
    fn a_request_s_images_frames_first_out_and_at_their_own_charge() {
        use crate::tokens::{FRAME_TOKEN_ESTIMATE as F, IMAGE_TOKENS as I};
        // A summary with 3 frames (2 more left out by the view), then 0, 2 and 1 images.
        let r = request_images(&[3, 0, 2, 1], true, 2, 100);
        assert_eq!((r.drops, r.omitted), (vec![0, 0, 0, 0], 0));
        assert_eq!(r.sent_tokens, 3 * F + 3 * I);
        assert_eq!(r.context_tokens, 5 * F + 3 * I);
        // A budget of 2: the oldest 4 go, the frames first, then the next message's.
        let r = request_images(&[3, 0, 2, 1], true, 2, 2);
        assert_eq!((r.drops, r.omitted), (vec![3, 0, 1, 0], 4));
        assert_eq!(r.sent_tokens, 2 * I);
        assert_eq!(r.context_tokens, 5 * F + 3 * I);
        // Without a compaction the first message's images are images, whoever wrote it.
        let r = request_images(&[1, 1], false, 0, 1);
        assert_eq!(
            (r.drops, r.sent_tokens, r.context_tokens),
            (vec![1, 0], I, 2 * I)
        );
        let r = request_images(&[], true, 0, 0);
        assert_eq!((r.omitted, r.sent_tokens, r.context_tokens), (0, 0, 0));
    }

    #[test]
    fn a_report_in_the_host_s_tokens() {
        let mut figures = [1_000.0, 333.0, 0.0];
        in_counted(&mut figures, 2_000.0, 3_000.0);
        assert_eq!(figures, [1_500.0, 500.0, 0.0]);
        let mut figures = [7.0];
        in_counted(&mut figures, 0.0, 50.0);
        assert_eq!(figures, [7.0]);
    }

    mod properties {
        use super::super::request_images;
        use crate::tokens::{FRAME_TOKEN_ESTIMATE as F, IMAGE_TOKENS as I};
        use proptest::prelude::*;

        proptest! {
            /// Whatever the counts and the budget: at most the budget is sent, the drops are
            /// the oldest images and add up to what is left out, and what is sent costs at most
            /// what the context's images cost.
            #[test]
            fn the_budget_holds_and_the_oldest_go(
                counts in prop::collection::vec(0u32..6, 0..40),
                summary_first: bool,
                left_out in 0u64..10,
                limit in 0u64..60,
            ) {
                let r = request_images(&counts, summary_first, left_out, limit);
                let total: u64 = counts.iter().map(|&n| u64::from(n)).sum();
                prop_assert_eq!(r.omitted, total.saturating_sub(limit));
                prop_assert_eq!(r.drops.iter().map(|&d| u64::from(d)).sum::<u64>(), r.omitted);
                // Oldest first: a message keeps an image only once every older one kept all.
                let first_kept = r.drops.iter().zip(&counts).position(|(d, n)| d < n);
                if let Some(k) = first_kept {
                    prop_assert!(r.drops[k + 1..].iter().all(|&d| d == 0));
                }
                let frames = if summary_first { counts.first().map_or(0, |&n| u64::from(n)) } else { 0 };
                prop_assert_eq!(r.context_tokens, (frames + left_out) * F + (total - frames) * I);
                prop_assert!(r.sent_tokens + left_out * F <= r.context_tokens);
                prop_assert!(r.sent_tokens <= limit.min(total) * F);
            }
        }
    }
}
