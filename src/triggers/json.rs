//! The host JSON of the trigger machine's inputs and outputs (spec: compaction §8.7): the
//! JS-facing shapes, written out by hand (one code path instead of one serde monomorphization
//! per type). The `serde` impls below delegate to them.

use super::{
    CompactRequest, CompactionAction, CompactionMethod, CompactionOutcome, CompactionReason,
    Decision, EntryPoint, Event, ManagerState, PrunePass, PruneStep,
};
use crate::settings::Strategy;
use crate::support::json::js::{self, Object};
use crate::tokens::WindowBudgets;
use serde_json::Value;

/// `[…]` of `items`, each written by `item`.
fn array<T>(out: &mut String, items: &[T], mut item: impl FnMut(&mut String, &T)) {
    out.push('[');
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        item(out, v);
    }
    out.push(']');
}

/// The `Value` of text one of the writers below wrote (for the `serde` impls and tests).
fn value_of(write: impl FnOnce(&mut String)) -> Value {
    let mut out = String::new();
    write(&mut out);
    crate::support::json::parse(&out).unwrap_or(Value::Null)
}

impl CompactRequest {
    /// Appends the request as the JS API carries it (JSON text).
    pub fn write_json(&self, out: &mut String) {
        let mut o = Object::open(out);
        o.str("reason", self.reason.as_str());
        o.str("entry", self.entry.as_str());
        o.bool("willRetry", self.will_retry);
        o.str("strategy", self.strategy.as_str());
        array(o.key("methods"), &self.methods, |out, m| {
            js::write_string(out, m.as_str())
        });
        o.str("action", self.action.as_str());
        o.bool("excludeSnapcompact", self.exclude_snapcompact);
        o.num("contextTokens", self.context_tokens as f64);
        o.num("contextWindow", self.context_window as f64);
        o.opt_num("thresholdTokens", self.threshold_tokens.map(|t| t as f64));
        o.bool("payloadRejection", self.payload_rejection);
        match &self.budgets {
            Some(b) => b.write_json(o.key("budgets")),
            None => o.null("budgets"),
        }
        o.close();
    }

    /// The request as the JS API carries it.
    pub fn to_json(&self) -> Value {
        value_of(|out| self.write_json(out))
    }

    /// Reads a request from its JSON form: every field may be left out (the default's value
    /// is taken), unknown fields are ignored, a present field must have its type.
    pub fn from_json(v: &Value) -> Result<CompactRequest, String> {
        fn name<T>(v: &Value, key: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T, String> {
            match v.as_str() {
                Some(s) => parse(s).ok_or_else(|| format!("unknown {key} \"{s}\"")),
                None => Err(format!("`{key}` must be a string")),
            }
        }
        let flag = |v: &Value, key: &str| v.as_bool().ok_or(format!("`{key}` must be a boolean"));
        let count = |v: &Value, key: &str| {
            v.as_u64()
                .ok_or(format!("`{key}` must be a non-negative integer"))
        };
        let o = v
            .as_object()
            .ok_or("a compaction request must be an object")?;
        let mut r = CompactRequest::default();
        for (key, v) in o {
            let k = key.as_str();
            match k {
                "reason" => r.reason = name(v, k, CompactionReason::parse)?,
                "entry" => r.entry = name(v, k, EntryPoint::parse)?,
                "willRetry" => r.will_retry = flag(v, k)?,
                "strategy" => r.strategy = name(v, k, Strategy::parse)?,
                "methods" => {
                    r.methods = v
                        .as_array()
                        .ok_or("`methods` must be an array")?
                        .iter()
                        .map(|m| name(m, "method", CompactionMethod::parse))
                        .collect::<Result<_, _>>()?
                }
                "action" => r.action = name(v, k, CompactionAction::parse)?,
                "excludeSnapcompact" => r.exclude_snapcompact = flag(v, k)?,
                "contextTokens" => r.context_tokens = count(v, k)?,
                "contextWindow" => r.context_window = count(v, k)?,
                "thresholdTokens" if v.is_null() => r.threshold_tokens = None,
                "thresholdTokens" => r.threshold_tokens = Some(count(v, k)?),
                "payloadRejection" => r.payload_rejection = flag(v, k)?,
                "budgets" if v.is_null() => r.budgets = None,
                "budgets" => r.budgets = Some(WindowBudgets::from_json(v)?),
                _ => {}
            }
        }
        Ok(r)
    }
}

impl WindowBudgets {
    /// Appends the budgets as the JS API carries them.
    pub fn write_json(&self, out: &mut String) {
        let mut o = Object::open(out);
        for (k, n) in [
            ("contextWindow", self.context_window),
            ("thresholdTokens", self.threshold_tokens),
            ("reserveTokens", self.reserve_tokens),
            ("keepRecentTokens", self.keep_recent_tokens),
        ] {
            o.num(k, n as f64);
        }
        o.bool("keepRecentClamped", self.keep_recent_clamped);
        for (k, n) in [
            ("shakeProtectTokens", self.shake_protect_tokens),
            ("shakeMinSavings", self.shake_min_savings),
            ("archiveBudgetTokens", self.archive_budget_tokens),
        ] {
            o.num(k, n as f64);
        }
        o.close();
    }

    /// The budgets as JSON text.
    pub fn json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    /// Reads budgets back from their JSON form (a request the host returns): every field
    /// must be there with its type.
    pub fn from_json(v: &Value) -> Result<WindowBudgets, String> {
        let count = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .ok_or(format!("`budgets.{k}` must be a non-negative integer"))
        };
        Ok(WindowBudgets {
            context_window: count("contextWindow")?,
            threshold_tokens: count("thresholdTokens")?,
            reserve_tokens: count("reserveTokens")?,
            keep_recent_tokens: count("keepRecentTokens")?,
            keep_recent_clamped: v
                .get("keepRecentClamped")
                .and_then(Value::as_bool)
                .ok_or("`budgets.keepRecentClamped` must be a boolean")?,
            shake_protect_tokens: count("shakeProtectTokens")?,
            shake_min_savings: count("shakeMinSavings")?,
            archive_budget_tokens: count("archiveBudgetTokens")?,
        })
    }
}

impl Event {
    /// Appends the event as the JS API carries it (absent options and a false `skipped` left
    /// out).
    pub fn write_json(&self, out: &mut String) {
        let mut o = Object::open(out);
        match self {
            Event::AutoCompactionStart { reason, action } => {
                o.str("type", "auto_compaction_start");
                o.str("reason", reason.as_str());
                if let Some(a) = action {
                    o.str("action", a.as_str());
                }
            }
            Event::AutoCompactionEnd {
                action,
                aborted,
                will_retry,
                error_message,
                skipped,
            } => {
                o.str("type", "auto_compaction_end");
                if let Some(a) = action {
                    o.str("action", a.as_str());
                }
                o.bool("aborted", *aborted);
                o.bool("willRetry", *will_retry);
                if let Some(e) = error_message {
                    o.str("errorMessage", e);
                }
                if *skipped {
                    o.bool("skipped", true);
                }
            }
        }
        o.close();
    }

    /// The event as the JS API carries it.
    pub fn to_json(&self) -> Value {
        value_of(|out| self.write_json(out))
    }
}

impl Decision {
    /// The decision as the JS API carries it, as JSON text.
    pub fn json(&self) -> String {
        let mut out = String::new();
        let mut o = Object::open(&mut out);
        array(o.key("events"), &self.events, |out, e| e.write_json(out));
        array(o.key("notices"), &self.notices, |out, n| {
            let mut o = Object::open(out);
            o.str("level", n.level.as_str());
            o.str("text", &n.text);
            o.close();
        });
        o.opt_str("compactionWarning", self.compaction_warning.as_deref());
        match self.drop_failed_turn {
            Some(d) => {
                let mut t = Object::open(o.key("dropFailedTurn"));
                t.bool("durable", d.durable);
                t.close();
            }
            None => o.null("dropFailedTurn"),
        }
        o.bool("restoreFailedTurn", self.restore_failed_turn);
        match self.promote {
            Some(p) => {
                let mut t = Object::open(o.key("promote"));
                t.str("reason", p.reason.as_str());
                t.num("contextTokens", p.context_tokens as f64);
                t.num("contextWindow", p.context_window as f64);
                t.close();
            }
            None => o.null("promote"),
        }
        match &self.compact {
            Some(c) => c.write_json(o.key("compact")),
            None => o.null("compact"),
        }
        match &self.continuation {
            Some(c) => {
                let mut t = Object::open(o.key("continuation"));
                t.num("afterMs", c.after_ms as f64);
                t.str("kind", c.kind.as_str());
                t.opt_str("prompt", c.prompt);
                t.str("next", c.next().as_str());
                t.close();
            }
            None => o.null("continuation"),
        }
        o.bool("blockAutoContinue", self.block_auto_continue);
        o.opt_num("wakeAt", self.wake_at.map(|w| w as f64));
        o.close();
        out
    }

    /// The decision as the JS API carries it.
    pub fn to_json(&self) -> Value {
        value_of(|out| out.push_str(&self.json()))
    }
}

impl PruneStep {
    /// Appends the step as the JS API carries it: `{pass, options}`.
    pub fn write_json(&self, out: &mut String) {
        let mut o = Object::open(out);
        o.str("pass", self.pass.as_str());
        let mut t = Object::open(o.key("options"));
        if self.pass == PrunePass::Stale {
            t.bool("supersedeKey", self.supersede_key);
        }
        t.bool("pruneUseless", self.prune_useless);
        if let Some(ms) = self.idle_flush_ms {
            t.num("idleFlushMs", ms as f64);
        }
        for &(name, tokens) in &self.windows {
            t.num(name, tokens as f64);
        }
        t.close();
        o.close();
    }

    /// The step as JSON text.
    pub fn json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }
}

impl CompactionOutcome {
    /// The outcome as the JS API carries it, as JSON text: `{status, tokensAfter?,
    /// storedTokens?, error?}`.
    pub fn json(&self) -> String {
        let mut out = String::new();
        let mut o = Object::open(&mut out);
        match self {
            CompactionOutcome::Compacted {
                tokens_after,
                stored_tokens,
            } => {
                o.str("status", "compacted");
                o.num("tokensAfter", *tokens_after as f64);
                if let Some(t) = stored_tokens {
                    o.num("storedTokens", *t as f64);
                }
            }
            CompactionOutcome::NothingToCompact => o.str("status", "nothing-to-compact"),
            CompactionOutcome::Aborted => o.str("status", "aborted"),
            CompactionOutcome::Failed { error } => {
                o.str("status", "failed");
                o.str("error", error);
            }
        }
        o.close();
        out
    }
}

impl ManagerState {
    /// The counters and flags as the JS API carries them, as JSON text.
    pub fn json(&self) -> String {
        let mut out = String::new();
        let mut o = Object::open(&mut out);
        o.num(
            "incompleteRecoveries",
            f64::from(self.incomplete_recoveries),
        );
        o.bool(
            "overflowRecoveryAttempted",
            self.overflow_recovery_attempted,
        );
        o.bool("maintenancePaused", self.maintenance_paused);
        o.bool("awaitingPromotion", self.awaiting_promotion);
        o.opt_num("lastActivityAt", self.last_activity_at.map(|t| t as f64));
        o.bool("idleCompacted", self.idle_compacted);
        o.opt_num("lastUsageTokens", self.last_usage_tokens.map(|t| t as f64));
        o.close();
        out
    }

    /// The counters and flags as the JS API carries them.
    pub fn to_json(&self) -> Value {
        value_of(|out| out.push_str(&self.json()))
    }
}

macro_rules! serialize_as_json {
    ($($t:ty),*) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(&self.to_json(), s)
            }
        }
    )*};
}
serialize_as_json!(CompactRequest, Event, Decision, ManagerState);

impl<'de> serde::Deserialize<'de> for CompactRequest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = <Value as serde::Deserialize>::deserialize(d)?;
        CompactRequest::from_json(&v).map_err(serde::de::Error::custom)
    }
}
