//! The gateway configuration: the `mcpServers` JSON that Claude Desktop and Cursor users
//! already have, plus per-server `namespace`, `trusted`, `protocolVersion` (pin the
//! revision spoken with that server; default: detect) and `allowTools`/`denyTools`
//! (name patterns, `*` for any run; see [`GlobFilter`]), `session` (`"pooled"`, the
//! default, `"per-host"` or `"shared"`; see [`SessionMode`]) with `maxPooledSessions`,
//! `maxHostSessions` and `hostSessionIdleSeconds`, `callTimeoutSeconds` (longest one call may take; default:
//! the gateway's), `maxMessageBytes` (longest stdio message each way; default 16 MiB) and
//! `legacySession` (see [`crate::UpstreamConfig::legacy_session`]), and a top-level
//! `gateway` object: `separator`, `maxNameLength`, `confirmDestructive` (ask the host's
//! user before a call to a tool that may be destructive; see [`crate::policy`]),
//! `surface` (`"direct"`, or `"dispatcher"` for three dispatcher tools),
//! `callTimeoutSeconds` (default 120) and `startupWaitMillis` (how long the start waits
//! for the upstreams before serving with those ready, default 500; see
//! [`crate::AggregatorOptions::startup_wait`]).
//!
//! Unknown keys are errors that name the nearest known key (see [`keys`]); a server's
//! `type` (`"stdio"`, `"http"`, `"streamable-http"`, `"sse"`, as other hosts write) must
//! agree with its `command` or `url`, and `"disabled": true` leaves it out.
//!
//! ```json
//! {"mcpServers": {
//!    "fs":   {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
//!             "denyTools": ["write_*", "move_file"]},
//!    "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}, "trusted": true}},
//!  "gateway": {"separator": "__", "maxNameLength": 64, "confirmDestructive": true, "surface": "direct"}}
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use mcp_client::http::HttpConfig;
use mcp_client::StdioCommand;
use serde_json::Value;

mod auth;
mod fields;
mod file;
mod http;
mod keys;
mod overrides;
mod pins;
mod upstream_auth;
mod views;

use fields::{Fields, Problem};
pub use file::schema;

use crate::naming::Prefixed;
use crate::policy::{AskHost, GlobFilter, Surface};
use crate::sessions::{PerHostLimits, PoolLimits, SessionMode};
use crate::{AggregatorOptions, UpstreamConfig, UpstreamTransport};

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

/// A server's `session` (`"pooled"`, the default, `"per-host"` or `"shared"`),
/// `maxPooledSessions`, `maxHostSessions` and `hostSessionIdleSeconds`; on error, the
/// field and what is wrong with it.
fn session_mode(
    server: &serde_json::Map<String, Value>,
) -> Result<SessionMode, (&'static str, String)> {
    let count = |field: &'static str| -> Result<Option<u64>, (&'static str, String)> {
        server
            .get(field)
            .map(|v| {
                v.as_u64()
                    .filter(|n| *n >= 1 && usize::try_from(*n).is_ok())
                    .ok_or((field, "must be a positive integer".to_owned()))
            })
            .transpose()
    };
    let mut hosts = PerHostLimits::default();
    let mut pool = PoolLimits::default();
    if let Some(n) = count("maxHostSessions")? {
        hosts.max_sessions = n as usize;
    }
    if let Some(n) = count("maxPooledSessions")? {
        pool.max_sessions = n as usize;
    }
    if let Some(secs) = count("hostSessionIdleSeconds")? {
        hosts.idle_timeout = std::time::Duration::from_secs(secs);
        pool.idle_timeout = hosts.idle_timeout;
    }
    match server.get("session").map(Value::as_str) {
        None | Some(Some("pooled")) => Ok(SessionMode::Pooled(pool.hosts(hosts))),
        Some(Some("per-host")) => Ok(SessionMode::PerHost(hosts)),
        Some(Some("shared")) => Ok(SessionMode::Shared),
        Some(_) => Err((
            "session",
            "must be \"pooled\", \"per-host\" or \"shared\"".into(),
        )),
    }
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
}

/// Reads a configuration. `source_name` names it in errors (a file path, say).
pub fn parse(text: &str, source_name: &str) -> Result<Gateway, ConfigError> {
    parse_root(text).map_err(|p| ConfigError {
        source_name: source_name.to_owned(),
        location: p.location,
        problem: p.problem,
    })
}

/// `Err` naming the first member of `obj` (at `at`) that is not in `known`.
fn known_keys(
    obj: &serde_json::Map<String, Value>,
    known: &[String],
    at: &str,
) -> Result<(), Problem> {
    match keys::unknown(obj, known) {
        None => Ok(()),
        Some((key, problem)) if at.is_empty() => Err(Problem::new(key, problem)),
        Some((key, problem)) => Err(Problem::new(format!("{at}.{key}"), problem)),
    }
}

fn parse_root(text: &str) -> Result<Gateway, Problem> {
    let root: Value =
        serde_json::from_str(text).map_err(|e| Problem::new("(file)", format!("not JSON: {e}")))?;
    let top = root
        .as_object()
        .ok_or_else(|| Problem::new("(file)", "must be a JSON object"))?;
    known_keys(top, &keys::ROOT, "")?;
    let servers = root
        .get("mcpServers")
        .and_then(Value::as_object)
        .ok_or_else(|| Problem::new("mcpServers", "missing, or not an object of servers"))?;
    let mut upstreams = Vec::with_capacity(servers.len());
    for (key, s) in servers {
        if let Some(upstream) = server(key, s)? {
            upstreams.push(upstream);
        }
    }
    let keys: Vec<&str> = upstreams.iter().map(|u| u.key.as_str()).collect();
    let mut parsed = match root.get("gateway") {
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
        },
        Some(g) => gateway(g, &keys)?,
    };
    parsed.upstreams = upstreams;
    Ok(parsed)
}

/// One entry of `mcpServers`; `None` if it is disabled.
fn server(key: &str, s: &Value) -> Result<Option<UpstreamConfig>, Problem> {
    let at = format!("mcpServers.{key}");
    let obj = s
        .as_object()
        .ok_or_else(|| Problem::new(at.clone(), "not an object"))?;
    known_keys(obj, &keys::SERVER, &at)?;
    let f = Fields { obj, at };
    if f.flag("disabled")? {
        return Ok(None);
    }
    let revision = match f.string("protocolVersion")? {
        None => None,
        Some(v) => Some(
            mcp_types::Revision::parse(&v)
                .map_err(|e| f.problem("protocolVersion", e.to_string()))?,
        ),
    };
    let transport = transport(&f)?;
    let legacy_session = f.flag("legacySession")?;
    if legacy_session && matches!(transport, UpstreamTransport::Http(_)) {
        return Err(f.problem("legacySession", "is for a `command` server only"));
    }
    let allow = match obj.get("allowTools") {
        None | Some(Value::Null) => None,
        Some(_) => Some(f.patterns("allowTools")?),
    };
    Ok(Some(UpstreamConfig {
        key: key.to_owned(),
        namespace: f.string("namespace")?,
        trusted: f.flag("trusted")?,
        withhold_hints: f.flag("withholdHints")?,
        transport,
        revision,
        tools: Arc::new(GlobFilter {
            allow,
            deny: f.patterns("denyTools")?,
        }),
        session: session_mode(obj).map_err(|(field, problem)| f.problem(field, problem))?,
        call_timeout: f
            .positive("callTimeoutSeconds")?
            .map(std::time::Duration::from_secs),
        max_message_bytes: f
            .positive("maxMessageBytes")?
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        overrides: Arc::new(overrides::overrides(&f)?),
        required: f.flag("required")?,
        legacy_session,
    }))
}

/// A server's `command` (stdio) or `url` (HTTP).
fn transport(f: &Fields<'_>) -> Result<UpstreamTransport, Problem> {
    let (command, url) = (f.string("command")?, f.string("url")?);
    match f.string("type")?.as_deref() {
        None => {}
        Some("stdio") if url.is_none() => {}
        Some("http" | "streamable-http" | "streamableHttp" | "sse") if command.is_none() => {}
        Some(t @ ("stdio" | "http" | "streamable-http" | "streamableHttp" | "sse")) => {
            let needs = if t == "stdio" { "`command`" } else { "`url`" };
            return Err(f.problem("type", format!("{t:?} needs {needs}, not the other")));
        }
        Some(t) => {
            return Err(f.problem(
                "type",
                format!("{t:?} is not \"stdio\", \"http\", \"streamable-http\" or \"sse\""),
            ))
        }
    }
    match (command, url) {
        (Some(command), None) => Ok(UpstreamTransport::Stdio(StdioCommand {
            command,
            args: f.strings("args")?,
            env: f.map("env")?.into_iter().collect::<HashMap<_, _>>(),
            cwd: f.string("cwd")?.map(Into::into),
        })),
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(f.problem("url", format!("{url:?} is not an http(s) URL")));
            }
            let headers: Vec<(String, String)> = f.map("headers")?.into_iter().collect();
            let auth = match f.obj.get("auth") {
                None => None,
                Some(_)
                    if headers
                        .iter()
                        .any(|(k, _)| k.eq_ignore_ascii_case("authorization")) =>
                {
                    return Err(
                        f.problem("auth", "give `auth` or an `Authorization` header, not both")
                    )
                }
                Some(a) => Some(upstream_auth::upstream_auth(a, &f.at, &url)?),
            };
            let mut config = HttpConfig::new(url).headers(headers);
            config.auth = auth;
            Ok(UpstreamTransport::Http(config))
        }
        (Some(_), Some(_)) => Err(f.problem("", "has both `command` and `url`; give one")),
        (None, None) => Err(f.problem("", "needs `command` (stdio) or `url` (HTTP)")),
    }
}

/// A `surface` member, if present.
fn surface(f: &Fields<'_>) -> Result<Option<Surface>, Problem> {
    match f.obj.get("surface").map(|v| v.as_str()) {
        None => Ok(None),
        Some(Some("direct")) => Ok(Some(Surface::Direct)),
        Some(Some("dispatcher")) => Ok(Some(Surface::Dispatcher)),
        Some(_) => Err(f.problem("surface", "must be \"direct\" or \"dispatcher\"")),
    }
}

/// The top-level `gateway` object, as a [`Gateway`] without its upstreams.
fn gateway(g: &Value, upstream_keys: &[&str]) -> Result<Gateway, Problem> {
    let obj = g
        .as_object()
        .ok_or_else(|| Problem::new("gateway", "must be an object"))?;
    known_keys(obj, &keys::GATEWAY, "gateway")?;
    let f = Fields {
        obj,
        at: "gateway".into(),
    };
    let mut naming = Prefixed::default();
    let mut options = AggregatorOptions::default();
    if let Some(s) = obj.get("separator") {
        naming.separator = s
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| f.problem("separator", "must be a string"))?;
        if let Some(problem) = keys::bad_separator(&naming.separator) {
            return Err(f.problem("separator", problem));
        }
    }
    if let Some(n) = obj.get("maxNameLength") {
        let n = n
            .as_u64()
            .filter(|n| (16..=128).contains(n))
            .ok_or_else(|| f.problem("maxNameLength", "must be an integer from 16 to 128"))?;
        naming.max_len = n as usize;
    }
    if f.flag("confirmDestructive")? {
        options.confirm = Some(Arc::new(AskHost));
    }
    options.surface = surface(&f)?.unwrap_or(Surface::Direct);
    if let Some(secs) = f.positive("callTimeoutSeconds")? {
        options.call_timeout = std::time::Duration::from_secs(secs);
    }
    let wait = match obj.get("startupWaitMillis") {
        None => DEFAULT_STARTUP_WAIT_MILLIS,
        Some(v) => v.as_u64().ok_or_else(|| {
            f.problem(
                "startupWaitMillis",
                "must be a whole number of milliseconds",
            )
        })?,
    };
    options.startup_wait = Some(std::time::Duration::from_millis(wait));
    options.namespacing = Arc::new(naming);
    let pin_file = match obj.get("pins") {
        None => None,
        Some(p) => {
            let (file, pins) = pins::pins(p)?;
            options.pins = Some(Arc::new(pins));
            Some(file)
        }
    };
    if let Some(v) = obj.get("views") {
        let rules: Arc<dyn crate::views::Views> = views::views(v, upstream_keys)?;
        options.views = Some(rules);
    }
    Ok(Gateway {
        upstreams: Vec::new(),
        options,
        authorization: obj.get("auth").map(auth::authorization).transpose()?,
        local_principal: f
            .string("stdioSubject")?
            .map(mcp_server::auth::Principal::new),
        pin_file,
        http: obj
            .get("http")
            .map(http::http)
            .transpose()?
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The upstreams and options of a configuration.
    fn parse(
        text: &str,
        source_name: &str,
    ) -> Result<(Vec<UpstreamConfig>, AggregatorOptions), ConfigError> {
        super::parse(text, source_name).map(|g| (g.upstreams, g.options))
    }

    /// The filter an upstream was given, written out: a trait object compares by that.
    fn filter_of(u: &UpstreamConfig) -> String {
        format!("{:?}", u.tools)
    }

    #[test]
    fn the_desktop_format_with_our_additions() {
        let (ups, _) = parse(
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}, "cwd": "/tmp"},
                 "web": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}, "namespace": "w", "trusted": true}},
                "gateway": {"separator": "_", "maxNameLength": 48}}"#,
            "c.json",
        )
        .expect("valid");
        assert_eq!(ups.len(), 2);
        assert!(
            matches!(&ups[0].transport, UpstreamTransport::Stdio(c) if c.command == "npx" && c.env["A"] == "1")
        );
        assert!(ups[1].trusted && ups[1].namespace.as_deref() == Some("w"));
        assert_eq!(filter_of(&ups[0]), format!("{:?}", GlobFilter::default()));
    }

    #[test]
    fn timeouts_and_message_limits() {
        let (ups, options) = parse(
            r#"{"mcpServers": {"a": {"command": "x", "callTimeoutSeconds": 5, "maxMessageBytes": 4096},
                               "b": {"command": "y"}},
                "gateway": {"callTimeoutSeconds": 30}}"#,
            "c.json",
        )
        .expect("valid");
        assert_eq!(ups[0].call_timeout, Some(std::time::Duration::from_secs(5)));
        assert_eq!(ups[0].max_message_bytes, Some(4096));
        assert_eq!(
            (ups[1].call_timeout, ups[1].max_message_bytes),
            (None, None)
        );
        assert_eq!(options.call_timeout, std::time::Duration::from_secs(30));
        for bad in [
            r#"{"mcpServers": {"a": {"command": "x", "callTimeoutSeconds": 0}}}"#,
            r#"{"mcpServers": {"a": {"command": "x", "maxMessageBytes": "big"}}}"#,
            r#"{"mcpServers": {}, "gateway": {"callTimeoutSeconds": -1}}"#,
        ] {
            let e = parse(bad, "c.json").expect_err(bad);
            assert!(e.problem.contains("positive integer"), "{bad}: {e}");
        }
    }

    #[test]
    fn policies_in_the_config() {
        let (ups, options) = parse(
            r#"{"mcpServers": {"fs": {"command": "x", "allowTools": ["read_*"], "denyTools": ["read_secret"]}},
                "gateway": {"confirmDestructive": true, "surface": "dispatcher"}}"#,
            "c.json",
        )
        .expect("valid");
        let globs = GlobFilter {
            allow: Some(vec!["read_*".into()]),
            deny: vec!["read_secret".into()],
        };
        assert_eq!(filter_of(&ups[0]), format!("{globs:?}"));
        assert!(options.confirm.is_some());
        assert_eq!(options.surface, Surface::Dispatcher);
        let e = parse(
            r#"{"mcpServers": {}, "gateway": {"surface": "tiny"}}"#,
            "c.json",
        )
        .unwrap_err();
        assert_eq!(e.location, "gateway.surface");
        let e = parse(
            r#"{"mcpServers": {"fs": {"command": "x", "denyTools": "all"}}}"#,
            "c.json",
        )
        .unwrap_err();
        assert_eq!(e.location, "mcpServers.fs.denyTools");
    }

    #[test]
    fn errors_name_the_file_the_key_and_the_problem() {
        let e = parse(r#"{"mcpServers": {"fs": {"args": []}}}"#, "c.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.json: mcpServers.fs: needs `command` (stdio) or `url` (HTTP)"
        );
        let e = parse(
            r#"{"mcpServers": {"fs": {"command": "x", "args": "y"}}}"#,
            "c.json",
        )
        .unwrap_err();
        assert_eq!(e.location, "mcpServers.fs.args");
        let e = parse(r#"{"servers": {}}"#, "c.json").unwrap_err();
        assert_eq!(e.location, "servers");
        assert!(e.problem.contains("did you mean `mcpServers`"), "{e}");
        let e = parse(r#"{"gateway": {}}"#, "c.json").unwrap_err();
        assert_eq!(e.location, "mcpServers");
        assert!(parse("{oops", "c.json")
            .unwrap_err()
            .problem
            .starts_with("not JSON"));
    }

    #[test]
    fn unknown_keys_fail_and_name_the_key_meant() {
        let e = parse(
            r#"{"mcpServers": {"fs": {"command": "x", "denyTool": ["write_*"]}}}"#,
            "c.json",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.json: mcpServers.fs.denyTool: unknown key `denyTool`; did you mean `denyTools`?"
        );
        let e = parse(
            r#"{"mcpServers": {}, "gateway": {"seperator": "_"}}"#,
            "c.json",
        )
        .unwrap_err();
        assert_eq!(e.location, "gateway.seperator");
        assert!(e.problem.contains("`separator`"), "{e}");
        let e = parse(r#"{"mcpServers": {}, "gatway": {}}"#, "c.json").unwrap_err();
        assert_eq!(e.location, "gatway");
        assert!(e.problem.contains("`gateway`"), "{e}");
        let e = parse(
            r#"{"mcpServers": {"a": {"command": "x", "zzz": 1}}}"#,
            "c.json",
        )
        .unwrap_err();
        assert!(
            e.problem.contains("known keys here: ") && e.problem.contains(", command, "),
            "{e}"
        );
    }

    #[test]
    fn separators_patterns_and_types_are_validated() {
        for (bad, at) in [
            (
                r#"{"mcpServers": {}, "gateway": {"separator": "."}}"#,
                "gateway.separator",
            ),
            (
                r#"{"mcpServers": {}, "gateway": {"separator": ""}}"#,
                "gateway.separator",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "denyTools": [""]}}}"#,
                "mcpServers.a.denyTools",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "allowTools": ["read file"]}}}"#,
                "mcpServers.a.allowTools",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "type": "http"}}}"#,
                "mcpServers.a.type",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "type": "ws"}}}"#,
                "mcpServers.a.type",
            ),
        ] {
            assert_eq!(parse(bad, "c.json").expect_err(bad).location, at, "{bad}");
        }
        let (ups, _) = parse(
            r#"{"mcpServers": {"a": {"command": "x", "type": "stdio"},
                               "b": {"url": "http://h/mcp", "type": "streamable-http"},
                               "c": {"command": "y", "disabled": true}}}"#,
            "c.json",
        )
        .expect("valid");
        let keys: Vec<&str> = ups.iter().map(|u| u.key.as_str()).collect();
        assert_eq!(keys, ["a", "b"], "a disabled server is left out");
    }
}
