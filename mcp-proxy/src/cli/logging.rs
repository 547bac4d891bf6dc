//! Logs to standard error (standard output may carry the protocol).

use tracing_subscriber::filter::LevelFilter;

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

/// Logs to standard error at `level` (a level name or `RUST_LOG` directives), else as
/// `RUST_LOG` says, else errors only; written as `format` says.
pub fn init_logging(level: Option<&str>, format: LogFormat) {
    let var = level
        .map(str::to_owned)
        .unwrap_or_else(|| std::env::var("RUST_LOG").unwrap_or_default());
    // A plain level (or none) needs no directive parser: `EnvFilter` compiles a regular
    // expression to parse directives, which a gateway would otherwise hold for its lifetime.
    let plain = match var.trim().to_ascii_lowercase().as_str() {
        "" | "error" => Some(LevelFilter::ERROR),
        "warn" => Some(LevelFilter::WARN),
        "info" => Some(LevelFilter::INFO),
        "debug" => Some(LevelFilter::DEBUG),
        "trace" => Some(LevelFilter::TRACE),
        "off" => Some(LevelFilter::OFF),
        _ => None,
    };
    let fmt = tracing_subscriber::fmt().with_writer(std::io::stderr);
    let _ = match (format, plain) {
        (LogFormat::Text, Some(level)) => fmt.with_max_level(level).try_init(),
        (LogFormat::Text, None) => fmt
            .with_env_filter(tracing_subscriber::EnvFilter::new(var))
            .try_init(),
        (LogFormat::Json, Some(level)) => fmt.json().with_max_level(level).try_init(),
        (LogFormat::Json, None) => fmt
            .json()
            .with_env_filter(tracing_subscriber::EnvFilter::new(var))
            .try_init(),
    };
}
