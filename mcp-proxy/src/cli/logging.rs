//! Logs to standard error (standard output may carry the protocol).

use tracing_subscriber::filter::LevelFilter;

/// Logs to standard error at `level` (a level name or `RUST_LOG` directives), else as
/// `RUST_LOG` says, else errors only.
pub fn init_logging(level: Option<&str>) {
    let fmt = tracing_subscriber::fmt().with_writer(std::io::stderr);
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
    let _ = match plain {
        Some(level) => fmt.with_max_level(level).try_init(),
        None => fmt
            .with_env_filter(tracing_subscriber::EnvFilter::new(var))
            .try_init(),
    };
}
