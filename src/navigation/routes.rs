//! Who writes a branch summary, and in which order (spec: compaction §5.8, §7.5 step 5): the
//! host reports what it has — its `remoteEndpoint` option, its settings, how many summarizer
//! callbacks — and the plan lists the routes; the JS shell asks them in that order and stops
//! at the first answer, as `compact()` does with the routes of its walk.

use crate::settings::CompactionSettings;

/// One way to the summary of a navigation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryRoute {
    /// POST the request to this remote summarizer endpoint (spec: compaction §5.8).
    Endpoint(String),
    /// The host's summarizer callbacks, in the order it gave them.
    Callbacks,
}

impl SummaryRoute {
    /// The route's name for the host: `endpoint` or `callbacks`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SummaryRoute::Endpoint(_) => "endpoint",
            SummaryRoute::Callbacks => "callbacks",
        }
    }
}

/// The summary routes of a navigation, in the order they are tried (spec: compaction §5.8:
/// the endpoint is used "when set and remote is enabled"): the remote endpoint first — the
/// host's `endpoint` option, else `settings.remoteEndpoint`, and only while
/// `settings.remoteEnabled` holds — then the `callbacks` the host has (none: no route). An
/// empty URL is no endpoint. No route at all means no summary is asked for.
pub fn summary_routes(
    endpoint: Option<&str>,
    settings: &CompactionSettings,
    callbacks: usize,
) -> Vec<SummaryRoute> {
    let mut routes = Vec::with_capacity(2);
    let url = endpoint.or(settings.remote_endpoint.as_deref());
    if let Some(url) = url.filter(|u| !u.is_empty() && settings.remote_enabled) {
        routes.push(SummaryRoute::Endpoint(url.to_string()));
    }
    if callbacks > 0 {
        routes.push(SummaryRoute::Callbacks);
    }
    routes
}

/// `branchSummary.reserveTokens` of a navigation (spec: compaction §7.5 step 5, §9.2): the
/// host's `reserveTokens` option, else its settings' (whose default is 16,384).
pub fn branch_reserve_tokens(option: Option<u64>, settings: &CompactionSettings) -> u64 {
    option.unwrap_or(settings.branch_summary.reserve_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(endpoint: Option<&str>, remote_enabled: bool) -> CompactionSettings {
        CompactionSettings {
            remote_endpoint: endpoint.map(str::to_string),
            remote_enabled,
            ..CompactionSettings::default()
        }
    }

    fn names(routes: &[SummaryRoute]) -> Vec<&str> {
        routes.iter().map(SummaryRoute::as_str).collect()
    }

    #[test]
    fn the_endpoint_comes_before_the_callbacks() {
        let r = summary_routes(Some("https://a.example/s"), &settings(None, true), 2);
        assert_eq!(
            r,
            vec![
                SummaryRoute::Endpoint("https://a.example/s".into()),
                SummaryRoute::Callbacks
            ]
        );
        assert_eq!(names(&r), ["endpoint", "callbacks"]);
        assert_eq!(
            summary_routes(None, &settings(None, true), 1),
            vec![SummaryRoute::Callbacks]
        );
        assert!(summary_routes(None, &settings(None, true), 0).is_empty());
    }

    #[test]
    fn the_option_wins_over_the_settings_endpoint() {
        let s = settings(Some("https://settings.example/s"), true);
        assert_eq!(
            summary_routes(Some("https://option.example/s"), &s, 0),
            vec![SummaryRoute::Endpoint("https://option.example/s".into())]
        );
        assert_eq!(
            summary_routes(None, &s, 1),
            vec![
                SummaryRoute::Endpoint("https://settings.example/s".into()),
                SummaryRoute::Callbacks
            ]
        );
    }

    #[test]
    fn remote_disabled_leaves_only_the_callbacks() {
        // `remoteEnabled: false` turns off the host's own endpoint too.
        let off = settings(Some("https://settings.example/s"), false);
        assert_eq!(
            summary_routes(Some("https://option.example/s"), &off, 1),
            vec![SummaryRoute::Callbacks]
        );
        assert!(summary_routes(Some("https://o.example/s"), &off, 0).is_empty());
        // An empty URL is no endpoint.
        assert!(summary_routes(Some(""), &settings(None, true), 0).is_empty());
    }

    #[test]
    fn reserve_tokens_from_the_option_then_the_settings() {
        let mut s = CompactionSettings::default();
        assert_eq!(branch_reserve_tokens(None, &s), 16_384);
        s.branch_summary.reserve_tokens = 9_000;
        assert_eq!(branch_reserve_tokens(None, &s), 9_000);
        assert_eq!(branch_reserve_tokens(Some(1_000), &s), 1_000);
    }
}
