//! The host JSON of the trigger machine's inputs and outputs (spec: compaction §8.7): the
//! JS-facing shapes, written out by hand (one code path instead of one serde monomorphization
//! per type). The `serde` impls below delegate to them.

use super::{
    CompactRequest, CompactionAction, CompactionMethod, CompactionReason, Decision, EntryPoint,
    Event, ManagerState,
};
use crate::settings::Strategy;
use crate::support::json::object;
use serde_json::Value;

/// `null` or the value.
fn opt<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or(Value::Null, Into::into)
}

impl CompactRequest {
    /// The request as the JS API carries it.
    pub fn to_json(&self) -> Value {
        object(vec![
            ("reason", self.reason.as_str().into()),
            ("entry", self.entry.as_str().into()),
            ("willRetry", self.will_retry.into()),
            ("strategy", self.strategy.as_str().into()),
            (
                "methods",
                Value::Array(self.methods.iter().map(|m| m.as_str().into()).collect()),
            ),
            ("action", self.action.as_str().into()),
            ("excludeSnapcompact", self.exclude_snapcompact.into()),
            ("contextTokens", self.context_tokens.into()),
            ("contextWindow", self.context_window.into()),
            ("thresholdTokens", opt(self.threshold_tokens)),
            ("payloadRejection", self.payload_rejection.into()),
        ])
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
                _ => {}
            }
        }
        Ok(r)
    }
}

impl Event {
    /// The event as the JS API carries it (absent options and a false `skipped` left out).
    pub fn to_json(&self) -> Value {
        let mut m = Vec::new();
        let mut put = |k: &'static str, v: Value| m.push((k, v));
        match self {
            Event::AutoCompactionStart { reason, action } => {
                put("type", "auto_compaction_start".into());
                put("reason", reason.as_str().into());
                if let Some(a) = action {
                    put("action", a.as_str().into());
                }
            }
            Event::AutoCompactionEnd {
                action,
                aborted,
                will_retry,
                error_message,
                skipped,
            } => {
                put("type", "auto_compaction_end".into());
                if let Some(a) = action {
                    put("action", a.as_str().into());
                }
                put("aborted", (*aborted).into());
                put("willRetry", (*will_retry).into());
                if let Some(e) = error_message {
                    put("errorMessage", e.as_str().into());
                }
                if *skipped {
                    put("skipped", true.into());
                }
            }
        }
        object(m)
    }
}

impl Decision {
    /// The decision as the JS API carries it.
    pub fn to_json(&self) -> Value {
        object(vec![
            (
                "events",
                Value::Array(self.events.iter().map(Event::to_json).collect()),
            ),
            (
                "notices",
                Value::Array(
                    self.notices
                        .iter()
                        .map(|n| {
                            object(vec![
                                ("level", n.level.as_str().into()),
                                ("text", n.text.as_str().into()),
                            ])
                        })
                        .collect(),
                ),
            ),
            ("compactionWarning", opt(self.compaction_warning.as_deref())),
            (
                "dropFailedTurn",
                opt(self
                    .drop_failed_turn
                    .map(|d| object(vec![("durable", d.durable.into())]))),
            ),
            ("restoreFailedTurn", self.restore_failed_turn.into()),
            (
                "promote",
                opt(self.promote.map(|p| {
                    object(vec![
                        ("reason", p.reason.as_str().into()),
                        ("contextTokens", p.context_tokens.into()),
                        ("contextWindow", p.context_window.into()),
                    ])
                })),
            ),
            (
                "compact",
                opt(self.compact.as_ref().map(CompactRequest::to_json)),
            ),
            (
                "continuation",
                opt(self.continuation.as_ref().map(|c| {
                    object(vec![
                        ("afterMs", c.after_ms.into()),
                        ("kind", c.kind.as_str().into()),
                        ("prompt", opt(c.prompt)),
                        (
                            "reminder",
                            opt(c.reminder.map(|r| {
                                object(vec![
                                    ("outputTokens", r.output_tokens.into()),
                                    ("retryCount", r.retry_count.into()),
                                    ("maxRetries", r.max_retries.into()),
                                ])
                            })),
                        ),
                    ])
                })),
            ),
            ("blockAutoContinue", self.block_auto_continue.into()),
            ("wakeAt", opt(self.wake_at)),
        ])
    }
}

impl ManagerState {
    /// The counters and flags as the JS API carries them.
    pub fn to_json(&self) -> Value {
        object(vec![
            ("incompleteRecoveries", self.incomplete_recoveries.into()),
            (
                "overflowRecoveryAttempted",
                self.overflow_recovery_attempted.into(),
            ),
            ("maintenancePaused", self.maintenance_paused.into()),
            ("awaitingPromotion", self.awaiting_promotion.into()),
            ("lastActivityAt", opt(self.last_activity_at)),
            ("idleCompacted", self.idle_compacted.into()),
            ("lastUsageTokens", opt(self.last_usage_tokens)),
        ])
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
