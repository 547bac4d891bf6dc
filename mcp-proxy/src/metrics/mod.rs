//! What a gateway did, for Prometheus: the calls relayed to each upstream (by tool and
//! outcome), how long they took, how many are in flight, the bytes they carried, each
//! upstream's state and restarts, and, from the server in front, hosts by revision,
//! translation refusals and legacy HTTP sessions evicted or refused for want of room. [`Metrics`] is kept by the [`crate::Aggregator`] (see
//! [`crate::Aggregator::metrics`]) and rendered in the OpenMetrics text format, which
//! Prometheus scrapes (`mcp_server::http::HttpOptions::metrics` serves it at `/metrics`).
//!
//! Cardinality is bounded: tool names come from upstreams, so only the first
//! [`TOOL_LABELS`] (upstream, tool) pairs get a label of their own; calls of any other
//! tool are counted under `tool="_other"`. Calls refused before reaching an upstream (an
//! unknown tool, a policy) are not upstream calls and are not counted here.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::upstream_status::UpstreamStatus;

mod call_meter;
pub(crate) use call_meter::{CallMeter, ToolMeter};

/// How many (upstream, tool) pairs get labels of their own.
pub const TOOL_LABELS: usize = 1000;

/// The label calls of tools beyond [`TOOL_LABELS`] are counted under.
pub const OTHER_TOOL: &str = "_other";

/// The media type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How an upstream call ended, as the `outcome` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallOutcome {
    /// A result (`ok`).
    Ok,
    /// A result with `isError: true` (`is_error`).
    IsError,
    /// A JSON-RPC error from the upstream (`error`).
    Error,
    /// No answer within the call's timeout (`timeout`).
    Timeout,
    /// The host cancelled, or went, first (`cancelled`).
    Cancelled,
    /// The upstream could not be reached or its connection broke (`failed`).
    Failed,
}

impl CallOutcome {
    const ALL: [CallOutcome; 6] = [
        CallOutcome::Ok,
        CallOutcome::IsError,
        CallOutcome::Error,
        CallOutcome::Timeout,
        CallOutcome::Cancelled,
        CallOutcome::Failed,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::IsError => "is_error",
            CallOutcome::Error => "error",
            CallOutcome::Timeout => "timeout",
            CallOutcome::Cancelled => "cancelled",
            CallOutcome::Failed => "failed",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl EncodeLabelValue for CallOutcome {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CallLabels {
    upstream: String,
    tool: String,
    outcome: CallOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct UpstreamLabels {
    upstream: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct FailureLabels {
    upstream: String,
    kind: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RevisionLabels {
    revision: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

/// The `reason` label of the session counters: the table was full, or the client held
/// its quota.
const TABLE_FULL: ReasonLabels = ReasonLabels {
    reason: "table_full",
};
const CLIENT_QUOTA: ReasonLabels = ReasonLabels {
    reason: "client_quota",
};

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ScopeLabels {
    scope: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct BytesLabels {
    upstream: String,
    direction: Direction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Direction {
    Sent,
    Received,
}

impl EncodeLabelValue for Direction {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(match self {
            Direction::Sent => "sent",
            Direction::Received => "received",
        })
    }
}

type HistogramFamily = Family<UpstreamLabels, Histogram, fn() -> Histogram>;

/// Call durations from 100 µs to about 3.5 minutes, doubling.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 22))
}

/// A gateway's metrics (see the module's documentation).
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    duration: HistogramFamily,
    in_flight: Family<UpstreamLabels, Gauge>,
    bytes: Family<BytesLabels, Counter>,
    up: Family<UpstreamLabels, Gauge>,
    restarts: Family<UpstreamLabels, Counter>,
    renewals: Family<UpstreamLabels, Counter>,
    failures: Family<FailureLabels, Counter>,
    hosts: Family<RevisionLabels, Gauge>,
    refusals: Counter,
    session_evictions: Family<ReasonLabels, Counter>,
    session_refusals: Family<ReasonLabels, Counter>,
    forwarded: Counter,
    rate_limited: Family<ScopeLabels, Counter>,
    /// The server in front of the aggregator, whose hosts are counted.
    server: Mutex<Option<Arc<mcp_server::ServerStats>>>,
    /// The (upstream, tool) pairs given labels of their own.
    labelled: Mutex<HashSet<(String, String)>>,
    /// One render at a time: the upstreams' gauges are brought up to date in it, and
    /// those it showed last time (a reload may remove some).
    rendering: Mutex<Vec<String>>,
    /// Each upstream's restart total as the last render read it.
    restarts_seen: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Metrics with nothing counted yet.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("mcp_gateway");
        let calls = Family::<CallLabels, Counter>::default();
        let duration: HistogramFamily = Family::new_with_constructor(duration_histogram);
        let in_flight = Family::<UpstreamLabels, Gauge>::default();
        let bytes = Family::<BytesLabels, Counter>::default();
        let up = Family::<UpstreamLabels, Gauge>::default();
        let restarts = Family::<UpstreamLabels, Counter>::default();
        let renewals = Family::<UpstreamLabels, Counter>::default();
        let failures = Family::<FailureLabels, Counter>::default();
        let hosts = Family::<RevisionLabels, Gauge>::default();
        let refusals = Counter::default();
        let (session_evictions, session_refusals) = (Family::default(), Family::default());
        let forwarded = Counter::default();
        let rate_limited = Family::<ScopeLabels, Counter>::default();
        registry.register(
            "rate_limited",
            "Tool calls refused by a rate limit, by the limit's scope: principal, upstream, tool; store_unavailable when the shared store could not say (whenStoreDown: closed)",
            rate_limited.clone(),
        );
        registry.register(
            "upstream_calls",
            "Tool calls relayed to an upstream, by tool and outcome",
            calls.clone(),
        );
        registry.register(
            "upstream_call_duration_seconds",
            "Time from a tool call's sending to the upstream's answer",
            duration.clone(),
        );
        registry.register(
            "upstream_calls_in_flight",
            "Tool calls sent to an upstream and not yet answered",
            in_flight.clone(),
        );
        registry.register(
            "upstream_call_bytes",
            "JSON bytes of tool call params sent to and results received from an upstream",
            bytes.clone(),
        );
        registry.register(
            "upstream_up",
            "Whether the upstream's connection is up (1) or not (0)",
            up.clone(),
        );
        registry.register(
            "upstream_restarts",
            "How often the upstream's connection ended and it was started again",
            restarts.clone(),
        );
        registry.register(
            "upstream_session_renewals",
            "How often the upstream ended a session (HTTP 404) and the gateway started a new one",
            renewals.clone(),
        );
        registry.register(
            "upstream_failures",
            "Connections and listings of an upstream that failed, by kind: unauthorized, \
             unavailable, transport, protocol, timeout, too_large",
            failures.clone(),
        );
        registry.register(
            "hosts",
            "Hosts connected (stdio connections, legacy HTTP sessions), by the revision they speak",
            hosts.clone(),
        );
        registry.register(
            "translation_refusals",
            "Results and requests a host's revision could not express (the host got an error)",
            refusals.clone(),
        );
        registry.register(
            "http_session_evictions",
            "Idle legacy HTTP sessions ended to make room for a new one, by reason: \
             table_full (the session table was full), client_quota (the client's own, at its quota)",
            session_evictions.clone(),
        );
        registry.register(
            "http_forwarded",
            "Requests taken to the replica holding their state (a legacy session, a parked \
             call, a task), over the internal hop",
            forwarded.clone(),
        );
        registry.register(
            "http_session_refusals",
            "Legacy HTTP initialize requests refused, every session that could make room in \
             use, by reason: table_full (503), client_quota (429)",
            session_refusals.clone(),
        );
        Metrics {
            registry,
            calls,
            duration,
            in_flight,
            bytes,
            up,
            restarts,
            renewals,
            failures,
            hosts,
            refusals,
            session_evictions,
            session_refusals,
            forwarded,
            rate_limited,
            server: Mutex::new(None),
            labelled: Mutex::new(HashSet::new()),
            rendering: Mutex::new(Vec::new()),
            restarts_seen: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a call refused by a rate limit of `scope` (`principal`, `upstream`, `tool`).
    pub(crate) fn rate_limited(&self, scope: &'static str) {
        self.rate_limited
            .get_or_create(&ScopeLabels { scope })
            .inc();
    }

    /// Counts the hosts of the server `stats` belong to (the one
    /// [`crate::Aggregator::server`] made, or [`crate::Aggregator::announce_through`] was
    /// given), instead of any before.
    pub fn count_hosts_of(&self, stats: Arc<mcp_server::ServerStats>) {
        *self.server.lock() = Some(stats);
    }

    /// Upstream `key` ended a session (HTTP `404`) and the gateway started a new one.
    pub(crate) fn session_renewed(&self, key: &str) {
        self.renewals
            .get_or_create(&UpstreamLabels {
                upstream: key.to_owned(),
            })
            .inc();
    }

    /// Connecting to or listing upstream `key` failed this way.
    pub(crate) fn upstream_failed(&self, key: &str, error: &crate::upstream_error::UpstreamError) {
        self.failures
            .get_or_create(&FailureLabels {
                upstream: key.to_owned(),
                kind: error.kind(),
            })
            .inc();
    }

    /// The meters of calls to `tool` of `upstream` (its real name there).
    pub(crate) fn tool_meter(&self, upstream: &str, tool: &str) -> ToolMeter {
        let names = (Arc::from(upstream), Arc::from(tool));
        let tool = self.tool_label(upstream, tool);
        let outcomes = CallOutcome::ALL.map(|outcome| {
            self.calls
                .get_or_create(&CallLabels {
                    upstream: upstream.to_owned(),
                    tool: tool.clone(),
                    outcome,
                })
                .clone()
        });
        let u = UpstreamLabels {
            upstream: upstream.to_owned(),
        };
        let bytes = |direction| {
            self.bytes
                .get_or_create(&BytesLabels {
                    upstream: upstream.to_owned(),
                    direction,
                })
                .clone()
        };
        ToolMeter {
            outcomes,
            duration: self.duration.get_or_create(&u).clone(),
            in_flight: self.in_flight.get_or_create(&u).clone(),
            sent: bytes(Direction::Sent),
            received: bytes(Direction::Received),
            upstream: names.0,
            tool: names.1,
        }
    }

    /// `tool`, or [`OTHER_TOOL`] once [`TOOL_LABELS`] other pairs have labels.
    fn tool_label(&self, upstream: &str, tool: &str) -> String {
        let mut labelled = self.labelled.lock();
        let pair = (upstream.to_owned(), tool.to_owned());
        if labelled.contains(&pair) {
            return tool.to_owned();
        }
        if labelled.len() >= TOOL_LABELS {
            return OTHER_TOOL.to_owned();
        }
        labelled.insert(pair);
        tool.to_owned()
    }

    /// Everything counted, with the upstreams as `status` says they are now, in the
    /// OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn render(&self, status: &[UpstreamStatus]) -> String {
        let mut shown = self.rendering.lock();
        // An upstream a reload removed is no longer `up` or down: it is not there.
        for gone in shown
            .iter()
            .filter(|k| !status.iter().any(|s| &s.key == *k))
        {
            self.up.remove(&UpstreamLabels {
                upstream: gone.clone(),
            });
        }
        shown.clear();
        for s in status {
            let u = UpstreamLabels {
                upstream: s.key.clone(),
            };
            self.up.get_or_create(&u).set(i64::from(s.connected));
            // Restarts are counted where they happen (the shared connection's supervisor,
            // each host's session); the counter takes what the status' total added since
            // the last render. A total below the last one is a new upstream (a reload
            // replaced it), whose count started again from 0: all of it is new.
            {
                let mut seen = self.restarts_seen.lock();
                let last = seen.insert(s.key.clone(), s.restarts).unwrap_or(0);
                let added = s.restarts.checked_sub(last).unwrap_or(s.restarts);
                self.restarts.get_or_create(&u).inc_by(added);
            }
            drop(self.renewals.get_or_create(&u));
            shown.push(s.key.clone());
        }
        let server = self.server.lock().clone();
        if let Some(stats) = server {
            for h in stats.hosts() {
                let labels = RevisionLabels {
                    revision: h.revision.as_str().to_owned(),
                };
                self.hosts
                    .get_or_create(&labels)
                    .set(i64::try_from(h.hosts).unwrap_or(i64::MAX));
            }
            catch_up(&self.refusals, stats.translation_refusals());
            catch_up(&self.forwarded, stats.forwarded());
            let s = stats.sessions();
            let (evictions, refusals) = (&self.session_evictions, &self.session_refusals);
            catch_up(&evictions.get_or_create(&TABLE_FULL), s.evicted_table_full);
            catch_up(
                &evictions.get_or_create(&CLIENT_QUOTA),
                s.evicted_client_quota,
            );
            catch_up(&refusals.get_or_create(&TABLE_FULL), s.refused_table_full);
            catch_up(
                &refusals.get_or_create(&CLIENT_QUOTA),
                s.refused_client_quota,
            );
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
            let _ = writeln!(out, "# EOF");
        }
        out
    }
}

/// Brings `counter` up to `total`, a count kept elsewhere since the server started (a
/// counter never goes down, so a total that did is left as counted).
fn catch_up(counter: &Counter, total: u64) {
    let counted = counter.get();
    if total > counted {
        counter.inc_by(total - counted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(restarts: u64) -> UpstreamStatus {
        UpstreamStatus {
            key: "up".into(),
            connected: true,
            last_error: None,
            host_sessions: 0,
            principal_connections: 0,
            pooled_sessions: 0,
            pooled_waiting: 0,
            revision: None,
            restarts,
            session_renewals: 0,
            required: false,
        }
    }

    fn restarts(m: &Metrics) -> u64 {
        m.restarts
            .get_or_create(&UpstreamLabels {
                upstream: "up".into(),
            })
            .get()
    }

    #[test]
    fn restarts_go_on_counting_when_a_reload_replaces_the_upstream() {
        let m = Metrics::new();
        m.render(&[status(3)]);
        assert_eq!(restarts(&m), 3);
        // A reload replaced the upstream: its own count starts again from 0.
        m.render(&[status(1)]);
        assert_eq!(restarts(&m), 4, "the new upstream's restart is counted");
        m.render(&[status(2)]);
        assert_eq!(restarts(&m), 5);
        m.render(&[status(2)]);
        assert_eq!(restarts(&m), 5, "nothing new, nothing counted");
    }
}
