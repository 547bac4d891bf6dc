//! OpenTelemetry traces (feature `otel`): when `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and `OTEL_SDK_DISABLED` is not `true`,
//! nor `OTEL_TRACES_EXPORTER` `none`), the gateway's `mcp.request` and
//! `mcp.upstream_call` spans are exported over OTLP HTTP/protobuf, batched on a thread of
//! their own, configured by the standard `OTEL_*` variables (`OTEL_SERVICE_NAME`, default
//! `mcp-gateway`; `OTEL_RESOURCE_ATTRIBUTES`; `OTEL_EXPORTER_OTLP_HEADERS`, …).
//!
//! A request that carries a trace context (`_meta`'s `traceparent`, or a 2026-07-28
//! request's headers) gets its span as a child of the host's, so the host's trace shows
//! the gateway's hop. The context the upstream receives is the host's, unchanged: the
//! upstream's spans join the same trace, under the host's span.

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use super::logging::{colour, filter_of, LogFilter, LogFormat};

/// Whether the environment asks for traces to be exported.
fn wanted() -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let endpoint = !var("OTEL_EXPORTER_OTLP_ENDPOINT").is_empty()
        || !var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_empty();
    endpoint
        && !var("OTEL_SDK_DISABLED").eq_ignore_ascii_case("true")
        && !var("OTEL_TRACES_EXPORTER").eq_ignore_ascii_case("none")
}

/// Logs as [`super::init_logging`] does, and exports spans over OTLP, if the environment
/// asks for it: the provider to shut down (flushing what is batched) at exit.
pub(super) fn init(level: Option<&str>, format: LogFormat) -> Option<SdkTracerProvider> {
    if !wanted() {
        return None;
    }
    let protocol = std::env::var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .unwrap_or_default();
    if !protocol.is_empty() && protocol != "http/protobuf" {
        eprintln!("gateway: OTLP protocol {protocol:?} is not built in; exporting http/protobuf");
    }
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("gateway: no OpenTelemetry export: {e}");
            return None;
        }
    };
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("mcp-gateway");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let traces = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("mcp-gateway"))
        .with_filter(LevelFilter::INFO);
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour());
    let logs = match format {
        LogFormat::Json => logs.json().boxed(),
        _ => logs.boxed(),
    };
    let logs = match filter_of(level) {
        LogFilter::Level(level) => logs.with_filter(level).boxed(),
        LogFilter::Directives(env) => logs.with_filter(*env).boxed(),
    };
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(traces)
        .try_init();
    mcp_server::on_request_span(join_host_trace);
    Some(provider)
}

/// Makes a request's span a child of the span its host sent in `traceparent`.
fn join_host_trace(span: &tracing::Span, trace: &mcp_server::TraceContext) {
    let mut carrier = std::collections::HashMap::with_capacity(2);
    carrier.insert("traceparent".to_owned(), trace.traceparent().to_owned());
    if let Some(state) = trace.tracestate() {
        carrier.insert("tracestate".to_owned(), state.to_owned());
    }
    let parent = TraceContextPropagator::new().extract(&carrier);
    let _ = span.set_parent(parent);
}

/// The audit trail's sink of OpenTelemetry log records, when the environment asks for
/// export (as for traces; `OTEL_LOGS_EXPORTER=none` leaves it out): each record's line is
/// a log record's body, event `mcp.audit`, exported over OTLP HTTP/protobuf (`/v1/logs`).
pub(super) fn audit_sinks() -> Vec<Box<dyn crate::audit::AuditSink>> {
    let off = std::env::var("OTEL_LOGS_EXPORTER").is_ok_and(|v| v.eq_ignore_ascii_case("none"));
    if !wanted() || off {
        return Vec::new();
    }
    let exporter = match opentelemetry_otlp::LogExporter::builder()
        .with_http()
        .build()
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("gateway: no OpenTelemetry export of audit records: {e}");
            return Vec::new();
        }
    };
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("mcp-gateway");
    }
    let provider = SdkLoggerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let logger = provider.logger("mcp-gateway.audit");
    let _ = AUDIT_LOGS.set(provider);
    vec![Box::new(OtelAudit { logger })]
}

/// The provider of the audit trail's log records, shut down (what it batched sent) by
/// [`finish_audit`] once the audit log has written everything.
static AUDIT_LOGS: std::sync::OnceLock<SdkLoggerProvider> = std::sync::OnceLock::new();

/// Sends what the audit trail's log records batched, and stops their export.
pub(super) fn finish_audit() {
    if let Some(provider) = AUDIT_LOGS.get() {
        let _ = provider.shutdown();
    }
}

/// Audit records as OpenTelemetry log records.
struct OtelAudit {
    logger: opentelemetry_sdk::logs::SdkLogger,
}

impl crate::audit::AuditSink for OtelAudit {
    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let mut record = self.logger.create_log_record();
        record.set_event_name("mcp.audit");
        record.set_severity_number(Severity::Info);
        record.set_body(AnyValue::String(
            String::from_utf8_lossy(line).into_owned().into(),
        ));
        self.logger.emit(record);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // The batch exporter sends on its own schedule; a flush per write would post
        // every few milliseconds. What is batched at exit is sent by `finish_audit`.
        Ok(())
    }
}
