//! The gateway configuration: the `mcpServers` JSON that Claude Desktop and Cursor users
//! already have, plus per-server `namespace`, `trusted`, `protocolVersion` (pin the
//! revision spoken with that server; default: detect) and `allowTools`/`denyTools`
//! (name patterns, `*` for any run; see [`GlobFilter`](crate::policy::GlobFilter)), `session` (`"pooled"`, the
//! default, `"per-host"` or `"shared"`; see [`SessionMode`](crate::sessions::SessionMode)) with `maxPooledSessions`,
//! `maxHostSessions` and `hostSessionIdleSeconds`, `callTimeoutSeconds` (longest one call may take; default:
//! the gateway's), `maxMessageBytes` (longest stdio message each way; default 16 MiB) and
//! `legacySession` (see [`crate::UpstreamConfig::legacy_session`]), and a top-level
//! `gateway` object: `separator`, `maxNameLength`, `confirmDestructive` (ask the host's
//! user before a call to a tool that may be destructive; see [`crate::policy`]),
//! `surface` (`"direct"`, or `"dispatcher"` for four dispatcher tools),
//! `callTimeoutSeconds` (default 120) and `startupWaitMillis` (how long the start waits
//! for the upstreams before serving with those ready, default 500; see
//! [`crate::AggregatorOptions::startup_wait`]).
//!
//! The file is read in three steps: its keys are checked against the schema, so that an
//! unknown key is an error naming the nearest known one (see `keys.rs`); it is deserialized
//! into the types of [`file`], which the schema is generated from, so a value of the wrong
//! kind is an error naming where it is; and those are turned into the gateway's own types
//! with the checks only the whole file can make (see `server.rs`): a server's `type`
//! (`"stdio"`, `"http"`, `"streamable-http"`, `"sse"`, as other hosts write) must agree
//! with its `command` or `url`, views name servers that exist, secrets' variables are set.
//! `"disabled": true` leaves a server out before its values are read.
//!
//! ```json
//! {"mcpServers": {
//!    "fs":   {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
//!             "denyTools": ["write_*", "move_file"]},
//!    "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}, "trusted": true}},
//!  "gateway": {"separator": "__", "maxNameLength": 64, "confirmDestructive": true, "surface": "direct"}}
//! ```

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

mod audit;
mod auth;
mod cluster;
mod cluster_store;
mod connect;
mod file;
mod http;
mod keys;
mod overrides;
mod pins;
mod rate_limits;
mod schema;
mod server;
#[cfg(test)]
mod tests;
mod upstream_auth;
mod user_auth;
mod values;
mod views;

pub use audit::AuditSettings;
pub use schema::schema;

use crate::aggregator::{AggregatorOptions, UpstreamConfig};
use crate::naming::Prefixed;
use crate::policy::{AskHost, Surface};
use values::Choice;

/// How long a gateway started from a file waits for its upstreams (`startupWaitMillis`).
const DEFAULT_STARTUP_WAIT_MILLIS: u64 = 500;

/// A configuration that cannot be used, saying where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {location}: {problem}")]
#[non_exhaustive]
pub struct ConfigError {
    /// The file (or other source) read.
    pub source_name: String,
    /// Where in it: `mcpServers.<key>.<field>`, or the top level.
    pub location: String,
    /// What is wrong.
    pub problem: String,
}

/// A gateway's configuration, read.
#[derive(Debug)]
#[non_exhaustive]
pub struct Gateway {
    /// The servers of `mcpServers` (those not disabled), in key order: the order the
    /// catalog merges them in (TOOL-23).
    pub upstreams: Vec<UpstreamConfig>,
    /// The aggregator's options (`gateway`, views included).
    pub options: AggregatorOptions,
    /// Who may use the gateway over HTTP (`gateway.auth`); `None`: the loopback checks only.
    pub authorization: Option<mcp_server::auth::Authorization>,
    /// The principal of a host on stdio (`gateway.stdioSubject`), whom views match; `None`:
    /// no principal, which only a view for everyone matches.
    pub local_principal: Option<mcp_server::auth::Principal>,
    /// Where the pins are kept (`gateway.pins.file`): read at start (into
    /// `options.pins`), written by `gateway --pin`.
    pub pin_file: Option<std::path::PathBuf>,
    /// The `--http` listener's options (`gateway.http`; default: [`HttpOptions::default`]).
    ///
    /// [`HttpOptions::default`]: mcp_server::http::HttpOptions
    pub http: mcp_server::http::HttpOptions,
    /// With `gateway.cluster.redis`: the registry this replica announces itself in and
    /// finds the others in. Not started: whoever serves starts its heartbeat
    /// ([`crate::store::StorePeers::start`]) and takes the replica out when stopping.
    pub registry: Option<Arc<crate::store::StorePeers>>,
    /// With `gateway.cluster.redis`: what hands this replica's legacy sessions over to
    /// another when it is gone (already in `http`; here for its counts).
    pub handover: Option<Arc<crate::store::StoreHandover>>,
    /// With a `userAuth` of type `oauth`: the connect pages (already in `http`) and the
    /// grants they keep, for forgetting a user's grant.
    pub connect: Option<Arc<crate::credentials::ConnectDesk>>,
    /// `gateway.audit`: the audit log to open, once, and give the aggregator
    /// ([`AggregatorOptions::audit`]).
    pub audit: Option<AuditSettings>,
}

/// Where in the file something is wrong, and what.
#[derive(Debug)]
struct Problem {
    location: String,
    problem: String,
}

impl Problem {
    fn new(location: impl Into<String>, problem: impl Into<String>) -> Self {
        Problem {
            location: location.into(),
            problem: problem.into(),
        }
    }

    /// A serde error, at the place in the file its path names.
    fn located(e: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let mut at = String::new();
        for segment in e.path() {
            match segment {
                serde_path_to_error::Segment::Seq { index } => at.push_str(&format!("[{index}]")),
                serde_path_to_error::Segment::Map { key } => at = join(&at, key),
                serde_path_to_error::Segment::Enum { variant } => at = join(&at, variant),
                serde_path_to_error::Segment::Unknown => at = join(&at, "?"),
            }
        }
        if at.is_empty() {
            at = "(file)".into();
        }
        Problem::new(at, e.into_inner().to_string())
    }
}

/// The location of `key` inside the object at `at` (the top level when `at` is empty).
fn join(at: &str, key: &str) -> String {
    match (at, key) {
        ("", key) => key.to_owned(),
        (at, "") => at.to_owned(),
        (at, key) => format!("{at}.{key}"),
    }
}

/// Reads a configuration. `source_name` names it in errors (a file path, say).
pub fn parse(text: &str, source_name: &str) -> Result<Gateway, ConfigError> {
    read(text).map_err(|p| ConfigError {
        source_name: source_name.to_owned(),
        location: p.location,
        problem: p.problem,
    })
}

fn read(text: &str) -> Result<Gateway, Problem> {
    let mut root: Value =
        serde_json::from_str(text).map_err(|e| Problem::new("(file)", format!("not JSON: {e}")))?;
    if !root.is_object() {
        return Err(Problem::new("(file)", "must be a JSON object"));
    }
    if let Some(problem) = keys::unknown_key(&root) {
        return Err(problem);
    }
    leave_out_disabled(&mut root);
    let digest = config_digest(&root);
    let file: file::ConfigFile =
        serde_path_to_error::deserialize(root).map_err(Problem::located)?;
    let servers = file
        .mcp_servers
        .ok_or_else(|| Problem::new("mcpServers", "missing, or not an object of servers"))?;
    let mut gateway_file = file.gateway;
    let users = UserAuths::of(&servers);
    // `gateway.auth` first: the connect pages check users with it.
    let auth_file = gateway_file.as_mut().and_then(|g| g.auth.take());
    if let Some(key) = &users.first {
        if auth_file.as_ref().is_none_or(|a| a.jwt.is_none()) {
            return Err(Problem::new(
                join(&join("mcpServers", key), "userAuth"),
                "needs `gateway.auth.jwt`: the signed-in users it acts as",
            ));
        }
    }
    let mut connect = None;
    let authorization = match auth_file {
        None if gateway_file.as_ref().is_some_and(|g| g.grants.is_some()) => {
            let why =
                "is for servers whose `userAuth` is of type \"oauth\", which needs `gateway.auth`";
            return Err(Problem::new("gateway.grants", why));
        }
        None => None,
        Some(mut a) => {
            let login = a.login.take();
            let grants = gateway_file.as_mut().and_then(|g| g.grants.take());
            let why = "is for servers whose `userAuth` is of type \"oauth\": none is";
            match (users.oauth, &login, &grants) {
                (false, Some(_), _) => return Err(Problem::new("gateway.auth.login", why)),
                (false, _, Some(_)) => return Err(Problem::new("gateway.grants", why)),
                _ => {}
            }
            let resource = a.resource.clone().unwrap_or_default();
            let jwt_issuer = a.jwt.as_ref().and_then(|j| j.issuer.clone());
            let authorization = auth::authorization(a, users.exchange)?;
            if users.oauth {
                connect = Some((login, grants, resource, jwt_issuer, authorization.clone()));
            }
            Some(authorization)
        }
    };
    // Disabled servers are out of the map already: its keys are the upstreams'.
    let keys: Vec<&str> = servers.keys().map(String::as_str).collect();
    let mut parsed = match gateway_file {
        // Without `gateway`, `startup_wait` stays unset (the aggregator's own default),
        // as it always has: only a `gateway` object brings `startupWaitMillis`'s default.
        None => Gateway {
            upstreams: Vec::new(),
            options: AggregatorOptions {
                namespacing: Arc::new(Prefixed::default()),
                ..Default::default()
            },
            authorization: None,
            local_principal: None,
            pin_file: None,
            http: Default::default(),
            registry: None,
            handover: None,
            connect: None,
            audit: None,
        },
        Some(g) => gateway(g, &keys, &digest, authorization)?,
    };
    // The connect pages, once the replicas' store (if any) is known: grants live there.
    let desk = match connect {
        None => None,
        Some((login, grants, resource, jwt_issuer, authorization)) => {
            let shared = parsed.registry.as_ref().map(|r| r.store());
            let desk = connect::desk(login, grants, &authorization, &resource, jwt_issuer, shared)?;
            if let Some(replicas) = &parsed.options.replicas {
                desk.tell_replicas(replicas.clone());
            }
            parsed.http = std::mem::take(&mut parsed.http).with_pages(desk.clone());
            parsed.connect = Some(desk.clone());
            Some(desk)
        }
    };
    let mut upstreams = Vec::with_capacity(servers.len());
    for (key, s) in servers {
        upstreams.extend(server::upstream(key, s, desk.as_ref())?);
    }
    parsed.upstreams = upstreams;
    Ok(parsed)
}

/// A configuration of one server and `gateway` as given, read (for the readers' tests).
#[cfg(test)]
fn with_gateway(gateway: &str) -> Result<Gateway, String> {
    let text = format!(r#"{{"mcpServers": {{"a": {{"command": "x"}}}}, "gateway": {gateway}}}"#);
    parse(&text, "c.json").map_err(|e| e.to_string())
}

/// Drops the `mcpServers` entries written `"disabled": true`: a disabled entry is often a
/// placeholder, so only its keys are checked (by then), never its values, as before.
fn leave_out_disabled(root: &mut Value) {
    if let Some(servers) = root.get_mut("mcpServers").and_then(Value::as_object_mut) {
        servers.retain(|_, s| s.get("disabled") != Some(&Value::Bool(true)));
    }
}

/// A `surface` member.
fn surface(Choice(s): Choice<file::Surface>) -> Surface {
    match s {
        file::Surface::Direct => Surface::Direct,
        file::Surface::Dispatcher => Surface::Dispatcher,
    }
}

/// The top-level `gateway` object, as a [`Gateway`] without its upstreams.
/// A digest of what a configuration serves (its upstreams, views, pins, ...: all but
/// `gateway.cluster` and `gateway.http`, which tell replicas and their listeners apart):
/// replicas announce it, so that a skew shows.
fn config_digest(root: &Value) -> String {
    let mut served = root.clone();
    if let Some(g) = served.get_mut("gateway").and_then(Value::as_object_mut) {
        g.remove("cluster");
        g.remove("http");
    }
    let d = ring::digest::digest(&ring::digest::SHA256, served.to_string().as_bytes());
    d.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The `gateway` object, its `auth` already read into `authorization`.
fn gateway(
    g: file::Gateway,
    upstream_keys: &[&str],
    config_digest: &str,
    authorization: Option<mcp_server::auth::Authorization>,
) -> Result<Gateway, Problem> {
    let file::Gateway {
        auth: _,
        grants: _,
        views,
        pins,
        stdio_subject,
        separator,
        max_name_length,
        confirm_destructive,
        surface: shown,
        call_timeout_seconds,
        startup_wait_millis,
        page_size,
        http,
        cluster,
        audit,
        rate_limits,
    } = g;
    let mut naming = Prefixed::default();
    if let Some(s) = separator {
        naming.separator = s.0;
    }
    if let Some(n) = max_name_length {
        naming.max_len = n.usize();
    }
    let mut options = AggregatorOptions::default();
    if confirm_destructive == Some(true) {
        options.confirm = Some(Arc::new(AskHost));
    }
    options.surface = shown.map_or(Surface::Direct, surface);
    if let Some(secs) = call_timeout_seconds {
        options.call_timeout = secs.seconds();
    }
    let wait = startup_wait_millis.map_or(DEFAULT_STARTUP_WAIT_MILLIS, |w| w.0);
    options.startup_wait = Some(Duration::from_millis(wait));
    if let Some(size) = page_size {
        options.page_size = usize::try_from(size.0).unwrap_or(usize::MAX);
    }
    options.namespacing = Arc::new(naming);
    let pin_file = match pins {
        None => None,
        Some(p) => {
            let (file, pins) = pins::pins(p)?;
            options.pins = Some(Arc::new(pins));
            Some(file)
        }
    };
    if let Some(v) = views {
        let rules: Arc<dyn crate::views::Views> = views::views(v, upstream_keys)?;
        options.views = Some(rules);
    }
    let mut http = http.map(http::http).unwrap_or_default();
    let (mut registry, mut handover) = (None, None);
    if let Some(c) = cluster {
        let made = cluster::cluster(c, &mut options, http, config_digest)?;
        (http, registry, handover) = (made.http, made.registry, made.handover);
    }
    if let Some(r) = rate_limits {
        let shared = registry.as_ref().map(|r| r.store());
        options.rate_limits = Some(rate_limits::rate_limits(r, shared)?);
    }
    Ok(Gateway {
        upstreams: Vec::new(),
        options,
        authorization,
        local_principal: stdio_subject.map(mcp_server::auth::Principal::new),
        pin_file,
        http,
        registry,
        handover,
        connect: None,
        audit: audit.map(audit::audit).transpose()?,
    })
}

/// Which kinds of `userAuth` the servers have: the first server with one, whether one
/// exchanges users' tokens, and whether one asks users' consent.
struct UserAuths {
    first: Option<String>,
    exchange: bool,
    oauth: bool,
}

impl UserAuths {
    fn of(servers: &std::collections::BTreeMap<String, file::Server>) -> UserAuths {
        let kinds: Vec<(&String, Option<file::UserAuthType>)> = servers
            .iter()
            .filter_map(|(k, s)| Some((k, s.user_auth.as_ref()?.kind.as_ref().map(|c| c.0))))
            .collect();
        UserAuths {
            first: kinds.first().map(|(k, _)| (*k).clone()),
            exchange: kinds
                .iter()
                .any(|(_, t)| *t == Some(file::UserAuthType::TokenExchange)),
            oauth: kinds
                .iter()
                .any(|(_, t)| *t == Some(file::UserAuthType::OAuth)),
        }
    }
}
