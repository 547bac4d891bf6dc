//! Logs to standard error (standard output may carry the protocol), and with feature
//! `otel` traces over OTLP when the environment asks (`telemetry.rs`). Text logs are
//! coloured only when standard error is a terminal and `NO_COLOR` is unset or empty, so a
//! file, a pipe or a log collector gets plain text.

use std::io::IsTerminal;

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
#[non_exhaustive]
pub enum LogFormat {
    /// Text for people.
    #[default]
    Text,
    /// One JSON object per line (time, level, target, message, fields, spans), for a log
    /// collector.
    Json,
}

/// What logging started: keep it until the program ends, when dropping it sends the
/// spans still batched for export (feature `otel`).
#[must_use = "dropping it stops the export of traces"]
#[derive(Default)]
pub struct Telemetry {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Telemetry")
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(provider) = self.provider.take() {
            if let Err(e) = provider.shutdown() {
                eprintln!("gateway: OpenTelemetry export ended badly: {e}");
            }
        }
    }
}

/// Which log lines are written: a plain level, or `RUST_LOG` directives.
pub(super) enum LogFilter {
    Level(LevelFilter),
    Directives(Box<EnvFilter>),
}

/// The filter of `level` (a level name or `RUST_LOG` directives), else of `RUST_LOG`,
/// else errors only.
pub(super) fn filter_of(level: Option<&str>) -> LogFilter {
    let var = level
        .map(str::to_owned)
        .unwrap_or_else(|| std::env::var("RUST_LOG").unwrap_or_default());
    // A plain level (or none) needs no directive parser: `EnvFilter` compiles a regular
    // expression to parse directives, which a gateway would otherwise hold for its lifetime.
    match var.trim().to_ascii_lowercase().as_str() {
        "" | "error" => LogFilter::Level(LevelFilter::ERROR),
        "warn" => LogFilter::Level(LevelFilter::WARN),
        "info" => LogFilter::Level(LevelFilter::INFO),
        "debug" => LogFilter::Level(LevelFilter::DEBUG),
        "trace" => LogFilter::Level(LevelFilter::TRACE),
        "off" => LogFilter::Level(LevelFilter::OFF),
        _ => LogFilter::Directives(Box::new(EnvFilter::new(var))),
    }
}

/// Whether log lines may carry ANSI colour: standard error is a terminal, and `NO_COLOR`
/// (<https://no-color.org>) is unset or empty.
pub(super) fn colour() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    !no_color && std::io::stderr().is_terminal()
}

/// Logs to standard error at `level` (a level name or `RUST_LOG` directives), else as
/// `RUST_LOG` says, else errors only; written as `format` says, coloured only when
/// standard error is a terminal and `NO_COLOR` is unset or empty. With feature `otel` and
/// an OTLP endpoint in the environment, spans are exported too.
pub fn init_logging(level: Option<&str>, format: LogFormat) -> Telemetry {
    #[cfg(feature = "otel")]
    if let Some(provider) = super::telemetry::init(level, format) {
        return Telemetry {
            provider: Some(provider),
        };
    }
    let fmt = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour());
    let _ = match (format, filter_of(level)) {
        (LogFormat::Text, LogFilter::Level(level)) => fmt.with_max_level(level).try_init(),
        (LogFormat::Text, LogFilter::Directives(env)) => fmt.with_env_filter(*env).try_init(),
        (LogFormat::Json, LogFilter::Level(level)) => fmt.json().with_max_level(level).try_init(),
        (LogFormat::Json, LogFilter::Directives(env)) => {
            fmt.json().with_env_filter(*env).try_init()
        }
    };
    Telemetry::default()
}
