//! The meters of one tool's calls, and of one call in flight (its `tracing` span and its
//! audit record beside its counts).

use std::sync::Arc;
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

use super::CallOutcome;

/// The meters of one tool's calls; cloned from the families once per tool, so a call
/// only touches atomics.
#[derive(Debug)]
pub(crate) struct ToolMeter {
    pub(super) outcomes: [Counter; 6],
    pub(super) duration: Histogram,
    pub(super) in_flight: Gauge,
    pub(super) sent: Counter,
    pub(super) received: Counter,
    /// The names its calls' spans carry.
    pub(super) upstream: Arc<str>,
    pub(super) tool: Arc<str>,
}

impl ToolMeter {
    /// A call of `params_bytes` of params going to the upstream now, for a host speaking
    /// `host_revision`.
    pub(crate) fn start(
        self: &Arc<Self>,
        params_bytes: usize,
        host_revision: mcp_types::Revision,
    ) -> CallMeter {
        self.in_flight.inc();
        self.sent.inc_by(params_bytes as u64);
        let span = tracing::info_span!(
            "mcp.upstream_call",
            upstream = %self.upstream,
            tool = %self.tool,
            host_revision = %host_revision,
            outcome = tracing::field::Empty,
        );
        CallMeter {
            meter: Some(self.clone()),
            start: Instant::now(),
            span,
            audit: None,
        }
    }
}

/// One call in flight, observed: its meters and its `tracing` span (`mcp.upstream_call`,
/// under the host request's: upstream, tool, the host's revision, the outcome).
/// [`CallMeter::finish`] counts how it ended; dropped unfinished, it counts as
/// [`CallOutcome::Cancelled`].
#[derive(Debug)]
pub(crate) struct CallMeter {
    meter: Option<Arc<ToolMeter>>,
    start: Instant,
    span: tracing::Span,
    /// The call's audit record, finished as the call is counted.
    audit: Option<crate::aggregator::audited::Audited>,
}

impl CallMeter {
    /// With `audit`, finished as the call is counted (however it ends).
    pub(crate) fn audited(mut self, audit: Option<crate::aggregator::audited::Audited>) -> Self {
        self.audit = audit;
        self
    }

    /// The call ended as `outcome`, with an answer of `answer_bytes`.
    pub(crate) fn finish(mut self, outcome: CallOutcome, answer_bytes: usize) {
        self.count(outcome, answer_bytes, None);
    }

    /// [`CallMeter::finish`], the upstream (or its connection) having said `said` of a
    /// failure: its audit record says it too.
    pub(crate) fn finish_said(
        mut self,
        outcome: CallOutcome,
        answer_bytes: usize,
        said: Option<&str>,
    ) {
        self.count(outcome, answer_bytes, said);
    }

    /// Without its audit record, which is not written: the call goes again, and the
    /// attempt that does is recorded.
    pub(crate) fn unaudited(mut self) -> Self {
        self.audit = None;
        self
    }

    fn count(&mut self, outcome: CallOutcome, answer_bytes: usize, said: Option<&str>) {
        if let Some(audit) = self.audit.take() {
            audit.counted(outcome, answer_bytes, said);
        }
        let Some(m) = self.meter.take() else {
            return;
        };
        self.span.record("outcome", outcome.as_str());
        m.in_flight.dec();
        m.outcomes[outcome.index()].inc();
        m.received.inc_by(answer_bytes as u64);
        m.duration.observe(self.start.elapsed().as_secs_f64());
    }
}

impl Drop for CallMeter {
    fn drop(&mut self) {
        self.count(CallOutcome::Cancelled, 0, None);
    }
}
