//! The gateway program (`mcp-gateway`, feature `cli`): upstream MCP servers from a Claude
//! Desktop / Cursor style configuration, served as one MCP server on stdio (default) or
//! Streamable HTTP at `/mcp`. [`main`] is the whole program; a binary with a built-in
//! default (the examples' demo upstreams) passes it in.
//!
//! `SIGTERM` or `SIGINT` (and on stdio, stdin closing) stops it gracefully: no new
//! requests, calls in flight finished for up to `--drain SECONDS` (10 by default), then
//! every upstream closed (a stdio upstream: stdin closed, then `SIGTERM`, then `SIGKILL`
//! to its process group, two seconds apart), and exit status 0.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mcp_server::http::{Health, Metrics};

use crate::{Aggregator, AggregatorOptions, UpstreamConfig};

mod audit;
mod early;
mod logging;
mod reload;
mod serve;
mod signals;
#[cfg(feature = "otel")]
mod telemetry;

pub use audit::AuditCommand;
pub use logging::{init_logging, LogFormat, Telemetry};
use serve::{gateway_server, load, serve_admin, serve_http, serve_stdio, write_pins, Access};
use signals::StopSignals;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "mcp-gateway",
    version,
    about = "Many MCP servers, one MCP server every host can use (all revisions 2024-11-05 … 2026-07-28).",
    after_help = "Examples:\n  mcp-gateway --config gateway.json                 # on stdio, for a host that starts it\n  mcp-gateway --config gateway.json --http 127.0.0.1:8080\n  mcp-gateway --config gateway.json --admin 127.0.0.1:9090  # stdio, with health and metrics\n  mcp-gateway --config gateway.json --check-config  # validate, list what would be served\n  mcp-gateway --config gateway.json --pin           # approve the tools listed now\n  mcp-gateway --print-config-schema > gateway.schema.json  # for an editor or a linter\n  mcp-gateway audit verify audit.jsonl.1 audit.jsonl  # check an audit trail's chain"
)]
pub struct Args {
    /// What to do instead of serving.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The configuration file (`mcpServers`, as Claude Desktop and Cursor write it, and
    /// `gateway`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<String>,
    /// Serve Streamable HTTP at ADDR (`/mcp`, with `/healthz`, `/readyz` and `/metrics`)
    /// instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Serve on stdio (the default).
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,
    /// Serve `/healthz`, `/readyz` and `/metrics` on a listener of their own at ADDR (with
    /// stdio, or with `gateway.auth`, where `/metrics` is not on the MCP listener). Bind it
    /// where only the operator's network reaches.
    #[arg(long, value_name = "ADDR")]
    pub admin: Option<String>,
    /// Check the configuration, print the upstreams it names, and exit: 0 when it is
    /// good, 2 when not. No upstream is started.
    #[arg(long)]
    pub check_config: bool,
    /// Print the JSON Schema of the configuration file (for an editor or a linter), and
    /// exit.
    #[arg(long, conflicts_with_all = ["config", "check_config", "pin"])]
    pub print_config_schema: bool,
    /// Write the pins of the tools the upstreams list now to `gateway.pins.file`, and
    /// exit.
    #[arg(long)]
    pub pin: bool,
    /// Forget the grant a user gave the gateway for UPSTREAM (a server whose `userAuth`
    /// is of type `oauth`; with `--subject`, and `--issuer` unless it is the one users log
    /// in at), and exit: the user is asked again at their next request there.
    #[arg(long, value_name = "UPSTREAM", requires = "subject")]
    pub forget_grant: Option<String>,
    /// The user whose grant `--forget-grant` forgets (their `sub`).
    #[arg(long, value_name = "SUB", requires = "forget_grant")]
    pub subject: Option<String>,
    /// The issuer of `--subject` (default: the one users log in at).
    #[arg(long, value_name = "ISSUER", requires = "forget_grant")]
    pub issuer: Option<String>,
    /// Worker threads (1: one thread, which a relay is fastest on).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub threads: usize,
    /// Seconds calls in flight get to finish on a graceful stop.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub drain: f64,
    /// Log level (`error`, `warn`, `info`, `debug`, `trace`, or `RUST_LOG` directives);
    /// default `RUST_LOG`, else `error`. Logs go to standard error.
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Log lines as text for people, or as one JSON object per line for a log collector.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, value_name = "FORMAT")]
    pub log_format: LogFormat,
}

/// What `mcp-gateway` does instead of serving.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// The audit trail (`gateway.audit`).
    Audit {
        /// What to do with it.
        #[command(subcommand)]
        command: AuditCommand,
    },
}

/// The audit sinks telemetry adds: OpenTelemetry log records when traces are exported
/// (feature `otel`, `OTEL_EXPORTER_OTLP_ENDPOINT` set).
fn telemetry_sinks() -> Vec<Box<dyn crate::audit::AuditSink>> {
    #[cfg(feature = "otel")]
    return telemetry::audit_sinks();
    #[cfg(not(feature = "otel"))]
    Vec::new()
}

/// What serves when no `--config` is given.
pub type Default = fn() -> (Vec<UpstreamConfig>, AggregatorOptions);

/// The gateway program: parses the command line, runs, and says how it ended. Without
/// `--config`, `default` gives the upstreams (none given: `--config` is required).
pub fn main(default: Option<Default>) -> ExitCode {
    let args = Args::parse();
    let _telemetry = init_logging(args.log_level.as_deref(), args.log_format);
    let drain = match Duration::try_from_secs_f64(args.drain) {
        Ok(d) => d,
        Err(_) => {
            eprintln!("gateway: --drain {} is not a number of seconds", args.drain);
            return ExitCode::from(2);
        }
    };
    if let Some(Command::Audit { command }) = &args.command {
        return audit::run(command);
    }
    if args.print_config_schema {
        return print_config_schema();
    }
    if args.check_config {
        return check_config(args.config.as_deref());
    }
    if let Some(upstream) = &args.forget_grant {
        return forget_grant(&args, upstream);
    }
    let runtime = match args.threads {
        0 | 1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
    };
    let code = match runtime {
        // The runtime is dropped before exiting: whatever still holds an upstream lets go
        // of it (a stdio upstream's process group is killed when its transport drops).
        Ok(rt) => rt.block_on(run(args, drain, default)),
        Err(e) => {
            eprintln!("gateway: cannot start the runtime: {e}");
            1
        }
    };
    ExitCode::from(code)
}

/// `--print-config-schema`.
fn print_config_schema() -> ExitCode {
    match serde_json::to_string_pretty(&crate::config::schema()) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gateway: cannot write the schema: {e}");
            ExitCode::from(1)
        }
    }
}

/// `--check-config`: the file parsed whole, its upstreams listed.
fn check_config(path: Option<&str>) -> ExitCode {
    let Some(path) = path else {
        eprintln!("gateway: --check-config needs --config FILE");
        return ExitCode::from(2);
    };
    match load(path) {
        Ok((g, _)) => {
            println!("{path}: good; {} upstreams", g.upstreams.len());
            for u in &g.upstreams {
                println!("  {}: {:?}", u.key, u.transport);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gateway: {e}");
            ExitCode::from(2)
        }
    }
}

/// `--forget-grant UPSTREAM --subject SUB [--issuer ISSUER]`.
fn forget_grant(args: &Args, upstream: &str) -> ExitCode {
    let Some(path) = args.config.as_deref() else {
        eprintln!("gateway: --forget-grant needs --config FILE");
        return ExitCode::from(2);
    };
    let desk = match load(path) {
        Ok((g, _)) => g.connect,
        Err(e) => {
            eprintln!("gateway: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(desk) = desk else {
        eprintln!(
            "gateway: {path}: no server has a `userAuth` of type \"oauth\": no grants are kept"
        );
        return ExitCode::from(2);
    };
    let subject = args.subject.as_deref().unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let forgot = match runtime {
        Ok(rt) => rt.block_on(desk.forget(subject, args.issuer.as_deref(), upstream)),
        Err(e) => {
            eprintln!("gateway: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match forgot {
        Ok(true) => {
            println!("forgot the grant of {subject} for {upstream}");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("no grant of {subject} for {upstream} was kept");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gateway: {e}");
            ExitCode::from(1)
        }
    }
}

/// The gateway, to its exit status.
async fn run(args: Args, drain: Duration, default: Option<Default>) -> u8 {
    let signals = StopSignals::listen();
    let (upstreams, options, access, pin_file, loaded) = match (&args.config, default) {
        (None, Some(default)) => {
            let (upstreams, options) = default();
            let access = Access::default();
            (upstreams, options, access, None, String::new())
        }
        (None, None) => {
            eprintln!("gateway: --config FILE is required (see --help)");
            return 2;
        }
        (Some(path), _) => match load(path) {
            Ok((mut g, text)) => {
                if let Some(settings) = &g.audit {
                    match audit::open(settings, args.http.is_some()) {
                        Ok(log) => g.options.audit = Some(log),
                        Err(code) => return code,
                    }
                }
                let access = Access {
                    authorization: g.authorization,
                    local_principal: g.local_principal,
                    http: g.http,
                    registry: g.registry,
                    handover: g.handover,
                };
                (g.upstreams, g.options, access, g.pin_file, text)
            }
            Err(e) => {
                eprintln!("gateway: {e}");
                return 2;
            }
        },
    };
    // Probes are answered from the first moment: alive, and not ready until it started.
    let started = early::Started::default();
    let _admin = match &args.admin {
        None => None,
        Some(addr) => match serve_admin(addr, &started).await {
            Ok(task) => Some(task),
            Err(code) => return code,
        },
    };
    // The registry: refused credentials stop the start; a store out of reach does not
    // (what needs no store is served, and the heartbeat goes on trying).
    let heartbeat = match &access.registry {
        None => None,
        Some(registry) => match registry.check().await {
            Err(e @ crate::store::StoreError::Refused(_)) => {
                eprintln!("gateway: gateway.cluster.redis: {e}");
                return 2;
            }
            Err(e) => {
                eprintln!("gateway: gateway.cluster.redis: {e}; serving, and trying again");
                Some(registry.start())
            }
            Ok(()) => Some(registry.start()),
        },
    };
    let aggregator = match Aggregator::start(upstreams, options).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gateway: {e}");
            return 2;
        }
    };
    if args.pin {
        let code = write_pins(&aggregator, pin_file.as_deref());
        aggregator.shutdown().await;
        return code;
    }
    let live = crate::live::Live::new(aggregator);
    started.set(&live);
    let server = gateway_server(&live, access.local_principal);
    if let Some(path) = &args.config {
        reload::watch(live.clone(), path.clone(), loaded, drain);
    }
    let code = match &args.http {
        None => {
            if access.authorization.is_some() {
                eprintln!(
                    "gateway: gateway.auth applies to --http only; stdio is the local host's"
                );
            }
            serve_stdio(server, &live, signals, drain).await
        }
        Some(addr) => match addr.parse() {
            Ok(addr) => {
                let (health, metrics) = probes(&live, &access.registry, &access.handover);
                let mut options = access.http.health(health).metrics(metrics);
                if options.peers.is_some() {
                    // What another replica tells reaches the aggregator in force.
                    options = options.peer_notices(Arc::new(live.clone()));
                }
                serve_http(addr, server, signals, drain, access.authorization, options).await
            }
            Err(_) => {
                eprintln!("gateway: `{addr}` is not an address (like 127.0.0.1:8080)");
                2
            }
        },
    };
    if let (Some(beat), Some(registry)) = (heartbeat, &access.registry) {
        beat.abort();
        let _ = registry.leave().await;
    }
    let current = live.current();
    current.shutdown().await;
    if let Some(log) = current.audit_log() {
        // Every call's record written before the process ends.
        log.flush();
        #[cfg(feature = "otel")]
        telemetry::finish_audit();
    }
    eprintln!("gateway: stopped");
    code
}

/// What `/readyz` and `/metrics` answer: the gateway's own, with the state store's beside
/// them when replicas share one.
fn probes(
    live: &crate::live::Live,
    registry: &Option<Arc<crate::store::StorePeers>>,
    handover: &Option<Arc<crate::store::StoreHandover>>,
) -> (Arc<dyn Health>, Arc<dyn Metrics>) {
    let handler = live.handler();
    match registry {
        Some(registry) => {
            let with = |h| crate::store::WithStore::new(h, registry.lease(), handover.clone());
            (Arc::new(with(handler.clone())), Arc::new(with(handler)))
        }
        None => (Arc::new(handler.clone()), Arc::new(handler)),
    }
}
